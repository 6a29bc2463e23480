"""Lossless check with SmolLM2-135M-Instruct: the first two generated tokens after fixed prompts.

Speculative decoding (every method of ``--methods`` at K=2 D=2 N=4, the default draft) is run N
times per prompt;
the pairs (x1, x2) are compared with the exact target law p(x1) p(x2 | x1) by a chi-square test
(:func:`rheotheory.decode.backends.smollm.lossless_test_large_vocab`: the test of the built-in pair, cells
and pooling rule of :mod:`rheotheory.stats`). The same test with the planted skip-residual
verifier (``ot_skip_residual``, on rheo) must reject.

    python3 benchmarks/smollm2_lossless.py --n 200 --seed 20261129
"""

from __future__ import annotations

import argparse

import torch

from rheotheory.testing.mutants import ot_skip_residual
from rheotheory.decode.evaluation.checks import lossless_table
from rheotheory.decode.engine import DecodeConfig
from rheotheory.decode.backends.smollm import SMOL_PROMPTS, lossless_test_large_vocab
from rheotheory.decode.backends.smollm_pair import DEFAULT_DRAFT, load_smollm2
from rheotheory.methods import resolve

#: Significance level.
ALPHA = 1e-3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200, help="runs per prompt")
    ap.add_argument("--seed", type=int, default=20261129)
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--draft", default=DEFAULT_DRAFT)
    ap.add_argument("--methods", default="chain,static-wor,eagle,rheo,rheo-tuned")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--skip-biased", action="store_true", help="do not run the planted-bug companion")
    ap.add_argument("--out", default=None, metavar="CSV", help="also write one row per method to this CSV")
    ap.add_argument("--no-verdict", action="store_true",
                    help="report the statistics without a verdict (a size too small for the planted bug to be "
                    "rejected: the quick recipes)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    pair = load_smollm2(draft=args.draft)
    prompts = (SMOL_PROMPTS[0], SMOL_PROMPTS[5])
    methods = [(spec, resolve(spec, size=(2, 2, 4))) for spec in args.methods.split(",")]
    cfg = DecodeConfig(temperature=args.temperature)
    print(f"draft: {pair.manifest['draft']}; K=2 D=2 N=4; T = {args.temperature:g}; "
          f"prompts: {prompts!r}; N = {args.n} per prompt; seed {args.seed}; alpha = {ALPHA:g}")
    variants = [(spec, m, None) for spec, m in methods]
    if not args.skip_biased:
        variants.append(("rheo + ot_skip_residual (planted bug)", resolve("rheo", size=(2, 2, 4)), ot_skip_residual))
    lossless_table(variants, lambda method, verifier: lossless_test_large_vocab(pair, prompts, method, cfg, args.n,
                                                                                 args.seed, verifier=verifier),
                   ALPHA, args.out, verdict=not args.no_verdict)

if __name__ == "__main__":
    main()
