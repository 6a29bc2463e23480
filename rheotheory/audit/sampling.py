r"""The law an engine claims to sample: raw target logits after its sampling settings.

An audit compares an engine's output with the law its settings define, so that law is computed
here, from the settings' definitions, never by calling the engine's own processors (a bug there
would then go unseen). The definitions are transformers' (``generation/logits_process.py``,
read in 5.24.0), applied in its order:

1. **repetition penalty** :math:`\theta`: every token already in the sequence (prompt included)
   has its logit :math:`s` replaced by :math:`s / \theta` if :math:`s > 0`, else
   :math:`s\,\theta`;
2. **temperature** :math:`T`: logits divided by :math:`T`;
3. **top-k**: logits below the k-th largest are removed (ties at the k-th all kept);
4. **top-p**: sorted ascending, the tokens whose cumulative probability is at most
   :math:`1 - \mathrm{top\_p}` are removed, the most probable one always kept;
5. **min-p**: tokens with probability below :math:`\mathrm{min\_p} \cdot \max_x p(x)` are removed,
   the most probable one kept;

then a softmax. Steps 1-5 run in float32 like the engine (a token on a cut-off boundary is then
cut the same way); the softmax in float64.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

__all__ = ["Sampling", "processed_law"]


@dataclass(frozen=True)
class Sampling:
    """Sampling settings (plain data; ``None`` = off).

    Attributes
    ----------
    temperature : float, default 1.0
        > 0 (greedy decoding is not a law to test).
    top_k : int or None, default None
        Keep the k largest logits (0 or None: off).
    top_p : float or None, default None
        Nucleus mass in (0, 1] (1 or None: off).
    min_p : float or None, default None
        In [0, 1] (None: off).
    repetition_penalty : float or None, default None
        theta > 0 (1 or None: off).
    """

    temperature: float = 1.0  # > 0 (greedy decoding is not a law to test)
    top_k: int | None = None  # keep the k largest logits (0 or None: off)
    top_p: float | None = None  # nucleus mass in (0, 1] (1 or None: off)
    min_p: float | None = None  # in [0, 1] (None: off)
    repetition_penalty: float | None = None  # theta > 0 (1 or None: off)

    def to_dict(self) -> dict:
        """The settings that are set, as plain data (the ``None`` ones left out).

        Returns
        -------
        dict
            Field name -> value, for the fields that are not ``None``.

        Examples
        --------
        >>> Sampling(temperature=0.7, top_k=40).to_dict()
        {'temperature': 0.7, 'top_k': 40}
        """
        return {k: v for k, v in asdict(self).items() if v is not None}


def processed_law(logits, input_ids, s: Sampling) -> np.ndarray:
    """The law after settings ``s`` (module docstring) of raw logits at the end of sequences.

    Parameters
    ----------
    logits : array_like
        ``# [m, V]`` raw logits.
    input_ids : array_like
        ``# [m, len]``: the prompt and the tokens so far (for the repetition penalty).
    s : Sampling

    Returns
    -------
    numpy.ndarray
        ``# [m, V]`` float64.
    """
    import torch

    x = torch.as_tensor(logits, dtype=torch.float32).clone()  # [m, V]
    if s.repetition_penalty is not None and s.repetition_penalty != 1.0:
        ids = torch.as_tensor(input_ids, dtype=torch.long)  # [m, len]
        seen = torch.gather(x, 1, ids)  # [m, len]
        seen = torch.where(seen > 0, seen / s.repetition_penalty, seen * s.repetition_penalty)
        x.scatter_(1, ids, seen)
    if s.temperature != 1.0:
        x = x / s.temperature
    if s.top_k:
        kth = torch.topk(x, min(int(s.top_k), x.shape[-1]), dim=-1).values[..., -1:]  # [m, 1]
        x = x.masked_fill(x < kth, -float("inf"))
    if s.top_p is not None and s.top_p < 1.0:
        sorted_x, order = torch.sort(x, descending=False)  # [m, V]
        cum = sorted_x.softmax(dim=-1).cumsum(dim=-1)
        drop = cum <= (1 - s.top_p)
        drop[..., -1:] = False  # NOTE: the most probable token always stays
        x = x.masked_fill(drop.scatter(1, order, drop), -float("inf"))
    if s.min_p is not None:
        probs = x.softmax(dim=-1)
        drop = probs < s.min_p * probs.amax(dim=-1, keepdim=True)
        drop.scatter_(1, torch.argmax(probs, dim=-1, keepdim=True), False)
        x = x.masked_fill(drop, -float("inf"))
    return torch.softmax(x.double(), dim=-1).numpy()
