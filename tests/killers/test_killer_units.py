"""Killer suite, part 2: unit tests of the rules, the walk, the tree-level verifiers and the
tree's draws, on hand-checked exact values and every error path (docs/mutation_report.md)."""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest

from rheotheory import laws
from rheotheory.errors import TreeError, VerifierError
from rheotheory.trees import NeedChoice, RandomChooser, ReplayChooser, Tree
from rheotheory.trees.tree import DET, SAMPLED, SampleGroup
from rheotheory.verify import block, rules, walk
from rheotheory.verify.rules import Candidate, acceptance, kseq, onehot, ot, ot_wor, output_law, sequential
from rheotheory.verify.traversal import TRAVERSAL
from rheotheory.verify.traversal_ot import TRAVERSAL_OT, samples_first
from rheotheory.verify.walk import EnumerateBranch, PerNodeWalk, SampleBranch


def law(*xs):
    return laws.exact_law([str(x) for x in xs])


P = law("1/2", "1/4", "1/4")
Q = law("1/4", "1/4", "1/2")


# -- per-node rules ----------------------------------------------------------------------------
def test_sequential_one_sampled_candidate():
    # accept s with min(1, p/q); on rejection emit norm((p - q)+) = point mass at 0
    tr = sequential(P, [Candidate(2, law=Q)])
    assert tr.cont == [F(1, 2)]
    assert list(tr.emit) == [F(1, 2), 0, 0]
    assert tr.total() == 1
    tr = sequential(P, [Candidate(0, law=Q)])
    assert tr.cont == [1] and list(tr.emit) == [0, 0, 0]


def test_sequential_deterministic_then_sampled():
    tr = sequential(P, [Candidate(0), Candidate(2, law=Q)])
    # 0 accepted w.p. 1/2; then p = (0, 1/2, 1/2), s = 2 accepted w.p. min(1, (1/2)/(1/2)) = 1
    assert tr.cont == [F(1, 2), F(1, 2)]
    assert list(tr.emit) == [0, 0, 0]
    tr = sequential(P, [Candidate(1), Candidate(1, law=Q)])
    # 1 accepted w.p. 1/4; then p = (2/3, 0, 1/3): s = 1 accepted w.p. 0, emit (p - q)+ normalised
    assert tr.cont == [F(1, 4), 0]
    assert list(tr.emit) == [F(3, 4), 0, 0]


def test_onehot_ignores_the_draft_law():
    assert onehot(P, [Candidate(1, law=Q), Candidate(0)]).cont == [F(1, 4), F(1, 2)]
    assert onehot(P, [Candidate(1, law=Q)]).cont == sequential(P, [Candidate(1)]).cont


def test_rules_reject_zero_probability_samples():
    z = law(1, 0, 0)
    for rule in (sequential, ot, ot_wor):
        with pytest.raises(VerifierError, match=r"^sampled candidate 1 has zero probability under its own law$"):
            rule(P, [Candidate(1, law=z)])


def test_ot_rules_refuse_what_they_do_not_define():
    with pytest.raises(VerifierError, match=r"^ot is defined for at most one sampled candidate per node$"):
        ot(P, [Candidate(0, law=Q), Candidate(1, law=Q)])
    with pytest.raises(VerifierError, match=r"^kseq needs every candidate sampled i\.i\.d\. from one law "
                                            r"\(static or chain trees\)$"):
        kseq(P, [Candidate(0, law=Q), Candidate(1, law=P)])
    with pytest.raises(VerifierError, match="kseq needs"):
        kseq(P, [Candidate(0), Candidate(1, law=Q)])
    with pytest.raises(VerifierError, match="kseq needs"):
        kseq(P, [Candidate(0, law=Q), Candidate(1)])


def test_ot_deterministic_plus_sample():
    p = law("1/2", "1/2", "0")
    L = law("0", "1/2", "1/2")
    tr = ot(p, [Candidate(0), Candidate(2, law=L)])
    # s = 2 rejected (p(2) = 0); Y ~ norm((p - L)+) = point mass at 0 -> continue into candidate 0
    assert tr.cont == [1, 0] and list(tr.emit) == [0, 0, 0]
    tr = ot(P, [Candidate(0), Candidate(2, law=Q)])
    assert tr.cont == [F(1, 2), F(1, 2)]
    assert list(tr.emit) == [0, 0, 0]
    tr = ot(P, [Candidate(1), Candidate(2, law=Q), Candidate(1)])  # a duplicate gets nothing
    assert tr.cont == [0, F(1, 2), 0] and list(tr.emit) == [F(1, 2), 0, 0]
    tr = ot(P, [Candidate(2, law=Q)])
    assert tr.cont == [F(1, 2)] and list(tr.emit) == [F(1, 2), 0, 0]
    assert ot(P, [Candidate(1), Candidate(0)]).cont == onehot(P, [Candidate(1), Candidate(0)]).cont


