"""The decoding loop: greedy equivalence, losslessness with the built-in pair, a planted bug caught."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from rheotheory.decode.evaluation.bench import BENCH_PROMPTS  # noqa: E402
from rheotheory.decode.backends.builtin import load_builtin_pair  # noqa: E402
from rheotheory.decode.evaluation.checks import TESTED_TOKENS, lossless_test, next_token_laws  # noqa: E402
from rheotheory.decode.engine import (AUTOREGRESSIVE, DEFAULT_DRAFT_TOP_K, GREEDY_DRAFT_TEMPERATURE,  # noqa: E402
                                      SPARSE_DRAFT_MIN_VOCAB, DecodeConfig, decode, draft_law, target_law)
from rheotheory.errors import InstanceError, LawError  # noqa: E402
from rheotheory.methods import PRESETS, make_method, resolve  # noqa: E402
from rheotheory.testing.mutants import SkipResidualTraversal, ot_skip_residual  # noqa: E402
from rheotheory.stats import prefix_cells  # noqa: E402

#: Significance level of the chi-square lossless tests (fixed seeds: the outcome is reproducible).
ALPHA = 1e-3
#: Largest |difference| between target laws from a batched and a single float32 pass.
LAW_ATOL = 1e-6
#: Runs per prompt of the default-suite lossless tests, and the prompts used.
N_PER_PROMPT = 400
LOSSLESS_PROMPTS = ("def fib(", "import ")
LOSSLESS_SEED = 20260601

METHODS = {
    "chain": make_method("chain", depth=3),
    "static": make_method("static", budget=8, depth=3),
    "eagle": make_method("eagle", top_k=3, depth=3, budget=8),
    "rheo": make_method("rheo", top_k=3, depth=3, budget=8),
}


#: Small trees for the Monte-Carlo tests: only the first two tokens are checked.
SMALL = {
    "chain": make_method("chain", depth=2),
    "static": make_method("static", budget=5, depth=2),
    "eagle": make_method("eagle", top_k=2, depth=2, budget=4),
    "rheo": make_method("rheo", top_k=2, depth=2, budget=4),
}


@pytest.fixture(scope="module")
def pair():
    """float64 weights: greedy comparisons must not flip on float ties."""
    torch.set_num_threads(1)
    return load_builtin_pair("cpu", dtype=torch.float64)


@pytest.fixture(scope="module")
def pair32():
    torch.set_num_threads(1)
    return load_builtin_pair("cpu", dtype=torch.float32)


def test_builtin_pair_sizes_and_manifest(pair):
    assert 0.8e6 <= pair.target.num_params() <= 1.3e6
    assert 0.08e6 <= pair.draft.num_params() <= 0.2e6
    man = pair.manifest
    assert len(man["corpus"]["sha256"]) == 64 and man["target"]["train"]["seed"] == 0
    # quality floor of the shipped weights (uniform guessing over 128 tokens: ln 128 = 4.85 nats)
    assert man["target"]["val_loss"] < 2.0 and man["draft"]["val_loss"] < 2.2


@pytest.mark.parametrize("name", sorted(METHODS))
def test_greedy_equals_autoregressive_greedy(pair, name):
    cfg = DecodeConfig(temperature=0.0, max_new_tokens=40)
    prompt = pair.encode("def fib(")
    ref = decode(pair.target, pair.draft, prompt, AUTOREGRESSIVE, cfg, torch.Generator().manual_seed(0))
    res = decode(pair.target, pair.draft, prompt, METHODS[name], cfg, torch.Generator().manual_seed(1))
    assert res.tokens == ref.tokens
    assert res.tokens_per_step > 1.0, "greedy drafting should accept something on in-domain text"


#: Sparse-draft k of the built-in pair tests: the draft's mass outside its top 8 is 0.23 after
#: "def fib(" and 0.40 after "import " (T_d = 1), so the truncation changes q materially.
SPARSE_K = 8


@pytest.mark.parametrize("name", sorted(METHODS))
def test_greedy_with_a_sparse_draft_equals_autoregressive_greedy(pair, name):
    """T = 0 with q truncated to the draft's top 2: still greedy decoding, token for token."""
    cfg = DecodeConfig(temperature=0.0, max_new_tokens=40)
    prompt = pair.encode("def fib(")
    ref = decode(pair.target, pair.draft, prompt, AUTOREGRESSIVE, cfg, torch.Generator().manual_seed(0))
    sparse = DecodeConfig(temperature=0.0, max_new_tokens=40, draft_top_k=2)
    res = decode(pair.target, pair.draft, prompt, METHODS[name], sparse, torch.Generator().manual_seed(1))
    assert res.tokens == ref.tokens


