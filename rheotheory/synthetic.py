r"""Synthetic LM pairs at real vocabulary sizes: seeded, prefix-hashed, never tabulated.

A :class:`SyntheticPair` is a "language" whose next-token logits after a prefix ``u`` are
computed on demand from a hash of ``(seed, u)``:

.. math::

    \ell_u(t) = s_u \bigl(-\alpha \log(1 + r(t)) + \sigma\, \varepsilon_u(t)\, 1[r(t) < H]\bigr)

- ``r(t)`` is the rank of token ``t`` in a seeded global permutation (a Zipf-like base law);
- ``\varepsilon_u`` is standard normal noise drawn from a generator seeded by the prefix: the
  context reshuffles the *head* of the vocabulary (the ``H`` = ``context_head`` best base
  ranks, where essentially all the mass is), the tail keeps its base logits;
- ``s_u = \exp(\gamma \eta_u)`` (``\eta_u`` standard normal) makes some contexts peaked and
  others flat, as real next-token laws are.

The target is :math:`p_u = \mathrm{softmax}(\ell_u / T)` (``T = 0``: exact greedy, a point mass
on the arg-max, ties by smaller token id). The draft adds independent prefix-seeded noise of
scale ``mismatch`` to the head logits, :math:`\ell^q_u = \ell_u + \mathrm{mismatch}\cdot
s_u \xi_u`, and is tempered only when ``temper_draft`` is set (EAGLE does not temper its draft).

**Sparse draft** (RheoSampling): with ``draft_top_k = k`` the draft logits are truncated to
their ``k`` largest entries (ties by smaller id) *before* the softmax; ``q(u)`` returns that
truncated law, so the tree is drafted from it and the verifier sees the very same ``q``, which
keeps every lossless verifier lossless.

Laws are cached per prefix as they are requested (a bounded LRU: at V = 32k one law pair is
0.5 MB), never tabulated. ``pair.at(context)`` is the same language viewed after a context,
so a step can start from many different contexts.

>>> pair = SyntheticPair(vocab_size=50, seed=1)
>>> bool(abs(pair.p((3, 4)).sum() - 1) < 1e-12) and pair.p((3, 4)) is pair.p((3, 4))
True
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass, field, replace

import numpy as np

from . import laws
from .errors import InstanceError, RheoError

__all__ = ["SyntheticPair", "DEFAULT_DRAFT_TOP_K", "MISMATCH_LEVELS", "mismatch_value", "single_draft_acceptance"]

#: RheoSampling truncates the draft logits to the top 128 before sampling.
DEFAULT_DRAFT_TOP_K = 128

#: Named draft mismatch levels used by the sweeps: draft noise scale (see the module docstring).
#: Their single-draft acceptance 1 - TV(p, q) at T = 1 is measured by
#: :func:`single_draft_acceptance` (about 0.87 for "low" and 0.60 for "high" at V = 50 and 32k, T = 1).
MISMATCH_LEVELS = {"low": 0.7, "high": 2.2}

#: Tags mixed into the seeds so the per-prefix stream and the global permutation differ.
_PREFIX_TAG, _GLOBAL_TAG = 0, 2



def mismatch_value(level) -> float:
    """The draft noise scale of a mismatch level: a name of :data:`MISMATCH_LEVELS` or a number >= 0.

    Parameters
    ----------
    level : str or float
        ``"low"`` or ``"high"`` (:data:`MISMATCH_LEVELS`), or a number (or its text) >= 0.

    Returns
    -------
    float
        The noise scale ``mismatch`` of a :class:`SyntheticPair`.

    Raises
    ------
    RheoError
        If ``level`` is neither a level name nor a number, or is negative, NaN or infinite.
    """
    if isinstance(level, str):
        if level in MISMATCH_LEVELS:
            return MISMATCH_LEVELS[level]
        try:
            level = float(level)
        except ValueError:
            raise RheoError(f"unknown mismatch {level!r}; use {', '.join(MISMATCH_LEVELS)} or a number") from None
    if not isinstance(level, (int, float)) or isinstance(level, bool) or not math.isfinite(level) or level < 0:
        raise RheoError(f"mismatch must be a finite number >= 0, got {level!r}")
    return float(level)

@dataclass(frozen=True)
class SyntheticPair:
    """A seeded synthetic target/draft pair (see the module docstring). Float64 laws.

    Attributes
    ----------
    vocab_size : int
        V, at least 2.
    seed : int, default 0
        Language seed (the same seed gives the same language), >= 0.
    mismatch : float, default MISMATCH_LEVELS["low"]
        Draft noise scale, 0 = draft equals target logits.
    temperature : float, default 1.0
        T applied to the target (0 = exact greedy).
    temper_draft : bool, default False
        Also apply T to the draft (EAGLE does not).
    draft_top_k : int or None, default DEFAULT_DRAFT_TOP_K
        Sparse draft: top-k logits kept; None = off.
    zipf : float, default 3.0
        alpha, slope of the base log-law.
    context_noise : float, default 2.0
        sigma, context perturbation of the head logits.
    context_head : int, default 512
        H, tokens whose logits depend on the context.
    sharpness : float, default 0.4
        gamma, spread of the per-context logit scale.
    context : tuple of int, default ()
        Prefix prepended to every query (see :meth:`at`).
    cache_size : int, default 128
        Prefixes whose laws are kept (LRU).
    exact : bool
        Always False (float64 laws); not a constructor argument.

    Raises
    ------
    InstanceError
        If a field is out of range: V < 2, a negative seed, a negative or non-finite ``mismatch``,
        ``zipf``, ``context_noise``, ``sharpness`` or temperature, a ``draft_top_k``,
        ``context_head`` or ``cache_size`` below 1, or a negative token in ``context``.
    """

    vocab_size: int  # V
    seed: int = 0  # language seed (the same seed gives the same language)
    mismatch: float = MISMATCH_LEVELS["low"]  # draft noise scale, 0 = draft equals target logits
    temperature: float = 1.0  # T applied to the target (0 = exact greedy)
    temper_draft: bool = False  # also apply T to the draft (EAGLE does not)
    draft_top_k: int | None = DEFAULT_DRAFT_TOP_K  # sparse draft: top-k logits kept; None = off
    zipf: float = 3.0  # alpha, slope of the base log-law
    context_noise: float = 2.0  # sigma, context perturbation of the head logits
    context_head: int = 512  # H, tokens whose logits depend on the context
    sharpness: float = 0.4  # gamma, spread of the per-context logit scale
    context: tuple = ()  # prefix prepended to every query (see :meth:`at`)
    cache_size: int = 128  # prefixes whose laws are kept (LRU)
    exact: bool = field(default=False, init=False)  # always float64
    _state: dict = field(default_factory=dict, init=False, repr=False, compare=False, hash=False)

    def __post_init__(self):
        v = self.vocab_size
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 2:
            raise InstanceError(f"vocab_size must be an integer >= 2, got {v!r}")
        if not isinstance(self.seed, (int, np.integer)) or self.seed < 0:
            raise InstanceError(f"seed must be a non-negative integer, got {self.seed!r}")
        for name in ("mismatch", "zipf", "context_noise", "sharpness"):
            x = getattr(self, name)
            if not isinstance(x, (int, float)) or not math.isfinite(x) or x < 0:
                raise InstanceError(f"{name} must be a finite number >= 0, got {x!r}")
        t = self.temperature
        if not isinstance(t, (int, float)) or not math.isfinite(t) or t < 0:
            raise InstanceError(f"temperature must be a finite number >= 0, got {t!r}")
        k = self.draft_top_k
        if k is not None and (not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 1):
            raise InstanceError(f"draft_top_k must be a positive integer or None, got {k!r}")
        if not isinstance(self.context_head, int) or self.context_head < 1:
            raise InstanceError(f"context_head must be a positive integer, got {self.context_head!r}")
        if not isinstance(self.cache_size, int) or self.cache_size < 1:
            raise InstanceError(f"cache_size must be a positive integer, got {self.cache_size!r}")
        if any(not isinstance(x, (int, np.integer)) or x < 0 for x in self.context):
            raise InstanceError("context must be a tuple of non-negative token ids")
        object.__setattr__(self, "context", tuple(int(x) for x in self.context))

    # -- shared, seed-only state -------------------------------------------------------------
    def _global(self):
        g = self._state.get("global")
        if g is None:
            rng = np.random.default_rng([int(self.seed), _GLOBAL_TAG])
            perm = rng.permutation(self.vocab_size)  # perm[r] = token of base rank r
            rank_of = np.empty(self.vocab_size, dtype=np.int64)
            rank_of[perm] = np.arange(self.vocab_size)
            base = -self.zipf * np.log1p(rank_of.astype(np.float64))  # [vocab]
            head = perm[: min(self.context_head, self.vocab_size)]  # [H] token ids, by base rank
            tail = perm[head.size:]  # [V - H] the other ids, by base rank
            g = self._state["global"] = (base, head, tail)
            self._state["cache"] = OrderedDict()
        return g

    def at(self, context) -> "SyntheticPair":
        """The same language seen after ``context`` (queries become ``context + prefix``).

        The view shares nothing mutable with ``self`` except the seed-derived base law.

        Parameters
        ----------
        context : iterable of int
            Token ids appended to the pair's own :attr:`context`.

        Returns
        -------
        SyntheticPair
            The view, with an empty law cache.
        """
        view = replace(self, context=tuple(self.context) + tuple(int(x) for x in context))
        if "global" in self._state:
            view._state["global"] = self._state["global"]
            view._state["cache"] = OrderedDict()
        return view

    def with_temperature(self, temperature: float) -> "SyntheticPair":
        """The same language and draft at another temperature.

        Parameters
        ----------
        temperature : float
            The new target temperature T >= 0 (and the draft's, if ``temper_draft``).

        Returns
        -------
        SyntheticPair
            A copy with that temperature (and an empty law cache).
        """
        return replace(self, temperature=temperature)

    # -- logits --------------------------------------------------------------------------------
    def _head_logits(self, full_prefix: tuple):
        """(s_u, target head logits, draft head logits) after ``full_prefix``. # [H] each

        Only the head depends on the context; the tail logits are ``s_u * base``.
        """
        base, head, _ = self._global()
        # One generator per prefix; the target's draws come first, then the draft's, so the
        # draft noise is independent of the target noise and the target does not depend on it.
        rng = np.random.default_rng([int(self.seed), _PREFIX_TAG, len(full_prefix), *full_prefix])
        scale = math.exp(self.sharpness * rng.standard_normal())
        lt = scale * (base[head] + self.context_noise * rng.standard_normal(head.size))
        ld = lt + self.mismatch * scale * rng.standard_normal(head.size)
        return scale, lt, ld

    def _full(self, scale: float, head_logits: np.ndarray) -> np.ndarray:
        base, head, _ = self._global()
        out = scale * base  # [vocab]
        out[head] = head_logits
        return out

    def _draft_law(self, scale: float, ld_head: np.ndarray) -> np.ndarray:
        """The (sparse) draft law from the draft head logits. # [vocab]"""
        k = self.draft_top_k
        t = self.temperature if self.temper_draft else 1.0
        if k is None or k >= self.vocab_size:
            return _softmax(self._full(scale, ld_head), t)
        base, head, tail = self._global()
        # NOTE: tail logits decrease strictly with the base rank, so the top k of the whole vector
        # lie among the head and the k best tail tokens: the truncation is exact, in O(H + k).
        ids = np.concatenate([head, tail[:k]])  # [H + k] candidate token ids
        lg = np.concatenate([ld_head, scale * base[tail[:k]]])  # [H + k] their logits
        order = np.argsort(ids, kind="stable")  # ties by smaller id need id order
        ids, lg = ids[order], lg[order]
        keep = _top_k_mask(lg, k)
        q = np.zeros(self.vocab_size)
        q[ids[keep]] = _softmax(lg[keep], t)
        return q

    def _entry(self, prefix) -> list:
        """Cache entry [scale, target head logits, draft head logits, p or None, q or None]."""
        self._global()
        cache = self._state["cache"]
        key = tuple(prefix)
        hit = cache.get(key)
        if hit is not None:
            cache.move_to_end(key)
            return hit
        for t in key:
            if not isinstance(t, (int, np.integer)) or not 0 <= t < self.vocab_size:
                raise InstanceError(f"token {t!r} outside the vocabulary 0..{self.vocab_size - 1}")
        entry = cache[key] = [*self._head_logits(self.context + key), None, None]
        if len(cache) > self.cache_size:
            cache.popitem(last=False)
        return entry

    def p(self, prefix) -> np.ndarray:
        """Target law after ``prefix`` (computed on first use, then cached). # [vocab]

        Parameters
        ----------
        prefix : tuple of int
            Token ids after :attr:`context`, each in 0..V-1.

        Returns
        -------
        numpy.ndarray of shape (V,), float64
            p(. | context + prefix), read-only.

        Raises
        ------
        InstanceError
            If a token of ``prefix`` is outside the vocabulary.
        """
        e = self._entry(prefix)
        if e[3] is None:
            p = _softmax(self._full(e[0], e[1]), float(self.temperature))
            p.flags.writeable = False
            e[3] = p
        return e[3]

    def q(self, prefix) -> np.ndarray:
        """Draft law after ``prefix`` (top-k truncated when sparse; cached). # [vocab]

        Parameters
        ----------
        prefix : tuple of int
            Token ids after :attr:`context`, each in 0..V-1.

        Returns
        -------
        numpy.ndarray of shape (V,), float64
            q(. | context + prefix), read-only; zero outside the top ``draft_top_k`` when sparse.

        Raises
        ------
        InstanceError
            If a token of ``prefix`` is outside the vocabulary.
        """
        e = self._entry(prefix)
        if e[4] is None:
            q = self._draft_law(e[0], e[2])
            q.flags.writeable = False
            e[4] = q
        return e[4]

    def laws_at(self, prefix):
        """(p, q) after ``prefix`` (relative to :attr:`context`). # [vocab] each

        Parameters
        ----------
        prefix : tuple of int
            Token ids after :attr:`context`, each in 0..V-1.

        Returns
        -------
        p, q : numpy.ndarray of shape (V,), float64
            The target and draft laws, as :meth:`p` and :meth:`q` return them.

        Raises
        ------
        InstanceError
            If a token of ``prefix`` is outside the vocabulary.
        """
        return self.p(prefix), self.q(prefix)

    def describe(self) -> str:
        """A one-line name of the pair: vocabulary, seed, mismatch, temperature, draft tempering and sparsity.

        Returns
        -------
        str
            E.g. ``synthetic V=32000 seed=0 mismatch=0.7 T=1 temper_draft=False sparse=top-128``.
        """
        sparse = f"top-{self.draft_top_k}" if self.draft_top_k is not None else "off"
        return (f"synthetic V={self.vocab_size} seed={self.seed} mismatch={self.mismatch:g} "
                f"T={self.temperature:g} temper_draft={self.temper_draft} sparse={sparse}")

    def to_dict(self) -> dict:
        """The pair's settings as a JSON-ready dict (``"kind": "synthetic"``).

        Returns
        -------
        dict[str, object]
            ``kind``, ``vocab_size``, ``seed``, ``mismatch``, ``temperature``, ``temper_draft`` and
            ``draft_top_k``; the shape parameters (``zipf``, ``context_noise``, ``context_head``,
            ``sharpness``), ``context`` and ``cache_size`` are not written.
        """
        return {"kind": "synthetic", "vocab_size": self.vocab_size, "seed": self.seed,
                "mismatch": self.mismatch, "temperature": self.temperature,
                "temper_draft": self.temper_draft, "draft_top_k": self.draft_top_k}


def _softmax(logits: np.ndarray, temperature: float) -> np.ndarray:
    """softmax(logits / T) as a float64 law; T = 0 is exact greedy (ties by smaller id).

    The exponentials are taken in float32 (about 5x faster at V = 32k on this project's CPUs)
    and normalised in float64: the law is a deterministic function of the prefix, which is all
    losslessness needs. # [vocab]
    """
    if temperature == 0:
        return laws.temper_logits(logits, 0.0)
    z = logits / temperature
    z = (z - z.max()).astype(np.float32)
    e = np.exp(z).astype(np.float64)  # exp(-inf) = 0 outside a sparse draft's top-k
    return e / e.sum()


def _top_k_mask(x: np.ndarray, k: int) -> np.ndarray:
    """Mask of the k largest entries of ``x``, ties by smaller id (as :func:`laws.top_k_mask`),
    in O(V) with a partition instead of a full sort. # [vocab]"""
    v = np.partition(x, x.size - k)[x.size - k]  # the k-th largest value
    mask = x > v
    # NOTE: entries equal to the threshold fill the remaining places in id order.
    ties = np.flatnonzero(x == v)[: k - int(mask.sum())]
    mask[ties] = True
    return mask


def single_draft_acceptance(pair: SyntheticPair, contexts: int = 200, seed: int = 0) -> float:
    """Mean of 1 - TV(p, q) over random contexts: the acceptance of one sampled draft token.

    Each context is 3 uniform token ids; the laws are compared at the empty prefix after it.

    Parameters
    ----------
    pair : SyntheticPair
        The pair to measure.
    contexts : int, default 200
        Number of random contexts averaged over.
    seed : int, default 0
        Seed of the contexts.

    Returns
    -------
    float
        The mean of sum(min(p, q)) over the contexts, in [0, 1].
    """
    rng = np.random.default_rng(seed)
    vals = []
    for _ in range(contexts):
        ctx = tuple(int(x) for x in rng.integers(0, pair.vocab_size, size=3))
        p, q = pair.at(ctx).laws_at(())
        vals.append(float(np.minimum(p, q).sum()))
    return float(np.mean(vals))
