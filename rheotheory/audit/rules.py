r"""The exact law of one verifier call under a known rule, and the test of the calls against it.

A lossless verifier may follow any rule, so the audit's verdict on losslessness comes from the
law of the tokens alone (:mod:`rheotheory.audit.core`). But the harness of
:mod:`rheotheory.audit.user` knows everything a call is handed (the drafted tokens, the law each
was drawn from, the target law at each drafted position), so for a *known* rule it knows the exact
law of the call's output given its inputs, and can test every call against it, with none of the
noise of the drafts or of the target's own sampling. Two rules are known
(docs/guide/audit.md, "the rule check"):

- ``rejection``: standard rejection sampling (Leviathan et al. 2023; recursive rejection sampling
  over a tree, SpecInfer): accept draft ``x`` drawn from ``q`` with ``min(1, p(x) / q(x))``, else
  emit from ``norm((p - q)+)``; over a tree, try the children in order with the residual updated
  after each rejection (:func:`rheotheory.audit.examples.chain_rejection`, ``tree_rejection``);
- ``one-hot``: the same with ``q`` the point mass on the draft, whatever law the draft came from:
  accept ``x`` with ``p(x)``, else draw from ``p`` with ``x`` zeroed. This is also the law of
  *sample-and-match* (the target samples ``y ~ p``; the draft is kept iff ``y = x``), the rule of
  llama.cpp's server, MLX-LM and transformers' prompt lookup, and EAGLE's rule; both are lossless
  for any draft chosen without looking at the coin (REFERENCE: "two rules that look lossy").

The test of one setting: every call's output (the token tuple it returns) is a cell; ``E_c`` is the
sum over the calls of the call's exact probability of ``c``, ``O_c`` the number of calls that
returned ``c``. Cells with ``E_c < 5`` are pooled (:func:`rheotheory.stats.pool_cells`). Given the
calls before it, each output is one draw from its own law, so ``O - E`` is a martingale whose
covariance is at most the multinomial one with the same ``E`` (the calls' laws differ):
Pearson's statistic against ``chi2(cells - 1)`` is then conservative, never too eager.
An output to which its call's law gives probability 0 (an *impossible* call, e.g. a correction
token where ``p <= q``) rejects at once (p = 0) and is kept as the example to show.

A rejection here means "differs from standard rejection sampling" (or from the one-hot rule): a
statement about the rule, never by itself a finding of loss.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["RULES", "RULE_NAMES", "chain_law", "tree_law", "Tally", "RuleResult", "test_tally"]

#: The known rules (module docstring), in the order the audit prefers them.
RULES = ("rejection", "one-hot")

#: How each is named in reports.
RULE_NAMES = {"rejection": "standard rejection sampling", "one-hot": "the one-hot rule (sample-and-match)"}

#: Expected count under which a cell of the rule test is pooled.
MIN_EXPECTED = 5.0


def _one_hot(x: int, v: int) -> np.ndarray:
    q = np.zeros(v)
    q[x] = 1.0
    return q


def _residual(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``norm((p - q)+)``, or ``p`` when that is 0 (then no rejection happens in exact arithmetic;
    the reference keeps ``p``, :func:`rheotheory.audit.examples._residual`)."""
    r = np.maximum(p - q, 0.0)
    s = r.sum()
    return r / s if s > 0 else p


def _emit(out: dict, prefix: tuple, w: float, law: np.ndarray) -> None:
    law = law / law.sum()
    for y in np.flatnonzero(law > 0).tolist():
        key = prefix + (y,)
        out[key] = out.get(key, 0.0) + w * float(law[y])


def _accept(p: np.ndarray, q: np.ndarray, x: int) -> float:
    return min(1.0, float(p[x]) / float(q[x])) if q[x] > 0 else 0.0


