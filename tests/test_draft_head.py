"""The EAGLE-style draft head (rheotheory.decode.heads.draft_head) on randomly initialised tiny Llama
targets: its tree passes are the training unroll, greedy decoding with it is greedy decoding,
decoding with it is lossless (chi-square, with a planted-bug companion), the hand-written SmolLM
exposes the features transformers' model does, and a saved head loads back. Nothing is downloaded."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from rheotheory.decode.evaluation.checks import lossless_test  # noqa: E402
from rheotheory.testing.mutants import ot_skip_residual  # noqa: E402
from rheotheory.decode.heads.draft_head import DraftHead, HeadConfig, load_head, save_head, target_features  # noqa: E402
from rheotheory.decode.engine import AUTOREGRESSIVE, DecodeConfig, decode  # noqa: E402
from rheotheory.decode.backends.transformers_lm import HFLM  # noqa: E402
from rheotheory.decode.backends.tree_lm import KVCache  # noqa: E402
from rheotheory.decode.backends.smollm import SmolConfig, SmolLM  # noqa: E402
from rheotheory.decode.heads.train import (HeadTrainConfig, draft_vocabulary, evaluate_head, extract,  # noqa: E402
                                          init_from_target, train_head)
from rheotheory.errors import InstanceError  # noqa: E402
from rheotheory.methods import make_method  # noqa: E402

VOCAB = 64
LAYERS = 3
FEATURES = (1, 2, 3)  # block 1, block 2, the final normed state
DRAFT_VOCAB = 40
#: Largest |difference| between float32 logits computed two ways.
LOGIT_ATOL = 1e-5
ALPHA = 1e-3


def tiny_llama(seed=0, dtype=torch.float32):
    cfg = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=LAYERS,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                                   initializer_range=0.2, tie_word_embeddings=True, rope_theta=10000.0)
    torch.manual_seed(seed)
    return transformers.AutoModelForCausalLM.from_config(cfg).to(dtype).eval()


def smol_config(model, max_len=128) -> SmolConfig:
    return SmolConfig.from_hf(model.config, max_len=max_len)


def make_head(model, seed=1, vocab_ids=None, dtype=torch.float32):
    torch.manual_seed(seed)
    cfg = HeadConfig.for_target(smol_config(model), FEATURES, DRAFT_VOCAB)
    ids = torch.randperm(VOCAB, generator=torch.Generator().manual_seed(seed))[:DRAFT_VOCAB].sort().values \
        if vocab_ids is None else vocab_ids
    head = DraftHead(cfg, model.get_input_embeddings(), ids)
    with torch.no_grad():
        for p in head.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    return head.to(dtype).prepare()


@torch.inference_mode()
def test_tree_passes_equal_the_training_unroll():
    """catch_up + a depth-0 node + a depth-1 node below it reproduce unroll steps 1, 2, 3 at the
    root and the next two positions; outside the draft vocabulary the logits are -inf (q = 0)."""
    model = tiny_llama()
    head = make_head(model)
    seq = torch.tensor([[5, 9, 17, 33, 2, 41, 7, 12]])
    t = 5  # root position; nodes at t + 1, t + 2
    feats = target_features(model(input_ids=seq, output_hidden_states=True).hidden_states, FEATURES)  # [1, T, F d]
    steps = head.unrolled(seq, feats, 3)
    cache = head.new_cache()
    before = torch.cat([feats[0, :1] * 0, feats[0, :t]])  # features of positions -1 .. t - 1
    root = head.catch_up(cache, seq[0, :t + 1], before)
    ids = head.vocab_ids
    assert (root[-1, ids] - steps[0][0, t]).abs().max() <= LOGIT_ATOL
    d1 = head.extend(cache, [int(seq[0, t + 1])], [0], np.ones((1, 1), dtype=bool), offset=0)
    assert (d1[0, ids] - steps[1][0, t + 1]).abs().max() <= LOGIT_ATOL
    d2 = head.extend(cache, [int(seq[0, t + 2])], [1], np.ones((1, 2), dtype=bool), offset=1)
    assert (d2[0, ids] - steps[2][0, t + 2]).abs().max() <= LOGIT_ATOL
    outside = torch.ones(VOCAB, dtype=torch.bool)
    outside[ids] = False
    assert torch.isinf(d2[0, outside]).all() and torch.isfinite(d2[0, ids]).all()
    # a sibling of the depth-0 node reads the root, not its sibling: same token, same logits
    again = head.extend(cache, [int(seq[0, t + 1])], [0], np.array([[False, False, True]]), offset=2)
    assert (again[0] - d1[0]).abs()[ids].max() <= LOGIT_ATOL


@pytest.mark.parametrize("target_kind", ["hf", "smollm"])
def test_greedy_with_a_head_equals_greedy(target_kind):
    """float64: with a draft head, every tree method reproduces greedy decoding token for token,
    through transformers' model (HFLM) and through the hand-written SmolLM with the same weights."""
    model = tiny_llama(dtype=torch.float64)
    target = HFLM(model) if target_kind == "hf" else smollm_copy(model)
    head = make_head(model, dtype=torch.float64)
    cfg = DecodeConfig(temperature=0.0, max_new_tokens=20)
    prompt = [5, 9, 17, 33]
    ref = decode(target, None, prompt, AUTOREGRESSIVE, cfg, torch.Generator().manual_seed(0)).tokens
    for method in (make_method("chain", depth=3), make_method("eagle", top_k=3, depth=3, budget=8),
                   make_method("rheo", top_k=3, depth=3, budget=8)):
        res = decode(target, head, prompt, method, cfg, torch.Generator().manual_seed(1))
        assert res.tokens == ref, (target_kind, method.describe())


