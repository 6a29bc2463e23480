"""rheotheory.hf.generate as transformers' ``custom_generate``: on randomly initialised tiny Llama
models (nothing is downloaded), greedy speculative decoding through ``model.generate`` equals
plain greedy ``generate`` token for token, sampling returns generate's shape and the target's
law (a chi-square test with a planted companion), with a transformers draft and with a draft
head given as ``assistant_model``, and settings it cannot honour (a head made for another target
among them) are refused with one line."""

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import rheotheory.hf  # noqa: E402
from rheotheory.errors import RheoError  # noqa: E402

#: Token ids 0..VOCAB-1.
VOCAB = 96
#: Standard deviation of the random weights: wide enough that the logits are far from ties.
INIT_STD = 0.2
#: A prompt of token ids (no id is the EOS, 2).
PROMPT = [[5, 9, 17, 33, 41]]


def tiny_llama(seed: int, dtype=torch.float64):
    """A 2-layer Llama with VOCAB tokens and 128 positions (float64: greedy has no float near-ties)."""
    cfg = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                                   bos_token_id=1, eos_token_id=2, pad_token_id=0, initializer_range=INIT_STD)
    torch.manual_seed(seed)
    return transformers.AutoModelForCausalLM.from_config(cfg).to(dtype).eval()


@pytest.fixture(scope="module")
def pair():
    return tiny_llama(0), tiny_llama(3)


@pytest.mark.parametrize("method", ["rheo-tuned", "eagle", "chain"])
def test_greedy_custom_generate_equals_plain_greedy(pair, method):
    target, draft = pair
    ids = torch.tensor(PROMPT)
    ref = target.generate(ids, do_sample=False, max_new_tokens=12)
    got = target.generate(ids, custom_generate=rheotheory.hf.generate, draft_model=draft, do_sample=False,
                          max_new_tokens=12, method=method)
    assert got.dtype == torch.long
    assert got.tolist() == ref.tolist(), method


def test_same_weights_draft_is_also_greedy(pair):
    """A draft equal to the target accepts long paths: the commit of deep paths is exercised. In a
    direct call temperature 0 is greedy too (generate itself refuses it with do_sample=True)."""
    target, _ = pair
    ids = torch.tensor(PROMPT)
    ref = target.generate(ids, do_sample=False, max_new_tokens=20)
    got = target.generate(ids, custom_generate=rheotheory.hf.generate, draft_model=target, do_sample=False,
                          max_new_tokens=20)
    assert got.tolist() == ref.tolist()
    direct = rheotheory.hf.generate(target, ids, draft_model=target, temperature=0.0, max_new_tokens=20)
    assert direct.tolist() == ref.tolist()


def test_sampling_shape_vocabulary_and_seed(pair):
    target, draft = pair
    ids = torch.tensor(PROMPT)
    kw = dict(custom_generate=rheotheory.hf.generate, draft_model=draft, do_sample=True, temperature=1.0,
              max_new_tokens=16, method="rheo-tuned", seed=7)
    out = target.generate(ids, **kw)
    assert out.dtype == torch.long and out.shape[0] == 1
    n = out.shape[1] - ids.shape[1]
    assert 1 <= n <= 16 and out[0, :ids.shape[1]].tolist() == PROMPT[0]
    assert ((out >= 0) & (out < VOCAB)).all()
    assert 2 not in out[0, ids.shape[1]:-1].tolist(), "nothing after the first EOS"
    assert n == 16 or out[0, -1].item() == 2, "shorter than max_new_tokens only at an EOS"
    assert target.generate(ids, **kw).tolist() == out.tolist(), "a fixed seed gives the same tokens"


