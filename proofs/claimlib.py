"""How a proof script reports its claims: one ``CLAIM {json}`` line each, read by run_all.py.

Statuses: ``proved symbolically``, ``verified exhaustively``, ``checked exactly on random instances``
(exact comparison on the seeded random instances named: evidence, not a proof), ``refuted`` (the
claim as stated is false and the evidence holds a counterexample), ``FAILED`` (the script's
expectation did not hold: it exits non-zero).
"""

from __future__ import annotations

import json
import sys
import time

PROVED = "proved symbolically"
VERIFIED = "verified exhaustively"
CHECKED = "checked exactly on random instances"
REFUTED = "refuted"
FAILED = "FAILED"

_failed = False
_t0 = time.perf_counter()


def claim(cid: str, statement: str, status: str, evidence: str, expected: str | None = None) -> None:
    """Report one claim. ``expected`` (default: the status itself unless FAILED) is the status the
    script must reach; anything else makes the script exit non-zero."""
    global _failed
    ok = status != FAILED and (expected is None or status == expected)
    if not ok:
        _failed = True
    print("CLAIM " + json.dumps({"id": cid, "statement": statement, "status": status if ok or status == FAILED
                                 else f"{FAILED} (got {status}, expected {expected})", "evidence": evidence}),
          flush=True)


def finish() -> None:
    print(f"# {time.perf_counter() - _t0:.1f} s", flush=True)
    sys.exit(1 if _failed else 0)
