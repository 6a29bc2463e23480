"""Summarise a sweep CSV: the default rheo against eagle, and the best method per cell.

Usage::

    python3 simulations/summarize_sweep.py simulations/results/sweep_v32k.csv

For every (mismatch, T, K, D, N): eagle's tau, the paired gain of ``rheo`` (absolute, with its
95% interval, and relative), whether it is a loss beyond noise (upper end of the interval
below 0), and the best RheoSampling variant and the best method overall.
"""

from __future__ import annotations

import sys

from rheotheory.sweep import read_csv


def main(path: str) -> None:
    rows = read_csv(path)
    cells = {}
    for r in rows:
        cells.setdefault((r["mismatch"], r["temperature"], int(r["top_k"]), int(r["depth"]), int(r["budget"])),
                         []).append(r)
    print(f"{'mismatch':8} {'T':>4} {'K,D,N':>8} {'eagle':>6} {'rheo':>6} {'gain [95% CI]':>24} {'rel':>6} "
          f"{'loss?':>5}  best rheo variant (tau)            best overall (tau)")
    losses = 0
    for key in sorted(cells, key=lambda k: (k[0], k[1], k[2:])):
        rs = {r["method"]: r for r in cells[key]}
        e, h = rs.get("eagle"), rs.get("rheo")
        if e is None or h is None:
            continue
        g, lo, hi = float(h["gain_vs_eagle"]), float(h["gain_low"]), float(h["gain_high"])
        loss = hi < 0
        losses += loss
        rheos = [r for m, r in rs.items() if m.startswith("rheo")]
        br = max(rheos, key=lambda r: r["tau"])
        bo = max(rs.values(), key=lambda r: r["tau"])
        mm, T, K, D, N = key
        print(f"{mm:8} {T:>4g} {f'{K},{D},{N}':>8} {e['tau']:6.3f} {h['tau']:6.3f} "
              f"{f'{g:+.3f} [{lo:+.3f},{hi:+.3f}]':>24} {g / e['tau']:>+6.1%} {'YES' if loss else 'no':>5}  "
              f"{br['method']:28} ({br['tau']:.3f})  {bo['method']:28} ({bo['tau']:.3f})")
    print(f"cells where the default rheo loses to eagle beyond noise: {losses}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "simulations/results/sweep_v32k.csv")
