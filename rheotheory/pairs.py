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
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Iterator

import numpy as np

from . import laws
from .errors import InstanceError, LawError

__all__ = [
    "ToyPair",
    "prefixes",
    "random_pair",
    "logits_pair",
    "example_pair",
]

Prefix = tuple[int, ...]

#: Vocabulary/horizon limits of an explicit table: V^0 + ... + V^H prefixes are stored.
MAX_TABLE_PREFIXES = 2_000_000


def prefixes(vocab_size: int, horizon: int) -> Iterator[Prefix]:
    """All prefixes of length 0..horizon in lexicographic order by length."""
    for length in range(horizon + 1):
        yield from itertools.product(range(vocab_size), repeat=length)


def _key(prefix: Prefix) -> str:
    return " ".join(str(t) for t in prefix)


def _parse_key(key: str, vocab_size: int, table: str) -> Prefix:
    if not isinstance(key, str):
        raise InstanceError(f"{table}: prefix key {key!r} is not a string")
    parts = key.split()
    if " ".join(parts) != key:
        raise InstanceError(f"{table}: prefix key {key!r} must be token ids separated by single spaces")
    try:
        toks = tuple(int(t) for t in parts)
    except ValueError:
        raise InstanceError(f"{table}: prefix key {key!r} is not a list of token ids") from None
    for t in toks:
        if not 0 <= t < vocab_size:
            raise InstanceError(f"{table}: prefix key {key!r} has token {t} outside 0..{vocab_size - 1}")
    return toks


@dataclass(frozen=True)
class ToyPair:
    """An explicit target/draft pair over a small vocabulary, for every prefix up to ``horizon``."""

    vocab_size: int  # V, number of tokens (ids 0..V-1)
    horizon: int  # longest prefix length with a stored law
    target: dict  # prefix tuple -> law p(. | prefix), # [vocab]
    draft: dict  # prefix tuple -> law q(. | prefix), # [vocab]
    exact: bool  # True: Fraction object arrays; False: float64 arrays

    def __post_init__(self):
        if not isinstance(self.vocab_size, int) or isinstance(self.vocab_size, bool) or self.vocab_size < 1:
            raise InstanceError(f"vocab_size must be a positive integer, got {self.vocab_size!r}")
        if not isinstance(self.horizon, int) or isinstance(self.horizon, bool) or self.horizon < 0:
            raise InstanceError(f"horizon must be a non-negative integer, got {self.horizon!r}")
        n = sum(self.vocab_size**k for k in range(self.horizon + 1))
        if n > MAX_TABLE_PREFIXES:
            raise InstanceError(f"vocab_size {self.vocab_size} and horizon {self.horizon} need {n} prefixes "
                                f"(limit {MAX_TABLE_PREFIXES}); use a synthetic pair instead")
        for name, table in (("target", self.target), ("draft", self.draft)):
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
        """Target law after ``prefix``. # [vocab]"""
        try:
            return self.target[prefix]
        except KeyError:
            raise InstanceError(f"target: no law for prefix {_key(prefix)!r} (horizon {self.horizon})") from None

    def q(self, prefix: Prefix) -> np.ndarray:
        """Draft law after ``prefix``. # [vocab]"""
        try:
            return self.draft[prefix]
        except KeyError:
            raise InstanceError(f"draft: no law for prefix {_key(prefix)!r} (horizon {self.horizon})") from None

    # -- conversions -------------------------------------------------------------------------
    def to_float(self) -> "ToyPair":
        """The same pair in float64."""
        if not self.exact:
            return self
        conv = lambda t: {k: laws.to_float(v) for k, v in t.items()}  # noqa: E731
        return ToyPair(self.vocab_size, self.horizon, conv(self.target), conv(self.draft), exact=False)

    def to_exact(self) -> "ToyPair":
        """The same pair in exact rationals (floats are converted exactly, then renormalised)."""
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
        """The instance JSON object (exact values as "a/b" strings, floats as numbers)."""
        enc = (lambda x: laws.format_number(x)) if self.exact else float  # noqa: E731
        table = lambda t: {_key(k): [enc(x) for x in t[k]] for k in prefixes(self.vocab_size, self.horizon)}  # noqa: E731
        return {"vocab_size": self.vocab_size, "horizon": self.horizon,
                "target": table(self.target), "draft": table(self.draft)}

    def save(self, path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1) + "\n")

    @classmethod
    def from_dict(cls, obj, exact: bool = True) -> "ToyPair":
        """Parse an instance object; ``exact`` selects the number type of the laws."""
        if not isinstance(obj, dict):
            raise InstanceError("instance must be a JSON object with vocab_size, horizon, target and draft")
        for field in ("vocab_size", "horizon", "target", "draft"):
            if field not in obj:
                raise InstanceError(f"instance is missing the field {field!r}")
        v, h = obj["vocab_size"], obj["horizon"]
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise InstanceError(f"vocab_size must be a positive integer, got {v!r}")
        if not isinstance(h, int) or isinstance(h, bool) or h < 0:
            raise InstanceError(f"horizon must be a non-negative integer, got {h!r}")
        tables = {}
        for name in ("target", "draft"):
            raw = obj[name]
            if not isinstance(raw, dict):
                raise InstanceError(f"{name} must be an object mapping prefixes to lists of probabilities")
            table = {}
            for key, vals in raw.items():
                pre = _parse_key(key, v, name)
                if not isinstance(vals, list):
                    raise InstanceError(f"{name}[{key!r}] must be a list of {v} probabilities")
                if len(vals) != v:
                    raise InstanceError(f"{name}[{key!r}] has {len(vals)} entries but vocab_size is {v}")
                try:
                    table[pre] = laws.exact_law(vals) if exact else np.array(
                        [float(laws.parse_number(x, exact=True)) for x in vals], dtype=np.float64)
                except LawError as e:
                    raise InstanceError(f"{name}[{key!r}]: {e}") from None
            tables[name] = table
        return cls(v, h, tables["target"], tables["draft"], exact=exact)

    @classmethod
    def load(cls, path, exact: bool = True) -> "ToyPair":
        """Read an instance file (see the module docstring for the format)."""
        try:
            text = Path(path).read_text()
        except OSError as e:
            raise InstanceError(f"cannot read instance {str(path)!r}: {e.strerror}") from None
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            raise InstanceError(f"instance {str(path)!r} is not valid JSON: {e.msg} at line {e.lineno}") from None
        return cls.from_dict(obj, exact=exact)


