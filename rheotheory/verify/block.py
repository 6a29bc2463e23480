r"""Block verification of a drafted chain (Sun, Mendlovic et al., arXiv 2403.10444).

Token-level verification (docs/theory.md sections 2.4 and 3.3) accepts each drafted token with
:math:`\min(1, p/q)` on its own and stops at the first rejection. Block verification decides on
the whole chain jointly, through *cumulative* ratios, and is optimal in the expected number of
accepted tokens among valid verifiers of one chain; in particular it is never worse than
token-level verification (arXiv 2403.10444, Theorems 1 and 2). It is a tree-level verifier in
the sense of docs/theory.md section 7.1: it maps a finished chain and the target laws on it to
the law of the step output :math:`Z`.

The rule (arXiv 2403.10444, Algorithm 2), in this package's notation. The chain holds
:math:`X_1, \dots, X_\gamma`, node :math:`i` (the root is node 0) has the target law
:math:`P_i = p(\cdot \mid X_{1:i})` and :math:`X_{i+1}` was drawn from its member law
:math:`Q_i` (the draft :math:`q(\cdot \mid X_{1:i})` for a chain; the point mass on
:math:`X_{i+1}` for a deterministic node). With :math:`a_0 = 1`,

.. math::

    a_i = \min\Big(1,\ a_{i-1}\, \frac{P_{i-1}(X_i)}{Q_{i-1}(X_i)}\Big), \qquad
    R_i = (a_i P_i - Q_i)_+, \quad S_i = \sum_x R_i(x), \qquad
    h_i = \begin{cases} \dfrac{S_i}{S_i + 1 - a_i} & i < \gamma, \\ a_\gamma & i = \gamma. \end{cases}

The accepted length :math:`\tau` is the largest :math:`i` with :math:`\eta_i \le h_i`
(independent uniforms :math:`\eta_i`; :math:`h_0 = 1`), i.e. nodes are tried from the deepest
upwards and the first success stops. The output is :math:`Z = (X_1, \dots, X_\tau, Y)` with
:math:`Y \sim P_\gamma` when :math:`\tau = \gamma` (the bonus token) and
:math:`Y \sim \mathrm{norm}(R_\tau)` otherwise. Given :math:`X_{1:i}`,
:math:`P(\tau \ge i) = a_i` and :math:`P(\tau = i,\ Y = y) = R_i(y)` for :math:`i < \gamma`,
which is what makes the output law the target's (docs/theory.md section 4). For
:math:`\gamma = 1` this is standard speculative sampling.

Every random choice (the still-unresolved drafted tokens, each :math:`\eta_i` test and
:math:`Y`) goes through the branch (:mod:`rheotheory.verify.walk`), so the exact certifier sums
over it and Monte Carlo and the decoder sample it.

>>> import numpy as np
>>> from fractions import Fraction as F
>>> from rheotheory.trees import Tree
>>> from rheotheory.trees.tree import SampleGroup, SAMPLED
>>> from rheotheory.verify.walk import EnumerateBranch
>>> p = np.array([F(1, 3), F(2, 3)], dtype=object)  # target, token a = 0, b = 1
>>> q = np.array([F(2, 3), F(1, 3)], dtype=object)  # draft
>>> tree = Tree(F(1))
>>> n1 = tree.add(0, SAMPLED, F(1), group=SampleGroup(q, "iid", ("root",)))
>>> n2 = tree.add(n1, SAMPLED, F(1), group=SampleGroup(q, "iid", ("n1",)))
>>> tree = tree.finish()
>>> law = {}
>>> for o in BLOCK.outcomes(tree, lambda node, u: p, EnumerateBranch()):
...     law[o.z] = law.get(o.z, 0) + o.weight
>>> sum(len(z) * w for z, w in law.items())  # arXiv 2403.10444's example: 1 + 11/9 (token level: 1 + 10/9)
Fraction(20, 9)
"""

from __future__ import annotations

