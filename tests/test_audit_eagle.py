"""The EAGLE adapter of ``rheo audit`` (rheotheory.audit.engines.eagle): EAGLE's own ``eagenerate``
at T > 0 on toy trees, its planted companions, its finding, and its refusal without the package.

``eagle-llm`` is an optional engine (installed ``--no-deps``, not in CI's install): every test that
runs it skips on its own when it is absent; the refusal is tested with its absence simulated.
"""

import importlib.util
import sys
from pathlib import Path

import pytest

from rheotheory.cli import main

ROOT = Path(__file__).resolve().parent.parent

#: Level of every law test here.
ALPHA = 0.01

#: The settings at T = 1 without top-p/top-k, where EAGLE's path is lossless.
T1 = ["chain D=2 T=1", "tree 2x2 T=1"]


def _audit(names, runs, planted=None, seed=0):
    pytest.importorskip("eagle.model.ea_model")
    from rheotheory.audit import core
    from rheotheory.audit.engines import eagle

    return core.run_audit("eagle", eagle.settings(planted=planted, only=names), runs, ALPHA, seed)


def test_eagle_at_t1_not_rejected():
    """EAGLE's path at T = 1 on a chain and a 2x2 tree: not rejected at alpha = 0.01 with N = 600
    runs per setting, seed 0 (law of L = depth + 2 = 4 tokens, bonus token and a second step included)."""
    res = _audit(T1, 600)
    assert res.verdict == "lossless", res.summary()
    assert all(s.length == 4 and s.runs == 600 for s in res.settings)


@pytest.mark.parametrize("planted, names", [("always-accept", T1), ("skip-residual", ["chain D=2 T=1"])])
def test_eagle_planted_companions_rejected(planted, names):
    """The same loop with one bug (every child accepted: EAGLE's coin is 0; the residual skipped: op of
    zeros) is rejected at alpha = 0.01 with N = 600 runs per setting, seed 0, where the real path is not."""
    res = _audit(names, 600, planted=planted)
    assert res.verdict == "lossy", res.summary()


def test_eagle_unknown_planted_companion_is_a_clear_error(monkeypatch):
    """A misspelt companion is refused with the project's error (one line from the CLI), naming them;
    the check needs no EAGLE (its presence is simulated)."""
    from rheotheory.audit.engines import eagle

    monkeypatch.setattr(eagle, "require", lambda engine: None)
    from rheotheory.errors import RheoError

    with pytest.raises(RheoError, match="unknown planted companion 'skip-residue' of eagle; one of always-accept"):
        eagle.settings(planted="skip-residue")


def test_eagle_is_lossy_at_other_temperatures_and_top_p():
    """The finding: after a path accepted down to a leaf EAGLE draws from the raw logits. Rejected at
    alpha = 0.01 with N = 1000 runs per setting, seed 0, on the 2x2 tree at T = 0.7 and the chain under
    top_p = 0.8 (where it emits tokens outside the nucleus, probability 0 under the target)."""
    res = _audit(["tree 2x2 T=0.7", "chain D=2 top_p=0.8"], 1000)
    assert res.verdict == "lossy", res.summary()
    assert all(s.p_value < ALPHA / len(res.settings) for s in res.settings), [s.p_value for s in res.settings]


def test_eagle_runs_are_seeded():
    """Both of EAGLE's sources of randomness (Python's random, torch's global generator) follow the seed."""
    pytest.importorskip("eagle.model.ea_model")
    from rheotheory.audit.engines import eagle

    (s,) = eagle.settings(only=["tree 2x2 T=0.7"])
    a, b, c = s.sample(30, 3), s.sample(30, 3), s.sample(30, 4)
    assert a == b and a != c
    assert all(len(w) >= s.length for w in a)
    assert s.detail["dtype"].startswith("float32")  # the dtype the engine's sampler ran in, recorded


def test_eagle_repro_raw_bonus_law():
    """benchmarks/audit_repro/eagle.py part 1: EAGLE's evaluate_posterior, a draft accepted for every coin
    value at T = 0.5, returns the raw law (T = 1) for the next token, not the processed one."""
    pytest.importorskip("eagle.model.utils")
    spec = importlib.util.spec_from_file_location("eagle_repro", ROOT / "benchmarks" / "audit_repro" / "eagle.py")
    repro = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(repro)
    r = repro.part1()
    assert r["accept_length"] == 1
    assert r["sample_p"] == pytest.approx(r["raw_law"], abs=1e-6)
    assert r["tv"] == pytest.approx(0.2016, abs=1e-3)


def test_eagle_missing_package_one_line(monkeypatch, capsys):
    """Without eagle-llm the adapter refuses in one line naming the pinned version and the extra (exit 2)."""
    for name in [m for m in sys.modules if m == "eagle" or m.startswith("eagle.")] + ["eagle"]:
        monkeypatch.setitem(sys.modules, name, None)
    assert main(["audit", "--engine", "eagle", "--runs", "20"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "eagle-llm==1.2.1" in err and '".[eagle]"' in err
