r"""The decoding loop: speculative decoding with real models, the same builders and verifiers.

One step of a tree method (batch size 1):

1. **Draft.** The draft first catches up on the committed text it has not seen (one chained
   pass), which gives q at the root. The method's own tree builder
   (:meth:`rheotheory.methods.Method.builder`) then runs on a :class:`DraftTreePair`, whose
   ``q(prefix)`` comes from the draft evaluated over the tree *layer by layer* (one batched pass
   per expanded layer, tree attention mask, depth-based positions; on CPU the draft runs as a
   numpy copy, :class:`~rheotheory.decode.backends.tree_lm.NumpyLM`). Random draws go through a
   :class:`TorchChooser`: inverse-CDF lookups of uniforms from a ``torch.Generator``.
2. **Verify.** Every kept node is resolved; one target pass evaluates the pending token (the
   root) and the whole tree with the tree attention mask. The method's tree verifier (for a
   per-node rule, the walk of :mod:`rheotheory.verify.walk`, the one the certifier and Monte
   Carlo use; evaluated on the float64 numpy laws: the target's rows, the builder's draft laws)
   is sampled with a :class:`~rheotheory.verify.walk.SampleBranch` on the run's
   :class:`UniformStream`: at each node "continue into child c" or "emit y" is one pick.
3. **Commit.** The target's KV cache keeps the root and the accepted path only; the draft's
   keeps the accepted tokens it evaluated while drafting (the expanded ones), so its next
   catch-up pass covers only the rest (an accepted leaf, the emitted token). The emitted token
   becomes the next root. Z = accepted tokens + the emitted one.

At T = 0 the target law is the one-hot argmax, so every method reproduces greedy decoding
exactly (up to floating-point ties). At T > 0 the target law is softmax(logits / T), optionally
truncated to its top-k tokens and/or its top-p nucleus. The draft law the builders read (for
ranking, scores, sampled slots and their verification alike) is softmax(draft logits / T_d):
T_d = T when T > 0; when T = 0 it is :data:`GREEDY_DRAFT_TEMPERATURE`, sharp but not one-hot, so
the ranking survives and a sampled slot almost always holds the best-ranked token it may hold,
the best single guess of a greedy target's token. ``DecodeConfig.draft_temp`` overrides T_d.

**Sparse draft.** With ``DecodeConfig.draft_top_k = k`` the draft law is the softmax over the
draft's k largest logits only (ties by smaller id), every other token has q = 0
(:func:`draft_law`, the one place). Builders draft from that law and verifiers read the very same
law, so every lossless verifier stays lossless (docs/theory.md section 1.1: a truncated draft is
the q the verifier sees too). The default (``"auto"``) applies :func:`default_draft_top_k`: off
for vocabularies up to :data:`SPARSE_DRAFT_MIN_VOCAB`, :data:`DEFAULT_DRAFT_TOP_K` above.
"""

from __future__ import annotations

import dataclasses

import time
from dataclasses import dataclass, field

import numpy as np
import torch

from ..errors import InstanceError, LawError
from ..laws import inverse_cdf
from ..verify.walk import SampleBranch, as_tree_verifier, method_tree_verifier, sample_outcome
from ..methods import Method, resolve
from ..methods.registry import step_policy
from ..methods.online import drafted_paths, greedy_accepted
from ..synthetic import DEFAULT_DRAFT_TOP_K
from .backends.tree_lm import CacheBase, NumpyLM, TinyLM, chain_mask, tree_mask

__all__ = ["DecodeConfig", "GREEDY_DRAFT_TEMPERATURE", "DEFAULT_DRAFT_TOP_K", "SPARSE_DRAFT_MIN_VOCAB",
           "AUTO_DRAFT_TOP_K", "default_draft_top_k", "StepStats", "DecodeResult", "TorchChooser", "UniformStream",
           "DraftTreePair", "target_law", "draft_law", "decode", "AUTOREGRESSIVE", "target_samples"]

#: Plain sampling from the target: the registry's ``autoregressive`` method (no draft nodes).
AUTOREGRESSIVE = resolve("autoregressive")

#: Draft temperature when the target is greedy (T = 0). Measured on the built-in pair (K=2, D=4,
#: N=8, T = 0, 6 prompts x 100 tokens x 2): T_d = 0.05 gives eagle 4.49 and rheo 4.52 tokens per
#: step, T_d = 1 gives 4.43 and 3.98 (rheo with the tail proxy; 4.35 with next): a sampled slot
#: drawn from the untempered tail often misses the greedy token the next-ranked token would hit.
GREEDY_DRAFT_TEMPERATURE = 0.05

#: Vocabularies up to this size draft from the full softmax by default (the built-in pair, V = 128);
#: larger ones draft from the top :data:`DEFAULT_DRAFT_TOP_K` logits (RheoSampling's sparse draft,
#: the same default as :class:`~rheotheory.synthetic.SyntheticPair`). Either choice is lossless:
#: the verifier reads the law the draft used.
SPARSE_DRAFT_MIN_VOCAB = 1024

