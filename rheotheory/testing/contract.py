"""``check_method``: the contract a method must keep for its certificates to be trusted.

A plugin author puts one line in their own tests::

    from rheotheory.testing import check_method

    def test_my_method_keeps_the_contract():
        check_method("my_method.py:ForkMethod")

It raises ``AssertionError`` with the message a failing test shows, naming the broken rule and
how to fix it, or returns a :class:`MethodCheck` with what was checked. What it checks, on tiny
exact pairs (the built-in example pair and a few seeded random ones, docs/theory.md section 5.3):

1. **Strict enumeration** (the four rules of docs/theory.md section 5.3): every random choice
   goes through the chooser (a build is the same under other global random states, in another
   order and after unrelated builds: no global random state, no state kept between calls); every
   replayed draw comes from the law its answer was weighted with; every sampled token comes from a
   chooser draw under the law it declares to the verifier; trees merged into one equivalence
   class show the verifier the same things, and the law of the step's output Z over the classes
   equals the law verified branch by branch, exactly. A break fails with the fault named (global
   random state, state kept between calls, a law drawn from that is not the law declared to the
   verifier) and the rule it breaks.
2. **Lazy = eager**: the law of Z with unresolved sampled leaves integrated analytically equals
   the law with every draw branched on, exactly (a builder that reads a token without resolving
   it through the tree fails here).
3. **Exact = Monte Carlo**: ``samples`` sampled steps (the float path every sampling command
   uses) against the exact law of Z of the same method, a chi-square test at ``alpha``
   (seed ``seed``); with the defaults it detects a total-variation distance of a few percent
   between the sampled and the enumerated law.
4. Optionally (``lossless=True``): every certificate is LOSSLESS (deviation exactly 0).

A lossy method passes 1-3 (it is measured faithfully); ``lossless=True`` adds the verdict. A
method whose policy learns across steps (``online``) is checked on the method its policy runs
first; :func:`rheotheory.exact.certify_steps` certifies several of its steps at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import RheoError

__all__ = ["check_method", "MethodCheck", "CONTRACT_PAIRS", "CONTRACT_SIZE"]

#: The tiny exact pairs the contract is checked on: ``None`` is the built-in example pair (V = 4,
#: horizon 3); the others are :func:`rheotheory.pairs.random_pair` keyword sets (a zero-mass token
#: in the second).
CONTRACT_PAIRS = (None, dict(vocab_size=3, horizon=3, seed=11, mismatch=1.0),
                  dict(vocab_size=4, horizon=3, seed=5, mismatch=0.8, zero_prob=0.2))

#: Tree size (K, D, N) a spec that leaves it open is resolved at: small enough for eager enumeration.
CONTRACT_SIZE = (2, 2, 3)


@dataclass
class MethodCheck:
    """What :func:`check_method` checked (plain data).

    Attributes
    ----------
    method : dict
        The resolved method (its ``to_dict``).
    pairs : list of dict, default []
        Per pair certified: ``pair`` (its label), ``lossless``, ``max_deviation`` (as text),
        ``classes``, ``branches``.
    mc : list of dict, default []
        Per pair sampled (check 3): ``pair``, ``n`` (steps sampled), the chi-square ``statistic``,
        ``df`` and ``p_value``.
    """

    method: dict  # the resolved method (its ``to_dict``)
    pairs: list = field(default_factory=list)  # per pair: name, lossless, max_deviation, classes, branches
    mc: list = field(default_factory=list)  # per pair: N, chi-square statistic, df, p-value


def _pairs(pairs):
    from ..pairs import example_pair, random_pair

    out = []
    for spec in (CONTRACT_PAIRS if pairs is None else pairs):
        if spec is None:
            out.append(("built-in example", example_pair()))
        elif isinstance(spec, dict):
            out.append((f"random_pair({', '.join(f'{k}={v}' for k, v in spec.items())})", random_pair(**spec)))
        else:
            out.append((getattr(spec, "name", None) or type(spec).__name__, spec.to_exact()))
    return out


def _first_step(method, pair, seed: int):
    """The method one step runs: ``method`` itself, or for a policy that learns across steps
    (``online``) the method its policy runs first, so that every sample is a draw of one law."""
    from ..methods.registry import FixedPolicy, step_policy

    policy = step_policy(method, seed)
    if isinstance(policy, FixedPolicy):
        return method
    return policy.choose(pair.to_float().q(()) if policy.reads_root else None)


def check_method(spec, pairs=None, size=CONTRACT_SIZE, samples: int = 4000, alpha: float = 1e-4, seed: int = 0,
                 lossless: bool | None = None) -> MethodCheck:
    """Check the contract of the method ``spec`` (see the module docstring); raise on a break.

    Parameters
    ----------
    spec : str, dict or Method
        A preset, family or reference (``my_method.py:ForkMethod``), resolved at ``size``.
    pairs : sequence of (None, dict or ToyPair), optional
        Pairs to check on (``None``, the default: :data:`CONTRACT_PAIRS`); ``None`` items mean the
        example pair, dicts are :func:`~rheotheory.pairs.random_pair` arguments, other items are
        pairs (converted with their ``to_exact``). A pair whose horizon is below the method's depth
        is skipped.
    size : tuple of int, default CONTRACT_SIZE
        ``(K, D, N)`` for the size fields the spec leaves open.
    samples : int, default 4000
        Monte Carlo steps per pair for check 3 (0 skips it).
    alpha : float, default 1e-4
        Level of each chi-square test of check 3 (one test per pair).
    seed : int, default 0
        Seed of the Monte Carlo steps (and of the method's step policy).
    lossless : bool or None, optional
        True: also require every certificate to be lossless; ``None`` (default) or False: not.

    Returns
    -------
    MethodCheck
        The certificates and tests made.

    Raises
    ------
    AssertionError
        A rule of the contract is broken (the message says which, where, and what to change), the
        spec does not resolve, or no pair has the horizon for the method's depth.
    """
    from ..exact import certify
    from ..methods import resolve
    from ..montecarlo import sample_outputs
    from ..stats import chi_square_law

    try:
        method = resolve(spec, size=size)
    except RheoError as e:
        raise AssertionError(f"check_method({spec!r}): the spec does not resolve: {e}") from None
    name = method.describe()
    out = MethodCheck(method.to_dict())
    for label, pair in _pairs(pairs):
        if getattr(pair, "horizon", None) is not None and method.depth > pair.horizon:
            continue
        where = f"check_method({name}) on {label}"
        step = _first_step(method, pair, seed)
        try:
            cert = certify(pair, step, strict=True)
        except RheoError as e:
            raise AssertionError(f"{where}: {e}") from None
        eager = certify(pair, step, eager=True)
        if eager.z_law != cert.z_law:
            z = next(z for z in sorted(set(eager.z_law) | set(cert.z_law)) if eager.z_law.get(z) != cert.z_law.get(z))
            raise AssertionError(f"{where}: the law of Z with lazy draws differs from the law with every draw made "
                                 f"(P(Z={list(z)}): {cert.z_law.get(z, 0)} lazy, {eager.z_law.get(z, 0)} eager): the "
                                 "builder reads a sampled token without resolving it through tree.resolve, or its "
                                 "construction depends on a leaf it left unresolved")
        out.pairs.append(dict(pair=label, lossless=bool(cert.lossless), max_deviation=str(cert.max_deviation),
                              classes=cert.classes, branches=cert.branches))
        if samples:
            zs = sample_outputs(pair, step, samples, seed=seed)
            test = chi_square_law(zs, cert.z_law)
            out.mc.append(dict(pair=label, n=samples, statistic=test.statistic, df=test.df, p_value=test.p_value))
            if test.rejects(alpha):
                raise AssertionError(
                    f"{where}: the sampled steps do not follow the enumerated law of Z ({test.report(alpha)}; worst "
                    f"cell {test.worst_cell}: observed {test.observed}, expected {test.expected:.1f}): the builder "
                    "draws differently when sampled than when enumerated (a draw outside the chooser, or state kept "
                    "between calls)")
        if lossless and not cert.lossless:
            raise AssertionError(f"{where}: LOSSY, max deviation {cert.max_deviation} at {list(cert.worst_sequence)}")
    if not out.pairs:
        raise AssertionError(f"check_method({name}): no contract pair has the horizon for depth {method.depth}")
    return out
