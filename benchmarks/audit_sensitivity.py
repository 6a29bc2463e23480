"""Sensitivity of ``rheo audit --verifier`` to the mass-shifting bug, before and after the rule check.

Usage::

    python benchmarks/audit_sensitivity.py [--eps 0.2,0.1,0.05,0.03,0.02] [--seeds 20] [--runs 50]
                                           [--before-runs 0] [--out FILE.json]

The bug: rejection sampling that skips the residual in a fraction ``eps`` of its rejections
(draws the correction from p instead of norm((p - q)+)), ``tests/audit_verifiers.py``'s
``skip_residual_sometimes``: the target's mass is shifted inside its support, the hard case for a
law test. For each ``eps`` the script prints

- the exact TV of the law of the first L tokens against the target's, by enumeration of every
  draft and every output of every call (float64), on the chain settings with k = 1 and 2 (the
  largest, and the setting it is in);
- over ``--seeds`` audits at ``--runs`` runs per setting on the 20 chain settings (seeds 0..S-1,
  alpha 0.01): how often the law test alone (the audit before the rule check: per-setting
  Bonferroni) rejects, how often the audit now rejects the law (``lossy``, with the pooled test),
  how often it says ``differs`` (the rule check), and how often either (caught);
- the CPU seconds of one audit (process time of the calls and of the tests, one thread) and per
  run; the probe and the planted companion, which every audit runs once more and whose cost does
  not depend on the bug, are timed once and printed first.

``--before-runs N`` adds the law test alone at N runs per setting (the old default is 2000) over
the same seeds: slow (about 80 CPU seconds an audit).
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


def _bug(eps: float):
    spec = importlib.util.spec_from_file_location("audit_verifiers", ROOT / "tests" / "audit_verifiers.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)

    def verify(draft_tokens, draft_probs, target_probs, generator):
        return mod.skip_residual_sometimes(draft_tokens, draft_probs, target_probs, generator, eps=eps)

    verify.__name__ = f"skip_residual_sometimes_{eps:g}"
    return verify


def _skip_law(drafts, q, p):
    """The call's law when the residual is skipped (the correction drawn from p)."""
    import numpy as np

    from rheotheory.audit.rules import _accept, _emit, _one_hot

    out, acc, prefix = {}, 1.0, ()
    for i, x in enumerate(drafts):
        qi = _one_hot(x, p.shape[1]) if q is None else q[i]
        a = _accept(p[i], qi, x)
        r = np.maximum(p[i] - qi, 0.0)
        if a < 1.0:
            _emit(out, prefix, acc * (1.0 - a), p[i] if r.sum() > 0 else p[i])
        acc *= a
        if acc <= 0:
            return out
        prefix += (x,)
    _emit(out, prefix, acc, p[len(drafts)])
    return out


def exact_tv(setting_laws, k: int, L: int, eps: float, deterministic: bool) -> float:
    """TV between the bug's law of the first L tokens and the target's (enumeration)."""
    import numpy as np

    from rheotheory.audit.rules import chain_law

    def drafts_of(z):
        out = [((), 1.0)]
        for _ in range(k):
            nxt = []
            for d, w in out:
                q = setting_laws.q(z + d)
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
            q = None if deterministic else np.stack([setting_laws.q(z + d[:j]) for j in range(k)])
            p = np.stack([setting_laws.p(z + d[:j]) for j in range(k + 1)])
            ok, skip = chain_law(list(d), q, p, "rejection"), _skip_law(list(d), q, p)
            for o in set(ok) | set(skip):
                pr = wd * ((1 - eps) * ok.get(o, 0.0) + eps * skip.get(o, 0.0))
                if pr <= 0:
                    continue
                head = o[:L - len(z)]
                for tail, pt in cont(z + o).items():
                    key = (head + tail)[:L - len(z)]
                    out[key] = out.get(key, 0.0) + pr * pt
        memo[z] = out
        return out

    law = cont(())
    target = {}

    def tw(z, w):
        if len(z) == L:
            target[z] = w
            return
        p = setting_laws.p(z)
        for y in np.flatnonzero(p > 0).tolist():
            tw(z + (y,), w * float(p[y]))

    tw((), 1.0)
    return 0.5 * sum(abs(law.get(z, 0.0) - target.get(z, 0.0)) for z in set(law) | set(target))


def tv_table(eps: float) -> tuple[float, str]:
    from rheotheory.audit import user

    settings, _ = user.settings_for(_bug(eps), "chain")
    best = (0.0, "")
    for s in settings:
        if s.detail["k"] > 2:
            continue
        laws = s.laws.__self__  # NOTE: ToyLaws.next_laws, bound to the setting's laws
        tv = exact_tv(laws, s.detail["k"], s.length, eps, s.detail["draft"] == "deterministic")
        best = max(best, (tv, s.name))
    return best


