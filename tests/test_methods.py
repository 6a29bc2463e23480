"""The method registry: presets resolve the same everywhere, families are discovered, bad specs fail."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable

from rheotheory import certify
from rheotheory.cli import main
from rheotheory.errors import RheoError
from rheotheory.methods import FAMILIES, PRESETS, TREE_SIZES, Method, make_method, resolve
from rheotheory.testing import methods, toy_pairs
from rheotheory.verify import TREE_VERIFIERS

#: Every registered (family, admitted verifier) pair; a new family or verifier joins by registering.
PAIRS = [(f, v) for f in sorted(FAMILIES) for v in FAMILIES[f].admitted_verifiers()]
#: The pairs with field combinations not flagged lossy: all but a tree-level verifier registered as lossy
#: (its every method is flagged; ``test_methods_flagged_lossy_are_lossy`` finds its witness).
LOSSLESS_PAIRS = [(f, v) for f, v in PAIRS if not getattr(TREE_VERIFIERS.get(v), "lossy", None)]

#: Certified examples required per pair, and the examples hypothesis draws (derandomized: the same
#: examples every run). Depth <= 2, horizon = depth + 1, V in {2, 3}: each certifies in milliseconds.
MIN_CERTIFIED, EXAMPLES, MAX_DEPTH = 20, 20, 2
#: Examples searched for a lossy witness of a configuration flagged ``known_lossy``.
LOSSY_EXAMPLES = 30
#: Construction branches one flagged example may enumerate before it is passed over.
MAX_BRANCHES = 20_000

SETTINGS = dict(derandomize=True, database=None, deadline=None,
                suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])


@st.composite
def certifiable(draw, family, verifier, known_lossy=False):
    """(method, pair): a method of ``family`` verified by ``verifier`` and an exact toy pair whose
    horizon is one past the method's depth (every output length 1..D+1 is checked)."""
    method = draw(methods(families=[family], verifiers=[verifier], max_depth=MAX_DEPTH, known_lossy=known_lossy))
    pair = draw(toy_pairs(max_vocab=3, min_horizon=method.depth + 1, max_horizon=method.depth + 1))
    return method, pair


def _report(request, line: str) -> None:
    """Write one line to the terminal, past output capturing (the counts the suite reports)."""
    rep = request.config.pluginmanager.get_plugin("terminalreporter")
    capman = request.config.pluginmanager.get_plugin("capturemanager")
    if rep is None or capman is None:
        return
    with capman.global_and_fixture_disabled():
        rep.write_line("")
        rep.write_line(line)


@pytest.fixture(scope="module")
def certified_counts(request):
    """Certified examples per (family, verifier), printed after the module's tests."""
    counts = {}
    yield counts
    if counts:
        _report(request, f"certified examples per (family, verifier), {len(counts)} pairs: " + ", ".join(
            f"{f}/{v}={n}" for (f, v), n in sorted(counts.items())))


@pytest.mark.parametrize("family,verifier", LOSSLESS_PAIRS, ids=lambda x: x)
def test_every_registered_family_and_verifier_certifies_exactly_lossless(family, verifier, certified_counts):
    # exact rationals: the deviation must be exactly 0 for every method not flagged lossy
    done = []

    @settings(max_examples=EXAMPLES, **SETTINGS)
    @given(certifiable(family, verifier))
    def check(example):
        method, pair = example
        cert = certify(pair, method)
        assert cert.lossless and cert.max_deviation == 0, method.describe()
        assert 1 <= cert.tokens_per_step <= method.depth + 1
        done.append(method)

    check()
    certified_counts[(family, verifier)] = len(done)
    assert len(done) >= MIN_CERTIFIED, f"{family}/{verifier}: {len(done)} certified examples"


def _lossy_witness(family, verifier):
    """(flagged examples drawn, description of a flagged method found lossy or None) for one pair."""
    found, flagged = [], []

    @settings(max_examples=LOSSY_EXAMPLES, **SETTINGS)
    @given(certifiable(family, verifier, known_lossy=True))
    def check(example):
        method, pair = example
        flagged.append(method.known_lossy())
        if found:
            return
        try:
            dev = certify(pair, method, max_branches=MAX_BRANCHES).max_deviation
        except RheoError:  # NOTE: the enumeration outgrew the cap (the true proxy draws every sample)
            return
        if dev > 0:
            found.append(method.describe())

    try:
        check()
    except Unsatisfiable:  # NOTE: no field combination of this pair is flagged known-lossy
        pass
    return flagged, (found[0] if found else None)


def test_methods_flagged_lossy_are_lossy(request):
    # a flag must not hide a lossless method: for every registered pair with flagged field
    # combinations, the certifier finds a non-zero deviation on one of them (exact rationals)
    results = {pair: _lossy_witness(*pair) for pair in PAIRS}
    flagged = {pair: r for pair, r in results.items() if r[0]}
    _report(request, "flagged lossy, a lossy witness found: " + ", ".join(
        f"{f}/{v}" for (f, v), r in sorted(flagged.items()) if r[1]) + f"; {len(results) - len(flagged)} pairs have "
        "no flagged field combination")
    assert flagged, "no registered method is flagged lossy: the flag is never exercised"
    missing = [f"{f}/{v} ({r[0][0]})" for (f, v), r in flagged.items() if r[1] is None]
    assert not missing, f"flagged lossy yet exactly lossless on {LOSSY_EXAMPLES} examples: {missing}"


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
    with pytest.raises(RheoError, match="chain has no field 'budget'; its fields: verifier, depth"):
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
