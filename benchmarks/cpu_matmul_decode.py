"""SmolLM2 decoding with both CPU matrix products: PyTorch's default and oneDNN's over packed weights.

Usage:
    python benchmarks/cpu_matmul_decode.py [--threads 2,1] [--prompts 6] [--max-new-tokens 48]
                                           [--methods autoregressive,rheo-tuned] [--temperature 1]
                                           [--out benchmarks/results/cpu_matmul_decode.json]

One loaded pair (``rheo decode --model smollm2``'s: the target and the shipped head, packed by
:mod:`rheotheory.decode.backends.cpu_matmul`); the default product is switched in with
``cpu_matmul.default_product()``, so both products run the very same weights. For each thread
setting, each held-out ShareGPT prompt is decoded by every method with both products, in an order
that rotates prompt by prompt (a load on the machine falls on all alike), with the same seed for
both products. Reported per (threads, method, product): tokens per second and tokens per step, and
per (threads, method) the paired ratio packed / default of tokens per second with its 95%
percentile interval from a bootstrap over the prompts (the ratio estimator sum(tokens) /
sum(seconds) per product). Methods run at ``rheo decode``'s default tree size. Wall-clock figures:
run it on a quiet machine (``python simulations/recipes.py run cpu_matmul_decode`` checks the load).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PRODUCTS = ("default", "onednn")


def _interval(tok, sec, ref_tok, ref_sec, seed: int = 0, resamples: int = 2000) -> tuple[float, float, float]:
    """Ratio of tokens/s (``tok``/``sec`` per prompt) over the reference's, its bootstrap 95% interval."""
    tok, sec, ref_tok, ref_sec = (np.asarray(a, dtype=float) for a in (tok, sec, ref_tok, ref_sec))
    est = (tok.sum() / sec.sum()) / (ref_tok.sum() / ref_sec.sum())
    idx = np.random.default_rng(seed).integers(0, len(tok), size=(resamples, len(tok)))
    boot = (tok[idx].sum(1) / sec[idx].sum(1)) / (ref_tok[idx].sum(1) / ref_sec[idx].sum(1))
    lo, hi = np.percentile(boot, [2.5, 97.5])
    return float(est), float(lo), float(hi)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", default="2,1", help="torch thread settings, in turn (default 2,1)")
    ap.add_argument("--prompts", type=int, default=6, help="held-out ShareGPT prompts (default 6)")
    ap.add_argument("--max-new-tokens", type=int, default=48)
    ap.add_argument("--methods", default="autoregressive,rheo-tuned")
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    try:
        threads = [int(t) for t in args.threads.split(",") if t]
    except ValueError:
        threads = []
    if not threads or min(threads) < 1 or args.prompts < 2 or args.max_new_tokens < 1:
        print("cpu_matmul_decode.py: error: --threads a list of positive integers, --prompts >= 2 (an interval "
              "needs them), --max-new-tokens >= 1", file=sys.stderr)
        return 2
    import torch

    from rheotheory.decode.backends import cpu_matmul
    from rheotheory.decode.backends.smollm_pair import load_smollm2
    from rheotheory.decode.engine import DecodeConfig, decode
    from rheotheory.decode.evaluation.bench import chat_template_of
    from rheotheory.prompts import encode_prompts, load_prompts
    from rheotheory.methods import TREE_SIZES, resolve
    from rheotheory.provenance import write_provenance

    if not cpu_matmul.available():
        print("cpu_matmul_decode.py: error: this PyTorch build has no oneDNN packed product", file=sys.stderr)
        return 2
    started = time.time()
    pair = load_smollm2("cpu")
    if pair.manifest.get("cpu_matmul") != "onednn-packed":
        print("cpu_matmul_decode.py: error: the pair was not packed (is RHEO_CPU_MATMUL=default set?)", file=sys.stderr)
        return 2
    prompts = encode_prompts(load_prompts(f"sharegpt:{args.prompts}")["sharegpt"], pair, chat_template_of(pair))
    methods = [(spec, resolve(spec, size="smollm2")) for spec in args.methods.split(",")]
    cfg = DecodeConfig(temperature=args.temperature, max_new_tokens=args.max_new_tokens)
    rows, lines = [], []
    with torch.inference_mode():
        for th in threads:
            torch.set_num_threads(th)
            runs = {(m, p): {"tokens": [], "seconds": [], "steps": []} for m, _ in methods for p in PRODUCTS}
            decode(pair.target, pair.draft, prompts[0], methods[0][1], cfg, torch.Generator().manual_seed(0))  # warm-up
            for i, ids in enumerate(prompts):
                order = PRODUCTS if i % 2 == 0 else PRODUCTS[::-1]
                for prod in order:
                    for spec, m in methods:
                        gen = torch.Generator().manual_seed(1000 + i)
                        t0 = time.perf_counter()
                        if prod == "default":
                            with cpu_matmul.default_product():
                                r = decode(pair.target, pair.draft, ids, m, cfg, gen)
                        else:
                            r = decode(pair.target, pair.draft, ids, m, cfg, gen)
                        sec = time.perf_counter() - t0
                        got = runs[(spec, prod)]
                        got["tokens"].append(len(r.tokens))
                        got["seconds"].append(sec)
                        got["steps"].append(len(r.steps))
                print(f"threads {th}: prompt {i + 1}/{len(prompts)}", file=sys.stderr, flush=True)
            for spec, _ in methods:
                d, o = runs[(spec, "default")], runs[(spec, "onednn")]
                ratio = _interval(o["tokens"], o["seconds"], d["tokens"], d["seconds"])
                row = {"threads": th, "method": spec, "prompts": len(prompts), "max_new_tokens": args.max_new_tokens,
                       "temperature": args.temperature,
                       **{f"{p}_tok_s": sum(runs[(spec, p)]["tokens"]) / sum(runs[(spec, p)]["seconds"]) for p in PRODUCTS},
                       **{f"{p}_tok_step": sum(runs[(spec, p)]["tokens"]) / max(1, sum(runs[(spec, p)]["steps"]))
                          for p in PRODUCTS},
                       "onednn_over_default": ratio[0], "onednn_over_default_ci95": list(ratio[1:]),
                       "runs": {p: runs[(spec, p)] for p in PRODUCTS}}
                rows.append(row)
    header = (f"{'threads':>7} {'method':<15} {'default tok/s':>13} {'oneDNN tok/s':>12} {'tok/step':>8} "
              f"{'oneDNN / default [95% CI]':>26}")
    lines.append(header)
    for r in rows:
        lo, hi = r["onednn_over_default_ci95"]
        ratio = f"{r['onednn_over_default']:.2f}x [{lo:.2f}, {hi:.2f}]"
        lines.append(f"{r['threads']:>7} {r['method']:<15} {r['default_tok_s']:>13.1f} {r['onednn_tok_s']:>12.1f} "
                     f"{r['onednn_tok_step']:>8.2f} {ratio:>26}")
    size = TREE_SIZES["smollm2"]  # NOTE: the row resolve(size="smollm2") reads
    lines.append(f"smollm2 + shipped head, T = {args.temperature:g}, {args.prompts} ShareGPT prompts x "
                 f"{args.max_new_tokens} tokens, K,D,N = {','.join(map(str, size))}; bootstrap over prompts")
    print("\n".join(lines))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"rows": rows, "table": lines}, indent=1) + "\n")
        write_provenance(args.out, seed=1000, started=started, recipe="cpu_matmul_decode")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
