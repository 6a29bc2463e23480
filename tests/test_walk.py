"""The tree verifier interface and the one walk, evaluated exactly and by sampling.

The exact evaluation is pinned by ``benchmarks/certificate_snapshot.py`` (every certificate of
its grid unchanged) and the exact tests; here: the sampled walk against the exact walk on the
same finished trees (unresolved sampled leaves included), with a planted-bug companion, the
single inverse-CDF rule, and a tree-level verifier plugged in through the interface.

Statistical checks: the package's Pearson chi-square (rheotheory.stats.chi_square_law, rare cells
pooled by its one rule), alpha = ALPHA (reject iff p < alpha), seed SEED, SAMPLES draws per tree;
their power is in docs/theory.md section 6.5.
"""

from dataclasses import dataclass

import numpy as np
import pytest

from rheotheory import certify, make_method, random_pair
from rheotheory.errors import LawError
from rheotheory.exact import enumerate_classes
from rheotheory.laws import inverse_cdf
from rheotheory.montecarlo import sample_outputs
from rheotheory.stats import DEFAULT_MIN_EXPECTED, chi_square_law
from rheotheory.testing.mutants import emit_target
from rheotheory.trees import RandomChooser
from rheotheory.verify import (EnumerateBranch, Outcome, PerNodeWalk, SampleBranch, TreeVerifier,
                               as_tree_verifier, get_verifier, sample_outcome, sequential, tree_verifier)

#: Level of the chi-square tests; the planted-bug companions must reject at the same level.
ALPHA = 1e-3
#: Sampled walks per tree, and the seed of their generator.
SAMPLES = 3000
SEED = 7
#: Cells with a smaller expected count are pooled (the package's one rule, rheotheory.stats).
MIN_EXPECTED = DEFAULT_MIN_EXPECTED

PAIR = random_pair(4, 3, seed=3, mismatch=0.6).to_float()
METHODS = [
    make_method("rheo", top_k=3, depth=3, budget=6),  # sampled slots, lazily drawn leaves
    make_method("rheo", top_k=2, depth=2, budget=4, proxy="tail", verifier="sequential"),
    make_method("static", shape=[[0], [1], [0, 0]], verifier="rrs-wor", sampling="wor"),
    make_method("chain", depth=3, verifier="kseq"),
]


def _target(pair):
    return lambda node, prefix: pair.p(prefix)


def exact_law(verifier, tree, pair=PAIR) -> dict:
    """Law of Z given ``tree``: the verifier summed over every choice."""
    law: dict = {}
    for o in as_tree_verifier(verifier).outcomes(tree, _target(pair), EnumerateBranch()):
        law[o.z] = law.get(o.z, 0.0) + o.weight
    return law


def sampled(verifier, tree, n=SAMPLES, seed=SEED, pair=PAIR) -> list:
    branch = SampleBranch(np.random.default_rng(seed).random)
    return [sample_outcome(as_tree_verifier(verifier), tree, _target(pair), branch).z for _ in range(n)]


def chi_square(samples, law: dict):
    """The package's test (:func:`rheotheory.stats.chi_square_law`: its pooling rule, an outcome
    outside the law rejects) of sampled outcomes against ``law``, and a failure message."""
    res = chi_square_law(samples, law, MIN_EXPECTED)
    return res, (f"chi2 = {res.statistic:.1f}, df = {res.df}, p = {res.p_value:.3g}; worst cell {res.worst_cell}: "
                 f"observed {res.observed}, expected {res.expected:.1f}")


def heaviest_trees(method, k=2):
    """The ``k`` most probable equivalence classes' trees (their unresolved leaves left unresolved)."""
    classes = sorted(enumerate_classes(PAIR, method).classes.values(), key=lambda c: -c.weight)
    return [c.tree for c in classes[:k]]


@pytest.mark.parametrize("method", METHODS, ids=lambda m: m.describe())
def test_sampled_walk_matches_the_exact_walk(method):
    # alpha 1e-3, seed 7, 3000 draws per tree, on the two heaviest classes' trees
    for tree in heaviest_trees(method):
        law = exact_law(method.tree_verifier, tree)
        assert sum(law.values()) == pytest.approx(1.0, abs=1e-12)
        key = tree.canonical_key()
        res, msg = chi_square(sampled(method.tree_verifier, tree), law)
        assert not res.rejects(ALPHA), msg
        assert tree.canonical_key() == key, "sampling must not write draws into the tree"


#: Planted bug (rheotheory.testing.mutants): the sequential rule emitting from p, not the residual.
skip_residual = emit_target(sequential)


