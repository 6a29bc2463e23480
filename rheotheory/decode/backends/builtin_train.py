"""Train the built-in character-level model pair on CPython's standard-library source.

The corpus ships with every Python installation, so the pair can be rebuilt offline. Text is
read from the ``*.py`` files directly inside the standard-library folder (sorted by name), every
non-ASCII character replaced by ``?``, and cut to :attr:`TrainConfig.corpus_chars` characters;
its SHA-256 goes into the manifest (a different Python version gives a different corpus and a
different hash). Tokens are ASCII code points (vocabulary 128).

Training is deterministic on one CPU thread: fixed seed, ``torch.set_num_threads(1)``.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
import sysconfig
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from ...errors import InstanceError
from .tree_lm import ModelConfig, TinyLM

__all__ = ["TrainConfig", "TARGET_CONFIG", "DRAFT_CONFIG", "build_corpus", "encode", "decode_text",
           "train_model", "train_pair", "REPLACEMENT"]

#: Character that stands for any non-ASCII character of the corpus or a prompt.
REPLACEMENT = "?"

#: The built-in target (~1M parameters, 6 layers) and draft (~0.15M parameters, 1 layer: at batch
#: size 1 on a CPU the cost of a pass grows with the number of layers far more than with width).
TARGET_CONFIG = ModelConfig(vocab_size=128, n_layer=6, n_head=4, d_model=112, max_len=256)
DRAFT_CONFIG = ModelConfig(vocab_size=128, n_layer=1, n_head=4, d_model=96, max_len=256)


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation settings of one model.

    Attributes
    ----------
    steps : int, default 1200
        Optimiser steps.
    batch : int, default 8
        Sequences per step.
    seq_len : int, default 256
        Tokens per sequence (= the model's ``max_len``).
    lr : float, default 3e-3
        Peak AdamW learning rate.
    warmup : int, default 50
        Linear warm-up steps.
    min_lr_ratio : float, default 0.1
        Cosine decay floor, as a fraction of ``lr``.
    weight_decay : float, default 0.01
        AdamW weight decay.
    seed : int, default 0
        Torch seed for init and batch sampling.
    corpus_chars : int, default 3_000_000
        Characters of standard-library source used.
    val_fraction : float, default 0.05
        Tail of the corpus held out for the validation loss.
    val_batches : int, default 20
        Validation batches (fixed positions) for the reported loss.
    distill : float, default 0.0
        Weight of the teacher's soft labels in the loss (0: next-token labels only), in [0, 1].
    """

    steps: int = 1200  # optimiser steps
    batch: int = 8  # sequences per step
    seq_len: int = 256  # tokens per sequence (= the model's max_len)
    lr: float = 3e-3  # peak AdamW learning rate
    warmup: int = 50  # linear warm-up steps
    min_lr_ratio: float = 0.1  # cosine decay floor, as a fraction of lr
    weight_decay: float = 0.01
    seed: int = 0  # torch seed for init and batch sampling
    corpus_chars: int = 3_000_000  # characters of stdlib source used
    val_fraction: float = 0.05  # tail of the corpus held out for the validation loss
    val_batches: int = 20  # validation batches (fixed positions) for the reported loss
    distill: float = 0.0  # weight of the teacher's soft labels in the loss (0: next-token labels only)


def build_corpus(max_chars: int) -> tuple[str, list[str]]:
    """Concatenated stdlib source (ASCII, non-ASCII -> ``?``) and the file names used.

    Parameters
    ----------
    max_chars : int
        Characters to keep; files are read, sorted by name, until this many are gathered.

    Returns
    -------
    text : str
        The first ``max_chars`` characters of the concatenated files.
    names : list of str
        The file names read, in order.

    Raises
    ------
    InstanceError
        If no ``*.py`` file is found in the standard-library folder.
    """
    root = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in root.glob("*.py") if p.is_file())
    if not files:
        raise InstanceError(f"no standard-library sources found under {root}")
    parts, names, n = [], [], 0
    for f in files:
        text = f.read_text(encoding="utf-8", errors="replace")
        text = "".join(c if ord(c) < 128 else REPLACEMENT for c in text)
        parts.append(text)
        names.append(f.name)
        n += len(text)
        if n >= max_chars:
            break
    return "".join(parts)[:max_chars], names


