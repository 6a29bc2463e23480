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

and, for what a reader meets at 1280 px (the column scripts/screenshots.py measured in headless
Chromium: ``COLUMN_PX`` wide, ``CODE_COLUMN_CHARS`` characters of the code font), estimated from
the HTML alone, without a browser:

- a code line longer than ``CODE_COLUMN_CHARS`` characters (it runs past the right edge), or a
  comment line inside a continued shell command (a backslash, then ``# ...``: the command ends
  there);
- a table whose narrowest layout (every column as wide as its longest unbreakable word or code
  span, plus the cell padding) is wider than the column, inside a fold or not (a fold opens to
  the column's width; Material hides the scrollbar until the pointer is over the table);
- a page longer than its budget in 800 px screens (``BUDGETS``; folded ``<details>`` count
  their summary only);
- a PNG figure drawn more than 1 / ``MIN_FIGURE_SCALE`` times wider than the column, so the page
  shows it at under 60% of its drawn size and its labels shrink with it;
- a plain-text mention of the theory ("docs/theory.md section 2.2", "theory section 6.7") or an
  arXiv id outside a link;
- a numpy docstring section (Parameters, Returns, Raises...) rendered as a heading or a
  paragraph instead of mkdocstrings' section;
- a commit hash in the prose (development history belongs in the provenance files);
- a reST literal-block marker (``text::``) or a literal ``<autoref>`` tag left in the text;
- a placeholder for results that are not committed (what a recipe's table marker shows without its
  results file).

A site directory that does not exist, or holds no page, exits 2 with one line on stderr.
"""

from __future__ import annotations

import html as htmllib
import math
import re
import struct
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


# --- What a reader meets at 1280 px, estimated from the HTML ------------------------------------

#: The text column at a 1280 px window (docs/stylesheets/site.css), in px, as measured in headless
#: Chromium by scripts/screenshots.py ("column: 719 px, 92 characters of 7.8 px").
COLUMN_PX = 719
#: Code lines longer than this run past the column's right edge (92 fit; 4 kept as margin, and 88
#: is the line length the pages are written to).
CODE_COLUMN_CHARS = 88
#: One screen of page height, px.
SCREEN_PX = 800
#: A figure shown at less than this fraction of its drawn width has labels too small to read.
MIN_FIGURE_SCALE = 0.6

#: Page-length budgets in screens, by the page's path in the site (first match). Guides do a task:
#: about 8 screens, long evidence folded. None: no budget (the theory is explanation, the API
#: reference and the mutation report are reference).
BUDGETS = (("index.html", 8), ("guide/", 8), ("reference/cli/", 45))

#: Pages whose code blocks are not held to the column: the API reference's docstring examples
#: follow the package's source lines (up to 120 characters) and scroll; the notebooks' cells are
#: the notebooks' own code.
CODE_WIDTH_EXEMPT = ("reference/api/", "reference/entry-points/", "reference/decode/", "reference/certify/",
                     "reference/monte-carlo/", "reference/audit/", "reference/methods/", "reference/laws/",
                     "reference/records/", "notebooks/")

# Type metrics of the theme at 1280 px (Material, system fonts), px.
_TEXT_CHAR, _LINE = 7.6, 25.6            # body text, 16 px
_TABLE_CHAR, _TABLE_CODE_CHAR = 6.9, 6.7  # table text (12.8 px) and code in a table
_CELL_PAD, _ROW = 32, 44                  # a cell's left + right padding; a one-line row
_MIN_COL = 100                            # the theme's least column width (th min-width 5rem)
_CODE_LINE = 17.5                         # a line of a code block
_CHROME = 260                             # header, title margins and footer

#: Headings' heights with their margins.
_HEADING = {"h1": 90, "h2": 70, "h3": 52, "h4": 44, "h5": 40, "h6": 40}

#: The section titles of numpy docstrings.
NUMPY_SECTIONS = ("Parameters", "Other Parameters", "Returns", "Yields", "Receives", "Raises", "Warns",
                  "Attributes", "Examples", "Notes", "See Also", "References")
NUMPY_AS_TEXT = re.compile(r"<(h[1-6])\b[^>]*>\s*(" + "|".join(NUMPY_SECTIONS) + r")\s*(?:<a [^>]*>[^<]*</a>)?\s*</h[1-6]>"
                           r"|<(p)\b[^>]*>\s*(" + "|".join(NUMPY_SECTIONS) + r")\s*-{3,}")

#: A plain mention of the theory's sections, or an arXiv id.
THEORY_MENTION = re.compile(r"(?:docs/)?theory(?:\.md)?(?:</code>)?,?\s+(?:sections?|§)\s*\d+(?:\.\d+)?", re.I)
ARXIV = re.compile(r"arXiv[:\s]\s*\d{4}\.\d{4,5}", re.I)
#: Pages that may name commits: the mutation report's run table records the code each run mutated
#: (its provenance, as a results file's provenance does).
COMMIT_EXEMPT = ("mutation_report/",)
#: A commit hash: 7 to 40 hex digits with at least one digit and one letter, standing alone.
COMMIT = re.compile(r"(?<![\w./#=-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![\w/.-]*\w)")

LINK = re.compile(r"<a\b[^>]*>.*?</a>", re.S | re.I)
TAGS = re.compile(r"<[^>]+>")


class _Layout(HTMLParser):
    """The article's blocks, in order: what the width and height estimates read."""

    BLOCKS = {"p", "li", "dt", "dd", "h1", "h2", "h3", "h4", "h5", "h6", "summary", "figcaption"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.depth = 0            # inside <article>
        self.closed = 0           # inside a closed <details>: not laid out
        self.pre = None           # the open code block's text
        self.table = None         # the open table's rows, each a list of cells
        self.cell = None          # the open cell's pieces: (text, is code)
        self.code = 0
        self.text = None          # the open text block: [tag, characters]
        self.skip = 0             # inside a headerlink or a script/style
        self.highlight = False    # inside a source listing laid out as a table
        self.height = 0.0
        self.code_lines: list[str] = []
        self.tables: list[list[list[list[tuple[str, bool]]]]] = []
        self.images: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "article":
            self.depth += 1
            return
        if not self.depth:
            return
        if tag in ("script", "style") or (tag == "a" and "headerlink" in (attrs.get("class") or "")):
            self.skip += 1
        elif tag == "details":
            if self.closed or "open" not in attrs:
                self.closed += 1
        elif self.closed and tag not in ("summary", "table", "tr", "td", "th", "code"):
            return
        elif tag == "pre":
            self.pre = []
        elif tag == "code":
            self.code += 1
        elif tag == "table" and "highlighttable" in (attrs.get("class") or ""):
            self.skip += 1  # NOTE: source with line numbers (the API reference's folded source): code, not a table
            self.highlight = True
        elif tag == "table":
            self.table = []
        elif tag == "tr" and self.table is not None:
            self.table.append([])
        elif tag in ("td", "th") and self.table is not None and self.table:
            self.cell = []
            self.table[-1].append(self.cell)
        elif tag == "img":
            self.images.append(attrs.get("src") or "")
        elif tag == "math" and attrs.get("display") == "block":
            self.height += 56
        elif tag in self.BLOCKS and self.pre is None and self.table is None:
            self._close_text()
            self.text = [tag, 0]

    def handle_endtag(self, tag):
        if tag == "article":
            self.depth = max(0, self.depth - 1)
            return
        if not self.depth:
            return
        if tag == "table" and self.highlight:
            self.highlight = False
            self.skip = max(0, self.skip - 1)
        elif tag in ("script", "style") or (tag == "a" and self.skip):
            self.skip = max(0, self.skip - 1)
        elif tag == "details":
            if self.closed:
                self.closed -= 1
                if not self.closed:
                    self.height += 44  # the summary line
        elif tag == "pre" and self.pre is not None:
            lines = "".join(self.pre).rstrip("\n").split("\n")
            if not self.closed:
                self.code_lines += lines
                self.height += len(lines) * _CODE_LINE + 48
            self.pre = None
        elif tag == "code":
            self.code = max(0, self.code - 1)
        elif tag in ("td", "th"):
            self.cell = None
        elif tag == "table" and self.table is not None:
            if not self.closed:
                self.height += table_height(self.table)
            self.tables.append(self.table)  # NOTE: a folded table is as wide when it is opened
            self.table = None
        elif self.text and tag == self.text[0]:
            self._close_text()

    def handle_data(self, data):
        if not self.depth or self.skip:
            return
        if self.pre is not None:
            self.pre.append(data)
        elif self.cell is not None:
            self.cell.append((data, bool(self.code)))
        elif self.text is not None:
            self.text[1] += len(data)

    def _close_text(self):
        if self.text is None:
            return
        tag, chars = self.text
        self.text = None
        if self.closed and tag != "summary":
            return
        if tag in _HEADING:
            self.height += _HEADING[tag]
        elif chars and tag != "summary":
            lines = math.ceil(chars * _TEXT_CHAR / (COLUMN_PX - (24 if tag in ("li", "dd") else 0)))
            self.height += lines * _LINE + (8 if tag == "li" else 16)

    def close(self):
        super().close()
        self._close_text()


def _cell_widths(cell) -> tuple[float, float]:
    """A cell's narrowest width (its longest word or code span) and its one-line width, px."""
    narrow = wide = 0.0
    for text, code in cell:
        if code:  # code in a table does not wrap (docs/stylesheets/math.css)
            w = len(text) * _TABLE_CODE_CHAR
            narrow, wide = max(narrow, w), wide + w
        else:
            words = text.split()
            narrow = max([narrow, *(len(w) * _TABLE_CHAR for w in words)])
            wide += len(text) * _TABLE_CHAR
    return narrow, wide


def table_width(rows) -> float:
    """The narrowest width the table can be laid out in, px: each column as wide as its widest
    unbreakable piece, plus the cells' padding."""
    cols: dict[int, float] = {}
    for row in rows:
        for i, cell in enumerate(row):
            cols[i] = max(cols.get(i, 0.0), _cell_widths(cell)[0])
    return sum(max(w + _CELL_PAD, _MIN_COL) for w in cols.values())


def table_height(rows) -> float:
    """The table's height at the column's width, px: the columns share the width in proportion to
    their one-line widths (never below their narrowest), each row as tall as its tallest cell."""
    cols: dict[int, tuple[float, float]] = {}
    for row in rows:
        for i, cell in enumerate(row):
            n, w = _cell_widths(cell)
            a, b = cols.get(i, (0.0, 0.0))
            cols[i] = (max(a, n), max(b, w))
    if not cols:
        return 0.0
    room = max(COLUMN_PX - _CELL_PAD * len(cols), 1)
    total = sum(w for _, w in cols.values()) or 1
    alloc = {i: max(n, min(w, room * w / total)) for i, (n, w) in cols.items()}
    height = 24.0
    for row in rows:
        lines = max([1, *(math.ceil(_cell_widths(c)[1] / max(alloc[i], 1)) for i, c in enumerate(row))])
        height += _ROW + (lines - 1) * 20.5
    return height


def budget_of(name: str) -> float | None:
    """The page's length budget in screens (None: no budget)."""
    for prefix, screens in BUDGETS:
        if name == prefix or name.startswith(prefix):
            return screens
    return None


def image_size(path: Path) -> tuple[float, float] | None:
    """A PNG's or an SVG's drawn size in px (None for another format or an unreadable file)."""
    try:
        head = path.read_bytes()[:4096]
    except OSError:
        return None
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return struct.unpack(">II", head[16:24])
    box = re.search(rb"viewBox=['\"][\d.\-]+[ ,]+[\d.\-]+[ ,]+([\d.]+)[ ,]+([\d.]+)", head)
    return (float(box[1]), float(box[2])) if box else None


def layout_problems(name: str, html: str, size_of=None) -> tuple[list[str], float]:
    """The width, length and figure problems of one page, and its estimated length in screens.
    ``size_of(src)`` gives an image's drawn (width, height), or None when unknown."""
    layout = _Layout()
    layout.feed(html)
    layout.close()
    problems = []
    broken = [b for a, b in zip(layout.code_lines, layout.code_lines[1:])
              if a.rstrip().endswith("\\") and b.lstrip().startswith("#")]
    if broken:
        problems.append(f"{name}: a comment inside a continued shell command ({len(broken)}x; it ends the "
                        f"command there): {broken[0].strip()[:50]!r}")
    exempt = name.startswith(CODE_WIDTH_EXEMPT)
    wide = [line for line in layout.code_lines if len(line.rstrip()) > CODE_COLUMN_CHARS and not exempt]
    if wide:
        problems.append(f"{name}: {len(wide)} code line(s) wider than the column ({CODE_COLUMN_CHARS} characters), "
                        f"first ({len(wide[0].rstrip())}): {wide[0].strip()[:60]!r}")
    for rows in layout.tables:
        width = table_width(rows)
        if width > COLUMN_PX:
            head = " | ".join("".join(t for t, _ in c).strip() for c in rows[0])[:50] if rows else ""
            problems.append(f"{name}: a table wider than the column, folded or not ({width:.0f} px > {COLUMN_PX} px): "
                            f"{head!r}")
    height = layout.height + _CHROME
    for src in layout.images:
        size = size_of(src) if size_of else None
        if size is None:
            height += 400
            continue
        w, h = size
        scale = min(1.0, COLUMN_PX / w)
        height += h * scale + 24
        if src.lower().endswith(".png") and scale < MIN_FIGURE_SCALE:
            problems.append(f"{name}: figure {src} shown at {scale:.0%} of its drawn width ({w:.0f} px drawn, "
                            f"{COLUMN_PX} px column; at least {MIN_FIGURE_SCALE:.0%})")
    screens = height / SCREEN_PX
    budget = budget_of(name)
    if budget is not None and screens > budget:
        problems.append(f"{name}: about {screens:.1f} screens at 1280 px, over its budget of {budget} "
                        "(fold long evidence into <details>)")
    return problems, screens


#: What a results table left unrendered shows (simulations/recipes.py): a page that states results
#: must show them, not this.
PLACEHOLDER = re.compile(r"results are not committed|results not committed", re.I)


def prose_problems(name: str, html: str) -> list[str]:
    """Unlinked theory mentions and arXiv ids, numpy sections rendered as text, commit hashes,
    placeholders for results that are not committed."""
    article = re.search(r"<article\b.*?</article>", html, re.S)
    body = CODE_BLOCKS.sub("", article.group(0) if article else html)
    unlinked = LINK.sub("", body)
    problems = []
    for pattern, what in ((THEORY_MENTION, "a theory mention"), (ARXIV, "an arXiv id")):
        found = [htmllib.unescape(TAGS.sub("", m.group(0))) for m in pattern.finditer(unlinked)]
        if found:
            problems.append(f"{name}: {what} that is not a link ({len(found)}x), first: {found[0]!r}")
    sections = [m.group(2) or m.group(4) for m in NUMPY_AS_TEXT.finditer(body)]
    if sections:
        problems.append(f"{name}: a numpy docstring section rendered as text, not as a section "
                        f"({len(sections)}x): {', '.join(dict.fromkeys(sections))}")
    stray = re.findall(r"\S::(?=\s|$)", htmllib.unescape(TAGS.sub("", INLINE_CODE.sub("", body))))
    if stray:
        problems.append(f"{name}: a reST '::' left in the text ({len(stray)}x)")
    if "&lt;autoref" in (article.group(0) if article else html):
        problems.append(f"{name}: a literal <autoref> tag in the text (a cross-reference inside a code block)")
    text = htmllib.unescape(TAGS.sub(" ", body))
    hashes = [] if name.startswith(COMMIT_EXEMPT) else [m.group(0) for m in COMMIT.finditer(text)]
    if hashes:
        problems.append(f"{name}: a commit hash in the prose ({len(hashes)}x), first: {hashes[0]!r} "
                        "(history belongs in the provenance)")
    held = PLACEHOLDER.findall(text)
    if held:
        problems.append(f"{name}: a placeholder for results that are not committed ({len(held)}x): commit the "
                        "results the page states, or take the claim and its table out")
    return problems


def check_page(name: str, html: str, size_of=None) -> list[str]:
    """The problems of one built page (``name`` labels them; ``size_of(src)`` gives an image's
    drawn size, see :func:`layout_problems`)."""
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
    problems += prose_problems(name, html)
    problems += layout_problems(name, html, size_of)[0]
    return problems


def _counts(items) -> dict:
    out: dict = {}
    for x in items:
        out[x] = out.get(x, 0) + 1
    return out


def _context(text: str, m: re.Match) -> str:
    return repr(re.sub(r"\s+", " ", text[max(0, m.start() - 40):m.end() + 40]))


def _local_image(site: Path, page: Path, src: str) -> tuple[float, float] | None:
    if REMOTE.match(src) or src.startswith("data:"):
        return None
    path = (page.parent / src.split("#")[0].split("?")[0]).resolve()
    return image_size(path) if path.is_relative_to(site.resolve()) else None


def page_screens(site: Path) -> dict[str, float]:
    """Each page's estimated length in 800 px screens at 1280 px (the budget check's estimate)."""
    out = {}
    for page in sorted(site.rglob("*.html")):
        html = page.read_text(encoding="utf-8", errors="replace")
        name = page.relative_to(site).as_posix()
        out[name] = layout_problems(name, html, lambda src, page=page: _local_image(site, page, src))[1]
    return out


def check_site(site: Path) -> tuple[list[str], dict]:
    """Every page's problems, and counts of what was checked."""
    problems, counts = [], {"pages": 0, "notebook pages": 0, "notebook figures": 0, "formulas": 0}
    for page in sorted(site.rglob("*.html")):
        html = page.read_text(encoding="utf-8", errors="replace")
        name = page.relative_to(site).as_posix()
        problems += check_page(name, html, size_of=lambda src, page=page: _local_image(site, page, src))
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
