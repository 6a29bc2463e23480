"""Sensitivity of ``rheo audit --verifier`` to two bugs that keep the law close: how often an audit
catches them, at what size, in how many CPU seconds.

Usage::

    python benchmarks/audit_sensitivity.py skip-residual [--eps 0.2,0.1,0.05,0.03,0.02]
                                           [--seeds 20] [--runs 50] [--out FILE.json]
    python benchmarks/audit_sensitivity.py accept-power [--gamma 0.97] [--seeds 20]
                                           [--budget 60] [--out FILE.json]

The bugs (p = target, q = draft), both planted in standard rejection sampling:

- ``skip-residual``: the correction drawn from p instead of norm((p - q)+) in a fraction ``eps``
  of the rejections (``tests/audit_verifiers.py``, ``skip_residual_sometimes``): mass shifted
  inside the target's support, with corrections the residual gives probability 0;
- ``accept-power``: acceptance ``min(1, (p/q)^gamma)`` (``tests/audit_rule_verifiers.py``,
  ``accept_power`` at gamma 0.97): a full-support deviation of the acceptance step, no output of
  probability 0 under any rule.

For each size the script prints the exact TV of the law of the first L tokens against the
target's (enumeration of every draft and every output of every call, float64, on the chain
settings with k = 1 and 2; the largest and its setting), then over ``--seeds`` audits (seeds
0..S-1, alpha 0.01) how often the law test alone (the per-setting Bonferroni, before the pooled
test and the rule check) rejects, how often the audit says ``lossy``, ``differs``, and either
(caught); and the CPU seconds (process time, one thread, the audit run in this process).

``skip-residual`` audits at ``--runs`` runs per setting, the probe and companion timed once apart.
``accept-power`` runs whole audits as ``assert_lossless(fn, "chain", budget=B)`` makes them (probe,
runs sized from the budget, rule check, companion): the CPU seconds are the whole audit's.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _command(script: str, argv) -> str:
    """The command line as written from the repository root, less its ``--out`` (where a recipe
    writes is its own business: a timing recipe writes into a staging folder first)."""
    args, skip = [], False
    for a in map(str, argv):
        if skip:
            skip = False
        elif a == "--out":
            skip = True
        elif not a.startswith("--out="):
            args.append(a.replace(str(ROOT) + "/", ""))
    return " ".join(["python", script, *args])


def _module(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tests" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _skip_bug(eps: float):
    mod = _module("audit_verifiers")

    def verify(draft_tokens, draft_probs, target_probs, generator):
        return mod.skip_residual_sometimes(draft_tokens, draft_probs, target_probs, generator, eps=eps)

    verify.__name__ = f"skip_residual_sometimes_{eps:g}"
    return verify


def _power_bug(gamma: float):
    mod = _module("audit_rule_verifiers")

    def verify(draft_tokens, draft_probs, target_probs, generator):
        return mod._rejection_chain(draft_tokens, draft_probs, target_probs, generator, gamma=gamma)

    verify.__name__ = f"accept_power_{gamma:g}"
    return verify


def _chain_call_law(drafts, q, p, accept, residual) -> dict:
    """The exact law of a chain call (output tuple -> probability) for an acceptance
    ``accept(p_i, q_i, x)`` and a correction law ``residual(p_i, q_i)``."""
    import numpy as np

    out, acc, prefix = {}, 1.0, ()
    v = p.shape[1]
    for i, x in enumerate(drafts):
        qi = np.eye(v)[x] if q is None else q[i]
        a = accept(p[i], qi, x)
        if a < 1.0:
            r = residual(p[i], qi)
            for y in np.flatnonzero(r > 0).tolist():
                out[prefix + (y,)] = out.get(prefix + (y,), 0.0) + acc * (1 - a) * float(r[y] / r.sum())
        acc *= a
        if acc <= 0:
            return out
        prefix += (x,)
    for y in np.flatnonzero(p[len(drafts)] > 0).tolist():
        out[prefix + (y,)] = out.get(prefix + (y,), 0.0) + acc * float(p[len(drafts)][y])
    return out


def bug_law(bug: str, size: float):
    """``(drafts, q, p) -> law`` of one call of the bug (module docstring)."""
    import numpy as np

    def ratio(p, q, x):
        return float(p[x]) / float(q[x]) if q[x] > 0 else 0.0

    def resid(p, q):
        r = np.maximum(p - q, 0.0)
        return r if r.sum() > 0 else p

    if bug == "skip-residual":
        def law(d, q, p):
            ok = _chain_call_law(d, q, p, lambda pi, qi, x: min(1.0, ratio(pi, qi, x)), resid)
            skip = _chain_call_law(d, q, p, lambda pi, qi, x: min(1.0, ratio(pi, qi, x)), lambda pi, qi: pi)
            return {o: (1 - size) * ok.get(o, 0.0) + size * skip.get(o, 0.0) for o in set(ok) | set(skip)}
        return law
    return lambda d, q, p: _chain_call_law(d, q, p, lambda pi, qi, x: min(1.0, ratio(pi, qi, x) ** size), resid)


def exact_tv(laws, k: int, L: int, call_law, deterministic: bool) -> float:
    """TV between a bug's law of the first L tokens and the target's (enumeration)."""
    import numpy as np

    def drafts_of(z):
        out = [((), 1.0)]
        for _ in range(k):
            nxt = []
            for d, w in out:
                q = laws.q(z + d)
                if deterministic:
                    nxt.append((d + (int(np.argmax(q)),), w))
                else:
                    nxt += [(d + (x,), w * float(q[x])) for x in np.flatnonzero(q > 0).tolist()]
            out = nxt
        return out

    memo = {}

    def cont(z):
        """The law of the tokens after prefix z up to L (suffix -> probability); Markov in z."""
        if len(z) >= L:
            return {(): 1.0}
        got = memo.get(z)
        if got is not None:
            return got
        out = {}
        for d, wd in drafts_of(z):
            q = None if deterministic else np.stack([laws.q(z + d[:j]) for j in range(k)])
            p = np.stack([laws.p(z + d[:j]) for j in range(k + 1)])
            for o, po in call_law(list(d), q, p).items():
                if po <= 0:
                    continue
                head = o[:L - len(z)]
                for tail, pt in cont(z + o).items():
                    key = (head + tail)[:L - len(z)]
                    out[key] = out.get(key, 0.0) + wd * po * pt
        memo[z] = out
        return out

    law = cont(())
    target = {}

    def tw(z, w):
        if len(z) == L:
            target[z] = w
            return
        p = laws.p(z)
        for y in np.flatnonzero(p > 0).tolist():
            tw(z + (y,), w * float(p[y]))

    tw((), 1.0)
    return 0.5 * sum(abs(law.get(z, 0.0) - target.get(z, 0.0)) for z in set(law) | set(target))


def tv_table(bug: str, size: float) -> tuple[float, str]:
    """The largest exact TV over the chain settings with k <= 2, and its setting."""
    from rheotheory.audit import user

    settings, _ = user.settings_for(_skip_bug(0.1), "chain")
    best = (0.0, "")
    for s in settings:
        if s.detail["k"] > 2:
            continue
        laws = s.laws.__self__  # NOTE: ToyLaws.next_laws, bound to the setting's laws
        tv = exact_tv(laws, s.detail["k"], s.length, bug_law(bug, size), s.detail["draft"] == "deterministic")
        best = max(best, (tv, s.name))
    return best


def one_audit(fn, seed: int, runs: int):
    """The audit as ``audit_verifier`` makes it (the law test with the pooled test, and the rule
    check), less the probe and the companion, whose cost does not depend on the bug (timed
    apart by :func:`fixed_cost`)."""
    from rheotheory.audit import api, core, user
    from rheotheory.audit.rules import rules_for

    t0 = time.process_time()
    settings, _ = user.settings_for(fn, "chain", seed=seed)
    got = [s.collect(runs, seed, rules=rules_for("chain")) for s in settings]
    res = core.run_audit("bug", settings, runs, 0.01, seed, samples=got, pooled=True)
    rule = api._rule_check(settings, got, 0.01, "auto", "chain")
    cpu = time.process_time() - t0
    verdict = res.verdict if res.verdict != core.LOSSLESS or not rule["differs"] else api.DIFFERS
    law_alone = any(s.p_value < res.alpha / len(res.settings) for s in res.settings)  # NOTE: the Bonferroni alone
    return dict(seed=seed, verdict=verdict, law_alone=law_alone, lossy=verdict == core.LOSSY,
                differs=verdict == api.DIFFERS, cpu=cpu, runs=res.runs)


def budget_audit(fn, seed: int, budget: float):
    """A whole audit as ``assert_lossless(fn, "chain", budget=budget)`` makes it, in this process."""
    from rheotheory.audit import api, core

    t0 = time.process_time()
    res = api.audit_verifier(fn, "chain", budget=budget, seed=seed, isolate=False)
    cpu = time.process_time() - t0
    law_alone = any(s.p_value < res.level for s in res.settings)
    rejection = res.rule["rules"]["rejection"]
    return dict(seed=seed, verdict=res.verdict, law_alone=law_alone, lossy=res.verdict == core.LOSSY,
                differs=res.verdict == api.DIFFERS, cpu=cpu, runs=res.runs, runs_per_setting=res.settings[0].runs,
                length_z=rejection["length"]["z"], rejection_p=rejection["p_value"],
                companion=res.companion.verdict)


def fixed_cost(runs: int) -> dict:
    """CPU seconds of the probe and of the planted companion at ``runs`` per setting."""
    from rheotheory.audit import api, examples, user

    settings, _ = user.settings_for(_skip_bug(0.05), "chain")
    t0 = time.process_time()
    api._probe(settings, 0, 1, False)
    probe = time.process_time() - t0
    comp, _ = user.settings_for(examples.COMPANIONS["chain"], "chain")
    t0 = time.process_time()
    for s in comp:
        s.collect(runs, 0)
    return dict(probe=probe, companion=time.process_time() - t0)


def _rates(got: list) -> dict:
    n = len(got)
    return dict(seeds=n, law_alone=sum(g["law_alone"] for g in got) / n, lossy=sum(g["lossy"] for g in got) / n,
                differs=sum(g["differs"] for g in got) / n, caught=sum(g["lossy"] or g["differs"] for g in got) / n,
                cpu_per_audit=sum(g["cpu"] for g in got) / n)


def render_md(path: Path) -> str:
    """The table of one results file of this script, in Markdown (docs/guide/audit.md)."""
    d = json.loads(Path(path).read_text())
    power = d["bug"] == "accept-power"
    size = "gamma" if power else "eps"
    head = (f"`{d['command']}`: {d['rows'][0]['seeds']} seeds (0..{d['rows'][0]['seeds'] - 1}) at each {size}, "
            f"alpha {d['alpha']}, the 20 chain settings; "
            + (f"whole audits sized by `budget={d['rows'][0]['budget']:g}` (probe, runs, rule check, companion)"
               if power else f"{d['rows'][0]['runs']} runs per setting (the probe and the planted companion add "
               f"{d['fixed']['probe']:.1f} and {d['fixed']['companion']:.1f} CPU seconds)")
            + f"; CPU seconds of one thread, {d.get('machine', 'machine not described')}.\n\n")
    cols = [size, "exact TV (worst k <= 2 setting)", "law test alone", "caught (lossy + differs)",
            "runs per setting" if power else "CPU s per audit"]
    if power:
        cols.append("CPU s per audit")
    lines = ["| " + " | ".join(cols) + " |", "|" + "---:|" * len(cols)]
    for r in d["rows"]:
        cells = [f"{r['size']:g}", f"{r['exact_tv']:.4f} ({r['tv_setting']})", f"{r['law_alone']:.2f}",
                 f"{r['caught']:.2f} ({r['lossy']:.2f} + {r['differs']:.2f})"]
        cells += [r["runs"], f"{r['cpu_per_audit']:.0f}"] if power else [f"{r['cpu_per_audit']:.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return head + "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bug", choices=("skip-residual", "accept-power"))
    ap.add_argument("--eps", default="0.2,0.1,0.05,0.03,0.02", help="skip-residual: the fractions skipped")
    ap.add_argument("--gamma", default="0.97", help="accept-power: the exponents")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--runs", type=int, default=50, help="skip-residual: runs per setting (default 50)")
    ap.add_argument("--budget", type=float, default=60.0, help="accept-power: the audit's budget (default 60)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.path.insert(0, str(ROOT))
    import torch

    torch.set_num_threads(1)
    given = argv if argv is not None else sys.argv[1:]
    out = dict(bug=args.bug, alpha=0.01, machine=os.environ.get("RHEO_MACHINE_NOTE") or "machine not described",
               command=_command("benchmarks/audit_sensitivity.py", given), rows=[])
    if args.bug == "skip-residual":
        out["fixed"] = fixed = fixed_cost(args.runs)
        print(f"CPU seconds of the probe {fixed['probe']:.1f}, of the planted companion at {args.runs} runs per "
              f"setting {fixed['companion']:.1f} (every audit pays them once more)", flush=True)
    print(f"{'size':>6} {'exact TV':>8} {'(setting)':<20} {'law alone':>9} {'lossy':>6} {'differs':>7} "
          f"{'caught':>6} {'CPU s/audit':>11} {'runs/setting':>12}", flush=True)
    sizes = args.eps if args.bug == "skip-residual" else args.gamma
    for size in [float(e) for e in sizes.split(",")]:
        tv, where = tv_table(args.bug, size)
        if args.bug == "skip-residual":
            got = [one_audit(_skip_bug(size), seed, args.runs) for seed in range(args.seeds)]
            runs = f"{args.runs}"
        else:
            got = [budget_audit(_power_bug(size), seed, args.budget) for seed in range(args.seeds)]
            per = sorted(g["runs_per_setting"] for g in got)
            runs = f"{per[0]}-{per[-1]}"
        row = dict(size=size, exact_tv=tv, tv_setting=where, runs=runs, **_rates(got), audits=got)
        if args.bug == "accept-power":
            row["budget"] = args.budget
        out["rows"].append(row)
        print(f"{size:>6g} {tv:>8.4f} {where:<20} {row['law_alone']:>9.2f} {row['lossy']:>6.2f} "
              f"{row['differs']:>7.2f} {row['caught']:>6.2f} {row['cpu_per_audit']:>11.1f} {runs:>12}", flush=True)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
