"""The decoder's verifiers are the exact core's rules evaluated on float64 numpy laws (as the engine
calls them: its torch logits become numpy laws first): same transition laws as in exact rationals."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from rheotheory import laws  # noqa: E402
from rheotheory.testing import det_plus_sample, iid_candidates, law_pairs, wor_candidates  # noqa: E402
from rheotheory.verify import VERIFIERS, Candidate  # noqa: E402

#: float64 round-off allowed between exact rationals and numpy float64 on laws of at most 5 tokens
#: (a few dozen operations each).
AGREE_TOL = 1e-12


def _as(kind, a):
    """Convert an exact law to the requested number type."""
    return a if kind == "exact" else laws.to_float(a)


def _run(rule, p, cands, kind):
    """Transition of ``rule`` in one number type, returned as float arrays (cont, emit)."""
    memo = {}

    def conv(law):
        if law is None:
            return None
        if id(law) not in memo:
            memo[id(law)] = (law, _as(kind, law))
        return memo[id(law)][1]

    tr = rule(_as(kind, p), [Candidate(c.token, conv(c.law)) for c in cands])
    cont = np.array([float(x) for x in tr.cont], dtype=np.float64)
    emit = np.array([float(x) for x in tr.emit], dtype=np.float64)
    if kind == "numpy":
        assert isinstance(tr.emit, np.ndarray) and tr.emit.dtype == np.float64, "the float path must stay float64 numpy"
    return cont, emit


def _assert_same(rule, p, cands):
    ref_c, ref_e = _run(rule, p, cands, "exact")
    c, e = _run(rule, p, cands, "numpy")
    dev = max(np.abs(c - ref_c).max(initial=0.0), np.abs(e - ref_e).max())
    assert dev <= AGREE_TOL, f"{rule.__name__} in float64: deviation {dev:.3g} from exact; cont {c} vs {ref_c}"
    assert abs(c.sum() + e.sum() - 1) <= AGREE_TOL


@given(st.data())
def test_det_plus_sample_rules_agree(data):
    p, q = data.draw(law_pairs(max_vocab=5, allow_zeros=True))
    det, tail = data.draw(det_plus_sample(p, q))
    outcomes = [[Candidate(t) for t in det] + [Candidate(x, tail)] for x, w in enumerate(tail) if w > 0]
    for cands in outcomes[:3]:
        for name in ("onehot", "sequential", "ot"):
            _assert_same(VERIFIERS[name], p, cands)


@given(st.data())
def test_sampled_sibling_rules_agree(data):
    p, q = data.draw(law_pairs(max_vocab=4, allow_zeros=True))
    k = data.draw(st.integers(1, 3))
    for _, cands in list(iid_candidates(q, k))[:4]:
        for name in ("rrs", "kseq"):
            _assert_same(VERIFIERS[name], p, cands)
    for _, cands in list(wor_candidates(q, k))[:4]:
        _assert_same(VERIFIERS["rrs-wor"], p, cands)
