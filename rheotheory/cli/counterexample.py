"""``rheo counterexample``: search random instances for a lossy one and shrink it to a minimal one."""

from __future__ import annotations

import json

from ..executors import EXECUTORS
from .args import (add_method_arguments, add_progress, announce, check_out_file, check_work, int_range,
                   method_from_args, positive_int, progress_bar, seed_arg, set_exit_statuses, threads_arg)

#: Exit status when a lossy instance is found (as ``certify`` exits 1 on a loss).
EXIT_FOUND = 1

__all__ = ["register", "run", "MAX_SEARCH_VOCAB", "MAX_INSTANCES", "DEFAULT_SEARCH_BRANCHES"]

#: Largest --max-vocab: exact certification cost grows about as V^(sampled draws) (measured:
#: 256 construction branches at V = 4, K,D,N = 3,3,6; 54675 at V = 6, K,D,N = 4,3,8).
MAX_SEARCH_VOCAB = 8

#: Most --instances of one search.
MAX_INSTANCES = 10**6

#: Default cap on the search's construction branches, estimated up front as --instances times the
#: branches of the largest instance the search can draw (a bound, not the time it announces: a
#: lossy method usually stops at its first instances, and most drawn instances are smaller than
#: the largest; the estimate is rheotheory.exact.estimate_branches), the same cap as one
#: `rheo certify`.
DEFAULT_SEARCH_BRANCHES = 2_000_000

#: Seconds of certifications made in this process, in order, before the rest of the search is
#: estimated and announced: a search this short, or one that finds a lossy instance this soon,
#: announces nothing (see rheotheory.counterexample.search).
PILOT_SECONDS = 1.0


def register(sub) -> None:
    c = sub.add_parser(
        "counterexample", help="search random toy instances for one on which a method is lossy, and shrink it",
        description="Certify the method exactly on seeded random instances (vocabulary 3..--max-vocab; "
        "families with K, D, N draw K in 2..--top-k, D in 2..--depth, N in K..min(2K, --budget); chains draw "
        "D in 2..--depth). The first lossy instance is shrunk greedily (fewest tokens, smallest depth, top-K "
        "and budget, simplest rationals) and written as instance JSON.")
    set_exit_statuses(c, (
        (0, "none found in the instances searched"),
        (EXIT_FOUND, "a lossy instance found: printed, shrunk, and written with --out"),
    ))
    add_method_arguments(c, size="toy")
    c.add_argument("--instances", type=int_range(1, MAX_INSTANCES), default=200, metavar="N",
                   help=f"random instances to certify, 1..{MAX_INSTANCES} (default 200)")
    c.add_argument("--seed", type=seed_arg, default=0, help="search seed (0..2^63-1, default 0)")
    c.add_argument("--max-vocab", type=int_range(3, MAX_SEARCH_VOCAB), default=4, metavar="V",
                   help=f"largest vocabulary drawn, 3..{MAX_SEARCH_VOCAB} (default 4); --top-k must be 2..V, "
                   "--depth >= 2, --budget >= --top-k")
    c.add_argument("--max-branches", type=positive_int, default=DEFAULT_SEARCH_BRANCHES, metavar="B",
                   help="refuse a search estimated (instances x construction branches of its largest instance, "
                   f"measured before the search) over B branches (default {DEFAULT_SEARCH_BRANCHES})")
    c.add_argument("--family", choices=("weights", "logits", "mixed"), default="weights",
                   help="instances: small integer weights, peaked Gaussian logits, or either (default weights)")
    c.add_argument("--no-shrink", action="store_true", help="report the first lossy instance as found")
    c.add_argument("--executor", choices=EXECUTORS, default="process",
                   help="where the search runs: local process pool, dask.distributed or Ray (default process; "
                   "same result)")
    c.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="dask scheduler or Ray cluster address (default: a local cluster of --workers workers)")
    c.add_argument("--workers", type=threads_arg, default=1,
                   help="processes or local workers for the search (default 1: this process)")
    c.add_argument("--out", default=None, metavar="FILE", help="write the (shrunk) instance JSON here")
    c.add_argument("--json", action="store_true", help="print one JSON object")
    add_progress(c)
    c.set_defaults(func=run)


