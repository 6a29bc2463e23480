"""Reference verifiers in the audit's two signatures, and the planted companions the audit must reject.

These are what ``rheo audit --verifier`` is tested with, and a template for a user's own
function. The two signatures (docs/guide/audit.md; p = target, q = draft):

``--kind chain`` (the convention of vLLM and transformers)::

    verify(draft_tokens, draft_probs, target_probs, generator) -> tokens
      draft_tokens  LongTensor [k]        the drafted tokens
      draft_probs   FloatTensor [k, V]    the law each was drawn from, or None for a deterministic draft
      target_probs  FloatTensor [k+1, V]  the target law at each drafted position; row k is the bonus position
      generator     torch.Generator       every random draw must come from it
      tokens        LongTensor [m], 1 <= m <= k+1: the accepted draft prefix, then one token from the target side

``--kind tree`` (EAGLE-style parent pointers)::

    verify(parents, tokens, draft_probs, target_probs, generator) -> out
      parents       LongTensor [n]        parent of node i, -1 for a child of the root; parents[i] < i
      tokens        LongTensor [n]        the token of node i
      draft_probs   FloatTensor [n, V]    the law node i was drawn from, given its parent's path and its
                                          earlier siblings (children are listed in drawing order); a
                                          deterministic node's row is one-hot on its token
      target_probs  FloatTensor [n+1, V]  row 0: the target law after the prefix; row i+1: after node i's path
      generator     torch.Generator       every random draw must come from it
      out           LongTensor [m]: the tokens of a root path of the tree (m - 1 nodes), then one more token

Every function here draws only from ``generator``.
"""

from __future__ import annotations

import torch

__all__ = ["chain_rejection", "chain_always_accept", "chain_skip_residual", "tree_rejection",
           "tree_always_accept", "tree_skip_residual", "COMPANIONS"]


def _one_hot(x: int, like: torch.Tensor) -> torch.Tensor:
    q = torch.zeros_like(like)  # [V]
    q[x] = 1.0
    return q


def _accept(p: torch.Tensor, q: torch.Tensor, x: int, generator: torch.Generator) -> bool:
    """Accept ``x ~ q`` with probability ``min(1, p(x) / q(x))``: ``u q(x) < p(x)``, u ~ U[0, 1)
    (never when p(x) = 0)."""
    return bool(torch.rand((), generator=generator) * q[x] < p[x])


