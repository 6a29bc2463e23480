r"""The process transport: a verifier in any language, driven over its standard input and output.

``rheo audit --verifier-cmd "PROGRAM ARGS"`` (and ``audit_verifier(ProcessVerifier(...))``) starts
the program once and hands it every call of the audit (docs/guide/audit-programs.md). The
harness, the law test, the rule check and every contract check are the ones a Python function
gets (:mod:`rheotheory.audit.user`): this module only carries a call across the process boundary.

**The protocol** (version :data:`VERSION`). The audit writes one JSON line, the handshake::

    {"protocol": "rheo-audit", "version": 1, "framing": "json", "kind": "chain", "vocab": 5}

and the program answers one JSON line ``{"protocol": "rheo-audit", "version": 1}``. Then calls
follow, one at a time, each answered before the next is sent, in the framing the handshake names;
when the audit is done it closes the program's standard input, and the program exits.

``json`` framing: a call is one line, an object with

- ``seed``: an integer in ``[0, 2^53)``: the program seeds its own generator with it, at this
  call, and draws every random number of the call from that generator;
- chain: ``draft_tokens`` (``[k]`` ints), ``draft_probs`` (``[k][V]`` floats, or ``null`` for a
  deterministic draft), ``target_probs`` (``[k+1][V]``);
- tree: ``parents`` (``[n]``, -1 for a child of the root), ``tokens`` (``[n]``), ``draft_probs``
  (``[n][V]``), ``target_probs`` (``[n+1][V]``);

with the meanings of the Python signatures (:mod:`rheotheory.audit.examples`; p = target,
q = draft). The floats are float32 values written in full (a parser reading doubles and casting
to float gets them exactly). The answer is one line, a JSON array of token ids: the accepted
draft prefix (a root path of the tree), then one token.

``binary`` framing (little-endian, for speed): a call is, in order,

- 4 bytes ``RHEO``; ``uint8`` kind (0 chain, 1 tree); ``uint8`` flags (bit 0 set when
  ``draft_probs`` follows); ``uint16`` 0; ``uint32`` ``n`` (drafted tokens of a chain, nodes of a
  tree); ``uint32`` ``V``; ``uint64`` the seed (24 bytes in all);
- ``int32[n]`` ``parents`` (tree only), then ``int32[n]`` the drafted tokens (the nodes' tokens);
- ``float32[n][V]`` ``draft_probs`` when flag bit 0 is set, then ``float32[n+1][V]``
  ``target_probs``;

and the answer is ``RHEO``, a ``uint32`` count ``m``, then ``int32[m]`` tokens.

**What the transport checks** (each a :class:`~rheotheory.audit.user.VerifierCallError`: one
line, exit status 2, never a pass): the program cannot be started, does not answer the
handshake, exits or crashes (its exit code or signal, and the last line of its standard error),
does not answer a call within ``timeout`` seconds (it is killed), or answers with something
other than the framing's answer. The harness adds the rest: an answer that is not an accepted
prefix and one token, and, in the probe, a program that ignores the seed (two runs from the same
seeds differ) or whose answers do not depend on it (it reseeds identically, or draws nothing:
the same call sent with other seeds never gets another answer).
"""

from __future__ import annotations

import json
import os
import select
import shlex
import signal
import struct
import subprocess
import tempfile
import time

import numpy as np

from ..errors import RheoError

__all__ = ["ProcessVerifier", "PROTOCOL", "VERSION", "FRAMINGS", "DEFAULT_CALL_TIMEOUT", "HANDSHAKE_TIMEOUT",
           "SEED_LIMIT", "MAGIC", "encode_call", "decode_answer"]

#: The protocol's name and version (the handshake).
PROTOCOL, VERSION = "rheo-audit", 1

#: The framings of the calls (module docstring).
FRAMINGS = ("json", "binary")

#: Seconds a program may take to answer one call before it is killed and the audit refused.
DEFAULT_CALL_TIMEOUT = 10.0

