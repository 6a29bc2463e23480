"""Adaptive RheoSampling (docs/theory.md section 2.7): exact losslessness and its negative controls."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from rheotheory import certify, laws, make_method, random_pair
from rheotheory.errors import TreeError
from rheotheory.methods import resolve
from rheotheory.trees import RandomChooser
from rheotheory.trees.adaptive import AdaptiveConfig, head_size, predicted_acceptances
from rheotheory.verify import Candidate, acceptance, optimum_sets, ot, output_law, set_law_wor
from rheotheory.verify.rules import ot_wor


def _wor_sets(L, k):
    """Every ordered draw of k tokens without replacement from L: (tokens, member laws, prob)."""
    out = []

    def rec(prefix, laws_, w):
        if len(prefix) == k:
            out.append((tuple(prefix), tuple(laws_), w))
            return
        cur = laws.restrict(L, prefix) if prefix else L
        for x in range(len(L)):
            if cur[x] > 0:
                rec(prefix + [x], laws_ + [cur], w * cur[x])

    rec([], [], laws.parse_number(1, True))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_ot_wor_is_lossless_per_node_and_equals_ot_with_one_sample(seed):
    rng = np.random.default_rng(seed)
    V = 5
    p = laws.exact_law([str(x) for x in rng.integers(0, 4, V) + (np.arange(V) == 0)])
    p = laws.normalise(p)
    q = laws.normalise(laws.exact_law([str(x) for x in rng.integers(1, 5, V)]))
    head = [int(t) for t in laws.rank(q)[:1]]
    L = laws.restrict(q, head)  # the tail law, # [vocab]
    for k in (1, 2, 3):
        mix = p * 0
        acc = 0
        for toks, member, w in _wor_sets(L, k):
            cands = [Candidate(t) for t in head] + [Candidate(x, law=lw) for x, lw in zip(toks, member)]
            tr = ot_wor(p, cands)
            assert tr.total() == 1
            mix = mix + w * output_law(tr, cands)
            acc += w * acceptance(tr)
            if k == 1:
                ref = ot(p, cands)
                assert list(tr.cont) == list(ref.cont) and list(tr.emit) == list(ref.emit)
        assert list(mix) == list(p)  # exactly the target law
        # never above the per-node optimum for the candidate-set law H + WOR(L, k)
        sets = {frozenset(head) | S: w for S, w in set_law_wor(L, k).items()}
        assert acc <= optimum_sets(p, sets)


def test_head_rule_reads_the_draft_only():
    q = laws.exact_law(["1/2", "3/10", "1/5"])
    assert head_size(q, [0, 1, 2], AdaptiveConfig(3, 2, 4, temperature=1.0)) == 0
    assert head_size(q, [0, 1, 2], AdaptiveConfig(3, 2, 4, temperature=0.25)) == 1
    # p-hat = q: one sampled slot accepts 1 whatever the head (the degenerate p = q prediction)
    assert np.allclose(predicted_acceptances(q, laws.to_float(q), [0, 1, 2], 3), 1.0)


@pytest.mark.parametrize("t_hat,V,K,D", [("0.5", 3, 2, 2), ("0.5", 4, 3, 2), ("0.5", 4, 3, 3), ("1", 3, 3, 2),
                                          ("1", 4, 2, 3), ("0.3", 5, 4, 2)])
def test_rheo_adaptive_is_exactly_lossless(t_hat, V, K, D):
    method = resolve("rheo-adaptive", top_k=K, depth=D, budget=2 * K, t_hat=t_hat)
    for seed in range(6):
        cert = certify(random_pair(V, D, seed=seed), method)
        assert cert.max_deviation == 0, (method.describe(), seed, cert.max_deviation)


def test_true_proxy_is_caught():
    method = make_method("adaptive", top_k=2, depth=2, budget=4, head="threshold", proxy="true")
    assert method.known_lossy()
    devs = [certify(random_pair(3, 2, seed=s), method).max_deviation for s in range(10)]
    assert max(devs) > 0


def test_head_checked_first_is_caught():
    """The same trees verified by `sequential` (head first): a sample's subtree pushes a head
    sibling out of the budget for some values of the sample (docs/theory.md section 8)."""
    method = make_method("adaptive", top_k=4, depth=3, budget=8, head="threshold", proxy="tail",
                         verifier="sequential")
    devs = [certify(random_pair(5, 3, seed=s), method).max_deviation for s in range(4)]
    assert max(devs) > 0
    fixed = method.fit(verifier="ot-wor")
    assert all(certify(random_pair(5, 3, seed=s), fixed).max_deviation == 0 for s in range(4))


def test_preset_resolves_per_temperature():
    """The temperature bands of docs/theory.md section 2.7, each at the preset's node budget."""
    m = resolve("rheo-adaptive", size=(4, 4, 16))
    assert m.at_temperature(0).family == "eagle" and m.at_temperature(0.25).family == "eagle"
    assert m.at_temperature(0.5) == m.at_temperature(0.75) == resolve("rheo-tuned", size=(4, 4, 16))
    for T in (1.0, 1.5):
        run = m.at_temperature(T)
        assert (run.family, run.head, run.proxy, run.verifier, run.t_hat) == \
            ("adaptive", 0, "tail", "traversal", format(T, "g"))
    assert all(m.at_temperature(T).nodes == 16 for T in (0, 0.25, 0.5, 1))
    own = m.fit(eagle_below="off", below="same", sampled_from="off")  # the family's head rule at every T > 0
    assert own.at_temperature(0.25).t_hat == "0.25" and own.at_temperature(1.5).verifier == "ot-wor"


