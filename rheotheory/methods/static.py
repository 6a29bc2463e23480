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
    """A fixed shape whose children are sampled from the draft, i.i.d. or without replacement
    (docs/theory.md section 2.3).

    Give either ``shape`` or ``depth`` and ``budget`` (then the shape is grown greedily,
    Sequoia-like, with :data:`STATIC_ACCEPT` and :data:`STATIC_DECAY`); the constructor writes the
    resolved shape, depth, budget and sampling mode back.

    Attributes
    ----------
    verifier : str, optional
        The verifier (default ``rrs-wor`` for ``sampling="wor"``, else ``rrs``; also ``kseq``,
        ``sequential``, ``onehot``, ``ot`` for a chain shape).
    shape : tuple of tuple of int, optional
        Index paths of the nodes, e.g. ``((0,), (1,), (0, 0))`` (from a command line, the JSON
        ``'[[0],[1],[0,0]]'``); default: the greedy shape of N nodes and depth <= D.
    depth : int, optional
        D: the deepest layer of the greedy shape.
    budget : int, optional
        N: the nodes of the greedy shape.
    sampling : str, optional
        ``"iid"`` or ``"wor"`` (without replacement) children; default: ``wor`` for ``rrs-wor``,
        else ``iid``.

    Raises
    ------
    TreeError
        On construction: neither a shape nor both sizes, a size that contradicts the shape, or an
        unknown sampling mode.
    VerifierError
        On construction: the verifier does not read the sampling mode (``rrs`` needs ``iid``,
        ``rrs-wor`` needs ``wor``, ``kseq`` needs ``iid``), or ``ot`` on a node with several
        sampled children.
    """

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
        """Whether ``fields`` already fix the tree's size: they give a shape.

        Parameters
        ----------
        fields : dict[str, object]
            Field name -> value, as :func:`~rheotheory.methods.registry.resolve` collected them.

        Returns
        -------
        bool
            True when ``fields["shape"]`` is set (then no size row is applied).
        """
        return fields.get("shape") is not None

    def default_verifier(self) -> str:
        """The verifier a method with ``verifier=None`` gets.

        Returns
        -------
        str
            ``rrs-wor`` for ``sampling="wor"``, else ``rrs``.
        """
        return "rrs-wor" if self.sampling == "wor" else "rrs"

    def validate(self) -> None:
        """Resolve the shape (given or greedy), its depth and budget and the sampling mode, and check
        that the verifier reads that mode.

        Raises
        ------
        TreeError
            Neither a shape nor both sizes, a size that contradicts the shape, or an unknown
            sampling mode.
        VerifierError
            The verifier is not defined for the sampling mode or the shape.
        """
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
        """Most draft nodes a tree holds: the shape's nodes."""
        return len(self.shape)

    def builder(self, pair, cache=None):
        """A function ``chooser -> Tree`` building this shape on ``pair``, its children sampled.

        Parameters
        ----------
        pair : ToyPair or SyntheticPair
            The target and draft laws (the pair protocol of :mod:`rheotheory.pairs`).
        cache : ExpansionCache, optional
            Not read (static trees rank nothing).

        Returns
        -------
        callable
            ``build(chooser) -> Tree`` (:func:`~rheotheory.trees.build_static` with this shape and
            sampling mode).
        """
        shape = list(self.shape)
        return lambda chooser: build_static(pair, shape, self.sampling, chooser)

    def describe(self) -> str:
        """One line: the shape, the sampling mode and the verifier.

        Returns
        -------
        str
            E.g. ``'static shape=[[0], [1]] sampling=iid verifier=rrs'``.
        """
        return f"static shape={[list(t) for t in self.shape]} sampling={self.sampling} verifier={self.verifier}"


@register
@dataclass(frozen=True)
class ChainMethod(Method):
    """Standard speculative sampling: one path of D tokens sampled from the draft
    (docs/theory.md section 2.4).

    Attributes
    ----------
    verifier : str, optional
        The verifier (default ``sequential``; also ``onehot``, ``rrs``, ``kseq``, ``ot`` and the
        tree-level verifiers registered for chains, e.g. ``block``).
    depth : int
        D: the chain's length.
    """

    family: ClassVar[str] = "chain"
    summary: ClassVar[str] = "one sampled path of D draft tokens (standard speculative sampling)"
    verifiers: ClassVar[tuple[str, ...]] = ("sequential", "onehot", "rrs", "kseq", "ot")
    shrink_fields: ClassVar[tuple[str, ...]] = ("depth",)

    depth: int = option(None, help="tree depth (chain length)", label="D", parse=positive_int, metavar="D",
                        search=(1, 3))

    def validate(self) -> None:
        """Check the depth.

        Raises
        ------
        TreeError
            ``depth`` is not an integer >= 1.
        """
        self.require_positive("depth")

    @property
    def nodes(self) -> int:
        """Most draft nodes a tree holds: the depth D."""
        return self.depth

    def builder(self, pair, cache=None):
        """A function ``chooser -> Tree`` building one chain of D tokens sampled from the draft.

        Parameters
        ----------
        pair : ToyPair or SyntheticPair
            The target and draft laws (the pair protocol of :mod:`rheotheory.pairs`).
        cache : ExpansionCache, optional
            Not read.

        Returns
        -------
        callable
            ``build(chooser) -> Tree``.
        """
        shape = chain_shape(self.depth)
        return lambda chooser: build_static(pair, shape, "iid", chooser)
