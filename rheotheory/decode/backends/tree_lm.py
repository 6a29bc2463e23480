"""A small decoder-only transformer with tree attention, depth-based positions and a KV cache.

One forward pass evaluates a whole draft *tree*: the new tokens attend to every cached token
and, among themselves, only to their ancestors (and themselves). Each new token sits at the
position ``cache length + depth`` so a tree node sees exactly the positions a chain through
it would. After verification the cache commits the keys/values of the accepted path only, so
it always holds the committed text.

**The model interface** every back-end implements (:class:`TinyLM` in torch, its numpy copy
:class:`NumpyLM`, :class:`~rheotheory.decode.backends.smollm.SmolLM`); the decoding engine, the
benchmark and the checks use nothing else:

- ``model.cfg``: ``vocab_size``, ``max_len`` (and the cache's sizes);
- ``model.new_cache()``: an empty cache on the model's device, in its dtype;
- ``model.extend(cache, tokens, depths, mask=None, offset=0)``: logits ``# [n, V]`` (a torch
  tensor, or an array for :class:`NumpyLM`) of ``n`` new tokens at positions
  ``cache.length + depths``. Each layer writes the new tokens' keys/values into the cache's
  *scratch* area (the entries after the committed ones) at ``offset .. offset + n - 1``; the new
  tokens attend to every committed entry and, as ``mask`` (``# [n, offset + n]`` bool, None: all)
  says, to the scratch entries ``0 .. offset + n - 1``: earlier uncommitted tokens (the upper
  layers of a draft tree evaluated layer by layer), then themselves. Nothing is committed.

A torch model's ``forward(tokens)`` (training, scoring; ``# [B, T]``) is the same single pass
(``_pass``) without a cache: :func:`attend` is causal attention among the tokens there.

**The cache interface** (:class:`KVCache` in torch, :class:`NumpyKVCache`; one base,
:class:`CacheBase`): ``cache.length`` committed tokens, and ``cache.commit(keep)``: an int ``m``
commits scratch entries ``0 .. m - 1`` (a chained pass: no data moves), a sequence commits
those scratch entries in that order (the accepted path of a tree). Both keep ``k`` and ``v``
buffers of one layout, ``# [layers, 1, H, capacity, hd]``.

Shapes: B batch (1 with a cache), H heads, L cached tokens, n new tokens, hd = d_model / H.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ...errors import InstanceError

__all__ = ["ModelConfig", "TinyLM", "CacheBase", "KVCache", "tree_mask", "chain_mask", "cache_slices", "attend",
           "NumpyLM", "NumpyKVCache"]

#: Cache entries allocated past ``max_len`` for uncommitted tree tokens (grown on demand).
CACHE_SCRATCH = 64


@dataclass(frozen=True)
class ModelConfig:
    """Architecture of one :class:`TinyLM`.

    Attributes
    ----------
    vocab_size : int, default 128
        V: token ids 0..V-1 (the built-in pair: ASCII code points).
    n_layer : int, default 4
        Transformer blocks.
    n_head : int, default 4
        Attention heads per block.
    d_model : int, default 128
        Residual width; a multiple of ``n_head``.
    max_len : int, default 256
        Positions 0..max_len-1 (learned position embeddings).
    mlp_ratio : int, default 4
        Hidden width of the MLP = mlp_ratio * d_model.

    Raises
    ------
    InstanceError
        If ``d_model`` is not divisible by ``n_head``.
    """

    vocab_size: int = 128  # token ids 0..V-1 (the built-in pair: ASCII code points)
    n_layer: int = 4  # transformer blocks
    n_head: int = 4  # attention heads per block
    d_model: int = 128  # residual width
    max_len: int = 256  # positions 0..max_len-1 (learned position embeddings)
    mlp_ratio: int = 4  # hidden width of the MLP = mlp_ratio * d_model

    def __post_init__(self):
        if self.d_model % self.n_head:
            raise InstanceError(f"d_model {self.d_model} is not divisible by n_head {self.n_head}")

    def to_dict(self) -> dict:
        """The fields as a plain dict (what a checkpoint stores).

        Returns
        -------
        dict[str, int]
            Field name -> value.
        """
        return asdict(self)


class CacheBase:
    """Keys and values of the committed tokens, per layer, then a scratch area, in preallocated buffers.

    ``k``, ``v``: # [layers, 1, H, capacity, hd]; entries ``0 .. length - 1`` are committed. The
    model's ``extend`` writes new tokens' keys/values into the scratch area right after them, so
    a pass attends to one contiguous slice and committing a chain moves no data. Subclasses hold
    the buffers (torch or numpy) and implement :meth:`_grow` and :meth:`_move`.

    Parameters
    ----------
    max_len : int
        Positions of the model: the most tokens ever committed (kept as ``self.max_len``).

    Attributes
    ----------
    length : int
        Committed tokens held (0 at construction).
    """

    def __init__(self, max_len: int):
        self.length = 0  # committed tokens held
        self.max_len = max_len  # positions of the model: the most tokens ever committed

    def reserve(self, total: int) -> None:
        """Grow the buffers (keeping their contents) so that ``total`` entries fit.

        The capacity at least doubles when it grows; nothing happens when ``total`` entries fit.

        Parameters
        ----------
        total : int
            Entries (committed and scratch) the next pass needs.
        """
        cap = self.k.shape[3]
        if total > cap:  # NOTE: only trees far larger than CACHE_SCRATCH near the end of the context get here
            self._grow(max(total, 2 * cap) - cap)

    def commit(self, keep) -> None:
        """Commit scratch entries: they become the next committed tokens.

        Parameters
        ----------
        keep : int or sequence of int
            An int m: scratch entries 0..m-1 (a chained pass: no data moves); a sequence of scratch
            entry indices: those entries, in that order (e.g. the accepted path of a tree).

        Raises
        ------
        InstanceError
            If the committed tokens would exceed ``max_len``.
        """
        if isinstance(keep, (int, np.integer)):
            m, src = int(keep), None
        else:
            src = [int(i) for i in keep]
            m = len(src)
        if self.length + m > self.max_len:
            raise InstanceError(f"context of {self.length + m} tokens exceeds the model's {self.max_len} positions")
        if src is not None and src != list(range(m)):
            self._move(src)
        self.length += m

    def _grow(self, extra: int) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def _move(self, src: list[int]) -> None:  # pragma: no cover - interface
        """Copy scratch entries ``src`` to scratch entries ``0 .. len(src) - 1``."""
        raise NotImplementedError


class KVCache(CacheBase):
    """Torch buffers of :class:`CacheBase`, # [layers, 1, H, capacity, hd] each.

    Parameters
    ----------
    cfg : ModelConfig or SmolConfig
        The model's sizes: ``n_layer``, ``n_head``, ``d_model``, ``max_len`` (capacity ``max_len`` +
        :data:`CACHE_SCRATCH`).
    device : torch.device or str
        Where the buffers live.
    dtype : torch.dtype
        The buffers' dtype (the model's).
    """

    def __init__(self, cfg, device, dtype):
        super().__init__(cfg.max_len)
        hd = cfg.d_model // cfg.n_head
        shape = (cfg.n_layer, 1, cfg.n_head, cfg.max_len + CACHE_SCRATCH, hd)
        self.k = torch.zeros(shape, device=device, dtype=dtype)  # [layers, 1, H, capacity, hd]
        self.v = torch.zeros(shape, device=device, dtype=dtype)  # [layers, 1, H, capacity, hd]

    def _grow(self, extra: int) -> None:
        pad = list(self.k.shape)
        pad[3] = extra
        self.k = torch.cat([self.k, self.k.new_zeros(pad)], dim=3)
        self.v = torch.cat([self.v, self.v.new_zeros(pad)], dim=3)

    def _move(self, src: list[int]) -> None:
        a = self.length
        idx = torch.tensor(src, device=self.k.device) + a
        self.k[:, :, :, a:a + len(src)] = self.k.index_select(3, idx)  # index_select copies first
        self.v[:, :, :, a:a + len(src)] = self.v.index_select(3, idx)


class NumpyKVCache(CacheBase):
    """Numpy buffers of :class:`CacheBase` (for :class:`NumpyLM`), # [layers, 1, H, capacity, hd] each.

    Parameters
    ----------
    cfg : ModelConfig
        The model's sizes: ``n_layer``, ``n_head``, ``d_model``, ``max_len`` (capacity ``max_len`` +
        :data:`CACHE_SCRATCH`).
    dtype : numpy.dtype, default numpy.float32
        The buffers' dtype (the numpy copy's).
    """

    def __init__(self, cfg: ModelConfig, dtype=np.float32):
        super().__init__(cfg.max_len)
        hd = cfg.d_model // cfg.n_head
        self.k = np.zeros((cfg.n_layer, 1, cfg.n_head, cfg.max_len + CACHE_SCRATCH, hd), dtype=dtype)
        self.v = np.zeros_like(self.k)

    def _grow(self, extra: int) -> None:
        pad = ((0, 0), (0, 0), (0, 0), (0, extra), (0, 0))
        self.k, self.v = np.pad(self.k, pad), np.pad(self.v, pad)

    def _move(self, src: list[int]) -> None:
        a = self.length
        idx = np.asarray(src, dtype=np.int64) + a
        self.k[:, :, :, a:a + len(src)] = self.k[:, :, :, idx]  # fancy index: a copy first
        self.v[:, :, :, a:a + len(src)] = self.v[:, :, :, idx]


def chain_mask(n: int) -> np.ndarray:
    """Causal mask among n new tokens. # [n, n] bool, True = may attend

    Parameters
    ----------
    n : int
        The number of new tokens (a chain).

    Returns
    -------
    numpy.ndarray of shape (n, n), bool
        Lower triangular: entry (i, j) True iff j <= i.
    """
    return np.tri(n, dtype=bool)


def tree_mask(parents: list[int]) -> np.ndarray:
    """Ancestor mask of a tree given each node's parent index among the new tokens (-1: none).

    Parameters
    ----------
    parents : list of int
        # [n] each new token's parent index among the new tokens, -1 for none; parents precede
        children.

    Returns
    -------
    numpy.ndarray of shape (n, n), bool
        Entry (i, j) True iff j is i or an ancestor of i.

    Examples
    --------
    >>> tree_mask([-1, 0, 0, 1]).astype(int).tolist()
    [[1, 0, 0, 0], [1, 1, 0, 0], [1, 0, 1, 0], [1, 1, 0, 1]]
    """
    n = len(parents)
    m = np.eye(n, dtype=bool)  # built in numpy: per-element torch ops cost more than the pass
    for i, par in enumerate(parents):
        if par >= 0:
            m[i] |= m[par]
    return m


def check_positions(length: int, depths_max: int, max_len: int) -> None:
    """A clear error when a pass would reach past the model's last position."""
    if length + depths_max + 1 > max_len:
        raise InstanceError(f"context of {length + depths_max + 1} tokens exceeds the model's "
                            f"{max_len} positions; shorten the prompt or --max-new-tokens")


