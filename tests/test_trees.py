"""Tree builders follow the fixed EAGLE / RheoSampling / static semantics."""

from fractions import Fraction as F

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rheotheory import make_method, ToyPair, random_pair
from rheotheory.errors import TreeError
from rheotheory.pairs import prefixes
from rheotheory.testing import toy_pairs
from rheotheory.trees import DynamicConfig, RandomChooser, ReplayChooser, build_dynamic, build_static, parse_shape
from rheotheory.trees.tree import DET, SAMPLED


def table_pair(V, H, q_of):
    """A pair with uniform target and draft given by q_of(prefix) (list of fraction strings)."""
    uni = np.array([F(1, V)] * V, dtype=object)
    target = {k: uni for k in prefixes(V, H)}
    draft = {k: np.array([F(x) for x in q_of(k)], dtype=object) for k in prefixes(V, H)}
    return ToyPair(V, H, target, draft, True)


def kept_view(tree):
    return [(tree.path(i) if tree.nodes[i].token is not None else None, tree.nodes[i].kind)
            for i in range(1, len(tree.nodes)) if tree.kept[i]]


def test_eagle_semantics_by_hand():
    # q after any prefix: token 0: 1/2, 1: 1/4, 2: 1/8, 3: 1/8 (tie 2 vs 3: smaller id first)
    pair = table_pair(4, 2, lambda k: ["1/2", "1/4", "1/8", "1/8"])
    tree = build_dynamic(pair, DynamicConfig(top_k=3, depth=2, budget=5), ReplayChooser(()))
    # layer 1: 0 (1/2), 1 (1/4), 2 (1/8); layer 2 expands all three (K=3) -> 9 children
    assert [tree.nodes[i].token for i in tree.nodes[0].children] == [0, 1, 2]
    assert len(tree.nodes) == 1 + 3 + 9
    # scores: (0)=1/2, (1)=1/4, (0,0)=1/4, (2)=1/8, (0,1)=1/8, (1,0)=1/8, ... ties: created earlier first
    assert kept_view(tree) == [((0,), DET), ((1,), DET), ((2,), DET), ((0, 0), DET), ((0, 1), DET)]
    assert tree.num_kept() == 5


def test_rheo_slots_and_lazy_sampling():
    pair = table_pair(4, 2, lambda k: ["1/2", "1/4", "1/8", "1/8"])
    cfg = DynamicConfig(top_k=3, depth=2, budget=20, sampled=True, proxy="next")
    # the root's sampled slot (score 1/8, proxy = q(rank 3) = q(2)) is expanded at layer 2 (it is
    # one of the 3 best layer-1 nodes), so its identity is drawn: exactly one draw in total
    script = (3,)
    tree = build_dynamic(pair, cfg, ReplayChooser(script))
    root_kids = tree.nodes[0].children
    assert [tree.nodes[i].kind for i in root_kids] == [DET, DET, SAMPLED]
    assert [tree.nodes[i].token for i in root_kids] == [0, 1, 3]
    assert tree.nodes[root_kids[2]].score == F(1, 8)
    # the sampled slot's law: q restricted to {2, 3}
    assert list(tree.member_law(root_kids[2])) == [0, 0, F(1, 2), F(1, 2)]
    # layer-2 sampled children stay unresolved (never expanded)
    unresolved = [n for n in tree.nodes if n.kind == SAMPLED and n.token is None]
    assert len(unresolved) == 3


def test_sampled_slot_empty_without_tail_mass():
    pair = table_pair(3, 1, lambda k: ["1/2", "1/2", "0"])
    tree = build_dynamic(pair, DynamicConfig(top_k=3, depth=1, budget=5, sampled=True), ReplayChooser(()))
    # ranked tokens with positive draft mass: 0, 1; head = top 2; nothing left to sample
    assert [tree.nodes[i].token for i in tree.nodes[0].children] == [0, 1]


def test_zero_probability_tokens_never_in_slots():
    pair = table_pair(3, 1, lambda k: ["0", "1", "0"])
    tree = build_dynamic(pair, DynamicConfig(top_k=3, depth=1, budget=5), ReplayChooser(()))
    assert [tree.nodes[i].token for i in tree.nodes[0].children] == [1]


def test_prune_drops_orphans():
    # budget keeps a deep node whose parent is cut -> it must be dropped too
    pair = table_pair(2, 2, lambda k: ["1/2", "1/2"] if k == () else (["1", "0"] if k == (1,) else ["1/2", "1/2"]))
    tree = build_dynamic(pair, DynamicConfig(top_k=2, depth=2, budget=2), ReplayChooser(()))
    # scores: (0) 1/2, (1) 1/2, (0,0) 1/4, (0,1) 1/4, (1,0) 1/2 -> top 2: (0), (1)
    assert kept_view(tree) == [((0,), DET), ((1,), DET)]
    tree = build_dynamic(pair, DynamicConfig(top_k=1, depth=2, budget=1), ReplayChooser(()))
    assert kept_view(tree) == [((0,), DET)]


@given(toy_pairs(max_vocab=4, max_horizon=3), st.integers(1, 4), st.integers(1, 10), st.integers(0, 2**31 - 1),
       st.sampled_from(["next", "tail", "min-best-tail", "true"]), st.booleans())
def test_dynamic_tree_invariants(pair, K, N, seed, proxy, sampled):
    D = pair.horizon
    cfg = DynamicConfig(top_k=K, depth=D, budget=N, sampled=sampled, proxy=proxy)
    tree = build_dynamic(pair, cfg, RandomChooser(np.random.default_rng(seed)))
    assert tree.num_kept() <= N
    for i, node in enumerate(tree.nodes[1:], start=1):
        assert node.depth <= D
        if tree.kept[i]:
            assert tree.kept[node.parent]
        assert len(tree.nodes[node.parent].children) <= K
        if node.token is not None and i:
            q = pair.q(tree.path(node.parent))
            assert q[node.token] > 0
        assert node.score <= tree.nodes[node.parent].score
    # siblings hold distinct tokens
    for node in tree.nodes:
        toks = [tree.nodes[c].token for c in node.children if tree.nodes[c].token is not None]
        assert len(toks) == len(set(toks))


