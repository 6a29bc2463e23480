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
RESULTS = ROOT / "benchmarks" / "results" / "mutation.json"

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
    "rheotheory.verify.gbv.x_rank_order__mutmut_*",
    "rheotheory.verify.gbv.x_max_of_k_law__mutmut_*",
    "rheotheory.verify.gbv.x_drafted_paths__mutmut_*",
    "rheotheory.verify.gbv.xǁGreedyBlockVerifierǁoutcomes__mutmut_*",
    "rheotheory.verify.gbv.xǁGreedyBlockVerifierǁselect__mutmut_*",
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
    # the dynamic builder (EAGLE-2 top-K with global pruning, RheoSampling) and its draft memo
    "rheotheory.trees.dynamic.xǁExpansionCacheǁranked__mutmut_*",
    "rheotheory.trees.dynamic.xǁExpansionCacheǁexpansion_outcomes__mutmut_*",
    "rheotheory.trees.dynamic.xǁExpansionCacheǁtail__mutmut_*",
    "rheotheory.trees.dynamic.x__proxy__mutmut_*",
    "rheotheory.trees.dynamic.x_build_dynamic__mutmut_*",
    "rheotheory.trees.dynamic.x__skipped_outcomes__mutmut_*",
    # the adaptive builder (rheo-adaptive): head size, predicted target, slot scores
    "rheotheory.trees.adaptive.x_predicted_target__mutmut_*",
    "rheotheory.trees.adaptive.x_predicted_acceptances__mutmut_*",
    "rheotheory.trees.adaptive.x_head_size__mutmut_*",
    "rheotheory.trees.adaptive.x__proxies__mutmut_*",
    "rheotheory.trees.adaptive.x_build_adaptive__mutmut_*",
]

