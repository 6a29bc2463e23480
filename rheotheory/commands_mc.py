"""``rheo mc`` (Monte-Carlo lossless test) and ``rheo sweep`` (tau against temperature)."""

from __future__ import annotations

import argparse
import json
import math
import sys

from .cli import _nonneg_int, _positive_int, add_method_arguments, method_from_args

__all__ = ["register"]


def _float_arg(lo: float | None = None, hi: float | None = None, lo_open: bool = False, hi_open: bool = False):
    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not math.isfinite(v):
            raise argparse.ArgumentTypeError(f"{text!r} is not finite")
        if lo is not None and (v < lo or (lo_open and v == lo)):
            raise argparse.ArgumentTypeError(f"{text!r} must be {'>' if lo_open else '>='} {lo:g}")
        if hi is not None and (v > hi or (hi_open and v == hi)):
            raise argparse.ArgumentTypeError(f"{text!r} must be {'<' if hi_open else '<='} {hi:g}")
        return v
    return parse


def _tree_arg(text: str) -> tuple:
    parts = text.split(",")
    try:
        vals = tuple(int(x) for x in parts)
    except ValueError:
        vals = ()
    if len(vals) != 3 or min(vals) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not K,D,N (three positive integers, e.g. 6,5,32)")
    return vals


def _mismatch_arg(text: str):
    from .synthetic import MISMATCH_LEVELS

    if text in MISMATCH_LEVELS:
        return text
    return _float_arg(lo=0.0)(text)


def _add_pair_arguments(ap: argparse.ArgumentParser) -> None:
    from .synthetic import DEFAULT_DRAFT_TOP_K, MISMATCH_LEVELS

    g = ap.add_argument_group("synthetic pair (when no INSTANCE is given)")
    g.add_argument("--vocab", type=_positive_int, default=1000, metavar="V", help="vocabulary size (default 1000)")
    g.add_argument("--mismatch", type=_mismatch_arg, default="low", metavar="LEVEL",
                   help=f"draft mismatch: {', '.join(f'{k} ({v:g})' for k, v in MISMATCH_LEVELS.items())} "
                   "or a number >= 0 (default low)")
    g.add_argument("--temperature", type=_float_arg(lo=0.0), default=1.0, metavar="T",
                   help="target temperature, 0 = exact greedy (default 1)")
    g.add_argument("--temper-draft", action="store_true", help="apply the temperature to the draft too")
    g.add_argument("--sparse", type=_positive_int, default=DEFAULT_DRAFT_TOP_K, metavar="K",
                   help=f"sparse draft: keep the top K draft logits (default {DEFAULT_DRAFT_TOP_K})")
    g.add_argument("--no-sparse", action="store_true", help="dense draft (no top-K truncation)")
    g.add_argument("--pair-seed", type=_nonneg_int, default=0, help="seed of the synthetic language (default 0)")


def register(sub) -> None:
    from .stats import DEFAULT_ALPHA, DEFAULT_MIN_EXPECTED
    from .sweep import DEFAULT_METHODS, SweepConfig

    m = sub.add_parser(
        "mc", help="Monte-Carlo lossless test and tokens per step of one method on an LM pair",
        description="Sample steps of a method, complete short outputs with fresh target samples and test the "
        "extended output law against the target for every length 1..D+1 (Pearson chi-square with pooled rare "
        "cells, Bonferroni over lengths). Prints the statistic, p-value, sample size, verdict and tokens per "
        "step with a 95%% interval. Without INSTANCE a seeded synthetic pair is used.")
    m.add_argument("instance", nargs="?", default=None, help="instance JSON (toy pair); default: a synthetic pair")
    add_method_arguments(m)
    _add_pair_arguments(m)
    m.add_argument("--samples", type=_positive_int, default=2000, help="sampled steps (default 2000)")
    m.add_argument("--alpha", type=_float_arg(lo=0.0, hi=1.0, lo_open=True, hi_open=True), default=DEFAULT_ALPHA,
                   help=f"significance level (default {DEFAULT_ALPHA})")
    m.add_argument("--min-expected", type=_float_arg(lo=0.0, lo_open=True), default=DEFAULT_MIN_EXPECTED,
                   help=f"smallest expected count of a cell (default {DEFAULT_MIN_EXPECTED:g})")
    m.add_argument("--seed", type=_nonneg_int, default=0, help="sampling seed (default 0)")
    m.add_argument("--json", action="store_true", help="print one JSON object")
    m.set_defaults(func=_cmd_mc)

    d = SweepConfig()
    s = sub.add_parser(
        "sweep", help="tokens per step against temperature for several methods at equal node budgets",
        description="Monte-Carlo sweep on synthetic LM pairs: every method at every mismatch level, temperature "
        "and tree size (K,D,N), each step from a fresh random context (the same contexts for every method). "
        "Writes a CSV and a PNG and prints the table. Method specs: eagle, rheo (recommended default), "
        "rheo:m=M:proxy=P:verifier=V (M in 1, K/2, K-1 or an integer), static-iid, static-wor, chain.")
    s.add_argument("--vocab", type=_positive_int, default=d.vocab_size, metavar="V",
                   help=f"vocabulary size (default {d.vocab_size})")
    s.add_argument("--sparse", type=_positive_int, default=d.draft_top_k, metavar="K",
                   help=f"sparse draft top-K (default {d.draft_top_k})")
    s.add_argument("--no-sparse", action="store_true", help="dense draft")
    s.add_argument("--mismatch", type=_mismatch_arg, nargs="+", default=list(d.mismatch), metavar="LEVEL",
                   help=f"draft mismatch levels (default {' '.join(d.mismatch)})")
    s.add_argument("--temperatures", type=_float_arg(lo=0.0), nargs="+", default=list(d.temperatures), metavar="T",
                   help="target temperatures (default " + " ".join(f"{t:g}" for t in d.temperatures) + ")")
    s.add_argument("--trees", type=_tree_arg, nargs="+", default=list(d.trees), metavar="K,D,N",
                   help="tree sizes (default " + " ".join(",".join(map(str, t)) for t in d.trees) + ")")
    s.add_argument("--methods", nargs="+", default=list(DEFAULT_METHODS), metavar="SPEC",
                   help="method specs (default " + " ".join(DEFAULT_METHODS) + ")")
    s.add_argument("--steps", type=_positive_int, default=d.steps, help=f"steps per point (default {d.steps})")
    s.add_argument("--seed", type=_nonneg_int, default=d.seed, help="language and sampling seed (default 0)")
    s.add_argument("--workers", type=_positive_int, default=d.workers, help=f"processes (default {d.workers})")
    s.add_argument("--temper-draft", action="store_true", help="apply the temperature to the draft too")
    s.add_argument("--out", default="sweep-results", metavar="DIR", help="output folder (default sweep-results)")
    s.add_argument("--stem", default="sweep", help="file name stem of the CSV and PNG (default sweep)")
    s.add_argument("--no-plot", action="store_true", help="skip the PNG")
    s.add_argument("--no-progress", action="store_true", help="no progress bar")
    s.set_defaults(func=_cmd_sweep)


