"""oneDNN's packed CPU product (rheotheory.decode.backends.cpu_matmul): the same numbers as the default
product up to float rounding, on layers, on the tied output heads and on a whole decode; safe when a
weight changes or a gradient is needed; switched off by RHEO_CPU_MATMUL=default; a bad value is one
clear error. Timings are the benchmark's (benchmarks/forward_timing.py), never a test's."""

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch.nn import functional as F  # noqa: E402

from rheotheory.decode.backends import cpu_matmul  # noqa: E402
from rheotheory.decode.backends.cpu_matmul import Packed, PackedLinear, describe, pack_for_cpu  # noqa: E402
from rheotheory.decode.backends.smollm import SmolConfig, SmolLM  # noqa: E402
from rheotheory.decode.backends.tree_lm import chain_mask  # noqa: E402
from rheotheory.decode.engine import DecodeConfig, decode  # noqa: E402
from rheotheory.decode.heads.draft_head import DraftHead, HeadConfig  # noqa: E402
from rheotheory.errors import InstanceError  # noqa: E402
from rheotheory.methods import make_method  # noqa: E402

pytestmark = pytest.mark.skipif(not cpu_matmul.available(), reason="this PyTorch build has no oneDNN packed product")

#: float32 products of width <= 64 computed two ways differ by summation order only.
ATOL = 1e-5
TINY = SmolConfig(vocab_size=48, n_layer=2, hidden=32, n_q_heads=4, n_kv_heads=2, head_dim=8, intermediate=48, max_len=64)


def tiny_smol(seed=0):
    torch.manual_seed(seed)
    model = SmolLM(TINY).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.3)
    return model


@pytest.fixture(autouse=True)
def onednn(monkeypatch):
    monkeypatch.delenv("RHEO_CPU_MATMUL", raising=False)


def test_packed_linear_equals_the_default_product_on_2d_and_3d_inputs_with_and_without_bias():
    torch.manual_seed(0)
    for bias in (False, True):
        lin = torch.nn.Linear(40, 24, bias=bias)
        ref = copy.deepcopy(lin)
        assert pack_for_cpu(lin) and isinstance(lin, PackedLinear)
        for shape in ((1, 40), (3, 40), (2, 5, 40), (9, 40)):
            x = torch.randn(*shape)
            with torch.no_grad():
                assert (lin(x) - ref(x)).abs().max() <= ATOL


def test_a_changed_weight_is_repacked_and_a_gradient_takes_the_default_path():
    torch.manual_seed(1)
    lin = torch.nn.Linear(16, 8, bias=False)
    pack_for_cpu(lin)
    x = torch.randn(3, 16)
    with torch.no_grad():
        before = lin(x)
        lin.weight.mul_(2.0)  # in place: the packed copy is stale now
        after = lin(x)
    assert (after - 2.0 * before).abs().max() <= ATOL
    xg = torch.randn(3, 16, requires_grad=True)
    lin(xg).sum().backward()  # the weight needs a gradient: F.linear, so both gradients exist
    assert xg.grad is not None and lin.weight.grad is not None
    assert (xg.grad - lin.weight.sum(0).expand(3, 16)).abs().max() <= ATOL


def test_a_packed_model_deep_copies_into_an_independent_model():
    model = tiny_smol()
    pack_for_cpu(model)
    twin = copy.deepcopy(model)
    with torch.no_grad():
        twin.layers[0].q_proj.weight.zero_()
        x = torch.randn(1, 3, TINY.hidden)
        assert model.layers[0].q_proj(x).abs().max() > 0  # the original keeps its own packed weight
        assert twin.layers[0].q_proj(x).abs().max() == 0


@torch.inference_mode()
def test_a_packed_smollm_gives_the_same_logits_and_the_same_greedy_decode():
    """Cached tree passes and the tied head (the ``_head_pack`` slot) agree within rounding, and a
    greedy decode (whose tokens follow argmaxes the rounding cannot flip on this random model)
    emits the same tokens."""
    ref, packed = tiny_smol(), tiny_smol()
    assert pack_for_cpu(packed) and describe(packed) == "onednn-packed" and describe(ref) == "default"
    assert packed._head_pack is not None
    ids = np.arange(12) % TINY.vocab_size
    outs = []
    for m in (ref, packed):
        cache = m.new_cache()
        lg = m.extend(cache, ids, np.arange(12), chain_mask(12))
        h, _ = m.extend_hidden(cache, ids[:4], np.arange(4), chain_mask(4), offset=0)
        outs.append((lg, m.logits_from(h)))
    assert (outs[0][0] - outs[1][0]).abs().max() <= ATOL and (outs[0][1] - outs[1][1]).abs().max() <= ATOL
    cfg = DecodeConfig(temperature=0.0, max_new_tokens=16)
    method = make_method("chain", depth=2)
    runs = [decode(m, m, [1, 2, 3], method, cfg, torch.Generator().manual_seed(0)).tokens for m in (ref, packed)]
    assert runs[0] == runs[1]


