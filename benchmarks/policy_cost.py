"""What rheo-online's step policy costs, against the step it chooses.

Usage::

    python benchmarks/policy_cost.py                  # a few seconds; prints the table
    python benchmarks/policy_cost.py --json out.json  # and writes it (docs/guide/adaptive.md renders it)

The policy (docs/theory.md section 2.8) runs twice per step: ``choose`` before the step (the
Thompson draw over the arms) and ``after`` once it has emitted (the counts). Timed here on a
policy that has already seen ``--warm`` steps, median of ``--repeats`` calls, for both rules. The
steps it is set against, each timed whole (median microseconds per step, one process): a
Monte-Carlo step of its first arm on the V = 32k synthetic pair (K, D, N = 4, 4, 16, T = 1: tree
construction, target laws, verification) and a decoding step of the built-in character-level pair
on this CPU (draft passes, one target pass, verification), the cheapest real step the project
runs; a SmolLM2 step costs tens of milliseconds more. A wall-clock table: run it on a quiet
machine (its recipe checks).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from rheotheory import resolve
from rheotheory.montecarlo import run_steps
from rheotheory.synthetic import SyntheticPair

SIZE = (4, 4, 16)
VOCAB, TEMPERATURE = 32_000, 1.0


def policy_us(rule: str, warm: int, repeats: int) -> tuple[float, float]:
    """Median microseconds of ``choose`` and of ``after`` on a policy ``warm`` steps in."""
    method = resolve(f"rheo-online:rule={rule}", size=SIZE).at_temperature(TEMPERATURE)
    policy = method.policy(0)
    rng = np.random.default_rng(0)
    for _ in range(warm):
        arm = policy.choose()
        policy = policy.after(arm, tuple(range(int(rng.integers(1, SIZE[1] + 2)))))
    choose, after = [], []
    z = (1, 2, 3)
    for _ in range(repeats):
        t0 = time.perf_counter()
        arm = policy.choose()
        t1 = time.perf_counter()
        policy.after(arm, z)
        t2 = time.perf_counter()
        choose.append(t1 - t0)
        after.append(t2 - t1)
    return float(np.median(choose)) * 1e6, float(np.median(after)) * 1e6


def synthetic_step_us(steps: int) -> float:
    """Median microseconds of one Monte-Carlo step of the policy's first arm at V = 32k."""
    pair = SyntheticPair(VOCAB, seed=0, temperature=TEMPERATURE)
    method = resolve("rheo-online", size=SIZE).at_temperature(TEMPERATURE).first()
    run_steps(pair, method, 3, seed=1, contexts=True)  # warm-up
    times = []
    for i in range(steps):
        t0 = time.perf_counter()
        run_steps(pair, method, 1, seed=10 + i, contexts=True)
        times.append(time.perf_counter() - t0)
    return float(np.median(times)) * 1e6


def builtin_step_us(tokens: int) -> float:
    """Median microseconds per step of decoding the built-in pair with rheo-online at T = 1 (one thread)."""
    import torch

    from rheotheory.decode import DecodeConfig, decode, load_builtin_pair

    torch.set_num_threads(1)
    pair = load_builtin_pair()
    method = resolve("rheo-online", size="builtin")
    cfg = DecodeConfig(temperature=TEMPERATURE, max_new_tokens=tokens)
    prompt = pair.encode("def fib(")
    decode(pair.target, pair.draft, prompt, method, cfg, torch.Generator().manual_seed(0))  # warm-up
    per = []
    for seed in range(1, 6):
        r = decode(pair.target, pair.draft, prompt, method, cfg, torch.Generator().manual_seed(seed))
        per.append(r.seconds / len(r.steps))
    return float(np.median(per)) * 1e6


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--warm", type=int, default=200, help="steps the timed policy has already seen (default 200)")
    ap.add_argument("--repeats", type=int, default=2000, help="timed policy calls (default 2000)")
    ap.add_argument("--steps", type=int, default=40, help="timed synthetic steps (default 40)")
    ap.add_argument("--json", default=None, help="also write the table as JSON")
    args = ap.parse_args(argv)
    rows = []
    syn, real = synthetic_step_us(args.steps), builtin_step_us(64)
    for rule in ("thompson", "ucb1"):
        c, a = policy_us(rule, args.warm, args.repeats)
        rows.append({"rule": rule, "choose_us": c, "after_us": a, "policy_us": c + a,
                     "synthetic_step_us": syn, "builtin_step_us": real,
                     "share_of_synthetic_step": (c + a) / syn, "share_of_builtin_step": (c + a) / real})
    print(f"{'rule':<9} {'choose us':>9} {'after us':>9} {'V=32k step us':>14} {'built-in step us':>17} "
          f"{'share (32k)':>11} {'share (built-in)':>16}")
    for r in rows:
        print(f"{r['rule']:<9} {r['choose_us']:>9.1f} {r['after_us']:>9.1f} {r['synthetic_step_us']:>14.0f} "
              f"{r['builtin_step_us']:>17.0f} {100 * r['share_of_synthetic_step']:>10.2f}% "
              f"{100 * r['share_of_builtin_step']:>15.2f}%")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "warm": args.warm, "repeats": args.repeats, "steps": args.steps}, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
