"""Toy LM pairs: generators, JSON round trip, and rejection of malformed tables."""

import math
from fractions import Fraction as F

import numpy as np
import pytest

from rheotheory import InstanceError, LawError, ToyPair, logits_pair, random_pair
from rheotheory import laws


def small_instance():
    return {"vocab_size": 2, "horizon": 1,
            "target": {"": ["1/2", "1/2"], "0": ["0.25", "0.75"], "1": [1, 0]},
            "draft": {"": ["1/3", "2/3"], "0": [0.5, 0.5], "1": ["0", "1"]}}


def test_json_round_trip_exact(tmp_path):
    pair = random_pair(3, 2, seed=11)
    path = tmp_path / "inst.json"
    pair.save(path)
    back = ToyPair.load(path)
    for k in pair.target:
        assert list(back.p(k)) == list(pair.p(k)) and list(back.q(k)) == list(pair.q(k))


def test_parse_mixed_number_formats():
    pair = ToyPair.from_dict(small_instance())
    assert list(pair.p((0,))) == [F(1, 4), F(3, 4)]
    assert list(pair.q(())) == [F(1, 3), F(2, 3)]
    fpair = ToyPair.from_dict(small_instance(), exact=False)
    assert fpair.p((0,)).dtype == np.float64 and abs(fpair.q(())[0] - 1 / 3) <= 1e-15


@pytest.mark.parametrize("mutate,msg", [
    (lambda d: d["target"].__setitem__("", ["1/2", "1/3"]), "sum to 5/6"),
    (lambda d: d["target"].__setitem__("", ["-1/2", "3/2"]), "negative"),
    (lambda d: d["draft"].__setitem__("0", ["nan", "1"]), "not finite"),
    (lambda d: d["draft"].__setitem__("0", ["abc", "1"]), "not a number"),
    (lambda d: d["draft"].pop("1"), "missing prefix '1'"),
    (lambda d: d["draft"].__setitem__("0", ["1/2", "1/4", "1/4"]), "3 entries but vocab_size is 2"),
    (lambda d: d["draft"].__setitem__("5", ["1/2", "1/2"]), "outside 0..1"),
    (lambda d: d["draft"].__setitem__("0  1", ["1/2", "1/2"]), "single spaces"),
    (lambda d: d.pop("draft"), "missing the field 'draft'"),
    (lambda d: d.__setitem__("vocab_size", 0), "positive integer"),
    (lambda d: d.__setitem__("horizon", -1), "non-negative"),
    (lambda d: d["target"].__setitem__("0 1", ["1/2", "1/2"]), "longer than the horizon"),
])
def test_malformed_instances_rejected(mutate, msg):
    d = small_instance()
    mutate(d)
    with pytest.raises((InstanceError, LawError), match=msg):
        ToyPair.from_dict(d)


def test_load_errors(tmp_path):
    with pytest.raises(InstanceError, match="cannot read"):
        ToyPair.load(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(InstanceError, match="not valid JSON"):
        ToyPair.load(bad)


def test_float_law_checks():
    with pytest.raises(LawError, match="NaN"):
        laws.check_law(np.array([math.nan, 1.0]))
    with pytest.raises(LawError, match="sum"):
        laws.check_law(np.array([0.5, 0.6]))
    with pytest.raises(LawError, match="temperature"):
        laws.temper_logits(np.zeros(3), -1.0)


def test_generators_are_seeded_and_valid():
    a, b = random_pair(3, 2, seed=5), random_pair(3, 2, seed=5)
    assert all(list(a.p(k)) == list(b.p(k)) for k in a.target)
    assert any(list(a.p(k)) != list(random_pair(3, 2, seed=6).p(k)) for k in a.target)
    lp = logits_pair(3, 1, seed=2, temperature=0.0)
    # T = 0: exact greedy target (a point mass), the untempered draft stays spread
    assert all(sorted(lp.p(k))[-1] == 1 for k in lp.target)
    assert all(max(lp.q(k)) < 1 for k in lp.draft)
    hot = logits_pair(3, 1, seed=2, temperature=1.5, temper_draft=True)
    cold = logits_pair(3, 1, seed=2, temperature=0.5, temper_draft=True)
    assert max(hot.p(())) < max(cold.p(()))
    with pytest.raises(InstanceError, match="mismatch"):
        random_pair(3, 1, mismatch=2)