def smollm_copy(model) -> SmolLM:
    """The hand-written SmolLM with a transformers Llama's weights (the GGUF converter's mapping)."""
    smol = SmolLM(smol_config(model))
    state = {k.replace("self_attn.", "").replace("mlp.", ""): v for k, v in model.model.state_dict().items()}
    smol.load_state_dict(state)
    return smol.to(next(model.parameters()).dtype).eval()


@torch.inference_mode()
def test_smollm_features_equal_transformers_hidden_states():
    """extend_features of SmolLM and of HFLM return transformers' hidden_states at FEATURES."""
    model = tiny_llama()
    smol, hf = smollm_copy(model), HFLM(model)
    seq = [5, 9, 17, 33, 2]
    ref = target_features(model(input_ids=torch.tensor([seq]), output_hidden_states=True).hidden_states, FEATURES)[0]
    for lm in (smol, hf):
        cache = lm.new_cache()
        logits, feats = lm.extend_features(cache, seq, np.arange(len(seq)), np.tri(len(seq), dtype=bool), 0, FEATURES)
        assert (feats - ref).abs().max() <= LOGIT_ATOL, type(lm).__name__
        assert (logits - model(input_ids=torch.tensor([seq])).logits[0]).abs().max() <= LOGIT_ATOL


class _Pair:
    def __init__(self, target, draft):
        self.target, self.draft = target, draft

    @staticmethod
    def encode(text):
        return [ord(c) % VOCAB for c in text]


def test_lossless_with_a_draft_head():
    """rheo (K=2, D=2, N=4, OT) with a draft head whose q is 0 outside its draft vocabulary, T = 1:
    alpha = 1e-3, seed 20261130, N = 400 runs x 2 prompts; the planted skip-residual verifier with
    the same alpha, seed and N is rejected."""
    model = tiny_llama()
    pair = _Pair(HFLM(model), make_head(model))
    method = make_method("rheo", top_k=2, depth=2, budget=4)
    cfg = DecodeConfig(temperature=1.0)
    res = lossless_test(pair, ["ab", "xyz"], method, cfg, 400, 20261130)
    assert res.df >= 10
    assert not res.rejects(ALPHA), f"chi2 = {res.statistic:.1f}, df = {res.df}, p = {res.p_value:.3g}"
    bad = lossless_test(pair, ["ab", "xyz"], method, cfg, 400, 20261130, verifier=ot_skip_residual)
    assert bad.rejects(ALPHA), f"planted bug not caught: chi2 = {bad.statistic:.1f}, df = {bad.df}"


def test_training_raises_the_acceptance_and_a_saved_head_loads_back(tmp_path):
    """60 steps of self-distillation on the target's own samples raise the validation acceptance
    (step 1, T = 1) above the untrained head's; save/load keeps the logits to float16 precision."""
    model = tiny_llama()
    for p in model.parameters():
        p.requires_grad_(False)
    g = torch.Generator().manual_seed(3)
    seqs = torch.randint(0, VOCAB, (24, 32), generator=g)
    with torch.no_grad():  # the target's own greedy-ish text: continuations it predicts
        seqs[:, 1:] = model(input_ids=seqs).logits[:, :-1].argmax(-1)
    feats, lse = extract(model, seqs, FEATURES)
    vocab = draft_vocabulary(seqs, VOCAB, DRAFT_VOCAB)
    head = DraftHead(HeadConfig.for_target(smol_config(model), FEATURES, DRAFT_VOCAB), model.get_input_embeddings(),
                     vocab)
    init_from_target(head, model.model.layers[-1], model.model.norm.weight)
    E = model.get_input_embeddings().weight.detach()
    before = evaluate_head(head, E, seqs[:8], feats[:8].float(), lse[:8], 8)["accept_step1"]
    cfg = HeadTrainConfig(feature_layers=FEATURES, draft_vocab=DRAFT_VOCAB, steps=60, batch=4, lr=3e-3, warmup=5)
    hist = train_head(head, seqs[8:], feats[8:], lse[8:], cfg)
    after = evaluate_head(head, E, seqs[:8], feats[:8].float(), lse[:8], 8)["accept_step1"]
    assert len(hist) == 1 and np.isfinite(hist[0])
    assert after > before + 0.05, (before, after)
    save_head(head, tmp_path / "h", {"note": "test"})
    loaded, manifest = load_head(tmp_path / "h", model.get_input_embeddings())
    assert manifest["note"] == "test" and torch.equal(loaded.vocab_ids, head.vocab_ids)
    x = torch.randint(0, VOCAB, (1, 10), generator=g)
    a = head.unrolled(x, feats[:1, :10].float(), 1)[0]
    b = loaded.unrolled(x, feats[:1, :10].float(), 1)[0]
    assert (a - b).abs().max() <= 0.05 * a.abs().max()  # float16 weights


