"""Options and helpers shared by ``rheo decode`` and ``rheo bench`` (model pairs, threads, truncation)."""

from __future__ import annotations

import argparse

from .args import announce, busy, check_fits_vocab, float_range, positive_int, seed_arg, temperature_arg, threads_arg

__all__ = ["add_model_arguments", "draft_top_k_arg", "draft_top_k_option", "size_row", "need_torch", "load_pair",
           "check_model_fits", "set_threads", "warn_if_lossy"]


def add_model_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--target-top-k", type=positive_int, default=None, metavar="K",
                    help="truncate the target to its K most probable tokens, 1..the model's vocabulary (T > 0)")
    ap.add_argument("--target-top-p", type=float_range(lo=0.0, hi=1.0, lo_open=True), default=None, metavar="P",
                    help="truncate the target to its top-p nucleus, P in (0, 1] (T > 0)")
    ap.add_argument("--draft-temperature", type=positive_temperature, default=None, metavar="TD",
                    help="temperature of the draft laws the trees are built and verified with, >= 1e-3 (default: "
                    "the target's T when T > 0, a sharp 0.05 when T = 0)")
    ap.add_argument("--draft-top-k", type=draft_top_k_arg, default=None, metavar="K",
                    help="sparse draft: the draft law is the softmax over the draft's K largest logits (q = 0 "
                    "elsewhere), for building and verifying alike; 'off' for the full law (default: off for "
                    "vocabularies up to 1024 tokens, 128 above)")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="cpu (default) or cuda")
    ap.add_argument("--model", choices=("builtin", "smollm2"), default="builtin",
                    help="builtin: the shipped character-level pair (default; tree size row 'builtin'); "
                    "smollm2: SmolLM2-135M-Instruct (needs the smollm extra, see docs/guide/smollm2.md; row 'smollm2')")
    ap.add_argument("--draft", default=None, metavar="SPEC",
                    help="SmolLM2 draft: head (the shipped trained draft head, default), head-v3 (the shipped "
                    "EAGLE-3 head), head:DIR (a head saved by "
                    "scripts/train_draft_head.py), eagle3:DIR (an EAGLE-3 checkpoint: config.json + "
                    "model.safetensors or pytorch_model.bin), int<bits> (quantised copy) or layers:<n> (early exit); "
                    "with --target: the draft's Hugging Face directory, or a draft head's directory (either format) "
                    "made for the target")
    ap.add_argument("--target", default=None, metavar="DIR",
                    help="a local Hugging Face causal LM directory (save_pretrained, with its tokenizer) as the "
                    "target, with --draft DIR sharing its vocabulary (needs the hf extra; row 'model')")
    ap.add_argument("--dtype", choices=("float32", "bfloat16", "float16"), default=None,
                    help="weights' dtype of a --target/--draft pair (default float32)")
    ap.add_argument("--seed", type=seed_arg, default=0, help="torch generator seed (0..2^63-1, default 0)")
    ap.add_argument("--threads", type=threads_arg, default=1,
                    help="CPU threads for torch and numpy's BLAS, at most the machine's cores (default 1)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")


def draft_top_k_arg(text: str):
    """``--draft-top-k``: a positive integer, or 'off' (the full draft law)."""
    if text.strip().lower() == "off":
        return "off"
    return positive_int(text)


def draft_top_k_option(args) -> dict:
    """``DecodeConfig`` keyword for ``--draft-top-k``: none when the flag is absent (the config's
    default rule applies, ``rheotheory.decode.engine.default_draft_top_k``)."""
    k = args.draft_top_k
    if k is None:
        return {}
    return {"draft_top_k": None if k == "off" else k}


def positive_temperature(text: str) -> float:
    """A temperature >= MIN_TEMPERATURE (a draft law is never greedy)."""
    v = temperature_arg(text)
    if v == 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be > 0 (a draft law is never greedy), and >= 1e-3 "
                                         "(MIN_TEMPERATURE)")
    return v


