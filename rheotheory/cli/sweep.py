"""``rheo sweep``: tokens per step against temperature for several methods at equal node budgets."""

from __future__ import annotations

import json
import math
import sys

from .args import (EXIT_DONE, MAX_SYNTHETIC_VOCAB, TEMPERATURE_RANGE, WORK_PER_SECOND, add_list, add_max_work,
                   add_progress, announce, check_fits_vocab, check_work, file_stem, int_range, mc_work, positive_int,
                   progress_on, seed_arg, set_exit_statuses, spec_arg, temperature_arg, threads_arg, vocab_arg,
                   wants_pilot)
from .mc import mismatch_arg

__all__ = ["register", "run"]

#: Seconds of drawing and writing the PNG, matplotlib's import included (measured: 1-2 s on a
#: 2-core machine), added to the estimate of a sweep that writes one.
PLOT_SECONDS = 1.5


def register(sub) -> None:
    from ..executors import EXECUTORS
    from ..sweep import DEFAULT_METHODS, SweepConfig

    d = SweepConfig()
    s = sub.add_parser(
        "sweep", help="tokens per step against temperature for several methods at equal node budgets",
        description="Monte-Carlo sweep on synthetic LM pairs: every method at every mismatch level, temperature "
        "and tree size (K,D,N), each step from a fresh random context (the same contexts for every method). "
        "Writes a CSV and a PNG and prints the table. Method specs: preset or family names with optional "
        ":field=value options (see `rheo methods`), e.g. eagle, rheo, rheo-tuned, rheo:m=K/2:proxy=tail.")
    set_exit_statuses(s, EXIT_DONE)
    s.add_argument("--vocab", type=vocab_arg, default=d.vocab_size, metavar="V",
                   help=f"vocabulary size, 2..{MAX_SYNTHETIC_VOCAB} (default {d.vocab_size})")
    s.add_argument("--sparse", type=int_range(1, MAX_SYNTHETIC_VOCAB), default=d.draft_top_k, metavar="K",
                   help=f"sparse draft top-K, 1..{MAX_SYNTHETIC_VOCAB} (default {d.draft_top_k})")
    s.add_argument("--no-sparse", action="store_true", help="dense draft")
    add_list(s, "--mismatch", mismatch_arg, "LEVEL,...", f"draft mismatch levels (default {','.join(d.mismatch)})",
             default=list(d.mismatch))
    add_list(s, "--temperatures", temperature_arg, "T,...", f"target temperatures ({TEMPERATURE_RANGE}; default "
             + ",".join(f"{t:g}" for t in d.temperatures) + ")", default=list(d.temperatures))
    add_list(s, "--trees", positive_int, "K,D,N,...", "tree sizes, three positive integers each (default "
             + ",".join(",".join(map(str, t)) for t in d.trees) + ")", group=3, default=list(d.trees))
    add_list(s, "--methods", spec_arg, "SPEC,...", "method specs (default " + ",".join(DEFAULT_METHODS) + ")",
             default=list(DEFAULT_METHODS))
    s.add_argument("--steps", type=int_range(2), default=d.steps, help=f"steps per point, >= 2 (default {d.steps})")
    s.add_argument("--seed", type=seed_arg, default=d.seed, help="language and sampling seed (0..2^63-1, default 0)")
    s.add_argument("--workers", type=threads_arg, default=d.workers,
                   help=f"processes, at most the machine's cores (default {d.workers})")
    s.add_argument("--executor", choices=EXECUTORS, default="process",
                   help="where rows run: local process pool, dask.distributed or Ray (default process; same rows)")
    s.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="dask scheduler or Ray cluster address (default: a local cluster of --workers workers)")
    s.add_argument("--resume", action="store_true",
                   help="continue an interrupted sweep from OUT/STEM.csv.partial (same configuration only)")
    s.add_argument("--temper-draft", action="store_true", help="apply the temperature to the draft too")
    s.add_argument("--out", default="sweep-results", metavar="DIR", help="output folder (default sweep-results)")
    s.add_argument("--stem", type=file_stem, default="sweep",
                   help="file name stem of the CSV and PNG, a plain file name (default sweep)")
    s.add_argument("--no-plot", action="store_true", help="skip the PNG")
    s.add_argument("--json", action="store_true", help="print one JSON object (the rows, the files written)")
    add_progress(s)
    add_max_work(s, "a sweep (every row, all workers together)")
    s.set_defaults(func=run)


