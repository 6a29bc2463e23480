"""The audit of a verifier function from Python: :func:`audit_verifier` and :func:`assert_lossless`.

``rheo audit --verifier`` is these two calls behind a command line; a test suite calls them
directly (docs/guide/audit.md, "The audit in your CI")::

    from rheotheory.audit import assert_lossless

    def test_my_verifier_is_lossless():
        assert_lossless(my_engine.verify, "chain")

What one audit does, in order:

1. **the probe** (:func:`rheotheory.audit.user.probe_runs`): each setting twice from the same
   seed, in a worker process (:mod:`rheotheory.audit.isolate`); a function that exits, crashes,
   touches a global generator, reseeds or never uses its own generator is refused with one line
   (:class:`rheotheory.audit.user.VerifierCallError`, exit status 2 on the command line);
2. **the runs**: ``runs`` per setting (or as many as ``budget`` seconds of CPU allow, from the
   probe's timing), in worker processes, ``jobs`` at a time;
3. **the law test** (:func:`rheotheory.audit.core.run_audit` with the pooled test): the verdict
   ``lossy`` iff the law of the first L tokens is rejected;
4. **the rule check** (:mod:`rheotheory.audit.rules`): every call's output against its exact law
   under standard rejection sampling and under the one-hot rule. With ``rule="auto"`` (the
   default) the verdict is ``differs`` when the law is not rejected but the calls follow
   neither known rule (each rejected at ``alpha``: an intersection-union test, so ``alpha`` holds
   for "follows one of them"); ``rule="rejection"`` or ``"one-hot"`` requires that rule;
   ``rule="any"`` skips the check (another lossless rule: only the law is tested);
5. **the planted companion** through the same harness and size, which must be rejected.
"""

from __future__ import annotations

import time
from typing import Callable

from ..errors import RheoError
from . import core, examples, toy, user
from .isolate import run_tasks
from .rules import RULE_NAMES, RULES, test_tally

__all__ = ["audit_verifier", "assert_lossless", "DIFFERS", "RULE_MODES", "explain"]

#: The verdict of a verifier whose law is not rejected but whose calls follow no known rule.
DIFFERS = "differs"

#: ``rule=`` values: which rule the calls must follow (module docstring, step 4).
RULE_MODES = ("auto", "rejection", "one-hot", "any")


def _resolve(fn, kind: str):
    if isinstance(fn, str):
        return user.load_verifier(fn), fn
    if not callable(fn):
        raise RheoError(f"the verifier must be a function or 'MODULE:FUNCTION', got {type(fn).__name__}")
    import inspect
    import os

    name = getattr(fn, "__name__", "verifier")
    try:
        where = os.path.relpath(inspect.getsourcefile(fn))
    except (TypeError, ValueError):
        where = getattr(fn, "__module__", "?")
    return fn, f"{where}:{name}"


def _select(settings, name):
    if name is None:
        return settings
    if not str(name).strip():
        raise RheoError("--setting must be a non-empty part of a setting's name")
    got = [s for s in settings if name in s.name]
    if not got:
        raise RheoError(f"--setting {name!r} matches no setting; the settings are: "
                        + "; ".join(s.name for s in settings))
    return got


def _probe(settings, seed: int, jobs: int, isolate: bool) -> float:
    tasks = [(f"setting {s.name!r} (the probe)", lambda s=s: user.probe_runs(s, seed)) for s in settings]
    pairs = run_tasks(tasks, jobs) if isolate else [t() for _, t in tasks]
    return user.probe_all(settings, pairs)


def _collect(settings, runs: int, seed: int, rules, jobs: int, isolate: bool, progress) -> list:
    tasks = [(f"setting {s.name!r}", lambda s=s: s.collect(runs, seed, rules=rules)) for s in settings]
    done = (lambda _label: progress(runs)) if progress is not None else None
    if isolate:
        return run_tasks(tasks, jobs, done)
    out = []
    for label, t in tasks:
        out.append(t())
        if done is not None:
            done(label)
    return out


