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
    assert 'python3 -m pip install -e ".[dev]" && rheo certify' in text
    assert "python3 -m pytest -q" in text


def test_links_of_the_readme_and_the_pages_resolve():
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    broken = {str(d.relative_to(ROOT)): b for d in docs if (b := broken_links(d))}
    assert not broken, broken


def test_a_broken_link_is_caught(tmp_path):
    (tmp_path / "there.md").write_text("x")
    page = tmp_path / "page.md"
    page.write_text("[ok](there.md) [ok too](there.md#a) [web](https://example.org) [gone](missing.md)")
    assert broken_links(page) == ["missing.md"]


def test_the_cli_reference_covers_every_subcommand():
    from rheotheory.cli import COMMANDS, build_parser

    cli_reference = _load("cli_reference", ROOT / "scripts" / "cli_reference.py")
    text = cli_reference.render()
    names = list(cli_reference._subparsers(build_parser()))
    assert len(names) == len(COMMANDS)
    for name in names:
        assert f"## `rheo {name}`" in text and f"usage: rheo {name}" in text, name
    page = (ROOT / "docs" / "reference" / "cli.md").read_text()
    assert cli_reference.MARKER in page and "usage:" not in page  # generated, never a hand-written copy
    too_wide = [line for line in text.splitlines() if len(line) > int(cli_reference.WIDTH)]
    assert not too_wide, too_wide  # the help fits the page's code column


def test_a_choice_list_argparse_cannot_wrap_is_broken_after_commas():
    cli_reference = _load("cli_reference", ROOT / "scripts" / "cli_reference.py")
    line = "  [--verifier {" + ",".join(f"rule{i}" for i in range(12)) + "}]"
    lines = cli_reference.fit(line, width=40).split("\n")
    assert [len(x) <= 40 for x in lines] == [True] * len(lines) and len(lines) == 4
    assert "".join(x.strip() for x in lines) == line.strip()
    assert all(x.startswith(" " * line.index("{")) and x[line.index("{") + 1] != " " for x in lines[1:])
    assert cli_reference.fit("short {a,b}", width=40) == "short {a,b}"


def test_every_module_has_its_api_entry():
    api = (ROOT / "docs" / "reference" / "api.md").read_text()
    listed = set(re.findall(r"^::: (\S+)$", api, re.M))
    modules = {m.name for m in pkgutil.walk_packages([str(ROOT / "rheotheory")], "rheotheory.")
               if not m.name.startswith("rheotheory.cli.")}
    assert not modules - listed, sorted(modules - listed)
    assert not listed - modules - {"rheotheory.cli"}, sorted(listed - modules)


def test_doctest_examples_become_code_blocks():
    pytest.importorskip("griffe")  # the docs extra
    fences = _load("griffe_doctests", ROOT / "scripts" / "griffe_doctests.py")
    text = "Intro.\n\n>>> f([0, 1])\n[1, 2]\n\nAfter."
    assert fences.fence_examples(text) == "Intro.\n\n```pycon\n>>> f([0, 1])\n[1, 2]\n```\n\nAfter."