def test_ot_wor_two_samples():
    p = law("1/2", "1/4", "1/4", "0")
    L1 = law("0", "1/2", "1/4", "1/4")
    L2 = law("0", "0", "1/2", "1/2")
    tr = ot_wor(p, [Candidate(0), Candidate(1, law=L1), Candidate(3, law=L2)])
    # s1 = 1: a = min(1, (1/4)/(1/2)) = 1/2; p1 = norm((p - L1)+) = (1, 0, 0, 0)
    # s2 = 3: a = 0; everything left goes to candidate 0
    assert tr.cont == [F(1, 2), F(1, 2), 0]
    assert list(tr.emit) == [0, 0, 0, 0]
    tr = ot_wor(p, [Candidate(1, law=L1), Candidate(3, law=L2)])
    assert tr.cont == [F(1, 2), 0] and list(tr.emit) == [F(1, 2), 0, 0, 0]
    tr = ot_wor(p, [Candidate(0), Candidate(0), Candidate(3, law=L1)])  # s = 3 rejected, Y = 0: first copy
    assert tr.cont == [1, 0, 0] and list(tr.emit) == [0, 0, 0, 0]
    assert ot_wor(P, [Candidate(2), Candidate(0)]).cont == onehot(P, [Candidate(2), Candidate(0)]).cont
    tr = ot_wor(P, [Candidate(2, law=Q), Candidate(2)])  # a rejected sampled token: duplicate gets nothing
    assert tr.cont == [F(1, 2), 0]


def test_kseq_two_candidates():
    q = law("1/2", "1/2")
    p = law("3/4", "1/4")
    rho = rules.kseq_rho(p, q, 2)
    beta = laws.total(laws.minimum(q, p / rho))
    c = (1 - (1 - beta) ** 2) / beta
    assert 1 <= rho <= 2 and c <= rho and rho - c < F(1, 2**40)
    tr = kseq(p, [Candidate(0, law=q), Candidate(1, law=q)])
    a0 = min(1, p[0] / (rho * q[0]))
    a1 = min(1, p[1] / (rho * q[1]))
    assert tr.cont == [a0, (1 - a0) * a1]
    assert tr.total() == 1
    assert kseq(p, []).cont == [] and list(kseq(p, []).emit) == [F(3, 4), F(1, 4)]
    assert rules.kseq_rho(q, q, 3) == 1
    assert rules._kseq_c(F(0), 3) == 3 and rules._kseq_c(F(1, 2), 2) == F(3, 2)
    assert isinstance(rules._kseq_c(F(0), 3), F)
    assert rules.kseq_rho(laws.to_float(p), laws.to_float(q), 2) == pytest.approx(float(rho), abs=1e-12)


def test_kseq_output_law_is_the_target():
    q = law("1/2", "1/3", "1/6")
    p = law("1/6", "1/2", "1/3")
    out = p * 0
    for x in range(3):
        for y in range(3):
            cands = [Candidate(x, law=q), Candidate(y, law=q)]
            out = out + q[x] * q[y] * output_law(kseq(p, cands), cands)
    assert list(out) == list(p)


def test_small_helpers():
    assert rules._min1(F(1, 2), F(1, 4)) == 1 and isinstance(rules._min1(F(1, 2), F(1, 4)), F)
    assert rules._min1(F(1, 4), F(1, 2)) == F(1, 2)
    assert rules._min1(0.5, 0.5) == 1.0 and isinstance(rules._min1(0.5, 0.5), float)
    assert rules._one(P) == 1 and isinstance(rules._one(P), F)
    assert isinstance(rules._one(laws.to_float(P)), float)
    tr = rules.Transition([F(1, 4), F(1, 4)], law("1/2", "0"))
    assert tr.total() == 1 and acceptance(tr) == F(1, 2)
    assert list(output_law(tr, [Candidate(1), Candidate(1)])) == [F(1, 2), F(1, 2)]
    with pytest.raises(VerifierError, match=r"^unknown verifier 'x'; choose from onehot, sequential"):
        rules.get_verifier("x")


# -- the walk and its branches ----------------------------------------------------------------------
def test_enumerate_branch_concatenates_parts():
    b = EnumerateBranch()
    assert list(b.choose([F(1, 2), 0], [0, F(1, 4), F(1, 4)])) == [(0, F(1, 2)), (3, F(1, 4)), (4, F(1, 4))]
    assert b.memo == {}


def test_sample_branch_inverse_cdf():
    us = iter([0.1, 0.6, 0.99, 0.3])
    b = SampleBranch(lambda: next(us))
    assert b.memo is None
    assert list(b.choose([0.25, 0.25, 0.5])) == [(0, 1.0)]
    assert list(b.choose([0.25, 0.25], [0.5])) == [(2, 1.0)]
    assert list(b.choose([0.5], [0.25, 0.25])) == [(2, 1.0)]
    assert list(b.choose(np.array([0.0, 1.0]))) == [(1, 1.0)]


def _chain(q, depth=2):
    tree = Tree(F(1))
    v = 0
    for i in range(depth):
        v = tree.add(v, SAMPLED, F(1), group=SampleGroup(q, "iid", (i,)))
    return tree.finish()