#: The patterns added to :data:`CORE` after the first runs (see ``PARTS`` in the results file).
BUILDERS = CORE[CORE.index("rheotheory.trees.dynamic.xǁExpansionCacheǁranked__mutmut_*"):]

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
    "rheotheory.verify.rules.x_kseq_rho__mutmut_24":
        "gap(lo) < 0 instead of <= 0 (lo = 1): gap(1) = 0 only for p = q or k = 1, where the bisection's "
        "upper end halves down to 1.0 within the 60 steps (for k < 2^7), the same rho",
    "rheotheory.verify.rules.x_kseq_rho__mutmut_3":
        "keep = None indexes with a new axis instead of q's support: the sums then run over every token, "
        "and min(q, p / rho) = 0 where q = 0, so beta is the same",
    "rheotheory.verify.rules.x_kseq_rho__mutmut_4": "q >= 0 keeps every token: as kseq_rho__mutmut_3",
    "rheotheory.verify.rules.x_kseq_rho__mutmut_64":
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
    "rheotheory.verify.gbv.x_max_of_k_law__mutmut_30":
        "`law = Q * 1` instead of `Q * 0`: the drafted tokens' entries are overwritten, and the others are 0 in Q",
    "rheotheory.verify.gbv.xǁGreedyBlockVerifierǁselect__mutmut_14":
        "`P[0][1] * 0` instead of `P[0][0] * 0`: any entry times 0 is 0 in the laws' number type (V >= 2)",
    # -- the dynamic builder ------------------------------------------------------------------------
    "rheotheory.trees.dynamic.xǁExpansionCacheǁexpansion_outcomes__mutmut_2":
        "another string in the memo key: the key stays one per prefix, and no other key of the shared "
        "dict is a (str, prefix) pair (tail keys are (prefix, head))",
    "rheotheory.trees.dynamic.xǁExpansionCacheǁexpansion_outcomes__mutmut_3": "as expansion_outcomes__mutmut_2",
    "rheotheory.trees.dynamic.xǁExpansionCacheǁexpansion_outcomes__mutmut_4":
        "memo bypassed (n = None): the count is recomputed from the memoised ranking and tail, the same "
        "value, and no draft evaluation more",
    "rheotheory.trees.dynamic.xǁExpansionCacheǁexpansion_outcomes__mutmut_5": "as expansion_outcomes__mutmut_4 (get(None))",
    "rheotheory.trees.dynamic.xǁExpansionCacheǁexpansion_outcomes__mutmut_31":
        "as expansion_outcomes__mutmut_4 (None stored: recomputed on every call)",
    "rheotheory.trees.dynamic.xǁExpansionCacheǁexpansion_outcomes__mutmut_10":
        "a longer ranking (limit None): its first m + 1 ids are the same, and len(ranked) <= m reads the same",
    "rheotheory.trees.dynamic.xǁExpansionCacheǁexpansion_outcomes__mutmut_12": "as expansion_outcomes__mutmut_10",
    "rheotheory.trees.dynamic.xǁExpansionCacheǁexpansion_outcomes__mutmut_14": "as expansion_outcomes__mutmut_10 (limit m + 2)",
    "rheotheory.trees.dynamic.xǁExpansionCacheǁranked__mutmut_11":
        "the whole ranking instead of the first `limit` ids: ranked() promises at least the first `limit`, "
        "and every caller reads only those (a limit only shortens the list, never changes its entries)",
    "rheotheory.trees.dynamic.xǁExpansionCacheǁranked__mutmut_13": "as ranked__mutmut_11",
    "rheotheory.trees.dynamic.xǁExpansionCacheǁtail__mutmut_17":
        "normalise(rest, None) recomputes the sum `mass` it was given",
    "rheotheory.trees.dynamic.xǁExpansionCacheǁtail__mutmut_19": "as tail__mutmut_17",
    "rheotheory.trees.dynamic.x__proxy__mutmut_14": "best <= mass: where they are equal both branches return that value",
    "rheotheory.trees.dynamic.x_build_dynamic__mutmut_25": "getattr default None: bool(None) is False, as bool(False)",
    "rheotheory.trees.dynamic.x_build_dynamic__mutmut_35":
        "the root's creation code: never read (every sort, count and prune runs over nodes 1..)",
    "rheotheory.trees.dynamic.x_build_dynamic__mutmut_53":
        "every creation code one less (base + slot - 1): node-to-node order is unchanged, codes of a "
        "layer stay above the layer before (d·K² - 1 > d·K² - 2), and against a settle bound "
        "(d·K + pos)·K a node of the layer counts as ahead iff (pos' - pos)·K + slot - 1 < 0, i.e. iff "
        "its parent's position pos' is below pos, as with the original codes",
    "rheotheory.trees.dynamic.x_build_dynamic__mutmut_61":
        "ranked(prefix, None): a longer ranking, the same first K + 1 ids (every read of `ranked` in an "
        "expansion is within them: the head, rank m + 1, the fillers' block and the sample's rest token)",
    "rheotheory.trees.dynamic.x_build_dynamic__mutmut_63": "as build_dynamic__mutmut_61",
    "rheotheory.trees.dynamic.x_build_dynamic__mutmut_65": "as build_dynamic__mutmut_61 (limit K + 2)",
    "rheotheory.trees.dynamic.x_build_dynamic__mutmut_90":
        "the sample group's mode: a rheo expansion's group has one member (pos 0), for which member_law, "
        "pending_draws, resolve and unresolved_count read the same whatever the mode",
    "rheotheory.trees.dynamic.x_build_dynamic__mutmut_95": "as build_dynamic__mutmut_90",
    "rheotheory.trees.dynamic.x_build_dynamic__mutmut_96": "as build_dynamic__mutmut_90",
    "rheotheory.trees.dynamic.x_build_dynamic__mutmut_91": "SampleGroup.key: nothing in the package reads a group's key",
    "rheotheory.trees.dynamic.x_build_dynamic__mutmut_97": "as build_dynamic__mutmut_91",
    "rheotheory.trees.dynamic.x_build_dynamic__mutmut_98": "as build_dynamic__mutmut_91",
    "rheotheory.trees.dynamic.x_build_dynamic__mutmut_157":
        "proxy `true` also postpones its filler layout in the enumerator's last layer: its sample is drawn "
        "at creation, the layout is made unless the sample and every filler are doomed, and doomed fillers "
        "are never kept, never expanded (last layer) and need no draw, so the kept tree and the draws are "
        "the same",
    "rheotheory.trees.dynamic.x_build_dynamic__mutmut_158": "as build_dynamic__mutmut_157",
    "rheotheory.trees.dynamic.x_build_dynamic__mutmut_203":
        "ranked[m:m + n_fill + 2]: at most one token (the sample) is removed, so the first n_fill are the same",
    "rheotheory.trees.dynamic.x_build_dynamic__mutmut_219":
        "key memo bypassed: a node's score is final before its key is first read, so the key is the same",
    "rheotheory.trees.dynamic.x_build_dynamic__mutmut_220": "as build_dynamic__mutmut_219 (get(None))",
    "rheotheory.trees.dynamic.x_build_dynamic__mutmut_226":
        "doomed() ignoring its bound: its only call with a bound passes `best`, which equals the sampled "
        "child's own key (below)",
    "rheotheory.trees.dynamic.x_build_dynamic__mutmut_248":
        "key(x) <= bound: no node's key equals the bound, whose creation code is that of the left-out "
        "node's first child, which does not exist while the node is left out",
    "rheotheory.trees.dynamic.x_build_dynamic__mutmut_357":
        "best = min(key(sample), filler bound) is always key(sample): the sample's proxy (next: "
        "q(r_{m+1}); tail: the mass outside the head; min-best-tail: the smaller of q(r_1) and that mass) "
        "is at least q(r_{m+1}), the best filler's, and the sample is created first (slot m < m + 1); so "
        "best = None (doomed(s_idx) reads key(s_idx)) is the same",
    "rheotheory.trees.dynamic.x_build_dynamic__mutmut_365": "the filler bound's code in `best`: never the minimum (build_dynamic__mutmut_357)",
    "rheotheory.trees.dynamic.x_build_dynamic__mutmut_366": "as build_dynamic__mutmut_365",
    "rheotheory.trees.dynamic.x_build_dynamic__mutmut_367": "as build_dynamic__mutmut_365",
    "rheotheory.trees.dynamic.x_build_dynamic__mutmut_368": "as build_dynamic__mutmut_365",
    "rheotheory.trees.dynamic.x_build_dynamic__mutmut_369": "as build_dynamic__mutmut_365",
    "rheotheory.trees.dynamic.x_build_dynamic__mutmut_370": "as build_dynamic__mutmut_365",
    "rheotheory.trees.dynamic.x_build_dynamic__mutmut_372":
        "doomed(None, best): with a bound given, the node argument is not read",
    "rheotheory.trees.dynamic.x_build_dynamic__mutmut_373":
        "doomed(s_idx, None) reads key(s_idx), which is `best` (build_dynamic__mutmut_357)",
    "rheotheory.trees.dynamic.x_build_dynamic__mutmut_375": "as build_dynamic__mutmut_373",
    # -- the adaptive builder -----------------------------------------------------------------------
    "rheotheory.trees.adaptive.x_predicted_target__mutmut_2":
        "always np.asarray(q, float64): on a Fraction array it converts each entry with float(), as "
        "laws.to_float does",
    "rheotheory.trees.adaptive.x_predicted_target__mutmut_5": "as predicted_target__mutmut_2 (is_exact(None) is False)",
    "rheotheory.trees.adaptive.x_predicted_target__mutmut_3":
        "always laws.to_float(q): on a float array it returns the same float64 values",
    "rheotheory.trees.adaptive.x_predicted_target__mutmut_7":
        "np.asarray(q) without dtype on a float law: laws are float64 arrays already",
    "rheotheory.trees.adaptive.x_predicted_target__mutmut_9": "as predicted_target__mutmut_7",
    "rheotheory.trees.adaptive.x_predicted_target__mutmut_12":
        "w[None] = exp(log(q) / T) over every entry: log(0) = -inf and exp(-inf) = 0, the same values "
        "(with numpy's divide warning)",
    "rheotheory.trees.adaptive.x_predicted_target__mutmut_13": "q >= 0 selects every entry: as predicted_target__mutmut_12",
    "rheotheory.trees.adaptive.x__proxies__mutmut_2": "first = '' instead of None: `first` is assigned before it is read",
    "rheotheory.trees.adaptive.x__proxies__mutmut_9": "as predicted_target__mutmut_2",
    "rheotheory.trees.adaptive.x__proxies__mutmut_12": "as predicted_target__mutmut_2",
    "rheotheory.trees.adaptive.x__proxies__mutmut_10": "as predicted_target__mutmut_3",
    "rheotheory.trees.adaptive.x__proxies__mutmut_14": "as predicted_target__mutmut_7",
    "rheotheory.trees.adaptive.x__proxies__mutmut_16": "as predicted_target__mutmut_7",
    "rheotheory.trees.adaptive.x__proxies__mutmut_18":
        "tail_q at the head's tokens: tail_q is read only at `keep`, outside the head",
    "rheotheory.trees.adaptive.x__proxies__mutmut_19": "as _proxies__mutmut_18",
    "rheotheory.trees.adaptive.x__proxies__mutmut_25": "keep[head] = None: None assigns False in a bool array",
    "rheotheory.trees.adaptive.x__proxies__mutmut_26":
        "keep[head] = True adds min(p-hat, 0) = 0 for each head token (tail_q is 0 there)",
    "rheotheory.trees.adaptive.x__proxies__mutmut_45":
        "always the Fraction factor f: with a float mass, mass * f is the float mass * float(f)",
    "rheotheory.trees.adaptive.x__proxies__mutmut_53":
        "the `next` rule's else branch is unreachable: build_adaptive passes s <= len(ranked) - m, so "
        "m + j < len(ranked) for every j < s",
    "rheotheory.trees.adaptive.x__proxies__mutmut_55": "as _proxies__mutmut_53",
    "rheotheory.trees.adaptive.x__proxies__mutmut_56": "as _proxies__mutmut_53",
    "rheotheory.trees.adaptive.x__proxies__mutmut_57": "as _proxies__mutmut_53",
    "rheotheory.trees.adaptive.x__proxies__mutmut_58": "as _proxies__mutmut_53",
    "rheotheory.trees.adaptive.x__proxies__mutmut_59": "as _proxies__mutmut_53",
    "rheotheory.trees.adaptive.x__proxies__mutmut_60": "as _proxies__mutmut_53",
    "rheotheory.trees.adaptive.x__proxies__mutmut_72": "out[-1] <= w: where they are equal, w = out[-1] is the same value",
    "rheotheory.trees.adaptive.x__proxies__mutmut_73":
        "the clamp never fires: every rule's scores are non-increasing in j (decay in (0, 1], ranked "
        "order), so out[-1] < w never holds",
    "rheotheory.trees.adaptive.x__proxies__mutmut_74": "as _proxies__mutmut_73",
    "rheotheory.trees.adaptive.x__proxies__mutmut_75": "as _proxies__mutmut_73",
    "rheotheory.trees.adaptive.x__proxies__mutmut_77":
        "w / one instead of w * one: one is 1 in the pair's number type, the same value and type",
    "rheotheory.trees.adaptive.x_head_size__mutmut_14":
        "T > 1 instead of T >= 1: at T = 1 exactly p-hat = q and the predicted acceptance is 1 for every "
        "m (A(m) = q(H) + sum q(x) over the rest), so the predicted rule also picks m = 0 (ties within "
        "HEAD_TIE_TOL go to the smallest)",
    "rheotheory.trees.adaptive.x_build_adaptive__mutmut_30":
        "ranked(prefix, None): a longer ranking with the same first K + 1 ids; head_size, the samples' "
        "count min(K - m, len(ranked) - m) and the proxies read no further",
    "rheotheory.trees.adaptive.x_build_adaptive__mutmut_32": "as build_adaptive__mutmut_30",
    "rheotheory.trees.adaptive.x_build_adaptive__mutmut_34": "as build_adaptive__mutmut_30 (limit K + 2)",
    "rheotheory.trees.adaptive.x_build_adaptive__mutmut_35":
        "p_hat = '' where neither rule predicts: then nothing reads p_hat (integer or threshold head, "
        "tail/next/true proxy)",
    "rheotheory.trees.adaptive.x_build_adaptive__mutmut_37":
        "p-hat not precomputed for a predicted head: head_size computes the same predicted_target itself "
        "when given None (and computing it when unused changes nothing)",
    "rheotheory.trees.adaptive.x_build_adaptive__mutmut_38": "as build_adaptive__mutmut_37",
    "rheotheory.trees.adaptive.x_build_adaptive__mutmut_39": "as build_adaptive__mutmut_37",
    "rheotheory.trees.adaptive.x_build_adaptive__mutmut_56":
        "head_size without p_hat computes predicted_target(q, cfg.temperature) itself, the same array",
    "rheotheory.trees.adaptive.x_build_adaptive__mutmut_60": "as build_adaptive__mutmut_56",
    "rheotheory.trees.adaptive.x_build_adaptive__mutmut_96": "SampleGroup.key: nothing in the package reads a group's key",
    "rheotheory.trees.adaptive.x_build_adaptive__mutmut_102": "as build_adaptive__mutmut_96",
    "rheotheory.trees.adaptive.x_build_adaptive__mutmut_103": "as build_adaptive__mutmut_96",
    "rheotheory.trees.adaptive.x_build_adaptive__mutmut_85":
        "s < 0 instead of s <= 0: with s = 0 the group gets no member, so no node is added (the unused "
        "tail law of an empty tail is computed)",
    "rheotheory.trees.adaptive.x_head_size__mutmut_32":
        "`if not acc: return 1` is unreachable: at m = 0 the tail is the whole support (mass > 0), so "
        "predicted_acceptances returns at least one value",
    "rheotheory.trees.adaptive.x_predicted_acceptances__mutmut_2": "as predicted_target__mutmut_2",
    "rheotheory.trees.adaptive.x_predicted_acceptances__mutmut_5": "as predicted_target__mutmut_2",
    "rheotheory.trees.adaptive.x_predicted_acceptances__mutmut_3": "as predicted_target__mutmut_3",
    "rheotheory.trees.adaptive.x_predicted_acceptances__mutmut_7": "as predicted_target__mutmut_7",
    "rheotheory.trees.adaptive.x_predicted_acceptances__mutmut_9": "as predicted_target__mutmut_7",
    "rheotheory.trees.adaptive.x_predicted_acceptances__mutmut_33":
        "the break is unreachable: m < len(ranked) <= |supp q| (ranked holds support tokens only), so the "
        "tail keeps a token of the support and its mass is > 0",
    "rheotheory.trees.adaptive.x_predicted_acceptances__mutmut_35": "as predicted_acceptances__mutmut_33",
    "rheotheory.trees.adaptive.x_build_adaptive__mutmut_153":
        "key memo bypassed: scores are final before a key is first read (proxy true sets the score right "
        "after the draw)",
    "rheotheory.trees.adaptive.x_build_adaptive__mutmut_154": "as build_adaptive__mutmut_153",
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


