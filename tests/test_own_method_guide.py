"""docs/guide/own-method.md runs as written: its plugin file is the committed example, every command
of its table runs on it from a folder outside the package, and its contract test passes there."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "guide" / "own-method.md"
EXAMPLE = ROOT / "docs" / "examples" / "fork_method.py"


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", GUIDE.read_text(), flags=re.S)


def table_commands() -> list[str]:
    """The commands of the guide's "Every command takes it" block (continuation lines joined)."""
    section = GUIDE.read_text().split("## Every command takes it")[1].split("<details")[0]
    code = re.search(r"```bash\n(.*?)```", section, flags=re.S).group(1).replace("\\\n", " ")
    return [line.strip() for line in code.splitlines() if line.strip().startswith("rheo ")]


@pytest.fixture
def folder(tmp_path):
    shutil.copy(EXAMPLE, tmp_path / "fork_method.py")
    return tmp_path


def run(cmd: str, cwd) -> subprocess.CompletedProcess:
    argv = shlex.split(cmd)
    assert argv[0] == "rheo"
    return subprocess.run([sys.executable, "-m", "rheotheory.cli", *argv[1:], "--no-progress"], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def test_the_guide_shows_the_committed_example_file():
    assert blocks("python")[0] == EXAMPLE.read_text()


def test_the_first_command_prints_what_the_guide_shows(folder):
    first = blocks("bash")[0].splitlines()[1].split("#")[0].strip()
    r = run(first, folder)
    assert r.returncode == 0, r.stderr
    shown = blocks("text")[0]
    for line in shown.splitlines():
        assert line in r.stdout, line


@pytest.mark.parametrize("cmd", table_commands())
def test_every_command_of_the_table_runs_on_the_plugin(folder, cmd):
    r = run(cmd, folder)
    assert r.returncode == 0, f"{cmd}: exit {r.returncode}: {r.stderr[-500:]}"
    assert "fork" in r.stdout or "my-rrs" in r.stdout or "LOSSLESS" in r.stdout, r.stdout[-500:]


def test_the_table_covers_every_command_the_issue_names():
    names = {shlex.split(c)[1] for c in table_commands()}
    assert {"certify", "counterexample", "mc", "sweep", "optimum", "decode", "audit"} <= names


def test_the_contract_test_of_the_guide_passes_in_a_users_folder(folder):
    (folder / "test_fork.py").write_text(blocks("python")[1])
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_fork.py"], cwd=folder,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and "1 passed" in r.stdout, r.stdout[-1500:]
