"""Tree-level verifiers: block verification (arXiv 2403.10444) and Traversal Verification
(arXiv 2505.12398), docs/theory.md section 7.1.

Exact first: certificates with difference exactly 0, exact tau comparisons, a closed form and
the identity traversal = block on chains. Then one Monte-Carlo lossless test at V = 1000 (alpha,
seed and sample size stated) with a planted-bug companion the same test must reject, and one
decode through the command line.
"""

import json
from fractions import Fraction as F
from pathlib import Path

import numpy as np
import pytest

from rheotheory import ToyPair, certify, make_method, random_pair
from rheotheory.errors import VerifierError
from rheotheory.methods import FAMILIES
from rheotheory.stats import lossless_test
from rheotheory.synthetic import SyntheticPair
from rheotheory.verify import TREE_VERIFIERS, EnumerateBranch, verifier_families
from rheotheory.verify.block import BLOCK
from rheotheory.testing.mutants import SkipResidualTraversal, planted
from rheotheory.verify.traversal import TRAVERSAL

PROOFS = Path(__file__).resolve().parent.parent / "proofs"

#: (V, D, seed) of the random chain instances certified exactly.
CHAIN_CASES = [(V, D, s) for V in (3, 4) for D in (1, 2, 3) for s in (0, 1)]


def test_registry_admits_them_where_registered():
    assert TREE_VERIFIERS["block"] is BLOCK and verifier_families("block") == ("chain",)
    assert set(verifier_families("traversal")) == {"chain", "static", "multichain", "adaptive"}
    assert "block" in FAMILIES["chain"].admitted_verifiers()
    assert "traversal" not in FAMILIES["rheo"].admitted_verifiers()  # lossy there: see below
    with pytest.raises(VerifierError):
        make_method("static", budget=3, depth=2, verifier="block")


@pytest.mark.parametrize("V,D,seed", CHAIN_CASES)
def test_block_exactly_lossless_and_never_worse_than_token_level(V, D, seed):
    pair = random_pair(V, D, seed=seed, mismatch=0.7)
    block = certify(pair, make_method("chain", depth=D, verifier="block"))
    seq = certify(pair, make_method("chain", depth=D, verifier="sequential"))
    assert block.exact and block.max_deviation == 0 and block.lossless
    assert block.tokens_per_step >= seq.tokens_per_step  # exact rationals (arXiv 2403.10444, Theorem 2)


def test_block_gains_somewhere():
    # the comparison above could hold with equality everywhere; on these instances it is strict
    gains = [certify(random_pair(4, 3, seed=s), make_method("chain", depth=3, verifier="block")).tokens_per_step
             - certify(random_pair(4, 3, seed=s), make_method("chain", depth=3, verifier="sequential")).tokens_per_step
             for s in range(3)]
    assert all(g >= 0 for g in gains) and any(g > 0 for g in gains)


def _constant_pair(p, q, horizon):
    """A context-independent ToyPair: the same laws after every prefix."""
    from rheotheory.pairs import prefixes
    P = np.array([F(x) for x in p], dtype=object)
    Q = np.array([F(x) for x in q], dtype=object)
    pre = list(prefixes(len(p), horizon))
    return ToyPair(len(p), horizon, {u: P for u in pre}, {u: Q for u in pre}, exact=True)


def test_block_closed_form_on_the_papers_example():
    # arXiv 2403.10444's motivating example: tokens {a, b}, p = (1/3, 2/3), q = (2/3, 1/3), two drafts.
    # Token level: E[accepted] = (2/3) + (2/3)^2 = 10/9. Block: with a_1 = min(1, p/q) = 1/2 or 1,
    # E[a_1] = 2/3 and E[a_2] = 2/3 * (1/6 + 1/3) + 1/3 * (1/3 + 1/3) = 5/9, so 11/9.
    pair = _constant_pair(["1/3", "2/3"], ["2/3", "1/3"], 2)
    block = certify(pair, make_method("chain", depth=2, verifier="block"))
    seq = certify(pair, make_method("chain", depth=2, verifier="sequential"))
    assert (block.tokens_per_step, seq.tokens_per_step) == (1 + F(11, 9), 1 + F(10, 9))
    assert block.max_deviation == 0
    # P(tau = 0, Y = y) = (p - q)_+ (y): only b is emitted at the root, with probability 1/3
    assert {z: w for z, w in block.z_law.items() if len(z) == 1} == {(1,): F(1, 3)}


@pytest.mark.parametrize("V,D,seed", CHAIN_CASES)
def test_traversal_is_block_on_chains(V, D, seed):
    pair = random_pair(V, D, seed=seed, mismatch=0.7)
    block = certify(pair, make_method("chain", depth=D, verifier="block"))
    trav = certify(pair, make_method("chain", depth=D, verifier="traversal"))
    assert trav.z_law == block.z_law  # the identical exact law of Z


TRAVERSAL_CASES = [
    make_method("static", budget=4, depth=2, sampling="iid", verifier="traversal"),
    make_method("static", budget=4, depth=3, sampling="wor", verifier="traversal"),
    make_method("static", shape=[[0], [1], [2], [0, 0], [0, 1]], sampling="wor", verifier="traversal"),
    make_method("multichain", width=2, depth=2, sampling="iid", verifier="traversal"),
    make_method("multichain", width=3, depth=1, sampling="wor", verifier="traversal"),
]


