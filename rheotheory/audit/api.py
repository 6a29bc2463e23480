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
   under each known lossless rule of its kind (:data:`rheotheory.audit.rules.KNOWN_RULES`:
   standard rejection sampling, the one-hot rule, block verification for chains; recursive
   rejection with and without replacement, traversal verification, K-SEQ and the OT rule for
   trees). With ``rule="auto"`` (the default) the verdict is ``differs`` when the law is not
   rejected but the calls follow none of them (each rejected at ``alpha``: an
   intersection-union test, so ``alpha`` holds for "follows one of them"); ``rule=NAME``
   requires that rule; ``rule="any"`` skips the check (the law alone, far less sensitive);
5. **the planted companion** through the same harness and size, which must be rejected.
"""

from __future__ import annotations

import shlex
import time
from typing import Callable

from ..errors import RheoError
from . import core, examples, toy, user
from .isolate import run_tasks
from .process import DEFAULT_CALL_TIMEOUT, ProcessVerifier
from .rules import KNOWN_RULES, RULE_NAMES, distance, length_test, rules_for, test_tally

__all__ = ["audit_verifier", "assert_lossless", "DIFFERS", "RULE_MODES", "explain", "reproduce", "parse_seconds"]

#: The verdict of a verifier whose law is not rejected but whose calls follow no known rule.
DIFFERS = "differs"

#: ``rule=`` values: which rule the calls must follow (module docstring, step 4): ``auto``, ``any``,
#: or a known rule's name.
RULE_MODES = ("auto", *KNOWN_RULES, "any")


def _resolve(fn, kind: str):
    if isinstance(fn, str):
        return user.load_verifier(fn), fn
    if getattr(fn, "transport", None) == "process":
        return fn, fn.command
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


def _probe(settings, seed: int, jobs: int, isolate: bool, companion=None) -> tuple[float, float]:
    """The probe of every setting (:func:`rheotheory.audit.user.probe_runs`): the mean seconds
    per run of the verifier's settings and, timed beside, of the companion's."""
    tasks = [(f"setting {s.name!r} (the probe)", lambda s=s: user.probe_runs(s, seed)) for s in settings]
    pairs = run_tasks(tasks, jobs) if isolate else [t() for _, t in tasks]
    per_run = user.probe_all(settings, pairs)
    comp = 0.0
    if companion:
        timed = [s.collect(user.REPRO_RUNS, seed + 1) for s in companion]
        comp = sum(c.seconds / max(len(c.runs), 1) for c in timed) / len(timed)
    return per_run, comp


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


def _rule_check(settings, got, alpha: float, mode: str, kind: str) -> dict | None:
    """The rule check (module docstring, step 4) as plain data: per rule, its p-value (the
    Bonferroni of the settings' cell tests and the pooled length test,
    :mod:`rheotheory.audit.rules`), whether it is rejected at ``alpha``, its worst setting and
    the length test; ``follows`` (the first rule not rejected, or None), ``closest`` (the rule
    nearest the calls, :func:`rheotheory.audit.rules.distance`) and ``differs`` (every rule rejected)."""
    if mode == "any":
        return None
    rules = rules_for(kind) if mode == "auto" else (mode,)
    out = {"mode": mode, "rules": {}}
    for rule in rules:
        per = [test_tally(rule, c.tallies[rule]) for c in got]
        p_cells = min(1.0, len(per) * min(r.p_value for r in per))
        length = length_test(per)
        p = min(1.0, 2 * min(p_cells, length["p_value"]))
        worst = min(zip(per, settings), key=lambda rs: rs[0].p_value)
        out["rules"][rule] = dict(name=RULE_NAMES[rule], p_value=p, p_cells=p_cells, length=length,
                                  distance=distance([c.tallies[rule] for c in got]),
                                  calls=sum(r.calls for r in per), rejected=bool(p < alpha),
                                  worst_setting=worst[1].name, worst=worst[0].to_dict(),
                                  settings={s.name: r.to_dict() for r, s in zip(per, settings)})
    kept = [r for r in rules if not out["rules"][r]["rejected"]]
    out["follows"] = kept[0] if kept else None
    out["closest"] = min(rules, key=lambda r: (out["rules"][r]["distance"], rules.index(r)))
    out["differs"] = not kept
    return out


def audit_verifier(fn: Callable | str | None = None, kind: str = "chain", *, runs: int | None = None,
                   budget: float | None = None, alpha: float = core.DEFAULT_ALPHA, seed: int = 0,
                   vocab: int = toy.DEFAULT_VOCAB, rule: str = "auto", setting: str | None = None,
                   companion: bool = True, jobs: int = 1, isolate: bool = True, progress=None, on_estimate=None,
                   command: str | None = None, framing: str = "json",
                   call_timeout: float = DEFAULT_CALL_TIMEOUT) -> core.AuditResult:
    """Audit a verifier function (module docstring) and return its :class:`~rheotheory.audit.core.AuditResult`.

    Parameters
    ----------
    fn : callable or str, optional
        The verifier, in the signature of ``kind`` (:mod:`rheotheory.audit.examples`), or
        ``"MODULE:FUNCTION"`` / ``"path/to/file.py:FUNCTION"``; None with ``command``.
    kind : str, default "chain"
        The signature: ``"chain"`` or ``"tree"``.
    runs : int, optional
        Runs per setting (default :data:`rheotheory.audit.user.DEFAULT_RUNS`, or from ``budget``).
    budget : float, optional
        Seconds for the runs (companion included; CPU seconds of this process for a function, wall
        seconds for a program), when ``runs`` is not given; the runs per setting follow from the
        probe's timing (at least 100). The runs made are in the result (``reproduce`` reruns them);
        another machine may make another number, and so reach another verdict: give ``runs`` for
        the same verdict on every machine.
    alpha : float, default 0.01
        Level of the audit (law test, and each rule of the rule check).
    seed : int, default 0
        Seed of the toy laws and of every run.
    vocab : int, default 5
        Vocabulary of the toy laws, 2..64.
    rule : str
        What the calls must follow (module docstring, step 4): ``"auto"`` (any known rule of
        ``kind``), a name of :data:`rheotheory.audit.rules.KNOWN_RULES`, or ``"any"``.
    setting : str, optional
        Audit only the settings whose name contains it.
    companion : bool, default True
        Run the planted companion beside (``result.companion``).
    jobs : int, default 1
        Worker processes at once (a program: one copy of it per worker).
    isolate : bool, default True
        Run the calls in worker processes (False: in this process, where ``os._exit`` ends the
        caller). A program runs in its own process anyway: with ``jobs=1`` it is driven from this one.
    progress : callable, optional
        ``progress(runs_done)`` after each setting's runs.
    on_estimate : callable, optional
        ``on_estimate(seconds, runs_in_all)`` once the size is known, before the runs.
    command : str, optional
        A verifier program instead of ``fn`` (:mod:`rheotheory.audit.process`): started once, the
        calls exchanged over its standard input and output.
    framing : str, default "json"
        The program's framing, ``"json"`` or ``"binary"``.
    call_timeout : float, default 10.0
        Seconds a program may take to answer one call.

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
    if rule not in ("auto", "any") and rule not in rules_for(kind):
        raise RheoError(f"--rule {rule} does not apply to --kind {kind}; the {kind} rules are: "
                        f"{', '.join(rules_for(kind))}")
    if runs is not None and (not isinstance(runs, int) or runs < 20):
        raise RheoError(f"runs must be an integer >= 20, got {runs!r}")
    if budget is not None and not budget > 0:
        raise RheoError(f"budget must be a positive number of seconds, got {budget!r}")
    if not isinstance(jobs, int) or jobs < 1:
        raise RheoError(f"jobs must be an integer >= 1, got {jobs!r}")
    if (fn is None) == (command is None):
        raise RheoError("give a verifier function (or MODULE:FUNCTION) or a program (command=), not both")
    if command is not None:
        fn = ProcessVerifier(command, kind, vocab, framing, call_timeout)
    fn, subject = _resolve(fn, kind)
    program = getattr(fn, "transport", None) == "process"
    if program and jobs == 1:
        isolate = False  # NOTE: the program is a process of its own; driven from here, it starts once
    try:
        settings = _select(user.settings_for(fn, kind, vocab, seed)[0], setting)
        comp = (_select(user.settings_for(examples.COMPANIONS[kind], kind, vocab, seed)[0], setting)
                if companion else None)
        t0 = time.perf_counter()
        per_run, comp_run = _probe(settings, seed, jobs, isolate, comp)
        cost = 1.1 * (per_run + comp_run) * len(settings)  # seconds per run of every setting
        if runs is None:
            runs = user.DEFAULT_RUNS if budget is None else max(100, int(budget * jobs / max(cost, 1e-9)))
        if on_estimate is not None:
            on_estimate(cost * runs / jobs, runs * len(settings) * (1 + (comp is not None)))
        rules = () if rule == "any" else (rules_for(kind) if rule == "auto" else (rule,))
        got = _collect(settings, runs, seed, rules, jobs, isolate, progress)
    finally:
        if program:
            fn.close()
    res = core.run_audit(subject, settings, runs, alpha, seed, samples=got, pooled=True)
    check = _rule_check(settings, got, alpha, rule, kind)
    verdict = res.verdict
    if verdict == core.LOSSLESS and check is not None and check["differs"]:
        verdict = DIFFERS
    comp_res = None
    if comp is not None:
        cgot = _collect(comp, runs, seed, (), jobs, isolate and not program, progress)
        comp_res = core.run_audit(f"planted companion of {subject}", comp, runs, alpha, seed, samples=cgot,
                                  pooled=True)
    import dataclasses

    return dataclasses.replace(res, verdict=verdict, rule=check, companion=comp_res,
                               calls=sum(c.calls for c in got), seconds=time.perf_counter() - t0,
                               transport="process" if program else "python")


