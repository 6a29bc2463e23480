"""Argument types and option groups shared by the subcommands.

Every numeric flag is checked when it is parsed (a bad value is one line and exit code 2), and
the method flags are generated from the method registry: one flag per family field, so a new
family's fields appear on every command without an edit here.
"""

from __future__ import annotations

import argparse
import textwrap
import contextlib
import math
import os
import re
import sys

from ..errors import RheoError
from ..methods import FAMILIES, PRESETS, TREE_SIZES, Method, field_options, resolve

__all__ = ["EXIT_BAD_INPUT", "EXIT_INTERRUPTED", "Parser", "int_range", "float_range", "split_list", "ListArg",
           "add_list", "spec_arg", "file_stem", "temperature_arg", "vocab_arg", "add_method_arguments",
           "method_from_args", "method_overrides", "method_at", "given_settings", "MAX_SEED", "MAX_SYNTHETIC_VOCAB",
           "MAX_WORK", "NODE_OVERHEAD", "threads_arg", "add_max_entries", "add_max_work", "add_progress",
           "check_work", "mc_work", "check_fits_vocab", "check_out_file", "progress_bar", "progress_on", "busy",
           "announce", "EXIT_LOSSY", "EXIT_LOSSLESS", "EXIT_DONE", "COMMON_EXITS", "set_exit_statuses",
           "WORK_PER_SECOND", "ANNOUNCE_SECONDS",
           "PILOT_FROM_SECONDS", "wants_pilot",
           "format_seconds"]

#: Exit codes of a command with a verdict (``certify``, ``mc``): a script or CI job can gate on them.
EXIT_LOSSLESS = 0
EXIT_LOSSY = 1
EXIT_BAD_INPUT = 2

#: Exit code after Ctrl-C (128 + SIGINT, as shells report it).
EXIT_INTERRUPTED = 130

#: The exit statuses of a command that only does its work (``instance``, ``decode``, ...).
EXIT_DONE = ((0, "done"),)

#: What every command's bad input and Ctrl-C exit with (a command's own rows may say more of 2).
COMMON_EXITS = ((EXIT_BAD_INPUT, "bad input: one line on stderr saying what is wrong, never a traceback"),
                (EXIT_INTERRUPTED, "interrupted (Ctrl-C)"))


def set_exit_statuses(parser, rows) -> None:
    """Give a command its table of exit statuses: the ``--help`` epilog lists them one per line,
    and the CLI reference renders them (``parser.exit_statuses``).

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The command's parser.
    rows : sequence of (int, str)
        Each status the command's own outcome gives, with its meaning; bad input (2) and Ctrl-C
        (130) are added from :data:`COMMON_EXITS` unless ``rows`` already says what they mean.
    """
    own = {code for code, _ in rows}
    rows = tuple(rows) + tuple(r for r in COMMON_EXITS if r[0] not in own)
    parser.exit_statuses = tuple(sorted(rows))
    parser.epilog = "exit status:\n" + "\n".join(f"  {code:<3}  {meaning}" for code, meaning in parser.exit_statuses)

#: Seeds are integers in 0..MAX_SEED (numpy and torch take 64-bit seeds).
MAX_SEED = 2**63 - 1

#: Largest vocabulary of a synthetic pair (``mc --vocab``, ``sweep --vocab``): real vocabularies
#: are at most ~2.6e5 (Gemma's 256k). A pair caches 128 prefixes' (p, q) laws of 16 V bytes,
#: about 0.5 GB at this V (measured: 0.8 GB peak for `rheo mc` at V = 2e5).
MAX_SYNTHETIC_VOCAB = 2**18

#: Default cap on the estimated work of one ``mc`` or ``sweep`` run (raise it with
#: ``--max-work``). The unit is one law entry touched: a sampled step touches about
#: (tree nodes + D + 2) laws (the tree, the verifier walk, the completion to D + 1 tokens), each
#: costing V + NODE_OVERHEAD. Measured at about 1e8 units/s on one core (README showcase:
#: 2000 steps, V = 32000, 2.1e9 units in 8 s), so the cap is about 15-20 minutes of one core.
MAX_WORK = 10**11

