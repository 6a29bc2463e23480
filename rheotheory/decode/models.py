"""A small decoder-only transformer with tree attention, depth-based positions and a KV cache.

One forward pass evaluates a whole draft *tree*: the new tokens attend to every cached token
and, among themselves, only to their ancestors (and themselves). Each new token sits at the
position ``cache length + depth`` so a tree node sees exactly the positions a chain through
it would. After verification :meth:`KVCache.commit` keeps the keys/values of the accepted path
only, so the cache always holds the committed text.

Shapes: B = 1 (batch), H heads, L cached tokens, n new tokens, hd = d_model / H.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..errors import InstanceError

__all__ = ["ModelConfig", "TinyLM", "KVCache", "tree_mask", "chain_mask", "NumpyLM", "NumpyKVCache"]

#: Cache entries allocated past ``max_len`` for uncommitted tree tokens (grown on demand).
CACHE_SCRATCH = 64


@dataclass(frozen=True)
class ModelConfig:
    """Architecture of one :class:`TinyLM`."""

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
        return asdict(self)


class KVCache:
    """Keys and values of the committed tokens, per layer, in preallocated buffers.

    The buffers run past the committed length: :meth:`TinyLM.extend` writes the new tokens'
    keys/values right after it (the *scratch* area, uncommitted until :meth:`commit`), so a pass
    attends to one contiguous slice and committing a whole chain moves no data.
    """

    def __init__(self, cfg: ModelConfig, device, dtype):
        hd = cfg.d_model // cfg.n_head
        shape = (cfg.n_layer, 1, cfg.n_head, cfg.max_len + CACHE_SCRATCH, hd)
        self.k = torch.zeros(shape, device=device, dtype=dtype)  # [layers, 1, H, capacity, hd]
        self.v = torch.zeros(shape, device=device, dtype=dtype)  # [layers, 1, H, capacity, hd]
        self.length = 0  # committed tokens held
        self.max_len = cfg.max_len

    def reserve(self, total: int) -> None:
        """Grow the buffers (keeping their contents) so that ``total`` entries fit."""
        cap = self.k.shape[3]
        if total <= cap:
            return
        # NOTE: only trees far larger than CACHE_SCRATCH near the end of the context get here.
        grow = max(total, 2 * cap) - cap
        pad = list(self.k.shape)
        pad[3] = grow
        self.k = torch.cat([self.k, self.k.new_zeros(pad)], dim=3)
        self.v = torch.cat([self.v, self.v.new_zeros(pad)], dim=3)

    def scratch(self, start: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Views of scratch entries ``start .. start + n`` after the committed length.

        # [layers, 1, H, n, hd] each
        """
        a = self.length + start
        return self.k[:, :, :, a:a + n], self.v[:, :, :, a:a + n]

    def commit(self, new_k: torch.Tensor, new_v: torch.Tensor, keep: torch.Tensor | None = None) -> None:
        """Append the new tokens' keys/values selected by ``keep`` (indices into the new tokens).

        ``new_k``, ``new_v``: # [layers, 1, H, n, hd]; ``keep``: # [m] long, None = all n.
        """
        if keep is not None:
            new_k = new_k.index_select(3, keep)  # a copy: safe even when new_k lies in the scratch area
            new_v = new_v.index_select(3, keep)
        m = new_k.shape[3]
        if self.length + m > self.max_len:
            raise InstanceError(f"context of {self.length + m} tokens exceeds the model's {self.max_len} positions")
        dst_k, dst_v = self.scratch(0, m)
        if new_k.data_ptr() != dst_k.data_ptr() or new_k.stride() != dst_k.stride():
            dst_k.copy_(new_k)
        if new_v.data_ptr() != dst_v.data_ptr() or new_v.stride() != dst_v.stride():
            dst_v.copy_(new_v)
        self.length += m


def chain_mask(n: int, device) -> torch.Tensor:
    """Causal mask among n new tokens. # [n, n] bool, True = may attend"""
    return torch.ones(n, n, dtype=torch.bool, device=device).tril()


