"""Lossless check with SmolLM2-135M-Instruct: the first two generated tokens after fixed prompts.

Speculative decoding (rheo K=2 D=2 N=4, OT verifier, the int4 draft) is run N times per prompt;
the pairs (x1, x2) are compared with the exact target law p(x1) p(x2 | x1) by a chi-square test
(:func:`rheotheory.decode.smollm.lossless_test_large_vocab`: the test of the built-in pair, cells
and pooling rule of :mod:`rheotheory.stats`). The same test with the planted skip-residual
verifier (``ot_skip_residual``) must reject.

    python3 benchmarks/smollm2_lossless.py --n 200 --seed 20261129
"""

from __future__ import annotations

import argparse
import time

import torch

from rheotheory.decode.checks import ot_skip_residual
from rheotheory.decode.engine import DecodeConfig
from rheotheory.decode.smollm import DEFAULT_DRAFT, SMOL_PROMPTS, load_smollm2, lossless_test_large_vocab
from rheotheory.methods import make_method

#: Significance level.
ALPHA = 1e-3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200, help="runs per prompt")
    ap.add_argument("--seed", type=int, default=20261129)
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--draft", default=DEFAULT_DRAFT)
    ap.add_argument("--skip-biased", action="store_true", help="do not run the planted-bug companion")
    args = ap.parse_args()
    torch.set_num_threads(1)
    pair = load_smollm2(draft=args.draft)
    prompts = (SMOL_PROMPTS[0], SMOL_PROMPTS[5])
    method = make_method("rheo", top_k=2, depth=2, budget=4)
    cfg = DecodeConfig(temperature=args.temperature)
    print(f"draft: {pair.manifest['draft']}; method: {method.describe()}; T = {args.temperature:g}; "
          f"prompts: {prompts!r}; N = {args.n} per prompt; seed {args.seed}; alpha = {ALPHA:g}")
    variants = [("ot (as shipped)", None)]
    if not args.skip_biased:
        variants.append(("ot_skip_residual (biased)", ot_skip_residual))
    for name, verifier in variants:
        t0 = time.perf_counter()
        res = lossless_test_large_vocab(pair, prompts, method, cfg, args.n, args.seed, verifier=verifier)
        print(f"{name:<27} {res.report(ALPHA)} ({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
