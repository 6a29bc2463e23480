"""Test plugins: builders that break the contract of docs/theory.md section 5.3, and one that keeps
it with a cache, for the strict mode's tests.

Every builder makes one sampled child at the root and tells the verifier (``sequential``) that it
was drawn from q. ``planted:fault=NAME``:

- ``none``: draws it through its chooser from q (lossless; the control);
- ``cache``: the same, with q's laws cached between calls (a harmless cache: lossless);
- ``rng-law``: numpy's global generator chooses the law it draws from (q or the uniform law), the
  draw goes through the chooser (lossy: the token's law is a mixture, the verifier is told q);
- ``random-law``: the same with Python's ``random`` module;
- ``counter-law``: a call counter chooses the law (q on odd calls, uniform on even ones: lossy);
- ``rng-token``: draws the token from q with numpy's global generator and places it with
  ``tree.add(..., token=x)`` (lossless in law, but no chooser draw produced it);
- ``lie``: draws from the uniform law through the chooser and declares q (lossy: a method whose
  verifier is told another law than the token's).
"""

import random
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from rheotheory.plugin import SAMPLED, Method, SampleGroup, Tree, laws, option, register_family

FAULTS = ("none", "cache", "rng-law", "random-law", "counter-law", "rng-token", "lie")

_CALLS = [0]  # the counter of counter-law, kept between calls on purpose


def _uniform(pair):
    one = laws.parse_number(1, pair.exact)
    return laws.normalise(pair.q(()) * 0 + one)  # [vocab]


def planted_tree(pair, chooser, fault: str, cache: dict) -> Tree:
    one = laws.parse_number(1, pair.exact)
    q = pair.q(())  # [vocab], the law declared to the verifier
    tree = Tree(one)
    group = SampleGroup(q, "iid")
    if fault in ("none", "cache"):
        if fault == "cache":
            q = cache.setdefault((), pair.q(()))
            group.base = q
        child = tree.add(0, SAMPLED, one, group=group)
        tree.resolve(child, chooser)
    elif fault == "rng-token":
        x = laws.inverse_cdf(q, float(np.random.random()))
        tree.add(0, SAMPLED, one, token=x, group=group)
    else:
        if fault == "rng-law":
            heads = np.random.random() < 0.5
        elif fault == "random-law":
            heads = random.random() < 0.5
        elif fault == "counter-law":
            _CALLS[0] += 1
            heads = _CALLS[0] % 2 == 1
        else:  # lie
            heads = False
        law = q if heads else _uniform(pair)
        tree.add(0, SAMPLED, one, token=chooser.draw(law), group=group)
    return tree.finish()


@register_family
@dataclass(frozen=True)
class PlantedMethod(Method):
    family: ClassVar[str] = "planted"
    summary: ClassVar[str] = "one sampled child declared as drawn from q, by a builder that may break the contract"
    verifiers: ClassVar[tuple] = ("sequential",)

    fault: str = option("none", help="the contract fault planted", choices=FAULTS)

    @property
    def depth(self) -> int:
        return 1

    @property
    def nodes(self) -> int:
        return 1

    def builder(self, pair, cache=None):
        memo: dict = {}
        return lambda chooser: planted_tree(pair, chooser, self.fault, memo)
