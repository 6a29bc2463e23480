"""Tree attention and the KV cache give the same laws as plain causal passes over each path."""

import pytest

torch = pytest.importorskip("torch")

from rheotheory.decode.models import KVCache, ModelConfig, TinyLM, chain_mask, tree_mask  # noqa: E402
from rheotheory.errors import InstanceError  # noqa: E402

#: float64 models: tree/cached and plain passes differ only by summation order.
LOGIT_TOL = 1e-9

CFG = ModelConfig(vocab_size=16, n_layer=2, n_head=2, d_model=16, max_len=32)


def _model(seed=0):
    torch.manual_seed(seed)
    return TinyLM(CFG).double().eval()


def test_tree_mask_is_ancestor_closure():
    m = tree_mask([-1, 0, 0, 1, 3], "cpu")
    expected = torch.tensor([[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [1, 0, 1, 0, 0], [1, 1, 0, 1, 0], [1, 1, 0, 1, 1]],
                            dtype=torch.bool)
    assert torch.equal(m, expected)


@torch.inference_mode()
def test_tree_pass_matches_causal_pass_per_path_and_commit_keeps_path():
    model = _model()
    prefix = [3, 1, 4, 1, 5]
    cache = KVCache(CFG, "cpu", torch.float64)
    _, k, v = model.extend(cache, torch.tensor(prefix[:-1]), torch.arange(4), chain_mask(4, "cpu"))
    cache.commit(k, v)
    # root = pending token 5; tree: 5 -> {9 -> {2, 7 -> 8}, 6}
    tokens = [5, 9, 6, 2, 7, 8]
    parents = [-1, 0, 0, 1, 1, 4]
    depths = [0, 1, 1, 2, 2, 3]
    logits, k, v = model.extend(cache, torch.tensor(tokens), torch.tensor(depths), tree_mask(parents, "cpu"))
    for i in range(len(tokens)):
        path, j = [], i
        while j >= 0:
            path.append(tokens[j])
            j = parents[j]
        seq = prefix[:-1] + path[::-1]
        ref = model(torch.tensor([seq]))[0, -1]
        dev = (logits[i] - ref).abs().max().item()
        assert dev <= LOGIT_TOL, f"node {i}: tree logits deviate by {dev:.3g}"
    # keep the accepted path root -> 9 -> 7, then continue with token 8 from the cache alone
    cache.commit(k, v, torch.tensor([0, 1, 4]))
    assert cache.length == 7
    nxt, _, _ = model.extend(cache, torch.tensor([8]), torch.tensor([0]), torch.ones(1, 1, dtype=torch.bool))
    ref = model(torch.tensor([prefix + [9, 7, 8]]))[0, -1]
    assert (nxt[0] - ref).abs().max().item() <= LOGIT_TOL


@torch.inference_mode()
def test_cached_pass_sees_weights_loaded_or_converted_after_first_use():
    model = TinyLM(CFG).float().eval()
    toks = torch.tensor([3, 1, 4])
    model.extend(KVCache(CFG, "cpu", torch.float32), toks, torch.arange(3), chain_mask(3, "cpu"))  # first use
    model.load_state_dict(_model(seed=1).state_dict())  # new weights, copied in place
    model.double()  # new dtype
    logits, _, _ = model.extend(KVCache(CFG, "cpu", torch.float64), toks, torch.arange(3), chain_mask(3, "cpu"))
    ref = _model(seed=1)(toks[None])[0]
    assert logits.dtype == torch.float64 and (logits - ref).abs().max().item() <= LOGIT_TOL


@torch.inference_mode()
def test_context_overflow_is_a_clear_error():
    model = _model()
    cache = KVCache(CFG, "cpu", torch.float64)
    with pytest.raises(InstanceError, match="positions"):
        model.extend(cache, torch.tensor([1]), torch.tensor([CFG.max_len]), torch.ones(1, 1, dtype=torch.bool))


@torch.inference_mode()
def test_numpy_copy_matches_torch_passes_layer_by_layer_and_keeps_path():
    """The numpy drafting copy gives the torch model's logits (float64: summation order only)."""
    import numpy as np

    from rheotheory.decode.models import NumpyLM

    model = _model(seed=3)
    fast = NumpyLM(model)
    prefix = [3, 1, 4, 1, 5]
    cache, ncache = KVCache(CFG, "cpu", torch.float64), fast.new_cache()
    ref, k, v = model.extend(cache, torch.tensor(prefix), torch.arange(5), chain_mask(5, "cpu"))
    got = fast.extend(ncache, prefix, np.arange(5), np.tri(5, dtype=bool))
    assert np.abs(got - ref.numpy()).max() <= LOGIT_TOL
    cache.commit(k, v)
    ncache.commit(5)
    # tree 9 -> {2, 7 -> 8} below the cache, evaluated in two layers through the scratch area
    tokens, parents, depths = [9, 2, 7, 8], [-1, 0, 0, 2], [0, 1, 1, 2]
    mask = tree_mask(parents, "cpu")
    ref, _, _ = model.extend(cache, torch.tensor(tokens), torch.tensor(depths), mask)
    top = fast.extend(ncache, tokens[:3], depths[:3], mask[:3, :3].numpy())
    low = fast.extend(ncache, tokens[3:], depths[3:], mask[3:, :].numpy(), offset=3)
    assert np.abs(np.concatenate([top, low]) - ref.numpy()).max() <= LOGIT_TOL
    ncache.commit(0, keep=[0, 2, 3])  # keep 9 -> 7 -> 8, then continue with 6
    assert ncache.length == 8
    nxt = fast.extend(ncache, [6], [0], None)
    ref = model(torch.tensor([prefix + [9, 7, 8, 6]]))[0, -1]
    assert np.abs(nxt[0] - ref.numpy()).max() <= LOGIT_TOL


def test_distillation_trains_toward_the_teacher_and_needs_one():
    from rheotheory.decode.train import TrainConfig, train_model

    cfg = ModelConfig(vocab_size=16, n_layer=1, n_head=2, d_model=16, max_len=16)
    data = torch.randint(0, 16, (4000,), generator=torch.Generator().manual_seed(0))
    tcfg = TrainConfig(steps=60, batch=4, seq_len=16, lr=1e-2, warmup=5, val_batches=4)
    teacher, _ = train_model(cfg, tcfg, data)
    with pytest.raises(InstanceError, match="teacher"):
        train_model(cfg, TrainConfig(steps=1, seq_len=16, distill=1.0), data)
    with pytest.raises(InstanceError, match="distill"):
        train_model(cfg, TrainConfig(steps=1, seq_len=16, distill=1.5), data, teacher=teacher)
    _, hard = train_model(cfg, TrainConfig(**{**tcfg.__dict__, "seed": 1}), data, teacher=teacher)
    _, soft = train_model(cfg, TrainConfig(**{**tcfg.__dict__, "seed": 1, "distill": 1.0}), data, teacher=teacher)
    # same seed, same batches: soft labels pull the student's law toward the teacher's
    assert soft["val_acceptance"] > hard["val_acceptance"]
