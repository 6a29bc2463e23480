"""The rule check of ``rheo audit`` (rheotheory.audit.rules): no false alarm on a published lossless
rule, and a planted bug of each caught.

The verifiers are tests/audit_rule_verifiers.py: each published rule written as an engine writes it
(vectorised torch, independent of the project's own implementations in rheotheory.verify), beside a
planted bug. Every statistical test here states alpha, seed and N; each correct verifier's test has
its planted companion that must fail at the same size. The exact tests of the rules' call laws are
in tests/test_audit.py.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from rheotheory.audit import LOSSLESS, LOSSY, api, rules  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
ALPHA = 0.01


def _verifiers():
    spec = importlib.util.spec_from_file_location("audit_rule_verifiers", ROOT / "tests" / "audit_rule_verifiers.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


RV = _verifiers()
CORRECT = [r for r in RV.RULE_VERIFIERS if r[2] is not None]
PLANTED = [r for r in RV.RULE_VERIFIERS if r[2] is None]


def test_the_registry_lists_each_kinds_rules_and_refuses_a_second_name():
    assert rules.rules_for("chain") == ("rejection", "one-hot", "block")
    assert rules.rules_for("tree") == ("rejection", "one-hot", "traversal", "kseq", "ot")
    with pytest.raises(ValueError, match="registered twice"):
        rules.register_known_rule(rules.KNOWN_RULES["block"])
    with pytest.raises(ValueError, match="kinds"):
        rules.register_known_rule(rules.KnownRule("x", "x", ("dag",), "", lambda: None))
    from rheotheory.cli.audit import RULE_CHOICES

    assert RULE_CHOICES == ("auto", *rules.KNOWN_RULES, "any")


def _calls(kind: str, select: str | None, n: int, seed: int = 5):
    """``n`` calls the harness makes (their inputs), from the settings matching ``select``."""
    from rheotheory.audit import user

    got = []

    def spy(*args):
        got.append(args[:-1])
        return (RV.rejection_vectorised if kind == "chain" else RV.rrs_tree)(*args)

    settings, _ = user.settings_for(spy, kind, seed=seed)
    for s in settings:
        if select is None or select in s.name:
            s.sample(3, seed)
    step = max(1, len(got) // n)
    return got[::step][:n]


def _law(rule: str, kind: str, args) -> dict:
    if kind == "chain":
        toks, q, p = args
        return rules.chain_law(toks.tolist(), None if q is None else q.double().numpy(), p.double().numpy(), rule)
    parents, toks, q, p = args
    return rules.tree_law(parents.tolist(), toks.tolist(), q.double().numpy(), p.double().numpy(), rule)


@pytest.mark.parametrize("name, kind, rule, select, what", CORRECT, ids=[r[0] for r in CORRECT])
def test_each_engine_written_rule_has_its_known_rules_law_call_by_call(name, kind, rule, select, what):
    """The engine's verifier and the project's implementation of its rule agree on each call:
    12 calls the harness makes, each repeated N = 2000 times from seed 0; Pearson's test of the
    outputs against the call's exact law under the rule (cells of expected count >= 5 pooled), at
    alpha 0.001 per call; an output of probability 0 fails at once. Companion: the same calls
    through the rule's planted bug differ from its law on at least one call."""
    from scipy import stats

    fn = getattr(RV, name)
    planted = {"rejection": RV.residual_shrunk if kind == "chain" else RV.rrs_first_child_only,
               "one-hot": RV.match_resample if kind == "chain" else RV.eagle_tree_no_zero,
               "block": RV.block_token_residual, "traversal": RV.traversal_stale_weight,
               "kseq": RV.kseq_rho_one, "ot": RV.ot_skip_residual}[rule]
    calls = _calls(kind, select, 12)
    gen = torch.Generator().manual_seed(0)

    def p_value(f, args, law):
        counts = {}
        for _ in range(2000):
            out = tuple(f(*args, gen).tolist())
            counts[out] = counts.get(out, 0) + 1
        if any(law.get(o, 0.0) <= 0 for o in counts):
            return 0.0
        keys = sorted(law)
        e = np.array([2000 * law[k] for k in keys])
        o = np.array([counts.get(k, 0) for k in keys], dtype=float)
        big = e >= 5
        e = np.append(e[big], e[~big].sum())
        o = np.append(o[big], o[~big].sum())
        keep = e > 0
        e, o = e[keep], o[keep]
        return 1.0 if len(e) < 2 else float(stats.chi2.sf(((o - e) ** 2 / e).sum(), len(e) - 1))

    laws = [_law(rule, kind, a) for a in calls]
    worst = min(p_value(fn, a, law) for a, law in zip(calls, laws))
    assert worst >= 0.001, (name, worst)
    assert min(p_value(planted, a, law) for a, law in zip(calls, laws)) < 0.001, planted.__name__


def _audit(name, kind, select, runs, **kw):
    return api.audit_verifier(getattr(RV, name), kind, runs=runs, setting=select, isolate=False, **kw)


