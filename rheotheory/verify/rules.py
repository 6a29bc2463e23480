r"""Per-node verifiers as transition laws.

At a node the verifier knows the target law ``p`` (``# [vocab]``) and the node's candidate
children, in the order they are tried (creation order). A :class:`Candidate` is either

- *deterministic* (``law is None``): placed by rank, verified one-hot (its draft law is a point
  mass), or
- *sampled* from ``law`` (``# [vocab]``): the law it was actually drawn from, given everything
  drawn before it at this node (for a draw without replacement: the draft with the earlier
  draws removed and renormalised).

A verifier returns a :class:`Transition`: ``cont[i]`` is the probability of continuing into
candidate ``i``, ``emit[y]`` the probability of emitting token ``y`` and ending the step.
``sum(cont) + sum(emit) == 1``. A verifier is *lossless at the node* when, averaged over the
candidates' sampling, the law of the output token (the candidate's token when continuing, ``y``
when emitting) is ``p``.

Every rule is written once on top of :mod:`rheotheory.laws`, so it evaluates in exact rationals
and in float64 (both numpy arrays); the decoder runs it on float64 numpy laws as well.

Rules (docs/theory.md section 3, "Per-node verifiers"):

- :func:`onehot` (EAGLE): every candidate treated as a point mass. Child ``x`` is accepted with
  the current ``p(x)``; on rejection ``x`` is zeroed and ``p`` renormalised.
- :func:`sequential`: deterministic candidates one-hot as above; a sampled candidate ``x`` drawn
  from ``L`` is accepted with :math:`\min(1, p(x)/L(x))`, and on rejection
  :math:`p \leftarrow \mathrm{norm}((p - L)_+)`. With i.i.d. candidates this is RRS (SpecInfer);
  with draws without replacement (``L`` = the conditional law) it is RRS-without-replacement
  (RSD/Sequoia). ``rrs`` and ``rrs-wor`` are therefore names for this one rule.
- :func:`kseq` (SpecTr K-SEQ) for ``k`` i.i.d. candidates from one law.
- :func:`ot`: the optimal verifier for deterministic candidates ``G`` plus one sampled candidate
  ``s ~ L``: accept ``s`` with :math:`\min(1, p(s)/L(s))`; otherwise draw
  :math:`Y \sim \mathrm{norm}((p - L)_+)` and continue into the candidate holding ``Y`` if there
  is one, else emit ``Y``. When ``L`` is zero on ``G`` this attains
  :math:`p(G) + \sum_{x \notin G} \min(p(x), L(x))`, the optimal-transport value.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Sequence

import numpy as np

from .. import laws
from ..errors import VerifierError
from ..trees.tree import Candidate  # the child type is the tree's; a verifier reads it

__all__ = [
    "Candidate",
    "Transition",
    "onehot",
    "sequential",
    "kseq",
    "ot",
    "ot_wor",
    "VERIFIERS",
    "RULE_FAMILIES",
    "register_rule",
    "rule_by_name",
    "get_verifier",
    "kseq_rho",
    "acceptance",
    "output_law",
]


@dataclass
class Transition:
    """The transition law of one node (see the module docstring): ``sum(cont) + sum(emit) == 1``.

    Attributes
    ----------
    cont : list of Fraction or float
        The probability of continuing into each candidate, # [num_candidates].
    emit : numpy.ndarray of shape (V,), Fractions or float64
        The probability of emitting ``y`` and stopping, # [vocab].
    """

    cont: list  # [num_candidates] probability of continuing into each candidate
    emit: np.ndarray  # [vocab] probability of emitting y and stopping

    def total(self):
        """The total probability, 1 for a valid transition.

        Returns
        -------
        Fraction or float
            ``sum(cont) + sum(emit)``, in the laws' number type.
        """
        return sum(self.cont) + laws.total(self.emit)


def _one(p):
    """The number 1 in p's number type."""
    return Fraction(1) if laws.is_exact(p) else 1.0


def _min1(a, b):
    """min(1, a / b) with b > 0, in the number type of a and b."""
    r = a / b
    return r if r < 1 else (r * 0 + 1)


