r"""Symbolic case analysis that runs the library's own per-node rules on sympy expressions.

The verifiers in :mod:`rheotheory.verify.rules` are written once, on numbers that support
``+ - * /`` and comparisons. :class:`Sym` is such a number whose value is a sympy expression in
symbolic probabilities. Arithmetic builds expressions; every comparison (``<``, ``>=``, ``==``
inside ``min``, ``max``, ``np.maximum``, ``normalise``...) is answered by the current
:class:`Case`: the comparison ``a OP b`` is reduced to the sign of one canonical polynomial
``P`` (the numerator of ``a - b`` with a denominator that is positive on the domain, leading
coefficient made positive). A case keeps, for every such ``P``, the set of signs in
``{-1, 0, +1}`` still allowed. A question the allowed signs already answer is answered; any
other question splits the case in two (:class:`NeedDecision`), and :func:`enumerate_cases`
explores every split depth first. The cases are thus exactly the sign/ordering regions that the
rule's min/max create, ties included (a sign set ``{0}`` is a tie, ``{0, 1}`` "non-negative").

Domain: every symbol is a positive real. Laws are homogeneous, ``p(x) = a_x / sum(a)``, so they
are positive and sum to 1 for every point of the domain.

Soundness. In a case the rule followed one fixed code path, so each quantity it returned is one
rational function of the symbols. An identity that simplifies to exactly 0 as a rational
function holds at every point of the case (the rule divides only by quantities it has checked to
be non-zero on that path). Where a case pins a polynomial to 0 (sign set ``{0}``) the identity is
only required on that variety: a variable that appears linearly is solved for and substituted
before simplifying. A case whose identity does not reduce to 0 is searched for a witness point
(random positive rationals satisfying every sign condition of the case, exactly): a witness is a
counterexample; a case without one after the search is reported as "not settled".
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import sympy as sp

__all__ = ["Sym", "Case", "NeedDecision", "enumerate_cases", "law_symbols", "sym_law", "check_identities",
           "CaseResult", "point_case"]

_CANON: dict = {}  # sympy expression -> (canonical polynomial or number, sign multiplier)


class NeedDecision(Exception):
    """Raised when a comparison is not decided by the current case."""


class EmptyCase(Exception):
    """Raised when exact certificates show that no point of the domain is in the current case."""


class Case:
    """Allowed signs of the canonical polynomials met so far, and the scripted answers."""

    current: "Case | None" = None

    def __init__(self, script=(), point=None):
        self.script = list(script)  # answers (True/False) for the undecided questions, in order
        self.i = 0
        self.signs: dict = {}  # canonical polynomial -> frozenset of allowed signs
        self.point = point  # dict symbol -> Fraction: answer every question at this point

    def allowed(self, P) -> frozenset:
        """Signs of P still possible in this case (assumptions and the case's conditions)."""
        got = self.signs.get(P)
        if got is None:
            if self.point is not None:
                v = P.subs(self.point)
                got = frozenset({int(bool(v > 0)) - int(bool(v < 0))})
            else:
                got = _assumed_signs(P) & _implied_signs(self.signs, P)
            self.signs[P] = got
        if not got:
            raise EmptyCase()
        return got

    def decide(self, P, allowed_if_true: frozenset) -> bool:
        allowed = self.allowed(P)
        if self.point is not None:
            return bool(allowed & allowed_if_true)
        t = allowed & allowed_if_true
        f = allowed - allowed_if_true
        if not f:
            self.signs[P] = allowed
            return True
        if not t:
            self.signs[P] = allowed
            return False
        if self.i >= len(self.script):
            raise NeedDecision()
        ans = self.script[self.i]
        self.i += 1
        self.signs[P] = t if ans else f
        return ans


_IMPLIED: dict = {}


def _implied_signs(signs: dict, P) -> frozenset:
    """Signs of P allowed by an exact certificate from the case's one-sided conditions:
    P = sum lam_i f_i + sum mu_j m_j + sum nu_k e_k (lam, mu >= 0; f_i >= 0 or > 0 the case's
    conditions, m_j positive monomials, e_k = 0 its ties) proves P >= 0 (P > 0 if a strict term
    has a positive multiplier); the same for -P."""
    conds = tuple(sorted(((f, st) for f, st in _oriented(signs)), key=lambda x: sp.default_sort_key(x[0])))
    eqs = tuple(sorted((Q for Q, al in signs.items() if al == frozenset({0})), key=sp.default_sort_key))
    key = (conds, eqs, P)
    got = _IMPLIED.get(key)
    if got is not None:
        return got
    out = frozenset({-1, 0, 1})
    if conds or eqs:
        for sgn in (1, -1):
            r = _certify_nonneg(sgn * P, conds, eqs)
            if r == "strict":
                out &= frozenset({sgn})
            elif r == "weak":
                out &= frozenset({0, sgn})
    _IMPLIED[key] = out
    return out


def _certify_nonneg(g, conds, eqs):
    from scipy.optimize import linprog

    syms = sorted(g.free_symbols.union(*[f.free_symbols for f, _ in conds], *[e.free_symbols for e in eqs]),
                  key=lambda x: x.name)
    gd = sp.Poly(g, *syms).as_dict()
    fd = [sp.Poly(f, *syms).as_dict() for f, _ in conds]
    ed = [sp.Poly(e, *syms).as_dict() for e in eqs]
    monos = sorted(set(gd).union(*fd, *ed))
    gens = fd + [{m: 1} for m in monos] + ed
    strict = [st for _, st in conds] + [True] * len(monos) + [False] * len(ed)
    bounds = [(0, 1e6)] * (len(fd) + len(monos)) + [(-1e6, 1e6)] * len(ed)
    A = np.array([[float(gen.get(m, 0)) for gen in gens] for m in monos])
    b = np.array([float(gd.get(m, 0)) for m in monos])
    c = np.array([-1.0 if st else 0.0 for st in strict])
    res = linprog(c, A_eq=A, b_eq=b, bounds=bounds, method="highs")
    if not res.success:
        return None
    lam = [Fraction(float(x)).limit_denominator(CERT_DENOMINATOR) if abs(x) > 1e-9 else Fraction(0) for x in res.x]
    tot = {m: Fraction(0) for m in monos}
    for l, gen in zip(lam, gens):
        if l:
            for m, co in gen.items():
                co = sp.Rational(co)
                tot[m] += l * Fraction(int(co.p), int(co.q))
    for m in monos:
        co = sp.Rational(gd.get(m, 0))
        if tot[m] != Fraction(int(co.p), int(co.q)):
            return None  # NOTE: rounding broke the certificate; claim nothing from it
    if any(l < 0 for l, gen in zip(lam[:len(fd) + len(monos)], gens)):
        return None
    return "strict" if any(l > 0 and st for l, st in zip(lam, strict)) else "weak"


def _assumed_signs(P) -> frozenset:
    if P.is_positive:
        return frozenset({1})
    if P.is_negative:
        return frozenset({-1})
    if P.is_nonnegative:
        return frozenset({0, 1})
    if P.is_nonpositive:
        return frozenset({-1, 0})
    return frozenset({-1, 0, 1})


def _poly_factors(expr, const_sign: int, out: list) -> int:
    """Append the non-constant irreducible factors of the polynomial ``expr`` (positive leading
    coefficient, multiplicity) to ``out``; return the sign of everything else."""
    coeff, facs = sp.factor_list(expr)
    sign = const_sign * (1 if coeff > 0 else -1)
    for f, mult in facs:
        if f.is_positive:
            continue
        if f.is_negative:
            sign *= (-1) ** mult
            continue
        syms = sorted(f.free_symbols, key=lambda x: x.name)
        if sp.Poly(f, *syms).LC() < 0:
            f = sp.expand(-f)
            sign *= (-1) ** mult
        out.append((sp.expand(f), int(mult)))
    return sign


def _canonical(e):
    """(s, factors): sign(e) = s * prod sign(P)^m over factors (P, m), each P an irreducible
    polynomial with positive leading coefficient; or (number, None) when e is a number."""
    got = _CANON.get(e)
    if got is not None:
        return got
    c = sp.cancel(sp.together(e))
    if c.is_number:
        out = (c, None)
    else:
        n, d = sp.fraction(c)
        factors: list = []
        s = _poly_factors(sp.expand(n), 1, factors)
        s = _poly_factors(sp.expand(d), s, factors)
        merged: dict = {}
        for f, m in factors:
            merged[f] = merged.get(f, 0) + m
        out = (s, tuple(sorted(merged.items(), key=lambda fm: sp.default_sort_key(fm[0]))))
    _CANON[e] = out
    return out


_OPS = {
    "<": lambda x: x < 0, "<=": lambda x: x <= 0, ">": lambda x: x > 0, ">=": lambda x: x >= 0,
    "==": lambda x: x == 0, "!=": lambda x: x != 0,
}


def _compare(a, b, op) -> bool:
    e = _expr(a) - _expr(b)
    s, factors = _canonical(e)
    if factors is None:
        return bool(_OPS[op](s))
    test = _OPS[op]
    case = Case.current
    while True:
        allowed = [case.allowed(P) for P, _ in factors]
        outcomes = set()
        for combo in itertools.product(*allowed):
            sign = s
            for sg, (_, m) in zip(combo, factors):
                sign *= sg ** m
            outcomes.add(bool(test(sign)))
        if len(outcomes) == 1:
            return outcomes.pop()
        # NOTE: undecided: split the first factor with more than one allowed sign and retry
        i = next(i for i, al in enumerate(allowed) if len(al) > 1)
        P = factors[i][0]
        case.decide(P, frozenset({min(allowed[i])}))


def _expr(x):
    if isinstance(x, Sym):
        return x.e
    if isinstance(x, Fraction):
        return sp.Rational(x.numerator, x.denominator)
    if isinstance(x, (int, np.integer)):
        return sp.Integer(int(x))
    if isinstance(x, sp.Basic):
        return x
    raise TypeError(f"Sym cannot combine with {type(x).__name__}")


class Sym:
    """A number whose value is a sympy expression; comparisons are answered by :class:`Case`."""

    __slots__ = ("e",)

    def __init__(self, e):
        self.e = _expr(e)

    def _bin(self, other, f):
        if isinstance(other, np.ndarray):
            return NotImplemented
        try:
            o = _expr(other)
        except TypeError:
            return NotImplemented
        return Sym(f(self.e, o))

    def __add__(self, o): return self._bin(o, lambda a, b: a + b)
    def __radd__(self, o): return self._bin(o, lambda a, b: b + a)
    def __sub__(self, o): return self._bin(o, lambda a, b: a - b)
    def __rsub__(self, o): return self._bin(o, lambda a, b: b - a)
    def __mul__(self, o): return self._bin(o, lambda a, b: a * b)
    def __rmul__(self, o): return self._bin(o, lambda a, b: b * a)
    def __truediv__(self, o): return self._bin(o, lambda a, b: a / b)
    def __rtruediv__(self, o): return self._bin(o, lambda a, b: b / a)
    def __pow__(self, k): return Sym(self.e ** _expr(k))
    def __neg__(self): return Sym(-self.e)
    def __pos__(self): return self

    def __abs__(self):
        return self if _compare(self, 0, ">=") else -self

    def __lt__(self, o): return _compare(self, o, "<")
    def __le__(self, o): return _compare(self, o, "<=")
    def __gt__(self, o): return _compare(self, o, ">")
    def __ge__(self, o): return _compare(self, o, ">=")
    def __eq__(self, o): return _compare(self, o, "==")
    def __ne__(self, o): return _compare(self, o, "!=")
    def __bool__(self): return _compare(self, 0, "!=")
    def __hash__(self): return hash(self.e)
    def __repr__(self): return f"Sym({self.e})"


def law_symbols(name: str, V: int):
    """V positive symbols ``name0..name{V-1}``."""
    return sp.symbols(f"{name}0:{V}", positive=True)


def sym_law(syms) -> np.ndarray:
    """The homogeneous law (a_x / sum a) as an object array of :class:`Sym`. # [vocab]"""
    tot = sum(syms)
    return np.array([Sym(s / tot) for s in syms], dtype=object)


@dataclass
class CaseResult:
    signs: dict  # canonical polynomial -> allowed signs (the case)
    values: list  # the identities' expressions (sympy), in order
    status: str = ""  # "zero" | "zero-on-variety" | "refuted" | "not settled"
    witness: dict | None = None
    extra: dict = field(default_factory=dict)


def enumerate_cases(compute, limit: int = 100000):
    """Run ``compute()`` (returning a list of Sym/number identities and optionally a dict of extras)
    under every case; return the list of :class:`CaseResult`."""
    out = []
    stack = [()]
    while stack:
        script = stack.pop()
        case = Case(script)
        Case.current = case
        try:
            res = compute()
        except NeedDecision:
            stack.append(script + (False,))
            stack.append(script + (True,))
            continue
        except EmptyCase:
            res = CaseResult(dict(case.signs), [], status="empty")
            out.append(res)
            continue
        finally:
            Case.current = None
        values, extra = (res if isinstance(res, tuple) else (res, {}))
        out.append(CaseResult(dict(case.signs), [_expr(v) for v in values], extra=extra))
        if len(out) > limit:
            raise RuntimeError(f"more than {limit} cases")
    return out


def point_case(compute, point: dict):
    """Run ``compute()`` with every comparison answered at ``point`` (used to cross-check the case
    formulas against the library evaluated on exact rationals)."""
    case = Case(point=point)
    Case.current = case
    try:
        res = compute()
    finally:
        Case.current = None
    values, extra = (res if isinstance(res, tuple) else (res, {}))
    return [_expr(v) for v in values], extra


#: Random points tried when looking for a witness of a case whose identity is not 0.
WITNESS_TRIES = 300

#: Denominator bound when an LP multiplier is turned into an exact rational certificate.
CERT_DENOMINATOR = 10**4


def _oriented(signs: dict):
    """The one-sided conditions of a case as (f, strict): f > 0 (strict) or f >= 0."""
    out = []
    for P, allowed in signs.items():
        if allowed == frozenset({1}):
            out.append((P, True))
        elif allowed == frozenset({-1}):
            out.append((-P, True))
        elif allowed == frozenset({0, 1}):
            out.append((P, False))
        elif allowed == frozenset({-1, 0}):
            out.append((-P, False))
    return out


def _forced(signs: dict, symbols):
    """Farkas-style certificates over the case's one-sided conditions and the positive monomials.

    Finds non-negative rational multipliers with sum_i lam_i f_i + sum_j mu_j m_j == 0 identically
    (checked exactly). If some strict f_i or some monomial m_j gets a positive multiplier the case
    is empty; otherwise every weak f_i with a positive multiplier is forced to 0 on the case.
    Returns (empty, [polynomials forced to 0])."""
    from scipy.optimize import linprog

    conds = _oriented(signs)
    if not conds:
        return False, []
    eqs = [P for P, allowed in signs.items() if allowed == frozenset({0})]
    syms = list(symbols)
    polys = [sp.Poly(f, *syms).as_dict() for f, _ in conds]
    eq_polys = [sp.Poly(P, *syms).as_dict() for P in eqs]
    monos = sorted({m for d in polys + eq_polys for m in d})
    gens = polys + [{m: 1} for m in monos] + eq_polys
    strict = [st for _, st in conds] + [True] * len(monos) + [False] * len(eqs)
    bounds = [(0, 1)] * (len(polys) + len(monos)) + [(-1, 1)] * len(eqs)  # ties: multiplier of any sign
    n = len(gens)
    A_eq = np.array([[float(g.get(m, 0)) for g in gens] for m in monos])
    empty, forced = False, []
    for i in range(len(polys) + len(monos)):
        c = np.zeros(n)
        c[i] = -1.0
        res = linprog(c, A_eq=A_eq, b_eq=np.zeros(len(monos)), bounds=bounds, method="highs")
        if not res.success or -res.fun < 1e-9:
            continue
        lam = [Fraction(float(x)).limit_denominator(CERT_DENOMINATOR) if abs(x) > 1e-12 else Fraction(0)
               for x in res.x]
        tot = {}
        for l, g in zip(lam, gens):
            if l:
                for m, co in g.items():
                    co = sp.Rational(co)
                    tot[m] = tot.get(m, 0) + l * Fraction(int(co.p), int(co.q))
        if any(v != 0 for v in tot.values()):
            continue  # NOTE: rounding broke the certificate; claim nothing from it
        if any(l > 0 and st for l, st in zip(lam, strict)):  # ties have st False
            return True, []
        forced += [conds[j][0] for j, l in enumerate(lam[:len(conds)]) if l > 0]
    return empty, forced


def _empty_on_variety(signs: dict, sol: dict, free) -> bool:
    """Exact emptiness certificate for a case after substituting the solution of its ties: the
    one-sided conditions and the positivity of every solved symbol, rewritten in the free symbols
    (numerator times denominator keeps the sign), fed to :func:`_forced`."""
    conds = list(_oriented(signs)) + [(var, True) for var in sol]
    new: dict = {}
    for f, strict in conds:
        g = sp.cancel(sp.together(f.subs(sol)))
        n, d = sp.fraction(g)
        P = sp.expand(n * d)
        if P.is_number:
            if P < 0 or (P == 0 and strict):
                return True
            continue
        syms = sorted(P.free_symbols, key=lambda x: x.name)
        sgn = 1
        if sp.Poly(P, *syms).LC() < 0:
            P, sgn = sp.expand(-P), -1
        allowed = frozenset({sgn}) if strict else frozenset({0, sgn})
        new[P] = new.get(P, frozenset({-1, 0, 1})) & allowed
        if not new[P]:
            return True
    empty, _ = _forced(new, free)
    return empty


def check_identities(cases, symbols, seed: int = 0) -> dict:
    """Simplify every identity of every case; returns counts per status (and sets each status).

    Statuses: ``zero`` (every identity is the zero rational function), ``zero-on-variety`` (zero
    after substituting the ties the case forces), ``empty`` (an exact certificate shows no point
    of the domain is in the case), ``refuted`` (a witness point violates an identity), ``not
    settled``."""
    rng = random.Random(seed)
    symbols = list(symbols)
    counts = {"zero": 0, "zero-on-variety": 0, "empty": 0, "refuted": 0, "not settled": 0}
    for c in cases:
        if c.status == "empty":  # certified during the enumeration
            counts["empty"] += 1
            continue
        vals0 = [sp.cancel(sp.together(v)) for v in c.values]
        if all(v == 0 for v in vals0):
            c.status = "zero"
            counts["zero"] += 1
            continue
        empty, forced = _forced(c.signs, symbols)
        if empty:
            c.status = "empty"
            counts["empty"] += 1
            continue
        zero_polys = [P for P, s in c.signs.items() if s == frozenset({0})] + forced
        sol: dict = {}
        ok_sub = True
        for P in zero_polys:
            P2 = sp.expand(sp.fraction(sp.cancel(sp.together(P.subs(sol))))[0]) if sol else P
            if P2 == 0:
                continue
            var = next((v for v in sorted(P2.free_symbols, key=lambda x: x.name)
                        if sp.Poly(P2, v).degree() == 1), None)
            if var is None:
                ok_sub = False
                break
            val = sp.solve(P2, var)[0]
            sol = {k: sp.cancel(v.subs(var, val)) for k, v in sol.items()}
            sol[var] = val
        if ok_sub and sol:
            vals = [sp.cancel(sp.together(v.subs(sol))) for v in c.values]
            if all(v == 0 for v in vals):
                c.status = "zero-on-variety"
                counts[c.status] += 1
                continue
            if _empty_on_variety(c.signs, sol, [x for x in symbols if x not in sol]):
                c.status = "empty"
                counts["empty"] += 1
                continue
        # NOTE: the identity is not 0 on this case: look for a point of the case (a witness).
        c.status = "not settled"
        fns = {P: sp.lambdify(symbols, P, modules="math") for P in c.signs}
        vfns = [sp.lambdify(symbols, v, modules="math") for v in c.values]
        for _ in range(WITNESS_TRIES):
            pt = [Fraction(rng.randint(1, 60), rng.randint(1, 60)) for _ in symbols]
            call = lambda f: f(*pt)  # noqa: E731
            if not all((lambda v: ((v > 0) - (v < 0)) in allowed)(call(fns[P])) for P, allowed in c.signs.items()):
                continue
            try:
                if any(call(f) != 0 for f in vfns):
                    c.status, c.witness = "refuted", dict(zip(symbols, pt))
                    break
            except ZeroDivisionError:
                continue
        counts[c.status] += 1
    return counts