def attention_bias(mask, n: int, length: int, total: int, dtype, device) -> torch.Tensor | None:
    """Additive attention bias of an ``extend`` pass from its ``mask`` (# [n, total - length] bool
    over the scratch entries, None: all visible). # [n, total], 0 or -inf; None when nothing is hidden."""
    if mask is None:
        return None
    if isinstance(mask, np.ndarray):
        if mask.all():  # NOTE: checked in numpy: a torch reduction per pass costs more
            return None
        mask = torch.from_numpy(mask).to(device)
    elif bool(mask.all()):
        return None
    bias = torch.zeros(n, total, dtype=dtype, device=device)
    bias[:, length:].masked_fill_(~mask, float("-inf"))
    return bias


def cache_slices(cache: KVCache, start: int, n: int):
    """Views of a pass's cache entries, taken once per pass (indexing costs microseconds).

    The entries it writes, ``start .. start + n - 1``, and those it reads, ``0 .. start + n - 1``.

    Parameters
    ----------
    cache : KVCache
        The cache of the pass (its buffers must already hold ``start + n`` entries).
    start : int
        The first entry the pass writes (``cache.length + offset``).
    n : int
        The number of new tokens.

    Returns
    -------
    k_write, v_write : torch.Tensor of shape (layers, 1, H, n, hd)
        Views of the entries the pass writes.
    k_read, v_read : torch.Tensor of shape (layers, 1, H, start + n, hd)
        Views of the entries the pass reads.
    """
    end = start + n
    return cache.k[:, :, :, start:end], cache.v[:, :, :, start:end], cache.k[:, :, :, :end], cache.v[:, :, :, :end]


