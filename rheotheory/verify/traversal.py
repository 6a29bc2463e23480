r"""Traversal Verification of a sampled draft tree (Weng et al., NeurIPS 2025, arXiv 2505.12398).

Per-node verification (docs/theory.md section 3) walks from the root down and discards a
node's whole subtree once the node is rejected. Traversal Verification goes the other way: it
visits the tree from the leaves towards the root (post-order, children in creation order), tests
each visited node with a *sequence-level* weight, the cumulative ratio of block verification
(:mod:`rheotheory.verify.block`, arXiv 2403.10444) along its path, and accepts the whole path from
the root to the first node that passes. A rejected leaf is deleted and its parent's laws are
updated, so a parent whose children were all rejected is tested itself, as a leaf: a rejected
child no longer discards its ancestors. On a chain it is block verification (checked exactly by
the tests: identical law of :math:`Z`). A tree-level verifier in the sense of docs/theory.md
section 7.1.

**State.** Every node :math:`v` carries a weight :math:`a_v` and a current target law
:math:`P_v` (# [vocab]); the root starts with :math:`a = 1`, :math:`P = p(\cdot \mid \text{root})`.
A child :math:`c` of :math:`v`, holding token :math:`x` drawn from its member law :math:`Q_c`
(docs/theory.md section 1.2: the draft for an i.i.d. group, the draft restricted to the earlier
siblings' tokens without replacement; a point mass for a deterministic child), enters with

.. math::

    a_c = \min\Big(1,\ a_v\, \frac{P_v(x)}{Q_c(x)}\Big), \qquad P_c = p(\cdot \mid u(c)),

computed from :math:`v`'s state *at the time* :math:`c` is visited.

**Visit of** :math:`v`: visit its kept children one after the other (each with its whole
subtree); the first acceptance anywhere ends the step. After child :math:`c`'s subtree is
rejected,

.. math::

    R = (a_v P_v - Q_c)_+, \quad S = \sum_x R(x), \qquad
    a_v \leftarrow \frac{S}{S + 1 - a_v}, \quad P_v \leftarrow \mathrm{norm}(R)

(:func:`~rheotheory.verify.block.residual_step`; :math:`S + 1 - a_v` is the probability that
:math:`c`'s subtree is rejected). Once every child is rejected, :math:`v` is a leaf: it is
accepted with probability :math:`a_v`, and then :math:`Z = (u(v), Y)` with :math:`Y \sim P_v`
(the bonus token below an original leaf, a correction token otherwise); else it is rejected
and its parent updates. The root, whose weight stays 1, always accepts.

**Why it is lossless** (induction on the subtree): a node entered with :math:`(a, P)` accepts
somewhere in its subtree with probability :math:`a`, and the first token after :math:`v` then has
sub-law :math:`a P`, whatever the subtree's shape. For one child :math:`c \sim Q`:
:math:`\sum_c Q(c)\, a_c\, \delta_c = \min(Q, aP)`, and the rest, rejected with probability
:math:`1 - \sum_x \min(Q(x), aP(x)) = S + 1 - a`, leaves :math:`(S + 1 - a)\, a' P' = (aP - Q)_+`;
the two add up to :math:`aP`. The argument needs each child to have its member law given
everything the verifier has seen; the certifier checks where that holds (section 5,
``proofs/tree_level_verifiers.py``).

**Departures and readings** (marked where they happen): the paper updates the parent's draft law
by removing the rejected token (siblings drawn without replacement, its "sequence-level
RRSw"); here the next sibling is tested against its own member law, which is that update for
a without-replacement group and the unchanged draft for an i.i.d. group (the sequence-level
analogue of RRS). Registered for the sampled families (chains, static trees, multichains,
adaptive RheoSampling with head 0), where the certifier finds it exactly lossless.

>>> import numpy as np
>>> from fractions import Fraction as F
>>> from rheotheory.trees import Tree
>>> from rheotheory.trees.tree import SampleGroup, SAMPLED
>>> from rheotheory.verify.walk import EnumerateBranch
>>> p = np.array([F(1, 2), F(1, 2), F(0)], dtype=object)  # target at every prefix
>>> q = np.array([F(0), F(1, 2), F(1, 2)], dtype=object)  # draft at every prefix
>>> tree = Tree(F(1))
>>> g = SampleGroup(q, "iid", ("root",))
>>> kids = [tree.add(0, SAMPLED, F(1), group=g) for _ in range(2)]  # two i.i.d. drafts of depth 1
>>> tree = tree.finish()
>>> law = {}
>>> for o in TRAVERSAL.outcomes(tree, lambda node, u: p, EnumerateBranch()):
...     law[o.z[:1]] = law.get(o.z[:1], 0) + o.weight
>>> law == {(0,): F(1, 2), (1,): F(1, 2)}  # the first output token has the target's law
True
"""

from __future__ import annotations

from .walk import Outcome, TreeVerifier, draw_pending, register_tree_verifier
from .block import _one, member_law, ratio_weight, residual_step, root_emission

__all__ = ["TraversalVerifier", "TRAVERSAL", "TRAVERSAL_FAMILIES"]

