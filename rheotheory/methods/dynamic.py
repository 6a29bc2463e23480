"""Dynamic trees: EAGLE-2's top-K tree and RheoSampling (docs/theory.md sections 2.1 and 2.2)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..errors import TreeError
from ..trees import FILLERS, PROXIES, DynamicConfig, ExpansionCache, build_dynamic
from .registry import Method, option, positive_int, register

__all__ = ["DynamicMethod", "EagleMethod", "RheoMethod", "top_k_option", "depth_option", "budget_option"]

#: Verifiers defined for dynamic trees: deterministic children plus at most one sampled child
#: per node (rrs / rrs-wor / kseq are rules for sets of sampled siblings).
DYNAMIC_VERIFIERS = ("onehot", "sequential", "ot")


def top_k_option():
    return option(None, help="slots per expansion and nodes expanded per layer", label="K", parse=positive_int,
                  metavar="K", search=(2, 3))


def depth_option():
    return option(None, help="tree depth (layers below the root)", label="D", parse=positive_int, metavar="D",
                  search=(2, 3))


def budget_option():
    return option(None, help="non-root nodes kept by the global prune", label="N", parse=positive_int,
                  metavar="N", search=(2, 6))


@dataclass(frozen=True)
class DynamicMethod(Method):
    """Base of the dynamic families: K, D, N, a global prune, and a builder over an expansion cache."""

    verifiers: ClassVar[tuple[str, ...]] = DYNAMIC_VERIFIERS
    shrink_fields: ClassVar[tuple[str, ...]] = ("depth", "top_k", "budget")

    def config(self) -> DynamicConfig:
        raise NotImplementedError

    def validate(self) -> None:
        self.require_positive("top_k", "depth", "budget")
        self.config()  # the builder's own checks

    @property
    def nodes(self) -> int:
        return self.budget

    def build_tree(self, pair, cfg, chooser, cache):
        """One tree of this family (the dynamic builder; a family with its own builder overrides)."""
        return build_dynamic(pair, cfg, chooser, cache)

    def builder(self, pair, cache: ExpansionCache | None = None):
        cfg = self.config()
        cache = cache or ExpansionCache(pair)
        return lambda chooser: self.build_tree(pair, cfg, chooser, cache)

    def fit(self, **changes) -> "DynamicMethod":
        """``changes`` applied; an integer head above the new K - 1 is lowered to it."""
        k = changes.get("top_k", self.top_k)
        head = getattr(self, "head", None)
        if "head" not in changes and isinstance(head, int) and isinstance(k, int) and head > k - 1:
            changes["head"] = max(0, k - 1)
        return super().fit(**changes)


@register
@dataclass(frozen=True)
class EagleMethod(DynamicMethod):
    """EAGLE-2/3: K deterministic top-ranked children per expansion, global prune to N."""

    family: ClassVar[str] = "eagle"
    summary: ClassVar[str] = "EAGLE-2 dynamic top-K tree with global pruning (deterministic children)"

    top_k: int = top_k_option()
    depth: int = depth_option()
    budget: int = budget_option()

    def config(self) -> DynamicConfig:
        return DynamicConfig(self.top_k, self.depth, self.budget, sampled=False)


def _head_value(text):
    """``head`` as given: an integer, or ``K-1`` / ``K/2`` (resolved once K is known)."""
    if isinstance(text, str) and text.replace(" ", "").upper() in ("K-1", "K/2"):
        return text.replace(" ", "").upper()
    try:
        v = int(text)
    except (TypeError, ValueError):
        raise TreeError(f"head must be an integer, K-1 or K/2, got {text!r}") from None
    if v < 0:
        raise TreeError(f"head must be >= 0, got {text!r}")
    return v


@register
@dataclass(frozen=True)
class RheoMethod(DynamicMethod):
    """RheoSampling: m deterministic head slots, one slot sampled from the draft's tail scored by a
    proxy, K-1-m fillers (docs/theory.md section 2.2)."""

    family: ClassVar[str] = "rheo"
    summary: ClassVar[str] = ("RheoSampling: m deterministic slots + one slot sampled from the tail, scored "
                              "by a proxy for expansion and pruning")
    verifiers: ClassVar[tuple[str, ...]] = ("ot", "onehot", "sequential")

    top_k: int = top_k_option()
    depth: int = depth_option()
    budget: int = budget_option()
    head: int | str = option("K-1", help="deterministic head slots m per expansion: an integer, K-1 or K/2",
                             label="head", parse=_head_value, metavar="M", examples=("K-1", "K/2", 0, 1, 2))
    proxy: str = option("next", help="score of the sampled slot", choices=PROXIES)
    fillers: str = option("rank", help="slots after the sampled one when m < K-1", choices=FILLERS)
    greedy: str = option("same", help="tree at T = 0: same, or eagle (all slots deterministic; a greedy "
                         "target accepts only its arg-max)", choices=("same", "eagle"))

    def validate(self) -> None:
        head = _head_value(self.head)
        if isinstance(self.top_k, int) and isinstance(head, str):
            head = self.top_k - 1 if head == "K-1" else self.top_k // 2
        object.__setattr__(self, "head", head)
        if self.greedy not in ("same", "eagle"):
            raise TreeError(f"greedy must be same or eagle, got {self.greedy!r}")
        super().validate()

    def config(self) -> DynamicConfig:
        return DynamicConfig(self.top_k, self.depth, self.budget, sampled=True, head=self.head, proxy=self.proxy,
                             fillers=self.fillers)

    def at_temperature(self, temperature: float) -> Method:
        if temperature == 0 and self.greedy == "eagle":
            return EagleMethod(top_k=self.top_k, depth=self.depth, budget=self.budget)
        return self

    def known_lossy(self) -> str | None:
        if self.proxy == "true" and self.verifier != "onehot":
            return "the true proxy lets the sampled token's identity decide which nodes survive the prune"
        if self.proxy in ("tail", "min-best-tail") and self.verifier == "sequential":
            return (f"the {self.proxy} proxy with the sequential verifier: a sampled subtree can push a "
                    "deterministic sibling out of the budget")
        return super().known_lossy()
