"""The API reference's docstring check (scripts/check_api_docs.py): every public callable documents
its parameters, returns and raises in numpy style. Each planted defect must be caught."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import check_api_docs  # noqa: E402

GOOD = '''
    __all__ = ["f", "C"]

    def f(a, b=1, *rest, **opts):
        """Add.

        Parameters
        ----------
        a : int
            First.
        b : int, default 1
            Second.
        *rest : int
            More.
        **opts : dict
            Options.

        Returns
        -------
        int
            The sum.

        Raises
        ------
        ValueError
            When a is negative.
        """
        if a < 0:
            raise ValueError("a")
        return a + b

    @dataclass(frozen=True)
    class C:
        """A record.

        Attributes
        ----------
        x, y : float
            Coordinates.
        """

        x: float
        y: float
        kind: ClassVar[str] = "c"

        def moved(self, dx):
            """Moved.

            Parameters
            ----------
            dx : float
                Shift.

            Returns
            -------
            C
                The moved record.
            """
            return C(self.x + dx, self.y)
'''


def problems(tmp_path, source: str) -> list[str]:
    pkg = tmp_path / "pkg"
    pkg.mkdir(exist_ok=True)
    (pkg / "mod.py").write_text(textwrap.dedent(source))
    return [str(p) for p in check_api_docs.check(tmp_path, ["pkg.mod"])]


def test_a_fully_documented_module_passes(tmp_path):
    assert problems(tmp_path, GOOD) == []


@pytest.mark.parametrize("old, new, expected", [
    ('        """Add.\n', '        """Add. Takes a and b and more.\n', None),  # a control: prose added, still fine
    ("        b : int, default 1\n            Second.\n", "", "pkg.mod.f: b not in its Parameters section"),
    ("        a : int\n", "        a\n", "pkg.mod.f: no type for a"),
    ("        Returns\n        -------\n        int\n            The sum.\n", "",
     "pkg.mod.f: returns a value but has no Returns section"),
    ("        Raises\n        ------\n        ValueError\n            When a is negative.\n", "",
     "pkg.mod.f: raises but has no Raises section"),
    ("        x, y : float\n", "        x : float\n", "pkg.mod.C: y not in its Parameters section"),
    ("            dx : float\n                Shift.\n", "", "pkg.mod.C.moved: dx not in its Parameters section"),
])
def test_each_planted_defect_is_caught(tmp_path, old, new, expected):
    assert old in GOOD
    got = problems(tmp_path, GOOD.replace(old, new, 1))
    if expected is None:
        assert got == []
    else:
        assert any(p.startswith(expected) for p in got), got


def test_a_public_function_without_a_docstring_or_its_parameters_in_prose_only_fails(tmp_path):
    got = problems(tmp_path, '''
        __all__ = ["g", "h"]

        def g(x):
            return x

        def h(x, y=2):
            """Scale ``x`` by ``y`` (the factor, default 2).

            Returns
            -------
            float
                The product.
            """
            return x * y
        ''')
    assert "pkg.mod.g: no docstring" in got
    assert any(p.startswith("pkg.mod.h: no Parameters") for p in got), got


def test_private_names_and_names_outside_all_are_not_checked(tmp_path):
    assert problems(tmp_path, '''
        __all__ = []

        def g(x):
            return x

        def _h(x):
            return x
        ''') == []