#: Units of :data:`MAX_WORK` one core does per second (measured, see above): turns a work
#: estimate into the time a run announces.
WORK_PER_SECOND = 1e8

#: Fixed Python cost of one law in a sampled step, in law entries: the per-node time at V = 50
#: and V = 32000 fits a + b V with a / b of about 1.4e4 (rounded up to 2^14).
NODE_OVERHEAD = 2**14

#: Candidate slots whose scoring costs about one law (see :func:`step_laws`).
CANDIDATES_PER_LAW = 32


#: Longest number text a float flag reads (a float needs fewer than 30 characters).
MAX_NUMBER_CHARS = 100

#: Longest quoted value an error message shows.
SHOW_CHARS = 40


def show(text: str) -> str:
    """``text`` quoted for a one-line message: escapes (no newline gets through), and long text cut."""
    r = repr(text)
    return r if len(r) <= SHOW_CHARS else f"{r[:SHOW_CHARS]}...' ({len(text)} characters)"


def one_line(message: str) -> str:
    """A message on one line (argparse echoes unknown arguments verbatim, newlines included)."""
    return message.replace("\r", "\\r").replace("\n", "\\n")


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit code 2, and a list flag's help shows one form."""

    def __init__(self, *a, **kw):
        kw.setdefault("formatter_class", HelpFormatter)
        super().__init__(*a, **kw)

    def error(self, message):  # noqa: D401
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {one_line(message)}\n")


def int_range(lo: int, hi: int | None = None):
    """An argparse type: an integer in ``lo..hi`` (``hi`` None: no upper bound)."""

    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:  # NOTE: also more than 4300 digits (Python's int-from-text limit)
            raise argparse.ArgumentTypeError(f"{show(text)} is not an integer") from None
        if v < lo or (hi is not None and v > hi):
            bounds = f">= {lo}" if hi is None else f"in {lo}..{hi}"
            raise argparse.ArgumentTypeError(f"{show(text)} must be {bounds}")
        return v

    return parse


def float_range(lo: float | None = None, hi: float | None = None, lo_open: bool = False, hi_open: bool = False):
    """An argparse type: a finite float within the given (open or closed) bounds."""

    def parse(text: str) -> float:
        try:
            v = float(text) if len(text) <= MAX_NUMBER_CHARS else None
        except ValueError:
            v = None
        if v is None:
            raise argparse.ArgumentTypeError(f"{show(text)} is not a number" + (
                f" (over {MAX_NUMBER_CHARS} characters)" if len(text) > MAX_NUMBER_CHARS else ""))
        if not math.isfinite(v):
            raise argparse.ArgumentTypeError(f"{show(text)} is not finite")
        if lo is not None and (v < lo or (lo_open and v == lo)):
            raise argparse.ArgumentTypeError(f"{show(text)} must be {'>' if lo_open else '>='} {lo:g}")
        if hi is not None and (v > hi or (hi_open and v == hi)):
            raise argparse.ArgumentTypeError(f"{show(text)} must be {'<' if hi_open else '<='} {hi:g}")
        return v

    return parse


#: Brackets a list item may contain (a method spec's ``shape=[[0,1],[0]]``): separators inside
#: them belong to the item.
_BRACKETS = {"[": "]", "(": ")", "{": "}"}


def split_list(text: str) -> list[str]:
    """The items of a list flag's text: separated by commas, white space or both (outside brackets).

    >>> split_list("eagle, rheo chain,static:shape=[[0,1]]")
    ['eagle', 'rheo', 'chain', 'static:shape=[[0,1]]']
    """
    items, cur, depth, after_comma = [], "", [], True
    for ch in text:
        if depth or (ch not in "," and not ch.isspace()):
            cur += ch
            if ch in _BRACKETS:
                depth.append(_BRACKETS[ch])
            elif depth and ch == depth[-1]:
                depth.pop()
            continue
        if cur:
            items.append(cur)
            cur, after_comma = "", False
        if ch == ",":
            if after_comma:
                raise argparse.ArgumentTypeError(f"{show(text)} has an empty item")
            after_comma = True
    if cur:
        items.append(cur)
    elif after_comma and items:
        raise argparse.ArgumentTypeError(f"{show(text)} has an empty item")
    if not items:
        raise argparse.ArgumentTypeError("the list is empty")
    return items


