"""The evidence sweeps: tau against temperature at V = 50 (dense draft) and V = 32k (sparse draft).

Usage::

    python3 simulations/sweep_evidence.py small    # V = 50, dense draft, 10 methods
    python3 simulations/sweep_evidence.py large    # V = 32000, sparse top-128 draft, 9 methods

Writes ``simulations/results/sweep_v50.{csv,png}`` or ``sweep_v32k.{csv,png}`` and prints the
table. Tree sizes span K = 4..10, D = 4..6, N = 16..60; two draft mismatch levels. Every
method of a sweep sees the same random contexts (one seed), so the ``vs eagle`` column is a
paired difference.

Each finished row is logged to ``<stem>.csv.partial`` first: ``--resume`` continues an
interrupted run, and ``--executor dask`` (``--scheduler ADDRESS``) or ``--executor ray`` runs
the rows on a cluster; the rows are the same.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from rheotheory.errors import RheoError
from rheotheory.executors import EXECUTORS
from rheotheory.sweep import SweepConfig, SweepInterrupted, format_table, sweep_to_files

RESULTS = Path(__file__).resolve().parent / "results"

TREES = ((4, 4, 16), (10, 6, 60))
TEMPERATURES = (0.0, 0.5, 1.0, 1.5)

#: The rows labelled "rheo" in the committed CSVs were run before the presets existed, when the
#: sweep's plain "rheo" meant m = 1, min-best-tail, OT and the EAGLE tree at T = 0; that method is
#: spelled out here (MBT) so that a rerun reproduces them. The "rheo" preset is now the paper's
#: reading (proxy next), which is also the row "rheo:m=1:proxy=next".
MBT = "rheo:m=1:proxy=min-best-tail:greedy=eagle"

SMALL_METHODS = ("eagle", MBT, "rheo:m=K/2", "rheo:m=K-1", "rheo:m=1:proxy=tail",
                 "rheo:m=1:proxy=min-best-tail", "rheo:m=1:verifier=sequential", "static-iid", "static-wor",
                 "chain")
LARGE_METHODS = ("eagle", MBT, "rheo:m=1:proxy=next", "rheo:m=1:proxy=tail", "rheo:m=K/2", "rheo:m=K-1",
                 "static-iid", "static-wor", "chain")

CONFIGS = {
    "small": ("sweep_v50", SweepConfig(vocab_size=50, draft_top_k=None, temperatures=TEMPERATURES, trees=TREES,
                                       methods=SMALL_METHODS, steps=300, seed=0, workers=2)),
    "large": ("sweep_v32k", SweepConfig(vocab_size=32000, draft_top_k=128, temperatures=TEMPERATURES, trees=TREES,
                                        methods=LARGE_METHODS, steps=300, seed=0, workers=2)),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("which", choices=sorted(CONFIGS))
    ap.add_argument("--steps", type=int, default=None, help="override steps per point")
    ap.add_argument("--workers", type=int, default=None, help="override the number of processes")
    ap.add_argument("--replot", action="store_true", help="redraw the PNG and table from the existing CSV")
    ap.add_argument("--resume", action="store_true", help="continue an interrupted run from <stem>.csv.partial")
    ap.add_argument("--executor", choices=EXECUTORS, default="process", help="where rows run (default process)")
    ap.add_argument("--scheduler", default=None, metavar="ADDRESS", help="dask scheduler or Ray cluster address")
    ap.add_argument("--out", default=str(RESULTS), metavar="DIR", help="output folder (default simulations/results)")
    args = ap.parse_args()
    stem, cfg = CONFIGS[args.which]
    if args.replot:
        from rheotheory.sweep import plot_sweep, read_csv

        rows = read_csv(Path(args.out) / f"{stem}.csv")
        sparse = f"sparse top-{cfg.draft_top_k}" if cfg.draft_top_k else "dense draft"
        plot_sweep(rows, Path(args.out) / f"{stem}.png", title=f"synthetic V={cfg.vocab_size}, {sparse}, "
                   f"{int(rows[0]['steps'])} steps/point, seed {cfg.seed}")
        print(format_table(rows))
        return
    if args.steps or args.workers:
        from dataclasses import replace

        cfg = replace(cfg, steps=args.steps or cfg.steps, workers=args.workers or cfg.workers)
    t0 = time.perf_counter()
    try:
        out = sweep_to_files(cfg, args.out, stem=stem, resume=args.resume, executor=args.executor,
                             scheduler=args.scheduler)
    except SweepInterrupted as e:
        print(f"interrupted: {e}", file=sys.stderr)
        raise SystemExit(130) from None
    except RheoError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    print(format_table(out.rows))
    print(f"csv: {out.csv_path}\npng: {out.png_path}\ntime: {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
