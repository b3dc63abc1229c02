"""Pictures of where a kernel's data lives: TMEM occupancy heatmaps and shared-memory tiles.

Everything is derived from the lowered IR (:mod:`tilemagic.ir.nodes`), never from the
description, so the picture shows exactly what the printed IR, the CUDA and the
simulator do.

* With TMEM (``kernel.tmem_cols > 0``): a ``TLane`` × ``TCol`` map of the allocated
  128 lanes × ``tmem_cols`` 32-bit columns, each cell coloured by the warp (thread,
  register or instruction) whose ``tcgen05.ld`` / ``tcgen05.st`` moves it.  The
  (thread, register) -> (lane, column) map is :func:`tilemagic.layout.tcgen05.tmem_cell`
  (PTX ISA §9.7.16.2.3 fragments, §9.7.16.8.1 warp -> lane-quadrant rule).
* Without TMEM: each shared buffer's logical 2-D tile, coloured by the thread that
  writes each element (derived by evaluating the IR's stores under their guards and
  serial grids).

Figures are built with :class:`matplotlib.figure.Figure` and the Agg canvas -- never
``matplotlib.pyplot`` -- at a fixed size (:data:`FIGSIZE`), so the figure's
``text/plain`` (``<Figure size 900x480 with 1 Axes>``) is stable under nbval, and
PNG bytes are reproducible (no ``Software`` metadata).
"""

from __future__ import annotations

import io
import re
import textwrap
import weakref
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..ir import nodes as ir

__all__ = [
    "FIGSIZE",
    "DPI",
    "COLOR_BY",
    "tmem_occupancy",
    "instr_arrays",
    "tmem_columns",
    "shared_writers",
    "heatmap_figure",
    "heatmap_png",
    "figure_png",
]

#: Figure size in inches (fixed: nbval compares the figure's ``text/plain``).
FIGSIZE: Tuple[float, float] = (9.0, 4.8)
#: Resolution of the PNG (pixels per inch); 9 × 4.8 in -> 900 × 480 px.
DPI: int = 100
#: What a TMEM cell can be coloured by.
COLOR_BY: Tuple[str, ...] = ("warp", "thread", "reg", "instr")

TMEM_LANES = 128
_UNTOUCHED = "#e6e6e6"
# Distinct categorical colours (Tableau 10 then its light companions): deterministic.
_PALETTE: Tuple[str, ...] = (
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#76b7b2", "#edc948", "#ff9da7",
    "#9c755f", "#17becf", "#1f3b73", "#a0cbe8", "#ffbe7d", "#8cd17d", "#b6992d", "#86bcb6",
    "#d4a6c8", "#79706e", "#d37295", "#bcbd22",
)
_MAX_LEGEND = 16  # more categories than this get a colour bar instead of legend patches
_MAX_CELL_LABELS = 64  # shared tiles up to this many elements get per-cell "T<k>" labels
_MAX_EVAL = 1 << 22  # thread × grid points evaluated when deriving shared-memory writers


