"""Why a static tree leads at the paper's tree size on SmolLM2: the draft head's calibration and
the acceptance of every node position of each tree, measured on a few prompts.

Usage::

    python simulations/smollm2_tree_calibration.py --out simulations/results/smollm2_tree_calibration

Two measurements, each cut into units logged as they finish (``*.csv.partial``,
:class:`rheotheory.checkpoint.RowLog`; a rerun resumes):

**Calibration** (``calibration.csv``, ``depth.csv``). The target samples a continuation of
``--tokens`` tokens at T to each prompt (seeded). Along that text, teacher-forced, at every
position and for every tree depth d = 1..D, the shipped head computes its law q_T exactly as a
tree node on the true path computes it (the root reads the target's features, a node at depth
d >= 2 its parent's output state: the engine's own ``DraftTreePair``), and the target gives its
law p_T at the same place. For the head's rank-r token x_r (r = 1..K) the row holds the mean of
q(x_r) and of p(x_r) over the positions: p(x_r) is what a deterministic (one-hot) child x_r is
worth, the chance that the target's token is x_r, so mean p against mean q per (depth, rank) is
the head's reliability where EAGLE's score reads it. ``depth.csv`` per depth: the target's mass
on the head's K children (what EAGLE's K one-hot children at one node accept together), the
head's own mass on them, the single sampled draft's acceptance 1 - TV(p, q) = sum min(p, q),
and how often the target's token is the head's top-1 / in its top-K. A reliability diagram over
bins of q (per depth group) is in ``reliability.csv``.

**Node positions** (``nodes.csv``, ``node_depth.csv``). Each method decodes ``--tokens`` tokens
of each prompt at T with the engine's step (the same builder, target pass and verifier, the
same random stream: a decode here gives the very tokens ``rheo decode`` gives), and every kept
node records its depth, its rank among its kept siblings by q (1 = the highest), q and p of its
token at its parent, its path's products of q (the dynamic tree's score) and of p (for a
deterministic child: the chance the target's text runs through it, which is its acceptance
under one-hot verification), and whether it was accepted. ``nodes.csv`` per (method, depth,
rank): nodes per step, acceptance rate, mean q, p, path q and path p; ``node_depth.csv`` per
(method, depth): nodes per step and accepted tokens per step at that depth.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import sys
import time
import zlib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

METHODS = ("eagle", "rheo-tuned", "rheo-adaptive", "static-wor")
SETS = ("sharegpt", "humaneval", "mtbench")
#: Bins of q for the reliability diagram.
Q_BINS = (0.0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 1.0000001)
OUTPUTS = ("calibration.csv", "depth.csv", "reliability.csv", "nodes.csv", "node_depth.csv")


def fail(msg: str) -> None:
    print(f"smollm2_tree_calibration: {msg}", file=sys.stderr)
    raise SystemExit(2)


def unit_seed(seed: int, set_name: str, T: float, prompt: int) -> int:
    """The same seed as the paper table's decode of this prompt (simulations/smollm2_paper_table.py)."""
    return seed * 1_000_003 + zlib.crc32(f"{set_name}|{T!r}|{prompt}".encode())


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--prompts", type=int, default=2, help="prompts per set (default %(default)s)")
    ap.add_argument("--tokens", type=int, default=64, help="tokens per prompt (default %(default)s)")
    ap.add_argument("--temperatures", default="1", help="calibration and node temperatures (default %(default)s)")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--top-k", type=int, default=10)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--budget", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--parts", default="calibration,nodes", help="which measurements (default %(default)s)")
    ap.add_argument("--summarize", action="store_true", help="only rewrite the summaries from the logged units")
    args = ap.parse_args(argv)
    try:
        args.temps = [float(t) for t in args.temperatures.split(",")]
    except ValueError:
        fail("--temperatures takes comma-separated numbers")
    if any(t <= 0 for t in args.temps):
        fail("the calibration needs T > 0 (at T = 0 the target's law is one-hot)")
    args.set_list = [s for s in args.sets.split(",") if s]
    args.method_list = [m for m in args.methods.split(",") if m]
    args.part_list = [p for p in args.parts.split(",") if p]
    if set(args.part_list) - {"calibration", "nodes"}:
        fail("--parts: calibration and/or nodes")
    return args


