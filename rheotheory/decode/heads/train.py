"""Train a :class:`~rheotheory.decode.heads.draft_head.DraftHead` for a Llama-family target by self-distillation.

Data (nothing is downloaded; docs/theory.md section 6.4):

1. **Text that ships with every Python**: the English reference topics of ``pydoc_data.topics``
   (sorted by topic) and the source of the standard library's top-level ``*.py`` files (sorted
   by name), cut to :attr:`HeadTrainConfig.text_chars` characters each; its SHA-256 goes into
   the manifest (another Python version gives other text and another hash).
2. **The target's own samples**: continuations at T = 1 of prompts cut from that text and of
   generic openings (:data:`OPENERS`: prose, dialogue, lists, code), so the head learns the text
   the target writes, not only the text it reads.

Every sequence is cut to :attr:`HeadTrainConfig.seq_len` tokens and run through the target once:
its hidden states at the head's feature layers are kept (float16) with the log-normaliser of its
full-vocabulary law, so the soft labels p(. | x_<=j) over the draft vocabulary are recomputed
from the final normed state at each step. The draft vocabulary is the ``draft_vocab`` most
frequent tokens of the training sequences (ties by smaller id).

Loss: for every unroll step k (:meth:`DraftHead.unrolled`) the soft cross-entropy
``-sum_{v in V_d} p(v) log q(v)``, weighted ``unroll_decay ** (k - 1)``. Validation: the
single-draft acceptance ``sum_v min(p(v), q(v))`` at T = 1 (step 1, full-vocabulary p; q is 0
outside V_d) on held-out target samples, with the full draft law and with the sparse top-k law.
"""

from __future__ import annotations

import hashlib
import math
import sysconfig
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F

from ...errors import InstanceError
from .draft_head import DraftHead, HeadConfig, target_features

#: Generic openings of the target's own samples (prose, dialogue, lists, code), so the head also learns
#: the text the target writes outside the Python reference; none is a prompt of the benchmarks.
OPENERS = (
    "The history of", "In the beginning", "My favourite", "Here is a short story about", "Dear friend,",
    "The most important thing", "Scientists have discovered", "Yesterday I went to", "A good recipe for",
    "The weather today", "Q: What is", "Question: How do", "Answer:", "Step 1:", "1.", "- ", "Title:",
    "Summary:", "Chapter 1\n\n", "She looked at", "He said that", "We", "It was a", "There are many",
    "How to", "Why do", "The best way to", "In conclusion,", "According to", "For example,", "However,",
    "The city of", "The company", "Students", "The president", "A man", "The cat", "Music is",
    "Learning a new language", "The ocean", "def ", "class ", "import ", "from ", "# ", "for ", "if ", "print(",
    "function ", "SELECT ", "<html>", "#include <", "public class", "let ", "const ", "$ ", "x = ",
    "Write a poem about", "Tell me about", "Hello! How", "Thank you for",
)

__all__ = ["HeadTrainConfig", "OPENERS", "sample_prompts", "build_text", "text_sequences", "sample_sequences", "extract", "draft_vocabulary",
           "train_head", "evaluate_head", "vocabulary_by_mass", "chat_messages", "conversation_windows", "sample_chat",
           "pad_rows", "SHAREGPT_ROLES", "target_rows", "extract_layers",
           "init_eagle3_from"]


@dataclass(frozen=True)
class HeadTrainConfig:
    """Data, optimisation and validation settings of one head's training (module docstring).

    Attributes
    ----------
    feature_layers : tuple of int, default (2, 15, 30)
        Hidden-state indices fused (SmolLM2-135M: 30 blocks; 30 = the final normed state).
    draft_vocab : int, default 8192
        V_d, the size of the draft vocabulary.
    seq_len : int, default 256
        Tokens per training sequence.
    text_chars : int, default 300_000
        Characters per text source (reference topics, standard-library code).
    samples : int, default 1024
        Target samples for training.
    val_samples : int, default 64
        Held-out target samples (validation acceptance).
    prompt_tokens : int, default 8
        Prompt length of a sample (cut from the text, or an opener left-padded).
    sample_tokens : int, default 120
        New tokens per sample.
    opener_share : float, default 0.5
        Share of the samples whose prompt is one of :data:`OPENERS` (the rest: cut from the text).
    steps : int, default 2500
        Optimiser steps.
    batch : int, default 8
        Sequences per step.
    lr : float, default 1e-3
        Peak learning rate.
    warmup : int, default 100
        Linear warm-up steps.
    unroll : int, default 3
        Training-time test: unroll steps, i.e. tree depths 0, 1, 2 below a root.
    unroll_decay : float, default 0.8
        Loss weight of unroll step k is ``unroll_decay ** (k - 1)``.
    seed : int, default 20261130
        Seed of the sampling and batch generators.
    sparse_k : int, default 128
        The k of the sparse draft evaluated at validation.
    """

    feature_layers: tuple = (2, 15, 30)  # hidden-state indices (SmolLM2-135M: 30 blocks; 30 = final normed)
    draft_vocab: int = 8192  # V_d
    seq_len: int = 256
    text_chars: int = 300_000  # per source (reference topics, standard-library code)
    samples: int = 1024  # target samples for training
    val_samples: int = 64  # held-out target samples (validation acceptance)
    prompt_tokens: int = 8  # prompt length of a sample (cut from the text, or an opener left-padded)
    sample_tokens: int = 120  # new tokens per sample
    opener_share: float = 0.5  # share of the samples whose prompt is one of OPENERS (the rest: cut from the text)
    steps: int = 2500
    batch: int = 8  # sequences per step
    lr: float = 1e-3
    warmup: int = 100
    unroll: int = 3  # training-time test: tree depth 0, 1, 2 below a root
    unroll_decay: float = 0.8
    seed: int = 20261130
    sparse_k: int = 128  # the sparse draft evaluated at validation

    def to_dict(self) -> dict:
        """The fields as a JSON-ready dict (``feature_layers`` as a list), for a manifest.

        Returns
        -------
        dict
            Field name -> value.
        """
        d = asdict(self)
        d["feature_layers"] = list(self.feature_layers)
        return d


