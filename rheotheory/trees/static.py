"""Static sampled trees (SpecInfer, Sequoia, EAGLE-1) and the single chain.

A static shape is a list of index paths in EAGLE's ``choices`` format: ``[[0], [1], [0, 0]]``
is a root with two children, the first of which has one child. Index ``i`` is the i-th child
drawn at its parent. The children of a node are drawn from the draft at the node's path, either
i.i.d. (``mode="iid"``, SpecInfer/RRS) or without replacement (``mode="wor"``, successive
sampling = Gumbel-top-k, RSD/Sequoia). Without replacement a node cannot have more children
than its draft has tokens of positive probability; the missing ones (and their subtrees) are
simply absent. Nothing is pruned.
"""

from __future__ import annotations

import heapq
import json

import numpy as np

from .. import laws
from ..errors import TreeError
from .tree import SAMPLED, Chooser, SampleGroup, Tree

__all__ = ["parse_shape", "chain_shape", "greedy_shape", "build_static", "SAMPLING_MODES"]

SAMPLING_MODES = ("iid", "wor")

#: Largest static shape accepted (nodes); beyond it exact enumeration is hopeless anyway.
MAX_SHAPE_NODES = 4096


def parse_shape(shape) -> list[tuple[int, ...]]:
    """Validate a shape (a JSON string or a list of index paths) and return it sorted BFS.

    Parameters
    ----------
    shape : str or sequence of sequence of int
        EAGLE's ``choices`` format, as JSON text (``"[[0],[1],[0,0]]"``) or as a list of index
        paths.

    Returns
    -------
    list of tuple of int
        The index paths, sorted by depth, then lexicographically (breadth-first order).

    Raises
    ------
    TreeError
        If the text is not valid JSON, the shape is not a non-empty list, has more than
        :data:`MAX_SHAPE_NODES` entries, an entry is not a non-empty list of non-negative integers
        or appears twice, or an entry's parent or elder sibling is missing.

    Examples
    --------
    >>> parse_shape("[[1], [0, 0], [0]]")
    [(0,), (1,), (0, 0)]
    """
    if isinstance(shape, str):
        try:
            shape = json.loads(shape)
        except json.JSONDecodeError as e:
            raise TreeError(f"shape is not valid JSON: {e.msg}") from None
    if not isinstance(shape, (list, tuple)) or not shape:
        raise TreeError("shape must be a non-empty list of index paths, e.g. [[0],[1],[0,0]]")
    if len(shape) > MAX_SHAPE_NODES:
        raise TreeError(f"shape has {len(shape)} nodes (limit {MAX_SHAPE_NODES})")
    paths = set()
    for p in shape:
        if not isinstance(p, (list, tuple)) or not p or not all(
                isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in p):
            raise TreeError(f"shape entry {p!r} is not a non-empty list of non-negative integers")
        t = tuple(p)
        if t in paths:
            raise TreeError(f"shape entry {list(t)} appears twice")
        paths.add(t)
    for t in paths:
        if len(t) > 1 and t[:-1] not in paths:
            raise TreeError(f"shape entry {list(t)} has no parent {list(t[:-1])}")
        if t[-1] > 0 and t[:-1] + (t[-1] - 1,) not in paths:
            raise TreeError(f"shape entry {list(t)}: sibling {list(t[:-1] + (t[-1] - 1,))} is missing "
                            "(child indices must be 0, 1, 2, ...)")
    return sorted(paths, key=lambda t: (len(t), t))


def chain_shape(depth: int) -> list[tuple[int, ...]]:
    """A single sampled path of the given depth.

    Parameters
    ----------
    depth : int
        The number of nodes below the root, at least 1.

    Returns
    -------
    list of tuple of int
        The shape ``[(0,), (0, 0), ...]``, one node per layer.

    Raises
    ------
    TreeError
        If ``depth`` is not a positive integer.

    Examples
    --------
    >>> chain_shape(3)
    [(0,), (0, 0), (0, 0, 0)]
    """
    if not isinstance(depth, int) or depth < 1:
        raise TreeError(f"depth must be a positive integer, got {depth!r}")
    return [(0,) * d for d in range(1, depth + 1)]


