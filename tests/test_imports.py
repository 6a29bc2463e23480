"""The package's import graph: no circles, no arrow running up a floor, no heavy import at start-up.

The graph is read from the source (``ast`` over ``rheotheory/**.py``), so every import counts,
including those deferred into a function body (a circle closed by a deferred import is still a
circle: the two modules cannot be understood, or moved, one without the other). Importing
``a.b.c`` runs ``a/__init__`` and ``a/b/__init__`` first, so an import also draws arrows to the
packages it passes through (except the importer's own packages, which are already running).
"""

from __future__ import annotations

import ast
import graphlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = "rheotheory"
PACKAGE_DIR = Path(__file__).resolve().parents[1] / PACKAGE

#: The floors, lowest first (ARCHITECTURE.md, "A layered import graph"): a module imports
#: modules of its own floor and of floors below, never one above. A module's floor is named by
#: the longest entry that is its dotted name (below ``rheotheory``) or a package holding it;
#: ``""`` is the package's own ``__init__``, which re-exports up to the analyses. ``testing``
#: (hypothesis strategies and planted bugs for the tests) sits on top: nothing in the package
#: may depend on it.
FLOORS = (
    ("base", ("errors", "optional", "laws", "executors", "checkpoint", "provenance", "loadcheck", "plugin_loader")),
    ("instances and trees", ("pairs", "synthetic", "prompts", "trees")),
    ("verifiers", ("verify",)),
    ("methods", ("methods",)),
    ("evaluations", ("exact", "strict", "montecarlo")),
    ("analyses", ("lp_optimum", "node_bound", "counterexample", "sweep", "stats")),
    ("public API", ("", "plugin")),
    ("real models", ("decode", "hf")),
    ("commands and test helpers", ("cli", "testing", "audit")),
)

#: Heavy imports that only the commands using them may load (``rheo --help`` and ``rheo certify``
#: must start in about the time numpy and scipy take).
HEAVY = ("torch", "transformers", "matplotlib")


# --------------------------------------------------------------------------------------------
# Reading the graph


def package_modules(root: Path = PACKAGE_DIR) -> dict[str, Path]:
    """Dotted module name -> source file, for every module and package under ``root``."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = (PACKAGE, *path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST):
    """Yield ``(node, where)`` for each import, where is "module", "deferred" (inside a function)
    or "typing" (under ``if TYPE_CHECKING:``, never run)."""
    def walk(node, where):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, where
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                yield from walk(child, "typing" if where == "typing" else "deferred")
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                for stmt in child.body:
                    yield from walk(ast.Module(body=[stmt], type_ignores=[]), "typing")
                for stmt in child.orelse:
                    yield from walk(ast.Module(body=[stmt], type_ignores=[]), where)
            else:
                yield from walk(child, where)
    yield from walk(tree, "module")


def _ancestors(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def import_edges(modules: dict[str, Path]) -> set[tuple[str, str, str]]:
    """Every arrow ``(importer, imported, where)`` between modules of the package."""
    edges = set()
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        for node, where in _imports(ast.parse(path.read_text(), str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                if node.level:
                    base = name.split(".")
                    base = base[:len(base) - node.level + (1 if is_package else 0)]
                    base = ".".join(base + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if sub in modules else base)
            for target in targets:
                if target != PACKAGE and not target.startswith(PACKAGE + "."):
                    continue
                while target not in modules:  # `import a.b.name` of a non-module: the module a.b
                    target = target.rpartition(".")[0]
                own = set(_ancestors(name)) | {name}
                for passed in _ancestors(target):  # packages whose __init__ the import runs first
                    if passed not in own:
                        edges.add((name, passed, where))
                if target != name:
                    edges.add((name, target, where))
    return edges


# --------------------------------------------------------------------------------------------
# Judging it


def find_cycles(edges) -> list[list[str]]:
    """Circles in the graph drawn by ``edges`` (pairs), one per broken arrow until none is left
    (so an empty list means the graph is acyclic; each circle is listed once)."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
    cycles = []
    while True:
        try:
            graphlib.TopologicalSorter(graph).prepare()
            return cycles
        except graphlib.CycleError as e:
            cycle = e.args[1][::-1]  # graphlib lists it against the arrows: a <- b <- ... <- a
            cycles.append(cycle)
            graph[cycle[0]].discard(cycle[1])