def one_audit(eps: float, seed: int, runs: int):
    """The audit as ``audit_verifier`` makes it (the law test with the pooled test, and the rule
    check), less the probe and the companion, whose cost does not depend on the bug (timed
    apart by :func:`fixed_cost`)."""
    from rheotheory.audit import api, core, user
    from rheotheory.audit.rules import RULES

    t0 = time.process_time()
    settings, _ = user.settings_for(_bug(eps), "chain", seed=seed)
    got = [s.collect(runs, seed, rules=RULES) for s in settings]
    res = core.run_audit("bug", settings, runs, 0.01, seed, samples=got, pooled=True)
    rule = api._rule_check(settings, got, 0.01, "auto")
    cpu = time.process_time() - t0
    verdict = res.verdict if res.verdict != core.LOSSLESS or not rule["differs"] else api.DIFFERS
    law_alone = any(s.p_value < res.alpha / len(res.settings) for s in res.settings)  # NOTE: the Bonferroni alone
    return dict(seed=seed, verdict=verdict, law_alone=law_alone, lossy=verdict == core.LOSSY,
                differs=verdict == api.DIFFERS, cpu=cpu, runs=res.runs)


def fixed_cost(runs: int) -> dict:
    """CPU seconds of the probe and of the planted companion at ``runs`` per setting."""
    from rheotheory.audit import api, examples, user

    settings, _ = user.settings_for(_bug(0.05), "chain")
    t0 = time.process_time()
    api._probe(settings, 0, 1, False)
    probe = time.process_time() - t0
    comp, _ = user.settings_for(examples.COMPANIONS["chain"], "chain")
    t0 = time.process_time()
    for s in comp:
        s.collect(runs, 0)
    return dict(probe=probe, companion=time.process_time() - t0)


def before_audit(eps: float, seed: int, runs: int):
    from rheotheory.audit import core, user

    t0 = time.process_time()
    settings, _ = user.settings_for(_bug(eps), "chain", seed=seed)
    res = core.run_audit("bug", settings, runs, 0.01, seed)
    return dict(seed=seed, lossy=res.verdict == core.LOSSY, cpu=time.process_time() - t0)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--eps", default="0.2,0.1,0.05,0.03,0.02")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--runs", type=int, default=50, help="runs per setting of the audit now (default 50)")
    ap.add_argument("--before-runs", type=int, default=0, help="also the law test alone at this size (0: no)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.path.insert(0, str(ROOT))
    import torch

    torch.set_num_threads(1)
    fixed = fixed_cost(args.runs)
    print(f"CPU seconds of the probe {fixed['probe']:.1f}, of the planted companion at {args.runs} runs per setting "
          f"{fixed['companion']:.1f} (every audit pays them once more)", flush=True)
    rows = []
    print(f"{'eps':>5} {'exact TV':>8} {'(setting)':<20} {'law alone':>9} {'lossy':>6} {'differs':>7} "
          f"{'caught':>6} {'CPU s/audit':>11} {'CPU ms/run':>10}" + ("  before" if args.before_runs else ""),
          flush=True)
    for eps in [float(e) for e in args.eps.split(",")]:
        tv, where = tv_table(eps)
        got = [one_audit(eps, seed, args.runs) for seed in range(args.seeds)]
        n = len(got)
        row = dict(eps=eps, exact_tv=tv, tv_setting=where, runs=args.runs, seeds=n,
                   law_alone=sum(g["law_alone"] for g in got) / n, lossy=sum(g["lossy"] for g in got) / n,
                   differs=sum(g["differs"] for g in got) / n,
                   caught=sum(g["lossy"] or g["differs"] for g in got) / n,
                   cpu_per_audit=sum(g["cpu"] for g in got) / n,
                   cpu_ms_per_run=1000 * sum(g["cpu"] for g in got) / sum(g["runs"] for g in got))
        extra = ""
        if args.before_runs:
            bef = [before_audit(eps, seed, args.before_runs) for seed in range(args.seeds)]
            row.update(before_runs=args.before_runs, before_rate=sum(b["lossy"] for b in bef) / n,
                       before_cpu_per_audit=sum(b["cpu"] for b in bef) / n)
            extra = f"  {row['before_rate']:.2f} ({row['before_cpu_per_audit']:.0f} CPU s)"
        rows.append(row)
        print(f"{eps:>5g} {tv:>8.4f} {where:<20} {row['law_alone']:>9.2f} {row['lossy']:>6.2f} {row['differs']:>7.2f} "
              f"{row['caught']:>6.2f} {row['cpu_per_audit']:>11.1f} {row['cpu_ms_per_run']:>10.2f}{extra}", flush=True)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(dict(fixed=fixed, rows=rows), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
