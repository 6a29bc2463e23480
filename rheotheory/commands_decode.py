"""``rheo decode`` and ``rheo bench``: speculative decoding with the built-in model pair.

Both need PyTorch (the ``torch`` extra); without it they exit with one line saying so.
"""

from __future__ import annotations

import argparse
import json

from .cli import _nonneg_float, add_method_arguments, method_from_args
from .cli import _positive_float as _pos_float
from .cli import _nonneg_int, _positive_int as _pos_int
from .trees.dynamic import PROXIES
from .errors import RheoError
from .methods import DECODE_PROXY

__all__ = ["register"]

#: Tree defaults of `decode` and `bench` (larger than the exact tools' toy defaults).
DECODE_TOP_K = 4
DECODE_DEPTH = 6
DECODE_BUDGET = 20

#: Tree defaults for the built-in pair: its batch-1 target pass grows with the tree (about 1.6
#: single-token passes for 9 tokens on a CPU) and every layer costs a draft pass, so a small
#: tree gives the best measured wall-clock trade-off at T = 1 (see the README's table).
BUILTIN_TOP_K = 2
BUILTIN_DEPTH = 4
BUILTIN_BUDGET = 8


def _tree_defaults(args) -> None:
    """Fill the tree flags the user left unset: the built-in pair's or the larger ones."""
    builtin = args.model == "builtin"
    for name, large, small in (("top_k", DECODE_TOP_K, BUILTIN_TOP_K), ("depth", DECODE_DEPTH, BUILTIN_DEPTH),
                               ("budget", DECODE_BUDGET, BUILTIN_BUDGET)):
        if getattr(args, name) is None:
            setattr(args, name, small if builtin else large)


def _temperatures(text: str) -> list[float]:
    return [_nonneg_float(t) for t in text.split(",") if t.strip()]


