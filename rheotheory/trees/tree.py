"""The draft-tree data type and the chooser protocol through which builders draw tokens.

A builder is a small program that creates nodes and, now and then, needs a random token
("draw from this law"). It asks a *chooser* for it. Which chooser is passed decides how the
builder is evaluated:

- :class:`RandomChooser` samples with a ``numpy.random.Generator`` (Monte Carlo);
- :class:`ReplayChooser` answers from a script and raises :class:`NeedChoice` past its end, so
  the exhaustive enumerator can branch over every answer (exact or float weights).

Sampled tokens are drawn *lazily*: a sampled node keeps ``token=None`` until some rule needs its
identity (it is expanded, or a later draw without replacement depends on it). A sampled node
still unresolved when the tree is finished is a leaf whose identity influenced nothing; the
enumerator integrates it analytically instead of branching on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from .. import laws
from ..errors import TreeError

__all__ = [
    "Candidate",
    "Node",
    "SampleGroup",
    "Tree",
    "Chooser",
    "RandomChooser",
    "ReplayChooser",
    "NeedChoice",
    "DET",
    "SAMPLED",
    "FILLER",
    "ROOT",
    "law_key",
]

ROOT, DET, SAMPLED, FILLER = "root", "det", "sampled", "filler"


def law_key(law, seen: dict | None = None):
    """A law's values as a hashable object, equal for equal values (None stays None).

    Parameters
    ----------
    law : numpy.ndarray of shape (V,), Fractions or float64, or None
        The law.
    seen : dict, optional
        A cache ``id(law) -> key`` shared by the calls of one computation, so that a law object
        met many times is converted once (only while the object is alive and unchanged).

    Returns
    -------
    tuple or None
        The exact values as a tuple (object arrays), or the dtype and the raw bytes (float
        arrays); ``None`` for ``None``.
    """
    if law is None:
        return None
    key = None if seen is None else seen.get(id(law))
    if key is None:
        arr = np.asarray(law)
        key = tuple(arr.tolist()) if arr.dtype == object else (str(arr.dtype), arr.tobytes())
        if seen is not None:
            seen[id(law)] = key
    return key


@dataclass(frozen=True)
class Candidate:
    """One child presented to a verifier (docs/theory.md section 3.1): its token, and the member
    law it was drawn from if it was sampled.

    Attributes
    ----------
    token : int
        The child's token id.
    law : numpy.ndarray of shape (V,), Fractions or float64, or None, default None
        ``None`` for a deterministic child; else the member law it was drawn from (# [vocab]).
    """

    token: int  # the child's token id
    law: object = None  # None: deterministic; else the law it was drawn from, # [vocab]


class Chooser(Protocol):
    """What a builder draws its random tokens through (docs/theory.md section 5.1): one method,
    :meth:`draw`. :class:`RandomChooser` samples; :class:`ReplayChooser` answers from a script so
    that the exhaustive enumerator can branch over every answer.

    Attributes
    ----------
    skip_doomed : bool
        Optional (absent = False): the evaluator sums over every token a builder leaves undrawn,
        so a builder may leave out work that provably influences neither the kept tree nor any
        other draw (dynamic trees: doomed expansions, docs/theory.md section 5.6). Only the
        exhaustive enumerator sets it; sampling choosers never do, so their draws are unchanged.
    """

    #: Optional (absent = False): the evaluator sums over every token a builder leaves undrawn,
    #: so a builder may leave out work that provably influences neither the kept tree nor any
    #: other draw (dynamic trees: doomed expansions, docs/theory.md section 5.6). Only the
    #: exhaustive enumerator sets it; sampling choosers never do, so their draws are unchanged.
    skip_doomed: bool

    def draw(self, law) -> int:
        """Return a token drawn from ``law`` (# [vocab], non-zero total).

        Parameters
        ----------
        law : numpy.ndarray of shape (V,), Fractions or float64
            The law to draw from (# [vocab]); non-negative with a non-zero total.

        Returns
        -------
        int
            The drawn token id, one of positive probability under ``law``.
        """


class NeedChoice(Exception):
    """Raised by :class:`ReplayChooser` when its script is exhausted.

    Parameters
    ----------
    law : numpy.ndarray of shape (V,), Fractions or float64
        The law of the draw that found no answer (# [vocab]); kept as the attribute ``law`` so
        that the enumerator can branch over its support.
    """

    def __init__(self, law):
        super().__init__("replay script exhausted")
        self.law = law


class ReplayChooser:
    """Answers draws from a script of tokens; raises :class:`NeedChoice` when it runs out.

    Parameters
    ----------
    script : sequence of int
        The answers, in draw order.
    skip_doomed : bool, default False
        See :class:`Chooser` (the enumerator sets it unless asked not to reduce).

    Attributes
    ----------
    i : int
        How many answers of the script have been given.
    """

    def __init__(self, script, skip_doomed: bool = False):
        self.script = script
        self.i = 0
        self.skip_doomed = skip_doomed

    def draw(self, law) -> int:
        """The next answer of the script (``law`` is not consulted).

        Parameters
        ----------
        law : numpy.ndarray of shape (V,), Fractions or float64
            The law of the draw (# [vocab]); carried by :class:`NeedChoice` when the script is
            exhausted.

        Returns
        -------
        int
            The script's next token.

        Raises
        ------
        NeedChoice
            If every answer of the script has been given.
        """
        if self.i >= len(self.script):
            raise NeedChoice(law)
        tok = self.script[self.i]
        self.i += 1
        return tok


class RandomChooser:
    """Samples each draw with a seeded ``numpy.random.Generator``.

    Parameters
    ----------
    rng : numpy.random.Generator
        The source of the uniforms, one per draw.
    """

    def __init__(self, rng: np.random.Generator):
        self.rng = rng

    def draw(self, law) -> int:
        """A token sampled from ``law`` by :func:`rheotheory.laws.inverse_cdf` with the next uniform.

        Parameters
        ----------
        law : numpy.ndarray of shape (V,), Fractions or float64
            The law to draw from (# [vocab]); non-negative with a non-zero total.

        Returns
        -------
        int
            The drawn token id.
        """
        return laws.inverse_cdf(law, self.rng.random())


@dataclass
class SampleGroup:
    """Sibling tokens drawn at one node from one base law, i.i.d. or without replacement.

    Attributes
    ----------
    base : numpy.ndarray of shape (V,), Fractions or float64
        Law of the first member (# [vocab]).
    mode : str
        ``"iid"`` or ``"wor"``.
    key : tuple, default ()
        A label for readers (e.g. the parent's path and the rule). NOTE: never used to merge trees:
        the certifier keys a sampled node on its law's values (:meth:`Tree.canonical_key`).
    members : list of int, default []
        Node indices in slot order.
    """

    base: object  # law of the first member, # [vocab]
    mode: str  # "iid" or "wor"
    #: A label for readers (e.g. the parent's path and the rule). NOTE: never used to merge trees:
    #: the certifier keys a sampled node on its law's values (Tree.canonical_key).
    key: tuple = ()
    members: list = field(default_factory=list)  # node indices in slot order


@dataclass
class Node:
    """One node of a :class:`Tree` (the root, a deterministic, sampled or filler child).

    Attributes
    ----------
    parent : int
        Index of the parent node, -1 for the root.
    depth : int
        Depth; the root has 0.
    kind : str
        ``ROOT``, ``DET``, ``SAMPLED`` or ``FILLER``.
    score : Fraction or float
        Construction score (builders that prune on it); 1 for the root.
    token : int or None, default None
        The token id; ``None``: an unresolved sampled token.
    group : SampleGroup or None, default None
        The sampling group of a SAMPLED node.
    pos : int, default 0
        Position inside its group.
    children : list of int, default []
        Child node indices in creation order.
    draw : numpy.ndarray of shape (V,), Fractions or float64, or None, default None
        Law of a still-unresolved token when only a block of its member law is left (a coarse
        draw already picked the block); ``None`` = the member law itself (# [vocab]).
    source : tuple or None, default None
        How a SAMPLED node's token was drawn through the tree (the strict mode of the certifier
        checks it against the chooser's record, docs/theory.md section 5.3): ``("draw", law)`` by
        :meth:`Tree.resolve`; ``("coarse", coarse_law, block, rest_token)`` by
        :meth:`Tree.resolve_coarse` (the token in the block, or still pending in the rest);
        ``("rest", coarse_law, block, rest_token, rest_law)`` once a pending rest is resolved.
        ``None``: not drawn through the tree (a token the builder placed with ``add(token=...)``).
    """

    parent: int  # index of the parent node, -1 for the root
    depth: int  # root 0
    kind: str  # ROOT, DET, SAMPLED or FILLER
    score: object  # construction score (builders that prune on it); 1 for the root
    token: int | None = None  # None: an unresolved sampled token
    group: SampleGroup | None = None  # the sampling group of a SAMPLED node
    pos: int = 0  # position inside its group
    children: list = field(default_factory=list)  # node indices in creation order
    draw: object = None  # law of a still-unresolved token when only a block of its member law is
    # left (a coarse draw already picked the block); None = the member law itself, # [vocab]
    #: How a SAMPLED node's token was drawn through the tree (the strict mode of the certifier
    #: checks it against the chooser's record, docs/theory.md section 5.3): ``("draw", law)`` by
    #: :meth:`Tree.resolve`; ``("coarse", coarse_law, block, rest_token)`` by
    #: :meth:`Tree.resolve_coarse` (the token in the block, or still pending in the rest);
    #: ``("rest", coarse_law, block, rest_token, rest_law)`` once a pending rest is resolved.
    #: ``None``: not drawn through the tree (a token the builder placed with ``add(token=...)``).
    source: tuple | None = None


class Tree:
    """A draft tree under construction, then pruned (``kept``) and handed to the verifier.

    Parameters
    ----------
    one : Fraction or float
        The number 1 in the pair's arithmetic (``Fraction(1)`` exact, ``1.0`` float): the root's
        score.

    Attributes
    ----------
    nodes : list of Node
        The nodes in creation order; ``nodes[0]`` is the root (token -1). Parents precede
        children.
    kept : list of bool or None
        Which nodes the verifier sees, set by :meth:`finish`; ``None`` before.
    skipped : dict[int, int]
        Node -> raw outcomes of its left-out expansion and, if unresolved, of its own token (a
        doomed node whose expansion a builder skipped, docs/theory.md section 5.6).
    """

    def __init__(self, one):
        self.nodes: list[Node] = [Node(-1, 0, ROOT, one, token=-1)]
        self.kept: list[bool] | None = None  # set by finish()/prune
        # node -> raw outcomes of its left-out expansion and, if unresolved, of its own token
        # (a doomed node whose expansion a builder skipped, docs/theory.md section 5.6)
        self.skipped: dict[int, int] = {}

    # -- construction ------------------------------------------------------------------------
    def add(self, parent: int, kind: str, score, token=None, group=None) -> int:
        """Append a child of ``parent`` (and, if a group is given, a new last member of it).

        Parameters
        ----------
        parent : int
            Index of the parent node.
        kind : str
            ``DET``, ``SAMPLED`` or ``FILLER``.
        score : Fraction or float
            The node's construction score.
        token : int or None, optional
            The token id; ``None`` (default) leaves a sampled token unresolved, to be drawn
            lazily by :meth:`resolve` or :meth:`resolve_coarse`.
        group : SampleGroup or None, optional
            The sampling group the node joins (a SAMPLED node); its position is the group's
            size before the call.

        Returns
        -------
        int
            The new node's index.
        """
        idx = len(self.nodes)
        pos = 0
        if group is not None:
            pos = len(group.members)
            group.members.append(idx)
        self.nodes.append(Node(parent, self.nodes[parent].depth + 1, kind, score, token, group, pos))
        self.nodes[parent].children.append(idx)
        return idx

    def token(self, idx: int, known: dict | None = None) -> int:
        """The token of node ``idx``; an unresolved one is looked up in ``known``.

        Parameters
        ----------
        idx : int
            The node's index.
        known : dict[int, int] or None, optional
            Node -> token: the values a walk has assigned to unresolved nodes without writing them
            into the tree.

        Returns
        -------
        int
            The node's token id.

        Raises
        ------
        TreeError
            If the node is unresolved and ``known`` has no token for it.
        """
        tok = self.nodes[idx].token
        if tok is None:
            if known is None or idx not in known:
                raise TreeError(f"node {idx} is unresolved and has no assigned token")
            tok = known[idx]
        return tok

    def member_law(self, idx: int, known: dict | None = None):
        r"""The law a SAMPLED node is drawn from, given the earlier members of its group (# [vocab]).

        i.i.d. members (and the first member of any group) are drawn from the group's base law
        :math:`q`; member :math:`i` of a without-replacement group from
        :math:`q` restricted to :math:`V \setminus \{x_0, \dots, x_{i-1}\}` and renormalised.
        Unresolved earlier members take their tokens from ``known`` (see :meth:`token`).

        Parameters
        ----------
        idx : int
            Index of a SAMPLED node.
        known : dict[int, int] or None, optional
            Node -> token for unresolved earlier members (see :meth:`token`).

        Returns
        -------
        numpy.ndarray of shape (V,), Fractions or float64
            The member law (# [vocab]).

        Raises
        ------
        TreeError
            If an earlier member of a without-replacement group is unresolved and not in
            ``known`` (from :meth:`token`).
        """
        node = self.nodes[idx]
        g = node.group
        if g.mode == "iid" or node.pos == 0:
            return g.base
        earlier = [self.token(j, known) for j in g.members[:node.pos]]
        return laws.restrict(g.base, earlier)

    def draw_law(self, idx: int, known: dict | None = None):
        """The law an unresolved SAMPLED node's token is still to be drawn from.

        Parameters
        ----------
        idx : int
            Index of a SAMPLED node.
        known : dict[int, int] or None, optional
            Node -> token for unresolved earlier members (see :meth:`token`).

        Returns
        -------
        numpy.ndarray of shape (V,), Fractions or float64
            The member law (:meth:`member_law`), or, after a coarse draw left the token in the
            rest, that law restricted to the rest (the node's ``draw``) (# [vocab]).
        """
        node = self.nodes[idx]
        return self.member_law(idx, known) if node.draw is None else node.draw

    def pending_draws(self, kids: list[int]) -> list[int]:
        """The unresolved nodes whose tokens the candidates ``kids`` need, in draw order: each
        unresolved kid, preceded by the unresolved earlier members of its without-replacement
        group (kept or not: its member law depends on them).

        Parameters
        ----------
        kids : list of int
            Node indices of the candidates.

        Returns
        -------
        list of int
            The unresolved node indices, each once, in the order they must be drawn.
        """
        out: list[int] = []
        for k in kids:
            node = self.nodes[k]
            if node.token is not None:
                continue
            if node.group.mode == "wor":
                out.extend(j for j in node.group.members[:node.pos] if self.nodes[j].token is None and j not in out)
            if k not in out:
                out.append(k)
        return out

    def resolve(self, idx: int, chooser: Chooser) -> int:
        """The token of node ``idx``, drawing it (and the group members before it) if needed.

        A drawn token is written into the node, with its ``source``.

        Parameters
        ----------
        idx : int
            Index of the node (resolved, or an unresolved SAMPLED node).
        chooser : Chooser
            Answers the draws.

        Returns
        -------
        int
            The node's token id.

        Raises
        ------
        NeedChoice
            Passed on from a :class:`ReplayChooser` whose script is exhausted.
        """
        node = self.nodes[idx]
        if node.token is None:
            if node.group.mode == "wor":
                for j in node.group.members[:node.pos]:
                    self.resolve(j, chooser)
            law = self.draw_law(idx)
            node.token = chooser.draw(law)
            pending = node.draw is not None and node.source is not None and node.source[0] == "coarse"
            node.source = ("rest", *node.source[1:], law) if pending else ("draw", law)
            node.draw = None
        return node.token

    def resolve_coarse(self, idx: int, chooser: Chooser, block: list[int], rest_token: int) -> int | None:
        """Draw only *which part* of the member law the token falls in: one of the ``block``
        tokens (returned, resolved) or the rest (``None``; the node stays unresolved and its
        token is later drawn from the member law restricted to the rest).

        The chooser sees a law over tokens in which the rest's mass sits on ``rest_token``
        (any token of the rest), so exact enumeration branches over ``len(block) + 1`` answers
        instead of the whole support.

        Parameters
        ----------
        idx : int
            Index of an unresolved SAMPLED node.
        chooser : Chooser
            Answers the coarse draw.
        block : list of int
            The tokens drawn one by one.
        rest_token : int
            A token outside ``block`` that stands for the rest.

        Returns
        -------
        int or None
            The token, when it falls in ``block`` (or when the rest has no mass and the token is
            drawn from the member law itself, :meth:`resolve`); ``None`` when it falls in the rest.

        Raises
        ------
        NeedChoice
            Passed on from a :class:`ReplayChooser` whose script is exhausted.
        """
        node = self.nodes[idx]
        law = self.member_law(idx)
        coarse = self.coarse_law(law, block, rest_token)
        if coarse is None:
            return self.resolve(idx, chooser)
        tok = chooser.draw(coarse)
        node.source = ("coarse", coarse, tuple(block), rest_token)
        if tok != rest_token:
            node.token = tok
            return tok
        node.draw = laws.restrict(law, block)
        return None

    @staticmethod
    def coarse_law(law, block, rest_token: int):
        """The law a coarse draw (:meth:`resolve_coarse`) hands the chooser.

        Parameters
        ----------
        law : numpy.ndarray of shape (V,), Fractions or float64
            The node's member law.
        block : sequence of int
            The tokens drawn one by one.
        rest_token : int
            A token outside ``block`` that stands for the rest.

        Returns
        -------
        numpy.ndarray of shape (V,) or None
            ``law`` on the block, the rest's mass on ``rest_token``, 0 elsewhere; ``None`` when
            the rest has no mass (the token is then drawn from ``law`` itself).
        """
        coarse = law * 0
        for t in block:
            coarse[t] = law[t]
        rest_mass = 1 - laws.total(coarse)
        if not rest_mass > 0:
            return None
        coarse[rest_token] = rest_mass
        return coarse

    def path(self, idx: int) -> tuple[int, ...]:
        """Tokens from the root to ``idx`` (every node on it must be resolved).

        Parameters
        ----------
        idx : int
            The node's index.

        Returns
        -------
        tuple of int
            The tokens of the nodes below the root down to ``idx`` (``()`` for the root).

        Raises
        ------
        RuntimeError
            If a node on the path is unresolved (a builder that expands a node must resolve it
            first).
        """
        out = []
        while idx > 0:
            node = self.nodes[idx]
            if node.token is None:
                raise RuntimeError("path through an unresolved sampled node")
            out.append(node.token)
            idx = node.parent
        return tuple(reversed(out))

    def finish(self, kept: list[bool] | None = None) -> "Tree":
        """Mark the kept nodes (all by default); drops any node whose parent is dropped.

        Parameters
        ----------
        kept : list of bool or None, optional
            One flag per node (the root is kept whatever its flag); ``None`` (default) keeps all.

        Returns
        -------
        Tree
            The tree itself, with :attr:`kept` set.
        """
        kept = [True] * len(self.nodes) if kept is None else list(kept)
        kept[0] = True
        for i in range(1, len(self.nodes)):  # parents precede children
            if not kept[self.nodes[i].parent]:
                kept[i] = False
        self.kept = kept
        return self

    # -- the verifier's view -----------------------------------------------------------------
    def kept_children(self, idx: int) -> list[int]:
        """The kept children of node ``idx``, in creation order (after :meth:`finish`).

        Parameters
        ----------
        idx : int
            The node's index.

        Returns
        -------
        list of int
            Indices of its kept children.
        """
        return [c for c in self.nodes[idx].children if self.kept[c]]

    def num_kept(self) -> int:
        """Kept non-root nodes.

        Returns
        -------
        int
            How many nodes other than the root are kept (after :meth:`finish`).
        """
        return sum(self.kept) - 1

    def candidate(self, idx: int, known: dict | None = None) -> Candidate:
        """Node ``idx`` as the verifier sees it: its token and, if SAMPLED, its member law.

        Parameters
        ----------
        idx : int
            The node's index.
        known : dict[int, int] or None, optional
            Node -> token for unresolved nodes (see :meth:`token`).

        Returns
        -------
        Candidate
            Its token, and its member law if SAMPLED (else ``None``).
        """
        node = self.nodes[idx]
        return Candidate(self.token(idx, known), self.member_law(idx, known) if node.kind == SAMPLED else None)

    def canonical_key(self, idx: int = 0, _laws: dict | None = None):
        """What the verifier sees below ``idx``: tokens (None if unresolved), kinds, and for a
        SAMPLED node the law it was drawn from (docs/theory.md section 5.3): the sampling mode,
        the group's base law *by value*, which kept siblings share its group, the earlier members a
        without-replacement draw depends on (resolved tokens, or the laws of unresolved ones), and
        the block law of a coarse draw; then, recursively, the kept children in order.

        Equal keys = one class. Because the laws enter by value, two construction outcomes are
        merged only when every law a verifier can read is the same, however the builder drew them
        (a builder that picks the law itself at random gets one class per law, never a mixture).

        Parameters
        ----------
        idx : int, default 0
            The node whose subtree is keyed (the root by default).
        _laws : dict or None, optional
            Internal: the cache of :func:`law_key` shared by the recursive calls.

        Returns
        -------
        tuple
            ``(token, kind, pos, law view, child keys)``, nested and hashable.
        """
        laws_seen = {} if _laws is None else _laws  # id(law) -> its hashable values (one conversion)
        node = self.nodes[idx]
        kind = "s" if node.kind == SAMPLED else "d"
        law = None
        if node.kind == SAMPLED:
            if node.token is None and node.draw is not None:
                kind = "s-rest"  # unresolved, known to lie outside a block of its law
            law = self._law_view(idx, laws_seen)
        kids = self.kept_children(idx)
        groups: list = []  # sampling groups of the kept children, in order of first appearance
        for c in kids:
            g = self.nodes[c].group
            if g is not None and not any(g is h for h in groups):
                groups.append(g)
        kid_keys = tuple(self.canonical_key(c, laws_seen)
                         + (next((i for i, h in enumerate(groups) if h is self.nodes[c].group), None),)
                         for c in kids)
        return (node.token, kind, node.pos, law, kid_keys)

    def _law_view(self, idx: int, laws_seen: dict) -> tuple:
        """The hashable identity of the law SAMPLED node ``idx`` is verified with (see
        :meth:`canonical_key`): mode, base law values, the earlier members a without-replacement
        draw is conditioned on, and a pending block law."""
        node = self.nodes[idx]
        g = node.group
        earlier = ()
        if g.mode != "iid":
            earlier = tuple(self.nodes[j].token if self.nodes[j].token is not None
                            else ("?", law_key(self.nodes[j].draw, laws_seen)) for j in g.members[:node.pos])
        return (g.mode, law_key(g.base, laws_seen), earlier, law_key(node.draw, laws_seen))

    def verifier_view(self, idx: int = 0) -> tuple:
        """Everything a verifier can read below ``idx`` (the strict mode of
        :func:`rheotheory.exact.enumerate_classes` compares it across merged trees): the
        :meth:`canonical_key` with each node's exact kind (FILLER and DET apart) and
        the members of its sampling group up to the last kept one (kept or pruned, with their
        tokens: a later member's law depends on them).

        Parameters
        ----------
        idx : int, default 0
            The node whose subtree is viewed (the root by default).

        Returns
        -------
        tuple
            ``(canonical key, (kind, group members, child views))``, nested and hashable.
        """
        laws_seen: dict = {}

        def view(i):
            node = self.nodes[i]
            g = node.group
            # the members a verifier reads: every kept one and those drawn before a kept one
            last = -1 if g is None else max((k for k, j in enumerate(g.members) if self.kept[j]), default=-1)
            members = None if g is None else tuple((self.nodes[j].token, self.kept[j]) for j in g.members[:last + 1])
            return (node.kind, members, tuple(view(c) for c in self.kept_children(i)))

        return (self.canonical_key(idx, laws_seen), view(idx))

    def unresolved_count(self) -> int:
        """Number of raw construction outcomes this tree stands for (product of the support
        sizes of its still-unresolved draws, kept or pruned; a node in :attr:`skipped` counts the
        outcomes recorded there instead: its own token's values and the draws of its left-out
        expansion, as a builder without the skip would have branched over them).

        Returns
        -------
        int
            The number of raw outcomes (1 when every draw is resolved and nothing was skipped).
        """
        total = 1
        seen = set()
        for node in self.nodes:
            g = node.group
            if g is None or id(g) in seen:
                continue
            seen.add(id(g))
            unresolved = [j for j in g.members if self.nodes[j].token is None]
            if not unresolved:
                continue
            n = sum(1 for w in g.base if w > 0)
            r = len(g.members) - len(unresolved)
            for i, j in enumerate(unresolved):
                if j in self.skipped:
                    total *= self.skipped[j]
                elif self.nodes[j].draw is not None:
                    total *= sum(1 for w in self.nodes[j].draw if w > 0)
                else:
                    total *= n if g.mode == "iid" else (n - r - i)
        for j, count in self.skipped.items():
            if self.nodes[j].token is not None:
                total *= count
        return total