def test_direct_call_matches_generate(pair):
    target, draft = pair
    ids = torch.tensor(PROMPT)
    via = target.generate(ids, custom_generate=rheotheory.hf.generate, draft_model=draft, do_sample=True,
                          max_new_tokens=10, seed=3, top_k=20, top_p=0.9)
    direct = rheotheory.hf.generate(target, ids, draft_model=draft, do_sample=True, max_new_tokens=10, seed=3,
                                    top_k=20, top_p=0.9)
    assert via.tolist() == direct.tolist()


@pytest.mark.parametrize("kwargs,match", [
    (dict(num_beams=2), "num_beams"),
    (dict(num_return_sequences=2, do_sample=True), "num_return_sequences"),
    (dict(repetition_penalty=1.3), "RepetitionPenalty"),
    (dict(attention_mask=torch.tensor([[0, 1, 1, 1, 1]])), "padding"),
    (dict(return_dict_in_generate=True), "return_dict_in_generate"),
])
def test_unsupported_settings_are_refused_with_one_line(pair, kwargs, match):
    target, draft = pair
    with pytest.raises(RheoError, match=match) as err:
        target.generate(torch.tensor(PROMPT), custom_generate=rheotheory.hf.generate, draft_model=draft,
                        max_new_tokens=4, **kwargs)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("kwargs,match", [
    (dict(input_ids=torch.tensor(PROMPT * 2)), "batch size 1"),
    (dict(num_beams=2), "num_beams"),
    (dict(foo=3), "unsupported argument foo"),
])
def test_direct_call_refuses_with_one_line(pair, kwargs, match):
    target, draft = pair
    kwargs = {"input_ids": torch.tensor(PROMPT), **kwargs}
    with pytest.raises(RheoError, match=match) as err:
        rheotheory.hf.generate(target, draft_model=draft, max_new_tokens=4, **kwargs)
    assert "\n" not in str(err.value)


def test_assistant_model_as_transformers_names_it(pair):
    """``assistant_model=`` (transformers' name) reaches the callable like ``draft_model=``, through
    ``generate`` and in a direct call: the same seed gives the same tokens."""
    target, draft = pair
    ids = torch.tensor(PROMPT)
    kw = dict(custom_generate=rheotheory.hf.generate, do_sample=True, temperature=1.0, max_new_tokens=12,
              seed=5)
    via_assistant = target.generate(ids, assistant_model=draft, **kw)
    via_draft = target.generate(ids, draft_model=draft, **kw)
    assert via_assistant.tolist() == via_draft.tolist()
    direct = rheotheory.hf.generate(target, ids, assistant_model=draft, max_new_tokens=12, seed=5)
    assert direct.tolist() == rheotheory.hf.generate(target, ids, draft_model=draft, max_new_tokens=12,
                                                     seed=5).tolist()
    with pytest.raises(RheoError, match="not both"):
        rheotheory.hf.generate(target, ids, assistant_model=draft, draft_model=target, max_new_tokens=4)


def test_tree_size_keywords(pair, monkeypatch):
    """tree_top_k / tree_depth / tree_budget reach the method the engine runs; a size the method
    lacks is refused."""
    import rheotheory.hf as hf

    target, draft = pair
    seen = []
    real = hf.decode

    def spy(t, d, prompt, method, cfg, gen):
        seen.append(method)
        return real(t, d, prompt, method, cfg, gen)

    monkeypatch.setattr(hf, "decode", spy)
    target.generate(torch.tensor(PROMPT), custom_generate=hf.generate, assistant_model=draft, do_sample=False,
                    max_new_tokens=4, method="rheo-tuned", tree_top_k=2, tree_depth=3, tree_budget=5)
    got = seen[-1].to_dict()
    assert (got["top_k"], got["depth"], got["budget"]) == (2, 3, 5)
    with pytest.raises(RheoError, match="budget"):
        hf.generate(target, torch.tensor(PROMPT), draft_model=draft, method="chain", tree_budget=5, max_new_tokens=4)


