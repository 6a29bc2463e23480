"""An EAGLE-style draft head: one decoder layer over the target's own hidden features.

The head drafts for a Llama-family target (SmolLM2-135M first) from three things the target
already computed (docs/theory.md section 6.4):

- **fused target features**: the target's hidden states at a few layers (:attr:`HeadConfig.
  feature_layers`, Hugging Face's ``hidden_states`` numbering: ``i`` < n is the output of block
  ``i``, ``n`` the final normed hidden state the output head reads), each RMS-normalised,
  concatenated and projected to the model width (as EAGLE-3 fuses low, middle and high layers);
- **the token embedding** of the token at the position (the target's own, shared, frozen);
- **the target's output rows** restricted to a *draft vocabulary* of ``V_d`` frequent tokens
  (:attr:`vocab_ids`): q is 0 outside it, which stays lossless because the verifier reads the
  very q the draft used (docs/theory.md section 1.1).

At position j the head reads the feature of position j - 1 and the token x_j and returns q of
x_{j+1} and its own output state, which stands in for the target's feature where the target
has not run yet: inside the draft tree a node reads its parent's output state (EAGLE's
autoregression at the feature level). Training unrolls that substitution (EAGLE-3's
"training-time test", :meth:`DraftHead.unrolled`), so the layers of the tree see at training
what they see at decoding.

**As a back-end** the head has the model interface of :mod:`rheotheory.decode.backends.tree_lm` for the
tree passes (``cfg``, ``new_cache``, ``extend``), plus :meth:`DraftHead.catch_up`, the chained
pass over newly committed tokens with the target features of the positions before them; the
engine (:mod:`rheotheory.decode.engine`) feeds those from the target's verification pass
(``extend_features`` of the target back-end). A node's parent is read off the tree mask: the
latest scratch entry among its ancestors, or the root (the last committed position).

Weights ship as safetensors (float16) with a JSON manifest; :func:`load_head` binds them to a
target (its embedding is shared, not stored).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ...errors import InstanceError
from ..backends.tree_lm import KVCache, attention_bias, cache_slices, check_positions
from ..backends.smollm import LlamaBlock, RMSNorm, SmolConfig, _rotate_half, rope_tables

__all__ = ["HeadConfig", "DraftHead", "HeadCache", "unroll_mask", "unroll_attention", "load_head", "save_head", "HEAD_FILES",
           "target_features"]

#: The files of a saved head: weights (float16 safetensors) and manifest.
HEAD_FILES = ("head.safetensors", "manifest.json")


@dataclass(frozen=True)
class HeadConfig:
    """Shape of a draft head and the target it reads.

    The head's one decoder layer has the target's block shape (:meth:`for_target` copies it).

    Attributes
    ----------
    hidden : int
        The target's residual width (d), also the head's.
    n_q_heads : int
        Query heads of the head's layer.
    n_kv_heads : int
        Key/value heads of the head's layer (grouped-query attention).
    head_dim : int
        Width of one attention head.
    intermediate : int
        MLP hidden width of the head's layer.
    rope_theta : float
        Base of the rotary position frequencies.
    rms_eps : float
        Epsilon of the RMSNorms.
    target_layers : int
        n: the target's blocks.
    feature_layers : tuple of int
        Hidden-state indices fused, each in 1..n (n: the final normed hidden state); stored as a
        tuple of int.
    vocab_size : int
        The target's full vocabulary (V).
    draft_vocab : int
        V_d: tokens the head can propose, in 1..V.
    max_len : int, default 1024
        Positions held by the head's KV cache.

    Raises
    ------
    InstanceError
        If ``feature_layers`` is empty or has an index outside 1..``target_layers``, or
        ``draft_vocab`` is outside 1..``vocab_size``.
    """

    hidden: int  # the target's residual width
    n_q_heads: int
    n_kv_heads: int
    head_dim: int
    intermediate: int
    rope_theta: float
    rms_eps: float
    target_layers: int  # n: the target's blocks
    feature_layers: tuple  # hidden-state indices fused (n: the final normed hidden state)
    vocab_size: int  # the target's full vocabulary
    draft_vocab: int  # V_d: tokens the head can propose
    max_len: int = 1024

    def __post_init__(self):
        object.__setattr__(self, "feature_layers", tuple(int(i) for i in self.feature_layers))
        if not self.feature_layers or any(not 1 <= i <= self.target_layers for i in self.feature_layers):
            raise InstanceError(f"feature layers must lie in 1..{self.target_layers}, got {self.feature_layers}")
        if not 1 <= self.draft_vocab <= self.vocab_size:
            raise InstanceError(f"draft vocabulary of {self.draft_vocab} tokens in a vocabulary of {self.vocab_size}")

    def block_config(self) -> SmolConfig:
        """The architecture of the head's one decoder layer (and of its KV cache).

        Returns
        -------
        SmolConfig
            One block (``n_layer=1``) of this shape, vocabulary and ``max_len``.
        """
        return SmolConfig(vocab_size=self.vocab_size, n_layer=1, hidden=self.hidden, n_q_heads=self.n_q_heads,
                          n_kv_heads=self.n_kv_heads, head_dim=self.head_dim, intermediate=self.intermediate,
                          rope_theta=self.rope_theta, rms_eps=self.rms_eps, max_len=self.max_len)

    @classmethod
    def for_target(cls, smol_cfg: SmolConfig, feature_layers, draft_vocab: int) -> "HeadConfig":
        """The config of a head for a target of architecture ``smol_cfg`` (its block shape copied).

        Parameters
        ----------
        smol_cfg : SmolConfig
            The target's architecture (its ``n_layer`` becomes ``target_layers``, its ``max_len``
            the head's).
        feature_layers : sequence of int
            Hidden-state indices fused, each in 1..``smol_cfg.n_layer``.
        draft_vocab : int
            V_d, the size of the draft vocabulary.

        Returns
        -------
        HeadConfig
            The head's config.

        Raises
        ------
        InstanceError
            If a feature layer or ``draft_vocab`` is out of range.
        """
        c = smol_cfg
        return cls(hidden=c.hidden, n_q_heads=c.n_q_heads, n_kv_heads=c.n_kv_heads, head_dim=c.head_dim,
                   intermediate=c.intermediate, rope_theta=c.rope_theta, rms_eps=c.rms_eps,
                   target_layers=c.n_layer, feature_layers=tuple(feature_layers), vocab_size=c.vocab_size,
                   draft_vocab=draft_vocab, max_len=c.max_len)

    def to_dict(self) -> dict:
        """The fields as a JSON-ready dict (``feature_layers`` as a list): a manifest's ``config``.

        Returns
        -------
        dict
            Field name -> value.
        """
        d = asdict(self)
        d["feature_layers"] = list(self.feature_layers)
        return d


def unroll_mask(T: int, k: int, device=None) -> torch.Tensor:
    """Attention of unroll step ``k`` (1-based) over the keys of steps 1..k, # [T, k T] bool.

    Step k at position j stands for a tree node at depth k - 1 below a root at j - k + 1: it sees
    step 1's keys (computed from target features) up to the root, then one key of each later step,
    its ancestors' (step i at position j - k + i), then itself.

    Parameters
    ----------
    T : int
        Positions of the training sequence.
    k : int
        The unroll step, 1-based.
    device : torch.device or str, optional
        Where the mask is made (None: the default device).

    Returns
    -------
    torch.Tensor of shape (T, k T), bool
        Column block i - 1 (i = 1..k) covers the keys of step i at positions 0..T-1; True = may
        attend.

    Examples
    --------
    >>> unroll_mask(3, 2).int().tolist()
    [[0, 0, 0, 1, 0, 0], [1, 0, 0, 0, 1, 0], [1, 1, 0, 0, 0, 1]]
    """
    j = torch.arange(T, device=device)[:, None]
    c = torch.arange(T, device=device)[None, :]
    blocks = [c <= j - k + 1]
    for i in range(2, k + 1):
        blocks.append(c == j - k + i)
    return torch.cat(blocks, dim=1)


def unroll_attention(proj, h, k: int, ks: list, vs: list, cos, sin, head_dim: int) -> torch.Tensor:
    """Attention of unroll step ``k`` (1-based) of a training pass, shared by every head architecture.

    ``proj``'s ``q_proj``/``k_proj``/``v_proj`` of the attention input ``h``, rotary positions,
    this step's keys and values appended to ``ks``/``vs`` (after the earlier steps'), attending as
    :func:`unroll_mask` says.

    Parameters
    ----------
    proj : torch.nn.Module
        The attention's projections: ``q_proj``, ``k_proj``, ``v_proj`` (a ``LlamaBlock`` or an
        EAGLE-3 attention).
    h : torch.Tensor of shape (B, T, D)
        The attention input (normed), D the projections' input width.
    k : int
        The unroll step, 1-based.
    ks, vs : list of torch.Tensor of shape (B, H_kv, T, head_dim)
        The rotated keys and the values of steps 1..k-1; this step's are appended (in place).
    cos, sin : torch.Tensor of shape (T, head_dim)
        Rotary tables of positions 0..T-1.
    head_dim : int
        Width of one attention head.

    Returns
    -------
    torch.Tensor of shape (B, T, H_q head_dim)
        The attention output, before ``o_proj``.
    """
    B, T = h.shape[:2]
    q = proj.q_proj(h).view(B, T, -1, head_dim).transpose(1, 2)
    kk = proj.k_proj(h).view(B, T, -1, head_dim).transpose(1, 2)
    v = proj.v_proj(h).view(B, T, -1, head_dim).transpose(1, 2)
    q = q * cos + _rotate_half(q) * sin
    ks.append(kk * cos + _rotate_half(kk) * sin)
    vs.append(v)
    y = F.scaled_dot_product_attention(q, torch.cat(ks, 2), torch.cat(vs, 2),
                                       attn_mask=unroll_mask(T, k, h.device), enable_gqa=True)
    return y.transpose(1, 2).reshape(B, T, -1)


class HeadCache(KVCache):
    """The head's one-layer KV cache, plus its output states.

    Parameters
    ----------
    cfg : SmolConfig
        The head's block config (:meth:`HeadConfig.block_config`): sizes and ``max_len``.
    device : torch.device or str
        Where the buffers live.
    dtype : torch.dtype
        The head's dtype.

    Attributes
    ----------
    root : torch.Tensor of shape (d,) or None
        The output state of the last committed position (None before the first catch-up).
    scratch : torch.Tensor of shape (entries, d)
        The tree nodes' output states, by scratch entry (grown on demand).
    """

    def __init__(self, cfg: SmolConfig, device, dtype):
        super().__init__(cfg, device, dtype)
        self.root = None
        self.scratch = torch.zeros(0, cfg.hidden, device=device, dtype=dtype)

    def commit(self, keep) -> None:
        """Chained commits (an int) only: a sequence (a tree's accepted path) is ignored.

        Tree entries were computed from the head's own states, so the accepted path is re-read by
        the next :meth:`DraftHead.catch_up` with target features.

        Parameters
        ----------
        keep : int or sequence of int
            An int m commits scratch entries 0..m-1; a sequence commits nothing.

        Raises
        ------
        InstanceError
            If an int commit would exceed ``max_len``.
        """
        if isinstance(keep, (int, np.integer)):
            super().commit(keep)


class DraftHead(nn.Module):
    """The draft head: one decoder layer over fused target features and token embeddings.

    Parameters
    ----------
    cfg : HeadConfig
        The head's shape and the target it reads.
    embed : torch.nn.Embedding
        The target's token embedding, # [V, d] (shared, frozen, not saved); its rows of the draft
        vocabulary are also the output head.
    vocab_ids : sequence of int or torch.Tensor of shape (V_d,)
        The draft vocabulary: ``cfg.draft_vocab`` distinct token ids, in the order of the head's
        logits (a buffer, saved with the head).

    Raises
    ------
    InstanceError
        If ``vocab_ids`` is not ``cfg.draft_vocab`` distinct ids in one dimension.
    """

    #: The rows' packed product (:mod:`~rheotheory.decode.backends.cpu_matmul`); None: ``h @ rows.T``.
    _head_pack = None

    def __init__(self, cfg: HeadConfig, embed: nn.Embedding, vocab_ids):
        super().__init__()
        d = cfg.hidden
        self.cfg = cfg
        self.block_cfg = cfg.block_config()
        self.__dict__["embed"] = embed  # NOTE: not a submodule: neither trained nor saved
        self.feat_norms = nn.ModuleList(RMSNorm(d, cfg.rms_eps) for _ in cfg.feature_layers)
        self.fuse = nn.Linear(len(cfg.feature_layers) * d, d, bias=False)
        self.norm_e = RMSNorm(d, cfg.rms_eps)
        self.norm_g = RMSNorm(d, cfg.rms_eps)
        self.inp = nn.Linear(2 * d, d, bias=False)
        self.layer = LlamaBlock(self.block_cfg)
        self.norm = RMSNorm(d, cfg.rms_eps)
        ids = torch.as_tensor(vocab_ids, dtype=torch.long)
        if ids.ndim != 1 or ids.numel() != cfg.draft_vocab or len(set(ids.tolist())) != ids.numel():
            raise InstanceError(f"the draft vocabulary must be {cfg.draft_vocab} distinct token ids")
        self.register_buffer("vocab_ids", ids)
        hd = cfg.head_dim
        inv = 1.0 / (cfg.rope_theta ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
        self.register_buffer("inv_freq", inv.float(), persistent=False)

    # -- pieces -------------------------------------------------------------------------------
    def head_rows(self) -> torch.Tensor:
        """The target's output rows of the draft vocabulary, # [V_d, d] (tied: embedding rows).

        Returns
        -------
        torch.Tensor of shape (V_d, d)
            A detached copy of the rows.
        """
        return self.embed.weight.detach()[self.vocab_ids]

    def fuse_features(self, feats: torch.Tensor) -> torch.Tensor:
        """Target features # [..., F d] (the layers' states concatenated) -> # [..., d].

        Each layer's state is RMS-normalised, then the concatenation is projected to width d.

        Parameters
        ----------
        feats : torch.Tensor of shape (..., F d)
            The target's states at ``cfg.feature_layers``, concatenated in that order.

        Returns
        -------
        torch.Tensor of shape (..., d)
            The fused feature.
        """
        d = self.cfg.hidden
        parts = [nrm(feats[..., i * d:(i + 1) * d]) for i, nrm in enumerate(self.feat_norms)]
        return self.fuse(torch.cat(parts, dim=-1))

    def _input(self, tokens, g):
        e = self.embed(tokens).detach().to(g.dtype)
        return self.inp(torch.cat([self.norm_e(e), self.norm_g(g)], dim=-1))

    def _rope(self, positions, dtype):
        return rope_tables(self.inv_freq, positions, dtype)

    def draft_logits(self, h, rows=None) -> torch.Tensor:
        """Logits over the draft vocabulary, # [..., V_d], from output states # [..., d].

        Through the packed product of the prepared rows when they are the ones read.

        Parameters
        ----------
        h : torch.Tensor of shape (..., d)
            The head's output states (normed here).
        rows : torch.Tensor of shape (V_d, d), optional
            The output rows to use (a training copy, or the prepared rows); None:
            :meth:`head_rows`.

        Returns
        -------
        torch.Tensor of shape (..., V_d)
            The logits, in the order of ``vocab_ids``.
        """
        if self._head_pack is not None and (rows is None or rows is self._rows):
            return self._head_pack(self.norm(h))
        return self.norm(h) @ (self.head_rows() if rows is None else rows).T

    # -- training -----------------------------------------------------------------------------
    def unrolled(self, tokens: torch.Tensor, feats: torch.Tensor, steps: int, rows=None) -> list:
        """Training pass: per unroll step k = 1..steps the draft logits at every position j.

        Step 1 reads the target feature of j - 1, step k > 1 the head's own step-(k-1) state at
        j - 1 (a tree node at depth k - 1), attending as :func:`unroll_mask` says. Position 0 reads a
        zero feature.

        Parameters
        ----------
        tokens : torch.Tensor of shape (B, T)
            Token ids (long).
        feats : torch.Tensor of shape (B, T, F d)
            The target's features of each position j (its states at ``cfg.feature_layers``).
        steps : int
            Unroll steps.
        rows : torch.Tensor of shape (V_d, d), optional
            Output rows, as for :meth:`draft_logits`.

        Returns
        -------
        list of torch.Tensor of shape (B, T, V_d)
            One tensor of draft logits per step, in order.
        """
        T = tokens.shape[1]
        blk, hd = self.layer, self.cfg.head_dim
        cos, sin = self._rope(torch.arange(T, device=tokens.device), feats.dtype)
        g = self.fuse_features(feats)
        ks, vs, outs = [], [], []
        for k in range(1, steps + 1):
            g_in = torch.cat([torch.zeros_like(g[:, :1]), g[:, :-1]], dim=1)  # feature of j - 1
            x = self._input(tokens, g_in)
            y = unroll_attention(blk, blk.input_layernorm(x), k, ks, vs, cos, sin, hd)
            x = x + blk.o_proj(y)
            hh = blk.post_attention_layernorm(x)
            x = x + blk.down_proj(F.silu(blk.gate_proj(hh)) * blk.up_proj(hh))
            outs.append(self.draft_logits(x, rows))
            g = x  # the next step reads this step's states
        return outs

    # -- decoding back-end --------------------------------------------------------------------
    def new_cache(self) -> HeadCache:
        """An empty cache on the head's device, in its dtype.

        Returns
        -------
        HeadCache
            No committed tokens, no root state.
        """
        w = self.fuse.weight
        return HeadCache(self.block_cfg, w.device, w.dtype)

    def num_params(self) -> int:
        """The number of the head's own parameters (the target's embedding is not one).

        Returns
        -------
        int
            Total elements of its parameters.
        """
        return sum(p.numel() for p in self.parameters())

    @property
    def vocab_size(self) -> int:
        """The target's full vocabulary V (the width of the logits the back-end returns)."""
        return self.cfg.vocab_size

    def _full_logits(self, h) -> torch.Tensor:
        """Logits over the whole vocabulary, # [n, V]: -inf outside the draft vocabulary (q = 0)."""
        out = torch.full((h.shape[0], self.cfg.vocab_size), float("-inf"), device=h.device, dtype=torch.float32)
        out[:, self.vocab_ids] = self.draft_logits(h, self._rows).float()
        return out

    def _run(self, cache: HeadCache, tokens, g, positions, start: int, mask_bias) -> torch.Tensor:
        x = self._input(tokens[None], g[None])
        cos, sin = self._rope(positions, x.dtype)
        return self.layer(x, cos, sin, cache_slices(cache, start, tokens.shape[0]), 0, mask_bias)[0]

    def prepare(self):
        """Cache what every pass reads (the draft-vocabulary rows); call after moving the head.

        Drops a packed product of the old rows.

        Returns
        -------
        DraftHead
            ``self``.
        """
        self._rows = self.head_rows().to(self.fuse.weight.dtype)
        self._head_pack = None  # NOTE: a packed product of the old rows would be stale
        return self

    def head_weight_for_pack(self):
        """The draft-vocabulary rows every pass reads (what
        :func:`~rheotheory.decode.backends.cpu_matmul.pack_for_cpu` packs), None before :meth:`prepare`.

        Returns
        -------
        torch.Tensor of shape (V_d, d) or None
            The prepared rows.
        """
        return getattr(self, "_rows", None)

    def catch_up(self, cache: HeadCache, tokens, feats) -> torch.Tensor:
        """Chained pass over newly committed tokens at positions ``cache.length ..``; commits them.

        Each token reads the target feature of the position before it. The last output state
        becomes the cache's ``root``.

        Parameters
        ----------
        cache : HeadCache
            The head's cache (from :meth:`new_cache`).
        tokens : sequence of int or torch.Tensor of shape (n,)
            The newly committed tokens.
        feats : torch.Tensor of shape (n, F d)
            The target features of the positions before each token (zeros before position 0).

        Returns
        -------
        torch.Tensor of shape (n, V), float32
            Logits over the full vocabulary, -inf outside the draft vocabulary (the last row: q at
            the root).

        Raises
        ------
        InstanceError
            If the positions would reach past ``cfg.max_len``.
        """
        dev = self.fuse.weight.device
        tokens = torch.as_tensor(tokens, device=dev)
        n, L = tokens.shape[0], cache.length
        check_positions(L, n - 1, self.cfg.max_len)
        cache.reserve(L + n)
        g = self.fuse_features(feats.to(self.fuse.weight.dtype))
        bias = attention_bias(np.tri(n, dtype=bool), n, L, L + n, cache.k.dtype, dev)
        h = self._run(cache, tokens, g, torch.arange(L, L + n, device=dev), L, bias)
        cache.commit(n)
        cache.root = h[-1]
        return self._full_logits(h)

    def extend(self, cache: HeadCache, tokens, depths, mask=None, offset: int = 0) -> torch.Tensor:
        """Tree pass (the model interface): each new node reads its parent's output state.

        The parent is the latest scratch entry among its ancestors in ``mask``, else the root. The
        new nodes' output states go to ``cache.scratch[offset:offset + n]``; nothing is committed.

        Parameters
        ----------
        cache : HeadCache
            The head's cache, caught up (:meth:`catch_up`).
        tokens : sequence of int or torch.Tensor of shape (n,)
            The new nodes' tokens.
        depths : sequence of int or torch.Tensor of shape (n,)
            Their depths: node i sits at position ``cache.length + depths[i]``.
        mask : numpy.ndarray of shape (n, offset + n), bool, optional
            Each node's ancestors among the scratch entries, then itself; None = all visible.
        offset : int, default 0
            The scratch entries already used by earlier layers of the tree.

        Returns
        -------
        torch.Tensor of shape (n, V), float32
            Logits over the full vocabulary, -inf outside the draft vocabulary.

        Raises
        ------
        InstanceError
            If the cache has no committed state (no :meth:`catch_up` yet), or a position would
            reach past ``cfg.max_len``.
        """
        dev = self.fuse.weight.device
        tokens = torch.as_tensor(tokens, device=dev)
        depths = torch.as_tensor(depths, device=dev)
        n, L = tokens.shape[0], cache.length
        if cache.root is None:
            raise InstanceError("the draft head's cache has no committed state: call catch_up first")
        check_positions(L, int(depths.max()), self.cfg.max_len)
        m = np.ones((n, offset + n), dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
        parents = []
        for i in range(n):
            anc = np.flatnonzero(m[i, :offset])
            parents.append(int(anc[-1]) if anc.size else -1)
        g = torch.stack([cache.root if p < 0 else cache.scratch[p] for p in parents])
        start = L + offset
        cache.reserve(start + n)
        bias = attention_bias(m, n, L, start + n, cache.k.dtype, dev)
        h = self._run(cache, tokens, g, depths + L, start, bias)
        if cache.scratch.shape[0] < offset + n:
            grow = max(offset + n, 2 * cache.scratch.shape[0]) - cache.scratch.shape[0]
            cache.scratch = torch.cat([cache.scratch, cache.scratch.new_zeros(grow, h.shape[1])])
        cache.scratch[offset:offset + n] = h
        return self._full_logits(h)


@torch.no_grad()
def target_features(hidden_states, layers) -> torch.Tensor:
    """Concatenate a target's hidden states at ``layers`` (Hugging Face numbering), # [..., F d].

    Parameters
    ----------
    hidden_states : sequence of torch.Tensor of shape (..., d)
        The target's ``hidden_states`` (index 0: the embeddings, i: after block i).
    layers : sequence of int
        The F indices read, in order.

    Returns
    -------
    torch.Tensor of shape (..., F d)
        The states concatenated along the last axis (no gradient).
    """
    return torch.cat([hidden_states[i] for i in layers], dim=-1)


def save_head(head: DraftHead, folder, manifest: dict) -> None:
    """Write the head's weights (float16 safetensors) and ``manifest`` (plus its config).

    Parameters
    ----------
    head : DraftHead
        The head saved (its state dict: the target's embedding is not in it).
    folder : str or os.PathLike
        Where :data:`HEAD_FILES` are written (created if needed).
    manifest : dict
        Provenance written to ``manifest.json``, with ``config`` (:meth:`HeadConfig.to_dict`)
        added.
    """
    from safetensors.torch import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().to(torch.float16 if v.is_floating_point() else v.dtype).contiguous().cpu()
             for k, v in head.state_dict().items()}
    save_file(state, str(folder / HEAD_FILES[0]))
    (folder / HEAD_FILES[1]).write_text(json.dumps(dict(manifest, config=head.cfg.to_dict()), indent=1) + "\n")