def floor_of(module: str) -> int:
    """Index in :data:`FLOORS` of ``module`` (a dotted name under rheotheory)."""
    rel = module[len(PACKAGE) + 1:] if module != PACKAGE else ""
    best, best_len = None, -1
    for index, (_, entries) in enumerate(FLOORS):
        for entry in entries:
            if (rel == entry or (entry and rel.startswith(entry + "."))) and len(entry) > best_len:
                best, best_len = index, len(entry)
    if best is None:
        raise KeyError(f"{module} is on no floor: add it to FLOORS in {Path(__file__).name}")
    return best


def up_floor_arrows(edges) -> list[str]:
    """Arrows from a module to one on a higher floor, as readable lines."""
    return sorted(f"{a} ({FLOORS[floor_of(a)][0]}) -> {b} ({FLOORS[floor_of(b)][0]}) [{where}]"
                  for a, b, where in edges if floor_of(b) > floor_of(a))


@pytest.fixture(scope="module")
def edges():
    return import_edges(package_modules())


def test_the_graph_is_read(edges):
    # NOTE: guards the reader itself: a parse that found nothing would pass every check below.
    pairs = {(a, b) for a, b, _ in edges}
    assert ("rheotheory.exact", "rheotheory.methods") in pairs
    assert ("rheotheory.methods.registry", "rheotheory.verify") in pairs
    assert any(where == "deferred" for _, _, where in edges)


def test_every_module_is_on_a_floor():
    for module in package_modules():
        floor_of(module)


def test_no_import_circle(edges):
    runtime = {(a, b) for a, b, where in edges if where != "typing"}
    cycles = find_cycles(runtime)
    assert not cycles, "import circles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_no_arrow_runs_up_a_floor(edges):
    arrows = up_floor_arrows(edges)
    assert not arrows, "imports running up a floor:\n" + "\n".join(arrows)


#: Packages one floor holds together that must still not import each other: (importer, imported).
#: The audit is a library its commands call into; ``rheotheory.audit`` (the pytest plugin among
#: it) never reaches back into the command line.
SAME_FLOOR_BANS = (("rheotheory.audit", "rheotheory.cli"),)


def banned_arrows(edges, bans=SAME_FLOOR_BANS) -> list[str]:
    """Arrows from a module under one package of a ban to one under the other, as readable lines."""
    def under(module, package):
        return module == package or module.startswith(package + ".")

    return sorted(f"{a} -> {b} [{where}]" for a, b, where in edges for src, dst in bans
                  if under(a, src) and under(b, dst))


def test_the_audit_never_imports_the_command_line(edges):
    arrows = banned_arrows(edges)
    assert not arrows, "the audit imports the command line:\n" + "\n".join(arrows)
    assert banned_arrows({("rheotheory.audit.pytest_plugin", "rheotheory.cli.audit", "deferred")}) == [
        "rheotheory.audit.pytest_plugin -> rheotheory.cli.audit [deferred]"]


def test_the_checks_catch_a_planted_circle_and_an_upward_arrow():
    (cycle,) = find_cycles({("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")})
    assert cycle[0] == cycle[-1] and sorted(cycle[:-1]) == ["a", "b", "c"]
    assert all((x, y) in {("a", "b"), ("b", "c"), ("c", "a")} for x, y in zip(cycle, cycle[1:]))
    assert find_cycles({("a", "b"), ("b", "c")}) == []
    assert up_floor_arrows({("rheotheory.trees.tree", "rheotheory.verify.rules", "module")}) == [
        "rheotheory.trees.tree (instances and trees) -> rheotheory.verify.rules (verifiers) [module]"]
    assert up_floor_arrows({("rheotheory.verify.rules", "rheotheory.trees.tree", "module")}) == []


