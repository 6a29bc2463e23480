"""SmolLM2 pairs: the SmolLM2-135M-Instruct target with a draft chosen by name.

The target is :class:`~rheotheory.decode.backends.smollm.SmolLM`; the drafts share its tokenizer
(``draft=`` of :func:`load_smollm2`, ``--draft`` of ``rheo decode`` and ``rheo bench``):

* ``"head"`` (:data:`DEFAULT_DRAFT`): the trained EAGLE-style draft head shipped in
  :data:`SMOLLM2_HEAD_DIR` (:mod:`rheotheory.decode.heads.draft_head`; one decoder layer over the
  target's features, trained on ShareGPT conversations, a draft vocabulary of 12,288 tokens);
  ``"head:DIR"``: a head saved by ``scripts/train_head_sharegpt.py`` or
  ``scripts/train_draft_head.py``; ``"eagle3:DIR"``: a head in EAGLE-3's public checkpoint
  format (:mod:`rheotheory.decode.heads.eagle3`) made for SmolLM2-135M; ``"head-v3"``: head v3,
  EAGLE-3's architecture trained by ``scripts/train_head_sharegpt.py --arch eagle3`` and shipped
  in that format in :data:`SMOLLM2_HEAD_V3_DIR` (servable by SGLang and vLLM as it is).
* ``"int4"`` (:func:`~rheotheory.decode.backends.smollm.quantised_copy`): a weight-quantised copy, every
  block's linear weight rounded to symmetric 4-bit integers per group of 32 (scale = group
  absmax / 7); the embedding/output head is kept. Single-draft acceptance about 0.75 on
  :data:`~rheotheory.decode.backends.smollm.ACCEPTANCE_TEXTS` at T = 1. NOTE: the copy is stored
  dequantised (float32), so on CPU it costs as much as the target: it measures tokens per step,
  not wall-clock gains.
* ``"layers:N"`` (:meth:`~rheotheory.decode.backends.smollm.SmolLM.layer_skip`): the first N blocks, then
  the target's own final norm and head (early exit), sharing the target's parameters. Cheap
  (N / 30 of a pass) but, untrained, a poor draft for this model (acceptance about 0.06 with
  N = 8).

The model modules (:mod:`~rheotheory.decode.backends.smollm`, :mod:`~rheotheory.decode.heads.draft_head`) know
no default and no shipped file: both are chosen here.
"""

from __future__ import annotations

from pathlib import Path

import torch

from ...errors import InstanceError
from ..heads.draft_head import load_head
from .cpu_matmul import describe, pack_for_cpu, single_row_product
from .smollm import DEFAULT_MAX_LEN, QUANT_GROUP, SmolLM, SmolPair, load_target, quantised_copy

__all__ = ["DEFAULT_DRAFT", "SMOLLM2_HEAD_DIR", "SMOLLM2_HEAD_V3_DIR", "make_draft", "load_smollm2"]

#: Default draft: the trained draft head shipped in :data:`SMOLLM2_HEAD_DIR`.
DEFAULT_DRAFT = "head"
#: Where the package's trained head for SmolLM2-135M-Instruct lives.
SMOLLM2_HEAD_DIR = Path(__file__).resolve().parents[2] / "data" / "smollm2_head"
#: Where head v3 lives: EAGLE-3's architecture and checkpoint format (``config.json`` +
#: ``model.safetensors``), with its ``manifest.json``.
SMOLLM2_HEAD_V3_DIR = Path(__file__).resolve().parents[2] / "data" / "smollm2_head_v3"


