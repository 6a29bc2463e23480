"""The tree-level optimum (rheotheory.lp_optimum, docs/theory.md section 7.2).

Known answers, exact: one draft (speculative sampling is optimal), one level of sampled children
(the per-node optimum of section 3.6), a deterministic tree (one-hot is optimal); every lossless
verifier of every family stays below it; the implemented constraint rows agree with the literal
section-4 criterion; the CLI refuses an LP beyond its caps in one line.
"""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest
from scipy.optimize import linprog

from rheotheory import certify, make_method, random_pair, resolve
from rheotheory.cli import main
from rheotheory.errors import VerifierError
from rheotheory.exact import lossless_check
from rheotheory.verify import TREE_VERIFIERS
from rheotheory.verify.optimum import optimum_sets, set_law_iid, set_law_wor
from rheotheory.lp_optimum import LPSizeError, concrete_trees, solve_rational, tree_optimum

SEEDS = range(4)

#: Every family at a small size (K, D, N) = (2, 2, 4): presets and the multi-chain family.
SMALL_METHODS = ["eagle", "rheo", "rheo-tuned", "static-iid", "static-wor", "chain", "multichain",
                 "rheo:proxy=tail:verifier=sequential"]


def _small(spec):
    return resolve(spec, size=(2, 2, 4))


@pytest.mark.parametrize("V", [2, 3, 4])
@pytest.mark.parametrize("seed", SEEDS)
def test_single_draft_optimum_is_speculative_sampling(V, seed):
    pair = random_pair(V, 1, seed=seed)
    opt = tree_optimum(pair, make_method("chain", depth=1))
    p, q = pair.p(()), pair.q(())
    assert opt.exact
    assert opt.value == 1 + sum(min(a, b) for a, b in zip(p, q))
    assert opt.upper_bound == opt.value


@pytest.mark.parametrize("mode,k", [("iid", 2), ("iid", 3), ("wor", 2), ("wor", 3)])
@pytest.mark.parametrize("seed", SEEDS)
def test_one_level_static_is_the_per_node_optimum(mode, k, seed):
    """k sampled children of the root and nothing else: the tree-level LP is the per-node OT."""
    pair = random_pair(3, 1, seed=seed)
    method = resolve({"family": "static", "shape": [[i] for i in range(k)], "sampling": mode})
    opt = tree_optimum(pair, method)
    Q = (set_law_iid if mode == "iid" else set_law_wor)(pair.q(()), k)
    assert opt.exact
    assert opt.value == 1 + optimum_sets(pair.p(()), Q)


@pytest.mark.parametrize("V", [3, 4])
@pytest.mark.parametrize("seed", SEEDS)
def test_deterministic_tree_onehot_is_optimal(V, seed):
    """An eagle tree is one deterministic tree; onehot passes A(u) p(x|u) = G(ux), the most any
    lossless law can put through a child, so it attains the optimum (decided here by the LP)."""
    pair = random_pair(V, 3, seed=seed)
    method = make_method("eagle", top_k=2, depth=3, budget=5)
    opt = tree_optimum(pair, method)
    assert opt.exact and opt.trees == 1
    assert opt.value == certify(pair, method).tokens_per_step


@pytest.mark.parametrize("spec", SMALL_METHODS)
@pytest.mark.parametrize("seed", range(3))
def test_every_lossless_verifier_is_below_the_optimum(spec, seed):
    pair = random_pair(3, 2, seed=seed)
    method = _small(spec)
    opt = tree_optimum(pair, method)
    assert opt.exact, opt.recheck
    checked = 0
    for name in method.admitted_verifiers():
        try:
            m = method.fit(verifier=name)
        except VerifierError:
            continue  # not applicable to this tree (e.g. ot with sampled siblings)
        cert = certify(pair, m)
        if cert.lossless:
            assert cert.tokens_per_step <= opt.value, (spec, name)
            checked += 1
    assert checked >= 1


@pytest.mark.parametrize("seed", SEEDS)
def test_the_optimum_is_lossless_and_attains_its_value(seed):
    pair = random_pair(3, 2, seed=seed)
    opt = tree_optimum(pair, _small("rheo-tuned"))
    assert opt.exact
    assert sum(opt.z_law.values()) == 1 and min(opt.z_law.values()) > 0
    assert lossless_check(pair, opt.z_law, 3).max_deviation == 0
    assert sum(len(z) * w for z, w in opt.z_law.items()) == opt.value
    assert abs(float(opt.value) - opt.float_value) < 1e-8


def test_the_bound_is_not_the_token_by_token_walk():
    """On a chain of depth 2 the optimum beats sequential verification strictly somewhere (block
    verification's gain), so the LP is not a copy of the walk."""
    gaps = []
    for seed in SEEDS:
        pair = random_pair(3, 2, seed=seed)
        method = make_method("chain", depth=2)
        gaps.append(tree_optimum(pair, method).value - certify(pair, method).tokens_per_step)
    assert min(gaps) >= 0 and max(gaps) > 0


@pytest.mark.skipif("block" not in TREE_VERIFIERS, reason="block verification is not registered")
@pytest.mark.parametrize("depth", [2, 3])
@pytest.mark.parametrize("seed", range(3))
def test_block_verification_attains_the_chain_optimum(depth, seed):
    """Sun et al. prove block verification optimal for one chain; the LP agrees exactly."""
    pair = random_pair(3, depth, seed=seed)
    opt = tree_optimum(pair, make_method("chain", depth=depth))
    assert opt.exact
    assert certify(pair, make_method("chain", depth=depth, verifier="block")).tokens_per_step == opt.value