#: ``DecodeConfig.draft_top_k`` value that means "apply :func:`default_draft_top_k`".
AUTO_DRAFT_TOP_K = "auto"


def default_draft_top_k(vocab_size: int) -> int | None:
    """The default sparse-draft k for a vocabulary of ``vocab_size`` tokens.

    None (off) up to :data:`SPARSE_DRAFT_MIN_VOCAB` tokens, :data:`DEFAULT_DRAFT_TOP_K` above.

    Parameters
    ----------
    vocab_size : int
        V, the size of the vocabulary.

    Returns
    -------
    int or None
        The k of the sparse draft (the softmax over the draft's k largest logits), or None for the
        full softmax.

    Examples
    --------
    >>> default_draft_top_k(128), default_draft_top_k(49152)
    (None, 128)
    """
    return None if vocab_size <= SPARSE_DRAFT_MIN_VOCAB else DEFAULT_DRAFT_TOP_K


@dataclass(frozen=True)
class DecodeConfig:
    """Sampling settings of one decoding run.

    Attributes
    ----------
    temperature : float, default 1.0
        T of the target; 0 = greedy.
    top_k : int or None, optional
        Keep the target's k most probable tokens (None: all).
    top_p : float or None, optional
        Keep the target's smallest nucleus of mass >= ``top_p`` (None: all).
    max_new_tokens : int, default 64
        Tokens generated after the prompt (the last step may overshoot; the output is cut).
    draft_temp : float or None, optional
        T_d of the draft laws; None: T if T > 0, else :data:`GREEDY_DRAFT_TEMPERATURE` (see
        :attr:`draft_temperature`).
    draft_top_k : int, str or None, default AUTO_DRAFT_TOP_K
        Sparse draft: q is the softmax over the draft's k largest logits (k >= V: all); None: off;
        :data:`AUTO_DRAFT_TOP_K` (``"auto"``): :func:`default_draft_top_k` of V (see :meth:`draft_k`).

    Raises
    ------
    LawError
        If ``temperature`` is not a finite number >= 0, ``top_k`` not a positive integer, ``top_p``
        outside (0, 1], ``max_new_tokens`` not a positive integer, ``draft_temp`` not a finite
        number > 0, or ``draft_top_k`` neither a positive integer, None nor ``"auto"``.
    """

    temperature: float = 1.0  # T of the target; 0 = greedy
    top_k: int | None = None  # keep the target's k most probable tokens (None: all)
    top_p: float | None = None  # keep the target's smallest nucleus of mass >= top_p (None: all)
    max_new_tokens: int = 64  # tokens generated after the prompt (the last step may overshoot; cut)
    draft_temp: float | None = None  # T_d of the draft laws; None: T if T > 0, else GREEDY_DRAFT_TEMPERATURE
    # sparse draft: q is the softmax over the draft's k largest logits (k >= V: all); None: off;
    # AUTO_DRAFT_TOP_K: default_draft_top_k(V)
    draft_top_k: int | str | None = AUTO_DRAFT_TOP_K

    def __post_init__(self):
        t = self.temperature
        if not isinstance(t, (int, float)) or not np.isfinite(t) or t < 0:
            raise LawError(f"temperature must be a finite number >= 0, got {t!r}")
        if self.top_k is not None and (not isinstance(self.top_k, int) or self.top_k < 1):
            raise LawError(f"top-k must be a positive integer, got {self.top_k!r}")
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise LawError(f"top-p must be in (0, 1], got {self.top_p!r}")
        if not isinstance(self.max_new_tokens, int) or self.max_new_tokens < 1:
            raise LawError(f"max_new_tokens must be a positive integer, got {self.max_new_tokens!r}")
        d = self.draft_temp
        if d is not None and (not isinstance(d, (int, float)) or not np.isfinite(d) or d <= 0):
            raise LawError(f"draft temperature must be a finite number > 0, got {d!r}")
        k = self.draft_top_k
        if not (k is None or k == AUTO_DRAFT_TOP_K
                or (isinstance(k, (int, np.integer)) and not isinstance(k, bool) and k >= 1)):
            raise LawError(f"draft top-k must be a positive integer, None (off) or {AUTO_DRAFT_TOP_K!r}, got {k!r}")

    @property
    def draft_temperature(self) -> float:
        """T_d, the temperature of the draft laws the builders and verifiers read."""
        if self.draft_temp is not None:
            return float(self.draft_temp)
        return self.temperature if self.temperature > 0 else GREEDY_DRAFT_TEMPERATURE

    def draft_k(self, vocab_size: int) -> int | None:
        """The sparse-draft k in force for a vocabulary of ``vocab_size`` tokens.

        Parameters
        ----------
        vocab_size : int
            V, the size of the draft's vocabulary.

        Returns
        -------
        int or None
            ``draft_top_k`` (resolved by :func:`default_draft_top_k` when ``"auto"``), or None (the
            full law) when it is off or k >= V.
        """
        k = default_draft_top_k(vocab_size) if self.draft_top_k == AUTO_DRAFT_TOP_K else self.draft_top_k
        return None if k is None or k >= vocab_size else int(k)


