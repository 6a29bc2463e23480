"""``rheo certify``: the exact lossless certificate of one method on a toy LM pair."""

from __future__ import annotations

import json

from .args import (EXIT_BAD_INPUT, EXIT_LOSSLESS, EXIT_LOSSY, add_method_arguments, add_progress,
                   add_toy_instance_arguments, announce, check_work, method_from_args, positive_int, print_toy_header,
                   progress_bar, set_exit_statuses, toy_pair_from_args)

__all__ = ["register", "run", "sized_certify", "size_enumeration"]

#: `rheo certify` gives up after this many builder runs (about an hour of exact arithmetic: a
#: run with its share of the class verification costs 0.3-2 ms on the instances of the
#: documented searches and certificates, V = 3..6).
DEFAULT_MAX_BRANCHES = 2_000_000

#: Builder runs tried before a run is sized: an enumeration this small finishes at once (the
#: built-in example's default method needs about 40), a larger one is estimated first, and the
#: probe's own time gives the seconds of one run on this machine.
PROBE_BRANCHES = 300

#: ``--steps`` above this is refused: every outcome of a step starts an enumeration of the next.
MAX_STEPS = 3


def register(sub) -> None:
    c = sub.add_parser("certify", help="exact lossless certificate of one method on a toy LM pair",
                       description="Enumerate every random outcome of tree construction, group them into "
                       "equivalence classes and report the exact output law's deviation from the target "
                       "(docs/theory.md section 4), the exact tokens per step and the class counts. A large "
                       "enumeration is estimated first (random probes of the construction tree) and refused "
                       "over --max-branches.")
    set_exit_statuses(c, (
        (EXIT_LOSSLESS, "LOSSLESS: the exact output law equals the target's on the instance (every deviation is "
                        "exactly 0)"),
        (EXIT_LOSSY, "LOSSY: some deviation is not 0 (the worst sequence is printed)"),
        (EXIT_BAD_INPUT, "bad input, or with --strict a method that breaks the builder's contract (docs/theory.md "
                         "section 5.3): one line on stderr naming the fault"),
    ))
    add_toy_instance_arguments(c)
    add_method_arguments(c, size="toy")
    c.add_argument("--json", action="store_true", help="print one JSON object")
    c.add_argument("--steps", type=positive_int, default=1, metavar="S",
                   help="certify S consecutive steps at once, each step's method chosen by the method's policy "
                   "from the earlier steps' outputs (an online method's bandit; docs/theory.md section 2.8); the "
                   f"instance's horizon must reach S*(D+1)-1; at most {MAX_STEPS} (default 1)")
    c.add_argument("--strict", action="store_true",
                   help="check the builder's contract instead of trusting it (docs/theory.md section 5.3): every "
                   "draw recorded with its law and checked against the law its answer was weighted with, every "
                   "sampled token matched with a draw under the law it declares, every branch rebuilt under other "
                   "global random states, in another order and after unrelated builds, merged trees compared, and "
                   "the law of Z over the classes equal to the law verified branch by branch; a break is one line "
                   "naming the fault, exit 2 (slower: every branch is built three times and verified twice)")
    c.add_argument("--policy-seed", type=int, default=0, metavar="SEED",
                   help="seed of an online policy's own draws (with --steps; default 0)")
    add_progress(c)
    c.add_argument("--max-branches", type=positive_int, default=DEFAULT_MAX_BRANCHES, metavar="B",
                   help=f"refuse an enumeration estimated over B construction branches, and stop at B (default "
                   f"{DEFAULT_MAX_BRANCHES}, about an hour of one core); the tree's K must be at most the instance's V")
    c.set_defaults(func=run)


def _cap_error(e, cap: int):
    """The enumerator's cap message, which names its parameter, with the flag that raises it."""
    from ..errors import RheoError

    if "construction branches" not in str(e):
        return e
    return RheoError(f"{e} (--max-branches, default {DEFAULT_MAX_BRANCHES})")


def size_enumeration(args, pair, method, what: str):
    """The sizing rule of the exact commands: an enumeration that finishes within
    :data:`PROBE_BRANCHES` is returned (its certificate); a larger one is estimated
    (:func:`rheotheory.exact.estimate_cost`: the runs by random probes, the seconds of a run from
    the timed probe enumeration, the seconds of a class verification timed on the probes' trees),
    refused over ``--max-branches``, announced when long, and then left to the caller: returns
    ``(None, cost, seconds)``; a finished probe returns ``(certificate, None, None)``."""
    import time

    from ..errors import RheoError
    from ..exact import certify, estimate_cost

    t0 = time.perf_counter()
    try:
        return certify(pair, method, max_branches=min(PROBE_BRANCHES, args.max_branches),
                       strict=getattr(args, "strict", False)), None, None
    except RheoError as e:
        if "construction branches" not in str(e):
            raise
        if args.max_branches <= PROBE_BRANCHES:
            raise _cap_error(e, args.max_branches) from None
    run_seconds = (time.perf_counter() - t0) / PROBE_BRANCHES  # NOTE: a probe run, as the enumeration makes it
    cost = estimate_cost(pair, method)
    check_work(cost.runs, args.max_branches, what, "--max-branches", "DEFAULT_MAX_BRANCHES", "construction branches")
    seconds = time.perf_counter() - t0 + cost.seconds(run_seconds=run_seconds)  # NOTE: the probes' time too
    announce(args, seconds, f"{cost.runs:.3g} construction branches")
    return None, cost, seconds


