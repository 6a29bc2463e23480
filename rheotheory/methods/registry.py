"""The method registry: tree families, named presets and the default tree sizes.

A *method* is one speculative-decoding step: a tree family's builder configured by its fields,
plus the per-node verifier walked over the finished tree (docs/theory.md sections 2 and 3).
Each family is a frozen dataclass subclass of :class:`Method`, registered with
:func:`register`; its fields carry their own command-line metadata (:func:`option`), so every
command, the hypothesis strategies and the counterexample search discover a new family from
the registry alone. A *preset* is a named, fully specified choice of family and fields; the
tree size (K, D, N) it leaves open comes from the command family's row of :data:`TREE_SIZES`.

>>> m = resolve("eagle", size="toy")
>>> (m.family, m.top_k, m.depth, m.budget, m.verifier)
('eagle', 3, 3, 8, 'onehot')
>>> resolve("rheo:proxy=tail", size=(2, 4, 8)).describe()
'rheo K=2 D=4 N=8 head=1 proxy=tail fillers=rank greedy=same verifier=ot'
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable, ClassVar

from ..errors import TreeError, VerifierError
from ..verify import TREE_VERIFIERS, get_verifier, tree_verifier

__all__ = ["Method", "Preset", "StepPolicy", "FixedPolicy", "step_policy", "next_policy", "option", "register", "FAMILIES", "PRESETS", "TREE_SIZES", "SIZE_FIELDS",
           "family_class", "make_method", "resolve", "field_options", "presets_table"]

#: Registered families: name -> Method subclass (filled by :func:`register`).
FAMILIES: dict[str, type] = {}

#: Named presets: name -> :class:`Preset` (filled by :func:`preset`).
PRESETS: dict = {}

#: The tree-size fields a command family fills when neither the preset nor the user sets them.
SIZE_FIELDS = ("top_k", "depth", "budget")

#: Default tree size (K, D, N) per command family. One table: every command names its row.
#:
#: - ``toy``: ``certify``, ``counterexample`` and ``mc`` (exact enumeration stays small);
#: - ``sweep``: ``sweep`` (V = 1000 synthetic pairs);
#: - ``builtin``: ``decode``/``bench`` with the built-in character-level pair (a small tree gave
#:   the best measured CPU wall-clock at T = 1, docs/guide/real-models.md);
#: - ``smollm2``: ``decode``/``bench --model smollm2`` on a CPU: the size ``--budget auto`` chose
#:   for rheo-tuned at T = 1 on a 2-core CPU (benchmarks/tree_size.py, docs/guide/smollm2.md);
#: - ``model``: ``decode``/``bench`` with other models (a ``--target``/``--draft`` pair).
TREE_SIZES: dict[str, tuple[int, int, int]] = {
    "toy": (3, 3, 8),
    "sweep": (6, 5, 32),
    "builtin": (2, 4, 8),
    "smollm2": (2, 1, 2),
    "model": (4, 6, 20),
}


def option(default=None, *, help: str, label: str | None = None, parse: Callable | None = None,
           choices: tuple | None = None, metavar: str | None = None, search: tuple | None = None,
           examples: tuple | None = None):
    """A family field with its command-line metadata.

    Used in a :class:`Method` subclass body as ``depth: int = option(None, help=...)``. The flag is
    ``--`` + the field name with ``_`` as ``-``.

    Parameters
    ----------
    default : object, optional
        The field's default (``None``: unset; size fields are then filled from :data:`TREE_SIZES`
        by :func:`resolve`).
    help : str
        The flag's help text, as ``rheo methods`` and ``--help`` print it.
    label : str, optional
        Names the field in :meth:`Method.describe` (default: the field name).
    parse : callable, optional
        ``parse(text) -> value``: turns a command-line or spec-string value into the field's type
        (default: ``str``, or an integer for integer defaults).
    choices : tuple of str, optional
        The admitted values.
    metavar : str, optional
        The value's name in ``--help`` (``K``, ``D``, ``N``, ...).
    search : tuple of (int, int), optional
        The small inclusive range ``(lo, hi)`` the hypothesis strategies and the counterexample
        search draw integers from.
    examples : tuple, optional
        Values of a field with neither ``choices`` nor ``search`` (e.g. a head rule or a small
        integer) the hypothesis strategies draw from, invalid combinations filtered.

    Returns
    -------
    dataclasses.Field
        The field, with these arguments in its ``metadata`` (:func:`field_options`).
    """
    return field(default=default, metadata=dict(help=help, label=label, parse=parse, choices=choices,
                                                 metavar=metavar, search=search, examples=examples))


def positive_int(text) -> int:
    """An integer >= 1 (command-line and spec-string values of size fields)."""
    try:
        v = int(text)
    except (TypeError, ValueError):
        raise TreeError(f"{text!r} is not an integer") from None
    if v < 1:
        raise TreeError(f"{text!r} must be >= 1")
    return v


@dataclass(frozen=True)
class Method:
    """Base of every tree family: a fully resolved, plain-data description of one step.

    Subclasses set the class attributes ``family`` (registry name), ``summary`` (one line for
    ``rheo methods``), ``verifiers`` (admitted per-node verifiers, the default first) and
    ``shrink_fields`` (integer fields the counterexample search shrinks, in this order, and that
    bound the depth), declare their fields with :func:`option`, and implement :meth:`builder` and
    :attr:`nodes`. ``verifier`` is common to all.

    Attributes
    ----------
    verifier : str, optional
        The per-node rule walked over the finished tree (docs/theory.md section 3), or a
        tree-level verifier (section 7.1), by registered name; ``None`` (the default) means the
        family's default (:meth:`default_verifier`), which the constructor writes back.

    Raises
    ------
    VerifierError
        On construction: ``verifier`` is unknown, or not admitted by the family
        (:meth:`admitted_verifiers`).
    TreeError
        On construction: a field fails the family's :meth:`validate`.
    """

    family: ClassVar[str] = ""  # registry name
    summary: ClassVar[str] = ""  # one line for `rheo methods`
    verifiers: ClassVar[tuple[str, ...]] = ()  # admitted per-node verifiers, the default first
    #: integer fields the counterexample search shrinks (in this order) and that bound the depth
    shrink_fields: ClassVar[tuple[str, ...]] = ()

    verifier: str | None = option(None, help="per-node verifier (default: the family's first)")

    def __post_init__(self):
        ver = self.verifier or self.default_verifier()
        tree_verifier(ver)  # unknown names
        admitted = self.admitted_verifiers()
        if ver not in admitted:
            raise VerifierError(f"verifier {ver!r} does not apply to {self.family} trees; "
                                f"choose from {', '.join(admitted)}")
        object.__setattr__(self, "verifier", ver)
        self.validate()

    @classmethod
    def admitted_verifiers(cls) -> tuple[str, ...]:
        """The verifier names this family admits.

        Returns
        -------
        tuple of str
            The family's per-node verifiers (``verifiers``, the default first), the per-node rules
            registered for it (or for every family: :func:`~rheotheory.verify.rules.register_rule`),
            then the tree-level verifiers that name it.
        """
        from ..verify.rules import RULE_FAMILIES

        rules = tuple(n for n, fams in RULE_FAMILIES.items()
                      if n not in cls.verifiers and (fams is None or cls.family in fams))
        trees = tuple(n for n, tv in TREE_VERIFIERS.items() if tv.families is None or cls.family in tv.families)
        return cls.verifiers + rules + trees

    # -- what a family provides -------------------------------------------------------------
    def default_verifier(self) -> str:
        """The verifier a method with ``verifier=None`` gets.

        Returns
        -------
        str
            The first of the family's ``verifiers`` (a family may choose by its fields).
        """
        return self.verifiers[0]

    def validate(self) -> None:
        """Check and normalise the fields (``object.__setattr__`` on a frozen instance)."""

    def require_positive(self, *names: str) -> None:
        """Each named field must be an integer >= 1 (one message for every family).

        Parameters
        ----------
        *names : str
            The field names to check.

        Raises
        ------
        TreeError
            A named field is not an integer >= 1 (a bool is not an integer here).
        """
        for name in names:
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise TreeError(f"{name} must be a positive integer, got {v!r}")

    def builder(self, pair, cache=None) -> Callable:
        """A function ``chooser -> Tree`` building this method's draft tree on ``pair``.

        Parameters
        ----------
        pair : ToyPair or SyntheticPair
            The target and draft laws (any object with the pair protocol of
            :mod:`rheotheory.pairs`: ``p(prefix)``, ``q(prefix)``, each ``# [vocab]``).
        cache : ExpansionCache, optional
            Ranked draft laws shared by the trees built on ``pair`` (dynamic families; the others
            ignore it). Default: a new one per builder.

        Returns
        -------
        callable
            ``build(chooser) -> Tree``: one finished draft tree, every random choice drawn
            through ``chooser`` (:class:`~rheotheory.trees.tree.Chooser`).

        Raises
        ------
        NotImplementedError
            On the base class: every family implements it.
        """
        raise NotImplementedError

    @property
    def nodes(self) -> int:
        """Most draft nodes a tree of this method holds (the node budget methods are compared at)."""
        raise NotImplementedError

    def at_temperature(self, temperature: float) -> "Method":
        """The method actually run at target temperature T (most families: itself).

        Parameters
        ----------
        temperature : float
            The target's sampling temperature T (0: greedy).

        Returns
        -------
        Method
            The method a step at T runs.
        """
        return self

    def run_key(self) -> str:
        """What a step of this method builds and verifies, as text.

        Returns
        -------
        str
            JSON of :meth:`to_dict` with sorted keys: two methods with equal keys run the same
            step (fields read only by :meth:`at_temperature` are left out where a family says so).
        """
        import json

        return json.dumps(self.to_dict(), sort_keys=True)

    def policy(self, seed: int = 0) -> "StepPolicy":
        """What each step of a run of this method runs (docs/theory.md section 2.8).

        Parameters
        ----------
        seed : int, default 0
            The run's seed; a learning policy seeds its own draws from it (a fixed policy ignores it).

        Returns
        -------
        StepPolicy
            A :class:`FixedPolicy` (this method at every step) for every family but ``online``,
            whose policy learns from earlier steps.
        """
        return FixedPolicy(self)

    def known_lossy(self) -> str | None:
        """Why this method is known to be lossy (docs/theory.md section 8), or None.

        Returns
        -------
        str or None
            Here, the :attr:`~rheotheory.verify.walk.TreeVerifier.lossy` reason of a tree-level
            verifier found lossy where it is registered; a family adds its own field combinations
            and falls back on this.
        """
        tv = TREE_VERIFIERS.get(self.verifier)
        return getattr(tv, "lossy", None)

    @classmethod
    def size_from_fields(cls, fields: dict) -> bool:
        """Whether ``fields`` already fix the tree's size.

        Parameters
        ----------
        fields : dict[str, object]
            Field name -> value, as :func:`resolve` collected them from the preset, spec and overrides.

        Returns
        -------
        bool
            True when the size is fixed (then no :data:`TREE_SIZES` row is applied); here, never.
        """
        return False

    def fit(self, **changes) -> "Method":
        """A copy with ``changes``, dependent fields adjusted to stay valid (e.g. rheo's head <= K-1).

        Parameters
        ----------
        **changes : object
            Field name -> new value.

        Returns
        -------
        Method
            The new method (validated by its constructor).
        """
        return dataclasses.replace(self, **changes)

    # -- shared behaviour --------------------------------------------------------------------
    @property
    def verify(self) -> Callable:
        """The per-node rule (docs/theory.md section 3); a VerifierError for a tree-level verifier."""
        return get_verifier(self.verifier)

    @property
    def tree_verifier(self):
        """The verifier as a map from a finished tree to the law of Z (docs/theory.md section 7)."""
        return tree_verifier(self.verifier)

    def fields(self) -> dict:
        """The fields' values.

        Returns
        -------
        dict[str, object]
            Field name -> value, in declaration order (``verifier`` first).
        """
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def describe(self) -> str:
        """One line: the family, then ``label=value`` for every field.

        Returns
        -------
        str
            E.g. ``'chain D=2 verifier=sequential'`` (the verifier last).
        """
        parts = [self.family]
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name == "verifier":
                continue
            if isinstance(v, tuple):
                v = [list(t) for t in v]
            parts.append(f"{f.metadata.get('label') or f.name}={v}")
        parts.append(f"verifier={self.verifier}")
        return " ".join(parts)

    def to_dict(self) -> dict:
        """The fully resolved spec as JSON-ready data.

        Two results describe the same method exactly when their ``method`` objects are equal.

        Returns
        -------
        dict[str, object]
            ``{"family": name, field: value, ...}``, tuples written as lists.
        """
        d = {"family": self.family}
        for k, v in self.fields().items():
            d[k] = [list(t) for t in v] if isinstance(v, tuple) else v
        return d


class StepPolicy:
    """The method a step runs, chosen before the step draws anything (docs/theory.md section 2.8).

    A policy is a value: :meth:`after` returns the policy of the next step and leaves this one as
    it was, so the exact n-step certifier (:func:`rheotheory.exact.certify_steps`) can follow every
    branch of the first step's outcome from the same policy. ``choose`` reads the draft's law at the
    step's root (a function of the prefix, which the step's draws do not change) only when
    :attr:`reads_root` is true; callers pass None otherwise.
    """

    #: whether :meth:`choose` reads the draft's root law
    reads_root: bool = False

    def choose(self, root_q=None) -> "Method":
        """The method of this step.

        Parameters
        ----------
        root_q : numpy.ndarray of shape (V,), optional
            The draft's law at the step's root, # [vocab]; read only when :attr:`reads_root` is
            true (callers pass None otherwise).

        Returns
        -------
        Method
            The method this step runs.

        Raises
        ------
        NotImplementedError
            On the base class: every policy implements it.
        """
        raise NotImplementedError

    def after(self, method: "Method", z: tuple) -> "StepPolicy":
        """The policy of the next step, once this step ran ``method`` and emitted ``z``.

        Parameters
        ----------
        method : Method
            The method the step ran (what :meth:`choose` returned).
        z : tuple of int
            The step's output Z: the accepted draft tokens, then the emitted one.

        Returns
        -------
        StepPolicy
            The next step's policy (this one is left as it was).

        Raises
        ------
        NotImplementedError
            On the base class: every policy implements it.
        """
        raise NotImplementedError

    def next(self, method: "Method", z: tuple, pair) -> "StepPolicy":
        """:meth:`after`, for a driver that holds the step's pair.

        A policy may also learn what the target's laws there say about methods the step did not
        run (``rheo-online:feedback=greedy``); functions of the prefix, never of the step's draws.

        Parameters
        ----------
        method : Method
            The method the step ran.
        z : tuple of int
            The step's output Z.
        pair : ToyPair or SyntheticPair
            The step's pair, at the step's prefix (the pair protocol of :mod:`rheotheory.pairs`).

        Returns
        -------
        StepPolicy
            The next step's policy; here ``after(method, z)``.
        """
        return self.after(method, z)


@dataclass(frozen=True)
class FixedPolicy(StepPolicy):
    """The same method at every step.

    Attributes
    ----------
    method : Method
        The method every step runs.
    """

    method: "Method"

    def choose(self, root_q=None) -> "Method":
        """The method of this step: always :attr:`method`.

        Parameters
        ----------
        root_q : numpy.ndarray of shape (V,), optional
            The draft's root law, # [vocab]; not read.

        Returns
        -------
        Method
            :attr:`method`.
        """
        return self.method

    def after(self, method: "Method", z: tuple) -> "StepPolicy":
        """The policy of the next step: this one.

        Parameters
        ----------
        method : Method
            The method the step ran; not read.
        z : tuple of int
            The step's output Z; not read.

        Returns
        -------
        StepPolicy
            ``self``.
        """
        return self


def next_policy(policy, method, z: tuple, pair):
    """The policy after a step of ``method`` that emitted ``z`` on ``pair``.

    Parameters
    ----------
    policy : StepPolicy
        The step's policy (any object with ``after``; ``next`` is used when it has one).
    method : Method
        The method the step ran.
    z : tuple of int
        The step's output Z: the accepted draft tokens, then the emitted one.
    pair : ToyPair or SyntheticPair
        The step's pair, at the step's prefix.

    Returns
    -------
    StepPolicy
        :meth:`StepPolicy.next`, or ``policy.after(method, z)`` for a policy object without it.
    """
    nxt = getattr(policy, "next", None)
    return nxt(method, z, pair) if nxt is not None else policy.after(method, z)


def step_policy(method, seed: int = 0) -> StepPolicy:
    """``method.policy(seed)``, for an object that stands in for a method too.

    A wrapper that forwards ``policy`` to the method it wraps gets a fixed policy over itself, not
    over the wrapped method (whose builder or verifier the wrapper may replace).

    Parameters
    ----------
    method : Method
        The method, or an object standing in for one (with a ``policy(seed)`` method).
    seed : int, default 0
        The run's seed, passed to ``method.policy``.

    Returns
    -------
    StepPolicy
        The run's policy at its first step.
    """
    policy = method.policy(seed)
    if isinstance(policy, FixedPolicy) and policy.method is not method:
        return FixedPolicy(method)
    return policy


def register(cls: type) -> type:
    """Class decorator adding a :class:`Method` subclass to :data:`FAMILIES`.

    Parameters
    ----------
    cls : type
        A :class:`Method` subclass with a ``family`` name and at least one verifier.

    Returns
    -------
    type
        ``cls`` itself.

    Raises
    ------
    TypeError
        ``cls`` is not a :class:`Method` subclass, or has no ``family`` name.
    ValueError
        The name is already a family or a preset, or the family admits no verifier.
    """
    if not (isinstance(cls, type) and issubclass(cls, Method)) or not cls.family:
        raise TypeError("register takes a Method subclass with a family name")
    if cls.family in FAMILIES or cls.family in PRESETS:
        raise ValueError(f"family {cls.family!r} is registered twice")
    if not cls.verifiers:
        raise ValueError(f"family {cls.family!r} admits no verifier")
    FAMILIES[cls.family] = cls
    return cls


def family_class(name: str) -> type:
    """The registered family ``name``; an unknown name is an error, never a fall-through.

    Parameters
    ----------
    name : str
        A family name (a key of :data:`FAMILIES`).

    Returns
    -------
    type
        The family's :class:`Method` subclass.

    Raises
    ------
    TreeError
        No family has that name (the message lists the registered ones).
    """
    cls = FAMILIES.get(name)
    if cls is None:
        raise TreeError(f"unknown method family {name!r}; choose from {', '.join(FAMILIES)}")
    return cls


def make_method(method: str, **fields) -> Method:
    """The method of family ``method`` with ``fields`` (no preset is applied).

    Parameters
    ----------
    method : str
        A family name (a key of :data:`FAMILIES`).
    **fields : object
        Field name -> value. Size fields not given take the ``toy`` row of :data:`TREE_SIZES`,
        other fields their family defaults.

    Returns
    -------
    Method
        The fully resolved method.

    Raises
    ------
    TreeError
        An unknown family or field, or a field value the family refuses.
    VerifierError
        A ``verifier`` field the family does not admit.

    Examples
    --------
    >>> make_method("chain", depth=2).describe()
    'chain D=2 verifier=sequential'
    >>> make_method("rheo").describe()
    'rheo K=3 D=3 N=8 head=2 proxy=next fillers=rank greedy=same verifier=ot'
    """
    family_class(method)
    return resolve({"family": method}, size="toy", **fields)


@dataclass(frozen=True)
class Preset:
    """A named method: a family and the fields it fixes (the tree size may stay open).

    Attributes
    ----------
    name : str
        The name every command accepts (``--preset NAME``, sweep specs).
    family : str
        The registered family.
    fields : dict[str, object]
        The fixed fields (sizes not listed come from the command's :data:`TREE_SIZES` row).
    summary : str
        What it is and why (one or two sentences, with the evidence).
    """

    name: str  # the name every command accepts (`--preset NAME`, sweep specs)
    family: str  # registered family
    fields: dict  # fixed fields (sizes not listed come from the command's TREE_SIZES row)
    summary: str  # what it is and why (one or two sentences, with the evidence)

    def to_dict(self) -> dict:
        """The preset as JSON-ready data.

        Returns
        -------
        dict[str, object]
            ``{"name": ..., "family": ..., "fields": {...}, "summary": ...}``.
        """
        return {"name": self.name, "family": self.family, "fields": dict(self.fields), "summary": self.summary}


def preset(name: str, family: str, summary: str, **fields) -> Preset:
    """Register a preset (validated against its family's fields at a toy size)."""
    if name in PRESETS:
        raise ValueError(f"preset {name!r} is defined twice")
    p = Preset(name, family, dict(fields), summary)
    PRESETS[name] = p
    return p


def field_options(cls: type) -> dict:
    """Field name -> its :func:`option` metadata, for one family.

    Parameters
    ----------
    cls : type
        A :class:`Method` subclass (a registered family).

    Returns
    -------
    dict[str, dict]
        Field name -> the keyword arguments its :func:`option` was given (``help``, ``label``,
        ``parse``, ``choices``, ``metavar``, ``search``, ``examples``), in declaration order.
    """
    return {f.name: dict(f.metadata) for f in dataclasses.fields(cls)}


def _parse_value(cls: type, name: str, text):
    meta = field_options(cls)[name]
    if not isinstance(text, str):
        return text
    parse = meta.get("parse")
    if parse is not None:
        return parse(text)
    choices = meta.get("choices")
    if choices is not None and text not in choices:
        raise TreeError(f"{name}={text!r} is not one of {', '.join(map(str, choices))}")
    return text


def _split_spec(spec: str) -> tuple[str, dict]:
    name, *opts = spec.split(":")
    kv = {}
    last = None
    for opt in opts:
        key, eq, val = opt.partition("=")
        if not eq and last == "verifier" and opt.isidentifier():
            # NOTE: a rule in a file, verifier=my_rules.py:my_rule, holds the separator itself
            kv[last] += ":" + opt
            continue
        if not eq or not key:
            raise TreeError(f"bad option {opt!r} in method spec {spec!r}; use name:field=value:...")
        last = key.replace("-", "_")
        kv[last] = val
    return name, kv


#: Short option names accepted in spec strings (``rheo:m=1``).
SPEC_ALIASES = {"m": "head", "k": "top_k", "d": "depth", "n": "budget"}


def _no_field(cls, names, field: str, spec, written: str) -> str:
    """The message for a field ``cls`` lacks, in the API's terms (field names and spec aliases)."""
    alias = {v: k for k, v in SPEC_ALIASES.items()}
    fields = ", ".join(n + (f" ({alias[n]})" if n in alias else "") for n in names)
    hint = ""
    low = written.lower()
    if low != written and SPEC_ALIASES.get(low, low) in names:
        hint = f" (field names are lower case: {low!r}" + (
            f", the tree size {SPEC_ALIASES[low]}" if low in SPEC_ALIASES else "") + ")"
    where = f"method spec {spec!r}: " if spec is not None else ""
    shown = repr(written) + (f" ({field})" if written != field and not hint else "")
    return f"{where}{cls.family} has no field {shown}{hint}; its fields: {fields}"


def resolve(spec, size: str | tuple | None = None, **overrides) -> Method:
    """The fully resolved :class:`Method` of a spec.

    Parameters
    ----------
    spec : Method or str or dict
        A :class:`Method` (returned with ``overrides`` applied); a preset or family name with
        optional ``:field=value`` options (``rheo:m=1:proxy=tail``; the aliases ``m``, ``k``,
        ``d``, ``n`` for head, top_k, depth, budget), or a plugin reference ``WHERE:NAME[:...]``
        (:mod:`rheotheory.plugin`); or a dict ``{"family": ..., field: value}`` (a family, never a
        preset).
    size : str or tuple of (int, int, int), optional
        Where the size fields neither the spec nor ``overrides`` set come from: a
        :data:`TREE_SIZES` row name or a ``(K, D, N)`` tuple. None: no size is filled in.
    **overrides : object
        Field name -> value, applied last. Values None are ignored; one naming a field the family
        lacks is an error naming it.

    Returns
    -------
    Method
        The method, validated by its family.

    Raises
    ------
    TreeError
        An unknown preset, family, field or size row, a malformed spec, or a field value the family
        refuses.
    VerifierError
        The verifier is unknown, or not admitted by the family.
    PluginError
        A reference's plugin does not load, or names something that is not a method.

    Examples
    --------
    >>> resolve("rheo", size="toy").to_dict()["head"]
    1
    >>> resolve("chain", size="toy", shape=[[0]])
    Traceback (most recent call last):
    ...
    rheotheory.errors.TreeError: chain has no field 'shape'; its fields: verifier, depth (d)
    """
    overrides = {k: v for k, v in overrides.items() if v is not None}
    if isinstance(spec, Method):
        return spec.fit(**overrides) if overrides else spec
    written: dict = {}
    if isinstance(spec, dict):
        spec = dict(spec)
        name = spec.pop("family", None) or spec.pop("method", None)
        if not isinstance(name, str):
            raise TreeError(f"a method object needs a 'family' name, got {name!r}")
        opts = spec
        if name not in FAMILIES:
            from ..plugin_loader import ensure_plugins

            ensure_plugins()
        if name not in FAMILIES:  # NOTE: a method object names a family, never a preset
            raise TreeError(f"unknown method family {name!r}; choose from {', '.join(FAMILIES)}")
    elif isinstance(spec, str) and spec:
        from ..plugin_loader import ensure_plugins, is_reference  # NOTE: plugins load lazily

        head = spec.split(":")[0]
        if is_reference(spec) and head not in PRESETS and head not in FAMILIES:  # FILE.py:NAME or MODULE:NAME
            target, extra = method_by_reference(spec)
            if isinstance(target, Method):
                _, given = _split_spec(":".join(["x"] + extra))
                return resolve(target, size=size, **{SPEC_ALIASES.get(k, k): _parse_value(type(target),
                               SPEC_ALIASES.get(k, k), v) for k, v in given.items()}, **overrides)
            spec = ":".join([target] + extra)
        elif head not in PRESETS and head not in FAMILIES:
            ensure_plugins()
        name, opts = _split_spec(spec)
        written = {SPEC_ALIASES.get(k, k): k for k in opts}  # field -> as the spec wrote it
        opts = {SPEC_ALIASES.get(k, k): v for k, v in opts.items()}
    else:
        raise TreeError(f"a method spec must be a preset or family name, got {spec!r}")
    if name in PRESETS and not isinstance(spec, dict):
        p = PRESETS[name]
        cls, fields = FAMILIES[p.family], dict(p.fields)
    elif name in FAMILIES:
        cls, fields = FAMILIES[name], {}
    else:
        raise TreeError(f"unknown method {name!r}; presets: {', '.join(PRESETS)}; families: {', '.join(FAMILIES)}")
    names = [f.name for f in dataclasses.fields(cls)]
    for where, given in (("spec", opts), ("override", overrides)):
        bad = [k for k in given if k not in names]
        if bad:
            raise TreeError(_no_field(cls, names, bad[0], spec if where == "spec" else None,
                                      written.get(bad[0], bad[0]) if where == "spec" else bad[0]))
    for k, v in opts.items():
        fields[k] = _parse_value(cls, k, v)
    fields.update(overrides)
    if size is not None and not cls.size_from_fields(fields):
        if isinstance(size, str):
            if size not in TREE_SIZES:
                raise TreeError(f"unknown tree-size row {size!r}; choose from {', '.join(TREE_SIZES)}")
            size = TREE_SIZES[size]
        for k, v in zip(SIZE_FIELDS, size):
            if k in names and k not in fields:
                fields[k] = v
    return cls(**fields)


def method_by_reference(spec: str):
    """``(name, options)`` for a spec ``WHERE:NAME[:field=value...]``: the family or preset name the
    object registers as (a :class:`Method` subclass not registered yet is registered here), or a
    :class:`Method` object itself, and the option texts that follow."""
    from ..plugin_loader import PluginError, load_object

    obj = load_object(spec)
    opts = spec.split(":")[2:]
    if isinstance(obj, type) and issubclass(obj, Method):
        if FAMILIES.get(obj.family) is not obj:
            register(obj)
        return obj.family, opts
    if isinstance(obj, Preset):
        return obj.name, opts
    if isinstance(obj, (Method, str)):
        return obj, opts
    where, name = spec.split(":")[:2]
    raise PluginError(f"{where}:{name} is a {type(obj).__name__}; a method reference names a Method subclass "
                      "(a family), a preset or a method object")


def presets_table() -> list[dict]:
    """Every preset resolved at every command family's default size (``rheo methods --json``).

    Returns
    -------
    list of dict
        One :meth:`Preset.to_dict` per preset, in registration order, with a ``"resolved"`` key:
        :data:`TREE_SIZES` row name -> :meth:`Method.to_dict` at that size.
    """
    out = []
    for p in PRESETS.values():
        d = p.to_dict()
        d["resolved"] = {row: resolve(p.name, size=row).to_dict() for row in TREE_SIZES}
        out.append(d)
    return out
