"""``rheo bench --budget auto`` on SmolLM2 under several CPU settings: the size it chooses and the
speed-up it measures, with paired intervals.

Usage:
    python benchmarks/budget_auto.py [--settings threads2,threads1,threads2-core1] [--prompts sharegpt:8]
                                     [--methods rheo-tuned,rheo-adaptive] [--temperatures 0,1]
                                     [--max-new-tokens 64] [--model smollm2] --out DIR

Each setting runs one ``rheo bench --budget auto --out DIR/SETTING`` in a fresh process with the
size cache off (``RHEO_NO_SIZE_CACHE=1``: the choice is measured in that setting, not read from
another's). The settings are CPU layouts one 2-core machine can make:

- ``threads2``: two torch/BLAS threads on two cores (the project's default setting);
- ``threads1``: one thread;
- ``threads2-core1``: two threads pinned to one core (``sched_setaffinity``), so the two OpenMP
  threads take turns on it: the layout of a container with a one-CPU quota that still reports
  two cores, where a wider target pass costs more than on two free cores.

The target (docs/guide/real-models.md, "Choosing the tree size"): with ``--budget auto`` every row
is at least 0.98x of autoregressive decoding, and at least 1.1x where the chosen size's physical
limit is at least 1.2. Each setting's ``curve.csv`` holds the speed-up with its paired-bootstrap
95% interval and the physical limit; ``budget_auto.json`` the choice (or the fallback to
autoregressive decoding when no size pays). Wall-clock figures: run it on a quiet machine
(``python simulations/recipes.py run smollm2_budget_auto`` checks the load).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: setting -> (torch threads, the CPUs the process may run on; None = all)
SETTINGS = {"threads2": (2, None), "threads1": (1, None), "threads2-core1": (2, {0})}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--settings", default=",".join(SETTINGS))
    ap.add_argument("--model", choices=("smollm2", "builtin"), default="smollm2")
    ap.add_argument("--prompts", default="sharegpt:8")
    ap.add_argument("--methods", default="rheo-tuned,rheo-adaptive")
    ap.add_argument("--temperatures", default="0,1")
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    names = [s for s in args.settings.split(",") if s]
    bad = [s for s in names if s not in SETTINGS]
    if bad or not names:
        print(f"budget_auto.py: error: unknown setting {bad[0] if bad else '(none)'!r}; "
              f"one of {', '.join(SETTINGS)}", file=sys.stderr)
        return 2
    cores = len(os.sched_getaffinity(0))
    for name in names:
        threads, cpus = SETTINGS[name]
        if threads > cores or (cpus and not cpus <= os.sched_getaffinity(0)):
            print(f"budget_auto.py: error: setting {name} needs {threads} cores; this process has {cores}",
                  file=sys.stderr)
            return 2
    env = dict(os.environ, RHEO_NO_SIZE_CACHE="1")
    for name in names:
        threads, cpus = SETTINGS[name]
        cmd = [sys.executable, "-m", "rheotheory.cli", "bench", "--model", args.model, "--budget", "auto",
               "--prompts", args.prompts, "--methods", args.methods, "--temperatures", args.temperatures,
               "--max-new-tokens", str(args.max_new_tokens), "--repeats", "1", "--threads", str(threads),
               "--no-progress", "--out", str(args.out / name)]
        if args.model == "builtin":
            cmd.remove("--model"), cmd.remove("builtin")
            i = cmd.index("--prompts")
            del cmd[i:i + 2]
        print(f"== {name}: {threads} thread(s)" + (f" on CPU {sorted(cpus)}" if cpus else "") + ": "
              + " ".join(cmd[1:]), flush=True)
        pin = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
        rc = subprocess.run(cmd, cwd=ROOT, env=env, preexec_fn=pin).returncode
        if rc:
            return rc
    return 0


if __name__ == "__main__":
    sys.exit(main())