def make_draft(target: SmolLM, spec: str):
    """Draft from its name: ``head`` (the package's trained draft head), ``head-v3`` (the shipped
    EAGLE-3 head), ``head:DIR`` (a head saved by ``scripts/train_draft_head.py``), ``eagle3:DIR`` (an
    EAGLE-3 checkpoint), ``int<bits>`` (quantised copy) or ``layers:<n>`` (early exit).

    Parameters
    ----------
    target : SmolLM
        The target; a head is bound to its embedding (on its device, in its dtype, with its
        ``max_len``), a copy or early exit is made from it.
    spec : str
        The draft's name (module docstring).

    Returns
    -------
    draft : DraftHead or SmolLM
        The draft model (an :class:`~rheotheory.decode.heads.eagle3.Eagle3Head` for ``head-v3`` and
        ``eagle3:DIR``).
    description : str
        One line describing it.

    Raises
    ------
    InstanceError
        If the name is unknown, an EAGLE-3 directory does not exist, or the draft cannot be made
        (a head that does not load, bits or layers out of range).
    """
    if isinstance(spec, str) and (spec == "head" or spec.startswith("head:")):
        folder = SMOLLM2_HEAD_DIR if spec == "head" else Path(spec[5:])
        w = target.embed_tokens.weight
        head, man = load_head(folder, target.embed_tokens, w.device, w.dtype, max_len=target.cfg.max_len)
        cfg = head.cfg
        return head, (f"trained draft head ({folder.name}): one decoder layer over target layers "
                      f"{list(cfg.feature_layers)}, draft vocabulary {cfg.draft_vocab}, {head.num_params()} parameters")
    if isinstance(spec, str) and (spec.startswith("eagle3:") or spec == "head-v3"):
        from ..heads.eagle3 import load_eagle3

        folder = SMOLLM2_HEAD_V3_DIR if spec == "head-v3" else Path(spec[7:])
        if not folder.is_dir():
            raise InstanceError(f"the EAGLE-3 head directory {str(folder)!r} does not exist")
        w = target.embed_tokens.weight
        head, _ = load_eagle3(folder, target.embed_tokens, target.cfg.n_layer, w.device, w.dtype,
                              max_len=target.cfg.max_len)
        cfg = head.cfg
        return head, (f"EAGLE-3 head ({folder.name}): target layers {list(cfg.feature_layers)} (hidden_states "
                      f"indices), draft vocabulary {cfg.draft_vocab}, {head.num_params()} parameters")
    if isinstance(spec, str) and spec.startswith("int") and spec[3:].isdigit():
        bits = int(spec[3:])
        return quantised_copy(target, bits), (f"{bits}-bit weight-quantised copy (symmetric, groups of "
                                              f"{QUANT_GROUP}; embedding/head kept)")
    if isinstance(spec, str) and spec.startswith("layers:") and spec[7:].isdigit():
        n = int(spec[7:])
        return target.layer_skip(n), f"layer-skip: first {n} of {target.cfg.n_layer} blocks + final norm + head"
    raise InstanceError(f"unknown SmolLM2 draft {spec!r}; use head, head-v3, head:DIR, eagle3:DIR, int<bits> (e.g. int4) or layers:<n> "
                        "(e.g. layers:8)")


def load_smollm2(device="cpu", draft: str = DEFAULT_DRAFT, max_len: int = DEFAULT_MAX_LEN,
                 dtype=torch.float32, folder=None) -> SmolPair:
    """SmolLM2-135M-Instruct target and the draft named ``draft`` (see :func:`make_draft`).

    Converts and caches the target's weights on first use (about a minute on CPU;
    :func:`~rheotheory.decode.backends.smollm.load_target`). On a CPU in float32 both models' products
    run through oneDNN with packed weights (:mod:`~rheotheory.decode.backends.cpu_matmul`;
    ``RHEO_CPU_MATMUL=default`` keeps PyTorch's own); the manifest's ``cpu_matmul`` says which.

    Parameters
    ----------
    device : str or torch.device, default "cpu"
        Where both models go.
    draft : str, default DEFAULT_DRAFT
        The draft's name (:func:`make_draft`; default :data:`DEFAULT_DRAFT`, the shipped head).
    max_len : int, default DEFAULT_MAX_LEN
        Positions held by the KV caches.
    dtype : torch.dtype, default torch.float32
        The models' dtype.
    folder : str or os.PathLike, optional
        Where the target's converted copy is (default
        :func:`~rheotheory.decode.backends.smollm.cache_dir`).

    Returns
    -------
    SmolPair
        Target, draft (eval mode), the manifest with ``draft`` (the description), ``cpu_matmul``
        and ``cpu_single_row_one_thread`` added, and the tokenizer.

    Raises
    ------
    InstanceError
        From :func:`~rheotheory.decode.backends.smollm.load_target` and :func:`make_draft`.
    """
    target, manifest, tokenizer = load_target(device, max_len=max_len, dtype=dtype, folder=folder)
    q, desc = make_draft(target, draft)  # NOTE: before packing: a quantised draft deep-copies the target
    pack_for_cpu(target)
    pack_for_cpu(q)
    return SmolPair(target, q.eval(), dict(manifest, draft=desc, cpu_matmul=describe(target),
                                           cpu_single_row_one_thread=single_row_product()), tokenizer)
