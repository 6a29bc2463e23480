"""transformers' ``generate`` with an assistant model, prompt lookup or a multi-token drafter, sampling at T > 0.

The audited code path is transformers' own: ``target.generate(prompt, do_sample=True, ...)``
(``_assisted_decoding``, the candidate generator ``_get_candidate_generator`` picks and
``_speculative_sampling``), on tiny random-weight models built here from configs, on CPU, with
nothing downloaded. Randomness: transformers draws from torch's global generator, so each setting
seeds it (``torch.manual_seed``) from ``(seed, setting)`` before its runs.

**Candidate generators** (the ``generator`` of a setting) and what triggers each in 5.24.0:

- ``assistant`` (``AssistedCandidateGenerator``; ``PromptLookupCandidateGenerator`` with
  ``prompt_lookup_num_tokens``; no assistant: plain sampling, the control row): ``assistant_model=``
  the tiny Llama draft of :mod:`.tiny`. The draft length is set where transformers reads it, the
  assistant's ``generation_config`` (``num_assistant_tokens``, ``num_assistant_tokens_schedule``,
  ``assistant_confidence_threshold``: passed to ``generate`` they have no effect).
- ``universal`` (``UniversalSpeculativeDecodingGenerator``: ``assistant_model=``, ``tokenizer=``,
  ``assistant_tokenizer=`` with ``do_sample=True``; at ``do_sample=False`` transformers takes
  ``AssistedCandidateGeneratorDifferentTokenizers`` instead, which is greedy: no law to test). The
  target is the tiny Llama; the assistant another tiny Llama over 9 words, the target's 8 under other
  ids plus one the target lacks; both tokenizers are ``PreTrainedTokenizerFast`` over a
  ``tokenizers`` WordLevel model built here (:func:`_word_tokenizer`). The draft-only word is what
  lets it run: ``generate`` refuses ``assistant_tokenizer`` when the two models' vocabulary sizes
  agree, and a draft vocabulary inside the target's raises ``AttributeError`` at the first step
  (``AssistantToTargetTranslator`` sets ``assistant_overlap_token_ids`` only when some draft token is
  missing from the target, but ``get_target_ids`` reads it whenever it samples). With
  the draft-only word the assistant's head is pruned to the shared words in the order
  ``assistant_tokenizer.get_vocab()`` lists them, a Rust hash map's order, different in every process:
  here a fixed shuffle (:data:`VOCAB_ORDER_SEED`), so that runs are reproducible.
- ``gemma4`` (``SinglePositionMultiTokenCandidateGenerator``: an assistant whose class name starts with
  ``Gemma4Assistant``, on a ``Gemma4`` target): a tiny ``Gemma4ForCausalLM`` (two layers, sliding
  and full attention, 8 tokens) and a tiny ``Gemma4AssistantForCausalLM`` reading its shared KV
  states (:func:`_gemma4_pair`); ``num_assistant_tokens`` from the assistant's ``generation_config``.
- ``mtp`` (``MTPCandidateGenerator``: ``use_mtp=True`` on a model whose config has ``num_mtp_layers``):
  a tiny ``Glm4MoeForCausalLM`` (one dense layer) whose two MTP layers are read, as transformers reads
  them, by ``MtpModel.from_pretrained`` from the checkpoint the model was saved to: a temporary
  directory written here (:func:`_mtp_target`), so k = 2 tokens a step, loaded again at every call.
- ``dflash`` (``DFlashTokenCandidateGenerator``: ``speculation_type="dflash"`` with an assistant): a
  tiny ``MuseGlimmerAssistantModel`` (``block_size`` 3, so k = 2; context from the target's layer 0)
  on the tiny Llama target (:func:`_dflash_assistant`).

The last three skip drafting on the first call (the prompt's forward pass makes the first token by
plain sampling), so their law is tested over ``L = k + 3`` tokens: that token, one whole step with its
bonus token, and the first token of the next step; the others over ``L = k + 2`` (two steps).

The law tested is the target's law of the first ``L`` new tokens after its sampling settings,
computed by :mod:`rheotheory.audit.sampling` from the definitions and one forward pass of the
target per batch of prefixes (:func:`.tiny.target_laws`, for each target), never with transformers'
processors. Without ``top_k`` transformers applies ``top_k=50``: the settings named ``top_k 50`` pass
it, which cuts nothing on 8 tokens; ``top_k 3`` cuts.

**Findings** (5.24.0; ``benchmarks/audit_repro/transformers_universal.py`` and
``transformers_gemma4.py`` compute the exact deviations):

- ``universal``: the assistant's logits are scattered back onto the target's vocabulary in
  increasing assistant-id order (``get_target_logits``) while its pruned head and the drafted ids
  (``get_target_ids``) follow ``get_vocab()``'s order, so ``q`` is a permutation of the law the draft
  was drawn from: lossy at any temperature whenever the draft vocabulary has a token the target
  lacks (the only case in which the generator runs at T > 0, above) and ``get_vocab()`` does not
  list the shared tokens in id order (in practice always, for a ``tokenizers``-backed tokenizer).
  Listed in id order it is not rejected (:data:`CONTROLS`).
- ``gemma4``: the drafts are the assistant's arg-max, but the assistant's raw softmax is returned as
  ``q``; ``_speculative_sampling`` then accepts ``x`` with probability ``min(1, p(x) / q(x))`` and
  resamples from ``(p - q)+``, which is right only for drafts drawn from ``q``: lossy unless the
  assistant's softmax is one-hot, with top-k or without. With ``q`` the point mass on the draft
  (the repair transformers PR #47961 proposed, applied here by a wrapper) it is not rejected
  (:data:`CONTROLS`).
- ``mtp``, ``dflash``: transformers #47932 reported that they sample their drafts from processed
  logits but return the raw ones as ``q``; in 5.24.0 both return the processed logits they sampled
  from (``MtpModel.forward``, ``DFlashTokenCandidateGenerator.get_candidates``): not rejected. The
  companion ``raw-q`` puts #47932's bug back.

Planted companions, driven through the same ``generate`` call (each setting lists those it runs):
``always-accept`` (every candidate kept, as in transformers PR #28508) and ``skip-residual`` (a
rejected position draws from p instead of norm((p - q)+)), each a replacement of
``_speculative_sampling`` written here from Leviathan et al.'s algorithm, for the duration of the
runs; ``raw-q`` (``mtp`` and ``dflash``: the generator's logits processors are wrapped to record
their input, and the raw logits they were handed are returned as ``q``, as before the fix of
#47932; with top-k active the output law is off, without it raw and processed logits agree, so it
runs only the top_k 3 settings).
"""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass, field

