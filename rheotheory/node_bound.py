r"""The best **per-node** verifier on a static tree: a bound no verifier of that class can pass
(docs/theory.md section 7.4).

A *per-node* verifier walks the tree from the root; at the node it stands on (position ``s`` of
the shape, context ``u``) it emits one token :math:`Y` with the target's law
:math:`p(\cdot \mid u)`, drawn by a coupling with the node's children alone (their tokens and
positions, the context, the path); when :math:`Y` is a child's token it descends to that child
(to one of them, if the token was drawn twice) and goes on, otherwise the step ends.
``sequential``, ``rrs``, ``rrs-wor``, ``kseq``, ``onehot`` and ``ot`` are per-node verifiers;
``block``, ``traversal`` and ``gbv`` are not (they read whole paths or subtrees before deciding).

On a tree built from a fixed shape (families ``static``, ``chain``, ``multichain``) the subtree
under a child is drawn from the draft given that child's token alone, whatever the verifier did
above it, so the best per-node verifier is a dynamic programme over positions and contexts:

.. math::

    W(s, u) = \max_{\pi \in \Pi(L_{s,u},\, p(\cdot\mid u))} \sum_{t, y} \pi(t, y)\,
    \max_{j:\ t_j = y} \big(1 + W(s\,j,\ u\,y)\big),

the maximum over :math:`j` being 0 when :math:`y` is not among the children tuple :math:`t`,
:math:`L_{s,u}` the law of the ordered tuple of children tokens (i.i.d. or without
replacement from :math:`q(\cdot \mid u)`), and :math:`\tau = 1 + W(\text{root}, \varnothing)`.
Every node's problem is a transport problem. The weights :math:`W` below a node use target laws
off the drawn tree, which a real verifier never sees: the value is what a per-node verifier could
reach *knowing the whole pair*, so it bounds every per-node verifier, attainable or not.

**Rigour.** Each transport problem is solved in float (HiGHS); its dual multipliers on the
target's marginal, rationalised, give :math:`b`, and :math:`a_t = \max_y (c(t, y) - b_y)` in
rationals makes :math:`(a, b)` dual feasible, so :math:`\sum_t L(t) a_t + \sum_y p(y) b_y` is an
upper bound on the node's optimum by weak duality (exact rational arithmetic; the costs use the
children's upper bounds, and the optimum grows with its costs). ``upper`` is therefore a rigorous
bound on the per-node class; ``value`` is the float optimum.

>>> from rheotheory import random_pair, resolve
>>> pair = random_pair(3, 2, seed=0)
>>> b = per_node_bound(pair, resolve("chain", size=(1, 2, 2)))
>>> round(b.value, 6) == round(float(b.upper), 6)    # one child per node: sequential is the best
True
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .errors import TreeError
from .lp_optimum import HINT_DENOMINATOR
from .trees import chain_shape

__all__ = ["NodeBound", "per_node_bound", "fixed_shape", "MAX_NODE_TUPLES", "NODE_BOUND_FAMILIES"]

#: Families whose trees come from a fixed shape, where the dynamic programme is exact.
NODE_BOUND_FAMILIES = ("static", "chain", "multichain")

#: Largest children-tuple support x vocabulary of one node's transport problem (``|V|^k * |V|``).
MAX_NODE_TUPLES = 200_000


@dataclass(frozen=True)
class NodeBound:
    """The best per-node verifier's tau on one instance: float optimum and rigorous upper bound.

    Attributes
    ----------
    value : float
        Tau of the best per-node verifier (float LPs).
    upper : fractions.Fraction
        Rigorous rational upper bound on it.
    problems : int
        Node transport problems solved.
    """

    value: float  # tau of the best per-node verifier (float LPs)
    upper: Fraction  # rigorous rational upper bound on it
    problems: int  # node transport problems solved


def fixed_shape(method) -> tuple[list, str]:
    """(shape, sampling mode) of a fixed-shape method's trees: what its builder hands
    :func:`~rheotheory.trees.build_static`.

    Parameters
    ----------
    method : Method
        A method of a family of :data:`NODE_BOUND_FAMILIES` (``static``, ``chain``, ``multichain``).

    Returns
    -------
    shape : list of tuple of int
        The tree's positions, each the tuple of child indices from the root.
    mode : str
        The sampling mode of the children: ``"iid"`` or ``"wor"`` (``"iid"`` for a chain).

    Raises
    ------
    TreeError
        If the method's family does not build its trees from a fixed shape.
    """
    fam = method.family
    if fam == "static":
        return list(method.shape), method.sampling
    if fam == "multichain":
        return list(method.shape()), method.sampling
    if fam == "chain":
        return chain_shape(method.depth), "iid"
    raise TreeError(f"the per-node bound is computed for trees of a fixed shape ({', '.join(NODE_BOUND_FAMILIES)}); "
                    f"{fam} trees are not")


def _tuple_law(q, k: int, mode: str):
    """Ordered children tuples and their probabilities (Fractions where ``q`` is exact)."""
    support = [x for x in range(len(q)) if q[x] > 0]
    if mode == "iid":
        for t in itertools.product(support, repeat=k):
            pr = 1
            for x in t:
                pr = pr * q[x]
            yield t, pr
        return
    k = min(k, len(support))  # without replacement: slots past the support stay empty
    for t in itertools.permutations(support, k):
        pr, left = 1, 1
        for x in t:
            pr = pr * q[x] / left
            left = left - q[x]
        yield t, pr


def _solve_node(p, tuples, probs, cost_hi, cost_f):
    """One node: float optimum and rigorous upper bound of the weighted transport problem."""
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix

    n, V = len(tuples), len(p)
    rows, cols = [], []
    for i in range(n):
        for y in range(V):
            rows += [i, n + y]
            cols += [i * V + y, i * V + y]
    A = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(n + V, n * V)).tocsr()
    b_eq = np.array([float(x) for x in probs] + [float(x) for x in p])
    c = -np.asarray(cost_f, dtype=np.float64).ravel()
    res = linprog(c, A_eq=A, b_eq=b_eq, bounds=(0, None), method="highs")
    if res.status != 0:
        raise TreeError(f"node transport problem not solved: {res.message}")
    # NOTE: HiGHS reports marginals of the minimisation; the maximisation's multipliers are their
    # negatives. Any b gives a valid bound; these make it tight up to rounding.
    b = [Fraction(float(-m)).limit_denominator(HINT_DENOMINATOR) for m in res.eqlin.marginals[n:]]
    bound = sum((Fraction(p[y]) * b[y] for y in range(V)), Fraction(0))
    for i in range(n):
        a = max(cost_hi[i][y] - b[y] for y in range(V))
        bound += Fraction(probs[i]) * a
    return float(-res.fun), bound


def per_node_bound(pair, method) -> NodeBound:
    """The best per-node verifier's tau on ``method``'s trees over ``pair`` (module docstring).

    Parameters
    ----------
    pair : ToyPair or GeneratedPair
        The LM pair (exact or float; the upper bound is computed in rationals either way).
    method : Method
        A method of a family of :data:`NODE_BOUND_FAMILIES`; its verifier field is ignored.

    Returns
    -------
    NodeBound
        The float optimum ``1 + W(root, ())``, its rigorous rational upper bound, and the number of
        node problems solved.

    Raises
    ------
    TreeError
        If the method's trees have no fixed shape, a node's transport problem would have more than
        :data:`MAX_NODE_TUPLES` variables (``V^k * V`` for k children), or HiGHS does not solve one.
    """
    shape, mode = fixed_shape(method)
    children: dict[tuple, int] = {}
    for s in shape:
        children[s[:-1]] = children.get(s[:-1], 0) + 1
    V = pair.vocab_size
    worst = max(children.values(), default=0)
    if V ** worst * V > MAX_NODE_TUPLES:
        raise TreeError(f"a node with {worst} sampled children over V = {V} has {V ** worst * V} transport "
                        f"variables, above the cap of {MAX_NODE_TUPLES}")
    memo: dict = {}
    count = [0]

    def node(s: tuple, u: tuple):
        """(float value, rational upper bound) of W(s, u)."""
        k = children.get(s, 0)
        if k == 0:
            return 0.0, Fraction(0)
        key = (s, u)
        if key in memo:
            return memo[key]
        p, q = pair.p(u), pair.q(u)
        tuples, probs = [], []
        for t, pr in _tuple_law(q, k, mode):
            tuples.append(t)
            probs.append(pr)
        below = {}
        for t in tuples:
            for j, x in enumerate(t):
                if (j, x) not in below:
                    below[(j, x)] = node(s + (j,), u + (x,))
        cost_f = np.zeros((len(tuples), V))
        cost_hi = [[Fraction(0)] * V for _ in tuples]
        for i, t in enumerate(tuples):
            for j, x in enumerate(t):
                f, hi = below[(j, x)]
                if 1 + f > cost_f[i, x]:
                    cost_f[i, x] = 1 + f
                if 1 + hi > cost_hi[i][x]:
                    cost_hi[i][x] = 1 + hi
        count[0] += 1
        memo[key] = _solve_node(p, tuples, probs, cost_hi, cost_f)
        return memo[key]

    value, upper = node((), ())
    return NodeBound(1.0 + value, 1 + upper, count[0])
