r"""The statistics of every Monte-Carlo lossless test: one Pearson chi-square, one pooling rule.

The lossless criterion (docs/theory.md section 4) says that a method is lossless iff, for every
length ``l``, the law of the first ``l`` tokens it produces is the target law
:math:`p(z_{:l}) = \prod_i p(z_i \mid z_{<i})`. Every Monte-Carlo check of the package tests
that criterion on ``n`` sampled sequences with the same Pearson goodness-of-fit test:

- :func:`lossless_test` (``rheo mc``): toy and synthetic pairs, one step of a method from the
  root prefix, completed to ``L = D + 1`` tokens, one test per length ``l = 1..L``, combined by
  Bonferroni's correction;
- :func:`rheotheory.decode.evaluation.checks.lossless_test`: the built-in model pair and SmolLM2, the
  first two decoded tokens after each prompt, one test per prompt, statistics summed.

**Cells** (:class:`PrefixCells`) are built from the target and ``n`` alone, before looking at
the data. With :math:`m` = ``min_expected`` (default :data:`DEFAULT_MIN_EXPECTED`):

1. a prefix ``u`` is *frequent* when its expected count :math:`n\,p(u) \ge m` (the empty prefix
   always is);
2. for length ``l``, every frequent sequence of length ``l`` is a cell, and below every
   frequent prefix ``u`` shorter than ``l`` the sequences whose longest frequent prefix is
   ``u`` form one cell "``u *``" of probability
   :math:`p(u) \sum_{y:\ uy\ \mathrm{not\ frequent}} p(y \mid u)` (summed over those tokens, so
   exactly 0 when they all have probability 0);
3. **the pooling rule** (:func:`pool_cells`, applied by :func:`chi_square` to any list of
   cells): the cells whose expected count is below :math:`m` are pooled into one cell; if that
   pooled cell is itself below :math:`m`, it is merged into the other cell of smallest expected
   count (the first in cell order on a tie). The cells always partition the sample space, so
   nothing is dropped;
4. **impossible outcomes**: a cell of target probability exactly 0 with a positive count is an
   outcome the target cannot produce, and the test rejects outright (:math:`X^2 = \infty`,
   ``p = 0``) before any pooling.

**One rejection convention** (:func:`rejects`): a test at level :math:`\alpha` rejects iff
:math:`p < \alpha`. Every verdict of the package (:attr:`LosslessTest.lossless`,
:meth:`ChiSquare.rejects`, :meth:`ChiSquare.report`) and every statistical test of the suite
reads it from there.

Samples against an exact law of outcomes (the walk and step-law tests) go through
:func:`chi_square_law`: one cell per outcome of the law, steps 3-4 unchanged.

Step 2 keeps a rare continuation of a frequent prefix inside that prefix's own cell, so the
law of the first tokens keeps its full weight; for a flat law (``l = 1``) steps 2 and 3 are the
usual rule of thumb. Only the frequent prefixes need a conditional law, so a test over a
49152-token vocabulary never builds a ``[V, V]`` table.

The per-length p-values of :func:`lossless_test` are dependent; their Bonferroni combination
``min(1, L * min_l p_l)`` (the smallest level at which Holm's procedure rejects some length)
keeps the false-rejection rate at most ``alpha`` up to the chi-square approximation.
``simulations/calibration.py`` measures it and the power against the ``true`` proxy;
``simulations/power_table.py`` states every Monte-Carlo test's power as the smallest total
variation it detects with probability 0.9 (docs/theory.md section 6.5).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field, fields
from typing import Callable, Mapping, Sequence

import numpy as np

from .errors import RheoError
from .methods import Method
from .montecarlo import mean_ci, sample_outputs
from .trees import RandomChooser

__all__ = ["ChiSquare", "LengthTest", "LosslessTest", "PrefixCells", "prefix_cells", "pair_laws", "chi_square",
           "chi_square_law", "pool_cells", "pooled_law", "rejects", "combine", "bonferroni", "extend_outputs",
           "chi_square_by_length", "lossless_test", "DEFAULT_MIN_EXPECTED", "DEFAULT_ALPHA", "POWER", "detectable_tv"]

#: Smallest expected count of a chi-square cell (Cochran's rule of thumb for the chi-square
#: approximation); rarer cells are pooled (module docstring, steps 1-3).
DEFAULT_MIN_EXPECTED = 5.0

#: Default significance level of the lossless test of ``rheo mc``.
DEFAULT_ALPHA = 0.01

#: The power at which a test states the smallest deviation it detects.
POWER = 0.8

#: Largest |sum of the cell probabilities - 1| accepted by :func:`chi_square`. The cells of
#: :class:`PrefixCells` sum to 1 within the conditional laws' own tolerance
#: (``laws.FLOAT_SUM_TOL`` = 1e-9 per law, times the length); a larger gap means the cells do
#: not partition the sample space.
PROB_SUM_ATOL = 1e-6

#: Name of the cell that pools the cells under ``min_expected`` (step 3).
POOLED = "(pooled rare cells)"

#: Name of the cell of :func:`chi_square_law` that holds the sampled outcomes the law does not list.
OUTSIDE = "(outside the law)"

#: Seed-sequence tag of the completion stream of :func:`lossless_test` (the step stream uses
#: other tags).
_COMPLETION_TAG = 7

#: Conditional target laws of a list of prefixes of equal length: ``prefixes -> # [len(prefixes), V]``.
NextLaws = Callable[[list], np.ndarray]


def rejects(p_value: float, alpha: float) -> bool:
    """The one rejection convention of the package: a test at level ``alpha`` rejects iff
    ``p_value < alpha``.

    Parameters
    ----------
    p_value : float
        The test's p-value, in [0, 1].
    alpha : float
        The significance level.

    Returns
    -------
    bool
        True when the test rejects (``p_value < alpha``; equality does not reject).

    Examples
    --------
    >>> rejects(0.001, 0.01), rejects(0.01, 0.01), rejects(0.5, 0.01)
    (True, False, False)
    """
    return bool(p_value < alpha)


@dataclass(frozen=True)
class ChiSquare:
    """Outcome of a Pearson chi-square goodness-of-fit test (plain data).

    Attributes
    ----------
    statistic : float
        Pearson's X^2 (a sum over independent tests after :func:`combine`); ``inf`` when an
        impossible outcome was observed.
    df : int
        Degrees of freedom: cells - 1 (summed after :func:`combine`).
    p_value : float
        P(chi2_df >= statistic); 1.0 when df == 0 (nothing to test).
    n : int
        Observations in total.
    cells : int
        Cells after pooling (summed after :func:`combine`).
    worst_cell : str
        The cell with the largest contribution to X^2, for failure messages.
    observed : int
        Its observed count.
    expected : float
        Its expected count.
    """

    statistic: float  # Pearson's X^2 (a sum over independent tests after :func:`combine`)
    df: int  # degrees of freedom: cells - 1 (summed after :func:`combine`)
    p_value: float  # P(chi2_df >= statistic); 1.0 when df == 0 (nothing to test)
    n: int  # observations in total
    cells: int  # cells after pooling (summed after :func:`combine`)
    worst_cell: str  # the cell with the largest contribution to X^2, for failure messages
    observed: int  # its observed count
    expected: float  # its expected count

    def to_dict(self) -> dict:
        """The fields as a plain dict.

        Returns
        -------
        dict[str, object]
            Field name -> value, in field order.
        """
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def rejects(self, alpha: float) -> bool:
        """Whether the test rejects at level ``alpha`` (:func:`rejects`: iff p < alpha).

        Parameters
        ----------
        alpha : float
            The significance level.

        Returns
        -------
        bool
            True when ``p_value < alpha``.
        """
        return rejects(self.p_value, alpha)

    def report(self, alpha: float) -> str:
        """One line: statistic, degrees of freedom, p-value, N and the verdict at ``alpha``.

        Parameters
        ----------
        alpha : float
            The significance level of the verdict.

        Returns
        -------
        str
            E.g. ``chi2 =      3.0  df =    2  p = 0.223  N = 100  -> no rejection at alpha = 0.01``.
        """
        verdict = "reject" if self.rejects(alpha) else "no rejection"
        return (f"chi2 = {self.statistic:8.1f}  df = {self.df:4d}  p = {self.p_value:.3g}  N = {self.n}  "
                f"-> {verdict} at alpha = {alpha:g}")


@dataclass(frozen=True)
class LengthTest(ChiSquare):
    """The chi-square test of the law of the first ``length`` tokens.

    A :class:`ChiSquare` (every field of it, in its order) with one more field.

    Attributes
    ----------
    length : int
        l, the number of first tokens whose law is tested.
    """

    length: int  # l


@dataclass(frozen=True)
class LosslessTest:
    """Verdict of :func:`lossless_test` (plain data).

    Attributes
    ----------
    lossless : bool
        True: the test did not reject at level alpha (p >= alpha, :func:`rejects`).
    p_value : float
        Bonferroni-combined over the lengths (:func:`bonferroni`).
    alpha : float
        The significance level of the verdict.
    samples : int
        Sampled steps n.
    tokens_per_step : float
        Mean |Z|, the tokens one step produces.
    tau_low, tau_high : float
        Its 95% confidence interval (:func:`rheotheory.montecarlo.mean_ci`).
    per_length : tuple of LengthTest, default ()
        The tests of l = 1..D+1.
    """

    lossless: bool  # True: the test did not reject at level alpha (p >= alpha, :func:`rejects`)
    p_value: float  # Bonferroni-combined over the lengths
    alpha: float
    samples: int  # sampled steps n
    tokens_per_step: float  # mean |Z|
    tau_low: float  # its 95% confidence interval
    tau_high: float
    per_length: tuple = field(default_factory=tuple)  # LengthTest for l = 1..D+1

    def detectable(self, power: float = POWER) -> list[float]:
        """Per length l, the smallest total variation of the law of the first l tokens, over the
        test's pooled cells, that its chi-square (at level alpha / lengths) detects with probability
        ``power`` (:func:`detectable_tv`): what a "not rejected" could have caught.

        Parameters
        ----------
        power : float, default POWER
            The detection probability, in (0, 1).

        Returns
        -------
        list of float
            One total variation per entry of ``per_length``; ``inf`` for a test with no degree of
            freedom.
        """
        level = self.alpha / max(1, len(self.per_length))
        return [detectable_tv(t.df, self.samples, level, power) for t in self.per_length]

    def to_dict(self) -> dict:
        """The verdict as a dict of plain types (the base of the object ``rheo mc --json`` prints).

        Returns
        -------
        dict[str, object]
            ``lossless``, ``p_value``, ``alpha``, ``samples``, ``tokens_per_step``,
            ``tokens_per_step_ci95`` (``[tau_low, tau_high]``), ``per_length`` (each test's
            :meth:`ChiSquare.to_dict` with its ``length``), ``power`` (:data:`POWER`) and
            ``min_detectable_tv_by_length`` (:meth:`detectable` at that power; ``inf`` where a test
            has no degree of freedom).
        """
        return {
            "lossless": self.lossless, "p_value": self.p_value, "alpha": self.alpha, "samples": self.samples,
            "tokens_per_step": self.tokens_per_step, "tokens_per_step_ci95": [self.tau_low, self.tau_high],
            "per_length": [t.to_dict() for t in self.per_length],
            "power": POWER, "min_detectable_tv_by_length": self.detectable(),
        }


def detectable_tv(df: int, n: int, level: float, power: float = POWER) -> float:
    r"""Smallest total variation ``d`` of a cell law that Pearson's test of ``n`` observations
    with ``df`` degrees of freedom at level ``level`` detects with probability ``power``.

    Under a deviation :math:`\delta` of the cell law :math:`\pi`, Pearson's statistic is
    asymptotically non-central chi-square with non-centrality
    :math:`\lambda = n \sum_c \delta_c^2 / \pi_c \ge 4 n d^2` (Cauchy-Schwarz;
    docs/theory.md section 6.5). With :math:`\lambda^*` the non-centrality at which the power is
    ``power``, every deviation with :math:`d \ge \sqrt{\lambda^* / (4n)}` is detected with at
    least that probability.

    Parameters
    ----------
    df : int
        Degrees of freedom of the test (its pooled cells - 1).
    n : int
        Number of observations.
    level : float
        Significance level of the test, in (0, 1).
    power : float, default POWER
        Detection probability, in (level, 1).

    Returns
    -------
    float
        :math:`\sqrt{\lambda^* / (4n)}`; ``inf`` when ``df < 1`` or ``n < 1`` (nothing is detected).

    Examples
    --------
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


