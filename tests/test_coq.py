"""The Coq development (proofs/coq/): it builds, admits nothing unannounced, the rules it proves
lossless compute exactly what rheotheory.verify.rules computes, and its walk (Tree.v's law of Z
and extended law) is PerNodeWalk's on every tree of a small family; each planted mutant of
proofs/coq/compare.py (a Coq onehot replaced by sequential, ot routing to the last duplicate, a
walk that drops the bonus token) and of rheotheory.testing.mutants is caught. The tests that
need coqc skip without it, except in CI's proofs tier (RHEO_PROOFS_NO_SKIP=1, `-m proofs`), where
a missing coqc fails them."""

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from rheotheory import laws
from rheotheory.testing import mutants
from rheotheory.verify import Candidate, output_law, rules

ROOT = Path(__file__).resolve().parents[1]
COQ = ROOT / "proofs" / "coq"

#: Set by CI's proofs tier (.ci/run): there the Coq tests must run.
NO_SKIP = os.environ.get("RHEO_PROOFS_NO_SKIP") == "1"

needs_coq = pytest.mark.skipif(
    not NO_SKIP and shutil.which("coqc") is None,
    reason="coqc absent (apt-get install coq libcoq-mathcomp-ssreflect libcoq-mathcomp-algebra "
           "libcoq-mathcomp-field); CI's proofs tier runs these tests")


