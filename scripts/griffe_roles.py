"""A griffe extension for the site's API reference: Sphinx roles become links, math becomes math.

The package's docstrings are written with Sphinx's markup (``:class:`Candidate```,
``:func:`~rheotheory.verify.optimum.ot_value```, ``:math:`p(x)```, ``.. math::`` blocks), which
mkdocstrings, reading them as Markdown, would print raw. Before they are rendered, this rewrites
every docstring of the package (outside code fences and inline code):

- a cross-reference role (``:func:``, ``:class:``, ``:meth:``, ``:mod:``, ``:data:``, ``:attr:``,
  ``:exc:``, ``:obj:``, ``:const:``, with or without the ``py:`` domain) becomes an *optional*
  mkdocs-autorefs reference to the object's full path, resolved as Sphinx does: in the scope of
  the documented object (its members, its module's imports, its parents), then as written; a
  leading ``.`` is relative to the object's module or package. autorefs makes it a link when that
  object is rendered on the site and leaves it as code otherwise (the numpy and torch names, say),
  without a warning. ``~`` shows the last component; ``title <target>`` shows the title;
- ``:math:`tex``` becomes inline math ``$tex$`` and a ``.. math::`` directive a display block
  ``$$ ... $$``, which ``pymdownx.arithmatex`` and ``scripts/site_math.py`` render;
- any other role (``:ref:``, ``:doc:``, ``:envvar:``...) becomes its text as code;
- a reST literal block (a line ending in ``::`` and the indented block after it) becomes a
  fenced code block, its ``::`` a colon;
- a prose line starting with ``#`` (a shape comment such as ``# [n, d]`` wrapped to the start of
  a line) keeps its ``#`` as text: reST has no such heading, Markdown would make one.

The docstrings themselves stay Sphinx-style for the terminal's ``help()``.
"""

from __future__ import annotations

import html
import re

import griffe

#: Roles that name a Python object.
XREF_ROLES = ("func", "class", "meth", "mod", "data", "attr", "exc", "obj", "const", "type")

#: ``:role:`content``` with an optional domain (``:py:func:``).
ROLE = re.compile(r":(?:(?P<domain>[a-z]+):)?(?P<role>[a-z]+):`(?P<content>[^`]+)`")

#: ``title <target>`` inside a role.
TITLED = re.compile(r"^(?P<title>.*?)\s*<(?P<target>[^<>]+)>$", re.DOTALL)

#: A role, or inline code (kept as it is: a role inside code is an example of one). Leftmost
#: first, so a role's backticks are never read as code and code's never as a role.
TOKEN = re.compile(ROLE.pattern + r"|``.+?``|`[^`]+`", re.DOTALL)

#: A ``.. math::`` directive, its formula on the same line or in the indented block after it.
MATH_DIRECTIVE = re.compile(r"^(?P<indent>[ \t]*)\.\. math::[ \t]*(?P<inline>.*)$")

#: A prose line's leading ``#`` (not an indented code block's), which Markdown reads as a heading.
LEADING_HASH = re.compile(r"^( {0,3})#", re.M)

#: Lines opening or closing a code fence (the doctest examples of ``scripts/griffe_doctests.py``).
FENCE = re.compile(r"^\s*(```|~~~)")


def resolve(obj: griffe.Object, target: str) -> tuple[str, str]:
    """The full path ``target`` names in the scope of ``obj``: where the object is defined, and
    where it was found (they differ for a re-export). ``target`` as written, twice, when it names
    nothing known there (an outside object, which autorefs then leaves as code)."""
    if target.startswith("."):
        module = obj if obj.is_module else obj.module
        candidates = [base + target for base in (module.path, module.parent.path if module.parent else None) if base]
    else:
        head, dot, tail = target.partition(".")
        candidates = []
        for scope in (obj, *_parents(obj)):
            try:
                candidates.append(scope.resolve(head) + dot + tail)
            except (griffe.NameResolutionError, KeyError, AttributeError, ValueError):
                continue
        candidates.append(target)
    for path in candidates:
        if _exists(obj, path):
            return _canonical(obj, path), path
    return target.lstrip("."), target.lstrip(".")


def _parents(obj: griffe.Object):
    parent = obj.parent
    while parent is not None:
        yield parent
        parent = parent.parent