def _chi2_sf(stat: float, df: int) -> float:
    # NOTE: scipy.stats is imported here, not at module level: it takes seconds to import and
    # every `rheo` invocation imports this module while building its parser.
    from scipy import stats as sps

    return float(sps.chi2.sf(stat, df))


def pool_cells(expected, min_expected: float = DEFAULT_MIN_EXPECTED) -> list[np.ndarray]:
    """The pooling rule (module docstring, step 3) on expected counts: the groups of cell indices
    that form the cells of the test, in test order.

    The cells with expected count at least ``min_expected`` stay, in their order; the others are
    pooled into one cell placed last; if that pooled cell is itself under ``min_expected`` it is
    merged into the kept cell of smallest expected count (the first on a tie). The groups
    partition ``range(len(expected))``; no cell is dropped.

    Parameters
    ----------
    expected : array_like of shape (k,), float
        Expected count of each cell.
    min_expected : float, default DEFAULT_MIN_EXPECTED
        Smallest expected count of a cell after pooling.

    Returns
    -------
    list of numpy.ndarray of int
        The groups of indices, one per cell of the test.

    Examples
    --------
    >>> [g.tolist() for g in pool_cells([50.0, 45.0, 2.0, 3.0])]
    [[0], [1], [2, 3]]
    >>> [g.tolist() for g in pool_cells([50.0, 30.0, 18.0, 2.0])]
    [[0], [1], [2, 3]]
    """
    exp = np.asarray(expected, dtype=np.float64)  # [k]
    small = exp < min_expected  # [k]
    big = np.flatnonzero(~small)
    groups = [np.array([i]) for i in big]
    rare = np.flatnonzero(small)
    if rare.size:
        if not groups or float(exp[rare].sum()) >= min_expected:
            groups.append(rare)
        else:
            j = int(np.argmin(exp[big]))  # first smallest kept cell
            groups[j] = np.concatenate([groups[j], rare])
    return groups