def _load(name):
    spec = importlib.util.spec_from_file_location(f"coq_{name}", COQ / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # NOTE: dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


compare = _load("compare")
check = _load("check_assumptions")

#: Instances whose target law the Coq side receives perturbed (two entries swapped): each must
#: then disagree with the Python rule on the unperturbed instance (one per rule).
PERTURBED = (1, 45, 85, 125)


def _perturb(inst):
    p = list(inst.p)
    i = max(range(len(p)), key=lambda k: p[k])
    j = min(range(len(p)), key=lambda k: p[k])
    p[i], p[j] = p[j], p[i]
    return compare.Instance(inst.rule, tuple(p), inst.cands)


@pytest.fixture(scope="module")
def coq_results():
    """The Coq transitions of the instance family, then of the perturbed copies (one coqc run)."""
    compare.build()
    insts = compare.instances()
    extra = [_perturb(insts[i]) for i in PERTURBED]
    out = compare.coq_transitions(insts + extra)
    return insts, out[:len(insts)], out[len(insts):]


@pytest.mark.proofs
@needs_coq
def test_the_development_builds_and_no_theorem_rests_on_an_axiom():
    compare.build()
    r = subprocess.run([sys.executable, str(COQ / "check_assumptions.py")], capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 admitting keywords (0 announced)" in r.stdout
    printed, closed = map(int, re.search(r"(\d+) theorems, (\d+) closed", r.stdout).groups())
    assert printed == closed >= len(check.theorems()) >= 15


@pytest.fixture(scope="module")
def coq_walks():
    """Coq's law of Z and extended law on every tree of compare.walk_trees(), for every rule."""
    compare.build()
    return compare.coq_walk_laws(compare.walk_trees())


@pytest.mark.proofs
@needs_coq
def test_coq_rules_equal_the_python_rules_exactly(coq_results):
    insts, coq, _ = coq_results
    assert {i.rule for i in insts} == set(compare.RULES) == {"onehot", "sequential", "ot", "ot-wor"}
    assert len(insts) == 160
    py = [compare.python_transition(i) for i in insts]
    assert compare.mismatches(insts, coq, py) == []
    # the comparison is not vacuous: sampled candidates, duplicates, non-trivial residuals, emit mass
    assert sum(any(law is not None for _, law in i.cands) for i in insts) >= 140
    assert all(any(law is not None for _, law in i.cands) for i in insts if i.rule == "onehot")
    assert all(len({t for t, law in i.cands if law is None}) < sum(law is None for _, law in i.cands)
               for i in insts if i.rule in ("ot", "ot-wor"))
    assert sum(any(x != 0 for x in c[1]) for c in coq) >= 50


@pytest.mark.proofs
@needs_coq
@pytest.mark.parametrize("rule,mutant", [("sequential", mutants.sequential_skip_residual),
                                         ("ot", mutants.ot_skip_residual),
                                         ("ot-wor", mutants.ot_wor_skip_residual),
                                         ("ot", compare.ot_last_duplicate)])
def test_a_planted_bug_in_a_python_rule_is_caught(coq_results, rule, mutant):
    insts, coq, _ = coq_results
    py = [compare.python_transition(i, {rule: mutant}) for i in insts]
    bad = compare.mismatches(insts, coq, py)
    assert bad and all(f"({rule}," in line for line in bad)
    if mutant is compare.ot_last_duplicate:  # every ot instance routes residual mass to a duplicate
        assert len(bad) == sum(i.rule == "ot" for i in insts)


@pytest.mark.proofs
@needs_coq
def test_a_coq_onehot_replaced_by_sequential_is_caught_on_every_onehot_instance(coq_results):
    insts = [i for i in coq_results[0] if i.rule == "onehot"]
    mutated = compare.coq_transitions(insts, {"onehot": "sequential"})
    assert len(compare.mismatches(insts, mutated, [compare.python_transition(i) for i in insts])) == len(insts)


@pytest.mark.proofs
@needs_coq
def test_a_perturbed_instance_given_to_coq_is_caught(coq_results):
    insts, _, perturbed = coq_results
    orig = [insts[i] for i in PERTURBED]
    assert len(compare.mismatches(orig, perturbed, [compare.python_transition(i) for i in orig])) == len(orig)


@pytest.mark.proofs
@needs_coq
def test_the_coq_walk_is_per_node_walk_on_every_tree_of_the_family(coq_walks):
    trees = compare.walk_trees()
    assert len(trees) == 541 and len(coq_walks) == len(trees) * len(compare.RULES)
    assert compare.walk_mismatches(coq_walks) == []
    # not vacuous: on a fixed tree with sampled children the walk is not lossless (onehot is, on
    # every tree: its per-node law is the target's whatever the candidates), and Z reaches its
    # longest length
    zs = compare.all_z()
    target = [compare.fresh((), z) for z in zs]
    assert all(ext == target for _, rule, _, ext in coq_walks if rule == "onehot")
    assert sum(ext != target for _, _, _, ext in coq_walks) >= 900
    assert any(zl[zs.index((0, 0, 0))] != 0 for _, _, zl, _ in coq_walks)


@pytest.mark.proofs
@needs_coq
def test_a_walk_that_drops_the_bonus_token_is_caught(coq_walks):
    bad = compare.walk_mismatches(coq_walks, walker=compare.drop_bonus_walk)
    assert len(bad) == len(coq_walks)


@pytest.mark.proofs
@needs_coq
def test_a_planted_bug_in_a_python_rule_is_caught_by_the_walk(coq_walks, monkeypatch):
    monkeypatch.setitem(rules.VERIFIERS, "ot", mutants.ot_skip_residual)
    bad = compare.walk_mismatches([c for c in coq_walks if c[1] == "ot"])
    assert len(bad) >= 100 and all(line.startswith("ot on ") for line in bad)


def test_the_builder_does_not_give_c1_given_the_history_and_stays_lossless():
    """proofs/counterexamples/c1-history-next.json: with the proxy next, a descendant of a node's
    sampled child displaces the node's deterministic sibling for one value of the sample only, so
    given the views of the ancestors the sample's law is not its member law (C1 as tree_rheo.py
    reads it fails), yet ot and sequential are exactly lossless: the rank property of Builder.v,
    not C1 given the whole history, is what the builder gives."""
    from rheotheory import ToyPair, certify, make_method

    spec = importlib.util.spec_from_file_location("tree_rheo_c1", ROOT / "proofs" / "tree_rheo.py")
    tree_rheo = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(ROOT / "proofs"))
    try:
        spec.loader.exec_module(tree_rheo)
    finally:
        sys.path.remove(str(ROOT / "proofs"))
    pair = ToyPair.load(ROOT / "proofs" / "counterexamples" / "c1-history-next.json")
    cfg = dict(top_k=3, depth=3, budget=6, proxy="next")
    cond = tree_rheo.conditions(pair, make_method("rheo", **cfg))
    assert cond["c1_bad"] == 3 and cond["c1_contexts"] == 4
    for ver in ("ot", "sequential"):
        cert = certify(pair, make_method("rheo", verifier=ver, **cfg))
        assert cert.lossless and cert.max_deviation == 0


def test_the_coq_output_parser_reads_what_coqc_prints():
    inst = compare.Instance("ot", (Fraction(1, 2), Fraction(1, 2)), ((0, None), (1, (Fraction(1, 3), Fraction(2, 3)))))
    text = ("     = ([:: (1%Z, 4%Z); (3%Z, 4%Z)],\n        [:: (0%Z, 1%Z); (0%Z, 1%Z)])\n"
            "     : seq (int * int) * seq (int * int)\n")
    assert compare.parse_coq_output(text, [inst]) == [([Fraction(1, 4), Fraction(3, 4)], [0, 0])]
    with pytest.raises(RuntimeError):
        compare.parse_coq_output(text, [inst, inst])
    src = compare.coq_source([inst])
    assert "Eval vm_compute in showt 2 (ot (@law_of 2 [:: (Q 1 2); (Q 1 2)])" in src
    assert "(Samp (@Ordinal 2 1 erefl) (@law_of 2 [:: (Q 1 3); (Q 2 3)]))" in src


def test_the_assumption_check_flags_an_unannounced_admit(tmp_path):
    for p in COQ.glob("*.v"):
        shutil.copy(p, tmp_path / p.name)
    assert check.scan(tmp_path) == []
    (tmp_path / "Laws.v").write_text((COQ / "Laws.v").read_text() + "\n(* Admitted in a comment *)\n")
    assert check.scan(tmp_path) == []
    (tmp_path / "Laws.v").write_text((COQ / "Laws.v").read_text()
                                     + "\nLemma planted : 1 = 2.\nProof. Admitted.\nAxiom ax : False.\n")
    hits = check.scan(tmp_path)
    assert hits == ["Laws.v: Proof. Admitted.", "Laws.v: Axiom ax : False."]
    assert not set(hits) <= check.announced()


def _q(*xs):
    return laws.exact_law([str(Fraction(x)) for x in xs])


def test_the_coq_counterexamples_hold_for_the_python_rules():
    """Conditions.v's computed counterexamples, recomputed with rheotheory.verify.rules."""
    # C1 without C2: the deterministic child 0 is kept before s only when s = 1
    p, L = _q(Fraction(1, 2), Fraction(1, 2), 0), _q(0, Fraction(1, 2), Fraction(1, 2))
    views = [(Fraction(1, 2), [Candidate(0), Candidate(1, L)]), (Fraction(1, 2), [Candidate(2, L)])]
    for rule, expected in ((rules.sequential, Fraction(3, 4)), (rules.ot, Fraction(1, 2))):
        out = sum(w * output_law(rule(p, c), c) for w, c in views)
        assert out[0] == expected
    # size-biased sampled child
    p, L = _q(Fraction(1, 2), Fraction(1, 2)), _q(Fraction(1, 4), Fraction(3, 4))
    z = sum(x * x for x in L)
    for rule in (rules.ot, rules.sequential):
        out = sum(L[s] * L[s] / z * output_law(rule(p, [Candidate(s, L)]), [Candidate(s, L)]) for s in (0, 1))
        assert out[0] == Fraction(2, 5) and p[0] == Fraction(1, 2)


def test_ci_runs_the_proofs_tier_without_skips():
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "libcoq-mathcomp-ssreflect" in run and "make -C proofs/coq" in run
    assert "RHEO_PROOFS_NO_SKIP=1 run_tier proofs" in run and "-m proofs" in run
    assert '"proofs: ' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert any("mark.proofs" in line for line in Path(__file__).read_text().splitlines())