def sample_prompts(tokenizer, text: torch.Tensor, n: int, cfg: "HeadTrainConfig", g: torch.Generator) -> torch.Tensor:
    """``n`` prompts of ``cfg.prompt_tokens`` tokens, # [n, P], in a random order.

    A share ``cfg.opener_share`` are :data:`OPENERS` (in turn), left-padded with the end-of-text
    token (a document boundary; token 0 when the tokenizer has none); the others are windows cut at
    random from the text sequences ``text``.

    Parameters
    ----------
    tokenizer : transformers.PreTrainedTokenizerBase
        The target's tokenizer (``encode``, ``eos_token_id``).
    text : torch.Tensor of shape (N, T)
        Text sequences (:func:`text_sequences`), T > P.
    n : int
        Prompts made.
    cfg : HeadTrainConfig
        ``prompt_tokens`` (P) and ``opener_share``.
    g : torch.Generator
        The generator of the cut positions and the order.

    Returns
    -------
    torch.Tensor of shape (n, P)
        Long token ids.
    """
    P = cfg.prompt_tokens
    pad = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else 0
    n_open = int(round(n * cfg.opener_share))
    rows = []
    for i in range(n_open):
        ids = tokenizer.encode(OPENERS[i % len(OPENERS)], add_special_tokens=False)[-P:]
        rows.append([pad] * (P - len(ids)) + ids)
    starts = torch.randint(0, text.shape[1] - P, (n - n_open,), generator=g)
    picks = torch.randint(0, text.shape[0], (n - n_open,), generator=g)
    rows += [text[r, s:s + P].tolist() for r, s in zip(picks.tolist(), starts.tolist())]
    order = torch.randperm(n, generator=g)  # training and held-out samples get both kinds
    return torch.tensor(rows, dtype=torch.long)[order]


def build_text(chars: int) -> tuple[str, str, str]:
    """(reference text, code text, SHA-256 of both): what every CPython ships.

    Parameters
    ----------
    chars : int
        Characters kept of each source.

    Returns
    -------
    reference : str
        The ``pydoc_data.topics`` topics, sorted by name, joined by blank lines.
    code : str
        The standard library's top-level ``*.py`` files, sorted by name, joined by blank lines.
    sha256 : str
        Hex digest of both texts (joined by a NUL).
    """
    import pydoc_data.topics as topics

    ref = "\n\n".join(topics.topics[k] for k in sorted(topics.topics))[:chars]
    root = Path(sysconfig.get_paths()["stdlib"])
    code, n = [], 0
    for f in sorted(root.glob("*.py")):
        t = f.read_text(encoding="utf-8", errors="replace")
        code.append(t)
        n += len(t)
        if n >= chars:
            break
    code = "\n\n".join(code)[:chars]
    digest = hashlib.sha256((ref + "\0" + code).encode()).hexdigest()
    return ref, code, digest


def text_sequences(tokenizer, texts, seq_len: int) -> torch.Tensor:
    """Cut each text's tokens into consecutive sequences of ``seq_len`` tokens, # [N, seq_len].

    A text's last tokens that do not fill a sequence are dropped.

    Parameters
    ----------
    tokenizer : transformers.PreTrainedTokenizerBase
        The target's tokenizer (no special tokens added).
    texts : iterable of str
        The texts, in order.
    seq_len : int
        Tokens per sequence.

    Returns
    -------
    torch.Tensor of shape (N, seq_len)
        Long token ids.
    """
    rows = []
    for text in texts:
        ids = tokenizer.encode(text, add_special_tokens=False)
        for s in range(0, len(ids) - seq_len + 1, seq_len):
            rows.append(ids[s:s + seq_len])
    return torch.tensor(rows, dtype=torch.long)