def _residual(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """``norm((p - q)+)``. NOTE: it is 0 only when p = q, where the acceptance is 1 in exact
    arithmetic; a float rejection there keeps p (which is then the residual's limit)."""
    r = (p - q).clamp(min=0)  # [V]
    s = r.sum()
    return r / s if s > 0 else p


def _draw(law: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    return torch.multinomial(law, 1, generator=generator)  # [1]


def _chain_walk(draft_tokens, draft_probs, target_probs, generator, residual: bool):
    k = draft_tokens.numel()
    for i in range(k):
        x = int(draft_tokens[i])
        p = target_probs[i]  # [V]
        q = _one_hot(x, p) if draft_probs is None else draft_probs[i]  # [V]
        if not _accept(p, q, x, generator):
            return torch.cat([draft_tokens[:i], _draw(_residual(p, q) if residual else p, generator)])
    return torch.cat([draft_tokens, _draw(target_probs[k], generator)])


def chain_rejection(draft_tokens, draft_probs, target_probs, generator):
    """Token-level rejection sampling (Leviathan et al. 2023; docs/theory.md section 3.3): accept
    draft ``i`` with ``min(1, p_i(x) / q_i(x))``, else emit from ``norm((p_i - q_i)+)``; a
    deterministic draft (``draft_probs`` None) has a one-hot ``q``. Lossless.

    Parameters
    ----------
    draft_tokens : torch.Tensor
        ``LongTensor [k]``.
    draft_probs : torch.Tensor or None
        ``FloatTensor [k, V]``, or None for a deterministic draft.
    target_probs : torch.Tensor
        ``FloatTensor [k+1, V]``.
    generator : torch.Generator

    Returns
    -------
    torch.Tensor
        ``LongTensor [m]``: the accepted drafts, then one token.
    """
    return _chain_walk(draft_tokens, draft_probs, target_probs, generator, residual=True)


def chain_always_accept(draft_tokens, draft_probs, target_probs, generator):
    """Planted companion: every draft is accepted, then a bonus token from the target (the bug of
    transformers PR #28508 and of a coin fixed at 0). Lossy whenever q differs from p.

    Parameters
    ----------
    draft_tokens : torch.Tensor
        ``LongTensor [k]``.
    draft_probs : torch.Tensor or None
        ``FloatTensor [k, V]``, or None for a deterministic draft.
    target_probs : torch.Tensor
        ``FloatTensor [k+1, V]``.
    generator : torch.Generator

    Returns
    -------
    torch.Tensor
        ``LongTensor [m]``: the accepted drafts, then one token.
    """
    k = draft_tokens.numel()
    return torch.cat([draft_tokens, _draw(target_probs[k], generator)])


def chain_skip_residual(draft_tokens, draft_probs, target_probs, generator):
    """Planted companion: :func:`chain_rejection` drawing the correction from ``p`` itself instead
    of the residual. Lossy whenever a rejection can happen.

    Parameters
    ----------
    draft_tokens : torch.Tensor
        ``LongTensor [k]``.
    draft_probs : torch.Tensor or None
        ``FloatTensor [k, V]``, or None for a deterministic draft.
    target_probs : torch.Tensor
        ``FloatTensor [k+1, V]``.
    generator : torch.Generator

    Returns
    -------
    torch.Tensor
        ``LongTensor [m]``: the accepted drafts, then one token.
    """
    return _chain_walk(draft_tokens, draft_probs, target_probs, generator, residual=False)


def _children(parents) -> list[list[int]]:
    """``out[i + 1]``: the children of node ``i`` in order (``out[0]``: the root's)."""
    out = [[] for _ in range(parents.numel() + 1)]
    for i, par in enumerate(parents.tolist()):
        out[par + 1].append(i)
    return out


def _tree_walk(parents, tokens, draft_probs, target_probs, generator, residual: bool):
    children = _children(parents)
    node, out = -1, []
    p = target_probs[0]  # [V]
    while True:
        for c in children[node + 1]:
            x = int(tokens[c])
            q = draft_probs[c]  # [V]
            if _accept(p, q, x, generator):
                out.append(x)
                node, p = c, target_probs[c + 1]
                break
            if residual:
                p = _residual(p, q)
        else:  # every child rejected, or a leaf: the correction / bonus token
            return torch.tensor(out + [int(_draw(p, generator))], dtype=torch.long)


def tree_rejection(parents, tokens, draft_probs, target_probs, generator):
    """Recursive rejection sampling over the tree (SpecInfer; docs/theory.md section 3): at each
    node try the children in order, accept child ``c`` with ``min(1, p(x) / q_c(x))``, else
    ``p <- norm((p - q_c)+)``; continue into an accepted child, emit from ``p`` when all are
    rejected. ``q_c`` is the law child ``c`` was drawn from given its earlier siblings, so this is
    RRS for i.i.d. children, RRS without replacement for children drawn without it, and the
    one-hot rule for deterministic ones. Lossless.

    Parameters
    ----------
    parents : torch.Tensor
        ``LongTensor [n]``.
    tokens : torch.Tensor
        ``LongTensor [n]``.
    draft_probs : torch.Tensor
        ``FloatTensor [n, V]``.
    target_probs : torch.Tensor
        ``FloatTensor [n+1, V]``.
    generator : torch.Generator

    Returns
    -------
    torch.Tensor
        ``LongTensor [m]``: a root path's tokens, then one token.
    """
    return _tree_walk(parents, tokens, draft_probs, target_probs, generator, residual=True)


def tree_always_accept(parents, tokens, draft_probs, target_probs, generator):
    """Planted companion: follow the first child at every level, then a bonus token.

    Parameters
    ----------
    parents : torch.Tensor
        ``LongTensor [n]``.
    tokens : torch.Tensor
        ``LongTensor [n]``.
    draft_probs : torch.Tensor
        ``FloatTensor [n, V]``.
    target_probs : torch.Tensor
        ``FloatTensor [n+1, V]``.
    generator : torch.Generator

    Returns
    -------
    torch.Tensor
        ``LongTensor [m]``: a root path's tokens, then one token.
    """
    children = _children(parents)
    node, out = -1, []
    while children[node + 1]:
        node = children[node + 1][0]
        out.append(int(tokens[node]))
    return torch.tensor(out + [int(_draw(target_probs[node + 1], generator))], dtype=torch.long)


def tree_skip_residual(parents, tokens, draft_probs, target_probs, generator):
    """Planted companion: :func:`tree_rejection` without the residual (``p`` kept after a rejection).

    Parameters
    ----------
    parents : torch.Tensor
        ``LongTensor [n]``.
    tokens : torch.Tensor
        ``LongTensor [n]``.
    draft_probs : torch.Tensor
        ``FloatTensor [n, V]``.
    target_probs : torch.Tensor
        ``FloatTensor [n+1, V]``.
    generator : torch.Generator

    Returns
    -------
    torch.Tensor
        ``LongTensor [m]``: a root path's tokens, then one token.
    """
    return _tree_walk(parents, tokens, draft_probs, target_probs, generator, residual=False)


#: The planted companion of each kind that ``rheo audit --verifier`` runs beside the user's
#: function, through the same harness, at the same N: the test must reject it.
COMPANIONS = {"chain": chain_skip_residual, "tree": tree_skip_residual}
