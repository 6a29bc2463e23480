"""How many random instances adaptive RheoSampling certifies exactly lossless, with its negative controls.

For V in {3,4,5}, K in {2,3,4}, D in {2,3} and every variant below, certify the method on
``--instances`` random toy pairs (``random_pair(V, D, seed)``, seeds 0..n-1) with budget N = 2K in
exact rationals (docs/theory.md section 4: every difference exactly 0). Modelled on
``simulations/certify_table.py``; writes a CSV with one row per (V, K, D, variant) and a Markdown
table of lossless counts.

What ``rheo-adaptive`` runs at a target temperature T > 0 (docs/theory.md section 2.7) and
the family's own head rules, verified as registered, then the negative controls:

- ``run-T>=1``: what the preset runs for T >= 1: head 0 (every slot sampled without
  replacement), tail proxy, Traversal Verification;
- ``run-0.5<=T<1``: what it runs for 0.5 <= T < 1: the ``rheo-tuned`` tree (head 1, tail proxy,
  fillers, ``ot``);
- ``run-T<0.5``: what it runs for T < 0.5: the EAGLE tree, ``onehot``;
- ``head-T0.5``: the family's predicted head at t_hat = 0.5 (m >= 0), ``ot-wor``;
- ``threshold``: head by the threshold rule (q >= 1/4), ``ot-wor``;
- ``threshold-seq`` (expected lossy): the same tree verified by ``sequential`` (the head checked
  before the samples: a sample's subtree can push a head sibling out, docs/theory.md section 8);
- ``trav-ot-head`` (expected lossy): the threshold tree verified by ``traversal-ot`` (Traversal
  Verification visiting the samples first, docs/theory.md section 7.1);
- ``true-proxy`` (expected lossy): the samples scored by their own draft probability.

    python simulations/certify_adaptive.py                        # 50 instances per cell: the published table
    python simulations/certify_adaptive.py --instances 5          # a quick look
    python simulations/certify_adaptive.py --cell-seconds 120     # cap each cell's time

The published table (``simulations/results/certify_adaptive.csv`` and ``.md``, recipe
``certify_adaptive`` of ``simulations/recipes.py``) is the first command: every cell is a pure
function of (V, K, D, variant, instances, max branches), so it is the same on every machine. The
Markdown is rendered from the CSV by the renderer that also fills docs/guide/adaptive.md and
docs/theory.md.

``--cell-seconds`` stops a cell after the instance in flight once that many seconds have passed,
and ``--max-branches`` at an instance whose enumeration grows past that many construction branches
(the ``true`` proxy draws every sample at creation, so its enumeration can explode); the row then
says how many instances ran (``instances``) and why it stopped (``stopped``), so the table never
claims more than was certified. A time cap makes the counts depend on the machine's speed, so it
is for looking, not for the published table.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from recipes import certify_adaptive_md  # simulations/recipes.py: the one renderer of this table

from rheotheory import certify, make_method, random_pair
from rheotheory.errors import RheoError

GRID = [(V, K, D) for V in (3, 4, 5) for K in (2, 3, 4) for D in (2, 3)]

#: variant name -> (family, method fields, expected lossless?)
VARIANTS = {
    "run-T>=1": ("adaptive", dict(head=0, proxy="tail", verifier="traversal"), True),
    "run-0.5<=T<1": ("rheo", dict(head=1, proxy="tail", fillers="rank", verifier="ot"), True),
    "run-T<0.5": ("eagle", dict(verifier="onehot"), True),
    "head-T0.5": ("adaptive", dict(head="predicted", proxy="tail", t_hat="0.5", verifier="ot-wor"), True),
    "threshold": ("adaptive", dict(head="threshold", threshold="1/4", proxy="tail", verifier="ot-wor"), True),
    "threshold-seq": ("adaptive", dict(head="threshold", threshold="1/4", proxy="tail", verifier="sequential"), False),
    "trav-ot-head": ("adaptive", dict(head="threshold", threshold="1/4", proxy="tail", verifier="traversal-ot"),
                     False),
    "true-proxy": ("adaptive", dict(head="threshold", threshold="1/4", proxy="true", verifier="ot-wor"), False),
}

FIELDS = ("V", "K", "D", "N", "variant", "description", "instances", "lossless", "max_deviation",
          "max_deviation_float", "worst_seed", "seconds", "stopped")


def cell(args):
    V, K, D, variant, n, cap, max_branches = args
    family, fields, _ = VARIANTS[variant]
    method = make_method(family, top_k=K, depth=D, budget=2 * K, **fields)
    lossless, done, worst, worst_seed = 0, 0, 0, None
    t0 = time.perf_counter()
    stopped = ""
    for seed in range(n):
        try:
            cert = certify(random_pair(V, D, seed=seed), method, max_branches=max_branches)
        except RheoError:  # NOTE: over --max-branches: the cell ends there, and says so
            stopped = f"seed {seed} over {max_branches} branches"
            break
        done += 1
        if cert.lossless:
            lossless += 1
        elif cert.max_deviation > worst:
            worst, worst_seed = cert.max_deviation, seed
        if cap and time.perf_counter() - t0 > cap:
            stopped = f"--cell-seconds after {done}"
            break
    return dict(V=V, K=K, D=D, N=2 * K, variant=variant, description=method.describe(), instances=done,
                lossless=lossless, max_deviation=str(worst), max_deviation_float=float(worst),
                worst_seed=worst_seed, seconds=round(time.perf_counter() - t0, 2), stopped=stopped)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", type=int, default=50)
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--cell-seconds", type=float, default=0, help="stop a cell after this long (0: never)")
    ap.add_argument("--max-branches", type=int, default=200_000,
                    help="stop a cell at an instance whose enumeration exceeds this many construction branches")
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "certify_adaptive.csv"))
    args = ap.parse_args()
    jobs = [(V, K, D, va, args.instances, args.cell_seconds, args.max_branches) for (V, K, D), va in itertools.product(GRID, args.variants)]
    jobs.sort(key=lambda j: -(j[0] ** j[2]) * j[1])  # the slow cells first
    rows = []
    with ProcessPoolExecutor(args.workers) as ex:
        futs = [ex.submit(cell, j) for j in jobs]
        for f in as_completed(futs):
            rows.append(f.result())
            r = rows[-1]
            print(f"{r['V']} {r['K']} {r['D']} {r['variant']:<14} {r['lossless']}/{r['instances']} "
                  f"max dev {r['max_deviation']} ({r['seconds']} s)", flush=True)
    order = list(VARIANTS)
    rows.sort(key=lambda r: (r["V"], r["K"], r["D"], order.index(r["variant"])))
    with open(args.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    md = os.path.splitext(args.out)[0] + ".md"
    text = certify_adaptive_md(Path(args.out).parent, Path(args.out).name)
    with open(md, "w") as f:
        f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
