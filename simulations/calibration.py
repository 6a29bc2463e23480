"""Calibration and power of the Monte-Carlo lossless test, and coverage of the tau interval.

Usage::

    python3 simulations/calibration.py            # about 5 minutes on one core
    python3 simulations/calibration.py --quick    # fewer runs, for a smoke check

Prints three tables and writes ``simulations/results/calibration.json``:

1. false-rejection rate of lossless methods at alpha = 0.01 over 200 seeded null runs each
   (target: <= 0.02);
2. power against the ``true`` proxy on the random instances where the exact certifier found it
   lossy (exact deviation given), at several sample sizes;
3. coverage of the 95% interval of the Monte-Carlo tau around the exact tau (200 seeds).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from rheotheory import make_method, certify, random_pair
from rheotheory.montecarlo import run_steps
from rheotheory.stats import lossless_test

RESULTS = Path(__file__).resolve().parent / "results"
ALPHA = 0.01

NULL_SETUPS = [
    ("random_pair(3,2,seed=6)", random_pair(3, 2, seed=6),
     make_method("rheo", top_k=2, depth=2, budget=4, proxy="next", verifier="sequential")),
    ("random_pair(4,3,seed=3,mismatch=0.6)", random_pair(4, 3, seed=3, mismatch=0.6),
     make_method("rheo", top_k=3, depth=3, budget=6, head=1, proxy="next", verifier="ot")),
]


def null_runs(runs: int, samples: int) -> list[dict]:
    out = []
    for name, pair, method in NULL_SETUPS:
        assert certify(pair, method).lossless
        t0 = time.perf_counter()
        rej = sum(not lossless_test(pair, method, samples=samples, alpha=ALPHA, seed=s).lossless for s in range(runs))
        out.append({"instance": name, "method": method.describe(), "runs": runs, "samples": samples,
                    "alpha": ALPHA, "rejections": rej, "false_rejection_rate": rej / runs,
                    "seconds": round(time.perf_counter() - t0, 1)})
        print(f"null  {name:38s} {method.describe():50s} runs={runs} n={samples} "
              f"rejected={rej} rate={rej / runs:.3f}", flush=True)
    return out


def power_runs(instances: int, runs: int, sizes: list[int]) -> list[dict]:
    out = []
    found = 0
    for seed in range(60):
        if found >= instances:
            break
        pair = random_pair(3, 2, seed=seed)
        for ver in ("sequential", "ot"):
            method = make_method("rheo", top_k=2, depth=2, budget=4, proxy="true", verifier=ver)
            cert = certify(pair, method)
            if cert.lossless:
                continue
            found += 1
            row = {"instance": f"random_pair(3,2,seed={seed})", "method": method.describe(),
                   "exact_max_deviation": float(cert.max_deviation), "runs": runs}
            for n in sizes:
                rej = sum(not lossless_test(pair, method, samples=n, alpha=ALPHA, seed=s).lossless
                          for s in range(runs))
                row[f"power_n{n}"] = rej / runs
            out.append(row)
            print("power " + "  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()),
                  flush=True)
            if found >= instances:
                break
    return out


def coverage_runs(runs: int, steps: int) -> list[dict]:
    out = []
    pair = random_pair(4, 3, seed=3, mismatch=0.6)
    for method in (make_method("eagle", top_k=3, depth=3, budget=6), make_method("rheo", top_k=3, depth=3, budget=6, head=1),
                   make_method("static", shape=[[0], [1], [0, 0]], verifier="rrs")):
        tau = float(certify(pair, method).tokens_per_step)
        hit = 0
        for s in range(runs):
            r = run_steps(pair, method, steps, seed=s)
            hit += r.tau_low <= tau <= r.tau_high
        out.append({"method": method.describe(), "exact_tau": tau, "runs": runs, "steps": steps,
                    "coverage_95": hit / runs})
        print(f"cover {method.describe():50s} exact tau={tau:.4f} runs={runs} steps={steps} coverage={hit / runs:.3f}",
              flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    runs = 20 if args.quick else 200
    t0 = time.perf_counter()
    res = {
        "null": null_runs(runs, 1000),
        "power": power_runs(3 if args.quick else 6, 5 if args.quick else 10, [2000, 8000]),
        "coverage": coverage_runs(runs, 400),
    }
    res["seconds"] = round(time.perf_counter() - t0, 1)
    if not args.quick:
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / "calibration.json").write_text(json.dumps(res, indent=1) + "\n")
    print(f"time: {res['seconds']} s")


if __name__ == "__main__":
    main()
