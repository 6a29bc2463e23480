r"""Tokens per step and wall-clock speed-up of each method against autoregressive sampling.

Tokens per step is reported with a 95% interval: the mean of the per-step |Z| values
:math:`\bar z \pm 1.96\, s / \sqrt{n}` over the row's n steps
(:func:`rheotheory.montecarlo.mean_ci`). NOTE: it treats the steps as independent; steps of one
run share their text, so the interval is a guide for ranking methods, not a calibrated bound.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import torch

from ...methods import resolve
from ...montecarlo import mean_ci
from ..defaults import DEFAULT_BENCH_METHODS, MIN_BENCH_STEPS
from ..engine import AUTO_DRAFT_TOP_K, AUTOREGRESSIVE, DecodeConfig, decode

__all__ = ["BenchRow", "BENCH_PROMPTS", "DEFAULT_BENCH_METHODS", "MIN_BENCH_STEPS", "default_repeats", "bench_methods",
           "run_bench", "bench_runs", "format_table", "table_json", "cost_ratio", "pass_costs"]


def default_repeats(methods, n_prompts: int, max_new_tokens: int, min_steps: int = MIN_BENCH_STEPS) -> int:
    """Passes over the prompts that guarantee every row at least ``min_steps`` steps.

    A step emits at most D + 1 tokens, so a run of ``max_new_tokens`` takes at least
    ceil(max_new_tokens / (D + 1)) steps; D is the deepest method's depth (0 without a tree).

    Parameters
    ----------
    methods : iterable of Method
        The methods benchmarked.
    n_prompts : int
        Prompts per pass.
    max_new_tokens : int
        Tokens generated per run.
    min_steps : int, default MIN_BENCH_STEPS
        The fewest steps a row must have (:data:`MIN_BENCH_STEPS`).

    Returns
    -------
    int
        The repeats, at least 1.

    Examples
    --------
    >>> from rheotheory.methods import resolve
    >>> default_repeats([resolve("rheo-tuned", size="builtin")], 6, 100)  # D = 4: 20 steps a run
    2
    """
    depth = max((m.depth for m in methods if m.nodes > 0), default=0)
    per_pass = n_prompts * math.ceil(max_new_tokens / (depth + 1))
    return max(1, math.ceil(min_steps / per_pass))

#: Fixed prompts of the benchmark (Python source openings, like the training text).
BENCH_PROMPTS = (
    "def fib(",
    "import os\n",
    "class Parser:\n    def __init__(self",
    "    for i in range(",
    "        if not isinstance(",
    "\"\"\"Return the ",
)



def bench_methods(specs=DEFAULT_BENCH_METHODS, size="builtin", **overrides) -> list[tuple[str, object]]:
    """(spec, method) for every spec (preset or family spec) resolved at one tree size.

    The first method is the speed-up baseline: the autoregressive method (no draft nodes) is put
    first, and added when missing.

    Parameters
    ----------
    specs : sequence of str, default DEFAULT_BENCH_METHODS
        Preset names or family specs (:data:`DEFAULT_BENCH_METHODS`).
    size : str, default "builtin"
        The row of :data:`~rheotheory.methods.TREE_SIZES` the tree sizes come from.
    **overrides : object
        Method fields (None = not given), applied to every method that has the field.

    Returns
    -------
    list of tuple of (str, Method)
        The spec as given and its resolved method, the baseline first (other methods in order).

    Raises
    ------
    TreeError
        If an override is a field of none of the methods (naming it as its command-line option), or
        a spec does not resolve.
    """
    from ...errors import TreeError

    overrides = {k: v for k, v in overrides.items() if v is not None}
    out, used = [], set()
    for spec in specs:
        mine = {k: v for k, v in overrides.items() if k in resolve(spec, size=size).fields()}
        used |= set(mine)
        out.append((spec, resolve(spec, size=size, **mine)))
    unused = sorted(set(overrides) - used)
    if unused:
        raise TreeError(f"--{unused[0].replace('_', '-')} applies to none of the methods {', '.join(specs)}")
    out.sort(key=lambda sm: sm[1].nodes > 0)  # stable: the baseline (no draft) first
    if not out or out[0][1].nodes > 0:
        out.insert(0, ("autoregressive", AUTOREGRESSIVE))
    return out


@dataclass(frozen=True)
class BenchRow:
    """One method at one temperature: what ``rheo bench`` reports.

    Attributes
    ----------
    method : str
        Method spec as given (a preset name, e.g. rheo-tuned).
    description : str
        Full method description.
    temperature : float
        T of the target.
    tokens : int
        Tokens emitted by all steps over all prompts and repeats.
    steps : int
        Decoding steps.
    seconds : float
        Wall-clock seconds of the decoding loops.
    nodes_per_step : float
        Mean tree nodes sent to the target per step.
    speedup : float
        Tokens/s divided by autoregressive tokens/s at the same temperature.
    kept : int, default 0
        Tokens kept (``max_new_tokens`` per run), the numerator of tokens/s.
    resolved : dict or None, optional
        The fully resolved method (``Method.to_dict()``).
    tokens_per_step_ci95 : tuple of float, default (nan, nan)
        95% interval of the mean per-step |Z| (module docstring).
    """

    method: str  # method spec as given (a preset name, e.g. rheo-tuned)
    description: str  # full method description
    temperature: float
    tokens: int  # tokens emitted by all steps over all prompts and repeats
    steps: int  # decoding steps
    seconds: float  # wall-clock seconds of the decoding loops
    nodes_per_step: float  # mean tree nodes sent to the target per step
    speedup: float  # tokens/s divided by autoregressive tokens/s at the same temperature
    kept: int = 0  # tokens kept (max_new_tokens per run), the numerator of tokens/s
    resolved: dict | None = None  # the fully resolved method (Method.to_dict())
    tokens_per_step_ci95: tuple = (math.nan, math.nan)  # 95% interval of the mean per-step |Z| (module docstring)

    @property
    def tokens_per_step(self) -> float:
        """Mean |Z|: emitted tokens per step (every step counted whole)."""
        return self.tokens / self.steps

    @property
    def tokens_per_second(self) -> float:
        """Kept tokens per second of the decoding loops."""
        return self.kept / self.seconds


def run_bench(pair, methods, temperatures, max_new_tokens: int, repeats: int, seed: int,
              prompts=BENCH_PROMPTS, top_k=None, top_p=None, log=None, draft_temp=None,
              names=None, draft_top_k=AUTO_DRAFT_TOP_K, progress=None, runs=None) -> list[BenchRow]:
    """Decode every prompt ``repeats`` times with each method and temperature; ``prompts``: texts
    (encoded by the pair) or token-id lists.

    Methods are interleaved (prompt by prompt) so that a change in machine load affects them
    alike; the first method is the speed-up baseline. Tokens per step counts every step whole
    (the last step of a run may overshoot ``max_new_tokens``; tokens/s counts only the
    ``max_new_tokens`` kept); its interval is over the row's per-step |Z| values. ``progress`` is
    called with 1 after each decoded prompt (:func:`bench_runs` of them, warm-ups included).
    ``runs``, a list, receives one dict per timed decode (temperature, method name, prompt index,
    repeat, steps, emitted and kept tokens, seconds, tree nodes): the paired units of
    :mod:`rheotheory.decode.evaluation.curve`.

    Parameters
    ----------
    pair : ModelPair, SmolPair or HFPair
        ``target``, ``draft`` and ``encode``.
    methods : sequence of Method
        The methods, the baseline (autoregressive) first (:func:`bench_methods`).
    temperatures : iterable of float
        The temperatures, one block of rows each.
    max_new_tokens : int
        Tokens generated per run.
    repeats : int
        Passes over the prompts (:func:`default_repeats`).
    seed : int
        Seed of each method's ``torch.Generator`` (one per method and temperature, all the same
        seed).
    prompts : sequence of str or sequence of int, default BENCH_PROMPTS
        Texts (encoded by the pair) or token-id lists; the first also serves the warm-ups.
    top_k : int, optional
        Target top-k (:class:`~rheotheory.decode.engine.DecodeConfig`).
    top_p : float, optional
        Target top-p.
    log : callable, optional
        Called with each temperature's rows as a table (str, :func:`format_table` without header).
    draft_temp : float, optional
        T_d of the draft laws (None: the engine's default).
    names : sequence of str, optional
        Row names, one per method (None: the methods' families).
    draft_top_k : int, str or None, default AUTO_DRAFT_TOP_K
        The sparse draft (:class:`~rheotheory.decode.engine.DecodeConfig`).
    progress : callable, optional
        Called with 1 after each decoded prompt.
    runs : list, optional
        Receives one dict per timed decode.

    Returns
    -------
    list of BenchRow
        One row per method and temperature, temperature by temperature, methods in order.
    """
    names = list(names) if names is not None else [m.family for m in methods]
    rows = []
    for T in temperatures:
        cfg = DecodeConfig(temperature=T, top_k=top_k, top_p=top_p, max_new_tokens=max_new_tokens,
                           draft_temp=draft_temp, draft_top_k=draft_top_k)
        gens = [torch.Generator().manual_seed(seed) for _ in methods]
        acc = [[0, 0, 0, 0.0, 0] for _ in methods]  # emitted, steps, kept tokens, seconds, nodes
        sizes = [[] for _ in methods]  # per-step |Z| of each method
        for m, gen in zip(methods, gens):
            # NOTE: one untimed warm-up run per method so start-up costs are not billed.
            decode(pair.target, pair.draft, _ids(pair, prompts[0]), m, cfg, gen)
            if progress is not None:
                progress(1)
        # NOTE: a step policy carries over from prompt to prompt (an online method learns across the
        # prompts, as a server's would); the warm-up runs above start none.
        policies = [None] * len(methods)
        for rep in range(repeats):
            for i, text in enumerate(prompts):
                for j, (m, gen, a, z, name) in enumerate(zip(methods, gens, acc, sizes, names)):
                    r = decode(pair.target, pair.draft, _ids(pair, text), m, cfg, gen, policy=policies[j])
                    policies[j] = r.policy
                    emitted = sum(s.accepted + 1 for s in r.steps)
                    nodes = sum(s.tree_nodes for s in r.steps)
                    a[0] += emitted
                    a[1] += len(r.steps)
                    a[2] += len(r.tokens)
                    a[3] += r.seconds
                    a[4] += nodes
                    z.extend(s.accepted + 1 for s in r.steps)
                    if runs is not None:
                        runs.append({"temperature": T, "method": name, "prompt": i, "repeat": rep,
                                     "steps": len(r.steps), "emitted": emitted, "kept": len(r.tokens),
                                     "seconds": r.seconds, "nodes": nodes})
                    if progress is not None:
                        progress(1)
        base = acc[0][2] / acc[0][3]
        block = []
        for m, a, name, z in zip(methods, acc, names, sizes):
            run = m.at_temperature(T)
            _, lo, hi = mean_ci(z)
            block.append(BenchRow(name, run.describe(), T, a[0], a[1], a[3], a[4] / a[1], a[2] / a[3] / base,
                                  kept=a[2], resolved=run.to_dict(), tokens_per_step_ci95=(lo, hi)))
        rows.extend(block)
        if log is not None:
            log(format_table(block, header=False))
    return rows


def chat_template_of(pair):
    """A function text -> text rendering one user turn under ``pair``'s chat template (and the
    assistant's opening), or None when it has none: a Hugging Face tokenizer's own template; for
    the SmolLM2 pair (whose converted copy keeps only the fast tokenizer) the template its GGUF
    file carries, read through ``transformers``."""
    tok = getattr(pair, "tokenizer", None)
    if tok is None or not getattr(tok, "chat_template", None):
        from ..backends.smollm import SmolPair

        if not isinstance(pair, SmolPair):
            return None
        from transformers import AutoTokenizer

        from ..backends.smollm import find_gguf

        g = find_gguf()
        tok = AutoTokenizer.from_pretrained(str(g.parent), gguf_file=g.name)

    def apply(text: str) -> str:
        return tok.apply_chat_template([{"role": "user", "content": text}], tokenize=False, add_generation_prompt=True)

    return apply


def _ids(pair, prompt) -> list[int]:
    """A prompt's token ids: a text is encoded by the pair, a token-id list (a rendered prompt set,
    :func:`rheotheory.prompts.encode_prompts`) is taken as it is."""
    return pair.encode(prompt) if isinstance(prompt, str) else list(prompt)


#: Passes timed by :func:`cost_ratio` per model.
COST_PASSES = 50


@torch.inference_mode()
def cost_ratio(pair, context: int = 64) -> tuple[float, float, float]:
    """Seconds of one single-token cached pass of the target and of the draft, and their ratio.

    The draft is timed as decoding runs it: on CPU a built-in draft runs as its numpy copy; a draft
    head (:mod:`~rheotheory.decode.heads.draft_head`) as a tree node below its root, after a catch-up
    pass over the context (zero target features: the cost does not depend on them). Each is the
    mean of :data:`COST_PASSES` passes after 5 untimed ones.

    Parameters
    ----------
    pair : ModelPair, SmolPair or HFPair
        ``target`` and ``draft``.
    context : int, default 64
        Committed tokens before the timed passes.

    Returns
    -------
    target_seconds : float
        One target pass.
    draft_seconds : float
        One draft pass.
    ratio : float
        ``draft_seconds / target_seconds``.
    """
    import numpy as np

    from ..engine import reads_features
    from ..backends.tree_lm import NumpyLM, TinyLM, chain_mask

    out = []
    for model in (pair.target, pair.draft):
        p = next(model.parameters())
        if model is pair.draft and p.device.type == "cpu" and isinstance(model, TinyLM):
            model = NumpyLM(model)
        cache = model.new_cache()
        toks = np.arange(context) % model.cfg.vocab_size
        if reads_features(model):
            model.catch_up(cache, toks, torch.zeros(context, model.cfg.hidden * len(model.cfg.feature_layers),
                                                     device=p.device, dtype=p.dtype))
        else:
            model.extend(cache, toks, np.arange(context), chain_mask(context))
            cache.commit(context)
        for _ in range(5):
            model.extend(cache, [0], [0])
        if p.device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(COST_PASSES):
            model.extend(cache, [0], [0])
        if p.device.type == "cuda":
            torch.cuda.synchronize()
        out.append((time.perf_counter() - t0) / COST_PASSES)
    return out[0], out[1], out[1] / out[0]


@torch.inference_mode()
def pass_costs(model, sizes=(1, 2, 4, 8, 16, 32), context: int = 64, repeats: int = 10,
               stat: str = "median") -> list[tuple[int, float]]:
    """(n, seconds) of one cached target pass over n new tokens (a chain, after ``context``
    committed tokens), for each n of ``sizes``: the table a tree size is chosen from (a tree of N
    nodes costs one pass over N + 1 tokens).

    A model whose output head the engine defers (``extend_hidden``, SmolLM) is timed as the engine
    runs it: the pass without its head, then one head product over the rows a step computes
    together (``engine.CPU_HEAD_ROWS`` of them on a CPU, all n on CUDA); at n = 1 this is the
    autoregressive step's pass.

    Parameters
    ----------
    model : TinyLM, SmolLM or HFLM
        The target back-end timed.
    sizes : sequence of int, default (1, 2, 4, 8, 16, 32)
        The numbers of new tokens n.
    context : int, default 64
        Committed tokens before the timed passes.
    repeats : int, default 10
        Timings per size (after one untimed warm-up).
    stat : str, default "median"
        ``"median"`` or ``"min"`` of the timings (the minimum is the least disturbed by other work
        on the machine; any other value gives the minimum).

    Returns
    -------
    list of tuple of (int, float)
        (n, seconds) for each n of ``sizes``, in order.
    """
    import statistics

    import numpy as np

    from .. import engine
    from ..backends.tree_lm import chain_mask

    p = next(model.parameters())
    cache = model.new_cache()
    model.extend(cache, np.arange(context) % model.cfg.vocab_size, np.arange(context), chain_mask(context))
    cache.commit(context)
    deferred = hasattr(model, "extend_hidden")

    def one(toks, depths, mask):
        if not deferred:
            return model.extend(cache, toks, depths, mask)
        h, _ = model.extend_hidden(cache, toks, depths, mask)
        return model.logits_from(h[:engine.CPU_HEAD_ROWS] if p.device.type == "cpu" else h)

    out = []
    for n in sizes:
        toks, depths, mask = np.arange(n) % model.cfg.vocab_size, np.arange(n), chain_mask(n)
        one(toks, depths, mask)  # warm-up
        times = []
        for _ in range(repeats):
            if p.device.type == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            one(toks, depths, mask)
            if p.device.type == "cuda":
                torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
        out.append((n, statistics.median(times) if stat == "median" else min(times)))
    return out


def bench_runs(methods: int, temperatures: int, prompts: int, repeats: int) -> int:
    """Prompts :func:`run_bench` decodes: per temperature, one warm-up per method, then every
    prompt ``repeats`` times with every method.

    Parameters
    ----------
    methods : int
        The number of methods.
    temperatures : int
        The number of temperatures.
    prompts : int
        The number of prompts.
    repeats : int
        Passes over the prompts.

    Returns
    -------
    int
        The decodes, warm-ups included (what ``progress`` of :func:`run_bench` counts to).

    Examples
    --------
    >>> bench_runs(methods=3, temperatures=2, prompts=6, repeats=2)
    78
    """
    return temperatures * methods * (1 + repeats * prompts)


def format_table(rows, header: bool = True) -> str:
    """Rows as text: tree nodes per step, tokens per step with its 95% interval, steps, tokens/s, speed-up.

    Parameters
    ----------
    rows : iterable of BenchRow
        The rows, one line each.
    header : bool, default True
        Start with a line of column names.

    Returns
    -------
    str
        The lines, joined by newlines.
    """
    lines = []
    if header:
        lines.append(f"{'method':<15} {'T':>4} {'nodes':>6} {'tok/step':>9} {'95% CI':>15} {'steps':>6} "
                     f"{'tok/s':>8} {'speed-up':>9}")
    for r in rows:
        lo, hi = r.tokens_per_step_ci95
        lines.append(f"{r.method:<15} {r.temperature:>4g} {r.nodes_per_step:>6.1f} {r.tokens_per_step:>9.3f} "
                     f"{f'[{lo:.3f}, {hi:.3f}]':>15} {r.steps:>6d} {r.tokens_per_second:>8.1f} {r.speedup:>8.2f}x")
    return "\n".join(lines)


def table_json(rows) -> list[dict]:
    """Rows as JSON-ready dicts: ``name`` is the spec as given, ``method`` the resolved method object,
    ``tokens_per_step_ci95`` the [low, high] 95% interval (null ends: fewer than 2 steps).

    Parameters
    ----------
    rows : iterable of BenchRow
        The rows.

    Returns
    -------
    list of dict
        One dict per row: ``name``, ``method``, ``description``, ``temperature``, ``tokens_per_step``,
        ``tokens_per_step_ci95``, ``tokens_per_second``, ``speedup``, ``nodes_per_step``, ``steps``,
        ``seconds``.
    """
    def finite(x):
        return x if math.isfinite(x) else None

    return [{"name": r.method, "method": r.resolved, "description": r.description, "temperature": r.temperature,
             "tokens_per_step": r.tokens_per_step,
             "tokens_per_step_ci95": [finite(v) for v in r.tokens_per_step_ci95],
             "tokens_per_second": r.tokens_per_second, "speedup": r.speedup, "nodes_per_step": r.nodes_per_step,
             "steps": r.steps, "seconds": r.seconds} for r in rows]

