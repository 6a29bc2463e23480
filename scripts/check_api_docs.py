"""Check the API reference's docstrings: every public callable documents its parameters, returns
and raises in numpy style.

    python scripts/check_api_docs.py            # exit 1 with one line per problem, 0 when clean

*Public* means what the API reference renders: for every module named on a ``::: module`` line of
``docs/reference/*.md`` (not ``members: false``), the functions and classes of its ``__all__``
defined in that module, and the public methods (no leading underscore) those classes define.
The check reads the sources with :mod:`ast` and imports nothing, so it runs without any extra.

A problem is reported as ``module.name: problem`` when

- a callable has no docstring;
- a function or method with parameters (``self`` and ``cls`` aside) has no ``Parameters``
  section, or the section leaves out a parameter of the signature (a parameter described only in
  the prose), or an entry gives no type (``name : type``);
- a function returns a value (a ``return expr`` in its own body, or a return annotation other than
  ``None``) and has no ``Returns`` section (a generator: ``Yields``);
- a function's own body raises (``raise SomeError(...)``; a bare re-raise aside) and it has no
  ``Raises`` section;
- a class with constructor parameters (its ``__init__``, or the fields its dataclass body
  declares) has no ``Parameters`` or ``Attributes`` section naming each of them with a type.

Entries may group names (``a, b : int``) and name ``*args`` / ``**kwargs`` with or without
their stars.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: numpy docstring sections whose entries name things (``name : type``).
NAMED_SECTIONS = ("Parameters", "Attributes", "Other Parameters")
#: A numpy section header: a title line underlined with dashes.
SECTION = re.compile(r"^([A-Z][A-Za-z ]+)\n-{3,}\s*$", re.M)


@dataclass(frozen=True)
class Problem:
    """One missing piece of documentation (``where``: ``module.qualname``)."""

    where: str
    what: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"


def sections(doc: str) -> dict[str, str]:
    """The numpy sections of ``doc``: title -> body (the text up to the next section)."""
    out = {}
    marks = list(SECTION.finditer(doc))
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(doc)
        out[m.group(1).strip()] = doc[m.end():end]
    return out


def entries(body: str) -> dict[str, str]:
    """The entries of a named section: each name -> its type (``""`` when none is given). An entry
    is an unindented line ``name : type`` or ``name`` (several names separated by commas)."""
    out = {}
    for line in body.splitlines():
        if not line.strip() or line[:1].isspace():
            continue
        names, _, typ = line.partition(" : ") if " : " in line else (line.rstrip(":"), "", "")
        for name in names.split(","):
            name = name.strip().lstrip("*")
            if name:
                out[name] = typ.strip()
    return out


def _own_nodes(fn: ast.AST):
    """The nodes of ``fn``'s own body (nested functions and classes left out)."""
    stack = list(ast.iter_child_nodes(fn))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def _params(fn: ast.FunctionDef) -> list[str]:
    a = fn.args
    names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    if a.vararg:
        names.append(a.vararg.arg)
    if a.kwarg:
        names.append(a.kwarg.arg)
    return [n for n in names if n not in ("self", "cls")]


def _returns_value(fn: ast.FunctionDef) -> bool:
    ann = fn.returns
    if ann is not None:
        text = ast.unparse(ann)
        if text in ("None", "NoReturn", "typing.NoReturn", "Never"):
            return False
    if any(isinstance(n, ast.Return) and n.value is not None and not (
            isinstance(n.value, ast.Constant) and n.value.value is None) for n in _own_nodes(fn)):
        return True
    return ann is not None and not _is_generator(fn)


def _is_generator(fn: ast.FunctionDef) -> bool:
    return any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in _own_nodes(fn))


def _raises(fn: ast.FunctionDef) -> bool:
    return any(isinstance(n, ast.Raise) and n.exc is not None for n in _own_nodes(fn))


def _is_property(fn: ast.FunctionDef) -> bool:
    return any(ast.unparse(d).split(".")[-1] in ("property", "cached_property", "setter")
               for d in fn.decorator_list)


def _named_problems(where: str, doc: str, names: list[str], titles=NAMED_SECTIONS) -> list[Problem]:
    secs = sections(doc)
    have: dict[str, str] = {}
    for t in titles:
        if t in secs:
            have.update(entries(secs[t]))
    if not any(t in secs for t in titles):
        return [Problem(where, f"no {' or '.join(titles[:2])} section for {', '.join(names)}")]
    out = []
    missing = [n for n in names if n not in have]
    if missing:
        out.append(Problem(where, f"{', '.join(missing)} not in its {titles[0]} section (described in prose "
                                  "only, or not at all)"))
    untyped = [n for n in names if have.get(n) == ""]
    if untyped:
        out.append(Problem(where, f"no type for {', '.join(untyped)} (write 'name : type')"))
    return out


