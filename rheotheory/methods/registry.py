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

    ``label`` names the field in :meth:`Method.describe` (default: the field name); ``parse``
    turns a command-line or spec-string value into the field's type (default: ``str``, or an
    integer for integer defaults); ``choices`` are the admitted values; ``search`` is the small
    inclusive range ``(lo, hi)`` the hypothesis strategies and the counterexample search draw
    integers from; ``examples`` are values of a field with neither (e.g. a head rule or a small
    integer) the hypothesis strategies draw from, invalid combinations filtered. The flag is ``--``
    + the field name with ``_`` as ``-``.
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

    Subclasses set the class attributes below, declare their fields with :func:`option`, and
    implement :meth:`builder`. ``verifier`` is common to all: the per-node rule walked over the
    finished tree (docs/theory.md section 3), ``None`` meaning the family's default.
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
        """The family's per-node verifiers, the per-node rules registered for it (or for every family:
        :func:`~rheotheory.verify.rules.register_rule`), then the tree-level verifiers that name it."""
        from ..verify.rules import RULE_FAMILIES

        rules = tuple(n for n, fams in RULE_FAMILIES.items()
                      if n not in cls.verifiers and (fams is None or cls.family in fams))
        trees = tuple(n for n, tv in TREE_VERIFIERS.items() if tv.families is None or cls.family in tv.families)
        return cls.verifiers + rules + trees

    # -- what a family provides -------------------------------------------------------------
    def default_verifier(self) -> str:
        return self.verifiers[0]

    def validate(self) -> None:
        """Check and normalise the fields (``object.__setattr__`` on a frozen instance)."""

    def require_positive(self, *names: str) -> None:
        """Each named field must be an integer >= 1 (one message for every family)."""
        for name in names:
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise TreeError(f"{name} must be a positive integer, got {v!r}")

    def builder(self, pair, cache=None) -> Callable:
        """A function ``chooser -> Tree`` building this method's draft tree on ``pair``."""
        raise NotImplementedError

    @property
    def nodes(self) -> int:
        """Most draft nodes a tree of this method holds (the node budget methods are compared at)."""
        raise NotImplementedError

    def at_temperature(self, temperature: float) -> "Method":
        """The method actually run at target temperature T (most families: itself)."""
        return self

    def run_key(self) -> str:
        """What a step of this method builds and verifies, as text: two methods with equal keys run
        the same step (fields read only by :meth:`at_temperature` are left out where a family says so)."""
        import json

        return json.dumps(self.to_dict(), sort_keys=True)

    def policy(self, seed: int = 0) -> "StepPolicy":
        """What each step of a run of this method runs (docs/theory.md section 2.8): this method at
        every step, for every family but ``online``, whose policy learns from earlier steps."""
        return FixedPolicy(self)

    def known_lossy(self) -> str | None:
        """Why this method is known to be lossy (docs/theory.md section 8), or None: here, the
        :attr:`~rheotheory.verify.walk.TreeVerifier.lossy` reason of a tree-level verifier found lossy
        where it is registered; a family adds its own field combinations and falls back on this."""
        tv = TREE_VERIFIERS.get(self.verifier)
        return getattr(tv, "lossy", None)

    @classmethod
    def size_from_fields(cls, fields: dict) -> bool:
        """True when ``fields`` already fix the tree's size (then no TREE_SIZES row is applied)."""
        return False

    def fit(self, **changes) -> "Method":
        """A copy with ``changes``, dependent fields adjusted to stay valid (e.g. rheo's head <= K-1)."""
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
        """Field name -> value, in declaration order."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def describe(self) -> str:
        """One line: the family, then ``label=value`` for every field."""
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
        """The fully resolved spec as JSON-ready data: ``{"family": name, field: value, ...}``.

        Two results describe the same method exactly when their ``method`` objects are equal.
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
        """The method of this step."""
        raise NotImplementedError

    def after(self, method: "Method", z: tuple) -> "StepPolicy":
        """The policy of the next step, once this step ran ``method`` and emitted ``z``."""
        raise NotImplementedError

    def next(self, method: "Method", z: tuple, pair) -> "StepPolicy":
        """:meth:`after`, for a driver that holds the step's pair (``pair``, at the step's prefix): a
        policy may also learn what the target's laws there say about methods the step did not run
        (``rheo-online:feedback=greedy``); functions of the prefix, never of the step's draws."""
        return self.after(method, z)


