"""Tree-level claims for RheoSampling (``rheo``): which proxies keep it lossless, and why.

What the verifier observes. The walk starts at the root. At a node v (path u) it sees v's kept
children in creation order: the kept deterministic children (tokens fixed by u: the top-m
draft tokens) and, if kept, the sampled child with its token s_v and the law L_v it was drawn
from (q(. | u) restricted to the complement of the head and renormalised). Before reaching v
it has seen the same at every ancestor w of v (including the tokens of w's kept sampled child,
whether or not the walk continued into it). Write H_v for this history (u and the kept-children
views of the ancestors), A_v for v's kept deterministic children and B_v for "the sampled child
of v is kept".

Classes. Construction outcomes are grouped by what the verifier sees (the tree's canonical
key: tokens, kinds and kept children, recursively); the exact certifier verifies one
representative per class with the class weight. The conditions below are read off the class
space enumerated eagerly (every sampled token resolved, rheotheory.exact.enumerate_classes).

Conditions (checked exactly for every v with a kept sampled child):
  C1(v): given H_v and B_v = 1, s_v has law L_v (its kept status and the history do not
         depend on its identity);
  C2(v): given H_v, A_v and B_v = 1, s_v has law L_v (neither does v's kept deterministic set).

Argument. The per-node claims (proofs/per_node_*.py) give: for any fixed deterministic list G
and s ~ L (L zero on the head), sequential and ot output y ~ p(. | u); ot's output token law
given s does not depend on G at all (it resolves s first, and Y is emitted when not in G).
Induction on depth, conditioning on everything the verifier has seen (its coins are fresh):
  - if C2 holds at every node, sequential is lossless (given H_v, A_v, B_v = 1 the node is the
    per-node setting; given B_v = 0 it is one-hot on A_v, lossless for any A_v);
  - if C1 holds at every node, ot is lossless (average the G-free output law of s over
    s | H_v, B_v = 1 ~ L_v; after outputting y the walk continues into y's kept child, whose
    history now contains v's whole view, or stops, and the next tokens come from the target).
  - onehot ignores s's law and is lossless whatever the proxy.
Mechanism behind the conditions (checked on every tree): the proxies next, tail and
min-best-tail do not depend on s, so s_v's score does not either; every child scores at most
its parent (scores are products of probabilities <= 1), so s_v's descendants never outrank s_v;
whether they displace other nodes is what C1/C2 measure. With ``true`` s_v's own score is q(s_v).

With ``next`` every deterministic sibling scores at least the sampled slot (q of a head token >=
q of the best tail token; ties go to the earlier-created deterministic child), so s_v's
descendants cannot displace v's deterministic children either. With ``tail`` and, for K >= 3,
``min-best-tail`` the sampled slot can outscore a deterministic sibling, so a descendant of s_v
can push that sibling out of the budget for some values of s_v only: C2 fails, C1 still holds.
:func:`constructed_min_best_tail` builds such an instance for ``min-best-tail``; the random
family below rarely produces one (budget 2K leaves room for the sibling).

Conclusion, checked exhaustively: the exact certifier on every instance of the family.
"""

import argparse
import itertools
import sys
from collections import defaultdict
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from claimlib import FAILED, REFUTED, VERIFIED, claim, finish  # noqa: E402

from rheotheory import make_method, certify, enumerate_classes, random_pair  # noqa: E402
from rheotheory.counterexample import shrink  # noqa: E402
from rheotheory.trees.tree import SAMPLED  # noqa: E402

PROXIES = ("next", "tail", "min-best-tail", "true")
VERIFIERS = ("ot", "sequential")


def family(n_seeds: int):
    """(V, K, D, budget, seed): V in {3, 4}, K in {2, 3}, D in {2, 3}, budget 2K, n_seeds seeds each."""
    for V, K, D in itertools.product((3, 4), (2, 3), (2, 3)):
        for seed in range(n_seeds):
            yield V, K, D, 2 * K, seed


def view(tree, w):
    return tuple((tree.nodes[c].token, tree.nodes[c].kind) for c in tree.kept_children(w))


