r"""Adaptive RheoSampling: a head sized from the draft law, several tail samples without replacement
(docs/theory.md section 2.7).

Each expansion places the ranked tokens whose draft probability reaches a threshold
deterministically (at most K - 1 of them) and fills the other slots with draws without
replacement from the draft's tail, scored by a proxy that does not read the draws. The walk
verifies a node with ``ot-wor`` (:func:`rheotheory.verify.rules.ot_wor`): the samples by
recursive rejection, then the residual draw continues into a deterministic sibling holding it.
At T = 0 (``greedy=eagle``) the EAGLE tree of the same size runs instead: a greedy target
accepts only its arg-max, which deterministic slots hold more often than samples.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

from ..errors import TreeError
from ..trees.adaptive import DEFAULT_THRESHOLD, HEAD_RULES, PROXIES, AdaptiveConfig, build_adaptive
from .dynamic import DynamicMethod, EagleMethod, budget_option, depth_option, top_k_option
from .registry import Method, option, register

__all__ = ["AdaptiveMethod"]


def _head_value(text):
    """``head`` as given: ``auto`` or an integer >= 0 (checked against K by the builder)."""
    if isinstance(text, str) and text.strip().lower() in HEAD_RULES:
        return text.strip().lower()
    try:
        v = int(text)
    except (TypeError, ValueError):
        raise TreeError(f"head must be auto or an integer, got {text!r}") from None
    if v < 0:
        raise TreeError(f"head must be >= 0, got {text!r}")
    return v


def _threshold_value(text) -> str:
    """``threshold`` as a decimal or fraction string in [0, 1] (kept as text: plain data, exact)."""
    try:
        v = Fraction(str(text))
    except (TypeError, ValueError, ZeroDivisionError):
        raise TreeError(f"threshold must be a number in [0, 1], got {text!r}") from None
    if not 0 <= v <= 1:
        raise TreeError(f"threshold must lie in [0, 1], got {text!r}")
    return str(text)


def _temperature_value(text) -> str:
    """``t_hat`` as a decimal string > 0 (plain data)."""
    try:
        v = float(text)
    except (TypeError, ValueError):
        raise TreeError(f"t_hat must be a number > 0, got {text!r}") from None
    if not v > 0 or v != v or v == float("inf"):
        raise TreeError(f"t_hat must be a finite number > 0, got {text!r}")
    return format(v, "g")


@register
@dataclass(frozen=True)
class AdaptiveMethod(DynamicMethod):
    """Adaptive RheoSampling: head by threshold on q, K - m tail samples without replacement, ot-wor."""

    family: ClassVar[str] = "adaptive"
    summary: ClassVar[str] = ("adaptive RheoSampling: head = ranked tokens with q >= threshold, the other "
                              "slots sampled without replacement from the tail, ot-wor verification")
    #: ``ot-wor`` is the rule for several sampled siblings; ``onehot`` is lossless on any tree;
    #: ``sequential`` (= rrs-wor with the head checked first) is admitted for the certifier.
    verifiers: ClassVar[tuple[str, ...]] = ("ot-wor", "onehot", "sequential")

    top_k: int = top_k_option()
    depth: int = depth_option()
    budget: int = budget_option()
    head: int | str = option("predicted", help="deterministic head per expansion: predicted (the m with the best "
                             "per-node acceptance predicted for p-hat = norm(q^(1/T))), threshold (ranked tokens "
                             "with q >= threshold), or a fixed integer m <= K-1 (at most K-1 in every case)",
                             label="head", parse=_head_value, metavar="M")
    threshold: str = option(str(DEFAULT_THRESHOLD), help="draft probability at which auto places a token "
                            "deterministically", parse=_threshold_value, metavar="THETA")
    proxy: str = option("predicted", help="slot scores: predicted (path probabilities under p-hat), tail, next, "
                        "or true (lossy negative control)", choices=PROXIES)
    t_hat: str = option("1", help="T of the predicted target p-hat = norm(q^(1/T)); sweeps and decoding set "
                              "it to the target temperature (at_temperature)", parse=_temperature_value,
                              label="T-hat", metavar="T")
    greedy: str = option("eagle", help="tree at T = 0: eagle (all slots deterministic) or same",
                         choices=("eagle", "same"))

    def validate(self) -> None:
        object.__setattr__(self, "head", _head_value(self.head))
        object.__setattr__(self, "threshold", _threshold_value(self.threshold))
        object.__setattr__(self, "t_hat", _temperature_value(self.t_hat))
        if self.greedy not in ("same", "eagle"):
            raise TreeError(f"greedy must be same or eagle, got {self.greedy!r}")
        super().validate()  # positive sizes and the builder's own checks

    def config(self) -> AdaptiveConfig:
        return AdaptiveConfig(self.top_k, self.depth, self.budget, head=self.head,
                              threshold=Fraction(self.threshold), proxy=self.proxy,
                              temperature=float(self.t_hat))

    def build_tree(self, pair, cfg, chooser, cache):
        return build_adaptive(pair, cfg, chooser, cache)

    def at_temperature(self, temperature: float) -> Method:
        if temperature == 0 and self.greedy == "eagle":
            return EagleMethod(top_k=self.top_k, depth=self.depth, budget=self.budget)
        if temperature > 0 and (self.head == "predicted" or self.proxy == "predicted"):
            return self.fit(t_hat=_temperature_value(temperature))
        return self

    def known_lossy(self) -> str | None:
        if self.proxy == "true" and self.verifier != "onehot":
            return "the true proxy lets the sampled tokens' identities decide which nodes survive the prune"
        return None
