r"""The rule check: every verifier call against its exact law under each known lossless rule.

A lossless verifier may follow any rule, so the audit's verdict on losslessness comes from the
law of the tokens alone (:mod:`rheotheory.audit.core`). But the harness of
:mod:`rheotheory.audit.user` knows everything a call is handed (the drafted tokens, the law each
was drawn from, the target law at each drafted position), so for a *known* rule it knows the exact
law of the call's output given its inputs, and can test every call against it, with none of the
noise of the drafts or of the target's own sampling (docs/guide/audit.md, "the rule check").

**The known rules** (:data:`KNOWN_RULES`) are the published lossless rules the project
implements and certifies; each is evaluated here by the project's own implementation in
:mod:`rheotheory.verify` (the exact enumeration of :class:`~rheotheory.verify.walk.EnumerateBranch`
over the one tree the call was handed, in float64), never by a second copy:

- ``rejection`` (chain, tree): standard rejection sampling (Leviathan et al. 2023): accept
  ``x ~ q`` with ``min(1, p(x)/q(x))``, else emit from ``norm((p - q)+)``; over a tree the
  children in order with the residual updated after each rejection (recursive rejection
  sampling, SpecInfer), with replacement for i.i.d. children and without it for children drawn
  without it (each child's ``q`` is its law given its earlier siblings: RSD, Sequoia);
- ``one-hot`` (chain, tree): the same with ``q`` the point mass on the draft: accept ``x`` with
  ``p(x)``, else draw from ``p`` with ``x`` zeroed. Also the law of *sample-and-match*
  (llama.cpp's server, MLX-LM, prompt lookup) and EAGLE's rule;
- ``block`` (chain): block verification (Sun et al. 2024, arXiv 2403.10444, Algorithm 2; vLLM and
  SGLang ship it): :mod:`rheotheory.verify.block`;
- ``traversal`` (tree): Traversal Verification (Weng et al. 2025, arXiv 2505.12398), block
  verification's tree form: :mod:`rheotheory.verify.traversal`;
- ``kseq`` (tree): SpecTr's K-SEQ (Sun et al. 2023) at a node whose children share one draft law
  (i.i.d. drafts), recursive rejection at any other node (where K-SEQ is not defined):
  :func:`rheotheory.verify.rules.kseq`;
- ``ot`` (tree): the optimal-transport rule for deterministic children plus sampled ones (Hu et
  al. 2025; REFERENCE section 3): the sampled children by recursive rejection first, then the
  residual draw continues into a deterministic child holding it:
  :func:`rheotheory.verify.rules.ot_wor` (``ot`` with one sampled child, ``one-hot`` with none,
  ``rejection`` without deterministic children).

A child whose draft row is the point mass on its own token (a deterministic draft: a ``None`` row
of a chain, the top-w children of a tree, the head slot of RheoSampling's layout) is a
deterministic child for every rule (for ``rejection``, ``one-hot``, ``block`` and ``traversal``
that changes nothing: their formulas coincide on a point mass).

**The test of one setting** (:func:`test_tally`): every call's output (the token tuple it
returns) is a cell; ``E_c`` is the sum over the calls of the call's exact probability of ``c``,
``O_c`` the number of calls that returned ``c``. Cells with ``E_c < 5`` are pooled
(:func:`rheotheory.stats.pool_cells`). Given the calls before it, each output is one draw from its
own law, so ``O - E`` is a martingale whose covariance is at most the multinomial one with the
same ``E`` (the calls' laws differ): Pearson's statistic against ``chi2(cells - 1)`` is then
conservative, never too eager. An output to which its call's law gives probability 0 (an
*impossible* call, e.g. a correction token where ``p <= q``) rejects at once (p = 0) and is kept
as the example to show.

**The length test** (:func:`length_test`), pooled over the settings: each call's number of
accepted tokens ``A`` (its output's length less one) has, under the rule, an exact mean and
variance given the call's inputs; ``sum (A - E[A]) / sqrt(sum Var[A])`` over every call of every
setting is a martingale over its variance, normal by the martingale central limit theorem. A
deviation of the acceptance step that keeps full support (accepting with ``min(1, (p/q)^0.97)``)
moves every call's ``A`` the same way, which this sees long before the cells do (the cells mix
calls whose deviations cancel). The rule's p-value is the Bonferroni of the two families: the
settings' Pearson tests and the length test.

A rejection here means "the calls differ from this rule": a statement about the rule. The audit
calls a verifier ``differs`` when its calls follow none of the known rules (an
intersection-union test: each rule rejected at ``alpha``, so ``alpha`` holds for "follows one of
them"); every known rule being lossless, that is what a bug that keeps the law close looks like.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

__all__ = ["KnownRule", "KNOWN_RULES", "register_known_rule", "rules_for", "RULES", "RULE_NAMES", "call_law",
           "call_laws", "chain_law", "tree_law", "Tally", "RuleResult", "test_tally", "length_test", "distance", "MIN_EXPECTED"]

#: Expected count under which a cell of the rule test is pooled.
MIN_EXPECTED = 5.0


@dataclass(frozen=True)
class KnownRule:
    """A published lossless rule the rule check knows (module docstring).

    Parameters
    ----------
    name : str
        The rule's name, as ``--rule`` and the JSON write it.
    title : str
        How reports name it.
    kinds : tuple of str
        The signatures it applies to (``"chain"``, ``"tree"``).
    reference : str
        Where it is published.
    verifier : callable
        ``verifier() -> rheotheory.verify.walk.TreeVerifier``: the project's implementation, whose
        exact enumeration over the call's tree is the call's law.
    """

    name: str
    title: str
    kinds: tuple
    reference: str
    verifier: Callable


#: The known rules by name, in the order reports prefer them (filled by :func:`register_known_rule`).
KNOWN_RULES: dict[str, KnownRule] = {}


def register_known_rule(rule: KnownRule) -> KnownRule:
    """Add ``rule`` to :data:`KNOWN_RULES` (a new rule is one :class:`KnownRule` and this call).

    Parameters
    ----------
    rule : KnownRule
        The rule; its name must be new.

    Returns
    -------
    KnownRule
        ``rule``.

    Raises
    ------
    ValueError
        The name is taken, or a kind is neither ``"chain"`` nor ``"tree"``.
    """
    if rule.name in KNOWN_RULES or rule.name in ("auto", "any"):
        raise ValueError(f"known rule {rule.name!r} is registered twice")
    if not rule.kinds or any(k not in ("chain", "tree") for k in rule.kinds):
        raise ValueError(f"known rule {rule.name!r}: kinds must be 'chain' and/or 'tree', got {rule.kinds!r}")
    KNOWN_RULES[rule.name] = rule
    return rule


def rules_for(kind: str) -> tuple:
    """The names of the known rules that apply to ``kind`` ("chain" or "tree"), in order.

    Parameters
    ----------
    kind : str
        ``"chain"`` or ``"tree"``.

    Returns
    -------
    tuple of str
    """
    return tuple(n for n, r in KNOWN_RULES.items() if kind in r.kinds)


def _per_node(name: str):
    def make():
        from ..verify.rules import VERIFIERS
        from ..verify.walk import PerNodeWalk

        return PerNodeWalk(VERIFIERS[name], name)
    return make


def _tree_level(name: str):
    def make():
        from ..verify.walk import tree_verifier

        return tree_verifier(name)
    return make


def _kseq_where_defined():
    """K-SEQ at a node whose children share one draft law, recursive rejection elsewhere."""
    from ..errors import VerifierError
    from ..verify.rules import kseq, sequential
    from ..verify.walk import PerNodeWalk

    def rule(p, cands):
        sampled = [c for c in cands if c.law is not None]
        if len(sampled) == len(cands) and len(cands) > 1:
            try:
                return kseq(p, cands)
            except VerifierError:  # NOTE: children from different laws: K-SEQ is not defined there
                pass
        return sequential(p, cands)

    return PerNodeWalk(rule, "kseq")


for _rule in (
    KnownRule("rejection", "standard rejection sampling", ("chain", "tree"),
              "Leviathan et al. 2023; recursive, with or without replacement: SpecInfer, RSD, Sequoia",
              _per_node("sequential")),
    KnownRule("one-hot", "the one-hot rule (sample-and-match)", ("chain", "tree"),
              "EAGLE; sample-and-match in llama.cpp's server, MLX-LM, prompt lookup", _per_node("onehot")),
    KnownRule("block", "block verification", ("chain",), "Sun et al. 2024, arXiv 2403.10444, Algorithm 2",
              _tree_level("block")),
    KnownRule("traversal", "traversal verification", ("tree",), "Weng et al. 2025, arXiv 2505.12398",
              _tree_level("traversal")),
    KnownRule("kseq", "SpecTr K-SEQ (i.i.d. children)", ("tree",), "Sun et al. 2023, SpecTr", _kseq_where_defined),
    KnownRule("ot", "the optimal-transport rule (deterministic + sampled children)", ("tree",),
              "Hu et al. 2025, arXiv 2502.18779", _per_node("ot-wor")),
):
    register_known_rule(_rule)

#: The chain rules in the order the audit prefers them (kept for readers of the old name).
RULES = rules_for("chain")

#: How each known rule is named in reports.
RULE_NAMES = {n: r.title for n, r in KNOWN_RULES.items()}

_VERIFIERS: dict = {}


def _verifier(rule: str):
    got = _VERIFIERS.get(rule)
    if got is None:
        import rheotheory.verify  # noqa: F401  NOTE: registers the tree-level verifiers

        got = _VERIFIERS[rule] = KNOWN_RULES[rule].verifier()
    return got


def _tree_of(parents, tokens, q):
    """The call's tree as :mod:`rheotheory.verify` reads it: node ``i + 1`` for the call's node
    ``i``; a deterministic child where the row is None or the point mass on the token."""
    from ..trees.tree import DET, SAMPLED, SampleGroup, Tree

    t = Tree(1.0)
    for i, (par, x) in enumerate(zip(parents, tokens)):
        row = None if q is None else q[i]
        if row is None or row[x] >= 1.0:
            t.add(int(par) + 1, DET, 1.0, token=int(x))
        else:
            t.add(int(par) + 1, SAMPLED, 1.0, token=int(x), group=SampleGroup(row, "iid"))
    return t.finish()


def call_laws(rules, parents, tokens, q, p: np.ndarray) -> dict:
    """Exact law of one call's output under each of ``rules``: rule -> (token tuple -> probability).

    Parameters
    ----------
    rules : sequence of str
        Names of :data:`KNOWN_RULES`.
    parents : sequence of int
        Parent of each node, -1 for a child of the root (a chain: ``-1, 0, 1, ...``).
    tokens : sequence of int
        Token of each node.
    q : numpy.ndarray or None
        ``# [n, V]`` float64: the law each node was drawn from given its path and earlier
        siblings; None for a deterministic chain.
    p : numpy.ndarray
        ``# [n + 1, V]`` float64: row 0 the target law after the prefix, row ``i + 1`` after
        node ``i``'s path.

    Returns
    -------
    dict
        Rule -> {output tuple (accepted tokens, then one more) -> probability}, over outputs
        of positive probability.
    """
    from ..verify.walk import EnumerateBranch

    tree = _tree_of(parents, tokens, q)
    out = {}
    for rule in rules:
        branch = EnumerateBranch()
        branch.memo = None  # NOTE: one tree per call: nothing recurs to cache
        law: dict = {}
        for o in _verifier(rule).outcomes(tree, lambda node, u: p[node], branch):
            law[o.z] = law.get(o.z, 0.0) + float(o.weight)
        out[rule] = law
    return out


def call_law(rule: str, parents, tokens, q, p: np.ndarray) -> dict:
    """Exact law of one call's output under the known rule ``rule`` (:func:`call_laws`).

    Parameters
    ----------
    rule : str
        A name of :data:`KNOWN_RULES`.
    parents : sequence of int
    tokens : sequence of int
    q : numpy.ndarray or None
    p : numpy.ndarray

    Returns
    -------
    dict
        Output tuple -> probability.
    """
    return call_laws((rule,), parents, tokens, q, p)[rule]


def chain_law(drafts: list, q, p: np.ndarray, rule: str) -> dict:
    """:func:`call_law` of a chain call: ``drafts`` the k drafted tokens, ``q`` ``# [k, V]`` or
    None (a deterministic draft), ``p`` ``# [k+1, V]``.

    Parameters
    ----------
    drafts : list of int
    q : numpy.ndarray or None
    p : numpy.ndarray
    rule : str

    Returns
    -------
    dict
    """
    return call_law(rule, list(range(-1, len(drafts) - 1)), drafts, q, p)


def tree_law(parents: list, tokens: list, q: np.ndarray, p: np.ndarray, rule: str) -> dict:
    """:func:`call_law` of a tree call (argument order of the tree signature).

    Parameters
    ----------
    parents : list of int
    tokens : list of int
    q : numpy.ndarray
    p : numpy.ndarray
    rule : str

    Returns
    -------
    dict
    """
    return call_law(rule, parents, tokens, q, p)


@dataclass
class Tally:
    """Expected and observed counts of a setting's calls under one rule (plain data).

    Attributes
    ----------
    expected : dict
        Output tuple -> the sum of the calls' probabilities of it.
    observed : dict
        Output tuple -> the calls that returned it.
    calls : int
        Calls tallied.
    impossible : dict or None
        The first call whose output had probability 0: its inputs and output.
    length_dev : float
        Sum over the calls of (accepted tokens - their expectation under the rule).
    length_var : float
        Sum over the calls of the variance of the accepted tokens under the rule.
    length_mean : float
        Sum over the calls of the expected accepted tokens.
    least : dict or None
        The call whose output had the smallest probability under the rule (its inputs, output,
        and that probability): the call that differs most.
    """

    expected: dict = field(default_factory=dict)
    observed: dict = field(default_factory=dict)
    calls: int = 0
    impossible: dict | None = None
    length_dev: float = 0.0
    length_var: float = 0.0
    length_mean: float = 0.0
    least: dict | None = None

    def add(self, law: dict, got: tuple, inputs) -> None:
        """Tally one call.

        Parameters
        ----------
        law : dict
            The call's exact law under the rule (:func:`call_law`).
        got : tuple
            What it returned.
        inputs : callable
            ``inputs() -> dict``: the call's inputs, for the report (called only when kept).
        """
        self.calls += 1
        m = m2 = 0.0
        for key, pr in law.items():
            self.expected[key] = self.expected.get(key, 0.0) + pr
            a = len(key) - 1
            m += a * pr
            m2 += a * a * pr
        self.observed[got] = self.observed.get(got, 0) + 1
        self.length_dev += len(got) - 1 - m
        self.length_var += max(m2 - m * m, 0.0)
        self.length_mean += m
        pr = law.get(got, 0.0)
        if self.impossible is None and pr <= 0.0:
            self.impossible = dict(inputs(), returned=list(got))
        if self.least is None or pr < self.least["probability"]:
            self.least = dict(inputs(), returned=list(got), probability=float(pr))


@dataclass(frozen=True)
class RuleResult:
    """The test of one setting's calls against one rule (plain data).

    Attributes
    ----------
    rule : str
    calls : int
    statistic : float
        Pearson's statistic.
    df : int
    p_value : float
    worst_cell : str
        The output with the largest contribution.
    observed : int
    expected : float
    impossible : dict or None
        An offending call when an output had probability 0.
    differ_most : list
        Up to three outputs with the largest standardised residuals ``(O - E) / sqrt(E)``, as
        ``{"output", "observed", "expected", "z"}``.
    length : dict
        The setting's accepted tokens: ``calls``, ``observed`` and ``expected`` (means per call),
        ``dev`` and ``var`` (sums).
    least : dict or None
        The call whose output was least probable under the rule.
    """

    rule: str
    calls: int
    statistic: float
    df: int
    p_value: float
    worst_cell: str
    observed: int
    expected: float
    impossible: dict | None
    differ_most: list = field(default_factory=list)
    length: dict = field(default_factory=dict)
    least: dict | None = None

    def to_dict(self) -> dict:
        """Plain data (JSON).

        Returns
        -------
        dict
        """
        return dict(self.__dict__)


def _length(t: Tally) -> dict:
    n = max(t.calls, 1)
    return dict(calls=t.calls, observed=(t.length_mean + t.length_dev) / n, expected=t.length_mean / n,
                dev=t.length_dev, var=t.length_var)


def _name(key: tuple) -> str:
    return " ".join(map(str, key))


def test_tally(rule: str, t: Tally) -> RuleResult:
    """Pearson's test of ``t`` (module docstring); p = 0 at an impossible output.

    Parameters
    ----------
    rule : str
        The rule's name (for the result).
    t : Tally
        The setting's calls under that rule.

    Returns
    -------
    RuleResult
    """
    from rheotheory.stats import pool_cells

    keys = sorted(set(t.expected) | set(t.observed))
    exp = np.array([t.expected.get(k, 0.0) for k in keys])  # [cells]
    obs = np.array([t.observed.get(k, 0) for k in keys], dtype=np.float64)  # [cells]
    if t.impossible is not None:
        got = tuple(t.impossible["returned"])
        return RuleResult(rule, t.calls, float("inf"), max(len(keys) - 1, 0), 0.0, _name(got),
                          int(t.observed.get(got, 0)), float(t.expected.get(got, 0.0)), t.impossible,
                          [dict(output=_name(got), observed=int(t.observed.get(got, 0)),
                                expected=float(t.expected.get(got, 0.0)), z=float("inf"))], _length(t), t.least)
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
    names = [_name(keys[g[0]]) if len(g) == 1 else f"{len(g)} rare outputs" for g in groups]
    order = np.argsort(-contrib)
    j = int(order[0])
    most = [dict(output=names[i], observed=int(o[i]), expected=float(e[i]), z=float((o[i] - e[i]) / math.sqrt(e[i])))
            for i in order[:3].tolist() if contrib[i] > 0]
    return RuleResult(rule, t.calls, stat, df, p, names[j], int(o[j]), float(e[j]), None, most, _length(t), t.least)


def distance(tallies) -> float:
    """How far a rule is from the calls: ``0.5 sum_c |O_c - E_c| / calls`` over the outputs of the
    calls of every setting (unpooled), the total variation between the outputs' frequencies and
    their expectation under the rule. It is biased upwards by sampling noise alike for every rule,
    so it ranks the rules; the report's *closest rule* is the one of smallest distance.

    Parameters
    ----------
    tallies : sequence of Tally
        One rule's tallies, one per setting.

    Returns
    -------
    float
    """
    gap = sum(abs(t.observed.get(k, 0) - t.expected.get(k, 0.0)) for t in tallies
              for k in set(t.observed) | set(t.expected))
    return 0.5 * gap / max(sum(t.calls for t in tallies), 1)


def length_test(results) -> dict:
    """The length test of one rule pooled over settings (module docstring): two-sided.

    Parameters
    ----------
    results : sequence of RuleResult
        The rule's per-setting results (their ``length``).

    Returns
    -------
    dict
        ``z``, ``p_value`` (two-sided, normal), ``calls``, ``observed`` and ``expected`` (mean
        accepted tokens per call over every call).
    """
    from scipy import stats as sps

    dev = sum(r.length.get("dev", 0.0) for r in results)
    var = sum(r.length.get("var", 0.0) for r in results)
    calls = sum(r.length.get("calls", 0) for r in results)
    mean = sum(r.length.get("expected", 0.0) * r.length.get("calls", 0) for r in results)
    z = dev / math.sqrt(var) if var > 0 else 0.0
    p = float(2 * sps.norm.sf(abs(z))) if var > 0 else 1.0
    return dict(z=z, p_value=p, calls=calls, observed=(mean + dev) / max(calls, 1), expected=mean / max(calls, 1))