def function_problems(where: str, fn: ast.FunctionDef) -> list[Problem]:
    """The problems of one function or method (see the module docstring)."""
    doc = ast.get_docstring(fn)
    if not doc:
        return [Problem(where, "no docstring")]
    if _is_property(fn):
        return []
    out = []
    params = _params(fn)
    if params:
        out += _named_problems(where, doc, params, ("Parameters", "Other Parameters"))
    secs = sections(doc)
    if _is_generator(fn):
        if "Yields" not in secs and "Returns" not in secs:
            out.append(Problem(where, "a generator without a Yields section"))
    elif _returns_value(fn) and "Returns" not in secs:
        out.append(Problem(where, "returns a value but has no Returns section"))
    if _raises(fn) and "Raises" not in secs:
        out.append(Problem(where, "raises but has no Raises section"))
    return out


def _is_dataclass(cls: ast.ClassDef) -> bool:
    return any(ast.unparse(d).split("(")[0].split(".")[-1] == "dataclass" for d in cls.decorator_list)


def _fields(cls: ast.ClassDef) -> list[str]:
    """The constructor fields a dataclass body declares (ClassVar and InitVar-free annotations;
    ``field(init=False)`` left out)."""
    out = []
    for node in cls.body:
        if not isinstance(node, ast.AnnAssign) or not isinstance(node.target, ast.Name):
            continue
        if "ClassVar" in ast.unparse(node.annotation):
            continue
        if node.value is not None and "init=False" in ast.unparse(node.value).replace(" ", ""):
            continue
        out.append(node.target.id)
    return out


def class_problems(where: str, cls: ast.ClassDef) -> list[Problem]:
    """The problems of one class and its public methods (see the module docstring)."""
    doc = ast.get_docstring(cls)
    out = [] if doc else [Problem(where, "no docstring")]
    init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    names = _params(init) if init is not None else _fields(cls) if _is_dataclass(cls) else []
    if doc and names:
        init_doc = ast.get_docstring(init) if init is not None else None
        both = doc + ("\n\n" + init_doc if init_doc else "")
        out += _named_problems(where, both, names)
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
            out += function_problems(f"{where}.{node.name}", node)
    return out


def _all_names(tree: ast.Module) -> list[str]:
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
            if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and node.value is not None:
            try:
                return list(ast.literal_eval(node.value))
            except ValueError:
                return []
    return []


def module_problems(module: str, root: Path = ROOT) -> list[Problem]:
    """The problems of the public callables of ``module`` (a dotted name under ``root``)."""
    rel = Path(*module.split("."))
    path = root / rel.with_suffix(".py")
    if not path.exists():
        path = root / rel / "__init__.py"
    tree = ast.parse(path.read_text(), str(path))
    defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    out = []
    for name in _all_names(tree):
        node = defs.get(name)
        if isinstance(node, ast.ClassDef):
            out += class_problems(f"{module}.{name}", node)
        elif node is not None:
            out += function_problems(f"{module}.{name}", node)
    return out


def documented_modules(root: Path = ROOT) -> list[str]:
    """The modules whose members the API reference renders (``::: module`` lines of
    ``docs/reference/*.md`` without ``members: false``)."""
    out = []
    for page in sorted((root / "docs" / "reference").glob("*.md")):
        lines = page.read_text().splitlines()
        for i, line in enumerate(lines):
            m = re.match(r"^::: (\S+)$", line)
            if not m:
                continue
            opts = []
            for nxt in lines[i + 1:]:
                if not nxt.startswith(" ") or not nxt.strip():
                    break
                opts.append(nxt.strip())
            if "members: false" not in opts:
                out.append(m.group(1))
    return out


def check(root: Path = ROOT, modules=None) -> list[Problem]:
    """Every problem of the API reference's public callables (``modules``: default all rendered)."""
    out = []
    for module in (documented_modules(root) if modules is None else modules):
        out += module_problems(module, root)
    return out


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    modules = argv or None
    try:
        problems = check(ROOT, modules)
    except (OSError, SyntaxError) as e:
        print(f"check_api_docs: {e}", file=sys.stderr)
        return 2
    for p in problems:
        print(p)
    callables = len({p.where for p in problems})
    print(f"{len(problems)} problems in {callables} public callables" if problems else
          "every public callable documents its parameters, returns and raises", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
