"""Rebuild the built-in character-level model pair (rheotheory/data/tiny_*.safetensors).

Usage: python3 scripts/train_tiny_pair.py --out DIR [--draft-only] [--overwrite-shipped]

Writes tiny_target.safetensors, tiny_draft.safetensors and tiny_pair.json into ``--out`` (a
folder; required). The package's own folder (rheotheory/data, the shipped weights every test and
README number depends on) is refused unless ``--overwrite-shipped`` is given.

Deterministic on one CPU thread (about 45 minutes on an idle core: the target, then the draft
distilled from it); ``--draft-only`` keeps the target in ``--out`` and retrains the draft (about
15 minutes). The manifest tiny_pair.json records the corpus hash, configurations, seed, final
losses and the draft's validation acceptance.
"""

import argparse
from pathlib import Path

import rheotheory
from rheotheory.decode.backends.builtin_train import TrainConfig, train_pair

#: Optimiser steps: the target costs ~0.45 s/step on one idle thread, the distilled draft ~0.16 s/step
#: (its teacher's forward pass included).
TARGET_STEPS = 3000
DRAFT_STEPS = 6000
#: Weight of the target's soft labels in the draft's loss (1: pure distillation, see train_model).
DRAFT_DISTILL = 1.0

#: Where the shipped pair lives: rheotheory/data in this source tree and in the imported package.
SHIPPED = Path(__file__).resolve().parents[1] / "rheotheory" / "data"
SHIPPED_DIRS = {SHIPPED.resolve(), (Path(rheotheory.__file__).parent / "data").resolve()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, metavar="DIR", help="folder to write the pair and its manifest into")
    ap.add_argument("--draft-only", action="store_true", help="keep the target in --out, retrain the draft")
    ap.add_argument("--overwrite-shipped", action="store_true",
                    help=f"allow --out to be the package's shipped weights folder ({SHIPPED})")
    args = ap.parse_args()
    if Path(args.out).resolve() in SHIPPED_DIRS and not args.overwrite_shipped:
        ap.error(f"--out {args.out!r} holds the shipped weights; give another folder or --overwrite-shipped")
    train_pair(args.out, TrainConfig(steps=TARGET_STEPS), TrainConfig(steps=DRAFT_STEPS, distill=DRAFT_DISTILL),
               draft_only=args.draft_only)


if __name__ == "__main__":
    main()