# ----------------------------------------------------------------------------------------------
# measurement


def _load(args):
    import torch

    from rheotheory.cli.models import set_threads
    from rheotheory.decode.backends.smollm import SMOL_PROMPTS
    from rheotheory.decode.backends.smollm_pair import load_smollm2
    from rheotheory.decode.evaluation.bench import chat_template_of
    from rheotheory.errors import RheoError
    from rheotheory.prompts import encode_prompts, load_prompts

    set_threads(torch, args.threads)
    pair = load_smollm2("cpu")
    try:
        chosen = load_prompts(",".join(f"{s}:{args.prompts}" for s in args.set_list), SMOL_PROMPTS)
    except RheoError as e:
        fail(str(e))
    template = chat_template_of(pair) if any(p.chat for ps in chosen.values() for p in ps) else None
    return pair, {name: (ps, encode_prompts(ps, pair, template)) for name, ps in chosen.items()}


def calibration_unit(pair, prompt: list[int], T: float, args, seed: int) -> dict:
    """Sums over the positions of one target-sampled text (module docstring): per (depth, rank)
    n, sum q, sum p; per depth the sums of p(top-K), q(top-K), 1 - TV, top-1 and top-K hits; per
    (depth group, q bin) n, sum q, sum p."""
    import torch

    from rheotheory.decode.engine import (AUTOREGRESSIVE, DecodeConfig, DraftTreePair, _draft_root, _State,
                                          decode)
    from rheotheory.decode.backends.tree_lm import tree_mask

    cfg = DecodeConfig(temperature=T, max_new_tokens=args.tokens)
    gen = torch.Generator().manual_seed(seed)
    cont = list(decode(pair.target, None, prompt, AUTOREGRESSIVE, cfg, gen).tokens)
    K, D = args.top_k, args.depth
    st = _State(pair.target, pair.draft, list(prompt), torch.device("cpu"),
                capacity=len(prompt) + len(cont) + D + 2)
    qs_at, ps = [], []  # per position t: [q at depth 1..D along the true path]; p at t
    with torch.inference_mode():
        for t in range(len(cont)):
            root_q = _draft_root(pair.draft, st, cfg)
            adapter = DraftTreePair(pair.draft, st.dcache, root_q, cfg)
            qs = [root_q]
            for d in range(1, D):
                if t + d >= len(cont):
                    break
                qs.append(adapter.q(tuple(cont[t:t + d])))
            qs_at.append(qs)
            rows = st.target_pass(pair.target, torch.tensor([st.ctx[-1]]), torch.tensor([0]), tree_mask([-1]))
            ps.append(rows.law(0, cfg))
            st.tcache.commit([0])
            st.keep_features([0])
            st.ctx.append(cont[t])
    n_bins = len(Q_BINS) - 1
    acc = {"rank": np.zeros((D, K, 3)), "depth": np.zeros((D, 6)), "bins": np.zeros((D, n_bins, 3))}
    for t, qs in enumerate(qs_at):
        for d, q in enumerate(qs):  # d = depth - 1: q predicts cont[t + d], whose target law is ps[t + d]
            p = ps[t + d]
            top = np.argsort(-q, kind="stable")[:K]
            qt, pt = q[top], p[top]
            acc["rank"][d, :, 0] += 1
            acc["rank"][d, :, 1] += qt
            acc["rank"][d, :, 2] += pt
            true = cont[t + d]
            acc["depth"][d] += (1, pt.sum(), qt.sum(), np.minimum(p, q).sum(), float(top[0] == true),
                                float(true in set(top.tolist())))
            b = np.clip(np.searchsorted(Q_BINS, qt, side="right") - 1, 0, n_bins - 1)
            for j in range(K):
                acc["bins"][d, b[j]] += (1, qt[j], pt[j])
    return {k: v.tolist() for k, v in acc.items()}


