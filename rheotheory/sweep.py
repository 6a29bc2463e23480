"""Acceptance-versus-temperature sweeps on synthetic LM pairs, methods at equal node budgets.

A sweep evaluates every method of a list at every (draft mismatch, temperature, tree size)
with the Monte-Carlo sampler (:mod:`rheotheory.montecarlo`), each step from a fresh random
context of a :class:`~rheotheory.synthetic.SyntheticPair`. All methods of one sweep use the
same seed, hence the same contexts (common random numbers), so their differences are measured
on paired steps.

Method specs are preset or family names with optional ``:field=value`` options
(:func:`rheotheory.methods.resolve`; ``rheo methods`` lists the presets), resolved at each tree
size (K, D, N) and then at each temperature (:meth:`~rheotheory.methods.Method.at_temperature`:
``rheo-tuned`` runs the EAGLE tree at T = 0). E.g. ``eagle``, ``rheo``, ``rheo-tuned``,
``rheo:m=K/2:proxy=tail``, ``static-iid``, ``static-wor``, ``chain``.

Every row reports tau with a 95% interval, the mean per-node acceptance, the mean per-node
optimal-transport value of the visited nodes' candidate sets (the per-node upper bound of
:func:`rheotheory.montecarlo.node_optimum`), kept nodes and steps/s, and, for every method
other than ``eagle``, the paired difference of tau against ``eagle`` with its 95% interval.

Rows run on any :mod:`rheotheory.executors` executor (a local process pool by default, dask or
Ray) and are identical whichever runs them: a row depends only on the configuration and its
task (every row uses ``cfg.seed``). :func:`sweep_to_files` logs each finished row to
``<stem>.csv.partial`` (:class:`~rheotheory.checkpoint.RowLog`) together with its per-step
accepted lengths, which the paired gains need, so an interrupted sweep resumed with
``resume=True`` runs only the missing rows and writes the same CSV as an uninterrupted one.
"""

from __future__ import annotations

import csv
import json
import math
import time
from concurrent.futures import Executor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from .checkpoint import RowLog, atomic_open, atomic_path, parse_cell
from .errors import RheoError
from .executors import check_executor, imap_unordered, open_executor
from .methods import Method, resolve
from .montecarlo import Z_95, run_steps
from .synthetic import DEFAULT_DRAFT_TOP_K, SyntheticPair, mismatch_value, single_draft_acceptance

__all__ = ["SweepConfig", "sweep_method", "run_sweep", "estimate_seconds", "write_csv", "plot_sweep",
           "format_table", "DEFAULT_METHODS", "CSV_FIELDS", "SweepInterrupted"]

#: Methods of the default sweep (preset names, see :data:`rheotheory.methods.PRESETS`).
DEFAULT_METHODS = ("eagle", "rheo", "rheo-tuned", "static-iid", "static-wor", "chain")

#: The method spec every other row's paired gain is measured against.
GAIN_BASELINE = "eagle"

CSV_FIELDS = ("vocab_size", "draft_top_k", "mismatch", "mismatch_value", "single_accept", "temperature",
              "top_k", "depth", "budget", "method", "description", "resolved", "steps", "tau", "tau_low", "tau_high",
              "gain_vs_eagle", "gain_low", "gain_high", "node_accept", "node_opt", "nodes", "steps_per_second",
              "seed", "lossless")

#: Columns computed from all rows at the end (paired gains, the lossless column), not logged per row.
GAIN_FIELDS = ("gain_vs_eagle", "gain_low", "gain_high", "lossless")

#: The exact certificate behind a row's ``lossless`` column (:func:`certify_rows`): the row's method
#: spec resolved at this tree size (K, D, N) and at the row's temperature, on the built-in example
#: pair (V = 4, horizon 3), capped at this many construction branches.
LOSSLESS_SIZE = (3, 3, 8)
LOSSLESS_MAX_BRANCHES = 20_000

#: Columns of the row log (``<stem>.csv.partial``): a row's own columns and its per-step
#: accepted lengths (space-separated), from which the gains are computed when all rows are in.
LOG_FIELDS = tuple(f for f in CSV_FIELDS if f not in GAIN_FIELDS) + ("lengths",)

