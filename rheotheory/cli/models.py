"""Options and helpers shared by ``rheo decode`` and ``rheo bench`` (model pairs, threads, truncation)."""

from __future__ import annotations

import argparse

from .args import float_range, positive_float, positive_int, seed_arg, threads_arg

__all__ = ["add_model_arguments", "size_row", "need_torch", "load_pair", "set_threads", "warn_if_lossy"]


def add_model_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--target-top-k", type=positive_int, default=None, metavar="K",
                    help="truncate the target to its K most probable tokens (T > 0)")
    ap.add_argument("--target-top-p", type=float_range(lo=0.0, hi=1.0, lo_open=True), default=None, metavar="P",
                    help="truncate the target to its top-p nucleus, P in (0, 1] (T > 0)")
    ap.add_argument("--draft-temperature", type=positive_float, default=None, metavar="TD",
                    help="temperature of the draft laws the trees are built and verified with (default: "
                    "the target's T when T > 0, a sharp 0.05 when T = 0)")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="cpu (default) or cuda")
    ap.add_argument("--model", choices=("builtin", "smollm2"), default="builtin",
                    help="builtin: the shipped character-level pair (default; tree size row 'builtin'); "
                    "smollm2: SmolLM2-135M-Instruct (needs the smollm extra, see the README; row 'model')")
    ap.add_argument("--draft", default=None, metavar="SPEC",
                    help="SmolLM2 draft: int<bits> (quantised copy, default int4) or layers:<n> (early exit)")
    ap.add_argument("--seed", type=seed_arg, default=0, help="torch generator seed (default 0)")
    ap.add_argument("--threads", type=threads_arg, default=1,
                    help="CPU threads for torch and numpy's BLAS, at most the machine's cores (default 1)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")


def size_row(args) -> str:
    """The TREE_SIZES row of the chosen model pair."""
    return "builtin" if args.model == "builtin" else "model"


def need_torch():
    from ..errors import RheoError

    try:
        import torch
    except ImportError:
        raise RheoError("this command needs PyTorch: pip install 'rheotheory[torch]'") from None
    return torch


def load_pair(args):
    """The model pair named by ``--model`` and the benchmark prompts that suit it."""
    from ..errors import RheoError

    if args.model == "smollm2":
        from ..decode.smollm import DEFAULT_DRAFT, SMOL_PROMPTS, load_smollm2

        return load_smollm2(args.device, draft=args.draft or DEFAULT_DRAFT), SMOL_PROMPTS
    if args.draft is not None:
        raise RheoError("--draft applies to --model smollm2 only")
    from ..decode.bench import BENCH_PROMPTS
    from ..decode.builtin import load_builtin_pair

    return load_builtin_pair(args.device), BENCH_PROMPTS


def set_threads(torch, n: int) -> None:
    """Use ``n`` CPU threads in torch and in numpy's BLAS (the CPU draft runs in numpy).

    NOTE: without threadpoolctl BLAS keeps its default; a multi-threaded BLAS on tiny batch-1
    matrices mostly waits on its own threads, so the numpy draft gets slower, not wrong.
    """
    torch.set_num_threads(n)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return
    threadpool_limits(limits=n, user_api="blas")


def warn_if_lossy(methods) -> None:
    """One stderr line per method the exact certifier has found lossy (decoding still runs: a
    lossy variant is a legitimate thing to measure)."""
    import sys

    for m in methods:
        why = m.known_lossy()
        if why:
            print(f"rheo: warning: {m.describe()} is known to be lossy ({why})", file=sys.stderr)