def nodes_unit(pair, prompt: list[int], method, T: float, args, seed: int) -> dict:
    """One decode of ``method`` with the engine's step, every kept node recorded (module docstring).
    Returns sums per (depth, rank): nodes, accepted, q, p, path q, path p; and the decode's
    steps and emitted tokens."""
    import torch

    from rheotheory.decode.backends.tree_lm import tree_mask
    from rheotheory.decode.engine import (DecodeConfig, DraftTreePair, TorchChooser, UniformStream, _draft_root,
                                          _State)
    from rheotheory.methods.registry import step_policy
    from rheotheory.verify.walk import SampleBranch, as_tree_verifier, method_tree_verifier, sample_outcome

    cfg = DecodeConfig(temperature=T, max_new_tokens=args.tokens)
    gen = torch.Generator().manual_seed(seed)
    method = method.at_temperature(T)
    D, W = method.depth, args.budget
    st = _State(pair.target, pair.draft, list(prompt), torch.device("cpu"),
                capacity=len(prompt) + args.tokens + D + 2)
    stream = UniformStream(gen)
    policy = step_policy(method)
    sums = np.zeros((D, W, 6))  # nodes, accepted, q, p, path q, path p
    steps = emitted = 0
    made = 0
    with torch.inference_mode():
        while made < args.tokens:
            m = policy.choose()
            chooser = TorchChooser(stream)
            root_q = _draft_root(pair.draft, st, cfg)
            adapter = DraftTreePair(pair.draft, st.dcache, root_q, cfg)
            tree = m.builder(adapter)(chooser)
            order = [i for i in range(1, len(tree.nodes)) if tree.kept[i]]
            for i in order:
                tree.resolve(i, chooser)
            row = {0: 0}
            for r, i in enumerate(order, start=1):
                row[i] = r
            parents = [-1] + [row[tree.nodes[i].parent] for i in order]
            tokens = torch.tensor([st.ctx[-1]] + [tree.nodes[i].token for i in order])
            depths = torch.tensor([0] + [tree.nodes[i].depth for i in order])
            rows = st.target_pass(pair.target, tokens, depths, tree_mask(parents))
            for r in range(1, len(parents)):
                rows.children.setdefault(parents[r], []).append(r)
            z = sample_outcome(as_tree_verifier(method_tree_verifier(m)), tree,
                               lambda node, prefix: rows.law(row[node], cfg), SampleBranch(stream.next))
            out, path_rows = list(z.z), [0] + [row[i] for i in z.nodes]
            # NOTE: the analysis reads laws only after the verifier has drawn, so the step is the engine's
            on_path = set(z.nodes)
            pq, pp = {0: 1.0}, {0: 1.0}
            for i in order:
                node = tree.nodes[i]
                parent = node.parent
                prefix = tree.path(parent) if parent else ()
                q = float(adapter.q(prefix)[node.token])
                p = float(rows.law(row[parent], cfg)[node.token])
                pq[i], pp[i] = pq[parent] * q, pp[parent] * p
                sib = [c for c in tree.kept_children(parent)]
                qsib = sorted(sib, key=lambda c: (-float(adapter.q(prefix)[tree.nodes[c].token]), c))
                rank = qsib.index(i)
                if node.depth <= D and rank < W:
                    sums[node.depth - 1, rank] += (1, float(i in on_path), q, p, pq[i], pp[i])
            st.tcache.commit(path_rows)
            st.keep_features(path_rows)
            adapter.commit_path(out[:-1])
            policy = policy.after(m, tuple(out))
            st.ctx.extend(out)
            made += len(out)
            steps += 1
            emitted += len(out)
    return {"sums": sums.tolist(), "steps": steps, "emitted": emitted}


