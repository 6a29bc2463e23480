r"""``--budget auto``: the tree size (K, D, N) that pays most on this device, from measured costs and
measured acceptance.

The rule (docs/guide/real-models.md, "Choosing the tree size"): a step with a tree of N nodes
and depth D costs one target pass over N + 1 tokens and D draft passes, and emits tau tokens on
average; autoregressive sampling emits one token per single-token pass. Its model passes alone
would give the speed-up

.. math::  S(K, D, N) = \tau(K, D, N) \cdot c(1) / (c(N + 1) + D\, d)

with c(n) the measured cost of one cached target pass over n tokens
(:func:`measured_costs`: the minimum of repeated timings) and d the draft's per-level cost
(:func:`~rheotheory.decode.evaluation.bench.cost_ratio`: one cached pass of the draft). S is the
**physical limit** of the method at that size: what it would reach if tree building,
verification and Python cost nothing. tau is measured by a short pilot decode of each candidate
(the method itself at the requested temperature, ``PILOT_PROMPTS`` prompts of the model's
benchmark set, ``PILOT_TOKENS`` tokens each, seed ``PILOT_SEED``). S leaves out what a step costs
besides the model passes (the verifier's head products, tree building, Python), which on a CPU is
a tenth of a step or more and grows with the tree's depth; so the choice is by the **predicted
speed-up** of the pilot itself, its tokens per second over an autoregressive pilot's on the same
prompts (the decoding loops only): tau x t_AR / t_step, never above S (overhead only slows a step
down, so a pilot above its physical limit is timing noise). t_AR is the faster of two
autoregressive pilots, one before the candidates and one after: one slow autoregressive timing
would otherwise raise every candidate's prediction at once. Every candidate's tau rests on some
ninety steps, and the largest of a dozen noisy estimates is biased upwards, most for the deep trees whose
accepted lengths vary most; so candidates are ranked by the prediction at tau minus one standard
error of its mean (``speedup_low``), and the best by that ranking runs. **When its predicted
speed-up does not reach** :data:`MIN_SPEEDUP` (1.05: a tree predicted less than 5% faster is as
likely to be slower), the choice is no tree at all: ``rheo decode --budget auto`` then decodes
autoregressively and says so in one line. The physical limit is kept in the table as the ceiling
no overhead-free engine could pass.

The choice is cached per (model, device, dtype, threads, method, temperature) in
``$XDG_CACHE_HOME/rheotheory/tree_sizes.json`` (default ``~/.cache``); ``RHEO_NO_SIZE_CACHE=1``
skips the cache.
"""

from __future__ import annotations

import json
import math
import os
import statistics
from pathlib import Path

__all__ = ["CANDIDATES", "MIN_SPEEDUP", "pays", "best", "PILOT_PROMPTS", "PILOT_TOKENS", "PILOT_SEED", "choose_size",
           "physical_limit", "step_cost", "cache_path", "sized", "measured_costs", "COST_SIZES"]

#: Tree sizes (K, D, N) the search compares, from one draft token (where a pass over two tokens
#: costs little more than one and acceptance is low, the best a CPU can do) up to the ``model``
#: row of :data:`~rheotheory.methods.TREE_SIZES`.
CANDIDATES = ((1, 1, 1), (2, 1, 2), (1, 2, 2), (2, 2, 3), (1, 3, 3), (2, 2, 4), (2, 3, 4), (2, 3, 6), (2, 4, 8),
              (3, 4, 8), (3, 4, 10), (4, 6, 20))
#: Token counts at which the target pass is timed (a tree of N nodes costs a pass over N + 1).
COST_SIZES = (1, 2, 3, 4, 5, 7, 9, 11, 16, 21, 32)
#: Prompts of the model's benchmark set each pilot decodes (PILOT_TOKENS tokens each, about 90
#: steps in all at 1.5 tokens per step).
PILOT_PROMPTS = 3

#: Smallest predicted speed-up (the pilot's, overhead included) at which a tree is run: below it
#: the pilot cannot tell the tree from autoregressive decoding reliably, so autoregressive decoding runs.
MIN_SPEEDUP = 1.05