def attend(q, k, v, slices, layer: int, bias, **sdpa):
    """The attention of one layer of a torch model's one forward pass.

    Without a cache (``slices`` None): causal attention among the n tokens. Otherwise (B = 1) k, v
    are written to the cache entries of ``layer`` the pass owns and q attends to every entry up to
    them under ``bias``.

    Parameters
    ----------
    q : torch.Tensor of shape (B, Hq, n, hd)
        The new tokens' queries.
    k, v : torch.Tensor of shape (B, H, n, hd)
        The new tokens' keys/values.
    slices : tuple of torch.Tensor or None
        :func:`cache_slices` of the pass, or None (no cache).
    layer : int
        The layer's index into the cache's buffers.
    bias : torch.Tensor of shape (n, start + n) or None
        Additive attention bias (0 or -inf) over the entries read, None: all visible. Unused
        without a cache.
    **sdpa : dict, optional
        Extra keyword arguments of ``torch.nn.functional.scaled_dot_product_attention``
        (``enable_gqa``).

    Returns
    -------
    torch.Tensor of shape (B, Hq, n, hd)
        The attention output.
    """
    if slices is None:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, **sdpa)
    kw, vw, kr, vr = slices
    kw[layer].copy_(k)
    vw[layer].copy_(v)
    # NOTE: 4-d inputs select the fused CPU kernel; 3-d ones fall back to the math path, which
    # rescales the whole cached K at every layer.
    return F.scaled_dot_product_attention(q, kr[layer], vr[layer], attn_mask=bias, **sdpa)