def _rule_check(settings, got, alpha: float, mode: str) -> dict | None:
    """The rule check (module docstring, step 4) as plain data."""
    if mode == "any":
        return None
    rules = RULES if mode == "auto" else (mode,)
    out = {"mode": mode, "rules": {}}
    for rule in rules:
        per = [test_tally(rule, c.tallies[rule]) for c in got]
        p = min(1.0, len(per) * min(r.p_value for r in per))
        worst = min(zip(per, settings), key=lambda rs: rs[0].p_value)
        out["rules"][rule] = dict(name=RULE_NAMES[rule], p_value=p, calls=sum(r.calls for r in per),
                                  rejected=bool(p < alpha), worst_setting=worst[1].name, worst=worst[0].to_dict(),
                                  settings={s.name: r.to_dict() for r, s in zip(per, settings)})
    kept = [r for r in rules if not out["rules"][r]["rejected"]]
    out["follows"] = kept[0] if kept else None
    out["differs"] = not kept
    return out


def audit_verifier(fn: Callable | str, kind: str = "chain", *, runs: int | None = None, budget: float | None = None,
                   alpha: float = core.DEFAULT_ALPHA, seed: int = 0, vocab: int = toy.DEFAULT_VOCAB,
                   rule: str = "auto", setting: str | None = None, companion: bool = True, jobs: int = 1,
                   isolate: bool = True, progress=None, on_estimate=None) -> core.AuditResult:
    """Audit a verifier function (module docstring) and return its :class:`~rheotheory.audit.core.AuditResult`.

    Parameters
    ----------
    fn : callable or str
        The verifier, in the signature of ``kind`` (:mod:`rheotheory.audit.examples`), or
        ``"MODULE:FUNCTION"`` / ``"path/to/file.py:FUNCTION"``.
    kind : {"chain", "tree"}
    runs : int, optional
        Runs per setting (default :data:`rheotheory.audit.user.DEFAULT_RUNS`, or from ``budget``).
    budget : float, optional
        CPU seconds for the runs (companion included), when ``runs`` is not given; the runs per
        setting follow from the probe's timing (at least 100).
    alpha : float
        Level of the audit (law test, and each rule of the rule check).
    seed : int
        Seed of the toy laws and of every run.
    vocab : int
        Vocabulary of the toy laws, 2..64.
    rule : {"auto", "rejection", "one-hot", "any"}
        What the calls must follow (module docstring, step 4).
    setting : str, optional
        Audit only the settings whose name contains it.
    companion : bool
        Run the planted companion beside (``result.companion``).
    jobs : int
        Worker processes at once.
    isolate : bool
        Run the calls in worker processes (the default; False: in this process, where
        ``os._exit`` ends the caller).
    progress : callable, optional
        ``progress(runs_done)`` after each setting's runs.
    on_estimate : callable, optional
        ``on_estimate(cpu_seconds, runs_in_all)`` once the size is known, before the runs.

    Returns
    -------
    rheotheory.audit.core.AuditResult
        ``verdict`` is ``lossless``, ``lossy`` or ``differs``; ``rule`` holds the rule check,
        ``companion`` the companion's audit, ``calls`` the verifier calls.

    Raises
    ------
    rheotheory.audit.user.VerifierCallError
        The function broke its contract or avoided being tested (one line naming what it did).
    rheotheory.errors.RheoError
        Bad arguments.
    """
    if kind not in user.KINDS:
        raise RheoError(f"--kind must be one of {', '.join(user.KINDS)}, got {kind!r}")
    if rule not in RULE_MODES:
        raise RheoError(f"--rule must be one of {', '.join(RULE_MODES)}, got {rule!r}")
    if runs is not None and (not isinstance(runs, int) or runs < 20):
        raise RheoError(f"runs must be an integer >= 20, got {runs!r}")
    if budget is not None and not budget > 0:
        raise RheoError(f"budget must be a positive number of seconds, got {budget!r}")
    if not isinstance(jobs, int) or jobs < 1:
        raise RheoError(f"jobs must be an integer >= 1, got {jobs!r}")
    fn, subject = _resolve(fn, kind)
    settings = _select(user.settings_for(fn, kind, vocab, seed)[0], setting)
    comp = (_select(user.settings_for(examples.COMPANIONS[kind], kind, vocab, seed)[0], setting)
            if companion else None)
    t0 = time.perf_counter()
    per_run = _probe(settings, seed, jobs, isolate)
    total_settings = len(settings) * (1 + (comp is not None))
    if runs is None:
        runs = (user.DEFAULT_RUNS if budget is None
                else max(100, int(budget * jobs / max(per_run * 1.1, 1e-6) / total_settings)))
    if on_estimate is not None:
        on_estimate(per_run * 1.1 * runs * total_settings / jobs, runs * total_settings)
    rules = () if rule == "any" else (RULES if rule == "auto" else (rule,))
    got = _collect(settings, runs, seed, rules, jobs, isolate, progress)
    res = core.run_audit(subject, settings, runs, alpha, seed, samples=got, pooled=True)
    check = _rule_check(settings, got, alpha, rule)
    verdict = res.verdict
    if verdict == core.LOSSLESS and check is not None and check["differs"]:
        verdict = DIFFERS
    comp_res = None
    if comp is not None:
        cgot = _collect(comp, runs, seed, (), jobs, isolate, progress)
        comp_res = core.run_audit(f"planted companion of {subject}", comp, runs, alpha, seed, samples=cgot,
                                  pooled=True)
    import dataclasses

    return dataclasses.replace(res, verdict=verdict, rule=check, companion=comp_res,
                               calls=sum(c.calls for c in got), seconds=time.perf_counter() - t0)


