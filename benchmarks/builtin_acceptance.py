"""Single-draft acceptance 1 - TV of the built-in pair on text the target samples at T = 1.

For each prompt of ``rheotheory.decode.evaluation.bench.BENCH_PROMPTS``, ``--samples`` continuations of
``--tokens`` tokens are sampled from the target at T = 1 (one ``torch.Generator`` seeded with
``--seed``). At every generated position both models' laws at T = 1 are read with teacher
forcing; the figure is the mean over positions of sum_v min(p(v), q(v)), the probability that one
draft token is accepted. The manifest's ``val_acceptance`` (the same mean over the validation
split of the training text, written by ``scripts/train_tiny_pair.py``) is copied beside it.

    python benchmarks/builtin_acceptance.py --out benchmarks/results/builtin_acceptance.json
"""

from __future__ import annotations

import argparse
import json

import torch

from rheotheory.decode.evaluation.bench import BENCH_PROMPTS
from rheotheory.decode.backends.builtin import load_builtin_pair
from rheotheory.decode.engine import target_samples


@torch.inference_mode()
def acceptance(pair, seqs, starts) -> tuple[float, int]:
    """Mean of sum_v min(p, q) over the generated positions of each sequence, and their number."""
    tot, n = 0.0, 0
    for seq, s in zip(seqs, starts):
        x = torch.tensor(seq)[None]  # [1, L]
        p = torch.softmax(pair.target(x)[0].double(), dim=-1)[s - 1:-1]  # [L - s, V]: laws of x_s..
        q = torch.softmax(pair.draft(x)[0].double(), dim=-1)[s - 1:-1]
        tot += float(torch.minimum(p, q).sum())
        n += p.shape[0]
    return tot / n, n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=4, help="samples per prompt (default 4)")
    ap.add_argument("--tokens", type=int, default=100, help="new tokens per sample (default 100)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, metavar="JSON", help="also write the figures to this file")
    args = ap.parse_args()
    torch.set_num_threads(1)
    pair = load_builtin_pair()
    gen = torch.Generator().manual_seed(args.seed)
    seqs, starts = target_samples(pair.target, [pair.encode(t) for t in BENCH_PROMPTS], args.samples, args.tokens, gen)
    acc, n = acceptance(pair, seqs, starts)
    val = pair.manifest["draft"].get("val_acceptance")
    print(f"single-draft acceptance at T = 1 on {len(seqs)} target samples ({n} positions, seed {args.seed}): "
          f"{acc:.3f}; on the validation split (manifest): {val}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"sampled_text_acceptance": acc, "positions": n, "samples": len(seqs), "tokens": args.tokens,
                       "seed": args.seed, "validation_acceptance": val}, f, indent=1)


if __name__ == "__main__":
    main()
