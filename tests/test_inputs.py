"""Hostile input: every malformed instance or generator argument is one InstanceError, never a
traceback, a hang or a silently different pair.

The property: a mutation of a valid instance (as a dict, or as file bytes) either loads to the
same laws as the canonical instance or raises :class:`InstanceError`, within
:data:`SECONDS_PER_EXAMPLE`. Then the concrete cases a fuzzing user reported, through the CLI:
exit code 2 and one line on stderr.
"""

import copy
import json
import math
import os
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rheotheory import InstanceError, ToyPair, logits_pair, random_pair
from rheotheory.cli import main
from rheotheory.testing import hang_guard

#: Hang detector on one load (testing.hang_guard, not a speed target): a valid load of the base
#: instance takes about a millisecond; a hang (a billion-digit Fraction, /dev/zero) never ends.
SECONDS_PER_EXAMPLE = 30.0

BASE = random_pair(3, 2, seed=1)
BASE_DICT = BASE.to_dict()
BASE_TEXT = json.dumps(BASE_DICT)
KEYS = sorted(BASE_DICT["target"])

#: Digit characters that int() reads as ASCII digits: Arabic-Indic, fullwidth, Devanagari.
UNICODE_ZEROS = ("\u0660", "\uff10", "\u0966")


def _same_laws(pair: ToyPair, exact: bool) -> bool:
    ref = BASE if exact else BASE.to_float()
    if pair.vocab_size != ref.vocab_size or pair.horizon != ref.horizon or set(pair.target) != set(ref.target):
        return False
    if exact:
        return all(list(pair.p(k)) == list(ref.p(k)) and list(pair.q(k)) == list(ref.q(k)) for k in ref.target)
    # NOTE: float mode reads a law to within laws.FLOAT_SUM_TOL, so a mutated digit can survive
    # there; the laws must still be that close to the canonical ones.
    return all(np.allclose(pair.p(k), ref.p(k), atol=1e-8) and np.allclose(pair.q(k), ref.q(k), atol=1e-8)
               for k in ref.target)


def _alias(key: str, how: str) -> str:
    """A spelling of ``key`` that int() reads as the same token ids."""
    ids = key.split(" ") if key else ["0"]
    if how == "zero":
        ids[0] = "0" + ids[0]
    elif how == "sign":
        ids[0] = "+" + ids[0]
    elif how == "underscore":
        ids[0] = ids[0][0] + "_" + ids[0][1:] if len(ids[0]) > 1 else "0_" + ids[0]
    elif how.startswith("unicode"):
        zero = UNICODE_ZEROS[int(how[-1])]
        ids[0] = "".join(chr(ord(zero) + int(c)) for c in ids[0])
    elif how == "spaces":
        return "  ".join(ids) if len(ids) > 1 else " " + ids[0]
    return " ".join(ids)


#: Table entries that are not probabilities, or are one in a spelling outside the grammar.
HOSTILE_VALUES = st.one_of(
    st.sampled_from(["1e-999999999", "1e999999999", "1e400", "-1e400", "nan", "NaN", "inf", "-inf", "Infinity",
                     "1/0", "0/0", "1" * 5000, "0." + "0" * 5000 + "1", "1/" + "9" * 4400, "\u0661/\u0662",
                     "1_0/2_0", "0x1", "1 / 2", "", " ", "--1", "1e", "e1", ".", "1/2/3", "\x00"]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**6), max_value=10**6),
    st.just(10**5000),
    st.booleans(), st.none(), st.text(max_size=20),
    st.lists(st.integers(0, 1), max_size=3), st.dictionaries(st.text(max_size=3), st.integers(0, 1), max_size=2),
)

#: Top-level field values of the wrong type or size.
HOSTILE_FIELDS = st.one_of(
    st.integers(min_value=-5, max_value=10**30), st.just(10**5000), st.floats(allow_nan=True),
    st.booleans(), st.none(), st.text(max_size=5), st.lists(st.integers(), max_size=3),
)


