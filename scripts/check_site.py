"""Check the built documentation site: what a reader meets on each page, after ``mkdocs build``.

    python scripts/check_site.py site        # CI's docs tier runs it after the strict build

Fails (exit 1, one line per problem, ``PAGE: problem``) on

- a notebook page without a figure (an ``<img>`` in its cells: a figure drawn but not displayed
  leaves none);
- a raw Sphinx role or directive in the text (``:func:`x```, ``:math:``..., ``.. math::``): markup
  the API reference should have turned into a link or math;
- math left as TeX, or a stray ``$`` beside rendered math (``$`` + formula + ``$`` is what an
  unrecognised ``$$...$$`` becomes);
- a page that loads anything from the network: a script, stylesheet, font, image, frame or media
  element whose ``src``/``href``/``srcset``/``data`` is an http(s) URL, a CSS ``url()`` or
  ``@import`` of one, or a script's ``import()`` of one. Plain ``<a href>`` links are fine.

A site directory that does not exist, or holds no page, exits 2 with one line on stderr.
"""

from __future__ import annotations

import re
import sys
from html.parser import HTMLParser
from pathlib import Path

#: Sphinx's roles and directives, as they read when printed raw (the backticks became <code>).
ROLES = ("func", "class", "meth", "mod", "data", "attr", "exc", "obj", "const", "type", "math", "ref", "doc",
         "term", "envvar", "file", "program", "option", "any")
RAW_ROLE = re.compile(r":(?:py:)?(?:" + "|".join(ROLES) + r"):(?:<code|`)")
RAW_DIRECTIVE = re.compile(r"(?m)(?:^|>)\s*\.\. [a-z][a-z-]*::")

#: Math that was not rendered, or a $ beside rendered math.
STRAY_DOLLAR = re.compile(r'\$\s*<(?:math\b|span class="arithmatex")|(?:</math>|\\\)</span>)\s*\$')
TEX_LEFT = re.compile(r'class="arithmatex"|\$\$|\\\(.+?\\\)')

#: A remote URL (http, https or protocol-relative).
REMOTE = re.compile(r"^\s*(?:https?:)?//", re.I)
CSS_REMOTE = re.compile(r"""url\(\s*['"]?\s*(?:https?:)?//|@import\s+(?:url\()?\s*['"]?\s*(?:https?:)?//""", re.I)
JS_REMOTE = re.compile(r"""\bimport\s*\(\s*['"`](?:https?:)?//|importScripts\s*\(\s*['"`](?:https?:)?//""")

#: Elements whose URL attributes the browser fetches by itself.
LOADERS = {"script": ("src",), "img": ("src", "srcset"), "iframe": ("src",), "frame": ("src",),
           "embed": ("src",), "object": ("data",), "source": ("src", "srcset"), "track": ("src",),
           "video": ("src", "poster"), "audio": ("src",), "input": ("src",), "image": ("href", "xlink:href"),
           "use": ("href", "xlink:href")}
#: ``<link rel=...>`` values that fetch (or open a connection to) their ``href``.
LOADING_RELS = {"stylesheet", "preload", "prefetch", "modulepreload", "icon", "shortcut", "apple-touch-icon",
                "preconnect", "dns-prefetch", "manifest", "mask-icon"}

#: Blocks whose text is code, not prose (a role or a $ there is an example).
CODE_BLOCKS = re.compile(r"<(pre|script|style|textarea)\b.*?</\1>", re.S | re.I)
INLINE_CODE = re.compile(r"<code\b[^>]*>.*?</code>", re.S | re.I)


