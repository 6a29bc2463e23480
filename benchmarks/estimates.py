"""The time estimates the commands print, against the time the runs take: the documented examples.

Every command that sizes its work before it starts (``rheo certify``, ``rheo counterexample``,
``rheo mc``, ``rheo sweep``) reports the estimate in its ``--json`` object
(``estimated_seconds``: the whole run, the estimate's own probes or pilot included; ``null``
when the run was over before an estimate was needed). This script runs the examples the README
and the guides show (some at a size that fits a test: fewer steps or samples, said in the
label) in this process and prints, for each, the estimate, the wall time of the command and
their ratio; ``tests/test_estimates.py`` requires every ratio in [1/3, 3] (the ``default``
examples in the default suite, the ``claims`` ones in the claims tier).

    python benchmarks/estimates.py                 # every example (a few minutes)
    python benchmarks/estimates.py --tier default  # the quick ones

A ratio compares two times of the same machine, so it holds on a busy one too, as long as the
load does not change during the run; the table says how busy the machine was (load average).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass

#: Actual / estimated must lie in [1 / BAND, BAND].
BAND = 3.0


@dataclass(frozen=True)
class Example:
    """One documented command line (without ``--json``, which is added) and where it is shown."""

    label: str  # what the table calls it
    argv: tuple  # the command's arguments after ``rheo``
    source: str  # the page that shows it
    tier: str  # "default" (seconds) or "claims" (up to a minute or two)


EXAMPLES = (
    Example("certify rheo-adaptive head 0 traversal", ("certify", "--preset", "rheo-adaptive", "--head", "0",
                                                       "--verifier", "traversal"), "docs/guide/adaptive.md", "default"),
    Example("counterexample next/sequential, 200 instances",
            ("counterexample", "--method", "rheo", "--proxy", "next", "--verifier", "sequential", "--instances", "200"),
            "docs/guide/reproducing.md", "default"),
    Example("mc V=32000 K,D,N=4,4,16, 300 samples (page: 2000)",
            ("mc", "--vocab", "32000", "--temperature", "1", "--top-k", "4", "--depth", "4", "--budget", "16", "--head",
             "1", "--samples", "300"), "README.md, docs/guide/monte-carlo.md", "default"),
    Example("sweep V=1000 default methods, 10 steps (page: 50)",
            ("sweep", "--temperatures", "0.5", "1", "--steps", "10", "--no-plot"), "README.md", "default"),
    Example("counterexample rheo-adaptive head 0 traversal, 400 instances",
            ("counterexample", "--preset", "rheo-adaptive", "--head", "0", "--verifier", "traversal", "--instances",
             "400"), "docs/guide/adaptive.md", "claims"),
    Example("counterexample true/ot (lossy: stops early)",
            ("counterexample", "--method", "rheo", "--proxy", "true", "--verifier", "ot"),
            "docs/guide/reproducing.md", "claims"),
    Example("counterexample tail/sequential, 400 instances (lossy)",
            ("counterexample", "--method", "rheo", "--proxy", "tail", "--verifier", "sequential", "--instances", "400"),
            "docs/guide/reproducing.md", "claims"),
    Example("mc V=32000 K,D,N=4,4,16, 2000 samples",
            ("mc", "--vocab", "32000", "--temperature", "1", "--top-k", "4", "--depth", "4", "--budget", "16", "--head",
             "1", "--samples", "2000"), "README.md, docs/guide/monte-carlo.md", "claims"),
    Example("sweep V=1000 default methods, 50 steps, with its PNG",
            ("sweep", "--temperatures", "0.5", "1", "--steps", "50"), "README.md", "claims"),
    Example("sweep, the default run (48 rows of 200 steps)", ("sweep",), "docs/guide/sweeps.md", "claims"),
    Example("sweep V=32000 tree-level methods, 60 steps (page: 300)",
            ("sweep", "--vocab", "32000", "--sparse", "128", "--temperatures", "0", "0.5", "1", "--trees", "4,4,16",
             "--methods", "eagle", "chain", "chain:verifier=block", "static-iid", "static-iid:verifier=traversal",
             "--steps", "60", "--workers", "2", "--no-plot"), "docs/guide/tree-verification.md", "claims"),
    Example("sweep V=32000 adaptive grid, low mismatch, T=0,1, 20 steps (page: all T, 1000 steps)",
            ("sweep", "--vocab", "32000", "--sparse", "128", "--mismatch", "low", "--temperatures", "0", "1", "--trees",
             "4,4,16", "10,6,60", "--seed", "2", "--steps", "20", "--workers", "2", "--methods", "eagle", "rheo",
             "rheo-tuned", "static-wor", "chain", "rheo-adaptive", "static-wor:verifier=traversal", "--no-plot"),
            "docs/guide/adaptive.md", "claims"),
)


def run_example(example: Example, folder: str) -> tuple[float | None, float, dict]:
    """``(estimated seconds or None, wall seconds, the command's JSON)`` of one example run in this
    process (a sweep writes into ``folder``)."""
    from rheotheory.cli import main

    argv = list(example.argv) + ["--json", "--no-progress"]
    if argv[0] == "sweep":
        argv += ["--out", folder]
    out = io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    wall = time.perf_counter() - t0
    if code not in (0, 1):
        raise RuntimeError(f"rheo {' '.join(example.argv)} exited {code}")
    d = json.loads(out.getvalue())
    return d.get("estimated_seconds"), wall, d


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tier", choices=("default", "claims", "all"), default="all")
    args = ap.parse_args(argv)
    chosen = [e for e in EXAMPLES if args.tier in ("all", e.tier)]
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("| example | shown in | estimate (s) | actual (s) | actual / estimate |")
    print("| --- | --- | ---: | ---: | ---: |")
    bad = 0
    with tempfile.TemporaryDirectory() as folder:
        for e in chosen:
            est, wall, _ = run_example(e, folder)
            ratio = "" if est is None else f"{wall / est:.2f}"
            if est is not None and not 1 / BAND <= wall / est <= BAND:
                bad += 1
                ratio += " (outside)"
            shown = "none (finished before an estimate)" if est is None else f"{est:.1f}"
            print(f"| `rheo {e.label}` | {e.source} | {shown} | {wall:.1f} | {ratio} |", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