def test_draft_law_top_k_is_zero_outside_and_renormalises():
    """Exact: q = 0 outside the k largest logits (ties by smaller id), and on them q is the
    softmax of those logits alone (the full softmax restricted and renormalised)."""
    logits = np.array([[1.0, 3.0, 2.0, 3.0, 2.0, -1.0],
                       [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]])  # [2, 6]; ties at the threshold in both rows
    for T in (1.0, 0.5):
        full = draft_law(logits, DecodeConfig(temperature=T, draft_top_k=None))
        q = draft_law(torch.tensor(logits), DecodeConfig(temperature=T, draft_top_k=3))
        keep = np.array([[False, True, True, True, False, False],  # 3, 3, then the first 2
                         [True, True, True, False, False, False]])  # all equal: ids 0, 1, 2
        assert (q[~keep] == 0).all() and (q[keep] > 0).all()
        assert np.abs(q.sum(axis=1) - 1).max() <= 1e-15
        ref = np.where(keep, full, 0.0)
        assert np.abs(q - ref / ref.sum(axis=1, keepdims=True)).max() <= 1e-15
        # the torch path (topk) and the numpy path (partition) give the same law, ties included
        assert np.abs(q - draft_law(logits, DecodeConfig(temperature=T, draft_top_k=3))).max() <= 1e-15
    same = DecodeConfig(temperature=1.0, draft_top_k=6)  # k >= V: the full law
    assert (draft_law(logits, same) == draft_law(logits, DecodeConfig(draft_top_k=None))).all()


def test_draft_top_k_default_rule_and_bad_values():
    cfg = DecodeConfig()
    assert cfg.draft_k(128) is None and cfg.draft_k(SPARSE_DRAFT_MIN_VOCAB) is None
    assert cfg.draft_k(SPARSE_DRAFT_MIN_VOCAB + 1) == DEFAULT_DRAFT_TOP_K == 128
    assert DecodeConfig(draft_top_k=None).draft_k(49152) is None
    assert DecodeConfig(draft_top_k=8).draft_k(128) == 8 and DecodeConfig(draft_top_k=128).draft_k(128) is None
    for bad in (0, -3, 2.5, True, "all"):
        with pytest.raises(LawError, match="draft top-k"):
            DecodeConfig(draft_top_k=bad)


#: float64 draft keys/values of a tree node against the same token evaluated in a chain.
KV_TOL = 1e-12


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_draft_cache_keeps_the_accepted_path(pair, backend):
    """After each step the draft cache holds the accepted tokens it evaluated while drafting: the
    cache equals a fresh causal pass over the committed text."""
    from rheotheory.decode import engine
    from rheotheory.decode.backends.tree_lm import NumpyLM, chain_mask

    draft = NumpyLM(pair.draft) if backend == "numpy" else pair.draft
    st = engine._State(pair.target, draft, pair.encode("def fib("), torch.device("cpu"))
    stream = engine.UniformStream(torch.Generator().manual_seed(0))
    method = make_method("rheo", top_k=2, depth=4, budget=8)
    reused = 0
    with torch.inference_mode():
        for _ in range(8):
            before = len(st.ctx)
            out, _, _ = engine._tree_step(pair.target, draft, method, st, DecodeConfig(1.0), stream, method.verify)
            reused += st.dcache.length - before  # committed past the root without a catch-up pass
            st.ctx.extend(out)
        L = st.dcache.length
        assert reused > 0 and L < len(st.ctx)
        fresh = draft.new_cache()  # same interface and layout [layers, 1, H, capacity, hd] on both back-ends
        draft.extend(fresh, st.ctx[:L], np.arange(L), chain_mask(L))
        for buf in ("k", "v"):
            diff = np.asarray(getattr(fresh, buf)[:, :, :, :L]) - np.asarray(getattr(st.dcache, buf)[:, :, :, :L])
            assert np.abs(diff).max() <= KV_TOL


