"""Any Hugging Face causal language model as a decoding target or draft.

:class:`HFLM` wraps a ``transformers`` ``AutoModelForCausalLM`` behind the model interface of
:mod:`rheotheory.decode.backends.tree_lm` (``cfg``, ``new_cache``, ``extend``, ``forward``, ``num_params``),
so the decoding engine, ``rheo decode`` and ``rheo bench`` drive it unchanged. The model's own
classes do the arithmetic; this module only feeds them three things:

- **positions**: ``position_ids = cache.length + depths`` (# [1, n]), so a tree node sits where a
  chain through it would (rotary models and GPT-2's learned absolute positions alike);
- **the tree attention mask**: a 4-D additive float mask # [1, 1, n, past + n], 0 where a new token
  may attend (every committed entry; among the scratch entries, those ``mask`` allows), the
  dtype's most negative number elsewhere. ``transformers`` passes a 4-D mask through to the
  attention unchanged (``masking_utils``: "already prepared, or custom"); both the ``sdpa`` and
  the ``eager`` attention add it to the scores;
- **the KV cache**: a ``transformers`` ``DynamicCache`` held by :class:`HFCache`, with the
  committed/scratch layout of :class:`~rheotheory.decode.backends.tree_lm.CacheBase`: a pass first drops
  the scratch entries from ``offset`` on, then the model appends its ``n`` new keys/values;
  ``commit(keep)`` moves the accepted path's entries right after the committed ones.

Tested with ``transformers`` 4.57.6 and 5.24.0 (torch 2.13, CPU, float32 and float64) on the
Llama (SmolLM2 is one), Qwen2 and GPT-2 families, under both the ``sdpa`` and the ``eager``
attention (``tests/test_decode_hf.py``: tree-pass logits equal those of each root-to-node path
run causally). Other decoder-only families whose attention takes an additive 4-D mask and whose
positions come from ``position_ids`` should work; models with sliding-window layers are refused
(the explicit mask does not apply the window).

Install: ``python3 -m pip install 'rheotheory[hf]'`` (``transformers>=4.57``).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from ...errors import InstanceError
from .builtin import resolve_device
from .tree_lm import CacheBase, check_positions
from .smollm import SMOL_PROMPTS

__all__ = ["HFConfig", "HFLM", "HFCache", "HFPair", "INSTALL_HINT", "HF_PROMPTS", "tree_bias", "load_hf_pair",
           "bind_head"]

#: One line telling how to install the optional Hugging Face back-end.
INSTALL_HINT = "the Hugging Face back-end needs transformers: python3 -m pip install 'rheotheory[hf]'"
#: Benchmark prompts for a pair loaded from directories (plain English and code openings).
HF_PROMPTS = SMOL_PROMPTS
#: Dtypes ``load_hf_pair`` accepts by name (``--dtype``).
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def _transformers():
    try:
        import transformers
    except ImportError:
        raise InstanceError(INSTALL_HINT) from None
    return transformers


@dataclass(frozen=True)
class HFConfig:
    """What the engine reads of a wrapped model.

    Attributes
    ----------
    vocab_size : int
        Logits per position (the model's output head).
    max_len : int
        Positions the model holds (its ``max_position_embeddings``, or a smaller cap).
    model_type : str
        ``transformers``' family name: llama, qwen2, gpt2, ...
    """

    vocab_size: int  # logits per position (the model's output head)
    max_len: int  # positions the model holds (its max_position_embeddings, or a smaller cap)
    model_type: str  # transformers' family name: llama, qwen2, gpt2, ...


class HFCache(CacheBase):
    """KV cache of an :class:`HFLM`: a ``transformers`` ``DynamicCache`` with the committed/scratch
    layout of :class:`~rheotheory.decode.backends.tree_lm.CacheBase` (whose ``commit`` it uses).

    Per layer, ``kv.layers[i].keys`` / ``.values`` # [1, H_kv, entries, hd]: entries
    ``0 .. length - 1`` are committed, the rest is the scratch area of uncommitted tree tokens.

    Parameters
    ----------
    max_len : int
        Positions of the model: the most tokens ever committed.

    Attributes
    ----------
    kv : transformers.DynamicCache
        The keys and values (layers created on the first pass).

    Raises
    ------
    InstanceError
        If ``transformers`` is not installed.
    """

    def __init__(self, max_len: int):
        super().__init__(max_len)
        self.kv = _transformers().DynamicCache()  # layers created on the first pass

    def entries(self) -> int:
        """Entries held, committed and scratch.

        Returns
        -------
        int
            The cache's sequence length.
        """
        return self.kv.get_seq_length()

    def truncate(self, total: int) -> None:
        """Keep entries ``0 .. total - 1`` (drop later scratch entries before a pass writes there).

        Parameters
        ----------
        total : int
            Entries kept: ``length + offset`` of the coming pass.

        Raises
        ------
        InstanceError
            If fewer than ``total`` entries are held (a pass at a scratch offset past the entries
            written).
        """
        held = self.entries()
        if held < total:
            raise InstanceError(f"a pass at scratch offset {total - self.length} but only {held - self.length} "
                                "scratch entries are held")
        if held > total:
            for layer in self.kv.layers:
                layer.keys = layer.keys[:, :, :total]
                layer.values = layer.values[:, :, :total]

    def _move(self, src: list[int]) -> None:
        """Copy scratch entries ``src`` to scratch entries ``0 .. len(src) - 1`` (every layer)."""
        a, m = self.length, len(src)
        for layer in self.kv.layers:
            idx = torch.tensor(src, device=layer.keys.device) + a
            layer.keys[:, :, a:a + m] = layer.keys.index_select(2, idx)  # index_select copies first
            layer.values[:, :, a:a + m] = layer.values.index_select(2, idx)


def tree_bias(mask, n: int, length: int, offset: int, dtype, device) -> torch.Tensor:
    """The 4-D additive mask of a pass: # [1, 1, n, length + offset + n].

    0 where a new token may attend, ``finfo(dtype).min`` elsewhere. Committed entries (the first
    ``length``) are always visible; ``mask`` rules the rest.

    NOTE: the dtype's minimum, not -inf: its exponential underflows to exactly 0 as -inf's does,
    and a float16 score plus it cannot produce inf - inf = NaN.

    Parameters
    ----------
    mask : numpy.ndarray or torch.Tensor of shape (n, offset + n), bool, or None
        Which scratch entries each new token may attend to; None: all.
    n : int
        The number of new tokens.
    length : int
        Committed entries.
    offset : int
        Scratch entries before the new tokens' (earlier uncommitted tokens).
    dtype : torch.dtype
        The model's dtype (the mask's, and the source of its minimum).
    device : torch.device
        Where the mask is made.

    Returns
    -------
    torch.Tensor of shape (1, 1, n, length + offset + n)
        The additive mask.

    Examples
    --------
    >>> tree_bias([[True, False], [True, True]], 2, 1, 0, torch.float32, "cpu")[0, 0].eq(0).tolist()
    [[True, True, False], [True, True, True]]
    """
    bias = torch.zeros(1, 1, n, length + offset + n, dtype=dtype, device=device)
    if mask is not None:
        mask = torch.as_tensor(mask, device=device, dtype=torch.bool)
        bias[0, 0, :, length:].masked_fill_(~mask, torch.finfo(dtype).min)
    return bias


class HFLM(nn.Module):
    """A ``transformers`` causal LM with the model interface of :mod:`rheotheory.decode.backends.tree_lm`.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        An ``AutoModelForCausalLM`` (decoder-only), put in eval mode and kept as ``self.model``.
    max_len : int, optional
        Cap on the positions (None: the model's ``max_position_embeddings``).

    Attributes
    ----------
    cfg : HFConfig
        Vocabulary size (the output head's rows), positions and family.

    Raises
    ------
    InstanceError
        If the model has sliding-window attention layers, or its positions cannot be told (no
        ``max_position_embeddings`` and no ``max_len``, or fewer than 2).
    """

    def __init__(self, model, max_len: int | None = None):
        super().__init__()
        c = model.config
        types = getattr(c, "layer_types", None) or []
        if any("sliding" in t for t in types) or getattr(c, "use_sliding_window", False):
            raise InstanceError(f"{c.model_type} model with sliding-window attention layers: not supported "
                                "(the tree mask does not apply the window)")
        positions = getattr(c, "max_position_embeddings", None)
        if max_len is not None:
            positions = max_len if positions is None else min(positions, max_len)
        if not isinstance(positions, int) or positions < 2:
            raise InstanceError(f"cannot tell the {c.model_type} model's positions; pass max_len")
        head = model.get_output_embeddings()
        vocab = head.weight.shape[0] if head is not None else c.vocab_size
        self.model = model.eval()
        # NOTE: transformers 5 renamed the forward's ``past_key_values`` to ``cache`` (the old name is
        # deprecated); 4.57 knows only the old one.
        self._cache_arg = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
        self.cfg = HFConfig(vocab_size=int(vocab), max_len=int(positions), model_type=str(c.model_type))

    def num_params(self) -> int:
        """The number of parameters of the wrapped model (tied ones counted once).

        Returns
        -------
        int
            Total elements of its parameters.
        """
        return sum(p.numel() for p in self.model.parameters())

    @property
    def dtype(self) -> torch.dtype:
        """The dtype of the wrapped model's parameters."""
        return next(self.model.parameters()).dtype

    def new_cache(self) -> HFCache:
        """An empty cache (tensors are created on the model's device, in its dtype, by the first pass).

        Returns
        -------
        HFCache
            No entries; ``max_len`` = ``cfg.max_len``.
        """
        return HFCache(self.cfg.max_len)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Scoring pass without a cache: tokens # [B, T] -> float logits # [B, T, V] (positions 0..T-1).

        Parameters
        ----------
        tokens : torch.Tensor of shape (B, T)
            Token ids (long); causal attention.

        Returns
        -------
        torch.Tensor of shape (B, T, V), float32
            The logits of the next token after each position.

        Raises
        ------
        InstanceError
            If T exceeds ``cfg.max_len``.
        """
        if tokens.shape[1] > self.cfg.max_len:
            raise InstanceError(f"{tokens.shape[1]} tokens exceed the model's {self.cfg.max_len} positions")
        pos = torch.arange(tokens.shape[1], device=tokens.device)[None].expand(tokens.shape[0], -1)
        return self.model(input_ids=tokens, position_ids=pos, use_cache=False).logits.float()

    def extend(self, cache: HFCache, tokens, depths, mask=None, offset: int = 0) -> torch.Tensor:
        """Logits # [n, V] (float32) of new tokens; the model interface of :mod:`rheotheory.decode.backends.tree_lm`.

        The new tokens sit at positions ``cache.length + depths``; scratch entries from ``offset``
        on are dropped first, then their keys/values go to the scratch entries ``offset .. offset +
        n - 1``. Nothing is committed.

        Parameters
        ----------
        cache : HFCache
            This model's cache (from :meth:`new_cache`).
        tokens : sequence of int or torch.Tensor of shape (n,)
            The new tokens' ids.
        depths : sequence of int or torch.Tensor of shape (n,)
            Their depths: token i sits at position ``cache.length + depths[i]``.
        mask : numpy.ndarray or torch.Tensor of shape (n, offset + n), bool, optional
            Which scratch entries each new token attends to; None = all visible.
        offset : int, default 0
            The scratch entries already used by earlier uncommitted tokens.

        Returns
        -------
        torch.Tensor of shape (n, V), float32
            The logits after each new token.

        Raises
        ------
        InstanceError
            If a position would reach past ``cfg.max_len``, or fewer than ``offset`` scratch
            entries are held.
        """
        return self._cached(cache, tokens, depths, mask, offset).logits[0].float()

    def extend_features(self, cache: HFCache, tokens, depths, mask=None, offset: int = 0, layers=()):
        """:meth:`extend` that also returns the hidden states at ``layers``, concatenated.

        What a draft head (:mod:`rheotheory.decode.heads.draft_head`) reads.

        Parameters
        ----------
        cache : HFCache
            This model's cache (from :meth:`new_cache`).
        tokens : sequence of int or torch.Tensor of shape (n,)
            The new tokens' ids.
        depths : sequence of int or torch.Tensor of shape (n,)
            Their depths: token i sits at position ``cache.length + depths[i]``.
        mask : numpy.ndarray or torch.Tensor of shape (n, offset + n), bool, optional
            Which scratch entries each new token attends to; None = all visible.
        offset : int, default 0
            The scratch entries already used by earlier uncommitted tokens.
        layers : sequence of int, default ()
            F indices into ``transformers``' ``hidden_states`` (0: the embeddings, i: after block i);
            at least one.

        Returns
        -------
        logits : torch.Tensor of shape (n, V), float32
            The logits after each new token.
        features : torch.Tensor of shape (n, F d)
            The states at ``layers``, concatenated in that order, in the model's dtype.
        """
        out = self._cached(cache, tokens, depths, mask, offset, output_hidden_states=True)
        return out.logits[0].float(), torch.cat([out.hidden_states[i][0] for i in layers], dim=-1)

    def _cached(self, cache: HFCache, tokens, depths, mask, offset, **kw):
        dev = next(self.model.parameters()).device
        tokens = torch.as_tensor(tokens, device=dev, dtype=torch.long)  # [n]
        depths = torch.as_tensor(depths, device=dev, dtype=torch.long)  # [n]
        n = tokens.shape[0]
        L = cache.length
        check_positions(L, int(depths.max()), self.cfg.max_len)
        cache.truncate(L + offset)
        bias = tree_bias(mask, n, L, offset, self.dtype, dev)  # [1, 1, n, L + offset + n]
        return self.model(input_ids=tokens[None], position_ids=(depths + L)[None], attention_mask=bias,
                          use_cache=True, **{self._cache_arg: cache.kv}, **kw)

    @property
    def embed_tokens(self) -> nn.Embedding:
        """The model's input embedding (a draft head shares it)."""
        return self.model.get_input_embeddings()


def bind_head(target: HFLM, head):
    """A draft head (:mod:`rheotheory.decode.heads.draft_head`) for ``target``.

    The head must have been trained for this target: the same vocabulary and width (its embedding),
    the same number of blocks (its feature layers are block indices) and, when its manifest names
    one, the same ``transformers`` family (``transformers_model_type``); else a one-line error. A
    head in EAGLE-3's format is loaded by :func:`~rheotheory.decode.heads.eagle3.load_eagle3`, which
    makes its own checks.

    Parameters
    ----------
    target : HFLM
        The target the head drafts for.
    head : str, os.PathLike or DraftHead
        A head directory (``head.safetensors`` + ``manifest.json``), loaded and bound to the
        target's input embedding in the target's dtype and device; an EAGLE-3 head directory (or
        ``"eagle3:DIR"``); or a loaded :class:`~rheotheory.decode.heads.draft_head.DraftHead`
        already bound to it.

    Returns
    -------
    DraftHead
        The head, bound to ``target``'s embedding.

    Raises
    ------
    InstanceError
        If a directory does not exist; a loaded head is bound to another embedding; or the head was
        trained for another family, number of blocks, vocabulary or width.
    """
    from ..heads.draft_head import DraftHead, load_head

    c = target.model.config
    if not isinstance(head, DraftHead):
        from ..heads.eagle3 import is_eagle3_dir, load_eagle3

        folder = Path(str(head)[7:] if str(head).startswith("eagle3:") else head)
        if is_eagle3_dir(folder) or str(head).startswith("eagle3:"):  # a head in EAGLE-3's public format
            if not folder.is_dir():
                raise InstanceError(f"the EAGLE-3 head directory {str(folder)!r} does not exist")
            w = target.embed_tokens.weight
            out, _ = load_eagle3(folder, target.embed_tokens, int(c.num_hidden_layers), w.device, target.dtype,
                                 max_len=target.cfg.max_len)
            return out
    if isinstance(head, DraftHead):
        if head.embed is not target.embed_tokens:
            raise InstanceError("the draft head is bound to another model's embedding; load it for this target "
                                "(rheotheory.hf.draft_head(target, DIR) or pass the head directory)")
        cfg, family, where = head.cfg, None, "the draft head"
    else:
        folder = Path(head)
        if not folder.is_dir():
            raise InstanceError(f"the draft head directory {str(folder)!r} does not exist")
        w = target.embed_tokens.weight
        head, manifest = load_head(folder, target.embed_tokens, w.device, target.dtype, max_len=target.cfg.max_len)
        cfg, family, where = head.cfg, manifest.get("transformers_model_type"), f"the draft head in {str(folder)!r}"
    n_layers = getattr(c, "num_hidden_layers", None)
    if family is not None and family != c.model_type:
        raise InstanceError(f"{where} was trained for a {family} target; this target is {c.model_type}")
    if n_layers is not None and cfg.target_layers != n_layers:
        raise InstanceError(f"{where} reads a target of {cfg.target_layers} blocks; this target has {n_layers}")
    if cfg.vocab_size != target.cfg.vocab_size or cfg.hidden != target.embed_tokens.weight.shape[1]:
        raise InstanceError(f"{where} reads a {cfg.vocab_size} x {cfg.hidden} embedding; the target has "
                            f"{target.cfg.vocab_size} tokens of width {target.embed_tokens.weight.shape[1]}")
    return head


@dataclass(frozen=True)
class HFPair:
    """A target p and a draft q loaded from two directories, sharing one tokenizer (the protocol of
    :class:`~rheotheory.decode.backends.builtin.ModelPair`).

    Attributes
    ----------
    target : HFLM
        p.
    draft : HFLM or DraftHead
        q: a causal LM, or a draft head bound to the target.
    manifest : dict
        Where they came from: directories, families, dtype.
    tokenizer : transformers.PreTrainedTokenizerBase
        The target's ``transformers`` tokenizer.
    """

    target: HFLM  # p
    draft: HFLM  # q
    manifest: dict  # where they came from: directories, families, dtype
    tokenizer: object  # the target's ``transformers`` tokenizer

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` alone (no special tokens, no BOS, as the SmolLM2 pair).

        Parameters
        ----------
        text : str
            Any text.

        Returns
        -------
        list of int
            Its token ids.
        """
        # NOTE: no special tokens (no BOS), as the SmolLM2 pair: the prompt is the text alone.
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def decode(self, tokens) -> str:
        """The text of ``tokens``, special tokens left out.

        Parameters
        ----------
        tokens : sequence of int
            Token ids.

        Returns
        -------
        str
            The decoded text.
        """
        return self.tokenizer.decode(list(tokens), skip_special_tokens=True)


def _load_model(tf, path: str, dtype, dev, max_len):
    try:
        model = tf.AutoModelForCausalLM.from_pretrained(str(path), local_files_only=True, dtype=dtype)
    except (OSError, ValueError) as e:
        raise InstanceError(f"cannot load a causal LM from {str(path)!r}: {str(e).splitlines()[0]}") from None
    return HFLM(model.to(dev), max_len)


#: Files of which a saved tokenizer has at least one.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json")


def _load_tokenizer(tf, path: str):
    """The tokenizer saved in ``path``, None when there is none.

    NOTE: the files are checked first: transformers 5 builds an empty tokenizer of the model's
    family from a directory that holds none, which would fail the vocabulary check for no reason.
    """
    if not any((Path(path) / name).is_file() for name in TOKENIZER_FILES):
        return None
    try:
        return tf.AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    except (OSError, ValueError, TypeError):
        return None


def load_hf_pair(target_dir, draft_dir, device="cpu", dtype=torch.float32, max_len: int | None = None) -> HFPair:
    """Target and draft from two local ``save_pretrained`` directories (nothing is downloaded); a
    draft directory holding a draft head (``head.safetensors`` + ``manifest.json``, from
    ``scripts/train_draft_head.py``) gives that head, bound to the target's embedding, and one
    holding an EAGLE-3 head (``config.json`` with ``draft_vocab_size`` + ``model.safetensors`` or
    ``pytorch_model.bin``; :mod:`rheotheory.decode.heads.eagle3`; ``eagle3:DIR`` says so explicitly)
    gives that head. On a CPU in float32 both run their products through oneDNN over packed weights
    (:mod:`~rheotheory.decode.backends.cpu_matmul`).

    The target directory must hold a tokenizer; the draft's, if it holds one, must have the same
    vocabulary, and both output heads the same size.

    Parameters
    ----------
    target_dir : str or os.PathLike
        The target's ``save_pretrained`` directory, with its tokenizer.
    draft_dir : str or os.PathLike
        The draft's directory: a causal LM, a draft head or an EAGLE-3 head (``"eagle3:DIR"``
        forces the latter).
    device : str or torch.device, default "cpu"
        Where both models go.
    dtype : torch.dtype or str, default torch.float32
        A torch dtype or one of :data:`DTYPES`' names (``"float32"``, ``"bfloat16"``, ``"float16"``).
    max_len : int, optional
        Cap on the positions (None: each model's ``max_position_embeddings``).

    Returns
    -------
    HFPair
        Target, draft, the manifest (directories, families, dtype, ``transformers`` version,
        ``cpu_matmul``, ``cpu_single_row_one_thread``) and the target's tokenizer.

    Raises
    ------
    InstanceError
        If ``transformers`` is missing; a directory does not exist or is not a directory; the dtype
        is unknown; the target has no tokenizer; a model cannot be loaded; the tokenizer
        vocabularies or output heads differ; or a draft head was made for another target
        (:func:`bind_head`: family, number of blocks, vocabulary or width).
    """
    if str(draft_dir).startswith("eagle3:"):
        draft_dir = str(draft_dir)[7:]
    for role, folder in (("target", target_dir), ("draft", draft_dir)):
        if not Path(folder).is_dir():
            raise InstanceError(f"the {role} directory {str(folder)!r} does not exist"
                                if not Path(folder).exists() else f"the {role} {str(folder)!r} is not a directory")
    tf = _transformers()
    if isinstance(dtype, str):
        if dtype not in DTYPES:
            raise InstanceError(f"unknown dtype {dtype!r}; use one of {', '.join(DTYPES)}")
        dtype = DTYPES[dtype]
    dev = resolve_device(device) if isinstance(device, str) else device
    tok = _load_tokenizer(tf, target_dir)
    if tok is None:
        raise InstanceError(f"no tokenizer in {str(target_dir)!r} (save one beside the model)")
    from ..heads.draft_head import HEAD_FILES
    from ..heads.eagle3 import is_eagle3_dir

    if all((Path(draft_dir) / f).is_file() for f in HEAD_FILES) or is_eagle3_dir(draft_dir):  # a head for this target
        target = _load_model(tf, target_dir, dtype, dev, max_len)
        eagle3 = is_eagle3_dir(draft_dir)
        head = bind_head(target, draft_dir)  # NOTE: with its checks: family, blocks, vocabulary and width
        manifest = {"target": str(target_dir), "draft": str(draft_dir), "target_family": target.cfg.model_type,
                    "draft_family": "EAGLE-3 head" if eagle3 else "draft head", "dtype": str(dtype).replace("torch.", ""),
                    "transformers": tf.__version__}
        return _packed(HFPair(target, head, manifest, tok))
    draft_tok = _load_tokenizer(tf, draft_dir)
    if draft_tok is not None and draft_tok.get_vocab() != tok.get_vocab():
        raise InstanceError(f"target {str(target_dir)!r} and draft {str(draft_dir)!r} have different tokenizer "
                            "vocabularies; speculative decoding needs one shared vocabulary")
    target = _load_model(tf, target_dir, dtype, dev, max_len)
    draft = _load_model(tf, draft_dir, dtype, dev, max_len)
    if target.cfg.vocab_size != draft.cfg.vocab_size:
        raise InstanceError(f"target and draft output heads differ in size ({target.cfg.vocab_size} vs "
                            f"{draft.cfg.vocab_size} tokens); speculative decoding needs one shared vocabulary")
    manifest = {"target": str(target_dir), "draft": str(draft_dir), "target_family": target.cfg.model_type,
                "draft_family": draft.cfg.model_type, "dtype": str(dtype).replace("torch.", ""),
                "transformers": tf.__version__}
    return _packed(HFPair(target, draft, manifest, tok))


def _packed(pair: HFPair) -> HFPair:
    """``pair`` with both models' float32 CPU products through oneDNN over packed weights
    (:mod:`~rheotheory.decode.backends.cpu_matmul`; nothing changes on CUDA or with
    ``RHEO_CPU_MATMUL=default``); the manifest's ``cpu_matmul`` says which product runs."""
    from .cpu_matmul import describe, pack_for_cpu, single_row_product

    pack_for_cpu(pair.target)
    pack_for_cpu(pair.draft)
    pair.manifest["cpu_matmul"] = describe(pair.target)
    pair.manifest["cpu_single_row_one_thread"] = single_row_product()
    return pair
