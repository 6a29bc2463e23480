r"""EAGLE's tree decoding at T > 0 (``eagle-llm`` 1.2.1, ``eagle/model/ea_model.py``, ``eagle/model/utils.py``).

The audited code path is EAGLE's own generation loop, ``EaModel.eagenerate(input_ids,
temperature, top_p, top_k, max_new_tokens, tree_choices)``, run unchanged:
``prepare_logits_processor`` builds the sampling settings, ``generate_tree_buffers`` the static
tree, ``initialize_tree`` samples the first token, and each step runs ``generate_candidates``,
``tree_decoding``, ``evaluate_posterior`` (the verification: recursive rejection over the
children of a node, Python's ``random.random()`` as the coin, the residual
:math:`\mathrm{norm}((p - q)_+)` after each rejected child, ``q`` with the earlier siblings
removed) and ``update_inference_inputs`` (which draws the next token from the law
``evaluate_posterior`` returns, ``sample_p``, with ``torch.multinomial``).

Only the two networks are replaced, by toy laws whose exact values are known:

- the **target** (``base_model``): its logits after the prompt and any continuation ``u`` are
  drawn afresh for every ``u`` from a generator seeded with ``(seed, 0, len(u), *u)``
  (:func:`_target_logits`); position- and prefix-dependent, optionally with tokens the target
  forbids (logit :math:`-\infty`). A stand-in trunk returns them as its hidden states and the
  head is the identity, so that EAGLE's ``forward`` and ``tree_decoding`` read them where they
  read a model's logits; in a tree pass the trunk finds each node's ancestors in the tree mask
  EAGLE installs (``initialize_tree``);
- the **draft head** (``ea_layer.topK_genrate``): for each node of the tree that has children
  (EAGLE's rows: the root, then those nodes level by level in EAGLE's sorted order), toy draft
  logits after the prefix and the node's path (the target's plus Gaussian noise,
  :func:`_draft_logits`), from which the children are drawn by EAGLE's own
  ``eagle.model.cnets.Model.sample`` (the logits processor, a softmax, ``torch.multinomial``
  without replacement, the conditional probability of each draw given the earlier siblings).
  The head returns EAGLE's triple (tokens, their conditional probabilities, the laws ``op``).

NOTE: EAGLE draws ``top_k = 10`` children per row. The vocabulary here has fewer tokens and
the trees read only the first ``m`` children of a row, so the head draws ``m`` and pads the row
to EAGLE's ``TOPK = 10`` columns (never read): the first ``m`` of ``k`` draws without
replacement have the same law for every ``k >= m`` (the audit tests that law too).

Randomness: EAGLE draws its coins from Python's global ``random`` and its tokens from torch's
global generator; each setting seeds both from ``(seed, index)`` before its runs (and restores
them after).

The law tested is the target's law of the first ``L = depth + 2`` generated tokens after the
sampling settings (:mod:`rheotheory.audit.sampling`, from the definitions: logits divided by
``T``, then top-p or top-k as transformers defines them), never with EAGLE's processors.

Planted companions, the same loop with one known bug: ``always-accept`` (EAGLE's coin
``random.random()`` returns 0, so every drafted child is accepted, as in vllm-ascend PR #13470)
and ``skip-residual`` (the head hands ``evaluate_posterior`` laws ``op`` of zeros, so a rejected
child leaves the target law as it is; chains only: with siblings EAGLE renormalises the masked
``op`` and zeros give NaN).

Finding (``benchmarks/audit_repro/eagle.py``): when the accepted path ends at a leaf of the tree
(every child along it accepted, or a leaf above the full depth), ``evaluate_posterior`` returns
``sample_p = torch.softmax(logits[best_candidate, accept_length - 1])``, the **raw** logits,
without the logits processor: the next token follows the law at ``T = 1`` without top-p/top-k
instead of the processed law. At ``T = 1`` without top-p/top-k the two coincide; every other
setting is lossy.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from ..core import Setting
from ..sampling import Sampling
from . import Engine, require

__all__ = ["ENGINE", "DEFAULT_RUNS", "SETTINGS", "TREES", "settings", "version", "generate"]

#: Runs per setting by default: enough to reject the chain at T = 1.5, whose law of 4 tokens is off
#: by a TV of 0.077 (benchmarks/audit_repro/eagle.py), not rejected at 2000.
DEFAULT_RUNS = 4000

#: Vocabulary of the toy laws (EAGLE's trees here read at most 4 children of a node).
VOCAB = 6

#: Standard deviation of the target's toy logits: laws of entropy about 1.2 nats (of log 6 = 1.79).
TARGET_SCALE = 1.5

#: Standard deviation of the noise added to the target's logits to make the draft's: the laws
#: differ by a TV of about 0.26 (one drafted token accepted with probability about 0.74), so that
#: whole paths are accepted often (the bonus position is reached) and children are rejected often
#: (the residual is exercised).
DRAFT_NOISE = 1.0

#: The prompt (EAGLE's loop needs one; the toy laws depend on the generated tokens only).
PROMPT = (1, 2, 3)

#: Static trees in EAGLE's format (paths of child indices from the root). ``mc_sim_7b_63 (depth 3)``
#: is EAGLE's default tree cut at depth 3, read from the installed package.
TREES = {
    "chain D=2": [[0], [0, 0]],
    "tree 2x2": [[0], [1], [0, 0], [0, 1], [1, 0]],
    "mc_sim_7b_63 (depth 3)": None,
}


@dataclass(frozen=True)
class EagleSetting:
    """One ``eagenerate`` configuration (plain data)."""

    tree: str  # a key of TREES
    sampling: Sampling  # temperature, top_p or top_k as eagenerate takes them
    target_zeros: float = 0.0  # fraction of the target's logits set to -inf (tokens it forbids)


#: The settings (name -> configuration). NOTE: one of top-p / top-k at a time: EAGLE's
#: ``prepare_logits_processor`` applies top-p before top-k, :mod:`rheotheory.audit.sampling` top-k first.
SETTINGS = {
    "chain D=2 T=1": EagleSetting("chain D=2", Sampling()),
    "tree 2x2 T=1": EagleSetting("tree 2x2", Sampling()),
    "mc_sim_7b_63 depth 3 T=1": EagleSetting("mc_sim_7b_63 (depth 3)", Sampling()),
    "tree 2x2 T=1 target zeros": EagleSetting("tree 2x2", Sampling(), target_zeros=0.3),
    "chain D=2 T=0.7": EagleSetting("chain D=2", Sampling(temperature=0.7)),
    "tree 2x2 T=0.7": EagleSetting("tree 2x2", Sampling(temperature=0.7)),
    "mc_sim_7b_63 depth 3 T=0.7": EagleSetting("mc_sim_7b_63 (depth 3)", Sampling(temperature=0.7)),
    "chain D=2 T=1.5": EagleSetting("chain D=2", Sampling(temperature=1.5)),
    "chain D=2 top_p=0.8": EagleSetting("chain D=2", Sampling(top_p=0.8)),
}

PLANTED = ("always-accept", "skip-residual")

ENGINE = Engine(name="eagle", package="eagle.model.ea_model", distribution="eagle-llm", pinned="1.2.1",
                extra="eagle", summary="EaModel.eagenerate at T > 0 on toy trees (evaluate_posterior, "
                "update_inference_inputs)", settings=tuple(SETTINGS), planted=PLANTED)


def version() -> str:
    """The engine's installed version.

    Returns
    -------
    str
        The installed version of the engine.
    """
    return require(ENGINE, warn=False)[1]


def tree_choices(tree: str) -> list:
    """The tree ``tree`` of :data:`TREES` as EAGLE's list of paths."""
    if TREES[tree] is not None:
        return [list(c) for c in TREES[tree]]
    from eagle.model.choices import mc_sim_7b_63

    return [list(c) for c in mc_sim_7b_63 if len(c) <= 3]


