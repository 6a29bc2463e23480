"""Training an EAGLE-3 head in its own architecture (head v3's path) on a randomly initialised tiny
Llama target: its training unroll is its tree passes, training raises its acceptance, it can be
started from a trained rheotheory head, and what it writes loads back with the same logits.
Nothing is downloaded."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from rheotheory.decode.heads.draft_head import DraftHead, HeadConfig  # noqa: E402
from rheotheory.decode.heads.eagle3 import Eagle3Head, load_eagle3, save_eagle3  # noqa: E402
from rheotheory.decode.heads.train import (HeadTrainConfig, draft_vocabulary, evaluate_head, extract,  # noqa: E402
                                          extract_layers, init_eagle3_from, init_from_target, train_head)
from rheotheory.decode.backends.smollm import SmolConfig  # noqa: E402

from test_draft_head import DRAFT_VOCAB, LAYERS, LOGIT_ATOL, VOCAB, tiny_llama  # noqa: E402

#: The fused block outputs (Hugging Face numbering, no final state) and what is extracted for them.
FUSED = (1, 2, 2)
EXT = extract_layers(FUSED, LAYERS)


def _head(model, vocab, seed=1):
    torch.manual_seed(seed)
    cfg = HeadConfig.for_target(SmolConfig.from_hf(model.config, max_len=128), FUSED, DRAFT_VOCAB)
    head = Eagle3Head(cfg, model.get_input_embeddings(), vocab - torch.arange(DRAFT_VOCAB))
    with torch.no_grad():
        head.lm_head.weight.copy_(model.get_input_embeddings().weight[vocab])
    return head


def _data(model, n=24, T=32):
    g = torch.Generator().manual_seed(3)
    seqs = torch.randint(0, VOCAB, (n, T), generator=g)
    with torch.no_grad():  # the target's own greedy text
        seqs[:, 1:] = model(input_ids=seqs).logits[:, :-1].argmax(-1)
    feats, lse = extract(model, seqs, EXT)
    return seqs, feats, lse


def test_extract_layers_appends_the_final_state_once():
    assert EXT == (1, 2, 2, 3)
    assert extract_layers((1, 2, 3), 3) == (1, 2, 3)


@torch.inference_mode()
def test_the_training_unroll_is_the_tree_passes():
    """catch_up + a depth-0 node + a depth-1 node below it reproduce unroll steps 1, 2, 3 (float32,
    |difference| <= LOGIT_ATOL); the extra final-state block of the training features is not read."""
    model = tiny_llama()
    vocab = torch.randperm(VOCAB, generator=torch.Generator().manual_seed(1))[:DRAFT_VOCAB].sort().values
    head = _head(model, vocab)
    with torch.no_grad():
        for p in head.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    head.prepare()
    seq = torch.tensor([[5, 9, 17, 33, 2, 41, 7, 12]])
    t = 5
    feats = extract(model, seq, EXT)[0].float()  # [1, T, 4 d]
    steps = head.unrolled(seq, feats, 3)
    cache = head.new_cache()
    fused = feats[0, :, :3 * head.cfg.hidden]
    before = torch.cat([fused[:1] * 0, fused[:t]])
    root = head.catch_up(cache, seq[0, :t + 1], before)
    ids = head.vocab_ids
    assert (root[-1, ids] - steps[0][0, t]).abs().max() <= LOGIT_ATOL
    d1 = head.extend(cache, [int(seq[0, t + 1])], [0], np.ones((1, 1), dtype=bool), offset=0)
    assert (d1[0, ids] - steps[1][0, t + 1]).abs().max() <= LOGIT_ATOL
    d2 = head.extend(cache, [int(seq[0, t + 2])], [1], np.ones((1, 2), dtype=bool), offset=1)
    assert (d2[0, ids] - steps[2][0, t + 2]).abs().max() <= LOGIT_ATOL
    # the final-state block changes nothing the head reads
    other = feats.clone()
    other[..., 3 * head.cfg.hidden:] = 7.0
    assert torch.equal(head.unrolled(seq, other, 1)[0], steps[0])


def test_training_raises_the_acceptance_and_the_checkpoint_loads_back(tmp_path):
    """60 steps raise the validation acceptance (step 1, T = 1) above the starting head's, its own
    lm_head is trained (the soft labels come from the target's rows, not from it), and the written
    EAGLE-3 checkpoint loads back with the same logits to float16 precision."""
    model = tiny_llama()
    for p in model.parameters():
        p.requires_grad_(False)
    seqs, feats, lse = _data(model)
    vocab = draft_vocabulary(seqs, VOCAB, DRAFT_VOCAB)
    head = _head(model, vocab)
    E = model.get_input_embeddings().weight.detach()
    lm0 = head.lm_head.weight.detach().clone()
    before = evaluate_head(head, E, seqs[:8], feats[:8].float(), lse[:8], 8, temperatures=(0.5, 1.0))
    cfg = HeadTrainConfig(feature_layers=FUSED, draft_vocab=DRAFT_VOCAB, steps=60, batch=4, lr=3e-3, warmup=5)
    hist = train_head(head, seqs[8:], feats[8:], lse[8:], cfg)
    after = evaluate_head(head, E, seqs[:8], feats[:8].float(), lse[:8], 8, temperatures=(0.5, 1.0))
    assert len(hist) == 1 and np.isfinite(hist[0])
    assert after["accept_step1"] > before["accept_step1"] + 0.02, (before, after)
    assert after["accept_step1_T0.5"] > before["accept_step1_T0.5"], (before, after)
    assert not torch.equal(head.lm_head.weight, lm0)
    folder = save_eagle3(head.half(), tmp_path / "v3")
    head.float()
    back, _ = load_eagle3(folder, model.get_input_embeddings(), n_layers=LAYERS)
    assert back.cfg.feature_layers == FUSED and torch.equal(back.vocab_ids, head.vocab_ids)
    x, f = seqs[:1, :10], feats[:1, :10].float()
    a, b = head.unrolled(x, f, 1)[0], back.unrolled(x, f, 1)[0]
    assert (a - b).abs().max() <= 0.05 * a.abs().max()  # float16 weights


@torch.no_grad()
def test_init_from_a_rheotheory_head_keeps_its_draft_close():
    """init_eagle3_from copies the tensors the two architectures share (exactly) and composes the
    rest: the EAGLE-3 head's step-1 draft then accepts more than a random EAGLE-3 head's does
    and within 0.1 of the source head's (first-order composition, measured on the tiny target)."""
    model = tiny_llama()
    seqs, feats, lse = _data(model)
    vocab = draft_vocabulary(seqs, VOCAB, DRAFT_VOCAB)
    src_layers = (1, 2, 3)
    src = DraftHead(HeadConfig.for_target(SmolConfig.from_hf(model.config, max_len=128), src_layers, DRAFT_VOCAB),
                    model.get_input_embeddings(), vocab)
    init_from_target(src, model.model.layers[-1], model.model.norm.weight)
    head = _head(model, vocab)
    random_head = _head(model, vocab, seed=2)
    init_eagle3_from(head, src, seqs[:8], feats[:8].float(), EXT)
    assert torch.equal(head.midlayer.mlp.down_proj.weight, src.layer.down_proj.weight)
    assert torch.equal(head.lm_head.weight, model.get_input_embeddings().weight[vocab])
    E = model.get_input_embeddings().weight.detach()
    cols = torch.cat([torch.arange(EXT.index(i) * 32, (EXT.index(i) + 1) * 32) for i in src_layers])
    got = evaluate_head(head, E, seqs[8:], feats[8:].float(), lse[8:], 8)["accept_step1"]
    ref = evaluate_head(src, E, seqs[8:], feats[8:, :, cols].float(), lse[8:], 8)["accept_step1"]
    rnd = evaluate_head(random_head, E, seqs[8:], feats[8:].float(), lse[8:], 8)["accept_step1"]
    print(f"step-1 acceptance: source {ref:.3f}, composed {got:.3f}, random {rnd:.3f}")
    assert got > rnd and abs(got - ref) <= 0.1