def test_target_truncation_and_greedy_law():
    logits = torch.tensor([[1.0, 3.0, 2.0, 3.0]])
    g = target_law(logits, DecodeConfig(temperature=0.0))
    assert g.tolist() == [[0.0, 1.0, 0.0, 0.0]]  # first maximum
    k2 = target_law(logits, DecodeConfig(temperature=1.0, top_k=2))
    assert k2[0, 0].item() == 0.0 and k2[0, 2].item() == 0.0 and abs(k2.sum().item() - 1) <= 1e-15
    nucleus = target_law(torch.tensor([[5.0, 0.0, 0.0, 0.0]]), DecodeConfig(temperature=1.0, top_p=0.5))
    assert nucleus.tolist() == [[1.0, 0.0, 0.0, 0.0]]


def test_bad_decode_input_is_a_clear_error(pair):
    with pytest.raises(LawError):
        DecodeConfig(temperature=-1.0)
    with pytest.raises(InstanceError, match="non-ASCII"):
        pair.encode("d\u00e9f")
    with pytest.raises(InstanceError, match="positions"):
        decode(pair.target, pair.draft, [65] * 250, METHODS["rheo"], DecodeConfig(max_new_tokens=20),
               torch.Generator())


def test_draft_temperature_follows_the_target_or_the_override():
    assert DecodeConfig(temperature=0.0).draft_temperature == GREEDY_DRAFT_TEMPERATURE
    assert DecodeConfig(temperature=0.7).draft_temperature == 0.7
    assert DecodeConfig(temperature=0.0, draft_temp=1.0).draft_temperature == 1.0
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(LawError, match="draft temperature"):
            DecodeConfig(temperature=1.0, draft_temp=bad)


def test_next_token_laws_batch_equals_single_passes(pair32):
    """The exact law behind the lossless test's cells: a batch of continuations gives the laws
    of one pass per continuation, and the cells of the first two tokens partition the pairs."""
    prompt = pair32.encode("def fib(")
    cfg = DecodeConfig(temperature=1.0)
    laws = next_token_laws(pair32.target, prompt, cfg)
    rows = laws([(3,), (40,)])  # [2, V]
    with torch.inference_mode():
        single = [target_law(pair32.target(torch.tensor([prompt + [t]]))[:, -1], cfg)[0].numpy() for t in (3, 40)]
    assert rows.shape == (2, pair32.target.cfg.vocab_size)
    assert np.abs(rows - np.stack(single)).max() <= LAW_ATOL
    cells = prefix_cells(laws, N_PER_PROMPT, TESTED_TOKENS)
    assert abs(cells.cells(TESTED_TOKENS)[1].sum() - 1.0) <= 1e-9


def test_lossless_first_two_tokens(pair32):
    """rheo (K=2, D=2, N=4, OT): alpha = 1e-3, seed LOSSLESS_SEED, N = 400 runs x 2 prompts, T = 1."""
    name = "rheo"
    res = lossless_test(pair32, LOSSLESS_PROMPTS, SMALL[name], DecodeConfig(temperature=1.0),
                        N_PER_PROMPT, LOSSLESS_SEED)
    assert res.df >= 10
    assert res.p_value > ALPHA, f"{name}: chi2 = {res.statistic:.1f}, df = {res.df}, p = {res.p_value:.3g}"


