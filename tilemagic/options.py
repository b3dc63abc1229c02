"""The ``%%tilecopy`` options, defined once: the :class:`Options` table.

Every option is one field of :class:`Options`: its default, help, choices and check.  From that
table come the option-line parser (:func:`parse`, shared by a notebook cell, a ``%%tilecopy`` line
in ``tilecopy(source)`` and a ``.tile`` file), the command line's flags (:func:`add_arguments`),
the magic's ``%config TileMagics.<name>`` traits and its generated ``%%tilecopy?`` usage, and the
keyword arguments of :func:`tilemagic.tilecopy`.  :func:`resolve` merges the three sources (an
explicit value, the option line, the session defaults) and validates the same way for each.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import keyword
import operator
import re
import shlex
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn

import numpy as np

from .caches import register_cache

LAUNCH_CHOICES = ("auto", "sim", "gpu", "off")
VIEW_CHOICES = ("html", "text", "widget")
EXPORT_CHOICES = ("tvmscript",)
COMPARE_CHOICES = ("tvm",)
#: What colours a TMEM cell in the occupancy heatmap.
COLOR_BY_CHOICES = ("warp", "thread", "reg", "instr")
#: Pictures ``--heatmap`` may list (comma-separated): occupancy overlay, one panel per
#: instruction, register fragment, round-trip data, or none.
HEATMAP_CHOICES = ("tmem", "instr", "fragment", "data", "none")
#: Default of ``--timeout``: seconds a launched kernel may run before the launch worker is killed
#: (:mod:`tilemagic.runtime.worker`).  Defined here so that importing tilemagic loads no runtime module.
DEFAULT_TIMEOUT_S = 10.0
#: Largest ``--timeout``: one day.  A kernel of a description runs for micro- to milliseconds; a larger value
#: (or ``inf``) would only make a hung launch hang the cell, and overflows the worker's time arithmetic.
MAX_TIMEOUT_S = 86400.0

_ARCH_RE = re.compile(r"sm_[0-9]{2,3}[af]?", re.ASCII)
#: Names of IPython's own namespace that ``--out`` must not overwrite (IPython's ``displayhook`` and
#: ``history`` keep ``_``, ``__``, ``___``, ``_i``, ``_ii``, ``_iii``, ``_oh``, ``_ih``, ``_dh``, ``_iN``,
#: ``_N``; the shell puts ``In``, ``Out``, ``get_ipython``, ``exit``, ``quit`` there).  Every name with a leading
#: underscore is refused as well.
IPYTHON_NAMES = frozenset({"In", "Out", "get_ipython", "exit", "quit"})


def _plain_text(value: str, what: str) -> str:
    """``value`` when it is ASCII without whitespace or control characters; OptionError otherwise."""
    bad = next((c for c in value if not (c.isascii() and c.isprintable()) or c.isspace()), None)
    if bad is not None:
        raise OptionError(f"{what} {value!r}: only ASCII letters, digits and punctuation, no whitespace "
                          f"(found U+{ord(bad):04X})")
    return value


class OptionError(ValueError):
    """A bad option (named in the message): located as a TileSyntaxError on a ``%%tilecopy`` line,
    a ValueError as it is for a keyword argument of :func:`tilemagic.tilecopy`."""


def check_arch(arch: object) -> str:
    """Validate an ``--arch`` value (``sm_100a``, ``sm_90``, ...: ASCII, the whole value); raise OptionError
    otherwise."""
    if not isinstance(arch, str) or not _ARCH_RE.fullmatch(arch):
        raise OptionError(f"--arch {arch!r} is not a CUDA target; expected e.g. sm_100a")
    return arch


def check_timeout(timeout: object) -> float:
    """Validate a ``--timeout`` value: seconds, ``0 < t <= MAX_TIMEOUT_S`` (one day), finite; a string only
    in ASCII decimal notation (``"2.5"``, ``"1e3"``; not ``"nan"``, ``"inf"``, ``"1_0"`` or other scripts'
    digits); never a bool.  Raise OptionError otherwise."""
    if isinstance(timeout, (bool, np.bool_)):
        raise OptionError(f"--timeout {timeout!r} is not a number of seconds")
    if isinstance(timeout, str) and not re.fullmatch(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?", timeout):
        raise OptionError(f"--timeout {timeout!r} is not a number of seconds")
    try:
        value = float(timeout)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        raise OptionError(f"--timeout {timeout!r} is not a number of seconds") from None
    if not (0 < value <= MAX_TIMEOUT_S):
        raise OptionError(f"--timeout must be a positive number of seconds, at most {MAX_TIMEOUT_S:g} (one day), "
                          f"got {timeout!r}")
    return value


def _check_bool(value: object) -> bool:
    """A boolean option: ``True``/``False`` (a NumPy bool too), never a string such as ``"False"``."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise OptionError(f"takes True or False, got {value!r}")


