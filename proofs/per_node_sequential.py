"""Claim: sequential verification (one-hot deterministic candidates, then a sampled candidate
s ~ L accepted with min(1, p(s)/L(s)), residual norm((p - L)+)) is lossless at a node, with the
closed-form acceptance

    p(G) + sum_{x not in G} min(p(x), (1 - p(G)) L(x)),

for deterministic candidates G followed by one candidate sampled from L = q restricted to the
complement of G. Symbolic p and q over V = 3 (``p(x) = a_x / sum a``, ``q(x) = b_x / sum b``,
a, b > 0); the library rule :func:`rheotheory.verify.sequential` runs on sympy expressions
(proofs/symcase.py) and every sign case of its min/max is simplified to exactly 0.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from claimlib import PROVED, FAILED, claim, finish  # noqa: E402
from pernode import run_det_plus_sample  # noqa: E402

from rheotheory.verify import sequential  # noqa: E402


def closed_form(p, G, L):
    pG = sum((p[t] for t in G), 0)
    return pG + sum(min(p[x], (1 - pG) * L[x]) for x in range(len(p)) if x not in G)


def main():
    ok, ev = run_det_plus_sample(sequential, closed_form, heads=([], [0]))
    claim("sequential-lossless", "sequential: lossless at a node for deterministic G then one s ~ q restricted "
          "to the complement of G", PROVED if ok else FAILED, ev)
    claim("sequential-acceptance", "sequential: acceptance = p(G) + sum_{x not in G} min(p(x), (1 - p(G)) L(x))",
          PROVED if ok else FAILED, ev)


if __name__ == "__main__":
    main()
    finish()
