"""``rheo counterexample``: search random instances for a lossy one and shrink it to a minimal one."""

from __future__ import annotations

import json

from ..executors import EXECUTORS
from .args import add_method_arguments, int_range, method_from_args, positive_int, seed_arg, threads_arg

__all__ = ["register", "run"]


def register(sub) -> None:
    c = sub.add_parser(
        "counterexample", help="search random toy instances for one on which a method is lossy, and shrink it",
        description="Certify the method exactly on seeded random instances (vocabulary 3..--max-vocab; "
        "families with K, D, N draw K in 2..--top-k, D in 2..--depth, N in K..min(2K, --budget); chains draw "
        "D in 2..--depth). The first lossy instance is shrunk greedily (fewest tokens, smallest depth, top-K "
        "and budget, simplest rationals) and written as instance JSON.")
    add_method_arguments(c, size="toy")
    c.add_argument("--instances", type=positive_int, default=200, metavar="N",
                   help="random instances to certify (default 200)")
    c.add_argument("--seed", type=seed_arg, default=0, help="search seed (default 0)")
    c.add_argument("--max-vocab", type=int_range(2), default=4, metavar="V",
                   help="largest vocabulary drawn (default 4)")
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
    c.set_defaults(func=run)


def run(args) -> int:
    from .. import laws
    from ..counterexample import SearchSpace, find_counterexample
    from ..errors import RheoError
    from ..executors import open_executor

    method = method_from_args(args, size="toy")
    space = SearchSpace(min_vocab=min(3, args.max_vocab), max_vocab=args.max_vocab,
                        max_top_k=getattr(method, "top_k", 2), max_depth=method.depth,
                        max_budget=getattr(method, "budget", 1), family=args.family)
    with open_executor(args.executor, args.workers, args.scheduler) as ex:
        res = find_counterexample(method, instances=args.instances, seed=args.seed, space=space,
                                  do_shrink=not args.no_shrink, executor=ex, workers=args.workers)
    if res.found and args.out:
        try:
            res.pair.save(args.out)
        except OSError as e:
            raise RheoError(f"cannot write {args.out!r}: {e.strerror}") from None
    if args.json:
        d = res.to_dict()
        d["out"] = args.out if res.found else None
        d["searched"] = method.to_dict()
        print(json.dumps(d))
        return 0
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
    return 0
