"""rheo-online against the best arm as the run grows: the cost of exploration over n steps
(docs/guide/adaptive.md, "How the cost shrinks with the run").

On the V = 32k grid of recipe ``online_vs_best`` (both mismatch levels, T = 0, 0.5, 1, 1.5,
(K, D, N) = 4,4,16 and 10,6,60, seed 3), every cell is run for ``--steps`` steps: rheo-online and
each arm that can still be the best one. A run of n steps is the first n steps of a longer run
(the contexts, the arms' draws and the policy's choices depend on the seed and the step index
only), so one run gives every checkpoint; its first 400 steps are the committed grid's rows,
which the script checks (tau equal to the grid's). At each checkpoint n, over the first n steps:
the best arm in hindsight (the highest tau), rheo-online's paired difference to it with its 95%
normal interval (mean +- 1.96 sd / sqrt(n) over the n paired steps), the regret per step, and
the share of steps n/2 + 1 .. n in which rheo-online ran that arm (``best_arm_share``).

Which arms run: those whose tau in the committed 400-step grid
(``simulations/results/sweep_online.csv``) is within ``--margin`` tokens per step of that cell's
best (arms further below are not run; the CSV says which ran). Arms that are one method at the
temperature (``rheo-tuned`` is EAGLE's tree at T = 0) run once.

``--new SPEC`` sets another online method against the arms (e.g. ``rheo-online:explore=0.3``,
recipe ``online_horizon_explore``), run on each cell's rheo-online row.

    python simulations/online_horizon.py                       # 2000 steps, checkpoints 200 ... 2000
    python simulations/online_horizon.py --steps 40 --checkpoints 20 40 --cells low:0:4,4,16
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
from rheotheory.errors import RheoError
from rheotheory.montecarlo import Z_95, run_steps
from rheotheory.sweep import read_csv, sweep_method

from adaptive_vs_best import _row_run  # simulations/adaptive_vs_best.py: the one rebuild of a sweep row's run

HERE = os.path.dirname(__file__)
GRID = os.path.join(HERE, "results", "sweep_online.csv")
ARMS = ("eagle", "rheo-tuned", "static-wor", "rheo-sampled")
NEW = "rheo-online"
#: tau of the first 400 steps must equal the committed grid's (6 significant digits) to this.
TAU_MATCH_TOL = 1e-4


def _tree(row):
    return int(row["top_k"]), int(row["depth"]), int(row["budget"])


def lengths(job) -> tuple[list[int], list[str]]:
    """Per-step |Z| of one method on one cell (``rheotheory.sweep``'s pair, method and seed), and
    the run key of the method each step ran (an online method's arm)."""
    row, spec, steps = job
    pair, method = _row_run(row, spec)
    records: list = []
    run_steps(pair, method, steps, seed=int(row["seed"]), contexts=True, records=records)
    keys = [m.run_key() for m in method.arm_methods()] if hasattr(method, "arm_methods") else [method.run_key()]
    return [len(r.z) for r in records], [keys[r.arm] for r in records]


def _cell(row):
    return row["mismatch"], float(row["temperature"]), _tree(row)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--checkpoints", type=int, nargs="+", default=[200, 400, 1000, 2000])
    ap.add_argument("--margin", type=float, default=0.4, help="run the arms within this many tokens per step of "
                    "the cell's best in the 400-step grid (default 0.4)")
    ap.add_argument("--cells", nargs="*", default=None, metavar="MISMATCH:T:K,D,N",
                    help="only these cells (default: every cell of the grid)")
    ap.add_argument("--new", default=NEW, help=f"the online method set against the arms (default {NEW}; e.g. "
                    f"{NEW}:explore=0.3): run on each cell's {NEW} row")
    ap.add_argument("--grid", default=GRID)
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--out", default=os.path.join(HERE, "results", "online_horizon.csv"))
    args = ap.parse_args()
    if args.workers < 1 or args.margin < 0 or args.steps < 1:
        print("online_horizon: --workers and --steps must be at least 1, --margin at least 0", file=sys.stderr)
        sys.exit(2)
    if any(c < 1 or c > args.steps for c in args.checkpoints):
        print(f"online_horizon: checkpoints must lie in 1..{args.steps}", file=sys.stderr)
        sys.exit(2)
    grid = read_csv(args.grid)
    cells = list(dict.fromkeys(_cell(r) for r in grid))
    try:  # a bad --new is one line here, not a traceback from a worker
        for c in cells:
            sweep_method(args.new, c[2], c[1])
    except RheoError as e:
        print(f"online_horizon: --new {args.new}: {e}", file=sys.stderr)
        sys.exit(2)
    if args.cells:
        want = set()
        for text in args.cells:
            try:
                mm, t, kdn = text.split(":")
                want.add((mm, float(t), tuple(int(x) for x in kdn.split(","))))
            except ValueError:
                print(f"online_horizon: cell {text!r} is not MISMATCH:T:K,D,N", file=sys.stderr)
                sys.exit(2)
        missing = want - set(cells)
        if missing:
            print(f"online_horizon: cell {sorted(missing)[0]} is not in {args.grid}", file=sys.stderr)
            sys.exit(2)
        cells = [c for c in cells if c in want]
    jobs, plan = [], []
    for c in cells:
        here = {r["method"]: r for r in grid if _cell(r) == c}
        best = max(float(here[a]["tau"]) for a in ARMS)
        arms, keys = [], set()
        for a in ARMS:
            key = sweep_method(a, c[2], c[1]).run_key()
            if float(here[a]["tau"]) >= best - args.margin and key not in keys:
                arms.append(a)
                keys.add(key)
        plan.append((c, arms, here))
        jobs += [(here[m], m, args.steps) for m in arms] + [(here[NEW], args.new, args.steps)]
    with ProcessPoolExecutor(args.workers) as ex:
        runs = list(tqdm(ex.map(lengths, jobs), total=len(jobs), desc="rows", file=sys.stderr))
    it = iter(runs)
    out = []
    for c, arms, here in plan:
        got, ran = {}, {}
        for m in arms + [NEW]:
            ls, keys = next(it)
            got[m], ran[m] = np.asarray(ls, dtype=float), keys
        for m, l in got.items():
            if m == NEW and args.new != NEW:
                continue  # not a row of the grid: nothing to check it against
            if int(here[m]["steps"]) <= args.steps and abs(l[:int(here[m]["steps"])].mean()
                                                         - float(here[m]["tau"])) > TAU_MATCH_TOL:
                raise SystemExit(f"{m} at {c}: first {here[m]['steps']} steps give tau "
                                 f"{l[:int(here[m]['steps'])].mean()}, the grid {here[m]['tau']}")
        for n in args.checkpoints:
            best = max(arms, key=lambda a: got[a][:n].mean())
            d = got[NEW][:n] - got[best][:n]
            m = float(d.mean())
            half = Z_95 * float(d.std(ddof=1)) / math.sqrt(n)
            verdict = "worse" if m + half < 0 else "better" if m - half > 0 else "tie"
            key = sweep_method(best, c[2], c[1]).run_key()
            share = float(np.mean([k == key for k in ran[NEW][n // 2:n]]))  # the best arm's share, 2nd half
            out.append(dict(mismatch=c[0], temperature=c[1], top_k=c[2][0], depth=c[2][1], budget=c[2][2],
                            steps=n, arms_run=" ".join(arms), best_arm=best, best_tau=float(got[best][:n].mean()),
                            online_tau=float(got[NEW][:n].mean()), diff=m, diff_low=m - half, diff_high=m + half,
                            regret=-m, half_width=half, verdict=verdict, best_arm_share=share))
            print(f"{c[0]:<5} T={c[1]:<4g} {','.join(map(str, c[2])):<8} n={n:<5} best {best:<12} "
                  f"{got[best][:n].mean():.3f} online {got[NEW][:n].mean():.3f} diff {m:+.3f} "
                  f"[{m - half:+.3f}, {m + half:+.3f}] {verdict}; ran it in {share:.0%} of steps {n // 2 + 1}-{n}")
    write_rows(out, args.out)
    for n in args.checkpoints:
        sub = [r for r in out if r["steps"] == n]
        print(f"n = {n}: worse in {sum(r['verdict'] == 'worse' for r in sub)} of {len(sub)} cells; "
              f"mean regret per step {np.mean([r['regret'] for r in sub]):+.3f}")


if __name__ == "__main__":
    main()
