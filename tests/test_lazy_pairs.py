"""Generated (lazy) pairs, the off-support lossless check and the doomed-expansion reduction
(docs/theory.md section 5.6): each is compared exactly with the computation it replaces."""

import json
import random

import numpy as np
import pytest

from rheotheory import InstanceError, ToyPair, certify, laws, random_pair, resolve
from rheotheory.cli import main
from rheotheory.exact import lossless_check
from rheotheory.pairs import GeneratedPair, _keyed_rng, prefixes

#: Small (V, H, seed, mismatch, zero_prob) instances on which lazy and tabulated laws are compared
#: prefix by prefix.
SMALL = [(2, 3, 0, 1.0, 0.0), (3, 2, 7, 0.5, 0.0), (4, 2, 2**40 + 3, 1.0, 0.3), (1, 3, 5, 1.0, 0.0)]


@pytest.mark.parametrize("V,H,seed,mismatch,zero_prob", SMALL)
@pytest.mark.parametrize("exact", [True, False])
def test_lazy_pair_equals_its_tabulated_twin_on_every_prefix(V, H, seed, mismatch, zero_prob, exact):
    lazy = GeneratedPair(V, H, seed, exact=exact, mismatch=mismatch, zero_prob=zero_prob)
    twin = random_pair(V, H, seed, exact=exact, mismatch=mismatch, zero_prob=zero_prob, keyed=True)
    for u in reversed(list(prefixes(V, H))):  # any order: a prefix's laws never depend on others
        for got, want in ((lazy.p(u), twin.p(u)), (lazy.q(u), twin.q(u))):
            assert got.dtype == want.dtype and list(got) == list(want), u
            laws.check_law(got, vocab_size=V)
    assert lazy.tabulate().target.keys() == twin.target.keys()


def test_keyed_streams_differ_by_seed_stream_and_prefix():
    # SeedSequence pads its entropy with zeros: without the length word, () and (0,) would share
    # a stream, and a seed >= 2^32 could alias a (seed, stream) pair.
    keys = [(0, 0, ()), (0, 0, (0,)), (0, 0, (0, 0)), (0, 1, ()), (1, 0, ()), (2**32, 0, ()), (0, 0, (1,)),
            (2**32 + 1, 0, ()), (1, 1, ())]
    draws = [tuple(_keyed_rng(*k).integers(0, 2**62, size=2)) for k in keys]
    assert len(set(draws)) == len(keys)


def test_default_random_pair_is_the_sequential_generator():
    # the committed certificates were computed on it: keyed=False must stay the one stream
    rng = np.random.default_rng(3)
    w = rng.integers(1, 13, size=3)
    assert list(random_pair(3, 1, seed=3).p(())) == [laws.parse_number(int(x), True) / int(w.sum()) for x in w]
    seq, keyed = random_pair(3, 2, seed=3), random_pair(3, 2, seed=3, keyed=True)
    assert any(list(seq.p(u)) != list(keyed.p(u)) for u in prefixes(3, 2))


def test_lazy_pair_refuses_prefixes_and_parameters_outside_its_range():
    pair = GeneratedPair(3, 2, seed=1)
    for bad in [(0, 1, 2), (3,), (-1,), (True,), [0]]:
        with pytest.raises(InstanceError, match="no law for prefix"):
            pair.p(bad)
    for kwargs, msg in [(dict(vocab_size=0), "vocab_size"), (dict(horizon=-1), "horizon"), (dict(seed=-1), "seed"),
                        (dict(mismatch=2.0), "mismatch"), (dict(vocab_size=10, max_entries=5), "over the cap")]:
        args = dict(vocab_size=3, horizon=2, seed=0) | kwargs
        with pytest.raises(InstanceError, match=msg):
            GeneratedPair(**args)


METHODS = ["rheo", "rheo:proxy=tail", "rheo:proxy=true:verifier=sequential", "eagle", "chain"]


@pytest.mark.parametrize("spec", METHODS)
def test_certify_on_the_lazy_pair_equals_certify_on_the_twin(spec):
    lazy, twin = GeneratedPair(4, 3, seed=11), random_pair(4, 3, seed=11, keyed=True)
    method = resolve(spec, size=(2, 3, 4))
    a, b = certify(lazy, method), certify(twin, method)
    assert a.z_law == b.z_law
    for f in ("lossless", "max_deviation", "worst_sequence", "per_length", "tokens_per_step", "outcomes", "classes",
              "branches"):
        assert getattr(a, f) == getattr(b, f), f


