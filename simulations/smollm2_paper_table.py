"""The seed paper's table at its own tree size on SmolLM2-135M-Instruct: tokens per step of every
method at K, D, N = 10, 6, 60 against temperature, on ShareGPT, HumanEval and MT-Bench.

Usage::

    python simulations/smollm2_paper_table.py --out simulations/results/smollm2_paper_table
    python simulations/smollm2_paper_table.py --out DIR --summarize   # re-render what is done

Each (depth, temperature, prompt set, prompt, method) decode is one **unit of work**, logged
(flushed and fsynced) to ``runs.csv.partial`` as soon as it finishes
(:class:`rheotheory.checkpoint.RowLog`): a stopped run loses at most the decode in flight and a
rerun of the same command resumes after the last logged one (a checkout holding only the
committed ``runs.csv`` resumes from it). The work runs in the order that answers the most first:
T = 1 on every set, then T = 0, 0.5, 1.5; within a temperature prompt by prompt, the sets in
turn, so that at any stop the three cells of a temperature hold about as many prompts each.

**Pairing.** Every method decodes prompt i of set S at temperature T from a generator seeded
with the same seed (``unit_seed``), so the prompts are the paired units of the intervals.
Two methods that resolve to the very same method at T (rheo-tuned and rheo-adaptive are the EAGLE
tree at T = 0; rheo-adaptive is rheo-tuned at T = 0.5) would decode the very same tokens from
the same seed: the decode is made once and logged for both (``same_as`` names the one that ran).

**Summaries** (written when the grid is complete, and at any time by ``--summarize``, from
the logged rows alone; each with its provenance, which says how many of the grid's decodes are
done; ``--summaries`` rewrites them after every round of prompts too):

- ``runs.csv``: one row per decode (steps, emitted tokens, the per-step sizes |Z| as digits,
  tree nodes, CPU seconds of the decode on one thread: ``time.process_time``, machine-dependent,
  never published as a speed);
- ``table.csv``: per (depth, set, T, method) over the prompts every method of the cell has:
  tau = emitted / steps with its 95% interval, the difference to EAGLE and to the best other
  method with their paired intervals, and verdicts (higher / lower / tie: the interval excludes
  0 or not; none below :data:`MIN_VERDICT_PROMPTS` prompts). Intervals: percentile intervals of a **paired bootstrap over prompts**
  (:data:`BOOTSTRAP` resamples, seed :data:`BOOTSTRAP_SEED`), the same resampled prompts for
  every method of the cell;
- ``tau_vs_T.png``: tau against T with the 95% intervals, one panel per set.

Tokens per step does not depend on the machine or its load; no wall-clock figure is written.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import sys
import time
import zlib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

#: The methods of the paper's table, in the order they are decoded and shown.
METHODS = ("eagle", "rheo", "rheo-tuned", "rheo-adaptive", "static-wor", "chain")
#: Temperatures in the order they are run (the most informative first).
TEMPERATURES = (1.0, 0.0, 0.5, 1.5)
SETS = ("sharegpt", "humaneval", "mtbench")
#: Fewest prompts a cell needs for a verdict: below it the interval is still written, but with
#: so few prompts the bootstrap has few distinct resamples (3 with 2 prompts) and says little.
MIN_VERDICT_PROMPTS = 8
#: Bootstrap resamples of the prompts of a cell, and their seed.
BOOTSTRAP = 2000
BOOTSTRAP_SEED = 0
#: Columns of a logged decode.
FIELDS = ("depth", "prompt_set", "temperature", "prompt", "prompt_id", "method", "same_as", "steps", "emitted",
          "kept", "nodes", "sizes", "cpu_seconds")
#: With ``--summaries``, the summaries are rewritten after every this many decodes.
SUMMARY_EVERY = 18

#: The results files the summaries write (relative to ``--out``).
OUTPUTS = ("settings.json", "runs.csv", "table.csv", "tau_vs_T.png")


def fail(msg: str) -> None:
    print(f"smollm2_paper_table: {msg}", file=sys.stderr)
    raise SystemExit(2)


def unit_seed(seed: int, set_name: str, T: float, prompt: int) -> int:
    """The generator seed of prompt ``prompt`` of ``set_name`` at ``T``: the same for every method
    (the pairing) and for every depth, independent of the order the work runs in."""
    return seed * 1_000_003 + zlib.crc32(f"{set_name}|{T!r}|{prompt}".encode())


def unit_key(depth: int, set_name: str, T: float, prompt: int, method: str) -> str:
    return f"D{depth}|{set_name}|T{T!r}|p{prompt}|{method}"


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="results folder (resumable)")
    ap.add_argument("--model", choices=("smollm2", "builtin"), default="smollm2",
                    help="smollm2 (the table), or builtin (the character pair: a quick check of the script)")
    ap.add_argument("--draft", default=None, help="SmolLM2 draft (default: the shipped head)")
    ap.add_argument("--sets", default=",".join(SETS), help="prompt sets (default %(default)s)")
    ap.add_argument("--prompts", type=int, default=24, help="prompts per set (default %(default)s)")
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--temperatures", default=",".join(f"{t:g}" for t in TEMPERATURES),
                    help="in the order they run (default %(default)s)")
    ap.add_argument("--top-k", type=int, default=10)
    ap.add_argument("--depths", default="6", help="tree depths, each a full grid after the previous one")
    ap.add_argument("--budget", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1, help="torch threads of each worker (default 1)")
    ap.add_argument("--workers", type=int, default=1,
                    help="decodes at once: worker processes (process executor), a local dask cluster's or Ray's "
                    "CPUs; each loads the models once (default 1: this process)")
    ap.add_argument("--executor", choices=("process", "dask", "ray"), default="process",
                    help="where the decodes run, as for rheo sweep (default process)")
    ap.add_argument("--scheduler", default=None, help="address of a running dask scheduler or Ray cluster")
    ap.add_argument("--max-decodes", type=int, default=None,
                    help="make at most this many decodes in this run, then stop (the grid resumes)")
    ap.add_argument("--summarize", action="store_true", help="only rewrite the summaries from the logged rows")
    ap.add_argument("--summaries", action="store_true",
                    help=f"rewrite the summaries after every {SUMMARY_EVERY} decodes too (default: at the end only, so "
                    "that committed summaries stay as committed while a long run goes on; --summarize writes "
                    "them at any time)")
    args = ap.parse_args(argv)
    try:
        args.temps = [float(t) for t in args.temperatures.split(",")]
        args.depth_list = [int(d) for d in args.depths.split(",")]
    except ValueError:
        fail("--temperatures and --depths take comma-separated numbers")
    args.set_list = [s for s in args.sets.split(",") if s]
    args.method_list = [m for m in args.methods.split(",") if m]
    if "eagle" not in args.method_list:
        fail("--methods must include eagle (every method is compared with it)")
    if args.prompts < 1 or args.max_new_tokens < 1 or any(d < 1 for d in args.depth_list):
        fail("--prompts, --max-new-tokens and --depths must be positive")
    if args.workers < 1 or args.threads < 1 or (args.max_decodes is not None and args.max_decodes < 0):
        fail("--workers and --threads must be positive, --max-decodes non-negative")
    if args.model == "builtin" and args.set_list != ["builtin"]:
        args.set_list = ["builtin"]
    return args


def resolve_methods(args, depth: int) -> dict:
    """name -> method at (K, depth, N); fields a family lacks (a chain has no K or N) are not set."""
    from rheotheory.decode.evaluation.bench import bench_methods

    got = bench_methods(args.method_list, size="smollm2", top_k=args.top_k, depth=depth, budget=args.budget)
    return {n: m for n, m in got if n != "autoregressive"}


def settings_of(args, pair_desc: dict) -> dict:
    """What defines the grid's rows; a resumed run must match it (the temperatures' order and the
    depths beyond the first may grow, they are not part of it)."""
    methods = {}
    for d in args.depth_list:
        for name, m in resolve_methods(args, d).items():
            methods[f"D{d} {name}"] = {f"{t:g}": m.at_temperature(t).to_dict() for t in args.temps}
    return {"model": args.model, **pair_desc, "sets": args.set_list, "prompts": args.prompts,
            "max_new_tokens": args.max_new_tokens, "top_k": args.top_k, "budget": args.budget,
            "seed": args.seed, "methods_resolved": methods}


# ----------------------------------------------------------------------------------------------
# the logged rows


def read_rows(out: Path) -> list[dict]:
    """The logged decodes: ``runs.csv.partial`` read-only (a torn last line is skipped, the
    writer may be appending), else the committed ``runs.csv``."""
    from rheotheory.checkpoint import HEADER_PREFIX, parse_cell

    log = out / "runs.csv.partial"
    if log.exists():
        data = log.read_bytes()
        data = data[:data.rfind(b"\n") + 1]
        lines = [ln for ln in data.decode().splitlines(keepends=True) if not ln.startswith(HEADER_PREFIX)]
        reader = csv.reader(io.StringIO("".join(lines), newline=""))
        header = next(reader, None) or []
        rows = [dict(zip(header[1:], (parse_cell(c) for c in rec[1:]))) for rec in reader
                if len(rec) == len(header)]
    elif (out / "runs.csv").exists():
        with open(out / "runs.csv", newline="") as f:
            rows = [{k: parse_cell(v) for k, v in r.items()} for r in csv.DictReader(f)]
    else:
        rows = []
    for r in rows:
        r["temperature"] = float(r["temperature"])
        r["sizes"] = str(r["sizes"])
        r["same_as"] = str(r["same_as"] or "")
    return rows


# ----------------------------------------------------------------------------------------------
# running


#: Per worker process: the loaded model pair, reused by every decode the process runs.
_WORKER: dict = {}


def _pair(model: str, draft: str | None, threads: int):
    """The model pair of a worker process, loaded once (``decode_unit`` runs many decodes)."""
    import torch

    from rheotheory.cli.models import set_threads

    key = (model, draft)
    if _WORKER.get("key") != key:
        set_threads(torch, threads)
        if model == "smollm2":
            from rheotheory.decode.backends.smollm_pair import DEFAULT_DRAFT, load_smollm2

            pair = load_smollm2("cpu", draft=draft or DEFAULT_DRAFT)
        else:
            from rheotheory.decode.backends.builtin import load_builtin_pair

            pair = load_builtin_pair("cpu")
        _WORKER.update(key=key, pair=pair)
    return _WORKER["pair"]


def decode_unit(task: dict) -> dict:
    """One decode, the grid's unit of work, run wherever the executor puts it: ``task`` carries
    everything that determines the row (model, prompt tokens, method, temperature, seed), so the
    row does not depend on the worker, the executor or the order units finish in."""
    import torch

    from rheotheory.decode.engine import DecodeConfig, decode
    from rheotheory.methods import resolve

    pair = _pair(task["model"], task["draft"], task["threads"])
    gen = torch.Generator().manual_seed(task["seed"])
    cfg = DecodeConfig(temperature=task["temperature"], max_new_tokens=task["max_new_tokens"])
    c0 = time.process_time()
    r = decode(pair.target, pair.draft, list(task["ids"]), resolve(task["method"]), cfg, gen)
    sizes = [s.accepted + 1 for s in r.steps]
    return {"steps": len(r.steps), "emitted": sum(sizes), "kept": len(r.tokens),
            "nodes": sum(s.tree_nodes for s in r.steps),
            "sizes": "".join(str(z) if z < 10 else f"({z})" for z in sizes),
            "cpu_seconds": round(time.process_time() - c0, 3)}


#: CPU seconds of one decode assumed by the estimate before any decode of the grid is logged
#: (SmolLM2 at K,D,N = 10,6,60, 64 tokens, one thread: 5-35 s measured, by method and load).
DEFAULT_DECODE_CPU_SECONDS = 20.0


def estimate_cpu_seconds(rows: list[dict], todo: list[str]) -> float:
    """CPU seconds of the decodes still to make (``todo``: their method names): each at the median
    CPU seconds of that method's logged decodes, or of every logged decode, or the default."""
    made = [r for r in rows if not r["same_as"]]
    every = float(np.median([float(r["cpu_seconds"]) for r in made])) if made else DEFAULT_DECODE_CPU_SECONDS
    per = {}
    for m in set(todo):
        mine = [float(r["cpu_seconds"]) for r in made if r["method"] == m]
        per[m] = float(np.median(mine)) if mine else every
    return sum(per[m] for m in todo)


