"""Malformed command lines, for every subcommand: one line on stderr, exit code 2, no
traceback, in bounded time.

The rules live in the argument types of ``rheotheory.cli.args`` and the instance reader
(``rheotheory.pairs``); this table checks that every kind of bad input reaches one of them.
Hostile instance *contents* are covered by tests/test_inputs.py; a few reach the reader
through the CLI here. ``benchmarks/cli_fuzz.py`` runs a larger generated table in subprocesses.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from rheotheory.cli import main
from rheotheory.testing import hang_guard

#: Hang detector per in-process invocation (testing.hang_guard, not a speed target).
HANG_SECONDS = 60.0

BIG = "9" * 4301  # over Python's 4300-digit int-from-text limit
TOO_BIG_SEED = str(2**64)

#: (argv, a fragment the one error line must contain). Every kind: wrong type, out of range,
#: NaN/inf, huge integers, empty lists, flags of another family, pair flags with an instance,
#: K > V, oversize work, unwritable --out, hostile instance files, seeds beyond 64 bits, threads.
CASES = [
    # certify
    (["certify", "--top-k", "x"], "not an integer"),
    (["certify", "--top-k", BIG], "--top-k"),
    (["certify", "--top-k", "5"], "exceeds the vocabulary"),  # K > V of the built-in example (V=4)
    (["certify", "--preset", "eagle", "--head", "1"], "--head does not apply to eagle"),
    (["certify", "--max-branches", "0"], "must be >= 1"),
    (["certify", "--top-k", "4", "--budget", "30", "--max-branches", "10"], "--max-branches"),
    (["certify", "--max-entries", "-1"], "must be >= 1"),
    # mc
    (["mc", "--samples", "1"], "--samples"),
    (["mc", "--samples", "nan"], "not an integer"),
    (["mc", "--temperature", "nan"], "not finite"),
    (["mc", "--temperature", "inf"], "not finite"),
    (["mc", "--temperature", "1e-9"], "MIN_TEMPERATURE"),
    (["mc", "--temperature", "-1"], ">= 0"),
    (["mc", "--vocab", "1"], "in 2.."),
    (["mc", "--vocab", str(10**7)], "in 2.."),
    (["mc", "--vocab", "3", "--top-k", "4"], "exceeds the vocabulary"),
    (["mc", "--samples", str(10**9)], "--max-work"),
    (["mc", "--depth", str(10**12)], "--max-work"),
    (["mc", "--mismatch", "inf"], "mismatch"),
    (["mc", "--alpha", "1"], "< 1"),
    (["mc", "--min-expected", "0.5"], ">= 1"),
    (["mc", "--seed", TOO_BIG_SEED], "0..9223372036854775807"),
    (["mc", "--seed", "-1"], "0..9223372036854775807"),
    (["mc", "--preset", "chain", "--proxy", "tail"], "--proxy does not apply to chain"),
    (["mc", "--shape", "[[0]]"], "--shape does not apply to rheo"),
    # sweep
    (["sweep", "--temperatures", ""], "the list is empty"),
    (["sweep", "--methods", ""], "the list is empty"),
    (["sweep", "--trees", "2000,3,8"], "exceeds the vocabulary"),
    (["sweep", "--trees", "1,2"], "K,D,N"),
    (["sweep", "--steps", str(10**8)], "--max-work"),
    (["sweep", "--max-work", "1.5"], "not a whole number"),
    (["certify", "--preset", "rheo-adaptive", "--sampled-from", "nan"], "sampled_from"),
    (["certify", "--preset", "rheo-adaptive", "--sampled-from", "-1"], "sampled_from"),
    (["certify", "--preset", "rheo-adaptive", "--below", "x"], "--below"),
    (["certify", "--preset", "rheo-adaptive", "--eagle-below", "0"], "eagle_below"),
    (["certify", "--preset", "rheo-adaptive", "--decay", "3/2"], "decay"),
    (["certify", "--preset", "rheo-adaptive", "--accept", "0"], "accept"),
    (["certify", "--preset", "rheo-adaptive", "--verifier", "traversal"], "head 0 only"),
    (["certify", "--preset", "eagle", "--sampled-from", "1"], "--sampled-from does not apply to eagle"),
    (["sweep", "--max-work", "1e30"], "1..1e18"),
    (["sweep", "--steps", str(10**8), "--max-work", "1e11"], "over the cap of 1e+11"),  # as its help shows it
    (["sweep", "--vocab", BIG], "not an integer"),
    (["sweep", "--stem", "../x"], "plain file name"),
    (["sweep", "--workers", "100000"], "in 1.."),
    (["sweep", "--methods", "nosuch", "--steps", "2"], "unknown method"),
    # counterexample
    (["counterexample", "--top-k", "1", "--head", "0"], "--top-k must be in 2..--max-vocab"),
    (["counterexample", "--top-k", "5"], "--top-k must be in 2..--max-vocab"),
    (["counterexample", "--depth", "1"], "--depth must be >= 2"),
    (["counterexample", "--budget", "2"], "--budget must be >= --top-k"),
    (["counterexample", "--max-vocab", "2"], "in 3..8"),
    (["counterexample", "--max-vocab", "50"], "in 3..8"),
    (["counterexample", "--instances", str(10**7)], "in 1..1000000"),
    (["counterexample", "--max-vocab", "8", "--top-k", "8", "--budget", "16", "--depth", "4",
      "--instances", "100000"], "--max-branches"),
    (["counterexample", "--out", "/nonexistent-folder/x.json"], "does not exist"),
    # instance
    (["instance", "--vocab", "0"], ">= 1"),
    (["instance", "--vocab", "100000", "--horizon", "5"], "--max-entries"),
    (["instance", "--mismatch", "2"], "<= 1"),
    (["instance", "--kind", "logits", "--temperature", "1e-9"], "MIN_TEMPERATURE"),
    (["instance", "--horizon", BIG], "not an integer"),
    (["instance", "--seed", TOO_BIG_SEED], "0..9223372036854775807"),
    # methods
    (["methods", "--json", "extra"], "unrecognized arguments"),
    # decode
    (["decode", "--threads", "100000"], "in 1.."),
    (["decode", "--temperature", "1e-300"], "MIN_TEMPERATURE"),
    (["decode", "--draft-temperature", "0"], "MIN_TEMPERATURE"),
    (["decode", "--max-new-tokens", "100000"], "positions"),
    (["decode", "--target-top-k", "100000"], "vocabulary"),
    (["decode", "--top-k", "1000"], "exceeds the vocabulary"),
    (["decode", "--preset", "chain", "--proxy", "tail"], "--proxy does not apply to chain"),
    (["decode", "--seed", TOO_BIG_SEED], "0..9223372036854775807"),
    # bench
    (["bench", "--temperatures", ""], "empty"),
    (["bench", "--temperatures", "1,,0"], "empty item"),
    (["bench", "--temperatures", "nan"], "not finite"),
    (["bench", "--methods", ""], "empty"),
    (["bench", "--repeats", "1001"], "in 1..1000"),
    (["bench", "--max-new-tokens", "100000"], "positions"),
    (["bench", "--preset", "rheo"], "--preset does not apply"),
    (["bench", "--threads", "100000"], "in 1.."),
    # audit
    (["audit", "--runs", "5", "--verifier", "rheotheory.audit.examples:chain_rejection"], "must be >= 20"),
    (["audit", "--vocab", "65", "--verifier", "rheotheory.audit.examples:chain_rejection"], "in 2..64"),
    (["audit", "--kind", "dag", "--verifier", "rheotheory.audit.examples:chain_rejection"], "invalid choice"),
    (["audit", "--alpha", "1", "--verifier", "rheotheory.audit.examples:chain_rejection"], "--alpha"),
    (["audit", "--verifier", "x:y", "--engine", "transformers"], "not allowed with"),
    # head
    (["head", "export", "no/such/folder", "out"], "is not a folder"),
    (["head", "show", "x"], "invalid choice"),
    (["head", "export", "x", "out", "--dtype", "int8"], "invalid choice"),
    # optimum (shared method flags and caps)
    (["optimum", "--top-k", BIG], "--top-k"),
    (["optimum", "--preset", "eagle", "--head", "1"], "--head does not apply to eagle"),
    (["optimum", "--max-branches", "0"], "must be >= 1"),
    # any command: newlines in unknown arguments stay on one line
    (["mc", "--no-such\nflag"], "unrecognized arguments"),
]


def _one_line_exit_2(argv, capsys, fragment):
    with hang_guard(HANG_SECONDS, " ".join(argv)[:60]):
        code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, (argv, code, err)
    assert err.count("\n") == 1 and err.endswith("\n"), (argv, err)
    assert "Traceback" not in err
    assert fragment in err, (argv, err)


@pytest.mark.parametrize("argv,fragment", CASES, ids=[" ".join(a)[:60] for a, _ in CASES])
def test_bad_command_line(argv, fragment, capsys):
    _one_line_exit_2(argv, capsys, fragment)


def test_every_subcommand_is_covered():
    from rheotheory.cli import COMMANDS

    covered = {argv[0] for argv, _ in CASES}
    assert set(COMMANDS) <= covered


@pytest.mark.parametrize("flag,value", [("--temperature", "1"), ("--vocab", "50"), ("--pair-seed", "1")])
def test_pair_flags_with_an_instance_file(flag, value, tmp_path, capsys):
    path = tmp_path / "i.json"
    assert main(["instance", "--vocab", "3", "--horizon", "2"]) == 0
    path.write_text(capsys.readouterr().out)
    _one_line_exit_2(["mc", str(path), flag, value], capsys, "does not apply with an instance file")


def test_k_larger_than_the_instance_vocabulary(tmp_path, capsys):
    path = tmp_path / "i.json"
    assert main(["instance", "--vocab", "3", "--horizon", "3"]) == 0
    path.write_text(capsys.readouterr().out)
    for cmd in ("certify", "mc"):
        _one_line_exit_2([cmd, str(path), "--top-k", "4"], capsys, "exceeds the vocabulary")


@pytest.mark.parametrize("kind,fragment", [("non-utf8", "not UTF-8"), ("nested", "MAX_JSON_DEPTH"),
                                           ("fifo", "not a regular file"), ("folder", "not a regular file")])
def test_hostile_instance_files_through_the_cli(kind, fragment, tmp_path, capsys):
    path = tmp_path / "bad.json"
    if kind == "non-utf8":
        path.write_bytes(b'{"vocab_size": 2, "\xff": 1}')
    elif kind == "nested":
        path.write_text("[" * 100000 + "]" * 100000)
    elif kind == "fifo":
        os.mkfifo(path)  # NOTE: opening it to read would block until a writer came
    else:
        path.mkdir()
    for cmd in ("certify", "mc"):
        _one_line_exit_2([cmd, str(path)], capsys, fragment)


def test_unwritable_out(tmp_path, capsys):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        if os.access(folder, os.W_OK):  # NOTE: root ignores permissions; nothing to test then
            pytest.skip("running as root")
        _one_line_exit_2(["counterexample", "--out", str(folder / "x.json")], capsys, "not writable")
        _one_line_exit_2(["sweep", "--out", str(folder / "sub"), "--steps", "2"], capsys, "--out")
    finally:
        folder.chmod(0o700)


def test_out_that_is_a_folder_or_a_device(tmp_path, capsys):
    _one_line_exit_2(["counterexample", "--out", str(tmp_path)], capsys, "is a folder")
    _one_line_exit_2(["counterexample", "--out", os.devnull], capsys, "not a regular file")
    (tmp_path / "file").write_text("")
    _one_line_exit_2(["sweep", "--out", str(tmp_path / "file"), "--steps", "2"], capsys, "not a folder")


def _rheo(*argv, timeout=60, **kw):
    return subprocess.run([sys.executable, "-m", "rheotheory.cli", *argv], capture_output=True, text=True,
                          timeout=timeout, **kw)


def test_broken_pipe_is_quiet():
    p = subprocess.run(f"{sys.executable} -m rheotheory.cli methods | head -1", shell=True, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.count("\n") == 1
    assert "Traceback" not in p.stderr and p.stderr == ""


def test_decode_threads_beyond_the_cores_does_not_crash():
    p = _rheo("decode", "--threads", "100000")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr


def test_ctrl_c_stops_a_long_run_with_one_line():
    """A real SIGINT to `rheo mc --samples 200000` (minutes of work): exit 130, one line, promptly.

    The child says when its imports are done (on a loaded machine they take seconds), so the
    signal lands in the run, not in the interpreter's start-up.
    """
    # NOTE: the child restores Python's own SIGINT handler first: a test run started in the
    # background of a shell without job control ignores SIGINT, and its children inherit that.
    code = ("import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
            "from rheotheory.cli import main; print('ready', flush=True); "
            "sys.exit(main(['mc', '--samples', '200000', '--no-progress']))")  # NOTE: no estimate line
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline() == "ready\n"
    time.sleep(1)
    assert p.poll() is None, "the run finished before the signal"
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 130, (p.returncode, err)
    assert err == "rheo: interrupted\n"
