"""Exact certificates of a fixed grid of instances x methods, one JSON line each.

A refactor of the builders, the verifiers or the walk must leave every line unchanged:

    python3 benchmarks/certificate_snapshot.py > before.jsonl
    ... change the code ...
    python3 benchmarks/certificate_snapshot.py > after.jsonl && diff before.jsonl after.jsonl

Each line holds the instance, the method's fields (family, K, D, N, head, proxy, verifier,
shape, sampling), the verdict, the exact max deviation, the exact tokens per step, and the raw
outcome and equivalence-class counts. Every method is built through the same keyword fields, so
a line is identified by what the method *is*, not by how a command names it.
"""

from __future__ import annotations

import json
import sys

from rheotheory import certify, random_pair
from rheotheory.methods import make_method

#: (vocabulary, horizon, seed) of the instances; horizon = the deepest tree's depth.
INSTANCES = [(3, 3, s) for s in range(4)] + [(4, 3, s) for s in range(3)] + [(5, 2, s) for s in range(2)]

#: Methods as keyword fields; shapes are index paths.
METHODS = (
    [dict(method="eagle", top_k=k, depth=d, budget=n, verifier=v)
     for (k, d, n) in ((2, 2, 4), (3, 3, 6)) for v in ("onehot", "sequential", "ot")]
    + [dict(method="rheo", top_k=k, depth=d, budget=n, head=h, proxy=p, verifier=v)
       for (k, d, n, h) in ((2, 2, 4, None), (3, 3, 6, None), (3, 2, 6, 1))
       for p in ("next", "min-best-tail", "true") for v in ("onehot", "sequential", "ot")]
    + [dict(method="rheo", top_k=2, depth=2, budget=4, proxy="tail", verifier=v) for v in ("sequential", "ot")]
    + [dict(method="static", shape=[[0], [1], [0, 0]], verifier=v, sampling=s)
       for v, s in (("rrs", "iid"), ("rrs-wor", "wor"), ("kseq", "iid"), ("sequential", "iid"),
                    ("onehot", "wor"))]
    + [dict(method="static", shape=[[0], [0, 0], [0, 1], [0, 0, 0]], verifier="rrs")]
    + [dict(method="chain", depth=d, verifier=v) for d in (1, 3) for v in ("sequential", "ot", "kseq")]
)


def main() -> int:
    for V, H, seed in INSTANCES:
        pair = random_pair(V, H, seed=seed)
        for fields in METHODS:
            depth = fields.get("depth", max((len(t) for t in fields.get("shape", [[0]])), default=1))
            if depth > H:
                continue
            cert = certify(pair, make_method(**fields))
            print(json.dumps({"instance": [V, H, seed], "method": fields, "lossless": cert.lossless,
                              "max_deviation": str(cert.max_deviation),
                              "tokens_per_step": str(cert.tokens_per_step), "outcomes": cert.outcomes,
                              "classes": cert.classes}, sort_keys=True))
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
