"""One command-line grammar: list flags, exit codes, --json / --no-progress everywhere, the
progress and sizing rule (estimate, cap, announce, bar), and the messages that name what is wrong.

Every case runs in-process through :func:`rheotheory.cli.main` (no subprocess start-up) and stops
before heavy work: the runs refused up front are refused by their estimate, not after the work.
"""

from __future__ import annotations

import argparse
import json

import pytest

from rheotheory.cli import build_parser, main
from rheotheory.cli.args import (ANNOUNCE_SECONDS, EXIT_BAD_INPUT, EXIT_LOSSLESS, EXIT_LOSSY, ListArg, announce,
                                 progress_on, split_list)
from rheotheory.errors import RheoError
from rheotheory.methods import resolve
from rheotheory.pairs import random_pair


def subparsers():
    ap = build_parser()
    sub = next(a for a in ap._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices


#: Two valid items of every list flag, for the grammar check.
LIST_ITEMS = {"--methods": ("eagle", "rheo"), "--temperatures": ("0", "1"), "--mismatch": ("low", "high"),
              "--trees": ("4,4,16", "10,6,60"), "--verifiers": ("ot", "sequential")}


def list_flags():
    for name, p in subparsers().items():
        for a in p._actions:
            if isinstance(a, ListArg):
                yield name, a.option_strings[0]


def list_metavar(command, flag):
    return next(a.metavar for a in subparsers()[command]._actions if flag in a.option_strings)


def test_every_flag_taking_several_values_is_a_list_flag():
    for name, p in subparsers().items():
        for a in p._actions:
            if a.nargs in ("+", "*") and a.option_strings:
                assert isinstance(a, ListArg), f"rheo {name} {a.option_strings[0]} has its own list grammar"
    assert {flag for _, flag in list_flags()} == set(LIST_ITEMS)


@pytest.mark.parametrize("command,flag", sorted(set(list_flags())))
def test_commas_spaces_or_both_mean_the_same_list(command, flag):
    a, b = LIST_ITEMS[flag]
    forms = [[f"{a},{b}"], [a, b], [f"{a},", b], [f"{a}, {b}"], [a, f",{b}"]]
    parsed = [getattr(build_parser().parse_args([command, flag, *form]), flag[2:].replace("-", "_"))
              for form in forms]
    assert all(p == parsed[0] for p in parsed), parsed
    assert len(parsed[0]) == 2


@pytest.mark.parametrize("command,flag", sorted(set(list_flags())))
def test_the_help_shows_one_form_of_each_list(command, flag, capsys):
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    usage = " ".join(out.split("\n\n")[0].split())
    assert f"[{flag} {list_metavar(command, flag)}]" in usage  # NOTE: argparse's own form is "X [X ...]"
    assert "separate items by commas or spaces" in " ".join(out.split())


@pytest.mark.parametrize("argv,fragment", [
    (["sweep", "--methods", "eagle,,rheo"], "empty item"),
    (["bench", "--temperatures", ","], "empty item"),
    (["sweep", "--trees", "4,4,16,10,6"], "multiple of 3"),
    (["sweep", "--temperatures", "0", "x"], "'x' is not a number"),
])
def test_a_bad_list_is_one_line_and_exit_2(argv, fragment, capsys):
    assert main(argv) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and fragment in err


def test_split_list_keeps_separators_inside_brackets():
    assert split_list("static:shape=[[0, 1],[0]], eagle") == ["static:shape=[[0, 1],[0]]", "eagle"]


def test_every_command_has_no_progress_and_every_results_command_json():
    for name, p in subparsers().items():
        flags = {s for a in p._actions for s in a.option_strings}
        if name != "methods":  # NOTE: `methods` only lists the registry, instantly
            assert "--no-progress" in flags, name
        if name != "instance":  # NOTE: `instance` prints an instance file, JSON already
            assert "--json" in flags, name


def test_progress_only_on_a_terminal(monkeypatch):
    import sys

    args = argparse.Namespace(no_progress=False)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    assert not progress_on(args)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    assert progress_on(args)
    assert not progress_on(argparse.Namespace(no_progress=True))


def test_a_long_run_is_announced_once_and_a_short_one_not(capsys):
    announce(argparse.Namespace(command="mc"), ANNOUNCE_SECONDS * 20, "200 steps")
    announce(argparse.Namespace(command="mc"), ANNOUNCE_SECONDS / 2, "2 steps")
    announce(argparse.Namespace(command="mc", no_progress=True), ANNOUNCE_SECONDS * 20, "quiet")
    err = capsys.readouterr().err
    assert err == "rheo mc: 200 steps: about 1.7 min (estimated)\n"


# -- exit codes (issue: a verdict a script can gate on) ---------------------------------------

@pytest.fixture
def lossy_instance(tmp_path):
    path = tmp_path / "i.json"
    random_pair(3, 2, seed=0).save(path)  # rheo with the true proxy: max deviation 19/130 here
    return str(path)


LOSSY_FLAGS = ["--top-k", "2", "--depth", "2", "--budget", "2", "--proxy", "true"]


def test_certify_exits_0_lossless_1_lossy_2_bad_input(lossy_instance, capsys):
    assert main(["certify", "--json"]) == EXIT_LOSSLESS
    assert json.loads(capsys.readouterr().out)["lossless"] is True
    assert main(["certify", lossy_instance, *LOSSY_FLAGS]) == EXIT_LOSSY
    assert "LOSSY" in capsys.readouterr().out
    assert main(["certify", "--top-k", "x"]) == EXIT_BAD_INPUT


def test_mc_exits_0_lossless_1_lossy_2_bad_input(lossy_instance, capsys):
    # alpha 0.01 (default), seed 0, 2000 steps; the lossy companion deviates by 19/130 in total variation
    assert main(["mc", lossy_instance, "--top-k", "2", "--depth", "2", "--budget", "2", "--samples", "2000",
                 "--json"]) == EXIT_LOSSLESS
    assert json.loads(capsys.readouterr().out)["lossless"] is True
    assert main(["mc", lossy_instance, *LOSSY_FLAGS, "--samples", "2000", "--json"]) == EXIT_LOSSY
    assert json.loads(capsys.readouterr().out)["lossless"] is False
    assert main(["mc", "--samples", "1"]) == EXIT_BAD_INPUT


def test_every_command_lists_its_exit_statuses_in_its_help(capsys):
    from rheotheory.cli import build_parser

    subs = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices
    for name, sub in subs.items():
        rows = dict(sub.exit_statuses)
        assert rows[0] and rows[2].startswith("bad input") and rows[130] == "interrupted (Ctrl-C)", name
        assert main([name, "--help"]) == 0
        text = " ".join(capsys.readouterr().out.split())
        assert "exit status:" in text and all(f"{c} {m}" in text for c, m in rows.items()), name
    assert dict(subs["certify"].exit_statuses)[1].startswith("LOSSY")
    assert dict(subs["mc"].exit_statuses)[0].startswith("not rejected")
    assert dict(subs["counterexample"].exit_statuses)[1].startswith("a lossy instance found")


# -- messages --------------------------------------------------------------------------------

def test_instance_over_the_cap_says_what_it_needs_and_the_flag(capsys):
    assert main(["instance", "--vocab", "100000", "--horizon", "5"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "need about 10^30.0 probabilities per table" in err and "cap of 2097152" in err
    assert "--max-entries" in err


def test_a_spec_field_the_family_lacks_is_named_in_api_terms():
    with pytest.raises(RheoError) as e:
        resolve("rheo-tuned:K=2", size="toy")
    msg = str(e.value)
    assert "rheo has no field 'K'" in msg and "top_k (k)" in msg and "--" not in msg


def test_the_top_level_help_names_every_model_source(capsys):
    assert main(["--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "decode generate text with speculative decoding (built-in pair, SmolLM2 or model directories)" in out


def test_decode_refuses_a_verifier_its_temperature_band_replaces(capsys):
    pytest.importorskip("torch")
    assert main(["decode", "--method", "adaptive", "--verifier", "traversal-ot", "--max-new-tokens", "2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--verifier traversal-ot does not run at T=1" in err
    assert "warning" not in err


def test_decode_names_a_missing_model_directory(tmp_path, capsys):
    pytest.importorskip("transformers")
    missing = str(tmp_path / "nonexistent")
    assert main(["decode", "--target", missing, "--draft", missing]) == 2
    assert capsys.readouterr().err.strip() == f"rheo: error: the target directory {missing!r} does not exist"


# -- sizing: refused up front by its estimate, with the cap and its flag ----------------------

def test_certify_refuses_a_big_enumeration_by_its_estimate(capsys):
    assert main(["certify", "--top-k", "4", "--depth", "3", "--budget", "30", "--max-branches", "2000"]) == 2
    err = capsys.readouterr().err
    assert "is estimated at" in err and "over the cap of 2e+03" in err and "--max-branches" in err


def test_counterexample_refuses_a_big_search_by_its_estimate(capsys):
    assert main(["counterexample", "--method", "static", "--max-branches", "1000"]) == 2
    err = capsys.readouterr().err
    assert "is estimated at" in err and "--max-branches" in err


def test_a_long_instance_is_announced_before_it_starts(monkeypatch, capsys):
    import rheotheory.cli.instance as instance

    monkeypatch.setattr(instance, "SECONDS_PER_ENTRY", 1.0)  # NOTE: a small instance posing as a long one
    assert main(["instance", "--vocab", "4", "--horizon", "1"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "rheo instance: 2 tables of 20 probabilities: about 40 s (estimated)\n"
    assert json.loads(captured.out)["vocab_size"] == 4


def test_the_branch_estimate_is_near_the_enumeration():
    from rheotheory.exact import enumerate_classes, estimate_branches
    from rheotheory.pairs import example_pair

    class Count:
        n = 0

        def update(self, k):
            self.n += k

    for size in [(2, 3, 4), (3, 3, 8)]:
        method = resolve("rheo", size=size)
        runs = Count()
        enumerate_classes(example_pair(), method, progress=runs)
        est = estimate_branches(example_pair(), method, seed=0)
        assert runs.n / 2 <= est <= 2 * runs.n, (size, runs.n, est)


def test_sweep_prints_json_with_its_rows_and_files(tmp_path, capsys):
    rc = main(["sweep", "--vocab", "50", "--no-sparse", "--mismatch", "low", "--temperatures", "1", "--trees",
               "3,2,6", "--methods", "eagle, chain", "--steps", "5", "--workers", "1", "--out", str(tmp_path),
               "--no-plot", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert rc == 0 and [r["method"] for r in d["rows"]] == ["eagle", "chain"]
    assert d["csv"].endswith("sweep.csv") and d["png"] is None and d["config"]["methods"] == ["eagle", "chain"]