def pooled_law(probs, n: int, min_expected: float = DEFAULT_MIN_EXPECTED) -> np.ndarray:
    """The cell law the test of ``n`` observations against ``probs`` actually compares with:
    ``probs`` summed over the groups of :func:`pool_cells` (used to state a test's power).

    Parameters
    ----------
    probs : array_like of shape (k,), float
        The cell law (renormalised to sum 1).
    n : int
        Number of observations.
    min_expected : float, default DEFAULT_MIN_EXPECTED
        Smallest expected count of a cell after pooling.

    Returns
    -------
    numpy.ndarray of shape (k',), float64
        The law of the pooled cells, in test order.

    Examples
    --------
    >>> pooled_law([0.5, 0.3, 0.18, 0.02], 100).round(12).tolist()
    [0.5, 0.3, 0.2]
    """
    pi = np.asarray(probs, dtype=np.float64)  # [k]
    return np.array([pi[g].sum() for g in pool_cells(n * pi / pi.sum(), min_expected)])


def chi_square(observed, probs, min_expected: float = DEFAULT_MIN_EXPECTED, names=None) -> ChiSquare:
    r"""Pearson's chi-square test of observed counts against a law on cells, rare cells pooled.

    With :math:`n = \sum_c O_c` observations and expected counts :math:`E_c = n\,\pi_c`,

    .. math::

        X^2 = \sum_c \frac{(O_c - E_c)^2}{E_c}, \qquad
        p = P\left(\chi^2_{k - 1} \ge X^2\right),

    over the ``k`` cells left by the pooling rule: the cells with :math:`E_c <` ``min_expected``
    are pooled into one cell; if that pooled cell is itself under ``min_expected``, it is merged
    into the other cell of smallest expected count (the first on a tie). With a single cell left
    there is nothing to test: :math:`X^2 = 0`, ``df = 0``, ``p = 1``. A cell of probability
    exactly 0 with a positive count (an impossible outcome) rejects outright, before pooling:
    :math:`X^2 = \infty`, ``p = 0``, ``df`` = cells given :math:`- 1`. The test rejects at
    level :math:`\alpha` iff :math:`p < \alpha` (:func:`rejects`).

    Parameters
    ----------
    observed : array_like of shape (k,), int
        Counts of the cells; they must partition the observations.
    probs : array_like of shape (k,), float
        Target law of the cells (sums to 1 within :data:`PROB_SUM_ATOL`; renormalised).
    min_expected : float, default DEFAULT_MIN_EXPECTED
        Smallest expected count of a cell after pooling.
    names : sequence of str, optional
        Cell names for the failure message (default: the indices).

    Returns
    -------
    ChiSquare
        The statistic, degrees of freedom, p-value and the worst cell (pooled cells named
        ``a + b + (pooled rare cells)``).

    Raises
    ------
    RheoError
        If ``observed`` and ``probs`` are not two non-empty 1-d arrays of one length, a count or
        probability is negative (or a probability not finite), the probabilities do not sum to 1
        within :data:`PROB_SUM_ATOL`, or there are no observations.

    Examples
    --------
    Counts equal to their expectations give :math:`X^2 = 0` and ``p = 1``; with two degrees of
    freedom the p-value is :math:`e^{-X^2/2}`:

    >>> chi_square([10, 20, 30, 40], [0.1, 0.2, 0.3, 0.4]).statistic
    0.0
    >>> res = chi_square([45, 40, 15], [0.5, 0.4, 0.1])
    >>> float(res.statistic), res.df, bool(abs(res.p_value - math.exp(-1.5)) < 1e-12)
    (3.0, 2, True)

    The cell of expected count 2 is pooled alone, still under 5, so it is merged into the cell
    of expected count 18:

    >>> chi_square([50, 30, 20, 0], [0.5, 0.3, 0.18, 0.02]).statistic
    0.0

    One count on an outcome of probability 0 rejects, however small the cell:

    >>> chi_square([60, 39, 1], [0.6, 0.4, 0.0]).p_value
    0.0
    """
    obs = np.asarray(observed, dtype=np.float64)  # [k]
    pi = np.asarray(probs, dtype=np.float64)  # [k]
    if obs.ndim != 1 or obs.shape != pi.shape or obs.size == 0:
        raise RheoError(f"observed and probs must be two 1-d arrays of one length, got {obs.shape} and {pi.shape}")
    if (obs < 0).any() or (pi < 0).any() or not np.isfinite(pi).all():
        raise RheoError("counts and probabilities must be non-negative")
    if abs(pi.sum() - 1.0) > PROB_SUM_ATOL:
        raise RheoError(f"cell probabilities sum to {pi.sum()!r}, not 1: the cells must partition the outcomes")
    n = float(obs.sum())
    if n == 0:
        raise RheoError("no observations")
    names = [str(i) for i in range(len(obs))] if names is None else list(names)
    impossible = np.flatnonzero((pi == 0) & (obs > 0))
    if impossible.size:  # step 4: an outcome the target cannot produce was observed
        j = int(impossible[0])
        return ChiSquare(math.inf, len(obs) - 1, 0.0, int(n), len(obs), names[j], int(obs[j]), 0.0)
    exp = n * pi / pi.sum()  # [k]; NOTE: renormalised, so that sum(exp) == n up to round-off
    small = exp < min_expected  # [k]
    groups = pool_cells(exp, min_expected)
    obs = np.array([obs[g].sum() for g in groups])  # [k']
    exp = np.array([exp[g].sum() for g in groups])  # [k']
    names = [" + ".join([*(names[i] for i in g if not small[i]), *([POOLED] if small[g].any() else [])])
             for g in groups]
    if len(obs) < 2:
        return ChiSquare(0.0, 0, 1.0, int(n), len(obs), names[0], int(obs[0]), float(exp[0]))
    contrib = (obs - exp) ** 2 / exp  # [k']
    stat = float(contrib.sum())
    df = len(obs) - 1
    j = int(np.argmax(contrib))
    return ChiSquare(stat, df, _chi2_sf(stat, df), int(n), len(obs), names[j], int(obs[j]), float(exp[j]))


