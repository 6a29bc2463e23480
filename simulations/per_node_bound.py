"""The best per-node verifier's bound over the tree-level optimum on larger trees than the
optimum table's (docs/theory.md section 7.4).

For each fixed-shape family at a few sizes, on ``--instances`` random toy pairs
(``random_pair(V, 3, seed)``, seeds 0..n-1, V = 3): the exact tree-level optimum
(:func:`rheotheory.lp_optimum.tree_optimum`, rational re-check required) and the rigorous upper
bound on every per-node verifier (:func:`rheotheory.node_bound.per_node_bound`); the row gives
their ratio, mean and minimum. Below 0.995 on a family means no verifier deciding node by node
reaches 0.995 of the optimum there, whatever it knows.

Writes ``simulations/results/per_node_bound.csv``.

    python simulations/per_node_bound.py                 # 50 instances per row
    python simulations/per_node_bound.py --instances 2   # a quick look
"""

from __future__ import annotations

import argparse
import os
import sys
from concurrent.futures import ProcessPoolExecutor

from tqdm import tqdm

from rheotheory import random_pair, resolve
from rheotheory.checkpoint import write_rows
from rheotheory.lp_optimum import tree_optimum
from rheotheory.node_bound import fixed_shape, per_node_bound

V = 3
HORIZON = 3
#: (label, preset spec, (K, D, N)): every family of a fixed shape at two or three sizes.
ROWS = (
    ("static-iid", "static-iid", (2, 2, 4)),
    ("static-iid", "static-iid", (3, 2, 6)),
    ("static-iid", "static-iid", (2, 3, 6)),
    ("static-wor", "static-wor", (2, 2, 4)),
    ("static-wor", "static-wor", (3, 2, 6)),
    ("static-wor", "static-wor", (2, 3, 6)),
    ("chain", "chain", (1, 2, 2)),
    ("chain", "chain", (1, 3, 3)),
    ("multichain", "multichain", (2, 2, 4)),
    ("multichain", "multichain:width=3", (3, 2, 6)),
    ("multichain", "multichain", (2, 3, 6)),
)
RESULTS = os.path.join(os.path.dirname(__file__), "results")


def row(args):
    label, spec, size, n = args
    method = resolve(spec, size=size)
    ratios, exact = [], 0
    for seed in range(n):
        pair = random_pair(V, HORIZON, seed=seed)
        opt = tree_optimum(pair, method)
        exact += opt.exact
        ratios.append(per_node_bound(pair, method).upper / opt.value)
    return dict(family=label, method=method.describe(), nodes=method.nodes, depth=max(len(t) for t in fixed_shape(method)[0]),
                V=V, instances=n, optimum_exact=exact, bound_mean=float(sum(ratios)) / n, bound_min=float(min(ratios)),
                below_0995=sum(r < 0.995 for r in ratios))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", type=int, default=50)
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--out", default=os.path.join(RESULTS, "per_node_bound.csv"))
    args = ap.parse_args()
    if args.instances < 1 or args.workers < 1:
        print("per_node_bound: --instances and --workers must be at least 1", file=sys.stderr)
        sys.exit(2)
    jobs = [(label, spec, size, args.instances) for label, spec, size in ROWS]
    with ProcessPoolExecutor(args.workers) as ex:
        rows = list(tqdm(ex.map(row, jobs), total=len(jobs), desc="rows", file=sys.stderr))
    write_rows(rows, args.out)
    for r in rows:
        print(f"{r['family']:<11} N={r['nodes']:<2} D={r['depth']}  {r['method']:<60} bound/optimum mean "
              f"{r['bound_mean']:.4f} min {r['bound_min']:.4f}  below 0.995: {r['below_0995']}/{r['instances']}  "
              f"exact optima {r['optimum_exact']}/{r['instances']}")


if __name__ == "__main__":
    main()
