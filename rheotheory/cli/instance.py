"""``rheo instance``: write a seeded random toy instance JSON to stdout."""

from __future__ import annotations

import json

from .args import (EXIT_DONE, add_max_entries, add_progress, announce, busy, float_range, nonneg_int, positive_int,
                   seed_arg, set_exit_statuses)

#: Seconds per probability of an instance made and written (measured: V = 10^6, horizon 0,
#: weights, 2 x 10^6 probabilities in 88 s on a shared core).
SECONDS_PER_ENTRY = 4e-5

__all__ = ["register", "run"]


def register(sub) -> None:
    i = sub.add_parser("instance", help="write a random toy instance JSON to stdout",
                       description="Generate a seeded toy LM pair and print it in the instance format.")
    set_exit_statuses(i, EXIT_DONE)
    i.add_argument("--vocab", type=positive_int, default=4, help="vocabulary size (default 4)")
    i.add_argument("--horizon", type=nonneg_int, default=3, help="longest prefix (default 3)")
    i.add_argument("--seed", type=seed_arg, default=0, help="seed (0..2^63-1, default 0)")
    i.add_argument("--kind", choices=("weights", "logits"), default="weights",
                   help="weights: small integer weights; logits: softmax of Gaussian logits")
    i.add_argument("--mismatch", type=float_range(lo=0.0, hi=1.0), default=None,
                   help="weights: draft mix, 0 (q=p) .. 1 (default 1)")
    i.add_argument("--temperature", type=float_range(lo=0.0, lo_open=True), default=None,
                   help="logits: target temperature (default 1)")
    i.add_argument("--temper-draft", action="store_true", help="logits: temper the draft too")
    add_max_entries(i)
    add_progress(i)
    i.set_defaults(func=run)


def run(args) -> int:
    from ..errors import RheoError
    from ..pairs import check_table_size

    wrong = ((("--temperature", args.temperature), ("--temper-draft", args.temper_draft or None))
             if args.kind == "weights" else (("--mismatch", args.mismatch),))
    for flag, v in wrong:
        if v is not None:
            raise RheoError(f"{flag} applies to --kind {'logits' if args.kind == 'weights' else 'weights'} only")
    rows = check_table_size(args.vocab, args.horizon, args.max_entries)  # NOTE: the cap first, then the estimate
    announce(args, 2 * rows * args.vocab * SECONDS_PER_ENTRY, f"2 tables of {rows * args.vocab} probabilities")
    with busy(args, "instance"):
        text = json.dumps(_make(args).to_dict())
    print(text)
    return 0


def _make(args):
    from ..pairs import logits_pair, random_pair

    if args.kind == "weights":
        mismatch = 1.0 if args.mismatch is None else args.mismatch
        return random_pair(args.vocab, args.horizon, seed=args.seed, mismatch=mismatch, max_entries=args.max_entries)
    temperature = 1.0 if args.temperature is None else args.temperature
    return logits_pair(args.vocab, args.horizon, seed=args.seed, temperature=temperature,
                       temper_draft=args.temper_draft, max_entries=args.max_entries)
