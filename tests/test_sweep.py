"""Sweeps: method specs, static shapes, paired rows, CSV/PNG output, the CLI and its errors."""

import json

import pytest

from rheotheory.cli import main
from rheotheory.errors import RheoError
from rheotheory.methods import resolve
from rheotheory.sweep import (CSV_FIELDS, LOSSLESS_NOTE, NO_NODE_ACCEPT, NO_NODE_OPT, SweepConfig, format_table,
                              read_csv, run_sweep, size_mismatches, sweep_method, sweep_to_files)
from rheotheory.trees import parse_shape


@pytest.mark.parametrize("N,D", [(16, 4), (60, 6), (5, 1), (1, 3)])
def test_static_shape_has_the_budget_and_depth(N, D):
    shape = resolve("static-iid", size=(4, D, N)).shape
    assert len(shape) == N and max(len(p) for p in shape) <= D
    assert len(parse_shape(shape)) == N  # connected, sibling indices 0, 1, 2, ...


def test_method_specs():
    tree = (6, 5, 32)
    assert sweep_method("eagle", tree, 1.0).family == "eagle"
    m = sweep_method("rheo:m=K/2:proxy=tail:verifier=sequential", tree, 1.0)
    assert (m.family, m.head, m.proxy, m.verifier, m.budget) == ("rheo", 3, "tail", "sequential", 32)
    assert sweep_method("rheo:m=K-1", tree, 1.0).head == 5
    assert sweep_method("rheo:m=2", tree, 1.0).head == 2
    assert sweep_method("static-wor", tree, 1.0).verifier == "rrs-wor"
    assert sweep_method("chain", tree, 1.0).depth == 5
    # the paper's rheo: m = 1, next proxy, OT, at every temperature
    rheo = sweep_method("rheo", tree, 0.0)
    assert (rheo.family, rheo.head, rheo.proxy, rheo.verifier) == ("rheo", 1, "next", "ot")
    # the tuned preset: m = 1, tail proxy at T > 0, the deterministic tree at T = 0
    tuned = sweep_method("rheo-tuned", tree, 1.0)
    assert (tuned.head, tuned.proxy, tuned.verifier) == (1, "tail", "ot")
    assert sweep_method("rheo-tuned", tree, 0.0).family == "eagle"


@pytest.mark.parametrize("spec,match", [
    ("foo", "unknown method"),
    ("rheo:m=many", "head must be"),
    ("rheo:proxy=bogus", "is not one of"),
    ("rheo:colour=red", "rheo has no field 'colour'"),
    ("eagle:m=1", r"eagle has no field 'm' \(head\)"),
    ("rheo:m", "bad option"),
])
def test_bad_specs(spec, match):
    with pytest.raises(RheoError, match=match):
        sweep_method(spec, (4, 3, 8), 1.0)


@pytest.mark.parametrize("kwargs,match", [
    (dict(steps=1), "steps"),
    (dict(workers=0), "workers"),
    (dict(temperatures=(-1.0,)), "temperatures"),
    (dict(mismatch=("medium",)), "mismatch"),
    (dict(trees=((4, 0, 8),)), "tree size"),
    (dict(methods=("rheo:m=9",), trees=((4, 3, 8),)), "head"),
    (dict(vocab_size=1), "vocab_size"),
])
def test_bad_sweep_config(kwargs, match):
    with pytest.raises(RheoError, match=match):
        SweepConfig(**kwargs)


TINY = SweepConfig(vocab_size=50, draft_top_k=None, mismatch=("low",), temperatures=(0.0, 1.0), trees=((3, 2, 6),),
                   methods=("eagle", "rheo-tuned", "rheo:m=K-1", "chain"), steps=12, seed=1, workers=1)


def test_sweep_rows_are_paired_and_reproducible():
    rows = run_sweep(TINY, progress=False)
    assert len(rows) == 8
    by = {(r["method"], r["temperature"]): r for r in rows}
    assert by[("eagle", 0.0)]["gain_vs_eagle"] == ""
    # at T = 0 the default rheo is the eagle tree on the same contexts: the paired gain is exactly 0
    assert by[("rheo-tuned", 0.0)]["gain_vs_eagle"] == 0.0
    assert by[("rheo-tuned", 0.0)]["tau"] == by[("eagle", 0.0)]["tau"]
    for r in rows:
        assert r["tau_low"] <= r["tau"] <= r["tau_high"] and 1 <= r["tau"] <= 3
    # the process pool gives the very same rows
    pooled = run_sweep(SweepConfig(**{**TINY.__dict__, "workers": 2}), progress=False)
    assert [(r["method"], r["tau"]) for r in pooled] == [(r["method"], r["tau"]) for r in rows]