def encode(text: str) -> list[int]:
    """ASCII code points of ``text``; raises :class:`InstanceError` on any other character.

    Parameters
    ----------
    text : str
        ASCII text.

    Returns
    -------
    list of int
        One token id per character, in 0..127.

    Raises
    ------
    InstanceError
        If ``text`` has a non-ASCII character.

    Examples
    --------
    >>> encode("def")
    [100, 101, 102]
    """
    bad = [c for c in text if ord(c) >= 128]
    if bad:
        raise InstanceError(f"text has non-ASCII character {bad[0]!r}; the built-in models read ASCII only")
    return [ord(c) for c in text]


def decode_text(tokens) -> str:
    """The text of token ids: the character of each code point.

    Parameters
    ----------
    tokens : sequence of int
        Token ids (ints, numpy or torch integers).

    Returns
    -------
    str
        The characters, concatenated.

    Examples
    --------
    >>> decode_text([100, 101, 102])
    'def'
    """
    return "".join(chr(int(t)) for t in tokens)


def _lr(cfg: TrainConfig, step: int) -> float:
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    frac = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return cfg.lr * (cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * frac)))


def train_model(mcfg: ModelConfig, tcfg: TrainConfig, data: torch.Tensor, log=None,
                teacher: TinyLM | None = None) -> tuple[TinyLM, dict]:
    """Train one model on ``data`` (# [N] long tokens); returns it and its loss record.

    With ``teacher`` and ``tcfg.distill = a > 0`` the loss is ``(1 - a) * CE(labels) + a * CE(p)``,
    p the teacher's next-token law (T = 1): cross-entropy to p is KL(p || q) plus a constant, and
    KL(p || q) bounds TV(p, q), so distilling raises the single-draft acceptance 1 - TV. With a
    ``teacher`` the record also holds ``val_acceptance``, the mean 1 - TV(p, q) over the validation
    positions. Seeds torch's global generator with ``tcfg.seed``.

    Parameters
    ----------
    mcfg : ModelConfig
        The architecture of the model trained (from a fresh initialisation).
    tcfg : TrainConfig
        The optimisation settings; the last ``tcfg.val_fraction`` of ``data`` is held out.
    data : torch.Tensor of shape (N,)
        Long token ids of the corpus.
    log : callable, optional
        Called with a progress line (str) every 100 steps and at the last; None: silent.
    teacher : TinyLM, optional
        The teacher p of a distilled draft (needed when ``tcfg.distill > 0``).

    Returns
    -------
    model : TinyLM
        The trained model, in eval mode.
    record : dict
        ``train_loss_ema``, ``val_loss`` (and ``val_acceptance`` with a teacher), ``seconds``,
        ``params``.

    Raises
    ------
    InstanceError
        If ``tcfg.distill > 0`` without a teacher, or ``tcfg.distill`` is outside [0, 1].
    """
    if tcfg.distill and teacher is None:
        raise InstanceError("distill > 0 needs a teacher model")
    if not 0 <= tcfg.distill <= 1:
        raise InstanceError(f"distill must be in [0, 1], got {tcfg.distill!r}")
    torch.manual_seed(tcfg.seed)
    gen = torch.Generator().manual_seed(tcfg.seed)
    n_val = int(len(data) * tcfg.val_fraction)
    train, val = data[:-n_val], data[-n_val:]
    model = TinyLM(mcfg)
    opt = torch.optim.AdamW(model.parameters(), lr=tcfg.lr, weight_decay=tcfg.weight_decay, betas=(0.9, 0.99))
    T = tcfg.seq_len
    offs = torch.arange(T + 1)
    t0 = time.perf_counter()
    loss_ema = None
    for step in range(tcfg.steps):
        for g in opt.param_groups:
            g["lr"] = _lr(tcfg, step)
        starts = torch.randint(0, len(train) - T - 1, (tcfg.batch,), generator=gen)
        xy = train[starts[:, None] + offs]  # [B, T + 1]
        logits = model(xy[:, :-1]).reshape(-1, mcfg.vocab_size)
        loss = torch.nn.functional.cross_entropy(logits, xy[:, 1:].reshape(-1))
        if tcfg.distill:
            with torch.no_grad():
                soft = torch.softmax(teacher(xy[:, :-1]).reshape(-1, mcfg.vocab_size), dim=-1)
            loss = (1 - tcfg.distill) * loss + tcfg.distill * torch.nn.functional.cross_entropy(logits, soft)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        loss_ema = loss.item() if loss_ema is None else 0.95 * loss_ema + 0.05 * loss.item()
        if log is not None and (step % 100 == 0 or step == tcfg.steps - 1):
            log(f"step {step:5d}  loss {loss_ema:.4f}  {time.perf_counter() - t0:.0f}s")
    model.eval()
    with torch.no_grad():
        starts = torch.linspace(0, len(val) - T - 1, tcfg.val_batches).long()
        xy = val[starts[:, None] + offs]
        logits = model(xy[:, :-1])
        vloss = torch.nn.functional.cross_entropy(logits.reshape(-1, mcfg.vocab_size), xy[:, 1:].reshape(-1)).item()
        rec = {"train_loss_ema": round(loss_ema, 4), "val_loss": round(vloss, 4)}
        if teacher is not None:
            p = torch.softmax(teacher(xy[:, :-1]).double(), dim=-1)
            q = torch.softmax(logits.double(), dim=-1)
            rec["val_acceptance"] = round(torch.minimum(p, q).sum(-1).mean().item(), 4)
    return model, {**rec, "seconds": round(time.perf_counter() - t0, 1), "params": model.num_params()}