# -- generators --------------------------------------------------------------------------------

#: Resolution of the random exact pairs: probabilities are integer weights / their sum, with
#: weights in 0..RANDOM_WEIGHT_SCALE. Small denominators keep exact arithmetic fast.
RANDOM_WEIGHT_SCALE = 12


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
                mismatch: float = 1.0, zero_prob: float = 0.0) -> ToyPair:
    """A random pair from small integer weights (a coarse, seeded Dirichlet-like family).

    ``mismatch`` in [0, 1] mixes the draft's weights between the target's (0: q = p) and
    independent ones (1); ``zero_prob`` is the chance that a weight is 0 (tests zero-mass tokens).
    """
    if not 0 <= mismatch <= 1:
        raise InstanceError(f"mismatch must be in [0, 1], got {mismatch!r}")
    if not 0 <= zero_prob < 1:
        raise InstanceError(f"zero_prob must be in [0, 1), got {zero_prob!r}")
    rng = np.random.default_rng(seed)
    target, draft = {}, {}
    for pre in prefixes(vocab_size, horizon):
        target[pre], w = _weights_law(rng, vocab_size, zero_prob=zero_prob)
        draft[pre], _ = _weights_law(rng, vocab_size, base=w, mismatch=mismatch, zero_prob=zero_prob)
    pair = ToyPair(vocab_size, horizon, target, draft, exact=True)
    return pair if exact else pair.to_float()


def logits_pair(vocab_size: int, horizon: int, seed: int = 0, temperature: float = 1.0,
                temper_draft: bool = False, draft_scale: float = 1.0, noise: float = 0.5,
                logit_scale: float = 2.0, exact: bool = True) -> ToyPair:
    """A pair from Gaussian logits: target softmax(l / T), draft from perturbed logits.

    The draft's logits are ``draft_scale * l + noise * N(0, 1)`` (``draft_scale`` > 1 makes a cooler,
    < 1 a hotter draft). ``temper_draft=False`` leaves the draft untempered, as EAGLE does; T = 0
    is exact greedy on the target (and on the draft if tempered).
    """
    if temperature < 0:
        raise InstanceError(f"temperature must be >= 0, got {temperature!r}")
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


def example_pair(exact: bool = True) -> ToyPair:
    """The built-in example instance used when ``rheo certify`` is given no file."""
    return random_pair(vocab_size=4, horizon=3, seed=7, exact=exact, mismatch=0.6)
