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
    """``width`` sampled chains of ``depth`` tokens from the root (SpecTr, arXiv 2310.15141).

    Attributes
    ----------
    verifier : str, optional
        The verifier (default ``kseq``; also ``rrs``, ``rrs-wor``, ``sequential``, ``onehot`` and the
        tree-level verifiers registered for multichains, e.g. ``traversal``, ``gbv``).
    width : int, default 2
        W: the chains drawn from the root.
    depth : int
        D: the length of each chain.
    sampling : str, optional
        The root's children ``"iid"`` or ``"wor"`` (without replacement); default: ``wor`` for
        ``rrs-wor``, else ``iid``.

    Raises
    ------
    TreeError
        On construction: ``width`` or ``depth`` is not an integer >= 1.
    VerifierError
        On construction: the verifier does not read the sampling mode.
    """

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
        """Check the sizes, resolve the sampling mode and check that the verifier reads it.

        Raises
        ------
        TreeError
            ``width`` or ``depth`` is not an integer >= 1.
        VerifierError
            The verifier is not defined for the sampling mode.
        """
        self.require_positive("width", "depth")
        mode = self.sampling or ("wor" if self.verifier == "rrs-wor" else "iid")
        _check_sampled(self.verifier, mode, self.shape())
        object.__setattr__(self, "sampling", mode)

    def shape(self) -> list[tuple[int, ...]]:
        """The tree's shape as index paths.

        Returns
        -------
        list of tuple of int
            Breadth first: the W root children ``(w,)``, then each chain one layer at a time
            (``(w, 0, ..., 0)``); W * D paths.
        """
        return [(w,) + (0,) * d for d in range(self.depth) for w in range(self.width)]

    @property
    def nodes(self) -> int:
        """Most draft nodes a tree holds: W * D."""
        return self.width * self.depth

    def builder(self, pair, cache=None):
        """A function ``chooser -> Tree`` building the W chains on ``pair``.

        Parameters
        ----------
        pair : ToyPair or SyntheticPair
            The target and draft laws (the pair protocol of :mod:`rheotheory.pairs`).
        cache : ExpansionCache, optional
            Not read.

        Returns
        -------
        callable
            ``build(chooser) -> Tree`` (:func:`~rheotheory.trees.build_static` with :meth:`shape`).
        """
        shape = self.shape()
        return lambda chooser: build_static(pair, shape, self.sampling, chooser)
