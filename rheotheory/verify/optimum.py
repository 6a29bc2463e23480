r"""The per-node optimum: the best acceptance any lossless verifier can reach at a node.

At a node with target ``p`` the candidate *set* is random with law ``Q`` (a map from
frozensets of token ids to probabilities). A verifier is a coupling of the output token
:math:`Y \sim p` with the set :math:`S \sim Q`; it accepts when :math:`Y \in S`. The best
acceptance is an optimal-transport problem with cost :math:`1[y \notin S]`:

.. math::

    \mathrm{opt}(p, Q) = 1 - \min_{\pi \in \Pi(p, Q)} \sum_{y, S} \pi(y, S)\, 1[y \notin S]
                       = \min_{T \subseteq V} \; p(T) + 1 - Q(\{S : S \subseteq T\}).

Three independent evaluations are provided and cross-checked by the tests:
:func:`optimum_pot` (``ot.emd2``), :func:`optimum_linprog` (``scipy.optimize.linprog``, HiGHS)
and :func:`optimum_sets` (the min-over-sets formula, exact for exact laws).

>>> from fractions import Fraction as F
>>> import numpy as np
>>> p = np.array([F(1, 2), F(1, 2)], dtype=object)
>>> optimum_sets(p, {frozenset({0}): F(1)})   # one deterministic child: p(0)
Fraction(1, 2)
"""

from __future__ import annotations

import itertools
from typing import Mapping, Sequence

import numpy as np

from .. import laws
from ..errors import VerifierError

__all__ = [
    "optimum_pot",
    "optimum_linprog",
    "optimum_sets",
    "set_law_det_plus_sample",
    "set_law_iid",
    "set_law_wor",
    "ot_value",
]

SetLaw = Mapping[frozenset, object]

#: The min-over-sets formula scans all 2^V token sets; refuse beyond this vocabulary.
MAX_SETS_VOCAB = 20


def _check_set_law(p, Q: SetLaw):
    if not Q:
        raise VerifierError("candidate-set law is empty")
    s = sum(Q.values())
    tol = 0 if laws.is_exact(p) else 1e-9
    if abs(s - 1) > tol:
        raise VerifierError(f"candidate-set law sums to {s}, not 1")
    for S in Q:
        for t in S:
            if not 0 <= t < len(p):
                raise VerifierError(f"candidate token {t} outside the vocabulary")


def _cost(p, Q: SetLaw):
    sets = list(Q)
    M = np.ones((len(p), len(sets)))  # [vocab, num_sets] cost 1[y not in S]
    for j, S in enumerate(sets):
        for y in S:
            M[y, j] = 0.0
    b = np.array([float(Q[S]) for S in sets])
    return laws.to_float(p), b, M


def optimum_pot(p, Q: SetLaw) -> float:
    """Optimal acceptance via POT's exact network-simplex solver ``ot.emd2`` (float).

    Parameters
    ----------
    p : numpy.ndarray of shape (V,), Fractions or float64
        The target law at the node, # [vocab].
    Q : dict[frozenset of int, Fraction or float]
        The law of the candidate set: set -> probability, summing to 1.

    Returns
    -------
    float
        The best acceptance :math:`\\mathrm{opt}(p, Q)` of any lossless verifier at the node.

    Raises
    ------
    VerifierError
        The set law is empty, does not sum to 1 (exactly for exact laws, to 1e-9 for floats), or
        holds a token outside the vocabulary.

    Examples
    --------
    p = (1, 0) against two i.i.d. drafts from (1/2, 1/2): token 0 is proposed with probability
    1 - (1/2)^2, and no verifier can accept more often.

    >>> p = laws.exact_law(["1", "0"])
    >>> round(optimum_pot(p, set_law_iid(laws.exact_law(["1/2", "1/2"]), 2)), 9)
    0.75
    """
    import ot as pot

    _check_set_law(p, Q)
    a, b, M = _cost(p, Q)
    a, b = a / a.sum(), b / b.sum()
    return 1.0 - float(pot.emd2(a, b, M))


