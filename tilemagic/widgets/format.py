"""Value and label formatting shared by the text report, the HTML report, the figures and the widget.

Pure functions of plain data (no matplotlib, no ipywidgets, no other display module), so every
renderer imports them without importing each other.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from ..errors import split_lines  # (re-exported: the one line splitter, shared by every view)

__all__ = [
    "array_summary",
    "format_value",
    "format_values",
    "instr_label",
    "range_text",
    "short_shape",
    "split_lines",
]

_PREVIEW = 6  # values shown per input/output array


def _fmt_scalar(v, kind: str) -> str:
    if kind == "b":
        return "True" if bool(v) else "False"
    if kind in "iu":
        return str(int(v))
    try:
        x = float(v)
    except (TypeError, ValueError):
        return str(v)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    return f"{x:.6g}"


def format_values(arr, count: int = _PREVIEW) -> str:
    """The first ``count`` values of ``arr`` (row-major), formatted deterministically.

    Parameters
    ----------
    arr : array_like
    count : int, optional

    Returns
    -------
    str
        e.g. ``"[0, 1, 2.5, -0.333252, nan, 5, …]"``; floats with 6 significant digits,
        integral floats without a decimal point.
    """
    a = np.asarray(arr)
    flat = a.reshape(-1)
    kind = a.dtype.kind
    items = [_fmt_scalar(v, kind) for v in flat[:count]]
    more = ", …" if flat.size > count else ""
    return "[" + ", ".join(items) + more + "]"


def format_value(v) -> str:
    """One value as :func:`format_values` writes it (``2.5``, ``nan``, ``True``)."""
    a = np.asarray(v)
    return _fmt_scalar(a.reshape(-1)[0], a.dtype.kind)


def array_summary(name: str, arr) -> tuple[str, str, str, str]:
    """``(name, dtype, shape, values)`` strings for one global buffer."""
    a = np.asarray(arr)
    return name, str(a.dtype.name), "[" + ", ".join(str(d) for d in a.shape) + "]", format_values(a)


def range_text(a: int, b: int) -> str:
    """Inclusive ``a-b`` (or ``a`` when equal)."""
    return f"{a}" if a == b else f"{a}-{b}"


def short_shape(buf) -> str:
    """``float16[128, 8]`` of a :class:`~tilemagic.ir.nodes.Buffer`."""
    return f"{buf.dtype}[{', '.join(str(int(d)) for d in buf.shape)}]"


def instr_label(ins: Mapping[str, object]) -> str:
    """``#0 st .32x32b.x4 T row 0 col 0 (L9)`` of one instruction of
    :func:`tilemagic.widgets.placement.tmem_occupancy`."""
    s = f"#{ins['index']} {ins['op']} .{ins['shape']}.x{ins['num']}"
    if ins["buffer"]:
        s += f" {ins['buffer']}"
    s += f" row {ins['row']} col {ins['col']}"
    if ins["line"] is not None:
        s += f" (L{ins['line']})"
    return s
