"""Bring your own method: the public API a plugin registers through, and how plugins are loaded.

A *plugin* is a Python file or module that registers tree families, per-node rules or tree-level
verifiers with the functions below: the same functions the built-in families and rules register
through (``rheotheory.methods`` and ``rheotheory.verify`` call them for every built-in). Once
loaded, what it registers is a method or verifier name like any other, in every command
(``rheo certify``, ``counterexample``, ``mc``, ``sweep``, ``optimum``, ``decode``, ``bench``) and in
the library (:func:`rheotheory.methods.resolve`, :func:`rheotheory.hf.generate`).
docs/guide/own-method.md walks through a complete one.

Ways in, all equivalent:

- ``rheo COMMAND --plugin my_method.py`` (or a module name; repeatable);
- the environment variable ``RHEO_PLUGINS`` (entries separated by ``os.pathsep``);
- an installed package's entry point in the group ``rheotheory.plugins`` (loaded lazily: only
  when a command runs, or when a name is not found);
- a reference in place of a name: ``--preset my_method.py:ForkMethod`` (a :class:`Method`
  subclass, a preset or a method object) and ``--verifier my_method.py:my_rule`` (a per-node rule
  or a :class:`TreeVerifier`), also ``MODULE:NAME``; options follow as usual
  (``my_method.py:ForkMethod:width=3``).

What a builder must do so that the certifier can trust it (docs/theory.md section 5.3;
:func:`rheotheory.testing.check_method` checks it): draw every random choice through the chooser
it is given (add a SAMPLED node with its :class:`SampleGroup` and let ``tree.resolve`` draw it, or
``chooser.draw(law)`` for a choice that is not a token of the tree), hand the verifier the law each
sampled node was really drawn from, and read nothing but the pair's laws.

>>> import rheotheory.plugin as plugin
>>> {"register_family", "register_rule", "register_tree_verifier", "Tree"} <= set(plugin.__all__)
True
"""

from __future__ import annotations

from . import laws
from .methods.registry import Method, Preset, option, positive_int
from .methods.registry import preset as register_preset
from .methods.registry import register as register_family
from .plugin_loader import (ENTRY_POINT_GROUP, ENV_VAR, PluginError, ensure_plugins, is_reference, load_object,
                            load_plugin, loaded_plugins)
from .trees.tree import DET, FILLER, ROOT, SAMPLED, Candidate, Chooser, SampleGroup, Tree
from .verify.rules import Transition, register_rule
from .verify.walk import (EnumerateBranch, Outcome, PerNodeWalk, SampleBranch, TreeVerifier, draw_pending,
                          register_tree_verifier)

__all__ = [
    # registering
    "register_family", "register_rule", "register_tree_verifier", "register_preset", "option", "positive_int",
    # what a family and a rule are made of
    "Method", "Preset", "Tree", "SampleGroup", "Candidate", "Chooser", "Transition", "TreeVerifier",
    "PerNodeWalk", "Outcome", "EnumerateBranch", "SampleBranch", "draw_pending", "ROOT", "DET", "SAMPLED",
    "FILLER", "laws",
    # loading
    "PluginError", "ENTRY_POINT_GROUP", "ENV_VAR", "load_plugin", "load_object", "ensure_plugins",
    "is_reference", "loaded_plugins",
]