def test_top_k_as_generate_means_it(pair, monkeypatch):
    """Through ``generate``, sampling is truncated to the generation config's top-k: 50 (its default;
    this model's config sets none) unless the call sets one; ``top_k=0`` means no truncation, as it
    does to transformers."""
    import rheotheory.hf as hf

    target, draft = pair
    seen = []
    real = hf.decode

    def spy(t, d, prompt, method, cfg, gen):
        seen.append(cfg.top_k)
        return real(t, d, prompt, method, cfg, gen)

    monkeypatch.setattr(hf, "decode", spy)
    for k in (0, 7, None):
        kw = {} if k is None else {"top_k": k}
        target.generate(torch.tensor(PROMPT), custom_generate=hf.generate, assistant_model=draft, do_sample=True,
                        max_new_tokens=2, seed=1, **kw)
    assert seen == [None, 7, 50]


# -- the output law: chi-square against the target, with a planted companion -------------------

#: Significance level, seed of run i (LAW_SEED + i) and runs of the output-law test: fixed, so
#: the outcome is reproducible.
LAW_ALPHA = 1e-3
LAW_SEED = 20261201
LAW_RUNS = 600
#: Tree size of the law tests (rheo-tuned's K, D, N): only the first two tokens are tested, so a
#: tree of depth 2 is all that matters; a small one keeps the 600 runs cheap.
LAW_TREE = dict(tree_top_k=2, tree_depth=2, tree_budget=4)
#: Generated tokens whose joint law is tested.
LAW_TOKENS = 2
#: Standard deviation of the noise added to the target's weights to make the draft of the law
#: tests: TV(p, q) = 0.22 at the prompt. A draft overlapping the target is what makes the
#: residual matter (with tiny_llama(3), TV = 0.61, the residual is nearly p and the planted bug
#: moves too little mass to be seen at this N).
DRAFT_NOISE = 0.05


@pytest.fixture(scope="module")
def close_pair():
    """The target tiny_llama(0) and a draft: its copy with N(0, DRAFT_NOISE^2) added to every weight (seed 3)."""
    import copy

    target = tiny_llama(0)
    draft = copy.deepcopy(target)
    gen = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for w in draft.parameters():
            w.add_(torch.randn(w.shape, generator=gen, dtype=w.dtype) * DRAFT_NOISE)
    return target, draft


def target_next_laws(model, prompt):
    """p(. | prompt + u) at T = 1 straight from the transformers forward (float64 model), for a
    list of continuations u of one length: ``# [m, VOCAB]``. Independent of the decoder."""
    def laws(prefixes):
        batch = torch.tensor([list(prompt) + list(u) for u in prefixes], dtype=torch.long)  # [m, prompt + |u|]
        with torch.no_grad():
            return torch.softmax(model(batch).logits[:, -1].double(), dim=-1).numpy()  # [m, VOCAB]
    return laws


def output_law_test(pair, monkeypatch=None, planted=None, via="draft_model"):
    """The first LAW_TOKENS tokens of LAW_RUNS ``generate(custom_generate=rheotheory.hf.generate)``
    calls (T = 1, ``top_k=0``: no truncation, where ``generate`` would otherwise apply its default
    top-k of 50; the default method; no EOS so every run has LAW_TOKENS tokens) against the
    target's exact law, by :mod:`rheotheory.stats`' pooled chi-square. ``planted``: a per-node
    verifier that replaces the method's inside the decoder (the negative control); ``via``: the
    keyword the draft is given as."""
    from rheotheory.stats import prefix_cells

    target, draft = pair
    if planted is not None:
        import functools

        monkeypatch.setattr(rheotheory.hf, "decode", functools.partial(rheotheory.hf.decode, verifier=planted))
    ids = torch.tensor(PROMPT)
    seqs = []
    for i in range(LAW_RUNS):
        out = target.generate(ids, custom_generate=rheotheory.hf.generate, do_sample=True, temperature=1.0,
                              top_k=0, max_new_tokens=LAW_TOKENS, eos_token_id=None, seed=LAW_SEED + i,
                              **LAW_TREE, **{via: draft})
        seqs.append(tuple(out[0, ids.shape[1]:].tolist()))
    cells = prefix_cells(target_next_laws(target, PROMPT[0]), LAW_RUNS, LAW_TOKENS)
    return cells.chi_square(seqs, LAW_TOKENS)