def test_walk_law_memo_and_observer():
    q = law("1/2", "1/2")
    p = law("3/4", "1/4")
    tree = _chain(q, 1)
    seen = []
    law_z = {o.z: o.weight for o in PerNodeWalk(sequential).outcomes(tree, lambda n, u: p, EnumerateBranch(), F(2),
                                                                       lambda *a: seen.append(a))}
    # s = 0 (1/2): accept, bonus from p; s = 1 (1/2): accept w.p. 1/2, else emit 0; weights doubled
    assert law_z == {(0, 0): F(3, 4), (0, 1): F(1, 4), (1, 0): F(3, 8), (1, 1): F(1, 8), (0,): F(1, 2)}
    assert [s[0] for s in seen] == [0, 0] and seen[0][3].cont == [1]
    memo_walk = PerNodeWalk(sequential)
    br = EnumerateBranch()
    first = list(memo_walk.outcomes(tree, lambda n, u: p, br))
    assert len(br.memo) == 2
    assert list(memo_walk.outcomes(tree, lambda n, u: p, br)) == first
    assert repr(memo_walk) == "PerNodeWalk(sequential)" and PerNodeWalk(sequential, "x").name == "x"
    assert PerNodeWalk(lambda p, c: None).name == "<lambda>"
    outs = list(PerNodeWalk(sequential).outcomes(tree, lambda n, u: p, EnumerateBranch()))
    assert [o.nodes for o in outs] == [(1,), (1,), (1,), (1,), ()]


def test_law_key_and_lookups():
    assert walk._law_key(None) is None
    assert walk._law_key(P) == (F(1, 2), F(1, 4), F(1, 4))
    assert walk._law_key(np.array([0.5, 0.5])) == np.array([0.5, 0.5]).tobytes()
    assert walk.tree_verifier("traversal") is TRAVERSAL
    assert walk.tree_verifier("ot").rule is ot and walk.tree_verifier("ot").name == "ot"
    assert walk.tree_verifier("rrs-wor").name == "rrs-wor" and walk.tree_verifier("rrs-wor").rule is sequential
    with pytest.raises(VerifierError, match="unknown verifier"):
        walk.tree_verifier("nope")
    assert walk.as_tree_verifier(TRAVERSAL) is TRAVERSAL
    assert walk.as_tree_verifier("kseq").rule is kseq
    assert walk.as_tree_verifier(ot).rule is ot
    assert walk.verifier_families("block") == ("chain",) and walk.verifier_families("ot") is None

    class M:
        verifier = "onehot"

    assert walk.method_tree_verifier(M()).rule is onehot
    M.tree_verifier = staticmethod(lambda: TRAVERSAL)
    assert walk.method_tree_verifier(M()) is TRAVERSAL
    M.tree_verifier = TRAVERSAL_OT
    assert walk.method_tree_verifier(M()) is TRAVERSAL_OT
    M.tree_verifier = None
    assert walk.method_tree_verifier(M()).rule is onehot


def test_sample_outcome_and_draw_pending():
    q = law("1/2", "1/2")
    p = law("3/4", "1/4")
    tree = _chain(q, 1)
    us = iter([0.7, 0.3, 0.9])  # draw s = 1; accept (u < 1/2); bonus token 1
    o = walk.sample_outcome(PerNodeWalk(sequential), tree, lambda n, u: laws.to_float(p), SampleBranch(lambda: next(us)))
    assert o.z == (1, 1) and o.nodes == (1,) and o.weight == 1.0
    tree = Tree(F(1))
    g = SampleGroup(law("1/2", "1/4", "1/4"), "wor", ())
    a, b = tree.add(0, SAMPLED, F(1), group=g), tree.add(0, SAMPLED, F(1), group=g)
    tree.finish()
    draws = {tuple(sorted(k.items())): w for w, k in walk.draw_pending(tree, [a, b], EnumerateBranch(), w=F(2))}
    assert draws[((a, 0), (b, 1))] == 2 * F(1, 2) * F(1, 2)
    assert draws[((a, 1), (b, 0))] == 2 * F(1, 4) * F(2, 3)
    assert sum(draws.values()) == 2 and len(draws) == 6


# -- block and traversal --------------------------------------------------------------------------
def test_block_helpers():
    assert list(block.point_mass(P, 1)) == [0, 1, 0] and isinstance(block.point_mass(P, 1)[1], F)
    assert isinstance(block.point_mass(laws.to_float(P), 1)[1], float)
    assert block.ratio_weight(F(1, 2), P, Q, 0) == 1
    assert block.ratio_weight(F(1, 2), P, Q, 2) == F(1, 4)
    a2, P2 = block.residual_step(F(1), P, Q)  # R = (1/4, 0, 0), S = 1/4, a' = 1
    assert a2 == 1 and list(P2) == [1, 0, 0]
    a2, P2 = block.residual_step(F(1, 2), P, Q)  # R = 0: a' = 0 / (1/2) = 0
    assert a2 == 0
    a2, P2 = block.residual_step(F(1, 2), law(1, 0), law(0, 1))  # R = (1/2, 0), S = 1/2, a' = 1/2 / 1
    assert a2 == F(1, 2) and list(P2) == [1, 0]
    a2, _ = block.residual_step(F(1), law(1, 0), law(1, 0))  # never reached: den = 0
    assert a2 == 0 and isinstance(a2, F)
    assert block.root_emission(P, Q) is P
    assert block.root_emission(P * 0, Q) is Q