def tree_mask(parents: list[int], device) -> torch.Tensor:
    """Ancestor mask of a tree given each node's parent index among the new tokens (-1: none).

    Parents precede children. # [n, n] bool, entry (i, j) True iff j is i or an ancestor of i.
    """
    n = len(parents)
    m = np.eye(n, dtype=bool)  # built in numpy: per-element torch ops cost more than the pass
    for i, par in enumerate(parents):
        if par >= 0:
            m[i] |= m[par]
    return torch.from_numpy(m).to(device)


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.n_head = cfg.n_head
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.fc = nn.Linear(cfg.d_model, cfg.mlp_ratio * cfg.d_model)
        self.out = nn.Linear(cfg.mlp_ratio * cfg.d_model, cfg.d_model)

    def forward(self, x, past_k, past_v, mask):
        """x: # [1, n, d]; past_k/v: # [1, H, L, hd] or None; mask: # [n, L + n] bool or None (causal)."""
        b, n, d = x.shape
        h = self.ln1(x)
        q, k, v = self.qkv(h).split(d, dim=2)
        q = q.view(b, n, self.n_head, -1).transpose(1, 2)  # [1, H, n, hd]
        k = k.view(b, n, self.n_head, -1).transpose(1, 2)
        v = v.view(b, n, self.n_head, -1).transpose(1, 2)
        if past_k is not None:
            kk, vv = torch.cat([past_k, k], dim=2), torch.cat([past_v, v], dim=2)  # [1, H, L + n, hd]
            y = F.scaled_dot_product_attention(q, kk, vv, attn_mask=mask)
        else:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).reshape(b, n, d)
        x = x + self.proj(y)
        x = x + self.out(F.gelu(self.fc(self.ln2(x))))
        return x, k, v


