"""`rheo decode` and `rheo bench` with the built-in pair; bad input is one line and exit code 2."""

import pytest

torch = pytest.importorskip("torch")

from rheotheory.cli import main  # noqa: E402


def test_decode_prints_continuation_and_stats(capsys):
    rc = main(["decode", "--prompt", "def fib(", "--method", "rheo", "--temperature", "1.0",
               "--max-new-tokens", "30", "--seed", "3"])
    out = capsys.readouterr().out
    assert rc == 0
    assert out.startswith("def fib(")
    for field in ("tokens per step", "|Z| histogram", "tree nodes/step", "tokens/s"):
        assert field in out


@pytest.mark.parametrize("method", ["autoregressive", "chain", "static", "eagle"])
def test_decode_every_method_json(capsys, method):
    import json

    extra = ["--shape", "[[0],[1],[0,0]]"] if method == "static" else []
    rc = main(["decode", "--method", method, "--temperature", "0", "--max-new-tokens", "12", "--json"] + extra)
    d = json.loads(capsys.readouterr().out)
    assert rc == 0 and d["steps"] >= 1 and d["temperature"] == 0


def test_bench_small_table(capsys):
    rc = main(["bench", "--methods", "rheo", "--temperatures", "1", "--max-new-tokens", "4", "--budget", "4",
               "--depth", "2", "--top-k", "2"])
    out = capsys.readouterr().out
    assert rc == 0
    lines = [ln for ln in out.splitlines() if ln.startswith(("autoregressive", "rheo"))]
    assert len(lines) == 2  # the table once: each row as it is made, no repeat at the end
    assert sum(ln.startswith("method ") for ln in out.splitlines()) == 1  # one header
    assert "1.00x" in lines[0]


def test_bench_reports_an_interval_steps_and_enough_steps_by_default(capsys):
    """The 95% interval holds the mean, the JSON names the draft law, and the default number of
    passes gives every row at least MIN_BENCH_STEPS steps (a step emits at most D + 1 tokens)."""
    import json

    from rheotheory.decode.evaluation.bench import MIN_BENCH_STEPS

    rc = main(["bench", "--methods", "chain", "--temperatures", "1", "--max-new-tokens", "4", "--depth", "3",
               "--json"])
    d = json.loads(capsys.readouterr().out)
    assert rc == 0 and d["draft_top_k"] is None and d["cost_ratio"] > 0
    assert d["repeats"] == -(-MIN_BENCH_STEPS // (d["prompts"] * 1))  # 4 tokens, D = 3: one step a run at least
    for r in d["rows"]:
        lo, hi = r["tokens_per_step_ci95"]
        assert r["steps"] >= MIN_BENCH_STEPS and lo <= r["tokens_per_step"] <= hi
    assert d["rows"][0]["tokens_per_step_ci95"] == [1.0, 1.0]  # autoregressive: |Z| = 1 every step


def test_draft_top_k_flag_reaches_decode_and_bench(capsys):
    import json

    rc = main(["decode", "--max-new-tokens", "8", "--draft-top-k", "3", "--json"])
    assert rc == 0 and json.loads(capsys.readouterr().out)["draft_top_k"] == 3
    rc = main(["decode", "--max-new-tokens", "8", "--json"])
    assert rc == 0 and json.loads(capsys.readouterr().out)["draft_top_k"] is None  # V = 128: off by default
    rc = main(["bench", "--methods", "eagle", "--temperatures", "1", "--max-new-tokens", "4", "--repeats", "1",
               "--draft-top-k", "2", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert rc == 0 and d["draft_top_k"] == 2 and d["repeats"] == 1
    rc = main(["bench", "--methods", "eagle", "--temperatures", "1", "--max-new-tokens", "4", "--repeats", "1",
               "--draft-top-k", "off", "--json"])
    assert rc == 0 and json.loads(capsys.readouterr().out)["draft_top_k"] is None


def test_draft_top_k_help_states_the_default_rule():
    from rheotheory.cli.models import add_model_arguments
    from rheotheory.decode.engine import DEFAULT_DRAFT_TOP_K, SPARSE_DRAFT_MIN_VOCAB
    import argparse

    ap = argparse.ArgumentParser()
    add_model_arguments(ap)
    text = " ".join(ap.format_help().split())
    assert f"up to {SPARSE_DRAFT_MIN_VOCAB} tokens, {DEFAULT_DRAFT_TOP_K} above" in text


def test_rheo_options_reach_bench_and_decode(capsys):
    import json

    rc = main(["bench", "--methods", "rheo", "--temperatures", "1", "--max-new-tokens", "4", "--budget", "4",
               "--depth", "2", "--top-k", "3", "--head", "1", "--proxy", "min-best-tail", "--json"])
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert rc == 0 and "head=1 proxy=min-best-tail" in rows[-1]["description"]
    rc = main(["decode", "--max-new-tokens", "4", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert rc == 0 and d["preset"] == "rheo-tuned" and d["method"]["proxy"] == "tail"
    assert "proxy=tail" in d["description"]


@pytest.mark.parametrize("argv, msg", [
    (["decode", "--prompt", "d\u00e9f"], "non-ASCII"),
    (["decode", "--device", "cuda"] if not torch.cuda.is_available() else ["decode", "--device", "tpu"], "device"),
    (["decode", "--max-new-tokens", "400"], "positions"),
    (["decode", "--target-top-p", "1.5"], "top-p"),
    (["bench", "--methods", "medusa"], "unknown method"),
    (["bench", "--top-k", "2", "--head", "2"], "head"),
    (["decode", "--draft-top-k", "0"], "draft-top-k"),
    (["bench", "--draft-top-k", "all"], "draft-top-k"),
])
def test_bad_input_is_one_line(capsys, argv, msg):
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2
    assert msg in err and err.count("\n") == 1


def test_known_lossy_rheo_variants_match_the_certified_counterexamples():
    from pathlib import Path

    from rheotheory.methods import make_method
    from rheotheory.trees.dynamic import PROXIES

    ce_dir = Path(__file__).resolve().parents[1] / "proofs" / "counterexamples"
    for proxy in PROXIES:
        for ver in ("onehot", "sequential", "ot"):
            why = make_method("rheo", proxy=proxy, verifier=ver).known_lossy()
            # flagged exactly where the certifier found a lossy instance (proofs/counterexamples)
            assert (why is not None) == (ce_dir / f"{proxy}-{ver}.json").exists(), (proxy, ver)
    assert make_method("eagle").known_lossy() is None and make_method("chain").known_lossy() is None


def test_decode_warns_about_a_known_lossy_variant(capsys):
    rc = main(["decode", "--method", "rheo-tuned", "--verifier", "sequential", "--max-new-tokens", "4", "--json"])
    err = capsys.readouterr().err
    assert rc == 0 and err.count("\n") == 1 and "known to be lossy" in err
    main(["decode", "--method", "rheo", "--max-new-tokens", "4", "--json"])
    assert capsys.readouterr().err == ""
