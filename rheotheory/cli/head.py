"""``rheo head``: what a draft head folder holds, and its export as an EAGLE-3 checkpoint."""

from __future__ import annotations

import json

from .args import (EXIT_DONE, add_progress, busy, set_exit_statuses)

__all__ = ["register", "run"]

DTYPES = ("float16", "bfloat16", "float32")


def register(sub) -> None:
    h = sub.add_parser("head", help="describe a draft head, or export it as an EAGLE-3 checkpoint",
                       description="info SRC: a draft head's format, width, fused layers, vocabularies and size. "
                       "export SRC OUT: write the head rheotheory trained in SRC (EAGLE-3's architecture, "
                       "scripts/train_head_sharegpt.py --arch eagle3) to OUT as config.json + weights that "
                       "SpecForge, SGLang and vLLM load unchanged, its manifest.json copied beside. A head in "
                       "rheotheory's first architecture (v1, v2) is refused: no EAGLE-3 layer reproduces it. "
                       "docs/guide/smollm2.md.")
    set_exit_statuses(h, EXIT_DONE)
    h.add_argument("action", choices=("info", "export"), help="info or export")
    h.add_argument("src", metavar="SRC", help="the head's folder")
    h.add_argument("out", metavar="OUT", nargs="?", default=None, help="export: the folder to write")
    h.add_argument("--weights", choices=("model.safetensors", "pytorch_model.bin"), default="model.safetensors",
                   help="export: the weight file (default model.safetensors; pytorch_model.bin as EAGLE writes)")
    h.add_argument("--dtype", choices=DTYPES, default="float16",
                   help="export: the floating tensors' dtype (default float16)")
    h.add_argument("--json", action="store_true", help="print one JSON object")
    add_progress(h)
    h.set_defaults(func=run)


def run(args) -> int:
    from ..errors import RheoError

    try:
        return _run(args)
    except OSError as e:  # an unreadable source, an unwritable output folder
        raise RheoError(f"{e.strerror or e}: {e.filename}" if e.filename else str(e)) from None


def _run(args) -> int:
    from ..errors import RheoError

    if args.action == "info":
        if args.out is not None:
            raise RheoError("rheo head info takes one folder (SRC)")
        from ..decode.heads.eagle3 import describe_head

        info = describe_head(args.src)
        if args.json:
            print(json.dumps(info))
        else:
            for k, v in info.items():
                print(f"{k:22} {v}")
        return 0
    if args.out is None:
        raise RheoError("rheo head export needs SRC and OUT (the folder to write)")
    import torch

    from ..decode.heads.eagle3 import describe_head, export_head

    with busy(args, "head export"):
        out = export_head(args.src, args.out, weights=args.weights, dtype=getattr(torch, args.dtype))
    info = describe_head(out)
    if args.json:
        print(json.dumps(info))
    else:
        print(f"wrote {out} ({info['weights']}, {info['dtype']}, {info['params']} parameters, fused block outputs "
              f"{info['fused_block_outputs']}, draft vocabulary {info['draft_vocab']} of {info['vocab_size']})")
    return 0
