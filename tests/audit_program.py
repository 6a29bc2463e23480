"""A verifier program for the tests of ``rheo audit --verifier-cmd`` (rheotheory.audit.process).

``python tests/audit_program.py [MODE] [--at N]``: standard rejection sampling over the process
protocol (both framings, chains and trees: recursive rejection), with the standard library only,
or one way of breaking the protocol, from call N on (default 1):

- ``correct``: lossless;
- ``crash``: raises (a traceback on stderr, exit status 1); ``exit0``: exits with status 0;
  ``sigkill``: kills itself; ``hang``: never answers; ``garbage``: answers a line that is not JSON;
  ``too-many``: answers every draft and two more tokens; ``bad-handshake``: answers the handshake
  with something else;
- ``ignore-seed``: seeds its generator once, at start; ``fixed-seed``: seeds a constant at every call;
- ``skip-residual``: lossy (the correction drawn from p in every rejection).
"""

from __future__ import annotations

import json
import os
import random
import signal
import struct
import sys
import time


def _draw(w, rng):
    total = sum(w)
    u, acc, last = rng.random() * total, 0.0, 0
    for t, x in enumerate(w):
        if x <= 0:
            continue
        acc += x
        last = t
        if u < acc:
            return t
    return last


def _residual(p, q):
    r = [max(a - b, 0.0) for a, b in zip(p, q)]
    total = sum(r)
    return [x / total for x in r] if total > 0 else p


def chain(drafts, q, p, rng, skip):
    for i, x in enumerate(drafts):
        qi = q[i] if q is not None else [1.0 if t == x else 0.0 for t in range(len(p[i]))]
        if rng.random() * qi[x] < p[i][x]:
            continue
        return drafts[:i] + [_draw(p[i] if skip else _residual(p[i], qi), rng)]
    return drafts + [_draw(p[len(drafts)], rng)]


def tree(parents, tokens, q, p, rng, skip):
    children = [[] for _ in range(len(tokens) + 1)]
    for i, par in enumerate(parents):
        children[par + 1].append(i)
    node, out, law = -1, [], p[0]
    while True:
        for c in children[node + 1]:
            x = tokens[c]
            if rng.random() * q[c][x] < law[x]:
                out.append(x)
                node, law = c, p[c + 1]
                break
            if not skip:
                law = _residual(law, q[c])
        else:
            return out + [_draw(law, rng)]


def _read_binary(stream):
    head = stream.read(24)
    if len(head) < 24:
        return None
    magic, kind, flags, _, n, v, seed = struct.unpack("<4sBBHIIQ", head)

    def ints(m):
        return list(struct.unpack(f"<{m}i", stream.read(4 * m)))

    def rows(m):
        flat = struct.unpack(f"<{m * v}f", stream.read(4 * m * v))
        return [list(flat[i * v:(i + 1) * v]) for i in range(m)]

    call = {"seed": seed}
    if kind == 1:
        call["parents"] = ints(n)
    call["draft_tokens" if kind == 0 else "tokens"] = ints(n)
    call["draft_probs"] = rows(n) if flags & 1 else None
    call["target_probs"] = rows(n + 1)
    return call


def main(argv):
    mode = argv[1] if len(argv) > 1 else "correct"
    at = int(argv[argv.index("--at") + 1]) if "--at" in argv else 1
    hello = json.loads(sys.stdin.buffer.readline())
    binary = hello["framing"] == "binary"
    out = sys.stdout.buffer
    if mode == "bad-handshake":
        out.write(b"hello\n")
        out.flush()
    else:
        out.write(b'{"protocol": "rheo-audit", "version": 1}\n')
        out.flush()
    rng = random.Random(12345)
    calls = 0
    while True:
        if binary:
            call = _read_binary(sys.stdin.buffer)
            if call is None:
                return 0
        else:
            line = sys.stdin.buffer.readline()
            if not line:
                return 0
            call = json.loads(line)
        calls += 1
        broken = calls >= at
        if broken and mode == "crash":
            raise RuntimeError("the verifier program failed")
        if broken and mode == "exit0":
            sys.exit(0)
        if broken and mode == "sigkill":
            os.kill(os.getpid(), signal.SIGKILL)
        if broken and mode == "hang":
            time.sleep(3600)
        if mode == "fixed-seed":
            rng = random.Random(42)
        elif mode != "ignore-seed":
            rng = random.Random(call["seed"])
        skip = mode == "skip-residual"
        if "parents" in call:
            toks = tree(call["parents"], call["tokens"], call["draft_probs"], call["target_probs"], rng, skip)
        else:
            toks = chain(call["draft_tokens"], call["draft_probs"], call["target_probs"], rng, skip)
        if broken and mode == "too-many":
            toks = call.get("draft_tokens", call.get("tokens")) + [0, 0]
        if broken and mode == "garbage":
            out.write(b"accepted 2 tokens\n")
        elif binary:
            out.write(b"RHEO" + struct.pack(f"<I{len(toks)}i", len(toks), *toks))
        else:
            out.write((json.dumps(toks) + "\n").encode())
        out.flush()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
