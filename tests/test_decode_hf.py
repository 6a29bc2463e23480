"""The Hugging Face back-end (rheotheory.decode.backends.transformers_lm) on randomly initialised tiny Llama, Qwen2 and
GPT-2 models: the tree mask and the depth positions reach transformers' attention, the cache keeps
the accepted path, greedy speculative decoding is greedy decoding, and `rheo decode --target DIR`
runs. Nothing is downloaded: every model and tokenizer is built here and saved to a temporary
directory."""

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from rheotheory.cli import main  # noqa: E402
from rheotheory.decode.engine import AUTOREGRESSIVE, DecodeConfig, decode  # noqa: E402
from rheotheory.decode.backends.transformers_lm import HFLM, load_hf_pair, tree_bias  # noqa: E402
from rheotheory.decode.backends.tree_lm import chain_mask, tree_mask  # noqa: E402
from rheotheory.errors import InstanceError  # noqa: E402
from rheotheory.methods import make_method  # noqa: E402

#: Largest |difference| between float32 logits of a tree pass and of the path run causally.
LOGIT_ATOL = 1e-5
#: Token ids 0..VOCAB-1: '<unk>' then the printable ASCII characters.
VOCAB = 96
#: Standard deviation of the random weights: wide enough that the logits are far from ties.
INIT_STD = 0.2


def tiny_config(family: str, seed: int = 0):
    """A 2-layer config of ``family`` with VOCAB tokens and 128 positions."""
    common = dict(vocab_size=VOCAB, bos_token_id=1, eos_token_id=2, pad_token_id=0, initializer_range=INIT_STD)
    if family == "llama":
        return transformers.LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                                        **common)
    if family == "qwen2":
        return transformers.Qwen2Config(hidden_size=48, intermediate_size=96, num_hidden_layers=2,
                                        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                                        **common)
    if family == "gpt2":
        return transformers.GPT2Config(n_embd=32, n_layer=2, n_head=4, n_positions=128, **common)
    raise ValueError(family)


def tiny_model(family: str, seed: int = 0, attn: str = "sdpa", dtype=torch.float32) -> HFLM:
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(tiny_config(family), attn_implementation=attn)
    return HFLM(model.to(dtype))


def char_tokenizer():
    """A character-level fast tokenizer over '<unk>' + printable ASCII (VOCAB tokens)."""
    from tokenizers import Tokenizer, decoders, models

    vocab = {"<unk>": 0, **{chr(c): c - 31 for c in range(32, 127)}}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))  # no merges: one token per character
    tok.decoder = decoders.Fuse()
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>")


def save(path, family: str, seed: int, tokenizer=True):
    tiny_model(family, seed).model.save_pretrained(path)
    if tokenizer:
        char_tokenizer().save_pretrained(path)
    return str(path)


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    """Saved target (Llama, with the character tokenizer) and draft (Qwen2, without one: the pair
    uses the target's) directories."""
    root = tmp_path_factory.mktemp("hf")
    return save(root / "target", "llama", 0), save(root / "draft", "qwen2", 1, tokenizer=False)


def path_logits(model: HFLM, prefix, tokens, parents, i):
    """Logits after the root-to-node path of node ``i``, run causally without a cache."""
    path, j = [], i
    while j >= 0:
        path.append(tokens[j])
        j = parents[j]
    return model(torch.tensor([list(prefix) + path[::-1]]))[0, -1]


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
@pytest.mark.parametrize("family", ["llama", "qwen2", "gpt2"])
@torch.inference_mode()
def test_tree_pass_equals_each_path_run_causally(family, attn):
    """A random 8-node tree over two passes (the second at scratch offset 3, as the draft builds
    layer by layer), then a commit of one root-to-leaf path and one more pass: each node's logits
    are those of its path run causally. A mask that did not reach attention (siblings seen) or a
    position that ignored the depth would break the equality."""
    model = tiny_model(family, attn=attn)
    rng = np.random.default_rng(7)
    prompt = [int(t) for t in rng.integers(1, VOCAB, 5)]
    parents = [-1, 0, 0, 1, 1, 2, 3, 5]  # parents precede children; layers: [0], [1, 2], [3, 4, 5], [6, 7]
    depths = [0, 1, 1, 2, 2, 2, 3, 3]
    tokens = [int(t) for t in rng.integers(1, VOCAB, len(parents))]
    cache = model.new_cache()
    model.extend(cache, prompt, np.arange(len(prompt)), chain_mask(len(prompt)))
    cache.commit(len(prompt))
    full = tree_mask(parents)
    first = model.extend(cache, tokens[:3], depths[:3], full[:3, :3])
    second = model.extend(cache, tokens[3:], depths[3:], full[3:], offset=3)
    got = torch.cat([first, second])  # [8, V]
    for i in range(len(parents)):
        ref = path_logits(model, prompt, tokens, parents, i)
        assert (got[i] - ref).abs().max().item() < LOGIT_ATOL, (family, attn, i)
    # the accepted path root -> 2 -> 5 -> 7: its keys/values follow the prompt's, in that order
    cache.commit([0, 2, 5, 7])
    assert cache.length == len(prompt) + 4
    after = model.extend(cache, [11, 12, 13], [0, 1, 1], tree_mask([-1, 0, 0]))
    committed = prompt + [tokens[0], tokens[2], tokens[5], tokens[7]]
    for i, ref in enumerate([path_logits(model, committed, [11, 12, 13], [-1, 0, 0], k) for k in range(3)]):
        assert (after[i] - ref).abs().max().item() < LOGIT_ATOL, (family, attn, "after commit", i)