def pays(table: list[dict]) -> bool:
    """Whether the chosen candidate of a :func:`choose_size` table (:func:`best`) reaches
    :data:`MIN_SPEEDUP`.

    Parameters
    ----------
    table : list of dict
        A :func:`choose_size` table (``predicted_speedup``, ``speedup_low``).

    Returns
    -------
    bool
        True when the chosen row's predicted speed-up is at least :data:`MIN_SPEEDUP`.
    """
    return best(table)["predicted_speedup"] >= MIN_SPEEDUP


def best(table: list[dict]) -> dict:
    """The chosen row of a :func:`choose_size` table: the largest predicted speed-up at tau minus
    one standard error (``speedup_low``; ties to the smaller tree, the first of the table).

    Parameters
    ----------
    table : list of dict
        A :func:`choose_size` table, non-empty.

    Returns
    -------
    dict
        The chosen row.

    Examples
    --------
    >>> best([{"budget": 2, "speedup_low": 1.2}, {"budget": 8, "speedup_low": 1.2}])["budget"]
    2
    """
    return max(table, key=lambda r: r["speedup_low"])

PILOT_TOKENS = 48
PILOT_SEED = 0


def cache_path() -> Path:
    """Where the chosen sizes are cached: ``$XDG_CACHE_HOME/rheotheory/tree_sizes.json``.

    Returns
    -------
    pathlib.Path
        The file (``~/.cache`` when ``XDG_CACHE_HOME`` is unset); nothing is created.
    """
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rheotheory" / "tree_sizes.json"


def step_cost(costs: dict, nodes: int, depth: int, draft_s: float) -> float:
    """Seconds of one step's model passes: the target pass over nodes + 1 tokens (linear
    interpolation in the measured curve ``costs``: n -> seconds) and ``depth`` draft passes.

    Parameters
    ----------
    costs : dict[int, float]
        n -> seconds of a target pass over n tokens (at least two sizes, the smallest below
        ``nodes + 1``); extrapolated linearly from its last two sizes past the largest.
    nodes : int
        N, the tree's nodes.
    depth : int
        D, the draft passes.
    draft_s : float
        Seconds of one draft pass.

    Returns
    -------
    float
        c(N + 1) + D x ``draft_s``.

    Examples
    --------
    >>> step_cost({1: 1.0, 3: 2.0}, nodes=1, depth=2, draft_s=0.25)
    2.0
    """
    n = nodes + 1
    xs = sorted(costs)
    if n in costs:
        c = costs[n]
    elif n > xs[-1]:
        a, b = xs[-2], xs[-1]
        c = costs[b] + (costs[b] - costs[a]) * (n - b) / (b - a)
    else:
        b = next(x for x in xs if x > n)
        a = max(x for x in xs if x < n)
        c = costs[a] + (costs[b] - costs[a]) * (n - a) / (b - a)
    return c + depth * draft_s


#: Version of how :func:`measured_costs` times a pass, part of a cached choice's key: 2 times a
#: deferred output head as the engine computes it (one product over the rows read together); 3
#: adds the CPU product (:mod:`~rheotheory.decode.backends.cpu_matmul`) to the key, since a
#: choice timed with one product does not hold for the other; 4 chooses by the pilot's predicted
#: speed-up instead of the physical limit; 5 caps it by the physical limit, times the
#: autoregressive pilot twice, ranks by tau minus one standard error, keys a one-thread choice on
#: the single-row product measured at load, and no longer makes the cost curve non-decreasing.
COST_MODEL = 5


def measured_costs(model, repeats: int = 15) -> dict:
    """n -> seconds of a cached target pass over n tokens: the minimum of ``repeats`` timings.

    Not made non-decreasing in n: a pass over more tokens can be cheaper. With oneDNN's packed
    product SmolLM2's pass over 2 tokens cost more than its pass over 3 to 5 on the project's CPU,
    with one thread and with two (the product's kernel depends on the row count), and clamping
    the curve raised every tree's cost to the 2-token pass, putting the physical limit below the
    speed-ups measured (cost model 4).

    Parameters
    ----------
    model : TinyLM, SmolLM or HFLM
        The target back-end.
    repeats : int, default 15
        Timings per size.

    Returns
    -------
    dict[int, float]
        n -> seconds, for each n of :data:`COST_SIZES`.
    """
    from .bench import pass_costs

    return dict(pass_costs(model, sizes=COST_SIZES, repeats=repeats, stat="min"))