def test_sampled_output_law_is_the_target_law(close_pair):
    """rheotheory.hf.generate through ``model.generate`` samples the target's law of the first two
    tokens: alpha = LAW_ALPHA, seeds LAW_SEED + i, N = LAW_RUNS runs, T = 1, the default method
    (rheo-tuned at K, D, N = LAW_TREE). Measured: chi2 = 25.8, df = 32, p = 0.77."""
    res = output_law_test(close_pair)
    assert res.df >= 5, res
    assert not res.rejects(LAW_ALPHA), f"chi2 = {res.statistic:.1f}, df = {res.df}, p = {res.p_value:.3g}"


def test_output_law_test_rejects_a_planted_verifier(close_pair, monkeypatch):
    """Companion (same alpha, seeds, N, pair): the decoder behind ``generate`` with a verifier that
    redraws from p instead of the residual after a rejection is rejected. Measured: chi2 = 89.3,
    df = 32, p = 2.6e-7."""
    from rheotheory.testing.mutants import ot_skip_residual

    res = output_law_test(close_pair, monkeypatch, planted=ot_skip_residual)
    assert res.rejects(LAW_ALPHA), f"planted bug not caught: chi2 = {res.statistic:.1f}, df = {res.df}"


# -- a trained draft head as assistant_model ---------------------------------------------------

#: Feature layers (transformers' hidden_states numbering: block 1, then the final normed state of
#: the 2-block target) and draft vocabulary of the tiny heads.
HEAD_FEATURES = (1, 2)
HEAD_VOCAB = 64
#: Standard deviation of the noise added to a fresh head's weights (as tests/test_draft_head.py).
HEAD_NOISE = 0.05


def save_tiny_head(model, folder, seed=1, family="llama"):
    """A randomly initialised draft head for ``model`` saved as a head directory (float16
    safetensors + manifest naming the target's transformers family)."""
    from rheotheory.decode.heads.draft_head import DraftHead, HeadConfig, save_head
    from rheotheory.decode.backends.smollm import SmolConfig

    torch.manual_seed(seed)
    cfg = HeadConfig.for_target(SmolConfig.from_hf(model.config, max_len=128), HEAD_FEATURES, HEAD_VOCAB)
    vocab = model.config.vocab_size
    ids = torch.randperm(vocab, generator=torch.Generator().manual_seed(seed))[:HEAD_VOCAB].sort().values
    head = DraftHead(cfg, model.get_input_embeddings(), ids)
    with torch.no_grad():
        for w in head.parameters():
            w.add_(torch.randn_like(w) * HEAD_NOISE)
    save_head(head, folder, {"transformers_model_type": family})
    return folder


@pytest.fixture(scope="module")
def head_pair(tmp_path_factory):
    """The target tiny_llama(0) and the directory of a draft head made for it."""
    target = tiny_llama(0)
    return target, save_tiny_head(target, tmp_path_factory.mktemp("head") / "tiny_head")


@pytest.mark.parametrize("method", ["rheo-tuned", "eagle", "chain"])
def test_greedy_with_a_head_directory_as_assistant_equals_plain_greedy(head_pair, method):
    """float64: a head directory given as ``assistant_model`` drafts (bound to the target, reading
    its hidden states) and greedy speculative decoding equals plain greedy token for token."""
    target, folder = head_pair
    ids = torch.tensor(PROMPT)
    ref = target.generate(ids, do_sample=False, max_new_tokens=12)
    got = target.generate(ids, custom_generate=rheotheory.hf.generate, assistant_model=str(folder), do_sample=False,
                          max_new_tokens=12, method=method)
    assert got.tolist() == ref.tolist(), method


