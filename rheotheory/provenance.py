"""Provenance of a results file: the command, commit, seed, package versions, wall time and machine
that produced it, so every published number can be traced to the run that made it.

A recipe (a committed script with fixed arguments and seed) writes its results file(s) and then
calls :func:`write_provenance` once per file; the record lands beside it as
``<results file>.provenance.json``.

>>> rec = provenance(seed=3, started=None, command=["python", "x.py"])
>>> rec["seed"], rec["command"], "python" in rec["packages"]
(3, 'python x.py', True)
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

__all__ = ["PACKAGES", "provenance", "write_provenance", "provenance_path", "results_command", "merge_rows",
           "row_commands"]

#: Packages whose versions can change a number this project publishes.
PACKAGES = ("rheotheory", "numpy", "scipy", "sympy", "pot", "torch", "transformers")

#: Environment variable a run sets to say where it was measured when that is not a quiet machine
#: of the project's CI kind (e.g. "shared 2-core machine, other jobs running").
MACHINE_NOTE_ENV = "RHEO_MACHINE_NOTE"
#: Environment variable naming the commit of a copy of the tree that has no git history (a tree
#: copied to a GPU machine); recorded as "<sha> (stated)", and only where git gives no commit.
COMMIT_ENV = "RHEO_COMMIT"


def _commit() -> str:
    """The commit of the working tree (``+dirty`` when it has uncommitted changes); where git gives
    none (a copy without history), the one ``$RHEO_COMMIT`` states, marked "(stated)", else "unknown"."""
    root = Path(__file__).resolve().parent.parent
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                             timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        sha = dirty = ""
    if sha:
        return sha + ("+dirty" if dirty else "")
    stated = os.environ.get(COMMIT_ENV, "").strip()
    return f"{stated} (stated)" if stated else "unknown"


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def _cpu_model() -> str:
    """The CPU's model name (Linux: ``/proc/cpuinfo``), "" where it cannot be read: a wall-clock
    figure belongs to the CPU it was measured on."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def provenance(seed=None, started: float | None = None, command: list[str] | None = None,
               machine_note: str | None = None, **extra) -> dict:
    """One provenance record (plain JSON data).

    Parameters
    ----------
    seed : object, optional
        The recipe's seed (any JSON value; ``None`` for a deterministic recipe).
    started : float, optional
        ``time.time()`` when the run began; gives ``wall_seconds`` (None when not given).
    command : list of str, optional
        argv of the run (default ``sys.argv`` with the interpreter named ``python``).
    machine_note : str, optional
        Where the numbers were measured when that is not a quiet machine of the project's CI kind;
        default: the ``RHEO_MACHINE_NOTE`` environment variable.
    **extra : object
        More fields (e.g. ``recipe``, ``arguments``), added last (they may replace a standard one).

    Returns
    -------
    dict[str, object]
        ``command`` (shell-quoted), ``commit`` (``+dirty`` with uncommitted changes; ``"<sha>
        (stated)"`` from ``$RHEO_COMMIT`` or ``"unknown"`` without git), ``seed``, ``packages``
        (Python and the installed :data:`PACKAGES` -> version), ``wall_seconds``, ``finished`` (UTC,
        ISO 8601), ``machine`` (system, architecture, processor, CPU model, CPU count, the CPU matmul
        asked for, the note), then ``extra``.

    Examples
    --------
    >>> rec = provenance(seed=3, started=None, command=["python", "x.py"])
    >>> rec["seed"], rec["command"], "python" in rec["packages"]
    (3, 'python x.py', True)
    """
    argv = command if command is not None else ["python", *sys.argv]
    note = machine_note if machine_note is not None else os.environ.get(MACHINE_NOTE_ENV, "")
    rec = {
        "command": shlex.join(argv),
        "commit": _commit(),
        "seed": seed,
        "packages": _versions(),
        "wall_seconds": None if started is None else round(time.time() - started, 1),
        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"system": platform.system(), "machine": platform.machine(),
                    "processor": platform.processor() or "", "cpu_model": _cpu_model(), "cpus": os.cpu_count(),
                    # NOTE: the CPU product asked for (decode.backends.cpu_matmul, a floor above this one,
                    # whose default is onednn); the manifest of a loaded pair says which one ran
                    "cpu_matmul": os.environ.get("RHEO_CPU_MATMUL", "onednn"), "note": note},
    }
    rec.update(extra)
    return rec


