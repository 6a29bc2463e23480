r"""The law test of the audit: one test, whatever emits the tokens (docs/theory.md section 6.7).

An audited *setting* is something that emits token sequences after a fixed prompt (a user's
verifier driven by the harness of :mod:`rheotheory.audit.user`, or an engine's ``generate``
driven by an adapter of :mod:`rheotheory.audit.engines`) together with the exact law those
sequences must follow if the thing is lossless: the target's law of the first ``L`` generated
tokens, :math:`p(z_{1:L}) = \prod_{i \le L} p(z_i \mid z_{<i})`, after the sampling settings the
engine claims to apply (temperature, top-k, ...). The core knows nothing about engines; an
adapter knows nothing about statistics.

For each setting the core

1. builds the cells of the test from the target law and ``N`` alone, before any run
   (:func:`rheotheory.stats.prefix_cells`: the frequent prefixes, the pooling rule);
2. draws ``N`` runs and tests the law of their first ``L`` tokens with Pearson's chi-square
   (:meth:`rheotheory.stats.PrefixCells.chi_square`);
3. states the test's power: the smallest total variation between the tested law of ``L``
   tokens and the target's that the test detects with probability :data:`POWER`
   (:func:`detectable_tv`).

Settings are independent runs; the audit's p-value is their Bonferroni combination
``min(1, C min_j p_j)`` over the ``C`` settings, so that a bug showing in one setting only is
not diluted by the others, and the stated power is per setting at level ``alpha / C``: a
deviation of at least ``min_detectable_tv`` in **any one** setting is detected with probability
at least 0.8 (chi-square approximation). The verdict is ``lossy`` iff ``p < alpha``
(:func:`rheotheory.stats.rejects`); ``lossless`` means "not rejected at this N", never a proof.

A setting whose ``detail`` names ``by_design`` (the option that makes the engine approximate on
purpose, e.g. ``assistant_ensemble_weight=0.5``) is tested like any other, but when the only
settings rejected at ``alpha / C`` are such settings the verdict is ``lossy-by-design``, naming
them: the engine does what that option says, and it is not a bug. Every setting's ``detail``
records the ``dtype`` the audited code computed its laws in, where the adapter knows it.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

from ..errors import RheoError
from ..stats import DEFAULT_MIN_EXPECTED, NextLaws, bonferroni, pool_cells, prefix_cells, rejects

__all__ = ["Setting", "SettingResult", "AuditResult", "detectable_tv", "run_audit", "POWER", "DEFAULT_ALPHA",
           "LOSSY", "LOSSLESS", "LOSSY_BY_DESIGN", "verdict_of"]

#: Power at which the smallest detected deviation is stated.
POWER = 0.8

#: Default level of the audit's test (the same as ``rheo mc``'s).
DEFAULT_ALPHA = 0.01

#: The two verdicts (``lossless`` = not rejected at the stated N and power).
LOSSLESS, LOSSY = "lossless", "lossy"

#: The verdict when the only rejected settings are approximate on purpose (module docstring).
LOSSY_BY_DESIGN = "lossy-by-design"

#: ``(n, seed) -> n`` generated sequences of at least ``length`` tokens each.
Sampler = Callable[[int, int], Sequence[tuple]]


@dataclass(frozen=True)
class Setting:
    """One audited configuration: what emits the tokens and the law they must follow."""

    name: str  # short label, unique within an audit (e.g. "k=2 ties")
    length: int  # L: the number of generated tokens whose joint law is tested
    laws: NextLaws  # exact target laws: continuations u (tuples, one length) -> # [len(u), V]
    sample: Sampler  # the runs: (n, seed) -> n tuples of >= L tokens (the tokens after the prompt)
    detail: dict = field(default_factory=dict)  # plain data describing the setting (for the report)


@dataclass(frozen=True)
class SettingResult:
    """The test of one setting (plain data)."""

    name: str
    length: int
    runs: int
    statistic: float
    df: int
    p_value: float
    min_detectable_tv: float  # at level alpha / settings and power POWER
    worst_cell: str
    observed: int
    expected: float
    seconds: float
    detail: dict

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class AuditResult:
    """Verdict of :func:`run_audit` (plain data; :meth:`to_dict` is what ``--json`` prints)."""

    subject: str  # what was audited (a function spec, an engine and its version)
    verdict: str  # LOSSLESS (not rejected) or LOSSY (rejected at alpha)
    p_value: float  # Bonferroni over the settings
    alpha: float
    runs: int  # runs in all
    min_detectable_tv: float  # largest per-setting value: any one setting off by this much is caught
    power: float
    settings: tuple  # SettingResult per setting
    seconds: float

    @property
    def worst(self) -> SettingResult:
        """The setting that deviates most (smallest p-value; the first on a tie)."""
        return min(self.settings, key=lambda s: s.p_value)

    def to_dict(self) -> dict:
        return {"subject": self.subject, "verdict": self.verdict, "p_value": self.p_value, "alpha": self.alpha,
                "runs": self.runs, "min_detectable_tv": self.min_detectable_tv, "power": self.power,
                "worst_setting": self.worst.to_dict(), "seconds": round(self.seconds, 3),
                "settings": [s.to_dict() for s in self.settings]}

    def summary(self) -> str:
        """One line: the verdict as the docs phrase it."""
        w = self.worst
        said = ("not rejected" if self.verdict == LOSSLESS else "rejected")
        return (f"{self.subject}: {self.verdict} ({said} at alpha = {self.alpha:g}: p = {self.p_value:.3g}, "
                f"N = {self.runs} runs over {len(self.settings)} settings; detects TV >= "
                f"{self.min_detectable_tv:.3g} in any one setting with power {self.power:g}; "
                f"most deviating: {w.name!r}, p = {w.p_value:.3g})" + self._by_design())

    def _by_design(self) -> str:
        if self.verdict != LOSSY_BY_DESIGN:
            return ""
        level = self.alpha / len(self.settings)
        named = sorted({f"{s.detail['by_design']} (setting {s.name!r})" for s in self.settings
                        if s.p_value < level and s.detail.get("by_design")})
        return "; approximate on purpose: " + ", ".join(named)


def verdict_of(results: Sequence[SettingResult], p_value: float, alpha: float, level: float) -> str:
    """``lossless``, ``lossy`` or ``lossy-by-design`` (module docstring): the audit rejects iff
    ``p_value < alpha``; it is lossy by design iff every setting rejected at ``level`` names a
    ``by_design`` option."""
    if not rejects(p_value, alpha):
        return LOSSLESS
    hit = [r for r in results if rejects(r.p_value, level)]
    return LOSSY_BY_DESIGN if hit and all(r.detail.get("by_design") for r in hit) else LOSSY


def detectable_tv(df: int, n: int, level: float, power: float = POWER) -> float:
    r"""Smallest total variation ``d`` of a cell law that Pearson's test of ``n`` observations
    with ``df`` degrees of freedom at level ``level`` detects with probability ``power``.

    Under a deviation :math:`\delta` of the cell law :math:`\pi`, Pearson's statistic is
    asymptotically non-central chi-square with non-centrality
    :math:`\lambda = n \sum_c \delta_c^2 / \pi_c \ge 4 n d^2` (Cauchy-Schwarz;
    docs/theory.md section 6.5). With :math:`\lambda^*` the non-centrality at which the power is
    ``power``, every deviation with :math:`d \ge \sqrt{\lambda^* / (4n)}` is detected with at
    least that probability. With no degree of freedom nothing is detected: ``inf``.

    >>> round(detectable_tv(1, 1000, 0.05), 4)
    0.0443
    >>> detectable_tv(0, 1000, 0.05)
    inf
    """
    if df < 1 or n < 1:
        return math.inf
    from scipy import optimize
    from scipy import stats as sps

    crit = sps.chi2.isf(level, df)
    lam = optimize.brentq(lambda x: sps.ncx2.sf(crit, df, x) - power, 1e-9, 1e7)
    return math.sqrt(lam / (4.0 * n))


def run_audit(subject: str, settings: Sequence[Setting], runs: int, alpha: float = DEFAULT_ALPHA, seed: int = 0,
              min_expected: float = DEFAULT_MIN_EXPECTED, progress=None) -> AuditResult:
    """Test every setting's law with ``runs`` runs each (module docstring).

    ``progress(setting_name, done_runs)`` is called after each setting. Setting ``j`` draws its
    runs from seed ``[seed, j]`` (through its sampler), so one setting can be rerun alone.
    """
    if not settings:
        raise RheoError("nothing to audit: no settings")
    if not isinstance(runs, int) or runs < 2:
        raise RheoError(f"runs must be an integer >= 2, got {runs!r}")
    if not 0 < alpha < 1:
        raise RheoError(f"alpha must be in (0, 1), got {alpha!r}")
    names = [s.name for s in settings]
    if len(set(names)) != len(names):
        raise RheoError(f"setting names must be unique, got {names}")
    level = alpha / len(settings)
    t_all = time.perf_counter()
    out = []
    for s in settings:
        t0 = time.perf_counter()
        cells = prefix_cells(s.laws, runs, s.length, min_expected)
        seqs = s.sample(runs, seed)
        test = cells.chi_square(seqs, s.length)
        # NOTE: the power is the design's (cells from the target and N alone), whatever was observed
        design_df = len(pool_cells(runs * cells.cells(s.length)[1], min_expected)) - 1
        out.append(SettingResult(s.name, s.length, test.n, test.statistic, test.df, test.p_value,
                                 detectable_tv(design_df, runs, level), test.worst_cell, test.observed,
                                 test.expected, time.perf_counter() - t0, dict(s.detail)))
        if progress is not None:
            progress(s.name, runs)
    p = bonferroni([r.p_value for r in out])
    verdict = verdict_of(out, p, alpha, level)
    return AuditResult(subject, verdict, p, float(alpha), sum(r.runs for r in out),
                       max(r.min_detectable_tv for r in out), POWER, tuple(out), time.perf_counter() - t_all)
