"""Killer suite, part 3: the dynamic and adaptive tree builders on hand-made draft laws
(docs/mutation_report.md).

Each test builds one tree (or calls one helper) on a small exact draft law chosen so that the
answer can be worked out by hand: ties that only the creation order breaks, a score that ties
in float but not in rationals, a draft whose support is exactly the head, the three sampled-slot
proxies, the predicted target at T != 1. The certificates of :mod:`killer_pins` cover the
builders on random instances, where no score ties and T = 1.
"""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest

from rheotheory import laws
from rheotheory.trees import NeedChoice, ReplayChooser
from rheotheory.trees.adaptive import (AdaptiveConfig, _proxies, build_adaptive, head_size, predicted_acceptances,
                                       predicted_target)
from rheotheory.trees.dynamic import DynamicConfig, ExpansionCache, _proxy, build_dynamic
from rheotheory.trees.tree import DET, FILLER, SAMPLED


def law(*xs):
    return laws.exact_law([str(x) for x in xs])


class _TablePair:
    """A hand-written exact pair: the draft law by prefix, a default elsewhere (builders read q only)."""

    exact = True

    def __init__(self, q, default=("1/2", "1/4", "1/4")):
        self._q = q
        self._default = law(*default)

    def q(self, prefix):
        return self._q.get(prefix, self._default)


def _nodes(tree):
    """(parent, token, kind, score) of every kept non-root node, in creation order."""
    return [(n.parent, n.token, n.kind, n.score) for i, n in enumerate(tree.nodes) if i and tree.kept[i]]


# -- the dynamic builder --------------------------------------------------------------------------------
def test_eagle_ties_go_to_the_node_created_first():
    """Uniform draft: every score ties, so the creation order alone decides which nodes are
    expanded and kept: the first parent's first child, not the second parent's."""
    pair = _TablePair({}, default=("1/3", "1/3", "1/3"))
    tree = build_dynamic(pair, DynamicConfig(top_k=2, depth=2, budget=3), ReplayChooser([]))
    assert _nodes(tree) == [(0, 0, DET, F(1, 3)), (0, 1, DET, F(1, 3)), (1, 0, DET, F(1, 9))]
    assert all(type(n.score) is F for n in tree.nodes)


def test_exact_scores_break_float_ties_by_their_rational_value():
    """Two draft probabilities equal in float64 but not as rationals: the larger one is kept."""
    big = F(1, 3) + F(1, 10 ** 30)
    assert float(big) == float(F(1, 3))
    q = laws.exact_law([F(1, 3), big, 1 - F(1, 3) - big])
    tree = build_dynamic(_TablePair({(): q}), DynamicConfig(top_k=2, depth=1, budget=1), ReplayChooser([]))
    assert _nodes(tree) == [(0, 1, DET, big)]


def test_rheo_sampled_slot_and_fillers():
    """Head m = 0, K = 3: one sampled slot scored by the tail proxy (mass 1), then two fillers,
    the best-ranked tokens other than the sample; the coarse draw picks token 1 of the block."""
    cfg = DynamicConfig(top_k=3, depth=1, budget=3, sampled=True, head=0, proxy="tail")
    tree = build_dynamic(_TablePair({}), cfg, ReplayChooser([1]))  # no cache given: the builder makes one
    assert _nodes(tree) == [(0, 1, SAMPLED, 1), (0, 0, FILLER, F(1, 2)), (0, 2, FILLER, F(1, 4))]
    assert all(type(n.score) is F for n in tree.nodes)
    # the rest of the block: the sample stays undrawn (its law is the tail outside the block)
    tree = build_dynamic(_TablePair({}), cfg, ReplayChooser([2]))
    assert _nodes(tree) == [(0, None, SAMPLED, 1), (0, 0, FILLER, F(1, 2)), (0, 1, FILLER, F(1, 4))]
    assert list(tree.draw_law(1)) == [0, 0, 1]


def test_rheo_true_proxy_fillers_skip_the_drawn_sample():
    """proxy=true draws the sample at creation; the fillers skip it without a second draw."""
    cfg = DynamicConfig(top_k=3, depth=1, budget=3, sampled=True, head=0, proxy="true")
    tree = build_dynamic(_TablePair({}), cfg, ReplayChooser([1]))
    assert _nodes(tree) == [(0, 1, SAMPLED, F(1, 4)), (0, 0, FILLER, F(1, 2)), (0, 2, FILLER, F(1, 4))]


