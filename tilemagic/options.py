"""The ``%%tilecopy`` option line, defined once for the magic (magic_arguments) and the CLI (argparse)."""

from __future__ import annotations

import argparse
import functools
import shlex

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


def heatmap_list(text: str) -> tuple:
    """``"tmem,data"`` -> ``("tmem", "data")``; argparse ``type=`` of ``--heatmap``.

    Raises
    ------
    argparse.ArgumentTypeError
        An empty list or an unknown kind (the message lists the choices).
    """
    kinds = tuple(k.strip() for k in str(text).split(",") if k.strip())
    bad = [k for k in kinds if k not in HEATMAP_CHOICES]
    if not kinds or bad:
        raise argparse.ArgumentTypeError(
            f"invalid --heatmap {text!r}: give a comma-separated list of {', '.join(HEATMAP_CHOICES)}")
    return kinds


# (flags, argparse keyword arguments) — the magic's help is generated from these
OPTIONS = (
    (("name",), dict(nargs="?", default=None, help="Name of the cell/kernel (the `kernel` line's name wins).")),
    (("--launch",), dict(choices=LAUNCH_CHOICES, default=None,
                         help="auto: GPU through CuPy when found, else the CPU simulator; sim; gpu; off (no launch).")),
    (("--arch",), dict(default=None, help="Target of the shown CUDA (default sm_100a).")),
    (("--view",), dict(choices=VIEW_CHOICES, default=None, help="html (default), text or widget.")),
    (("--out",), dict(default=None, help="Also store the TileCopyResult in this notebook variable.")),
    (("--strict",), dict(action="store_true", default=None,
                         help="Flag TMEM addresses whose lane-quadrant bits differ from warp_id %% 4.")),
    (("--bench",), dict(action="store_true", default=None, help="Time the GPU launch with CUDA events.")),
    (("--seed",), dict(type=int, default=None, help="Seed of `random` initialisers (default 0).")),
    (("--timeout",), dict(type=float, default=None, metavar="SECONDS",
                          help="Seconds a GPU kernel may run before its worker process is stopped "
                               f"(default {DEFAULT_TIMEOUT_S:g}).")),
    (("--export",), dict(choices=EXPORT_CHOICES, default=None,
                         help="tvmscript: also show the equivalent TVM TIRx program (TVMScript text).")),
    (("--compare",), dict(choices=COMPARE_CHOICES, default=None,
                          help="tvm: lower the exported program with apache-tvm and show its lowering beside ours, "
                               "differences marked (needs apache-tvm==0.27.0.post1).")),
    (("--heatmap",), dict(type=heatmap_list, default=None, metavar="KINDS",
                          help="Pictures in the report, comma-separated: tmem (occupancy, default), instr (one "
                               "panel per tcgen05 instruction), fragment (thread x register -> lane, column), "
                               "data (round-trip values; added when a check fails), none.")),
    (("--color-by",), dict(choices=COLOR_BY_CHOICES, default=None, dest="color_by",
                           help="Colour of a TMEM cell: warp (default), thread, reg or instr.")),
)


OPTION_SUMMARY = ("[NAME] [--launch auto|sim|gpu|off] [--arch sm_100a] [--view html|text|widget] [--out VAR] "
                  "[--strict] [--bench] [--seed N] [--timeout SECONDS] [--export tvmscript] [--compare tvm] "
                  "[--heatmap tmem,instr,fragment,data|none] [--color-by warp|thread|reg|instr]")


class OptionError(ValueError):
    """A bad ``%%tilecopy`` option line (outside IPython; the magic raises UsageError)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise OptionError(message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="%%tilecopy", add_help=False)
    for flags, kw in OPTIONS:
        p.add_argument(*flags, **kw)
    return p


def parse_option_line(line: str) -> argparse.Namespace:
    """Parse the words after ``%%tilecopy`` (shell-like quoting).

    Raises
    ------
    OptionError
        Unknown flag or bad value.
    """
    try:
        words = shlex.split(line)
    except ValueError as e:
        raise OptionError(str(e)) from None
    return _parser().parse_args(words)


@functools.lru_cache(maxsize=1)
def _parser() -> argparse.ArgumentParser:
    """:func:`build_parser`, built once (``parse_args`` leaves the parser unchanged)."""
    return build_parser()
