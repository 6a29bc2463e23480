r"""Hierarchical speculative decoding, ``hsd`` (Zhou et al., arXiv 2601.05724; docs/theory.md section 7.3).

A sequence-level verifier of one drafted chain, like block verification
(:mod:`rheotheory.verify.block`), with two changes. The chain holds :math:`X_1, \dots, X_\gamma`;
node :math:`i` has the target law :math:`P_i` and the draft :math:`Q_i` its child was drawn from;
:math:`r_i = \prod_{j \le i} P_{j-1}(X_j) / Q_{j-1}(X_j)` is the *joint* ratio of the prefix of
length :math:`i` (:math:`r_0 = 1`) and :math:`w_i = \min(1, r_i)`.

- **Weights from joint masses.** Where block verification caps its running ratio at every step
  (:math:`a_i = \min(1, a_{i-1} P/Q)`), HSD compares the joint target and draft masses of the
  prefix: the "excess" :math:`(\min(P, Q)(X_{1:i})\, P_i - Q(X_{1:i})\, Q_i)_+` and the "deficit"
  (its negative part) of the branches that leave the chain at node :math:`i`. Divided by
  :math:`Q(X_{1:i})`, node :math:`i < \gamma` is kept with

  .. math::

      h_i = \frac{S_i}{\max(S_i,\, S_i + 1 - w_i)} = \frac{S_i}{S_i + 1 - w_i}, \qquad
      S_i = \sum_x \big(w_i P_i(x) - Q_i(x)\big)_+,

  and the whole chain with :math:`w_\gamma`.
- **The hierarchical rule:** where the joint ratio of the prefix one token deeper is at least 1
  (:math:`r_{i+1} \ge 1`), node :math:`i` is always kept (:math:`h_i = 1`).

The whole chain is accepted with probability :math:`w_\gamma` (then the bonus token from
:math:`P_\gamma`); otherwise nodes are tried from :math:`\gamma - 1` up and the first kept node
:math:`\tau` ends the scan, followed by :math:`y \sim \mathrm{norm}\big((w_\tau P_\tau - Q_\tau)_+\big)`.

**Read from the authors' stand-alone code** (``algorithm_clean.py`` of their repository at commit
``8974510``, the file this project was pointed to; the paper's text was not available here), every
departure from block verification marked where it happens. Two edge cases follow that code
(``NOTE: authors' code``): a kept node whose excess is empty emits the drafted token
:math:`X_{\tau+1}` itself (no correction token), and when no node is kept the scan stops at node
:math:`\gamma - 1`. Running the authors' function on toy laws gives this module's exact law of
:math:`Z` within Monte-Carlo error. Their later integrations loop over the suffix left after a
partial acceptance and cap the intermediate joint ratios by their running maximum (block
verification's weights) while keeping the uncapped test of the whole chain; that scheme is not
implemented here.

**What the certifier finds** (``proofs/tree_level_verifiers.py``): lossless with one drafted token
(where it is speculative sampling), lossy from two: the uncapped joint ratio gives a prefix more
than block verification, which is optimal for one chain, can (docs/theory.md section 7.3). The
registered verifier carries that verdict as :attr:`~rheotheory.verify.walk.TreeVerifier.lossy`.
"""

from __future__ import annotations

from .. import laws
from .block import BlockVerifier, _one
from .walk import Outcome, register_tree_verifier

__all__ = ["HierarchicalVerifier", "HSD", "HSD_FAMILIES", "joint_weights"]

#: Families ``hsd`` is registered for: one drafted chain (the paper's setting).
HSD_FAMILIES = ("chain",)


def joint_weights(toks, P, Q):
    """``(r, w)``: the joint ratios :math:`r_0 .. r_\\gamma` of the chain's prefixes and
    :math:`w_i = \\min(1, r_i)`.

    Parameters
    ----------
    toks : sequence of int
        The chain's tokens :math:`X_1 .. X_\\gamma`.
    P : list of numpy.ndarray of shape (V,), Fractions or float64
        The target laws at the chain's nodes, root first, # [gamma + 1, vocab].
    Q : list of numpy.ndarray of shape (V,), Fractions or float64
        The drafts each token was drawn from, # [gamma, vocab].

    Returns
    -------
    r : list of Fraction or float
        The joint ratios, :math:`r_0 = 1`, uncapped, # [gamma + 1].
    w : list of Fraction or float
        The weights :math:`\\min(1, r_i)`, # [gamma + 1].
    """
    r = [_one(P[0])]
    for i, x in enumerate(toks):
        r.append(r[-1] * P[i][x] / Q[i][x])  # NOTE: uncapped, unlike block verification's a_i
    return r, [v if v < 1 else v * 0 + 1 for v in r]


class HierarchicalVerifier(BlockVerifier):
    """HSD on one drafted chain (module docstring); the chain is drawn as block verification draws it."""

    name = "hsd"
    lossy = ("the one-pass rule of HSD's stand-alone code: its uncapped joint ratios accept prefixes more often "
             "than a chain's target law allows (docs/theory.md section 7.3)")

    def __repr__(self) -> str:
        return "HierarchicalVerifier()"

    def _verify(self, toks, nodes, P, Q, w, branch):
        """HSD's choice of the accepted prefix and the token after it, for one drafted chain."""
        gamma = len(toks)
        r, a = joint_weights(toks, P, Q)
        for c, wc in branch.choose([a[gamma], 1 - a[gamma]]):  # the whole chain, with min(1, r_gamma)
            if c == 0:
                for y, wy in branch.choose(P[gamma]):
                    yield Outcome(toks + (y,), nodes, w * wc * wy)
            else:
                yield from self._scan(toks, nodes, P, Q, r, a, gamma - 1, w * wc, branch)

    def _scan(self, toks, nodes, P, Q, r, a, i, w, branch):
        """Node ``i`` and the nodes above it, every deeper one rejected."""
        if i < 0:
            # NOTE: authors' code: no node kept (possible only where the excess at the root is empty,
            # P_0 = Q_0): the scan stops at node gamma - 1
            yield from self._emit(toks, nodes, P, Q, a, len(toks) - 1, w, branch)
            return
        R = laws.pos(a[i] * P[i] - Q[i])  # [vocab] the excess of the branches leaving the chain at node i
        S = laws.total(R)
        den = S + 1 - a[i]
        h = S / den if den > 0 else S * 0
        if r[i + 1] >= 1:  # NOTE: authors' code: a node whose next prefix has joint ratio >= 1 is kept
            h = h * 0 + 1
        for c, wc in branch.choose([h, 1 - h]):
            if c == 0:
                yield from self._emit(toks, nodes, P, Q, a, i, w * wc, branch)
            else:
                yield from self._scan(toks, nodes, P, Q, r, a, i - 1, w * wc, branch)

    @staticmethod
    def _emit(toks, nodes, P, Q, a, i, w, branch):
        """Node ``i`` kept: the correction from its excess, or (none) the drafted token after it."""
        R = laws.pos(a[i] * P[i] - Q[i])  # [vocab]
        S = laws.total(R)
        if not S > 0:
            # NOTE: authors' code: an empty excess emits the drafted token X_{i+1}, no correction token
            yield Outcome(toks[:i + 1], nodes[:i], w)
            return
        for y, wy in branch.choose(laws.normalise(R, S)):
            yield Outcome(toks[:i] + (y,), nodes[:i], w * wy)


#: The registered HSD.
HSD = register_tree_verifier(HierarchicalVerifier(), families=HSD_FAMILIES)
