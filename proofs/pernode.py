"""Shared set-ups of the per-node proof scripts (symbolic p, q; the library's rules)."""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import sympy as sp

from symcase import check_identities, enumerate_cases, law_symbols, point_case, sym_law

from rheotheory import laws
from rheotheory.verify import Candidate, acceptance, output_law

V = 3
A = law_symbols("a", V)  # target weights: p(x) = a_x / sum a
B = law_symbols("b", V)  # draft weights: q(x) = b_x / sum b

#: Random exact instances on which each case formula is compared with the library on Fractions.
CROSS_CHECKS = 25


def summarise(counts: dict, n_cases: int) -> str:
    return (f"{n_cases} cases: {counts['zero']} reduce to 0, {counts['zero-on-variety']} reduce to 0 on their tie "
            f"variety, {counts['empty']} certified empty, {counts['refuted']} refuted, "
            f"{counts['not settled']} not settled")


def cross_check(compute_sym, compute_exact, seed: int = 0) -> int:
    """Evaluate the symbolic case formula at random rational points and compare with the library
    evaluated on exact Fractions. Returns the number of disagreements."""
    rng = random.Random(seed)
    bad = 0
    for _ in range(CROSS_CHECKS):
        wa = [rng.randint(1, 12) for _ in A]
        wb = [rng.randint(1, 12) for _ in B]
        pt = {**{s: sp.Integer(w) for s, w in zip(A, wa)}, **{s: sp.Integer(w) for s, w in zip(B, wb)}}
        vals, _ = point_case(compute_sym, pt)
        sym_at = [sp.nsimplify(sp.cancel(v.subs(pt))) for v in vals]
        p = np.array([Fraction(w, sum(wa)) for w in wa], dtype=object)
        q = np.array([Fraction(w, sum(wb)) for w in wb], dtype=object)
        ex = compute_exact(p, q)
        if [sp.Rational(x.numerator, x.denominator) if isinstance(x, Fraction) else sp.Integer(x) for x in ex] != sym_at:
            bad += 1
    return bad


def run_det_plus_sample(rule, closed_form, heads=([], [0])):
    """Deterministic candidates G (in order) then one candidate s ~ L = q restricted to the
    complement of G. Identities: sum_s L(s) output_law - p (V entries), acceptance - closed form,
    total mass - 1. Returns (ok, evidence)."""
    n_cases = 0
    tot = {"zero": 0, "zero-on-variety": 0, "empty": 0, "refuted": 0, "not settled": 0}
    mism = 0
    for G in heads:
        def compute(G=G, p=None, q=None):
            p = sym_law(A) if p is None else p
            q = sym_law(B) if q is None else q
            L = laws.restrict(q, G)
            out = np.array([0] * V, dtype=object)
            acc = 0
            mass = 0
            for s in range(V):
                if s in G:
                    continue
                cands = [Candidate(t) for t in G] + [Candidate(s, L)]
                tr = rule(p, cands)
                out = out + L[s] * output_law(tr, cands)
                acc = acc + L[s] * acceptance(tr)
                mass = mass + L[s] * (tr.total() - 1)
            return [out[y] - p[y] for y in range(V)] + [acc - closed_form(p, G, L), mass]
        cases = enumerate_cases(compute)
        counts = check_identities(cases, A + B)
        n_cases += len(cases)
        for k in tot:
            tot[k] += counts[k]
        mism += cross_check(lambda G=G: _acc_only(compute(G)), lambda p, q, G=G: _acc_only(compute(G, p, q)))
    ok = tot["zero"] + tot["zero-on-variety"] + tot["empty"] == n_cases and mism == 0
    ev = (f"V={V}, symbolic p and q; G in {list(heads)}; " + summarise(tot, n_cases) +
          f"; the case formulas agree with the library on exact Fractions at {CROSS_CHECKS * len(heads)} random "
          f"points ({mism} disagreements)")
    return ok, ev


def _acc_only(vals):
    return vals[V:V + 1]


def run_identities(compute, cross_sym=None, cross_exact=None):
    """Enumerate the cases of ``compute`` and check its identities; returns (ok, counts, n_cases, mism)."""
    cases = enumerate_cases(compute)
    counts = check_identities(cases, A + B)
    mism = cross_check(cross_sym, cross_exact) if cross_sym is not None else 0
    ok = counts["zero"] + counts["zero-on-variety"] + counts["empty"] == len(cases) and mism == 0
    return ok, counts, len(cases), mism