#: Text columns, read back as text even when they look like numbers (mismatch "0.3").
TEXT_FIELDS = ("mismatch", "method", "description", "resolved", "lossless")


@dataclass(frozen=True)
class SweepConfig:
    """What to sweep (plain data).

    Every field is validated on construction, each method spec resolved at each tree size.

    Attributes
    ----------
    vocab_size : int, default 1000
        V of the synthetic pair.
    draft_top_k : int or None, default DEFAULT_DRAFT_TOP_K
        Sparse draft: the draft's top-k logits kept (None: off).
    mismatch : tuple of str or float, default ("low", "high")
        Names of :data:`~rheotheory.synthetic.MISMATCH_LEVELS` or numbers >= 0.
    temperatures : tuple of float, default (0.0, 0.5, 1.0, 1.5)
        Temperatures T >= 0, at least one.
    trees : tuple of tuple of int, default ((6, 5, 32),)
        (K, D, N) tree sizes, at least one.
    methods : tuple of str, default DEFAULT_METHODS
        Method specs, see the module docstring.
    steps : int, default 200
        Sampled steps per row, >= 2.
    seed : int, default 0
        Language and sampling seed (the same for every row: paired steps).
    workers : int, default 2
        Pool processes or LocalCluster workers (1: run in this process); rows do not depend on it.
    temper_draft : bool, default False
        Also temper the draft (EAGLE does not).

    Raises
    ------
    RheoError
        If ``steps`` < 2, ``workers`` < 1, a temperature is negative or not finite, a mismatch level
        is unknown, no tree size or method is given, a tree size is not three positive ints, a method
        spec does not resolve at a tree size, or V or ``draft_top_k`` is out of range.
    """

    vocab_size: int = 1000  # V of the synthetic pair
    draft_top_k: int | None = DEFAULT_DRAFT_TOP_K  # sparse draft (None: off)
    mismatch: tuple = ("low", "high")  # names of MISMATCH_LEVELS or numbers
    temperatures: tuple = (0.0, 0.5, 1.0, 1.5)
    trees: tuple = ((6, 5, 32),)  # (K, D, N) tree sizes
    methods: tuple = DEFAULT_METHODS  # method specs, see the module docstring
    steps: int = 200  # sampled steps per row
    seed: int = 0  # language and sampling seed (the same for every row: paired steps)
    workers: int = 2  # pool processes or LocalCluster workers (1: run in this process); rows do not depend on it
    temper_draft: bool = False  # also temper the draft (EAGLE does not)

    def __post_init__(self):
        if not isinstance(self.steps, int) or self.steps < 2:
            raise RheoError(f"steps must be an integer >= 2, got {self.steps!r}")
        if not isinstance(self.workers, int) or self.workers < 1:
            raise RheoError(f"workers must be a positive integer, got {self.workers!r}")
        if not self.temperatures or any(not isinstance(t, (int, float)) or not math.isfinite(t) or t < 0
                                        for t in self.temperatures):
            raise RheoError(f"temperatures must be finite numbers >= 0, got {self.temperatures!r}")
        for level in self.mismatch:
            mismatch_value(level)
        if not self.trees:
            raise RheoError("no tree sizes given")
        for tree in self.trees:
            if len(tree) != 3 or any(not isinstance(x, int) or x < 1 for x in tree):
                raise RheoError(f"tree size must be three positive integers K,D,N, got {tree!r}")
            for spec in self.methods:
                sweep_method(spec, tree, 1.0)  # validates the spec at this size
        if not self.methods:
            raise RheoError("no methods given")
        SyntheticPair(self.vocab_size, seed=self.seed, draft_top_k=self.draft_top_k)  # validates V, k

    def tasks(self) -> list[dict]:
        """The sweep's rows, one task each, in the order rows are reported.

        Returns
        -------
        list of dict
            ``{"mismatch", "temperature", "tree", "method"}`` for every mismatch level, temperature,
            tree size and method spec, nested in that order (method innermost).
        """
        return [dict(mismatch=level, temperature=float(t), tree=tuple(tree), method=spec)
                for level in self.mismatch for t in self.temperatures for tree in self.trees
                for spec in self.methods]


