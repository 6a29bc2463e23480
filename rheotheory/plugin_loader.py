"""Loading plugins: files, modules, ``RHEO_PLUGINS`` and installed entry points (the machinery under
:mod:`rheotheory.plugin`, kept on the lowest floor so that the registries can load a plugin when a
name is not found without importing anything above them).

A reference ``WHERE:NAME`` (:func:`is_reference`) names an object in a plugin file or module; the
registries turn it into a family, a preset or a verifier (:func:`rheotheory.methods.resolve`,
:func:`rheotheory.verify.tree_verifier`).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from pathlib import Path

from .errors import RheoError

__all__ = ["PluginError", "ENTRY_POINT_GROUP", "ENV_VAR", "load_plugin", "load_object", "ensure_plugins",
           "is_reference", "loaded_plugins"]

#: The entry-point group installed packages register plugins in (a module, or a function called
#: with no arguments).
ENTRY_POINT_GROUP = "rheotheory.plugins"

#: Environment variable naming plugins to load (files or modules, separated by ``os.pathsep``).
ENV_VAR = "RHEO_PLUGINS"

#: Plugins loaded so far: what was asked for (a file's absolute path, a module's name) -> the module.
_LOADED: dict[str, object] = {}
_ENV_AND_ENTRY_POINTS_LOADED = False


class PluginError(RheoError):
    """A plugin could not be loaded, or a reference names nothing usable (one line, exit 2)."""


def loaded_plugins() -> list[str]:
    """What has been loaded, in order.

    Returns
    -------
    list of str
        Files as absolute paths, modules by name, entry points by their value (``module:attr``).
    """
    return list(_LOADED)


def _is_file(text: str) -> bool:
    return text.endswith(".py") or "/" in text or os.sep in text


def _in_cwd(top: str) -> bool:
    return (Path.cwd() / f"{top}.py").is_file() or (Path.cwd() / top / "__init__.py").is_file()


def load_plugin(where: str):
    """Import the plugin file (``path/to/file.py``) or module (``package.module``) once.

    A file is imported under a module name of its own (its stem and a hash of its path), so two
    files with one name do not collide; a module is looked for on ``sys.path`` and then in the
    current folder. Every loaded file is added to :data:`ENV_VAR` so that worker processes a
    command starts load it too.

    Parameters
    ----------
    where : str
        A path ending in ``.py`` (or holding a folder separator), or a dotted module name.

    Returns
    -------
    module
        The imported module (importing it ran its registrations).

    Raises
    ------
    PluginError
        The file is missing, the module cannot be found, or importing it raised.
    """
    if not isinstance(where, str) or not where.strip():
        raise PluginError(f"a plugin is a file.py or a module name, got {where!r}")
    where = where.strip()
    if _is_file(where):
        path = Path(where).expanduser().resolve()
        key = str(path)
        if key in _LOADED:
            return _LOADED[key]
        if not path.is_file():
            raise PluginError(f"plugin file {where!r} does not exist")
        name = f"rheo_plugin_{path.stem}_{hashlib.sha1(key.encode()).hexdigest()[:8]}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise PluginError(f"plugin file {where!r} is not a Python file")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # NOTE: dataclasses (a family is one) look their module up here
        _LOADED[key] = module  # NOTE: before running it: a file that names itself again is not reloaded
        try:
            spec.loader.exec_module(module)
        except BaseException as e:
            sys.modules.pop(name, None)
            _LOADED.pop(key, None)
            if isinstance(e, RheoError) or not isinstance(e, Exception):
                raise
            raise PluginError(f"loading plugin {where!r} failed: {type(e).__name__}: {e}") from None
        _export(key)
        return module
    if where in _LOADED:
        return _LOADED[where]
    top = where.split(".")[0]
    added = False
    try:
        try:
            module = importlib.import_module(where)
        except ModuleNotFoundError as e:
            if e.name != top or not _in_cwd(top):
                raise PluginError(f"cannot import plugin module {where!r} ({e}); for a file give "
                                  "path/to/file.py") from None
            sys.path.insert(0, str(Path.cwd()))  # NOTE: a module in the current folder, as `python -m` finds it
            added = True
            module = importlib.import_module(where)
    except RheoError:
        raise
    except Exception as e:
        raise PluginError(f"loading plugin module {where!r} failed: {type(e).__name__}: {e}") from None
    finally:
        if added:
            sys.path.remove(str(Path.cwd()))
    _LOADED[where] = module
    return module


def _export(path: str) -> None:
    """Add a loaded plugin file to :data:`ENV_VAR` (worker processes load it from there)."""
    have = [x for x in os.environ.get(ENV_VAR, "").split(os.pathsep) if x]
    if path not in have:
        os.environ[ENV_VAR] = os.pathsep.join(have + [path])


def ensure_plugins() -> None:
    """Load the plugins :data:`ENV_VAR` names and the installed entry points, once.

    An entry point names a module (importing it registers) or a function, called with no arguments.

    Raises
    ------
    PluginError
        A plugin or an entry point does not load (or its function raises).
    """
    global _ENV_AND_ENTRY_POINTS_LOADED
    if _ENV_AND_ENTRY_POINTS_LOADED:
        return
    _ENV_AND_ENTRY_POINTS_LOADED = True
    for where in os.environ.get(ENV_VAR, "").split(os.pathsep):
        if where.strip():
            load_plugin(where)
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.value in _LOADED:
            continue
        try:
            obj = ep.load()
            if callable(obj) and not isinstance(obj, type):
                obj()
        except RheoError:
            raise
        except Exception as e:
            raise PluginError(f"loading plugin entry point {ep.name!r} ({ep.value}) failed: "
                              f"{type(e).__name__}: {e}") from None
        _LOADED[ep.value] = obj


def is_reference(text) -> bool:
    """Whether a method or verifier spec is a reference ``WHERE:NAME[:field=value...]``.

    Parameters
    ----------
    text : str
        A spec as a command or :func:`rheotheory.methods.resolve` takes it (any other object: False).

    Returns
    -------
    bool
        True when its first part is non-empty and its second a Python name, not a ``field=value``
        option.

    Examples
    --------
    >>> is_reference("fork_method.py:ForkMethod:width=3"), is_reference("rheo:m=1"), is_reference("rheo")
    (True, False, False)
    """
    if not isinstance(text, str):
        return False
    parts = text.split(":")
    return len(parts) >= 2 and bool(parts[0]) and parts[1].isidentifier()


def load_object(ref: str):
    """The object ``WHERE:NAME`` names (``WHERE`` a file or a module, loaded by :func:`load_plugin`).

    Parameters
    ----------
    ref : str
        A reference ``WHERE:NAME[:field=value...]`` (the options are not read here).

    Returns
    -------
    object
        The attribute ``NAME`` of the loaded plugin: a :class:`~rheotheory.methods.registry.Method`
        subclass or object, a preset, a per-node rule or a
        :class:`~rheotheory.verify.walk.TreeVerifier`, as the caller expects.

    Raises
    ------
    PluginError
        The plugin does not load, or defines no such name (the message lists what it defines).
    """
    where, _, rest = ref.partition(":")
    name = rest.split(":")[0]
    module = load_plugin(where)
    try:
        return getattr(module, name)
    except AttributeError:
        public = sorted(n for n in vars(module) if not n.startswith("_"))[:12]
        raise PluginError(f"{where!r} has no {name!r}; it defines {', '.join(public) or 'nothing public'}") from None
