"""Tokens per step and wall-clock speed-up of each method against autoregressive sampling."""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from ..methods import DECODE_PROXY, Method
from ..trees.static import greedy_shape
from .engine import AUTOREGRESSIVE, DecodeConfig, decode

__all__ = ["BenchRow", "BENCH_PROMPTS", "default_static_shape", "bench_methods", "run_bench", "format_table",
           "table_json", "cost_ratio"]

#: Fixed prompts of the benchmark (Python source openings, like the training text).
BENCH_PROMPTS = (
    "def fib(",
    "import os\n",
    "class Parser:\n    def __init__(self",
    "    for i in range(",
    "        if not isinstance(",
    "\"\"\"Return the ",
)

#: Assumed acceptance of a node's first child, and the factor applied per later sibling, used
#: only to lay out the default static shape (Sequoia-like: deep first-child chains, few
#: siblings further down).
SHAPE_FIRST_CHILD = 0.7
SHAPE_SIBLING_DECAY = 0.4


def default_static_shape(budget: int, depth: int) -> list[list[int]]:
    """The benchmark's static shape: :func:`~rheotheory.trees.static.greedy_shape` with
    SHAPE_FIRST_CHILD and SHAPE_SIBLING_DECAY."""
    return greedy_shape(budget, depth, SHAPE_FIRST_CHILD, SHAPE_SIBLING_DECAY)


def bench_methods(top_k: int, depth: int, budget: int, head: int | None = None, proxy: str = DECODE_PROXY) -> list:
    """The methods compared, at one node budget (the chain has ``depth`` nodes); ``head`` and
    ``proxy`` configure rheo."""
    return [
        AUTOREGRESSIVE,
        Method("chain", depth=depth),
        Method("static", shape=default_static_shape(budget, depth)),
        Method("eagle", top_k=top_k, depth=depth, budget=budget),
        Method("rheo", top_k=top_k, depth=depth, budget=budget, head=head, proxy=proxy),
    ]


@dataclass(frozen=True)
class BenchRow:
    method: str  # method name (autoregressive, chain, static, eagle, rheo)
    description: str  # full method description
    temperature: float
    tokens: int  # tokens emitted by all steps over all prompts and repeats
    steps: int  # decoding steps
    seconds: float  # wall-clock seconds of the decoding loops
    nodes_per_step: float  # mean tree nodes sent to the target per step
    speedup: float  # tokens/s divided by autoregressive tokens/s at the same temperature
    kept: int = 0  # tokens kept (max_new_tokens per run), the numerator of tokens/s

    @property
    def tokens_per_step(self) -> float:
        return self.tokens / self.steps

    @property
    def tokens_per_second(self) -> float:
        return self.kept / self.seconds


def run_bench(pair, methods, temperatures, max_new_tokens: int, repeats: int, seed: int,
              prompts=BENCH_PROMPTS, top_k=None, top_p=None, log=None, draft_temp=None) -> list[BenchRow]:
    """Decode every prompt ``repeats`` times with each method and temperature.

    Methods are interleaved (prompt by prompt) so that a change in machine load affects them
    alike; the first method is the speed-up baseline. Tokens per step counts every step whole
    (the last step of a run may overshoot ``max_new_tokens``; tokens/s counts only the
    ``max_new_tokens`` kept).
    """
    rows = []
    for T in temperatures:
        cfg = DecodeConfig(temperature=T, top_k=top_k, top_p=top_p, max_new_tokens=max_new_tokens,
                           draft_temp=draft_temp)
        gens = [torch.Generator().manual_seed(seed) for _ in methods]
        acc = [[0, 0, 0, 0.0, 0] for _ in methods]  # emitted, steps, kept tokens, seconds, nodes
        for m, gen in zip(methods, gens):
            # NOTE: one untimed warm-up run per method so start-up costs are not billed.
            decode(pair.target, pair.draft, pair.encode(prompts[0]), m, cfg, gen)
        for _ in range(repeats):
            for text in prompts:
                for m, gen, a in zip(methods, gens, acc):
                    r = decode(pair.target, pair.draft, pair.encode(text), m, cfg, gen)
                    a[0] += sum(s.accepted + 1 for s in r.steps)
                    a[1] += len(r.steps)
                    a[2] += len(r.tokens)
                    a[3] += r.seconds
                    a[4] += sum(s.tree_nodes for s in r.steps)
        base = acc[0][2] / acc[0][3]
        block = []
        for m, a in zip(methods, acc):
            name = m if isinstance(m, str) else m.method
            block.append(BenchRow(name, m if isinstance(m, str) else m.describe(), T, a[0], a[1], a[3],
                                  a[4] / a[1], a[2] / a[3] / base, kept=a[2]))
        rows.extend(block)
        if log is not None:
            log(format_table(block, header=False))
    return rows


#: Passes timed by :func:`cost_ratio` per model.
COST_PASSES = 50


@torch.inference_mode()
def cost_ratio(pair, context: int = 64) -> tuple[float, float, float]:
    """Seconds of one single-token cached pass of the target and of the draft, and their ratio.

    The draft is timed as decoding runs it: on CPU a built-in draft runs as its numpy copy.
    """
    import numpy as np

    from .models import KVCache, NumpyLM, TinyLM, chain_mask

    out = []
    for model in (pair.target, pair.draft):
        p = next(model.parameters())
        if model is pair.draft and p.device.type == "cpu" and isinstance(model, TinyLM):
            fast = NumpyLM(model)
            cache = fast.new_cache()
            fast.extend(cache, np.arange(context) % model.cfg.vocab_size, np.arange(context),
                        np.tri(context, dtype=bool))
            cache.commit(context)
            for _ in range(5):
                fast.extend(cache, [0], [0], None)
            t0 = time.perf_counter()
            for _ in range(COST_PASSES):
                fast.extend(cache, [0], [0], None)
            out.append((time.perf_counter() - t0) / COST_PASSES)
            continue
        cache = KVCache(model.cfg, p.device, p.dtype)
        toks = torch.arange(context, device=p.device) % model.cfg.vocab_size
        _, k, v = model.extend(cache, toks, torch.arange(context, device=p.device), chain_mask(context, p.device))
        cache.commit(k, v)
        one = toks[:1]
        zero = torch.zeros(1, dtype=torch.long, device=p.device)
        mask = torch.ones(1, 1, dtype=torch.bool, device=p.device)
        for _ in range(5):
            model.extend(cache, one, zero, mask)
        if p.device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(COST_PASSES):
            model.extend(cache, one, zero, mask)
        if p.device.type == "cuda":
            torch.cuda.synchronize()
        out.append((time.perf_counter() - t0) / COST_PASSES)
    return out[0], out[1], out[1] / out[0]


def format_table(rows, header: bool = True) -> str:
    lines = []
    if header:
        lines.append(f"{'method':<15} {'T':>4} {'nodes':>6} {'tok/step':>9} {'tok/s':>8} {'speed-up':>9}")
    for r in rows:
        lines.append(f"{r.method:<15} {r.temperature:>4g} {r.nodes_per_step:>6.1f} {r.tokens_per_step:>9.3f} "
                     f"{r.tokens_per_second:>8.1f} {r.speedup:>8.2f}x")
    return "\n".join(lines)


def table_json(rows) -> list[dict]:
    return [{"method": r.method, "description": r.description, "temperature": r.temperature,
             "tokens_per_step": r.tokens_per_step, "tokens_per_second": r.tokens_per_second,
             "speedup": r.speedup, "nodes_per_step": r.nodes_per_step, "steps": r.steps,
             "seconds": r.seconds} for r in rows]

