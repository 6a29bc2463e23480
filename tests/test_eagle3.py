"""EAGLE-3 heads in their public format (rheotheory.decode.heads.eagle3), checked against code nobody
here wrote: SpecForge's ``LlamaForCausalLMEagle3`` (an optional test extra, installed with
``pip install --no-deps specforge==0.2.0``; the cross-check skips without it).

The cross-check: a tiny random SpecForge head (hidden 64, 4 query and 2 key/value heads, vocabulary
128, draft vocabulary 32, a random d2t) is saved in both weight files, loaded by rheotheory, and
both run the same three-step chain from a 7-token context: SpecForge through its own
training-time-test path (``backbone`` with ``cache_hidden``, the way it trains), rheotheory through
the engine's back-end calls (``catch_up`` then ``extend`` node by node). The draft logits must
agree to 1e-4 (float32; the largest difference seen is printed) at every step.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch
from torch import nn

from rheotheory.decode.heads.eagle3 import (Eagle3Head, default_layer_ids, feature_layers_of, is_eagle3_dir, load_eagle3,
                                      save_eagle3)
from rheotheory.decode.heads.draft_head import HeadConfig
from rheotheory.errors import InstanceError

V, VD, H, L = 128, 32, 64, 8
TOL = 1e-4


def _config(**over):
    c = dict(hidden_size=H, num_attention_heads=4, num_key_value_heads=2, head_dim=16, intermediate_size=128,
             vocab_size=V, draft_vocab_size=VD, rms_norm_eps=1e-6, rope_theta=10000.0, max_position_embeddings=256,
             hidden_act="silu", pretraining_tp=1, num_hidden_layers=1)
    c.update(over)
    return c


def _d2t(seed=0):
    ids = np.sort(np.random.default_rng(seed).choice(V, VD, replace=False))
    return torch.as_tensor(ids - np.arange(VD), dtype=torch.long)


def _specforge_head(seed=0, **over):
    os.environ.setdefault("TORCHDYNAMO_DISABLE", "1")  # NOTE: SpecForge torch.compiles its norms; eager here
    pytest.importorskip("specforge")
    from transformers import LlamaConfig

    from specforge.modeling.draft.llama3_eagle import LlamaForCausalLMEagle3

    torch.manual_seed(seed)
    # NOTE: built from the config, not from_pretrained (which leaves its RoPE buffers non-finite)
    model = LlamaForCausalLMEagle3(LlamaConfig(**_config(**over))).float().eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.randn_like(p) * (0.3 if "norm" not in name else 0.1) + (1.0 if "norm" in name else 0.0))
        model.d2t.copy_(_d2t(seed))
    return model


def _save_raw(model, folder, weights, drop_embed=False, **over):
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    if drop_embed:
        state.pop("embed_tokens.weight")
    if weights == "model.safetensors":
        save_file(state, str(folder / weights))
    else:
        torch.save(state, str(folder / weights))
    (folder / "config.json").write_text(json.dumps(_config(**over)))
    return folder


def _specforge_chain(model, ctx, feats, chain):
    """Draft logits of SpecForge's head along ``chain`` after context ``ctx`` (its training-time test)."""
    from specforge.modeling.draft.llama3_eagle import prepare_decoder_attention_mask

    n = len(ctx)
    shifted = torch.cat([torch.zeros(1, feats.shape[1]), feats[:-1]])[None]  # position j reads feature j - 1
    mask = prepare_decoder_attention_mask(torch.ones(1, n, dtype=torch.bool), (1, n), shifted, 0)
    pos = torch.arange(n)[None]
    cache = [[], []]
    h = model.project_hidden_states(shifted)
    toks, out = list(ctx), []
    for k in range(len(chain) + 1):
        e = model.embed_input_ids(torch.tensor([toks[k:k + n]]))
        h = model.backbone(e, h, cache, mask, pos)
        out.append(model.compute_logits(h)[0, -1])
        if k < len(chain):
            toks.append(chain[k])
    return out


def _rheo_chain(head, ctx, feats, chain):
    shifted = torch.cat([torch.zeros(1, feats.shape[1]), feats[:-1]])
    cache = head.new_cache()
    out = [head.catch_up(cache, torch.tensor(ctx), shifted)[-1]]
    for k, y in enumerate(chain):
        mask = np.ones((1, k + 1), dtype=bool)
        out.append(head.extend(cache, [y], [k], mask=mask, offset=k)[0])
    return out


