r"""The CPU's matrix products of a model through oneDNN, with each weight packed once.

A decoding step's target pass covers a handful of tokens (a tree of N nodes: N + 1 rows), and at
batch 1 a small model's pass is bound by reading its weights from memory. PyTorch's default CPU
product (MKL) computes a product over two or three rows as one matrix-vector product per row on
some machines (an AMD EPYC among them), re-reading the weight each time: there SmolLM2's pass over
a few tokens costs about twice its single-token pass, and no tree can pay for itself. oneDNN's
product over a weight packed once into its blocked layout reads the weight once for every row
count, which is the property speculative decoding rests on. A product over a single row (the
autoregressive step's) is packed too with several threads, where it decoded autoregressively
faster on both AMD EPYC hosts measured. With one thread neither product wins everywhere: packed
decoding ran slower than the default on one host and faster on the other. So with one thread the
single-row product is chosen on the machine itself: :func:`pack_for_cpu` times the model's own
weights in a single-row sweep (every packed layer once, as a pass reads them), both ways,
alternated, and keeps the faster (:func:`single_row_product`): the autoregressive baseline a
speed-up is measured against is the faster of the two. ``benchmarks/forward_timing.py``
times passes with both products, ``benchmarks/cpu_matmul_decode.py`` decodes with both, on the
machine they run on (docs/guide/real-models.md, "The CPU's matrix product").

:func:`pack_for_cpu` switches a model's ``nn.Linear`` layers (and the tied output heads that
:class:`~rheotheory.decode.backends.smollm.SmolLM` and
:class:`~rheotheory.decode.heads.draft_head.DraftHead` compute by hand, through their
``_head_pack`` slot) to packed products. It is for inference only: a product whose input or
weight needs a gradient, or whose weight changed since it was packed, is recomputed the default
way or repacked; so a model that is trained after packing stays correct. The two products differ
by float rounding only (the order of summation; the losslessness of every method is a property of
the verifier, not of the logits' last bits).

``RHEO_CPU_MATMUL`` chooses: ``onednn`` (the default where this PyTorch build has oneDNN and its
packed product agrees with the default one on a probe) or ``default`` (PyTorch's own product).
"""

from __future__ import annotations

import copy
import math
import os
import time
from contextlib import contextmanager

import torch
from torch import nn
from torch.nn import functional as F

from ...errors import InstanceError

__all__ = ["MODES", "mode", "available", "product", "Packed", "pack_for_cpu", "describe", "default_product",
           "calibrate_single_row", "single_row_product"]

#: Values of ``RHEO_CPU_MATMUL``.
MODES = ("onednn", "default")
#: Row count the packed layout is chosen for (a tree pass's few rows; any count runs on it).
PACK_ROWS = 4

_AVAILABLE: bool | None = None
_DEFAULT_ONLY = False
#: The product a single row gets with one thread (``packed`` or ``default``): None until
#: :func:`pack_for_cpu` has timed both on a model's weights (default until then).
_ONE_THREAD_SINGLE_ROW: str | None = None
#: Alternated rounds of the single-row sweep each product gets (the faster's minimum wins).
CALIBRATION_ROUNDS = 5


@contextmanager
def default_product():
    """Within this block every packed product is computed the default way (``F.linear``).

    What a benchmark comparing both products on one loaded model switches. Process-wide; the
    previous setting comes back on exit (blocks nest).

    Yields
    ------
    None
        Control, with the default product in force.

    Examples
    --------
    ::

        with default_product():
            logits = model(tokens)  # PyTorch's own product, packed weights or not
    """
    global _DEFAULT_ONLY
    before, _DEFAULT_ONLY = _DEFAULT_ONLY, True
    try:
        yield
    finally:
        _DEFAULT_ONLY = before


def mode() -> str:
    """The product ``RHEO_CPU_MATMUL`` asks for (``onednn`` when unset).

    Returns
    -------
    str
        One of :data:`MODES`: ``"onednn"`` or ``"default"`` (case and spaces ignored; empty means
        unset).

    Raises
    ------
    InstanceError
        If the variable holds anything else.
    """
    got = os.environ.get("RHEO_CPU_MATMUL", "onednn").strip().lower() or "onednn"
    if got not in MODES:
        raise InstanceError(f"RHEO_CPU_MATMUL must be one of {', '.join(MODES)}, got {got!r}")
    return got


def available() -> bool:
    """Whether this PyTorch build packs linear weights for oneDNN and its product agrees with
    ``F.linear`` on a probe (checked once per process).

    Returns
    -------
    bool
        True when the operators exist and a packed 3 x 16 by 16 x 24 product matches ``F.linear``
        within 1e-5.
    """
    global _AVAILABLE
    if _AVAILABLE is None:
        ok = False
        try:
            if torch.backends.mkldnn.is_available():
                with torch.no_grad():
                    g = torch.Generator().manual_seed(0)
                    w, x = torch.randn(24, 16, generator=g), torch.randn(3, 16, generator=g)
                    y = torch.ops.mkldnn._linear_pointwise(x, torch.ops.mkldnn._reorder_linear_weight(w, PACK_ROWS),
                                                           None, "none", [], "")
                    ok = bool(torch.allclose(y, F.linear(x, w), rtol=1e-5, atol=1e-5))
        except (AttributeError, RuntimeError, NotImplementedError):
            ok = False  # NOTE: a build without these operators decodes with the default product
        _AVAILABLE = ok
    return _AVAILABLE


def product() -> str:
    """The product a CPU model loaded now runs: ``onednn`` when asked for and available, else
    ``default`` (what the tree-size cache keys on and provenance records).

    Returns
    -------
    str
        ``"onednn"`` or ``"default"``.

    Raises
    ------
    InstanceError
        If ``RHEO_CPU_MATMUL`` holds an unknown value (from :func:`mode`).
    """
    return "onednn" if mode() == "onednn" and available() else "default"


class Packed:
    """``x @ weight.T (+ bias)`` through oneDNN with ``weight`` packed when first used.

    Repacked when the weight changes (its in-place version counter), and computed by ``F.linear``
    instead when a gradient is needed, inside :func:`default_product`, or when ``x`` is a single
    row, torch runs one thread and :func:`single_row_product` is not ``packed``. Called as
    ``packed(x, bias=None)`` with ``x`` # [..., in] float32, it returns # [..., out].

    Parameters
    ----------
    weight : torch.Tensor of shape (out, in)
        A float32 CPU weight (kept by reference as ``self.weight``, not copied).
    """

    def __init__(self, weight: torch.Tensor):
        self.weight = weight
        self._packed = None
        self._version = None

    def __call__(self, x: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
        w = self.weight
        if _DEFAULT_ONLY or (torch.is_grad_enabled() and (x.requires_grad or w.requires_grad)) or \
                (x.numel() == x.shape[-1] and torch.get_num_threads() == 1 and _ONE_THREAD_SINGLE_ROW != "packed"):
            return F.linear(x, w, bias)  # NOTE: a single row on one thread: as measured (single_row_product)
        version = _version(w)
        if self._packed is None or self._version != version:
            with torch.no_grad():
                self._packed = torch.ops.mkldnn._reorder_linear_weight(w.detach(), PACK_ROWS)
            self._version = version
        return torch.ops.mkldnn._linear_pointwise(x.contiguous(), self._packed, bias, "none", [], "")

    def __deepcopy__(self, memo):  # NOTE: a packed tensor has no storage to copy; the copy packs its own
        return Packed(copy.deepcopy(self.weight, memo))


def _version(w: torch.Tensor):
    """``w``'s in-place version counter; a tensor made in inference mode has none (-1)."""
    try:
        return w._version
    except RuntimeError:
        return -1


class PackedLinear(nn.Linear):
    """``nn.Linear`` whose product is :class:`Packed` (the class :func:`pack_for_cpu` gives a layer)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self._rheo_pack(x, self.bias)


def _eligible(t: torch.Tensor) -> bool:
    return t.device.type == "cpu" and t.dtype == torch.float32


def pack_for_cpu(model: nn.Module) -> bool:
    """Switch ``model``'s float32 CPU products to packed oneDNN ones (see the module docstring).

    Idempotent; layers shared with an already packed model stay as they are. The first model
    packed in a process also decides the one-thread single-row product
    (:func:`calibrate_single_row`). Nothing changes when :func:`product` is ``default``.

    Parameters
    ----------
    model : torch.nn.Module
        The model, switched in place: its float32 CPU ``nn.Linear`` layers become
        :class:`PackedLinear`, and a module with ``head_weight_for_pack`` gets a packed tied head.

    Returns
    -------
    bool
        True if some product of ``model`` is packed (now or already).
    """
    if product() != "onednn":
        return False
    done = False
    for mod in model.modules():
        if type(mod) is nn.Linear and _eligible(mod.weight):
            mod._rheo_pack = Packed(mod.weight)
            mod.__class__ = PackedLinear
            done = True
        elif isinstance(mod, PackedLinear):
            done = True
        slot = getattr(mod, "head_weight_for_pack", None)
        if slot is not None and getattr(mod, "_head_pack", None) is None:
            w = slot()
            if w is not None and _eligible(w):
                mod._head_pack = Packed(w)
                done = True
    if done and _ONE_THREAD_SINGLE_ROW is None:
        calibrate_single_row(model)
    return done


def _packs(model: nn.Module) -> list[Packed]:
    out = []
    for mod in model.modules():
        for slot in ("_rheo_pack", "_head_pack"):
            got = getattr(mod, slot, None)
            if isinstance(got, Packed):
                out.append(got)
    return out


def calibrate_single_row(model: nn.Module) -> str:
    """Time a single-row product over every packed weight of ``model`` in turn (one pass's products).

    On one thread, packed and default, alternated :data:`CALIBRATION_ROUNDS` + 1 times (the first
    round packs and warms the caches; only each way's minimum counts); the one of smaller minimum
    becomes :func:`single_row_product` for this process. Torch's thread count is restored after.

    Parameters
    ----------
    model : torch.nn.Module
        A model switched by :func:`pack_for_cpu`; one without packed products decides nothing.

    Returns
    -------
    str
        ``"packed"`` or ``"default"``: :func:`single_row_product` after the timing.
    """
    global _ONE_THREAD_SINGLE_ROW
    packs = _packs(model)
    if not packs:
        return single_row_product()
    threads = torch.get_num_threads()
    gen = torch.Generator().manual_seed(0)  # NOTE: its own generator: loading a model leaves torch's global one alone
    xs = [torch.randn(1, p.weight.shape[1], generator=gen) for p in packs]
    best = {"packed": math.inf, "default": math.inf}
    try:
        torch.set_num_threads(1)
        with torch.no_grad():
            for way in ("packed", "default") * (CALIBRATION_ROUNDS + 1):
                _ONE_THREAD_SINGLE_ROW = way
                start = time.perf_counter()
                for p, x in zip(packs, xs):
                    p(x)
                best[way] = min(best[way], time.perf_counter() - start)
    except BaseException:
        _ONE_THREAD_SINGLE_ROW = None  # NOTE: an interrupted timing decides nothing
        raise
    finally:
        torch.set_num_threads(threads)
    # NOTE: the first round of each way packs the weights and warms the caches; it is timed too,
    # but only the minimum counts
    _ONE_THREAD_SINGLE_ROW = "packed" if best["packed"] < best["default"] else "default"
    return _ONE_THREAD_SINGLE_ROW


def single_row_product() -> str:
    """The product a single row gets with one thread in this process: ``packed`` or ``default``.

    ``default`` until a model has been packed and timed (:func:`calibrate_single_row`).

    Returns
    -------
    str
        ``"packed"`` or ``"default"``.
    """
    return _ONE_THREAD_SINGLE_ROW or "default"


def describe(model: nn.Module) -> str:
    """``onednn-packed`` if :func:`pack_for_cpu` switched ``model``, else ``default``.

    Parameters
    ----------
    model : torch.nn.Module
        Any model.

    Returns
    -------
    str
        ``"onednn-packed"`` or ``"default"`` (what a pair's manifest records as ``cpu_matmul``).
    """
    packed = any(isinstance(m, PackedLinear) or getattr(m, "_head_pack", None) is not None for m in model.modules())
    return "onednn-packed" if packed else "default"