def test_static_shapes():
    assert parse_shape("[[0],[1],[0,0]]") == [(0,), (1,), (0, 0)]
    for bad, msg in [("[[1]]", "sibling"), ("[[0,0]]", "no parent"), ("[]", "non-empty"), ("[[0],[0]]", "twice"),
                     ("[[-1]]", "non-negative"), ("nope", "JSON")]:
        with pytest.raises(TreeError, match=msg):
            parse_shape(bad)


def test_static_without_replacement_stops_at_support():
    pair = table_pair(3, 1, lambda k: ["1/2", "1/2", "0"])
    tree = build_static(pair, parse_shape([[0], [1], [2]]), "wor", RandomChooser(np.random.default_rng(0)))
    toks = sorted(tree.resolve(i, RandomChooser(np.random.default_rng(1))) for i in tree.nodes[0].children)
    assert toks == [0, 1]


@pytest.mark.parametrize("kwargs,msg", [
    (dict(method="rheo", top_k=0), "top_k"),
    (dict(method="rheo", budget=0), "budget"),
    (dict(method="rheo", top_k=3, head=3), "head"),
    (dict(method="rheo", proxy="bogus"), "proxy"),
    (dict(method="nope"), "unknown method"),
    (dict(method="eagle", verifier="rrs"), "does not apply"),
    (dict(method="static", shape="[[0],[1]]", verifier="ot"), "at most one sampled"),
    (dict(method="static", shape="[[0]]", verifier="rrs", sampling="wor"), "i.i.d."),
    (dict(method="chain", depth=0), "depth"),
])
def test_impossible_parameters_rejected(kwargs, msg):
    with pytest.raises(Exception, match=msg) as e:
        make_method(**kwargs)
    from rheotheory.errors import RheoError
    assert isinstance(e.value, RheoError)


def test_depth_beyond_horizon_rejected():
    from rheotheory import certify
    with pytest.raises(TreeError, match="horizon"):
        certify(random_pair(3, 2, seed=0), make_method("rheo", depth=3))


class PrefetchPair:
    """A pair whose draft is read through a per-layer prefetch hook, as a model-backed pair's is."""

    def __init__(self, pair):
        self.pair, self.exact, self.vocab_size = pair, pair.exact, pair.vocab_size
        self.horizon = pair.horizon
        self.calls = []

    def q(self, prefix):
        return self.pair.q(prefix)

    def p(self, prefix):
        return self.pair.p(prefix)

    def prefetch(self, prefixes):
        prefixes = [tuple(pf) for pf in prefixes]
        assert len({len(pf) for pf in prefixes}) == 1  # one layer at a time
        self.calls.append(prefixes)


@pytest.mark.parametrize("method", [
    make_method("static", shape=[[0], [1], [0, 0], [1, 0], [1, 1], [0, 0, 0]], verifier="rrs"),
    make_method("static", shape=[[0], [1], [0, 0], [1, 0], [1, 1]], verifier="rrs-wor"),
    make_method("rheo", top_k=2, depth=3, budget=5),
    make_method("eagle", top_k=2, depth=3, budget=4),
])
def test_prefetch_hook_keeps_the_exact_step_law(method):
    """Resolving a whole layer before expanding it (for one batched draft pass) only reorders
    independent draws: the exact law of Z is the same with and without the hook."""
    from rheotheory.exact import enumerate_classes, step_law

    pair = random_pair(3, 3, seed=5)
    hooked = PrefetchPair(pair)
    plain = step_law(pair, method, enumerate_classes(pair, method))
    with_hook = step_law(hooked, method, enumerate_classes(hooked, method))
    assert with_hook == plain
    assert hooked.calls  # the hook was used, one layer per call
    tree = method.builder(hooked)(RandomChooser(np.random.default_rng(0)))
    deepest = max(tree.nodes[i].depth for i in range(1, len(tree.nodes)))
    hooked.calls.clear()
    method.builder(hooked)(RandomChooser(np.random.default_rng(0)))
    assert len(hooked.calls) <= deepest - 1  # at most one call per expanded layer below the root


def test_member_law_with_assigned_tokens_equals_the_resolved_tree():
    # the walk assigns tokens to unresolved draws without writing them into the tree: the member
    # laws it then reads are those of the tree with the same tokens resolved
    pair = table_pair(4, 1, lambda k: ["1/2", "1/4", "1/8", "1/8"])
    shape = parse_shape([[0], [1], [2]])
    lazy = build_static(pair, shape, "wor", ReplayChooser(()))
    kids = lazy.kept_children(0)
    assert lazy.pending_draws(kids[2:]) == kids  # the last kid needs the earlier members first
    known = dict(zip(kids, (1, 3, 0)))
    resolved = build_static(pair, shape, "wor", ReplayChooser((1, 3, 0)))
    for k in kids:
        resolved.resolve(k, ReplayChooser((known[k],)))
    for k in kids:
        assert list(lazy.member_law(k, known)) == list(resolved.member_law(k))
        assert lazy.candidate(k, known).token == known[k] and lazy.nodes[k].token is None
    assert list(lazy.member_law(kids[2], known)) == [F(4, 5), 0, F(1, 5), 0]  # 1 and 3 removed, renormalised
    with pytest.raises(TreeError, match="unresolved"):
        lazy.member_law(kids[1])