def chi_square_law(samples: Sequence, law: Mapping, min_expected: float = DEFAULT_MIN_EXPECTED) -> ChiSquare:
    """Pearson's test (:func:`chi_square`) of sampled outcomes against an exact law of outcomes.

    One cell per outcome of ``law`` (its key order), pooled by the rule of :func:`chi_square`;
    sampled outcomes ``law`` does not list form one more cell of probability 0, so that any of
    them rejects outright (step 4 of the module docstring).

    Parameters
    ----------
    samples : sequence of hashable
        The sampled outcomes (e.g. the tuples Z of sampled steps).
    law : mapping of outcome to float or fractions.Fraction
        The exact law (floats or Fractions), summing to 1.
    min_expected : float, default DEFAULT_MIN_EXPECTED
        Smallest expected count of a cell after pooling.

    Returns
    -------
    ChiSquare
        The test; its worst cell is named by ``str(outcome)``, or ``(outside the law)``.

    Examples
    --------
    >>> chi_square_law(["a"] * 50 + ["b"] * 50, {"a": 0.5, "b": 0.5}).statistic
    0.0
    >>> chi_square_law(["a"] * 50 + ["c"], {"a": 0.5, "b": 0.5}).worst_cell
    '(outside the law)'
    """
    counts = Counter(samples)
    keys = list(law)
    obs = [counts.pop(z, 0) for z in keys]  # [cells]
    probs = [float(law[z]) for z in keys]  # [cells]
    names = [str(z) for z in keys]
    if counts:  # NOTE: outcomes the law does not list; probability 0, so any of them rejects
        obs.append(sum(counts.values()))
        probs.append(0.0)
        names.append(OUTSIDE)
    return chi_square(obs, probs, min_expected, names)


