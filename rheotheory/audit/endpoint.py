r"""A deployed server audited from outside: ``rheo audit --endpoint URL --reference URL``.

The server under audit (speculative decoding on) and a reference serving the same model without
it are two OpenAI-compatible endpoints (``POST /v1/completions``). The audit asks both for the
first ``L`` tokens of one prompt, ``N`` times each with the same sampling settings and a fresh
per-request seed, and tests whether the two laws of those ``L`` tokens are the same: lossless
speculative decoding leaves the law of the model's samples unchanged, whatever its drafts.
Nothing of either server is assumed beyond the API; neither law is known, so the test compares
samples (a two-sample test), and its power is stated for the law over its cells.

1. **The pilot** (``pilot`` requests to the reference) fixes the cells before the test looks at
   anything: the set ``F`` of token prefixes (of length ``<= L``) that at least
   ``min_expected * pilot / N`` pilot runs start with, closed under prefixes; a run's cell is
   its longest prefix in ``F``. The cells partition every possible output, so the test is of the
   law of the ``L`` tokens coarsened to them.
2. **The runs**: ``N`` requests to each endpoint, interleaved, ``jobs`` at a time, each with
   seed ``[seed, endpoint, i]``; the outputs are token sequences (the token ids or strings the
   response's ``logprobs`` lists; the text when it lists none).
3. **The test**: Pearson's chi-square of homogeneity on the ``2 x C`` table (cells of expected
   count below :data:`MIN_EXPECTED` merged into one), ``df = C - 1``; the verdict is ``lossy``
   iff ``p < alpha``.
4. **The power**: with ``d`` the TV between the two laws over the cells, the non-centrality is at
   least ``2 N d^2`` (``(N/2) sum (p1 - p2)^2 / pbar >= (N/2) (2d)^2`` by Cauchy-Schwarz), so the
   stated ``min_detectable_tv`` is ``sqrt(lambda* / (2N))``, ``lambda*`` the non-centrality at which
   the test at ``alpha`` rejects with probability :data:`rheotheory.stats.POWER`.

A planted companion is the same audit of a server that is lossy on purpose (llama-server's
synthetic acceptance, ``--spec-synth-rates``); the slow tier's test runs it beside.
"""

from __future__ import annotations

import json
import math
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from ..errors import RheoError

__all__ = ["EndpointResult", "audit_endpoint", "complete", "cells_from_pilot", "homogeneity", "MIN_EXPECTED",
           "DEFAULT_RUNS", "DEFAULT_TOKENS", "REQUEST_TIMEOUT"]

#: Expected count (per endpoint) under which cells are merged, and the pilot's frequency rule.
MIN_EXPECTED = 10.0

#: Runs per endpoint by default, tokens tested by default.
DEFAULT_RUNS, DEFAULT_TOKENS = 1000, 4

#: Seconds one request may take.
REQUEST_TIMEOUT = 120.0


@dataclass(frozen=True)
class EndpointResult:
    """The audit of a server against its reference (plain data; :meth:`to_dict` is ``--json``).

    Attributes
    ----------
    endpoint, reference : str
        The two base URLs.
    verdict : str
        ``lossless`` (not rejected) or ``lossy``.
    p_value : float
    alpha : float
    runs : int
        Requests per endpoint (the pilot apart).
    tokens : int
        ``L``.
    cells : int
        Cells of the test after merging.
    min_detectable_tv : float
        The TV between the two laws over the cells detected with power 0.8.
    statistic : float
    df : int
    worst : dict
        The cell of largest contribution: its prefix and both counts.
    seconds : float
        Wall seconds of the audit.
    settings : dict
        The prompt and sampling settings sent.
    pilot : int
        Pilot requests to the reference.
    unit : str
        What the outcomes are made of: ``token ids``, ``token strings`` or ``text``.
    """

    endpoint: str
    reference: str
    verdict: str
    p_value: float
    alpha: float
    runs: int
    tokens: int
    cells: int
    min_detectable_tv: float
    statistic: float
    df: int
    worst: dict
    seconds: float
    settings: dict = field(default_factory=dict)
    pilot: int = 0
    unit: str = "token ids"

    def to_dict(self) -> dict:
        """Plain data.

        Returns
        -------
        dict
        """
        return dict(self.__dict__)

    def summary(self) -> str:
        """One line: the verdict, ``p``, ``N`` and the power statement.

        Returns
        -------
        str
        """
        said = "not rejected" if self.verdict == "lossless" else "lossy (rejected)"
        return (f"{self.endpoint} against {self.reference}: {said} at alpha = {self.alpha:g}: p = {self.p_value:.3g}, "
                f"N = {self.runs} runs of each; detects, with power 0.8, a TV >= {self.min_detectable_tv:.3g} between "
                f"the two laws of the first {self.tokens} tokens over {self.cells} cells ({self.unit})")


def _post(url: str, body: dict, timeout: float = REQUEST_TIMEOUT) -> dict:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as e:
        raise RheoError(f"{url} answered HTTP {e.code}: {e.read()[:200]!r}") from None
    except (urllib.error.URLError, OSError, json.JSONDecodeError) as e:
        raise RheoError(f"{url} did not answer: {e}") from None


