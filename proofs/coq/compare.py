"""The proved Coq rules and walk against the running Python code, compared exactly on rationals.

    python3 proofs/coq/compare.py            # build, compare, print a summary; exit 1 on a mismatch

Two comparisons, each number compared as a Fraction:

1. **Rules.** The Coq definitions of ``onehot``, ``sequential``, ``ot`` and ``ot_wor``
   (proofs/coq/Sequential.v, Ot.v, OtWor.v) are the ones the theorems are about; they compute
   (``vm_compute`` on MathComp's ``rat``). :func:`instances` draws a fixed, seeded family of
   random rational instances (target law, candidate list with the laws of the sampled
   candidates); one Coq file evaluates each rule's transition law on them (continue and emit
   weights) and every number is compared with :mod:`rheotheory.verify.rules`. The family is built
   so that the planted mutants below differ on every instance of their rule: each ``onehot``
   instance opens with a sampled candidate whose law is below 1 at its token, each ``ot`` and
   ``ot-wor`` instance holds a deterministic token twice with residual mass routed to it. These are
   random instances, checked exactly: evidence, not a proof. Where the residual goes among
   duplicates is also a theorem (``ot_routing``).
2. **The walk.** :func:`walk_trees` enumerates every tree of a small family (V = 2, depth up to 2,
   each node's kept children one of :data:`NODE_OPTIONS`: deterministic, sampled, duplicated).
   For each tree and rule, :class:`rheotheory.verify.walk.PerNodeWalk` gives the law of the step
   output Z (exact enumeration); Coq evaluates Tree.v's ``zlaw`` (the law of Z) and ``ext`` (the
   extended output law that ``tree_step_lossless`` and ``builder_lossless`` are about) on the same
   tree. Compared: P(Z = z) for every z with |z| <= 3, and the extended law computed from the
   Python Z law by the criterion of docs/theory.md section 4 against Coq's ``ext``
   (``ext_zlaw`` proves the same identity in Coq).

Planted mutants (:data:`MUTANTS`), each of which the comparison must catch (tests/test_coq.py):
the Coq ``onehot`` replaced by ``sequential``; ``ot`` routing the residual to the last duplicate
instead of the first; a walk that drops the bonus token.
"""

from __future__ import annotations

import itertools
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
RULES = ("onehot", "sequential", "ot", "ot-wor")

#: Their names in the Coq development.
COQ_NAMES = {"onehot": "onehot", "sequential": "sequential", "ot": "ot", "ot-wor": "ot_wor"}

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


def _law(rng: random.Random, v: int, zeros: bool = True) -> tuple:
    """A random rational law over v tokens with small weights."""
    while True:
        w = [rng.randint(0 if zeros else 1, 4) for _ in range(v)]
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


def _onehot_instance(rng: random.Random) -> Instance:
    """A sampled candidate x first, with 0 < p(x) < L(x) < 1 (onehot accepts p(x), sequential
    p(x) / L(x)), then deterministic and sampled candidates, duplicates allowed."""
    while True:
        v = rng.randint(2, 4)
        p, law = _law(rng, v, zeros=False), _law(rng, v)
        xs = [x for x in range(v) if p[x] < law[x] < 1]
        if xs:
            break
    cands = [(rng.choice(xs), law)]
    for _ in range(rng.randint(0, 2)):
        cands.append((rng.randrange(v), None) if rng.random() < 0.5 else (_draw(rng, law), law))
    return Instance("onehot", p, tuple(cands))


def _sequential_instance(rng: random.Random, k: int) -> Instance:
    """Deterministic and sampled candidates mixed: i.i.d. from one law, without replacement, or
    from unrelated laws."""
    v = rng.randint(2, 4)
    p, q = _law(rng, v), _law(rng, v, zeros=False)
    cands, drawn = [], []
    for _ in range(rng.randint(1, 3)):
        if rng.random() < 0.3:
            cands.append((rng.randrange(v), None))
            continue
        law = (q, _restrict(q, drawn), _law(rng, v))[k % 3]
        if not sum(law):
            continue
        s = _draw(rng, law)
        drawn.append(s)
        cands.append((s, law))
    return Instance("sequential", p, tuple(cands or [(rng.randrange(v), None)]))