def test_lossless_with_a_draft_temperature_of_its_own(pair32):
    """rheo with T_d = 0.6 != T = 1 (the verifier reads the tempered draft laws it sampled from):
    alpha = 1e-3, seed LOSSLESS_SEED + 2, N = 400 runs x 2 prompts."""
    res = lossless_test(pair32, LOSSLESS_PROMPTS, SMALL["rheo"], DecodeConfig(temperature=1.0, draft_temp=0.6),
                        N_PER_PROMPT, LOSSLESS_SEED + 2)
    assert res.df >= 10
    assert res.p_value > ALPHA, f"chi2 = {res.statistic:.1f}, df = {res.df}, p = {res.p_value:.3g}"


def test_lossless_with_a_sparse_draft(pair32):
    """rheo with q truncated to the draft's top SPARSE_K = 8 logits (the builders and the verifier
    read the same truncated q): alpha = 1e-3, seed LOSSLESS_SEED + 3, N = 400 runs x 2 prompts, T = 1.
    Measured: p = 0.026 (chi2 = 81.9, df = 59); ot_skip_residual with the same q, seed and N: p = 6e-35."""
    res = lossless_test(pair32, LOSSLESS_PROMPTS, SMALL["rheo"], DecodeConfig(temperature=1.0, draft_top_k=SPARSE_K),
                        N_PER_PROMPT, LOSSLESS_SEED + 3)
    assert res.df >= 10
    assert res.p_value > ALPHA, f"chi2 = {res.statistic:.1f}, df = {res.df}, p = {res.p_value:.3g}"


def test_lossless_adaptive_all_sampled_with_traversal(pair32):
    """rheo-adaptive as run at T = 1 (head 0, K=2 D=2 N=4, Traversal Verification through the
    torch engine): alpha = 1e-3, seed LOSSLESS_SEED + 4, N = 400 runs x 2 prompts, T = 1.
    Companion: the same test with the planted traversal bug (rheotheory.testing.mutants) rejects."""
    method = resolve("rheo-adaptive", size=(2, 2, 4)).at_temperature(1.0)
    assert (method.head, method.verifier) == (0, "traversal")
    cfg = DecodeConfig(temperature=1.0)
    res = lossless_test(pair32, LOSSLESS_PROMPTS, method, cfg, N_PER_PROMPT, LOSSLESS_SEED + 4)
    assert res.df >= 10
    assert res.p_value > ALPHA, f"chi2 = {res.statistic:.1f}, df = {res.df}, p = {res.p_value:.3g}"
    bad = lossless_test(pair32, LOSSLESS_PROMPTS, method, cfg, N_PER_PROMPT, LOSSLESS_SEED + 4,
                        verifier=SkipResidualTraversal())
    assert bad.p_value < ALPHA, f"planted bug not caught: chi2 = {bad.statistic:.1f}, df = {bad.df}"


def test_biased_verifier_is_rejected(pair32):
    """Companion: the same test (alpha, seed, N) rejects a verifier that skips the residual."""
    res = lossless_test(pair32, LOSSLESS_PROMPTS, SMALL["rheo"], DecodeConfig(temperature=1.0),
                        N_PER_PROMPT, LOSSLESS_SEED, verifier=ot_skip_residual)
    assert res.p_value < ALPHA, f"planted bug not caught: chi2 = {res.statistic:.1f}, df = {res.df}"


#: Tree size (K, D, N) of the claims-tier tests of every preset.
PRESET_SIZE = (3, 3, 8)
#: Target of the claims-tier lossless tests: T = 0.7 with top-p 0.95 (a truncated target law).
PRESET_CFG = DecodeConfig(temperature=0.7, top_p=0.95)
#: Runs per prompt of the claims-tier lossless tests, over the first three BENCH_PROMPTS
#: (about 10 ms of CPU per run: 18 s per preset).
PRESET_N_PER_PROMPT = 600


