"""The ``rheo`` command line: thin wrappers over the library.

Bad input (a malformed instance, impossible tree parameters, an unknown option) exits with code
2 and one line on stderr saying what is wrong.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys

from . import __version__
from .errors import RheoError
from .methods import ALLOWED_VERIFIERS, DEFAULT_VERIFIER, METHODS, Method
from .trees import FILLERS, PROXIES

__all__ = ["main", "build_parser", "add_method_arguments", "method_from_args"]

EXIT_BAD_INPUT = 2

#: `rheo certify` gives up after this many builder runs (about an hour of exact arithmetic).
DEFAULT_MAX_BRANCHES = 2_000_000

#: Modules that contribute subcommands: each defines ``register(subparsers)``, adding a parser
#: whose ``func`` default takes the parsed arguments and returns an exit code.
COMMAND_MODULES: tuple[str, ...] = (
    "rheotheory.commands_proof",
    "rheotheory.commands_decode",
    "rheotheory.commands_mc",
)


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit code 2."""

    def error(self, message):  # noqa: D401
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def _int_at_least(minimum: int):
    """An argparse type: an integer >= ``minimum``, with a one-line message otherwise."""

    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if v < minimum:
            raise argparse.ArgumentTypeError(f"{text!r} must be >= {minimum}")
        return v

    return parse


def _nonneg_float(text: str) -> float:
    """An argparse type: a finite float >= 0."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= v < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a finite number >= 0")
    return v


def _positive_float(text: str) -> float:
    """An argparse type: a finite float > 0."""
    v = _nonneg_float(text)
    if v == 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be a finite number > 0")
    return v


_positive_int = _int_at_least(1)
_nonneg_int = _int_at_least(0)


def add_method_arguments(ap: argparse.ArgumentParser) -> None:
    """The method flags shared by `certify`, `mc` and other subcommands."""
    g = ap.add_argument_group("method")
    g.add_argument("--method", choices=METHODS, default="rheo", help="tree builder (default: rheo)")
    g.add_argument("--top-k", type=_positive_int, default=3, metavar="K",
                   help="slots per expansion and nodes expanded per layer (eagle, rheo; default 3)")
    g.add_argument("--depth", type=_positive_int, default=3, metavar="D", help="tree depth (default 3)")
    g.add_argument("--budget", type=_positive_int, default=8, metavar="N",
                   help="non-root nodes kept by the global prune (eagle, rheo; default 8)")
    g.add_argument("--head", type=_nonneg_int, default=None, metavar="M",
                   help="deterministic head slots per expansion (rheo; default K-1)")
    g.add_argument("--proxy", choices=PROXIES, default="next", help="score of the sampled slot (rheo; default next)")
    g.add_argument("--fillers", choices=FILLERS, default="rank",
                   help="slots after the sampled one when M < K-1 (rheo; default rank)")
    g.add_argument("--verifier", choices=sorted({v for vs in ALLOWED_VERIFIERS.values() for v in vs}),
                   default=None, help="per-node verifier (default: " +
                   ", ".join(f"{m}: {v}" for m, v in DEFAULT_VERIFIER.items()) + ")")
    g.add_argument("--shape", default=None, metavar="PATHS",
                   help="static: JSON list of index paths, e.g. '[[0],[1],[0,0]]'")
    g.add_argument("--sampling", choices=("iid", "wor"), default=None,
                   help="static/chain: i.i.d. or without replacement (default: wor for rrs-wor, else iid)")


def method_from_args(args) -> Method:
    return Method(method=args.method, top_k=args.top_k, depth=args.depth, budget=args.budget, head=args.head,
                  proxy=args.proxy, verifier=args.verifier, shape=args.shape, sampling=args.sampling,
                  fillers=args.fillers)


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="rheo", description="Prove, measure and run stochastic dynamic-tree speculative decoding "
                 "(p = target, q = draft).")
    ap.add_argument("--version", action="version", version=f"rheo {__version__}")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    c = sub.add_parser("certify", help="exact lossless certificate of one method on a toy LM pair",
                       description="Enumerate every random outcome of tree construction, group them into "
                       "equivalence classes and report the exact output law's deviation from the target "
                       "(REFERENCE section 4), the exact tokens per step and the class counts.")
    c.add_argument("instance", nargs="?", default=None,
                   help="instance JSON (default: the built-in example, V=4, horizon 3)")
    add_method_arguments(c)
    c.add_argument("--float", dest="use_float", action="store_true", help="float64 instead of exact rationals")
    c.add_argument("--json", action="store_true", help="print one JSON object")
    c.add_argument("--progress", action="store_true", help="show progress bars on stderr")
    c.add_argument("--max-branches", type=_positive_int, default=DEFAULT_MAX_BRANCHES, metavar="B",
                   help=f"stop with an error after B construction branches (default {DEFAULT_MAX_BRANCHES})")
    c.set_defaults(func=_cmd_certify)

    i = sub.add_parser("instance", help="write a random toy instance JSON to stdout",
                       description="Generate a seeded toy LM pair and print it in the instance format.")
    i.add_argument("--vocab", type=_positive_int, default=4, help="vocabulary size (default 4)")
    i.add_argument("--horizon", type=_nonneg_int, default=3, help="longest prefix (default 3)")
    i.add_argument("--seed", type=_nonneg_int, default=0)
    i.add_argument("--kind", choices=("weights", "logits"), default="weights",
                   help="weights: small integer weights; logits: softmax of Gaussian logits")
    i.add_argument("--mismatch", type=float, default=1.0, help="weights: draft mix, 0 (q=p) .. 1 (default 1)")
    i.add_argument("--temperature", type=float, default=1.0, help="logits: target temperature (default 1)")
    i.add_argument("--temper-draft", action="store_true", help="logits: temper the draft too")
    i.set_defaults(func=_cmd_instance)
    for modname in COMMAND_MODULES:
        importlib.import_module(modname).register(sub)
    return ap


def _cmd_certify(args) -> int:
    from .exact import certify
    from .laws import format_number
    from .pairs import ToyPair, example_pair

    method = method_from_args(args)
    exact = not args.use_float
    pair = ToyPair.load(args.instance, exact=exact) if args.instance else example_pair(exact=exact)
    cert = certify(pair, method, progress=args.progress, max_branches=args.max_branches)
    if args.json:
        d = cert.to_dict()
        d["instance"] = args.instance or "built-in example"
        print(json.dumps(d))
        return 0
    fmt = format_number
    print(f"instance        : {args.instance or 'built-in example'} (V={pair.vocab_size}, horizon={pair.horizon})")
    print(f"method          : {method.describe()}")
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


def _cmd_instance(args) -> int:
    from .pairs import logits_pair, random_pair

    if args.kind == "weights":
        pair = random_pair(args.vocab, args.horizon, seed=args.seed, mismatch=args.mismatch)
    else:
        pair = logits_pair(args.vocab, args.horizon, seed=args.seed, temperature=args.temperature,
                           temper_draft=args.temper_draft)
    print(json.dumps(pair.to_dict()))
    return 0


def main(argv=None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    if getattr(args, "func", None) is None:
        ap.print_help()
        return EXIT_BAD_INPUT
    try:
        return args.func(args)
    except RheoError as e:
        print(f"rheo: error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("rheo: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