def physical_limit(tau: float, costs: dict, nodes: int, depth: int, draft_s: float) -> float:
    """tau x single pass / (pass at tree size + draft): the speed-up with zero overhead.

    Parameters
    ----------
    tau : float
        Tokens per step.
    costs : dict[int, float]
        n -> seconds of a target pass over n tokens (with n = 1).
    nodes : int
        N, the tree's nodes.
    depth : int
        D, the draft passes per step.
    draft_s : float
        Seconds of one draft pass.

    Returns
    -------
    float
        ``tau * costs[1] / step_cost(costs, nodes, depth, draft_s)``.
    """
    return tau * costs[1] / step_cost(costs, nodes, depth, draft_s)


def sized(method, size):
    """``method`` at tree size ``size`` = (K, D, N): the fields its family has (a chain takes D;
    a static tree's shape is rebuilt from D and N; rheo's head is kept below K).

    Parameters
    ----------
    method : Method
        A resolved method.
    size : tuple of (int, int, int)
        (K, D, N): ``top_k``, ``depth``, ``budget``.

    Returns
    -------
    Method
        The method refitted (``Method.fit``) with the fields it has.
    """
    fields = method.fields()
    over = {k: v for k, v in zip(("top_k", "depth", "budget"), size) if k in fields}
    if "shape" in fields:
        over["shape"] = None
    return method.fit(**over)


def _key(model_id: str, device: str, dtype: str, threads: int, method, temperature: float) -> str:
    import torch

    from ..backends import cpu_matmul

    product = cpu_matmul.product() if device == "cpu" else ""
    if product == "onednn" and threads == 1:
        product += "/single-row-" + cpu_matmul.single_row_product()  # NOTE: measured per machine, see cpu_matmul
    return json.dumps([COST_MODEL, model_id, device, dtype, threads, product, method.family, method.verifier,
                       sorted((k, str(v)) for k, v in method.fields().items() if k not in ("top_k", "depth", "budget")),
                       round(float(temperature), 4), torch.__version__])