@pytest.mark.parametrize("name, planted, kind, select, follows", [
    ("block_verification", "block_token_residual", "chain", "k=2", "block"),
    ("traversal", "traversal_stale_weight", "tree", "D=2", "traversal"),
])
def test_block_and_traversal_verification_are_not_failed_and_their_bugs_are(name, planted, kind, select, follows):
    """alpha 0.01, seed 0, N = 300 runs per setting (the 5 chain settings with k = 2; the 4 tree
    settings of depth 2): block verification and traversal verification, written as an engine
    writes them, are not rejected and follow their rule (before the rule check knew block
    verification a correct block verifier was called ``differs``, exit 3); block verification with
    the token-level residual (vllm-ascend #7807) and traversal verification that keeps a node's
    weight after a rejected child are caught (``lossy`` or ``differs``) at the same size."""
    ok = _audit(name, kind, select, 300, companion=False)
    assert ok.verdict == LOSSLESS and ok.rule["follows"] == follows, (ok.summary(), ok.rule["rules"])
    bad = _audit(planted, kind, select, 300, companion=False)
    assert bad.verdict in (LOSSY, api.DIFFERS), bad.summary()


def test_a_verifier_that_follows_no_rule_is_told_the_closest_rule_and_never_to_switch_the_check_off():
    """The residual norm((p - 0.97 q)+) at N = 300 runs per setting on the k = 2 chain settings
    (alpha 0.01, seed 0): the law is not rejected at this size, every known rule is; the report
    names the closest rule (standard rejection sampling), the outputs that differ most and the
    offending call, and reproduces at the same size."""
    res = _audit("residual_shrunk", "chain", "k=2", 300, companion=False)
    assert res.verdict == api.DIFFERS and res.rule["closest"] == "rejection", res.summary()
    text = api.explain(res, "rheo audit --verifier tests/audit_rule_verifiers.py:residual_shrunk --kind chain")
    assert "the calls follow none of the known lossless rules" in text
    assert "closest rule: standard rejection sampling" in text and "one offending call" in text, text
    assert "rule any" not in text and "--rule" not in text, text
    assert text.endswith("--kind chain --runs 300"), text


def test_a_refused_verifier_fails_a_plain_test_with_one_line(tmp_path):
    """A verifier the audit refuses (it draws from Python's random) fails a plain pytest test with
    the audit's one line: no traceback of the library."""
    import subprocess
    import sys

    (tmp_path / "test_refused.py").write_text(
        "import random, torch\n"
        "from rheotheory.audit import assert_lossless\n\n"
        "def verify(draft_tokens, draft_probs, target_probs, generator):\n"
        "    return torch.cat([draft_tokens[:1] * 0 + random.randrange(5)])\n\n"
        "def test_it():\n"
        "    assert_lossless(verify, 'chain', runs=20)\n")
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_refused.py"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=600,
                       env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    out = p.stdout + p.stderr
    assert p.returncode == 1, out
    failure = [ln for ln in out.splitlines() if "rheo audit:" in ln]
    assert failure and "ignores its generator" in failure[0], out
    assert "rheotheory/audit" not in out and "Traceback" not in out, out


# -- the claims tier: every published rule at the audit's size ------------------------------------------


#: The verifiers of the table at one size; the (p/q)^0.97 acceptance is sized apart (below).
TABLE_ROWS = [r for r in RV.RULE_VERIFIERS if r[0] != "accept_power"]


@pytest.mark.claims
@pytest.mark.parametrize("name, kind, rule, select, what", TABLE_ROWS, ids=[r[0] for r in TABLE_ROWS])
def test_no_false_alarm_on_a_published_rule_and_each_planted_bug_caught(name, kind, rule, select, what):
    """Each verifier of tests/audit_rule_verifiers.py through ``assert_lossless`` (alpha 0.01, seed 0,
    on every setting of its kind, or those its drafts come from): a correct one at the audit's
    default size (2,000 runs a setting, the size of the table benchmarks/audit_rules.py makes)
    passes (its law not rejected, its calls follow its rule, the companion rejected); a planted
    one fails at 600 runs a setting. The (p/q)^0.97 acceptance needs its own size
    (test_the_full_support_acceptance_bug_is_caught_at_a_one_minute_size). At level 0.01 a correct
    verifier may be failed by chance at one size and seed: at 600 runs, seed 0, two of the eight
    were (sample_and_match and kseq_tree, the law test's p 0.006 and 0.002; sample_and_match over
    seeds 100-139 at 600 runs: none under 0.038), which is why the correct ones run at the
    default size."""
    fn = getattr(RV, name)
    if rule is not None:
        res = api.assert_lossless(fn, kind, setting=select, isolate=False)
        assert res.rule["rules"][rule]["rejected"] is False, res.rule["rules"][rule]
    else:
        with pytest.raises((AssertionError, pytest.fail.Exception)):
            api.assert_lossless(fn, kind, runs=600, setting=select, isolate=False)


@pytest.mark.claims
def test_the_full_support_acceptance_bug_is_caught_at_a_one_minute_size():
    """Acceptance min(1, (p/q)^0.97) (exact TV of the law of L tokens up to 0.016 on the k <= 2
    settings, no output of probability 0 under any rule): ``assert_lossless(fn, "chain",
    runs=1200)`` fails it (alpha 0.01, seed 0), at a size a one-minute budget gives (``budget=60``
    made 1,175-1,380 runs a setting in the guide's measurement). The rule check's length test is
    what sees it: each call accepts a little too much, the law test alone does not reject (p 0.09).

    The runs are given, not sized by ``budget``: a budget sizes them from the machine's speed, and
    the verdict then changes with it (at 1,312 runs, seed 0, the law test rejects first, p 0.007:
    ``lossy``, also a catch, but another verdict). benchmarks/audit_sensitivity.py measures the
    rate over seeds at ``budget=60`` and the CPU seconds."""
    with pytest.raises(pytest.fail.Exception, match=r"accept_power: differs \(the law not rejected"
                       r"(.|\n)*closest rule: standard rejection sampling"):
        api.assert_lossless(RV.accept_power, "chain", runs=1200, isolate=False)
