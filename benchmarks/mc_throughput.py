"""Monte-Carlo throughput (steps/s) and the cost and effect of the sparse draft.

Usage::

    python3 benchmarks/mc_throughput.py            # about 2 minutes on one core
    python3 benchmarks/mc_throughput.py --steps 30

For V = 1k and 32k, sparse draft (top-128) on and off, EAGLE and RheoSampling trees at
(K, D, N) = (4, 4, 16) and (10, 6, 60), T = 1: steps per second of the sampler (tree building,
verification and the synthetic laws, one process), tau, and the time to compute one draft law.
"""

from __future__ import annotations

import argparse
import time

from rheotheory import make_method
from rheotheory.montecarlo import run_steps
from rheotheory.synthetic import SyntheticPair

TREES = ((4, 4, 16), (10, 6, 60))


def draft_law_us(pair: SyntheticPair, n: int = 200) -> float:
    """Mean microseconds to compute a draft law at a fresh prefix."""
    t0 = time.perf_counter()
    for i in range(n):
        pair.q((i, 12345 % pair.vocab_size))
    return (time.perf_counter() - t0) / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=60)
    args = ap.parse_args()
    print(f"{'V':>6} {'draft':>8} {'q us':>7} {'K,D,N':>9} {'method':>6} {'steps/s':>8} {'tau':>6}  95% CI")
    for V in (1000, 32000):
        for sparse in (128, None):
            pair = SyntheticPair(V, seed=0, draft_top_k=sparse)
            q_us = draft_law_us(pair)
            for K, D, N in TREES:
                for name, method in (("eagle", make_method("eagle", top_k=K, depth=D, budget=N)),
                                     ("rheo", make_method("rheo", top_k=K, depth=D, budget=N, head=1))):
                    r = run_steps(pair, method, args.steps, seed=0, contexts=True)
                    label = f"top-{sparse}" if sparse else "dense"
                    print(f"{V:>6} {label:>8} {q_us:>7.0f} {f'{K},{D},{N}':>9} {name:>6} {r.steps_per_second:>8.1f} "
                          f"{r.tau:>6.2f}  [{r.tau_low:.2f}, {r.tau_high:.2f}]", flush=True)


if __name__ == "__main__":
    main()
