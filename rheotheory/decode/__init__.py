"""Speculative decoding with real PyTorch models: tree attention, KV cache, decoding loop.

The tree builders (:mod:`rheotheory.trees`) and verifiers (:mod:`rheotheory.verify.rules`) are
the exact core's own; this package only supplies model-backed laws (the draft evaluated layer by
layer over the tree, the target over the whole tree in one pass) and a torch chooser.
Requires the ``torch`` extra.
"""

import importlib

#: Public name -> the submodule defining it. NOTE: loaded on first use (PEP 562), so that
#: importing a torch-free submodule (:mod:`rheotheory.decode.defaults`, read by ``rheo --help``)
#: does not load torch through this package.
_EXPORTS = {
    "ModelConfig": "models", "TinyLM": "models", "KVCache": "models", "tree_mask": "models", "chain_mask": "models",
    "ModelPair": "builtin", "load_builtin_pair": "builtin", "resolve_device": "builtin",
    "DecodeConfig": "engine", "DecodeResult": "engine", "StepStats": "engine", "TorchChooser": "engine",
    "DraftTreePair": "engine", "decode": "engine", "AUTOREGRESSIVE": "engine",
}

__all__ = list(_EXPORTS)


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