def _contribution(t: ChiSquare) -> float:
    """The worst cell's contribution to X^2 (infinite for an impossible outcome)."""
    return math.inf if t.expected == 0 else (t.observed - t.expected) ** 2 / t.expected


def combine(tests: Sequence[ChiSquare], labels: Sequence[str] | None = None) -> ChiSquare:
    r"""One test from independent ones (different prompts): :math:`X^2 = \sum_j X^2_j`,
    ``df`` :math:`= \sum_j \mathrm{df}_j`; the worst cell is the one of largest contribution,
    prefixed with its test's label.

    Parameters
    ----------
    tests : sequence of ChiSquare
        The independent tests, at least one.
    labels : sequence of str, optional
        One label per test for the worst cell's name (default: the indices).

    Returns
    -------
    ChiSquare
        The combined test: ``n`` and ``cells`` summed too; ``p = 0`` when a statistic is infinite,
        1 when no test has a degree of freedom.

    Raises
    ------
    RheoError
        If ``tests`` is empty.
    """
    if not tests:
        raise RheoError("nothing to combine")
    labels = [str(i) for i in range(len(tests))] if labels is None else list(labels)
    stat = float(sum(t.statistic for t in tests))
    df = int(sum(t.df for t in tests))
    j = max(range(len(tests)), key=lambda i: _contribution(tests[i]))
    w = tests[j]
    p = 0.0 if math.isinf(stat) else _chi2_sf(stat, df) if df > 0 else 1.0
    return ChiSquare(stat, df, p, sum(t.n for t in tests),
                     sum(t.cells for t in tests), f"{labels[j]!r}: {w.worst_cell}", w.observed, w.expected)


