"""A test plugin that breaks the contract on the verifier's side: a tree-level verifier that reads a
node's construction score, which the certifier's equivalence key leaves out (docs/theory.md 5.3).

``peek`` builds one deterministic child (the draft's arg-max) whose score records a coin drawn
through the chooser; the verifier ``peek-score`` accepts the child with p(x) when the coin was 0
and never otherwise: lossless given each tree, but the certifier merges the two trees (the verifier
sees the same tokens and laws), so only the strict mode's ungrouped comparison can tell.
"""

from dataclasses import dataclass
from typing import ClassVar

from rheotheory.plugin import (DET, Method, Outcome, Tree, TreeVerifier, laws, register_family,
                               register_tree_verifier)


class PeekScore(TreeVerifier):
    name = "peek-score"

    def outcomes(self, tree, target, branch, weight=1, observe=None):
        p = target(0, ())
        (kid,) = tree.kept_children(0)
        x = tree.token(kid)
        a = p[x] if tree.nodes[kid].score == 0 else p[x] * 0  # NOTE: reads the score
        rest = laws.normalise(laws.zero_at(p, x)) if a else p
        for j, w in branch.choose([a], rest * (1 - a)):
            if j == 0:
                for y, wy in branch.choose(target(kid, (x,))):
                    yield Outcome((x, y), (kid,), weight * w * wy)
            else:
                yield Outcome((j - 1,), (), weight * w)


register_tree_verifier(PeekScore(), families=("peek",))


@register_family
@dataclass(frozen=True)
class PeekMethod(Method):
    family: ClassVar[str] = "peek"
    summary: ClassVar[str] = "one arg-max child whose score records a coin (a contract break)"
    verifiers: ClassVar[tuple] = ("onehot",)

    @property
    def depth(self) -> int:
        return 1

    @property
    def nodes(self) -> int:
        return 1

    def builder(self, pair, cache=None):
        def build(chooser):
            one = laws.parse_number(1, pair.exact)
            tree = Tree(one)
            coin = chooser.draw(laws.normalise(pair.q(())[:2] * 0 + one))
            tree.add(0, DET, coin, token=laws.rank(pair.q(()))[0])
            return tree.finish()

        return build
