"""MkDocs hook: the pages show the committed results figures they discuss, with no copy under docs/.

A page links a figure where it lies in the repository, relative to the page, as GitHub shows it:
``docs/guide/sweeps.md`` writes ``![...](../../simulations/results/sweep_v32k.png)``. MkDocs
serves only ``docs/``, so at build time this hook adds every image such a link names (a file
outside ``docs/`` but inside the repository) to the site under ``figures/<its path in the
repository>`` and points the link there. The site therefore always shows the committed file
itself: there is no second copy to fall out of date. A link to a missing file is left as it is,
so the strict build reports it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from mkdocs.structure.files import File

#: The repository this hook belongs to; only images inside it are served.
ROOT = Path(__file__).resolve().parent.parent

#: Where the figures go in the built site.
PREFIX = "figures"

#: A Markdown image ``![alt](target)`` (no title, no spaces in the target: the pages' style).
IMAGE = re.compile(r"(!\[[^\]]*\]\()([^)\s]+)(\))")

SUFFIXES = (".png", ".svg", ".jpg", ".jpeg", ".gif", ".webp")


def outside_image(page_src: Path, target: str, docs_dir: Path) -> Path | None:
    """The repository file an image link of the page at ``page_src`` names, when it lies outside
    ``docs_dir`` (None for a URL, a file under ``docs_dir``, a file outside the repository or a
    missing one)."""
    if "://" in target or target.startswith(("/", "data:")) or not target.lower().endswith(SUFFIXES):
        return None
    path = (page_src.parent / target).resolve()
    if not path.is_file() or path.is_relative_to(docs_dir.resolve()) or not path.is_relative_to(ROOT):
        return None
    return path


def site_uri(path: Path) -> str:
    """The file's place in the built site: ``figures/<its path in the repository>``."""
    return f"{PREFIX}/{path.relative_to(ROOT).as_posix()}"


def rewrite(markdown: str, page_src: Path, docs_dir: Path) -> tuple[str, list[Path]]:
    """``markdown`` with each link to an outside image pointed at its place in the site, and the
    images it names."""
    found: list[Path] = []

    def sub(m: re.Match) -> str:
        path = outside_image(page_src, m.group(2), docs_dir)
        if path is None:
            return m.group(0)
        found.append(path)
        served = docs_dir.resolve() / site_uri(path)
        return m.group(1) + Path(os.path.relpath(served, page_src.parent.resolve())).as_posix() + m.group(3)

    return IMAGE.sub(sub, markdown), found


def on_files(files, config):  # MkDocs hook
    docs_dir = Path(config["docs_dir"])
    wanted: dict[str, Path] = {}
    for page in docs_dir.rglob("*.md"):
        for path in rewrite(page.read_text(encoding="utf-8"), page, docs_dir)[1]:
            wanted[site_uri(path)] = path
    for uri, path in sorted(wanted.items()):
        files.append(File.generated(config, uri, abs_src_path=str(path)))
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:  # MkDocs hook
    if page.file.abs_src_path is None or not page.file.src_uri.endswith(".md"):
        return markdown
    return rewrite(markdown, Path(page.file.abs_src_path), Path(config["docs_dir"]))[0]
