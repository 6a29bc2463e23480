r"""Traversal Verification with the sampled children first: ``traversal-ot`` (docs/theory.md section 7.1).

:mod:`rheotheory.verify.traversal` visits a node's kept children in creation order. On a tree
whose expansions put deterministic children before sampled ones (RheoSampling, adaptive
RheoSampling) that order makes the sampled child's chance depend on which deterministic
siblings survived the prune, and a sample's own subtree can push such a sibling out: the
certifier finds plain ``traversal`` lossy on RheoSampling with the ``tail`` proxy, like
``sequential`` (section 8, condition C2).

``traversal-ot`` visits the **sampled children first** (in creation order, i.e. draw order),
**then the deterministic ones** (in creation order), the order of ``ot`` and ``ot-wor``
(sections 3.5 and 2.7). Everything else is Traversal Verification: entry weights, the block
update after a rejected subtree, the leaf rule. A deterministic child holding ``x`` has the point
mass at ``x`` as its member law, so it enters with weight :math:`a_v P_v(x)`.

**Why the order matters.** The induction of :mod:`rheotheory.verify.traversal` says a node
entered in state :math:`(a, P)` emits, over its whole subtree, a first token with sub-law
:math:`a P` *whatever the subtree's shape*. After the samples, the node's remaining mass is
therefore emitted with the right law whichever deterministic children were kept. So, as for
``ot-wor``, the output given the samples does not depend on the deterministic siblings, and the
argument needs only that each kept sample has its member law given the view and the earlier
samples (condition C1), not given the kept deterministic siblings (C2). Which families this
holds for is decided by the exact certifier, not by this argument: the verifier is registered
only where it was certified (``TRAVERSAL_OT_FAMILIES``).

On trees with no deterministic children (chains, static trees, multichains) it is ``traversal``.
"""

from __future__ import annotations

from .traversal import TraversalVerifier
from .walk import register_tree_verifier
from ..trees.tree import SAMPLED

__all__ = ["TraversalOTVerifier", "TRAVERSAL_OT", "TRAVERSAL_OT_FAMILIES"]

#: Families ``traversal-ot`` is registered for: adaptive RheoSampling, certified exactly lossless on
#: random instances (``simulations/certify_adaptive.py``, docs/theory.md section 2.7).
TRAVERSAL_OT_FAMILIES = ("adaptive",)


def samples_first(tree, kids: list[int]) -> list[int]:
    """``kids`` reordered: the sampled children in their order, then the deterministic ones in theirs."""
    return ([c for c in kids if tree.nodes[c].kind == SAMPLED]
            + [c for c in kids if tree.nodes[c].kind != SAMPLED])


class TraversalOTVerifier(TraversalVerifier):
    """Traversal Verification visiting sampled children before deterministic ones (module docstring)."""

    name = "traversal-ot"

    def __repr__(self) -> str:
        return "TraversalOTVerifier()"

    def _visit(self, tree, v, u, nodes, a, P, w, known, target, branch, p_root):
        kids = samples_first(tree, tree.kept_children(v))
        return (yield from self._children(tree, v, kids, 0, u, nodes, a, P, w, known, target, branch, p_root))


#: The registered samples-first Traversal Verification.
TRAVERSAL_OT = register_tree_verifier(TraversalOTVerifier(), families=TRAVERSAL_OT_FAMILIES)
