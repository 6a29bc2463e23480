"""How many random instances each RheoSampling proxy x verifier certifies exactly lossless.

For V in {3,4,5}, K in {2,3}, D in {2,3} and every proxy x verifier, certify the method on
``--instances`` random toy pairs (``random_pair(V, D, seed)``, seeds 0..n-1, independent draft
weights) with budget N = 2K and the default head m = K-1, in exact rationals. Writes a CSV with
one row per (V, K, D, proxy, verifier) and prints a table of lossless counts; lossy cells also
give the largest deviation found. The Markdown table ``<out>.md`` (``certify_table.md``) is rendered
from that CSV by ``simulations/recipes.py`` (the same function renders the docs' tables).

    python simulations/certify_table.py                       # 50 instances per cell
    python simulations/certify_table.py --instances 5         # a quick look
    python simulations/certify_table.py --resume              # continue an interrupted run

Each finished cell is logged to ``<out>.partial`` first, so an interrupted run loses at most
the cells in flight and ``--resume`` runs only the others; the CSV is written atomically when
every cell is in. ``--executor dask`` (``--scheduler ADDRESS``) or ``--executor ray`` runs the
cells on a cluster; a cell is exact and seeded by its own instance seeds, so the table is the
same on every executor.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import os
import sys
import time
from pathlib import Path

from recipes import certify_table_md  # simulations/recipes.py: the one renderer of this table
from rheotheory import make_method, certify, random_pair
from rheotheory.checkpoint import RowLog, atomic_open, parse_cell, run_logged
from rheotheory.errors import RheoError
from rheotheory.executors import EXECUTORS
from rheotheory.trees import PROXIES

VERIFIERS = ("onehot", "sequential", "ot")
GRID = [(V, K, D) for V in (3, 4, 5) for K in (2, 3) for D in (2, 3)]

#: Columns of the CSV (one row per cell).
FIELDS = ("V", "K", "D", "N", "proxy", "verifier", "instances", "lossless", "max_deviation", "max_deviation_float",
          "worst_seed", "seconds")


def cell(args):
    V, K, D, proxy, verifier, n = args
    method = make_method("rheo", top_k=K, depth=D, budget=2 * K, proxy=proxy, verifier=verifier)
    lossless, worst, worst_seed = 0, 0, None
    t0 = time.perf_counter()
    for seed in range(n):
        cert = certify(random_pair(V, D, seed=seed), method)
        if cert.lossless:
            lossless += 1
        elif cert.max_deviation > worst:
            worst, worst_seed = cert.max_deviation, seed
    return dict(V=V, K=K, D=D, N=2 * K, proxy=proxy, verifier=verifier, instances=n, lossless=lossless,
                max_deviation=str(worst), max_deviation_float=float(worst), worst_seed=worst_seed,
                seconds=round(time.perf_counter() - t0, 2))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", type=int, default=50)
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "certify_table.csv"))
    ap.add_argument("--resume", action="store_true", help="continue an interrupted run from <out>.partial")
    ap.add_argument("--executor", choices=EXECUTORS, default="process", help="where cells run (default process)")
    ap.add_argument("--scheduler", default=None, metavar="ADDRESS", help="dask scheduler or Ray cluster address")
    args = ap.parse_args()
    jobs = [(V, K, D, pr, ve, args.instances) for (V, K, D), pr, ve in itertools.product(GRID, PROXIES, VERIFIERS)]
    # the slow cells (proxy true/tail at V=5, D=3) first, so the pool stays busy to the end
    jobs.sort(key=lambda j: -(j[0] ** j[2]) * (j[3] in ("true", "tail")))
    key = lambda j: "/".join(map(str, j[:5]))  # noqa: E731
    # NOTE: max_deviation is a fraction ("0", "1/12"): read back as text, as cell() wrote it
    parse = lambda f, t: t if f == "max_deviation" else parse_cell(t)  # noqa: E731
    try:
        log = run_logged(RowLog(args.out, {"program": "certify_table", "instances": args.instances}, FIELDS,
                                resume=args.resume, parse=parse), jobs, key, cell, executor=args.executor,
                         workers=args.workers, scheduler=args.scheduler, desc="cells")
    except RheoError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    except KeyboardInterrupt as e:
        print(f"interrupted: {e or 'nothing kept'}; rerun with --resume", file=sys.stderr)
        raise SystemExit(130) from None
    rows = [log.rows[key(j)] for j in jobs]
    rows.sort(key=lambda r: (r["V"], r["K"], r["D"], PROXIES.index(r["proxy"]), VERIFIERS.index(r["verifier"])))
    with atomic_open(args.out, newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    log.finish()
    md = os.path.splitext(args.out)[0] + ".md"
    with open(md, "w") as f:
        f.write(certify_table_md(Path(args.out).parent, Path(args.out).name) + "\n")
    cols = [(pr, ve) for pr in PROXIES for ve in VERIFIERS]
    print(f"lossless instances out of {args.instances} (rheo, N = 2K, head K-1); CSV: {args.out}")
    print(f"{'V K D':<7}" + "".join(f"{pr[:8] + '/' + ve[:3]:>13}" for pr, ve in cols))
    for V, K, D in GRID:
        by = {(r["proxy"], r["verifier"]): r for r in rows if (r["V"], r["K"], r["D"]) == (V, K, D)}
        print(f"{V} {K} {D}  " + "".join(f"{by[c]['lossless']:>13}" for c in cols))
    print("totals " + "".join(f"{sum(r['lossless'] for r in rows if (r['proxy'], r['verifier']) == c):>13}" for c in cols)
          + f"   (of {args.instances * len(GRID)})")


if __name__ == "__main__":
    main()