from ..core import Setting
from ..sampling import Sampling
from . import Engine, require

__all__ = ["ENGINE", "DEFAULT_RUNS", "SETTINGS", "CONTROLS", "settings", "controls", "version"]

#: Runs per setting by default (about 0.02-0.1 s each on one core).
DEFAULT_RUNS = 1000

#: The speculative-sampling companions (a replacement of ``_speculative_sampling``).
_SPECULATIVE = ("always-accept", "skip-residual")

#: Seed of the fixed order in which the universal assistant's tokenizer lists its vocabulary
#: (``get_vocab``), standing for the per-process order of the Rust hash map it comes from.
VOCAB_ORDER_SEED = 2024


@dataclass(frozen=True)
class TfSetting:
    """One ``generate`` configuration (plain data)."""

    k: int  # tokens drafted a step (num_assistant_tokens; for mtp and dflash fixed by the drafter: 2)
    sampling: Sampling = field(default_factory=Sampling)
    schedule: str = "constant"  # num_assistant_tokens_schedule
    threshold: float = 0.0  # assistant_confidence_threshold (0: every draft runs k tokens)
    lookup: bool = False  # prompt lookup (prompt_lookup_num_tokens = k) instead of the assistant
    assistant: bool = True  # False: plain sampling (the control row)
    ensemble: float | None = None  # assistant_ensemble_weight (DIVERSE: biased by design)
    generator: str = "assistant"  # assistant | universal | gemma4 | mtp | dflash (module docstring)
    vocab_order: str = "shuffled"  # universal: the order get_vocab() lists the draft's words (or "id")
    repair: str | None = None  # "one-hot-q": gemma4's q replaced by the point mass on its draft
    companions: tuple = _SPECULATIVE  # the planted companions that run this setting

    @property
    def length(self) -> int:
        """L: two steps; for the drafters that skip the first call, that call's token too."""
        return self.k + (3 if self.generator in ("gemma4", "mtp", "dflash") else 2)


