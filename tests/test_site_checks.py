"""The documentation site's reader-facing checks (scripts/check_site.py, CI's docs tier), each shown
failing on a planted defect and passing the fixed page; the build-time hooks they rely on.

No browser: the checks estimate widths and lengths from the HTML (character counts against the
column's capacity, measured once in headless Chromium by scripts/screenshots.py).
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


check_site = _load("check_site")


def page(body: str) -> str:
    """A built page: the theme's chrome around an article."""
    return (f'<html><head></head><body><header>nav</header><article class="md-content__inner md-typeset">'
            f"<h1>A guide</h1>{body}</article><footer>f</footer></body></html>")


def problems(name, body, size_of=None):
    return check_site.check_page(name, page(body), size_of=size_of)


def test_a_clean_guide_page_passes():
    body = ("<p>Run it:</p><pre><code>" + "x" * check_site.CODE_COLUMN_CHARS + "\n</code></pre>"
            "<table><tr><th>method</th><th>tau</th></tr><tr><td><code>rheo</code></td><td>3.4</td></tr></table>"
            '<p>See <a href="../../theory/#22-rheosampling">docs/theory.md section 2.2</a> and '
            '<a href="https://arxiv.org/abs/2403.10444">arXiv 2403.10444</a>; seed 1234567, a facade.</p>'
            '<img src="fig.png">')
    assert problems("guide/x/index.html", body, size_of=lambda src: (1144, 858)) == []


def test_a_code_line_wider_than_the_column_fails():
    line = "rheo sweep --temperatures 0.5,1 --mismatch high --methods eagle,rheo --steps 40 --workers 1"
    assert len(line) > check_site.CODE_COLUMN_CHARS
    found = problems("guide/x/index.html", f"<pre><code>{line}\nshort\n</code></pre>")
    assert len(found) == 1 and "1 code line(s) wider than the column (88 characters)" in found[0], found
    wrapped = line.replace(" --steps", " \\\n    --steps")
    assert problems("guide/x/index.html", f"<pre><code>{wrapped}\n</code></pre>") == []
    assert problems("reference/methods/index.html", f"<pre><code>{line}</code></pre>") == []  # exempt


def test_a_table_wider_than_the_column_fails():
    # A 40-digit exact fraction in a table cell: one unbreakable piece of about 280 px, beside six
    # columns of the theme's least width (100 px).
    fraction = "1234567890123456789012345678901234567890/9876543210987654321"
    cells = "".join(f"<td>{x}</td>" for x in ("eagle", "0.5", "3.1", "[2.9, 3.3]", "0.80", f"<code>{fraction}</code>"))
    head = "".join(f"<th>{x}</th>" for x in ("method", "T", "tau", "95% CI", "acc", "exact tau"))
    found = problems("guide/x/index.html", f"<table><tr>{head}</tr><tr>{cells}</tr></table>")
    assert len(found) == 1 and "a table wider than the column" in found[0], found
    decimal = cells.replace(f"<code>{fraction}</code>", f'<abbr class="exact" title="{fraction}">2.6020</abbr>')
    assert problems("guide/x/index.html", f"<table><tr>{head}</tr><tr>{decimal}</tr></table>") == []


def test_a_page_over_its_budget_fails_and_folded_evidence_does_not_count():
    rows = "".join(f"<tr><td>row {i}</td><td>{i / 7:.4f}</td></tr>" for i in range(250))
    table = f"<table><tr><th>setting</th><th>tau</th></tr>{rows}</table>"
    found = problems("guide/audit/index.html", f"<p>The task.</p>{table}")
    assert len(found) == 1 and "over its budget of 8" in found[0], found
    folded = f'<details><summary>All 250 settings</summary>{table}</details>'
    assert problems("guide/audit/index.html", f"<p>The task.</p>{folded}") == []
    assert problems("theory/index.html", f"<p>The semantics.</p>{table}") == []  # no budget: explanation
    screens = check_site.layout_problems("guide/a/index.html", page(f"<p>x</p>{table}"))[1]
    assert 12 < screens < 20, screens  # 250 rows of about 44 px