def test_block_refuses_a_tree_and_zero_mass_nodes():
    tree = Tree(F(1))
    tree.add(0, DET, F(1), token=0)
    tree.add(0, DET, F(1), token=1)
    tree.finish()
    with pytest.raises(VerifierError, match=r"^block verification is defined for a chain; node 0 has 2 kept children$"):
        list(block.BLOCK.outcomes(tree, lambda n, u: P, EnumerateBranch()))
    tree = Tree(F(1))
    tree.add(0, SAMPLED, F(1), token=1, group=SampleGroup(law(1, 0, 0), "iid", ()))
    tree.finish()
    with pytest.raises(VerifierError, match=r"^sampled node 1 has zero probability under its own law$"):
        block.member_law(tree, 1, {}, P)
    assert repr(block.BLOCK) == "BlockVerifier()" and repr(TRAVERSAL) == "TraversalVerifier()"
    assert repr(TRAVERSAL_OT) == "TraversalOTVerifier()"


def _z_law(verifier, tree, p):
    out = {}
    for o in verifier.outcomes(tree, lambda n, u: p, EnumerateBranch()):
        out[o.z] = out.get(o.z, 0) + o.weight
    return out


def test_block_paper_example_and_one_deterministic_node():
    p = law("1/3", "2/3")
    q = law("2/3", "1/3")
    tree = _chain(q, 2)
    z = _z_law(block.BLOCK, tree, p)
    assert sum(len(k) * w for k, w in z.items()) == F(20, 9)  # arXiv 2403.10444's example
    tree = Tree(F(1))
    tree.add(0, DET, F(1), token=1)
    tree.finish()
    assert _z_law(block.BLOCK, tree, p) == {(1, 0): F(2, 9), (1, 1): F(4, 9), (0,): F(1, 3)}
    assert _z_law(TRAVERSAL, tree, p) == {(1, 0): F(2, 9), (1, 1): F(4, 9), (0,): F(1, 3)}
    empty = Tree(F(1)).finish()
    assert _z_law(block.BLOCK, empty, p) == {(0,): F(1, 3), (1,): F(2, 3)}
    assert _z_law(TRAVERSAL, empty, p) == {(0,): F(1, 3), (1,): F(2, 3)}
    outs = list(block.BLOCK.outcomes(tree, lambda n, u: p, EnumerateBranch(), F(3)))
    assert sum(o.weight for o in outs) == 3 and {o.nodes for o in outs} == {(1,), ()}


def test_traversal_two_iid_drafts():
    p = law("1/2", "1/2", "0")
    q = law("0", "1/2", "1/2")
    tree = Tree(F(1))
    g = SampleGroup(q, "iid", ())
    tree.add(0, SAMPLED, F(1), group=g)
    tree.add(0, SAMPLED, F(1), group=g)
    tree.finish()
    z = _z_law(TRAVERSAL, tree, p)
    first = {}
    for k, w in z.items():
        first[k[:1]] = first.get(k[:1], 0) + w
    assert first == {(0,): F(1, 2), (1,): F(1, 2)}
    # x1 = 1 (1/2): weight 1, accepted, bonus ~ p; x1 = 2: weight 0, the root's residual is the point
    # mass at 0 with weight 1, and no second draft can carry it: the root emits 0
    assert z == {(1, 0): F(1, 4), (1, 1): F(1, 4), (0,): F(1, 2)}
    outs = list(TRAVERSAL.outcomes(tree, lambda n, u: p, EnumerateBranch(), F(2)))
    assert sum(o.weight for o in outs) == 2
    assert {o.nodes for o in outs} == {(1,), ()}


def test_samples_first_order():
    tree = Tree(F(1))
    d = tree.add(0, DET, F(1), token=0)
    s = tree.add(0, SAMPLED, F(1), group=SampleGroup(Q, "iid", ()))
    e = tree.add(0, DET, F(1), token=1)
    t = tree.add(0, SAMPLED, F(1), group=SampleGroup(Q, "iid", ()))
    assert samples_first(tree, [d, s, e, t]) == [s, t, d, e]


# -- the tree's draws ---------------------------------------------------------------------------
def test_choosers():
    r = ReplayChooser([2, 0])
    assert r.draw(P) == 2 and r.draw(P) == 0 and r.i == 2
    with pytest.raises(NeedChoice) as e:
        r.draw(Q)
    assert e.value.law is Q and str(e.value) == "replay script exhausted"
    assert not ReplayChooser([]).skip_doomed and ReplayChooser([], skip_doomed=True).skip_doomed

    class Rng:
        def random(self):
            return 0.6

    assert RandomChooser(Rng()).draw(laws.to_float(P)) == 1