def test_reader_resolves_relative_and_package_imports(tmp_path):
    root = tmp_path / PACKAGE
    (root / "sub").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "laws.py").write_text("")
    (root / "sub" / "__init__.py").write_text("from .leaf import x\n")
    (root / "sub" / "leaf.py").write_text("from .. import laws\nx = 1\n")
    (root / "top.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .sub import leaf\n"
        "def f():\n    from .sub.leaf import x\n")
    found = import_edges(package_modules(root))
    assert found == {
        ("rheotheory.sub", "rheotheory.sub.leaf", "module"),
        ("rheotheory.sub.leaf", "rheotheory.laws", "module"),
        ("rheotheory.top", "rheotheory.sub.leaf", "typing"),
        ("rheotheory.top", "rheotheory.sub", "typing"),
        ("rheotheory.top", "rheotheory.sub.leaf", "deferred"),
        ("rheotheory.top", "rheotheory.sub", "deferred"),
    }


# --------------------------------------------------------------------------------------------
# What start-up loads


def _loaded_after(code: str) -> dict:
    """Run ``code`` in a fresh interpreter; return which of :data:`HEAVY` it left in sys.modules."""
    probe = code + "\nimport json, sys\nprint(json.dumps({m: m in sys.modules for m in %r}))" % (HEAVY,)
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                         cwd=PACKAGE_DIR.parent).stdout
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.parametrize("code", [
    "import rheotheory",
    "import contextlib, io\nfrom rheotheory.cli import main\n"
    "with contextlib.redirect_stdout(io.StringIO()):\n    assert main(['certify']) == 0",
    "import contextlib, io\nfrom rheotheory.cli import main\n"
    "with contextlib.redirect_stdout(io.StringIO()):\n    assert main(['--help']) == 0",
], ids=["import", "certify", "help"])
def test_start_up_loads_no_heavy_library(code):
    loaded = _loaded_after(code)
    assert not any(loaded.values()), f"loaded at start-up: {[m for m, on in loaded.items() if on]}"


def test_the_start_up_probe_sees_a_heavy_import():
    pytest.importorskip("matplotlib")
    assert _loaded_after("import matplotlib")["matplotlib"]


#: Modules that ``rheo --help`` must not load: the exact enumerator (about 0.1 s of start-up with
#: what it pulls in, measured with ``python -X importtime``) is needed only by the commands
#: that enumerate, never to build the parser.
NOT_AT_HELP = ("rheotheory.exact",)


def _package_modules_after(code: str) -> set:
    probe = code + "\nimport json, sys\nprint(json.dumps(sorted(m for m in sys.modules if m.startswith('rheotheory'))))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                         cwd=PACKAGE_DIR.parent).stdout
    return set(json.loads(out.strip().splitlines()[-1]))


@pytest.mark.parametrize("code", [
    "import rheotheory",
    "import contextlib, io\nfrom rheotheory.cli import main\n"
    "with contextlib.redirect_stdout(io.StringIO()):\n    assert main(['--help']) == 0",
], ids=["import", "help"])
def test_start_up_does_not_load_the_enumerator(code):
    loaded = _package_modules_after(code)
    assert not loaded & set(NOT_AT_HELP), f"loaded before any command ran: {sorted(loaded & set(NOT_AT_HELP))}"


def test_the_enumerator_probe_sees_it_loaded():
    """The probe's companion: a command that enumerates does load it, so the check above can fail."""
    code = ("import contextlib, io\nfrom rheotheory.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n    assert main(['certify']) == 0")
    assert "rheotheory.exact" in _package_modules_after(code)


def test_the_public_api_resolves_lazily():
    """Every name of ``rheotheory.__all__`` resolves (imported on first use), and an unknown one
    is an AttributeError."""
    code = ("import rheotheory, sys\nassert 'rheotheory.exact' not in sys.modules\n"
            "missing = [n for n in rheotheory.__all__ if getattr(rheotheory, n, None) is None]\n"
            "assert not missing, missing\nassert 'rheotheory.exact' in sys.modules\n"
            "assert rheotheory.certify is __import__('rheotheory.exact').exact.certify\n"
            "assert set(rheotheory.__all__) <= set(dir(rheotheory))\n"
            "try:\n    rheotheory.no_such_name\nexcept AttributeError:\n    pass\n"
            "else:\n    raise SystemExit('no AttributeError')")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=PACKAGE_DIR.parent)
