"""Run an engine's source files without importing (or installing) the engine's package.

vLLM's rejection sampler and SGLang's verification kernels are plain Python and Triton in
files of packages that cannot be imported here: vLLM's wheel pins another torch and its
``vllm/__init__`` pulls in the whole server, SGLang's ``sglang/__init__`` imports its HTTP
stack. The adapters of :mod:`rheotheory.audit.engines.vllm` and
:mod:`rheotheory.audit.engines.sglang` therefore read the few files they audit from where the
user keeps them, at run time, and execute them here; nothing of the engine is copied into
rheotheory.

Where the source comes from (:func:`locate`), in this order:

1. the environment variable the adapter names (``RHEO_VLLM_SOURCE``, ``RHEO_SGLANG_SOURCE``):
   a wheel file (``pip download --no-deps vllm==0.33.0``: read in place, never unpacked), or
   a directory that holds the package folder (a ``site-packages`` of another environment, an
   unpacked wheel, a source checkout);
2. the installed distribution (``pip install --no-deps ...``): its files are read through
   ``importlib.metadata``, the package itself is never imported.

:func:`load_module` executes one file as a private module (registered nowhere in
``sys.modules`` under the engine's names, only under a private one): its ``import`` statements
resolve the names the adapter supplies (the engine's own files loaded the same way, or small
stand-ins for the server-side modules a file imports but the audited code never reaches),
everything else through Python's import. The source is registered with :mod:`linecache` under
its origin (``wheel.whl/vllm/...py``), so tracebacks and Triton (which reads a kernel's source)
see the engine's own lines.
:func:`load_function` executes a single top-level function of a file (one pure function of a
module whose imports are out of reach, e.g. SGLang's ``_verify_uses_greedy``).

Triton kernels run under Triton's interpreter on CPU tensors: :func:`triton_interpreter` sets
``TRITON_INTERPRET=1`` before Triton is imported (Triton reads it whenever a kernel is
decorated, its own library functions included, which are decorated at import).
"""

from __future__ import annotations

import __future__
import ast
import builtins
import linecache
import os
import re
import sys
import types
import zipfile
from dataclasses import dataclass
from pathlib import Path

from ...errors import RheoError

__all__ = ["Source", "locate", "load_module", "load_function", "triton_interpreter", "stub"]


@dataclass(frozen=True)
class Source:
    """Where an engine's files are read from (plain data).

    Attributes
    ----------
    distribution : str
        The engine's name on the package index.
    version : str
        The version of the wheel, directory or installed distribution.
    origin : str
        The wheel, directory or installed location.
    kind : str
        ``"wheel"``, ``"directory"`` or ``"installed"``.
    """

    distribution: str  # the engine's name on the package index
    version: str  # the version of the wheel, directory or installed distribution
    origin: str  # the wheel, directory or installed location
    kind: str  # "wheel", "directory" or "installed"

    def read(self, relpath: str) -> tuple[str, str]:
        """``(text, filename)`` of the file ``relpath`` (e.g. ``vllm/v1/sample/rejection_sampler.py``).

        Parameters
        ----------
        relpath : str
            The file, relative to the source (``/``-separated, the package folder first).

        Returns
        -------
        tuple of str
            ``(text, filename)``: the file's UTF-8 text and ``ORIGIN/RELPATH``, the name it is
            registered and reported under.

        Raises
        ------
        rheotheory.errors.RheoError
            The wheel or directory has no such file, or it cannot be read.
        """
        try:
            if self.kind == "wheel":
                with zipfile.ZipFile(self.origin) as z:
                    text = z.read(relpath).decode("utf-8")
            else:
                text = (Path(self.origin) / relpath).read_text(encoding="utf-8")
        except (KeyError, OSError) as e:
            raise RheoError(f"{self.distribution} {self.version} at {self.origin} has no file {relpath} ({e})") \
                from None
        return text, f"{self.origin}/{relpath}"


def _wheel_version(path: Path, distribution: str) -> str:
    m = re.match(rf"{re.escape(distribution)}-([^-]+)-", path.name, flags=re.IGNORECASE)
    return m.group(1) if m else "unknown"