def sequential(p, cands: Sequence[Candidate], residual=laws.residual) -> Transition:
    """Sequential verification: one-hot for deterministic, min(1, p/L) for sampled candidates.

    A deterministic candidate ``x`` is accepted with the current ``p(x)``, then ``x`` is zeroed and
    ``p`` renormalised; a sampled ``x`` drawn from ``L`` with min(1, p(x)/L(x)), then
    ``p`` becomes ``residual(p, L)``. Registered as ``sequential``, as ``rrs`` (i.i.d. candidates)
    and as ``rrs-wor`` (candidates without replacement); docs/theory.md section 3.3.

    Parameters
    ----------
    p : numpy.ndarray of shape (V,), Fractions or float64
        The target law at the node, # [vocab].
    cands : sequence of Candidate
        The node's kept children in the order they are tried (creation order): a deterministic one
        has ``law=None``, a sampled one the law it was drawn from (# [vocab]).
    residual : callable, optional
        ``residual(p, L)``: the law after a sampled candidate from ``L`` was rejected, by default
        :func:`rheotheory.laws.residual`; only the planted bugs of :mod:`rheotheory.testing.mutants`
        replace it.

    Returns
    -------
    Transition
        ``cont[i]``: the probability of continuing into candidate ``i``; ``emit[y]``: of emitting
        ``y`` and ending the step.

    Raises
    ------
    VerifierError
        A sampled candidate has zero probability under its own law.

    Examples
    --------
    One draft s ~ q (p target, q draft): averaged over s the output token has law p, and the
    acceptance is 1 - tv(p, q).

    >>> p = laws.exact_law(["1/2", "1/4", "1/4"])
    >>> q = laws.exact_law(["1/4", "1/4", "1/2"])
    >>> one = lambda s: [Candidate(s, law=q)]
    >>> print(*sum(q[s] * output_law(sequential(p, one(s)), one(s)) for s in range(3)))
    1/2 1/4 1/4
    >>> print(sum(q[s] * acceptance(sequential(p, one(s))) for s in range(3)))
    3/4
    """
    cur = p
    rest = _one(p)  # probability that every candidate so far was rejected
    cont = []
    for c in cands:
        x = c.token
        if c.law is None:
            a = cur[x]
            cont.append(rest * a)
            rest = rest * (1 - a)
            cur = laws.normalise(laws.zero_at(cur, x))
        else:
            lx = c.law[x]
            if not lx > 0:
                raise VerifierError(f"sampled candidate {x} has zero probability under its own law")
            a = _min1(cur[x], lx)
            cont.append(rest * a)
            rest = rest * (1 - a)
            cur = residual(cur, c.law)
    return Transition(cont, rest * cur)


def onehot(p, cands: Sequence[Candidate]) -> Transition:
    """EAGLE's verification: every candidate is checked one-hot, whatever its drafting law
    (docs/theory.md section 3.2).

    Parameters
    ----------
    p : numpy.ndarray of shape (V,), Fractions or float64
        The target law at the node, # [vocab].
    cands : sequence of Candidate
        The node's kept children in the order they are tried; their laws are not read.

    Returns
    -------
    Transition
        ``cont[i]``: the probability of continuing into candidate ``i``; ``emit[y]``: of emitting
        ``y`` and ending the step.

    Examples
    --------
    The one-hot dilemma (docs/theory.md section 1.4): with p = q = (1/2, 1/2) a deterministic
    top-1 child is accepted with probability p(0) = 1/2, while the same token sampled from q and
    verified with its true law is always accepted.

    >>> p = laws.exact_law(["1/2", "1/2"])
    >>> print(acceptance(onehot(p, [Candidate(0)])))
    1/2
    >>> print(acceptance(sequential(p, [Candidate(0, law=p)])))
    1
    >>> print(*output_law(onehot(p, [Candidate(0)]), [Candidate(0)]))     # lossless: the law is p
    1/2 1/2
    """
    return sequential(p, [Candidate(c.token) for c in cands])


def _kseq_c(beta, k):
    """(1 - (1 - beta)^k) / beta, the expected number of draws tried per acceptance; k at beta = 0."""
    if beta == 0:
        return beta * 0 + k
    return (1 - (1 - beta) ** k) / beta


#: Bisection steps for K-SEQ's rho; the exact path then uses the (dyadic) upper end of the
#: bracket, where c(rho) <= rho holds exactly, so the residual is a valid law and the rule is
#: exactly lossless (optimality is kept to about 2^-60).
KSEQ_BISECTION_STEPS = 60