def cached_pass(model, cache: KVCache, tokens, depths, mask=None, offset: int = 0, capture=None, logits=True):
    """``extend`` of a torch model with a ``_pass(tokens, positions, slices, bias)``: the tokens # [n]
    at positions ``cache.length + depths``, keys/values written to the cache's scratch entries
    ``offset ..``, ``mask`` # [n, offset + n] bool (None = all visible) -> logits # [n, V].
    ``capture`` (hidden-state indices, a model whose ``_pass`` takes them): returns (logits # [n, V],
    the states at those layers concatenated # [n, F d]). ``logits=False`` (SmolLM): the final normed
    states # [n, d] instead of the logits (the output head is applied later, to the rows needed).

    One body for every torch architecture (the tiny model, SmolLM), so the cache bookkeeping and
    the position check are written once.
    """
    dev = cache.k.device
    tokens = torch.as_tensor(tokens, device=dev)
    depths = torch.as_tensor(depths, device=dev)
    n = tokens.shape[0]
    L = cache.length
    check_positions(L, int(depths.max()), model.cfg.max_len)
    start = L + offset
    cache.reserve(start + n)
    bias = attention_bias(mask, n, L, start + n, cache.k.dtype, dev)
    if capture is not None or not logits:
        out, feats = model._pass(tokens[None], depths + L, cache_slices(cache, start, n), bias, capture or (),
                                 logits=logits)
        return out[0], (None if feats is None else feats[0])
    return model._pass(tokens[None], depths + L, cache_slices(cache, start, n), bias)[0]


