"""The proved Coq rules and the running Python rules, compared exactly on rational instances.

    python3 proofs/coq/compare.py            # build, compare, print a summary; exit 1 on a mismatch

The Coq definitions of ``onehot``, ``sequential`` and ``ot`` (proofs/coq/Sequential.v, Ot.v) are
the ones the theorems are about; they compute (``vm_compute`` on MathComp's ``rat``). This module
draws a fixed family of rational instances (target law, candidate list with the laws of the sampled
candidates), writes one Coq file that evaluates each rule's transition law on them (the continue
weights and the emit weights), runs ``coqc`` on it and compares every number, as a Fraction, with
:mod:`rheotheory.verify.rules` on the same instance. A planted change to either side (a mutant
Python rule, a perturbed instance given to Coq) shows up as a mismatch (tests/test_coq.py).
"""

from __future__ import annotations

import random
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

#: The rules compared, by their name in rheotheory.verify.rules.VERIFIERS.
RULES = ("onehot", "sequential", "ot")

#: Instances drawn per rule by :func:`instances`.
PER_RULE = 40

#: Wall-clock limit for one coqc or make call (seconds).
COQ_TIMEOUT = 900


@dataclass(frozen=True)
class Instance:
    """One rule on one node: target law ``p`` and candidates ``(token, law or None)``."""

    rule: str
    p: tuple  # [vocab] Fractions summing to 1
    cands: tuple  # ((token, law or None), ...); law: [vocab] Fractions

    @property
    def vocab(self) -> int:
        return len(self.p)


def _law(rng: random.Random, v: int, zeros: bool = True, positive: tuple = ()) -> tuple:
    """A random rational law over v tokens with small weights; tokens in ``positive`` get > 0."""
    while True:
        w = [rng.randint(0 if zeros else 1, 4) for _ in range(v)]
        for t in positive:
            w[t] = max(w[t], 1)
        if sum(w):
            return tuple(Fraction(x, sum(w)) for x in w)


def _restrict(q: tuple, exclude) -> tuple:
    """q conditioned to avoid ``exclude`` (laws.restrict)."""
    kept = [Fraction(0) if i in exclude else x for i, x in enumerate(q)]
    s = sum(kept)
    return tuple(x / s for x in kept) if s else tuple(kept)


def _draw(rng: random.Random, law: tuple) -> int:
    """A token with positive probability under ``law``."""
    return rng.choice([i for i, x in enumerate(law) if x > 0])


def instances(seed: int = 0, per_rule: int = PER_RULE) -> list[Instance]:
    """The compared family: for each rule, ``per_rule`` nodes with V in 2..4.

    ``onehot``: deterministic lists (duplicates included). ``sequential``: deterministic and
    sampled candidates mixed, sampled ones i.i.d. from one law, without replacement, or from
    unrelated laws. ``ot``: deterministic candidates around exactly one sampled one, half of
    them in RheoSampling's layout (head G, then s from q restricted to the tail).
    """
    rng = random.Random(seed)
    out = []
    for rule in RULES:
        for k in range(per_rule):
            v = rng.randint(2, 4)
            p = _law(rng, v)
            n = rng.randint(1, 3)
            cands = []
            if rule == "onehot":
                cands = [(rng.randrange(v), None) for _ in range(n)]
            elif rule == "sequential":
                q = _law(rng, v, zeros=False)
                mode = k % 3
                drawn = []
                for _ in range(n):
                    if rng.random() < 0.3:
                        cands.append((rng.randrange(v), None))
                        continue
                    if mode == 0:
                        law = q
                    elif mode == 1:
                        law = _restrict(q, drawn)
                        if not sum(law):
                            continue
                    else:
                        law = _law(rng, v)
                    s = _draw(rng, law)
                    drawn.append(s)
                    cands.append((s, law))
                if not cands:
                    cands = [(rng.randrange(v), None)]
            else:
                if k % 2 == 0:
                    g = rng.sample(range(v), rng.randint(0, v - 1))
                    law = _restrict(_law(rng, v, zeros=False), g)
                    cands = [(t, None) for t in g] + [(_draw(rng, law), law)]
                else:
                    law = _law(rng, v)
                    cands = [(rng.randrange(v), None) for _ in range(n - 1)]
                    cands.insert(rng.randint(0, len(cands)), (_draw(rng, law), law))
            out.append(Instance(rule, p, tuple(cands)))
    return out


# ---------------------------------------------------------------- Python side

def python_transition(inst: Instance, rules: dict | None = None) -> tuple[list, list]:
    """(cont, emit) of the Python rule on ``inst``, as Fractions. ``rules`` overrides rules by name."""
    import numpy as np

    from rheotheory.verify import rules as R

    rule = (rules or {}).get(inst.rule) or R.VERIFIERS[inst.rule]
    p = np.array(inst.p, dtype=object)
    cands = [R.Candidate(t, None if law is None else np.array(law, dtype=object)) for t, law in inst.cands]
    tr = rule(p, cands)
    return [Fraction(x) for x in tr.cont], [Fraction(x) for x in tr.emit]


