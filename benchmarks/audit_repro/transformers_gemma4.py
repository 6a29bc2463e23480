"""transformers 5.24.0 with a Gemma 4 assistant at T > 0: arg-max drafts verified against the softmax as ``q``.

``generate(assistant_model=gemma4_assistant, do_sample=True)`` on a Gemma 4 target runs
``SinglePositionMultiTokenCandidateGenerator``: each draft token is the assistant's arg-max
(``outputs.logits.argmax``, whatever ``do_sample`` says), and the assistant's raw logits are returned
as the candidate logits. ``_speculative_sampling`` takes their softmax ``q`` for the law the drafts
were drawn from: it accepts the draft ``x*`` with probability ``min(1, p(x*) / q(x*))`` and, on a
rejection, draws from ``(p - q)+`` normalised. The drafts were drawn from the point mass on ``x*``,
so the first token of a step has the law

.. math::

    P(y) = a\\,[y = x^*] + (1 - a) \\frac{(p(y) - q(y))_+}{\\sum_z (p(z) - q(z))_+},
    \\qquad a = \\min(1, p(x^*) / q(x^*)),

not ``p`` (``P(x*) = a > p(x*)`` when ``q(x*) > p(x*)``), with top-k or without.

This script runs the adapter's tiny Gemma 4 target and assistant
(``rheotheory.audit.engines.transformers_generate``) through transformers' own ``generate``. The first
call of the generator drafts nothing (the prompt's forward pass makes the first token ``y1`` by plain
sampling); the second drafts after ``y1``, deterministically given ``y1``. For every ``y1`` the runs
reach, it records the assistant's ``x*`` and logits and the target's processed law ``p`` there, computes
the exact law of the first token of that step and its total variation from ``p``, and their mean over
``y1 ~ p1``: the total variation of the law of ``(y1, y2)`` from the target's. With the repair (``q`` the
point mass on ``x*``, transformers PR #47961's) the same computation gives 0.

Usage: ``python benchmarks/audit_repro/transformers_gemma4.py [--runs N]``
"""

from __future__ import annotations

import argparse
import contextlib
import json

import numpy as np

SETTINGS = ("gemma4 assistant 2 drafted top_k 50", "gemma4 assistant 2 drafted top_k 3")
CONTROL = "gemma4 assistant 2 drafted top_k 3 (one-hot q)"


@contextlib.contextmanager
def _recording(log: list):
    """Record each drafting call's last token, drafts and logits, and ``_speculative_sampling``'s ``p``
    (wrappers around transformers' own functions; nothing replaced)."""
    import transformers.generation.candidate_generator as cg
    import transformers.generation.utils as gu

    cls = cg.SinglePositionMultiTokenCandidateGenerator
    get0, spec0 = cls.get_candidates, gu._speculative_sampling

    def get_candidates(self, input_ids, *args, **kw):
        ids, logits = get0(self, input_ids, *args, **kw)
        if logits is not None:
            log.append(dict(length=input_ids.shape[1], last=int(input_ids[0, -1]),
                            drafted=ids[0, input_ids.shape[1]:].tolist(), q_logits=logits[0].double().numpy()))
        return ids, logits

    def speculative_sampling(candidate_input_ids, candidate_logits, candidate_length, new_logits, **kw):
        log[-1].update(p_logits=new_logits[0].double().numpy(), q_used=candidate_logits[0].double().numpy())
        return spec0(candidate_input_ids, candidate_logits, candidate_length, new_logits, **kw)

    cls.get_candidates, gu._speculative_sampling = get_candidates, speculative_sampling
    try:
        yield
    finally:
        cls.get_candidates, gu._speculative_sampling = get0, spec0


def _softmax(x):  # [..., V]
    z = np.exp(x - x.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


def step_law(x: int, q, p):
    """Exact law of the first token of a step whose draft is ``x`` (a point mass) verified against
    ``q`` (module docstring); ``# [V]``."""
    a = min(1.0, p[x] / q[x]) if q[x] > 0 else float(p[x] > 0)
    residual = np.clip(p - q, 0, None)
    residual = residual / residual.sum() if residual.sum() > 0 else p
    law = (1 - a) * residual
    law[x] += a
    return law


def run(name: str, runs: int = 400) -> dict:
    """The second step of ``runs`` runs of setting ``name`` (module docstring)."""
    from rheotheory.audit.engines import transformers_generate as tg
    from rheotheory.audit.engines.tiny import PROMPT

    (setting,) = tg.settings(only=[name]) if name in tg.SETTINGS else tg.controls(only=[name])
    log = []
    with _recording(log):
        setting.sample(runs, 0)
    p1 = setting.laws([()])[0]  # [V]: the first token's law (plain sampling)
    first = {}
    for rec in log:
        if rec["length"] == len(PROMPT) + 1 and rec["last"] not in first:  # the step after y1
            first[rec["last"]] = rec
    rows, tv = [], 0.0
    for y1 in np.flatnonzero(p1 > 0).tolist():
        if y1 not in first:
            rows.append(dict(y1=y1, p1=round(float(p1[y1]), 6), seen=False))
            continue
        rec = first[y1]
        x = rec["drafted"][0]
        q = _softmax(rec["q_used"][0])  # the q _speculative_sampling used
        p = _softmax(rec["p_logits"][0])
        law = step_law(x, q, p)
        d = 0.5 * float(np.abs(law - p).sum())
        tv += float(p1[y1]) * d
        rows.append(dict(y1=y1, p1=round(float(p1[y1]), 6), seen=True, draft=x, q_draft=round(float(q[x]), 6),
                         p_draft=round(float(p[x]), 6), law_draft=round(float(law[x]), 6), tv=round(d, 6),
                         p_matches_target_law=bool(np.allclose(p, setting.laws([(y1,)])[0], atol=1e-5))))
    return dict(setting=name, runs=runs, steps=rows, all_seen=all(r["seen"] for r in rows),
                tv_of_two_tokens=round(tv, 6))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=400, help="runs whose second steps are read (default 400)")
    args = ap.parse_args(argv)
    from transformers.utils import logging

    logging.set_verbosity_error()
    for name in (*SETTINGS, CONTROL):
        print(json.dumps(run(name, args.runs)))


if __name__ == "__main__":
    main()