def _short(d: dict) -> str:
    keys = [k for k in ("prefix", "draft_tokens", "parents", "tokens", "draft_probs", "target_probs", "returned")
            if k in d]
    return ", ".join(f"{k}={d[k]}" for k in keys)


def parse_seconds(text: str) -> float:
    """A duration such as ``60``, ``60s``, ``2m`` or ``1.5min``, in seconds.

    Parameters
    ----------
    text : str
        The duration as written on a command line.

    Returns
    -------
    float
        Seconds, > 0.

    Raises
    ------
    ValueError
        Not a positive duration (argparse turns it into one line and exit 2).
    """
    import re

    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(s|m|min)?\s*", str(text))
    if not m or float(m.group(1)) <= 0:
        raise ValueError(f"expected a duration such as 60s or 2m, got {text!r}")
    return float(m.group(1)) * (60.0 if m.group(2) in ("m", "min") else 1.0)


def reproduce(base: str, res: core.AuditResult) -> str:
    """The command that reruns the audit behind ``res`` at its very size: ``base`` (the command
    and the options that were given) with ``--runs`` set to the runs per setting it made (a
    ``budget`` sizes the runs from the machine's speed, so another run of the same budget may
    make another number of them), and the worst setting for a ``lossy`` verdict.

    Parameters
    ----------
    base : str
        ``rheo audit --verifier SPEC --kind KIND`` and any other option given.
    res : rheotheory.audit.core.AuditResult
        The audit to rerun.

    Returns
    -------
    str
    """
    out = f"{base} --runs {res.settings[0].runs}"
    if res.verdict in (core.LOSSY, core.LOSSY_BY_DESIGN) and " --setting " not in base:
        out += f" --setting {shlex.quote(res.worst.name)}"
    return out


