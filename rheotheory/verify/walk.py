r"""Verifiers at the tree level: a finished draft tree and the target laws -> the law of Z.

One speculative step ends with the *output* :math:`Z`: the accepted draft tokens, then one token
from the target (docs/theory.md section 3). A :class:`TreeVerifier` maps a finished tree (its
tokens, the draft law each node was drawn from, the target law at each node) to the law of
:math:`Z`. It never draws anything itself: every random choice goes through a *branch*, which
decides how the verifier is evaluated:

- :class:`EnumerateBranch` answers every choice with every outcome and its weight, so the
  verifier's outcomes are all the values of :math:`Z` with their probabilities (exact
  rationals or float64, as the laws are): the exhaustive certifier
  (:func:`rheotheory.exact.step_law`);
- :class:`SampleBranch` answers each choice with one outcome of weight 1, picked by
  :func:`~rheotheory.laws.inverse_cdf` from the next uniform of a stream, so the verifier
  yields one draw of :math:`Z`: Monte Carlo (a ``numpy.random.Generator``) and the decoder
  (:class:`~rheotheory.decode.engine.UniformStream`).

:class:`PerNodeWalk` is the verifier built from a per-node rule (:mod:`rheotheory.verify.rules`):
starting at the root with path :math:`u`, at a node with kept children :math:`C` it takes the
rule's transition law :math:`T = \mathrm{rule}(p(\cdot \mid u), C)` and continues into child
:math:`c` with probability :math:`T_{\mathrm{cont}}[c]` or emits :math:`y` with probability
:math:`T_{\mathrm{emit}}[y]` and stops; a node without kept children emits
:math:`y \sim p(\cdot \mid u)` (the bonus token). Children whose tokens were never drawn (lazily
drawn sampled leaves nothing depended on) are drawn through the branch first, from the laws the
builder gave them, so the exhaustive certifier integrates them analytically instead of
branching the construction on them. Tree-level verifiers (block, traversal verification)
implement :class:`TreeVerifier` directly.

>>> import numpy as np
>>> from rheotheory.trees import Tree
>>> from rheotheory.trees.tree import DET
>>> tree = Tree(1.0)
>>> _ = tree.add(0, DET, 1.0, token=0)
>>> tree = tree.finish()
>>> p = np.array([0.5, 0.5])  # the target law at every prefix
>>> law = {o.z: o.weight for o in tree_verifier("onehot").outcomes(tree, lambda node, u: p, EnumerateBranch())}
>>> law == {(0, 0): 0.25, (0, 1): 0.25, (1,): 0.5}  # accept 0 w.p. p(0), then the bonus token
True
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Callable, Iterator, NamedTuple, Protocol, Sequence

import numpy as np

from .. import laws
from .rules import Transition, get_verifier

if TYPE_CHECKING:  # NOTE: trees imports verify.rules; the walk only reads a tree's public methods
    from ..trees.tree import Tree

__all__ = [
    "Outcome",
    "Branch",
    "EnumerateBranch",
    "SampleBranch",
    "TreeVerifier",
    "PerNodeWalk",
    "tree_verifier",
    "TREE_VERIFIERS",
    "register_tree_verifier",
    "verifier_families",
    "verifier_by_name",
    "as_tree_verifier",
    "method_tree_verifier",
    "sample_outcome",
    "draw_pending",
]

#: ``target(node, prefix)``: the target law of the token after ``prefix`` (the tokens from the
#: root to ``node``), # [vocab]. A pair gives ``pair.p(prefix)``; the decoder the model's row of
#: ``node``.
TargetLaws = Callable[[int, tuple], object]

#: ``observe(node, p, candidates, transition)``: called by :class:`PerNodeWalk` at every visited
#: node with candidates (Monte Carlo records acceptances there).
Observer = Callable[[int, object, list, Transition], None]


class Outcome(NamedTuple):
    """One value of the step output with its weight.

    Attributes
    ----------
    z : tuple of int
        Z: the accepted tokens, then the emitted one.
    nodes : tuple of int
        The tree nodes of the accepted tokens, root excluded (``len(z) - 1`` of them).
    weight : Fraction or float
        Its probability (:class:`EnumerateBranch`), or the start weight (:class:`SampleBranch`).
    """

    z: tuple  # Z: the accepted tokens, then the emitted one
    nodes: tuple  # tree nodes of the accepted tokens, root excluded (len(z) - 1 of them)
    weight: object  # its probability (EnumerateBranch), or the start weight (SampleBranch)


class Branch(Protocol):
    """How a verifier's random choices are evaluated (see the module docstring)."""

    #: A dict where a verifier may cache what it computes from what it sees (the same node view
    #: recurs across the trees of one exhaustive evaluation), or None: do not cache.
    memo: dict | None

    def choose(self, *parts: Sequence) -> Iterator[tuple[int, object]]:
        """The outcomes of one random choice among the indices of the concatenation of ``parts``.

        Parameters
        ----------
        *parts : sequence of Fraction or float
            Weights, each ``# [n_k]``, non-negative, summing to 1 together (e.g. a transition's
            ``cont`` and ``emit``).

        Returns
        -------
        iterator of tuple of (int, object)
            ``(i, w)``: every ``i`` of positive weight with ``w`` its weight, or one ``i`` drawn
            from them with ``w = 1``.
        """