def sized_certify(args, pair, method, what: str = "the enumeration"):
    """:func:`rheotheory.exact.certify` under the sizing rule, with a progress bar when it is big:
    ``(certificate, estimated seconds or None)`` (None: the probe finished it)."""
    from ..errors import RheoError
    from ..exact import certify

    cert, cost, seconds = size_enumeration(args, pair, method, what)
    if cert is not None:
        return cert, None
    with progress_bar(args, round(cost.runs), "construction branches (estimated total)", "br") as bar:
        try:
            return certify(pair, method, progress=bar, max_branches=args.max_branches,
                           strict=getattr(args, "strict", False)), seconds
        except RheoError as e:
            raise _cap_error(e, args.max_branches) from None


def _certify_steps(args, pair, method):
    """``--steps S``: the n-step certificate (no estimate: each enumeration is capped by --max-branches)."""
    from ..errors import RheoError
    from ..exact import certify_steps

    if args.steps > MAX_STEPS:
        raise RheoError(f"--steps {args.steps} is over the limit of {MAX_STEPS} (MAX_STEPS): every outcome of a "
                        "step starts an enumeration of the next")
    need = args.steps * (method.depth + 1) - 1
    if pair.horizon < need:
        raise RheoError(f"{args.steps} steps of depth {method.depth} read prefixes up to length {need}; the instance's "
                        f"horizon is {pair.horizon} (use --generate V,{need},SEED)")
    with progress_bar(args, None, "step enumerations", "enum") as bar:
        try:
            return certify_steps(pair, method, args.steps, seed=args.policy_seed, max_branches=args.max_branches,
                                 progress=bar.update), None
        except RheoError as e:
            raise _cap_error(e, args.max_branches) from None


def run(args) -> int:
    from ..laws import format_number

    method = method_from_args(args, size="toy")
    exact = not args.use_float
    pair = toy_pair_from_args(args, method, exact)
    if args.steps > 1:
        if args.strict:
            from ..errors import RheoError

            raise RheoError("--strict checks one step's classes; certify the method with --steps 1 --strict")
        cert, estimated = _certify_steps(args, pair, method)
    else:
        cert, estimated = sized_certify(args, pair, method)
    code = EXIT_LOSSLESS if cert.lossless else EXIT_LOSSY
    plugin = not type(method).__module__.startswith("rheotheory.")
    if args.json:
        d = cert.to_dict()
        d["contract"] = "checked" if args.strict else "trusted"
        d["estimated_seconds"] = None if estimated is None else round(estimated, 3)
        d["instance"] = args.instance
        d["preset"] = args.preset
        d["steps"] = args.steps
        print(json.dumps(d))
        return code
    fmt = format_number
    print_toy_header(args, pair, method)
    print(f"arithmetic      : {'exact rationals' if exact else 'float64'}")
    print(f"verdict         : {'LOSSLESS' if cert.lossless else 'LOSSY'}")
    print(f"max deviation   : {fmt(cert.max_deviation)}" + (f"  (~{float(cert.max_deviation):.3g})" if exact else ""))
    if cert.worst_sequence is not None:
        print(f"worst sequence  : {list(cert.worst_sequence)}")
    print("by length       : " + ", ".join(f"l={i + 1}: {float(x):.3g}" for i, x in enumerate(cert.per_length)))
    if args.steps > 1:
        print(f"steps           : {args.steps} consecutive steps certified as one output (policy seed "
              f"{args.policy_seed})")
    print(f"tokens per step : {fmt(cert.tokens_per_step)}" + (f"  (~{float(cert.tokens_per_step):.6f})" if exact else ""))
    print(f"outcomes        : {cert.outcomes} raw construction outcomes")
    print(f"classes         : {cert.classes} equivalence classes ({cert.branches} construction branches)")
    if args.strict:
        print("contract        : checked (--strict, docs/theory.md section 5.3)")
    elif plugin:
        print("contract        : trusted, not checked (a plugin's builder; --strict checks it)")
    print(f"time            : {cert.seconds:.3f} s"
          + ("" if estimated is None else f" (the run, its probes included, was estimated at {estimated:.3g} s)"))
    return code
