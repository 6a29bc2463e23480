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
    """No draft: one token from the target per step.

    Attributes
    ----------
    verifier : str, optional
        The verifier: ``sequential`` (the default and the only built-in one admitted); at a node
        without children every per-node verifier emits one token from the target.
    """

    family: ClassVar[str] = "autoregressive"
    summary: ClassVar[str] = "no draft tree: one token sampled from the target per step (the baseline)"
    verifiers: ClassVar[tuple[str, ...]] = ("sequential",)

    @property
    def depth(self) -> int:
        """The tree's depth: 0."""
        return 0

    @property
    def nodes(self) -> int:
        """Most draft nodes a tree holds: 0."""
        return 0

    def builder(self, pair, cache=None):
        """A function ``chooser -> Tree`` building the tree of the root alone.

        Parameters
        ----------
        pair : ToyPair or SyntheticPair
            The target and draft laws (the pair protocol of :mod:`rheotheory.pairs`).
        cache : ExpansionCache, optional
            Not read.

        Returns
        -------
        callable
            ``build(chooser) -> Tree``; it draws nothing.
        """
        return lambda chooser: build_static(pair, [], "iid", chooser)

    def describe(self) -> str:
        """One line: ``'autoregressive'`` (the family has no fields but the verifier).

        Returns
        -------
        str
            ``'autoregressive'``.
        """
        return "autoregressive"