def _residual_setup(rng: random.Random, v: int, head: list) -> tuple:
    """p and a law L zero on ``head`` with a token s, p(s) < L(s) (so s is rejected with positive
    probability), and a head token y with p(y) > 0 (so the residual routes mass to y)."""
    while True:
        p = _law(rng, v, zeros=False)
        law = _restrict(_law(rng, v), head)
        ss = [s for s in range(v) if p[s] < law[s]]
        if sum(law) and ss:
            return p, law, ss


def _ot_instance(rng: random.Random, k: int) -> Instance:
    """Deterministic candidates around one sampled one, a deterministic token held twice. Even
    k: RheoSampling's layout (head with a duplicate, then s ~ L restricted to the tail); odd k:
    the duplicates before and after s, and s's own token held by a deterministic candidate too."""
    v = rng.randint(3, 4)
    head = rng.sample(range(v), rng.randint(1, v - 2))
    y = rng.choice(head)
    p, law, ss = _residual_setup(rng, v, head)
    s = rng.choice(ss)
    if k % 2 == 0:
        dets = head + [y]
        rng.shuffle(dets)
        cands = [(t, None) for t in dets] + [(s, law)]
    else:
        cands = [(y, None), (s, law), (y, None)] + [(t, None) for t in head if t != y]
        if rng.random() < 0.5:
            cands.append((s, None))
    return Instance("ot", p, tuple(cands))


def _ot_wor_instance(rng: random.Random, k: int) -> Instance:
    """A head with a duplicated token, then two or three samples without replacement from the
    tail (k even) or i.i.d. (k odd), deterministic candidates placed anywhere."""
    v = 4
    head = rng.sample(range(v), 1)
    y = head[0]
    p, law, _ = _residual_setup(rng, v, head)
    samples, drawn = [], []
    for _ in range(rng.randint(2, 3)):
        member = _restrict(law, drawn) if k % 2 == 0 else law
        if not sum(member):
            break
        s = _draw(rng, member)
        drawn.append(s)
        samples.append((s, member))
    cands = [(y, None)] + samples + [(y, None)]
    if rng.random() < 0.5:
        cands.insert(rng.randint(0, len(cands)), (rng.randrange(v), None))
    return Instance("ot-wor", p, tuple(cands))


def instances(seed: int = 0, per_rule: int = PER_RULE) -> list[Instance]:
    """The compared family: ``per_rule`` random nodes for each rule of :data:`RULES`."""
    rng = random.Random(seed)
    out = []
    for rule in RULES:
        for k in range(per_rule):
            if rule == "onehot":
                out.append(_onehot_instance(rng))
            elif rule == "sequential":
                out.append(_sequential_instance(rng, k))
            elif rule == "ot":
                out.append(_ot_instance(rng, k))
            else:
                out.append(_ot_wor_instance(rng, k))
    return out


# ---------------------------------------------------------------- planted mutants

def ot_last_duplicate(p, cands):
    """Planted bug: ``rules.ot`` with the residual mass of a token routed to the *last* candidate
    holding it instead of the first."""
    from rheotheory import laws
    from rheotheory.verify import rules as R

    sampled = [i for i, c in enumerate(cands) if c.law is not None]
    if len(sampled) != 1:
        return R.ot(p, cands)
    i_s = sampled[0]
    s = cands[i_s]
    a = R._min1(p[s.token], s.law[s.token])
    emit = (1 - a) * laws.residual(p, s.law)
    cont = [p[0] * 0 for _ in cands]
    cont[i_s] = a
    taken = set()
    for i in reversed(range(len(cands))):
        if cands[i].token not in taken:
            taken.add(cands[i].token)
            cont[i] = cont[i] + emit[cands[i].token]
    return R.Transition(cont, laws.zero_at(emit, list(taken)))


def drop_bonus_walk(rule):
    """Planted bug: PerNodeWalk that emits nothing at a node without kept children (the bonus
    token is dropped)."""
    from rheotheory.verify.walk import Outcome, PerNodeWalk

    class DropBonus(PerNodeWalk):
        def outcomes(self, tree, target, branch, weight=1, observe=None):
            for o in super().outcomes(tree, target, branch, weight, observe):
                last = o.nodes[-1] if o.nodes else 0
                yield Outcome(o.z[:-1], o.nodes, o.weight) if not tree.kept_children(last) else o

    return DropBonus(rule)


