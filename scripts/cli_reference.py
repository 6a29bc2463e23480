"""Render the ``rheo`` command line's help, every subcommand, as Markdown (the site's CLI reference).

Generated from ``rheotheory.cli.build_parser()`` so the reference cannot drift from the parsers;
``mkdocs.yml`` runs it as a hook that fills the ``<!-- cli-reference -->`` marker of
``docs/reference/cli.md``. Run directly, it prints the Markdown.
"""

from __future__ import annotations

import argparse
import os
import re
import textwrap
import sys
from pathlib import Path

#: The checkout this script belongs to: its package is the one documented.
ROOT = Path(__file__).resolve().parent.parent

MARKER = "<!-- cli-reference -->"

#: Help is wrapped at this width, whatever the terminal, so the page is the same on every build;
#: 80 columns fit the site's code column (100 overflowed it and needed a horizontal scroll).
WIDTH = "80"


def _fit_group(line: str, width: int) -> str:
    """A usage line holding a mutually exclusive group ``[--a X | --b Y | ...]`` that argparse cannot
    wrap, broken after its ``|`` separators, each continuation aligned under the group's first flag."""
    start = line.find("[") + 1
    pieces = line[start:].split(" | ")
    out, cur = [], line[:start]
    for k, piece in enumerate(pieces):
        piece = piece + (" |" if k < len(pieces) - 1 else "")
        if len(cur) + len(piece) + 1 > width and len(cur) > start:
            out.append(cur.rstrip())
            cur = " " * start
        cur += piece + " "
    out.append(cur.rstrip())
    return "\n".join(out)


def fit(line: str, width: int = int(WIDTH)) -> str:
    """``line`` with a choice list ``{a,b,...}`` that argparse cannot wrap broken after commas,
    each continuation aligned under the list's first choice, so no line exceeds ``width``
    (unless a single choice is longer)."""
    if len(line) > width and " | " in line and "{" not in line:
        return _fit_group(line, width)
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


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # NOTE: argparse has no public accessor for its subparsers
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


#: One example per command (each line at most WIDTH characters).
EXAMPLES = {
    "certify": ["rheo certify --preset rheo"],
    "optimum": ["rheo optimum --preset rheo"],
    "mc": ["rheo mc --vocab 32000 --temperature 1 --samples 300"],
    "sweep": ["rheo sweep --temperatures 0.5,1 --methods eagle,rheo --steps 40 --workers 1 \\",
              "    --out results"],
    "counterexample": ["rheo counterexample --preset rheo --proxy true"],
    "instance": ["rheo instance --vocab 3 --horizon 3 --seed 1 > inst.json",
                 "rheo certify inst.json --preset eagle --json"],
    "methods": ["rheo methods"],
    "decode": ['rheo decode --prompt "def fib(" --preset rheo --temperature 1.0'],
    "bench": ["rheo bench --temperatures 1 --methods eagle,rheo --repeats 1 --max-new-tokens 40"],
    "audit": ["rheo audit --list"],
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


def _usage(parser: argparse.ArgumentParser) -> str:
    return "\n".join(fit(line) for line in parser.format_usage().rstrip().split("\n"))


def _flag_name(action: argparse.Action) -> str:
    """``--preset NAME`` / ``-h, --help`` / ``INSTANCE``: how the flag is written."""
    if not action.option_strings:
        return action.metavar or action.dest.upper()
    if action.nargs == 0:
        return ", ".join(action.option_strings)
    fmt = argparse.HelpFormatter("rheo")
    metavar = fmt._format_args(action, action.dest.upper())
    if isinstance(action.metavar, str) or action.choices is None:
        return ", ".join(f"{o} {metavar}" for o in action.option_strings)
    return ", ".join(action.option_strings) + " " + "{" + ",".join(map(str, action.choices)) + "}"


def _default(action: argparse.Action, unset: str = "not set") -> str:
    """The default in words: a value, "off" for a switch, ``unset`` when the parser sets none."""
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
        return "off"
    d = action.default
    if d is None or d is argparse.SUPPRESS or d == []:
        return unset
    if isinstance(d, (list, tuple)):
        d = ",".join(map(str, d))
    return f"`{d}`"


#: A default the help text states itself: "(default X)", "; default X" at the end, or "(default: X)".
STATED_DEFAULT = re.compile(r"\s*\(default:? ([^()]*(?:\([^()]*\)[^()]*)*)\)|;\s*default:? ([^;()]+)(\))?$")


def _help_text(parser: argparse.ArgumentParser, action: argparse.Action) -> tuple[str, str | None]:
    """The help, and the default it states (taken out of the text), if any. A flag whose parser
    default is None is often filled later (by the preset, the pair, the device): its help says how."""
    text = " ".join((parser._get_formatter()._expand_help(action) if action.help else "").split())
    m = STATED_DEFAULT.search(text)
    if m is None:
        return text, None
    stated = (m.group(1) or m.group(2)).strip()
    rest = text[:m.start()] + (")" if m.group(3) else "") + text[m.end():]  # NOTE: the ")" of "(...; default X)"
    return rest.strip(" ;"), stated


def flag_entries(parser: argparse.ArgumentParser, actions, unset: str = "not set") -> list[str]:
    """Each flag as a definition-list entry: how it is written, its default, what it means."""
    out = []
    for a in actions:
        if a.help is argparse.SUPPRESS or isinstance(a, (argparse._HelpAction, argparse._VersionAction,
                                                         argparse._SubParsersAction)):
            continue
        text, stated = _help_text(parser, a)
        default = f"`{stated}`" if stated and re.fullmatch(r"[\w.,:'/+-]+", stated) else stated or _default(a, unset)
        out += [f"`{_flag_name(a)}` · default {default}", f":   {text or '-'}", ""]
    return out


def _groups(parser: argparse.ArgumentParser, skip=None):
    for g in parser._action_groups:
        if g is skip:
            continue
        actions = [a for a in g._group_actions if a.help is not argparse.SUPPRESS
                   and not isinstance(a, (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction))]
        if actions:
            yield g, actions


def exit_table(parser: argparse.ArgumentParser) -> list[str]:
    rows = getattr(parser, "exit_statuses", None)
    if not rows:
        return []
    return (["**Exit status**", "", "| status | meaning |", "| --- | --- |"]
            + [f"| {code} | {meaning} |" for code, meaning in rows] + [""])


#: Lines of an example's output shown (the rest is counted).
MAX_OUTPUT_LINES = 30

#: Seconds an example may take at build time.
EXAMPLE_TIMEOUT = 600


def example_output(lines: list[str]) -> str | None:
    """What the example prints (stdout), run in a temporary folder with this checkout's package;
    ``None`` when examples are not run (``RHEO_DOCS_EXECUTE=false``, as for the notebooks)."""
    import subprocess
    import tempfile

    if os.environ.get("RHEO_DOCS_EXECUTE", "true").lower() in ("0", "false", "no"):
        return None
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS=WIDTH)
    script = f'rheo() {{ "{sys.executable}" -m rheotheory.cli "$@"; }}\n' + "\n".join(lines)
    with tempfile.TemporaryDirectory() as tmp:
        # NOTE: paths in the examples are written from the repository's root (rheotheory/data/...)
        os.symlink(ROOT / "rheotheory", Path(tmp) / "rheotheory")
        r = subprocess.run(["bash", "-c", script], cwd=tmp, env=env, capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=EXAMPLE_TIMEOUT)
    out = r.stdout.rstrip("\n").split("\n")
    shown = []
    for line in out[:MAX_OUTPUT_LINES]:
        shown += textwrap.wrap(line, int(WIDTH), subsequent_indent=" " * 18, drop_whitespace=False,
                               break_on_hyphens=False) or [""]
    if len(out) > MAX_OUTPUT_LINES:
        shown.append(f"... ({len(out) - MAX_OUTPUT_LINES} more lines)")
    if r.returncode not in (0, 1):
        shown.append(f"(exit {r.returncode}: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ''})")
    return "\n".join(x.rstrip() for x in shown)


