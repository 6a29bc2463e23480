r"""Greedy multi-path block verification, ``gbv`` (Thomas & Pal, arXiv 2602.16961; docs/theory.md section 7.3).

Block verification (:mod:`rheotheory.verify.block`) is optimal for one drafted chain. With
:math:`K` chains of length :math:`L` drawn i.i.d. from the draft (the ``multichain`` family with
i.i.d. sampling), GBV keeps block verification's rule and changes *which* chain it verifies and
*against which draft law*:

1. **A strict order on tokens at every node** :math:`s`: ascending in the key
   :math:`k_s(t) = P_s(t) / Q_s(t)` (target over draft at that node), ties broken by token id; a
   token the draft cannot draw (:math:`Q_s(t) = 0`) ranks above every other (it is never drafted).
   Paths of length :math:`L` are ordered lexicographically by it.
2. **The selected path** :math:`\Gamma` is the largest of the :math:`K` drafted paths in that order:
   from the root, step into the drafted child of largest rank, among the chains that agree so far.
3. **Its law.** :math:`\Gamma` is the maximum of :math:`K` i.i.d. draws, so its token at depth
   :math:`i`, given :math:`\Gamma_{<i}` (node :math:`s`), has the *skewed draft*

   .. math::

       Q^\Gamma_i(t) = \frac{(\ell(t) + Q_s(t)\,\beta)^K - \ell(t)^K}{(\alpha + \beta)^K - \alpha^K}
       = Q_s(t)\, \frac{\sum_{j<K} h(t)^j\, \ell(t)^{K-1-j}}{\sum_{j<K} \alpha^{K-1-j}}, \qquad
       \ell(t) = \alpha + \beta\, C_s(t), \quad h(t) = \ell(t) + \beta\, Q_s(t),

   with :math:`C_s(t)` the draft mass of the tokens ranked strictly below :math:`t`,
   :math:`\alpha + \beta = 1`, :math:`\alpha_1 = 0`, and :math:`\alpha_{i+1} =
   \ell(\Gamma_i) / h(\Gamma_i)`: :math:`\alpha_i` is the draft mass of the length-:math:`L` paths
   whose first :math:`i - 1` tokens rank strictly below :math:`\Gamma_{<i}`, as a fraction of the
   mass of those that do not rank above it. (The paper's recurrence carries the two masses
   themselves; their ratio keeps float arithmetic away from underflow on long paths.)
4. **Block verification of** :math:`\Gamma` with :math:`Q^\Gamma` in place of the draft
   (:meth:`~rheotheory.verify.block.BlockVerifier._verify`, unchanged). It is lossless because
   :math:`\Gamma` *is* a chain drawn token by token from :math:`Q^\Gamma`, and nothing else the verifier
   reads depends on the other chains. For :math:`K = 1` it is block verification.

**Departures and readings** (marked where they happen). The ranking key: the paper's reference code
exists with two keys, :math:`P/Q` and :math:`\min(1, P/Q)`; the latter ties every token whose ratio
reaches 1, and its tie-break must then be the same in the selection and in :math:`C_s`, or the
output is biased. Here the key is :math:`P/Q` and the one order (:func:`rank_positions`) serves
both. The chains are not merged into a prefix tree: chains that agree so far are followed
together, which selects the same path.

Every random choice (the drafted tokens still unresolved, block verification's tests and the
emitted token) goes through the branch, so the exact certifier sums over it and Monte Carlo and
the decoder sample it.

>>> import numpy as np
>>> from fractions import Fraction as F
>>> p = np.array([F(1, 2), F(1, 4), F(1, 4)], dtype=object)
>>> q = np.array([F(1, 4), F(1, 2), F(1, 4)], dtype=object)
>>> [int(t) for t in np.argsort(rank_positions(p, q))]  # ascending p/q: 1 (1/2), 2 (1), 0 (2)
[1, 2, 0]
>>> law, _, _ = max_of_k_law(q, F(0), 2, rank_order(p, q))  # the larger of two i.i.d. draws from q
>>> [str(x) for x in law]
['7/16', '1/4', '5/16']
"""

from __future__ import annotations

import numpy as np

from ..errors import VerifierError
from ..trees.tree import SAMPLED
from .block import BlockVerifier
from .walk import draw_pending, register_tree_verifier

__all__ = ["GreedyBlockVerifier", "GBV", "GBV_FAMILIES", "rank_order", "rank_positions", "max_of_k_law",
           "drafted_paths"]

