"""MkDocs hook: the notebook pages load nothing from the network.

nbconvert's page template (used by mkdocs-jupyter) carries a script that imports mermaid.js from
a CDN when the page holds a Mermaid diagram. The notebooks have none, so the script would never
fetch anything, but a page that names a CDN import is one ``scripts/check_site.py`` cannot tell
from one that uses it: on a page without a diagram this hook removes that script. (The site's
other offline settings: ``theme.font: false`` in ``mkdocs.yml``, math as MathML from
``scripts/site_math.py``.)
"""

from __future__ import annotations

import re

#: nbconvert's Mermaid loader: a module script that imports mermaid from a URL.
MERMAID_LOADER = re.compile(r'<script type="module">(?:(?!</script>).)*?mermaid(?:(?!</script>).)*?'
                            r'import\((?:(?!</script>).)*?</script>', re.DOTALL)
#: A Mermaid diagram in a notebook's output (an element of class jp-Mermaid).
DIAGRAM = re.compile(r'class="[^"]*\bjp-Mermaid\b')


def on_post_page(output: str, page, config) -> str:  # MkDocs hook
    if DIAGRAM.search(output):  # NOTE: a page with a diagram keeps its loader (and fails the check)
        return output
    return MERMAID_LOADER.sub("", output)