class EnumerateBranch:
    """Every outcome of every choice, with its weight (exact or float, as the weights are)."""

    def __init__(self):
        self.memo: dict | None = {}

    def choose(self, *parts):
        """Every index of positive weight, with its weight.

        Parameters
        ----------
        *parts : sequence of Fraction or float
            Weights, each ``# [n_k]``, non-negative, summing to 1 together.

        Yields
        ------
        tuple of (int, Fraction or float)
            ``(i, w)``: an index of the concatenation of ``parts`` and its weight.
        """
        off = 0
        for part in parts:
            for i, w in enumerate(part):
                if w:  # NOTE: weights are non-negative; a truth test is cheaper than "> 0" on Fractions
                    yield off + i, w
            off += len(part)


class SampleBranch:
    """One outcome of every choice, drawn by inverse CDF from ``uniform()`` (weight 1).

    One choice consumes one uniform.

    Parameters
    ----------
    uniform : callable
        ``uniform() -> float``: the stream's next U[0, 1) draw: ``rng.random`` of a
        ``numpy.random.Generator``, or :meth:`~rheotheory.decode.engine.UniformStream.next`.
    """

    memo = None

    def __init__(self, uniform: Callable[[], float]):
        self.uniform = uniform

    def choose(self, *parts):
        """One index drawn from the weights, with weight 1.

        Parameters
        ----------
        *parts : sequence of Fraction or float
            Weights, each ``# [n_k]``, non-negative, summing to 1 together (several parts are
            joined as float64).

        Yields
        ------
        tuple of (int, float)
            ``(i, 1.0)``, ``i`` an index of the concatenation of ``parts``, drawn by inverse CDF.
        """
        w = parts[0] if len(parts) == 1 else np.concatenate([np.asarray(x, dtype=np.float64) for x in parts])  # [n]
        yield laws.inverse_cdf(w, self.uniform()), 1.0


