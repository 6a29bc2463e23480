"""``rheo audit``: test the output law of a verifier function or an engine against the exact target law."""

from __future__ import annotations

import json
import sys

from .args import (EXIT_BAD_INPUT, EXIT_LOSSLESS, EXIT_LOSSY, add_progress, announce, float_range, int_range,
                   progress_bar, seed_arg, set_exit_statuses)

from ..audit.rules import KNOWN_RULES

#: ``--rule`` values: auto, the known lossless rules (rheotheory.audit.rules.KNOWN_RULES), any.
RULE_CHOICES = ("auto", *KNOWN_RULES, "any")

__all__ = ["register", "run", "PILOT_RUNS", "AUDIT_THREADS", "EXIT_DIFFERS"]

#: Exit status of a verifier whose law is not rejected but whose calls follow no known rule.
EXIT_DIFFERS = 3

#: Runs of an engine's first setting timed before the audit, for its time estimate.
PILOT_RUNS = 5

#: Torch threads of an audit: the audited tensors are tiny (vocabularies of 5-8 tokens, models of
#: width 16), where a second thread only adds synchronisation (measured: a tiny-Llama generate
#: call 10x slower with 2 threads than with 1 on a busy 2-core machine), and the issue's speed
#: target is per core.
AUDIT_THREADS = 1

#: What each exit status of ``rheo audit`` means (its ``--help`` and the CLI reference).
EXIT_STATUSES = (
    (EXIT_LOSSLESS, "not rejected: the law of the tokens was not rejected at alpha (the report states the deviation "
                    "it would have caught with power 0.8) and the calls follow a known lossless rule; never a proof "
                    "of losslessness"),
    (EXIT_LOSSY, "rejected: lossy (or lossy-by-design, when only settings approximate on purpose are)"),
    (EXIT_BAD_INPUT, "bad input; a verifier or program that breaks its contract or avoids being tested (it raises, "
                     "exits, crashes, hangs, answers wrongly, ignores or reseeds its generator or seed); or "
                     "inconclusive: the planted companion was not rejected (one line on stderr)"),
    (EXIT_DIFFERS, "differs: the law was not rejected, but the calls follow none of the known lossless rules "
                   "(rheotheory.audit.rules: standard rejection sampling, the one-hot rule, block verification; over "
                   "trees also traversal verification, K-SEQ and the OT rule)"),
)