def optimum_linprog(p, Q: SetLaw) -> float:
    """Optimal acceptance via ``scipy.optimize.linprog(method="highs")`` (float).

    Parameters
    ----------
    p : numpy.ndarray of shape (V,), Fractions or float64
        The target law at the node, # [vocab].
    Q : dict[frozenset of int, Fraction or float]
        The law of the candidate set: set -> probability, summing to 1.

    Returns
    -------
    float
        The best acceptance :math:`\\mathrm{opt}(p, Q)` of any lossless verifier at the node.

    Raises
    ------
    VerifierError
        The set law is empty, does not sum to 1 (exactly for exact laws, to 1e-9 for floats), or
        holds a token outside the vocabulary; or the solver fails.

    Examples
    --------
    >>> p = laws.exact_law(["1/2", "1/2"])
    >>> round(optimum_linprog(p, {frozenset({0}): 1}), 9)          # one deterministic child: p(0)
    0.5
    >>> round(optimum_linprog(p, set_law_iid(p, 1)), 9)           # one draft sampled from q = p
    1.0
    """
    from scipy.optimize import linprog

    _check_set_law(p, Q)
    a, b, M = _cost(p, Q)
    n, m = M.shape
    A_eq = np.zeros((n + m, n * m))
    for i in range(n):
        A_eq[i, i * m:(i + 1) * m] = 1
    for j in range(m):
        A_eq[n + j, j::m] = 1
    res = linprog(M.ravel(), A_eq=A_eq, b_eq=np.concatenate([a, b]), bounds=(0, None), method="highs")
    if not res.success:
        raise VerifierError(f"linprog failed: {res.message}")
    return 1.0 - float(res.fun)


def optimum_sets(p, Q: SetLaw):
    """Optimal acceptance by the min-over-token-sets formula (exact for exact laws).

    Scans all :math:`2^V` token sets T for :math:`\\min_T p(T) + 1 - Q(\\{S : S \\subseteq T\\})`.

    Parameters
    ----------
    p : numpy.ndarray of shape (V,), Fractions or float64
        The target law at the node, # [vocab].
    Q : dict[frozenset of int, Fraction or float]
        The law of the candidate set: set -> probability, summing to 1.

    Returns
    -------
    Fraction or float
        The best acceptance :math:`\\mathrm{opt}(p, Q)`, in p's number type.

    Raises
    ------
    VerifierError
        The set law is empty, does not sum to 1 (exactly for exact laws, to 1e-9 for floats), or
        holds a token outside the vocabulary; or V exceeds :data:`MAX_SETS_VOCAB`.

    Examples
    --------
    >>> p = laws.exact_law(["1", "0"])
    >>> print(optimum_sets(p, set_law_iid(laws.exact_law(["1/2", "1/2"]), 2)))
    3/4
    """
    _check_set_law(p, Q)
    V = len(p)
    if V > MAX_SETS_VOCAB:
        raise VerifierError(f"optimum_sets scans 2^V sets; V = {V} exceeds {MAX_SETS_VOCAB}")
    items = [(sum(1 << t for t in S), w) for S, w in Q.items()]
    best = None
    for mask in range(1 << V):
        pT = sum((p[t] for t in range(V) if mask >> t & 1), p[0] * 0)
        inside = sum((w for sm, w in items if sm & ~mask == 0), p[0] * 0)
        val = pT + 1 - inside
        if best is None or val < best:
            best = val
    return best


def set_law_det_plus_sample(det: Sequence[int], law) -> dict:
    """Law of the set det ∪ {s}, s ~ law (law should vanish on det).

    Parameters
    ----------
    det : sequence of int
        The deterministic candidates' tokens G.
    law : numpy.ndarray of shape (V,), Fractions or float64
        The law the sampled candidate s is drawn from, # [vocab].

    Returns
    -------
    dict[frozenset of int, Fraction or float]
        Set -> probability; ``{frozenset(det): 1}`` for an all-zero ``law``.
    """
    out: dict = {}
    base = frozenset(det)
    for x, w in enumerate(law):
        if w > 0:
            S = base | {x}
            out[S] = out.get(S, 0) + w
    if not out:
        out[base] = laws.total(law) * 0 + 1
    return out