def bonferroni(p_values: Sequence[float]) -> float:
    """Bonferroni combination ``min(1, L * min p_l)`` of ``L`` (possibly dependent) p-values.

    Parameters
    ----------
    p_values : sequence of float
        The p-values p_1..p_L, at least one.

    Returns
    -------
    float
        The combined p-value.
    """
    return min(1.0, len(p_values) * min(p_values))


@dataclass(frozen=True)
class PrefixCells:
    """Frequent prefixes of a target law on sequences (module docstring, steps 1-2).

    Build with :func:`prefix_cells`; :meth:`chi_square` maps sequences to cells and runs the test.

    Attributes
    ----------
    n : int
        Sample size the cells are built for.
    max_len : int
        Longest length that can be tested.
    min_expected : float
        m, the smallest expected count of a frequent prefix.
    frequent : dict[tuple of int, float]
        Prefix u (len <= max_len) with n p(u) >= m, and the root -> p(u).
    rare : dict[tuple of int, float]
        Frequent u with len(u) < max_len -> p(u *), the mass below u in no frequent uy.
    """

    n: int  # sample size the cells are built for
    max_len: int  # longest length that can be tested
    min_expected: float  # m
    frequent: dict  # prefix u (len <= max_len) with n p(u) >= m, and the root -> p(u)
    rare: dict  # frequent u with len(u) < max_len -> p(u *), the mass below u in no frequent uy

    def cells(self, length: int) -> tuple[list, np.ndarray]:
        """Cell keys and their probabilities for ``length`` (step 2): the frequent sequences of
        that length (lexicographic order), then the cells ``u *`` (lexicographic order of u).

        Parameters
        ----------
        length : int
            The tested length l, in 1..max_len.

        Returns
        -------
        keys : list of tuple
            ``("leaf", u)`` for a frequent sequence u of length l, ``("rare", u)`` for the cell ``u *``.
        probs : numpy.ndarray of shape (cells,), float64
            The target probability of each cell.

        Raises
        ------
        RheoError
            If ``length`` is outside 1..max_len.
        """
        if not 1 <= length <= self.max_len:
            raise RheoError(f"length must be in 1..{self.max_len}, got {length!r}")
        leaves = sorted(u for u in self.frequent if len(u) == length)
        stars = sorted(u for u in self.rare if len(u) < length)
        keys = [("leaf", u) for u in leaves] + [("rare", u) for u in stars]
        probs = [self.frequent[u] for u in leaves] + [self.rare[u] for u in stars]
        return keys, np.asarray(probs, dtype=np.float64)

    def cell_of(self, seq: tuple, length: int) -> tuple:
        """The step-2 cell of ``seq[:length]``: its longest frequent prefix decides.

        Parameters
        ----------
        seq : tuple of int
            A token sequence, at least ``length`` long.
        length : int
            The tested length l.

        Returns
        -------
        tuple
            ``("leaf", seq[:length])`` when that prefix is frequent, else ``("rare", u)`` with u its
            longest frequent prefix.
        """
        u = ()
        for i in range(length):
            nxt = tuple(seq[:i + 1])
            if nxt not in self.frequent:
                return ("rare", u)
            u = nxt
        return ("leaf", u)

    def chi_square(self, seqs: Sequence[tuple], length: int) -> ChiSquare:
        """Pearson's test of the law of ``seq[:length]`` over ``seqs`` (each at least ``length`` long).

        Parameters
        ----------
        seqs : sequence of tuple of int
            The sampled sequences, each at least ``length`` long.
        length : int
            The tested length l, in 1..max_len.

        Returns
        -------
        ChiSquare
            :func:`chi_square` of the cell counts against the cell probabilities (cells named
            ``"0 2"`` or ``"0 *"``).

        Raises
        ------
        RheoError
            If a sequence is shorter than ``length``, or ``length`` is outside 1..max_len.
        """
        keys, probs = self.cells(length)
        index = {k: i for i, k in enumerate(keys)}
        obs = np.zeros(len(keys), dtype=np.int64)  # [cells]
        for w in seqs:
            if len(w) < length:
                raise RheoError(f"sequence {tuple(w)!r} is shorter than the tested length {length}")
            obs[index[self.cell_of(w, length)]] += 1
        names = [" ".join([*map(str, u), "*"] if kind == "rare" else map(str, u)) for kind, u in keys]
        return chi_square(obs, probs, self.min_expected, names)


