"""How close each verifier comes to the tree-level optimum (docs/theory.md section 7.2).

For V in {3, 4, 5} and the families eagle, rheo (presets ``rheo`` and ``rheo-tuned``),
static-iid, static-wor, chain and multichain at a small size (K, D, N) = (2, 2, 4) (chain: D = 2;
multichain: W = 2 chains of D = 2; static: the greedy shape of N = 4 nodes, depth 2), on
``--instances`` random toy pairs (``random_pair(V, 2, seed)``, seeds 0..n-1, the same pairs for
every family):

- the tree-level optimum of the family's trees (:func:`rheotheory.lp_optimum.tree_optimum`), exact
  rationals (the rational re-check must succeed; the script reports how many did);
- every verifier the family admits (``Method.admitted_verifiers()``: per-node rules and the
  registered tree-level verifiers) that applies to the tree, certified exactly: its tau as a
  fraction of the optimum (mean, min), how often it attains the optimum exactly, and on how many
  instances it is lossless (a lossy verifier is not bounded by the optimum);
- the **per-node OT bound**: the exact tau of the walk that attains the per-node optimum of
  docs/theory.md section 3.6 at every node it visits. For trees with deterministic children and
  at most one sampled child per node whose deterministic children do not depend on the sample
  (eagle; rheo with head m = K-1, i.e. no fillers; chains) that walk is the ``ot`` verifier
  (section 3.5: its acceptance is the per-node optimum for every candidate set), so the column is
  ``ot``'s tau / optimum. For nodes with several sampled siblings (static, multichain) no per-node
  optimal rule is implemented and the column is empty;
- the **best per-node verifier** (:func:`rheotheory.node_bound.per_node_bound`, docs/theory.md
  section 7.4) on trees of a fixed shape (static, chain, multichain): the tau no verifier that
  decides node by node from the node's children can pass, even knowing the whole pair, as a
  rigorous rational upper bound over the optimum. Every lossless per-node verifier of the row is
  checked to stay below it (the script stops otherwise).

Writes ``simulations/results/optimum_table.csv`` (one row per V x family x verifier),
``optimum_table.md`` and ``optimum_table.png``.

    python simulations/optimum_table.py                  # 50 instances per cell
    python simulations/optimum_table.py --instances 3    # a quick look
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ProcessPoolExecutor
from fractions import Fraction

from tqdm import tqdm

from rheotheory import certify, random_pair, resolve
from rheotheory.checkpoint import write_rows
from rheotheory.errors import VerifierError
from rheotheory.lp_optimum import tree_optimum
from rheotheory.node_bound import NODE_BOUND_FAMILIES, per_node_bound
from rheotheory.verify import TREE_VERIFIERS

VOCABS = (3, 4, 5)
#: (K, D, N): small enough that every LP stays below a few thousand variables at V = 5.
SIZE = (2, 2, 4)
DEPTH = SIZE[1]
FAMILIES = ("eagle", "rheo", "rheo-tuned", "static-iid", "static-wor", "chain", "multichain")
#: The verifier that attains the per-node optimum at every node, where one exists (module docstring).
PER_NODE_OT = "ot"
RESULTS = os.path.join(os.path.dirname(__file__), "results")


def cell(args):
    V, spec, n = args
    method = resolve(spec, size=SIZE)
    methods = {}
    for name in method.admitted_verifiers():
        try:
            methods[name] = method.fit(verifier=name)
        except VerifierError:
            pass  # NOTE: does not apply to this tree (e.g. ot with sampled siblings, rrs-wor on i.i.d.)
    ratios = {name: [] for name in methods}
    lossless = {name: 0 for name in methods}
    optima, exact, lp_vars, t0 = [], 0, 0, time.perf_counter()
    node_r = []  # best per-node verifier's bound / optimum, where the family has fixed shapes
    for seed in range(n):
        pair = random_pair(V, DEPTH, seed=seed)
        opt = tree_optimum(pair, method)
        exact += opt.exact
        optima.append(opt.value)
        lp_vars = max(lp_vars, opt.variables)
        bound = per_node_bound(pair, method) if method.family in NODE_BOUND_FAMILIES else None
        if bound is not None:
            node_r.append(bound.upper / opt.value)
        for name, m in methods.items():
            cert = certify(pair, m)
            lossless[name] += bool(cert.lossless)
            ratios[name].append((cert.tokens_per_step / opt.value, bool(cert.lossless)))
            if bound is not None and cert.lossless and name not in TREE_VERIFIERS and (
                    cert.tokens_per_step > bound.upper):
                raise RuntimeError(f"{spec} V={V} seed={seed}: per-node verifier {name} has tau "
                                   f"{cert.tokens_per_step} above the per-node bound {bound.upper}")
    rows = []
    ot_r = [r for r, _ in ratios.get(PER_NODE_OT, [])]
    for name in methods:
        rs = [r for r, _ in ratios[name]]
        rows.append(dict(
            V=V, family=spec, method=methods[name].describe(), verifier=name, instances=n,
            optimum_exact=exact, optimum_mean=float(sum(optima)) / n, lp_variables_max=lp_vars,
            lossless=lossless[name], attained=sum(1 for r in rs if r == 1),
            ratio_mean=float(sum(rs)) / n, ratio_min=float(min(rs)),
            ratio_min_exact=str(min(rs)) if isinstance(min(rs), Fraction) else "",
            per_node_ot_mean=float(sum(ot_r)) / n if ot_r else "", per_node_ot_min=float(min(ot_r)) if ot_r else "",
            per_node_best_mean=float(sum(node_r)) / n if node_r else "",
            per_node_best_min=float(min(node_r)) if node_r else "",
            seconds=round(time.perf_counter() - t0, 2)))
    return rows


def write_md(rows, path, n):
    verifiers = sorted({r["verifier"] for r in rows})
    lines = [f"# Verifiers as a fraction of the tree-level optimum ({n} random instances per row)", "",
             f"`python simulations/optimum_table.py --instances {n}`; (K, D, N) = {SIZE}; chain D = {DEPTH}; "
             f"multichain W = 2, D = {DEPTH}. Optimum: the LP of docs/theory.md section 7.2, exact rationals "
             "(column `exact` counts the instances whose rational re-check succeeded). Each verifier cell: mean "
             "tau/optimum, min in brackets, `*n` = attains the optimum exactly on n instances, `!n` = lossless "
             "on only n instances (then not bounded by the optimum). `per-node OT`: the walk attaining the "
             "per-node optimum at every node (= `ot`, where it applies). `best per-node`: the bound no "
             "verifier deciding node by node can pass, knowing the whole pair (docs/theory.md section 7.4; "
             "rigorous upper bound / optimum; trees of a fixed shape only).", "",
             f"Verifiers covered: {', '.join(verifiers)}.", ""]
    for V in VOCABS:
        sub = [r for r in rows if r["V"] == V]
        if not sub:
            continue
        lines += [f"## V = {V}", "", "| family | optimum (mean tau) | exact | " + " | ".join(verifiers)
                  + " | per-node OT | best per-node |", "|" + " --- |" * (len(verifiers) + 5)]
        for fam in FAMILIES:
            fr = {r["verifier"]: r for r in sub if r["family"] == fam}
            if not fr:
                continue
            any_r = next(iter(fr.values()))
            cells = []
            for v in verifiers:
                r = fr.get(v)
                if r is None:
                    cells.append("")
                    continue
                txt = f"{r['ratio_mean']:.4f} ({r['ratio_min']:.4f})"
                if r["attained"]:
                    txt += f" *{r['attained']}"
                if r["lossless"] < r["instances"]:
                    txt += f" !{r['lossless']}"
                cells.append(txt)
            pn = (f"{any_r['per_node_ot_mean']:.4f} ({any_r['per_node_ot_min']:.4f})"
                  if any_r["per_node_ot_mean"] != "" else "n/a")
            bn = (f"{any_r['per_node_best_mean']:.4f} ({any_r['per_node_best_min']:.4f})"
                  if any_r["per_node_best_mean"] != "" else "n/a")
            lines.append(f"| {fam} | {any_r['optimum_mean']:.4f} | {any_r['optimum_exact']}/{any_r['instances']} | "
                         + " | ".join(cells) + f" | {pn} | {bn} |")
        lines.append("")
    lines += ["## Best lossless verifier per family", "", "| V | family | best verifier | mean | min | attained | "
              "shortfall (1 - mean) |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for V in VOCABS:
        for fam in FAMILIES:
            fr = [r for r in rows if r["V"] == V and r["family"] == fam and r["lossless"] == r["instances"]]
            if not fr:
                continue
            best = max(fr, key=lambda r: (r["ratio_mean"], r["ratio_min"]))
            ties = [r["verifier"] for r in fr if (r["ratio_mean"], r["ratio_min"]) == (best["ratio_mean"],
                                                                                      best["ratio_min"])]
            lines.append(f"| {V} | {fam} | {', '.join(ties)} | {best['ratio_mean']:.4f} | {best['ratio_min']:.4f} | "
                         f"{best['attained']}/{best['instances']} | {1 - best['ratio_mean']:.4f} |")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def read_rows(path):
    """The rows of a written ``optimum_table.csv``, with the numbers ``plot`` reads as numbers."""
    import csv

    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        for k in ("V", "instances", "lossless", "attained"):
            r[k] = int(r[k])
        for k in ("ratio_mean", "ratio_min", "per_node_best_mean"):
            if r.get(k, "") != "":
                r[k] = float(r[k])
    return rows


def plot(rows, path):
    """The figure for a page's column: one panel per V, stacked, 1125 px wide (shown at about 64%
    of its size in the site's 719 px column, so 10-point labels stay about 13 px); one distinct
    colour per verifier, the legend below."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    verifiers = sorted({r["verifier"] for r in rows})
    # NOTE: tab10 plus gold: eleven verifiers, no colour used twice (tab20's pairs read as one).
    palette = [plt.cm.tab10(i) for i in range(10)] + ["#e6b800"]
    colors = {v: palette[i % len(palette)] for i, v in enumerate(verifiers)}
    fig, axes = plt.subplots(len(VOCABS), 1, figsize=(7.5, 2.3 * len(VOCABS) + 1.3), sharex=True)
    width = 0.8 / len(verifiers)
    for ax, V in zip(axes, VOCABS):
        for i, fam in enumerate(FAMILIES):
            for j, v in enumerate(verifiers):
                r = next((r for r in rows if r["V"] == V and r["family"] == fam and r["verifier"] == v), None)
                if r is None:
                    continue
                x = i - 0.4 + (j + 0.5) * width
                lossy = r["lossless"] < r["instances"]
                ax.bar(x, r["ratio_mean"], width, color=colors[v], hatch="//" if lossy else "",
                       edgecolor="black" if lossy else colors[v], linewidth=0.4,
                       label=v if v not in ax.get_legend_handles_labels()[1] else None)
                ax.plot([x, x], [r["ratio_min"], r["ratio_mean"]], color="black", lw=0.8)
            r = next((r for r in rows if r["V"] == V and r["family"] == fam and r["per_node_best_mean"] != ""), None)
            if r is not None:  # no verifier deciding node by node passes this line (section 7.4)
                lab = "best per-node verifier (bound)"
                ax.hlines(r["per_node_best_mean"], i - 0.45, i + 0.45, color="black", lw=1.6, ls=":",
                          label=lab if lab not in ax.get_legend_handles_labels()[1] else None)
        ax.set_ylim(0.4, 1.03)
        ax.axhline(1.0, color="grey", lw=0.6, ls="--")
        ax.set_title(f"V = {V}", loc="left", fontsize=10.5, fontweight="bold", pad=3)
        ax.tick_params(labelsize=10)
        ax.grid(axis="y", alpha=0.3)
    axes[-1].set_xticks(range(len(FAMILIES)))
    axes[-1].set_xticklabels(FAMILIES, fontsize=10)
    axes[len(axes) // 2].set_ylabel("tau / tree-level optimum", fontsize=11)
    handles, labels = [], []
    for ax in axes:
        for h, l in zip(*ax.get_legend_handles_labels()):
            if l not in labels:
                handles.append(h)
                labels.append(l)
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=9.5, frameon=False)
    fig.suptitle("bar: mean over instances, line: down to the minimum; hatched: lossy on some "
                 "instance", fontsize=10, y=0.995)
    fig.tight_layout(rect=(0, 0.1, 1, 0.98))
    fig.savefig(path, dpi=150)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", type=int, default=50)
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--out", default=os.path.join(RESULTS, "optimum_table"), help="output path without extension")
    ap.add_argument("--plot-only", action="store_true",
                    help="redraw OUT.png from the rows already in OUT.csv (no optimum is computed)")
    args = ap.parse_args()
    if args.plot_only:
        plot(read_rows(args.out + ".csv"), args.out + ".png")
        return
    jobs = [(V, fam, args.instances) for V in VOCABS for fam in FAMILIES]
    jobs.sort(key=lambda j: -j[0])  # the V = 5 cells first, so the pool stays busy to the end
    with ProcessPoolExecutor(args.workers) as pool:
        rows = [r for rs in tqdm(pool.map(cell, jobs), total=len(jobs), desc="cells") for r in rs]
    rows.sort(key=lambda r: (r["V"], FAMILIES.index(r["family"]), r["verifier"]))
    write_rows(rows, args.out + ".csv")
    write_md(rows, args.out + ".md", args.instances)
    plot(rows, args.out + ".png")
    with open(args.out + ".md") as f:
        print(f.read())


if __name__ == "__main__":
    main()