def target_law(logits: torch.Tensor, cfg: DecodeConfig) -> torch.Tensor:
    """Target laws from logits: # [n, V] -> # [n, V] float64 (one-hot argmax at T = 0).

    At T > 0, softmax(logits / T), truncated to the top-k tokens (``cfg.top_k``; ties at the k-th
    probability all kept) and/or to the top-p nucleus (``cfg.top_p``), then renormalised.

    Parameters
    ----------
    logits : torch.Tensor of shape (n, V)
        A back-end's logits, one row per position.
    cfg : DecodeConfig
        The run's settings: ``temperature``, ``top_k``, ``top_p``.

    Returns
    -------
    torch.Tensor of shape (n, V), float64
        The target law p of each row (at T = 0 the one-hot of the first maximum).
    """
    z = logits.double()
    if cfg.temperature == 0:
        out = torch.zeros_like(z)
        out.scatter_(1, z.argmax(dim=1, keepdim=True), 1.0)  # argmax: first maximum
        return out
    p = torch.softmax(z / cfg.temperature, dim=1)
    if cfg.top_k is not None and cfg.top_k < p.shape[1]:
        kth = p.topk(cfg.top_k, dim=1).values[:, -1:]
        p = torch.where(p >= kth, p, torch.zeros_like(p))
    if cfg.top_p is not None and cfg.top_p < 1:
        srt, idx = p.sort(dim=1, descending=True)
        before = srt.cumsum(dim=1) - srt  # mass strictly before each token
        keep = torch.zeros_like(p, dtype=torch.bool).scatter_(1, idx, before < cfg.top_p * srt.sum(1, keepdim=True))
        p = torch.where(keep, p, torch.zeros_like(p))
    return p / p.sum(dim=1, keepdim=True)


def draft_law(logits, cfg: DecodeConfig) -> np.ndarray:
    r"""Draft laws as float64 numpy arrays for the builders and the verifiers: # [n, V] -> # [n, V].

    With k = ``cfg.draft_k(V)`` and T_d = ``cfg.draft_temperature``:

    .. math::
        q(x) = \frac{\exp(\ell_x / T_d)\,[x \in S_k]}{\sum_{y \in S_k} \exp(\ell_y / T_d)},

    where :math:`S_k` is the k largest logits (ties by smaller id; all V tokens when k is None).

    Parameters
    ----------
    logits : torch.Tensor or numpy.ndarray of shape (n, V)
        A back-end's logits: a torch tensor, or (from a
        :class:`~rheotheory.decode.backends.tree_lm.NumpyLM`) an array.
    cfg : DecodeConfig
        The run's settings: ``draft_temperature`` and ``draft_k``.

    Returns
    -------
    numpy.ndarray of shape (n, V), float64
        The draft law q of each row.

    Examples
    --------
    >>> cfg = DecodeConfig(temperature=1.0, draft_top_k=2)
    >>> draft_law(np.log(np.array([[1.0, 4.0, 2.0, 2.0]])), cfg).tolist()
    [[0.0, 0.6666666666666666, 0.3333333333333333, 0.0]]
    """
    if isinstance(logits, torch.Tensor):
        if cfg.draft_k(logits.shape[1]) is not None:
            return _sparse_draft_law_torch(logits, cfg)
        logits = logits.detach().cpu().numpy()
    z = logits.astype(np.float64)  # [n, V]
    t = cfg.draft_temperature
    if t != 1.0:
        z /= t
    k = cfg.draft_k(z.shape[1])
    if k is not None:
        z[~_top_k_rows(z, k)] = -np.inf  # exp(-inf) = 0: q = 0 outside the top k
    z -= np.maximum.reduce(z, axis=1, keepdims=True)  # NOTE: ufunc reductions: fewer Python layers
    np.exp(z, out=z)
    z /= np.add.reduce(z, axis=1, keepdims=True)
    return z


def _sparse_draft_law_torch(logits: torch.Tensor, cfg: DecodeConfig) -> np.ndarray:
    """:func:`draft_law` with a sparse draft, from torch logits: the same law (same top-k rule,
    ties by smaller id), found with ``topk`` instead of a partition of the whole row (a large
    vocabulary's laws are built several times per step)."""
    z = logits.detach().double()  # [n, V]
    t = cfg.draft_temperature
    if t != 1.0:
        z = z / t
    k = cfg.draft_k(z.shape[1])
    kth = z.topk(k, dim=1).values[:, -1:]  # [n, 1] the k-th largest value
    mask = z > kth
    eq = z == kth
    need = k - mask.sum(dim=1, keepdim=True)  # [n, 1] places left for entries equal to kth
    if bool((eq.sum(dim=1, keepdim=True) > need).any()):  # NOTE: ties at the threshold: fill in id order
        eq &= eq.cumsum(dim=1) <= need
    return torch.softmax(z.masked_fill(~(mask | eq), float("-inf")), dim=1).cpu().numpy()