def greedy_shape(budget: int, depth: int, child_accept: float, sibling_decay: float) -> list[list[int]]:
    """A static shape of ``budget`` nodes and depth <= ``depth``, grown greedily by path weight.

    The i-th child of a node weighs ``child_accept * sibling_decay**i``; a node's path weight is
    the product along its path. The ``budget`` heaviest nodes form a connected tree (a child never
    outweighs its parent or its elder sibling), as Sequoia's construction does with measured
    acceptance rates.

    Parameters
    ----------
    budget : int
        Number of nodes of the shape, at least 1.
    depth : int
        Greatest depth of a node, at least 1.
    child_accept : float
        The weight of a node's first child, relative to the node.
    sibling_decay : float
        The factor between the weights of successive siblings.

    Returns
    -------
    list of list of int
        The index paths in the order they were taken (decreasing path weight, ties by smaller
        path); :func:`parse_shape` turns them into the form :func:`build_static` takes.

    Raises
    ------
    TreeError
        If ``budget`` or ``depth`` is below 1.

    Examples
    --------
    >>> greedy_shape(4, 2, 0.5, 0.5)
    [[0], [0, 0], [1], [0, 1]]
    """
    if budget < 1 or depth < 1:
        raise TreeError("a static shape needs budget >= 1 and depth >= 1")
    heap = [(-child_accept, (0,))]
    out = []
    while heap and len(out) < budget:
        negw, path = heapq.heappop(heap)
        out.append(list(path))
        w = -negw
        heapq.heappush(heap, (-(w * sibling_decay), path[:-1] + (path[-1] + 1,)))  # next sibling
        if len(path) < depth:
            heapq.heappush(heap, (-(w * child_accept), path + (0,)))  # first child
    return out


def build_static(pair, shape: list[tuple[int, ...]], mode: str, chooser: Chooser) -> Tree:
    """Build one static sampled tree of the given (parsed) shape.

    Every child is a SAMPLED node with score 1; the children of a node form one sampling group
    over the draft at the node's path. Nothing is pruned.

    Parameters
    ----------
    pair : ToyPair, GeneratedPair or SyntheticPair
        The LM pair (any object with the pair protocol of :mod:`rheotheory.pairs`; the builder reads
        ``exact``, ``q(prefix)`` and, if present, ``prefetch``).
    shape : list of tuple of int
        The index paths, as :func:`parse_shape` returns them (breadth-first).
    mode : str
        ``"iid"`` or ``"wor"`` (one of :data:`SAMPLING_MODES`).
    chooser : Chooser
        Answers the builder's draws.

    Returns
    -------
    Tree
        The finished tree, every node kept (without replacement, a slot beyond the draft's
        support is absent, with its subtree).

    Raises
    ------
    TreeError
        If ``mode`` is not one of :data:`SAMPLING_MODES`.
    NeedChoice
        Passed on from a :class:`~rheotheory.trees.tree.ReplayChooser` whose script is exhausted.
    """
    if mode not in SAMPLING_MODES:
        raise TreeError(f"unknown sampling mode {mode!r}; choose from {', '.join(SAMPLING_MODES)}")
    one = laws.parse_number(1, pair.exact)
    tree = Tree(one)
    n_children: dict[tuple, int] = {(): 0}
    for t in shape:
        n_children[t[:-1]] = n_children.get(t[:-1], 0) + 1
        n_children.setdefault(t, 0)
    node_of: dict[tuple, int] = {(): 0}
    prefetch = getattr(pair, "prefetch", None)
    layer_depth = 0  # deepest layer handed to prefetch so far (the root's law is known)
    for t in [()] + shape:  # BFS: a node is expanded after it is created
        if t not in node_of:
            continue  # its slot was empty (without replacement, support exhausted)
        k = n_children[t]
        if k == 0:
            continue
        v = node_of[t]
        if prefetch is not None and len(t) > layer_depth:
            # NOTE: a model-backed pair evaluates the whole layer of nodes to expand in one batched
            # pass. Resolving them before any of them is expanded only reorders independent draws
            # (each member law is fixed by the parent's path and the earlier members).
            layer_depth = len(t)
            layer = [node_of[u] for u in shape if len(u) == layer_depth and u in node_of and n_children[u]]
            for w in layer:
                tree.resolve(w, chooser)
            prefetch([tree.path(w) for w in layer])
        if tree.nodes[v].token is None:
            tree.resolve(v, chooser)
        prefix = tree.path(v)
        q = pair.q(prefix)
        support = int(np.count_nonzero(q > 0))  # vectorised: q may have 32k entries
        group = SampleGroup(base=q, mode=mode, key=(prefix, mode))
        for i in range(k if mode == "iid" else min(k, support)):
            node_of[t + (i,)] = tree.add(v, SAMPLED, one, group=group)
    return tree.finish()
