"""EAGLE (eagle-llm 1.2.1) is lossy at T != 1 and under top-p/top-k: the token after a path that
ends at a leaf of the tree is drawn from the raw logits, without the logits processor.

In ``eagle/model/utils.py:evaluate_posterior`` (sampling branch), when no child was rejected at the
last examined position (every child along the path accepted down to a leaf),

    gt_logits = logits[best_candidate, accept_length - 1]
    sample_p = torch.softmax(gt_logits, dim=0)

and ``update_inference_inputs`` draws the next token from ``sample_p``: the target's law at
T = 1 without top-p/top-k, where every other position uses ``logits_processor(None, gt_logits)``
(the temperature, top-p and top-k of ``prepare_logits_processor``). At T = 1 without top-p/top-k
the two laws coincide, so the bug is invisible there.

Part 1, the smallest case, deterministic: a chain of one drafted token over a vocabulary of 3 at
T = 0.5, the draft law equal to the processed target law so that the draft is accepted for every
value of EAGLE's coin; ``evaluate_posterior`` returns the raw law instead of the processed one.

Part 2, the exact deviation of the audited settings: the law of the first L generated tokens of
the chain settings of ``rheo audit --engine eagle`` (the toy laws of
``rheotheory.audit.engines.eagle``), computed exactly by enumerating the outcomes of every random
draw EAGLE makes in a step (its draft draws through ``eagle.model.cnets.Model.sample``, its coins
``random.random()`` in ``evaluate_posterior``: each comparison ``r <= acp`` branches with weights
``min(1, acp)`` and ``1 - min(1, acp)``, the ``acp`` EAGLE computed), then the token drawn from
the ``sample_p`` EAGLE returns. EAGLE's own ``generate_candidates``, ``tree_decoding`` and
``evaluate_posterior`` run on every branch; the first token follows the processed law after the
prompt as in ``EaModel.forward``. The total variation from the target's law of L tokens after
the same settings is printed (at T = 1 it is float rounding: the control).

    python benchmarks/audit_repro/eagle.py [--json benchmarks/results/audit/eagle_repro.json]

Needs ``pip install --no-deps eagle-llm==1.2.1`` (the ``eagle`` extra).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import sys

import numpy as np


def part1() -> dict:
    """One step of EAGLE's verification on a chain of one drafted token (module docstring)."""
    import torch
    from eagle.model.utils import (TOPK, evaluate_posterior, generate_candidates, generate_tree_buffers,
                                   prepare_logits_processor)

    T = 0.5
    lp = prepare_logits_processor(temperature=T)
    root_logits = torch.tensor([2.0, 0.0, 0.0])  # target logits after the root
    next_logits = torch.tensor([0.0, 1.0, 2.0])  # target logits after the root and the drafted token
    q = torch.softmax(lp(None, root_logits[None])[0], dim=0)  # the draft law = processed target law
    x, root = 0, 1
    buffers = generate_tree_buffers([[0]], device="cpu")
    tokens = torch.zeros(1, TOPK, dtype=torch.long)  # EAGLE's rows of drawn children (one row)
    tokens[0, 0] = x
    probs = torch.zeros(1, TOPK)
    probs[0, 0] = q[x]
    candidates, cart, tree_candidates = generate_candidates((tokens, probs, [q[None]]), buffers["tree_indices"],
                                                            buffers["retrieve_indices"],
                                                            torch.tensor([[root]]), lp)
    logits = torch.stack([root_logits, next_logits])[buffers["retrieve_indices"][0]][None]  # [1 path, 2, V]
    best, accept_length, sample_p = evaluate_posterior(logits, candidates, lp, cart, [q[None]], buffers["p_indices"],
                                                       tree_candidates, buffers["b_indices"])
    claimed = torch.softmax(next_logits / T, dim=0)
    raw = torch.softmax(next_logits, dim=0)
    return dict(temperature=T, accept_length=int(accept_length), sample_p=[round(float(v), 6) for v in sample_p],
                processed_law=[round(float(v), 6) for v in claimed], raw_law=[round(float(v), 6) for v in raw],
                tv=float(0.5 * (sample_p.double() - claimed.double()).abs().sum()))