def register(sub) -> None:
    """Add ``rheo audit`` to the command line's subparsers.

    Parameters
    ----------
    sub : argparse._SubParsersAction
    """
    a = sub.add_parser("audit", help="test a verifier function or an engine's sampled output against the exact "
                       "target law",
                       description="Drive a verifier function (--verifier) or program (--verifier-cmd), with seeded "
                       "toy laws, or an engine's real code path (--engine) and test the law of the first L generated "
                       "tokens (bonus token "
                       "included) against the exact target law, one Pearson test per setting, Bonferroni over "
                       "the settings. Reports p, N, alpha and the smallest total variation detected with power "
                       "0.8; runs a planted companion through the same harness, which must be rejected. "
                       "docs/guide/audit.md.")
    set_exit_statuses(a, EXIT_STATUSES)
    who = a.add_mutually_exclusive_group()
    who.add_argument("--verifier", metavar="SPEC", help="MODULE:FUNCTION or path/to/file.py:FUNCTION")

    who.add_argument("--engine", metavar="NAME", help="an engine adapter (rheo audit --list)")
    who.add_argument("--method", metavar="SPEC", help="a registered method, built-in or a plugin's (--plugin, "
                     "FILE.py:NAME): its own builder and verifier on the toy laws (rheotheory.audit.engines.method)")
    who.add_argument("--list", action="store_true", help="list the engine adapters, their settings and companions")
    # NOTE: outside the group, so that the usage line wraps; run() refuses two of them at once
    a.add_argument("--verifier-cmd", metavar="COMMAND",
                   help="a verifier program in any language, started once, the calls exchanged over its standard "
                   "input and output (rheotheory.audit.process; docs/guide/audit-programs.md)")
    a.add_argument("--endpoint", metavar="URL",
                   help="an OpenAI-compatible server with speculative decoding, audited from outside against "
                   "--reference (rheotheory.audit.endpoint)")
    a.add_argument("--kind", choices=("chain", "tree"), default=None,
                   help="the verifier's signature (default chain; docs/guide/audit.md)")
    a.add_argument("--setting", metavar="NAME", default=None,
                   help="audit only the settings whose name contains NAME")
    a.add_argument("--planted", metavar="NAME", default=None,
                   help="--engine: audit this planted companion instead of the engine's own code path")
    a.add_argument("--runs", type=int_range(20), default=None, metavar="N",
                   help="runs per setting, >= 20 (default: 2000 for --verifier, the adapter's own for --engine)")
    a.add_argument("--vocab", type=int_range(2, 64), default=None, metavar="V",
                   help="--verifier: vocabulary of the toy laws, 2..64 (default 5)")
    a.add_argument("--alpha", type=float_range(lo=0.0, hi=1.0, lo_open=True, hi_open=True), default=0.01,
                   help="significance level (default 0.01)")
    a.add_argument("--seed", type=seed_arg, default=0, help="seed of the toy laws and of every run (default 0)")
    a.add_argument("--no-companion", action="store_true",
                   help="do not run the planted companion beside the audited code")
    a.add_argument("--rule", choices=RULE_CHOICES, default=None,
                   help="--verifier: the rule every call is checked against: auto (any known lossless rule of the "
                   "kind, the default), one of them by name, or any (no rule check: the law alone, blind to "
                   "deviations the rule check sees)")
    a.add_argument("--budget", type=_seconds, default=None, metavar="SECONDS",
                   help="--verifier: time for the runs (e.g. 60s, 2m; CPU time, wall time for a program); sizes "
                   "--runs from the probe's timing, and the report's reproduce line gives the --runs made")
    a.add_argument("--framing", choices=("json", "binary"), default=None,
                   help="--verifier-cmd: how calls are written to the program: json (one line each, the default) "
                   "or binary (little-endian arrays, faster)")
    a.add_argument("--call-timeout", type=_seconds, default=None, metavar="SECONDS",
                   help="--verifier-cmd: time the program may take to answer one call (default 10s)")
    a.add_argument("--jobs", type=int_range(1, 64), default=1, metavar="N",
                   help="--verifier: worker processes at once (default 1)")
    e = a.add_argument_group("--endpoint", "a deployed server against the same model served without "
                             "speculative decoding: the law of the first --tokens tokens of --prompt, compared by a "
                             "two-sample test")
    e.add_argument("--reference", metavar="URL", help="the same model served without speculative decoding")
    e.add_argument("--prompt", default=None, help="the prompt (default: 'My favourite colour is')")
    e.add_argument("--tokens", type=int_range(1, 64), default=None, metavar="L",
                   help="tokens whose joint law is tested (default 4)")
    e.add_argument("--temperature", type=float_range(lo=0.0, lo_open=True), default=None,
                   help="sampling temperature sent with every request (default 1)")
    e.add_argument("--top-p", type=float_range(lo=0.0, hi=1.0, lo_open=True), default=None,
                   help="top_p sent with every request")
    e.add_argument("--top-k", type=int_range(0), default=None, help="top_k sent with every request")
    e.add_argument("--model", default=None, help="the model field of the requests")
    a.add_argument("--json", action="store_true", help="print one JSON object")
    add_progress(a)
    a.set_defaults(func=run)


