"""Published lossless verifiers written as an engine writes them, each beside a planted bug.

The rule check of ``rheo audit`` (rheotheory.audit.rules) knows each of these rules through the
project's own implementation in rheotheory.verify; these are independent, vectorised torch
versions in the audit's two signatures (docs/guide/audit.md), so that a test of the rule check is
not a test of a rule against itself. Each correct verifier must never be failed for its rule; each
planted one must be caught (``lossy`` or ``differs``).

``RULE_VERIFIERS`` lists them: (name, kind, the known rule it follows or None, the settings it is
audited on, what it is). A verifier written for one way of drafting is audited on the settings
that draft that way (an RRS-without-replacement engine keeps its own draft law, removing each
rejected token, so it is handed trees drawn without replacement).
"""

from __future__ import annotations

import torch

# -- helpers --------------------------------------------------------------------------------------


def _rows(draft_tokens, draft_probs, like):
    """The draft law of each position: ``draft_probs``, or one-hot rows for a deterministic draft."""
    if draft_probs is not None:
        return draft_probs.double()
    q = torch.zeros((draft_tokens.numel(), like.shape[1]), dtype=torch.float64)  # [k, V]
    q[torch.arange(draft_tokens.numel()), draft_tokens] = 1.0
    return q


def _sample(w, generator):
    """One token from the non-negative weights ``w`` # [V] (normalised here)."""
    return torch.multinomial(w / w.sum(), 1, generator=generator)  # [1]


def _children(parents):
    out = [[] for _ in range(parents.numel() + 1)]
    for i, par in enumerate(parents.tolist()):
        out[par + 1].append(i)
    return out


def _is_point_mass(row, x):
    return bool(row[x] >= 1.0)


# -- chains: standard rejection sampling, vectorised (vLLM's layout) -------------------------------


def _rejection_chain(draft_tokens, draft_probs, target_probs, generator, gamma=1.0, shrink=1.0):
    k = draft_tokens.numel()
    p = target_probs.double()  # [k+1, V]
    q = _rows(draft_tokens, draft_probs, p)  # [k, V]
    idx = torch.arange(k)
    px, qx = p[idx, draft_tokens], q[idx, draft_tokens]  # [k]
    u = torch.rand(k, generator=generator, dtype=torch.float64)  # [k] one coin per draft
    ratio = torch.where(qx > 0, px / qx, torch.zeros_like(px))
    accepted = u < ratio.pow(gamma).clamp(max=1.0)  # [k]
    rejected = (~accepted).nonzero()
    if rejected.numel() == 0:
        return torch.cat([draft_tokens, _sample(p[k], generator)])
    i = int(rejected[0])
    r = (p[i] - shrink * q[i]).clamp(min=0)  # [V]
    return torch.cat([draft_tokens[:i], _sample(r if r.sum() > 0 else p[i], generator)])


def rejection_vectorised(draft_tokens, draft_probs, target_probs, generator):
    """Standard rejection sampling, every coin drawn at once: accept draft i iff
    ``u_i < p_i(x_i) / q_i(x_i)``; at the first rejection emit from ``norm((p_i - q_i)+)``."""
    return _rejection_chain(draft_tokens, draft_probs, target_probs, generator)


def accept_power(draft_tokens, draft_probs, target_probs, generator):
    """Planted: acceptance ``min(1, (p/q)^0.97)``, a full-support deviation of the acceptance
    step (exact TV of the law of L tokens up to about 0.018 on the audit's settings)."""
    return _rejection_chain(draft_tokens, draft_probs, target_probs, generator, gamma=0.97)


def residual_shrunk(draft_tokens, draft_probs, target_probs, generator):
    """Planted: the residual ``norm((p - 0.97 q)+)``: mass on tokens where ``p <= q``."""
    return _rejection_chain(draft_tokens, draft_probs, target_probs, generator, shrink=0.97)


# -- chains: sample-and-match (llama.cpp's server, MLX-LM) ----------------------------------------


def sample_and_match(draft_tokens, draft_probs, target_probs, generator):
    """The target samples every position at once; a draft is kept iff it equals the target's
    sample; the first sample that differs (or the bonus sample) ends the step. Its law is the
    one-hot rule's."""
    k = draft_tokens.numel()
    ys = torch.multinomial(target_probs.double(), 1, generator=generator).squeeze(1)  # [k+1]
    miss = (ys[:k] != draft_tokens).nonzero()
    i = int(miss[0]) if miss.numel() else k
    return torch.cat([draft_tokens[:i], ys[i:i + 1]])


