r"""MkDocs hook: the site's math is MathML made at build time, so formulas need no script and no
network (browsers render MathML Core natively).

``pymdownx.arithmatex`` (generic mode, ``mkdocs.yml``) finds the math in the pages and in the
API reference's docstrings, code spans excepted, and leaves it as
``<span class="arithmatex">\(...\)</span>`` (inline) or ``<div class="arithmatex">\[...\]</div>``
(a ``$$`` block set apart by blank lines). This hook converts each to MathML with
``latex2mathml`` (the ``docs`` extra) once a page is rendered.

A display formula written inside a paragraph, ``$$...$$`` between lines of text as
``docs/theory.md`` writes them, is display math too: the Markdown extension added here reads it
before arithmatex's inline pattern would read it as ``$``, inline math, ``$``.
"""

from __future__ import annotations

import html
import re

from latex2mathml.converter import convert as latex_to_mathml
from markdown import Extension
from markdown.inlinepatterns import InlineProcessor
from mkdocs.plugins import event_priority

#: Punctuation right after inline math, kept on its line (a formula never starts a line with ".").
TRAILING = r"(?P<after>[.,;:!?)\]]*)"

#: arithmatex's generic output: inline, and a display block.
INLINE = re.compile(r'<span class="arithmatex">\\\((?P<tex>.*?)\\\)</span>' + TRAILING, re.DOTALL)
BLOCK = re.compile(r'<div class="arithmatex">\\\[(?P<tex>.*?)\\\]</div>', re.DOTALL)

#: ``$$...$$`` inside a paragraph (not escaped; no ``$`` inside).
DISPLAY_IN_PARAGRAPH = r"(?<!\\)\$\$(?P<tex>(?:\\.|[^\\$])+?)\$\$"

#: Where latex2mathml's MathML is not what the TeX means (tests/test_docs.py checks each).
FIXES = (
    # \sim is the relation U+223C; latex2mathml writes an identifier "~", set without spacing.
    (re.compile(r"<mi>&#x0007E;</mi>"), "<mo>&#x0223C;</mo>"),
    # A bare | is an ordinary symbol in TeX (|V|, q|_S): no operator spacing around it.
    (re.compile(r'<mo( stretchy="false")?>&#x0007C;</mo>'), r'<mo\1 lspace="0" rspace="0">&#x0007C;</mo>'),
    # \mathrel{+}: latex2mathml nests an mrow inside an mo, which MathML does not allow.
    (re.compile(r"<mo>(<mrow>.*?</mrow>)</mo>"), r"\1"),
)


def mathml(tex: str, display: bool) -> str:
    """MathML for the TeX ``tex``; ``display`` sets it as a block."""
    out = latex_to_mathml(tex.strip(), display="block" if display else "inline")
    for pattern, repl in FIXES:
        out = pattern.sub(repl, out)
    return out


class _DisplayInParagraph(InlineProcessor):
    def handleMatch(self, m, data):
        # NOTE: stashed as raw HTML, so no later inline pattern (emphasis, escapes) touches it.
        return self.md.htmlStash.store(mathml(m["tex"], display=True)), m.start(0), m.end(0)


class DisplayMathInParagraphs(Extension):
    def extendMarkdown(self, md):
        # NOTE: above arithmatex's inline math (189.9), below code spans (190), which keep their $$.
        md.inlinePatterns.register(_DisplayInParagraph(DISPLAY_IN_PARAGRAPH, md), "display-math-in-paragraph", 189.95)


def to_mathml(page_html: str) -> str:
    """``page_html`` with arithmatex's math replaced by MathML."""
    page_html = BLOCK.sub(lambda m: mathml(html.unescape(m["tex"]), display=True), page_html)
    return INLINE.sub(_inline, page_html)


def _inline(m: re.Match) -> str:
    math = mathml(html.unescape(m["tex"]), display=False)
    return f'<span class="math-nowrap">{math}{m["after"]}</span>' if m["after"] else math


@event_priority(100)  # NOTE: before mkdocstrings reads the extensions for its docstrings
def on_config(config):  # MkDocs hook
    config.markdown_extensions.append(DisplayMathInParagraphs())
    return config


def on_page_content(page_html: str, page, config, files) -> str:  # MkDocs hook
    return to_mathml(page_html)
