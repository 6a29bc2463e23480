r"""SpecTr-GBV (arXiv 2604.25925), as far as its rule can be read: **known lossy** (docs/theory.md section 7.3).

The paper combines SpecTr's K i.i.d. drafts with block verification and claims the optimal
expected acceptance length among i.i.d. multi-draft methods. Its equations and algorithm boxes
were not available to this project; the rule below is **reconstructed** from the public
description of its acceptance and residual rules (the K = 1 case of its acceptance weight and
the K-fold prefix masses) and from how its published evaluation scans the drafts. Every piece
that is a reading, not the paper's text, is marked ``NOTE: reading``. The paper's Algorithm 2 (a
modification of the laws between steps, on which its fidelity theorem rests) could not be read
and is not implemented: the verdict below is about this one-step rule, not about the paper's
whole scheme.

**The rule.** :math:`K` chains of length :math:`L` drawn i.i.d. from the draft (``multichain``
with i.i.d. sampling; a chain is :math:`K = 1`). For a prefix :math:`s` of a chain, with joint
target and draft masses :math:`P(s) = \prod p`, :math:`Q(s) = \prod q` along it,

.. math::

    r(s) = \min\Big(1, \frac{Q(s)}{P(s)}\Big), \quad
    G(s) = P(s)\,\big(1 - (1 - r(s))^K\big), \quad
    C(s) = 1 - (1 - Q(s))^K, \quad
    \Sigma(s) = \sum_x G(s x),

:math:`G` the "K-fold coupled mass" of :math:`s` and :math:`C` the probability that one of the
K chains starts with :math:`s`. A prefix of length :math:`1 \le i < L` passes with probability
:math:`h(s) = (G(s) - \Sigma(s)) / (C(s) - \Sigma(s))`, a whole chain with :math:`G(s) / C(s)`.
The chains are scanned in order; along chain :math:`j`, the prefixes deeper than the longest
accepted so far are tested (a prefix already rejected on an earlier chain is skipped), each pass
becomes the accepted prefix, and a passing whole chain ends the scan (bonus token from
:math:`p(\cdot \mid s)`). Otherwise the accepted prefix :math:`s` (possibly empty) is followed by
:math:`y \sim \mathrm{norm}\big(P(s y)\,(1 - r(s y)^K)\big)`. For :math:`K = 1, L = 1` this is
speculative sampling.

**What the certifier finds** (``proofs/tree_level_verifiers.py``): lossy for every :math:`K \ge 2`
already at :math:`L = 1`, and for :math:`K = 1` once :math:`L \ge 2` (its uncapped joint ratio
gives a prefix more than block verification can). The registered verifier therefore carries
:attr:`~rheotheory.verify.walk.TreeVerifier.lossy`: commands warn, and it is measured, never
recommended.

>>> import numpy as np
>>> from fractions import Fraction as F
>>> from rheotheory.trees import Tree
>>> from rheotheory.trees.tree import SampleGroup, SAMPLED
>>> from rheotheory.verify.walk import EnumerateBranch
>>> p = np.array([F(1, 2), F(3, 10), F(1, 5)], dtype=object)  # target
>>> q = np.array([F(1, 5), F(3, 10), F(1, 2)], dtype=object)  # draft
>>> tree = Tree(F(1))
>>> g = SampleGroup(q, "iid", ("root",))
>>> kids = [tree.add(0, SAMPLED, F(1), group=g) for _ in range(2)]  # K = 2 drafts of one token
>>> tree = tree.finish()
>>> first = {}
>>> for o in SPECTR_GBV.outcomes(tree, lambda node, u: p, EnumerateBranch()):
...     first[o.z[0]] = first.get(o.z[0], 0) + o.weight
>>> [str(first[t]) for t in range(3)]  # about 0.531, 0.267, 0.202; the target's law is 1/2, 3/10, 1/5
['103672/195075', '1157/4335', '2314/11475']
"""

from __future__ import annotations

from .. import laws
from .gbv import drafted_paths
from .block import member_law
from .walk import Outcome, TreeVerifier, draw_pending, register_tree_verifier

__all__ = ["SpecTrGBVVerifier", "SPECTR_GBV", "SPECTR_GBV_FAMILIES"]

#: Families ``spectr-gbv`` is registered for: K i.i.d. chains of equal length, the paper's setting.
SPECTR_GBV_FAMILIES = ("chain", "multichain")


class _Chain:
    """One drafted chain: its tokens, nodes, target laws at its L + 1 nodes and draft laws at its first L
    (# [vocab] each), and the joint masses of its prefixes."""

    def __init__(self, tree, path, known, target):
        self.nodes = path
        self.toks, self.P, self.Q = (), [target(0, ())], []
        for v in path:
            x, law = member_law(tree, v, known, self.P[-1])
            self.Q.append(law)
            self.toks += (x,)
            self.P.append(target(v, self.toks))
        one = self.P[0][0] * 0 + 1
        self.joint_p, self.joint_q = [one], [one]  # P(s), Q(s) of the prefixes of length 0..L
        for i, x in enumerate(self.toks):
            self.joint_p.append(self.joint_p[-1] * self.P[i][x])
            self.joint_q.append(self.joint_q[-1] * self.Q[i][x])


