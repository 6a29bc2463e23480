"""Where the tree-level verifiers are lossless: an exact verdict table, family x verifier.

Block verification (arXiv 2403.10444, ``rheotheory/verify/block.py``), Traversal
Verification (arXiv 2505.12398, ``rheotheory/verify/traversal.py``) and the verifiers published
since the seed paper (GBV, SpecTr-GBV, HSD: docs/theory.md section 7.3) are certified exactly
(docs/theory.md sections 4, 5 and 7.1) on random toy instances ``random_pair(V, D, seed)`` of
every tree family, including the families they are not registered for (the verifier is put into
the method through :func:`with_tree_verifier`). For each family and verifier the table gives

- the instances certified exactly lossless (difference exactly 0) out of those tried, and the
  largest exact deviation of section 4;
- the exact tau = E|Z| averaged over the instances, next to the best per-node verifier of the
  family (the largest mean tau among its per-node verifiers that are lossless on every
  instance), and on how many instances the tree-level tau is at least that verifier's, exactly;
- on chains, on how many instances traversal has the identical exact law of Z as block.

For each lossy cell the first lossy instance is shrunk (``rheotheory.counterexample.shrink``)
and saved as ``proofs/counterexamples/<verifier>-<family>.json``. The Markdown report is written
to ``proofs/REPORT_tree_level.md`` and printed.

    python proofs/tree_level_verifiers.py              # the full table (a few minutes, 2 workers)
    python proofs/tree_level_verifiers.py --seeds 1    # a quick look (no files written without --out)
"""

from __future__ import annotations

import argparse
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from rheotheory import ToyPair, certify, make_method, random_pair
from rheotheory.counterexample import shrink
from rheotheory.errors import VerifierError
from rheotheory.laws import format_number
from rheotheory.verify import tree_verifier, verifier_families

HERE = Path(__file__).resolve().parent

#: The tree-level verifiers certified here.
TREE_LEVEL = ("block", "traversal", "gbv", "spectr-gbv", "hsd")
#: The verifiers whose law of Z on a chain is compared with block verification's (each reduces to it there).
SAME_AS_BLOCK = ("traversal", "gbv")


@dataclass(frozen=True)
class Cell:
    """One family setting: the method fields, the grid of sizes and the per-node verifiers."""

    label: str  # row name
    family: str  # registered method family
    fields: dict  # fixed fields (sampling, proxy, ...)
    sizes: tuple  # size-field dicts, each certified for every V and seed
    per_node: tuple  # per-node verifiers of the family applicable to this setting


VOCABS = (3, 4, 5)

CELLS = (
    Cell("chain", "chain", {}, tuple({"depth": d} for d in (1, 2, 3)),
         ("sequential", "onehot", "rrs", "kseq", "ot")),
    Cell("static i.i.d.", "static", {"sampling": "iid"},
         tuple({"budget": n, "depth": d} for n, d in ((3, 2), (4, 2), (4, 3))), ("rrs", "kseq", "sequential", "onehot")),
    Cell("static w/o replacement", "static", {"sampling": "wor"},
         tuple({"budget": n, "depth": d} for n, d in ((3, 2), (4, 2), (4, 3))), ("rrs-wor", "sequential", "onehot")),
    Cell("multichain i.i.d.", "multichain", {"sampling": "iid", "width": 2},
         tuple({"depth": d} for d in (1, 2)), ("kseq", "rrs", "sequential", "onehot")),
    Cell("multichain w/o replacement", "multichain", {"sampling": "wor", "width": 2},
         tuple({"depth": d} for d in (1, 2)), ("rrs-wor", "sequential", "onehot")),
    Cell("eagle", "eagle", {}, tuple({"top_k": k, "depth": d, "budget": 2 * k} for k in (2, 3) for d in (2, 3)),
         ("onehot",)),
) + tuple(
    Cell(f"rheo {proxy}", "rheo", {"proxy": proxy},
         tuple({"top_k": k, "depth": d, "budget": 2 * k} for k in (2, 3) for d in (2, 3)), ("ot", "onehot", "sequential"))
    for proxy in ("next", "tail", "min-best-tail")
)

#: Seeds per (V, size): 3 vocabularies x sizes x seeds gives 90-144 instances per family.
SEEDS = {"chain": 10, "static": 10, "multichain": 16, "eagle": 8, "rheo": 12}

#: Instances outside the random family, tried when a cell has no random counterexample:
#: the constructed min-best-tail instance of proofs/tree_rheo.py (K = 3, D = 2, N = 3).
CONSTRUCTED = {"rheo min-best-tail": ("counterexamples/min-best-tail-sequential.json",
                                       {"top_k": 3, "depth": 2, "budget": 3})}

#: How the size fields are written in the table.
SIZE_LABELS = {"top_k": "K", "depth": "D", "budget": "N", "width": "W"}

_SUBCLASSES: dict = {}