def check_model_fits(args, pair, prompts, methods) -> None:
    """Before any decoding: --target-top-k and every tree's K at most the model's vocabulary, and
    prompt + --max-new-tokens + tree depth + 1 within the model's positions."""
    from ..errors import RheoError

    cfg = pair.target.cfg
    vocab = cfg.vocab_size
    if args.target_top_k is not None and args.target_top_k > vocab:
        raise RheoError(f"--target-top-k {args.target_top_k} exceeds the model's vocabulary ({vocab})")
    for m in methods:
        check_fits_vocab(m, vocab, f"the {args.model} model")
    positions = getattr(cfg, "max_len", None)
    if positions is None:
        return
    depth = max((m.depth for m in methods if m.nodes > 0), default=0)
    longest = max(len(pair.encode(p)) if isinstance(p, str) else len(p) for p in prompts)  # texts or token ids
    if longest + args.max_new_tokens + depth + 1 > positions:
        raise RheoError(f"prompt ({longest} tokens) + --max-new-tokens {args.max_new_tokens} + tree depth {depth} "
                        f"+ 1 exceed the model's {positions} positions")


def size_row(args) -> str:
    """The TREE_SIZES row of the chosen model pair."""
    if getattr(args, "target", None) is not None:
        return "model"
    return "builtin" if args.model == "builtin" else "smollm2"


def need_torch():
    from ..optional import import_optional

    return import_optional("torch", "this command")


#: Seconds of the first SmolLM2 load, which converts the GGUF weights once (about a minute on CPU).
SMOLLM2_FIRST_LOAD_SECONDS = 60.0


def load_pair(args):
    """The model pair named by ``--model`` and the benchmark prompts that suit it (loading under a
    bar of elapsed time, announced when it is the slow first SmolLM2 load)."""
    if args.model == "smollm2" and getattr(args, "target", None) is None:
        from ..decode.backends.smollm import cache_dir, find_gguf

        if not (cache_dir() / "model.safetensors").exists():
            find_gguf()  # NOTE: a missing package is one error line, never preceded by the estimate
            announce(args, SMOLLM2_FIRST_LOAD_SECONDS, "first SmolLM2 load (the weights are converted once)")
    with busy(args, f"loading the {'--target/--draft' if getattr(args, 'target', None) else args.model} pair"):
        return _load_pair(args)


def _load_pair(args):
    from ..errors import RheoError

    if getattr(args, "target", None) is not None:
        if args.draft is None:
            raise RheoError("--target DIR needs --draft DIR (a draft sharing the target's vocabulary)")
        if args.model != "builtin":
            raise RheoError("--target replaces --model; give one of them")
        from ..decode.backends.transformers_lm import HF_PROMPTS, load_hf_pair

        return load_hf_pair(args.target, args.draft, args.device, args.dtype or "float32"), HF_PROMPTS
    if args.model == "smollm2":
        from ..decode.backends.transformers_lm import DTYPES
        from ..decode.backends.smollm import SMOL_PROMPTS
        from ..decode.backends.smollm_pair import DEFAULT_DRAFT, load_smollm2

        return load_smollm2(args.device, draft=args.draft or DEFAULT_DRAFT,
                            dtype=DTYPES[args.dtype or "float32"]), SMOL_PROMPTS
    if getattr(args, "dtype", None) is not None:
        raise RheoError("--dtype applies to --model smollm2 and to a --target/--draft pair only")
    if args.draft is not None:
        raise RheoError("--draft applies to --model smollm2 only")
    from ..decode.evaluation.bench import BENCH_PROMPTS
    from ..decode.backends.builtin import load_builtin_pair

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


def auto_budget(args) -> bool:
    """True when ``--budget auto`` was given (then cleared: the size is chosen once the pair is
    loaded, :func:`choose_auto_size`); K and D given beside it are refused."""
    from ..errors import RheoError

    if getattr(args, "budget", None) != "auto":
        return False
    for name in ("top_k", "depth"):
        if getattr(args, name, None) is not None:
            raise RheoError(f"--budget auto chooses K, D and N; --{name.replace('_', '-')} does not apply")
    refuse_sized_specs([getattr(args, "preset", None) or ""])
    args.budget = None
    return True


