"""The transformers adapter of ``rheo audit`` (rheotheory.audit.engines.transformers_generate): the
candidate generators beyond the plain assistant (universal assisted generation, the Gemma 4 assistant,
MTP layers, DFlash), their companions, the findings and their repaired controls, the reproductions.

transformers is an optional engine: every test that runs it skips on its own when it is absent.
The law tests of the published rows (400 or 200 runs per setting, minutes of CPU) are central
claims, run by CI's claims tier (`-m claims`, where a skip fails); the rest run in the default suite.
"""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: Level of every law test here.
ALPHA = 0.01

#: The MTP and DFlash settings (lossless in 5.24.0).
DRAFTERS = ["mtp 2 layers top_k 50", "mtp 2 layers top_k 3", "dflash block 3 top_k 50",
            "dflash block 3 top_k 3"]

#: The settings rejected on the real path (the findings).
FINDINGS = ["universal assisted 2 drafted top_k 50", "gemma4 assistant 2 drafted top_k 50",
            "gemma4 assistant 2 drafted top_k 3"]


def _tg():
    pytest.importorskip("transformers")
    from rheotheory.audit.engines import transformers_generate

    return transformers_generate


def _audit(names, runs, planted=None, seed=0, controls=False):
    tg = _tg()
    from rheotheory.audit import core

    build = tg.controls if controls else tg.settings
    settings = build(planted=planted, only=names)
    assert [s.name for s in settings] == list(names)
    return core.run_audit("transformers", settings, runs, ALPHA, seed)