#: The method families Traversal Verification is registered for: sampled trees (the paper's
#: setting), each certified exactly lossless on random instances by
#: ``proofs/tree_level_verifiers.py`` (``proofs/REPORT_tree_level.md``), and adaptive RheoSampling
#: with head 0, where every slot is sampled (the family refuses it with a head;
#: ``simulations/certify_adaptive.py``). Dynamic trees with deterministic children (``eagle``,
#: ``rheo``) are outside the paper and are not admitted.
TRAVERSAL_FAMILIES = ("chain", "static", "multichain", "adaptive")


class TraversalVerifier(TreeVerifier):
    """Traversal Verification (see the module docstring; docs/theory.md section 7.1).

    ``observe`` (the per-node hook of Monte Carlo) is not called: decisions are per path, not
    per-node transitions.
    """

    name = "traversal"

    #: ``(a, P, Q, x) -> a_c``: the entry weight of a child holding ``x``
    #: (:func:`~rheotheory.verify.block.ratio_weight`).
    path_weight = staticmethod(ratio_weight)
    #: ``(a, P, Q) -> (a', P')``: a node's state after a child drawn from ``Q`` was rejected with its
    #: subtree (:func:`~rheotheory.verify.block.residual_step`). The planted bugs of
    #: :mod:`rheotheory.testing.mutants` replace one of these steps; the registered verifier never does.
    state_after_rejection = staticmethod(residual_step)

    def __repr__(self) -> str:
        return "TraversalVerifier()"

    def outcomes(self, tree, target, branch, weight=1, observe=None):
        """The values of Z: the tree visited from the leaves towards the root (module docstring).

        Parameters
        ----------
        tree : Tree
            A finished tree (``tree.kept`` set); unresolved sampled nodes are drawn through
            ``branch`` from their laws, never written into the tree.
        target : callable
            The target laws, ``target(node, prefix) -> # [vocab]``
            (:data:`~rheotheory.verify.walk.TargetLaws`).
        branch : EnumerateBranch or SampleBranch
            :class:`~rheotheory.verify.walk.EnumerateBranch` (all outcomes; their weights sum to
            ``weight``) or :class:`~rheotheory.verify.walk.SampleBranch` (one outcome).
        weight : Fraction or float, default 1
            Multiplies every outcome's weight (the probability of having built this tree).
        observe : callable, optional
            Not called (decisions are per path, not per-node transitions).

        Returns
        -------
        iterator of Outcome
            The values of Z with their weights (a generator).

        Raises
        ------
        VerifierError
            A sampled node has zero probability under its own law.
        """
        p_root = target(0, ())  # [vocab]
        # NOTE: the root accepts whenever it is reached, so its rejection weight (the return) is 0.
        return (yield from self._visit(tree, 0, (), (), _one(p_root), p_root, weight, {}, target, branch, p_root))

    def _visit(self, tree, v, u, nodes, a, P, w, known, target, branch, p_root):
        """Outcomes accepted in ``v``'s subtree; returns the total weight of its rejection.

        ``u``/``nodes``: path tokens and nodes to ``v``; ``(a, P)``: ``v``'s entry state
        (``P`` # [vocab]); ``w``: the weight of reaching ``v``'s turn; ``known``: tokens assigned
        to unresolved nodes so far (node -> token).
        """
        return (yield from self._children(tree, v, tree.kept_children(v), 0, u, nodes, a, P, w, known, target, branch,
                                          p_root))

    def _children(self, tree, v, kids, i, u, nodes, a, P, w, known, target, branch, p_root):
        """``v``'s visit from its ``i``-th kept child on, ``v`` in state ``(a, P)``; returns the
        weight of rejecting the rest of the subtree (those children and ``v`` itself)."""
        if i == len(kids):
            return (yield from self._leaf(v, u, nodes, a, P, w, branch, p_root))
        c = kids[i]
        pending = [j for j in tree.pending_draws([c]) if j not in known]
        rejected = 0
        for dw, kn in draw_pending(tree, pending, branch, known=known, w=w):
            x, Q = member_law(tree, c, kn, P)  # Q: # [vocab]
            uc = u + (x,)
            r = yield from self._visit(tree, c, uc, nodes + (c,), self.path_weight(a, P, Q, x), target(c, uc), dw, kn,
                                       target, branch, p_root)
            if r:
                # NOTE: continued per drawn value, never pooled: in a without-replacement group the
                # next sibling's member law depends on this child's token.
                a2, P2 = self.state_after_rejection(a, P, Q)
                rejected = rejected + (yield from self._children(tree, v, kids, i + 1, u, nodes, a2, P2, r, kn,
                                                                 target, branch, p_root))
        return rejected

    @staticmethod
    def _leaf(v, u, nodes, a, P, w, branch, p_root):
        """``v`` with every child rejected: accept with ``a`` and emit from ``P``; returns the
        weight of its rejection (0 at the root, which always accepts)."""
        if v == 0:
            for y, wy in branch.choose(root_emission(P, p_root)):
                yield Outcome((y,), (), w * wy)
            return 0
        rejected = 0
        for j, wj in branch.choose([a, 1 - a]):
            if j == 0:
                for y, wy in branch.choose(P):
                    yield Outcome(u + (y,), nodes, w * wj * wy)
            else:
                rejected = w * wj
        return rejected


#: The registered Traversal Verification.
TRAVERSAL = register_tree_verifier(TraversalVerifier(), families=TRAVERSAL_FAMILIES)
