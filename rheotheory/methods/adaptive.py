r"""Adaptive RheoSampling: a head sized from the draft law, several tail samples without replacement
(docs/theory.md section 2.7).

Each expansion places the ranked tokens whose draft probability reaches a threshold
deterministically (at most K - 1 of them) and fills the other slots with draws without
replacement from the draft's tail, scored by a proxy that does not read the draws. The walk
verifies a node with ``ot-wor`` (:func:`rheotheory.verify.rules.ot_wor`): the samples by
recursive rejection, then the residual draw continues into a deterministic sibling holding it.

What runs depends on the target temperature T (:meth:`AdaptiveMethod.at_temperature`, the bands
of docs/theory.md section 2.7; the preset's edges are 0.5 and 1):

- T = 0 (``greedy=eagle``) and 0 < T < ``eagle_below``: the EAGLE tree of the same size; a sharp
  target accepts mostly its arg-max, which deterministic slots hold more often than samples;
- ``eagle_below`` <= T < ``sampled_from`` (``below=rheo``): RheoSampling's tree as the
  ``rheo-tuned`` preset fixes it (one head slot, one tail sample, fillers, ``ot``);
- T >= ``sampled_from``: no head, the tail proxy (a shape that reads no token), every slot sampled
  without replacement, and Traversal Verification (``traversal``), which the certifier finds
  exactly lossless on these trees and lossy on trees with deterministic children, even visiting
  the samples first (``traversal-ot``).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

from ..errors import TreeError
from ..trees.adaptive import (DEFAULT_THRESHOLD, HEAD_RULES, PROXIES, SAMPLE_ACCEPT, SAMPLE_DECAY, AdaptiveConfig,
                              build_adaptive)
from .dynamic import DynamicMethod, EagleMethod, budget_option, depth_option, top_k_option
from .registry import Method, option, register, resolve

__all__ = ["AdaptiveMethod", "DEFAULT_SAMPLED_FROM", "DEFAULT_EAGLE_BELOW", "BELOW_PRESET"]

#: ``sampled_from``: from this target temperature on, every slot is sampled and verified by Traversal
#: Verification (V = 32k grid, seed 0: at T >= 1 that tree was above every other method in most cells;
#: at T = 0.75 rheo-tuned's tree was significantly better at low mismatch, and it ties at high).
DEFAULT_SAMPLED_FROM = "1"

#: ``eagle_below``: for 0 < T below this the EAGLE tree runs (V = 32k grid, seed 0: EAGLE was the best
#: method or tied with it at T = 0.25 in every cell; at T = 0.5 rheo-tuned's tree was best at low mismatch).
DEFAULT_EAGLE_BELOW = "0.5"

#: ``below=rheo``: the preset whose tree runs for eagle_below <= T < sampled_from.
BELOW_PRESET = "rheo-tuned"


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


def _fraction_value(name: str, open_below: bool):
    """A parser for a fraction field in [0, 1] (``open_below``: (0, 1]), kept as text (plain data, exact)."""
    span = "(0, 1]" if open_below else "[0, 1]"

    def parse(text) -> str:
        try:
            v = Fraction(str(text))
        except (TypeError, ValueError, ZeroDivisionError):
            raise TreeError(f"{name} must be a number in {span}, got {text!r}") from None
        if not (0 < v <= 1 if open_below else 0 <= v <= 1):
            raise TreeError(f"{name} must lie in {span}, got {text!r}")
        return str(text)

    return parse


def _temperature_value(name: str, off: bool = False):
    """A parser for a temperature field: a decimal string > 0 (plain data), or ``off`` if allowed."""
    what = "a finite number > 0" + (" or off" if off else "")

    def parse(text) -> str:
        if off and isinstance(text, str) and text.strip().lower() == "off":
            return "off"
        try:
            v = float(text)
        except (TypeError, ValueError):
            raise TreeError(f"{name} must be {what}, got {text!r}") from None
        if not v > 0 or v != v or v == float("inf"):
            raise TreeError(f"{name} must be {what}, got {text!r}")
        return format(v, "g")

    return parse


#: The parsers of the fields below (each field's rule lives here once).
_PARSE = {"threshold": _fraction_value("threshold", False), "accept": _fraction_value("accept", True),
          "decay": _fraction_value("decay", True), "t_hat": _temperature_value("t_hat"),
          "eagle_below": _temperature_value("eagle_below", off=True),
          "sampled_from": _temperature_value("sampled_from", off=True)}


@register
@dataclass(frozen=True)
class AdaptiveMethod(DynamicMethod):
    """Adaptive RheoSampling: a head of m ranked tokens sized from q, K - m tail samples without
    replacement, ``ot-wor`` (docs/theory.md section 2.7).

    The head's size m comes from the draft law at each expansion (the ``predicted`` or
    ``threshold`` rule), or is fixed. Fractions and temperatures are kept as text (plain data,
    exact); the constructor writes temperatures in their shortest form (``"0.50"`` becomes ``"0.5"``).

    Attributes
    ----------
    verifier : str, optional
        The verifier (default ``ot-wor``; also ``onehot``, ``sequential``, ``traversal`` with
        ``head=0`` and the tail proxy only, and ``traversal-ot``, a lossy negative control).
    top_k : int
        K: slots per expansion and nodes expanded per layer.
    depth : int
        D: tree depth (layers below the root).
    budget : int
        N: non-root nodes kept by the global prune.
    head : int or str, default "predicted"
        The deterministic head per expansion: ``"predicted"`` (the m with the best per-node
        acceptance predicted for p-hat = norm(q^(1/T))), ``"threshold"`` (the ranked tokens with
        q >= ``threshold``), or a fixed integer m (at most K-1 in every case).
    threshold : str, default "1/4"
        Theta of the ``threshold`` head rule: the draft probability from which a ranked token is
        placed deterministically, a fraction in [0, 1].
    proxy : str, default "predicted"
        The slot scores: ``predicted`` (path probabilities under p-hat), ``tail``, ``next``, or
        ``true`` (a lossy negative control).
    t_hat : str, default "1"
        T of the predicted target p-hat = norm(q^(1/T)), a number > 0; sweeps and decoding set it
        to the target temperature (:meth:`at_temperature`).
    accept : str, default "3/4"
        Tail proxy: the first sample of an expansion scores its parent times this times the tail
        mass; a fraction in (0, 1].
    decay : str, default "1/2"
        Tail and predicted proxies: each later sample of an expansion scores this times the one
        before; a fraction in (0, 1].
    greedy : str, default "eagle"
        The tree at T = 0: ``eagle`` (all slots deterministic) or ``same``.
    eagle_below : str, default "0.5"
        For 0 < T below this target temperature the EAGLE tree runs (as at T = 0 with
        ``greedy=eagle``); ``"off"``: never.
    below : str, default "rheo"
        The tree for ``eagle_below`` <= T < ``sampled_from``: ``rheo`` (the ``rheo-tuned`` preset's
        RheoSampling tree at the same size) or ``same`` (this family's head rule).
    sampled_from : str, default "1"
        From this target temperature on: head 0 (every slot sampled without replacement), the tail
        proxy and Traversal Verification; ``"off"``: never.

    Raises
    ------
    TreeError
        On construction: a field outside its range (see :meth:`validate`).
    """

    family: ClassVar[str] = "adaptive"
    summary: ClassVar[str] = ("adaptive RheoSampling: a head chosen per expansion (by predicted acceptance, a "
                              "threshold or fixed), the other slots sampled without replacement from the tail, "
                              "ot-wor verification")
    #: ``ot-wor`` is the rule for several sampled siblings; ``onehot`` is lossless on any tree;
    #: ``sequential`` (= rrs-wor with the head checked first) is admitted for the certifier.
    #: The tree-level ``traversal`` is admitted with ``head=0`` only (every slot sampled), and
    #: ``traversal-ot`` as the lossy negative control (docs/theory.md section 7.1).
    verifiers: ClassVar[tuple[str, ...]] = ("ot-wor", "onehot", "sequential")

    top_k: int = top_k_option()
    depth: int = depth_option()
    budget: int = budget_option()
    head: int | str = option("predicted", help="deterministic head per expansion: predicted (the m with the best "
                             "per-node acceptance predicted for p-hat = norm(q^(1/T))), threshold (ranked tokens "
                             "with q >= threshold), or a fixed integer m <= K-1 (at most K-1 in every case)",
                             label="head", parse=_head_value, metavar="M",
                             examples=("predicted", "threshold", 0, 1, 2))
    threshold: str = option(str(DEFAULT_THRESHOLD), help="the threshold head rule's theta: a ranked token with "
                            "q >= theta goes to the deterministic head", parse=_PARSE["threshold"], metavar="THETA")
    proxy: str = option("predicted", help="slot scores: predicted (path probabilities under p-hat), tail, next, "
                        "or true (lossy negative control)", choices=PROXIES)
    t_hat: str = option("1", help="T of the predicted target p-hat = norm(q^(1/T)); sweeps and decoding set "
                              "it to the target temperature (at_temperature)", parse=_PARSE["t_hat"],
                              label="T-hat", metavar="T")
    accept: str = option(str(SAMPLE_ACCEPT), help="tail proxy: the first sample of an expansion scores its "
                         "parent times this times the tail mass", parse=_PARSE["accept"], metavar="A")
    decay: str = option(str(SAMPLE_DECAY), help="tail and predicted proxies: each later sample of an expansion "
                        "scores this times the one before", parse=_PARSE["decay"], metavar="R")
    greedy: str = option("eagle", help="tree at T = 0: eagle (all slots deterministic) or same",
                         choices=("eagle", "same"))
    eagle_below: str = option(DEFAULT_EAGLE_BELOW, help="for 0 < T < this target temperature the EAGLE tree runs "
                              "(as at T = 0 with greedy=eagle); off: never", parse=_PARSE["eagle_below"],
                              metavar="T")
    below: str = option("rheo", help=f"tree for eagle_below <= T < sampled_from: rheo (the {BELOW_PRESET} preset's "
                        "RheoSampling tree at the same size) or same (this family's head rule)",
                        choices=("rheo", "same"))
    sampled_from: str = option(DEFAULT_SAMPLED_FROM, help="from this target temperature on: head 0 (every slot "
                               "sampled without replacement), the tail proxy and Traversal Verification; off: never",
                               parse=_PARSE["sampled_from"], metavar="T")

    def validate(self) -> None:
        """Parse and normalise the head, the fractions and the temperatures, then check the bands, the
        ``traversal`` restriction, the sizes and the builder's own checks.

        Raises
        ------
        TreeError
            A field outside its range, ``greedy`` or ``below`` not one of its two values, or
            ``traversal`` with a head other than 0 or a proxy other than ``tail``.
        """
        object.__setattr__(self, "head", _head_value(self.head))
        for name, parse in _PARSE.items():
            object.__setattr__(self, name, parse(getattr(self, name)))
        if self.greedy not in ("same", "eagle"):
            raise TreeError(f"greedy must be same or eagle, got {self.greedy!r}")
        if self.below not in ("rheo", "same"):
            raise TreeError(f"below must be rheo or same, got {self.below!r}")
        if self.verifier == "traversal" and (self.head != 0 or self.proxy != "tail"):
            raise TreeError(f"verifier traversal applies to adaptive trees with head 0 only and the tail proxy "
                            f"(every slot sampled, a shape that reads no token; otherwise it is lossy, "
                            f"docs/theory.md section 7.1), got head={self.head} proxy={self.proxy}")
        super().validate()  # positive sizes and the builder's own checks

    def config(self) -> AdaptiveConfig:
        """The adaptive builder's configuration of this method.

        Returns
        -------
        AdaptiveConfig
            K, D, N, the head rule, threshold and proxy, ``t_hat`` as the temperature, and the
            fractions as :class:`fractions.Fraction`.
        """
        return AdaptiveConfig(self.top_k, self.depth, self.budget, head=self.head,
                              threshold=Fraction(self.threshold), proxy=self.proxy,
                              temperature=float(self.t_hat), sample_accept=Fraction(self.accept),
                              sample_decay=Fraction(self.decay))

    def build_tree(self, pair, cfg, chooser, cache):
        """One adaptive tree (:func:`~rheotheory.trees.adaptive.build_adaptive`).

        Parameters
        ----------
        pair : ToyPair or SyntheticPair
            The target and draft laws (the pair protocol of :mod:`rheotheory.pairs`).
        cfg : AdaptiveConfig
            The builder's configuration (:meth:`config`).
        chooser : Chooser
            Answers every draw of the construction (:class:`~rheotheory.trees.tree.Chooser`).
        cache : ExpansionCache
            Ranked draft laws shared by the trees built on ``pair``.

        Returns
        -------
        Tree
            The finished (pruned) draft tree.
        """
        return build_adaptive(pair, cfg, chooser, cache)

    def at_temperature(self, temperature: float) -> Method:
        """The method run at target temperature T: the bands of the module docstring.

        Parameters
        ----------
        temperature : float
            The target's sampling temperature T (0: greedy).

        Returns
        -------
        Method
            An :class:`~rheotheory.methods.dynamic.EagleMethod` of the same size at T = 0 (with
            ``greedy=eagle``) and for 0 < T < ``eagle_below``; for T >= ``sampled_from``, this
            method with head 0, the tail proxy, ``traversal`` and ``t_hat = T``; below that, with
            ``below=rheo``, the ``rheo-tuned`` preset at the same size; else this method with
            ``t_hat = T`` where the head or the proxy is ``predicted``, or itself.
        """
        if (temperature == 0 and self.greedy == "eagle") or \
                (0 < temperature and self.eagle_below != "off" and temperature < float(self.eagle_below)):
            return EagleMethod(top_k=self.top_k, depth=self.depth, budget=self.budget)
        if temperature > 0 and self.sampled_from != "off" and temperature >= float(self.sampled_from):
            return self.fit(head=0, proxy="tail", verifier="traversal", t_hat=_PARSE["t_hat"](temperature))
        if temperature > 0 and self.below == "rheo":
            return resolve(BELOW_PRESET, size=(self.top_k, self.depth, self.budget))
        if temperature > 0 and (self.head == "predicted" or self.proxy == "predicted"):
            return self.fit(t_hat=_PARSE["t_hat"](temperature))
        return self

    def run_key(self) -> str:
        """What a step of this method builds and verifies, as text: the step's own fields.

        Returns
        -------
        str
            JSON of :meth:`to_dict` with sorted keys, without the band fields (greedy, eagle_below,
            below, sampled_from: they only choose what :meth:`at_temperature` returns), and without
            ``t_hat`` unless the head or the proxy is ``predicted`` (the only readers of T-hat).
        """
        import json

        d = self.to_dict()
        for name in ("greedy", "eagle_below", "below", "sampled_from"):
            d.pop(name)
        if self.head != "predicted" and self.proxy != "predicted":
            d.pop("t_hat")
        return json.dumps(d, sort_keys=True)

    def known_lossy(self) -> str | None:
        """Why this method is known to be lossy (docs/theory.md section 8), or None.

        Returns
        -------
        str or None
            The ``true`` proxy with any verifier but ``onehot``; ``traversal-ot`` with a head other
            than 0; else :meth:`Method.known_lossy`.
        """
        if self.proxy == "true" and self.verifier != "onehot":
            return "the true proxy lets the sampled tokens' identities decide which nodes survive the prune"
        if self.verifier == "traversal-ot" and self.head != 0:
            return ("traversal-ot on trees with deterministic children: the certifier finds it lossy "
                    "(docs/theory.md section 7.1)")
        return super().known_lossy()