class ListArg(argparse.Action):
    """A list flag, one grammar for every command: items separated by commas, spaces or both
    (``--methods eagle,rheo``, ``--methods eagle rheo``, ``--methods eagle, rheo``).

    ``type`` converts each item; ``group=n`` reads the items n at a time as one tuple
    (``--trees 4,4,16 10,6,60``: K,D,N triples).
    """

    def __init__(self, option_strings, dest, type=None, group: int = 1, **kw):  # noqa: A002
        self.item, self.group = type, group
        super().__init__(option_strings, dest, nargs="+", **kw)

    def __call__(self, parser, namespace, values, option_string=None):
        try:
            items = split_list(" ".join(values))
            if self.item is not None:
                items = [self.item(t) for t in items]
        except argparse.ArgumentTypeError as e:
            raise argparse.ArgumentError(self, str(e)) from None
        if self.group > 1:
            if len(items) % self.group:
                raise argparse.ArgumentError(self, f"needs a multiple of {self.group} values ({self.metavar}); "
                                             f"got {len(items)}")
            items = [tuple(items[i:i + self.group]) for i in range(0, len(items), self.group)]
        setattr(namespace, self.dest, items)


class HelpFormatter(argparse.HelpFormatter):
    """argparse's help, with a list flag shown in one form (its metavar, ``SPEC,...``), and a
    description or epilog written on several lines (an exit-status table) kept line by line."""

    def _fill_text(self, text, width, indent):
        if "\n" not in text:
            return super()._fill_text(text, width, indent)
        out = []
        for line in text.splitlines():
            row = re.match(r"(\s*\d+\s+)(.*)", line)  # NOTE: a table row: wrapped under its meaning
            head, body = (row.group(1), row.group(2)) if row else (line[:len(line) - len(line.lstrip())], line.strip())
            wrapped = textwrap.wrap(body, max(width - len(head), 20)) or [""]
            out.append(indent + head + wrapped[0])
            out += [indent + " " * len(head) + w for w in wrapped[1:]]
        return "\n".join(out)

    def _format_args(self, action, default_metavar):
        if isinstance(action, ListArg):
            return self._metavar_formatter(action, default_metavar)(1)[0]
        return super()._format_args(action, default_metavar)


def add_list(ap, flag: str, item, metavar: str, help: str, group: int = 1, **kw) -> None:
    """A list flag (:class:`ListArg`); the help says the separators once, the same everywhere."""
    ap.add_argument(flag, action=ListArg, type=item, group=group, metavar=metavar,
                    help=f"{help}; separate items by commas or spaces", **kw)


def spec_arg(text: str) -> str:
    """An argparse type: a non-empty method spec (resolved later, against the command's tree size)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("a method spec must not be empty")
    return text.strip()


positive_int = int_range(1)
nonneg_int = int_range(0)
seed_arg = int_range(0, MAX_SEED)
nonneg_float = float_range(lo=0.0)
positive_float = float_range(lo=0.0, lo_open=True)
#: Vocabulary of a synthetic pair: 2..MAX_SYNTHETIC_VOCAB.
vocab_arg = int_range(2, MAX_SYNTHETIC_VOCAB)


def temperature_arg(text: str) -> float:
    """A temperature: 0 (exact greedy) or a finite T >= MIN_TEMPERATURE (rheotheory.pairs).

    NOTE: a T in (0, MIN_TEMPERATURE) is refused, never raised to the minimum or treated as 0.
    """
    from ..pairs import MIN_TEMPERATURE

    v = float_range(lo=0.0)(text)
    if 0 < v < MIN_TEMPERATURE:
        raise argparse.ArgumentTypeError(f"{text!r} must be 0 (greedy) or >= {MIN_TEMPERATURE:g} (MIN_TEMPERATURE)")
    return v


def file_stem(text: str) -> str:
    """A plain file name (no folder part, no NUL): output file stems."""
    if not text or text in (".", "..") or "/" in text or os.sep in text or "\0" in text:
        raise argparse.ArgumentTypeError(f"{show(text)} is not a plain file name")
    return text


#: Help text of every temperature flag's range.
TEMPERATURE_RANGE = "0 = greedy, else >= 1e-3"


def threads_arg(text: str) -> int:
    """CPU threads: 1..the machine's cores."""
    return int_range(1, os.cpu_count() or 1)(text)


