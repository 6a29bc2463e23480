"""MkDocs hook: mentions of the theory's sections and arXiv ids become links on every page.

The code and the pages cite the semantics as "docs/theory.md section 2.2" (docstrings print in a
terminal, where a link is noise); on the site such a mention links to that section of the theory
page, and "arXiv 2403.10444" (or "arXiv:2403.10444") to the paper's abstract page. Runs on each
page's HTML, after mkdocstrings has rendered the API reference, so docstrings get the links too.
Text inside links, code blocks, scripts and styles is left alone; a section number the theory
does not have stays plain text (scripts/check_site.py reports it).
"""

from __future__ import annotations

import re
from pathlib import Path

from markdown.extensions.toc import slugify
from mkdocs.utils import get_relative_url

THEORY = "theory.md"

#: A theory heading: "## 2. Tree construction", "### 2.2 RheoSampling".
HEADING = re.compile(r"^#{2,4}\s+(\d+(?:\.\d+)*)\.?\s+(.+?)\s*(?:\{[^}]*\})?\s*$", re.M)

#: A mention, in text or with the file name as code: "docs/theory.md section 2.2",
#: "<code>docs/theory.md</code> (section 2.2", "theory section 6.7", "docs/theory.md sections 2.1".
MENTION = re.compile(r"(?P<name>(?:<code>)?(?:docs/)?theory(?:\.md)?(?:</code>)?)(?P<sep>,?\s+\(?)"
                     r"(?P<word>sections?|§)\s*(?P<num>\d+(?:\.\d+)?)", re.I)
#: On the theory page itself: "(section 2.2)", "sections 5.3".
LOCAL = re.compile(r"\b(?P<word>[Ss]ections?)\s+(?P<num>\d+(?:\.\d+)?)\b")
ARXIV = re.compile(r"\barXiv(?P<sep>[:\s]\s*)(?P<id>\d{4}\.\d{4,5})(?:v\d+)?\b")

#: Regions never rewritten: links, code blocks, scripts, styles, and the tags themselves.
PROTECTED = re.compile(r"(<a\b.*?</a>|<pre\b.*?</pre>|<script\b.*?</script>|<style\b.*?</style>|"
                       r"<h[1-6]\b.*?</h[1-6]>)", re.S | re.I)

_anchors: dict[str, str] = {}


def anchors(theory_md: str) -> dict[str, str]:
    """Section number -> the heading's id on the theory page (as the toc extension makes it)."""
    out = {}
    for m in HEADING.finditer(theory_md):
        text = re.sub(r"[`*]|\$[^$]*\$", "", f"{m[1]} {m[2]}")
        out[m[1].rstrip(".")] = slugify(text, "-")
    return out


def link(html: str, page_url: str, theory_url: str, table: dict[str, str]) -> str:
    """``html`` with its theory mentions and arXiv ids linked (``page_url`` is the page's own URL)."""
    here = page_url == theory_url
    base = "" if here else get_relative_url(theory_url, page_url)

    def theory(m):
        slug = table.get(m["num"])
        if slug is None:
            return m.group(0)
        return f'<a href="{base}#{slug}">{m.group(0)}</a>'

    def local(m):
        slug = table.get(m["num"])
        return f'<a href="#{slug}">{m.group(0)}</a>' if slug else m.group(0)

    def arxiv(m):
        return f'<a href="https://arxiv.org/abs/{m["id"]}">{m.group(0)}</a>'

    parts = PROTECTED.split(html)
    for i in range(0, len(parts), 2):  # the unprotected stretches
        text = MENTION.sub(theory, parts[i])
        if here:
            text = _sub_outside_links(LOCAL, local, text)
        parts[i] = _sub_outside_links(ARXIV, arxiv, text)
    return "".join(parts)


def _sub_outside_links(pattern, repl, text: str) -> str:
    pieces = re.split(r"(<a\b.*?</a>|<[^>]+>)", text, flags=re.S)
    for i in range(0, len(pieces), 2):
        pieces[i] = pattern.sub(repl, pieces[i])
    return "".join(pieces)


def on_config(config):  # MkDocs hook
    path = Path(config["docs_dir"]) / THEORY
    _anchors.clear()
    if path.is_file():
        _anchors.update(anchors(path.read_text(encoding="utf-8")))
    return config


def on_page_content(html, page, config, files):  # MkDocs hook
    theory = files.get_file_from_path(THEORY)
    if theory is None or not _anchors:
        return html
    return link(html, page.url, theory.url, _anchors)
