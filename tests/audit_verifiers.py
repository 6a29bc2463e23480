"""Verifier functions of the audit's tests, in the signatures of ``rheo audit`` (rheotheory.audit.examples).

Correct but unusual ones, which the audit must not call lossy, lossy ones that are not the planted
companions, and contract breakers, which it must refuse with one line.
"""

from __future__ import annotations

import random

import torch


def _one_hot(x, like):
    q = torch.zeros_like(like)
    q[x] = 1.0
    return q


# -- correct, unusual --------------------------------------------------------------------------


def unnormalised_residual(draft_tokens, draft_probs, target_probs, generator):
    """Rejection sampling whose residual (p - q)+ goes to torch.multinomial unnormalised (which
    normalises it): lossless."""
    k = draft_tokens.numel()
    for i in range(k):
        x = int(draft_tokens[i])
        p = target_probs[i].double()
        q = _one_hot(x, p) if draft_probs is None else draft_probs[i].double()
        if torch.rand((), generator=generator, dtype=torch.float64) * q[x] >= p[x]:
            r = (p - q).clamp(min=0)
            y = torch.multinomial(r if r.sum() > 0 else p, 1, generator=generator)
            return torch.cat([draft_tokens[:i], y])
    return torch.cat([draft_tokens, torch.multinomial(target_probs[k], 1, generator=generator)])


def eagle_one_hot(draft_tokens, draft_probs, target_probs, generator):
    """EAGLE's one-hot rule on whatever draft it is given (draft_probs ignored): accept x with
    p(x), else draw from p with x zeroed. Lossless for any draft chosen without the coin."""
    k = draft_tokens.numel()
    for i in range(k):
        x = int(draft_tokens[i])
        p = target_probs[i]
        if not torch.rand((), generator=generator) < p[x]:
            r = p.clone()
            r[x] = 0.0
            return torch.cat([draft_tokens[:i], torch.multinomial(r, 1, generator=generator)])
    return torch.cat([draft_tokens, torch.multinomial(target_probs[k], 1, generator=generator)])


# -- lossy, of our own making (not the planted companions) ---------------------------------------


def wrong_target_row(draft_tokens, draft_probs, target_probs, generator):
    """Each draft tested against the target law of the *next* position (a logits slice off by
    one, as TensorRT-LLM PR #15098): lossy."""
    k = draft_tokens.numel()
    for i in range(k):
        x = int(draft_tokens[i])
        p = target_probs[i + 1]  # NOTE: the bug: row i + 1 instead of row i
        q = _one_hot(x, p) if draft_probs is None else draft_probs[i]
        if not torch.rand((), generator=generator) * q[x] < p[x]:
            r = (target_probs[i] - q).clamp(min=0)
            return torch.cat([draft_tokens[:i], torch.multinomial(r if r.sum() > 0 else target_probs[i], 1,
                                                                  generator=generator)])
    return torch.cat([draft_tokens, torch.multinomial(target_probs[k], 1, generator=generator)])


def sharpened_bonus(draft_tokens, draft_probs, target_probs, generator):
    """Correct verification, but the bonus token after a fully accepted draft comes from p
    sharpened to temperature 1/2 (a sampling setting applied twice on one path): lossy, and only
    in the token after the k drafts."""
    k = draft_tokens.numel()
    for i in range(k):
        x = int(draft_tokens[i])
        p = target_probs[i]
        q = _one_hot(x, p) if draft_probs is None else draft_probs[i]
        if not torch.rand((), generator=generator) * q[x] < p[x]:
            r = (p - q).clamp(min=0)
            return torch.cat([draft_tokens[:i], torch.multinomial(r if r.sum() > 0 else p, 1, generator=generator)])
    bonus = target_probs[k] ** 2
    return torch.cat([draft_tokens, torch.multinomial(bonus / bonus.sum(), 1, generator=generator)])


def tree_first_child_only_residual(parents, tokens, draft_probs, target_probs, generator):
    """Recursive rejection over the tree that updates the residual after the first rejected
    child only (EAGLE #20's class of bug: the residual adjusted at one element): lossy."""
    children = [[] for _ in range(tokens.numel() + 1)]
    for i, par in enumerate(parents.tolist()):
        children[par + 1].append(i)
    node, out, p = -1, [], target_probs[0]
    while True:
        for j, c in enumerate(children[node + 1]):
            x = int(tokens[c])
            q = draft_probs[c]
            if torch.rand((), generator=generator) * q[x] < p[x]:
                out.append(x)
                node, p = c, target_probs[c + 1]
                break
            if j == 0:
                r = (p - q).clamp(min=0)
                p = r / r.sum() if r.sum() > 0 else p
        else:
            return torch.tensor(out + [int(torch.multinomial(p, 1, generator=generator))])


# -- contract breakers -----------------------------------------------------------------------------


def raises(draft_tokens, draft_probs, target_probs, generator):
    raise IndexError("index 9 is out of bounds")


def returns_list(draft_tokens, draft_probs, target_probs, generator):
    return [int(draft_tokens[0])]


def returns_floats(draft_tokens, draft_probs, target_probs, generator):
    return torch.zeros(1)