def _flag_type(name: str, fams: list):
    """An argparse type from the ``parse`` of a field the families ``fams`` share (its errors become
    usage errors). A value one family's parser takes passes: the families' ranges may differ (``t_hat``
    is > 0 for ``adaptive``, >= 0 for ``online``), and the chosen family checks it again when resolved."""
    parsers = [p for p in dict.fromkeys(field_options(FAMILIES[f])[name].get("parse") for f in fams) if p is not None]
    if not parsers:
        return None

    def conv(text):
        first = None
        for parse in parsers:
            try:
                return parse(text)
            except RheoError as e:  # NOTE: the family's message quotes the text; a long one is cut here
                first = first or e
        msg = str(first)
        raise argparse.ArgumentTypeError(msg if len(msg) <= 200 else f"{show(text)} is not a valid value") from None

    conv.__name__ = name
    return conv


def verifier_arg(names):
    """An argparse type: a verifier name, registered (built-in or by a loaded plugin) or a reference
    ``WHERE:NAME`` (loaded and registered here); an unknown name is a usage error listing ``names``."""

    def parse(text: str) -> str:
        from ..errors import VerifierError
        from ..plugin_loader import is_reference
        from ..verify import tree_verifier

        try:
            tree_verifier(text)
        except VerifierError as e:
            if is_reference(text):
                raise argparse.ArgumentTypeError(str(e)) from None
            raise argparse.ArgumentTypeError(f"unknown verifier {show(text)}; choose from {', '.join(names)}, or "
                                             "a plugin's rule as FILE.py:NAME") from None
        return text

    parse.__name__ = "verifier"
    return parse


def method_fields() -> dict:
    """Field name -> (metadata, families having it), over every registered family."""
    out: dict = {}
    for fam, cls in FAMILIES.items():
        for name, meta in field_options(cls).items():
            entry = out.setdefault(name, [meta, []])
            entry[1].append(fam)
    return out


def add_method_arguments(ap: argparse.ArgumentParser, default: str = "rheo", size: str | None = "toy",
                         auto_budget: bool = False) -> None:
    """``--preset`` and one flag per family field (flags default to "not given"); with
    ``auto_budget``, ``--budget auto`` is accepted too (:mod:`rheotheory.decode.evaluation.budget`)."""
    g = ap.add_argument_group("method (see `rheo methods`)")
    g.add_argument("--preset", "--method", dest="preset", default=default, metavar="NAME",
                   help=f"a preset ({', '.join(PRESETS)}) or a family ({', '.join(FAMILIES)}), optionally with "
                   f":field=value options; explicit flags override single fields (default {default})")
    sizes = dict(zip(("top_k", "depth", "budget"), TREE_SIZES[size])) if size else {}
    for name, (meta, fams) in method_fields().items():
        flag = "--" + name.replace("_", "-")
        help = meta.get("help", "")
        if name == "verifier":
            choices = sorted({v for cls in FAMILIES.values() for v in cls.admitted_verifiers()} - {"arms"})
            g.add_argument(flag, default=None, type=verifier_arg(choices), metavar="NAME",
                           help=f"{help}: one of {', '.join(choices)}, or a plugin's rule as FILE.py:NAME or "
                           "MODULE:NAME (every family)")
            continue
        extra = f"; default {sizes[name]} unless the preset sets it" if name in sizes else ""
        kind = _flag_type(name, fams)
        if name == "budget" and auto_budget:
            kind, extra = _or_auto(kind), extra + "; auto: the K, D, N of largest predicted speed-up on this " \
                "device (at tau less one standard error), from pilot decodes timed against autoregressive " \
                "decoding; below 1.05x, no tree (cached)"
        g.add_argument(flag, default=None, type=kind, choices=meta.get("choices"),
                       metavar=meta.get("metavar"), help=f"{help} ({', '.join(fams)}{extra})")


def _or_auto(kind):
    def conv(text):
        return "auto" if text.strip() == "auto" else (kind(text) if kind is not None else text)

    conv.__name__ = getattr(kind, "__name__", "budget")
    return conv


