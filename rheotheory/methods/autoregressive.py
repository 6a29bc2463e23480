"""Autoregressive sampling as a method: the tree with no draft nodes (docs/theory.md section 2.5).

Every per-node verifier at a node without children emits one token from the target, so a step
emits exactly one target sample: the baseline every speed-up is measured against.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..trees import build_static
from .registry import Method, register

__all__ = ["AutoregressiveMethod"]


@register
@dataclass(frozen=True)
class AutoregressiveMethod(Method):
    """No draft: one token from the target per step."""

    family: ClassVar[str] = "autoregressive"
    summary: ClassVar[str] = "no draft tree: one token sampled from the target per step (the baseline)"
    verifiers: ClassVar[tuple[str, ...]] = ("sequential",)

    @property
    def depth(self) -> int:
        return 0

    @property
    def nodes(self) -> int:
        return 0

    def builder(self, pair, cache=None):
        return lambda chooser: build_static(pair, [], "iid", chooser)

    def describe(self) -> str:
        return "autoregressive"