def conditions(pair, method):
    """Exact check of C1/C2 and of the score facts on the eager class space.

    Returns dict with counts of contexts checked / violated and of score-order violations."""
    enum = enumerate_classes(pair, method, eager=True)
    acc1 = defaultdict(lambda: defaultdict(Fraction))
    acc2 = defaultdict(lambda: defaultdict(Fraction))
    laws_at = {}
    monotone_bad = 0
    det_below_sampled = 0
    for cls in enum.classes.values():
        t = cls.tree
        for i, node in enumerate(t.nodes[1:], start=1):
            if node.score > t.nodes[node.parent].score:
                monotone_bad += 1
        for v in range(len(t.nodes)):
            if not t.kept[v]:
                continue
            kids = t.nodes[v].children
            samp = [c for c in kids if t.nodes[c].kind == SAMPLED]
            if samp and any(t.nodes[c].kind != SAMPLED and t.nodes[c].score < t.nodes[samp[0]].score for c in kids):
                det_below_sampled += 1
            kept_s = [c for c in t.kept_children(v) if t.nodes[c].kind == SAMPLED]
            if not kept_s:
                continue
            c = kept_s[0]
            u = t.path(v)
            anc, w = [], v
            while w > 0:
                w = t.nodes[w].parent
                anc.append(view(t, w))
            hist = (u, tuple(reversed(anc)))
            A = tuple(x for x in view(t, v) if x[1] != SAMPLED)
            s = t.nodes[c].token
            acc1[hist][s] += cls.weight
            acc2[hist + (A,)][s] += cls.weight
            laws_at[u] = t.member_law(c)

    def violations(acc):
        bad = 0
        for key, law in acc.items():
            L = laws_at[key[0]]
            tot = sum(law.values())
            if any(law.get(x, 0) / tot != L[x] for x in range(len(L))):
                bad += 1
        return bad
    return {"c1_contexts": len(acc1), "c1_bad": violations(acc1), "c2_contexts": len(acc2),
            "c2_bad": violations(acc2), "monotone_bad": monotone_bad, "det_below_sampled": det_below_sampled,
            "classes": len(enum.classes)}