@st.composite
def mutated_dicts(draw):
    """The base instance with one or two hostile edits."""
    d = copy.deepcopy(BASE_DICT)
    for _ in range(draw(st.integers(1, 2))):
        kind = draw(st.sampled_from(["alias-add", "alias-rename", "value", "field", "drop", "nest", "table"]))
        table = draw(st.sampled_from(["target", "draft"]))
        key = draw(st.sampled_from(KEYS))
        if not isinstance(d.get(table), dict) or key not in d[table]:
            continue
        if kind.startswith("alias"):
            how = draw(st.sampled_from(["zero", "sign", "underscore", "spaces", "unicode0", "unicode1", "unicode2"]))
            row = d[table][key] if kind == "alias-add" else d[table].pop(key)
            # an aliasing row that would change the law if it were read as the same prefix
            d[table][_alias(key, how)] = list(reversed(row)) if kind == "alias-add" else row
        elif kind == "value":
            row = d[table][key]
            row[draw(st.integers(0, len(row) - 1))] = draw(HOSTILE_VALUES)
        elif kind == "field":
            d[draw(st.sampled_from(["vocab_size", "horizon"]))] = draw(HOSTILE_FIELDS)
        elif kind == "drop":
            d[table].pop(key)
        elif kind == "nest":
            d[table][key] = [d[table][key]] * draw(st.integers(1, 3))
        else:
            d[table] = draw(st.one_of(st.none(), st.lists(st.integers(), max_size=3), st.text(max_size=3)))
    return d


@st.composite
def mutated_bytes(draw):
    """The base instance's file bytes with a hostile edit."""
    data = BASE_TEXT.encode()
    kind = draw(st.sampled_from(["byte", "insert", "truncate", "nest", "bom", "huge-number"]))
    i = draw(st.integers(0, len(data) - 1))
    if kind == "byte":
        return data[:i] + bytes([draw(st.integers(0, 255))]) + data[i + 1:]
    if kind == "insert":
        return data[:i] + draw(st.binary(min_size=1, max_size=8)) + data[i:]
    if kind == "truncate":
        return data[:i]
    if kind == "nest":
        n = draw(st.sampled_from([40, 1000, 100_000]))
        return data[:i] + b"[" * n + b"0" + b"]" * n + data[i:]
    if kind == "bom":
        return b"\xef\xbb\xbf" + data
    return data.replace(b'"horizon": 2', b'"horizon": ' + draw(st.sampled_from([b"1" * 5000, b"1e999999999",
                                                                                  b"NaN", b"-Infinity", b"2.0"])))


def _check(load, exact: bool):
    try:
        with hang_guard(SECONDS_PER_EXAMPLE, "loading a mutated instance"):
            pair = load()
    except InstanceError as e:
        assert "\n" not in str(e)
    else:
        assert _same_laws(pair, exact), "a mutated instance loaded to different laws"


@given(mutated_dicts(), st.booleans())
def test_mutated_instance_dicts_load_the_same_or_raise(d, exact):
    _check(lambda: ToyPair.from_dict(d, exact=exact), exact)


@given(mutated_bytes(), st.booleans())
def test_mutated_instance_files_load_the_same_or_raise(data, exact):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "instance.json"
        path.write_bytes(data)
        _check(lambda: ToyPair.load(path, exact=exact), exact)


@given(st.data())
def test_generator_arguments_give_a_pair_or_raise(data):
    """Any argument values: a valid pair (under a small max_entries) or InstanceError, quickly."""
    gen = data.draw(st.sampled_from([random_pair, logits_pair]))
    V, H = data.draw(HOSTILE_FIELDS), data.draw(HOSTILE_FIELDS)
    kwargs = {"seed": data.draw(st.one_of(st.integers(-2, 2**64), st.floats(), st.none()))}
    reals = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-3, 3), st.text(max_size=2))
    names = ["mismatch", "zero_prob"] if gen is random_pair else ["temperature", "noise", "logit_scale", "draft_scale"]
    for name in data.draw(st.lists(st.sampled_from(names), unique=True)):
        kwargs[name] = data.draw(reals)
    try:
        with hang_guard(SECONDS_PER_EXAMPLE, "generating a pair"):
            pair = gen(V, H, max_entries=200, **kwargs)
    except InstanceError:
        pass
    else:
        assert all(np.isfinite(np.asarray(pair.to_float().p(k))).all() for k in pair.target)


# -- the reported cases, through the CLI ---------------------------------------------------------

def _with_key(key):
    d = random_pair(3, 2, seed=0).to_dict()
    d["target"][key] = ["1", "0", "0"]
    return json.dumps(d)


