r"""Strict certification: the checks that make a certificate independent of how a builder draws.

The exhaustive enumerator (:mod:`rheotheory.exact`) weights every answer to a draw with the law
the builder handed to ``chooser.draw`` when that draw was first reached, rebuilds a branch by
replaying its answers, and merges finished trees by what the verifier reads. The law of the
step's output it computes is exact when the builder keeps the contract of docs/theory.md
section 5.3:

1. every random choice goes through the chooser the builder is given, so a build is a function
   of the chooser's answers (no global random state, no state kept between calls, no clock);
2. the same earlier answers give the same law at the next draw, so the law an answer is weighted
   with is the law it is drawn from;
3. a sampled node's token comes from a chooser draw under the law the node declares to the
   verifier (its member law);
4. the verifier reads only the verifier view, so the trees merged into a class are verified alike.

The strict mode checks each rule instead of trusting it. A :class:`RecordingChooser` records
every draw of a build (the law, by value, and the answer); :class:`StrictRun` builds every branch
under a global random state of its own choosing (Python's ``random``, numpy's and torch's global
generators, each seeded per build), compares each replayed draw's law with the law its answer
was weighted with (rule 2), matches every sampled token with a recorded draw under its declared
law (rule 3), and after the enumeration rebuilds every branch again, in reverse order under other
global states and then after unrelated builds, comparing the records and the trees (rule 1).
Rule 4 is checked by the enumerator (:func:`rheotheory.exact.enumerate_classes` and
:func:`rheotheory.exact.check_ungrouped`). A broken rule raises :class:`ContractError` naming the
fault (global random state, state kept between calls, a law drawn from that is not the law
declared to the verifier), found by rebuilding the branch with one thing changed at a time.

The global states are set from fixed seeds, so a strict run gives the same verdict every time it
runs on a given builder, and the caller's global states are restored afterwards.
"""

from __future__ import annotations

import random
import sys
import zlib
from dataclasses import dataclass

import numpy as np

from . import laws
from .errors import RheoError
from .trees import NeedChoice, RandomChooser, ReplayChooser
from .trees.tree import SAMPLED, law_key

__all__ = ["ContractError", "RecordingChooser", "GlobalStates", "StrictRun", "Draw", "Signature", "provenance_fault",
           "first_difference", "MIN_REBUILDS", "UNRELATED_BUILDS"]

#: Fewest rebuilds a strict run makes after the enumeration: a small enumeration's branches are
#: rebuilt several times over (other global states each time), so that a builder reading a global
#: coin is met with both faces (2^-16 to miss a fair coin that decides anything).
MIN_REBUILDS = 16

#: Builds made with random answers (a seeded ``numpy.random.Generator``) before the last round of
#: rebuilds: state a builder keeps between calls is moved on by builds the enumeration never made.
UNRELATED_BUILDS = 4

#: Other states each global generator is set to, one at a time, when a fault is being named: a
#: builder reading a fair coin from it is caught with probability 1 - 2^-16.
DIAGNOSIS_STATES = 16

#: Values of a law shown in a message, at most.
SHOWN_VALUES = 6


class ContractError(RheoError):
    """A method broke the contract the certifier relies on (docs/theory.md section 5.3): a build
    that is not a function of its chooser's answers, a branch weighted with a law it was not drawn
    from, a sampled token not drawn under the law it declares, or trees merged into one class that
    the verifier tells apart. Raised by the strict mode, never silently ignored."""


class LawChanged(Exception):
    """Raised inside a build by :class:`RecordingChooser` when a replayed draw's law is not the law
    its answer was weighted with (rule 2); the strict run turns it into a :class:`ContractError`."""

    def __init__(self, index: int, expected, got):
        super().__init__(f"draw #{index + 1} changed its law")
        self.index, self.expected, self.got = index, expected, got


