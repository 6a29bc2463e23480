import os

import pytest
from hypothesis import HealthCheck, settings

# Fixed, derandomised hypothesis runs: the suite is reproducible and its length predictable.
settings.register_profile("ci", derandomize=True, deadline=None, max_examples=60,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", derandomize=False, deadline=None, max_examples=1000,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

#: tests/plugins/ holds plugin files that tests load on purpose (tests/test_plugin.py), each under
#: a fixture that restores the registries. Imported by --doctest-modules at collection, they would
#: register their families and verifiers for the whole session, and every test that draws from the
#: registries would meet them.
collect_ignore = ["plugins"]


#: Set by CI's claims tier (.ci/run): there a skipped claims test, or a test module skipped because
#: an optional dependency is missing, is a failure (nothing the README claims may skip silently).
NO_SKIP = os.environ.get("RHEO_CLAIMS_NO_SKIP") == "1"

#: Set by CI's readme tier (.ci/run), which runs the README's test command on the bare `dev`
#: install: the node ids of the tests and modules that skipped are written to this file, one a line,
#: and the next tier reruns exactly them once the extras are installed (`pytest @FILE`).
SKIPPED_LOG = os.environ.get("RHEO_SKIPPED_LOG")
_SKIPPED: list = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if SKIPPED_LOG and rep.skipped:
        _SKIPPED.append(item.nodeid)
    if NO_SKIP and rep.skipped and item.get_closest_marker("claims") is not None:
        rep.outcome = "failed"
        rep.longrepr = f"RHEO_CLAIMS_NO_SKIP=1 and this claims test skipped: {rep.longrepr}"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    rep = outcome.get_result()
    if SKIPPED_LOG and rep.skipped and rep.nodeid:
        _SKIPPED.append(rep.nodeid)
    if NO_SKIP and rep.skipped:
        rep.outcome = "failed"
        rep.longrepr = f"RHEO_CLAIMS_NO_SKIP=1 and this module skipped: {rep.longrepr}"


def pytest_sessionfinish(session, exitstatus):
    if SKIPPED_LOG:
        with open(SKIPPED_LOG, "w") as f:
            f.writelines(f"{nodeid}\n" for nodeid in dict.fromkeys(_SKIPPED))


@pytest.fixture
def restore_registries(monkeypatch):
    """A test's plugins leave the registries as they found them (other test files draw methods
    from the registry: a plugin family left behind would join their draws); RHEO_PLUGINS unset."""
    import sys

    import rheotheory.plugin_loader as plugin_loader
    from rheotheory.methods import FAMILIES, PRESETS
    from rheotheory.verify.rules import RULE_FAMILIES, VERIFIERS
    from rheotheory.verify.walk import TREE_VERIFIERS

    saved = [(d, dict(d)) for d in (FAMILIES, PRESETS, VERIFIERS, RULE_FAMILIES, TREE_VERIFIERS, plugin_loader._LOADED)]
    monkeypatch.delenv("RHEO_PLUGINS", raising=False)
    yield
    for d, copy in saved:
        d.clear()
        d.update(copy)
    for name in [m for m in sys.modules if m.startswith("rheo_plugin_")]:
        del sys.modules[name]