class _Walk:
    """The outcomes of one step's random draws, depth first: ``choose(options)`` takes the
    scripted option at each draw (the first one past the script) and records the alternatives."""

    def __init__(self, script: list):
        self.script, self.points, self.taken = script, [], []

    def choose(self, options: list):  # options: [(value, weight > 0)]
        i = len(self.points)
        k = self.script[i] if i < len(self.script) else 0
        self.points.append(options)
        self.taken.append(k)
        return options[k][0]

    def weight(self) -> float:
        return float(np.prod([p[k][1] for p, k in zip(self.points, self.taken)]))


@contextlib.contextmanager
def _scripted(walk: _Walk):
    """EAGLE's coin and torch.multinomial replaced by draws of ``walk`` (exact branch weights)."""
    import eagle.model.utils as eu
    import torch

    class Coin:
        def __le__(self, acp):  # evaluate_posterior: ``if r <= acp``
            a = min(1.0, max(0.0, float(acp)))
            return walk.choose([(v, w) for v, w in ((True, a), (False, 1.0 - a)) if w > 0])

    class Random:
        @staticmethod
        def random():
            return Coin()

    def multinomial(probs, num_samples, replacement=False):
        assert not replacement
        rows = probs.double().reshape(-1, probs.shape[-1])  # [rows, V]
        out = []
        for row in rows:
            w = (row / row.sum()).tolist()
            options = []
            for draw in itertools.permutations([v for v in range(len(w)) if w[v] > 0], num_samples):
                weight, left = 1.0, 1.0
                for v in draw:
                    weight, left = weight * w[v] / left, left - w[v]
                options.append((draw, weight))
            out.append(walk.choose(options))
        return torch.tensor(out, dtype=torch.long).reshape(*probs.shape[:-1], num_samples)

    saved = eu.random, torch.multinomial
    eu.random, torch.multinomial = Random, multinomial
    try:
        yield
    finally:
        eu.random, torch.multinomial = saved


def _step_outcomes(model, lp, buffers, prompt: tuple, context: tuple) -> dict:
    """Exact law of one step after ``context`` (ending with the step's root):
    ``{(accepted tokens, next token): probability}``."""
    import torch
    from eagle.model.utils import evaluate_posterior, generate_candidates, tree_decoding

    input_ids = torch.tensor([prompt + context])  # [1, len]
    out: dict = {}
    stack = [[]]
    while stack:
        walk = _Walk(stack.pop())
        with _scripted(walk):
            tree_logits = model.ea_layer.topK_genrate(None, input_ids, None, lp)
            candidates, cart, tree_candidates = generate_candidates(tree_logits, buffers["tree_indices"],
                                                                    buffers["retrieve_indices"], input_ids[:, -1:], lp)
            model.base_model.model.tree_mask = buffers["tree_attn_mask"]
            logits, _, _ = tree_decoding(model, tree_candidates, None, buffers["tree_position_ids"], input_ids,
                                         buffers["retrieve_indices"])
            best, acc, sample_p = evaluate_posterior(logits, candidates, lp, cart, tree_logits[2],
                                                     buffers["p_indices"], tree_candidates, buffers["b_indices"])
        w = walk.weight()
        accepted = tuple(candidates[int(best), 1:int(acc) + 1].tolist())
        law = sample_p.double() / sample_p.double().sum()
        for y in range(len(law)):
            if law[y] > 0:
                out[(accepted, y)] = out.get((accepted, y), 0.0) + w * float(law[y])
        for i in range(len(walk.script), len(walk.points)):
            for alt in range(1, len(walk.points[i])):
                stack.append(walk.taken[:i] + [alt])
    return out


