"""Several sampled chains from the root: SpecTr's K drafts of length L (docs/theory.md section 2.4).

The tree has ``width`` children of the root, each the head of its own chain of ``depth``
sampled tokens; the root's children are drawn i.i.d. (verified by ``kseq``, ``rrs`` or
``sequential``) or without replacement (``rrs-wor``), every deeper node has one sampled child.
A static shape could spell the same tree; as a family it is sized by (width, depth) and has a
node budget of width * depth, so sweeps and benchmarks compare it at equal N.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..trees import SAMPLING_MODES, build_static
from .registry import Method, option, positive_int, register
from .static import _check_sampled

__all__ = ["MultiChainMethod"]


@register
@dataclass(frozen=True)
class MultiChainMethod(Method):
    """``width`` sampled chains of ``depth`` tokens from the root (SpecTr, arXiv 2310.15141)."""

    family: ClassVar[str] = "multichain"
    summary: ClassVar[str] = "SpecTr-style multi-draft: W sampled chains of D tokens from the root"
    verifiers: ClassVar[tuple[str, ...]] = ("kseq", "rrs", "rrs-wor", "sequential", "onehot")
    shrink_fields: ClassVar[tuple[str, ...]] = ("depth", "width")

    width: int = option(2, help="chains drawn from the root (W)", label="W", parse=positive_int, metavar="W",
                        search=(1, 3))
    depth: int = option(None, help="tree depth (chain length)", label="D", parse=positive_int, metavar="D",
                        search=(1, 2))
    sampling: str = option(None, help="root children i.i.d. or without replacement (default: wor for rrs-wor, "
                           "else iid)", choices=SAMPLING_MODES)

    def validate(self) -> None:
        self.require_positive("width", "depth")
        mode = self.sampling or ("wor" if self.verifier == "rrs-wor" else "iid")
        _check_sampled(self.verifier, mode, self.shape())
        object.__setattr__(self, "sampling", mode)

    def shape(self) -> list[tuple[int, ...]]:
        """Index paths, breadth first: the W root children, then each chain one layer at a time."""
        return [(w,) + (0,) * d for d in range(self.depth) for w in range(self.width)]

    @property
    def nodes(self) -> int:
        return self.width * self.depth

    def builder(self, pair, cache=None):
        shape = self.shape()
        return lambda chooser: build_static(pair, shape, self.sampling, chooser)
