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

Doomed expansions (docs/theory.md section 5.6), only for a chooser with ``skip_doomed`` set
(the exhaustive enumerator): a node chosen for expansion that already has at least N nodes ranked
ahead of it can never be kept, nor can its descendants (a child never outranks its parent). Its
expansion is left out, and with it the draw of its token, for as long as none of its children
could be among the K best of their layer: that is, while K nodes of the layer rank ahead of any
score the node's children can have (at most the node's own score). The kept tree and every other
draw are then those of the full builder, whatever the left-out token; the node stays an
unresolved, pruned node, and :meth:`Tree.unresolved_count` counts the outcomes the full builder
would have branched over below it (:attr:`Tree.skipped`). In the last layer the filler layouts
(and their coarse draws) are made after all expansions and left out when the sampled child and
every filler they could lay out are doomed. Other choosers (Monte Carlo, the decoder) build
exactly as before.
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
    """The parameters of a dynamic tree (see the module docstring; docs/theory.md sections 2.1,
    2.2), validated on construction.

    Attributes
    ----------
    top_k : int
        K: slots per expansion, and nodes expanded per layer.
    depth : int
        D: layers below the root.
    budget : int
        N: non-root nodes kept by the global prune.
    sampled : bool, default False
        ``False``: EAGLE (all K slots deterministic); ``True``: RheoSampling.
    head : int or None, default None
        m, deterministic head slots (rheo), in 0..K-1; ``None`` = K - 1.
    proxy : str, default "next"
        Score rule for the sampled slot (rheo), one of :data:`PROXIES`.
    fillers : str, default "rank"
        What fills slots m+2..K (rheo, m < K-1), one of :data:`FILLERS`.

    Raises
    ------
    TreeError
        If ``top_k``, ``depth`` or ``budget`` is not a positive integer, or, for a sampled tree,
        ``head`` is not an integer in 0..K-1, or ``proxy`` or ``fillers`` is unknown.
    """

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

    Parameters
    ----------
    pair : ToyPair, GeneratedPair or SyntheticPair
        The LM pair whose draft ``q(prefix)`` is memoised (any object with the pair protocol of
        :mod:`rheotheory.pairs`).
    """

    def __init__(self, pair):
        self.pair = pair
        self._rank: dict = {}
        self._tail: dict = {}

    def ranked(self, prefix, limit: int | None = None):
        """Ranked draft tokens after ``prefix`` (:func:`~rheotheory.laws.rank`), at least the first ``limit``.

        ``limit=None`` ranks the whole support; a limit only shortens the list, never changes
        its entries, so callers that read the first ``limit`` ids see the same tokens.

        Parameters
        ----------
        prefix : tuple of int
            The token ids after which the draft law is ranked.
        limit : int or None, optional
            How many ranks the caller reads; ``None`` (default) ranks the whole support.

        Returns
        -------
        list of int
            Token ids of positive draft probability by decreasing probability (ties: smaller id
            first): the whole support, or at least its first ``limit`` entries (fewer only when
            the support is smaller).
        """
        hit = self._rank.get(prefix)
        if hit is not None:
            r, full = hit
            if full or (limit is not None and len(r) >= limit):
                return r
        r = laws.rank(self.pair.q(prefix), limit=limit)
        self._rank[prefix] = (r, limit is None or len(r) < limit)
        return r

    def expansion_outcomes(self, prefix, cfg: "DynamicConfig") -> int:
        """Raw outcomes of the draws made when a node at ``prefix`` is expanded: the support of the
        sampled child's member law when there is one (drawn at once, coarsely, or left undrawn,
        an exhaustive enumeration counts one outcome per token of that support), else 1.

        Parameters
        ----------
        prefix : tuple of int
            The expanded node's path.
        cfg : DynamicConfig
            The tree's parameters (the head size and whether it is sampled).

        Returns
        -------
        int
            The number of raw outcomes, at least 1.
        """
        key = ("outcomes", prefix)
        n = self._tail.get(key)
        if n is None:
            m = cfg.m
            ranked = self.ranked(prefix, m + 1)
            if not cfg.sampled or len(ranked) <= m:
                n = 1
            else:
                law, _ = self.tail(prefix, tuple(ranked[:m]))
                n = sum(1 for w in law if w > 0)
            self._tail[key] = n
        return n

    def tail(self, prefix, head: tuple):
        """q(. | prefix) restricted to the complement of ``head``, and its unnormalised mass.

        Parameters
        ----------
        prefix : tuple of int
            The token ids after which the draft law is read.
        head : tuple of int
            The tokens left out (the deterministic head H).

        Returns
        -------
        law : numpy.ndarray of shape (V,), Fractions or float64
            q(. | prefix) with ``head`` set to 0, renormalised (all zeros if no mass is left)
            (# [vocab]).
        mass : Fraction or float
            The draft mass outside ``head`` before renormalising.
        """
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
    """Build one EAGLE / RheoSampling tree (see the module docstring), pruned to the budget.

    Parameters
    ----------
    pair : ToyPair, GeneratedPair or SyntheticPair
        The LM pair (any object with the pair protocol of :mod:`rheotheory.pairs`; the builder reads
        ``exact``, ``q(prefix)`` and, if present, ``prefetch``).
    cfg : DynamicConfig
        The tree's parameters.
    chooser : Chooser
        Answers the builder's draws; with ``skip_doomed`` set, doomed expansions are left out.
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
        # float(s) is monotone in s, so comparing it first and the exact value only on float ties
        # gives exactly the rational order, with far fewer Fraction comparisons.
        order = lambda s: (-float(s), -s)  # noqa: E731
    else:
        order = lambda s: -float(f"{s:.{FLOAT_SCORE_DIGITS}g}")  # noqa: E731
    K, m = cfg.top_k, cfg.m
    skip_doomed = bool(getattr(chooser, "skip_doomed", False))
    tree = Tree(one)
    # Creation codes: (layer, position of the parent among the nodes expanded for that layer,
    # slot), as one integer (positions and slots are below K). Their order is the node-index order
    # of the full builder, which the tie-breaks ("created earlier first") use, also when a
    # left-out expansion is made later than the full builder would make it.
    created = [0]  # node -> creation code

    def add(v: int, layer: int, pos: int, kind, score, token=None, group=None) -> int:
        idx = tree.add(v, kind, score, token=token, group=group)
        created.append((layer * K + pos) * K + len(tree.nodes[v].children) - 1)
        return idx

    def expand(v: int, layer: int, pos: int, postponed: list | None = None) -> list[int]:
        """Create ``v``'s children (``v`` resolved); returns them. With ``postponed`` (a list),
        the fillers' layout is appended to it instead of being made (see :func:`lay_fillers`)."""
        node = tree.nodes[v]
        prefix = tree.path(v)
        q = pair.q(prefix)
        ranked = cache.ranked(prefix, K + 1)  # slots read the top K ranks, "next" reads rank m+1
        head = tuple(ranked[:m])
        for t in head:
            add(v, layer, pos, DET, node.score * q[t], token=t)
        if cfg.sampled and len(ranked) > m:
            law, mass = cache.tail(prefix, head)
            group = SampleGroup(base=law, mode="iid", key=(prefix, "tail"))
            if cfg.proxy == "true":
                s_idx = add(v, layer, pos, SAMPLED, None, group=group)
                s = tree.resolve(s_idx, chooser)
                tree.nodes[s_idx].score = node.score * q[s]
            else:
                s_idx = add(v, layer, pos, SAMPLED, node.score * _proxy(cfg.proxy, q, ranked, m, mass), group=group)
            if K - 1 - m > 0 and cfg.fillers == "rank":
                if postponed is not None and cfg.proxy != "true":
                    postponed.append((v, layer, pos, s_idx, ranked, q))
                else:
                    lay_fillers(v, layer, pos, s_idx, ranked, q)
        return list(node.children)

    def lay_fillers(v: int, layer: int, pos: int, s_idx: int, ranked: list, q) -> None:
        """The filler slots of ``v``'s expansion, after its sampled child ``s_idx``."""
        n_fill = K - 1 - m
        # The fillers depend on s only through whether s is one of the first n_fill ranked
        # tail tokens: draw that much now and leave s undrawn when it lies beyond them.
        block = list(ranked[m:m + n_fill])
        s = tree.nodes[s_idx].token
        if s is None and len(ranked) > m + n_fill:
            s = tree.resolve_coarse(s_idx, chooser, block, ranked[m + n_fill])
        elif s is None:
            s = tree.resolve(s_idx, chooser)
        for t in [t for t in ranked[m:m + n_fill + 1] if t != s][:n_fill]:
            add(v, layer, pos, FILLER, tree.nodes[v].score * q[t], token=t)

    keys: dict = {}  # node -> sort key (a node's score is final once its layer is built)

    def key(i):
        k = keys.get(i)
        if k is None:
            k = keys[i] = (order(tree.nodes[i].score), created[i])
        return k

    def doomed(v: int, bound=None) -> bool:
        """At least N nodes rank ahead of ``v`` (or of the sort key ``bound``); nodes are never
        removed, so it stays pruned, and so does everything that ranks behind it."""
        kv = key(v) if bound is None else bound
        return sum(1 for x in range(1, len(tree.nodes)) if key(x) < kv) >= cfg.budget

    def settle(layer: list[int], left_out: list, d: int) -> None:
        """Make every left-out expansion (of the nodes expanded for layer ``d``) whose children
        could be among the K best of ``layer``; the others can never matter (section 5.6)."""
        while left_out:
            for i, (v, pos) in enumerate(left_out):
                # a child of v scores at most v's score and is created after (d, pos, slot 0)
                bound = (order(tree.nodes[v].score), (d * K + pos) * K)
                if sum(1 for x in layer if key(x) < bound) < K:
                    break
            else:
                return
            del left_out[i]
            tree.resolve(v, chooser)
            layer.extend(expand(v, d, pos))

    layer = expand(0, 1, 0)
    left_out: list = []  # (node, position) of the expansions left out for the current layer
    for d in range(2, cfg.depth + 1):
        settle(layer, left_out, d - 1)
        for v, _ in left_out:  # its children can never be chosen: left out for good
            tree.skipped[v] = _skipped_outcomes(tree, v, cache, cfg)
        chosen = sorted(layer, key=key)[:K]
        plan = list(enumerate(chosen))  # (position, node), expanded in this order
        left_out = []
        prefetch = getattr(pair, "prefetch", None)
        if prefetch is not None:
            # NOTE: a model-backed pair evaluates a whole layer in one batched pass. Resolving the
            # chosen nodes before any expansion only reorders independent draws (each law is fixed
            # by the node's prefix), so the tree's law is unchanged.
            if skip_doomed:
                left_out = [(v, pos) for pos, v in plan if doomed(v)]
                plan = [(pos, v) for pos, v in plan if (v, pos) not in left_out]
            for _, v in plan:
                if tree.nodes[v].token is None:
                    tree.resolve(v, chooser)
            prefetch([tree.path(v) for _, v in plan])
        elif skip_doomed:
            # The nodes whose expansion needs a draw go last: every expansion before them can only
            # add nodes ahead of them. Creation codes keep the full builder's tie-breaks, and the
            # draws are independent, so the order changes nothing but which nodes are seen doomed.
            plan.sort(key=lambda pv: tree.nodes[pv[1]].token is None)
        layer = []
        # In the last layer the fillers are laid out after every expansion: a filler layout whose
        # sampled child and fillers are all doomed by then is left out, with its coarse draw.
        postponed = [] if skip_doomed and d == cfg.depth else None
        for pos, v in plan:
            if skip_doomed and prefetch is None and doomed(v):
                left_out.append((v, pos))
                continue
            if tree.nodes[v].token is None:
                tree.resolve(v, chooser)
            layer.extend(expand(v, d, pos, postponed))
        for v, layer_d, pos, s_idx, ranked, q in postponed or ():
            # the sampled child's key, and a filler's best: score(v) q(r_{m+1}), after slot m
            best = min(key(s_idx), (order(tree.nodes[v].score * q[ranked[m]]), (layer_d * K + pos) * K + m + 1))
            if not doomed(s_idx, best):
                lay_fillers(v, layer_d, pos, s_idx, ranked, q)
        left_out.sort(key=lambda vp: vp[1])
    for v, _ in left_out:  # expansions for the last layer's successors: never needed
        tree.skipped[v] = _skipped_outcomes(tree, v, cache, cfg)
    ranked_nodes = sorted(range(1, len(tree.nodes)), key=key)
    kept = [False] * len(tree.nodes)
    for i in ranked_nodes[:cfg.budget]:
        kept[i] = True
    return tree.finish(kept)


def _skipped_outcomes(tree: Tree, v: int, cache: ExpansionCache, cfg: DynamicConfig) -> int:
    """The raw outcomes the full builder branches over at a left-out node ``v``: its own undrawn
    token (if any) and the draws of its expansion, summed over the token's values."""
    node = tree.nodes[v]
    if node.token is not None:
        return cache.expansion_outcomes(tree.path(v), cfg)
    up = tree.path(node.parent)
    law = tree.draw_law(v)
    return sum(cache.expansion_outcomes(up + (a,), cfg) for a in range(len(law)) if law[a] > 0)