_TOP50, _TOP3 = Sampling(top_k=50), Sampling(top_k=3)

#: The companions of the drafters' settings with top-k active. NOTE: raw-q runs only there: with
#: no logit cut (top_k 50 on 8 tokens, T = 1) the raw logits are the processed ones and raw-q is
#: the real path.
_CUT = _SPECULATIVE + ("raw-q",)

#: The settings (name -> configuration).
SETTINGS = {
    "sampling (no assistant)": TfSetting(k=2, assistant=False, companions=()),
    "k=1": TfSetting(k=1),
    "k=2": TfSetting(k=2),
    "k=3": TfSetting(k=3),
    "k=4": TfSetting(k=4),
    "heuristic schedule": TfSetting(k=2, schedule="heuristic"),
    "confidence threshold 0.4": TfSetting(k=3, threshold=0.4),
    "temperature 0.6": TfSetting(k=2, sampling=Sampling(temperature=0.6)),
    "temperature 1.5": TfSetting(k=2, sampling=Sampling(temperature=1.5)),
    "top_k=3": TfSetting(k=2, sampling=_TOP3),
    "top_p=0.8": TfSetting(k=2, sampling=Sampling(top_p=0.8)),
    "min_p=0.2": TfSetting(k=2, sampling=Sampling(min_p=0.2)),
    "repetition_penalty=1.5": TfSetting(k=2, sampling=Sampling(repetition_penalty=1.5)),
    # NOTE: no companion: prompt lookup returns no candidate logits, so transformers verifies it by
    # sample-and-match and never calls _speculative_sampling, where the companions plant their bug
    # (run there, a companion is the real path and is not rejected)
    "prompt lookup k=3": TfSetting(k=3, lookup=True, companions=()),
    "ensemble weight 0.5 (biased by design)": TfSetting(k=2, ensemble=0.5),
    "universal assisted 2 drafted top_k 50": TfSetting(k=2, sampling=_TOP50, generator="universal"),
    "gemma4 assistant 2 drafted top_k 50": TfSetting(k=2, sampling=_TOP50, generator="gemma4"),
    "gemma4 assistant 2 drafted top_k 3": TfSetting(k=2, sampling=_TOP3, generator="gemma4"),
    "mtp 2 layers top_k 50": TfSetting(k=2, sampling=_TOP50, generator="mtp"),
    "mtp 2 layers top_k 3": TfSetting(k=2, sampling=_TOP3, generator="mtp", companions=_CUT),
    "dflash block 3 top_k 50": TfSetting(k=2, sampling=_TOP50, generator="dflash"),
    "dflash block 3 top_k 3": TfSetting(k=2, sampling=_TOP3, generator="dflash", companions=_CUT),
}

#: The findings' settings with their cause removed (module docstring): the same ``generate`` call,
#: not audited by default; the tests and the reproductions run them (:func:`controls`).
CONTROLS = {
    "universal assisted 2 drafted top_k 50 (draft vocabulary in id order)":
        TfSetting(k=2, sampling=_TOP50, generator="universal", vocab_order="id"),
    "gemma4 assistant 2 drafted top_k 3 (one-hot q)":
        TfSetting(k=2, sampling=_TOP3, generator="gemma4", repair="one-hot-q"),
}

