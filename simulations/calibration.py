"""Calibration and power of the Monte-Carlo lossless test, and coverage of the tau interval.

Usage::

    python3 simulations/calibration.py            # about 5 minutes on one core
    python3 simulations/calibration.py --quick    # fewer runs, for a smoke check
    python3 simulations/calibration.py --workers 4 --executor dask   # on a dask LocalCluster
    python3 simulations/calibration.py --resume   # continue an interrupted run

Prints three tables and writes ``simulations/results/calibration.json``:

1. false-rejection rate of lossless methods at alpha = 0.01 over 200 seeded null runs each
   (target: <= 0.02);
2. power against the ``true`` proxy on the random instances where the exact certifier found it
   lossy (exact deviation given), at several sample sizes;
3. coverage of the 95% interval of the Monte-Carlo tau around the exact tau (200 seeds).

Every Monte-Carlo run is one task with its own seed (run ``s`` of a setup uses seed ``s``, as
before), so the tables are the same whichever executor (``--executor process|dask|ray``,
``--scheduler ADDRESS``, ``--workers N``) runs them and in whatever order. Each finished run is
logged to ``calibration.json.partial`` (``calibration-quick.json.partial`` with ``--quick``);
``--resume`` runs only the missing ones. The JSON is written atomically at the end.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from rheotheory import make_method, certify, random_pair
from rheotheory.checkpoint import RowLog, atomic_open, run_logged
from rheotheory.errors import RheoError
from rheotheory.executors import EXECUTORS
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

#: Power: the ``true`` proxy with these verifiers on ``random_pair(3, 2, seed)``, seeds 0.. up to
#: POWER_SEEDS, keeping the (seed, verifier) pairs the exact certifier finds lossy.
POWER_VERIFIERS = ("sequential", "ot")
POWER_SEEDS = 60

#: Coverage: the instance and the methods whose Monte-Carlo tau interval is checked.
COVER_PAIR = random_pair(4, 3, seed=3, mismatch=0.6)
COVER_METHODS = [make_method("eagle", top_k=3, depth=3, budget=6),
                 make_method("rheo", top_k=3, depth=3, budget=6, head=1),
                 make_method("static", shape=[[0], [1], [0, 0]], verifier="rrs")]

#: Columns of a logged run: its outcome (1: rejected / interval hit, 0: not) and its seconds.
LOG_FIELDS = ("value", "seconds")


def power_method(verifier: str):
    return make_method("rheo", top_k=2, depth=2, budget=4, proxy="true", verifier=verifier)


def power_instances(instances: int) -> list[tuple]:
    """(seed, verifier, exact max deviation) of the first ``instances`` lossy cases, in order."""
    out = []
    for seed in range(POWER_SEEDS):
        pair = random_pair(3, 2, seed=seed)
        for ver in POWER_VERIFIERS:
            cert = certify(pair, power_method(ver))
            if not cert.lossless:
                out.append((seed, ver, float(cert.max_deviation)))
                if len(out) >= instances:
                    return out
    return out


def run_one(task: tuple) -> tuple:
    """One seeded Monte-Carlo run: ``(1 or 0, seconds)`` (top-level so that workers can run it).

    ``("null", setup, samples, seed)`` and ``("power", pair_seed, verifier, samples, seed)``: 1 if
    the lossless test rejects at ALPHA; ``("cover", method, steps, seed)``: 1 if the 95% interval
    of tau holds the exact tau ``exact``.
    """
    t0 = time.perf_counter()
    kind = task[0]
    if kind == "null":
        _, setup, samples, seed = task
        _, pair, method = NULL_SETUPS[setup]
        value = not lossless_test(pair, method, samples=samples, alpha=ALPHA, seed=seed).lossless
    elif kind == "power":
        _, pair_seed, verifier, samples, seed = task
        value = not lossless_test(random_pair(3, 2, seed=pair_seed), power_method(verifier), samples=samples,
                                  alpha=ALPHA, seed=seed).lossless
    else:
        _, m, steps, seed, exact = task
        r = run_steps(COVER_PAIR, COVER_METHODS[m], steps, seed=seed)
        value = r.tau_low <= exact <= r.tau_high
    return int(value), time.perf_counter() - t0


def task_key(task: tuple) -> str:
    return "/".join(str(x) for x in task[:5] if not isinstance(x, float))


def build_tasks(runs: int, samples: int, power: list[tuple], power_runs: int, sizes: list[int],
                steps: int, cover_tau: list[float]) -> list[tuple]:
    tasks = [("null", i, samples, s) for i in range(len(NULL_SETUPS)) for s in range(runs)]
    tasks += [("power", seed, ver, n, s) for seed, ver, _ in power for n in sizes for s in range(power_runs)]
    tasks += [("cover", m, steps, s, cover_tau[m]) for m in range(len(COVER_METHODS)) for s in range(runs)]
    return tasks


def tables(done: dict, runs: int, samples: int, power: list[tuple], power_runs: int, sizes: list[int],
           steps: int, cover_tau: list[float]) -> dict:
    """The three tables from the logged runs (``done``: task key -> row)."""
    def total(keys):
        return sum(int(done[k]["value"]) for k in keys), round(sum(float(done[k]["seconds"]) for k in keys), 1)

    res = {"null": [], "power": [], "coverage": []}
    for i, (name, _, method) in enumerate(NULL_SETUPS):
        rej, sec = total([task_key(("null", i, samples, s)) for s in range(runs)])
        res["null"].append({"instance": name, "method": method.describe(), "runs": runs, "samples": samples,
                            "alpha": ALPHA, "rejections": rej, "false_rejection_rate": rej / runs, "seconds": sec})
    for seed, ver, dev in power:
        row = {"instance": f"random_pair(3,2,seed={seed})", "method": power_method(ver).describe(),
               "exact_max_deviation": dev, "runs": power_runs}
        for n in sizes:
            row[f"power_n{n}"] = total([task_key(("power", seed, ver, n, s)) for s in range(power_runs)])[0] / power_runs
        res["power"].append(row)
    for m, method in enumerate(COVER_METHODS):
        hit = total([task_key(("cover", m, steps, s)) for s in range(runs)])[0]
        res["coverage"].append({"method": method.describe(), "exact_tau": cover_tau[m], "runs": runs, "steps": steps,
                                "coverage_95": hit / runs})
    return res


def print_tables(res: dict) -> None:
    for r in res["null"]:
        print(f"null  {r['instance']:38s} {r['method']:50s} runs={r['runs']} n={r['samples']} "
              f"rejected={r['rejections']} rate={r['false_rejection_rate']:.3f}")
    for row in res["power"]:
        print("power " + "  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()))
    for r in res["coverage"]:
        print(f"cover {r['method']:50s} exact tau={r['exact_tau']:.4f} runs={r['runs']} steps={r['steps']} "
              f"coverage={r['coverage_95']:.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--resume", action="store_true", help="continue an interrupted run from its .partial log")
    ap.add_argument("--executor", choices=EXECUTORS, default="process", help="where runs go (default process)")
    ap.add_argument("--scheduler", default=None, metavar="ADDRESS", help="dask scheduler or Ray cluster address")
    ap.add_argument("--workers", type=int, default=1, help="processes or local workers (default 1: this process)")
    ap.add_argument("--out", default=None, metavar="FILE",
                    help="JSON to write (default simulations/results/calibration.json, not written with --quick "
                    "unless --out is given)")
    args = ap.parse_args()
    runs = 20 if args.quick else 200
    samples, steps, sizes = 1000, 400, [2000, 8000]
    power_runs = 5 if args.quick else 10
    t0 = time.perf_counter()
    for _, pair, method in NULL_SETUPS:
        assert certify(pair, method).lossless
    power = power_instances(3 if args.quick else 6)
    cover_tau = [float(certify(COVER_PAIR, m).tokens_per_step) for m in COVER_METHODS]
    plan = dict(runs=runs, samples=samples, power=power, power_runs=power_runs, sizes=sizes, steps=steps,
                cover_tau=cover_tau)
    tasks = build_tasks(**plan)
    out = Path(args.out or RESULTS / "calibration.json")
    log_path = out.with_name(out.stem + "-quick" + out.suffix) if args.quick else out
    try:
        log = run_logged(RowLog(log_path, {"program": "calibration", "alpha": ALPHA, **plan}, LOG_FIELDS,
                                resume=args.resume), tasks, task_key, run_one, executor=args.executor,
                         workers=args.workers, scheduler=args.scheduler, desc="runs",
                         to_row=lambda r: {"value": r[0], "seconds": r[1]})
    except RheoError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    except KeyboardInterrupt as e:
        print(f"interrupted: {e or 'nothing kept'}; rerun with --resume", file=sys.stderr)
        raise SystemExit(130) from None
    res = tables(log.rows, **plan)
    res["seconds"] = round(time.perf_counter() - t0, 1)
    print_tables(res)
    if not args.quick or args.out:
        with atomic_open(out) as f:
            f.write(json.dumps(res, indent=1) + "\n")
    log.finish()
    print(f"time: {res['seconds']} s")


if __name__ == "__main__":
    main()
