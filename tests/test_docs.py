"""The README and the documentation site's sources (mkdocs.yml; the strict build itself runs in CI).

Cheap checks that keep the pages honest between builds: the README stays short and its links
resolve, the CLI reference is generated for every subcommand, and every module has its API entry.
"""

from __future__ import annotations

import importlib.util
import pkgutil
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def broken_links(doc: Path) -> list[str]:
    """Relative Markdown links of ``doc`` whose target is not in the repository."""
    targets = [t for t in LINK.findall(doc.read_text()) if "://" not in t and not t.startswith("mailto:")]
    return [t for t in targets if not (doc.parent / t).exists()]


def test_readme_is_short_and_keeps_the_two_setup_commands():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 200
    assert "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && rheo certify" in text
    assert 'pip install -e ".[dev]" && python -m pytest -q' in text
    assert "clon" in text.split("## Set up")[1][:200]  # where the code comes from


def test_links_of_the_readme_and_the_pages_resolve():
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    broken = {str(d.relative_to(ROOT)): b for d in docs if (b := broken_links(d))}
    assert not broken, broken


def test_no_page_holds_a_control_character():
    # A TeX command written in a non-raw Python string loses its backslash to an escape (``\\bigl``
    # becomes a backspace and ``igl``, ``\\text`` a tab and ``ext``): the page then shows broken math.
    bad = re.compile("[\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f]|\\t(?:ext|imes|au|heta|frac)\\b")
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    hits = [f"{doc.relative_to(ROOT)}:{i}" for doc in pages
            for i, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1) if bad.search(line)]
    assert hits == []


def test_a_broken_link_is_caught(tmp_path):
    (tmp_path / "there.md").write_text("x")
    page = tmp_path / "page.md"
    page.write_text("[ok](there.md) [ok too](there.md#a) [web](https://example.org) [gone](missing.md)")
    assert broken_links(page) == ["missing.md"]


def test_the_cli_reference_covers_every_subcommand():
    from rheotheory.cli import COMMANDS, build_parser

    cli_reference = _load("cli_reference", ROOT / "scripts" / "cli_reference.py")
    text = cli_reference.render(run_examples=False)
    names = list(cli_reference._subparsers(build_parser()))
    assert len(names) == len(COMMANDS)
    for name in names:
        assert f"## `rheo {name}`" in text and f"usage: rheo {name}" in text, name
    page = (ROOT / "docs" / "reference" / "cli.md").read_text()
    assert cli_reference.MARKER in page and "usage:" not in page  # generated, never a hand-written copy
    in_code, too_wide = False, []
    for line in text.splitlines():
        in_code = (not in_code) if line.startswith("```") else in_code
        if in_code and len(line) > int(cli_reference.WIDTH):
            too_wide.append(line)
    assert not too_wide, too_wide  # the usage and examples fit the page's code column


def test_a_choice_list_argparse_cannot_wrap_is_broken_after_commas():
    cli_reference = _load("cli_reference", ROOT / "scripts" / "cli_reference.py")
    line = "  [--verifier {" + ",".join(f"rule{i}" for i in range(12)) + "}]"
    lines = cli_reference.fit(line, width=40).split("\n")
    assert [len(x) <= 40 for x in lines] == [True] * len(lines) and len(lines) == 4
    assert "".join(x.strip() for x in lines) == line.strip()
    assert all(x.startswith(" " * line.index("{")) and x[line.index("{") + 1] != " " for x in lines[1:])
    assert cli_reference.fit("short {a,b}", width=40) == "short {a,b}"


def test_every_module_has_its_api_entry():
    # The API reference is one page per area (docs/reference/*.md); each module on one of them.
    api = "\n".join(p.read_text() for p in sorted((ROOT / "docs" / "reference").glob("*.md")))
    listed = re.findall(r"^::: (\S+)$", api, re.M)
    assert len(listed) == len(set(listed)), "a module listed twice"
    listed = set(listed)
    modules = {m.name for m in pkgutil.walk_packages([str(ROOT / "rheotheory")], "rheotheory.")
               if not m.name.startswith("rheotheory.cli.")}
    assert not modules - listed, sorted(modules - listed)
    assert not listed - modules - {"rheotheory", "rheotheory.cli"}, sorted(listed - modules)


def test_doctest_examples_become_code_blocks():
    pytest.importorskip("griffe")  # the docs extra
    fences = _load("griffe_doctests", ROOT / "scripts" / "griffe_doctests.py")
    text = "Intro.\n\n>>> f([0, 1])\n[1, 2]\n\nAfter."
    assert fences.fence_examples(text) == "Intro.\n\n```pycon\n>>> f([0, 1])\n[1, 2]\n```\n\nAfter."


# --- The built site: scripts/check_site.py and the build-time hooks it checks -------------------

NOTEBOOK_PAGE = ('<html><head></head><body><div class="jupyter-wrapper"><div class="jp-Cell">'
                 '<pre>plt.show()</pre>{output}</div></div></body></html>')