def _tokens_of(choice: dict):
    """The generated tokens of one completion choice, and what they are."""
    lp = choice.get("logprobs")
    if isinstance(lp, dict):
        if isinstance(lp.get("content"), list) and lp["content"]:
            items = lp["content"]
            if all("id" in t for t in items):
                return tuple(int(t["id"]) for t in items), "token ids"
            return tuple(str(t.get("token")) for t in items), "token strings"
        if isinstance(lp.get("tokens"), list):
            return tuple(str(t) for t in lp["tokens"]), "token strings"
    return (str(choice.get("text", "")),), "text"


def complete(base: str, prompt: str, tokens: int, sampling: dict, seed: int, model: str | None = None,
             timeout: float = REQUEST_TIMEOUT) -> tuple:
    """One completion of ``tokens`` tokens from ``base`` (an OpenAI-compatible server).

    Parameters
    ----------
    base : str
        The server's base URL (``http://127.0.0.1:8080``).
    prompt : str
    tokens : int
        ``max_tokens``.
    sampling : dict
        Sampling settings sent as they are (``temperature``, ``top_p``, ...).
    seed : int
        The request's ``seed``.
    model : str, optional
        The ``model`` field.
    timeout : float, default REQUEST_TIMEOUT

    Returns
    -------
    tuple
        ``(outcome, unit)``: the generated tokens (ids, strings, or the text alone) and what they are.

    Raises
    ------
    rheotheory.errors.RheoError
        The server did not answer, or answered without a completion.
    """
    body = dict(prompt=prompt, max_tokens=int(tokens), seed=int(seed), logprobs=1, n_probs=1, stream=False,
                **sampling)
    if model:
        body["model"] = model
    d = _post(base.rstrip("/") + "/v1/completions", body, timeout)
    choices = d.get("choices") if isinstance(d, dict) else None
    if not choices:
        raise RheoError(f"{base}/v1/completions answered without choices: {str(d)[:200]}")
    return _tokens_of(choices[0])


def cells_from_pilot(pilot: list, runs: int, min_expected: float = MIN_EXPECTED) -> set:
    """The prefix set ``F`` of the module docstring, step 1, from the pilot's outcomes.

    Parameters
    ----------
    pilot : list of tuple
        The pilot's outcomes.
    runs : int
        ``N``, the runs per endpoint the test will make.
    min_expected : float, default MIN_EXPECTED

    Returns
    -------
    set of tuple
        Prefix-closed (the empty prefix always in it).
    """
    need = min_expected * len(pilot) / max(runs, 1)
    counts: dict = {}
    for w in pilot:
        for j in range(1, len(w) + 1):
            counts[w[:j]] = counts.get(w[:j], 0) + 1
    keep = {()}
    for u, c in counts.items():
        if c >= need and all(u[:j] in counts and counts[u[:j]] >= need for j in range(1, len(u))):
            keep.add(u)
    return keep


def _cell(w: tuple, frequent: set) -> tuple:
    for j in range(len(w), -1, -1):
        if w[:j] in frequent:
            return w[:j]
    return ()


def homogeneity(a: list, b: list, frequent: set, alpha: float, min_expected: float = MIN_EXPECTED) -> dict:
    """Pearson's test of homogeneity of two samples over the cells of ``frequent`` (module
    docstring, steps 3 and 4).

    Parameters
    ----------
    a, b : list of tuple
        The outcomes of the server and of the reference (equal sizes).
    frequent : set of tuple
        The prefix set (:func:`cells_from_pilot`).
    alpha : float
    min_expected : float, default MIN_EXPECTED

    Returns
    -------
    dict
        ``statistic``, ``df``, ``p_value``, ``cells``, ``min_detectable_tv`` and ``worst``.
    """
    from scipy import stats as sps

    from ..stats import detectable_tv

    keys = sorted(frequent, key=lambda u: (len(u), str(u)))
    index = {u: i for i, u in enumerate(keys)}
    ca, cb = np.zeros(len(keys)), np.zeros(len(keys))
    for w in a:
        ca[index[_cell(w, frequent)]] += 1
    for w in b:
        cb[index[_cell(w, frequent)]] += 1
    tot = ca + cb
    order = np.argsort(-tot, kind="stable")
    groups, rest = [], []
    for i in order.tolist():
        (groups if tot[i] / 2 >= min_expected else rest).append([i])
    if rest:
        groups.append([i for g in rest for i in g])
    ga = np.array([ca[g].sum() for g in groups])
    gb = np.array([cb[g].sum() for g in groups])
    gt = ga + gb
    keep = gt > 0
    ga, gb, gt = ga[keep], gb[keep], gt[keep]
    groups = [g for g, k in zip(groups, keep.tolist()) if k]
    na, nb = ga.sum(), gb.sum()
    ea, eb = gt * na / (na + nb), gt * nb / (na + nb)
    contrib = (ga - ea) ** 2 / ea + (gb - eb) ** 2 / eb
    df = len(groups) - 1
    stat = float(contrib.sum())
    p = float(sps.chi2.sf(stat, df)) if df > 0 else 1.0
    j = int(np.argmax(contrib)) if len(contrib) else 0
    g = groups[j] if groups else []
    name = ("rest (" + str(len(g)) + " rare cells)") if len(g) > 1 else " ".join(map(str, keys[g[0]])) if g else ""
    # NOTE: the power is the two-sample bound lambda >= 2 N d^2 (module docstring): d = sqrt(lambda* / (2N))
    tv = detectable_tv(max(df, 1), int(na), alpha) * math.sqrt(2.0)
    return dict(statistic=stat, df=df, p_value=p, cells=len(groups), min_detectable_tv=tv,
                worst=dict(cell=name or "(empty prefix)", endpoint=int(ga[j]) if len(ga) else 0,
                           reference=int(gb[j]) if len(gb) else 0))


