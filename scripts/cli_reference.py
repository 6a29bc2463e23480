"""Render the ``rheo`` command line's help, every subcommand, as Markdown (the site's CLI reference).

Generated from ``rheotheory.cli.build_parser()`` so the reference cannot drift from the parsers;
``mkdocs.yml`` runs it as a hook that fills the ``<!-- cli-reference -->`` marker of
``docs/reference/cli.md``. Run directly, it prints the Markdown.
"""

from __future__ import annotations

import argparse
import os
import textwrap
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


#: One example per command (each line at most WIDTH characters).
EXAMPLES = {
    "certify": ["rheo certify --preset rheo", "rheo instance --vocab 4 --horizon 3 --seed 1 > inst.json",
                "rheo certify inst.json --preset eagle --json"],
    "optimum": ["rheo optimum --preset rheo --json"],
    "mc": ["rheo mc --vocab 32000 --temperature 1 --samples 300"],
    "sweep": ["rheo sweep --temperatures 0.5,1 --methods eagle,rheo --steps 40 --out results"],
    "counterexample": ["rheo counterexample --preset rheo --proxy true"],
    "instance": ["rheo instance --vocab 4 --horizon 3 --seed 1 > inst.json"],
    "methods": ["rheo methods"],
    "decode": ['rheo decode --prompt "def fib(" --preset rheo --temperature 1.0'],
    "bench": ["rheo bench --temperatures 1 --methods eagle,rheo --repeats 1"],
    "audit": ["rheo audit --list", "rheo audit --verifier path/to/file.py:verify_tree --kind tree"],
    "head": ["rheo head info rheotheory/data/smollm2_head_v3"],
}

#: The argument group every method-taking command shares (rheotheory.cli.args).
METHOD_GROUP = "method"
METHOD_ANCHOR = "method-flags"


def _method_group(parser: argparse.ArgumentParser):
    return next((g for g in parser._action_groups if (g.title or "").startswith(METHOD_GROUP)), None)


def _group_help(parser: argparse.ArgumentParser, group, actions=None) -> str:
    fmt = parser._get_formatter()
    fmt.start_section(group.title)
    fmt.add_arguments(actions if actions is not None else group._group_actions)
    fmt.end_section()
    return "\n".join(fit(line) for line in fmt.format_help().rstrip().split("\n"))


def _without_method_flags(parser: argparse.ArgumentParser, group) -> str:
    """The parser's help with the shared method group left out (usage included)."""
    saved = [(a, a.help) for a in group._group_actions]
    index = parser._action_groups.index(group)
    parser._action_groups.remove(group)
    try:
        for a, _ in saved:
            a.help = argparse.SUPPRESS
        return _help(parser)
    finally:
        for a, h in saved:
            a.help = h
        parser._action_groups.insert(index, group)


def render() -> str:
    """Markdown: ``rheo --help``, the method flags the method-taking commands share (once), then one
    section per subcommand with an example and its ``--help`` (the method flags as a link, plus any
    method flag whose help differs for that command)."""
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    try:
        from rheotheory.cli import build_parser

        top = build_parser()
        subs = _subparsers(top)
        with_method = {name: (sub, _method_group(sub)) for name, sub in subs.items() if _method_group(sub)}
        shared = None
        if with_method:
            # The shared text of each flag: the one most commands print.
            texts: dict[str, dict[str, int]] = {}
            for sub, group in with_method.values():
                for a in group._group_actions:
                    t = _group_help(sub, group, [a])
                    texts.setdefault(a.dest, {}).setdefault(t, 0)
                    texts[a.dest][t] += 1
            shared = {dest: max(c, key=c.get) for dest, c in texts.items()}
            sub0, group0 = next(iter(with_method.values()))
            names = ", ".join(f"`rheo {n}`" for n in with_method)
        parts = ["## `rheo`", "", "```text", _help(top), "```", ""]
        if shared:
            parts += [f"## Method flags {{ #{METHOD_ANCHOR} }}", "",
                      textwrap.fill(f"Shared by {names}: a preset or family (`--preset`), then single fields "
                                    "that override it. `rheo methods` lists the presets and families and which "
                                    "fields each takes.", int(WIDTH)), "",
                      "```text", _group_help(sub0, group0), "```", ""]
        for name, sub in subs.items():
            parts += [f"## `rheo {name}`", ""]
            if name in EXAMPLES:
                parts += ["```bash", *EXAMPLES[name], "```", ""]
            if name in with_method:
                group = with_method[name][1]
                parts += ["```text", _without_method_flags(sub, group), "```", ""]
                differ = [a for a in group._group_actions if _group_help(sub, group, [a]) != shared[a.dest]]
                note = f"It takes the [method flags](#{METHOD_ANCHOR})"
                if differ:
                    parts += [note + "; these read differently here:", "", "```text",
                              _group_help(sub, group, differ), "```", ""]
                else:
                    parts += [note + ".", ""]
            else:
                parts += ["```text", _help(sub), "```", ""]
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
