"""The ``rheo`` command line: thin wrappers over the library, one module per subcommand.

Bad input (a malformed instance, impossible tree parameters, a flag that does not apply, an
out-of-range value) exits with code 2 and one line on stderr saying what is wrong.
"""

from __future__ import annotations

import importlib
import os
import sys

from .. import __version__
from ..errors import RheoError
from .args import EXIT_BAD_INPUT, EXIT_INTERRUPTED, Parser, one_line

__all__ = ["main", "build_parser", "COMMANDS"]

#: Subcommands, in the order `rheo --help` lists them: the module ``rheotheory.cli.<name>`` of each
#: defines ``register(sub)`` adding a parser whose ``func`` default takes the parsed arguments and
#: returns an exit code.
COMMANDS = ("certify", "optimum", "mc", "sweep", "counterexample", "instance", "methods", "decode", "bench",
            "audit", "head")


def command_module(name: str):
    """The module of subcommand ``name`` (imported on first use: a command loads only its own)."""
    return importlib.import_module(f"{__name__}.{name}")


def build_parser(only: str | None = None) -> Parser:
    """The ``rheo`` parser with every subcommand, or with subcommand ``only`` alone (what ``main``
    builds when the command line names one, so that a command imports no other command's library)."""
    ap = Parser(prog="rheo", description="Prove, measure and run stochastic dynamic-tree speculative decoding "
                "(p = target, q = draft).")
    ap.add_argument("--version", action="version", version=f"rheo {__version__}")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name in COMMANDS if only is None else (only,):
        command_module(name).register(sub)
    return ap


def _named_command(argv: list[str]) -> str | None:
    """The subcommand the command line names (its first word that is not an option), if it is one."""
    first = next((a for a in argv if not a.startswith("-")), None)
    return first if first in COMMANDS else None


def main(argv=None) -> int:
    try:
        argv = sys.argv[1:] if argv is None else list(argv)
        # NOTE: inside the try: building the parser imports modules, and Ctrl-C can land there
        ap = build_parser(_named_command(argv))
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