ENGINE = Engine(name="transformers", package="transformers", distribution="transformers", pinned="5.24.0",
                extra="hf", summary="generate() with an assistant model, prompt lookup, universal assisted "
                "generation, a Gemma 4 assistant, MTP layers or a DFlash drafter (_assisted_decoding, "
                "_speculative_sampling)", settings=tuple(SETTINGS), planted=_SPECULATIVE + ("raw-q",))


def version() -> str:
    """The engine's installed version.

    Returns
    -------
    str
        The installed version of the engine.
    """
    return require(ENGINE, warn=False)[1]


# ----------------------------------------------------------------------------------------------
# The tiny models (no download; each built once per process)


def _scaled_head(model, head):
    """Multiply ``head``'s weights by :data:`.tiny.HEAD_SCALE` (laws neither uniform nor one-hot)."""
    import torch

    from .tiny import HEAD_SCALE

    with torch.no_grad():
        head.weight.mul_(HEAD_SCALE)
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    return model


def _word_tokenizer(words: list, order: list | None = None):
    """A ``PreTrainedTokenizerFast`` over a WordLevel model: word ``words[i]`` is id ``i``, words
    split on whitespace, no special tokens; ``get_vocab()`` lists the words in ``order`` (ids)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    class WordTokenizer(PreTrainedTokenizerFast):
        def get_vocab(self):
            vocab = super().get_vocab()
            if order is None:
                return vocab
            # NOTE: the only change: a fixed order instead of the Rust hash map's (module docstring)
            rank = {i: r for r, i in enumerate(order)}
            return dict(sorted(vocab.items(), key=lambda kv: rank[kv[1]]))

    backend = Tokenizer(models.WordLevel(vocab={w: i for i, w in enumerate(words)}, unk_token=None))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return WordTokenizer(tokenizer_object=backend)


#: The universal assistant's words: the target's 8 (``w0`` .. ``w7`` = ids 0..7) under other ids,
#: and ``x``, which the target lacks.
UNIVERSAL_DRAFT_WORDS = ("x", "w5", "w2", "w7", "w0", "w3", "w6", "w1", "w4")


@functools.lru_cache(maxsize=None)
def _universal(vocab_order: str):
    """``(target tokenizer, assistant tokenizer, assistant)``: the assistant is a tiny Llama over
    :data:`UNIVERSAL_DRAFT_WORDS` (transformers prunes its head in place on first use: one per order)."""
    import numpy as np
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from .tiny import VOCAB

    n = len(UNIVERSAL_DRAFT_WORDS)
    order = (list(range(n)) if vocab_order == "id"
             else np.random.default_rng(VOCAB_ORDER_SEED).permutation(n).tolist())
    target_tok = _word_tokenizer([f"w{i}" for i in range(VOCAB)], order=list(range(VOCAB)))
    draft_tok = _word_tokenizer(list(UNIVERSAL_DRAFT_WORDS), order=order)
    cfg = LlamaConfig(vocab_size=n, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                      num_key_value_heads=2, max_position_embeddings=64, bos_token_id=0, eos_token_id=None,
                      pad_token_id=0, tie_word_embeddings=False)
    torch.manual_seed(91011)
    draft = LlamaForCausalLM(cfg).eval()
    return target_tok, draft_tok, _scaled_head(draft, draft.lm_head)


def _gemma4_text_config():
    from transformers import Gemma4TextConfig

    from .tiny import VOCAB

    # NOTE: both attention types, since the assistant reads the target's last KV state of each
    return Gemma4TextConfig(vocab_size=VOCAB, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                            layer_types=["sliding_attention", "full_attention"], num_attention_heads=2,
                            num_key_value_heads=1, head_dim=8, global_head_dim=8, vocab_size_per_layer_input=0,
                            hidden_size_per_layer_input=0, sliding_window=32, max_position_embeddings=64,
                            pad_token_id=0, eos_token_id=None, bos_token_id=0, tie_word_embeddings=False)


@functools.lru_cache(maxsize=None)
def _gemma4_pair():
    """``(target, assistant)``: a tiny ``Gemma4ForCausalLM`` and ``Gemma4AssistantForCausalLM``."""
    import torch
    from transformers import Gemma4AssistantConfig, Gemma4AssistantForCausalLM, Gemma4ForCausalLM

    torch.manual_seed(1234)
    target = Gemma4ForCausalLM(_gemma4_text_config()).eval()
    cfg = Gemma4AssistantConfig(text_config=_gemma4_text_config(), backbone_hidden_size=16, tie_word_embeddings=False)
    torch.manual_seed(5678)
    assistant = Gemma4AssistantForCausalLM(cfg).eval()
    return _scaled_head(target, target.lm_head), _scaled_head(assistant, assistant.lm_head)


#: MTP layers of the MTP target (k = 2 tokens drafted a step).
MTP_LAYERS = 2


@functools.lru_cache(maxsize=None)
def _mtp_target():
    """A tiny ``Glm4MoeForCausalLM`` (one dense layer) with :data:`MTP_LAYERS` MTP layers in the
    checkpoint it is saved to, a temporary directory kept for the process's life.

    The checkpoint is that of the same model with ``1 + MTP_LAYERS`` layers (two routed experts, one
    shared), its layers after the first standing as the MTP layers' blocks, with their ``enorm``,
    ``hnorm``, ``eh_proj`` and ``shared_head.norm`` added (GLM-4.5's layout: the MTP layers follow the
    last hidden layer). The model audited is its first layer, embedding, norm and head.
    """
    import glob
    import tempfile

    import torch
    from safetensors.torch import load_file, save_file
    from transformers import Glm4MoeConfig, Glm4MoeForCausalLM

    from .tiny import VOCAB

    def config(layers):
        return Glm4MoeConfig(vocab_size=VOCAB, hidden_size=16, intermediate_size=32, num_hidden_layers=layers,
                             num_attention_heads=2, num_key_value_heads=2, head_dim=8, max_position_embeddings=64,
                             moe_intermediate_size=16, num_experts_per_tok=1, n_shared_experts=1, n_routed_experts=2,
                             first_k_dense_replace=1, bos_token_id=0, eos_token_id=None, pad_token_id=0,
                             num_mtp_layers=MTP_LAYERS, tie_word_embeddings=False)

    from transformers.utils import logging

    torch.manual_seed(4321)
    full = Glm4MoeForCausalLM(config(1 + MTP_LAYERS)).eval()
    folder = tempfile.TemporaryDirectory(prefix="rheo-audit-mtp-")
    bars = logging.is_progress_bar_enabled()
    logging.disable_progress_bar()
    try:
        full.save_pretrained(folder.name)
    finally:
        if bars:
            logging.enable_progress_bar()
    (path,) = glob.glob(f"{folder.name}/*.safetensors")
    weights = load_file(path)
    g = torch.Generator().manual_seed(8765)
    hidden = full.config.hidden_size
    for i in range(1, 1 + MTP_LAYERS):
        for norm in ("enorm", "hnorm", "shared_head.norm"):
            weights[f"model.layers.{i}.{norm}.weight"] = torch.ones(hidden)
        weights[f"model.layers.{i}.eh_proj.weight"] = torch.randn(hidden, 2 * hidden, generator=g) / (2 * hidden) ** 0.5
    save_file(weights, path, metadata={"format": "pt"})
    model = Glm4MoeForCausalLM(config(1)).eval()
    own = model.state_dict()
    model.load_state_dict({k: v for k, v in full.state_dict().items() if k in own}, strict=True)
    model.config.name_or_path = folder.name
    model.config.dtype = torch.float32  # NOTE: MtpModel.from_pretrained builds its layers in this dtype
    # NOTE: Glm4Moe names the released checkpoints' MTP layers (layers 46 and 92); here they follow layer 0
    model._keys_to_ignore_on_load_unexpected = [rf"model\.layers\.{i}\." for i in range(1, 1 + MTP_LAYERS)]
    model._rheo_checkpoint = folder  # NOTE: the directory lives as long as the model
    return _scaled_head(model, model.lm_head)


#: DFlash's block: the bonus token and ``DFLASH_BLOCK - 1`` drafted tokens a step.
DFLASH_BLOCK = 3


@functools.lru_cache(maxsize=None)
def _dflash_assistant():
    """A tiny ``MuseGlimmerAssistantModel`` drafting for the tiny Llama target of :mod:`.tiny`
    (context: the target's layer 0; mask token: the last token)."""
    import torch
    from transformers import MuseGlimmerAssistantConfig, MuseGlimmerAssistantModel

    from .tiny import VOCAB

    cfg = MuseGlimmerAssistantConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                                     num_key_value_heads=2, head_dim=8, max_position_embeddings=64, sliding_window=64,
                                     bos_token_id=0, eos_token_id=None, pad_token_id=0, block_size=DFLASH_BLOCK,
                                     mask_token_id=VOCAB - 1, target_layer_ids=[0])
    torch.manual_seed(2468)
    return MuseGlimmerAssistantModel(cfg).eval()