def train_pair(out_dir, tcfg_target: TrainConfig, tcfg_draft: TrainConfig, log=print,
               draft_only: bool = False) -> dict:
    """Train target and draft, write ``tiny_target.safetensors``, ``tiny_draft.safetensors`` and
    ``tiny_pair.json`` (the manifest) into ``out_dir``; returns the manifest.

    The draft is trained after the target, which is its teacher when ``tcfg_draft.distill > 0``.
    Sets torch to one thread (training is deterministic).

    Parameters
    ----------
    out_dir : str or os.PathLike
        The folder written (created if needed).
    tcfg_target : TrainConfig
        Settings of the target (:data:`TARGET_CONFIG`); with ``draft_only`` only its
        ``corpus_chars`` is read (the corpus is the longer of the two models').
    tcfg_draft : TrainConfig
        Settings of the draft (:data:`DRAFT_CONFIG`).
    log : callable, default print
        Called with each progress line (str).
    draft_only : bool, default False
        Keep the target already in ``out_dir`` (its manifest entry too) and retrain the draft only;
        the corpus must hash as the manifest says.

    Returns
    -------
    dict
        The manifest: corpus (source, Python version, characters, files, SHA-256), torch version,
        threads, and per role its model config, train config and loss record.

    Raises
    ------
    InstanceError
        With ``draft_only``, if ``out_dir`` has no manifest or this Python's standard library gives
        another corpus than the target was trained on.
    """
    from safetensors.torch import load_file, save_file

    torch.set_num_threads(1)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    text, names = build_corpus(max(tcfg_target.corpus_chars, tcfg_draft.corpus_chars))
    data = torch.tensor(encode(text), dtype=torch.long)
    manifest = {
        "corpus": {"source": "CPython standard library *.py (top level, sorted), non-ASCII -> '?'",
                   "python": sys.version.split()[0], "chars": len(text), "files": len(names),
                   "first_file": names[0], "last_file": names[-1],
                   "sha256": hashlib.sha256(text.encode("ascii")).hexdigest()},
        "torch": torch.__version__,
        "threads": 1,
    }
    roles = [("target", TARGET_CONFIG, tcfg_target), ("draft", DRAFT_CONFIG, tcfg_draft)]
    target = None
    if draft_only:
        man_path = out / "tiny_pair.json"
        if not man_path.exists():
            raise InstanceError(f"no manifest {str(man_path)!r}: train the target first (without draft_only)")
        old = json.loads(man_path.read_text())
        if old["corpus"]["sha256"] != manifest["corpus"]["sha256"]:
            raise InstanceError("this Python's standard library gives a different corpus than the shipped "
                                "target was trained on; retrain both models")
        manifest["target"] = old["target"]
        target = TinyLM(ModelConfig(**old["target"]["model"]))
        target.load_state_dict(load_file(str(out / "tiny_target.safetensors")))
        target.eval()
        roles = roles[1:]
    for role, mcfg, tcfg in roles:
        log(f"training {role}: {mcfg}")
        model, rec = train_model(mcfg, tcfg, data[:tcfg.corpus_chars], log=log,
                                 teacher=target if role == "draft" else None)
        if role == "target":
            target = model
        save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(out / f"tiny_{role}.safetensors"))
        manifest[role] = {"model": mcfg.to_dict(), "train": asdict(tcfg), **rec}
        log(f"{role}: {rec}")
    (out / "tiny_pair.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest
