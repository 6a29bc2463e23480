"""A *method* = a tree builder + a per-node verifier, configured once and used everywhere.

:class:`Method` is the plain-data description shared by the exact certifier, the Monte-Carlo
sampler and the command line. ``method.builder(pair)`` returns a function
``chooser -> Tree``; ``method.verify`` is the transition rule.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Callable

from .errors import TreeError, VerifierError
from .trees import (
    DynamicConfig,
    ExpansionCache,
    build_dynamic,
    build_static,
    chain_shape,
    parse_shape,
)
from .verify import get_verifier

__all__ = ["Method", "METHODS", "DEFAULT_VERIFIER", "ALLOWED_VERIFIERS", "DECODE_PROXY"]

METHODS = ("eagle", "rheo", "static", "chain")

#: Verifier used when none is given.
DEFAULT_VERIFIER = {"eagle": "onehot", "rheo": "ot", "static": "rrs", "chain": "sequential"}

#: Score of rheo's sampled slot in ``decode`` and ``bench``: the draft mass outside the head. On
#: the built-in pair (K=2, D=4, N=8, m=1, 6 prompts x 100 tokens x 3) it gives 4.54 / 4.35 / 3.83
#: tokens per step at T = 0 / 0.5 / 1 against 4.54 / 4.31 / 3.40 with ``next`` and 4.54 / 4.35 /
#: 3.56 with ``min-best-tail``: at T = 1 the sampled token is accepted far more often than the
#: next-ranked token's draft probability suggests, so ``next`` prunes its subtree too early.
DECODE_PROXY = "tail"

#: Verifiers defined for each method's candidate sets. Dynamic trees have deterministic
#: children plus at most one sampled child per node; rrs / rrs-wor / kseq are rules for sets of
#: sampled siblings and are offered for static trees and chains only.
ALLOWED_VERIFIERS = {
    "eagle": ("onehot", "sequential", "ot"),
    "rheo": ("onehot", "sequential", "ot"),
    "static": ("onehot", "sequential", "rrs", "rrs-wor", "kseq", "ot"),
    "chain": ("onehot", "sequential", "rrs", "kseq", "ot"),
}


@dataclass(frozen=True)
class Method:
    """Plain-data description of one speculative-decoding step."""

    method: str = "rheo"  # eagle | rheo | static | chain
    top_k: int = 3  # K (eagle, rheo)
    depth: int = 3  # D: tree depth (eagle, rheo, chain); static: the shape's depth
    budget: int = 8  # N: non-root nodes kept (eagle, rheo)
    head: int | None = None  # m deterministic head slots (rheo); None = K - 1
    proxy: str = "next"  # sampled-slot score (rheo), see trees.dynamic.PROXIES
    verifier: str | None = None  # None = DEFAULT_VERIFIER[method]
    shape: tuple | None = None  # static: index paths
    sampling: str | None = None  # static: iid | wor (None: wor for rrs-wor, else iid)
    fillers: str = "rank"  # rheo with head < K-1: filler layout, see trees.dynamic.FILLERS

    def __post_init__(self):
        if self.method not in METHODS:
            raise TreeError(f"unknown method {self.method!r}; choose from {', '.join(METHODS)}")
        ver = self.verifier or DEFAULT_VERIFIER[self.method]
        get_verifier(ver)  # unknown names
        if ver not in ALLOWED_VERIFIERS[self.method]:
            raise VerifierError(f"verifier {ver!r} does not apply to {self.method} trees; "
                                f"choose from {', '.join(ALLOWED_VERIFIERS[self.method])}")
        object.__setattr__(self, "verifier", ver)
        if self.method in ("eagle", "rheo"):
            DynamicConfig(self.top_k, self.depth, self.budget, self.method == "rheo",
                          self.head, self.proxy, self.fillers)
        if self.method == "static":
            if self.shape is None:
                raise TreeError("static needs a shape (JSON list of index paths, e.g. [[0],[1],[0,0]])")
            shape = tuple(parse_shape(self.shape))
            object.__setattr__(self, "shape", shape)
            object.__setattr__(self, "depth", max(len(t) for t in shape))
        elif self.method == "chain":
            if not isinstance(self.depth, int) or isinstance(self.depth, bool) or self.depth < 1:
                raise TreeError(f"depth must be a positive integer, got {self.depth!r}")
            object.__setattr__(self, "shape", tuple(chain_shape(self.depth)))
        if self.method in ("static", "chain"):
            mode = self.sampling or ("wor" if ver == "rrs-wor" else "iid")
            if mode not in ("iid", "wor"):
                raise TreeError(f"unknown sampling {mode!r}; choose iid or wor")
            if ver == "rrs" and mode != "iid":
                raise VerifierError("rrs verifies i.i.d. drafts; use rrs-wor for sampling without replacement")
            if ver == "rrs-wor" and mode != "wor":
                raise VerifierError("rrs-wor verifies drafts without replacement; use rrs for i.i.d. sampling")
            if ver == "kseq" and mode != "iid":
                raise VerifierError("kseq verifies i.i.d. drafts; use --sampling iid")
            if ver == "ot" and any(t[-1] > 0 for t in self.shape):
                raise VerifierError("ot is defined for at most one sampled child per node (use a chain)")
            object.__setattr__(self, "sampling", mode)

    def known_lossy(self) -> str | None:
        """Why this method is known to be lossy, or None.

        rheo (proxy, verifier) pairs for which the exact certifier has found lossy instances
        (README, "What the certifier finds"); every other combination offered here was found
        lossless on every instance tried. Model-backed decoding warns with this reason.
        """
        if self.method != "rheo":
            return None
        if self.proxy == "true" and self.verifier != "onehot":
            return "the true proxy lets the sampled token's identity decide which nodes survive the prune"
        if self.proxy in ("tail", "min-best-tail") and self.verifier == "sequential":
            return (f"the {self.proxy} proxy with the sequential verifier: a sampled subtree can push a "
                    "deterministic sibling out of the budget")
        return None

    @property
    def verify(self) -> Callable:
        return get_verifier(self.verifier)

    def builder(self, pair, cache: ExpansionCache | None = None) -> Callable:
        """A function chooser -> Tree for this method on ``pair``."""
        if self.method in ("eagle", "rheo"):
            cfg = DynamicConfig(self.top_k, self.depth, self.budget, self.method == "rheo",
                                self.head, self.proxy, self.fillers)
            cache = cache or ExpansionCache(pair)
            return lambda chooser: build_dynamic(pair, cfg, chooser, cache)
        shape = list(self.shape)
        return lambda chooser: build_static(pair, shape, self.sampling, chooser)

    def describe(self) -> str:
        if self.method == "eagle":
            return f"eagle K={self.top_k} D={self.depth} N={self.budget} verifier={self.verifier}"
        if self.method == "rheo":
            m = self.top_k - 1 if self.head is None else self.head
            return (f"rheo K={self.top_k} D={self.depth} N={self.budget} head={m} proxy={self.proxy} "
                    f"verifier={self.verifier}")
        if self.method == "chain":
            return f"chain D={self.depth} verifier={self.verifier}"
        return f"static shape={[list(t) for t in self.shape]} sampling={self.sampling} verifier={self.verifier}"

    def to_dict(self) -> dict:
        d = asdict(self)
        if d.get("shape") is not None:
            d["shape"] = [list(t) for t in d["shape"]]
        return d