def _top_k_rows(z: np.ndarray, k: int) -> np.ndarray:
    """Mask of the k largest entries of each row, ties by smaller id (as
    :func:`rheotheory.laws.top_k_mask`), with a partition instead of a sort: # [n, V] -> # [n, V]."""
    V = z.shape[1]
    kth = np.partition(z, V - k, axis=1)[:, V - k:V - k + 1]  # [n, 1] the k-th largest value
    mask = z > kth
    eq = z == kth
    need = k - mask.sum(axis=1, keepdims=True)  # [n, 1] places left for entries equal to kth
    # NOTE: entries equal to the threshold fill the remaining places in id order.
    return mask | (eq & (np.cumsum(eq, axis=1) <= need))


#: Uniform draws fetched from the torch generator at a time (one call per block, not per draw).
UNIFORM_BLOCK = 256


class UniformStream:
    """Uniform(0, 1) float64 draws from a CPU ``torch.Generator``, fetched in blocks.

    Every random choice of a decoding run is one inverse-CDF lookup of the next draw: at batch
    size 1, ``torch.multinomial`` on a small vector costs tens of microseconds per call.

    Parameters
    ----------
    gen : torch.Generator
        The CPU generator behind every draw (kept as ``self.gen``).
    """

    def __init__(self, gen: torch.Generator):
        self.gen = gen
        self._buf = np.empty(0)
        self._i = 0

    def next(self) -> float:
        """The next Uniform(0, 1) draw (a new block of :data:`UNIFORM_BLOCK` is fetched when needed).

        Returns
        -------
        float
            A float64 draw in [0, 1).
        """
        if self._i >= self._buf.shape[0]:
            self._buf = torch.rand(UNIFORM_BLOCK, generator=self.gen, dtype=torch.float64).numpy()
            self._i = 0
        u = self._buf[self._i]
        self._i += 1
        return float(u)

    def pick(self, weights) -> int:
        """Index drawn with probability proportional to non-negative ``weights``.

        The inverse CDF (:func:`~rheotheory.laws.inverse_cdf`) at the next draw.

        Parameters
        ----------
        weights : numpy.ndarray of shape (n,)
            Non-negative weights, not all zero (any sequence of numbers).

        Returns
        -------
        int
            The index drawn, in ``0 .. n - 1``; an index of zero weight is never drawn.

        Raises
        ------
        LawError
            If every weight is zero (from :func:`~rheotheory.laws.inverse_cdf`).
        """
        return inverse_cdf(weights, self.next())


class TorchChooser:
    """The builders' chooser, sampling with a ``torch.Generator`` (CPU) or a :class:`UniformStream`.

    Parameters
    ----------
    gen : torch.Generator or UniformStream
        The source of the draws; a generator is wrapped in a new :class:`UniformStream`, a stream
        is shared (kept as ``self.stream``).
    """

    def __init__(self, gen):
        self.stream = gen if isinstance(gen, UniformStream) else UniformStream(gen)

    def draw(self, law) -> int:
        """A token drawn from ``law``: :meth:`UniformStream.pick` at the stream's next draw.

        Parameters
        ----------
        law : numpy.ndarray of shape (V,)
            Non-negative weights of the tokens (the law up to its total), not all zero.

        Returns
        -------
        int
            The token id drawn.
        """
        return self.stream.pick(law)


