"""Every planted bug of ``rheotheory.testing.mutants``, with the exact deviation and the Monte-Carlo p-value that catch it.

For each registered verifier and each of its mutants (``rheotheory.testing.mutants.cases``), in
the method of a family that admits the verifier:

- exact: ``certify`` (the code path of ``rheo certify``) on ``random_pair(3, D + 1, seed)``,
  seeds 0, 1, 2, exact rationals: the real verifier's largest deviation (must be 0) and the
  mutant's (must not be), with the number of instances on which the mutant deviates;
- Monte Carlo: ``lossless_test`` (the code path of ``rheo mc``) on the V = 32k synthetic pair
  of the case, alpha 0.01, seed 0, N = 500 steps, for the mutant (must reject) and, as the
  control, the real verifier.

A row is ``caught`` when the mutant deviates exactly and is rejected by Monte Carlo, and the real
verifier is exactly lossless. ``tests/test_mutants.py`` asserts the same, case by case.

    python simulations/mutant_table.py            # writes simulations/results/mutant_table.{csv,md}
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

from rheotheory.exact import certify
from rheotheory.provenance import write_provenance
from rheotheory.stats import DEFAULT_ALPHA, lossless_test
from rheotheory.testing.mutants import EXACT_SEEDS, EXACT_VOCAB, MC_SAMPLES, MC_SEED, MC_VOCAB, cases, planted

RESULTS = Path(__file__).resolve().parent / "results"

COLUMNS = ["verifier", "mutant", "bug", "family", "method", "exact_instances", "exact_real_max_deviation",
           "exact_mutant_max_deviation", "exact_mutant_max_deviation_float", "exact_caught_on", "mc_pair",
           "mc_samples", "mc_seed", "mc_alpha", "mc_p_mutant", "mc_p_real", "caught"]


def run_case(case) -> dict:
    method = case.method
    bad = planted(method, case.mutant)
    real_devs, bad_devs = [], []
    for pair in case.exact_pairs():
        real_devs.append(certify(pair, method).max_deviation)
        bad_devs.append(certify(pair, bad).max_deviation)
    mc_pair = case.mc_pair()
    p_bad = lossless_test(mc_pair, bad, samples=MC_SAMPLES, alpha=DEFAULT_ALPHA, seed=MC_SEED)
    p_real = lossless_test(mc_pair, method, samples=MC_SAMPLES, alpha=DEFAULT_ALPHA, seed=MC_SEED)
    dev = max(bad_devs)
    caught = max(real_devs) == 0 and dev > 0 and not p_bad.lossless
    return {
        "verifier": case.mutant.verifier,
        "mutant": case.mutant.name,
        "bug": case.mutant.bug,
        "family": method.family,
        "method": method.describe(),
        "exact_instances": f"random_pair({EXACT_VOCAB}, {method.depth + 1}, seed) seeds "
                           + ",".join(map(str, EXACT_SEEDS)),
        "exact_real_max_deviation": str(max(real_devs)),
        "exact_mutant_max_deviation": str(dev),
        "exact_mutant_max_deviation_float": f"{float(dev):.4g}",
        "exact_caught_on": f"{sum(d > 0 for d in bad_devs)}/{len(bad_devs)}",
        "mc_pair": f"V={MC_VOCAB} mismatch={case.mismatch} sparse={case.draft_top_k}",
        "mc_samples": MC_SAMPLES,
        "mc_seed": MC_SEED,
        "mc_alpha": DEFAULT_ALPHA,
        "mc_p_mutant": f"{p_bad.p_value:.3g}",
        "mc_p_real": f"{p_real.p_value:.3g}",
        "caught": "yes" if caught else "NO",
    }


def markdown(rows: list[dict]) -> str:
    head = ["verifier", "mutant", "family", "exact max deviation (mutant)", "deviates on", "real",
            "MC p (mutant)", "MC p (real)", "MC pair", "caught"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        dev = r["exact_mutant_max_deviation"]
        dev = dev if len(dev) <= 20 else r["exact_mutant_max_deviation_float"]
        out.append("| " + " | ".join([r["verifier"], r["mutant"], r["family"], f"{dev} (~{r['exact_mutant_max_deviation_float']})",
                                      r["exact_caught_on"], r["exact_real_max_deviation"], r["mc_p_mutant"],
                                      r["mc_p_real"], r["mc_pair"], r["caught"]]) + " |")
    n = len(rows)
    caught = sum(r["caught"] == "yes" for r in rows)
    return (f"# Planted bugs: {caught} of {n} caught\n\n"
            f"Exact: `certify` on random_pair({EXACT_VOCAB}, D + 1, seed), seeds "
            f"{', '.join(map(str, EXACT_SEEDS))}, exact rationals (the real verifier: deviation exactly 0). "
            f"Monte Carlo: `lossless_test` (`rheo mc`), V = {MC_VOCAB}, alpha = {DEFAULT_ALPHA}, "
            f"seed {MC_SEED}, N = {MC_SAMPLES} steps. Methods:\n\n"
            + "\n".join(sorted({f"- {r['verifier']}: `{r['method']}`" for r in rows})) + "\n\n"
            + "\n".join(out) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=RESULTS, help="results folder")
    args = ap.parse_args(argv)
    started = time.time()
    rows = []
    for case in cases():
        t0 = time.perf_counter()
        rows.append(run_case(case))
        r = rows[-1]
        print(f"{case.mutant.label:28s} dev {r['exact_mutant_max_deviation_float']:>9s} "
              f"p {r['mc_p_mutant']:>9s} (real {r['mc_p_real']}) {r['caught']}  {time.perf_counter() - t0:.1f}s",
              flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    csv_path, md_path = args.out / "mutant_table.csv", args.out / "mutant_table.md"
    with csv_path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    md_path.write_text(markdown(rows))
    for path in (csv_path, md_path):
        write_provenance(path, seed=MC_SEED, started=started)
    return 0 if all(r["caught"] == "yes" for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
