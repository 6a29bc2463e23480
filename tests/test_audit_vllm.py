"""``rheo audit --engine vllm``: vLLM 0.33.0's rejection sampler under Triton's interpreter
(rheotheory.audit.engines.vllm).

The tests that run vLLM's code need Triton and vLLM's source (``RHEO_VLLM_SOURCE`` set to the
wheel of ``pip download --no-deps vllm==0.33.0``, or vLLM installed ``--no-deps``); each skips
where they are absent (CI installs neither). Statistical tests state alpha, seed and N.
"""

from __future__ import annotations

import importlib.util
import sys

import pytest

from rheotheory.audit import LOSSLESS, LOSSY, run_audit
from rheotheory.cli import main
from rheotheory.errors import RheoError

ALPHA = 0.01


def _vllm():
    """The adapter, or a skip when Triton or vLLM's source is absent."""
    pytest.importorskip("torch")
    if importlib.util.find_spec("triton") is None:
        pytest.skip("triton is not installed (extra [vllm])")
    from rheotheory.audit.engines import vllm

    try:
        vllm._source(warn=False)
    except RheoError as e:
        pytest.skip(f"vLLM's source is not available: {e}")
    return vllm


def _audit(vllm, names, planted, runs, seed=0):
    return run_audit(f"vllm {planted}", vllm.settings(planted=planted, only=names), runs, ALPHA, seed)


def test_real_path_not_rejected_and_companions_rejected():
    """vLLM's forward and kernels on "k=2 ties" and "k=3 peaked" (L = k + 2 tokens, two or more
    steps each run), alpha 0.01, seed 0, N = 300 runs per setting: not rejected; each planted
    companion (uniform-zero, swapped-residual), through the same forward, rejected at the same N."""
    vllm = _vllm()
    names = ["k=2 ties", "k=3 peaked"]
    real = _audit(vllm, names, None, 300)
    assert real.verdict == LOSSLESS, real.summary()
    for planted in vllm.PLANTED:
        res = _audit(vllm, names, planted, 300)
        assert res.verdict == LOSSY, res.summary()


def test_the_deterministic_draft_path_is_tested_and_its_companion_rejected():
    """draft_probs=None (the arg-max draft; NO_DRAFT_PROBS in both kernels), k = 2, L = 4,
    alpha 0.01, seed 0, N = 300: not rejected; uniform-zero rejected."""
    vllm = _vllm()
    names = ["k=2 no draft probs (arg-max draft)"]
    assert _audit(vllm, names, None, 300).verdict == LOSSLESS
    assert _audit(vllm, names, "uniform-zero", 300).verdict == LOSSY
    assert not vllm.settings(planted="swapped-residual", only=names)  # no draft probabilities to swap


def test_vllm_code_runs_without_importing_vllm():
    vllm = _vllm()
    rs, md = vllm.load()
    assert rs.__file__.endswith("vllm/v1/sample/rejection_sampler.py")
    assert rs.rejection_random_sample_kernel.__class__.__name__ == "InterpretedFunction"
    assert "vllm" not in sys.modules and not any(m.startswith("vllm.") for m in sys.modules)


def test_runs_are_reproducible_from_the_seed_and_span_several_steps():
    vllm = _vllm()
    s = vllm.settings(only=["k=3 mixed batch (greedy, k=1, draft-less neighbours)"])[0]
    a, b, c = s.sample(30, 0), s.sample(30, 0), s.sample(30, 1)
    assert a == b and a != c
    assert all(len(z) == s.length == 5 for z in a)
    assert s.detail["dtype"].startswith("float32")  # the dtype the engine's sampler ran in, recorded


def test_a_missing_triton_is_one_line_naming_the_extra(monkeypatch, capsys):
    from rheotheory.audit.engines import vllm

    monkeypatch.setitem(sys.modules, "triton", None)  # NOTE: simulated absence
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(vllm, "load", vllm.load.__wrapped__)
    code = main(["audit", "--engine", "vllm", "--runs", "20", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert 'pip install -e ".[vllm]"' in err and "triton==3.9.0" in err


def test_missing_vllm_source_is_one_line_naming_how_to_get_it(monkeypatch, capsys, tmp_path):
    pytest.importorskip("torch")
    if importlib.util.find_spec("triton") is None:
        pytest.skip("triton is not installed (extra [vllm])")
    from importlib import metadata

    from rheotheory.audit.engines import vllm

    monkeypatch.setattr(vllm, "load", vllm.load.__wrapped__)
    monkeypatch.setenv(vllm.ENV, str(tmp_path / "vllm-0.33.0-none.whl"))
    assert main(["audit", "--engine", "vllm", "--runs", "20", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "is neither a vllm wheel" in err, err

    monkeypatch.delenv(vllm.ENV)

    def absent(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "distribution", absent)
    assert main(["audit", "--engine", "vllm", "--runs", "20", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert "vllm not found: set RHEO_VLLM_SOURCE" in err and "pip download --no-deps vllm==0.33.0" in err
