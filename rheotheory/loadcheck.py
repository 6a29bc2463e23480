"""Is the machine quiet? Other processes' runnable threads, sampled before and during a timing.

A wall-clock figure measured beside other work is not published (docs/guide/reproducing.md). A
timing recipe therefore runs under a :class:`LoadMonitor`: a background thread that counts, every
:data:`INTERVAL` seconds, the threads of the whole machine in state ``R`` (running or ready to
run, from ``/proc/*/task/*/stat``) that do **not** belong to the measured process tree. On a
quiet machine that count is about 0; a concurrent job adds about one per busy thread. The run is
*loaded* when the mean count exceeds :data:`LOADED_MEAN` (a third of a core busy elsewhere on
average) or, before the run, when a short pre-check does.

Only Linux's ``/proc`` is read; elsewhere the monitor reports ``unknown`` (never "quiet").
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["LoadMonitor", "LoadReport", "other_runnable", "precheck", "INTERVAL", "LOADED_MEAN", "PRECHECK_SECONDS"]

#: Seconds between two samples (each costs a few milliseconds of one core: a scan of /proc).
INTERVAL = 1.0

#: Mean number of other runnable threads above which a run counts as loaded.
LOADED_MEAN = 0.33

#: Seconds of sampling before a timing run starts.
PRECHECK_SECONDS = 3.0

_PROC = Path("/proc")


def _stat_fields(path: Path):
    """(pid, state, ppid) of a /proc stat file, or None (the process ended meanwhile)."""
    try:
        text = path.read_text()
    except OSError:
        return None
    # NOTE: the command name (field 2) is in parentheses and may hold spaces
    end = text.rfind(")")
    rest = text[end + 2:].split()
    return int(text.split(" ", 1)[0]), rest[0], int(rest[1])


def _tree(root: int) -> set[int]:
    """``root`` and every process below it."""
    children: dict[int, list[int]] = {}
    for d in _PROC.iterdir():
        if d.name.isdigit():
            f = _stat_fields(d / "stat")
            if f is not None:
                children.setdefault(f[2], []).append(f[0])
    out, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid not in out:
            out.add(pid)
            todo.extend(children.get(pid, ()))
    return out


def other_runnable(root: int | None = None) -> int | None:
    """Threads in state R outside the process tree of ``root`` (default: this process); None
    when ``/proc`` cannot be read.

    Parameters
    ----------
    root : int, optional
        The pid whose process tree (it and every process below it) is left out; this process
        when None.

    Returns
    -------
    int or None
        The number of other threads running or ready to run; None without ``/proc``.
    """
    if not (_PROC / "self" / "stat").exists():
        return None
    mine = _tree(os.getpid() if root is None else root)
    n = 0
    for d in _PROC.iterdir():
        if not d.name.isdigit() or int(d.name) in mine:
            continue
        try:
            tasks = list((d / "task").iterdir())
        except OSError:
            continue
        for t in tasks:
            f = _stat_fields(t / "stat")
            if f is not None and f[1] == "R":
                n += 1
    return n


@dataclass(frozen=True)
class LoadReport:
    """What the monitor saw (plain data).

    Attributes
    ----------
    samples : int
        Number of samples taken (0: none, load unknown).
    mean_other_runnable : float or None
        Mean count of other runnable threads; None: unknown (no /proc).
    max_other_runnable : int or None
        Largest count; None: unknown.
    loaded : bool or None
        Whether the mean exceeds :data:`LOADED_MEAN`; None: unknown.
    """

    samples: int
    mean_other_runnable: float | None  # None: unknown (no /proc)
    max_other_runnable: int | None
    loaded: bool | None  # None: unknown

    def to_dict(self) -> dict:
        """The fields as a plain dict (for a provenance record or a results file).

        Returns
        -------
        dict[str, object]
            Field name -> value.
        """
        return dict(self.__dict__)

    def describe(self) -> str:
        """One line for a log: quiet or loaded, with the mean, the largest count and the samples.

        Returns
        -------
        str
            E.g. ``quiet: 0.05 other runnable threads on average (max 1, 20 samples)``, or
            ``machine load unknown (no /proc)``.
        """
        if self.loaded is None:
            return "machine load unknown (no /proc)"
        state = "loaded" if self.loaded else "quiet"
        return (f"{state}: {self.mean_other_runnable:.2f} other runnable threads on average (max "
                f"{self.max_other_runnable}, {self.samples} samples)")


class LoadMonitor:
    """Samples :func:`other_runnable` in a background thread between ``__enter__`` and ``__exit__``.

    The first sample is taken as the block starts, then one every ``interval`` seconds; sampling
    stops for good if ``/proc`` cannot be read.

    Parameters
    ----------
    root : int, optional
        The pid whose process tree is the measured one (:func:`other_runnable`); this process
        when None.
    interval : float, default INTERVAL
        Seconds between two samples.

    Attributes
    ----------
    counts : list of int
        The samples taken so far.
    """

    def __init__(self, root: int | None = None, interval: float = INTERVAL):
        self.root, self.interval = root, interval
        self.counts: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self):
        while not self._stop.is_set():
            c = other_runnable(self.root)
            if c is None:
                return
            self.counts.append(c)
            self._stop.wait(self.interval)

    def __enter__(self) -> "LoadMonitor":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def report(self) -> LoadReport:
        """What the monitor saw so far (call after the block).

        Returns
        -------
        LoadReport
            The samples' mean and maximum and the verdict; every field unknown (None, 0 samples) when
            nothing was sampled.
        """
        if not self.counts:
            return LoadReport(0, None, None, None)
        mean = sum(self.counts) / len(self.counts)
        return LoadReport(len(self.counts), mean, max(self.counts), mean > LOADED_MEAN)


def precheck(seconds: float = PRECHECK_SECONDS, interval: float = 0.25) -> LoadReport:
    """Sample the machine for ``seconds`` before a timing run starts.

    Parameters
    ----------
    seconds : float, default PRECHECK_SECONDS
        How long to sample.
    interval : float, default 0.25
        Seconds between two samples.

    Returns
    -------
    LoadReport
        What the samples saw (this process's tree left out).
    """
    with LoadMonitor(interval=interval) as m:
        time.sleep(seconds)
    return m.report()