def method_overrides(args) -> dict:
    """The method flags the user gave (field name -> value)."""
    return {name: getattr(args, name) for name in method_fields() if getattr(args, name, None) is not None}


def spec_family(spec: str):
    """The family class a preset or family spec names (None when it names none: resolve says why)."""
    name = spec.split(":")[0]
    if name in PRESETS:
        return FAMILIES[PRESETS[name].family]
    return FAMILIES.get(name)


def check_flags_apply(spec: str, overrides: dict) -> None:
    """A field flag the spec's family lacks is an error naming the flag (the library names fields)."""
    cls = spec_family(spec)
    if cls is None:
        return
    names = list(field_options(cls))
    bad = [k for k in overrides if k not in names]
    if bad:
        flags = ", ".join("--" + n.replace("_", "-") for n in names)
        raise RheoError(f"--{bad[0].replace('_', '-')} does not apply to {cls.family} (its options: {flags})")


def method_from_args(args, size: str | tuple | None = "toy", spec=None) -> Method:
    """The resolved method of ``--preset`` (or ``spec``) with the explicit field flags applied."""
    spec = spec if spec is not None else args.preset
    check_flags_apply(spec, method_overrides(args))
    return resolve(spec, size=size, **method_overrides(args))


def spec_fields(spec: str) -> dict:
    """Field name -> value of the ``:field=value`` options written in a spec (aliases resolved)."""
    from ..methods.registry import SPEC_ALIASES, _split_spec

    return {SPEC_ALIASES.get(k, k): v for k, v in _split_spec(spec)[1].items()}


def method_at(method, temperature: float, given: dict, label=None):
    """The method that runs at target temperature T (``method.at_temperature``), refused when it
    replaces a setting the user gave (``given``: field -> how it was written), so that a command
    never runs, or warns of, a setting other than the one asked for."""
    run = method.at_temperature(temperature)
    asked, runs = method.fields(), run.fields()
    for name, written in given.items():
        if name in runs and name in asked and runs[name] != asked[name]:
            raise RheoError(f"{written} does not run at T={temperature:g}: there {method.family} runs "
                            f"{run.describe()}; give a setting that runs at this temperature")
    return run


def given_settings(args, spec: str | None = None) -> dict:
    """The settings a user wrote for a method: flags (``--verifier X``) and spec options."""
    spec = spec if spec is not None else args.preset
    out = {name: f"--{name.replace('_', '-')} {value}" for name, value in method_overrides(args).items()}
    for name, value in spec_fields(spec).items():
        out.setdefault(name, f"{name}={value} (in {spec!r})")
    return out


def add_max_entries(ap) -> None:
    """``--max-entries``: the cap on probabilities per instance table (read or generated)."""
    from ..pairs import MAX_TABLE_ENTRIES

    ap.add_argument("--max-entries", type=positive_int, default=MAX_TABLE_ENTRIES, metavar="E",
                    help=f"refuse instance tables of more than E probabilities (V x prefixes; default "
                    f"{MAX_TABLE_ENTRIES})")


def work_cap(text: str) -> int:
    """An argparse type for ``--max-work``: a positive integer, also written as its help shows it
    (``1e+11``, ``2.5e12``; a whole number, at most 1e18)."""
    try:
        return positive_int(text)
    except argparse.ArgumentTypeError:
        pass
    try:
        v = float(text) if len(text) <= MAX_NUMBER_CHARS else None
    except ValueError:
        v = None
    if v is None or not math.isfinite(v) or v != int(v):
        raise argparse.ArgumentTypeError(f"{show(text)} is not a whole number (e.g. 100000000000 or 1e11)")
    if not 1 <= v <= 1e18:
        raise argparse.ArgumentTypeError(f"{show(text)} must be in 1..1e18")
    return int(v)


def add_max_work(ap, what: str) -> None:
    """``--max-work``: the cap on a run's estimated work (see :data:`MAX_WORK`)."""
    ap.add_argument("--max-work", type=work_cap, default=MAX_WORK, metavar="W",
                    help=f"refuse {what} whose estimated work exceeds W law entries touched (about 1e8 per "
                    f"second on one core; default {MAX_WORK:.0e}, about 15-20 minutes)")


