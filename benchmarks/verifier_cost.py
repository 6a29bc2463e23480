"""What each tree-level verifier costs per step at V = 32k, beside the per-node ones.

Usage::

    python benchmarks/verifier_cost.py                 # about 2 minutes; prints the table
    python benchmarks/verifier_cost.py --json out.json # and writes it (the landscape page renders it)

On the V = 32,000 synthetic pair (low mismatch, top-128 sparse draft, T = 1), for each (family,
verifier) at the node budget N = 16 (a chain of D = 4; a static tree and a multichain of W = 4
chains of D = 4), ``--steps`` trees are built from fresh contexts and the target laws of all their
nodes computed *before* the clock starts; then only the verifier runs (``sample_outcome``, the code
path of Monte Carlo and of the decoder), and the table gives the median and the 90th percentile
of its microseconds per step, one process. That isolates what a verifier adds to a decoding step;
on a real model a step also pays the draft and target passes (tens of milliseconds on a CPU,
``benchmarks/step_profile.py``). A wall-clock table: run it on a quiet machine (its recipe checks).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from rheotheory import resolve
from rheotheory.montecarlo import CONTEXT_LENGTH
from rheotheory.synthetic import SyntheticPair, mismatch_value
from rheotheory.trees import RandomChooser
from rheotheory.verify.walk import SampleBranch, method_tree_verifier, sample_outcome

#: (family as the optimum table names it, method spec): every verifier at the same node budget N = 16.
ROWS = (
    ("chain", "chain"),
    ("chain", "chain:verifier=block"),
    ("chain", "chain:verifier=gbv"),
    ("static-iid", "static-iid"),
    ("static-iid", "static-iid:verifier=traversal"),
    ("static-wor", "static-wor"),
    ("static-wor", "static-wor:verifier=traversal"),
    ("multichain", "multichain:width=4:verifier=kseq"),
    ("multichain", "multichain:width=4:verifier=traversal"),
    ("multichain", "multichain:width=4:verifier=gbv"),
    ("eagle", "eagle"),
    ("rheo", "rheo"),
    ("rheo-tuned", "rheo-tuned"),
)
SIZE = (4, 4, 16)
VOCAB, PAIR_SEED, TEMPERATURE = 32_000, 0, 1.0


def measure(spec: str, steps: int, seed: int = 0) -> dict:
    """Microseconds of the verifier alone per step (trees and target laws prepared beforehand)."""
    pair = SyntheticPair(VOCAB, seed=PAIR_SEED, mismatch=mismatch_value("low"), draft_top_k=128,
                         temperature=TEMPERATURE)
    method = resolve(spec, size=SIZE).at_temperature(TEMPERATURE)
    verifier = method_tree_verifier(method)
    rng, crng = np.random.default_rng([seed, 1]), np.random.default_rng([seed, 2])
    prepared = []
    for _ in range(steps):
        ctx = tuple(int(x) for x in crng.integers(0, VOCAB, size=CONTEXT_LENGTH))
        step_pair = pair.at(ctx)
        tree = method.builder(step_pair)(RandomChooser(rng))
        laws = {}

        def target(node, prefix, laws=laws, step_pair=step_pair):
            if prefix not in laws:
                laws[prefix] = step_pair.p(prefix)
            return laws[prefix]

        # warm the cache: one untimed run visits the prefixes the timed runs read (same uniforms)
        state = rng.bit_generator.state
        sample_outcome(verifier, tree, target, SampleBranch(rng.random))
        prepared.append((tree, target, state))
    us, lengths = [], []
    for tree, target, state in prepared:
        r = np.random.default_rng()
        r.bit_generator.state = state
        t0 = time.perf_counter()
        out = sample_outcome(verifier, tree, target, SampleBranch(r.random))
        us.append((time.perf_counter() - t0) * 1e6)
        lengths.append(len(out.z))
    return dict(spec=spec, method=method.describe(), verifier=method.verifier, steps=steps,
                median_us=float(np.median(us)),
                p90_us=float(np.percentile(us, 90)), tau=float(np.mean(lengths)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200, help="steps per row (default 200)")
    ap.add_argument("--json", default=None, help="also write the rows to this JSON file")
    args = ap.parse_args(argv)
    if args.steps < 2:
        print("verifier_cost: --steps must be at least 2", file=sys.stderr)
        return 2
    rows = []
    print(f"{'family':18} {'method':58} {'median us':>10} {'p90 us':>9} {'tau':>6}")
    for family, spec in ROWS:
        r = measure(spec, args.steps)
        r["label"] = family
        rows.append(r)
        print(f"{family:18} {r['method'][:58]:58} {r['median_us']:10.0f} {r['p90_us']:9.0f} {r['tau']:6.2f}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(vocab=VOCAB, size=SIZE, temperature=TEMPERATURE, mismatch="low", draft_top_k=128,
                           rows=rows), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
