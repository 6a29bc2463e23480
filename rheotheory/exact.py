r"""Exhaustive enumeration: the exact law of one step's output and the lossless criterion.

The enumerator runs a method's tree builder with a :class:`~rheotheory.trees.ReplayChooser`
and branches over every answer to every draw the builder *needs* (depth-first over scripts of
answers, weights multiplied along the way). Draws are lazy, so a sampled leaf whose identity
influenced nothing is never branched on. Each finished tree is reduced to its canonical key
(what the verifier sees: tokens, kinds, group positions, kept children in order; unresolved
sampled leaves appear as "some token from their law"). Outcomes with the same key form one
**equivalence class**, verified once with the summed weight: the method's tree verifier
(:mod:`rheotheory.verify.walk`) is evaluated with an
:class:`~rheotheory.verify.walk.EnumerateBranch`, which sums over every choice of the walk with
its weight. Unresolved sampled leaves are integrated analytically there: their identity is one
more choice of the walk, summed over with its law.

The step output Z (accepted tokens, then one token from the target) has the exact law
:math:`P(Z = z)`. The method is lossless iff for every length :math:`l \le D+1` and every
:math:`z \in V^l` (docs/theory.md section 4)

.. math::

    \sum_{k<l} P(Z = z_{:k})\, p(z_{k:} \mid z_{:k}) + P(|Z| \ge l,\ Z_{:l} = z) = p(z_{:l}).

:func:`certify` returns the largest absolute deviation (exactly 0 for a lossless method in exact
arithmetic), the worst sequence, the exact tokens per step E|Z|, and the class statistics.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from . import laws
from .errors import RheoError, TreeError
from .methods import Method
from .methods.registry import next_policy, step_policy
from .strict import ContractError, GlobalStates, StrictRun, first_difference
from .trees import NeedChoice, ReplayChooser, Tree
from .trees.tree import law_key
from .verify.walk import EnumerateBranch, method_tree_verifier

__all__ = ["TreeClass", "Enumeration", "Certificate", "ContractError", "ungrouped_step_law", "check_ungrouped", "CostEstimate", "enumerate_classes", "estimate_branches",
           "estimate_cost", "step_law",
           "lossless_check", "prepare_pair", "certify", "certify_steps", "PrefixView", "FLOAT_LOSSLESS_TOL"]

#: In float mode a method is reported lossless when its largest deviation is at most this.
FLOAT_LOSSLESS_TOL = 1e-12


@dataclass
class TreeClass:
    """One equivalence class of construction outcomes.

    Attributes
    ----------
    tree : Tree
        A representative tree (its unresolved leaves are integrated over).
    weight : Fraction or float
        Total probability of the class.
    outcomes : int
        Raw construction outcomes in the class.
    branches : int
        Enumerator leaves (lazy construction branches) merged into it.
    """

    tree: Tree  # a representative tree (its unresolved leaves are integrated over)
    weight: object  # total probability of the class
    outcomes: int  # raw construction outcomes in the class
    branches: int  # enumerator leaves (lazy construction branches) merged into it


@dataclass
class Enumeration:
    """Every construction outcome of a method on a pair, grouped into equivalence classes
    (:func:`enumerate_classes`; docs/theory.md section 5.3).

    Attributes
    ----------
    classes : dict[tuple, TreeClass]
        Canonical key (:meth:`~rheotheory.trees.Tree.canonical_key`) -> its class.
    outcomes : int
        Raw construction outcomes (product of supports of every draw made).
    branches : int
        Lazily enumerated construction branches (builder runs that finished).
    total_weight : Fraction or float
        Sum of class weights (exactly 1).
    members : list of tuple[Tree, Fraction or float] or None, default None
        Strict mode only: every finished construction branch as (tree, weight), unmerged.
    """

    classes: dict  # canonical key -> TreeClass
    outcomes: int  # raw construction outcomes (product of supports of every draw made)
    branches: int  # lazily enumerated construction branches (builder runs that finished)
    total_weight: object  # sum of class weights (exactly 1)
    #: strict mode only: every finished construction branch as (tree, weight), unmerged
    members: list | None = None


def enumerate_classes(pair, method: Method, progress=None, eager: bool = False,
                      max_branches: int | None = None, reduce: bool = True, strict: bool = False) -> Enumeration:
    """Enumerate every construction outcome of ``method`` on ``pair`` and group them.

    ``eager=True`` also branches over every draw left unresolved at the end (no analytic
    integration) and makes every expansion: slower, and used by the tests to check the lazy
    path. ``reduce=False`` keeps the analytic integration but makes every expansion: the builder
    gets a chooser without ``skip_doomed``, so doomed expansions (docs/theory.md section 5.6) are
    branched over as they are made; the classes, their weights and the outcome count are the
    same, the branches more. ``max_branches`` stops with a
    :class:`~rheotheory.errors.RheoError` once that many builder runs were made.

    ``strict=True`` checks the builder's contract instead of trusting it (docs/theory.md
    section 5.3, :mod:`rheotheory.strict`): every build runs under a global random state the
    certifier sets and records its draws; a replayed draw must come from the law its answer was
    weighted with, every sampled token from a recorded draw under the law it declares, and every
    branch, rebuilt in another order under other global states and after unrelated builds, must
    make the same draws and the same tree; every tree merged into a class must show the verifier
    exactly what the class's representative shows (:meth:`~rheotheory.trees.Tree.verifier_view`).
    A break is a :class:`ContractError` naming the fault. The unmerged trees are kept in
    :attr:`Enumeration.members` so that :func:`certify` can compare the grouped law with the
    ungrouped one. The caller's global random states are restored afterwards.

    Parameters
    ----------
    pair : ToyPair or GeneratedPair
        The LM pair, exact or float (any object with the pair protocol of :mod:`rheotheory.pairs`,
        a :class:`PrefixView` too).
    method : Method
        The method whose tree builder is enumerated.
    progress : object with an ``update(n)`` method, or None, optional
        Told ``update(1)`` at every builder run (a tqdm bar, say); ``None`` (default): silent.
    eager : bool, default False
        Branch over every draw left unresolved and make every expansion (no analytic
        integration, no skipped doomed expansions).
    max_branches : int or None, optional
        Stop with a :class:`~rheotheory.errors.RheoError` once that many builder runs were made;
        ``None`` (default): no limit.
    reduce : bool, default True
        ``False``: make every expansion (the builder's chooser has no ``skip_doomed``).
    strict : bool, default False
        Check the builder's contract instead of trusting it.

    Returns
    -------
    Enumeration
        The classes with their weights, the outcome and branch counts (and in strict mode the
        unmerged members).

    Raises
    ------
    RheoError
        If the enumeration needs more than ``max_branches`` builder runs.
    ContractError
        In strict mode, if the builder breaks the contract (the fault is named).
    """
    build = method.builder(pair)
    if eager:
        lazy_build = build

        def build(chooser):
            tree = lazy_build(chooser)
            for i, node in enumerate(tree.nodes):
                if node.token is None:
                    tree.resolve(i, chooser)
            return tree
    if strict:
        with GlobalStates() as states:
            run = StrictRun(build, reduce and not eager, states)
            enum = _enumerate(pair, build, progress, eager, max_branches, reduce, run)
            run.rebuild_all()
        return enum
    return _enumerate(pair, build, progress, eager, max_branches, reduce, None)


def _enumerate(pair, build, progress, eager: bool, max_branches, reduce: bool, run: StrictRun | None) -> Enumeration:
    """The depth-first search of :func:`enumerate_classes`; ``run`` makes it strict."""
    skip = reduce and not eager
    one = laws.parse_number(1, pair.exact)
    classes: dict = {}
    members: list | None = [] if run is not None else None
    outcomes = branches = 0
    total = one * 0
    stack = [((), (), one)]  # (answers, the values of the law each was weighted with, weight)
    runs = 0
    while stack:
        script, expected, w = stack.pop()
        runs += 1
        if progress is not None:
            progress.update(1)
        if max_branches is not None and runs > max_branches:
            raise RheoError(f"enumeration exceeded {max_branches} construction branches; use a smaller "
                            "instance (V, K, D, N) or raise the limit")
        try:
            tree = build(ReplayChooser(script, skip_doomed=skip)) if run is None else run.build(script, expected)
        except NeedChoice as nc:
            lk = law_key(nc.law) if run is not None else None
            for x in range(len(nc.law) - 1, -1, -1):
                wx = nc.law[x]
                if wx > 0:
                    stack.append((script + (x,), expected + (lk,), w * wx))
            continue
        branches += 1
        n = tree.unresolved_count()
        outcomes += n
        total = total + w
        key = tree.canonical_key()
        c = classes.get(key)
        if run is not None:
            _check_merge(script, tree, c)
            members.append((tree, w))
        if c is None:
            classes[key] = TreeClass(tree, w, n, 1)
        else:
            c.weight = c.weight + w
            c.outcomes += n
            c.branches += 1
    return Enumeration(classes, outcomes, branches, total, members)


def _check_merge(script, tree, cls) -> None:
    """Rule 4 of the strict mode: a tree merged into an existing class shows the verifier what
    the class's representative shows."""
    if cls is not None:
        mine, theirs = tree.verifier_view(), cls.tree.verifier_view()
        if mine != theirs:
            raise ContractError(f"two construction outcomes merged into one class show the verifier different trees "
                                f"(answers {list(script)}: {first_difference(mine, theirs)}); the certifier's "
                                "equivalence key misses something the verifier reads (docs/theory.md section 5.3, "
                                "rule 4)")


#: Seconds of one enumeration builder run over one probe builder run of :func:`estimate_cost`:
#: the enumerator also multiplies exact weights along the branch, keys the finished tree and
#: merges its class. Measured: 1.4-4.5 (median 2.3) over rheo (next, tail, true proxies),
#: rheo-adaptive, rheo-tuned, static-wor and chain at V = 4..6, K, D <= 4, enumerations of
#: 100-3300 runs, on a 2-core machine shared with other jobs.
ENUMERATION_RUN_FACTOR = 2.3

#: Finished probe trees whose verification is timed by :func:`estimate_cost` (the rest of the
#: probes only count builder runs).
VERIFY_PROBES = 16


@dataclass(frozen=True)
class CostEstimate:
    """The cost of :func:`certify` on one pair, estimated before it runs (:func:`estimate_cost`).

    ``runs`` is what ``max_branches`` caps; the seconds come from timings made on this machine
    by the probes themselves, so a slower (or busier) machine gives a longer estimate.

    Attributes
    ----------
    runs : float
        Builder runs of the enumeration (Knuth's estimate).
    trees : float
        Finished trees (the enumeration's leaves, Knuth's estimate).
    classes : float
        Equivalence classes verified: Chao1 over the probes' tree keys, at most ``trees``
        (and at least 1).
    run_seconds : float
        Measured: seconds of one probe builder run.
    verify_seconds : float
        Measured: seconds of verifying one finished probe tree (one class).
    """

    runs: float  # builder runs of the enumeration (Knuth's estimate)
    trees: float  # finished trees (the enumeration's leaves, Knuth's estimate)
    classes: float  # equivalence classes verified: Chao1 over the probes' tree keys, at most ``trees``
    run_seconds: float  # measured: seconds of one probe builder run
    verify_seconds: float  # measured: seconds of verifying one finished probe tree (one class)

    def seconds(self, run_seconds: float | None = None) -> float:
        """Estimated seconds of the enumeration and the verification of its classes: every run
        at ``run_seconds`` (default: a probe run times :data:`ENUMERATION_RUN_FACTOR`; a caller
        that timed real enumeration runs passes that), every class at ``verify_seconds``.

        Parameters
        ----------
        run_seconds : float or None, optional
            Seconds of one enumeration builder run; ``None`` (default):
            ``ENUMERATION_RUN_FACTOR * self.run_seconds``.

        Returns
        -------
        float
            ``runs * run_seconds + classes * verify_seconds``.
        """
        per_run = ENUMERATION_RUN_FACTOR * self.run_seconds if run_seconds is None else run_seconds
        return self.runs * per_run + self.classes * self.verify_seconds


def estimate_cost(pair, method: Method, probes: int = 64, seed: int = 0, reduce: bool = True) -> CostEstimate:
    """Knuth's estimate of the builder runs and finished trees :func:`enumerate_classes` makes,
    from ``probes`` random root-to-leaf walks of the construction tree, with the seconds a run
    and a class verification take on this machine (timed on the walks).

    Each walk follows uniformly drawn outcomes of every draw; the runs of one level are estimated
    by the product of the supports met above it, and a walk's estimate is their sum (unbiased:
    D. E. Knuth, "Estimating the efficiency of backtrack programs", 1975); the product at the
    walk's end estimates the leaves. The classes are estimated from the canonical keys of the
    trees the walks end on (Chao's estimator of a population from its sampled frequencies:
    ``distinct + f1 (f1 - 1) / (2 (f2 + 1))``, f1 and f2 the keys met once and twice; A. Chao,
    "Nonparametric estimation of the number of classes in a population", 1984), at most the leaves.
    A walk costs one builder run per draw, and the tree it ends on is verified (the first
    :data:`VERIFY_PROBES` of them) as :func:`step_law` verifies a class, so the estimate is cheap
    beside an enumeration it warns of.

    Parameters
    ----------
    pair : ToyPair or GeneratedPair
        The LM pair, exact or float (any object with the pair protocol of :mod:`rheotheory.pairs`,
        a :class:`PrefixView` too).
    method : Method
        The method whose certification is estimated.
    probes : int, default 64
        Random root-to-leaf walks of the construction tree.
    seed : int, default 0
        Seed of the ``numpy.random.Generator`` that picks each walk's outcomes.
    reduce : bool, default True
        Build as :func:`enumerate_classes` with the same ``reduce`` does (``False``: doomed
        expansions are made).

    Returns
    -------
    CostEstimate
        The estimated runs, trees and classes, and the measured seconds per run and per class.

    Raises
    ------
    RheoError
        If ``probes`` is not a positive integer.
    TreeError
        If ``method``'s depth exceeds the pair's horizon (:func:`prepare_pair`).
    """
    if not isinstance(probes, int) or probes < 1:
        raise RheoError(f"probes must be a positive integer, got {probes!r}")
    pair = prepare_pair(pair, method, None)
    build = method.builder(pair)
    verifier = method_tree_verifier(method)
    branch = EnumerateBranch()
    one = laws.parse_number(1, pair.exact)
    rng = np.random.default_rng(seed)

    def target(node, prefix):
        return pair.p(prefix)

    total = leaves = 0.0
    calls, build_secs, verified, verify_secs = 0, 0.0, 0, 0.0
    keys: dict = {}  # canonical key of a probe's tree -> probes that ended on it
    for k in range(probes):
        script, width, runs = (), 1.0, 1.0
        while True:
            calls += 1
            t0 = time.perf_counter()
            try:
                tree = build(ReplayChooser(script, skip_doomed=reduce))
                build_secs += time.perf_counter() - t0
                break
            except NeedChoice as nc:
                build_secs += time.perf_counter() - t0
                support = [x for x in range(len(nc.law)) if nc.law[x] > 0]
                width *= len(support)
                runs += width
                script += (support[int(rng.integers(len(support)))],)
        total += runs
        leaves += width
        key = tree.canonical_key()
        keys[key] = keys.get(key, 0) + 1
        if k < VERIFY_PROBES:
            t0 = time.perf_counter()
            for _ in verifier.outcomes(tree, target, branch, weight=one):
                pass
            verify_secs += time.perf_counter() - t0
            verified += 1
    f1 = sum(1 for n in keys.values() if n == 1)
    f2 = sum(1 for n in keys.values() if n == 2)
    classes = min(leaves / probes, len(keys) + f1 * (f1 - 1) / (2 * (f2 + 1)))
    return CostEstimate(total / probes, leaves / probes, max(1.0, classes), build_secs / calls,
                        verify_secs / max(1, verified))


def estimate_branches(pair, method: Method, probes: int = 64, seed: int = 0, reduce: bool = True) -> float:
    """Knuth's estimate of the builder runs :func:`enumerate_classes` makes (the quantity its
    ``max_branches`` caps): the ``runs`` of :func:`estimate_cost`.

    Parameters
    ----------
    pair : ToyPair or GeneratedPair
        The LM pair, exact or float (any object with the pair protocol of :mod:`rheotheory.pairs`,
        a :class:`PrefixView` too).
    method : Method
        The method whose enumeration is estimated.
    probes : int, default 64
        Random root-to-leaf walks of the construction tree.
    seed : int, default 0
        Seed of the ``numpy.random.Generator`` that picks each walk's outcomes.
    reduce : bool, default True
        Build as :func:`enumerate_classes` with the same ``reduce`` does (``False``: doomed
        expansions are made).

    Returns
    -------
    float
        The estimated number of builder runs.

    Raises
    ------
    TreeError
        If ``method``'s depth exceeds the pair's horizon (:func:`prepare_pair`).
    """
    return estimate_cost(pair, method, probes=probes, seed=seed, reduce=reduce).runs


def step_law(pair, method: Method, enum: Enumeration, progress=None) -> dict:
    r"""Exact law of Z: a dict token-tuple -> probability.

    .. math::

        P(Z = z) = \sum_{\text{classes } c} P(c)\, P_{\text{verifier}}(Z = z \mid \text{tree of } c),

    the second factor summed over every choice of the method's tree verifier
    (:class:`~rheotheory.verify.walk.EnumerateBranch`; its node views are cached across classes).

    Parameters
    ----------
    pair : ToyPair or GeneratedPair
        The LM pair, exact or float (any object with the pair protocol of :mod:`rheotheory.pairs`,
        a :class:`PrefixView` too).
    method : Method
        The method whose tree verifier is evaluated on every class.
    enum : Enumeration
        The enumeration of ``method`` on ``pair`` (:func:`enumerate_classes`).
    progress : object with an ``update(n)`` method, or None, optional
        Told ``update(1)`` after each class is verified; ``None`` (default): silent.

    Returns
    -------
    dict[tuple of int, Fraction or float]
        Output sequence z -> :math:`P(Z = z)`, exact or float as the pair.
    """
    verifier = method_tree_verifier(method)
    branch = EnumerateBranch()

    def target(node, prefix):
        return pair.p(prefix)

    out: dict = {}
    for cls in enum.classes.values():
        for o in verifier.outcomes(cls.tree, target, branch, weight=cls.weight):
            out[o.z] = out.get(o.z, 0) + o.weight
        if progress is not None:
            progress.update(1)
    return out


def ungrouped_step_law(pair, method: Method, enum: Enumeration) -> dict:
    """The law of Z verified branch by branch, nothing merged (needs a strict enumeration's members).

    Parameters
    ----------
    pair : ToyPair or GeneratedPair
        The LM pair, exact or float (any object with the pair protocol of :mod:`rheotheory.pairs`,
        a :class:`PrefixView` too).
    method : Method
        The method whose tree verifier is evaluated on every branch.
    enum : Enumeration
        A strict enumeration (``enumerate_classes(..., strict=True)``), whose ``members`` hold
        every construction branch.

    Returns
    -------
    dict[tuple of int, Fraction or float]
        Output sequence z -> :math:`P(Z = z)`, summed branch by branch without any cache.

    Raises
    ------
    RheoError
        If ``enum`` was not made with ``strict=True`` (it has no members).
    """
    if enum.members is None:
        raise RheoError("ungrouped_step_law needs an enumeration made with strict=True")
    verifier = method_tree_verifier(method)
    branch = EnumerateBranch()
    branch.memo = None  # NOTE: no cache either: every tree is verified from scratch

    def target(node, prefix):
        return pair.p(prefix)

    out: dict = {}
    for tree, w in enum.members:
        for o in verifier.outcomes(tree, target, branch, weight=w):
            out[o.z] = out.get(o.z, 0) + o.weight
    return out


def check_ungrouped(pair, method: Method, enum: Enumeration, z_law: dict) -> None:
    """A :class:`ContractError` unless the grouped law of Z equals the ungrouped one exactly.

    In float mode "equal" means within :data:`FLOAT_LOSSLESS_TOL`.

    Parameters
    ----------
    pair : ToyPair or GeneratedPair
        The LM pair, exact or float (any object with the pair protocol of :mod:`rheotheory.pairs`,
        a :class:`PrefixView` too).
    method : Method
        The method enumerated.
    enum : Enumeration
        A strict enumeration of ``method`` on ``pair``.
    z_law : dict[tuple of int, Fraction or float]
        The grouped law of Z (:func:`step_law` of ``enum``).

    Raises
    ------
    ContractError
        If some :math:`P(Z = z)` differs between the classes and the branches (the equivalence key
        merges trees the verifier tells apart).
    RheoError
        If ``enum`` was not made with ``strict=True`` (from :func:`ungrouped_step_law`).
    """
    flat = ungrouped_step_law(pair, method, enum)
    zero = laws.parse_number(0, pair.exact)
    for z in sorted(set(flat) | set(z_law)):
        a, b = z_law.get(z, zero), flat.get(z, zero)
        if (a != b) if pair.exact else abs(a - b) > FLOAT_LOSSLESS_TOL:
            raise ContractError(f"grouping changed the law of Z: P(Z={list(z)}) is {laws.format_number(a)} over the "
                                f"classes but {laws.format_number(b)} branch by branch; the equivalence key merges "
                                "trees the verifier tells apart (docs/theory.md section 5.3)")


@dataclass
class LosslessCheck:
    max_deviation: object  # max |lhs - rhs| over l <= D+1, z in V^l
    worst_sequence: tuple | None  # a z attaining it (None when it is 0)
    per_length: list  # max deviation for each l = 1..D+1
    sequences_checked: int  # sequences whose deviation was evaluated one by one (the rest in closed form)


def _first_max(a):
    """``(max(a), the first index attaining it)`` of a 1-D array (exact or float)."""
    i = int(np.argmax(a))  # NOTE: argmax returns the first maximum, for object arrays too
    return a[i], i


def lossless_check(pair, z_law: dict, max_len: int) -> LosslessCheck:
    r"""Evaluate the lossless criterion of docs/theory.md section 4 for l = 1..max_len.

    With :math:`S(u) = \sum_{k<|u|} P(Z = u_{:k})\, p(u_{k:} \mid u_{:k})` (so
    :math:`S(\varnothing) = 0`, :math:`S(uy) = (S(u) + P(Z=u))\, p(y \mid u)`) and
    :math:`G(u) = P(Z \text{ has prefix } u)`, the deviation at :math:`z = uy` is

    .. math::

        \mathrm{dev}(uy) = S(uy) + G(uy) - p(uy).

    Only sequences reachable from the support of the law of Z are visited one by one
    (docs/theory.md section 5.6). The search stands at :math:`u = \varnothing` and at every
    :math:`u` with :math:`G(u) \ne 0`, :math:`|u| < l_{\max}`, and splits the next token:

    - :math:`y \in Y_u = \{y : G(uy) \ne 0\}` (a prefix of some output): ``dev(uy)`` is
      evaluated, and the search continues below :math:`uy`;
    - :math:`y \notin Y_u`: then :math:`G(uy) = 0`, so with
      :math:`E(u) = S(u) + P(Z = u) - p(u)`,

      .. math::

          \mathrm{dev}(uy) = \big(S(u) + P(Z=u)\big) p(y \mid u) - p(u)\, p(y \mid u)
                           = E(u)\, p(y \mid u),

      and below it :math:`\mathrm{dev}(uyw) = \mathrm{dev}(uy)\, p(w \mid uy)`
      (:math:`G(uyw) = 0 = P(Z = uyw)`), never larger in absolute value. Their largest value
      is :math:`|E(u)| \max_{y \notin Y_u} p(y \mid u)`, taken at the smallest such ``y``; when
      :math:`E(u) = 0` all of them are 0 and :math:`p(\cdot \mid u)` is not even read.

    So the largest deviation, the first sequence attaining it (in the order of the full search
    over :math:`V^l`) and the maxima per length are exactly those of evaluating every
    :math:`z \in V^l`, while the target laws are read only at the root and at prefixes of
    outputs where :math:`Y_u` is non-empty or :math:`E(u) \ne 0` (for a lossless method
    :math:`E(u) = P(Z = u) - G(u)`, which vanishes at every output that no longer output
    extends). Float laws give the same floats as the full search: the off-support terms are
    computed by the same expression, vectorised.

    Parameters
    ----------
    pair : ToyPair or GeneratedPair
        The LM pair whose target :math:`p` the law is checked against.
    z_law : dict[tuple of int, Fraction or float]
        The law of the output: sequence -> probability (exact or float as the pair).
    max_len : int
        The largest length :math:`l` checked (``D + 1`` for one step of depth D).

    Returns
    -------
    LosslessCheck
        ``max_deviation`` (the largest :math:`|\mathrm{dev}(z)|`), ``worst_sequence`` (the first
        z attaining it, ``None`` when it is 0), ``per_length`` (the largest deviation for each
        l = 1..max_len) and ``sequences_checked`` (the deviations evaluated one by one).
    """
    zero = laws.parse_number(0, pair.exact)
    G: dict = {}  # u -> P(Z has prefix u)
    for z, pz in z_law.items():
        for l in range(1, len(z) + 1):
            G[z[:l]] = G.get(z[:l], zero) + pz
    kids: dict = {}  # u -> the tokens y with G(uy) != 0
    for uy, g in G.items():
        if g != 0:
            kids.setdefault(uy[:-1], []).append(uy[-1])
    per = [zero] * max_len
    worst = [zero, None]
    checked = 0
    stack = [((), zero, laws.parse_number(1, pair.exact))]  # (u, S(u), p(u))
    while stack:
        u, S, pu = stack.pop()
        base = S + z_law.get(u, zero)
        ys = sorted(kids.get(u, ()))
        off = base != pu  # E(u) != 0: the off-support deviations are not all 0
        if not ys and not off:
            continue
        pl = pair.p(u)  # [vocab]
        best, best_y = zero, None  # the largest dev(uy) over all y, and the first y attaining it
        push = []
        for y in ys:
            uy = u + (y,)
            S2 = base * pl[y]
            g = G[uy]
            pu2 = pu * pl[y]
            dev = S2 + g - pu2
            dev = dev if dev >= 0 else -dev
            checked += 1
            if dev > best:
                best, best_y = dev, y
            if len(uy) < max_len:
                push.append((uy, S2, pu2))
        if off:
            rest = pl.copy()  # [vocab], p(. | u) off Y_u
            rest[ys] = 0
            if pair.exact:
                m, y = _first_max(rest)
                m = m * (base - pu if base >= pu else pu - base)
            else:
                m, y = _first_max(np.abs(base * rest - pu * rest))  # NOTE: dev's own float expression
            if m > best or (m == best and best_y is not None and m != 0 and y < best_y):
                best, best_y = m, y
        if best > per[len(u)]:
            per[len(u)] = best
        if best > worst[0]:
            worst[0], worst[1] = best, u + (best_y,)
        stack.extend(push)
    return LosslessCheck(worst[0], worst[1], per, checked)


@dataclass
class Certificate:
    """Everything `rheo certify` reports (:func:`certify`, :func:`certify_steps`).

    Attributes
    ----------
    lossless : bool
        The verdict: the largest deviation is 0 (exact), or at most :data:`FLOAT_LOSSLESS_TOL`
        (float).
    max_deviation : Fraction or float
        Exact rational (exact mode) or float: the largest deviation of the lossless criterion.
    worst_sequence : tuple of int or None
        A sequence z attaining it (``None`` when it is 0).
    per_length : list of (Fraction or float)
        The largest deviation for each length l = 1..D+1 (``steps * (D + 1)`` for
        :func:`certify_steps`).
    tokens_per_step : Fraction or float
        E|Z|, bonus token included (:func:`certify_steps`: E|W| / steps).
    outcomes : int
        Raw construction outcomes.
    classes : int
        Equivalence classes (distinct verifier views).
    branches : int
        Lazily enumerated construction branches.
    exact : bool
        Whether the arithmetic was exact rationals (else float64).
    method : Method
        The method certified.
    z_law : dict[tuple of int, Fraction or float], default {}
        The law of Z (:func:`certify_steps`: of W); left out of ``repr`` and :meth:`to_dict`.
    seconds : float, default 0.0
        Wall-clock seconds the certification took.
    """

    lossless: bool
    max_deviation: object  # exact rational (exact mode) or float
    worst_sequence: tuple | None
    per_length: list
    tokens_per_step: object  # E|Z|, bonus token included
    outcomes: int  # raw construction outcomes
    classes: int  # equivalence classes (distinct verifier views)
    branches: int  # lazily enumerated construction branches
    exact: bool
    method: Method
    z_law: dict = field(repr=False, default_factory=dict)
    seconds: float = 0.0

    def to_dict(self) -> dict:
        """Plain JSON types only. NOTE: in float mode the verdict is a numpy bool and the worst
        sequence may hold numpy ints, which json cannot write, so every field is converted.

        Returns
        -------
        dict[str, object]
            The fields but ``z_law``, numbers formatted by :func:`rheotheory.laws.format_number`
            (``"a/b"`` exact), ``per_length`` as ``max_deviation_by_length``, ``tokens_per_step``
            also as ``tokens_per_step_float``, the method as :meth:`Method.to_dict`.
        """
        fmt = laws.format_number
        return {
            "lossless": bool(self.lossless),
            "max_deviation": fmt(self.max_deviation),
            "worst_sequence": [int(t) for t in self.worst_sequence] if self.worst_sequence is not None else None,
            "max_deviation_by_length": [fmt(x) for x in self.per_length],
            "tokens_per_step": fmt(self.tokens_per_step),
            "tokens_per_step_float": float(self.tokens_per_step),
            "outcomes": int(self.outcomes),
            "classes": int(self.classes),
            "branches": int(self.branches),
            "exact": bool(self.exact),
            "method": self.method.to_dict(),
            "seconds": round(float(self.seconds), 4),
        }


def prepare_pair(pair, method: Method, exact: bool | None = None):
    """``pair`` in the requested arithmetic (True: exact rationals, False: float64, None: as is),
    checked to hold the prefixes a tree of ``method`` reads (its depth within the horizon).

    Parameters
    ----------
    pair : ToyPair or GeneratedPair
        The LM pair (one without a ``horizon`` attribute is not checked).
    method : Method
        The method whose trees will read the pair.
    exact : bool or None, optional
        ``True``: convert to exact rationals; ``False``: to float64; ``None`` (default): as is.

    Returns
    -------
    ToyPair or GeneratedPair
        The pair in the requested arithmetic (``pair`` itself when ``exact`` is None).

    Raises
    ------
    TreeError
        If ``method``'s depth exceeds the pair's horizon.
    """
    if exact is not None:
        pair = pair.to_exact() if exact else pair.to_float()
    horizon = getattr(pair, "horizon", None)
    if horizon is not None and method.depth > horizon:
        raise TreeError(f"depth {method.depth} exceeds the instance horizon {horizon} (need prefixes up to length D)")
    return pair


def certify(pair, method: Method, exact: bool | None = None, progress=False,
            eager: bool = False, max_branches: int | None = None, reduce: bool = True,
            strict: bool = False) -> Certificate:
    """Exhaustively certify ``method`` on ``pair``.

    ``exact`` converts the pair to exact rationals (True) or float64 (False); None keeps its
    number type. ``progress``: True draws tqdm bars; an object with ``update(n)`` (a caller's
    bar) is told of every builder run, the unit of ``max_branches`` and of
    :func:`estimate_branches`. ``eager`` disables the analytic integration of sampled leaves and
    the skipped doomed expansions, ``reduce=False`` only the latter (for checks);
    ``max_branches`` bounds the enumeration (see :func:`enumerate_classes`). ``strict`` checks
    the equivalence classes instead of trusting them (:func:`enumerate_classes`), and verifies
    every construction branch on its own too: the law of Z from the merged classes must equal the
    ungrouped law exactly (a :class:`ContractError` otherwise).

    Parameters
    ----------
    pair : ToyPair or GeneratedPair
        The LM pair.
    method : Method
        The method (tree builder and tree verifier) certified.
    exact : bool or None, optional
        ``True``: certify in exact rationals; ``False``: in float64; ``None`` (default): in the
        pair's number type.
    progress : bool or object with an ``update(n)`` method, default False
        ``True``: tqdm bars; an object: told of every builder run; ``False`` or ``None``: silent.
    eager : bool, default False
        No analytic integration of sampled leaves, no skipped doomed expansions.
    max_branches : int or None, optional
        Bound on the builder runs of the enumeration; ``None`` (default): no bound.
    reduce : bool, default True
        ``False``: make every doomed expansion (the integration stays).
    strict : bool, default False
        Check the equivalence classes and the builder's contract instead of trusting them.

    Returns
    -------
    Certificate
        The verdict, the largest deviation and a sequence attaining it, the deviations per length,
        the exact tokens per step E|Z|, the class statistics and the law of Z.

    Raises
    ------
    TreeError
        If ``method``'s depth exceeds the pair's horizon.
    RheoError
        If the enumeration needs more than ``max_branches`` builder runs.
    ContractError
        In strict mode, if the builder breaks the contract or grouping changes the law of Z.

    Examples
    --------
    The negative control of docs/theory.md section 2.2 (the ``true`` proxy) is lossy on this pair,
    the ``next`` proxy is not:

    >>> from rheotheory import make_method, random_pair
    >>> pair = random_pair(3, 2, seed=0)
    >>> cert = certify(pair, make_method("rheo", top_k=2, depth=2, budget=2, proxy="true", verifier="ot"))
    >>> cert.lossless, cert.max_deviation, cert.worst_sequence
    (False, Fraction(19, 130), (2,))
    >>> certify(pair, make_method("rheo", top_k=2, depth=2, budget=2, verifier="ot")).lossless
    True
    """
    t0 = time.perf_counter()
    pair = prepare_pair(pair, method, exact)
    bar = None
    if progress is True:
        from tqdm import tqdm

        bar = tqdm(desc="construction branches", unit="br", leave=False)
    runs_bar = bar if progress is True else (None if progress is False or progress is None else progress)
    enum = enumerate_classes(pair, method, progress=runs_bar, eager=eager, max_branches=max_branches, reduce=reduce,
                             strict=strict)
    if bar is not None:
        bar.close()
        from tqdm import tqdm

        bar = tqdm(total=len(enum.classes), desc="verifying classes", unit="cls", leave=False)
    z_law = step_law(pair, method, enum, progress=bar)
    if bar is not None:
        bar.close()
    if strict:
        check_ungrouped(pair, method, enum, z_law)
    chk = lossless_check(pair, z_law, method.depth + 1)
    tau = sum((len(z) * w for z, w in z_law.items()), laws.parse_number(0, pair.exact))
    ok = chk.max_deviation == 0 if pair.exact else chk.max_deviation <= FLOAT_LOSSLESS_TOL
    return Certificate(ok, chk.max_deviation, chk.worst_sequence, chk.per_length, tau, enum.outcomes,
                       len(enum.classes), enum.branches, pair.exact, method, z_law, time.perf_counter() - t0)


class PrefixView:
    """The pair seen after ``prefix``: ``p(u) = pair.p(prefix + u)``, the same for ``q``; the
    horizon shrinks by the prefix's length (the pair a step after ``prefix`` builds its tree on).

    Parameters
    ----------
    pair : ToyPair or GeneratedPair
        The LM pair (it must have a ``horizon``).
    prefix : sequence of int
        The tokens already emitted.

    Attributes
    ----------
    pair : ToyPair or GeneratedPair
        The pair viewed.
    prefix : tuple of int
        The prefix, as a tuple.
    vocab_size : int
        The pair's vocabulary size.
    exact : bool
        The pair's number type (exact rationals or float64).
    horizon : int
        The pair's horizon minus ``len(prefix)``.
    """

    def __init__(self, pair, prefix: tuple):
        self.pair, self.prefix = pair, tuple(prefix)
        self.vocab_size, self.exact = pair.vocab_size, pair.exact
        horizon = getattr(pair, "horizon", None)  # NOTE: a generated or synthetic pair may have none
        self.horizon = None if horizon is None else horizon - len(self.prefix)

    def p(self, prefix):
        r"""The target law after ``self.prefix + prefix``.

        Parameters
        ----------
        prefix : sequence of int
            The tokens after the view's prefix.

        Returns
        -------
        numpy.ndarray of shape (V,), Fractions or float64
            :math:`p(\cdot \mid \text{self.prefix} + \text{prefix})` (# [vocab]).
        """
        return self.pair.p(self.prefix + tuple(prefix))

    def q(self, prefix):
        r"""The draft law after ``self.prefix + prefix``.

        Parameters
        ----------
        prefix : sequence of int
            The tokens after the view's prefix.

        Returns
        -------
        numpy.ndarray of shape (V,), Fractions or float64
            :math:`q(\cdot \mid \text{self.prefix} + \text{prefix})` (# [vocab]).
        """
        return self.pair.q(self.prefix + tuple(prefix))


def certify_steps(pair, method: Method, steps: int = 2, exact: bool | None = None, policy=None, seed: int = 0,
                  max_branches: int | None = None, progress=None) -> Certificate:
    r"""Certify ``steps`` consecutive steps at once (docs/theory.md section 2.8).

    Step 1 runs what the policy (``policy``, default ``method.policy(seed)``) chooses with no
    history; after each outcome :math:`z_1` of step 1, with its exact probability, step 2 runs on the
    pair seen after :math:`z_1` the method the policy chooses once it has seen :math:`z_1`, and so on.
    The output is the concatenation :math:`W = Z_1 Z_2 \cdots` and the certificate is the lossless
    criterion of section 4 for :math:`W` (lengths up to ``steps * (D + 1)``). A policy whose choice
    depends on the past only is lossless whenever its arms are; one that peeks at a step's own
    draws need not be, and this is where that shows. ``tokens_per_step`` is :math:`E|W|` over
    ``steps``; ``classes`` and ``branches`` add up every step's enumerations; ``max_branches`` caps
    each one. ``progress``, when given, is called with 1 after each step enumeration.

    Parameters
    ----------
    pair : ToyPair or GeneratedPair
        The LM pair; its horizon must reach ``steps * (D + 1) - 1``.
    method : Method
        The method certified (its depth D sets the lengths; its policy the arms).
    steps : int, default 2
        Consecutive steps, at least 1.
    exact : bool or None, optional
        ``True``: exact rationals; ``False``: float64; ``None`` (default): the pair's number type.
    policy : StepPolicy or None, optional
        The step policy followed; ``None`` (default): ``method.policy(seed)``
        (:func:`~rheotheory.methods.registry.step_policy`).
    seed : int, default 0
        The seed of the default policy.
    max_branches : int or None, optional
        Bound on the builder runs of each step's enumeration; ``None`` (default): no bound.
    progress : callable or None, optional
        Called as ``progress(1)`` after each step enumeration; ``None`` (default): silent.

    Returns
    -------
    Certificate
        The certificate of W: its law in ``z_law``, ``tokens_per_step`` = E|W| / steps, the
        deviations for lengths up to ``steps * (D + 1)``, ``method`` the method given.

    Raises
    ------
    RheoError
        If ``steps`` is not a positive integer, or a step's enumeration needs more than
        ``max_branches`` builder runs.
    TreeError
        If the steps read prefixes beyond the pair's horizon.
    """
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
        raise RheoError(f"steps must be a positive integer, got {steps!r}")
    t0 = time.perf_counter()
    if exact is not None:
        pair = pair.to_exact() if exact else pair.to_float()
    depth = method.depth
    need = steps * (depth + 1) - 1
    horizon = getattr(pair, "horizon", None)
    if horizon is not None and need > horizon:
        raise TreeError(f"{steps} steps of depth {depth} read prefixes up to length {need}, beyond the instance "
                        f"horizon {horizon}")
    one = laws.parse_number(1, pair.exact)
    states = [((), one, policy if policy is not None else step_policy(method, seed))]  # (output so far, weight, policy)
    outcomes = classes = branches = 0
    for _ in range(steps):
        nxt = []
        laws_at: dict = {}  # (prefix, method key) -> the step's law (a prefix reached twice is enumerated once)
        for prefix, w, pol in states:
            view = PrefixView(pair, prefix) if prefix else pair
            m = pol.choose(view.q(()) if pol.reads_root else None)
            run_key = m.run_key() if hasattr(m, "run_key") else None
            key = (prefix, run_key, id(m) if run_key is None else None)
            zl = laws_at.get(key)
            if zl is None:
                enum = enumerate_classes(view, m, max_branches=max_branches)
                outcomes, classes, branches = outcomes + enum.outcomes, classes + len(enum.classes), \
                    branches + enum.branches
                zl = laws_at[key] = step_law(view, m, enum)
                if progress is not None:
                    progress(1)
            for z, pz in zl.items():
                if pz != 0:
                    nxt.append((prefix + z, w * pz, next_policy(pol, m, z, view)))
        states = nxt
    w_law: dict = {}
    for out, w, _ in states:
        w_law[out] = w_law.get(out, 0) + w
    chk = lossless_check(pair, w_law, steps * (depth + 1))
    tau = sum((len(z) * w for z, w in w_law.items()), laws.parse_number(0, pair.exact)) / steps
    ok = chk.max_deviation == 0 if pair.exact else chk.max_deviation <= FLOAT_LOSSLESS_TOL
    return Certificate(ok, chk.max_deviation, chk.worst_sequence, chk.per_length, tau, outcomes, classes,
                       branches, pair.exact, method, w_law, time.perf_counter() - t0)
