"""Engine adapters: code other people wrote, driven into the audit's one law test.

An adapter is one module of this package plus one line in :data:`ENGINES`. It knows its engine
and the version it was written against, and nothing about statistics: it builds
:class:`rheotheory.audit.core.Setting` objects (what emits the tokens, the exact target law the
engine claims to sample) for the engine's real code path and for its planted companions, the
same code path with one known bug, driven through the same adapter.

Each module defines

- ``ENGINE``: an :class:`Engine` (package to import, the extra that installs it, the pinned
  version, the settings and companions it offers);
- ``settings(engine_module, planted=None, only=None) -> list[Setting]``.

The engine's package is imported once, through :func:`require` (after pandas'
``import_optional_dependency``): refused with one line naming the extra when absent, a warning
on stderr when its version is not the pinned one.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass

from ...errors import RheoError

__all__ = ["ENGINES", "Engine", "require", "adapter", "engine_names"]

#: Engine name -> adapter module (one line per engine).
ENGINES = {
    "rheotheory": "rheotheory.audit.engines.rheotheory_hf",
    "transformers": "rheotheory.audit.engines.transformers_generate",
    "vllm": "rheotheory.audit.engines.vllm",
    "sglang": "rheotheory.audit.engines.sglang",
    "eagle": "rheotheory.audit.engines.eagle",
    "llamacpp": "rheotheory.audit.engines.llamacpp",
}


@dataclass(frozen=True)
class Engine:
    """What an adapter audits (plain data).

    Attributes
    ----------
    name : str
        The ``--engine`` name.
    package : str
        The import name of the engine's package.
    distribution : str
        Its name on the package index (for the version and the install line).
    pinned : str
        The version the adapter was written against.
    extra : str
        The rheotheory extra that installs it.
    summary : str
        One line: the code path audited.
    settings : tuple of str
        The settings the adapter offers.
    planted : tuple of str
        Its planted companions.
    """

    name: str  # the --engine name
    package: str  # the import name of the engine's package
    distribution: str  # its name on the package index (for the version and the install line)
    pinned: str  # the version the adapter was written against
    extra: str  # the rheotheory extra that installs it
    summary: str  # one line: the code path audited
    settings: tuple  # names of the settings the adapter offers
    planted: tuple  # names of its planted companions


def engine_names() -> list[str]:
    """The engines' names, in :data:`ENGINES` order.

    Returns
    -------
    list of str
    """
    return list(ENGINES)


def adapter(name: str):
    """The adapter module of engine ``name`` (imported on first use).

    Parameters
    ----------
    name : str
        A key of :data:`ENGINES`.

    Returns
    -------
    module

    Raises
    ------
    rheotheory.errors.RheoError
        An unknown engine.
    """
    if name not in ENGINES:
        raise RheoError(f"unknown engine {name!r}; one of {', '.join(ENGINES)} (rheo audit --list)")
    return importlib.import_module(ENGINES[name])


def require(engine: Engine, warn=True):
    """Import the engine's package, or refuse in one line naming the extra; warn once on stderr
    when its version is not the one the adapter was written against.

    Parameters
    ----------
    engine : Engine
    warn : bool, default True
        Warn on another version.

    Returns
    -------
    tuple
        ``(module, version)``.

    Raises
    ------
    rheotheory.errors.RheoError
        The package is not installed (the message names the extra).
    """
    try:
        module = importlib.import_module(engine.package)
    except ImportError as e:
        raise RheoError(f"the {engine.name} adapter needs {engine.distribution}=={engine.pinned} ({e}); install "
                        f"it with: pip install -e \".[{engine.extra}]\"") from None
    from importlib import metadata

    try:
        version = metadata.version(engine.distribution)
    except metadata.PackageNotFoundError:
        version = getattr(module, "__version__", "unknown")
    if warn and version != engine.pinned:
        print(f"rheo audit: warning: {engine.distribution} {version} is installed; the {engine.name} adapter was "
              f"written against {engine.pinned}", file=sys.stderr)
    return module, version
