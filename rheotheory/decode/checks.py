"""Calibrated Monte-Carlo check that speculative decoding with real models is lossless.

The target's exact law of the first two generated tokens after a prompt,
:math:`p(x_1)\\,p(x_2 \\mid x_1)`, is computed from the model directly (one batched pass over
every x_1). Speculative decoding is run ``n`` times from the prompt; the observed pairs are
compared with a chi-square goodness-of-fit test, rare cells pooled (see :func:`chi_square`). Statistics
and degrees of freedom of several prompts add up (independent runs).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch
from scipy import stats

from .. import laws
from ..verify.rules import Transition, onehot
from .engine import DecodeConfig, decode, target_law

__all__ = ["MIN_EXPECTED", "ChiSquare", "two_token_law", "two_token_counts", "chi_square", "lossless_test",
           "ot_skip_residual"]

#: Smallest expected count of a chi-square cell (Cochran's rule); rarer cells are pooled.
MIN_EXPECTED = 5.0


@dataclass(frozen=True)
class ChiSquare:
    statistic: float
    df: int
    p_value: float
    n: int  # decoding runs in total

    def report(self, alpha: float) -> str:
        """One line: statistic, degrees of freedom, p-value, N and the verdict at ``alpha``."""
        verdict = "reject" if self.p_value < alpha else "no rejection"
        return (f"chi2 = {self.statistic:8.1f}  df = {self.df:4d}  p = {self.p_value:.3g}  N = {self.n}  "
                f"-> {verdict} at alpha = {alpha:g}")


@torch.inference_mode()
def two_token_law(target, prompt: list[int], cfg: DecodeConfig) -> np.ndarray:
    """Joint target law of the first two tokens after ``prompt``. # [V, V] float64"""
    device = next(target.parameters()).device
    V = target.cfg.vocab_size
    seq = torch.tensor(prompt, device=device)
    p1 = target_law(target(seq[None])[:, -1], cfg)[0]  # [V]
    batch = torch.cat([seq.expand(V, -1), torch.arange(V, device=device)[:, None]], dim=1)  # [V, len + 1]
    p2 = target_law(target(batch)[:, -1], cfg)  # [V, V]
    return (p1[:, None] * p2).cpu().numpy()


def two_token_counts(pair, prompt: list[int], method, cfg: DecodeConfig, n: int, gen: torch.Generator,
                     verifier=None) -> np.ndarray:
    """Counts of the first two generated tokens over ``n`` speculative runs. # [V, V] int"""
    V = pair.target.cfg.vocab_size
    counts = np.zeros((V, V), dtype=np.int64)
    two = replace(cfg, max_new_tokens=2)
    for _ in range(n):
        toks = decode(pair.target, pair.draft, prompt, method, two, gen, verifier=verifier).tokens
        counts[toks[0], toks[1]] += 1
    return counts


def chi_square(counts: np.ndarray, probs: np.ndarray) -> tuple[float, int]:
    """Chi-square statistic and degrees of freedom over the (x1, x2) cells of # [V, V] arrays.

    Rare cells are pooled hierarchically, so that the first token's law keeps its weight: within
    each row x1 the cells with expected count < :data:`MIN_EXPECTED` form one cell (x1, other);
    rows whose pooled cell is still too rare go to one global pool, kept if it reaches
    :data:`MIN_EXPECTED` (otherwise dropped: its deficit still shows in the kept cells).
    """
    n = counts.sum()
    obs, exp = [], []
    pool_o = pool_e = 0.0
    for row_c, row_p in zip(counts.astype(np.float64), probs):
        e = row_p * n
        big = e >= MIN_EXPECTED
        obs.extend(row_c[big])
        exp.extend(e[big])
        ro, re = row_c[~big].sum(), e[~big].sum()
        if re >= MIN_EXPECTED:
            obs.append(ro)
            exp.append(re)
        else:
            pool_o += ro
            pool_e += re
    if pool_e >= MIN_EXPECTED:
        obs.append(pool_o)
        exp.append(pool_e)
    obs, exp = np.array(obs), np.array(exp)
    return float(((obs - exp) ** 2 / exp).sum()), len(obs) - 1


def lossless_test(pair, prompts, method, cfg: DecodeConfig, n_per_prompt: int, seed: int,
                  verifier=None) -> ChiSquare:
    """Combined chi-square test over ``prompts`` (texts) of the first two tokens' law."""
    gen = torch.Generator().manual_seed(seed)
    stat, df = 0.0, 0
    for text in prompts:
        prompt = pair.encode(text)
        probs = two_token_law(pair.target, prompt, cfg)
        s, d = chi_square(two_token_counts(pair, prompt, method, cfg, n_per_prompt, gen, verifier), probs)
        stat += s
        df += d
    return ChiSquare(stat, df, float(stats.chi2.sf(stat, df)), n_per_prompt * len(prompts))


def ot_skip_residual(p, cands) -> Transition:
    """Negative control, known to be lossy: the OT rule, but after rejecting the sampled
    candidate the next token is drawn from p itself instead of the residual norm((p - L)+).

    Tests pass it as ``verifier=`` to check that :func:`lossless_test` rejects a planted bug.
    """
    sampled = [i for i, c in enumerate(cands) if c.law is not None]
    if not sampled:
        return onehot(p, cands)
    i_s = sampled[0]
    s = cands[i_s]
    ls = s.law[s.token]
    a = p[s.token] / ls if p[s.token] < ls else ls * 0 + 1  # min(1, p(s) / L(s))
    emit = (1 - a) * p  # the bug: should be (1 - a) * norm((p - L)+)
    cont = [p[0] * 0 for _ in cands]
    cont[i_s] = a
    for i, c in enumerate(cands):
        cont[i] = cont[i] + emit[c.token]
    return Transition(cont, laws.zero_at(emit, [c.token for c in cands]))