#: The planted mutants: name -> (what is changed, where). tests/test_coq.py asserts each is caught.
MUTANTS = {
    "onehot-is-sequential": "the Coq onehot replaced by sequential (rules comparison, onehot instances)",
    "ot-last-duplicate": "ot routes the residual to the last duplicate (rules comparison, ot instances)",
    "walk-drops-bonus": "PerNodeWalk drops the bonus token (walk comparison, law of Z)",
}


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


def _coq_cands(v: int, cands) -> str:
    return "[:: " + "; ".join(_coq_cand(v, t, law) for t, law in cands) + "]"


HEADER = """From mathcomp Require Import all_ssreflect ssralg ssrnum ssrint rat.
From Rheo Require Import Laws Sequential Ot OtWor Tree Conditions.
Local Open Scope ring_scope.
Definition show (x : rat) := (numq x, denq x).
Definition showt V (t : transition rat_realFieldType V) :=
  (map show (cont t), map (fun y => show (emit t y)) (ords V)).
"""


def coq_source(insts: list[Instance], names: dict | None = None) -> str:
    """One ``Eval vm_compute`` per instance of the transition law of the Coq rule; ``names``
    overrides the Coq definition evaluated for a rule (a planted mutant)."""
    names = {**COQ_NAMES, **(names or {})}
    lines = [HEADER]
    for inst in insts:
        v = inst.vocab
        lines.append(f"Eval vm_compute in showt {v} ({names[inst.rule]} {_coq_law(inst.p)} "
                     f"{_coq_cands(v, inst.cands)}).")
    return "\n".join(lines) + "\n"


_PAIR = re.compile(r"\(\s*\(?(-?\d+)\)?%Z\s*,\s*\(?(-?\d+)\)?%Z\s*\)")


def _blocks(text: str) -> list[str]:
    """The values coqc printed, one per ``Eval``."""
    blocks, cur = [], None
    for line in text.splitlines():
        if line.startswith("     = "):
            cur = [line[7:]]
        elif line.startswith("     : ") and cur is not None:
            blocks.append(" ".join(cur))
            cur = None
        elif cur is not None:
            cur.append(line)
    return blocks


def _fractions(block: str) -> list[Fraction]:
    return [Fraction(int(a), int(b)) for a, b in _PAIR.findall(block)]


def parse_coq_output(text: str, insts: list[Instance]) -> list[tuple[list, list]]:
    """Split coqc's output into one (cont, emit) per instance."""
    blocks = _blocks(text)
    if len(blocks) != len(insts):
        raise RuntimeError(f"coqc printed {len(blocks)} results for {len(insts)} instances:\n{text[-2000:]}")
    out = []
    for block, inst in zip(blocks, insts):
        nums = _fractions(block)
        k = len(inst.cands)
        if len(nums) != k + inst.vocab:
            raise RuntimeError(f"unexpected Coq result for {inst}: {block}")
        out.append((nums[:k], nums[k:]))
    return out


