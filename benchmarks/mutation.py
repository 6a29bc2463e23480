"""Mutation testing of the verification core with mutmut (docs/mutation_report.md).

Runs ``mutmut run`` (configured in ``[tool.mutmut]`` of pyproject.toml: the files it mutates and
the killer suite ``tests/killers`` it runs against each mutant) on the functions of the core
listed in :data:`CORE`, then counts mutmut's verdicts for them and writes
``benchmarks/results/mutation.json`` with its provenance. Not a test and not in CI: it takes
tens of minutes on two cores.

    python benchmarks/mutation.py              # generate, run every core mutant, summarise
    python benchmarks/mutation.py --summary    # summarise the last run only
    python benchmarks/mutation.py --jobs 2     # parallel workers (default 1)

mutmut keeps its state in ``mutants/`` (git-ignored); delete it for a run from scratch.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: The sampling and verification core, as mutmut mutant-name patterns (module + function;
#: methods are ``xǁClassǁmethod``). Left out of the core: registration and lookup of verifiers,
#: ``__repr__``, configuration validation (``__post_init__``, ``parse_shape``), static shape
#: helpers, the OT optimum modules (``optimum.py``, ``lp_optimum.py``: bounds, not verifiers).
CORE = [
    # per-node rules
    "rheotheory.verify.rules.xǁTransitionǁtotal__mutmut_*",
    "rheotheory.verify.rules.x__one__mutmut_*",
    "rheotheory.verify.rules.x__min1__mutmut_*",
    "rheotheory.verify.rules.x_sequential__mutmut_*",
    "rheotheory.verify.rules.x_onehot__mutmut_*",
    "rheotheory.verify.rules.x__kseq_c__mutmut_*",
    "rheotheory.verify.rules.x_kseq_rho__mutmut_*",
    "rheotheory.verify.rules.x_kseq__mutmut_*",
    "rheotheory.verify.rules.x_ot__mutmut_*",
    "rheotheory.verify.rules.x_ot_wor__mutmut_*",
    "rheotheory.verify.rules.x_acceptance__mutmut_*",
    "rheotheory.verify.rules.x_output_law__mutmut_*",
    # the walk and the branches (exact enumeration and sampling of the verifier's choices)
    "rheotheory.verify.walk.xǁEnumerateBranchǁchoose__mutmut_*",
    "rheotheory.verify.walk.xǁSampleBranchǁchoose__mutmut_*",
    "rheotheory.verify.walk.xǁPerNodeWalkǁoutcomes__mutmut_*",
    "rheotheory.verify.walk.xǁPerNodeWalkǁ_walk__mutmut_*",
    "rheotheory.verify.walk.xǁPerNodeWalkǁ_transition__mutmut_*",
    "rheotheory.verify.walk.x__law_key__mutmut_*",
    "rheotheory.verify.walk.x_draw_pending__mutmut_*",
    "rheotheory.verify.walk.x_tree_verifier__mutmut_*",
    "rheotheory.verify.walk.x_method_tree_verifier__mutmut_*",
    "rheotheory.verify.walk.x_sample_outcome__mutmut_*",
    # tree-level verifiers
    "rheotheory.verify.block.x__one__mutmut_*",
    "rheotheory.verify.block.x_point_mass__mutmut_*",
    "rheotheory.verify.block.x_member_law__mutmut_*",
    "rheotheory.verify.block.x_ratio_weight__mutmut_*",
    "rheotheory.verify.block.x_residual_step__mutmut_*",
    "rheotheory.verify.block.x_root_emission__mutmut_*",
    "rheotheory.verify.block.xǁBlockVerifierǁoutcomes__mutmut_*",
    "rheotheory.verify.block.xǁBlockVerifierǁ_descend__mutmut_*",
    "rheotheory.verify.block.xǁBlockVerifierǁ_verify__mutmut_*",
    "rheotheory.verify.traversal.xǁTraversalVerifierǁoutcomes__mutmut_*",
    "rheotheory.verify.traversal.xǁTraversalVerifierǁ_visit__mutmut_*",
    "rheotheory.verify.traversal.xǁTraversalVerifierǁ_children__mutmut_*",
    "rheotheory.verify.traversal.xǁTraversalVerifierǁ_leaf__mutmut_*",
    "rheotheory.verify.traversal_ot.x_samples_first__mutmut_*",
    "rheotheory.verify.traversal_ot.xǁTraversalOTVerifierǁ_visit__mutmut_*",
    # sampling: the tree's draws and the static builder
    "rheotheory.trees.tree.xǁReplayChooserǁdraw__mutmut_*",
    "rheotheory.trees.tree.xǁRandomChooserǁdraw__mutmut_*",
    "rheotheory.trees.tree.xǁTreeǁadd__mutmut_*",
    "rheotheory.trees.tree.xǁTreeǁtoken__mutmut_*",
    "rheotheory.trees.tree.xǁTreeǁmember_law__mutmut_*",
    "rheotheory.trees.tree.xǁTreeǁdraw_law__mutmut_*",
    "rheotheory.trees.tree.xǁTreeǁpending_draws__mutmut_*",
    "rheotheory.trees.tree.xǁTreeǁresolve__mutmut_*",
    "rheotheory.trees.tree.xǁTreeǁresolve_coarse__mutmut_*",
    "rheotheory.trees.tree.xǁTreeǁfinish__mutmut_*",
    "rheotheory.trees.tree.xǁTreeǁcandidate__mutmut_*",
    "rheotheory.trees.static.x_build_static__mutmut_*",
]

#: Surviving mutants shown equivalent to the original (no input can tell them apart), with the
#: reason. Every other survivor gets a killing test in ``tests/killers`` instead.
EQUIVALENT = {
    "rheotheory.verify.block.xǁBlockVerifierǁ_descend__mutmut_29":
        "draw_pending starts from {} instead of the tokens known from the levels above: a chain's "
        "pending draws at one level are siblings of that level's node, which never depend on "
        "tokens of other levels (sample groups are sibling sets)",
    "rheotheory.verify.block.xǁBlockVerifierǁ_descend__mutmut_34": "same as _descend__mutmut_29 (known omitted)",
    "rheotheory.verify.block.xǁBlockVerifierǁ_verify__mutmut_36":
        "range(gamma, -2, -1): the loop always returns at i == 0, so i = -1 is never reached",
    "rheotheory.verify.block.x_ratio_weight__mutmut_6": "r <= 1 returns r where r == 1, the same value and type as r*0+1",
    "rheotheory.verify.rules.x__min1__mutmut_5": "as block ratio_weight__mutmut_6: r <= 1 returns r == 1 itself",
    "rheotheory.verify.block.x_residual_step__mutmut_18":
        "S*1 instead of S*0 where den = S + 1 - a <= 0: S >= 0 and a <= 1 force S = 0 there",
    "rheotheory.verify.block.x_residual_step__mutmut_20":
        "normalise(R, None) recomputes the sum S = total(R) it was given",
    "rheotheory.verify.block.x_residual_step__mutmut_22": "same as residual_step__mutmut_20",
    "rheotheory.verify.rules.x__kseq_c__mutmut_5": "beta*1 + k instead of beta*0 + k inside `if beta == 0`",
    "rheotheory.verify.rules.x_kseq__mutmut_6": "p/1 instead of p*1: the same values in a new array",
    "rheotheory.verify.rules.x_output_law__mutmut_2": "emit/1 instead of emit*1: the same values in a new array",
    "rheotheory.verify.rules.x_kseq__mutmut_69":
        "p*1 instead of p*0 where fail = (1-beta)^k = 0: then beta = 1, every candidate is accepted "
        "(a = m/q = 1), rest = 0 and emit = rest*resid = 0 either way (exactly; in float up to "
        "round-off when a float beta sums to 1.0)",
    "rheotheory.verify.rules.x_kseq_rho__mutmut_21":
        "gap(1) < 0 instead of <= 0: gap(1) = 0 only for p = q or k = 1, where the bisection's "
        "upper end halves down to 1.0 within the 60 steps (for k < 2^7), the same rho",
    "rheotheory.verify.rules.x_kseq_rho__mutmut_61":
        "rho > k instead of rho >= k: at rho = k, c(beta) <= k = rho holds anyway (Bernoulli), so "
        "the loop returns on its first clause",
    "rheotheory.verify.walk.xǁSampleBranchǁchoose__mutmut_2":
        "always concatenating as float64: laws.inverse_cdf computes in float64 anyway",
    "rheotheory.verify.walk.xǁSampleBranchǁchoose__mutmut_9": "dtype=None: inverse_cdf converts to float64 anyway",
    "rheotheory.verify.walk.xǁSampleBranchǁchoose__mutmut_11": "dtype omitted: as choose__mutmut_9",
    "rheotheory.verify.traversal.xǁTraversalVerifierǁ_children__mutmut_56":
        "p_root=None handed to a child's visit: p_root is read only at the root's leaf (v == 0), "
        "never inside a child's subtree",
    "rheotheory.trees.static.x_build_static__mutmut_5":
        "the score `one` of a static tree's nodes: a static tree is never pruned and no verifier "
        "reads a score, so any value (None, 2, a float) builds the same tree and law",
    "rheotheory.trees.static.x_build_static__mutmut_7": "as build_static__mutmut_5 (score in another number type)",
    "rheotheory.trees.static.x_build_static__mutmut_10": "as build_static__mutmut_5 (score 2)",
    "rheotheory.trees.static.x_build_static__mutmut_12": "as build_static__mutmut_5 (root score None)",
    "rheotheory.trees.static.x_build_static__mutmut_102": "as build_static__mutmut_5 (sampled nodes' score None)",
    "rheotheory.trees.static.x_build_static__mutmut_84":
        "SampleGroup.key=None: nothing in the package reads a group's key",
    "rheotheory.trees.static.x_build_static__mutmut_20":
        "n_children.get(parent, None): the default is never used, the parsed shape is sorted BFS "
        "so every parent's entry exists before its children are counted",
    "rheotheory.trees.static.x_build_static__mutmut_22": "as build_static__mutmut_20 (no default)",
    "rheotheory.trees.static.x_build_static__mutmut_25": "as build_static__mutmut_20 (default 1)",
    "rheotheory.trees.tree.xǁTreeǁadd__mutmut_2":
        "pos = None for a node without a sample group: pos is read only for group members "
        "(member_law, pending_draws) and in canonical_key, where every ungrouped node gets the "
        "same value, so equal keys stay equal",
    "rheotheory.trees.tree.xǁTreeǁadd__mutmut_3": "as add__mutmut_2 (pos = 1)",
    "rheotheory.trees.tree.xǁTreeǁfinish__mutmut_15":
        "range(2, n) skips node 1 when dropping orphans: node 1's parent is the root, always kept",
    "rheotheory.verify.walk.x_method_tree_verifier__mutmut_9":
        "`A and B or callable(tv)`: differs only for a callable TreeVerifier instance or a callable "
        "None; no TreeVerifier defines __call__",
    "rheotheory.trees.tree.xǁTreeǁresolve_coarse__mutmut_13":
        "rest_mass >= 0: with no mass outside the block the coarse law equals the member law, so "
        "the coarse draw and the full draw ask the chooser the same law and set the same token",
}

#: mutmut's exit-code verdicts (mutmut.stats.status_by_exit_code), folded into the report's classes.
VERDICTS = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests", 36: "timeout", -24: "timeout",
            24: "timeout", 152: "timeout", 255: "timeout", None: "not checked", 34: "skipped", 37: "type check"}


def core_mutants() -> dict[str, object]:
    """Core mutant name -> mutmut exit code (None: not run), from mutmut's state in ``mutants/``."""
    out = {}
    for meta in sorted((ROOT / "mutants").rglob("*.py.meta")):
        codes = json.loads(meta.read_text()).get("exit_code_by_key", {})
        for name, code in codes.items():
            if any(fnmatch.fnmatchcase(name, pat) for pat in CORE):
                out[name] = code
    return out


