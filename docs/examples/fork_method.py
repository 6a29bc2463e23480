"""A method from outside rheotheory: the `fork` family and the `my-rrs` rule.

Use it with any command: `rheo certify --plugin fork_method.py --preset fork`.
docs/guide/own-method.md walks through it.
"""

from dataclasses import dataclass
from typing import ClassVar

from rheotheory.plugin import (SAMPLED, Method, SampleGroup, Transition, Tree,
                               laws, option, positive_int, register_family,
                               register_rule)


@register_rule("my-rrs", families=("fork", "chain", "static"))
def my_rrs(p, candidates):
    """Recursive rejection sampling: accept x drawn from L with
    min(1, p(x) / L(x)); on rejection p <- norm((p - L)+)."""
    cont, rest = [], p[0] * 0 + 1  # rest: every candidate so far rejected
    for c in candidates:  # every candidate here is sampled: c.law is set
        accept = min(p[c.token] / c.law[c.token], 1)
        cont.append(rest * accept)
        rest = rest * (1 - accept)
        p = laws.residual(p, c.law)
    return Transition(cont, rest * p)  # emit from the last residual


@register_family
@dataclass(frozen=True)
class ForkMethod(Method):
    """`width` branches drawn from q without replacement at the root,
    each continued as a sampled chain."""

    family: ClassVar[str] = "fork"
    summary: ClassVar[str] = "a fork of sampled chains (an example plugin)"
    verifiers: ClassVar[tuple] = ("my-rrs", "sequential")  # default first

    width: int = option(2, help="branches at the root", parse=positive_int,
                        search=(1, 3))
    depth: int = option(None, help="length of each branch", label="D",
                        parse=positive_int)

    def validate(self):
        self.require_positive("width", "depth")

    @property
    def nodes(self):  # the node budget this method is compared at
        return self.width * self.depth

    def builder(self, pair, cache=None):
        def build(chooser):  # every random choice goes through chooser
            one = laws.parse_number(1, pair.exact)
            tree = Tree(one)
            q = pair.q(())
            root = SampleGroup(q, "wor")  # the law the verifier is handed
            width = min(self.width, sum(1 for w in q if w > 0))
            tips = [tree.add(0, SAMPLED, one, group=root)
                    for _ in range(width)]
            for _ in range(self.depth - 1):
                for i, v in enumerate(tips):
                    tree.resolve(v, chooser)  # draws v (and earlier members)
                    below = SampleGroup(pair.q(tree.path(v)), "iid")
                    tips[i] = tree.add(v, SAMPLED, one, group=below)
            return tree.finish()

        return build