def audit_endpoint(endpoint: str, reference: str, prompt: str, *, tokens: int = DEFAULT_TOKENS,
                   runs: int | None = None, budget: float | None = None, sampling: dict | None = None,
                   alpha: float = 0.01, seed: int = 0, pilot: int | None = None, jobs: int = 4,
                   model: str | None = None, progress=None, on_estimate=None) -> EndpointResult:
    """Audit an OpenAI-compatible server against a reference (module docstring).

    Parameters
    ----------
    endpoint : str
        Base URL of the server under audit (speculative decoding on).
    reference : str
        Base URL of the same model served without it.
    prompt : str
        The prompt.
    tokens : int, default 4
        ``L``: the tokens whose law is tested.
    runs : int, optional
        Requests to each endpoint (default :data:`DEFAULT_RUNS`, or from ``budget``).
    budget : float, optional
        Wall seconds for the requests; the runs follow from the pilot's timing (at least 50).
    sampling : dict, optional
        Sampling settings sent with every request (default ``{"temperature": 1.0}``).
    alpha : float, default 0.01
    seed : int, default 0
        Seeds of the requests.
    pilot : int, optional
        Pilot requests to the reference (default ``runs // 2``, at least 50).
    jobs : int, default 4
        Requests in flight at once.
    model : str, optional
        The ``model`` field of the requests.
    progress : callable, optional
        ``progress(n)`` after each request.
    on_estimate : callable, optional
        ``on_estimate(seconds, requests)`` once the size is known.

    Returns
    -------
    EndpointResult

    Raises
    ------
    rheotheory.errors.RheoError
        Bad arguments, or a server that does not answer (one line).
    """
    if not 1 <= int(tokens) <= 64:
        raise RheoError(f"--tokens must be in 1..64, got {tokens!r}")
    if runs is not None and runs < 20:
        raise RheoError(f"--runs must be >= 20, got {runs!r}")
    if not 0 < alpha < 1:
        raise RheoError(f"--alpha must be in (0, 1), got {alpha!r}")
    for url in (endpoint, reference):
        if not str(url).startswith(("http://", "https://")):
            raise RheoError(f"an endpoint is a base URL such as http://127.0.0.1:8080, got {url!r}")
    sampling = {"temperature": 1.0} if sampling is None else dict(sampling)
    t0 = time.perf_counter()

    def seed_of(which: int, i: int) -> int:
        return int(np.random.SeedSequence([int(seed), which, i]).generate_state(1)[0]) % (2**31 - 1)

    def batch(url: str, which: int, n: int, start: int = 0) -> list:
        def one(i):
            out = complete(url, prompt, tokens, sampling, seed_of(which, start + i), model)
            if progress is not None:
                progress(1)
            return out
        with ThreadPoolExecutor(max_workers=max(1, int(jobs))) as ex:
            return list(ex.map(one, range(n)))

    probe = time.perf_counter()
    first = batch(reference, 2, 10)
    per = (time.perf_counter() - probe) / 10
    units = {u for _, u in first}
    if runs is None:
        runs = DEFAULT_RUNS if budget is None else max(50, int(budget / max(per, 1e-6) / 3))
    n_pilot = max(50, runs // 2) if pilot is None else int(pilot)
    if on_estimate is not None:
        on_estimate(per * (2 * runs + n_pilot), 2 * runs + n_pilot)
    pilot_out = [w for w, _ in first] + [w for w, _ in batch(reference, 2, max(0, n_pilot - 10), 10)]
    got_a = batch(endpoint, 0, runs)
    got_b = batch(reference, 1, runs)
    units |= {u for _, u in got_a} | {u for _, u in got_b}
    if len(units) > 1:
        raise RheoError(f"the two endpoints answer in different units ({', '.join(sorted(units))}); serve both with "
                        "the same server software")
    frequent = cells_from_pilot(pilot_out, runs)
    test = homogeneity([w for w, _ in got_a], [w for w, _ in got_b], frequent, alpha)
    verdict = "lossy" if test["p_value"] < alpha else "lossless"
    return EndpointResult(endpoint, reference, verdict, test["p_value"], float(alpha), runs, int(tokens), test["cells"],
                          test["min_detectable_tv"], test["statistic"], test["df"], test["worst"],
                          time.perf_counter() - t0, dict(prompt=prompt, model=model, **sampling), n_pilot,
                          units.pop())
