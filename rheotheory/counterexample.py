"""Counterexample search: find a toy instance on which a method is lossy, then shrink it.

The search draws seeded random instances (:func:`rheotheory.pairs.random_pair`, or peaked
:func:`rheotheory.pairs.logits_pair` instances with ``family="logits"``/``"mixed"``) together with
random tree parameters inside the limits given, and certifies the method on each one exactly
(:func:`rheotheory.exact.certify`). The first lossy instance is then *shrunk* greedily, one
simplification at a time, keeping a step only if the method is still lossy on the result:

1. fewer tokens: drop one token from the vocabulary (its probability is removed from every law,
   which is renormalised; prefixes containing it disappear);
2. smaller tree: depth - 1 (the instance horizon follows), then top-K - 1, then budget - 1;
3. simpler rationals: each law is replaced by the first of the uniform law and its
   renormalised best approximations with denominators 2, 3, ... that keeps the method lossy and
   has a smaller common denominator than before.

The loop repeats until no step applies, so the result is a local minimum in the order
(vocabulary, depth, top-K, budget, denominators). Everything is exact and seeded: the same
arguments always give the same counterexample.
"""

from __future__ import annotations

import itertools
import math
from concurrent.futures import Executor
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from . import laws
from .errors import InstanceError, RheoError, TreeError
from .exact import certify
from .executors import imap_unordered
from .methods import Method
from .pairs import ToyPair, logits_pair, prefixes, random_pair

__all__ = ["SearchSpace", "CounterexampleResult", "search", "shrink", "drop_token", "lower_horizon",
           "find_counterexample", "is_lossy"]

#: Instance families the search draws from.
FAMILIES = ("weights", "logits", "mixed")

#: Logit scales and draft noise levels of the ``logits`` family (peaked laws, varied mismatch).
LOGIT_SCALES = (2.0, 4.0)
LOGIT_NOISE = (0.5, 2.0)

#: Largest denominator tried when simplifying the rationals of one law.
MAX_SIMPLE_DENOMINATOR = 12


