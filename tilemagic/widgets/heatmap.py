"""Pictures of where a kernel's data lives: TMEM occupancy, register fragments, round-trip data.

Everything about placement is derived from the lowered IR (:mod:`tilemagic.ir.nodes`),
never from the description, so a picture shows exactly what the printed IR, the CUDA
and the simulator do.  Three kinds (:data:`KINDS`):

* ``"tmem"`` -- occupancy: a ``TLane`` × ``TCol`` map of the allocated 128 lanes ×
  ``tmem_cols`` 32-bit columns, each cell coloured by the warp, thread, register or
  instruction whose ``tcgen05.ld`` / ``tcgen05.st`` moves it (:data:`COLOR_BY`); the
  overlay of all instructions, one instruction, or one panel per instruction.  Lines
  mark the 32-lane quadrants (the lanes warp ``w`` reaches are ``32*(w % 4) ..
  +31``, PTX ISA §9.7.16.8.1), the 16-lane sub-slabs (``.16x*b`` shapes and data path F:
  ``lane = 32*(r // 16) + 16*sub_slab + r % 16``), the data-path-B halves (lanes 64..127
  hold columns ``N/2 .. N-1``) and the 32-column allocation units (``tcgen05.alloc``
  granularity, §9.7.16.7.1); bars above the map name each buffer's columns and the
  legend lists buffers and instructions.  The (thread, register) -> (lane, column) map is
  :func:`tilemagic.layout.tcgen05.tmem_cell` (PTX §9.7.16.2.3 fragments).  Without TMEM
  the same kind shows each shared buffer's tile coloured by the thread that writes it.
* ``"fragment"`` -- a register fragment: thread × 32-bit register -> TMEM lane and
  column, for a ``local`` buffer that tcgen05 instructions move (e.g. ``frag(16x256b)``).
* ``"data"`` -- the round trip: the values a ``check A == B`` compared, with the
  mismatching elements highlighted when it failed.

Figures are :class:`matplotlib.figure.Figure` objects on the Agg canvas -- never
``matplotlib.pyplot`` -- at a fixed size (:data:`FIGSIZE`), so the figure's
``text/plain`` (``<TileFigure size 900x480 with 1 Axes>``) is stable under nbval; they
display as PNG in IPython whether or not pyplot was imported (``_repr_png_``), and the
PNG bytes are reproducible (no ``Software`` metadata).  Categorical maps are
``imshow`` of integer arrays (one pixel per cell), so they scale to 128 × 512.
"""

from __future__ import annotations

import io
import re
import textwrap
import weakref
from collections.abc import Sequence

import numpy as np

from ..ir import nodes as ir
from ..ir.evaluate import Undetermined, eval_static
from ..options import COLOR_BY_CHOICES

__all__ = [
    "COLOR_BY",
    "DPI",
    "FIGSIZE",
    "KINDS",
    "MAX_PANELS",
    "check_data",
    "data_figure",
    "figure_png",
    "fragment_figure",
    "fragment_map",
    "fragment_png",
    "heatmap_figure",
    "heatmap_png",
    "instr_arrays",
    "issuing_warps",
    "shared_writers",
    "tmem_columns",
    "tmem_occupancy",
]

#: Figure size in inches (fixed: nbval compares the figure's ``text/plain``).
FIGSIZE: tuple[float, float] = (9.0, 4.8)
#: Resolution of the PNG (pixels per inch); 9 × 4.8 in -> 900 × 480 px.
DPI: int = 100
#: The picture kinds (``result.heatmap(kind=...)``).
KINDS: tuple[str, ...] = ("tmem", "fragment", "data")
#: What a TMEM cell can be coloured by.
COLOR_BY: tuple[str, ...] = COLOR_BY_CHOICES
#: Most panels of ``instr="each"`` (later instructions are listed, not drawn).
MAX_PANELS: int = 8

TMEM_LANES = 128
_UNTOUCHED = "#e6e6e6"
_MISMATCH = "#d62728"
_B_HALF = "#c2185b"
# Distinct categorical colours (Tableau 10 then its light companions): deterministic.
_PALETTE: tuple[str, ...] = (
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#76b7b2", "#edc948", "#ff9da7",
    "#9c755f", "#17becf", "#1f3b73", "#a0cbe8", "#ffbe7d", "#8cd17d", "#b6992d", "#86bcb6",
    "#d4a6c8", "#79706e", "#d37295", "#bcbd22",
)
_MAX_SWATCHES = 8  # more categories than this get a colour bar instead of swatches
_MAX_LEGEND_LINES = 15  # buffer + instruction lines in the right-hand column
_MAX_CELL_LABELS = 64  # shared tiles up to this many elements get per-cell "T<k>" labels
_MAX_EVAL = 1 << 22  # thread × grid points evaluated when deriving shared-memory writers
_SIXTEEN_LANE = ("16x64b", "16x128b", "16x256b", "16x32bx2")


# ============================================================================ expressions
def _eval(e, env: dict):
    """:func:`tilemagic.ir.evaluate.eval_static` with the thread ids in ``env["tid"]``."""
    return eval_static(e, env["tid"], env)


# ============================================================================ TMEM occupancy
def tmem_columns(buf) -> tuple[int, int]:
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