def _short(d: dict) -> str:
    keys = [k for k in ("prefix", "draft_tokens", "parents", "tokens", "draft_probs", "target_probs", "returned")
            if k in d]
    return ", ".join(f"{k}={d[k]}" for k in keys)


def explain(res: core.AuditResult, how: str | None = None) -> str:
    """Lines that say why ``res`` is not ``lossless``: the worst setting, expected against
    observed, one offending call where there is one, and ``how`` to reproduce."""
    w = res.worst
    lines = [res.summary()]
    if res.verdict in (core.LOSSY, core.LOSSY_BY_DESIGN):
        lines.append(f"worst setting {w.name!r}: p = {w.p_value:.3g}; cell {w.worst_cell!r}: expected "
                     f"{w.expected:.1f} runs, observed {w.observed}")
        if w.impossible is not None:
            imp = w.impossible
            lines.append(f"impossible outcome: the target gives probability 0 to token {imp['token']} after "
                         f"{imp['prefix']}")
            if imp.get("call"):
                lines.append(f"one offending call: {_short(imp['call'])}")
    elif res.verdict == DIFFERS and res.rule is not None:
        r = res.rule["rules"]["rejection" if "rejection" in res.rule["rules"] else next(iter(res.rule["rules"]))]
        lines.append(f"the calls differ from {' and from '.join(v['name'] for v in res.rule['rules'].values())} "
                     f"(p = {r['p_value']:.3g}), a statement about the rule, not a finding of loss: the law of the "
                     f"tokens was not rejected")
        worst = r["worst"]
        lines.append(f"worst setting {r['worst_setting']!r}: output {worst['worst_cell']!r} of a call: expected "
                     f"{worst['expected']:.1f} calls, observed {worst['observed']}")
        if worst.get("impossible"):
            lines.append(f"one offending call (probability 0 under {r['name']}): {_short(worst['impossible'])}")
        lines.append("another lossless rule? audit the law alone: rule='any' (rheo audit --rule any)")
    if how:
        lines.append(f"reproduce: {how} --setting {w.name!r}" if res.verdict != DIFFERS else f"reproduce: {how}")
    return "\n".join(lines)


def assert_lossless(fn: Callable | str, kind: str = "chain", **kw) -> core.AuditResult:
    """:func:`audit_verifier`, then ``AssertionError`` unless the verdict is ``lossless`` and the
    planted companion was rejected (else the test could not have told a known bug).

    The message names the worst setting, expected against observed cells, one offending call
    where there is one, and the command that reproduces it. Keyword arguments go to
    :func:`audit_verifier`.

    Returns
    -------
    rheotheory.audit.core.AuditResult
    """
    res = audit_verifier(fn, kind, **kw)
    spec = fn if isinstance(fn, str) else res.subject
    opts = "".join(f" --{k.replace('_', '-')} {v}" for k, v in kw.items()
                   if k in ("runs", "seed", "vocab", "alpha", "rule") and v is not None)
    how = f"rheo audit --verifier {spec} --kind {kind}{opts}"
    if res.verdict != core.LOSSLESS:
        raise AssertionError(explain(res, how))
    if res.companion is not None and res.companion.verdict == core.LOSSLESS:
        raise AssertionError(f"the planted companion was not rejected at N = {res.settings[0].runs} runs per "
                             f"setting: this audit could not tell a known bug; raise runs=")
    return res