def returns_2d(draft_tokens, draft_probs, target_probs, generator):
    return torch.zeros((1, 1), dtype=torch.long)


def returns_too_many(draft_tokens, draft_probs, target_probs, generator):
    return torch.cat([draft_tokens, draft_tokens])


def not_a_prefix(draft_tokens, draft_probs, target_probs, generator):
    """Returns a token that was not drafted in front of the correction (when k >= 2)."""
    k = draft_tokens.numel()
    out = torch.cat([draft_tokens, torch.multinomial(target_probs[k], 1, generator=generator)])
    out[0] = (out[0] + 1) % target_probs.shape[1]
    return out


def python_random(draft_tokens, draft_probs, target_probs, generator):
    """Correct rejection sampling that draws its coins from Python's random (not the generator)."""
    k = draft_tokens.numel()
    for i in range(k):
        x = int(draft_tokens[i])
        p = target_probs[i]
        q = _one_hot(x, p) if draft_probs is None else draft_probs[i]
        if not random.random() * float(q[x]) < float(p[x]):
            r = (p - q).clamp(min=0)
            return torch.cat([draft_tokens[:i], torch.multinomial(r if r.sum() > 0 else p, 1, generator=generator)])
    return torch.cat([draft_tokens, torch.multinomial(target_probs[k], 1, generator=generator)])


def three_arguments(draft_tokens, draft_probs, target_probs):
    return draft_tokens[:1]


# -- ways to avoid being tested (each must be refused with one line, exit 2) -----------------------


def _rejection(draft_tokens, draft_probs, target_probs, generator, coin):
    """Rejection sampling whose acceptance coin comes from ``coin()`` (the rest from ``generator``)."""
    k = draft_tokens.numel()
    for i in range(k):
        x = int(draft_tokens[i])
        p = target_probs[i]
        q = _one_hot(x, p) if draft_probs is None else draft_probs[i]
        if not coin() * float(q[x]) < float(p[x]):
            r = (p - q).clamp(min=0)
            return torch.cat([draft_tokens[:i], torch.multinomial(r if r.sum() > 0 else p, 1, generator=generator)])
    return torch.cat([draft_tokens, torch.multinomial(target_probs[k], 1, generator=generator)])


def calls_sys_exit(draft_tokens, draft_probs, target_probs, generator):
    import sys

    sys.exit(0)


def raises_keyboard_interrupt(draft_tokens, draft_probs, target_probs, generator):
    raise KeyboardInterrupt


def calls_os_exit(draft_tokens, draft_probs, target_probs, generator):
    import os

    os._exit(0)


_CALLS = [0]


def calls_os_exit_later(draft_tokens, draft_probs, target_probs, generator):
    """Correct for its first 3,000 calls (past the probe), then ``os._exit(0)``."""
    import os

    _CALLS[0] += 1
    if _CALLS[0] > 3000:
        os._exit(0)
    return _rejection(draft_tokens, draft_probs, target_probs, generator,
                      lambda: float(torch.rand((), generator=generator)))


def kills_itself(draft_tokens, draft_probs, target_probs, generator):
    import os
    import signal

    os.kill(os.getpid(), signal.SIGKILL)


def reseeds_torch_global(draft_tokens, draft_probs, target_probs, generator):
    """Reseeds torch's global generator at every call and draws its coins from it: the same
    outputs from the same inputs, so two runs from one seed agree."""
    torch.manual_seed(1234)
    return _rejection(draft_tokens, draft_probs, target_probs, generator, lambda: float(torch.rand(())))


def reseeds_numpy_global(draft_tokens, draft_probs, target_probs, generator):
    import numpy as np

    np.random.seed(1234)
    return _rejection(draft_tokens, draft_probs, target_probs, generator, lambda: float(np.random.rand()))


def reseeds_its_generator(draft_tokens, draft_probs, target_probs, generator):
    generator.manual_seed(1234)
    return _rejection(draft_tokens, draft_probs, target_probs, generator,
                      lambda: float(torch.rand((), generator=generator)))


def never_draws(draft_tokens, draft_probs, target_probs, generator):
    """Accepts every draft and returns the target's arg-max: no randomness at all."""
    k = draft_tokens.numel()
    return torch.cat([draft_tokens, target_probs[k].argmax().reshape(1)])


def skip_residual_sometimes(draft_tokens, draft_probs, target_probs, generator, eps=0.05):
    """Rejection sampling that skips the residual in a fraction ``eps`` of its rejections (draws the
    correction from p instead of norm((p - q)+)): the mass-shifting bug, lossy by TV about eps / 3."""
    k = draft_tokens.numel()
    for i in range(k):
        x = int(draft_tokens[i])
        p = target_probs[i]
        q = _one_hot(x, p) if draft_probs is None else draft_probs[i]
        if not torch.rand((), generator=generator) * q[x] < p[x]:
            r = (p - q).clamp(min=0)
            skip = bool(torch.rand((), generator=generator) < eps) or not r.sum() > 0
            return torch.cat([draft_tokens[:i], torch.multinomial(p if skip else r, 1, generator=generator)])
    return torch.cat([draft_tokens, torch.multinomial(target_probs[k], 1, generator=generator)])
