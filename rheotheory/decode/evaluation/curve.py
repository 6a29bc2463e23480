r"""Tokens per step against temperature for a real model pair, paired across methods and resumable:
what ``rheo bench --out DIR`` writes.

The work is cut into blocks, one per (prompt set, temperature). A block decodes every prompt of
the set ``repeats`` times with every method, interleaved prompt by prompt, each method from a
generator seeded with the same seed (:func:`rheotheory.decode.evaluation.bench.run_bench`), so every method
meets the same prompts in the same order: a (prompt, repeat) **run** is the paired unit. Each
finished block is appended to ``runs.csv`` (one row per run and method); a rerun with the same
settings skips the blocks already there, so a killed bench resumes where it stopped (the block
in flight is redone). Every summary is computed from ``runs.csv`` alone, so a resumed bench
writes the same files as one that ran through.

Files under ``DIR``:

- ``settings.json``: what defines a block (model, the fingerprints of the target's and the
  draft's weights, device, threads, methods, prompts, seed,
  tokens per prompt, repeats); a rerun with other settings is refused. The temperatures are not
  part of it: a rerun with more temperatures adds their blocks to the same files.
- ``runs.csv``: prompt_set, temperature, method, prompt, repeat, steps, emitted, kept, seconds, nodes.
- ``curve.csv``: per (prompt set, temperature, method): tokens per step (tau) = emitted / steps
  with its 95% interval, accepted draft tokens per step (tau - 1), tokens/s, speed-up over
  autoregressive with its 95% interval, steps, runs, nodes per step, and the physical limit
  (tau x single pass / (pass at the tree's size + draft passes), from the pass costs measured
  after the bench, :mod:`rheotheory.decode.evaluation.budget`).
- ``standing.csv``: per (prompt set, temperature), the focus method (rheo-online when the bench runs
  it, else rheo-adaptive)
  against the best other tree method by tau: the difference and its paired 95% interval, and a
  verdict (higher / lower / tie: the interval excludes 0 or not).
- ``curve.png``: tau and speed-up against temperature, one column per prompt set.

Intervals: 95% percentile intervals of a **paired bootstrap over runs** (``BOOTSTRAP``
resamples of the runs of a block, the same resampled runs for every method, seed
``BOOTSTRAP_SEED``) of the ratio estimators: tau = sum(emitted) / sum(steps), tokens/s =
sum(kept) / sum(seconds), speed-up = a method's tokens/s over autoregressive's, differences of
tau between two methods. Resampling whole runs keeps the dependence between the steps of one
text inside the interval (the per-step interval of ``rheo bench``'s table does not).
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import numpy as np

__all__ = ["GRID", "FOCUS", "BOOTSTRAP", "BOOTSTRAP_SEED", "RUN_FIELDS", "run_curve", "read_runs", "summarize",
           "standing", "write_summaries", "merge_auto_sizes", "plot_curve", "format_standing", "fingerprint"]

#: Temperatures of a curve when none are given: 0, 0.25, ..., 1.5.
GRID = (0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5)
#: The method ``standing.csv`` compares with the best other one, when it is among the methods.
FOCUS = "rheo-adaptive"

#: The focus when a bench runs it: the online method (docs/theory.md section 2.8) against every fixed one.
ONLINE_FOCUS = "rheo-online"


def focus_of(names) -> str:
    """The method ``standing.csv`` sets against the best other: rheo-online when the bench runs it
    (or, without it, the first spec of it, e.g. ``rheo-online:explore_t0=0.3``), else :data:`FOCUS`."""
    names = list(names)
    if ONLINE_FOCUS in names:
        return ONLINE_FOCUS
    return next((n for n in names if n.startswith(ONLINE_FOCUS + ":")), FOCUS)


#: Bootstrap resamples of the runs of a block, and their seed.
BOOTSTRAP = 2000
BOOTSTRAP_SEED = 0
RUN_FIELDS = ("prompt_set", "temperature", "method", "prompt", "repeat", "steps", "emitted", "kept", "seconds",
              "nodes")


def _atomic_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def fingerprint(model) -> str | None:
    """SHA-256 (first 16 hex digits) of a model's parameters and buffers, names and bytes: what a
    resumed bench checks so that blocks measured with other weights (a newly shipped draft head)
    are never mixed with new ones.

    Parameters
    ----------
    model : torch.nn.Module or None
        Any model with a ``state_dict`` (entries hashed in name order).

    Returns
    -------
    str or None
        16 hex digits; None for no model.
    """
    import hashlib

    import torch

    if model is None:
        return None
    h = hashlib.sha256()
    with torch.no_grad():
        for name, t in sorted(list(model.state_dict().items()), key=lambda kv: kv[0]):
            h.update(name.encode())
            h.update(t.detach().to("cpu").contiguous().view(torch.uint8).numpy().tobytes()
                     if t.numel() else b"")
    return h.hexdigest()[:16]


def read_runs(path) -> list[dict]:
    """The rows of a ``runs.csv`` (numbers parsed).

    Parameters
    ----------
    path : str or os.PathLike
        The file; a missing one has no rows.

    Returns
    -------
    list of dict
        One dict per row, keyed by :data:`RUN_FIELDS`: ``temperature`` and ``seconds`` as float,
        ``prompt``, ``repeat``, ``steps``, ``emitted``, ``kept``, ``nodes`` as int.
    """
    path = Path(path)
    if not path.exists():
        return []
    out = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            out.append({"prompt_set": r["prompt_set"], "temperature": float(r["temperature"]), "method": r["method"],
                        "prompt": int(r["prompt"]), "repeat": int(r["repeat"]), "steps": int(r["steps"]),
                        "emitted": int(r["emitted"]), "kept": int(r["kept"]), "seconds": float(r["seconds"]),
                        "nodes": int(r["nodes"])})
    return out


def _write_runs(path: Path, rows: list[dict]) -> None:
    import io

    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=RUN_FIELDS, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: (repr(r[k]) if isinstance(r[k], float) else r[k]) for k in RUN_FIELDS})
    _atomic_text(path, buf.getvalue())


def run_curve(pair, named, temperatures, sets: dict, max_new_tokens: int, repeats: dict, seed: int, out,
              settings: dict, progress=None, log=None, named_at=None, **bench_kw) -> list[dict]:
    """Run (or resume) the bench of every (prompt set, temperature) block into ``out``; return the
    rows of ``runs.csv``.

    Blocks already in ``runs.csv`` are skipped; each finished block is written at once.

    Parameters
    ----------
    pair : ModelPair, SmolPair or HFPair
        ``target``, ``draft`` and ``encode``.
    named : list of tuple of (str, Method)
        (spec, method) pairs, autoregressive first
        (:func:`~rheotheory.decode.evaluation.bench.bench_methods`).
    temperatures : iterable of float
        The temperatures, one block per prompt set each.
    sets : dict[str, sequence]
        Prompt-set name -> prompts (texts or token-id lists).
    max_new_tokens : int
        Tokens generated per run.
    repeats : dict[str, int]
        Prompt-set name -> passes over its prompts.
    seed : int
        Seed of every method's generator in every block.
    out : str or os.PathLike
        The folder of ``settings.json`` and ``runs.csv`` (created if needed).
    settings : dict
        The JSON-ready record that defines the bench (checked against a previous run's).
    progress : callable, optional
        Called with 1 per decoded prompt, and with a skipped block's count of decodes.
    log : callable, optional
        Called with each finished block's table (str).
    named_at : callable, optional
        T -> the (spec, method) pairs run at T, when they depend on it (``--budget auto``); None:
        ``named`` at every T.
    **bench_kw : object
        Further arguments of :func:`~rheotheory.decode.evaluation.bench.run_bench` (``top_k``,
        ``top_p``, ``draft_temp``, ``draft_top_k``).

    Returns
    -------
    list of dict
        The rows of ``runs.csv`` (:func:`read_runs`' form), old and new.

    Raises
    ------
    RheoError
        If ``out`` holds a bench with other settings (naming the keys that differ).
    """
    from ...errors import RheoError
    from .bench import bench_runs, run_bench

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    spath = out / "settings.json"
    if spath.exists():
        old = json.loads(spath.read_text())
        if old != settings:
            changed = sorted(k for k in set(old) | set(settings) if old.get(k) != settings.get(k))
            raise RheoError(f"{out} holds a bench with other settings ({', '.join(changed)}); use another --out "
                            "or delete it")
    else:
        _atomic_text(spath, json.dumps(settings, indent=1) + "\n")
    rpath = out / "runs.csv"
    rows = read_runs(rpath)
    done = {(r["prompt_set"], r["temperature"]) for r in rows}
    for set_name, prompts in sets.items():
        for T in temperatures:
            block_named = named_at(T) if named_at is not None else named
            names = [n for n, _ in block_named]
            n_block = bench_runs(len(named), 1, len(prompts), repeats[set_name])
            if (set_name, float(T)) in done:
                if progress is not None:
                    progress(n_block)
                continue
            got = []
            block = run_bench(pair, [m for _, m in block_named], [T], max_new_tokens, repeats[set_name], seed,
                              prompts=prompts, names=names, progress=progress, runs=got, **bench_kw)
            if log is not None:
                from .bench import format_table

                log(f"{set_name}, T = {T:g}\n" + format_table(block))
            rows = [r for r in rows if (r["prompt_set"], r["temperature"]) != (set_name, float(T))]
            rows += [dict(r, prompt_set=set_name, temperature=float(T)) for r in got]
            _write_runs(rpath, rows)
    return rows


def _block(rows, set_name, T):
    """The block's runs as arrays per method, aligned on the (prompt, repeat) units."""
    sel = [r for r in rows if r["prompt_set"] == set_name and r["temperature"] == T]
    units = sorted({(r["prompt"], r["repeat"]) for r in sel})
    index = {u: i for i, u in enumerate(units)}
    methods = list(dict.fromkeys(r["method"] for r in sel))
    arr = {m: np.zeros((len(units), 5)) for m in methods}  # steps, emitted, kept, seconds, nodes
    for r in sel:
        arr[r["method"]][index[(r["prompt"], r["repeat"])]] = (r["steps"], r["emitted"], r["kept"], r["seconds"],
                                                               r["nodes"])
    return units, methods, arr


def _resamples(n: int) -> np.ndarray:
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    return rng.integers(0, n, size=(BOOTSTRAP, n))


def _interval(samples) -> tuple[float, float]:
    lo, hi = np.percentile(samples, [2.5, 97.5])
    return float(lo), float(hi)


def summarize(rows: list[dict]) -> list[dict]:
    """``curve.csv``'s rows (module docstring) from the runs; the first method of each block is the
    speed-up baseline (autoregressive).

    Parameters
    ----------
    rows : list of dict
        Runs (:func:`read_runs`' form).

    Returns
    -------
    list of dict
        Per (prompt set, temperature, method), prompt sets in order of appearance, temperatures
        ascending: ``tokens_per_step``, ``tau_low``, ``tau_high``, ``accepted_per_step``,
        ``tokens_per_second``, ``speedup``, ``speedup_low``, ``speedup_high``, ``steps``, ``runs``,
        ``nodes_per_step``.
    """
    out = []
    for set_name in dict.fromkeys(r["prompt_set"] for r in rows):
        for T in sorted({r["temperature"] for r in rows if r["prompt_set"] == set_name}):
            units, methods, arr = _block(rows, set_name, T)
            idx = _resamples(len(units))
            base = arr[methods[0]]
            base_rate = base[:, 2].sum() / base[:, 3].sum()
            base_boot = base[idx, 2].sum(1) / base[idx, 3].sum(1)
            for m in methods:
                a = arr[m]
                tau = a[:, 1].sum() / a[:, 0].sum()
                tau_boot = a[idx, 1].sum(1) / a[idx, 0].sum(1)
                rate = a[:, 2].sum() / a[:, 3].sum()
                sp_boot = (a[idx, 2].sum(1) / a[idx, 3].sum(1)) / base_boot
                (tlo, thi), (slo, shi) = _interval(tau_boot), _interval(sp_boot)
                out.append({"prompt_set": set_name, "temperature": T, "method": m, "tokens_per_step": tau,
                            "tau_low": tlo, "tau_high": thi, "accepted_per_step": tau - 1.0,
                            "tokens_per_second": rate, "speedup": rate / base_rate, "speedup_low": slo,
                            "speedup_high": shi, "steps": int(a[:, 0].sum()), "runs": len(units),
                            "nodes_per_step": a[:, 4].sum() / a[:, 0].sum()})
    return out


def standing(rows: list[dict], focus: str = FOCUS) -> list[dict]:
    """``standing.csv``'s rows: per block, ``focus`` against the other tree method with the highest
    tau, the paired difference of tau with its 95% interval and the verdict; empty when ``focus``
    is not among the methods.

    Parameters
    ----------
    rows : list of dict
        Runs (:func:`read_runs`' form).
    focus : str, default FOCUS
        The method set against the best other (:data:`FOCUS`).

    Returns
    -------
    list of dict
        Per block with ``focus`` and another tree method: ``focus``, ``focus_tau``, ``best_other``,
        ``best_other_tau``, ``difference``, ``diff_low``, ``diff_high``, ``verdict`` (``higher``,
        ``lower`` or ``tie``), ``runs``, ``steps_focus``, ``steps_best``.
    """
    out = []
    for set_name in dict.fromkeys(r["prompt_set"] for r in rows):
        for T in sorted({r["temperature"] for r in rows if r["prompt_set"] == set_name}):
            units, methods, arr = _block(rows, set_name, T)
            others = [m for m in methods[1:] if m != focus]
            if focus not in methods or not others:
                continue
            tau = {m: arr[m][:, 1].sum() / arr[m][:, 0].sum() for m in methods}
            best = max(others, key=lambda m: tau[m])
            idx = _resamples(len(units))
            a, b = arr[focus], arr[best]
            diff = a[idx, 1].sum(1) / a[idx, 0].sum(1) - b[idx, 1].sum(1) / b[idx, 0].sum(1)
            lo, hi = _interval(diff)
            verdict = "higher" if lo > 0 else "lower" if hi < 0 else "tie"
            out.append({"prompt_set": set_name, "temperature": T, "focus": focus, "focus_tau": tau[focus],
                        "best_other": best, "best_other_tau": tau[best], "difference": tau[focus] - tau[best],
                        "diff_low": lo, "diff_high": hi, "verdict": verdict, "runs": len(units),
                        "steps_focus": int(a[:, 0].sum()), "steps_best": int(b[:, 0].sum())})
    return out


def _write_csv(path: Path, rows: list[dict]) -> None:
    import io

    buf = io.StringIO()
    if rows:
        w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})
    _atomic_text(path, buf.getvalue())


