"""Nothing lost when interrupted: atomic output files, and row logs a run resumes from.

Two tools, used by ``rheo sweep`` and the long ``simulations/`` scripts:

- :func:`atomic_path` / :func:`atomic_open` write an output to a temporary file beside it and
  rename it over the final name only when complete (``os.replace`` is atomic on one file
  system): a reader never sees half a file, and an exception leaves the previous file, if any,
  untouched.
- :class:`RowLog` keeps the finished rows of a run, appended one at a time to
  ``<output>.partial``, each flushed and fsynced before the next starts, so a killed run loses
  at most the rows in flight.

A row log is a CSV preceded by one comment line holding the run's configuration::

    # rheo-partial {"config": {...}, "sha256": "..."}
    task,field1,field2,...
    0,...

Numbers are written in full precision (``repr``), so a row read back is the row that was
computed. A run started with ``resume=True`` reads the finished rows back and runs only the
others; it refuses a log written by another configuration. When the run is complete the caller
writes the final output (atomically) and :meth:`RowLog.finish` removes the log.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from .errors import RheoError

__all__ = ["atomic_path", "atomic_open", "write_rows", "RowLog", "PARTIAL_SUFFIX", "config_hash", "parse_cell", "run_logged"]

#: Suffix of a row log beside its final output (``sweep.csv`` -> ``sweep.csv.partial``).
PARTIAL_SUFFIX = ".partial"

#: First characters of a row log's first line (the configuration comment).
HEADER_PREFIX = "# rheo-partial "


def _fsync_dir(path: Path) -> None:
    """Make a rename in ``path`` durable (NOTE: not possible on every platform; skipped there)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextmanager
def atomic_path(path) -> Iterator[Path]:
    """A temporary path beside ``path``, renamed to ``path`` if the block succeeds.

    The temporary name keeps the suffix (``.sweep.csv.<pid>.tmp.csv``), so writers that pick
    a format from it (matplotlib) still do. If the block raises, the temporary file is
    removed and ``path`` is left as it was. A context manager; ``path``'s folder is made if missing.

    Parameters
    ----------
    path : str or os.PathLike
        The final file.

    Yields
    ------
    pathlib.Path
        The temporary path to write; it must exist when the block ends (it is fsynced, renamed over
        ``path``, and the rename made durable).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp{path.suffix}")
    try:
        yield tmp
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    finally:
        if tmp.exists():
            tmp.unlink()


@contextmanager
def atomic_open(path, mode: str = "w", **kwargs):
    """``open(path, mode)`` for writing, atomically (see :func:`atomic_path`).

    Parameters
    ----------
    path : str or os.PathLike
        The final file.
    mode : str, default "w"
        A writing mode of :func:`open` (``"w"``, ``"wb"``).
    **kwargs : object
        Further arguments of :func:`open` (``newline``, ``encoding``).

    Yields
    ------
    file object
        The open temporary file; closed, then renamed over ``path`` when the block succeeds.
    """
    with atomic_path(path) as tmp:
        with open(tmp, mode, **kwargs) as f:
            yield f


def write_rows(rows: list[dict], path) -> None:
    """The rows as a CSV whose columns are the first row's keys, atomically (its folder made if
    missing): the results file of a script whose rows all have the same keys.

    Parameters
    ----------
    rows : list of dict
        The rows, at least one, all with the first row's keys.
    path : str or os.PathLike
        The CSV file, replaced if it exists.
    """
    folder = os.path.dirname(str(path))
    if folder:
        os.makedirs(folder, exist_ok=True)
    with atomic_open(path, newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def config_hash(config: dict) -> str:
    """SHA-256 of the canonical JSON of ``config`` (sorted keys).

    Parameters
    ----------
    config : dict
        A JSON-serialisable configuration.

    Returns
    -------
    str
        The hex digest (64 characters).
    """
    import hashlib  # NOTE: here, not at the top: OpenSSL's load is a start-up cost of every command

    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()


def parse_cell(text: str):
    """A logged cell back as a value: '' stays '', then int, then float, else the text.

    Parameters
    ----------
    text : str
        The cell as written in the log.

    Returns
    -------
    str, int or float
        The first of ``''``, ``int(text)``, ``float(text)`` and ``text`` that applies.
    """
    if text == "":
        return text
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def _cell(value) -> str:
    if isinstance(value, bool) or value is None:
        return "" if value is None else str(value)
    if isinstance(value, float):
        return repr(float(value))  # NOTE: full precision (np.float64's repr is not a number)
    return str(value)


class RowLog:
    """Finished rows of one run, appended to ``<final><PARTIAL_SUFFIX>`` (see the module docstring).

    An existing log without a complete row is replaced; a new log starts with the configuration
    comment and the header.

    Parameters
    ----------
    final : str or os.PathLike
        The output the rows are for; the log is ``final + ".partial"``.
    config : dict
        Everything that determines the rows (JSON-serialisable); a resumed run must match it.
    fields : sequence of str
        Columns of a row (the log adds ``task``, the caller's key of the row's task).
    resume : bool, default False
        Continue an existing log. Without it, an existing log is refused (it holds finished
        work), so that no run discards another's rows silently.
    parse : callable, optional
        ``parse(field, text) -> value`` for reading rows back; default :func:`parse_cell`
        for every field.

    Attributes
    ----------
    path : pathlib.Path
        The log file.
    rows : dict[str, dict]
        Task key -> finished row (read back on resume, then each appended row).

    Raises
    ------
    RheoError
        An existing log without ``resume``, or (on resume) one of another configuration, of other
        columns, with a malformed line, or not a row log at all (one line).
    """

    def __init__(self, final, config: dict, fields: Sequence[str], resume: bool = False,
                 parse: Callable | None = None):
        self.path = Path(str(final) + PARTIAL_SUFFIX)
        self.config = json.loads(json.dumps(config, sort_keys=True))  # canonical: tuples -> lists
        self.fields = ("task", *fields)
        self._parse = parse or (lambda field, text: parse_cell(text))
        self.rows: dict[str, dict] = {}  # task key -> finished row
        if self.path.exists() and not resume and not self._holds_rows():
            self.path.unlink()  # NOTE: a log without finished rows holds nothing to keep
        if self.path.exists():
            if not resume:
                raise RheoError(f"{self.path} holds the finished rows of an interrupted run; rerun with --resume "
                                "to continue it, or delete it")
            self._read()
            self._file = open(self.path, "a", newline="")
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            head = json.dumps({"config": self.config, "sha256": config_hash(self.config)}, sort_keys=True)
            with atomic_open(self.path, newline="") as f:
                f.write(HEADER_PREFIX + head + "\n")
                csv.writer(f).writerow(self.fields)
            self._file = open(self.path, "a", newline="")
        self._writer = csv.writer(self._file)

    def _holds_rows(self) -> bool:
        """Whether the existing log has a complete row line (after its comment and header)."""
        with open(self.path, "rb") as f:
            return sum(1 for line in f if line.endswith(b"\n")) > 2

    def _read(self) -> None:
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            # NOTE: a run killed while writing a line leaves it torn; that row was not finished.
            data = data[:data.rfind(b"\n") + 1]
            with open(self.path, "rb+") as f:
                f.truncate(len(data))
        lines = data.decode().splitlines(keepends=True)
        try:
            if not lines or not lines[0].startswith(HEADER_PREFIX):
                raise ValueError
            stored = json.loads(lines[0][len(HEADER_PREFIX):])["config"]
        except (ValueError, KeyError, TypeError):
            raise RheoError(f"--resume: {self.path} is not a row log of this program; delete it") from None
        if config_hash(stored) != config_hash(self.config):
            keys = sorted(k for k in set(stored) | set(self.config) if stored.get(k) != self.config.get(k))
            raise RheoError(f"--resume: {self.path} was written by another configuration (differs in "
                            f"{', '.join(keys) or 'its layout'}); rerun with that configuration or delete it")
        reader = csv.reader(io.StringIO("".join(lines[1:]), newline=""))
        header = next(reader, None)
        if tuple(header or ()) != self.fields:
            raise RheoError(f"--resume: {self.path} has other columns than this version writes; delete it")
        for n, rec in enumerate(reader, start=3):
            if len(rec) != len(self.fields):
                raise RheoError(f"--resume: {self.path} line {n} has {len(rec)} cells, expected {len(self.fields)}")
            key, *cells = rec
            self.rows[key] = {f: self._parse(f, c) for f, c in zip(self.fields[1:], cells)}

    def __contains__(self, key) -> bool:
        return str(key) in self.rows

    def __len__(self) -> int:
        return len(self.rows)

    def append(self, key, row: dict) -> None:
        """Log the finished row of task ``key``: written, flushed and fsynced before returning.

        Parameters
        ----------
        key : object
            The task's key (written as ``str(key)``).
        row : dict
            The row; the log's fields are written (``""`` for a missing one, floats in full precision),
            and the row itself is kept in :attr:`rows`.
        """
        self._writer.writerow([str(key), *(_cell(row.get(f, "")) for f in self.fields[1:])])
        self._file.flush()
        os.fsync(self._file.fileno())
        self.rows[str(key)] = row

    def close(self) -> None:
        """Close the log, keeping it (an interrupted run resumes from it)."""
        if not self._file.closed:
            self._file.close()

    def finish(self) -> None:
        """Close and remove the log: call after the final output has been written."""
        self.close()
        self.path.unlink(missing_ok=True)

    def __enter__(self) -> RowLog:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def run_logged(log: "RowLog", tasks: Sequence, key: Callable, fn: Callable, *, executor: str = "process",
               workers: int = 1, scheduler: str | None = None, desc: str = "tasks",
               to_row: Callable | None = None) -> "RowLog":
    """Run ``fn`` on every task of ``tasks`` not yet in ``log`` on an executor, appending each
    finished one as it completes, with a tqdm bar.

    The one resumable loop of the long scripts: a rerun with the same log runs only the missing
    tasks. The log is closed either way.

    Parameters
    ----------
    log : RowLog
        The run's row log (opened with ``resume=True`` to continue).
    tasks : sequence
        Every task of the run.
    key : callable
        ``key(task)``: the task's key in the log.
    fn : callable
        ``fn(task)``: runs one task; a top-level function (worker processes import it by name).
    executor : str, default "process"
        The executor kind (:func:`rheotheory.executors.open_executor`).
    workers : int, default 1
        Its workers.
    scheduler : str, optional
        Address of a dask scheduler or Ray cluster.
    desc : str, default "tasks"
        The bar's label, and the unit of the interruption message.
    to_row : callable, optional
        ``to_row(result)``: the row logged for a result; default the result itself.

    Returns
    -------
    RowLog
        ``log``, closed, with every task's row.

    Raises
    ------
    KeyboardInterrupt
        On Ctrl-C: the executor is stopped, and the message says how many tasks the log kept.
    """
    from tqdm import tqdm

    from .executors import imap_unordered, open_executor

    todo = [t for t in tasks if key(t) not in log]
    try:
        with log, open_executor(executor, workers, scheduler) as ex, \
                tqdm(total=len(tasks), initial=len(tasks) - len(todo), desc=desc) as bar:
            for i, result in imap_unordered(ex, fn, todo):
                log.append(key(todo[i]), to_row(result) if to_row is not None else result)
                bar.update(1)
    except KeyboardInterrupt:
        raise KeyboardInterrupt(f"{len(log)} of {len(tasks)} {desc} kept in {log.path}") from None
    return log