class DraftTreePair:
    """Pair-like adapter for the tree builders over one step's draft tree.

    ``q(prefix)`` (prefix = tokens below the root) is the draft law there, # [V] float64. A miss
    evaluates that node; :meth:`prefetch` (called by the dynamic builder once per layer)
    evaluates a whole layer in one pass. Keys/values of evaluated nodes stay uncommitted in the
    cache's scratch area (one slot per node, in evaluation order), where later layers attend to
    them. ``p`` is not available here: the target is evaluated once, after the tree is built.

    Parameters
    ----------
    model : TinyLM, NumpyLM, SmolLM, HFLM or DraftHead
        Any back-end with the model interface of :mod:`rheotheory.decode.backends.tree_lm`
        (``extend`` with ``offset``, ``cfg.vocab_size``).
    cache : CacheBase
        ``model``'s own cache (from its ``new_cache``), caught up on the committed text.
    root_q : numpy.ndarray of shape (V,), float64
        The draft law at the root (q after the committed text).
    cfg : DecodeConfig
        The run's settings, from which :func:`draft_law` builds the laws of new nodes.

    Attributes
    ----------
    exact : bool
        False: the laws are floats (the pair protocol's flag).
    vocab_size : int
        V, the draft's vocabulary size.
    passes : int
        Draft passes made for the tree so far.
    """

    exact = False

    def __init__(self, model, cache: CacheBase, root_q: np.ndarray, cfg: DecodeConfig):
        self.model, self.cache, self.cfg = model, cache, cfg
        self.vocab_size = model.cfg.vocab_size
        self._q = {(): root_q}
        self._slot: dict = {}  # prefix -> its scratch entry in the cache
        self.passes = 0  # draft passes made for the tree

    def q(self, prefix):
        """The draft law after ``prefix``, evaluating that node when it has not been (one pass).

        Parameters
        ----------
        prefix : tuple of int
            Token ids below the root (``()``: the root).

        Returns
        -------
        numpy.ndarray of shape (V,), float64
            The draft law q there.
        """
        law = self._q.get(prefix)
        if law is None:
            self.prefetch([prefix])
            law = self._q[prefix]
        return law

    def commit_path(self, accepted) -> int:
        """Commit the draft keys/values of the accepted tokens that were evaluated while drafting.

        They are a prefix of ``accepted`` (a node is evaluated only if it was expanded, and so were
        its ancestors); the next step's catch-up pass evaluates the rest.

        Parameters
        ----------
        accepted : sequence of int
            The accepted token ids below the root, in order.

        Returns
        -------
        int
            How many of them were committed to the cache.
        """
        keep = []
        for j in range(1, len(accepted) + 1):
            slot = self._slot.get(tuple(accepted[:j]))
            if slot is None:
                break
            keep.append(slot)
        if keep:
            self.cache.commit(keep)
        return len(keep)

    def p(self, prefix):  # pragma: no cover - the protocol's other half, never used while drafting
        """Not available: the target is evaluated once, after the tree is built.

        Parameters
        ----------
        prefix : tuple of int
            Token ids below the root.

        Raises
        ------
        InstanceError
            Always: the draft-tree adapter has no target law.
        """
        raise InstanceError("the draft-tree adapter has no target law")

    def prefetch(self, prefixes) -> None:
        """Evaluate the draft at every new prefix of ``prefixes`` in one batched pass.

        The dynamic builder calls it once per layer. Each new node attends to its ancestors'
        scratch entries and itself (tree attention), at position = its depth; its keys/values stay
        in the cache's scratch area, one slot per node, until :meth:`commit_path`.

        Parameters
        ----------
        prefixes : iterable of sequence of int
            Nodes of one layer, as token ids below the root; ones already evaluated are skipped.
            Their parents must have been evaluated.
        """
        new = [tuple(pf) for pf in dict.fromkeys(prefixes) if tuple(pf) not in self._q]
        if not new:
            return
        n_side = len(self._slot)
        mask = np.zeros((len(new), n_side + len(new)), dtype=bool)
        for i, pf in enumerate(new):
            for j in range(1, len(pf)):
                mask[i, self._slot[pf[:j]]] = True  # NOTE: ancestors were expanded, hence evaluated
            mask[i, n_side + i] = True
        logits = self.model.extend(self.cache, [pf[-1] for pf in new], [len(pf) - 1 for pf in new], mask,
                                   offset=n_side)
        self.passes += 1
        qs = draft_law(logits, self.cfg)
        for i, pf in enumerate(new):
            self._slot[pf] = n_side + i
            self._q[pf] = qs[i]


@dataclass(frozen=True)
class StepStats:
    """What one step did.

    Attributes
    ----------
    accepted : int
        Draft tokens accepted (|Z| - 1).
    tree_nodes : int
        Non-root nodes sent to the target.
    draft_passes : int
        Draft forward passes in this step.
    arm : int, default 0
        The arm an online method's policy ran (0 for a fixed method).
    """

    accepted: int  # draft tokens accepted (|Z| - 1)
    tree_nodes: int  # non-root nodes sent to the target
    draft_passes: int  # draft forward passes in this step
    arm: int = 0  # the arm an online method's policy ran (0 for a fixed method)


@dataclass
class DecodeResult:
    """Output and statistics of one decoding run.

    Attributes
    ----------
    tokens : list of int
        Generated token ids (``max_new_tokens`` of them).
    steps : list of StepStats
        One per step.
    seconds : float, default 0.0
        Wall-clock time of the decoding loop (draft conversion and prompt prefill excluded).
    policy : object, optional
        The step policy after the last step (pass it to the next :func:`decode` to keep learning).
    """

    tokens: list  # generated token ids (max_new_tokens of them)
    steps: list = field(default_factory=list)  # [StepStats] per step
    seconds: float = 0.0  # wall-clock time of the decoding loop (draft conversion and prompt prefill excluded)
    policy: object = None  # the step policy after the last step (pass it to the next decode to keep learning)

    @property
    def tokens_per_step(self) -> float:
        """Mean |Z| over the steps (every step emits accepted + 1 tokens; the cut last step counts whole)."""
        return float(np.mean([s.accepted + 1 for s in self.steps]))

    @property
    def tokens_per_second(self) -> float:
        """Generated tokens per second of the decoding loop (NaN when no time was measured)."""
        return len(self.tokens) / self.seconds if self.seconds > 0 else float("nan")




def reads_features(draft) -> bool:
    """Whether ``draft`` is a draft head reading the target's hidden features
    (:class:`~rheotheory.decode.heads.draft_head.DraftHead`: ``catch_up`` and ``cfg.feature_layers``)."""
    return hasattr(draft, "catch_up") and hasattr(getattr(draft, "cfg", None), "feature_layers")


