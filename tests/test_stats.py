"""The statistics of the lossless tests: the pooled chi-square on known answers, the prefix cells
(a partition; the flat rule is their length-1 case), and the Monte-Carlo lossless test: lossless
methods pass, the lossy control is caught, seeds reproduce, bad arguments give clear errors.

Every test states alpha, the seed and the sample size, and rejects iff p < alpha (``stats.rejects``,
the one convention). The calibration over >= 200 null runs
and the power study are in ``simulations/calibration.py`` (and the claims-tier test below, about 1 minute).
"""

import numpy as np
import pytest

from rheotheory import make_method, certify, random_pair
from rheotheory.errors import RheoError
from rheotheory.stats import (OUTSIDE, POOLED, ChiSquare, LengthTest, bonferroni, chi_square, chi_square_by_length,
                              chi_square_law, combine, extend_outputs, lossless_test, pair_laws, prefix_cells, rejects)
from rheotheory.synthetic import SyntheticPair

ALPHA = 0.01

#: A small instance on which the exact certifier finds the ``true`` proxy lossy.
LOSSY_PAIR = random_pair(3, 2, seed=6)
LOSSY = make_method("rheo", top_k=2, depth=2, budget=4, proxy="true", verifier="sequential")
LOSSLESS = make_method("rheo", top_k=2, depth=2, budget=4, proxy="next", verifier="sequential")


def test_chi_square_known_answers():
    # observed == expected: X2 = 0, p = 1
    res = chi_square([10, 20, 30, 40], [0.1, 0.2, 0.3, 0.4])
    assert (res.statistic, res.df, res.p_value, res.cells, res.n) == (0.0, 3, 1.0, 4, 100)
    # df = 2: p = exp(-X2 / 2); worst cell: (15 - 10)^2 / 10 = 2.5
    res = chi_square([45, 40, 15], [0.5, 0.4, 0.1], names=["a", "b", "c"])
    assert res.statistic == pytest.approx(3.0, abs=1e-12) and res.df == 2
    assert res.p_value == pytest.approx(np.exp(-1.5), rel=1e-12)
    assert (res.worst_cell, res.observed, res.expected) == ("c", 15, pytest.approx(10.0))


def test_chi_square_pools_rare_cells():
    # expected 2 and 3 (< 5) pool into one cell of expected 5, kept: cells (50, 45, 5), obs (50, 40, 10)
    res = chi_square([50, 40, 4, 6], [0.5, 0.45, 0.02, 0.03])
    assert res.cells == 3 and res.df == 2
    assert res.statistic == pytest.approx(0 + 25 / 45 + 25 / 5, abs=1e-12)
    assert res.worst_cell == POOLED
    # expected 2 alone (< 5) is merged into the smallest other cell (expected 18): nothing dropped
    res = chi_square([50, 30, 20, 0], [0.5, 0.3, 0.18, 0.02], names=["a", "b", "c", "d"])
    assert res.cells == 3 and res.df == 2 and res.statistic == pytest.approx(0.0, abs=1e-12)
    res = chi_square([50, 30, 16, 4], [0.5, 0.3, 0.18, 0.02], names=["a", "b", "c", "d"])
    assert res.statistic == pytest.approx(0.0, abs=1e-12)
    # a single cell left: nothing to test
    res = chi_square([97, 3], [0.99, 0.01])
    assert (res.statistic, res.df, res.p_value, res.cells) == (0.0, 0, 1.0, 1)


def test_one_rejection_convention():
    # reject iff p < alpha: at p == alpha the test does not reject, and every verdict agrees
    assert rejects(0.0099, 0.01) and not rejects(0.01, 0.01) and not rejects(1.0, 0.01)
    res = chi_square([45, 40, 15], [0.5, 0.4, 0.1])  # p = exp(-1.5) = 0.223
    assert res.rejects(0.2232) and not res.rejects(res.p_value) and "no rejection" in res.report(res.p_value)
    assert "-> reject" in res.report(0.2232)
    # the verdict of the Monte-Carlo lossless test, at alpha equal to its own p-value (300 samples, seed 9)
    p = lossless_test(LOSSY_PAIR, LOSSLESS, samples=300, seed=9).p_value
    assert 0 < p < 1 and lossless_test(LOSSY_PAIR, LOSSLESS, samples=300, alpha=p, seed=9).lossless


