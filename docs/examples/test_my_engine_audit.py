"""Your engine's verifier, audited in your own test suite: copy this file to your tests.

Set VERIFIER to your function (the chain or tree signature of docs/guide/audit.md), as
"package.module:function" or "path/to/file.py:function", and KIND to its signature.
The test fails when rheotheory's audit rejects the law of its tokens, when its calls
follow neither standard rejection sampling nor the one-hot rule, or when it avoids
being tested (it exits, reseeds a global generator, never draws from its own); the
failure names the worst setting, expected against observed, one offending call and
the command that reproduces it.

Needs pip install rheotheory[torch]. About a minute of one core (BUDGET).
"""

import pytest

pytest.importorskip("torch")

from rheotheory.audit import assert_lossless  # noqa: E402

# Your verifier: "package.module:function" or "path/to/file.py:function".
VERIFIER = "rheotheory.audit.examples:chain_rejection"
# Its signature: "chain" (vLLM / transformers convention) or "tree" (parent pointers).
KIND = "chain"
# CPU seconds of the audit (the runs per setting follow from the verifier's speed).
BUDGET = 60


def test_my_verifier_is_lossless():
    assert_lossless(VERIFIER, KIND, budget=BUDGET)


# The same with the fixture, whose size `pytest --rheo-audit-budget 120s` sets from the
# command line:
#
# def test_my_verifier_is_lossless(rheo_audit):
#     rheo_audit(VERIFIER, KIND)