#: Families ``gbv`` is registered for: K i.i.d. chains of equal length (the paper's setting; a chain
#: is K = 1), certified exactly lossless by ``proofs/tree_level_verifiers.py``.
GBV_FAMILIES = ("chain", "multichain")


def rank_order(P, Q) -> np.ndarray:
    """The drafted tokens (:math:`Q(t) > 0`) in GBV's order at one node, lowest first.

    Ascending :math:`P(t) / Q(t)`, ties by token id. A token the draft cannot draw carries no draft
    mass and is never selected: it is left out (above every drafted token in the paper's order).
    Sorting the support only keeps a sparse draft at V = 32k cheap.

    Parameters
    ----------
    P : numpy.ndarray of shape (V,), Fractions or float64
        The target law at the node, # [vocab] (numpy sorts Fractions as it sorts floats).
    Q : numpy.ndarray of shape (V,), Fractions or float64
        The draft law at the node, # [vocab].

    Returns
    -------
    numpy.ndarray of shape (S,), int
        The token ids with :math:`Q(t) > 0`, in GBV's order, # [support].
    """
    supp = np.flatnonzero(Q != 0)  # [support]
    return supp[np.lexsort((supp, P[supp] / Q[supp]))]  # last key first: by ratio, then by id


def rank_positions(P, Q) -> np.ndarray:
    """Each token's position in GBV's order (0 = lowest; tokens the draft cannot draw last, by id).

    Parameters
    ----------
    P : numpy.ndarray of shape (V,), Fractions or float64
        The target law at the node, # [vocab].
    Q : numpy.ndarray of shape (V,), Fractions or float64
        The draft law at the node, # [vocab].

    Returns
    -------
    numpy.ndarray of shape (V,), int64
        Each token's position, # [vocab].
    """
    pos = np.empty(len(Q), dtype=np.int64)
    pos[np.concatenate([rank_order(P, Q), np.flatnonzero(Q == 0)])] = np.arange(len(Q))
    return pos


def max_of_k_law(Q, alpha, k: int, order):
    r"""The skewed draft :math:`Q^\Gamma` at one node of the selected path (module docstring, step 3).

    Parameters
    ----------
    Q : numpy.ndarray of shape (V,), Fractions or float64
        The draft at the node, # [vocab].
    alpha : Fraction or float
        :math:`\alpha_i` (0 at the root).
    k : int
        The number of i.i.d. paths K.
    order : numpy.ndarray of shape (S,), int
        :func:`rank_order` at the node, # [support].

    Returns
    -------
    law : numpy.ndarray of shape (V,), Fractions or float64
        :math:`Q^\Gamma_i`, # [vocab] (0 where the draft cannot draw).
    lo : numpy.ndarray of shape (S,), Fractions or float64
        :math:`\ell` of the drafted tokens in ``order``, # [support].
    hi : numpy.ndarray of shape (S,), Fractions or float64
        :math:`h` of the drafted tokens in ``order``, # [support]; :math:`\alpha_{i+1} = \ell / h`
        at the selected token.
    """
    q = Q[order]  # [support] in rank order
    beta = 1 - alpha
    lo = alpha + beta * (q.cumsum() - q)  # [support] alpha + beta C(t), C: draft mass ranked strictly below t
    hi = lo + beta * q
    num = sum(hi ** j * lo ** (k - 1 - j) for j in range(k))
    den = sum(alpha ** (k - 1 - j) for j in range(k))
    law = Q * 0  # [vocab]: 0 where the draft cannot draw
    law[order] = q * num / den
    return law, lo, hi