def test_certify_at_vocabulary_1000_visits_few_prefixes():
    pair = GeneratedPair(1000, 8, seed=0)
    cert = certify(pair, resolve("eagle", size=(3, 8, 8)))
    assert cert.lossless and cert.max_deviation == 0
    assert len(pair._laws) < 50  # the paths of one tree, not 10^24 table rows


# -- the lossless check off the support ---------------------------------------------------------

def full_search(pair, z_law, max_len):
    """The criterion evaluated on every z in V^l (the search the off-support check replaces)."""
    zero = laws.parse_number(0, pair.exact)
    G = {}
    for z, pz in z_law.items():
        for l in range(1, len(z) + 1):
            G[z[:l]] = G.get(z[:l], zero) + pz
    per, worst = [zero] * max_len, [zero, None]
    stack = [((), zero, laws.parse_number(1, pair.exact))]
    while stack:
        u, S, pu = stack.pop()
        pl, base = pair.p(u), S + z_law.get(u, zero)
        for y in range(pair.vocab_size):
            uy = u + (y,)
            S2, g, pu2 = base * pl[y], G.get(uy, zero), pu * pl[y]
            dev = abs(S2 + g - pu2)
            if dev > per[len(uy) - 1]:
                per[len(uy) - 1] = dev
            if dev > worst[0]:
                worst[:] = dev, uy
            if len(uy) < max_len and g != 0:
                stack.append((uy, S2, pu2))
    return worst[0], worst[1], per


def perturbed_laws(z_law, rnd):
    """The law itself, mass moved between outputs, an output dropped, only the first tokens."""
    keys = list(z_law)
    moved = dict(z_law)
    for _ in range(3):
        a, b = rnd.choice(keys), rnd.choice(keys)
        d = moved[a] / 3
        moved[a] -= d
        moved[b] += d
    dropped = dict(z_law)
    dropped.pop(rnd.choice(keys))
    return [z_law, moved, dropped, {z: w for z, w in z_law.items() if len(z) == 1}, {}]


@pytest.mark.parametrize("seed", range(12))
def test_off_support_check_equals_the_full_search(seed):
    rnd = random.Random(seed)
    V, D = rnd.choice([2, 3, 4]), rnd.choice([1, 2, 3])
    pair = random_pair(V, D, seed=seed, zero_prob=rnd.choice([0.0, 0.3]), exact=seed % 3 != 0)
    spec = rnd.choice(["rheo:proxy=true:verifier=sequential", "rheo", "eagle", "chain"])
    cert = certify(pair, resolve(spec, size=(rnd.choice([2, 3]), D, rnd.choice([2, 4]))))
    for z_law in perturbed_laws(cert.z_law, rnd):
        chk = lossless_check(pair, z_law, D + 1)
        assert (chk.max_deviation, chk.worst_sequence, chk.per_length) == full_search(pair, z_law, D + 1)


def test_off_support_check_catches_a_missing_token():
    # Z never starts with token 2: the deviation p(2) sits entirely off the support
    pair = random_pair(3, 1, seed=4)
    p = pair.p(())
    z_law = {(0,): p[0] + p[2], (1,): p[1]}
    chk = lossless_check(pair, z_law, 2)
    assert chk.max_deviation == max(p[2], p[2]) and chk.worst_sequence in {(0,), (2,)}
    assert chk.per_length[0] == p[2]


# -- the doomed-expansion reduction -------------------------------------------------------------

REDUCE_CASES = [("rheo:proxy=tail", 4, 3, 3, 4), ("rheo", 5, 2, 3, 3), ("rheo:proxy=true:verifier=ot", 4, 2, 3, 2),
                ("rheo:proxy=tail:head=2:verifier=sequential", 4, 3, 3, 5), ("eagle", 4, 3, 3, 4),
                ("rheo:proxy=min-best-tail:head=0", 3, 2, 3, 3), ("rheo:head=0", 3, 3, 3, 4),
                # deeper trees with a small budget: left-out expansions that must be made later
                ("rheo:proxy=tail", 3, 2, 4, 2), ("rheo", 3, 2, 5, 3), ("rheo:proxy=tail", 3, 3, 4, 3)]


