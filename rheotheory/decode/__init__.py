"""Speculative decoding with real PyTorch models: tree attention, KV cache, decoding loop.

The tree builders (:mod:`rheotheory.trees`) and verifiers (:mod:`rheotheory.verify.rules`) are
the exact core's own; this package only supplies model-backed laws (the draft evaluated layer by
layer over the tree, the target over the whole tree in one pass) and a torch chooser.
Requires the ``torch`` extra.

Its parts:

- :mod:`.engine`: the decoding loop, one step of any method with real models.
- :mod:`.backends`: the models behind it (the built-in pair, SmolLM2, any Hugging Face model).
- :mod:`.heads`: draft heads over the target's hidden states, their formats and training.
- :mod:`.evaluation`: what ``rheo bench`` and the lossless checks measure.
- :mod:`.defaults`: the commands' defaults, importable without torch.
"""

import importlib

#: Public name -> the submodule defining it. NOTE: loaded on first use (PEP 562), so that
#: importing a torch-free submodule (:mod:`rheotheory.decode.defaults`, read by ``rheo --help``)
#: does not load torch through this package.
_EXPORTS = {
    **dict.fromkeys(("ModelConfig", "TinyLM", "KVCache", "tree_mask", "chain_mask"), "backends.tree_lm"),
    **dict.fromkeys(("ModelPair", "load_builtin_pair", "resolve_device"), "backends.builtin"),
    **dict.fromkeys(("DecodeConfig", "DecodeResult", "StepStats", "TorchChooser", "DraftTreePair", "decode",
                     "AUTOREGRESSIVE"), "engine"),
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