def match_resample(draft_tokens, draft_probs, target_probs, generator):
    """Planted: sample-and-match that, at the first mismatch, emits a fresh sample of the
    target instead of the sample that missed (which may be the draft itself)."""
    k = draft_tokens.numel()
    p = target_probs.double()
    ys = torch.multinomial(p, 1, generator=generator).squeeze(1)  # [k+1]
    miss = (ys[:k] != draft_tokens).nonzero()
    if miss.numel() == 0:
        return torch.cat([draft_tokens, ys[k:]])
    i = int(miss[0])
    return torch.cat([draft_tokens[:i], _sample(p[i], generator)])


# -- chains: block verification (arXiv 2403.10444, Algorithm 2; vLLM and SGLang) ------------------


def _block(draft_tokens, draft_probs, target_probs, generator, weighted_residual=True):
    k = draft_tokens.numel()
    p = target_probs.double()  # [k+1, V]
    q = _rows(draft_tokens, draft_probs, p)  # [k, V]
    idx = torch.arange(k)
    ratio = p[idx, draft_tokens] / q[idx, draft_tokens]  # [k]
    # w_i = min(1, w_{i-1} r_i), w_0 = 1: in logs, S_i - max_{j <= i} S_j with S the cumulative log-ratio
    s = torch.cat([torch.zeros(1, dtype=torch.float64), torch.cumsum(torch.log(ratio), 0)])  # [k+1]
    w = torch.exp(s - torch.cummax(s, 0).values)  # [k+1]
    m = (w[:k, None] * p[:k] - q).clamp(min=0).sum(-1)  # [k]
    h = torch.nan_to_num(m / (m + 1 - w[:k]), nan=0.0)  # [k]
    h = torch.cat([h, w[k:]])  # [k+1]; h_k = w_k
    h[0] = 1.0  # NOTE: the empty prefix is always accepted
    eta = torch.rand(k + 1, generator=generator, dtype=torch.float64)  # [k+1]
    tau = int((eta <= h).nonzero().max())
    if tau == k:
        return torch.cat([draft_tokens, _sample(p[k], generator)])
    wt = w[tau] if weighted_residual else 1.0
    r = (wt * p[tau] - q[tau]).clamp(min=0)  # [V]
    return torch.cat([draft_tokens[:tau], _sample(r if r.sum() > 0 else p[tau], generator)])


def block_verification(draft_tokens, draft_probs, target_probs, generator):
    """Block verification: weights ``w_i = min(1, w_{i-1} p_i(x_i) / q_i(x_i))``, stop
    probabilities ``h_i = m_i / (m_i + 1 - w_i)`` with ``m_i = sum (w_i p_{i+1} - q_{i+1})+``,
    ``h_k = w_k``; keep the deepest prefix whose coin passes, then emit from
    ``norm((w_tau p_{tau+1} - q_{tau+1})+)`` (or the bonus law). Lossless."""
    return _block(draft_tokens, draft_probs, target_probs, generator)


def block_token_residual(draft_tokens, draft_probs, target_probs, generator):
    """Planted: block verification that emits from the token-level residual
    ``norm((p_{tau+1} - q_{tau+1})+)`` (vllm-ascend #7807)."""
    return _block(draft_tokens, draft_probs, target_probs, generator, weighted_residual=False)


# -- trees: recursive rejection sampling ----------------------------------------------------------


def _rrs_tree(parents, tokens, draft_probs, target_probs, generator, first_only=False):
    children = _children(parents)
    p_all, q_all = target_probs.double(), draft_probs.double()  # [n+1, V], [n, V]
    node, out, p = -1, [], p_all[0]
    while True:
        kids = children[node + 1]
        u = torch.rand(len(kids), generator=generator, dtype=torch.float64)  # [children] one coin each
        for j, c in enumerate(kids):
            x, q = int(tokens[c]), q_all[c]
            if u[j] * q[x] < p[x]:
                out.append(x)
                node, p = c, p_all[c + 1]
                break
            if not first_only or j == 0:
                r = (p - q).clamp(min=0)
                p = r / r.sum() if r.sum() > 0 else p
        else:
            return torch.tensor(out + [int(_sample(p, generator))])