def with_tree_verifier(method, name: str):
    """``method`` with its tree verifier replaced by the registered tree-level verifier ``name``.

    The verifier need not be admitted by the method's family: this is how the certifier is asked
    about families a verifier is not registered for. The method keeps its own ``verifier``
    field (its ``describe()`` therefore names the per-node rule it was built with).
    """
    base = type(method)
    key = (base, name)
    if key not in _SUBCLASSES:
        tv = tree_verifier(name)
        _SUBCLASSES[key] = type(f"{base.__name__}With{name.title()}", (base,),
                                {"tree_verifier": property(lambda self: tv), "__module__": __name__})
    return _SUBCLASSES[key](**method.fields())


def cell_method(cell: Cell, size: dict, verifier: str | None = None):
    """The method of ``cell`` at ``size`` with a per-node ``verifier`` (None: the first one)."""
    fields = dict(cell.fields, **size)
    return make_method(cell.family, verifier=verifier or cell.per_node[0], **fields)


def job(args):
    """Certify every verifier of one (cell, size, V, seed); exact values as strings."""
    ci, si, V, seed = args
    cell = CELLS[ci]
    size = cell.sizes[si]
    pair = random_pair(V, size["depth"], seed=seed)
    out = {}
    for ver in cell.per_node:
        c = certify(pair, cell_method(cell, size, ver))
        out[ver] = (bool(c.lossless), format_number(c.max_deviation), format_number(c.tokens_per_step))
    laws_z = {}
    for ver in TREE_LEVEL:
        try:
            c = certify(pair, with_tree_verifier(cell_method(cell, size), ver))
        except VerifierError:
            continue  # NOTE: not defined on these trees (block: one path; gbv: K i.i.d. paths of equal length)
        out[ver] = (bool(c.lossless), format_number(c.max_deviation), format_number(c.tokens_per_step))
        laws_z[ver] = c.z_law
    same = {v: laws_z[v] == laws_z["block"] for v in SAME_AS_BLOCK if "block" in laws_z and v in laws_z}
    return ci, si, V, seed, out, same


def find_counterexample(cell: Cell, rows: list, verifier: str, out_dir: Path | None):
    """Shrink the first lossy instance of ``verifier`` on ``cell`` (or the constructed one)."""
    lossy = [r for r in rows if not r["out"][verifier][0]]
    if lossy:
        r = lossy[0]
        size = cell.sizes[r["si"]]
        pair, origin = random_pair(r["V"], size["depth"], seed=r["seed"]), f"random_pair({r['V']}, " \
                                                                            f"{size['depth']}, seed={r['seed']})"
    elif cell.label in CONSTRUCTED:
        path, size = CONSTRUCTED[cell.label]
        pair, origin = ToyPair.load(HERE / path), f"proofs/{path}"
        if certify(pair, with_tree_verifier(cell_method(cell, size), verifier)).lossless:
            return None
    else:
        return None
    p2, m2, c2, calls = shrink(pair, with_tree_verifier(cell_method(cell, size), verifier))
    name = f"{verifier}-{cell.label.replace(' ', '-').replace('/', '').replace('.', '')}.json"
    if out_dir is not None:
        out_dir.mkdir(exist_ok=True)
        p2.save(out_dir / name)
    sizes = " ".join(f"{k}={getattr(m2, k)}" for k in ("top_k", "depth", "budget", "width") if hasattr(m2, k))
    extra = " ".join(f"{k}={v}" for k, v in cell.fields.items())
    return cell.label, verifier, (f"`{verifier}` on {cell.label}: from {origin}, shrunk to V={p2.vocab_size} {sizes} {extra}: exact "
            f"deviation {format_number(c2.max_deviation)} at z = {list(c2.worst_sequence)} "
            f"(`proofs/counterexamples/{name}`)")


