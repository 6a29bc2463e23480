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
    assert len(lines) == 4  # streamed rows, then the final table
    assert "1.00x" in lines[-2]


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