def load_head(folder, embed: nn.Embedding, device=None, dtype=torch.float32, max_len: int | None = None):
    """A saved head bound to a target's embedding; returns (head, manifest).

    A one-line error when the folder lacks the files or the head was trained for another
    vocabulary or width.

    Parameters
    ----------
    folder : str or os.PathLike
        A folder holding :data:`HEAD_FILES` (from :func:`save_head`).
    embed : torch.nn.Embedding
        The target's token embedding, # [V, d].
    device : torch.device or str, optional
        Where the head goes (None: the embedding's device).
    dtype : torch.dtype, default torch.float32
        The head's dtype.
    max_len : int, optional
        Positions of the head's cache, replacing the saved config's (None: keep it).

    Returns
    -------
    head : DraftHead
        The head, in eval mode, prepared (:meth:`DraftHead.prepare`).
    manifest : dict
        The saved manifest.

    Raises
    ------
    InstanceError
        If the folder lacks a head file, the saved config is invalid, or the embedding is not
        V x d of the config.
    """
    from safetensors.torch import load_file

    folder = Path(folder)
    missing = [f for f in HEAD_FILES if not (folder / f).is_file()]
    if missing:
        raise InstanceError(f"{str(folder)!r} is not a draft head (missing {', '.join(missing)})")
    manifest = json.loads((folder / HEAD_FILES[1]).read_text())
    cfg = dict(manifest["config"])
    if max_len is not None:
        cfg["max_len"] = max_len
    cfg = HeadConfig(**cfg)
    if tuple(embed.weight.shape) != (cfg.vocab_size, cfg.hidden):
        raise InstanceError(f"the draft head in {str(folder)!r} reads a {cfg.vocab_size} x {cfg.hidden} embedding; "
                            f"the target has {tuple(embed.weight.shape)[0]} x {tuple(embed.weight.shape)[1]}")
    state = load_file(str(folder / HEAD_FILES[0]))
    head = DraftHead(cfg, embed, state["vocab_ids"])
    head.load_state_dict({k: v.float() if v.is_floating_point() else v for k, v in state.items()})
    head = head.to(device=device or embed.weight.device, dtype=dtype).eval()
    return head.prepare(), manifest
