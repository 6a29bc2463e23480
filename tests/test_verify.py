"""Per-node verifiers: exact losslessness, closed-form acceptances, and the OT optimum."""

from fractions import Fraction as F

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rheotheory import laws
from rheotheory.errors import VerifierError
from rheotheory.testing import det_plus_sample, exact_laws, iid_candidates, law_pairs, wor_candidates
from rheotheory.verify import (
    Candidate,
    acceptance,
    kseq,
    kseq_rho,
    onehot,
    optimum_linprog,
    optimum_pot,
    optimum_sets,
    ot,
    ot_value,
    output_law,
    sequential,
    set_law_det_plus_sample,
    set_law_iid,
    set_law_wor,
)


def law(*xs):
    return np.array([F(x) for x in xs], dtype=object)


def averaged(rule, p, outcomes):
    """Output law and acceptance of ``rule`` averaged over (weight, candidates) outcomes."""
    out = p * 0
    acc = F(0)
    total_w = F(0)
    for w, cands in outcomes:
        tr = rule(p, cands)
        assert tr.total() == 1, "transition law must sum to exactly 1"
        assert all(c >= 0 for c in tr.cont) and all(e >= 0 for e in tr.emit)
        out = out + w * output_law(tr, cands)
        acc += w * acceptance(tr)
        total_w += w
    assert total_w == 1
    return out, acc


def det_sample_outcomes(det, tail):
    base = [Candidate(t) for t in det]
    outs = [(w, base + [Candidate(x, tail)]) for x, w in enumerate(tail) if w > 0]
    return outs or [(F(1), base)]


# -- losslessness at one node, exact --------------------------------------------------------------

@given(st.data())
def test_onehot_lossless_for_any_fixed_set(data):
    p = data.draw(exact_laws())
    tokens = data.draw(st.lists(st.integers(0, len(p) - 1), max_size=4))
    out, acc = averaged(onehot, p, [(F(1), [Candidate(t) for t in tokens])])
    assert list(out) == list(p)
    assert acc == sum(p[t] for t in set(tokens))


@given(law_pairs(), st.data())
@pytest.mark.parametrize("rule", [sequential, ot], ids=["sequential", "ot"])
def test_det_plus_sample_lossless(rule, pq, data):
    p, q = pq
    det, tail = data.draw(det_plus_sample(p, q))
    out, acc = averaged(rule, p, det_sample_outcomes(det, tail))
    assert list(out) == list(p)


@given(law_pairs(max_vocab=4), st.integers(1, 3))
def test_rrs_lossless_and_product_formula(pq, k):
    p, q = pq
    out, acc = averaged(sequential, p, iid_candidates(q, k))
    assert list(out) == list(p)
    # SpecInfer's closed form: 1 - prod_i (1 - sum_x min(p_{i-1}(x), q(x))), p_i = norm((p_{i-1} - q)+)
    cur, fail = p, F(1)
    for _ in range(k):
        fail *= 1 - laws.total(laws.minimum(cur, q))
        cur = laws.residual(cur, q)
    assert acc == 1 - fail


@given(law_pairs(max_vocab=4), st.integers(1, 3))
def test_rrs_wor_lossless(pq, k):
    p, q = pq
    out, _ = averaged(sequential, p, wor_candidates(q, k))
    assert list(out) == list(p)


@given(law_pairs(max_vocab=4), st.integers(1, 3))
def test_kseq_lossless_and_acceptance(pq, k):
    p, q = pq
    out, acc = averaged(kseq, p, iid_candidates(q, k))
    assert list(out) == list(p)
    rho = kseq_rho(p, q, k)
    assert 1 <= rho <= k
    beta = laws.total(laws.minimum(q, p / rho))
    assert acc == 1 - (1 - beta) ** k


def test_single_sample_accepts_one_minus_tv():
    p, q = law("1/2", "1/3", "1/6"), law("1/6", "1/2", "1/3")
    out, acc = averaged(sequential, p, iid_candidates(q, 1))
    assert acc == 1 - laws.tv(p, q) == F(2, 3)