def prefix_cells(next_laws: NextLaws, n: int, max_len: int,
                 min_expected: float = DEFAULT_MIN_EXPECTED) -> PrefixCells:
    """Frequent prefixes up to ``max_len`` for ``n`` samples (module docstring, step 1).

    Parameters
    ----------
    next_laws : callable
        :data:`NextLaws`: ``next_laws(prefixes)`` returns the target laws p(. | u) of a list of
        frequent prefixes of one length, ``# [len(prefixes), V]``; it is called once per length
        ``0..max_len - 1``.
    n : int
        The sample size.
    max_len : int
        The longest length to test.
    min_expected : float, default DEFAULT_MIN_EXPECTED
        m: a prefix is frequent when n p(u) >= m.

    Returns
    -------
    PrefixCells
        The frequent prefixes and the rare mass below each.
    """
    frequent = {(): 1.0}
    rare = {}
    level = [()]
    for _ in range(max_len):
        if not level:
            break
        laws = np.asarray(next_laws(level), dtype=np.float64)  # [len(level), V]
        nxt = []
        for u, pl in zip(level, laws):
            pu = frequent[u]
            big = pl * (n * pu) >= min_expected  # [V]
            for y in np.flatnonzero(big).tolist():
                frequent[u + (y,)] = pu * float(pl[y])
                nxt.append(u + (y,))
            # NOTE: summed, not 1 - sum(frequent): exactly 0 iff every rare token has probability
            # 0, so that step 4 (an impossible outcome rejects) never fires on round-off.
            rare[u] = pu * float(pl[~big].sum())
        level = nxt
    return PrefixCells(int(n), int(max_len), float(min_expected), frequent, rare)


def pair_laws(pair) -> NextLaws:
    """:data:`NextLaws` of a toy or synthetic pair's target (``pair.p(u)``).

    Parameters
    ----------
    pair : ToyPair or SyntheticPair
        Any pair with ``p(prefix)``.

    Returns
    -------
    callable
        ``prefixes -> numpy.ndarray of shape (len(prefixes), V)``, the float64 target laws stacked.
    """
    return lambda prefixes: np.stack([np.asarray(pair.p(u), dtype=np.float64) for u in prefixes])


def extend_outputs(pair, outputs, length: int, rng: np.random.Generator) -> list[tuple]:
    """Complete each output Z to ``length`` tokens with fresh target samples ``y ~ p(. | prefix)``
    (exactly what the next steps would produce) and cut it there: the sequences W whose first
    ``l`` tokens must follow the target law for every ``l`` when the method is lossless.

    Parameters
    ----------
    pair : ToyPair or SyntheticPair
        The pair whose target ``p(prefix)`` completes the outputs.
    outputs : iterable of sequence of int
        The outputs Z of sampled steps.
    length : int
        The length L of every returned sequence.
    rng : numpy.random.Generator
        The source of the completion draws (through a :class:`~rheotheory.trees.RandomChooser`).

    Returns
    -------
    list of tuple of int
        One sequence W of ``length`` tokens per output, in order.
    """
    chooser = RandomChooser(rng)
    out = []
    for z in outputs:
        w = tuple(z)
        while len(w) < length:
            w = w + (chooser.draw(pair.p(w)),)
        out.append(w[:length])
    return out


