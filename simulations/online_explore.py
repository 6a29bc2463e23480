"""How much should rheo-online explore? Its exploration scale (``explore``) studied on a design
seed, apart from the grid it is judged on (docs/guide/adaptive.md, "How much to explore").

On the cells of the V = 32k grid of recipe ``online_vs_best`` (both mismatch levels, T = 0, 0.5,
1, 1.5, (K, D, N) = 4,4,16 and 10,6,60) but with the design seed (``--seed``, default 0: other
pairs and contexts than the grid's seed 3), every distinct arm of rheo-online is run twice over
the same ``--steps`` contexts with independent draws (``run_steps(draw_seed=...)``): the first run
is the arm as a fixed method, the second the lengths the policy receives when it plays that arm.
Each configuration (rule, explore) is then replayed with the real policy
(``OnlinePolicy``) over ``--policy-seeds`` seeds of its own draws: at step s it plays the arm it
chooses and receives that arm's second-run length at s. At each checkpoint n it is compared, on
the n paired steps, with the best arm in hindsight (the highest first-run tau over those steps):
the paired 95% interval (mean +- 1.96 sd / sqrt(n)) says whether it is significantly below.
Reported per configuration and n: cells below (mean over policy seeds, at T = 0 and T > 0, least
and most), the policy seeds with no cell below, and the mean regret per step.

A replay is not a run of the method (its draws come from the recordings, not a live generator)
but plays by the same rule on the same kind of steps; the chosen scale is then run for real on
the committed grid (recipe ``online_horizon_explore``).

    python simulations/online_explore.py                    # seed 0, 1000 steps, 10 policy seeds
    python simulations/online_explore.py --steps 40 --checkpoints 20 40 --policy-seeds 2 --explore 1 0
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from concurrent.futures import ProcessPoolExecutor

import numpy as np
from tqdm import tqdm

from rheotheory.checkpoint import write_rows
from rheotheory.montecarlo import Z_95, run_steps
from rheotheory.sweep import read_csv, sweep_method

from adaptive_vs_best import _row_run  # the one rebuild of a sweep row's run
from online_horizon import ARMS, GRID, NEW, _cell

HERE = os.path.dirname(__file__)
#: The second run's draw seed is the design seed plus this (its own stream, the same contexts).
DRAW_OFFSET = 1000


def record(job) -> np.ndarray:
    """Per-step |Z| of one arm on one cell: the first (stream 0) or the second (stream 1) run."""
    row, arm, steps, stream = job
    pair, method = _row_run(row, arm)
    seed = int(row["seed"])
    recs: list = []
    run_steps(pair, method, steps, seed=seed, contexts=True, records=recs,
              draw_seed=None if stream == 0 else seed + DRAW_OFFSET)
    return np.array([len(r.z) for r in recs], dtype=np.int64)


def replay(job) -> list[dict]:
    """One configuration and policy seed over every cell: the verdict per cell and checkpoint."""
    spec, pseed, cells, checkpoints = job
    out = []
    for (mm, t, tree), runs in cells:
        method = sweep_method(spec, tree, t)
        policy = method.policy(pseed)
        names = {m.run_key(): a for a in runs for m in [sweep_method(a, tree, t)]}
        steps = len(next(iter(runs.values()))[0])
        got = np.empty(steps)
        for s in range(steps):
            m = policy.choose()
            length = int(runs[names[m.run_key()]][1][s])
            got[s] = length
            policy = policy.after(m, tuple(range(length)))
        for n in checkpoints:
            best = max(runs, key=lambda a: runs[a][0][:n].mean())
            d = got[:n] - runs[best][0][:n]
            mean, half = float(d.mean()), Z_95 * float(d.std(ddof=1)) / math.sqrt(n)
            out.append(dict(cell=(mm, t, tree), steps=n, regret=-mean, worse=mean + half < 0))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0, help="design seed of the pairs and contexts (default 0)")
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--checkpoints", type=int, nargs="+", default=[200, 400, 1000])
    ap.add_argument("--explore", type=float, nargs="+", default=[1, 0.7, 0.5, 0.3, 0.2, 0.1, 0])
    ap.add_argument("--rules", nargs="+", default=["thompson", "ucb1"], choices=["thompson", "ucb1"])
    ap.add_argument("--policy-seeds", type=int, default=10)
    ap.add_argument("--grid", default=GRID)
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--out", default=os.path.join(HERE, "results", "online_explore.csv"))
    args = ap.parse_args()
    if args.workers < 1 or args.policy_seeds < 1 or args.steps < 2 or args.seed < 0:
        print("online_explore: --workers and --policy-seeds must be at least 1, --steps at least 2, --seed at least 0",
              file=sys.stderr)
        sys.exit(2)
    if any(c < 2 or c > args.steps for c in args.checkpoints):
        print(f"online_explore: checkpoints must lie in 2..{args.steps}", file=sys.stderr)
        sys.exit(2)
    if any(not (e >= 0 and math.isfinite(e)) for e in args.explore):
        print("online_explore: --explore values must be finite and >= 0", file=sys.stderr)
        sys.exit(2)
    grid = read_csv(args.grid)
    plan, jobs = [], []
    for c in dict.fromkeys(_cell(r) for r in grid):
        here = {r["method"]: dict(r, seed=str(args.seed)) for r in grid if _cell(r) == c}
        arms, keys = [], set()
        for a in ARMS:
            key = sweep_method(a, c[2], c[1]).run_key()
            if key not in keys:
                arms.append(a)
                keys.add(key)
        plan.append((c, arms))
        jobs += [(here[a], a, args.steps, stream) for a in arms for stream in (0, 1)]
    with ProcessPoolExecutor(args.workers) as ex:
        runs = iter(tqdm(ex.map(record, jobs), total=len(jobs), desc="arm runs", file=sys.stderr))
        cells = [((c[0], c[1], c[2]), {a: (next(runs), next(runs)) for a in arms}) for c, arms in plan]
        configs = [(rule, e) for rule in args.rules for e in args.explore]
        work = [(f"{NEW}:rule={rule}:explore={e:g}", p, cells, args.checkpoints)
                for rule, e in configs for p in range(args.policy_seeds)]
        done = list(tqdm(ex.map(replay, work), total=len(work), desc="replays", file=sys.stderr))
    out = []
    for i, (rule, e) in enumerate(configs):
        mine = done[i * args.policy_seeds:(i + 1) * args.policy_seeds]
        for n in args.checkpoints:
            per_seed = [[r for r in rs if r["steps"] == n] for rs in mine]
            worse = [sum(r["worse"] for r in rs) for rs in per_seed]
            worse0 = [sum(r["worse"] for r in rs if r["cell"][1] == 0) for rs in per_seed]
            row = dict(rule=rule, explore=e, steps=n, policy_seeds=args.policy_seeds, cells=len(per_seed[0]),
                       worse_mean=float(np.mean(worse)), worse_t0_mean=float(np.mean(worse0)),
                       worse_tpos_mean=float(np.mean(worse) - np.mean(worse0)), worse_min=min(worse),
                       worse_max=max(worse), seeds_none_worse=sum(w == 0 for w in worse),
                       regret_mean=float(np.mean([r["regret"] for rs in per_seed for r in rs])), seed=args.seed)
            out.append(row)
            print(f"{rule:<8} explore {e:<4g} n={n:<5} below in {row['worse_mean']:.1f} of {row['cells']} cells "
                  f"(T = 0: {row['worse_t0_mean']:.1f}, T > 0: {row['worse_tpos_mean']:.1f}; {row['worse_min']}-"
                  f"{row['worse_max']}; none below for {row['seeds_none_worse']} of {args.policy_seeds} seeds), "
                  f"regret {row['regret_mean']:+.3f}")
    write_rows(out, args.out)


if __name__ == "__main__":
    main()
