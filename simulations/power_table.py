r"""Power of every Monte-Carlo test of the suite: the smallest total-variation deviation it detects
with probability 0.9 at its sample size (docs/theory.md section 6.5).

Usage::

    python simulations/power_table.py [--runs 2000] [--seed 0] [--skip-smollm]

writes ``simulations/results/power_table.csv`` (one row per test) and its provenance record.

**What is computed.** Every test compares counts of ``N`` observations with the cells of a null
law (:mod:`rheotheory.stats`: cells from the target alone, pooled by the one rule,
:func:`rheotheory.stats.pooled_law`) by Pearson's statistic and rejects iff ``p < level``
(:func:`rheotheory.stats.rejects`). The cells of each test are built here exactly as the test
builds them, from its own parameters (the test modules are imported for their constants).

*Perturbation model: every perturbation of the cell law.* If the tested law deviates from the
null cell law :math:`\pi` by :math:`\delta` (total variation :math:`d = \tfrac12 \sum_c |\delta_c|`),
Pearson's statistic is asymptotically non-central chi-square with ``df`` = cells - 1 and
non-centrality :math:`\lambda = N \sum_c \delta_c^2 / \pi_c`. With :math:`A` the cells where
:math:`\delta > 0`, Cauchy-Schwarz gives :math:`\lambda \ge N d^2 (1/\pi(A) + 1/(1 - \pi(A)))
\ge 4 N d^2`, the bound reached by moving mass :math:`d` proportionally from one half of the law
to the other. So with :math:`\lambda^*` the non-centrality at which the test's power is 0.9,
**every** deviation of the cell law with

.. math::  d \ge d_{0.9} = \sqrt{\lambda^* / (4 N)}

is detected with probability at least 0.9 (chi-square approximation): this is the column
``tv_detected_090``. A test that sums independent components (the real-model tests: one per
prompt, :func:`rheotheory.stats.combine`) has ``N`` = all runs and ``df`` = the summed degrees of
freedom, for a deviation of ``d`` at every prompt. A Bonferroni test over ``L`` lengths
(:func:`rheotheory.stats.lossless_test`) is bounded below by its length-``L`` test (the law of
``W_{:L}`` determines every shorter one) at level ``alpha / L``; ``d`` is then the deviation of
the law of ``W_{:L}``.

*The check.* For each case the recipe draws ``--runs`` multinomial samples of size ``N`` from the
least favourable law at :math:`d_{0.9}` (mass :math:`d` moved proportionally between two halves
of the cells, split greedily by decreasing mass) and runs the package's own test
(:func:`rheotheory.stats.chi_square`, :func:`~rheotheory.stats.combine`,
:func:`~rheotheory.stats.rejects`): ``simulated_power`` is the smallest rejection rate over the
test's cases (about 0.9 when the approximation holds; higher when one cell carries most of the
mass, so that no split is balanced and the bound :math:`4 N d^2` is not reached), and
``tv_simulated_090`` the smallest :math:`d_{0.9} \cdot 1.02^j` (``j`` of either sign) at which
every case's simulated rejection rate reaches 0.9 (the same ``--seed`` for every evaluation):
the deviation of that least favourable law detected with probability 0.9, by simulation.

*What no test of this kind sees.* A deviation inside one pooled cell (tokens merged by the
pooling rule or into a cell "``u *``") changes no count; ``pooled_mass`` is the null probability
of the cells that merge several outcomes (the largest over the test's cases). Deviations there
are caught only by the exact certifier.

Rows: the tests of the suite that sample and test a law at a stated level. ``rheo mc``'s
default (alpha 0.01, 2000 samples) depends on the instance and is not a test of the suite; the
slow calibration of ``tests/test_stats.py`` measures a false-rejection rate, not a law.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import optimize
from scipy import stats as sps

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from rheotheory import certify, make_method, random_pair  # noqa: E402
from rheotheory.provenance import write_provenance  # noqa: E402
from rheotheory.stats import (DEFAULT_MIN_EXPECTED, chi_square, combine, pair_laws, pool_cells,  # noqa: E402
                              pooled_law, prefix_cells, rejects)
from rheotheory.synthetic import SyntheticPair  # noqa: E402

#: Power at which the detected deviation is stated.
POWER = 0.9
#: Multinomial samples per case of the simulated check, and the seed of their generator.
RUNS = 2000
SEED = 0
RESULTS = ROOT / "simulations" / "results" / "power_table.csv"
FIELDS = ["test", "cases", "N", "alpha", "level", "df", "tv_detected_090", "simulated_power", "tv_simulated_090",
          "pooled_mass", "slow"]
#: Relative step of the search for the simulated 0.9-power deviation, and its largest number of steps.
SIM_STEP = 0.02
SIM_MAX_STEPS = 60


@dataclass
class Case:
    """One statistical test as the suite runs it: independent components (null cell law after
    pooling, observations), the level its p-value is compared with, and the mass of pooled cells."""

    components: list  # [(pi # [cells], n)]
    level: float
    pooled_mass: float


@dataclass
class Row:
    test: str  # test function(s)
    cases: list  # [Case]
    N: int  # observations of one case (all components)
    alpha: float  # the level stated by the test
    slow: bool  # in the slow tier only


def merged_mass(probs: np.ndarray, n: int, merged: np.ndarray) -> float:
    """Null mass of the test's cells that hold several outcomes: the pooled groups of
    :func:`rheotheory.stats.pool_cells` with more than one member, and the cells ``merged`` already."""
    groups = pool_cells(n * probs, DEFAULT_MIN_EXPECTED)
    return float(sum(probs[g].sum() for g in groups if len(g) > 1 or merged[g[0]]))


def flat_case(law_probs, n, level) -> Case:
    """A test of ``n`` draws against a law of outcomes (:func:`rheotheory.stats.chi_square_law`)."""
    pi = np.asarray([float(w) for w in law_probs if float(w) > 0], dtype=np.float64)  # [outcomes]
    return Case([(pooled_law(pi, n), n)], level, merged_mass(pi, n, np.zeros(len(pi), dtype=bool)))


def prefix_case(next_laws_list, n, length, level) -> Case:
    """A prefix-cell test (one component per entry of ``next_laws_list``) of the law of the first
    ``length`` tokens, ``n`` observations per component."""
    comps, mass = [], 0.0
    for laws in next_laws_list:
        keys, probs = prefix_cells(laws, n, length).cells(length)
        comps.append((pooled_law(probs, n), n))
        mass = max(mass, merged_mass(probs, n, np.array([kind == "rare" for kind, _ in keys])))
    return Case(comps, level, mass)


def lambda_star(df: int, level: float, power: float = POWER) -> float:
    """Non-centrality at which a chi-square test with ``df`` degrees of freedom at ``level`` has ``power``."""
    crit = sps.chi2.isf(level, df)
    return float(optimize.brentq(lambda lam: sps.ncx2.sf(crit, df, lam) - power, 1e-9, 1e5, xtol=1e-10))


def least_favourable(pi: np.ndarray, d: float) -> np.ndarray:
    """The law at total variation ``d`` from ``pi`` with the smallest non-centrality this split allows:
    mass ``d`` moved proportionally from one half of the cells (greedy by decreasing mass) to the other."""
    side = np.zeros(len(pi), dtype=bool)  # True: gains mass
    a = b = 0.0
    for i in np.argsort(-pi, kind="stable"):
        if a <= b:
            side[i], a = True, a + pi[i]
        else:
            b += pi[i]
    if b == 0:  # a single cell: nothing can move
        return pi.copy()
    d = min(d, b)
    return np.where(side, pi * (1 + d / a), pi * (1 - d / b))


def case_df(case: Case) -> int:
    return sum(len(pi) - 1 for pi, _ in case.components)


def detected_tv(case: Case) -> float:
    df = case_df(case)
    n_total = sum(n for _, n in case.components)
    return float(np.sqrt(lambda_star(df, case.level) / (4 * n_total))) if df > 0 else float("inf")


def simulated_power(case: Case, d: float, runs: int, rng: np.random.Generator) -> float:
    """Rejection rate of the package's test on ``runs`` samples of the least favourable law at ``d``."""
    alts = [(pi, least_favourable(pi, d), n) for pi, n in case.components]
    hits = 0
    for _ in range(runs):
        tests = [chi_square(rng.multinomial(n, alt / alt.sum()), pi) for pi, alt, n in alts]
        res = tests[0] if len(tests) == 1 else combine(tests)
        hits += rejects(res.p_value, case.level)
    return hits / runs