def test_rheo_without_a_tail_places_no_sampled_slot():
    """A draft whose support is exactly the head leaves nothing to sample."""
    pair = _TablePair({(): law(1, 0, 0)})
    cfg = DynamicConfig(top_k=2, depth=1, budget=2, sampled=True)
    tree = build_dynamic(pair, cfg, ReplayChooser([]))
    assert _nodes(tree) == [(0, 0, DET, 1)]
    cache = ExpansionCache(pair)
    assert cache.expansion_outcomes((), cfg) == 1


def test_proxies_of_the_sampled_slot():
    q = law("7/10", "1/5", "1/10")
    ranked = [0, 1, 2]
    assert _proxy("next", q, ranked, 1, F(3, 10)) == F(1, 5)
    assert _proxy("tail", q, ranked, 1, F(3, 10)) == F(3, 10)
    assert _proxy("min-best-tail", q, ranked, 1, F(3, 10)) == F(3, 10)  # best 7/10 > tail mass
    assert _proxy("min-best-tail", q, ranked, 0, F(1)) == F(7, 10)      # best < tail mass
    with pytest.raises(AssertionError, match="^x$"):
        _proxy("x", q, ranked, 1, F(3, 10))


def test_expansion_outcomes_per_prefix():
    """The draws of one expansion: the tail's support for a sampled slot, 1 without one; memoised
    per prefix (a second prefix with a smaller tail gets its own count)."""
    pair = _TablePair({(0,): law("1/2", "1/2", "0")})
    rheo = DynamicConfig(top_k=2, depth=2, budget=4, sampled=True)  # head m = 1
    cache = ExpansionCache(pair)
    assert cache.expansion_outcomes((), rheo) == 2     # tail {1, 2}
    assert cache.expansion_outcomes((0,), rheo) == 1   # tail {1}
    assert cache.expansion_outcomes((), rheo) == 2
    eagle = DynamicConfig(top_k=2, depth=2, budget=4)
    assert ExpansionCache(pair).expansion_outcomes((), eagle) == 1
    assert ExpansionCache(pair).expansion_outcomes((), DynamicConfig(top_k=1, depth=2, budget=4)) == 1


# -- the adaptive builder -------------------------------------------------------------------------------
@pytest.mark.parametrize("exact", [True, False])
def test_predicted_target_tempers_the_draft(exact):
    q = law("3/4", "1/4", "0")
    q = q if exact else laws.to_float(q)
    assert predicted_target(q, 0.5) == pytest.approx([0.9, 0.1, 0.0], abs=1e-15)
    s = np.sqrt([0.75, 0.25])
    assert predicted_target(q, 2.0) == pytest.approx(list(s / s.sum()) + [0.0], abs=1e-15)
    assert predicted_target(q, 1.0) == pytest.approx([0.75, 0.25, 0.0], abs=1e-15)


@pytest.mark.parametrize("exact", [True, False])
def test_predicted_acceptances_by_head_size(exact):
    q = law("1/2", "3/10", "1/5", "0")
    q = q if exact else laws.to_float(q)
    p_hat = np.array([0.2, 0.4, 0.2, 0.2])
    # m = 0: sum min(p, q) = .2 + .3 + .2; m = 1: .2 + min(.4, .6) + min(.2, .4); m = 2: .6 + min(.2, 1)
    assert predicted_acceptances(q, p_hat, [0, 1, 2], 5) == pytest.approx([0.7, 0.8, 0.8], abs=1e-12)
    assert predicted_acceptances(q, p_hat, [0, 1, 2], 2) == pytest.approx([0.7, 0.8], abs=1e-12)
    assert predicted_acceptances(q, np.array([0.2, 0.5, 0.3, 0.0]), [0, 1, 2], 3) == pytest.approx(
        [0.7, 1.0, 1.0], abs=1e-12)