# ============================================================================ TMEM occupancy
def tmem_columns(buf) -> Tuple[int, int]:
    """32-bit column range ``[start, stop)`` of a TMEM buffer inside the CTA's allocation.

    Parameters
    ----------
    buf : tilemagic.ir.nodes.Buffer
        A ``scope == "tmem"`` buffer; ``buf.tmem_col`` is its first 32-bit column.

    Returns
    -------
    (start, stop) : tuple of int
        In 32-bit columns.  The width is the row length in bytes / 4, rounded up, where
        the row length is the product of the dims after the first (elements), halved for
        datapath ``B`` (``col = c % (N/2)``, the other half lives in lanes 64..127).
    """
    width_elems = 1
    for d in tuple(buf.shape)[1:]:
        width_elems *= int(d)
    if getattr(buf, "datapath", None) == "B":
        width_elems = -(-width_elems // 2)
    width = -(-width_elems * int(buf.elem_bytes) // 4)
    start = int(getattr(buf, "tmem_col", 0) or 0)
    return start, start + max(width, 1)


def _tcgen_nodes(kernel) -> List[ir.TcgenLdSt]:
    return [s for s in ir.walk(kernel.body) if isinstance(s, ir.TcgenLdSt)]


def _num_warps(kernel) -> int:
    return max(1, -(-int(kernel.threads) // 32))


def tmem_occupancy(kernel) -> Dict[str, object]:
    """Which warp / thread / register / instruction moves each allocated TMEM cell.

    Every :class:`~tilemagic.ir.nodes.TcgenLdSt` in ``walk(kernel.body)`` (program order)
    is executed by every warp ``w`` in ``range(ceil(kernel.threads / 32))`` (``If``
    guards are ignored).  Thread lane ``t`` (0..31) of warp ``w`` and register ``r``
    (``0 .. node.regs - 1``) touch the cell::

        tmem_cell(node.shape, t, r, taddr=0, warp=w, row_imm=node.row, col_imm=node.col)

    (TMEM base address 0: the buffer's column offset in the allocation is already in
    ``node.col``; the lane quadrant comes from ``w % 4``, PTX §9.7.16.8.1).  Later
    instructions (and, within one instruction, later warps sharing a quadrant) overwrite
    earlier ones in the dense arrays; every instruction's own cells are kept too.

    Parameters
    ----------
    kernel : tilemagic.ir.nodes.Kernel
        Lowered kernel; ``kernel.tmem_cols`` is the allocation size in 32-bit columns.

    Returns
    -------
    dict
        ``"warp"``, ``"thread"``, ``"reg"``, ``"instr"`` : numpy.ndarray of int32, shape
        ``(128, kernel.tmem_cols)`` -- owning warp id, thread id in the CTA, 32-bit
        register index within the instruction, index of the instruction (into
        ``"instructions"``); ``-1`` marks untouched cells.
        ``"instructions"`` : list of dict, one per ``TcgenLdSt`` in program order, with
        ``index``, ``op`` (``"ld"``/``"st"``), ``chain`` (the PTX name), ``shape``,
        ``num``, ``regs``, ``buffer`` (TMEM buffer name or None), ``local`` (register
        buffer name), ``row`` / ``col`` (the lane / 32-bit column immediates), ``line``
        (description line or None), ``out_of_range`` (cells outside the allocation,
        dropped) and ``cells`` (dict of 1-D int64 arrays ``lane``, ``col``, ``warp``,
        ``thread``, ``reg`` for the in-range cells, in issue order).
        ``"ncols"`` : int; ``"warps"`` : int (warps that execute); ``"out_of_range"`` : int.

    Raises
    ------
    ValueError
        From :func:`~tilemagic.layout.tcgen05.tmem_cell` for an unknown tcgen05 shape.
    """
    from ..layout.tcgen05 import tmem_cell

    ncols = max(0, int(kernel.tmem_cols or 0))
    nwarps = _num_warps(kernel)
    arrays = {k: np.full((TMEM_LANES, ncols), -1, dtype=np.int32) for k in ("warp", "thread", "reg", "instr")}
    instructions: List[dict] = []
    total_oor = 0
    for idx, node in enumerate(_tcgen_nodes(kernel)):
        regs = max(0, int(node.regs))
        # axes: (warp, lane t, register r)
        w = np.arange(nwarps, dtype=np.int64)[:, None, None]
        t = np.arange(32, dtype=np.int64)[None, :, None]
        r = np.arange(regs, dtype=np.int64)[None, None, :]
        shape3 = (nwarps, 32, regs)
        lane, col = tmem_cell(
            node.shape, np.broadcast_to(t, shape3), np.broadcast_to(r, shape3), 0,
            np.broadcast_to(w, shape3), row_imm=int(node.row), col_imm=int(node.col),
            split=int(getattr(node, "split", 0) or 0),
        )
        lane = np.broadcast_to(lane, shape3).ravel()
        col = np.broadcast_to(col, shape3).ravel()
        warp = np.broadcast_to(w, shape3).ravel()
        thread = (32 * np.broadcast_to(w, shape3) + np.broadcast_to(t, shape3)).ravel()
        reg = np.broadcast_to(r, shape3).ravel()
        ok = (lane >= 0) & (lane < TMEM_LANES) & (col >= 0) & (col < ncols)
        oor = int(ok.size - np.count_nonzero(ok))
        total_oor += oor
        cells = {"lane": lane[ok], "col": col[ok], "warp": warp[ok], "thread": thread[ok], "reg": reg[ok]}
        # fancy assignment in issue order: later (warp, lane, reg) wins on a repeated cell
        arrays["warp"][cells["lane"], cells["col"]] = cells["warp"]
        arrays["thread"][cells["lane"], cells["col"]] = cells["thread"]
        arrays["reg"][cells["lane"], cells["col"]] = cells["reg"]
        arrays["instr"][cells["lane"], cells["col"]] = idx
        tm = getattr(node, "tmem", None)
        instructions.append({
            "index": idx,
            "op": node.op,
            "chain": node.chain,
            "shape": node.shape,
            "num": int(node.num),
            "regs": regs,
            "buffer": tm.name if tm is not None else None,
            "local": node.local.name if node.local is not None else None,
            "row": int(node.row),
            "col": int(node.col),
            "line": node.span.line if node.span is not None else None,
            "out_of_range": oor,
            "cells": cells,
        })
    out: Dict[str, object] = dict(arrays)
    out.update(instructions=instructions, ncols=ncols, warps=nwarps, out_of_range=total_oor)
    return out


def instr_arrays(occ: Dict[str, object], index: int) -> Dict[str, np.ndarray]:
    """Dense ``(128, ncols)`` arrays (``warp``, ``thread``, ``reg``, ``instr``) of one instruction.

    Parameters
    ----------
    occ : dict
        The result of :func:`tmem_occupancy`.
    index : int
        Index into ``occ["instructions"]``.

    Returns
    -------
    dict of str -> numpy.ndarray (int32, shape ``(128, ncols)``, ``-1`` = not touched)
    """
    ins = occ["instructions"][index]
    cells = ins["cells"]
    ncols = int(occ["ncols"])
    out = {k: np.full((TMEM_LANES, ncols), -1, dtype=np.int32) for k in ("warp", "thread", "reg", "instr")}
    for k in ("warp", "thread", "reg"):
        out[k][cells["lane"], cells["col"]] = cells[k]
    out["instr"][cells["lane"], cells["col"]] = index
    return out


# ============================================================================ shared writers
class _Undetermined(Exception):
    """The writer of some element cannot be derived statically."""


_BINOPS = {
    "+": np.add, "-": np.subtract, "*": np.multiply, "//": np.floor_divide, "%": np.mod, "^": np.bitwise_xor,
    "==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal,
    ">": np.greater, ">=": np.greater_equal, "and": np.logical_and, "or": np.logical_or,
    "&&": np.logical_and, "||": np.logical_or,
}


def _thread_var(kind: str, tid: np.ndarray) -> np.ndarray:
    if kind in ("tx", "tid", "threadIdx.x"):
        return tid
    if kind == "laneid":
        return tid % 32
    if kind == "warpid":
        return tid // 32
    if kind == "tid_in_wg":
        return tid % 128
    if kind == "wid_in_wg":
        return (tid // 32) % 4
    if kind in ("wgid", "warpgroup_id"):
        return tid // 128
    raise _Undetermined(f"unknown thread variable {kind!r}")


def _eval(e, env: dict):
    if isinstance(e, ir.Const):
        return np.int64(e.value)
    if isinstance(e, ir.ThreadVar):
        return _thread_var(e.kind, env["tid"])
    if isinstance(e, ir.LoopVar):
        if e in env:
            return env[e]
        raise _Undetermined(f"free loop variable {e.name}")
    if isinstance(e, ir.Bin):
        fn = _BINOPS.get(e.op)
        if fn is None:
            raise _Undetermined(f"operator {e.op!r}")
        a, b = _eval(e.a, env), _eval(e.b, env)
        if e.op in ("//", "%"):
            with np.errstate(divide="ignore", invalid="ignore"):
                if np.any(np.asarray(b) == 0):
                    raise _Undetermined("division by zero")
                return fn(a, b)
        return fn(a, b)
    raise _Undetermined(f"cannot evaluate {type(e).__name__}")


def _writes(stmt, targets) -> set:
    """Target buffers written anywhere under ``stmt``."""
    out = set()
    for s in ir.walk(stmt):
        if isinstance(s, ir.Store) and s.buf in targets:
            out.add(s.buf)
        elif isinstance(s, ir.VecMove) and s.dst in targets:
            out.add(s.dst)
        elif isinstance(s, ir.LdStMatrix) and s.op == "st" and s.smem in targets:
            out.add(s.smem)
    return out


def _logical_of(buf) -> np.ndarray:
    """Logical (row-major) element index of each physical element of a shared buffer."""
    if buf.layout is None:
        return np.arange(buf.numel, dtype=np.int64)
    phys = np.asarray(buf.layout.apply(np.arange(buf.numel, dtype=np.int64)).get("m"), np.int64)
    inv = np.empty(buf.numel, np.int64)
    inv[phys] = np.arange(buf.numel, dtype=np.int64)
    return inv


_VARIANT_RE = re.compile(r"\[([^\[\]]+)\]\s*$")


def shared_writers(kernel) -> List[dict]:
    """Which thread writes each element of each shared buffer (derived from the IR).

    The IR is walked in program order with every thread of the CTA as one NumPy axis
    and every enclosing :class:`~tilemagic.ir.nodes.Grid` variable as another; ``If``
    conditions become masks.  ``Store`` indices (one per logical dim), ``VecMove``
    physical destination indices (``dst_index + 0..elems-1``, mapped back through the
    buffer's layout) and ``stmatrix`` fragments (the thread whose register supplies each
    element, :func:`~tilemagic.layout.ldmatrix.fragment_elements`) are evaluated for all
    of them; a later write overwrites an earlier one.  The variant is taken from the closest
    preceding :class:`~tilemagic.ir.nodes.Comment` (``"... [copy/fallback]"``).

    Parameters
    ----------
    kernel : tilemagic.ir.nodes.Kernel

    Returns
    -------
    list of dict
        One per shared buffer except the ``tmem_addr`` slot, in declaration order:
        ``buffer`` (the Buffer), ``writer`` (int64 array of the buffer's logical shape,
        thread id in the CTA, ``-1`` = not written), ``determined`` (False when some
        write could not be evaluated: a ``Load`` in an index, an unknown thread
        variable ...), ``variants`` (list of str, first-write order), ``threads``
        (sorted list of writer thread ids).
    """
    bufs = [b for b in kernel.shared if b is not kernel.tmem_addr and b.name != "tmem_addr"]
    info = {b: {"writer": np.full(max(b.numel, 0), -1, dtype=np.int64), "determined": True, "variants": []}
            for b in bufs}
    targets = set(bufs)
    state = {"variant": None}
    tid = np.arange(max(1, int(kernel.threads)), dtype=np.int64)

    def record(buf, flat, env, mask):
        ent = info[buf]
        flat_b, tid_b, m_b = np.broadcast_arrays(flat, env["tid"], mask)
        sel = m_b & (flat_b >= 0) & (flat_b < ent["writer"].size)
        if np.any(sel):
            ent["writer"][flat_b[sel]] = tid_b[sel]
            v = state["variant"]
            if v and v not in ent["variants"]:
                ent["variants"].append(v)

    def visit(stmt, env, mask, ndim):
        if isinstance(stmt, ir.Comment):
            m = _VARIANT_RE.search(stmt.text or "")
            if m:
                state["variant"] = m.group(1).strip()
        elif isinstance(stmt, ir.Seq):
            for s in stmt.body:
                visit(s, env, mask, ndim)
        elif isinstance(stmt, ir.If):
            hit = _writes(stmt.then, targets)
            if not hit:
                return
            try:
                cond = np.asarray(_eval(stmt.cond, env)).astype(bool)
            except _Undetermined:
                for b in hit:
                    info[b]["determined"] = False
                return
            visit(stmt.then, env, mask & cond, ndim)
        elif isinstance(stmt, ir.Grid):
            hit = _writes(stmt.body, targets)
            if not hit:
                return
            k = len(stmt.vars)
            cur = np.broadcast_shapes(np.shape(mask), *(np.shape(v) for v in env.values()))
            size = int(np.prod(cur, dtype=np.int64)) * int(np.prod(stmt.extents or (1,), dtype=np.int64))
            if size > _MAX_EVAL:
                for b in hit:
                    info[b]["determined"] = False
                return
            new_env = {key: np.reshape(v, np.shape(v) + (1,) * k) for key, v in env.items()}
            for j, (var, ext) in enumerate(zip(stmt.vars, stmt.extents)):
                shp = [1] * (ndim + k)
                shp[ndim + j] = int(ext)
                new_env[var] = np.arange(int(ext), dtype=np.int64).reshape(shp)
            new_mask = np.reshape(mask, np.shape(mask) + (1,) * k)
            visit(stmt.body, new_env, new_mask, ndim + k)
        elif isinstance(stmt, ir.Store) and stmt.buf in targets:
            buf = stmt.buf
            try:
                idx = [_eval(e, env) for e in stmt.indices]
            except _Undetermined:
                info[buf]["determined"] = False
                return
            shape = tuple(int(d) for d in buf.shape)
            if len(idx) == len(shape):
                flat = np.int64(0)
                for i, d in zip(idx, shape):
                    flat = flat * d + i
            elif len(idx) == 1:
                flat = idx[0]
            else:
                info[buf]["determined"] = False
                return
            record(buf, flat, env, mask)
        elif isinstance(stmt, ir.VecMove) and stmt.dst in targets:
            buf = stmt.dst
            try:
                base = _eval(stmt.dst_index, env)
            except _Undetermined:
                info[buf]["determined"] = False
                return
            lanes = np.arange(int(stmt.elems), dtype=np.int64)
            phys = np.asarray(base)[..., None] + lanes
            inv = _logical_of(buf)
            flat = np.where((phys >= 0) & (phys < inv.size), inv[np.clip(phys, 0, inv.size - 1)], -1)
            sub = {"tid": np.asarray(env["tid"])[..., None]}
            record(buf, flat, sub, np.asarray(mask)[..., None])
        elif isinstance(stmt, ir.LdStMatrix) and stmt.op == "st" and stmt.smem in targets:
            from ..layout.ldmatrix import fragment_elements

            buf = stmt.smem
            n = int(np.size(env["tid"]))
            try:
                if ndim != 1 or n % 32:
                    raise _Undetermined("stmatrix inside a loop")
                addr = np.broadcast_to(np.asarray(_eval(stmt.addr, env), np.int64), (n,)).reshape(-1, 32)
            except _Undetermined:
                info[buf]["determined"] = False
                return
            lo, hi = fragment_elements(addr, stmt.num, stmt.trans)  # (warps, num, 32)
            writer = np.broadcast_to(np.arange(n).reshape(-1, 1, 32), lo.shape)
            inv = _logical_of(buf)
            m = np.broadcast_to(np.asarray(mask).reshape(-1, 1, 32), lo.shape)
            for part in (lo, hi):
                ok = (part >= 0) & (part < inv.size)
                flat = np.where(ok, inv[np.clip(part, 0, inv.size - 1)], -1)
                record(buf, flat, {"tid": writer}, m & ok)

    visit(kernel.body, {"tid": tid}, np.ones(tid.shape, dtype=bool), 1)
    out = []
    for b in bufs:
        ent = info[b]
        w = ent["writer"]
        out.append({
            "buffer": b,
            "writer": w.reshape(tuple(int(d) for d in b.shape)) if w.size == b.numel else w,
            "determined": ent["determined"],
            "variants": list(ent["variants"]),
            "threads": sorted(int(x) for x in np.unique(w[w >= 0])),
        })
    return out


def _threads_phrase(threads: Sequence[int]) -> str:
    if not threads:
        return "not written"
    if len(threads) == 1:
        return f"thread {threads[0]}"
    if threads[-1] - threads[0] + 1 == len(threads):
        return f"threads {threads[0]}-{threads[-1]}"
    return f"{len(threads)} threads"


# ============================================================================ drawing helpers
def _new_figure():
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=FIGSIZE, dpi=DPI)
    FigureCanvasAgg(fig)
    return fig


def _colours(n: int) -> List:
    """``n`` category colours: the fixed palette, or a sampled colormap when it is too short."""
    if n <= len(_PALETTE):
        return list(_PALETTE[:n])
    import matplotlib

    cmap = matplotlib.colormaps["turbo"]
    return [cmap(x) for x in np.linspace(0.05, 0.95, n)]


def _cat_cmap(n: int):
    """ListedColormap + BoundaryNorm for integer data in ``-1 .. n-1`` (-1 light grey)."""
    from matplotlib.colors import BoundaryNorm, ListedColormap

    cmap = ListedColormap([_UNTOUCHED] + _colours(n))
    norm = BoundaryNorm(np.arange(-1.5, n, 1.0), cmap.N)
    return cmap, norm


def _tick_step(n: int) -> int:
    for step, limit in ((1, 8), (2, 16), (4, 32), (8, 64), (16, 128), (32, 10**9)):
        if n <= limit:
            return step
    return 32  # pragma: no cover


def _xtick_step(n: int) -> int:
    """Power-of-two column step giving at most 5 tick labels (0, 8, 16, 24 for 32 columns)."""
    step = 1
    while n / step > 5:
        step *= 2
    return step


def _range_text(a: int, b: int) -> str:
    """Inclusive ``a-b`` (or ``a`` when equal)."""
    return f"{a}" if a == b else f"{a}-{b}"


def _short_shape(buf) -> str:
    return f"{buf.dtype}[{', '.join(str(int(d)) for d in buf.shape)}]"


def _instr_summary(instructions: List[dict]) -> str:
    """``tcgen05.st/ld .32x32b.x4`` grouped by (shape, num), ops in first-issue order."""
    groups: Dict[Tuple[str, int], List[str]] = {}
    for ins in instructions:
        ops = groups.setdefault((ins["shape"], ins["num"]), [])
        if ins["op"] not in ops:
            ops.append(ins["op"])
    return " · ".join(f"tcgen05.{'/'.join(ops)} .{shape}.x{num}" for (shape, num), ops in groups.items())


def _tmem_title(kernel, occ) -> str:
    parts = []
    for b in kernel.tmem:
        a, z = tmem_columns(b)
        parts.append(f"{b.name} {_short_shape(b)} = cols {_range_text(a, z - 1)}")
    title = "TMEM: " + ("; ".join(parts) if parts else f"{kernel.tmem_cols} columns allocated")
    summary = _instr_summary(occ["instructions"])
    title += " · " + (summary if summary else "no tcgen05.ld/st")
    if occ["out_of_range"]:
        title += f" · {occ['out_of_range']} cells outside the allocation"
    return "\n".join(textwrap.wrap(title, 110)) or title


def _swatch_legend(fig, x: float, y: float, entries: Sequence[Tuple[object, str]], step: float = 0.045):
    """A legend of colour swatches drawn as figure patches + texts.

    Hand-made because ``Figure.legend`` (offsetbox layout) costs ~20 ms per draw, a
    third of the whole heatmap.
    """
    from matplotlib.patches import Rectangle

    for i, (colour, label) in enumerate(entries):
        yy = y - i * step
        fig.patches.append(Rectangle((x, yy - 0.012), 0.022, 0.026, transform=fig.transFigure, figure=fig,
                                     facecolor=colour, edgecolor="#999999", linewidth=0.5))
        fig.text(x + 0.03, yy, label, fontsize=8, va="center", ha="left")


def _legend_or_colorbar(fig, im, labels: List[str], n: int, cbar_label: str, x: float = 0.80):
    if n <= _MAX_LEGEND:
        cols = _colours(n)
        entries = [(cols[i], labels[i]) for i in range(n)] + [(_UNTOUCHED, "untouched")]
        _swatch_legend(fig, x, 0.82, entries)
    else:
        cax = fig.add_axes((x + 0.04, 0.14, 0.018, 0.70))
        cb = fig.colorbar(im, cax=cax, ticks=np.linspace(0, n - 1, min(n, 9)).round().astype(int))
        cb.ax.minorticks_off()
        cb.set_label(cbar_label + " (grey: untouched)", fontsize=8)
        cb.ax.tick_params(labelsize=7)


def _draw_tmem(fig, kernel, color_by: str, instr: Optional[int]):
    occ = tmem_occupancy(kernel)
    arrays = occ if instr is None else instr_arrays(occ, instr)
    ncols, nwarps = int(occ["ncols"]), int(occ["warps"])
    data = np.asarray(arrays[color_by])
    if color_by == "warp":
        n, labels = nwarps, [f"warp {w} (T{32 * w}-{32 * w + 31})" for w in range(nwarps)]
    elif color_by == "thread":
        n, labels = 32 * nwarps, [f"thread {i}" for i in range(32 * nwarps)]
    elif color_by == "reg":
        n = max([ins["regs"] for ins in occ["instructions"]] + [1])
        labels = [f"reg {i}" for i in range(n)]
    else:
        n = max(len(occ["instructions"]), 1)
        labels = [f"#{i['index']} {i['op']} .{i['shape']}.x{i['num']}" + (f" {i['buffer']}" if i["buffer"] else "")
                  + (f" (L{i['line']})" if i["line"] is not None else "") for i in occ["instructions"]] or ["-"]
    cmap, norm = _cat_cmap(n)
    ax = fig.add_axes((0.11, 0.11, 0.66, 0.74))
    im = ax.imshow(data, cmap=cmap, norm=norm, interpolation="nearest", aspect="auto")
    # 32-lane quadrants: the lanes warp w reaches are 32*(w % 4) .. +31 (PTX §9.7.16.8.1)
    for y in (32, 64, 96):
        ax.axhline(y - 0.5, color="black", linewidth=0.9)
    for x in range(32, ncols, 32):  # 32-column allocation units (tcgen05.alloc granularity)
        ax.axvline(x - 0.5, color="#444444", linewidth=0.6, linestyle="--")
    # the quadrant labels are the y tick labels (one text each: text dominates the draw time)
    ylabels = []
    for q in range(4):
        ws = [w for w in range(nwarps) if w % 4 == q]
        who = (("warp " if len(ws) == 1 else "warps ") + ",".join(str(w) for w in ws)) if ws else "no warp"
        ylabels.append(f"{32 * q}-{32 * q + 31}\n{who}")
    ax.set_yticks([32 * q + 15.5 for q in range(4)], ylabels)
    ax.set_xticks(np.arange(0, max(ncols, 1), _xtick_step(ncols)))
    ax.tick_params(labelsize=8)
    ax.set_xlabel("TCol (32-bit column)", fontsize=9)
    ax.set_ylabel("TLane", fontsize=9)
    title = _tmem_title(kernel, occ)
    if instr is not None:
        ins = occ["instructions"][instr]
        title = f"TMEM: instruction #{instr} {ins['chain']}" + (
            f" ({ins['buffer']}, row {ins['row']}, col {ins['col']})" if ins["buffer"] else "")
    title += f"\n{ncols} of 512 columns allocated · coloured by {color_by}"
    fig.suptitle(title, fontsize=9.5, x=0.11, ha="left", va="top", y=0.975, linespacing=1.5)
    _legend_or_colorbar(fig, im, labels, n, color_by)


def _draw_shared(fig, kernel, color_by: str):
    infos = shared_writers(kernel)
    if not infos:
        ax = fig.add_axes((0.05, 0.05, 0.9, 0.9))
        ax.set_axis_off()
        ax.text(0.5, 0.5, f"{kernel.name}: no TMEM and no shared buffers to draw",
                ha="center", va="center", fontsize=11, transform=ax.transAxes)
        return
    n = len(infos)
    width = 0.78 / n  # the right 0.14 of the figure holds the legend
    all_threads = sorted({t for inf in infos if inf["determined"] for t in inf["threads"]})
    ncat = max(len(all_threads), 1)
    cat = {t: i for i, t in enumerate(all_threads)}
    for k, inf in enumerate(infos):
        buf, w = inf["buffer"], inf["writer"]
        grid2 = np.asarray(w).reshape(-1, int(buf.shape[-1])) if w.ndim != 2 else np.asarray(w)
        ax = fig.add_axes((0.08 + k * width, 0.12, width - 0.07, 0.72))
        if inf["determined"]:
            data = np.vectorize(lambda t: cat.get(int(t), -1), otypes=[np.int64])(grid2) if grid2.size else grid2
            cmap, norm = _cat_cmap(ncat)
            ax.imshow(data, cmap=cmap, norm=norm, interpolation="nearest", aspect="auto")
            labels = np.where(grid2 >= 0, np.char.add("T", grid2.astype(str)), "-")
            who = _threads_phrase(inf["threads"])
        else:
            data = np.arange(grid2.size).reshape(grid2.shape)
            ax.imshow(data, cmap="viridis", interpolation="nearest", aspect="auto")
            labels = data.astype(str)
            who = "writer not determined; coloured by element index"
        # per-cell labels only where they add something (text is the costly part of a draw)
        if grid2.size <= _MAX_CELL_LABELS and (len(inf["threads"]) > 1 or not inf["determined"]):
            for (i, j), s in np.ndenumerate(labels):
                ax.text(j, i, s, ha="center", va="center", fontsize=7, color="white" if s != "-" else "#666666")
        rows, cols = grid2.shape
        ax.set_xticks(np.arange(0, cols, _tick_step(cols)))
        ax.set_yticks(np.arange(0, rows, _tick_step(rows)))
        if rows * cols <= 4096:  # white cell borders
            ax.set_xticks(np.arange(-0.5, cols, 1.0), minor=True)
            ax.set_yticks(np.arange(-0.5, rows, 1.0), minor=True)
            ax.grid(which="minor", color="white", linewidth=1.0)
            ax.tick_params(which="minor", length=0)
        ax.tick_params(labelsize=8)
        ax.set_xlabel("column (elements)", fontsize=8)
        ax.set_ylabel("row", fontsize=8)
        via = f" — {', '.join(inf['variants'])}" if inf["variants"] else ""
        title = f"shared {buf.name} {_short_shape(buf)} (written by {who}{via})"
        ax.set_title("\n".join(textwrap.wrap(title, max(30, int(95 / n)))), fontsize=9, loc="left")
    if all_threads and len(all_threads) <= _MAX_LEGEND:
        cols_ = _colours(ncat)
        entries = [(cols_[i], f"thread {t} (warp {t // 32})") for i, t in enumerate(all_threads)]
        _swatch_legend(fig, 0.86, 0.80, entries + [(_UNTOUCHED, "not written")])
    fig.suptitle(f"{kernel.name}: no TMEM — shared-memory tile(s), coloured by writing thread",
                 fontsize=9.5, x=0.06, ha="left", y=0.975)


# ============================================================================ public API
def heatmap_figure(kernel, color_by: str = "warp", instr: Optional[int] = None):
    """TMEM occupancy heatmap (or, without TMEM, the shared-memory tiles) as an Agg figure.

    Parameters
    ----------
    kernel : tilemagic.ir.nodes.Kernel
        Lowered kernel.
    color_by : {"warp", "thread", "reg", "instr"}, optional
        What colours a TMEM cell (see :func:`tmem_occupancy`).  Shared tiles are always
        coloured by the writing thread.
    instr : int, optional
        Draw only this ``TcgenLdSt`` (index in program order) instead of the overlay.

    Returns
    -------
    matplotlib.figure.Figure
        :data:`FIGSIZE` inches at :data:`DPI`, attached to a ``FigureCanvasAgg``;
        never registered with pyplot.  With TMEM: an ``imshow`` of 128 ``TLane`` ×
        ``kernel.tmem_cols`` ``TCol`` cells (light grey = untouched), black lines at the
        32-lane quadrant boundaries (labelled with the warps that own them), dashed lines
        at the 32-column allocation units, a legend naming the warps.

    Raises
    ------
    ValueError
        For an unknown ``color_by``.
    """
    if color_by not in COLOR_BY:
        raise ValueError(f"color_by must be one of {', '.join(COLOR_BY)}; got {color_by!r}")
    fig = _new_figure()
    if int(kernel.tmem_cols or 0) > 0:
        _draw_tmem(fig, kernel, color_by, instr)
    else:
        _draw_shared(fig, kernel, color_by)
    return fig


def figure_png(fig) -> bytes:
    """PNG bytes of an Agg figure (fixed dpi, no ``Software`` metadata: reproducible)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    import matplotlib

    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    bio = io.BytesIO()
    # unhinted glyphs: a third faster to rasterise, and text draws dominate the render time
    with matplotlib.rc_context({"text.hinting": "none"}):
        canvas.print_png(bio, metadata={"Software": None}, pil_kwargs={"compress_level": 1})
    return bio.getvalue()


def heatmap_png(kernel, color_by: str = "warp", instr: Optional[int] = None) -> bytes:
    """:func:`heatmap_figure` rendered to PNG bytes (cached per kernel object).

    Parameters
    ----------
    kernel : tilemagic.ir.nodes.Kernel
    color_by : {"warp", "thread", "reg", "instr"}, optional
    instr : int, optional

    Returns
    -------
    bytes
        A PNG (starts with ``b"\\x89PNG\\r\\n\\x1a\\n"``) of 900 × 480 pixels; the same
        kernel gives the same bytes with the same matplotlib and fonts.  The bytes are
        memoised per kernel object (weakly: they go with the kernel), so the HTML report
        and the widget view of one result draw the figure once; a lowered kernel is
        never mutated afterwards.
    """
    try:
        per_kernel = _PNG_CACHE.setdefault(kernel, {})
    except TypeError:  # not weak-referenceable / hashable: no caching
        per_kernel = {}
    key = (color_by, instr)
    png = per_kernel.get(key)
    if png is None:
        png = per_kernel[key] = figure_png(heatmap_figure(kernel, color_by=color_by, instr=instr))
    return png


_PNG_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