@dataclass(frozen=True)
class Draw:
    """One draw a build made: the law object handed to the chooser, its values, the answer.

    Attributes
    ----------
    law : numpy.ndarray of shape (V,)
        The law object handed to ``chooser.draw``.
    values : tuple
        Its values (:func:`~rheotheory.trees.tree.law_key`).
    token : int
        The answer.
    """

    law: object
    values: tuple
    token: int


class RecordingChooser(ReplayChooser):
    """A :class:`~rheotheory.trees.ReplayChooser` that records every draw and checks each replayed
    draw's law against the law its answer was weighted with.

    Parameters
    ----------
    script : tuple of int
        The answers, in draw order.
    expected : tuple or None
        For each answer, the values of the law it was weighted with (``None``: not checked).
    skip_doomed : bool, default False
        See :class:`~rheotheory.trees.tree.Chooser`.

    Attributes
    ----------
    record : list of Draw
        The draws made so far.
    changed : LawChanged or None
        The first replayed draw whose law differed from the expected one.
    """

    def __init__(self, script, expected=None, skip_doomed: bool = False):
        super().__init__(script, skip_doomed=skip_doomed)
        self.expected = expected
        self.record: list[Draw] = []
        self.changed: LawChanged | None = None

    def draw(self, law) -> int:
        """Answer the next draw from the script, recording it.

        Parameters
        ----------
        law : numpy.ndarray of shape (V,)
            The law the builder draws from.

        Returns
        -------
        int
            The scripted answer.

        Raises
        ------
        NeedChoice
            Past the end of the script (the enumerator branches here).
        LawChanged
            A replayed draw's law is not the law its answer was weighted with.
        """
        values = law_key(law)
        i = self.i
        if self.expected is not None and i < len(self.script) and self.expected[i] is not None \
                and values != self.expected[i] and self.changed is None:
            self.changed = LawChanged(i, self.expected[i], values)
            raise self.changed
        tok = super().draw(law)
        self.record.append(Draw(law, values, tok))
        return tok


#: The global generators a build may read, by the name a message gives them.
GENERATORS = {"random": "Python's random module", "numpy": "numpy's global generator (numpy.random)",
              "torch": "torch's global generator"}


class GlobalStates:
    """The process's global random states, set from fixed seeds during a strict run and restored
    afterwards (a context manager).

    Torch's generator is set only once torch is imported (by the builder, or before).
    """

    def __enter__(self):
        self._random = random.getstate()
        self._numpy = np.random.get_state()
        torch = sys.modules.get("torch")
        self._torch = torch.get_rng_state() if torch is not None else None
        return self

    def __exit__(self, *exc):
        random.setstate(self._random)
        np.random.set_state(self._numpy)
        torch = sys.modules.get("torch")
        if torch is not None and self._torch is not None:
            torch.set_rng_state(self._torch)
        return False

    def names(self) -> list[str]:
        """The generators that exist in this process now.

        Returns
        -------
        list of str
            Keys of :data:`GENERATORS`.
        """
        return ["random", "numpy"] + (["torch"] if "torch" in sys.modules else [])

    def seed(self, tag, only: str | None = None) -> None:
        """Seed every global generator (or the one named ``only``) from ``tag``.

        Parameters
        ----------
        tag : object
            Anything with a stable ``repr``; equal tags give equal states.
        only : str, optional
            A key of :data:`GENERATORS`: seed that generator alone.
        """
        n = zlib.crc32(repr(tag).encode())
        if only in (None, "random"):
            random.seed(n)
        if only in (None, "numpy"):
            np.random.seed(n)
        torch = sys.modules.get("torch")
        if torch is not None and only in (None, "torch"):
            torch.manual_seed(n)


def _show(values) -> str:
    """A law's values, short."""
    if values is None:
        return "none"
    if len(values) == 2 and isinstance(values[0], str):  # float: (dtype, bytes)
        vals = np.frombuffer(values[1], dtype=values[0]).tolist()
    else:
        vals = list(values)
    shown = ", ".join(laws.format_number(v) for v in vals[:SHOWN_VALUES])
    return f"[{shown}{', ...' if len(vals) > SHOWN_VALUES else ''}]"