def _target(cfg: TfSetting):
    from .tiny import tiny_pair

    if cfg.generator == "gemma4":
        return _gemma4_pair()[0]
    if cfg.generator == "mtp":
        return _mtp_target()
    return tiny_pair()[0]


# ----------------------------------------------------------------------------------------------
# Companions and repairs (wrappers around transformers' code, for the duration of the runs)


def _planted_sampling(bug: str):
    """A replacement of ``_speculative_sampling`` with one bug (module docstring)."""
    import torch

    def speculative_sampling(candidate_input_ids, candidate_logits, candidate_length, new_logits,
                             assistant_ensemble_weight=None):
        drafted = candidate_input_ids[0, -candidate_length:]  # [k]
        q = candidate_logits[0].softmax(dim=-1)  # [k, V]
        p = new_logits[0].softmax(dim=-1)  # [k+1, V]
        n = candidate_length
        if bug == "skip-residual":
            for i in range(candidate_length):
                x = int(drafted[i])
                if not float(torch.rand(())) * float(q[i, x]) < float(p[i, x]):
                    n = i
                    break
        last = p[n]  # NOTE: the bug of skip-residual: p, not norm((p - q)+), after a rejection
        t = torch.multinomial(last, 1)  # [1]
        return torch.cat([drafted[:n], t])[None], torch.tensor(n)

    return speculative_sampling