@pytest.mark.parametrize("V,K,D", [(3, 2, 2), (3, 2, 3), (4, 3, 2), (3, 3, 3), (5, 2, 3), (4, 4, 2)])
def test_all_sampled_trees_with_traversal_are_exactly_lossless(V, K, D):
    """What rheo-adaptive runs for T >= sampled_from: head 0 and Traversal Verification."""
    method = resolve("rheo-adaptive", size=(K, D, 2 * K)).at_temperature(1.0)
    assert method.verifier == "traversal" and method.head == 0
    for seed in range(6):
        cert = certify(random_pair(V, D, seed=seed), method)
        assert cert.max_deviation == 0, (method.describe(), seed, cert.max_deviation)


def test_traversal_with_a_head_is_caught():
    """Traversal Verification on a tree with deterministic children is lossy even when it visits
    the samples first (``traversal-ot``): exact deviation 13/918 on this instance, where ot-wor
    is exactly lossless. Plain ``traversal`` is refused with a head."""
    pair = random_pair(3, 3, seed=49)
    method = make_method("adaptive", top_k=3, depth=3, budget=6, head=1, proxy="tail", verifier="traversal-ot")
    assert method.known_lossy()
    assert certify(pair, method).max_deviation == laws.parse_number("13/918", True)
    assert certify(pair, method.fit(verifier="ot-wor")).max_deviation == 0
    with pytest.raises(TreeError, match="head 0 only"):
        make_method("adaptive", top_k=3, depth=3, budget=6, head=1, proxy="tail", verifier="traversal")
    with pytest.raises(TreeError, match="tail proxy"):  # the predicted proxy's shape reads the tokens
        make_method("adaptive", top_k=3, depth=3, budget=6, head=0, proxy="predicted", verifier="traversal")


def test_trees_respect_the_budget_and_group_prefixes():
    from rheotheory.synthetic import SyntheticPair

    pair = SyntheticPair(200, seed=0, mismatch=0.7, temperature=0.7, draft_top_k=32)
    method = resolve("rheo-adaptive", size=(4, 3, 10), below="same").at_temperature(0.7)
    assert method.family == "adaptive"
    for seed, ctx in itertools.product(range(3), [(1, 2), (5,)]):
        tree = method.builder(pair.at(ctx))(RandomChooser(np.random.default_rng(seed)))
        assert tree.num_kept() <= 10
        for node in tree.nodes:  # the kept members of a sample group are its first members
            if node.group is not None:
                kept = [tree.kept[j] for j in node.group.members]
                assert kept == sorted(kept, reverse=True)