def _check_seed(seed: object) -> int:
    if isinstance(seed, (bool, np.bool_)):  # True is an int to Python, not a seed
        raise OptionError(f"--seed must be a non-negative integer, got {seed!r}")
    try:  # an int, a NumPy integer or (from the option line) its ASCII digits; never a float
        value = (int(seed) if re.fullmatch(r"[0-9]{1,40}", seed) else -1) if isinstance(seed, str) else \
            operator.index(seed)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        value = -1
    if value < 0:
        raise OptionError(f"--seed must be a non-negative integer, got {seed!r}")
    return value


def heatmap_list(kinds: object) -> tuple[str, ...]:
    """``"tmem,data"`` (or ``["tmem", "data"]``) -> ``("tmem", "data")``; OptionError otherwise."""
    if not isinstance(kinds, str):
        if not isinstance(kinds, (list, tuple)) or not all(isinstance(k, str) for k in kinds):
            raise OptionError(f"--heatmap must be a comma-separated string or a sequence of strings, not {kinds!r}")
        kinds = ",".join(kinds)
    _plain_text(kinds.replace(" ", ""), "--heatmap")
    out = tuple(k.strip().lower() for k in kinds.split(",") if k.strip())
    if not out or any(k not in HEATMAP_CHOICES for k in out) or ("none" in out and len(out) > 1):
        raise OptionError(f"invalid --heatmap {kinds!r}: give a comma-separated list of "
                          f"{', '.join(HEATMAP_CHOICES[:-1])}, or none alone")
    return out


def _check_name(name: object) -> str:
    if not isinstance(name, str):
        raise OptionError(f"NAME must be a str, got {name!r}")
    return name


def _check_out(name: object) -> str:
    """``--out`` names a plain notebook variable: an ASCII identifier, no Python keyword (soft keywords too),
    no leading underscore (IPython's ``_``, ``_oh``, ``_i3`` ... and private names), none of
    :data:`IPYTHON_NAMES` (``In``, ``Out``, ``get_ipython``, ``exit``, ``quit``)."""
    if not (isinstance(name, str) and name.isascii() and name.isidentifier() and not keyword.iskeyword(name)
            and not keyword.issoftkeyword(name) and not name.startswith("_") and name not in IPYTHON_NAMES):
        raise OptionError(f"--out {name!r} is not a notebook variable name of yours (an ASCII identifier, not a "
                          f"keyword, no leading underscore, none of IPython's {', '.join(sorted(IPYTHON_NAMES))})")
    return name


def _opt(default: Any, help: str, *, choices: tuple[str, ...] = (), check: Callable[[Any], Any] | None = None,
         metavar: str | None = None, config: bool = False, cli: bool = True) -> Any:
    """One row of the table: a dataclass field whose metadata drives parser, traits, CLI and checks.

    ``config``: also a ``%config TileMagics.<name>`` trait; ``cli``: also a flag of the command line.
    """
    return field(default=default, metadata=dict(help=help, choices=choices, check=check, metavar=metavar,
                                                config=config, cli=cli))