def _run_coq(source: str) -> str:
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "Compare.v"
        f.write_text(source)
        r = subprocess.run(["coqc", "-R", str(HERE), "Rheo", "-w", "-notation-overridden,-ambiguous-paths",
                            str(f)], capture_output=True, text=True, timeout=COQ_TIMEOUT)
    if r.returncode:
        raise RuntimeError(f"coqc failed:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    return r.stdout


def coq_transitions(insts: list[Instance], names: dict | None = None) -> list[tuple[list, list]]:
    """Run the Coq rules on ``insts`` (the development must be built)."""
    return parse_coq_output(_run_coq(coq_source(insts, names)), insts)


def mismatches(insts: list[Instance], coq: list, py: list) -> list[str]:
    """Every instance where a continue or emit weight differs, as one line each."""
    bad = []
    for i, (inst, c, p) in enumerate(zip(insts, coq, py)):
        if c != p:
            bad.append(f"instance {i} ({inst.rule}, V={inst.vocab}): Coq {c} != Python {p}")
    return bad


# ---------------------------------------------------------------- the walk

#: Vocabulary and depth of the enumerated trees; Z has at most WALK_DEPTH + 1 tokens.
WALK_V, WALK_DEPTH = 2, 2

#: The two sampling laws of the walk family, by name.
WALK_LAWS = {"a": (Fraction(1, 4), Fraction(3, 4)), "b": (Fraction(2, 3), Fraction(1, 3))}

#: The kept children a node may have: (token, law name or None for deterministic), in creation
#: order. Every tree of the family gives each node with children one of these lists.
NODE_OPTIONS = (
    (),
    ((0, None),),
    ((1, None),),
    ((0, None), (1, None)),
    ((1, None), (0, None)),
    ((0, None), (0, None)),
    ((0, "a"),),
    ((1, "b"),),
    ((0, None), (1, "a")),
    ((1, None), (0, "b")),
)


#: The target's probability of token 0 after each prefix of length up to 2 (distinct); 1/2 after
#: longer ones.
WALK_TARGETS = {(): (2, 5), (0,): (1, 3), (1,): (3, 4), (0, 0): (1, 5), (0, 1): (5, 8), (1, 0): (1, 2),
                (1, 1): (2, 7)}


def _target(prefix: tuple) -> tuple:
    """The target law after ``prefix``."""
    n, d = WALK_TARGETS.get(prefix, (1, 2))
    return (Fraction(n, d), 1 - Fraction(n, d))


def walk_trees() -> list[tuple]:
    """Every tree of the family: a tree is the root's option, then one option per root child (a
    child's children are leaves)."""
    trees = []
    for root in NODE_OPTIONS:
        for kids in itertools.product(NODE_OPTIONS, repeat=len(root)):
            trees.append((root, kids))
    return trees


def walk_rules(tree) -> list[str]:
    """The rules compared on ``tree`` (all of :data:`RULES`: every node has at most one sampled
    child, so ot applies)."""
    return list(RULES)


def all_z() -> list[tuple]:
    return [z for n in range(1, WALK_DEPTH + 2) for z in itertools.product(range(WALK_V), repeat=n)]


def _python_tree(tree):
    import numpy as np

    from rheotheory.trees.tree import DET, SAMPLED, SampleGroup, Tree

    t = Tree(Fraction(1))
    root, kids = tree

    def add(parent, spec):
        tok, law = spec
        if law is None:
            return t.add(parent, DET, Fraction(1), token=tok)
        g = SampleGroup(base=np.array(WALK_LAWS[law], dtype=object), mode="iid")
        return t.add(parent, SAMPLED, Fraction(1), token=tok, group=g)

    for spec, sub in zip(root, kids):
        idx = add(0, spec)
        for s in sub:
            add(idx, s)
    return t.finish()


def python_zlaw(tree, rule: str, walker=None) -> dict:
    """P(Z = z) for every z of the walk of ``rule`` on ``tree`` (PerNodeWalk, exact)."""
    import numpy as np

    from rheotheory.verify import rules as R
    from rheotheory.verify.walk import EnumerateBranch, PerNodeWalk

    walk = (walker or PerNodeWalk)(R.VERIFIERS[rule])
    law: dict = {}
    target = lambda node, prefix: np.array(_target(prefix), dtype=object)  # noqa: E731
    for o in walk.outcomes(_python_tree(tree), target, EnumerateBranch()):
        law[o.z] = law.get(o.z, Fraction(0)) + Fraction(o.weight)
    return law


def fresh(u: tuple, rest: tuple) -> Fraction:
    """p(rest | u): ``rest`` continued by target samples after the prefix ``u``."""
    out = Fraction(1)
    for y in rest:
        out *= _target(u)[y]
        u = u + (y,)
    return out


def extended(zlaw: dict, z: tuple) -> Fraction:
    """The extended output law at z (docs/theory.md section 4) from the law of Z."""
    l = len(z)
    total = sum(zlaw.get(z[:k], 0) * fresh(z[:k], z[k:]) for k in range(1, l))
    return total + sum(w for zz, w in zlaw.items() if len(zz) >= l and zz[:l] == z)


def _coq_walk(tree) -> str:
    root, kids = tree

    def cands(option):
        return "[:: " + "; ".join(
            f"(Det {_coq_token(WALK_V, t)})" if law is None
            else f"(Samp {_coq_token(WALK_V, t)} {_coq_law(WALK_LAWS[law])})" for t, law in option) + "]"

    def node(option, children):
        kids_src = "[:: " + "; ".join(children) + "]"
        return f"(Node (fun f => f {cands(option)}) RULE (fun _ i => nth leaf {kids_src} i))"

    return node(root, [node(sub, ["leaf"] * len(sub)) if sub else "leaf" for sub in kids])


def walk_source(trees: list, names: dict | None = None) -> tuple[str, list]:
    """One ``Eval vm_compute`` per (tree, rule): zlaw and ext at every z of :func:`all_z`."""
    names = {**COQ_NAMES, **(names or {})}
    arms = "\n".join(f"  | [:: {'; '.join(f'{t}%N' for t in u)}] => {_coq_law(_target(u))}"
                     for u in WALK_TARGETS)
    zs = "[:: " + "; ".join("[:: " + "; ".join(_coq_token(WALK_V, t) for t in z) + "]" for z in all_z()) + "]"
    lines = [HEADER,
             f"Definition leaf := Bonus rat_realFieldType {WALK_V}.",
             f"Definition tgt (u : seq 'I_{WALK_V}) : 'I_{WALK_V} -> rat :=",
             "  match map val u with",
             arms.replace("[:: ]", "[::]"),
             f"  | _ => {_coq_law(_target((9,)))}",
             "  end.",
             f"Definition zs : seq (seq 'I_{WALK_V}) := {zs}."]
    cases = []
    for tree in trees:
        for rule in walk_rules(tree):
            w = _coq_walk(tree).replace("RULE", names[rule])
            lines.append(f"Eval vm_compute in (map (fun z => show (zlaw tgt {w} [::] z)) zs, "
                         f"map (fun z => show (ext tgt {w} [::] z)) zs).")
            cases.append((tree, rule))
    return "\n".join(lines) + "\n", cases


def coq_walk_laws(trees: list, names: dict | None = None) -> list[tuple[tuple, str, list, list]]:
    """(tree, rule, zlaw values, ext values) over :func:`all_z`, from Coq."""
    src, cases = walk_source(trees, names)
    blocks = _blocks(_run_coq(src))
    if len(blocks) != len(cases):
        raise RuntimeError(f"coqc printed {len(blocks)} walk results for {len(cases)} cases")
    n = len(all_z())
    out = []
    for (tree, rule), block in zip(cases, blocks):
        nums = _fractions(block)
        if len(nums) != 2 * n:
            raise RuntimeError(f"unexpected Coq walk result for {tree}, {rule}: {block}")
        out.append((tree, rule, nums[:n], nums[n:]))
    return out


def walk_mismatches(coq: list, walker=None) -> list[str]:
    """Every (tree, rule) where the Python walk's law of Z, or the extended law computed from it,
    differs from Coq's zlaw or ext."""
    bad = []
    zs = all_z()
    for tree, rule, czl, cext in coq:
        zl = python_zlaw(tree, rule, walker)
        pz = [zl.get(z, Fraction(0)) for z in zs]
        pext = [extended(zl, z) for z in zs]
        if any(z not in zs for z in zl):
            bad.append(f"{rule} on {tree}: Z outside the compared lengths: {sorted(zl)}")
        elif pz != czl or pext != cext:
            bad.append(f"{rule} on {tree}: law of Z {'differs' if pz != czl else 'agrees'}, "
                       f"extended law {'differs' if pext != cext else 'agrees'}")
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
    print(f"rules: {len(insts)} random instances ({PER_RULE} per rule), "
          f"{sum(len(i.cands) + i.vocab for i in insts)} numbers compared, {len(bad)} mismatches")
    for line in bad[:10]:
        print(line)
    trees = walk_trees()
    walks = coq_walk_laws(trees)
    wbad = walk_mismatches(walks)
    print(f"walk: {len(trees)} trees x {len(RULES)} rules, {2 * len(walks) * len(all_z())} numbers "
          f"compared, {len(wbad)} mismatches")
    for line in wbad[:10]:
        print(line)
    return 1 if bad or wbad else 0


if __name__ == "__main__":
    sys.exit(main())