def test_one_hot_dilemma_example():
    # docs/theory.md section 1.4: p = q = (1/2, 1/2): one-hot top-1 accepts 1/2, a sampled draft accepts 1.
    p = q = law("1/2", "1/2")
    _, acc_onehot = averaged(onehot, p, [(F(1), [Candidate(0)])])
    _, acc_sampled = averaged(sequential, p, iid_candidates(q, 1))
    assert (acc_onehot, acc_sampled) == (F(1, 2), F(1))


# -- the optimum ------------------------------------------------------------------------------------

@given(law_pairs(max_vocab=4), st.data())
def test_ot_attains_closed_form_and_optimum(pq, data):
    p, q = pq
    det, tail = data.draw(det_plus_sample(p, q))
    _, acc = averaged(ot, p, det_sample_outcomes(det, tail))
    Q = set_law_det_plus_sample(det, tail)
    opt = optimum_sets(p, Q)
    if laws.total(tail) > 0:
        assert acc == ot_value(p, det, tail)
    assert acc == opt
    # the naive order (deterministic first, then the sample) is lossless but never better
    _, acc_seq = averaged(sequential, p, det_sample_outcomes(det, tail))
    assert acc_seq <= opt


@given(law_pairs(max_vocab=4), st.integers(1, 3), st.sampled_from(["iid", "wor"]))
def test_optimum_pot_linprog_sets_agree_and_bound_verifiers(pq, k, mode):
    p, q = pq
    Q = set_law_iid(q, k) if mode == "iid" else set_law_wor(q, k)
    exact = optimum_sets(p, Q)
    assert abs(optimum_pot(p, Q) - float(exact)) <= 1e-9
    assert abs(optimum_linprog(p, Q) - float(exact)) <= 1e-9
    outcomes = list(iid_candidates(q, k) if mode == "iid" else wor_candidates(q, k))
    for rule in ([sequential, kseq] if mode == "iid" else [sequential]):
        _, acc = averaged(rule, p, outcomes)
        assert acc <= exact
    _, acc = averaged(onehot, p, outcomes)
    assert acc <= exact


def test_optimum_known_answers():
    p = law("1/2", "1/2")
    assert optimum_sets(p, {frozenset({0}): F(1)}) == F(1, 2)
    assert optimum_sets(p, {frozenset({0}): F(1, 2), frozenset({1}): F(1, 2)}) == 1
    assert abs(optimum_pot(p, {frozenset({0}): F(1, 2), frozenset({1}): F(1, 2)}) - 1.0) <= 1e-12


# -- float agreement and bad input ---------------------------------------------------------------

@given(law_pairs(max_vocab=5), st.data())
@pytest.mark.parametrize("rule", [sequential, ot, onehot], ids=["sequential", "ot", "onehot"])
def test_float_matches_exact(rule, pq, data):
    p, q = pq
    det, tail = data.draw(det_plus_sample(p, q))
    for _, cands in det_sample_outcomes(det, tail):
        te = rule(p, cands)
        tf = rule(laws.to_float(p), [Candidate(c.token, None if c.law is None else laws.to_float(c.law))
                                     for c in cands])
        assert max(abs(float(a) - b) for a, b in zip(te.cont, tf.cont)) <= 1e-12 if cands else True
        assert np.max(np.abs(laws.to_float(te.emit) - tf.emit)) <= 1e-12


def test_verifier_errors():
    p = law("1/2", "1/2")
    q = law("1", "0")
    with pytest.raises(VerifierError, match="at most one sampled"):
        ot(p, [Candidate(0, q), Candidate(0, q)])
    with pytest.raises(VerifierError, match="zero probability"):
        sequential(p, [Candidate(1, q)])
    with pytest.raises(VerifierError, match="i.i.d."):
        kseq(p, [Candidate(0), Candidate(1, q)])