def test_a_figure_scaled_below_sixty_percent_fails():
    found = problems("guide/tv/index.html", '<img src="optimum_table.png">', size_of=lambda src: (2160, 576))
    assert len(found) == 1 and "shown at 33% of its drawn width" in found[0], found
    assert problems("guide/tv/index.html", '<img src="optimum.png">', size_of=lambda src: (1150, 700)) == []
    assert problems("guide/tv/index.html", '<img src="step.svg">', size_of=lambda src: (2000, 900)) == []  # vector


def test_an_unlinked_theory_mention_or_arxiv_id_fails():
    for text in ("The rule is docs/theory.md section 2.2.", "As in <code>docs/theory.md</code> section 7.1.",
                 "See theory section 6.7 for the audit."):
        found = problems("guide/x/index.html", f"<p>{text}</p>")
        assert len(found) == 1 and "a theory mention that is not a link" in found[0], (text, found)
    found = problems("guide/x/index.html", "<p>Traversal Verification (arXiv 2505.12398).</p>")
    assert len(found) == 1 and "an arXiv id that is not a link" in found[0], found


def test_a_numpy_section_rendered_as_text_fails():
    # What the sphinx docstring style made of a numpy section: a setext heading, or a run-on paragraph.
    for body in ('<div class="doc doc-contents"><p>Sample.</p><h2 id="x">Parameters</h2><p>u : float A draw.</p></div>',
                 '<div class="doc doc-contents"><p>Parameters ---------- u : float A draw.</p></div>'):
        found = problems("reference/laws/index.html", body)
        assert len(found) == 1 and "a numpy docstring section rendered as text" in found[0], (body, found)
    rendered = ('<div class="doc doc-contents"><p><span class="doc-section-title">Parameters:</span></p>'
                '<ul><li><b><code>u</code></b> (<code>float</code>) - A draw.</li></ul>'
                "<p>Raises <code>LawError</code> on an all-zero law.</p></div>")
    assert problems("reference/laws/index.html", rendered) == []


def test_a_commit_hash_in_the_prose_fails():
    found = problems("guide/real-models/index.html", "<p>Measured before 97e8cea changed the head.</p>")
    assert len(found) == 1 and "a commit hash in the prose" in found[0] and "97e8cea" in found[0], found
    clean = ("<p>Seed 1234567, a decade of data, sha256 in <code>x.provenance.json</code>, "
             "V = 32000, facade, #1a2b3c4 and a/b/c0ffee123.</p><pre><code>git checkout 97e8cea</code></pre>")
    assert problems("guide/real-models/index.html", clean) == []


def test_the_check_reads_a_built_page_with_figures_from_the_site(tmp_path):
    # check_site's own image reader: a PNG's header and an SVG's viewBox.
    png = tmp_path / "wide.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + (2160).to_bytes(4, "big") + (576).to_bytes(4, "big"))
    svg = tmp_path / "step.svg"
    svg.write_text("<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 720 430'></svg>")
    assert check_site.image_size(png) == (2160, 576) and check_site.image_size(svg) == (720.0, 430.0)
    (tmp_path / "guide" / "tv").mkdir(parents=True)
    (tmp_path / "guide" / "tv" / "index.html").write_text(page('<img src="../../wide.png">'))
    (tmp_path / "index.html").write_text(page('<img src="step.svg">'))
    assert check_site.main([str(tmp_path)]) == 1
    found, _ = check_site.check_site(tmp_path)
    assert len(found) == 1 and found[0].startswith("guide/tv/index.html: figure ../../wide.png shown at 33%")


# --- The hooks and extensions the checks rely on -----------------------------------------------

