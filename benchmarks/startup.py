"""Start-up time of the ``rheo`` command against the floor set by numpy and scipy.

Each command runs in a fresh interpreter, interleaved round by round (so a busy machine slows
them alike). The table gives, per command, the median wall time and the median CPU time (user +
system of the child, which a busy machine disturbs far less than the wall clock), each with its
ratio to the same figure for ``python -c "import numpy, scipy"``. Target (issue 20): ``rheo
--help`` and ``rheo certify`` on the built-in example within 1.5x of that floor.

The package is the one in the current directory (``python -m``). Bytecode caches are on, as
after a ``pip install``: the warm-up run writes them (``PYTHONDONTWRITEBYTECODE`` is dropped for
the children), so the table measures start-up, not the one-off compilation of the sources.

    python3 benchmarks/startup.py --repeats 15
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

#: The commands timed, by label; the first is the floor the others are compared with.
COMMANDS = {
    'python -c "import numpy, scipy"': [sys.executable, "-c", "import numpy, scipy"],
    'python -c "import rheotheory"': [sys.executable, "-c", "import rheotheory"],
    "rheo --help": [sys.executable, "-m", "rheotheory.cli", "--help"],
    "rheo certify": [sys.executable, "-m", "rheotheory.cli", "certify"],
}

#: The children's environment: bytecode caches written and read, as in an installed package.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def time_once(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run of ``argv``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=11, help="runs of each command (default 11)")
    args = ap.parse_args(argv)
    for command in COMMANDS.values():  # NOTE: one warm-up each: bytecode written, file cache equally warm
        time_once(command)
    runs: dict[str, list[tuple[float, float]]] = {label: [] for label in COMMANDS}
    for _ in range(args.repeats):
        for label, command in COMMANDS.items():
            runs[label].append(time_once(command))
    wall = {label: statistics.median(w for w, _ in r) for label, r in runs.items()}
    cpu = {label: statistics.median(c for _, c in r) for label, r in runs.items()}
    floor = next(iter(COMMANDS))
    print(f"{args.repeats} runs each, medians; ratio = command / {floor}")
    print("| command | wall (s) | wall ratio | CPU (s) | CPU ratio |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for label in COMMANDS:
        print(f"| `{label}` | {wall[label]:.3f} | {wall[label] / wall[floor]:.2f} | {cpu[label]:.3f} | "
              f"{cpu[label] / cpu[floor]:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