def function_of(name: str) -> str:
    return re.sub(r"__mutmut_\d+$", "", name)


def verdict_of(name: str, code) -> str:
    v = VERDICTS.get(code, "suspicious")
    return "equivalent" if v == "survived" and name in EQUIVALENT else v


def summarise(previous: dict | None = None, run: dict | None = None) -> dict:
    """The verdicts of every core function, and their totals.

    A function whose mutants mutmut's state in ``mutants/`` has all run is taken from that state
    (and marked with ``run``, this summary's run record); a core function the state has not run
    keeps its record from ``previous`` (the last results file), with the run that measured it. So
    a run restricted to some functions updates those and keeps the others' verdicts.
    """
    codes = core_mutants()
    names: dict[str, dict[str, str]] = {}
    for name, code in codes.items():
        names.setdefault(function_of(name), {})[name] = verdict_of(name, code)
    runs = list((previous or {}).get("runs", []))
    functions: dict[str, dict] = {}
    fresh = {fn: vs for fn, vs in names.items() if all(v != "not checked" for v in vs.values())}
    if fresh:
        runs.append(dict(run or {}, functions=len(fresh)))
    for fn, vs in fresh.items():
        functions[fn] = {"run": len(runs) - 1, "mutants": len(vs), "verdicts": dict(sorted(Counter(vs.values()).items())),
                         "not_killed": {n: v for n, v in sorted(vs.items()) if v != "killed"}}
    for fn, rec in (previous or {}).get("functions", {}).items():
        if fn not in functions and any(fnmatch.fnmatchcase(fn + "__mutmut_1", pat) for pat in CORE):
            functions[fn] = rec
    used = sorted({rec["run"] for rec in functions.values()})
    renumber = {old: new for new, old in enumerate(used)}
    runs = [dict(runs[old], functions=sum(rec["run"] == old for rec in functions.values())) for old in used]
    for rec in functions.values():
        rec["run"] = renumber[rec["run"]]
    counts = Counter()
    for rec in functions.values():
        counts.update(rec["verdicts"])
    not_killed = {n: v for rec in functions.values() for n, v in rec["not_killed"].items()}
    killed = counts["killed"] + counts["timeout"]
    non_equivalent = sum(counts.values()) - counts["equivalent"] - counts["not checked"]
    missing = sorted(p for p in CORE if not any(fnmatch.fnmatchcase(fn + "__mutmut_1", p) for fn in functions))
    return {
        "tool": f"mutmut {_version('mutmut')}",
        "mutants": sum(counts.values()),
        "counts": dict(sorted(counts.items())),
        "score": round(killed / non_equivalent, 4) if non_equivalent else None,
        "core_patterns_not_run": missing,
        "equivalent": {n: EQUIVALENT[n] for n in sorted(not_killed) if not_killed[n] == "equivalent"},
        "survived": sorted(n for n, v in not_killed.items() if v == "survived"),
        "not_killed_other": sorted(n for n, v in not_killed.items() if v not in ("equivalent", "survived")),
        "runs": runs,
        "functions": dict(sorted(functions.items())),
    }