def _logits_rng(seed: int, role: int, u: tuple) -> np.random.Generator:
    return np.random.default_rng([int(seed), role, len(u), *map(int, u)])


def _target_logits(seed: int, zeros: float, u: tuple) -> np.ndarray:
    """Target logits after continuation ``u``: ``# [VOCAB]`` float32 (-inf at forbidden tokens)."""
    rng = _logits_rng(seed, 0, u)
    x = (TARGET_SCALE * rng.standard_normal(VOCAB)).astype(np.float32)
    if zeros > 0:
        drop = rng.random(VOCAB) < zeros
        drop[int(np.argmax(x))] = False  # NOTE: the target's mode stays, so that its law exists
        x[drop] = -np.inf
    return x


def _draft_logits(seed: int, zeros: float, u: tuple) -> np.ndarray:
    """Draft logits after ``u``: the target's (forbidden tokens at the target's finite minimum, so
    that the draft proposes them) plus Gaussian noise; ``# [VOCAB]`` float32, all finite."""
    x = _target_logits(seed, zeros, u).astype(np.float64)
    finite = np.isfinite(x)
    x[~finite] = x[finite].min()
    x += DRAFT_NOISE * _logits_rng(seed, 1, u).standard_normal(VOCAB)
    return x.astype(np.float32)