# ---------------------------------------------------------------- Coq side

def coq_available() -> bool:
    return shutil.which("coqc") is not None and shutil.which("coq_makefile") is not None


def build() -> None:
    """Build the development (make -C proofs/coq); raise RuntimeError with its output on failure."""
    r = subprocess.run(["make", "-C", str(HERE)], capture_output=True, text=True, timeout=COQ_TIMEOUT)
    if r.returncode:
        raise RuntimeError(f"make -C {HERE} failed:\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}")


def _q(x: Fraction) -> str:
    return f"(Q {x.numerator} {x.denominator})"


def _coq_law(law: tuple) -> str:
    return f"(@law_of {len(law)} [:: {'; '.join(_q(x) for x in law)}])"


def _coq_token(v: int, t: int) -> str:
    return f"(@Ordinal {v} {t} erefl)"


def _coq_cand(v: int, token: int, law) -> str:
    if law is None:
        return f"(Det {_coq_token(v, token)})"
    return f"(Samp {_coq_token(v, token)} {_coq_law(law)})"


HEADER = """From mathcomp Require Import all_ssreflect ssralg ssrnum ssrint rat.
From Rheo Require Import Laws Sequential Ot Conditions.
Local Open Scope ring_scope.
Definition show (x : rat) := (numq x, denq x).
Definition showt V (t : transition rat_realFieldType V) :=
  (map show (cont t), map (fun y => show (emit t y)) (ords V)).
"""


def coq_source(insts: list[Instance]) -> str:
    """One ``Eval vm_compute`` per instance of the transition law of the Coq rule."""
    lines = [HEADER]
    for inst in insts:
        v = inst.vocab
        cands = "[:: " + "; ".join(_coq_cand(v, t, law) for t, law in inst.cands) + "]"
        lines.append(f"Eval vm_compute in showt {v} ({inst.rule} {_coq_law(inst.p)} {cands}).")
    return "\n".join(lines) + "\n"


_PAIR = re.compile(r"\(\s*\(?(-?\d+)\)?%Z\s*,\s*\(?(-?\d+)\)?%Z\s*\)")


def parse_coq_output(text: str, insts: list[Instance]) -> list[tuple[list, list]]:
    """Split coqc's output into one (cont, emit) per instance."""
    blocks, cur = [], None
    for line in text.splitlines():
        if line.startswith("     = "):
            cur = [line[7:]]
        elif line.startswith("     : ") and cur is not None:
            blocks.append(" ".join(cur))
            cur = None
        elif cur is not None:
            cur.append(line)
    if len(blocks) != len(insts):
        raise RuntimeError(f"coqc printed {len(blocks)} results for {len(insts)} instances:\n{text[-2000:]}")
    out = []
    for block, inst in zip(blocks, insts):
        nums = [Fraction(int(a), int(b)) for a, b in _PAIR.findall(block)]
        k = len(inst.cands)
        if len(nums) != k + inst.vocab:
            raise RuntimeError(f"unexpected Coq result for {inst}: {block}")
        out.append((nums[:k], nums[k:]))
    return out


def coq_transitions(insts: list[Instance]) -> list[tuple[list, list]]:
    """Run the Coq rules on ``insts`` (the development must be built)."""
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "Compare.v"
        f.write_text(coq_source(insts))
        r = subprocess.run(["coqc", "-R", str(HERE), "Rheo", "-w", "-notation-overridden,-ambiguous-paths",
                            str(f)], capture_output=True, text=True, timeout=COQ_TIMEOUT)
    if r.returncode:
        raise RuntimeError(f"coqc failed:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    return parse_coq_output(r.stdout, insts)


def mismatches(insts: list[Instance], coq: list, py: list) -> list[str]:
    """Every instance where a continue or emit weight differs, as one line each."""
    bad = []
    for i, (inst, c, p) in enumerate(zip(insts, coq, py)):
        if c != p:
            bad.append(f"instance {i} ({inst.rule}, V={inst.vocab}): Coq {c} != Python {p}")
    return bad


def main() -> int:
    if not coq_available():
        print("coqc not found: apt-get install coq libcoq-mathcomp-ssreflect libcoq-mathcomp-algebra "
              "libcoq-mathcomp-field", file=sys.stderr)
        return 2
    sys.path.insert(0, str(ROOT))
    build()
    insts = instances()
    bad = mismatches(insts, coq_transitions(insts), [python_transition(i) for i in insts])
    counts = {r: sum(i.rule == r for i in insts) for r in RULES}
    print(f"{len(insts)} instances ({', '.join(f'{r} {n}' for r, n in counts.items())}), "
          f"{sum(len(i.cands) + i.vocab for i in insts)} numbers compared, {len(bad)} mismatches")
    for line in bad[:10]:
        print(line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
