"""Draw the verifier landscape's figure for the page (docs/assets/verifier-landscape.png).

    python scripts/verifier_figure.py

Reads the committed results of recipe ``sweep_v32k_multipath`` (simulations/results/
sweep_v32k_multipath.csv: 13 methods, two mismatch levels, four temperatures, V = 32,000) and
draws them for a 719 px column: one row of panels per tree family (the dynamic trees, chains,
static trees, i.i.d. multi-chains), one column per mismatch level, at most four lines a panel
with EAGLE as the grey reference in each, one colour per line within a panel, 95% intervals as
bands. The sweep's own PNG (every method in one panel per mismatch level) stays the recipe's
output; this is the same numbers, laid out to be read on the page.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "simulations" / "results" / "sweep_v32k_multipath.csv"
OUT = ROOT / "docs" / "assets" / "verifier-landscape.png"

#: Panels (rows): a title and the methods it shows, with their labels on the page.
GROUPS = [
    ("dynamic trees", [("rheo", "RheoSampling (ot)"), ("rheo-tuned", "rheo-tuned")]),
    ("chains", [("chain", "chain, sequential"), ("chain:verifier=block", "chain, block (= gbv here)"),
                ("chain:verifier=gbv", "chain, gbv")]),
    ("static trees", [("static-iid", "static-iid, rrs"), ("static-iid:verifier=traversal", "static-iid, traversal"),
                      ("static-wor", "static-wor, rrs-wor"),
                      ("static-wor:verifier=traversal", "static-wor, traversal")]),
    ("four i.i.d. chains", [("multichain:width=4:verifier=kseq", "kseq"),
                            ("multichain:width=4:verifier=traversal", "traversal"),
                            ("multichain:width=4:verifier=gbv", "gbv")]),
]
#: Okabe-Ito colours, distinct for colour-blind readers; EAGLE is grey in every panel.
COLOURS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7"]
EAGLE = "#777777"


def load(path: Path = SOURCE) -> dict:
    """(mismatch, method) -> sorted [(T, tau, low, high)]."""
    out: dict = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            out.setdefault((r["mismatch"], r["method"]), []).append(
                (float(r["temperature"]), float(r["tau"]), float(r["tau_low"]), float(r["tau_high"])))
    return {k: sorted(v) for k, v in out.items()}


def draw(data: dict, path: Path = OUT) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    levels = ["low", "high"]
    fig, axes = plt.subplots(len(GROUPS), 2, figsize=(7.5, 2.35 * len(GROUPS) + 0.5), sharex=True, sharey="col")
    for row, (title, methods) in enumerate(GROUPS):
        for col, level in enumerate(levels):
            ax = axes[row][col]
            series = [("eagle", "EAGLE (onehot)", EAGLE)] + [(m, lab, COLOURS[i]) for i, (m, lab) in enumerate(methods)]
            for method, label, colour in series:
                pts = data.get((level, method))
                if not pts:
                    continue
                t, tau, lo, hi = zip(*pts)
                ax.fill_between(t, lo, hi, color=colour, alpha=0.15, linewidth=0)
                ax.plot(t, tau, marker="o", ms=3.5, lw=2 if method != "eagle" else 1.6, color=colour,
                        ls="--" if method == "eagle" else "-", label=label)
            ax.grid(alpha=0.3)
            ax.tick_params(labelsize=9.5)
            if row == 0:
                ax.set_title(f"{level} mismatch", fontsize=11)
            if col == 0:
                ax.set_ylabel(f"{title}\ntokens per step", fontsize=10)
            if col == 1:
                ax.legend(fontsize=8.5, loc="best", frameon=True, framealpha=0.9)
        for ax in axes[-1]:
            ax.set_xlabel("target temperature T", fontsize=10)
    fig.suptitle("V = 32,000, sparse top-128 draft, K,D,N = 4,4,16, 400 steps a point; bands: 95% intervals",
                 fontsize=9.5)
    fig.tight_layout(rect=(0, 0, 1, 0.985))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150)
    plt.close(fig)


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args:
        print("usage: verifier_figure.py", file=sys.stderr)
        return 2
    if not SOURCE.is_file():
        print(f"verifier_figure.py: {SOURCE.relative_to(ROOT)} is missing (recipe sweep_v32k_multipath)",
              file=sys.stderr)
        return 2
    draw(load())
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