def test_head_size_rules():
    q = law("1/2", "3/10", "1/5")
    ranked = [0, 1, 2]
    cfg = lambda **kw: AdaptiveConfig(3, 2, 4, **kw)  # noqa: E731
    assert head_size(q, ranked, cfg(head=2)) == 2
    assert head_size(q, ranked, cfg(head="threshold", threshold=F(3, 10))) == 2   # q >= theta counts
    assert head_size(q, ranked, cfg(head="threshold", threshold=F(31, 100))) == 1
    assert head_size(q, ranked, cfg(head="threshold", threshold=F(1, 10))) == 2   # never more than K - 1
    assert head_size(q, ranked, AdaptiveConfig(2, 2, 4, head="threshold", threshold=F(1, 10))) == 1
    assert head_size(q, ranked, cfg(temperature=0.25)) == 1                       # a sharp target
    assert head_size(q, ranked, cfg(temperature=1.0)) == 0
    assert head_size(q, ranked, cfg(temperature=1.5)) == 0
    # a given prediction is used as it is: p-hat = q predicts acceptance 1 for every m -> the smallest
    assert head_size(q, ranked, cfg(temperature=0.25), p_hat=laws.to_float(q)) == 0
    # ties within HEAD_TIE_TOL go to the smallest m
    assert head_size(law("1/2", "1/2"), [0, 1], cfg(temperature=0.5)) == 0


def test_sampled_slot_scores():
    q = law("1/2", "1/4", "1/8", "1/8")
    ranked = [0, 1, 2, 3]
    one = F(1)
    tail = _proxies("tail", q, ranked, 1, F(1, 2), 3, one)
    assert tail == [F(3, 8), F(3, 16), F(3, 32)] and all(type(w) is F for w in tail)
    assert _proxies("tail", q, ranked, 1, F(1, 2), 2, one, accept=F(1), decay=F(1)) == [F(1, 2), F(1, 2)]
    qf = laws.to_float(q)
    tail_f = _proxies("tail", qf, ranked, 1, 0.5, 2, 1.0)
    assert tail_f == [0.375, 0.1875] and all(type(w) is float for w in tail_f)
    assert _proxies("next", q, ranked, 1, F(1, 2), 3, one) == [F(1, 4), F(1, 8), F(1, 8)]
    # predicted: sum over the tail of min(p-hat, q / tail mass), then halved per member
    p_hat = np.array([0.1, 0.6, 0.2, 0.1])
    pred = _proxies("predicted", q, ranked, 1, F(1, 2), 2, one, p_hat=p_hat)
    assert pred == pytest.approx([0.5 + 0.2 + 0.1, 0.4], abs=1e-12)
    with pytest.raises(AssertionError, match="^true$"):
        _proxies("true", q, ranked, 1, F(1, 2), 1, one)


def test_adaptive_tree_head_and_samples_without_replacement():
    """Head 1 and two samples without replacement (K = 3), scored by the tail proxy; no cache
    given. Expanding the best sample at depth 2 draws it (and nothing else)."""
    cfg = AdaptiveConfig(top_k=3, depth=1, budget=3, head=1, proxy="tail")
    tree = build_adaptive(_TablePair({}), cfg, ReplayChooser([]))
    assert _nodes(tree) == [(0, 0, DET, F(1, 2)), (0, None, SAMPLED, F(3, 8)), (0, None, SAMPLED, F(3, 16))]
    assert tree.nodes[2].group.mode == "wor" and tree.nodes[2].group.members == [2, 3]
    assert all(type(n.score) is F for n in tree.nodes)
    # depth 2, K = 2 expanded per layer: the det child and the first sample (drawn: token 2)
    cfg = AdaptiveConfig(top_k=2, depth=2, budget=4, head=1, proxy="tail")
    tree = build_adaptive(_TablePair({}), cfg, ReplayChooser([2]))
    # budget 4: 1/2, 3/8, 1/4, then 3/16 twice: the sample under node 1 was created first
    assert _nodes(tree) == [(0, 0, DET, F(1, 2)), (0, 2, SAMPLED, F(3, 8)), (1, 0, DET, F(1, 4)),
                            (1, None, SAMPLED, F(3, 16))]
    with pytest.raises(NeedChoice):
        build_adaptive(_TablePair({}), AdaptiveConfig(top_k=2, depth=3, budget=6, head=1, proxy="tail"),
                       ReplayChooser([2]))