def test_tree_bias_layout():
    """Committed entries always visible; the scratch block follows the boolean mask."""
    bias = tree_bias(np.array([[True, False], [True, True]]), 2, 3, 0, torch.float32, "cpu")
    assert bias.shape == (1, 1, 2, 5)
    assert (bias[0, 0, :, :3] == 0).all() and bias[0, 0, 1, 4] == 0
    assert bias[0, 0, 0, 4] == torch.finfo(torch.float32).min
    assert (tree_bias(None, 2, 3, 1, torch.float32, "cpu") == 0).all()


@pytest.mark.parametrize("family,draft_family", [("llama", "llama"), ("qwen2", "llama"), ("gpt2", "qwen2")])
def test_greedy_speculative_equals_greedy_autoregressive(family, draft_family):
    """float64 weights (no flips on float ties). The same-weights draft accepts long paths (the
    commit of deep paths); a different family's draft is mostly rejected (the emitted tokens)."""
    target = tiny_model(family, 0, dtype=torch.float64)
    draft = tiny_model(draft_family, 0 if draft_family == family else 3, dtype=torch.float64)
    cfg = DecodeConfig(temperature=0.0, max_new_tokens=24)
    prompt = [5, 9, 17, 33]
    ref = decode(target, None, prompt, AUTOREGRESSIVE, cfg, torch.Generator().manual_seed(0)).tokens
    for method in (make_method("chain", depth=3), make_method("rheo", top_k=3, depth=3, budget=8)):
        res = decode(target, draft, prompt, method, cfg, torch.Generator().manual_seed(1))
        assert res.tokens == ref, (family, draft_family, method.describe())
        if draft_family == family:
            assert res.tokens_per_step > 2.0, "a draft equal to the target should accept most of its tree"


def test_cli_decode_with_target_and_draft_directories(dirs, capsys):
    target, draft = dirs
    rc = main(["decode", "--target", target, "--draft", draft, "--prompt", "def f(x):", "--temperature", "0",
               "--max-new-tokens", "8", "--json"])
    assert rc == 0
    d = json.loads(capsys.readouterr().out)
    assert d["steps"] >= 1 and isinstance(d["continuation"], str)
    pair = load_hf_pair(target, draft)
    ref = decode(pair.target, None, pair.encode("def f(x):"), AUTOREGRESSIVE,
                 DecodeConfig(temperature=0.0, max_new_tokens=8), torch.Generator().manual_seed(0)).tokens
    assert d["continuation"] == pair.decode(ref)
    assert pair.manifest["target_family"] == "llama" and pair.manifest["draft_family"] == "qwen2"


def test_cli_bench_with_target_and_draft_directories(dirs, capsys):
    target, draft = dirs
    rc = main(["bench", "--target", target, "--draft", draft, "--methods", "rheo", "--temperatures", "1",
               "--max-new-tokens", "4", "--budget", "4"])
    assert rc == 0
    assert "rheo" in capsys.readouterr().out


def test_load_hf_pair_refuses_different_vocabularies(dirs, tmp_path):
    target, _ = dirs
    other = tmp_path / "other"
    transformers.AutoModelForCausalLM.from_config(
        transformers.LlamaConfig(vocab_size=VOCAB + 4, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                 num_attention_heads=4, num_key_value_heads=2)).save_pretrained(other)
    with pytest.raises(InstanceError, match="shared vocabulary"):  # the output heads differ
        load_hf_pair(target, str(other))
    extra = char_tokenizer()
    extra.add_tokens(["<extra>"])
    extra.save_pretrained(other)
    with pytest.raises(InstanceError, match="different tokenizer vocabularies"):
        load_hf_pair(target, str(other))
    with pytest.raises(InstanceError, match="no tokenizer"):
        load_hf_pair(save(tmp_path / "bare", "gpt2", 0, tokenizer=False), target)
    with pytest.raises(InstanceError, match="the draft directory .* does not exist"):
        load_hf_pair(target, str(tmp_path / "missing"))


