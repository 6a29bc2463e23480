"""Probability laws over a vocabulary, in one number type at a time.

A *law* is a 1-D array of length V (the vocabulary size) whose entries are non-negative and sum
to 1. Two number types are supported and every function here works on both:

- exact: a numpy ``object`` array of :class:`fractions.Fraction` (or ``int``) entries;
- float: a numpy ``float64`` array.

Only operators and ``numpy`` ufuncs that are defined for both are used, so the verifiers and
tree builders written on top of this module run unchanged in exact rational arithmetic and in
floating point. The real-model decoder (:mod:`rheotheory.decode`) calls them on float64 numpy
laws too: its torch logits become numpy arrays before any rule runs.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from numbers import Rational
from typing import Iterable, Sequence

import numpy as np

from .errors import LawError

__all__ = [
    "exact_law",
    "float_law",
    "is_exact",
    "check_law",
    "total",
    "pos",
    "minimum",
    "normalise",
    "zero_at",
    "restrict",
    "residual",
    "rank",
    "tv",
    "inverse_cdf",
    "softmax",
    "temper_logits",
    "top_k_mask",
    "parse_number",
    "parse_probability",
    "format_number",
]

#: Largest denominator used when a float is turned into an exact rational (e.g. the result of
#: a softmax); the law is renormalised exactly afterwards, so this only moves the instance, never
#: breaks normalisation.
EXACT_DENOMINATOR = 10**6


def is_exact(a) -> bool:
    """True for exact (object-dtype, rational) arrays and Python rationals.

    Parameters
    ----------
    a : numpy.ndarray or number
        A law # [vocab] (any dtype), or a single number.

    Returns
    -------
    bool
        For an array, whether its dtype is ``object`` (the exact representation); for a scalar,
        whether it is a :class:`numbers.Rational` (``int`` and ``Fraction`` are, ``float`` is not).
    """
    if isinstance(a, np.ndarray):
        return a.dtype == object
    return isinstance(a, Rational)


#: Longest run of digits in one integer of a probability (numerator, denominator, decimal
#: mantissa): CPython's default int/str conversion limit, fixed here so that what the reader
#: accepts does not depend on ``sys.set_int_max_str_digits``. ``format_number`` cannot write more.
MAX_INT_DIGITS = 4300

#: Longest probability text accepted (surrounding whitespace excluded): an exact "a/b" with
#: numerator and denominator of MAX_INT_DIGITS digits each, with room for a sign.
MAX_NUMBER_CHARS = 2 * MAX_INT_DIGITS + 2

#: Largest |exponent| of a decimal probability text. "1e-1000" is still a 1001-digit exact
#: rational; NOTE: the bound is checked before parsing, because Fraction("1e-999999999") would
#: build a billion-digit power of ten.
MAX_EXPONENT = 1000

#: The probability text grammar, ASCII only: a fraction "a/b", or a decimal with an optional
#: exponent. Unicode digits, digit-group underscores and spaces around "/" (all accepted by
#: ``Fraction``) are refused, so every reader of the format agrees on every entry.
_NUMBER_TEXT = re.compile(r"""
    [-+]?
    (?: (?P<num>[0-9]+) / (?P<den>[0-9]+)
      | (?P<int>[0-9]*) (?: \. (?P<frac>[0-9]*) )? (?: [eE] (?P<exp>[-+]?[0-9]+) )?
    )""", re.VERBOSE | re.ASCII)


def _show(value, width: int = 40) -> str:
    """``repr(value)`` cut to ``width`` characters, for one-line error messages."""
    try:
        text = repr(value)
    except ValueError:  # NOTE: an int beyond the int/str conversion limit has no repr
        return f"<{type(value).__name__} too long to print>"
    return text if len(text) <= width else text[: width - 3] + "..."


def _parse_text(value: str) -> Fraction:
    """The exact value of a probability text, its size bounded before anything is computed."""
    text = value.strip(" \t\r\n")
    if len(text) > MAX_NUMBER_CHARS:
        raise LawError(f"probability text of {len(text)} characters is longer than {MAX_NUMBER_CHARS}")
    m = _NUMBER_TEXT.fullmatch(text)
    if m is None or (m["num"] is None and not (m["int"] or m["frac"])):
        if text.lower().lstrip("+-") in {"nan", "inf", "infinity"}:
            raise LawError(f"probability {_show(value)} is not finite")
        raise LawError(f"probability {_show(value)} is not a number (use a decimal or 'a/b')")
    digits = (m["num"], m["den"]) if m["num"] is not None else ((m["int"] or "") + (m["frac"] or ""),)
    if max(len(d) for d in digits) > MAX_INT_DIGITS:
        raise LawError(f"probability {_show(value)} has an integer of more than {MAX_INT_DIGITS} digits")
    exp = m["exp"]
    if exp is not None and (len(exp.lstrip("+-")) > len(str(MAX_EXPONENT)) or abs(int(exp)) > MAX_EXPONENT):
        raise LawError(f"probability {_show(value)} has an exponent beyond +-{MAX_EXPONENT}")
    try:
        return Fraction(text)
    except ZeroDivisionError:
        raise LawError(f"probability {_show(value)} has a zero denominator") from None


def parse_number(value, exact: bool):
    """Parse one number: an int/float, a Fraction, or a string "a/b" or decimal.

    Strings follow an ASCII grammar (a fraction "a/b" or a decimal with an optional exponent)
    whose length, digit runs and exponent are bounded (:data:`MAX_NUMBER_CHARS`,
    :data:`MAX_INT_DIGITS`, :data:`MAX_EXPONENT`) before the value is computed. Floats are read
    through their shortest repr, so 0.1 is exactly 1/10. Table entries are read with
    :func:`parse_probability`, which also requires [0, 1].

    Parameters
    ----------
    value : int, float, fractions.Fraction or str
        The number: a Python or numpy int or float, a Fraction, or a text "a/b" or decimal
        (surrounding whitespace allowed). ``bool`` is refused.
    exact : bool
        Return an exact :class:`fractions.Fraction` (True) or a ``float`` (False).

    Returns
    -------
    fractions.Fraction or float
        The value, exact or rounded to float64 as ``exact`` asks.

    Raises
    ------
    LawError
        If ``value`` is a boolean or of another unsupported type; if it is NaN or infinite; if a text
        is not in the grammar, is too long, has too long a digit run, an exponent beyond
        :data:`MAX_EXPONENT` or a zero denominator; or (``exact=False``) if the value is beyond the
        float64 range.

    Examples
    --------
    >>> parse_number("1/3", exact=True), parse_number(0.25, exact=True), parse_number("5e-1", exact=False)
    (Fraction(1, 3), Fraction(1, 4), 0.5)
    >>> parse_number("1e-999999999", exact=True)
    Traceback (most recent call last):
    ...
    rheotheory.errors.LawError: probability '1e-999999999' has an exponent beyond +-1000
    """
    if isinstance(value, bool):
        raise LawError(f"probability {value!r} is a boolean, not a number")
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(value):
            raise LawError(f"probability {value!r} is not finite")
        return Fraction(str(value)) if exact else float(value)
    if isinstance(value, str):
        num = _parse_text(value)
    elif isinstance(value, (int, np.integer)):
        num = Fraction(int(value))
    elif isinstance(value, Fraction):
        num = value
    else:
        raise LawError(f"probability {_show(value)} has unsupported type {type(value).__name__}")
    if exact:
        return num
    if abs(num) > _FLOAT_MAX:  # NOTE: float() would raise OverflowError
        raise LawError(f"probability {_show(value)} is beyond the float64 range")
    return float(num)


_FLOAT_MAX = Fraction(np.finfo(np.float64).max)


def parse_probability(value, exact: bool):
    """Parse one table entry: :func:`parse_number`, then a check that it lies in [0, 1].

    Parameters
    ----------
    value : int, float, fractions.Fraction or str
        The entry, in any form :func:`parse_number` reads.
    exact : bool
        Return an exact :class:`fractions.Fraction` (True) or a ``float`` (False); a float input
        read with ``exact=False`` is returned as that float.

    Returns
    -------
    fractions.Fraction or float
        The probability, in [0, 1].

    Raises
    ------
    LawError
        If :func:`parse_number` refuses ``value``, or the value is negative or greater than 1.

    Examples
    --------
    >>> parse_probability("1/3", exact=False) == 1 / 3
    True
    >>> parse_probability("3/2", exact=True)
    Traceback (most recent call last):
    ...
    rheotheory.errors.LawError: probability '3/2' is greater than 1
    """
    # NOTE: parsed exactly, so the range check cannot overflow; converted to float afterwards.
    num = parse_number(value, exact=True)
    if num < 0:
        raise LawError(f"probability {_show(value)} is negative")
    if num > 1:
        raise LawError(f"probability {_show(value)} is greater than 1")
    if exact or isinstance(value, (float, np.floating)):
        return num if exact else float(value)
    return float(num)


def format_number(x) -> str:
    """Exact rationals as "a/b" (or "a"), floats with repr precision.

    Parameters
    ----------
    x : fractions.Fraction, int or float
        The number to write (numpy integers and floats too).

    Returns
    -------
    str
        ``str(Fraction(x))`` for an exact number, ``repr(float(x))`` otherwise; :func:`parse_number`
        reads it back to the same value.
    """
    if isinstance(x, (Fraction, int, np.integer)):
        return str(Fraction(x))
    return repr(float(x))


def exact_law(values: Iterable) -> np.ndarray:
    """An exact law (object array of Fractions) from numbers or strings; not validated.

    Parameters
    ----------
    values : iterable of int, float, fractions.Fraction or str
        The probabilities # [vocab], each in a form :func:`parse_number` reads (floats through their
        shortest repr, so 0.1 becomes 1/10).

    Returns
    -------
    numpy.ndarray of shape (V,), Fractions
        The law, ``dtype=object``; :func:`check_law` validates it.

    Raises
    ------
    LawError
        If an entry is not a number :func:`parse_number` accepts.
    """
    return np.array([parse_number(v, True) for v in values], dtype=object)


def float_law(values: Iterable) -> np.ndarray:
    """A float64 law from numbers, strings or Fractions; not validated.

    Parameters
    ----------
    values : iterable of int, float, fractions.Fraction or str
        The probabilities # [vocab]; strings are read with :func:`parse_number`.

    Returns
    -------
    numpy.ndarray of shape (V,), float64
        The law; :func:`check_law` validates it.

    Raises
    ------
    LawError
        If a string entry is not a number :func:`parse_number` accepts.
    """
    return np.array([float(parse_number(v, False)) if isinstance(v, str) else float(v) for v in values],
                    dtype=np.float64)


#: Float laws must sum to 1 within this tolerance (exact laws must sum to exactly 1).
FLOAT_SUM_TOL = 1e-9


def check_law(law: np.ndarray, name: str = "law", vocab_size: int | None = None) -> None:
    """Raise :class:`LawError` unless ``law`` is a 1-D probability vector.

    Exact laws must sum to exactly 1; float laws to within :data:`FLOAT_SUM_TOL`.

    Parameters
    ----------
    law : numpy.ndarray of shape (V,), Fractions or float64
        The law to check # [vocab].
    name : str, default "law"
        What to call the law in the error message.
    vocab_size : int, optional
        The expected length V; not checked when None.

    Raises
    ------
    LawError
        If ``law`` is not a 1-D numpy array, is empty, has a length other than ``vocab_size``; if an
        exact law has an entry that is not a rational, a negative entry or a sum other than 1; if a
        float law has a NaN or infinite entry, a negative entry or a sum off 1 by more than
        :data:`FLOAT_SUM_TOL`.
    """
    if not isinstance(law, np.ndarray) or law.ndim != 1:
        raise LawError(f"{name}: expected a 1-D list of probabilities")
    if law.size == 0:
        raise LawError(f"{name}: empty law")
    if vocab_size is not None and law.size != vocab_size:
        raise LawError(f"{name}: has {law.size} entries but the vocabulary has {vocab_size} tokens")
    if law.dtype == object:
        for x in law:
            if not isinstance(x, Rational):
                raise LawError(f"{name}: entry {x!r} is not an exact rational")
        if any(x < 0 for x in law):
            raise LawError(f"{name}: negative probability {min(law)}")
        s = sum(law)
        if s != 1:
            raise LawError(f"{name}: probabilities sum to {s}, not 1")
    else:
        if not np.all(np.isfinite(law)):
            raise LawError(f"{name}: contains NaN or infinity")
        if np.any(law < 0):
            raise LawError(f"{name}: negative probability {law.min()!r}")
        s = float(law.sum())
        if abs(s - 1.0) > FLOAT_SUM_TOL:
            raise LawError(f"{name}: probabilities sum to {s!r}, not 1")


def total(a):
    """Sum of the entries (a Fraction for exact arrays, a float otherwise).

    Parameters
    ----------
    a : numpy.ndarray of shape (n,), Fractions or float64
        The entries to add.

    Returns
    -------
    fractions.Fraction or float
        Their sum: exact (starting from ``Fraction(0)``) for an object array, ``a.sum()`` otherwise.
    """
    if isinstance(a, np.ndarray) and a.dtype == object:
        return sum(a, Fraction(0))
    return a.sum()


def pos(a):
    """Elementwise positive part (a)+ = max(a, 0).

    Parameters
    ----------
    a : numpy.ndarray of shape (n,), Fractions or float64
        The entries.

    Returns
    -------
    numpy.ndarray of shape (n,)
        ``max(a, 0)`` entry by entry, in the number type of ``a``.
    """
    return np.maximum(a, 0)


def minimum(a, b):
    """Elementwise minimum.

    Parameters
    ----------
    a, b : numpy.ndarray of shape (n,), Fractions or float64
        Two arrays of one length (e.g. a target and a draft law).

    Returns
    -------
    numpy.ndarray of shape (n,)
        ``min(a, b)`` entry by entry.
    """
    return np.minimum(a, b)


def normalise(a, s=None):
    """a / sum(a); an all-zero vector is returned unchanged (it only ever carries zero weight).

    NOTE: callers reach an all-zero vector only on branches of probability 0 (e.g. the residual
    after a rejection that cannot happen), so returning zeros keeps those branches inert.

    Parameters
    ----------
    a : numpy.ndarray of shape (n,), Fractions or float64
        Non-negative weights.
    s : fractions.Fraction or float, optional
        sum(a), when the caller already has it; computed with :func:`total` when None.

    Returns
    -------
    numpy.ndarray of shape (n,)
        ``a / s`` in the number type of ``a``, or zeros when ``s`` is 0.

    Examples
    --------
    >>> print(*normalise(exact_law(["1/2", "1/2", "1"])))   # exact in, exact out
    1/4 1/4 1/2
    >>> normalise(np.array([1.0, 3.0]))
    array([0.25, 0.75])
    >>> normalise(np.array([0.0, 0.0]))                 # all zero: returned as is
    array([0., 0.])
    """
    if s is None:
        s = total(a)
    if s == 0:
        return a * 0
    return a / s


def zero_at(a, tokens) -> np.ndarray:
    """Copy of ``a`` with the given token ids set to 0.

    Parameters
    ----------
    a : numpy.ndarray of shape (V,), Fractions or float64
        A law or weights # [vocab]; not modified.
    tokens : int or iterable of int
        The token id(s) to zero.

    Returns
    -------
    numpy.ndarray of shape (V,)
        The copy (not renormalised).
    """
    out = a.copy()
    if isinstance(tokens, (int, np.integer)):
        tokens = [int(tokens)]
    for t in tokens:
        out[t] = 0
    return out


def restrict(q, exclude) -> np.ndarray:
    """q restricted to the complement of ``exclude`` and renormalised (zeros if no mass is left).

    Parameters
    ----------
    q : numpy.ndarray of shape (V,), Fractions or float64
        A law # [vocab].
    exclude : iterable of int
        Token ids to remove.

    Returns
    -------
    numpy.ndarray of shape (V,)
        :func:`normalise` of ``q`` with ``exclude`` zeroed.
    """
    return normalise(zero_at(q, list(exclude)))


def residual(p, q):
    r"""The speculative-sampling residual :math:`\mathrm{norm}((p - q)_+)`, p target, q draft.

    After a draft token from q is rejected, the next token is drawn from this law; together with
    the accepted mass :math:`\min(p, q)` it rebuilds p exactly.

    Parameters
    ----------
    p : numpy.ndarray of shape (V,), Fractions or float64
        The target law # [vocab].
    q : numpy.ndarray of shape (V,), Fractions or float64
        The draft law # [vocab], in the number type of ``p``.

    Returns
    -------
    numpy.ndarray of shape (V,)
        :func:`normalise` of :math:`(p - q)_+`; all zeros when p = q (no rejection can happen).

    Examples
    --------
    >>> p, q = exact_law(["1/2", "1/2"]), exact_law(["3/4", "1/4"])
    >>> print(*residual(p, q))                          # all missing mass sits on token 1
    0 1
    >>> print(*(pos(p - q) + minimum(p, q)))            # (p - q)+ + min(p, q) = p
    1/2 1/2
    """
    return normalise(pos(p - q))


def rank(q, exclude: Sequence[int] = (), limit: int | None = None) -> list[int]:
    """Token ids by decreasing probability, ties by smaller id; zero-probability tokens omitted.

    Float arrays take a vectorised path (a partition, then a sort of the few survivors) with the
    same result as the exact path.

    Parameters
    ----------
    q : numpy.ndarray of shape (V,), Fractions or float64
        A law or weights # [vocab].
    exclude : sequence of int, default ()
        Token ids left out of the ranking.
    limit : int, optional
        Keep only the first ``limit`` ids (the builders need the top K + 1 only); all when None.

    Returns
    -------
    list of int
        The ranked token ids.
    """
    if isinstance(q, np.ndarray) and q.dtype != object:
        return _rank_float(q, exclude, limit)
    excl = set(int(t) for t in exclude)
    items = [(x, t) for t, x in enumerate(q.tolist()) if x > 0 and t not in excl]
    items.sort(key=lambda it: (-it[0], it[1]))
    out = [t for _, t in items]
    return out if limit is None else out[:limit]


#: Vocabulary size up to which :func:`rank` with a limit sorts the whole law (faster there than a
#: partition followed by a sort of the survivors).
SMALL_VOCAB = 512


def _rank_float(q: np.ndarray, exclude: Sequence[int], limit: int | None) -> list[int]:
    """:func:`rank` for a float64 law # [vocab], in O(V) plus a sort of the kept entries."""
    vals = np.asarray(q, dtype=np.float64)
    if len(exclude):
        vals = vals.copy()
        vals[np.asarray([int(t) for t in exclude], dtype=np.int64)] = 0.0
    if limit is not None and vals.size <= SMALL_VOCAB:
        # a stable sort of -q orders by decreasing probability, ties by smaller id
        top = np.argsort(-vals, kind="stable")[:limit]
        return [int(t) for t in top if vals[t] > 0]
    ids = np.flatnonzero(vals > 0)  # [support]
    if limit is not None and ids.size > limit:
        sub = vals[ids]
        kth = np.partition(sub, sub.size - limit)[sub.size - limit]  # limit-th largest value
        # NOTE: every id tied with the threshold is kept here; the sort below breaks ties by id.
        ids = ids[sub >= kth]
    order = np.lexsort((ids, -vals[ids]))
    out = ids[order].tolist()
    return out if limit is None else out[:limit]