def run(args) -> None:
    from rheotheory.checkpoint import RowLog
    from rheotheory.decode.evaluation.bench import chat_template_of
    from rheotheory.decode.evaluation.curve import fingerprint
    from rheotheory.errors import RheoError
    from rheotheory.executors import imap_unordered, open_executor
    from rheotheory.prompts import encode_prompts, load_prompts

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    pair = _pair(args.model, args.draft, args.threads)
    if args.model == "smollm2":
        from rheotheory.decode.backends.smollm import SMOL_PROMPTS as builtin
    else:
        from rheotheory.decode.evaluation.bench import BENCH_PROMPTS as builtin
    try:
        chosen = load_prompts(",".join(f"{s}:{args.prompts}" for s in args.set_list), builtin)
    except RheoError as e:
        fail(str(e))
    template = chat_template_of(pair) if any(p.chat for ps in chosen.values() for p in ps) else None
    sets = {name: (ps, encode_prompts(ps, pair, template)) for name, ps in chosen.items()}
    positions = getattr(pair.target.cfg, "max_len", None)
    longest = max(len(ids) for _, enc in sets.values() for ids in enc)
    if positions is not None and longest + args.max_new_tokens + max(args.depth_list) + 1 > positions:
        fail(f"a prompt of {longest} tokens + {args.max_new_tokens} new tokens + the tree exceed the model's "
             f"{positions} positions")
    desc = {"draft": args.draft or "head", "target_sha256": fingerprint(pair.target),
            "draft_sha256": fingerprint(pair.draft), "draft_top_k": "auto (top-128 above 1024 tokens)",
            "prompt_ids": {name: [p.id for p in ps] for name, (ps, _) in sets.items()}}
    settings = settings_of(args, desc)
    spath = out / "settings.json"
    if spath.exists():
        old = json.loads(spath.read_text())
        olds, news = old["methods_resolved"], settings["methods_resolved"]
        if {k: v for k, v in old.items() if k != "methods_resolved"} != \
                {k: v for k, v in settings.items() if k != "methods_resolved"} or any(
                olds.get(k, {}).get(t, d) != d for k, per_t in news.items() for t, d in per_t.items()):
            fail(f"{out} holds a grid of other settings; use another --out or delete it")
        settings["methods_resolved"] = {k: {**olds.get(k, {}), **news.get(k, {})} for k in {**olds, **news}}
    spath.write_text(json.dumps(settings, indent=1) + "\n")
    log_cfg = {k: v for k, v in settings.items() if k != "methods_resolved"}
    log_path = out / "runs.csv.partial"
    if not log_path.exists() and (out / "runs.csv").exists():
        # NOTE: a checkout holding only the committed rows resumes from them
        old_rows = read_rows(out)
        with RowLog(out / "runs.csv", log_cfg, FIELDS, resume=True) as log:
            for r in old_rows:
                log.append(unit_key(r["depth"], r["prompt_set"], r["temperature"], r["prompt"], r["method"]), r)
    total = len(args.depth_list) * len(args.temps) * args.prompts * len(sets) * len(args.method_list)
    started = time.time()
    with RowLog(out / "runs.csv", log_cfg, FIELDS, resume=True) as log:
        # The units in the order that answers the most first (module docstring). Methods that resolve
        # to the same method at T share one decode: the first name decodes, the others copy its row.
        tasks: list[tuple[list[str], dict, dict]] = []  # (names, row template, task)
        for depth in args.depth_list:
            methods = resolve_methods(args, depth)
            for T in args.temps:
                for i in range(args.prompts):
                    for set_name, (ps, enc) in sets.items():
                        if i >= len(ps):
                            continue
                        groups: dict[str, list[str]] = {}
                        for name, m in methods.items():
                            groups.setdefault(json.dumps(m.at_temperature(T).to_dict(), sort_keys=True), []).append(name)
                        for names in groups.values():
                            keys = {n: unit_key(depth, set_name, T, i, n) for n in names}
                            done = [n for n in names if keys[n] in log]
                            base = {"depth": depth, "prompt_set": set_name, "temperature": T, "prompt": i,
                                    "prompt_id": ps[i].id}
                            if done:  # NOTE: decoded before: the other names copy its row
                                row = log.rows[keys[done[0]]]
                                first = row["same_as"] or done[0]
                                for n in names:
                                    if keys[n] not in log:
                                        log.append(keys[n], dict(row, method=n, same_as=first))
                                continue
                            tasks.append((names, base, {
                                "model": args.model, "draft": args.draft, "threads": args.threads,
                                "ids": [int(t) for t in enc[i]], "method": methods[names[0]].to_dict(),
                                "temperature": T, "max_new_tokens": args.max_new_tokens,
                                "seed": unit_seed(args.seed, set_name, T, i)}))
        if args.max_decodes is not None:
            tasks = tasks[:args.max_decodes]
        cpu = estimate_cpu_seconds(read_rows(out), [names[0] for names, _, _ in tasks])
        print(f"{len(log)} of {total} decodes logged in {log.path}; {len(tasks)} to make, about "
              f"{cpu / 3600:.2f} CPU hours (about {cpu / 3600 / args.workers:.2f} hours on {args.workers} "
              f"worker(s) of one thread each)", flush=True)
        made = 0
        with open_executor(args.executor, args.workers, args.scheduler) as ex:
            for k, res in imap_unordered(ex, decode_unit, (t for _, _, t in tasks), window=2 * args.workers):
                names, base, task = tasks[k]
                for j, n in enumerate(names):
                    log.append(unit_key(base["depth"], base["prompt_set"], base["temperature"], base["prompt"], n),
                               {**base, **res, "method": n, "same_as": names[0] if j else ""})
                made += 1
                print(f"D={base['depth']} T={base['temperature']:g} {base['prompt_set']} #{base['prompt']} "
                      f"{','.join(names)}: tau {res['emitted'] / res['steps']:.3f} ({res['steps']} steps, "
                      f"{res['cpu_seconds']:.0f} CPU s) [{made}/{len(tasks)}]", flush=True)
                if args.summaries and made % SUMMARY_EVERY == 0:
                    summarize(args, out, started, total)
    summarize(args, out, started, total)
    if len(read_rows(out)) >= total:
        log.finish()  # NOTE: the grid is complete: runs.csv holds every row (a rerun rebuilds the log from it)


