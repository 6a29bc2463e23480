"""How much could any online rule gain over the best fixed arm on the V = 32k synthetic grid?

A rule that reads only the past cannot beat the best arm in expectation when every step starts
from a fresh i.i.d. context, as the sweep's steps do (docs/theory.md section 2.8). A *contextual*
rule may, if the arms' ranking changes with something the prefix fixes before the step draws
anything. This script measures the most such a rule could gain with the draft's root law as the
context: for each cell it runs every arm on the same contexts (the sweep's seed, so the same
contexts as the sweep's rows), splits the steps into ``--bins`` equal-count bins of a root
feature (entropy of the draft's root law, or its largest probability), and takes in each bin the
arm with the highest mean length *in hindsight*. That oracle is optimistic (it picks on the same
steps it scores, and knows the bins' edges); its gain over the best single arm bounds from above
what a contextual bandit on that feature would reach at this many steps.

This is a new computation (it runs every arm; about the sweep's cost for these rows), not a
post-processing of the sweep CSV.

    python simulations/online_context_oracle.py --out simulations/results/online_context_oracle.csv
"""

from __future__ import annotations

import argparse
import csv
import sys
import time

import numpy as np

from rheotheory.methods import resolve
from rheotheory.montecarlo import CONTEXT_LENGTH, _context_rng, run_steps
from rheotheory.synthetic import SyntheticPair, mismatch_value

ARMS = ("eagle", "rheo-tuned", "static-wor", "rheo-sampled")
FEATURES = ("entropy", "maxq")
FIELDS = ("mismatch", "temperature", "top_k", "depth", "budget", "steps", "best_arm", "best_tau", "feature",
          "bins", "oracle_tau", "gain_pct", "per_bin")


def _tree(text: str) -> tuple[int, int, int]:
    try:
        k, d, n = (int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"a tree is K,D,N (three integers), got {text!r}") from None
    if min(k, d, n) < 1:
        raise argparse.ArgumentTypeError(f"K, D and N must be >= 1, got {text!r}")
    return k, d, n


def cell(level: str, t: float, tree: tuple, steps: int, seed: int, bins: int) -> list[dict]:
    pair = SyntheticPair(32000, seed=seed, mismatch=mismatch_value(level), temperature=t)
    lengths = {}
    for arm in ARMS:
        recs: list = []
        run_steps(pair, resolve(arm, size=tree).at_temperature(t), steps, seed=seed, contexts=True, records=recs)
        lengths[arm] = np.array([len(r.z) for r in recs], dtype=np.float64)
    crng = _context_rng(seed)  # the contexts run_steps drew, in order
    feats = {"entropy": [], "maxq": []}
    for _ in range(steps):
        ctx = tuple(int(x) for x in crng.integers(0, pair.vocab_size, size=CONTEXT_LENGTH))
        q = np.asarray(pair.at(ctx).q(()), dtype=np.float64)
        q = q[q > 0]
        feats["entropy"].append(float(-(q * np.log(q)).sum()))
        feats["maxq"].append(float(q.max()))
    best = max(ARMS, key=lambda a: lengths[a].mean())
    rows = []
    for name in FEATURES:
        f = np.array(feats[name])
        b = np.digitize(f, np.quantile(f, np.arange(1, bins) / bins))
        picks = [max(ARMS, key=lambda a: lengths[a][b == k].mean()) for k in range(bins)]
        oracle = sum(lengths[picks[k]][b == k].sum() for k in range(bins)) / steps
        rows.append(dict(mismatch=level, temperature=t, top_k=tree[0], depth=tree[1], budget=tree[2], steps=steps,
                         best_arm=best, best_tau=round(float(lengths[best].mean()), 4), feature=name, bins=bins,
                         oracle_tau=round(float(oracle), 4),
                         gain_pct=round(100 * (oracle / lengths[best].mean() - 1), 2), per_bin=" ".join(picks)))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mismatch", nargs="+", default=["low", "high"])
    ap.add_argument("--temperatures", nargs="+", type=float, default=[0.5, 1.0, 1.5])
    ap.add_argument("--trees", nargs="+", type=_tree, default=[(4, 4, 16), (10, 6, 60)])
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--bins", type=int, default=3)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    for level in a.mismatch:
        try:
            mismatch_value(level)
        except Exception as e:  # noqa: BLE001 - one line, exit 2
            ap.error(str(e))
    if a.steps < 2 or a.bins < 1 or a.bins > a.steps or any(t < 0 for t in a.temperatures):
        ap.error("need --steps >= 2, 1 <= --bins <= --steps and temperatures >= 0")
    rows, t0 = [], time.perf_counter()
    cells = [(m, t, tr) for m in a.mismatch for t in a.temperatures for tr in a.trees]
    for i, (m, t, tr) in enumerate(cells, 1):
        rows += cell(m, t, tr, a.steps, a.seed, a.bins)
        print(f"[{i}/{len(cells)}] {m} T={t:g} {tr}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    with open(a.out, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    best = max(rows, key=lambda r: r["gain_pct"])
    print(f"largest oracle gain over the best arm: {best['gain_pct']:+.2f}% ({best['mismatch']}, T = "
          f"{best['temperature']:g}, N = {best['budget']}, {best['feature']}); cells >= +5%: "
          f"{sum(r['gain_pct'] >= 5 for r in rows)} of {len(rows)}")
    print(f"csv: {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