def refuse_sized_specs(specs) -> None:
    """A RheoError naming the first spec that sets K, D or N itself (``--budget auto`` chooses them)."""
    from ..errors import RheoError

    for spec in specs:
        if any(k in ("top_k", "k", "depth", "d", "budget", "n") for k in spec_keys(spec)):
            raise RheoError(f"--budget auto chooses K, D and N; the spec {spec!r} sets one of them")


def spec_keys(spec: str) -> list[str]:
    """The field names a method spec sets (empty for a malformed one: resolve reports it)."""
    from .args import spec_fields

    try:
        return list(spec_fields(spec))
    except Exception:  # NOTE: a malformed spec is reported by resolve, with its own message
        return []


def auto_choice(args, pair, method, temperature: float, prompts, costs=None, draft_s=None) -> tuple:
    """``method`` at the tree size ``--budget auto`` chooses at ``temperature``
    (:mod:`rheotheory.decode.evaluation.budget`), or the autoregressive method when no size's predicted
    speed-up reaches :data:`~rheotheory.decode.evaluation.budget.MIN_SPEEDUP`; with the record of the
    choice (a JSON-ready dict: size, the best candidate's pilot tau, predicted speed-up and physical
    limit, whether it pays, the candidates)."""
    from ..decode.evaluation.budget import MIN_SPEEDUP, best, choose_size, pays, sized

    model_id = args.model if getattr(args, "target", None) is None else f"{args.target}+{args.draft}"
    if args.model == "smollm2" and args.draft:
        model_id += f"+{args.draft}"
    kw = {"top_k": args.target_top_k, "top_p": args.target_top_p, "draft_temp": args.draft_temperature,
          **draft_top_k_option(args)}
    with busy(args, f"choosing the tree size at T={temperature:g} (--budget auto; cached after the first time)"):
        size, table = choose_size(pair, method, temperature, list(prompts), model_id, args.device,
                                  args.dtype or "float32", args.threads, kw, costs=costs, draft_s=draft_s)
    top = best(table)
    record = {"temperature": float(temperature), "size": list(size), "tau": top["tau"],
              "predicted_speedup": top["predicted_speedup"], "physical_limit": top["physical_limit"],
              "pays": pays(table), "min_speedup": MIN_SPEEDUP, "candidates": len(table)}
    if not record["pays"]:
        from ..methods import resolve

        return resolve("autoregressive"), record
    return sized(method, size), record


def choose_auto_size(args, pair, method, temperature: float, prompts):
    """``method`` at the tree size ``--budget auto`` chooses (:func:`auto_choice`), the choice
    printed unless ``--json``; the fallback to autoregressive decoding is always said, on stderr."""
    import sys

    chosen, rec = auto_choice(args, pair, method, temperature, prompts)
    if not rec["pays"]:
        # NOTE: stderr, --json or not: the user asked for a tree and gets none
        print(describe_choice(rec, "", "decoding autoregressively"), file=sys.stderr)
    elif not getattr(args, "json", False):
        print(describe_choice(rec))
    return chosen


def describe_choice(rec: dict, who: str = "", fallback: str = "") -> str:
    """One line for an :func:`auto_choice` record: the chosen size, or (with ``fallback``, what
    runs instead) that no size pays; ``who`` names the method and temperature in a bench."""
    K, D, N = rec["size"]
    if not rec["pays"]:
        return (f"rheo: --budget auto: {who}no tree size pays on this machine (best K={K} D={D} N={N}: predicted "
                f"speed-up {rec['predicted_speedup']:.3f}x < {rec['min_speedup']:g}); {fallback}")
    return (f"--budget auto: {who}K={K} D={D} N={N} (tau {rec['tau']:.2f} in the pilot, predicted speed-up "
            f"{rec['predicted_speedup']:.2f}x, physical limit {rec['physical_limit']:.2f}x; "
            f"{rec['candidates']} sizes compared)")