def _pair_from_args(args):
    from .pairs import ToyPair
    from .synthetic import SyntheticPair
    from .sweep import _mismatch_value

    if args.instance:
        return ToyPair.load(args.instance, exact=False), args.instance
    pair = SyntheticPair(args.vocab, seed=args.pair_seed, mismatch=_mismatch_value(args.mismatch),
                         temperature=args.temperature, temper_draft=args.temper_draft,
                         draft_top_k=None if args.no_sparse else args.sparse)
    return pair, pair.describe()


def _cmd_mc(args) -> int:
    import time

    from .stats import lossless_test

    method = method_from_args(args)
    pair, name = _pair_from_args(args)
    t0 = time.perf_counter()
    res = lossless_test(pair, method, samples=args.samples, alpha=args.alpha, seed=args.seed,
                        min_expected=args.min_expected)
    secs = time.perf_counter() - t0
    if args.json:
        d = res.to_dict()
        d.update(instance=name, method=method.to_dict(), seed=args.seed, seconds=round(secs, 3))
        print(json.dumps(d))
        return 0
    worst = min(res.per_length, key=lambda t: t.p_value)
    print(f"instance        : {name}")
    print(f"method          : {method.describe()}")
    print(f"samples         : {res.samples} steps, seed {args.seed}")
    print(f"test            : Pearson chi-square per length l=1..{len(res.per_length)}, pooled rare cells "
          f"(expected >= {args.min_expected:g}), Bonferroni")
    for t in res.per_length:
        print(f"  l={t.length}: X2={t.statistic:.2f} df={t.df} p={t.p_value:.4g} cells={t.cells}")
    print(f"p-value         : {res.p_value:.4g} (alpha {res.alpha:g})")
    print(f"verdict         : {'LOSSLESS (not rejected)' if res.lossless else 'LOSSY (rejected)'}")
    if not res.lossless:
        print(f"worst cell      : l={worst.length} '{worst.worst_cell}': observed {worst.observed}, "
              f"expected {worst.expected:.1f}")
    print(f"tokens per step : {res.tokens_per_step:.4f}  (95% CI [{res.tau_low:.4f}, {res.tau_high:.4f}])")
    print(f"time            : {secs:.2f} s")
    return 0


def _cmd_sweep(args) -> int:
    from .sweep import SweepConfig, format_table, sweep_to_files

    cfg = SweepConfig(vocab_size=args.vocab, draft_top_k=None if args.no_sparse else args.sparse,
                      mismatch=tuple(args.mismatch), temperatures=tuple(args.temperatures), trees=tuple(args.trees),
                      methods=tuple(args.methods), steps=args.steps, seed=args.seed, workers=args.workers,
                      temper_draft=args.temper_draft)
    out = sweep_to_files(cfg, args.out, stem=args.stem, progress=not args.no_progress, plot=not args.no_plot)
    print(format_table(out.rows))
    print(f"csv: {out.csv_path}" + (f"\npng: {out.png_path}" if out.png_path else "") + f"\ntime: {out.seconds:.1f} s",
          file=sys.stdout)
    return 0