def drafted_paths(tree) -> list[tuple[int, ...]]:
    """The root-to-leaf node paths of a tree of K i.i.d. chains of equal length, in creation order.

    Parameters
    ----------
    tree : Tree
        A finished tree.

    Returns
    -------
    list of tuple of int
        One node path (root excluded) per chain; empty for the root alone.

    Raises
    ------
    VerifierError
        A tree of another shape (a node other than the root with several kept children, chains of
        different lengths, a deterministic node or one drawn without replacement, siblings at the
        root not drawn i.i.d. from one law): the skewed draft is the law of the maximum of K i.i.d.
        paths and of nothing else.
    """
    roots = tree.kept_children(0)
    paths = []
    for c in roots:
        path = [c]
        while kids := tree.kept_children(path[-1]):
            if len(kids) != 1:
                raise VerifierError(f"gbv verifies K i.i.d. chains; node {path[-1]} has {len(kids)} kept children")
            path.append(kids[0])
        paths.append(tuple(path))
    for path in paths:
        for v in path:
            node = tree.nodes[v]
            if node.kind != SAMPLED or node.group.mode != "iid":
                raise VerifierError(f"gbv verifies chains drawn i.i.d. from the draft; node {v} is not")
    if len({len(p) for p in paths}) > 1:
        raise VerifierError("gbv verifies K i.i.d. chains of equal length; these differ")
    if len({id(tree.nodes[c].group) for c in roots}) > 1:
        raise VerifierError("gbv verifies K chains drawn i.i.d. at the root; these come from different draws")
    return paths


class GreedyBlockVerifier(BlockVerifier):
    """GBV: block verification of the greedily selected path against its skewed draft (module docstring).

    ``observe`` (the per-node hook of Monte Carlo) is not called: there are no per-node transitions.
    """

    name = "gbv"
    #: The sampling mode of the chains it reads (i.i.d.: the skewed draft is the maximum of i.i.d. paths).
    sampling_modes = ("iid",)

    def __repr__(self) -> str:
        return "GreedyBlockVerifier()"

    def outcomes(self, tree, target, branch, weight=1, observe=None):
        """The values of Z: the chains drawn, the largest in GBV's order selected and block-verified
        against its skewed draft (module docstring).

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
            The tree is not K i.i.d. chains of equal length (:func:`drafted_paths`).
        """
        paths = drafted_paths(tree)
        pending = tree.pending_draws([v for path in paths for v in path])
        for dw, known in draw_pending(tree, pending, branch, w=weight):
            yield from self._verify(*self.select(tree, paths, known, target), dw, branch)

    def select(self, tree, paths, known, target):
        """The selected path and its laws (module docstring, steps 2 and 3).

        No chains (an empty tree): the root alone, ``((), (), [P_root], [])``.

        Parameters
        ----------
        tree : Tree
            A finished tree of K i.i.d. chains.
        paths : list of tuple of int
            Its chains' node paths (:func:`drafted_paths`).
        known : dict[int, int]
            Node -> token of the chains' unresolved nodes (drawn by
            :func:`~rheotheory.verify.walk.draw_pending`).
        target : callable
            The target laws, ``target(node, prefix) -> # [vocab]``.

        Returns
        -------
        tokens : tuple of int
            The selected path's L tokens.
        nodes : tuple of int
            Its nodes (of the first chain holding it).
        P : list of numpy.ndarray of shape (V,), Fractions or float64
            The target laws at its L + 1 nodes, root first, # [vocab] each.
        QG : list of numpy.ndarray of shape (V,), Fractions or float64
            The skewed draft of each of its L tokens, # [vocab] each.
        """
        k = len(paths)
        alive = list(range(k))  # the chains that agree with the selected path so far
        toks, nodes, P, QG = (), (), [target(0, ())], []
        alpha = P[0][0] * 0  # alpha_1 = 0, in the laws' number type
        for i in range(len(paths[0]) if paths else 0):
            drawn = {c: tree.candidate(paths[c][i], known) for c in alive}  # chain -> (token, member law)
            Q = drawn[alive[0]].law  # [vocab] the draft at the shared node (i.i.d.: one law for every chain)
            order = rank_order(P[-1], Q)  # [support]
            r = max(int(np.flatnonzero(order == drawn[c].token)[0]) for c in alive)  # the largest drafted rank
            x = int(order[r])
            law, lo, hi = self.skewed_law(Q, alpha, k, order)
            alpha = lo[r] / hi[r]
            alive = [c for c in alive if drawn[c].token == x]
            toks, nodes = toks + (x,), nodes + (paths[alive[0]][i],)
            QG.append(law)
            P.append(target(nodes[-1], toks))
        return toks, nodes, P, QG

    #: ``(Q, alpha, k, order) -> (law, lo, hi)``: the selected token's law (:func:`max_of_k_law`). The
    #: planted bugs of :mod:`rheotheory.testing.mutants` replace it; the registered verifier never does.
    skewed_law = staticmethod(max_of_k_law)


#: The registered GBV.
GBV = register_tree_verifier(GreedyBlockVerifier(), families=GBV_FAMILIES)
