"""``rheo certify``: the exact lossless certificate of one method on a toy LM pair."""

from __future__ import annotations

import argparse
import json

from .args import MAX_SEED, add_max_entries, add_method_arguments, check_fits_vocab, method_from_args, positive_int

__all__ = ["register", "run"]

#: `rheo certify` gives up after this many builder runs (about an hour of exact arithmetic).
DEFAULT_MAX_BRANCHES = 2_000_000


#: Most digits of one --generate value (MAX_SEED has 19).
_GENERATE_DIGITS = 19


def generate_arg(text: str) -> tuple[int, int, int]:
    """``--generate V,H,SEED``: vocabulary >= 1, horizon >= 0, seed in 0..MAX_SEED."""
    parts = text.split(",")
    if len(parts) != 3 or not all(t.strip().isascii() and t.strip().isdigit() and len(t) <= _GENERATE_DIGITS
                                  for t in parts):
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not V,H,SEED (three non-negative integers)")
    v, h, seed = (int(t) for t in parts)
    if v < 1 or seed > MAX_SEED:
        raise argparse.ArgumentTypeError(f"{text[:40]!r}: V must be >= 1 and SEED in 0..{MAX_SEED}")
    return v, h, seed


def register(sub) -> None:
    c = sub.add_parser("certify", help="exact lossless certificate of one method on a toy LM pair",
                       description="Enumerate every random outcome of tree construction, group them into "
                       "equivalence classes and report the exact output law's deviation from the target "
                       "(docs/theory.md section 4), the exact tokens per step and the class counts.")
    c.add_argument("instance", nargs="?", default=None,
                   help="instance JSON (default: the built-in example, V=4, horizon 3)")
    c.add_argument("--generate", type=generate_arg, default=None, metavar="V,H,SEED",
                   help="instead of an instance file: the seeded generated pair (vocabulary V, horizon H), whose "
                   "laws are made only at the prefixes the certificate visits; equal to random_pair(V, H, SEED, "
                   "keyed=True) on every prefix")
    add_method_arguments(c, size="toy")
    c.add_argument("--float", dest="use_float", action="store_true", help="float64 instead of exact rationals")
    c.add_argument("--json", action="store_true", help="print one JSON object")
    c.add_argument("--progress", action="store_true", help="show progress bars on stderr")
    c.add_argument("--max-branches", type=positive_int, default=DEFAULT_MAX_BRANCHES, metavar="B",
                   help=f"stop with an error after B construction branches (default {DEFAULT_MAX_BRANCHES}, "
                   "about an hour); the tree's K must be at most the instance's V")
    add_max_entries(c)
    c.set_defaults(func=run)


def run(args) -> int:
    from ..errors import RheoError
    from ..exact import certify
    from ..laws import format_number
    from ..pairs import GeneratedPair, ToyPair, example_pair

    method = method_from_args(args, size="toy")
    exact = not args.use_float
    if args.generate is not None:
        if args.instance:
            raise RheoError("give an instance file or --generate, not both")
        pair = GeneratedPair(*args.generate, exact=exact, max_entries=args.max_entries)
        args.instance = "generated:{},{},{}".format(*args.generate)
    else:
        pair = (ToyPair.load(args.instance, exact=exact, max_entries=args.max_entries) if args.instance
                else example_pair(exact=exact))
    check_fits_vocab(method, pair.vocab_size, "the instance")
    try:
        cert = certify(pair, method, progress=args.progress, max_branches=args.max_branches)
    except RheoError as e:
        # NOTE: the enumerator's cap message names its parameter; on the command line it is a flag
        if "construction branches" not in str(e):
            raise
        raise RheoError(f"{e} (--max-branches, default {DEFAULT_MAX_BRANCHES})") from None
    if args.json:
        d = cert.to_dict()
        d["instance"] = args.instance or "built-in example"
        d["preset"] = args.preset
        print(json.dumps(d))
        return 0
    fmt = format_number
    print(f"instance        : {args.instance or 'built-in example'} (V={pair.vocab_size}, horizon={pair.horizon})")
    print(f"method          : {method.describe()}  (--preset {args.preset})")
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
