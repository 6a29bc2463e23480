"""Draft trees: the tree type, choosers, and the dynamic (EAGLE / RheoSampling) and static builders.

The adaptive RheoSampling builder is imported from its module, :mod:`rheotheory.trees.adaptive`.
"""

from .dynamic import FILLERS, PROXIES, DynamicConfig, ExpansionCache, build_dynamic
from .static import SAMPLING_MODES, build_static, chain_shape, parse_shape
from .tree import Candidate, NeedChoice, Node, RandomChooser, ReplayChooser, SampleGroup, Tree

__all__ = [
    "Candidate",
    "Tree",
    "Node",
    "SampleGroup",
    "RandomChooser",
    "ReplayChooser",
    "NeedChoice",
    "DynamicConfig",
    "ExpansionCache",
    "build_dynamic",
    "PROXIES",
    "FILLERS",
    "build_static",
    "parse_shape",
    "chain_shape",
    "SAMPLING_MODES",
]
