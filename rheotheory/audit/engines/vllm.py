"""vLLM v1's rejection sampler (``vllm/v1/sample/rejection_sampler.py``, 0.33.0) under Triton's interpreter.

The audited code path is vLLM's own, from its source file, on CPU tensors with
``TRITON_INTERPRET=1``: ``RejectionSampler.forward`` (its bonus-row and target-row indexing,
``apply_logits_processors``, ``apply_sampling_constraints`` with the temperature expanded by
``expand_kernel``), ``rejection_sample`` (``generate_uniform_probs``: float64 uniforms, one
slice per request from that request's ``torch.Generator``; ``sample_recovered_tokens``: one
Exp(1) vector per request, reused at every position, and ``sample_recovered_tokens_kernel``;
``rejection_random_sample_kernel``, and ``rejection_greedy_sample_kernel`` for greedy
requests in the batch) and ``RejectionSampler.parse_output``, each kernel launched through
vLLM's own dispatcher (``model_executor/warmup/jit_warmup_triton_helper.py``).

**Where vLLM comes from.** vLLM cannot be imported here (its wheel pins another torch; its
package ``__init__`` needs the whole server), so the files are read and executed without
importing ``vllm`` (:mod:`.thirdparty`). Point rheotheory at them with one of

- ``RHEO_VLLM_SOURCE=/path/to/vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl`` (from
  ``pip download --no-deps vllm==0.33.0``, 336 MB; read in place), or a directory holding
  ``vllm/`` (another environment's ``site-packages``, an unpacked wheel, a checkout);
- an installed vLLM (``pip install --no-deps vllm==0.33.0``; its files are read, never
  imported).

The extra ``[vllm]`` installs Triton (3.9.0; install it ``--no-deps`` beside CPU torch). The
four files executed are ``v1/sample/rejection_sampler.py``, ``v1/spec_decode/metadata.py``
and the two launch-dispatcher files of ``model_executor/warmup/``; every other ``vllm``
import of theirs gets a stand-in that the audited path never reaches (it raises if it is
called): penalties, bad words, FLy and synthetic acceptance, logprobs containers, and
``apply_top_k_top_p``, which returns the logits unchanged when neither top-k nor top-p is set,
as vLLM's does (top-k / top-p run another Triton kernel, ``ops/topk_topp_triton.py``, not
audited here: no setting uses them).

**What the adapter plays** (not audited): the drafter (draft tokens drawn from a seeded toy
draft law, :class:`rheotheory.audit.toy.ToyLaws`, whose probabilities are passed as
``draft_probs``; or the draft's arg-max with ``draft_probs=None``, vLLM's path for n-gram
and arg-max drafters), the target model (its logits are the log of a toy target law), the
scheduler (one batch of requests per step, one request per run) and vLLM's ``Sampler``, which
``forward`` calls for the bonus tokens only: :class:`_BonusSampler` draws each from
``softmax(logits / T)`` of the row ``forward`` hands it, with the request's generator.

**What the kernels assume.** ``target_probs`` is the target's law after the request's
temperature, top-k and top-p (``apply_sampling_constraints`` runs before the kernels), and
``draft_probs`` the exact law each draft token was drawn from, after the drafter's own
settings; the draft tokens here are drawn from ``q_T`` (the toy draft law at the request's
temperature) and ``q_T`` is what is passed. The law tested is the target's law of the first
``L = k + 2`` generated tokens at temperature ``T``, ``p_T``, computed from the definition
(:mod:`rheotheory.audit.sampling`), never with vLLM's code.

**Randomness.** Every request carries its own ``torch.Generator`` (vLLM's seeded-request
path, ``SamplingMetadata.generators``) seeded from ``(seed, setting, run)``: the uniforms, the
exponentials and the bonus draw all come from it, so a setting's runs are reproducible.

Planted companions, the same ``forward`` and kernels with one known bug:
``uniform-zero`` (``generate_uniform_probs`` returns zeros: every draft accepted, as in
vllm-ascend PR #13470) and ``swapped-residual`` (``sample_recovered_tokens`` handed the target
probabilities where it expects the draft's and the draft's where it expects the target's: the
residual is ``(q - p)+``; settings without draft probabilities are left out).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import sys
from dataclasses import dataclass

from ..core import Setting
from . import Engine
from .toychain import Laws, drive, run_seeds

__all__ = ["ENGINE", "DEFAULT_RUNS", "SETTINGS", "PLANTED", "ENV", "settings", "version", "load"]

#: Runs per setting by default: each run is 2-3 steps of a batched ``forward`` (about 20 ms a
#: request and step under the interpreter); the 10 settings and the default companion then take
#: about 12 minutes on one core, and every setting detects TV >= 0.15.
DEFAULT_RUNS = 600

#: The environment variable naming vLLM's wheel or a directory holding ``vllm/``.
ENV = "RHEO_VLLM_SOURCE"

_HINT = ("pip download --no-deps vllm==0.33.0 and set RHEO_VLLM_SOURCE to the .whl, or pip install --no-deps "
         "vllm==0.33.0; Triton comes with: pip install -e \".[vllm]\"")

#: Vocabulary of the toy laws.
VOCAB = 5


@dataclass(frozen=True)
class VSetting:
    """One batch configuration (plain data)."""

    k: int  # draft tokens per step of the audited requests
    family: str  # toy law family (rheotheory.audit.toy.FAMILIES); "greedy": arg-max draft, draft_probs=None
    temperature: float = 1.0  # SamplingMetadata.temperature of the audited requests
    fp64_gumbel: bool = False  # the sampler's use_fp64_gumbel (float64 exponentials for the recovered tokens)
    neighbours: bool = False  # each audited request shares the batch with a greedy, a k=1 or a draft-less one


#: The settings (name -> configuration).
SETTINGS = {
    "k=1 generic": VSetting(1, "generic"),
    "k=2 ties": VSetting(2, "ties"),
    "k=3 peaked": VSetting(3, "peaked"),
    "k=4 disjoint supports": VSetting(4, "disjoint"),
    "k=2 no draft probs (arg-max draft)": VSetting(2, "greedy"),
    "k=4 no draft probs (arg-max draft)": VSetting(4, "greedy"),
    "k=3 temperature 0.6": VSetting(3, "generic", temperature=0.6),
    "k=2 temperature 1.5": VSetting(2, "generic", temperature=1.5),
    "k=2 fp64 exponentials": VSetting(2, "generic", fp64_gumbel=True),
    "k=3 mixed batch (greedy, k=1, draft-less neighbours)": VSetting(3, "generic", neighbours=True),
}

#: The planted companions (module docstring).
PLANTED = ("uniform-zero", "swapped-residual")

ENGINE = Engine(name="vllm", package="vllm", distribution="vllm", pinned="0.33.0", extra="vllm",
                summary="v1 RejectionSampler.forward and its Triton kernels (rejection_sample, "
                "rejection_random_sample_kernel, sample_recovered_tokens_kernel) under Triton's interpreter",
                settings=tuple(SETTINGS), planted=PLANTED)

#: Triton, the one package the adapter imports (pinned to the version it was run with).
_TRITON = Engine(name="vllm", package="triton", distribution="triton", pinned="3.9.0", extra="vllm", summary="",
                 settings=(), planted=())


def _source(warn: bool = True):
    from .thirdparty import locate

    src = locate("vllm", "vllm", ENV, _HINT)
    if warn and src.version != ENGINE.pinned:
        print(f"rheo audit: warning: vllm {src.version} is at {src.origin}; the vllm adapter was written against "
              f"{ENGINE.pinned}", file=sys.stderr)
    return src


def version() -> str:
    """The engine's installed version.

    Returns
    -------
    str
        The installed version of the engine.
    """
    return _source(warn=False).version


def _unreached(what: str):
    def f(*args, **kwargs):
        raise NotImplementedError(f"{what}: not part of the audited path (a stand-in of rheotheory's)")

    return f


class _Placeholder:
    """A class vLLM's file names (in annotations or isinstance checks) but never builds here."""