def test_adaptive_predicted_scores_and_a_short_support():
    """proxy=predicted scores deterministic children by p-hat; a two-token draft gives one head and
    one sample only (s = min(K - m, support - m))."""
    pair = _TablePair({(): law("3/4", "1/4", "0")})
    cfg = AdaptiveConfig(top_k=3, depth=1, budget=3, head=1, proxy="predicted", temperature=0.5)
    tree = build_adaptive(pair, cfg, ReplayChooser([]))
    (p0, t0, k0, s0), (p1, t1, k1, s1) = _nodes(tree)
    assert (p0, t0, k0, p1, t1, k1) == (0, 0, DET, 0, None, SAMPLED)
    # p-hat = (0.9, 0.1, 0); the sample: sum over the tail of min(p-hat, q / tail mass) = min(0.1, 1)
    assert s0 == pytest.approx(0.9, abs=1e-12) and s1 == pytest.approx(0.1, abs=1e-12)
    # head 0, proxy true: every sample drawn at creation, scored by its own draft probability
    cfg = AdaptiveConfig(top_k=2, depth=1, budget=2, head=0, proxy="true")
    tree = build_adaptive(_TablePair({}), cfg, ReplayChooser([1, 0]))
    assert _nodes(tree) == [(0, 1, SAMPLED, F(1, 4)), (0, 0, SAMPLED, F(1, 2))]


class _Prefetching:
    """A pair that records the batches a model-backed pair would evaluate (``prefetch``)."""

    def __init__(self, pair):
        self.pair, self.exact, self.calls = pair, pair.exact, []

    def q(self, prefix):
        return self.pair.q(prefix)

    def prefetch(self, paths):
        self.calls.append(paths)


@pytest.mark.parametrize("budget", [1, 2])
def test_eagle_left_out_expansions_and_prefetch(budget):
    """Budget below K: the enumerator's chooser (``skip_doomed``) leaves doomed expansions out and
    settles those it needs; the kept tree is the full builder's, with or without a batched
    pair, and a batched pair gets only the expansions that are made."""
    from rheotheory import random_pair

    pair = random_pair(4, 3, seed=1)
    cfg = DynamicConfig(top_k=3, depth=3, budget=budget)
    full = build_dynamic(pair, cfg, ReplayChooser([]))
    skip = build_dynamic(pair, cfg, ReplayChooser([], skip_doomed=True))
    batched, batched_skip = _Prefetching(pair), _Prefetching(pair)
    t1 = build_dynamic(batched, cfg, ReplayChooser([]))
    t2 = build_dynamic(batched_skip, cfg, ReplayChooser([], skip_doomed=True))
    key = full.canonical_key()
    assert skip.canonical_key() == key and t1.canonical_key() == key and t2.canonical_key() == key
    assert dict(full.skipped) == {}
    assert dict(skip.skipped) == dict(t2.skipped) == {3: 1, 4: 1, 5: 1, 7: 1}
    assert batched.calls == [[(3,), (2,), (1,)], [(3, 0), (2, 3), (3, 2)]]
    assert batched_skip.calls == [[(3,), (2,)][:budget], []]


def test_rheo_prefetch_resolves_the_chosen_samples_first():
    """A batched pair gets a layer's paths at once: the sampled node is drawn before the batch."""
    pair = _Prefetching(_TablePair({}))
    cfg = DynamicConfig(top_k=2, depth=2, budget=2, sampled=True, proxy="tail")
    tree = build_dynamic(pair, cfg, ReplayChooser([2]))
    assert pair.calls == [[(0,), (2,)]]
    assert _nodes(tree) == [(0, 0, DET, F(1, 2)), (0, 2, SAMPLED, F(1, 2))]


def test_adaptive_layers_expand_the_best_scored_nodes():
    """Depth 3, K = 2: the sample's deterministic child outscores the first child created in layer 2
    (q(0 | 2) = 9/10), so layer 3 expands it first, then the head's head; the configured decay
    scores the samples."""
    pair = _TablePair({(2,): law("9/10", "1/10", "0")})
    cfg = AdaptiveConfig(top_k=2, depth=3, budget=10, head=1, proxy="tail", sample_decay=F(3, 4))
    tree = build_adaptive(pair, cfg, ReplayChooser([2]))
    s = F(1, 2) * F(3, 4)  # the first sample's factor: tail mass 1/2 times the assumed acceptance 3/4
    assert _nodes(tree) == [
        (0, 0, DET, F(1, 2)), (0, 2, SAMPLED, s),                            # layer 1
        (1, 0, DET, F(1, 4)), (1, None, SAMPLED, F(1, 2) * s),               # under the head
        (2, 0, DET, s * F(9, 10)), (2, None, SAMPLED, s * F(1, 10) * F(3, 4)),  # under the sample
        (5, 0, DET, s * F(9, 10) / 2), (5, None, SAMPLED, s * F(9, 10) * s),  # layer 3: node 5 first
        (3, 0, DET, F(1, 8)), (3, None, SAMPLED, F(1, 4) * s)]
    # two samples of one group: the second scores the first times the configured decay
    cfg = AdaptiveConfig(top_k=3, depth=1, budget=3, head=1, proxy="tail", sample_decay=F(3, 4))
    tree = build_adaptive(_TablePair({}), cfg, ReplayChooser([]))
    assert [n.score for n in tree.nodes[2:]] == [s, s * F(3, 4)]


