"""`rheo bench --out DIR`: the tau-vs-temperature curve, its paired intervals and its resumption."""

import csv

import pytest

from rheotheory.decode.evaluation.curve import read_runs, standing, summarize

torch = pytest.importorskip("torch")

from rheotheory.cli import main  # noqa: E402

ARGS = ["bench", "--methods", "chain,rheo-adaptive", "--temperatures", "0,1", "--max-new-tokens", "8",
        "--repeats", "1", "--no-progress"]


def _runs(units, taus: dict, seconds: dict):
    """Synthetic runs: every method emits ``steps * tau`` tokens in each unit (the block's only
    variation is the per-unit step count)."""
    rows = []
    for u in range(units):
        steps = 10 + u
        for m, tau in taus.items():
            rows.append({"prompt_set": "s", "temperature": 1.0, "method": m, "prompt": u, "repeat": 0,
                         "steps": steps, "emitted": round(steps * tau), "kept": round(steps * tau),
                         "seconds": seconds[m] * steps, "nodes": 8 * steps if tau > 1 else 0})
    return rows


def test_summary_is_the_ratio_estimator_and_speedup_is_over_the_first_method():
    rows = _runs(8, {"autoregressive": 1.0, "chain": 3.0, "rheo-adaptive": 4.0},
                 {"autoregressive": 0.1, "chain": 0.2, "rheo-adaptive": 0.2})
    got = {r["method"]: r for r in summarize(rows)}
    assert got["chain"]["tokens_per_step"] == 3.0 and got["chain"]["accepted_per_step"] == 2.0
    # tokens/s: 3 tokens per 0.2 s against 1 per 0.1 s
    assert got["chain"]["speedup"] == pytest.approx(1.5, rel=1e-12)
    assert got["autoregressive"]["speedup"] == 1.0
    assert got["rheo-adaptive"]["steps"] == sum(10 + u for u in range(8)) and got["rheo-adaptive"]["runs"] == 8


def test_standing_names_the_best_other_method_and_a_paired_verdict():
    higher = standing(_runs(8, {"autoregressive": 1.0, "chain": 3.0, "static-wor": 3.5, "rheo-adaptive": 4.0},
                            dict.fromkeys(("autoregressive", "chain", "static-wor", "rheo-adaptive"), 0.1)))
    assert [(r["best_other"], r["verdict"]) for r in higher] == [("static-wor", "higher")]
    assert higher[0]["difference"] == pytest.approx(0.5, rel=1e-12)
    # the same tree every run (EAGLE's below T = 0.5): difference 0, interval [0, 0], a tie
    same = standing(_runs(8, {"autoregressive": 1.0, "eagle": 4.0, "rheo-adaptive": 4.0},
                          dict.fromkeys(("autoregressive", "eagle", "rheo-adaptive"), 0.1)))
    assert [(r["difference"], r["diff_low"], r["diff_high"], r["verdict"]) for r in same] == [(0.0, 0.0, 0.0, "tie")]
    assert standing(_runs(4, {"autoregressive": 1.0, "chain": 3.0}, {"autoregressive": 0.1, "chain": 0.1})) == []


