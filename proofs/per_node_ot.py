"""Claims about the OT verifier for deterministic candidates G plus one sampled s ~ L
(L = q restricted to the complement of G): lossless at a node; acceptance
p(G) + sum_{x not in G} min(p(x), L(x)); and that value is the optimal-transport optimum
max over couplings of P(Y in S), Y ~ p, S = G + {s}.

The optimum is computed by the library's :func:`rheotheory.verify.optimum_sets`
(min over token sets T of p(T) + 1 - Q(S subset of T)) on the symbolic law of S built by
:func:`rheotheory.verify.set_law_det_plus_sample`, and compared case by case. That the
min-over-sets value bounds every coupling is weak duality: for any T,
P(Y in S) <= P(Y in T) + P(S not subset of T) = p(T) + 1 - Q(S subset of T).

A negative control checks that the machinery refutes what is false: the same rule told
"s ~ L" while s is really drawn from the size-biased law L(s)^2 / sum L^2 (what a proxy equal to
the token's own probability does to the kept sampled child) must be refuted with a witness.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

from claimlib import FAILED, PROVED, REFUTED, claim, finish  # noqa: E402
from pernode import A, B, V, run_det_plus_sample, run_identities, summarise  # noqa: E402
from symcase import sym_law  # noqa: E402

from rheotheory import laws  # noqa: E402
from rheotheory.verify import (Candidate, acceptance, optimum_sets, ot, output_law,  # noqa: E402
                               set_law_det_plus_sample)

HEADS = ([], [0])


def closed_form(p, G, L):
    return sum((p[t] for t in G), 0) + sum(min(p[x], L[x]) for x in range(len(p)) if x not in G)


def main():
    ok, ev = run_det_plus_sample(ot, closed_form, heads=HEADS)
    claim("ot-lossless", "ot: lossless at a node for deterministic G plus one s ~ q restricted to the complement of G",
          PROVED if ok else FAILED, ev)
    claim("ot-acceptance", "ot: acceptance = p(G) + sum_{x not in G} min(p(x), L(x))", PROVED if ok else FAILED, ev)

    n_all, tot, mism_all, good = 0, {"zero": 0, "zero-on-variety": 0, "empty": 0, "refuted": 0, "not settled": 0}, 0, True
    for G in HEADS:
        def compute(G=G, p=None, q=None):
            p = sym_law(A) if p is None else p
            q = sym_law(B) if q is None else q
            L = laws.restrict(q, G)
            acc = 0
            for s in range(V):
                if s not in G:
                    cands = [Candidate(t) for t in G] + [Candidate(s, L)]
                    acc = acc + L[s] * acceptance(ot(p, cands))
            return [optimum_sets(p, set_law_det_plus_sample(G, L)) - acc]
        ok2, counts, n, mism = run_identities(compute, compute, lambda p, q, G=G: compute(G, p, q))
        good &= ok2
        n_all += n
        mism_all += mism
        for k in tot:
            tot[k] += counts[k]
    ev2 = (f"V={V}, symbolic p and q; G in {list(HEADS)}; optimum_sets(p, law of G + {{s}}) - acceptance(ot): "
           + summarise(tot, n_all) + f"; {mism_all} disagreements with the library at random exact points")
    claim("ot-optimal", "ot attains the optimal-transport value for deterministic-plus-one-sampled candidate sets",
          PROVED if good else FAILED, ev2)

    # negative control: s drawn size-biased, verifier told s ~ L
    G = [0]

    def biased():
        p, q = sym_law(A), sym_law(B)
        L = laws.restrict(q, G)
        z = sum(L[x] * L[x] for x in range(V) if x not in G)
        out = np.array([0] * V, dtype=object)
        for s in range(V):
            if s not in G:
                cands = [Candidate(0), Candidate(s, L)]
                out = out + (L[s] * L[s] / z) * output_law(ot(p, cands), cands)
        return [out[y] - p[y] for y in range(V)]
    from symcase import check_identities, enumerate_cases
    cases = enumerate_cases(biased)
    counts = check_identities(cases, A + B)
    wit = next((c.witness for c in cases if c.status == "refuted"), None)
    st = REFUTED if wit is not None else FAILED
    ev3 = (summarise(counts, len(cases)) + "; witness " +
           (", ".join(f"{k}={v}" for k, v in wit.items()) if wit else "none"))
    claim("control-size-biased-sample", "negative control: ot stays lossless when the kept sampled token is "
          "size-biased (drawn from L^2 / sum L^2) but verified as s ~ L", st, ev3, expected=REFUTED)


if __name__ == "__main__":
    main()
    finish()
