"""The false-alarm table: each published lossless rule, correct and planted, through ``rheo audit`` and
``assert_lossless``.

Usage::

    python benchmarks/audit_rules.py [--runs 2000] [--only NAME,...] [--jobs 1] [--out FILE.json]

The verifiers are ``tests/audit_rule_verifiers.py``'s (``RULE_VERIFIERS``): each rule the rule check
knows, written as an engine writes it, and a planted bug beside each. For every one the script runs

- ``rheo audit --verifier tests/audit_rule_verifiers.py:NAME --kind KIND [--setting S] --runs N --json``
  in a subprocess: its exit status, verdict, the rule its calls follow (or the closest), the law's
  p-value and the TV it detects;
- ``assert_lossless(fn, KIND, runs=N, setting=S)`` in a subprocess: whether it passes, and the
  first line of its failure.

Both at the audit's default size (2,000 runs per setting, alpha 0.01, seed 0). A correct verifier
must pass both (exit 0); a planted one must fail both (exit 1 or 3). The table is rendered into
docs/guide/audit.md by ``python simulations/recipes.py render`` (recipe ``audit_rules``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
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
FILE = "tests/audit_rule_verifiers.py"

_ASSERT = """
import importlib.util, json, sys, torch
torch.set_num_threads(1)
spec = importlib.util.spec_from_file_location("v", {file!r})
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
from rheotheory.audit import assert_lossless
try:
    assert_lossless(getattr(mod, {name!r}), {kind!r}, runs={runs}, setting={select!r}, jobs={jobs})
    print(json.dumps(dict(passed=True, message="")))
except BaseException as e:
    print(json.dumps(dict(passed=False, message=str(e).splitlines()[0] if str(e) else type(e).__name__)))
"""


def _verifiers():
    import importlib.util

    spec = importlib.util.spec_from_file_location("audit_rule_verifiers", ROOT / FILE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.RULE_VERIFIERS


def one(name: str, kind: str, rule, select, what: str, runs: int, jobs: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    argv = [sys.executable, "-m", "rheotheory.cli", "audit", "--verifier", f"{FILE}:{name}", "--kind", kind,
            "--runs", str(runs), "--jobs", str(jobs), "--json", "--no-progress"]
    if select:
        argv += ["--setting", select]
    t0 = time.perf_counter()
    p = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=env)
    wall = time.perf_counter() - t0
    d = json.loads(p.stdout) if p.stdout.strip() else {}
    r = d.get("rule") or {}
    row = dict(name=name, kind=kind, rule=rule, settings=select or "all", what=what, exit=p.returncode,
               verdict=d.get("verdict"), error=d.get("error"), follows=r.get("follows"), closest=r.get("closest"),
               p_value=d.get("p_value"), min_detectable_tv=d.get("min_detectable_tv"),
               pooled_tv=(d.get("pooled") or {}).get("min_detectable_tv"), runs=runs,
               rule_p={k: v["p_value"] for k, v in (r.get("rules") or {}).items()}, cli_wall_seconds=round(wall, 1))
    t0 = time.perf_counter()
    code = _ASSERT.format(file=str(ROOT / FILE), name=name, kind=kind, runs=runs, select=select, jobs=jobs)
    q = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env)
    a = (json.loads(q.stdout.strip().splitlines()[-1]) if q.stdout.strip()
         else dict(passed=None, message=q.stderr[-300:]))
    row.update(assert_passed=a["passed"], assert_message=a["message"],
               assert_wall_seconds=round(time.perf_counter() - t0, 1))
    row["as_expected"] = (rule is not None) == (p.returncode == 0) == bool(a["passed"])
    return row


def render_md(path: Path) -> str:
    """The table of ``rules_table.json`` in Markdown (docs/guide/audit.md)."""
    d = json.loads(Path(path).read_text())
    rows = []
    for r in d["rows"]:
        what = f"{r['what']} (`{r['rule']}`)" if r["rule"] else f"planted: {r['what']}"
        follows = f"`{r['follows']}`" if r["follows"] else (f"none (closest `{r['closest']}`)" if r["closest"] else "-")
        verdict = "not rejected" if r["verdict"] == "lossless" else str(r["verdict"])
        asserted = "passes" if r["assert_passed"] else "fails"
        if r["settings"] != "all":
            what += f"; {r['settings']} settings"
        rows.append(f"| `{r['name']}` ({r['kind']}) | {what} | {verdict} (exit {r['exit']}) | {follows} | {asserted} |")
    ok = sum(r["as_expected"] for r in d["rows"])
    head = (f"{len(d['rows'])} verifiers, {d['runs']} runs per setting, alpha 0.01, seed 0 (`{d['command']}`); "
            f"as expected (a correct one passes both, a planted one fails both): {ok} of {len(d['rows'])}.\n\n"
            "Columns: the verifier and its signature; what it is (the settings it was audited on when not all of "
            "them); `rheo audit`'s verdict and exit status; the known rule its calls follow; whether "
            "`assert_lossless` passes.\n\n"
            "| verifier | what it is | verdict | calls follow | pytest |\n"
            "| --- | --- | --- | --- | --- |\n")
    return head + "\n".join(rows) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--only", default=None, help="comma-separated verifier names")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    only = None if args.only is None else set(args.only.split(","))
    rows = []
    print(f"{'verifier':<26} {'kind':<5} {'rule':<10} {'verdict':<9} {'follows':<10} {'exit':>4} {'assert':<7} "
          f"{'seconds':>7}", flush=True)
    for name, kind, rule, select, what in _verifiers():
        if only is not None and name not in only:
            continue
        r = one(name, kind, rule, select, what, args.runs, args.jobs)
        rows.append(r)
        print(f"{name:<26} {kind:<5} {str(rule):<10} {str(r['verdict']):<9} {str(r['follows'] or '-'):<10} "
              f"{r['exit']:>4} {'pass' if r['assert_passed'] else 'fail':<7} "
              f"{r['cli_wall_seconds'] + r['assert_wall_seconds']:>7.0f}"
              + ("" if r["as_expected"] else "  UNEXPECTED"), flush=True)
    out = dict(command=_command("benchmarks/audit_rules.py", argv if argv is not None else sys.argv[1:]),
               runs=args.runs, alpha=0.01, seed=0, rows=rows)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=1) + "\n")
    return 0 if all(r["as_expected"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