def _dir_version(path: Path, distribution: str) -> str:
    for info in sorted(path.glob(f"{distribution}-*.dist-info")):
        return info.name[len(distribution) + 1:-len(".dist-info")]
    return "unknown"


def locate(distribution: str, package: str, env: str, hint: str) -> Source:
    """The :class:`Source` of ``distribution`` (module docstring), or a one-line refusal
    naming ``env`` and ``hint`` (how to get it).

    Parameters
    ----------
    distribution : str
        The engine's name on the package index (e.g. ``"vllm"``).
    package : str
        Its import name.
    env : str
        The environment variable that may name a wheel or a directory.
    hint : str
        How to get it (for the refusal).

    Returns
    -------
    Source

    Raises
    ------
    rheotheory.errors.RheoError
        ``env`` is set to neither a ``.whl`` file nor a directory holding ``package/``, or it
        is unset and ``distribution`` is not installed.
    """
    given = os.environ.get(env)
    if given:
        path = Path(given).expanduser()
        if path.is_file() and path.suffix == ".whl":
            return Source(distribution, _wheel_version(path, distribution), str(path), "wheel")
        if path.is_dir() and (path / package).is_dir():
            return Source(distribution, _dir_version(path, distribution), str(path), "directory")
        raise RheoError(f"{env}={given!r} is neither a {distribution} wheel (.whl) nor a directory holding "
                        f"{package}/; {hint}")
    from importlib import metadata

    try:
        dist = metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        raise RheoError(f"{distribution} not found: set {env} to a {distribution} wheel or to a directory holding "
                        f"{package}/, or install it; {hint}") from None
    root = Path(str(dist.locate_file("")))
    return Source(distribution, dist.version, str(root), "installed")


def stub(name: str, **attrs) -> types.ModuleType:
    """A stand-in module ``name`` with attributes ``attrs`` (for an import the audited code
    never reaches).

    Parameters
    ----------
    name : str
        The module's name.
    **attrs : object
        Its attributes.

    Returns
    -------
    types.ModuleType
    """
    mod = types.ModuleType(name)
    mod.__dict__.update(attrs)
    return mod


def _linked(modules: dict) -> dict:
    """``modules`` with every missing parent package added as a stand-in, each child set as an
    attribute of its parent (so that ``from a import b`` and ``import a.b`` both resolve)."""
    out = dict(modules)
    for name in sorted(modules, key=lambda n: n.count(".")):
        parts = name.split(".")
        for i in range(1, len(parts)):
            parent = ".".join(parts[:i])
            if parent not in out:
                out[parent] = stub(parent)
    for name, mod in out.items():
        parent, _, child = name.rpartition(".")
        if parent and not hasattr(out[parent], child):
            setattr(out[parent], child, mod)
    return out


def _importer(modules: dict, package: str):
    real = builtins.__import__
    roots = {k.partition(".")[0] for k in modules} | {package}

    def _import(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0 and name in modules:
            return modules[name] if fromlist else modules[name.partition(".")[0]]
        if level == 0 and name.partition(".")[0] in roots:
            raise ImportError(f"{name} is not available to the audited code (not loaded from the engine's source)")
        return real(name, globals, locals, fromlist, level)

    return _import


def _register(text: str, filename: str) -> None:
    # NOTE: mtime None: linecache.checkcache keeps the entry although no such file exists on disk
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)


