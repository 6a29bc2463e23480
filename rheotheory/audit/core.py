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
not diluted by the others, and the stated power is per setting at level ``alpha / C``
(``alpha / 2C`` beside the pooled test of :func:`pooled_test`, which a verifier's audit adds): a
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

import dataclasses
import math
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

from ..errors import RheoError
from ..stats import (DEFAULT_MIN_EXPECTED, POWER, NextLaws, bonferroni, detectable_tv, pool_cells, prefix_cells,
                     rejects)

__all__ = ["Setting", "SettingResult", "AuditResult", "detectable_tv", "run_audit", "test_setting", "pooled_test", "POWER", "DEFAULT_ALPHA",
           "LOSSY", "LOSSLESS", "LOSSY_BY_DESIGN", "verdict_of", "shown"]


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
    """One audited configuration: what emits the tokens and the law they must follow.

    Attributes
    ----------
    name : str
        Short label, unique within an audit (e.g. ``"k=2 ties"``).
    length : int
        ``L``: the generated tokens whose joint law is tested.
    laws : callable
        :data:`rheotheory.stats.NextLaws` of the target: continuations -> ``# [len(u), V]``.
    sample : callable
        ``sample(n, seed)``: ``n`` tuples of at least ``L`` tokens after the prompt.
    detail : dict, optional
        Plain data describing the setting (for the report).
    collect : callable, optional
        The verifier harness's richer sampler (:class:`rheotheory.audit.user.Collected`); None
        for engines.
    """

    name: str  # short label, unique within an audit (e.g. "k=2 ties")
    length: int  # L: the number of generated tokens whose joint law is tested
    laws: NextLaws  # exact target laws: continuations u (tuples, one length) -> # [len(u), V]
    sample: Sampler  # the runs: (n, seed) -> n tuples of >= L tokens (the tokens after the prompt)
    detail: dict = field(default_factory=dict)  # plain data describing the setting (for the report)
    # NOTE: the verifier harness's richer sampler (rheotheory.audit.user.Collected); None for engines
    collect: Callable | None = None


@dataclass(frozen=True)
class SettingResult:
    """The test of one setting (plain data).

    Attributes
    ----------
    name : str
    length : int
    runs : int
    statistic : float
    df : int
    p_value : float
    min_detectable_tv : float
        At level ``alpha / settings`` and power :data:`POWER`.
    worst_cell : str
    observed : int
    expected : float
    seconds : float
    detail : dict
    design_df : int, default 0
        The cells (less one) the design built from the target and ``N``.
    impossible : dict or None, default None
        An outcome the target gives 0 (its cell, and the call where known).
    """

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
    design_df: int = 0  # the cells (less one) the design built from the target and N
    impossible: dict | None = None  # an outcome the target gives 0 (the cell, and the call where known)

    def to_dict(self) -> dict:
        """The fields as a plain dict (a shallow copy; what the JSON report holds per setting).

        Returns
        -------
        dict
            Field name -> value.
        """
        return dict(self.__dict__)


@dataclass(frozen=True)
class AuditResult:
    """Verdict of :func:`run_audit` (plain data; :meth:`to_dict` is what ``--json`` prints).

    Attributes
    ----------
    subject : str
        What was audited (a function spec, a program, an engine and its version).
    verdict : str
        ``lossless`` (not rejected), ``lossy``, ``lossy-by-design`` or ``differs``.
    p_value : float
        Bonferroni over the settings (and the pooled test, when there is one).
    alpha : float
    runs : int
        Runs in all.
    min_detectable_tv : float
        The largest per-setting value: any one setting off by this much is caught.
    power : float
    settings : tuple of SettingResult
    seconds : float
    level : float, default 0.0
        The level of each setting's test.
    pooled : dict or None, default None
        The pooled test over the settings.
    rule : dict or None, default None
        The rule check of a verifier's calls (:mod:`rheotheory.audit.api`).
    companion : AuditResult or None, default None
        The planted companion's audit, run beside.
    calls : int, default 0
        Verifier calls.
    transport : str or None, default None
        How the calls travelled: ``"python"`` or ``"process"``.
    """

    subject: str  # what was audited (a function spec, an engine and its version)
    verdict: str  # LOSSLESS (not rejected), LOSSY (rejected at alpha), LOSSY_BY_DESIGN, or DIFFERS (user.py)
    p_value: float  # Bonferroni over the settings (and the pooled test, when there is one)
    alpha: float
    runs: int  # runs in all
    min_detectable_tv: float  # largest per-setting value: any one setting off by this much is caught
    power: float
    settings: tuple  # SettingResult per setting
    seconds: float
    level: float = 0.0  # the level of each setting's test (alpha / settings, halved beside a pooled test)
    pooled: dict | None = None  # the pooled test over the settings (run_audit's pooled=True)
    rule: dict | None = None  # the rule check of a verifier's calls (rheotheory.audit.api)
    companion: "AuditResult | None" = None  # the planted companion's audit, run beside
    calls: int = 0  # verifier calls (the user protocol)
    transport: str | None = None  # how the calls travelled: "python" (a function) or "process" (a program)

    @property
    def worst(self) -> SettingResult:
        """The setting that deviates most (smallest p-value; the first on a tie)."""
        return min(self.settings, key=lambda s: s.p_value)

    def to_dict(self) -> dict:
        """The audit as plain data: what ``--json`` prints.

        Returns
        -------
        dict
            ``subject``, ``verdict``, ``p_value``, ``alpha``, ``level``, ``runs``,
            ``min_detectable_tv``, ``power``, ``tested`` (:meth:`tested`), ``worst_setting``
            (:attr:`worst`), ``seconds`` (rounded to ms) and ``settings`` (each
            :meth:`SettingResult.to_dict`); ``pooled`` and ``rule`` when there are any.
        """
        d = {"subject": self.subject, "verdict": self.verdict, "p_value": self.p_value, "alpha": self.alpha,
             "level": self.level, "runs": self.runs, "min_detectable_tv": self.min_detectable_tv, "power": self.power,
             "tested": self.tested(), "worst_setting": self.worst.to_dict(), "seconds": round(self.seconds, 3),
             "settings": [s.to_dict() for s in self.settings]}
        if self.pooled is not None:
            d["pooled"] = self.pooled
        if self.rule is not None:
            d["rule"] = self.rule
        return d

    def tested(self) -> str:
        """What the stated power is about, exactly (one phrase).

        Returns
        -------
        str
            The detectable TV in any one setting, the tested length ``L`` (a range when the
            settings differ), and the pooled test's averaged TV when there is one.
        """
        lengths = sorted({s.length for s in self.settings})
        L = str(lengths[0]) if len(lengths) == 1 else f"{lengths[0]}-{lengths[-1]}"
        out = (f"detects, with power {self.power:g}, a TV >= {self.min_detectable_tv:.3g} in any one setting "
               f"between the law of its first L = {L} tokens over the setting's pooled cells and the target's")
        if self.pooled is not None:
            out += (f", and a TV >= {self.pooled['min_detectable_tv']:.3g} averaged over the "
                    f"{len(self.settings)} settings, over cells of >= {self.pooled['min_expected']:g} expected runs")
        return out

    def summary(self) -> str:
        """One line: the verdict as the docs phrase it; ``lossless`` is written "not rejected"
        (a statistical test never shows losslessness), with the power statement beside it.

        Returns
        -------
        str
            The subject, the verdict, the p-value, runs and settings, :meth:`tested`, the most
            deviating setting, and for ``lossy-by-design`` the options that are approximate on
            purpose.
        """
        w = self.worst
        said = ("rejected" if rejects(self.p_value, self.alpha) else "not rejected")
        head = (f"{self.subject}: not rejected (the law at alpha = {self.alpha:g}: " if self.verdict == LOSSLESS else
                f"{self.subject}: {self.verdict} (the law {said} at alpha = {self.alpha:g}: ")
        return (f"{head}p = {self.p_value:.3g}, "
                f"N = {self.runs} runs over {len(self.settings)} settings; {self.tested()}; "
                f"most deviating: {w.name!r}, p = {w.p_value:.3g})" + self._by_design())

    def _by_design(self) -> str:
        if self.verdict != LOSSY_BY_DESIGN:
            return ""
        level = self.level or self.alpha / len(self.settings)
        named = sorted({f"{s.detail['by_design']} (setting {s.name!r})" for s in self.settings
                        if s.p_value < level and s.detail.get("by_design")})
        return "; approximate on purpose: " + ", ".join(named)


def shown(verdict: str) -> str:
    """How reports write ``verdict``: ``lossless`` as "not rejected" (the JSON keeps the name).

    Parameters
    ----------
    verdict : str
        A verdict (:data:`LOSSLESS`, :data:`LOSSY`, :data:`LOSSY_BY_DESIGN`, or ``differs``).

    Returns
    -------
    str
    """
    return "not rejected" if verdict == LOSSLESS else verdict


def verdict_of(results: Sequence[SettingResult], p_value: float, alpha: float, level: float) -> str:
    """``lossless``, ``lossy`` or ``lossy-by-design`` (module docstring): the audit rejects iff
    ``p_value < alpha``; it is lossy by design iff every setting rejected at ``level`` names a
    ``by_design`` option.

    Parameters
    ----------
    results : sequence of SettingResult
    p_value : float
        The audit's p-value.
    alpha : float
    level : float
        Each setting's level.

    Returns
    -------
    str
    """
    if not rejects(p_value, alpha):
        return LOSSLESS
    hit = [r for r in results if rejects(r.p_value, level)]
    return LOSSY_BY_DESIGN if hit and all(r.detail.get("by_design") for r in hit) else LOSSY


def _impossible(cells, seqs, length: int) -> dict | None:
    """The first run whose first ``length`` tokens fall in a cell of probability 0: that cell's
    prefix and the token the target gives 0 after it."""
    keys, probs = cells.cells(length)
    zero = {k for k, pr in zip(keys, probs) if pr <= 0.0}
    for w in seqs:
        kind, u = cells.cell_of(w, length)
        if (kind, u) in zero:
            return dict(prefix=list(u), token=int(w[len(u)]) if kind == "rare" else None, run=list(w[:length]))
    return None


def test_setting(s: Setting, seqs, runs: int, level: float, min_expected: float = DEFAULT_MIN_EXPECTED,
                 seconds: float = 0.0, witness: dict | None = None) -> SettingResult:
    """Pearson's test of setting ``s`` on its runs ``seqs`` (module docstring, steps 1-3).

    Parameters
    ----------
    s : Setting
    seqs : sequence of tuple
        The runs.
    runs : int
        ``N``, the runs the design was made for.
    level : float
        The test's level (for the stated power).
    min_expected : float, default rheotheory.stats.DEFAULT_MIN_EXPECTED
        Expected count under which cells are pooled.
    seconds : float, default 0.0
        The runs' time, recorded.
    witness : dict, optional
        A call of the verifier harness that emitted a token the target gives 0 within the first
        ``L`` (:class:`rheotheory.audit.user.Collected`): an impossible outcome, p = 0.

    Returns
    -------
    SettingResult
    """
    cells = prefix_cells(s.laws, runs, s.length, min_expected)
    test = cells.chi_square(seqs, s.length)
    # NOTE: the power is the design's (cells from the target and N alone), whatever was observed
    design_df = len(pool_cells(runs * cells.cells(s.length)[1], min_expected)) - 1
    stat, p, worst, obs, exp = test.statistic, test.p_value, test.worst_cell, test.observed, test.expected
    impossible = _impossible(cells, seqs, s.length) if (p <= 0.0 or witness is not None) else None
    if witness is not None:
        impossible = dict(prefix=witness["after"], token=witness["token"], call=witness)
        if p > 0.0:  # NOTE: the token has probability 0 under the target: the law is off whatever the cells say
            stat, p = math.inf, 0.0
            worst = " ".join(map(str, witness["after"] + [witness["token"]])) + " (probability 0)"
            obs, exp = 1, 0.0
    return SettingResult(s.name, s.length, test.n, stat, test.df, p, detectable_tv(design_df, runs, level), worst, obs,
                         exp, seconds, dict(s.detail), design_df, impossible)


#: Expected counts per cell the pooled test may build its cells with; it takes the one whose
#: design (target and N alone) states the smallest averaged TV.
POOLED_MIN_EXPECTED = (5.0, 10.0, 20.0, 50.0, 100.0, 200.0)


def pooled_test(settings: Sequence[Setting], seqs: Sequence, runs: int, level: float) -> dict:
    """The pooled test: Pearson's statistics of the settings summed (independent settings,
    degrees of freedom summed), the test of the law of (setting, first L tokens) with the
    setting drawn uniformly. Its power is stated for the TV averaged over the settings: with
    ``d_j`` each setting's TV between its laws over the pooled cells, the non-centrality is at
    least ``4 N sum_j d_j^2 >= 4 N C mean(d)^2``. The cells are those of one expected count in
    :data:`POOLED_MIN_EXPECTED`, chosen before the runs are looked at, from the design alone:
    the one that states the smallest TV.

    Parameters
    ----------
    settings : sequence of Setting
    seqs : sequence
        The runs of each setting.
    runs : int
        ``N`` per setting.
    level : float
        The pooled test's level.

    Returns
    -------
    dict
        ``statistic``, ``df``, ``p_value``, ``level``, ``min_expected``, ``design_df``,
        ``min_detectable_tv``.
    """
    from scipy import stats as sps

    best = None
    for m in POOLED_MIN_EXPECTED:
        cells = [prefix_cells(s.laws, runs, s.length, m) for s in settings]
        design = sum(len(pool_cells(runs * c.cells(s.length)[1], m)) - 1 for c, s in zip(cells, settings))
        tv = detectable_tv(design, runs * len(settings), level)
        if best is None or tv < best[0]:
            best = (tv, m, cells, design)
    tv, m, cells, design = best
    tests = [c.chi_square(w, s.length) for c, w, s in zip(cells, seqs, settings)]
    stat = sum(t.statistic for t in tests)
    df = sum(t.df for t in tests)
    p = 0.0 if math.isinf(stat) or any(t.p_value <= 0.0 for t in tests) else (
        float(sps.chi2.sf(stat, df)) if df > 0 else 1.0)
    return dict(statistic=stat, df=df, p_value=p, level=level, min_expected=m, design_df=design,
                min_detectable_tv=tv)


def run_audit(subject: str, settings: Sequence[Setting], runs: int, alpha: float = DEFAULT_ALPHA, seed: int = 0,
              min_expected: float = DEFAULT_MIN_EXPECTED, progress=None, samples=None,
              pooled: bool = False) -> AuditResult:
    """Test every setting's law with ``runs`` runs each (module docstring).

    Setting ``j`` draws its runs from seed ``[seed, j]`` (through its sampler), so one setting
    can be rerun alone.

    Parameters
    ----------
    subject : str
        What is audited (for the report).
    settings : sequence of Setting
    runs : int
        Runs per setting.
    alpha : float, default DEFAULT_ALPHA
    seed : int, default 0
    min_expected : float, default rheotheory.stats.DEFAULT_MIN_EXPECTED
        Expected count under which cells are pooled.
    progress : callable, optional
        ``progress(setting_name, done_runs)`` after each setting.
    samples : sequence, optional
        The runs already drawn, one :class:`rheotheory.audit.user.Collected` (or a list of runs)
        per setting.
    pooled : bool, default False
        Half of ``alpha`` to the settings' Bonferroni family, half to :func:`pooled_test` over
        them; the p-value is the Bonferroni of the two.

    Returns
    -------
    AuditResult

    Raises
    ------
    rheotheory.errors.RheoError
        No settings, names not unique, ``runs < 2`` or ``alpha`` outside (0, 1).
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
    share = alpha / 2 if pooled and len(settings) > 1 else alpha
    level = share / len(settings)
    t_all = time.perf_counter()
    out, all_seqs = [], []
    for j, s in enumerate(settings):
        t0 = time.perf_counter()
        got = s.sample(runs, seed) if samples is None else samples[j]
        seqs, witness = (got.runs, got.witness) if hasattr(got, "runs") else (got, None)
        secs = got.seconds if hasattr(got, "seconds") else 0.0
        r = test_setting(s, seqs, runs, level, min_expected, 0.0, witness)
        out.append(dataclasses.replace(r, seconds=secs + time.perf_counter() - t0))
        all_seqs.append(seqs)
        if progress is not None:
            progress(s.name, runs)
    p = bonferroni([r.p_value for r in out])
    pool = None
    if share != alpha:
        pool = pooled_test(settings, all_seqs, runs, share)
        if any(r.p_value <= 0.0 for r in out):  # NOTE: an impossible outcome (a witness) rejects the pool too
            pool["p_value"] = 0.0
        p = min(1.0, 2 * min(p, pool["p_value"]))
    verdict = verdict_of(out, p, alpha, level)
    return AuditResult(subject, verdict, p, float(alpha), sum(r.runs for r in out),
                       max(r.min_detectable_tv for r in out), POWER, tuple(out), time.perf_counter() - t_all,
                       level=level, pooled=pool)
