r"""A calibrated Monte-Carlo lossless test on the extended output law (REFERENCE section 4).

A step outputs Z of length 1..D+1. Complete every sampled Z to length ``L = D + 1`` with fresh
target samples (``y ~ p(. | prefix)``, exactly what the next step would produce) and call the
result W. The method is lossless iff, for every ``l <= L``, the law of ``W[:l]`` is the target
law :math:`p(z_{:l}) = \prod_i p(z_i \mid z_{<i})` -- this is the criterion of REFERENCE
section 4 (its left-hand side is the law of ``W[:l]``).

For each length ``l`` a Pearson chi-square goodness-of-fit test compares the counts of
``W[:l]`` with ``n p``. The cells are built from the target alone, before looking at the data:

- a prefix ``u`` is *big* when its expected count :math:`n\,p(u)` is at least
  ``min_expected`` (the root always is); big prefixes of length ``l`` are cells;
- below every big prefix ``u`` shorter than ``l``, the tokens ``y`` whose ``uy`` is not big are
  pooled into one cell "u, then a rare token" of expected count
  :math:`n\,p(u)\,(1 - \sum_{uy\ \mathrm{big}} p(y \mid u))`;
- pooled cells still under ``min_expected`` are merged into one leftover cell (merged with the
  smallest other cell if it is itself under ``min_expected``).

The ``L`` p-values (one per length, dependent) are combined with Bonferroni's correction
(the overall p-value is ``min(1, L * min_l p_l)``, the smallest level at which Holm's
procedure rejects some length), so the false-rejection rate is at most ``alpha`` up to the
chi-square approximation. ``simulations/calibration.py`` measures it and the power.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .errors import RheoError
from .methods import Method
from .montecarlo import mean_ci, sample_outputs
from .trees import RandomChooser

__all__ = ["LengthTest", "LosslessTest", "extend_outputs", "chi_square_by_length", "lossless_test",
           "DEFAULT_MIN_EXPECTED", "DEFAULT_ALPHA"]

#: Smallest expected count of a chi-square cell (the usual rule of thumb for the approximation).
DEFAULT_MIN_EXPECTED = 5.0

#: Default significance level of the lossless test.
DEFAULT_ALPHA = 0.01

#: Seed-sequence tag of the completion stream (the step stream uses other tags).
_COMPLETION_TAG = 7


@dataclass(frozen=True)
class LengthTest:
    """The chi-square test of one length l."""

    length: int  # l
    statistic: float  # Pearson's X^2
    df: int  # cells - 1
    p_value: float
    cells: int  # number of cells after pooling
    worst_cell: str  # the cell with the largest contribution to X^2, for the failure message
    observed: int  # its observed count
    expected: float  # its expected count


@dataclass(frozen=True)
class LosslessTest:
    """Verdict of :func:`lossless_test` (plain data)."""

    lossless: bool  # True: the test did not reject at level alpha
    p_value: float  # Bonferroni-combined over the lengths
    alpha: float
    samples: int  # sampled steps n
    tokens_per_step: float  # mean |Z|
    tau_low: float  # its 95% confidence interval
    tau_high: float
    per_length: tuple = field(default_factory=tuple)  # LengthTest for l = 1..D+1

    def to_dict(self) -> dict:
        return {
            "lossless": self.lossless, "p_value": self.p_value, "alpha": self.alpha, "samples": self.samples,
            "tokens_per_step": self.tokens_per_step, "tokens_per_step_ci95": [self.tau_low, self.tau_high],
            "per_length": [{"length": t.length, "statistic": t.statistic, "df": t.df, "p_value": t.p_value,
                            "cells": t.cells, "worst_cell": t.worst_cell, "observed": t.observed,
                            "expected": t.expected} for t in self.per_length],
        }


def extend_outputs(pair, outputs, length: int, rng: np.random.Generator) -> list[tuple]:
    """Complete each output to ``length`` tokens with fresh target samples (W of the docstring)."""
    chooser = RandomChooser(rng)
    out = []
    for z in outputs:
        w = tuple(z)
        while len(w) < length:
            w = w + (chooser.draw(pair.p(w)),)
        out.append(w[:length])
    return out


def _trie(pair, n: int, max_len: int, min_expected: float):
    """Big prefixes (expected count >= min_expected) up to ``max_len`` and the pooled mass
    below each big prefix shorter than ``max_len``."""
    big = {(): 1.0}  # prefix -> p(prefix)
    pooled = {}  # big prefix u (|u| < max_len) -> p(u, then a token y with uy not big)
    stack = [()]
    while stack:
        u = stack.pop()
        pu = big[u]
        if len(u) == max_len:
            continue
        pl = np.asarray(pair.p(u), dtype=np.float64)  # [vocab]
        ys = np.flatnonzero(pl * (n * pu) >= min_expected)
        for y in ys.tolist():
            big[u + (y,)] = pu * float(pl[y])
            stack.append(u + (y,))
        pooled[u] = pu * max(0.0, 1.0 - float(pl[ys].sum()))
    return big, pooled


def chi_square_by_length(pair, seqs: list[tuple], max_len: int,
                         min_expected: float = DEFAULT_MIN_EXPECTED) -> list[LengthTest]:
    """Pearson chi-square tests of the laws of ``W[:l]``, l = 1..max_len, against the target."""
    n = len(seqs)
    big, pooled = _trie(pair, n, max_len, min_expected)
    results = []
    for l in range(1, max_len + 1):
        names, mass = [], []
        index = {}
        for u, pu in big.items():
            if len(u) == l:
                index[("leaf", u)] = len(names)
                names.append(" ".join(map(str, u)))
                mass.append(pu)
        leftover = len(names)
        names.append("(pooled rare sequences)")
        mass.append(0.0)
        for u, pm in pooled.items():
            if len(u) < l:
                if n * pm >= min_expected:
                    index[("pool", u)] = len(names)
                    names.append(" ".join(map(str, u)) + " <rare>")
                    mass.append(pm)
                else:
                    index[("pool", u)] = leftover
                    mass[leftover] += pm
        obs = np.zeros(len(names))
        for w in seqs:
            u = ()
            for i in range(l):
                nxt = w[:i + 1]
                if nxt in big:
                    u = nxt
                    continue
                obs[index[("pool", u)]] += 1
                break
            else:
                obs[index[("leaf", u)]] += 1
        mass = np.asarray(mass)
        keep = np.ones(len(names), dtype=bool)
        others = [i for i in range(len(names)) if i != leftover]
        if mass[leftover] * n < min_expected and others:
            # NOTE: a small leftover cell is merged into the smallest other cell (still a partition).
            j = min(others, key=lambda i: mass[i])
            mass[j] += mass[leftover]
            obs[j] += obs[leftover]
            names[j] = names[j] + " + " + names[leftover]
            keep[leftover] = False
        obs, mass = obs[keep], mass[keep]
        names = [nm for nm, k in zip(names, keep) if k]
        exp = n * mass / mass.sum()
        if len(obs) < 2:
            results.append(LengthTest(l, 0.0, 0, 1.0, len(obs), names[0] if names else "", int(obs.sum()), float(n)))
            continue
        contrib = (obs - exp) ** 2 / exp
        stat = float(contrib.sum())
        df = len(obs) - 1
        pval = float(_chi2_sf(stat, df))
        j = int(np.argmax(contrib))
        results.append(LengthTest(l, stat, df, pval, len(obs), names[j], int(obs[j]), float(exp[j])))
    return results


def _chi2_sf(stat: float, df: int) -> float:
    # NOTE: scipy.stats is imported here, not at module level: it takes seconds to import and
    # every `rheo` invocation imports this module while building its parser.
    from scipy import stats as sps

    return sps.chi2.sf(stat, df)


def combined_p_value(tests: list[LengthTest]) -> float:
    """Bonferroni combination min(1, L * min p_l)."""
    return min(1.0, len(tests) * min(t.p_value for t in tests))


def _check(samples, alpha, min_expected):
    if not isinstance(samples, (int, np.integer)) or isinstance(samples, bool) or samples < 2:
        raise RheoError(f"samples must be an integer >= 2, got {samples!r}")
    if not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise RheoError(f"alpha must be in (0, 1), got {alpha!r}")
    if not isinstance(min_expected, (int, float)) or not min_expected > 0 or not math.isfinite(min_expected):
        raise RheoError(f"min_expected must be a positive number, got {min_expected!r}")


def lossless_test(pair, method: Method, samples: int = 2000, alpha: float = DEFAULT_ALPHA, seed: int = 0,
                  min_expected: float = DEFAULT_MIN_EXPECTED) -> LosslessTest:
    """Sample ``samples`` steps of ``method`` from the pair's root prefix and test losslessness.

    Reproducible from ``seed``. ``lossless`` is True when the combined p-value exceeds ``alpha``.
    """
    _check(samples, alpha, min_expected)
    pair = pair.to_float() if getattr(pair, "exact", False) else pair
    L = method.depth + 1
    horizon = getattr(pair, "horizon", None)
    if horizon is not None and horizon < method.depth:
        raise RheoError(f"depth {method.depth} exceeds the instance horizon {horizon} "
                        "(need prefixes up to length D)")
    outs = sample_outputs(pair, method, samples, seed)
    seqs = extend_outputs(pair, outs, L, np.random.default_rng([int(seed), _COMPLETION_TAG]))
    tests = chi_square_by_length(pair, seqs, L, min_expected)
    pv = combined_p_value(tests)
    tau, lo, hi = mean_ci([len(z) for z in outs])
    return LosslessTest(pv > alpha, pv, float(alpha), int(samples), tau, lo, hi, tuple(tests))