def _ratio(P, Q):
    """:math:`r = \\min(1, Q / P)` of two joint masses, 1 where :math:`P = 0`, in their number type."""
    return Q / P if P and Q < P else P * 0 + 1


class SpecTrGBVVerifier(TreeVerifier):
    """The reconstructed SpecTr-GBV rule (module docstring); registered with its ``lossy`` reason."""

    name = "spectr-gbv"
    sampling_modes = ("iid",)
    lossy = ("the reconstructed one-step rule of SpecTr-GBV: its K-fold prefix masses overstate what K i.i.d. "
             "drafts can accept (docs/theory.md section 7.3)")

    def __repr__(self) -> str:
        return "SpecTrGBVVerifier()"

    def outcomes(self, tree, target, branch, weight=1, observe=None):
        """The values of Z: the chains drawn, then scanned by the reconstructed rule (module docstring).

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
            The tree is not K i.i.d. chains of equal length
            (:func:`~rheotheory.verify.gbv.drafted_paths`).
        """
        paths = drafted_paths(tree)
        if not paths:
            for y, wy in branch.choose(target(0, ())):
                yield Outcome((y,), (), weight * wy)
            return
        pending = tree.pending_draws([v for path in paths for v in path])
        for dw, known in draw_pending(tree, pending, branch, w=weight):
            chains = [_Chain(tree, path, known, target) for path in paths]
            yield from self._scan(chains, 0, None, 0, 0, frozenset(), dw, branch)

    # -- the K-fold masses of one prefix --------------------------------------------------------------
    def _masses(self, ch, i, k):
        """``(G, C)`` of the prefix of length ``i`` of chain ``ch``."""
        P, Q = ch.joint_p[i], ch.joint_q[i]
        return P * (1 - (1 - _ratio(P, Q)) ** k), 1 - (1 - Q) ** k

    def _children_mass(self, ch, i, k):
        """:math:`\\Sigma(s) = \\sum_x G(s x)` for the prefix ``s`` of length ``i < L`` of chain ``ch``."""
        P, Q = ch.joint_p[i], ch.joint_q[i]
        total = P * 0
        for x in range(len(ch.P[i])):
            Px, Qx = P * ch.P[i][x], Q * ch.Q[i][x]
            if Px:
                total = total + Px * (1 - (1 - _ratio(Px, Qx)) ** k)
        return total

    def _scan(self, chains, j, i, ell, acc_chain, rejected, w, branch):
        """Chain ``j`` from depth ``i`` (None: its start), ``ell`` tokens of chain ``acc_chain`` accepted."""
        k, L = len(chains), len(chains[0].toks)
        if j == k:
            yield from self._emit(chains[acc_chain], ell, k, w, branch)
            return
        ch = chains[j]
        if i is None:
            i = ell + 1  # NOTE: reading: a chain tests only the prefixes deeper than the accepted one
        if i < L:
            s = ch.toks[:i]
            if s in rejected:  # NOTE: reading: a prefix rejected on an earlier chain is not tested again
                yield from self._scan(chains, j, i + 1, ell, acc_chain, rejected, w, branch)
                return
            G, C = self._masses(ch, i, k)
            S = self._children_mass(ch, i, k)
            den = C - S
            h = (G - S) / den if den > 0 else G * 0
            for c, wc in branch.choose([h, 1 - h]):
                if c == 0:  # accepted: the deepest pass so far; the scan goes on
                    yield from self._scan(chains, j, i + 1, i, j, rejected, w * wc, branch)
                else:
                    yield from self._scan(chains, j, i + 1, ell, acc_chain, rejected | {s}, w * wc, branch)
            return
        G, C = self._masses(ch, L, k)
        h = G / C
        for c, wc in branch.choose([h, 1 - h]):
            if c == 0:  # the whole chain passes: the bonus token, and the scan ends
                for y, wy in branch.choose(ch.P[L]):
                    yield Outcome(ch.toks + (y,), ch.nodes, w * wc * wy)
            else:
                yield from self._scan(chains, j + 1, None, ell, acc_chain, rejected, w * wc, branch)

    def _emit(self, ch, ell, k, w, branch):
        """The correction after the accepted prefix of length ``ell`` of chain ``ch``."""
        P, Q = ch.joint_p[ell], ch.joint_q[ell]
        R = ch.P[ell] * 0  # [vocab]
        for x in range(len(R)):
            Px, Qx = P * ch.P[ell][x], Q * ch.Q[ell][x]
            if Px:
                R[x] = Px * (1 - _ratio(Px, Qx) ** k)
        s = laws.total(R)
        emit = laws.normalise(R, s) if s > 0 else ch.P[ell]  # NOTE: nothing left to correct: the target law
        for y, wy in branch.choose(emit):
            yield Outcome(ch.toks[:ell] + (y,), ch.nodes[:ell], w * wy)


#: The registered (known-lossy) SpecTr-GBV.
SPECTR_GBV = register_tree_verifier(SpecTrGBVVerifier(), families=SPECTR_GBV_FAMILIES)