# ----------------------------------------------------------------------------------------------
# summaries


def _units(rows, depth, set_name, T, methods):
    """The cell's prompts every method has, and per method the arrays (steps, emitted) on them."""
    cell = [r for r in rows if r["depth"] == depth and r["prompt_set"] == set_name and r["temperature"] == T]
    have = {m: {r["prompt"]: r for r in cell if r["method"] == m} for m in methods}
    units = sorted(set.intersection(*(set(h) for h in have.values()))) if have else []
    arr = {m: np.array([[have[m][u]["steps"], have[m][u]["emitted"]] for u in units], dtype=float).reshape(-1, 2)
           for m in methods}
    return units, arr


def _interval(x) -> tuple[float, float]:
    lo, hi = np.percentile(x, [2.5, 97.5])
    return float(lo), float(hi)


def _verdict(lo: float, hi: float, n: int) -> str:
    if n < MIN_VERDICT_PROMPTS:
        return f"n < {MIN_VERDICT_PROMPTS}: no verdict"
    return "higher" if lo > 0 else "lower" if hi < 0 else "tie"


def table_rows(rows: list[dict], methods: list[str], grid: dict) -> list[dict]:
    """``table.csv``'s rows (module docstring) for every cell of ``grid``: (depth, set) -> temperatures.
    A cell with no prompt every method has gives rows with empty numbers."""
    out = []
    for (depth, set_name), temps in grid.items():
        for T in temps:
            units, arr = _units(rows, depth, set_name, T, methods)
            n = len(units)
            tau = {m: float(arr[m][:, 1].sum() / arr[m][:, 0].sum()) for m in methods} if n else {}
            boot = {}
            if n >= 2:
                idx = np.random.default_rng(BOOTSTRAP_SEED).integers(0, n, size=(BOOTSTRAP, n))
                boot = {m: arr[m][idx, 1].sum(1) / arr[m][idx, 0].sum(1) for m in methods}
            for m in methods:
                r = {"depth": depth, "prompt_set": set_name, "temperature": T, "method": m, "prompts": n,
                     "steps": int(arr[m][:, 0].sum()) if n else 0}
                if not n:
                    out.append(r)
                    continue
                others = [o for o in methods if o != m]
                best = max(others, key=lambda o: tau[o])
                r.update(tau=tau[m], tau_low=math.nan, tau_high=math.nan, vs_eagle=tau[m] - tau["eagle"],
                         vs_eagle_low=math.nan, vs_eagle_high=math.nan, vs_eagle_verdict="",
                         best_other=best, best_other_tau=tau[best], vs_best=tau[m] - tau[best],
                         vs_best_low=math.nan, vs_best_high=math.nan, vs_best_verdict="")
                if boot:
                    r["tau_low"], r["tau_high"] = _interval(boot[m])
                    if m != "eagle":
                        r["vs_eagle_low"], r["vs_eagle_high"] = _interval(boot[m] - boot["eagle"])
                        r["vs_eagle_verdict"] = _verdict(r["vs_eagle_low"], r["vs_eagle_high"], n)
                    r["vs_best_low"], r["vs_best_high"] = _interval(boot[m] - boot[best])
                    r["vs_best_verdict"] = _verdict(r["vs_best_low"], r["vs_best_high"], n)
                out.append(r)
    return out


