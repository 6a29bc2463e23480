"""``rheo audit --verifier-cmd``: a verifier program in any language (rheotheory.audit.process).

The program of most tests is tests/audit_program.py (the standard library only: standard rejection
sampling over the protocol, or one way of breaking it); the worked examples in C++ and Rust
(docs/examples/engines/) are built with Debian's compilers where they exist and audited here, and
skipped with the reason where they do not. Statistical tests state alpha, seed and N; each
correct program's test has a planted companion (the same program with a bug) that must fail.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from rheotheory.audit import LOSSLESS, LOSSY, api  # noqa: E402
from rheotheory.audit.process import ProcessVerifier, decode_answer, encode_call  # noqa: E402
from rheotheory.cli import main  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = f"{sys.executable} {ROOT / 'tests' / 'audit_program.py'}"
EXAMPLES = ROOT / "docs" / "examples" / "engines"


def test_a_call_round_trips_through_both_framings():
    """The encoder writes what the protocol says (docs/guide/audit-programs.md)."""
    toks = torch.tensor([2, 0])
    q = torch.tensor([[0.25, 0.75, 0.0], [0.5, 0.5, 0.0]])
    p = torch.tensor([[0.5, 0.5, 0.0], [0.1, 0.2, 0.7], [1.0, 0.0, 0.0]])
    line = json.loads(encode_call("json", "chain", 7, (toks, q, p)))
    assert line == {"seed": 7, "draft_tokens": [2, 0], "draft_probs": q.double().tolist(),
                    "target_probs": p.double().tolist()}
    data = encode_call("binary", "chain", 7, (toks, None, p))
    assert data[:4] == b"RHEO" and data[4] == 0 and data[5] == 0 and len(data) == 24 + 4 * 2 + 4 * 3 * 3
    tree = encode_call("binary", "tree", 9, (torch.tensor([-1, 0]), toks, q, p))
    assert tree[4] == 1 and tree[5] == 1 and len(tree) == 24 + 4 * 2 * 2 + 4 * 2 * 3 + 4 * 3 * 3
    assert decode_answer("json", b"[1, 2]") == [1, 2]
    assert decode_answer("binary", b"RHEO" + (2).to_bytes(4, "little") + bytes([1, 0, 0, 0, 2, 0, 0, 0])) == [1, 2]
    for bad in (b"yes", b"[1.5]", b'{"tokens": [1]}', b"[true]"):
        with pytest.raises(ValueError):
            decode_answer("json", bad)


@pytest.mark.parametrize("kind, framing, select", [("chain", "json", "k=2"), ("chain", "binary", "k=1"),
                                                    ("tree", "binary", "D=2")])
def test_a_correct_program_is_not_rejected_and_its_bug_is(kind, framing, select):
    """alpha 0.01, seed 0, N = 200 runs per setting (the chain settings with k = 2 or 1, the tree
    settings of depth 2): standard rejection sampling in another process, over each framing, is not
    rejected and follows the rule; the same program drawing the correction from p (the skipped
    residual: TV about 0.1 and corrections of probability 0 under the rule) is caught."""
    ok = api.audit_verifier(command=f"{PROGRAM} correct", kind=kind, framing=framing, runs=200, setting=select)
    assert ok.verdict == LOSSLESS and ok.rule["follows"] == "rejection" and ok.transport == "process", ok.summary()
    assert ok.companion.verdict == LOSSY
    bad = api.audit_verifier(command=f"{PROGRAM} skip-residual", kind=kind, framing=framing, runs=200,
                             setting=select, companion=False)
    assert bad.verdict in (LOSSY, api.DIFFERS), bad.summary()


@pytest.mark.parametrize("mode, message", [
    ("crash", "the program exited with code 1 during call 5; its standard error ended with: "
              "'RuntimeError: the verifier program failed'"),
    ("exit0", "the program exited with code 0 during call 5"),
    ("sigkill", "the program was killed by signal SIGKILL during call 5"),
    ("garbage", "the program answered 'accepted 2 tokens', expected one line holding a JSON array of token ids"),
    ("too-many", "expected an accepted prefix of the drafts, then one token"),
    ("bad-handshake", "the program answered the handshake with 'hello'"),
    ("ignore-seed", "the program ignores its per-call seed: two runs of setting 'chain k=1 generic' from the same "
                    "seeds differ"),
    ("fixed-seed", "the program's answers do not depend on its per-call seed"),
])
def test_a_program_that_breaks_the_protocol_gets_one_line_and_exit_2(mode, message, capsys):
    """Every contract check holds across the process boundary: a crash, an exit, a kill, a wrong
    answer, a program that ignores the seed or reseeds a constant at every call: one line on
    stderr naming what it did and the setting, exit 2, never a pass."""
    code = main(["audit", "--verifier-cmd", f"{PROGRAM} {mode} --at 5", "--runs", "20", "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and message in err, err


def test_a_hanging_program_is_killed_after_its_timeout(capsys):
    code = main(["audit", "--verifier-cmd", f"{PROGRAM} hang --at 3", "--runs", "20", "--call-timeout", "1",
                 "--no-progress", "--json"])
    out, err = capsys.readouterr()
    assert code == 2 and "the program did not answer call 3 within 1 s and was killed" in err, err
    assert json.loads(out)["exit"] == 2


@pytest.mark.parametrize("argv, message", [
    (["--verifier-cmd", "/no/such/program"], "the program '/no/such/program' could not be started"),
    (["--verifier-cmd", ""], "--verifier-cmd is empty"),
    (["--verifier", "rheotheory.audit.examples:chain_rejection", "--framing", "binary"], "apply to --verifier-cmd"),
    (["--verifier-cmd", "x", "--framing", "xml"], "invalid choice"),
    (["--verifier-cmd", "x", "--call-timeout", "0"], "expected a duration"),
    (["--verifier", "rheotheory.audit.examples:chain_rejection", "--verifier-cmd", "x"],
     "give one of --verifier, --verifier-cmd, --engine, --method, --endpoint and --list, not --verifier and "
     "--verifier-cmd"),
])
def test_bad_program_input_gets_one_line_and_exit_2(argv, message, capsys):
    code = main(["audit", *argv, "--runs", "20", "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and message in err, err


def test_a_program_is_started_once_and_stopped():
    v = ProcessVerifier(f"{PROGRAM} correct", "chain", 5)
    res = api.audit_verifier(v, "chain", runs=20, setting="k=1 generic", companion=False)
    assert res.verdict in (LOSSLESS, LOSSY) and v._proc is None  # NOTE: closed by the audit


def test_the_fixture_and_the_plugin_take_a_program(tmp_path):
    """``rheo_audit(command=...)`` in a test file, and ``pytest --rheo-audit-cmd``: the correct program
    passes (alpha 0.01, seed 0, N = 200 runs on the k = 1 settings), the buggy one fails with the
    audit's message and a reproduce line for the program."""
    (tmp_path / "test_prog.py").write_text(
        f"PROGRAM = {PROGRAM!r}\n\n"
        "def test_correct(rheo_audit):\n"
        "    rheo_audit(command=PROGRAM + ' correct', runs=200, setting='k=1')\n\n"
        "def test_buggy(rheo_audit):\n"
        "    rheo_audit(command=PROGRAM + ' skip-residual', runs=200, setting='k=1')\n")
    from importlib import metadata

    plugin = [] if "rheo_audit" in {e.name for e in metadata.entry_points(group="pytest11")} else [
        "-p", "rheotheory.audit.pytest_plugin"]
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin,
                        "test_prog.py"], capture_output=True, text=True,
                       cwd=tmp_path, timeout=900, env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    out = p.stdout + p.stderr
    assert "1 failed, 1 passed" in out, out
    assert "reproduce: rheo audit --verifier-cmd" in out and "skip-residual" in out, out
    empty = tmp_path / "empty"
    empty.mkdir()
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin, "--rheo-audit-cmd",
                        f"{PROGRAM} exit0", "--rheo-audit-runs", "20"], capture_output=True, text=True, cwd=empty,
                       timeout=900, env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    out = p.stdout + p.stderr
    assert p.returncode == 1 and "rheo-audit-cmd[" in out and "1 failed" in out, out
    assert "rheo audit: the program exited with code 0 during call 1" in out and "Traceback" not in out, out


