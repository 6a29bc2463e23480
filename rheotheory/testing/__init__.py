"""Hypothesis strategies for laws, toy pairs and candidate sets (shipped with the library so that
users can property-test their own verifiers against the same generators), and
:func:`check_method`, the contract a method from outside the package runs in its own tests.

Requires ``hypothesis`` (in the ``dev`` extra).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from fractions import Fraction

import numpy as np
from hypothesis import strategies as st

from .. import laws
from ..pairs import ToyPair, prefixes
from ..verify import Candidate
from .contract import MethodCheck, check_method

__all__ = ["hang_guard", "exact_laws", "law_pairs", "toy_pairs", "det_plus_sample", "iid_candidates", "wor_candidates",
           "methods", "check_method", "MethodCheck"]

@contextlib.contextmanager
def hang_guard(seconds: float, what: str = "the call"):
    """Fail (``AssertionError``) if the body is still running after ``seconds``: a hang detector
    for fuzz tests, not a speed target (POSIX main thread; elsewhere it only runs the body).

    A context manager, on ``SIGALRM``: the previous handler and timer are restored on exit.

    Parameters
    ----------
    seconds : float
        How long the body may run.
    what : str, default "the call"
        What to call the body in the failure message.

    Yields
    ------
    None
        Control to the body of the ``with`` block.

    Raises
    ------
    AssertionError
        In the body, once ``seconds`` have passed (``"<what> still ran after <seconds> s (a hang)"``).

    Examples
    --------
    >>> with hang_guard(5):
    ...     pass
    """
    if not hasattr(signal, "SIGALRM") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def fire(signum, frame):
        raise AssertionError(f"{what} still ran after {seconds:g} s (a hang)")

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


#: Largest integer weight used to build exact laws: small denominators keep proofs fast and
#: still produce every ordering/sign case of min/max.
MAX_WEIGHT = 9


@st.composite
def exact_laws(draw, vocab_size: int | None = None, min_vocab: int = 2, max_vocab: int = 5,
               allow_zeros: bool = True, min_support: int = 1):
    """An exact law (object array of Fractions) from small integer weights.

    The weights are integers from 0 (1 without zeros) to :data:`MAX_WEIGHT`, divided by their sum.

    Parameters
    ----------
    draw : callable
        Supplied by hypothesis (``st.composite``); callers leave it out.
    vocab_size : int, optional
        The vocabulary size V; drawn in ``min_vocab..max_vocab`` when None.
    min_vocab : int, default 2
        Smallest V drawn.
    max_vocab : int, default 5
        Largest V drawn.
    allow_zeros : bool, default True
        Let some tokens carry probability 0 (a degenerate case builders must skip).
    min_support : int, default 1
        Fewest tokens of positive probability (at most V).

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        Of ``numpy.ndarray of shape (V,), Fractions``: laws summing to exactly 1.
    """
    V = vocab_size if vocab_size is not None else draw(st.integers(min_vocab, max_vocab))
    lo = 0 if allow_zeros else 1
    w = draw(st.lists(st.integers(lo, MAX_WEIGHT), min_size=V, max_size=V))
    if sum(1 for x in w if x > 0) < min_support:
        idx = draw(st.permutations(range(V)))
        for i in idx[:min_support]:
            w[i] = max(w[i], 1)
    s = sum(w)
    return np.array([Fraction(x, s) for x in w], dtype=object)


@st.composite
def law_pairs(draw, min_vocab: int = 2, max_vocab: int = 5, allow_zeros: bool = True):
    r"""(p, q): two exact laws over one vocabulary; sometimes equal, sometimes disjoint-ish.

    The draft is, with equal chances among the kinds, an independent law, a copy of p, or a point
    mass on one token.

    Parameters
    ----------
    draw : callable
        Supplied by hypothesis (``st.composite``); callers leave it out.
    min_vocab : int, default 2
        Smallest vocabulary drawn.
    max_vocab : int, default 5
        Largest vocabulary drawn.
    allow_zeros : bool, default True
        Let some tokens carry probability 0 (in p, and in an independent q).

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        Of ``(p, q)``, two ``numpy.ndarray of shape (V,), Fractions``: target and draft.

    Examples
    --------
    A property test of the speculative-sampling identity :math:`\min(p, q) + (p - q)_+ = p`:

    >>> from hypothesis import given, settings
    >>> from rheotheory.laws import minimum, pos
    >>> @settings(max_examples=20, deadline=None, database=None)
    ... @given(law_pairs())
    ... def test_accepted_plus_residual_mass_is_p(pq):
    ...     p, q = pq
    ...     assert list(minimum(p, q) + pos(p - q)) == list(p)
    >>> test_accepted_plus_residual_mass_is_p()
    """
    V = draw(st.integers(min_vocab, max_vocab))
    p = draw(exact_laws(V, allow_zeros=allow_zeros))
    kind = draw(st.sampled_from(["independent", "equal", "point"]))
    if kind == "equal":
        q = p.copy()
    elif kind == "point":
        q = np.array([Fraction(0)] * V, dtype=object)
        q[draw(st.integers(0, V - 1))] = Fraction(1)
    else:
        q = draw(exact_laws(V, allow_zeros=allow_zeros))
    return p, q


@st.composite
def toy_pairs(draw, min_vocab: int = 2, max_vocab: int = 4, max_horizon: int = 3, allow_zeros: bool = True,
              min_horizon: int = 1):
    """An exact :class:`~rheotheory.pairs.ToyPair` with random tables, horizon in
    ``min_horizon..max_horizon``.

    Every target and draft law is drawn by :func:`exact_laws`.

    Parameters
    ----------
    draw : callable
        Supplied by hypothesis (``st.composite``); callers leave it out.
    min_vocab : int, default 2
        Smallest vocabulary drawn.
    max_vocab : int, default 4
        Largest vocabulary drawn.
    max_horizon : int, default 3
        Largest horizon drawn (at least ``min_horizon`` is used).
    allow_zeros : bool, default True
        Let some tokens carry probability 0.
    min_horizon : int, default 1
        Smallest horizon drawn.

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        Of exact :class:`~rheotheory.pairs.ToyPair`.
    """
    V = draw(st.integers(min_vocab, max_vocab))
    H = draw(st.integers(min_horizon, max(min_horizon, max_horizon)))
    target, draft = {}, {}
    for pre in prefixes(V, H):
        target[pre] = draw(exact_laws(V, allow_zeros=allow_zeros))
        draft[pre] = draw(exact_laws(V, allow_zeros=allow_zeros))
    return ToyPair(V, H, target, draft, exact=True)


@st.composite
def det_plus_sample(draw, p=None, q=None, max_det: int = 3):
    """(det tokens, tail law): the first m ranked draft tokens and q restricted to the rest.

    m is drawn in 0..min(max_det, |support of q| - 1), so the tail keeps some mass.

    Parameters
    ----------
    draw : callable
        Supplied by hypothesis (``st.composite``); callers leave it out.
    p : numpy.ndarray of shape (V,), optional
        Not used (the target plays no part in the draw).
    q : numpy.ndarray of shape (V,), Fractions or float64
        The draft law # [vocab]; required despite its default.
    max_det : int, default 3
        Most deterministic tokens.

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        Of ``(det, tail)``: ``det`` a list of token ids (the top m of
        :func:`~rheotheory.laws.rank`), ``tail`` the ``numpy.ndarray of shape (V,)``
        :func:`~rheotheory.laws.restrict` of q to the other tokens.
    """
    ranked = laws.rank(q)
    m = draw(st.integers(0, min(max_det, max(len(ranked) - 1, 0))))
    det = ranked[:m]
    return det, laws.restrict(q, det)


def _draws_iid(law, k):
    import itertools

    support = [x for x, w in enumerate(law) if w > 0]
    for seq in itertools.product(support, repeat=k):
        w = Fraction(1)
        for x in seq:
            w *= law[x]
        yield w, [Candidate(x, law) for x in seq]


def _draws_wor(law, k):
    def rec(cur, chosen, w):
        if len(chosen) == k or laws.total(cur) == 0:
            yield w, list(chosen)
            return
        for x, wx in enumerate(cur):
            if wx > 0:
                yield from rec(laws.restrict(cur, [x]), chosen + [Candidate(x, cur)], w * wx)

    yield from rec(law, [], Fraction(1))


def iid_candidates(law, k: int):
    """Every outcome of k i.i.d. draws from ``law``: iterable of (weight, [Candidate]).

    Parameters
    ----------
    law : numpy.ndarray of shape (V,), Fractions or float64
        The law # [vocab] of every draw.
    k : int
        Number of draws.

    Returns
    -------
    iterator of (fractions.Fraction or float, list of Candidate)
        Each ordered outcome over the support, with its probability (exact for an exact law) and
        the candidates a verifier sees (each with ``law`` as its member law).
    """
    return _draws_iid(law, k)


def wor_candidates(law, k: int):
    """Every outcome of k successive draws without replacement: (weight, [Candidate]).

    Each draw is from the law restricted to the tokens not drawn yet; the draws stop early when
    no mass is left.

    Parameters
    ----------
    law : numpy.ndarray of shape (V,), Fractions or float64
        The law # [vocab] of the first draw.
    k : int
        Most draws.

    Returns
    -------
    iterator of (fractions.Fraction or float, list of Candidate)
        Each ordered outcome, with its probability and the candidates a verifier sees (each with
        the restricted law it was drawn from).
    """
    return _draws_wor(law, k)


@st.composite
def methods(draw, families=None, max_depth: int = 2, verifiers=None, known_lossy: bool | None = None):
    """A :class:`~rheotheory.methods.Method` of a registered family, every field drawn from its
    :func:`~rheotheory.methods.option` metadata (``choices``, or integers in ``search``); draws
    the family rejects (e.g. a head larger than K - 1) are filtered out.

    Families come from the registry, so a new family is property-tested with no edit here.

    Parameters
    ----------
    draw : callable
        Supplied by hypothesis (``st.composite``); callers leave it out.
    families : collection of str, optional
        Family names to draw from; every registered family when None.
    max_depth : int, default 2
        Cap on drawn depths (exact enumeration stays small).
    verifiers : collection of str, optional
        Limits the verifier to those names (each family draws from the ones it admits); any when
        None.
    known_lossy : bool, optional
        Keep only methods flagged lossy (True) or not flagged (False) by ``Method.known_lossy``;
        both when None.

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        Of resolved :class:`~rheotheory.methods.Method` (sized at K = 2, D = min(2, max_depth),
        N = 4 unless the drawn fields say otherwise).
    """
    from hypothesis import assume

    from ..errors import RheoError
    from ..methods import FAMILIES, field_options, resolve

    name = draw(st.sampled_from(sorted(families or FAMILIES)))
    cls = FAMILIES[name]
    fields = {}
    for field_name, meta in field_options(cls).items():
        if field_name == "verifier":
            admitted = [v for v in cls.admitted_verifiers() if verifiers is None or v in verifiers]
            assume(admitted)
            fields[field_name] = draw(st.sampled_from(admitted))
        elif meta.get("choices"):
            fields[field_name] = draw(st.sampled_from(meta["choices"]))
        elif meta.get("search"):
            lo, hi = meta["search"]
            if field_name == "depth":
                hi = min(hi, max_depth)
            fields[field_name] = draw(st.integers(lo, max(lo, hi)))
        elif meta.get("examples"):
            fields[field_name] = draw(st.sampled_from(meta["examples"]))
    try:
        method = resolve({"family": name, **fields}, size=(2, min(2, max_depth), 4))
    except RheoError:
        assume(False)
    if known_lossy is not None:
        assume(bool(method.known_lossy()) == known_lossy)
    return method
