"""Planted bugs (rheotheory.testing.mutants): every registered verifier has one, and both the
exact certifier and the Monte-Carlo test catch every one.

Exact: ``certify`` (the code path of ``rheo certify``) on the fixed instances
``random_pair(3, D + 1, seed)``, seeds 0, 1, 2, in exact rationals: the real verifier's deviation
is exactly 0 on every instance and the mutant's largest is not. Monte Carlo: ``lossless_test`` (the code
path of ``rheo mc``) on a V = 32k synthetic pair, alpha = ``DEFAULT_ALPHA`` (0.01), sampling seed
MC_SEED = 0, N = MC_SAMPLES = 500 steps: the mutant must be rejected. Measured p-values:
``simulations/results/mutant_table.md``.
"""

import pytest

from rheotheory.exact import certify
from rheotheory.methods import FAMILIES
from rheotheory.stats import DEFAULT_ALPHA, lossless_test
from rheotheory.testing.mutants import (CASE_METHODS, MC_SAMPLES, MC_SEED, MUTANTS, cases, missing_mutants,
                                        planted)
from rheotheory.verify import TREE_VERIFIERS, VERIFIERS, PerNodeWalk, get_verifier, register_tree_verifier

CASES = cases()
#: The tree-level verifiers registered as lossless (a lossy one has no rule to plant a bug in).
LOSSLESS_TREE_VERIFIERS = [n for n, tv in TREE_VERIFIERS.items() if not tv.lossy]


def test_every_registered_verifier_has_a_mutant():
    assert missing_mutants() == []
    assert set(MUTANTS) == set(VERIFIERS) | set(LOSSLESS_TREE_VERIFIERS)  # and no mutant of an unknown name
    for case in CASES:
        m = case.method
        assert m.verifier == case.mutant.verifier and m.verifier in FAMILIES[m.family].admitted_verifiers()
        assert m.known_lossy() is None, m.describe()
        # never registered: the registries hold only the real verifiers
        assert case.mutant.tree_verifier not in TREE_VERIFIERS.values()
        assert case.mutant.tree_verifier.name not in TREE_VERIFIERS and case.mutant.tree_verifier.name not in VERIFIERS


def test_a_verifier_registered_without_a_mutant_is_reported():
    class Unchecked(PerNodeWalk):
        """A stand-in tree-level verifier nobody planted a bug in."""

    register_tree_verifier(Unchecked(get_verifier("sequential"), "unchecked-walk"), families=("chain",))
    try:
        assert missing_mutants() == ["unchecked-walk"]
    finally:
        TREE_VERIFIERS.pop("unchecked-walk")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.mutant.label)
def test_mutant_is_caught_exactly(case):
    method = case.method
    bad = planted(method, case.mutant)
    assert bad.tree_verifier is case.mutant.tree_verifier
    devs = []
    for pair in case.exact_pairs():
        assert certify(pair, method).max_deviation == 0, method.describe()
        devs.append(certify(pair, bad).max_deviation)
    assert max(devs) > 0, f"{case.mutant.label} not caught on {method.describe()}: {devs}"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.mutant.label)
def test_mutant_is_rejected_by_monte_carlo(case):
    # V = 32k, alpha 0.01, seed 0, N = 500 (module docstring); the real verifiers' acceptance of
    # this test is checked in tests/test_montecarlo.py and tests/test_tree_verifiers.py
    res = lossless_test(case.mc_pair(), planted(case.method, case.mutant), samples=MC_SAMPLES,
                        alpha=DEFAULT_ALPHA, seed=MC_SEED)
    assert not res.lossless, f"{case.mutant.label}: p = {res.p_value:.3g} > alpha {DEFAULT_ALPHA}"


def test_case_methods_cover_exactly_the_registered_verifiers():
    assert set(CASE_METHODS) == set(VERIFIERS) | set(LOSSLESS_TREE_VERIFIERS)