@torch.no_grad()
def sample_sequences(model, prompts: torch.Tensor, new_tokens: int, seed: int, batch: int = 32,
                     progress=None) -> torch.Tensor:
    """The target's T = 1 continuations of ``prompts`` (full vocabulary, no top-k/top-p).

    Batched, cached, seeded. Needs the ``hf`` extra.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        The target, a causal LM.
    prompts : torch.Tensor of shape (N, P)
        Long token ids, on the model's device.
    new_tokens : int
        Tokens sampled after each prompt.
    seed : int
        Seed of the one generator behind every draw.
    batch : int, default 32
        Prompts per batch.
    progress : object, optional
        A progress bar: its ``update(k)`` is called with the prompts of each batch done.

    Returns
    -------
    torch.Tensor of shape (N, P + new_tokens)
        The prompts followed by their continuations.
    """
    from transformers import DynamicCache  # noqa: F401  (the hf extra)

    g = torch.Generator().manual_seed(seed)
    out = []
    for s in range(0, prompts.shape[0], batch):
        ids = prompts[s:s + batch]
        res = model(input_ids=ids, use_cache=True)
        cache, logits = res.past_key_values, res.logits[:, -1]
        seq = [ids]
        for _ in range(new_tokens):
            probs = torch.softmax(logits.float(), dim=-1)
            nxt = torch.multinomial(probs, 1, generator=g)  # [b, 1]
            seq.append(nxt)
            res = model(input_ids=nxt, past_key_values=cache, use_cache=True)
            cache, logits = res.past_key_values, res.logits[:, -1]
        out.append(torch.cat(seq, dim=1))
        if progress is not None:
            progress.update(ids.shape[0])
    return torch.cat(out)


@torch.no_grad()
def extract(model, seqs: torch.Tensor, layers, batch: int = 8, progress=None, mask=None, mass=None):
    """Target features # [N, T, F d] (float16) and log-normalisers # [N, T] (float32) of ``seqs``.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        The target, a causal LM.
    seqs : torch.Tensor of shape (N, T)
        Long token ids.
    layers : sequence of int
        The F hidden-state indices kept (:func:`extract_layers`: the fused ones, then the final
        normed state).
    batch : int, default 8
        Sequences per pass.
    progress : object, optional
        A progress bar: its ``update(k)`` is called with the sequences of each batch done.
    mask : torch.Tensor of shape (N, T), bool, optional
        The positions whose law ``mass`` accumulates (None: all).
    mass : torch.Tensor of shape (V,), float64, optional
        When given, accumulates (in place) the target's next-token law summed over the positions
        ``mask`` marks: the mass the draft vocabulary is chosen from (:func:`vocabulary_by_mass`).

    Returns
    -------
    feats : torch.Tensor of shape (N, T, F d), float16
        The states at ``layers``, concatenated, on the CPU.
    lse : torch.Tensor of shape (N, T), float32
        The log-normaliser (logsumexp of the logits) at each position, on the CPU.

    Raises
    ------
    InstanceError
        If the hidden states at ``layers`` overflow float16.
    """
    feats, lse = [], []
    dev = next(model.parameters()).device
    for s in range(0, seqs.shape[0], batch):
        out = model(input_ids=seqs[s:s + batch].to(dev), output_hidden_states=True, use_cache=False)
        f = target_features(out.hidden_states, layers).half().cpu()
        if not torch.isfinite(f).all():  # NOTE: raw block outputs (EAGLE-3's features) reach 2e4 on SmolLM2
            raise InstanceError(f"the target's hidden states at layers {list(layers)} overflow float16")
        feats.append(f)
        logits = out.logits.float()  # [b, T, V]
        z = torch.logsumexp(logits, dim=-1)
        lse.append(z.cpu())
        if mass is not None:
            m = slice(None) if mask is None else mask[s:s + batch].to(dev)
            mass += torch.exp(logits - z[..., None])[m].sum(0).double().cpu()
        if progress is not None:
            progress.update(min(batch, seqs.shape[0] - s))
    return torch.cat(feats), torch.cat(lse)


