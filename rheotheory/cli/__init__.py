"""The ``rheo`` command line: thin wrappers over the library, one module per subcommand.

Bad input (a malformed instance, impossible tree parameters, a flag that does not apply, an
out-of-range value) exits with code 2 and one line on stderr saying what is wrong.
"""

from __future__ import annotations

import os
import sys

from .. import __version__
from ..errors import RheoError
from . import bench, certify, counterexample, decode, instance, mc, methods, optimum, sweep
from .args import EXIT_BAD_INPUT, EXIT_INTERRUPTED, Parser, one_line

__all__ = ["main", "build_parser", "COMMANDS"]

#: Subcommand modules, in the order `rheo --help` lists them; each defines ``register(sub)``
#: adding a parser whose ``func`` default takes the parsed arguments and returns an exit code.
COMMANDS = (certify, optimum, mc, sweep, counterexample, instance, methods, decode, bench)


def build_parser() -> Parser:
    ap = Parser(prog="rheo", description="Prove, measure and run stochastic dynamic-tree speculative decoding "
                "(p = target, q = draft).")
    ap.add_argument("--version", action="version", version=f"rheo {__version__}")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for module in COMMANDS:
        module.register(sub)
    return ap


def main(argv=None) -> int:
    try:
        ap = build_parser()  # NOTE: inside the try: building it imports modules, and Ctrl-C can land there
        try:
            args = ap.parse_args(argv)
        except SystemExit as e:  # NOTE: usage errors and --help return their code to a caller of main()
            return e.code if isinstance(e.code, int) else EXIT_BAD_INPUT
        if getattr(args, "func", None) is None:
            ap.print_help()
            return EXIT_BAD_INPUT
        return args.func(args)
    except RheoError as e:
        print(f"rheo: error: {one_line(str(e))}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("rheo: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # NOTE: the reader of our output went away (e.g. `| head`): stop quietly, like other CLIs.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
