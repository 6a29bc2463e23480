"""rheotheory: prove, measure and run stochastic dynamic-tree speculative decoding.

Convention, everywhere in this package: **p is the target distribution, q the draft
distribution** (never the reverse). V is the vocabulary, T the temperature, Z the output of one
speculative step (accepted draft tokens, then one token from the target), tau = E|Z|.

The public names below are imported on first use (module-level ``__getattr__``, PEP 562):
``import rheotheory`` costs only its error types, so the ``rheo`` command can build its parser
and answer ``--help`` without loading the enumerator or the samplers.
"""

from __future__ import annotations

import importlib

from .errors import InstanceError, LawError, RheoError, TreeError, VerifierError

__version__ = "0.1.0"

#: Public name -> the module (below this package) that defines it, imported on first access.
_LAZY = {
    "ToyPair": "pairs", "random_pair": "pairs", "logits_pair": "pairs", "example_pair": "pairs",
    "Method": "methods", "make_method": "methods", "resolve": "methods", "FAMILIES": "methods",
    "PRESETS": "methods", "TREE_SIZES": "methods",
    "certify": "exact", "enumerate_classes": "exact", "step_law": "exact", "lossless_check": "exact",
    "Certificate": "exact",
    "SyntheticPair": "synthetic",
    "run_steps": "montecarlo", "MCResult": "montecarlo",
    "lossless_test": "stats", "LosslessTest": "stats",
}

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


def __getattr__(name: str):
    """A public name on first use: import its module, bind the name here, return it."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # NOTE: later accesses are plain module attributes, no second look-up
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
