"""transformers 5.24.0 universal assisted generation at T > 0: ``q`` is a permutation of the draft's law.

With ``generate(assistant_model=draft, tokenizer=tok, assistant_tokenizer=atok, do_sample=True)``
transformers runs ``UniversalSpeculativeDecodingGenerator``. When the draft's vocabulary has a token
the target's lacks, ``AssistantToTargetTranslator`` prunes the draft's head to the shared tokens, in
the order ``atok.get_vocab()`` lists them (``assistant_overlap_token_ids``); ``get_target_ids`` maps a
drafted column ``j`` to the target token of ``assistant_overlap_token_ids[j]``, but
``get_target_logits`` writes column ``j`` to the ``j``-th shared token in increasing assistant id.
The two orders agree only if ``get_vocab()`` lists the shared tokens in id order; a
``tokenizers``-backed tokenizer lists them in its Rust hash map's order, another in each process.
So ``_speculative_sampling`` is handed as ``q`` a permutation of the law the drafts were drawn from.

This script runs the adapter's models (``rheotheory.audit.engines.transformers_generate``: the tiny
Llama target over words ``w0..w7``, a tiny Llama assistant over the same words under other ids plus
``x``; ``get_vocab()`` in a fixed shuffled order, or in id order for the control) through transformers'
own ``generate``, records at the first step the draft's processed scores (pruned columns), the
``q`` returned and the target's processed law ``p``, and computes the exact law of the first token
emitted, by enumerating the draft token ``x ~ q_true``:

.. math::

    P(y) = q_{true}(y) \\min(1, p(y) / q(y)) + \\Big(\\sum_x q_{true}(x) (1 - \\min(1, p(x) / q(x)))\\Big)
           \\frac{(p(y) - q(y))_+}{\\sum_z (p(z) - q(z))_+}

(``q`` the law returned, ``q_true`` the law sampled), and its total variation from ``p``; with
``--runs N`` also the first tokens of ``N`` runs against both laws (Pearson's chi-square). Part 2:
a draft vocabulary inside the target's (no token pruned) raises ``AttributeError``.

Usage: ``python benchmarks/audit_repro/transformers_universal.py [--runs N]``
"""

from __future__ import annotations

import argparse
import contextlib
import json

import numpy as np

SETTING = "universal assisted 2 drafted top_k 50"
CONTROL = "universal assisted 2 drafted top_k 50 (draft vocabulary in id order)"


@contextlib.contextmanager
def _recording(log: list):
    """Record, at each step, the draft's scores, the (ids, logits) returned and ``_speculative_sampling``'s
    inputs (wrappers around transformers' own functions; nothing replaced)."""
    import transformers.generation.candidate_generator as cg
    import transformers.generation.utils as gu

    usd = cg.UniversalSpeculativeDecodingGenerator
    gen0, get0, spec0 = usd._generate_candidates, usd.get_candidates, gu._speculative_sampling

    def generate_candidates(self, args):
        ids, scores = gen0(self, args)
        log.append(dict(scores=scores[0].double().numpy(), translator=self._atm_translator))  # [k, shared]
        return ids, scores

    def get_candidates(self, input_ids, **kw):
        ids, logits = get0(self, input_ids, **kw)
        if logits is not None:  # NOTE: None when nothing is left to draft
            log[-1].update(drafted=ids[0, input_ids.shape[1]:].tolist(), q_logits=logits[0].double().numpy())
        return ids, logits

    def speculative_sampling(candidate_input_ids, candidate_logits, candidate_length, new_logits, **kw):
        log[-1].update(p_logits=new_logits[0].double().numpy())  # [k+1, V], after the processors
        return spec0(candidate_input_ids, candidate_logits, candidate_length, new_logits, **kw)

    usd._generate_candidates, usd.get_candidates, gu._speculative_sampling = (generate_candidates, get_candidates,
                                                                             speculative_sampling)
    try:
        yield
    finally:
        usd._generate_candidates, usd.get_candidates, gu._speculative_sampling = gen0, get0, spec0