def _version(pkg: str) -> str:
    from importlib import metadata

    return metadata.version(pkg)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1, help="mutmut worker processes (default 1)")
    ap.add_argument("--summary", action="store_true", help="only summarise the last run")
    ap.add_argument("--out", default=str(RESULTS), help=f"results file (default {RESULTS.relative_to(ROOT)}); the "
                    "core functions mutmut's state has not run keep their verdicts from the file already there")
    ap.add_argument("mutants", nargs="*", help="mutant names or patterns to (re)run instead of the whole core")
    args = ap.parse_args(argv)
    if args.jobs < 1:
        ap.error("--jobs must be >= 1")
    started = time.time()
    cmd = None
    if not args.summary:
        mutmut = shutil.which("mutmut") or "mutmut"
        cmd = ["nice", "-n", "10", mutmut, "run", "--max-children", str(args.jobs), *(args.mutants or CORE)]
        rc = subprocess.run(cmd, cwd=ROOT).returncode
        if rc != 0:
            print(f"mutmut exited with {rc}", file=sys.stderr)
    from rheotheory.provenance import provenance, write_provenance

    out = Path(args.out)
    previous = json.loads(RESULTS.read_text()) if RESULTS.is_file() else None
    prov = provenance()
    run = {"commit": prov["commit"], "summarised": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "command": "python benchmarks/mutation.py " + " ".join(argv if argv is not None else sys.argv[1:]),
           "machine": prov["machine"].get("note", "")}
    summary = summarise(previous, run)
    summary["wall_seconds"] = round(time.time() - started, 1)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=1, ensure_ascii=False) + "\n")
    write_provenance(out, started=started, recipe="mutation", size="summary" if args.summary else "full")
    print(json.dumps({k: summary[k] for k in ("tool", "mutants", "counts", "score")}, indent=1))
    for name in summary["survived"]:
        print("survived:", name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