def rrs_tree(parents, tokens, draft_probs, target_probs, generator):
    """Recursive rejection sampling (SpecInfer): at each node its children in order, child ``c``
    accepted iff ``u q_c(x) < p(x)``, else ``p <- norm((p - q_c)+)``; ``q_c`` the law child
    ``c`` was drawn from (with replacement: the draft; without: the draft less the earlier
    siblings). Lossless."""
    return _rrs_tree(parents, tokens, draft_probs, target_probs, generator)


def rrs_first_child_only(parents, tokens, draft_probs, target_probs, generator):
    """Planted: the residual updated after the first rejected child only (EAGLE #20)."""
    return _rrs_tree(parents, tokens, draft_probs, target_probs, generator, first_only=True)


def _rrs_wor(parents, tokens, draft_probs, target_probs, generator, remove=True):
    children = _children(parents)
    p_all, q_all = target_probs.double(), draft_probs.double()
    node, out, p = -1, [], p_all[0]
    while True:
        kids = children[node + 1]
        q = q_all[kids[0]].clone() if kids else None  # [V] the base law: the first child's
        for c in kids:
            x = int(tokens[c])
            if torch.rand((), generator=generator, dtype=torch.float64) * q[x] < p[x]:
                out.append(x)
                node, p = c, p_all[c + 1]
                break
            r = (p - q).clamp(min=0)
            p = r / r.sum() if r.sum() > 0 else p
            if remove:  # the next sibling was drawn from the draft without the rejected token
                q[x] = 0.0
                q = q / q.sum() if q.sum() > 0 else q
        else:
            return torch.tensor(out + [int(_sample(p, generator))])


def rrs_without_replacement(parents, tokens, draft_probs, target_probs, generator):
    """Recursive rejection without replacement (RSD, Sequoia), keeping its own draft law: after a
    rejected child ``x``, ``p <- norm((p - q)+)`` and ``q <- q`` without ``x``, renormalised.
    Written for siblings drawn without replacement (audited on those settings). Lossless."""
    return _rrs_wor(parents, tokens, draft_probs, target_probs, generator)


def rrs_wor_base_law(parents, tokens, draft_probs, target_probs, generator):
    """Planted: siblings drawn without replacement verified with the draft law unchanged (the
    with-replacement residual on drafts without replacement)."""
    return _rrs_wor(parents, tokens, draft_probs, target_probs, generator, remove=False)


# -- trees: the one-hot rule (EAGLE) ---------------------------------------------------------------


def _eagle_tree(parents, tokens, draft_probs, target_probs, generator, zero=True):
    children = _children(parents)
    p_all = target_probs.double()
    node, out, p = -1, [], p_all[0]
    while True:
        kids = children[node + 1]
        u = torch.rand(len(kids), generator=generator, dtype=torch.float64)  # [children]
        for j, c in enumerate(kids):
            x = int(tokens[c])
            if u[j] < p[x]:
                out.append(x)
                node, p = c, p_all[c + 1]
                break
            if zero:
                p = p.clone()
                p[x] = 0.0
            p = p / p.sum() if p.sum() > 0 else p_all[node + 1]
        else:
            return torch.tensor(out + [int(_sample(p, generator))])


def eagle_tree(parents, tokens, draft_probs, target_probs, generator):
    """EAGLE's rule over a tree: child ``x`` accepted with ``p(x)``, else ``x`` zeroed in ``p``
    and ``p`` renormalised, whatever law the child came from. Lossless."""
    return _eagle_tree(parents, tokens, draft_probs, target_probs, generator)


def eagle_tree_no_zero(parents, tokens, draft_probs, target_probs, generator):
    """Planted: EAGLE's rule without zeroing the rejected child (the residual skipped)."""
    return _eagle_tree(parents, tokens, draft_probs, target_probs, generator, zero=False)


# -- trees: Traversal Verification (arXiv 2505.12398) ---------------------------------------------


def _traversal(parents, tokens, draft_probs, target_probs, generator, update_weight=True):
    children = _children(parents)
    p_all, q_all = target_probs.double(), draft_probs.double()

    def visit(v, path, a, P):
        """Visit ``v`` entered with weight ``a`` and law ``P``: the output, or None if its subtree
        and ``v`` itself are rejected."""
        for c in children[v + 1]:
            x, Q = int(tokens[c]), q_all[c]
            ac = min(1.0, float(a * P[x] / Q[x])) if Q[x] > 0 else 0.0
            got = visit(c, path + [x], ac, p_all[c + 1])
            if got is not None:
                return got
            R = (a * P - Q).clamp(min=0)  # [V]
            S = float(R.sum())
            if update_weight:
                a = S / (S + 1 - a) if S + 1 - a > 0 else 0.0
            P = R / S if S > 0 else P
        if v < 0 or torch.rand((), generator=generator, dtype=torch.float64) < a:
            return path + [int(_sample(P if P.sum() > 0 else p_all[v + 1], generator))]
        return None

    return torch.tensor(visit(-1, [], 1.0, p_all[0]))


