r"""Planted bugs: for every registered verifier, realistic mutants a lossless test must catch.

A lossless test that has never rejected anything proves little. Each registered verifier
(the per-node rules of :data:`~rheotheory.verify.rules.VERIFIERS` and the tree-level verifiers
of :data:`~rheotheory.verify.walk.TREE_VERIFIERS`) has here at least one *mutant*: the real rule
with one step changed the way an implementation typically goes wrong (a skipped residual update,
a wrong member law, an off-by-one in the path weight). Mutants reuse the real code (a keyword
of the rule, a subclass overriding one step, a wrapper); none is ever registered.

:data:`MUTANTS` maps a verifier name to its mutants; ``tests/test_mutants.py`` requires every
registered verifier to have one, certifies each with the exact certifier (non-zero deviation,
where the real verifier has exactly 0) and rejects each with the Monte-Carlo test at V = 32k;
``simulations/mutant_table.py`` tabulates the same. A planted method (:func:`planted`) is the
real method with its tree verifier replaced, so the builder, the exact certifier
(:func:`rheotheory.exact.certify`), Monte Carlo (:func:`rheotheory.stats.lossless_test`) and the
decoder (``verifier=``) all run the mutant unchanged.

No hypothesis import here: the decoding checks use these without the ``dev`` extra.

>>> from rheotheory import certify, random_pair
>>> from rheotheory.methods import make_method
>>> method = make_method("chain", depth=2, verifier="sequential")
>>> pair = random_pair(3, 3, seed=0)
>>> certify(pair, method).max_deviation
Fraction(0, 1)
>>> certify(pair, planted(method, MUTANTS["sequential"][0])).max_deviation > 0
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from ..verify.block import BlockVerifier, ratio_weight, residual_step
from ..verify.gbv import GreedyBlockVerifier, max_of_k_law
from ..verify.rules import Candidate, Transition, kseq, onehot, ot, ot_wor, sequential
from ..verify.traversal import TraversalVerifier
from ..verify.traversal_ot import TraversalOTVerifier
from ..verify.walk import PerNodeWalk, TreeVerifier

__all__ = ["Mutant", "MUTANTS", "planted", "mutants_of", "keep_target", "emit_target", "onehot_keep_rejected",
           "sequential_skip_residual", "kseq_skip_residual", "ot_skip_residual", "ot_wor_skip_residual",
           "first_law_for_all", "SkipResidualBlock", "TokenRatioBlock", "SkipResidualTraversal",
           "TokenRatioTraversal", "SkipResidualTraversalOT", "PlainDraftGBV", "SkipResidualGBV", "Case", "cases", "CASE_METHODS", "missing_mutants",
           "peeking_chain", "PeekingPolicy"]


# -- per-node rules ------------------------------------------------------------------------------

def keep_target(p, law):
    r"""The skipped residual update: after a rejected candidate drawn from ``law`` the node keeps
    ``p`` (# [vocab]) instead of :math:`\mathrm{norm}((p - L)_+)`.

    A drop-in ``residual`` argument of the real rules.

    Parameters
    ----------
    p : numpy.ndarray of shape (V,), Fractions or float64
        The node's current target law # [vocab].
    law : numpy.ndarray of shape (V,), Fractions or float64
        The member law L # [vocab] of the rejected candidate (ignored).

    Returns
    -------
    numpy.ndarray of shape (V,)
        ``p`` itself.
    """
    return p


def emit_target(rule: Callable[..., Transition]) -> Callable[..., Transition]:
    """``rule`` whose node, once every candidate is rejected, emits from the untouched target
    ``p`` instead of the rule's residual law (the skipped update, for rules with no
    ``residual`` keyword); the continuation probabilities are the real rule's.

    Parameters
    ----------
    rule : callable
        A per-node rule ``rule(p, cands) -> Transition``.

    Returns
    -------
    callable
        The mutant rule ``(p, cands) -> Transition``, named ``<rule>_emit_target``: its emission is
        ``(1 - sum(cont)) * p``.
    """

    def mutant(p, cands):
        tr = rule(p, cands)
        return Transition(tr.cont, (1 - sum(tr.cont)) * p)

    mutant.__name__ = f"{rule.__name__}_emit_target"
    return mutant


#: onehot that never zeroes a rejected token: the final emission is from ``p`` itself.
onehot_keep_rejected = emit_target(onehot)
onehot_keep_rejected.__doc__ = "onehot whose rejected tokens stay in the emitted law (p, not p without them)."

#: kseq with the residual draw replaced by a draw from ``p``.
kseq_skip_residual = emit_target(kseq)
kseq_skip_residual.__doc__ = "kseq whose node emits from p, not SpecTr's residual, after k rejections."


def sequential_skip_residual(p, cands: Sequence[Candidate]) -> Transition:
    """:func:`~rheotheory.verify.rules.sequential` with :func:`keep_target` as the residual.

    Parameters
    ----------
    p : numpy.ndarray of shape (V,), Fractions or float64
        The target law at the node # [vocab].
    cands : sequence of Candidate
        The node's candidates, in verification order.

    Returns
    -------
    Transition
        The mutant's continuation probabilities # [num_candidates] and emission law # [vocab].
    """
    return sequential(p, cands, residual=keep_target)


def ot_skip_residual(p, cands: Sequence[Candidate]) -> Transition:
    """:func:`~rheotheory.verify.rules.ot` drawing ``Y`` from ``p`` instead of the residual after
    the sampled candidate is rejected (the decoding tests' planted bug, ``verifier=``).

    Parameters
    ----------
    p : numpy.ndarray of shape (V,), Fractions or float64
        The target law at the node # [vocab].
    cands : sequence of Candidate
        The node's candidates: deterministic ones and at most one sampled.

    Returns
    -------
    Transition
        The mutant's continuation probabilities # [num_candidates] and emission law # [vocab].
    """
    return ot(p, cands, residual=keep_target)


def ot_wor_skip_residual(p, cands: Sequence[Candidate]) -> Transition:
    """:func:`~rheotheory.verify.rules.ot_wor` with :func:`keep_target` as the residual.

    Parameters
    ----------
    p : numpy.ndarray of shape (V,), Fractions or float64
        The target law at the node # [vocab].
    cands : sequence of Candidate
        The node's candidates: deterministic ones and samples drawn without replacement.

    Returns
    -------
    Transition
        The mutant's continuation probabilities # [num_candidates] and emission law # [vocab].
    """
    return ot_wor(p, cands, residual=keep_target)


def first_law_for_all(rule: Callable[..., Transition]) -> Callable[..., Transition]:
    """``rule`` given the wrong member laws: every sampled candidate is verified against the law
    of the first sampled one (without replacement: the draft before any removal, as if the draws
    were i.i.d.), instead of the law it was drawn from.

    Parameters
    ----------
    rule : callable
        A per-node rule ``rule(p, cands) -> Transition``.

    Returns
    -------
    callable
        The mutant rule ``(p, cands) -> Transition``, named ``<rule>_first_law_for_all``.
    """

    def mutant(p, cands):
        first = next((c.law for c in cands if c.law is not None), None)
        return rule(p, [c if c.law is None else Candidate(c.token, first) for c in cands])

    mutant.__name__ = f"{rule.__name__}_first_law_for_all"
    return mutant


# -- tree-level verifiers ------------------------------------------------------------------------

def _skip_residual_step(a, P, Q):
    """:func:`~rheotheory.verify.block.residual_step` keeping ``P`` instead of norm((a P - Q)+)."""
    return residual_step(a, P, Q)[0], P


def _token_ratio(a, P, Q, x):
    """The path weight without the parent's weight: min(1, P(x)/Q(x)), not min(1, a P(x)/Q(x))."""
    return ratio_weight(a * 0 + 1, P, Q, x)


class SkipResidualBlock(BlockVerifier):
    """Block verification emitting from the target law, not norm(R_i), below a rejected node."""

    name = "block-skip-residual"
    state_after_rejection = staticmethod(_skip_residual_step)


class TokenRatioBlock(BlockVerifier):
    """Block verification whose weights forget the cumulative ratio (token-level ratios)."""

    name = "block-token-ratio"
    path_weight = staticmethod(_token_ratio)


class SkipResidualTraversal(TraversalVerifier):
    """Traversal Verification whose parent keeps its target law after a rejected child instead of
    the residual norm((a P - Q)+), the tree-level analogue of :func:`ot_skip_residual`."""

    name = "traversal-skip-residual"
    state_after_rejection = staticmethod(_skip_residual_step)


class TokenRatioTraversal(TraversalVerifier):
    """Traversal Verification whose entry weights forget the parent's weight."""

    name = "traversal-token-ratio"
    path_weight = staticmethod(_token_ratio)


class SkipResidualTraversalOT(TraversalOTVerifier):
    """``traversal-ot`` with the skipped residual update of :class:`SkipResidualTraversal`."""

    name = "traversal-ot-skip-residual"
    state_after_rejection = staticmethod(_skip_residual_step)


def _plain_draft(Q, alpha, k, order):
    """GBV's skewed draft replaced by the draft itself: the selection's skew is forgotten."""
    law, lo, hi = max_of_k_law(Q, alpha, k, order)
    return Q, lo, hi


class PlainDraftGBV(GreedyBlockVerifier):
    """GBV verifying the selected path against the draft ``q``, not the law of the best of K paths."""

    name = "gbv-plain-draft"
    skewed_law = staticmethod(_plain_draft)


class SkipResidualGBV(GreedyBlockVerifier):
    """GBV emitting from the target law, not norm(R_i), below a rejected node of the selected path."""

    name = "gbv-skip-residual"
    state_after_rejection = staticmethod(_skip_residual_step)


# -- the catalogue -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Mutant:
    """One planted bug of one registered verifier.

    Attributes
    ----------
    verifier : str
        The registered verifier it breaks.
    name : str
        Short name of the bug, unique per verifier.
    bug : str
        One line: what the mutant does wrong.
    tree_verifier : TreeVerifier
        The mutant as a tree verifier (never registered).
    """

    verifier: str  # the registered verifier it breaks
    name: str  # short name of the bug, unique per verifier
    bug: str  # one line: what the mutant does wrong
    tree_verifier: TreeVerifier  # the mutant as a tree verifier (never registered)

    @property
    def label(self) -> str:
        """``verifier/name``, how tables and test ids call it."""
        return f"{self.verifier}/{self.name}"

    @property
    def rule(self) -> Callable[..., Transition] | None:
        """The mutant per-node rule (for ``verifier=`` of the decoder), None for a tree-level one."""
        return self.tree_verifier.rule if isinstance(self.tree_verifier, PerNodeWalk) else None


def _per_node(verifier: str, name: str, bug: str, rule: Callable[..., Transition]) -> Mutant:
    return Mutant(verifier, name, bug, PerNodeWalk(rule, f"{verifier}-{name}"))


_SKIP = "skip-residual"
_SKIP_BUG = "after a rejection the target law is kept instead of the residual norm((p - L)+)"

#: Registered verifier name -> its mutants (the first is the one tests use by default).
MUTANTS: dict[str, tuple[Mutant, ...]] = {
    "onehot": (
        _per_node("onehot", "keep-rejected", "rejected tokens are not zeroed: the node emits from p",
                  onehot_keep_rejected),
    ),
    "sequential": (
        _per_node("sequential", _SKIP, _SKIP_BUG, sequential_skip_residual),
    ),
    "rrs": (
        _per_node("rrs", _SKIP, _SKIP_BUG, sequential_skip_residual),
    ),
    "rrs-wor": (
        _per_node("rrs-wor", _SKIP, _SKIP_BUG, sequential_skip_residual),
        _per_node("rrs-wor", "iid-member-law", "draws without replacement verified against the unrestricted "
                  "draft (the member law of an i.i.d. draw)", first_law_for_all(sequential)),
    ),
    "kseq": (
        _per_node("kseq", _SKIP, "after k rejections the node emits from p, not SpecTr's residual",
                  kseq_skip_residual),
    ),
    "ot": (
        _per_node("ot", _SKIP, "after the sample is rejected Y is drawn from p, not norm((p - L)+)",
                  ot_skip_residual),
    ),
    "ot-wor": (
        # NOTE: first_law_for_all(ot_wor) is caught exactly but not by the V = 32k test at N = 500
        # (p = 0.03 with a head, the second sample's law differs little): not listed.
        _per_node("ot-wor", _SKIP, _SKIP_BUG, ot_wor_skip_residual),
    ),
    "block": (
        Mutant("block", _SKIP, "below a rejected node Y is drawn from the target law, not norm(R_i)",
               SkipResidualBlock()),
        Mutant("block", "token-ratio", "path weights min(1, P/Q) forget the cumulative ratio a_{i-1}",
               TokenRatioBlock()),
    ),
    "traversal": (
        Mutant("traversal", _SKIP, "after a rejected child the parent keeps its law, not norm((a P - Q)+)",
               SkipResidualTraversal()),
        Mutant("traversal", "token-ratio", "entry weights min(1, P/Q) forget the parent's weight a_v",
               TokenRatioTraversal()),
    ),
    "gbv": (
        Mutant("gbv", "plain-draft", "the selected path is verified against q, not the law of the best of K i.i.d. "
               "paths", PlainDraftGBV()),
        Mutant("gbv", _SKIP, "below a rejected node Y is drawn from the target law, not norm(R_i)",
               SkipResidualGBV()),
    ),
    "traversal-ot": (
        Mutant("traversal-ot", _SKIP, "after a rejected child the parent keeps its law, not norm((a P - Q)+)",
               SkipResidualTraversalOT()),
    ),
}


def mutants_of(verifier: str) -> tuple[Mutant, ...]:
    """The mutants of a registered verifier (empty for one that has none: a test fails on that).

    Parameters
    ----------
    verifier : str
        A registered verifier name.

    Returns
    -------
    tuple of Mutant
        Its mutants from :data:`MUTANTS`, the default one first; ``()`` when it has none.
    """
    return MUTANTS.get(verifier, ())


def planted(method, mutant: Mutant | TreeVerifier):
    """``method`` with its tree verifier replaced by ``mutant`` (a :class:`Mutant` or any
    :class:`~rheotheory.verify.walk.TreeVerifier`): same family, fields and builder, so every
    evaluation that reads ``method.tree_verifier`` runs the bug.

    Parameters
    ----------
    method : Method
        The real method.
    mutant : Mutant or TreeVerifier
        The bug to plant.

    Returns
    -------
    Method
        An instance of a subclass ``Planted<Class>`` of the method's class, with the same fields.
    """
    tv = mutant.tree_verifier if isinstance(mutant, Mutant) else mutant
    cls = type(method)
    planted_cls = type(f"Planted{cls.__name__}", (cls,), {"tree_verifier": property(lambda self: tv),
                                                          "__module__": __name__})
    return planted_cls(**method.fields())


# -- where each mutant is run --------------------------------------------------------------------

#: The exact instances: ``random_pair(EXACT_VOCAB, depth + 1, seed)`` for each seed (horizon one
#: past the depth, so every output length 1..D+1 is checked), exact rationals.
EXACT_VOCAB, EXACT_SEEDS = 3, (0, 1, 2)

#: The Monte-Carlo test (``rheo mc``'s code path, :func:`rheotheory.stats.lossless_test`): a
#: V = 32k synthetic pair, sampling seed, steps. Alpha is the project's
#: (:data:`rheotheory.stats.DEFAULT_ALPHA`).
MC_VOCAB, MC_PAIR_SEED, MC_SEED, MC_SAMPLES = 32_000, 0, 0, 500

#: Per verifier: a method of a family it is admitted for (and certified lossless on), as a spec
#: with its tree size (K, D, N). Small trees keep the exact and the V = 32k runs fast.
#: Adaptive RheoSampling switches trees by temperature; ``off`` keeps the one tree at T = 1.
_ADAPTIVE_FIXED = ":greedy=same:eagle_below=off:below=same:sampled_from=off"
CASE_METHODS: dict[str, tuple[str, tuple[int, int, int]]] = {
    "onehot": ("eagle", (2, 2, 4)),
    "sequential": ("chain", (2, 2, 4)),
    "rrs": ("static:sampling=iid:verifier=rrs", (2, 2, 4)),
    "rrs-wor": ("static:sampling=wor:verifier=rrs-wor", (2, 2, 4)),
    "kseq": ("static:sampling=iid:verifier=kseq", (2, 2, 4)),
    "ot": ("rheo:head=1:proxy=next:verifier=ot", (2, 2, 4)),
    "ot-wor": ("adaptive:head=1:proxy=tail:verifier=ot-wor" + _ADAPTIVE_FIXED, (3, 2, 5)),
    "block": ("chain:verifier=block", (2, 2, 4)),
    "traversal": ("static:sampling=wor:verifier=traversal", (2, 2, 4)),
    "gbv": ("multichain:sampling=iid:verifier=gbv", (2, 2, 4)),
    "traversal-ot": ("adaptive:head=0:proxy=tail:verifier=traversal-ot" + _ADAPTIVE_FIXED, (3, 2, 5)),
}

#: The synthetic pair of the Monte-Carlo test: ``high`` mismatch with the default sparse draft
#: (top 128) rejects often, so a wrong residual shows; a wrong member law of draws without
#: replacement shows when the first draw removes much mass: ``low`` mismatch, a top-4 draft.
MC_PAIRS = {"residual": ("high", 128), "member-law": ("low", 4)}
#: The mutants whose bug is a wrong member law (run on the ``member-law`` pair): draws without
#: replacement read as i.i.d., and GBV's selected path read as a plain draft (the best of K draws
#: from a top-4 draft is far from one draw).
MEMBER_LAW_BUGS = frozenset({"iid-member-law", "plain-draft"})


@dataclass(frozen=True)
class Case:
    """One mutant with the method it is run in and the synthetic pair of its Monte-Carlo test.

    Attributes
    ----------
    mutant : Mutant
        The planted bug.
    spec : str
        The method spec (preset or family with options), sized by ``size``.
    size : tuple of int
        (K, D, N).
    mismatch : str
        Synthetic pair: draft mismatch level (a name of
        :data:`~rheotheory.synthetic.MISMATCH_LEVELS`).
    draft_top_k : int
        Synthetic pair: sparse draft size.
    """

    mutant: Mutant
    spec: str  # the method spec (preset or family with options), sized by ``size``
    size: tuple  # (K, D, N)
    mismatch: str  # synthetic pair: draft mismatch level
    draft_top_k: int  # synthetic pair: sparse draft size

    @property
    def method(self):
        """The real method (the mutant is :func:`planted` into it), as ``rheo mc`` runs it at T = 1."""
        from ..methods import resolve

        return resolve(self.spec, size=self.size).at_temperature(1.0)

    def exact_pairs(self) -> list:
        """The exact instances (see :data:`EXACT_SEEDS`).

        Returns
        -------
        list of ToyPair
            ``random_pair(EXACT_VOCAB, depth + 1, seed)`` for each seed of :data:`EXACT_SEEDS`, exact.
        """
        from ..pairs import random_pair

        return [random_pair(EXACT_VOCAB, self.method.depth + 1, seed=s) for s in EXACT_SEEDS]

    def mc_pair(self):
        """The V = 32k synthetic pair of ``rheo mc --mismatch M --sparse K`` (pair seed 0, T = 1).

        Returns
        -------
        SyntheticPair
            V = :data:`MC_VOCAB`, seed :data:`MC_PAIR_SEED`, the case's mismatch and draft top-k.
        """
        from ..synthetic import SyntheticPair, mismatch_value

        return SyntheticPair(MC_VOCAB, seed=MC_PAIR_SEED, mismatch=mismatch_value(self.mismatch),
                             draft_top_k=self.draft_top_k)


def cases() -> list[Case]:
    """Every mutant of :data:`MUTANTS` in the method of its verifier (:data:`CASE_METHODS`).

    A mutant whose bug is a wrong member law (:data:`MEMBER_LAW_BUGS`) is tested on the
    ``member-law`` pair of :data:`MC_PAIRS`, every other on the ``residual`` pair.

    Returns
    -------
    list of Case
        One case per mutant, in the order of :data:`MUTANTS`.
    """
    out = []
    for verifier, mutants in MUTANTS.items():
        spec, size = CASE_METHODS[verifier]
        for m in mutants:
            mismatch, top_k = MC_PAIRS["member-law" if m.name in MEMBER_LAW_BUGS else "residual"]
            out.append(Case(m, spec, size, mismatch, top_k))
    return out


def missing_mutants() -> list[str]:
    """Registered verifiers (per-node and tree-level) with no mutant or no case method: each is
    a verifier no lossless test has been shown to catch when broken. A verifier registered as lossy
    (:attr:`~rheotheory.verify.walk.TreeVerifier.lossy`) needs none: there is no lossless rule to break.

    Returns
    -------
    list of str
        Their names (empty when every registered verifier is covered).
    """
    from ..verify.rules import VERIFIERS
    from ..verify.walk import TREE_VERIFIERS

    return [n for n in [*VERIFIERS, *TREE_VERIFIERS] if (not MUTANTS.get(n) or n not in CASE_METHODS)
            and not getattr(TREE_VERIFIERS.get(n), "lossy", None)]


# -- a step policy that peeks (docs/theory.md section 2.8) ---------------------------------------

def _peeking_chain():
    """The class of :func:`peeking_chain` (built on first use: the methods registry imports late)."""
    from ..methods import ChainMethod
    from ..trees import build_static

    class PeekingChain(ChainMethod):
        """A chain whose step looks at its first drafted token and, unless it is the draft's arg-max
        at the root, runs the autoregressive arm instead (a root with no draft): the arm is picked
        after the step's own draw, so the draw's law no longer is q."""

        def builder(self, pair, cache=None):
            real = super().builder(pair, cache)

            def build(chooser):
                tree = real(chooser)
                if tree.nodes[1].token is None:
                    tree.resolve(1, chooser)
                q = list(pair.q(()))
                if tree.nodes[1].token != q.index(max(q)):
                    return build_static(pair, [], "iid", chooser)
                return tree

            return build

        def run_key(self) -> str:
            return "peeking " + super().run_key()

        def describe(self) -> str:
            return "peeking " + super().describe()

    PeekingChain.__module__ = __name__
    return PeekingChain


def peeking_chain(depth: int):
    """The chain of ``depth`` that peeks at its first draw (never registered).

    Unless its first drafted token is the draft's arg-max at the root, the step runs the
    autoregressive arm instead (a root with no draft); each arm is lossless, the composition is not.

    Parameters
    ----------
    depth : int
        The chain's depth D >= 1.

    Returns
    -------
    Method
        A ``PeekingChain``, a subclass of the chain method with the ``sequential`` verifier.
    """
    return _peeking_chain()(depth=depth, verifier="sequential")


@dataclass(frozen=True)
class PeekingPolicy:
    """The planted step policy of docs/theory.md section 2.8: step 1 runs a chain of ``depth``;
    every later step chooses between that chain and autoregressive decoding *after* seeing the
    chain's first draft sample (:func:`peeking_chain`). Each arm is lossless; the choice reads the
    current step's draw, and the exact n-step certifier (:func:`rheotheory.exact.certify_steps`)
    finds the composition lossy.

    Attributes
    ----------
    depth : int
        The chain's depth D.
    step : int, default 0
        The index of the step this policy chooses for (0: the first step).
    """

    depth: int
    step: int = 0
    reads_root = False

    def choose(self, root_q=None):
        """The method of this step: the plain chain at step 0, the peeking chain afterwards.

        Parameters
        ----------
        root_q : numpy.ndarray of shape (V,), optional
            The draft's root law; not read (:attr:`reads_root` is False).

        Returns
        -------
        Method
            ``make_method("chain", depth=depth)`` at step 0, else :func:`peeking_chain`.
        """
        from ..methods import make_method

        return make_method("chain", depth=self.depth) if self.step == 0 else peeking_chain(self.depth)

    def after(self, method, z) -> "PeekingPolicy":
        """The policy of the next step, once this step ran ``method`` and emitted ``z``.

        Parameters
        ----------
        method : Method
            The method this step ran (not read).
        z : tuple of int
            The step's output (not read).

        Returns
        -------
        PeekingPolicy
            The same depth, ``step + 1``.
        """
        return PeekingPolicy(self.depth, self.step + 1)