def sweep_method(spec, tree: tuple, temperature: float) -> Method:
    """The method a sweep row runs: ``spec`` resolved at tree size (K, D, N), then at T.

    Parameters
    ----------
    spec : str
        A preset or family name with optional ``:field=value`` options
        (:func:`rheotheory.methods.resolve`).
    tree : tuple of int
        The tree size (K, D, N).
    temperature : float
        The row's temperature T (:meth:`~rheotheory.methods.Method.at_temperature`).

    Returns
    -------
    Method
        The resolved method.
    """
    return resolve(spec, size=tuple(tree)).at_temperature(temperature)


def size_mismatches(cfg) -> list[str]:
    """One line per (method spec, tree size) whose trees hold a number of nodes other than the
    row's budget N (a chain's size is its depth alone); a family that takes no size at all from
    K, D, N is refused. The rows still run: their ``nodes`` column says what they used."""
    from .methods.registry import SIZE_FIELDS, field_options

    out = []
    for tree in cfg.trees:
        for spec in cfg.methods:
            m = sweep_method(spec, tree, 1.0)
            if m.nodes and not set(SIZE_FIELDS) & set(field_options(type(m))):
                raise RheoError(f"{spec} ({m.family}) takes no tree size from K, D, N; it cannot run at a sweep's "
                                "--trees (give its size in the spec)")
            if m.nodes and m.nodes != tree[2]:
                out.append(f"{spec} holds {m.nodes} nodes at K,D,N={','.join(map(str, tree))}, not N={tree[2]} "
                           "(compare its row at its own node count)")
    return out


def certify_rows(rows: list[dict]) -> None:
    """Fill each row's ``lossless`` column from an exact certificate of the same method (see
    :data:`LOSSLESS_SIZE`): ``yes`` (deviation exactly 0), ``LOSSY``, or ``not certified`` (the
    enumeration is over :data:`LOSSLESS_MAX_BRANCHES` or the method does not fit the pair)."""
    from .exact import certify
    from .pairs import example_pair

    pair, done = example_pair(), {}
    for r in rows:
        m = sweep_method(r["method"], LOSSLESS_SIZE, float(r["temperature"]))
        key = m.run_key()
        if key not in done:
            try:
                done[key] = "yes" if certify(pair, m, max_branches=LOSSLESS_MAX_BRANCHES).lossless else "LOSSY"
            except RheoError:
                done[key] = "not certified"
        r["lossless"] = done[key]


def _run_task(args) -> dict:
    """One sweep row (top-level so that worker processes can run it)."""
    cfg, task = args
    K, D, N = task["tree"]
    mv = mismatch_value(task["mismatch"])
    pair = SyntheticPair(cfg.vocab_size, seed=cfg.seed, mismatch=mv, temperature=task["temperature"],
                         temper_draft=cfg.temper_draft, draft_top_k=cfg.draft_top_k)
    method = sweep_method(task["method"], (K, D, N), task["temperature"])
    records: list = []
    res = run_steps(pair, method, cfg.steps, seed=cfg.seed, contexts=True, optimum=True, records=records)
    row = {
        "vocab_size": cfg.vocab_size, "draft_top_k": cfg.draft_top_k if cfg.draft_top_k is not None else "",
        "mismatch": str(task["mismatch"]), "mismatch_value": mv,
        "single_accept": single_draft_acceptance(pair, contexts=SINGLE_ACCEPT_CONTEXTS, seed=cfg.seed),
        "temperature": task["temperature"], "top_k": K, "depth": D, "budget": N,
        "method": task["method"], "description": method.describe(),
        "resolved": json.dumps(method.to_dict(), sort_keys=True), "steps": res.steps, "tau": res.tau,
        "tau_low": res.tau_low, "tau_high": res.tau_high, "node_accept": res.node_accept,
        "node_opt": res.node_opt, "nodes": res.nodes, "steps_per_second": res.steps_per_second, "seed": cfg.seed,
    }
    row["_lengths"] = [len(r.z) for r in records]
    return row


#: Steps each row runs in the pilot of :func:`estimate_seconds` (the fewest a run accepts).
PILOT_STEPS = 2

#: Seed of the pilot's steps: apart from every sweep's own (its rows are thrown away).
PILOT_SEED = 2**62 + 1

