"""Toy LM pairs: generators, JSON round trip, and rejection of malformed tables."""

import math
from fractions import Fraction as F

import numpy as np
import pytest

from rheotheory import InstanceError, LawError, ToyPair, logits_pair, random_pair
from rheotheory import laws
from rheotheory.pairs import MAX_TABLE_ENTRIES, MIN_TEMPERATURE, check_table_size, table_rows


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
    (lambda d: d["target"].__setitem__("0", ["3/2", "-1/2"]), "greater than 1"),
    (lambda d: d["target"].__setitem__("0", [True, 0]), "boolean"),
    (lambda d: d["target"].__setitem__("0", ["1e-999999999", "1"]), "exponent"),
    (lambda d: d["target"].__setitem__("0", ["1" * 5000, "0"]), "4300 digits"),
    (lambda d: d["target"].__setitem__("0", ["\u0661/\u0662", "1/2"]), "not a number"),
    (lambda d: d["target"].__setitem__("0", ["1_0/2_0", "1/2"]), "not a number"),
    (lambda d: d["target"].__setitem__("0", [None, 1]), "unsupported type"),
    (lambda d: d.__setitem__("horizon", 10**6), "MAX_TABLE_ENTRIES"),
    (lambda d: d.__setitem__("vocab_size", 10**5000), "MAX_TABLE_ENTRIES"),
    (lambda d: d.__setitem__("horizon", 1.0), "non-negative integer"),
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


# -- input rules: canonical keys, bounded numbers, bounded sizes ------------------------------------

@pytest.mark.parametrize("alias", ["01", "+1", "-0", "1 ", " 1", "0_1", "\u0661", "\uff11", "1\t", "0\n1", "0  1"])
def test_key_aliases_are_refused_not_merged(alias):
    """A key that int() reads as another prefix would silently overwrite that prefix's row."""
    d = small_instance()
    d["target"][alias] = ["1/2", "1/2"]
    with pytest.raises(InstanceError, match="not canonical"):
        ToyPair.from_dict(d)


def test_canonical_keys_are_exactly_what_the_writer_writes():
    pair = random_pair(11, 1, seed=0)
    keys = set(pair.to_dict()["target"])
    assert "10" in keys and "" in keys
    assert ToyPair.from_dict(pair.to_dict()).to_dict() == pair.to_dict()


@pytest.mark.parametrize("text,value", [("1/3", F(1, 3)), (" 0.25 ", F(1, 4)), (".5", F(1, 2)), ("5e-1", F(1, 2)),
                                        ("+1/2", F(1, 2)), ("-0", 0), ("1e-1000", F(1, 10**1000)), ("0e1000", 0)])
def test_probability_text_grammar(text, value):
    assert laws.parse_probability(text, exact=True) == value
    assert laws.parse_probability(text, exact=False) == float(value)


@pytest.mark.parametrize("value,msg", [
    ("1e-1001", "exponent"), ("1e+99999999999", "exponent"), ("1" * 9000, "characters"),
    ("1/" + "1" * 4301, "4300 digits"), ("1/0", "zero denominator"), ("nan", "not finite"), ("-inf", "not finite"),
    ("0x1", "not a number"), ("1 / 2", "not a number"), ("", "not a number"), (math.nan, "not finite"),
    (1e400, "not finite"), ("1e400", "greater than 1"), pytest.param(10**5000, "greater than 1", id="int-of-5001-digits"), (-1e-300, "negative"),
    ([0.5], "unsupported type"),
])
def test_probability_rejections(value, msg):
    for exact in (True, False):
        with pytest.raises(LawError, match=msg):
            laws.parse_probability(value, exact=exact)


def test_parse_number_keeps_any_finite_value_but_never_overflows():
    assert laws.parse_number("2", exact=True) == 2
    with pytest.raises(LawError, match="float64 range"):
        laws.parse_number("1e400", exact=False)


def test_table_size_cap_is_checked_before_any_work():
    assert table_rows(3, 2, limit=100) == 13 and table_rows(1, 10**9, limit=5) == 6
    assert table_rows(2, 10**18, limit=100) == 101  # a few steps, not 2^(10^18)
    assert check_table_size(2, 19) == 2**20 - 1  # the largest binary table under the default cap
    for V, H in ((2, 20), (2, 40), (1000, 3), (10**6, 1)):
        with pytest.raises(InstanceError, match=f"{MAX_TABLE_ENTRIES} .*MAX_TABLE_ENTRIES.*max_entries"):
            random_pair(V, H)
        with pytest.raises(InstanceError, match="max_entries"):
            logits_pair(V, H)
    with pytest.raises(InstanceError, match="cap of 10 "):
        random_pair(3, 2, max_entries=10)
    assert len(random_pair(3, 2, max_entries=39).target) == 13


@pytest.mark.parametrize("kwargs,msg", [
    (dict(temperature=1e-308), "MIN_TEMPERATURE"), (dict(temperature=MIN_TEMPERATURE / 2), "MIN_TEMPERATURE"),
    (dict(temperature=math.nan), "finite"), (dict(temperature=math.inf), "finite"), (dict(temperature=-1.0), ">= 0"),
    (dict(temperature="1"), "finite number"), (dict(logit_scale=1e308), "logit_scale"), (dict(noise=math.nan), "noise"),
    (dict(seed=-1), "seed"), (dict(seed=2**63), "MAX_SEED"), (dict(seed=1.5), "seed"), (dict(seed=True), "seed"),
])
def test_logits_pair_parameters(kwargs, msg):
    with pytest.raises(InstanceError, match=msg):
        logits_pair(3, 1, **kwargs)


def test_logits_pair_at_the_minimum_temperature_is_a_valid_law():
    pair = logits_pair(5, 1, seed=0, temperature=MIN_TEMPERATURE, temper_draft=True, exact=False)
    assert all(np.isfinite(pair.p(k)).all() and np.isfinite(pair.q(k)).all() for k in pair.target)


@pytest.mark.parametrize("kwargs,msg", [(dict(mismatch=math.nan), "mismatch"), (dict(mismatch="0.5"), "mismatch"),
                                        (dict(zero_prob=1.0), "zero_prob"), (dict(seed=-3), "seed")])
def test_random_pair_parameters(kwargs, msg):
    with pytest.raises(InstanceError, match=msg):
        random_pair(3, 1, **kwargs)


def test_writer_refuses_what_the_reader_could_not_read():
    # softmax probabilities made exact over a large vocabulary have denominators beyond 4300 digits
    pair = logits_pair(3000, 0, seed=0)
    with pytest.raises(InstanceError, match="MAX_INT_DIGITS"):
        pair.to_dict()



def test_shipped_example_pair_is_its_seeded_draw():
    from rheotheory.pairs import EXAMPLE_PAIR, example_pair, random_pair

    assert example_pair().to_dict() == random_pair(**EXAMPLE_PAIR, exact=True).to_dict()
    assert example_pair(exact=False).to_dict() == random_pair(**EXAMPLE_PAIR, exact=False).to_dict()