def render(run_examples: bool = True) -> str:
    """Markdown: ``rheo`` itself, the method flags the method-taking commands share (once), then one
    section per subcommand: what it does, its usage, an example with what it prints (run when the
    site is built), each flag with its default and meaning, and its exit statuses."""
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    try:
        from rheotheory.cli import build_parser

        top = build_parser()
        subs = _subparsers(top)
        with_method = {name: (sub, _method_group(sub)) for name, sub in subs.items() if _method_group(sub)}
        parts = ["## `rheo`", "", top.description or "", "", "```text", _usage(top), "```", ""]
        for g, actions in _groups(top):
            parts += flag_entries(top, actions)
        parts += ["Commands: " + " · ".join(f"[`{n}`](#rheo-{n})" for n in subs), ""]
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
            parts += [f"## Method flags {{ #{METHOD_ANCHOR} }}", "",
                      f"Shared by {names}: a preset or family (`--preset`), then single fields that override it. "
                      "`rheo methods` lists the presets and families and which fields each takes.", ""]
            parts += flag_entries(sub0, group0._group_actions, unset="the preset's (or the family's)")
        for name, sub in subs.items():
            group = with_method.get(name, (None, None))[1]
            parts += [f"## `rheo {name}` {{ #rheo-{name} }}", "", sub.description or "", "",
                      "```text", _usage(sub), "```", ""]
            if name in EXAMPLES:
                parts += ["**Example**", "", "```bash", *EXAMPLES[name], "```", ""]
                out = example_output(EXAMPLES[name]) if run_examples else None
                if out is not None:
                    parts += ['<details markdown="1"><summary>What it prints</summary>', "", "```text", out, "```",
                              "", "</details>", ""]
            parts += ["**Flags**", ""]
            for g, actions in _groups(sub, skip=group):
                parts += flag_entries(sub, actions)
            if group is not None:
                differ = [a for a in group._group_actions if _group_help(sub, group, [a]) != shared[a.dest]]
                note = f"It takes the [method flags](#{METHOD_ANCHOR})"
                if differ:
                    parts += [note + "; these read differently here:", ""] + flag_entries(
                        sub, differ, unset="the preset's (or the family's)")
                else:
                    parts += [note + ".", ""]
            parts += exit_table(sub)
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
    print(render(run_examples="--no-examples" not in sys.argv[1:]))
