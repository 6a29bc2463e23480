"""Bring your own method (rheotheory.plugin): loading from outside the package, certificates that
no builder can change by how it draws, the strict mode and check_method (docs/theory.md 5.3)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from rheotheory.exact import ContractError, certify
from rheotheory.methods import FAMILIES, PRESETS, resolve
from rheotheory.pairs import example_pair
from rheotheory.plugin import PluginError, load_plugin
from rheotheory.testing import check_method

HERE = Path(__file__).parent
COIN = str(HERE / "plugins" / "coin.py")
PEEK = str(HERE / "plugins" / "peek.py")
FORK = str(HERE.parent / "docs" / "examples" / "fork_method.py")


pytestmark = pytest.mark.usefixtures("restore_registries")


def rheo(*args, cwd=None, env=None):
    """``rheo ARGS`` in a fresh process: (exit code, stdout, stderr)."""
    e = dict(os.environ, **(env or {}))
    r = subprocess.run([sys.executable, "-m", "rheotheory.cli", *args], capture_output=True, text=True, cwd=cwd,
                       env=e, timeout=300)
    return r.returncode, r.stdout, r.stderr


# -- certificates no builder can change by how it draws ------------------------------------------

def test_the_coin_builder_is_certified_lossless_and_its_hiding_twin_lossy():
    load_plugin(COIN)
    honest = certify(example_pair(), resolve("coin"))
    assert honest.lossless and honest.max_deviation == 0
    assert honest.classes == 2  # one class per law the child was drawn from (its token integrated)
    lying = certify(example_pair(), resolve("coin:hide=yes"))
    assert not lying.lossless
    assert lying.max_deviation == Fraction(41441, 1310400)  # what a token-only key certified the honest one at


def test_the_equivalence_key_carries_the_law_a_sampled_node_was_drawn_from():
    load_plugin(COIN)
    from rheotheory.exact import enumerate_classes

    enum = enumerate_classes(example_pair(), resolve("coin"))
    (a, b) = [c.tree for c in enum.classes.values()]
    strip = lambda key: (key[0], key[1], key[2], [k[:3] for k in key[4]])  # noqa: E731  (the key without laws)
    assert strip(a.canonical_key()) == strip(b.canonical_key())  # same tokens, kinds and positions
    assert a.canonical_key() != b.canonical_key()  # told apart by the law alone


@pytest.mark.parametrize("family", sorted(set(FAMILIES) - {"coin", "coin-global", "peek", "fork"}))
def test_strict_mode_passes_every_registered_family(family):
    """Strict certification (classes checked, grouped law = ungrouped law) of every family at a
    small size on the example pair; the presets of the family ride along."""
    specs = [family] + [name for name, p in PRESETS.items() if p.family == family]
    for spec in specs:
        cert = certify(example_pair(), resolve(spec, size=(2, 2, 3)), strict=True)
        assert cert.classes >= 1 and cert.max_deviation is not None


def test_strict_mode_checks_merged_trees_at_a_size_where_classes_merge():
    m = resolve("rheo-tuned", size="toy")
    cert = certify(example_pair(), m, strict=True)
    assert cert.classes < cert.branches  # merging happened, and was checked
    assert cert.lossless


def test_strict_mode_catches_a_builder_that_draws_outside_its_chooser():
    load_plugin(COIN)
    with pytest.raises(ContractError, match="reads global random state, numpy's global generator"):
        certify(example_pair(), resolve("coin-global"), strict=True)


def test_strict_mode_catches_a_verifier_that_reads_what_the_key_leaves_out():
    load_plugin(PEEK)
    m = resolve("peek", verifier="peek-score")
    plain = certify(example_pair(), m)  # merged by tokens and laws: wrong, and it cannot know
    assert plain.classes == 1
    with pytest.raises(ContractError, match="grouping changed the law of Z"):
        certify(example_pair(), m, strict=True)


# -- check_method, the contract a plugin author runs ---------------------------------------------

@pytest.mark.parametrize("spec", ["eagle", "rheo", "static-wor"])
def test_check_method_passes_built_in_families(spec):
    """Every registered family passes check_method (recorded by the contract's own run over all of
    them); three run here, on the example pair, to keep the default suite short."""
    report = check_method(spec, pairs=(None,), samples=2000)
    assert report.pairs and all(r["lossless"] for r in report.pairs)
    assert len(report.mc) == len(report.pairs)


def test_check_method_passes_the_honest_coin_and_names_the_lie_of_its_twin():
    load_plugin(COIN)
    assert all(r["lossless"] for r in check_method("coin", samples=2000).pairs)
    # the twin draws its child from the uniform law when the coin says so and tells the verifier q:
    # plain certification measures it (LOSSY, the test above); the contract names the lie
    with pytest.raises(AssertionError, match=r"check_method\(coin hide=yes .*drawn from law \[1/4, 1/4, 1/4, 1/4\] "
                       r"but declares \[9/34, 9/34, 5/17, 3/17\] to the verifier: a law drawn from that is not the "
                       r"law declared to the verifier .*rule 3"):
        check_method("coin:hide=yes", samples=0)


def test_check_method_fails_a_builder_that_draws_outside_its_chooser():
    load_plugin(COIN)
    with pytest.raises(AssertionError, match=r"check_method\(coin-global .*reads global random state, numpy's"):
        check_method("coin-global", samples=0)


def test_check_method_fails_a_verifier_that_reads_a_score():
    load_plugin(PEEK)
    with pytest.raises(AssertionError, match="grouping changed the law of Z"):
        check_method({"family": "peek", "verifier": "peek-score"}, samples=0)


def test_check_method_refuses_a_spec_that_does_not_resolve():
    with pytest.raises(AssertionError, match="does not resolve"):
        check_method("no-such-method")


# -- the door: files, modules, references, the environment ---------------------------------------

def test_a_reference_resolves_a_family_from_a_file_with_options():
    m = resolve(f"{FORK}:ForkMethod:width=3", size="toy")
    assert (m.family, m.width, m.depth, m.verifier) == ("fork", 3, 3, "my-rrs")


def test_a_verifier_reference_registers_a_rule_every_family_admits(tmp_path):
    rule = tmp_path / "rules.py"
    rule.write_text("from rheotheory.verify.rules import sequential\n\ndef mine(p, cands):\n"
                    "    return sequential(p, cands)\n")
    m = resolve("chain", size="toy", verifier=f"{rule}:mine")
    assert m.verifier == f"{rule}:mine"
    assert certify(example_pair(), m).lossless


def test_bad_plugins_are_one_line_errors(tmp_path):
    with pytest.raises(PluginError, match="does not exist"):
        load_plugin(str(tmp_path / "missing.py"))
    broken = tmp_path / "broken.py"
    broken.write_text("raise ValueError('boom')\n")
    with pytest.raises(PluginError, match="loading plugin .* failed: ValueError: boom"):
        load_plugin(str(broken))
    with pytest.raises(PluginError, match="has no 'Nope'"):
        resolve(f"{FORK}:Nope")


def test_every_command_takes_a_plugin_from_the_command_line(tmp_path):
    shutil.copy(FORK, tmp_path / "fork_method.py")
    rc, out, err = rheo("certify", "--plugin", "fork_method.py", "--preset", "fork", cwd=tmp_path)
    assert rc == 0 and "LOSSLESS" in out and "method          : fork width=2 D=3 verifier=my-rrs" in out, err
    rc, out, err = rheo("certify", "--preset", "fork_method.py:ForkMethod", "--verifier", "sequential", cwd=tmp_path)
    assert rc == 0 and "verifier=sequential" in out, err
    rc, out, err = rheo("certify", "--plugin", "fork_method", "--preset", "fork", "--width", "1", cwd=tmp_path)
    assert rc == 0 and "width=1" in out, err  # a module in the current folder
    rc, out, err = rheo("methods", cwd=tmp_path, env={"RHEO_PLUGINS": "fork_method.py"})
    assert rc == 0 and "fork" in out, err


@pytest.mark.parametrize("args,message", [
    (("certify", "--plugin", "missing.py"), "plugin file 'missing.py' does not exist"),
    (("certify", "--plugin", "no_such_module_here"), "cannot import plugin module 'no_such_module_here'"),
    (("certify", "--preset", "missing.py:Fork"), "plugin file 'missing.py' does not exist"),
    (("certify", "--verifier", "nope"), "unknown verifier 'nope'"),
])
def test_bad_plugin_arguments_exit_2_with_one_line(tmp_path, args, message):
    rc, out, err = rheo(*args, cwd=tmp_path)
    assert rc == 2 and message in err and err.count("\n") == 1 and "Traceback" not in err


def test_the_lying_coin_is_lossy_from_the_command_line(tmp_path):
    rc, out, err = rheo("certify", "--plugin", COIN, "--preset", "coin:hide=yes", "--json", cwd=tmp_path)
    assert rc == 1 and '"max_deviation": "41441/1310400"' in out, err
    rc, out, err = rheo("certify", "--plugin", COIN, "--preset", "coin", "--strict", cwd=tmp_path)
    assert rc == 0 and "LOSSLESS" in out, err


# -- one implementation, every tool: the audit drives the method's own code ----------------------

def test_the_audit_drives_a_methods_own_builder_and_rule_and_rejects_its_companion():
    """rheo audit --method: the method's own steps on the audit's toy laws (alpha 0.01, seed 0,
    600 runs per setting: detects a TV of about 0.15 in any one setting); the planted companion
    (the verifier's registered mutant) goes through the same adapter and is rejected."""
    from rheotheory.audit.core import run_audit
    from rheotheory.audit.engines.method import method_settings

    ok = run_audit("rheo-tuned", method_settings("rheo-tuned"), runs=600)
    assert ok.verdict == "lossless", ok
    bad = run_audit("rheo-tuned companion", method_settings("rheo-tuned", planted=True), runs=600)
    assert bad.verdict == "lossy" and bad.p_value < 1e-6


def test_the_audit_catches_a_plugin_builder_that_lies_about_its_law():
    load_plugin(COIN)
    from rheotheory.audit.core import run_audit
    from rheotheory.audit.engines.method import method_settings

    # NOTE: the peaked laws have no zeros: on the others the lie can hand the verifier a token its
    # claimed law gives 0, which the rule refuses (a VerifierError, exit 2) before any test
    peaked = lambda spec: [s for s in method_settings(spec) if s.name == "peaked laws"]  # noqa: E731
    honest = run_audit("coin", peaked("coin"), runs=600)
    lying = run_audit("coin:hide=yes", peaked("coin:hide=yes"), runs=600)
    assert honest.verdict == "lossless" and lying.verdict == "lossy", (honest.p_value, lying.p_value)


def test_hf_generate_runs_a_plugin_method():
    """transformers' generate with rheotheory.hf.generate takes a plugin's method by reference: the
    torch decoder runs the plugin's builder and rule (greedy at T = 0: the target's own argmax text)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from rheotheory import hf
    from rheotheory.audit.engines.tiny import PROMPT, tiny_pair

    target, draft = tiny_pair()
    prompt = torch.tensor([PROMPT])
    kw = dict(custom_generate=hf.generate, assistant_model=draft, tree_depth=2, max_new_tokens=8)
    sampled = target.generate(prompt, method=f"{FORK}:ForkMethod", do_sample=True,
                              generator=torch.Generator().manual_seed(0), **kw)
    assert sampled.shape == (1, len(PROMPT) + 8)
    greedy = target.generate(prompt, method=f"{FORK}:ForkMethod", do_sample=False, **kw)
    plain = target.generate(prompt, do_sample=False, max_new_tokens=8)
    assert greedy.tolist() == plain.tolist()


def test_an_audit_whose_companion_passes_is_inconclusive_not_a_pass():
    """At 20 runs a setting the planted companion of eagle is not rejected: the run could not have
    failed, so the command exits 2 with one line, never 0 (a CI step reads the exit code)."""
    rc, out, err = rheo("audit", "--method", "eagle", "--runs", "20", "--no-progress")
    assert rc == 2 and "inconclusive: the planted companion was not rejected at N = 20" in err, (rc, err)
    assert err.count("\n") == 1


def test_the_test_plugins_are_registered_only_inside_their_tests():
    """tests/plugins/ is kept out of collection (tests/conftest.py): imported there by
    --doctest-modules, its families would join every registry-wide test of the session."""
    assert not {"coin", "coin-global", "peek"} & set(FAMILIES)
    from rheotheory.verify.rules import VERIFIERS

    assert "peek-score" not in VERIFIERS


def test_a_rule_in_a_file_goes_inside_a_spec_for_resolve_and_check_method(tmp_path, monkeypatch):
    (tmp_path / "my_rules.py").write_text("from rheotheory.verify.rules import sequential\n\n\n"
                                          "def my_rule(p, candidates):\n    return sequential(p, candidates)\n")
    monkeypatch.chdir(tmp_path)
    m = resolve("chain:verifier=my_rules.py:my_rule:depth=2")
    assert (m.family, m.verifier, m.depth) == ("chain", "my_rules.py:my_rule", 2)
    report = check_method("chain:verifier=my_rules.py:my_rule", pairs=(None,), samples=0, lossless=True)
    assert report.pairs[0]["lossless"]
    with pytest.raises(Exception, match="bad option 'foo'"):  # a stray option is still refused
        resolve("rheo:m=1:foo")