def extract_layers(feature_layers, n_layers: int) -> tuple:
    """The hidden states to extract for a head fusing ``feature_layers``: those, then the final
    normed state ``n_layers`` (the soft labels' source) when not already last.

    Parameters
    ----------
    feature_layers : sequence of int
        The head's fused hidden-state indices.
    n_layers : int
        The target's blocks (the index of its final normed state).

    Returns
    -------
    tuple of int
        The indices to extract, in order.

    Examples
    --------
    >>> extract_layers((2, 15, 30), 30), extract_layers((2, 15, 27), 30)
    ((2, 15, 30), (2, 15, 27, 30))
    """
    layers = tuple(int(i) for i in feature_layers)
    return layers if layers[-1] == n_layers else layers + (n_layers,)


def vocabulary_by_mass(mass: torch.Tensor, size: int) -> tuple[torch.Tensor, float]:
    """The ``size`` token ids of largest target mass (ties by smaller id), sorted by id, and the
    share of the mass they hold.

    Parameters
    ----------
    mass : torch.Tensor of shape (V,)
        The target's summed next-token mass per token (:func:`extract`).
    size : int
        V_d, the ids kept.

    Returns
    -------
    ids : torch.Tensor of shape (size,)
        Long token ids, ascending.
    share : float
        Their share of the total mass.

    Examples
    --------
    >>> ids, share = vocabulary_by_mass(torch.tensor([1.0, 4.0, 2.0, 2.0, 1.0], dtype=torch.float64), 3)
    >>> ids.tolist(), share
    ([1, 2, 3], 0.8)
    """
    order = torch.argsort(-mass, stable=True)
    ids = torch.sort(order[:size]).values
    return ids, float(mass[ids].sum() / mass.sum())


# -- conversation data (ShareGPT) ------------------------------------------------------------------
#: ShareGPT speaker -> chat-template role (any other speaker, e.g. "gpt", "chatgpt", "bing": assistant).
SHAREGPT_ROLES = {"human": "user", "user": "user", "system": "system"}


def chat_messages(conv: dict, max_chars: int = 4000) -> list[dict]:
    """A ShareGPT conversation as chat-template messages, each turn cut to ``max_chars``
    characters (a window reads at most its first few thousand tokens anyway).

    Parameters
    ----------
    conv : dict
        A ShareGPT record: ``conversations``, a list of turns ``{"from": ..., "value": ...}``.
    max_chars : int, default 4000
        Characters kept of each turn.

    Returns
    -------
    list of dict
        ``{"role": ..., "content": ...}`` per turn, the role from :data:`SHAREGPT_ROLES` (any other
        speaker: ``"assistant"``).

    Examples
    --------
    >>> chat_messages({"conversations": [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello"}]})
    [{'role': 'user', 'content': 'Hi'}, {'role': 'assistant', 'content': 'Hello'}]
    """
    return [{"role": SHAREGPT_ROLES.get(t.get("from"), "assistant"), "content": str(t.get("value") or "")[:max_chars]}
            for t in conv.get("conversations") or []]


def conversation_windows(tokenizer, convs, seq_len: int, n: int, per_conv: int = 2):
    """Up to ``n`` windows of ``seq_len`` tokens, # [n, seq_len], cut from the start of each
    conversation of ``convs`` (in order) rendered under the chat template, at most ``per_conv``
    consecutive windows a conversation; returns (windows, ids of the conversations used).

    Parameters
    ----------
    tokenizer : transformers.PreTrainedTokenizerBase
        The target's tokenizer, with a chat template.
    convs : iterable of dict
        ShareGPT records (with ``id`` and ``conversations``).
    seq_len : int
        Tokens per window.
    n : int
        The most windows made.
    per_conv : int, default 2
        The most consecutive windows cut from one conversation.

    Returns
    -------
    windows : torch.Tensor of shape (n', seq_len)
        Long token ids, n' <= n.
    used : list of str
        The ids of the conversations windows were cut from, in order.
    """
    rows, used = [], []
    for conv in convs:
        if len(rows) >= n:
            break
        messages = chat_messages(conv)
        if not messages:
            continue
        text = tokenizer.apply_chat_template(messages, tokenize=False)
        ids = tokenizer.encode(text, add_special_tokens=False)
        got = [ids[s:s + seq_len] for s in range(0, len(ids) - seq_len + 1, seq_len)][:per_conv]
        if got:
            rows += got[:n - len(rows)]
            used.append(str(conv["id"]))
    return torch.tensor(rows, dtype=torch.long), used


