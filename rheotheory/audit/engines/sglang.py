"""SGLang 0.5.23's chain and block verification kernel, and its verify-path choice, under Triton's interpreter.

**Audited code** (SGLang's own files, on CPU tensors with ``TRITON_INTERPRET=1``):

- ``chain_speculative_sampling_triton`` (``sglang/kernels/ops/speculative/reject_sampling.py``,
  its ``speculative_sampling_classic_kernel``): EAGLE verification when
  ``--speculative-use-rejection-sampling`` is on, token by token, or with
  ``--speculative-use-block-verification`` (``block_verification=True``: Sun et al. 2024,
  arXiv:2403.10444, Algorithm 2), the target law formed by SGLang's ``softmax(logits,
  temperatures)`` (``sglang/kernels/ops/sampling/__init__.py``) as ``eagle_sample`` forms it;
- ``_verify_uses_greedy`` (``sglang/srt/speculative/eagle_utils.py``), the choice between that
  sampling path and greedy verification, and on the greedy side ``verify_tree_greedy_func``
  (``sglang/kernels/ops/speculative/spec_tree.py``).

**Where SGLang comes from.** ``import sglang`` needs SGLang's server stack (orjson, starlette,
PIL, ...), so nothing of it is imported: the files are read and executed without the package
(:mod:`.thirdparty`), from ``RHEO_SGLANG_SOURCE`` (an SGLang wheel, ``pip download --no-deps
sglang==0.5.23``, 39 MB, or a directory holding ``sglang/``) or from an SGLang installed with
``pip install --no-deps sglang==0.5.23`` (its files are read, never imported). The extra
``[sglang]`` installs Triton (3.9.0, ``--no-deps`` beside CPU torch). ``reject_sampling.py``
imports only Triton; ``spec_tree.py`` imports SGLang's platform probes (``is_cpu``, ...), given
stand-ins that say "XPU" (below); of the other two files one function each is executed.

**The CPU engine's verify path.** ``_verify_uses_greedy`` returns True on CPU and XPU whatever
the temperature (``is_all_greedy or is_cpu or is_xpu or ...``): ``eagle_sample`` then commits
``argmax(next_token_logits)`` through ``verify_tree_greedy_func``, and the output is greedy
decoding of the target, not a sample of its law at ``T = 1``. The setting ``CPU engine's
verify choice`` calls SGLang's ``_verify_uses_greedy`` with the CPU engine's flags and follows
its answer. On the greedy side the CPU engine calls ``sgl_kernel.verify_tree_greedy_cpu``, a
C++ operator of SGLang's CPU build of sgl-kernel, built from source for that backend (the
sgl-kernel 0.3.21 wheel on the package index is a CUDA build without it), which cannot run
here; the XPU engine, which makes the same choice, runs
``verify_tree_greedy_triton`` of the same file, and that is what runs (``spec_tree.py`` loaded
with ``is_xpu() = True``): the same greedy rule (accept a draft iff it is the target's arg-max,
then append the arg-max). SGLang's top-k / top-p renormalisation of the target
(``top_k_renorm_prob``, ``top_p_renorm_prob``) has no CPU implementation (FlashInfer on CUDA;
``renorm_triton.py`` on ROCm refuses non-CUDA tensors): no setting uses top-k or top-p.

**What the adapter plays** (not audited): the drafter (draft tokens drawn from a seeded toy
draft law ``q_T``, :class:`rheotheory.audit.toy.ToyLaws`, passed as ``draft_probs``; a
deterministic draft passes one-hot rows), the target model (logits = log of a toy target
law), and the coins (``torch.rand`` of the batch's shape, as ``_verify_coins`` draws them
without a sampling seed, from the setting's generator seeded from ``(seed, setting)``).

**What the kernel assumes.** ``target_probs`` (``[bs, k + 1, V]``) is the target after the
temperature (and top-k / top-p, none here); ``draft_probs`` (``[bs, k, V]``) the exact law
each draft token was drawn from. The law tested is the target's law of the first
``L = k + 2`` generated tokens at temperature ``T``, computed from the definition
(:mod:`rheotheory.audit.sampling`).

Planted companions, the same kernel with one known bug: ``coin-zero`` (every rejection coin
0: a draft is accepted whenever the target allows it, as in vllm-ascend PR #13470),
``block-token-residual`` (block verification's acceptance, but the final token drawn from the
token-level residual ``norm((p - q)+)`` instead of ``norm((h p - q)+)``, as in vllm-ascend
#7807; block settings only: it moves the seeded families' laws by TV 0.01-0.05 only, so the
setting ``block k=4 scaled residual`` has laws written for it, :data:`SCALED_RESIDUAL`) and
``swapped-residual`` (the residual ``(q - p)+``). The last two edit one line of the kernel's
source as it is loaded (the real path loads it unedited); the greedy-path setting is left out
of every companion (no coin, no residual).
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass

from ..core import Setting
from . import Engine
from .toychain import Laws, drive, run_seeds

__all__ = ["ENGINE", "DEFAULT_RUNS", "SETTINGS", "PLANTED", "ENV", "settings", "version", "load"]

#: Runs per setting by default: each run is 2-3 steps of one batched kernel launch (about
#: 10-20 ms a request and step under the interpreter); the 14 settings and the default
#: companion then take about 15 minutes on one core, and every setting detects TV >= 0.15.
DEFAULT_RUNS = 600

#: The environment variable naming SGLang's wheel or a directory holding ``sglang/``.
ENV = "RHEO_SGLANG_SOURCE"

_HINT = ("pip install --no-deps sglang==0.5.23, or pip download --no-deps sglang==0.5.23 and set RHEO_SGLANG_SOURCE "
         "to the .whl; Triton comes with: pip install -e \".[sglang]\"")

#: Vocabulary of the toy laws.
VOCAB = 5

#: The CPU engine's flags, as ``eagle_sample`` passes them to ``_verify_uses_greedy`` at T = 1.
CPU_ENGINE = dict(is_all_greedy=False, is_cpu=True, is_hip=False, is_xpu=False, use_rejection_sampling=True)


#: Target and draft law (the same after every prefix, V = 3) where block verification's residual
#: ``norm((h p - q)+)`` differs most from the token-level one, found by a search over such pairs
#: at k = 4 for the power of this test: with the token-level residual the law of the first 6
#: tokens moves by TV 0.162 (detected at N = 600 with power 0.94 at level 0.01, 0.995 at
#: N = 900), where the seeded families' laws move it by 0.01-0.05 (invisible below N ~ 10^4).
SCALED_RESIDUAL = ((0.4, 0.3, 0.3), (0.15, 0.0, 0.85))


@dataclass(frozen=True)
class SSetting:
    """One verification configuration (plain data)."""

    k: int  # draft tokens per step (num_slots = k + 1)
    family: str  # toy law family; "greedy": an arg-max draft with one-hot draft_probs
    block: bool = False  # block_verification=True
    temperature: float = 1.0  # the requests' temperature
    engine: dict | None = None  # platform flags of _verify_uses_greedy: follow its choice (None: the kernel)
    fixed: tuple | None = None  # (p, q): laws that are the same after every prefix, instead of the family's


#: The settings (name -> configuration).
SETTINGS = {
    "token k=1 generic": SSetting(1, "generic"),
    "token k=2 ties": SSetting(2, "ties"),
    "token k=3 peaked": SSetting(3, "peaked"),
    "token k=4 disjoint supports": SSetting(4, "disjoint"),
    "token k=2 one-hot draft (arg-max)": SSetting(2, "greedy"),
    "token k=3 temperature 0.6": SSetting(3, "generic", temperature=0.6),
    "block k=2 generic": SSetting(2, "generic", block=True),
    "block k=3 ties": SSetting(3, "ties", block=True),
    "block k=4 peaked": SSetting(4, "peaked", block=True),
    "block k=3 disjoint supports": SSetting(3, "disjoint", block=True),
    "block k=3 one-hot draft (arg-max)": SSetting(3, "greedy", block=True),
    "block k=2 temperature 1.5": SSetting(2, "generic", block=True, temperature=1.5),
    "block k=4 scaled residual (fixed laws)": SSetting(4, "fixed", block=True, fixed=SCALED_RESIDUAL),
    "CPU engine's verify choice at T=1, k=2": SSetting(2, "generic", engine=CPU_ENGINE),
}

#: The planted companions (module docstring).
PLANTED = ("coin-zero", "block-token-residual", "swapped-residual")

ENGINE = Engine(name="sglang", package="sglang", distribution="sglang", pinned="0.5.23", extra="sglang",
                summary="chain_speculative_sampling_triton (token and block verification) and the CPU engine's "
                "verify choice (_verify_uses_greedy) under Triton's interpreter",
                settings=tuple(SETTINGS), planted=PLANTED)

_TRITON = Engine(name="sglang", package="triton", distribution="triton", pinned="3.9.0", extra="sglang", summary="",
                 settings=(), planted=())

_KERNEL = "sglang/kernels/ops/speculative/reject_sampling.py"

#: Source edits of the companions that change the kernel: (old, new, occurrences).
_MUTANTS = {
    "block-token-residual": (("residual_scale = prefix_prob\n", "residual_scale = 1.0\n", 1),
                             ("norm_sum = residual_mass\n", "norm_sum = -1.0\n", 1)),
    "swapped-residual": (("diff = residual_scale * p_val - q_val\n", "diff = q_val - residual_scale * p_val\n", 2),),
}


def _source(warn: bool = True):
    from .thirdparty import locate

    src = locate("sglang", "sglang", ENV, _HINT)
    if warn and src.version != ENGINE.pinned:
        print(f"rheo audit: warning: sglang {src.version} is at {src.origin}; the sglang adapter was written against "
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


def _mutant(planted: str, version: str):
    from ...errors import RheoError

    def patch(text: str) -> str:
        for old, new, count in _MUTANTS[planted]:
            if text.count(old) != count:
                raise RheoError(f"the planted companion {planted!r} does not apply to sglang {version}: "
                                f"{old.strip()!r} occurs {text.count(old)} times in {_KERNEL}, not {count}")
            text = text.replace(old, new)
        return text

    return patch


def _known(planted: str | None) -> None:
    """One line for a planted companion that is not one of :data:`PLANTED` (None passes)."""
    from ...errors import RheoError

    if planted is not None and planted not in PLANTED:
        raise RheoError(f"unknown planted companion {planted!r} of sglang; one of {', '.join(PLANTED)}")


@functools.lru_cache(maxsize=None)
def load(planted: str | None = None):
    """SGLang's code, executed from its source (module docstring): a dict with
    ``chain`` (``chain_speculative_sampling_triton``, with ``planted``'s source edit if it has
    one), ``greedy`` (``verify_tree_greedy_func``), ``uses_greedy`` (``_verify_uses_greedy``)
    and ``softmax`` (the sampling softmax).

    Cached: the files are read and executed once per process and value of ``planted``.

    Parameters
    ----------
    planted : str, optional
        A planted companion's name (one of :data:`PLANTED`): one that edits the kernel's source
        (``block-token-residual``, ``swapped-residual``) loads the kernel with that edit;
        ``coin-zero`` (whose bug lives in the driver, not the kernel), or None, loads SGLang's code
        as it is.

    Returns
    -------
    dict
        ``chain``, ``greedy``, ``uses_greedy``, ``softmax``: callables of SGLang's code.

    Raises
    ------
    rheotheory.errors.RheoError
        ``planted`` is not one of :data:`PLANTED` (a misspelt companion would otherwise load the
        unedited kernel); Triton is missing or was imported without ``TRITON_INTERPRET=1``
        (:func:`~rheotheory.audit.engines.thirdparty.triton_interpreter`), SGLang's source is not
        found (:data:`ENV`, or an installed SGLang), one of its files is missing or fails to load,
        or the planted edit does not apply to this version's kernel.
    """
    from .thirdparty import load_function, load_module, stub, triton_interpreter

    _known(planted)
    triton_interpreter(_TRITON)
    src = _source()
    prefix = "rheotheory.audit.engines.sglang.loaded."
    patch = _mutant(planted, src.version) if planted in _MUTANTS else None
    kernel = load_module(prefix + "reject_sampling" + (f"_{planted}" if patch else "").replace("-", "_"), src,
                         _KERNEL, {}, patch=patch)

    def _no(*args, **kwargs):
        return False

    class _Xpu:
        def is_out_of_tree(self):
            return False

    def _reject_out_of_tree_path(platform, *, subsystem):
        raise NotImplementedError(f"{subsystem}: not part of the audited path (a stand-in of rheotheory's)")

    # NOTE: the XPU engine's probes: its greedy verifier is the Triton one (module docstring)
    tree = load_module(prefix + "spec_tree", src, "sglang/kernels/ops/speculative/spec_tree.py", {
        "sglang.srt.platforms": stub("sglang.srt.platforms", current_platform=_Xpu()),
        "sglang.srt.platforms.interface": stub("sglang.srt.platforms.interface",
                                               reject_out_of_tree_path=_reject_out_of_tree_path),
        "sglang.srt.utils": stub("sglang.srt.utils", is_cpu=_no, is_cuda=_no, is_hip=_no, is_musa=_no, is_npu=_no,
                                 is_xpu=lambda: True),
    })
    cake = load_module(prefix + "cake_sampling", src, "sglang/kernels/cake_kernels/sampling.py", {})
    softmax = load_function(src, "sglang/kernels/ops/sampling/__init__.py", "softmax",
                            {"sglang.kernels.cake_kernels.sampling": cake})
    uses_greedy = load_function(src, "sglang/srt/speculative/eagle_utils.py", "_verify_uses_greedy")
    return dict(chain=kernel.chain_speculative_sampling_triton, greedy=tree.verify_tree_greedy_func,
                uses_greedy=uses_greedy, softmax=softmax)


def _step(code: dict, cfg: SSetting, laws: Laws, gen, coin_zero: bool):
    """The engine's side of one step (:data:`rheotheory.audit.engines.toychain.Step`)."""
    import numpy as np
    import torch

    k, S, V = cfg.k, cfg.k + 1, laws.vocab
    greedy = cfg.engine is not None and bool(code["uses_greedy"](**cfg.engine))

    def step(runs, prefixes, drafts):
        bs = len(runs)
        cand = torch.tensor([[z[-1] if z else 0] + list(d) for z, d in zip(prefixes, drafts)],
                            dtype=torch.int64)  # [bs, S]: the last token, then the drafts
        logits = torch.from_numpy(np.stack([laws.target_logits(z + tuple(d[:j]))
                                            for z, d in zip(prefixes, drafts) for j in range(S)]))  # [bs * S, V]
        retrieve_index = torch.arange(bs * S, dtype=torch.int64).reshape(bs, S)  # [bs, S]
        predict = torch.zeros(bs * S, dtype=torch.int32)  # [bs * S]
        accept_index = torch.full((bs, S), -1, dtype=torch.int32)  # [bs, S]
        accept_num = torch.empty(bs, dtype=torch.int32)  # [bs]
        if greedy:  # NOTE: eagle_sample's greedy branch: the target's arg-max, the chain as a tree of one path
            target_predict = torch.argmax(logits, dim=-1).reshape(bs, S)  # [bs, S]
            next_token = torch.where(torch.arange(S) < k, torch.arange(S) + 1, -1).expand(bs, S).contiguous()
            sibling = torch.full((bs, S), -1, dtype=torch.int64)
            code["greedy"](predict, accept_index, accept_num, cand, retrieve_index, next_token.to(torch.int64),
                           sibling, target_predict, topk=1)
        else:
            temps = torch.full((bs * S, 1), cfg.temperature, dtype=torch.float32)  # [bs * S, 1]
            target_probs = code["softmax"](logits, temperatures=temps).reshape(bs, S, V).contiguous()
            if laws.deterministic_draft:
                draft_probs = torch.nn.functional.one_hot(cand[:, 1:], V).to(torch.float32)  # [bs, k, V]
            else:
                draft_probs = torch.from_numpy(np.stack([[laws.q(z + tuple(d[:j])) for j in range(k)]
                                                         for z, d in zip(prefixes, drafts)]).astype(np.float32))
            coins = torch.rand((bs, S), dtype=torch.float32, generator=gen)  # [bs, S]
            final = torch.rand((bs,), dtype=torch.float32, generator=gen)  # [bs]
            if coin_zero:
                coins.zero_()  # the bug of coin-zero
            code["chain"](predict, accept_index, accept_num, cand, retrieve_index, None, None, coins, final,
                          target_probs, draft_probs.contiguous(), 1.0, 1.0, True, block_verification=cfg.block)
        pred, acc, num = predict.tolist(), accept_index.tolist(), accept_num.tolist()
        return [[pred[acc[b][j]] for j in range(num[b] + 1)] for b in range(bs)]

    return step


def _sampler(cfg: SSetting, laws: Laws, L: int, planted: str | None, index: int, name: str):
    def sample(n: int, seed: int):
        import torch

        code = load(planted if planted in _MUTANTS else None)
        rng, seeds = run_seeds(seed, index, 1)
        gen = torch.Generator().manual_seed(seeds[0])
        with torch.inference_mode():
            return drive(n, L, cfg.k, laws, rng, _step(code, cfg, laws, gen, planted == "coin-zero"),
                         f"sglang setting {name!r}")

    return sample


def _applies(planted: str | None, cfg: SSetting) -> bool:
    if planted is None:
        return True
    if cfg.engine is not None:
        return False
    return cfg.block or planted != "block-token-residual"


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
        ``planted`` is not one of :data:`PLANTED`, or SGLang's code cannot be loaded (:func:`load`).
    """
    import numpy as np

    from ..toy import ToyLaws
    from .toychain import FixedLaws

    _known(planted)
    load(planted if planted in _MUTANTS else None)
    out = []
    for index, (name, cfg) in enumerate(SETTINGS.items()):
        if (only is not None and name not in only) or not _applies(planted, cfg):
            continue
        toy = (FixedLaws(cfg.family, *cfg.fixed) if cfg.fixed else
               ToyLaws(cfg.family, int(np.random.SeedSequence([index, 35]).generate_state(1)[0]), VOCAB))
        laws = Laws(toy, cfg.temperature)
        L = cfg.k + 2
        detail = dict(engine="sglang", k=cfg.k, family=cfg.family, vocab=laws.vocab, temperature=cfg.temperature,
                      verification="block" if cfg.block else "token",
                      draft="one-hot" if laws.deterministic_draft else "sampled",
                      path=("greedy" if load()["uses_greedy"](**cfg.engine) else "sampling") if cfg.engine else
                      "kernel", dtype="float32 logits, probabilities and coins (CPU)")
        out.append(Setting(name, L, laws.next_laws, _sampler(cfg, laws, L, planted, index, name), detail))
    return out