def test_planted_wrong_rule_is_rejected():
    # companion: the same test (alpha, seed, N) rejects the walk of a rule that skips the residual
    method = METHODS[1]
    tree = heaviest_trees(method, 1)[0]
    res, msg = chi_square(sampled(skip_residual, tree), exact_law(method.tree_verifier, tree))
    assert res.rejects(ALPHA), "planted bug not caught: " + msg


def test_exact_walk_of_a_single_sampled_child():
    # one child x ~ q: the sequential walk accepts x w.p. min(1, p(x)/q(x)), else emits from the
    # residual, so P(|Z| = 1, Z = y) summed with the accepted paths gives p (docs/theory.md section 4)
    from rheotheory.trees import Tree
    from rheotheory.trees.tree import SAMPLED, SampleGroup

    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.2, 0.6])
    tree = Tree(1.0)
    tree.add(0, SAMPLED, 1.0, group=SampleGroup(q, "iid", ("root",)))
    tree.finish()  # the child stays unresolved: the walk draws it
    law = exact_law(get_verifier("sequential"), tree, pair=type("Const", (), {"p": lambda self, u: p})())
    first = np.zeros(3)
    for z, w in law.items():
        first[z[0]] += w
    np.testing.assert_allclose(first, p, rtol=0, atol=1e-15)
    accept = sum(w for z, w in law.items() if len(z) == 2)
    assert accept == pytest.approx(np.minimum(p, q).sum(), abs=1e-15)  # 1 - TV(p, q)


def test_inverse_cdf_is_the_one_sampling_rule():
    w = np.array([0.0, 1.0, 0.0, 3.0, 0.0])  # cumulative 0, 1, 1, 4, 4
    picks = {u: inverse_cdf(w, u) for u in (0.0, 0.2499, 0.25, 0.9999, 1.0)}  # 1.0: rounded up to the total
    assert picks == {0.0: 1, 0.2499: 1, 0.25: 3, 0.9999: 3, 1.0: 3}
    with pytest.raises(LawError):
        inverse_cdf(np.zeros(3), 0.5)
    # the builders' chooser and the sampling branch read one uniform each through it
    us = np.random.default_rng(0).random(50)
    chooser = RandomChooser(np.random.default_rng(0))
    branch = SampleBranch(iter(np.random.default_rng(0).random(50)).__next__)
    expected = [inverse_cdf(w, u) for u in us]
    assert [chooser.draw(w) for _ in us] == expected
    assert [next(branch.choose(w))[0] for _ in us] == expected


def test_uniform_stream_and_torch_chooser_use_the_same_rule():
    torch = pytest.importorskip("torch")
    from rheotheory.decode.engine import TorchChooser, UniformStream

    w = np.array([0.1, 0.0, 0.6, 0.3])
    a, b = UniformStream(torch.Generator().manual_seed(3)), UniformStream(torch.Generator().manual_seed(3))
    chooser = TorchChooser(UniformStream(torch.Generator().manual_seed(3)))
    for _ in range(40):
        j = inverse_cdf(w, a.next())
        assert b.pick(w) == j and chooser.draw(w) == j


@dataclass(frozen=True)
class TargetOnly(TreeVerifier):
    """A tree-level verifier that ignores the tree: Z = one token from the target at the root."""

    name: str = "target-only"

    def outcomes(self, tree, target, branch, weight=1, observe=None):
        for y, w in branch.choose(target(0, ())):
            yield Outcome((y,), (), weight * w)


class WithTreeVerifier:
    """A method whose tree verifier is replaced (the interface the evaluations read)."""

    def __init__(self, method, verifier):
        self._method, self.tree_verifier = method, verifier

    def __getattr__(self, name):
        return getattr(self._method, name)


def test_a_tree_level_verifier_plugs_into_every_evaluation():
    method = WithTreeVerifier(METHODS[0], TargetOnly())
    cert = certify(random_pair(3, 3, seed=1), method)
    assert cert.lossless and cert.tokens_per_step == 1
    assert {len(z) for z in sample_outputs(PAIR, method, 50, seed=0)} == {1}


def test_tree_verifier_names_and_wrapping():
    tv = tree_verifier("ot")
    assert isinstance(tv, PerNodeWalk) and tv.name == "ot" and tv.rule is get_verifier("ot")
    assert as_tree_verifier(tv) is tv
    assert as_tree_verifier(skip_residual).rule is skip_residual
    assert METHODS[0].tree_verifier.name == METHODS[0].verifier