def report(results: list, seeds_label: str, counterexamples: list) -> str:
    lines = ["# Tree-level verifiers: exact verdicts per tree family", "",
             "Generated by `python proofs/tree_level_verifiers.py` (docs/theory.md sections 4, 5, 7.1). "
             f"Instances: `random_pair(V, D, seed)` for V in {{3, 4, 5}}, {seeds_label}; every certificate is "
             "exact (rational enumeration, lossless = deviation exactly 0). tau = E|Z| (bonus token included), "
             "averaged over the instances; *best per-node* is the family's per-node verifier with the largest "
             "mean tau among those lossless on every instance; *tl >= pn* counts the instances whose exact tau "
             "with the tree-level verifier is at least that verifier's.", "",
             "| family | sizes | verifier | registered | lossless / total | max deviation | mean tau | "
             "best per-node | its mean tau | tl >= pn |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    chain_same = None
    for cell, rows in results:
        n = len(rows)
        pn_mean = {v: sum(Fraction(r["out"][v][2]) for r in rows) / n for v in cell.per_node}
        pn_ok = [v for v in cell.per_node if all(r["out"][v][0] for r in rows)]
        best = max(pn_ok, key=lambda v: pn_mean[v]) if pn_ok else None
        sizes = "; ".join(",".join(f"{SIZE_LABELS[k]}={v}" for k, v in s.items()) for s in cell.sizes)
        for ver in TREE_LEVEL:
            if ver not in rows[0]["out"]:
                continue
            ok = sum(r["out"][ver][0] for r in rows)
            dev = max((Fraction(r["out"][ver][1]) for r in rows), default=Fraction(0))
            mean = sum(Fraction(r["out"][ver][2]) for r in rows) / n
            ge = sum(Fraction(r["out"][ver][2]) >= Fraction(r["out"][best][2]) for r in rows) if best else 0
            reg = "no" if cell.family not in (verifier_families(ver) or ()) else \
                "yes (known lossy)" if tree_verifier(ver).lossy else "yes"
            if ok == n and (cell.label, ver) in {(c[0], c[1]) for c in counterexamples}:
                ok = f"{ok} / {n} (lossy on a constructed instance)"
            else:
                ok = f"{ok} / {n}"
            lines.append(f"| {cell.label} | {sizes} | `{ver}` | {reg} | {ok} | {format_number(dev)} | "
                         f"{float(mean):.4f} | {'`' + best + '`' if best else '-'} | "
                         f"{float(pn_mean[best]):.4f} | {ge} / {n} |" if best else
                         f"| {cell.label} | {sizes} | `{ver}` | {reg} | {ok} | {format_number(dev)} | "
                         f"{float(mean):.4f} | - | - | - |")
        if cell.family == "chain":
            chain_same = {v: sum(bool(r["same"].get(v)) for r in rows) for v in SAME_AS_BLOCK}, n
    lines += [""]
    if chain_same:
        lines.append("Chains: " + "; ".join(f"`{v}` has the identical exact law of Z as `block` on {k} / "
                                            f"{chain_same[1]} instances" for v, k in chain_same[0].items()) + ".")
        lines.append("")
    lines += ["Registration (`rheotheory/verify/block.py`, `rheotheory/verify/traversal.py`): `block` for "
              f"{', '.join(verifier_families('block'))}; `traversal` for {', '.join(verifier_families('traversal'))}: "
              "the sampled trees of the paper's setting, lossless on every instance above (`adaptive` with head 0 "
              "and the tail proxy only, certified by `simulations/certify_adaptive.py`). `eagle` and `rheo next` "
              "trees have deterministic children, outside arXiv 2505.12398, and are not registered even where no "
              "instance here is lossy (on `eagle` its tau equals `onehot`'s on every instance, on `rheo next` it is "
              "below `ot`'s on average); `rheo tail` and `rheo min-best-tail` are lossy (below), as `sequential` is there "
              "(docs/theory.md section 8): traversal, like `sequential`, needs the sampled child to keep its law "
              "given its deterministic siblings.", "",
              f"Verifiers published since the seed paper (`rheotheory/verify/gbv.py`, `spectr_gbv.py`, `hsd.py`; "
              f"docs/theory.md section 7.3): `gbv` for {', '.join(verifier_families('gbv'))} (K i.i.d. chains; "
              "block verification on one chain), lossless on every instance; `spectr-gbv` (its one-step rule as "
              "read from the paper's public description) and `hsd` (the one-pass rule of the authors' stand-alone "
              "code) are registered as known lossy: their witnesses are below.", ""]
    lines.append("Counterexamples (shrunk greedily, exact):" if counterexamples else "No lossy cell.")
    lines += [f"- {c[2]}" for c in counterexamples]
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=None, help="seeds per (V, size) for every family "
                    "(default: the SEEDS table; a value other than the default writes no files)")
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--out", default=None, help="where the report goes (default proofs/REPORT_tree_level.md, "
                    "written only at the default --seeds unless --out is given)")
    args = ap.parse_args(argv)
    jobs = [(ci, si, V, seed) for ci, cell in enumerate(CELLS) for si in range(len(cell.sizes)) for V in VOCABS
            for seed in range(args.seeds or SEEDS[cell.family])]
    jobs.sort(key=lambda j: -(j[2] ** CELLS[j[0]].sizes[j[1]]["depth"]))  # the slow ones first
    with ProcessPoolExecutor(args.workers) as pool:
        done = list(pool.map(job, jobs, chunksize=4))
    by_cell: dict = {}
    for ci, si, V, seed, out, same in done:
        by_cell.setdefault(ci, []).append(dict(si=si, V=V, seed=seed, out=out, same=same))
    results = []
    for ci, cell in enumerate(CELLS):
        rows = sorted(by_cell[ci], key=lambda r: (r["si"], r["V"], r["seed"]))
        results.append((cell, rows))
    write = args.seeds is None
    ce_dir = HERE / "counterexamples" if write else None
    counterexamples = []
    for cell, rows in results:
        for ver in TREE_LEVEL:
            if ver in rows[0]["out"]:
                ce = find_counterexample(cell, rows, ver, ce_dir)
                if ce:
                    counterexamples.append(ce)
    label = ", ".join(f"{f} {s} seeds per (V, size)" for f, s in SEEDS.items()) if write else \
        f"{args.seeds} seeds per (V, size)"
    text = report(results, label, counterexamples)
    if write or args.out:
        Path(args.out or HERE / "REPORT_tree_level.md").write_text(text, encoding="utf-8")
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