def test_adaptive_exact_order_prefetch_and_a_draft_inside_the_head():
    big = F(1, 3) + F(1, 10 ** 30)
    q = laws.exact_law([F(1, 3), big, 1 - F(1, 3) - big])
    tree = build_adaptive(_TablePair({(): q}), AdaptiveConfig(top_k=3, depth=1, budget=1, head=2, proxy="tail"),
                          ReplayChooser([]))
    assert _nodes(tree) == [(0, 1, DET, big)]
    # a batched pair gets the chosen nodes' paths once the sample among them is drawn
    pair = _Prefetching(_TablePair({}))
    build_adaptive(pair, AdaptiveConfig(top_k=2, depth=2, budget=2, head=1, proxy="tail"), ReplayChooser([2]))
    assert pair.calls == [[(0,), (2,)]]
    # the whole support in the head: no sampled slot
    tree = build_adaptive(_TablePair({(): law(1, 0, 0)}), AdaptiveConfig(top_k=2, depth=1, budget=2, head=1,
                                                                          proxy="tail"), ReplayChooser([]))
    assert _nodes(tree) == [(0, 0, DET, 1)]


class _Counting(_TablePair):
    """Counts the draft evaluations (what :class:`ExpansionCache` saves)."""

    def __init__(self, q):
        super().__init__(q)
        self.calls = 0

    def q(self, prefix):
        self.calls += 1
        return super().q(prefix)


def test_expansion_cache_ranks_and_restricts_once():
    pair = _Counting({(): law("1/2", "1/3", "1/6")})
    cache = ExpansionCache(pair)
    assert cache.ranked((), 2) == [0, 1] and cache.ranked((), 2) == [0, 1] and cache.ranked((), 1) == [0, 1]
    assert pair.calls == 1
    assert cache.ranked(()) == [0, 1, 2] and pair.calls == 2      # a longer ranking than the memo's
    assert cache.ranked(()) == [0, 1, 2] and cache.ranked((), 3) == [0, 1, 2] and pair.calls == 2
    short = ExpansionCache(_Counting({}))  # support 3 < limit 5: the memo holds the whole ranking
    assert short.ranked((), 5) == [0, 1, 2] and short.ranked(()) == [0, 1, 2] and short.pair.calls == 1
    law_, mass = cache.tail((), (0,))
    assert list(law_) == [0, F(2, 3), F(1, 3)] and mass == F(1, 2)
    assert cache.tail((), (0,))[0] is law_ and pair.calls == 3
    assert cache.tail((), (0, 1))[1] == F(1, 6) and pair.calls == 4


@pytest.mark.parametrize("build, cfg", [
    (build_dynamic, DynamicConfig(top_k=2, depth=2, budget=3)),
    (build_adaptive, AdaptiveConfig(top_k=3, depth=2, budget=3, head=2, proxy="tail"))])
def test_exact_order_across_parents(build, cfg):
    """Two grandchildren whose scores 1/3 and 1/3 + 1e-30 tie in float: the exact order keeps the
    larger one although the smaller one was created first (float order would keep the first)."""
    d = F(1, 10 ** 30)
    pair = _TablePair({(): law("1/2", "1/2", "0"), (0,): law("2/3", "1/3", "0"),
                       (1,): laws.exact_law([F(2, 3) + 2 * d, F(1, 3) - 2 * d, 0])})
    tree = build(pair, cfg, ReplayChooser([]))
    assert _nodes(tree) == [(0, 0, DET, F(1, 2)), (0, 1, DET, F(1, 2)), (2, 0, DET, F(1, 3) + d)]
