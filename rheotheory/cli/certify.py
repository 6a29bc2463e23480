"""``rheo certify``: the exact lossless certificate of one method on a toy LM pair."""

from __future__ import annotations

import json

from .args import (EXIT_CODES, EXIT_LOSSLESS, EXIT_LOSSY, add_method_arguments, add_progress, add_toy_instance_arguments,
                   announce, check_work, method_from_args, positive_int, print_toy_header, progress_bar,
                   toy_pair_from_args)

__all__ = ["register", "run", "sized_certify", "size_enumeration"]

#: `rheo certify` gives up after this many builder runs (about an hour of exact arithmetic: a
#: run with its share of the class verification costs 0.3-2 ms on the instances of the
#: documented searches and certificates, V = 3..6).
DEFAULT_MAX_BRANCHES = 2_000_000

#: Builder runs tried before a run is sized: an enumeration this small finishes at once (the
#: built-in example's default method needs about 40), a larger one is estimated first, and the
#: probe's own time gives the seconds of one run on this machine.
PROBE_BRANCHES = 300


def register(sub) -> None:
    c = sub.add_parser("certify", help="exact lossless certificate of one method on a toy LM pair",
                       description="Enumerate every random outcome of tree construction, group them into "
                       "equivalence classes and report the exact output law's deviation from the target "
                       "(docs/theory.md section 4), the exact tokens per step and the class counts. A large "
                       "enumeration is estimated first (random probes of the construction tree) and refused "
                       "over --max-branches.", epilog=EXIT_CODES)
    add_toy_instance_arguments(c)
    add_method_arguments(c, size="toy")
    c.add_argument("--json", action="store_true", help="print one JSON object")
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
        return certify(pair, method, max_branches=min(PROBE_BRANCHES, args.max_branches)), None, None
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
            return certify(pair, method, progress=bar, max_branches=args.max_branches), seconds
        except RheoError as e:
            raise _cap_error(e, args.max_branches) from None


def run(args) -> int:
    from ..laws import format_number

    method = method_from_args(args, size="toy")
    exact = not args.use_float
    pair = toy_pair_from_args(args, method, exact)
    cert, estimated = sized_certify(args, pair, method)
    code = EXIT_LOSSLESS if cert.lossless else EXIT_LOSSY
    if args.json:
        d = cert.to_dict()
        d["estimated_seconds"] = None if estimated is None else round(estimated, 3)
        d["instance"] = args.instance
        d["preset"] = args.preset
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
    print(f"tokens per step : {fmt(cert.tokens_per_step)}" + (f"  (~{float(cert.tokens_per_step):.6f})" if exact else ""))
    print(f"outcomes        : {cert.outcomes} raw construction outcomes")
    print(f"classes         : {cert.classes} equivalence classes ({cert.branches} construction branches)")
    print(f"time            : {cert.seconds:.3f} s"
          + ("" if estimated is None else f" (the run, its probes included, was estimated at {estimated:.3g} s)"))
    return code
