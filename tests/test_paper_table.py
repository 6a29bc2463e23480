"""The paper's grid as units of work (simulations/smollm2_paper_table.py): decodes run on an
executor, each logged as it finishes; a parallel run killed part-way resumes to exactly the rows a
serial run makes (the built-in pair, a tiny grid)."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "simulations" / "smollm2_paper_table.py"
GRID = ["--model", "builtin", "--prompts", "3", "--max-new-tokens", "24", "--temperatures", "1,0", "--top-k", "2",
        "--depths", "2", "--budget", "4"]


def run(out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *GRID, "--out", str(out), *extra], capture_output=True,
                          text=True, timeout=600, cwd=ROOT)


def rows(path: Path) -> list[tuple]:
    """The rows without their CPU seconds (machine-dependent), in a fixed order."""
    with open(path, newline="") as f:
        return sorted(tuple((k, v) for k, v in r.items() if k != "cpu_seconds") for r in csv.DictReader(f))


def logged(log: Path) -> int:
    return max(0, len(log.read_text().splitlines()) - 2) if log.exists() else 0  # a header and a comment


@pytest.mark.claims  # NOTE: about 15 s quiet (two small grids and a killed one); CI's claims tier
def test_a_parallel_run_killed_part_way_resumes_to_the_rows_of_a_serial_run(tmp_path):
    serial = run(tmp_path / "serial")
    assert serial.returncode == 0, serial.stderr
    assert "decodes logged" in serial.stdout and "CPU hours" in serial.stdout  # the estimate comes first
    out = tmp_path / "parallel"
    proc = subprocess.Popen([sys.executable, str(SCRIPT), *GRID, "--out", str(out), "--workers", "2"], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    log = out / "runs.csv.partial"
    deadline = time.monotonic() + 300
    while logged(log) < 4 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)  # NOTE: the run and its workers, mid-grid
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the run ended before it could be interrupted"
    before = logged(log)
    assert 4 <= before < len(rows(tmp_path / "serial" / "runs.csv"))
    resumed = run(out, "--workers", "2")
    assert resumed.returncode == 0, resumed.stderr
    assert f"{before} of 36 decodes logged" in resumed.stdout
    assert rows(out / "runs.csv") == rows(tmp_path / "serial" / "runs.csv")