FIGURE = '<div class="jp-OutputArea-output"><img src="data:image/png;base64,iVBORw0KGgo="></div>'


def _check_page(name, html):
    return _load("check_site", ROOT / "scripts" / "check_site.py").check_page(name, html)


def test_the_site_check_passes_a_clean_page():
    page = ('<html><head><link rel="stylesheet" href="../assets/main.css"><script src="../search.js"></script>'
            '</head><body><p>See <a href="https://example.org">the paper</a> and <a class="autorefs" '
            'href="#x"><code>ot()</code></a>: <math display="block"><mi>p</mi></math>, at $5 a run.</p>'
            '<pre><code>:func:`example` in a code block; $$ x $$</code></pre></body></html>')
    assert _check_page("page.html", page) == []
    assert _check_page("nb.html", NOTEBOOK_PAGE.format(output=FIGURE)) == []


def test_the_site_check_fails_a_notebook_page_without_a_figure():
    problems = _check_page("notebooks/01/index.html", NOTEBOOK_PAGE.format(output="<pre>drawn, not shown</pre>"))
    assert problems == ["notebooks/01/index.html: a notebook page without a figure (no <img> in its cells)"]


def test_the_site_check_fails_a_raw_role_or_directive():
    page = ("<p>Uses :func:<code>normalise</code>, :class:<code>Candidate</code>, :func:<code>rank</code> and "
            ":py:meth:<code>at</code>.</p><p>.. math::</p><p>:math:`p(x)`</p>")
    assert _check_page("api.html", page) == [
        "api.html: raw Sphinx role ':func:' in the text (2x)", "api.html: raw Sphinx role ':class:' in the text (1x)",
        "api.html: raw Sphinx role ':py:meth:' in the text (1x)", "api.html: raw Sphinx role ':math:' in the text (1x)",
        "api.html: raw reST directive '.. math::' in the text (1x)"]


def test_the_site_check_fails_a_stray_dollar_or_tex_left_over():
    stray = '<p>The figure of merit is $<math><mi>&#x3C4;</mi></math>$, the mean.</p>'
    assert [p.split(" (")[0] for p in _check_page("t.html", stray)] == ["t.html: a stray $ beside math"]
    left = '<p>with <span class="arithmatex">\\(p\\)</span> the target</p>'
    assert [p.split(" (")[0] for p in _check_page("t.html", left)] == ["t.html: math left as TeX"]


@pytest.mark.parametrize("tag", [
    '<script src="https://unpkg.com/mathjax@3/es5/tex-mml-chtml.js"></script>',
    '<link rel="stylesheet" href="https://fonts.googleapis.com/css?family=Roboto">',
    '<link rel="preconnect" href="https://fonts.gstatic.com" crossorigin>',
    '<img src="//cdn.example.org/plot.png">',
    '<img srcset="a.png 1x, https://cdn.example.org/b.png 2x">',
    "<style>@font-face { src: url('https://fonts.example.org/x.woff2') }</style>",
    '<div style="background: url(https://example.org/bg.png)"></div>',
    '<script type="module">const m = (await import("https://cdn.example.org/mermaid.mjs")).default;</script>',
])
def test_the_site_check_fails_a_page_that_loads_from_the_network(tag):
    problems = _check_page("p.html", f"<html><head>{tag}</head><body><p>text</p></body></html>")
    assert len(problems) == 1 and "loads from the network" in problems[0], problems