@dataclass
class _SamplerOutput:
    """Stands in for ``vllm.v1.outputs.SamplerOutput`` (a container)."""

    sampled_token_ids: object  # [batch, max_spec_len + 1] int32, or [batch, 1] for the bonus tokens
    logprobs_tensors: object = None


def _apply_top_k_top_p(logits, k, p):
    if k is None and p is None:  # NOTE: what vLLM's apply_top_k_top_p does without top-k / top-p
        return logits
    raise NotImplementedError("top-k / top-p (ops/topk_topp_triton.py) are not audited by this adapter")


@functools.lru_cache(maxsize=None)
def load():
    """vLLM's modules, executed from its source (module docstring): ``(rejection_sampler, metadata)``.

    Cached: the files are read and executed once per process.

    Returns
    -------
    tuple of types.ModuleType
        ``(rejection_sampler, metadata)``: private modules executed from
        ``vllm/v1/sample/rejection_sampler.py`` and ``vllm/v1/spec_decode/metadata.py``.

    Raises
    ------
    rheotheory.errors.RheoError
        Triton is missing or was imported without ``TRITON_INTERPRET=1``
        (:func:`~rheotheory.audit.engines.thirdparty.triton_interpreter`), vLLM's source is not
        found (:data:`ENV`, or an installed vLLM), or one of its files is missing or fails to load.
    """
    from .thirdparty import load_module, stub, triton_interpreter

    triton_interpreter(_TRITON)
    import logging

    import triton
    import triton.language as tl

    src = _source()

    class _Platform:
        device_type = "cpu"

        def is_cuda(self):
            return False

    mods = {
        "vllm.envs": stub("vllm.envs", VLLM_TRITON_JIT_WARMUP_NUM_THREADS=1),
        "vllm.platforms": stub("vllm.platforms", current_platform=_Platform()),
        "vllm.triton_utils": stub("vllm.triton_utils", HAS_TRITON=True, triton=triton, tl=tl),
        "vllm.logger": stub("vllm.logger", init_logger=logging.getLogger),
    }
    prefix = "rheotheory.audit.engines.vllm.loaded."
    for name, rel in (("vllm.model_executor.warmup.jit_warmup", "vllm/model_executor/warmup/jit_warmup.py"),
                      ("vllm.model_executor.warmup.jit_warmup_triton_helper",
                       "vllm/model_executor/warmup/jit_warmup_triton_helper.py"),
                      ("vllm.v1.spec_decode.metadata", "vllm/v1/spec_decode/metadata.py")):
        mods[name] = load_module(prefix + name.rpartition(".")[2], src, rel, mods)
    mods.update({
        "vllm.config.model": stub("vllm.config.model", PROCESSED_LOGPROBS_MODES=("processed_logits",
                                                                                 "processed_logprobs")),
        "vllm.utils.torch_utils": stub("vllm.utils.torch_utils", async_tensor_h2d=_unreached("async_tensor_h2d")),
        "vllm.v1.outputs": stub("vllm.v1.outputs", LogprobsLists=_Placeholder, LogprobsTensors=_Placeholder,
                                SamplerOutput=_SamplerOutput),
        "vllm.v1.sample.logits_processor.builtin": stub("vllm.v1.sample.logits_processor.builtin",
                                                        MinTokensLogitsProcessor=_Placeholder),
        "vllm.v1.sample.metadata": stub("vllm.v1.sample.metadata", SamplingMetadata=_Placeholder),
        "vllm.v1.sample.ops.bad_words": stub("vllm.v1.sample.ops.bad_words",
                                             apply_bad_words_with_drafts=_unreached("bad words")),
        "vllm.v1.sample.ops.penalties": stub("vllm.v1.sample.ops.penalties",
                                             apply_all_penalties=_unreached("penalties")),
        "vllm.v1.sample.ops.topk_topp_sampler": stub("vllm.v1.sample.ops.topk_topp_sampler",
                                                     apply_top_k_top_p=_apply_top_k_top_p),
        "vllm.v1.sample.sampler": stub("vllm.v1.sample.sampler", Sampler=_Placeholder),
        "vllm.v1.spec_decode.fly": stub("vllm.v1.spec_decode.fly",
                                        apply_fly_greedy_acceptance_kernel=_unreached("FLy"),
                                        apply_fly_random_acceptance_kernel=_unreached("FLy"),
                                        compute_fly_entropy=_unreached("FLy")),
        "vllm.v1.spec_decode.utils": stub("vllm.v1.spec_decode.utils",
                                          unconditional_to_conditional_rates=_unreached("synthetic acceptance")),
    })
    rs = load_module(prefix + "rejection_sampler", src, "vllm/v1/sample/rejection_sampler.py", mods)
    return rs, mods["vllm.v1.spec_decode.metadata"]