def test_theory_mentions_and_arxiv_ids_become_links():
    pytest.importorskip("mkdocs")
    links = _load("site_links")
    table = links.anchors((ROOT / "docs" / "theory.md").read_text(encoding="utf-8"))
    assert table["2.2"] == "22-rheosampling" and table["1.4"] == "14-the-one-hot-dilemma"
    html = ("<p>The rule (docs/theory.md section 2.2) and <code>docs/theory.md</code> section 1.4, "
            "Traversal Verification (arXiv 2505.12398), section 9.9 of docs/theory.md section 99.</p>"
            '<pre><code>docs/theory.md section 2.2</code></pre><a href="x">theory section 2.2</a>')
    out = links.link(html, "guide/sweeps/", "theory/", table)
    assert '<a href="../../theory/#22-rheosampling">docs/theory.md section 2.2</a>' in out
    assert '<a href="../../theory/#14-the-one-hot-dilemma"><code>docs/theory.md</code> section 1.4</a>' in out
    assert '<a href="https://arxiv.org/abs/2505.12398">arXiv 2505.12398</a>' in out
    assert "<pre><code>docs/theory.md section 2.2</code></pre>" in out and '<a href="x">theory section 2.2</a>' in out
    assert "docs/theory.md section 99" in out  # no such section: left as text, and the check reports it
    found = check_site.check_page("guide/sweeps/index.html", page(out))
    assert len(found) == 1 and "'docs/theory.md section 99'" in found[0], found
    assert check_site.check_page("guide/sweeps/index.html", page(links.link(html.replace(
        " of docs/theory.md section 99", ""), "guide/sweeps/", "theory/", table))) == []
    on_theory = links.link("<p>as in section 2.2 and sections 5.3</p>", "theory/", "theory/", table)
    assert on_theory == ('<p>as in <a href="#22-rheosampling">section 2.2</a> and '
                         '<a href="#53-equivalence-classes-what-the-verifier-sees">sections 5.3</a></p>')


def test_numpy_sections_end_where_their_items_end():
    pytest.importorskip("griffe")
    fences = _load("griffe_doctests")
    text = ("Sample a token.\n\nParameters\n----------\nu : float\n    A draw.\n\n"
            "Made laws are cached for the pair's lifetime.\n\n>>> f(0.5)\n1")
    out = fences.fence_examples(fences.close_sections(text))
    assert out == ("Sample a token.\n\nParameters\n----------\nu : float\n    A draw.\n\n"
                   "Notes\n-----\nMade laws are cached for the pair's lifetime.\n\nExamples\n--------\n>>> f(0.5)\n1")
    # Without numpy sections nothing changes but the fence; a second item stays an item.
    assert fences.close_sections("Intro.\n\n>>> f(1)\n2") == "Intro.\n\n>>> f(1)\n2"
    two = "Parameters\n----------\nu : float\n    A draw.\n\nv : int\n    A count."
    assert fences.close_sections(two) == two
    # A sentence where the type goes moves into the description (the theme prints a type as code).
    prose = "Parameters\n----------\nmodel : a ``transformers`` decoder-only causal LM.\n    Batch 1.\n"
    assert fences.close_sections(prose) == (
        "Parameters\n----------\nmodel\n    a ``transformers`` decoder-only causal LM.\n    Batch 1.\n")
    typed = "Returns\n-------\nLongTensor(1, prompt + new)\n    The ids.\nx : (n,) float array\n    Laws."
    assert fences.close_sections(typed) == typed


def test_a_rest_literal_block_becomes_a_fenced_block():
    griffe = pytest.importorskip("griffe")
    roles = _load("griffe_roles")
    pkg = griffe.load("rheotheory", search_paths=[str(ROOT)], resolve_aliases=False)
    text = ("The file starts with one comment line::\n\n    # rheo-partial {\"config\": 1}\n    task,a\n\n"
            "Numbers in full precision (``repr``).\n\n::\n\n    x = 1\n\nAfter.")
    out = roles.convert(pkg["checkpoint"], text)
    assert "The file starts with one comment line:\n\n```text\n# rheo-partial {\"config\": 1}\ntask,a\n```" in out
    assert "\n```text\nx = 1\n```\n" in out and "::" not in out and "(``repr``)" in out