class _Scan(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.remote: list[str] = []
        self.images = 0  # <img> elements inside notebook cells
        self.notebook = False
        self._in = []  # open script/style elements

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "jupyter-wrapper" in (attrs.get("class") or "").split():
            self.notebook = True
        if tag == "img" and self.notebook and attrs.get("src"):
            self.images += 1
        for name in LOADERS.get(tag, ()):
            value = attrs.get(name) or ""
            urls = [u.strip().split()[0] for u in value.split(",") if u.strip()] if name == "srcset" else [value]
            self.remote += [f"<{tag} {name}={u}>" for u in urls if REMOTE.match(u)]
        if tag == "link" and LOADING_RELS & set((attrs.get("rel") or "").lower().split()) \
                and REMOTE.match(attrs.get("href") or ""):
            self.remote.append(f"<link rel={attrs.get('rel')} href={attrs.get('href')}>")
        if CSS_REMOTE.search(attrs.get("style") or ""):
            self.remote.append(f"<{tag} style=...url(remote)>")
        if tag in ("script", "style"):
            self._in.append(tag)

    def handle_endtag(self, tag):
        if self._in and self._in[-1] == tag:
            self._in.pop()

    def handle_data(self, data):
        where = self._in[-1] if self._in else None
        if where == "style" and CSS_REMOTE.search(data):
            self.remote.append(f"<style>: {CSS_REMOTE.search(data).group(0)}...")
        if where == "script" and JS_REMOTE.search(data):
            self.remote.append(f"<script>: {JS_REMOTE.search(data).group(0)}...")


def check_page(name: str, html: str) -> list[str]:
    """The problems of one built page (``name`` labels them)."""
    scan = _Scan()
    scan.feed(html)
    scan.close()
    problems = [f"{name}: loads from the network: {r}" for r in dict.fromkeys(scan.remote)]
    if scan.notebook and scan.images == 0:
        problems.append(f"{name}: a notebook page without a figure (no <img> in its cells)")
    prose = CODE_BLOCKS.sub("", html)
    roles = _counts(m.group(0).split("<")[0].rstrip("`") for m in RAW_ROLE.finditer(prose))
    problems += [f"{name}: raw Sphinx role {r!r} in the text ({n}x)" for r, n in roles.items()]
    directives = _counts(m.group(0).strip(" >\n") for m in RAW_DIRECTIVE.finditer(prose))
    problems += [f"{name}: raw reST directive {d!r} in the text ({n}x)" for d, n in directives.items()]
    text = INLINE_CODE.sub("", prose)
    for pattern, what in ((STRAY_DOLLAR, "a stray $ beside math"), (TEX_LEFT, "math left as TeX")):
        found = list(pattern.finditer(text))
        if found:
            problems.append(f"{name}: {what} ({len(found)}x), first: {_context(text, found[0])}")
    return problems


def _counts(items) -> dict:
    out: dict = {}
    for x in items:
        out[x] = out.get(x, 0) + 1
    return out


def _context(text: str, m: re.Match) -> str:
    return repr(re.sub(r"\s+", " ", text[max(0, m.start() - 40):m.end() + 40]))


def check_site(site: Path) -> tuple[list[str], dict]:
    """Every page's problems, and counts of what was checked."""
    problems, counts = [], {"pages": 0, "notebook pages": 0, "notebook figures": 0, "formulas": 0}
    for page in sorted(site.rglob("*.html")):
        html = page.read_text(encoding="utf-8", errors="replace")
        name = page.relative_to(site).as_posix()
        problems += check_page(name, html)
        scan = _Scan()
        scan.feed(html)
        counts["pages"] += 1
        counts["notebook pages"] += scan.notebook
        counts["notebook figures"] += scan.images
        counts["formulas"] += len(re.findall(r"<math\b", html))
    return problems, counts


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: check_site.py SITE_DIR", file=sys.stderr)
        return 2
    site = Path(args[0])
    if not site.is_dir() or not any(site.rglob("*.html")):
        print(f"check_site.py: {site} is not a built site (no HTML pages); run mkdocs build first", file=sys.stderr)
        return 2
    problems, counts = check_site(site)
    for p in problems:
        print(p)
    summary = ", ".join(f"{v} {k}" for k, v in counts.items())
    print(f"check_site.py: {summary}: {len(problems)} problem(s)" if problems else f"check_site.py: {summary}: ok")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
