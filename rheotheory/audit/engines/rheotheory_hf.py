"""rheotheory's own ``transformers`` entry point, ``rheotheory.hf.generate``: the reference row.

The same two tiny models as the transformers adapter (:mod:`.tiny`), decoded by
``target.generate(prompt, custom_generate=rheotheory.hf.generate, assistant_model=draft, ...)``:
rheotheory's tree builders and verifiers behind transformers' own ``generate`` call. Every
method here is certified lossless exactly (``rheo certify``); this row checks the path from
``generate`` to the engine. The planted companion ``skip-residual`` is each method with its
verifier replaced by the planted bug of that verifier (:mod:`rheotheory.testing.mutants`).
"""

from __future__ import annotations

from ..core import Setting
from ..sampling import Sampling
from . import Engine, require

__all__ = ["ENGINE", "DEFAULT_RUNS", "SETTINGS", "settings", "version"]

#: Runs per setting by default.
DEFAULT_RUNS = 1000

#: name -> (method spec, tree size (K, D, N) overrides, sampling)
SETTINGS = {
    "rheo-tuned K,D,N=2,2,4": ("rheo-tuned", dict(tree_top_k=2, tree_depth=2, tree_budget=4), Sampling()),
    "eagle K,D,N=2,2,4": ("eagle", dict(tree_top_k=2, tree_depth=2, tree_budget=4), Sampling()),
    "chain D=3": ("chain", dict(tree_depth=3), Sampling()),
    "rheo-tuned T=0.6 top_k=4": ("rheo-tuned", dict(tree_top_k=2, tree_depth=2, tree_budget=4),
                                 Sampling(temperature=0.6, top_k=4)),
    "rheo-tuned top_p=0.8": ("rheo-tuned", dict(tree_top_k=2, tree_depth=2, tree_budget=4), Sampling(top_p=0.8)),
}

ENGINE = Engine(name="rheotheory", package="rheotheory", distribution="rheotheory", pinned="0.1.0", extra="hf",
                summary="rheotheory.hf.generate as transformers' custom_generate (the reference row)",
                settings=tuple(SETTINGS), planted=("skip-residual",))


def version() -> str:
    """The engine's installed version.

    Returns
    -------
    str
        The installed version of the engine.
    """
    from ... import __version__

    return __version__


def _method(spec: str, size: dict, planted: str | None):
    from ...methods import resolve

    sizes = dict(top_k=size.get("tree_top_k"), depth=size.get("tree_depth"), budget=size.get("tree_budget"))
    method = resolve(spec, size="model", **{k: v for k, v in sizes.items() if v is not None})
    if planted is None:
        return method
    from ...testing.mutants import mutants_of, planted as plant

    return plant(method, mutants_of(method.fields()["verifier"])[0])


def _sampler(spec, size, s: Sampling, L: int, planted, index: int):
    import numpy as np
    import torch

    from ... import hf
    from .tiny import PROMPT, tiny_pair

    target, draft = tiny_pair()
    method = _method(spec, size, planted)
    prompt = torch.tensor([PROMPT], dtype=torch.long)  # [1, len(PROMPT)]
    kw = dict(do_sample=True, max_new_tokens=L, temperature=s.temperature, top_k=s.top_k or 0,
              top_p=s.top_p if s.top_p is not None else 1.0)

    def sample(n: int, seed: int):
        gen = torch.Generator().manual_seed(int(np.random.SeedSequence([int(seed), index]).generate_state(1)[0]))
        with torch.inference_mode():
            return [tuple(target.generate(prompt, custom_generate=hf.generate, assistant_model=draft, method=method,
                                          generator=gen, **kw)[0, len(PROMPT):].tolist()) for _ in range(n)]

    return sample


def settings(planted: str | None = None, only=None) -> list[Setting]:
    """The adapter's settings as audit settings.

    Parameters
    ----------
    planted : str, optional
        A planted companion's name (its bug in place of the engine's own code).
    only : sequence of str, optional
        Setting names.

    Returns
    -------
    list of rheotheory.audit.core.Setting
    """
    require(ENGINE, warn=False)
    require(Engine("transformers", "transformers", "transformers", "5.24.0", "hf", "", (), ()), warn=False)
    from .tiny import PROMPT, target_laws, tiny_pair

    target, _ = tiny_pair()
    out = []
    for index, (name, (spec, size, s)) in enumerate(SETTINGS.items()):
        if only is not None and name not in only:
            continue
        L = size.get("tree_depth", 1) + 2
        out.append(Setting(name, L, target_laws(target, PROMPT, s), _sampler(spec, size, s, L, planted, index),
                           dict(engine="rheotheory", method=spec, **size, **s.to_dict())))
    return out