def check_work(estimate: float, cap: int, what: str, flag: str, name: str = "MAX_WORK",
               unit: str = "units of work") -> None:
    """Refuse work estimated over ``cap`` before it starts: one line naming the cap and its flag."""
    if estimate > cap:
        raise RheoError(f"{what} is estimated at {estimate:.3g} {unit}, over the cap of {cap:.3g} ({name}); "
                        f"make it smaller or raise the cap with {flag}")


def step_laws(method) -> float:
    """Laws one sampled step of ``method`` computes, about: the tree's, then D + 2 for the verifier
    walk and the completion. A family with K expands K nodes a layer and scores K * K candidates,
    each CANDIDATES_PER_LAW of them costing about one law (measured: K = 30..300 at V = 1000)."""
    k = getattr(method, "top_k", None)
    tree = method.nodes if k is None else max(method.nodes, k * method.depth * (1 + k / CANDIDATES_PER_LAW))
    return tree + method.depth + 2


def mc_work(steps: int, method, vocab: int) -> float:
    """Estimated work of ``steps`` sampled steps of ``method`` at vocabulary ``vocab`` (units of
    :data:`MAX_WORK`: law entries, each law costing V + NODE_OVERHEAD)."""
    return float(steps) * step_laws(method) * (vocab + NODE_OVERHEAD)


def check_fits_vocab(method, vocab: int, where: str) -> None:
    """A tree family's K (slots per expansion) can be at most the vocabulary V."""
    k = getattr(method, "top_k", None)
    if k is not None and k > vocab:
        raise RheoError(f"--top-k {k} exceeds the vocabulary of {where} (V={vocab}); K must be in 1..V")


def check_out_file(path: str, flag: str = "--out") -> None:
    """Refuse an output file that cannot be written before any work starts (the file is not created)."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise RheoError(f"{flag} {path!r} is a folder")
    if os.path.exists(path) and not os.path.isfile(path):
        raise RheoError(f"{flag} {path!r} exists and is not a regular file")
    if not os.path.isdir(folder):
        raise RheoError(f"{flag} {path!r}: the folder {folder!r} does not exist")
    if not os.access(path if os.path.exists(path) else folder, os.W_OK):
        raise RheoError(f"{flag} {path!r} is not writable")


#: A run estimated longer than this announces its estimate on stderr before it starts.
ANNOUNCE_SECONDS = 5.0

#: ``mc`` and ``sweep``: a run the work model (:data:`WORK_PER_SECOND`) puts under this many
#: seconds is not announced, and is not timed unless ``--json`` reports its estimate; a longer
#: one is timed on a small pilot first (a few steps of its own methods on this machine, about 2%
#: of the run), since the model is a cap's unit, not a clock: off by 0.4-2.7x per method at
#: V = 32000 (`rheo sweep` rows), and by the machine's speed and load.
PILOT_FROM_SECONDS = 1.0


def wants_pilot(args, model_seconds: float) -> bool:
    """Whether a run times a pilot for its estimate: ``--json`` reports the estimate, or it may be
    announced (the work model puts it at :data:`PILOT_FROM_SECONDS` or more, and
    ``--no-progress`` is not given)."""
    return bool(getattr(args, "json", False)) or (model_seconds >= PILOT_FROM_SECONDS
                                                   and not getattr(args, "no_progress", False))

#: A progress bar appears only once its run has lasted this long (short runs draw nothing).
BAR_DELAY_SECONDS = 2.0


def add_progress(ap) -> None:
    """``--no-progress``: the one progress policy of every command (see :func:`progress_on`)."""
    ap.add_argument("--no-progress", action="store_true",
                    help="no progress bar and no time estimate on stderr (bars appear only when stderr is a "
                    f"terminal, after {BAR_DELAY_SECONDS:g} s)")


def progress_on(args) -> bool:
    """Progress bars: only when stderr is a terminal and ``--no-progress`` is not given."""
    return not getattr(args, "no_progress", False) and sys.stderr.isatty()


def progress_bar(args, total: int | None, desc: str, unit: str = "step"):
    """A tqdm bar on stderr under :func:`progress_on`, drawn once the run has lasted
    :data:`BAR_DELAY_SECONDS`; with ``total`` it shows the remaining time."""
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, disable=not progress_on(args), delay=BAR_DELAY_SECONDS, leave=False,
                unit=unit, file=sys.stderr)


@contextlib.contextmanager
def busy(args, desc: str):
    """A bar of elapsed time for one step that reports no progress of its own (loading a model),
    under the same policy as :func:`progress_bar`."""
    import threading

    with progress_bar(args, None, desc, "s") as bar:
        stop = threading.Event()

        def tick():
            while not stop.wait(0.5):
                if bar.format_dict["elapsed"] >= BAR_DELAY_SECONDS:
                    bar.refresh()

        t = threading.Thread(target=tick, daemon=True)
        if not bar.disable:
            t.start()
        try:
            yield bar
        finally:
            stop.set()
            if t.is_alive():
                t.join()


def announce(args, seconds: float, what: str) -> None:
    """One stderr line before a run estimated over :data:`ANNOUNCE_SECONDS` (``--no-progress``: none).

    The sizing rule of every command: estimate the work before it starts, refuse it over its cap
    (:func:`check_work`), announce it when it is long, and draw a bar (:func:`progress_bar`)."""
    if seconds > ANNOUNCE_SECONDS and not getattr(args, "no_progress", False):
        command = getattr(args, "command", None)
        print(f"rheo{' ' + command if command else ''}: {what}: about {format_seconds(seconds)} (estimated)",
              file=sys.stderr, flush=True)


def format_seconds(seconds: float) -> str:
    """``42 s``, ``3.5 min``, ``2.1 h``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


