"""``rheo mc``: Monte-Carlo lossless test and tokens per step of one method."""

from __future__ import annotations

import argparse
import json

from .args import (EXIT_LOSSLESS, EXIT_LOSSY, MAX_SEED, MAX_SYNTHETIC_VOCAB, TEMPERATURE_RANGE, WORK_PER_SECOND,
                   add_max_entries, add_max_work, add_method_arguments, add_progress, announce, check_fits_vocab,
                   check_work, float_range, given_settings, int_range, mc_work, method_at, method_from_args,
                   progress_bar, seed_arg, set_exit_statuses, show, temperature_arg, vocab_arg, wants_pilot)

__all__ = ["register", "run", "mismatch_arg"]

#: Largest numeric draft mismatch: the noise is added to logits, and past this scale float64 softmax
#: inputs approach overflow (the same bound as rheotheory.pairs.MAX_LOGIT_SCALE).
MAX_MISMATCH = 1e3

#: The pilot that times a long run (see rheotheory.cli.args.PILOT_FROM_SECONDS): two small runs
#: of the same test, each of this fraction of --samples (at least PILOT_MIN_SAMPLES), with seeds
#: after --seed (their outputs are thrown away); only the second is timed per sample, since the
#: first fills the pair's law cache as the run's first steps would (measured at V = 32000: the
#: first 20 steps of a cold pair cost 1.7x the warm ones).
PILOT_FRACTION = 0.01
PILOT_MIN_SAMPLES = 10

#: Flags that describe the synthetic pair; with an instance file they are an error.
PAIR_FLAGS = ("vocab", "mismatch", "temperature", "temper_draft", "sparse", "no_sparse", "pair_seed")


def mismatch_arg(text: str):
    """An argparse type: a mismatch level name or a number >= 0."""
    from ..errors import RheoError
    from ..synthetic import MISMATCH_LEVELS, mismatch_value

    try:
        v = mismatch_value(text)
    except RheoError:
        raise argparse.ArgumentTypeError(f"{show(text)} is not a mismatch level ({', '.join(MISMATCH_LEVELS)}) "
                                         f"or a number in 0..{MAX_MISMATCH:g}") from None
    if v > MAX_MISMATCH:
        raise argparse.ArgumentTypeError(f"{show(text)} must be at most {MAX_MISMATCH:g} (MAX_MISMATCH)")
    return text