class TinyLM(nn.Module):
    """Pre-LayerNorm decoder-only transformer (nanoGPT-style) with tied input/output embeddings."""

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
        return sum(p.numel() for p in self.parameters())

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Training/scoring pass without a cache: tokens # [B, T] -> logits # [B, T, V]."""
        t = tokens.shape[1]
        if t > self.cfg.max_len:
            raise InstanceError(f"{t} tokens exceed the model's {self.cfg.max_len} positions")
        x = self.tok(tokens) + self.pos(torch.arange(t, device=tokens.device))
        for blk in self.blocks:
            x, _, _ = blk(x, None, None, None)
        return self.ln_f(x) @ self.tok.weight.T

    def extend(self, cache: KVCache, tokens: torch.Tensor, depths: torch.Tensor, mask: torch.Tensor,
               extra: tuple | None = None):
        """Evaluate new tokens against the cache without committing them.

        Parameters
        ----------
        cache : the committed keys/values (length L).
        tokens : # [n] long, the new tokens.
        depths : # [n] long, each token's offset: its position is ``L + depth``.
        mask : # [n, L_extra + n] bool over (extra tokens, new tokens); the cache is always visible.
        extra : optional (k, v) of earlier uncommitted tokens (# [layers, 1, H, L_extra, hd]),
            e.g. the upper layers of a draft tree evaluated layer by layer.

        Returns
        -------
        logits : # [n, V]
        new_k, new_v : # [layers, 1, H, n, hd], for :meth:`KVCache.commit` or as ``extra``: views of the
            cache's scratch area, valid until the next ``extend`` or ``commit`` on this cache.
        """
        n = tokens.shape[0]
        L = cache.length
        if L + int(depths.max()) + 1 > self.cfg.max_len:
            raise InstanceError(f"context of {L + int(depths.max()) + 1} tokens exceeds the model's "
                                f"{self.cfg.max_len} positions; shorten the prompt or --max-new-tokens")
        n_extra = 0 if extra is None else extra[0].shape[3]
        total = L + n_extra + n
        cache.reserve(total)
        if extra is not None:
            ek, ev = cache.scratch(0, n_extra)
            if extra[0].data_ptr() != ek.data_ptr() or extra[0].stride() != ek.stride():
                ek.copy_(extra[0])  # NOTE: earlier uncommitted tokens go right after the cache
            if extra[1].data_ptr() != ev.data_ptr() or extra[1].stride() != ev.stride():
                ev.copy_(extra[1])
        new_k, new_v = cache.scratch(n_extra, n)  # [layers, 1, H, n, hd], filled layer by layer
        if bool(mask.all()):
            bias = None  # every new token sees everything (one token, or a pass with nothing to hide)
        else:
            bias = torch.zeros(n, total, dtype=cache.k.dtype, device=tokens.device)
            bias[:, L:].masked_fill_(~mask, float("-inf"))
        H = self.cfg.n_head
        d = self.cfg.d_model
        tok, pos, blocks, (gf, bf, ef) = self._parameters_by_block()
        x = F.embedding(tokens, tok) + F.embedding(depths + L, pos)  # [n, d]
        for li, (g1, b1, e1, wqkv, bqkv, wp, bp, g2, b2, e2, wfc, bfc, wo, bo) in enumerate(blocks):
            # The block's arithmetic with functional calls and in-place residual adds: at batch 1 on
            # a CPU the per-call overhead of modules, concatenations and mask conversions dominates.
            h = F.layer_norm(x, (d,), g1, b1, e1)
            qkv = F.linear(h, wqkv, bqkv).view(n, 3, H, d // H).permute(1, 2, 0, 3)  # [3, H, n, hd]
            new_k[li, 0].copy_(qkv[1])
            new_v[li, 0].copy_(qkv[2])
            # NOTE: 4-d inputs select the fused CPU kernel; 3-d ones fall back to the math path,
            # which rescales the whole cached K at every layer.
            y = F.scaled_dot_product_attention(qkv[0].unsqueeze(0), cache.k[li, :, :, :total], cache.v[li, :, :, :total],
                                               attn_mask=bias)[0]  # [H, n, hd]
            x = x + F.linear(y.transpose(0, 1).reshape(n, d), wp, bp)
            h = F.layer_norm(x, (d,), g2, b2, e2)
            x = x + F.linear(F.gelu(F.linear(h, wfc, bfc)), wo, bo)
        logits = F.linear(F.layer_norm(x, (d,), gf, bf, ef), tok)
        return logits, new_k, new_v

    def _parameters_by_block(self):
        """The parameters :meth:`extend` reads, gathered once (module attribute lookups cost
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
    """Inference-only float32 numpy copy of a :class:`TinyLM` for batch-1 passes on a CPU.

    A small model at batch 1 spends most of a torch pass in per-operation dispatch; numpy does the
    same arithmetic with a fraction of that overhead. Used for the draft on CPU (the target
    always runs in torch, so speed-ups stay measured against the same target code). The weights
    are a snapshot taken at construction.
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

    def new_cache(self) -> "NumpyKVCache":
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

    def extend(self, cache: "NumpyKVCache", tokens, depths, mask: np.ndarray | None, offset: int = 0) -> np.ndarray:
        """Logits of new tokens, # [n, V] float32; their keys/values go to scratch ``offset ..``.

        ``tokens``, ``depths``: # [n] ints (position = committed length + depth); ``mask``:
        # [n, offset + n] bool over (earlier scratch tokens, new tokens), None = all visible.
        """
        tokens = np.asarray(tokens, dtype=np.int64)
        depths = np.asarray(depths, dtype=np.int64)
        n = tokens.shape[0]
        L = cache.length
        if L + int(depths.max()) + 1 > self.cfg.max_len:
            raise InstanceError(f"context of {L + int(depths.max()) + 1} tokens exceeds the model's "
                                f"{self.cfg.max_len} positions; shorten the prompt or --max-new-tokens")
        a0 = L + offset
        total = a0 + n
        cache.reserve(total)
        x_dtype = self.tok.dtype
        bias = None
        if mask is not None and not mask.all():
            bias = np.zeros((n, total), dtype=x_dtype)
            bias[:, L:][~mask] = -np.inf
        H = self.cfg.n_head
        d = self.cfg.d_model
        hd = d // H
        x = self.tok[tokens] + self.pos[depths + L]  # [n, d]
        for li, (((wqkv, bqkv), wp, bp, (wfc, bfc), wo, bo), (e1, e2)) in enumerate(zip(self.blocks, self.eps)):
            qkv = (self._norm(x, e1) @ wqkv + bqkv).reshape(n, 3, H, hd).transpose(1, 2, 0, 3)  # [3, H, n, hd]
            cache.k[li, :, a0:total] = qkv[1]
            cache.v[li, :, a0:total] = qkv[2]
            s = qkv[0] @ cache.k[li, :, :total].transpose(0, 2, 1)  # [H, n, total], queries pre-scaled
            if bias is not None:
                s += bias
            s -= np.maximum.reduce(s, axis=-1, keepdims=True)
            np.exp(s, out=s)
            s /= np.add.reduce(s, axis=-1, keepdims=True)
            y = (s @ cache.v[li, :, :total]).transpose(1, 0, 2).reshape(n, d)  # [n, d]
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


class NumpyKVCache:
    """Keys/values of a :class:`NumpyLM`: committed tokens, then a scratch area. # [layers, H, capacity, hd]"""

    def __init__(self, cfg: ModelConfig, dtype=np.float32):
        hd = cfg.d_model // cfg.n_head
        self.k = np.zeros((cfg.n_layer, cfg.n_head, cfg.max_len + CACHE_SCRATCH, hd), dtype=dtype)
        self.v = np.zeros_like(self.k)
        self.length = 0
        self.max_len = cfg.max_len

    def reserve(self, total: int) -> None:
        cap = self.k.shape[2]
        if total > cap:  # NOTE: only for trees far larger than CACHE_SCRATCH near the end of the context
            pad = ((0, 0), (0, 0), (0, max(total, 2 * cap) - cap), (0, 0))
            self.k, self.v = np.pad(self.k, pad), np.pad(self.v, pad)

    def commit(self, n: int, keep=None) -> None:
        """Commit ``n`` scratch entries, or the scratch entries at indices ``keep``."""
        if keep is not None:
            keep = np.asarray(keep, dtype=np.int64) + self.length
            n = len(keep)
            self.k[:, :, self.length:self.length + n] = self.k[:, :, keep]  # fancy index: a copy first
            self.v[:, :, self.length:self.length + n] = self.v[:, :, keep]
        if self.length + n > self.max_len:
            raise InstanceError(f"context of {self.length + n} tokens exceeds the model's {self.max_len} positions")
        self.length += n
