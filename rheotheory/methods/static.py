"""Static sampled trees and chains (docs/theory.md sections 2.3 and 2.4)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..errors import TreeError, VerifierError
from ..trees import SAMPLING_MODES, build_static, chain_shape, parse_shape
from ..trees.static import greedy_shape
from ..verify import TREE_VERIFIERS
from .registry import Method, option, positive_int, register

__all__ = ["StaticMethod", "ChainMethod", "STATIC_ACCEPT", "STATIC_DECAY"]

#: A static shape not given explicitly is grown greedily (Sequoia-like) assuming the i-th
#: sampled child of a node is accepted with STATIC_ACCEPT * STATIC_DECAY**i; only the ordering
#: of these weights matters. One rule for every command (sweeps, decoding, certification).
STATIC_ACCEPT, STATIC_DECAY = 0.75, 0.5


def _check_sampled(verifier: str, mode: str, shape) -> None:
    """Which sampled-sibling verifier reads which sampling mode (docs/theory.md section 3)."""
    if verifier == "rrs" and mode != "iid":
        raise VerifierError("rrs verifies i.i.d. drafts; use rrs-wor for sampling without replacement")
    if verifier == "rrs-wor" and mode != "wor":
        raise VerifierError("rrs-wor verifies drafts without replacement; use rrs for i.i.d. sampling")
    if verifier == "kseq" and mode != "iid":
        raise VerifierError("kseq verifies i.i.d. drafts; use --sampling iid")
    if verifier == "ot" and any(t[-1] > 0 for t in shape):
        raise VerifierError("ot is defined for at most one sampled child per node (use a chain)")
    tv = TREE_VERIFIERS.get(verifier)
    modes = getattr(tv, "sampling_modes", None)  # a tree-level verifier that reads one sampling mode only
    if modes is not None and mode not in modes:
        said = {"iid": "i.i.d.", "wor": "without replacement"}
        raise VerifierError(f"{verifier} verifies drafts sampled {' or '.join(said.get(m, m) for m in modes)}; "
                            f"use --sampling {modes[0]}")


def _shape_value(text):
    return parse_shape(text)


@register
@dataclass(frozen=True)
class StaticMethod(Method):
    """A fixed shape whose children are sampled from the draft, i.i.d. or without replacement."""

    family: ClassVar[str] = "static"
    summary: ClassVar[str] = ("static sampled tree (SpecInfer / Sequoia): fixed shape, children drawn from q "
                              "i.i.d. or without replacement")
    verifiers: ClassVar[tuple[str, ...]] = ("rrs", "rrs-wor", "kseq", "sequential", "onehot", "ot")

    shape: tuple | None = option(None, help="JSON list of index paths, e.g. '[[0],[1],[0,0]]' (default: the "
                                 "greedy shape of N nodes and depth <= D)", parse=_shape_value, metavar="PATHS",
                                 examples=(None, ((0,), (0, 0)), ((0,), (1,), (0, 0)), ((0,), (0, 0), (0, 1)),
                                           ((0,), (1,), (2,))))
    depth: int = option(None, help="deepest layer of the greedy shape", label="D", parse=positive_int, metavar="D")
    budget: int = option(None, help="nodes of the greedy shape", label="N", parse=positive_int, metavar="N")
    sampling: str = option(None, help="children i.i.d. or without replacement (default: wor for rrs-wor, else "
                           "iid)", choices=SAMPLING_MODES)

    @classmethod
    def size_from_fields(cls, fields: dict) -> bool:
        return fields.get("shape") is not None

    def default_verifier(self) -> str:
        return "rrs-wor" if self.sampling == "wor" else "rrs"

    def validate(self) -> None:
        if self.shape is None:
            if self.depth is None or self.budget is None:
                raise TreeError("static needs a shape (JSON list of index paths) or a node budget and a depth")
            self.require_positive("depth", "budget")
            shape = greedy_shape(self.budget, self.depth, STATIC_ACCEPT, STATIC_DECAY)
        else:
            shape = self.shape
        shape = tuple(parse_shape(shape))
        depth, budget = max(len(t) for t in shape), len(shape)
        for name, v in (("depth", depth), ("budget", budget)):
            given = getattr(self, name)
            if self.shape is not None and given is not None and given != v:
                raise TreeError(f"--{name} {given} contradicts the shape ({name} {v}); give one or the other")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "depth", depth)
        object.__setattr__(self, "budget", budget)
        mode = self.sampling or ("wor" if self.verifier == "rrs-wor" else "iid")
        if mode not in SAMPLING_MODES:
            raise TreeError(f"unknown sampling {mode!r}; choose iid or wor")
        _check_sampled(self.verifier, mode, shape)
        object.__setattr__(self, "sampling", mode)

    @property
    def nodes(self) -> int:
        return len(self.shape)

    def builder(self, pair, cache=None):
        shape = list(self.shape)
        return lambda chooser: build_static(pair, shape, self.sampling, chooser)

    def describe(self) -> str:
        return f"static shape={[list(t) for t in self.shape]} sampling={self.sampling} verifier={self.verifier}"


@register
@dataclass(frozen=True)
class ChainMethod(Method):
    """Standard speculative sampling: one path of D tokens sampled from the draft."""

    family: ClassVar[str] = "chain"
    summary: ClassVar[str] = "one sampled path of D draft tokens (standard speculative sampling)"
    verifiers: ClassVar[tuple[str, ...]] = ("sequential", "onehot", "rrs", "kseq", "ot")
    shrink_fields: ClassVar[tuple[str, ...]] = ("depth",)

    depth: int = option(None, help="tree depth (chain length)", label="D", parse=positive_int, metavar="D",
                        search=(1, 3))

    def validate(self) -> None:
        self.require_positive("depth")

    @property
    def nodes(self) -> int:
        return self.depth

    def builder(self, pair, cache=None):
        shape = chain_shape(self.depth)
        return lambda chooser: build_static(pair, shape, "iid", chooser)