class _State:
    """What the stand-in networks share: the toy laws (cached per continuation) and the generated
    tokens before the current tree's root."""

    def __init__(self, seed: int, zeros: float, prompt_len: int):
        self.seed, self.zeros, self.prompt_len = seed, zeros, prompt_len
        self.context: tuple = ()  # generated tokens before the current tree's root
        self._cache: dict = {}

    def target(self, u: tuple) -> np.ndarray:
        got = self._cache.get((0, u))
        if got is None:
            got = self._cache[(0, u)] = _target_logits(self.seed, self.zeros, u)
        return got

    def draft(self, u: tuple) -> np.ndarray:
        got = self._cache.get((1, u))
        if got is None:
            got = self._cache[(1, u)] = _draft_logits(self.seed, self.zeros, u)
        return got


class _Trunk:
    """Stand-in for ``base_model.model``: returns the target's toy logits as hidden states.

    Called by EAGLE's ``forward`` on the prompt (``tree_mask`` is None: the logits after the
    prompt) and on a tree (``tree_mask`` set by ``initialize_tree``: node ``n`` continues the
    context with the tokens of its ancestors, the nonzero columns of row ``n``, in node order).
    """

    def __init__(self, state: _State):
        import torch

        self.state = state
        self.tree_mask = None
        self.tree_mode = None
        # NOTE: eagenerate reads the device of the last layer's weights
        self.layers = [SimpleNamespace(self_attn=SimpleNamespace(q_proj=SimpleNamespace(weight=torch.zeros(1))))]

    def __call__(self, input_ids=None, attention_mask=None, past_key_values=None, position_ids=None):
        import torch

        s = self.state
        if self.tree_mask is None:
            u = tuple(input_ids[0, s.prompt_len:].tolist())
            rows = [s.target(u)]
        else:
            mask = self.tree_mask[0, 0]  # [nodes, nodes]
            tokens = input_ids[0].tolist()  # [nodes]
            rows = []
            for n in range(len(tokens)):
                path = tuple(tokens[a] for a in torch.nonzero(mask[n]).flatten().tolist())
                rows.append(s.target(s.context + path))
        return (torch.tensor(np.stack(rows))[None],)  # [1, positions, V]


class _Head:
    """Stand-in for ``base_model.lm_head``: the identity (the trunk already returns logits)."""

    def __init__(self):
        import torch

        self.weight = torch.zeros(1)

    def __call__(self, hidden):
        return hidden