def _saved_head(model: HFLM, folder, family: str = "llama"):
    """A draft head made for ``model`` (features of its last block, 48 draft tokens, random
    weights), saved as a head directory whose manifest names ``family``."""
    from rheotheory.decode.backends.smollm import SmolConfig
    from rheotheory.decode.heads.draft_head import DraftHead, HeadConfig, save_head

    c = model.model.config
    cfg = HeadConfig.for_target(SmolConfig.from_hf(c, max_len=128), (c.num_hidden_layers,), 48)
    torch.manual_seed(0)
    head = DraftHead(cfg, model.model.get_input_embeddings(), torch.arange(48))
    save_head(head, folder, {"transformers_model_type": family})
    return str(folder)


def test_load_hf_pair_checks_a_draft_head_against_the_target(dirs, tmp_path):
    """A draft-head directory as the draft is bound to the target with bind_head's checks: a head
    made for this target loads; one made for a target of another depth, vocabulary or family is
    refused with one line (it read the wrong hidden states, or indexed past the embedding)."""
    target_dir, _ = dirs
    ok = load_hf_pair(target_dir, _saved_head(tiny_model("llama"), tmp_path / "ok"))
    assert ok.manifest["draft_family"] == "draft head" and ok.draft.embed is ok.target.embed_tokens
    torch.manual_seed(0)
    deeper = transformers.AutoModelForCausalLM.from_config(transformers.LlamaConfig(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=3, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=128))
    wider = transformers.AutoModelForCausalLM.from_config(transformers.LlamaConfig(
        vocab_size=VOCAB + 8, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=128))
    for folder, match in [(_saved_head(HFLM(deeper), tmp_path / "deeper"), "3 blocks; this target has 2"),
                          (_saved_head(HFLM(wider), tmp_path / "wider"), "104 x 32 embedding; the target has 96"),
                          (_saved_head(tiny_model("llama"), tmp_path / "qwen", "qwen2"), "trained for a qwen2 target")]:
        with pytest.raises(InstanceError, match=match) as err:
            load_hf_pair(target_dir, folder)
        assert "\n" not in str(err.value)


def test_cli_target_flag_errors(dirs, capsys):
    target, _ = dirs
    assert main(["decode", "--target", target, "--max-new-tokens", "2"]) != 0
    assert "--draft DIR" in capsys.readouterr().err
    assert main(["decode", "--dtype", "float16", "--max-new-tokens", "2"]) != 0
    assert "--dtype" in capsys.readouterr().err


def test_an_eagle3_head_drafts_for_a_transformers_target(dirs, tmp_path, capsys):
    """A head in EAGLE-3's public format (rheotheory.decode.heads.eagle3) beside a transformers target:
    found by its config in load_hf_pair and `rheo decode --target --draft`, and as eagle3:DIR;
    greedy, it gives the target's greedy tokens; a head whose layer ids the target lacks is one line."""
    from rheotheory.decode.heads.draft_head import HeadConfig
    from rheotheory.decode.heads.eagle3 import Eagle3Head, save_eagle3

    target_dir, _ = dirs
    cfg = HeadConfig(hidden=32, n_q_heads=4, n_kv_heads=2, head_dim=8, intermediate=64, rope_theta=10000.0,
                     rms_eps=1e-6, target_layers=2, feature_layers=(1, 1, 2), vocab_size=VOCAB, draft_vocab=48)
    torch.manual_seed(0)
    head = Eagle3Head(cfg, None, torch.full((48,), 20, dtype=torch.long), own_embed=True)
    with torch.no_grad():
        for p in head.parameters():
            p.normal_(0, INIT_STD)
    folder = save_eagle3(head, tmp_path / "eagle3", weights="pytorch_model.bin")
    pair = load_hf_pair(target_dir, str(folder))
    assert pair.manifest["draft_family"] == "EAGLE-3 head" and pair.draft.cfg.feature_layers == (1, 1, 2)
    assert pair.draft.vocab_ids.tolist() == list(range(20, 68))
    cfg_dec = DecodeConfig(temperature=0.0, max_new_tokens=12)
    prompt = pair.encode("def f(x):")
    ref = decode(pair.target, None, prompt, AUTOREGRESSIVE, cfg_dec, torch.Generator().manual_seed(0)).tokens
    got = decode(pair.target, pair.draft, prompt, make_method("rheo", top_k=2, depth=2, budget=4), cfg_dec,
                 torch.Generator().manual_seed(1)).tokens
    assert got == ref
    assert main(["decode", "--target", target_dir, "--draft", f"eagle3:{folder}", "--max-new-tokens", "6"]) == 0
    capsys.readouterr()
    c = json.loads((folder / "config.json").read_text())
    c["eagle_config"]["eagle_aux_hidden_state_layer_ids"] = [0, 1, 5]
    (folder / "config.json").write_text(json.dumps(c))
    assert main(["decode", "--target", target_dir, "--draft", str(folder), "--max-new-tokens", "6"]) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if "rheo: error" in line]  # transformers' loading bar aside
    assert len(errors) == 1 and "the target has blocks 0..1" in errors[0] and "Traceback" not in err