def simulated_tv(cases: list, d0: float, power0: float, runs: int, seed: int) -> float:
    """Smallest ``d0 * (1 + SIM_STEP) ** j`` at which every case's simulated power reaches
    :data:`POWER` (searched down from ``d0`` when ``power0`` reaches it, up otherwise; the same
    seed for every evaluation)."""
    def ok(d):
        return min(simulated_power(c, d, runs, np.random.default_rng(seed)) for c in cases) >= POWER

    d = d0
    if power0 >= POWER:
        for _ in range(SIM_MAX_STEPS):
            if not ok(d / (1 + SIM_STEP)):
                break
            d /= 1 + SIM_STEP
        return d
    for _ in range(SIM_MAX_STEPS):
        d *= 1 + SIM_STEP
        if ok(d):
            break
    return d


# --- the tests of the suite -------------------------------------------------------------------------

def rows_exact_vs_sampled() -> list[Row]:
    import test_montecarlo as tm
    import test_walk as tw

    walk = [flat_case(tw.exact_law(m.tree_verifier, t).values(), tw.SAMPLES, tw.ALPHA)
            for m in tw.METHODS for t in tw.heaviest_trees(m)]
    mc = [flat_case(certify(tm.PAIR, m).z_law.values(), tm.SAMPLES, tm.ALPHA) for m in tm.METHODS]
    return [Row("test_walk::test_sampled_walk_matches_the_exact_walk", walk, tw.SAMPLES, tw.ALPHA, False),
            Row("test_montecarlo::test_mc_step_law_matches_exact", mc, tm.SAMPLES, tm.ALPHA, False)]