def _repro(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / "audit_repro" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.claims
def test_mtp_and_dflash_not_rejected():
    """MTP layers (Glm4Moe, 2 layers) and DFlash (block 3) at top_k = 50 and 3: not rejected at
    alpha = 0.01 with N = 400 runs per setting, seed 0 (L = 5: the prefill token, a step, the next)."""
    res = _audit(DRAFTERS, 400)
    assert res.verdict == "lossless", res.summary()
    assert all(s.length == 5 and s.runs == 400 for s in res.settings)


@pytest.mark.claims
@pytest.mark.parametrize("planted, names", [("always-accept", DRAFTERS[::2]), ("raw-q", DRAFTERS[1::2])])
def test_mtp_and_dflash_companions_rejected(planted, names):
    """The same generate calls with every candidate kept (top_k = 50), or with the raw logits returned
    as q while the drafts are sampled after top-k (top_k = 3; transformers #47932), are rejected in each
    setting at alpha = 0.01 with N = 400 runs per setting, seed 0."""
    res = _audit(names, 400, planted=planted)
    assert all(s.p_value < ALPHA / len(names) for s in res.settings), res.summary()


@pytest.mark.claims
def test_findings_rejected():
    """The findings: universal assisted generation with a pruned draft head, and the Gemma 4
    assistant (arg-max drafts, softmax as q) at top_k = 50 and 3, rejected in each setting at alpha =
    0.01 with N = 200 runs per setting, seed 0."""
    res = _audit(FINDINGS, 200)
    assert all(s.p_value < ALPHA / len(FINDINGS) for s in res.settings), res.summary()


@pytest.mark.claims
def test_findings_repaired_not_rejected_and_their_companion_rejected():
    """The findings' controls (the draft vocabulary listed in id order; q the point mass on the Gemma 4
    draft): not rejected at alpha = 0.01 with N = 200 runs per setting, seed 0, and the universal one
    with every candidate kept rejected at the same N."""
    names = list(_tg().CONTROLS)
    res = _audit(names, 200, controls=True)
    assert res.verdict == "lossless", res.summary()
    planted = _audit(names[:1], 200, planted="always-accept", controls=True)
    assert planted.verdict == "lossy", planted.summary()


def test_companions_run_only_where_listed():
    """raw-q runs only the drafters' top_k 3 settings (where top-k cuts); the speculative-sampling
    companions every setting with a drafter, the findings' included, except prompt lookup, which
    transformers verifies by sample-and-match without ``_speculative_sampling`` (there the
    companion would be the real path)."""
    tg = _tg()
    assert [s.name for s in tg.settings(planted="raw-q")] == DRAFTERS[1::2]
    for planted in ("always-accept", "skip-residual"):
        names = [s.name for s in tg.settings(planted=planted)]
        assert names == [n for n in tg.SETTINGS if n not in ("sampling (no assistant)", "prompt lookup k=3")]


def test_new_generators_runs_are_seeded():
    """Every new generator's runs follow the seed (torch's global generator, seeded per setting)."""
    tg = _tg()
    for s in tg.settings(only=FINDINGS[::2] + DRAFTERS[1::2]):
        a, b, c = s.sample(8, 3), s.sample(8, 3), s.sample(8, 4)
        assert a == b and a != c, s.name
        assert all(len(w) == s.length for w in a), s.name


def test_universal_repro_exact_deviation():
    """benchmarks/audit_repro/transformers_universal.py: the pruned columns are written to other target
    tokens than they draft, the first token's exact law is off p (TV > 0.1), 300 runs' first tokens
    fit that law and not p (alpha 0.01, seed 0); listed in id order the law is p; a draft vocabulary
    inside the target's raises AttributeError."""
    _tg()
    repro = _repro("transformers_universal")
    lossy = repro.run(repro.SETTING, runs=300)
    assert lossy["column_drafts"] != lossy["column_written_to"]
    assert lossy["tv"] > 0.1
    assert lossy["p_value_vs_engine_law"] > ALPHA and lossy["p_value_vs_target"] < ALPHA, lossy
    control = repro.run(repro.CONTROL)
    assert control["column_drafts"] == control["column_written_to"]
    assert control["tv"] < 1e-6
    assert repro.subset_vocabulary_error().startswith("AttributeError")


@pytest.mark.claims
def test_gemma4_repro_exact_deviation():
    """benchmarks/audit_repro/transformers_gemma4.py: after each first token y1 (all reached in 300
    runs, seed 0) the second step's first token has the law of a point-mass draft verified against the
    softmax, off p by TV > 0.05 on the two tokens; with q the point mass it is p."""
    _tg()
    repro = _repro("transformers_gemma4")
    for name in repro.SETTINGS:
        r = repro.run(name, 300)
        assert r["all_seen"] and r["tv_of_two_tokens"] > 0.05, r
        assert all(s["p_matches_target_law"] for s in r["steps"])
    control = repro.run(repro.CONTROL, 300)
    assert control["all_seen"] and control["tv_of_two_tokens"] < 1e-6, control


def test_generators_missing_from_transformers_are_left_out(monkeypatch, capsys):
    """On a transformers without a generator's classes its settings are left out, with one warning
    line naming what is missing; the others are audited."""
    tg = _tg()
    monkeypatch.setitem(tg._NEEDS, "gemma4", (("transformers", "NoSuchGemma4Assistant"),))
    got = tg.settings(only=["k=2"] + FINDINGS)
    assert [s.name for s in got] == ["k=2", FINDINGS[0]]
    # NOTE: only the lines about left-out settings are counted: require() also warns once when the
    # installed transformers is not the pinned one, which is not what this test is about.
    err = [line for line in capsys.readouterr().err.strip().splitlines() if "left out" in line]
    assert len(err) == 1 and "transformers.NoSuchGemma4Assistant" in err[0], err


def test_the_ensemble_weight_is_lossy_by_design_with_its_dtype():
    """transformers' DIVERSE assistant_ensemble_weight = 0.5 (k = 2), alpha 0.01, seed 0, N = 200:
    rejected, and reported lossy-by-design naming the option, never lossy; the setting records the
    dtype the models ran in."""
    from rheotheory.audit import LOSSY_BY_DESIGN

    res = _audit(["ensemble weight 0.5 (biased by design)"], 200)
    assert res.verdict == LOSSY_BY_DESIGN, res.summary()
    assert "assistant_ensemble_weight=0.5" in res.summary()
    assert res.settings[0].detail["dtype"] == "float32"