def test_tree_member_laws_and_resolution():
    tree = Tree(F(1))
    g = SampleGroup(law("1/2", "1/4", "1/4"), "wor", ())
    a = tree.add(0, SAMPLED, F(1), group=g)
    b = tree.add(0, SAMPLED, F(1), group=g)
    c = tree.add(b, DET, F(1, 2), token=1)
    assert (tree.nodes[b].pos, tree.nodes[c].depth, tree.nodes[c].parent) == (1, 2, b)
    assert tree.nodes[0].children == [a, b] and g.members == [a, b]
    assert tree.member_law(a) is g.base
    with pytest.raises(TreeError, match=r"^node 1 is unresolved and has no assigned token$"):
        tree.member_law(b)
    assert list(tree.member_law(b, {a: 0})) == [0, F(1, 2), F(1, 2)]
    assert list(tree.draw_law(b, {a: 1})) == [F(2, 3), 0, F(1, 3)]
    assert tree.token(b, {b: 2}) == 2 and tree.token(c) == 1
    assert tree.pending_draws([b]) == [a, b] and tree.pending_draws([a, b, c]) == [a, b]
    with pytest.raises(RuntimeError, match="path through an unresolved sampled node"):
        tree.path(c)
    assert tree.resolve(b, ReplayChooser([1, 0])) == 0 and tree.nodes[a].token == 1
    assert tree.path(c) == (0, 1) and tree.pending_draws([a, b]) == []
    cand = tree.candidate(b)
    assert cand.token == 0 and list(cand.law) == [F(2, 3), 0, F(1, 3)]
    assert tree.candidate(c) == Candidate(1, None)
    tree.finish([True, True, False, True])
    assert tree.kept == [True, True, False, False] and tree.kept_children(0) == [a] and tree.num_kept() == 1
    iid = SampleGroup(Q, "iid", ())
    t2 = Tree(F(1))
    x, y = t2.add(0, SAMPLED, F(1), group=iid), t2.add(0, SAMPLED, F(1), group=iid)
    assert t2.member_law(y) is Q and t2.pending_draws([y]) == [y]
    assert t2.resolve(y, ReplayChooser([2])) == 2 and t2.nodes[x].token is None


def test_resolve_coarse():
    tree = Tree(F(1))
    g = SampleGroup(law("1/2", "1/4", "1/8", "1/8"), "iid", ())
    a = tree.add(0, SAMPLED, F(1), group=g)
    ch = ReplayChooser([3])
    assert tree.resolve_coarse(a, ch, [0, 1], 3) is None and tree.nodes[a].token is None
    tree.finish()
    assert list(tree.draw_law(a)) == [0, 0, F(1, 2), F(1, 2)]
    assert tree.canonical_key()[4][0][1] == "s-rest"  # the kept children, then a child's kind
    assert tree.resolve(a, ReplayChooser([2])) == 2 and tree.nodes[a].draw is None
    b = tree.add(0, SAMPLED, F(1), group=g)
    seen = []

    class Rec:
        def draw(self, lw):
            seen.append(list(lw))
            return 1

    assert tree.resolve_coarse(b, Rec(), [0, 1], 2) == 1 and tree.nodes[b].token == 1
    assert seen == [[F(1, 2), F(1, 4), F(1, 4), 0]]
    c = tree.add(0, SAMPLED, F(1), group=SampleGroup(law("1/2", "1/2", "0", "0"), "iid", ()))
    assert tree.resolve_coarse(c, ReplayChooser([1]), [0, 1], 2) == 1  # no mass outside: a full draw


def test_verifiers_read_the_target_of_the_node_they_visit():
    """The decoder's target depends on the node (its model row), not only on the prefix."""
    p0, p1 = law("1/3", "2/3"), law("1/4", "3/4")
    tree = Tree(F(1))
    tree.add(0, DET, F(1), token=1)
    tree.finish()
    calls = []

    def target(node, prefix):
        calls.append((node, prefix))
        return {0: p0, 1: p1}[node]

    want = {(1, 0): F(2, 3) * F(1, 4), (1, 1): F(2, 3) * F(3, 4), (0,): F(1, 3)}
    for verifier in (block.BLOCK, TRAVERSAL, TRAVERSAL_OT, PerNodeWalk(sequential)):
        calls.clear()
        out = {}
        for o in verifier.outcomes(tree, target, EnumerateBranch()):
            out[o.z] = out.get(o.z, 0) + o.weight
        assert out == want, verifier
        assert set(calls) == {(0, ()), (1, (1,))}


class _ZeroAfterRejection:
    """A state update that leaves an all-zero law (as float round-off can on a branch of exact
    probability 0): the root must then emit the target law itself."""

    state_after_rejection = staticmethod(lambda a, P, Q: (block.residual_step(a, P, Q)[0], P * 0))


