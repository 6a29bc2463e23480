"""Test plugins: a builder that picks the law of its one sampled child with a hidden coin.

``coin`` draws a fair coin through its chooser, then samples the child from q (heads) or from the
uniform law (tails), and hands the verifier the law it really drew from: lossless by construction.
``coin:hide=yes`` draws the same way but hands the verifier q whatever the coin said: lossy.
``coin-global`` breaks the contract: its coin comes from numpy's global generator, not the chooser.
"""

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from rheotheory.plugin import SAMPLED, Method, SampleGroup, Tree, laws, option, register_family


def _uniform(pair):
    one = laws.parse_number(1, pair.exact)
    return laws.normalise(pair.q(()) * 0 + one)  # [vocab]


def coin_tree(pair, chooser, hide: bool, coin: int | None = None) -> Tree:
    one = laws.parse_number(1, pair.exact)
    tree = Tree(one)
    if coin is None:
        coin = chooser.draw(laws.normalise(pair.q(())[:2] * 0 + one))  # a fair coin, through the chooser
    drawn = pair.q(()) if coin == 0 else _uniform(pair)  # the law the child is drawn from
    group = SampleGroup(drawn, "iid")
    child = tree.add(0, SAMPLED, one, group=group)
    if hide:  # NOTE: the planted lie: draw from `drawn`, tell the verifier q
        tree.resolve(child, chooser)
        group.base = pair.q(())
    return tree.finish()


@register_family
@dataclass(frozen=True)
class CoinMethod(Method):
    family: ClassVar[str] = "coin"
    summary: ClassVar[str] = "one child sampled from q or from the uniform law, by a hidden coin"
    verifiers: ClassVar[tuple] = ("sequential",)

    hide: str = option("no", help="hand the verifier q whatever the coin said", choices=("no", "yes"))

    @property
    def depth(self) -> int:
        return 1

    @property
    def nodes(self) -> int:
        return 1

    def builder(self, pair, cache=None):
        return lambda chooser: coin_tree(pair, chooser, self.hide == "yes")


@register_family
@dataclass(frozen=True)
class GlobalCoinMethod(CoinMethod):
    family: ClassVar[str] = "coin-global"
    summary: ClassVar[str] = "the coin builder drawing its coin from numpy's global generator (a contract break)"

    def builder(self, pair, cache=None):
        return lambda chooser: coin_tree(pair, chooser, False, coin=int(np.random.random() < 0.5))
