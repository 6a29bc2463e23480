"""Two tiny random-weight Llama models built here (no download): the target and draft of the engine audits.

``transformers``' ``LlamaForCausalLM`` with a vocabulary of :data:`VOCAB` tokens, one layer of
width 16, weights drawn from a fixed seed; the output head is scaled by :data:`HEAD_SCALE` so
that the laws are neither uniform nor one-hot (random initialisation alone gives nearly uniform
laws, on which a draft that is always accepted would look lossless). The draft is the same
architecture from another seed, so ``p`` and ``q`` differ at every position.

:func:`target_laws` gives the exact target law of the next token after the prompt and any
continuations, after an engine's sampling settings (:mod:`rheotheory.audit.sampling`), by one
uncached forward pass per batch: the :data:`rheotheory.stats.NextLaws` of an audit.
"""

from __future__ import annotations

import functools

import numpy as np

__all__ = ["VOCAB", "HEAD_SCALE", "PROMPT", "tiny_pair", "target_laws"]

#: Vocabulary of the tiny models.
VOCAB = 8

#: Factor on the output head's random weights: target laws of entropy about 1.4 nats (of
#: log 8 = 2.08) after the prompt; the draft's differ from them by a total variation of about 0.3.
HEAD_SCALE = 12.0

#: The prompt every engine audit generates from (a repeated pattern, so that prompt lookup
#: finds n-gram matches).
PROMPT = (1, 2, 3, 1, 2, 3, 1, 2)

_SEEDS = {"target": 1234, "draft": 5678}


@functools.lru_cache(maxsize=None)
def tiny_pair():
    """``(target, draft)``: two ``LlamaForCausalLM`` in eval mode (cached: one build per process).

    Returns
    -------
    tuple of transformers.LlamaForCausalLM
        ``(target, draft)``: vocabulary :data:`VOCAB`, one layer, weights from fixed seeds, the
        output head scaled by :data:`HEAD_SCALE`, no end-of-sequence token.
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    out = []
    for role in ("target", "draft"):
        cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                          num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=64,
                          bos_token_id=0, eos_token_id=None, pad_token_id=0, tie_word_embeddings=False)
        torch.manual_seed(_SEEDS[role])
        model = LlamaForCausalLM(cfg).eval()
        with torch.no_grad():
            model.lm_head.weight.mul_(HEAD_SCALE)
        model.generation_config.eos_token_id = None
        model.generation_config.pad_token_id = 0
        out.append(model)
    return tuple(out)


def target_laws(model, prompt, sampling):
    """:data:`rheotheory.stats.NextLaws` of ``model`` after ``prompt`` under ``sampling``.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        The target.
    prompt : sequence of int
        The prompt's token ids.
    sampling : rheotheory.audit.sampling.Sampling

    Returns
    -------
    callable
        ``laws(prefixes) -> # [len(prefixes), V]``.
    """
    import torch

    from ..sampling import processed_law

    head = torch.tensor(prompt, dtype=torch.long)  # [len(prompt)]

    @torch.inference_mode()
    def laws(prefixes: list) -> np.ndarray:
        cont = torch.tensor(prefixes, dtype=torch.long).reshape(len(prefixes), -1)  # [m, |u|]
        ids = torch.cat([head.expand(len(prefixes), -1), cont], dim=1)  # [m, len(prompt) + |u|]
        logits = model(ids).logits[:, -1].float()  # [m, V]
        return processed_law(logits, ids, sampling)

    return laws