def chi_square_by_length(pair, seqs: list[tuple], max_len: int,
                         min_expected: float = DEFAULT_MIN_EXPECTED) -> list[LengthTest]:
    """Pearson chi-square tests of the laws of ``W[:l]``, l = 1..max_len, against the pair's target.

    Parameters
    ----------
    pair : ToyPair or SyntheticPair
        The pair whose target the sequences must follow.
    seqs : list of tuple of int
        The sequences W, each at least ``max_len`` long (:func:`extend_outputs`).
    max_len : int
        The longest tested length L.
    min_expected : float, default DEFAULT_MIN_EXPECTED
        Smallest expected count of a cell (frequent prefixes and pooling).

    Returns
    -------
    list of LengthTest
        The tests of l = 1..max_len, in order.
    """
    cells = prefix_cells(pair_laws(pair), len(seqs), max_len, min_expected)
    out = []
    for l in range(1, max_len + 1):
        t = cells.chi_square(seqs, l)
        out.append(LengthTest(**{f.name: getattr(t, f.name) for f in fields(t)}, length=l))
    return out


def _check(samples, alpha, min_expected):
    if not isinstance(samples, (int, np.integer)) or isinstance(samples, bool) or samples < 2:
        raise RheoError(f"samples must be an integer >= 2, got {samples!r}")
    if not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise RheoError(f"alpha must be in (0, 1), got {alpha!r}")
    if not isinstance(min_expected, (int, float)) or not min_expected > 0 or not math.isfinite(min_expected):
        raise RheoError(f"min_expected must be a positive number, got {min_expected!r}")


def lossless_test(pair, method: Method, samples: int = 2000, alpha: float = DEFAULT_ALPHA, seed: int = 0,
                  min_expected: float = DEFAULT_MIN_EXPECTED, progress=None) -> LosslessTest:
    """Sample ``samples`` steps of ``method`` from the pair's root prefix and test losslessness.

    Each output Z is completed to ``L = D + 1`` tokens (:func:`extend_outputs`), the law of its
    first ``l`` tokens is tested for ``l = 1..L`` (:func:`chi_square_by_length`) and the p-values
    are combined by :func:`bonferroni`. An exact pair is converted to float first.

    Parameters
    ----------
    pair : ToyPair or SyntheticPair
        The LM pair (a pair with a ``horizon`` must reach the method's depth D).
    method : Method
        The method to test (tree family, verifier, parameters).
    samples : int, default 2000
        Number of sampled steps n, at least 2.
    alpha : float, default DEFAULT_ALPHA
        Significance level, in (0, 1).
    seed : int, default 0
        Seed of the step and completion streams: the test is reproducible from it.
    min_expected : float, default DEFAULT_MIN_EXPECTED
        Smallest expected count of a cell, > 0.
    progress : callable, optional
        Called with 1 after each sampled step.

    Returns
    -------
    LosslessTest
        ``lossless`` is True when the combined p-value does not reject at ``alpha``
        (:func:`rejects`: reject iff p < alpha); with the mean tokens per step and its interval.

    Raises
    ------
    RheoError
        If ``samples``, ``alpha`` or ``min_expected`` is out of range, or the method's depth exceeds
        the pair's horizon.
    """
    _check(samples, alpha, min_expected)
    pair = pair.to_float() if getattr(pair, "exact", False) else pair
    L = method.depth + 1
    horizon = getattr(pair, "horizon", None)
    if horizon is not None and horizon < method.depth:
        raise RheoError(f"depth {method.depth} exceeds the instance horizon {horizon} "
                        "(need prefixes up to length D)")
    outs = sample_outputs(pair, method, samples, seed, progress)
    seqs = extend_outputs(pair, outs, L, np.random.default_rng([int(seed), _COMPLETION_TAG]))
    tests = chi_square_by_length(pair, seqs, L, min_expected)
    pv = bonferroni([t.p_value for t in tests])
    tau, lo, hi = mean_ci([len(z) for z in outs])
    return LosslessTest(not rejects(pv, alpha), pv, float(alpha), int(samples), tau, lo, hi, tuple(tests))