@dataclass(frozen=True)
class Signature:
    """What a build did, compared between builds on the same answers.

    Attributes
    ----------
    draws : tuple of (tuple, int)
        Each draw's law values and answer, in order.
    used : int
        Answers of the script the build used.
    view : tuple or None
        What the verifier sees of the tree (:meth:`~rheotheory.trees.Tree.verifier_view`);
        ``None`` when the build asked for more answers than the script holds.
    """

    draws: tuple
    used: int
    view: tuple | None

    def difference(self, other: "Signature") -> str:
        """Where two builds first differ, in words.

        Parameters
        ----------
        other : Signature
            The other build.

        Returns
        -------
        str
            The first draw whose law or answer differs, or the tree part that differs.
        """
        for k, (a, b) in enumerate(zip(self.draws, other.draws)):
            if a != b:
                return f"draw #{k + 1} from law {_show(a[0])} in one build and from {_show(b[0])} in the other"
        if len(self.draws) != len(other.draws):
            return f"one build made {len(self.draws)} draws, the other {len(other.draws)}"
        return f"the trees differ ({first_difference(self.view, other.view)})"


class StrictRun:
    """The strict checks of one enumeration (module docstring): builds branches for the
    enumerator, checks each, and rebuilds them all at the end.

    Parameters
    ----------
    build : callable
        The method's builder, ``build(chooser) -> Tree``.
    skip_doomed : bool
        Whether the enumerator's chooser lets the builder skip doomed expansions.
    states : GlobalStates
        The entered global states.
    """

    def __init__(self, build, skip_doomed: bool, states: GlobalStates):
        self.build_fn, self.skip_doomed, self.states = build, skip_doomed, states
        self.runs = 0
        self.branches: list[tuple[tuple, Signature]] = []  # (answers, signature) of each finished branch

    # -- one build ------------------------------------------------------------------------------
    def _build(self, script, expected, tag):
        self.states.seed(tag)
        chooser = RecordingChooser(script, expected, self.skip_doomed)
        try:
            tree = self.build_fn(chooser)
        except LawChanged as e:
            raise self._law_changed(e, script) from None
        if chooser.changed is not None:  # NOTE: the builder swallowed the exception
            raise self._law_changed(chooser.changed, script)
        return tree, chooser

    def build(self, script: tuple, expected: tuple):
        """Build the enumerator's branch ``script`` (a global state of its own; rules 1 and 2).

        Parameters
        ----------
        script : tuple of int
            The answers.
        expected : tuple
            The values of the law each answer was weighted with.

        Returns
        -------
        Tree
            The finished tree.

        Raises
        ------
        NeedChoice
            The build asks past the end of the script.
        ContractError
            A replayed draw's law is not the law its answer was weighted with, the build did not
            use every answer, or a sampled token was not drawn under its declared law.
        """
        self.runs += 1
        tree, chooser = self._build(script, expected, ("enumerate", self.runs))
        if chooser.i != len(script):
            raise self._contract(script, f"a build on the answers {list(script)} used {chooser.i} of them, while "
                                 "an earlier build on the same earlier answers asked for more (rule 2)")
        fault = provenance_fault(tree, chooser.record)
        if fault is not None:
            fault = f"{fault} (answers {list(script)}; docs/theory.md section 5.3, rule 3)"
            why = self.diagnose(script)
            raise ContractError(fault if why is None else f"{why}; {fault}")
        self.branches.append((script, Signature(tuple((d.values, d.token) for d in chooser.record), chooser.i,
                                                tree.verifier_view())))
        return tree

    def signature(self, script, tag) -> Signature:
        """Rebuild ``script`` under the global state ``tag``, without checks.

        Parameters
        ----------
        script : tuple of int
            The answers.
        tag : object
            The global state's seed tag.

        Returns
        -------
        Signature
            What the build did (``view`` None when it asked for more answers).
        """
        self.states.seed(tag)
        return self._signature(script)

    def _signature(self, script) -> Signature:
        chooser = RecordingChooser(script, None, self.skip_doomed)
        try:
            tree = self.build_fn(chooser)
        except NeedChoice:
            return Signature(tuple((d.values, d.token) for d in chooser.record), chooser.i, None)
        return Signature(tuple((d.values, d.token) for d in chooser.record), chooser.i, tree.verifier_view())

    # -- after the enumeration ------------------------------------------------------------------
    def rebuild_all(self) -> None:
        """Rebuild every finished branch in reverse order under other global states (at least
        :data:`MIN_REBUILDS` rebuilds), then again after :data:`UNRELATED_BUILDS` builds with
        random answers, and compare each with the first build (rule 1).

        Raises
        ------
        ContractError
            A rebuild differs from the first build of its branch.
        """
        if not self.branches:
            return
        done, rnd = 0, 0
        while done < MIN_REBUILDS or rnd == 0:
            rnd += 1
            for k, (script, sig) in enumerate(reversed(self.branches)):
                self._compare(script, sig, self.signature(script, ("rebuild", rnd, k)))
                done += 1
        for k in range(UNRELATED_BUILDS):
            self.states.seed(("unrelated", k))
            self.build_fn(RandomChooser(np.random.default_rng(k)))
        for k, (script, sig) in enumerate(self.branches):
            self._compare(script, sig, self.signature(script, ("after unrelated builds", k)))

    def _compare(self, script, first: Signature, again: Signature) -> None:
        if again != first:
            raise self._contract(script, f"first seen when a rebuild of the branch with answers {list(script)} "
                                 f"differed from its first build ({first.difference(again)})")

    # -- naming the fault -----------------------------------------------------------------------
    def diagnose(self, script) -> str | None:
        """Which contract fault makes builds on ``script`` differ: state kept between calls, or
        one of the global generators (each changed alone, to up to :data:`DIAGNOSIS_STATES`
        other states).

        Parameters
        ----------
        script : tuple of int
            The answers of a branch.

        Returns
        -------
        str or None
            The fault, in words, where the builds differ, and the rule it breaks; ``None`` when
            neither reproduces a difference.
        """
        at = f"answers {list(script)}"
        a = self.signature(script, ("diagnose", 0))
        b = self.signature(script, ("diagnose", 0))
        if a != b:
            return ("the builder keeps state between calls: two builds on the same answers under the same global "
                    f"random state differ ({at}: {a.difference(b)}); a counter, a cache that changes what it "
                    "returns, or the clock decides what it does (docs/theory.md section 5.3, rule 1)")
        for name in self.states.names():
            for k in range(1, DIAGNOSIS_STATES + 1):
                self.states.seed(("diagnose", 0))
                self.states.seed(("diagnose", k), only=name)
                c = self._signature(script)
                if c != a:
                    return (f"the builder reads global random state, {GENERATORS[name]}: builds on the same answers "
                            f"differ when only its state changes ({at}: {a.difference(c)}); every random choice "
                            "must go through the chooser it is given, chooser.draw(law) (docs/theory.md section 5.3, "
                            "rule 1)")
        return None

    def _contract(self, script, what: str) -> ContractError:
        fault = self.diagnose(script) or (
            f"builds on the same answers differ (answers {list(script)}), and neither state kept between calls nor "
            "a global generator reproduces it (the operating system's randomness, or the clock?); every random "
            "choice must go through the chooser it is given (docs/theory.md section 5.3, rule 1)")
        return ContractError(f"{fault}; {what}")

    def _law_changed(self, e: LawChanged, script) -> ContractError:
        return self._contract(script, f"so the certificate would weight draw #{e.index + 1} of the branch with "
                              f"answers {list(script)} with law {_show(e.expected)}, while a build on those answers "
                              f"drew it from {_show(e.got)} (rule 2)")