@dataclass(frozen=True)
class SearchSpace:
    """Where random instances are drawn from (inclusive ranges).

    Attributes
    ----------
    min_vocab : int, default 3
        Smallest vocabulary drawn.
    max_vocab : int, default 4
        Largest vocabulary drawn (at least ``min_vocab``).
    max_top_k : int, default 3
        K drawn in 2..max_top_k (dynamic methods).
    max_depth : int, default 3
        D drawn in 2..max_depth (dynamic methods and chains).
    max_budget : int, default 8
        N drawn in K..min(2K, max_budget) (dynamic methods).
    family : str, default "weights"
        ``"weights"``: :func:`~rheotheory.pairs.random_pair`; ``"logits"``: peaked
        :func:`~rheotheory.pairs.logits_pair`; ``"mixed"``: either, 50/50.

    Raises
    ------
    RheoError
        If ``family`` is not one of :data:`FAMILIES`, a size is not a positive int, or
        ``min_vocab > max_vocab``.
    """

    min_vocab: int = 3  # smallest vocabulary drawn
    max_vocab: int = 4  # largest vocabulary drawn
    max_top_k: int = 3  # K drawn in 2..max_top_k (dynamic methods)
    max_depth: int = 3  # D drawn in 2..max_depth (dynamic methods and chains)
    max_budget: int = 8  # N drawn in K..min(2K, max_budget) (dynamic methods)
    family: str = "weights"  # weights: random_pair; logits: peaked logits_pair; mixed: either, 50/50

    def __post_init__(self):
        if self.family not in FAMILIES:
            raise RheoError(f"unknown instance family {self.family!r}; choose from {', '.join(FAMILIES)}")
        for name in ("min_vocab", "max_vocab", "max_top_k", "max_depth", "max_budget"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise RheoError(f"{name} must be a positive integer, got {v!r}")
        if self.min_vocab > self.max_vocab:
            raise RheoError(f"min_vocab {self.min_vocab} exceeds max_vocab {self.max_vocab}")


@dataclass(frozen=True)
class CounterexampleResult:
    """Outcome of a search (and of the shrinking, when something was found).

    Attributes
    ----------
    found : bool
        Whether a lossy instance was found.
    instances : int
        Instances certified by the search (up to and including the lossy one).
    seed : int
        Search seed.
    pair : ToyPair or None, default None
        The shrunk instance.
    method : Method or None, default None
        The method with the shrunk tree parameters.
    max_deviation : fractions.Fraction or None, default None
        Exact rational: the largest deviation of the shrunk instance's certificate.
    sequence : tuple of int or None, default None
        A sequence z attaining max_deviation.
    original_pair : ToyPair or None, default None
        The instance as first found.
    original_method : Method or None, default None
        The method as first found.
    original_deviation : fractions.Fraction or None, default None
        The largest deviation on the instance as first found.
    certifications : int, default 0
        Certify calls in total (search + shrinking).
    """

    found: bool
    instances: int  # instances certified by the search
    seed: int  # search seed
    pair: ToyPair | None = None  # the shrunk instance
    method: Method | None = None  # the method with the shrunk tree parameters
    max_deviation: object = None  # exact rational
    sequence: tuple | None = None  # a sequence z attaining max_deviation
    original_pair: ToyPair | None = None  # the instance as first found
    original_method: Method | None = None
    original_deviation: object = None
    certifications: int = 0  # certify calls in total (search + shrinking)

    def to_dict(self) -> dict:
        """The outcome as a JSON-ready dict (the base of the object ``rheo counterexample --json`` prints).

        Returns
        -------
        dict[str, object]
            ``found``, ``instances``, ``seed``, ``certifications``, and ``instance`` (the shrunk pair's
            :meth:`~rheotheory.pairs.ToyPair.to_dict`), ``max_deviation`` (as "a/b"), ``sequence``,
            ``method`` and ``original`` (vocabulary, method and deviation as first found) when found;
            ``instance``, ``max_deviation``, ``sequence`` and ``method`` are None otherwise.
        """
        fmt = laws.format_number
        d = {"found": self.found, "instances": self.instances, "seed": self.seed,
             "certifications": self.certifications}
        if not self.found:
            d.update({"instance": None, "max_deviation": None, "sequence": None, "method": None})
            return d
        d.update({
            "instance": self.pair.to_dict(),
            "max_deviation": fmt(self.max_deviation),
            "sequence": list(self.sequence),
            "method": self.method.to_dict(),
            "original": {"vocab_size": self.original_pair.vocab_size,
                         "method": self.original_method.to_dict(),
                         "max_deviation": fmt(self.original_deviation)},
        })
        return d


def is_lossy(pair: ToyPair, method: Method):
    """The exact certificate if ``method`` is lossy on ``pair``, else None (invalid combos: None).

    Parameters
    ----------
    pair : ToyPair
        The instance (certified in its own number type).
    method : Method
        The method to certify.

    Returns
    -------
    Certificate or None
        :func:`rheotheory.exact.certify`'s certificate when it is not lossless; None when it is,
        or when :func:`~rheotheory.exact.certify` refuses the combination with a
        :class:`RheoError` (a shrinking step can produce parameters the method rejects).
    """
    try:
        cert = certify(pair, method)
    except RheoError:
        # NOTE: a shrinking step can produce parameters the method rejects (e.g. a budget the
        # tree cannot reach is fine, but a vocabulary too small for a static shape is not).
        return None
    return None if cert.lossless else cert


def _random_method(base: Method, space: SearchSpace, rng: np.random.Generator) -> Method:
    """``base`` with its shrinkable size fields (``shrink_fields``) drawn inside ``space``.

    Drawn in the order top_k, depth, budget: K in 2..max_top_k, D in 2..max_depth, N in
    K..min(2K, max_budget); a family without such fields is returned unchanged.
    """
    names = base.shrink_fields
    changes = {}
    if "top_k" in names:
        changes["top_k"] = int(rng.integers(2, max(2, space.max_top_k) + 1))
    if "depth" in names:
        changes["depth"] = int(rng.integers(2, max(2, space.max_depth) + 1))
    if "budget" in names:
        k = changes.get("top_k", 1)
        changes["budget"] = int(rng.integers(k, max(k, min(2 * k, space.max_budget)) + 1))
    return base.fit(**changes) if changes else base


#: Instances one task certifies when the search runs on an executor: enough to outweigh the
#: cost of shipping a task to a worker (a toy certification takes milliseconds).
SEARCH_CHUNK = 16

#: Chunks kept in flight per worker: the workers stay busy, and little is certified past the
#: first lossy instance.
CHUNKS_PER_WORKER = 2


def _draws(method: Method, instances: int, seed: int, space: SearchSpace):
    """The search's instances in order, drawn serially from one generator seeded with ``seed``.

    Each draw is ``(method, vocab, pair_seed, logits)`` with ``logits`` None or
    ``(logit_scale, noise)``: everything that determines the instance, so that any worker
    builds the same one (the draws themselves are cheap; the certifications are not). A
    parameter error ends the stream with ``(error, None, None, None)``, raised when reached.
    """
    rng = np.random.default_rng(seed)
    for _ in range(instances):
        try:
            m = _random_method(method, space, rng)
        except RheoError as e:
            yield e, None, None, None
            return
        v = int(rng.integers(space.min_vocab, space.max_vocab + 1))
        pair_seed = int(rng.integers(2**31))
        logits = None
        if space.family == "logits" or (space.family == "mixed" and rng.random() < 0.5):
            scale = float(rng.choice(LOGIT_SCALES))
            logits = (scale, float(rng.choice(LOGIT_NOISE)))
        yield m, v, pair_seed, logits


def _chunks(draws, size: int, first: int = 0):
    """``(index of the first draw, [draws])`` for consecutive chunks of ``size`` draws, the
    first draw having index ``first``."""
    chunk, start = [], first
    for i, d in enumerate(draws, first):
        if not chunk:
            start = i
        chunk.append(d)
        if len(chunk) == size:
            yield start, chunk
            chunk = []
    if chunk:
        yield start, chunk


def _instance(draw):
    """``(pair, method)`` of one draw of :func:`_draws` (a parameter error is raised)."""
    m, v, pair_seed, logits = draw
    if isinstance(m, RheoError):
        raise m
    if logits is not None:
        return logits_pair(v, m.depth, seed=pair_seed, logit_scale=logits[0], noise=logits[1]), m
    return random_pair(v, m.depth, seed=pair_seed), m


def _first_lossy(chunk):
    """``(pair, method, cert, instances used)`` for the first lossy draw of a chunk, or None.

    Top-level so that worker processes can run it.
    """
    start, draws = chunk
    for k, draw in enumerate(draws):
        pair, m = _instance(draw)
        cert = is_lossy(pair, m)
        if cert is not None:
            return pair, m, cert, start + k + 1
    return None


#: Probes of :func:`rheotheory.exact.estimate_cost` per distinct drawn instance shape in
#: :func:`estimate_search_seconds` (fewer than a certification's 64: the sum over many instances
#: averages their errors out).
ESTIMATE_PROBES = 16

#: Seconds of one certification beyond its enumeration and class verification (the pair made
#: exact, the lossless check, the certificate). Measured: 0.3-0.6 ms on the smallest instances
#: of the documented searches (V = 3, one or two classes), timed one by one.
CERTIFY_OVERHEAD_SECONDS = 5e-4


def estimate_search_seconds(method: Method, instances: int, seed: int = 0, space: SearchSpace = SearchSpace(),
                            start: int = 0) -> float:
    """Estimated seconds of certifying draws ``start .. instances - 1`` of a search in one process
    (when none of them is lossy: a lossy one ends the search earlier).

    The draws are made as :func:`search` makes them (cheap); draws of the same shape (method
    fields, vocabulary, family) share one cost estimate, made on the first of them
    (:func:`rheotheory.exact.estimate_cost`, whose seconds are timed on this machine), so the
    estimate costs a few probes per shape, not per instance.
    """
    from .exact import estimate_cost

    costs: dict = {}
    total = 0.0
    for i, draw in enumerate(_draws(method, instances, seed, space)):
        if i < start:
            continue
        m, v, _, logits = draw
        if isinstance(m, RheoError):
            raise m
        key = (m.describe(), v, logits)
        if key not in costs:
            pair, m = _instance(draw)
            try:
                costs[key] = estimate_cost(pair, m, probes=ESTIMATE_PROBES).seconds() + CERTIFY_OVERHEAD_SECONDS
            except RheoError:
                costs[key] = 0.0  # NOTE: parameters the method rejects: is_lossy skips the draw at once
        total += costs[key]
    return total


def search(method: Method, instances: int = 200, seed: int = 0, space: SearchSpace = SearchSpace(),
           executor: Executor | None = None, workers: int = 1, progress=None, pilot_seconds: float = 0.0,
           on_estimate=None):
    """Certify ``instances`` random instances; return (pair, method, cert, index) of the first lossy
    one, or None.

    With an ``executor`` the certifications run in parallel, and the result is the same: the
    instances are drawn serially here, and the lossy one of lowest index wins.

    Parameters
    ----------
    method : Method
        The method whose shrinkable size fields are drawn for each instance.
    instances : int, default 200
        Number of random instances, >= 1.
    seed : int, default 0
        Seed of the draws (instances and tree parameters).
    space : SearchSpace, default SearchSpace()
        Where instances and tree parameters are drawn from.
    executor : concurrent.futures.Executor, optional
        Runs chunks of :data:`SEARCH_CHUNK` certifications
        (:func:`rheotheory.executors.open_executor`); all run here when None.
    workers : int, default 1
        The executor's workers: :data:`CHUNKS_PER_WORKER` chunks per worker are kept in flight,
        and the estimate of ``on_estimate`` is divided among them.
    progress : callable, optional
        Called with the number of instances certified (each chunk's with an executor).
    pilot_seconds : float, default 0.0
        When positive, the first instances are certified here, in order, until that much time has
        passed.
    on_estimate : callable, optional
        After a pilot with no lossy instance and instances left, called with the estimated seconds
        of the rest (:func:`estimate_search_seconds`, divided among ``workers``) before they start.

    Returns
    -------
    tuple or None
        ``(pair, method, cert, index)``: the lossy :class:`~rheotheory.pairs.ToyPair`, the method
        with the drawn parameters, its :class:`~rheotheory.exact.Certificate`, and the number of
        instances certified up to it (1-based index); None when no instance is lossy.

    Raises
    ------
    RheoError
        If ``instances`` is not a positive int, or the method rejects the drawn tree parameters
        (raised when that draw is reached).
    """
    import time

    if not isinstance(instances, int) or instances < 1:
        raise RheoError(f"instances must be a positive integer, got {instances!r}")
    done = 0
    if pilot_seconds > 0:
        t0 = time.perf_counter()
        for draw in _draws(method, instances, seed, space):
            pair, m = _instance(draw)
            cert = is_lossy(pair, m)
            done += 1
            if progress is not None:
                progress(1)
            if cert is not None:
                return pair, m, cert, done
            if time.perf_counter() - t0 >= pilot_seconds:
                break
        if done == instances:
            return None
        if on_estimate is not None:
            on_estimate(estimate_search_seconds(method, instances, seed, space, start=done) / max(1, workers))
    rest = itertools.islice(_draws(method, instances, seed, space), done, None)
    if executor is None:
        hit = _first_lossy((done, rest))
        if progress is not None:
            progress((instances if hit is None else hit[3]) - done)  # NOTE: up to the lossy one, when found
        return hit
    chunks = _chunks(rest, SEARCH_CHUNK, first=done)
    finished: dict = {}  # chunk number -> its result, until every lower chunk is in
    nxt = 0  # lowest chunk number not yet examined
    for c, hit in imap_unordered(executor, _first_lossy, chunks, window=CHUNKS_PER_WORKER * max(1, workers)):
        finished[c] = hit
        if progress is not None:
            progress(min(SEARCH_CHUNK, instances - done - c * SEARCH_CHUNK))
        while nxt in finished:
            hit = finished.pop(nxt)
            if hit is not None:
                return hit  # NOTE: leaving the loop cancels the chunks still in flight
            nxt += 1
    return None


# -- shrinking steps ---------------------------------------------------------------------------

def drop_token(pair: ToyPair, token: int) -> ToyPair:
    """The instance without ``token``: its mass is removed from every law, which is renormalised.

    Tokens above ``token`` are renumbered one lower; prefixes containing it disappear.

    Parameters
    ----------
    pair : ToyPair
        An exact pair (Fraction laws).
    token : int
        The token id to drop, in 0..V-1.

    Returns
    -------
    ToyPair
        The exact pair over V - 1 tokens, same horizon.

    Raises
    ------
    InstanceError
        If the vocabulary has a single token, or some law had all its mass on ``token``.
    """
    V = pair.vocab_size
    if V < 2:
        raise InstanceError("cannot drop the only token")
    old = [t for t in range(V) if t != token]
    target, draft = {}, {}
    for pre in prefixes(V - 1, pair.horizon):
        opre = tuple(old[t] for t in pre)
        for table, src in ((target, pair.target), (draft, pair.draft)):
            law = np.array([src[opre][t] for t in old], dtype=object)
            s = laws.total(law)
            if s == 0:
                raise InstanceError(f"law at prefix {opre} has all its mass on token {token}")
            table[pre] = law / s
    return ToyPair(V - 1, pair.horizon, target, draft, exact=True)


def lower_horizon(pair: ToyPair, horizon: int) -> ToyPair:
    """The instance restricted to prefixes of length <= ``horizon``.

    Parameters
    ----------
    pair : ToyPair
        An exact pair (Fraction laws).
    horizon : int
        The new horizon, at most the pair's.

    Returns
    -------
    ToyPair
        The exact pair with the laws of the shorter prefixes only.
    """
    keep = lambda t: {k: v for k, v in t.items() if len(k) <= horizon}  # noqa: E731
    return ToyPair(pair.vocab_size, horizon, keep(pair.target), keep(pair.draft), exact=True)


def _denominator(law) -> int:
    return math.lcm(*(Fraction(x).denominator for x in law))


def _simpler_laws(law):
    """Candidate replacements for one law, simplest first (all strictly simpler than ``law``)."""
    V = len(law)
    cur = _denominator(law)
    seen = set()
    cands = [np.array([Fraction(1, V)] * V, dtype=object)]
    for d in range(2, MAX_SIMPLE_DENOMINATOR + 1):
        vals = [Fraction(x).limit_denominator(d) for x in law]
        s = sum(vals)
        if s == 0:
            continue
        cands.append(np.array([v / s for v in vals], dtype=object))
    for c in cands:
        key = tuple(c)
        if key in seen or _denominator(c) >= cur:
            continue
        seen.add(key)
        yield c


def shrink(pair: ToyPair, method: Method, max_rounds: int = 20):
    """Greedy shrinking of a lossy (pair, method); returns (pair, method, cert, certifications).

    Each round tries, keeping a step only if the method stays lossy: dropping one token
    (:func:`drop_token`), each of the method's ``shrink_fields`` one less (depth lowers the
    horizon too, :func:`lower_horizon`), then simpler rationals for each law (draft first, then
    target). Rounds repeat until one changes nothing.

    Parameters
    ----------
    pair : ToyPair
        An exact instance on which ``method`` is lossy.
    method : Method
        The lossy method.
    max_rounds : int, default 20
        Most rounds of shrinking.

    Returns
    -------
    tuple
        ``(pair, method, cert, certifications)``: the shrunk instance and method, the
        :class:`~rheotheory.exact.Certificate` on them, and the number of certify calls made.

    Raises
    ------
    RheoError
        If ``method`` is not lossy on ``pair``.
    """
    cert = is_lossy(pair, method)
    if cert is None:
        raise RheoError("shrink needs an instance on which the method is lossy")
    calls = 1
    for _ in range(max_rounds):
        changed = False
        # 1. fewer tokens
        for t in range(pair.vocab_size):
            try:
                cand = drop_token(pair, t)
            except (InstanceError, TreeError):
                continue
            c = is_lossy(cand, method)
            calls += 1
            if c is not None:
                pair, cert, changed = cand, c, True
                break
        # 2. smaller tree: each of the family's shrink fields one less (depth: the horizon follows)
        for what in method.shrink_fields:
            if getattr(method, what) <= 1:
                continue
            try:
                m2 = method.fit(**{what: getattr(method, what) - 1})
                p2 = lower_horizon(pair, m2.depth) if what == "depth" else pair
            except RheoError:
                continue
            c = is_lossy(p2, m2)
            calls += 1
            if c is not None:
                pair, method, cert, changed = p2, m2, c, True
        # 3. simpler rationals, one law at a time
        for which in ("draft", "target"):
            for pre in list(prefixes(pair.vocab_size, pair.horizon)):
                table = getattr(pair, which)
                for law in _simpler_laws(table[pre]):
                    new = dict(table)
                    new[pre] = law
                    tables = {"target": pair.target, "draft": pair.draft, which: new}
                    cand = ToyPair(pair.vocab_size, pair.horizon, tables["target"], tables["draft"], exact=True)
                    c = is_lossy(cand, method)
                    calls += 1
                    if c is not None:
                        pair, cert, changed = cand, c, True
                        break
        if not changed:
            break
    return pair, method, cert, calls


def find_counterexample(method: Method, instances: int = 200, seed: int = 0,
                        space: SearchSpace = SearchSpace(), do_shrink: bool = True,
                        executor: Executor | None = None, workers: int = 1, progress=None,
                        pilot_seconds: float = 0.0, on_estimate=None) -> CounterexampleResult:
    """Search for a lossy instance and shrink it (see the module docstring).

    The search runs on ``executor`` if one is given (see :func:`search`; same result); the
    shrinking, a sequence of dependent steps, runs here.

    Parameters
    ----------
    method : Method
        The method to search a counterexample for.
    instances : int, default 200
        Number of random instances, >= 1.
    seed : int, default 0
        Seed of the draws: the same arguments always give the same counterexample.
    space : SearchSpace, default SearchSpace()
        Where instances and tree parameters are drawn from.
    do_shrink : bool, default True
        Shrink the first lossy instance (:func:`shrink`); False returns it as found.
    executor : concurrent.futures.Executor, optional
        Runs the search's certifications in parallel (:func:`search`).
    workers : int, default 1
        The executor's workers.
    progress : callable, optional
        Told of the instances certified by the search.
    pilot_seconds : float, default 0.0
        Seconds of certifications timed here first (:func:`search`).
    on_estimate : callable, optional
        Told the estimated seconds of the rest after the pilot (:func:`search`).

    Returns
    -------
    CounterexampleResult
        The shrunk and original instances when found; ``found=False`` otherwise.
    """
    hit = search(method, instances, seed, space, executor=executor, workers=workers, progress=progress,
                 pilot_seconds=pilot_seconds, on_estimate=on_estimate)
    if hit is None:
        return CounterexampleResult(False, instances, seed, certifications=instances)
    pair, m, cert, used = hit
    p2, m2, c2, calls = (shrink(pair, m) if do_shrink else (pair, m, cert, 0))
    return CounterexampleResult(True, used, seed, p2, m2, c2.max_deviation, c2.worst_sequence,
                                pair, m, cert.max_deviation, used + calls)