class TreeVerifier(ABC):
    """A verifier at the tree level: a finished tree and the target laws -> the law of Z.

    A subclass sets :attr:`name` and implements :meth:`outcomes`; :func:`register_tree_verifier`
    sets ``families``.

    Attributes
    ----------
    name : str
        What results call it (a per-node rule's name for :class:`PerNodeWalk`).
    sampling_modes : tuple of str or None
        The sampling modes of sampled siblings it reads (``("iid",)``: drafts drawn i.i.d. only);
        None: any. A family refuses the others when the method is built.
    lossy : str or None
        Why the certifier finds it lossy where it is registered (its methods' ``known_lossy``), or
        None. A lossy verifier is registered to be measured and certified, never recommended.
    """

    name: str  # what results call it (a per-node rule's name for PerNodeWalk)
    #: The sampling modes of sampled siblings it reads (``("iid",)``: drafts drawn i.i.d. only); None: any.
    #: A family refuses the others when the method is built (``rheotheory.methods.static``).
    sampling_modes: tuple[str, ...] | None = None
    #: Why the certifier finds this verifier lossy where it is registered (its methods' ``known_lossy``),
    #: or None. A lossy verifier is registered to be measured and certified, never recommended.
    lossy: str | None = None

    @abstractmethod
    def outcomes(self, tree: "Tree", target: TargetLaws, branch: Branch, weight=1,
                 observe: Observer | None = None) -> Iterator[Outcome]:
        """The values of Z with their weights, the verifier's choices evaluated by ``branch``.

        Parameters
        ----------
        tree : Tree
            A finished tree (``tree.kept`` set); unresolved sampled nodes are drawn through
            ``branch`` from their laws, never written into the tree.
        target : callable
            The target laws, ``target(node, prefix) -> # [vocab]`` (:data:`TargetLaws`).
        branch : EnumerateBranch or SampleBranch
            :class:`EnumerateBranch` (all outcomes; their weights sum to ``weight``) or
            :class:`SampleBranch` (one outcome).
        weight : Fraction or float, default 1
            Multiplies every outcome's weight (the probability of having built this tree).
        observe : callable, optional
            Per-node hook ``observe(node, p, candidates, transition)`` (:data:`Observer`);
            tree-level verifiers may ignore it.

        Returns
        -------
        iterator of Outcome
            The values of Z with their weights (a generator).
        """


class PerNodeWalk(TreeVerifier):
    """The walk of a per-node rule down the tree (docs/theory.md section 3).

    Parameters
    ----------
    rule : callable
        ``rule(p, candidates) -> Transition``, e.g. one of :data:`~rheotheory.verify.rules.VERIFIERS`.
    name : str, optional
        What results call it; default: the rule's ``__name__``.
    """

    def __init__(self, rule: Callable[..., Transition], name: str | None = None):
        self.rule = rule
        self.name = name or getattr(rule, "__name__", "per-node")

    def __repr__(self) -> str:
        return f"PerNodeWalk({self.name})"

    def outcomes(self, tree, target, branch, weight=1, observe=None):
        """The values of Z: the rule's transitions walked from the root (module docstring).

        Parameters
        ----------
        tree : Tree
            A finished tree (``tree.kept`` set); unresolved sampled nodes are drawn through
            ``branch`` from their laws, never written into the tree.
        target : callable
            The target laws, ``target(node, prefix) -> # [vocab]`` (:data:`TargetLaws`).
        branch : EnumerateBranch or SampleBranch
            :class:`EnumerateBranch` (all outcomes; their weights sum to ``weight``) or
            :class:`SampleBranch` (one outcome).
        weight : Fraction or float, default 1
            Multiplies every outcome's weight (the probability of having built this tree).
        observe : callable, optional
            Called as ``observe(node, p, candidates, transition)`` at every visited node
            with children (Monte Carlo records acceptances there).

        Returns
        -------
        iterator of Outcome
            The values of Z with their weights (a generator).
        """
        return self._walk(tree, 0, (), (), weight, target, branch, observe)

    def _walk(self, tree, idx, prefix, nodes, weight, target, branch, observe):
        p = target(idx, prefix)  # [vocab]
        kids = tree.kept_children(idx)
        if not kids:
            for y, wy in branch.choose(p):
                yield Outcome(prefix + (y,), nodes, weight * wy)
            return
        n = len(kids)
        for dw, known in draw_pending(tree, tree.pending_draws(kids), branch):
            cands = [tree.candidate(k, known) for k in kids]
            tr = self._transition(p, cands, branch.memo)
            if observe is not None:
                observe(idx, p, cands, tr)
            w = weight * dw
            for j, wj in branch.choose(tr.cont, tr.emit):
                if j < n:
                    k = kids[j]
                    yield from self._walk(tree, k, prefix + (cands[j].token,), nodes + (k,), w * wj, target, branch,
                                          observe)
                else:
                    yield Outcome(prefix + (j - n,), nodes, w * wj)

    def _transition(self, p, cands, memo) -> Transition:
        """``rule(p, cands)``, cached in ``memo`` by the node view's contents (rules are pure)."""
        if memo is None:
            return self.rule(p, cands)
        key = (_law_key(p), tuple((c.token, _law_key(c.law)) for c in cands))
        tr = memo.get(key)
        if tr is None:
            tr = memo[key] = self.rule(p, cands)
        return tr


