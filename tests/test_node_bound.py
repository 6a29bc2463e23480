"""The best per-node verifier's bound (rheotheory.node_bound, docs/theory.md section 7.4).

Known answers: on a chain (one child per node) the best per-node verifier is token-by-token
speculative sampling, so the bound equals ``sequential``'s exact tau; one level of sampled
children is the per-node optimum of section 3.6. Soundness, exactly: every lossless per-node
verifier of every fixed-shape family stays at or below the rigorous bound, and the bound stays at
or below the tree-level optimum; block verification passes it on chains (the class is strict).
"""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from rheotheory import certify, random_pair, resolve
from rheotheory.cli import main
from rheotheory.errors import TreeError, VerifierError
from rheotheory.lp_optimum import tree_optimum
from rheotheory.node_bound import per_node_bound
from rheotheory.verify import TREE_VERIFIERS
from rheotheory.verify.optimum import optimum_sets, set_law_iid, set_law_wor

#: Rounding the float duals may add to the rigorous bound (far below any gap the bound reports).
SLACK = Fraction(1, 10**8)


@pytest.mark.parametrize("V,depth", [(2, 3), (3, 2), (4, 2)])
@pytest.mark.parametrize("seed", range(3))
def test_on_a_chain_the_bound_is_sequential(V, depth, seed):
    pair = random_pair(V, depth, seed=seed)
    method = resolve("chain", size=(1, depth, depth))
    b = per_node_bound(pair, method)
    tau = certify(pair, method.fit(verifier="sequential")).tokens_per_step
    assert tau <= b.upper <= tau + SLACK
    assert abs(b.value - float(tau)) < 1e-9


@pytest.mark.parametrize("mode,k", [("iid", 2), ("iid", 3), ("wor", 2), ("wor", 3)])
@pytest.mark.parametrize("seed", range(3))
def test_one_level_is_the_per_node_optimum(mode, k, seed):
    pair = random_pair(3, 1, seed=seed)
    method = resolve({"family": "static", "shape": [[i] for i in range(k)], "sampling": mode})
    Q = (set_law_iid if mode == "iid" else set_law_wor)(pair.q(()), k)
    best = 1 + optimum_sets(pair.p(()), Q)
    b = per_node_bound(pair, method)
    assert best <= b.upper <= best + SLACK


@pytest.mark.parametrize("spec", ["static-iid", "static-wor", "multichain", "multichain:sampling=wor:verifier=rrs-wor",
                                  "static:shape=[[0],[1],[0,0],[0,1],[1,0]]:sampling=iid"])
@pytest.mark.parametrize("seed", range(3))
def test_per_node_verifiers_below_the_bound_below_the_optimum(spec, seed):
    pair = random_pair(3, 3, seed=seed)
    method = resolve(spec, size=(2, 2, 4))
    b = per_node_bound(pair, method)
    opt = tree_optimum(pair, method)
    assert opt.exact
    assert b.upper <= opt.value + SLACK
    checked = 0
    for name in method.admitted_verifiers():
        if name in TREE_VERIFIERS:
            continue
        try:
            cert = certify(pair, method.fit(verifier=name))
        except VerifierError:
            continue  # not applicable to this tree
        if cert.lossless:
            assert cert.tokens_per_step <= b.upper, (spec, name)
            checked += 1
    assert checked >= 1


@pytest.mark.parametrize("seed", range(3))
def test_block_verification_passes_the_per_node_bound(seed):
    """Tree-level rules are outside the class: on a chain of two tokens block verification attains
    the optimum, which is above every per-node verifier's tau on a generic pair."""
    pair = random_pair(3, 2, seed=seed)
    method = resolve("chain", size=(1, 2, 2))
    b = per_node_bound(pair, method)
    block = certify(pair, method.fit(verifier="block")).tokens_per_step
    assert block > b.upper


def test_weights_reach_below_the_children():
    """A deeper subtree under position 0 is worth more: the bound uses it, so on a shape whose first
    child has children it exceeds the acceptance-only walk of the same nodes (rrs)."""
    pair = random_pair(3, 2, seed=1)
    method = resolve("static:shape=[[0],[1],[0,0]]:sampling=iid:verifier=rrs")
    b = per_node_bound(pair, method)
    assert b.upper > certify(pair, method).tokens_per_step


def test_dynamic_families_are_refused():
    with pytest.raises(TreeError, match="fixed shape"):
        per_node_bound(random_pair(3, 2, seed=0), resolve("rheo", size=(2, 2, 4)))


def test_cap(monkeypatch):
    import rheotheory.node_bound as nb

    monkeypatch.setattr(nb, "MAX_NODE_TUPLES", 10)
    with pytest.raises(TreeError, match="above the cap"):
        per_node_bound(random_pair(3, 2, seed=0), resolve("static-iid", size=(2, 2, 4)))


def test_cli_prints_and_writes_the_bound(capsys):
    assert main(["optimum", "--preset", "multichain", "--depth", "1"]) == 0
    out = capsys.readouterr().out
    assert "per-node best" in out and "% of the optimum" in out
    assert main(["optimum", "--preset", "multichain", "--depth", "1", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert 0 < d["per_node_bound"]["fraction_of_optimum_float"] <= 1 + 1e-8
    assert main(["optimum", "--preset", "eagle", "--depth", "1", "--budget", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["per_node_bound"] == {}
