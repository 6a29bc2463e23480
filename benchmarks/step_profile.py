"""Where a speculative step's time goes: target pass, draft passes, verification, tree building and Python.

Usage:
    python benchmarks/step_profile.py [--model smollm2|builtin] [--methods SPEC,...] [--size K,D,N]
                                      [--temperatures 0,1] [--tokens 64] [--prompts 2] [--threads 2]
                                      [--head-rows 1,3]
                                      [--out benchmarks/results/step_profile.json]

Decodes the model's first ``--prompts`` benchmark prompts with each method and autoregressive
sampling (seed 0) and times, inside the decoding loop, each part of every step by wrapping the
engine's functions (:mod:`rheotheory.decode.engine`):

- ``target``: the target's cached pass over the tree (``_State.target_pass``);
- ``draft``: the draft's passes (its ``extend`` and ``catch_up``: the catch-up on the accepted
  path and one pass per tree level);
- ``verify``: the verifier's walk (``sample_outcome``, the target laws it reads included);
- ``tree + Python``: the rest of the step (tree building, resolution, bookkeeping).

Prints milliseconds per step and per emitted token for each part and writes the table as JSON
with its provenance. The wrappers cost a few microseconds per call.

``--head-rows 1,3`` profiles every tree method once per value of the engine's
``CPU_HEAD_ROWS`` (how many rows of a deferred output head one product computes: 1 is the
row-by-row reading the engine used before, 3 its default), so the table shows the step before
and after that change, measured in the same run (a target without a deferred head, such as the
built-in pair's, is profiled once).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


class Timer:
    def __init__(self):
        self.t = {}

    def wrap(self, key, fn):
        def timed(*a, **k):
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                self.t[key] = self.t.get(key, 0.0) + time.perf_counter() - t0
        return timed


def profile(pair, method, T, prompts, tokens, seed=0):
    import torch

    from rheotheory.decode import engine
    from rheotheory.decode.engine import DecodeConfig, decode

    tm = Timer()
    saved = {"target_pass": engine._State.target_pass, "sample_outcome": engine.sample_outcome,
             "_tree_step": engine._tree_step, "_autoregressive_step": engine._autoregressive_step}
    draft = pair.draft
    dsaved = {name: getattr(draft, name) for name in ("extend", "catch_up") if hasattr(draft, name)}
    engine._State.target_pass = tm.wrap("target", saved["target_pass"])
    engine.sample_outcome = tm.wrap("verify", saved["sample_outcome"])
    engine._tree_step = tm.wrap("step", saved["_tree_step"])
    engine._autoregressive_step = tm.wrap("step", saved["_autoregressive_step"])
    for name, fn in dsaved.items():
        setattr(draft, name, tm.wrap("draft", fn))
    steps = emitted = 0
    seconds = 0.0
    try:
        cfg = DecodeConfig(temperature=T, max_new_tokens=tokens)
        gen = torch.Generator().manual_seed(seed)
        decode(pair.target, pair.draft, pair.encode(prompts[0]) if isinstance(prompts[0], str) else prompts[0],
               method, cfg, gen)  # warm-up, not counted
        tm.t.clear()
        for p in prompts:
            ids = pair.encode(p) if isinstance(p, str) else list(p)
            r = decode(pair.target, pair.draft, ids, method, cfg, gen)
            steps += len(r.steps)
            emitted += sum(s.accepted + 1 for s in r.steps)
            seconds += r.seconds
    finally:
        engine._State.target_pass = saved["target_pass"]
        engine.sample_outcome = saved["sample_outcome"]
        engine._tree_step = saved["_tree_step"]
        engine._autoregressive_step = saved["_autoregressive_step"]
        for name in dsaved:
            delattr(draft, name)  # NOTE: the instance attribute shadowed the class's method
    t = tm.t
    if method.nodes == 0:  # autoregressive: the whole step is one target pass plus sampling
        t["target"] = t.get("step", 0.0)
    parts = {k: t.get(k, 0.0) for k in ("target", "draft", "verify")}
    parts["tree + Python"] = max(0.0, seconds - sum(parts.values()))
    return {"temperature": T, "steps": steps, "emitted": emitted, "tokens_per_step": emitted / steps,
            "seconds": seconds, "ms_per_step": {k: 1e3 * v / steps for k, v in parts.items()},
            "ms_per_token": 1e3 * seconds / emitted}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=("smollm2", "builtin"), default="smollm2")
    ap.add_argument("--methods", default="autoregressive,chain,rheo-tuned")
    ap.add_argument("--size", default=None, help="K,D,N for every method (default: the model's TREE_SIZES row)")
    ap.add_argument("--temperatures", default="0,1")
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--prompts", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--head-rows", default="1,3",
                    help="values of the engine's CPU_HEAD_ROWS to profile each tree method with (default 1,3)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    try:
        head_rows = [int(x) for x in args.head_rows.split(",")]
        if not head_rows or min(head_rows) < 1:
            raise ValueError
    except ValueError:
        ap.error(f"--head-rows: positive integers separated by commas, got {args.head_rows!r}")
    import torch

    from rheotheory.methods import resolve
    from rheotheory.provenance import write_provenance

    started = time.time()
    torch.set_num_threads(args.threads)
    if args.model == "smollm2":
        from rheotheory.decode.backends.smollm import SMOL_PROMPTS as PROMPTS
        from rheotheory.decode.backends.smollm_pair import DEFAULT_DRAFT, load_smollm2

        pair = load_smollm2("cpu", draft=DEFAULT_DRAFT)
        row = "smollm2"
    else:
        from rheotheory.decode.evaluation.bench import BENCH_PROMPTS as PROMPTS
        from rheotheory.decode.backends.builtin import load_builtin_pair

        pair = load_builtin_pair("cpu")
        row = "builtin"
    from rheotheory.decode import engine
    from rheotheory.methods import TREE_SIZES

    default_rows = engine.CPU_HEAD_ROWS

    size = tuple(int(x) for x in args.size.split(",")) if args.size else TREE_SIZES.get(row, TREE_SIZES["model"])
    rows = []
    head = f"{'method':<15} {'T':>4} {'rows':>4} {'tok/step':>8} {'target':>8} {'draft':>8} {'verify':>8} " \
           f"{'tree+Py':>8} {'step ms':>8} {'ms/token':>8}"
    print(f"{args.model}, {args.threads} threads, size K,D,N = {size}; ms per step", flush=True)
    print(head)
    for T in (float(x) for x in args.temperatures.split(",")):
        for spec in args.methods.split(","):
            m = resolve(spec, size=size)
            for hr in head_rows if m.nodes and hasattr(pair.target, "extend_hidden") else [None]:
                if hr is not None:
                    engine.CPU_HEAD_ROWS = hr
                try:
                    r = profile(pair, m, T, PROMPTS[:args.prompts], args.tokens)
                finally:
                    engine.CPU_HEAD_ROWS = default_rows
                r.update(method=spec, size=list(size) if m.nodes else None, head_rows=hr)
                rows.append(r)
                ms = r["ms_per_step"]
                print(f"{spec:<15} {T:>4g} {'-' if hr is None else hr:>4} {r['tokens_per_step']:>8.2f} "
                      f"{ms['target']:>8.2f} {ms['draft']:>8.2f} {ms['verify']:>8.2f} {ms['tree + Python']:>8.2f} "
                      f"{sum(ms.values()):>8.2f} {r['ms_per_token']:>8.2f}", flush=True)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"model": args.model, "threads": args.threads, "size": list(size),
                                        "tokens": args.tokens, "prompts": args.prompts, "head_rows": head_rows,
                                        "default_head_rows": default_rows, "rows": rows}, indent=1))
        write_provenance(args.out, seed=0, started=started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
