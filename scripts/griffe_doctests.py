"""A griffe extension for the site's API reference: docstring examples become code blocks.

The package's docstrings hold doctest examples (``>>>`` lines and their expected output, run by
the default test suite) as plain reST text; rendered as Markdown they would read as prose, and
their brackets as links. This wraps each run of example lines in a ``pycon`` fence.
"""

from __future__ import annotations

import griffe


def fence_examples(text: str) -> str:
    out, inside = [], False
    for line in text.split("\n"):
        starts = line.lstrip().startswith(">>>")
        if starts and not inside:
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
        if obj.docstring is not None and ">>>" in obj.docstring.value:
            obj.docstring.value = fence_examples(obj.docstring.value)