def summarise() -> dict:
    codes = core_mutants()
    verdicts = {name: VERDICTS.get(code, "suspicious") for name, code in codes.items()}
    for name in EQUIVALENT:
        if verdicts.get(name) == "survived":
            verdicts[name] = "equivalent"
    counts = Counter(verdicts.values())
    killed = counts["killed"] + counts["timeout"]
    non_equivalent = len(codes) - counts["equivalent"] - counts["not checked"]
    by_function = Counter(re.sub(r"__mutmut_\d+$", "", n) for n in codes)
    return {
        "tool": f"mutmut {_version('mutmut')}",
        "mutants": len(codes),
        "counts": dict(sorted(counts.items())),
        "score": round(killed / non_equivalent, 4) if non_equivalent else None,
        "equivalent": {n: EQUIVALENT[n] for n in sorted(EQUIVALENT) if verdicts.get(n) == "equivalent"},
        "survived": sorted(n for n, v in verdicts.items() if v == "survived"),
        "not_killed_other": sorted(n for n, v in verdicts.items() if v not in ("killed", "survived")),
        "mutants_by_function": dict(sorted(by_function.items())),
    }


def _version(pkg: str) -> str:
    from importlib import metadata

    return metadata.version(pkg)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1, help="mutmut worker processes (default 1)")
    ap.add_argument("--summary", action="store_true", help="only summarise the last run")
    ap.add_argument("mutants", nargs="*", help="mutant names or patterns to (re)run instead of the whole core")
    args = ap.parse_args(argv)
    if args.jobs < 1:
        ap.error("--jobs must be >= 1")
    started = time.time()
    if not args.summary:
        mutmut = shutil.which("mutmut") or "mutmut"
        cmd = ["nice", "-n", "10", mutmut, "run", "--max-children", str(args.jobs), *(args.mutants or CORE)]
        rc = subprocess.run(cmd, cwd=ROOT).returncode
        if rc != 0:
            print(f"mutmut exited with {rc}", file=sys.stderr)
    summary = summarise()
    summary["wall_seconds"] = round(time.time() - started, 1)
    out = ROOT / "benchmarks" / "results" / "mutation.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=1, ensure_ascii=False) + "\n")
    from rheotheory.provenance import write_provenance

    write_provenance(out, started=started)
    print(json.dumps({k: summary[k] for k in ("tool", "mutants", "counts", "score")}, indent=1))
    for name in summary["survived"]:
        print("survived:", name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
