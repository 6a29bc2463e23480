"""The audit in a test suite: ``pytest --rheo-audit SPEC`` and the ``rheo_audit`` fixture.

Registered through the ``pytest11`` entry point (pyproject.toml), so an environment with
rheotheory installed has it in every pytest run; it imports nothing of the audit until it is used
(the fixture is requested or ``--rheo-audit`` given). Elsewhere, ``pytest -p
rheotheory.audit.pytest_plugin`` loads it.

- ``pytest --rheo-audit path/to/file.py:verify [--rheo-audit-kind tree] [--rheo-audit-budget 60s]``
  adds one test, ``rheo-audit[SPEC]``, that fails unless the verifier is not rejected
  (:func:`rheotheory.audit.api.assert_lossless`); it runs beside the suite's own tests.
  ``--rheo-audit-cmd "PROGRAM ARGS"`` does the same for a verifier program in any language
  (:mod:`rheotheory.audit.process`; ``--rheo-audit-framing binary`` for the binary framing).
- the fixture ``rheo_audit`` is :func:`~rheotheory.audit.api.assert_lossless` with the command
  line's ``--rheo-audit-budget``, ``--rheo-audit-runs`` and ``--rheo-audit-jobs`` as defaults::

      def test_my_verifier(rheo_audit):
          rheo_audit("my_engine/verify.py:verify", "chain")

      def test_my_program(rheo_audit):
          rheo_audit(command="./build/verify", framing="binary")
"""

from __future__ import annotations

import pytest

__all__ = ["pytest_addoption", "pytest_collection_modifyitems", "rheo_audit", "AuditItem"]


def _budget(text: str) -> float:
    import argparse

    from rheotheory.audit.api import parse_seconds

    try:
        return parse_seconds(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def pytest_addoption(parser) -> None:
    """Add the ``--rheo-audit*`` options (module docstring).

    Parameters
    ----------
    parser : pytest.Parser
    """
    g = parser.getgroup("rheo-audit", "rheotheory's audit of a speculative-decoding verifier")
    g.addoption("--rheo-audit", action="append", default=[], metavar="SPEC",
                help="audit this verifier (MODULE:FUNCTION or path/to/file.py:FUNCTION) as one more test")
    g.addoption("--rheo-audit-cmd", action="append", default=[], metavar="COMMAND",
                help="audit this verifier program (any language, the process protocol) as one more test")
    g.addoption("--rheo-audit-framing", default="json", choices=("json", "binary"),
                help="the program's framing (default json)")
    g.addoption("--rheo-audit-kind", default="chain", choices=("chain", "tree"), help="its signature (default chain)")
    g.addoption("--rheo-audit-budget", default=None, type=_budget, metavar="SECONDS",
                help="CPU time of each audit (e.g. 60s); default: the audit's default size")
    g.addoption("--rheo-audit-runs", default=None, type=int, metavar="N", help="runs per setting")
    g.addoption("--rheo-audit-jobs", default=1, type=int, metavar="N", help="worker processes at once")
    g.addoption("--rheo-audit-rule", default="auto",
                help="the rule the calls are checked against: auto (the default), a known rule's name, or any")


def _options(config) -> dict:
    kw = dict(budget=config.getoption("rheo_audit_budget"), runs=config.getoption("rheo_audit_runs"),
              jobs=config.getoption("rheo_audit_jobs"), rule=config.getoption("rheo_audit_rule"))
    return {k: v for k, v in kw.items() if v is not None}


class AuditItem(pytest.Item):
    """The test ``rheo-audit[SPEC]`` of ``--rheo-audit SPEC`` (or ``rheo-audit-cmd[COMMAND]`` of
    ``--rheo-audit-cmd COMMAND``).

    Parameters
    ----------
    spec : str
        The verifier (``MODULE:FUNCTION``), or the program's command line.
    kind : str
        Its signature, ``"chain"`` or ``"tree"``.
    program : bool, default False
        ``spec`` is a program's command line.
    **kw : object
        pytest's own (name, parent).
    """

    def __init__(self, *, spec: str, kind: str, program: bool = False, **kw):
        super().__init__(**kw)
        self.spec, self.kind, self.program = spec, kind, program

    def runtest(self) -> None:
        """Run the audit: :func:`~rheotheory.audit.api.assert_lossless` of the verifier (or of the
        program, in the ``--rheo-audit-framing`` framing) with the command line's audit options;
        the test fails as that call fails."""
        from rheotheory.audit.api import assert_lossless

        if self.program:
            assert_lossless(None, self.kind, command=self.spec, framing=self.config.getoption("rheo_audit_framing"),
                            **_options(self.config))
        else:
            assert_lossless(self.spec, self.kind, **_options(self.config))

    def repr_failure(self, excinfo, style=None):
        """The failure report: the audit's own message for a failed assertion, one line for a
        refusal, pytest's report for anything else.

        Parameters
        ----------
        excinfo : pytest.ExceptionInfo
            The exception the test raised.
        style : str, optional
            pytest's traceback style (not passed on: pytest's default report is used).

        Returns
        -------
        str or pytest's TerminalRepr
            The :class:`AssertionError`'s message, ``"rheo audit: MESSAGE"`` for a
            :class:`~rheotheory.errors.RheoError`, else :meth:`pytest.Item.repr_failure`'s.
        """
        if isinstance(excinfo.value, AssertionError):
            return str(excinfo.value)
        from rheotheory.errors import RheoError

        if isinstance(excinfo.value, RheoError):
            return f"rheo audit: {excinfo.value}"
        return super().repr_failure(excinfo)

    def reportinfo(self):
        """Where pytest reports the test: the spec (or command) in place of a file, no line.

        Returns
        -------
        tuple
            ``(spec, None, "rheo-audit[SPEC]")``.
        """
        return self.spec, None, f"rheo-audit[{self.spec}]"


def pytest_collection_modifyitems(session, config, items) -> None:
    """Add one :class:`AuditItem` per ``--rheo-audit`` and ``--rheo-audit-cmd``.

    Parameters
    ----------
    session : pytest.Session
    config : pytest.Config
    items : list
        The collected tests (appended to).
    """
    kind = config.getoption("rheo_audit_kind")
    for spec in config.getoption("rheo_audit") or ():
        items.append(AuditItem.from_parent(session, name=f"rheo-audit[{spec}]", spec=spec, kind=kind))
    for command in config.getoption("rheo_audit_cmd") or ():
        items.append(AuditItem.from_parent(session, name=f"rheo-audit-cmd[{command}]", spec=command, kind=kind,
                                           program=True))


@pytest.fixture
def rheo_audit(request):
    """:func:`rheotheory.audit.api.assert_lossless` with the command line's audit options as
    defaults (module docstring); returns the :class:`~rheotheory.audit.core.AuditResult`.

    Parameters
    ----------
    request : pytest.FixtureRequest
        pytest's request (for the command line's options).

    Returns
    -------
    callable
        ``audit(fn=None, kind="chain", **kw)``: :func:`~rheotheory.audit.api.assert_lossless`
        with ``budget``, ``runs``, ``jobs`` and ``rule`` defaulting to ``--rheo-audit-budget``,
        ``--rheo-audit-runs``, ``--rheo-audit-jobs`` and ``--rheo-audit-rule`` (a keyword given
        wins); it returns the :class:`~rheotheory.audit.core.AuditResult`.
    """
    from rheotheory.audit.api import assert_lossless

    defaults = _options(request.config)

    def audit(fn=None, kind: str = "chain", **kw):
        return assert_lossless(fn, kind, **{**defaults, **kw})

    return audit