def write_summaries(out, rows: list[dict], title: str = "", focus: str = FOCUS, costs: dict | None = None,
                    depths: dict | None = None, draft_s: float | None = None) -> dict:
    """Write ``curve.csv``, ``standing.csv`` and ``curve.png`` under ``out`` from the runs; return
    their paths. With ``costs`` (n -> seconds of a target pass over n tokens,
    :func:`rheotheory.decode.evaluation.budget.measured_costs`), ``depths`` (method -> tree depth) and
    ``draft_s`` (one draft pass), ``curve.csv`` gets the ``physical_limit`` column (a depth keyed by
    (method, T) overrides the method's): tau x c(1) /
    (c(nodes + 1) + depth x d), the speed-up the method would reach with zero overhead (1 for a
    method of depth 0).

    Parameters
    ----------
    out : str or os.PathLike
        The bench's folder (existing).
    rows : list of dict
        Runs (:func:`read_runs`' form).
    title : str, default ""
        The plot's title.
    focus : str, default FOCUS
        The focus of ``standing.csv`` (:func:`standing`).
    costs : dict[int, float], optional
        n -> seconds of a target pass over n tokens.
    depths : dict, optional
        Method -> tree depth, or (method, temperature) -> tree depth.
    draft_s : float, optional
        Seconds of one draft pass.

    Returns
    -------
    dict[str, pathlib.Path]
        ``runs``, ``curve``, ``standing`` and ``png`` -> their paths.
    """
    from .budget import physical_limit

    out = Path(out)
    curve = summarize(rows)
    if costs is not None:
        for r in curve:
            d = (depths or {}).get((r["method"], r["temperature"]), (depths or {}).get(r["method"], 0))
            r["physical_limit"] = (physical_limit(r["tokens_per_step"], costs, round(r["nodes_per_step"]), d,
                                                  draft_s) if d else 1.0)
    paths = {"runs": out / "runs.csv", "curve": out / "curve.csv", "standing": out / "standing.csv",
             "png": out / "curve.png"}
    _write_csv(paths["curve"], curve)
    _write_csv(paths["standing"], standing(rows, focus))
    plot_curve(curve, paths["png"], title)
    return paths


