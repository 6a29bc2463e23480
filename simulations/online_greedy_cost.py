"""Why rheo-online stays below EAGLE's tree at T = 0 on the V = 32k grid: with a greedy target a
step of a fixed tree accepts a length fixed by its context, so exploring is all the paired
difference sees (docs/guide/adaptive.md, "Why the T = 0 cells stay below").

On the T = 0 cells of recipe ``online_vs_best`` (seed 3, 400 steps, as committed), it runs
rheo-online, EAGLE's tree (the best arm there) and the two sampled arms, each with the sweep's
pair, contexts and seed, and reports per cell:

- ``explore_pulls``: rheo-online's steps on an arm other than EAGLE's tree;
- ``nonzero_on_eagle``: steps on EAGLE's tree whose length differs from EAGLE's own run at that
  context (0: at T = 0 the two are the same step, so the paired difference is 0 there);
- per sampled arm, the paired loss against EAGLE's tree over the 400 contexts (mean ``mu``, sd
  ``sd``) and ``k_detect`` = 1.96^2 sd^2 / mu^2: the pulls after which a one-sided 97.5% test on
  the arm's own paired losses says it is worse, the most favourable case for a learner (a bandit
  does not see EAGLE's length at the contexts where it explored);
- ``z_at_detection``: the paired difference's z-score had rheo-online explored each sampled arm
  exactly ``k_detect`` times and run EAGLE's tree otherwise, sum_a k_a mu_a / sqrt(sum_a k_a
  (mu_a^2 + sd_a^2)), independent of the run's length; above 1.96 the cell is significantly below
  with the least exploration that learns at that level; ``z_online``: rheo-online's own.

    python simulations/online_greedy_cost.py            # the four T = 0 cells, 400 steps
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from rheotheory.checkpoint import write_rows
from rheotheory.montecarlo import Z_95
from rheotheory.sweep import read_csv, sweep_method

from online_horizon import GRID, NEW, _cell, lengths  # the rebuild of a grid row's run, and its per-step record

HERE = os.path.dirname(__file__)
BEST, SAMPLED = "eagle", ("static-wor", "rheo-sampled")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--grid", default=GRID)
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--out", default=os.path.join(HERE, "results", "online_greedy_cost.csv"))
    args = ap.parse_args()
    if args.workers < 1 or args.steps < 2:
        print("online_greedy_cost: --workers must be at least 1 and --steps at least 2", file=sys.stderr)
        sys.exit(2)
    grid = read_csv(args.grid)
    cells = [c for c in dict.fromkeys(_cell(r) for r in grid) if c[1] == 0.0]
    if not cells:
        print(f"online_greedy_cost: {args.grid} has no T = 0 cell", file=sys.stderr)
        sys.exit(2)
    methods = (BEST, NEW) + SAMPLED
    jobs = []
    for c in cells:
        here = {r["method"]: r for r in grid if _cell(r) == c}
        jobs += [(here[m], m, args.steps) for m in methods]
    with ProcessPoolExecutor(args.workers) as ex:
        runs = iter(ex.map(lengths, jobs))
        got = [{m: next(runs) for m in methods} for _ in cells]
    out = []
    for c, g in zip(cells, got):
        eagle = np.asarray(g[BEST][0], float)
        online, arms = np.asarray(g[NEW][0], float), g[NEW][1]
        key = sweep_method(BEST, c[2], c[1]).run_key()
        on_best = np.array([k == key for k in arms])
        d = online - eagle
        row = dict(mismatch=c[0], temperature=c[1], top_k=c[2][0], depth=c[2][1], budget=c[2][2], steps=args.steps,
                   explore_pulls=int((~on_best).sum()), nonzero_on_eagle=int((d[on_best] != 0).sum()),
                   z_online=float(d.mean() / (d.std(ddof=1) / math.sqrt(len(d)))))
        num = den = 0.0
        for a in SAMPLED:
            loss = eagle - np.asarray(g[a][0], float)
            mu, sd = float(loss.mean()), float(loss.std(ddof=1))
            k = Z_95 ** 2 * sd ** 2 / mu ** 2 if mu > 0 else math.inf
            row.update({f"{a}_mu": mu, f"{a}_sd": sd, f"{a}_k_detect": k})
            num, den = num + k * mu, den + k * (mu * mu + sd * sd)
        row["z_at_detection"] = num / math.sqrt(den) if math.isfinite(den) and den > 0 else math.nan
        out.append(row)
        print(f"{c[0]:<5} {','.join(map(str, c[2])):<8} explored {row['explore_pulls']:>3} steps "
              f"(nonzero on EAGLE steps: {row['nonzero_on_eagle']}), z {row['z_online']:+.2f}; k_detect "
              + ", ".join(f"{a} {row[a + '_k_detect']:.1f}" for a in SAMPLED)
              + f"; z at detection {row['z_at_detection']:.2f}")
    write_rows(out, args.out)


if __name__ == "__main__":
    main()
