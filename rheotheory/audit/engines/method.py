"""A registered method, built-in or a plugin's, driven into the audit through its own code.

``rheo audit --method SPEC`` audits exactly what ``rheo certify`` certifies and ``rheo decode``
runs: the method's own builder, drawing through a :class:`~rheotheory.trees.RandomChooser`, and
its own tree verifier, walked with a :class:`~rheotheory.verify.walk.SampleBranch`, on the audit's
toy laws (:class:`~rheotheory.audit.toy.ToyLaws`: zeros, ties, near-one-hot laws, disjoint
supports), step after step from an empty prefix until ``L = D + 2`` tokens are out. Nothing is
re-implemented for the audit, so a plugin's rule is audited as it runs.

The planted companion is the method with its verifier replaced by that verifier's registered
mutant (:mod:`rheotheory.testing.mutants`), or, for a verifier without one (a plugin's), by the
same verifier walked against a target tempered by :data:`COMPANION_TEMPERATURE`: lossy whatever the
rule, through the same builder.
"""

from __future__ import annotations

import numpy as np

from ..core import Setting
from ..toy import DEFAULT_VOCAB, ToyLaws

__all__ = ["DEFAULT_RUNS", "SIZE", "LAW_FAMILIES", "COMPANION_TEMPERATURE", "ToyLawsPair", "method_settings", "audited_method"]

#: Runs per setting by default (four settings, and as many for the companion).
DEFAULT_RUNS = 1000

#: Tree size (K, D, N) a spec that leaves it open is audited at: K <= the toy vocabulary.
SIZE = (3, 2, 4)

#: The toy law families a method is audited on (each a setting); ``greedy`` is left out: its
#: deterministic draft is a harness convention for verifier functions, not a law a builder draws.
LAW_FAMILIES = ("generic", "ties", "peaked", "disjoint")

#: Temperature of the companion's wrong target (:func:`audited_method`).
COMPANION_TEMPERATURE = 0.6


class ToyLawsPair:
    """The toy laws seen after ``prefix`` as an LM pair (float64): ``p(u)``, ``q(u)`` after
    ``prefix + u``, ``# [V]``.

    Parameters
    ----------
    laws : rheotheory.audit.toy.ToyLaws
    prefix : tuple, default ()
        The tokens before the pair's root.
    """

    exact = False
    horizon = None

    def __init__(self, laws: ToyLaws, prefix: tuple = ()):
        self.laws, self.prefix = laws, tuple(prefix)
        self.vocab_size = laws.vocab

    def p(self, u) -> np.ndarray:
        """The target law after ``prefix + u``.

        Parameters
        ----------
        u : sequence of int
            The tokens after the pair's root.

        Returns
        -------
        numpy.ndarray of shape (V,)
            float64.
        """
        return self.laws.p(self.prefix + tuple(u))

    def q(self, u) -> np.ndarray:
        """The draft law after ``prefix + u``.

        Parameters
        ----------
        u : sequence of int
            The tokens after the pair's root.

        Returns
        -------
        numpy.ndarray of shape (V,)
            float64.
        """
        return self.laws.q(self.prefix + tuple(u))


class _TemperedTarget:
    """A tree verifier walked against ``norm(p^(1/T))`` instead of ``p`` (the generic companion)."""

    lossy = "walks a tempered target"

    def __init__(self, inner, temperature: float):
        self.inner, self.temperature = inner, temperature
        self.name = f"{inner.name}+tempered-target"

    def outcomes(self, tree, target, branch, weight=1, observe=None):
        def wrong(node, prefix):
            w = np.asarray(target(node, prefix), dtype=np.float64) ** (1.0 / self.temperature)  # [V]
            return w / w.sum()

        return self.inner.outcomes(tree, wrong, branch, weight=weight, observe=observe)


def audited_method(spec, planted: bool = False, size=SIZE):
    """The method ``spec`` resolves to (at ``size`` where it leaves the size open), or its planted
    companion (module docstring).

    Parameters
    ----------
    spec : str, dict or Method
        What :func:`rheotheory.methods.resolve` takes.
    planted : bool, default False
        The planted companion instead.
    size : tuple of int, default SIZE
        ``(K, D, N)`` for size fields the spec leaves open.

    Returns
    -------
    rheotheory.methods.Method
    """
    from ...methods import resolve
    from ...testing.mutants import mutants_of, planted as plant
    from ...verify.walk import TreeVerifier, method_tree_verifier

    method = resolve(spec, size=size)
    if not planted:
        return method
    mutants = mutants_of(method.verifier)
    if mutants:
        return plant(method, mutants[0])
    tv = method_tree_verifier(method)
    wrapped = type("TemperedTarget", (_TemperedTarget, TreeVerifier), {})(tv, COMPANION_TEMPERATURE)
    return plant(method, wrapped)


def _sampler(method, laws: ToyLaws, L: int, index: int):
    from ...montecarlo import sample_step

    def sample(n: int, seed: int):
        rng = np.random.default_rng([int(seed), index])
        out = []
        for _ in range(n):
            z: tuple = ()
            while len(z) < L:
                view = ToyLawsPair(laws, z)
                z = z + tuple(int(t) for t in sample_step(view, method, rng).z)
            out.append(z)
        return out

    return sample


def method_settings(spec, planted: bool = False, vocab: int = DEFAULT_VOCAB, seed: int = 0,
                    size=SIZE) -> list[Setting]:
    """One :class:`~rheotheory.audit.core.Setting` per toy law family: the method's own steps on
    those laws, and the exact target law of their first ``L = D + 2`` tokens.

    Parameters
    ----------
    spec : str, dict or Method
        What :func:`rheotheory.methods.resolve` takes, references to plugins included.
    planted : bool, default False
        Audit the planted companion instead (module docstring).
    vocab : int, default DEFAULT_VOCAB
        Vocabulary of the toy laws.
    seed : int, default 0
        Seed of the toy laws (one seed per setting is derived from it).
    size : tuple of int, default SIZE
        ``(K, D, N)`` for size fields the spec leaves open.

    Returns
    -------
    list of rheotheory.audit.core.Setting
    """
    method = audited_method(spec, planted, size)
    L = method.depth + 2
    out = []
    for index, family in enumerate(LAW_FAMILIES):
        laws = ToyLaws(family, int(np.random.SeedSequence([int(seed), index]).generate_state(1)[0]), vocab)
        out.append(Setting(f"{family} laws", L, laws.next_laws, _sampler(method, laws, L, index),
                           dict(method=method.to_dict(), laws=family, vocab=vocab, planted=bool(planted))))
    return out
