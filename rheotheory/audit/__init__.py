"""The audit: other people's verifiers and engines against the exact target law (docs/guide/audit.md).

- :mod:`~rheotheory.audit.api`: :func:`audit_verifier` and :func:`assert_lossless`, the audit of a
  verifier function from Python or a test suite;
- :mod:`~rheotheory.audit.core`: the one law test (cells, Pearson, Bonferroni, stated power);
- :mod:`~rheotheory.audit.user`: the harness that drives a user's verifier function with toy laws;
- :mod:`~rheotheory.audit.rules`: each call against its exact law under a known rule;
- :mod:`~rheotheory.audit.isolate`: the worker processes the calls run in;
- :mod:`~rheotheory.audit.toy`: the seeded toy law families;
- :mod:`~rheotheory.audit.examples`: reference verifiers and planted companions in both signatures;
- :mod:`~rheotheory.audit.engines`: one adapter per engine;
- :mod:`~rheotheory.audit.pytest_plugin`: ``pytest --rheo-audit`` and the ``rheo_audit`` fixture.

The names below are imported on first use (PEP 562), so that the pytest plugin costs nothing in
a test run that does not use it.
"""

from __future__ import annotations

import importlib

_LAZY = {
    "LOSSLESS": "core", "LOSSY": "core", "LOSSY_BY_DESIGN": "core", "AuditResult": "core", "Setting": "core",
    "SettingResult": "core", "detectable_tv": "core", "run_audit": "core",
    "audit_verifier": "api", "assert_lossless": "api", "DIFFERS": "api",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
