"""``rheo audit --endpoint URL --reference URL``: a deployed server audited from outside
(rheotheory.audit.endpoint).

The default tier drives two small OpenAI-compatible servers written here (``http.server`` on
127.0.0.1, a fixed law of 3 tokens over 4 values, each request seeded); the slow tier two
llama-server processes from the pinned build (skipped with the reason when it is absent).
Statistical tests state alpha, seed and N; the correct pair has a biased companion that must fail.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from rheotheory.audit.endpoint import audit_endpoint, cells_from_pilot, homogeneity
from rheotheory.cli import main
from rheotheory.errors import RheoError

#: The law of each token given the previous one (a Markov chain over 4 tokens), and the first's.
FIRST = np.array([0.4, 0.3, 0.2, 0.1])
NEXT = np.array([[0.5, 0.2, 0.2, 0.1], [0.1, 0.6, 0.2, 0.1], [0.25, 0.25, 0.25, 0.25], [0.7, 0.1, 0.1, 0.1]])


def _server(bias: float = 0.0):
    """A completion server sampling the chain above; ``bias`` moves that much mass of every
    token's law onto token 0 (a lossy server: TV ``bias`` per position where token 0 is short)."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):  # noqa: N802 (http.server's name)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            rng = np.random.default_rng(int(body["seed"]))
            law, out = FIRST, []
            for _ in range(int(body["max_tokens"])):
                law = (1 - bias) * law + bias * np.eye(4)[0]
                out.append(int(rng.choice(4, p=law)))
                law = NEXT[out[-1]]
            answer = {"choices": [{"text": "", "logprobs": {"content": [{"id": t, "token": str(t)} for t in out]}}]}
            data = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, f"http://127.0.0.1:{srv.server_address[1]}"


@pytest.fixture(scope="module")
def servers():
    made = [_server(), _server(), _server(bias=0.15)]
    yield [url for _, url in made]
    for srv, _ in made:
        srv.shutdown()


def test_the_cells_partition_every_outcome_and_follow_the_pilot():
    pilot = [(0, 1), (0, 1), (0, 2), (1, 1)] * 25
    frequent = cells_from_pilot(pilot, runs=100, min_expected=20)
    assert frequent == {(), (0,), (0, 1), (0, 2), (1,), (1, 1)}
    test = homogeneity([(0, 1)] * 50 + [(3, 3)] * 50, [(0, 1)] * 100, frequent, 0.01, min_expected=5)
    assert test["p_value"] < 1e-10 and test["cells"] == 2


def test_a_lossless_server_is_not_rejected_and_a_biased_one_is(servers):
    """alpha 0.01, seed 0, N = 1500 requests to each server, L = 3 tokens: the same law is not
    rejected (it states TV >= 0.11: a two-sample test, sqrt(2) above a one-sample one), and a
    server that moves 15% of each position's mass onto one token (TV about 0.1 at the first
    token) is rejected."""
    ok = audit_endpoint(servers[0], servers[1], "x", tokens=3, runs=1500, jobs=4)
    assert ok.verdict == "lossless" and ok.unit == "token ids", ok.summary()
    assert ok.min_detectable_tv < 0.15 and ok.cells > 10
    bad = audit_endpoint(servers[2], servers[1], "x", tokens=3, runs=1500, jobs=4)
    assert bad.verdict == "lossy" and bad.p_value < 1e-6, bad.summary()


def test_the_command_line_prints_the_verdict_and_its_power(servers, capsys):
    code = main(["audit", "--endpoint", servers[2], "--reference", servers[1], "--tokens", "2", "--runs", "600",
                 "--no-progress", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert code == 1 and d["verdict"] == "lossy" and d["runs"] == 600 and d["tokens"] == 2
    assert d["min_detectable_tv"] > 0 and d["settings"]["temperature"] == 1.0


@pytest.mark.parametrize("argv, message", [
    (["--endpoint", "http://127.0.0.1:1"], "--endpoint needs --reference URL"),
    (["--endpoint", "localhost:8080", "--reference", "http://127.0.0.1:1"], "is a base URL"),
    (["--verifier", "rheotheory.audit.examples:chain_rejection", "--tokens", "3"], "apply to --endpoint"),
    (["--endpoint", "http://127.0.0.1:1", "--reference", "http://127.0.0.1:1", "--kind", "tree"],
     "do not apply to --endpoint"),
])
def test_bad_endpoint_input_gets_one_line_and_exit_2(argv, message, capsys):
    code = main(["audit", *argv, "--runs", "20", "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and message in err, err


def test_a_server_that_does_not_answer_is_one_line():
    with pytest.raises(RheoError, match="did not answer"):
        audit_endpoint("http://127.0.0.1:9", "http://127.0.0.1:9", "x", runs=20)


# -- the slow tier: two llama-server processes -------------------------------------------------------


@pytest.mark.slow
def test_a_local_llama_server_pair():
    """llama-server with a draft model (greedy drafts: sample-and-match) against the same target
    served alone, both on 127.0.0.1, one slot each; alpha 0.01, seed 0, N = 400 requests each,
    L = 4 tokens of 'My favourite colour is' at T = 1 with llama.cpp's default chain: not rejected;
    the same server with synthetic acceptance (drafts kept at random: lossy by design, the
    planted companion) is rejected at the same size."""
    pytest.importorskip("gguf")
    from rheotheory.audit.engines import llamacpp

    try:
        llamacpp.binaries(names=("llama-server",))
        target, draft = llamacpp.pair()
    except RheoError as e:
        pytest.skip(str(e))
    spec = ("-md", str(draft), "--spec-type", "draft-simple", "--spec-draft-n-max", "3", "-td", "1", "-tbd", "1")
    with llamacpp.Server(target) as ref, llamacpp.Server(target, spec) as fast, \
            llamacpp.Server(target, spec + ("--spec-synth-rates", "0.9,0.8,0.7")) as synth:
        url = lambda s: f"http://127.0.0.1:{s.port}"  # noqa: E731
        ok = audit_endpoint(url(fast), url(ref), "My favourite colour is", tokens=4, runs=400, jobs=1)
        bad = audit_endpoint(url(synth), url(ref), "My favourite colour is", tokens=4, runs=400, jobs=1)
    assert ok.verdict == "lossless", ok.summary()
    assert bad.verdict == "lossy", bad.summary()