#: Most digits of one --generate value (MAX_SEED has 19).
_GENERATE_DIGITS = 19


def generate_arg(text: str) -> tuple[int, int, int]:
    """``--generate V,H,SEED``: vocabulary >= 1, horizon >= 0, seed in 0..MAX_SEED."""
    parts = text.split(",")
    if len(parts) != 3 or not all(t.strip().isascii() and t.strip().isdigit() and len(t) <= _GENERATE_DIGITS
                                  for t in parts):
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not V,H,SEED (three non-negative integers)")
    v, h, seed = (int(t) for t in parts)
    if v < 1 or seed > MAX_SEED:
        raise argparse.ArgumentTypeError(f"{text[:40]!r}: V must be >= 1 and SEED in 0..{MAX_SEED}")
    return v, h, seed


def add_toy_instance_arguments(ap) -> None:
    """The toy pair of the exact commands: an instance file, ``--generate``, or the built-in example."""
    ap.add_argument("instance", nargs="?", default=None,
                    help="instance JSON (default: the built-in example, V=4, horizon 3)")
    ap.add_argument("--generate", type=generate_arg, default=None, metavar="V,H,SEED",
                    help="instead of an instance file: the seeded generated pair (vocabulary V, horizon H), whose "
                    "laws are made only at the prefixes the computation visits; equal to random_pair(V, H, SEED, "
                    "keyed=True) on every prefix")
    ap.add_argument("--float", dest="use_float", action="store_true", help="float64 instead of exact rationals")
    add_max_entries(ap)


def toy_pair_from_args(args, method, exact: bool):
    """The pair of :func:`add_toy_instance_arguments`, checked to fit the method (K <= V);
    ``args.instance`` is set to the pair's name for the reports."""
    from ..pairs import GeneratedPair, ToyPair, example_pair

    if args.generate is not None:
        if args.instance:
            raise RheoError("give an instance file or --generate, not both")
        pair = GeneratedPair(*args.generate, exact=exact, max_entries=args.max_entries)
        args.instance = "generated:{},{},{}".format(*args.generate)
    else:
        pair = (ToyPair.load(args.instance, exact=exact, max_entries=args.max_entries) if args.instance
                else example_pair(exact=exact))
        args.instance = args.instance or "built-in example"
    check_fits_vocab(method, pair.vocab_size, "the instance")
    return pair


def print_toy_header(args, pair, method) -> None:
    """The first two lines of the exact commands' text report."""
    print(f"instance        : {args.instance} (V={pair.vocab_size}, horizon={pair.horizon})")
    print(f"method          : {method.describe()}  (--preset {args.preset})")