@dataclass(frozen=True)
class FixedPolicy(StepPolicy):
    """The same method at every step."""

    method: "Method"

    def choose(self, root_q=None) -> "Method":
        return self.method

    def after(self, method: "Method", z: tuple) -> "StepPolicy":
        return self


def next_policy(policy, method, z: tuple, pair):
    """The policy after a step of ``method`` that emitted ``z`` on ``pair`` (the step's pair):
    :meth:`StepPolicy.next`, or ``after`` for a policy object without it."""
    nxt = getattr(policy, "next", None)
    return nxt(method, z, pair) if nxt is not None else policy.after(method, z)


def step_policy(method, seed: int = 0) -> StepPolicy:
    """``method.policy(seed)``, for an object that stands in for a method too: a wrapper that
    forwards ``policy`` to the method it wraps gets a fixed policy over itself, not over the
    wrapped method (whose builder or verifier the wrapper may replace)."""
    policy = method.policy(seed)
    if isinstance(policy, FixedPolicy) and policy.method is not method:
        return FixedPolicy(method)
    return policy


def register(cls: type) -> type:
    """Class decorator adding a :class:`Method` subclass to :data:`FAMILIES`."""
    if not (isinstance(cls, type) and issubclass(cls, Method)) or not cls.family:
        raise TypeError("register takes a Method subclass with a family name")
    if cls.family in FAMILIES or cls.family in PRESETS:
        raise ValueError(f"family {cls.family!r} is registered twice")
    if not cls.verifiers:
        raise ValueError(f"family {cls.family!r} admits no verifier")
    FAMILIES[cls.family] = cls
    return cls


def family_class(name: str) -> type:
    """The registered family ``name``; an unknown name is an error, never a fall-through."""
    cls = FAMILIES.get(name)
    if cls is None:
        raise TreeError(f"unknown method family {name!r}; choose from {', '.join(FAMILIES)}")
    return cls


def make_method(method: str, **fields) -> Method:
    """The method of family ``method`` with ``fields``; size fields not given take the ``toy`` row
    of :data:`TREE_SIZES`, other fields their family defaults (no preset is applied).

    >>> make_method("chain", depth=2).describe()
    'chain D=2 verifier=sequential'
    >>> make_method("rheo").describe()
    'rheo K=3 D=3 N=8 head=2 proxy=next fillers=rank greedy=same verifier=ot'
    """
    family_class(method)
    return resolve({"family": method}, size="toy", **fields)


@dataclass(frozen=True)
class Preset:
    """A named method: a family and the fields it fixes (the tree size may stay open)."""

    name: str  # the name every command accepts (`--preset NAME`, sweep specs)
    family: str  # registered family
    fields: dict  # fixed fields (sizes not listed come from the command's TREE_SIZES row)
    summary: str  # what it is and why (one or two sentences, with the evidence)

    def to_dict(self) -> dict:
        return {"name": self.name, "family": self.family, "fields": dict(self.fields), "summary": self.summary}


def preset(name: str, family: str, summary: str, **fields) -> Preset:
    """Register a preset (validated against its family's fields at a toy size)."""
    if name in PRESETS:
        raise ValueError(f"preset {name!r} is defined twice")
    p = Preset(name, family, dict(fields), summary)
    PRESETS[name] = p
    return p


def field_options(cls: type) -> dict:
    """Field name -> its :func:`option` metadata, for one family."""
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
    for opt in opts:
        key, eq, val = opt.partition("=")
        if not eq or not key:
            raise TreeError(f"bad option {opt!r} in method spec {spec!r}; use name:field=value:...")
        kv[key.replace("-", "_")] = val
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

    ``spec`` is a :class:`Method` (returned with ``overrides`` applied), a preset or family name
    with optional ``:field=value`` options (``rheo:m=1:proxy=tail``), or a dict
    ``{"family": ..., field: value}``. Size fields neither the spec nor ``overrides`` set come
    from ``size``: a :data:`TREE_SIZES` row name or a ``(K, D, N)`` tuple. ``overrides`` with
    value None are ignored; one naming a field the family lacks is an error naming it.

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
    """Every preset resolved at every command family's default size (``rheo methods --json``)."""
    out = []
    for p in PRESETS.values():
        d = p.to_dict()
        d["resolved"] = {row: resolve(p.name, size=row).to_dict() for row in TREE_SIZES}
        out.append(d)
    return out