def _differs_lines(rule: dict) -> list[str]:
    """What a ``differs`` report says (docs/guide/audit.md, "the rule check")."""
    names = [v["name"] for v in rule["rules"].values()]
    close = rule["rules"][rule["closest"]]
    lines = [f"the calls follow none of the known lossless rules ({', '.join(names)}; each rejected): a verifier "
             "that follows a published rule is never failed for it, so a bug in this one is the likely cause; the "
             "law of its tokens was not rejected at this size, which a deviation this small passes"]
    ln = close["length"]
    lines.append(f"closest rule: {close['name']} (of the known rules, the nearest to the calls' outputs; "
                 f"p = {close['p_value']:.3g}): accepted tokens per call "
                 f"{ln['observed']:.4f} against {ln['expected']:.4f} expected over {ln['calls']} calls "
                 f"(z = {ln['z']:+.1f}, p = {ln['p_value']:.3g})")
    w = close["worst"]
    if w.get("differ_most"):
        cells = "; ".join(f"output '{c['output']}' {c['observed']} calls against {c['expected']:.1f} expected "
                          f"({c['z']:+.1f} sd)" if c["z"] != float("inf") else
                          f"output '{c['output']}' {c['observed']} calls against 0 expected"
                          for c in w["differ_most"])
        lines.append(f"setting {close['worst_setting']!r} (p = {w['p_value']:.3g} under it): {cells}")
    if w.get("impossible"):
        lines.append(f"one offending call (probability 0 under {close['name']}): {_short(w['impossible'])}")
    elif w.get("least"):
        lines.append(f"the call that differs most (its output had probability {w['least']['probability']:.3g} "
                     f"under {close['name']}): {_short(w['least'])}")
    return lines


