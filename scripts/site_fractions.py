"""MkDocs hook: a long exact fraction in a table cell shows as a decimal, the exact value on demand.

The results tables print exact rationals as they were computed (``6009154610.../7421...``, up to
134 characters), which makes a table several times wider than the column. On the site a fraction
longer than ``MAX_CHARS`` characters inside a table cell becomes its decimal to six significant
digits, marked up as ``<abbr class="exact" title="exact: N/D">`` so hovering (or a tap) shows
the exact value; the Markdown source and the results files keep the fraction.
"""

from __future__ import annotations

import re
from fractions import Fraction

#: Fractions up to this many characters stay as they are (``2202077/846300`` fits a cell).
MAX_CHARS = 14

CELL = re.compile(r"(<td\b[^>]*>)(.*?)(</td>)", re.S)
FRACTION = re.compile(r"(?<![\w./])(-?\d+/\d+)(?![\w/])")


def decimal(fraction: str) -> str:
    """``fraction`` as a decimal of six significant digits (``~`` marks a rounded value)."""
    value = Fraction(fraction)
    text = f"{float(value):.6g}"
    return text if Fraction(text) == value else f"~{text}"


def shorten(html: str, max_chars: int = MAX_CHARS) -> str:
    """``html`` with every long fraction inside a table cell shown as a decimal."""
    def one(m):
        frac = m.group(1)
        if len(frac) <= max_chars:
            return frac
        return f'<abbr class="exact" title="exact: {frac}">{decimal(frac)}</abbr>'

    return CELL.sub(lambda c: c.group(1) + FRACTION.sub(one, c.group(2)) + c.group(3), html)


def on_page_content(html, page, config, files):  # MkDocs hook
    return shorten(html)
