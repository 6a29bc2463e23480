"""Per-node verifiers (transition laws) and the per-node optimal-transport optimum."""

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

__all__ = [
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
    "optimum_pot",
    "optimum_linprog",
    "optimum_sets",
    "ot_value",
    "set_law_det_plus_sample",
    "set_law_iid",
    "set_law_wor",
]