def _seconds(text: str) -> float:
    import argparse

    from ..audit.api import parse_seconds

    try:
        return parse_seconds(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _select(settings, name):
    """The settings whose name contains ``name`` (the one rule, in rheotheory.audit.api)."""
    from ..audit.api import _select as select

    return select(settings, name)


def _print_table(res, out=sys.stdout) -> None:
    print(f"{'setting':<34} {'L':>2} {'N':>6} {'chi2':>9} {'df':>4} {'p':>9} {'TV80':>7}", file=out)
    for s in res.settings:
        print(f"{s.name:<34} {s.length:>2} {s.runs:>6} {s.statistic:>9.1f} {s.df:>4} {s.p_value:>9.3g} "
              f"{s.min_detectable_tv:>7.3f}", file=out)


def _list() -> int:
    from ..audit.engines import ENGINES, adapter

    for name in ENGINES:
        e = adapter(name).ENGINE
        print(f"{name}: {e.summary} ({e.distribution}=={e.pinned}, extra [{e.extra}])")
        print(f"  settings: {', '.join(e.settings)}")
        print(f"  planted : {', '.join(e.planted)}")
    return EXIT_LOSSLESS


def _engine_runs(args):
    from ..audit.engines import adapter
    from ..errors import RheoError

    mod = adapter(args.engine)
    e = mod.ENGINE
    if args.planted is not None and args.planted not in e.planted:
        raise RheoError(f"--planted {args.planted!r} is not a companion of {e.name}; one of {', '.join(e.planted)}")
    settings = _select(mod.settings(planted=args.planted), args.setting)
    version = mod.version()
    subject = f"{e.name} {version}" + (f" [planted: {args.planted}]" if args.planted else "")
    companion = None
    if not args.no_companion and args.planted is None:
        # NOTE: a companion runs the selected settings it applies to; none of them: no companion
        wanted = {s.name for s in settings}
        companion = [s for s in mod.settings(planted=e.planted[0]) if s.name in wanted] or None
    return subject, settings, companion, args.runs or mod.DEFAULT_RUNS, None


def _method_runs(args):
    """--method SPEC: the method's own steps on each toy law family, its planted companion beside."""
    from ..audit.engines import method as adapter
    from ..methods import resolve

    settings = _select(adapter.method_settings(args.method, seed=args.seed), args.setting)
    subject = f"method {resolve(args.method, size=adapter.SIZE).describe()}"
    companion = None
    if not args.no_companion:
        wanted = {s.name for s in settings}
        companion = [s for s in adapter.method_settings(args.method, planted=True, seed=args.seed)
                     if s.name in wanted]
    return subject, settings, companion, args.runs or adapter.DEFAULT_RUNS, None


def _run_verifier(args):
    """The audit of --verifier (rheotheory.audit.api.audit_verifier), with its bar and estimate."""
    from ..audit import api

    bar = {}

    def estimate(seconds, total):
        announce(args, seconds, f"{total} runs")
        bar["bar"] = progress_bar(args, total, "audit", unit="run").__enter__()

    from ..audit.process import DEFAULT_CALL_TIMEOUT

    try:
        return api.audit_verifier(args.verifier, args.kind or "chain", runs=args.runs, budget=args.budget,
                                  alpha=args.alpha, seed=args.seed, vocab=args.vocab or 5, rule=args.rule or "auto",
                                  setting=args.setting, companion=not args.no_companion, jobs=args.jobs,
                                  progress=lambda n: bar["bar"].update(n) if "bar" in bar else None,
                                  on_estimate=estimate, command=args.verifier_cmd, framing=args.framing or "json",
                                  call_timeout=args.call_timeout or DEFAULT_CALL_TIMEOUT)
    finally:
        if "bar" in bar:
            bar["bar"].__exit__(None, None, None)


def _run_engine(args):
    import time

    from ..audit import core

    subject, settings, companion, runs, _ = (_method_runs if args.method else _engine_runs)(args)
    total = len(settings) * (1 + (companion is not None)) * runs
    pilot = time.perf_counter()  # NOTE: an engine run costs what its first few runs cost: time them
    settings[0].sample(PILOT_RUNS, args.seed)
    announce(args, (time.perf_counter() - pilot) / PILOT_RUNS * total, f"{total} runs of {len(settings)} settings")
    results = []
    for name, sets in [(subject, settings)] + ([(f"planted companion of {subject}", companion)] if companion else []):
        with progress_bar(args, len(sets) * runs, "audit", unit="run") as bar:
            results.append(core.run_audit(name, sets, runs, args.alpha, args.seed,
                                          progress=lambda _name, n: bar.update(n)))
    import dataclasses

    return dataclasses.replace(results[0], companion=results[1] if len(results) > 1 else None)


def _reproduce(args, res) -> str:
    """The command that reruns this verifier audit at its size (:func:`rheotheory.audit.api.reproduce`)."""
    import shlex

    from ..audit.api import reproduce

    if args.verifier_cmd is not None:
        base = f"rheo audit --verifier-cmd {shlex.quote(args.verifier_cmd)}"
        if args.framing:
            base += f" --framing {args.framing}"
    else:
        base = f"rheo audit --verifier {shlex.quote(args.verifier)}"
    base += f" --kind {args.kind or 'chain'}"
    for flag, value, default in (("--seed", args.seed, 0), ("--vocab", args.vocab, None), ("--alpha", args.alpha, 0.01),
                                 ("--rule", args.rule, None), ("--setting", args.setting, None)):
        if value is not None and value != default:
            base += f" {flag} {shlex.quote(str(value))}"
    return reproduce(base, res)


_ENDPOINT_ONLY = ("reference", "prompt", "tokens", "temperature", "top_p", "top_k", "model")


def _run_endpoint(args) -> int:
    """``--endpoint URL --reference URL`` (rheotheory.audit.endpoint)."""
    from ..audit.endpoint import DEFAULT_TOKENS, audit_endpoint
    from ..errors import RheoError

    if args.reference is None:
        raise RheoError("--endpoint needs --reference URL: the same model served without speculative decoding")
    if args.runs is not None and args.budget is not None:
        raise RheoError("give --runs or --budget, not both")
    sampling = {"temperature": 1.0 if args.temperature is None else args.temperature}
    if args.top_p is not None:
        sampling["top_p"] = args.top_p
    if args.top_k is not None:
        sampling["top_k"] = args.top_k
    bar = {}

    def estimate(seconds, total):
        announce(args, seconds, f"{total} requests")
        bar["bar"] = progress_bar(args, total, "audit", unit="request").__enter__()

    try:
        res = audit_endpoint(args.endpoint, args.reference, args.prompt or "My favourite colour is",
                             tokens=args.tokens or DEFAULT_TOKENS, runs=args.runs, budget=args.budget,
                             sampling=sampling, alpha=args.alpha, seed=args.seed,
                             jobs=args.jobs if args.jobs > 1 else 4,
                             model=args.model, progress=lambda n: bar["bar"].update(n) if "bar" in bar else None,
                             on_estimate=estimate)
    finally:
        if "bar" in bar:
            bar["bar"].__exit__(None, None, None)
    if args.json:
        print(json.dumps(res.to_dict()))
    else:
        print(res.summary())
        w = res.worst
        print(f"most deviating cell: {w['cell']!r}: {w['endpoint']} runs of the endpoint, {w['reference']} of the "
              f"reference")
        print(f"time: {res.seconds:.1f} s ({2 * res.runs + res.pilot} requests)")
    return EXIT_LOSSLESS if res.verdict == "lossless" else EXIT_LOSSY


def run(args) -> int:
    """Run ``rheo audit`` (its ``--help`` and docs/guide/audit.md).

    Parameters
    ----------
    args : argparse.Namespace

    Returns
    -------
    int
        The exit status (the epilog's table).

    Raises
    ------
    rheotheory.errors.RheoError
        Bad input or a refused verifier (the command line prints one line, exit 2).
    """
    import time

    from ..audit import api, core
    from ..errors import RheoError

    given = [f for f, v in (("--verifier", args.verifier), ("--verifier-cmd", args.verifier_cmd),
                            ("--engine", args.engine), ("--method", args.method), ("--endpoint", args.endpoint),
                            ("--list", args.list or None)) if v is not None]
    if len(given) > 1:
        raise RheoError(f"give one of --verifier, --verifier-cmd, --engine, --method, --endpoint and --list, "
                        f"not {' and '.join(given)}")
    if args.list:
        return _list()
    if args.endpoint is None and any(getattr(args, k) is not None for k in _ENDPOINT_ONLY):
        raise RheoError("--reference, --prompt, --tokens, --temperature, --top-p, --top-k and --model apply to "
                        "--endpoint")
    if args.endpoint is not None:
        try:
            if args.kind or args.vocab or args.rule or args.framing or args.call_timeout:
                raise RheoError("--kind, --vocab, --rule, --framing and --call-timeout do not apply to --endpoint")
            return _run_endpoint(args)
        except RheoError as e:
            if args.json:
                print(json.dumps({"error": str(e), "exit": EXIT_BAD_INPUT, "verdict": None}))
            raise
    try:
        verifier = args.verifier is not None or args.verifier_cmd is not None
        if not verifier and args.engine is None and args.method is None:
            raise RheoError("give --verifier SPEC, --verifier-cmd COMMAND, --engine NAME, --method SPEC, "
                            "--endpoint URL or --list")
        if not verifier and (args.kind or args.vocab or args.rule or args.budget or args.jobs != 1):
            raise RheoError("--kind, --vocab, --rule, --budget and --jobs apply to --verifier and --verifier-cmd, "
                            "not to --engine or --method")
        if args.verifier_cmd is None and (args.framing or args.call_timeout):
            raise RheoError("--framing and --call-timeout apply to --verifier-cmd")
        if args.method is not None and args.planted is not None:
            raise RheoError("--planted applies to --engine; a method's companion runs unless --no-companion")
        if verifier and args.planted is not None:
            raise RheoError("--planted applies to --engine; a verifier's companion runs unless --no-companion")
        if args.runs is not None and args.budget is not None:
            raise RheoError("give --runs or --budget, not both")
        import torch

        torch.set_num_threads(AUDIT_THREADS)
        t0 = time.perf_counter()
        res = (_run_verifier if verifier else _run_engine)(args)
    except RheoError as e:
        if args.json:  # NOTE: the error object on stdout; the one line on stderr and exit 2 follow (cli.main)
            print(json.dumps({"error": str(e), "exit": EXIT_BAD_INPUT, "verdict": None}))
        raise
    secs = time.perf_counter() - t0
    comp = res.companion
    runs = res.settings[0].runs
    if args.json:
        d = res.to_dict()
        d["companion"] = None if comp is None else dict(subject=comp.subject, verdict=comp.verdict,
                                                         p_value=comp.p_value, runs=comp.runs)
        d["wall_seconds"] = round(secs, 3)
        if verifier:
            cpu = sum(s.seconds for s in res.settings)
            d.update(verifier_calls=res.calls, calls_per_minute=round(60 * res.calls / max(cpu, 1e-9)),
                     calls_per_minute_clock="wall" if args.verifier_cmd else "cpu", reproduce=_reproduce(args, res))
        print(json.dumps(d))
    else:
        _print_table(res)
        print(res.summary() if res.verdict == core.LOSSLESS else api.explain(res))
        if res.rule is not None and res.verdict != api.DIFFERS:
            r = res.rule
            follows = r["rules"][r["follows"]] if r["follows"] else None
            said = (f"calls follow {follows['name']} (not rejected at alpha = {args.alpha:g}, "
                    f"p = {follows['p_value']:.3g}, {follows['calls']} calls)" if follows
                    else "the calls follow none of the known lossless rules")
            print(f"rule check: {said}")
        if comp is not None:
            print(comp.summary())
        rate = ""
        if verifier:
            cpu = sum(s.seconds for s in res.settings)
            clock = "wall minute, program included" if args.verifier_cmd else "CPU minute"
            rate = f", {res.calls} verifier calls ({60 * res.calls / max(cpu, 1e-9):,.0f} a {clock})"
        print(f"time: {secs:.1f} s{rate}")
        if verifier and res.verdict != core.LOSSLESS:
            print(f"reproduce: {_reproduce(args, res)}")
    if comp is not None and comp.verdict == core.LOSSLESS:
        # NOTE: a pass this run could not have failed is no pass: a CI step reading the exit code
        # must not go green on it (the Python API raises in the same case)
        print(f"rheo audit: error: inconclusive: the planted companion was not rejected at N = {runs} runs per "
              "setting, so this test could not tell a known bug; raise --runs", file=sys.stderr)
        return EXIT_BAD_INPUT if res.verdict == core.LOSSLESS else (
            EXIT_DIFFERS if res.verdict == api.DIFFERS else EXIT_LOSSY)
    if res.verdict == core.LOSSLESS:
        return EXIT_LOSSLESS
    return EXIT_DIFFERS if res.verdict == api.DIFFERS else EXIT_LOSSY