def tv(p, q):
    r"""Total-variation distance sum |p - q| / 2 (exact for exact laws).

    One sampled draft from q is accepted with probability 1 - tv(p, q). Computed as
    :math:`\sum (p - q)_+`, which equals the half-sum of :math:`|p - q|` because both laws sum to 1.

    Parameters
    ----------
    p, q : numpy.ndarray of shape (V,), Fractions or float64
        The target and the draft law # [vocab].

    Returns
    -------
    fractions.Fraction or float
        The distance, in [0, 1].

    Examples
    --------
    >>> print(tv(exact_law(["1/2", "1/2"]), exact_law(["3/4", "1/4"])))
    1/4
    """
    d = p - q
    return total(pos(d))


def inverse_cdf(weights, u: float) -> int:
    r"""The index drawn by the uniform ``u`` from the law proportional to ``weights``.

    With :math:`C_i = \sum_{j \le i} w_j` the cumulative weights (``# [n]``), this is the first
    :math:`i` with :math:`u\,C_{n-1} < C_i`, so index :math:`i` is drawn with probability
    :math:`w_i / C_{n-1}` when :math:`u \sim U[0, 1)`, and an index of zero weight never is.
    Every random choice of the package (builders' draws, the sampled walk, the decoder) is one
    call of this function with the next uniform of its stream.

    Parameters
    ----------
    weights : array_like of shape (n,), Fractions or float64
        Non-negative weights (exact or float; computed in float64), not all zero.
    u : float
        A uniform draw in [0, 1).

    Returns
    -------
    int
        The drawn index, in [0, n), of positive weight.

    Raises
    ------
    LawError
        If the weights sum to 0 (nothing can be drawn).

    Examples
    --------
    >>> inverse_cdf([0.0, 1.0, 0.0, 3.0], 0.2), inverse_cdf([0.0, 1.0, 0.0, 3.0], 0.25)
    (1, 3)
    """
    w = np.maximum(np.asarray(weights, dtype=np.float64), 0.0)  # [n] NOTE: clears float round-off below 0
    c = w.cumsum()  # [n]
    total = c[-1]
    if not total > 0:
        raise LawError("cannot sample from an all-zero law")
    i = int(c.searchsorted(u * total, side="right"))
    if i >= w.shape[0]:  # NOTE: u * total rounded up to the total; take the last token of positive weight
        i = int(np.flatnonzero(w)[-1])
    return i


