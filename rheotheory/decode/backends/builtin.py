"""The built-in model pair: a ~1M-parameter character-level target and a ~0.15M draft.

Both were trained on CPython's standard-library source by ``scripts/train_tiny_pair.py``; the
weights ship in ``rheotheory/data`` with the manifest ``tiny_pair.json`` (corpus hash, configs,
seed, losses). Nothing is downloaded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch

from ...errors import InstanceError
from .tree_lm import ModelConfig, TinyLM
from .builtin_train import decode_text, encode

__all__ = ["ModelPair", "load_builtin_pair", "resolve_device", "DATA_DIR"]

DATA_DIR = Path(__file__).resolve().parents[2] / "data"
MANIFEST = "tiny_pair.json"


@dataclass(frozen=True)
class ModelPair:
    """A target p and a draft q sharing one tokenizer (ASCII code points).

    Attributes
    ----------
    target : TinyLM
        p.
    draft : TinyLM
        q.
    manifest : dict
        Provenance (see ``tiny_pair.json``: corpus hash, configs, seed, losses).
    """

    target: TinyLM  # p
    draft: TinyLM  # q
    manifest: dict  # provenance (see tiny_pair.json)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``: its ASCII code points.

        Parameters
        ----------
        text : str
            ASCII text.

        Returns
        -------
        list of int
            One id per character, in 0..127.

        Raises
        ------
        InstanceError
            If ``text`` has a non-ASCII character.
        """
        return encode(text)

    def decode(self, tokens) -> str:
        """The text of token ids (their characters).

        Parameters
        ----------
        tokens : sequence of int
            Token ids (code points).

        Returns
        -------
        str
            The characters, concatenated.
        """
        return decode_text(tokens)


def resolve_device(name: str) -> torch.device:
    """The torch device named ``cpu``, ``cuda`` or ``cuda:N``; a clear error when CUDA is not available.

    Parameters
    ----------
    name : str
        ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.

    Returns
    -------
    torch.device
        The device.

    Raises
    ------
    InstanceError
        If a CUDA device is requested and CUDA is not available, or the name is neither.
    """
    if name == "cpu":
        return torch.device("cpu")
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            raise InstanceError(f"device {name!r} requested but CUDA is not available on this machine")
        return torch.device(name)
    raise InstanceError(f"unknown device {name!r}; use cpu or cuda")


def _load(path: Path, cfg: ModelConfig, device, dtype) -> TinyLM:
    from safetensors.torch import load_file

    model = TinyLM(cfg)
    model.load_state_dict(load_file(str(path)))
    return model.to(device=device, dtype=dtype).eval()


def load_builtin_pair(device="cpu", dtype=torch.float32, data_dir=None) -> ModelPair:
    """Load the built-in pair onto ``device`` (a name or ``torch.device``), in eval mode.

    Parameters
    ----------
    device : str or torch.device, default "cpu"
        Where the models go; a name is checked by :func:`resolve_device`.
    dtype : torch.dtype, default torch.float32
        The models' dtype.
    data_dir : str or os.PathLike, optional
        The folder of ``tiny_pair.json`` and the two ``.safetensors`` files (default
        :data:`DATA_DIR`, the files shipped with the package).

    Returns
    -------
    ModelPair
        Target, draft and the manifest.

    Raises
    ------
    InstanceError
        If the manifest is missing from the folder, or the device cannot be used.
    """
    folder = Path(data_dir) if data_dir is not None else DATA_DIR
    man_path = folder / MANIFEST
    if not man_path.exists():
        raise InstanceError(f"built-in model manifest {str(man_path)!r} is missing; "
                            "rebuild it with scripts/train_tiny_pair.py")
    manifest = json.loads(man_path.read_text())
    dev = resolve_device(device) if isinstance(device, str) else device
    target = _load(folder / "tiny_target.safetensors", ModelConfig(**manifest["target"]["model"]), dev, dtype)
    draft = _load(folder / "tiny_draft.safetensors", ModelConfig(**manifest["draft"]["model"]), dev, dtype)
    return ModelPair(target, draft, manifest)
