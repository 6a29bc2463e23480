"""Online RheoSampling (docs/theory.md section 2.8): the step policy, the exact n-step
certificate, the planted peeking policy, and Monte Carlo at V = 32k with its lossy companion."""

from __future__ import annotations

from fractions import Fraction

import pytest

from rheotheory.errors import RheoError
from rheotheory.exact import certify, certify_steps
from rheotheory.methods import resolve
from rheotheory.montecarlo import run_steps
from rheotheory.pairs import GeneratedPair
from rheotheory.stats import DEFAULT_ALPHA, lossless_test
from rheotheory.synthetic import SyntheticPair
from rheotheory.testing.mutants import PeekingPolicy, peeking_chain

#: The size of the exact checks: K, D, N = 2, 2, 3 on V = 3 (two steps read prefixes up to 5).
SIZE = (2, 2, 3)
#: Policy seeds whose step-2 arm differs between step-1 outcomes at every temperature below
#: (asserted: a certificate where the second step ignores the first would prove little).
POLICY_SEEDS = (6, 9)
#: Fresh instances: GeneratedPair(3, 5, seed) for these seeds (horizon 2 (D + 1) - 1 = 5).
INSTANCE_SEEDS = (11, 12, 13)
TEMPERATURES = (0.5, 1.0, 1.5)


def _online(temperature, spec="rheo-online", size=SIZE):
    return resolve(spec, size=size).at_temperature(temperature)


@pytest.mark.parametrize("temperature", TEMPERATURES)
def test_the_second_step_depends_on_the_first_for_the_certified_seeds(temperature):
    method = _online(temperature)
    for seed in POLICY_SEEDS:
        policy = method.policy(seed)
        first = policy.choose()
        second = {policy.after(first, (0,) * n).choose().run_key() for n in (1, 2, 3)}
        assert len(second) >= 2, (seed, temperature)


@pytest.mark.parametrize("temperature", TEMPERATURES)
def test_rheo_online_two_steps_certify_exactly_lossless(temperature):
    """Exact rationals, two steps as one output: deviation exactly 0 on every instance and policy seed."""
    method = _online(temperature)
    for inst in INSTANCE_SEEDS:
        pair = GeneratedPair(3, 5, inst, exact=True)
        for seed in POLICY_SEEDS:
            cert = certify_steps(pair, method, steps=2, seed=seed)
            assert cert.lossless and cert.max_deviation == 0, (inst, seed)
            assert 1 <= cert.tokens_per_step <= SIZE[1] + 1


def test_three_steps_of_ucb1_over_two_arms_certify_exactly_lossless():
    method = _online(1.0, "rheo-online:arms=eagle,static-wor:rule=ucb1", size=(2, 1, 2))
    cert = certify_steps(GeneratedPair(3, 5, 21, exact=True), method, steps=3)
    assert cert.lossless and cert.max_deviation == 0


def test_the_peeking_policy_is_lossy_in_the_same_mode():
    """The planted policy picks chain or autoregressive after seeing the chain's first draw: each arm
    is lossless, the composition is not (docs/theory.md section 2.8 quotes the first value)."""
    chain = resolve("chain", size=SIZE)
    cert = certify_steps(GeneratedPair(3, 5, 0, exact=True), chain, steps=2, policy=PeekingPolicy(2))
    assert not cert.lossless and cert.max_deviation == Fraction(5, 182)
    for inst in INSTANCE_SEEDS:
        cert = certify_steps(GeneratedPair(3, 5, inst, exact=True), chain, steps=2, policy=PeekingPolicy(2))
        assert cert.max_deviation > 0, inst
        # the same chain with a policy that ignores the draw (always the chain) is lossless there
        assert certify_steps(GeneratedPair(3, 5, inst, exact=True), chain, steps=2).max_deviation == 0


def test_one_step_of_an_online_method_is_its_first_arm():
    pair = GeneratedPair(3, 3, 4, exact=True)
    for t in TEMPERATURES:
        method = _online(t)
        lead = resolve("rheo-adaptive", size=SIZE).at_temperature(t)
        assert method.first().run_key() == lead.run_key()
        assert certify(pair, method).z_law == certify(pair, method.first()).z_law


def test_the_policy_is_a_value_and_reproducible():
    method = _online(1.0)
    p0 = method.policy(3)
    arm = p0.choose()
    p1 = p0.after(arm, (1, 2))
    assert p0.step == 0 and p1.step == 1 and p0.stats != p1.stats
    assert p1.choose() == method.policy(3).after(arm, (1, 2)).choose()
    assert p1.stats[0] == (1, 0.5, 0.25)  # one accepted draft of D = 2


def test_arms_merge_duplicates_and_put_rheo_adaptives_choice_first():
    at0 = _online(0.0).arm_methods()  # rheo-tuned is EAGLE's tree at T = 0
    assert [m.family for m in at0] == ["eagle", "static", "adaptive"]
    at1 = _online(1.0).arm_methods()
    assert at1[0].family == "adaptive" and at1[0].verifier == "traversal"