@dataclass
class _SamplingMetadata:
    """The fields of ``vllm.v1.sample.metadata.SamplingMetadata`` that ``forward`` reads (inputs)."""

    temperature: object  # [batch] float32 (0: greedy)
    all_greedy: bool
    all_random: bool
    generators: dict  # request index -> torch.Generator
    top_p: object = None
    top_k: object = None
    max_num_logprobs: object = None
    no_penalties: bool = True
    bad_words_token_ids: dict = dataclasses.field(default_factory=dict)
    output_token_ids: list = dataclasses.field(default_factory=list)
    spec_token_ids: object = None
    allowed_token_ids_mask: object = None
    logitsprocs: object = None
    thinking_budget_state_holder: object = None


class _NoLogitsProcessors:
    non_argmax_invariant = ()


class _BonusSampler:
    """Stands in for vLLM's ``Sampler``, which ``forward`` calls for the bonus tokens only (module
    docstring): each request's bonus token from ``softmax(logits / T)`` of its row, with its
    generator; the arg-max at ``T = 0``."""

    logprobs_mode = "raw_logprobs"

    def __init__(self, fp64_gumbel: bool):
        self.use_fp64_gumbel = fp64_gumbel

    def __call__(self, logits, sampling_metadata, predict_bonus_token=True, logprobs_mode_override=None):
        import torch

        out = torch.empty((logits.shape[0], 1), dtype=torch.int64)  # [batch, 1]
        for i in range(logits.shape[0]):
            t = float(sampling_metadata.temperature[i])
            if t == 0.0:
                out[i, 0] = int(torch.argmax(logits[i]))
            else:
                probs = torch.softmax(logits[i].double() / t, dim=-1)  # [V]
                out[i, 0] = torch.multinomial(probs, 1, generator=sampling_metadata.generators[i])
        return _SamplerOutput(out)


