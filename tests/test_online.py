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
    ("rheo-online:feedback=all", "feedback"),
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


# -- feedback=greedy: every arm observed at every T = 0 step ----------------------------------------

GREEDY = "rheo-online:feedback=greedy"


@pytest.mark.parametrize("mismatch", (0.7, 2.0))
def test_a_tree_arms_t0_step_accepts_the_longest_greedy_path_of_its_tree(mismatch):
    """What feedback=greedy rests on: at T = 0 every default arm's step (its own verifier) accepts
    exactly the longest path of its tree that the target's argmax chain follows, and emits that
    chain. V = 32k, 12 fresh contexts per arm, tree draws and step draws from separate generators."""
    import numpy as np

    from rheotheory.methods.online import greedy_accepted, greedy_text
    from rheotheory.montecarlo import CONTEXT_LENGTH, sample_step
    from rheotheory.trees import RandomChooser

    pair = SyntheticPair(32_000, seed=1, mismatch=mismatch, temperature=0.0, draft_top_k=128)
    method = _online(0.0, size=(4, 4, 16))
    ctx_rng, checked = np.random.default_rng(7), 0
    for s in range(12):
        step_pair = pair.at(tuple(int(x) for x in ctx_rng.integers(0, pair.vocab_size, size=CONTEXT_LENGTH)))
        greedy = greedy_text(step_pair, method.depth + 1)  # the bonus token's too
        for arm in method.arm_methods():
            chooser = RandomChooser(np.random.default_rng([s, 1]))
            tree = arm.builder(step_pair)(chooser)
            kept = [i for i in range(1, len(tree.nodes)) if tree.kept[i]]
            for i in kept:
                tree.resolve(i, chooser)
            accepted = greedy_accepted(frozenset(tree.path(i) for i in kept), greedy[:-1])
            z = sample_step(step_pair, arm, np.random.default_rng([s, 2]), build=lambda _c, t=tree: t).z
            assert len(z) - 1 == accepted and z == greedy[:len(z)], (s, arm.family)
            checked += accepted > 0
    assert checked >= 12  # the trees do follow the greedy text (not a vacuous 0 == 0)


def test_greedy_accepted_and_the_pending_scores():
    from rheotheory.decode.engine import _score_pending
    from rheotheory.methods.online import greedy_accepted

    paths = frozenset({(1,), (2,), (1, 5), (1, 5, 7)})
    assert [greedy_accepted(paths, g) for g in ((3, 1), (1, 4), (1, 5, 7), (1, 5, 7, 9), ())] == [0, 1, 3, 3, 0]
    policy = _online(0.0, GREEDY, size=(2, 3, 4)).policy(0)
    # arm 1's tree at position 0 is scored once the text leaves it (1, 5, then 5: two accepted);
    # arm 2's at position 2 waits while the known text (5) is still on one of its paths
    text = [1, 5, 5]
    got, left = _score_pending(policy, [(0, 1, paths), (2, 2, frozenset({(5,), (5, 6)}))], text, 3)
    assert got.stats[1] == (1, 2 / 3, 4 / 9) and got.stats[2] == (0, 0.0, 0.0) and got.step == policy.step
    assert [a for _, a, _ in left] == [2]
    got, left = _score_pending(got, left, text + [6, 8], 3)
    assert got.stats[2] == (1, 2 / 3, 4 / 9) and not left


def test_greedy_feedback_observes_every_arm_at_t0_and_nothing_more_above():
    pair = SyntheticPair(1000, seed=0, temperature=0.0)
    method = _online(0.0, GREEDY, size=(3, 3, 8))
    policy = method.policy(1)
    assert policy.counterfactual and len(policy.arms) == 3
    # every arm observed: no exploration at T = 0 unless asked for (follow the leader)
    assert method.exploration() == 0 and _online(0.0, GREEDY + ":explore_t0=1").exploration() == 1
    assert _online(1.0, GREEDY).exploration() == 1
    for _ in range(5):
        m = policy.choose()
        policy = policy.next(m, (0, 0), pair)
    assert [s[0] for s in policy.stats] == [5, 5, 5] and policy.step == 5
    # own feedback: only the arm that ran learns
    own = _online(0.0, size=(3, 3, 8)).policy(1)
    own = own.next(own.choose(), (0, 0), pair)
    assert [s[0] for s in own.stats] == [1, 0, 0]
    # T > 0: feedback=greedy is rheo-online's own policy, step for step
    for t in (0.5, 1.0):
        a, b = _online(t, GREEDY, size=(3, 3, 8)), _online(t, size=(3, 3, 8))
        assert not a.policy().counterfactual
        ra, rb = [], []
        run_steps(SyntheticPair(1000, seed=0, temperature=t), a, 40, seed=2, contexts=True, records=ra)
        run_steps(SyntheticPair(1000, seed=0, temperature=t), b, 40, seed=2, contexts=True, records=rb)
        assert [(r.arm, r.z) for r in ra] == [(r.arm, r.z) for r in rb]