def choose_size(pair, method, temperature: float, prompts, model_id: str, device: str = "cpu",
                dtype: str = "float32", threads: int = 1, decode_kw: dict | None = None, log=None,
                candidates=CANDIDATES, costs: dict | None = None,
                draft_s: float | None = None) -> tuple[tuple[int, int, int], list[dict]]:
    """The candidate (K, D, N) chosen for ``method`` at ``temperature`` (:func:`best`), and the
    table it was chosen from (one dict per candidate: size, tau and its standard error, step cost,
    physical limit, pilot seconds per step, predicted speed-up and ``speedup_low``).

    ``method``: a resolved method whose family has ``top_k``/``depth``/``budget`` fields (or a
    subset: a chain takes D from the candidate and ignores K and N); ``prompts``: token-id lists
    or texts of the pair; ``decode_kw``: further :class:`~rheotheory.decode.engine.DecodeConfig`
    fields (target top-k/top-p, draft settings); ``costs`` and ``draft_s``: pass costs measured
    already (:func:`measured_costs`, one draft pass), so that several searches share one curve.

    A cached choice for the same key is returned without a search (module docstring).

    Parameters
    ----------
    pair : ModelPair, SmolPair or HFPair
        ``target``, ``draft`` and ``encode``.
    method : Method
        A resolved method whose family has ``top_k``/``depth``/``budget`` fields (or a subset).
    temperature : float
        T of the pilots.
    prompts : sequence of str or sequence of int
        Texts of the pair or token-id lists; the first :data:`PILOT_PROMPTS` are decoded.
    model_id : str
        The model's name in the cache key.
    device : str, default "cpu"
        The device's type in the cache key (``"cpu"`` adds the CPU product to it).
    dtype : str, default "float32"
        The dtype's name in the cache key.
    threads : int, default 1
        Torch's threads, in the cache key.
    decode_kw : dict, optional
        Further :class:`~rheotheory.decode.engine.DecodeConfig` fields.
    log : callable, optional
        Called with one line (str) per candidate.
    candidates : sequence of tuple of (int, int, int), default CANDIDATES
        The sizes (K, D, N) compared; ones that give the same method are run once.
    costs : dict[int, float], optional
        Target pass costs measured already (None: :func:`measured_costs` of the target).
    draft_s : float, optional
        Seconds of one draft pass measured already (None:
        :func:`~rheotheory.decode.evaluation.bench.cost_ratio`).

    Returns
    -------
    size : tuple of (int, int, int)
        The chosen (K, D, N) (:func:`best`).
    table : list of dict
        One dict per candidate: ``top_k``, ``depth``, ``budget``, ``tau``, ``tau_se``, ``steps``,
        ``step_cost_s``, ``physical_limit``, ``pilot_step_s``, ``predicted_speedup``,
        ``speedup_low``.
    """
    import torch

    from .bench import _ids, cost_ratio
    from ..engine import DecodeConfig, decode

    key = _key(model_id, device, dtype, threads, method, temperature)
    path = cache_path()
    use_cache = os.environ.get("RHEO_NO_SIZE_CACHE") != "1"
    cache = {}
    if use_cache and path.exists():
        try:
            cache = json.loads(path.read_text())
        except (OSError, ValueError):
            cache = {}
    if key in cache:
        hit = cache[key]
        return tuple(hit["size"]), hit["table"]
    if costs is None:
        costs = measured_costs(pair.target)
    if draft_s is None:
        _, draft_s, _ = cost_ratio(pair)
    cfg = DecodeConfig(temperature=temperature, max_new_tokens=PILOT_TOKENS, **(decode_kw or {}))

    def pilot(m):
        gen = torch.Generator().manual_seed(PILOT_SEED)
        per_step: list[int] = []
        seconds = 0.0
        for p in prompts[:PILOT_PROMPTS]:
            r = decode(pair.target, pair.draft, _ids(pair, p), m, cfg, gen)
            per_step += [s.accepted + 1 for s in r.steps]
            seconds += r.seconds
        return per_step, seconds

    def ar_seconds_per_token():
        emitted, seconds = pilot(ar)
        return seconds / max(1, sum(emitted))

    from ...methods import resolve

    ar = resolve("autoregressive")
    pilot(sized(method, candidates[0]))  # NOTE: warm-up, untimed: the first decode pays for allocations
    ar_first = ar_seconds_per_token()
    table, seen = [], set()
    for K, D, N in candidates:
        m = sized(method, (K, D, N))
        sig = tuple(sorted((k, v) for k, v in m.fields().items() if k in ("top_k", "depth", "budget")))
        if sig in seen:
            continue
        seen.add(sig)
        emitted, seconds = pilot(m)
        steps = len(emitted)
        tau = sum(emitted) / steps
        se = statistics.stdev(emitted) / math.sqrt(steps) if steps > 1 else 0.0
        nodes, depth = m.nodes, m.depth
        table.append({"top_k": K, "depth": depth, "budget": nodes, "tau": tau, "tau_se": se, "steps": steps,
                      "step_cost_s": step_cost(costs, nodes, depth, draft_s),
                      "physical_limit": physical_limit(tau, costs, nodes, depth, draft_s),
                      "pilot_step_s": seconds / steps})
    # NOTE: the faster of two autoregressive timings, one on each side of the candidates: a slow one
    # would raise every prediction together
    ar_s = min(ar_first, ar_seconds_per_token())
    for row in table:
        step_s, limit, tau = row["pilot_step_s"], row["physical_limit"], row["tau"]
        row["predicted_speedup"] = min(tau * ar_s / step_s, limit)
        row["speedup_low"] = row["predicted_speedup"] * (tau - row["tau_se"]) / tau  # NOTE: both bounds scale with tau
        if log is not None:
            log(f"  K={row['top_k']} D={row['depth']} N={row['budget']}: tau {tau:.3f} +- {row['tau_se']:.3f} over "
                f"{row['steps']} steps, predicted speed-up {row['predicted_speedup']:.2f}x (at tau - 1 s.e. "
                f"{row['speedup_low']:.2f}x; physical limit {limit:.2f}x)")
    chosen = best(table)
    size = (chosen["top_k"], chosen["depth"], chosen["budget"])
    if use_cache:
        cache[key] = {"size": list(size), "table": table, "pass_costs": {str(k): v for k, v in costs.items()},
                      "draft_s": draft_s, "autoregressive_s_per_token": ar_s}
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_text(json.dumps(cache, indent=1))
            os.replace(tmp, path)
        except OSError:
            pass  # NOTE: an unwritable cache costs a new search next time, never a failure
    return size, table