# -- the worked examples in C++ and Rust ----------------------------------------------------------------


def _build(kind: str, folder: Path) -> str:
    if kind == "cpp":
        if shutil.which("g++") is None:
            pytest.skip("g++ is not installed (Debian: apt-get install g++)")
        exe = folder / "verify_cpp"
        cmd = ["g++", "-O2", "-std=c++17", "-o", str(exe), str(EXAMPLES / "verify.cpp")]
    else:
        if shutil.which("rustc") is None:
            pytest.skip("rustc is not installed (Debian: apt-get install rustc)")
        exe = folder / "verify_rs"
        cmd = ["rustc", "-O", "--edition", "2021", "-o", str(exe), str(EXAMPLES / "verify.rs")]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    return str(exe)


@pytest.fixture(scope="module", params=["cpp", "rust"])
def example(request, tmp_path_factory):
    return _build(request.param, tmp_path_factory.mktemp(request.param))


def _cli(*argv):
    p = subprocess.run([sys.executable, "-m", "rheotheory.cli", "audit", *argv, "--no-progress", "--json"],
                       capture_output=True, text=True, timeout=900, cwd=ROOT)
    return p.returncode, (json.loads(p.stdout) if p.stdout.strip() else None), p.stderr


@pytest.mark.parametrize("framing", ["json", "binary"])
def test_the_worked_example_passes_and_its_planted_bug_fails(example, framing):
    """The example built from docs/examples/engines/ (C++ or Rust), through ``rheo audit
    --verifier-cmd`` on the k = 2 chain settings (alpha 0.01, seed 0, N = 300 runs per setting): the
    correct program exits 0 and follows standard rejection sampling; with ``--bug skip-residual``
    (the correction drawn from p in 10% of rejections: corrections of probability 0 under every
    rule) it exits 1 or 3; with ``--bug ignore-seed`` it is refused, exit 2."""
    code, d, err = _cli("--verifier-cmd", example, "--framing", framing, "--runs", "300", "--setting", "k=2")
    assert code == 0 and d["verdict"] == "lossless" and d["rule"]["follows"] == "rejection", err
    assert d["companion"]["verdict"] == "lossy"
    code, d, err = _cli("--verifier-cmd", f"{example} --bug skip-residual", "--framing", framing, "--runs", "300",
                        "--setting", "k=2")
    assert code in (1, 3) and d["verdict"] in ("lossy", "differs"), err
    code, d, err = _cli("--verifier-cmd", f"{example} --bug ignore-seed", "--framing", framing, "--runs", "20")
    assert code == 2 and "ignores its per-call seed" in err, err


@pytest.mark.claims
def test_the_worked_examples_full_support_bug_is_caught(example):
    """``--bug accept-power`` (acceptance min(1, (p/q)^0.97), exact TV up to 0.016 on the k <= 2
    settings) through the binary framing at N = 1500 runs per setting on the 20 chain settings
    (alpha 0.01, seed 0): ``differs`` (or ``lossy``), while the correct program at the same size is not
    rejected."""
    code, d, err = _cli("--verifier-cmd", example, "--framing", "binary", "--runs", "1500", "--no-companion")
    assert code == 0, err
    code, d, err = _cli("--verifier-cmd", f"{example} --bug accept-power", "--framing", "binary", "--runs", "1500",
                        "--no-companion")
    assert code in (1, 3) and d["verdict"] in ("lossy", "differs"), err
