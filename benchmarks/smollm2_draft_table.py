"""Acceptance and cost of SmolLM2-135M-Instruct's drafts: int4 copy, layer-skip, trained head (full, sparse).

Needs the ``smollm`` extra (docs/guide/smollm2.md). Held-out target samples: the target's own T = 1 continuations
of the fixed prompts (``SMOL_PROMPTS``), drawn here with a seed the head's training never used.
For every position of those samples (the prompt's last token on) it compares the target law p
with the draft law q the engine would draft from at that position:

- ``int4``, ``layers:N``: the draft model's own next-token law;
- ``head``: the head's law at the root of a tree (step 1: target features of the positions before);
  ``head top-128``: the same law restricted to its 128 largest logits (the sparse draft).

Acceptance = mean over positions of sum_v min(p(v), q(v)) (1 - TV, the single-draft acceptance)
at temperature T. Cost = one cached single-token pass of the draft / of the target
(``rheotheory.decode.evaluation.bench.cost_ratio``, the median of ``--repeats`` timings).

    python3 benchmarks/smollm2_draft_table.py [--samples 2] [--tokens 64] [--drafts int4,layers:8,head]
"""

from __future__ import annotations

import argparse
import json
import statistics

import torch

from rheotheory.decode.evaluation.bench import cost_ratio
from rheotheory.decode.engine import reads_features, target_samples
from rheotheory.decode.backends.smollm import SMOL_PROMPTS
from rheotheory.decode.backends.smollm_pair import load_smollm2

SEED = 777  # the held-out samples' seed (training used 20261130 and 20261131)


@torch.inference_mode()
def acceptance(pair, seqs, starts, T: float, sparse_k: int | None) -> float:
    """Mean of sum_v min(p, q) over the positions ``start - 1 ..`` of each sequence."""
    tot, n = 0.0, 0
    target, draft = pair.target, pair.draft
    for seq, s in zip(seqs, starts):
        x = torch.tensor(seq)[None]
        if reads_features(draft):
            logits, feats = target._pass(x, torch.arange(len(seq)), None, None, tuple(draft.cfg.feature_layers))
            cache = draft.new_cache()
            before = torch.cat([feats[0, :1] * 0, feats[0, :-1]])
            ql = draft.catch_up(cache, x[0], before)  # row i: q of x_{i+1}
        else:
            logits, ql = target(x), draft(x)[0]
        p = torch.softmax(logits[0].double() / T, dim=-1)[s - 1:-1]
        z = ql.double()[s - 1:-1] / T
        if sparse_k is not None:
            kth = z.topk(sparse_k, dim=-1).values[:, -1:]
            z = z.masked_fill(z < kth, float("-inf"))
        q = torch.softmax(z, dim=-1)
        tot += float(torch.minimum(p, q).sum())
        n += p.shape[0]
    return tot / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--drafts", default="int4,layers:8,head")
    ap.add_argument("--samples", type=int, default=2, help="samples per prompt")
    ap.add_argument("--tokens", type=int, default=64, help="new tokens per sample")
    ap.add_argument("--temperatures", default="1,0.5")
    ap.add_argument("--repeats", type=int, default=5, help="timings of the cost ratio (median)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=None, metavar="JSON", help="also write the table and its rows to this file")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    base = load_smollm2(draft="layers:1")
    gen = torch.Generator().manual_seed(SEED)
    seqs, starts = target_samples(base.target, [base.encode(t) for t in SMOL_PROMPTS], args.samples, args.tokens, gen)
    n_pos = sum(len(s) - st + 1 for s, st in zip(seqs, starts)) - len(seqs)
    temps = [float(t) for t in args.temperatures.split(",")]
    print(f"held-out target samples: {len(seqs)} ({args.samples} per prompt x {len(SMOL_PROMPTS)} prompts, "
          f"{args.tokens} tokens, T = 1, seed {SEED}); {n_pos} positions")
    head = f"{'draft':<16} " + " ".join(f"{'accept T=' + format(t, 'g'):>13}" for t in temps)
    table = [head + f" {'draft ms':>9} {'target ms':>10} {'cost':>6}"]
    rows = []
    print(head + f" {'draft ms':>9} {'target ms':>10} {'cost':>6}  description")
    for spec in args.drafts.split(","):
        pair = load_smollm2(draft=spec)
        variants = [(spec, None)] + ([(f"{spec} top-128", 128)] if reads_features(pair.draft) else [])
        times = [cost_ratio(pair) for _ in range(args.repeats)]
        t_t = statistics.median(t for t, _, _ in times)
        t_d = statistics.median(d for _, d, _ in times)
        for name, k in variants:
            acc = [acceptance(pair, seqs, starts, T, k) for T in temps]
            line = f"{name:<16} " + " ".join(f"{a:>13.3f}" for a in acc) + \
                f" {t_d * 1e3:>9.2f} {t_t * 1e3:>10.2f} {t_d / t_t:>6.3f}"
            print(line + f"  {pair.manifest['draft']}")
            table.append(line)
            rows.append(dict(draft=name, description=pair.manifest["draft"], sparse_top_k=k,
                             acceptance={format(T, "g"): a for T, a in zip(temps, acc)},
                             draft_seconds=t_d, target_seconds=t_t, cost=t_d / t_t))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"samples": len(seqs), "positions": n_pos, "seed": SEED, "tokens": args.tokens,
                       "threads": args.threads, "table": table, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
