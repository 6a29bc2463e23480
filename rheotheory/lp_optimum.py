r"""The tree-level optimum: the best tokens per step that *any* lossless verifier can reach on a
tree-construction scheme (docs/theory.md section 7.2).

A construction scheme (a method's builder on a pair) draws a finished tree :math:`t` with law
:math:`P(t)`. A verifier, in general, is a conditional law of the step output :math:`Z` given
the tree (docs/theory.md section 7.1), i.e. a coupling :math:`\pi(t, z) \ge 0` of the tree and
the output. The best one solves the linear programme

.. math::

    \max_{\pi \ge 0} \sum_{t, z} |z|\, \pi(t, z) \quad \text{s.t.} \quad
    \sum_z \pi(t, z) = P(t), \qquad
    \pi(t, z) = 0 \text{ unless } z_{:-1} \text{ is a root path of } t, \qquad
    \text{section 4 on } P(Z = z) = \sum_t \pi(t, z).

Every lossless verifier is a feasible point, so the optimum bounds the :math:`\tau` of every one
of them. The optimal :math:`\pi` may use target laws at prefixes off the tree, which no real
verifier sees: it is an **upper bound**, attained or not.

**Trees.** The enumerator's equivalence classes (docs/theory.md section 5.3) may hold unresolved
sampled leaves whose identity is integrated analytically; here every class is expanded over the
joint values of its unresolved kept nodes (each from its pending law, weights multiplied; the
same expansion as the walk's, :meth:`~rheotheory.trees.Tree.pending_draws`), and each concrete
tree is reduced to its **set of root paths** (token tuples, the empty path included). Trees with
the same path set admit the same outputs, so merging them (summing :math:`P`) leaves the optimum
unchanged: a coupling of the merged tree splits in proportion to the merged weights.

**The lossless constraints as implemented.** Write :math:`G(u) = P(Z \text{ has prefix } u)` and
:math:`A(u) = P(Z \text{ has prefix } u,\ |Z| > |u|)` (so :math:`A(\varnothing) = 1`). With
:math:`W` the output completed by fresh target samples, :math:`W_{|u|+1}` given
:math:`W_{:|u|} = u` mixes "Z ended by then" (law :math:`p(\cdot \mid u)`) with "Z continues past
:math:`u`", so the criterion of section 4 holds for every :math:`l \le D+1` iff, for every
:math:`u` with :math:`|u| \le D` and every token :math:`y`,

.. math::

    G(uy) - p(y \mid u)\, A(u) = 0 .

(This is the criterion's left side at :math:`uy` minus :math:`p(y \mid u)` times its left side at
:math:`u`: a triangular, invertible recombination of the section-4 equations.) In :math:`\pi` the
row :math:`(u, y)` has the coefficient
:math:`c_{u,y}(z) = \mathbf{1}[z_{:|u|+1} = uy] - p(y \mid u)\, \mathbf{1}[z_{:|u|} = u,\ |z| > |u|]`,
which depends on :math:`z` only. Rows with :math:`u` on no tree are identically zero and omitted;
the rows of one :math:`u` sum to zero identically (:math:`\sum_y p(y \mid u) = 1`), so the row of
the last token :math:`y = |V| - 1` is implied and omitted too. The objective is :math:`\sum |z|
\pi(t, z)`. Sizes: :math:`\sum_t |\mathrm{paths}(t)| \cdot |V|` variables and
:math:`\#\text{trees} + |U| (|V| - 1)` equality rows, :math:`U` the union of the trees' paths.

**The dual, and the exact re-check.** With multipliers :math:`\mu(u, y)` on the lossless rows,
the dual is

.. math::

    \min_{\mu} \sum_t P(t) \max_{z \in Z(t)} \big(|z| - \phi_\mu(z)\big), \qquad
    \phi_\mu(z) = \sum_{k < |z|} \Big(\mu(z_{:k}, z_{k+1}) - \sum_y p(y \mid z_{:k})\, \mu(z_{:k}, y)\Big),

:math:`Z(t)` the outputs tree :math:`t` admits. For **any** rational :math:`\mu` this is a rigorous
upper bound on the optimum (weak duality). The LP is solved in float by HiGHS; when the pair is
exact the result is then re-checked in rationals:

1. *primal*: every tree whose float support is one output gets :math:`\pi(t, z) = P(t)` exactly;
   the support variables of the other trees solve the tree-marginal and lossless rows exactly
   (sparse Gaussian elimination over :class:`fractions.Fraction`; free directions, if any, take
   the rationalised float values). It must come out non-negative, and its output law must pass
   :func:`~rheotheory.exact.lossless_check` with deviation exactly 0;
2. *dual*: :math:`\mu` solves, exactly, "every output that is tight in float (reduced cost at most
   :data:`TIGHT_TOL`) or in the primal support has the same :math:`|z| - \phi_\mu(z)` within its
   tree", free directions set to the rationalised HiGHS duals;
3. the primal objective must equal the dual value exactly. Then both are optimal and the optimum
   is that rational (``exact=True``). Otherwise the float optimum is reported (``exact=False``)
   together with the rigorous rational bound of step 2.

>>> from rheotheory import make_method, random_pair
>>> pair = random_pair(3, 1, seed=0)
>>> opt = tree_optimum(pair, make_method("chain", depth=1))
>>> p, q = pair.p(()), pair.q(())
>>> opt.exact, opt.value == 1 + sum(min(a, b) for a, b in zip(p, q))   # one draft: spec. sampling is optimal
(True, True)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from . import laws
from .errors import RheoError
from .verify.walk import EnumerateBranch, draw_pending

__all__ = [
    "TreeOptimum",
    "LPSizeError",
    "tree_optimum",
    "concrete_trees",
    "MAX_LP_VARIABLES",
    "MAX_LP_CONSTRAINTS",
    "MAX_EXACT_UNKNOWNS",
]

#: Largest LP (variables = sum over concrete trees of root paths x V) that :func:`tree_optimum`
#: builds; beyond it a :class:`LPSizeError` names the cap (`rheo optimum --max-variables`).
#: 250k columns with about 1 + D V non-zeros each are a few seconds of HiGHS and of Python set-up.
MAX_LP_VARIABLES = 250_000

#: Largest number of equality rows (concrete trees + |U| (V - 1) lossless rows)
#: (`rheo optimum --max-constraints`).
MAX_LP_CONSTRAINTS = 50_000

#: The exact re-check solves two sparse rational systems; it is skipped (the result stays float,
#: ``exact=False``) when either has more unknowns than this. Measured: a few hundred unknowns
#: take well under a second with Fractions; elimination is cubic in the worst case.
MAX_EXACT_UNKNOWNS = 3_000

#: HiGHS primal and dual feasibility tolerances (its default is 1e-7; tighter values make the
#: float support and tight sets the exact re-check starts from cleaner).
HIGHS_TOL = 1e-10

#: A float primal value counts as support when it exceeds this fraction of its tree's weight.
SUPPORT_REL_TOL = 1e-7

#: An output is tight in float when its reduced value |z| - phi(z) is within this of its tree's max.
TIGHT_TOL = 1e-7

#: Free directions of the exact systems take their float values rationalised to denominators at
#: most this (any value is valid there; the checks that follow are exact).
HINT_DENOMINATOR = 10**6


class LPSizeError(RheoError):
    """The tree-level LP exceeds a documented size cap (one line naming the cap and its flag)."""


@dataclass
class TreeOptimum:
    """The tree-level optimum of one method on one pair (docs/theory.md section 7.2).

    Attributes
    ----------
    value : fractions.Fraction or float
        The optimum E|Z|: a Fraction when exact, else the HiGHS float.
    exact : bool
        True only when the rational re-check proved ``value`` optimal.
    float_value : float
        HiGHS's optimum.
    upper_bound : fractions.Fraction or None
        A rigorous rational upper bound (the dual of the re-check), or None (float pair).
    recheck : str
        How exactness was established, or why not.
    trees : int
        Concrete trees (distinct root-path sets).
    classes : int
        The enumerator's equivalence classes they were expanded from.
    variables : int
        LP columns pi(t, z).
    constraints : int
        LP equality rows.
    nonzeros : int
        Non-zeros of the constraint matrix.
    method : Method
        The resolved method.
    seconds : float, default 0.0
        Wall-clock time of :func:`tree_optimum`.
    z_law : dict[tuple of int, fractions.Fraction], default {}
        The optimal law of Z (output tuple -> probability), exact; empty unless ``exact``.
    """

    value: object  # the optimum E|Z|: a Fraction when exact, else the HiGHS float
    exact: bool  # True only when the rational re-check proved `value` optimal
    float_value: float  # HiGHS's optimum
    upper_bound: object  # a rigorous rational upper bound (the dual of the re-check), or None
    recheck: str  # how exactness was established, or why not
    trees: int  # concrete trees (distinct root-path sets)
    classes: int  # the enumerator's equivalence classes they were expanded from
    variables: int  # LP columns pi(t, z)
    constraints: int  # LP equality rows
    nonzeros: int  # non-zeros of the constraint matrix
    method: object  # the resolved Method
    seconds: float = 0.0
    z_law: dict = field(repr=False, default_factory=dict)  # the optimal law of Z (exact when exact)

    def to_dict(self) -> dict:
        """Plain JSON types only.

        Returns
        -------
        dict[str, object]
            ``tokens_per_step_optimum`` (as "a/b" when exact), ``tokens_per_step_optimum_float``,
            ``exact``, ``upper_bound``, ``recheck``, ``lp`` (variables, constraints, non-zeros, trees,
            classes), ``method`` and ``seconds``; ``z_law`` is left out.
        """
        fmt = laws.format_number
        return {
            "tokens_per_step_optimum": fmt(self.value),
            "tokens_per_step_optimum_float": float(self.value),
            "exact": bool(self.exact),
            "upper_bound": None if self.upper_bound is None else fmt(self.upper_bound),
            "recheck": self.recheck,
            "lp": {"variables": int(self.variables), "constraints": int(self.constraints),
                   "nonzeros": int(self.nonzeros), "trees": int(self.trees), "classes": int(self.classes)},
            "method": self.method.to_dict(),
            "seconds": round(float(self.seconds), 4),
        }


# -- concrete trees -------------------------------------------------------------------------------

def _root_paths(tree, known) -> tuple:
    """The kept root paths of ``tree`` (token tuples, ``()`` first), unresolved nodes read from
    ``known``; sorted, so equal path sets give equal keys."""
    out = set()
    stack = [(0, ())]
    while stack:
        idx, path = stack.pop()
        out.add(path)
        for k in tree.kept_children(idx):
            stack.append((k, path + (tree.token(k, known),)))
    return tuple(sorted(out, key=lambda u: (len(u), u)))


def concrete_trees(pair, method, eager: bool = False, max_branches: int | None = None,
                   max_variables: int = MAX_LP_VARIABLES) -> tuple[dict, int]:
    """The law of the concrete trees of ``method`` on ``pair``, as root-path sets.

    Parameters
    ----------
    pair : ToyPair or GeneratedPair
        The LM pair, exact or float.
    method : Method
        A resolved method; only its tree construction is used.
    eager : bool, default False
        True resolves every draw in the enumerator instead of expanding classes here (used by the
        tests to cross-check).
    max_branches : int, optional
        Bound on the enumerator's builder runs (:func:`~rheotheory.exact.enumerate_classes`).
    max_variables : int, default MAX_LP_VARIABLES
        Most LP columns (root paths x V, summed over the trees) the trees may need.

    Returns
    -------
    trees : dict[tuple of tuple of int, fractions.Fraction or float]
        A sorted tuple of root paths (``()`` included) -> its probability :math:`P(t)` (exact or
        float, as the pair; summing to 1).
    classes : int
        The number of equivalence classes enumerated.

    Raises
    ------
    LPSizeError
        Once the trees need more than ``max_variables`` LP columns.
    """
    from .exact import enumerate_classes  # NOTE: deferred, as below: `rheo --help` reads this module's caps

    enum = enumerate_classes(pair, method, eager=eager, max_branches=max_branches)
    V = pair.vocab_size
    trees: dict = {}
    nvars = 0
    for cls in enum.classes.values():
        tree = cls.tree
        unresolved = [i for i, node in enumerate(tree.nodes) if tree.kept[i] and node.token is None]
        pending = tree.pending_draws(unresolved) if unresolved else []
        for w, known in draw_pending(tree, pending, EnumerateBranch()):
            key = _root_paths(tree, known)
            if key in trees:
                trees[key] = trees[key] + cls.weight * w
            else:
                trees[key] = cls.weight * w
                nvars += len(key) * V
                if nvars > max_variables:
                    raise LPSizeError(f"the tree-level LP needs more than {max_variables} variables "
                                      "(MAX_LP_VARIABLES); raise the cap with --max-variables")
    return trees, len(enum.classes)


# -- the LP --------------------------------------------------------------------------------------

@dataclass
class _LP:
    trees: list  # [(paths, P(t))], # [T]
    cols: list  # [(tree index, z)], # [n]
    tree_cols: list  # column range (start, stop) of each tree, # [T]
    U: list  # prefixes with lossless rows, in row order
    row_of: dict  # (u, y) -> row index, y < V - 1
    A: object  # scipy.sparse csc, # [m, n]
    b: np.ndarray  # # [m]
    c: np.ndarray  # |z|, # [n]


def _row_coefficients(z, row_of, plaw, V) -> dict:
    """Lossless-row coefficients of the column of output ``z``: row (u, y) -> c_{u,y}(z) for every
    proper prefix u = z[:k] (``plaw(u)`` the target law there, exact or float)."""
    out = {}
    for k in range(len(z)):
        u = z[:k]
        pu = plaw(u)
        for y in range(V - 1):
            coef = (1 if z[k] == y else 0) - pu[y]
            if coef:
                out[row_of[(u, y)]] = coef
    return out


def _build_lp(pair, trees: dict, max_constraints: int) -> _LP:
    from scipy.sparse import csc_matrix

    V = pair.vocab_size
    items = list(trees.items())
    U = sorted({u for paths, _ in items for u in paths}, key=lambda u: (len(u), u))
    T = len(items)
    m = T + len(U) * (V - 1)
    if m > max_constraints:
        raise LPSizeError(f"the tree-level LP needs {m} constraints, over the cap of {max_constraints} "
                          "(MAX_LP_CONSTRAINTS); raise it with --max-constraints")
    row_of = {(u, y): T + i * (V - 1) + y for i, u in enumerate(U) for y in range(V - 1)}
    pf: dict = {}

    def plaw(u):
        law = pf.get(u)
        if law is None:
            law = pf[u] = laws.to_float(pair.p(u))
        return law

    coef_cache: dict = {}
    data, indices, indptr = [], [], [0]
    cols, tree_cols, c = [], [], []
    for t, (paths, _) in enumerate(items):
        start = len(cols)
        for u in paths:
            for y in range(V):
                z = u + (y,)
                cz = coef_cache.get(z)
                if cz is None:
                    cz = coef_cache[z] = _row_coefficients(z, row_of, plaw, V)
                indices.append(t)
                data.append(1.0)
                indices.extend(cz.keys())
                data.extend(cz.values())
                indptr.append(len(indices))
                cols.append((t, z))
                c.append(len(z))
        tree_cols.append((start, len(cols)))
    A = csc_matrix((np.asarray(data, dtype=np.float64), np.asarray(indices), np.asarray(indptr)),
                   shape=(m, len(cols)))
    b = np.zeros(m)  # [m]
    b[:T] = [float(w) for _, w in items]
    return _LP(items, cols, tree_cols, U, row_of, A, b, np.asarray(c, dtype=np.float64))


def _solve_float(lp: _LP):
    from scipy.optimize import linprog

    res = linprog(-lp.c, A_eq=lp.A, b_eq=lp.b, bounds=(0, None), method="highs",
                  options={"primal_feasibility_tolerance": HIGHS_TOL, "dual_feasibility_tolerance": HIGHS_TOL})
    if res.status != 0:
        # NOTE: the LP is always feasible (never accepting is lossless) and bounded (|z| <= D+1).
        raise RheoError(f"the tree-level LP was not solved: {res.message}")
    return res


# -- exact re-check ------------------------------------------------------------------------------

def solve_rational(rows: list, rhs: list, hints: dict | None = None) -> dict | None:
    """One solution of the sparse rational system ``rows x = rhs``, or None if it is inconsistent.

    ``rows`` are dicts column -> Fraction. Gaussian elimination in row-insertion order (each new
    row is reduced by the earlier pivot rows, in their creation order, which keeps the pivot rows
    in echelon form), then back substitution; a column without a pivot (a free direction) takes
    ``hints[col]`` (default 0).

    >>> from fractions import Fraction as F
    >>> solve_rational([{0: F(1), 1: F(1)}, {0: F(1), 1: F(-1)}], [F(3), F(1)])
    {1: Fraction(1, 1), 0: Fraction(2, 1)}
    >>> solve_rational([{0: F(1)}, {0: F(2)}], [F(1), F(3)]) is None
    True
    """
    hints = hints or {}
    pivots: list = []  # (col, row with row[col] == 1, rhs)
    for row, r in zip(rows, rhs):
        row = dict(row)
        for col, prow, pr in pivots:
            a = row.get(col)
            if a is None:
                continue
            for k, v in prow.items():
                nv = row.get(k, 0) - a * v
                if nv:
                    row[k] = nv
                else:
                    row.pop(k, None)
            r = r - a * pr
        if not row:
            if r != 0:
                return None
            continue
        col = next(iter(row))
        a = row[col]
        pivots.append((col, {k: v / a for k, v in row.items()}, r / a))
    x: dict = {}
    pivot_cols = {col for col, _, _ in pivots}
    for col, prow, pr in reversed(pivots):
        val = pr
        for k, v in prow.items():
            if k == col:
                continue
            if k not in x:
                x[k] = Fraction(hints.get(k, 0))  # NOTE: only free columns reach here (see docstring)
                assert k not in pivot_cols
            val = val - v * x[k]
        x[col] = val
    return x


def _rational(v: float) -> Fraction:
    return Fraction(float(v)).limit_denominator(HINT_DENOMINATOR)


def _dual_bound(lp: _LP, mu: dict, coeffs) -> Fraction:
    r"""The dual objective :math:`\sum_t P(t) \max_{z \in Z(t)} (|z| - \phi_\mu(z))` for rational
    multipliers ``mu`` (lossless row -> Fraction): a rigorous upper bound on the optimum for any
    ``mu`` (the max makes the dual point feasible; weak duality)."""
    phi: dict = {}
    bound = Fraction(0)
    for t, (start, stop) in enumerate(lp.tree_cols):
        best = None
        for j in range(start, stop):
            z = lp.cols[j][1]
            if z not in phi:
                phi[z] = sum((v * mu[r] for r, v in coeffs(z).items()), Fraction(0))
            val = len(z) - phi[z]
            if best is None or val > best:
                best = val
        bound += lp.trees[t][1] * best
    return bound


def _recheck(pair, lp: _LP, res, depth: int):
    """The rational re-check of the module docstring: ``(value, upper_bound, z_law, message)``,
    ``value`` None when the check failed."""
    from .exact import lossless_check

    V = pair.vocab_size
    T = len(lp.trees)
    x = res.x  # [n]
    pe: dict = {}

    def plaw(u):
        law = pe.get(u)
        if law is None:
            law = pe[u] = pair.p(u)
        return law

    coef: dict = {}

    def coeffs(z):
        cz = coef.get(z)
        if cz is None:
            cz = coef[z] = _row_coefficients(z, lp.row_of, plaw, V)
        return cz

    # 1. primal: pure trees fixed, split trees solved exactly
    support = []
    for t, (start, stop) in enumerate(lp.tree_cols):
        w = float(lp.trees[t][1])
        s = [j for j in range(start, stop) if x[j] > SUPPORT_REL_TOL * w]
        support.append(s or [start + int(np.argmax(x[start:stop]))])
    pi: dict = {}  # column -> exact value
    rows_rhs: dict = {}  # lossless row -> rhs (minus the pure trees' contributions)
    unknowns = [j for s in support if len(s) > 1 for j in s]
    mu_f = -np.asarray(res.eqlin.marginals)[T:]  # [|U| (V - 1)] multipliers of the lossless rows
    hints = {T + i: _rational(v) for i, v in enumerate(mu_f)}
    if len(unknowns) > MAX_EXACT_UNKNOWNS or len(lp.row_of) > MAX_EXACT_UNKNOWNS:
        return None, _dual_bound(lp, hints, coeffs), {}, (f"skipped: more than {MAX_EXACT_UNKNOWNS} unknowns "
                                                          "(MAX_EXACT_UNKNOWNS); upper_bound is the rationalised dual")
    rows: dict = {}
    marg_rows, marg_rhs = [], []
    for t, s in enumerate(support):
        Pt = lp.trees[t][1]
        if len(s) == 1:
            j = s[0]
            pi[j] = Pt
            for r, v in coeffs(lp.cols[j][1]).items():
                rows_rhs[r] = rows_rhs.get(r, 0) - v * Pt
        else:
            marg_rows.append({j: Fraction(1) for j in s})
            marg_rhs.append(Pt)
            for j in s:
                for r, v in coeffs(lp.cols[j][1]).items():
                    rows.setdefault(r, {})[j] = v
    eq_rows = marg_rows + [rows.get(r, {}) for r in sorted(set(rows) | set(rows_rhs))]
    eq_rhs = marg_rhs + [Fraction(rows_rhs.get(r, 0)) for r in sorted(set(rows) | set(rows_rhs))]
    sol = solve_rational(eq_rows, eq_rhs, {j: _rational(x[j]) for j in unknowns})
    primal, z_law, failed = None, {}, None
    if sol is None:
        failed = "the float support admits no exact primal solution"
    else:
        for j in unknowns:
            pi[j] = sol.get(j, _rational(x[j]))
        if any(v < 0 for v in pi.values()):
            failed = "the exact primal on the float support has a negative entry"
    if failed is None:
        for j, v in pi.items():
            if v:
                z = lp.cols[j][1]
                z_law[z] = z_law.get(z, 0) + v
        if lossless_check(pair, z_law, depth + 1).max_deviation != 0:
            failed = "the exact primal is not lossless"
        else:
            primal = sum((len(z) * v for z, v in z_law.items()), Fraction(0))

    # 2. dual: equal reduced values on the tight outputs of every tree, exactly
    # float phi(z) for every column, from the LP matrix's lossless rows
    A = lp.A
    phi_col = np.asarray(A[T:, :].T @ mu_f).ravel()  # [n]
    eqs, eq_seen = [], set()
    for t, (start, stop) in enumerate(lp.tree_cols):
        red = lp.c[start:stop] - phi_col[start:stop]  # [cols of t] |z| - phi(z)
        top = red.max()
        tight = {start + i for i in np.flatnonzero(top - red <= TIGHT_TOL)} | set(support[t])
        tight = sorted(tight)
        z0 = lp.cols[tight[0]][1]
        for j in tight[1:]:
            z = lp.cols[j][1]
            if (z0, z) in eq_seen or z == z0:
                continue
            eq_seen.add((z0, z))
            row = dict(coeffs(z))
            for r, v in coeffs(z0).items():
                nv = row.get(r, 0) - v
                if nv:
                    row[r] = nv
                else:
                    row.pop(r, None)
            eqs.append((row, Fraction(len(z) - len(z0))))
    mu = solve_rational([e[0] for e in eqs], [e[1] for e in eqs], hints)
    # NOTE: if the tight sets admit no exact dual, any rational mu still gives a rigorous bound
    bound = _dual_bound(lp, {**hints, **(mu or {})}, coeffs)
    # 3. strong duality, exactly
    if failed is None and bound == primal:
        return primal, bound, z_law, ("rational primal (lossless_check: deviation 0) and dual "
                                      "feasible solutions with equal objectives")
    if failed is None:
        failed = ("the float tight sets admit no exact dual" if mu is None
                  else "the rational primal and dual objectives differ")
    return None, bound, {}, f"failed: {failed}; upper_bound is a rigorous rational bound"

def tree_optimum(pair, method, exact: bool | None = None, max_branches: int | None = None,
                 max_variables: int = MAX_LP_VARIABLES, max_constraints: int = MAX_LP_CONSTRAINTS,
                 eager: bool = False) -> TreeOptimum:
    """The best E|Z| any lossless verifier reaches on ``method``'s trees (docs/theory.md section 7.2).

    Parameters
    ----------
    pair : ToyPair or GeneratedPair
        A toy pair, holding the prefixes up to the method's depth. The exact re-check runs only
        on exact pairs.
    method : Method
        A resolved :class:`~rheotheory.methods.Method`; only its tree construction matters (the
        verifier field is ignored).
    exact : bool, optional
        Convert the pair to rationals (True) or float64 (False); None keeps its number type.
    max_branches : int, optional
        Bound on the enumerator's builder runs (:func:`~rheotheory.exact.enumerate_classes`).
    max_variables : int, default MAX_LP_VARIABLES
        Size cap on the LP's columns: beyond it an :class:`LPSizeError` is raised before the LP
        is built.
    max_constraints : int, default MAX_LP_CONSTRAINTS
        Size cap on the LP's equality rows, likewise.
    eager : bool, default False
        Enumerate every draw instead of expanding the classes' unresolved leaves (cross-check).

    Returns
    -------
    TreeOptimum
        Its ``value`` is the exact rational optimum when the re-check succeeded (``exact`` True),
        else HiGHS's float (with ``upper_bound`` a rigorous rational bound when the pair is exact).

    Raises
    ------
    LPSizeError
        If the LP would exceed ``max_variables`` or ``max_constraints``.
    TreeError
        If the method's depth exceeds the pair's horizon.
    RheoError
        If HiGHS does not solve the LP.
    """

    from .exact import prepare_pair

    t0 = time.perf_counter()
    pair = prepare_pair(pair, method, exact)
    trees, classes = concrete_trees(pair, method, eager=eager, max_branches=max_branches, max_variables=max_variables)
    lp = _build_lp(pair, trees, max_constraints)
    res = _solve_float(lp)
    fval = float(-res.fun)
    value, bound, z_law, message = fval, None, {}, "not attempted: float pair"
    ok = False
    if pair.exact:
        v, bound, zl, message = _recheck(pair, lp, res, method.depth)
        if v is not None:
            value, z_law, ok = v, zl, True
    return TreeOptimum(value, ok, fval, bound, message, len(lp.trees), classes, lp.A.shape[1], lp.A.shape[0],
                       lp.A.nnz, method, time.perf_counter() - t0, z_law)
