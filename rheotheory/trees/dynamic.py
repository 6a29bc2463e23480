"""Dynamic draft trees: EAGLE-2's top-K expansion with global pruning, and RheoSampling.

Semantics (fixed so results are reproducible across tools):

- Ranking a draft law: by decreasing probability, ties by smaller token id; tokens with zero
  draft probability are never placed in a slot.
- Expanding node v (path u, draft law q_v = q(. | u)) fills K slots:

  * ``eagle``: the top K ranked tokens, all deterministic.
  * ``rheo`` with head m: the top m ranked tokens H (deterministic), then one *sampled* slot
    holding s ~ q_v restricted to the tokens outside H and renormalised (left empty if that
    mass is 0), then K - 1 - m *filler* slots: with ``fillers="rank"`` the best-ranked tokens
    outside H ∪ {s} (deterministic, chosen after s is drawn), with ``fillers="none"`` nothing.
    m = K - 1 (the default) has no fillers.

  Slot order = creation order = H in rank order, the sampled slot, the fillers in rank order.
- Scores: root 1; a deterministic or filler child = parent score * q_v(token); the sampled child
  = parent score * proxy(q_v, H). Proxies (:data:`PROXIES`), all functions of q_v and H only
  except the negative control ``true``:

  * ``next``: q_v of the best-ranked token outside H;
  * ``tail``: the draft mass outside H;
  * ``min-best-tail``: min(q_v(best-ranked token), mass outside H);
  * ``true``: q_v(s), the sampled token's own draft probability (known to be lossy).

- Layer 1 expands the root. For d = 2..D the K highest-scoring nodes created at layer d-1 (ties:
  created earlier first) are expanded in that order; nodes are created parents-in-expansion-
  order, then slot order.
- Global prune: keep the N non-root nodes with the highest score (ties: created earlier first),
  then drop every kept node whose parent was dropped.

A sampled token is drawn lazily (see :mod:`rheotheory.trees.tree`): only when its node is
expanded or when the proxy is ``true``. With fillers only a coarse draw is made at creation
(is s one of the first K-1-m ranked tokens outside H, and which, or none of them?), since that
is all the fillers depend on.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import laws
from ..errors import TreeError
from .tree import DET, FILLER, SAMPLED, Chooser, SampleGroup, Tree

__all__ = ["DynamicConfig", "PROXIES", "FILLERS", "build_dynamic", "ExpansionCache"]

PROXIES = ("next", "tail", "min-best-tail", "true")
FILLERS = ("rank", "none")

#: In float mode scores are compared after rounding to this many significant digits, so that
#: scores that tie exactly in rational arithmetic still tie after float round-off and the
#: "created earlier first" rule decides, as it does in exact mode.
FLOAT_SCORE_DIGITS = 12


@dataclass(frozen=True)
class DynamicConfig:
    top_k: int  # K: slots per expansion, and nodes expanded per layer
    depth: int  # D: layers below the root
    budget: int  # N: non-root nodes kept by the global prune
    sampled: bool = False  # False: EAGLE (all K slots deterministic); True: RheoSampling
    head: int | None = None  # m, deterministic head slots (rheo); None = K - 1
    proxy: str = "next"  # score rule for the sampled slot (rheo), one of PROXIES
    fillers: str = "rank"  # what fills slots m+2..K (rheo, m < K-1), one of FILLERS

    def __post_init__(self):
        for name in ("top_k", "depth", "budget"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise TreeError(f"{name} must be a positive integer, got {v!r}")
        if self.sampled:
            if self.head is not None and (not isinstance(self.head, int) or not 0 <= self.head <= self.top_k - 1):
                raise TreeError(f"head must be an integer in 0..top_k-1 = 0..{self.top_k - 1}, got {self.head!r}")
            if self.proxy not in PROXIES:
                raise TreeError(f"unknown proxy {self.proxy!r}; choose from {', '.join(PROXIES)}")
            if self.fillers not in FILLERS:
                raise TreeError(f"unknown filler layout {self.fillers!r}; choose from {', '.join(FILLERS)}")

    @property
    def m(self) -> int:
        """Deterministic head size actually used."""
        if not self.sampled:
            return self.top_k
        return self.top_k - 1 if self.head is None else self.head


class ExpansionCache:
    """Per-pair memo of what an expansion needs from the draft (ranking, restricted laws).

    Builders are re-run many times by the enumerator; everything here depends on the prefix
    only, so it is computed once.
    """

    def __init__(self, pair):
        self.pair = pair
        self._rank: dict = {}
        self._tail: dict = {}

    def ranked(self, prefix, limit: int | None = None):
        """Ranked draft tokens after ``prefix`` (:func:`laws.rank`), at least the first ``limit``.

        ``limit=None`` ranks the whole support; a limit only shortens the list, never changes
        its entries, so callers that read the first ``limit`` ids see the same tokens.
        """
        hit = self._rank.get(prefix)
        if hit is not None:
            r, full = hit
            if full or (limit is not None and len(r) >= limit):
                return r
        r = laws.rank(self.pair.q(prefix), limit=limit)
        self._rank[prefix] = (r, limit is None or len(r) < limit)
        return r

    def tail(self, prefix, head: tuple):
        """q(. | prefix) restricted to the complement of ``head``, and its unnormalised mass."""
        key = (prefix, head)
        t = self._tail.get(key)
        if t is None:
            q = self.pair.q(prefix)
            rest = laws.zero_at(q, list(head))
            mass = laws.total(rest)
            t = self._tail[key] = (laws.normalise(rest, mass), mass)
        return t


def _proxy(rule: str, q, ranked, m: int, mass):
    if rule == "next":
        return q[ranked[m]]
    if rule == "tail":
        return mass
    if rule == "min-best-tail":
        best = q[ranked[0]]
        return best if best < mass else mass
    raise AssertionError(rule)


def build_dynamic(pair, cfg: DynamicConfig, chooser: Chooser, cache: ExpansionCache | None = None) -> Tree:
    """Build one EAGLE / RheoSampling tree (see the module docstring), pruned to the budget."""
    cache = cache or ExpansionCache(pair)
    exact = pair.exact
    one = laws.parse_number(1, exact)
    if exact:
        # float(s) is monotone in s, so comparing it first and the exact value only on float ties
        # gives exactly the rational order, with far fewer Fraction comparisons.
        order = lambda s: (-float(s), -s)  # noqa: E731
    else:
        order = lambda s: -float(f"{s:.{FLOAT_SCORE_DIGITS}g}")  # noqa: E731
    K, m = cfg.top_k, cfg.m
    tree = Tree(one)

    def expand(v: int) -> None:
        node = tree.nodes[v]
        prefix = tree.path(v)
        q = pair.q(prefix)
        ranked = cache.ranked(prefix, K + 1)  # slots read the top K ranks, "next" reads rank m+1
        head = tuple(ranked[:m])
        for t in head:
            tree.add(v, DET, node.score * q[t], token=t)
        if not cfg.sampled or len(ranked) <= m:
            return
        law, mass = cache.tail(prefix, head)
        group = SampleGroup(base=law, mode="iid", key=(prefix, "tail"))
        if cfg.proxy == "true":
            s_idx = tree.add(v, SAMPLED, None, group=group)
            s = tree.resolve(s_idx, chooser)
            tree.nodes[s_idx].score = node.score * q[s]
        else:
            s_idx = tree.add(v, SAMPLED, node.score * _proxy(cfg.proxy, q, ranked, m, mass), group=group)
        n_fill = K - 1 - m
        if n_fill > 0 and cfg.fillers == "rank":
            # The fillers depend on s only through whether s is one of the first n_fill ranked
            # tail tokens: draw that much now and leave s undrawn when it lies beyond them.
            block = list(ranked[m:m + n_fill])
            s = tree.nodes[s_idx].token
            if s is None and len(ranked) > m + n_fill:
                s = tree.resolve_coarse(s_idx, chooser, block, ranked[m + n_fill])
            elif s is None:
                s = tree.resolve(s_idx, chooser)
            for t in [t for t in ranked[m:m + n_fill + 1] if t != s][:n_fill]:
                tree.add(v, FILLER, node.score * q[t], token=t)

    keys: dict = {}  # node -> sort key (a node's score is final once its layer is built)

    def key(i):
        k = keys.get(i)
        if k is None:
            k = keys[i] = (order(tree.nodes[i].score), i)
        return k

    expand(0)
    layer = list(tree.nodes[0].children)
    for _ in range(2, cfg.depth + 1):
        chosen = sorted(layer, key=key)[:K]
        start = len(tree.nodes)
        prefetch = getattr(pair, "prefetch", None)
        if prefetch is not None:
            # NOTE: a model-backed pair evaluates a whole layer in one batched pass. Resolving the
            # chosen nodes before any expansion only reorders independent draws (each law is fixed
            # by the node's prefix), so the tree's law is unchanged.
            for v in chosen:
                tree.resolve(v, chooser) if tree.nodes[v].token is None else None
            prefetch([tree.path(v) for v in chosen])
        for v in chosen:
            tree.resolve(v, chooser) if tree.nodes[v].token is None else None
            expand(v)
        layer = list(range(start, len(tree.nodes)))
    ranked_nodes = sorted(range(1, len(tree.nodes)), key=key)
    kept = [False] * len(tree.nodes)
    for i in ranked_nodes[:cfg.budget]:
        kept[i] = True
    return tree.finish(kept)