def run(args) -> None:
    from rheotheory.checkpoint import RowLog
    from rheotheory.decode.evaluation.bench import bench_methods

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    pair, sets = _load(args)
    cfg = {"sets": args.set_list, "prompts": args.prompts, "tokens": args.tokens, "top_k": args.top_k,
           "depth": args.depth, "budget": args.budget, "seed": args.seed,
           "prompt_ids": {n: [p.id for p in ps] for n, (ps, _) in sets.items()}}
    (out / "settings.json").write_text(json.dumps(dict(cfg, temperatures=args.temps, methods=args.method_list),
                                                  indent=1) + "\n")
    methods = dict(bench_methods(args.method_list, size="smollm2", top_k=args.top_k, depth=args.depth,
                                 budget=args.budget))
    fields = ("set", "T", "prompt", "method", "data", "cpu_seconds")
    for part in args.part_list:
        with RowLog(out / f"{part}.units.csv", cfg, fields, resume=True) as log:
            for T in args.temps:
                for i in range(args.prompts):
                    for set_name, (ps, enc) in sets.items():
                        names = ["-"] if part == "calibration" else args.method_list
                        for name in names:
                            key = f"{part}|{set_name}|T{T!r}|p{i}|{name}"
                            if key in log:
                                continue
                            c0 = time.process_time()
                            seed = unit_seed(args.seed, set_name, T, i)
                            data = (calibration_unit(pair, list(enc[i]), T, args, seed) if part == "calibration"
                                    else nodes_unit(pair, list(enc[i]), methods[name], T, args, seed))
                            log.append(key, {"set": set_name, "T": T, "prompt": i, "method": name,
                                             "data": json.dumps(data),
                                             "cpu_seconds": round(time.process_time() - c0, 2)})
                            print(f"{part} T={T:g} {set_name} #{i} {name}: {time.process_time() - c0:.0f} CPU s"
                                  + (f", tau {data['emitted'] / data['steps']:.3f}" if part == "nodes" else ""),
                                  flush=True)
                summarize(args, out)
    summarize(args, out)


# ----------------------------------------------------------------------------------------------
# summaries


def _units(path: Path) -> list[dict]:
    """Logged units of a ``*.units.csv.partial`` (read-only; a torn last line is skipped)."""
    from rheotheory.checkpoint import HEADER_PREFIX

    if not path.exists():
        return []
    data = path.read_bytes()
    data = data[:data.rfind(b"\n") + 1]
    lines = [ln for ln in data.decode().splitlines(keepends=True) if not ln.startswith(HEADER_PREFIX)]
    reader = csv.DictReader(io.StringIO("".join(lines), newline=""))
    return [dict(r, T=float(r["T"]), data=json.loads(r["data"])) for r in reader]


def _write(path: Path, rows: list[dict]) -> None:
    from rheotheory.checkpoint import write_rows

    if rows:
        write_rows([{k: (round(v, 6) if isinstance(v, float) else v) for k, v in r.items()} for r in rows], path)


