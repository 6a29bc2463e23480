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


#: Help of ``--plugin``, on ``rheo`` and on every subcommand.
PLUGIN_HELP = ("load a plugin first: a file.py or a module that registers tree families, verifiers or presets "
               "(rheotheory.plugin); repeatable; also RHEO_PLUGINS and installed entry points")


def _add_plugin_flag(parser) -> None:
    parser.add_argument("--plugin", action="append", default=None, metavar="FILE.py|MODULE", help=PLUGIN_HELP)


def build_parser(only: str | None = None) -> Parser:
    """The ``rheo`` parser with every subcommand, or with subcommand ``only`` alone.

    Building one subcommand alone is what :func:`main` does when the command line names one, so
    that a command imports no other command's library.

    Parameters
    ----------
    only : str, optional
        The name of one subcommand (one of :data:`COMMANDS`) to register; every subcommand when None.

    Returns
    -------
    Parser
        The argument parser (``--version``, ``--plugin`` on it and on every subcommand); a parsed
        subcommand's ``func`` default takes the parsed arguments and returns an exit code.
    """
    ap = Parser(prog="rheo", description="Prove, measure and run stochastic dynamic-tree speculative decoding "
                "(p = target, q = draft).")
    ap.add_argument("--version", action="version", version=f"rheo {__version__}")
    _add_plugin_flag(ap)
    sub = ap.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name in COMMANDS if only is None else (only,):
        command_module(name).register(sub)
    for parser in sub.choices.values():
        _add_plugin_flag(parser)
    return ap


def plugin_args(argv: list[str]) -> list[str]:
    """The values of every ``--plugin X`` / ``--plugin=X`` on the command line (loaded before the
    parser is built, so that a plugin's families have their flags and its names their choices)."""
    out = []
    for i, a in enumerate(argv):
        if a == "--":
            break
        if a == "--plugin" and i + 1 < len(argv):
            out.append(argv[i + 1])
        elif a.startswith("--plugin="):
            out.append(a.partition("=")[2])
    return out


def _named_command(argv: list[str]) -> str | None:
    """The subcommand the command line names (its first word that is neither an option nor the
    value of ``--plugin``), if it is one."""
    words = [a for i, a in enumerate(argv) if not a.startswith("-") and (i == 0 or argv[i - 1] != "--plugin")]
    first = next(iter(words), None)
    return first if first in COMMANDS else None


def main(argv=None) -> int:
    """Run the ``rheo`` command line and return its exit status.

    Plugins named by ``--plugin`` (and the installed ones, unless the command is ``head`` or no
    command is named) are loaded before the parser is built, so that their families have their
    flags and their names their choices. Nothing is raised to the caller: bad input
    (:class:`RheoError`) prints one line ``rheo: error: ...`` on stderr, Ctrl-C prints
    ``rheo: interrupted``, and a closed output pipe stops quietly.

    Parameters
    ----------
    argv : list of str, optional
        The arguments after the program name; ``sys.argv[1:]`` when None.

    Returns
    -------
    int
        The exit status: the subcommand's own (e.g. 0 lossless, 1 lossy), the parser's for ``--help``
        and usage errors, 2 (``EXIT_BAD_INPUT``) for bad input or no subcommand, 130
        (``EXIT_INTERRUPTED``) on Ctrl-C, 0 when the reader of the output went away.
    """
    try:
        argv = sys.argv[1:] if argv is None else list(argv)
        # NOTE: inside the try: building the parser imports modules, and Ctrl-C can land there
        named = _named_command(argv)
        wanted = plugin_args(argv)
        if wanted or (named is not None and named != "head"):
            from ..plugin_loader import ensure_plugins, load_plugin  # NOTE: `rheo --help` loads no plugin

            for where in wanted:
                load_plugin(where)
            ensure_plugins()
        ap = build_parser(named)
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
    except ModuleNotFoundError as e:
        from ..optional import extra_of, missing_message

        if extra_of(e.name) is None:  # NOTE: not an optional dependency: a real bug, shown as one
            raise
        print(f"rheo: error: {missing_message(e.name, 'this command')}", file=sys.stderr)
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