class Block(nn.Module):
    """The parameters of one transformer block (its arithmetic is :meth:`TinyLM._pass`)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.fc = nn.Linear(cfg.d_model, cfg.mlp_ratio * cfg.d_model)
        self.out = nn.Linear(cfg.mlp_ratio * cfg.d_model, cfg.d_model)


class TinyLM(nn.Module):
    """Pre-LayerNorm decoder-only transformer (nanoGPT-style) with tied input/output embeddings.

    Parameters
    ----------
    cfg : ModelConfig
        The architecture (kept as ``self.cfg``); weights are initialised GPT-2 style.
    """

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos = nn.Embedding(cfg.max_len, cfg.d_model)
        self.blocks = nn.ModuleList([Block(cfg) for _ in range(cfg.n_layer)])
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.apply(self._init)
        for blk in self.blocks:  # GPT-2 scaling of the residual projections
            nn.init.normal_(blk.proj.weight, std=0.02 / math.sqrt(2 * cfg.n_layer))
            nn.init.normal_(blk.out.weight, std=0.02 / math.sqrt(2 * cfg.n_layer))

    @staticmethod
    def _init(mod):
        if isinstance(mod, nn.Linear):
            nn.init.normal_(mod.weight, std=0.02)
            nn.init.zeros_(mod.bias)
        elif isinstance(mod, nn.Embedding):
            nn.init.normal_(mod.weight, std=0.02)

    def num_params(self) -> int:
        """The number of parameters (the tied embedding counted once).

        Returns
        -------
        int
            Total elements of the model's parameters.
        """
        return sum(p.numel() for p in self.parameters())

    def new_cache(self) -> KVCache:
        """An empty cache on this model's device, in its dtype.

        Returns
        -------
        KVCache
            No committed tokens; capacity ``max_len`` + :data:`CACHE_SCRATCH`.
        """
        w = self.tok.weight
        return KVCache(self.cfg, w.device, w.dtype)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Training/scoring pass without a cache: tokens # [B, T] -> logits # [B, T, V].

        Parameters
        ----------
        tokens : torch.Tensor of shape (B, T)
            Token ids (long), at positions 0..T-1; causal attention.

        Returns
        -------
        torch.Tensor of shape (B, T, V)
            The logits of the next token after each position.

        Raises
        ------
        InstanceError
            If T exceeds ``cfg.max_len``.
        """
        t = tokens.shape[1]
        if t > self.cfg.max_len:
            raise InstanceError(f"{t} tokens exceed the model's {self.cfg.max_len} positions")
        return self._pass(tokens, torch.arange(t, device=tokens.device))

    def extend(self, cache: KVCache, tokens, depths, mask=None, offset: int = 0) -> torch.Tensor:
        """Logits # [n, V] of new tokens; see the model interface in the module docstring.

        The new tokens' keys/values are written to the cache's scratch entries ``offset ..
        offset + n - 1``; nothing is committed.

        Parameters
        ----------
        cache : KVCache
            This model's cache (from :meth:`new_cache`).
        tokens : sequence of int or torch.Tensor of shape (n,)
            The new tokens' ids (a list, an array or a tensor).
        depths : sequence of int or torch.Tensor of shape (n,)
            Their depths: token i sits at position ``cache.length + depths[i]``.
        mask : numpy.ndarray or torch.Tensor of shape (n, offset + n), bool, optional
            Which scratch entries each new token attends to (earlier uncommitted tokens, then the
            new ones); None = all visible. Committed entries are always visible.
        offset : int, default 0
            The scratch entries already used by earlier uncommitted tokens.

        Returns
        -------
        torch.Tensor of shape (n, V)
            The logits after each new token.

        Raises
        ------
        InstanceError
            If a position would reach past ``cfg.max_len`` (from the shared cached pass).
        """
        return cached_pass(self, cache, tokens, depths, mask, offset)

    def _pass(self, tokens, positions, slices=None, bias=None) -> torch.Tensor:
        """The one forward pass: tokens # [B, n] long at positions # [n] -> logits # [B, n, V].

        Attention through :func:`attend`: causal among the tokens without a cache (``slices``
        None); with one, the tokens' keys/values go to the cache entries of ``slices``
        (:func:`cache_slices`) and they attend to everything before.
        """
        B, n = tokens.shape
        H = self.cfg.n_head
        d = self.cfg.d_model
        tok, pos, blocks, (gf, bf, ef) = self._parameters_by_block()
        # NOTE: rows [B * n, d]: 2-d inputs take the plain matrix-product path of F.linear
        x = (F.embedding(tokens, tok) + F.embedding(positions, pos)).view(B * n, d)
        for li, (g1, b1, e1, wqkv, bqkv, wp, bp, g2, b2, e2, wfc, bfc, wo, bo) in enumerate(blocks):
            # The block's arithmetic with functional calls: at batch 1 on a CPU the per-call
            # overhead of modules, concatenations and mask conversions dominates.
            h = F.layer_norm(x, (d,), g1, b1, e1)
            q, k, v = F.linear(h, wqkv, bqkv).view(B, n, 3, H, d // H).permute(2, 0, 3, 1, 4)  # [B, H, n, hd] each
            y = attend(q, k, v, slices, li, bias)  # [B, H, n, hd]
            x = x + F.linear(y.transpose(1, 2).reshape(B * n, d), wp, bp)
            h = F.layer_norm(x, (d,), g2, b2, e2)
            x = x + F.linear(F.gelu(F.linear(h, wfc, bfc)), wo, bo)
        return F.linear(F.layer_norm(x, (d,), gf, bf, ef), tok).view(B, n, -1)  # tied output head

    def _parameters_by_block(self):
        """The parameters :meth:`_pass` reads, gathered once (module attribute lookups cost
        about a microsecond each, some 170 per pass). The Parameter objects are kept, so
        ``load_state_dict`` and ``.to()``, which update them in place, stay visible."""
        got = self.__dict__.get("_by_block")
        if got is None:
            blocks = [(b.ln1.weight, b.ln1.bias, b.ln1.eps, b.qkv.weight, b.qkv.bias, b.proj.weight, b.proj.bias,
                       b.ln2.weight, b.ln2.bias, b.ln2.eps, b.fc.weight, b.fc.bias, b.out.weight, b.out.bias)
                      for b in self.blocks]
            got = (self.tok.weight, self.pos.weight, blocks, (self.ln_f.weight, self.ln_f.bias, self.ln_f.eps))
            self.__dict__["_by_block"] = got
        return got


class NumpyLM:
    """Inference-only numpy copy of a :class:`TinyLM` for batch-1 passes on a CPU, with the same
    model interface (``cfg``, ``new_cache``, ``extend``; see the module docstring).

    A small model at batch 1 spends most of a torch pass in per-operation dispatch; numpy does the
    same arithmetic with a fraction of that overhead. Used for the draft on CPU (the target
    always runs in torch, so speed-ups stay measured against the same target code). The weights
    are a snapshot taken at construction, float64 for a float64 model, float32 otherwise.

    Parameters
    ----------
    model : TinyLM
        The model copied (its ``cfg`` is shared as ``self.cfg``).
    """

    def __init__(self, model: TinyLM):
        dtype = torch.float64 if model.tok.weight.dtype == torch.float64 else torch.float32

        def a(t, transpose=False):
            x = t.detach().to("cpu", dtype).numpy()
            return np.ascontiguousarray(x.T if transpose else x)

        self.cfg = model.cfg
        self.tok = a(model.tok.weight)  # [V, d]
        self.pos = a(model.pos.weight)  # [max_len, d]
        hd = model.cfg.d_model // model.cfg.n_head
        qscale = torch.ones(3 * model.cfg.d_model, dtype=torch.float64)
        qscale[:model.cfg.d_model] = 1.0 / math.sqrt(hd)  # attention scale folded into the queries

        d = model.cfg.d_model
        root_d = math.sqrt(d)

        def fold(ln, lin, out_scale=None):
            # LayerNorm's affine part folded into the following linear map: (z * g + b) W^T + c
            # = z (g W^T) + (b W^T + c), with z = sqrt(d) * _norm(x) (the sqrt(d) goes into the
            # weight). Computed in float64, then cast.
            w = lin.weight.detach().double().cpu()  # [out, in]
            c = lin.bias.detach().double().cpu() if lin.bias is not None else torch.zeros(w.shape[0], dtype=torch.float64)
            g, b = ln.weight.detach().double().cpu(), ln.bias.detach().double().cpu()
            wf, cf = (w * g).T, b @ w.T + c  # [in, out], [out]
            if out_scale is not None:
                wf, cf = wf * out_scale, cf * out_scale
            return a(wf * root_d), a(cf)

        # GELU(h) = h (1 + erf(h / sqrt 2)) / 2: the MLP's first map yields g = h / sqrt 2, so that
        # GELU(h) = g (1 + erf(g)) / sqrt 2, and the 1 / sqrt 2 goes into the second map's weight.
        r2 = 1.0 / math.sqrt(2.0)
        self.blocks = [(fold(b.ln1, b.qkv, qscale), a(b.proj.weight, True), a(b.proj.bias),
                        fold(b.ln2, b.fc, r2), a(b.out.weight.detach().double() * r2, True), a(b.out.bias))
                       for b in model.blocks]
        self.eps = [(d * ln_eps(b.ln1), d * ln_eps(b.ln2)) for b in model.blocks]  # d * eps, see _norm
        self.head = fold(model.ln_f, _TiedHead(model.tok.weight))  # ([d, V], [V]), tied embeddings
        self.ln_f_eps = d * ln_eps(model.ln_f)
        # centring matrix I - 11^T / d: x @ C subtracts each row's mean in one call
        self.centre = a(torch.eye(d, dtype=torch.float64) - 1.0 / d)
        from scipy.special import erf

        self._erf = erf

    def new_cache(self) -> NumpyKVCache:
        """An empty cache in the copy's dtype.

        Returns
        -------
        NumpyKVCache
            No committed tokens; capacity ``max_len`` + :data:`CACHE_SCRATCH`.
        """
        return NumpyKVCache(self.cfg, self.tok.dtype)

    def _norm(self, x, d_eps):
        """LayerNorm without its affine part, divided by sqrt(d) (the affine part and sqrt(d) are
        folded into the next linear map; ``d_eps`` = d * eps). # [n, d]

        NOTE: a batch-1 pass is a few dozen numpy calls on tiny arrays, so the count of calls is
        the cost: centring by one matrix product, no division by d.
        """
        xc = x @ self.centre
        ss = np.add.reduce(xc * xc, axis=-1, keepdims=True)
        ss += d_eps
        return xc / np.sqrt(ss, out=ss)

    def extend(self, cache: NumpyKVCache, tokens, depths, mask=None, offset: int = 0) -> np.ndarray:
        """Logits # [n, V] (an array in the copy's dtype); the model interface of :class:`TinyLM`.

        Parameters
        ----------
        cache : NumpyKVCache
            This copy's cache (from :meth:`new_cache`).
        tokens : sequence of int or numpy.ndarray of shape (n,)
            The new tokens' ids.
        depths : sequence of int or numpy.ndarray of shape (n,)
            Their depths: token i sits at position ``cache.length + depths[i]``.
        mask : numpy.ndarray of shape (n, offset + n), bool, optional
            Which scratch entries each new token attends to (earlier scratch tokens, then the new
            ones); None = all visible.
        offset : int, default 0
            The scratch entries already used by earlier uncommitted tokens.

        Returns
        -------
        numpy.ndarray of shape (n, V)
            The logits after each new token, in the copy's dtype.

        Raises
        ------
        InstanceError
            If a position would reach past ``cfg.max_len``.
        """
        tokens = np.asarray(tokens, dtype=np.int64)
        depths = np.asarray(depths, dtype=np.int64)
        n = tokens.shape[0]
        L = cache.length
        check_positions(L, int(depths.max()), self.cfg.max_len)
        a0 = L + offset
        total = a0 + n
        cache.reserve(total)
        x_dtype = self.tok.dtype
        bias = None
        if mask is not None:
            mask = np.asarray(mask, dtype=bool)
            if not mask.all():
                bias = np.zeros((n, total), dtype=x_dtype)
                bias[:, L:][~mask] = -np.inf
        H = self.cfg.n_head
        d = self.cfg.d_model
        hd = d // H
        K, V = cache.k[:, 0], cache.v[:, 0]  # [layers, H, capacity, hd] views
        x = self.tok[tokens] + self.pos[depths + L]  # [n, d]
        for li, (((wqkv, bqkv), wp, bp, (wfc, bfc), wo, bo), (e1, e2)) in enumerate(zip(self.blocks, self.eps)):
            qkv = (self._norm(x, e1) @ wqkv + bqkv).reshape(n, 3, H, hd).transpose(1, 2, 0, 3)  # [3, H, n, hd]
            K[li, :, a0:total] = qkv[1]
            V[li, :, a0:total] = qkv[2]
            s = qkv[0] @ K[li, :, :total].transpose(0, 2, 1)  # [H, n, total], queries pre-scaled
            if bias is not None:
                s += bias
            s -= np.maximum.reduce(s, axis=-1, keepdims=True)
            np.exp(s, out=s)
            s /= np.add.reduce(s, axis=-1, keepdims=True)
            y = (s @ V[li, :, :total]).transpose(1, 0, 2).reshape(n, d)  # [n, d]
            x = x + (y @ wp + bp)
            g = self._norm(x, e2) @ wfc + bfc  # h / sqrt 2
            e = self._erf(g)
            e += 1.0
            e *= g  # sqrt 2 * GELU(h), exact GELU as F.gelu; the 1 / sqrt 2 is in wo
            x = x + (e @ wo + bo)
        return self._norm(x, self.ln_f_eps) @ self.head[0] + self.head[1]


class _TiedHead:
    """The output map of a tied-embedding model, in the shape :func:`NumpyLM` folds into."""

    def __init__(self, weight):
        self.weight, self.bias = weight, None


def ln_eps(ln) -> float:
    return float(ln.eps)
