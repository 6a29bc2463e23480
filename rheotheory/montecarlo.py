r"""Monte-Carlo evaluation of one speculative step: sample a branch where the enumerator sums.

The exact enumerator (:mod:`rheotheory.exact`) runs a method's tree builder over *every*
answer of its chooser and sums the method's tree verifier over every choice. Here the very
same builder runs with a :class:`~rheotheory.trees.RandomChooser` (one answer, drawn from a
seeded ``numpy.random.Generator``) and the same tree verifier is *sampled*, with a
:class:`~rheotheory.verify.walk.SampleBranch` on the same generator:

1. ``tree = method.builder(pair)(RandomChooser(rng))``;
2. for a per-node rule, the walk of :mod:`rheotheory.verify.walk`: at node ``v`` (path ``u``)
   with kept children ``C``, draw the children still undrawn (a lazily drawn sampled leaf, from
   the law the builder gave it), compute ``tr = rule(p(u), candidates)``, then continue into
   child ``i`` with probability ``tr.cont[i]`` or emit ``y`` with probability ``tr.emit[y]``
   and stop (one uniform picks among all of them);
3. a node without kept children emits ``y ~ p(u)`` (the bonus token).

The result is one draw of Z (accepted tokens, then one target token). Everything random comes
from the one generator passed in, so a seed reproduces every step.

Along the walk the sampler also records, at every visited node with candidates, the
acceptance ``sum(tr.cont)`` and the *per-node optimum* of :mod:`rheotheory.verify.optimum`
for the node's candidate set (:func:`node_optimum`).

>>> from rheotheory import make_method, random_pair
>>> res = run_steps(random_pair(3, 2, seed=1, exact=False), make_method("chain", depth=2), steps=200, seed=0)
>>> res.steps, 1 <= res.tau <= 3
(200, True)
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, replace

import numpy as np

from .errors import RheoError
from .methods import Method
from .methods.registry import next_policy, step_policy
from .trees import RandomChooser
from .verify.optimum import ot_value
from .verify.walk import SampleBranch, method_tree_verifier, sample_outcome

__all__ = [
    "StepRecord",
    "MCResult",
    "sample_step",
    "sample_outputs",
    "run_steps",
    "node_optimum",
    "mean_ci",
    "Z_95",
    "CONTEXT_LENGTH",
]

#: Two-sided 95% normal quantile for confidence intervals of means.
Z_95 = 1.959963984540054

#: Length of the random context a step starts from when contexts are drawn (synthetic pairs).
CONTEXT_LENGTH = 3

#: Seed-sequence tags separating the stream of contexts from the stream of step randomness, so
#: that every method evaluated with one seed sees the same contexts (common random numbers).
_STEP_TAG, _CONTEXT_TAG = 0, 1


@dataclass(frozen=True)
class StepRecord:
    """One sampled step.

    Attributes
    ----------
    z : tuple of int
        The step's output tokens (accepted drafts, then one target token).
    node_accept : tuple of float
        Acceptance sum(cont) at each visited node with candidates, root first.
    node_opt : tuple of float
        Per-node optimum (or upper bound, :func:`node_optimum`) at the same nodes; nan where
        unknown; empty unless the optimum was asked for.
    nodes : int
        Kept non-root nodes of the tree (the verification cost).
    arm : int, default 0
        Which arm of an online method's policy ran the step (0 for a fixed method).
    """

    z: tuple  # the step's output tokens (accepted drafts, then one target token)
    node_accept: tuple  # acceptance sum(cont) at each visited node with candidates, root first
    node_opt: tuple  # per-node optimum (or upper bound) at the same nodes; nan where unknown
    nodes: int  # kept non-root nodes of the tree (the verification cost)
    arm: int = 0  # which arm of an online method's policy ran the step (0 for a fixed method)


@dataclass(frozen=True)
class MCResult:
    """Summary of many sampled steps (plain data; :meth:`to_dict` serialises it).

    Attributes
    ----------
    steps : int
        Number of sampled steps.
    tau : float
        Mean tokens per step E|Z|, bonus token included.
    tau_low, tau_high : float
        95% confidence interval of tau (normal approximation, :func:`mean_ci`).
    node_accept : float
        Mean acceptance over visited nodes with candidates (nan when no node had any).
    node_opt : float
        Mean per-node optimum over the same nodes (nan where unknown); an upper bound on
        node_accept on average (not node by node: given the drawn sampled token the verifier may
        accept more often than the optimum, which averages over that token).
    nodes : float
        Mean kept tree nodes.
    seconds : float
        Wall-clock time of the sampling.
    steps_per_second : float
        steps / seconds (``inf`` when no time was measured).
    """

    steps: int  # number of sampled steps
    tau: float  # mean tokens per step E|Z|, bonus token included
    tau_low: float  # 95% confidence interval of tau (normal approximation)
    tau_high: float
    node_accept: float  # mean acceptance over visited nodes with candidates
    node_opt: float  # mean per-node optimum over the same nodes (nan where unknown); an upper
    # bound on node_accept on average (not node by node: given the drawn sampled token the
    # verifier may accept more often than the optimum, which averages over that token)
    nodes: float  # mean kept tree nodes
    seconds: float  # wall-clock time of the sampling
    steps_per_second: float

    def to_dict(self) -> dict:
        """The fields as a JSON-ready dict, NaN written as None.

        Returns
        -------
        dict[str, object]
            Field name -> value, in field order; a NaN float becomes ``None`` (JSON has no NaN).
        """
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in asdict(self).items()}


def mean_ci(values) -> tuple[float, float, float]:
    """Mean and its 95% normal-approximation confidence interval.

    The interval is ``mean +- Z_95 * s / sqrt(n)``, s the sample standard deviation (ddof 1).

    Parameters
    ----------
    values : array_like of shape (n,), float
        The observations, at least one.

    Returns
    -------
    mean, low, high : float
        The mean and the interval's bounds; ``(mean, -inf, inf)`` when n < 2.
    """
    x = np.asarray(values, dtype=np.float64)
    m = float(x.mean())
    if x.size < 2:
        return m, -math.inf, math.inf
    half = Z_95 * float(x.std(ddof=1)) / math.sqrt(x.size)
    return m, m - half, m + half


def _as_float_pair(pair):
    # NOTE: Monte Carlo runs in float64; an exact ToyPair is converted once.
    return pair.to_float() if getattr(pair, "exact", False) else pair


def node_optimum(p, cands) -> float:
    r"""The per-node optimum acceptance for the node's candidate set, or an upper bound.

    - deterministic children ``G`` and at most one sampled child drawn from ``L``: the
      optimal-transport value ``p(G) + sum_{x not in G} min(p(x), L(x))``
      (:func:`~rheotheory.verify.optimum.ot_value`); exact when the deterministic children do
      not depend on the sampled token (RheoSampling's fillers do; they are taken as given);
    - ``k`` i.i.d. children from one law ``L`` and no deterministic child: the upper bound
      :math:`\sum_x \min(p(x), 1 - (1 - L(x))^k)` (each token can be accepted at most as often
      as it is proposed); equal to the optimum for ``k = 1``;
    - otherwise (draws without replacement, k >= 2, or several sampled children beside
      deterministic ones): ``nan`` (the inclusion probabilities are not computed at this scale).

    Parameters
    ----------
    p : numpy.ndarray of shape (V,), float64
        The target law at the node, # [vocab].
    cands : sequence of Candidate
        The node's kept children as the verifier sees them (:class:`~rheotheory.trees.Candidate`:
        a token, and the law # [vocab] it was drawn from, or None for a deterministic child).

    Returns
    -------
    float
        The optimum or its upper bound, in [0, 1]; ``nan`` where unknown.
    """
    sampled = [c for c in cands if c.law is not None]
    det = sorted({c.token for c in cands if c.law is None})
    if len(sampled) <= 1:
        law = sampled[0].law if sampled else np.zeros(len(p))
        return float(ot_value(p, det, law))
    base = sampled[0].law
    if not det and all(c.law is base for c in sampled):
        incl = 1.0 - (1.0 - np.asarray(base, dtype=np.float64)) ** len(sampled)  # [vocab]
        return float(np.minimum(np.asarray(p, dtype=np.float64), incl).sum())
    return math.nan


def sample_step(pair, method: Method, rng: np.random.Generator, build=None, optimum: bool = False) -> StepRecord:
    """Sample one step of ``method`` on ``pair`` (float laws) with generator ``rng``.

    Parameters
    ----------
    pair : ToyPair or SyntheticPair
        The LM pair, with float64 laws.
    method : Method
        The method whose builder and tree verifier run.
    rng : numpy.random.Generator
        The one source of randomness: the builder's draws and the walk's uniforms.
    build : callable, optional
        ``method.builder(pair)``; pass it to reuse its per-pair cache (built here when None).
    optimum : bool, default False
        Also evaluate :func:`node_optimum` at the visited nodes.

    Returns
    -------
    StepRecord
        The output Z, the acceptance (and optimum) at each visited node, and the tree's size.
    """
    build = build or method.builder(pair)
    tree = build(RandomChooser(rng))
    accepts, opts = [], []

    def observe(node, p, cands, tr):
        accepts.append(float(sum(tr.cont)))
        if optimum:
            opts.append(node_optimum(p, cands))

    out = sample_outcome(method_tree_verifier(method), tree, lambda node, prefix: pair.p(prefix),
                         SampleBranch(rng.random), observe)
    return StepRecord(out.z, tuple(accepts), tuple(opts), tree.num_kept())


def _step_rng(seed: int) -> np.random.Generator:
    return np.random.default_rng([int(seed), _STEP_TAG])


def _context_rng(seed: int) -> np.random.Generator:
    return np.random.default_rng([int(seed), _CONTEXT_TAG])


def _check_run_args(steps, seed):
    if not isinstance(steps, (int, np.integer)) or isinstance(steps, bool) or steps < 1:
        raise RheoError(f"steps must be a positive integer, got {steps!r}")
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise RheoError(f"seed must be a non-negative integer, got {seed!r}")


def sample_outputs(pair, method: Method, samples: int, seed: int = 0, progress=None) -> list[tuple]:
    """``samples`` i.i.d. draws of Z from the pair's root prefix (reproducible from ``seed``).

    An exact pair is converted to float first. An online method runs the arm its policy picks at
    each draw (docs/theory.md section 2.8).

    Parameters
    ----------
    pair : ToyPair or SyntheticPair
        The LM pair.
    method : Method
        The method to sample.
    samples : int
        Number of draws, >= 1.
    seed : int, default 0
        Non-negative seed of the step stream.
    progress : callable, optional
        Called with 1 after each draw (e.g. a tqdm bar's ``update``).

    Returns
    -------
    list of tuple of int
        The outputs Z, in draw order.

    Raises
    ------
    RheoError
        If ``samples`` is not a positive integer or ``seed`` not a non-negative one.
    """
    _check_run_args(samples, seed)
    pair = _as_float_pair(pair)
    rng = _step_rng(seed)
    policy, builds = step_policy(method, seed), {}
    out = []
    for _ in range(samples):
        m = policy.choose(pair.q(()) if policy.reads_root else None)
        key = m.run_key()
        if key not in builds:
            builds[key] = m.builder(pair)
        z = sample_step(pair, m, rng, builds[key]).z
        policy = next_policy(policy, m, z, pair)
        out.append(z)
        if progress is not None:
            progress(1)
    return out


def run_steps(pair, method: Method, steps: int, seed: int = 0, contexts: bool = False,
              optimum: bool = False, records: list | None = None, draw_seed: int | None = None) -> MCResult:
    """Sample ``steps`` steps and summarise them (tau with its 95% interval, acceptances, speed).

    Each step runs what ``method.policy(seed)`` chooses (docs/theory.md section 2.8): the method
    itself at every step, or for an online method the arm its policy picks from the earlier steps.
    An exact pair is converted to float first.

    Parameters
    ----------
    pair : ToyPair or SyntheticPair
        The LM pair.
    method : Method
        The method to run.
    steps : int
        Number of steps, >= 1.
    seed : int, default 0
        Non-negative seed of the contexts and (unless ``draw_seed`` is given) of the steps' draws.
    contexts : bool, default False
        True starts every step from a fresh random context of :data:`CONTEXT_LENGTH` tokens
        (``pair.at(ctx)``, synthetic pairs); the contexts depend on ``seed`` only, so every method
        run with one seed sees the same contexts. False starts every step from the root prefix.
    optimum : bool, default False
        Also evaluate the per-node optimum (:func:`node_optimum`) at the visited nodes.
    records : list, optional
        When given, every sampled :class:`StepRecord` is appended to it.
    draw_seed : int, optional
        Seeds the steps' own randomness alone (default ``seed``): the same contexts with other
        draws, a second independent run of a method at the same contexts.

    Returns
    -------
    MCResult
        The summary of the steps.

    Raises
    ------
    RheoError
        If ``steps``, ``seed`` or ``draw_seed`` is out of range, or ``contexts=True`` with a pair
        that has no ``at(context)``.
    """
    _check_run_args(steps, seed)
    if draw_seed is not None and (not isinstance(draw_seed, (int, np.integer)) or isinstance(draw_seed, bool)
                                  or draw_seed < 0):
        raise RheoError(f"draw_seed must be a non-negative integer, got {draw_seed!r}")
    pair = _as_float_pair(pair)
    if contexts and not hasattr(pair, "at"):
        raise RheoError("contexts need a pair with .at(context) (a synthetic pair)")
    rng, crng = _step_rng(seed if draw_seed is None else draw_seed), _context_rng(seed)
    policy, builds = step_policy(method, seed), {}
    lengths, accepts, opts, nodes = [], [], [], []
    t0 = time.perf_counter()
    for _ in range(steps):
        if contexts:
            ctx = tuple(int(x) for x in crng.integers(0, pair.vocab_size, size=CONTEXT_LENGTH))
            step_pair = pair.at(ctx)
        else:
            step_pair = pair
        m = policy.choose(step_pair.q(()) if policy.reads_root else None)
        if contexts:
            build = m.builder(step_pair)
        else:
            build = builds.get(m.run_key())
            if build is None:
                build = builds[m.run_key()] = m.builder(pair)
        rec = sample_step(step_pair, m, rng, build, optimum)
        arm = getattr(policy, "arms", (m,)).index(m)
        policy = next_policy(policy, m, rec.z, step_pair)
        if arm:
            rec = replace(rec, arm=arm)
        lengths.append(len(rec.z))
        accepts.extend(rec.node_accept)
        nodes.append(rec.nodes)
        if optimum:
            opts.extend(rec.node_opt)
        if records is not None:
            records.append(rec)
    secs = time.perf_counter() - t0
    tau, lo, hi = mean_ci(lengths)
    nan = math.nan
    return MCResult(
        steps=int(steps), tau=tau, tau_low=lo, tau_high=hi,
        node_accept=float(np.mean(accepts)) if accepts else nan,
        node_opt=float(np.mean(opts)) if opts else nan,
        nodes=float(np.mean(nodes)), seconds=secs, steps_per_second=steps / secs if secs > 0 else math.inf,
    )
