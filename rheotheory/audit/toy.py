"""Seeded toy laws for driving a verifier: position- and prefix-dependent, with what breaks verifiers.

A :class:`ToyLaws` is a target ``p`` and a draft ``q`` over a small vocabulary whose law after a
prefix ``u`` (the tokens generated so far) is drawn afresh for every ``u`` from a generator
seeded with ``(seed, role, *u)``: reproducible, different at every position and after every
prefix, and never stored as a table (laws are computed on first use and cached).

Families (:data:`FAMILIES`), each a way verifiers are known to break:

- ``generic``: Dirichlet(0.7) laws with about a quarter of the tokens at exactly 0 in each of
  ``p`` and ``q`` (the draft proposes tokens the target forbids and misses tokens it allows);
- ``ties``: laws made of small integers (0, 1, 2) normalised: exact ties everywhere, for
  verifiers that sort or take an arg-max;
- ``peaked``: half the laws near-one-hot (one token holds :data:`PEAK_MASS` = 0.99), the
  others Dirichlet(1), drawn independently for ``p`` and ``q`` (so their peaks mostly differ);
- ``disjoint``: ``p`` and ``q`` each on a random subset of 2-3 tokens, overlapping or not (a
  draft whose support differs from the target's);
- ``greedy``: ``generic`` laws, but the draft is deterministic (its arg-max, the lowest id on a
  tie): the draft law handed to the verifier is then ``None`` (chain) or one-hot (tree).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["FAMILIES", "ToyLaws", "DEFAULT_VOCAB", "PEAK_MASS"]

#: Law families, in the order the harness cycles through them (module docstring).
FAMILIES = ("generic", "ties", "peaked", "disjoint", "greedy")

#: Vocabulary of the toy laws: small enough that the law of L <= 6 tokens has few cells per run
#: budget, large enough for zeros, ties and partial supports to coexist.
DEFAULT_VOCAB = 5

#: Mass of the peak of a ``peaked`` law.
PEAK_MASS = 0.99

_ROLE = {"p": 0, "q": 1}


def _law(family: str, role: str, rng: np.random.Generator, vocab: int) -> np.ndarray:
    if family in ("generic", "greedy"):
        w = rng.dirichlet(np.full(vocab, 0.7))
        w[rng.random(vocab) < 0.25] = 0.0
    elif family == "ties":
        w = rng.integers(0, 3, size=vocab).astype(np.float64)
    elif family == "peaked":
        w = rng.dirichlet(np.ones(vocab))
        if rng.random() < 0.5:  # NOTE: half the laws only, so that the sequences keep cells to test
            w *= 1.0 - PEAK_MASS
            w[int(rng.integers(vocab))] += PEAK_MASS
    elif family == "disjoint":
        w = np.zeros(vocab)
        support = rng.choice(vocab, size=int(rng.integers(2, 4)), replace=False)
        w[support] = rng.dirichlet(np.ones(len(support)))
    else:  # pragma: no cover - FAMILIES is checked by the caller
        raise ValueError(family)
    if w.sum() <= 0:  # NOTE: every token drawn at 0: keep one, so that the law exists
        w[int(rng.integers(vocab))] = 1.0
    return w / w.sum()


@dataclass
class ToyLaws:
    """Target and draft laws after every prefix (module docstring); ``p(u)``, ``q(u)``: ``# [V]``.

    Attributes
    ----------
    family : str
        One of :data:`FAMILIES`.
    seed : int
        The laws' seed (the harness derives one per setting).
    vocab : int, default DEFAULT_VOCAB
        ``V``, the size of the vocabulary the laws are over.
    _cache : dict, optional
        The laws computed so far, ``(role, prefix) -> numpy.ndarray of shape (V,)``; filled on
        first use (left to its default: an empty dict).

    Raises
    ------
    ValueError
        ``family`` is not one of :data:`FAMILIES`.

    Examples
    --------
    >>> laws = ToyLaws("generic", seed=0)
    >>> laws.p((1, 2)).shape
    (5,)
    >>> bool(abs(laws.q(()).sum() - 1.0) < 1e-12), laws.p((1, 2)) is laws.p([1, 2])
    (True, True)
    """

    family: str  # one of FAMILIES
    seed: int  # the laws' seed (the harness derives one per setting)
    vocab: int = DEFAULT_VOCAB
    _cache: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        if self.family not in FAMILIES:
            raise ValueError(f"unknown family {self.family!r}; one of {FAMILIES}")

    def law(self, role: str, prefix: tuple) -> np.ndarray:
        """The law of ``role`` after ``prefix``, drawn from the seed ``(seed, role, len(prefix), *prefix)``
        on first use, then cached.

        Parameters
        ----------
        role : str
            ``"p"`` (the target) or ``"q"`` (the draft).
        prefix : tuple of int
            ``u``, the tokens generated so far (a tuple: it is the cache key).

        Returns
        -------
        numpy.ndarray of shape (V,)
            float64, summing to 1 (the cached array itself).

        Raises
        ------
        KeyError
            ``role`` is neither ``"p"`` nor ``"q"``.
        """
        key = (role, prefix)
        got = self._cache.get(key)
        if got is None:
            rng = np.random.default_rng([int(self.seed), _ROLE[role], len(prefix), *map(int, prefix)])
            got = self._cache[key] = _law(self.family, role, rng, self.vocab)
        return got

    def p(self, prefix: tuple) -> np.ndarray:
        """The target law after ``prefix``.

        Parameters
        ----------
        prefix : sequence of int
            ``u``, the tokens generated so far.

        Returns
        -------
        numpy.ndarray of shape (V,)
            ``p(. | u)``, float64.
        """
        return self.law("p", tuple(prefix))

    def q(self, prefix: tuple) -> np.ndarray:
        """The draft law after ``prefix``.

        Parameters
        ----------
        prefix : sequence of int
            ``u``, the tokens generated so far.

        Returns
        -------
        numpy.ndarray of shape (V,)
            ``q(. | u)``, float64.
        """
        return self.law("q", tuple(prefix))

    @property
    def deterministic_draft(self) -> bool:
        """Whether the draft is its arg-max rather than a draw from ``q`` (the ``greedy`` family)."""
        return self.family == "greedy"

    def next_laws(self, prefixes: list) -> np.ndarray:
        """:data:`rheotheory.stats.NextLaws` of the target: ``# [len(prefixes), V]``.

        Parameters
        ----------
        prefixes : list of sequence of int
            The continuations ``u`` whose next-token target laws are asked for.

        Returns
        -------
        numpy.ndarray of shape (len(prefixes), V)
            Row ``i``: ``p(. | prefixes[i])``, float64.
        """
        return np.stack([self.p(tuple(u)) for u in prefixes])
