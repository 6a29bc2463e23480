"""The scripts under simulations/ and benchmarks/certificate_snapshot.py: every one runs at a
tiny size into a temporary folder (claims tier: `python -m pytest -q -m claims`), and the
certificate snapshot equals its committed baseline (default suite)."""

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SIM = ROOT / "simulations"
#: The committed baseline of benchmarks/certificate_snapshot.py (one JSON line per instance x method).
SNAPSHOT = ROOT / "benchmarks" / "certificate_snapshot.jsonl"
#: Wall-clock limit of one script run (seconds).
TIMEOUT = 900


def run(*argv, cwd=ROOT):
    r = subprocess.run([sys.executable, *map(str, argv)], capture_output=True, text=True, timeout=TIMEOUT, cwd=cwd)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return r.stdout


def test_certificate_snapshot_equals_the_committed_baseline():
    """Every exact certificate of the snapshot grid (verdict, exact deviation, exact tau, outcome
    and class counts) is unchanged; regenerate the baseline with
    ``python benchmarks/certificate_snapshot.py > benchmarks/certificate_snapshot.jsonl`` only when a
    change of the certificates is intended."""
    now = run(ROOT / "benchmarks" / "certificate_snapshot.py").splitlines()
    base = SNAPSHOT.read_text(encoding="utf-8").splitlines()
    assert len(now) == len(base) > 300
    changed = [(b, n) for b, n in zip(base, now) if b != n]
    assert not changed, f"{len(changed)} certificates changed, first:\n{changed[0][0]}\n{changed[0][1]}"
    # the grid holds lossy cells too: the snapshot pins failures as well as successes
    verdicts = [json.loads(line)["lossless"] for line in base]
    assert any(verdicts) and not all(verdicts)


@pytest.mark.claims
def test_sweep_then_adaptive_vs_best_and_summarize(tmp_path):
    run("-m", "rheotheory.cli", "sweep", "--vocab", "50", "--no-sparse", "--mismatch", "low", "--temperatures", "1",
        "--trees", "3,2,6", "--methods", "eagle", "rheo", "rheo-adaptive", "--steps", "5", "--workers", "1",
        "--out", tmp_path, "--no-progress", "--no-plot")
    csv_path = tmp_path / "sweep.csv"
    compare = [SIM / "adaptive_vs_best.py", csv_path, "--workers", "1", "--against", "eagle", "rheo",
               "--out", tmp_path / "avb.csv"]
    # post-processing never recomputes silently: without a row log it refuses to re-run the rows
    r = subprocess.run([sys.executable, *map(str, compare)], capture_output=True, text=True, timeout=TIMEOUT, cwd=ROOT)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--rerun" in r.stderr, r.stderr
    assert "2 of 2 sweep rows" in r.stderr and "(estimated)" in r.stderr and not (tmp_path / "avb.csv").exists()
    r = subprocess.run([sys.executable, *map(str, compare), "--rerun"], capture_output=True, text=True,
                       timeout=TIMEOUT, cwd=ROOT)
    assert r.returncode == 0 and "re-running them" in r.stderr, r.stderr
    out = r.stdout
    assert "rheo-adaptive" in out
    with open(tmp_path / "avb.csv", newline="") as f:
        assert len(list(csv.DictReader(f))) == 1  # one cell: low mismatch, T = 1, 3,2,6
    out = run(SIM / "summarize_sweep.py", csv_path)
    assert "eagle" in out and "rheo" in out


@pytest.mark.claims
def test_calibration_quick(tmp_path):
    out = run(SIM / "calibration.py", "--quick", "--out", tmp_path / "calibration.json")
    assert "cover" in out and "time:" in out