def kseq_rho(p, q, k: int):
    """SpecTr's rho in [1, k]: a root of (1 - (1 - beta(rho))^k) / beta(rho) = rho.

    beta(rho) = sum_x min(q(x), p(x)/rho), found by :data:`KSEQ_BISECTION_STEPS` bisection steps
    in float64 over q's support.

    Parameters
    ----------
    p : numpy.ndarray of shape (V,), Fractions or float64
        The target law at the node, # [vocab].
    q : numpy.ndarray of shape (V,), Fractions or float64
        The law the k candidates were drawn from, # [vocab].
    k : int
        The number of i.i.d. candidates.

    Returns
    -------
    Fraction or float
        rho, in p's number type, at which c(rho) <= rho holds (exactly, for exact laws: the upper
        end of the bisection's bracket, walked up if float rounding left it a hair short).
    """
    qf = laws.to_float(q)
    keep = qf > 0  # NOTE: min(q, p / rho) is 0 off q's support; a sparse draft bisects over its support only
    qf, pf = qf[keep], laws.to_float(p)[keep]

    def gap(rho):
        beta = float(np.minimum(qf, pf / rho).sum())
        return _kseq_c(beta, k) - rho

    lo, hi = 1.0, float(k)
    if gap(lo) <= 0:
        hi = lo
    else:
        for _ in range(KSEQ_BISECTION_STEPS):
            mid = 0.5 * (lo + hi)
            if gap(mid) > 0:
                lo = mid
            else:
                hi = mid
    if not laws.is_exact(p):
        return hi
    rho = Fraction(hi)
    # NOTE: float rounding could leave c(rho) a hair above rho; walk up until it holds exactly.
    step = Fraction(1, 2**50)
    while True:
        beta = laws.total(laws.minimum(q, p / rho))
        if _kseq_c(beta, k) <= rho or rho >= k:
            return min(rho, Fraction(k))
        rho += step
        step *= 2


def kseq(p, cands: Sequence[Candidate]) -> Transition:
    """SpecTr K-SEQ for k i.i.d. candidates drawn from one law q (docs/theory.md section 3.4).

    Candidate i is accepted with min(1, p(x)/(rho q(x))) (rho: :func:`kseq_rho`); if all k are
    rejected the token is drawn from [p - min(q, p/rho) c] / (1 - beta)^k with
    c = (1 - (1 - beta)^k) / beta.

    Parameters
    ----------
    p : numpy.ndarray of shape (V,), Fractions or float64
        The target law at the node, # [vocab].
    cands : sequence of Candidate
        The k candidates, each sampled from the same law q (equal arrays); none: ``p`` is emitted.

    Returns
    -------
    Transition
        ``cont[i]``: the probability of continuing into candidate ``i``; ``emit[y]``: of emitting
        ``y`` and ending the step.

    Raises
    ------
    VerifierError
        A candidate is deterministic, or the candidates were drawn from different laws.

    Examples
    --------
    >>> p = laws.exact_law(["1/2", "1/2"])                # p = q: rho = 1, the first draft is kept
    >>> print(kseq_rho(p, p, 2), acceptance(kseq(p, [Candidate(0, law=p), Candidate(0, law=p)])))
    1 1
    """
    if not cands:
        return Transition([], p * 1)
    q = cands[0].law
    if q is None or any(c.law is None or c.law is not q and not np.array_equal(c.law, q) for c in cands):
        raise VerifierError("kseq needs every candidate sampled i.i.d. from one law (static or chain trees)")
    k = len(cands)
    rho = kseq_rho(p, q, k)
    m = laws.minimum(q, p / rho)  # per-token accepted mass of one draw, # [vocab]
    beta = laws.total(m)
    rest = _one(p)
    cont = []
    for c in cands:
        a = m[c.token] / q[c.token]
        cont.append(rest * a)
        rest = rest * (1 - a)
    fail = (1 - beta) ** k
    resid = (p - m * _kseq_c(beta, k)) / fail if fail != 0 else p * 0
    resid = laws.pos(resid)  # NOTE: clears float round-off only; exactly non-negative in exact mode
    return Transition(cont, rest * resid)