@pytest.mark.parametrize("method", TRAVERSAL_CASES, ids=lambda m: m.describe())
@pytest.mark.parametrize("V,seed", [(3, 0), (4, 1), (3, 2)])
def test_traversal_exactly_lossless_on_its_families(method, V, seed):
    pair = random_pair(V, method.depth, seed=seed, mismatch=0.7)
    cert = certify(pair, method)
    assert cert.max_deviation == 0 and cert.lossless
    rrs = certify(pair, method.fit(verifier="rrs-wor" if method.sampling == "wor" else "rrs"))
    assert cert.tokens_per_step > 1 and rrs.lossless


def test_traversal_is_lossy_on_rheo_tail():
    # outside its families: the shrunk counterexample of proofs/tree_level_verifiers.py
    # (rheo K=2 D=3 N=4, head 1, proxy tail; exact deviation 1/12 at z = (2, 1))
    pair = ToyPair.load(PROOFS / "counterexamples" / "traversal-rheo-tail.json")
    base = make_method("rheo", top_k=2, depth=3, budget=4, proxy="tail")

    class RheoTraversal(type(base)):
        tree_verifier = property(lambda self: TRAVERSAL)

    cert = certify(pair, RheoTraversal(**base.fields()))
    assert cert.max_deviation == F(1, 12) and cert.worst_sequence == (2, 1)
    assert certify(pair, base).lossless  # ot, the family's default, is lossless on it


def test_greedy_target_tree_level_equals_per_node():
    # T = 0: the target is a point mass, the path weights stay 0 or 1, and the tree-level rules
    # have the identical exact law of Z as their per-node counterparts
    from rheotheory.pairs import logits_pair
    for seed in range(3):
        pair = logits_pair(4, 3, seed=seed, temperature=0)
        assert (certify(pair, make_method("chain", depth=3, verifier="block")).z_law
                == certify(pair, make_method("chain", depth=3, verifier="sequential")).z_law)
        assert (certify(pair, make_method("static", budget=4, depth=2, verifier="traversal")).z_law
                == certify(pair, make_method("static", budget=4, depth=2, verifier="rrs")).z_law)


def test_block_refuses_a_branching_tree():
    from rheotheory.trees import Tree
    from rheotheory.trees.tree import DET
    tree = Tree(F(1))
    tree.add(0, DET, F(1), token=0)
    tree.add(0, DET, F(1), token=1)
    p = np.array([F(1, 2), F(1, 2)], dtype=object)
    with pytest.raises(VerifierError, match="chain"):
        list(BLOCK.outcomes(tree.finish(), lambda node, u: p, EnumerateBranch()))


def _skip_residual(method):
    return planted(method, SkipResidualTraversal())


def test_planted_bug_is_lossy_exactly():
    method = make_method("static", budget=4, depth=2, sampling="iid", verifier="traversal")
    assert not certify(random_pair(3, 2, seed=0), _skip_residual(method)).lossless


#: The Monte-Carlo lossless test (docs/theory.md section 6.2): alpha, seed, samples; V = 1000.
MC_ALPHA, MC_SEED, MC_SAMPLES = 0.01, 5, 4000
MC_PAIR = SyntheticPair(1000, seed=3, mismatch=2.2)
MC_METHOD = make_method("static", budget=4, depth=2, sampling="iid", verifier="traversal")
#: rheo-adaptive as run at T >= sampled_from: head 0, samples without replacement, traversal.
MC_ADAPTIVE = make_method("adaptive", top_k=3, depth=2, budget=5, head=0, proxy="tail", verifier="traversal")


@pytest.mark.parametrize("method", [MC_METHOD, make_method("chain", depth=3, verifier="block"), MC_ADAPTIVE],
                         ids=lambda m: m.describe())
def test_mc_lossless_test_does_not_reject(method):
    # alpha 0.01, seed 5, 4000 samples, synthetic pair V = 1000 (high mismatch); recorded p-value
    # for traversal on static i.i.d. N=4 D=2: 0.18; for adaptive head 0 K=3 D=2 N=5: 0.39
    ok = lossless_test(MC_PAIR, method, samples=MC_SAMPLES, alpha=MC_ALPHA, seed=MC_SEED)
    assert ok.lossless, ok.p_value
    assert ok.tau_low > 1  # the drafts are accepted


@pytest.mark.parametrize("method", [MC_METHOD, MC_ADAPTIVE], ids=lambda m: m.describe())
def test_mc_lossless_test_rejects_the_planted_bug(method):
    # the companion: same pair, alpha, seed and sample size; recorded p-values 2.6e-160 (static),
    # 4.3e-139 (adaptive)
    bad = lossless_test(MC_PAIR, _skip_residual(method), samples=MC_SAMPLES, alpha=MC_ALPHA, seed=MC_SEED)
    assert not bad.lossless, bad.p_value


def test_decode_cli_with_block_on_a_chain(capsys):
    from rheotheory.cli import main
    main(["decode", "--preset", "chain", "--verifier", "block", "--max-new-tokens", "8", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["method"] == {"family": "chain", "verifier": "block", "depth": out["method"]["depth"]}
    assert out["steps"] >= 1 and 1 <= out["tokens_per_step"] <= out["method"]["depth"] + 1