from fractions import Fraction

from .. import laws
from ..errors import VerifierError
from .walk import Outcome, TreeVerifier, draw_pending, register_tree_verifier

__all__ = ["BlockVerifier", "BLOCK", "point_mass", "ratio_weight", "residual_step"]


def _one(law):
    """The number 1 in the number type of ``law``."""
    return Fraction(1) if laws.is_exact(law) else 1.0


def point_mass(law, token: int):
    """The law of a deterministic child: the point mass on ``token``.

    Parameters
    ----------
    law : numpy.ndarray of shape (V,), Fractions or float64
        Any law of the vocabulary, # [vocab]: gives the shape and number type.
    token : int
        The child's token id.

    Returns
    -------
    numpy.ndarray of shape (V,), Fractions or float64
        1 on ``token``, 0 elsewhere, in the shape and type of ``law``, # [vocab].
    """
    out = law * 0
    out[token] = _one(law)
    return out


def member_law(tree, node: int, known: dict, like):
    """The law node ``node`` was drawn from given its group's earlier members (# [vocab]); the
    point mass on its token for a deterministic or filler node (docs/theory.md section 1.2)."""
    cand = tree.candidate(node, known)
    if cand.law is None:
        return cand.token, point_mass(like, cand.token)
    if not cand.law[cand.token] > 0:
        raise VerifierError(f"sampled node {node} has zero probability under its own law")
    return cand.token, cand.law


def ratio_weight(a, P, Q, x: int):
    r""":math:`\min(1, a\, P(x) / Q(x))`, the path-level acceptance weight of child ``x``.

    Parameters
    ----------
    a : Fraction or float
        The parent's weight.
    P : numpy.ndarray of shape (V,), Fractions or float64
        The parent's current target law, # [vocab].
    Q : numpy.ndarray of shape (V,), Fractions or float64
        The child's member law, # [vocab], with :math:`Q(x) > 0`.
    x : int
        The child's token.

    Returns
    -------
    Fraction or float
        The child's weight, in the laws' number type.
    """
    r = a * P[x] / Q[x]
    return r if r < 1 else r * 0 + 1


def residual_step(a, P, Q):
    r"""The state of a node after a child drawn from ``Q`` was rejected (with its subtree).

    With :math:`R = (a P - Q)_+`, :math:`S = \sum_x R(x)`,

    .. math::

        a' = \frac{S}{S + 1 - a}, \qquad P' = \mathrm{norm}(R),

    where :math:`S + 1 - a = 1 - \sum_x \min(Q(x), a P(x))` is the probability that the child
    was rejected. NOTE: when that probability is 0 the state is never reached; :math:`a' = 0`
    then keeps it inert.

    Parameters
    ----------
    a : Fraction or float
        The node's weight.
    P : numpy.ndarray of shape (V,), Fractions or float64
        The node's current target law, # [vocab].
    Q : numpy.ndarray of shape (V,), Fractions or float64
        The rejected child's member law, # [vocab].

    Returns
    -------
    a2 : Fraction or float
        :math:`a'`, the node's new weight.
    P2 : numpy.ndarray of shape (V,), Fractions or float64
        :math:`P' = \mathrm{norm}(R)`, the node's new target law, # [vocab].
    """
    R = laws.pos(a * P - Q)  # [vocab]
    S = laws.total(R)
    den = S + 1 - a
    a2 = S / den if den > 0 else S * 0
    return a2, laws.normalise(R, S)


def root_emission(P, p_root):
    """The law emitted at the root once every child is rejected: ``P`` (# [vocab]).

    NOTE: the root's weight is 1, so its weight after a rejection is :math:`S / S = 1` whenever
    that rejection had positive probability. An all-zero ``P`` is reached only through float
    round-off on a branch of exact probability 0; the target law ``p_root`` is emitted then,
    so a sampler never fails on it.
    """
    return P if laws.total(P) > 0 else p_root


