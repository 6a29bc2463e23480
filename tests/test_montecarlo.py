"""The Monte-Carlo sampler against the exact enumerator, reproducibility, per-node optimum, errors.

Statistical checks state their level, seed and sample size; each has a companion that a wrong
answer must fail.
"""

import math

import numpy as np
import pytest
from scipy import stats as sps

from rheotheory import make_method, certify, random_pair
from rheotheory.errors import RheoError
from rheotheory.montecarlo import node_optimum, run_steps, sample_outputs
from rheotheory.stats import chi_square_law
from rheotheory.synthetic import SyntheticPair
from rheotheory.verify import Candidate, ot_value

#: Level of the agreement tests (two-sided); a test that must reject uses the same level.
ALPHA = 1e-3
SAMPLES = 2500
SEED = 11

PAIR = random_pair(4, 3, seed=3, mismatch=0.6)
METHODS = [
    make_method("eagle", top_k=2, depth=3, budget=5),
    make_method("rheo", top_k=3, depth=3, budget=6),
    make_method("rheo", top_k=3, depth=2, budget=5, head=1, proxy="tail", verifier="sequential"),
    make_method("rheo", top_k=2, depth=2, budget=4, proxy="true", verifier="sequential"),  # lossy: MC must still match
    make_method("static", shape=[[0], [1], [0, 0]], verifier="rrs"),
    make_method("static", shape=[[0], [1], [0, 0]], verifier="rrs-wor", sampling="wor"),
    make_method("chain", depth=3, verifier="kseq"),
]


@pytest.mark.parametrize("method", METHODS, ids=lambda m: m.describe())
def test_mc_step_law_matches_exact(method):
    # Monte-Carlo draws of Z vs the exact step law of the enumerator: alpha 1e-3, 2500 samples, seed 11
    cert = certify(PAIR, method)
    recs = []
    res = run_steps(PAIR, method, SAMPLES, seed=SEED, records=recs)
    outs = [r.z for r in recs]
    assert outs[:50] == sample_outputs(PAIR, method, 50, seed=SEED)  # one stream per seed
    chi = chi_square_law(outs, cert.z_law)  # the package's one rule: rare cells pooled, reject iff p < alpha
    assert not chi.rejects(ALPHA), chi.report(ALPHA)
    # tau: the exact value lies in the 99.9% interval of the MC mean
    se = (res.tau_high - res.tau) / 1.959963984540054
    assert abs(res.tau - float(cert.tokens_per_step)) <= sps.norm.isf(ALPHA / 2) * se


def test_mc_rejects_a_different_method_law():
    # the companion: samples of eagle tested against rheo's exact law must be rejected
    eagle, rheo = METHODS[0], METHODS[1]
    outs = sample_outputs(PAIR, eagle, SAMPLES, seed=SEED)
    res = chi_square_law(outs, certify(PAIR, rheo).z_law)
    assert res.rejects(ALPHA), res.report(ALPHA)


def test_seeds_reproduce_results():
    m = METHODS[1]
    a = sample_outputs(PAIR, m, 300, seed=4)
    assert a == sample_outputs(PAIR, m, 300, seed=4)
    assert a != sample_outputs(PAIR, m, 300, seed=5)
    pair = SyntheticPair(1000, seed=1)
    r1 = run_steps(pair, make_method("rheo", top_k=4, depth=3, budget=10), 30, seed=2, contexts=True)
    r2 = run_steps(pair, make_method("rheo", top_k=4, depth=3, budget=10), 30, seed=2, contexts=True)
    assert (r1.tau, r1.node_accept) == (r2.tau, r2.node_accept)


def test_same_seed_same_contexts_across_methods():
    # common random numbers: the deterministic EAGLE tree gives identical steps for one seed
    pair = SyntheticPair(500, seed=0, temperature=0.0)
    recs = [[], []]
    for r in recs:
        run_steps(pair, make_method("eagle", top_k=3, depth=3, budget=8), 20, seed=3, contexts=True, records=r)
    assert [x.z for x in recs[0]] == [x.z for x in recs[1]]


def test_node_optimum_known_values():
    p = np.array([0.5, 0.3, 0.2])
    tail = np.array([0.0, 0.5, 0.5])
    assert node_optimum(p, [Candidate(0), Candidate(1)]) == pytest.approx(0.8, abs=1e-15)
    assert node_optimum(p, [Candidate(0), Candidate(2, tail)]) == pytest.approx(ot_value(p, [0], tail), abs=1e-15)
    assert node_optimum(p, [Candidate(0), Candidate(2, tail)]) == pytest.approx(1.0, abs=1e-15)
    q = np.array([0.2, 0.2, 0.6])
    two = node_optimum(p, [Candidate(0, q), Candidate(2, q)])  # 2 i.i.d. draws: min(p, 1 - (1-q)^2)
    assert two == pytest.approx(0.36 + 0.3 + 0.2, abs=1e-12)
    wor = node_optimum(p, [Candidate(0, q), Candidate(2, np.array([0.0, 0.25, 0.75]))])
    assert math.isnan(wor)


def test_mc_on_synthetic_pair_tracks_acceptance():
    # per-node acceptance never exceeds 1, and the OT verifier's mean acceptance is at most the mean
    # per-node optimum plus noise (0.02 at 200 steps, seed 0)
    pair = SyntheticPair(1000, seed=0)
    res = run_steps(pair, make_method("rheo", top_k=4, depth=4, budget=16, head=1), 200, seed=0, contexts=True,
                    optimum=True)
    assert 0 < res.node_accept <= 1 and 0 < res.node_opt <= 1
    assert res.node_accept <= res.node_opt + 0.02
    assert 1 <= res.tau_low <= res.tau <= res.tau_high <= 5
    assert res.steps_per_second > 0


@pytest.mark.parametrize("kwargs,match", [
    (dict(steps=0), "steps"),
    (dict(steps=10, seed=-1), "seed"),
    (dict(steps=2.5), "steps"),
])
def test_bad_run_arguments(kwargs, match):
    with pytest.raises(RheoError, match=match):
        run_steps(PAIR, METHODS[0], **kwargs)


def test_contexts_need_a_synthetic_pair():
    with pytest.raises(RheoError, match="synthetic"):
        run_steps(PAIR, METHODS[0], 5, contexts=True)


def test_draw_seed_keeps_the_contexts_and_changes_only_the_draws():
    """run_steps(draw_seed=...) is a second run at the same contexts: a greedy EAGLE tree (its step a
    function of the context) gives the same lengths, a sampled tree at T = 1 other ones; the default
    is the seed itself; a bad draw_seed is refused."""
    from rheotheory.methods import resolve
    from rheotheory.synthetic import SyntheticPair

    def run(T, spec, **kw):
        recs = []
        run_steps(SyntheticPair(64, seed=1, temperature=T), resolve(spec, size=(2, 3, 6)), 60, seed=5,
                  contexts=True, records=recs, **kw)
        return [len(r.z) for r in recs]

    assert run(0.0, "eagle", draw_seed=9) == run(0.0, "eagle")
    assert run(1.0, "static-wor", draw_seed=9) != run(1.0, "static-wor")
    assert run(1.0, "static-wor", draw_seed=5) == run(1.0, "static-wor")
    with pytest.raises(RheoError, match="draw_seed"):
        run(1.0, "static-wor", draw_seed=-1)