def _raw_q(original):
    """``get_candidates`` of a drafter that samples from processed logits, returning the raw logits
    its processors were handed as ``q`` (the bug of transformers #47932)."""
    import torch

    def get_candidates(self, *args, **kwargs):
        processors, raw = self.logits_processor, []

        def recording(input_ids, scores):  # scores: [1, V]
            raw.append(scores.detach().clone())
            return processors(input_ids, scores)

        self.logits_processor = recording
        try:
            ids, logits = original(self, *args, **kwargs)
        finally:
            self.logits_processor = processors
        if logits is not None:
            logits = torch.stack(raw, dim=1).to(logits.dtype)  # [1, k, V]
        return ids, logits

    return get_candidates


def _one_hot_q(original):
    """``get_candidates`` of the Gemma 4 assistant returning the point mass on each arg-max draft as
    ``q`` (logits 0 there, -inf elsewhere), the law the drafts are drawn from."""
    import torch

    def get_candidates(self, *args, **kwargs):
        ids, logits = original(self, *args, **kwargs)
        if logits is not None:
            drafted = ids[:, -logits.shape[1]:]  # [1, k]
            logits = torch.full_like(logits, -float("inf")).scatter(-1, drafted[..., None], 0.0)  # [1, k, V]
        return ids, logits

    return get_candidates


