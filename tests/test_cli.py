"""The `rheo` command line: the certify contract and one-line errors with exit code 2."""

import json
import subprocess
import sys

import pytest

from rheotheory import random_pair
from rheotheory.cli import main


def run(*args):
    return subprocess.run([sys.executable, "-m", "rheotheory.cli", *args], capture_output=True, text=True)


def test_certify_json_contract(tmp_path, capsys):
    path = tmp_path / "i.json"
    random_pair(3, 2, seed=1).save(path)
    assert main(["certify", str(path), "--method", "rheo", "--top-k", "2", "--depth", "2", "--budget", "3",
                 "--proxy", "next", "--verifier", "ot", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["lossless"] is True and out["max_deviation"] == "0"
    for key in ("tokens_per_step", "outcomes", "classes"):
        assert key in out
    assert "/" in out["tokens_per_step"] or out["tokens_per_step"].isdigit()


def test_certify_reports_a_lossy_method(tmp_path, capsys):
    path = tmp_path / "i.json"
    random_pair(3, 2, seed=0).save(path)
    assert main(["certify", str(path), "--top-k", "2", "--depth", "2", "--budget", "2", "--proxy", "true",
                 "--json"]) == 1  # LOSSY
    out = json.loads(capsys.readouterr().out)
    assert out["lossless"] is False and out["max_deviation"] != "0" and out["worst_sequence"]


def test_certify_default_and_float_text_report(capsys):
    assert main(["certify"]) == 0
    assert "LOSSLESS" in capsys.readouterr().out
    assert main(["certify", "--float", "--method", "static", "--shape", "[[0],[1]]", "--verifier", "kseq"]) == 0
    assert "float64" in capsys.readouterr().out


@pytest.mark.parametrize("args,msg", [
    (["certify", "missing.json"], "cannot read"),
    (["certify", "--top-k", "0"], "must be >= 1"),
    (["certify", "--method", "static", "--shape", "[[0],[0,0]]", "--budget", "5"], "contradicts the shape"),
    (["certify", "--method", "chain", "--shape", "[[0]]"], "--shape does not apply to chain"),
    (["certify", "--preset", "eagle", "--head", "1"], "--head does not apply to eagle"),
    (["certify", "--preset", "nonesuch"], "unknown method"),
    (["certify", "--preset", "rheo:m=x"], "head must be"),
    (["certify", "--depth", "7"], "horizon"),
    (["certify", "--method", "eagle", "--verifier", "kseq"], "does not apply"),
    (["certify", "--head", "5"], "head"),
    (["certify", "--proxy", "bogus"], "invalid choice"),
    (["instance", "--vocab", "x"], "not an integer"),
    (["decode", "--draft-temperature", "0"], "must be > 0"),
])
def test_bad_input_one_line_exit_2(args, msg):
    r = run(*args)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and msg in lines[0], r.stderr
    assert "Traceback" not in r.stderr


def test_instance_command_round_trip(tmp_path):
    r = run("instance", "--vocab", "3", "--horizon", "2", "--seed", "4")
    assert r.returncode == 0
    path = tmp_path / "i.json"
    path.write_text(r.stdout)
    r2 = run("certify", str(path), "--depth", "2", "--json")
    assert r2.returncode == 0 and json.loads(r2.stdout)["lossless"] is True


def test_runaway_enumeration_stops_with_one_line():
    r = run("certify", "--proxy", "true", "--max-branches", "10")
    assert r.returncode == 2 and "exceeded 10 construction branches" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_a_flag_families_share_takes_what_the_chosen_family_takes():
    """--t-hat is > 0 for adaptive and >= 0 for online: 0 certifies rheo-online at T = 0 (where its
    feedback=greedy and explore_t0 act) and is refused for rheo-adaptive, in one line, exit 2."""
    ok = run("certify", "--preset", "rheo-online", "--feedback", "greedy", "--t-hat", "0", "--top-k", "2",
             "--depth", "2", "--budget", "3", "--steps", "2", "--generate", "3,5,11")
    assert ok.returncode == 0 and "LOSSLESS" in ok.stdout, ok.stderr
    bad = run("certify", "--preset", "rheo-adaptive", "--t-hat", "0")
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0 and "t_hat must be" in bad.stderr
    neg = run("certify", "--preset", "rheo-online", "--t-hat", "-1")
    assert neg.returncode == 2 and "must be a finite number" in neg.stderr


def test_a_missing_optional_package_is_one_line_naming_its_extra(monkeypatch, capsys, tmp_path):
    """The lean install (pip install -e .) sweeps without matplotlib (no PNG, one warning), and a
    command that needs a missing extra says which, in one line, exit 2, never a traceback."""
    from rheotheory.cli import main

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # NOTE: import matplotlib now fails as if absent
    assert main(["sweep", "--temperatures", "1", "--methods", "eagle", "--steps", "5", "--workers", "1", "--out",
                 str(tmp_path / "sw"), "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "no PNG: the plot needs matplotlib, which is not installed: pip install -e '.[dev]'" in err
    assert (tmp_path / "sw" / "sweep.csv").exists() and not (tmp_path / "sw" / "sweep.png").exists()
    monkeypatch.setitem(sys.modules, "torch", None)
    assert main(["decode", "--prompt", "a", "--max-new-tokens", "2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "needs torch, which is not installed: pip install -e '.[torch]'" in err
