"""``rheo certify``: the exact lossless certificate of one method on a toy LM pair."""

from __future__ import annotations

import json

from .args import (add_method_arguments, add_toy_instance_arguments, method_from_args, positive_int, print_toy_header,
                   toy_pair_from_args)

__all__ = ["register", "run"]

#: `rheo certify` gives up after this many builder runs (about an hour of exact arithmetic).
DEFAULT_MAX_BRANCHES = 2_000_000


def register(sub) -> None:
    c = sub.add_parser("certify", help="exact lossless certificate of one method on a toy LM pair",
                       description="Enumerate every random outcome of tree construction, group them into "
                       "equivalence classes and report the exact output law's deviation from the target "
                       "(docs/theory.md section 4), the exact tokens per step and the class counts.")
    add_toy_instance_arguments(c)
    add_method_arguments(c, size="toy")
    c.add_argument("--json", action="store_true", help="print one JSON object")
    c.add_argument("--progress", action="store_true", help="show progress bars on stderr")
    c.add_argument("--max-branches", type=positive_int, default=DEFAULT_MAX_BRANCHES, metavar="B",
                   help=f"stop with an error after B construction branches (default {DEFAULT_MAX_BRANCHES}, "
                   "about an hour); the tree's K must be at most the instance's V")
    c.set_defaults(func=run)


def run(args) -> int:
    from ..errors import RheoError
    from ..exact import certify
    from ..laws import format_number

    method = method_from_args(args, size="toy")
    exact = not args.use_float
    pair = toy_pair_from_args(args, method, exact)
    try:
        cert = certify(pair, method, progress=args.progress, max_branches=args.max_branches)
    except RheoError as e:
        # NOTE: the enumerator's cap message names its parameter; on the command line it is a flag
        if "construction branches" not in str(e):
            raise
        raise RheoError(f"{e} (--max-branches, default {DEFAULT_MAX_BRANCHES})") from None
    if args.json:
        d = cert.to_dict()
        d["instance"] = args.instance
        d["preset"] = args.preset
        print(json.dumps(d))
        return 0
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
    print(f"time            : {cert.seconds:.3f} s")
    return 0
