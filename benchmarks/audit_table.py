"""The audit table: every engine adapter and the user protocol's verifiers, one ``rheo audit`` each.

Usage::

    python benchmarks/audit_table.py [--runs N] [--engines rheotheory,transformers,...] [--quick] [--no-user]
                                     [--merge] [--import FILE ...] --out DIR

writes ``DIR/audit_table.json``: one record per audit (the JSON ``rheo audit --json`` prints,
plus the command line and its wall time), in the order of :data:`AUDITS`. An engine whose
package is not installed is recorded as ``not installed`` with the install line, never dropped
silently. An engine audited in another environment (one with its extra installed) joins the
table with ``--merge --import FILE``, FILE being that run's ``rheo audit --json`` output.
``render_md(DIR)`` makes the docs' table from it (simulations/recipes.py, table
``audit_table``): for each audit a line with its Bonferroni verdict, then one row per setting
(its own p against the audit's Bonferroni level ``alpha / settings``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: (label, rheo audit arguments); the user protocol's functions are rheotheory's references and
#: the test suite's own (tests/audit_verifiers.py), the engines' rows their real paths and, as
#: separate audits, their planted companions.
AUDITS = (
    ("user chain: rejection sampling (reference)", ["--verifier", "rheotheory.audit.examples:chain_rejection"]),
    ("user chain: unnormalised residual (correct)", ["--verifier", "tests/audit_verifiers.py:unnormalised_residual",
                                                     "--no-companion"]),
    ("user chain: EAGLE's one-hot rule on sampled drafts (correct)",
     ["--verifier", "tests/audit_verifiers.py:eagle_one_hot", "--no-companion"]),
    ("user chain: target row off by one (lossy)", ["--verifier", "tests/audit_verifiers.py:wrong_target_row",
                                                   "--no-companion"]),
    ("user chain: sharpened bonus token (lossy)", ["--verifier", "tests/audit_verifiers.py:sharpened_bonus",
                                                   "--no-companion"]),
    ("user tree: recursive rejection (reference)", ["--verifier", "rheotheory.audit.examples:tree_rejection",
                                                    "--kind", "tree"]),
    ("user tree: residual after the first child only (lossy)",
     ["--verifier", "tests/audit_verifiers.py:tree_first_child_only_residual", "--kind", "tree", "--no-companion"]),
)


def engine_audits(names) -> list[tuple[str, list[str]]]:
    """The real path and each planted companion of every engine in ``names``."""
    from rheotheory.audit.engines import adapter

    out = []
    for name in names:
        e = adapter(name).ENGINE
        out.append((f"engine {name}", ["--engine", name, "--no-companion"]))
        out += [(f"engine {name} [planted: {p}]", ["--engine", name, "--planted", p]) for p in e.planted]
    return out


def run_one(label: str, args: list[str], runs: int | None) -> dict:
    argv = [sys.executable, "-m", "rheotheory.cli", "audit", *args, "--json", "--no-progress"]
    if runs is not None:
        argv += ["--runs", str(runs)]
    t0 = time.perf_counter()
    p = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT)
    secs = time.perf_counter() - t0
    command = " ".join(["rheo", "audit", *args] + (["--runs", str(runs)] if runs is not None else []))
    if p.returncode not in (0, 1):
        err = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"exit {p.returncode}"
        print(f"{label}: {err}", flush=True)
        return dict(label=label, command=command, status="not run", error=err, wall_seconds=round(secs, 1))
    d = json.loads(p.stdout)
    d.update(label=label, command=command, status="run", wall_seconds=round(secs, 1))
    print(f"{label}: {d['verdict']} p = {d['p_value']:.3g}, N = {d['runs']}, TV80 = {d['min_detectable_tv']:.3f} "
          f"({secs:.0f} s)", flush=True)
    return d


def imported(path: Path) -> dict:
    """A row from a saved ``rheo audit --engine NAME --json [--planted P]`` output: its label and
    command are rebuilt from the subject (``NAME VERSION [planted: P]``)."""
    d = json.loads(Path(path).read_text())
    name, _, rest = d["subject"].partition(" ")
    planted = rest.split("[planted: ", 1)[1].rstrip("]") if "[planted: " in rest else None
    label = f"engine {name}" + (f" [planted: {planted}]" if planted else "")
    command = f"rheo audit --engine {name}" + (f" --planted {planted}" if planted else "")
    d.update(label=label, command=command, status="run", wall_seconds=d.get("wall_seconds"),
             imported_from=str(path))
    return d


def render_md(folder: Path) -> str:
    """The docs' table (module docstring): one line per audit with its Bonferroni verdict, then a
    table of its settings."""
    rows = json.loads((Path(folder) / "audit_table.json").read_text())
    out = []
    for r in rows:
        if r["status"] != "run":
            out.append(f"**{r['label']}**: not run: {r['error']}\n")
            continue
        level = r["alpha"] / len(r["settings"])
        comp = r.get("companion")
        verdict = {"lossy": "**lossy**", "lossy-by-design": "**lossy-by-design**"}.get(r["verdict"], "not rejected")
        extra = f"; planted companion: {comp['verdict']}, p = {comp['p_value']:.3g}" if comp else ""
        designs = sorted({s.get("detail", {}).get("by_design") for s in r["settings"]} - {None, ""})
        dtypes = sorted({s.get("detail", {}).get("dtype") for s in r["settings"]} - {None, ""})
        notes = "".join([f"; models in {', '.join(dtypes)}" if dtypes else "",
                         f"; biased by design: `{'`, `'.join(designs)}`" if designs else ""])
        out.append(f"**{r['label']}**: {verdict} over all {len(r['settings'])} settings (Bonferroni: N = {r['runs']}, "
                   f"p = {r['p_value']:.3g}, TV detected {r['min_detectable_tv']:.3f}){extra}{notes}.\n")
        lines = ["| setting | N | p | TV detected (power 0.8) | verdict |", "|---|---:|---:|---:|---|"]
        for s in r["settings"]:
            said = "rejected" if s["p_value"] < level else "not rejected"
            if s.get("detail", {}).get("by_design") and said == "rejected":
                said = "rejected, lossy by design"
            lines.append(f"| {s['name']} | {s['runs']} | {s['p_value']:.3g} | {s['min_detectable_tv']:.3f} | {said} |")
        out.append("\n".join(lines) + "\n")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--runs", type=int, default=None, help="runs per setting (default: each audit's own)")
    ap.add_argument("--engines", default="rheotheory,transformers", help="comma-separated engine names")
    ap.add_argument("--quick", action="store_true", help="one audit of each kind, for a smoke run")
    ap.add_argument("--no-user", action="store_true", help="engines only (the user protocol's rows are left out)")
    ap.add_argument("--merge", action="store_true",
                    help="keep the rows of an existing audit_table.json, replacing those this run redoes")
    ap.add_argument("--import", dest="imports", nargs="*", default=[], type=Path, metavar="FILE",
                    help="add the rows of engine audits run apart (the output of rheo audit --engine NAME --json "
                    "[--planted P], e.g. in the environment that has the engine), replacing rows of the same label")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    audits = ([] if args.no_user else list(AUDITS)) + engine_audits([e for e in args.engines.split(",") if e])
    if args.quick:
        audits = [audits[0], audits[5]] + [a for a in audits[len(AUDITS):] if "planted" not in a[0]][:1]
    args.out.mkdir(parents=True, exist_ok=True)
    rows = [run_one(label, a, args.runs) for label, a in audits if not args.imports]
    rows += [imported(f) for f in args.imports]
    path = args.out / "audit_table.json"
    if args.merge and path.is_file():
        new = {r["label"]: r for r in rows}
        old = json.loads(path.read_text())
        rows = [new.pop(r["label"], r) for r in old] + list(new.values())
    path.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