@contextlib.contextmanager
def _patched(planted: str | None, repair: str | None = None):
    """transformers with companion ``planted`` and repair ``repair`` in place (None: as it is)."""
    import transformers.generation.candidate_generator as cg
    import transformers.generation.utils as gu

    swaps = []  # (owner, attribute, replacement)
    if planted in _SPECULATIVE:
        swaps.append((gu, "_speculative_sampling", _planted_sampling(planted)))
    elif planted == "raw-q":
        for cls in (cg.MTPCandidateGenerator, cg.DFlashTokenCandidateGenerator):
            swaps.append((cls, "get_candidates", _raw_q(cls.get_candidates)))
    if repair == "one-hot-q":
        cls = cg.SinglePositionMultiTokenCandidateGenerator
        swaps.append((cls, "get_candidates", _one_hot_q(cls.get_candidates)))
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in swaps]
    try:
        for owner, name, new in swaps:
            setattr(owner, name, new)
        yield
    finally:
        for owner, name, old in reversed(saved):
            setattr(owner, name, old)


# ----------------------------------------------------------------------------------------------
# The settings


def _sampler(cfg: TfSetting, L: int, planted: str | None, index: int):
    import numpy as np
    import torch

    from .tiny import PROMPT, tiny_pair

    target = _target(cfg)
    prompt = torch.tensor([PROMPT], dtype=torch.long)  # [1, len(PROMPT)]
    s = cfg.sampling
    kw = dict(do_sample=True, max_new_tokens=L, temperature=s.temperature, top_k=s.top_k or 0,
              top_p=s.top_p if s.top_p is not None else 1.0, min_p=s.min_p,
              repetition_penalty=s.repetition_penalty if s.repetition_penalty is not None else 1.0,
              pad_token_id=0)
    drafter = None  # the model whose generation_config sets the draft length
    if cfg.generator == "universal":
        target_tok, draft_tok, drafter = _universal(cfg.vocab_order)
        kw.update(assistant_model=drafter, tokenizer=target_tok, assistant_tokenizer=draft_tok)
    elif cfg.generator == "gemma4":
        drafter = _gemma4_pair()[1]
        kw.update(assistant_model=drafter)
    elif cfg.generator == "mtp":
        kw.update(use_mtp=True)
    elif cfg.generator == "dflash":
        kw.update(assistant_model=_dflash_assistant(), speculation_type="dflash")
    elif cfg.lookup:
        kw.update(prompt_lookup_num_tokens=cfg.k, max_matching_ngram_size=2)
    elif cfg.assistant:
        drafter = tiny_pair()[1]
        kw.update(assistant_model=drafter)
        if cfg.ensemble is not None:
            kw.update(assistant_ensemble_weight=cfg.ensemble)

    warmed = []

    def sample(n: int, seed: int):
        from transformers.utils import logging

        if drafter is not None:
            gc = drafter.generation_config
            saved = (gc.num_assistant_tokens, gc.num_assistant_tokens_schedule, gc.assistant_confidence_threshold)
            gc.num_assistant_tokens, gc.num_assistant_tokens_schedule = cfg.k, cfg.schedule
            gc.assistant_confidence_threshold = cfg.threshold
        verbosity, bars, threads = logging.get_verbosity(), logging.is_progress_bar_enabled(), torch.get_num_threads()
        logging.set_verbosity_error()  # NOTE: generate's deprecation notices, once per call
        logging.disable_progress_bar()  # NOTE: MtpModel.from_pretrained's, at every mtp call
        torch.set_num_threads(1)  # NOTE: on tensors of a few rows of 16 a second thread only adds its start-up
        try:
            with _patched(planted, cfg.repair), torch.inference_mode():
                if not warmed:
                    # NOTE: one unseeded call first: universal assisted generation prunes the
                    # assistant's head in place on its first call, so without it the first seeded
                    # run of a process met another model than every later one (not reproducible)
                    target.generate(prompt, **dict(kw, max_new_tokens=1))
                    warmed.append(True)
                torch.manual_seed(int(np.random.SeedSequence([int(seed), index]).generate_state(1)[0]))
                return [tuple(target.generate(prompt, **kw)[0, len(PROMPT):].tolist()) for _ in range(n)]
        finally:
            if drafter is not None:
                gc.num_assistant_tokens, gc.num_assistant_tokens_schedule, gc.assistant_confidence_threshold = saved
            logging.set_verbosity(verbosity)
            if bars:
                logging.enable_progress_bar()
            torch.set_num_threads(threads)

    return sample