def _with_entry(value):
    d = random_pair(3, 2, seed=0).to_dict()
    d["target"]["0"][0] = value
    return json.dumps(d)


def _with(field, value):
    d = random_pair(3, 2, seed=0).to_dict()
    d[field] = value
    return json.dumps(d)


FILE_CASES = [
    ("key-leading-zero", _with_key("01"), [], "not canonical"),
    ("key-sign", _with_key("+1"), [], "not canonical"),
    ("key-underscore", _with_key("0_2"), [], "not canonical"),
    ("key-unicode-digit", _with_key("\u0661"), [], "not canonical"),
    ("not-utf8", b'{"vocab_size": 3, "horizon": 2, "target": {"": ["\xff"]}}', [], "not UTF-8"),
    ("deep-nesting", "[" * 100_000 + "]" * 100_000, [], "MAX_JSON_DEPTH"),
    ("int-over-4300-digits", _with("vocab_size", 0).replace('"vocab_size": 0', '"vocab_size": ' + "7" * 4301),
     [], "4300"),
    ("1e400-float", _with_entry("1e400"), ["--float"], "greater than 1"),
    ("1e400-json-number", _with_entry(0).replace('"target": {"": [', '"target": {"": [1e400, '), ["--float"],
     "entries|not finite"),
    ("huge-exponent", _with_entry("1e-999999999"), [], "exponent"),
    ("horizon-10^6", _with("horizon", 10**6), [], "MAX_TABLE_ENTRIES"),
    ("duplicate-key", _with_entry("1/2")[:-1] + ', "horizon": 2}', [], "twice"),
    ("nan-literal", _with_entry(0).replace('"target": {"": [', '"target": {"": [NaN, '), [], "NaN"),
]


def _one_line_exit_2(argv, capsys, msg):
    import re

    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "Traceback" not in err and err.count("\n") == 1 and err.startswith("rheo"), err
    assert re.search(msg, err), err


@pytest.mark.parametrize("name,content,flags,msg", FILE_CASES, ids=[c[0] for c in FILE_CASES])
def test_reported_instance_files(name, content, flags, msg, tmp_path, capsys):
    path = tmp_path / f"{name}.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    _one_line_exit_2(["certify", str(path), *flags], capsys, msg)


def test_special_files_are_refused_without_reading(tmp_path, capsys):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # NOTE: opening it for reading would block until a writer came
    paths = [fifo, tmp_path]
    if os.path.exists("/dev/zero"):
        paths.append(Path("/dev/zero"))
    for path in paths:
        _one_line_exit_2(["certify", str(path)], capsys, "not a regular file")


def test_oversized_file_is_refused_before_reading(tmp_path, capsys):
    from rheotheory.pairs import MAX_INSTANCE_BYTES

    path = tmp_path / "big.json"
    with open(path, "wb") as f:
        f.truncate(MAX_INSTANCE_BYTES + 1)  # sparse: no disk or time spent
    _one_line_exit_2(["certify", str(path)], capsys, "MAX_INSTANCE_BYTES")


@pytest.mark.parametrize("argv,msg", [
    (["instance", "--kind", "logits", "--temperature", "1e-308"], "MIN_TEMPERATURE"),
    (["instance", "--vocab", "1000", "--horizon", "3"], "MAX_TABLE_ENTRIES.*max_entries"),
    (["instance", "--vocab", "2", "--horizon", "40"], "MAX_TABLE_ENTRIES.*max_entries"),
    (["instance", "--mismatch", "nan"], "mismatch|not finite|number"),
])
def test_reported_generator_arguments(argv, msg, capsys):
    _one_line_exit_2(argv, capsys, msg)


def test_alias_key_no_longer_changes_the_certificate(tmp_path, capsys):
    """The report: adding "01" to a horizon-2 instance changed tokens per step with exit 0."""
    path = tmp_path / "i.json"
    path.write_text(_with_key("01"))
    _one_line_exit_2(["certify", str(path), "--depth", "2"], capsys, "'01' is not canonical")


def test_float_json_certificate(tmp_path, capsys):
    path = tmp_path / "i.json"
    random_pair(3, 2, seed=1).save(path)
    assert main(["certify", str(path), "--float", "--json", "--depth", "2"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["lossless"] is True and out["exact"] is False and isinstance(out["outcomes"], int)
    assert math.isfinite(out["tokens_per_step_float"])