class _DraftHead:
    """Stand-in for ``ea_layer``: drafts EAGLE's tree from toy draft laws with EAGLE's sampler.

    ``topK_genrate(hidden_states, input_ids, head, logits_processor)`` returns EAGLE's triple
    ``(tokens # [rows, TOPK], probabilities # [rows, TOPK], op: list per level of # [rows, V])``
    for the tree after ``input_ids`` (the prompt, the generated tokens, the new root).
    """

    def __init__(self, state: _State, choices: list, zero_op: bool):
        from eagle.model.utils import TOPK

        self.state, self.zero_op, self.topk = state, zero_op, TOPK
        paths = sorted((tuple(c) for c in choices), key=lambda c: (len(c), c))
        parents = sorted({c[:-1] for c in paths}, key=lambda c: (len(c), c))  # EAGLE's rows, in order
        self.levels = [[c for c in parents if len(c) == d] for d in range(max(map(len, paths)))]
        self.children = {c: [p for p in paths if p[:-1] == c] for c in parents}
        self.draws = max(c[-1] for c in paths) + 1  # m: the children a row has in the tree

    def reset_kv(self):
        pass

    def topK_genrate(self, hidden_states, input_ids, head, logits_processor, max_length=4, use_cache=True):
        import torch
        from eagle.model.cnets import Model

        s = self.state
        generated = tuple(input_ids[0, s.prompt_len:].tolist())
        s.context = generated[:-1]
        token_of = {(): generated[-1]}
        ss_token, ss_prob, ss_op = [], [], []
        for rows in self.levels:
            logits = torch.tensor(np.stack([
                s.draft(generated + tuple(token_of[c[:j]] for j in range(1, len(c) + 1)))
                for c in rows]))  # [rows, V]
            index, prob, op = Model.sample(None, logits, logits_processor, k=self.draws)  # [rows, m] x2, [rows, V]
            for r, c in enumerate(rows):
                for child in self.children[c]:
                    token_of[child] = int(index[r, child[-1]])
            pad = self.topk - self.draws
            ss_token.append(torch.cat([index, torch.zeros(len(rows), pad, dtype=index.dtype)], dim=1))
            ss_prob.append(torch.cat([prob, torch.zeros(len(rows), pad, dtype=prob.dtype)], dim=1))
            ss_op.append(torch.zeros_like(op) if self.zero_op else op)
        return torch.cat(ss_token), torch.cat(ss_prob), ss_op


def _model(seed: int, zeros: float, choices: list, zero_op: bool = False):
    """An ``EaModel`` whose networks are the toy laws (module docstring), EAGLE's code otherwise."""
    import torch
    from eagle.model.ea_model import EaModel

    state = _State(seed, zeros, len(PROMPT))
    model = EaModel.__new__(EaModel)  # NOTE: no __init__: it loads a checkpoint
    torch.nn.Module.__init__(model)
    model.base_model = SimpleNamespace(model=_Trunk(state), lm_head=_Head())
    model.ea_layer = _DraftHead(state, choices, zero_op)
    model.tokenizer = SimpleNamespace(eos_token_id=None)  # NOTE: no end-of-sequence token: runs stop at the length
    # NOTE: eagenerate reuses these when present; the cache is a buffer update_inference_inputs writes
    room = len(PROMPT) + 64 + 2 * len(choices)
    model.past_key_values = None
    model.past_key_values_data = [torch.zeros(room, 1)]
    model.current_length_data = torch.zeros(1, dtype=torch.long)
    return model


class _ZeroCoin:
    """EAGLE's ``random`` with the coin of ``always-accept``: ``random()`` is always 0."""

    @staticmethod
    def random():
        return 0.0


@contextlib.contextmanager
def _coin(planted: str | None):
    import eagle.model.utils as eu

    if planted != "always-accept":
        yield
        return
    original = eu.random
    eu.random = _ZeroCoin
    try:
        yield
    finally:
        eu.random = original