#: Contexts of a row's single-draft acceptance (the ``single_accept`` column).
SINGLE_ACCEPT_CONTEXTS = 50

#: Seconds a worker process takes to start and import numpy and this package before its first
#: row (measured: 0.3-0.5 s on a 2-core machine); paid once per worker when ``workers > 1``.
WORKER_START_SECONDS = 0.5


def estimate_seconds(cfg: SweepConfig) -> float:
    """Estimated wall seconds of :func:`run_sweep` on ``cfg``, from a pilot run here.

    Every row's method runs :data:`PILOT_STEPS` steps (seeded with :data:`PILOT_SEED`, so the
    sweep's own steps are untouched) and a row's fixed work (its single-draft acceptance) is timed
    once per mismatch level and temperature; the rows are shared among ``cfg.workers`` processes
    (plus :data:`WORKER_START_SECONDS` when there are several). The pilot costs about
    ``PILOT_STEPS / cfg.steps`` of the sweep, and its own time is included.

    Parameters
    ----------
    cfg : SweepConfig
        The sweep to estimate.

    Returns
    -------
    float
        The estimated seconds, the pilot's included.
    """
    t_start = time.perf_counter()
    tasks = cfg.tasks()
    fixed: dict = {}  # (mismatch, T) -> (pair, seconds of the row's fixed work)
    total = 0.0
    for task in tasks:
        key = (task["mismatch"], task["temperature"])
        if key not in fixed:
            pair = SyntheticPair(cfg.vocab_size, seed=cfg.seed, mismatch=mismatch_value(task["mismatch"]),
                                 temperature=task["temperature"], temper_draft=cfg.temper_draft,
                                 draft_top_k=cfg.draft_top_k)
            t0 = time.perf_counter()
            single_draft_acceptance(pair, contexts=SINGLE_ACCEPT_CONTEXTS, seed=cfg.seed)
            fixed[key] = (pair, time.perf_counter() - t0)
        pair, row_fixed = fixed[key]
        method = sweep_method(task["method"], task["tree"], task["temperature"])
        t0 = time.perf_counter()
        run_steps(pair, method, PILOT_STEPS, seed=PILOT_SEED, contexts=True, optimum=True)
        total += row_fixed + (time.perf_counter() - t0) / PILOT_STEPS * cfg.steps
    workers = max(1, min(cfg.workers, len(tasks)))
    start = WORKER_START_SECONDS if workers > 1 else 0.0
    return time.perf_counter() - t_start + start + total / workers


def _add_gains(rows: list[dict]) -> None:
    """Paired difference of tau against eagle on the same contexts (same seed, same config)."""
    key = lambda r: (r["mismatch"], r["temperature"], r["top_k"], r["depth"], r["budget"])  # noqa: E731
    eagle = {key(r): r["_lengths"] for r in rows if r["method"] == GAIN_BASELINE}
    for r in rows:
        base = eagle.get(key(r))
        if base is None or r["method"] == GAIN_BASELINE or len(base) != len(r["_lengths"]):
            r["gain_vs_eagle"] = r["gain_low"] = r["gain_high"] = ""
            continue
        d = np.asarray(r["_lengths"], dtype=float) - np.asarray(base, dtype=float)
        m = float(d.mean())
        half = Z_95 * float(d.std(ddof=1)) / math.sqrt(d.size)
        r["gain_vs_eagle"], r["gain_low"], r["gain_high"] = m, m - half, m + half


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C during a sweep; the message says how many rows were kept and where."""


def row_key(cfg: SweepConfig) -> dict:
    """What determines a sweep's rows: the configuration less its worker count (plain data)."""
    d = asdict(cfg)
    del d["workers"]
    return {"program": "rheo sweep", "log_fields": list(LOG_FIELDS), **d}


def _to_log(row: dict) -> dict:
    out = {k: v for k, v in row.items() if k in LOG_FIELDS}
    out["lengths"] = " ".join(str(int(n)) for n in row["_lengths"])
    return out


def _from_log(row: dict) -> dict:
    """A logged row back as :func:`_run_task` returned it (its lengths under ``_lengths``)."""
    out = {k: v for k, v in row.items() if k != "lengths"}
    out["_lengths"] = [int(n) for n in str(row["lengths"]).split()]
    return out