def explain(res: core.AuditResult, how: str | None = None) -> str:
    """Lines that say why ``res`` is not ``lossless``: the worst setting, expected against
    observed, one offending call where there is one, and how to reproduce it.

    Parameters
    ----------
    res : rheotheory.audit.core.AuditResult
        The audit.
    how : str, optional
        The command that ran it (:func:`reproduce` adds its size); no ``reproduce:`` line without it.

    Returns
    -------
    str
    """
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
        lines.extend(_differs_lines(res.rule))
    if how:
        lines.append(f"reproduce: {reproduce(how, res)}")
    return "\n".join(lines)


def _fail(message: str):
    """Fail the calling test with ``message`` alone: under pytest without a traceback of this
    library (``pytest.fail(pytrace=False)``), elsewhere as an ``AssertionError``."""
    import sys

    __tracebackhide__ = True
    pytest = sys.modules.get("pytest")
    if pytest is not None and hasattr(pytest, "fail"):
        pytest.fail(message, pytrace=False)
    raise AssertionError(message)


def assert_lossless(fn: Callable | str | None = None, kind: str = "chain", **kw) -> core.AuditResult:
    """:func:`audit_verifier`, then fail unless the verdict is ``lossless`` (not rejected) and the
    planted companion was rejected (else the test could not have told a known bug).

    The message names the worst setting, expected against observed cells, one offending call
    where there is one, and the command that reproduces it at the same size. A verifier the
    audit refuses (it breaks its contract or avoids being tested) or bad arguments fail the test
    with one line. Under pytest the failure carries no traceback of this library.

    Parameters
    ----------
    fn : callable or str, optional
        The verifier (:func:`audit_verifier`); None for a program (``command=``).
    kind : str, default "chain"
        Its signature.
    **kw : object
        Keyword arguments of :func:`audit_verifier` (``command=`` for a program).

    Returns
    -------
    rheotheory.audit.core.AuditResult

    Raises
    ------
    AssertionError
        Not ``lossless``, a companion not rejected, or the verifier refused (outside pytest;
        under pytest the test fails the same way through ``pytest.fail``).
    """
    __tracebackhide__ = True
    try:
        res = audit_verifier(fn, kind, **kw)
    except RheoError as e:
        _fail(f"rheo audit: {e}")
    spec = fn if isinstance(fn, str) else res.subject
    flag = "--verifier-cmd" if res.transport == "process" else "--verifier"
    opts = "".join(f" --{k.replace('_', '-')} {shlex.quote(str(v))}" for k, v in kw.items()
                   if k in ("seed", "vocab", "alpha", "rule", "setting", "framing") and v is not None
                   and not (k == "rule" and v == "auto") and not (k == "framing" and v == "json"))
    how = f"rheo audit {flag} {shlex.quote(str(spec))} --kind {kind}{opts}"
    if res.verdict != core.LOSSLESS:
        _fail(explain(res, how))
    if res.companion is not None and res.companion.verdict == core.LOSSLESS:
        _fail(f"the planted companion was not rejected at N = {res.settings[0].runs} runs per setting: this "
              "audit could not tell a known bug; raise runs=")
    return res
