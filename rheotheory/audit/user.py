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

Before testing, each setting is run twice from the same seeds: a verifier whose outputs then
differ draws from something other than the generator it is handed (Python's ``random``, the
global torch generator) and is refused, naming the setting. So is a function that raises or
returns something other than the signature says.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from ..errors import RheoError
from .core import Setting
from .toy import DEFAULT_VOCAB, FAMILIES, ToyLaws

__all__ = ["KINDS", "load_verifier", "chain_settings", "tree_settings", "settings_for", "check_reproducible",
           "DEFAULT_RUNS", "CHAIN_KS", "TREE_SHAPES", "TREE_DRAWS", "REPRO_RUNS", "VerifierCallError", "Counted"]

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


class VerifierCallError(RheoError):
    """The audited function broke its contract (raised, or returned something else)."""


def load_verifier(spec: str) -> Callable:
    """``MODULE:FUNCTION`` (an importable module) or ``path/to/file.py:FUNCTION``."""
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
            module = importlib.import_module(where)
    except RheoError:
        raise
    except Exception as e:  # NOTE: the user's module failed to import: say so in one line
        raise RheoError(f"--verifier: importing {where!r} failed: {type(e).__name__}: {e}") from None
    fn = getattr(module, name, None)
    if fn is None or not callable(fn):
        raise RheoError(f"--verifier: {where!r} has no function {name!r}")
    return fn


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
    except Exception as e:  # NOTE: any failure of the audited function is its contract broken
        raise VerifierCallError(f"the verifier raised {type(e).__name__}: {e} (setting {where!r})") from None


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
    """The harness's draft generator and the verifier's torch generator of setting ``index``."""
    import torch

    ss = np.random.SeedSequence([int(seed), int(index)])
    draft, verify = ss.spawn(2)
    return np.random.default_rng(draft), torch.Generator().manual_seed(int(verify.generate_state(1)[0]))


def _argmax(w: np.ndarray, exclude=()) -> int:
    w = w.copy()
    w[list(exclude)] = -1.0
    return int(np.argmax(w))  # NOTE: the lowest id on a tie


def chain_settings(fn, vocab: int = DEFAULT_VOCAB, seed: int = 0, ks=CHAIN_KS,
                   families=FAMILIES) -> list[Setting]:
    """One setting per ``(family, k)``: ``k`` drafted tokens per step, ``L = k + 2``."""
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

            def sample(n, s, k=k, laws=laws, p_rows=p_rows, q_rows=q_rows, L=L, name=name, index=index):
                rng, gen = _streams(s, index)
                det = laws.deterministic_draft
                runs = []
                for _ in range(n):
                    z = ()
                    while len(z) < L:
                        u, drafts = z, []
                        for _ in range(k):
                            d = _argmax(q_rows.np(u)) if det else q_rows.draw(u, rng)
                            drafts.append(d)
                            u = u + (d,)
                        dt = torch.tensor(drafts, dtype=torch.long)  # [k]
                        qs = None if det else torch.stack([q_rows.row(z + tuple(drafts[:j])) for j in range(k)])
                        ps = torch.stack([p_rows.row(z + tuple(drafts[:j])) for j in range(k + 1)])  # [k+1, V]
                        toks = _as_tokens(_call(fn, (dt, qs, ps, gen), name), name, laws.vocab)
                        if len(toks) > k + 1 or toks[:-1] != drafts[:len(toks) - 1]:
                            raise VerifierCallError(
                                f"the verifier returned {toks} for drafts {drafts}: expected an accepted prefix "
                                f"of the drafts, then one token (1 to {k + 1} tokens; setting {name!r})")
                        z = z + tuple(toks)
                    runs.append(z[:L])
                return runs

            out.append(Setting(name, L, laws.next_laws, sample,
                               dict(kind="chain", k=k, family=family, vocab=vocab,
                                    draft="deterministic" if laws.deterministic_draft else "sampled")))
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
    deterministic draft, here the ``topk`` and ``mixed`` draws); ``L = D + 2``."""
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

            def sample(n, s, laws=laws, p_rows=p_rows, q_rows=q_rows, L=L, name=name, index=index, width=width,
                       depth=depth, draw=draw):
                rng, gen = _streams(s, index)
                runs = []
                for _ in range(n):
                    z = ()
                    while len(z) < L:
                        tree = _draft_tree(z, width, depth, draw, q_rows, rng)
                        par = torch.tensor(tree.parents, dtype=torch.long)  # [n]
                        tok = torch.tensor(tree.tokens, dtype=torch.long)  # [n]
                        qs = torch.from_numpy(np.stack(tree.rows).astype(np.float32))  # [n, V]
                        ps = torch.stack([p_rows.row(z)] + [p_rows.row(tree.paths[i])
                                                             for i in range(len(tree.tokens))])  # [n+1, V]
                        toks = _as_tokens(_call(fn, (par, tok, qs, ps, gen), name), name, laws.vocab)
                        if len(toks) > depth + 1 or not _root_path_ok(tree, toks[:-1]):
                            raise VerifierCallError(
                                f"the verifier returned {toks}: expected the tokens of a root path of the tree, then "
                                f"one token (1 to {depth + 1} tokens; setting {name!r})")
                        z = z + tuple(toks)
                    runs.append(z[:L])
                return runs

            out.append(Setting(name, L, laws.next_laws, sample,
                               dict(kind="tree", draw=draw, width=width, depth=depth, family=family, vocab=vocab)))
    return out


class Counted:
    """``fn`` with a count of its calls (the audit reports verifier calls per minute)."""

    def __init__(self, fn):
        self.fn, self.calls = fn, 0
        self.__name__ = getattr(fn, "__name__", "verifier")

    def __call__(self, *args):
        self.calls += 1
        return self.fn(*args)


def settings_for(fn, kind: str, vocab: int = DEFAULT_VOCAB, seed: int = 0) -> tuple[list[Setting], Counted]:
    """The settings of ``kind`` (:data:`KINDS`) for ``fn``, and the counter of its calls."""
    if kind not in KINDS:
        raise RheoError(f"--kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if not isinstance(vocab, int) or not 2 <= vocab <= 64:
        raise RheoError(f"--vocab must be an integer in 2..64, got {vocab!r}")
    _check_arity(fn, kind)
    counted = Counted(fn)
    return (chain_settings if kind == "chain" else tree_settings)(counted, vocab, seed), counted


def check_reproducible(settings, seed: int, runs: int = REPRO_RUNS) -> float:
    """Run each setting twice from ``seed`` (:data:`REPRO_RUNS` runs); refuse a verifier whose
    outputs differ (it draws from something other than its generator). Returns the seconds per
    run measured on the first pass (the pilot the time estimate is made from)."""
    spent, done = 0.0, 0
    for s in settings:
        a = s.sample(runs, seed)
        t0 = time.perf_counter()  # NOTE: the second pass is timed: the first fills the law caches
        b = s.sample(runs, seed)
        spent += time.perf_counter() - t0
        done += runs
        if a != b:
            j = next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)
            raise VerifierCallError(
                f"the verifier ignores its generator: two runs of setting {s.name!r} from the same seed differ "
                f"(run {j}: {list(a[j])} then {list(b[j])}); draw every random number from the generator argument")
    return spent / max(done, 1)
