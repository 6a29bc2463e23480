"""``llama-speculative``'s own binary at the audit's toy laws: the finding, with its exact TV.

Usage::

    python simulations/llamacpp_speculative_toy.py [--runs 7500] [--control-runs 2000] [--jobs 2]
        [--only NAME ...] [--merge] [--out DIR]

The unchanged ``llama-speculative`` of the pinned build runs on a pair of tiny GGUF models whose
next-token laws are the toy target ``p`` and draft ``q`` of one family
(``rheotheory.audit.engines.llamacpp_toy``: their logits are set by the audit, so the law every
run must follow is known exactly), one process per run, T = 1, one-token drafts; the first two
tokens it emits are tested against the target's law (alpha 0.01, seed 0, one setting per row:
``rheotheory.audit.core.run_audit``) and against the exact law of the rule the engine's code was
read to follow (``llamacpp_toy.rule_law``: the same test with that law as the null). A row says
the verdict, the TV detected with power 0.8, the rule's exact TV from the target, the observed
TV of the runs from the target and from the rule's law, and the p-value of the fit to the rule.

Rows (``llamacpp_toy.TOY_SETTINGS`` and ``CONTROL``): no cut on the ``generic`` family (every
token in both candidate lists: only the arg-max draft is wrong), the default chain on the
``ties`` family (the chain leaves those laws as they are; the residual of id-sorted lists is
wrong too), and the control: ``llama-speculative-simple`` (draft-and-match) on the no-cut pair,
which must not be rejected. Written to ``DIR/llamacpp_speculative_toy.json``; ``render_md``
makes the audit guide's table (recipe ``llamacpp_speculative_toy``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _tv(counts: Counter, n: int, law: dict) -> float:
    keys = set(counts) | set(law)
    return 0.5 * sum(abs(counts.get(k, 0) / n - float(law.get(k, 0))) for k in keys)


def render_md(folder: Path) -> str:
    """The guide's table of ``llamacpp_speculative_toy.json``."""
    d = json.loads((Path(folder) / "llamacpp_speculative_toy.json").read_text())
    from rheotheory.provenance import row_commands

    lines = [f"llama.cpp {d['llamacpp']} ({row_commands(d, 'rows')}): alpha 0.01, seed 0, one "
             "process per run, T = 1, one-token drafts, the first two tokens; N runs; the TV detected with power "
             "0.8; the exact TV of the rule read from the code, and the runs' observed TV, from the target's law; "
             "the p-value of the runs against the rule's exact law (the same test, that law as the null).", "",
             "| binary, chain, toy laws (N) | verdict (p) | TV detected | TV: exact, observed | p, rule |",
             "| --- | --- | ---: | ---: | ---: |"]
    for r in d["rows"]:
        p = "p < 1e-300" if r["p_value"] == 0 else f"p = {r['p_value']:.2g}"  # NOTE: below the double's range
        verdict = "not rejected" if r["verdict"] == "lossless" else f"**{r['verdict']}**"
        name = r["setting"]
        lines.append(f"| `{name.split(' ', 1)[0]}` {name.split(' ', 1)[1]} ({r['runs']:,}) | {verdict} ({p}) | "
                     f"{r['min_detectable_tv']:.3f} | {r['exact_tv']:.3f}, {r['observed_tv']:.3f} | "
                     f"{r['rule_p_value']:.2g} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7500,
                    help="runs of each llama-speculative row (7,500 detect a TV under 0.03 in both)")
    ap.add_argument("--control-runs", type=int, default=2000, help="runs of the control row")
    ap.add_argument("--jobs", type=int, default=2, help="processes at once, one thread each (default 2)")
    ap.add_argument("--only", action="append", default=None, metavar="NAME", help="this row only (repeatable)")
    ap.add_argument("--merge", action="store_true",
                    help="keep the rows of an existing DIR/llamacpp_speculative_toy.json not run now")
    ap.add_argument("--out", type=Path, default=ROOT / "simulations" / "results" / "llamacpp_speculative_toy")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from tqdm import tqdm

    from rheotheory.audit import core
    from rheotheory.audit.engines import llamacpp, llamacpp_toy as T
    from rheotheory.audit.toy import ToyLaws
    from rheotheory.errors import RheoError

    names = [*T.TOY_SETTINGS, *T.CONTROL]
    if args.only and set(args.only) - set(names):
        ap.error(f"unknown row {sorted(set(args.only) - set(names))[0]!r}; the rows: {'; '.join(names)}")
    from rheotheory.provenance import results_command

    made_by = results_command("simulations/llamacpp_speculative_toy.py", argv)
    rows = []
    try:
        for index, name in enumerate(names):
            if args.only and name not in args.only:
                continue
            family, chain = {**T.TOY_SETTINGS, **T.CONTROL}[name]
            seed_laws = T.LAWS_SEEDS[family]
            runs = args.control_runs if name in T.CONTROL else args.runs
            with tqdm(total=runs, desc=name, unit="run", file=sys.stderr, mininterval=5) as bar:
                setting = T.toy_setting(name, jobs=args.jobs, index=index, progress=bar.update)
                t0 = time.perf_counter()
                seqs = setting.sample(runs, 0)
            wall = time.perf_counter() - t0
            target = T.target_law(family, seed_laws)
            rule = target if name in T.CONTROL else T.rule_law(family, seed_laws, chain)
            res = core.run_audit(f"llama.cpp {name}", [setting], runs, 0.01, 0, samples=[seqs])
            V = ToyLaws(family, seed_laws).vocab
            fit_setting = core.Setting(name + " (the rule's law)", 2, T.joint_laws(rule, V), setting.sample)
            fit = core.run_audit(f"llama.cpp {name} against its rule", [fit_setting], runs, 0.01, 0, samples=[seqs])
            counts = Counter(tuple(s[:2]) for s in seqs)
            row = dict(setting=name, path=setting.detail["path"], family=family, laws_seed=seed_laws, chain=chain,
                       runs=runs, verdict=res.verdict, p_value=res.p_value,
                       min_detectable_tv=res.min_detectable_tv,
                       exact_tv=float(llamacpp.tv_distance(rule, target)), observed_tv=_tv(counts, runs, target),
                       observed_tv_rule=_tv(counts, runs, rule), rule_p_value=fit.p_value,
                       counts={f"{a} {b}": c for (a, b), c in sorted(counts.items())},
                       seconds=round(wall, 1), runs_per_second=round(runs / max(wall, 1e-9), 2), command=made_by)
            rows.append(row)
            print(f"{name:<48} {row['verdict']:<8} p={row['p_value']:.3g} TV={row['min_detectable_tv']:.3f} "
                  f"exact={row['exact_tv']:.4f} observed={row['observed_tv']:.4f} rule p={row['rule_p_value']:.3g}",
                  flush=True)
    except RheoError as e:
        print(f"llamacpp_speculative_toy: {e}", file=sys.stderr)
        return 2
    target = args.out / "llamacpp_speculative_toy.json"
    if args.merge:  # NOTE: each row keeps the command that made it
        from rheotheory.provenance import merge_rows

        rows = merge_rows(target, rows, "setting", "rows")
    out = dict(command=made_by, llamacpp=llamacpp.PINNED, runs=args.runs, control_runs=args.control_runs, rows=rows)
    args.out.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(main())