def ot(p, cands: Sequence[Candidate], residual=laws.residual) -> Transition:
    """The optimal verifier for deterministic candidates plus at most one sampled candidate
    (docs/theory.md section 3.5).

    Accept the sampled ``s ~ L`` with min(1, p(s)/L(s)); otherwise draw
    ``Y ~ residual(p, L)`` and continue into the first candidate holding ``Y``, else emit ``Y``.
    Without a sampled candidate it is :func:`onehot`.

    Parameters
    ----------
    p : numpy.ndarray of shape (V,), Fractions or float64
        The target law at the node, # [vocab].
    cands : sequence of Candidate
        The node's kept children in the order they are tried (creation order): a deterministic one
        has ``law=None``, a sampled one the law it was drawn from (# [vocab]).
    residual : callable, optional
        ``residual(p, L)``: the law of ``Y`` after the rejection, by default
        :func:`rheotheory.laws.residual`, as in :func:`sequential`.

    Returns
    -------
    Transition
        ``cont[i]``: the probability of continuing into candidate ``i``; ``emit[y]``: of emitting
        ``y`` and ending the step.

    Raises
    ------
    VerifierError
        More than one sampled candidate, or the sampled one has zero probability under its own law.

    Examples
    --------
    With p = q a single sampled draft is always accepted:

    >>> p = laws.exact_law(["1/2", "1/4", "1/4"])
    >>> print(*[acceptance(ot(p, [Candidate(s, law=p)])) for s in range(3)])
    1 1 1

    A deterministic child G = {0} plus s ~ L, L the draft outside G. Resolving s first (ot)
    accepts p(G) + sum_x min(p(x), L(x)) = 1 for every s; checking G first (sequential) loses
    the s = 2 case:

    >>> p = laws.exact_law(["1/2", "1/2", "0"])
    >>> L = laws.exact_law(["0", "1/2", "1/2"])
    >>> for s in (1, 2):
    ...     cands = [Candidate(0), Candidate(s, law=L)]
    ...     print(s, acceptance(ot(p, cands)), acceptance(sequential(p, cands)))
    1 1 1
    2 1 1/2
    """
    sampled = [i for i, c in enumerate(cands) if c.law is not None]
    if not sampled:
        return onehot(p, cands)
    if len(sampled) > 1:
        raise VerifierError("ot is defined for at most one sampled candidate per node")
    i_s = sampled[0]
    s = cands[i_s]
    ls = s.law[s.token]
    if not ls > 0:
        raise VerifierError(f"sampled candidate {s.token} has zero probability under its own law")
    a = _min1(p[s.token], ls)
    r = residual(p, s.law)  # law of Y after rejecting s, # [vocab]
    rej = 1 - a
    cont = [p[0] * 0 for _ in cands]
    cont[i_s] = a
    emit = rej * r
    taken = set()
    for i, c in enumerate(cands):
        # NOTE: Y goes to the first candidate holding it; duplicates after it get nothing.
        if c.token in taken:
            continue
        taken.add(c.token)
        cont[i] = cont[i] + emit[c.token]
    emit = laws.zero_at(emit, list(taken))
    return Transition(cont, emit)