def run(args) -> int:
    import time

    from .. import laws
    from ..counterexample import SearchSpace, find_counterexample
    from ..errors import RheoError
    from ..executors import open_executor

    method = method_from_args(args, size="toy")
    if args.out:
        check_out_file(args.out)
    t0 = time.perf_counter()
    check_search(method, args)
    estimated = []

    def on_estimate(rest):
        estimated.append(time.perf_counter() - t0 + rest)  # NOTE: the whole search, the timed first instances too
        announce(args, estimated[0], f"{args.instances} certifications (fewer if one is lossy)")

    space = SearchSpace(min_vocab=min(3, args.max_vocab), max_vocab=args.max_vocab,
                        max_top_k=getattr(method, "top_k", 2), max_depth=method.depth,
                        max_budget=getattr(method, "budget", 1), family=args.family)
    with open_executor(args.executor, args.workers, args.scheduler) as ex, \
            progress_bar(args, args.instances, "counterexample search", "instance") as bar:
        res = find_counterexample(method, instances=args.instances, seed=args.seed, space=space,
                                  do_shrink=not args.no_shrink, executor=ex, workers=args.workers,
                                  progress=bar.update, pilot_seconds=PILOT_SECONDS, on_estimate=on_estimate)
    if res.found and args.out:
        try:
            res.pair.save(args.out)
        except OSError as e:
            raise RheoError(f"cannot write {args.out!r}: {e.strerror}") from None
    if args.json:
        d = res.to_dict()
        d["out"] = args.out if res.found else None
        d["searched"] = method.to_dict()
        d["estimated_seconds"] = round(estimated[0], 3) if estimated else None
        print(json.dumps(d))
        return EXIT_FOUND if res.found else 0
    if not res.found:
        print(f"none found in {res.instances} instances ({method.describe()}, seed {args.seed})")
        return 0
    m = res.method
    print(f"found a lossy instance after {res.instances} instances: {res.original_method.describe()}, "
          f"V={res.original_pair.vocab_size}, max deviation {laws.format_number(res.original_deviation)}")
    print(f"shrunk to       : V={res.pair.vocab_size}, {m.describe()}")
    print(f"max deviation   : {laws.format_number(res.max_deviation)}  (~{float(res.max_deviation):.3g})")
    print(f"sequence        : {list(res.sequence)}")
    print(f"instance        : {args.out if args.out else '(not written; use --out FILE)'}")
    print(f"certifications  : {res.certifications}")
    return EXIT_FOUND


def check_search(method, args) -> None:
    """The documented ranges of the drawn trees, and the search's work measured on its largest draw.

    K in 2..--max-vocab, D >= 2, N >= K (families with those fields); then the construction
    branches of the largest instance the search can draw (V = --max-vocab, K, D, N at their maxima)
    are estimated, and the search is refused when --instances of them exceed --max-branches. The
    time is announced later, once the first instances have been timed (:data:`PILOT_SECONDS`).
    """
    from ..errors import RheoError
    from ..exact import estimate_branches
    from ..pairs import random_pair

    fields = method.fields()
    k, d, n = fields.get("top_k"), fields.get("depth"), fields.get("budget")
    if k is not None and not 2 <= k <= args.max_vocab:
        raise RheoError(f"--top-k {k}: the search draws K in 2..--top-k, so --top-k must be in 2..--max-vocab "
                        f"({args.max_vocab})")
    if d is not None and d < 2:
        raise RheoError(f"--depth {d}: the search draws D in 2..--depth, so --depth must be >= 2")
    if k is not None and n is not None and n < k:
        raise RheoError(f"--budget {n}: the search draws N in K..min(2K, --budget), so --budget must be >= "
                        f"--top-k ({k})")
    changes = {}
    if "top_k" in method.shrink_fields:
        changes["top_k"] = k
    if "depth" in method.shrink_fields:
        changes["depth"] = d
    if "budget" in method.shrink_fields:
        changes["budget"] = max(k or 1, min(2 * (k or 1), n))
    largest = method.fit(**changes) if changes else method
    pair = random_pair(args.max_vocab, largest.depth, seed=0)
    est = estimate_branches(pair, largest)
    what = f"{args.instances} certifications of up to V={args.max_vocab}, {largest.describe()}"
    check_work(args.instances * est, args.max_branches, f"{what} (about {est:.3g} construction branches each)",
               "--max-branches", "DEFAULT_SEARCH_BRANCHES", "construction branches")
