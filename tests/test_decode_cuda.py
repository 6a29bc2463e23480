"""The same decoding code on a GPU: greedy agrees with the CPU, the lossless check passes and its
biased companion fails. Skipped cleanly where CUDA is not available (run by benchmarks/gpu_check.sh)."""

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

from rheotheory.decode.backends.builtin import load_builtin_pair  # noqa: E402
from rheotheory.decode.evaluation.checks import lossless_test  # noqa: E402
from rheotheory.testing.mutants import ot_skip_residual  # noqa: E402
from rheotheory.decode.engine import AUTOREGRESSIVE, DecodeConfig, decode  # noqa: E402
from rheotheory.methods import make_method  # noqa: E402

#: Same settings as the CPU lossless tests (tests/test_decode_engine.py).
ALPHA = 1e-3
SEED = 20260601
N_PER_PROMPT = 400
PROMPTS = ("def fib(", "import ")
SMALL_RHEO = make_method("rheo", top_k=2, depth=2, budget=4)


@pytest.fixture(scope="module")
def gpu_pair():
    return load_builtin_pair("cuda", dtype=torch.float64)


@pytest.mark.parametrize("method", [make_method("eagle", top_k=4, depth=5, budget=16),
                                    make_method("rheo", top_k=4, depth=5, budget=16), make_method("chain", depth=4)],
                         ids=["eagle", "rheo", "chain"])
def test_cuda_greedy_matches_cpu_autoregressive(gpu_pair, method):
    cpu = load_builtin_pair("cpu", dtype=torch.float64)
    cfg = DecodeConfig(temperature=0.0, max_new_tokens=60)
    prompt = cpu.encode("def fib(")
    ref = decode(cpu.target, cpu.draft, prompt, AUTOREGRESSIVE, cfg, torch.Generator().manual_seed(0))
    res = decode(gpu_pair.target, gpu_pair.draft, prompt, method, cfg, torch.Generator().manual_seed(0))
    assert res.tokens == ref.tokens


def test_cuda_lossless_first_two_tokens(gpu_pair):
    res = lossless_test(gpu_pair, PROMPTS, SMALL_RHEO, DecodeConfig(temperature=1.0), N_PER_PROMPT, SEED)
    assert not res.rejects(ALPHA), f"chi2 = {res.statistic:.1f}, df = {res.df}, p = {res.p_value:.3g}"


def test_cuda_biased_verifier_is_rejected(gpu_pair):
    res = lossless_test(gpu_pair, PROMPTS, SMALL_RHEO, DecodeConfig(temperature=1.0), N_PER_PROMPT, SEED,
                        verifier=ot_skip_residual)
    assert res.rejects(ALPHA), f"planted bug not caught: chi2 = {res.statistic:.1f}, df = {res.df}"


def test_cuda_transformers_target_with_an_eagle3_head_is_greedy(tmp_path):
    """docs/guide/gpu.md's path on CUDA: a tiny transformers Llama as the target and a tiny EAGLE-3
    head in the public format as the draft (float32, so that no bf16 rounding makes a near-tie),
    greedy RheoSampling equals the target's greedy decoding token for token."""
    pytest.importorskip("transformers")
    from test_gpu_page import make_folders

    from rheotheory.decode.backends.transformers_lm import load_hf_pair

    folders = make_folders(tmp_path)
    pair = load_hf_pair(folders["TARGET"], folders["HEAD"], device="cuda")
    cfg_dec = DecodeConfig(temperature=0.0, max_new_tokens=24)
    prompt = list(range(3, 20))
    ref = decode(pair.target, None, prompt, AUTOREGRESSIVE, cfg_dec, torch.Generator().manual_seed(0)).tokens
    got = decode(pair.target, pair.draft, prompt, make_method("rheo", top_k=2, depth=3, budget=6), cfg_dec,
                 torch.Generator().manual_seed(1)).tokens
    assert got == ref
