"""Rebuild the built-in character-level model pair (rheotheory/data/tiny_*.safetensors).

Usage: python3 scripts/train_tiny_pair.py [--out rheotheory/data]

Deterministic on one CPU thread (about 30 minutes on an idle core); the manifest
tiny_pair.json records the corpus hash, configurations, seed and final losses.
"""

import argparse
from pathlib import Path

from rheotheory.decode.train import TrainConfig, train_pair

#: Optimiser steps: the target costs ~0.45 s/step on one idle thread, the draft ~0.08 s/step.
TARGET_STEPS = 3000
DRAFT_STEPS = 3000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "rheotheory" / "data"))
    args = ap.parse_args()
    train_pair(args.out, TrainConfig(steps=TARGET_STEPS), TrainConfig(steps=DRAFT_STEPS))


if __name__ == "__main__":
    main()
