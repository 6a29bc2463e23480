"""EAGLE-3 draft heads in the format the field trains and serves them (read and write).

EAGLE's repository, SGLang's SpecForge, SGLang and vLLM share one checkpoint format for an
EAGLE-3 head: a folder with ``config.json`` and ``model.safetensors`` (SpecForge) or
``pytorch_model.bin`` (EAGLE), holding a flat state dict:

- ``fc.weight`` # [H, 3 Ht]: the fused target features (three target layers, concatenated) to
  the head's width H; with ``fc_norm`` in the config, ``fc_norm.{0,1,2}.weight`` RMS-normalise
  each feature first;
- ``midlayer.*``: one decoder layer whose attention reads 2 H inputs, the normed token embedding
  (``input_layernorm``) concatenated with the normed hidden state (``hidden_norm``), embedding
  first; the residual stream is the hidden state (``self_attn.{q,k,v,o}_proj``,
  ``post_attention_layernorm``, ``mlp.{gate,up,down}_proj``);
- ``norm.weight``, then ``lm_head.weight`` # [Vd, H] over the draft vocabulary;
- ``d2t`` # [Vd] int64: draft id i is target id ``i + d2t[i]``; ``t2d`` # [V] bool (not read);
- ``embed_tokens.weight`` # [V, H], optional: without it the head reads the target's embedding.

The config holds the Llama keys (``hidden_size``, ``num_attention_heads``,
``num_key_value_heads``, ``head_dim``, ``intermediate_size``, ``rms_norm_eps``, ``rope_theta``
(10000 when absent), ``rope_scaling``, ``vocab_size``) plus ``draft_vocab_size``, optionally
``target_hidden_size`` and ``eagle_config.eagle_aux_hidden_state_layer_ids``.

**The fused layers.** rheotheory reads ``eagle_aux_hidden_state_layer_ids`` as SpecForge writes
and SGLang reads them: 0-based indices of the target blocks whose *outputs* are fused, so id ``i``
is Hugging Face's ``hidden_states[i + 1]``. Without the key, EAGLE's default: the inputs of
blocks 2, L // 2 and L - 3 of an L-block target, i.e. the outputs of blocks 1, L // 2 - 1 and
L - 4 (SpecForge's default ids). NOTE: vLLM reads the configured ids without the + 1; a head
trained with ids from another tool may thus be off by one layer there, never here (the rule is
stated, and :func:`feature_layers_of` checks every id against the target's depth). So
:func:`save_eagle3` names the ids only for layers other than EAGLE's default: a head on the
default layers leaves the key out, and every loader then fuses the same layers. It also writes
``target_num_hidden_layers`` (the target's depth; read by rheotheory only, checked on load).

**Lossless as any draft.** q is 0 outside the draft vocabulary (``d2t``); the verifier reads the
very q the head drafted from (docs/theory.md section 1.1), so a head of any quality, or of the
wrong layers, costs acceptance, never correctness.

The head runs through the engine like rheotheory's own head
(:class:`~rheotheory.decode.heads.draft_head.DraftHead`, whose back-end interface this class keeps:
``catch_up`` with the target's features, ``extend`` over tree nodes that read their parent's
output state) and its training pass (:meth:`Eagle3Head.unrolled`, the same multi-step unroll), so
:func:`rheotheory.decode.heads.train.train_head` trains it as it trains rheotheory's head.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from ...errors import InstanceError
from .draft_head import DraftHead, HeadConfig, unroll_attention
from ..backends.tree_lm import attend, cache_slices
from ..backends.smollm import RMSNorm, _rotate_half

__all__ = ["Eagle3Head", "load_eagle3", "save_eagle3", "export_head", "describe_head", "is_eagle3_dir",
           "feature_layers_of", "default_layer_ids", "EAGLE3_WEIGHTS"]

#: The weight files of an EAGLE-3 head, in the order they are looked for.
EAGLE3_WEIGHTS = ("model.safetensors", "pytorch_model.bin")

#: RoPE scalings this reader applies (others are refused in one line).
ROPE_TYPES = ("default", "linear", "llama3")


def default_layer_ids(n_layers: int) -> tuple[int, int, int]:
    """EAGLE's default fused layers as block-output ids: the outputs of blocks 1, L // 2 - 1, L - 4.

    Parameters
    ----------
    n_layers : int
        L, the target's blocks.

    Returns
    -------
    tuple of int
        Three 0-based block ids (Hugging Face's ``hidden_states`` index is id + 1).

    Examples
    --------
    >>> default_layer_ids(30)
    (1, 14, 26)
    """
    return 1, n_layers // 2 - 1, n_layers - 4


def feature_layers_of(config: dict, n_layers: int) -> tuple[int, ...]:
    """The Hugging Face ``hidden_states`` indices a head's config fuses (id + 1; see the module doc).

    Parameters
    ----------
    config : dict
        The head's ``config.json``; its ``eagle_config.eagle_aux_hidden_state_layer_ids`` when
        present, else :func:`default_layer_ids`.
    n_layers : int
        The target's blocks.

    Returns
    -------
    tuple of int
        Three ``hidden_states`` indices, each in 1..``n_layers``.

    Raises
    ------
    InstanceError
        If the ids are not three integers, or one is outside the target's blocks 0..n_layers-1.

    Examples
    --------
    >>> feature_layers_of({}, 30)
    (2, 15, 27)
    >>> feature_layers_of({"eagle_config": {"eagle_aux_hidden_state_layer_ids": [2, 15, 27]}}, 30)
    (3, 16, 28)
    """
    ids = ((config.get("eagle_config") or {}).get("eagle_aux_hidden_state_layer_ids")
           or default_layer_ids(n_layers))
    ids = tuple(ids)
    if len(ids) != 3 or any(isinstance(i, bool) or not isinstance(i, int) for i in ids):
        raise InstanceError(f"eagle_aux_hidden_state_layer_ids must be three integers, got {list(ids)}")
    if any(not 0 <= i < n_layers for i in ids):
        raise InstanceError(f"the head fuses the outputs of blocks {list(ids)}; the target has blocks 0..{n_layers - 1}")
    return tuple(i + 1 for i in ids)


def is_eagle3_dir(folder) -> bool:
    """Whether ``folder`` holds an EAGLE-3 head (a config with ``draft_vocab_size`` and a weight file).

    Parameters
    ----------
    folder : str or os.PathLike
        Any path (a missing one or an unreadable config gives False).

    Returns
    -------
    bool
        True when ``config.json`` has ``draft_vocab_size`` and one of :data:`EAGLE3_WEIGHTS` exists.
    """
    folder = Path(folder)
    cfg = folder / "config.json"
    if not cfg.is_file() or not any((folder / w).is_file() for w in EAGLE3_WEIGHTS):
        return False
    try:
        return "draft_vocab_size" in json.loads(cfg.read_text())
    except (ValueError, OSError):
        return False


def _inv_freq(head_dim: int, theta: float, scaling: dict | None) -> torch.Tensor:
    """RoPE's inverse frequencies # [hd / 2], with Llama-3's or linear scaling (as Hugging Face's)."""
    inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
    kind = (scaling or {}).get("rope_type", (scaling or {}).get("type", "default")) if scaling else "default"
    if kind == "linear":
        inv = inv / float(scaling["factor"])
    elif kind == "llama3":
        factor, lo, hi = float(scaling["factor"]), float(scaling["low_freq_factor"]), float(scaling["high_freq_factor"])
        old = float(scaling["original_max_position_embeddings"])
        wavelen = 2 * math.pi / inv
        smooth = (old / wavelen - lo) / (hi - lo) if hi != lo else torch.zeros_like(inv)
        mid = (1 - smooth) * inv / factor + smooth * inv
        inv = torch.where(wavelen < old / hi, inv, torch.where(wavelen > old / lo, inv / factor, mid))
    elif kind != "default":
        raise InstanceError(f"RoPE scaling {kind!r} is not supported for EAGLE-3 heads; supported: {', '.join(ROPE_TYPES)}")
    return inv.float()


class _Attention(nn.Module):
    def __init__(self, d: int, n_q: int, n_kv: int, hd: int):
        super().__init__()
        self.q_proj = nn.Linear(2 * d, n_q * hd, bias=False)
        self.k_proj = nn.Linear(2 * d, n_kv * hd, bias=False)
        self.v_proj = nn.Linear(2 * d, n_kv * hd, bias=False)
        self.o_proj = nn.Linear(n_q * hd, d, bias=False)


class _MLP(nn.Module):
    def __init__(self, d: int, inter: int):
        super().__init__()
        self.gate_proj = nn.Linear(d, inter, bias=False)
        self.up_proj = nn.Linear(d, inter, bias=False)
        self.down_proj = nn.Linear(inter, d, bias=False)


class Eagle3Layer(nn.Module):
    """EAGLE-3's decoder layer: attention over [normed embedding, normed hidden] (2 H), the hidden
    state as the residual stream, then the MLP."""

    def __init__(self, cfg: HeadConfig):
        super().__init__()
        d = cfg.hidden
        self.head_dim = cfg.head_dim
        self.hidden_norm = RMSNorm(d, cfg.rms_eps)
        self.input_layernorm = RMSNorm(d, cfg.rms_eps)
        self.post_attention_layernorm = RMSNorm(d, cfg.rms_eps)
        self.self_attn = _Attention(d, cfg.n_q_heads, cfg.n_kv_heads, cfg.head_dim)
        self.mlp = _MLP(d, cfg.intermediate)

    def forward(self, e, g, cos, sin, slices=None, layer: int = 0, bias=None):
        """e: token embeddings, g: hidden states, both # [B, n, H] -> # [B, n, H] (before the final norm)."""
        b, n, _ = g.shape
        hd, a = self.head_dim, self.self_attn
        x = torch.cat([self.input_layernorm(e), self.hidden_norm(g)], dim=-1)
        q = a.q_proj(x).view(b, n, -1, hd).transpose(1, 2)
        k = a.k_proj(x).view(b, n, -1, hd).transpose(1, 2)
        v = a.v_proj(x).view(b, n, -1, hd).transpose(1, 2)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        y = attend(q, k, v, slices, layer, bias, enable_gqa=True)
        h = g + a.o_proj(y.transpose(1, 2).reshape(b, n, -1))
        m = self.mlp
        z = self.post_attention_layernorm(h)
        return h + m.down_proj(F.silu(m.gate_proj(z)) * m.up_proj(z))


class Eagle3Head(DraftHead):
    """An EAGLE-3 head as a draft back-end (see the module doc).

    Parameters
    ----------
    cfg : HeadConfig
        The head's shape, the target it reads (three fused layers) and its draft vocabulary.
    embed : torch.nn.Embedding or None
        The target's token embedding, read when the checkpoint has no ``embed_tokens`` of its own
        (then not saved); may be None with ``own_embed``.
    d2t : sequence of int or torch.Tensor of shape (V_d,)
        Offsets: draft id i is target id ``i + d2t[i]`` (a saved buffer).
    own_embed : bool, default False
        The head has its own ``embed_tokens`` # [V, d] (loaded from the checkpoint).
    fc_norm : bool, default False
        RMS-normalise each fused feature before ``fc`` (``fc_norm`` in the config).
    rope_scaling : dict, optional
        The config's ``rope_scaling`` (``default``, ``linear`` or ``llama3``); None: none.

    Raises
    ------
    InstanceError
        If there is neither an own embedding nor ``embed``; ``d2t`` does not hold one offset per
        draft token, or maps the draft vocabulary outside the vocabulary or onto a target token
        twice; or the RoPE scaling is not supported.
    """

    def __init__(self, cfg: HeadConfig, embed: nn.Embedding | None, d2t, own_embed: bool = False,
                 fc_norm: bool = False, rope_scaling: dict | None = None):
        nn.Module.__init__(self)
        d = cfg.hidden
        self.cfg = cfg
        self.block_cfg = cfg.block_config()
        self.rope_scaling = rope_scaling
        if own_embed:
            self.embed_tokens = nn.Embedding(cfg.vocab_size, d)
        else:
            if embed is None:
                raise InstanceError("an EAGLE-3 head without embed_tokens needs the target's embedding")
            self.__dict__["embed"] = embed  # NOTE: not a submodule: the target's, neither trained nor saved
        self.fc = nn.Linear(len(cfg.feature_layers) * d, d, bias=False)
        self.fc_norm = nn.ModuleList(RMSNorm(d, cfg.rms_eps) for _ in cfg.feature_layers) if fc_norm else None
        self.midlayer = Eagle3Layer(cfg)
        self.norm = RMSNorm(d, cfg.rms_eps)
        self.lm_head = nn.Linear(d, cfg.draft_vocab, bias=False)
        d2t = torch.as_tensor(d2t, dtype=torch.long)
        if d2t.shape != (cfg.draft_vocab,):
            raise InstanceError(f"d2t must hold {cfg.draft_vocab} offsets (one per draft token), got {tuple(d2t.shape)}")
        ids = torch.arange(cfg.draft_vocab) + d2t
        if int(ids.min()) < 0 or int(ids.max()) >= cfg.vocab_size or len(set(ids.tolist())) != ids.numel():
            raise InstanceError(f"d2t maps the draft vocabulary outside 0..{cfg.vocab_size - 1} or onto one target "
                                "token twice")
        self.register_buffer("d2t", d2t)
        self.register_buffer("vocab_ids", ids, persistent=False)
        self.register_buffer("inv_freq", _inv_freq(cfg.head_dim, cfg.rope_theta, rope_scaling), persistent=False)

    @property
    def fuse(self) -> nn.Linear:  # the name the back-end methods read the device and dtype from
        """``fc``, under the name the back-end methods read the device and dtype from."""
        return self.fc

    def _embed(self, tokens):
        table = self.embed_tokens if "embed_tokens" in self._modules else self.embed
        return table(tokens).detach().to(self.fc.weight.dtype)

    def fuse_features(self, feats: torch.Tensor) -> torch.Tensor:
        """Target features # [..., F' d] -> # [..., d] (RMS-normalised first with ``fc_norm``).

        Parameters
        ----------
        feats : torch.Tensor of shape (..., F' d)
            F' >= F: the fused layers' states first (only they are read); training appends the
            final normed state the soft labels are read from.

        Returns
        -------
        torch.Tensor of shape (..., d)
            The fused feature.
        """
        d = self.cfg.hidden
        feats = feats[..., :len(self.cfg.feature_layers) * d]
        if self.fc_norm is not None:
            feats = torch.cat([nrm(feats[..., i * d:(i + 1) * d]) for i, nrm in enumerate(self.fc_norm)], dim=-1)
        return self.fc(feats)

    def draft_logits(self, h, rows=None) -> torch.Tensor:
        """Logits over the draft vocabulary through the head's own ``norm`` and ``lm_head``.

        Parameters
        ----------
        h : torch.Tensor of shape (..., d)
            Output states.
        rows : torch.Tensor, optional
            Ignored (the head has its own ``lm_head``); kept for :class:`DraftHead`'s signature.

        Returns
        -------
        torch.Tensor of shape (..., V_d)
            The logits, in draft-id order.
        """
        return self.lm_head(self.norm(h))

    def head_rows(self) -> torch.Tensor:
        """The head's own output rows, ``lm_head.weight`` detached.

        Returns
        -------
        torch.Tensor of shape (V_d, d)
            The rows (the parameter's data, not a copy).
        """
        return self.lm_head.weight.detach()

    def prepare(self):
        """Nothing to cache: ``lm_head`` is read directly, and not packed.

        Returns
        -------
        Eagle3Head
            ``self``.
        """
        self._rows = None
        return self

    def _run(self, cache, tokens, g, positions, start: int, mask_bias) -> torch.Tensor:
        cos, sin = self._rope(positions, g.dtype)
        slices = cache_slices(cache, start, tokens.shape[0])
        return self.midlayer(self._embed(tokens)[None], g[None], cos, sin, slices, 0, mask_bias)[0]

    def unrolled(self, tokens: torch.Tensor, feats: torch.Tensor, steps: int, rows=None) -> list:
        """Training pass, as :meth:`DraftHead.unrolled` (EAGLE-3's training-time test).

        Step 1 reads the fused target feature of position j - 1, step k > 1 the head's own step-(k-1)
        output state there, attending as :func:`~rheotheory.decode.heads.draft_head.unroll_mask` says.

        Parameters
        ----------
        tokens : torch.Tensor of shape (B, T)
            Token ids (long).
        feats : torch.Tensor of shape (B, T, F' d)
            The target's features of each position (see :meth:`fuse_features`).
        steps : int
            Unroll steps.
        rows : torch.Tensor, optional
            Ignored (the head has its own ``lm_head``).

        Returns
        -------
        list of torch.Tensor of shape (B, T, V_d)
            One tensor of draft logits per step, in order.
        """
        T = tokens.shape[1]
        lay, hd = self.midlayer, self.cfg.head_dim
        a = lay.self_attn
        cos, sin = self._rope(torch.arange(T, device=tokens.device), feats.dtype)
        g = self.fuse_features(feats)
        e = lay.input_layernorm(self._embed(tokens).to(g.dtype))
        ks, vs, outs = [], [], []
        for k in range(1, steps + 1):
            g_in = torch.cat([torch.zeros_like(g[:, :1]), g[:, :-1]], dim=1)  # the state of j - 1
            x = torch.cat([e, lay.hidden_norm(g_in)], dim=-1)
            h = g_in + a.o_proj(unroll_attention(a, x, k, ks, vs, cos, sin, hd))
            z = lay.post_attention_layernorm(h)
            h = h + lay.mlp.down_proj(F.silu(lay.mlp.gate_proj(z)) * lay.mlp.up_proj(z))
            outs.append(self.draft_logits(h))
            g = h  # the next step reads this step's states
        return outs

    def state_for_export(self) -> dict:
        """The head's state dict in EAGLE-3's key names (``t2d`` added).

        Returns
        -------
        dict[str, torch.Tensor]
            ``fc``, ``midlayer.*``, ``norm``, ``lm_head``, ``d2t`` (and ``embed_tokens``, ``fc_norm``
            when the head has them), plus ``t2d`` # [V] bool: True at the draft vocabulary's target
            ids.
        """
        state = {k: v for k, v in self.state_dict().items() if k != "vocab_ids"}
        t2d = torch.zeros(self.cfg.vocab_size, dtype=torch.bool)
        t2d[self.vocab_ids.cpu()] = True
        state["t2d"] = t2d
        return state


def _read_state(folder: Path) -> dict:
    st, pt = folder / EAGLE3_WEIGHTS[0], folder / EAGLE3_WEIGHTS[1]
    if st.is_file():
        from safetensors.torch import load_file

        return load_file(str(st))
    if pt.is_file():
        return torch.load(str(pt), map_location="cpu", weights_only=True)
    raise InstanceError(f"{str(folder)!r} holds no EAGLE-3 weights ({' or '.join(EAGLE3_WEIGHTS)})")


def load_eagle3(folder, embed: nn.Embedding, n_layers: int, device=None, dtype=torch.float32,
                max_len: int | None = None) -> tuple[Eagle3Head, dict]:
    """An EAGLE-3 head from ``folder`` for a target whose input embedding is ``embed`` (# [V, Ht]).

    One-line errors (InstanceError) when the head was made for another target: vocabulary, width or
    layer count. A checkpoint without ``d2t`` drafts the first V_d token ids.

    Parameters
    ----------
    folder : str or os.PathLike
        The head's folder: ``config.json`` and one of :data:`EAGLE3_WEIGHTS`.
    embed : torch.nn.Embedding
        The target's input embedding, # [V, Ht].
    n_layers : int
        The target's blocks.
    device : torch.device or str, optional
        Where the head goes (None: the embedding's device).
    dtype : torch.dtype, default torch.float32
        The head's dtype.
    max_len : int, optional
        Positions of the head's cache (None: the config's ``max_position_embeddings``, else 2048).

    Returns
    -------
    head : Eagle3Head
        The head, in eval mode, prepared.
    config : dict
        The folder's ``config.json``.

    Raises
    ------
    InstanceError
        If the folder has no (valid JSON) ``config.json`` or it lacks a required key; the head
        drafts for another vocabulary, reads another width, is not as wide as its target, or was
        made for another number of blocks; its fused layers are invalid; there is no weight file;
        or the weights do not fit the config.
    """
    folder = Path(folder)
    if not (folder / "config.json").is_file():
        raise InstanceError(f"{str(folder)!r} is not an EAGLE-3 head (no config.json)")
    try:
        c = json.loads((folder / "config.json").read_text())
    except ValueError as e:
        raise InstanceError(f"{str(folder / 'config.json')!r} is not JSON: {e}") from None
    need = ("hidden_size", "num_attention_heads", "intermediate_size", "vocab_size", "draft_vocab_size")
    missing = [k for k in need if k not in c]
    if missing:
        raise InstanceError(f"{str(folder)!r}: config.json lacks {', '.join(missing)} (not an EAGLE-3 head)")
    V, Ht = (int(s) for s in embed.weight.shape)
    d = int(c["hidden_size"])
    th = int(c.get("target_hidden_size") or d)
    if int(c["vocab_size"]) != V:
        raise InstanceError(f"the EAGLE-3 head in {str(folder)!r} drafts for a vocabulary of {c['vocab_size']} tokens; "
                            f"the target has {V}")
    if th != Ht:
        raise InstanceError(f"the EAGLE-3 head in {str(folder)!r} reads target features of width {th}; the target's "
                            f"width is {Ht}")
    if d != th:
        raise InstanceError(f"the EAGLE-3 head in {str(folder)!r} is {d} wide over a target of width {th}; heads "
                            "narrower or wider than their target are not supported")
    depth = c.get("target_num_hidden_layers")
    if depth is not None and int(depth) != n_layers:
        raise InstanceError(f"the EAGLE-3 head in {str(folder)!r} was made for a target of {depth} blocks; the target "
                            f"has {n_layers}")
    layers = feature_layers_of(c, n_layers)
    heads = int(c["num_attention_heads"])
    cfg = HeadConfig(hidden=d, n_q_heads=heads, n_kv_heads=int(c.get("num_key_value_heads") or heads),
                     head_dim=int(c.get("head_dim") or d // heads), intermediate=int(c["intermediate_size"]),
                     rope_theta=float(c.get("rope_theta") or 10000.0), rms_eps=float(c.get("rms_norm_eps") or 1e-6),
                     target_layers=n_layers, feature_layers=layers, vocab_size=V,
                     draft_vocab=int(c["draft_vocab_size"]),
                     max_len=int(max_len or c.get("max_position_embeddings") or 2048))
    state = _read_state(folder)
    if "d2t" not in state:
        state["d2t"] = torch.zeros(cfg.draft_vocab, dtype=torch.long)  # NOTE: no d2t: the draft vocabulary is the first Vd ids
    own = "embed_tokens.weight" in state
    head = Eagle3Head(cfg, embed, state["d2t"], own_embed=own, fc_norm=bool(c.get("fc_norm", False)),
                      rope_scaling=c.get("rope_scaling"))
    state = {k: v for k, v in state.items() if k != "t2d"}
    expect = {k: tuple(v.shape) for k, v in head.state_dict().items()}
    wrong = [k for k, v in state.items() if k in expect and tuple(v.shape) != expect[k]]
    lacking = sorted(set(expect) - set(state))
    extra = sorted(set(state) - set(expect))
    if wrong or lacking or extra:
        what = (f"{wrong[0]} has shape {tuple(state[wrong[0]].shape)}, expected {expect[wrong[0]]}" if wrong else
                f"missing {lacking[0]}" if lacking else f"unexpected tensor {extra[0]}")
        raise InstanceError(f"the EAGLE-3 weights in {str(folder)!r} do not fit its config: {what}")
    head.load_state_dict({k: v.float() if v.is_floating_point() else v for k, v in state.items()})
    head = head.to(device=device or embed.weight.device, dtype=dtype).eval()
    return head.prepare(), c


def save_eagle3(head: Eagle3Head, folder, weights: str = EAGLE3_WEIGHTS[0], extra_config: dict | None = None,
                dtype: torch.dtype | None = None) -> Path:
    """Write ``head`` as an EAGLE-3 checkpoint (``config.json`` + ``weights``, either file name);
    floating tensors in ``dtype`` (default: the head's).

    The fused layers: EAGLE's default ones are *not* named in the config, so that every loader
    applies its own default, which is the same layers everywhere (inputs of blocks 2, L // 2, L - 3);
    explicit ids are written only for other layers, where vLLM and SGLang read them one block
    apart (see the module doc). ``target_num_hidden_layers`` (the target's depth, which only
    rheotheory reads) lets ``rheo head`` check a checkpoint without its target.

    Parameters
    ----------
    head : Eagle3Head
        The head written.
    folder : str or os.PathLike
        The folder written (created if needed).
    weights : str, default "model.safetensors"
        The weight file's name, one of :data:`EAGLE3_WEIGHTS` (safetensors, or a ``torch.save``
        pickle for ``pytorch_model.bin``).
    extra_config : dict, optional
        Keys added to (or replacing) the written ``config.json``'s.
    dtype : torch.dtype, optional
        The dtype of the floating tensors written (None: the head's).

    Returns
    -------
    pathlib.Path
        ``folder``.

    Raises
    ------
    InstanceError
        If ``weights`` is not one of :data:`EAGLE3_WEIGHTS`.
    """
    if weights not in EAGLE3_WEIGHTS:
        raise InstanceError(f"weights must be one of {', '.join(EAGLE3_WEIGHTS)}, got {weights!r}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    c = head.cfg
    state = {k: v.detach().cpu().to(dtype if dtype is not None and v.is_floating_point() else v.dtype).contiguous()
             for k, v in head.state_for_export().items()}
    if weights.endswith(".safetensors"):
        from safetensors.torch import save_file

        save_file(state, str(folder / weights))
    else:
        torch.save(state, str(folder / weights))
    config = {"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_act": "silu",
              "hidden_size": c.hidden, "num_attention_heads": c.n_q_heads, "num_key_value_heads": c.n_kv_heads,
              "head_dim": c.head_dim, "intermediate_size": c.intermediate, "num_hidden_layers": 1,
              "rms_norm_eps": c.rms_eps, "rope_theta": c.rope_theta, "max_position_embeddings": c.max_len,
              "vocab_size": c.vocab_size, "draft_vocab_size": c.draft_vocab, "target_hidden_size": c.hidden,
              "tie_word_embeddings": False, "pretraining_tp": 1, "target_num_hidden_layers": c.target_layers}
    default = tuple(i + 1 for i in default_layer_ids(c.target_layers))
    if c.feature_layers != default:
        config["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": [i - 1 for i in c.feature_layers]}
    if head.fc_norm is not None:
        config["fc_norm"] = True
    if head.rope_scaling:
        config["rope_scaling"] = head.rope_scaling
    config.update(extra_config or {})
    (folder / "config.json").write_text(json.dumps(config, indent=1) + "\n")
    return folder



def _folder_config(folder: Path) -> dict:
    try:
        return json.loads((folder / "config.json").read_text())
    except (OSError, ValueError) as e:
        raise InstanceError(f"{str(folder / 'config.json')!r} cannot be read as JSON: {e}") from None


def _check_source(folder: Path) -> dict:
    """The config of the EAGLE-3 head in ``folder``; a one-line error for anything else, rheotheory's
    own head format (:mod:`rheotheory.decode.heads.draft_head`) named with the reason it cannot be
    converted."""
    from .draft_head import HEAD_FILES

    if not folder.is_dir():
        raise InstanceError(f"{str(folder)!r} is not a folder")
    if all((folder / f).is_file() for f in HEAD_FILES) and not (folder / "config.json").is_file():
        raise InstanceError(f"{str(folder)!r} holds a head in rheotheory's first architecture (heads v1, v2: an input "
                            "projection and a normed block input), which no EAGLE-3 layer reproduces exactly; train "
                            "it in EAGLE-3's (scripts/train_head_sharegpt.py --arch eagle3)")
    if not is_eagle3_dir(folder):
        raise InstanceError(f"{str(folder)!r} holds no head (EAGLE-3: config.json with draft_vocab_size and "
                            f"{' or '.join(EAGLE3_WEIGHTS)})")
    return _folder_config(folder)


def _load_alone(folder: Path, c: dict) -> Eagle3Head:
    """The head in ``folder`` checked against its config, without a target: a stand-in embedding of
    the config's shape (neither read nor written by an export)."""
    V, d = int(c["vocab_size"]), int(c.get("target_hidden_size") or c["hidden_size"])
    ids = (c.get("eagle_config") or {}).get("eagle_aux_hidden_state_layer_ids")
    n_layers = int(c.get("target_num_hidden_layers") or (max(ids) + 4 if ids else 0))
    if n_layers <= 0:
        raise InstanceError(f"{str(folder)!r}: config.json names neither eagle_aux_hidden_state_layer_ids nor "
                            "target_num_hidden_layers (the target's depth)")
    with torch.device("meta"):
        embed = nn.Embedding(V, d)
    head, _ = load_eagle3(folder, embed, n_layers, device="cpu")
    return head


def describe_head(folder) -> dict:
    """What the head in ``folder`` is: format, width, layers fused (block-output ids and Hugging Face
    indices), vocabulary and draft vocabulary, own embedding or the target's, parameters, dtype.

    The head is loaded and checked against its config without its target.

    Parameters
    ----------
    folder : str or os.PathLike
        An EAGLE-3 head's folder.

    Returns
    -------
    dict
        ``folder``, ``format``, ``weights`` (the file), ``hidden``, ``fused_block_outputs``,
        ``hidden_states_indices``, ``vocab_size``, ``draft_vocab``, ``own_embedding``, ``params``
        (floating elements of the file), ``dtype`` and ``manifest`` (whether one is beside).

    Raises
    ------
    InstanceError
        If the folder is not a folder, holds rheotheory's own head format or no head, names
        neither its fused layers nor its target's depth, or its weights do not fit its config.
    """
    folder = Path(folder)
    c = _check_source(folder)
    head = _load_alone(folder, c)
    state = _read_state(folder)
    dtypes = sorted({str(v.dtype).replace("torch.", "") for v in state.values() if v.is_floating_point()})
    return {"folder": str(folder), "format": "EAGLE-3", "weights": next(w for w in EAGLE3_WEIGHTS
                                                                        if (folder / w).is_file()),
            "hidden": head.cfg.hidden, "fused_block_outputs": [i - 1 for i in head.cfg.feature_layers],
            "hidden_states_indices": list(head.cfg.feature_layers), "vocab_size": head.cfg.vocab_size,
            "draft_vocab": head.cfg.draft_vocab, "own_embedding": "embed_tokens.weight" in state,
            "params": sum(int(v.numel()) for k, v in state.items() if v.is_floating_point()),
            "dtype": ",".join(dtypes), "manifest": (folder / "manifest.json").is_file()}


def export_head(src, out, weights: str = EAGLE3_WEIGHTS[0], dtype: torch.dtype | None = None) -> Path:
    """Write the head in ``src`` to ``out`` as an EAGLE-3 checkpoint that SpecForge, SGLang and vLLM
    load (``config.json`` + ``weights``; floating tensors in ``dtype``, default float16), its
    ``manifest.json`` (provenance) copied beside when there is one. ``out`` must not hold a head.

    Parameters
    ----------
    src : str or os.PathLike
        The folder of an EAGLE-3 head (rheotheory's own first head format is refused: no EAGLE-3
        layer reproduces it).
    out : str or os.PathLike
        The folder written; not ``src``, and holding no head.
    weights : str, default "model.safetensors"
        The weight file's name, one of :data:`EAGLE3_WEIGHTS`.
    dtype : torch.dtype, optional
        The dtype of the floating tensors written (None: float16).

    Returns
    -------
    pathlib.Path
        ``out``.

    Raises
    ------
    InstanceError
        If ``src`` holds no EAGLE-3 head (or rheotheory's first format), ``out`` is ``src`` or
        already holds a head, or the head does not load.
    """
    src, out = Path(src), Path(out)
    c = _check_source(src)
    if out.resolve() == src.resolve():
        raise InstanceError("the output folder is the source folder; choose another")
    if out.exists() and any((out / f).exists() for f in ("config.json",) + EAGLE3_WEIGHTS):
        raise InstanceError(f"{str(out)!r} already holds a head; choose another folder")
    head = _load_alone(src, c)
    keep = {k: c[k] for k in ("rope_scaling", "max_position_embeddings") if k in c}
    save_eagle3(head, out, weights=weights, extra_config=keep, dtype=dtype or torch.float16)
    if (src / "manifest.json").is_file():
        (out / "manifest.json").write_text((src / "manifest.json").read_text())
    return out
