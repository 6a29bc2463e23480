"""Print the README's two set-up commands, verbatim, as a shell script (CI's first tier runs it).

    python3 scripts/readme_commands.py > readme.sh && bash -euo pipefail readme.sh

The commands are the lines of the first ``bash`` block under the README's "Set up" heading: the
first makes a virtual environment, installs the package and runs the main job; the second installs
the test extras and runs the tests. They run in one shell, in order, so the environment the first
activates is the one the second uses. A README without exactly two commands there exits 2.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def commands(readme: Path = ROOT / "README.md") -> list[str]:
    """The command lines of the README's set-up block (comment-only and blank lines left out)."""
    text = readme.read_text()
    section = re.search(r"^## Set up\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    block = re.search(r"```bash\n(.*?)```", section.group(1), re.S) if section else None
    if block is None:
        return []
    return [line for line in block.group(1).splitlines() if line.strip() and not line.lstrip().startswith("#")]


def main() -> int:
    lines = commands()
    if len(lines) != 2:
        print(f"readme_commands: the README's set-up block holds {len(lines)} commands, not 2", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