@torch.no_grad()
def sample_chat(model, prompts, new_tokens: int, seed: int, stop_ids, pad_id: int, batch: int = 16, start: int = 0):
    """The target's T = 1 answers (full vocabulary) to ``prompts``, batched with left padding.

    Yields, batch by batch from batch ``start``, the rows ``prompt + answer``, the answer ending at
    its first token of ``stop_ids`` (kept) or after ``new_tokens``. Batch ``b`` draws from a
    generator seeded ``seed + b``, so a run resumed at any batch gives the rows an uninterrupted run
    gives (draws on the CPU, whatever the model's device).

    Parameters
    ----------
    model : transformers.PreTrainedModel
        The target, a causal LM.
    prompts : sequence of sequence of int
        Token-id prompts of different lengths.
    new_tokens : int
        The most tokens of an answer.
    seed : int
        Batch ``b``'s generator is seeded ``seed + b``.
    stop_ids : iterable of int
        Tokens that end an answer (kept in it).
    pad_id : int
        The left-padding token (masked out of attention).
    batch : int, default 16
        Prompts per batch.
    start : int, default 0
        The first batch generated (to resume a run).

    Yields
    ------
    list of list of int
        One batch's rows ``prompt + answer``, in the prompts' order.
    """
    dev = next(model.parameters()).device
    for b in range(start, (len(prompts) + batch - 1) // batch):
        chunk = prompts[b * batch:(b + 1) * batch]
        g = torch.Generator().manual_seed(seed + b)
        L = max(len(p) for p in chunk)
        ids = torch.tensor([[pad_id] * (L - len(p)) + list(p) for p in chunk])  # [b, L]
        att = torch.tensor([[0] * (L - len(p)) + [1] * len(p) for p in chunk])  # [b, L]
        pos = (att.cumsum(1) - 1).clamp(min=0)
        ids, att, pos = ids.to(dev), att.to(dev), pos.to(dev)
        res = model(input_ids=ids, attention_mask=att, position_ids=pos, use_cache=True)
        cache, logits = res.past_key_values, res.logits[:, -1]
        answers = [[] for _ in chunk]
        done = torch.zeros(len(chunk), dtype=torch.bool)
        stop = torch.tensor(sorted(stop_ids))
        for _ in range(new_tokens):
            nxt = torch.multinomial(torch.softmax(logits.float(), dim=-1).cpu(), 1, generator=g)  # [b, 1]
            for i in range(len(chunk)):
                if not done[i]:
                    answers[i].append(int(nxt[i]))
            done |= torch.isin(nxt[:, 0], stop)
            if bool(done.all()):
                break
            att = torch.cat([att, torch.ones(len(chunk), 1, dtype=att.dtype, device=dev)], dim=1)
            pos = pos[:, -1:] + 1
            res = model(input_ids=nxt.to(dev), attention_mask=att, position_ids=pos, past_key_values=cache, use_cache=True)
            cache, logits = res.past_key_values, res.logits[:, -1]
        yield [list(p) + a for p, a in zip(chunk, answers)]


def pad_rows(rows, seq_len: int, pad_id: int):
    """Right-pad token rows to ``seq_len``: # [N, seq_len] ids and # [N, seq_len] bool (real token).

    Parameters
    ----------
    rows : sequence of sequence of int
        N token rows; longer ones are cut to ``seq_len``.
    seq_len : int
        The padded length.
    pad_id : int
        The padding token.

    Returns
    -------
    ids : torch.Tensor of shape (N, seq_len)
        Long token ids.
    mask : torch.Tensor of shape (N, seq_len), bool
        True at real tokens.

    Examples
    --------
    >>> ids, mask = pad_rows([[5, 6, 7], [8]], 2, 0)
    >>> ids.tolist(), mask.tolist()
    ([[5, 6], [8, 0]], [[True, True], [True, False]])
    """
    ids = torch.full((len(rows), seq_len), pad_id, dtype=torch.long)
    mask = torch.zeros(len(rows), seq_len, dtype=torch.bool)
    for i, r in enumerate(rows):
        r = r[:seq_len]
        ids[i, :len(r)] = torch.tensor(r)
        mask[i, :len(r)] = True
    return ids, mask


def draft_vocabulary(seqs: torch.Tensor, vocab_size: int, size: int) -> torch.Tensor:
    """The ``size`` most frequent token ids of ``seqs`` (ties by smaller id), sorted by id.

    Parameters
    ----------
    seqs : torch.Tensor
        Long token ids, any shape (# [N, T]).
    vocab_size : int
        V, the target's vocabulary.
    size : int
        V_d, the ids kept.

    Returns
    -------
    torch.Tensor of shape (size,)
        Long token ids, ascending.

    Examples
    --------
    >>> draft_vocabulary(torch.tensor([[3, 3, 1, 2], [2, 0, 3, 1]]), 5, 2).tolist()
    [1, 3]
    """
    counts = torch.bincount(seqs.flatten(), minlength=vocab_size).double()
    order = torch.argsort(-counts, stable=True)  # stable: ties by smaller id
    return torch.sort(order[:size]).values


def _soft_labels(head: DraftHead, feats, lse, rows):
    """p(v | x_<=j) for v in V_d from the final normed state, # [B, T, V_d]; ``rows``: the target's
    (:func:`target_rows`)."""
    d = head.cfg.hidden
    final = feats[..., -d:].float()  # NOTE: the last feature block is the final normed state (extract_layers)
    return torch.exp(final @ rows.T - lse[..., None])


def target_rows(head: DraftHead) -> torch.Tensor:
    """The target's output rows of the head's draft vocabulary, # [V_d, d] (tied: its embedding
    rows): what the soft labels are computed with, whatever rows the head drafts with.

    Parameters
    ----------
    head : DraftHead
        A head bound to the target's embedding (``embed``, ``vocab_ids``).

    Returns
    -------
    torch.Tensor of shape (V_d, d)
        The rows, detached.
    """
    return head.embed.weight.detach()[head.vocab_ids]


def evaluate_head(head: DraftHead, E, seqs, feats, lse, sparse_k: int, batch: int = 8, steps: int = 3,
                  mask=None, temperatures=(1.0,)) -> dict:
    """Single-draft acceptance sum_v min(p, q) over positions 1.. of ``seqs``: step 1 of the unroll
    (true target features) and the tree depths below it; full and sparse top-k draft laws. At
    T = 1 the keys are ``accept_step{k}`` (and ``..._top{sparse_k}``); at another temperature T
    in ``temperatures`` both laws are tempered (p^(1/T), softmax(logits / T)) and the keys end in
    ``_T{T}``. ``vocab_mass``: the target's T = 1 mass on the draft vocabulary. The head is left in
    training mode.

    Parameters
    ----------
    head : DraftHead
        The head evaluated (its own rows).
    E : torch.Tensor of shape (V, d)
        The target's output head (tied: its embedding), applied to the final normed state.
    seqs : torch.Tensor of shape (N, T)
        Long token ids of held-out sequences.
    feats : torch.Tensor of shape (N, T, F' d)
        Their target features (:func:`extract`; the last block is the final normed state).
    lse : torch.Tensor of shape (N, T)
        Their log-normalisers (unused: p is recomputed from ``E``).
    sparse_k : int
        The k of the sparse top-k draft law.
    batch : int, default 8
        Sequences per pass.
    steps : int, default 3
        Unroll steps evaluated (tree depths 0..steps-1).
    mask : torch.Tensor of shape (N, T), bool, optional
        The positions counted (None: all).
    temperatures : sequence of float, default (1.0,)
        The temperatures evaluated.

    Returns
    -------
    dict
        ``accept_step{k}``, ``accept_step{k}_top{sparse_k}`` (with ``_T{T}`` at T != 1): mean
        acceptance per position, rounded to 4 digits; ``vocab_mass`` (when 1.0 is among the
        temperatures); ``positions``: the positions counted.
    """
    d = head.cfg.hidden
    rows = head.head_rows()
    tot = {}
    count = 0
    head.eval()
    with torch.no_grad():
        dev = head.fuse.weight.device
        E = E.to(dev)
        for s in range(0, seqs.shape[0], batch):
            tk, ft, ls = seqs[s:s + batch].to(dev), feats[s:s + batch].to(dev).float(), lse[s:s + batch].to(dev)
            m = (torch.ones_like(tk, dtype=torch.bool) if mask is None else mask[s:s + batch].to(dev))[:, 1:]
            m = m[..., None].float()  # [B, T-1, 1]
            outs = head.unrolled(tk, ft, steps, rows)
            target_logits = (ft[..., -d:] @ E.T)[:, 1:]  # [B, T-1, V] positions 1..
            for temp in temperatures:
                tag = "" if temp == 1.0 else f"_T{temp:g}"
                p_d = torch.softmax(target_logits / temp, dim=-1)[..., head.vocab_ids] * m  # [B, T-1, V_d]
                for k, lg in enumerate(outs, start=1):
                    lg = lg[:, 1:].float() / temp
                    q = torch.softmax(lg, dim=-1)
                    kth = lg.topk(sparse_k, dim=-1).values[..., -1:]
                    qs = torch.softmax(lg.masked_fill(lg < kth, float("-inf")), dim=-1)
                    for key, law in ((f"accept_step{k}{tag}", q), (f"accept_step{k}_top{sparse_k}{tag}", qs)):
                        tot[key] = tot.get(key, 0.0) + float(torch.minimum(p_d, law).sum())
                if temp == 1.0:
                    tot["vocab_mass"] = tot.get("vocab_mass", 0.0) + float(p_d.sum())
            count += int(m.sum())
    head.train()
    return {k: round(v / count, 4) for k, v in tot.items()} | {"positions": count}


def train_head(head: DraftHead, seqs, feats, lse, cfg: HeadTrainConfig, val=None, progress=None, log=None,
               mask=None, resume: dict | None = None, checkpoint=None, checkpoint_every_s: float = 300.0,
               deadline: float | None = None):
    """AdamW with linear warm-up and cosine decay over ``cfg.steps`` steps of ``cfg.batch`` sequences
    drawn with a seeded generator; returns the loss history (one mean per 50 steps).

    ``mask`` # [N, T] bool: the positions whose next-token law is trained (default: all), e.g. not
    the right padding of a sample that stopped early. ``checkpoint(state)`` is called with the
    whole training state (head and optimiser state dicts, generator state, step, history) every
    ``checkpoint_every_s`` seconds and at the end; passing such a state as ``resume`` continues
    the run where it stopped, drawing the same batches it would have drawn. ``deadline`` (a
    ``time.time()`` value): stop there, checkpointed, the cosine schedule unfinished (the history
    then holds fewer than ``cfg.steps // 50`` means). Batches go to the head's device.

    Parameters
    ----------
    head : DraftHead
        The head trained in place (its parameters that require a gradient), e.g. an
        :class:`~rheotheory.decode.heads.eagle3.Eagle3Head`.
    seqs : torch.Tensor of shape (N, T)
        Long token ids of the training sequences.
    feats : torch.Tensor of shape (N, T, F' d)
        Their target features (:func:`extract`: the fused layers, then the final normed state the
        soft labels are computed from).
    lse : torch.Tensor of shape (N, T)
        Their log-normalisers (:func:`extract`).
    cfg : HeadTrainConfig
        ``steps``, ``batch``, ``lr``, ``warmup``, ``unroll``, ``unroll_decay``, ``seed``.
    val : object, optional
        Unused (validation is :func:`evaluate_head`'s).
    progress : object, optional
        A progress bar: its ``update(k)`` is called per step (and with the resumed step).
    log : callable, optional
        Called with a line (str) every 50 steps and at the time cap.
    mask : torch.Tensor of shape (N, T), bool, optional
        The positions whose next-token law is trained (default: all), e.g. not the right padding
        of a sample that stopped early.
    resume : dict, optional
        A state passed to ``checkpoint`` earlier: continue from it.
    checkpoint : callable, optional
        Called with the whole training state (dict) every ``checkpoint_every_s`` seconds, at the
        end and at the time cap.
    checkpoint_every_s : float, default 300.0
        Seconds between checkpoints.
    deadline : float, optional
        A ``time.time()`` value: stop there, checkpointed.

    Returns
    -------
    list of float
        The loss history: the mean loss of every 50 steps, rounded to 4 digits.
    """
    g = torch.Generator().manual_seed(cfg.seed)
    params = [p for p in head.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.lr, betas=(0.9, 0.95), weight_decay=0.0)
    rows, labels = head.head_rows(), target_rows(head)
    weights = [cfg.unroll_decay ** k for k in range(cfg.unroll)]
    hist, run, start = [], [], 0
    if resume is not None:
        head.load_state_dict(resume["head"])
        opt.load_state_dict(resume["opt"])
        g.set_state(resume["gen"])
        hist, run, start = list(resume["hist"]), list(resume["run"]), int(resume["step"])
        if progress is not None:
            progress.update(start)

    def state(step):
        return {"head": head.state_dict(), "opt": opt.state_dict(), "gen": g.get_state(), "step": step,
                "hist": list(hist), "run": list(run)}

    last = time.time()
    head.train()
    dev = head.fuse.weight.device
    for step in range(start, cfg.steps):
        if deadline is not None and time.time() >= deadline:
            if log is not None:
                log(f"time cap reached at step {step} of {cfg.steps}")
            if checkpoint is not None:
                checkpoint(state(step))
            break
        lr = cfg.lr * min(1.0, (step + 1) / cfg.warmup) * 0.5 * (1 + math.cos(math.pi * step / cfg.steps))
        for group in opt.param_groups:
            group["lr"] = lr
        idx = torch.randint(0, seqs.shape[0], (cfg.batch,), generator=g)
        tk, ft, ls = seqs[idx].to(dev), feats[idx].to(dev).float(), lse[idx].to(dev)
        p = _soft_labels(head, ft, ls, labels)[:, 1:]  # [B, T-1, V_d]
        outs = head.unrolled(tk, ft, cfg.unroll, rows)
        loss = 0.0
        for w, lg, k in zip(weights, outs, range(cfg.unroll)):
            logq = F.log_softmax(lg[:, 1 + k:].float(), dim=-1)
            ce = -(p[:, k:] * logq).sum(-1)  # [B, T-1-k]
            if mask is None:
                loss = loss + w * ce.mean()
            else:
                m = mask[idx][:, 1 + k:].to(dev).float()
                loss = loss + w * (ce * m).sum() / m.sum().clamp(min=1.0)
        loss = loss / sum(weights)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        run.append(float(loss.detach()))
        if (step + 1) % 50 == 0:
            hist.append(round(sum(run) / len(run), 4))
            run = []
            if log is not None:
                log(f"step {step + 1}: loss {hist[-1]}")
        if progress is not None:
            progress.update(1)
        if checkpoint is not None and (time.time() - last >= checkpoint_every_s or step + 1 == cfg.steps):
            checkpoint(state(step + 1))
            last = time.time()
    return hist


def init_from_target(head: DraftHead, block, final_norm) -> None:
    """Start the head's decoder layer from the target's last block (a Hugging Face
    ``LlamaDecoderLayer``) and its norm from the target's final norm (the head's output lives in
    the target's last-layer space)."""
    src = {k.replace("self_attn.", "").replace("mlp.", ""): v for k, v in block.state_dict().items()}
    with torch.no_grad():
        for name, p in head.layer.named_parameters():
            p.copy_(src[name])
        head.norm.weight.copy_(final_norm)


@torch.no_grad()
def init_eagle3_from(head, src: DraftHead, tokens, feats, ext) -> None:
    """Start an EAGLE-3 head (:class:`~rheotheory.decode.heads.eagle3.Eagle3Head`) from a trained
    rheotheory head ``src`` where the two architectures share a tensor's role and shape: the MLP,
    ``o_proj``, the post-attention norm, the final norm, the embedding and hidden norms (``src``'s
    ``norm_e`` and ``norm_g``); ``lm_head`` from the target's rows of the draft vocabulary (``src``
    drafts through them). Two tensors have no counterpart of their shape and are composed, to first
    order, from ``src``'s (an approximation the training then corrects):

    - q/k/v read [normed embedding, normed state] (2 d) directly, where ``src`` projects that pair
      to d (``inp``) and normalises it: W' = W diag(w) W_inp / r, r the mean RMS of ``inp``'s output;
    - ``fc`` fuses raw block outputs, where ``src`` normalises each fused layer first: block i of
      ``fc`` is ``src.fuse``'s block i times its norm weight over the mean RMS of the head's layer i.

    Parameters
    ----------
    head : Eagle3Head
        The EAGLE-3 head initialised in place (same width and draft vocabulary as ``src``).
    src : DraftHead
        A trained rheotheory head.
    tokens : torch.Tensor of shape (B, T)
        A few training sequences, for the mean RMS values.
    feats : torch.Tensor of shape (B, T, len(ext) d)
        Their target states at the hidden-state indices ``ext``.
    ext : sequence of int
        The hidden-state indices of ``feats``' blocks, in order; they must hold both heads' fused
        layers.
    """
    d = head.cfg.hidden
    lay, blk = head.midlayer, src.layer
    lay.self_attn.o_proj.weight.copy_(blk.o_proj.weight)
    for name in ("gate_proj", "up_proj", "down_proj"):
        getattr(lay.mlp, name).weight.copy_(getattr(blk, name).weight)
    lay.post_attention_layernorm.weight.copy_(blk.post_attention_layernorm.weight)
    lay.input_layernorm.weight.copy_(src.norm_e.weight)
    lay.hidden_norm.weight.copy_(src.norm_g.weight)
    head.norm.weight.copy_(src.norm.weight)
    head.lm_head.weight.copy_(src.embed.weight[head.vocab_ids])
    ext = list(ext)
    block = lambda i: feats[..., ext.index(i) * d:(ext.index(i) + 1) * d].float()  # noqa: E731
    rms = lambda x: float(x.pow(2).mean(-1).sqrt().mean())  # noqa: E731
    g = src.fuse_features(torch.cat([block(i) for i in src.cfg.feature_layers], dim=-1))
    g = torch.cat([torch.zeros_like(g[:, :1]), g[:, :-1]], dim=1)
    r = rms(src._input(tokens, g))
    for name in ("q_proj", "k_proj", "v_proj"):
        w = getattr(blk, name).weight * blk.input_layernorm.weight[None, :]
        getattr(lay.self_attn, name).weight.copy_(w @ src.inp.weight / r)
    for i, layer in enumerate(head.cfg.feature_layers):
        cols = slice(i * d, (i + 1) * d)
        head.fc.weight[:, cols] = src.fuse.weight[:, cols] * src.feat_norms[i].weight[None, :] / rms(block(layer))


def check_llama_like(config) -> None:
    """A one-line error for a target the head cannot read (tied Llama-style decoders only)."""
    if getattr(config, "model_type", None) != "llama":
        raise InstanceError(f"draft heads are built for Llama-family targets, not {config.model_type!r}")
    if not getattr(config, "tie_word_embeddings", False):
        raise InstanceError("the draft head reads the target's tied output rows; this target's head is untied")