@pytest.mark.parametrize("base", [type(TRAVERSAL), type(TRAVERSAL_OT)])
def test_root_falls_back_to_the_target_on_an_all_zero_law(base):
    verifier = type("V", (_ZeroAfterRejection, base), {})()
    p = law("1/2", "1/2")
    tree = Tree(F(1))
    tree.add(0, SAMPLED, F(1), group=SampleGroup(law("1", "0"), "iid", ()))
    tree.finish()
    out = {}
    for o in verifier.outcomes(tree, lambda n, u: p, EnumerateBranch()):
        out[o.z] = out.get(o.z, 0) + o.weight
    # s = 0 accepted w.p. 1/2 (then the bonus ~ p); rejected w.p. 1/2, the root emits p
    assert out == {(0, 0): F(1, 4), (0, 1): F(1, 4), (0,): F(1, 4), (1,): F(1, 4)}


def test_kseq_rho_walks_up_from_the_float_root():
    """An instance where the float bisection's end needs two steps of the exact walk-up (2^-50, then
    2^-49) before c(rho) <= rho holds exactly; rho is the first point of that walk."""
    p = law("3/13", "6/13", "4/13")
    q = law("5/12", "5/12", "2/12")
    rho = rules.kseq_rho(p, q, 8)
    assert rho == F(8263786756453319, 4503599627370496)
    beta = laws.total(laws.minimum(q, p / rho))
    assert rules._kseq_c(beta, 8) <= rho
    below = rho - 2 * F(1, 2**50)  # the previous point of the walk
    assert rules._kseq_c(laws.total(laws.minimum(q, p / below)), 8) > below


def test_block_root_falls_back_to_the_target_on_an_all_zero_residual():
    p0, p1 = law("1/3", "2/3"), law("1/4", "3/4")
    tree = _chain(law("1/2", "1/2"), 1)
    verifier = type("V", (block.BlockVerifier,), {"state_after_rejection": staticmethod(
        lambda a, P, Q: (a * 0, P * 0))})()
    out = {}
    for o in verifier.outcomes(tree, lambda n, u: {0: p0, 1: p1}[n], EnumerateBranch()):
        out[o.z] = out.get(o.z, 0) + o.weight
    # s = 0 accepted w.p. min(1, (1/3)/(1/2)) = 2/3, s = 1 always: bonus ~ p1; else the root emits p0
    assert out == {(0, 0): F(1, 3) * F(1, 4), (0, 1): F(1, 3) * F(3, 4), (1, 0): F(1, 2) * F(1, 4),
                   (1, 1): F(1, 2) * F(3, 4), (0,): F(1, 6) * F(1, 3), (1,): F(1, 6) * F(2, 3)}


def test_kseq_edge_cases():
    # equal laws held in different arrays are one law
    tr = kseq(P, [Candidate(0, law=Q), Candidate(2, law=Q.copy())])
    assert tr.total() == 1
    # p = q: beta = 1, rho = 1, the first draft is always kept, nothing is emitted
    tr = kseq(P, [Candidate(1, law=P), Candidate(2, law=P)])
    assert tr.cont == [1, 0] and list(tr.emit) == [0, 0, 0]
    # disjoint supports: beta = 0, every draft rejected, the target is emitted unchanged
    p, q = law(1, 0), law(0, 1)
    assert rules.kseq_rho(p, q, 2) == 2
    tr = kseq(p, [Candidate(1, law=q), Candidate(1, law=q)])
    assert tr.cont == [0, 0] and list(tr.emit) == [1, 0]
    assert list(kseq(P, []).emit) == list(P) and kseq(P, []).emit is not P


def test_number_type_of_one():
    assert type(block._one(laws.to_float(P))) is float and type(block._one(P)) is F


def test_traversal_root_never_rejects():
    """The visit returns the weight of its rejection: 0 at the root, which always accepts."""
    tree = _chain(law("1/2", "1/2"), 1)
    gen = TRAVERSAL.outcomes(tree, lambda n, u: law("1/3", "2/3"), EnumerateBranch())
    with pytest.raises(StopIteration) as stop:
        while True:
            next(gen)
    assert stop.value.value == 0


def test_ot_one_token_vocabulary_and_duplicates_before_other_candidates():
    one = law(1)
    tr = ot(one, [Candidate(0, law=one)])
    assert tr.cont == [1] and list(tr.emit) == [0]
    # s = 2 accepted w.p. 1/2; else Y = 0 (residual (1, 0, 0)) goes to the candidate holding 0,
    # which comes after a duplicate of token 1
    tr = ot(P, [Candidate(1), Candidate(1), Candidate(0), Candidate(2, law=Q)])
    assert tr.cont == [0, 0, F(1, 2), F(1, 2)] and list(tr.emit) == [0, 0, 0]
    tr = ot_wor(P, [Candidate(1), Candidate(1), Candidate(0), Candidate(2, law=Q)])
    assert tr.cont == [0, 0, F(1, 2), F(1, 2)] and list(tr.emit) == [0, 0, 0]


# -- the static builder -------------------------------------------------------------------------------
class _TablePair:
    """A hand-written exact pair: the draft law by prefix (the target is not read by a builder)."""

    exact = True

    def __init__(self, q, prefetch=False):
        self._q = q
        self.calls = []
        if prefetch:
            self.prefetch = self.calls.append

    def q(self, prefix):
        return self._q.get(prefix, law("1/2", "1/4", "1/4"))


