"""The Monte-Carlo lossless test: lossless methods pass, the lossy control is caught, cells are a
partition, seeds reproduce, bad arguments give clear errors.

Every test states alpha, the seed and the sample size. The calibration over >= 200 null runs
and the power study are in ``simulations/calibration.py`` (and the slow test below).
"""

import numpy as np
import pytest

from rheotheory import make_method, certify, random_pair
from rheotheory.errors import RheoError
from rheotheory.stats import _trie, chi_square_by_length, combined_p_value, extend_outputs, lossless_test
from rheotheory.synthetic import SyntheticPair

ALPHA = 0.01

#: A small instance on which the exact certifier finds the ``true`` proxy lossy.
LOSSY_PAIR = random_pair(3, 2, seed=6)
LOSSY = make_method("rheo", top_k=2, depth=2, budget=4, proxy="true", verifier="sequential")
LOSSLESS = make_method("rheo", top_k=2, depth=2, budget=4, proxy="next", verifier="sequential")


def test_control_is_lossy_and_reference_lossless_exactly():
    assert not certify(LOSSY_PAIR, LOSSY).lossless
    assert certify(LOSSY_PAIR, LOSSLESS).lossless


def test_lossy_control_is_rejected():
    # alpha 0.01, 4000 samples, seed 0: the `true` proxy (exact deviation 0.043) is caught
    res = lossless_test(LOSSY_PAIR, LOSSY, samples=4000, alpha=ALPHA, seed=0)
    assert not res.lossless and res.p_value < ALPHA


def test_lossless_method_is_not_rejected():
    # alpha 0.01, 4000 samples, seed 0, same instance and tree size as the lossy control
    res = lossless_test(LOSSY_PAIR, LOSSLESS, samples=4000, alpha=ALPHA, seed=0)
    assert res.lossless and res.p_value > ALPHA
    assert len(res.per_length) == LOSSLESS.depth + 1


@pytest.mark.parametrize("method", [make_method("eagle", top_k=4, depth=3, budget=10),
                                    make_method("rheo", top_k=4, depth=3, budget=10, head=1),
                                    make_method("static", shape=[[0], [1], [0, 0]], verifier="rrs-wor", sampling="wor")],
                         ids=lambda m: m.method)
def test_lossless_methods_pass_on_a_synthetic_pair(method):
    # alpha 0.01, 1500 samples, seed 3, V = 50, T = 1
    res = lossless_test(SyntheticPair(50, seed=1, draft_top_k=None), method, samples=1500, alpha=ALPHA, seed=3)
    assert res.lossless, res.to_dict()


def test_exact_target_samples_pass_and_wrong_law_fails():
    # seqs drawn from the target itself (seed 1, n = 3000) vs. drawn from the draft
    pair = random_pair(3, 2, seed=2, exact=False)
    rng = np.random.default_rng(1)
    good = extend_outputs(pair, [()] * 3000, 3, rng)
    assert combined_p_value(chi_square_by_length(pair, good, 3)) > ALPHA

    class DraftAsTarget:
        def p(self, u):
            return pair.q(u)

    bad = extend_outputs(DraftAsTarget(), [()] * 3000, 3, rng)
    assert combined_p_value(chi_square_by_length(pair, bad, 3)) < ALPHA


def test_cells_partition_the_sequences():
    pair = SyntheticPair(200, seed=0, draft_top_k=None)
    n, L = 500, 3
    big, pooled = _trie(pair, n, L, 5.0)
    for l in range(1, L + 1):
        mass = sum(pu for u, pu in big.items() if len(u) == l) + sum(pm for u, pm in pooled.items() if len(u) < l)
        assert mass == pytest.approx(1.0, abs=1e-9)
    seqs = extend_outputs(pair, [()] * n, L, np.random.default_rng(0))
    for t in chi_square_by_length(pair, seqs, L):
        assert t.cells >= 2 and t.df == t.cells - 1 and 0 <= t.p_value <= 1


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


@pytest.mark.slow
def test_false_rejection_rate_over_200_null_runs():
    # 200 seeded null runs (seeds 0..199), 1000 samples each, alpha 0.01: at most 2% rejections
    rejected = sum(not lossless_test(LOSSY_PAIR, LOSSLESS, samples=1000, alpha=ALPHA, seed=s).lossless
                   for s in range(200))
    assert rejected / 200 <= 0.02