def test_out_writes_the_files_and_a_rerun_resumes_the_missing_block(tmp_path, capsys):
    out = tmp_path / "curve"
    assert main(ARGS + ["--out", str(out)]) == 0
    for name in ("settings.json", "runs.csv", "curve.csv", "standing.csv", "curve.png", "curve.csv.provenance.json"):
        assert (out / name).exists(), name
    full = read_runs(out / "runs.csv")
    assert {(r["temperature"], r["method"]) for r in full} == {(t, m) for t in (0.0, 1.0)
                                                               for m in ("autoregressive", "chain", "rheo-adaptive")}
    # a killed bench: the T = 1 block never written; the rerun redoes it alone, with the same seeds
    kept = [r for r in full if r["temperature"] == 0.0]
    with open(out / "runs.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(kept[0]))
        w.writeheader()
        w.writerows(kept)
    capsys.readouterr()
    assert main(ARGS + ["--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "T = 1" in text and "T = 0\n" not in text
    again = read_runs(out / "runs.csv")
    strip = [{k: v for k, v in r.items() if k != "seconds"} for r in again]
    assert strip == [{k: v for k, v in r.items() if k != "seconds"} for r in full]


def test_out_with_other_settings_or_json_is_refused(tmp_path, capsys):
    out = tmp_path / "curve"
    assert main(ARGS + ["--out", str(out)]) == 0
    capsys.readouterr()
    assert main([*ARGS[:-1], "--seed", "5", "--no-progress", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "other settings (seed)" in err[0]
    assert main(ARGS + ["--out", str(out / "x"), "--json"]) == 2


# -- --budget auto (rheotheory.decode.evaluation.budget) ----------------------------------------------------

def test_step_cost_interpolates_and_the_physical_limit_is_tau_over_relative_cost():
    from rheotheory.decode.evaluation.budget import physical_limit, step_cost

    costs = {1: 1.0, 3: 2.0, 5: 4.0}
    assert step_cost(costs, 1, 1, 0.5) == 1.5 + 0.5  # a pass over 2 tokens: halfway between 1 and 3
    assert step_cost(costs, 5, 2, 0.0) == 5.0  # a pass over 6 tokens, beyond the curve: its last slope
    assert physical_limit(3.0, costs, 2, 2, 0.25) == 3.0 / (2.0 + 0.5)


def test_decode_budget_auto_chooses_a_candidate_and_caches_it(tmp_path, monkeypatch, capsys):
    import json

    from rheotheory.decode.evaluation.budget import CANDIDATES

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr("rheotheory.decode.evaluation.budget.MIN_SPEEDUP", 0.0)  # NOTE: a tree always pays here
    argv = ["decode", "--budget", "auto", "--temperature", "1", "--max-new-tokens", "6", "--json", "--no-progress"]
    assert main(argv) == 0
    got = json.loads(capsys.readouterr().out)["method"]
    assert (got["top_k"], got["depth"], got["budget"]) in CANDIDATES
    cache = json.loads((tmp_path / "rheotheory" / "tree_sizes.json").read_text())
    (entry,) = cache.values()
    assert entry["size"] == [got["top_k"], got["depth"], got["budget"]]
    best = max(entry["table"], key=lambda r: r["speedup_low"])
    assert [best["top_k"], best["depth"], best["budget"]] == entry["size"]
    # NOTE: overhead only slows a step down: no prediction passes its physical limit, and the
    # ranking's lower figure is below the prediction
    assert all(r["speedup_low"] <= r["predicted_speedup"] <= r["physical_limit"] for r in entry["table"])
    assert main(argv) == 0  # from the cache: the same size
    again = json.loads(capsys.readouterr().out)["method"]
    assert again == got


def test_budget_auto_ranks_by_tau_less_one_standard_error():
    """A deep tree whose pilot tau is high but noisy loses to a small tree measured more surely
    (the largest of a dozen noisy estimates is biased upwards), and whether a tree pays is judged
    on the chosen row, not on the largest prediction in the table."""
    from rheotheory.decode.evaluation.budget import MIN_SPEEDUP, best, pays

    small = {"top_k": 1, "depth": 1, "budget": 1, "predicted_speedup": 1.12, "speedup_low": 1.08}
    deep = {"top_k": 2, "depth": 3, "budget": 6, "predicted_speedup": 1.20, "speedup_low": 1.02}
    assert best([small, deep]) is small and best([deep, small]) is small
    assert pays([small, deep])
    shaky = {"top_k": 1, "depth": 1, "budget": 1, "predicted_speedup": MIN_SPEEDUP - 0.01, "speedup_low": 1.00}
    hopeful = {"top_k": 2, "depth": 3, "budget": 6, "predicted_speedup": 1.30, "speedup_low": 0.95}
    assert best([shaky, hopeful]) is shaky and not pays([shaky, hopeful])


def test_budget_auto_falls_back_to_autoregressive_when_no_tree_pays(tmp_path, monkeypatch, capsys):
    """No candidate reaches the smallest predicted speed-up (set out of reach here): the decode runs
    autoregressively and says so in one line on stderr."""
    import json

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr("rheotheory.decode.evaluation.budget.MIN_SPEEDUP", 1e9)
    argv = ["decode", "--budget", "auto", "--temperature", "1", "--max-new-tokens", "6", "--json", "--no-progress"]
    assert main(argv) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out)["method"]["family"] == "autoregressive"
    (line,) = cap.err.strip().splitlines()
    assert "no tree size pays on this machine" in line and "decoding autoregressively" in line


def test_bench_budget_auto_sizes_each_temperature_and_falls_back_per_row(tmp_path, monkeypatch, capsys):
    """`rheo bench --budget auto`: with no size paying (the limit set out of reach), every tree
    row decodes autoregressively (no nodes), each (method, T) says so in one stderr line and the
    JSON records the choice; with every size paying, the rows run the chosen size."""
    import json

    from rheotheory.decode.evaluation.budget import CANDIDATES

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    argv = ["bench", "--budget", "auto", "--methods", "rheo-tuned,chain", "--temperatures", "0,1",
            "--max-new-tokens", "6", "--repeats", "1", "--json", "--no-progress"]
    monkeypatch.setattr("rheotheory.decode.evaluation.budget.MIN_SPEEDUP", 1e9)
    assert main(argv) == 0
    cap = capsys.readouterr()
    got = json.loads(cap.out)
    lines = cap.err.strip().splitlines()
    assert len(lines) == 4 and all("no tree size pays" in x and "decodes autoregressively" in x for x in lines)
    assert {r["method"] for r in got["budget_auto"]} == {"rheo-tuned", "chain"}
    assert not any(r["pays"] for r in got["budget_auto"])
    assert all(r["nodes_per_step"] == 0 for r in got["rows"])
    monkeypatch.setattr("rheotheory.decode.evaluation.budget.MIN_SPEEDUP", 0.0)
    out = tmp_path / "curve"
    argv = [a for a in argv if a != "--json"] + ["--out", str(out)]
    assert main(argv) == 0
    assert capsys.readouterr().err == ""
    recs = json.loads((out / "budget_auto.json").read_text())
    assert len(recs) == 4 and all(r["pays"] for r in recs)
    # NOTE: a chain's record holds the candidate's K beside its own depth and node count (D, D)
    assert all(tuple(r["size"]) in CANDIDATES for r in recs if r["method"] == "rheo-tuned")
    with open(out / "curve.csv") as f:
        nodes = {(r["method"], float(r["temperature"])): float(r["nodes_per_step"]) for r in csv.DictReader(f)}
    for r in recs:
        K, D, N = r["size"]
        want = D if r["method"] == "chain" else N
        assert nodes[(r["method"], r["temperature"])] <= want and nodes[(r["method"], r["temperature"])] > 0


@pytest.mark.parametrize("extra, fragment", [
    (["--top-k", "2"], "--top-k does not apply"),
    (["--preset", "autoregressive"], "has none"),
    (["--preset", "rheo:k=3"], "sets one of them"),
])
def test_budget_auto_refuses_what_it_would_override(extra, fragment, capsys):
    assert main(["decode", "--budget", "auto", "--max-new-tokens", "4", *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and fragment in err[0]


def test_a_rerun_with_more_temperatures_adds_their_blocks(tmp_path, capsys):
    out = tmp_path / "curve"
    assert main(ARGS + ["--out", str(out)]) == 0
    first = read_runs(out / "runs.csv")
    more = [a if a != "0,1" else "0,0.5,1" for a in ARGS]
    assert main(more + ["--out", str(out)]) == 0
    after = read_runs(out / "runs.csv")
    assert {r["temperature"] for r in after} == {0.0, 0.5, 1.0}
    assert [r for r in after if r["temperature"] != 0.5] == first  # the finished blocks untouched


def test_the_focus_is_rheo_online_or_a_spec_of_it():
    from rheotheory.decode.evaluation.curve import FOCUS, focus_of

    assert focus_of(["eagle", "rheo-online", "rheo-online:explore=0"]) == "rheo-online"
    assert focus_of(["eagle", "rheo-online:explore_t0=0.3", "static-wor"]) == "rheo-online:explore_t0=0.3"
    assert focus_of(["eagle", "rheo-adaptive", "rheo-onliner"]) == FOCUS


@pytest.mark.parametrize("temps", [(0.0,), (0.0, 1.0)])
def test_the_plot_shows_every_interval_at_one_temperature_or_several(tmp_path, temps):
    """A curve over several temperatures draws bands; at one temperature each method is a point with
    its interval as an error bar (a band of zero width would not show), the methods set apart."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from rheotheory.decode.evaluation import curve as mod

    rows = [dict(prompt_set="p", temperature=t, method=m, tokens_per_step=tau, tau_low=tau - 0.2,
                 tau_high=tau + 0.2, speedup=tau / 2, speedup_low=tau / 2 - 0.1, speedup_high=tau / 2 + 0.1, steps=50)
            for t in temps for m, tau in (("autoregressive", 1.0), ("eagle", 2.0), ("rheo-online", 2.2))]
    figs = []
    real_close = plt.close
    plt.close = lambda fig=None: figs.append(fig)  # keep the figure to look at it
    try:
        mod.plot_curve(rows, tmp_path / "c.png")
    finally:
        plt.close = real_close
    assert (tmp_path / "c.png").stat().st_size > 10_000
    ax = figs[0].axes[0]
    if len(temps) == 1:
        bars = [c for c in ax.containers if type(c).__name__ == "ErrorbarContainer"]
        assert len(bars) == 3
        xs = sorted(float(b.lines[0].get_xdata()[0]) for b in bars)
        assert xs[0] < 0 < xs[-1] and len(set(xs)) == 3
    else:
        assert len(ax.collections) == 3 and not ax.containers  # one band per method
    real_close(figs[0])
