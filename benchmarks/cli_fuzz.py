"""Generated malformed command lines for every `rheo` subcommand, each run in a child process with
a timeout and a memory limit; counts clean errors, crashes, hangs, memory failures and inputs
silently accepted.

Usage::

    python3 benchmarks/cli_fuzz.py                    # ~300 inputs per subcommand, forked children
    python3 benchmarks/cli_fuzz.py --spawn --per 10   # fresh interpreters (subprocess + preexec_fn)

Every input is invalid by construction: one or two flags get a value outside the flag's
documented range (wrong type, below/above the range, NaN/inf, a 4301-digit integer, empty text,
a newline, 10^5 characters), or a flag of another method family, on top of a small valid base
command. So the right outcome of every input is exit code 2 with exactly one line on stderr.

Outcomes: ``clean`` (exit 2, one stderr line, no traceback); ``crash`` (a traceback, another exit
code or a signal); ``hang`` (over ``--timeout``); ``memory`` (MemoryError, or killed over the
``--memory`` limit set with ``resource.setrlimit(RLIMIT_AS)`` in the child); ``accepted`` (exit 0).

The default runs each input in a child forked from one process that has already imported the
package (``os.fork``; the limit is set in the child before ``main(argv)``), since a fresh
interpreter takes seconds to import numpy/scipy/torch; ``--spawn`` runs ``python -m
rheotheory.cli`` with ``preexec_fn`` setting the limit instead.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter

BIG = "9" * 4301
LONG = "1" * 100_000

#: Bad values of an integer flag with range lo..hi (hi None: unbounded).
def int_bad(lo, hi=None):
    vals = ["x", "", " ", "1.5", "nan", "inf", "1e3", "0x10", "1\n2", BIG, "-" + BIG, str(lo - 1), LONG]
    if hi is not None:
        vals += [str(hi + 1), str(2**64)]
    return vals


#: Bad values of a float flag with (closed) lower bound lo and optional upper bound hi.
def float_bad(lo=None, hi=None, extra=()):
    vals = ["x", "", "nan", "-nan", "inf", "-inf", "1e999", "1\n2", LONG, "0x1p3x"]
    if lo is not None:
        vals.append(repr(lo - 1.0))
    if hi is not None:
        vals.append(repr(hi + 1.0))
    return vals + list(extra)


TEMP_BAD = float_bad(0.0, extra=["1e-9", "1e-300", "-0.5"])
SEED_BAD = int_bad(0, 2**63 - 1)
FAMILY_BAD = [("--shape", "[[0]]"), ("--proxy", "tail", "--preset", "chain"), ("--head", "1", "--preset", "eagle"),
              ("--sampling", "iid"), ("--width", "2")]
METHOD_INT = {"--top-k": int_bad(1), "--depth": int_bad(1), "--budget": int_bad(1)}


def grammar(tmp: str) -> dict:
    """Subcommand -> (base argv, {flag: [bad values]}, extra whole bad argv tails)."""
    sweep_base = ["--steps", "2", "--methods", "eagle", "--temperatures", "1", "--mismatch", "low", "--no-plot",
                  "--no-progress", "--out", os.path.join(tmp, "sweep"), "--trees", "2,2,4", "--vocab", "50"]
    return {
        "certify": (["--max-branches", "2000"], {**METHOD_INT, "--max-branches": int_bad(1),
                                                "--max-entries": int_bad(1)},
                    [["--top-k", "5"], ["--depth", "7"], ["/nonexistent.json"], [tmp]]),
        "mc": (["--samples", "20", "--vocab", "50"],
               {**METHOD_INT, "--samples": int_bad(2), "--vocab": int_bad(2, 2**18), "--temperature": TEMP_BAD,
                "--sparse": int_bad(1, 2**18), "--pair-seed": SEED_BAD, "--seed": SEED_BAD,
                "--alpha": float_bad(0.0, 1.0, ["0", "1"]), "--min-expected": float_bad(1.0, extra=["0.5"]),
                "--mismatch": ["x", "", "nan", "inf", "-1", "1e999", "5000", "1\n2"], "--max-work": int_bad(1),
                "--max-entries": int_bad(1)},
               [["--top-k", "51"], ["--samples", str(10**9)], ["--depth", str(10**12)], ["--budget", str(10**15)],
                ["--sparse", "3", "--no-sparse"]]),
        "sweep": (sweep_base, {"--vocab": int_bad(2, 2**18), "--sparse": int_bad(1, 2**18),
                               "--temperatures": TEMP_BAD, "--steps": int_bad(2), "--seed": SEED_BAD,
                               "--workers": int_bad(1, os.cpu_count() or 1), "--max-work": int_bad(1),
                               "--trees": ["", "1,2", "0,1,1", "a,b,c", "1,2,3,4", BIG + ",1,1", "1,1," + LONG],
                               "--methods": ["", " ", "nosuch", "rheo:zz=1", "rheo:m=x"],
                               "--mismatch": ["x", "", "nan", "inf", "-1", "5000"],
                               "--stem": ["", ".", "..", "a/b", "/x"]},
                  [["--trees", "51,2,4"], ["--steps", str(10**8)], ["--out", "/proc/x"]]),
        "counterexample": (["--instances", "2"], {**METHOD_INT, "--instances": int_bad(1, 10**6),
                                                  "--seed": SEED_BAD, "--max-vocab": int_bad(3, 8),
                                                  "--max-branches": int_bad(1), "--workers": int_bad(1, os.cpu_count() or 1)},
                           [["--top-k", "5"], ["--depth", "1"], ["--budget", "2"], ["--out", tmp],
                            ["--out", "/nonexistent/x.json"], ["--max-vocab", "8", "--top-k", "8", "--budget", "16",
                                                               "--depth", "4", "--instances", "100000"]]),
        "instance": ([], {"--vocab": int_bad(1), "--horizon": int_bad(0), "--seed": SEED_BAD,
                          "--mismatch": float_bad(0.0, 1.0), "--max-entries": int_bad(1)},
                     [["--vocab", "100000", "--horizon", "5"], ["--kind", "logits", "--temperature", "1e-9"],
                      ["--kind", "logits", "--temperature", "0"], ["--kind", "weights", "--temperature", "1"],
                      ["--kind", "nosuch"]]),
        "methods": ([], {}, [["--json", "x"], ["--nosuch"], ["x\ny"], ["--json=1"], ["-" + LONG]]),
        "decode": (["--max-new-tokens", "5"], {**METHOD_INT, "--temperature": TEMP_BAD,
                                               "--max-new-tokens": int_bad(1), "--target-top-k": int_bad(1),
                                               "--target-top-p": float_bad(0.0, 1.0, ["0"]),
                                               "--draft-temperature": TEMP_BAD + ["0"], "--seed": SEED_BAD,
                                               "--threads": int_bad(1, os.cpu_count() or 1)},
                   [["--threads", "100000"], ["--max-new-tokens", "100000"], ["--target-top-k", "100000"],
                    ["--top-k", "1000"], ["--prompt", ""], ["--prompt", "é"], ["--draft", "int4"],
                    ["--device", "nosuch"]]),
        "audit": (["--verifier", "rheotheory.audit.examples:chain_rejection", "--setting", "k=1 generic", "--runs", "20",
                   "--no-companion"],
                  {"--runs": int_bad(20), "--vocab": int_bad(2, 64), "--seed": SEED_BAD,
                   "--alpha": float_bad(0.0, 1.0, ["0", "1"]), "--kind": ["", "dag", "chain\n"],
                   "--verifier": ["", ":", "x:", ":f", "a:b:c", "/nonexistent.py:f", "os:path", "os:getcwd"],
                   "--engine": ["", "nosuch"], "--setting": ["", "zzz"]},
                  [["--list", "--engine", "transformers"], ["--planted", "x"], ["--engine", "rheotheory", "--kind", "tree"]]),
        "bench": (["--max-new-tokens", "3", "--temperatures", "1", "--methods", "eagle"],
                  {"--temperatures": TEMP_BAD + ["1,,0", ","], "--methods": ["", ",", "a,,b", "nosuch"],
                   "--max-new-tokens": int_bad(1), "--repeats": int_bad(1, 1000), "--seed": SEED_BAD,
                   "--threads": int_bad(1, os.cpu_count() or 1), "--target-top-p": float_bad(0.0, 1.0, ["0"])},
                  [["--max-new-tokens", "100000"], ["--preset", "rheo"], ["--top-k", "1000"]]),
    }


def invocations(tmp: str, per: int, seed: int = 0) -> dict:
    """Subcommand -> up to ``per`` argv lists (single bad flags first, then random pairs of them)."""
    rng = random.Random(seed)
    out = {}
    for cmd, (base, flags, tails) in grammar(tmp).items():
        # NOTE: a flag of another family is invalid everywhere: unknown to instance/methods/sweep,
        # and bench's base method (eagle) has none of these fields
        singles = [[flag, v] for flag, vals in flags.items() for v in vals]
        singles += [list(t) for t in FAMILY_BAD] + tails
        runs = [[cmd, *base, *s] for s in singles]
        while len(runs) < per and len(singles) > 1:
            a, b = rng.sample(singles, 2)
            runs.append([cmd, *base, *a, *b])
        out[cmd] = runs[:per] if per < len(runs) else runs
    return out


def classify(rc, err: str, timed_out: bool) -> str:
    if timed_out:
        return "hang"
    if "MemoryError" in err or rc in (-signal.SIGKILL, 137):
        return "memory"
    if "Traceback" in err or rc is None or rc < 0 or rc not in (0, 1, 2):
        return "crash"
    if rc in (0, 1):  # NOTE: 1 is certify's and mc's LOSSY verdict, an accepted run
        return "accepted"
    if err.count("\n") != 1 or not err.endswith("\n"):
        return "crash"  # NOTE: more than one line is not a clean error either
    return "clean"


def _limit(memory: int):
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))


def run_forked(argv, timeout: float, memory: int):
    """Run ``main(argv)`` in a forked child; (exit code or -signal, stderr text, timed out)."""
    from rheotheory.cli import main

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        try:
            os.close(r)
            devnull = os.open(os.devnull, os.O_RDWR)
            os.dup2(devnull, 0)
            os.dup2(devnull, 1)
            os.dup2(w, 2)
            sys.stdout = open(1, "w", closefd=False)
            sys.stderr = open(2, "w", closefd=False)
            _limit(memory)
            code = main(argv)
        except BaseException:  # noqa: BLE001 - report any escape as the crash it is
            import traceback

            traceback.print_exc()
            code = 1
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code if isinstance(code, int) else 1)
    os.close(w)
    chunks, t0, timed_out = [], time.monotonic(), False
    while True:
        left = timeout - (time.monotonic() - t0)
        if left <= 0:
            timed_out = True
            os.kill(pid, signal.SIGKILL)
            break
        ready, _, _ = select.select([r], [], [], left)
        if ready:
            data = os.read(r, 65536)
            if not data:
                break
            chunks.append(data)
    os.close(r)
    _, status = os.waitpid(pid, 0)
    rc = os.waitstatus_to_exitcode(status)
    return rc, b"".join(chunks).decode("utf-8", "replace"), timed_out


def run_spawned(argv, timeout: float, memory: int):
    try:
        p = subprocess.run([sys.executable, "-m", "rheotheory.cli", *argv], capture_output=True, text=True,
                           timeout=timeout, preexec_fn=lambda: _limit(memory))
    except subprocess.TimeoutExpired as e:
        return None, (e.stderr or b"").decode() if isinstance(e.stderr, bytes) else (e.stderr or ""), True
    return p.returncode, p.stderr, False


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per", type=int, default=300, help="inputs per subcommand (default 300)")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per input (default 30)")
    ap.add_argument("--memory", type=int, default=4 * 2**30, help="address-space limit in bytes (default 4 GiB)")
    ap.add_argument("--spawn", action="store_true", help="fresh interpreters instead of forked children")
    ap.add_argument("--only", default=None, help="one subcommand")
    ap.add_argument("--out", default=None, help="write the counts and the failing inputs as JSON here")
    args = ap.parse_args()
    if not args.spawn:
        import rheotheory.cli  # noqa: F401 - imported once, before the forks
        import torch  # noqa: F401 - decode/bench import it; a fork then inherits it

        torch.set_num_threads(1)
    runner = run_spawned if args.spawn else run_forked
    report, bad = {}, []
    with tempfile.TemporaryDirectory() as tmp:
        for cmd, runs in invocations(tmp, args.per).items():
            if args.only and cmd != args.only:
                continue
            counts = Counter()
            t0 = time.perf_counter()
            for argv in runs:
                rc, err, timed_out = runner(argv, args.timeout, args.memory)
                kind = classify(rc, err, timed_out)
                counts[kind] += 1
                if kind != "clean":
                    bad.append({"argv": [a if len(a) < 80 else a[:40] + f"...({len(a)} chars)" for a in argv],
                                "outcome": kind, "rc": rc, "stderr": err[-600:]})
            report[cmd] = {"inputs": len(runs), **{k: counts[k] for k in
                           ("clean", "crash", "hang", "memory", "accepted")},
                           "seconds": round(time.perf_counter() - t0, 1)}
            print(f"{cmd:15s} " + " ".join(f"{k}={v}" for k, v in report[cmd].items()), flush=True)
    for b in bad:
        print(json.dumps(b)[:800])
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"report": report, "failures": bad}, f, indent=1)


if __name__ == "__main__":
    main()