def test_a_loaded_head_is_the_same_draft_as_its_directory(head_pair):
    """``rheotheory.hf.draft_head(target, DIR)`` (loaded once) and ``DIR`` give the same tokens for
    the same seed, through ``generate`` and in a direct call."""
    from rheotheory.decode.heads.draft_head import DraftHead

    target, folder = head_pair
    head = rheotheory.hf.draft_head(target, folder)
    assert isinstance(head, DraftHead) and head.fuse.weight.dtype == torch.float64
    ids = torch.tensor(PROMPT)
    kw = dict(custom_generate=rheotheory.hf.generate, do_sample=True, temperature=1.0, max_new_tokens=12, seed=4)
    assert target.generate(ids, assistant_model=head, **kw).tolist() == \
        target.generate(ids, assistant_model=folder, **kw).tolist()
    assert rheotheory.hf.generate(target, ids, draft_model=head, max_new_tokens=12, seed=4).tolist() == \
        rheotheory.hf.generate(target, ids, assistant_model=folder, max_new_tokens=12, seed=4).tolist()


def test_a_head_for_another_target_is_refused_with_one_line(head_pair, tmp_path):
    """Another vocabulary, another number of blocks, another family in the manifest, no head at
    all, a head bound to another model: refused by ``generate`` with one line each."""
    target, folder = head_pair
    other_vocab = transformers.AutoModelForCausalLM.from_config(transformers.LlamaConfig(
        vocab_size=VOCAB + 8, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=128))
    deeper = transformers.AutoModelForCausalLM.from_config(transformers.LlamaConfig(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=3, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=128))
    cases = [
        (save_tiny_head(other_vocab, tmp_path / "vocab"), "embedding"),
        (save_tiny_head(deeper, tmp_path / "deeper"), "3 blocks; this target has 2"),
        (save_tiny_head(target, tmp_path / "qwen", family="qwen2"), "trained for a qwen2 target"),
        (rheotheory.hf.SMOLLM2_HEAD, "49152 x 576 embedding"),  # the shipped head: SmolLM2's, not this model's
        (tmp_path / "nothing", "does not exist"),
        (rheotheory.hf.draft_head(tiny_llama(5), folder), "another model's embedding"),
    ]
    (tmp_path / "empty").mkdir()
    cases.append((tmp_path / "empty", "not a draft head"))
    for draft, match in cases:
        with pytest.raises(RheoError, match=match) as err:
            target.generate(torch.tensor(PROMPT), custom_generate=rheotheory.hf.generate, assistant_model=draft,
                            max_new_tokens=4)
        assert "\n" not in str(err.value), match


def test_sampled_output_law_with_a_head_is_the_target_law(head_pair):
    """With the head directory as ``assistant_model``: alpha = LAW_ALPHA, seeds LAW_SEED + i,
    N = LAW_RUNS runs, T = 1, rheo-tuned at LAW_TREE; the target's law of the first two tokens.
    Measured: chi2 = 32.6, df = 32, p = 0.44."""
    res = output_law_test(head_pair, via="assistant_model")
    assert res.df >= 5, res
    assert not res.rejects(LAW_ALPHA), f"chi2 = {res.statistic:.1f}, df = {res.df}, p = {res.p_value:.3g}"


def test_output_law_test_with_a_head_rejects_a_planted_verifier(head_pair, monkeypatch):
    """Companion (same alpha, seeds, N, target and head): the skip-residual verifier is rejected.
    Measured: chi2 = 115.2, df = 32, p = 2.5e-11."""
    from rheotheory.testing.mutants import ot_skip_residual

    res = output_law_test(head_pair, monkeypatch, planted=ot_skip_residual, via="assistant_model")
    assert res.rejects(LAW_ALPHA), f"planted bug not caught: chi2 = {res.statistic:.1f}, df = {res.df}"
