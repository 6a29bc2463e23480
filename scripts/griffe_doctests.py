"""A griffe extension for the site's API reference: docstring examples become code blocks, and
the numpy-style sections (Parameters / Returns / Raises ...) end where their items end.

The package's docstrings hold doctest examples (``>>>`` lines and their expected output, run by
the default test suite) as plain reST text; rendered as Markdown they would read as prose, and
their brackets as links. This wraps each run of example lines in a ``pycon`` fence.

mkdocstrings reads the docstrings as numpy style, whose sections run to the next section's
header: a doctest or a closing paragraph written after a ``Parameters`` block would be read as
more parameters (a parameter called ``Made``, say). So, inside a docstring with numpy sections,
an example after a section gets an ``Examples`` header (griffe renders its ``>>>`` lines as code
itself) and a prose paragraph after an item section gets a ``Notes`` header. An item written
``name : a sentence...`` (the sentence where a type would be) has the sentence moved into its
description, so it is not printed as a type annotation.
"""

from __future__ import annotations

import re

import griffe

#: A numpy section header: its title, then a line of dashes.
SECTION = re.compile(r"^(?P<title>[A-Z][A-Za-z ]+)\n-{3,}$", re.M)

#: Sections whose body is a list of items (``name : type`` then an indented description).
ITEM_SECTIONS = {"Parameters", "Other Parameters", "Returns", "Yields", "Receives", "Raises", "Warns",
                 "Warnings", "Attributes", "Functions", "Classes", "Modules", "Type Parameters"}


def _prose(line: str) -> bool:
    """A top-level line of an item section that is a sentence, not an item's name or type."""
    words = line.split()
    return " : " not in line and (len(words) >= 5 or line.rstrip().endswith("."))


#: A numpy item line ``name : type``.
ITEM = re.compile(r"^(?P<name>[*\w][\w, *]*?) : (?P<type>.+)$")


def _prose_type(text: str) -> bool:
    """A ``name : ...`` item whose "type" is the start of a sentence (``model : a ``transformers``
    decoder-only causal LM``), which the theme would print as a type annotation. A long type
    (``numpy.ndarray of shape (V,), Fractions or float64``, ``int, default 1``) is a type."""
    words = text.split()
    return "``" in text or text.rstrip().endswith(".") or (bool(words) and words[0] in ("a", "an", "the"))


def close_sections(text: str) -> str:
    """``text`` with an ``Examples`` header before a doctest that follows a numpy section, and a
    ``Notes`` header before a paragraph that follows an item section (no change without sections)."""
    if not SECTION.search(text):
        return text
    lines, out, section = text.split("\n"), [], None
    for i, line in enumerate(lines):
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if re.fullmatch(r"-{3,}", nxt.strip()) and line.strip() and not line.startswith(" "):
            section = line.strip()
        elif section and line and not line[0].isspace() and i > 0 and not lines[i - 1].strip():
            if line.startswith(">>>") and section != "Examples":
                out += ["Examples", "--------"]
                section = "Examples"
            elif section in ITEM_SECTIONS and not line.startswith(">>>") and _prose(line):
                out += ["Notes", "-----"]
                section = "Notes"
        if section in ITEM_SECTIONS and line and not line[0].isspace() and (m := ITEM.match(line)) \
                and _prose_type(m["type"]):
            # NOTE: the sentence moves to the description, where it is read as prose.
            out += [m["name"], "    " + m["type"]]
            continue
        out.append(line)
    return "\n".join(out)


def fence_examples(text: str) -> str:
    """``text`` with each run of ``>>>`` example lines in a ``pycon`` fence, except inside a numpy
    ``Examples`` section (griffe renders those as code already)."""
    out, inside, section = [], False, None
    lines = text.split("\n")
    for i, line in enumerate(lines):
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if re.fullmatch(r"-{3,}", nxt.strip()) and line.strip() and not line.startswith(" "):
            section = line.strip()
        starts = line.lstrip().startswith(">>>")
        if starts and not inside and section != "Examples":
            out.append("```pycon")
            inside = True
        elif inside and not line.strip():
            out.append("```")
            inside = False
        out.append(line)
    if inside:
        out.append("```")
    return "\n".join(out)


class DoctestFences(griffe.Extension):
    def on_object(self, *, obj, **kwargs) -> None:
        if obj.docstring is None:
            return
        text = close_sections(obj.docstring.value)
        if ">>>" in text:
            text = fence_examples(text)
        obj.docstring.value = text
