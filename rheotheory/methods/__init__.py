"""Methods: tree families in one registry, and named presets (docs/theory.md section 2).

A method is a frozen dataclass of its family (:class:`Method` subclasses, one module each),
resolved from a preset or family name by :func:`resolve`. Adding a family is one module with a
``@register``-ed :class:`Method` subclass plus its import line below; every command, the
hypothesis strategies (:mod:`rheotheory.testing`) and the counterexample search pick it up.

>>> sorted(FAMILIES)
['adaptive', 'autoregressive', 'chain', 'eagle', 'multichain', 'online', 'rheo', 'static']
"""

from .registry import (FAMILIES, PRESETS, SIZE_FIELDS, TREE_SIZES, Method, Preset, family_class, field_options,
                       make_method, option, presets_table, register, resolve)

# Family modules: importing one registers its families (one line per module).
from . import autoregressive, dynamic, multichain, static  # noqa: E402,F401  (registration)
from . import adaptive  # noqa: E402,F401  (registration)
from . import online  # noqa: E402,F401  (registration)
from . import presets  # noqa: E402,F401  (the named presets, after the families)
from .autoregressive import AutoregressiveMethod  # noqa: E402
from .dynamic import EagleMethod, RheoMethod  # noqa: E402
from .presets import DEFAULT_PRESET  # noqa: E402
from .static import ChainMethod, StaticMethod  # noqa: E402

__all__ = ["Method", "Preset", "FAMILIES", "PRESETS", "TREE_SIZES", "SIZE_FIELDS", "DEFAULT_PRESET", "register",
           "option", "make_method", "resolve", "family_class", "field_options", "presets_table", "EagleMethod",
           "RheoMethod", "StaticMethod", "ChainMethod", "AutoregressiveMethod"]
