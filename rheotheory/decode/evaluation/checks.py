r"""Calibrated Monte-Carlo check that speculative decoding with real models is lossless.

Only the model-specific parts live here; the test itself (cells, pooling, Pearson's statistic)
is :mod:`rheotheory.stats`, shared with ``rheo mc``.

For each prompt the target's exact law of the first two generated tokens,
:math:`p(x_1)\,p(x_2 \mid x_1)`, is computed from the model directly (:func:`next_token_laws`:
one batched uncached pass per length, only over the prefixes frequent enough to be cells).
Speculative decoding is run ``n`` times from the prompt (:func:`first_tokens`) and the pairs
are compared with that law by :meth:`rheotheory.stats.PrefixCells.chi_square` (rare cells pooled
by the rule of :mod:`rheotheory.stats`). Statistics and degrees of freedom of several prompts
add up (independent runs, :func:`rheotheory.stats.combine`). A method is lossless only if this
law is the target's (docs/theory.md section 4). The planted bugs of
:mod:`rheotheory.testing.mutants` (``verifier=``) are what the same test must reject.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import torch

from ...stats import DEFAULT_MIN_EXPECTED, ChiSquare, NextLaws, combine, prefix_cells
from ..engine import DecodeConfig, decode, target_law

__all__ = ["TESTED_TOKENS", "ChiSquare", "next_token_laws", "first_tokens", "lossless_test"]

#: Number of generated tokens whose joint law is tested (the first two: enough for a tree of
#: depth >= 1 to accept a draft token and emit a second one in the same step).
TESTED_TOKENS = 2


def next_token_laws(target, prompt: list[int], cfg: DecodeConfig) -> NextLaws:
    """Exact target laws after ``prompt`` followed by each of a list of continuations.

    The returned function maps continuations ``u`` of one length (``m`` of them) to
    ``p(. | prompt, u)`` as a ``# [m, V]`` float64 array, by one uncached forward pass over the
    batch ``# [m, len(prompt) + len(u)]``. :func:`rheotheory.stats.prefix_cells` calls it only
    for frequent prefixes (at most ``n / min_expected`` per length).

    Parameters
    ----------
    target : TinyLM, SmolLM or HFLM
        The target back-end, with an uncached ``forward`` (# [B, T] -> # [B, T, V]).
    prompt : list of int
        The prompt's token ids.
    cfg : DecodeConfig
        Sampling settings: the laws are :func:`~rheotheory.decode.engine.target_law` at them.

    Returns
    -------
    callable
        ``law(prefixes) -> numpy.ndarray of shape (m, V)``, float64, for a list of m
        continuations (tuples of token ids) of one length.
    """
    device = next(target.parameters()).device
    seq = torch.tensor(prompt, device=device)  # [len(prompt)]

    @torch.inference_mode()
    def law(prefixes: list[tuple]) -> np.ndarray:
        cont = torch.tensor(prefixes, dtype=torch.long, device=device).reshape(len(prefixes), -1)  # [m, |u|]
        batch = torch.cat([seq.expand(len(prefixes), -1), cont], dim=1)  # [m, len(prompt) + |u|]
        return target_law(target(batch)[:, -1], cfg).cpu().numpy()  # [m, V]

    return law


def first_tokens(pair, prompt: list[int], method, cfg: DecodeConfig, n: int, gen: torch.Generator,
                 verifier=None, length: int = TESTED_TOKENS) -> list[tuple]:
    """The first ``length`` generated tokens of ``n`` speculative runs from ``prompt``.

    Parameters
    ----------
    pair : ModelPair, SmolPair or HFPair
        ``target`` and ``draft``.
    prompt : list of int
        The prompt's token ids.
    method : Method
        The method run.
    cfg : DecodeConfig
        Sampling settings (``max_new_tokens`` is replaced by ``length``).
    n : int
        Runs.
    gen : torch.Generator
        The CPU generator behind every random choice, shared by the runs in turn.
    verifier : callable or TreeVerifier, optional
        Replaces the method's verifier (a planted bug).
    length : int, default TESTED_TOKENS
        Tokens kept per run (:data:`TESTED_TOKENS`, 2).

    Returns
    -------
    list of tuple of int
        One tuple of ``length`` tokens per run.
    """
    cut = replace(cfg, max_new_tokens=length)
    return [tuple(decode(pair.target, pair.draft, prompt, method, cut, gen, verifier=verifier).tokens[:length])
            for _ in range(n)]


def lossless_test(pair, prompts, method, cfg: DecodeConfig, n_per_prompt: int, seed: int,
                  verifier=None, min_expected: float = DEFAULT_MIN_EXPECTED) -> ChiSquare:
    """Combined chi-square test over ``prompts`` (texts) of the first two tokens' law.

    Cells are built from the target before decoding.

    Parameters
    ----------
    pair : ModelPair, SmolPair or HFPair
        ``target``, ``draft`` and ``encode``.
    prompts : sequence of str
        Prompt texts; one test each, combined (labelled by the texts).
    method : Method
        The method tested.
    cfg : DecodeConfig
        Sampling settings (the target law tested is at them).
    n_per_prompt : int
        Speculative runs per prompt.
    seed : int
        Seed of the one ``torch.Generator`` behind every random choice.
    verifier : callable or TreeVerifier, optional
        Replaces the method's rule (the planted-bug companion).
    min_expected : float, default DEFAULT_MIN_EXPECTED
        The smallest expected count of a cell (:data:`~rheotheory.stats.DEFAULT_MIN_EXPECTED`);
        rarer prefixes are pooled.

    Returns
    -------
    ChiSquare
        The combined test (:func:`rheotheory.stats.combine`).
    """
    gen = torch.Generator().manual_seed(seed)
    tests = []
    for text in prompts:
        prompt = pair.encode(text)
        cells = prefix_cells(next_token_laws(pair.target, prompt, cfg), n_per_prompt, TESTED_TOKENS, min_expected)
        seqs = first_tokens(pair, prompt, method, cfg, n_per_prompt, gen, verifier)
        tests.append(cells.chi_square(seqs, TESTED_TOKENS))
    return combine(tests, labels=list(prompts))


def lossless_table(variants, test, alpha: float, out=None, width: int = 38, verdict: bool = True) -> list[dict]:
    """Run ``test(method, verifier) -> ChiSquare`` for each ``(name, method, verifier)`` of
    ``variants`` (``verifier`` None for the method's own rule, else a planted bug), print one line
    per variant and return the rows (written as CSV to ``out`` when given): the one table the
    lossless benchmarks publish.

    A row gives a verdict (``rejected`` True or False) only when it can: never with
    ``verdict=False`` (a run too small for its planted companion to be rejected says so instead
    of reporting "no rejection"), and never for a test with no degrees of freedom (every run in
    one pooled cell: nothing was tested). Such a row has ``rejected`` empty and says why."""
    import time

    from ...checkpoint import write_rows

    rows = []
    for name, method, verifier in variants:
        t0 = time.perf_counter()
        res = test(method, verifier)
        seconds = time.perf_counter() - t0
        why = ("" if res.df > 0 else "df = 0: every run fell in one pooled cell, nothing was tested") if verdict \
            else "a size too small for its planted companion to be rejected"
        line = res.report(alpha) if not why else (f"chi2 = {res.statistic:8.1f}  df = {res.df:4d}  "
                                                  f"p = {res.p_value:.3g}  N = {res.n}  -> no verdict ({why})")
        print(f"{name:<{width}} {line} ({seconds:.0f} s)", flush=True)
        rows.append(dict(method=name, description=method.describe(), planted=verifier is not None,
                         chi2=round(res.statistic, 4), df=res.df, p_value=f"{res.p_value:.6g}", runs=res.n,
                         alpha=alpha, rejected="" if why else res.rejects(alpha), seconds=round(seconds, 1)))
    if out:
        write_rows(rows, out)
    return rows