def _law_key(law):
    """A hashable copy of a law's values (None for a deterministic candidate's missing law)."""
    if law is None:
        return None
    return tuple(law.tolist()) if law.dtype == object else law.tobytes()


def draw_pending(tree, pending: list[int], branch, i: int = 0, known: dict | None = None, w=1):
    """The joint tokens of the ``pending`` nodes, each drawn through ``branch`` from its law given
    the earlier ones.

    Every verifier (the walk and the tree-level ones) draws the tokens of lazily built sampled
    leaves through this, so the certifier integrates them analytically and sampling draws them.

    Parameters
    ----------
    tree : Tree
        The finished tree holding the nodes.
    pending : list of int
        The unresolved nodes to draw, in draw order (``tree.pending_draws``).
    branch : EnumerateBranch or SampleBranch
        Evaluates each draw.
    i : int, default 0
        The first entry of ``pending`` still to draw (the recursion's position).
    known : dict[int, int], optional
        Node -> token drawn so far; default: none.
    w : Fraction or float, default 1
        The weight the yielded weights are multiplied by.

    Yields
    ------
    tuple of (Fraction or float, dict[int, int])
        ``(weight, known)``: ``known`` extended by a token for every pending node, and its weight.
    """
    known = {} if known is None else known
    if i == len(pending):
        yield w, known
        return
    j = pending[i]
    for x, wx in branch.choose(tree.draw_law(j, known)):
        yield from draw_pending(tree, pending, branch, i + 1, {**known, j: x}, w * wx)


#: Tree-level verifiers by name (filled by :func:`register_tree_verifier`). Per-node rules are not
#: listed here: :func:`tree_verifier` wraps any name of :data:`~rheotheory.verify.rules.VERIFIERS`.
TREE_VERIFIERS: dict[str, TreeVerifier] = {}


def register_tree_verifier(verifier: TreeVerifier, families: Sequence[str] | None = ()) -> TreeVerifier:
    """Register a tree-level verifier under its ``name``, admitted by the method ``families``.

    A new tree-level verifier is one module that builds its :class:`TreeVerifier` and calls this,
    plus its import line in :mod:`rheotheory.verify`; the families it names admit it (their
    ``--verifier`` choices, docs/theory.md section 7.1) with no edit to them.

    Parameters
    ----------
    verifier : TreeVerifier
        The verifier, its ``name`` set.
    families : sequence of str or None, default ()
        The method families that admit it; ``None``: every family.

    Returns
    -------
    TreeVerifier
        ``verifier``, its ``families`` set.

    Raises
    ------
    TypeError
        ``verifier`` is not a :class:`TreeVerifier` with a name.
    ValueError
        Its name is already a verifier (a per-node rule or a tree-level verifier).
    """
    from .rules import VERIFIERS

    if not isinstance(verifier, TreeVerifier) or not getattr(verifier, "name", None):
        raise TypeError("register_tree_verifier takes a TreeVerifier with a name")
    if verifier.name in TREE_VERIFIERS or verifier.name in VERIFIERS:
        raise ValueError(f"verifier {verifier.name!r} is registered twice")
    verifier.families = None if families is None else tuple(families)
    TREE_VERIFIERS[verifier.name] = verifier
    return verifier


def tree_verifier(name: str) -> TreeVerifier:
    """The verifier ``name`` as a map from a finished tree to the law of Z.

    Parameters
    ----------
    name : str
        A verifier's name, or a reference ``FILE.py:NAME`` / ``MODULE:NAME`` to a plugin's verifier.

    Returns
    -------
    TreeVerifier
        A registered tree-level verifier, or the walk of the per-node rule ``name``
        (``PerNodeWalk(get_verifier(name))``).

    Raises
    ------
    VerifierError
        An unknown name.
    """
    tv = TREE_VERIFIERS.get(name)
    if tv is not None:
        return tv
    verifier_by_name(name)  # a FILE.py:NAME reference, or a name an installed plugin registers
    tv = TREE_VERIFIERS.get(name)
    if tv is not None:
        return tv
    return PerNodeWalk(get_verifier(name), name)


