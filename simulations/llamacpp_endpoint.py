"""``rheo audit --endpoint`` on a local pair of llama-server processes.

Usage::

    python simulations/llamacpp_endpoint.py [--runs 400] [--tokens 4] [--out DIR]

Starts, on 127.0.0.1, llama-server serving SmolLM2-135M-Instruct (the pinned build of
``rheotheory.audit.engines.llamacpp``; one slot, one thread) three times: alone (the reference),
with its perturbed draft model (``--spec-draft-n-max 3``: greedy drafts verified by
sample-and-match), and with the draft and synthetic acceptance (``--spec-synth-rates 0.9,0.8,0.7``:
drafts kept at random, lossy on purpose: the planted companion). Then audits each speculative
server against the reference as ``rheo audit --endpoint URL --reference URL --runs N --tokens L``
does (prompt 'My favourite colour is', T = 1 with llama.cpp's default chain, alpha 0.01, seed 0),
and writes ``DIR/llamacpp_endpoint.json``: the command, N, the TV detected with power 0.8, the
verdict and the wall time of each audit. The servers stop when the script ends.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROMPT = "My favourite colour is"


def render_md(folder: Path) -> str:
    """The guide's table of ``llamacpp_endpoint.json``."""
    d = json.loads((Path(folder) / "llamacpp_endpoint.json").read_text())
    lines = [f"llama.cpp {d['llamacpp']}, SmolLM2-135M-Instruct on 127.0.0.1 (`{d['command']}`), prompt "
             f"'{d['prompt']}', L = {d['tokens']}, T = 1 with llama.cpp's default chain, alpha 0.01, seed 0, "
             f"{d['machine']}.", "",
             "| server audited against the reference | N (each), cells | TV detected (power 0.8) | p | verdict "
             "| wall s |", "| --- | ---: | ---: | ---: | --- | ---: |"]
    for r in d["audits"]:
        verdict = "not rejected" if r["verdict"] == "lossless" else f"**{r['verdict']}**"
        lines.append(f"| {r['server']} | {r['runs']}, {r['cells']} | {r['min_detectable_tv']:.3f} | "
                     f"{r['p_value']:.3g} | {verdict} | {r['seconds']:.0f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    import os

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=400)
    ap.add_argument("--tokens", type=int, default=4)
    ap.add_argument("--jobs", type=int, default=1, help="requests in flight (the servers have one slot each)")
    ap.add_argument("--out", type=Path, default=ROOT / "simulations" / "results" / "llamacpp_endpoint")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from rheotheory.audit.endpoint import audit_endpoint
    from rheotheory.audit.engines import llamacpp

    target, draft = llamacpp.pair()
    spec = ("-md", str(draft), "--spec-type", "draft-simple", "--spec-draft-n-max", "3", "-td", "1", "-tbd", "1")
    servers = {"speculative (greedy draft, sample-and-match)": spec,
               "speculative with synthetic acceptance (planted)": spec + ("--spec-synth-rates", "0.9,0.8,0.7")}
    audits = []
    with llamacpp.Server(target) as ref:
        for name, extra in servers.items():
            with llamacpp.Server(target, extra) as srv:
                t0 = time.perf_counter()
                res = audit_endpoint(f"http://127.0.0.1:{srv.port}", f"http://127.0.0.1:{ref.port}", PROMPT,
                                     tokens=args.tokens, runs=args.runs, jobs=args.jobs)
                audits.append(dict(server=name, runs=res.runs, pilot=res.pilot, cells=res.cells,
                                   min_detectable_tv=res.min_detectable_tv, p_value=res.p_value, verdict=res.verdict,
                                   unit=res.unit, worst=res.worst, seconds=round(time.perf_counter() - t0, 1)))
                print(res.summary(), f"({audits[-1]['seconds']} s)", flush=True)
    from rheotheory.provenance import results_command

    made_by = results_command("simulations/llamacpp_endpoint.py", argv)
    out = dict(command=made_by, llamacpp=llamacpp.PINNED,
               prompt=PROMPT, tokens=args.tokens,
               machine=os.environ.get("RHEO_MACHINE_NOTE") or "machine not described", audits=audits)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "llamacpp_endpoint.json").write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