def provenance_path(results_file) -> Path:
    """Where the provenance of ``results_file`` lives: ``<results file>.provenance.json``.

    Parameters
    ----------
    results_file : str or os.PathLike
        The results file.

    Returns
    -------
    pathlib.Path
        The record's path, beside the results file.
    """
    p = Path(results_file)
    return p.with_name(p.name + ".provenance.json")


def write_provenance(results_file, seed=None, started: float | None = None, **kwargs) -> Path:
    """Write the provenance record of ``results_file`` beside it and return its path.

    Parameters
    ----------
    results_file : str or os.PathLike
        The results file the record is for.
    seed : object, optional
        The recipe's seed (:func:`provenance`).
    started : float, optional
        ``time.time()`` when the run began (:func:`provenance`).
    **kwargs : object
        The other arguments of :func:`provenance` (``command``, ``machine_note``, extra fields).

    Returns
    -------
    pathlib.Path
        :func:`provenance_path` of ``results_file``, written as indented JSON.
    """
    path = provenance_path(results_file)
    path.write_text(json.dumps(provenance(seed=seed, started=started, **kwargs), indent=2) + "\n")
    return path


def results_command(script: str, argv=None, root: Path | None = None) -> str:
    """The command line a results file names as its maker: ``python SCRIPT ARGS`` less ``--out
    DIR`` (the recipe's folder is not part of what was computed), paths inside the repository
    made relative, each word shell-quoted so that the line reruns as it reads.

    Parameters
    ----------
    script : str
        The script's path from the repository root (``simulations/x.py``).
    argv : sequence of str, optional
        Its arguments (default ``sys.argv[1:]``).
    root : pathlib.Path, optional
        The repository root (default: the folder above this package).

    Returns
    -------
    str

    >>> results_command("simulations/x.py", ["--only", "a b", "--out", "/tmp/o", "--runs", "3"])
    "python simulations/x.py --only 'a b' --runs 3"
    """
    root = str(root or Path(__file__).resolve().parent.parent)
    given, skip = [], False
    for a in map(str, sys.argv[1:] if argv is None else argv):
        if skip:
            skip = False
        elif a == "--out":
            skip = True
        elif not a.startswith("--out="):
            given.append(a.replace(root + "/", ""))
    return shlex.join(["python", script, *given])


def merge_rows(results_file, rows: list, key: str, field: str) -> list:
    """The rows of a results file rerun in part (a script's ``--merge``): those of the existing
    file ``results_file`` (its list ``field``), each replaced by the row of ``rows`` with the same
    ``key``, then the new rows it lacked. Each kept row keeps the command that made it (its own
    ``command``, else the file's).

    Parameters
    ----------
    results_file : str or os.PathLike
        A JSON file with a top-level ``command`` and a list of rows ``field``; missing: ``rows``.
    rows : list of dict
        The rows run now.
    key : str
        The field naming a row.
    field : str

    Returns
    -------
    list of dict
    """
    path = Path(results_file)
    if not path.is_file():
        return list(rows)
    old = json.loads(path.read_text())
    new = {r[key]: r for r in rows}
    out = [new.pop(r[key], dict(r, command=r.get("command", old["command"]))) for r in old[field]]
    return out + list(new.values())


def row_commands(results: dict, field: str) -> str:
    """The commands that made a results file's rows, in order, for a table's caption: each
    between backquotes, joined by ", then ".

    Parameters
    ----------
    results : dict
        The file's data: a top-level ``command`` and the rows ``field``.
    field : str

    Returns
    -------
    str

    >>> row_commands({"command": "a", "rows": [{}, {"command": "b"}]}, "rows")
    '`a`, then `b`'
    """
    made = list(dict.fromkeys(r.get("command", results["command"]) for r in results[field]))
    return ", then ".join(f"`{c}`" for c in made)
