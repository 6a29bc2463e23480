"""No unannounced Admitted, admit, Axiom or Parameter in the Coq development, and every theorem
closed under the global context.

    python3 proofs/coq/check_assumptions.py          # after `make -C proofs/coq`

1. Scans every ``.v`` file for ``Admitted``, ``admit``, ``Axiom``, ``Axioms``, ``Parameter``,
   ``Parameters``, ``Conjecture`` and ``Hypothesis`` outside comments (a section ``Hypothesis``
   becomes an argument of each lemma using it, but is listed anyway); each hit must be announced in
   ``proofs/coq/ANNOUNCED`` (one ``File.v: text of the line`` per line, ``#`` comments).
2. Checks that ``Assumptions.v`` prints assumptions for every ``Theorem`` and ``Corollary`` of the
   development, runs it with coqc and requires "Closed under the global context" for each, unless
   the theorem is announced as ``assumptions: NAME``.

Exit status: 0 when all holds, 1 otherwise, 2 when coqc is missing.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: Vernacular that admits something or adds an assumption.
KEYWORDS = re.compile(r"\b(Admitted|admit|Axioms?|Parameters?|Conjecture|Hypothesis)\b")
THEOREM = re.compile(r"^\s*(?:Theorem|Corollary)\s+([A-Za-z_][A-Za-z0-9_']*)", re.M)
PRINTED = re.compile(r"^\s*Print Assumptions\s+([A-Za-z_][A-Za-z0-9_']*)\s*\.", re.M)


def strip_comments(text: str) -> str:
    """Coq source without its (possibly nested) comments; line breaks kept."""
    out, depth, i = [], 0, 0
    while i < len(text):
        if text.startswith("(*", i):
            depth, i = depth + 1, i + 2
        elif text.startswith("*)", i) and depth:
            depth, i = depth - 1, i + 2
        else:
            if depth == 0 or text[i] == "\n":
                out.append(text[i])
            i += 1
    return "".join(out)


def announced(root: Path = HERE) -> set[str]:
    f = root / "ANNOUNCED"
    lines = f.read_text(encoding="utf-8").splitlines() if f.exists() else []
    return {line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")}


def sources(root: Path = HERE) -> list[Path]:
    return sorted(p for p in root.glob("*.v") if p.name != "Assumptions.v")


def scan(root: Path = HERE) -> list[str]:
    """``File.v: line`` for every admitting keyword outside comments, in the .v files of ``root``."""
    hits = []
    for p in sources(root):
        for line in strip_comments(p.read_text(encoding="utf-8")).splitlines():
            if KEYWORDS.search(line):
                hits.append(f"{p.name}: {line.strip()}")
    return hits


def theorems(root: Path = HERE) -> list[str]:
    return [m for p in sources(root) for m in THEOREM.findall(strip_comments(p.read_text(encoding="utf-8")))]


def print_assumptions() -> dict[str, str]:
    """Theorem name -> what coqc printed for it (Assumptions.v, in order)."""
    src = (HERE / "Assumptions.v").read_text(encoding="utf-8")
    names = PRINTED.findall(strip_comments(src))
    r = subprocess.run(["coqc", "-R", str(HERE), "Rheo", "-w", "-notation-overridden,-ambiguous-paths",
                        str(HERE / "Assumptions.v")], capture_output=True, text=True, timeout=900, cwd=HERE)
    if r.returncode:
        raise RuntimeError(f"coqc Assumptions.v failed:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    # each answer is "Closed under the global context" or an "Axioms:" block
    parts = re.split(r"(?m)^(?=Closed under the global context|Axioms:)", r.stdout.strip())
    parts = [x.strip() for x in parts if x.strip()]
    if len(parts) != len(names):
        raise RuntimeError(f"{len(names)} Print Assumptions, {len(parts)} answers:\n{r.stdout[-2000:]}")
    return dict(zip(names, parts))


def main() -> int:
    if shutil.which("coqc") is None:
        print("coqc not found: apt-get install coq libcoq-mathcomp-ssreflect", file=sys.stderr)
        return 2
    ok = True
    allowed = announced()
    for hit in scan():
        if hit not in allowed:
            print(f"unannounced: {hit}")
            ok = False
    answers = print_assumptions()
    missing = [t for t in theorems() if t not in answers]
    for t in missing:
        print(f"not in Assumptions.v: {t}")
        ok = False
    for name, text in answers.items():
        closed = text.startswith("Closed under the global context")
        if not closed and f"assumptions: {name}" not in allowed:
            print(f"{name} depends on: {' '.join(text.split())}")
            ok = False
    n_closed = sum(t.startswith("Closed") for t in answers.values())
    print(f"{len(answers)} theorems, {n_closed} closed under the global context, "
          f"{len(scan())} admitting keywords ({len(allowed)} announced)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