class _State:
    """Committed text, both caches and, for a draft head, the target's features of the committed
    positions (``feats`` # [capacity, F d]; row i: the target's hidden states after position i).
    ``capacity``: the most positions the decode commits (None: the model's ``max_len`` + 1)."""

    def __init__(self, target: TinyLM, draft, prompt: list[int], device, capacity: int | None = None):
        if len(prompt) < 1:
            raise InstanceError("the prompt must have at least one token")
        self.ctx = list(prompt)
        self.device = device
        self.tcache = target.new_cache()
        self.layers = tuple(draft.cfg.feature_layers) if reads_features(draft) else None
        if self.layers is not None and not hasattr(target, "extend_features"):
            raise InstanceError(f"a draft head needs a target that exposes its hidden states "
                                f"({type(target).__name__} does not)")
        self.feats, self.n_feats = None, 0
        if self.layers is not None:  # row i: the target's states after position i
            rows = self.tcache.max_len + 1 if capacity is None else min(capacity, self.tcache.max_len + 1)
            self.feats = torch.zeros(rows, draft.cfg.hidden * len(self.layers), device=device)
        n = len(prompt) - 1
        if n:  # target cache: everything but the pending (last) token
            self.target_pass(target, prompt[:-1], np.arange(n), chain_mask(n))
            self.tcache.commit(n)
            self.keep_features(list(range(n)))
        self.dcache = None if draft is None else draft.new_cache()

    def target_pass(self, target, tokens, depths, mask) -> "_TargetRows":
        """The target's pass over the new tokens, its laws read row by row; keeps their features
        when a draft head reads them. A back-end with ``extend_hidden`` (SmolLM) defers its output
        head to the rows the verifier reads (a step reads about tau of the N + 1 rows; the head is a
        fifth of a SmolLM2-135M pass)."""
        if hasattr(target, "extend_hidden"):
            h, self._pass_feats = target.extend_hidden(self.tcache, tokens, depths, mask, 0, self.layers or ())
            return _TargetRows(target, hidden=h)
        if self.layers is None:
            return _TargetRows(target, logits=target.extend(self.tcache, tokens, depths, mask))
        logits, self._pass_feats = target.extend_features(self.tcache, tokens, depths, mask, 0, self.layers)
        return _TargetRows(target, logits=logits)

    def keep_features(self, rows) -> None:
        """Append the last target pass's features of ``rows`` (the committed ones, in order)."""
        if self.layers is None:
            return
        f = self._pass_feats[rows]
        self.feats[self.n_feats:self.n_feats + f.shape[0]] = f
        self.n_feats += f.shape[0]

    def features_before(self, start: int, n: int):
        """Features of positions ``start - 1 .. start + n - 2`` (zeros before position 0), # [n, F d]."""
        if start == 0:
            return torch.cat([self.feats[:1] * 0, self.feats[:n - 1]])
        return self.feats[start - 1:start - 1 + n]


#: Rows of the deferred output head computed in one product on a CPU: a row and its first two
#: children, which the verifier reads next when it accepts one. At batch 1 the head's product is
#: bound by reading its weights (49152 x 576 for SmolLM2), so up to three rows cost little more than one
#: (benchmarks/step_profile.py times the step before and after; docs/guide/smollm2.md). On CUDA a
#: row and all its children.
CPU_HEAD_ROWS = 3


class _TargetRows:
    """The target laws of one pass's rows (float64 numpy, # [V] each), computed when first read:
    from the pass's logits, or from its final states through the model's ``logits_from``.

    ``children``: row -> its children's rows, in the tree's order; a deferred head computes a row
    together with the first ``head_rows - 1`` of them not yet computed (None: all of them)."""

    def __init__(self, model, logits=None, hidden=None):
        self.model, self.logits, self.hidden = model, logits, hidden
        self.children: dict[int, list[int]] = {}
        self.head_rows: int | None = None if hidden is None or hidden.device.type != "cpu" else CPU_HEAD_ROWS
        self._logits: dict[int, torch.Tensor] = {}
        self._laws = {}

    def _row_logits(self, r: int) -> torch.Tensor:
        if self.logits is not None:
            return self.logits[r:r + 1]
        got = self._logits.get(r)
        if got is None:
            rows = [r] + [c for c in self.children.get(r, ()) if c not in self._logits]
            if self.head_rows is not None:
                rows = rows[:self.head_rows]
            lg = self.model.logits_from(self.hidden[rows])  # [len(rows), V]
            for i, c in enumerate(rows):
                self._logits[c] = lg[i:i + 1]
            got = self._logits[r]
        return got

    def law(self, r: int, cfg: DecodeConfig) -> np.ndarray:
        got = self._laws.get(r)
        if got is None:
            got = self._laws[r] = target_law(self._row_logits(r), cfg)[0].cpu().numpy()
        return got


def _draft_root(draft: TinyLM, st: _State, cfg: DecodeConfig) -> np.ndarray:
    """Catch the draft cache up on the committed text (root included); q at the root, # [V]."""
    toks = st.ctx[st.dcache.length:]
    n = len(toks)
    if st.layers is not None:
        logits = draft.catch_up(st.dcache, toks, st.features_before(st.dcache.length, n))
        return draft_law(logits[-1:], cfg)[0]
    logits = draft.extend(st.dcache, toks, np.arange(n), chain_mask(n))
    st.dcache.commit(n)
    return draft_law(logits[-1:], cfg)[0]