def test_the_step_diagram_is_the_committed_one():
    diagram = _load("step_diagram")
    svg = diagram.draw()
    assert (ROOT / "docs" / "assets" / "one-step.svg").read_text(encoding="utf-8") == svg
    width = float(re.search(r"viewBox='0 0 ([\d.]+)", svg)[1])
    assert check_site.COLUMN_PX / width >= check_site.MIN_FIGURE_SCALE
    for label in ("bonus y ~ p", "s ~ L", "q .50", "p .30", "one target pass"):
        assert label in svg, label


def test_screenshots_refuse_without_a_site_or_a_browser(tmp_path, capsys):
    shots = _load("screenshots")
    assert shots.main([str(tmp_path), str(tmp_path / "out")]) == 2
    assert "not a built site" in capsys.readouterr().err
    (tmp_path / "index.html").write_text("<p>home</p>")
    assert shots.main([str(tmp_path), str(tmp_path / "out"), "--chromium", "no-such-browser-here"]) == 2
    assert "no no-such-browser-here on PATH" in capsys.readouterr().err


def test_the_cli_reference_lists_the_method_flags_once_with_an_example_per_command():
    import shlex

    from rheotheory.cli import build_parser

    cli_reference = _load("cli_reference")
    text = cli_reference.render(run_examples=False)
    names = list(cli_reference._subparsers(build_parser()))
    assert set(cli_reference.EXAMPLES) == set(names)
    for name, lines in cli_reference.EXAMPLES.items():
        for line in "\n".join(lines).replace("\\\n", " ").splitlines():
            build_parser().parse_args(shlex.split(line.split(" > ")[0])[1:])  # each example parses
        assert all(line in text for line in lines)
    differ = text.count("these read differently here")
    assert text.count("## Method flags") == 1
    # A flag every method command takes is described once, plus where a command's help differs.
    assert 1 <= text.count("`--proxy {next,tail,min-best-tail,true}` · default") <= 1 + differ
    taking = [n for n, sub in cli_reference._subparsers(build_parser()).items() if cli_reference._method_group(sub)]
    assert len(taking) >= 2 and text.count("(#method-flags)") == len(taking)


def test_each_command_section_has_usage_flags_with_defaults_and_its_exit_statuses():
    from rheotheory.cli import build_parser

    cli_reference = _load("cli_reference")
    text = cli_reference.render(run_examples=False)
    subs = cli_reference._subparsers(build_parser())
    for name, sub in subs.items():
        section = text.split(f"## `rheo {name}`")[1].split("\n## ")[0]
        assert f"usage: rheo {name}" in section and "**Flags**" in section, name
        for code, meaning in sub.exit_statuses:
            assert f"| {code} | {meaning} |" in section, (name, code)
    certify = text.split("## `rheo certify`")[1].split("\n## ")[0]
    assert "`--max-branches B` · default 2000000, about an hour of one core" in certify
    assert "`--strict` · default off" in certify and "`--json` · default off" in certify
    mc = text.split("## `rheo mc`")[1].split("\n## ")[0]
    assert "`--samples SAMPLES` · default `2000`" in mc and "`INSTANCE` · default a synthetic pair" in mc


def test_the_cli_reference_runs_each_example_and_shows_what_it_prints():
    cli_reference = _load("cli_reference")
    out = cli_reference.example_output(["rheo certify --preset rheo"])
    assert "verdict         : LOSSLESS" in out and "max deviation   : 0" in out
    assert cli_reference.example_output(["rheo instance --vocab 3 --horizon 3 --seed 1 > inst.json",
                                         "rheo certify inst.json --preset eagle --json"]).startswith('{"lossless"')