def test_an_impossible_outcome_rejects_outright():
    # one count on a cell of probability 0 (expected 0): p = 0 before any pooling; a zero count there is pooled
    res = chi_square([60, 39, 1], [0.6, 0.4, 0.0], names=["a", "b", "c"])
    assert (res.p_value, res.statistic, res.worst_cell, res.observed, res.expected) == (0.0, np.inf, "c", 1, 0.0)
    assert res.rejects(1e-300)
    assert chi_square([60, 40, 0], [0.6, 0.4, 0.0]).statistic == 0.0
    # it survives combination over prompts
    c = combine([chi_square([45, 40, 15], [0.5, 0.4, 0.1]), res], labels=["ok", "bad"])
    assert c.p_value == 0.0 and c.worst_cell == "'bad': c"


def test_chi_square_law_is_chi_square_on_the_outcomes():
    law = {"a": 0.5, "b": 0.3, "c": 0.18, "d": 0.02}
    samples = ["a"] * 50 + ["b"] * 30 + ["c"] * 16 + ["d"] * 4
    got = chi_square_law(samples, law)
    assert got == chi_square([50, 30, 16, 4], list(law.values()), names=list(law))  # same cells, same pooling
    # an outcome the law does not list (or gives probability 0) rejects
    bad = chi_square_law(samples + ["e"], law)
    assert bad.p_value == 0.0 and bad.worst_cell == OUTSIDE
    assert chi_square_law(samples + ["z"], {**law, "z": 0.0}).p_value == 0.0


def test_chi_square_bad_input():
    with pytest.raises(RheoError, match="partition"):
        chi_square([5, 5], [0.5, 0.4])
    with pytest.raises(RheoError, match="1-d"):
        chi_square([5, 5], [0.5, 0.25, 0.25])
    with pytest.raises(RheoError, match="no observations"):
        chi_square([0, 0], [0.5, 0.5])


def test_prefix_cells_of_a_two_token_law():
    # p(x1) = (0.5, 0.46, 0.04); p(. | 0) = (0.9, 0.1, 0); p(. | 1) = (0.5, 0.5, 0); n = 100, m = 5
    cond = {(): [0.5, 0.46, 0.04], (0,): [0.9, 0.1, 0.0], (1,): [0.5, 0.5, 0.0]}
    calls = []

    def laws(prefixes):
        calls.append(list(prefixes))
        return np.array([cond[u] for u in prefixes])

    cells = prefix_cells(laws, 100, 2)
    assert calls == [[()], [(0,), (1,)]]  # one batch per length, frequent prefixes only
    keys, probs = cells.cells(2)
    # frequent pairs (0 0) 45, (0 1) 5, (1 0) 23, (1 1) 23; cells "0 *", "1 *" (0) and "*" (x1 = 2: 4)
    assert keys == [("leaf", (0, 0)), ("leaf", (0, 1)), ("leaf", (1, 0)), ("leaf", (1, 1)),
                    ("rare", ()), ("rare", (0,)), ("rare", (1,))]
    assert probs == pytest.approx([0.45, 0.05, 0.23, 0.23, 0.04, 0.0, 0.0], abs=1e-12)
    seqs = [(0, 0)] * 45 + [(0, 1)] * 5 + [(1, 0)] * 22 + [(1, 1)] * 24 + [(2, 0)] * 4
    res = cells.chi_square(seqs, 2)
    # the three rare cells pool to expected 4 (< 5) and join the smallest other cell, (0 1): 9 vs 9
    assert res.cells == 4 and res.df == 3
    assert res.statistic == pytest.approx(2 / 23, abs=1e-12)
    assert cells.cell_of((2, 0), 2) == ("rare", ()) and cells.cell_of((0, 2), 2) == ("rare", (0,))


def test_flat_rule_is_the_length_one_case():
    # a flat law tested by chi_square equals the length-1 test of the prefix cells (one rule)
    rng = np.random.default_rng(4)
    law = rng.dirichlet(np.full(30, 0.3))
    seqs = [(int(x),) for x in rng.choice(30, size=300, p=law)]
    res = prefix_cells(lambda us: np.stack([law] * len(us)), 300, 1).chi_square(seqs, 1)
    flat = chi_square(np.bincount([s[0] for s in seqs], minlength=30), law)
    assert (res.statistic, res.df) == (pytest.approx(flat.statistic, rel=1e-12), flat.df)


def test_combine_sums_independent_tests():
    a = chi_square([45, 40, 15], [0.5, 0.4, 0.1])
    b = chi_square([10, 20, 30, 40], [0.1, 0.2, 0.3, 0.4])
    c = combine([a, b], labels=["first", "second"])
    assert (c.statistic, c.df, c.n, c.cells) == (pytest.approx(3.0), 5, 200, 7)
    assert c.worst_cell.startswith("'first'")
    assert isinstance(c, ChiSquare) and set(c.to_dict()) >= {"statistic", "df", "p_value", "n"}


