"""Tokens per step of chain / static / eagle / rheo with SmolLM2-135M-Instruct and its draft.

Needs the ``smollm`` extra (see the README). Prints the draft's single-draft acceptance
(1 - TV averaged over the positions of fixed texts) and the ``rheo bench`` table (tokens per
step, tokens/s, speed-up over autoregressive sampling) at each temperature, one tree size.

    python3 benchmarks/smollm2_bench.py --prompts 6 --max-new-tokens 40

NOTE: the default draft (a 4-bit weight-quantised copy stored in float32) costs as much as the
target on CPU, so the speed-up column is below 1 there; tokens per step is the measured quantity.
"""

from __future__ import annotations

import argparse
import time

import torch

from rheotheory.decode.bench import bench_methods, cost_ratio, format_table, run_bench
from rheotheory.decode.smollm import (ACCEPTANCE_TEXTS, DEFAULT_DRAFT, SMOL_PROMPTS, load_smollm2,
                                      single_draft_acceptance)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draft", default=DEFAULT_DRAFT, help="int<bits> or layers:<n> (default int4)")
    ap.add_argument("--temperatures", default="0,0.5,1")
    # NOTE: the README's SmolLM2 table ran rheo with head K-1 and the tail proxy, spelled out here.
    ap.add_argument("--methods", default="autoregressive,chain,eagle,rheo:m=K-1:proxy=tail",
                    help="comma-separated method specs (presets or families with :field=value options)")
    ap.add_argument("--top-k", type=int, default=4)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--budget", type=int, default=20)
    ap.add_argument("--prompts", type=int, default=6, help="how many of the fixed prompts (max 6)")
    ap.add_argument("--max-new-tokens", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    pair = load_smollm2(args.device, draft=args.draft)
    print(f"SmolLM2-135M-Instruct ({pair.target.num_params()} params, {pair.manifest['dtype']}) on {args.device}; "
          f"draft: {pair.manifest['draft']}; loaded in {time.perf_counter() - t0:.1f} s")
    for T in (1.0, 0.5):
        acc = single_draft_acceptance(pair, ACCEPTANCE_TEXTS, T)
        print(f"single-draft acceptance 1 - TV at T = {T:g}: {acc:.3f} (mean over the positions of "
              f"{len(ACCEPTANCE_TEXTS)} fixed texts)")
    t_t, t_d, ratio = cost_ratio(pair)
    print(f"one cached pass: target {t_t * 1e3:.1f} ms, draft {t_d * 1e3:.1f} ms (cost ratio {ratio:.2f})")
    named = bench_methods([m.strip() for m in args.methods.split(",") if m.strip()],
                          size=(args.top_k, args.depth, args.budget))
    temps = [float(t) for t in args.temperatures.split(",")]
    print(f"K={args.top_k} D={args.depth} N={args.budget}, {args.max_new_tokens} tokens x {args.prompts} prompts, "
          f"seed {args.seed}")
    print(format_table([], header=True))
    rows = run_bench(pair, [m for _, m in named], temps, args.max_new_tokens, 1, args.seed,
                     prompts=SMOL_PROMPTS[:args.prompts], log=print, names=[n for n, _ in named])
    print()
    print(format_table(rows))


if __name__ == "__main__":
    main()