def test_sweep_files(tmp_path):
    out = sweep_to_files(TINY, tmp_path, stem="tiny", progress=False)
    rows = read_csv(out.csv_path)
    assert len(rows) == 8 and set(rows[0]) == set(CSV_FIELDS)
    png = (tmp_path / "tiny.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"



def test_table_says_why_a_node_cell_is_empty():
    """A row whose per-node columns the sampler could not fill (autoregressive: no node has
    candidates; static-wor: draws without replacement have no computed optimum) prints a mark and
    a footnote, never ``nan``; a table without such cells has no footnote."""
    rows = run_sweep(SweepConfig(**{**TINY.__dict__, "methods": ("autoregressive", "static-wor", "eagle"),
                                    "temperatures": (1.0,)}), progress=False)
    by = {r["method"]: r for r in rows}
    text = format_table(rows)
    assert "nan" not in text
    cells = {line.split()[6]: line.split()[-4:-2] for line in text.splitlines()[2:] if len(line.split()) > 8}
    assert cells["autoregressive"] == [NO_NODE_ACCEPT[0], NO_NODE_OPT[0]]
    assert cells["static-wor"] == [f"{float(by['static-wor']['node_accept']):.3f}", NO_NODE_OPT[0]]
    assert cells["eagle"] == [f"{float(by['eagle']['node_accept']):.3f}", f"{float(by['eagle']['node_opt']):.3f}"]
    assert text.splitlines()[-3:] == [NO_NODE_ACCEPT[1], NO_NODE_OPT[1], LOSSLESS_NOTE]
    plain = format_table([by["eagle"]])
    assert NO_NODE_ACCEPT[1] not in plain and NO_NODE_OPT[1] not in plain

def test_rows_carry_their_node_count_and_an_exact_lossless_column(tmp_path):
    """The lossless column is the exact certificate of each row's method (a lossy control says
    LOSSY), the nodes column what the trees held; a chain under a larger budget is warned of."""
    cfg = SweepConfig(**{**TINY.__dict__, "methods": ("eagle", "chain", "rheo:proxy=true:verifier=sequential"),
                         "temperatures": (1.0,), "trees": ((3, 2, 6),)})
    out = sweep_to_files(cfg, tmp_path, progress=False, plot=False)
    by = {r["method"]: r for r in out.rows}
    assert by["eagle"]["lossless"] == "yes" and by["chain"]["lossless"] == "yes"
    assert by["rheo:proxy=true:verifier=sequential"]["lossless"] == "LOSSY"
    assert float(by["chain"]["nodes"]) == 2 and float(by["eagle"]["nodes"]) == 6
    assert {r["lossless"] for r in read_csv(out.csv_path)} == {"yes", "LOSSY"}
    assert size_mismatches(cfg) == ["chain holds 2 nodes at K,D,N=3,2,6, not N=6 (compare its row at its own node "
                                    "count)"]


def test_cli_sweep_and_mc(tmp_path, capsys):
    rc = main(["sweep", "--vocab", "50", "--no-sparse", "--mismatch", "low", "--temperatures", "1",
               "--trees", "3,2,6", "--methods", "eagle", "rheo", "--steps", "5", "--workers", "1",
               "--out", str(tmp_path), "--no-progress"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "eagle" in out and (tmp_path / "sweep.csv").exists() and (tmp_path / "sweep.png").exists()
    rc = main(["mc", "--vocab", "50", "--samples", "200", "--json", "--top-k", "3", "--depth", "2", "--budget", "5"])
    assert rc == 0
    d = json.loads(capsys.readouterr().out)
    for key in ("lossless", "p_value", "samples", "tokens_per_step", "tokens_per_step_ci95"):
        assert key in d
    # the default rheo (next proxy, OT) is certified lossless: seed 0, alpha 0.01, N = 200
    assert d["samples"] == 200 and d["lossless"] is True and d["p_value"] > 0.01


#: A toy instance on which the exact certifier finds the ``true`` proxy lossy with sequential
#: verification (tests/test_stats.py), and the CLI flags of that method at K, D, N = 2, 2, 4.
MC_PAIR_SEED = 6
MC_FLAGS = ["--top-k", "2", "--depth", "2", "--budget", "4", "--verifier", "sequential", "--samples", "4000",
            "--seed", "0", "--alpha", "0.01", "--json"]


@pytest.mark.parametrize("proxy,lossless", [("next", True), ("true", False)])
def test_cli_mc_verdicts(tmp_path, capsys, proxy, lossless):
    """`rheo mc` on an instance file: LOSSLESS for the certified-lossless next proxy, LOSSY for the
    planted true proxy (exact deviation > 0); alpha = 0.01, seed 0, N = 4000. The Monte-Carlo tau's
    95% interval holds the certifier's exact tau."""
    from rheotheory import certify, make_method, random_pair

    pair = random_pair(3, 2, seed=MC_PAIR_SEED)
    path = tmp_path / "pair.json"
    pair.save(path)
    method = make_method("rheo", top_k=2, depth=2, budget=4, proxy=proxy, verifier="sequential")
    exact = certify(pair, method)
    assert exact.lossless is lossless
    main(["mc", str(path), "--proxy", proxy, *MC_FLAGS])
    d = json.loads(capsys.readouterr().out)
    assert d["samples"] == 4000 and d["lossless"] is lossless, d
    assert (d["p_value"] < 0.01) is not lossless, d  # reject iff p < alpha
    low, high = d["tokens_per_step_ci95"]
    assert low <= float(exact.tokens_per_step) <= high, (d, exact.tokens_per_step)


@pytest.mark.parametrize("argv", [
    ["mc", "--samples", "0"],
    ["mc", "--alpha", "1"],
    ["mc", "--vocab", "1", "--samples", "10"],
    ["mc", "--temperature", "-1"],
    ["mc", "--top-k", "2", "--head", "4"],
    ["mc", "/nonexistent/instance.json"],
    ["sweep", "--trees", "4,4"],
    ["sweep", "--methods", "nope", "--steps", "2"],
    ["sweep", "--mismatch", "medium"],
])
def test_cli_bad_arguments_exit_2_with_one_line(argv, capsys):
    rc = main(argv)  # usage errors return 2 too
    assert rc == 2
    err = capsys.readouterr().err.strip()
    assert err and len(err.splitlines()) == 1 and "Traceback" not in err


# -- executors, row logs and resuming ------------------------------------------------------------

def _csv_rows(path):
    """The rows of a sweep CSV as text, without steps_per_second (a timing, the one column that
    differs between two runs of the same sweep)."""
    import csv

    with open(path, newline="") as f:
        return [{k: v for k, v in r.items() if k != "steps_per_second"} for r in csv.DictReader(f)]


def _same_rows(a, b):
    """Row lists equal in every column but steps_per_second (NaN equal to NaN)."""
    key = lambda rows: [{k: repr(v) for k, v in r.items() if k != "steps_per_second"} for r in rows]  # noqa: E731
    return key(a) == key(b)


def test_serial_pool_and_dask_give_identical_rows():
    pytest.importorskip("distributed")
    from rheotheory.executors import open_executor

    serial = run_sweep(TINY, progress=False)
    pool = run_sweep(SweepConfig(**{**TINY.__dict__, "workers": 2}), progress=False, executor="process")
    with open_executor("dask", workers=2, processes=False) as ex:
        dask = run_sweep(TINY, progress=False, executor=ex)
    assert _same_rows(serial, pool) and _same_rows(serial, dask)


class _Stop(Exception):
    pass


def _stop_after(k):
    def hook(index, row):
        hook.calls += 1
        if hook.calls == k:
            raise _Stop
    hook.calls = 0
    return hook


@pytest.mark.parametrize("k,workers", [(1, 1), (5, 2)])
def test_interrupted_sweep_resumes_to_the_same_csv(tmp_path, k, workers):
    full = sweep_to_files(TINY, tmp_path / "full", progress=False, plot=False)
    cfg = SweepConfig(**{**TINY.__dict__, "workers": workers})
    with pytest.raises(_Stop):
        sweep_to_files(cfg, tmp_path / "cut", progress=False, plot=False, on_row=_stop_after(k))
    partial = tmp_path / "cut" / "sweep.csv.partial"
    assert not (tmp_path / "cut" / "sweep.csv").exists()
    assert len(partial.read_text().splitlines()) == 2 + k  # config comment, header, k finished rows
    ran = []
    out = sweep_to_files(TINY, tmp_path / "cut", progress=False, plot=False, resume=True,
                         on_row=lambda i, r: ran.append(i))
    assert len(ran) == len(TINY.tasks()) - k  # only the missing rows ran again
    assert not partial.exists()
    assert _csv_rows(out.csv_path) == _csv_rows(full.csv_path)
    assert _same_rows(out.rows, full.rows)


def test_resume_drops_a_torn_last_line(tmp_path):
    full = sweep_to_files(TINY, tmp_path / "full", progress=False, plot=False)
    with pytest.raises(_Stop):
        sweep_to_files(TINY, tmp_path / "cut", progress=False, plot=False, on_row=_stop_after(3))
    partial = tmp_path / "cut" / "sweep.csv.partial"
    text = partial.read_text()
    partial.write_text(text[:-40])  # killed while writing the third row
    out = sweep_to_files(TINY, tmp_path / "cut", progress=False, plot=False, resume=True)
    assert _csv_rows(out.csv_path) == _csv_rows(full.csv_path)


def test_resume_refuses_a_partial_of_another_configuration(tmp_path):
    with pytest.raises(_Stop):
        sweep_to_files(TINY, tmp_path, progress=False, plot=False, on_row=_stop_after(2))
    other = SweepConfig(**{**TINY.__dict__, "steps": 13, "seed": 2})
    with pytest.raises(RheoError, match=r"another configuration \(differs in seed, steps\)") as e:
        sweep_to_files(other, tmp_path, progress=False, plot=False, resume=True)
    assert len(str(e.value).splitlines()) == 1
    # another worker count is the same configuration (the rows do not depend on it)
    same = SweepConfig(**{**TINY.__dict__, "workers": 2})
    sweep_to_files(same, tmp_path, progress=False, plot=False, resume=True)


def test_an_existing_partial_needs_resume(tmp_path):
    with pytest.raises(_Stop):
        sweep_to_files(TINY, tmp_path, progress=False, plot=False, on_row=_stop_after(2))
    with pytest.raises(RheoError, match="--resume"):
        sweep_to_files(TINY, tmp_path, progress=False, plot=False)
    assert (tmp_path / "sweep.csv.partial").exists()  # the finished rows are kept


def test_atomic_csv_leaves_no_half_file(tmp_path):
    from rheotheory.sweep import write_csv

    rows = run_sweep(TINY, progress=False)
    path = tmp_path / "sweep.csv"
    write_csv(rows, path)
    before = path.read_bytes()

    class Broken(dict):
        def items(self):
            raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError, match="disk on fire"):
        write_csv(rows[:3] + [Broken(rows[3])], path)
    assert path.read_bytes() == before  # the old file is untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.csv"]  # and no temporary file is left
    with pytest.raises(RuntimeError):
        write_csv([Broken(rows[0])], tmp_path / "new.csv")
    assert not (tmp_path / "new.csv").exists()


SWEEP_ARGV = ["sweep", "--vocab", "50", "--no-sparse", "--mismatch", "low", "--temperatures", "0", "1",
              "--trees", "3,2,6", "--methods", "eagle", "rheo", "--steps", "6", "--workers", "1", "--no-plot",
              "--no-progress"]


def test_cli_ctrl_c_keeps_the_finished_rows_and_resume_completes(tmp_path, capsys, monkeypatch):
    import rheotheory.sweep as sweep

    assert main(SWEEP_ARGV + ["--out", str(tmp_path / "full")]) == 0
    real, calls = sweep._run_task, []

    def interrupted_after_two(job):
        if len(calls) == 2:
            raise KeyboardInterrupt
        calls.append(job)
        return real(job)

    monkeypatch.setattr(sweep, "_run_task", interrupted_after_two)
    capsys.readouterr()
    assert main(SWEEP_ARGV + ["--out", str(tmp_path / "cut")]) == 130
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "2 of 4 rows kept" in err and "--resume" in err
    monkeypatch.setattr(sweep, "_run_task", real)
    assert main(SWEEP_ARGV + ["--out", str(tmp_path / "cut"), "--resume"]) == 0
    assert _csv_rows(tmp_path / "cut" / "sweep.csv") == _csv_rows(tmp_path / "full" / "sweep.csv")


def test_cli_missing_extra_is_one_line(tmp_path, capsys, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed raises ImportError
    assert main(SWEEP_ARGV + ["--executor", "dask", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pip install -e '.[dask]'" in err


def test_mc_states_what_its_test_could_detect(capsys):
    """A "not rejected" comes with the smallest TV the test detects at power 0.8 per length (it
    shrinks as 1/sqrt(N)); --contexts fresh adds tokens per step over fresh contexts."""
    args = ["mc", "--vocab", "50", "--top-k", "3", "--depth", "2", "--budget", "5", "--no-progress"]
    assert main(args + ["--samples", "400", "--contexts", "fresh"]) == 0
    out = capsys.readouterr().out
    assert "verdict         : not rejected at N = 400, alpha 0.01 (a test, not a proof)" in out
    assert "detects         : with power 0.8, a TV >= " in out and "fresh context, as rheo sweep" in out
    tvs = {}
    for n in (400, 1600):
        assert main(args + ["--samples", str(n), "--json"]) == 0
        d = json.loads(capsys.readouterr().out)
        tvs[n] = d["min_detectable_tv_by_length"]
        assert len(tvs[n]) == 3 and d["power"] == 0.8 and d["contexts"] == "single"
    assert all(b < a for a, b in zip(tvs[400], tvs[1600]))  # four times N: about half the TV


def test_mc_fresh_contexts_need_the_synthetic_pair(tmp_path, capsys):
    from rheotheory.pairs import random_pair

    inst = tmp_path / "inst.json"
    random_pair(3, 2, seed=1).save(inst)
    assert main(["mc", str(inst), "--samples", "10", "--depth", "1", "--contexts", "fresh"]) == 2
    assert "--contexts fresh needs the synthetic pair" in capsys.readouterr().err