def exact_tv(name: str) -> dict:
    """Exact law of the first L tokens of audit setting ``name`` against the target's (module docstring)."""
    import torch
    from eagle.model.utils import generate_tree_buffers, prepare_logits_processor

    from rheotheory.audit.engines import eagle as adapter

    cfg = adapter.SETTINGS[name]
    choices = adapter.tree_choices(cfg.tree)
    L = max(map(len, choices)) + 2
    s = cfg.sampling
    lp = prepare_logits_processor(temperature=s.temperature, top_p=s.top_p or 0.0, top_k=s.top_k or 0)
    buffers = generate_tree_buffers(choices, device="cpu")
    model = adapter._model(adapter.LAW_SEED, cfg.target_zeros, choices)
    model.ea_layer.reset_kv()
    state = model.ea_layer.state
    memo: dict = {}
    engine: dict = {}

    def expand(seq: tuple, w: float):
        if len(seq) >= L:
            engine[seq[:L]] = engine.get(seq[:L], 0.0) + w
            return
        if seq not in memo:
            memo[seq] = _step_outcomes(model, lp, buffers, adapter.PROMPT, seq)
        for (accepted, y), p in memo[seq].items():
            expand(seq + accepted + (y,), w * p)

    first = torch.softmax(lp(None, torch.tensor(state.target(()))[None])[0].double(), dim=0)  # EaModel.forward
    for r in range(len(first)):
        if first[r] > 0:
            expand((r,), float(first[r]))
    laws = adapter._laws(cfg, adapter.LAW_SEED)
    target = {(): 1.0}
    for _ in range(L):
        level = list(target)
        nxt = laws(level)
        target = {u + (v,): pu * float(nxt[i, v]) for i, (u, pu) in enumerate(target.items())
                  for v in range(nxt.shape[1]) if nxt[i, v] > 0}
    keys = set(target) | set(engine)
    tv = 0.5 * sum(abs(engine.get(k, 0.0) - target.get(k, 0.0)) for k in keys)
    outside = sum(p for k, p in engine.items() if k not in target)
    return dict(setting=name, length=L, tv=tv, engine_mass_outside_target_support=outside,
                engine_total=sum(engine.values()), steps_enumerated=len(memo))


#: The chain settings of the audit whose law is enumerated exactly (a tree's draws are too many).
CHAIN_SETTINGS = ("chain D=2 T=1", "chain D=2 T=0.7", "chain D=2 T=1.5", "chain D=2 top_p=0.8")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", metavar="PATH", help="also write the numbers to PATH")
    args = ap.parse_args(argv)
    # NOTE: this file is called eagle.py: its folder must not shadow the eagle package
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    try:
        import eagle.model.utils  # noqa: F401
    except ImportError as e:
        print(f"eagle.py: needs eagle-llm==1.2.1 ({e}): pip install --no-deps eagle-llm==1.2.1", file=sys.stderr)
        return 2
    from importlib import metadata

    out = dict(eagle_llm=metadata.version("eagle-llm"), part1=part1(), part2=[])
    p1 = out["part1"]
    print(f"eagle-llm {out['eagle_llm']}")
    print(f"part 1: chain of one token, T = {p1['temperature']}, draft accepted (accept_length "
          f"{p1['accept_length']})")
    print(f"  sample_p returned     {p1['sample_p']}")
    print(f"  processed law (T={p1['temperature']}) {p1['processed_law']}")
    print(f"  raw law (T=1)         {p1['raw_law']}")
    print(f"  TV(sample_p, processed law) = {p1['tv']:.4f}")
    print("part 2: exact law of the first L tokens of the audit's chain settings")
    for name in CHAIN_SETTINGS:
        r = exact_tv(name)
        out["part2"].append(r)
        print(f"  {name:<22} L = {r['length']}: TV = {r['tv']:.3e} (mass outside the target's support "
              f"{r['engine_mass_outside_target_support']:.3e}; engine law sums to {r['engine_total']:.9f}; "
              f"{r['steps_enumerated']} steps enumerated)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