def lossless_case(pair, depth, n, alpha) -> Case:
    L = depth + 1
    pair = pair.to_float() if getattr(pair, "exact", False) else pair
    return prefix_case([pair_laws(pair)], n, L, alpha / L)


def rows_lossless_test() -> list[Row]:
    import test_tree_verifiers as tv

    stats_alpha = 0.01  # tests/test_stats.py ALPHA
    lossy_pair = random_pair(3, 2, seed=6)
    rows = [
        Row("test_stats::test_lossy_control_is_rejected / test_lossless_method_is_not_rejected",
            [lossless_case(lossy_pair, 2, 4000, stats_alpha)], 4000, stats_alpha, False),
        Row("test_stats::test_lossless_methods_pass_on_a_synthetic_pair",
            [lossless_case(SyntheticPair(50, seed=1, draft_top_k=None), d, 1500, stats_alpha) for d in (3, 3, 2)],
            1500, stats_alpha, False),
        Row("test_stats::test_exact_target_samples_pass_and_wrong_law_fails",
            [prefix_case([pair_laws(random_pair(3, 2, seed=2, exact=False))], 3000, 3, stats_alpha / 3)],
            3000, stats_alpha, False),
    ]
    methods = [tv.MC_METHOD, make_method("chain", depth=3, verifier="block"), tv.MC_ADAPTIVE]
    rows.append(Row("test_tree_verifiers::test_mc_lossless_test_does_not_reject / _rejects_the_planted_bug",
                    [lossless_case(tv.MC_PAIR, m.depth, tv.MC_SAMPLES, tv.MC_ALPHA) for m in methods],
                    tv.MC_SAMPLES, tv.MC_ALPHA, False))
    return rows


