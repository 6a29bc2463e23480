"""Head training on conversations (rheotheory.decode.heads.train): a run resumed from a checkpoint
equals an uninterrupted one, masks count only real positions, sampled answers are resumable and
stop at a stop token, the draft vocabulary by mass, conversation windows. Tiny random targets."""

import copy

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from test_draft_head import FEATURES, VOCAB, make_head, tiny_llama  # noqa: E402

from rheotheory.decode.heads.train import (HeadTrainConfig, conversation_windows, evaluate_head, extract,  # noqa: E402
                                          pad_rows, sample_chat, train_head, vocabulary_by_mass)

DRAFT_VOCAB = 40


def _data(model, n=12, T=16, seed=3):
    seqs = torch.randint(0, VOCAB, (n, T), generator=torch.Generator().manual_seed(seed))
    feats, lse = extract(model, seqs, FEATURES)
    mask = torch.ones_like(seqs, dtype=torch.bool)
    mask[::2, T // 2:] = False  # every other row: right padding
    return seqs, feats, lse, mask


def test_resumed_training_equals_an_uninterrupted_run():
    model = tiny_llama()
    for p in model.parameters():
        p.requires_grad_(False)
    seqs, feats, lse, mask = _data(model)
    cfg = HeadTrainConfig(feature_layers=FEATURES, draft_vocab=DRAFT_VOCAB, steps=6, batch=3, lr=3e-3, warmup=2)
    saved = []
    straight = make_head(model)
    start = copy.deepcopy(straight.state_dict())
    train_head(straight, seqs, feats, lse, cfg, mask=mask, checkpoint=lambda s: saved.append(copy.deepcopy(s)),
               checkpoint_every_s=0.0)
    assert [s["step"] for s in saved] == [1, 2, 3, 4, 5, 6]
    resumed = make_head(model)
    resumed.load_state_dict(start)
    train_head(resumed, seqs, feats, lse, cfg, mask=mask, resume=saved[2])
    for (k, a), b in zip(straight.state_dict().items(), resumed.state_dict().values()):
        assert torch.equal(a, b), k


def test_masked_positions_are_neither_trained_nor_scored():
    model = tiny_llama()
    for p in model.parameters():
        p.requires_grad_(False)
    seqs, feats, lse, mask = _data(model)
    head = make_head(model)
    E = model.get_input_embeddings().weight.detach()
    got = evaluate_head(head, E, seqs, feats.float(), lse, 8, mask=mask)
    assert got["positions"] == int(mask[:, 1:].sum())
    # what lies behind the mask (the padding) does not change the loss: garbage there, same update
    cfg = HeadTrainConfig(feature_layers=FEATURES, draft_vocab=DRAFT_VOCAB, steps=2, batch=4, lr=3e-3, warmup=1)
    other = seqs.clone()
    other[~mask] = (other[~mask] + 7) % VOCAB
    f2, l2 = extract(model, other, FEATURES)
    a, b = make_head(model), make_head(model)
    train_head(a, seqs, feats, lse, cfg, mask=mask)
    train_head(b, other, f2, l2, cfg, mask=mask)
    for (k, x), y in zip(a.state_dict().items(), b.state_dict().values()):
        assert torch.allclose(x, y, atol=1e-6), k  # NOTE: causal: the padding sits after every real position


def test_sampled_answers_stop_and_resume():
    model = tiny_llama()
    prompts = [[5, 6, 7], [8, 9], [10, 11, 12, 13], [14], [15, 16]]
    stop = {3}
    full = list(sample_chat(model, prompts, 6, seed=11, stop_ids=stop, pad_id=0, batch=2))
    assert [len(b) for b in full] == [2, 2, 1]
    rows = [r for b in full for r in b]
    for p, r in zip(prompts, rows):
        ans = r[len(p):]
        assert r[:len(p)] == p and 1 <= len(ans) <= 6
        assert all(t not in stop for t in ans[:-1]) and (len(ans) == 6 or ans[-1] in stop)
    assert list(sample_chat(model, prompts, 6, seed=11, stop_ids=stop, pad_id=0, batch=2, start=1)) == full[1:]


def test_left_padding_leaves_the_answer_law_unchanged():
    """A prompt's first-answer logits are the same alone and left-padded beside a longer prompt."""
    model = tiny_llama()
    short, long = [5, 6, 7], [8, 9, 10, 11, 12, 13]
    alone = model(input_ids=torch.tensor([short])).logits[0, -1]
    ids = torch.tensor([[0] * 3 + short, long])
    att = torch.tensor([[0] * 3 + [1] * 3, [1] * 6])
    pos = (att.cumsum(1) - 1).clamp(min=0)
    both = model(input_ids=ids, attention_mask=att, position_ids=pos).logits[0, -1]
    assert torch.allclose(alone, both, atol=1e-5)


def test_vocabulary_by_mass_and_padding():
    mass = torch.tensor([0.1, 0.5, 0.0, 0.3, 0.1], dtype=torch.float64)
    ids, covered = vocabulary_by_mass(mass, 3)
    assert ids.tolist() == [0, 1, 3] and covered == pytest.approx(0.9)  # tie 0/4: the smaller id
    x, m = pad_rows([[1, 2, 3], [4]], 4, pad_id=9)
    assert x.tolist() == [[1, 2, 3, 9], [4, 9, 9, 9]] and m.sum().item() == 4


def test_conversation_windows():
    class Tok:
        def apply_chat_template(self, messages, tokenize=False):
            return "".join(f"<{m['role']}>{m['content']}" for m in messages)

        def encode(self, text, add_special_tokens=False):
            return [ord(c) for c in text]

    convs = [{"id": "a", "conversations": [{"from": "human", "value": "x" * 30}, {"from": "gpt", "value": "y" * 30}]},
             {"id": "empty", "conversations": []},
             {"id": "b", "conversations": [{"from": "human", "value": "s"}]},
             {"id": "c", "conversations": [{"from": "human", "value": "z" * 20}]}]
    rows, used = conversation_windows(Tok(), convs, 10, n=5, per_conv=2)
    assert used == ["a", "c"] and rows.shape == (4, 10)  # two windows of a, at most 2 of c (of 2), b too short
    assert "".join(map(chr, rows[0].tolist())) == "<user>xxxx"