def _write_csv(path: Path, rows: list[dict], fields=None) -> None:
    from rheotheory.checkpoint import atomic_open

    keys = list(fields or ())
    for r in rows:
        keys += [k for k in r if k not in keys]
    with atomic_open(path, newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: (repr(v) if isinstance(v, float) and not math.isnan(v) else "" if isinstance(v, float)
                            else v) for k, v in r.items()})


def plot(table: list[dict], path: Path, methods: list[str], title: str) -> None:
    """Tau against T with its 95% interval, one panel per prompt set (the first depth)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from rheotheory.checkpoint import atomic_path

    depth = min(r["depth"] for r in table)
    sets = list(dict.fromkeys(r["prompt_set"] for r in table))
    fig, axes = plt.subplots(1, len(sets), figsize=(3.4 * len(sets), 3.4), sharey=True, squeeze=False)
    for ax, s in zip(axes[0], sets):
        for k, m in enumerate(methods):
            pts = sorted((r["temperature"], r) for r in table
                         if r["depth"] == depth and r["prompt_set"] == s and r["method"] == m and r["prompts"])
            if not pts:
                continue
            x = np.array([t for t, _ in pts]) + (k - (len(methods) - 1) / 2) * 0.03
            y = np.array([r["tau"] for _, r in pts])
            lo = np.array([r["tau_low"] for _, r in pts])
            hi = np.array([r["tau_high"] for _, r in pts])
            err = np.vstack([y - lo, hi - y])
            err = np.where(np.isfinite(err), err, 0.0)
            ax.errorbar(x, y, yerr=err, marker="o", ms=3, capsize=2, lw=1, label=m)
        n = sorted({r["prompts"] for r in table if r["depth"] == depth and r["prompt_set"] == s and r["prompts"]})
        ax.set_title(f"{s} ({'-'.join(str(v) for v in (n[:1] + n[-1:] if len(n) > 1 else n)) or 0} prompts)")
        ax.set_xlabel("temperature T")
        ax.set_xlim(-0.15, 1.65)
        ax.set_xticks(sorted({r["temperature"] for r in table}))
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("tokens per step (95% CI)")
    handles = {}
    for ax in axes[0]:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    if handles:
        axes[0][-1].legend(list(handles.values()), list(handles), fontsize=7, loc="best")
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110)
    plt.close(fig)


def summarize(args, out: Path, started: float | None = None, total: int | None = None) -> None:
    from rheotheory.provenance import write_provenance

    out = Path(out)
    rows = read_rows(out)
    if not rows:
        fail(f"{out} holds no logged decodes")
    settings = json.loads((out / "settings.json").read_text())
    methods = [m for m in args.method_list]
    grid = {(d, s): list(args.temps) for d in args.depth_list for s in settings["sets"]}
    rows.sort(key=lambda r: (r["depth"], r["prompt_set"], r["temperature"], r["prompt"],
                             methods.index(r["method"]) if r["method"] in methods else 99))
    _write_csv(out / "runs.csv", [{k: r.get(k, "") for k in FIELDS} for r in rows], FIELDS)
    table = table_rows(rows, methods, grid)
    _write_csv(out / "table.csv", table)
    plot(table, out / "tau_vs_T.png", methods,
         f"SmolLM2-135M-Instruct, shipped head, K,D,N = {args.top_k},{min(args.depth_list)},{args.budget}, "
         f"{args.max_new_tokens} tokens per prompt")
    total = total or len(args.depth_list) * len(args.temps) * args.prompts * len(settings["sets"]) * len(methods)
    progress = {"decodes_logged": len(rows), "decodes_in_grid": total,
                "complete": len(rows) >= total,
                "cpu_seconds_logged": round(sum(float(r["cpu_seconds"]) for r in rows if not r["same_as"]), 1)}
    for name in OUTPUTS:
        write_provenance(out / name, seed=args.seed, started=started, settings=settings, progress=progress,
                         recipe="smollm2_paper_table",
                         command=["python", "simulations/smollm2_paper_table.py",
                                  *[a for a in sys.argv[1:] if a != "--summarize"]])


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.summarize:
        out = Path(args.out)
        if not (out / "settings.json").exists():
            fail(f"{out} holds no grid (no settings.json)")
        summarize(args, out)
        print(f"wrote {', '.join(str(out / o) for o in OUTPUTS)}")
        return 0
    run(args)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(main())
