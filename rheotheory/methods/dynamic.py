"""Dynamic trees: EAGLE-2's top-K tree and RheoSampling (docs/theory.md sections 2.1 and 2.2)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..errors import TreeError
from ..trees import FILLERS, PROXIES, DynamicConfig, ExpansionCache, build_dynamic
from .registry import Method, option, positive_int, register

__all__ = ["DynamicMethod", "EagleMethod", "RheoMethod", "top_k_option", "depth_option", "budget_option"]

#: Verifiers defined for dynamic trees: deterministic children plus at most one sampled child
#: per node (rrs / rrs-wor / kseq are rules for sets of sampled siblings).
DYNAMIC_VERIFIERS = ("onehot", "sequential", "ot")


def top_k_option():
    """The field ``top_k`` (K) of the dynamic families, one definition for all of them.

    Returns
    -------
    dataclasses.Field
        An :func:`~rheotheory.methods.registry.option` with no default (filled from the command's
        :data:`~rheotheory.methods.registry.TREE_SIZES` row), parsed as an integer >= 1, ``--top-k K``.
    """
    return option(None, help="slots per expansion and nodes expanded per layer", label="K", parse=positive_int,
                  metavar="K", search=(2, 3))


def depth_option():
    """The field ``depth`` (D) of the dynamic families, one definition for all of them.

    Returns
    -------
    dataclasses.Field
        An :func:`~rheotheory.methods.registry.option` with no default (filled from the command's
        :data:`~rheotheory.methods.registry.TREE_SIZES` row), parsed as an integer >= 1, ``--depth D``.
    """
    return option(None, help="tree depth (layers below the root)", label="D", parse=positive_int, metavar="D",
                  search=(2, 3))


def budget_option():
    """The field ``budget`` (N) of the dynamic families, one definition for all of them.

    Returns
    -------
    dataclasses.Field
        An :func:`~rheotheory.methods.registry.option` with no default (filled from the command's
        :data:`~rheotheory.methods.registry.TREE_SIZES` row), parsed as an integer >= 1, ``--budget N``.
    """
    return option(None, help="non-root nodes kept by the global prune", label="N", parse=positive_int,
                  metavar="N", search=(2, 6))


@dataclass(frozen=True)
class DynamicMethod(Method):
    """Base of the dynamic families: K, D, N, a global prune, and a builder over an expansion cache."""

    verifiers: ClassVar[tuple[str, ...]] = DYNAMIC_VERIFIERS
    shrink_fields: ClassVar[tuple[str, ...]] = ("depth", "top_k", "budget")

    def config(self) -> DynamicConfig:
        """The builder's configuration of this method.

        Returns
        -------
        DynamicConfig
            K, D, N and the family's slot rules (a family with its own builder returns its own
            config type).

        Raises
        ------
        NotImplementedError
            On the base class: every dynamic family implements it.
        """
        raise NotImplementedError

    def validate(self) -> None:
        """Check the sizes (integers >= 1) and the builder's own checks (:meth:`config`).

        Raises
        ------
        TreeError
            A size is not a positive integer, or the builder refuses the configuration.
        """
        self.require_positive("top_k", "depth", "budget")
        self.config()  # the builder's own checks

    @property
    def nodes(self) -> int:
        """Most draft nodes a tree holds: the budget N."""
        return self.budget

    def build_tree(self, pair, cfg, chooser, cache):
        """One tree of this family (the dynamic builder; a family with its own builder overrides).

        Parameters
        ----------
        pair : ToyPair or SyntheticPair
            The target and draft laws (the pair protocol of :mod:`rheotheory.pairs`).
        cfg : DynamicConfig
            The builder's configuration (:meth:`config`).
        chooser : Chooser
            Answers every draw of the construction (:class:`~rheotheory.trees.tree.Chooser`).
        cache : ExpansionCache
            Ranked draft laws shared by the trees built on ``pair``.

        Returns
        -------
        Tree
            The finished (pruned) draft tree.
        """
        return build_dynamic(pair, cfg, chooser, cache)

    def builder(self, pair, cache: ExpansionCache | None = None):
        """A function ``chooser -> Tree`` building this method's draft tree on ``pair``.

        Parameters
        ----------
        pair : ToyPair or SyntheticPair
            The target and draft laws (the pair protocol of :mod:`rheotheory.pairs`).
        cache : ExpansionCache, optional
            Ranked draft laws shared by the trees built on ``pair``; default: a new one, shared by
            every tree this builder builds.

        Returns
        -------
        callable
            ``build(chooser) -> Tree`` (:meth:`build_tree` with this method's config).
        """
        cfg = self.config()
        cache = cache or ExpansionCache(pair)
        return lambda chooser: self.build_tree(pair, cfg, chooser, cache)

    def fit(self, **changes) -> "DynamicMethod":
        """``changes`` applied; an integer head above the new K - 1 is lowered to it.

        Parameters
        ----------
        **changes : object
            Field name -> new value.

        Returns
        -------
        DynamicMethod
            The new method (validated by its constructor).
        """
        k = changes.get("top_k", self.top_k)
        head = getattr(self, "head", None)
        if "head" not in changes and isinstance(head, int) and isinstance(k, int) and head > k - 1:
            changes["head"] = max(0, k - 1)
        return super().fit(**changes)


@register
@dataclass(frozen=True)
class EagleMethod(DynamicMethod):
    """EAGLE-2/3: K deterministic top-ranked children per expansion, global prune to N
    (docs/theory.md section 2.1).

    Attributes
    ----------
    verifier : str, optional
        The verifier (default ``onehot``; also ``sequential``, ``ot``).
    top_k : int
        K: slots per expansion and nodes expanded per layer.
    depth : int
        D: tree depth (layers below the root).
    budget : int
        N: non-root nodes kept by the global prune.
    """

    family: ClassVar[str] = "eagle"
    summary: ClassVar[str] = "EAGLE-2 dynamic top-K tree with global pruning (deterministic children)"

    top_k: int = top_k_option()
    depth: int = depth_option()
    budget: int = budget_option()

    def config(self) -> DynamicConfig:
        """The builder's configuration: K, D, N, every slot deterministic.

        Returns
        -------
        DynamicConfig
            ``DynamicConfig(top_k, depth, budget, sampled=False)``.
        """
        return DynamicConfig(self.top_k, self.depth, self.budget, sampled=False)


def _head_value(text):
    """``head`` as given: an integer, or ``K-1`` / ``K/2`` (resolved once K is known)."""
    if isinstance(text, str) and text.replace(" ", "").upper() in ("K-1", "K/2"):
        return text.replace(" ", "").upper()
    try:
        v = int(text)
    except (TypeError, ValueError):
        raise TreeError(f"head must be an integer, K-1 or K/2, got {text!r}") from None
    if v < 0:
        raise TreeError(f"head must be >= 0, got {text!r}")
    return v


@register
@dataclass(frozen=True)
class RheoMethod(DynamicMethod):
    """RheoSampling: m deterministic head slots, one slot sampled from the draft's tail scored by a
    proxy, K-1-m fillers (docs/theory.md section 2.2).

    Attributes
    ----------
    verifier : str, optional
        The verifier (default ``ot``; also ``onehot``, ``sequential``).
    top_k : int
        K: slots per expansion and nodes expanded per layer.
    depth : int
        D: tree depth (layers below the root).
    budget : int
        N: non-root nodes kept by the global prune.
    head : int or str, default "K-1"
        m, the deterministic head slots per expansion: an integer, ``"K-1"`` or ``"K/2"`` (the
        constructor resolves the last two against K).
    proxy : str, default "next"
        The score of the sampled slot, one of :data:`~rheotheory.trees.PROXIES`.
    fillers : str, default "rank"
        The slots after the sampled one when m < K-1, one of :data:`~rheotheory.trees.FILLERS`.
    greedy : str, default "same"
        The tree at T = 0: ``same``, or ``eagle`` (all slots deterministic; a greedy target accepts
        only its arg-max).
    """

    family: ClassVar[str] = "rheo"
    summary: ClassVar[str] = ("RheoSampling: m deterministic slots + one slot sampled from the tail, scored "
                              "by a proxy for expansion and pruning")
    verifiers: ClassVar[tuple[str, ...]] = ("ot", "onehot", "sequential")

    top_k: int = top_k_option()
    depth: int = depth_option()
    budget: int = budget_option()
    head: int | str = option("K-1", help="deterministic head slots m per expansion: an integer, K-1 or K/2",
                             label="head", parse=_head_value, metavar="M", examples=("K-1", "K/2", 0, 1, 2))
    proxy: str = option("next", help="score of the sampled slot", choices=PROXIES)
    fillers: str = option("rank", help="slots after the sampled one when m < K-1", choices=FILLERS)
    greedy: str = option("same", help="tree at T = 0: same, or eagle (all slots deterministic; a greedy "
                         "target accepts only its arg-max)", choices=("same", "eagle"))

    def validate(self) -> None:
        """Resolve ``head`` against K, check ``greedy``, then the sizes and the builder's checks.

        Raises
        ------
        TreeError
            ``head`` is not an integer >= 0, ``K-1`` or ``K/2``, ``greedy`` is neither ``same`` nor
            ``eagle``, or a size or the builder's configuration is invalid.
        """
        head = _head_value(self.head)
        if isinstance(self.top_k, int) and isinstance(head, str):
            head = self.top_k - 1 if head == "K-1" else self.top_k // 2
        object.__setattr__(self, "head", head)
        if self.greedy not in ("same", "eagle"):
            raise TreeError(f"greedy must be same or eagle, got {self.greedy!r}")
        super().validate()

    def config(self) -> DynamicConfig:
        """The builder's configuration: K, D, N, one sampled slot, the head, proxy and fillers.

        Returns
        -------
        DynamicConfig
            ``DynamicConfig(top_k, depth, budget, sampled=True, head=..., proxy=..., fillers=...)``.
        """
        return DynamicConfig(self.top_k, self.depth, self.budget, sampled=True, head=self.head, proxy=self.proxy,
                             fillers=self.fillers)

    def at_temperature(self, temperature: float) -> Method:
        """The method run at target temperature T: the EAGLE tree of the same size at T = 0 with
        ``greedy=eagle``, else this method.

        Parameters
        ----------
        temperature : float
            The target's sampling temperature T (0: greedy).

        Returns
        -------
        Method
            An :class:`EagleMethod` (its default verifier, ``onehot``) or ``self``.
        """
        if temperature == 0 and self.greedy == "eagle":
            return EagleMethod(top_k=self.top_k, depth=self.depth, budget=self.budget)
        return self

    def known_lossy(self) -> str | None:
        """Why this method is known to be lossy (docs/theory.md section 8), or None.

        Returns
        -------
        str or None
            The ``true`` proxy with any verifier but ``onehot``; the ``tail`` or ``min-best-tail``
            proxy with ``sequential``; else :meth:`Method.known_lossy`.
        """
        if self.proxy == "true" and self.verifier != "onehot":
            return "the true proxy lets the sampled token's identity decide which nodes survive the prune"
        if self.proxy in ("tail", "min-best-tail") and self.verifier == "sequential":
            return (f"the {self.proxy} proxy with the sequential verifier: a sampled subtree can push a "
                    "deterministic sibling out of the budget")
        return super().known_lossy()
