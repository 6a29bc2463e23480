"""Calls a minute of ``rheo audit --verifier-cmd`` with the worked examples in C++ and Rust.

Usage::

    python benchmarks/audit_process_speed.py [--runs 1000] [--out FILE.json]

Builds ``docs/examples/engines/verify.cpp`` (g++ -O2) and ``verify.rs`` (rustc -O) into a temporary
folder (a compiler that is missing is recorded as such), then audits each correct example on the
20 chain settings at ``--runs`` runs per setting through both framings (alpha 0.01, seed 0, no
companion), with the rule check (the default) and without it (``--rule any``: the transport and the
law test alone). It prints and records the verdict and the verifier calls a minute of wall time
over the runs (the program's own time included: it runs beside the audit, in its own process),
and the same figures for the test suite's Python program (``tests/audit_program.py``) for scale.
Wall-clock figures: the machine's load changes them (the provenance of a recipe run records it).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _command(script: str, argv) -> str:
    """The command line as written from the repository root, less its ``--out`` (where a recipe
    writes is its own business: a timing recipe writes into a staging folder first)."""
    args, skip = [], False
    for a in map(str, argv):
        if skip:
            skip = False
        elif a == "--out":
            skip = True
        elif not a.startswith("--out="):
            args.append(a.replace(str(ROOT) + "/", ""))
    return " ".join(["python", script, *args])
EXAMPLES = ROOT / "docs" / "examples" / "engines"


def build(folder: Path) -> dict:
    """``{name: command or None}`` for the examples (None: the compiler is missing)."""
    out = {}
    cpp, rs = folder / "verify_cpp", folder / "verify_rs"
    if shutil.which("g++"):
        subprocess.run(["g++", "-O2", "-std=c++17", "-o", str(cpp), str(EXAMPLES / "verify.cpp")], check=True)
        out["C++ (g++ -O2)"] = str(cpp)
    else:
        out["C++ (g++ -O2)"] = None
    if shutil.which("rustc"):
        subprocess.run(["rustc", "-O", "--edition", "2021", "-o", str(rs), str(EXAMPLES / "verify.rs")], check=True)
        out["Rust (rustc -O)"] = str(rs)
    else:
        out["Rust (rustc -O)"] = None
    out["Python (tests/audit_program.py)"] = f"{sys.executable} {ROOT / 'tests' / 'audit_program.py'}"
    return out


def measure(command: str, framing: str, runs: int, rule: str) -> dict:
    from rheotheory.audit import api

    t0 = time.perf_counter()
    res = api.audit_verifier(command=command, framing=framing, runs=runs, rule=rule, companion=False)
    wall = sum(s.seconds for s in res.settings)  # NOTE: wall seconds of the runs (a program's clock)
    return dict(framing=framing, rule=rule, runs=runs, verdict=res.verdict, calls=res.calls,
                run_seconds=round(wall, 2), total_seconds=round(time.perf_counter() - t0, 2),
                calls_per_minute=round(60 * res.calls / wall))


def render_md(path: Path) -> str:
    d = json.loads(Path(path).read_text())
    lines = [f"`{d['command']}`: {d['runs']} runs on each of the 20 chain settings, seed 0, "
             f"{d['machine']}.", "",
             "| program | framing | rule check | verdict | calls | calls a minute (wall) |",
             "| --- | --- | --- | --- | ---: | ---: |"]
    for r in d["rows"]:
        if r.get("missing"):
            lines.append(f"| {r['program']} | - | - | compiler missing | - | - |")
            continue
        check = "on (default)" if r["rule"] == "auto" else "off (`--rule any`)"
        verdict = r["verdict"].replace("lossless", "not rejected")
        lines.append(f"| {r['program']} | {r['framing']} | {check} | {verdict} | {r['calls']:,} "
                     f"| {r['calls_per_minute']:,} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    import torch

    torch.set_num_threads(1)
    rows = []
    print(f"{'program':<34} {'framing':<7} {'rule':<5} {'verdict':<9} {'calls':>8} {'calls/min':>10}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for program, command in build(Path(tmp)).items():
            if command is None:
                rows.append(dict(program=program, missing=True))
                print(f"{program:<34} compiler missing", flush=True)
                continue
            python = program.startswith("Python")
            for framing in ("json",) if python else ("json", "binary"):
                for rule in ("auto", "any"):
                    r = dict(program=program, **measure(command, framing, args.runs, rule))
                    rows.append(r)
                    print(f"{program:<34} {framing:<7} {rule:<5} {r['verdict']:<9} {r['calls']:>8} "
                          f"{r['calls_per_minute']:>10,}", flush=True)
    given = argv if argv is not None else sys.argv[1:]
    out = dict(command=_command("benchmarks/audit_process_speed.py", given),
               runs=args.runs, machine=os.environ.get("RHEO_MACHINE_NOTE") or "machine not described", rows=rows)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
