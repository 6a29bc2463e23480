"""Tree attention and the KV cache give the same laws as plain causal passes over each path; the
numpy copy behind the same model and cache interface gives the torch model's logits."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from rheotheory.decode.backends.tree_lm import (KVCache, ModelConfig, NumpyKVCache, NumpyLM, TinyLM, chain_mask,  # noqa: E402
                                      tree_mask)
from rheotheory.errors import InstanceError  # noqa: E402

#: float64 models: tree/cached and plain passes differ only by summation order.
LOGIT_TOL = 1e-9

CFG = ModelConfig(vocab_size=16, n_layer=2, n_head=2, d_model=16, max_len=32)


def _model(seed=0):
    torch.manual_seed(seed)
    return TinyLM(CFG).double().eval()


def _backend(model, name):
    """The torch model itself or its numpy copy: both implement the same model interface."""
    return NumpyLM(model) if name == "numpy" else model


def _np(logits):
    return np.asarray(logits)  # a CPU tensor or an array


def _path(tokens, parents, i):
    out = []
    while i >= 0:
        out.append(tokens[i])
        i = parents[i]
    return out[::-1]


def test_tree_mask_is_ancestor_closure():
    m = tree_mask([-1, 0, 0, 1, 3])
    expected = np.array([[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [1, 0, 1, 0, 0], [1, 1, 0, 1, 0], [1, 1, 0, 1, 1]],
                        dtype=bool)
    assert np.array_equal(m, expected)
    assert np.array_equal(chain_mask(3), np.tri(3, dtype=bool))


def test_new_cache_matches_the_backend():
    model = _model()
    assert isinstance(model.new_cache(), KVCache) and model.new_cache().k.dtype == torch.float64
    cache = NumpyLM(model).new_cache()
    assert isinstance(cache, NumpyKVCache) and cache.k.dtype == np.float64
    assert cache.k.shape == tuple(model.new_cache().k.shape)  # one layout: [layers, 1, H, capacity, hd]


@pytest.mark.parametrize("backend", ["torch", "numpy"])
@torch.inference_mode()
def test_tree_pass_matches_causal_pass_per_path_and_commit_keeps_path(backend):
    model = _model()
    lm = _backend(model, backend)
    prefix = [3, 1, 4, 1, 5]
    cache = lm.new_cache()
    lm.extend(cache, prefix[:-1], np.arange(4), chain_mask(4))
    cache.commit(4)
    # root = pending token 5; tree: 5 -> {9 -> {2, 7 -> 8}, 6}
    tokens = [5, 9, 6, 2, 7, 8]
    parents = [-1, 0, 0, 1, 1, 4]
    depths = [0, 1, 1, 2, 2, 3]
    logits = _np(lm.extend(cache, tokens, depths, tree_mask(parents)))
    for i in range(len(tokens)):
        ref = model(torch.tensor([prefix[:-1] + _path(tokens, parents, i)]))[0, -1].numpy()
        dev = np.abs(logits[i] - ref).max()
        assert dev <= LOGIT_TOL, f"node {i}: tree logits deviate by {dev:.3g}"
    # keep the accepted path root -> 9 -> 7, then continue with token 8 from the cache alone
    cache.commit([0, 1, 4])
    assert cache.length == 7
    nxt = _np(lm.extend(cache, [8], [0]))
    ref = model(torch.tensor([prefix + [9, 7, 8]]))[0, -1].numpy()
    assert np.abs(nxt[0] - ref).max() <= LOGIT_TOL


@pytest.mark.parametrize("backend", ["torch", "numpy"])
@torch.inference_mode()
def test_layer_by_layer_passes_through_the_scratch_area_match_one_pass(backend):
    """A tree evaluated in two passes (the second at ``offset`` 3, attending to the first through
    the scratch area) gives the one-pass logits; committing a path moves its scratch entries."""
    model = _model(seed=3)
    lm = _backend(model, backend)
    prefix = [3, 1, 4, 1, 5]
    cache = lm.new_cache()
    lm.extend(cache, prefix, np.arange(5), chain_mask(5))
    cache.commit(5)
    # tree 9 -> {2, 7 -> 8} below the cache
    tokens, parents, depths = [9, 2, 7, 8], [-1, 0, 0, 2], [0, 1, 1, 2]
    mask = tree_mask(parents)
    top = _np(lm.extend(cache, tokens[:3], depths[:3], mask[:3, :3]))
    low = _np(lm.extend(cache, tokens[3:], depths[3:], mask[3:, :], offset=3))
    for i, got in enumerate(np.concatenate([top, low])):
        ref = model(torch.tensor([prefix + _path(tokens, parents, i)]))[0, -1].numpy()
        assert np.abs(got - ref).max() <= LOGIT_TOL, f"node {i}"
    cache.commit([0, 2, 3])  # keep 9 -> 7 -> 8, then continue with 6
    assert cache.length == 8
    nxt = _np(lm.extend(cache, [6], [0]))
    ref = model(torch.tensor([prefix + [9, 7, 8, 6]]))[0, -1].numpy()
    assert np.abs(nxt[0] - ref).max() <= LOGIT_TOL


#: Random trees and commits of the back-end agreement test (fixed seed).
AGREEMENT_SEED = 7
AGREEMENT_ROUNDS = 6


@torch.inference_mode()
def test_numpy_copy_agrees_with_torch_on_random_trees_and_commits():
    """Same random tokens, trees (built over several passes), and committed paths on both
    back-ends: float64 logits and cached keys/values agree to summation order."""
    model = _model(seed=5)
    fast = NumpyLM(model)
    rng = np.random.default_rng(AGREEMENT_SEED)
    caches = {"torch": model.new_cache(), "numpy": fast.new_cache()}
    models = {"torch": model, "numpy": fast}
    prompt = rng.integers(0, CFG.vocab_size, 4)
    out = {name: _np(lm.extend(caches[name], prompt, np.arange(4), chain_mask(4))) for name, lm in models.items()}
    assert np.abs(out["torch"] - out["numpy"]).max() <= LOGIT_TOL
    for c in caches.values():
        c.commit(4)
    for _ in range(AGREEMENT_ROUNDS):
        n = int(rng.integers(2, 7))
        parents = [-1] + [int(rng.integers(0, i)) for i in range(1, n)]
        depths = [0] * n
        for i in range(1, n):
            depths[i] = depths[parents[i]] + 1
        tokens = rng.integers(0, CFG.vocab_size, n)
        mask = tree_mask(parents)
        cut = int(rng.integers(1, n + 1))  # first pass: nodes 0..cut-1, second: the rest at offset cut
        for name, lm in models.items():
            got = [_np(lm.extend(caches[name], tokens[:cut], depths[:cut], mask[:cut, :cut]))]
            if cut < n:
                got.append(_np(lm.extend(caches[name], tokens[cut:], depths[cut:], mask[cut:], offset=cut)))
            out[name] = np.concatenate(got)
        assert np.abs(out["torch"] - out["numpy"]).max() <= LOGIT_TOL
        leaf = int(rng.integers(0, n))
        path, j = [], leaf
        while j >= 0:
            path.append(j)
            j = parents[j]
        for c in caches.values():
            c.commit(path[::-1])
        L = caches["torch"].length
        assert caches["numpy"].length == L
        for buf in ("k", "v"):
            diff = np.abs(_np(getattr(caches["torch"], buf)[:, :, :, :L]) - getattr(caches["numpy"], buf)[:, :, :, :L])
            assert diff.max() <= LOGIT_TOL


@torch.inference_mode()
def test_cached_pass_sees_weights_loaded_or_converted_after_first_use():
    model = TinyLM(CFG).float().eval()
    toks = [3, 1, 4]
    model.extend(model.new_cache(), toks, np.arange(3), chain_mask(3))  # first use
    model.load_state_dict(_model(seed=1).state_dict())  # new weights, copied in place
    model.double()  # new dtype
    logits = model.extend(model.new_cache(), toks, np.arange(3), chain_mask(3))
    ref = _model(seed=1)(torch.tensor([toks]))[0]
    assert logits.dtype == torch.float64 and (logits - ref).abs().max().item() <= LOGIT_TOL


@pytest.mark.parametrize("backend", ["torch", "numpy"])
@torch.inference_mode()
def test_context_overflow_is_a_clear_error(backend):
    lm = _backend(_model(), backend)
    cache = lm.new_cache()
    with pytest.raises(InstanceError, match="positions"):
        lm.extend(cache, [1], [CFG.max_len])
    lm.extend(cache, np.arange(CFG.max_len) % CFG.vocab_size, np.arange(CFG.max_len), chain_mask(CFG.max_len))
    cache.commit(CFG.max_len)
    with pytest.raises(InstanceError, match="positions"):
        cache.commit(1)


def test_distillation_trains_toward_the_teacher_and_needs_one():
    from rheotheory.decode.backends.builtin_train import TrainConfig, train_model

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