#: What each candidate generator needs from transformers (module, name), beyond ``generate``.
_NEEDS = {
    "universal": (("transformers.generation.candidate_generator", "UniversalSpeculativeDecodingGenerator"),
                  ("transformers", "PreTrainedTokenizerFast")),
    "gemma4": (("transformers.generation.candidate_generator", "SinglePositionMultiTokenCandidateGenerator"),
               ("transformers", "Gemma4ForCausalLM"), ("transformers", "Gemma4AssistantForCausalLM")),
    "mtp": (("transformers.generation.candidate_generator", "MTPCandidateGenerator"),
            ("transformers.modeling_layers", "MtpModel"), ("transformers", "Glm4MoeForCausalLM")),
    "dflash": (("transformers.generation.candidate_generator", "DFlashTokenCandidateGenerator"),
               ("transformers", "MuseGlimmerAssistantModel")),
}


def _missing(generator: str) -> str | None:
    """The first thing ``generator`` needs that the installed transformers lacks (None: nothing)."""
    import importlib

    for module, name in _NEEDS.get(generator, ()):
        try:
            getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            return f"{module}.{name}"
    return None


def _build(table: dict, offset: int, planted: str | None, only) -> list[Setting]:
    import sys

    from .tiny import PROMPT, target_laws

    out, warned = [], set()
    for index, (name, cfg) in enumerate(table.items()):
        if (only is not None and name not in only) or (planted is not None and planted not in cfg.companions):
            continue
        missing = _missing(cfg.generator)
        if missing is not None:  # NOTE: another transformers than the pinned one: audit what it has
            if cfg.generator not in warned:
                print(f"rheo audit: warning: the {cfg.generator} settings need {missing}, which this transformers "
                      f"lacks; left out", file=sys.stderr)
                warned.add(cfg.generator)
            continue
        L = cfg.length
        detail = dict(engine="transformers", generator=cfg.generator, k=cfg.k, schedule=cfg.schedule,
                      threshold=cfg.threshold, lookup=cfg.lookup, assistant=cfg.assistant, ensemble=cfg.ensemble,
                      dtype=str(_target(cfg).dtype).removeprefix("torch."), **cfg.sampling.to_dict())
        if cfg.ensemble is not None:  # NOTE: DIVERSE mixes the assistant's law into p: biased on purpose
            detail.update(by_design=f"assistant_ensemble_weight={cfg.ensemble:g}")
        if cfg.generator == "universal":
            detail.update(vocab_order=cfg.vocab_order)
        if cfg.repair is not None:
            detail.update(repair=cfg.repair)
        out.append(Setting(name, L, target_laws(_target(cfg), PROMPT, cfg.sampling),
                           _sampler(cfg, L, planted, offset + index), detail))
    return out


def settings(planted: str | None = None, only=None) -> list[Setting]:
    """The :data:`SETTINGS` (those named in ``only``), each as an audit :class:`Setting`;
    ``planted``: with that companion's bug (only the settings that list it).

    Parameters
    ----------
    planted : str, optional
        A planted companion's name (its bug in place of the engine's own code).
    only : sequence of str, optional
        Setting names.

    Returns
    -------
    list of rheotheory.audit.core.Setting
    """
    require(ENGINE)
    return _build(SETTINGS, 0, planted, only)


def controls(planted: str | None = None, only=None) -> list[Setting]:
    """The :data:`CONTROLS` (those named in ``only``), as :func:`settings` builds them (their seeds
    follow the settings').

    Parameters
    ----------
    planted : str, optional
        A planted companion's name (its bug in place of the engine's own code).
    only : sequence of str, optional
        Setting names.

    Returns
    -------
    list of rheotheory.audit.core.Setting
    """
    require(ENGINE)
    return _build(CONTROLS, len(SETTINGS), planted, only)