@dataclass(frozen=True)
class Options:
    """The resolved options of one cell (``result.options``); the field defaults are the defaults.

    Each field is an option of the ``%%tilecopy`` line (``--color-by`` for ``color_by``; ``name`` is
    the positional NAME), a keyword argument of :func:`tilemagic.tilecopy` and, where marked
    ``config``, a ``%config TileMagics.<name>`` trait.  Build one with :func:`resolve`.
    """

    name: str | None = _opt(None, "Name of the cell/kernel (the `kernel` line's name wins).", check=_check_name,
                            cli=False)
    launch: str = _opt("auto", "auto: GPU through CuPy when found, else the CPU simulator; sim; gpu; off (no launch).",
                       choices=LAUNCH_CHOICES, config=True)
    arch: str = _opt("sm_100a", "Target of the shown CUDA (tcgen05 needs sm_100a, sm_100f, sm_103a, ...).",
                     check=check_arch, config=True)
    view: str = _opt("html", "html, text or widget.", choices=VIEW_CHOICES, config=True, cli=False)
    out: str | None = _opt(None, "Also store the TileCopyResult in the notebook variable VAR (a Python name).",
                           check=_check_out,
                           metavar="VAR", cli=False)
    strict: bool = _opt(False, "Flag TMEM addresses whose lane-quadrant bits differ from warp_id % 4; "
                               "happens-before hazards are errors (HazardError), not warnings.",
                        check=_check_bool, config=True)
    bench: bool = _opt(False, "Time the GPU launch with CUDA events.", check=_check_bool)
    allow_fail: bool = _opt(False, "A failing check shows the report without raising CheckFailed (a cell that "
                                   "fails on purpose); without it a failing check fails the cell.",
                            check=_check_bool, config=True)
    seed: int = _opt(0, "Seed of `random` initialisers.", check=_check_seed, metavar="N", config=True)
    timeout: float = _opt(DEFAULT_TIMEOUT_S, "Seconds a GPU kernel may run before its worker process is stopped "
                                             "(the next launch gets a fresh one), and the CPU simulator "
                                             "before it stops.", check=check_timeout,
                          metavar="SECONDS", config=True)
    export: str | None = _opt(None, "tvmscript: also show the equivalent TVM TIRx program (TVMScript text).",
                              choices=EXPORT_CHOICES)
    compare: str | None = _opt(None, "tvm: lower the exported program with apache-tvm and show its lowering beside "
                                     "ours, differences marked (needs apache-tvm==0.27.0.post1).",
                               choices=COMPARE_CHOICES)
    heatmap: tuple[str, ...] = _opt(("tmem",), "Pictures in the report, comma-separated: tmem (occupancy), instr "
                                               "(one panel per tcgen05 instruction), fragment (thread x register -> "
                                               "lane, column), data (round-trip values; added when a check fails), "
                                               "none.", check=heatmap_list, metavar="KINDS")
    color_by: str = _opt("warp", "Colour of a TMEM cell: warp, thread, reg or instr.", choices=COLOR_BY_CHOICES)
    cost: bool = _opt(False, "Show what each choice costs: every accepting variant of every op compiled with "
                             "nvcc (registers, stack, spills, SASS by class), the SASS with its line map, and the "
                             "shared-memory bank conflicts of every instruction (from the simulator's address "
                             "trace).", check=_check_bool, config=True)

    # read-only mapping access, as when ``result.options`` was a dict: ``options["launch"]``, ``dict(options)``
    def __getitem__(self, key: str) -> Any:
        if key not in self.keys():
            raise KeyError(key)
        return getattr(self, key)

    def keys(self) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(self))

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key) if key in self.keys() else default


FIELDS: tuple[dataclasses.Field, ...] = dataclasses.fields(Options)
DEFAULTS = Options()


def option_flags() -> list[str]:
    """Every flag of the option line without its ``--`` (``launch``, ``strict``, ``no-strict``, ...)."""
    return [n for f in FIELDS if f.name != "name" for n in (flag(f)[2:],) + (("no-" + flag(f)[2:],)
            if isinstance(f.default, bool) else ())]


def flag(f: dataclasses.Field) -> str:
    """The option-line flag of a field: ``--color-by`` for ``color_by`` (``name`` is positional)."""
    return "--" + f.name.replace("_", "-")


def _choice(f: dataclasses.Field) -> Callable[[object], str]:
    def check(value: object) -> str:  # case-insensitive, as %config's CaselessStrEnum; ASCII only ("\u212a" is no k)
        v = value.lower() if isinstance(value, str) and value.isascii() else value
        if v not in f.metadata["choices"]:
            raise OptionError(f"{flag(f)}: invalid choice: {value!r} (choose from {', '.join(f.metadata['choices'])})")
        return v  # type: ignore[return-value]
    return check


def check_value(f: dataclasses.Field, value: object) -> Any:
    """``value`` checked and normalised for field ``f`` (case folded, ``"tmem,data"`` split, ...).

    Raises
    ------
    OptionError
        Naming the option (a ValueError).
    """
    try:
        return (_choice(f) if f.metadata["choices"] else f.metadata["check"])(value)
    except OptionError as e:
        if str(e).startswith(flag(f)):
            raise
        raise OptionError(f"{flag(f)}: {e}") from None


def _argparse_type(f: dataclasses.Field) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        try:
            return check_value(f, text)
        except OptionError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    return convert


