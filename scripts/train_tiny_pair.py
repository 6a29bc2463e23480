"""Rebuild the built-in character-level model pair (rheotheory/data/tiny_*.safetensors).

Usage: python3 scripts/train_tiny_pair.py [--out rheotheory/data] [--draft-only]

Deterministic on one CPU thread (about 45 minutes on an idle core: the target, then the draft
distilled from it); ``--draft-only`` keeps the target in ``--out`` and retrains the draft (about
15 minutes). The manifest tiny_pair.json records the corpus hash, configurations, seed, final
losses and the draft's validation acceptance.
"""

import argparse
from pathlib import Path

from rheotheory.decode.train import TrainConfig, train_pair

#: Optimiser steps: the target costs ~0.45 s/step on one idle thread, the distilled draft ~0.16 s/step
#: (its teacher's forward pass included).
TARGET_STEPS = 3000
DRAFT_STEPS = 6000
#: Weight of the target's soft labels in the draft's loss (1: pure distillation, see train_model).
DRAFT_DISTILL = 1.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "rheotheory" / "data"))
    ap.add_argument("--draft-only", action="store_true", help="keep the target in --out, retrain the draft")
    args = ap.parse_args()
    train_pair(args.out, TrainConfig(steps=TARGET_STEPS), TrainConfig(steps=DRAFT_STEPS, distill=DRAFT_DISTILL),
               draft_only=args.draft_only)


if __name__ == "__main__":
    main()
