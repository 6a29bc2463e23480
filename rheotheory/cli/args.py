"""Argument types and option groups shared by the subcommands.

Every numeric flag is checked when it is parsed (a bad value is one line and exit code 2), and
the method flags are generated from the method registry: one flag per family field, so a new
family's fields appear on every command without an edit here.
"""

from __future__ import annotations

import argparse
import math
import os

from ..errors import RheoError
from ..methods import FAMILIES, PRESETS, TREE_SIZES, Method, field_options, resolve

__all__ = ["EXIT_BAD_INPUT", "Parser", "int_range", "float_range", "float_list", "add_method_arguments",
           "method_from_args", "method_overrides", "MAX_SEED", "add_seed", "threads_arg", "add_max_entries"]

EXIT_BAD_INPUT = 2

#: Seeds are integers in 0..MAX_SEED (numpy and torch take 64-bit seeds).
MAX_SEED = 2**63 - 1


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit code 2."""

    def error(self, message):  # noqa: D401
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def int_range(lo: int, hi: int | None = None):
    """An argparse type: an integer in ``lo..hi`` (``hi`` None: no upper bound)."""

    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if v < lo or (hi is not None and v > hi):
            raise argparse.ArgumentTypeError(f"{text!r} must be {'>= ' + str(lo) if hi is None else f'in {lo}..{hi}'}")
        return v

    return parse


def float_range(lo: float | None = None, hi: float | None = None, lo_open: bool = False, hi_open: bool = False):
    """An argparse type: a finite float within the given (open or closed) bounds."""

    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not math.isfinite(v):
            raise argparse.ArgumentTypeError(f"{text!r} is not finite")
        if lo is not None and (v < lo or (lo_open and v == lo)):
            raise argparse.ArgumentTypeError(f"{text!r} must be {'>' if lo_open else '>='} {lo:g}")
        if hi is not None and (v > hi or (hi_open and v == hi)):
            raise argparse.ArgumentTypeError(f"{text!r} must be {'<' if hi_open else '<='} {hi:g}")
        return v

    return parse


def float_list(item):
    """An argparse type: a non-empty comma-separated list of ``item`` values."""

    def parse(text: str) -> list:
        vals = [item(t.strip()) for t in text.split(",") if t.strip()]
        if not vals:
            raise argparse.ArgumentTypeError("the list is empty")
        return vals

    return parse


positive_int = int_range(1)
nonneg_int = int_range(0)
seed_arg = int_range(0, MAX_SEED)
nonneg_float = float_range(lo=0.0)
positive_float = float_range(lo=0.0, lo_open=True)


def threads_arg(text: str) -> int:
    """CPU threads: 1..the machine's cores."""
    return int_range(1, os.cpu_count() or 1)(text)


def add_seed(ap, default: int = 0, help: str = "seed") -> None:
    ap.add_argument("--seed", type=seed_arg, default=default, help=f"{help} (0..2^63-1, default {default})")


def _flag_type(name: str, meta: dict):
    """An argparse type from a family field's ``parse`` (its errors become usage errors)."""
    parse = meta.get("parse")
    if parse is None:
        return None

    def conv(text):
        try:
            return parse(text)
        except RheoError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    conv.__name__ = name
    return conv


def method_fields() -> dict:
    """Field name -> (metadata, families having it), over every registered family."""
    out: dict = {}
    for fam, cls in FAMILIES.items():
        for name, meta in field_options(cls).items():
            entry = out.setdefault(name, [meta, []])
            entry[1].append(fam)
    return out


def add_method_arguments(ap: argparse.ArgumentParser, default: str = "rheo", size: str | None = "toy") -> None:
    """``--preset`` and one flag per family field (flags default to "not given")."""
    g = ap.add_argument_group("method (see `rheo methods`)")
    g.add_argument("--preset", "--method", dest="preset", default=default, metavar="NAME",
                   help=f"a preset ({', '.join(PRESETS)}) or a family ({', '.join(FAMILIES)}), optionally with "
                   f":field=value options; explicit flags override single fields (default {default})")
    sizes = dict(zip(("top_k", "depth", "budget"), TREE_SIZES[size])) if size else {}
    for name, (meta, fams) in method_fields().items():
        flag = "--" + name.replace("_", "-")
        help = meta.get("help", "")
        if name == "verifier":
            choices = sorted({v for cls in FAMILIES.values() for v in cls.admitted_verifiers()})
            g.add_argument(flag, default=None, choices=choices, help=f"{help} (every family)")
            continue
        extra = f"; default {sizes[name]} unless the preset sets it" if name in sizes else ""
        g.add_argument(flag, default=None, type=_flag_type(name, meta), choices=meta.get("choices"),
                       metavar=meta.get("metavar"), help=f"{help} ({', '.join(fams)}{extra})")


def method_overrides(args) -> dict:
    """The method flags the user gave (field name -> value)."""
    return {name: getattr(args, name) for name in method_fields() if getattr(args, name, None) is not None}


def method_from_args(args, size: str | tuple | None = "toy", spec=None) -> Method:
    """The resolved method of ``--preset`` (or ``spec``) with the explicit field flags applied."""
    return resolve(spec if spec is not None else args.preset, size=size, **method_overrides(args))


def add_max_entries(ap) -> None:
    """``--max-entries``: the cap on probabilities per instance table (read or generated)."""
    from ..pairs import MAX_TABLE_ENTRIES

    ap.add_argument("--max-entries", type=positive_int, default=MAX_TABLE_ENTRIES, metavar="E",
                    help=f"refuse instance tables of more than E probabilities (V x prefixes; default "
                    f"{MAX_TABLE_ENTRIES})")