def constructed_min_best_tail():
    """An instance built from the mechanism: K = 3 (head m = 2), root draft (2/5, 1/5, 1/5, 1/5), so
    the sampled slot scores min(q(best), tail) = 2/5 above the second deterministic child (1/5).
    When s = 2 the draft after it is peaked (9/10), its child scores 9/25 and pushes the second
    deterministic child out of a budget of 3; when s = 3 it is flat and does not. The kept
    deterministic set then depends on s (C2 fails), which the sequential rule cannot absorb."""
    import numpy as np
    from rheotheory import ToyPair
    from rheotheory.pairs import prefixes

    V = 4
    law = lambda *xs: np.array([Fraction(x) for x in xs], dtype=object)  # noqa: E731
    flat = law("1/4", "1/4", "1/4", "1/4")
    draft = {pre: flat for pre in prefixes(V, 2)}
    target = {pre: flat for pre in prefixes(V, 2)}
    draft[()] = law("2/5", "1/5", "1/5", "1/5")
    draft[(0,)] = law("3/10", "3/10", "1/5", "1/5")
    draft[(2,)] = law("9/10", "1/30", "1/30", "1/30")
    target[()] = law("1/10", "1/10", "1/2", "3/10")
    return ToyPair(V, 2, target, draft, exact=True), 3, 2, 3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=2, help="seeds per (V, K, D) cell (8 cells)")
    ap.add_argument("--out-dir", default=str(Path(__file__).resolve().parent / "counterexamples"),
                    help="where the shrunk counterexample instances are written (default proofs/counterexamples)")
    args = ap.parse_args()
    inst = list(family(args.seeds))
    rows = {}
    first_lossy = {}
    for proxy in PROXIES:
        agg = defaultdict(int)
        c1_fail = c2_fail = 0
        lossy = {v: 0 for v in VERIFIERS}
        pred_bad = 0
        for V, K, D, N, seed in inst:
            pair = random_pair(V, D, seed=seed)
            m = make_method("rheo", top_k=K, depth=D, budget=N, proxy=proxy)
            cond = conditions(pair, m)
            for k, x in cond.items():
                agg[k] += x
            c1_ok, c2_ok = cond["c1_bad"] == 0, cond["c2_bad"] == 0
            c1_fail += not c1_ok
            c2_fail += not c2_ok
            for ver in VERIFIERS:
                mv = make_method("rheo", top_k=K, depth=D, budget=N, proxy=proxy, verifier=ver)
                cert = certify(pair, mv)
                if not cert.lossless:
                    lossy[ver] += 1
                    first_lossy.setdefault((proxy, ver), (pair, mv))
                    # the sufficient conditions must never be contradicted
                    if (ver == "ot" and c1_ok) or (ver == "sequential" and c2_ok):
                        pred_bad += 1
        rows[proxy] = (dict(agg), c1_fail, c2_fail, lossy, pred_bad)
        print(f"# {proxy:14s} C1 fails on {c1_fail:3d}/{len(inst)}, C2 fails on {c2_fail:3d}/{len(inst)}; lossy: "
              + ", ".join(f"{v} {lossy[v]}/{len(inst)}" for v in VERIFIERS) + f"; {dict(agg)}", flush=True)

    fam = f"random_pair(V, D, seed) with V in {{3,4}}, K in {{2,3}}, D in {{2,3}}, budget 2K, head K-1, seeds 0..{args.seeds - 1} ({len(inst)} instances)"
    # the score facts
    for proxy in PROXIES:
        agg = rows[proxy][0]
        claim(f"scores-monotone-{proxy}", f"proxy {proxy}: every child scores at most its parent (so the sampled "
              "child's descendants never outrank it)", VERIFIED if agg["monotone_bad"] == 0 else REFUTED,
              f"{fam}: {agg['classes']} classes, {agg['monotone_bad']} child-above-parent nodes",
              expected=VERIFIED)
    for proxy in ("next", "min-best-tail", "tail"):
        agg = rows[proxy][0]
        st = VERIFIED if agg["det_below_sampled"] == 0 else REFUTED
        claim(f"det-siblings-above-sampled-{proxy}", f"proxy {proxy}: every deterministic sibling scores at least "
              "the sampled slot", st, f"{fam}: {agg['det_below_sampled']} expansions where a deterministic "
              "child scores below its sampled sibling",
              expected={"next": VERIFIED, "min-best-tail": None, "tail": REFUTED}[proxy])
    # the conditions
    for proxy in PROXIES:
        agg, c1f, c2f, lossy, pred_bad = rows[proxy]
        for cname, f, ctx, bad in (("C1", c1f, agg["c1_contexts"], agg["c1_bad"]),
                                   ("C2", c2f, agg["c2_contexts"], agg["c2_bad"])):
            st = VERIFIED if f == 0 else REFUTED
            claim(f"condition-{cname}-{proxy}", f"proxy {proxy}: condition {cname} holds at every node",
                  st, f"{fam}: {ctx} (history{', det set' if cname == 'C2' else ''}) contexts checked exactly, "
                  f"{bad} where s's conditional law differs from L; fails on {f} instances", expected=None)
        claim(f"sufficiency-{proxy}", f"proxy {proxy}: wherever C1 holds ot is lossless and wherever C2 holds "
              "sequential is lossless", VERIFIED if pred_bad == 0 else FAILED,
              f"{fam}: {pred_bad} contradictions")
    # the conclusions
    for proxy in PROXIES:
        lossy = rows[proxy][3]
        for ver in VERIFIERS:
            key = (proxy, ver)
            if lossy[ver] == 0:
                claim(f"lossless-{proxy}-{ver}", f"rheo with proxy {proxy} and verifier {ver} is lossless on the random family", VERIFIED,
                      f"{fam}: exact certificate, max deviation 0 on all {len(inst)}", expected=None)
            else:
                pair, mv = first_lossy[key]
                p2, m2, cert, _ = shrink(pair, mv)
                ce = (f"lossy on {lossy[ver]}/{len(inst)} of {fam}; shrunk counterexample: V={p2.vocab_size}, "
                      f"K={m2.top_k}, D={m2.depth}, budget={m2.budget}, max deviation {cert.max_deviation} at "
                      f"sequence {list(cert.worst_sequence)}; instance JSON: proofs/counterexamples/"
                      f"{proxy}-{ver}.json")
                out = Path(args.out_dir)
                out.mkdir(exist_ok=True)
                p2.save(out / f"{proxy}-{ver}.json")
                claim(f"lossless-{proxy}-{ver}", f"rheo with proxy {proxy} and verifier {ver} is lossless on the random family", REFUTED,
                      ce, expected=None)
    # a constructed instance outside the random family: min-best-tail + sequential
    pair, K, D, N = constructed_min_best_tail()
    cond = conditions(pair, make_method("rheo", top_k=K, depth=D, budget=N, proxy="min-best-tail"))
    verdict = {}
    for ver in VERIFIERS:
        verdict[ver] = certify(pair, make_method("rheo", top_k=K, depth=D, budget=N, proxy="min-best-tail", verifier=ver))
    seq = verdict["sequential"]
    if not seq.lossless:
        p2, m2, c2, _ = shrink(pair, make_method("rheo", top_k=K, depth=D, budget=N, proxy="min-best-tail",
                                             verifier="sequential"))
        out = Path(args.out_dir)
        out.mkdir(exist_ok=True)
        p2.save(out / "min-best-tail-sequential.json")
        claim("lossless-min-best-tail-sequential-constructed", "rheo with proxy min-best-tail and verifier "
              "sequential is lossless (beyond the random family)", REFUTED,
              f"constructed instance (see constructed_min_best_tail: K=3 so the sampled slot can outscore the second "
              f"deterministic child, a child of s displaces it for one value of s only): C2 fails in "
              f"{cond['c2_bad']}/{cond['c2_contexts']} contexts, C1 in {cond['c1_bad']}/{cond['c1_contexts']}; "
              f"sequential max deviation {seq.max_deviation} at {list(seq.worst_sequence)}; ot max deviation "
              f"{verdict['ot'].max_deviation}. Shrunk: V={p2.vocab_size}, K={m2.top_k}, D={m2.depth}, "
              f"budget={m2.budget}, max deviation {c2.max_deviation} at {list(c2.worst_sequence)}; instance JSON: "
              f"proofs/counterexamples/min-best-tail-sequential.json", expected=REFUTED)
    else:
        claim("lossless-min-best-tail-sequential-constructed", "rheo with proxy min-best-tail and verifier "
              "sequential is lossless (beyond the random family)", FAILED, "the constructed instance is lossless")
    claim("constructed-min-best-tail-ot", "rheo with proxy min-best-tail and verifier ot is lossless on the "
          "constructed instance (C1 holds there)", VERIFIED if verdict["ot"].lossless and cond["c1_bad"] == 0
          else FAILED, f"ot max deviation {verdict['ot'].max_deviation}; C1 violations {cond['c1_bad']}")

    # the expectations this script guards (it exits non-zero if any changes)
    exp = {("next", "ot"): 0, ("next", "sequential"): 0, ("min-best-tail", "ot"): 0,
           ("min-best-tail", "sequential"): 0, ("tail", "ot"): 0}
    changed = [k for k, v in exp.items() if rows[k[0]][3][k[1]] != v]
    if rows["true"][3]["ot"] == 0 or rows["true"][3]["sequential"] == 0:
        changed.append(("true", "lossy expected"))
    claim("classification", "on the random family: next and min-best-tail are lossless with ot and sequential, "
          "tail with ot; the true proxy is lossy with both", VERIFIED if not changed else FAILED,
          f"{fam}; changed: {changed}" if changed else fam)


if __name__ == "__main__":
    main()
    finish()