def test_control_is_lossy_and_reference_lossless_exactly():
    assert not certify(LOSSY_PAIR, LOSSY).lossless
    assert certify(LOSSY_PAIR, LOSSLESS).lossless


def test_lossy_control_is_rejected():
    # alpha 0.01, 4000 samples, seed 0: the `true` proxy (exact deviation 0.043) is caught
    res = lossless_test(LOSSY_PAIR, LOSSY, samples=4000, alpha=ALPHA, seed=0)
    assert not res.lossless and rejects(res.p_value, ALPHA)


def test_lossless_method_is_not_rejected():
    # alpha 0.01, 4000 samples, seed 0, same instance and tree size as the lossy control
    res = lossless_test(LOSSY_PAIR, LOSSLESS, samples=4000, alpha=ALPHA, seed=0)
    assert res.lossless and not rejects(res.p_value, ALPHA)
    assert len(res.per_length) == LOSSLESS.depth + 1
    assert all(isinstance(t, LengthTest) for t in res.per_length)
    assert [t["length"] for t in res.to_dict()["per_length"]] == [1, 2, 3]


@pytest.mark.parametrize("method", [make_method("eagle", top_k=4, depth=3, budget=10),
                                    make_method("rheo", top_k=4, depth=3, budget=10, head=1),
                                    make_method("static", shape=[[0], [1], [0, 0]], verifier="rrs-wor", sampling="wor")],
                         ids=lambda m: m.family)
def test_lossless_methods_pass_on_a_synthetic_pair(method):
    # alpha 0.01, 1500 samples, seed 3, V = 50, T = 1
    res = lossless_test(SyntheticPair(50, seed=1, draft_top_k=None), method, samples=1500, alpha=ALPHA, seed=3)
    assert res.lossless, res.to_dict()


def test_exact_target_samples_pass_and_wrong_law_fails():
    # seqs drawn from the target itself (seed 1, n = 3000) vs. drawn from the draft
    pair = random_pair(3, 2, seed=2, exact=False)
    rng = np.random.default_rng(1)
    good = extend_outputs(pair, [()] * 3000, 3, rng)
    assert not rejects(bonferroni([t.p_value for t in chi_square_by_length(pair, good, 3)]), ALPHA)

    class DraftAsTarget:
        def p(self, u):
            return pair.q(u)

    bad = extend_outputs(DraftAsTarget(), [()] * 3000, 3, rng)
    assert rejects(bonferroni([t.p_value for t in chi_square_by_length(pair, bad, 3)]), ALPHA)


def test_cells_partition_the_sequences():
    pair = SyntheticPair(200, seed=0, draft_top_k=None)
    n, L = 500, 3
    cells = prefix_cells(pair_laws(pair), n, L, 5.0)
    seqs = extend_outputs(pair, [()] * n, L, np.random.default_rng(0))
    for l in range(1, L + 1):
        keys, probs = cells.cells(l)
        assert probs.sum() == pytest.approx(1.0, abs=1e-9)
        assert {cells.cell_of(w, l) for w in seqs} <= set(keys)
    for t in chi_square_by_length(pair, seqs, L):
        assert t.cells >= 2 and t.df == t.cells - 1 and 0 <= t.p_value <= 1 and t.n == n


def test_seed_reproduces_the_test():
    a = lossless_test(LOSSY_PAIR, LOSSLESS, samples=300, seed=9)
    b = lossless_test(LOSSY_PAIR, LOSSLESS, samples=300, seed=9)
    c = lossless_test(LOSSY_PAIR, LOSSLESS, samples=300, seed=10)
    assert a == b and a.p_value != c.p_value


@pytest.mark.parametrize("kwargs,match", [
    (dict(samples=1), "samples"),
    (dict(alpha=0.0), "alpha"),
    (dict(alpha=1.5), "alpha"),
    (dict(min_expected=0), "min_expected"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(RheoError, match=match):
        lossless_test(LOSSY_PAIR, LOSSLESS, **kwargs)


def test_depth_beyond_horizon_is_a_clear_error():
    with pytest.raises(RheoError, match="horizon"):
        lossless_test(LOSSY_PAIR, make_method("chain", depth=3), samples=10)


@pytest.mark.claims
def test_false_rejection_rate_over_200_null_runs():
    # 200 seeded null runs (seeds 0..199), 1000 samples each, alpha 0.01: at most 2% rejections
    rejected = sum(not lossless_test(LOSSY_PAIR, LOSSLESS, samples=1000, alpha=ALPHA, seed=s).lossless
                   for s in range(200))
    assert rejected / 200 <= 0.02
