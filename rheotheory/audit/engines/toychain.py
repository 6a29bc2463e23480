"""Drive an engine's chain verification step by step with seeded toy laws, all runs in one batch.

The vLLM and SGLang adapters audit kernels that take probabilities, not models: the adapter
plays the drafter and the target model with a :class:`rheotheory.audit.toy.ToyLaws` pair, and
the engine's verification code does the rest. :func:`drive` runs ``n`` sequences at once, as
one batch of ``n`` requests per step (so that a kernel launch under Triton's interpreter is
paid once per step, not once per run):

1. each unfinished run drafts ``k`` tokens after its prefix ``z``: draws from the draft law
   (:meth:`Laws.draw`, the harness's own generator), or the draft's arg-max for a
   deterministic draft;
2. ``step(runs, prefixes, drafts)`` hands the batch to the engine and returns, per run, the
   tokens it emits (the accepted drafts, then one recovered or bonus token);
3. the answer is checked (an accepted prefix of the drafts, then one token in the vocabulary)
   and appended; runs stop once ``L`` tokens are out.

:class:`Laws` is a toy pair at a sampling temperature ``T``: the target the engine must sample
is ``p_T`` (:func:`rheotheory.audit.sampling.processed_law` of ``log p`` at ``T``), and the
drafter draws from ``q_T``, the law it reports as its draft probabilities. At ``T = 1`` these
are the toy laws themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ...errors import RheoError
from ..sampling import Sampling, processed_law
from ..toy import ToyLaws

__all__ = ["FixedLaws", "Laws", "drive", "run_seeds"]


@dataclass(frozen=True)
class FixedLaws:
    """A target and a draft law that are the same after every prefix, with the interface of
    :class:`rheotheory.audit.toy.ToyLaws`: a law written down for one part of a kernel (where a
    known bug deviates most), beside the seeded families.

    Attributes
    ----------
    family : str
        A label for the report.
    target : tuple
        ``p``, the same after every prefix: ``# [V]``.
    draft : tuple
        ``q``: ``# [V]``.
    deterministic_draft : bool, default False
        Whether the drafter takes the draft's arg-max rather than a draw from ``q``.
    """

    family: str  # a label for the report
    target: tuple  # p, the same after every prefix: # [V]
    draft: tuple  # q: # [V]
    deterministic_draft: bool = False

    @property
    def vocab(self) -> int:
        """``V``, the length of the target law."""
        return len(self.target)

    def law(self, role: str, prefix: tuple) -> np.ndarray:
        """The target or the draft law, the same whatever the prefix.

        Parameters
        ----------
        role : str
            ``"p"`` (the target); anything else is the draft.
        prefix : tuple of int
            ``u``, the tokens generated so far (ignored).

        Returns
        -------
        numpy.ndarray of shape (V,)
            float64.
        """
        return np.asarray(self.target if role == "p" else self.draft, dtype=np.float64)


@dataclass
class Laws:
    """A toy target/draft pair at temperature ``temperature`` (module docstring).

    Attributes
    ----------
    toy : rheotheory.audit.toy.ToyLaws or FixedLaws
        The laws at ``T = 1``.
    temperature : float, default 1.0
        ``T``, the sampling temperature the target and the draft are taken at.
    _cache : dict, optional
        The laws computed so far, ``(role, prefix) -> (law, cumulative sums)``, each a
        ``numpy.ndarray of shape (V,)``; filled on first use (left to its default: an empty dict).
    """

    toy: ToyLaws | FixedLaws
    temperature: float = 1.0
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def vocab(self) -> int:
        """``V``, the toy laws' vocabulary size."""
        return self.toy.vocab

    @property
    def deterministic_draft(self) -> bool:
        """Whether the drafter takes the draft's arg-max (the toy laws' ``deterministic_draft``)."""
        return self.toy.deterministic_draft

    def _get(self, role: str, u: tuple):
        key = (role, u)
        got = self._cache.get(key)
        if got is None:
            w = self.toy.law(role, u)  # [V] float64
            if self.temperature != 1.0:
                with np.errstate(divide="ignore"):
                    w = processed_law(np.log(w)[None], np.zeros((1, 1), dtype=np.int64),
                                      Sampling(temperature=self.temperature))[0]
            got = self._cache[key] = (w, np.cumsum(w))
        return got

    def p(self, u: tuple) -> np.ndarray:
        """Target law ``p_T`` after prefix ``u``: ``# [V]`` float64.

        Parameters
        ----------
        u : sequence of int
            The tokens generated so far.

        Returns
        -------
        numpy.ndarray of shape (V,)
            ``p_T(. | u)``, float64 (the cached array itself).
        """
        return self._get("p", tuple(u))[0]

    def q(self, u: tuple) -> np.ndarray:
        """Draft law ``q_T`` after prefix ``u``: ``# [V]`` float64.

        Parameters
        ----------
        u : sequence of int
            The tokens generated so far.

        Returns
        -------
        numpy.ndarray of shape (V,)
            ``q_T(. | u)``, float64 (the cached array itself).
        """
        return self._get("q", tuple(u))[0]

    def target_logits(self, u: tuple) -> np.ndarray:
        """Raw target logits after ``u`` (``log p``, ``-inf`` on zeros; before temperature): ``# [V]``.

        Parameters
        ----------
        u : sequence of int
            The tokens generated so far.

        Returns
        -------
        numpy.ndarray of shape (V,)
            ``log p(. | u)`` of the toy target at ``T = 1``, float32.
        """
        with np.errstate(divide="ignore"):
            return np.log(self.toy.law("p", tuple(u))).astype(np.float32)

    def draft_token(self, u: tuple, rng: np.random.Generator) -> int:
        """The drafter's token after ``u``: a draw from ``q_T``, or its arg-max (lowest id on a tie).

        Parameters
        ----------
        u : sequence of int
            The tokens generated so far (the drafts of this step included).
        rng : numpy.random.Generator
            The draft's generator (one uniform per draw; unused by an arg-max draft).

        Returns
        -------
        int
            A token id in ``0..V-1`` of positive draft mass.
        """
        w, c = self._get("q", tuple(u))
        if self.deterministic_draft:
            return int(np.argmax(w))
        x = min(int(np.searchsorted(c, rng.random() * c[-1], side="right")), len(c) - 1)
        while c[x] == (c[x - 1] if x else 0.0):  # NOTE: never a zero-mass token (a draw on a boundary)
            x -= 1
        return x

    def next_laws(self, prefixes: list) -> np.ndarray:
        """:data:`rheotheory.stats.NextLaws` of the target ``p_T``: ``# [len(prefixes), V]``.

        Parameters
        ----------
        prefixes : list of sequence of int
            The continuations ``u`` whose next-token target laws are asked for.

        Returns
        -------
        numpy.ndarray of shape (len(prefixes), V)
            Row ``i``: ``p_T(. | prefixes[i])``, float64.
        """
        return np.stack([self.p(tuple(u)) for u in prefixes])