def traversal(parents, tokens, draft_probs, target_probs, generator):
    """Traversal Verification: the tree visited from the leaves up (children in order, each with
    its subtree), a node entered with weight ``min(1, a P(x) / Q(x))``; after a child's subtree is
    rejected, ``R = (a P - Q)+``, ``a <- S / (S + 1 - a)``, ``P <- norm(R)``; a node whose
    children are all rejected is accepted with ``a``, emitting from ``P``; the root always
    accepts. Lossless."""
    return _traversal(parents, tokens, draft_probs, target_probs, generator)


def traversal_stale_weight(parents, tokens, draft_probs, target_probs, generator):
    """Planted: Traversal Verification that keeps a node's weight after a child is rejected."""
    return _traversal(parents, tokens, draft_probs, target_probs, generator, update_weight=False)


# -- trees: SpecTr K-SEQ for i.i.d. children -------------------------------------------------------


def _kseq_rho(p, q, k, steps=60):
    """rho in [1, k] with c(beta(rho)) = rho, c(b) = (1 - (1 - b)^k) / b, beta(rho) = sum min(q, p / rho)."""
    def gap(rho):
        b = float(torch.minimum(q, p / rho).sum())
        return ((1 - (1 - b) ** k) / b if b > 0 else float(k)) - rho

    lo, hi = 1.0, float(k)
    if gap(lo) <= 0:
        return lo
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if gap(mid) > 0 else (lo, mid)
    return hi


def _kseq_tree(parents, tokens, draft_probs, target_probs, generator, solve_rho=True):
    children = _children(parents)
    p_all, q_all = target_probs.double(), draft_probs.double()
    node, out, p = -1, [], p_all[0]
    while True:
        kids = children[node + 1]
        if not kids:
            return torch.tensor(out + [int(_sample(p, generator))])
        rows = q_all[kids]  # [children, V]
        iid = len(kids) > 1 and bool((rows == rows[0]).all()) and not _is_point_mass(rows[0], int(tokens[kids[0]]))
        if not iid:  # K-SEQ is defined for i.i.d. children: recursive rejection elsewhere
            for c in kids:
                x, q = int(tokens[c]), q_all[c]
                if torch.rand((), generator=generator, dtype=torch.float64) * q[x] < p[x]:
                    out.append(x)
                    node, p = c, p_all[c + 1]
                    break
                r = (p - q).clamp(min=0)
                p = r / r.sum() if r.sum() > 0 else p
            else:
                return torch.tensor(out + [int(_sample(p, generator))])
            continue
        q, k = rows[0], len(kids)
        rho = _kseq_rho(p, q, k) if solve_rho else 1.0
        m = torch.minimum(q, p / rho)  # [V]
        xs = tokens[kids]
        u = torch.rand(k, generator=generator, dtype=torch.float64)  # [children]
        ok = (u * q[xs] < m[xs]).nonzero()
        if ok.numel():
            c = kids[int(ok[0])]
            out.append(int(tokens[c]))
            node, p = c, p_all[c + 1]
            continue
        b = float(m.sum())
        c = (1 - (1 - b) ** k) / b if b > 0 else float(k)  # NOTE: b = 0 only when p and q are disjoint
        resid = (p - m * c).clamp(min=0)  # [V]
        return torch.tensor(out + [int(_sample(resid if resid.sum() > 0 else p, generator))])


def kseq_tree(parents, tokens, draft_probs, target_probs, generator):
    """SpecTr's K-SEQ at a node whose children were drawn i.i.d. from one law: child ``i`` accepted
    iff ``u q(x) < min(q(x), p(x) / rho)``, ``rho`` the root of ``c(beta(rho)) = rho``; if all are
    rejected, emit from ``(p - min(q, p / rho) c)+``. Recursive rejection at other nodes. Lossless."""
    return _kseq_tree(parents, tokens, draft_probs, target_probs, generator)


def kseq_rho_one(parents, tokens, draft_probs, target_probs, generator):
    """Planted: K-SEQ with ``rho`` left at 1 (its residual then goes negative and is clipped)."""
    return _kseq_tree(parents, tokens, draft_probs, target_probs, generator, solve_rho=False)


