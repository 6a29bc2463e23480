"""Speculative decoding with real PyTorch models: tree attention, KV cache, decoding loop.

The tree builders (:mod:`rheotheory.trees`) and verifiers (:mod:`rheotheory.verify.rules`) are
the exact core's own; this package only supplies model-backed laws (the draft evaluated layer by
layer over the tree, the target over the whole tree in one pass) and a torch chooser.
Requires the ``torch`` extra.
"""

from .builtin import ModelPair, load_builtin_pair, resolve_device
from .engine import AUTOREGRESSIVE, DecodeConfig, DecodeResult, DraftTreePair, StepStats, TorchChooser, decode
from .models import KVCache, ModelConfig, TinyLM, chain_mask, tree_mask

__all__ = [
    "ModelConfig",
    "TinyLM",
    "KVCache",
    "tree_mask",
    "chain_mask",
    "ModelPair",
    "load_builtin_pair",
    "resolve_device",
    "DecodeConfig",
    "DecodeResult",
    "StepStats",
    "TorchChooser",
    "DraftTreePair",
    "decode",
    "AUTOREGRESSIVE",
]
