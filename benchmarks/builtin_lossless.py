"""Lossless check with the built-in pair: the first two generated tokens after fixed prompts.

Each method (the default suite's small trees, plus rheo at the benchmark's size) is run N times
per prompt; the pairs (x1, x2) are compared with the exact target law p(x1) p(x2 | x1) by a
chi-square test (:func:`rheotheory.decode.evaluation.checks.lossless_test`; cells and pooling rule of
:mod:`rheotheory.stats`, statistics summed over the prompts). The same test with the planted
skip-residual verifier (``ot_skip_residual``) must reject. The output is the table of docs/guide/real-models.md.

    python3 benchmarks/builtin_lossless.py --n 400 --seed 20260601
    python3 benchmarks/builtin_lossless.py --out benchmarks/results/builtin_lossless.csv   # also a CSV

The table (docs/guide/) is rendered from that CSV (recipe ``builtin_lossless`` of ``simulations/recipes.py``).
"""

from __future__ import annotations

import argparse

import torch

from rheotheory.decode.backends.builtin import load_builtin_pair
from rheotheory.decode.evaluation.checks import lossless_table, lossless_test
from rheotheory.decode.engine import DecodeConfig
from rheotheory.methods import make_method, resolve
from rheotheory.testing.mutants import SkipResidualTraversal, ot_skip_residual

#: Significance level.
ALPHA = 1e-3
#: Prompts (those of the default-suite test).
PROMPTS = ("def fib(", "import ")
#: The static tree of the table: the greedy shape of 5 nodes and depth 2.
STATIC_SHAPE = [[0], [1], [0, 0], [0, 1], [1, 0]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=400, help="runs per prompt")
    ap.add_argument("--seed", type=int, default=20260601)
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--only", default=None, metavar="NAMES",
                    help="comma-separated row names to run (default: every row)")
    ap.add_argument("--out", default=None, metavar="CSV", help="also write one row per method to this CSV")
    args = ap.parse_args()
    torch.set_num_threads(1)
    pair = load_builtin_pair()
    cfg = DecodeConfig(temperature=args.temperature)
    rheo_small = make_method("rheo", top_k=2, depth=2, budget=4)
    variants = [
        ("chain", make_method("chain", depth=2), None),
        ("static", make_method("static", shape=STATIC_SHAPE), None),
        ("eagle", make_method("eagle", top_k=2, depth=2, budget=4), None),
        ("rheo", rheo_small, None),
        ("rheo (bench size)", resolve("rheo-tuned", size=(2, 4, 8)), None),
        ("rheo + skip-residual (biased)", rheo_small, ot_skip_residual),
        ("chain block", make_method("chain", depth=2, verifier="block"), None),
        ("static traversal", make_method("static", shape=STATIC_SHAPE, verifier="traversal"), None),
        ("static-wor traversal", make_method("static", shape=STATIC_SHAPE, sampling="wor", verifier="traversal"),
         None),
        ("static traversal skip-residual (biased)", make_method("static", shape=STATIC_SHAPE, verifier="traversal"),
         SkipResidualTraversal()),
    ]
    if args.only:
        wanted = [n.strip() for n in args.only.split(",")]
        variants = [v for v in variants if v[0] in wanted]
    print(f"built-in pair; T = {args.temperature:g}; prompts {PROMPTS!r}; N = {args.n} per prompt; "
          f"seed {args.seed}; alpha = {ALPHA:g}")
    lossless_table(variants, lambda method, verifier: lossless_test(pair, PROMPTS, method, cfg, args.n, args.seed,
                                                                     verifier=verifier), ALPHA, args.out, width=30)

if __name__ == "__main__":
    main()