def rows_real_models(skip_smollm: bool) -> list[Row]:
    import torch

    from rheotheory.decode.evaluation.bench import BENCH_PROMPTS
    from rheotheory.decode.backends.builtin import load_builtin_pair
    from rheotheory.decode.evaluation.checks import TESTED_TOKENS, next_token_laws
    from rheotheory.decode.engine import DecodeConfig

    torch.set_num_threads(1)
    import test_decode_engine as te
    import test_draft_head as th

    def case(target, encode, prompts, cfg, n, alpha):
        laws = [next_token_laws(target, encode(p), cfg) for p in prompts]
        return prefix_case(laws, n, TESTED_TOKENS, alpha)

    pair32 = load_builtin_pair("cpu", dtype=torch.float32)
    t1 = DecodeConfig(temperature=1.0)
    n2 = te.N_PER_PROMPT * len(te.LOSSLESS_PROMPTS)
    rows = [
        Row("test_decode_engine: lossless_first_two_tokens, _with_a_draft_temperature_of_its_own, "
            "_with_a_sparse_draft, _adaptive_all_sampled_with_traversal, biased_verifier_is_rejected",
            [case(pair32.target, pair32.encode, te.LOSSLESS_PROMPTS, t1, te.N_PER_PROMPT, te.ALPHA)], n2, te.ALPHA,
            False),
        Row("test_decode_engine::test_lossless_first_two_tokens_large (T = 0.7, top-p 0.95)",
            [case(pair32.target, pair32.encode, BENCH_PROMPTS[:3], DecodeConfig(temperature=0.7, top_p=0.95), 3000,
                  te.ALPHA)], 3000 * 3, te.ALPHA, True),
        Row("notebooks/03_real_model.ipynb (default size)",
            [case(load_builtin_pair().target, pair32.encode, ["def main(", "import "], t1, 50, 0.01)], 100, 0.01,
            False),
    ]
    model = th.tiny_llama()
    rows.append(Row("test_draft_head::test_lossless_with_a_draft_head",
                    [case(th.HFLM(model), th._Pair.encode, ["ab", "xyz"], t1, 400, th.ALPHA)], 800, th.ALPHA, False))
    if not skip_smollm:
        import test_decode_smollm as ts

        from rheotheory.decode.backends.smollm_pair import load_smollm2

        smol = load_smollm2(draft="int4")  # the target, the same for the int4 and head drafts
        for test, n in (("test_decode_smollm::test_lossless_first_two_tokens / test_biased_verifier_is_rejected",
                         ts.N_PER_PROMPT),
                        ("test_decode_smollm::test_lossless_with_the_trained_head", ts.HEAD_N_PER_PROMPT)):
            rows.append(Row(test, [case(smol.target, smol.encode, ts.LOSSLESS_PROMPTS, t1, n, ts.ALPHA)],
                            n * len(ts.LOSSLESS_PROMPTS), ts.ALPHA, True))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=RUNS, help=f"simulated samples per case (default {RUNS})")
    ap.add_argument("--seed", type=int, default=SEED, help=f"seed of the simulated check (default {SEED})")
    ap.add_argument("--skip-smollm", action="store_true", help="leave out the SmolLM2 rows (slow tier)")
    ap.add_argument("--out", type=Path, default=RESULTS, help="results CSV")
    args = ap.parse_args(argv)
    if args.runs < 1:
        ap.error("--runs must be >= 1")
    started = time.time()
    rows = rows_exact_vs_sampled() + rows_lossless_test() + rows_real_models(args.skip_smollm)
    out = []
    for row in rows:
        d = max(detected_tv(c) for c in row.cases)  # the weakest case of the test
        power = min(simulated_power(c, d, args.runs, np.random.default_rng(args.seed)) for c in row.cases)
        d_sim = simulated_tv(row.cases, d, power, args.runs, args.seed)
        dfs = sorted({case_df(c) for c in row.cases})
        levels = sorted({c.level for c in row.cases})
        out.append({"test": row.test, "cases": len(row.cases), "N": row.N, "alpha": f"{row.alpha:g}",
                    "level": "/".join(f"{x:.3g}" for x in levels),
                    "df": f"{dfs[0]}" if len(dfs) == 1 else f"{dfs[0]}-{dfs[-1]}",
                    "tv_detected_090": f"{d:.4f}", "simulated_power": f"{power:.3f}",
                    "tv_simulated_090": f"{d_sim:.4f}",
                    "pooled_mass": f"{max(c.pooled_mass for c in row.cases):.4f}", "slow": "yes" if row.slow else "no"})
        print(" | ".join(str(v) for v in out[-1].values()), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(out)
    write_provenance(args.out, seed=args.seed, started=started, recipe="simulations/power_table.py",
                     arguments={"runs": args.runs, "skip_smollm": args.skip_smollm, "power": POWER})
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