def softmax(logits: np.ndarray) -> np.ndarray:
    """Numerically stable float softmax of a 1-D array.

    Parameters
    ----------
    logits : numpy.ndarray of shape (V,)
        Finite logits # [vocab].

    Returns
    -------
    numpy.ndarray of shape (V,), float64
        ``exp(logits - max) / sum(exp(logits - max))``.
    """
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max()
    e = np.exp(z)
    return e / e.sum()


def temper_logits(logits: np.ndarray, temperature: float) -> np.ndarray:
    """Float law softmax(logits / T); T = 0 is exact greedy (argmax, ties by smaller token id).

    Parameters
    ----------
    logits : numpy.ndarray of shape (V,)
        Finite logits # [vocab].
    temperature : float
        The temperature T >= 0.

    Returns
    -------
    numpy.ndarray of shape (V,), float64
        The tempered law; one-hot on the first maximum when T = 0.

    Raises
    ------
    LawError
        If ``temperature`` is negative, NaN or infinite.
    """
    if not math.isfinite(temperature) or temperature < 0:
        raise LawError(f"temperature must be a finite number >= 0, got {temperature!r}")
    z = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        out = np.zeros_like(z)
        out[int(np.argmax(z))] = 1.0  # np.argmax returns the first maximum: ties by token id
        return out
    return softmax(z / temperature)


