"""rheo-adaptive (or ``--new``, e.g. rheo-online) against the best other method of each sweep
cell, on paired steps.

Reads a sweep CSV (``rheo sweep ... --methods ... rheo-adaptive``). For every cell (mismatch,
T, K, D, N) it takes the other method with the highest tau and needs the per-step accepted
lengths of that row and of the ``--new`` row, and prints the paired difference of tau
with its 95% normal interval (``mean +- 1.96 sd / sqrt(n)`` over the n steps; both methods see
the same contexts, their construction and verification draws differ).

The CSV keeps no per-step lengths. ``--lengths`` reads them from a copy of the sweep's row log;
rows the log lacks (or all of them, without a log) are **re-run** with the sweep's own seed (a
row depends only on its configuration, so the re-run reproduces it exactly; the script checks
tau against the CSV), which costs as much as those rows of the sweep did. That is never done
silently: without ``--rerun`` the script refuses (one line, exit 2) naming how many rows it
would re-run and their estimated time; with ``--rerun`` it says so on stderr before it starts.

When ``--against`` lists an online method's arms, the best of them in hindsight is the bar of
its regret: ``regret`` = best arm's tau - the new method's tau, per step (negative: ahead).

The issue's bar is the best of ``--against`` (default: eagle, rheo, rheo-tuned, static-wor,
chain); methods of the CSV outside that list (e.g. ``static-wor:verifier=traversal``) are left
out unless named. The row log is ``<stem>.csv.partial``, which the sweep deletes when it
finishes (copy it while the sweep runs, or keep an interrupted sweep's).

    python simulations/adaptive_vs_best.py sweep.csv --lengths sweep.log --out comparison.csv
    python simulations/adaptive_vs_best.py simulations/results/sweep_adaptive.csv --rerun
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from rheotheory.checkpoint import HEADER_PREFIX, write_rows
from rheotheory.cli.args import format_seconds
from rheotheory.montecarlo import Z_95, run_steps
from rheotheory.sweep import read_csv, sweep_method
from rheotheory.synthetic import SyntheticPair

NEW = "rheo-adaptive"

#: The methods the issue compares against: eagle, rheo (both presets), static-wor, chain.
AGAINST = ("eagle", "rheo", "rheo-tuned", "static-wor", "chain")

#: tau read back from the CSV (6 significant digits) must match the re-run to this.
TAU_MATCH_TOL = 1e-4

#: The issue's bar for a clear win: tau at least this factor above the best other method.
CLEAR_WIN = 1.05


#: Steps of each row the re-run estimate times (the fewest a run accepts), seeded apart from the rows.
PILOT_STEPS = 2
PILOT_SEED = 2**62 + 1


def _row_run(row, spec):
    """(pair, method) of one sweep row, as ``rheotheory.sweep`` makes them."""
    T = float(row["temperature"])
    tree = (int(row["top_k"]), int(row["depth"]), int(row["budget"]))
    sparse = row["draft_top_k"]
    pair = SyntheticPair(int(row["vocab_size"]), seed=int(row["seed"]), mismatch=float(row["mismatch_value"]),
                         temperature=T, draft_top_k=int(sparse) if sparse not in ("", None) else None)
    return pair, sweep_method(spec, tree, T)


def lengths(args) -> list[int]:
    """Per-step |Z| of one sweep row, re-run exactly as ``rheotheory.sweep`` runs it."""
    row, spec = args
    pair, method = _row_run(row, spec)  # NOTE: an online method learns within the row, as in the sweep
    records: list = []
    run_steps(pair, method, int(row["steps"]), seed=int(row["seed"]), contexts=True, records=records)
    return [len(r.z) for r in records]


def rerun_seconds(jobs, workers: int) -> float:
    """Estimated seconds of re-running ``jobs`` (row, spec) on ``workers`` processes: each row's
    method timed on :data:`PILOT_STEPS` steps here (the pilot's own time included)."""
    t_start = time.perf_counter()
    total = 0.0
    for row, spec in jobs:
        pair, method = _row_run(row, spec)
        t0 = time.perf_counter()
        run_steps(pair, method, PILOT_STEPS, seed=PILOT_SEED, contexts=True)
        total += (time.perf_counter() - t0) / PILOT_STEPS * int(row["steps"])
    return time.perf_counter() - t_start + total / max(1, min(workers, len(jobs)))


def logged_lengths(path) -> dict:
    """(mismatch, T, K, D, N, method) -> per-step lengths, from a sweep row log."""
    with open(path, newline="") as f:
        first = f.readline()
        if not first.startswith(HEADER_PREFIX):
            raise SystemExit(f"{path} is not a sweep row log")
        out = {}
        for r in csv.DictReader(f):
            key = (r["mismatch"], float(r["temperature"]), int(r["top_k"]), int(r["depth"]), int(r["budget"]),
                   r["method"])
            out[key] = [int(n) for n in r["lengths"].split()]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--new", default=NEW, help=f"the method set against the best other (default {NEW})")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default=None, help="also write the comparison as CSV")
    ap.add_argument("--against", nargs="+", default=list(AGAINST), help="the methods whose best is the bar")
    ap.add_argument("--lengths", default=None, help="a copy of the sweep's row log (per-step lengths)")
    ap.add_argument("--rerun", action="store_true",
                    help="re-run the rows whose per-step lengths no --lengths log holds (refused without it)")
    args = ap.parse_args()
    new_name = args.new
    rows = [r for r in read_csv(args.csv) if r["method"] == new_name or r["method"] in args.against]
    cell = lambda r: (r["mismatch"], float(r["temperature"]), int(r["top_k"]), int(r["depth"]), int(r["budget"]))  # noqa: E731
    cells = sorted({cell(r) for r in rows}, key=lambda c: (c[2], c[3], c[4], c[0], c[1]))
    jobs, plan = [], []
    for c in cells:
        here = [r for r in rows if cell(r) == c]
        new = next(r for r in here if r["method"] == new_name)
        best = max((r for r in here if r["method"] != new_name), key=lambda r: float(r["tau"]))
        plan.append((c, best, new))
        jobs += [(best, best["method"]), (new, new_name)]
    logged = logged_lengths(args.lengths) if args.lengths else {}
    key = lambda r, spec: (r["mismatch"], float(r["temperature"]), int(r["top_k"]), int(r["depth"]),  # noqa: E731
                           int(r["budget"]), spec)
    missing = list({key(*j): j for j in jobs if key(*j) not in logged}.values())  # rows the log lacks
    if missing:
        secs = rerun_seconds(missing, args.workers)
        what = (f"{len(missing)} of {len(jobs)} sweep rows have no per-step lengths"
                + (f" in {args.lengths}" if args.lengths else " (no --lengths log)"))
        if not args.rerun:
            print(f"adaptive_vs_best: {what}; re-running them takes about {format_seconds(secs)} (estimated): pass --rerun "
                  "to re-run them, or --lengths with the sweep's row log", file=sys.stderr)
            sys.exit(2)
        print(f"adaptive_vs_best: {what}: re-running them, about {format_seconds(secs)} (estimated)", file=sys.stderr,
              flush=True)
    rerun = {}
    if missing:
        with ProcessPoolExecutor(args.workers) as ex:
            rerun = dict(zip((key(*j) for j in missing), ex.map(lengths, missing)))
    runs = [logged.get(key(*j)) or rerun[key(*j)] for j in jobs]
    out = []
    print(f"{'mismatch':<8} {'T':>5} {'K,D,N':<8} {'best other':<12} {'tau':>6} {new_name:>13} {'ratio':>6} "
          f"{'diff':>7} {'95% paired interval':>22}  verdict")
    for i, (c, best, new) in enumerate(plan):
        lb, ln = np.asarray(runs[2 * i], dtype=float), np.asarray(runs[2 * i + 1], dtype=float)
        for r, l in ((best, lb), (new, ln)):
            if abs(l.mean() - float(r["tau"])) > TAU_MATCH_TOL:
                raise SystemExit(f"re-run of {r['method']} at {c} gives tau {l.mean()}, the CSV {r['tau']}")
        d = ln - lb  # [steps] paired by context
        m = float(d.mean())
        half = Z_95 * float(d.std(ddof=1)) / math.sqrt(d.size)
        ratio = float(ln.mean() / lb.mean())
        verdict = ("worse" if m + half < 0 else "better" if m - half > 0 else "tie") + \
                  (", >= +5%" if ratio >= CLEAR_WIN else "")
        print(f"{c[0]:<8} {c[1]:>5g} {','.join(map(str, c[2:])):<8} {best['method']:<12} {lb.mean():>6.3f} "
              f"{ln.mean():>13.3f} {ratio:>6.3f} {m:>+7.3f} [{m - half:>+8.3f}, {m + half:>+8.3f}]  {verdict}")
        out.append(dict(mismatch=c[0], temperature=c[1], top_k=c[2], depth=c[3], budget=c[4],
                        best_other=best["method"], best_tau=lb.mean(), new_tau=ln.mean(), ratio=ratio, diff=m,
                        diff_low=m - half, diff_high=m + half, steps=d.size, verdict=verdict,
                        method=new_name, regret=-m, regret_total=-float(d.sum())))
    n_worse = sum(r["verdict"].startswith("worse") for r in out)
    hot = [r for r in out if r["temperature"] >= 0.5]
    n_win = sum(r["ratio"] >= CLEAR_WIN for r in hot)
    print(f"\ncells: {len(out)}; significantly worse than the best other: {n_worse}; "
          f">= +5% over the best other among T >= 0.5: {n_win} of {len(hot)}")
    if args.out:
        write_rows(out, args.out)


if __name__ == "__main__":
    main()