def _preset_cases():
    """Every registered preset at PRESET_CFG's temperature, and at T = 1 where the preset runs
    another tree there (rheo-adaptive's all-sampled band with Traversal Verification)."""
    cases = []
    for name in sorted(PRESETS):
        cases.append(pytest.param(name, PRESET_CFG, id=f"{name}-T0.7"))
        if resolve(name, size=PRESET_SIZE).at_temperature(1.0) != resolve(name, size=PRESET_SIZE).at_temperature(0.7):
            cases.append(pytest.param(name, DecodeConfig(temperature=1.0), id=f"{name}-T1"))
    return cases


@pytest.mark.claims
@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_greedy_equals_autoregressive_greedy(pair, name):
    """T = 0: every registered preset at PRESET_SIZE decodes the target's greedy text, token for token."""
    cfg = DecodeConfig(temperature=0.0, max_new_tokens=40)
    prompt = pair.encode("def fib(")
    ref = decode(pair.target, pair.draft, prompt, AUTOREGRESSIVE, cfg, torch.Generator().manual_seed(0))
    res = decode(pair.target, pair.draft, prompt, resolve(name, size=PRESET_SIZE), cfg, torch.Generator().manual_seed(1))
    assert res.tokens == ref.tokens


@pytest.mark.claims
@pytest.mark.parametrize("name,cfg", _preset_cases())
def test_every_preset_is_lossless(pair32, name, cfg):
    """Every registered preset at K, D, N = PRESET_SIZE through the torch engine, the law of the
    first two tokens: alpha = 1e-3, seed LOSSLESS_SEED + 1, N = PRESET_N_PER_PROMPT runs x 3 prompts."""
    method = resolve(name, size=PRESET_SIZE)
    res = lossless_test(pair32, BENCH_PROMPTS[:3], method, cfg, PRESET_N_PER_PROMPT, LOSSLESS_SEED + 1)
    assert res.df >= 20
    assert not res.rejects(ALPHA), f"{name}: chi2 = {res.statistic:.1f}, df = {res.df}, p = {res.p_value:.3g}"


def test_the_preset_cases_cover_the_registry():
    """A preset registered later is in the claims-tier lossless test without editing it."""
    assert {c.values[0] for c in _preset_cases()} == set(PRESETS)
    assert any(c.id == "rheo-adaptive-T1" for c in _preset_cases())


@pytest.mark.claims
def test_every_preset_test_rejects_a_planted_bug(pair32):
    """Companion of test_every_preset_is_lossless (same alpha, seed, N, prompts and PRESET_CFG):
    rheo with the verifier that skips the residual is rejected."""
    res = lossless_test(pair32, BENCH_PROMPTS[:3], resolve("rheo", size=PRESET_SIZE), PRESET_CFG,
                        PRESET_N_PER_PROMPT, LOSSLESS_SEED + 1, verifier=ot_skip_residual)
    assert res.rejects(ALPHA), f"planted bug not caught: chi2 = {res.statistic:.1f}, df = {res.df}"


def test_uniform_stream_pick_inverts_the_cdf_and_skips_zero_weights():
    from rheotheory.decode.engine import UniformStream
    from rheotheory.errors import LawError

    stream = UniformStream(torch.Generator().manual_seed(0))
    w = np.array([0.0, 1.0, 0.0, 3.0, 0.0])  # cumulative 0, 1, 1, 4, 4
    picks = {}
    for u in (0.0, 0.2499, 0.25, 0.9999, 1.0):  # 1.0: u * total rounded up to the total
        stream.next = lambda u=u: u
        picks[u] = stream.pick(w)
    assert picks == {0.0: 1, 0.2499: 1, 0.25: 3, 0.9999: 3, 1.0: 3}
    with pytest.raises(LawError):
        stream.pick(np.zeros(3))