def test_the_site_check_command(tmp_path, capsys):
    check_site = _load("check_site", ROOT / "scripts" / "check_site.py")
    assert check_site.main([str(tmp_path / "missing")]) == 2
    assert "not a built site" in capsys.readouterr().err
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "index.html").write_text("<p>Home</p>")
    (tmp_path / "notebooks" / "index.html").write_text(NOTEBOOK_PAGE.format(output=""))
    assert check_site.main([str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "notebooks/index.html: a notebook page without a figure" in out and "1 problem(s)" in out
    (tmp_path / "notebooks" / "index.html").write_text(NOTEBOOK_PAGE.format(output=FIGURE))
    assert check_site.main([str(tmp_path)]) == 0
    assert "2 pages, 1 notebook pages, 1 notebook figures, 0 formulas: ok" in capsys.readouterr().out


def test_sphinx_roles_become_references_and_math():
    griffe = pytest.importorskip("griffe")  # the docs extra
    roles = _load("griffe_roles", ROOT / "scripts" / "griffe_roles.py")
    pkg = griffe.load("rheotheory", search_paths=[str(ROOT)], resolve_aliases=False)
    obj = pkg["verify.rules"]
    text = ("Uses :class:`Candidate` (imported here), :func:`~rheotheory.verify.optimum.ot_value`,\n"
            ":meth:`a title <rheotheory.trees.tree.Tree.kept_nodes>`, :mod:`rheotheory.laws`, :class:`numpy.ndarray`,\n"
            ":math:`\\min(1, p/q)` and :ref:`a-label`; ``:func:`kept``` is code.\n"
            "# [n, d] a shape comment wrapped to the line's start\n\n"
            ".. math::\n\n    a = b\n    + c\n\nAfter.\n\n```pycon\n>>> f(':func:`x`')\n```")
    out = roles.convert(obj, text)
    assert '<autoref identifier="rheotheory.trees.tree.Candidate" optional>`Candidate`</autoref>' in out
    assert '<autoref identifier="rheotheory.verify.optimum.ot_value" optional>`ot_value()`</autoref>' in out
    assert 'identifier="rheotheory.trees.tree.Tree.kept_nodes" optional>`a title`</autoref>' in out
    assert '<autoref identifier="rheotheory.laws" optional>`rheotheory.laws`</autoref>' in out
    assert '<autoref identifier="numpy.ndarray" optional>`numpy.ndarray`</autoref>' in out  # outside: code
    assert "$\\min(1, p/q)$ and `a-label`; ``:func:`kept``` is code." in out
    assert "\n\\# [n, d] a shape comment" in out
    assert "\n\n$$\na = b\n+ c\n$$\n\nAfter." in out
    assert "```pycon\n>>> f(':func:`x`')\n```" in out  # a fenced example is left alone
    assert not re.search(r":(func|class|meth|mod|math|ref):`", out.replace("``:func:`kept```", "").replace(
        "f(':func:`x`')", ""))


def test_display_math_inside_a_paragraph_renders_as_display_math():
    markdown = pytest.importorskip("markdown")
    pytest.importorskip("pymdownx")
    pytest.importorskip("latex2mathml")  # the docs extra
    site_math = _load("site_math", ROOT / "scripts" / "site_math.py")
    md = markdown.Markdown(extensions=["pymdownx.arithmatex", site_math.DisplayMathInParagraphs()],
                           extension_configs={"pymdownx.arithmatex": {"generic": True}})
    html = site_math.to_mathml(md.convert(
        "The figure of merit is\n$$\\tau = \\mathbb{E}\\,|Z|,$$\nthe mean, with $s \\sim q$.\n\n"
        "$$\na = b\n$$\n\nCode keeps `$$x$$` and `$y$`."))
    assert html.count('<math xmlns="http://www.w3.org/1998/Math/MathML" display="block">') == 2
    assert html.count('display="inline"') == 1
    assert "$" not in html.replace("<code>$$x$$</code>", "").replace("<code>$y$</code>", "")
    assert '<span class="math-nowrap"><math' in html and "</math>.</span>" in html  # "q." stays on its line
    assert "<mo>&#x0223C;</mo>" in html and 'lspace="0" rspace="0">&#x0007C;</mo>' in html  # the FIXES
    assert _check_page("p.html", html) == []


def test_figures_outside_docs_are_served_from_where_they_are_committed(tmp_path):
    pytest.importorskip("mkdocs")
    figures = _load("site_figures", ROOT / "scripts" / "site_figures.py")
    docs = ROOT / "docs"
    page = docs / "guide" / "sweeps.md"
    text = ("![v50](../../simulations/results/sweep_v50.png) ![web](https://example.org/a.png) "
            "![missing](../../simulations/results/no_such_plot.png) ![inside](../stylesheets/math.css)")
    out, found = figures.rewrite(text, page, docs)
    assert found == [ROOT / "simulations" / "results" / "sweep_v50.png"]
    assert out.startswith("![v50](../figures/simulations/results/sweep_v50.png) ![web](https://example.org/a.png)")
    assert "![missing](../../simulations/results/no_such_plot.png)" in out  # left for the strict build to report
    assert figures.rewrite("![h](../simulations/results/sweep_adaptive.png)", docs / "index.md", docs)[0] == \
        "![h](figures/simulations/results/sweep_adaptive.png)"


def test_a_notebook_page_without_a_diagram_loses_the_cdn_mermaid_loader():
    offline = _load("site_offline", ROOT / "scripts" / "site_offline.py")
    loader = ('<script type="module">\n  document.addEventListener("DOMContentLoaded", async () => {\n'
              '    const diagrams = document.querySelectorAll(".jp-Mermaid > pre.mermaid");\n'
              '    const mermaid = (await import("https://cdn.example.org/mermaid.esm.min.mjs")).default;\n'
              '  });\n</script>')
    page = NOTEBOOK_PAGE.format(output=FIGURE).replace("<head></head>", f"<head>{loader}<script>x()</script></head>")
    assert _check_page("nb.html", page) != []  # the loader names a CDN
    cleaned = offline.on_post_page(page, None, None)
    assert "mermaid" not in cleaned and "<script>x()</script>" in cleaned and _check_page("nb.html", cleaned) == []
    with_diagram = page.replace(FIGURE, FIGURE + '<div class="jp-Mermaid"><pre class="mermaid">graph TD</pre></div>')
    assert offline.on_post_page(with_diagram, None, None) == with_diagram  # used: kept, and the check fails it
