"""``rheo audit --engine sglang``: SGLang 0.5.23's chain / block verification kernel and its CPU
engine's verify choice under Triton's interpreter (rheotheory.audit.engines.sglang).

The tests that run SGLang's code need Triton and SGLang's source (``pip install --no-deps
sglang==0.5.23``, or ``RHEO_SGLANG_SOURCE`` set to its wheel); each skips where they are absent
(CI installs neither). Statistical tests state alpha, seed and N.
"""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest

from rheotheory.audit import LOSSLESS, LOSSY, run_audit
from rheotheory.cli import main
from rheotheory.errors import RheoError

ALPHA = 0.01
CPU = "CPU engine's verify choice at T=1, k=2"


def _sglang():
    """The adapter, or a skip when Triton or SGLang's source is absent."""
    pytest.importorskip("torch")
    if importlib.util.find_spec("triton") is None:
        pytest.skip("triton is not installed (extra [sglang])")
    from rheotheory.audit.engines import sglang

    try:
        sglang._source(warn=False)
    except RheoError as e:
        pytest.skip(f"SGLang's source is not available: {e}")
    return sglang


def _audit(sglang, names, planted, runs, seed=0):
    return run_audit(f"sglang {planted}", sglang.settings(planted=planted, only=names), runs, ALPHA, seed)


def test_kernel_not_rejected_and_companions_rejected():
    """chain_speculative_sampling_triton on "token k=2 ties" and "block k=3 ties" (L = k + 2),
    alpha 0.01, seed 0, N = 300 runs per setting: not rejected; the planted companions coin-zero
    and swapped-residual, through the same kernel, rejected at the same N."""
    sglang = _sglang()
    names = ["token k=2 ties", "block k=3 ties"]
    real = _audit(sglang, names, None, 300)
    assert real.verdict == LOSSLESS, real.summary()
    for planted in ("coin-zero", "swapped-residual"):
        res = _audit(sglang, names, planted, 300)
        assert res.verdict == LOSSY, res.summary()


def test_block_verification_residual_and_its_token_level_companion():
    """Block verification on the laws where its prefix-scaled residual matters most (k = 4,
    L = 6), alpha 0.01, seed 0, N = 600: the kernel is not rejected; with the token-level residual
    (block-token-residual, vllm-ascend #7807; exact TV 0.162 of the law of 6 tokens) it is."""
    sglang = _sglang()
    names = ["block k=4 scaled residual (fixed laws)"]
    real = _audit(sglang, names, None, 600)
    assert real.verdict == LOSSLESS, real.summary()
    res = _audit(sglang, names, "block-token-residual", 600)
    assert res.verdict == LOSSY, res.summary()
    assert [s.name for s in sglang.settings(planted="block-token-residual")] == [
        n for n, c in sglang.SETTINGS.items() if c.block]


def test_the_cpu_engine_verifies_greedily_at_temperature_one():
    """SGLang's own _verify_uses_greedy chooses greedy verification for the CPU engine at T = 1
    (and the sampling kernel on CUDA); following it, every run is the target's arg-max path, so the
    law test rejects it (alpha 0.01, seed 0, N = 100): the known lossy path, reproduced."""
    sglang = _sglang()
    uses_greedy = sglang.load()["uses_greedy"]
    assert uses_greedy(**sglang.CPU_ENGINE) is True
    assert uses_greedy(**dict(sglang.CPU_ENGINE, is_cpu=False)) is False
    s = sglang.settings(only=[CPU])[0]
    assert s.detail["path"] == "greedy"
    assert s.detail["dtype"].startswith("float32")  # the dtype the engine's kernels ran in, recorded
    runs = s.sample(100, 0)
    path = ()
    for _ in range(s.length):
        path += (int(np.argmax(s.laws([path])[0])),)
    assert set(runs) == {path}
    res = run_audit("sglang cpu", [s], 100, ALPHA, 0)
    assert res.verdict == LOSSY and res.p_value < 1e-10, res.summary()


def test_sglang_code_runs_without_importing_sglang():
    sglang = _sglang()
    code = sglang.load()
    assert code["chain"].__code__.co_filename.endswith("sglang/kernels/ops/speculative/reject_sampling.py")
    assert "sglang" not in sys.modules and not any(m.startswith("sglang.") for m in sys.modules)


def test_planted_kernels_are_edited_copies_and_the_real_one_is_not():
    sglang = _sglang()
    real, planted = sglang.load(), sglang.load("block-token-residual")
    assert real["chain"] is not planted["chain"]
    assert real["chain"].__code__.co_filename.endswith("reject_sampling.py")
    assert planted["chain"].__code__.co_filename.endswith("reject_sampling.py [planted]")


def test_runs_are_reproducible_from_the_seed():
    sglang = _sglang()
    s = sglang.settings(only=["block k=2 temperature 1.5"])[0]
    a, b, c = s.sample(30, 0), s.sample(30, 0), s.sample(30, 1)
    assert a == b and a != c and all(len(z) == 4 for z in a)


def test_an_unknown_planted_companion_is_refused_before_anything_loads():
    """A misspelt companion must not load SGLang's unedited kernel under the companion's name (its
    audit would then clear a "planted" bug): load() refuses it, naming the companions, before it
    looks for Triton or SGLang's source."""
    from rheotheory.audit.engines import sglang

    with pytest.raises(RheoError, match="unknown planted companion 'swaped-residual' of sglang; one of coin-zero"):
        sglang.load.__wrapped__("swaped-residual")


def test_a_missing_triton_is_one_line_naming_the_extra(monkeypatch, capsys):
    from rheotheory.audit.engines import sglang

    monkeypatch.setitem(sys.modules, "triton", None)  # NOTE: simulated absence
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(sglang, "load", sglang.load.__wrapped__)
    code = main(["audit", "--engine", "sglang", "--runs", "20", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert 'pip install -e ".[sglang]"' in err and "triton==3.9.0" in err


def test_missing_sglang_source_is_one_line_naming_how_to_get_it(monkeypatch, capsys, tmp_path):
    pytest.importorskip("torch")
    if importlib.util.find_spec("triton") is None:
        pytest.skip("triton is not installed (extra [sglang])")
    from importlib import metadata

    from rheotheory.audit.engines import sglang

    monkeypatch.setattr(sglang, "load", sglang.load.__wrapped__)
    monkeypatch.delenv(sglang.ENV, raising=False)

    def absent(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "distribution", absent)
    assert main(["audit", "--engine", "sglang", "--runs", "20", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert "sglang not found: set RHEO_SGLANG_SOURCE" in err and "pip install --no-deps sglang==0.5.23" in err