def _parse_log(field: str, text: str):
    return text if field in TEXT_FIELDS or field == "lengths" else parse_cell(text)


def run_sweep(cfg: SweepConfig, progress: bool = True, executor: str | Executor = "process",
              scheduler: str | None = None, log: RowLog | None = None, on_row=None) -> list[dict]:
    """Run every task of ``cfg``; rows in task order, identical whatever runs them.

    Parameters
    ----------
    cfg : SweepConfig
        What to sweep.
    progress : bool, default True
        Show a tqdm bar (rows already in ``log`` count as done).
    executor : {'process', 'dask', 'ray'} or concurrent.futures.Executor, default 'process'
        Where rows run (:func:`rheotheory.executors.open_executor` with ``cfg.workers`` and
        ``scheduler``), or an executor the caller manages.
    scheduler : str, optional
        Address of a dask scheduler or Ray cluster (with ``executor`` 'dask' or 'ray').
    log : RowLog, optional
        Rows already in it are not run again; every row finished here is appended to it.
    on_row : callable, optional
        ``on_row(index, row)`` after each finished row is logged (progress hooks, tests).

    Returns
    -------
    list of dict
        One row per task of ``cfg.tasks()`` (the columns of :data:`CSV_FIELDS` but ``lossless``),
        with the paired gains against ``eagle``.

    Raises
    ------
    RheoError
        If ``log`` holds a row for a task this sweep does not have.
    """
    tasks = cfg.tasks()
    rows: list = [None] * len(tasks)
    for key, row in (log.rows.items() if log is not None else ()):
        if not key.isdigit() or int(key) >= len(tasks):
            raise RheoError(f"--resume: {log.path} has a row for task {key!r}, which this sweep does not have")
        rows[int(key)] = _from_log(row)
    todo = [i for i, r in enumerate(rows) if r is None]
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(tasks), initial=len(tasks) - len(todo), desc="sweep", unit="row")
    try:
        with _executor(executor, cfg.workers, scheduler) as ex:
            for j, row in imap_unordered(ex, _run_task, [(cfg, tasks[i]) for i in todo]):
                rows[todo[j]] = row
                if log is not None:
                    log.append(todo[j], _to_log(row))
                if bar is not None:
                    bar.update(1)
                if on_row is not None:
                    on_row(todo[j], row)
    finally:
        if bar is not None:
            bar.close()
    _add_gains(rows)
    for r in rows:
        r.pop("_lengths", None)
    return rows


def _executor(executor, workers: int, scheduler):
    """``executor`` itself if the caller manages one, else a new one of that kind."""
    if isinstance(executor, Executor):
        from contextlib import nullcontext

        return nullcontext(executor)
    return open_executor(executor, workers, scheduler)


def write_csv(rows: list[dict], path) -> None:
    """Write the rows as a CSV of :data:`CSV_FIELDS` (atomically: temporary file, then rename).

    Floats are written with 6 significant digits; keys outside :data:`CSV_FIELDS` are left out.

    Parameters
    ----------
    rows : list of dict
        Sweep rows (:func:`run_sweep`, with ``lossless`` filled or not).
    path : str or os.PathLike
        The CSV file, replaced if it exists.
    """
    with atomic_open(path, newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items() if k in CSV_FIELDS})


def read_csv(path) -> list[dict]:
    """Rows of a sweep CSV with numbers parsed back."""
    out = []
    with Path(path).open() as f:
        for r in csv.DictReader(f):
            row = {}
            for k, v in r.items():
                try:
                    row[k] = float(v) if k not in ("method", "description", "mismatch", "resolved") and v != "" else v
                except ValueError:
                    row[k] = v
            out.append(row)
    return out


#: Methods whose legend still fits inside the first panel; more go below the panels.
LEGEND_INSIDE = 6


