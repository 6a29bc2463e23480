"""The tree size ``--budget auto`` chooses for a model pair, per method and temperature, with its table.

Usage:
    python benchmarks/tree_size.py [--model smollm2|builtin] [--methods rheo-tuned,chain]
                                   [--temperatures 0,1] [--threads 2] [--out benchmarks/results/tree_size.json]

Runs :func:`rheotheory.decode.evaluation.budget.choose_size` (no cache) for each (method, temperature):
the measured pass-cost curve, the draft's pass cost, and for each candidate (K, D, N) the pilot's
tokens per step and its standard error, the predicted speed-up, that prediction at tau less one
standard error (the ranking) and the physical limit; prints the table and writes it
as JSON with its provenance. The ``smollm2`` row of ``rheotheory.methods.TREE_SIZES`` is the
size this chose for rheo-tuned at T = 1 on the project's 2-core CPU (docs/guide/real-models.md).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=("smollm2", "builtin"), default="smollm2")
    ap.add_argument("--methods", default="rheo-tuned,chain")
    ap.add_argument("--temperatures", default="0,1")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    os.environ["RHEO_NO_SIZE_CACHE"] = "1"
    import torch

    from rheotheory.decode.evaluation.bench import cost_ratio
    from rheotheory.decode.evaluation.budget import CANDIDATES, best, choose_size, measured_costs
    from rheotheory.methods import resolve
    from rheotheory.provenance import write_provenance

    started = time.time()
    torch.set_num_threads(args.threads)
    if args.model == "smollm2":
        from rheotheory.decode.backends.smollm import SMOL_PROMPTS as PROMPTS
        from rheotheory.decode.backends.smollm_pair import DEFAULT_DRAFT, load_smollm2

        pair = load_smollm2("cpu", draft=DEFAULT_DRAFT)
    else:
        from rheotheory.decode.evaluation.bench import BENCH_PROMPTS as PROMPTS
        from rheotheory.decode.backends.builtin import load_builtin_pair

        pair = load_builtin_pair("cpu")
    costs = measured_costs(pair.target)
    t_target, t_draft, _ = cost_ratio(pair)
    print(f"{args.model}, {args.threads} threads: target pass over n tokens (ms, min of 15): "
          + ", ".join(f"{n}: {1e3 * c:.2f}" for n, c in costs.items()) + f"; draft pass {1e3 * t_draft:.2f} ms",
          flush=True)
    rows = []
    for spec in args.methods.split(","):
        for T in (float(x) for x in args.temperatures.split(",")):
            m = resolve(spec, size=CANDIDATES[-1])
            print(f"{spec} at T = {T:g}:", flush=True)
            size, table = choose_size(pair, m, T, PROMPTS, args.model, threads=args.threads, log=print, costs=costs,
                                      draft_s=t_draft)  # NOTE: one cost curve for every row of the table
            top = best(table)
            print(f"  chosen K,D,N = {size} (predicted speed-up {top['predicted_speedup']:.2f}x, physical limit "
                  f"{top['physical_limit']:.2f}x)", flush=True)
            rows.append({"method": spec, "temperature": T, "size": list(size), "table": table})
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"model": args.model, "threads": args.threads,
                                        "pass_costs_s": {str(k): v for k, v in costs.items()},
                                        "draft_pass_s": t_draft, "rows": rows}, indent=1))
        write_provenance(args.out, seed=0, started=started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