#: Seconds a program may take to start and answer the handshake.
HANDSHAKE_TIMEOUT = 60.0

#: Per-call seeds are drawn in ``[0, SEED_LIMIT)``: exact in a JSON number read as a double.
SEED_LIMIT = 2**53

#: The first four bytes of a binary call and of its answer.
MAGIC = b"RHEO"

_HEADER = struct.Struct("<4sBBHIIQ")  # magic, kind, flags, 0, n, V, seed
_ANSWER = struct.Struct("<4sI")  # magic, m

#: Longest answer read (bytes): a verifier answers a few tokens.
_MAX_ANSWER = 1 << 20


def encode_call(framing: str, kind: str, seed: int, args) -> bytes:
    """One call in ``framing`` (module docstring).

    Parameters
    ----------
    framing : str
        ``"json"`` or ``"binary"``.
    kind : str
        ``"chain"`` or ``"tree"``.
    seed : int
        The call's seed, in ``[0, SEED_LIMIT)``.
    args : tuple
        The call's tensors without the generator: chain ``(draft_tokens, draft_probs,
        target_probs)``, tree ``(parents, tokens, draft_probs, target_probs)``.

    Returns
    -------
    bytes
    """
    if kind == "chain":
        toks, q, p = args
        parents = None
    else:
        parents, toks, q, p = args
    if framing == "json":
        d = {"seed": int(seed)}
        if parents is not None:
            d["parents"] = parents.tolist()
        d["draft_tokens" if kind == "chain" else "tokens"] = toks.tolist()
        d["draft_probs"] = None if q is None else q.double().tolist()
        d["target_probs"] = p.double().tolist()
        return (json.dumps(d, separators=(",", ":")) + "\n").encode()
    n, v = int(toks.numel()), int(p.shape[1])
    parts = [_HEADER.pack(MAGIC, 0 if kind == "chain" else 1, 0 if q is None else 1, 0, n, v, int(seed))]
    if parents is not None:
        parts.append(np.asarray(parents.tolist(), dtype="<i4").tobytes())
    parts.append(np.asarray(toks.tolist(), dtype="<i4").tobytes())
    if q is not None:
        parts.append(q.float().numpy().astype("<f4").tobytes())
    parts.append(p.float().numpy().astype("<f4").tobytes())
    return b"".join(parts)


def decode_answer(framing: str, data: bytes) -> list[int]:
    """The token ids of one answer in ``framing`` (the line without its newline, or the binary
    answer's bytes).

    Parameters
    ----------
    framing : str
        ``"json"`` or ``"binary"``.
    data : bytes
        The answer.

    Returns
    -------
    list of int

    Raises
    ------
    ValueError
        Not an answer of that framing (the message says what was expected).
    """
    if framing == "json":
        try:
            got = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise ValueError(f"answered {_show(data)}, expected one line holding a JSON array of token ids") from None
        if not isinstance(got, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in got):
            raise ValueError(f"answered {_show(data)}, expected a JSON array of token ids")
        return got
    magic, m = _ANSWER.unpack(data[:_ANSWER.size])
    if magic != MAGIC:
        raise ValueError(f"answered bytes {data[:8]!r}, expected {MAGIC!r} and a uint32 count (binary framing)")
    return np.frombuffer(data[_ANSWER.size:], dtype="<i4", count=m).astype(int).tolist()


def _show(data: bytes, limit: int = 60) -> str:
    text = data.decode("utf-8", "replace")
    return repr(text if len(text) <= limit else text[:limit] + "...")