def test_greedy_feedback_certifies_exactly_lossless_over_three_steps_at_t0():
    """Exact rationals, a greedy target (logits_pair at T = 0), three steps as one output: deviation
    exactly 0 for every instance and policy seed, and the feedback does change the policy (the
    expected length differs from feedback=own's on some instance, which a certificate of a policy
    that ignored it could not show)."""
    from rheotheory.pairs import logits_pair

    greedy, own = _online(0.0, GREEDY, size=(2, 2, 3)), _online(0.0, size=(2, 2, 3))
    differs = 0
    for inst in (1, 2, 3):
        pair = logits_pair(3, 8, seed=inst, temperature=0.0)
        for seed in POLICY_SEEDS:
            cert = certify_steps(pair, greedy, steps=3, seed=seed)
            assert cert.lossless and cert.max_deviation == 0, (inst, seed)
            differs += cert.tokens_per_step != certify_steps(pair, own, steps=3, seed=seed).tokens_per_step
    assert differs >= 1


def test_greedy_feedback_decodes_the_greedy_text_and_learns_every_arm():
    """The decoder: rheo-online:feedback=greedy at T = 0 emits the target's greedy text token for
    token, and its policy has seen every arm at nearly every step (the last steps' trees stay pending)."""
    import torch

    from rheotheory.decode.backends.builtin import load_builtin_pair
    from rheotheory.decode.engine import AUTOREGRESSIVE, DecodeConfig, decode

    torch.set_num_threads(1)
    pair = load_builtin_pair("cpu", dtype=torch.float64)
    cfg, prompt = DecodeConfig(temperature=0.0, max_new_tokens=48), pair.encode("def fib(")
    ref = decode(pair.target, pair.draft, prompt, AUTOREGRESSIVE, cfg, torch.Generator().manual_seed(0))
    res = decode(pair.target, pair.draft, prompt, resolve(GREEDY, size=(2, 4, 8)), cfg,
                 torch.Generator().manual_seed(1))
    assert res.tokens == ref.tokens
    steps, seen = len(res.steps), [s[0] for s in res.policy.stats]
    assert all(steps - 3 <= n <= steps for n in seen), (steps, seen)


def test_the_decoder_scores_a_tree_where_its_step_accepted(monkeypatch):
    """The decoder's delayed scoring, checked against the steps themselves: with every arm scored at
    every step (the arm that ran included), EAGLE's tree (deterministic at T = 0, so the scored tree
    is the step's own) scores exactly what each step that ran it accepted; an off-by-one in the text
    offsets or a tree drafted at the wrong prefix would not."""
    import dataclasses

    import torch

    from rheotheory.decode import engine
    from rheotheory.decode.backends.builtin import load_builtin_pair
    from rheotheory.methods.online import OnlinePolicy, greedy_accepted

    @dataclasses.dataclass(frozen=True)
    class ScoreAll(OnlinePolicy):
        def others(self, method):
            return tuple(range(len(self.arms)))

    scored = {}
    real = engine._score_pending

    def spy(policy, pending, text, depth):
        for start, arm, paths in pending:
            greedy = text[start:start + depth]
            k = greedy_accepted(paths, greedy)
            if k < len(greedy) or len(greedy) == depth:
                scored[(start, arm)] = k
        return real(policy, pending, text, depth)

    monkeypatch.setattr(engine, "_score_pending", spy)
    torch.set_num_threads(1)
    pair = load_builtin_pair("cpu", dtype=torch.float64)
    method = resolve(GREEDY + ":arms=eagle,static-wor", size=(2, 4, 8)).at_temperature(0.0)
    base = method.policy(3)
    policy = ScoreAll(**{f.name: getattr(base, f.name) for f in dataclasses.fields(base)})
    for text in ("def fib(", "import "):
        prompt = pair.encode(text)
        cfg = engine.DecodeConfig(temperature=0.0, max_new_tokens=60)
        res = engine.decode(pair.target, pair.draft, prompt, method, cfg, torch.Generator().manual_seed(1), policy=policy)
        start, checked = 0, 0
        for step in res.steps:
            if step.arm == 0 and (start, 0) in scored:
                assert scored[(start, 0)] == step.accepted, (text, start)
                checked += 1
            start += step.accepted + 1
        assert checked >= 5, (text, checked)
        scored.clear()
        policy = res.policy