def _lookup(obj: griffe.Object, path: str):
    return obj.modules_collection[path]


def _exists(obj: griffe.Object, path: str) -> bool:
    try:
        _lookup(obj, path)
    except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError, ValueError):
        return False
    return True


def _canonical(obj: griffe.Object, path: str) -> str:
    """The path where the object is defined (an alias, e.g. a re-export, is followed)."""
    try:
        found = _lookup(obj, path)
        return found.final_target.path if found.is_alias else found.path
    except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError, ValueError):
        return path


def role_markdown(obj: griffe.Object, role: str, content: str) -> str:
    """The Markdown (inline HTML) one role becomes."""
    if role == "math":
        return f"${content.strip()}$"
    if role not in XREF_ROLES:
        return f"`{content}`"
    titled = TITLED.match(content)
    title, target = (titled["title"], titled["target"]) if titled else (None, content)
    target = re.sub(r"\s+", "", target)  # NOTE: a role broken over two lines
    short = target.startswith("~")
    target = target.lstrip("~")
    if title is None:
        title = target.lstrip(".").rsplit(".", 1)[-1] if short else target.lstrip(".")
        if role in ("func", "meth"):
            title += "()"
    path, found = resolve(obj, target)
    slug = f' slug="{html.escape(found)}"' if found != path else ""
    # NOTE: optional: an object not rendered on the site stays code, with no warning; the slug
    # (a re-export's path) is autorefs' second guess when the defining path is not rendered.
    return f'<autoref identifier="{html.escape(path)}"{slug} optional>`{title}`</autoref>'


def rewrite_roles(obj: griffe.Object, text: str) -> str:
    """``text`` (no code fence, no math directive) with every role rewritten."""
    return TOKEN.sub(lambda m: role_markdown(obj, m["role"], m["content"]) if m["role"] else m.group(0), text)


def convert(obj: griffe.Object, text: str) -> str:
    """``text`` (a docstring) with its roles and math directives rewritten (module docstring)."""
    lines, out, prose, fenced, i = text.split("\n"), [], [], False, 0

    def flush():
        if prose:
            out.append(rewrite_roles(obj, LEADING_HASH.sub(r"\1\\#", "\n".join(prose))))
            prose.clear()

    while i < len(lines):
        line = lines[i]
        if FENCE.match(line):
            flush()
            fenced = not fenced
            out.append(line)
            i += 1
            continue
        if not fenced and line.rstrip().endswith("::") and not MATH_DIRECTIVE.match(line):
            # A reST literal block ("text::", a blank line, an indented block): a fenced block,
            # and the "::" becomes ":" (or goes, when it stands alone).
            body, j = [], i + 1
            while j < len(lines) and (not lines[j].strip() or _indent(lines[j]) > _indent(line)):
                body.append(lines[j])
                j += 1
            while body and not body[-1].strip():
                body.pop()
            if body and not body[0].strip():
                head = line.rstrip()[:-2].rstrip()
                head = head + ":" if head.strip() and not head.endswith(":") else head
                if head.strip():
                    prose.append(head)
                flush()
                indent = " " * _indent(line)
                cut = min(_indent(b) for b in body if b.strip())
                out += ["", f"{indent}```text", *(indent + b[cut:] for b in body[1:]), f"{indent}```", ""]
                i = j
                continue
        directive = None if fenced else MATH_DIRECTIVE.match(line)
        if directive is None:
            (out if fenced else prose).append(line)
            i += 1
            continue
        flush()
        indent = directive["indent"]
        body = [directive["inline"].strip()] if directive["inline"].strip() else []
        i += 1
        while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > len(indent)):
            body.append(lines[i].strip())
            i += 1
        formula = "\n".join(indent + b for b in body if b)
        # NOTE: a blank line on each side: arithmatex reads $$ ... $$ as display math only as a block.
        out += ["", f"{indent}$$", formula, f"{indent}$$", ""]
    flush()
    return "\n".join(out)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


class SphinxRoles(griffe.Extension):
    """Rewrites every docstring of the loaded package once it is loaded (scopes are complete then)."""

    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:
        for obj in _walk(pkg):
            if obj.docstring is not None:
                obj.docstring.value = convert(obj, obj.docstring.value)


def _walk(obj: griffe.Object):
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _walk(member)
