"""Killer suite, part 1: exact certificates pinned on small instances (docs/mutation_report.md).

Each case certifies a method exhaustively in exact rationals and compares everything the
certificate reports with its pin (:mod:`killer_pins`): a mutant of a verifier or a tree builder
that changes the law of Z, E|Z|, the verdict or the enumeration's class counts fails here. The
lossless verdicts are also checked against what is known independently: every admitted method is
exactly lossless (deviation 0) and the negative control ``proxy=true`` is lossy on the dense
instance.
"""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from killer_pins import CASES, PAIRS, PINS, SAMPLED_CASES, compute, method_of, sample_digest, summary
from rheotheory import certify

PINNED = json.loads(PINS.read_text())

#: Known lossy on the dense instance: the sampled slot scored by its own drawn probability.
LOSSY = {"rheo-true-ot@dense", "adaptive-true@dense", "adaptive-true@zeros"}


@pytest.mark.parametrize("case", [c[0] for c in CASES])
@pytest.mark.parametrize("pair", list(PAIRS))
def test_certificate_matches_pin(case, pair):
    key = f"{case}@{pair}"
    got = compute(case, pair)
    assert got == PINNED[key], key
    assert got["lossless"] == (key not in LOSSY)
    assert (Fraction(got["max_deviation"]) == 0) == got["lossless"]


def test_every_pin_has_a_case():
    assert set(PINNED) == ({f"{c[0]}@{p}" for c in CASES for p in PAIRS}
                           | {f"{c}@sampled" for c in SAMPLED_CASES})


@pytest.mark.parametrize("case", SAMPLED_CASES)
def test_monte_carlo_draws_match_pin(case):
    """The sampling path (RandomChooser builds the tree, SampleBranch walks it) with a fixed seed."""
    assert sample_digest(case) == PINNED[f"{case}@sampled"]


@pytest.mark.parametrize("case, pair, eager", [("rheo-head0-fillers", "zeros", True),
                                              ("rheo-head0-fillers", "dense", False),
                                              ("rheo-head1-fill-seq", "dense", False),
                                              ("adaptive-predicted", "zeros", False),
                                              ("static-wor-rrs", "zeros", True),
                                              ("rheo-next-n1", "dense", False),
                                              ("rheo-k2-head0-n2", "dense", False),
                                              ("rheo-k2-head0-n2", "zeros", False)])
def test_unreduced_enumeration_gives_the_same_law(case, pair, eager):
    """Leaving out doomed expansions (docs/theory.md section 5.6) and integrating unresolved
    leaves are pure speed-ups: without them the exact law of Z and the outcome count agree."""
    _, family, fields = next(c for c in CASES if c[0] == case)
    method = method_of(family, fields)
    instance = PAIRS[pair]()
    fast = certify(instance, method)
    slow = certify(instance, method, reduce=False, eager=eager)
    assert {z: w for z, w in slow.z_law.items() if w} == {z: w for z, w in fast.z_law.items() if w}
    assert slow.outcomes == fast.outcomes
    assert slow.branches >= fast.branches


@pytest.mark.parametrize("case", ["chain-block", "static-wor-rrs", "rheo-head0-fillers", "adaptive-head0-traversal",
                                  "chain-kseq", "adaptive-next-traversal-ot"])
def test_float_certificate_agrees_with_exact(case):
    """The same rules in float64: lossless within the float tolerance, E|Z| equal to the exact pin."""
    _, family, fields = next(c for c in CASES if c[0] == case)
    cert = certify(PAIRS["dense"](), method_of(family, fields), exact=False)
    pin = PINNED[f"{case}@dense"]
    assert cert.lossless
    assert abs(float(cert.tokens_per_step) - float(Fraction(pin["tokens_per_step"]))) < 1e-12
    assert cert.classes == pin["classes"]
    assert cert.outcomes == pin["outcomes"]


def test_summary_digest_is_order_free():
    cert = certify(PAIRS["dense"](), method_of("chain", dict(depth=1, verifier="sequential")))
    s = summary(cert)
    cert.z_law = dict(reversed(list(cert.z_law.items())))
    assert summary(cert) == s
