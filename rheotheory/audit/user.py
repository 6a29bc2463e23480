"""The user protocol: drive a verifier function with seeded toy laws and test its output law.

``rheo audit --verifier MODULE:FUNCTION --kind chain|tree`` (signatures in
:mod:`rheotheory.audit.examples`). The harness plays the engine around the function, step after
step, from an empty prefix:

1. it drafts: ``k`` tokens along a chain, or a tree of width ``w`` and depth ``D``, each token
   drawn from the toy draft law after its path (:class:`rheotheory.audit.toy.ToyLaws`) with the
   harness's own generator (or deterministically: the arg-max, or top-w, as a family says);
2. it hands the verifier the drafted tokens, the law each was drawn from, the target law at
   each drafted position and a seeded ``torch.Generator``;
3. it checks the answer (type, shape, an accepted prefix or root path, tokens in the
   vocabulary) and appends it to the prefix; then the next step drafts from there.

Runs stop once ``L`` tokens are out, ``L = k + 2`` (chain) or ``D + 2`` (tree): every run spans
at least two steps and tests the whole output of a step, bonus token included. The law of
those ``L`` tokens must be the target's if the verifier is lossless; the core
(:mod:`rheotheory.audit.core`) tests it per setting.

Before testing, each setting is run twice from the same seeds (the *probe*, :func:`probe`): a
verifier whose outputs then differ draws from something other than the generator it is handed
(Python's ``random``, the global torch generator) and is refused, naming the setting. So is a
function that raises or returns something other than the signature says, and one that avoids
being tested: it exits (``sys.exit``, ``KeyboardInterrupt``, or ``os._exit`` and crashes, which
:mod:`rheotheory.audit.isolate` catches by running the calls in a worker process), touches
torch's, numpy's or Python's global generator (before each probing call the harness sets them to
states that differ between the two passes, and looks at them after the call: a verifier that
reseeds one at every call passes the comparison of outputs but not this), reseeds the generator
it is handed, or never draws from it.

Every call is also checked as it is made: an output token the target gives probability 0 after
its prefix is kept as the setting's *witness* (the call's inputs and output), and, for the rule
check of :mod:`rheotheory.audit.rules`, the call's output is tallied against its exact law under
each known rule.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from ..errors import RheoError
from .core import Setting
from .rules import Tally, call_laws, rules_for
from .toy import DEFAULT_VOCAB, FAMILIES, ToyLaws

__all__ = ["KINDS", "load_verifier", "chain_settings", "tree_settings", "settings_for", "check_reproducible",
           "DEFAULT_RUNS", "CHAIN_KS", "TREE_SHAPES", "TREE_DRAWS", "REPRO_RUNS", "VerifierCallError", "Counted",
           "Collected", "probe_runs", "probe_verdict", "probe_all", "PROBE_CHECKS"]

#: The two signatures (:mod:`rheotheory.audit.examples`).
KINDS = ("chain", "tree")

#: Runs per setting by default: about the smallest at which the planted companion of each kind
#: is rejected in every setting family (docs/guide/audit.md states the resulting power).
DEFAULT_RUNS = 2000

#: Draft lengths of the chain settings.
CHAIN_KS = (1, 2, 3, 4)

#: Tree shapes (width w, depth D) and how children are drawn:
#: ``iid`` (w independent draws from q), ``wor`` (w draws without replacement), ``topk`` (the
#: w most probable tokens, deterministic), ``mixed`` (the most probable token, then w - 1 draws
#: without replacement from the rest: RheoSampling's slot layout).
TREE_SHAPES = ((2, 2), (3, 1), (2, 3))
TREE_DRAWS = ("iid", "wor", "topk", "mixed")

#: Runs of the reproducibility check (same seeds twice; outputs must agree).
REPRO_RUNS = 25

#: The seed check: the calls of each setting's first probe pass are sent again with another
#: generator (until an answer changes, at most this many a setting). A verifier whose answer never
#: changes over at least :data:`MIN_REPLAYED` of them does not draw from its generator or reseeds it
#: identically (a program: ignores the per-call seed, or seeds a constant at each call). A lossless
#: verifier at T > 0 answers at random: with the toy laws an unchanged answer needs the token drawn
#: from the target side to repeat, and 50 repeats in a row have a chance far below 1e-9.
REPLAY_CALLS = 200
MIN_REPLAYED = 50


class VerifierCallError(RheoError):
    """The audited function or program broke its contract (raised, exited, answered something
    else, or avoided being tested); its message is one line naming what it did and the setting."""


def load_verifier(spec: str) -> Callable:
    """The function ``spec`` names: ``MODULE:FUNCTION`` (an importable module, the current folder
    first) or ``path/to/file.py:FUNCTION``.

    Parameters
    ----------
    spec : str

    Returns
    -------
    callable

    Raises
    ------
    rheotheory.errors.RheoError
        A malformed spec, a missing file or function, or a module that fails to import (one line).
    """
    if not isinstance(spec, str) or spec.count(":") < 1:
        raise RheoError(f"--verifier must be MODULE:FUNCTION or path/to/file.py:FUNCTION, got {spec!r}")
    where, _, name = spec.rpartition(":")
    if not where or not name.isidentifier():
        raise RheoError(f"--verifier must be MODULE:FUNCTION or path/to/file.py:FUNCTION, got {spec!r}")
    try:
        if where.endswith(".py") or "/" in where or "\\" in where:
            path = Path(where)
            if not path.is_file():
                raise RheoError(f"--verifier: no such file {where!r}")
            mod_name = f"rheo_audit_{path.stem}"
            loader_spec = importlib.util.spec_from_file_location(mod_name, path)
            module = importlib.util.module_from_spec(loader_spec)
            sys.modules[mod_name] = module
            loader_spec.loader.exec_module(module)
        else:
            module = _import_here(where)
    except RheoError:
        raise
    except ModuleNotFoundError as e:
        hint = ""
        if e.name is not None and where.split(".")[0] == e.name.split(".")[0]:
            hint = f"; for a file, give its path: path/to/{where.replace('.', '/')}.py:{name}"
        raise RheoError(f"--verifier: importing {where!r} failed: {type(e).__name__}: {e}{hint}") from None
    except BaseException as e:  # NOTE: the user's module failed to import (or exited): say so in one line
        if isinstance(e, KeyboardInterrupt):
            raise
        raise RheoError(f"--verifier: importing {where!r} failed: {type(e).__name__}: {e}") from None
    fn = getattr(module, name, None)
    if fn is None or not callable(fn):
        raise RheoError(f"--verifier: {where!r} has no function {name!r}")
    return fn


def _import_here(where: str):
    """``importlib.import_module(where)`` with the current folder on the import path (as
    ``python -m`` has it; the ``rheo`` script's own folder is there instead)."""
    here = os.getcwd()
    added = here not in sys.path and "" not in sys.path
    if added:
        sys.path.insert(0, here)
    try:
        return importlib.import_module(where)
    finally:
        if added and here in sys.path:
            sys.path.remove(here)


def _check_arity(fn, kind: str) -> None:
    if isinstance(fn, Counted):
        fn = fn.fn
    want = 4 if kind == "chain" else 5
    try:
        inspect.signature(fn).bind(*range(want))
    except TypeError:
        raise RheoError(f"the verifier {getattr(fn, '__name__', fn)!r} does not take the {want} positional "
                        f"arguments of --kind {kind} (docs/guide/audit.md)") from None
    except ValueError:  # NOTE: no signature (a builtin): calling it will tell
        pass


def _call(fn, args, where: str):
    try:
        return fn(*args)
    except VerifierCallError as e:  # NOTE: a transport's own refusal (rheotheory.audit.process): add the setting
        raise VerifierCallError(f"{e} (setting {where!r})") from None
    except Exception as e:  # NOTE: any failure of the audited function is its contract broken
        raise VerifierCallError(f"the verifier raised {type(e).__name__}: {e} (setting {where!r})") from None
    except SystemExit as e:  # NOTE: an exit inside the function must not end the audit (exit 0 would pass CI)
        raise VerifierCallError(f"the verifier called sys.exit({e.code!r}) (setting {where!r}); a verifier must "
                                "return its tokens, never exit") from None
    except BaseException as e:  # NOTE: KeyboardInterrupt, GeneratorExit raised by the function itself
        raise VerifierCallError(f"the verifier raised {type(e).__name__} (setting {where!r}); a verifier must "
                                "return its tokens") from None


def _as_tokens(out, where: str, vocab: int) -> list[int]:
    import torch

    if not isinstance(out, torch.Tensor):
        raise VerifierCallError(f"the verifier returned {type(out).__name__}, expected a LongTensor [m] "
                                f"(setting {where!r})")
    if out.dtype.is_floating_point or out.dtype.is_complex or out.dtype == torch.bool:
        raise VerifierCallError(f"the verifier returned a {out.dtype} tensor, expected integer tokens "
                                f"(setting {where!r})")
    if out.ndim != 1 or out.numel() < 1:
        raise VerifierCallError(f"the verifier returned shape {list(out.shape)}, expected [m] with m >= 1 "
                                f"(setting {where!r})")
    toks = out.tolist()
    if any(t < 0 or t >= vocab for t in toks):
        raise VerifierCallError(f"the verifier returned token(s) outside the vocabulary 0..{vocab - 1}: {toks} "
                                f"(setting {where!r})")
    return toks


class _Rows:
    """Cached float32 torch rows of a toy law, and the cumulative sums the draft draws use."""

    def __init__(self, laws: ToyLaws, role: str):
        self.laws, self.role = laws, role
        self.rows, self.cums = {}, {}

    def row(self, u: tuple):
        import torch

        r = self.rows.get(u)
        if r is None:
            r = self.rows[u] = torch.from_numpy(self.laws.law(self.role, u).astype(np.float32))
        return r

    def np(self, u: tuple) -> np.ndarray:
        return self.laws.law(self.role, u)

    def draw(self, u: tuple, rng: np.random.Generator, exclude=()) -> int:
        """A draw from the law after ``u`` (restricted to the tokens outside ``exclude``)."""
        if exclude:
            w = self.np(u).copy()
            w[list(exclude)] = 0.0
            c = np.cumsum(w)
        else:
            c = self.cums.get(u)
            if c is None:
                c = self.cums[u] = np.cumsum(self.np(u))
        x = min(int(np.searchsorted(c, rng.random() * c[-1], side="right")), len(c) - 1)
        while c[x] == (c[x - 1] if x else 0.0):  # NOTE: never a zero-mass token (u at a boundary)
            x -= 1
        return x


def _streams(seed: int, index: int):
    """The harness's draft generator, the verifier's torch generator of setting ``index`` and
    that generator's seed."""
    import torch

    ss = np.random.SeedSequence([int(seed), int(index)])
    draft, verify = ss.spawn(2)
    gseed = int(verify.generate_state(1)[0])
    return np.random.default_rng(draft), torch.Generator().manual_seed(gseed), gseed


def _argmax(w: np.ndarray, exclude=()) -> int:
    w = w.copy()
    w[list(exclude)] = -1.0
    return int(np.argmax(w))  # NOTE: the lowest id on a tie


#: The global generators a verifier must not touch: (name in messages, how it is reseeded).
_GLOBALS = (("torch's global generator", "torch.manual_seed"), ("numpy's global generator", "np.random.seed"),
            ("Python's random", "random.seed"))


@dataclass
class Collected:
    """What one :func:`collect` of a setting saw (plain, picklable data).

    Attributes
    ----------
    runs : list of tuple
        The runs: tuples of at least ``L`` tokens.
    calls : int, default 0
    tallies : dict
        Rule -> :class:`rheotheory.audit.rules.Tally` of the calls.
    witness : dict or None, default None
        The first call with an output token the target gives 0 (first ``L`` positions).
    drew : bool, default False
        Whether the verifier drew from its generator at all.
    touched : dict
        Global generator -> (call index, digest of its state after).
    seconds : float, default 0.0
    replayed : int, default 0
        Calls of the probe sent again with another generator (the seed check).
    varied : int, default 0
        Of those, the calls whose answer changed.
    """

    runs: list  # the runs: tuples of >= L tokens
    calls: int = 0
    tallies: dict = field(default_factory=dict)  # rule -> rules.Tally of the calls
    witness: dict | None = None  # the first call with an output token the target gives 0 (first L positions)
    drew: bool = False  # whether the verifier drew from its generator at all
    touched: dict = field(default_factory=dict)  # global generator -> (call index, digest of its state after)
    seconds: float = 0.0
    replayed: int = 0  # calls of the probe sent again with another generator (the seed check)
    varied: int = 0  # of those, the calls whose answer changed


def _rounded(t) -> list:
    return None if t is None else np.round(np.asarray(t, dtype=np.float64), 4).tolist()


class _Call:
    """One verifier call made by the harness: the checks every call gets (module docstring)."""

    def __init__(self, fn, name: str, laws: ToyLaws, p_rows, L: int, rec: Collected, probe, rules, gseed: int,
                 seed_key):
        self.fn, self.name, self.laws, self.p_rows, self.L, self.rec = fn, name, laws, p_rows, L, rec
        self.probe, self.rules, self.gseed, self.seed_key = probe, rules, gseed, seed_key

    def _set_globals(self):
        import torch

        v = int(np.random.SeedSequence([*self.seed_key, int(self.probe), self.rec.calls]).generate_state(1)[0])
        # NOTE: the CPU generator alone: torch.manual_seed also queues a seed for CUDA, recording a
        # stack trace each time (2 ms a call, most of the probe's time)
        torch.random.default_generator.manual_seed(v)
        np.random.seed(v % 2**32)
        random.seed(v)
        return v, torch.random.get_rng_state(), np.random.get_state(), random.getstate()

    def _check_globals(self, before) -> None:
        import torch

        v, ts, ns, rs = before
        now = (torch.random.get_rng_state(), np.random.get_state(), random.getstate())
        changed = (not torch.equal(now[0], ts),
                   not (np.array_equal(now[1][1], ns[1]) and now[1][2] == ns[2]),
                   now[2] != rs)
        digests = (int(torch.initial_seed()) if torch.initial_seed() != v else hash(now[0].numpy().tobytes()),
                   hash((now[1][1].tobytes(), now[1][2])), hash(now[2]))
        for (what, _), hit, dig in zip(_GLOBALS, changed, digests):
            if hit and what not in self.rec.touched:
                self.rec.touched[what] = (self.rec.calls, dig, what.startswith("torch") and torch.initial_seed() != v)

    def _replay(self, args, toks) -> None:
        """The seed check: the same call once more with another generator (a fresh one, seeded
        apart from every stream of the audit); whether the answer changed."""
        import torch

        other = torch.Generator().manual_seed((self.gseed * 2654435761 + self.rec.replayed + 1) % 2**63)
        again = _as_tokens(_call(self.fn, (*args[:-1], other), self.name), self.name, self.laws.vocab)
        self.rec.replayed += 1
        self.rec.varied += again != toks

    def __call__(self, args, z: tuple, check, law_of, inputs) -> list[int]:
        """Call the verifier with ``args`` after prefix ``z``; ``check(toks)`` raises on an answer
        of the wrong form; ``law_of(rules)`` is the call's exact law under each known rule."""
        before = self._set_globals() if self.probe is not None else None
        toks = _as_tokens(_call(self.fn, args, self.name), self.name, self.laws.vocab)
        if before is not None:
            self._check_globals(before)
        gen = args[-1]
        if self.probe == 0 and self.rec.replayed < REPLAY_CALLS and not self.rec.varied:
            # NOTE: before the check of the handed generator's seed, which a replay does not touch
            self._replay(args, toks)
        if gen.initial_seed() != self.gseed:
            raise VerifierCallError(f"the verifier reseeds the generator it is handed (generator.manual_seed; "
                                    f"setting {self.name!r}); draw from it, never reseed it")
        check(toks)
        self.rec.calls += 1
        got = tuple(toks)
        if self.rules:
            laws = law_of(self.rules)
            for rule in self.rules:
                self.rec.tallies[rule].add(laws[rule], got, inputs)
        if self.rec.witness is None:
            for j, t in enumerate(toks):
                if len(z) + j >= self.L:
                    break
                u = z + got[:j]
                if self.p_rows.np(u)[t] <= 0.0:
                    self.rec.witness = dict(inputs(), prefix=list(z), returned=list(got), position=len(z) + j,
                                            token=int(t), after=list(u))
                    break
        return toks


def _collect_runs(fn, name: str, laws: ToyLaws, p_rows, L: int, n: int, s: int, index: int, probe, rules,
                  step) -> Collected:
    """The run loop of both kinds: ``n`` runs of ``L`` tokens from the setting's streams, each
    step's verifier call made by ``step(z, rng, gen, call)`` (the draft built from ``rng``; it
    returns the step's tokens); the runs timed in CPU seconds of this process (wall seconds for a
    program, whose own CPU time this process does not see), and whether ``gen`` was drawn from."""
    import torch

    rng, gen, gseed = _streams(s, index)
    g0 = gen.get_state()
    rec = _new_record(rules)
    call = _Call(fn, name, laws, p_rows, L, rec, probe, rules, gseed, (int(s), index))
    clock = time.perf_counter if getattr(getattr(fn, "fn", fn), "transport", None) == "process" else time.process_time
    t0 = clock()
    for _ in range(n):
        z = ()
        while len(z) < L:
            z = z + tuple(step(z, rng, gen, call))
        rec.runs.append(z[:L])
    rec.seconds = clock() - t0
    rec.drew = not torch.equal(gen.get_state(), g0)
    return rec


class _LawMemo:
    """The exact call laws of a setting, by what determines a call's inputs (the prefix and the
    drafted tree: the toy laws are a function of the prefix), so that a call the harness makes
    again costs nothing: with 5 tokens most calls recur."""

    #: Entries kept at most (then the memo stops growing).
    LIMIT = 200_000

    def __init__(self):
        self.laws: dict = {}

    def get(self, key, rules, compute) -> dict:
        got = self.laws.get(key)
        if got is None:
            got = {}
            if len(self.laws) < self.LIMIT:
                self.laws[key] = got
        todo = [r for r in rules if r not in got]
        if todo:
            got.update(compute(todo))
        return got


def _new_record(rules) -> Collected:
    return Collected([], tallies={r: Tally() for r in rules})


def chain_settings(fn, vocab: int = DEFAULT_VOCAB, seed: int = 0, ks=CHAIN_KS,
                   families=FAMILIES) -> list[Setting]:
    """One setting per ``(family, k)``: ``k`` drafted tokens per step, ``L = k + 2``.

    Parameters
    ----------
    fn : callable
        The verifier (chain signature).
    vocab : int, default DEFAULT_VOCAB
    seed : int, default 0
    ks : sequence of int, default CHAIN_KS
    families : sequence of str, default FAMILIES

    Returns
    -------
    list of Setting
    """
    import torch

    _check_arity(fn, "chain")
    out = []
    for k in ks:
        for family in families:
            index = len(out)
            name = f"chain k={k} {family}"
            laws = ToyLaws(family, int(np.random.SeedSequence([int(seed), index, 7]).generate_state(1)[0]), vocab)
            p_rows, q_rows = _Rows(laws, "p"), _Rows(laws, "q")
            L = k + 2

            def collect(n, s, probe=None, rules=(), k=k, laws=laws, p_rows=p_rows, q_rows=q_rows, L=L, name=name,
                        index=index, memo=_LawMemo()):
                det = laws.deterministic_draft

                def step(z, rng, gen, call):
                    u, drafts = z, []
                    for _ in range(k):
                        d = _argmax(q_rows.np(u)) if det else q_rows.draw(u, rng)
                        drafts.append(d)
                        u = u + (d,)
                    dt = torch.tensor(drafts, dtype=torch.long)  # [k]
                    qs = None if det else torch.stack([q_rows.row(z + tuple(drafts[:j])) for j in range(k)])
                    ps = torch.stack([p_rows.row(z + tuple(drafts[:j])) for j in range(k + 1)])  # [k+1, V]

                    def check(toks):
                        if len(toks) > k + 1 or toks[:-1] != drafts[:len(toks) - 1]:
                            raise VerifierCallError(
                                f"the verifier returned {toks} for drafts {drafts}: expected an accepted prefix "
                                f"of the drafts, then one token (1 to {k + 1} tokens; setting {name!r})")

                    def law_of(rules):
                        def compute(todo):
                            q64 = None if qs is None else qs.double().numpy()
                            return call_laws(todo, list(range(-1, k - 1)), drafts, q64, ps.double().numpy())
                        return memo.get((z, tuple(drafts)), rules, compute)

                    def inputs():
                        return dict(draft_tokens=list(drafts), draft_probs=_rounded(qs), target_probs=_rounded(ps))

                    return call((dt, qs, ps, gen), z, check, law_of, inputs)

                return _collect_runs(fn, name, laws, p_rows, L, n, s, index, probe, rules, step)

            out.append(Setting(name, L, laws.next_laws, lambda n, s, collect=collect: collect(n, s).runs,
                               dict(kind="chain", k=k, family=family, vocab=vocab, dtype="float32",
                                    draft="deterministic" if laws.deterministic_draft else "sampled"),
                               collect=collect))
    return out


@dataclass
class _Tree:
    parents: list
    tokens: list
    rows: list  # the law each node was drawn from, # [V] numpy
    paths: dict  # node (-1: the root) -> its token path after the prompt


def _draft_tree(z: tuple, width: int, depth: int, draw: str, q_rows: _Rows, rng) -> _Tree:
    """A tree of the given shape after prefix ``z``; nodes in breadth-first order."""
    t = _Tree([], [], [], {-1: z})
    paths = t.paths
    frontier = [-1]
    for _ in range(depth):
        nxt = []
        for par in frontier:
            u = paths[par]
            q = q_rows.np(u)
            taken = []
            for j in range(width):
                left = q.copy()
                left[taken] = 0.0
                if left.sum() <= 0:
                    break  # NOTE: the support is exhausted (without replacement)
                if draw == "iid":
                    x, row = q_rows.draw(u, rng), q
                elif draw == "wor" or (draw == "mixed" and j > 0):
                    x, row = q_rows.draw(u, rng, exclude=taken), left / left.sum()
                else:  # topk, and the head slot of mixed: deterministic, a one-hot law
                    x = _argmax(q, exclude=taken)
                    row = np.zeros_like(q)
                    row[x] = 1.0
                taken.append(x)
                t.parents.append(par)
                t.tokens.append(x)
                t.rows.append(row)
                i = len(t.tokens) - 1
                paths[i] = u + (x,)
                nxt.append(i)
        frontier = nxt
    return t


def _root_path_ok(tree: _Tree, toks: list[int]) -> bool:
    """Whether ``toks`` is the token sequence of a root path of ``tree``."""
    here = {-1}
    for x in toks:
        here = {i for i, (par, tok) in enumerate(zip(tree.parents, tree.tokens)) if par in here and tok == x}
        if not here:
            return False
    return True


def tree_settings(fn, vocab: int = DEFAULT_VOCAB, seed: int = 0, shapes=TREE_SHAPES,
                  draws=TREE_DRAWS) -> list[Setting]:
    """One setting per ``(draw, shape)``; the law families cycle (``greedy`` is the chain's
    deterministic draft, here the ``topk`` and ``mixed`` draws); ``L = D + 2``.

    Parameters
    ----------
    fn : callable
        The verifier (tree signature).
    vocab : int, default DEFAULT_VOCAB
    seed : int, default 0
    shapes : sequence of (int, int), default TREE_SHAPES
        ``(width, depth)``.
    draws : sequence of str, default TREE_DRAWS

    Returns
    -------
    list of Setting
    """
    import torch

    _check_arity(fn, "tree")
    families = [f for f in FAMILIES if f != "greedy"]
    out = []
    for draw in draws:
        for width, depth in shapes:
            index = len(out)
            family = families[index % len(families)]
            name = f"tree {draw} w={width} D={depth} {family}"
            laws = ToyLaws(family, int(np.random.SeedSequence([int(seed), index, 8]).generate_state(1)[0]), vocab)
            p_rows, q_rows = _Rows(laws, "p"), _Rows(laws, "q")
            L = depth + 2

            def collect(n, s, probe=None, rules=(), laws=laws, p_rows=p_rows, q_rows=q_rows, L=L, name=name,
                        index=index, width=width, depth=depth, draw=draw, memo=_LawMemo()):
                def step(z, rng, gen, call):
                    tree = _draft_tree(z, width, depth, draw, q_rows, rng)
                    par = torch.tensor(tree.parents, dtype=torch.long)  # [n]
                    tok = torch.tensor(tree.tokens, dtype=torch.long)  # [n]
                    qs = torch.from_numpy(np.stack(tree.rows).astype(np.float32))  # [n, V]
                    ps = torch.stack([p_rows.row(z)] + [p_rows.row(tree.paths[i])
                                                         for i in range(len(tree.tokens))])  # [n+1, V]

                    def check(toks):
                        if len(toks) > depth + 1 or not _root_path_ok(tree, toks[:-1]):
                            raise VerifierCallError(
                                f"the verifier returned {toks}: expected the tokens of a root path of the tree, "
                                f"then one token (1 to {depth + 1} tokens; setting {name!r})")

                    def law_of(rules):
                        def compute(todo):
                            return call_laws(todo, tree.parents, tree.tokens, qs.double().numpy(),
                                             ps.double().numpy())
                        return memo.get((z, tuple(tree.parents), tuple(tree.tokens)), rules, compute)

                    def inputs():
                        return dict(parents=list(tree.parents), tokens=list(tree.tokens), draft_probs=_rounded(qs),
                                    target_probs=_rounded(ps))

                    return call((par, tok, qs, ps, gen), z, check, law_of, inputs)

                return _collect_runs(fn, name, laws, p_rows, L, n, s, index, probe, rules, step)

            out.append(Setting(name, L, laws.next_laws, lambda n, s, collect=collect: collect(n, s).runs,
                               dict(kind="tree", draw=draw, width=width, depth=depth, family=family, vocab=vocab,
                                    dtype="float32"), collect=collect))
    return out


class Counted:
    """``fn`` with a count of its calls (the audit reports verifier calls per minute).

    Parameters
    ----------
    fn : callable
        The verifier.

    Attributes
    ----------
    calls : int
        Calls made so far.
    """

    def __init__(self, fn):
        self.fn, self.calls = fn, 0
        self.__name__ = getattr(fn, "__name__", "verifier")

    def __call__(self, *args):
        self.calls += 1
        return self.fn(*args)


def settings_for(fn, kind: str, vocab: int = DEFAULT_VOCAB, seed: int = 0) -> tuple[list[Setting], Counted]:
    """The settings of ``kind`` (:data:`KINDS`) for ``fn``, and the counter of its calls.

    Parameters
    ----------
    fn : callable
        The verifier (a function, or a :class:`rheotheory.audit.process.ProcessVerifier`).
    kind : str
        ``"chain"`` or ``"tree"``.
    vocab : int, default DEFAULT_VOCAB
        2..64.
    seed : int, default 0

    Returns
    -------
    tuple
        ``(settings, counted)``.

    Raises
    ------
    rheotheory.errors.RheoError
        An unknown kind, a vocabulary out of range, or a function of the wrong arity.
    """
    if kind not in KINDS:
        raise RheoError(f"--kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if not isinstance(vocab, int) or not 2 <= vocab <= 64:
        raise RheoError(f"--vocab must be an integer in 2..64, got {vocab!r}")
    _check_arity(fn, kind)
    counted = Counted(fn)
    settings = (chain_settings if kind == "chain" else tree_settings)(counted, vocab, seed)
    for s in settings:  # NOTE: how the calls travel (a Python call, or a program's pipes): refusals are worded for it
        s.detail["transport"] = getattr(fn, "transport", "python")
    return settings, counted


def probe_runs(setting: Setting, seed: int, runs: int = REPRO_RUNS) -> tuple[Collected, Collected]:
    """The two passes of the probe (module docstring): ``runs`` runs of ``setting`` from ``seed``,
    twice, the global generators set differently before each call of each pass (the first pass
    also sends calls again with another generator: the seed check), then a third pass that times
    the runs as the audit makes them.

    Parameters
    ----------
    setting : Setting
    seed : int
    runs : int, default REPRO_RUNS

    Returns
    -------
    tuple of Collected
        The two passes (the second timed by the third).

    Raises
    ------
    VerifierCallError
        A call broke the contract.
    """
    a, b = setting.collect(runs, seed, probe=0), setting.collect(runs, seed, probe=1)
    # NOTE: the probe's passes pay for the global-state checks; the timing the size is made from
    # is that of a pass as the runs make it (the rule check included)
    b.seconds = setting.collect(runs, seed + 1, rules=rules_for(setting.detail.get("kind", "chain"))).seconds
    return a, b


def probe_verdict(setting: Setting, a: Collected, b: Collected, check: str) -> None:
    """Refuse, naming what the verifier did, when its two probe passes show ``check``:
    ``"repro"`` (outputs differ), ``"globals"`` (a global generator touched), ``"seed"`` (the
    answers do not depend on the generator: :data:`REPLAY_CALLS`) or ``"drew"`` (its generator never
    drawn from).

    Parameters
    ----------
    setting : Setting
    a, b : Collected
        The probe's two passes.
    check : str
        One of :data:`PROBE_CHECKS`.

    Raises
    ------
    VerifierCallError
        The check fails (one line, worded for a function or a program).
    """
    s = setting.name
    program = setting.detail.get("transport") == "process"
    noun, source = ("program", "per-call seed") if program else ("verifier", "generator")
    if check == "repro" and a.runs != b.runs:
        j = next(i for i, (x, y) in enumerate(zip(a.runs, b.runs)) if x != y)
        raise VerifierCallError(
            f"the {noun} ignores its {source}: two runs of setting {s!r} from the same seeds differ "
            f"(run {j}: {list(a.runs[j])} then {list(b.runs[j])}); "
            + ("seed the program's generator with each call's seed and draw every random number from it"
               if program else "draw every random number from the generator argument"))
    if check == "globals":
        for what, how in _GLOBALS:
            if what in a.touched:
                call, digest, reseeded = a.touched[what]
                same = what in b.touched and b.touched[what][:2] == (call, digest)
                verb = f"reseeds {what} at each call ({how})" if (reseeded or same) else f"draws from {what}"
                raise VerifierCallError(f"the verifier {verb} (setting {s!r}, call {call + 1}); draw every random "
                                        "number from the generator argument and leave the global ones alone")
    if check == "seed" and a.replayed and not a.varied and a.replayed >= MIN_REPLAYED:
        raise VerifierCallError(
            f"the {noun}'s answers do not depend on its {source}: {a.replayed} calls of setting {s!r} sent again "
            f"with {'other seeds' if program else 'another generator'} got the same answers; "
            + ("seed the program's generator with each call's seed and draw every random number from it"
               if program else "draw every random number from the generator argument, never reseed it"))
    if check == "drew" and not a.drew:
        raise VerifierCallError(f"the verifier never draws from its generator (setting {s!r}: {a.calls} calls "
                                "returned without sampling); a verifier at T > 0 draws its coins and tokens from the "
                                "generator argument")


#: The probe's checks, in the order they are reported (every setting's first, then the next).
PROBE_CHECKS = ("repro", "globals", "drew", "seed")


def probe_all(settings, pairs) -> float:
    """Apply :data:`PROBE_CHECKS` to every setting's probe ``pairs``.

    Parameters
    ----------
    settings : sequence of Setting
    pairs : sequence of (Collected, Collected)
        Each setting's probe (:func:`probe_runs`).

    Returns
    -------
    float
        The mean seconds per run of the timed passes.

    Raises
    ------
    VerifierCallError
        A check fails.
    """
    for check in PROBE_CHECKS:
        for s, (a, b) in zip(settings, pairs):
            probe_verdict(s, a, b, check)
    return sum(b.seconds / max(len(b.runs), 1) for _, b in pairs) / max(len(pairs), 1)


def check_reproducible(settings, seed: int, runs: int = REPRO_RUNS) -> float:
    """The probe of every setting, in this process (:mod:`rheotheory.audit.isolate` runs it in a
    worker).

    Parameters
    ----------
    settings : sequence of Setting
    seed : int
    runs : int, default REPRO_RUNS

    Returns
    -------
    float
        The mean CPU seconds per run.
    """
    return probe_all(settings, [probe_runs(s, seed, runs) for s in settings])