def _tokens(tree):
    return [(n.parent, n.token) for n in tree.nodes[1:]]


def test_static_builder_expands_past_leaves_and_empty_slots():
    from rheotheory.trees.static import build_static

    # a leaf (0,) before a node with children (1,): every node of the shape is expanded (leaves
    # stay unresolved: drawn lazily)
    tree = build_static(_TablePair({}), [(0,), (1,), (1, 0)], "iid", ReplayChooser([0, 1, 2]))
    assert _tokens(tree) == [(0, None), (0, 0), (2, None)]
    # without replacement the root's draft has 2 tokens: slot (2,) stays empty, (0, 0) is expanded
    pair = _TablePair({(): law("1/2", "1/2", "0")})
    shape = [(0,), (1,), (2,), (0, 0), (0, 0, 0)]
    tree = build_static(pair, shape, "wor", ReplayChooser([1, 0, 2, 0]))
    assert _tokens(tree) == [(0, 1), (0, None), (1, 0), (3, None)]
    # i.i.d. children are not limited by the support: three slots from a two-token draft
    tree = build_static(pair, [(0,), (1,), (2,)], "iid", ReplayChooser([]))
    assert _tokens(tree) == [(0, None), (0, None), (0, None)]
    with pytest.raises(TreeError, match=r"^unknown sampling mode 'x'; choose from iid, wor$"):
        build_static(pair, shape, "x", ReplayChooser([]))


def test_static_builder_prefetches_each_layer_once():
    """A model-backed pair gets each layer's expanded nodes in one batched call, before any of
    them is expanded (the root's law is known)."""
    from rheotheory.trees.static import build_static

    pair = _TablePair({}, prefetch=True)
    shape = [(0,), (1,), (2,), (0, 0), (1, 0), (1, 0, 0)]
    tree = build_static(pair, shape, "iid", ReplayChooser([0, 1, 2, 2, 1, 0]))
    assert pair.calls == [[(0,), (1,)], [(1, 2)]]
    assert _tokens(tree) == [(0, 0), (0, 1), (0, None), (1, None), (2, 2), (5, None)]


def test_ot_wor_one_token_vocabulary():
    one = law(1)
    tr = ot_wor(one, [Candidate(0, law=one)])
    assert tr.cont == [1] and list(tr.emit) == [0]


def test_enumerate_branch_offsets_every_part():
    assert list(EnumerateBranch().choose([F(1, 4)], [F(1, 4)], [0, F(1, 2)])) == [(0, F(1, 4)), (1, F(1, 4)),
                                                                                  (3, F(1, 2))]


def test_walk_observer_sees_the_node_view_and_the_memo_avoids_recomputing():
    q = law("1/2", "1/2")
    p = law("3/4", "1/4")
    tree = _chain(q, 1)
    seen = []
    list(PerNodeWalk(sequential).outcomes(tree, lambda n, u: p, EnumerateBranch(), observe=lambda *a: seen.append(a)))
    node, p_seen, cands, tr = seen[0]
    assert node == 0 and list(p_seen) == list(p) and cands == [Candidate(0, law=q)] and tr.cont == [1]
    calls = []

    def counting(p, cands):
        calls.append(1)
        return sequential(p, cands)

    walker, branch = PerNodeWalk(counting), EnumerateBranch()
    list(walker.outcomes(tree, lambda n, u: p, branch))
    list(walker.outcomes(tree, lambda n, u: p, branch))
    assert len(calls) == 2  # two views (s = 0, s = 1), each computed once across both evaluations


# -- gbv: greedy multi-path block verification -------------------------------------------------
def _chains(k: int, depth: int, q=Q, mode="iid", tokens=None):
    """K sampled chains of ``depth`` from the root, the root's children one group of ``mode``;
    ``tokens[c][d]``: the drawn token of chain c at depth d (None: left unresolved)."""
    tree = Tree(F(1))
    root = SampleGroup(q, mode, ("root",))
    for c in range(k):
        tok = (lambda d: tokens[c][d]) if tokens else (lambda d: None)
        v = tree.add(0, SAMPLED, F(1), token=tok(0), group=root)
        for d in range(1, depth):
            v = tree.add(v, SAMPLED, F(1), token=tok(d), group=SampleGroup(q, "iid", (v, d)))
    return tree


def test_gbv_rank_order_ratio_then_id_and_support_only():
    from rheotheory.verify.gbv import rank_order, rank_positions

    # P/Q = 2, 1, 1/2: ascending 2, 1, 0; the float and exact paths agree
    assert rank_order(P, Q).tolist() == [2, 1, 0]
    assert rank_order(laws.to_float(P), laws.to_float(Q)).tolist() == [2, 1, 0]
    # ties (P/Q = 1 everywhere) by id; a token the draft cannot draw is left out, ranked last by rank_positions
    q0 = law("1/2", "0", "1/2")
    assert rank_order(q0, q0).tolist() == [0, 2]
    assert rank_positions(q0, q0).tolist() == [0, 2, 1]
    assert rank_order(q0, q0).dtype == np.int64