def _common(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--target-top-k", type=_pos_int, default=None, metavar="K",
                    help="truncate the target to its K most probable tokens (T > 0)")
    ap.add_argument("--target-top-p", type=float, default=None, metavar="P",
                    help="truncate the target to its top-p nucleus (T > 0)")
    ap.add_argument("--draft-temperature", type=_pos_float, default=None, metavar="TD",
                    help="temperature of the draft laws the trees are built and verified with (default: "
                    "the target's T when T > 0, a sharp 0.05 when T = 0)")
    ap.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    ap.add_argument("--model", choices=("builtin", "smollm2"), default="builtin",
                    help="builtin: the shipped character-level pair (default); smollm2: SmolLM2-135M-Instruct "
                    "(needs the smollm extra, see the README)")
    ap.add_argument("--draft", default=None, metavar="SPEC",
                    help="SmolLM2 draft: int<bits> (quantised copy, default int4) or layers:<n> (early exit)")
    ap.add_argument("--seed", type=int, default=0, help="torch generator seed (default 0)")
    ap.add_argument("--threads", type=_pos_int, default=1, help="CPU threads for torch and numpy's BLAS (default 1)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.set_defaults(top_k=None, depth=None, budget=None)  # NOTE: resolved by _tree_defaults


def register(sub) -> None:
    d = sub.add_parser("decode", help="generate text with speculative decoding (built-in model pair)",
                       description="Speculative decoding with the built-in character-level pair (target ~1M "
                       "parameters, draft ~0.1M, trained on Python source). Prints the continuation and "
                       "per-step statistics.")
    d.add_argument("--prompt", default="def fib(", help="ASCII prompt (default 'def fib(')")
    add_method_arguments(d)
    # NOTE: `decode` also offers the plain-sampling baseline next to the tree methods.
    method_action = d._option_string_actions["--method"]
    method_action.choices = tuple(method_action.choices) + ("autoregressive",)
    d.set_defaults(proxy=DECODE_PROXY)  # measured best with real models (see methods.DECODE_PROXY)
    d._option_string_actions["--proxy"].help = f"score of the sampled slot (rheo; default {DECODE_PROXY})"
    d.add_argument("--temperature", type=_nonneg_float, default=1.0, help="target temperature T (0 = greedy)")
    d.add_argument("--max-new-tokens", type=_pos_int, default=120, help="tokens to generate (default 120)")
    _common(d)
    d.set_defaults(func=_cmd_decode)

    b = sub.add_parser("bench", help="tokens/step, tokens/s and speed-up of each method (built-in pair)",
                       description="Decode fixed prompts with autoregressive sampling and each tree method "
                       "at the same node budget; print tokens per step, tokens per second and the speed-up "
                       "over autoregressive sampling for each temperature.")
    b.add_argument("--temperatures", type=_temperatures, default=[0.0, 0.5, 1.0], metavar="T,T,...",
                   help="comma-separated temperatures (default 0,0.5,1)")
    b.add_argument("--methods", default="autoregressive,chain,static,eagle,rheo",
                   help="comma-separated subset of autoregressive,chain,static,eagle,rheo")
    b.add_argument("--top-k", type=_pos_int, default=None, metavar="K",
                   help=f"eagle/rheo K (default {BUILTIN_TOP_K} for the built-in pair, {DECODE_TOP_K} otherwise)")
    b.add_argument("--depth", type=_pos_int, default=None, metavar="D",
                   help=f"tree depth, all methods (default {BUILTIN_DEPTH} built-in, {DECODE_DEPTH} otherwise)")
    b.add_argument("--budget", type=_pos_int, default=None, metavar="N",
                   help=f"tree nodes: eagle, rheo, static (default {BUILTIN_BUDGET} built-in, {DECODE_BUDGET} otherwise)")
    b.add_argument("--head", type=_nonneg_int, default=None, metavar="M",
                   help="rheo: deterministic head slots per expansion (default K-1)")
    b.add_argument("--proxy", choices=PROXIES, default=DECODE_PROXY,
                   help=f"rheo: score of the sampled slot (default {DECODE_PROXY})")
    b.add_argument("--max-new-tokens", type=_pos_int, default=100, help="tokens per prompt (default 100)")
    b.add_argument("--repeats", type=_pos_int, default=1, help="passes over the prompts (default 1)")
    _common(b)
    b.set_defaults(func=_cmd_bench)


def _torch():
    try:
        import torch  # noqa: F401
    except ImportError:
        raise RheoError("this command needs PyTorch: pip install 'rheotheory[torch]'") from None
    return torch


def _load_pair(args):
    """The model pair named by ``--model`` and the benchmark prompts that suit it."""
    if args.model == "smollm2":
        from .decode.smollm import DEFAULT_DRAFT, SMOL_PROMPTS, load_smollm2

        return load_smollm2(args.device, draft=args.draft or DEFAULT_DRAFT), SMOL_PROMPTS
    if args.draft is not None:
        raise RheoError("--draft applies to --model smollm2 only")
    from .decode.bench import BENCH_PROMPTS
    from .decode.builtin import load_builtin_pair

    return load_builtin_pair(args.device), BENCH_PROMPTS


def _set_threads(torch, n: int) -> None:
    """Use ``n`` CPU threads in torch and in numpy's BLAS (the CPU draft runs in numpy).

    NOTE: without threadpoolctl BLAS keeps its default; a multi-threaded BLAS on tiny batch-1
    matrices mostly waits on its own threads, so the numpy draft gets slower, not wrong.
    """
    torch.set_num_threads(n)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return
    threadpool_limits(limits=n, user_api="blas")


def _check_target_trunc(args) -> None:
    if args.target_top_p is not None and not 0 < args.target_top_p <= 1:
        raise RheoError(f"--target-top-p must be in (0, 1], got {args.target_top_p}")


def _warn_if_lossy(methods) -> None:
    """One stderr line per method the exact certifier has found lossy (decoding still runs: a
    lossy variant is a legitimate thing to measure)."""
    import sys

    for m in methods:
        why = None if isinstance(m, str) else m.known_lossy()
        if why:
            print(f"rheo: warning: {m.describe()} is known to be lossy ({why})", file=sys.stderr)


def _cmd_decode(args) -> int:
    torch = _torch()
    _tree_defaults(args)
    from collections import Counter

    from .decode.engine import AUTOREGRESSIVE, DecodeConfig, decode

    _check_target_trunc(args)
    _set_threads(torch, args.threads)
    method = AUTOREGRESSIVE if args.method == "autoregressive" else method_from_args(args)
    _warn_if_lossy([method])
    cfg = DecodeConfig(temperature=args.temperature, top_k=args.target_top_k, top_p=args.target_top_p,
                       max_new_tokens=args.max_new_tokens, draft_temp=args.draft_temperature)
    pair, _ = _load_pair(args)
    prompt = pair.encode(args.prompt)
    res = decode(pair.target, pair.draft, prompt, method, cfg, torch.Generator().manual_seed(args.seed))
    text = pair.decode(res.tokens)
    hist = Counter(s.accepted + 1 for s in res.steps)
    desc = method if isinstance(method, str) else method.describe()
    if args.json:
        print(json.dumps({"prompt": args.prompt, "continuation": text, "method": desc,
                          "temperature": args.temperature, "steps": len(res.steps),
                          "tokens_per_step": res.tokens_per_step, "tokens_per_second": res.tokens_per_second,
                          "tokens_per_step_histogram": {str(k): hist[k] for k in sorted(hist)},
                          "mean_tree_nodes": sum(s.tree_nodes for s in res.steps) / len(res.steps),
                          "device": args.device, "seed": args.seed}))
        return 0
    print(args.prompt + text)
    print("-" * 60)
    print(f"method          : {desc}")
    print(f"temperature     : {args.temperature:g}" + ("  (greedy)" if args.temperature == 0 else ""))
    print(f"tokens          : {len(res.tokens)} in {len(res.steps)} steps")
    print(f"tokens per step : {res.tokens_per_step:.3f}")
    print("|Z| histogram   : " + ", ".join(f"{k}: {hist[k]}" for k in sorted(hist)))
    print(f"tree nodes/step : {sum(s.tree_nodes for s in res.steps) / len(res.steps):.1f}")
    print(f"draft passes    : {sum(s.draft_passes for s in res.steps) / len(res.steps):.1f} per step")
    print(f"speed           : {res.tokens_per_second:.1f} tokens/s on {args.device} ({res.seconds:.2f} s)")
    return 0


def _cmd_bench(args) -> int:
    torch = _torch()
    _tree_defaults(args)
    from .decode.bench import bench_methods, cost_ratio, format_table, run_bench, table_json

    _check_target_trunc(args)
    _set_threads(torch, args.threads)
    wanted = [m.strip() for m in args.methods.split(",") if m.strip()]
    all_methods = {m if isinstance(m, str) else m.method: m
                   for m in bench_methods(args.top_k, args.depth, args.budget, args.head, args.proxy)}
    unknown = [m for m in wanted if m not in all_methods]
    if unknown:
        raise RheoError(f"unknown method {unknown[0]!r}; choose from {', '.join(all_methods)}")
    _warn_if_lossy([all_methods[m] for m in wanted])
    if "autoregressive" not in wanted:
        wanted.insert(0, "autoregressive")  # the speed-up baseline
    wanted.sort(key=lambda m: m != "autoregressive")
    pair, prompts = _load_pair(args)
    log = None if args.json else print
    t_target, t_draft, ratio = cost_ratio(pair)
    if log:
        print(f"{args.model} pair on {args.device}: target {pair.target.num_params()} params, draft "
              f"{pair.draft.num_params()} params; K={args.top_k} D={args.depth} N={args.budget}, "
              f"{args.max_new_tokens} tokens x {len(prompts)} prompts x {args.repeats}")
        print(f"one cached pass: target {t_target * 1e3:.2f} ms, draft {t_draft * 1e3:.2f} ms "
              f"(cost ratio {ratio:.2f})")
        print(format_table([], header=True))
    rows = run_bench(pair, [all_methods[m] for m in wanted], args.temperatures, args.max_new_tokens,
                     args.repeats, args.seed, prompts=prompts, top_k=args.target_top_k, top_p=args.target_top_p,
                     log=log, draft_temp=args.draft_temperature)
    if args.json:
        print(json.dumps({"device": args.device, "target_pass_s": t_target, "draft_pass_s": t_draft,
                          "cost_ratio": ratio, "rows": table_json(rows)}))
    else:
        print()
        print(format_table(rows))
    return 0