def _num_warps(kernel) -> int:
    return max(1, -(-int(kernel.threads) // 32))


def issuing_warps(kernel) -> list[tuple[ir.TcgenLdSt, np.ndarray]]:
    """Every ``tcgen05.ld/st`` of the kernel with the warps that issue it, in program order.

    The body is walked with the CTA's threads as one NumPy axis; each enclosing ``If``
    condition that depends only on thread coordinates (``warpid == 0``, ``tid_in_wg <
    64`` ...) narrows the active threads.  A condition that cannot be evaluated
    statically (it reads memory or a loop variable) is taken as true.  A warp issues
    when any of its threads is active (``.sync.aligned``: the simulator rejects partial
    warps).

    Parameters
    ----------
    kernel : tilemagic.ir.nodes.Kernel

    Returns
    -------
    list of (TcgenLdSt, numpy.ndarray of int64)
        The node and the sorted CTA-linear warp ids.
    """
    threads = max(1, int(kernel.threads))
    nwarps = _num_warps(kernel)
    tid = np.arange(threads, dtype=np.int64)
    out: list[tuple[ir.TcgenLdSt, np.ndarray]] = []

    def visit(stmt, mask):
        if isinstance(stmt, ir.Seq):
            for s in stmt.body:
                visit(s, mask)
        elif isinstance(stmt, ir.If):
            try:
                cond = np.broadcast_to(np.asarray(_eval(stmt.cond, {"tid": tid})).astype(bool), tid.shape)
            except Undetermined:
                cond = np.ones(tid.shape, dtype=bool)
            visit(stmt.then, mask & cond)
        elif isinstance(stmt, ir.Grid):
            visit(stmt.body, mask)
        elif isinstance(stmt, ir.TcgenLdSt):
            m = np.zeros(nwarps * 32, dtype=bool)
            m[:threads] = mask
            out.append((stmt, np.nonzero(m.reshape(nwarps, 32).any(axis=1))[0].astype(np.int64)))

    visit(kernel.body, np.ones(threads, dtype=bool))
    return out


def _node_cells(node, warps: np.ndarray):
    """(lane, col, warp, thread, fragment register) of every (warp, lane t, register r), flattened."""
    from ..layout.tcgen05 import tmem_cell

    regs = max(0, int(node.regs))
    shape3 = (warps.size, 32, regs)
    w = np.broadcast_to(warps[:, None, None], shape3)
    t = np.broadcast_to(np.arange(32, dtype=np.int64)[None, :, None], shape3)
    r = np.broadcast_to(np.arange(regs, dtype=np.int64)[None, None, :], shape3)
    lane, col = tmem_cell(node.shape, t, r, 0, w, row_imm=int(node.row), col_imm=int(node.col),
                          split=int(getattr(node, "split", 0) or 0))
    lane = np.broadcast_to(lane, shape3).ravel()
    col = np.broadcast_to(col, shape3).ravel()
    return lane, col, w.ravel(), (32 * w + t).ravel(), (int(node.reg_base) + r).ravel()


def tmem_occupancy(kernel) -> dict[str, object]:
    """Which warp / thread / register / instruction moves each allocated TMEM cell.

    Every :class:`~tilemagic.ir.nodes.TcgenLdSt` (program order) is executed by the warps
    :func:`issuing_warps` finds.  Thread lane ``t`` (0..31) of warp ``w`` and register
    ``r`` (``0 .. node.regs - 1``) touch the cell::

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
        register of the thread's fragment (``node.reg_base + r``: the register's index
        in the ``local`` buffer's per-thread storage), index of the instruction (into
        ``"instructions"``); ``-1`` marks untouched cells.
        ``"instructions"`` : list of dict, one per ``TcgenLdSt`` in program order, with
        ``index``, ``op`` (``"ld"``/``"st"``), ``chain`` (the PTX name), ``shape``,
        ``num``, ``regs``, ``reg_base``, ``buffer`` (TMEM buffer name or None), ``local``
        (register buffer name), ``row`` / ``col`` (the lane / 32-bit column immediates),
        ``warps`` (list of issuing warp ids), ``line`` (description line or None),
        ``out_of_range`` (cells outside the allocation, dropped) and ``cells`` (dict of
        1-D int64 arrays ``lane``, ``col``, ``warp``, ``thread``, ``reg`` for the
        in-range cells, in issue order).
        ``"ncols"`` : int; ``"warps"`` : int (warps in the CTA); ``"out_of_range"`` : int.

    Raises
    ------
    ValueError
        From :func:`~tilemagic.layout.tcgen05.tmem_cell` for an unknown tcgen05 shape.
    """
    ncols = max(0, int(kernel.tmem_cols or 0))
    arrays = {k: np.full((TMEM_LANES, ncols), -1, dtype=np.int32) for k in ("warp", "thread", "reg", "instr")}
    instructions: list[dict] = []
    total_oor = 0
    for idx, (node, warps) in enumerate(issuing_warps(kernel)):
        lane, col, warp, thread, reg = _node_cells(node, warps)
        ok = (lane >= 0) & (lane < TMEM_LANES) & (col >= 0) & (col < ncols)
        oor = int(ok.size - np.count_nonzero(ok))
        total_oor += oor
        cells = {"lane": lane[ok], "col": col[ok], "warp": warp[ok], "thread": thread[ok], "reg": reg[ok]}
        # fancy assignment in issue order: later (warp, lane, reg) wins on a repeated cell
        for key in ("warp", "thread", "reg"):
            arrays[key][cells["lane"], cells["col"]] = cells[key]
        arrays["instr"][cells["lane"], cells["col"]] = idx
        tm = getattr(node, "tmem", None)
        instructions.append({
            "index": idx,
            "op": node.op,
            "chain": node.chain,
            "shape": node.shape,
            "num": int(node.num),
            "regs": max(0, int(node.regs)),
            "reg_base": int(node.reg_base),
            "buffer": tm.name if tm is not None else None,
            "local": node.local.name if node.local is not None else None,
            "row": int(node.row),
            "col": int(node.col),
            "warps": [int(w) for w in warps],
            "line": node.span.line if node.span is not None else None,
            "out_of_range": oor,
            "cells": cells,
        })
    out: dict[str, object] = dict(arrays)
    out.update(instructions=instructions, ncols=ncols, warps=_num_warps(kernel), out_of_range=total_oor)
    return out


def instr_arrays(occ: dict[str, object], index: int) -> dict[str, np.ndarray]:
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


# ============================================================================ register fragments
def _words(buf) -> int:
    """32-bit registers of a local buffer's per-thread storage (padded to whole registers)."""
    return max(1, -(-int(buf.per_thread) * int(buf.elem_bytes) // 4))


def fragment_map(kernel, local: str | object | None = None, instr: int | None = None) -> dict[str, object]:
    """Thread × 32-bit register -> TMEM (lane, column) of a register fragment.

    For each ``tcgen05.ld/st`` that moves the ``local`` buffer (or only instruction
    ``instr``), register ``node.reg_base + r`` of thread ``32*w + t`` (``w`` an issuing
    warp) is bound to the cell :func:`~tilemagic.layout.tcgen05.tmem_cell` gives
    (PTX §9.7.16.2.3); a later instruction overwrites an earlier one.

    Parameters
    ----------
    kernel : tilemagic.ir.nodes.Kernel
    local : str or Buffer, optional
        The register buffer (name or object); default: the one the first tcgen05
        instruction moves (or instruction ``instr``'s).
    instr : int, optional
        Only this instruction (index in program order, as in :func:`tmem_occupancy`).

    Returns
    -------
    dict
        ``buffer`` (the local Buffer), ``lane`` / ``col`` (int32 arrays of shape
        ``(threads, words)``, ``-1`` = register not moved by tcgen05), ``instr`` (same
        shape: index of the instruction that bound it), ``instructions`` (indices used),
        ``threads`` (the CTA size rounded up to warps), ``words`` (32-bit registers per
        thread), ``elems_per_reg`` (elements of the buffer's dtype per 32-bit register).

    Raises
    ------
    ValueError
        No tcgen05 instruction moves a register buffer, an unknown buffer name, or an
        ``instr`` out of range.
    """
    nodes = issuing_warps(kernel)
    if not nodes:
        raise ValueError(f"{kernel.name}: no tcgen05.ld/st, so no register fragment to draw")
    if instr is not None:
        if not 0 <= int(instr) < len(nodes):
            raise ValueError(f"instr must be in 0..{len(nodes) - 1}; got {instr}")
        if local is None:
            local = nodes[int(instr)][0].local
    used = []
    for node, _ in nodes:
        if node.local is not None and node.local not in used:
            used.append(node.local)
    if local is None:
        local = used[0]
    elif isinstance(local, str):
        named = [b for b in used if b.name == local]
        if not named:
            raise ValueError(f"no tcgen05 instruction moves a register buffer named {local!r}; "
                             f"fragments: {', '.join(b.name for b in used) or 'none'}")
        local = named[0]
    chosen = [(i, n, w) for i, (n, w) in enumerate(nodes)
              if n.local is local and (instr is None or i == int(instr))]
    if not chosen:
        raise ValueError(f"instruction #{instr} does not move {getattr(local, 'name', local)}")
    threads = 32 * _num_warps(kernel)
    words = max([_words(local)] + [int(n.reg_base) + int(n.regs) for _, n, _ in chosen])
    lane_a = np.full((threads, words), -1, dtype=np.int32)
    col_a = np.full((threads, words), -1, dtype=np.int32)
    ins_a = np.full((threads, words), -1, dtype=np.int32)
    for i, node, warps in chosen:
        lane, col, _, thread, reg = _node_cells(node, warps)
        lane_a[thread, reg] = lane
        col_a[thread, reg] = col
        ins_a[thread, reg] = i
    return {
        "buffer": local, "lane": lane_a, "col": col_a, "instr": ins_a,
        "instructions": [i for i, _, _ in chosen], "threads": threads, "words": words,
        "elems_per_reg": max(1, 4 // int(local.elem_bytes)),
    }


# ============================================================================ round-trip data
def _region_array(arr: np.ndarray, region) -> np.ndarray:
    """``arr`` restricted to a description region (``NAME[a:b, k]``); unit dims dropped."""
    if region is not None and region.slices is not None:
        arr = arr[tuple(slice(s.start, s.stop) for s in region.slices)]
    return arr.reshape(tuple(d for d in arr.shape if d != 1))


def _check_regions(result, chk):
    """The ``(lhs, rhs)`` Regions of a check (from the parsed program), or names for plain ``A == B``."""
    for st in getattr(result.program, "stmts", ()) or ():
        if type(st).__name__ == "CheckStmt" and st.span is not None and st.span.line == chk.line:
            return st.lhs, st.rhs
    m = re.fullmatch(r"\s*(\w+)\s*==\s*(\w+)\s*", chk.text)
    if m:
        return m.group(1), m.group(2)
    raise ValueError(f"cannot locate the regions of check {chk.text!r}")


def check_data(result, check: int | str | None = None) -> dict[str, object]:
    """The two sides of a ``check A == B`` after the launch, and where their bits differ.

    Parameters
    ----------
    result : tilemagic.result.TileCopyResult
        A launched result (``result.launch.outputs`` and ``.checks``).
    check : int or str, optional
        Index into ``result.launch.checks`` or its text (``"B == A"``); default: the
        first failing check, else the first.

    Returns
    -------
    dict
        ``check`` (the CheckResult), ``got`` (left side, the output the kernel wrote),
        ``expected`` (right side), both NumPy arrays of the region's shape without unit
        dims (``expected`` reshaped like ``got``), ``mismatch`` (bool array, the bit
        patterns differ -- the same comparison as the check), ``lhs`` / ``rhs`` (buffer names).

    Raises
    ------
    ValueError
        Not launched, no checks, or an unknown check.
    """
    launch = result.launch
    if launch is None or launch.backend == "off" or not launch.outputs:
        raise ValueError(f"{result.name}: not launched, so there is no data to draw (use --launch sim)")
    checks = list(launch.checks)
    if not checks:
        raise ValueError(f"{result.name}: no `check A == B` statement, so there is nothing to compare")
    if check is None:
        chk = next((c for c in checks if not c.passed), checks[0])
    elif isinstance(check, str):
        chk = next((c for c in checks if c.text == check.removeprefix("check").strip()), None)
        if chk is None:
            raise ValueError(f"no check {check!r}; checks: {', '.join(c.text for c in checks)}")
    else:
        if not 0 <= int(check) < len(checks):
            raise ValueError(f"check must be in 0..{len(checks) - 1}; got {check}")
        chk = checks[int(check)]
    lhs, rhs = _check_regions(result, chk)
    names = [r if isinstance(r, str) else r.name for r in (lhs, rhs)]
    sides = []
    for r, name in zip((lhs, rhs), names):
        if name not in launch.outputs:
            raise ValueError(f"check {chk.text!r}: buffer {name!r} is not among the launch outputs")
        sides.append(_region_array(np.asarray(launch.outputs[name]), None if isinstance(r, str) else r))
    got, expected = sides
    if expected.shape != got.shape and expected.size == got.size:
        expected = expected.reshape(got.shape)
    if expected.shape != got.shape or got.dtype.itemsize != expected.dtype.itemsize:
        raise ValueError(f"check {chk.text!r}: sides {got.dtype}{list(got.shape)} and "
                         f"{expected.dtype}{list(expected.shape)} do not compare element-wise")
    mismatch = ir.bits_view(np.ascontiguousarray(got)) != ir.bits_view(np.ascontiguousarray(expected))
    return {"check": chk, "got": got, "expected": expected, "mismatch": np.asarray(mismatch),
            "lhs": names[0], "rhs": names[1]}


# ============================================================================ shared writers
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


def shared_writers(kernel) -> list[dict]:
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
            except Undetermined:
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
            except Undetermined:
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
            except Undetermined:
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
                    raise Undetermined("stmatrix inside a loop")
                addr = np.broadcast_to(np.asarray(_eval(stmt.addr, env), np.int64), (n,)).reshape(-1, 32)
            except Undetermined:
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
_FIGURE_CLASS = None


def _figure_class():
    """``TileFigure``: a Figure that IPython shows as PNG even before pyplot is imported."""
    global _FIGURE_CLASS
    if _FIGURE_CLASS is None:
        from matplotlib.figure import Figure

        class TileFigure(Figure):
            """A :class:`matplotlib.figure.Figure` with ``_repr_png_`` (Agg, reproducible bytes).

            IPython registers its PNG formatter for ``Figure`` only when pyplot is
            imported; without it a plain Figure displays as text.  This subclass
            renders itself either way (and once: it is not managed by pyplot).
            """

            def _repr_png_(self):
                return figure_png(self)

        _FIGURE_CLASS = TileFigure
    return _FIGURE_CLASS


def _new_figure():
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = _figure_class()(figsize=FIGSIZE, dpi=DPI)
    FigureCanvasAgg(fig)
    return fig


def _colours(n: int) -> list:
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


def _xtick_step(n: int, most: int = 5) -> int:
    """Power-of-two column step giving at most ``most`` tick labels (0, 8, 16, 24 for 32 columns)."""
    step = 1
    while n / step > most:
        step *= 2
    return step


def _range_text(a: int, b: int) -> str:
    """Inclusive ``a-b`` (or ``a`` when equal)."""
    return f"{a}" if a == b else f"{a}-{b}"


def _short_shape(buf) -> str:
    return f"{buf.dtype}[{', '.join(str(int(d)) for d in buf.shape)}]"


def _instr_summary(instructions: list[dict]) -> str:
    """``tcgen05.st/ld .32x32b.x4`` grouped by (shape, num), ops in first-issue order."""
    groups: dict[tuple[str, int], list[str]] = {}
    for ins in instructions:
        ops = groups.setdefault((ins["shape"], ins["num"]), [])
        if ins["op"] not in ops:
            ops.append(ins["op"])
    return " · ".join(f"tcgen05.{'/'.join(ops)} .{shape}.x{num}" for (shape, num), ops in groups.items())


def _instr_label(ins: dict) -> str:
    """``#0 st .32x32b.x4 T row 0 col 0 (L9)``."""
    s = f"#{ins['index']} {ins['op']} .{ins['shape']}.x{ins['num']}"
    if ins["buffer"]:
        s += f" {ins['buffer']}"
    s += f" row {ins['row']} col {ins['col']}"
    if ins["line"] is not None:
        s += f" (L{ins['line']})"
    return s


def _buffer_label(buf) -> str:
    """``T float16[128, 8] D cols 0-3`` with the data-path facts the map shows."""
    a, z = tmem_columns(buf)
    dp = buf.datapath or "?"
    s = f"{buf.name} {_short_shape(buf)} {dp}"
    if buf.datapath == "F":
        s += f" sub_slab={int(buf.sub_slab)}: lanes 32q+{16 * int(buf.sub_slab)}..+15"
    elif buf.datapath == "B":
        n = int(np.prod(buf.shape[1:], dtype=np.int64)) if len(buf.shape) > 1 else 1
        s += f": lanes 64-127 hold cols {n // 2}-{n - 1}"
    return s + f", TCol {_range_text(a, z - 1)}"


def _swatch_legend(fig, x: float, y: float, entries: Sequence[tuple[object, str]], step: float = 0.04):
    """A legend of colour swatches drawn as figure patches + texts; returns the y below it.

    Hand-made because ``Figure.legend`` (offsetbox layout) costs ~20 ms per draw, a
    third of the whole heatmap.
    """
    from matplotlib.patches import Rectangle

    for i, (colour, label) in enumerate(entries):
        yy = y - i * step
        fig.patches.append(Rectangle((x, yy - 0.011), 0.02, 0.024, transform=fig.transFigure, figure=fig,
                                     facecolor=colour, edgecolor="#999999", linewidth=0.5))
        fig.text(x + 0.028, yy, label, fontsize=7.5, va="center", ha="left")
    return y - len(entries) * step


def _text_block(fig, x: float, y: float, title: str, lines: Sequence[str], width: int = 44,
                budget: int = _MAX_LEGEND_LINES) -> float:
    """A heading and wrapped lines at figure coordinates; returns the y below it."""
    wrapped: list[str] = []
    for line in lines:
        wrapped += textwrap.wrap(line, width, subsequent_indent="  ") or [""]
    if len(wrapped) > budget:
        extra = len(wrapped) - budget + 1
        wrapped = wrapped[: budget - 1] + [f"… (+{extra} more lines)"]
    fig.text(x, y, title, fontsize=7.5, fontweight="bold", va="top", ha="left")
    if wrapped:
        fig.text(x, y - 0.035, "\n".join(wrapped), fontsize=6.8, va="top", ha="left", linespacing=1.35,
                 family="monospace")
    return y - 0.035 - 0.0275 * len(wrapped) - 0.02


def _categories(occ, color_by: str) -> tuple[int, list[str]]:
    nwarps = int(occ["warps"])
    if color_by == "warp":
        return nwarps, [f"warp {w} (T{32 * w}-{32 * w + 31})" for w in range(nwarps)]
    if color_by == "thread":
        return 32 * nwarps, [f"thread {i}" for i in range(32 * nwarps)]
    if color_by == "reg":
        n = max([ins["reg_base"] + ins["regs"] for ins in occ["instructions"]] + [1])
        return n, [f"reg {i}" for i in range(n)]
    labels = [_instr_label(i) for i in occ["instructions"]] or ["-"]
    return len(labels), labels


def _uses_sub_slabs(kernel, occ) -> bool:
    return (any(i["shape"] in _SIXTEEN_LANE for i in occ["instructions"])
            or any(b.datapath == "F" for b in kernel.tmem))


def _buffer_groups(kernel) -> list[tuple[int, int, str, int]]:
    """``(start, stop, names, level)``: buffers with the same columns share a bar; overlaps stack."""
    groups: dict[tuple[int, int], list[str]] = {}
    for b in kernel.tmem:
        groups.setdefault(tmem_columns(b), []).append(b.name)
    placed: list[tuple[int, int, str, int]] = []
    for (a, z), names in sorted(groups.items()):
        level = 0
        while any(lv == level and a < pz and pa < z for pa, pz, _, lv in placed):
            level += 1
        placed.append((a, z, " / ".join(names), level))
    return placed


def _tmem_guides(ax, kernel, occ, ncols: int, names: bool):
    """Quadrant, sub-slab, B-half and allocation-unit lines; buffer bars above the map."""
    for y in (32, 64, 96):  # lane quadrants: warp w reaches 32*(w % 4) .. +31 (PTX §9.7.16.8.1)
        ax.axhline(y - 0.5, color="black", linewidth=0.9)
    if _uses_sub_slabs(kernel, occ):  # 16-lane sub-slabs (.16x*b shapes, data path F)
        for y in (16, 48, 80, 112):
            ax.axhline(y - 0.5, color="#555555", linewidth=0.6, linestyle=":")
    for x in range(32, ncols, 32):  # 32-column allocation units (tcgen05.alloc granularity)
        ax.axvline(x - 0.5, color="#444444", linewidth=0.6, linestyle="--")
    for b in kernel.tmem:  # data path B: lanes 64..127 hold the right column half
        if b.datapath == "B":
            a, z = tmem_columns(b)
            ax.plot([a - 0.5, z - 0.5], [63.5, 63.5], color=_B_HALF, linewidth=2.4, linestyle="-.", zorder=5)
            if names:
                n = 2 * (z - a) * 4 // int(b.elem_bytes)
                for y, text in ((24, f"{b.name}[:, 0:{n // 2}]"), (88, f"{b.name}[:, {n // 2}:{n}]")):
                    ax.text((a + z - 1) / 2, y, text, ha="center", va="center", fontsize=7, color=_B_HALF,
                            zorder=6, bbox={"boxstyle": "round,pad=0.2", "facecolor": "white", "edgecolor": _B_HALF,
                                  "linewidth": 0.6, "alpha": 0.9})
    tr = ax.get_xaxis_transform()
    for a, z, label, level in _buffer_groups(kernel):
        y = 1.015 + 0.06 * level
        ax.plot([a - 0.4, z - 0.6], [y, y], transform=tr, clip_on=False, color="#333333", linewidth=2.2,
                solid_capstyle="butt")
        if names:
            ax.text((a + z - 1) / 2, y + 0.012, label, transform=tr, ha="center", va="bottom", fontsize=7,
                    clip_on=False)


def _quadrant_ylabels(ax, occ):
    ylabels = []
    for q in range(4):
        ws = [w for w in range(int(occ["warps"])) if w % 4 == q]
        who = (("warp " if len(ws) == 1 else "warps ") + ",".join(str(w) for w in ws)) if ws else "no warp"
        ylabels.append(f"{32 * q}-{32 * q + 31}\n{who}")
    ax.set_yticks([32 * q + 15.5 for q in range(4)], ylabels)


def _colour_key(fig, im, labels: list[str], n: int, what: str, y: float = 0.86) -> float:
    """Swatches for at most :data:`_MAX_SWATCHES` categories, else a colour bar; returns the y below."""
    x = 0.715
    fig.text(x, y, f"colour = {what}", fontsize=7.5, fontweight="bold", va="top", ha="left")
    if n <= _MAX_SWATCHES:
        cols = _colours(n)
        entries = [(cols[i], labels[i]) for i in range(n)] + [(_UNTOUCHED, "untouched")]
        return _swatch_legend(fig, x, y - 0.055, entries) - 0.01
    cax = fig.add_axes((x, y - 0.085, 0.26, 0.028))
    ticks = np.unique(np.linspace(0, n - 1, min(n, 5)).round().astype(int))
    cb = fig.colorbar(im, cax=cax, orientation="horizontal", ticks=ticks)
    cb.ax.minorticks_off()
    cb.ax.tick_params(labelsize=6.5)
    cb.set_label(f"{what} (grey: untouched)", fontsize=6.5)
    return y - 0.20


# ============================================================================ TMEM figure
def _draw_tmem(fig, kernel, color_by: str, instr):
    occ = tmem_occupancy(kernel)
    ins_list = occ["instructions"]
    ncols = int(occ["ncols"])
    if instr == "each":
        panels: list[int | None] = list(range(min(len(ins_list), MAX_PANELS))) or [None]
    elif instr is None:
        panels = [None]
    else:
        if isinstance(instr, bool) or not isinstance(instr, (int, np.integer)) or not 0 <= int(instr) < len(ins_list):
            raise ValueError(f"instr must be None, 'each' or an instruction index 0..{len(ins_list) - 1}; "
                             f"got {instr!r}")
        panels = [int(instr)]
    n, labels = _categories(occ, color_by)
    cmap, norm = _cat_cmap(n)
    k = len(panels)
    left, total, gap = 0.085, 0.585, 0.012
    width = (total - gap * (k - 1)) / k
    im = None
    for j, p in enumerate(panels):
        ax = fig.add_axes((left + j * (width + gap), 0.11, width, 0.66))
        arrays = occ if p is None else instr_arrays(occ, p)
        im = ax.imshow(np.asarray(arrays[color_by]), cmap=cmap, norm=norm, interpolation="nearest", aspect="auto")
        _tmem_guides(ax, kernel, occ, ncols, names=(k == 1))
        ax.set_xticks(np.arange(0, max(ncols, 1), _xtick_step(ncols, 5 if k == 1 else 2)))
        ax.tick_params(labelsize=7)
        if j == 0:
            _quadrant_ylabels(ax, occ)
            ax.set_ylabel("TLane", fontsize=8.5)
        else:
            ax.set_yticks([32 * q + 15.5 for q in range(4)], [""] * 4)
        ax.set_xlabel("TCol (32-bit)" if k > 1 else "TCol (32-bit column)", fontsize=8)
        if k > 1:
            ins = ins_list[p]
            sep = "\n" if k > 4 else " "  # narrow panels: the instruction on two lines, or the titles collide
            ax.set_title(f"#{p} {ins['op']}{sep}.{ins['shape']}.x{ins['num']}\nrow {ins['row']} col {ins['col']}",
                         fontsize=7, pad=12)
    # title
    head = f"TMEM occupancy of {kernel.name} · {ncols} of 512 columns × 128 lanes allocated · coloured by {color_by}"
    if instr is None:
        sub = "all instructions overlaid (later ones on top): " + (_instr_summary(ins_list) or "no tcgen05.ld/st")
    elif instr == "each":
        sub = "one panel per instruction" + (f" (first {MAX_PANELS} of {len(ins_list)})"
                                             if len(ins_list) > MAX_PANELS else "")
    else:
        ins = ins_list[int(instr)]
        sub = (f"instruction #{instr} {ins['chain']} ({ins['buffer'] or '?'}, row {ins['row']}, col {ins['col']}, "
               f"warps {','.join(map(str, ins['warps']))})")
    if occ["out_of_range"]:
        sub += f" · {occ['out_of_range']} cells outside the allocation"
    fig.text(0.012, 0.985, head, fontsize=9.5, fontweight="bold", va="top", ha="left")
    fig.text(0.012, 0.935, "\n".join(textwrap.wrap(sub, 130)), fontsize=8, va="top", ha="left")
    # right-hand column: colour key, buffers, instructions, line key
    y = _colour_key(fig, im, labels, n, color_by)
    y = _text_block(fig, 0.715, y, "buffers", [_buffer_label(b) for b in kernel.tmem], budget=6)
    if color_by != "instr":
        y = _text_block(fig, 0.715, y, "instructions", [_instr_label(i) for i in ins_list], budget=6)
    key = ["── lane quadrant (warp % 4)", "- - 32-column alloc unit"]
    if _uses_sub_slabs(kernel, occ):
        key.append("···· 16-lane sub-slab")
    if any(b.datapath == "B" for b in kernel.tmem):
        key.append("-·- data path B halves")
    fig.text(0.715, max(y, 0.02), "   ".join(key) if len(key) <= 2 else "\n".join(key), fontsize=6.5,
             va="top", ha="left", color="#333333")


def _draw_shared(fig, kernel):
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
    if all_threads and len(all_threads) <= 16:
        cols_ = _colours(ncat)
        entries = [(cols_[i], f"thread {t} (warp {t // 32})") for i, t in enumerate(all_threads)]
        _swatch_legend(fig, 0.86, 0.80, entries + [(_UNTOUCHED, "not written")], step=0.045)
    fig.suptitle(f"{kernel.name}: no TMEM — shared-memory tile(s), coloured by writing thread",
                 fontsize=9.5, x=0.06, ha="left", y=0.975)


# ============================================================================ fragment figure
def _draw_fragment(fig, kernel, local, instr):
    fm = fragment_map(kernel, local, instr)
    occ_ins = tmem_occupancy(kernel)["instructions"]
    buf = fm["buffer"]
    threads, words = int(fm["threads"]), int(fm["words"])
    import matplotlib

    # the lane quadrant is the warp's (PTX §9.7.16.8.1, white lines); the colour shows the lane inside it
    lane_in_quadrant = np.where(fm["lane"] >= 0, fm["lane"] % 32, -1)
    panels = ((lane_in_quadrant, "TMEM lane − 32·(warp % 4)", "viridis", 0, 31),
              (fm["col"], "TMEM column (32-bit TCol)", "cividis", 0, max(int(np.max(fm["col"])), 0)))
    for j, (arr, what, cname, vmin, vmax) in enumerate(panels):
        ax = fig.add_axes((0.075 + j * 0.34, 0.11, 0.25, 0.68))
        cmap = matplotlib.colormaps[cname].with_extremes(bad=_UNTOUCHED)
        data = np.ma.masked_less(arr, 0)
        im = ax.imshow(data, cmap=cmap, vmin=vmin, vmax=max(vmax, vmin + 1), interpolation="nearest", aspect="auto")
        for y in range(32, threads, 32):  # warp boundaries
            ax.axhline(y - 0.5, color="white", linewidth=0.8)
        ax.set_xticks(np.arange(0, words, _xtick_step(words, 6)))
        ax.set_yticks(np.arange(0, threads, 32 if threads > 64 else 16))
        ax.tick_params(labelsize=7)
        ax.set_xlabel(f"32-bit register of {buf.name}", fontsize=8)
        if j == 0:
            ax.set_ylabel("thread (CTA)", fontsize=8.5)
        ax.set_title(what, fontsize=8.5)
        cb = fig.colorbar(im, ax=ax, fraction=0.08, pad=0.03)
        cb.ax.tick_params(labelsize=6.5)
    used = [occ_ins[i] for i in fm["instructions"]]
    epr = int(fm["elems_per_reg"])
    head = (f"register fragment {buf.name} {_short_shape(buf)}: thread × register → TMEM (lane, column)")
    sub = (f"{words} 32-bit registers per thread" + (f" ({epr} {buf.dtype} per register)" if epr > 1 else "")
           + " · grey: not moved by tcgen05 · white lines: warps")
    fig.text(0.012, 0.985, head, fontsize=9.5, fontweight="bold", va="top", ha="left")
    fig.text(0.012, 0.935, sub, fontsize=8, va="top", ha="left")
    layout = getattr(buf, "layout", None)
    lines = [f"{buf.name} @ {layout}"] if layout is not None else []
    y = _text_block(fig, 0.76, 0.86, "layout", lines, width=34, budget=4) if lines else 0.86
    _text_block(fig, 0.76, y, "instructions", [_instr_label(i) for i in used], width=34, budget=12)


# ============================================================================ data figure
def _as_2d(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim == 0:
        return a.reshape(1, 1)
    if a.ndim == 1:
        return a.reshape(1, -1)
    return a.reshape(-1, a.shape[-1])


def _float_view(a: np.ndarray) -> np.ndarray:
    try:
        return np.asarray(a).astype(np.float64)
    except (TypeError, ValueError):  # pragma: no cover - every tilemagic dtype converts
        return ir.bits_view(np.ascontiguousarray(a)).astype(np.float64)


def _draw_data(fig, result, check):
    d = check_data(result, check)
    chk, got, exp, bad = d["check"], _as_2d(d["got"]), _as_2d(d["expected"]), _as_2d(d["mismatch"])
    import matplotlib
    from matplotlib.colors import ListedColormap

    gf, ef = _float_view(got), _float_view(exp)
    finite = np.concatenate([gf[np.isfinite(gf)], ef[np.isfinite(ef)]])
    vmin, vmax = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    if vmin == vmax:
        vmax = vmin + 1.0
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="#ffffff")
    nbad = int(np.count_nonzero(bad))
    panels = [(f"expected: {d['rhs']}", ef), (f"got: {d['lhs']}", gf)]
    if nbad:
        panels.append(("mismatches (red)", None))
    width = 0.80 / len(panels)
    im = None
    for j, (title, data) in enumerate(panels):
        ax = fig.add_axes((0.07 + j * width, 0.12, width - 0.05, 0.66))
        if data is None:
            ax.imshow(bad.astype(np.int8), cmap=ListedColormap([_UNTOUCHED, _MISMATCH]), vmin=0, vmax=1,
                      interpolation="nearest", aspect="auto")
        else:
            im = ax.imshow(np.ma.masked_invalid(data), cmap=cmap, vmin=vmin, vmax=vmax, interpolation="nearest",
                           aspect="auto")
            if nbad and j == 1:  # the mismatching cells of the output, on top of its values
                ax.imshow(np.ma.masked_equal(bad.astype(np.int8), 0), cmap=ListedColormap([_MISMATCH]),
                          vmin=0, vmax=1, interpolation="nearest", aspect="auto")
        rows, cols = bad.shape
        ax.set_xticks(np.arange(0, cols, _xtick_step(cols, 4)))
        ax.set_yticks(np.arange(0, rows, _xtick_step(rows, 8)))
        ax.tick_params(labelsize=7)
        ax.set_xlabel("column (elements)", fontsize=8)
        if j == 0:
            ax.set_ylabel("row", fontsize=8.5)
        ax.set_title(title, fontsize=8.5)
    cax = fig.add_axes((0.90, 0.12, 0.015, 0.66))
    cb = fig.colorbar(im, cax=cax)
    cb.ax.tick_params(labelsize=6.5)
    cb.set_label("value", fontsize=7)
    status = "FAIL" if nbad else "PASS"  # recomputed from the data shown (the same bitwise test as the check)
    head = f"check {chk.text} (L{chk.line}): {status} · {d['got'].dtype} {list(d['got'].shape)}"
    if nbad:
        idx = [tuple(int(x) for x in i) for i in np.argwhere(np.asarray(d["mismatch"]))[:3]]
        first = "; ".join(
            f"{list(i)}: got {_fmt(d['got'][i])}, expected {_fmt(d['expected'][i])}" for i in idx)
        sub = f"{nbad} of {bad.size} elements differ (bitwise) · first: {first}"
    else:
        sub = f"all {bad.size} elements equal (bitwise) · launch: {result.launch.backend}"
    fig.text(0.012, 0.985, head, fontsize=9.5, fontweight="bold", va="top", ha="left",
             color=_MISMATCH if nbad else "black")
    fig.text(0.012, 0.935, "\n".join(textwrap.wrap(sub, 140)), fontsize=8, va="top", ha="left")


def _fmt(v) -> str:
    from .text import format_values

    return format_values(np.asarray(v).reshape(1))[1:-1]


# ============================================================================ public API
def heatmap_figure(kernel, color_by: str = "warp", instr: int | str | None = None):
    """TMEM occupancy heatmap (or, without TMEM, the shared-memory tiles) as an Agg figure.

    Parameters
    ----------
    kernel : tilemagic.ir.nodes.Kernel
        Lowered kernel.
    color_by : {"warp", "thread", "reg", "instr"}, optional
        What colours a TMEM cell (see :func:`tmem_occupancy`).  Shared tiles are always
        coloured by the writing thread.
    instr : int or "each", optional
        ``None`` (default): all instructions overlaid; an int: only that ``TcgenLdSt``
        (index in program order); ``"each"``: one panel per instruction (at most
        :data:`MAX_PANELS`).

    Returns
    -------
    matplotlib.figure.Figure
        A ``TileFigure`` of :data:`FIGSIZE` inches at :data:`DPI`, attached to a
        ``FigureCanvasAgg``; never registered with pyplot.  With TMEM: an ``imshow`` of
        128 ``TLane`` × ``kernel.tmem_cols`` ``TCol`` cells per panel (light grey =
        untouched), black lines at the 32-lane quadrant boundaries (labelled with the
        warps that own them), dotted lines at 16-lane sub-slabs when a ``.16x*b`` shape
        or data path F is used, dash-dotted lines between the data-path-B halves, dashed
        lines at the 32-column allocation units, bars naming each buffer's columns, and a
        legend (colours, buffers, instructions).

    Raises
    ------
    ValueError
        For an unknown ``color_by`` or an ``instr`` out of range.
    """
    if color_by not in COLOR_BY:
        raise ValueError(f"color_by must be one of {', '.join(COLOR_BY)}; got {color_by!r}")
    fig = _new_figure()
    if int(kernel.tmem_cols or 0) > 0:
        _draw_tmem(fig, kernel, color_by, instr)
    else:
        _draw_shared(fig, kernel)
    return fig


def fragment_figure(kernel, local: str | object | None = None, instr: int | None = None):
    """Register-fragment map (thread × register -> TMEM lane, column) as an Agg figure.

    Parameters
    ----------
    kernel : tilemagic.ir.nodes.Kernel
    local, instr
        As in :func:`fragment_map`.

    Returns
    -------
    matplotlib.figure.Figure
        Two ``imshow`` panels of ``threads × words`` integers (lane, column; grey =
        register not moved by tcgen05), white lines between warps, colour bars, and the
        buffer's layout and instructions listed on the right.

    Raises
    ------
    ValueError
        As :func:`fragment_map`.
    """
    fig = _new_figure()
    _draw_fragment(fig, kernel, local, instr)
    return fig


def data_figure(result, check: int | str | None = None):
    """The values a ``check`` compared, with mismatching elements in red, as an Agg figure.

    Parameters
    ----------
    result : tilemagic.result.TileCopyResult
    check : int or str, optional
        As in :func:`check_data` (default: the first failing check, else the first).

    Returns
    -------
    matplotlib.figure.Figure
        Panels "expected" (right side) and "got" (left side) as values (one colour scale,
        NaN white), the got panel with the mismatching elements painted red, and a third
        panel with the mismatch mask when the check failed; the title gives the count and
        the first mismatches.

    Raises
    ------
    ValueError
        As :func:`check_data`.
    """
    fig = _new_figure()
    _draw_data(fig, result, check)
    return fig


def figure_png(fig) -> bytes:
    """PNG bytes of an Agg figure (fixed dpi, no ``Software`` metadata: reproducible)."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    bio = io.BytesIO()
    # unhinted glyphs: a third faster to rasterise, and text draws dominate the render time
    with matplotlib.rc_context({"text.hinting": "none"}):
        canvas.print_png(bio, metadata={"Software": None}, pil_kwargs={"compress_level": 1})
    return bio.getvalue()


def _cached_png(kernel, key: tuple, draw) -> bytes:
    try:
        per_kernel = _PNG_CACHE.setdefault(kernel, {})
    except TypeError:  # not weak-referenceable / hashable: no caching
        per_kernel = {}
    png = per_kernel.get(key)
    if png is None:
        png = per_kernel[key] = figure_png(draw())
    return png


def heatmap_png(kernel, color_by: str = "warp", instr: int | str | None = None) -> bytes:
    """:func:`heatmap_figure` rendered to PNG bytes (cached per kernel object).

    Parameters
    ----------
    kernel : tilemagic.ir.nodes.Kernel
    color_by : {"warp", "thread", "reg", "instr"}, optional
    instr : int or "each", optional

    Returns
    -------
    bytes
        A PNG (starts with ``b"\\x89PNG\\r\\n\\x1a\\n"``) of 900 × 480 pixels; the same
        kernel gives the same bytes with the same matplotlib and fonts.  The bytes are
        memoised per kernel object (weakly: they go with the kernel), so the HTML report
        and the widget view of one result draw the figure once; a lowered kernel is
        never mutated afterwards.
    """
    return _cached_png(kernel, ("tmem", color_by, instr),
                       lambda: heatmap_figure(kernel, color_by=color_by, instr=instr))


def fragment_png(kernel, local: str | None = None, instr: int | None = None) -> bytes:
    """:func:`fragment_figure` rendered to PNG bytes (cached per kernel object, like :func:`heatmap_png`)."""
    name = local if isinstance(local, str) or local is None else local.name
    return _cached_png(kernel, ("fragment", name, instr), lambda: fragment_figure(kernel, local, instr))


_PNG_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
