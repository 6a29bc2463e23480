"""The method registry: presets resolve the same everywhere, families are discovered, bad specs fail."""

import json

import pytest
from hypothesis import HealthCheck, given, settings

from rheotheory import certify
from rheotheory.cli import main
from rheotheory.errors import RheoError
from rheotheory.methods import FAMILIES, PRESETS, TREE_SIZES, Method, make_method, resolve
from rheotheory.testing import methods, toy_pairs


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(methods(max_depth=2), toy_pairs(max_vocab=3, max_horizon=2))
def test_every_registered_family_is_exactly_lossless_unless_known_lossy(method, pair):
    # exact rationals: the deviation must be exactly 0 for every method not flagged lossy
    if method.depth > pair.horizon or method.known_lossy():
        return
    cert = certify(pair, method)
    assert cert.lossless and cert.max_deviation == 0, method.describe()
    assert 1 <= cert.tokens_per_step <= method.depth + 1


@pytest.mark.parametrize("name", sorted(PRESETS))
@pytest.mark.parametrize("row", sorted(TREE_SIZES))
def test_presets_resolve_at_every_size_and_round_trip(name, row):
    m = resolve(name, size=row)
    assert isinstance(m, Method) and m.family == PRESETS[name].family
    assert resolve(m.to_dict()) == m  # the JSON method object is a full spec
    for k, v in PRESETS[name].fields.items():
        assert getattr(m, k) == v


def test_unknown_names_are_errors_never_a_fall_through():
    with pytest.raises(RheoError, match="unknown method"):
        resolve("medusa", size="toy")
    with pytest.raises(RheoError, match="unknown method family"):
        make_method("static-iid")  # a preset, not a family
    with pytest.raises(RheoError, match="--budget does not apply to chain"):
        resolve("chain", size="toy", budget=4)


def test_a_one_module_family_reaches_every_command(capsys, tmp_path):
    # multichain lives in one module plus its import line in rheotheory/methods/__init__.py
    assert "multichain" in FAMILIES
    assert main(["certify", "--preset", "multichain", "--width", "2", "--depth", "2", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["lossless"] and d["method"]["family"] == "multichain" and d["method"]["width"] == 2
    assert main(["mc", "--preset", "multichain", "--depth", "2", "--vocab", "50", "--samples", "100", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["method"]["family"] == "multichain"
    assert main(["counterexample", "--preset", "multichain", "--depth", "2", "--instances", "3"]) == 0
    assert "none found in 3 instances" in capsys.readouterr().out
    assert main(["sweep", "--vocab", "50", "--no-sparse", "--mismatch", "low", "--temperatures", "1", "--trees",
                 "2,2,4", "--methods", "eagle", "multichain:width=2", "--steps", "5", "--workers", "1",
                 "--out", str(tmp_path), "--no-plot", "--no-progress"]) == 0
    assert "multichain" in capsys.readouterr().out
    assert main(["methods", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert "multichain" in {f["name"] for f in listed["families"]}


def test_certify_and_mc_report_the_same_method_object(capsys):
    argv = ["--preset", "rheo-tuned", "--top-k", "2", "--depth", "2", "--budget", "4"]
    assert main(["certify", *argv, "--json"]) == 0
    cert = json.loads(capsys.readouterr().out)
    assert main(["mc", *argv, "--vocab", "20", "--samples", "50", "--json"]) == 0
    mc = json.loads(capsys.readouterr().out)
    assert cert["method"] == mc["method"] == resolve("rheo-tuned", size=(2, 2, 4)).to_dict()


def test_a_flag_of_another_family_is_an_error(capsys):
    assert main(["certify", "--preset", "eagle", "--proxy", "tail"]) == 2
    assert capsys.readouterr().err.strip() == (
        "rheo: error: --proxy does not apply to eagle (its options: --verifier, --top-k, --depth, --budget)")


def test_a_registered_tree_level_verifier_is_admitted_by_the_families_it_names(capsys):
    from rheotheory.verify import TREE_VERIFIERS, PerNodeWalk, get_verifier, register_tree_verifier

    class Delegating(PerNodeWalk):
        """A stand-in tree-level verifier: the sequential walk under another name."""

    tv = register_tree_verifier(Delegating(get_verifier("sequential"), "test-walk"), families=("chain",))
    try:
        assert "test-walk" in FAMILIES["chain"].admitted_verifiers()
        assert "test-walk" not in FAMILIES["eagle"].admitted_verifiers()
        m = make_method("chain", depth=2, verifier="test-walk")
        assert m.tree_verifier is tv
        from rheotheory import example_pair

        a, b = certify(example_pair(), m), certify(example_pair(), make_method("chain", depth=2))
        assert a.lossless and a.tokens_per_step == b.tokens_per_step
        assert main(["certify", "--preset", "chain", "--depth", "2", "--verifier", "test-walk", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["method"]["verifier"] == "test-walk"
        with pytest.raises(RheoError, match="does not apply to eagle"):
            make_method("eagle", verifier="test-walk")
    finally:
        TREE_VERIFIERS.pop("test-walk")
