"""Claim: EAGLE's one-hot verifier is lossless at a node for every fixed candidate list.

Symbolic p over V = 3 (``p(x) = a_x / sum a``, a_x > 0) and the library rule
:func:`rheotheory.verify.onehot` evaluated on sympy expressions (proofs/symcase.py). For every
candidate list of distinct tokens (all orders, lengths 1..3) the node's output law minus p
simplifies to exactly 0 in every case, and the acceptance equals the closed form p(G).
Because the identity holds for every fixed list, it also holds for any random candidate list
drawn independently of the verifier's coins (EAGLE's deterministic top-K, or sampled tokens).
"""

import itertools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from claimlib import PROVED, FAILED, claim, finish  # noqa: E402
from symcase import check_identities, enumerate_cases, law_symbols, sym_law  # noqa: E402

from rheotheory.verify import Candidate, acceptance, onehot, output_law  # noqa: E402

V = 3
a = law_symbols("a", V)


def main():
    lists = [list(c) for k in range(1, V + 1) for c in itertools.permutations(range(V), k)]
    total_cases = 0
    bad = []
    for G in lists:
        def compute(G=G):
            p = sym_law(a)
            cands = [Candidate(t) for t in G]
            tr = onehot(p, cands)
            out = output_law(tr, cands)
            closed = sum(p[t] for t in G)
            return [out[y] - p[y] for y in range(V)] + [acceptance(tr) - closed, tr.total() - 1]
        cases = enumerate_cases(compute)
        counts = check_identities(cases, a)
        total_cases += len(cases)
        if counts["zero"] + counts["zero-on-variety"] + counts["empty"] != len(cases):
            bad.append((G, counts))
    ev = (f"V={V}, symbolic p; {len(lists)} candidate lists (all orders, lengths 1..{V}); "
          f"{total_cases} cases, output law - p, acceptance - p(G) and total mass - 1 simplify to 0 in each")
    ok = not bad
    claim("onehot-lossless", "onehot: the output law at a node equals p for every fixed candidate list",
          PROVED if ok else FAILED, ev if ok else f"{ev}; failing: {bad}")
    claim("onehot-acceptance", "onehot: acceptance = p(G), G the candidate tokens",
          PROVED if ok else FAILED, ev if ok else f"failing: {bad}")


if __name__ == "__main__":
    main()
    finish()
