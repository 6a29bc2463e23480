"""``rheo decode``: generate text with speculative decoding (built-in pair, SmolLM2 or model directories)."""

from __future__ import annotations

import json

from .args import (EXIT_DONE, TEMPERATURE_RANGE, add_method_arguments, add_progress, given_settings, method_at,
                   method_from_args, positive_int, progress_bar, set_exit_statuses, temperature_arg)
from .models import (add_model_arguments, auto_budget, check_model_fits, choose_auto_size, draft_top_k_option,
                     load_pair, need_torch, set_threads, size_row, warn_if_lossy)

__all__ = ["register", "run"]

#: The preset `decode` runs when none is given.
DECODE_PRESET = "rheo-tuned"


def register(sub) -> None:
    d = sub.add_parser("decode", help="generate text with speculative decoding (built-in pair, SmolLM2 or "
                       "model directories)",
                       description="Speculative decoding with the built-in character-level pair (target ~1M "
                       "parameters, draft ~0.1M, trained on Python source), SmolLM2 (--model smollm2) or two local "
                       "Hugging Face model directories (--target, --draft). Prints the continuation "
                       "and per-step statistics. Tree sizes the preset leaves open: row 'builtin' (K=2 D=4 "
                       "N=8) for the built-in pair, row 'smollm2' (K=2 D=1 N=2) for SmolLM2, row 'model' (K=4 D=6 N=20) for a --target/--draft pair (`rheo methods`).")
    set_exit_statuses(d, EXIT_DONE)
    d.add_argument("--prompt", default="def fib(", help="ASCII prompt (default 'def fib(')")
    add_method_arguments(d, default=DECODE_PRESET, size=None, auto_budget=True)
    d.add_argument("--temperature", type=temperature_arg, default=1.0,
                   help=f"target temperature T ({TEMPERATURE_RANGE}; default 1)")
    d.add_argument("--max-new-tokens", type=positive_int, default=120, help="tokens to generate (default 120)")
    add_model_arguments(d)
    add_progress(d)
    d.set_defaults(func=run)


def run(args) -> int:
    from collections import Counter

    from ..errors import RheoError

    torch = need_torch()
    from ..decode.engine import DecodeConfig, decode

    auto = auto_budget(args)
    method = method_from_args(args, size=size_row(args))
    if auto and method.at_temperature(args.temperature).nodes == 0:
        raise RheoError(f"--budget auto sizes a draft tree; {args.preset} has none")
    run_method = method_at(method, args.temperature, given_settings(args))
    warn_if_lossy([run_method])
    set_threads(torch, args.threads)
    cfg = DecodeConfig(temperature=args.temperature, top_k=args.target_top_k, top_p=args.target_top_p,
                       max_new_tokens=args.max_new_tokens, draft_temp=args.draft_temperature,
                       **draft_top_k_option(args))
    pair, prompts = load_pair(args)
    if auto:
        method = choose_auto_size(args, pair, method, args.temperature, prompts)
        run_method = method_at(method, args.temperature, {})
    check_model_fits(args, pair, [args.prompt], [method.at_temperature(args.temperature)])
    prompt = pair.encode(args.prompt)
    with progress_bar(args, args.max_new_tokens, "decode", "tok") as bar:
        res = decode(pair.target, pair.draft, prompt, method, cfg, torch.Generator().manual_seed(args.seed),
                     progress=bar.update)
    text = pair.decode(res.tokens)
    hist = Counter(s.accepted + 1 for s in res.steps)
    arm_names = [m.describe().split()[0] + ":" + m.verifier for m in getattr(run_method.policy(), "arms", ())]
    pulls = Counter(s.arm for s in res.steps)
    arm_steps = {name: pulls[i] for i, name in enumerate(arm_names)}  # an online method's steps per arm
    if args.json:
        print(json.dumps({"prompt": args.prompt, "continuation": text, "preset": args.preset,
                          "method": run_method.to_dict(), "description": run_method.describe(),
                          "temperature": args.temperature, "steps": len(res.steps),
                          "tokens_per_step": res.tokens_per_step, "tokens_per_second": res.tokens_per_second,
                          "tokens_per_step_histogram": {str(k): hist[k] for k in sorted(hist)},
                          "mean_tree_nodes": sum(s.tree_nodes for s in res.steps) / len(res.steps),
                          "steps_per_arm": arm_steps or None,
                          "draft_top_k": cfg.draft_k(pair.target.cfg.vocab_size),
                          "device": args.device, "seed": args.seed}))
        return 0
    print(args.prompt + text)
    print("-" * 60)
    print(f"method          : {run_method.describe()}  (--preset {args.preset})")
    manifest = getattr(pair, "manifest", None) or {}
    draft_desc, family = manifest.get("draft"), manifest.get("draft_family")
    if isinstance(draft_desc, str) and draft_desc:
        # a --target/--draft pair's draft is a folder: its family says what was read from it
        print(f"draft           : {draft_desc}" + (f" ({family})" if isinstance(family, str) and family else ""))
    print(f"temperature     : {args.temperature:g}" + ("  (greedy)" if args.temperature == 0 else ""))
    print(f"tokens          : {len(res.tokens)} in {len(res.steps)} steps")
    print(f"tokens per step : {res.tokens_per_step:.3f}")
    print("|Z| histogram   : " + ", ".join(f"{k}: {hist[k]}" for k in sorted(hist)))
    print(f"tree nodes/step : {sum(s.tree_nodes for s in res.steps) / len(res.steps):.1f}")
    if arm_steps:
        print("steps per arm   : " + ", ".join(f"{k} {v}" for k, v in arm_steps.items()))
    k = cfg.draft_k(pair.target.cfg.vocab_size)
    print("draft law       : " + ("full softmax" if k is None else f"top-{k} logits (sparse)"))
    print(f"draft passes    : {sum(s.draft_passes for s in res.steps) / len(res.steps):.1f} per step")
    print(f"speed           : {res.tokens_per_second:.1f} tokens/s on {args.device} ({res.seconds:.2f} s)")
    return 0
