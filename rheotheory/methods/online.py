r"""Online RheoSampling: a step policy over fixed methods ("arms"), learned from earlier steps
(docs/theory.md section 2.8).

Each step runs one arm, chosen before the step draws anything, from the tokens the earlier steps
accepted: a multi-armed bandit whose reward is a step's accepted drafts over the depth,
``(|Z| - 1) / D`` in [0, 1]. The arms are presets resolved at the method's tree size (K, D, N)
and at the target temperature, so every arm spends the same node budget; arms that resolve to
the same method at that temperature (``rheo-tuned`` is EAGLE's tree at T = 0) are one arm.

The rule (``rule``):

- ``thompson`` (default): Thompson sampling with Gaussian posteriors (Agrawal and Goyal,
  "Near-optimal regret bounds for Thompson sampling", J. ACM 2017). Each arm's statistics start
  with one optimistic pseudo-pull of reward 1; arm i with n_i pulls and rewards summing to S_i is
  scored by a draw from N((S_i + 1) / (n_i + 1), s^2 / (n_i + 1)), s^2 the variance of the real
  rewards pooled over arms (1/4, the most a reward in [0, 1] can have, until one exists). Agrawal
  and Goyal prove expected regret O(sum_i log n / Delta_i) against the best arm for i.i.d. rewards
  in [0, 1] with their prior (mean 0, variance scale 1); the optimistic pseudo-pull and the
  pooled scale s^2 < 1 change that prior (less exploration at the few hundred steps a decode
  runs), so no bound is claimed for this rule: its regret is measured (docs/guide/adaptive.md).
- ``ucb1``: the largest (S_i + 1) / (n_i + 1) + sqrt(2 ln(t + k) / (n_i + 1)) over the k arms
  (UCB1, Auer, Cesa-Bianchi and Fischer 2002, with the same pseudo-pull): deterministic, and with
  UCB1's O(sum_i log n / Delta_i) regret for i.i.d. rewards up to the pseudo-pull's constant.

``explore`` (default 1) scales either rule's exploration term: the normal draw's standard
deviation of ``thompson``, the bonus of ``ucb1``. At 0 both rules are greedy on the
pseudo-pulled means (every arm is still tried once, its pseudo-pull being optimistic); below 1
the policy explores less than the rules' guarantees assume, which costs fewer exploratory steps
where one arm is far ahead (T = 0) and risks settling on a slightly worse arm where arms are close
(the study in docs/guide/adaptive.md, "How much to explore"). ``explore_t0``, when set, is the
scale at T = 0 alone: with a greedy target a fixed tree's step is a function of its context, so
each step on the best arm matches it exactly and every exploratory step shows in full in a paired
comparison (docs/guide/adaptive.md, "Why the T = 0 cells stay below").

``feedback`` says what a step teaches the policy. ``own`` (default): the reward of the arm it ran.
``greedy``: at T = 0 also every other arm's. With a greedy target the text a run emits is the greedy
continuation whichever arm runs, and a tree arm's step accepts exactly the longest path of its tree
that the greedy continuation follows (tests/test_online.py checks that for every default arm). So
another arm's tree, drafted at the step's prefix with draws of the policy's own (never the step's),
is scored against the greedy text once it is known: :meth:`OnlinePolicy.counterfactuals` where the
target's laws are at hand (Monte Carlo, exact certification: the argmax chain at the prefix), the
decoder a step or two later from the text it emitted. Every arm is then observed at every step, so
nothing needs exploring: ``explore_t0`` defaults to 0 with it, the rule is then greedy on the arms'
means (follow the leader, whose regret in a full-information stochastic problem stays bounded as
the run grows), and no step is spent on an arm for its information (docs/guide/adaptive.md, "Full
feedback at T = 0"). The cost is drafting every arm's tree at every step. At T > 0 ``greedy``
changes nothing (a sampled target's text says little about what another tree would have accepted).

The first step plays ``rheo-adaptive``'s choice at the temperature (the band rule of section 2.7;
the arm order puts it first), so the policy starts where rheo-adaptive stays. The draws of ``thompson`` come
from a generator seeded by the run's seed and the step's index only, never from the step's
own randomness: the choice is a function of the past (and of the seed), which keeps every step
lossless given its prefix (docs/theory.md section 2.8). Neither rule's guarantee covers text,
whose steps are neither independent nor identically distributed; the measured regret per cell is
in docs/guide/adaptive.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import ClassVar

import numpy as np

from ..errors import TreeError
from ..trees import RandomChooser
from .dynamic import budget_option, depth_option, top_k_option
from .registry import PRESETS, Method, StepPolicy, option, register, resolve

__all__ = ["OnlineMethod", "OnlinePolicy", "DEFAULT_ARMS", "RULES", "FEEDBACK", "drafted_paths", "greedy_accepted",
           "greedy_text"]

#: The default arms: EAGLE's tree, RheoSampling's tuned tree, a static tree sampled without
#: replacement, and the all-sampled tree with Traversal Verification, each the best fixed method
#: in some cell of the committed V = 32k grid or SmolLM2 curves.
DEFAULT_ARMS = "eagle,rheo-tuned,static-wor,rheo-sampled"

#: Bandit rules (see the module docstring).
RULES = ("thompson", "ucb1")

#: What a step teaches the policy (see the module docstring).
FEEDBACK = ("own", "greedy")

#: The reward variance assumed before any arm has two pulls (the most a reward in [0, 1] can have).
PRIOR_VARIANCE = 0.25

#: Seed-sequence tag of the policy's own draws (apart from every step's randomness).
_POLICY_TAG = 2

#: Seed-sequence tag of the draws of the other arms' trees (feedback=greedy).
_COUNTERFACTUAL_TAG = 3


def drafted_paths(method: Method, pair, chooser) -> frozenset:
    """The token paths (below the root) of every kept node of ``method``'s tree on ``pair``, its
    sampled tokens drawn by ``chooser``: what the tree offers a greedy target.

    Parameters
    ----------
    method : Method
        A fixed method (an arm).
    pair : ToyPair or SyntheticPair
        The target and draft laws at the step's prefix (the pair protocol of :mod:`rheotheory.pairs`).
    chooser : Chooser
        Draws the tree's sampled tokens (e.g. :meth:`OnlinePolicy.chooser`), unresolved leaves included.

    Returns
    -------
    frozenset of tuple of int
        The token path from the root to each kept node; empty for a method without draft nodes.
    """
    if method.nodes == 0:
        return frozenset()
    tree = method.builder(pair)(chooser)
    kept = tree.kept if tree.kept is not None else [True] * len(tree.nodes)
    nodes = [i for i in range(1, len(tree.nodes)) if kept[i]]  # parents precede children
    for i in nodes:
        tree.resolve(i, chooser)
    return frozenset(tree.path(i) for i in nodes)


def greedy_accepted(paths, greedy) -> int:
    """Drafted tokens a greedy target accepts from a tree with these ``paths``.

    Parameters
    ----------
    paths : frozenset of tuple of int
        The tree's token paths (:func:`drafted_paths`).
    greedy : sequence of int
        The greedy text after the step's prefix (:func:`greedy_text`).

    Returns
    -------
    int
        The length of the longest prefix of ``greedy`` that is a path of the tree.
    """
    k = 0
    while k < len(greedy) and tuple(greedy[:k + 1]) in paths:
        k += 1
    return k


def greedy_text(pair, depth: int) -> tuple:
    """The target's argmax chain of ``depth`` tokens from ``pair``'s root: the greedy text at T = 0,
    where the target law is one-hot.

    Parameters
    ----------
    pair : ToyPair or SyntheticPair
        The target and draft laws at the step's prefix (exact or float laws).
    depth : int
        The chain's length.

    Returns
    -------
    tuple of int
        ``depth`` token ids, each the arg-max of ``pair.p`` after the ones before (the first of
        tied tokens).
    """
    out: tuple = ()
    for _ in range(depth):
        out += (int(np.argmax(np.asarray(pair.p(out)))),)  # NOTE: object arrays of Fractions too
    return out


def _arms_value(text) -> str:
    """``arms``: comma-separated preset names, at least two, none of them online."""
    if isinstance(text, (list, tuple)):
        text = ",".join(map(str, text))
    if not isinstance(text, str):
        raise TreeError(f"arms must be comma-separated preset names, got {text!r}")
    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in PRESETS]
    if bad:
        raise TreeError(f"arms: unknown preset {bad[0]!r}; choose from {', '.join(PRESETS)}")
    inner = [n for n in names if PRESETS[n].family == "online"]
    if inner:
        raise TreeError(f"arms: {inner[0]!r} is itself online; an arm is a fixed method")
    if len(set(names)) < 2:
        raise TreeError(f"arms: give at least two different presets, got {text!r}")
    return ",".join(dict.fromkeys(names))


def _nonnegative(label: str):
    """A parser of a field holding a finite number >= 0 (kept as its shortest text)."""
    def parse(text) -> str:
        try:
            v = float(text)
        except (TypeError, ValueError):
            raise TreeError(f"{label} must be a finite number >= 0, got {text!r}") from None
        if not (v >= 0 and math.isfinite(v)):
            raise TreeError(f"{label} must be a finite number >= 0, got {text!r}")
        return format(v, "g")
    return parse


_explore_value, _t_value = _nonnegative("explore"), _nonnegative("T-hat")


@register
@dataclass(frozen=True)
class OnlineMethod(Method):
    """A bandit over fixed methods at one node budget; a step's arm depends on earlier steps only
    (docs/theory.md section 2.8).

    Its verifier is each arm's own (the field ``verifier`` is always ``"arms"``). A single step
    (certification, the optimum, the counterexample search) runs :meth:`first`; a run follows
    :meth:`policy`.

    Attributes
    ----------
    verifier : str, optional
        None or ``"arms"`` (the only value; the constructor writes ``"arms"``).
    top_k : int
        K: the arms' slots per expansion.
    depth : int
        D: the arms' tree depth; a step's reward is its accepted drafts over D.
    budget : int
        N: the arms' node budget.
    arms : str, default "eagle,rheo-tuned,static-wor,rheo-sampled"
        Comma-separated presets (at least two, none of them online), each resolved at this K, D, N
        and temperature (:data:`DEFAULT_ARMS`).
    rule : str, default "thompson"
        The bandit rule: ``thompson`` (Gaussian posteriors) or ``ucb1`` (:data:`RULES`).
    explore : str, default "1"
        Scale of the rule's exploration term, a number >= 0 (1: the rule as published; 0: greedy
        after one pull of each arm).
    explore_t0 : str, default ""
        The exploration scale at T = 0 (a greedy target), where every exploratory step shows in
        full; unset: ``"0"`` with ``feedback=greedy`` (every arm observed), else ``explore``'s (the
        constructor writes it out).
    feedback : str, default "own"
        What a step teaches the policy: ``own`` (the arm it ran) or ``greedy`` (at T = 0 every arm's,
        the others' trees drafted at the same prefix and scored against the greedy text).
    t_hat : str, default "1"
        The target temperature the arms are resolved at, a number >= 0; sweeps and decoding set it
        (:meth:`at_temperature`).

    Raises
    ------
    TreeError
        On construction: a verifier other than ``"arms"``, or a field :meth:`validate` refuses.
    """

    family: ClassVar[str] = "online"
    summary: ClassVar[str] = ("online: each step runs one of several fixed methods (arms) at the same node budget, "
                              "chosen by a bandit from the tokens earlier steps accepted")
    #: the verifier is each arm's own; ``arms`` names that (no per-node rule of its own)
    verifiers: ClassVar[tuple[str, ...]] = ("arms",)
    shrink_fields: ClassVar[tuple[str, ...]] = ("depth", "top_k", "budget")

    top_k: int = top_k_option()
    depth: int = depth_option()
    budget: int = budget_option()
    arms: str = option(DEFAULT_ARMS, help="comma-separated presets, each resolved at this K, D, N and temperature",
                       parse=_arms_value, metavar="P,P,...",
                       examples=(DEFAULT_ARMS, "eagle,static-wor", "rheo,chain"))
    rule: str = option("thompson", help="bandit rule: thompson (Gaussian posteriors) or ucb1", choices=RULES)
    explore: str = option("1", help="scale of the rule's exploration term (1: the rule as published; 0: greedy "
                          "after one pull of each arm)", parse=_explore_value, metavar="C",
                          examples=("1", "0.3", "0"))
    explore_t0: str = option("", help="exploration scale at T = 0 (a greedy target), where every exploratory step "
                             "shows in full; default: 0 with feedback=greedy (every arm observed), else explore's",
                             parse=lambda v: "" if v in ("", None) else _explore_value(v), label="explore-T0",
                             metavar="C", examples=("", "0.3", "0"))
    feedback: str = option("own", help="what a step teaches the policy: own (the arm it ran) or greedy (at T = 0 "
                           "every arm's, the others' trees drafted at the same prefix and scored against the greedy "
                           "text)", choices=FEEDBACK)
    t_hat: str = option("1", help="target temperature the arms are resolved at; sweeps and decoding set it "
                        "(at_temperature)", parse=_t_value, label="T-hat", metavar="T")

    def __post_init__(self):
        # NOTE: no per-node rule of its own: each step is verified by its arm's verifier.
        if self.verifier not in (None, "arms"):
            raise TreeError(f"online methods verify each step with its arm's verifier; got verifier={self.verifier!r}")
        object.__setattr__(self, "verifier", "arms")
        self.validate()

    def validate(self) -> None:
        """Parse and normalise the fields, write out ``explore_t0``, and resolve every arm at this size.

        Raises
        ------
        TreeError
            A size is not a positive integer, ``arms`` names an unknown or online preset or fewer than
            two, a number is negative or not finite, an unknown ``rule`` or ``feedback``, an arm
            invalid at this size, or arms that are one method at ``t_hat``.
        """
        self.require_positive("top_k", "depth", "budget")
        object.__setattr__(self, "arms", _arms_value(self.arms))
        object.__setattr__(self, "t_hat", _t_value(self.t_hat))
        object.__setattr__(self, "explore", _explore_value(self.explore))
        if self.rule not in RULES:
            raise TreeError(f"rule must be one of {', '.join(RULES)}, got {self.rule!r}")
        if self.feedback not in FEEDBACK:
            raise TreeError(f"feedback must be one of {', '.join(FEEDBACK)}, got {self.feedback!r}")
        # NOTE: unset, the scale at T = 0 is explore's own, or 0 where every arm is observed at every
        # step (feedback=greedy: follow the leader); written out, so the run key says it
        unset = "0" if self.feedback == "greedy" else self.explore
        object.__setattr__(self, "explore_t0", unset if self.explore_t0 in ("", None)
                           else _explore_value(self.explore_t0))
        self.arm_methods()  # every arm valid at this size

    def arm_methods(self) -> tuple[Method, ...]:
        """The distinct arms at this size and temperature, rheo-adaptive's choice first.

        Returns
        -------
        tuple of Method
            Each preset of ``arms`` resolved at (K, D, N) and run at ``t_hat``
            (:meth:`~rheotheory.methods.registry.Method.at_temperature`), arms with equal run keys
            once; the one rheo-adaptive runs there first when it is among them.

        Raises
        ------
        TreeError
            Fewer than two distinct arms remain.
        """
        size, t = (self.top_k, self.depth, self.budget), float(self.t_hat)
        arms, keys = [], []
        for name in self.arms.split(","):
            m = resolve(name, size=size).at_temperature(t)
            if m.run_key() not in keys:
                arms.append(m)
                keys.append(m.run_key())
        lead = resolve("rheo-adaptive", size=size).at_temperature(t).run_key()
        if lead in keys:
            arms.insert(0, arms.pop(keys.index(lead)))
        if len(arms) < 2:
            raise TreeError(f"arms {self.arms} are one method at T = {self.t_hat}; an online method needs two")
        return tuple(arms)

    def at_temperature(self, temperature: float) -> Method:
        """This method with its arms resolved at target temperature T.

        Parameters
        ----------
        temperature : float
            The target's sampling temperature T (0: greedy).

        Returns
        -------
        Method
            A copy with ``t_hat = T``.

        Raises
        ------
        TreeError
            T is negative or not finite, or the arms are one method at T.
        """
        return self.fit(t_hat=_t_value(temperature))

    def policy(self, seed: int = 0) -> "OnlinePolicy":
        """The bandit's policy before a run's first step.

        Parameters
        ----------
        seed : int, default 0
            The run's seed; the policy's own draws come from it and the step's index only.

        Returns
        -------
        OnlinePolicy
            No pulls yet, this method's rule, depth and exploration scale, and counterfactual
            feedback when ``feedback=greedy`` at T = 0.
        """
        arms = self.arm_methods()
        return OnlinePolicy(arms, self.rule, self.depth, int(seed), tuple((0, 0.0, 0.0) for _ in arms),
                            explore=self.exploration(),
                            counterfactual=self.feedback == "greedy" and float(self.t_hat) == 0)

    def exploration(self) -> float:
        """The exploration scale at this method's temperature.

        Returns
        -------
        float
            ``explore_t0`` at T = 0 (``t_hat`` 0), else ``explore``.
        """
        return float(self.explore_t0 if float(self.t_hat) == 0 else self.explore)

    def first(self) -> Method:
        """The arm of a first step (no history): what a single step of this method runs.

        Returns
        -------
        Method
            The lead arm (rheo-adaptive's choice, when it is an arm).
        """
        return self.policy().choose()

    # -- one step: the first step's arm (certify, optimum, counterexample; runs use the policy) ------
    @property
    def nodes(self) -> int:
        """Most draft nodes a tree holds: the largest of the arms'."""
        return max(m.nodes for m in self.arm_methods())

    def builder(self, pair, cache=None):
        """The first step's builder: :meth:`first`'s.

        Parameters
        ----------
        pair : ToyPair or SyntheticPair
            The target and draft laws (the pair protocol of :mod:`rheotheory.pairs`).
        cache : ExpansionCache, optional
            Not passed on (the arm builds its own).

        Returns
        -------
        callable
            ``build(chooser) -> Tree`` of the lead arm.
        """
        return self.first().builder(pair)

    @property
    def tree_verifier(self):
        """The first step's tree verifier: the lead arm's (docs/theory.md section 7)."""
        from ..verify.walk import method_tree_verifier

        return method_tree_verifier(self.first())

    @property
    def verify(self):
        """The first step's per-node rule: the lead arm's (a VerifierError for a tree-level verifier)."""
        return self.first().verify

    def known_lossy(self) -> str | None:
        """Why this method is known to be lossy, or None: the first arm found lossy makes it so.

        Returns
        -------
        str or None
            ``"its arm FAMILY is lossy: REASON"`` for the first lossy arm, else None.
        """
        for m in self.arm_methods():
            why = m.known_lossy()
            if why:
                return f"its arm {m.family} is lossy: {why}"
        return None


@dataclass(frozen=True)
class OnlinePolicy(StepPolicy):
    """The bandit's state after some steps: per arm (pulls, sum of rewards, sum of squares).

    A value (docs/theory.md section 2.8): :meth:`after`, :meth:`next` and :meth:`observe` return a
    new policy and leave this one as it was.

    Attributes
    ----------
    arms : tuple of Method
        The distinct arms (:meth:`OnlineMethod.arm_methods`), the lead arm first.
    rule : str
        The bandit rule, ``thompson`` or ``ucb1``.
    depth : int
        D: a step's reward is its accepted drafts over D.
    seed : int
        The run's seed (the policy's own draws come from it and the step's index).
    stats : tuple of tuple of (int, float, float)
        Per arm: (n, sum, sum of squares) of the rewards (|Z| - 1) / depth.
    step : int, default 0
        The steps run so far.
    pulls : tuple of int, default ()
        The arm index of every step so far (reports; not compared).
    explore : float, default 1.0
        Scale of the exploration term (:attr:`OnlineMethod.explore`).
    counterfactual : bool, default False
        ``feedback=greedy`` at T = 0: every arm is scored at every step.
    """

    arms: tuple
    rule: str
    depth: int
    seed: int
    stats: tuple  # per arm: (n, sum, sum of squares) of the rewards (|Z| - 1) / depth
    step: int = 0
    pulls: tuple = field(default=(), compare=False)  # arm index of every step so far (reports)
    explore: float = 1.0  # scale of the exploration term (OnlineMethod.explore)
    counterfactual: bool = False  # feedback=greedy at T = 0: every arm is scored at every step

    def scores(self) -> np.ndarray:
        """The rule's score per arm.

        Each arm's statistics start with one optimistic pseudo-pull of reward 1 (so an arm the lead
        does not beat gets tried, and a second step already depends on the first one's reward); the
        first step plays the lead arm (index 0). ``thompson`` draws from a generator seeded by
        (seed, step) only.

        Returns
        -------
        numpy.ndarray of shape (A,)
            float64, one score per arm (A arms); the largest is played.
        """
        if self.step == 0:
            return np.arange(len(self.stats), 0, -1, dtype=np.float64)
        n = np.array([s[0] for s in self.stats], dtype=np.float64)
        tot = np.array([s[1] for s in self.stats], dtype=np.float64)
        sq = np.array([s[2] for s in self.stats], dtype=np.float64)
        mean = (tot + 1.0) / (n + 1.0)  # the pseudo-pull included
        if self.rule == "ucb1":
            return mean + self.explore * np.sqrt(2.0 * math.log(self.step + len(n)) / (n + 1.0))
        seen = n > 0
        dof = float((n[seen] - 1).sum())
        var = PRIOR_VARIANCE
        if dof >= 1:  # the pooled variance of the real pulls
            real = np.where(seen, tot / np.maximum(n, 1), 0.0)
            var = max(float((sq - n * real * real).sum()) / dof, 1e-6)
        rng = np.random.default_rng([self.seed, self.step, _POLICY_TAG])
        return mean + self.explore * rng.standard_normal(len(n)) * np.sqrt(var / (n + 1.0))

    def index(self) -> int:
        """The arm this step plays.

        Returns
        -------
        int
            The index of the largest of :meth:`scores` (ties go to the earlier arm).
        """
        s = self.scores()
        return int(np.argmax(s))  # NOTE: ties go to the earlier arm

    def choose(self, root_q=None) -> Method:
        """The method of this step: the arm :meth:`index` names.

        Parameters
        ----------
        root_q : numpy.ndarray of shape (V,), optional
            The draft's root law, # [vocab]; not read.

        Returns
        -------
        Method
            ``arms[index()]``.
        """
        return self.arms[self.index()]

    def after(self, method: Method, z: tuple) -> "OnlinePolicy":
        """The policy of the next step: ``method``'s reward (|Z| - 1) / depth added, the step counted.

        Parameters
        ----------
        method : Method
            The arm the step ran (one of :attr:`arms`).
        z : tuple of int
            The step's output Z: the accepted draft tokens, then the emitted one.

        Returns
        -------
        OnlinePolicy
            The next step's policy.
        """
        i = self.arms.index(method)
        return replace(self._add(i, len(z) - 1), step=self.step + 1, pulls=self.pulls + (i,))

    def observe(self, arm: int, accepted: int) -> "OnlinePolicy":
        """The policy once an arm is known to have accepted ``accepted`` drafted tokens at an earlier
        step's prefix it did not run at (feedback=greedy); the step count is unchanged.

        Parameters
        ----------
        arm : int
            The arm's index in :attr:`arms`.
        accepted : int
            The drafted tokens it would have accepted (its reward is ``accepted / depth``).

        Returns
        -------
        OnlinePolicy
            The policy with that reward added to the arm's statistics.
        """
        return self._add(arm, accepted)

    def _add(self, i: int, accepted: int) -> "OnlinePolicy":
        r = accepted / self.depth
        stats = list(self.stats)
        n, tot, sq = stats[i]
        stats[i] = (n + 1, tot + r, sq + r * r)
        return replace(self, stats=tuple(stats))

    # -- feedback=greedy: the arms a step did not run, scored against the greedy text --------------
    def others(self, method: Method) -> tuple[int, ...]:
        """The arms to score after a step that ran ``method``.

        Parameters
        ----------
        method : Method
            The arm the step ran (one of :attr:`arms`).

        Returns
        -------
        tuple of int
            The indices of every other arm when the feedback is counterfactual (an arm without a
            tree scores 0), none otherwise.
        """
        if not self.counterfactual:
            return ()
        ran = self.arms.index(method)
        return tuple(j for j in range(len(self.arms)) if j != ran)

    def chooser(self, arm: int) -> RandomChooser:
        """The draws of an arm's tree at this policy's step, apart from every step's randomness.

        Parameters
        ----------
        arm : int
            The arm's index in :attr:`arms`.

        Returns
        -------
        RandomChooser
            Seeded by the policy's seed, the step's index and the arm.
        """
        return RandomChooser(np.random.default_rng([self.seed, self.step, arm, _COUNTERFACTUAL_TAG]))

    def counterfactuals(self, method: Method, pair) -> tuple:
        """What the other arms would have accepted at this step: what the decoder learns from the
        emitted greedy text, for drivers that hold the target's laws.

        Parameters
        ----------
        method : Method
            The arm the step ran (one of :attr:`arms`).
        pair : ToyPair or SyntheticPair
            The step's pair, at its prefix.

        Returns
        -------
        tuple of tuple of (int, int)
            ``(arm, accepted)`` for every arm :meth:`others` names, its tree drafted on ``pair``
            (:meth:`chooser`'s draws) and scored against the target's argmax chain there
            (:func:`greedy_text`, :func:`greedy_accepted`).
        """
        greedy = greedy_text(pair, self.depth) if self.others(method) else ()
        return tuple((j, greedy_accepted(drafted_paths(self.arms[j], pair, self.chooser(j)), greedy))
                     for j in self.others(method))

    def next(self, method: Method, z: tuple, pair) -> "OnlinePolicy":
        """:meth:`after`, then every :meth:`counterfactuals` reward :meth:`observe`-d.

        Parameters
        ----------
        method : Method
            The arm the step ran (one of :attr:`arms`).
        z : tuple of int
            The step's output Z.
        pair : ToyPair or SyntheticPair
            The step's pair, at its prefix.

        Returns
        -------
        OnlinePolicy
            The next step's policy.
        """
        nxt = self.after(method, z)
        for j, acc in self.counterfactuals(method, pair):
            nxt = nxt.observe(j, acc)
        return nxt