@pytest.mark.parametrize("spec,match", [
    ("rheo-online:arms=eagle", "at least two"),
    ("rheo-online:arms=eagle,medusa", "unknown preset 'medusa'"),
    ("rheo-online:arms=eagle,rheo-online", "itself online"),
    ("rheo-online:rule=exp3", "rule"),
    ("rheo-online:explore=-0.5", "explore must be a finite number >= 0"),
    ("rheo-online:explore=nan", "explore must be a finite number >= 0"),
    ("rheo-online:explore=lots", "explore must be a finite number >= 0"),
])
def test_bad_online_specs_are_one_line_errors(spec, match):
    with pytest.raises(RheoError, match=match):
        resolve(spec, size=SIZE)


def test_certify_steps_refuses_a_short_horizon():
    with pytest.raises(RheoError, match="horizon"):
        certify_steps(GeneratedPair(3, 3, 0, exact=True), _online(1.0), steps=2)


def test_run_steps_records_which_arm_ran():
    pair = SyntheticPair(1000, seed=0, temperature=1.0)
    records = []
    res = run_steps(pair, _online(1.0, size=(3, 3, 8)), 60, seed=0, contexts=True, records=records)
    arms = {r.arm for r in records}
    assert res.steps == 60 and len(arms) >= 2 and records[0].arm == 0


#: Monte Carlo at V = 32k (the code path of ``rheo mc``): alpha = DEFAULT_ALPHA (1e-3), sampling seed
#: 0, N = 3000 steps from the root; the policy changes arm across the samples. Its companion, the
#: peeking chain, must be rejected at the same alpha, seed and N.
MC_N, MC_SEED = 3000, 0


def _mc_pair():
    return SyntheticPair(32_000, seed=0, mismatch=2.0, temperature=1.0, draft_top_k=128)


def test_rheo_online_passes_the_monte_carlo_test_at_v32k():
    res = lossless_test(_mc_pair(), _online(1.0, size=(2, 2, 4)), samples=MC_N, alpha=DEFAULT_ALPHA, seed=MC_SEED)
    assert res.lossless, res.p_value


def test_the_peeking_chain_fails_the_same_monte_carlo_test():
    res = lossless_test(_mc_pair(), peeking_chain(2), samples=MC_N, alpha=DEFAULT_ALPHA, seed=MC_SEED)
    assert not res.lossless, res.p_value


def test_explore_zero_is_greedy_and_explore_scales_the_draws():
    """explore = 0: the choice is the best pseudo-pulled mean whatever the policy's seed (its draws
    have no weight); explore = 1 is the rule as before; between, the same draws count less."""
    greedy, base = _online(1.0, "rheo-online:explore=0"), _online(1.0)
    assert _online(1.0, "rheo-online:explore=1").run_key() == base.run_key()
    for spec in ("thompson", "ucb1"):
        g = _online(1.0, f"rheo-online:rule={spec}:explore=0")
        runs = []
        for seed in range(4):
            p = g.policy(seed)
            for n in (3, 1, 2, 3, 1, 1, 3):
                p = p.after(p.choose(), (0,) * n)
            runs.append(p.pulls)
            means = [(s[1] + 1) / (s[0] + 1) for s in p.stats]
            assert p.index() == max(range(len(means)), key=lambda i: (means[i], -i))
        assert len(set(runs)) == 1, runs
    p1, p0 = base.policy(5), greedy.policy(5)
    for n in (2, 1, 3):
        p1, p0 = p1.after(p1.choose(), (0,) * n), p0.after(p1.choose(), (0,) * n)
    half = _online(1.0, "rheo-online:explore=0.5").policy(5)
    for n, m in zip((2, 1, 3), p1.pulls):
        half = half.after(half.arms[m], (0,) * n)
    assert p1.stats == p0.stats == half.stats
    assert half.scores() == pytest.approx(p0.scores() + 0.5 * (p1.scores() - p0.scores()))


@pytest.mark.parametrize("temperature", (0.5, 1.0))
def test_a_less_exploring_policy_certifies_exactly_lossless(temperature):
    """explore changes which arm a step runs, never what the step sees: two steps certify exactly."""
    method = _online(temperature, "rheo-online:explore=0.3")
    for seed in POLICY_SEEDS:
        cert = certify_steps(GeneratedPair(3, 5, INSTANCE_SEEDS[0], exact=True), method, steps=2, seed=seed)
        assert cert.lossless and cert.max_deviation == 0, seed


def test_explore_t0_sets_the_scale_at_t0_alone():
    """explore_t0 is the scale at T = 0 and nothing else: at T > 0 the policy is rheo-online's own
    (the same choices step by step), at T = 0 it is explore's at that value; unset, it follows explore."""
    spec = "rheo-online:explore_t0=0.3"
    assert _online(0.0, spec).exploration() == 0.3 and _online(0.5, spec).exploration() == 1.0
    assert _online(0.0, "rheo-online:explore=0.5").exploration() == 0.5
    for t, same in ((1.0, "rheo-online"), (0.0, "rheo-online:explore=0.3")):
        a, b = _online(t, spec).policy(4), _online(t, same).policy(4)
        for n in (3, 1, 2, 3, 1, 2, 2, 3):
            assert a.index() == b.index()
            a, b = a.after(a.choose(), (0,) * n), b.after(b.choose(), (0,) * n)
    with pytest.raises(RheoError, match="explore must be"):
        resolve("rheo-online:explore_t0=-1", size=SIZE)