def ot_wor(p, cands: Sequence[Candidate], residual=laws.residual) -> Transition:
    r"""Deterministic candidates plus several sampled ones: recursive rejection first, then the
    residual draw continues into a deterministic candidate holding it (docs/theory.md section 2.7).

    The sampled candidates :math:`s_1, \dots, s_k` (in creation order, member laws
    :math:`L_1, \dots, L_k`; without replacement, :math:`L_i` is the base law restricted to the
    earlier members) are tried by recursive rejection against the *original* target, ignoring
    the deterministic ones:

    .. math::

        a_i = \min\Big(1, \frac{p_{i-1}(s_i)}{L_i(s_i)}\Big), \qquad
        p_i = \mathrm{res}(p_{i-1}, L_i), \qquad p_0 = p.

    If all are rejected (probability :math:`\rho_k = \prod_i (1 - a_i)`), :math:`Y \sim p_k` is
    drawn; the walk continues into the first candidate holding :math:`Y` (always a
    deterministic one: a rejected :math:`s_i` has :math:`p_i(s_i) = 0`, and so has every later
    :math:`p_j`), else :math:`Y` is emitted. Given the sampled tokens the output token's law is
    that of recursive rejection sampling, which does not depend on the deterministic candidates;
    averaged over :math:`s_i \sim L_i` (given :math:`s_{<i}`) it is :math:`p`. With one sampled
    candidate this is :func:`ot`; with none, :func:`onehot`.

    Parameters
    ----------
    p : numpy.ndarray of shape (V,), Fractions or float64
        The target law at the node, # [vocab].
    cands : sequence of Candidate
        The node's kept children in the order they are tried (creation order): a deterministic one
        has ``law=None``, a sampled one the law it was drawn from (# [vocab]).
    residual : callable, optional
        ``residual(p, L)``: the law after a sampled candidate from ``L`` was rejected, by default
        :func:`rheotheory.laws.residual`; only the planted bugs of :mod:`rheotheory.testing.mutants`
        replace it.

    Returns
    -------
    Transition
        ``cont[i]``: the probability of continuing into candidate ``i``; ``emit[y]``: of emitting
        ``y`` and ending the step.

    Raises
    ------
    VerifierError
        A sampled candidate has zero probability under its own law.

    Examples
    --------
    >>> p = laws.exact_law(["1/2", "1/4", "1/4", "0"])
    >>> L1 = laws.exact_law(["0", "1/2", "1/4", "1/4"])          # tail law outside G = {0}
    >>> L2 = laws.exact_law(["0", "0", "1/2", "1/2"])            # L1 without s_1 = 1
    >>> cands = [Candidate(0), Candidate(1, law=L1), Candidate(2, law=L2)]
    >>> print(acceptance(ot_wor(p, cands)))
    1
    >>> print(*[acceptance(ot_wor(p, [Candidate(0), Candidate(s, law=L1)])) ==
    ...         acceptance(ot(p, [Candidate(0), Candidate(s, law=L1)])) for s in (1, 2, 3)])
    True True True
    """
    sampled = [i for i, c in enumerate(cands) if c.law is not None]
    if not sampled:
        return onehot(p, cands)
    cur = p
    rest = _one(p)  # probability that every sampled candidate so far was rejected
    cont = [p[0] * 0 for _ in cands]
    for i in sampled:
        c = cands[i]
        lx = c.law[c.token]
        if not lx > 0:
            raise VerifierError(f"sampled candidate {c.token} has zero probability under its own law")
        a = _min1(cur[c.token], lx)
        cont[i] = rest * a
        rest = rest * (1 - a)
        cur = residual(cur, c.law)
    emit = rest * cur  # [vocab] mass of Y after every sampled candidate was rejected
    taken = set(cands[i].token for i in sampled)
    for i, c in enumerate(cands):
        # NOTE: Y goes to the first deterministic candidate holding it; a duplicate gets nothing,
        # and a rejected sampled token has zero residual mass (see the docstring).
        if c.law is not None or c.token in taken:
            continue
        taken.add(c.token)
        cont[i] = cont[i] + emit[c.token]
    emit = laws.zero_at(emit, [c.token for c in cands if c.law is None])
    return Transition(cont, emit)


#: Verifier name -> transition rule. ``rrs`` and ``rrs-wor`` are the sequential rule applied to
#: i.i.d. and without-replacement candidates respectively. Filled by :func:`register_rule`.
VERIFIERS: dict[str, Callable[..., Transition]] = {}

#: Per-node rule name -> the families that admit it beyond their own ``verifiers`` list: ``None``
#: for every family (a rule registered from outside the package), ``()`` for the built-in rules,
#: which each family lists itself.
RULE_FAMILIES: dict[str, tuple[str, ...] | None] = {}