def check_out_dir(path: str) -> None:
    """Refuse an output folder that cannot be written before any work starts."""
    import os

    from ..errors import RheoError

    if os.path.exists(path) and not os.path.isdir(path):
        raise RheoError(f"--out {path!r} exists and is not a folder")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise RheoError(f"--out {path!r}: cannot create the folder ({e.strerror})") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise RheoError(f"--out {path!r} is not writable")


def check_sweep_work(cfg, cap: int) -> float:
    """K <= V for every tree, and the sweep's estimated work (rows x steps x laws x V) under ``cap``;
    returns the estimate."""
    from ..sweep import sweep_method

    work = 0.0
    for tree in cfg.trees:
        for spec in cfg.methods:
            m = sweep_method(spec, tree, 1.0)
            check_fits_vocab(m, cfg.vocab_size, "the synthetic pair")
            work += len(cfg.mismatch) * len(cfg.temperatures) * mc_work(cfg.steps, m, cfg.vocab_size)
    rows = len(cfg.trees) * len(cfg.methods) * len(cfg.mismatch) * len(cfg.temperatures)
    check_work(work, cap, f"{rows} rows of {cfg.steps} steps at V={cfg.vocab_size}", "--max-work")
    return work


def run(args) -> int:
    from ..sweep import SweepConfig, SweepInterrupted, estimate_seconds, format_table, row_key, sweep_to_files

    cfg = SweepConfig(vocab_size=args.vocab, draft_top_k=None if args.no_sparse else args.sparse,
                      mismatch=tuple(args.mismatch), temperatures=tuple(args.temperatures), trees=tuple(args.trees),
                      methods=tuple(args.methods), steps=args.steps, seed=args.seed, workers=args.workers,
                      temper_draft=args.temper_draft)
    from ..sweep import size_mismatches

    work = check_sweep_work(cfg, args.max_work)
    mismatched = size_mismatches(cfg)
    check_out_dir(args.out)
    for line in mismatched:  # NOTE: after every check of the input: a refusal stays one line
        print(f"rheo sweep: warning: {line}", file=sys.stderr)
    from ..optional import available, missing_message

    plot = not args.no_plot
    if plot and not available("matplotlib"):  # NOTE: the lean install sweeps; only the PNG needs the extra
        print(f"rheo sweep: warning: no PNG: {missing_message('matplotlib', 'the plot')}", file=sys.stderr)
        plot = False
    seconds = work / WORK_PER_SECOND / cfg.workers
    if wants_pilot(args, seconds):
        # NOTE: the work model is a cap's unit, not a clock: time a pilot
        seconds = estimate_seconds(cfg) + (PLOT_SECONDS if plot else 0.0)
    announce(args, seconds, f"the sweep ({cfg.workers} worker(s))")
    try:
        out = sweep_to_files(cfg, args.out, stem=args.stem, progress=progress_on(args), plot=plot,
                             resume=args.resume, executor=args.executor, scheduler=args.scheduler)
    except SweepInterrupted as e:
        print(f"rheo: interrupted: {e}", file=sys.stderr)
        return 130
    if args.json:
        print(json.dumps({"config": row_key(cfg), "rows": [_plain(r) for r in out.rows], "csv": out.csv_path,
                          "png": out.png_path or None, "seconds": round(out.seconds, 3),
                          "estimated_seconds": round(seconds, 3)}))
        return 0
    print(format_table(out.rows))
    print(f"csv: {out.csv_path}" + (f"\npng: {out.png_path}" if out.png_path else "") + f"\ntime: {out.seconds:.1f} s",
          file=sys.stdout)
    return 0


def _plain(row: dict) -> dict:
    """A sweep row as JSON data: its public columns, a non-finite number as null."""
    def value(v):
        return None if isinstance(v, float) and not math.isfinite(v) else v

    return {k: value(v) for k, v in row.items() if not k.startswith("_")}