def load_module(name: str, source: Source, relpath: str, modules: dict, patch=None) -> types.ModuleType:
    """Execute the file ``relpath`` of ``source`` as a private module called ``name`` (a name of
    rheotheory's, e.g. ``rheotheory.audit.engines.vllm.loaded.rejection_sampler``).

    ``modules`` maps import names to module objects: the file's imports of those names resolve
    there; any other import under their top-level packages or the engine's own package is
    refused (the engine's package is never imported), the rest goes through Python's import.
    ``patch(text) -> text`` edits the source before it runs (the planted companions that change
    one line of a kernel; the real path never passes one).

    Parameters
    ----------
    name : str
        The private module name.
    source : Source
    relpath : str
        The file, relative to the source.
    modules : dict
        Import name -> module object.
    patch : callable, optional
        ``patch(text) -> text``.

    Returns
    -------
    types.ModuleType

    Raises
    ------
    rheotheory.errors.RheoError
        The source has no file ``relpath`` (:meth:`Source.read`), or executing it fails on an
        import (an ``ImportError``: another version of the file imports what ``modules`` does not
        supply).
    """
    text, filename = source.read(relpath)
    if patch is not None:
        text = patch(text)
        filename = f"{filename} [planted]"
    _register(text, filename)
    mod = types.ModuleType(name)
    mod.__file__ = filename
    # NOTE: registered under its private name (never the engine's), for what looks a module up
    # by its name at run time (dataclasses, pickling, inspect)
    sys.modules[name] = mod
    b = dict(builtins.__dict__)
    b["__import__"] = _importer(_linked(modules), source.distribution)
    mod.__dict__["__builtins__"] = b
    try:
        exec(compile(text, filename, "exec"), mod.__dict__)
    except ImportError as e:  # NOTE: another version of the file imports what the adapter does not supply
        sys.modules.pop(name, None)
        raise RheoError(f"{relpath} of {source.distribution} {source.version} failed to load: {e}") from None
    return mod


def load_function(source: Source, relpath: str, function: str, modules: dict | None = None):
    """Execute only the top-level ``def function`` of ``relpath`` (the file's own imports are
    not run) and return it; the imports inside the function resolve through ``modules`` as in
    :func:`load_module`.

    Parameters
    ----------
    source : Source
    relpath : str
        The file, relative to the source.
    function : str
        The name of the top-level function.
    modules : dict, optional
        Import name -> module object.

    Returns
    -------
    callable

    Raises
    ------
    rheotheory.errors.RheoError
        The source has no file ``relpath`` (:meth:`Source.read`), or the file defines no
        top-level function ``function``.
    """
    text, filename = source.read(relpath)
    tree = ast.parse(text, filename)
    nodes = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == function]
    if not nodes:
        raise RheoError(f"{filename} defines no function {function!r} ({source.distribution} {source.version})")
    _register(text, filename)
    b = dict(builtins.__dict__)
    b["__import__"] = _importer(_linked(modules or {}), source.distribution)
    ns = {"__builtins__": b, "__name__": f"{source.distribution}:{function}"}
    # NOTE: annotations stay strings (the file's own names, e.g. torch, are not imported here)
    code = compile(ast.Module(body=nodes, type_ignores=[]), filename, "exec",
                   flags=__future__.annotations.compiler_flag, dont_inherit=True)
    exec(code, ns)
    return ns[function]


def triton_interpreter(engine) -> None:
    """Run Triton kernels under Triton's interpreter (CPU tensors), importing Triton through
    :func:`rheotheory.audit.engines.require` (``engine``: an :class:`~rheotheory.audit.engines.Engine`
    naming the ``triton`` distribution and the adapter's extra).

    ``TRITON_INTERPRET=1`` must hold when Triton is imported: Triton's own library functions
    (``tl.cdiv``, ``tl.sum``, ...) are decorated then, and a compiled one cannot run inside an
    interpreted kernel. A process whose Triton was imported without it is refused in one line.
    The variable stays set, for the engine's kernels decorated next.

    Parameters
    ----------
    engine : rheotheory.audit.engines.Engine

    Raises
    ------
    rheotheory.errors.RheoError
        Triton is not installed (:func:`~rheotheory.audit.engines.require`), or it was imported
        before ``TRITON_INTERPRET=1`` was set.
    """
    if "triton" not in sys.modules:
        os.environ["TRITON_INTERPRET"] = "1"
    from . import require

    require(engine)
    import triton.language.standard as standard
    from triton.runtime.interpreter import InterpretedFunction

    if not isinstance(standard.cdiv, InterpretedFunction):
        raise RheoError("triton was imported before TRITON_INTERPRET=1 was set; the audit runs Triton kernels under "
                        "its interpreter: start the process with TRITON_INTERPRET=1")
    os.environ["TRITON_INTERPRET"] = "1"
