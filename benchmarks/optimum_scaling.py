"""Time of the tree-level optimum (`rheo optimum`) against instance and tree size; prints a table.

For each case, the LP of docs/theory.md section 7.2 is built and solved on ``--seeds`` random
instances (``random_pair(V, D, seed)``, exact rationals) and re-checked in rationals; the table
gives the LP size (concrete trees, variables, constraints) and the largest wall-clock time of the
seeds, with how many optima were proved exact. Cases beyond the LP caps are reported as refused.

    python3 benchmarks/optimum_scaling.py              # every case, 2 seeds each
    python3 benchmarks/optimum_scaling.py --quick --out x.csv   # the smallest cases, also as CSV

The table (docs/guide/) is rendered from the CSV (recipe ``optimum_scaling`` of ``simulations/recipes.py``).
"""

from __future__ import annotations

import argparse
import time

from rheotheory import random_pair, resolve
from rheotheory.checkpoint import write_rows
from rheotheory.errors import RheoError
from rheotheory.lp_optimum import tree_optimum

#: (V, method spec, (K, D, N)) in growing size.
CASES = [
    (3, "chain", (1, 2, 2)), (5, "chain", (1, 3, 3)), (8, "chain", (1, 3, 3)),
    (3, "eagle", (2, 2, 4)), (5, "eagle", (3, 3, 6)),
    (3, "rheo", (2, 2, 4)), (4, "rheo", (2, 3, 4)), (5, "rheo", (3, 3, 6)),
    (3, "static-iid", (2, 2, 4)), (4, "static-iid", (2, 2, 4)), (5, "static-iid", (2, 3, 5)),
    (3, "static-wor", (2, 2, 4)), (5, "static-wor", (2, 2, 5)),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=2, help="instances per case (default 2; the table shows the max time)")
    ap.add_argument("--quick", action="store_true", help="only the cases of V = 3")
    ap.add_argument("--out", default=None, metavar="CSV", help="also write the table to this CSV")
    args = ap.parse_args()
    rows = []
    head = f"{'V':>2} {'method':<48} {'trees':>6} {'vars':>7} {'rows':>6} {'exact':>5} {'max s':>7}"
    print(head)
    print("-" * len(head))
    for V, spec, size in [c for c in CASES if c[0] == 3 or not args.quick]:
        method = resolve(spec, size=size)
        worst, exact, last = 0.0, 0, None
        try:
            for seed in range(args.seeds):
                t0 = time.perf_counter()
                last = tree_optimum(random_pair(V, method.depth, seed=seed), method)
                worst = max(worst, time.perf_counter() - t0)
                exact += last.exact
        except RheoError as e:
            print(f"{V:>2} {method.describe()[:48]:<48} refused: {e}")
            rows.append(dict(V=V, method=method.describe(), trees="refused", variables="", rows="",
                             exact="", max_seconds=""))
            continue
        rows.append(dict(V=V, method=method.describe(), trees=last.trees, variables=last.variables,
                         rows=last.constraints, exact=f"{exact}/{args.seeds}", max_seconds=round(worst, 2)))
        print(f"{V:>2} {method.describe()[:48]:<48} {last.trees:>6} {last.variables:>7} {last.constraints:>6} "
              f"{exact:>2}/{args.seeds:<2} {worst:>7.2f}")
    if args.out:
        write_rows(rows, args.out)


if __name__ == "__main__":
    main()