def test_gbv_max_of_k_law_hand_values():
    from rheotheory.verify.gbv import max_of_k_law, rank_order

    order = rank_order(P, Q)  # [2, 1, 0], masses 1/2, 1/4, 1/4
    law_, lo, hi = max_of_k_law(Q, F(0), 2, order)
    # P(max = t) = F(t)^2 - F(t-)^2: token 2: 1/4, token 1: 9/16 - 1/4 = 5/16, token 0: 1 - 9/16 = 7/16
    assert list(law_) == [F(7, 16), F(5, 16), F(1, 4)]
    assert list(lo) == [0, F(1, 2), F(3, 4)] and list(hi) == [F(1, 2), F(3, 4), 1]
    # alpha > 0 (after a prefix ranked below others): Q(t) sum_j h^j l^(1-j) / (1 + alpha), K = 2
    law_, lo, hi = max_of_k_law(Q, F(1, 2), 2, order)
    assert list(lo) == [F(1, 2), F(3, 4), F(7, 8)]
    assert list(law_) == [F(1, 4) * (F(7, 8) + 1) / F(3, 2), F(1, 4) * (F(3, 4) + F(7, 8)) / F(3, 2),
                          F(1, 2) * (F(1, 2) + F(3, 4)) / F(3, 2)]
    assert sum(law_) == 1
    # K = 1: the draft itself
    assert list(max_of_k_law(Q, F(0), 1, order)[0]) == list(Q)


@pytest.mark.parametrize("build, match", [
    (lambda: _two_kids_below_root(), "gbv verifies K i.i.d. chains; node 1 has 2 kept children"),
    (lambda: _with_det(), "gbv verifies chains drawn i.i.d. from the draft; node 2 is not"),
    (lambda: _chains(2, 2, mode="wor"), "gbv verifies chains drawn i.i.d. from the draft; node 1 is not"),
    (lambda: _unequal(), "gbv verifies K i.i.d. chains of equal length; these differ"),
    (lambda: _two_groups(), "gbv verifies K chains drawn i.i.d. at the root; these come from different draws"),
])
def test_gbv_refuses_trees_outside_its_setting(build, match):
    from rheotheory.verify.gbv import GBV, drafted_paths

    tree = build().finish()
    with pytest.raises(VerifierError) as e:
        drafted_paths(tree)
    assert str(e.value) == match
    with pytest.raises(VerifierError):
        list(GBV.outcomes(tree, lambda node, u: P, EnumerateBranch()))


def _two_kids_below_root():
    tree = Tree(F(1))
    v = tree.add(0, SAMPLED, F(1), group=SampleGroup(Q, "iid", ("root",)))
    g = SampleGroup(Q, "iid", (v,))
    tree.add(v, SAMPLED, F(1), group=g)
    tree.add(v, SAMPLED, F(1), group=g)
    return tree


def _with_det():
    tree = Tree(F(1))
    v = tree.add(0, SAMPLED, F(1), group=SampleGroup(Q, "iid", ("root",)))
    tree.add(v, DET, F(1), token=0)
    return tree


def _unequal():
    tree = _chains(1, 2)
    tree.add(0, SAMPLED, F(1), group=tree.nodes[1].group)
    return tree


def _two_groups():
    tree = Tree(F(1))
    tree.add(0, SAMPLED, F(1), group=SampleGroup(Q, "iid", ("a",)))
    tree.add(0, SAMPLED, F(1), group=SampleGroup(Q, "iid", ("b",)))
    return tree


def test_gbv_outcomes_weights_nodes_and_target_calls():
    from rheotheory.verify.gbv import GBV

    tree = _chains(2, 2, tokens=[(2, 0), (1, 1)]).finish()
    calls = []

    def target(node, prefix):
        assert tree.path(node) == prefix  # the node whose prefix it is (the decoder reads rows by node)
        calls.append(node)
        return P

    outs = list(GBV.outcomes(tree, target, EnumerateBranch()))  # the default weight is 1
    assert sum(o.weight for o in outs) == 1
    assert 0 in calls and set(calls) <= {0, 1, 2, 3, 4}
    # chain 1 starts with token 1 (P/Q = 1) above chain 0's token 2 (P/Q = 1/2): it is the selected path
    assert {o.nodes for o in outs} == {(), (3,), (3, 4)}
    for o in outs:  # the accepted tokens sit on the nodes named, a prefix of one drafted chain
        assert tree.path(o.nodes[-1]) == o.z[:-1] if o.nodes else len(o.z) == 1
    assert sum(o.weight for o in GBV.outcomes(tree, target, EnumerateBranch(), weight=F(1, 3))) == F(1, 3)
    # no chains: the root's target law
    empty = Tree(F(1)).finish()
    assert {o.z: o.weight for o in GBV.outcomes(empty, lambda n, u: P, EnumerateBranch())} == \
        {(0,): F(1, 2), (1,): F(1, 4), (2,): F(1, 4)}