def _tree_step(target: TinyLM, draft: TinyLM, method: Method, st: _State, cfg: DecodeConfig,
               stream: UniformStream, verifier, also=()) -> tuple[list[int], StepStats, list]:
    """One speculative step; ``verifier`` is a tree verifier or a per-node rule (see
    :func:`~rheotheory.verify.walk.as_tree_verifier`). ``also``: (method, chooser) pairs whose trees
    are drafted at the same prefix too, never sent to the target (``rheo-online:feedback=greedy``);
    their kept nodes' paths are returned, in order, as the third item."""
    chooser = TorchChooser(stream)
    root_q = _draft_root(draft, st, cfg)
    adapter = DraftTreePair(draft, st.dcache, root_q, cfg)
    tree = method.builder(adapter)(chooser)
    # every kept node is sent to the target: draw the sampled leaves nothing depended on
    order = [i for i in range(1, len(tree.nodes)) if tree.kept[i]]  # parents precede children
    for i in order:
        tree.resolve(i, chooser)
    # NOTE: the other trees draw from their own choosers, after the step's tree: the step's draws are its own
    drafted = [drafted_paths(m, adapter, ch) for m, ch in also]
    row = {0: 0}
    for r, i in enumerate(order, start=1):
        row[i] = r
    parents = [-1] + [row[tree.nodes[i].parent] for i in order]
    tokens = torch.tensor([st.ctx[-1]] + [tree.nodes[i].token for i in order], device=st.device)
    depths = torch.tensor([0] + [tree.nodes[i].depth for i in order], device=st.device)
    rows = st.target_pass(target, tokens, depths, tree_mask(parents))
    for r in range(1, len(parents)):
        rows.children.setdefault(parents[r], []).append(r)
    # The verifier runs on float64 numpy laws, as the builders' draft laws are: per-node torch
    # calls on V-sized vectors would cost more than the target pass at batch 1.
    z = sample_outcome(as_tree_verifier(verifier), tree, lambda node, prefix: rows.law(row[node], cfg),
                       SampleBranch(stream.next))
    out, path_rows = list(z.z), [0] + [row[i] for i in z.nodes]
    st.tcache.commit(path_rows)
    st.keep_features(path_rows)
    adapter.commit_path(out[:-1])  # the draft keeps what it already computed for the accepted path
    return out, StepStats(len(out) - 1, len(order), adapter.passes + 1), drafted


def _autoregressive_step(target: TinyLM, st: _State, cfg: DecodeConfig, stream: UniformStream):
    logits = target.extend(st.tcache, [st.ctx[-1]], [0])
    st.tcache.commit(1)
    return [stream.pick(target_law(logits, cfg)[0].cpu().numpy())], StepStats(0, 0, 0)