@pytest.mark.claims
def test_certify_table_one_instance(tmp_path):
    run(SIM / "certify_table.py", "--instances", "1", "--workers", "1", "--out", tmp_path / "t.csv")
    with open(tmp_path / "t.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows and all(r for r in rows)


@pytest.mark.claims
def test_certify_adaptive_one_instance(tmp_path):
    """Two cheap variants (the T < 0.5 band, and the threshold-seq negative control)."""
    run(SIM / "certify_adaptive.py", "--instances", "1", "--workers", "1", "--variants", "run-T<0.5", "threshold-seq",
        "--out", tmp_path / "a.csv")
    with open(tmp_path / "a.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert {r["variant"] for r in rows} == {"run-T<0.5", "threshold-seq"}


@pytest.mark.claims
def test_optimum_table_one_instance(tmp_path):
    run(SIM / "optimum_table.py", "--instances", "1", "--workers", "1", "--out", tmp_path / "opt")
    assert (tmp_path / "opt.csv").stat().st_size > 0 and (tmp_path / "opt.md").read_text().startswith("#")


@pytest.mark.claims
def test_showcase_calibration_one_seed(tmp_path):
    run(SIM / "showcase_calibration.py", "--seeds", "1", "--workers", "1", "--out", tmp_path / "s.json")
    assert json.loads((tmp_path / "s.json").read_text())


@pytest.mark.claims
def test_sweep_evidence_small_two_steps(tmp_path):
    run(SIM / "sweep_evidence.py", "small", "--steps", "2", "--workers", "2", "--out", tmp_path)
    assert (tmp_path / "sweep_v50.csv").stat().st_size > 0


@pytest.mark.parametrize("script, bad", [
    ("online_greedy_cost.py", ["--workers", "0"]), ("online_greedy_cost.py", ["--steps", "1"]),
    ("online_explore.py", ["--workers", "0"]), ("online_explore.py", ["--policy-seeds", "0"]),
    ("online_explore.py", ["--steps", "40", "--checkpoints", "80"]), ("online_explore.py", ["--explore", "nan"]),
    ("online_horizon.py", ["--new", "rheo-online:explore=-1", "--steps", "4", "--checkpoints", "4",
                           "--cells", "low:0:4,4,16"]),
])
def test_the_online_study_scripts_refuse_bad_arguments_in_one_line(tmp_path, script, bad):
    r = subprocess.run([sys.executable, str(SIM / script), *bad, "--out", str(tmp_path / "x.csv")],
                       capture_output=True, text=True, timeout=TIMEOUT, cwd=ROOT)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr


@pytest.mark.claims
def test_online_horizon_checkpoints_and_the_committed_grid(tmp_path):
    """Checkpoints are prefixes of one run (the regret per step is recomputed at each n); 400 steps
    reproduce the committed online grid's row exactly, which the script checks; a cell the grid
    lacks or a checkpoint past the run is one line, exit 2."""
    script = SIM / "online_horizon.py"
    run(script, "--steps", "400", "--checkpoints", "40", "400", "--cells", "low:0:4,4,16", "--workers", "1",
        "--out", tmp_path / "h.csv")
    with open(tmp_path / "h.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["steps"]) for r in rows] == [40, 400]
    grid = {r["method"]: r for r in csv.DictReader(open(SIM / "results" / "sweep_online_vs_best.csv"))
            if r["mismatch"] == "low" and float(r["temperature"]) == 0 and r["budget"] == "16"}
    assert abs(float(rows[1]["online_tau"]) - float(grid["rheo-online"]["new_tau"])) < 1e-9
    assert rows[1]["best_arm"] == "eagle" and rows[1]["arms_run"] == "eagle"  # the others are > 0.4 below
    assert all(0 <= float(r["best_arm_share"]) <= 1 for r in rows)
    for bad in (["--cells", "low:0:9,9,9"], ["--steps", "40", "--checkpoints", "80"], ["--workers", "0"],
                ["--margin", "-1"]):
        r = subprocess.run([sys.executable, str(script), *bad, "--out", str(tmp_path / "x.csv")], capture_output=True,
                           text=True, timeout=TIMEOUT, cwd=ROOT)
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr


@pytest.mark.claims
def test_per_node_bound_sizes_one_instance(tmp_path):
    """Every row bounds the per-node class below the exact optimum (ratio <= 1), and the chain rows
    are sequential's tau, below block verification's optimum on a generic pair."""
    script = SIM / "per_node_bound.py"
    run(script, "--instances", "1", "--workers", "1", "--out", tmp_path / "b.csv")
    with open(tmp_path / "b.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 11 and all(r["optimum_exact"] == "1" for r in rows)
    assert all(0 < float(r["bound_mean"]) <= 1 + 1e-8 for r in rows)
    assert all(float(r["bound_mean"]) < 1 for r in rows if r["family"] == "chain")
    for bad in (["--instances", "0"], ["--workers", "0"]):
        r = subprocess.run([sys.executable, str(script), *bad, "--out", str(tmp_path / "x.csv")],
                           capture_output=True, text=True, timeout=TIMEOUT, cwd=ROOT)
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
