"""Pinned exact certificates for the mutation-testing killer suite (docs/mutation_report.md).

Every case is one method certified exhaustively, in exact rationals, on one small fixed
instance. Its pin is everything :func:`rheotheory.certify` reports: the verdict, the exact
largest deviation, E|Z|, the class/outcome/branch counts, and a digest of the whole exact law
of Z. A change to a verifier or a tree builder that changes any of these fails the killer
suite, whether or not the method stays lossless.

The pins were computed by this module from the committed code; regenerate them (after an
intended change, reviewing the diff) with ``python tests/killers/killer_pins.py``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from rheotheory import certify, make_method, random_pair
from rheotheory.laws import format_number

PINS = Path(__file__).with_name("golden_certificates.json")

#: The instances: a dense one (V = 4, horizon 3) and one with zero-probability tokens.
PAIRS = {
    "dense": lambda: random_pair(4, 3, seed=1),
    "zeros": lambda: random_pair(4, 3, seed=4, zero_prob=0.25),
}

#: (name, family, fields): every registered verifier on the families that admit it, each
#: builder option that changes the tree, and the known-lossy negative controls.
CASES = [
    ("chain-seq", "chain", dict(depth=3, verifier="sequential")),
    ("chain-onehot", "chain", dict(depth=2, verifier="onehot")),
    ("chain-block", "chain", dict(depth=3, verifier="block")),
    ("chain-traversal", "chain", dict(depth=3, verifier="traversal")),
    ("static-iid-rrs", "static", dict(budget=4, depth=2, sampling="iid", verifier="rrs")),
    ("static-iid-kseq", "static", dict(budget=4, depth=2, sampling="iid", verifier="kseq")),
    ("static-iid-traversal", "static", dict(budget=4, depth=2, sampling="iid", verifier="traversal")),
    ("static-wor-rrs", "static", dict(budget=4, depth=2, sampling="wor", verifier="rrs-wor")),
    ("chain-ot", "chain", dict(depth=3, verifier="ot")),
    ("adaptive-head0-ot-wor", "adaptive", dict(top_k=3, depth=2, budget=4, head=0, proxy="tail", verifier="ot-wor")),
    ("chain-kseq", "chain", dict(depth=2, verifier="kseq")),
    ("static-wor-shape-traversal", "static",
     dict(shape=[[0], [1], [2], [0, 0], [0, 1]], sampling="wor", verifier="traversal")),
    ("multichain-iid-traversal", "multichain", dict(width=2, depth=2, sampling="iid", verifier="traversal")),
    ("multichain-wor-rrs", "multichain", dict(width=3, depth=1, sampling="wor", verifier="rrs-wor")),
    ("chain-gbv", "chain", dict(depth=3, verifier="gbv")),
    ("multichain-iid-gbv", "multichain", dict(width=2, depth=2, sampling="iid", verifier="gbv")),
    ("multichain-w3-gbv", "multichain", dict(width=3, depth=1, sampling="iid", verifier="gbv")),
    ("eagle", "eagle", dict(top_k=2, depth=3, budget=4, verifier="onehot")),
    ("eagle-wide", "eagle", dict(top_k=3, depth=2, budget=4, verifier="onehot")),
    ("rheo-next-ot", "rheo", dict(top_k=2, depth=3, budget=4, proxy="next", verifier="ot")),
    ("rheo-tail-seq", "rheo", dict(top_k=2, depth=3, budget=4, proxy="tail", verifier="sequential")),
    ("rheo-head0-fillers", "rheo", dict(top_k=3, depth=2, budget=5, head=0, proxy="tail", verifier="ot")),
    ("rheo-mbt-nofill", "rheo",
     dict(top_k=3, depth=2, budget=5, head=1, proxy="min-best-tail", fillers="none", verifier="ot")),
    ("rheo-true-ot", "rheo", dict(top_k=2, depth=2, budget=3, proxy="true", verifier="ot")),
    ("rheo-head1-fill-seq", "rheo", dict(top_k=3, depth=3, budget=5, head=1, proxy="next", verifier="sequential")),
    # budgets below K: expansions left out as doomed and later settled (docs/theory.md section 5.6)
    ("eagle-n1", "eagle", dict(top_k=3, depth=3, budget=1, verifier="onehot")),
    ("rheo-next-n1", "rheo", dict(top_k=2, depth=3, budget=1, proxy="next", verifier="ot")),
    ("rheo-head0-n1", "rheo", dict(top_k=3, depth=3, budget=1, head=0, proxy="tail", verifier="ot")),
    ("rheo-head0-n2", "rheo", dict(top_k=3, depth=3, budget=2, head=0, proxy="tail", verifier="ot")),
    ("rheo-k2-head0-n2", "rheo", dict(top_k=2, depth=3, budget=2, head=0, proxy="tail", verifier="ot")),
    # head 0 with the tail proxy: a sample scores its parent's score, so ties everywhere and the
    # creation order decides what is expanded, left out and kept
    ("rheo-k1-tail-n1", "rheo", dict(top_k=1, depth=3, budget=1, proxy="tail", verifier="ot")),
    ("rheo-k1-tail-n2", "rheo", dict(top_k=1, depth=3, budget=2, proxy="tail", verifier="ot")),
    ("rheo-k2-head0-nofill-n2", "rheo", dict(top_k=2, depth=3, budget=2, head=0, proxy="tail", fillers="none",
                                             verifier="ot")),
    ("adaptive-head0-traversal", "adaptive", dict(top_k=3, depth=2, budget=5, head=0, proxy="tail",
                                                  verifier="traversal")),
    ("adaptive-head1-ot-wor", "adaptive", dict(top_k=3, depth=2, budget=5, head=1, proxy="tail", verifier="ot-wor")),
    ("adaptive-next-traversal-ot", "adaptive", dict(top_k=3, depth=2, budget=5, head=1, proxy="next",
                                                    verifier="traversal-ot")),
    ("adaptive-predicted", "adaptive", dict(top_k=3, depth=2, budget=5, verifier="ot-wor")),
    ("adaptive-threshold", "adaptive", dict(top_k=3, depth=2, budget=5, head="threshold", verifier="ot-wor")),
    ("adaptive-true", "adaptive", dict(top_k=2, depth=2, budget=4, head=0, proxy="true", verifier="ot-wor")),
    ("autoregressive", "autoregressive", dict()),
]



def method_of(family: str, fields: dict):
    return make_method(family, **fields)


def z_law_digest(z_law: dict) -> str:
    """sha256 of the exact law of Z, as sorted ``z: weight`` lines (zero weights left out)."""
    lines = sorted(f"{list(map(int, z))}:{format_number(w)}" for z, w in z_law.items() if w)
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


def summary(cert) -> dict:
    """What a pin holds of a certificate."""
    return {
        "lossless": bool(cert.lossless),
        "max_deviation": format_number(cert.max_deviation),
        "tokens_per_step": format_number(cert.tokens_per_step),
        "classes": int(cert.classes),
        "outcomes": int(cert.outcomes),
        "branches": int(cert.branches),
        "z_law": z_law_digest(cert.z_law),
    }


def compute(case: str, pair_name: str) -> dict:
    name, family, fields = next(c for c in CASES if c[0] == case)
    return summary(certify(PAIRS[pair_name](), method_of(family, fields)))


#: Cases whose Monte Carlo draws are pinned too (the sampling path: RandomChooser, SampleBranch).
SAMPLED_CASES = ["chain-block", "chain-kseq", "static-iid-traversal", "static-wor-rrs", "multichain-wor-rrs", "eagle",
                 "rheo-next-ot", "rheo-head0-fillers", "rheo-head1-fill-seq", "rheo-true-ot",
                 "adaptive-head0-traversal", "adaptive-head1-ot-wor", "adaptive-next-traversal-ot",
                 "adaptive-predicted", "multichain-iid-gbv"]

#: Draws per sampled case, and the seed.
SAMPLES, SEED = 40, 0


def sample_digest(case: str) -> str:
    """sha256 of ``SAMPLES`` Monte Carlo steps of ``case`` on the dense instance (float laws):
    each step's Z, the acceptance observed at each visited node (12 digits) and the kept size."""
    from rheotheory.montecarlo import _step_rng, sample_step

    _, family, fields = next(c for c in CASES if c[0] == case)
    method = method_of(family, fields)
    pair = PAIRS["dense"]().to_float()
    rng = _step_rng(SEED)
    build = method.builder(pair)
    lines = []
    for _ in range(SAMPLES):
        rec = sample_step(pair, method, rng, build)
        lines.append(f"{list(map(int, rec.z))} {[f'{a:.12g}' for a in rec.node_accept]} {rec.nodes}")
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


def main() -> None:
    pins = {f"{case}@{pair}": compute(case, pair) for case, _, _ in CASES for pair in PAIRS}
    pins.update({f"{case}@sampled": sample_digest(case) for case in SAMPLED_CASES})
    PINS.write_text(json.dumps(pins, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(pins)} pins to {PINS.name}")


if __name__ == "__main__":
    main()
