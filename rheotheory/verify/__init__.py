"""Verifiers: per-node transition laws, the walk that makes them tree verifiers, and the
per-node optimal-transport optimum. (The tree-level LP optimum, which consumes the exact
enumeration, sits above it: :mod:`rheotheory.lp_optimum`.)"""

from .optimum import (
    optimum_linprog,
    optimum_pot,
    optimum_sets,
    ot_value,
    set_law_det_plus_sample,
    set_law_iid,
    set_law_wor,
)
from .rules import (
    VERIFIERS,
    Candidate,
    Transition,
    acceptance,
    get_verifier,
    kseq,
    kseq_rho,
    onehot,
    ot,
    output_law,
    sequential,
)
from .walk import (
    Branch,
    EnumerateBranch,
    TREE_VERIFIERS,
    Outcome,
    PerNodeWalk,
    SampleBranch,
    TreeVerifier,
    as_tree_verifier,
    method_tree_verifier,
    draw_pending,
    register_tree_verifier,
    sample_outcome,
    tree_verifier,
    verifier_families,
)

# Tree-level verifier modules: importing one registers it (one line per module).
from . import block  # noqa: E402,F401  (registration)
from . import traversal  # noqa: E402,F401  (registration)
from . import traversal_ot  # noqa: E402,F401  (registration)
from . import gbv  # noqa: E402,F401  (registration)
from . import spectr_gbv  # noqa: E402,F401  (registration)
from . import hsd  # noqa: E402,F401  (registration)

__all__ = [
    "draw_pending",
    "Candidate",
    "Transition",
    "VERIFIERS",
    "get_verifier",
    "onehot",
    "sequential",
    "kseq",
    "kseq_rho",
    "ot",
    "acceptance",
    "output_law",
    "TreeVerifier",
    "PerNodeWalk",
    "Outcome",
    "Branch",
    "EnumerateBranch",
    "SampleBranch",
    "tree_verifier",
    "TREE_VERIFIERS",
    "register_tree_verifier",
    "verifier_families",
    "as_tree_verifier",
    "method_tree_verifier",
    "sample_outcome",
    "optimum_pot",
    "optimum_linprog",
    "optimum_sets",
    "ot_value",
    "set_law_det_plus_sample",
    "set_law_iid",
    "set_law_wor",
]