@torch.inference_mode()
def decode(target: TinyLM, draft: TinyLM | None, prompt: list[int], method: Method,
           cfg: DecodeConfig, gen: torch.Generator, verifier=None, progress=None, policy=None) -> DecodeResult:
    """Generate ``cfg.max_new_tokens`` tokens after ``prompt`` (token ids).

    Each step drafts the method's tree, verifies it with one target pass and commits the accepted
    path (module docstring). On CPU a :class:`~rheotheory.decode.backends.tree_lm.TinyLM` draft runs
    as a :class:`~rheotheory.decode.backends.tree_lm.NumpyLM` copy.

    Parameters
    ----------
    target : TinyLM, SmolLM or HFLM
        The target back-end (p), with the model interface of :mod:`rheotheory.decode.backends.tree_lm`.
    draft : TinyLM, SmolLM, HFLM, DraftHead or None
        The draft back-end (q), with the target's vocabulary; None only for a method without draft
        nodes. A draft head reads the target's hidden states (the target must expose them).
    prompt : list of int
        Token ids of the prompt, at least one; the last one is the first step's root.
    method : Method
        The method (:data:`AUTOREGRESSIVE`: no draft), taken at ``cfg.temperature``.
    cfg : DecodeConfig
        Sampling settings and the number of tokens to generate.
    gen : torch.Generator
        The CPU generator behind every random choice (tree draws, acceptances, emissions).
    verifier : callable or TreeVerifier, optional
        Replaces the method's verifier: a per-node rule (a transition-law function) or a
        :class:`~rheotheory.verify.walk.TreeVerifier`; tests use it to plant a known-lossy rule.
    progress : callable, optional
        Called with the number of tokens each step emits.
    policy : object, optional
        A step policy to continue from an earlier run (``DecodeResult.policy``: an online method
        keeps learning across prompts, as a server's would); default ``method.policy()`` at the
        temperature.

    Returns
    -------
    DecodeResult
        The ``cfg.max_new_tokens`` tokens, the per-step statistics, the loop's seconds and the
        policy after the last step.

    Raises
    ------
    InstanceError
        If ``method`` is not a :class:`~rheotheory.methods.Method`; a tree method has no draft; the
        vocabularies differ; the prompt is empty or has a token outside the vocabulary; prompt +
        new tokens + tree depth exceed the target's positions; the step policy reads the draft's
        root law; or a draft head's target does not expose its hidden states.
    """
    device = next(target.parameters()).device
    if not isinstance(method, Method):
        raise InstanceError(f"not a method: {method!r} (resolve a preset with rheotheory.methods.resolve)")
    method = method.at_temperature(cfg.temperature)
    tree_method = method.nodes > 0
    if tree_method and draft is None:
        raise InstanceError("speculative decoding needs a draft model")
    if draft is not None and draft.cfg.vocab_size != target.cfg.vocab_size:
        raise InstanceError("target and draft vocabularies differ")
    for t in prompt:
        if not 0 <= t < target.cfg.vocab_size:
            raise InstanceError(f"prompt token {t} outside the vocabulary 0..{target.cfg.vocab_size - 1}")
    depth = method.depth if tree_method else 0
    need = len(prompt) + cfg.max_new_tokens + depth + 1
    if need > target.cfg.max_len:
        raise InstanceError(f"prompt ({len(prompt)} tokens) + {cfg.max_new_tokens} new tokens + tree depth "
                            f"{depth} exceed the model's {target.cfg.max_len} positions")
    if tree_method and device.type == "cpu" and isinstance(draft, TinyLM):
        draft = NumpyLM(draft)  # batch-1 CPU drafting: numpy dispatch is cheaper than torch's
    st = _State(target, draft if tree_method else None, prompt, device, capacity=need)
    stream = UniformStream(gen)
    res = DecodeResult([])
    # NOTE: the step's method comes from the policy before the step draws anything
    # (docs/theory.md section 2.8); a fixed method's policy returns it at every step.
    policy = step_policy(method) if policy is None else policy
    if policy.reads_root:
        raise InstanceError(f"{method.family}: decoding does not pass the draft's root law to a step policy")
    arms = getattr(policy, "arms", (method,))
    if device.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()  # NOTE: the decoding loop only; the draft conversion and prompt prefill are setup
    # feedback=greedy (T = 0): other arms' trees drafted at a step's prefix, scored once the greedy
    # text after it is known; entries (where the step began in res.tokens, arm, the tree's paths)
    pending: list = []
    while len(res.tokens) < cfg.max_new_tokens:
        m = policy.choose()
        others = policy.others(m) if m.nodes > 0 and hasattr(policy, "others") else ()
        start = len(res.tokens)
        if m.nodes > 0:
            out, stats, drafted = _tree_step(target, draft, m, st, cfg, stream,
                                             method_tree_verifier(m) if verifier is None else verifier,
                                             [(arms[j], policy.chooser(j)) for j in others])
            pending.extend((start, j, paths) for j, paths in zip(others, drafted))
        else:
            out, stats = _autoregressive_step(target, st, cfg, stream)
        policy = policy.after(m, tuple(out))
        if pending:
            policy, pending = _score_pending(policy, pending, res.tokens + out, m.depth)
        if m is not method:
            stats = dataclasses.replace(stats, arm=arms.index(m))
        st.ctx.extend(out)
        res.tokens.extend(out)
        res.steps.append(stats)
        if progress is not None:
            progress(len(out))
    if device.type == "cuda":
        torch.cuda.synchronize()
    res.seconds = time.perf_counter() - t0
    res.tokens = res.tokens[:cfg.max_new_tokens]
    res.policy = policy
    return res


def _score_pending(policy, pending: list, text: list, depth: int):
    """Score the pending trees whose greedy text (``text[start:]``) is known far enough: to depth
    ``depth``, or to a token the tree does not offer. Returns the policy that saw them and what is
    still pending (a decode's last steps leave some; they are dropped)."""
    left = []
    for start, arm, paths in pending:
        greedy = text[start:start + depth]
        k = greedy_accepted(paths, greedy)
        if k < len(greedy) or len(greedy) == depth:
            policy = policy.observe(arm, k)
        else:
            left.append((start, arm, paths))
    return policy, left


def target_samples(target, prompts, samples: int, tokens: int, gen: torch.Generator,
                   temperature: float = 1.0) -> tuple[list[list[int]], list[int]]:
    """``samples`` autoregressive continuations of ``tokens`` tokens from ``target`` for each prompt.

    The text on which draft acceptance is measured; prompts in order, every draw from ``gen``.

    Parameters
    ----------
    target : TinyLM, SmolLM or HFLM
        The target back-end sampled (with :data:`AUTOREGRESSIVE`).
    prompts : iterable of sequence of int
        Token-id prompts.
    samples : int
        Continuations per prompt.
    tokens : int
        Tokens per continuation.
    gen : torch.Generator
        The CPU generator behind every draw.
    temperature : float, default 1.0
        T of the target (0: greedy).

    Returns
    -------
    seqs : list of list of int
        Prompt + continuation, one per sample (``samples`` per prompt, prompts in order).
    starts : list of int
        The index in each sequence where its continuation starts (the prompt's length).
    """
    seqs, starts = [], []
    cfg = DecodeConfig(temperature=temperature, max_new_tokens=tokens)
    for prompt in prompts:
        for _ in range(samples):
            seqs.append(list(prompt) + list(decode(target, None, prompt, AUTOREGRESSIVE, cfg, gen).tokens))
            starts.append(len(prompt))
    return seqs, starts