def generate(model, s: Sampling, length: int, choices: list) -> tuple:
    """One ``eagenerate`` call: the first ``>= length`` generated tokens.

    Parameters
    ----------
    model : object
        EAGLE's model wrapper with the toy networks in place.
    s : rheotheory.audit.sampling.Sampling
    length : int
        Tokens wanted.
    choices : list
        EAGLE's tree choices.

    Returns
    -------
    tuple of int
    """
    import torch

    prompt = torch.tensor([PROMPT], dtype=torch.long)  # [1, len(PROMPT)]
    out = model.eagenerate(prompt, temperature=s.temperature, top_p=s.top_p or 0.0, top_k=s.top_k or 0,
                           max_new_tokens=length - 1, tree_choices=choices)
    return tuple(out[0, len(PROMPT):].tolist())


def _sampler(cfg: EagleSetting, L: int, planted: str | None, index: int, law_seed: int):
    import random

    import torch

    choices = tree_choices(cfg.tree)

    def sample(n: int, seed: int):
        model = _model(law_seed, cfg.target_zeros, choices, zero_op=planted == "skip-residual")
        state = np.random.SeedSequence([int(seed), index]).generate_state(2)
        saved = random.getstate(), torch.get_rng_state(), torch.get_num_threads()
        random.seed(int(state[0]))
        torch.manual_seed(int(state[1]))
        torch.set_num_threads(1)  # NOTE: on tensors of a few rows of 6 a second thread only adds its start-up
        try:
            with _coin(planted):
                return [generate(model, cfg.sampling, L, choices) for _ in range(n)]
        finally:
            random.setstate(saved[0])
            torch.set_rng_state(saved[1])
            torch.set_num_threads(saved[2])

    return sample


def _laws(cfg: EagleSetting, law_seed: int):
    """:data:`rheotheory.stats.NextLaws` of the toy target after the sampling settings."""
    from ..sampling import processed_law

    def laws(prefixes: list) -> np.ndarray:
        logits = np.stack([_target_logits(law_seed, cfg.target_zeros, tuple(u)) for u in prefixes])  # [m, V]
        ids = np.zeros((len(prefixes), 1), dtype=np.int64)  # NOTE: read by repetition penalty only (off)
        return processed_law(logits, ids, cfg.sampling)

    return laws


#: Seed of the toy laws (fixed: the audit's --seed seeds the runs).
LAW_SEED = 25


def settings(planted: str | None = None, only=None) -> list[Setting]:
    """The :data:`SETTINGS` (those named in ``only``), each as an audit :class:`Setting`;
    ``planted``: with that companion's bug (``skip-residual``: the chain settings only).

    Parameters
    ----------
    planted : str, optional
        A planted companion's name (its bug in place of the engine's own code).
    only : sequence of str, optional
        Setting names.

    Returns
    -------
    list of rheotheory.audit.core.Setting
    
    Raises
    ------
    rheotheory.errors.RheoError
        The engine's package is not installed (:func:`~rheotheory.audit.engines.require`), or
        ``planted`` is not one of :data:`PLANTED`.
    """
    from ...errors import RheoError

    require(ENGINE)
    if planted is not None and planted not in PLANTED:
        raise RheoError(f"unknown planted companion {planted!r} of eagle; one of {', '.join(PLANTED)}")
    out = []
    for index, (name, cfg) in enumerate(SETTINGS.items()):
        choices = tree_choices(cfg.tree)
        is_chain = all(c[-1] == 0 for c in choices)
        if (only is not None and name not in only) or (planted == "skip-residual" and not is_chain):
            continue
        depth = max(map(len, choices))
        L = depth + 2
        detail = dict(engine="eagle", tree=cfg.tree, tree_choices=choices, depth=depth,
                      target_zeros=cfg.target_zeros, vocab=VOCAB, dtype="float32 logits (CPU)",
                      **cfg.sampling.to_dict())
        out.append(Setting(name, L, _laws(cfg, LAW_SEED), _sampler(cfg, L, planted, index, LAW_SEED), detail))
    return out