def _uniform_zero(original):
    def generate_uniform_probs(num_tokens, num_draft_tokens, generators, device):
        u = original(num_tokens, num_draft_tokens, generators, device)  # NOTE: the generators advance as before
        return u.zero_()  # the bug: every uniform 0, every draft accepted

    return generate_uniform_probs


def _swapped_residual(original):
    def sample_recovered_tokens(max_spec_len, num_draft_tokens, cu_num_draft_tokens, draft_token_ids, draft_probs,
                                target_probs, sampling_metadata, device, use_fp64_gumbel=False):
        # the bug: target and draft probabilities exchanged, the residual is (q - p)+
        return original(max_spec_len, num_draft_tokens, cu_num_draft_tokens, draft_token_ids, target_probs,
                        draft_probs, sampling_metadata, device, use_fp64_gumbel)

    return sample_recovered_tokens


_PATCHES = {"uniform-zero": ("generate_uniform_probs", _uniform_zero),
            "swapped-residual": ("sample_recovered_tokens", _swapped_residual)}


@contextlib.contextmanager
def _planted(rs, planted: str | None):
    if planted is None:
        yield
        return
    name, make = _PATCHES[planted]
    original = getattr(rs, name)
    setattr(rs, name, make(original))
    try:
        yield
    finally:
        setattr(rs, name, original)


