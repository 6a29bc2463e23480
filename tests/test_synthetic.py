"""Synthetic LM pairs: valid laws, seeds, exact greedy at T = 0, the sparse draft, no tabulation."""

from fractions import Fraction as F

import numpy as np
import pytest

from rheotheory import laws
from rheotheory.errors import InstanceError
from rheotheory.synthetic import MISMATCH_LEVELS, SyntheticPair, single_draft_acceptance

PREFIXES = [(), (0,), (3, 1), (7, 7, 2)]


@pytest.mark.parametrize("V,k", [(50, None), (1000, 128), (32000, 128)])
def test_laws_are_valid_and_reproducible(V, k):
    a = SyntheticPair(V, seed=5, draft_top_k=k)
    b = SyntheticPair(V, seed=5, draft_top_k=k)
    for u in PREFIXES:
        for law in (a.p(u), a.q(u)):
            laws.check_law(law, vocab_size=V)
        assert np.array_equal(a.p(u), b.p(u)) and np.array_equal(a.q(u), b.q(u))
    other = SyntheticPair(V, seed=6, draft_top_k=k)
    assert not np.array_equal(a.p((3, 1)), other.p((3, 1)))
    assert not np.array_equal(a.p((3, 1)), a.p((3, 2)))  # the context matters


def test_greedy_target_is_exact_argmax():
    warm = SyntheticPair(1000, seed=2, temperature=1.0)
    cold = SyntheticPair(1000, seed=2, temperature=0.0)
    for u in PREFIXES:
        p0 = cold.p(u)
        assert p0.max() == 1.0 and np.count_nonzero(p0) == 1
        assert int(np.argmax(p0)) == int(np.argmax(warm.p(u)))  # softmax keeps the arg-max


def test_greedy_ties_go_to_the_smaller_id():
    from rheotheory.synthetic import _softmax

    p = _softmax(np.array([0.0, 2.0, 1.0, 2.0]), 0.0)
    assert p.tolist() == [0.0, 1.0, 0.0, 0.0]


def test_sparse_draft_is_the_top_k_renormalised():
    k = 128
    dense = SyntheticPair(5000, seed=3, draft_top_k=None)
    sparse = SyntheticPair(5000, seed=3, draft_top_k=k)
    for u in PREFIXES:
        qd, qs = dense.q(u), sparse.q(u)
        support = np.flatnonzero(qs)
        assert support.size == k
        top = laws.rank(qd, limit=k)
        assert sorted(top) == support.tolist()
        np.testing.assert_allclose(qs[support], qd[support] / qd[support].sum(), rtol=1e-6, atol=0)
        assert np.array_equal(dense.p(u), sparse.p(u))  # the target is untouched


def test_top_k_mask_breaks_ties_by_id():
    from rheotheory.synthetic import _top_k_mask

    x = np.array([1.0, 3.0, 2.0, 3.0, 2.0, 2.0])
    assert np.flatnonzero(_top_k_mask(x, 3)).tolist() == [1, 2, 3]
    assert np.array_equal(_top_k_mask(x, 4), laws.top_k_mask(x, 4))


def test_draft_temperature_is_optional():
    plain = [SyntheticPair(300, seed=1, temperature=t) for t in (0.5, 1.5)]
    assert np.array_equal(plain[0].q((4,)), plain[1].q((4,)))  # EAGLE: draft untempered
    tempered = SyntheticPair(300, seed=1, temperature=0.5, temper_draft=True)
    assert not np.array_equal(tempered.q((4,)), plain[0].q((4,)))
    greedy = SyntheticPair(300, seed=1, temperature=0.0, temper_draft=True)
    assert np.count_nonzero(greedy.q((4,))) == 1


def test_zero_mismatch_draft_equals_target():
    pair = SyntheticPair(400, seed=4, mismatch=0.0, draft_top_k=None)
    for u in PREFIXES:
        assert np.array_equal(pair.p(u), pair.q(u))


def test_mismatch_levels_span_realistic_acceptance():
    # single-draft acceptance 1 - TV(p, q) at T = 1 over 60 random contexts (seed 0)
    acc = {name: single_draft_acceptance(SyntheticPair(1000, seed=0, mismatch=v), contexts=60)
           for name, v in MISMATCH_LEVELS.items()}
    assert 0.75 <= acc["low"] <= 0.95
    assert 0.4 <= acc["high"] <= 0.7


def test_context_view_and_bounded_cache():
    pair = SyntheticPair(2000, seed=9, cache_size=8)
    assert np.array_equal(pair.at((3, 1)).p((2,)), pair.p((3, 1, 2)))
    for t in range(50):
        pair.q((t,))
    assert len(pair._state["cache"]) == 8  # laws are cached per prefix, never tabulated


@pytest.mark.parametrize("kwargs,match", [
    (dict(vocab_size=1), "vocab_size"),
    (dict(vocab_size=10, temperature=-1.0), "temperature"),
    (dict(vocab_size=10, temperature=float("nan")), "temperature"),
    (dict(vocab_size=10, draft_top_k=0), "draft_top_k"),
    (dict(vocab_size=10, mismatch=-0.5), "mismatch"),
    (dict(vocab_size=10, seed=-1), "seed"),
])
def test_bad_arguments_raise_clear_errors(kwargs, match):
    with pytest.raises(InstanceError, match=match):
        SyntheticPair(**kwargs)


def test_token_outside_vocabulary_is_rejected():
    with pytest.raises(InstanceError, match="outside the vocabulary"):
        SyntheticPair(10, seed=0).p((10,))


def test_float_rank_matches_exact_rank():
    # the vectorised float path of laws.rank against the exact path, ties and exclusions included
    rng = np.random.default_rng(0)
    for trial in range(300):
        # small vocabularies take the sorting path, large ones (> laws.SMALL_VOCAB) the partition
        V = int(rng.integers(1, 25)) if trial % 3 else int(rng.integers(laws.SMALL_VOCAB + 1, 700))
        w = rng.integers(0, 4, size=V)
        if w.sum() == 0:
            w[0] = 1
        exact = np.array([F(int(x), int(w.sum())) for x in w], dtype=object)
        excl = rng.choice(V, size=int(rng.integers(0, 3))).tolist()
        limit = None if trial % 2 else int(rng.integers(1, 8))
        want = laws.rank(exact, excl)
        want = want if limit is None else want[:limit]
        assert laws.rank(w / w.sum(), excl, limit=limit) == want
