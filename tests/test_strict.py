"""The strict mode (rheotheory.strict, docs/theory.md section 5.3): a builder that breaks the
contract is refused with its fault named, the same way in every run; one that keeps it (a harmless
cache included) is certified as before; a lossy method that keeps it is measured, not refused."""

from __future__ import annotations

import random
import re
from fractions import Fraction
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rheotheory.exact import ContractError, certify
from rheotheory.methods import resolve
from rheotheory.pairs import example_pair
from rheotheory.plugin import load_plugin
from rheotheory.testing import check_method

PLANTED = str(Path(__file__).parent / "plugins" / "planted.py")

#: fault -> what every strict run must say (None: LOSSLESS, deviation exactly 0)
EXPECTED = {
    "none": None,
    "cache": None,
    "rng-law": r"reads global random state, numpy's global generator .*rule 1.*weighted with a law|"
               r"reads global random state, numpy's global generator .*rule 1.*\(rule 2\)",
    "random-law": r"reads global random state, Python's random module.*rule 1.*\(rule 2\)",
    "counter-law": r"keeps state between calls.*rule 1.*\(rule 2\)",
    "rng-token": r"reads global random state, numpy's global generator .*no draw of its chooser produced.*rule 3",
    "lie": r"drawn from law \[1/4, 1/4, 1/4, 1/4\] but declares \[9/34, 9/34, 5/17, 3/17\] to the verifier: a law "
           r"drawn from that is not the law declared to the verifier .*rule 3",
}

#: Strict runs per planted builder, each after the process's global generators were seeded
#: differently: the verdict must be the same every time.
RUNS = 10


pytestmark = pytest.mark.usefixtures("restore_registries")


def _verdict(spec: str) -> str:
    try:
        cert = certify(example_pair(), resolve(spec), strict=True)
    except ContractError as e:
        return f"refused: {e}"
    return f"LOSSLESS {cert.max_deviation}" if cert.lossless else f"LOSSY {cert.max_deviation}"


@pytest.mark.parametrize("fault", sorted(EXPECTED))
def test_each_planted_builder_gets_the_same_strict_verdict_in_every_run(fault):
    load_plugin(PLANTED)
    verdicts = set()
    for seed in range(RUNS):
        random.seed(seed)
        np.random.seed(seed)
        verdicts.add(_verdict(f"planted:fault={fault}"))
    assert len(verdicts) == 1, verdicts
    (verdict,) = verdicts
    if EXPECTED[fault] is None:
        assert verdict == "LOSSLESS 0"
    else:
        assert verdict.startswith("refused: ") and re.search(EXPECTED[fault], verdict), verdict


@pytest.mark.parametrize("fault", ["rng-law", "random-law", "counter-law", "rng-token", "lie"])
def test_check_method_names_the_fault_of_each_planted_builder(fault):
    load_plugin(PLANTED)
    with pytest.raises(AssertionError) as e:
        check_method(f"planted:fault={fault}", pairs=(None,), samples=0)
    assert re.search(EXPECTED[fault], str(e.value)), str(e.value)


def test_check_method_passes_the_harmless_cache():
    load_plugin(PLANTED)
    report = check_method("planted:fault=cache", pairs=(None,), samples=2000, lossless=True)
    assert report.pairs[0]["lossless"]


def test_strict_mode_leaves_the_global_generators_as_it_found_them():
    load_plugin(PLANTED)
    random.seed(7)
    np.random.seed(7)
    before = random.random(), np.random.random()
    random.seed(7)
    np.random.seed(7)
    certify(example_pair(), resolve("rheo", size=(2, 2, 3)), strict=True)
    with pytest.raises(ContractError):
        certify(example_pair(), resolve("planted:fault=rng-law"), strict=True)
    assert (random.random(), np.random.random()) == before


def test_a_lossy_method_that_keeps_the_contract_is_measured_not_refused():
    # the sampled child's own q(x) as its proxy: selection bias, through honest draws (theory 2.2)
    cert = certify(example_pair(), resolve("rheo:proxy=true", size="toy"), strict=True)
    assert not cert.lossless and cert.max_deviation == Fraction(1, 25)


def test_without_strict_the_contract_is_trusted_and_the_docs_say_so():
    load_plugin(PLANTED)
    # the counter builder fools the plain enumeration (weights from one law, draws from another)
    plain = certify(example_pair(), resolve("planted:fault=counter-law"))
    assert plain.lossless  # NOTE: wrong, and the reason --strict exists (docs/theory.md section 5.3)
    theory = (Path(__file__).resolve().parent.parent / "docs" / "theory.md").read_text()
    assert "The plain enumeration trusts these rules" in theory and "Rule 3" in theory


@pytest.mark.parametrize("fault, code", [("none", 0), ("rng-law", 2), ("lie", 2)])
def test_the_strict_command_exits_0_when_lossless_and_2_when_the_contract_is_broken(fault, code, tmp_path):
    r = subprocess.run([sys.executable, "-m", "rheotheory.cli", "certify", "--plugin", PLANTED, "--preset",
                        f"planted:fault={fault}", "--strict"], capture_output=True, text=True, cwd=tmp_path,
                       timeout=300)
    assert r.returncode == code, r.stderr
    if code == 2:
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
        assert "docs/theory.md section 5.3, rule" in r.stderr


def test_a_plugins_certificate_says_its_contract_was_trusted_and_strict_says_checked(tmp_path):
    r = subprocess.run([sys.executable, "-m", "rheotheory.cli", "certify", "--plugin", PLANTED, "--preset",
                        "planted:fault=counter-law"], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert "contract        : trusted, not checked (a plugin's builder; --strict checks it)" in r.stdout
    r = subprocess.run([sys.executable, "-m", "rheotheory.cli", "certify", "--preset", "rheo", "--strict", "--json"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert '"contract": "checked"' in r.stdout