def test_a_long_exact_fraction_in_a_table_shows_as_a_decimal_with_the_exact_value_on_demand():
    fractions = _load("site_fractions")
    long = "6009154610163229142466953947392072133802391857020/9007199254740992"
    html = (f"<table><tr><td>{long}</td><td><code>{long}</code></td><td>2202077/846300</td><td>1/3</td></tr>"
            f"</table><p>{long}</p>")
    out = fractions.shorten(html)
    from fractions import Fraction

    shown = f"{float(Fraction(long)):.6g}"
    assert out.count(f'<abbr class="exact" title="exact: {long}">~{shown}</abbr>') == 2
    assert "<td>2202077/846300</td><td>1/3</td>" in out and f"<p>{long}</p>" in out  # short, or prose
    assert fractions.decimal("1/4") == "0.25" and fractions.decimal("1/3") == "~0.333333"
    # The table check passes the shortened table and fails the raw one.
    row = "<tr>" + "".join(f"<td>{x}</td>" for x in ("spectr-gbv", "yes", "0 / 96", long)) + "</tr>"
    assert problems("guide/t/index.html", f"<table>{row}</table>") != []
    assert problems("guide/t/index.html", fractions.shorten(f"<table>{row}</table>")) == []


def test_the_getting_started_certificate_is_what_the_command_prints(capsys):
    from rheotheory.cli import main

    page = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    shown = re.search(r"```bash\nrheo certify --preset rheo\n```\n\n```text\n(.*?)```", page, re.S)
    assert shown, "the home page lost its first tour command"
    assert main(["certify", "--preset", "rheo"]) in (0, None)
    printed = capsys.readouterr().out
    # The page wraps the method line at the column; the timing differs run to run.
    unwrap = lambda text: [re.sub(r"\s+", " ", ln) for ln in re.sub(r"\n {18}", " ", text).splitlines()
                           if not ln.startswith("time")]
    assert unwrap(shown.group(1)) == unwrap(printed)


def test_a_stray_rest_marker_or_a_literal_autoref_fails():
    found = problems("reference/records/index.html",
                     "<p>The file starts with one comment line::</p><pre><code>rows::\n</code></pre>")
    assert len(found) == 1 and "a reST '::' left in the text (1x)" in found[0], found
    literal = '<pre><code>the caller writes &lt;autoref identifier="x"&gt;finish&lt;/autoref&gt;</code></pre>'
    found = problems("reference/records/index.html", literal)
    assert len(found) == 1 and "a literal <autoref> tag" in found[0], found
    assert problems("reference/records/index.html", "<p>Use <code>a::b</code>; ratio 1:2.</p>") == []


def test_a_comment_inside_a_continued_command_fails():
    bad = "<pre><code>rheo bench --model smollm2 \\\n    # the full grid\n    --repeats 1\n</code></pre>"
    found = problems("guide/x/index.html", bad)
    assert len(found) == 1 and "a comment inside a continued shell command" in found[0], found
    good = "<pre><code># the full grid\nrheo bench --model smollm2 \\\n    --repeats 1\n</code></pre>"
    assert problems("guide/x/index.html", good) == []


def test_a_folded_table_wider_than_the_column_fails_as_an_open_one_does():
    row = "<tr>" + "".join(f"<td>{'w' * 14}{i}</td>" for i in range(8)) + "</tr>"
    folded = f'<details><summary>evidence</summary><table>{row}</table></details>'
    assert any("a table wider than the column, folded or not" in p for p in problems("guide/t/index.html", folded))
    narrow = '<details><summary>evidence</summary><table><tr><td>a</td><td>b</td></tr></table></details>'
    assert problems("guide/t/index.html", narrow) == []


def test_a_placeholder_for_results_not_committed_fails():
    page = ("<p>At 600 per prompt it is rejected.</p><p><em>To regenerate</em> (its results are not committed): "
            "<code>python simulations/recipes.py run x</code></p>")
    assert any("a placeholder for results that are not committed" in p for p in problems("results/t/index.html", page))