def register_rule(name: str, rule: Callable[..., Transition] | None = None, families=None):
    """Register the per-node rule ``rule(p, candidates) -> Transition`` under ``name``.

    The rule is then a ``--verifier`` choice of the ``families`` named (``None``: every family),
    in every command, walked over the tree by :class:`~rheotheory.verify.walk.PerNodeWalk`. Used
    as a decorator when ``rule`` is left out. The built-in rules register here too.

    Parameters
    ----------
    name : str
        The verifier's name, as commands and results write it.
    rule : callable, optional
        ``rule(p, candidates) -> Transition``; pure, evaluated on exact (Fraction) and float64
        numpy laws alike (docs/theory.md section 3.1).
    families : sequence of str, optional
        The method families that admit it; ``None`` (the default): every family.

    Returns
    -------
    callable
        ``rule`` itself; without ``rule``, the decorator that registers the function it is given.

    Raises
    ------
    TypeError
        ``name`` is not a non-empty string, or ``rule`` is not callable.
    ValueError
        ``name`` is already a verifier (a per-node rule or a tree-level verifier).
    """
    if rule is None:
        return lambda fn: register_rule(name, fn, families)
    if not isinstance(name, str) or not name or not callable(rule):
        raise TypeError("register_rule takes a name and a rule (p, candidates) -> Transition")
    import sys

    walk = sys.modules.get(__name__.rpartition(".")[0] + ".walk")  # NOTE: walk imports this module
    if name in VERIFIERS or (walk is not None and name in walk.TREE_VERIFIERS):
        raise ValueError(f"verifier {name!r} is registered twice")
    VERIFIERS[name] = rule
    RULE_FAMILIES[name] = None if families is None else tuple(families)
    return rule


for _name, _rule in (("onehot", onehot), ("sequential", sequential), ("rrs", sequential), ("rrs-wor", sequential),
                     ("kseq", kseq), ("ot", ot),
                     ("ot-wor", ot_wor)):  # ot-wor: deterministic + several sampled candidates (theory 2.7)
    register_rule(_name, _rule, families=())


def rule_by_name(name: str, obj=None) -> None:
    """Register the per-node rule a reference ``WHERE:NAME`` names, under ``name``; for any other
    unknown name, load the installed plugins.

    A reference to something that is not a rule is left alone (the caller refuses the name); a
    name already registered, too.

    Parameters
    ----------
    name : str
        A verifier name, or a reference ``FILE.py:NAME`` / ``MODULE:NAME``.
    obj : callable, optional
        The object the reference names, when the caller loaded it; default: loaded by
        :func:`rheotheory.plugin_loader.load_object`.

    Raises
    ------
    PluginError
        The reference's plugin does not load or lacks the name, or a plugin fails to load.
    """
    from ..plugin_loader import ensure_plugins, is_reference, load_object  # NOTE: plugins load only when asked for

    if name in VERIFIERS:
        return
    if not is_reference(name):
        ensure_plugins()
        return
    obj = load_object(name) if obj is None else obj
    if callable(obj) and not isinstance(obj, type) and not hasattr(obj, "outcomes"):
        register_rule(name, obj)


def get_verifier(name: str) -> Callable[..., Transition]:
    """The per-node rule registered as ``name``.

    A name written ``FILE.py:NAME`` or ``MODULE:NAME`` loads that object first (a plugin's rule,
    :mod:`rheotheory.plugin`); an unknown name loads the installed plugins once before it is
    refused.

    Parameters
    ----------
    name : str
        A per-node verifier's name (:data:`VERIFIERS`), or a reference ``FILE.py:NAME`` /
        ``MODULE:NAME`` to a plugin's rule.

    Returns
    -------
    callable
        ``rule(p, candidates) -> Transition``.

    Raises
    ------
    VerifierError
        No rule has that name (the message lists the registered ones).
    """
    rule = VERIFIERS.get(name)
    if rule is None:
        rule_by_name(name)
        rule = VERIFIERS.get(name)
    if rule is None:
        raise VerifierError(f"unknown verifier {name!r}; choose from {', '.join(VERIFIERS)}")
    return rule


def acceptance(tr: Transition):
    """Probability of continuing into some candidate.

    Parameters
    ----------
    tr : Transition
        A node's transition law.

    Returns
    -------
    Fraction or float
        ``sum(tr.cont)``, in the laws' number type.
    """
    return sum(tr.cont)


def output_law(tr: Transition, cands: Sequence[Candidate]) -> np.ndarray:
    """Law of the node's output token under fixed candidates (continuing into c outputs c.token).

    Parameters
    ----------
    tr : Transition
        The node's transition law for ``cands``.
    cands : sequence of Candidate
        The candidates ``tr`` was computed for, in the same order.

    Returns
    -------
    numpy.ndarray of shape (V,), Fractions or float64
        ``tr.emit`` plus each candidate's continuation probability on its token, # [vocab].
    """
    out = tr.emit * 1
    for c, w in zip(cands, tr.cont):
        out[c.token] = out[c.token] + w
    return out