def set_law_iid(law, k: int) -> dict:
    """Law of the set of k i.i.d. draws from law.

    Parameters
    ----------
    law : numpy.ndarray of shape (V,), Fractions or float64
        The draft law, # [vocab].
    k : int
        The number of draws.

    Returns
    -------
    dict[frozenset of int, Fraction or float]
        Set of drawn tokens -> probability.

    Examples
    --------
    >>> Q = set_law_iid(laws.exact_law(["1/2", "1/2"]), 2)
    >>> {tuple(sorted(S)): str(w) for S, w in Q.items()}
    {(0,): '1/4', (0, 1): '1/2', (1,): '1/4'}
    """
    support = [x for x, w in enumerate(law) if w > 0]
    out: dict = {}
    for seq in itertools.product(support, repeat=k):
        w = law[seq[0]] * 0 + 1
        for x in seq:
            w = w * law[x]
        S = frozenset(seq)
        out[S] = out.get(S, 0) + w
    return out


def set_law_wor(law, k: int) -> dict:
    """Law of the set of k draws without replacement (successive sampling) from law.

    Parameters
    ----------
    law : numpy.ndarray of shape (V,), Fractions or float64
        The draft law, # [vocab].
    k : int
        The number of draws (fewer when the support runs out).

    Returns
    -------
    dict[frozenset of int, Fraction or float]
        Set of drawn tokens -> probability.

    Examples
    --------
    >>> Q = set_law_wor(laws.exact_law(["1/2", "1/2"]), 2)
    >>> {tuple(sorted(S)): str(w) for S, w in Q.items()}
    {(0, 1): '1'}
    """
    out: dict = {}

    def rec(cur, chosen, w):
        if len(chosen) == k or laws.total(cur) == 0:
            S = frozenset(chosen)
            out[S] = out.get(S, 0) + w
            return
        for x, wx in enumerate(cur):
            if wx > 0:
                rec(laws.restrict(cur, [x]), chosen + [x], w * wx)

    rec(law, [], laws.total(law) * 0 + 1)
    return out


def ot_value(p, det: Sequence[int], law):
    """Closed form p(G) + sum_{x not in G} min(p(x), law(x)) (law vanishing on G).

    It is the acceptance of the ``ot`` verifier (docs/theory.md section 3.5) for the
    deterministic candidates G plus one candidate sampled from ``law``.

    Parameters
    ----------
    p : numpy.ndarray of shape (V,), Fractions or float64
        The target law at the node, # [vocab].
    det : sequence of int
        The deterministic candidates' tokens G.
    law : numpy.ndarray of shape (V,), Fractions or float64
        The law of the one sampled candidate, # [vocab], vanishing on G.

    Returns
    -------
    Fraction or float
        The value: exact for exact laws, a float for float64 laws (computed vectorised).

    Examples
    --------
    It equals the general optimum for the set G plus one sampled token:

    >>> p = laws.exact_law(["1/2", "1/2", "0"])
    >>> L = laws.exact_law(["0", "1/2", "1/2"])                  # the draft outside G = {0}
    >>> print(ot_value(p, [0], L), optimum_sets(p, set_law_det_plus_sample([0], L)))
    1 1
    """
    if not laws.is_exact(p) and not laws.is_exact(law):
        # NOTE: float laws take a vectorised path (same formula) so V = 32k stays cheap.
        pf, lf = np.asarray(p, dtype=np.float64), np.asarray(law, dtype=np.float64)
        inside = np.zeros(pf.size, dtype=bool)  # [vocab]
        inside[np.asarray(list(det), dtype=np.int64)] = True
        return float(pf[inside].sum() + np.minimum(pf[~inside], lf[~inside]).sum())
    G = set(det)
    val = p[0] * 0
    for x in range(len(p)):
        val = val + (p[x] if x in G else min(p[x], law[x]))
    return val