def provenance_fault(tree, record: list[Draw]) -> str | None:
    """Rule 3 on one finished tree: each resolved sampled node's token comes from a draw of
    ``record`` under the law the node declares (its member law), each draw serving one node.

    Parameters
    ----------
    tree : Tree
        The finished tree.
    record : list of Draw
        The draws its build made, through the chooser it was given.

    Returns
    -------
    str or None
        The first fault, in words; ``None`` when every token is accounted for.
    """
    claimed: set[int] = set()

    def claim(law, token) -> bool:
        for k, d in enumerate(record):
            if k not in claimed and d.law is law and d.token == token:
                claimed.add(k)
                return True
        return False

    nodes = [i for i, n in enumerate(tree.nodes) if n.kind == SAMPLED and n.token is not None]
    placed = []
    for i in nodes:
        node = tree.nodes[i]
        where = f"sampled node {i} (path {list(_safe_path(tree, i))})"
        try:
            declared = tree.member_law(i)
        except RheoError as e:
            return f"{where}: its declared law cannot be formed ({e})"
        src = node.source
        if src is None:
            placed.append((i, where, law_key(declared)))
            continue
        if src[0] == "draw":
            steps = [(src[1], node.token, declared)]
        else:
            coarse, block, rest = src[1], src[2], src[3]
            expect = tree.coarse_law(declared, block, rest)
            if src[0] == "coarse":
                steps = [(coarse, node.token, expect)]
            else:
                steps = [(coarse, rest, expect), (src[4], node.token, laws.restrict(declared, list(block)))]
        for law, token, want in steps:
            if not claim(law, token):
                return (f"{where}: its token was drawn through a chooser other than the one the builder was given "
                        "(every random choice must go through that chooser)")
            if want is None or law_key(law) != law_key(want):
                return (f"{where} was drawn from law {_show(law_key(law))} but declares "
                        f"{_show(law_key(declared))} to the verifier: a law drawn from that is not the law declared "
                        "to the verifier (its group's law changed after the draw, or its token was drawn from "
                        "another law)")
    for i, where, want in placed:
        token = tree.nodes[i].token
        match = next((k for k, d in enumerate(record) if k not in claimed and d.token == token and d.values == want),
                     None)
        if match is None:
            other = next((d for k, d in enumerate(record) if k not in claimed and d.token == token), None)
            if other is not None:
                return (f"{where} holds token {token} drawn from law {_show(other.values)} but declares "
                        f"{_show(want)} to the verifier: a law drawn from that is not the law declared to the "
                        "verifier")
            return (f"{where} holds token {token}, which no draw of its chooser produced: it was drawn outside the "
                    "chooser (global random state, a generator of its own) or set by hand; draw it with "
                    "tree.resolve(node, chooser), or place it with tree.add(..., token=chooser.draw(law)) under "
                    "the law it declares")
        claimed.add(match)
    return None


def first_difference(a, b, path: str = "root") -> str:
    """Where two nested view tuples first differ, in words.

    Parameters
    ----------
    a, b : tuple
        Two verifier views (:meth:`~rheotheory.trees.Tree.verifier_view`) or parts of them.
    path : str, default "root"
        The name of the part compared.

    Returns
    -------
    str
        The index path of the first difference and the two values there, shortened.
    """
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return first_difference(x, y, f"{path}[{i}]")
    return f"{path}: {str(a)[:80]} vs {str(b)[:80]}"


def _safe_path(tree, idx: int) -> tuple:
    out = []
    while idx > 0:
        node = tree.nodes[idx]
        out.append("?" if node.token is None else node.token)
        idx = node.parent
    return tuple(reversed(out))