def chain_law(drafts: list, q, p: np.ndarray, rule: str) -> dict:
    """Exact law of a chain call's output (token tuple -> probability) under ``rule``.

    ``drafts``: the k drafted tokens; ``q``: ``# [k, V]`` or None (a deterministic draft);
    ``p``: ``# [k+1, V]`` (float64 copies of what the call was handed).
    """
    out, acc, prefix = {}, 1.0, ()
    v = p.shape[1]
    for i, x in enumerate(drafts):
        qi = _one_hot(x, v) if (q is None or rule == "one-hot") else q[i]
        a = _accept(p[i], qi, x)
        if a < 1.0:
            _emit(out, prefix, acc * (1.0 - a), _residual(p[i], qi))
        acc *= a
        if acc <= 0.0:
            return out
        prefix = prefix + (x,)
    _emit(out, prefix, acc, p[len(drafts)])
    return out


def tree_law(parents: list, tokens: list, q: np.ndarray, p: np.ndarray, rule: str) -> dict:
    """Exact law of a tree call's output (token tuple -> probability) under ``rule``: recursive
    rejection over the children in order (``q[i]``: node i's law; ``p[0]``: after the prefix,
    ``p[i + 1]``: after node i)."""
    children = [[] for _ in range(len(tokens) + 1)]
    for i, par in enumerate(parents):
        children[par + 1].append(i)
    v = p.shape[1]
    out = {}

    def walk(node: int, prefix: tuple, w: float) -> None:
        law = p[node + 1]
        for c in children[node + 1]:
            x = tokens[c]
            qc = _one_hot(x, v) if rule == "one-hot" else q[c]
            a = _accept(law, qc, x)
            if a > 0.0:
                walk(c, prefix + (x,), w * a)
            w *= 1.0 - a
            if w <= 0.0:
                return
            law = _residual(law, qc)
        _emit(out, prefix, w, law)

    walk(-1, (), 1.0)
    return out


@dataclass
class Tally:
    """Expected and observed counts of a setting's calls under one rule (plain data)."""

    expected: dict = field(default_factory=dict)  # output tuple -> sum of the calls' probabilities
    observed: dict = field(default_factory=dict)  # output tuple -> calls that returned it
    calls: int = 0
    impossible: dict | None = None  # the first call whose output had probability 0: its inputs and output

    def add(self, law: dict, got: tuple, inputs) -> None:
        self.calls += 1
        for key, pr in law.items():
            self.expected[key] = self.expected.get(key, 0.0) + pr
        self.observed[got] = self.observed.get(got, 0) + 1
        if self.impossible is None and law.get(got, 0.0) <= 0.0:
            self.impossible = dict(inputs(), returned=list(got))


@dataclass(frozen=True)
class RuleResult:
    """The test of one setting's calls against one rule (plain data)."""

    rule: str
    calls: int
    statistic: float
    df: int
    p_value: float
    worst_cell: str  # the output with the largest contribution
    observed: int
    expected: float
    impossible: dict | None  # an offending call when an output had probability 0

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def test_tally(rule: str, t: Tally) -> RuleResult:
    """Pearson's test of ``t`` (module docstring); p = 0 at an impossible output."""
    from rheotheory.stats import pool_cells

    keys = sorted(set(t.expected) | set(t.observed))
    exp = np.array([t.expected.get(k, 0.0) for k in keys])  # [cells]
    obs = np.array([t.observed.get(k, 0) for k in keys], dtype=np.float64)  # [cells]
    if t.impossible is not None:
        got = tuple(t.impossible["returned"])
        return RuleResult(rule, t.calls, float("inf"), max(len(keys) - 1, 0), 0.0, " ".join(map(str, got)),
                          int(t.observed.get(got, 0)), float(t.expected.get(got, 0.0)), t.impossible)
    if t.calls == 0:
        return RuleResult(rule, 0, 0.0, 0, 1.0, "", 0, 0.0, None)
    from scipy import stats as sps

    groups = pool_cells(exp, MIN_EXPECTED)
    e = np.array([exp[g].sum() for g in groups])
    o = np.array([obs[g].sum() for g in groups])
    contrib = (o - e) ** 2 / e
    df = len(groups) - 1
    stat = float(contrib.sum())
    p = float(sps.chi2.sf(stat, df)) if df > 0 else 1.0
    j = int(np.argmax(contrib))
    name = (" ".join(map(str, keys[groups[j][0]])) if len(groups[j]) == 1 else f"{len(groups[j])} rare outputs")
    return RuleResult(rule, t.calls, stat, df, p, name, int(o[j]), float(e[j]), None)