def test_load_head_errors(tmp_path):
    model = tiny_llama()
    with pytest.raises(InstanceError, match="not a draft head"):
        load_head(tmp_path, model.get_input_embeddings())
    head = make_head(model)
    save_head(head, tmp_path / "h", {})
    with pytest.raises(InstanceError, match="embedding"):
        load_head(tmp_path / "h", torch.nn.Embedding(VOCAB + 1, 32))
    with pytest.raises(InstanceError, match="distinct"):
        DraftHead(head.cfg, model.get_input_embeddings(), torch.zeros(DRAFT_VOCAB, dtype=torch.long))
    with pytest.raises(InstanceError, match="feature layers"):
        HeadConfig.for_target(smol_config(model), (0, 9), DRAFT_VOCAB)


def test_a_target_without_features_is_refused():
    from rheotheory.decode.backends.tree_lm import ModelConfig, TinyLM

    model = tiny_llama()
    with pytest.raises(InstanceError, match="hidden states"):
        decode(TinyLM(ModelConfig(vocab_size=VOCAB)), make_head(model), [1, 2, 3], make_method("chain", depth=2), DecodeConfig(),
               torch.Generator())


@torch.inference_mode()
def test_smollm_target_defers_its_output_head():
    """SmolLM's extend_hidden + logits_from equal extend's logits (the engine reads target laws
    row by row from the final states); greedy decoding with a SmolLM target and a SmolLM draft
    (no draft head: no features) is greedy decoding."""
    model = tiny_llama(dtype=torch.float64)
    smol = smollm_copy(model)
    seq, mask = [5, 9, 17, 33, 2], np.tri(5, dtype=bool)
    logits = smol.extend(smol.new_cache(), seq, np.arange(5), mask)
    h, feats = smol.extend_hidden(smol.new_cache(), seq, np.arange(5), mask)
    assert feats is None and (smol.logits_from(h) - logits).abs().max() <= 1e-12
    cfg = DecodeConfig(temperature=0.0, max_new_tokens=16)
    ref = decode(smol, None, [5, 9, 17], AUTOREGRESSIVE, cfg, torch.Generator().manual_seed(0)).tokens
    got = decode(smol, smollm_copy(model), [5, 9, 17], make_method("rheo", top_k=3, depth=3, budget=8), cfg,
                 torch.Generator().manual_seed(1))
    assert got.tokens == ref and got.tokens_per_step > 2.0


@torch.inference_mode()
def test_deferred_head_computes_a_row_with_its_children(monkeypatch):
    """On a CPU the deferred head computes a row together with its first children (one product,
    about the cost of one row at batch 1): with K, D, N = 2, 1, 2 every step reads the head once,
    and decoding (float64, T = 1, the same seed) emits the same tokens as reading row by row."""
    from rheotheory.decode import engine

    model = tiny_llama(dtype=torch.float64)
    smol = smollm_copy(model)
    calls = []
    real = smol.logits_from

    def counted(h):
        calls.append(h.shape[0])
        return real(h)

    monkeypatch.setattr(smol, "logits_from", counted)
    cfg = DecodeConfig(temperature=1.0, max_new_tokens=24)
    method = make_method("rheo", top_k=2, depth=1, budget=2)
    batched = decode(smol, smollm_copy(model), [5, 9, 17], method, cfg, torch.Generator().manual_seed(3))
    assert calls == [3] * len(batched.steps)
    calls.clear()
    monkeypatch.setattr(engine, "CPU_HEAD_ROWS", 1)
    single = decode(smol, smollm_copy(model), [5, 9, 17], method, cfg, torch.Generator().manual_seed(3))
    assert set(calls) == {1} and len(calls) > len(single.steps)
    assert single.tokens == batched.tokens


@torch.inference_mode()
def test_pass_costs_time_a_deferred_head_as_the_engine_computes_it(monkeypatch):
    """``pass_costs`` (what ``--budget auto`` chooses a tree size from) times a SmolLM target's pass
    without its head plus one head product over at most ``CPU_HEAD_ROWS`` rows, as a step runs it."""
    from rheotheory.decode.evaluation.bench import pass_costs
    from rheotheory.decode.engine import CPU_HEAD_ROWS

    smol = smollm_copy(tiny_llama())
    rows = []
    real = smol.logits_from
    monkeypatch.setattr(smol, "logits_from", lambda h: rows.append(h.shape[0]) or real(h))
    out = pass_costs(smol, sizes=(1, 2, 5), context=8, repeats=2)
    assert [n for n, _ in out] == [1, 2, 5] and all(t > 0 for _, t in out)
    assert rows == [1] * 3 + [2] * 3 + [min(5, CPU_HEAD_ROWS)] * 3  # warm-up + 2 timings per size