@pytest.mark.parametrize("weights", ["model.safetensors", "pytorch_model.bin"])
@pytest.mark.parametrize("own_embed", [True, False])
def test_specforge_head_loads_with_the_same_draft_logits(tmp_path, weights, own_embed):
    model = _specforge_head()
    target_embed = model.embed_tokens if own_embed else nn.Embedding(V, H)
    if not own_embed:
        with torch.no_grad():  # the head then reads the target's embedding: give SpecForge the same one
            target_embed.weight.copy_(torch.randn(V, H))
            model.embed_tokens.weight.copy_(target_embed.weight)
    folder = _save_raw(model, tmp_path / "head", weights, drop_embed=not own_embed)
    head, _ = load_eagle3(folder, target_embed, n_layers=L)
    assert head.cfg.feature_layers == (2, L // 2, L - 3)  # EAGLE's default: inputs of blocks 2, L/2, L-3
    g = torch.Generator().manual_seed(1)
    ctx = [int(x) for x in torch.randint(0, V, (7,), generator=g)]
    feats = torch.randn(7, 3 * H, generator=g)
    chain = [int(head.vocab_ids[i]) for i in (3, 17, 30)]
    with torch.no_grad():
        ref = _specforge_chain(model, ctx, feats, chain)
        got = _rheo_chain(head, ctx, feats, chain)
    worst = 0.0
    for r, x in zip(ref, got):
        assert torch.isinf(x).sum() == V - VD  # q = 0 outside the draft vocabulary
        worst = max(worst, float((x[head.vocab_ids] - r).abs().max()))
    print(f"max |draft logit difference| over 4 steps: {worst:.2e}")
    assert worst < TOL


def test_an_exported_head_loads_in_specforge_with_the_same_logits(tmp_path):
    model = _specforge_head(seed=3)
    folder = _save_raw(model, tmp_path / "in", "model.safetensors")
    head, _ = load_eagle3(folder, model.embed_tokens, n_layers=L)
    out = save_eagle3(head, tmp_path / "out")
    from safetensors.torch import load_file

    from specforge.modeling.draft.llama3_eagle import LlamaForCausalLMEagle3
    from transformers import LlamaConfig

    c = json.loads((out / "config.json").read_text())
    again = LlamaForCausalLMEagle3(LlamaConfig(**c)).float().eval()
    missing, unexpected = again.load_state_dict(load_file(str(out / "model.safetensors")), strict=True)
    assert not missing and not unexpected
    g = torch.Generator().manual_seed(2)
    ctx = [int(x) for x in torch.randint(0, V, (5,), generator=g)]
    feats = torch.randn(5, 3 * H, generator=g)
    chain = [int(head.vocab_ids[i]) for i in (0, 9)]
    with torch.no_grad():
        ref = _specforge_chain(again, ctx, feats, chain)
        got = _rheo_chain(head, ctx, feats, chain)
    worst = max(float((x[head.vocab_ids] - r).abs().max()) for r, x in zip(ref, got))
    print(f"exported head, max |draft logit difference|: {worst:.2e}")
    assert worst < TOL


def _own_head(seed=0):
    torch.manual_seed(seed)
    cfg = HeadConfig(hidden=H, n_q_heads=4, n_kv_heads=2, head_dim=16, intermediate=128, rope_theta=10000.0,
                     rms_eps=1e-6, target_layers=L, feature_layers=(2, 4, 5), vocab_size=V, draft_vocab=VD)
    embed = nn.Embedding(V, H)
    head = Eagle3Head(cfg, embed, _d2t(seed))
    with torch.no_grad():
        for p in head.parameters():
            p.normal_(0, 0.3)
    return head.prepare(), embed


def test_a_round_trip_keeps_the_layers_and_logits(tmp_path):
    head, embed = _own_head()
    for weights in ("model.safetensors", "pytorch_model.bin"):
        folder = save_eagle3(head, tmp_path / weights, weights=weights)
        assert is_eagle3_dir(folder)
        c = json.loads((folder / "config.json").read_text())
        # EAGLE's default layers for L = 8 are left to each loader's default (the same layers in all)
        assert "eagle_config" not in c and c["target_num_hidden_layers"] == L
        back, _ = load_eagle3(folder, embed, n_layers=L)
        assert back.cfg.feature_layers == (2, 4, 5)
        feats = torch.randn(4, 3 * H)
        with torch.no_grad():
            a = head.catch_up(head.new_cache(), torch.tensor([1, 2, 3, 4]), feats)
            b = back.catch_up(back.new_cache(), torch.tensor([1, 2, 3, 4]), feats)
        assert torch.equal(a, b)


def test_layers_other_than_the_default_are_named_in_the_config(tmp_path):
    torch.manual_seed(0)
    cfg = HeadConfig(hidden=H, n_q_heads=4, n_kv_heads=2, head_dim=16, intermediate=128, rope_theta=10000.0,
                     rms_eps=1e-6, target_layers=L, feature_layers=(1, 4, 6), vocab_size=V, draft_vocab=VD)
    embed = nn.Embedding(V, H)
    folder = save_eagle3(Eagle3Head(cfg, embed, _d2t()).prepare(), tmp_path / "h")
    c = json.loads((folder / "config.json").read_text())
    assert c["eagle_config"]["eagle_aux_hidden_state_layer_ids"] == [0, 3, 5]
    assert load_eagle3(folder, embed, n_layers=L)[0].cfg.feature_layers == (1, 4, 6)


def test_the_layer_convention():
    assert default_layer_ids(32) == (1, 15, 28)  # SpecForge's ids for Llama-3.1-8B
    assert feature_layers_of({}, 32) == (2, 16, 29)  # EAGLE's inputs of blocks 2, L/2, L-3
    assert feature_layers_of({"eagle_config": {"eagle_aux_hidden_state_layer_ids": [0, 5, 9]}}, 12) == (1, 6, 10)
    with pytest.raises(InstanceError, match="blocks 0..11"):
        feature_layers_of({"eagle_config": {"eagle_aux_hidden_state_layer_ids": [0, 5, 12]}}, 12)


def test_a_head_for_another_target_is_refused_in_one_line(tmp_path):
    head, embed = _own_head()
    folder = save_eagle3(head, tmp_path / "h")
    with pytest.raises(InstanceError, match="vocabulary of 128 tokens; the target has 256"):
        load_eagle3(folder, nn.Embedding(256, H), n_layers=L)
    with pytest.raises(InstanceError, match="width 64; the target's width is 32"):
        load_eagle3(folder, nn.Embedding(V, 32), n_layers=L)
    with pytest.raises(InstanceError, match="made for a target of 8 blocks; the target has 4"):
        load_eagle3(folder, embed, n_layers=4)
    (folder / "model.safetensors").unlink()
    with pytest.raises(InstanceError, match="no EAGLE-3 weights"):
        load_eagle3(folder, embed, n_layers=L)
    c = json.loads((folder / "config.json").read_text())
    c["rope_scaling"] = {"rope_type": "yarn", "factor": 2.0}
    (folder / "config.json").write_text(json.dumps(c))
    torch.save(head.state_for_export(), str(folder / "pytorch_model.bin"))
    with pytest.raises(InstanceError, match="RoPE scaling 'yarn' is not supported"):
        load_eagle3(folder, embed, n_layers=L)


def test_llama3_rope_scaling_matches_transformers():
    transformers = pytest.importorskip("transformers")
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    from rheotheory.decode.heads.eagle3 import _inv_freq

    scaling = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 8192}
    cfg = transformers.LlamaConfig(hidden_size=4096, num_attention_heads=32, rope_theta=500000.0,
                                   rope_scaling=scaling, max_position_embeddings=131072)
    ref, _ = ROPE_INIT_FUNCTIONS["llama3"](cfg, "cpu")
    got = _inv_freq(128, 500000.0, scaling)
    assert torch.allclose(got, ref.float(), rtol=1e-5, atol=0)


