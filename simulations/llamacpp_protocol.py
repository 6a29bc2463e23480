"""llama.cpp's own accept step at the audit's toy laws, through the process protocol.

Usage::

    python simulations/llamacpp_protocol.py [--runs 2000] [--family-runs 55000] [--only NAME ...] [--jobs N]
        [--merge] [--out DIR]

For each path of ``rheotheory.audit.engines.llamacpp_protocol.PATHS`` (llama-server's
``common_sampler_sample_and_accept_n`` and ``..._rejection``, each at T = 1 without a cut and at
T = 0.7 through llama.cpp's default chain), the harness built from the pinned sdist is audited as
``rheo audit --verifier-cmd HARNESS --framing binary --runs N [--setting ties]`` would (alpha
0.01, seed 0, the planted companion beside): ``--runs`` per setting on the 20 chain settings,
``--family-runs`` on the paths that run one family's 4 settings (``ties`` for the default-chain
paths, ``generic`` for the no-cut paths' second rows). Written to ``DIR/llamacpp_protocol.json``: per path
its verdict, p-value, the TV detected with power 0.8 in any one setting and averaged over the
settings, the rule its calls follow, its calls and the calls a minute (wall).

``llama-speculative``'s rule is not here: it lives in the example's ``main``, which reads logits
from two loaded models; ``llamacpp_speculative_toy.py`` runs the binary on two tiny models of
toy laws instead.

``render_md`` makes the guide's table (recipe ``llamacpp_protocol``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def render_md(folder: Path) -> str:
    """The guide's table of ``llamacpp_protocol.json``."""
    d = json.loads((Path(folder) / "llamacpp_protocol.json").read_text())
    from rheotheory.provenance import row_commands

    lines = [f"llama.cpp {d['llamacpp']} ({row_commands(d, 'paths')}): alpha 0.01, seed 0, the "
             "harness linked against the "
             "pinned build; N runs per setting; TV detected with power 0.8 in any one setting, and averaged over "
             "the path's settings (the pooled test).", "",
             "| path (its settings) | N | p | TV, any one setting | TV, averaged | verdict | calls follow |",
             "| --- | ---: | ---: | ---: | ---: | --- | --- |"]
    for r in d["paths"]:
        verdict = "not rejected" if r["verdict"] == "lossless" else f"**{r['verdict']}**"
        settings = str(r["settings"]).replace(" (", " settings (", 1)
        family = settings.rpartition("(")[2].rstrip(")")
        name = r["path"].removesuffix(f", {family}")  # NOTE: the settings name the family once
        lines.append(f"| {name}, {settings} | {r['runs']:,} | {r['p_value']:.3g} | "
                     f"{r['min_detectable_tv']:.3f} | {r['pooled_tv']:.3f} | {verdict} | `{r['follows'] or '-'}` |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=2000, help="runs per setting of the no-cut paths (20 settings)")
    ap.add_argument("--family-runs", "--ties-runs", type=int, default=55000, dest="family_runs",
                    help="runs per setting of the paths that run one family's 4 settings "
                         "(55,000 detect a TV under 0.03 in any one)")
    ap.add_argument("--only", action="append", default=None, metavar="NAME",
                    help="run this path only (a name of PATHS; repeat the option for several)")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes, one harness each (default 1)")
    ap.add_argument("--merge", action="store_true",
                    help="keep the rows of an existing DIR/llamacpp_protocol.json for the paths not run now")
    ap.add_argument("--out", type=Path, default=ROOT / "simulations" / "results" / "llamacpp_protocol")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    import torch

    from rheotheory.audit import api
    from rheotheory.audit.engines import llamacpp
    from rheotheory.audit.engines.llamacpp_protocol import PATHS, command

    torch.set_num_threads(1)
    from rheotheory.provenance import results_command

    made_by = results_command("simulations/llamacpp_protocol.py", argv)
    only = None if args.only is None else set(args.only)
    if only is not None and only - set(PATHS):
        ap.error(f"unknown path {sorted(only - set(PATHS))[0]!r}; the paths: {'; '.join(PATHS)}")
    rows = []
    for name, path in PATHS.items():
        if only is not None and name not in only:
            continue
        t0 = time.perf_counter()
        runs = args.family_runs if path.settings else args.runs
        res = api.audit_verifier(command=command(name), kind="chain", framing="binary", runs=runs,
                                 setting=path.settings, jobs=args.jobs)
        wall = sum(s.seconds for s in res.settings)
        rule = res.rule or {}
        row = dict(path=name, function=path.function, temperature=path.temperature, chain=path.chain,
                   settings=f"{len(res.settings)} ({path.settings or 'all'})", runs=runs, verdict=res.verdict,
                   p_value=res.p_value, min_detectable_tv=res.min_detectable_tv,
                   pooled_tv=(res.pooled or {}).get("min_detectable_tv"), follows=rule.get("follows"),
                   expected_rule=path.rule, rule_p={k: v["p_value"] for k, v in (rule.get("rules") or {}).items()},
                   companion=res.companion.verdict if res.companion else None, calls=res.calls,
                   calls_per_minute=round(60 * res.calls / max(wall, 1e-9)), seconds=round(time.perf_counter() - t0, 1),
                   command=made_by)
        rows.append(row)
        print(f"{name:<40} {row['verdict']:<9} p={row['p_value']:.3g} TV={row['min_detectable_tv']:.3f} "
              f"avg={row['pooled_tv']:.3f} follows={row['follows']} calls/min={row['calls_per_minute']:,}", flush=True)
    target = args.out / "llamacpp_protocol.json"
    if args.merge:  # NOTE: each row keeps the command that made it
        from rheotheory.provenance import merge_rows

        rows = merge_rows(target, rows, "path", "paths")
    out = dict(command=made_by, llamacpp=llamacpp.PINNED, runs=args.runs, family_runs=args.family_runs, paths=rows)
    args.out.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(out, indent=1) + "\n")
    return 0 if all(r["verdict"] != "differs" or r["follows"] for r in rows) else 1


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(main())