def _literal_optimum(pair, method) -> float:
    """The LP with the section-4 criterion written literally, one dense row per z in V^{<=D+1}:
    sum_{k<l} P(Z = z[:k]) p(z[k:] | z[:k]) + P(|Z| >= l, Z[:l] = z) = p(z)."""
    trees, _ = concrete_trees(pair, method)
    V, D = pair.vocab_size, method.depth
    cols = [(t, u + (y,)) for t, paths in enumerate(trees) for u in paths for y in range(V)]
    seqs = [()]
    rows = []
    for _ in range(D + 1):
        seqs = [s + (y,) for s in seqs for y in range(V)]
        rows += seqs

    def pcond(w, u):  # p(w | u)
        out = 1.0
        for i, y in enumerate(w):
            out *= float(pair.p(u + w[:i])[y])
        return out

    A = np.zeros((len(trees) + len(rows), len(cols)))
    b = np.zeros(len(trees) + len(rows))
    b[:len(trees)] = [float(w) for w in trees.values()]
    for r, z in enumerate(rows):
        b[len(trees) + r] = pcond(z, ())
        for j, (t, zc) in enumerate(cols):
            if len(zc) < len(z) and z[:len(zc)] == zc:
                A[len(trees) + r, j] = pcond(z[len(zc):], zc)
            elif len(zc) >= len(z) and zc[:len(z)] == z:
                A[len(trees) + r, j] = 1.0
    for j, (t, _) in enumerate(cols):
        A[t, j] = 1.0
    c = np.array([-len(z) for _, z in cols], dtype=float)
    res = linprog(c, A_eq=A, b_eq=b, bounds=(0, None), method="highs")
    assert res.status == 0
    return -res.fun


@pytest.mark.parametrize("spec", ["chain", "rheo-tuned", "static-wor"])
def test_implemented_rows_equal_the_literal_criterion(spec):
    pair = random_pair(3, 2, seed=5)
    method = _small(spec)
    assert abs(_literal_optimum(pair, method) - tree_optimum(pair, method).float_value) < 1e-8


@pytest.mark.parametrize("spec", ["rheo-tuned", "static-wor", "multichain"])
def test_expanded_classes_equal_the_eager_enumeration(spec):
    """Expanding a class over its unresolved kept leaves gives the law of the eagerly resolved trees."""
    pair = random_pair(3, 2, seed=2)
    method = _small(spec)
    lazy, _ = concrete_trees(pair, method)
    eager, _ = concrete_trees(pair, method, eager=True)
    assert lazy == eager and sum(lazy.values()) == 1


def test_float_pair_is_not_exact():
    opt = tree_optimum(random_pair(3, 2, seed=0), _small("chain"), exact=False)
    assert not opt.exact and opt.upper_bound is None and isinstance(opt.value, float)


def test_size_cap_in_the_library():
    with pytest.raises(LPSizeError, match="MAX_LP_VARIABLES"):
        tree_optimum(random_pair(3, 2, seed=0), _small("chain"), max_variables=10)
    with pytest.raises(LPSizeError, match="--max-constraints"):
        tree_optimum(random_pair(3, 2, seed=0), _small("chain"), max_constraints=5)


def test_solve_rational_free_direction_takes_the_hint():
    F = Fraction
    x = solve_rational([{0: F(1), 1: F(1)}], [F(1)], {1: F(1, 3)})
    assert x == {0: F(2, 3), 1: F(1, 3)}


@pytest.mark.parametrize("flag", ["--max-variables", "--max-constraints"])
def test_cli_refuses_beyond_the_cap(capsys, flag):
    rc = main(["optimum", "--preset", "chain", "--depth", "2", flag, "5"])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and flag in err


def test_cli_json(capsys):
    rc = main(["optimum", "--preset", "chain", "--depth", "1", "--verifiers", "sequential,onehot", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert rc == 0 and d["exact"] is True
    assert d["method"] == make_method("chain", depth=1).to_dict()
    assert set(d["verifiers"]) == {"sequential", "onehot"}
    assert d["verifiers"]["sequential"]["tokens_per_step"] == d["tokens_per_step_optimum"]
    assert Fraction(d["verifiers"]["onehot"]["tokens_per_step"]) < Fraction(d["tokens_per_step_optimum"])


def test_cli_rejects_an_inapplicable_verifier(capsys):
    rc = main(["optimum", "--preset", "static-iid", "--depth", "1", "--budget", "2", "--verifiers", "rrs-wor"])
    assert rc == 2 and "rrs-wor" in capsys.readouterr().err


@pytest.mark.parametrize("patch", [("SUPPORT_REL_TOL", 2.0), ("MAX_EXACT_UNKNOWNS", 0)])
def test_exact_only_when_the_recheck_succeeds(monkeypatch, patch):
    """A broken float support (no column qualifies: each tree keeps its largest entry only) or a
    skipped re-check gives exact=False, HiGHS's float, and still a rigorous rational upper bound."""
    from rheotheory import lp_optimum

    pair, method = random_pair(3, 1, seed=0), make_method("chain", depth=1)
    true = tree_optimum(pair, method)
    monkeypatch.setattr(lp_optimum, *patch)
    opt = tree_optimum(pair, method)
    assert not opt.exact and isinstance(opt.value, float)
    assert "upper_bound" in opt.recheck and opt.upper_bound >= true.value
    assert abs(float(opt.upper_bound) - float(true.value)) < 1e-5