@pytest.mark.parametrize("weights,dtype", [("model.safetensors", "float16"), ("pytorch_model.bin", "bfloat16")])
def test_rheo_head_export_writes_a_checkpoint_specforge_loads(tmp_path, weights, dtype, capsys):
    """``rheo head export`` of a trained head (here a random one in EAGLE-3's architecture) writes
    config + weights in the asked file and dtype with the manifest beside; SpecForge's model takes
    the weights with only the embedding missing (the head reads the target's); rheotheory reads it
    back with the logits of the source to the dtype's precision (relative 2^-6)."""
    from rheotheory.cli import main

    head, embed = _own_head(seed=5)
    src = save_eagle3(head, tmp_path / "src")
    (src / "manifest.json").write_text('{"note": "provenance"}\n')
    assert main(["head", "export", str(src), str(tmp_path / "out"), "--weights", weights, "--dtype", dtype]) == 0
    assert "wrote" in capsys.readouterr().out
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == sorted(["config.json", weights, "manifest.json"])
    state = (torch.load(str(out / weights), weights_only=True) if weights.endswith(".bin") else
             __import__("safetensors.torch", fromlist=["load_file"]).load_file(str(out / weights)))
    assert {str(v.dtype) for v in state.values() if v.is_floating_point()} == {f"torch.{dtype}"}
    assert json.loads((out / "config.json").read_text())["target_num_hidden_layers"] == L
    back, _ = load_eagle3(out, embed, n_layers=L)
    feats = torch.randn(4, 3 * H, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        a = head.catch_up(head.new_cache(), torch.tensor([1, 2, 3, 4]), feats)[:, head.vocab_ids]
        b = back.catch_up(back.new_cache(), torch.tensor([1, 2, 3, 4]), feats)[:, head.vocab_ids]
    assert float((a - b).abs().max()) <= 2 ** -6 * float(a.abs().max())
    _specforge_head()  # skips without SpecForge
    from specforge.modeling.draft.llama3_eagle import LlamaForCausalLMEagle3
    from transformers import LlamaConfig

    model = LlamaForCausalLMEagle3(LlamaConfig(**json.loads((out / "config.json").read_text())))
    missing, unexpected = model.load_state_dict({k: v.float() for k, v in state.items()}, strict=False)
    assert missing == ["embed_tokens.weight"] and unexpected == []


def test_rheo_head_refuses_what_it_cannot_export(tmp_path, capsys):
    """One line, exit 2: rheotheory's first head architecture (with the reason), a folder without a
    head, an output folder that already holds one, export without OUT."""
    from rheotheory.cli import main
    from rheotheory.decode.backends.smollm_pair import SMOLLM2_HEAD_DIR

    head, _ = _own_head()
    src = save_eagle3(head, tmp_path / "src")
    cases = [(["head", "export", str(SMOLLM2_HEAD_DIR), str(tmp_path / "x")], "no EAGLE-3 layer reproduces"),
             (["head", "info", str(tmp_path)], "holds no head"),
             (["head", "export", str(src), str(src)], "is the source folder"),
             (["head", "export", str(src)], "needs SRC and OUT")]
    save_eagle3(head, tmp_path / "taken")
    cases.append((["head", "export", str(src), str(tmp_path / "taken")], "already holds a head"))
    for argv, fragment in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and fragment in err, (argv, err)


def test_the_shipped_head_v3_is_a_checkpoint_specforge_loads():
    """Head v3 as shipped (rheotheory/data/smollm2_head_v3): an EAGLE-3 checkpoint for SmolLM2-135M
    (EAGLE's default layers left to each loader's default, float16, no embedding of its own), whose
    every tensor SpecForge's model takes with its shape (only embed_tokens missing: served with the
    target's); rheotheory reads it with the target's depth and runs a 3-step unroll from it."""
    from safetensors.torch import load_file

    from rheotheory.decode.backends.smollm_pair import SMOLLM2_HEAD_V3_DIR
    from rheotheory.decode.heads.eagle3 import describe_head

    info = describe_head(SMOLLM2_HEAD_V3_DIR)
    assert info["hidden_states_indices"] == [2, 15, 27] and info["vocab_size"] == 49152
    assert info["dtype"] == "float16" and not info["own_embedding"] and info["manifest"]
    config = json.loads((SMOLLM2_HEAD_V3_DIR / "config.json").read_text())
    assert "eagle_config" not in config and config["target_num_hidden_layers"] == 30
    manifest = json.loads((SMOLLM2_HEAD_V3_DIR / "manifest.json").read_text())
    assert manifest["arch"] == "eagle3" and manifest["steps"] == 800
    state = load_file(str(SMOLLM2_HEAD_V3_DIR / "model.safetensors"))
    embed = nn.Embedding(49152, 576)
    head, _ = load_eagle3(SMOLLM2_HEAD_V3_DIR, embed, n_layers=30)
    with torch.no_grad():
        outs = head.unrolled(torch.tensor([[1, 2, 3, 4]]), torch.randn(1, 4, 3 * 576), 3)
    assert len(outs) == 3 and all(torch.isfinite(o).all() for o in outs)
    _specforge_head()  # skips without SpecForge
    from specforge.modeling.draft.llama3_eagle import LlamaForCausalLMEagle3
    from transformers import LlamaConfig

    with torch.device("meta"):  # shapes only: 12M parameters need not be allocated
        model = LlamaForCausalLMEagle3(LlamaConfig(**config))
    shapes = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    assert set(shapes) - set(state) == {"embed_tokens.weight"} and set(state) <= set(shapes)
    assert all(shapes[k] == tuple(v.shape) for k, v in state.items())