class BlockVerifier(TreeVerifier):
    """Block verification on a chain (see the module docstring; docs/theory.md section 7.1).

    A tree in which some node has more than one kept child is a
    :class:`~rheotheory.errors.VerifierError`: the rule is defined for one drafted path.
    ``observe`` (the per-node hook of Monte Carlo) is not called: there are no per-node
    transitions.
    """

    name = "block"

    #: ``(a, P, Q, x) -> a'``: the path weight of a child holding ``x`` (:func:`ratio_weight`).
    path_weight = staticmethod(ratio_weight)
    #: ``(a, P, Q) -> (h, P')``: the stop weight and emission law of a node below which the chain
    #: was rejected (:func:`residual_step`). The planted bugs of :mod:`rheotheory.testing.mutants`
    #: replace one of these two steps; the registered verifier never does.
    state_after_rejection = staticmethod(residual_step)

    def __repr__(self) -> str:
        return "BlockVerifier()"

    def outcomes(self, tree, target, branch, weight=1, observe=None):
        """The values of Z: the chain drawn, then verified by Algorithm 2 (module docstring).

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
            Not called (no per-node transitions).

        Returns
        -------
        iterator of Outcome
            The values of Z with their weights (a generator).

        Raises
        ------
        VerifierError
            A node has more than one kept child, or a sampled node has zero probability under its
            own law.
        """
        return self._descend(tree, 0, (), (), [target(0, ())], [], weight, {}, target, branch)

    def _descend(self, tree, idx, toks, nodes, P, Q, w, known, target, branch):
        """Draw the chain below ``idx`` (unresolved tokens through ``branch``), then verify it.

        ``toks``/``nodes``: the drafted tokens and their nodes so far (length i); ``P``: the
        target laws at nodes 0..i, ``Q``: the member laws of nodes 1..i (each # [vocab]).
        """
        kids = tree.kept_children(idx)
        if len(kids) > 1:
            raise VerifierError(f"block verification is defined for a chain; node {idx} has {len(kids)} "
                                "kept children")
        if not kids:
            yield from self._verify(toks, nodes, P, Q, w, branch)
            return
        c = kids[0]
        pending = [j for j in tree.pending_draws([c]) if j not in known]
        for dw, kn in draw_pending(tree, pending, branch, known=known, w=w):
            x, law = member_law(tree, c, kn, P[-1])
            u = toks + (x,)
            yield from self._descend(tree, c, u, nodes + (c,), P + [target(c, u)], Q + [law], dw, kn, target,
                                     branch)

    def _verify(self, toks, nodes, P, Q, w, branch):
        """The backward pass of arXiv 2403.10444, Algorithm 2, for one drafted chain.

        ``P``: # [gamma + 1, vocab] target laws, ``Q``: # [gamma, vocab] member laws.
        """
        gamma = len(toks)
        a = [_one(P[0])]  # a_0 = 1
        for i in range(1, gamma + 1):
            a.append(self.path_weight(a[-1], P[i - 1], Q[i - 1], toks[i - 1]))
        for i in range(gamma, -1, -1):
            if i == gamma:
                h, emit = a[gamma], P[gamma]  # the deepest node: accept with a_gamma, then the bonus token
            else:
                h, emit = self.state_after_rejection(a[i], P[i], Q[i])  # h_i and norm(R_i)
            if i == 0:
                emit = root_emission(emit, P[0])
                for y, wy in branch.choose(emit):
                    yield Outcome((y,), (), w * wy)
                return
            rejected = None
            for j, wj in branch.choose([h, 1 - h]):
                if j == 0:
                    for y, wy in branch.choose(emit):
                        yield Outcome(toks[:i] + (y,), nodes[:i], w * wj * wy)
                else:
                    rejected = w * wj
            if rejected is None:
                return
            w = rejected


#: The registered block verifier: defined for chains only.
BLOCK = register_tree_verifier(BlockVerifier(), families=("chain",))
