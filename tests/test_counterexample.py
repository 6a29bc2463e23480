"""rheo counterexample: finds and shrinks a lossy instance for known-lossy methods, none for lossless ones."""

import json
from fractions import Fraction

import pytest

from rheotheory import make_method, resolve, ToyPair, certify, random_pair
from rheotheory.cli import main
from rheotheory.counterexample import drop_token, find_counterexample, lower_horizon, shrink


def test_true_proxy_counterexample_is_minimal_and_lossy():
    res = find_counterexample(make_method("rheo", proxy="true", verifier="ot"), instances=50, seed=0)
    assert res.found
    assert res.pair.vocab_size == 3 and res.method.depth <= 2 and res.method.top_k == 2
    cert = certify(res.pair, res.method)
    assert not cert.lossless and cert.max_deviation == res.max_deviation > 0
    # shrinking never makes anything bigger
    assert res.pair.vocab_size <= res.original_pair.vocab_size
    assert res.method.budget <= res.original_method.budget


def test_lossless_method_finds_nothing():
    res = find_counterexample(make_method("rheo", proxy="next", verifier="sequential", top_k=2, depth=2, budget=4),
                              instances=15, seed=0)
    assert not res.found and res.instances == 15


def test_shrink_rejects_lossless_input():
    with pytest.raises(ValueError):
        shrink(random_pair(3, 2, seed=0), make_method("rheo", proxy="next", top_k=2, depth=2, budget=4))


def test_drop_token_and_lower_horizon():
    pair = random_pair(3, 2, seed=1)
    small = drop_token(pair, 2)
    assert small.vocab_size == 2 and small.horizon == 2
    w = pair.p(())
    assert small.p(()) [0] == w[0] / (w[0] + w[1])
    assert lower_horizon(pair, 1).horizon == 1


def test_cli_json(capsys, tmp_path):
    out = tmp_path / "ce.json"
    rc = main(["counterexample", "--proxy", "true", "--verifier", "sequential", "--instances", "30",
               "--out", str(out), "--json"])
    assert rc == 1  # found: like certify on a loss
    d = json.loads(capsys.readouterr().out)
    assert d["found"] is True and set(d) >= {"instance", "max_deviation", "sequence"}
    assert Fraction(d["max_deviation"]) > 0
    pair = ToyPair.load(out)
    assert pair.to_dict() == d["instance"]
    m = resolve(d["method"])
    assert certify(pair, m).max_deviation == Fraction(d["max_deviation"])


def test_cli_none_found(capsys):
    rc = main(["counterexample", "--proxy", "next", "--verifier", "ot", "--top-k", "2", "--depth", "2",
               "--instances", "5"])
    assert rc == 0
    assert "none found in 5 instances" in capsys.readouterr().out


def test_cli_bad_input(capsys):
    assert main(["counterexample", "--instances", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--instances" in err


def test_search_space_rejects_unknown_family():
    from rheotheory.counterexample import SearchSpace

    with pytest.raises(ValueError):
        SearchSpace(family="bogus")


def test_logits_family_search_runs():
    from rheotheory.counterexample import SearchSpace, search

    assert search(make_method("rheo", proxy="next", top_k=2, depth=2, budget=4), instances=3, seed=0,
                  space=SearchSpace(max_top_k=2, max_depth=2, family="logits")) is None