def register(sub) -> None:
    from ..stats import DEFAULT_ALPHA, DEFAULT_MIN_EXPECTED
    from ..synthetic import DEFAULT_DRAFT_TOP_K, MISMATCH_LEVELS

    m = sub.add_parser(
        "mc", help="Monte-Carlo lossless test and tokens per step of one method on an LM pair",
        description="Sample steps of a method, complete short outputs with fresh target samples and test the "
        "extended output law against the target for every length 1..D+1 (Pearson chi-square with pooled rare "
        "cells, Bonferroni over lengths; docs/theory.md section 6). Prints the statistic, p-value, sample size, "
        "verdict and tokens per step with a 95% interval. Without INSTANCE a seeded synthetic pair is used.")
    set_exit_statuses(m, (
        (EXIT_LOSSLESS, "not rejected: the chi-square test did not reject the target law at alpha (the output states "
                         "the smallest deviation it would detect)"),
        (EXIT_LOSSY, "rejected: the sampled output law differs from the target's (p < alpha)"),
    ))
    m.add_argument("instance", nargs="?", default=None, help="instance JSON (toy pair); default: a synthetic pair")
    add_method_arguments(m, size="toy")
    g = m.add_argument_group("synthetic pair (only when no INSTANCE is given)")
    g.add_argument("--vocab", type=vocab_arg, default=None, metavar="V",
                   help=f"vocabulary size, 2..{MAX_SYNTHETIC_VOCAB} (default 1000)")
    g.add_argument("--mismatch", type=mismatch_arg, default=None, metavar="LEVEL",
                   help=f"draft mismatch: {', '.join(f'{k} ({v:g})' for k, v in MISMATCH_LEVELS.items())} "
                   f"or a number in 0..{MAX_MISMATCH:g} (default low)")
    g.add_argument("--temperature", type=temperature_arg, default=None, metavar="T",
                   help=f"target temperature ({TEMPERATURE_RANGE}; default 1)")
    g.add_argument("--temper-draft", action="store_true", default=None, help="apply the temperature to the draft too")
    g.add_argument("--sparse", type=int_range(1, MAX_SYNTHETIC_VOCAB), default=None, metavar="K",
                   help=f"sparse draft: keep the top K draft logits, 1..{MAX_SYNTHETIC_VOCAB} "
                   f"(default {DEFAULT_DRAFT_TOP_K})")
    g.add_argument("--no-sparse", action="store_true", default=None, help="dense draft (no top-K truncation)")
    g.add_argument("--pair-seed", type=seed_arg, default=None, help="seed of the synthetic language (default 0)")
    m.add_argument("--samples", type=int_range(2), default=2000, help="sampled steps, >= 2 (default 2000)")
    m.add_argument("--alpha", type=float_range(lo=0.0, hi=1.0, lo_open=True, hi_open=True), default=DEFAULT_ALPHA,
                   help=f"significance level (default {DEFAULT_ALPHA})")
    m.add_argument("--min-expected", type=float_range(lo=1.0), default=DEFAULT_MIN_EXPECTED,
                   help=f"smallest expected count of a cell, >= 1 (default {DEFAULT_MIN_EXPECTED:g})")
    m.add_argument("--seed", type=seed_arg, default=0, help="sampling seed (0..2^63-1, default 0)")
    m.add_argument("--contexts", choices=("single", "fresh"), default="single",
                   help="where the tokens per step are measured: single (default), every step from the pair's "
                   "root prefix, the context the lossless test needs; fresh, every step from a new random context "
                   "as `rheo sweep` does (synthetic pairs; the test still runs at the root, so the steps are "
                   "sampled twice). One context can accept far more or fewer tokens than the average context")
    m.add_argument("--json", action="store_true", help="print one JSON object")
    add_progress(m)
    add_max_entries(m)
    add_max_work(m, "a run")
    m.set_defaults(func=run)


def pair_from_args(args):
    """The toy pair of INSTANCE, or the synthetic pair of the pair flags; (pair, name, temperature)."""
    from ..errors import RheoError
    from ..pairs import ToyPair
    from ..synthetic import DEFAULT_DRAFT_TOP_K, SyntheticPair, mismatch_value

    if args.instance:
        given = [f for f in PAIR_FLAGS if getattr(args, f) is not None]
        if given:
            raise RheoError(f"--{given[0].replace('_', '-')} describes the synthetic pair; it does not apply "
                            "with an instance file")
        return ToyPair.load(args.instance, exact=False, max_entries=args.max_entries), args.instance, None
    if args.no_sparse and args.sparse is not None:
        raise RheoError("--sparse and --no-sparse contradict each other")
    temperature = 1.0 if args.temperature is None else args.temperature
    pair = SyntheticPair(args.vocab or 1000, seed=args.pair_seed or 0, mismatch=mismatch_value(args.mismatch or "low"),
                         temperature=temperature, temper_draft=bool(args.temper_draft),
                         draft_top_k=None if args.no_sparse else (args.sparse or DEFAULT_DRAFT_TOP_K))
    return pair, pair.describe(), temperature