class ProcessVerifier:
    """A verifier that is a program: each call sent over its standard input, its answer read from
    its standard output (module docstring).

    Called like a Python verifier of ``kind`` (the harness hands it the same tensors and a
    ``torch.Generator``); the call's seed is drawn from that generator, so the audit's seeds
    decide the program's randomness. The program is started on the first call, once per process
    (a forked worker of the audit starts its own), and stopped by :meth:`close`.

    Parameters
    ----------
    command : str or sequence of str
        The program and its arguments (a string is split as a shell would, without a shell).
    kind : str
        ``"chain"`` or ``"tree"``.
    vocab : int
        The vocabulary the harness uses (told to the program in the handshake).
    framing : str, default "json"
        ``"json"`` or ``"binary"``.
    timeout : float, default DEFAULT_CALL_TIMEOUT
        Seconds one call may take.
    cwd : str, optional
        The program's working folder (default: this process's).

    Attributes
    ----------
    transport : str
        ``"process"`` (the harness words its refusals for a program).
    calls : int
        Calls answered so far in this process.
    """

    transport = "process"

    def __init__(self, command, kind: str, vocab: int, framing: str = "json",
                 timeout: float = DEFAULT_CALL_TIMEOUT, cwd: str | None = None):
        if kind not in ("chain", "tree"):
            raise RheoError(f"--kind must be chain or tree, got {kind!r}")
        if framing not in FRAMINGS:
            raise RheoError(f"--framing must be one of {', '.join(FRAMINGS)}, got {framing!r}")
        if not timeout > 0:
            raise RheoError(f"--call-timeout must be a positive number of seconds, got {timeout!r}")
        argv = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
        if not argv:
            raise RheoError("--verifier-cmd is empty: give the program and its arguments")
        self.argv, self.kind, self.vocab, self.framing = argv, kind, int(vocab), framing
        self.timeout, self.cwd = float(timeout), cwd
        self.command = command if isinstance(command, str) else shlex.join(argv)
        self.__name__ = self.command
        self.calls = 0
        self._proc = None
        self._owner = None  # the pid of the process that started the program
        self._buf = b""
        self._err = None

    # -- the program's life -------------------------------------------------------------------

    def _start(self) -> None:
        from .user import VerifierCallError

        self._err = tempfile.TemporaryFile()
        try:
            self._proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=self._err, cwd=self.cwd, bufsize=0)
        except OSError as e:
            raise VerifierCallError(f"the program {self.argv[0]!r} could not be started: {e.strerror or e}") from None
        self._owner, self._buf, self.calls = os.getpid(), b"", 0
        hello = dict(protocol=PROTOCOL, version=VERSION, framing=self.framing, kind=self.kind, vocab=self.vocab)
        self._write((json.dumps(hello) + "\n").encode(), "the handshake")
        line = self._read_line(HANDSHAKE_TIMEOUT, "the handshake")
        try:
            got = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            got = None
        if not isinstance(got, dict) or got.get("protocol") != PROTOCOL or got.get("version") != VERSION:
            self._stop()
            raise VerifierCallError(
                f"the program answered the handshake with {_show(line)}, expected the line "
                f'{{"protocol": "{PROTOCOL}", "version": {VERSION}}} (docs/guide/audit-programs.md)')

    def _alive(self) -> bool:
        return self._proc is not None and self._owner == os.getpid()

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        for stream in (proc.stdin, proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def close(self) -> None:
        """Close the program's standard input and wait for it (killed after 5 s); a later call
        starts it again."""
        if self._alive():
            self._stop()
        self._proc = None
        if self._err is not None:
            self._err.close()
            self._err = None

    def __del__(self):  # NOTE: a best effort; the audit calls close()
        try:
            if self._alive():
                self._stop()
        except Exception:
            pass

    # -- failures -----------------------------------------------------------------------------

    def _stderr_tail(self) -> str:
        if self._err is None:
            return ""
        try:
            self._err.seek(0)
            lines = [ln for ln in self._err.read()[-4096:].decode("utf-8", "replace").splitlines() if ln.strip()]
        except (OSError, ValueError):
            return ""
        return f"; its standard error ended with: {lines[-1].strip()[:200]!r}" if lines else ""

    def _ended(self, during: str):
        """The error for a program that ended (or closed its output) during ``during``."""
        from .user import VerifierCallError

        proc = self._proc
        try:
            code = proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            code = None
        if code is None:
            how = "closed its standard output"
            proc.kill()
            proc.wait()
        elif code < 0:
            try:
                how = f"was killed by signal {signal.Signals(-code).name}"
            except ValueError:
                how = f"was killed by signal {-code}"
        else:
            how = f"exited with code {code}"
        tail = self._stderr_tail()
        self._proc = None
        return VerifierCallError(f"the program {how} during {during}{tail}; a verifier program answers every "
                                 "call and exits only when its standard input closes")

    def _timed_out(self, during: str, seconds: float):
        from .user import VerifierCallError

        self._proc.kill()
        self._proc.wait()
        self._proc = None
        return VerifierCallError(f"the program did not answer {during} within {seconds:g} s and was killed "
                                 f"(--call-timeout){self._stderr_tail()}")

    # -- reading and writing ------------------------------------------------------------------

    def _write(self, data: bytes, during: str) -> None:
        try:
            self._proc.stdin.write(data)
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            raise self._ended(during) from None

    def _fill(self, deadline: float, during: str, timeout: float) -> None:
        fd = self._proc.stdout.fileno()
        left = deadline - time.monotonic()
        ready = select.select([fd], [], [], max(left, 0.0))[0] if left > 0 else []
        if not ready:
            raise self._timed_out(during, timeout)
        chunk = os.read(fd, 65536)
        if not chunk:
            raise self._ended(during)
        self._buf += chunk
        if len(self._buf) > _MAX_ANSWER:
            from .user import VerifierCallError

            self._stop()
            raise VerifierCallError(f"the program wrote more than {_MAX_ANSWER} bytes in answer to {during}, "
                                    "expected a few token ids")

    def _read_line(self, timeout: float, during: str) -> bytes:
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buf:
            self._fill(deadline, during, timeout)
        line, _, self._buf = self._buf.partition(b"\n")
        return line.rstrip(b"\r")

    def _read_exact(self, n: int, timeout: float, during: str, deadline: float | None = None) -> bytes:
        deadline = time.monotonic() + timeout if deadline is None else deadline
        while len(self._buf) < n:
            self._fill(deadline, during, timeout)
        out, self._buf = self._buf[:n], self._buf[n:]
        return out

    def _read_answer(self, during: str) -> list[int]:
        if self.framing == "json":
            data = self._read_line(self.timeout, during)
        else:
            deadline = time.monotonic() + self.timeout
            head = self._read_exact(_ANSWER.size, self.timeout, during, deadline)
            magic, m = _ANSWER.unpack(head)
            if magic == MAGIC and m <= _MAX_ANSWER // 4:
                head += self._read_exact(4 * m, self.timeout, during, deadline)
            data = head
        try:
            return decode_answer(self.framing, data)
        except ValueError as e:
            from .user import VerifierCallError

            self._stop()
            raise VerifierCallError(f"the program {e} (call {self.calls + 1})") from None

    # -- a call -------------------------------------------------------------------------------

    def __call__(self, *args):
        """One call: ``args`` as the Python signature of ``kind`` has them, the generator last.

        Returns
        -------
        torch.Tensor
            The answer's tokens, ``LongTensor [m]``.

        Raises
        ------
        rheotheory.audit.user.VerifierCallError
            The program broke the protocol (module docstring).
        """
        import torch

        *tensors, generator = args
        seed = int(torch.randint(0, SEED_LIMIT, (), generator=generator))
        if not self._alive():
            self._start()
        during = f"call {self.calls + 1}"
        self._write(encode_call(self.framing, self.kind, seed, tensors), during)
        toks = self._read_answer(during)
        self.calls += 1
        return torch.tensor(toks, dtype=torch.long)