def _step(rs, md, cfg: VSetting, laws: Laws, gens: list, side):
    """The engine's side of one step (:data:`rheotheory.audit.engines.toychain.Step`)."""
    import numpy as np
    import torch

    sampler = rs.RejectionSampler(_BonusSampler(cfg.fp64_gumbel))
    no_probs = laws.deterministic_draft

    def step(runs, prefixes, drafts):
        reqs = []  # (prefix, drafts, temperature, generator, audited)
        for i, z, d in zip(runs, prefixes, drafts):
            reqs.append((z, list(d), cfg.temperature, gens[i], True))
            if cfg.neighbours:
                kind = i % 3
                nd = list(d) if kind == 0 else d[:1] if kind == 1 else []
                reqs.append((z, nd, 0.0 if kind == 0 else cfg.temperature, side, False))
        rows, target_idx, bonus_idx, q_rows = [], [], [], []
        for z, d, _, _, _ in reqs:
            for j in range(len(d) + 1):
                u = z + tuple(d[:j])
                (target_idx if j < len(d) else bonus_idx).append(len(rows))
                rows.append(laws.target_logits(u))
                if j < len(d) and not no_probs:
                    q_rows.append(laws.q(u))
        meta = md.SpecDecodeMetadata.make_dummy([d for _, d, _, _, _ in reqs], torch.device("cpu"))
        meta.target_logits_indices = torch.tensor(target_idx, dtype=torch.int32)  # [num_tokens]
        meta.bonus_logits_indices = torch.tensor(bonus_idx, dtype=torch.int32)  # [batch]
        meta.logits_indices = torch.arange(len(rows), dtype=torch.int32)  # [num_tokens + batch]
        logits = torch.from_numpy(np.stack(rows))  # [num_tokens + batch, V] float32
        draft_probs = None if no_probs else torch.from_numpy(np.stack(q_rows).astype(np.float32))  # [num_tokens, V]
        temps = torch.tensor([r[2] for r in reqs], dtype=torch.float32)  # [batch]
        sm = _SamplingMetadata(temperature=temps, all_greedy=bool((temps == 0).all()),
                               all_random=bool((temps != 0).all()),
                               generators={b: r[3] for b, r in enumerate(reqs)}, logitsprocs=_NoLogitsProcessors())
        out = sampler.forward(meta, draft_probs, logits, sm)
        parsed, _ = rs.RejectionSampler.parse_output(out.sampled_token_ids, laws.vocab)
        return [toks for toks, r in zip(parsed, reqs) if r[4]]

    return step


def _sampler(cfg: VSetting, laws: Laws, L: int, planted: str | None, index: int, name: str):
    def sample(n: int, seed: int):
        import torch

        rs, md = load()
        rng, seeds = run_seeds(seed, index, n + 1)
        gens = [torch.Generator().manual_seed(s) for s in seeds[:n]]
        side = torch.Generator().manual_seed(seeds[n])
        with _planted(rs, planted), torch.inference_mode():
            return drive(n, L, cfg.k, laws, rng, _step(rs, md, cfg, laws, gens, side), f"vllm setting {name!r}")

    return sample


def _applies(planted: str | None, cfg: VSetting) -> bool:
    return not (planted == "swapped-residual" and cfg.family == "greedy")


def settings(planted: str | None = None, only=None) -> list[Setting]:
    """The :data:`SETTINGS` (those named in ``only``), each as an audit :class:`Setting`;
    ``planted``: with that companion's bug (the settings it cannot affect are left out).

    Parameters
    ----------
    planted : str, optional
        A planted companion's name (its bug in place of the engine's own code).
    only : sequence of str, optional
        Setting names.

    Returns
    -------
    list of rheotheory.audit.core.Setting
    
    Raises
    ------
    rheotheory.errors.RheoError
        ``planted`` is not one of :data:`PLANTED`, or vLLM's code cannot be loaded (:func:`load`).
    """
    import numpy as np

    from ...errors import RheoError
    from ..toy import ToyLaws

    if planted is not None and planted not in PLANTED:
        raise RheoError(f"unknown planted companion {planted!r} of vllm; one of {', '.join(PLANTED)}")
    load()
    out = []
    for index, (name, cfg) in enumerate(SETTINGS.items()):
        if (only is not None and name not in only) or not _applies(planted, cfg):
            continue
        laws = Laws(ToyLaws(cfg.family, int(np.random.SeedSequence([index, 33]).generate_state(1)[0]), VOCAB),
                    cfg.temperature)
        L = cfg.k + 2
        detail = dict(engine="vllm", k=cfg.k, family=cfg.family, vocab=VOCAB, temperature=cfg.temperature,
                      draft_probs=not laws.deterministic_draft, fp64_gumbel=cfg.fp64_gumbel,
                      neighbours=cfg.neighbours, dtype="float32 logits and draft probabilities (CPU)")
        out.append(Setting(name, L, laws.next_laws, _sampler(cfg, laws, L, planted, index, name), detail))
    return out