def merge_auto_sizes(path, records: list[dict]) -> Path:
    """``budget_auto.json``: the ``--budget auto`` choice of each (method, temperature) of a curve
    (size, pilot tau, physical limit, whether it pays), merged with the temperatures a previous run
    recorded (a rerun with more temperatures adds theirs).

    Parameters
    ----------
    path : str or os.PathLike
        The JSON file, read when it exists and rewritten.
    records : list of dict
        The new choices, each with ``method`` and ``temperature`` (replacing old ones of the same
        pair).

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    path = Path(path)
    old = json.loads(path.read_text()) if path.exists() else []
    new = {(r["method"], r["temperature"]) for r in records}
    merged = [r for r in old if (r["method"], r["temperature"]) not in new] + list(records)
    merged.sort(key=lambda r: (r["temperature"], r["method"]))
    _atomic_text(path, json.dumps(merged, indent=1) + "\n")
    return path


def plot_curve(curve: list[dict], path, title: str = "") -> None:
    """Tau (top) and speed-up over autoregressive (bottom) against temperature with 95% bands, one
    column per prompt set.

    With a single temperature each method is a point with its interval as an error bar. Needs
    ``matplotlib``.

    Parameters
    ----------
    curve : list of dict
        :func:`summarize`'s rows.
    path : str or os.PathLike
        The PNG written (atomically).
    title : str, default ""
        The figure's title.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sets = list(dict.fromkeys(r["prompt_set"] for r in curve))
    methods = list(dict.fromkeys(r["method"] for r in curve))
    temps = sorted({r["temperature"] for r in curve})
    # NOTE: one temperature has no curve: each method is a point with its interval as an error bar,
    # set apart from the others along the axis
    dodge = 0.0 if len(temps) > 1 else 0.08
    fig, axes = plt.subplots(2, len(sets), figsize=(5.4 * len(sets), 7.2), squeeze=False, sharex=True)
    for j, s in enumerate(sets):
        for i, meth in enumerate(methods):
            sel = sorted((r for r in curve if r["prompt_set"] == s and r["method"] == meth),
                         key=lambda r: r["temperature"])
            if not sel:
                continue
            T = [r["temperature"] + dodge * (i - (len(methods) - 1) / 2) for r in sel]
            style = "-" if meth.startswith("rheo") else "--"
            lw = 2.2 if meth in (FOCUS, "rheo-tuned") else 1.2
            for ax, key, lo, hi in ((axes[0, j], "tokens_per_step", "tau_low", "tau_high"),
                                    (axes[1, j], "speedup", "speedup_low", "speedup_high")):
                y = [r[key] for r in sel]
                if dodge:
                    ax.errorbar(T, y, yerr=[[v - r[lo] for v, r in zip(y, sel)], [r[hi] - v for v, r in zip(y, sel)]],
                                fmt="o", ms=4, capsize=3, lw=1.2, label=meth)
                    continue
                line, = ax.plot(T, y, style, marker="o", ms=3, lw=lw, label=meth)
                ax.fill_between(T, [r[lo] for r in sel], [r[hi] for r in sel], color=line.get_color(), alpha=0.15)
        steps = min((r["steps"] for r in curve if r["prompt_set"] == s and r["method"] != methods[0]),
                    default=0)
        axes[0, j].set_title(f"{s} (>= {steps} steps per point)", fontsize=9)
        axes[0, j].set_ylabel("tokens per step (tau)")
        axes[1, j].set_ylabel("speed-up over autoregressive")
        axes[1, j].axhline(1.0, color="grey", lw=0.8)
        axes[1, j].set_xlabel("temperature T")
        if dodge:
            axes[1, j].set_xticks(temps)
            axes[1, j].set_xlim(temps[0] - dodge * len(methods), temps[0] + dodge * len(methods))
        for ax in axes[:, j]:
            ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=7, loc="best")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    tmp = Path(path).with_name(Path(path).name + ".tmp.png")
    fig.savefig(tmp, dpi=110)
    os.replace(tmp, path)
    plt.close(fig)


def format_standing(rows: list[dict]) -> str:
    """``standing.csv`` as a Markdown table.

    Parameters
    ----------
    rows : list of dict
        :func:`standing`'s rows.

    Returns
    -------
    str
        The table: a header, a rule and one line per row.
    """
    lines = ["| prompts | T | focus | tau | best other | tau | difference [95% CI] | verdict |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['prompt_set']} | {r['temperature']:g} | {r['focus']} | {r['focus_tau']:.3f} | "
                     f"{r['best_other']} | {r['best_other_tau']:.3f} | {r['difference']:+.3f} "
                     f"[{r['diff_low']:+.3f}, {r['diff_high']:+.3f}] | {r['verdict']} |")
    return "\n".join(lines)