def verifier_by_name(name: str) -> None:
    """Make the verifier ``name`` known if a plugin provides it.

    A reference ``WHERE:NAME`` (:mod:`rheotheory.plugin_loader`) to a :class:`TreeVerifier` is
    registered under ``name``, admitted by the families it names (every family when it names
    none); one to a per-node rule goes to :func:`~rheotheory.verify.rules.rule_by_name`; any other
    unknown name loads the installed plugins. Does nothing when nothing applies (the caller
    refuses the name).

    Parameters
    ----------
    name : str
        A verifier's name, or a reference ``FILE.py:NAME`` / ``MODULE:NAME``.

    Raises
    ------
    PluginError
        The reference names neither a per-node rule nor a :class:`TreeVerifier`, or its plugin
        does not load.
    """
    from ..plugin_loader import PluginError, is_reference, load_object
    from .rules import VERIFIERS, rule_by_name

    if name in VERIFIERS or name in TREE_VERIFIERS:
        return
    obj = load_object(name) if is_reference(name) else None
    if isinstance(obj, TreeVerifier):
        obj.name = name
        register_tree_verifier(obj, families=getattr(obj, "families", None) or None)
        return
    if obj is not None and not (callable(obj) and not isinstance(obj, type)):
        raise PluginError(f"{name} is a {type(obj).__name__}; a verifier reference names a per-node rule "
                          "(p, candidates) -> Transition or a TreeVerifier")
    rule_by_name(name, obj)


def verifier_families(name: str) -> tuple[str, ...] | None:
    """The families a tree-level verifier declared it applies to.

    Parameters
    ----------
    name : str
        A verifier's name.

    Returns
    -------
    tuple of str or None
        Its families; None for a per-node rule, an unknown name, or a tree-level verifier
        registered for every family.
    """
    tv = TREE_VERIFIERS.get(name)
    return None if tv is None else tv.families


def as_tree_verifier(verifier) -> TreeVerifier:
    """Any form of a verifier as a :class:`TreeVerifier`.

    Parameters
    ----------
    verifier : TreeVerifier or str or callable
        A :class:`TreeVerifier`, a verifier's name, or a per-node rule function
        ``(p, candidates) -> Transition``.

    Returns
    -------
    TreeVerifier
        A :class:`TreeVerifier` as is, a name via :func:`tree_verifier`, a rule wrapped in
        :class:`PerNodeWalk`.
    """
    if isinstance(verifier, TreeVerifier):
        return verifier
    if isinstance(verifier, str):
        return tree_verifier(verifier)
    return PerNodeWalk(verifier)


def method_tree_verifier(method) -> TreeVerifier:
    """The tree verifier of a method.

    Parameters
    ----------
    method : Method
        A method, or an object standing in for one (a ``tree_verifier`` attribute, property or
        method, or a ``verifier`` name).

    Returns
    -------
    TreeVerifier
        Its ``tree_verifier`` if it has one, else :func:`tree_verifier` of ``method.verifier``.
    """
    tv = getattr(method, "tree_verifier", None)
    if tv is not None and not isinstance(tv, TreeVerifier) and callable(tv):
        tv = tv()
    return tv or tree_verifier(method.verifier)


def sample_outcome(verifier: TreeVerifier, tree, target: TargetLaws, branch: SampleBranch,
                   observe: Observer | None = None) -> Outcome:
    """One draw of Z: the single outcome of ``verifier`` under a sampling branch.

    Parameters
    ----------
    verifier : TreeVerifier
        The verifier.
    tree : Tree
        A finished tree.
    target : callable
        The target laws, ``target(node, prefix) -> # [vocab]``.
    branch : SampleBranch
        The sampling branch (its uniform stream makes every choice).
    observe : callable, optional
        Per-node hook ``observe(node, p, candidates, transition)`` (:data:`Observer`).

    Returns
    -------
    Outcome
        The drawn Z, its nodes and weight 1.
    """
    return next(iter(verifier.outcomes(tree, target, branch, observe=observe)))