@pytest.mark.parametrize("spec,V,K,D,N", REDUCE_CASES)
@pytest.mark.parametrize("seed", range(2))
def test_reduced_enumeration_equals_the_full_one(spec, V, K, D, N, seed):
    pair = random_pair(V, D, seed=seed, zero_prob=0.2 if seed else 0.0)
    method = resolve(spec, size=(K, D, N))
    a, b = certify(pair, method), certify(pair, method, reduce=False)
    assert a.z_law == b.z_law
    for f in ("lossless", "max_deviation", "worst_sequence", "tokens_per_step", "outcomes", "classes"):
        assert getattr(a, f) == getattr(b, f), f
    assert a.branches <= b.branches


@pytest.mark.parametrize("spec,V,K,D,N,factor", [
    ("rheo:proxy=tail", 4, 3, 3, 4, 4),  # doomed expansions
    ("rheo", 6, 3, 3, 8, 4),  # doomed filler layouts in the last layer
])
def test_reduction_skips_doomed_draws(spec, V, K, D, N, factor):
    pair = random_pair(V, D, seed=1)
    method = resolve(spec, size=(K, D, N))
    a, b = certify(pair, method), certify(pair, method, reduce=False)
    assert a.branches * factor <= b.branches and a.z_law == b.z_law and a.outcomes == b.outcomes


# -- the instance reader and the command line ---------------------------------------------------

def test_generated_instance_file_is_read_as_a_lazy_pair(tmp_path):
    path = tmp_path / "g.json"
    GeneratedPair(3, 2, seed=9, mismatch=0.5).save(path)
    pair = ToyPair.load(path)
    assert isinstance(pair, GeneratedPair) and (pair.seed, pair.mismatch) == (9, 0.5)
    twin = random_pair(3, 2, seed=9, mismatch=0.5, keyed=True)
    assert all(list(pair.q(u)) == list(twin.q(u)) for u in prefixes(3, 2))
    assert ToyPair.load(path, exact=False).p(()).dtype == np.float64


@pytest.mark.parametrize("obj,msg", [
    ({"kind": "tabulated", "vocab_size": 3, "horizon": 2, "seed": 0}, "unknown instance kind"),
    ({"kind": "generated", "vocab_size": 3, "horizon": 2}, "missing the field 'seed'"),
    ({"kind": "generated", "vocab_size": 3, "horizon": 2, "seed": 0, "target": {}}, "has no field"),
    ({"kind": "generated", "vocab_size": 3.0, "horizon": 2, "seed": 0}, "vocab_size"),
    ({"kind": "generated", "vocab_size": 3, "horizon": 2, "seed": 2**64}, "seed"),
    ({"kind": "generated", "vocab_size": 3, "horizon": 2, "seed": 0, "zero_prob": 1}, "zero_prob"),
])
def test_malformed_generated_instances_are_refused(tmp_path, obj, msg):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(obj))
    with pytest.raises(InstanceError, match=msg):
        ToyPair.load(path)


def test_cli_generate_certifies_the_lazy_pair(capsys):
    assert main(["certify", "--generate", "4,3,1", "--preset", "rheo", "--top-k", "2", "--budget", "4",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    cert = certify(random_pair(4, 3, seed=1, keyed=True), resolve("rheo", size=(2, 3, 4)))
    assert out["instance"] == "generated:4,3,1" and out["lossless"] is True
    assert out["tokens_per_step"] == laws.format_number(cert.tokens_per_step)
    assert (out["outcomes"], out["classes"]) == (cert.outcomes, cert.classes)


@pytest.mark.parametrize("value,msg", [("4,3", "V,H,SEED"), ("x,3,1", "V,H,SEED"), ("4,3,-1", "V,H,SEED"),
                                       ("0,3,1", "V must be"), ("4,3," + "9" * 40, "V,H,SEED"),
                                       ("4,3,9223372036854775808", "SEED in")])
def test_cli_generate_rejects_malformed_values(capsys, value, msg):
    assert main(["certify", "--generate", value]) == 2
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1


def test_cli_generate_and_an_instance_file_contradict(tmp_path, capsys):
    path = tmp_path / "i.json"
    random_pair(3, 3, seed=1).save(path)
    assert main(["certify", str(path), "--generate", "3,3,1"]) == 2
    err = capsys.readouterr().err
    assert "not both" in err and err.count("\n") == 1