def run(args) -> int:
    import time

    from ..stats import POWER, lossless_test

    method = method_from_args(args, size="toy")
    pair, name, temperature = pair_from_args(args)
    if temperature is not None:
        method = method_at(method, temperature, given_settings(args))
    check_fits_vocab(method, pair.vocab_size, "the pair")
    work = mc_work(args.samples, method, pair.vocab_size)
    what = f"{args.samples} steps of {method.nodes} nodes at V={pair.vocab_size}"
    check_work(work, args.max_work, what, "--max-work")
    t0 = time.perf_counter()
    estimated = work / WORK_PER_SECOND
    if wants_pilot(args, estimated):
        # NOTE: the work model is a cap's unit, not a clock: time a pilot of the same test
        n = min(args.samples, max(PILOT_MIN_SAMPLES, round(PILOT_FRACTION * args.samples)))
        for k in (1, 2):
            t1 = time.perf_counter()
            lossless_test(pair, method, samples=n, alpha=args.alpha, seed=(args.seed + k) % (MAX_SEED + 1),
                          min_expected=args.min_expected)
        now = time.perf_counter()
        estimated = now - t0 + (now - t1) / n * args.samples
    announce(args, estimated, what)
    if args.contexts == "fresh" and not hasattr(pair, "at"):
        from ..errors import RheoError

        raise RheoError("--contexts fresh needs the synthetic pair (an instance file has one context)")
    with progress_bar(args, args.samples, "mc") as bar:
        res = lossless_test(pair, method, samples=args.samples, alpha=args.alpha, seed=args.seed,
                            min_expected=args.min_expected, progress=bar.update)
    fresh = None
    if args.contexts == "fresh":
        from ..montecarlo import run_steps

        fresh = run_steps(pair, method, args.samples, seed=args.seed, contexts=True)
    detect = res.detectable()
    secs = time.perf_counter() - t0
    if args.json:
        d = res.to_dict()
        d.update(instance=name, method=method.to_dict(), preset=args.preset, seed=args.seed, seconds=round(secs, 3),
                 estimated_seconds=round(estimated, 3), contexts=args.contexts)
        d["min_detectable_tv_by_length"] = [None if x == float("inf") else x for x in detect]
        if fresh is not None:
            d["tokens_per_step_fresh"] = fresh.tau
            d["tokens_per_step_fresh_ci95"] = [fresh.tau_low, fresh.tau_high]
        print(json.dumps(d))
        return EXIT_LOSSLESS if res.lossless else EXIT_LOSSY
    worst = min(res.per_length, key=lambda t: t.p_value)
    print(f"instance        : {name}")
    print(f"method          : {method.describe()}  (--preset {args.preset})")
    print(f"samples         : {res.samples} steps, seed {args.seed}")
    print(f"test            : Pearson chi-square per length l=1..{len(res.per_length)}, pooled rare cells "
          f"(expected >= {args.min_expected:g}), Bonferroni")
    for t, d in zip(res.per_length, detect):
        print(f"  l={t.length}: X2={t.statistic:.2f} df={t.df} p={t.p_value:.4g} cells={t.cells}  detects TV>={d:.3g}")
    print(f"p-value         : {res.p_value:.4g} (alpha {res.alpha:g})")
    if res.lossless:
        best = min(range(len(detect)), key=lambda i: detect[i])
        first = "first token" if best == 0 else f"first {best + 1} tokens"
        print(f"verdict         : not rejected at N = {res.samples}, alpha {res.alpha:g} (a test, not a proof)")
        print(f"detects         : with power {POWER:g}, a TV >= {detect[best]:.3g} in the law of the {first}, "
              f">= {detect[-1]:.3g} in the law of all {len(detect)} (over the pooled cells); smaller deviations "
              "can pass")
    else:
        print(f"verdict         : rejected at alpha {res.alpha:g}: the output law is not the target's (lossy)")
    if not res.lossless:
        print(f"worst cell      : l={worst.length} '{worst.worst_cell}': observed {worst.observed}, "
              f"expected {worst.expected:.1f}")
    print(f"tokens per step : {res.tokens_per_step:.4f}  (95% CI [{res.tau_low:.4f}, {res.tau_high:.4f}]; every step at "
          "the root context)")
    if fresh is not None:
        print(f"tokens per step : {fresh.tau:.4f}  (95% CI [{fresh.tau_low:.4f}, {fresh.tau_high:.4f}]; every step at a "
              "fresh context, as rheo sweep)")
    print(f"time            : {secs:.2f} s")
    return EXIT_LOSSLESS if res.lossless else EXIT_LOSSY