@torch.inference_mode()
def test_a_packed_draft_head_drafts_the_same_law():
    target = tiny_smol()
    cfg = HeadConfig.for_target(TINY, (1, 2), 20)
    torch.manual_seed(3)
    heads = []
    for _ in range(2):
        head = DraftHead(cfg, target.embed_tokens, torch.arange(0, 40, 2))
        heads.append(head)
    heads[1].load_state_dict(heads[0].state_dict())
    heads = [h.prepare() for h in heads]
    assert pack_for_cpu(heads[1]) and heads[1]._head_pack is not None
    h = torch.randn(3, TINY.hidden)
    a, b = heads[0]._full_logits(h), heads[1]._full_logits(h)
    assert torch.equal(torch.isinf(a), torch.isinf(b))
    assert (a[~torch.isinf(a)] - b[~torch.isinf(b)]).abs().max() <= ATOL
    heads[1].prepare()  # new rows: the stale packed product is dropped
    assert heads[1]._head_pack is None


def test_default_mode_packs_nothing_and_a_bad_mode_is_one_clear_error(monkeypatch):
    lin = torch.nn.Linear(8, 4)
    monkeypatch.setenv("RHEO_CPU_MATMUL", "default")
    assert not pack_for_cpu(lin) and type(lin) is torch.nn.Linear
    monkeypatch.setenv("RHEO_CPU_MATMUL", "fast")
    with pytest.raises(InstanceError, match="RHEO_CPU_MATMUL must be one of onednn, default"):
        pack_for_cpu(lin)


def test_the_packed_product_called_directly(monkeypatch):
    """Packed called directly: the same product as F.linear on one row and on several, packing its
    weight once; a float64 weight is not packed."""
    w = torch.randn(12, 6)
    p = Packed(w)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(2)  # NOTE: a single row is packed only with several threads
        with torch.no_grad():
            for x in (torch.randn(1, 1, 6), torch.randn(2, 6)):
                assert (p(x) - F.linear(x, w)).abs().max() <= ATOL and p._packed is not None
            packed = p._packed
            p(torch.randn(4, 6))
            assert p._packed is packed  # packed once, not per call
            x = torch.randn(3, 6)
            with cpu_matmul.default_product():
                assert torch.equal(p(x), F.linear(x, w))  # the default product, bit for bit
        torch.set_num_threads(1)
        one = torch.randn(1, 6)
        fresh = Packed(w)
        with torch.no_grad():
            monkeypatch.setattr(cpu_matmul, "_ONE_THREAD_SINGLE_ROW", "default")
            assert torch.equal(fresh(one), F.linear(one, w)) and fresh._packed is None  # one row, one thread, as measured
            monkeypatch.setattr(cpu_matmul, "_ONE_THREAD_SINGLE_ROW", "packed")
            assert (fresh(one) - F.linear(one, w)).abs().max() <= ATOL and fresh._packed is not None
    finally:
        torch.set_num_threads(threads)
    lin64 = torch.nn.Linear(6, 3).double()
    assert not pack_for_cpu(lin64) and type(lin64) is torch.nn.Linear


@pytest.mark.parametrize("slow", ["packed", "default"])
def test_the_one_thread_single_row_product_is_the_faster_one_measured(monkeypatch, slow):
    """calibrate_single_row times a single-row sweep over the model's packed weights both ways and
    keeps the faster: with a clock on which one way is slower, the other is chosen; the thread count
    and torch's global generator are left as they were."""
    model = tiny_smol()
    monkeypatch.setattr(cpu_matmul, "_ONE_THREAD_SINGLE_ROW", "default")
    assert pack_for_cpu(model)
    clock = [0.0]

    def fake_clock():  # NOTE: each call advances by the current way's cost, so a round costs it once
        clock[0] += 2.0 if cpu_matmul._ONE_THREAD_SINGLE_ROW == slow else 1.0
        return clock[0]

    monkeypatch.setattr(cpu_matmul.time, "perf_counter", fake_clock)
    threads, rng = torch.get_num_threads(), torch.get_rng_state()
    chosen = cpu_matmul.calibrate_single_row(model)
    assert chosen == {"packed": "default", "default": "packed"}[slow] == cpu_matmul.single_row_product()
    assert torch.get_num_threads() == threads
    assert torch.equal(torch.get_rng_state(), rng)  # NOTE: loading a model must not move torch's global generator
