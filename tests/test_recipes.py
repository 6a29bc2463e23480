"""The published tables are what the committed results files render to (simulations/recipes.py).

No recomputation: each marked block of README.md and docs/*.md is rendered from the committed
results files and compared with the text between its markers.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("recipes", ROOT / "simulations" / "recipes.py")
recipes = sys.modules.setdefault("recipes", importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(recipes)


def test_every_marked_table_matches_its_results():
    problems = recipes.check()
    assert not problems, ("README/docs tables differ from their committed results; run "
                          "`python simulations/recipes.py render` (or the recipe) and commit:\n" + "\n".join(problems))


def test_the_documents_have_marked_tables():
    names = [m["name"] for doc in recipes.documents() for m in recipes.MARKER.finditer(doc.read_text())]
    assert len(names) >= 10, names
    unknown = set(names) - set(recipes.tables())
    assert not unknown, f"markers naming no registered table: {sorted(unknown)}"


def test_a_changed_cell_is_caught(tmp_path):
    """The check can fail: one digit changed in a rendered table of a copy of the repository's docs."""
    for doc in recipes.documents():
        (tmp_path / doc.relative_to(ROOT)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(doc, tmp_path / doc.relative_to(ROOT))
    for r in recipes.RECIPES:  # the results the tables read, with their provenance
        src = ROOT / r.folder
        for o in r.outputs:
            for rel in (o, o + ".provenance.json"):  # NOTE: an output may sit in a subfolder (a bench --out)
                if (src / rel).is_file():
                    (tmp_path / r.folder / rel).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy(src / rel, tmp_path / r.folder / rel)
    assert recipes.check(tmp_path) == []
    # the first marked block that shows a number, in whichever document holds it
    doc, m = next((d, m) for d in recipes.documents(tmp_path) for m in recipes.MARKER.finditer(d.read_text())
                  if any(c.isdigit() for c in m["body"]) and "To regenerate" not in m["body"])
    text = doc.read_text()
    i = m.start("body") + next(k for k, c in enumerate(m["body"]) if c.isdigit() and k > 0 and m["body"][k - 1] in " |.")
    doc.write_text(text[:i] + str((int(text[i]) + 1) % 10) + text[i + 1:])
    problems = recipes.check(tmp_path)
    assert len(problems) == 1 and m["name"] in problems[0], problems


def test_registry_is_well_formed():
    names = [r.name for r in recipes.RECIPES]
    assert len(names) == len(set(names))
    recipes.tables()  # raises on a table registered twice
    for r in recipes.RECIPES:
        assert r.outputs and r.steps and r.quick and r.seconds > 0 and r.quick_seconds > 0, r.name
        assert r.folder in ("simulations/results", "benchmarks/results", "proofs"), r.name
        for s in r.quick:  # the quick size writes into its output folder, never the committed one
            named = [a for a in s.argv if any(o in a for o in r.outputs) or a.endswith((".csv", ".json", ".md"))]
            assert all(a.startswith("{out}") for a in named), (r.name, s)
            assert "{out}" in " ".join(s.argv) or s.stdout, (r.name, s)


def test_committed_results_carry_provenance():
    for r in recipes.RECIPES:
        folder = ROOT / r.folder
        for o in r.outputs:
            if (folder / o).is_file() and (folder / (o + ".provenance.json")).is_file():
                rec = json.loads((folder / (o + ".provenance.json")).read_text())
                assert rec["command"] and "machine" in rec and rec.get("recipe") == r.name, (r.name, o)


def test_quick_refuses_the_committed_folder():
    r = recipes.by_name()["certify_table"]
    with pytest.raises(SystemExit, match="never writes into the committed folder"):
        recipes.run(r, quick=True, out=ROOT / r.folder)


def test_a_run_stopped_midway_keeps_the_results_it_would_replace(tmp_path):
    """A recipe that starts by deleting its output folder runs in a staging folder: a step that
    fails after the deletion leaves the results already there as they were (timing or not)."""
    kept = tmp_path / "res" / "table.csv"
    kept.parent.mkdir()
    kept.write_text("committed\n")
    r = recipes.Recipe("stopped_midway", "unused", ("res/table.csv",),
                       steps=(recipes.fresh("{out}/res"), recipes.step("python -c 'raise SystemExit(3)'")),
                       quick=(), seconds=1, quick_seconds=1)
    assert not r.timing
    with pytest.raises(SystemExit, match="step exited 3"):
        recipes.run(r, out=tmp_path)
    assert kept.read_text() == "committed\n"


def test_an_unknown_table_is_an_error():
    with pytest.raises(KeyError, match="no recipe renders"):
        recipes.render_text("<!-- results:nope -->\nx\n<!-- /results:nope -->\n")


# -- quick runs that can fail ------------------------------------------------------------------

def _verdict_recipes():
    return [r for r in recipes.RECIPES if r.verdicts]


def test_the_lossless_recipes_declare_their_verdicts():
    """Every recipe whose table is a lossless verdict names its verdict CSV (so the checks below
    cover it), and a quick size either keeps the full size's runs or gives no verdict."""
    declared = {r.name for r in _verdict_recipes()}
    assert {"builtin_lossless", "smollm2_lossless", "smollm2_lossless_600", "smollm2_lossless_int4"} <= declared
    for r in recipes.RECIPES:
        uses_lossless_table = any("_lossless.py" in " ".join(s.argv) for s in r.steps)
        assert uses_lossless_table == (r.name in declared), r.name
    for r in _verdict_recipes():
        quick = " ".join(" ".join(s.argv) for s in r.quick)
        full = " ".join(" ".join(s.argv) for s in r.steps)
        n_of = lambda line: line.split("--n ")[1].split()[0]  # noqa: E731
        assert "--no-verdict" in quick or n_of(quick) == n_of(full), (r.name, quick)


def test_a_run_without_degrees_of_freedom_gives_no_verdict(tmp_path, capsys):
    """The companion of the quick sizes: a test that tested nothing (df = 0) is not reported as
    "no rejection", and --no-verdict reports no verdict for any row."""
    from rheotheory.decode.evaluation.checks import lossless_table
    from rheotheory.methods import make_method
    from rheotheory.stats import ChiSquare

    m = make_method("chain", depth=2)
    nothing = ChiSquare(statistic=0.0, df=0, p_value=1.0, n=10, cells=1, worst_cell="", observed=0, expected=0.0)
    something = ChiSquare(statistic=30.0, df=3, p_value=1e-6, n=800, cells=4, worst_cell="", observed=0, expected=0.0)
    rows = lossless_table([("a", m, None), ("b", m, object())], lambda method, v: nothing if v is None else something,
                          1e-3, tmp_path / "t.csv")
    assert [r["rejected"] for r in rows] == ["", True]
    assert "no verdict (df = 0" in capsys.readouterr().out
    rows = lossless_table([("b", m, object())], lambda method, v: something, 1e-3, verdict=False)
    assert rows[0]["rejected"] == ""
    assert "no verdict" in capsys.readouterr().out
    md = recipes.lossless_md(tmp_path, "t.csv")
    assert "no verdict" in md and "**rejected**" in md


@pytest.mark.claims
@pytest.mark.parametrize("name", [r.name for r in _verdict_recipes() if not r.needs])
def test_a_quick_verdict_recipe_rejects_its_planted_companions(name, tmp_path):
    """The quick size of each verdict recipe that runs on the dev install gives verdicts that can
    fail: every planted row is rejected, and at least one row of a real method is not. (The
    SmolLM2 recipes give no verdict at their quick size, checked above.)"""
    r = recipes.by_name()[name]
    recipes.run(r, quick=True, out=tmp_path)
    rows = recipes.read_csv(tmp_path / r.verdicts)
    planted = [x for x in rows if x["planted"] == "True"]
    real = [x for x in rows if x["planted"] == "False"]
    assert planted and real, rows
    assert all(x["rejected"] == "True" for x in planted), [(x["method"], x["p_value"], x["df"]) for x in planted]
    assert all(x["rejected"] == "False" for x in real), [(x["method"], x["p_value"], x["df"]) for x in real]


# -- stated times -----------------------------------------------------------------------------

#: Actual / stated must lie in [1 / TIME_BAND, TIME_BAND].
TIME_BAND = 3.0

#: Quick sizes timed in the claims tier: one process each (so that their CPU seconds are what a
#: quiet machine's wall clock shows), among them the two quick sizes once listed far from what
#: they took (certify_adaptive, ~60 s listed and over 300 s run; adaptive_vs_best's re-run).
TIMED_QUICK = ("certify_adaptive", "adaptive_vs_best", "sweep_v32k_tree_level", "sweep_v50", "bench_builtin",
               "bench_draft_temperature", "certify_scaling", "optimum_example")


def _quiet(provenance: dict) -> bool:
    """Whether a provenance record says its run had the machine to itself."""
    note = str(provenance.get("machine", {}).get("note", "")).lower()
    return provenance.get("size") == "full" and not provenance.get("resumed") and provenance.get("wall_seconds") \
        and (note == "" or ("quiet" in note and not any(w in note for w in ("other jobs", "running", "loaded"))))


def test_stated_full_times_match_the_quiet_runs_committed():
    """A recipe whose committed results come from a quiet full run states that run's time within
    TIME_BAND (the stated figure is what `recipes.py list` tells a reader to plan by)."""
    checked = 0
    for r in recipes.RECIPES:
        path = ROOT / r.folder / (r.outputs[0] + ".provenance.json")
        if not path.is_file():
            continue
        rec = json.loads(path.read_text())
        if _quiet(rec):
            checked += 1
            ratio = rec["wall_seconds"] / r.seconds
            assert 1 / TIME_BAND <= ratio <= TIME_BAND, (r.name, rec["wall_seconds"], r.seconds)
    assert checked >= 3


def test_the_quiet_filter_keeps_only_quiet_full_runs():
    base = {"size": "full", "wall_seconds": 10.0, "machine": {"note": ""}}
    assert _quiet(base)
    assert not _quiet({**base, "machine": {"note": "shared 2-core machine, other jobs running"}})
    assert not _quiet({**base, "resumed": True}) and not _quiet({**base, "size": "quick"})


@pytest.mark.claims
@pytest.mark.parametrize("name", TIMED_QUICK)
def test_a_quick_recipe_runs_in_about_its_stated_time(name, tmp_path):
    """The CPU seconds of a quick size's processes (user + system: a busy machine disturbs them far
    less than the wall clock) are within TIME_BAND of its stated ``quick_seconds``."""
    import resource

    r = recipes.by_name()[name]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    recipes.run(r, quick=True, out=tmp_path)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert 1 / TIME_BAND <= cpu / r.quick_seconds <= TIME_BAND, (name, round(cpu, 1), r.quick_seconds)


def _fake_timing_recipe(monkeypatch, name="fake_timing"):
    monkeypatch.setattr(recipes, "TIMING_RECIPES", recipes.TIMING_RECIPES | {name})
    write = recipes.step("python -c \"import sys; open(sys.argv[1], 'w').write('{}')\" {out}/t.json")
    return recipes.Recipe(name, "benchmarks/results", ("t.json",), steps=(write,), quick=(write,), seconds=1,
                          quick_seconds=1)


def _load(loaded: bool):
    from rheotheory.loadcheck import LoadReport

    return LoadReport(3, 2.0 if loaded else 0.0, 2 if loaded else 0, loaded)


def test_a_timing_recipe_refuses_a_loaded_machine_and_writes_nothing(tmp_path, monkeypatch):
    import rheotheory.loadcheck as lc

    r = _fake_timing_recipe(monkeypatch)
    monkeypatch.setattr(lc, "precheck", lambda *a, **k: _load(True))
    with pytest.raises(SystemExit, match="publishes wall-clock figures and the machine is loaded"):
        recipes.run(r, out=tmp_path)
    assert not (tmp_path / "t.json").exists()


def test_a_timing_recipe_run_while_the_machine_got_loaded_writes_nothing(tmp_path, monkeypatch):
    import rheotheory.loadcheck as lc

    r = _fake_timing_recipe(monkeypatch)
    monkeypatch.setattr(lc, "precheck", lambda *a, **k: _load(False))
    monkeypatch.setattr(lc.LoadMonitor, "report", lambda self: _load(True))
    with pytest.raises(SystemExit, match="its results are not written"):
        recipes.run(r, out=tmp_path)
    assert not (tmp_path / "t.json").exists()


def test_allow_loaded_writes_the_load_and_the_table_says_so(tmp_path, monkeypatch):
    import rheotheory.loadcheck as lc

    r = _fake_timing_recipe(monkeypatch)
    monkeypatch.setattr(lc, "precheck", lambda *a, **k: _load(True))
    monkeypatch.setattr(lc.LoadMonitor, "report", lambda self: _load(True))
    recipes.run(r, out=tmp_path, allow_loaded=True)
    rec = json.loads((tmp_path / "t.json.provenance.json").read_text())
    assert rec["load"]["loaded"] is True and rec["load"]["precheck"]["loaded"] is True
    assert "2.0 other runnable threads" in recipes.loaded_note(r, tmp_path)


def test_a_quiet_timing_run_writes_and_renders_without_a_caption(tmp_path, monkeypatch):
    import rheotheory.loadcheck as lc

    r = _fake_timing_recipe(monkeypatch)
    monkeypatch.setattr(lc, "precheck", lambda *a, **k: _load(False))
    monkeypatch.setattr(lc.LoadMonitor, "report", lambda self: _load(False))
    recipes.run(r, out=tmp_path)
    assert (tmp_path / "t.json").read_text() == "{}"
    assert recipes.loaded_note(r, tmp_path) == ""


def test_a_copy_without_git_records_the_stated_commit(monkeypatch):
    """A tree copied without its history (as to a GPU machine) records the commit RHEO_COMMIT states,
    marked as stated, and "unknown" without it; a tree with git ignores the variable."""
    from rheotheory import provenance as prov

    monkeypatch.setenv(prov.COMMIT_ENV, "abc1234")
    assert "(stated)" not in prov._commit()  # git answers here
    monkeypatch.setattr(prov.subprocess, "run", lambda *a, **k: (_ for _ in ()).throw(OSError("no git")))
    assert prov._commit() == "abc1234 (stated)"
    monkeypatch.delenv(prov.COMMIT_ENV)
    assert prov._commit() == "unknown"
