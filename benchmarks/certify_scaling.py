"""Certification time and outcomes vs. equivalence classes for growing instance sizes.

Prints one table row per configuration: raw construction outcomes, lazily enumerated
construction branches, equivalence classes, and wall-clock seconds for the exact certificate.

    python benchmarks/certify_scaling.py            # the standard table
    python benchmarks/certify_scaling.py --quick    # smaller sizes only
"""

from __future__ import annotations

import argparse
import time

from rheotheory import certify, random_pair, resolve

#: (V, K, D, N, method kwargs); the last rheo row is the issue's reference case.
CASES = [
    (3, 2, 2, 4, dict(method="rheo")),
    (4, 3, 3, 8, dict(method="rheo")),
    (5, 3, 3, 10, dict(method="rheo")),
    (6, 3, 4, 12, dict(method="rheo", proxy="next", verifier="ot")),
    (6, 3, 4, 12, dict(method="rheo", proxy="tail", verifier="ot")),
    (6, 3, 4, 12, dict(method="rheo", proxy="min-best-tail", verifier="sequential")),
    (6, 3, 4, 12, dict(method="eagle")),
    (6, 4, 4, 16, dict(method="rheo")),
    (4, 3, 3, 8, dict(method="rheo", head=1)),
    (5, 3, 3, 10, dict(method="rheo", head=1)),
    (7, 4, 4, 16, dict(method="rheo")),
    (4, 3, 3, 8, dict(method="rheo", proxy="true")),
    (5, 3, 3, 10, dict(method="rheo", proxy="true")),
    (4, 0, 3, 0, dict(method="static", shape=[[0], [1], [0, 0], [0, 1], [1, 0], [0, 0, 0]], verifier="rrs-wor")),
    (6, 0, 4, 0, dict(method="chain")),
]
QUICK = 6


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="only the first few cases")
    ap.add_argument("--seeds", type=int, default=3, help="instances per case (default 3; the table shows the max time)")
    args = ap.parse_args()
    cases = CASES[:QUICK] if args.quick else CASES
    header = f"{'V':>2} {'K':>2} {'D':>2} {'N':>3}  {'method':<44} {'outcomes':>10} {'branches':>9} {'classes':>8} {'max s':>7}  lossless"
    print(header)
    print("-" * len(header))
    for V, K, D, N, kw in cases:
        fields = {k: v for k, v in kw.items() if k != "method"}
        method = resolve({"family": kw["method"], **fields}, size=(K, D, N))  # K, D, N where the family has them
        worst, rows = 0.0, []
        for seed in range(args.seeds):
            pair = random_pair(V, D, seed=seed)
            t0 = time.perf_counter()
            cert = certify(pair, method)
            worst = max(worst, time.perf_counter() - t0)
            rows.append(cert)
        name = method.describe().replace(f"K={K} D={D} N={N} ", "")
        oc = max(c.outcomes for c in rows)
        br = max(c.branches for c in rows)
        cl = max(c.classes for c in rows)
        ok = sum(c.lossless for c in rows)
        print(f"{V:>2} {K or '-':>2} {D:>2} {N or '-':>3}  {name:<44} {oc:>10} {br:>9} {cl:>8} {worst:>7.3f}  {ok}/{len(rows)}",
              flush=True)


if __name__ == "__main__":
    main()