def top_k_mask(q: np.ndarray, k: int) -> np.ndarray:
    """Boolean mask of the k most probable tokens (ties by smaller id).

    Parameters
    ----------
    q : numpy.ndarray of shape (V,), Fractions or float64
        A law # [vocab] (compared in float64).
    k : int
        How many tokens to keep, >= 1; a k above V keeps all.

    Returns
    -------
    numpy.ndarray of shape (V,), bool
        True on the kept tokens (exactly min(k, V) of them, zero-probability tokens included when
        fewer than k have mass).

    Raises
    ------
    LawError
        If ``k < 1``.
    """
    if k <= 0:
        raise LawError(f"top-k truncation needs k >= 1, got {k}")
    k = min(k, q.size)
    order = np.lexsort((np.arange(q.size), -np.asarray(q, dtype=np.float64)))
    mask = np.zeros(q.size, dtype=bool)
    mask[order[:k]] = True
    return mask


def to_exact(law: np.ndarray, max_denominator: int = EXACT_DENOMINATOR) -> np.ndarray:
    """Round a float law to nearby rationals and renormalise exactly (zeros stay zero)."""
    vals = [Fraction(float(x)).limit_denominator(max_denominator) for x in law]
    if all(v == 0 for v in vals):
        raise LawError("law rounds to all zeros")
    s = sum(vals)
    return np.array([v / s for v in vals], dtype=object)


def to_float(law: np.ndarray) -> np.ndarray:
    """Float64 copy of an exact or float law."""
    if getattr(law, "dtype", object) != object:
        return np.array(law, dtype=np.float64)  # NOTE: vectorised; the loop below is for Fractions
    return np.array([float(x) for x in law], dtype=np.float64)
