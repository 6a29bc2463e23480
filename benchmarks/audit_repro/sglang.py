"""SGLang 0.5.23 verifies greedily on its CPU and XPU engines at any temperature: lossy at T > 0.

In ``sglang/srt/speculative/eagle_utils.py``,

    def _verify_uses_greedy(*, is_all_greedy, is_cpu, is_hip, is_xpu, use_rejection_sampling):
        return is_all_greedy or is_cpu or is_xpu or (is_hip and not use_rejection_sampling)

and ``eagle_sample`` (EAGLE and n-gram verification) then commits
``target_predict = torch.argmax(next_token_logits, dim=-1)`` through
``verify_tree_greedy_func``: a draft is accepted iff it is the target's arg-max, and the token
after the accepted ones is the arg-max. On a CPU or XPU engine a request sampled at T = 1 (or any
T > 0, with or without top-k / top-p) therefore gets the target's greedy decoding, whatever the
draft proposes: the output law is a point mass on the greedy path, with no warning.

Part 1 runs SGLang's own ``_verify_uses_greedy`` on the flags of each engine (CPU, XPU, CUDA,
ROCm with and without ``--speculative-use-rejection-sampling``), all at T = 1
(``is_all_greedy=False``).

Part 2 runs the greedy side on the smallest case, a vocabulary of 3, one drafted token, T = 1:
SGLang's ``verify_tree_greedy_func`` as the XPU engine runs it (``verify_tree_greedy_triton``,
under Triton's interpreter; the CPU engine calls the C++ operator
``sgl_kernel.verify_tree_greedy_cpu`` of SGLang's CPU build of sgl-kernel, built from source for
that backend, which the sgl-kernel 0.3.21 wheel on the package index (a CUDA build) lacks), for
every draft token: the emitted tokens never depend on the
draft, and the first one is always the arg-max, where the law claimed is ``p``: total variation
``1 - max p``.

Part 3, the exact deviation of the audited setting ``CPU engine's verify choice at T=1, k=2``
of ``rheo audit --engine sglang``: its runs all equal the target's greedy path ``g`` of
``L = 4`` tokens, so the law of the first ``L`` tokens is the point mass at ``g`` and its total
variation from the target's law of ``L`` tokens is exactly ``1 - p(g)``; a few runs of the
engine path confirm that every run is ``g``.

    python benchmarks/audit_repro/sglang.py [--json benchmarks/results/audit/sglang_repro.json]

Needs Triton (the ``sglang`` extra) and SGLang's source (``pip install --no-deps sglang==0.5.23``,
or ``RHEO_SGLANG_SOURCE`` set to its wheel).
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

#: The flags ``eagle_sample`` passes for each engine (T = 1: not all greedy).
ENGINES = {
    "CPU": dict(is_cpu=True, is_hip=False, is_xpu=False, use_rejection_sampling=True),
    "XPU": dict(is_cpu=False, is_hip=False, is_xpu=True, use_rejection_sampling=True),
    "CUDA, rejection sampling": dict(is_cpu=False, is_hip=False, is_xpu=False, use_rejection_sampling=True),
    "CUDA": dict(is_cpu=False, is_hip=False, is_xpu=False, use_rejection_sampling=False),
    "ROCm, rejection sampling": dict(is_cpu=False, is_hip=True, is_xpu=False, use_rejection_sampling=True),
    "ROCm": dict(is_cpu=False, is_hip=True, is_xpu=False, use_rejection_sampling=False),
}


def part1(code) -> dict:
    return {name: bool(code["uses_greedy"](is_all_greedy=False, **flags)) for name, flags in ENGINES.items()}


def part2(code) -> dict:
    import torch

    p = torch.tensor([[0.5, 0.3, 0.2], [0.2, 0.2, 0.6]])  # target law after the root, and after root + draft
    logits = p.log()  # [2, V]: next_token_logits of one request, two verified positions
    out = {}
    for draft in range(3):
        cand = torch.tensor([[0, draft]], dtype=torch.int64)  # [bs=1, S=2]: root, one drafted token
        predict = torch.zeros(2, dtype=torch.int32)
        accept_index = torch.full((1, 2), -1, dtype=torch.int32)
        accept_num = torch.empty(1, dtype=torch.int32)
        code["greedy"](predict, accept_index, accept_num, cand, torch.arange(2).reshape(1, 2),
                       torch.tensor([[1, -1]]), torch.full((1, 2), -1), torch.argmax(logits, dim=-1).reshape(1, 2),
                       topk=1)
        n = int(accept_num[0])
        out[f"draft {draft}"] = [int(predict[int(accept_index[0, j])]) for j in range(n + 1)]
    return dict(target_law_first_token=p[0].tolist(), emitted=out, first_token_law=[1.0, 0.0, 0.0],
                tv_first_token=round(1.0 - float(p[0].max()), 6))


def part3(sglang, runs: int) -> dict:
    s = sglang.settings(only=["CPU engine's verify choice at T=1, k=2"])[0]
    path, prob = (), 1.0
    for _ in range(s.length):
        law = s.laws([path])[0]
        x = int(np.argmax(law))
        prob *= float(law[x])
        path += (x,)
    got = s.sample(runs, 0)
    return dict(setting=s.name, length=s.length, greedy_path=list(path), target_probability_of_greedy_path=prob,
                exact_tv=1.0 - prob, runs=runs, runs_equal_to_greedy_path=sum(z == path for z in got))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", default=None, help="write the results here")
    ap.add_argument("--runs", type=int, default=50, help="runs of the audited setting (part 3)")
    args = ap.parse_args(argv)
    from rheotheory.audit.engines import sglang

    code = sglang.load()
    res = dict(sglang=sglang.version(), part1_greedy_by_engine=part1(code), part2_smallest_case=part2(code),
               part3_audited_setting=part3(sglang, args.runs))
    print(json.dumps(res, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            f.write(json.dumps(res, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