#: ``step(runs, prefixes, drafts) -> tokens``: the engine verifies one batch (run indices,
#: their prefixes, their ``k`` drafted tokens each) and returns each run's emitted tokens.
Step = Callable[[list, list, list], list]


def drive(n: int, length: int, k: int, laws: Laws, rng: np.random.Generator, step: Step, where: str) -> list:
    """``n`` runs of ``length`` tokens, ``k`` drafted tokens per step (module docstring).

    Parameters
    ----------
    n : int
        Runs.
    length : int
        ``L``: each run stops once it has at least this many tokens.
    k : int
        Tokens drafted per step.
    laws : Laws
    rng : numpy.random.Generator
        The draft's generator.
    step : callable
        The engine's step (module docstring).
    where : str
        The setting's name (for the messages).

    Returns
    -------
    list of tuple
        ``n`` tuples of ``length`` token ids (each run cut to its first ``length`` tokens).

    Raises
    ------
    rheotheory.errors.RheoError
        ``step`` returns a number of outputs other than the batch's, or a run's tokens that are
        not an accepted prefix of its drafts followed by one token of the vocabulary.
    """
    runs = [()] * n
    while True:
        active = [i for i, z in enumerate(runs) if len(z) < length]
        if not active:
            return [z[:length] for z in runs]
        prefixes = [runs[i] for i in active]
        drafts = []
        for z in prefixes:
            u, d = z, []
            for _ in range(k):
                x = laws.draft_token(u, rng)
                d.append(x)
                u = u + (x,)
            drafts.append(d)
        outs = step(active, prefixes, drafts)
        if len(outs) != len(active):
            raise RheoError(f"{where}: the engine returned {len(outs)} outputs for a batch of {len(active)}")
        for i, d, toks in zip(active, drafts, outs):
            toks = [int(t) for t in toks]
            if not 1 <= len(toks) <= k + 1 or toks[:-1] != d[:len(toks) - 1] or not 0 <= toks[-1] < laws.vocab:
                raise RheoError(f"{where}: the engine emitted {toks} for the drafts {d}: expected an accepted "
                                f"prefix of the drafts, then one token of the vocabulary 0..{laws.vocab - 1}")
            runs[i] = runs[i] + tuple(toks)


def run_seeds(seed: int, index: int, n: int) -> tuple[np.random.Generator, list[int]]:
    """The harness's draft generator of setting ``index`` and ``n`` seeds for the engine's side
    (one per run, or the first for the whole setting).

    Parameters
    ----------
    seed : int
    index : int
    n : int

    Returns
    -------
    tuple
        ``(generator, seeds)``.
    """
    ss = np.random.SeedSequence([int(seed), int(index)])
    draft, engine = ss.spawn(2)
    return np.random.default_rng(draft), [int(s) for s in engine.generate_state(max(n, 1), dtype=np.uint64) >> 1]
