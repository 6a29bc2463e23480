r"""Adaptive RheoSampling trees: a head sized from the draft law, several samples without replacement.

Semantics (docs/theory.md section 2.7). Layers, expansion order and the global prune are those of
the dynamic builder (:mod:`rheotheory.trees.dynamic`, section 2.1); only the slots of one
expansion differ. Expanding node :math:`v` (path :math:`u`, draft law :math:`q_v = q(\cdot \mid u)`,
ranked tokens :math:`r_1, r_2, \dots`) fills at most :math:`K` slots:

1. **Head.** :math:`m_v` deterministic children :math:`H_v = \{r_1, \dots, r_{m_v}\}` in rank
   order, each scoring :math:`\mathrm{score}(v)\, q_v(r_i)` (:math:`\mathrm{score}(v)\, \hat p(r_i)`
   with the ``predicted`` proxy). The head size is a function of :math:`q_v` and the target
   temperature :math:`T` alone (:func:`head_size`): a fixed :math:`m`; with ``head="threshold"``
   the number of ranked tokens among the first :math:`K - 1` whose draft probability reaches the
   threshold :math:`\theta`,

   .. math::

       m_v = \#\{ i \le K - 1 : q_v(r_i) \ge \theta \};

   with ``head="predicted"`` (the default) the smallest :math:`m \le K - 1` that maximises the
   predicted acceptance :math:`A(m)` (``predicted_acceptances``) under the predicted target
   :math:`\hat p = \mathrm{norm}(q_v^{1/T})`, and :math:`m_v = 0` for :math:`T \ge`
   :data:`ALL_SAMPLED_FROM_T`.
   It never reads a drawn token, so it is fixed before any draw of the expansion.
2. **Sampled slots.** :math:`s_v = \min(K - m_v, |\mathrm{supp}\, L_v|)` children drawn *without
   replacement* from the tail law :math:`L_v = q_v|_{\bar H_v}` (one ``wor`` sample group):
   member :math:`j` has law :math:`L_v` restricted to the earlier members' tokens. Member
   :math:`j` (1-based) scores :math:`\mathrm{score}(v)\, \pi_{v,j}` with a proxy that depends on
   :math:`q_v` and :math:`H_v` only (:data:`PROXIES`; ``true`` is the negative control), made
   non-increasing in :math:`j` so that an earlier member always ranks ahead of a later one:

   * ``predicted`` (the default): :math:`\pi_{v,j} = A_v\, \delta^{\,j-1}` (float), with
     :math:`A_v = \sum_{x \notin H_v} \min(\hat p(x), q_v(x) / M_v)` the predicted acceptance of
     the first sample;
   * ``tail``: :math:`\pi_{v,j} = a\, M_v\, \delta^{\,j-1}`, :math:`M_v = 1 - q_v(H_v)` the tail
     mass, :math:`a` = ``sample_accept`` (:data:`SAMPLE_ACCEPT`) and :math:`\delta` =
     ``sample_decay`` (:data:`SAMPLE_DECAY`);
   * ``next``: :math:`\pi_{v,j} = q_v(r_{m_v + j})`, the token a deterministic slot in that
     position would hold;
   * ``true``: :math:`q_v(s_j)` (drawn at creation; known to be lossy).

Slot order (= creation order = verification order): the head in rank order, then the samples
in draw order. Sampled tokens are drawn lazily, when their node is expanded (or a later member
of their group is), so an unexpanded sample is integrated by the verifier walk.

Every node scores at most its parent (all proxies are at most 1), so the kept set is connected,
and the kept members of a sample group are always its first members.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .. import laws
from ..errors import TreeError
from .dynamic import FLOAT_SCORE_DIGITS, ExpansionCache
from .tree import DET, SAMPLED, Chooser, SampleGroup, Tree

__all__ = ["AdaptiveConfig", "PROXIES", "HEAD_RULES", "SAMPLE_DECAY", "DEFAULT_THRESHOLD", "head_size",
           "build_adaptive"]

#: Scores of the sampled slots (see the module docstring); ``true`` is the lossy negative control.
PROXIES = ("predicted", "tail", "next", "true")

#: Head rules besides a fixed integer m: ``predicted`` (the m with the best per-node acceptance
#: predicted for the tempered draft) and ``threshold`` (ranked draft probabilities >= theta).
HEAD_RULES = ("predicted", "threshold")

#: ``head="predicted"``: acceptances within this of the best count as ties, and ties go to the
#: smallest m (at T = 1 every m predicts acceptance 1 up to float round-off).
HEAD_TIE_TOL = 1e-9

#: ``tail`` proxy: the j-th sample of an expansion scores the tail mass times SAMPLE_DECAY**(j-1),
#: the sibling decay the static greedy shape assumes (``rheotheory.methods.static.STATIC_DECAY``).
SAMPLE_DECAY = Fraction(1, 2)

#: ``tail`` proxy: the first sample scores the tail mass times SAMPLE_ACCEPT, an assumed
#: acceptance of a sampled draft under draft mismatch (the static greedy shape's STATIC_ACCEPT).
SAMPLE_ACCEPT = Fraction(3, 4)

#: ``head="predicted"`` places no deterministic slot when the predicted target is at least as flat
#: as the draft (T >= this): there A(m) is 1 for every m at T = 1 and favours a head at T > 1,
#: yet on the V = 32k grid (K,D,N = 4,4,16) an all-sampled expansion was best at T = 1 and 1.5.
ALL_SAMPLED_FROM_T = 1.0

#: ``head="threshold"``: a ranked token is placed deterministically when its draft probability is at
#: least this (chosen on the V = 32k sweep grid, docs/guide/adaptive.md).
DEFAULT_THRESHOLD = Fraction(1, 4)


@dataclass(frozen=True)
class AdaptiveConfig:
    """The parameters of an adaptive RheoSampling tree (see the module docstring; docs/theory.md
    section 2.7), validated on construction.

    Attributes
    ----------
    top_k : int
        K: slots per expansion, and nodes expanded per layer.
    depth : int
        D: layers below the root.
    budget : int
        N: non-root nodes kept by the global prune.
    head : int or str, default "predicted"
        m: an integer in 0..K-1, or one of :data:`HEAD_RULES`.
    threshold : fractions.Fraction, default DEFAULT_THRESHOLD
        Theta of the threshold head rule, in [0, 1].
    proxy : str, default "predicted"
        Score of the slots, one of :data:`PROXIES`.
    temperature : float, default 1.0
        T of the predicted target norm(q^(1/T)) (head and proxy ``predicted``), > 0.
    sample_accept : fractions.Fraction, default SAMPLE_ACCEPT
        ``tail`` proxy: the first sample's factor (an assumed acceptance), in (0, 1].
    sample_decay : fractions.Fraction, default SAMPLE_DECAY
        ``tail`` and ``predicted`` proxies: factor between successive samples, in (0, 1].

    Raises
    ------
    TreeError
        If ``top_k``, ``depth`` or ``budget`` is not a positive integer, ``head`` is neither a rule
        of :data:`HEAD_RULES` nor an integer in 0..K-1, ``threshold`` lies outside [0, 1],
        ``temperature`` is not a number > 0, ``proxy`` is unknown, or ``sample_accept`` or
        ``sample_decay`` is not a Fraction in (0, 1].
    """

    top_k: int  # K: slots per expansion, and nodes expanded per layer
    depth: int  # D: layers below the root
    budget: int  # N: non-root nodes kept by the global prune
    head: int | str = "predicted"  # m: an integer in 0..K-1, or one of HEAD_RULES
    threshold: Fraction = DEFAULT_THRESHOLD  # theta of the threshold head rule, in [0, 1]
    proxy: str = "predicted"  # score of the slots, one of PROXIES
    temperature: float = 1.0  # T of the predicted target norm(q^(1/T)) (head and proxy "predicted")
    sample_accept: Fraction = SAMPLE_ACCEPT  # tail proxy: the first sample's factor (an assumed acceptance)
    sample_decay: Fraction = SAMPLE_DECAY  # tail and predicted proxies: factor between successive samples

    def __post_init__(self):
        for name in ("top_k", "depth", "budget"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise TreeError(f"{name} must be a positive integer, got {v!r}")
        if self.head not in HEAD_RULES and (not isinstance(self.head, int) or isinstance(self.head, bool)
                                            or not 0 <= self.head <= self.top_k - 1):
            raise TreeError(f"head must be predicted, threshold or an integer in 0..K-1 = 0..{self.top_k - 1}, got {self.head!r}")
        if not 0 <= self.threshold <= 1:
            raise TreeError(f"threshold must lie in [0, 1], got {self.threshold!r}")
        if not (isinstance(self.temperature, (int, float)) and self.temperature > 0):
            raise TreeError(f"temperature must be a number > 0, got {self.temperature!r}")
        if self.proxy not in PROXIES:
            raise TreeError(f"unknown proxy {self.proxy!r}; choose from {', '.join(PROXIES)}")
        for name in ("sample_accept", "sample_decay"):
            v = getattr(self, name)
            if not isinstance(v, Fraction) or not 0 < v <= 1:
                raise TreeError(f"{name} must be a fraction in (0, 1], got {v!r}")


def predicted_target(q, temperature: float) -> np.ndarray:
    r"""The target the builder predicts from the draft alone: :math:`\hat p = \mathrm{norm}(q^{1/T})`.

    In float64 whatever the number type of ``q`` (it only steers the construction, which may be
    any function of the draft law; the verifier never sees it). # [vocab]

    >>> predicted_target(np.array([0.5, 0.5, 0.0]), 0.5).tolist()
    [0.5, 0.5, 0.0]
    >>> [round(float(x), 3) for x in predicted_target(np.array([0.75, 0.25]), 0.5)]
    [0.9, 0.1]
    """
    qf = laws.to_float(q) if laws.is_exact(q) else np.asarray(q, dtype=np.float64)  # [vocab]
    w = np.zeros_like(qf)
    pos = qf > 0
    w[pos] = np.exp(np.log(qf[pos]) / temperature)
    return w / w.sum()


def predicted_acceptances(q, p_hat, ranked, K: int) -> list[float]:
    r"""Predicted acceptance of a node with head :math:`H_m = \{r_1..r_m\}` and one tail sample,
    :math:`A(m) = \hat p(H_m) + \sum_{x \notin H_m} \min(\hat p(x), q(x) / M_m)`, for
    :math:`m = 0, \dots, \min(K, |\mathrm{supp}\, q|) - 1` (section 3.5's value with :math:`\hat p`
    in place of :math:`p`; float64).

    >>> q = np.array([0.5, 0.3, 0.2])
    >>> [round(a, 6) for a in predicted_acceptances(q, q, [0, 1, 2], 3)]   # p = q: every m accepts 1
    [1.0, 1.0, 1.0]
    >>> [round(a, 3) for a in predicted_acceptances(q, np.array([1.0, 0, 0]), [0, 1, 2], 3)]
    [0.5, 1.0, 1.0]
    """
    qf = laws.to_float(q) if laws.is_exact(q) else np.asarray(q, dtype=np.float64)  # [vocab]
    support = np.flatnonzero(qf)  # [support] token ids; min(p-hat, L) vanishes off the support
    ph, qs = p_hat[support], qf[support]  # [support]
    pos = {int(t): i for i, t in enumerate(support)}
    out = []
    for m in range(min(K, len(ranked))):
        in_head = np.zeros(len(support), dtype=bool)
        in_head[[pos[int(t)] for t in ranked[:m]]] = True
        mass = qs[~in_head].sum()
        if not mass > 0:
            break
        out.append(float(ph[in_head].sum() + np.minimum(ph[~in_head], qs[~in_head] / mass).sum()))
    return out


def head_size(q, ranked, cfg: AdaptiveConfig, p_hat=None) -> int:
    r"""The deterministic head size :math:`m_v` of an expansion, from the draft law alone.

    Parameters
    ----------
    q : numpy.ndarray of shape (V,), Fractions or float64
        The draft law :math:`q_v` at the node (# [vocab]).
    ranked : list of int
        Its ranked tokens (at least the first K, fewer if the support is smaller).
    cfg : AdaptiveConfig
        ``head`` (an integer or a rule of :data:`HEAD_RULES`), ``threshold``, ``temperature``,
        ``top_k``.
    p_hat : numpy.ndarray of shape (V,), float64, optional
        :func:`predicted_target` at ``cfg.temperature`` (computed if needed and not given)
        (# [vocab]).

    Returns
    -------
    int
        ``cfg.head`` if it is an integer; with ``threshold``,
        :math:`\#\{i \le K - 1 : q_v(r_i) \ge \theta\}`; with ``predicted``, the smallest
        :math:`m \le K - 1` whose :func:`predicted_acceptances` value is within
        :data:`HEAD_TIE_TOL` of the largest, and 0 when ``cfg.temperature`` is at least
        :data:`ALL_SAMPLED_FROM_T`. Never more than K - 1: one slot is always sampled.

    Examples
    --------
    >>> q = laws.exact_law(["1/2", "3/10", "1/5"])
    >>> head_size(q, [0, 1, 2], AdaptiveConfig(3, 2, 4, head="threshold", threshold=Fraction(1, 4)))
    2
    >>> head_size(q, [0, 1, 2], AdaptiveConfig(3, 2, 4, temperature=1.0))      # T >= 1: m = 0
    0
    >>> head_size(q, [0, 1, 2], AdaptiveConfig(3, 2, 4, temperature=0.25))     # a sharp target
    1
    """
    if isinstance(cfg.head, int):
        return cfg.head
    if cfg.head == "threshold":
        m = 0
        for t in ranked[:cfg.top_k - 1]:
            if not q[t] >= cfg.threshold:
                break
            m += 1
        return m
    if cfg.temperature >= ALL_SAMPLED_FROM_T:
        return 0
    if p_hat is None:
        p_hat = predicted_target(q, cfg.temperature)
    acc = predicted_acceptances(q, p_hat, ranked, cfg.top_k)
    if not acc:
        return 0
    best = max(acc)
    return next(m for m, a in enumerate(acc) if a >= best - HEAD_TIE_TOL)


def _proxies(rule: str, q, ranked, m: int, mass, s: int, one, p_hat=None, accept=SAMPLE_ACCEPT,
             decay=SAMPLE_DECAY) -> list:
    """The construction scores pi_{v,1..s} of the sampled slots (non-increasing), rule != true."""
    out = []
    first = None
    if rule == "predicted":
        head = list(ranked[:m])
        qf = laws.to_float(q) if laws.is_exact(q) else np.asarray(q, dtype=np.float64)  # [vocab]
        tail_q = qf.copy()
        tail_q[head] = 0.0
        keep = np.ones(len(qf), dtype=bool)
        keep[head] = False
        first = float(np.minimum(p_hat[keep], tail_q[keep] / float(mass)).sum())
    for j in range(s):
        if rule == "tail":
            f = accept * decay ** j
            w = mass * (f if laws.is_exact(q) else float(f))
        elif rule == "next":
            w = q[ranked[m + j]] if m + j < len(ranked) else q[ranked[-1]] * 0
        elif rule == "predicted":
            w = first * float(decay) ** j
        else:
            raise AssertionError(rule)
        if out and out[-1] < w:  # NOTE: never outrank an earlier member of the group
            w = out[-1]
        out.append(w * one)
    return out


def build_adaptive(pair, cfg: AdaptiveConfig, chooser: Chooser, cache: ExpansionCache | None = None) -> Tree:
    """Build one adaptive RheoSampling tree (see the module docstring), pruned to the budget.

    Parameters
    ----------
    pair : ToyPair, GeneratedPair or SyntheticPair
        The LM pair (any object with the pair protocol of :mod:`rheotheory.pairs`; the builder reads
        ``exact``, ``q(prefix)`` and, if present, ``prefetch``).
    cfg : AdaptiveConfig
        The tree's parameters.
    chooser : Chooser
        Answers the builder's draws.
    cache : ExpansionCache or None, optional
        A memo of ``pair``'s draft shared across builds; ``None`` (default) makes a fresh one.

    Returns
    -------
    Tree
        The finished tree, its ``kept`` flags set by the global prune (at most ``budget``
        non-root nodes kept).

    Raises
    ------
    NeedChoice
        Passed on from a :class:`~rheotheory.trees.tree.ReplayChooser` whose script is exhausted.
    """
    cache = cache or ExpansionCache(pair)
    exact = pair.exact
    one = laws.parse_number(1, exact)
    if exact:
        order = lambda s: (-float(s), -s)  # noqa: E731  (the rational order, floats compared first)
    else:
        order = lambda s: -float(f"{s:.{FLOAT_SCORE_DIGITS}g}")  # noqa: E731
    K = cfg.top_k
    tree = Tree(one)

    def expand(v: int) -> list[int]:
        """Create ``v``'s children (``v`` resolved); returns them."""
        node = tree.nodes[v]
        prefix = tree.path(v)
        q = pair.q(prefix)  # [vocab]
        ranked = cache.ranked(prefix, K + 1)
        p_hat = None
        if cfg.head == "predicted" or cfg.proxy == "predicted":
            p_hat = predicted_target(q, cfg.temperature)  # [vocab]
        m = min(head_size(q, ranked, cfg, p_hat), len(ranked))
        head = tuple(ranked[:m])
        for t in head:
            # a deterministic child's score: its path probability under the draft, or under p-hat
            tree.add(v, DET, node.score * (q[t] if cfg.proxy != "predicted" else float(p_hat[t])), token=t)
        s = min(K - m, len(ranked) - m)  # ranked holds K + 1 tokens unless the support is smaller
        if s <= 0:
            return list(node.children)
        law, mass = cache.tail(prefix, head)
        group = SampleGroup(base=law, mode="wor", key=(prefix, "adaptive-tail"))
        if cfg.proxy == "true":
            for _ in range(s):
                idx = tree.add(v, SAMPLED, None, group=group)
                tree.nodes[idx].score = node.score * q[tree.resolve(idx, chooser)]
        else:
            for w in _proxies(cfg.proxy, q, ranked, m, mass, s, one, p_hat, cfg.sample_accept, cfg.sample_decay):
                tree.add(v, SAMPLED, node.score * w, group=group)
        return list(node.children)

    keys: dict = {}

    def key(i):
        k = keys.get(i)
        if k is None:
            k = keys[i] = (order(tree.nodes[i].score), i)
        return k

    layer = expand(0)
    for _ in range(2, cfg.depth + 1):
        chosen = sorted(layer, key=key)[:K]
        prefetch = getattr(pair, "prefetch", None)
        if prefetch is not None:
            # NOTE: a model-backed pair evaluates a whole layer in one batched pass; resolving the
            # chosen nodes first only reorders independent draws (as in build_dynamic).
            for v in chosen:
                tree.resolve(v, chooser)
            prefetch([tree.path(v) for v in chosen])
        layer = []
        for v in chosen:
            tree.resolve(v, chooser)
            layer.extend(expand(v))
    ranked_nodes = sorted(range(1, len(tree.nodes)), key=key)
    kept = [False] * len(tree.nodes)
    for i in ranked_nodes[:cfg.budget]:
        kept[i] = True
    return tree.finish(kept)
