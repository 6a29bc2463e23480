"""Your engine's verifier, audited in your own test suite: copy this file to your tests.

Set VERIFIER to your function (the chain or tree signature of docs/guide/audit.md), as
"package.module:function" or "path/to/file.py:function", and KIND to its signature;
for a program in another language set COMMAND instead (the process protocol of the
guide). The test fails when rheotheory's audit rejects the law of its tokens, when
its calls follow none of the published lossless rules the audit knows (standard and
recursive rejection sampling, the one-hot rule, block and traversal verification,
K-SEQ, the OT rule), or when it avoids being tested (it exits, reseeds a global
generator, never draws from its own); the failure names the worst setting, expected
against observed, one offending call and the command that reproduces it at the same
size.

Needs pip install rheotheory[torch]. About a minute of one core (BUDGET).
"""

import pytest

pytest.importorskip("torch")

from rheotheory.audit import assert_lossless  # noqa: E402

# Your verifier: "package.module:function" or "path/to/file.py:function".
VERIFIER = "rheotheory.audit.examples:chain_rejection"
# Its signature: "chain" (vLLM / transformers convention) or "tree" (parent pointers).
KIND = "chain"
# CPU seconds of the audit (the runs per setting follow from the verifier's speed, so a
# slower machine runs fewer and can reach another verdict: for the same verdict on every
# machine, pass runs=N, runs per setting, in place of budget=BUDGET).
BUDGET = 60


# Or a verifier program in any language: its command line (None: VERIFIER above).
COMMAND = None


def test_my_verifier_is_lossless():
    if COMMAND is not None:
        assert_lossless(command=COMMAND, kind=KIND, budget=BUDGET)
    else:
        assert_lossless(VERIFIER, KIND, budget=BUDGET)


# The same with the fixture, whose size `pytest --rheo-audit-budget 120s` sets from the
# command line:
#
# def test_my_verifier_is_lossless(rheo_audit):
#     rheo_audit(VERIFIER, KIND)
