"""Render the ``rheo`` command line's help, every subcommand, as Markdown (the site's CLI reference).

Generated from ``rheotheory.cli.build_parser()`` so the reference cannot drift from the parsers;
``mkdocs.yml`` runs it as a hook that fills the ``<!-- cli-reference -->`` marker of
``docs/reference/cli.md``. Run directly, it prints the Markdown.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

#: The checkout this script belongs to: its package is the one documented.
ROOT = Path(__file__).resolve().parent.parent

MARKER = "<!-- cli-reference -->"

#: Help is wrapped at this width, whatever the terminal, so the page is the same on every build;
#: 80 columns fit the site's code column (100 overflowed it and needed a horizontal scroll).
WIDTH = "80"


def fit(line: str, width: int = int(WIDTH)) -> str:
    """``line`` with a choice list ``{a,b,...}`` that argparse cannot wrap broken after commas,
    each continuation aligned under the list's first choice, so no line exceeds ``width``
    (unless a single choice is longer)."""
    start = line.find("{")
    if len(line) <= width or start < 0:
        return line
    out, cur = [], line[:start + 1]
    rest = line[start + 1:]
    while rest:
        comma = rest.find(",")
        piece = rest if comma < 0 else rest[:comma + 1]
        if len(cur) + len(piece) > width and len(cur) > start + 1:  # NOTE: a choice per line at least
            out.append(cur.rstrip())
            cur = " " * (start + 1)
        cur += piece
        rest = "" if comma < 0 else rest[comma + 1:]
    out.append(cur)
    return "\n".join(out)


def _help(parser: argparse.ArgumentParser) -> str:
    return "\n".join(fit(line) for line in parser.format_help().rstrip().split("\n"))


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # NOTE: argparse has no public accessor for its subparsers
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def render() -> str:
    """Markdown: ``rheo --help`` then one section per subcommand with its ``--help``."""
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    try:
        from rheotheory.cli import build_parser

        top = build_parser()
        parts = ["## `rheo`", "", "```text", _help(top), "```", ""]
        for name, sub in _subparsers(top).items():
            parts += [f"## `rheo {name}`", "", "```text", _help(sub), "```", ""]
        return "\n".join(parts)
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old


def on_page_markdown(markdown: str, page, config, files) -> str:  # MkDocs hook
    if MARKER in markdown:
        return markdown.replace(MARKER, render())
    return markdown


if __name__ == "__main__":
    print(render())