def summarize(args, out: Path) -> None:
    from rheotheory.provenance import write_provenance

    out = Path(out)
    written = []
    cal = _units(out / "calibration.units.csv.partial")
    if cal:
        rows, drows, brows = [], [], []
        for T in sorted({u["T"] for u in cal}):
            for group in [*args.set_list, "all"]:
                sel = [u for u in cal if u["T"] == T and (group == "all" or u["set"] == group)]
                if not sel:
                    continue
                rank = sum(np.array(u["data"]["rank"]) for u in sel)
                dep = sum(np.array(u["data"]["depth"]) for u in sel)
                for d in range(rank.shape[0]):
                    for r in range(rank.shape[1]):
                        n, sq, sp = rank[d, r]
                        if n:
                            rows.append({"set": group, "T": T, "depth": d + 1, "rank": r + 1, "positions": int(n),
                                         "mean_q": sq / n, "mean_p": sp / n, "p_over_q": sp / sq if sq else math.nan})
                    n = dep[d, 0]
                    if n:
                        drows.append({"set": group, "T": T, "depth": d + 1, "positions": int(n),
                                      "p_topk": dep[d, 1] / n, "q_topk": dep[d, 2] / n, "one_minus_tv": dep[d, 3] / n,
                                      "top1_hit": dep[d, 4] / n, "topk_hit": dep[d, 5] / n,
                                      "prompts": len(sel)})
            sel = [u for u in cal if u["T"] == T]
            bins = sum(np.array(u["data"]["bins"]) for u in sel)
            for lo_d, hi_d, label in ((0, 1, "1"), (1, 3, "2-3"), (3, bins.shape[0], "4+")):
                b = bins[lo_d:hi_d].sum(0)
                for j in range(b.shape[0]):
                    n, sq, sp = b[j]
                    if n:
                        brows.append({"T": T, "depths": label, "q_from": Q_BINS[j], "q_to": min(Q_BINS[j + 1], 1.0),
                                      "nodes": int(n), "mean_q": sq / n, "mean_p": sp / n})
        _write(out / "calibration.csv", rows)
        _write(out / "depth.csv", drows)
        _write(out / "reliability.csv", brows)
        written += ["calibration.csv", "depth.csv", "reliability.csv"]
    nod = [u for u in _units(out / "nodes.units.csv.partial") if u["method"] in args.method_list]
    if nod:
        rows, drows = [], []
        for T in sorted({u["T"] for u in nod}):
            for name in dict.fromkeys(u["method"] for u in nod):
                sel = [u for u in nod if u["T"] == T and u["method"] == name]
                steps = sum(u["data"]["steps"] for u in sel)
                emitted = sum(u["data"]["emitted"] for u in sel)
                s = sum(np.array(u["data"]["sums"]) for u in sel)
                for d in range(s.shape[0]):
                    for r in range(s.shape[1]):
                        n = s[d, r, 0]
                        if n:
                            rows.append({"method": name, "T": T, "depth": d + 1, "rank": r + 1,
                                         "nodes_per_step": n / steps, "accept_rate": s[d, r, 1] / n,
                                         "mean_q": s[d, r, 2] / n, "mean_p": s[d, r, 3] / n,
                                         "mean_path_q": s[d, r, 4] / n, "mean_path_p": s[d, r, 5] / n})
                    n = s[d, :, 0].sum()
                    drows.append({"method": name, "T": T, "depth": d + 1, "nodes_per_step": n / steps,
                                  "accepted_per_step": s[d, :, 1].sum() / steps,
                                  "path_p_per_step": s[d, :, 5].sum() / steps,
                                  "path_q_per_step": s[d, :, 4].sum() / steps,
                                  "tau": emitted / steps, "steps": steps, "prompts": len(sel)})
        _write(out / "nodes.csv", rows)
        _write(out / "node_depth.csv", drows)
        written += ["nodes.csv", "node_depth.csv"]
        # NOTE: the instrumented step repeats the engine's; the decodes the paper table made from the
        # same seed and length must come out the same (steps and tokens), or the node records are void
        table = out.parent / "smollm2_paper_table" / "runs.csv"
        if table.exists() and args.tokens == 64:
            with open(table, newline="") as f:
                ref = {(r["prompt_set"], float(r["temperature"]), int(r["prompt"]), r["method"]): r
                       for r in csv.DictReader(f) if int(r["depth"]) == args.depth}
            check = []
            for u in nod:
                r = ref.get((u["set"], u["T"], int(u["prompt"]), u["method"]))
                if r is not None:
                    same = (int(r["steps"]), int(r["emitted"])) == (u["data"]["steps"], u["data"]["emitted"])
                    check.append({"set": u["set"], "T": u["T"], "prompt": u["prompt"], "method": u["method"],
                                  "steps": u["data"]["steps"], "emitted": u["data"]["emitted"],
                                  "table_steps": int(r["steps"]), "table_emitted": int(r["emitted"]),
                                  "same": same})
            if check:
                _write(out / "engine_check.csv", check)
                written.append("engine_check.csv")
    settings = json.loads((out / "settings.json").read_text()) if (out / "settings.json").exists() else {}
    for name in written:
        write_provenance(out / name, seed=args.seed, settings=settings, recipe="smollm2_tree_calibration",
                         command=["python", "simulations/smollm2_tree_calibration.py",
                                  *[a for a in sys.argv[1:] if a != "--summarize"]])


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.summarize:
        summarize(args, Path(args.out))
        return 0
    run(args)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(main())
