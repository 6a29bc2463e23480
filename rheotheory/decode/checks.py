"""Calibrated Monte-Carlo check that speculative decoding with real models is lossless.

The target's exact law of the first two generated tokens after a prompt,
:math:`p(x_1)\\,p(x_2 \\mid x_1)`, is computed from the model directly (one batched pass over
every x_1). Speculative decoding is run ``n`` times from the prompt; the observed pairs are
compared with a chi-square goodness-of-fit test. Cells whose expected count is below
:data:`MIN_EXPECTED` are pooled into one cell (dropped if even the pool is below it). Statistics
and degrees of freedom of several prompts add up (independent runs).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from scipy import stats

from .engine import DecodeConfig, decode, target_law

__all__ = ["MIN_EXPECTED", "ChiSquare", "two_token_law", "two_token_counts", "chi_square", "lossless_test"]

#: Smallest expected count of a chi-square cell (Cochran's rule); rarer cells are pooled.
MIN_EXPECTED = 5.0


@dataclass(frozen=True)
class ChiSquare:
    statistic: float
    df: int
    p_value: float
    n: int  # decoding runs in total


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
    two = DecodeConfig(cfg.temperature, cfg.top_k, cfg.top_p, max_new_tokens=2)
    for _ in range(n):
        toks = decode(pair.target, pair.draft, prompt, method, two, gen, verifier=verifier).tokens
        counts[toks[0], toks[1]] += 1
    return counts


def chi_square(counts: np.ndarray, probs: np.ndarray) -> tuple[float, int]:
    """Chi-square statistic and degrees of freedom, rare cells pooled (see the module docstring)."""
    c = counts.ravel().astype(np.float64)
    e = probs.ravel() * c.sum()
    big = e >= MIN_EXPECTED
    obs = list(c[big])
    exp = list(e[big])
    if e[~big].sum() >= MIN_EXPECTED:
        obs.append(c[~big].sum())
        exp.append(e[~big].sum())
    else:
        # NOTE: a pool this small carries no usable information; its observed count still
        # shows up as a deficit in the kept cells.
        pass
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
