"""rheotheory: prove, measure and run stochastic dynamic-tree speculative decoding.

Convention, everywhere in this package: **p is the target distribution, q the draft
distribution** (never the reverse). V is the vocabulary, T the temperature, Z the output of one
speculative step (accepted draft tokens, then one token from the target), tau = E|Z|.
"""

from .errors import InstanceError, LawError, RheoError, TreeError, VerifierError
from .exact import Certificate, certify, enumerate_classes, lossless_check, step_law
from .methods import FAMILIES, PRESETS, TREE_SIZES, Method, make_method, resolve
from .montecarlo import MCResult, run_steps
from .pairs import ToyPair, example_pair, logits_pair, random_pair
from .stats import LosslessTest, lossless_test
from .synthetic import SyntheticPair

__version__ = "0.1.0"

__all__ = [
    "RheoError",
    "LawError",
    "InstanceError",
    "TreeError",
    "VerifierError",
    "ToyPair",
    "random_pair",
    "logits_pair",
    "example_pair",
    "Method",
    "make_method",
    "resolve",
    "FAMILIES",
    "PRESETS",
    "TREE_SIZES",
    "certify",
    "enumerate_classes",
    "step_law",
    "lossless_check",
    "Certificate",
    "SyntheticPair",
    "run_steps",
    "MCResult",
    "lossless_test",
    "LosslessTest",
]