# -- trees: the OT rule for deterministic plus sampled children ------------------------------------


def _ot_tree(parents, tokens, draft_probs, target_probs, generator, residual=True):
    children = _children(parents)
    p_all, q_all = target_probs.double(), draft_probs.double()
    node, out, p = -1, [], p_all[0]
    while True:
        kids = children[node + 1]
        if not kids:
            return torch.tensor(out + [int(_sample(p, generator))])
        det = [c for c in kids if _is_point_mass(q_all[c], int(tokens[c]))]
        sampled = [c for c in kids if c not in det]
        nxt = None
        if not sampled:  # deterministic children only: the one-hot rule
            for c in det:
                x = int(tokens[c])
                if torch.rand((), generator=generator, dtype=torch.float64) < p[x]:
                    nxt = c
                    break
                p = p.clone()
                p[x] = 0.0
                p = p / p.sum() if p.sum() > 0 else p
            if nxt is None:
                return torch.tensor(out + [int(_sample(p, generator))])
        else:
            cur = p
            for c in sampled:  # the sampled children by recursive rejection, against p alone
                x, q = int(tokens[c]), q_all[c]
                if torch.rand((), generator=generator, dtype=torch.float64) * q[x] < cur[x]:
                    nxt = c
                    break
                if residual:
                    r = (cur - q).clamp(min=0)
                    cur = r / r.sum() if r.sum() > 0 else cur
            if nxt is None:  # Y from the residual: into the deterministic child holding it, else emitted
                y = int(_sample(cur, generator))
                hold = [c for c in det if int(tokens[c]) == y]
                if not hold:
                    return torch.tensor(out + [y])
                nxt = hold[0]
        out.append(int(tokens[nxt]))
        node, p = nxt, p_all[nxt + 1]


def ot_tree(parents, tokens, draft_probs, target_probs, generator):
    """The OT rule (Hu et al. 2025): the sampled children by recursive rejection first; if all are
    rejected, ``Y`` from the residual continues into the deterministic child holding it, or is
    emitted; the one-hot rule where every child is deterministic. Lossless."""
    return _ot_tree(parents, tokens, draft_probs, target_probs, generator)


def ot_skip_residual(parents, tokens, draft_probs, target_probs, generator):
    """Planted: the OT rule drawing ``Y`` from ``p`` itself after the sampled children are
    rejected (the residual skipped)."""
    return _ot_tree(parents, tokens, draft_probs, target_probs, generator, residual=False)


#: (name, kind, the known rule it follows or None for a planted bug, settings (a part of their
#: names, None for all), what it is).
RULE_VERIFIERS = (
    ("rejection_vectorised", "chain", "rejection", None, "standard rejection sampling"),
    ("accept_power", "chain", None, None, "acceptance min(1, (p/q)^0.97)"),
    ("residual_shrunk", "chain", None, None, "residual (p - 0.97 q)+"),
    ("sample_and_match", "chain", "one-hot", None, "sample-and-match"),
    ("match_resample", "chain", None, None, "sample-and-match, a fresh sample at the miss"),
    ("block_verification", "chain", "block", None, "block verification"),
    ("block_token_residual", "chain", None, None, "block verification, token-level residual"),
    ("rrs_tree", "tree", "rejection", None, "recursive rejection sampling"),
    ("rrs_first_child_only", "tree", None, None, "recursive rejection, residual after the first child only"),
    ("rrs_without_replacement", "tree", "rejection", "wor", "recursive rejection without replacement"),
    ("rrs_wor_base_law", "tree", None, "wor", "without replacement, the draft law never updated"),
    ("eagle_tree", "tree", "one-hot", None, "EAGLE's one-hot rule"),
    ("eagle_tree_no_zero", "tree", None, None, "EAGLE's rule, the rejected child not zeroed"),
    ("traversal", "tree", "traversal", None, "traversal verification"),
    ("traversal_stale_weight", "tree", None, None, "traversal verification, the weight not updated"),
    ("kseq_tree", "tree", "kseq", None, "SpecTr K-SEQ"),
    ("kseq_rho_one", "tree", None, "iid", "K-SEQ with rho = 1"),
    ("ot_tree", "tree", "ot", None, "the OT rule"),
    ("ot_skip_residual", "tree", None, "mixed", "the OT rule, the residual skipped"),
)
