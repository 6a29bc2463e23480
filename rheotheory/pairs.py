"""LM pairs: a target p(. | prefix) and a draft q(. | prefix) over one vocabulary.

Every pair exposes the same small protocol, used by tree builders, verifiers and enumerators:

- ``vocab_size`` (int) and ``exact`` (bool: laws are Fraction object arrays, else float64);
- ``p(prefix)`` and ``q(prefix)``: the target and draft laws after ``prefix`` (a tuple of ids),
  each a ``# [vocab]`` array.

:class:`ToyPair` holds both tables explicitly for every prefix up to a horizon (the object the
exhaustive certifier works on) and reads/writes the instance JSON format::

    {"vocab_size": 3, "horizon": 2,
     "target": {"": ["1/2", "1/3", "1/6"], "0": [...], "0 1": [...], ...},
     "draft":  {"": ["0.5", "0.25", "0.25"], ...}}

A *generated* instance names a seeded keyed generator instead of tabulating it (V^0 + ... + V^H
rows per table would not fit at V = 1000)::

    {"kind": "generated", "vocab_size": 1000, "horizon": 8, "seed": 0,
     "mismatch": 1.0, "zero_prob": 0.0}

It is read as a :class:`GeneratedPair`, which derives the laws at a prefix from (seed, prefix)
alone, only for the prefixes a computation asks for; ``random_pair(..., keyed=True)`` tabulates
the same laws (its *tabulated twin*). ``mismatch`` and ``zero_prob`` are optional.

Input rules, checked here once for every reader of the format and every generator. A violation
raises :class:`~rheotheory.errors.InstanceError` with one line saying what is wrong and where
(file, table, prefix key); nothing is allocated or parsed before the bound that covers it:

- a file is a regular file (not a device, FIFO or directory) of at most
  :data:`MAX_INSTANCE_BYTES` bytes of UTF-8 JSON, nested at most :data:`MAX_JSON_DEPTH` deep,
  without NaN/Infinity literals or repeated object keys;
- a prefix key is canonical, exactly as the writer spells it: decimal token ids in ASCII digits,
  no sign, no leading zero, separated by single spaces ("" is the empty prefix). No two keys can
  name the same prefix, so no row can silently overwrite another;
- a probability is a finite number in [0, 1], its text bounded before it is parsed
  (:func:`rheotheory.laws.parse_number`);
- a table holds at most ``max_entries`` probabilities (default :data:`MAX_TABLE_ENTRIES`):
  V * (V^0 + ... + V^H) is checked before a table is read or generated;
- the generators take a seed in 0..:data:`MAX_SEED`, finite parameters, and a temperature that is
  0 (greedy) or at least :data:`MIN_TEMPERATURE`.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import stat
from dataclasses import dataclass
from fractions import Fraction
from numbers import Real
from pathlib import Path
from typing import Iterator

import numpy as np

from . import laws
from .errors import InstanceError, LawError, RheoError

__all__ = [
    "ToyPair",
    "prefixes",
    "table_rows",
    "check_table_size",
    "random_pair",
    "keyed_laws",
    "GeneratedPair",
    "logits_pair",
    "example_pair",
    "MAX_TABLE_ENTRIES",
    "MAX_INSTANCE_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_SEED",
    "MIN_TEMPERATURE",
    "MAX_LOGIT_SCALE",
    "MAX_KEYED_HORIZON",
    "GENERATED_KIND",
]

Prefix = tuple[int, ...]

#: Most probabilities in one table (prefix rows x vocab, rows = V^0 + ... + V^H), checked before
#: a table is read or generated; ``max_entries`` raises it. The largest binary table under the
#: cap, random_pair(2, 19) with 2,097,150 entries per table, takes 56 s and 0.8 GB in exact mode.
MAX_TABLE_ENTRIES = 2**21

#: Largest instance file read, in bytes. A written entry takes 3 to 20 bytes ("0", "1/3",
#: "0.1234"), so files of tables under MAX_TABLE_ENTRIES with short numbers fit.
MAX_INSTANCE_BYTES = 64 * 2**20

#: Deepest bracket nesting read from an instance file. The format needs 3 (instance, table, law);
#: the margin lets a malformed file reach the field checks, which say what is wrong.
MAX_JSON_DEPTH = 32

#: Largest generator seed (numpy takes any non-negative int; this is the range of an int64).
MAX_SEED = 2**63 - 1

#: Smallest positive temperature of :func:`logits_pair`. With |logits| <= MAX_LOGIT_SCALE * 40,
#: l / T stays below 4e7, far from float64 overflow (T = 1e-308 gave NaN laws). T = 0 is exact
#: greedy; a T in (0, MIN_TEMPERATURE) is refused, never silently raised to the minimum.
MIN_TEMPERATURE = 1e-3

#: Largest |logit_scale|, |draft_scale| and |noise| of :func:`logits_pair` (see MIN_TEMPERATURE).
MAX_LOGIT_SCALE = 1e3

#: Most characters of a key or value shown in an error message.
_SHOW = 40


def prefixes(vocab_size: int, horizon: int) -> Iterator[Prefix]:
    """All prefixes of length 0..horizon in lexicographic order by length.

    Parameters
    ----------
    vocab_size : int
        The vocabulary size V (token ids 0..V-1).
    horizon : int
        The longest prefix length H.

    Yields
    ------
    tuple of int
        Each prefix, the empty one first: V^0 + ... + V^H of them.
    """
    for length in range(horizon + 1):
        yield from itertools.product(range(vocab_size), repeat=length)


def _key(prefix: Prefix) -> str:
    """The canonical key of a prefix: its ids in decimal, separated by single spaces."""
    return " ".join(str(t) for t in prefix)


#: What :func:`_key` writes, and the only key spelling read: "" or ids without sign or leading 0.
_CANONICAL_KEY = re.compile(r"(?:(?:0|[1-9][0-9]*)(?: (?:0|[1-9][0-9]*))*)?", re.ASCII)


def _show(text: str) -> str:
    """``repr(text)`` cut to a length that fits an error line."""
    return repr(text) if len(text) <= _SHOW else repr(text[:_SHOW]) + f"... ({len(text)} characters)"


def _parse_key(key, vocab_size: int, horizon: int, table: str) -> Prefix:
    """The prefix named by a canonical key.

    Any other spelling ("01", "+1", "0_2", non-ASCII digits, double spaces) is refused: ``int``
    would read it as the same ids as the canonical key, and the later row would silently
    overwrite the earlier one.
    """
    if not isinstance(key, str):
        raise InstanceError(f"{table}: prefix key {laws._show(key)} is not a string")
    if _CANONICAL_KEY.fullmatch(key) is None:
        raise InstanceError(f"{table}: prefix key {_show(key)} is not canonical: write token ids in ASCII "
                            "decimal without sign or leading zeros, separated by single spaces (e.g. '0 12')")
    parts = key.split(" ") if key else []
    if len(parts) > horizon:
        raise InstanceError(f"{table}: prefix {_show(key)} is longer than the horizon {horizon}")
    width = len(str(vocab_size - 1))
    for t in parts:
        # NOTE: the digit count is checked first, so a 5000-digit id never reaches int()
        if len(t) > width or int(t) >= vocab_size:
            raise InstanceError(f"{table}: prefix key {_show(key)} has token {_show(t)} outside 0..{vocab_size - 1}")
    return tuple(int(t) for t in parts)


def _check_dims(vocab_size, horizon) -> None:
    if not isinstance(vocab_size, int) or isinstance(vocab_size, bool) or vocab_size < 1:
        raise InstanceError(f"vocab_size must be a positive integer, got {laws._show(vocab_size)}")
    if not isinstance(horizon, int) or isinstance(horizon, bool) or horizon < 0:
        raise InstanceError(f"horizon must be a non-negative integer, got {laws._show(horizon)}")


def table_rows(vocab_size: int, horizon: int, limit: int) -> int:
    """V^0 + ... + V^H, or ``limit + 1`` once the sum exceeds ``limit``.

    A huge horizon costs a few steps, never a huge power.

    Parameters
    ----------
    vocab_size : int
        The vocabulary size V >= 1.
    horizon : int
        The longest prefix length H >= 0.
    limit : int
        The count beyond which summing stops.

    Returns
    -------
    int
        The number of prefix rows of one table, or ``limit + 1`` if it is above ``limit``.

    Examples
    --------
    >>> table_rows(3, 2, limit=100), table_rows(2, 10**6, limit=100)
    (13, 101)
    """
    if vocab_size == 1:
        return min(horizon + 1, limit + 1)
    total, term = 0, 1
    for _ in range(horizon + 1):
        total += term
        if total > limit:
            return limit + 1
        term *= vocab_size
    return total


def check_table_size(vocab_size: int, horizon: int, max_entries: int = MAX_TABLE_ENTRIES) -> int:
    """Validate V and H; return the number of prefix rows V^0 + ... + V^H of one table.

    Parameters
    ----------
    vocab_size : int
        The vocabulary size V, a positive int.
    horizon : int
        The longest prefix length H, a non-negative int.
    max_entries : int, default MAX_TABLE_ENTRIES
        Most probabilities (rows x V) one table may hold.

    Returns
    -------
    int
        The number of prefix rows of one table.

    Raises
    ------
    InstanceError
        If V or H is not an int in range, or (one line naming the cap and the parameter that raises
        it) if a table would hold more than ``max_entries`` probabilities.
    """
    _check_dims(vocab_size, horizon)
    rows = table_rows(vocab_size, horizon, max_entries)
    if rows * vocab_size > max_entries:
        V, H = laws._show(vocab_size), laws._show(horizon)  # NOTE: f"{n}" fails beyond 4300 digits
        raise InstanceError(f"vocab_size {V} and horizon {H} need {table_entries_text(vocab_size, horizon)} "
                            f"probabilities per table (V x (V^0 + ... + V^H) prefix rows), over the cap of "
                            f"{max_entries} (MAX_TABLE_ENTRIES; raise it with --max-entries, or the max_entries "
                            "parameter)")
    return rows


def table_entries_text(vocab_size: int, horizon: int) -> str:
    """The probabilities of one table, V x (V^0 + ... + V^H): exact when short, else a power of ten
    (never computing a huge power).

    >>> table_entries_text(4, 3), table_entries_text(100000, 5), table_entries_text(2, 10**400)
    ('340', 'about 10^30.0', 'more than 10^308')
    """
    try:
        rows_log = math.log10(horizon + 1) if vocab_size == 1 else (
            (horizon + 1) * math.log10(vocab_size) - math.log10(vocab_size - 1))
        log = rows_log + math.log10(vocab_size)
    except OverflowError:
        return "more than 10^308"
    if not math.isfinite(log):
        return "more than 10^308"
    if log < 15:
        rows = horizon + 1 if vocab_size == 1 else (vocab_size ** (horizon + 1) - 1) // (vocab_size - 1)
        return str(rows * vocab_size)
    return f"about 10^{log:.1f}"


@dataclass(frozen=True)
class ToyPair:
    """An explicit target/draft pair over a small vocabulary, for every prefix up to ``horizon``.

    The tables are validated on construction: every prefix of length 0..horizon has a law in each,
    no key is longer than the horizon, and every law passes :func:`rheotheory.laws.check_law` in the
    number type ``exact`` names.

    Attributes
    ----------
    vocab_size : int
        V, number of tokens (ids 0..V-1).
    horizon : int
        Longest prefix length with a stored law.
    target : dict[tuple of int, numpy.ndarray of shape (V,)]
        Prefix tuple -> law p(. | prefix), # [vocab].
    draft : dict[tuple of int, numpy.ndarray of shape (V,)]
        Prefix tuple -> law q(. | prefix), # [vocab].
    exact : bool
        True: Fraction object arrays; False: float64 arrays.

    Raises
    ------
    InstanceError
        If V or H is out of range, a table is not a dict, misses a prefix or has one longer than
        the horizon, or a law's number type does not match ``exact``.
    LawError
        If a law is not a probability vector of length V.
    """

    vocab_size: int  # V, number of tokens (ids 0..V-1)
    horizon: int  # longest prefix length with a stored law
    target: dict  # prefix tuple -> law p(. | prefix), # [vocab]
    draft: dict  # prefix tuple -> law q(. | prefix), # [vocab]
    exact: bool  # True: Fraction object arrays; False: float64 arrays

    def __post_init__(self):
        _check_dims(self.vocab_size, self.horizon)
        for name, table in (("target", self.target), ("draft", self.draft)):
            if not isinstance(table, dict):
                raise InstanceError(f"{name} must be a dict mapping prefix tuples to laws")
            # NOTE: the tables are already built, so counting rows up to their size bounds the
            # work: a table short of V^0 + ... + V^H rows misses a prefix found within len + 1 steps.
            if table_rows(self.vocab_size, self.horizon, len(table)) > len(table):
                missing = next(pre for pre in prefixes(self.vocab_size, self.horizon) if pre not in table)
                raise InstanceError(f"{name}: missing prefix {_key(missing)!r}")
            for pre in prefixes(self.vocab_size, self.horizon):
                if pre not in table:
                    raise InstanceError(f"{name}: missing prefix {_key(pre)!r}")
                law = table[pre]
                laws.check_law(law, name=f"{name}[{_key(pre)!r}]", vocab_size=self.vocab_size)
                if (law.dtype == object) != self.exact:
                    raise InstanceError(f"{name}[{_key(pre)!r}]: number type does not match exact={self.exact}")
            extra = [k for k in table if len(k) > self.horizon]
            if extra:
                raise InstanceError(f"{name}: prefix {_key(extra[0])!r} is longer than the horizon {self.horizon}")

    # -- the pair protocol -------------------------------------------------------------------
    def p(self, prefix: Prefix) -> np.ndarray:
        """Target law after ``prefix``. # [vocab]

        Parameters
        ----------
        prefix : tuple of int
            The token ids before the position, of length at most ``horizon``.

        Returns
        -------
        numpy.ndarray of shape (V,), Fractions or float64
            p(. | prefix), the stored array itself (not a copy).

        Raises
        ------
        InstanceError
            If the table has no law for ``prefix`` (too long, or a token outside the vocabulary).
        """
        try:
            return self.target[prefix]
        except KeyError:
            raise InstanceError(f"target: no law for prefix {_key(prefix)!r} (horizon {self.horizon})") from None

    def q(self, prefix: Prefix) -> np.ndarray:
        """Draft law after ``prefix``. # [vocab]

        Parameters
        ----------
        prefix : tuple of int
            The token ids before the position, of length at most ``horizon``.

        Returns
        -------
        numpy.ndarray of shape (V,), Fractions or float64
            q(. | prefix), the stored array itself (not a copy).

        Raises
        ------
        InstanceError
            If the table has no law for ``prefix`` (too long, or a token outside the vocabulary).
        """
        try:
            return self.draft[prefix]
        except KeyError:
            raise InstanceError(f"draft: no law for prefix {_key(prefix)!r} (horizon {self.horizon})") from None

    # -- conversions -------------------------------------------------------------------------
    def to_float(self) -> "ToyPair":
        """The same pair in float64.

        Returns
        -------
        ToyPair
            ``self`` when already float, else a new pair with every law converted by
            :func:`rheotheory.laws.to_float`.
        """
        if not self.exact:
            return self
        conv = lambda t: {k: laws.to_float(v) for k, v in t.items()}  # noqa: E731
        return ToyPair(self.vocab_size, self.horizon, conv(self.target), conv(self.draft), exact=False)

    def to_exact(self) -> "ToyPair":
        """The same pair in exact rationals (floats are converted exactly, then renormalised).

        Returns
        -------
        ToyPair
            ``self`` when already exact, else a new pair whose laws are the exact values of the floats
            divided by their exact sum.
        """
        if self.exact:
            return self

        def conv(t):
            out = {}
            for k, v in t.items():
                vals = [Fraction(float(x)) for x in v]
                s = sum(vals)
                out[k] = np.array([x / s for x in vals], dtype=object)
            return out

        return ToyPair(self.vocab_size, self.horizon, conv(self.target), conv(self.draft), exact=True)

    def to_dict(self) -> dict:
        """The instance JSON object (exact values as "a/b" strings, floats as numbers).

        Returns
        -------
        dict
            ``{"vocab_size", "horizon", "target", "draft"}``, each table keyed by the canonical prefix
            key (ids separated by single spaces, "" for the empty prefix) in the order of
            :func:`prefixes`.

        Raises
        ------
        InstanceError
            If an exact probability has an integer of more than :data:`rheotheory.laws.MAX_INT_DIGITS`
            digits, beyond the instance format.
        """
        def enc(x, name, pre):
            if not self.exact:
                return float(x)
            try:
                return laws.format_number(x)
            except ValueError:  # NOTE: str(int) refuses more than laws.MAX_INT_DIGITS digits
                raise InstanceError(f"{name}[{_key(pre)!r}]: an exact probability has more than "
                                    f"{laws.MAX_INT_DIGITS} digits (MAX_INT_DIGITS), beyond the instance "
                                    "format; use a smaller vocabulary or a float pair") from None

        def table(t, name):
            return {_key(k): [enc(x, name, k) for x in t[k]] for k in prefixes(self.vocab_size, self.horizon)}

        return {"vocab_size": self.vocab_size, "horizon": self.horizon,
                "target": table(self.target, "target"), "draft": table(self.draft, "draft")}

    def save(self, path) -> None:
        """Write the instance JSON file (:meth:`to_dict`, one space of indent, a final newline).

        Parameters
        ----------
        path : str or os.PathLike
            The file to write (UTF-8), replaced if it exists.

        Raises
        ------
        InstanceError
            If :meth:`to_dict` cannot write an exact probability.
        """
        Path(path).write_text(json.dumps(self.to_dict(), indent=1) + "\n", encoding="utf-8")

    @classmethod
    def from_dict(cls, obj, exact: bool = True, max_entries: int = MAX_TABLE_ENTRIES) -> "ToyPair":
        """Parse an instance object; ``exact`` selects the number type of the laws.

        An object with a ``"kind"`` field is read by :meth:`GeneratedPair.from_dict` and returns a
        :class:`GeneratedPair`.

        Parameters
        ----------
        obj : dict
            The parsed instance JSON object (see the module docstring for the format).
        exact : bool, default True
            Read the laws as Fraction object arrays (True) or float64 (False).
        max_entries : int, default MAX_TABLE_ENTRIES
            Most probabilities per table (see :func:`check_table_size`), checked before a table is read.

        Returns
        -------
        ToyPair or GeneratedPair
            The pair; a :class:`GeneratedPair` for a generated instance.

        Raises
        ------
        InstanceError
            One line, on any input that breaks the rules of the module docstring: not an object, a
            missing field, a table too large, a non-canonical or out-of-range prefix key, a row of the
            wrong type or length, a probability outside [0, 1], a law that does not sum to 1.
        """
        if not isinstance(obj, dict):
            raise InstanceError("instance must be a JSON object with vocab_size, horizon, target and draft")
        if "kind" in obj:
            # NOTE: a generated instance is read as a GeneratedPair, not a ToyPair: it has the pair
            # protocol (p, q, vocab_size, horizon, exact, to_float, to_exact) but no tables.
            return GeneratedPair.from_dict(obj, exact=exact, max_entries=max_entries)
        for field in ("vocab_size", "horizon", "target", "draft"):
            if field not in obj:
                raise InstanceError(f"instance is missing the field {field!r}")
        v, h = obj["vocab_size"], obj["horizon"]
        check_table_size(v, h, max_entries)
        tables = {}
        for name in ("target", "draft"):
            raw = obj[name]
            if not isinstance(raw, dict):
                raise InstanceError(f"{name} must be an object mapping prefixes to lists of probabilities")
            table = {}
            for key, vals in raw.items():
                pre = _parse_key(key, v, h, name)
                if not isinstance(vals, list):
                    raise InstanceError(f"{name}[{_show(key)}] must be a list of {v} probabilities")
                if len(vals) != v:
                    raise InstanceError(f"{name}[{_show(key)}] has {len(vals)} entries but vocab_size is {v}")
                try:
                    table[pre] = np.array([laws.parse_probability(x, exact) for x in vals],
                                          dtype=object if exact else np.float64)  # [vocab]
                except LawError as e:
                    raise InstanceError(f"{name}[{_show(key)}]: {e}") from None
            tables[name] = table
        try:
            return cls(v, h, tables["target"], tables["draft"], exact=exact)
        except LawError as e:
            raise InstanceError(str(e)) from None

    @classmethod
    def load(cls, path, exact: bool = True, max_entries: int = MAX_TABLE_ENTRIES) -> "ToyPair":
        """Read an instance file (see the module docstring for the format and its rules).

        Parameters
        ----------
        path : str or os.PathLike
            The instance file: a regular UTF-8 JSON file of at most :data:`MAX_INSTANCE_BYTES` bytes.
        exact : bool, default True
            Read the laws as Fraction object arrays (True) or float64 (False).
        max_entries : int, default MAX_TABLE_ENTRIES
            Most probabilities per table (see :func:`check_table_size`).

        Returns
        -------
        ToyPair or GeneratedPair
            The pair (see :meth:`from_dict`).

        Raises
        ------
        InstanceError
            One line starting ``instance <path>:`` if the file cannot be read, is not a regular file, is
            too large or too deeply nested, is not UTF-8 JSON (NaN/Infinity literals and repeated keys
            refused), or breaks a rule of :meth:`from_dict`.
        """
        name = _show(os.fsdecode(path)) if isinstance(path, (str, bytes, os.PathLike)) else laws._show(path)
        try:
            obj = _parse_json(_read_text(path, name), name)
            return cls.from_dict(obj, exact=exact, max_entries=max_entries)
        except RheoError as e:
            raise InstanceError(f"instance {name}: {e}") from None


# -- reading files -------------------------------------------------------------------------------

def _read_text(path, name: str) -> str:
    """The text of a regular UTF-8 file of at most MAX_INSTANCE_BYTES bytes."""
    if not isinstance(path, (str, bytes, os.PathLike)):  # NOTE: os.stat would take an int as a descriptor
        raise RheoError(f"the path must be a string or path, got {type(path).__name__}")
    try:
        info = os.stat(path)
    except (OSError, ValueError, TypeError) as e:  # ValueError: a NUL in the path
        raise RheoError(f"cannot read: {getattr(e, 'strerror', None) or e}") from None
    if not stat.S_ISREG(info.st_mode):
        raise RheoError("not a regular file (a directory, device or FIFO cannot be an instance)")
    if info.st_size > MAX_INSTANCE_BYTES:
        raise RheoError(f"{info.st_size} bytes, over the cap of {MAX_INSTANCE_BYTES} (MAX_INSTANCE_BYTES)")
    try:
        # NOTE: O_NONBLOCK and the fstat below: if the path was swapped for a FIFO or device since
        # the stat, the open cannot block and the swap is caught.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise RheoError("not a regular file")
            data = f.read(MAX_INSTANCE_BYTES + 1)
    except OSError as e:
        raise RheoError(f"cannot read: {e.strerror or e}") from None
    if len(data) > MAX_INSTANCE_BYTES:
        raise RheoError(f"more than {MAX_INSTANCE_BYTES} bytes (MAX_INSTANCE_BYTES)")
    depth = _json_depth(data)
    if depth > MAX_JSON_DEPTH:
        raise RheoError(f"JSON nested {depth} deep, over the cap of {MAX_JSON_DEPTH} (MAX_JSON_DEPTH)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RheoError(f"not UTF-8 text (byte {e.start})") from None


#: A JSON string literal, escapes included (the unrolled form matches in linear time).
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)

#: All bytes but the four brackets, deleted by bytes.translate in :func:`_json_depth`.
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def _json_depth(data: bytes) -> int:
    """Deepest bracket nesting of JSON text, strings skipped; linear time, no recursion.

    UTF-8 continuation bytes are >= 0x80, so an ASCII bracket or quote byte is always that
    character. Malformed text may be miscounted; json then reports it (RecursionError included).
    """
    brackets = _JSON_STRING.sub(b"", data).translate(None, _NOT_BRACKETS)
    if not brackets:
        return 0
    b = np.frombuffer(brackets, dtype=np.uint8)  # [brackets]
    steps = np.where((b == ord("[")) | (b == ord("{")), 1, -1)
    return int(np.cumsum(steps).max())


def _json_int(text: str) -> int:
    if len(text.lstrip("-")) > laws.MAX_INT_DIGITS:
        raise RheoError(f"an integer of {len(text)} digits, over {laws.MAX_INT_DIGITS}")
    return int(text)


def _json_float(text: str) -> float:
    # NOTE: float() of any exponent is fast and 1e400 becomes inf, which parse_number refuses
    # with its key; only the length needs a bound.
    if len(text) > laws.MAX_NUMBER_CHARS:
        raise RheoError(f"a number of {len(text)} characters, over {laws.MAX_NUMBER_CHARS}")
    return float(text)


def _json_constant(text: str):
    raise RheoError(f"{text} is not a JSON number; write probabilities in [0, 1]")


def _json_object(pairs: list) -> dict:
    obj = {}
    for k, val in pairs:
        if k in obj:
            raise RheoError(f"the key {_show(k)} appears twice in one object")
        obj[k] = val
    return obj


def _parse_json(text: str, name: str):
    try:
        return json.loads(text, object_pairs_hook=_json_object, parse_int=_json_int, parse_float=_json_float,
                          parse_constant=_json_constant)
    except json.JSONDecodeError as e:
        raise RheoError(f"not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    except RecursionError:
        raise RheoError(f"JSON nested too deep (MAX_JSON_DEPTH is {MAX_JSON_DEPTH})") from None


# -- generators --------------------------------------------------------------------------------

#: Resolution of the random exact pairs: probabilities are integer weights / their sum, with
#: weights in 0..RANDOM_WEIGHT_SCALE. Small denominators keep exact arithmetic fast.
RANDOM_WEIGHT_SCALE = 12


def _check_seed(seed) -> None:
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or not 0 <= seed <= MAX_SEED:
        raise InstanceError(f"seed must be an integer in 0..{MAX_SEED} (MAX_SEED), got {laws._show(seed)}")


def _check_real(name: str, value, lo: float, hi: float, hi_open: bool = False) -> None:
    """A finite real ``value`` in [lo, hi] (or [lo, hi) with ``hi_open``)."""
    ok = isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or not lo <= value <= hi or (hi_open and value == hi):
        where = f">= {lo:g}" if hi == math.inf else f"in [{lo:g}, {hi:g}{')' if hi_open else ']'}"
        raise InstanceError(f"{name} must be a finite number {where}, got {laws._show(value)}")


def _weights_law(rng: np.random.Generator, vocab_size: int, base=None, mismatch: float = 1.0,
                 zero_prob: float = 0.0) -> np.ndarray:
    """Exact law from small integer weights; optionally mixed with ``base`` weights."""
    w = rng.integers(1, RANDOM_WEIGHT_SCALE + 1, size=vocab_size)
    if zero_prob > 0:
        w = np.where(rng.random(vocab_size) < zero_prob, 0, w)
    if base is not None:
        w = np.rint((1 - mismatch) * base + mismatch * w).astype(int)
    if w.sum() == 0:
        w[rng.integers(vocab_size)] = 1
    s = int(w.sum())
    return np.array([Fraction(int(x), s) for x in w], dtype=object), w


def random_pair(vocab_size: int, horizon: int, seed: int = 0, exact: bool = True,
                mismatch: float = 1.0, zero_prob: float = 0.0, max_entries: int = MAX_TABLE_ENTRIES,
                keyed: bool = False) -> ToyPair:
    """A random pair from small integer weights (a coarse, seeded Dirichlet-like family).

    Probabilities are integer weights in 0 to :data:`RANDOM_WEIGHT_SCALE` divided by their sum.

    Parameters
    ----------
    vocab_size : int
        The vocabulary size V >= 1.
    horizon : int
        The longest prefix length H >= 0.
    seed : int, default 0
        The generator seed, in 0 to :data:`MAX_SEED`.
    exact : bool, default True
        Return Fraction laws (True) or their float64 conversion (False).
    mismatch : float, default 1.0
        In [0, 1]: mixes the draft's weights between the target's (0: q = p) and independent ones
        (1).
    zero_prob : float, default 0.0
        In [0, 1): the chance that a weight is 0 (tests zero-mass tokens).
    max_entries : int, default MAX_TABLE_ENTRIES
        Most probabilities per table (see :func:`check_table_size`).
    keyed : bool, default False
        ``False`` draws every prefix's weights from one sequential stream seeded with ``seed``, in
        the order of :func:`prefixes`: the instances every committed certificate
        (``simulations/results/certify_table.csv``, ``benchmarks/certificate_snapshot.py``) was
        computed on. ``True`` draws each prefix's laws from (seed, prefix) alone
        (:func:`keyed_laws`): the tabulated twin of ``GeneratedPair(vocab_size, horizon, seed)``,
        equal to it on every prefix. The two generators give different laws for the same seed.

    Returns
    -------
    ToyPair
        The pair, with a law for every prefix up to the horizon.

    Raises
    ------
    InstanceError
        If V, H, the seed, ``mismatch`` or ``zero_prob`` is out of range, or a table would hold more
        than ``max_entries`` probabilities.
    """
    check_table_size(vocab_size, horizon, max_entries)
    _check_seed(seed)
    _check_real("mismatch", mismatch, 0, 1)
    _check_real("zero_prob", zero_prob, 0, 1, hi_open=True)
    target, draft = {}, {}
    if keyed:
        for pre in prefixes(vocab_size, horizon):
            target[pre], draft[pre] = keyed_laws(seed, pre, vocab_size, mismatch, zero_prob)
    else:
        rng = np.random.default_rng(seed)
        for pre in prefixes(vocab_size, horizon):
            target[pre], w = _weights_law(rng, vocab_size, zero_prob=zero_prob)
            draft[pre], _ = _weights_law(rng, vocab_size, base=w, mismatch=mismatch, zero_prob=zero_prob)
    pair = ToyPair(vocab_size, horizon, target, draft, exact=True)
    return pair if exact else pair.to_float()


# -- keyed generation: the laws at a prefix from (seed, prefix) alone -----------------------------

#: The stream tag of the target's and of the draft's weights in a keyed stream's key.
TARGET_STREAM, DRAFT_STREAM = 0, 1

#: Largest horizon of a keyed generator: the key holds the prefix length in one 32-bit word.
MAX_KEYED_HORIZON = 2**32 - 1

#: The ``kind`` of a generated instance object (see the module docstring).
GENERATED_KIND = "generated"

#: The fields a generated instance object may hold, and the optional ones with their defaults.
_GENERATED_FIELDS = ("kind", "vocab_size", "horizon", "seed", "mismatch", "zero_prob")
_GENERATED_DEFAULTS = {"mismatch": 1.0, "zero_prob": 0.0}

_WORD = 2**32  # one uint32 word of a key


def _keyed_rng(seed: int, stream: int, prefix: Prefix) -> np.random.Generator:
    """The generator of one (seed, stream, prefix), independent of every other key.

    The key is the uint32 words ``[seed mod 2^32, seed div 2^32, stream, len(prefix), *prefix]``.
    NOTE: the length word makes the encoding injective: ``numpy.random.SeedSequence`` pads its
    entropy with zeros, so ``[s, 0]`` and ``[s, 0, 0]`` would give the same stream without it.
    """
    words = np.array([seed % _WORD, seed // _WORD, stream, len(prefix), *prefix], dtype=np.uint32)  # [4 + len]
    return np.random.default_rng(np.random.SeedSequence(words))


def keyed_laws(seed: int, prefix: Prefix, vocab_size: int, mismatch: float = 1.0,
               zero_prob: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """The exact target and draft laws after ``prefix`` of the keyed generator, ``# [vocab]`` each.

    The same weights rule as :func:`random_pair` (:func:`_weights_law`), the target's weights
    from the stream keyed by (seed, TARGET_STREAM, prefix) and the draft's from (seed,
    DRAFT_STREAM, prefix), so a prefix's laws never depend on which other prefixes were drawn.
    Arguments are not checked here (:class:`GeneratedPair` and :func:`random_pair` do it).

    Parameters
    ----------
    seed : int
        The generator seed, in 0 to :data:`MAX_SEED`.
    prefix : tuple of int
        The token ids before the position, at most :data:`MAX_KEYED_HORIZON` of them.
    vocab_size : int
        The vocabulary size V.
    mismatch : float, default 1.0
        In [0, 1]: the draft's weights mix the target's (0) and independent ones (1).
    zero_prob : float, default 0.0
        In [0, 1): the chance that a weight is 0.

    Returns
    -------
    p, q : numpy.ndarray of shape (V,), Fractions
        The target and the draft law after ``prefix``.
    """
    p, w = _weights_law(_keyed_rng(seed, TARGET_STREAM, prefix), vocab_size, zero_prob=zero_prob)
    q, _ = _weights_law(_keyed_rng(seed, DRAFT_STREAM, prefix), vocab_size, base=w, mismatch=mismatch,
                        zero_prob=zero_prob)
    return p, q


class GeneratedPair:
    """A random pair generated lazily: the laws at a prefix are made when first asked for.

    The laws are those of the keyed generator (:func:`keyed_laws`), so ``GeneratedPair(V, H,
    seed)`` equals ``random_pair(V, H, seed, keyed=True)`` (its tabulated twin) on every prefix,
    in exact and in float mode, while only the prefixes a computation visits are ever made. An
    exhaustive certificate visits few of the V^0 + ... + V^H prefixes (at V = 1000, H = 8 the
    table would have about 10^24 rows).

    Made laws are cached for the pair's lifetime (a law of V = 1000 exact entries takes about
    100 kB).

    Parameters
    ----------
    vocab_size : int
        The vocabulary size V (ids 0..V-1), as for :func:`random_pair`.
    horizon : int
        The longest prefix with a law, at most :data:`MAX_KEYED_HORIZON`.
    seed : int, default 0
        The generator seed, in 0 to :data:`MAX_SEED`.
    exact : bool, default True
        True: laws are Fraction object arrays; False: float64 (``laws.to_float`` of the exact
        laws, as :meth:`ToyPair.to_float` converts them).
    mismatch : float, default 1.0
        In [0, 1], as for :func:`random_pair`.
    zero_prob : float, default 0.0
        In [0, 1), as for :func:`random_pair`.
    max_entries : int, default MAX_TABLE_ENTRIES
        Most probabilities in one law: the vocabulary is refused beyond it, as a table is.

    Raises
    ------
    InstanceError
        If V or H is out of range (H above :data:`MAX_KEYED_HORIZON` included), V is above
        ``max_entries``, or the seed, ``mismatch`` or ``zero_prob`` is out of range.

    Examples
    --------
    >>> pair = GeneratedPair(3, 2, seed=5)
    >>> all(list(pair.p(u)) == list(random_pair(3, 2, seed=5, keyed=True).p(u)) for u in prefixes(3, 2))
    True
    """

    def __init__(self, vocab_size: int, horizon: int, seed: int = 0, exact: bool = True, mismatch: float = 1.0,
                 zero_prob: float = 0.0, max_entries: int = MAX_TABLE_ENTRIES):
        _check_dims(vocab_size, horizon)
        if horizon > MAX_KEYED_HORIZON:
            raise InstanceError(f"horizon {laws._show(horizon)} is over the cap of {MAX_KEYED_HORIZON} "
                                "(MAX_KEYED_HORIZON) of a generated pair")
        if vocab_size > max_entries:
            raise InstanceError(f"vocab_size {laws._show(vocab_size)} needs {laws._show(vocab_size)} probabilities per "
                                f"law, over the cap of {max_entries} (MAX_TABLE_ENTRIES; raise it with --max-entries, "
                                "or the max_entries parameter)")
        _check_seed(seed)
        _check_real("mismatch", mismatch, 0, 1)
        _check_real("zero_prob", zero_prob, 0, 1, hi_open=True)
        self.vocab_size = vocab_size  # V, number of tokens (ids 0..V-1)
        self.horizon = horizon  # longest prefix length with a law
        self.seed = int(seed)
        self.exact = bool(exact)  # True: Fraction object arrays; False: float64 arrays
        self.mismatch = mismatch
        self.zero_prob = zero_prob
        self.max_entries = max_entries
        self._laws: dict = {}  # prefix -> (p, q), each # [vocab]

    def __repr__(self) -> str:
        return (f"GeneratedPair(vocab_size={self.vocab_size}, horizon={self.horizon}, seed={self.seed}, "
                f"exact={self.exact}, mismatch={self.mismatch}, zero_prob={self.zero_prob})")

    def describe(self) -> str:
        """A one-line name of the pair, e.g. ``generated V=1000 H=8 seed=0``.

        Returns
        -------
        str
            The name (vocabulary, horizon and seed; ``mismatch`` and ``zero_prob`` left out).
        """
        return f"generated V={self.vocab_size} H={self.horizon} seed={self.seed}"

    # -- the pair protocol -------------------------------------------------------------------
    def _pq(self, prefix: Prefix, name: str) -> tuple[np.ndarray, np.ndarray]:
        try:
            hit = self._laws.get(prefix)
        except TypeError:  # NOTE: an unhashable prefix (a list) is refused below, with its name
            hit = None
        if hit is not None:
            return hit
        ok = (isinstance(prefix, tuple) and len(prefix) <= self.horizon
              and all(isinstance(t, (int, np.integer)) and not isinstance(t, bool) and 0 <= t < self.vocab_size
                      for t in prefix))
        if not ok:
            raise InstanceError(f"{name}: no law for prefix {laws._show(prefix)} (vocab_size {self.vocab_size}, "
                                f"horizon {self.horizon})")
        prefix = tuple(int(t) for t in prefix)
        p, q = keyed_laws(self.seed, prefix, self.vocab_size, self.mismatch, self.zero_prob)
        if not self.exact:
            p, q = laws.to_float(p), laws.to_float(q)
        hit = self._laws[prefix] = (p, q)
        return hit

    def p(self, prefix: Prefix) -> np.ndarray:
        """Target law after ``prefix``. # [vocab]

        Parameters
        ----------
        prefix : tuple of int
            The token ids before the position, each in 0..V-1, at most ``horizon`` of them.

        Returns
        -------
        numpy.ndarray of shape (V,), Fractions or float64
            p(. | prefix), made on first use and cached.

        Raises
        ------
        InstanceError
            If ``prefix`` is not a tuple of token ids of the vocabulary, or is longer than the horizon.
        """
        return self._pq(prefix, "target")[0]

    def q(self, prefix: Prefix) -> np.ndarray:
        """Draft law after ``prefix``. # [vocab]

        Parameters
        ----------
        prefix : tuple of int
            The token ids before the position, each in 0..V-1, at most ``horizon`` of them.

        Returns
        -------
        numpy.ndarray of shape (V,), Fractions or float64
            q(. | prefix), made on first use and cached.

        Raises
        ------
        InstanceError
            If ``prefix`` is not a tuple of token ids of the vocabulary, or is longer than the horizon.
        """
        return self._pq(prefix, "draft")[1]

    # -- conversions -------------------------------------------------------------------------
    def _with(self, exact: bool) -> "GeneratedPair":
        return GeneratedPair(self.vocab_size, self.horizon, self.seed, exact=exact, mismatch=self.mismatch,
                             zero_prob=self.zero_prob, max_entries=self.max_entries)

    def to_float(self) -> "GeneratedPair":
        """The same pair in float64.

        Returns
        -------
        GeneratedPair
            ``self`` when already float, else a new float pair of the same generator (empty cache).
        """
        return self if not self.exact else self._with(False)

    def to_exact(self) -> "GeneratedPair":
        """The same pair in exact rationals: the generator's own rationals (its laws are exact).

        Returns
        -------
        GeneratedPair
            ``self`` when already exact, else a new exact pair of the same generator (empty cache).
        """
        return self if self.exact else self._with(True)

    def tabulate(self, max_entries: int | None = None) -> ToyPair:
        """The tabulated twin, ``random_pair(..., keyed=True)`` (bounded by ``max_entries``).

        Parameters
        ----------
        max_entries : int, optional
            Most probabilities per table; the pair's own ``max_entries`` when None.

        Returns
        -------
        ToyPair
            Every prefix's laws up to the horizon, in the pair's number type.

        Raises
        ------
        InstanceError
            If the table would hold more than ``max_entries`` probabilities.
        """
        return random_pair(self.vocab_size, self.horizon, self.seed, exact=self.exact, mismatch=self.mismatch,
                           zero_prob=self.zero_prob, keyed=True,
                           max_entries=self.max_entries if max_entries is None else max_entries)

    def to_dict(self) -> dict:
        """The generated instance object (see the module docstring).

        Returns
        -------
        dict
            ``{"kind": "generated", "vocab_size", "horizon", "seed", "mismatch", "zero_prob"}``.
        """
        return {"kind": GENERATED_KIND, "vocab_size": self.vocab_size, "horizon": self.horizon, "seed": self.seed,
                "mismatch": self.mismatch, "zero_prob": self.zero_prob}

    def save(self, path) -> None:
        """Write the generated instance JSON file (:meth:`to_dict` on one line, a final newline).

        Parameters
        ----------
        path : str or os.PathLike
            The file to write (UTF-8), replaced if it exists.
        """
        Path(path).write_text(json.dumps(self.to_dict()) + "\n", encoding="utf-8")

    @classmethod
    def from_dict(cls, obj, exact: bool = True, max_entries: int = MAX_TABLE_ENTRIES) -> "GeneratedPair":
        """Parse a generated instance object; InstanceError (one line) on anything else.

        Parameters
        ----------
        obj : dict
            The instance object: ``"kind": "generated"``, ``vocab_size``, ``horizon`` and ``seed``, and
            optionally ``mismatch`` (default 1.0) and ``zero_prob`` (default 0.0).
        exact : bool, default True
            Make Fraction laws (True) or float64 (False).
        max_entries : int, default MAX_TABLE_ENTRIES
            Most probabilities in one law.

        Returns
        -------
        GeneratedPair
            The pair.

        Raises
        ------
        InstanceError
            If ``obj`` is not a dict, its kind is not ``"generated"``, it has an unknown field or misses
            a required one, or a value is out of range.
        """
        if not isinstance(obj, dict):
            raise InstanceError("a generated instance must be a JSON object")
        kind = obj.get("kind")
        if kind != GENERATED_KIND:
            raise InstanceError(f"unknown instance kind {laws._show(kind)}; the only kind is {GENERATED_KIND!r} "
                                "(a tabulated instance has no kind field)")
        extra = [k for k in obj if k not in _GENERATED_FIELDS]
        if extra:
            raise InstanceError(f"a generated instance has no field {_show(str(extra[0]))}; its fields are "
                                f"{', '.join(_GENERATED_FIELDS)}")
        for name in ("vocab_size", "horizon", "seed"):
            if name not in obj:
                raise InstanceError(f"generated instance is missing the field {name!r}")
        opts = {k: obj.get(k, d) for k, d in _GENERATED_DEFAULTS.items()}
        return cls(obj["vocab_size"], obj["horizon"], obj["seed"], exact=exact, max_entries=max_entries, **opts)


def logits_pair(vocab_size: int, horizon: int, seed: int = 0, temperature: float = 1.0,
                temper_draft: bool = False, draft_scale: float = 1.0, noise: float = 0.5,
                logit_scale: float = 2.0, exact: bool = True, max_entries: int = MAX_TABLE_ENTRIES) -> ToyPair:
    """A pair from Gaussian logits: target softmax(l / T), draft from perturbed logits.

    For each prefix the target's logits are ``l = logit_scale * N(0, 1)`` # [vocab], and the draft's
    ``draft_scale * l + noise * N(0, 1)``, all from one stream seeded with ``seed``.

    Parameters
    ----------
    vocab_size : int
        The vocabulary size V >= 1.
    horizon : int
        The longest prefix length H >= 0.
    seed : int, default 0
        The generator seed, in 0 to :data:`MAX_SEED`.
    temperature : float, default 1.0
        The target's temperature T: 0 is exact greedy (argmax, ties by smaller id); a positive T
        must be at least :data:`MIN_TEMPERATURE`.
    temper_draft : bool, default False
        Temper the draft with T too; False leaves it at temperature 1, as EAGLE does.
    draft_scale : float, default 1.0
        Factor on the target's logits in the draft's: > 1 makes a cooler, < 1 a hotter draft;
        |draft_scale| at most :data:`MAX_LOGIT_SCALE`.
    noise : float, default 0.5
        Standard deviation of the draft's logit noise; |noise| at most :data:`MAX_LOGIT_SCALE`.
    logit_scale : float, default 2.0
        Standard deviation of the target's logits; |logit_scale| at most :data:`MAX_LOGIT_SCALE`.
    exact : bool, default True
        Round the float laws to rationals (:func:`rheotheory.laws.to_exact`, renormalised exactly)
        or keep them float64.
    max_entries : int, default MAX_TABLE_ENTRIES
        Most probabilities per table (see :func:`check_table_size`).

    Returns
    -------
    ToyPair
        The pair.

    Raises
    ------
    InstanceError
        If a positive temperature is below :data:`MIN_TEMPERATURE`, or V, H, the seed, the
        temperature or a scale is out of range, or a table would hold more than ``max_entries``
        probabilities.
    """
    check_table_size(vocab_size, horizon, max_entries)
    _check_seed(seed)
    _check_real("temperature", temperature, 0, math.inf)
    if 0 < temperature < MIN_TEMPERATURE:
        raise InstanceError(f"temperature must be 0 (greedy) or at least {MIN_TEMPERATURE:g} (MIN_TEMPERATURE), "
                            f"got {temperature!r}")
    for name, value in (("draft_scale", draft_scale), ("noise", noise), ("logit_scale", logit_scale)):
        _check_real(name, value, -MAX_LOGIT_SCALE, MAX_LOGIT_SCALE)
    rng = np.random.default_rng(seed)
    target, draft = {}, {}
    for pre in prefixes(vocab_size, horizon):
        lt = logit_scale * rng.standard_normal(vocab_size)
        ld = draft_scale * lt + noise * rng.standard_normal(vocab_size)
        p = laws.temper_logits(lt, temperature)
        q = laws.temper_logits(ld, temperature if temper_draft else 1.0)
        target[pre] = laws.to_exact(p) if exact else p
        draft[pre] = laws.to_exact(q) if exact else q
    return ToyPair(vocab_size, horizon, target, draft, exact=exact)


#: The built-in example: ``random_pair(**EXAMPLE_PAIR)``, shipped exact in ``data/example_pair.json``
#: (reading it is ~4x faster than importing numpy.random to draw it, which ``rheo certify``'s
#: start-up feels; a test checks the file equals the draw).
EXAMPLE_PAIR = dict(vocab_size=4, horizon=3, seed=7, mismatch=0.6)
EXAMPLE_PAIR_FILE = os.path.join(os.path.dirname(__file__), "data", "example_pair.json")


def example_pair(exact: bool = True) -> ToyPair:
    """The built-in example instance used when ``rheo certify`` is given no file.

    It is ``random_pair(**EXAMPLE_PAIR)`` (V = 4, H = 3, seed 7, mismatch 0.6), read exact from
    ``data/example_pair.json``.

    Parameters
    ----------
    exact : bool, default True
        Return the exact pair (read from the file) or its float64 version (drawn).

    Returns
    -------
    ToyPair
        The example pair.
    """
    if not exact:
        return random_pair(**EXAMPLE_PAIR, exact=False)
    return ToyPair.load(EXAMPLE_PAIR_FILE)
