"""Value and label formatting shared by the text report, the HTML report, the figures and the widget.

Pure functions of plain data (no matplotlib, no ipywidgets, no other display module), so every
renderer imports them without importing each other.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import split_lines  # (re-exported: the one line splitter, shared by every view)

__all__ = [
    "HEAD_LINES",
    "tma_box_phrase",
    "MAX_LINES",
    "MAX_LINE_CHARS",
    "MAX_LISTED",
    "MAX_TEXT_CHARS",
    "NOT_LAUNCHED",
    "TAIL_LINES",
    "array_summary",
    "budgeted",
    "capped_list",
    "check_overflow",
    "clip_line",
    "cp_descriptor_rows",
    "cp_heading",
    "cp_listing",
    "dispatch_overflow",
    "elided_text",
    "elision_note",
    "format_value",
    "format_values",
    "instr_label",
    "mismatch_lines",
    "range_text",
    "shown_lines",
    "within_budget",
    "short_shape",
    "split_lines",
]

_PREVIEW = 6  # values shown per input/output array

#: A text pane (description, IR, CUDA, PTX, an extra section) of more lines than this is shown collapsed:
#: its first :data:`HEAD_LINES` and last :data:`TAIL_LINES` lines around one elision line.
MAX_LINES: int = 400
#: Lines shown before the elision of a collapsed pane.
HEAD_LINES: int = 300
#: Lines shown after the elision of a collapsed pane.
TAIL_LINES: int = 50
#: Characters shown of one line (the rest is replaced by ``… (+N chars)``): more than any generated line
#: (a ``tcgen05.ld .x128`` with its 128 register operands is about 4,100 characters of CUDA).
MAX_LINE_CHARS: int = 8000
#: Most characters of one collapsed text (its first lines get 4/5 of it, its last lines 1/5), so that a
#: pane of long lines shows fewer lines rather than more bytes.
MAX_TEXT_CHARS: int = 256 * 1024
#: Most entries of a list shown in a report (why-tables, warnings, mismatches); the rest are counted.
MAX_LISTED: int = 20


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


def shown_lines(n: int) -> tuple[int, int]:
    """How many of ``n`` pane lines are shown: ``(head, tail)``.

    Parameters
    ----------
    n : int
        Lines of the text.

    Returns
    -------
    (head, tail) : tuple of int
        ``(n, 0)`` for at most :data:`MAX_LINES` lines (shown in full), else
        ``(HEAD_LINES, TAIL_LINES)``: lines ``[0, head)`` and ``[n - tail, n)`` are shown and the
        ``n - head - tail`` lines between them are replaced by one :func:`elision_note`.
    """
    return (n, 0) if n <= MAX_LINES else (HEAD_LINES, TAIL_LINES)


def elision_note(hidden: int, where: str) -> str:
    """``… 12,345 lines not shown (full text: result.ir)`` -- the line standing for a collapsed part."""
    return f"… {hidden:,} lines not shown (full text: {where})"


def clip_line(line: str) -> str:
    """``line`` cut to :data:`MAX_LINE_CHARS` characters, the cut said as ``… (+N chars)``."""
    if len(line) <= MAX_LINE_CHARS:
        return line
    return line[:MAX_LINE_CHARS] + f" … (+{len(line) - MAX_LINE_CHARS:,} chars)"


def elided_text(text: str, where: str) -> str:
    """``text`` as a report shows it: collapsed by :func:`shown_lines`, every line cut by :func:`clip_line`.

    Parameters
    ----------
    text : str
    where : str
        Where the full text is (``result.ir``), named in the elision line.

    Returns
    -------
    str
        At most ``HEAD_LINES + 1 + TAIL_LINES`` lines (or the whole text when it has at most
        :data:`MAX_LINES`), each at most ``MAX_LINE_CHARS`` characters plus the cut note, and
        fewer lines when they would pass :data:`MAX_TEXT_CHARS` characters.
    """
    lines = split_lines(text)
    head, tail = shown_lines(len(lines))
    first, last = budgeted([clip_line(x) for x in lines[:head]], [clip_line(x) for x in lines[len(lines) - tail:]],
                           MAX_TEXT_CHARS)
    hidden = len(lines) - len(first) - len(last)
    return "\n".join([*first, elision_note(hidden, where), *last] if hidden else first)


def within_budget(items: Sequence[str], budget: int) -> list[str]:
    """The longest prefix of ``items`` whose lengths (plus one per item) fit ``budget`` (at least one item)."""
    total = 0
    for i, x in enumerate(items):
        total += len(x) + 1
        if total > budget and i:
            return list(items[:i])
    return list(items)


def budgeted(head: Sequence[str], tail: Sequence[str], budget: int) -> tuple[list[str], list[str]]:
    """``head`` and ``tail`` lines cut to 4/5 and 1/5 of ``budget`` characters (:func:`within_budget`;
    the tail keeps its last lines)."""
    return (within_budget(head, budget - budget // 5), within_budget(tail[::-1], budget // 5)[::-1])


def capped_list(items: Sequence[str], what: str, total: int | None = None, limit: int = MAX_LISTED) -> list[str]:
    """The first ``limit`` of ``items`` and, when some are left out, ``… 1,234 more WHAT`` (the count).

    Parameters
    ----------
    items : sequence of str
    what : str
        The plural noun of the count line (``"ops"``, ``"warnings"``).
    total : int, optional
        How many there are when ``items`` holds only the first ones (default ``len(items)``).
    limit : int, optional
    """
    total = len(items) if total is None else int(total)
    shown = list(items[:limit])
    if total > len(shown):
        shown.append(f"… {total - len(shown):,} more {what}")
    return shown


def mismatch_lines(first: Sequence[tuple], mismatches: int) -> list[str]:
    """A failing check's mismatch list: ``first 20 of 1,048,576 mismatches:`` and one line per mismatch.

    Parameters
    ----------
    first : sequence of (index, got, expected)
        The first mismatching elements in row-major order (``CheckResult.first``: at most
        :data:`MAX_LISTED`), ``index`` a tuple of int in the compared region.
    mismatches : int
        How many elements differ in all.

    Returns
    -------
    list of str
        ``[]`` when ``first`` is empty, else the heading and ``[i, j]: got G, expected E`` lines.
    """
    if not first:
        return []
    head = (f"first {len(first)} of {mismatches:,} mismatches:" if mismatches > len(first)
            else f"{mismatches:,} mismatch{'es' if mismatches != 1 else ''}:")
    return [head] + [f"{list(idx) if len(idx) else 'the element'}: got {format_value(g)}, "
                     f"expected {format_value(e)}" for idx, g, e in first]  # (a one-element check: no index)


def dispatch_overflow(records: Sequence) -> list[str]:
    """The ops past the first :data:`MAX_LISTED` of a report's why-tables, one line each, capped.

    Parameters
    ----------
    records : sequence of tilemagic.lower.dispatch.DispatchRecord
        Every op's record, in source order.

    Returns
    -------
    list of str
        ``[]`` for at most :data:`MAX_LISTED` ops; else a heading, ``L12: warp.copy B <- S → copy/reg``
        per further op (at most :data:`MAX_LINES`, then ``… N more ops``); the full records are
        ``result.dispatch``.
    """
    return _overflow(records, "ops", lambda rest: f"{len(rest):,} more ops (their why-tables: result.dispatch"
                     f"[{MAX_LISTED}:]):", lambda r: f"L{r.line}: {r.text} → {r.op}/{r.chosen or 'none'}")


def _overflow(items: Sequence, what: str, heading: Callable[[Sequence], str], line: Callable[[Any], str]) -> list[str]:
    """The items past the first :data:`MAX_LISTED`: ``heading(rest)``, then ``line(item)`` each (cut, at most
    :data:`MAX_LINES`, then ``… N more WHAT``); ``[]`` when there are none."""
    rest = items[MAX_LISTED:]
    if not rest:
        return []
    return [heading(rest)] + capped_list([clip_line(line(x)) for x in rest[:MAX_LINES]], what, total=len(rest),
                                         limit=MAX_LINES)


def check_overflow(checks: Sequence) -> list[str]:
    """The checks past the first :data:`MAX_LISTED` of a report, one line each (no mismatch lists), capped.

    Parameters
    ----------
    checks : sequence of tilemagic.result.CheckResult
        Every check of the launch, in source order.

    Returns
    -------
    list of str
        ``[]`` for at most :data:`MAX_LISTED` checks; else a heading with how many of them FAIL, then
        ``L12: check B == A: FAIL (...)`` per further check (at most :data:`MAX_LINES`, then ``… N more
        checks``); every check is in ``result.launch.checks``.
    """
    def heading(rest: Sequence) -> str:
        failed = sum(1 for c in rest if not c.passed)
        return f"{len(rest):,} more checks, {failed:,} of them FAIL (all: result.launch.checks[{MAX_LISTED}:]):"

    return _overflow(checks, "checks", heading, lambda c: f"L{c.line}: {c}")


#: The Launch section of a report that did not launch (``--launch off``): it also says what was not checked.
NOT_LAUNCHED = "not launched (happens-before not checked: it runs in the simulator, --launch sim)"


def range_text(a: int, b: int) -> str:
    """Inclusive ``a-b`` (or ``a`` when equal)."""
    return f"{a}" if a == b else f"{a}-{b}"


def short_shape(buf) -> str:
    """``float16[128, 8]`` of a :class:`~tilemagic.ir.nodes.Buffer`."""
    return f"{buf.dtype}[{', '.join(str(int(d)) for d in buf.shape)}]"


def tma_box_phrase(op: Mapping[str, Any]) -> str:
    """``1 box [64, 64] at [64, 64]`` / ``258 boxes [64, 1], first at [0, 1], last at [0, 258]`` of a TMA op of
    :func:`~tilemagic.widgets.placement.tma_boxes` (coordinates in CUDA order, descriptor elements)."""
    iss, box = op["issues"], list(op["tmap"].box)
    n = len(iss)
    text = f"{n} box{'es' if n != 1 else ''} {box}"
    if n == 1:
        text += f" at {list(iss[0]['start'])}"
    elif n:
        text += f", first at {list(iss[0]['start'])}, last at {list(iss[-1]['start'])}"
    return text


def timeline_summary(tl: Mapping[str, Any]) -> str:
    """``4 copy issue(s) by thread 0 (warp 0), 1 mbarrier phase(s) completed, 0 commit group(s)``: the
    simulator's timeline (:func:`tilemagic.widgets.placement.async_timeline`) in one line, for the text and
    HTML reports and the timeline picture.  Copies issued by single threads (TMA, ``tcgen05.cp``) name them
    (up to four, with their warps); copies issued by whole warps (``cp.async``) are counted per warp."""
    copies = tl["copies"]
    single = bool(copies) and all(len(c.get("threads", ())) == 1 for c in copies)
    tids = sorted({c["threads"][0] for c in copies}) if single else []
    if single and len(tids) <= 4:
        warps = sorted({t // 32 for t in tids})
        who = (f"by thread{'s' if len(tids) > 1 else ''} {', '.join(map(str, tids))} "
               f"(warp{'s' if len(warps) > 1 else ''} {', '.join(map(str, warps))})")
        if len({c["cta"] for c in copies}) > 1:
            who += " of each issuing CTA"
    elif single:
        who = f"by {len(tids)} single threads"
    else:
        who = "by warp"
    return (f"{len(copies)} copy issue(s) {who}, {len(tl['phases'])} mbarrier phase(s) completed, "
            f"{len(tl['groups'])} commit group(s)")


def instr_shape(ins: Mapping[str, object]) -> str:
    """``.32x32b.x4`` of a tcgen05.ld/st, ``.128x256b`` of a ``tcgen05.cp`` (no ``.x{num}``: the cp
    instruction has no repetition count, PTX ISA 9.0 §9.7.16.9.1), for one instruction of
    :func:`tilemagic.widgets.placement.tmem_occupancy`."""
    return f".{ins['shape']}" + ("" if ins["op"] == "cp" else f".x{ins['num']}")


def instr_label(ins: Mapping[str, object]) -> str:
    """``#0 st .32x32b.x4 T row 0 col 0 (L9)`` of one instruction of
    :func:`tilemagic.widgets.placement.tmem_occupancy` (a ``tcgen05.cp``: ``#0 cp .128x256b T row 0 col 0
    (L12)``)."""
    s = f"#{ins['index']} {ins['op']} {instr_shape(ins)}"
    if ins["buffer"]:
        s += f" {ins['buffer']}"
    s += f" row {ins['row']} col {ins['col']}"
    if ins["line"] is not None:
        s += f" (L{ins['line']})"
    return s


#: Report sections shown with the dispatch why-tables, not after the code panes: what each candidate costs
#: (``--cost``) sits beside the table of which candidates accepted.
WITH_DISPATCH = ("Cost of every candidate",)


def split_sections(result) -> tuple[list, list]:
    """``result.sections`` (``--export``, ``--compare``, ``--cost``) as those shown with the dispatch
    (:data:`WITH_DISPATCH`) and the rest, each in order, with their index in ``result.sections``."""
    mine: list[tuple[int, Any]] = []
    rest: list[tuple[int, Any]] = []
    for i, sec in enumerate(getattr(result, "sections", ())):
        (mine if sec.title in WITH_DISPATCH else rest).append((i, sec))
    return mine, rest


# ----------------------------------------------------------------------------- tcgen05.cp descriptors
def _units(b: int) -> str:
    return f"{b} B ({b >> 4} × 16 B)"


def cp_listing(ops: Sequence[Mapping[str, Any]], limit: int = MAX_LISTED) -> tuple[list[tuple[str, Mapping]], int]:
    """The ``tcgen05.cp`` instructions a report lists: ``([(smem name, cp), ...] (the first ``limit``), how many
    more)`` over the ops of :func:`tilemagic.widgets.placement.cp_ops`."""
    every = [(op["smem"], cp) for op in ops for cp in op["cps"]]
    return every[:limit], max(0, len(every) - limit)


def cp_heading(cp: Mapping[str, Any], smem: str) -> str:
    """``L12 #0 tcgen05.cp.cta_group::1.128x256b: S + 32 B -> TMEM lane 0, column 8`` for one instruction of
    :func:`tilemagic.widgets.placement.cp_ops`."""
    where = f"L{cp['line']} " if cp.get("line") is not None else ""
    return (f"{where}#{cp['index']} {cp['chain']}: {smem} + {cp['start_rel']} B -> TMEM lane {cp['lane']}, "
            f"column {cp['col']}")


def cp_descriptor_rows(cp: Mapping[str, Any], smem: str) -> list[tuple[str, str, str]]:
    """``(field, bits, value)`` of one ``tcgen05.cp``'s shared-memory descriptor, decoded as the hardware reads
    it (``cp["fields"]``: :func:`tilemagic.arch.smem_desc.decode` of ``cp["desc"]``; PTX ISA 9.0 §9.7.16.4.1,
    Table 40), for the text report, the HTML report and the widget view.

    Parameters
    ----------
    cp : mapping
        One instruction of :func:`tilemagic.widgets.placement.cp_ops` (``desc``, ``fields``, ``start_rel``).
    smem : str
        The shared buffer's name (the start address is also shown as ``smem + N B``).

    Returns
    -------
    list of (str, str, str)
        The raw value (its address part the simulator's shared window's), start address, LBO (with "ignored
        by the hardware (assumed 1)" for a swizzled layout), SBO, the fixed version bits, base offset, LBO
        mode, layout type.
    """
    from ..arch.smem_desc import LAYOUT_NAMES

    f = cp["fields"]
    lbo = _units(f.lbo) + ("; LBO is ignored by the hardware (assumed 1) for a swizzled layout" if f.swizzled else "")
    name = LAYOUT_NAMES.get(f.layout)
    lay = (f"{name} ({f.layout})" if name is not None else f"invalid ({f.layout})") + (
        "" if f.swizzled else ": no swizzle, 8 × 16-byte core matrices")
    return [
        ("descriptor", "0-63", f"0x{int(cp['desc']):016x} (the address part is this run's: the simulator's shared "
                               "window)"),
        ("start address", "0-13", f"{f.start} B = {smem} + {cp['start_rel']} B ({f.start >> 4} × 16 B)"),
        ("LBO", "16-29", lbo),
        ("SBO", "32-45", _units(f.sbo) + " between 8-row core matrices"),
        ("version", "46-48", f"{f.version}" + (" (sm_100 family)" if f.version == 1 else " (not 1: invalid)")),
        ("base offset", "49-51", f"{f.base_offset}"),
        ("LBO mode", "52", f"{f.lbo_mode} ({'absolute' if f.lbo_mode else 'relative'})"),
        ("layout type", "61-63", lay),
    ]
