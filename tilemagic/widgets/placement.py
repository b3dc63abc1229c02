"""The placement model: where a lowered kernel's data lives (pure NumPy, no matplotlib).

Derived from the lowered IR and the lowering's TMEM plan, never from the description, so the
pictures (:mod:`~tilemagic.widgets.figures`) and the reports show what the IR, CUDA and simulator do:

* :func:`tmem_columns` -- a TMEM buffer's 32-bit columns, as the TMEM plan placed them;
* :func:`issuing_warps`, :func:`tmem_occupancy`, :func:`instr_arrays` -- which warp,
  thread, register and instruction moves each TMEM cell (the (thread, register) ->
  (lane, column) map is :func:`tilemagic.arch.tcgen05.tmem_cell`, PTX ISA 9.0
  §9.7.16.2.3; warp ``w`` reaches lanes ``32*(w % 4) .. +31``, §9.7.16.8.1);
* :func:`fragment_map` -- a register fragment: thread × 32-bit register -> TMEM cell;
* :func:`shared_writers` -- which thread writes each element of each shared buffer;
* :func:`tma_boxes` -- the box each TMA issue covers in the global tensor (its out-of-bounds part);
  :func:`swizzle_chunks` -- a swizzled async destination: 16-byte chunk -> physical chunk, bank group;
  :func:`async_timeline` -- the simulator's asynchronous events per warp (issue -> completion -> wait,
  mbarrier phases, commit groups, the hang point; per CTA and warp in a cluster);
  :func:`cluster_placement` -- in a cluster, which CTA's statement wrote which bytes of each CTA's shared
  buffers (the simulator's ``cluster_receipts``), and :func:`cluster_summary` in words;
* :func:`check_data` -- the two sides of a ``check A == B`` after the launch, and
  :func:`first_mismatches` / :func:`downsample_check` -- its first mismatching elements and a
  bounded view of it for a picture (no array of the tile's size but the boolean mismatch mask).

The IR is read with :func:`tilemagic.ir.nodes.walk_scoped` (each statement with its enclosing
``If``/``Grid`` nodes), the static evaluator :func:`tilemagic.ir.evaluate.eval_static` (loop variables
keyed by their ``LoopVar``) and :meth:`tilemagic.ir.nodes.Buffer.index_expr`; the
variant of an op comes from its marker's ``Comment.variant`` field.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ..ir import nodes as ir
from ..ir.evaluate import Undetermined, eval_static
from ..arch.tcgen05 import TMEM_LANES, cp_cells, tmem_cell
from ..arch.cluster import CTA_RANK
from ..arch.tma import box_traversal

__all__ = [
    "ASYNC_EVENTS",
    "RECEIPT_KINDS",
    "async_timeline",
    "cluster_placement",
    "cluster_receipts",
    "cluster_size",
    "cluster_summary",
    "cp_chunk_map",
    "cp_decline_map",
    "cp_declines",
    "cp_ops",
    "cp_simulated",
    "block_factors",
    "check_data",
    "downsample_check",
    "first_mismatches",
    "first_true",
    "async_pictures",
    "fragment_map",
    "has_async",
    "instr_arrays",
    "issuing_warps",
    "num_warps",
    "shared_writers",
    "swizzle_chunks",
    "tma_boxes",
    "tma_issue_box",
    "tmem_columns",
    "tmem_occupancy",
    "writer_label",
]

_MAX_EVAL = 1 << 22  # thread × grid points evaluated when deriving shared-memory writers


def tmem_columns(buf: ir.Buffer) -> tuple[int, int]:
    """32-bit column range ``[start, stop)`` of a TMEM buffer inside the CTA's allocation.

    Parameters
    ----------
    buf : tilemagic.ir.nodes.Buffer
        A ``scope == "tmem"`` buffer as the lowering's TMEM plan placed it
        (:func:`tilemagic.lower.program.check`): ``buf.tmem_col`` is its first 32-bit
        column (``at X + COLS`` included), ``buf.tmem_ncols`` the columns its layout spans.

    Returns
    -------
    (start, stop) : tuple of int
        ``(tmem_col, tmem_col + tmem_ncols)``, in 32-bit columns: what the plan reserves
        and the kernel allocates, never recomputed from the shape.
    """
    start = int(buf.tmem_col or 0)
    return start, start + int(buf.tmem_ncols or 0)


def num_warps(kernel: ir.Kernel) -> int:
    """Warps of the kernel's CTA (at least 1)."""
    return max(1, -(-int(kernel.threads) // 32))


def _guard_mask(scope: tuple[ir.Stmt, ...], tid: np.ndarray, env: dict | None, lenient: bool) -> np.ndarray:
    """AND of the ``If`` conditions of ``scope`` over ``tid`` (and the loop variables of ``env``).

    A condition that cannot be evaluated is taken as true when ``lenient``, else
    :class:`~tilemagic.ir.evaluate.Undetermined` propagates.
    """
    mask = np.ones(np.shape(tid), dtype=bool)
    for s in scope:
        if isinstance(s, ir.If):
            try:
                mask = mask & np.asarray(eval_static(s.cond, tid, env)).astype(bool)
            except Undetermined:
                if not lenient:
                    raise
    return mask


def issuing_warps(kernel: ir.Kernel) -> list[tuple[ir.TcgenLdSt, np.ndarray]]:
    """Every ``tcgen05.ld/st`` of the kernel with the warps that issue it, in program order.

    Each enclosing ``If`` condition that depends only on thread coordinates (``warpid ==
    0``, ``tid_in_wg < 64`` ...) narrows the CTA's threads; one that cannot be evaluated
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
    threads, nwarps = max(1, int(kernel.threads)), num_warps(kernel)
    tid = np.arange(threads, dtype=np.int64)
    out: list[tuple[ir.TcgenLdSt, np.ndarray]] = []
    for stmt, scope in ir.walk_scoped(kernel.body):
        if isinstance(stmt, ir.TcgenLdSt):
            m = np.zeros(nwarps * 32, dtype=bool)
            m[:threads] = np.broadcast_to(_guard_mask(scope, tid, None, lenient=True), tid.shape)
            out.append((stmt, np.nonzero(m.reshape(nwarps, 32).any(axis=1))[0].astype(np.int64)))
    return out


def _tmem_nodes(kernel: ir.Kernel) -> list[tuple[ir.TcgenLdSt | ir.TcgenCp, np.ndarray, np.ndarray]]:
    """Every ``tcgen05.ld/st`` and ``tcgen05.cp`` of the kernel in program order, with the warps that issue it
    and the CTA thread ids its guards let through (an unknown guard counts as true, as in
    :func:`issuing_warps`); a ``tcgen05.cp`` is issued by each such thread (single-thread exec scope)."""
    threads, nwarps = max(1, int(kernel.threads)), num_warps(kernel)
    tid = np.arange(threads, dtype=np.int64)
    out: list[tuple[ir.TcgenLdSt | ir.TcgenCp, np.ndarray, np.ndarray]] = []
    for stmt, scope in ir.walk_scoped(kernel.body):
        if isinstance(stmt, (ir.TcgenLdSt, ir.TcgenCp)):
            act = tid[np.broadcast_to(_guard_mask(scope, tid, None, lenient=True), tid.shape)]
            m = np.zeros(nwarps * 32, dtype=bool)
            m[act] = True
            out.append((stmt, np.nonzero(m.reshape(nwarps, 32).any(axis=1))[0].astype(np.int64), act))
    return out


def writer_label(ins: dict[str, Any]) -> str:
    """``tcgen05.cp L12`` / ``tcgen05.st L9``: who filled a TMEM cell (an instruction of :func:`tmem_occupancy`)."""
    return f"tcgen05.{ins['op']}" + (f" L{ins['line']}" if ins.get("line") is not None else f" #{ins['index']}")


def _cp_node_cells(node: ir.TcgenCp, issuers: np.ndarray):
    """(lane, col, warp, thread, reg) of every TMEM cell one ``tcgen05.cp`` writes (each issuing thread writes
    the same cells: the last one wins), through :func:`tilemagic.arch.tcgen05.cp_cells`; ``reg`` is -1 (no
    register moves them)."""
    lanes, cols = cp_cells(node.key, int(node.row), int(node.col))
    lane = np.broadcast_to(lanes.reshape(-1, 1), (lanes.size, cols.size)).ravel()
    col = np.broadcast_to(cols.reshape(1, -1), (lanes.size, cols.size)).ravel()
    t = int(issuers[-1]) if issuers.size else -1
    fill = np.full(lane.shape, t, np.int64)
    return lane, col, fill // 32 if t >= 0 else fill, fill, np.full(lane.shape, -1, np.int64)


def _node_cells(node, warps: np.ndarray):
    """(lane, col, warp, thread, fragment register) of every (warp, lane t, register r), flattened."""
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


def tmem_occupancy(kernel: ir.Kernel) -> dict[str, Any]:
    """Which warp / thread / register / instruction moves each allocated TMEM cell, and who filled it.

    Every :class:`~tilemagic.ir.nodes.TcgenLdSt` and :class:`~tilemagic.ir.nodes.TcgenCp` (program order)
    is an instruction.  A ``tcgen05.ld/st`` is executed by the warps :func:`issuing_warps` finds.  A
    ``tcgen05.cp`` (PTX ISA 9.0 §9.7.16.9.1) writes the cells :func:`~tilemagic.arch.tcgen05.cp_cells` gives
    at its ``row``/``col`` (every row of the shape at its lane and replicas, four columns per 16-byte
    chunk), owned by its issuing thread, register ``-1``.  Thread lane ``t`` (0..31) of warp ``w`` and register
    ``r`` (``0 .. node.regs - 1``) touch the cell::

        tmem_cell(node.shape, t, r, taddr=0, warp=w, row_imm=node.row, col_imm=node.col)

    (TMEM base address 0: the buffer's column offset in the allocation is already in
    ``node.col``; the lane quadrant comes from ``w % 4``, PTX ISA 9.0 §9.7.16.8.1).  Later
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
        ``"writer"`` : the same shape -- the index of the last ``tcgen05.st`` or ``tcgen05.cp`` that wrote the
        cell (a cell that stages through both shows who filled it last), ``-1`` where none wrote it.
        ``"instructions"`` : list of dict, one per ``TcgenLdSt`` / ``TcgenCp`` in program order, with
        ``index``, ``op`` (``"ld"``/``"st"``/``"cp"``), ``chain`` (the PTX name), ``shape`` (a cp's
        ``CP_SHAPES`` key), ``num`` (1 for a cp), ``writer`` (:func:`writer_label`, None for an ld),
        ``smem`` (a cp's shared source), ``regs``, ``reg_base``, ``buffer`` (TMEM buffer name or None), ``local``
        (register buffer name), ``row`` / ``col`` (the lane / 32-bit column immediates),
        ``warps`` (list of issuing warp ids), ``line`` (description line or None),
        ``out_of_range`` (cells outside the allocation, dropped) and ``cells`` (dict of
        1-D int64 arrays ``lane``, ``col``, ``warp``, ``thread``, ``reg`` for the
        in-range cells, in issue order).
        ``"ncols"`` : int; ``"warps"`` : int (warps in the CTA); ``"out_of_range"`` : int.

    Raises
    ------
    ValueError
        From :func:`~tilemagic.arch.tcgen05.tmem_cell` for an unknown tcgen05 shape.
    """
    ncols = max(0, int(kernel.tmem_cols or 0))
    instructions: list[dict] = []
    total_oor = 0
    for idx, (node, warps, issuers) in enumerate(_tmem_nodes(kernel)):
        tm = getattr(node, "tmem", None)
        common: dict[str, Any] = {"index": idx, "chain": node.chain, "buffer": tm.name if tm is not None else None,
                                  "row": int(node.row), "col": int(node.col), "warps": [int(w) for w in warps],
                                  "line": node.span.line if node.span is not None else None}
        if isinstance(node, ir.TcgenCp):
            lane, col, warp, thread, reg = _cp_node_cells(node, issuers)
            kind: dict[str, Any] = {"op": "cp", "shape": node.key, "num": 1, "regs": 0, "reg_base": 0, "local": None,
                                    "smem": node.smem.name}
        else:
            lane, col, warp, thread, reg = _node_cells(node, warps)
            kind = {"op": node.op, "shape": node.shape, "num": int(node.num), "regs": max(0, int(node.regs)),
                    "reg_base": int(node.reg_base),
                    "local": node.local.name if node.local is not None else None}
        ok = (lane >= 0) & (lane < TMEM_LANES) & (col >= 0) & (col < ncols)
        oor = int(ok.size - np.count_nonzero(ok))
        total_oor += oor
        cells = {"lane": lane[ok], "col": col[ok], "warp": warp[ok], "thread": thread[ok], "reg": reg[ok]}
        ins: dict[str, Any] = {**common, **kind, "out_of_range": oor, "cells": cells}
        ins["writer"] = writer_label(ins) if ins["op"] in ("st", "cp") else None
        instructions.append(ins)
    out: dict[str, Any] = _dense(ncols, instructions)
    out.update(instructions=instructions, ncols=ncols, warps=num_warps(kernel), out_of_range=total_oor)
    return out


def _dense(ncols: int, instructions: list[dict]) -> dict[str, np.ndarray]:
    """``warp``/``thread``/``reg``/``instr`` arrays (int32, ``(128, ncols)``, ``-1`` = untouched) of the
    instructions' cells; assigned in issue order, so a later (warp, lane, register) wins on a repeated cell.
    ``writer``: the index of the last instruction that wrote the cell (``tcgen05.st`` or ``tcgen05.cp``; a
    ``tcgen05.ld`` only reads it), ``-1`` where none did."""
    out = {k: np.full((TMEM_LANES, ncols), -1, dtype=np.int32) for k in ("warp", "thread", "reg", "instr", "writer")}
    for ins in instructions:
        cells = ins["cells"]
        for k in ("warp", "thread", "reg"):
            out[k][cells["lane"], cells["col"]] = cells[k]
        out["instr"][cells["lane"], cells["col"]] = ins["index"]
        if ins.get("writer"):
            out["writer"][cells["lane"], cells["col"]] = ins["index"]
    return out


def instr_arrays(occ: dict[str, Any], index: int) -> dict[str, np.ndarray]:
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
    return _dense(int(occ["ncols"]), [occ["instructions"][index]])


# ============================================================================ register fragments
def _words(buf: ir.Buffer) -> int:
    """32-bit registers of a local buffer's per-thread storage (padded to whole registers)."""
    return max(1, -(-int(buf.per_thread) * int(buf.elem_bytes) // 4))


def fragment_map(kernel: ir.Kernel, local: str | ir.Buffer | None = None, instr: int | None = None) -> dict[str, Any]:
    """Thread × 32-bit register -> TMEM (lane, column) of a register fragment.

    For each ``tcgen05.ld/st`` that moves the ``local`` buffer (or only instruction
    ``instr``), register ``node.reg_base + r`` of thread ``32*w + t`` (``w`` an issuing
    warp) is bound to the cell :func:`~tilemagic.arch.tcgen05.tmem_cell` gives
    (PTX ISA 9.0 §9.7.16.2.3); a later instruction overwrites an earlier one.

    Parameters
    ----------
    kernel : tilemagic.ir.nodes.Kernel
    local : str or Buffer, optional
        The register buffer (name or object); default: the one the first tcgen05
        instruction moves (or instruction ``instr``'s).
    instr : int, optional
        Only this instruction (index in program order, as in :func:`tmem_occupancy`; a ``tcgen05.ld/st``).

    Returns
    -------
    dict
        ``buffer`` (the local Buffer), ``lane`` / ``col`` (int32 arrays of shape
        ``(threads, words)``, ``-1`` = register not moved by tcgen05), ``instr`` (same
        shape: index of the instruction that bound it), ``filled_by`` (same shape: for a register a
        ``tcgen05.ld`` loads, the index of the ``tcgen05.st`` or ``tcgen05.cp`` that last wrote its TMEM cell
        before that ld in program order, ``-1`` otherwise), ``writers`` (index -> :func:`writer_label`),
        ``instructions`` (indices used, as in :func:`tmem_occupancy`),
        ``threads`` (the CTA size rounded up to warps), ``words`` (32-bit registers per
        thread), ``elems_per_reg`` (elements of the buffer's dtype per 32-bit register).

    Raises
    ------
    ValueError
        No tcgen05 instruction moves a register buffer, an unknown buffer name, or an
        ``instr`` out of range.
    """
    every = _tmem_nodes(kernel)
    nodes: list[tuple[int, ir.TcgenLdSt, np.ndarray]] = [
        (i, n, w) for i, (n, w, _) in enumerate(every) if isinstance(n, ir.TcgenLdSt)]
    if not nodes:
        raise ValueError(f"{kernel.name}: no tcgen05.ld/st, so no register fragment to draw")
    if instr is not None:
        picked = [n for i, n, _ in nodes if i == int(instr)]
        if not picked:
            raise ValueError(f"instr must be in 0..{len(every) - 1} and a tcgen05.ld/st (indices as in "
                             f"tmem_occupancy: {', '.join(str(i) for i, _, _ in nodes)}); got {instr}")
        if local is None:
            local = picked[0].local
    used = []
    for _, node, _w in nodes:
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
    chosen = [(i, n, w) for i, n, w in nodes if n.local is local and (instr is None or i == int(instr))]
    if not chosen:
        raise ValueError(f"instruction #{instr} does not move {getattr(local, 'name', local)}")
    threads = 32 * num_warps(kernel)
    words = max([_words(local)] + [int(n.reg_base) + int(n.regs) for _, n, _ in chosen])
    lane_a = np.full((threads, words), -1, dtype=np.int32)
    col_a = np.full((threads, words), -1, dtype=np.int32)
    ins_a = np.full((threads, words), -1, dtype=np.int32)
    fill_a = np.full((threads, words), -1, dtype=np.int32)
    occ = tmem_occupancy(kernel)
    ncols = int(occ["ncols"])
    filled = np.full((TMEM_LANES, ncols), -1, dtype=np.int32)  # the last writer of each cell, in program order
    chosen_at = {i: (n, w) for i, n, w in chosen}
    for ins in occ["instructions"]:
        i = ins["index"]
        if i in chosen_at:
            node, warps = chosen_at[i]
            lane, col, _, thread, reg = _node_cells(node, warps)
            lane_a[thread, reg] = lane
            col_a[thread, reg] = col
            ins_a[thread, reg] = i
            if node.op == "ld":
                ok = (lane >= 0) & (lane < TMEM_LANES) & (col >= 0) & (col < ncols)
                src = np.full(lane.shape, -1, np.int32)
                src[ok] = filled[lane[ok], col[ok]]
                fill_a[thread, reg] = src
        if ins["writer"]:
            c = ins["cells"]
            filled[c["lane"], c["col"]] = i
    return {
        "buffer": local, "lane": lane_a, "col": col_a, "instr": ins_a, "filled_by": fill_a,
        "writers": {ins["index"]: ins["writer"] for ins in occ["instructions"] if ins["writer"]},
        "instructions": [i for i, _, _ in chosen], "threads": threads, "words": words,
        "elems_per_reg": max(1, 4 // int(local.elem_bytes)),
    }


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


def check_data(result, check: int | str | None = None) -> dict[str, Any]:
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
    # same-width views compare the bits without a contiguous copy of either side
    mismatch = ir.bits_view(got) != ir.bits_view(expected)
    return {"check": chk, "got": got, "expected": expected, "mismatch": np.asarray(mismatch),
            "lhs": names[0], "rhs": names[1]}


_SCAN = 1 << 20  # mask elements scanned per step by first_true


def first_true(mask: np.ndarray, limit: int) -> np.ndarray:
    """Indices of the first ``limit`` true elements of ``mask`` in row-major order.

    The mask is scanned in steps of 2**20 elements and the scan stops once ``limit`` are found, so
    the cost is bounded by the position of the ``limit``-th hit, never by the number of hits
    (``np.argwhere`` of a 64 Mi-element mask that is all true builds a 1 GiB index array).

    Parameters
    ----------
    mask : numpy.ndarray of bool, any shape
    limit : int
        Most indices returned (>= 0).

    Returns
    -------
    numpy.ndarray of int64, shape ``(min(limit, count), mask.ndim)``
        One row of indices per hit.
    """
    m = np.asarray(mask, dtype=bool)
    flat = m.reshape(-1)
    found: list[np.ndarray] = []
    need = max(0, int(limit))
    for start in range(0, flat.size if need else 0, _SCAN):
        nz = np.flatnonzero(flat[start:start + _SCAN])[:need]
        if nz.size:
            found.append(nz + start)
            need -= nz.size
            if not need:
                break
    idx = np.concatenate(found) if found else np.empty(0, np.int64)
    if not m.ndim:  # (a 0-d mask: one element, a check of one element; its index is ())
        return np.zeros((idx.size, 0), np.int64)
    return np.stack(np.unravel_index(idx, m.shape), axis=-1).astype(np.int64).reshape(idx.size, m.ndim)


def first_mismatches(got: np.ndarray, expected: np.ndarray, mismatch: np.ndarray, limit: int) -> tuple:
    """The first ``limit`` mismatching elements of a check, in row-major order.

    Parameters
    ----------
    got, expected : numpy.ndarray
        The two sides, of one shape (the left side first, as in :func:`check_data`).
    mismatch : numpy.ndarray of bool
        Where their bits differ, of the same shape.
    limit : int

    Returns
    -------
    tuple of (tuple of int, numpy scalar, numpy scalar)
        ``(index, got value, expected value)`` per mismatch, at most ``limit`` (:func:`first_true`).
    """
    return tuple((tuple(int(x) for x in i), got[tuple(i)], expected[tuple(i)])
                 for i in first_true(mismatch, limit))


def block_factors(shape: tuple[int, int], limit: tuple[int, int]) -> tuple[int, int]:
    """Power-of-two downsampling factors ``(rows, cols)`` that bring a 2-D ``shape`` within ``limit``.

    Parameters
    ----------
    shape : (int, int)
        Rows and columns of the data.
    limit : (int, int)
        Most rows and columns a picture draws (>= 1).

    Returns
    -------
    (fr, fc) : tuple of int
        The smallest powers of two with ``ceil(rows / fr) <= limit[0]`` and ``ceil(cols / fc) <= limit[1]``
        (``(1, 1)``: no downsampling).
    """
    out = []
    for n, most in zip(shape, limit):
        f = 1
        while -(-int(n) // f) > max(1, int(most)):
            f *= 2
        out.append(f)
    return out[0], out[1]


def _as_2d(a: np.ndarray) -> np.ndarray:
    """``a`` as rows × its last axis (a 0-d or 1-D array is one row)."""
    a = np.asarray(a)
    if a.ndim == 0:
        return a.reshape(1, 1)
    if a.ndim == 1:
        return a.reshape(1, -1)
    return a.reshape(-1, a.shape[-1])


def downsample_check(data: dict[str, Any], limit: tuple[int, int]) -> dict[str, Any]:
    """A bounded 2-D view of :func:`check_data`'s arrays for a picture.

    The sides are drawn as rows × last axis.  When that exceeds ``limit``, both are sampled
    every ``fr``-th row and ``fc``-th column (:func:`block_factors`; each pixel is the first
    element of its ``fr × fc`` block, a strided view, no copy) and the mismatch mask is reduced
    by blocks with a logical OR (a block is marked when any of its elements differs), so a single
    mismatching element still shows.

    Parameters
    ----------
    data : dict
        The result of :func:`check_data`.
    limit : (int, int)
        Most rows and columns drawn.

    Returns
    -------
    dict
        ``got``, ``expected`` (sampled 2-D views), ``mismatch`` (bool, one per block, same
        shape), ``factors`` (``(fr, fc)``), ``shape`` (the full 2-D shape), ``mismatches``
        (int: differing elements of the full data).
    """
    got, exp, bad = _as_2d(data["got"]), _as_2d(data["expected"]), _as_2d(data["mismatch"])
    fr, fc = block_factors(bad.shape, limit)
    small = bad
    if fr > 1:
        small = np.logical_or.reduceat(small, np.arange(0, small.shape[0], fr), axis=0)
    if fc > 1:
        small = np.logical_or.reduceat(small, np.arange(0, small.shape[1], fc), axis=1)
    return {"got": got[::fr, ::fc], "expected": exp[::fr, ::fc], "mismatch": np.asarray(small, bool),
            "factors": (fr, fc), "shape": tuple(int(x) for x in bad.shape),
            "mismatches": int(np.count_nonzero(data["mismatch"]))}


def _logical_of(buf: ir.Buffer) -> np.ndarray:
    """Logical (row-major) element index of each physical element of a shared buffer."""
    layout: Any = buf.layout  # a TileLayout or ComposeLayout
    if layout is None:
        return np.arange(buf.numel, dtype=np.int64)
    phys = np.asarray(layout.apply(np.arange(buf.numel, dtype=np.int64)).get("m"), np.int64)
    inv = np.empty(buf.numel, np.int64)
    inv[phys] = np.arange(buf.numel, dtype=np.int64)
    return inv


def _shared_target(stmt: ir.Stmt) -> ir.Buffer | None:
    """The buffer a ``Store`` / ``VecMove`` / ``stmatrix`` writes (None for other statements)."""
    if isinstance(stmt, ir.Store):
        return stmt.buf
    if isinstance(stmt, ir.VecMove):
        return stmt.dst
    if isinstance(stmt, ir.LdStMatrix) and stmt.op == "st":
        return stmt.smem
    return None


def _write_cells(stmt: ir.Stmt, scope: tuple[ir.Stmt, ...], tid: np.ndarray):
    """``(physical element, writing thread, active)`` arrays of one shared-memory write.

    The CTA's threads are axis 0 and every variable of the enclosing ``Grid`` nodes one
    more axis; ``If`` conditions of ``scope`` are the activity mask.  A ``Store``'s
    logical indices go through :meth:`~tilemagic.ir.nodes.Buffer.index_expr`; a
    ``VecMove`` writes ``dst_index + 0 .. elems-1``; an ``stmatrix`` writes the elements
    :func:`~tilemagic.arch.ldmatrix.fragment_elements` gives for its row addresses.

    Raises
    ------
    Undetermined
        An index or condition reads memory, more than ``_MAX_EVAL`` points, or an
        ``stmatrix`` inside a loop.
    """
    grids = [v for s in scope if isinstance(s, ir.Grid) for v in zip(s.vars, s.extents)]
    k = len(grids)
    t = tid.reshape((-1,) + (1,) * k)
    env = {var: np.arange(int(ext), dtype=np.int64).reshape([1] * (j + 1) + [int(ext)] + [1] * (k - j - 1))
           for j, (var, ext) in enumerate(grids)}
    if tid.size * int(np.prod([ext for _, ext in grids] or [1], dtype=np.int64)) > _MAX_EVAL:
        raise Undetermined("too many points to evaluate")
    mask = _guard_mask(scope, t, env, lenient=False)
    if isinstance(stmt, ir.Store):
        return np.asarray(eval_static(stmt.buf.index_expr(stmt.indices), t, env)), t, mask
    if isinstance(stmt, ir.VecMove):
        base = np.asarray(eval_static(stmt.dst_index, t, env))[..., None]
        return base + np.arange(int(stmt.elems), dtype=np.int64), t[..., None], mask[..., None]
    from ..arch.ldmatrix import fragment_elements

    assert isinstance(stmt, ir.LdStMatrix)
    if k or tid.size % 32:
        raise Undetermined("stmatrix inside a loop")
    addr = np.broadcast_to(np.asarray(eval_static(stmt.addr, tid), np.int64), tid.shape).reshape(-1, 32)
    lo, hi = fragment_elements(addr, stmt.num, stmt.trans)  # (warps, num, 32) each
    return (np.stack([lo, hi]), tid.reshape(-1, 1, 32),
            np.broadcast_to(mask, tid.shape).reshape(-1, 1, 32))


def shared_writers(kernel: ir.Kernel) -> list[dict[str, Any]]:
    """Which thread writes each element of each shared buffer (derived from the IR).

    Every ``Store``, ``VecMove`` and ``stmatrix`` into a shared buffer is evaluated, in
    program order, for all threads of the CTA and all iterations of its enclosing loops
    (:func:`_write_cells`); a later write overwrites an earlier one.  The variant is the
    ``op``/``variant`` fields of the closest preceding op marker (:class:`~tilemagic.ir.nodes.Comment`),
    as ``"copy/fallback"``.

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
    info: dict[ir.Buffer, dict[str, Any]] = {
        b: {"writer": np.full(max(b.numel, 0), -1, dtype=np.int64), "determined": True, "variants": [],
            "logical": None} for b in bufs}
    tid = np.arange(max(1, int(kernel.threads)), dtype=np.int64)
    variant = None
    for stmt, scope in ir.walk_scoped(kernel.body):
        if isinstance(stmt, ir.Comment):
            variant = f"{stmt.op}/{stmt.variant}" if stmt.variant else variant
            continue
        buf = _shared_target(stmt)
        if buf not in info:
            continue
        ent = info[buf]
        try:
            phys, writer, active = np.broadcast_arrays(*_write_cells(stmt, scope, tid))
        except Undetermined:
            ent["determined"] = False
            continue
        inv = ent["logical"] if ent["logical"] is not None else _logical_of(buf)
        ent["logical"] = inv
        sel = active & (phys >= 0) & (phys < inv.size)
        if np.any(sel):
            ent["writer"][inv[phys[sel]]] = writer[sel]
            if variant and variant not in ent["variants"]:
                ent["variants"].append(variant)
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


# ============================================================================ asynchronous copies (issue 13)
#: Bytes of one swizzle chunk: the unit every shared-memory swizzle mode moves whole (PTX ISA 9.0 §5.5.7).
CHUNK_BYTES = 16
#: 16-byte chunks in one 128-byte line of shared memory (one wavefront: 32 banks × 4 bytes, ``arch.banks``).
LINE_CHUNKS = 8


def has_async(kernel: ir.Kernel | None) -> bool:
    """Whether the kernel issues asynchronous copies (``cp.async``, TMA, a dsmem ``BulkCopy`` or a
    ``tcgen05.cp``), i.e. has the async pictures."""
    if kernel is None:
        return False
    return any(isinstance(s, (ir.TmaCopy, ir.CpAsync, ir.BulkCopy, ir.TcgenCp)) for s, _ in ir.walk_scoped(kernel.body))


def _marked(kernel: ir.Kernel):
    """Each statement with its scope and the closest preceding op marker (``Comment`` with a variant)."""
    marker = None
    for stmt, scope in ir.walk_scoped(kernel.body):
        if isinstance(stmt, ir.Comment) and stmt.variant:
            marker = stmt
            continue
        yield stmt, scope, marker


def _issuers(kernel: ir.Kernel, scope, env: dict | None = None) -> np.ndarray:
    """CTA thread ids the thread-only ``If`` guards of ``scope`` let through (an unknown guard counts as true);
    ``env``: the CTA's rank in a cluster (``{ir.ThreadVar("cta_rank"): r}``), for guards on ``cta_rank``."""
    tid = np.arange(max(1, int(kernel.threads)), dtype=np.int64)
    return tid[np.broadcast_to(_guard_mask(scope, tid, env, lenient=True), tid.shape)]


def tma_issue_box(tmap: ir.TensorMap, coords) -> dict[str, Any]:
    """The part of the global tensor one tile-mode TMA issue covers (PTX ISA 9.0 §9.7.9.25.5.2).

    Parameters
    ----------
    tmap : tilemagic.ir.nodes.TensorMap
        The descriptor: ``dims`` (``globalDim``), ``box`` (``boxDim``) and ``elem_strides``, CUDA order
        (dimension 0 innermost), in descriptor elements.
    coords : sequence of int
        The issue's box start per dimension (``TmaCopy.coords`` evaluated), signed.

    Returns
    -------
    dict
        ``start`` (tuple of int: ``coords``), ``stop`` (``coords[i] + box[i] * elem_strides[i]``, the box's
        end: elements ``start[i], start[i] + elem_strides[i], ...`` below it are traversed; ``elem_strides[0]``
        counts as 1 as for every non-interleaved map), ``elements`` (``prod(box)``), ``oob`` (elements of the
        box outside ``[0, dims[i])`` in some dimension: filled on a load, dropped on a store) and
        ``inside`` (``(lo, hi)`` per dimension, the clipped in-bounds range; ``lo >= hi`` when none).
    """
    rank = tmap.rank
    box, es = box_traversal(tmap.box[:rank], tmap.elem_strides)  # (elements per dimension, their step)
    start = tuple(int(c) for c in coords)
    stop = tuple(start[i] + box[i] * es[i] for i in range(rank))
    inside, inb = [], 1
    for i in range(rank):
        k = start[i] + np.arange(box[i], dtype=np.int64) * es[i]  # the coordinates the box traverses
        ok = (k >= 0) & (k < int(tmap.dims[i]))
        inb *= int(np.count_nonzero(ok))
        inside.append((max(start[i], 0), min(stop[i], int(tmap.dims[i]))))
    elements = int(np.prod(box, dtype=np.int64))
    return {"start": start, "stop": stop, "elements": elements, "oob": elements - inb, "inside": tuple(inside)}


def tma_boxes(kernel: ir.Kernel) -> list[dict[str, Any]]:
    """Every TMA op of the kernel with the boxes its issues cover in the global tensor.

    The ``TmaCopy`` statements are read from the lowered IR and grouped by their op marker (one
    ``copy_async`` op may issue several boxes: an issue axis); each issue's ``coords`` are evaluated with
    :func:`~tilemagic.ir.evaluate.eval_static` for every iteration of its enclosing loops and every thread
    its guards let through (TMA is issued by one thread: normally one issue per statement and iteration), in
    every CTA of a cluster (guards and coordinates in ``cta_rank`` evaluated per rank).

    Returns
    -------
    list of dict
        One per op, in program order: ``line`` (description line), ``variant`` (``tma_auto``/``tma_explicit``),
        ``direction`` (``g2s``/``s2g``), ``tmap`` (the :class:`~tilemagic.ir.nodes.TensorMap`), ``smem`` (shared
        buffer name), ``mbar`` (barrier name or None), ``issues`` (list of dict: ``index``, ``thread``,
        ``cta`` (the issuing CTA's rank, 0 without a cluster), ``smem_offset`` (bytes) and the fields of
        :func:`tma_issue_box`), ``oob`` (out-of-bounds elements over all issues), ``determined`` (False when
        some coordinate could not be evaluated statically; those issues are left out).
    """
    ops: list[dict[str, Any]] = []
    by_key: dict[tuple, dict[str, Any]] = {}
    for stmt, scope, marker in _marked(kernel):
        if not isinstance(stmt, ir.TmaCopy):
            continue
        line = stmt.span.line if stmt.span is not None else None
        key = (id(marker), stmt.tmap.name, stmt.direction)
        op = by_key.get(key)
        if op is None:
            op = by_key[key] = {"line": line, "variant": getattr(marker, "variant", None), "direction": stmt.direction,
                                "tmap": stmt.tmap, "smem": stmt.smem.name,
                                "mbar": stmt.mbar.name if stmt.mbar is not None else None, "issues": [], "oob": 0,
                                "determined": True}
            ops.append(op)
        grids = [v for s in scope if isinstance(s, ir.Grid) for v in zip(s.vars, s.extents)]
        points = [dict(zip([v for v, _ in grids], p)) for p in np.ndindex(*[int(e) for _, e in grids])] or [{}]
        cluster = max(1, int(getattr(kernel, "cluster", 1)))
        for rank in range(cluster):
            renv: dict[ir.Expr, Any] = {ir.ThreadVar(CTA_RANK): np.int64(rank)} if cluster > 1 else {}
            issuers = _issuers(kernel, scope, renv or None)
            for env in points:
                envs: dict[ir.Expr, Any] = {**renv, **{v: np.int64(x) for v, x in env.items()}}
                try:
                    cs = [np.broadcast_to(np.asarray(eval_static(c, issuers, envs), np.int64), issuers.shape)
                          for c in stmt.coords]
                except Undetermined:
                    op["determined"] = False
                    continue
                for j, t in enumerate(issuers.tolist()):
                    box = tma_issue_box(stmt.tmap, [int(c[j]) for c in cs])
                    box.update(index=len(op["issues"]), thread=int(t), cta=rank, smem_offset=int(stmt.smem_offset))
                    op["issues"].append(box)
                    op["oob"] += box["oob"]
    return ops


def _swizzled_chunk(chunk: np.ndarray, mode: int) -> np.ndarray:
    """Physical 16-byte chunk of a TMA swizzle mode (1/2/3: 32/64/128 B) on chunk indices in the 1024-byte
    aligned shared window: ``c ^ ((c >> 3) & (2**mode - 1))`` (PTX ISA 9.0 §5.5.7), through the one
    implementation :func:`tilemagic.layout.swizzle.xor_swizzle` on byte addresses."""
    from ..layout.swizzle import xor_swizzle

    return np.asarray(xor_swizzle(chunk * CHUNK_BYTES, 4, int(mode), 3), np.int64) // CHUNK_BYTES


def swizzle_chunks(kernel: ir.Kernel) -> list[dict[str, Any]]:
    """Logical 16-byte chunk -> physical chunk of each swizzled destination of an asynchronous copy.

    A TMA load's destination is swizzled by the hardware as its tensor map says (``TensorMap.swizzle``; the
    box lands box-linear from ``smem_offset``, then the swizzle acts on the shared address), so its map comes
    from the descriptor; a ``cp.async`` destination's from the buffer's ``swizzle(...)`` layout
    (:class:`~tilemagic.layout.swizzle.ComposeLayout`, whose chunks the variant moves whole).  Bank groups
    are those of :func:`tilemagic.arch.banks.bank_of`: a 16-byte chunk at physical byte ``p`` holds banks
    ``(p // 4) % 32 .. +3``, group ``bank // 4`` (0..7).

    Returns
    -------
    list of dict
        One per swizzled destination buffer (declaration order): ``buffer`` (name), ``via`` (``"tma"`` or
        ``"ldgsts"``), ``how`` (``"A_tmap swizzle 128B"`` / ``"swizzle(3, 3, 3)"``), ``physical`` (int64
        array, ``(nchunks,)``: the physical chunk of each logical chunk, logical = row-major byte order of
        the buffer / box-linear for TMA, ``-1`` where no swizzled write lands), ``bank_group`` (int64, same
        shape: bank group of the physical chunk, ``-1`` where none), ``chunk_bytes`` (16), ``line_chunks`` (8).
    """
    from ..arch.banks import BANK_BYTES, bank_of
    from ..layout.swizzle import ComposeLayout

    out: dict[str, dict[str, Any]] = {}
    names = [b.name for b in kernel.shared]
    for stmt, _scope, _m in _marked(kernel):
        if isinstance(stmt, ir.TmaCopy) and stmt.direction == "g2s" and stmt.tmap.swizzle:
            buf, mode = stmt.smem, int(stmt.tmap.swizzle)
            ent = out.setdefault(buf.name, {"buffer": buf.name, "via": "tma",
                                            "how": f"{stmt.tmap.name} swizzle {16 << mode}B",
                                            "physical": np.full(buf.nbytes // CHUNK_BYTES, -1, np.int64)})
            nb = int(np.prod(stmt.tmap.box, dtype=np.int64)) * int(stmt.tmap.elem_bytes)
            first = int(stmt.smem_offset) // CHUNK_BYTES
            logical = first + np.arange(-(-nb // CHUNK_BYTES), dtype=np.int64)
            logical = logical[logical < ent["physical"].size]
            ent["physical"][logical] = _swizzled_chunk(logical, mode)
        elif isinstance(stmt, ir.CpAsync) and isinstance(stmt.dst.layout, ComposeLayout) \
                and int(stmt.dst.layout.swizzle_len) > 0 and stmt.dst.name not in out:
            buf = stmt.dst
            lay: Any = buf.layout
            phys_elem = np.asarray(lay.apply(np.arange(buf.numel, dtype=np.int64)).get("m"), np.int64)
            eb = int(buf.elem_bytes)
            per = max(1, CHUNK_BYTES // eb)
            lead: np.ndarray = phys_elem[::per] * eb  # the physical byte of each logical chunk's first element
            whole: np.ndarray = (np.all(phys_elem.reshape(-1, per) - phys_elem[::per, None] == np.arange(per), axis=1)
                                 if buf.numel % per == 0 else np.zeros(lead.size, dtype=np.bool_))
            out[buf.name] = {"buffer": buf.name, "via": "ldgsts",
                             "how": f"swizzle({lay.per_element}, {lay.swizzle_len}, {lay.atom_len})",
                             "physical": np.where(whole, lead // CHUNK_BYTES, -1).astype(np.int64)}
    res = []
    for name in sorted(out, key=lambda n: names.index(n) if n in names else len(names)):
        ent = out[name]
        phys = ent["physical"]
        group = np.where(phys >= 0, bank_of(phys * CHUNK_BYTES) // (CHUNK_BYTES // BANK_BYTES), -1)
        ent.update(bank_group=group.astype(np.int64), chunk_bytes=CHUNK_BYTES, line_chunks=LINE_CHUNKS)
        res.append(ent)
    return res


#: Timeline event kinds of the asynchronous copies and the synchronisation around them (``sim.hb.SyncEvent``;
#: ``dsmem``/``dsmem.complete`` a dsmem ``BulkCopy``'s issue and landing, ``cluster_sync`` the cluster barrier;
#: ``tcgen05.cp`` a ``tcgen05.cp`` issue (its span the cp's line), ``tcgen05.cp.complete`` its completion at the
#: issuing thread's ``tcgen05.commit`` (the same threads and span as the issue, ``info`` ``barrier`` and the
#: ``phase`` the commit's arrive completes, PTX ISA 9.0 §9.7.16.6.1), ``tcgen05.commit`` the commit itself
#: (``info`` ``barrier``), as the TMA events are).
ASYNC_EVENTS = frozenset({
    "cp.async", "cp.async.complete", "commit_group", "wait_group", "mbarrier.init", "arrive", "phase", "wait",
    "wait.blocked", "tma.issue", "tma.complete", "tma.read", "bulk_commit_group", "bulk_wait_group",
    "fence.proxy.async", "fence.mbarrier.init", "cta_sync", "cluster_sync", "dsmem", "dsmem.complete",
    "tcgen05.cp", "tcgen05.cp.complete", "tcgen05.commit"})
#: Events that land (or release the source of) a copy: their threads are the copy's issuer, their CTA the receiver.
_LANDING_EVENTS = frozenset({"cp.async.complete", "tma.complete", "tma.read", "dsmem.complete", "tcgen05.cp.complete"})
#: Copy kinds completed on an mbarrier (the wait that observes them is a ``wait`` on its barrier and phase).
_BARRIER_KINDS = ("tma.g2s", "dsmem", "tcgen05.cp")
#: Copy kinds whose barrier is named only at their completion (a ``tcgen05.cp`` learns it from the commit).
_LATE_BARRIER = ("tcgen05.cp",)


def _issue_threads(ev, threads: int, warp: int) -> list[int]:
    """The CTA-local ids of an issue event's threads in warp ``warp`` (sorted)."""
    ids = np.asarray(ev.threads, np.int64).reshape(-1) % max(1, threads)
    return sorted({int(t) for t in ids.tolist() if int(t) // 32 == warp})


def _event_at(ev, threads: int, cluster: int) -> tuple[int, list[tuple[int, int]]]:
    """The CTA an event takes effect in and its threads as sorted ``(CTA, warp)`` pairs.

    With a cluster the thread ids are cluster-linear (``rank * threads + tx``, the simulator's tracker) and the
    event's ``cta`` field (``getattr(ev, "cta", ...)``) names the CTA where it takes effect: for a landing
    (:data:`_LANDING_EVENTS`) the receiving CTA, while its threads are the issuer's.  An event other than a
    landing whose ids are all below ``threads`` but whose ``cta`` is another rank carries CTA-local ids.
    Without a cluster every thread is in CTA 0 and the warp is ``t // 32``.
    """
    ids = np.asarray(ev.threads, np.int64).reshape(-1)
    if cluster <= 1:
        return 0, [(0, w) for w in sorted({int(t) // 32 for t in ids.tolist()})]
    cta = getattr(ev, "cta", None)
    if (cta is not None and int(cta) != 0 and ev.kind not in _LANDING_EVENTS and ids.size
            and int(ids.max()) < threads):
        ranks, local = np.full(ids.shape, int(cta), np.int64), ids
    else:
        ranks, local = ids // threads, ids % threads
        src = ev.info.get("src_cta") if ev.kind in _LANDING_EVENTS else None
        if src is not None:  # (an issuer named by rank: its ids are CTA-local)
            ranks, local = np.full(ids.shape, int(src), np.int64), ids % threads
    at = sorted({(int(r), int(t) // 32) for r, t in zip(ranks.tolist(), local.tolist())})
    if cta is None:
        cta = at[0][0] if at else 0
    return int(cta), at


def async_timeline(hb, threads: int, cluster: int = 1) -> dict[str, Any]:
    """The simulator's asynchronous events per warp: copies (issue -> completion -> wait), mbarrier phases,
    commit groups, and the hang point; in a cluster per CTA and warp.

    Parameters
    ----------
    hb : tilemagic.sim.hb.HBReport
        ``result.launch.hb`` of a simulated run: ``timeline`` (``SyncEvent`` in program order, at most
        ``TIMELINE_CAP``), ``timeline_dropped``, ``hang``.
    threads : int
        Threads of the CTA (warps = ``ceil(threads / 32)``).
    cluster : int, optional
        CTAs of the cluster (``Kernel.cluster``, default 1).  With more than one, thread ids are
        cluster-linear (``rank * threads + tx``) and each event's CTA is its ``cta`` field (read with
        ``getattr(ev, "cta", ...)``; a landing's is the receiving CTA, its threads the issuer's).

    Returns
    -------
    dict
        ``warps`` (int, per CTA), ``ctas`` (int), ``barriers`` (names, first-use order; a cluster has each in
        every CTA), ``events`` (list of dict: ``x`` (position in the timeline), ``kind``, ``warps`` (list of
        int, CTA-local), ``at`` (sorted ``(cta, warp)`` pairs of its threads), ``cta`` (where it takes
        effect), ``line``, ``info``), ``copies`` (list of dict: ``kind`` (``cp.async``/``tma.g2s``/
        ``tma.s2g``/``dsmem``/``tcgen05.cp``), ``line``, ``cta`` and ``warp`` (the issuer), ``threads`` (the
        issuing threads of that warp, CTA-local ids), ``issue``,
        ``complete`` (x of its first landing, or None: never completed), ``read`` (x of an S2G's source read,
        or None), ``wait`` (x of the first wait that observed its first landing, or None), ``barrier``, ``phase``,
        ``landings``
        (list of dict ``cta`` (receiving CTA), ``x``, ``phase``, ``wait``: one per receiving CTA -- several
        for a multicast, the remote CTA for dsmem)), ``phases`` (list of dict ``barrier``, ``cta``, ``phase``
        (the phase number that completed), ``x``), ``groups`` (commit groups: ``x``, ``warps``, ``at``,
        ``group``, ``bulk``, ``line``), ``cluster_syncs`` (x of each ``cluster_sync`` event), ``hang`` (None,
        or ``message``, ``line``, ``x`` (the end), ``blocked`` (``(x, warps, barrier, phase, at)`` of the
        waits still blocked)), ``length`` (events drawn) and ``dropped`` (events past the cap).

    Pairing: a landing is matched to the oldest issue of the same kind, description line and issuing
    (CTA, warp) that has not landed in the receiving CTA yet (FIFO; per barrier for TMA loads and dsmem); a
    landing's wait is the first later ``wait_group`` of the issuing warp (``cp.async``), ``bulk_wait_group``
    of the issuing warp (S2G), or ``wait`` in the receiving CTA on its barrier that names its phase (G2S,
    dsmem, and a ``tcgen05.cp``, whose barrier and phase are its completion's: the commit's).
    """
    nwarps = max(1, -(-int(threads) // 32))
    ctas = max(1, int(cluster))
    events: list[dict[str, Any]] = []
    copies: list[dict[str, Any]] = []
    phases: list[dict[str, Any]] = []
    groups: list[dict[str, Any]] = []
    barriers: list[str] = []
    syncs: list[int] = []
    pending: dict[tuple, list[dict[str, Any]]] = {}
    for x, ev in enumerate(hb.timeline):
        if ev.kind not in ASYNC_EVENTS:
            continue
        cta, at = _event_at(ev, int(threads), ctas)
        ws = sorted({w for _, w in at})
        line = ev.span.line if ev.span is not None else None
        info = dict(ev.info)
        events.append({"x": x, "kind": ev.kind, "warps": ws, "at": at, "cta": cta, "line": line, "info": info})
        bar = info.get("barrier")
        if isinstance(bar, str) and bar not in barriers:
            barriers.append(bar)
        kind = {"cp.async": "cp.async", "tma.issue": f"tma.{info.get('direction', 'g2s')}",
                "dsmem": "dsmem", "tcgen05.cp": "tcgen05.cp"}.get(ev.kind)
        if kind is not None:
            for r, w in at:
                c: dict[str, Any] = {"kind": kind, "line": line, "cta": r, "warp": w, "issue": x, "complete": None,
                                     "read": None, "wait": None, "barrier": bar, "phase": info.get("phase"),
                                     "landings": [], "threads": _issue_threads(ev, int(threads), w)}
                copies.append(c)
                keyed = bar if kind in _BARRIER_KINDS and kind not in _LATE_BARRIER else None
                pending.setdefault((kind, line, r, w, keyed), []).append(c)
        elif ev.kind in _LANDING_EVENTS:
            kind = {"cp.async.complete": "cp.async", "tma.read": "tma.s2g", "dsmem.complete": "dsmem",
                    "tcgen05.cp.complete": "tcgen05.cp"}.get(
                ev.kind, f"tma.{info.get('direction', 'g2s')}")  # (a source read is an S2G's only)
            for r, w in at:
                keyed = bar if kind in _BARRIER_KINDS and kind not in _LATE_BARRIER else None
                q = pending.get((kind, line, r, w, keyed), [])
                if ev.kind == "tma.read":
                    q = [c for c in q if c["read"] is None]
                    if q:
                        q[0]["read"] = x
                    continue
                q = [c for c in q if all(land["cta"] != cta for land in c["landings"])]
                if q:
                    c = q[0]
                    phase = info.get("phase", c["phase"]) if kind in _BARRIER_KINDS else None
                    c["landings"].append({"cta": cta, "x": x, "phase": phase, "wait": None})
                    if c["complete"] is None:
                        c["complete"] = x
                        if kind in _BARRIER_KINDS:
                            c["phase"] = phase
                        if kind in _LATE_BARRIER:
                            c["barrier"] = bar
        elif ev.kind == "phase":
            phases.append({"barrier": bar, "cta": cta, "phase": int(info.get("phase", 0)), "x": x})
        elif ev.kind in ("commit_group", "bulk_commit_group"):
            groups.append({"x": x, "warps": ws, "at": at, "group": info.get("group"),
                           "bulk": ev.kind.startswith("bulk"), "line": line})
        elif ev.kind == "cluster_sync":
            syncs.append(x)
        if ev.kind in ("wait_group", "bulk_wait_group", "wait"):
            want = {"wait_group": ("cp.async",), "bulk_wait_group": ("tma.s2g",), "wait": _BARRIER_KINDS}[ev.kind]
            for c in copies:
                if c["kind"] not in want:
                    continue
                for land in c["landings"]:
                    if land["wait"] is not None:
                        continue
                    if ev.kind == "wait":
                        if land["cta"] == cta and c["barrier"] == bar and land["phase"] == info.get("phase"):
                            land["wait"] = x
                    elif (c["cta"], c["warp"]) in at:
                        land["wait"] = x
                if c["landings"]:
                    c["wait"] = c["landings"][0]["wait"]
    hang = None
    if getattr(hb, "hang", None) is not None:
        h = hb.hang
        blocked = [(e["x"], e["warps"], e["info"].get("barrier"), e["info"].get("phase"), e["at"]) for e in events
                   if e["kind"] == "wait.blocked"]
        hang = {"message": h.message, "line": h.span.line if h.span is not None else None,
                "x": len(hb.timeline), "blocked": blocked}
    return {"warps": nwarps, "ctas": ctas, "barriers": barriers, "events": events, "copies": copies,
            "phases": phases, "groups": groups, "cluster_syncs": syncs, "hang": hang, "length": len(hb.timeline),
            "dropped": int(hb.timeline_dropped)}


def async_pictures(kernel: ir.Kernel | None, launch=None) -> list[str]:
    """The asynchronous-copy pictures that apply to a kernel (and its launch), in report order.

    ``tma`` when the kernel has a TMA copy, ``swizzle`` when a TMA load or ``cp.async`` has a swizzled
    destination, ``tcgen05_cp`` when it has a ``tcgen05.cp`` (its descriptors drawn), ``timeline`` when it
    has asynchronous copies and ``launch`` carries the simulator's timeline (``launch.hb``), ``cluster`` when the
    kernel runs as a cluster (``Kernel.cluster > 1``) and the
    simulator recorded what each CTA's shared memory received (:func:`cluster_receipts`).
    """
    clustered = cluster_size(kernel) > 1
    if not has_async(kernel) and not clustered:
        return []
    assert kernel is not None
    kinds = []
    if any(isinstance(s, ir.TmaCopy) for s, _ in ir.walk_scoped(kernel.body)):
        kinds.append("tma")
    if swizzle_chunks(kernel):
        kinds.append("swizzle")
    if any(isinstance(s, ir.TcgenCp) for s, _ in ir.walk_scoped(kernel.body)):
        kinds.append("tcgen05_cp")
    hb = getattr(launch, "hb", None) if launch is not None else None
    if hb is not None and hb.timeline and has_async(kernel):
        kinds.append("timeline")
    if clustered and cluster_receipts(launch):
        kinds.append("cluster")
    return kinds


# ============================================================================ tcgen05.cp (issue 14)
def cp_ops(kernel: ir.Kernel) -> list[dict[str, Any]]:
    """Every ``copy_async`` smem -> tmem op of the kernel: its ``tcgen05.cp`` instructions, each descriptor as
    the hardware reads it, and where each 16-byte chunk of the shared tile goes in TMEM.

    The descriptor is the node's (:meth:`~tilemagic.ir.nodes.TcgenCp.descriptor`) at the simulator's shared
    window (:func:`tilemagic.ir.nodes.shared_bases`: declaration order, each buffer aligned; the address part
    is that run's, a GPU's ``__shared__`` placement differs), decoded with
    :func:`tilemagic.arch.smem_desc.decode` -- never read from the node's fields -- and walked with the one
    walk :func:`tilemagic.layout.smem_matrix.cp_source_addresses` (PTX ISA 9.0 §9.7.16.4.1, §9.7.16.3.3); the
    TMEM cells are :func:`tilemagic.arch.tcgen05.cp_cells` at the instruction's lane and column
    (§9.7.16.9.1).  The cps of one op are those after one op marker at one source line.

    Returns
    -------
    list of dict
        One per op, program order: ``line``, ``variant``, ``smem`` / ``tmem`` (buffer names; ``tmem`` None for a
        hand-built node without it), ``smem_base`` (byte address of ``smem`` in the window), ``smem_bytes``,
        ``cps`` (list of dict, one per instruction: ``index`` (in the op), ``chain``, ``key``, ``line``,
        ``desc`` (the 64-bit value), ``fields`` (:class:`~tilemagic.arch.smem_desc.SmemDescriptor`),
        ``start_rel`` (start address - ``smem_base``, bytes), ``lane`` / ``col`` (the TMEM lane and 32-bit column
        added to the base address), ``rows`` / ``chunks`` (of the shape), ``addr`` (int64 ``(rows, chunks)``:
        absolute byte address of each chunk read), ``rel`` (the same, relative to ``smem_base``), ``lanes``
        (int64 ``(rows, replicas)``: TMEM lane of row ``r``, replica ``k``), ``replicas`` (lane offsets),
        ``cols`` (int64 ``(chunks, 4)``: TMEM column of each chunk's words), ``issuers`` (CTA thread ids)).
    """
    from ..arch import smem_desc
    from ..arch.tcgen05 import CP_SHAPES
    from ..layout.smem_matrix import cp_source_addresses

    bases = ir.shared_bases(kernel)
    ops: list[dict[str, Any]] = []
    by_key: dict[tuple, dict[str, Any]] = {}
    for stmt, scope, marker in _marked(kernel):
        if not isinstance(stmt, ir.TcgenCp):
            continue
        line = stmt.span.line if stmt.span is not None else None
        key = (id(marker), line, stmt.smem.name)
        base = int(bases.get(stmt.smem.name, 0))
        op = by_key.get(key)
        if op is None:
            op = by_key[key] = {"line": line, "variant": getattr(marker, "variant", None), "smem": stmt.smem.name,
                                "tmem": stmt.tmem.name if stmt.tmem is not None else None, "smem_base": base,
                                "smem_bytes": int(stmt.smem.nbytes), "cps": []}
            ops.append(op)
        shape = CP_SHAPES[stmt.key]
        desc = int(stmt.descriptor(base))
        fields = smem_desc.decode(desc)
        addr = np.asarray(cp_source_addresses(fields, shape.rows, shape.chunks), np.int64)
        lanes, cols = cp_cells(stmt.key, int(stmt.row), int(stmt.col))
        op["cps"].append({
            "index": len(op["cps"]), "chain": stmt.chain, "key": stmt.key, "line": line, "desc": desc,
            "fields": fields, "start_rel": fields.start - base, "lane": int(stmt.row), "col": int(stmt.col),
            "rows": shape.rows, "chunks": shape.chunks, "addr": addr, "rel": addr - base, "lanes": lanes,
            "replicas": tuple(shape.replicas), "cols": cols, "issuers": _issuers(kernel, scope),
        })
    return ops


def cp_chunk_map(op: dict[str, Any], row_bytes: int | None = None) -> dict[str, Any]:
    """The descriptor picture's model of one smem -> tmem op (:func:`cp_ops`): every 16-byte chunk of the
    shared tile with the instruction that reads it and the TMEM cells it lands in.

    Parameters
    ----------
    op : dict
        One entry of :func:`cp_ops`.
    row_bytes : int, optional
        Bytes of one drawn row of the shared tile (default 128: a 128-byte line, so a swizzle shows as chunks
        moved within their line).

    Returns
    -------
    dict
        ``row_bytes``, ``line_chunks`` (chunks per drawn row), ``nchunks`` (16-byte chunks of the buffer),
        ``instr`` / ``row`` / ``chunk`` (int64 ``(nchunks,)``: for the chunk at byte ``16 i`` of the buffer, the
        cp instruction (index in the op), its matrix row and its chunk in that instruction that read it; ``-1``
        where none reads it; a chunk read twice keeps the later read), ``reads`` (int64 ``(nchunks,)``: how many
        reads), ``outside`` (reads outside the buffer, dropped), ``tmem`` (list of dict per read: ``instr``,
        ``row``, ``chunk``, ``byte`` (offset in the buffer), ``lane`` (first replica's), ``lanes`` (all
        replicas), ``col`` (first of its 4 columns)), ``lane_col`` (int64 ``(128, ncols)`` over the columns
        written, from ``col_lo``: the buffer chunk index each TMEM cell receives, ``-1`` none), ``replica``
        (the same shape: which replica (0 = the row's own lane) wrote it), ``col_lo``, ``ncols``.
    """
    rb = int(row_bytes or LINE_CHUNKS * CHUNK_BYTES)
    n = max(1, -(-int(op["smem_bytes"]) // CHUNK_BYTES))
    instr = np.full(n, -1, np.int64)
    row = np.full(n, -1, np.int64)
    chunk = np.full(n, -1, np.int64)
    reads = np.zeros(n, np.int64)
    outside = 0
    tm: list[dict[str, Any]] = []
    cps = op["cps"]
    col_lo = min((int(c["cols"].min()) for c in cps), default=0)
    col_hi = max((int(c["cols"].max()) + 1 for c in cps), default=col_lo)
    lane_col = np.full((TMEM_LANES, max(0, col_hi - col_lo)), -1, np.int64)
    replica = np.full(lane_col.shape, -1, np.int64)
    for c in cps:
        rel = c["rel"]
        for (r, j), b in np.ndenumerate(rel):
            i = int(b) // CHUNK_BYTES
            ln = c["lanes"][r]
            col0 = int(c["cols"][j, 0])
            tm.append({"instr": c["index"], "row": r, "chunk": j, "byte": int(b), "lane": int(ln[0]),
                       "lanes": [int(x) for x in ln], "col": col0})
            if not 0 <= i < n or int(b) % CHUNK_BYTES:
                outside += 1
                continue
            instr[i], row[i], chunk[i] = c["index"], r, j
            reads[i] += 1
            for k, lane in enumerate(ln.tolist()):
                if 0 <= lane < TMEM_LANES:
                    lane_col[lane, col0 - col_lo: col0 - col_lo + 4] = i
                    replica[lane, col0 - col_lo: col0 - col_lo + 4] = k
    return {"row_bytes": rb, "line_chunks": max(1, rb // CHUNK_BYTES), "nchunks": n, "instr": instr, "row": row,
            "chunk": chunk, "reads": reads, "outside": outside, "tmem": tm, "lane_col": lane_col,
            "replica": replica, "col_lo": col_lo, "ncols": lane_col.shape[1]}


def cp_simulated(launch, kernel: ir.Kernel) -> dict[str, Any] | None:
    """What the simulator's ``tcgen05.cp`` executions wrote in TMEM, beside the IR's static cells.

    Parameters
    ----------
    launch : tilemagic.result.LaunchResult or None
        A simulated launch whose ``hb`` records each ``tcgen05.cp`` execution (``hb.cp_writes``: per execution
        ``line``, ``key``, ``thread``, ``lanes`` and ``cols`` (every pair of the two is written), ``landed``
        (a commit of its thread completed it), ``barrier``, ``phase``).
    kernel : tilemagic.ir.nodes.Kernel

    Returns
    -------
    dict or None
        None without such a record.  Else ``written`` (bool ``(128, tmem_cols)``: cells a landed cp wrote),
        ``by_line`` (``{line: {"key", "executions", "landed", "cells"}}``), ``static`` (bool, the same shape:
        the cells the IR's ``TcgenCp`` nodes write, :func:`tmem_occupancy`), ``agrees`` (the two equal: the
        picture drawn from the IR is what the simulator did), ``never_landed`` (executions no commit completed).
    """
    hb = getattr(launch, "hb", None) if launch is not None else None
    recs = getattr(hb, "cp_writes", None) if hb is not None else None
    if not recs:
        return None
    ncols = max(0, int(kernel.tmem_cols or 0))
    written = np.zeros((TMEM_LANES, ncols), dtype=bool)
    by_line: dict[int, dict[str, Any]] = {}
    never = 0
    for rec in recs:
        ent = by_line.setdefault(int(rec.line), {"key": rec.key, "executions": 0, "landed": 0, "cells": 0})
        ent["executions"] += 1
        if not getattr(rec, "landed", True):
            never += 1
            continue
        ent["landed"] += 1
        lanes = np.asarray(rec.lanes, np.int64)
        cols = np.asarray(rec.cols, np.int64)
        lanes = lanes[(lanes >= 0) & (lanes < TMEM_LANES)]
        cols = cols[(cols >= 0) & (cols < ncols)]
        written[np.ix_(lanes, cols)] = True
        ent["cells"] = int(lanes.size * cols.size)
    occ = tmem_occupancy(kernel)
    static = np.zeros_like(written)
    for ins in occ["instructions"]:
        if ins["op"] == "cp":
            static[ins["cells"]["lane"], ins["cells"]["col"]] = True
    return {"written": written, "by_line": by_line, "static": static, "agrees": bool(np.array_equal(written, static)),
            "never_landed": never}


def cp_declines(records) -> list[dict[str, Any]]:
    """The ``smem->tmem`` why-table rows that declined and say where (``Candidate.detail``, a
    :class:`~tilemagic.lower.dispatch.DeclineDetail`), for the rejected-layout picture.

    Parameters
    ----------
    records : sequence of DispatchRecord
        ``result.dispatch`` (or a ``DispatchError``'s records).

    Returns
    -------
    list of dict
        ``line`` (the op's source line, or None), ``op`` (its text), ``reason`` (the decline's message),
        ``detail`` (the ``DeclineDetail``).
    """
    out = []
    for rec in records or ():
        for cand in getattr(rec, "candidates", ()):
            det = getattr(cand, "detail", None)
            if cand.variant == "smem->tmem" and det is not None:
                out.append({"line": getattr(rec, "line", None), "op": getattr(rec, "text", ""),
                            "reason": cand.declined or "", "detail": det})
    return out


def cp_decline_map(detail, nbytes: int, row_bytes: int | None = None) -> dict[str, Any]:
    """Where a declined smem -> tmem plan broke its rule, on the shared buffer's 16-byte chunks.

    Parameters
    ----------
    detail : tilemagic.lower.dispatch.DeclineDetail
        ``byte`` (offset of the chunk that breaks the rule, or None), ``expected`` (where the rule wanted it, or
        None), ``row`` / ``chunk`` (its place in one instruction), ``shape``, ``rule``.
    nbytes : int
        Bytes of the buffer ``detail.buffer``.
    row_bytes : int, optional
        Bytes per drawn row (default 128).

    Returns
    -------
    dict
        ``row_bytes``, ``line_chunks``, ``nchunks``, ``bad`` / ``expected`` (``(drawn row, chunk in row)`` of the
        offending chunk and of the wanted place, or None: not one place, or outside the buffer), ``bad_byte``,
        ``expected_byte``, ``rule``, ``shape``, ``row``, ``chunk``.
    """
    rb = int(row_bytes or LINE_CHUNKS * CHUNK_BYTES)
    lc = max(1, rb // CHUNK_BYTES)
    n = max(1, -(-int(nbytes) // CHUNK_BYTES))

    def at(b):
        if b is None or not 0 <= int(b) < n * CHUNK_BYTES:
            return None
        i = int(b) // CHUNK_BYTES
        return (i // lc, i % lc)

    return {"row_bytes": rb, "line_chunks": lc, "nchunks": n, "bad": at(detail.byte), "expected": at(detail.expected),
            "bad_byte": detail.byte, "expected_byte": detail.expected, "rule": detail.rule, "shape": detail.shape,
            "row": detail.row, "chunk": detail.chunk}


# ============================================================================ clusters (issue 13, milestone 2)
#: What put bytes into a CTA's shared memory (``ClusterReceipt.kind``): its own TMA load, a TMA multicast
#: (PTX ISA 9.0 §9.7.9.25.5.2), a dsmem ``cp.async.bulk.shared::cluster`` (§9.7.9.25.4.1), a generic store.
RECEIPT_KINDS: tuple[str, ...] = ("tma", "multicast", "dsmem", "store")
#: Bytes of one row of the cluster picture's byte map: a 128-byte shared-memory line (:data:`LINE_CHUNKS` ×
#: :data:`CHUNK_BYTES`, one wavefront of 32 banks × 4 bytes), whatever the buffer's shape.
ROW_BYTES = LINE_CHUNKS * CHUNK_BYTES


def cluster_size(kernel: ir.Kernel | None) -> int:
    """CTAs per cluster of a lowered kernel (``Kernel.cluster``; 1 without a kernel or a cluster)."""
    return max(1, int(getattr(kernel, "cluster", 1) or 1)) if kernel is not None else 1


def cluster_receipts(launch) -> tuple:
    """The simulator's record of which bytes of each CTA's shared buffers which CTA's statement wrote:
    ``launch.hb.cluster_receipts`` (``ClusterReceipt(dst_rank, buffer, byte_lo, byte_hi, src_rank, line,
    kind)``, read by attribute), ``()`` without a launch, a simulator report or a cluster."""
    hb = getattr(launch, "hb", None) if launch is not None else None
    return tuple(getattr(hb, "cluster_receipts", ()) or ())


def cluster_placement(kernel: ir.Kernel, receipts) -> dict[str, Any]:
    """Per CTA of a cluster, per shared buffer: which CTA's statement wrote each byte, and how.

    Parameters
    ----------
    kernel : tilemagic.ir.nodes.Kernel
        The lowered kernel: ``cluster`` (C, the CTAs) and its shared buffers (mbarriers and the TMEM address
        slot are not drawn: they are no data).
    receipts : sequence of ClusterReceipt
        The simulator's ``launch.hb.cluster_receipts``, read by attribute: ``dst_rank`` (the CTA whose shared
        memory received the bytes), ``buffer`` (its name), ``byte_lo``/``byte_hi`` (the bytes
        ``[byte_lo, byte_hi)`` of the buffer, its physical byte offsets), ``src_rank`` (the CTA whose
        statement wrote them), ``line`` (that statement's description line), ``kind`` (one of
        :data:`RECEIPT_KINDS`).  In landing order: where two receipts cover a byte, the later one wins
        (the byte's last writer).

    Returns
    -------
    dict
        ``ctas`` (C), ``row_bytes`` (:data:`ROW_BYTES`), ``buffers`` (list of dict ``name``, ``nbytes``, in
        declaration order; a buffer only a receipt names is added after them with the bytes it reaches),
        ``maps`` (``maps[r][name]``: dict of three ``(nbytes,)`` arrays, ``src`` int16 (the writing CTA,
        -1 where nothing landed), ``kind`` int8 (index into :data:`RECEIPT_KINDS`, -1) and ``line`` int32
        (-1)), ``runs`` (``runs[r]``: list of dict ``buffer``, ``lo``, ``hi`` (exclusive), ``src``, ``kind``,
        ``line``: maximal runs of bytes with the same writer, buffer by buffer), ``issues`` (list of dict
        ``src``, ``line``, ``kind``, ``buffer``, ``dst`` (the receiving CTAs, sorted), ``bytes`` (per
        receiving CTA, dict rank -> bytes): one per (writing CTA, statement, kind, buffer), so a multicast
        is one issue feeding several CTAs).

    Raises
    ------
    ValueError
        A receipt outside the cluster (a rank not in ``0 .. C-1``), outside its buffer, empty, or of an
        unknown kind: the simulator's record is inconsistent.
    """
    C = cluster_size(kernel)
    bufs: list[dict[str, Any]] = [{"name": b.name, "nbytes": int(b.nbytes)} for b in kernel.shared
            if not b.is_mbarrier and b is not kernel.tmem_addr and b.name != "tmem_addr"]
    size = {b["name"]: b for b in bufs}
    extra: set[str] = set()
    for rc in receipts:  # (a buffer the kernel does not declare: as many bytes as its receipts reach)
        if rc.buffer not in size:
            size[rc.buffer] = {"name": rc.buffer, "nbytes": 0}
            bufs.append(size[rc.buffer])
            extra.add(rc.buffer)
        if rc.buffer in extra:
            size[rc.buffer]["nbytes"] = max(size[rc.buffer]["nbytes"], int(rc.byte_hi))
    maps: list[dict[str, dict[str, np.ndarray]]] = [
        {b["name"]: {"src": np.full(b["nbytes"], -1, np.int16), "kind": np.full(b["nbytes"], -1, np.int8),
                     "line": np.full(b["nbytes"], -1, np.int32)} for b in bufs} for _ in range(C)]
    issues: dict[tuple, dict[str, Any]] = {}
    for rc in receipts:
        dst, src, lo, hi = int(rc.dst_rank), int(rc.src_rank), int(rc.byte_lo), int(rc.byte_hi)
        nb = size[rc.buffer]["nbytes"]
        if not (0 <= dst < C and 0 <= src < C):
            raise ValueError(f"cluster receipt {rc!r}: rank outside the cluster of {C} CTAs")
        if not 0 <= lo < hi <= nb:
            raise ValueError(f"cluster receipt {rc!r}: bytes outside {rc.buffer} ({nb} bytes)")
        if rc.kind not in RECEIPT_KINDS:
            raise ValueError(f"cluster receipt {rc!r}: kind not one of {', '.join(RECEIPT_KINDS)}")
        m = maps[dst][rc.buffer]
        m["src"][lo:hi], m["kind"][lo:hi], m["line"][lo:hi] = src, RECEIPT_KINDS.index(rc.kind), int(rc.line)
        iss = issues.setdefault((src, int(rc.line), rc.kind, rc.buffer),
                                {"src": src, "line": int(rc.line), "kind": rc.kind, "buffer": rc.buffer,
                                 "dst": [], "bytes": {}})
        if dst not in iss["dst"]:
            iss["dst"] = sorted(iss["dst"] + [dst])
        iss["bytes"][dst] = iss["bytes"].get(dst, 0) + hi - lo
    runs: list[list[dict[str, Any]]] = []
    for r in range(C):
        out = []
        for b in bufs:
            m = maps[r][b["name"]]
            if not m["src"].size:
                continue
            key = np.stack([m["src"].astype(np.int64), m["kind"].astype(np.int64), m["line"].astype(np.int64)])
            cut = np.flatnonzero(np.any(key[:, 1:] != key[:, :-1], axis=0)) + 1
            for lo, hi in zip([0, *cut.tolist()], [*cut.tolist(), m["src"].size]):
                if m["src"][lo] >= 0:
                    out.append({"buffer": b["name"], "lo": lo, "hi": hi, "src": int(m["src"][lo]),
                                "kind": RECEIPT_KINDS[int(m["kind"][lo])], "line": int(m["line"][lo])})
        runs.append(out)
    order = sorted(issues.values(), key=lambda i: (i["line"], i["src"], RECEIPT_KINDS.index(i["kind"]), i["buffer"]))
    return {"ctas": C, "row_bytes": ROW_BYTES, "buffers": bufs, "maps": maps, "runs": runs, "issues": order}


def cluster_summary(placement: dict[str, Any], limit: int = 20) -> list[str]:
    """One line per CTA of :func:`cluster_placement`: what its shared memory received, run by run.

    ``"CTA 1: S bytes 0–8191 from CTA 0 (multicast, L9), 8192–16383 from CTA 1 (multicast, L9)"`` (byte
    ranges inclusive, buffer by buffer, ``; `` between buffers); ``"CTA 2: nothing received"``; at most
    ``limit`` runs per CTA, then ``… N more runs``.
    """
    lines = []
    for r, runs in enumerate(placement["runs"]):
        if not runs:
            lines.append(f"CTA {r}: nothing received")
            continue
        parts: list[str] = []
        buf = None
        for k, run in enumerate(runs[:limit]):
            what = f"{run['lo']}–{run['hi'] - 1} from CTA {run['src']} ({run['kind']}, L{run['line']})"
            if run["buffer"] != buf:
                buf = run["buffer"]
                parts.append(f"{buf} bytes {what}")
            else:
                parts[-1] += f", {what}"
        more = f" … {len(runs) - limit} more runs" if len(runs) > limit else ""
        lines.append(f"CTA {r}: " + "; ".join(parts) + more)
    return lines