def _softmax(x):  # [..., V]
    z = np.exp(x - x.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


def first_token_law(q_true, q, p):
    """Exact law of the first token emitted when the draft ``x ~ q_true`` is verified against ``q``
    (module docstring); ``# [V]`` each."""
    with np.errstate(divide="ignore", invalid="ignore"):
        # NOTE: as torch's r <= p / q: q = 0 accepts when p > 0 (inf) and rejects when p = 0 (nan)
        accept = np.where(q > 0, np.minimum(1.0, p / q), (p > 0).astype(float))  # [V]
    residual = np.clip(p - q, 0, None)
    residual = residual / residual.sum() if residual.sum() > 0 else p
    return q_true * accept + float(np.sum(q_true * (1 - accept))) * residual


def run(name: str = SETTING, runs: int = 0) -> dict:
    """The first step of the setting ``name`` (module docstring): its laws, their TV, and with
    ``runs`` the first tokens of that many runs tested against both."""
    from scipy import stats as sps

    from rheotheory.audit.engines import transformers_generate as tg

    (setting,) = tg.settings(only=[name]) if name in tg.SETTINGS else tg.controls(only=[name])
    log = []
    with _recording(log):
        firsts = [w[0] for w in setting.sample(max(runs, 1), 0)]
    step = log[0]
    tr = step["translator"]
    drafted_target = tr._assistant_to_target_input_ids[tr.assistant_overlap_token_ids].numpy()  # column -> target
    shared = tr._assistant_to_target_input_ids.numpy()
    placed_target = shared[shared >= 0]  # column -> where get_target_logits writes it
    V = step["p_logits"].shape[-1]
    q_true = np.zeros(V)
    np.add.at(q_true, drafted_target, _softmax(step["scores"][0]))
    q = _softmax(step["q_logits"][0])
    p = _softmax(step["p_logits"][0])
    law = first_token_law(q_true, q, p)
    out = dict(setting=name, column_drafts=drafted_target.tolist(), column_written_to=placed_target.tolist(),
               p=p.round(6).tolist(), q_true=q_true.round(6).tolist(), q_returned=q.round(6).tolist(),
               first_token_law=law.round(6).tolist(), tv=round(0.5 * float(np.abs(law - p).sum()), 6))
    if runs:
        counts = np.bincount(firsts, minlength=V)
        for key, ref in (("p_value_vs_engine_law", law), ("p_value_vs_target", p)):
            keep = ref > 0
            if counts[~keep].sum():  # NOTE: a token impossible under ref was emitted
                out[key] = 0.0
                continue
            out[key] = float(sps.chisquare(counts[keep], runs * ref[keep] / ref[keep].sum()).pvalue)
        out["runs"] = runs
    return out


def subset_vocabulary_error() -> str:
    """Part 2: an assistant over 7 of the target's 8 words (nothing to prune) at T > 0: the error."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from rheotheory.audit.engines import transformers_generate as tg
    from rheotheory.audit.engines.tiny import PROMPT, tiny_pair

    target = tiny_pair()[0]
    words = ["w5", "w2", "w7", "w0", "w3", "w6", "w1"]
    tok, atok = tg._word_tokenizer([f"w{i}" for i in range(8)]), tg._word_tokenizer(words)
    cfg = LlamaConfig(vocab_size=len(words), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=64, bos_token_id=0,
                      eos_token_id=None, pad_token_id=0)
    torch.manual_seed(0)
    draft = LlamaForCausalLM(cfg).eval()
    draft.generation_config.eos_token_id = None
    try:
        with torch.inference_mode():
            target.generate(torch.tensor([PROMPT]), assistant_model=draft, tokenizer=tok, assistant_tokenizer=atok,
                            do_sample=True, max_new_tokens=4, pad_token_id=0)
    except Exception as e:  # noqa: BLE001 - the error is the result
        return f"{type(e).__name__}: {e}"
    return "no error"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=0, help="also test the first tokens of this many runs")
    args = ap.parse_args(argv)
    from transformers.utils import logging

    logging.set_verbosity_error()
    for key, value in (("lossy", run(SETTING, args.runs)), ("control", run(CONTROL, args.runs)),
                       ("subset_vocabulary", subset_vocabulary_error())):
        print(json.dumps({key: value}))


if __name__ == "__main__":
    main()
