"""transformers' ``generate`` with an assistant model or prompt lookup, sampling at T > 0.

The audited code path is transformers' own: ``target.generate(prompt, assistant_model=draft,
do_sample=True, ...)`` (``_assisted_decoding``, its candidate generators and
``_speculative_sampling``), on the two tiny local models of :mod:`.tiny`. The draft length is set
where transformers reads it, the assistant's ``generation_config`` (``num_assistant_tokens``,
``num_assistant_tokens_schedule``, ``assistant_confidence_threshold``: passed to ``generate``
they have no effect). Randomness: transformers draws from torch's global generator, so each
setting seeds it (``torch.manual_seed``) before its runs.

The law tested is the target's law of the first ``L = k + 2`` new tokens after its sampling
settings, computed by :mod:`rheotheory.audit.sampling` from the definitions, never with
transformers' own processors. ``sampling`` (no assistant) is the control row: it checks that law
against transformers' plain sampling.

Planted companions, driven through the same ``generate`` call with ``_speculative_sampling``
replaced for the duration of the runs (written here from Leviathan et al.'s algorithm, each with
its one bug): ``always-accept`` (every candidate kept, as in transformers PR #28508) and
``skip-residual`` (a rejected position draws from p instead of norm((p - q)+)).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

from ..core import Setting
from ..sampling import Sampling
from . import Engine, require

__all__ = ["ENGINE", "DEFAULT_RUNS", "SETTINGS", "settings", "version"]

#: Runs per setting by default (about 0.02-0.05 s each on one core).
DEFAULT_RUNS = 1000


@dataclass(frozen=True)
class TfSetting:
    """One ``generate`` configuration (plain data)."""

    k: int  # num_assistant_tokens (the first draft length under the heuristic schedule)
    sampling: Sampling = field(default_factory=Sampling)
    schedule: str = "constant"  # num_assistant_tokens_schedule
    threshold: float = 0.0  # assistant_confidence_threshold (0: every draft runs k tokens)
    lookup: bool = False  # prompt lookup (prompt_lookup_num_tokens = k) instead of the assistant
    assistant: bool = True  # False: plain sampling (the control row)
    ensemble: float | None = None  # assistant_ensemble_weight (DIVERSE: biased by design)


#: The settings (name -> configuration).
SETTINGS = {
    "sampling (no assistant)": TfSetting(k=2, assistant=False),
    "k=1": TfSetting(k=1),
    "k=2": TfSetting(k=2),
    "k=3": TfSetting(k=3),
    "k=4": TfSetting(k=4),
    "heuristic schedule": TfSetting(k=2, schedule="heuristic"),
    "confidence threshold 0.4": TfSetting(k=3, threshold=0.4),
    "temperature 0.6": TfSetting(k=2, sampling=Sampling(temperature=0.6)),
    "temperature 1.5": TfSetting(k=2, sampling=Sampling(temperature=1.5)),
    "top_k=3": TfSetting(k=2, sampling=Sampling(top_k=3)),
    "top_p=0.8": TfSetting(k=2, sampling=Sampling(top_p=0.8)),
    "min_p=0.2": TfSetting(k=2, sampling=Sampling(min_p=0.2)),
    "repetition_penalty=1.5": TfSetting(k=2, sampling=Sampling(repetition_penalty=1.5)),
    "prompt lookup k=3": TfSetting(k=3, lookup=True),
    "ensemble weight 0.5 (biased by design)": TfSetting(k=2, ensemble=0.5),
}

ENGINE = Engine(name="transformers", package="transformers", distribution="transformers", pinned="5.24.0",
                extra="hf", summary="generate() with an assistant model or prompt lookup (_assisted_decoding, "
                "_speculative_sampling)", settings=tuple(SETTINGS), planted=("always-accept", "skip-residual"))


def version() -> str:
    return require(ENGINE, warn=False)[1]


def _planted_sampling(bug: str):
    """A replacement of ``_speculative_sampling`` with one bug (module docstring)."""
    import torch

    def speculative_sampling(candidate_input_ids, candidate_logits, candidate_length, new_logits,
                             assistant_ensemble_weight=None):
        drafted = candidate_input_ids[0, -candidate_length:]  # [k]
        q = candidate_logits[0].softmax(dim=-1)  # [k, V]
        p = new_logits[0].softmax(dim=-1)  # [k+1, V]
        n = candidate_length
        if bug == "skip-residual":
            for i in range(candidate_length):
                x = int(drafted[i])
                if not float(torch.rand(())) * float(q[i, x]) < float(p[i, x]):
                    n = i
                    break
        last = p[n]  # NOTE: the bug of skip-residual: p, not norm((p - q)+), after a rejection
        t = torch.multinomial(last, 1)  # [1]
        return torch.cat([drafted[:n], t])[None], torch.tensor(n)

    return speculative_sampling


@contextlib.contextmanager
def _patched(planted: str | None):
    if planted is None:
        yield
        return
    import transformers.generation.utils as gu

    original = gu._speculative_sampling
    gu._speculative_sampling = _planted_sampling(planted)
    try:
        yield
    finally:
        gu._speculative_sampling = original


def _sampler(cfg: TfSetting, L: int, planted: str | None, index: int):
    import numpy as np
    import torch

    from .tiny import PROMPT, tiny_pair

    target, draft = tiny_pair()
    prompt = torch.tensor([PROMPT], dtype=torch.long)  # [1, len(PROMPT)]
    s = cfg.sampling
    kw = dict(do_sample=True, max_new_tokens=L, temperature=s.temperature, top_k=s.top_k or 0,
              top_p=s.top_p if s.top_p is not None else 1.0, min_p=s.min_p,
              repetition_penalty=s.repetition_penalty if s.repetition_penalty is not None else 1.0,
              pad_token_id=0)
    if cfg.lookup:
        kw.update(prompt_lookup_num_tokens=cfg.k, max_matching_ngram_size=2)
    elif cfg.assistant:
        kw.update(assistant_model=draft)
        if cfg.ensemble is not None:
            kw.update(assistant_ensemble_weight=cfg.ensemble)

    def sample(n: int, seed: int):
        from transformers.utils import logging

        gc = draft.generation_config
        saved = (gc.num_assistant_tokens, gc.num_assistant_tokens_schedule, gc.assistant_confidence_threshold)
        gc.num_assistant_tokens, gc.num_assistant_tokens_schedule = cfg.k, cfg.schedule
        gc.assistant_confidence_threshold = cfg.threshold
        verbosity = logging.get_verbosity()
        logging.set_verbosity_error()  # NOTE: generate's deprecation notices, once per call
        torch.manual_seed(int(np.random.SeedSequence([int(seed), index]).generate_state(1)[0]))
        try:
            with _patched(planted), torch.inference_mode():
                return [tuple(target.generate(prompt, **kw)[0, len(PROMPT):].tolist()) for _ in range(n)]
        finally:
            gc.num_assistant_tokens, gc.num_assistant_tokens_schedule, gc.assistant_confidence_threshold = saved
            logging.set_verbosity(verbosity)

    return sample


def settings(planted: str | None = None, only=None) -> list[Setting]:
    """The :data:`SETTINGS` (those named in ``only``), each as an audit :class:`Setting`;
    ``planted``: with that companion's bug (the settings without an assistant are left out)."""
    require(ENGINE)
    from .tiny import PROMPT, tiny_pair, target_laws

    target, _ = tiny_pair()
    out = []
    for index, (name, cfg) in enumerate(SETTINGS.items()):
        if (only is not None and name not in only) or (planted is not None and not cfg.assistant):
            continue
        L = cfg.k + 2
        detail = dict(engine="transformers", k=cfg.k, schedule=cfg.schedule, threshold=cfg.threshold,
                      lookup=cfg.lookup, assistant=cfg.assistant, ensemble=cfg.ensemble, **cfg.sampling.to_dict())
        out.append(Setting(name, L, target_laws(target, PROMPT, cfg.sampling), _sampler(cfg, L, planted, index),
                           detail))
    return out