def plot_sweep(rows: list[dict], path, title: str = "") -> None:
    """Tau against temperature per method (95% bands), one panel per (mismatch, tree size).

    The PNG is written atomically (temporary file, then rename).

    Parameters
    ----------
    rows : list of dict
        Sweep rows (:func:`run_sweep` or :func:`read_csv`).
    path : str or os.PathLike
        The image file (PNG, 110 dpi), replaced if it exists.
    title : str, default ""
        The figure's title (none when empty).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = sorted({(r["mismatch"], int(r["top_k"]), int(r["depth"]), int(r["budget"])) for r in rows},
                    key=lambda p: (str(p[0]), p[1:]))
    methods = list(dict.fromkeys(r["method"] for r in rows))
    ncol = min(len(panels), 2 if len(panels) <= 4 else 3)
    nrow = math.ceil(len(panels) / ncol)
    # NOTE: one colour per method in every panel; past ten methods tab10's colours come round again,
    # told apart by square markers and dotted lines. Past LEGEND_INSIDE methods the legend goes below.
    cmap = plt.get_cmap("tab10")
    colour = {m: cmap(i % 10) for i, m in enumerate(methods)}
    second = {m for i, m in enumerate(methods) if i >= 10}
    outside = len(methods) > LEGEND_INSIDE
    legend_rows = math.ceil(len(methods) / 4) if outside else 0
    fig, axes = plt.subplots(nrow, ncol, figsize=(5.2 * ncol, 3.9 * nrow + 0.22 * legend_rows), squeeze=False)
    for ax, (mm, K, D, N) in zip(axes.flat, panels):
        for meth in methods:
            sel = sorted((r for r in rows if r["method"] == meth and r["mismatch"] == mm and int(r["top_k"]) == K
                          and int(r["depth"]) == D and int(r["budget"]) == N), key=lambda r: float(r["temperature"]))
            if not sel:
                continue
            T = [float(r["temperature"]) for r in sel]
            style = ":" if meth in second else "-" if meth.startswith("rheo") else "--"
            lw = 2.2 if meth in ("rheo", "eagle") else 1.5 if meth in second else 1.2
            line, = ax.plot(T, [float(r["tau"]) for r in sel], style, marker="s" if meth in second else "o", ms=3,
                            lw=lw, label=meth, color=colour[meth])
            ax.fill_between(T, [float(r["tau_low"]) for r in sel], [float(r["tau_high"]) for r in sel],
                            color=line.get_color(), alpha=0.15)
        acc = [float(r["single_accept"]) for r in rows if r["mismatch"] == mm and float(r["temperature"]) == 1.0]
        sub = f", 1-TV@T=1 {acc[0]:.2f}" if acc else ""
        ax.set_title(f"mismatch {mm}{sub}; K={K} D={D} N={N}", fontsize=9)
        ax.set_xlabel("temperature T")
        ax.set_ylabel("tokens per step (tau)")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    if outside:
        handles, labels = axes.flat[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=7, frameon=False)
    else:
        axes.flat[0].legend(fontsize=7, loc="best")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0.22 * legend_rows / (3.9 * nrow + 0.22 * legend_rows), 1, 1))
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110)
    plt.close(fig)


#: Footnotes of :func:`format_table`, printed under the table when a cell holds their mark.
NO_NODE_ACCEPT = ("-", "node acc -: no visited node had candidates (an empty tree, as autoregressive "
                  "sampling has): there is no per-node acceptance")
NO_NODE_OPT = ("n/a", "node opt n/a: the per-node optimum is not computed at a node with two or more sampled "
               "children that are not i.i.d. from one law (draws without replacement, say; "
               "rheotheory.montecarlo.node_optimum), nor where node acc is -")


#: The footnote of the table's ``lossless`` column.
LOSSLESS_NOTE = (f"lossless: an exact certificate of the row's method spec at K,D,N={','.join(map(str, LOSSLESS_SIZE))} "
                 "and the row's T on the built-in example pair (yes: deviation exactly 0), not of the sampled row; "
                 "nodes: mean draft nodes per step")


def format_table(rows: list[dict]) -> str:
    """A fixed-width text table of the main columns.

    A per-node column the sampler could not fill (``nan`` in the row) prints a mark instead of
    ``nan``, and a footnote under the table says why (:data:`NO_NODE_ACCEPT`,
    :data:`NO_NODE_OPT`); the footnote of the ``lossless`` column (:data:`LOSSLESS_NOTE`) always
    ends it.

    Parameters
    ----------
    rows : list of dict
        Sweep rows (:func:`run_sweep` or :func:`read_csv`).

    Returns
    -------
    str
        The table: a header, a rule, one line per row, a blank line and the footnotes.
    """
    head = ("mismatch", "T", "K", "D", "N", "nodes", "method", "tau", "95% CI", "vs eagle", "node acc", "node opt",
            "lossless", "steps/s")
    lines, notes = [], []
    for r in rows:
        g = r.get("gain_vs_eagle", "")
        gain = "" if g == "" else f"{float(g):+.3f} [{float(r['gain_low']):+.3f},{float(r['gain_high']):+.3f}]"
        cells = []
        for value, (mark, note) in ((float(r["node_accept"]), NO_NODE_ACCEPT), (float(r["node_opt"]), NO_NODE_OPT)):
            if math.isnan(value):
                cells.append(mark)
                if note not in notes:
                    notes.append(note)
            else:
                cells.append(f"{value:.3f}")
        lines.append((str(r["mismatch"]), f"{float(r['temperature']):g}", str(int(r["top_k"])), str(int(r["depth"])),
                      str(int(r["budget"])), f"{float(r['nodes']):.3g}", r["method"], f"{float(r['tau']):.3f}",
                      f"[{float(r['tau_low']):.3f},{float(r['tau_high']):.3f}]", gain, *cells,
                      str(r.get("lossless", "") or "-"), f"{float(r['steps_per_second']):.1f}"))
    widths = [max(len(h), *(len(l[i]) for l in lines)) if lines else len(h) for i, h in enumerate(head)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    table = [fmt.format(*head), fmt.format(*("-" * w for w in widths))] + [fmt.format(*l) for l in lines]
    notes = [note for _, note in (NO_NODE_ACCEPT, NO_NODE_OPT) if note in notes]  # NOTE: a fixed order
    notes.append(LOSSLESS_NOTE)
    return "\n".join(table + [""] + notes)


@dataclass(frozen=True)
class SweepOutputs:
    rows: list = field(default_factory=list)
    csv_path: str = ""
    png_path: str = ""
    seconds: float = 0.0


def sweep_to_files(cfg: SweepConfig, out_dir, stem: str = "sweep", progress: bool = True,
                   plot: bool = True, resume: bool = False, executor: str | Executor = "process",
                   scheduler: str | None = None, on_row=None) -> SweepOutputs:
    """Run the sweep and write ``stem.csv`` (and ``stem.png``) under ``out_dir``.

    Each finished row is logged to ``stem.csv.partial`` first (see the module docstring);
    ``resume=True`` continues from that log (refused if another configuration wrote it). The
    CSV and PNG are written atomically once every row is in, and then the log is removed.
    ``executor``, ``scheduler`` and ``on_row`` are those of :func:`run_sweep`.

    Raises
    ------
    SweepInterrupted
        On Ctrl-C: the finished rows stay in the log, and the message says so.
    """
    t0 = time.perf_counter()
    if not isinstance(executor, Executor):
        check_executor(executor, cfg.workers, scheduler)  # NOTE: before the log is created
    out = Path(out_dir)
    csv_path = out / f"{stem}.csv"
    log = RowLog(csv_path, row_key(cfg), LOG_FIELDS, resume=resume, parse=_parse_log)
    try:
        rows = run_sweep(cfg, progress=progress, executor=executor, scheduler=scheduler, log=log, on_row=on_row)
    except KeyboardInterrupt:
        log.close()
        raise SweepInterrupted(f"{len(log)} of {len(cfg.tasks())} rows kept in {log.path}; rerun with --resume "
                               "to continue") from None
    finally:
        log.close()
    certify_rows(rows)
    write_csv(rows, csv_path)
    png_path = ""
    if plot:
        sparse = f"sparse top-{cfg.draft_top_k}" if cfg.draft_top_k else "dense draft"
        png_path = str(out / f"{stem}.png")
        plot_sweep(rows, png_path, title=f"synthetic V={cfg.vocab_size}, {sparse}, {cfg.steps} steps/point, "
                   f"seed {cfg.seed}")
    log.finish()
    return SweepOutputs(rows, str(csv_path), png_path, time.perf_counter() - t0)