def add_arguments(parser: argparse.ArgumentParser, *, cli: bool = False) -> argparse.ArgumentParser:
    """Add the table's options to ``parser`` (all of them; with ``cli`` those of the command line).

    Every value defaults to None (not given), so that :func:`resolve` can tell a flag from a default;
    a boolean gets its ``--no-`` form (``--strict`` / ``--no-strict``).
    """
    for f in FIELDS:
        if cli and not f.metadata["cli"]:
            continue
        m = f.metadata
        shown = ",".join(f.default) if isinstance(f.default, tuple) else f.default
        help = m["help"].replace("%", "%%") + ("" if f.default is None or f.default is False else f" (default {shown})")
        if f.name == "name":
            parser.add_argument("name", nargs="?", default=None, type=_argparse_type(f), help=help, metavar="NAME")
        elif isinstance(f.default, bool):
            parser.add_argument(flag(f), dest=f.name, action=argparse.BooleanOptionalAction, default=None, help=help)
        else:
            metavar = m["metavar"] or ("|".join(m["choices"]) if m["choices"] else f.name.upper())
            parser.add_argument(flag(f), dest=f.name, default=None, type=_argparse_type(f), metavar=metavar, help=help)
    return parser


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise OptionError(message)


@functools.lru_cache(maxsize=1)
def build_parser() -> argparse.ArgumentParser:
    """The ``%%tilecopy`` option-line parser (built once; ``parse_args`` leaves it unchanged)."""
    return add_arguments(_Parser(prog="%%tilecopy", add_help=False, exit_on_error=False, allow_abbrev=False))


register_cache("options.parser", build_parser.cache_clear, "the %%tilecopy option-line parser (built once)")


def usage() -> str:
    """The generated one-line usage, ``[NAME] [--launch auto|sim|gpu|off] ...`` (error hints, ``%%tilecopy?``).

    ``[NAME]`` first, as a cell's line is written (argparse lists positionals last).
    """
    words = " ".join(build_parser().format_usage().split()[2:])
    return "[NAME] " + words.replace(" [NAME]", "") if words.endswith(" [NAME]") else words


def parse(line: str) -> argparse.Namespace:
    """Parse the words after ``%%tilecopy`` (shell-like quoting: ``--launch "sim"``); None = not given.

    Raises
    ------
    OptionError
        Unclosed quote, unknown flag or bad value (the message names the option).
    """
    try:
        return build_parser().parse_args(shlex.split(line))
    except ValueError as e:  # shlex on an unclosed quote; OptionError from _Parser.error
        raise OptionError(str(e)) from None
    except argparse.ArgumentError as e:  # a bad value: our checks' messages name the option already
        raise OptionError(e.message if e.message.startswith("--") else str(e)) from None


def resolve(header: argparse.Namespace | None = None, overrides: Mapping[str, object] | None = None,
            defaults: Mapping[str, object] | None = None) -> Options:
    """Merge the sources of the options: ``overrides`` win over the option line ``header``, which wins
    over ``defaults`` (the session's ``%config``), which win over the table's defaults.

    Parameters
    ----------
    header : argparse.Namespace, optional
        :func:`parse` of the ``%%tilecopy`` line (already checked); None values are not given.
    overrides, defaults : mapping of str -> object, optional
        Keyword arguments / session defaults, checked here; None values are not given.

    Raises
    ------
    OptionError
        A bad value in ``overrides`` or ``defaults`` (a ValueError naming the option).
    TypeError
        A name that is no option.
    """
    overrides, defaults = dict(overrides or {}), dict(defaults or {})
    unknown = sorted((set(overrides) | set(defaults)) - {f.name for f in FIELDS})
    if unknown:
        raise TypeError(f"unknown tilecopy option {unknown[0]!r}; the options are {', '.join(f.name for f in FIELDS)}")
    values = {}
    for f in FIELDS:
        value = overrides.get(f.name)
        if value is None and header is not None and getattr(header, f.name, None) is not None:
            values[f.name] = getattr(header, f.name)
            continue
        value = defaults.get(f.name) if value is None else value
        if value is not None:
            values[f.name] = check_value(f, value)
    return dataclasses.replace(DEFAULTS, **values)


def numpydoc() -> str:
    """The options as numpydoc parameters (the tail of :func:`tilemagic.tilecopy`'s docstring)."""
    rows = []
    for f in FIELDS:
        m = f.metadata
        kind = ("{" + ", ".join(f'"{c}"' for c in m["choices"]) + "}" if m["choices"] else
                "str or sequence of str" if isinstance(f.default, tuple) else type(f.default).__name__
                if f.default is not None else "str")
        text = m["help"] + (f" Session default: ``%config TileMagics.{f.name}``." if m["config"] else "")
        rows.append(f"    {f.name} : {kind}, " + ("optional" if f.default is None else f"default {f.default!r}"))
        rows += textwrap.wrap(text, 100, initial_indent=" " * 8, subsequent_indent=" " * 8)
    return "\n".join(rows)
