"""copy_async dispatch: ``tcgen05.ld`` / ``tcgen05.st`` (tmem <-> local registers).

Variant ``tmem<->local`` of ``copy_async``, as TVM TIRx's ``tcgen05_ldst.py``.  The
direction comes from the memory scopes: tmem -> local is ``tcgen05.ld``,
local -> tmem is ``tcgen05.st``.  Only the instructions are emitted; completion
(``wait ld`` / ``wait st``) is the caller's job, as in TIRx.

Three paths, tried in TVM's order (PTX ISA 9.0 §9.7.16.2.3, §9.7.16.8.3-4, §9.7.16.10.5):

1. **Datapath B** (the per-CTA M=64 accumulator of ``cta_group::2``), recognised
   from the TMEM buffer first: a logical ``(64, N)`` fp32 tile whose right half
   sits under the left half in lanes 64..127 moves as one ``.32x32b.x{N/2}``
   over all 128 lanes; the register side must be the Layout B image
   ``frag(32x32b)`` of 64 rows and both sides must be whole.
2. **``.16x64b`` / ``.16x128b`` / ``.16x256b``**, chosen when the register
   layout equals ``frag(16x*b)`` structurally (after canonicalisation, TVM's
   ``_match_tcgen05_atom_layout``).  ``num`` comes from the column count,
   ``cols // (col_factor * elem_per_32b)`` with col_factor 2 / 4 / 8.  One
   instruction covers one 16-lane half (sub-slab) of each warp's 32-lane
   quadrant: a 128-row fragment on datapath D issues twice (PTX row immediate
   0 and 16), a 64-row fragment once, at row ``16 * sub_slab`` where the
   sub-slab is the TMEM window's ``TLane`` offset (0, or 16 for
   ``datapath(F, sub_slab=1)``).
3. **``.32x32b``** otherwise: thread ``t`` of warp ``w`` owns TMEM lane
   ``32*(w%4) + t``; ``num`` is the width in 32-bit columns, probed over 1, 2,
   4, ..., 128.

Which TMEM data path takes which atom is TVM's ``_TMEM_ATOM_COMPAT`` table:
D takes ``.32x32b`` and ``.16x*b`` at 64 or 128 rows, F only ``.16x*b`` at 64
rows, B only its own path.  Column slices work on both sides (a slice of a
``.16x*b`` fragment that is a whole number of atoms issues a smaller ``num`` at
the slice's register offset); the TMEM column is the window's ``TCol`` offset
plus the buffer's place in the CTA's allocation (``at X + COLS``).

Units: regions and ``TCol`` count elements; PTX columns, ``num`` and registers
count 32-bit cells.  16-bit dtypes sit two per cell, 8-bit four per cell
(8-bit on ``.32x32b`` only), with the plain ``.b32`` form: no
``.pack::16b``/``.unpack::16b`` (as TVM, which keeps 16-bit TMEM dense).
Every rule that does not hold declines with :func:`~tilemagic.lower.dispatch.fail`,
naming the rule and the fix, so it shows in the op's why-table.
"""

from __future__ import annotations

import numpy as np

from ...ir import nodes as ir
from ...arch import tcgen05 as tc
from ...layout import TileLayout, tcgen05_atom_layout, tmem_datapath_layout
from ...layout.tile import Iter
from ..common import copy_predicates, decline_past_edge, linear_tid, validate_copy_op
from ..dispatch import DispatchContext, EmitSummary, Emitted, Verdict, fail, register_dispatch
from ..ops import CopyOp, RegionRef

# PTX ISA 9.0 Table 49: legal .num per shape (1..128 in powers of two, at most 128 registers)
_NUMS_32X32B = tc.LEGAL_NUMS["32x32b"]

# The .16x*b shapes the atom matcher probes, in TVM's order (.32x32b is never matched:
# a plain (128, K) register layout falls through to the .32x32b path).
_ATOM_16XNB = ("16x64b", "16x128b", "16x256b")
_FRAG_HINT = "frag(16x64b), frag(16x128b) or frag(16x256b)"

# TVM _TMEM_ATOM_COMPAT: (datapath, atom kind, fragment rows) -> accepted, and why (PTX ISA 9.0 §9.7.16.10.5).
# B never reaches the table: it is routed to its own path.
_TMEM_ATOM_COMPAT = {
    ("D", "32x32b", 128): True,  # all 128 lanes, 32 per warp
    ("D", "16x*b", 64): True,  # lanes 0..15 of each warp's quadrant (the rest is untouched)
    ("D", "16x*b", 128): True,  # two issues, PTX row immediate 0 and 16
    ("F", "32x32b", 128): False,  # F uses 16 of each warp's 32 lanes; .32x32b moves all 32
    ("F", "16x*b", 64): True,  # F's rows are exactly the atom's 16-lane scatter
    ("F", "16x*b", 128): False,  # F holds one sub-slab; the second issue would move the other
}


def _epc(buf: ir.Buffer) -> int:
    """Elements per 32-bit TMEM cell / register."""
    return 4 // buf.elem_bytes


def _layout(buf: ir.Buffer) -> TileLayout:
    assert isinstance(buf.layout, TileLayout), "local and tmem buffers carry a TileLayout"
    return buf.layout


def _is_frag(lbuf: ir.Buffer, shape: str, rows: tuple[int, ...]) -> bool:
    """A 2-D ``lbuf`` of one of ``rows`` rows whose layout equals ``frag(shape)`` (canonical forms compared)."""
    if len(lbuf.shape) != 2 or lbuf.shape[0] not in rows:
        return False
    try:
        return _layout(lbuf).is_equal(tcgen05_atom_layout(shape, (lbuf.shape[0], lbuf.shape[1]), lbuf.elem_bytes * 8))
    except ValueError:
        return False


def _match_tcgen05_atom_layout(lbuf: ir.Buffer) -> tuple[str, int, int] | None:
    """``(shape, num, rows)`` when ``lbuf``'s layout equals ``frag(16x*b)`` of 64 or 128 rows, else None
    (TVM ``_match_tcgen05_atom_layout``); ``num`` is ``cols // (COL_FACTOR[shape] * elem_per_32b)``."""
    for shape in _ATOM_16XNB:
        if _is_frag(lbuf, shape, (64, 128)):
            return shape, lbuf.shape[1] // (tc.COL_FACTOR[shape] * _epc(lbuf)), lbuf.shape[0]
    return None


def _compat_refusal(tbuf: ir.Buffer, lbuf: ir.Buffer, atom_kind: str, frag_rows: int) -> str:
    """Why ``_TMEM_ATOM_COMPAT`` refuses (datapath, atom, rows), and the fix."""
    head = (f"{tbuf.name} uses datapath {tbuf.datapath} and {lbuf.name} is a {frag_rows}-row {atom_kind} "
            f"fragment: TVM _TMEM_ATOM_COMPAT refuses this pairing (PTX ISA 9.0 §9.7.16.10.5)")
    if tbuf.datapath == "F" and atom_kind == "32x32b":
        return (f"{head}; datapath F uses 16 of each warp's 32 lanes and .32x32b moves all 32, so it would also "
                f"touch the other sub-slab. Allocate the fragment with {_FRAG_HINT} as "
                f"{lbuf.dtype}[64, N]")
    return (f"{head}; datapath F holds one 16-lane sub-slab per warp and a 128-row .16x*b fragment issues at "
            f"rows 0 and 16, the second of which is not part of F. Use a 64-row fragment "
            f"({lbuf.dtype}[64, N] @ frag(...)) for datapath F")


def _tmem_window(tmem: RegionRef, lbuf: ir.Buffer, atom_kind: str, frag_rows: int) -> tuple[int, int, int]:
    """``(width, col_off, sub_slab)`` of the TMEM region (TVM ``_tmem_window``).

    The pairing is gated by :data:`_TMEM_ATOM_COMPAT`; the region's layout slice
    must be the data path's own layout for the window width (D:
    ``S[(rows, w) : (1@TLane, 1@TCol)]``, F: ``datapath(F)`` of width ``w``),
    carrying only offsets.  ``width`` and ``col_off`` are in elements;
    ``sub_slab`` is the ``TLane`` offset / 16 (0 or 1, F only).
    """
    tbuf = tmem.buf
    if tbuf.datapath not in ("D", "F"):
        fail(f"TMEM layout {tbuf.layout} of {tbuf.name} is none of datapath D, F, B "
             f"(declare it @ datapath(D), datapath(F, sub_slab=0|1) or datapath(B))")
    if not _TMEM_ATOM_COMPAT[(tbuf.datapath, atom_kind, frag_rows)]:
        fail(_compat_refusal(tbuf, lbuf, atom_kind, frag_rows))
    if tmem.extents[0] != frag_rows:
        fail(f"the {atom_kind} fragment {lbuf.name} has {frag_rows} rows but the TMEM region {tmem} has "
             f"{tmem.extents[0]}: the copy moves whole fragments, slice columns only")
    win = _layout(tbuf).slice(tbuf.shape, tmem.region)
    if win is None:
        fail(f"TMEM region {tmem} is not a window of {tbuf.name}'s layout {tbuf.layout}")
    width = tmem.extents[1]
    if tbuf.datapath == "D":
        base = TileLayout((Iter(frag_rows, 1, "TLane"), Iter(width, 1, "TCol")))
    else:
        base = tmem_datapath_layout("F", 64, width)
    if not win.is_equal(TileLayout(base.shard, base.replica, win.offset)):
        fail(f"TMEM window {win} of {tbuf.name} is not a datapath-{tbuf.datapath} window "
             f"{base} (+ offsets)")
    lane_off, col_off = win.offset_of("TLane"), win.offset_of("TCol")
    if lane_off not in (0, 16):
        fail(f"TMEM window {tmem} has TLane offset {lane_off}; only 0 or 16 (the datapath F sub-slab) fit the "
             f"PTX row immediate — a tcgen05 copy moves rows 0.. of every warp's 32-lane quadrant")
    if lane_off and tbuf.datapath != "F":
        fail(f"TMEM window {tmem} has TLane offset {lane_off}, but datapath {tbuf.datapath} spans both "
             f"sub-slabs and cannot carry one; start the rows at 0 (or declare the buffer @ datapath(F, sub_slab=1))")
    epc = _epc(tbuf)
    if col_off % epc:
        fail(f"TMEM column offset {col_off} {tbuf.dtype} falls inside a 32-bit column ({epc} elements per column)")
    return width, col_off, lane_off // 16


def _ldst(op: CopyOp, ctx: DispatchContext, shape: str, num: int, reg_base: int, regs: int, row: int,
          col: int) -> ir.TcgenLdSt:
    """One ``tcgen05.ld`` (tmem -> local) or ``tcgen05.st`` (local -> tmem) of the op's two buffers."""
    kind, tmem, local = ("ld", op.src, op.dst) if op.src.buf.scope == "tmem" else ("st", op.dst, op.src)
    assert ctx.builder.tmem_addr is not None, "a kernel with TMEM has its address slot"
    return ir.TcgenLdSt(kind, shape, num, local.buf, reg_base, regs, ctx.builder.tmem_addr, row, col, tmem=tmem.buf)


# ----------------------------------------------------------------------------- .32x32b
def _emit_32x32b(op: CopyOp, ctx: DispatchContext, tmem: RegionRef, local: RegionRef) -> Emitted:
    tbuf, lbuf = tmem.buf, local.buf
    epc = _epc(tbuf)
    if tbuf.datapath == "F":
        fail(_compat_refusal(tbuf, lbuf, "32x32b", 128))
    if _is_frag(lbuf, "32x32b", (64,)):  # the register image of a datapath-B tile
        fail(f"{lbuf.name} is a 64-row frag(32x32b), the register image of a datapath B tile; declare "
             f"{tbuf.name} @ datapath(B) as {tbuf.dtype}[64, N] (or give {lbuf.name} 128 rows)")
    if len(lbuf.shape) != 2 or lbuf.shape[0] != 128:
        fail(f"the .32x32b path needs a 128-row register tile (one row per thread of the warpgroup); "
             f"{lbuf.name} is {list(lbuf.shape)} — for 64 rows use {_FRAG_HINT}")
    if local.begins[0] != 0 or local.extents[0] != 128:
        fail("the .32x32b path moves all 128 rows: slice columns only")
    width = local.extents[1]
    if width % epc:
        fail(f"width {width} {lbuf.dtype} is not a whole number of 32-bit columns ({epc} per column)")
    num = width // epc
    if num not in _NUMS_32X32B:
        fail(f"Width {width} is not valid for tcgen05.ld/st with shape 32x32b "
             f"({num} 32-bit columns; num must be one of {', '.join(map(str, _NUMS_32X32B))})")
    # register side: row r -> thread r (tid_in_wg), columns contiguous from a 32-bit-aligned slot
    rows = np.arange(128)[:, None]
    cols = local.begins[1] + np.arange(width)[None, :]
    lin = (rows * lbuf.shape[1] + cols).reshape(-1)
    lc = _layout(lbuf).apply(lin)
    tid = linear_tid(lc, lin.size)
    m = lc.get("m", np.zeros_like(lin)).reshape(128, width)
    if not np.array_equal(tid.reshape(128, width) % 128, np.repeat(np.arange(128)[:, None], width, 1)):
        fail(f"register layout {lbuf.layout} does not give row r to thread r of the warpgroup (the .32x32b "
             f"fragment); use S[(128, W) : (1@tid_in_wg, 1)], frag(32x32b) or {_FRAG_HINT}")
    if not (np.all(m == m[:, :1] + np.arange(width)) and np.all(m[:, 0] == m[0, 0])):
        fail(f"register layout {lbuf.layout} does not hold a row's columns in consecutive registers")
    if m[0, 0] % epc:
        fail(f"the register slice starts at element {int(m[0, 0])}, inside a 32-bit register")
    reg_base = int(m[0, 0]) // epc
    _, col_off, _ = _tmem_window(tmem, lbuf, "32x32b", 128)
    col = tbuf.tmem_col + col_off // epc
    node = _ldst(op, ctx, "32x32b", num, reg_base, num, 0, col)
    return [node], EmitSummary(node.chain, 1, "warp", at=f"TMEM column {col}")


# ----------------------------------------------------------------------------- .16x64b / .16x128b / .16x256b
def _emit_16xnb(op: CopyOp, ctx: DispatchContext, tmem: RegionRef, local: RegionRef, shape: str, num: int,
                frag_rows: int) -> Emitted:
    tbuf, lbuf = tmem.buf, local.buf
    epc = _epc(lbuf)
    unit = tc.COL_FACTOR[shape] * epc  # elements per unit of .num
    regs_per_slab = tc.REGS_PER_NUM[shape] * num  # 32-bit registers per thread per 16-row slab
    n_slabs = frag_rows // 64
    _, col_off, sub_slab = _tmem_window(tmem, lbuf, "16x*b", frag_rows)
    if local.begins[0] != 0 or local.extents[0] != frag_rows:
        fail(f"the .{shape} path moves all {frag_rows} rows of the fragment {lbuf.name}: slice columns only")
    c0, w = local.begins[1], local.extents[1]
    if w % epc or c0 % epc:
        fail(f"the column slice {c0}:{c0 + w} of {lbuf.name} is not a whole number of 32-bit columns "
             f"({epc} {lbuf.dtype} per column)")
    if w % unit or c0 % unit:
        fail(f"the column slice {c0}:{c0 + w} of {lbuf.name} does not cover whole .{shape} atoms of {unit} "
             f"{lbuf.dtype} ({tc.COL_FACTOR[shape]} 32-bit columns each): its num would be {w / unit:g}. "
             f"Slice at multiples of {unit} columns")
    num_eff = w // unit
    if not tc.is_legal_num(shape, num_eff):
        fail(f"the column slice {c0}:{c0 + w} of {lbuf.name} gives .{shape}.x{num_eff}, not a legal num "
             f"(PTX ISA 9.0 Table 49: {', '.join(map(str, tc.LEGAL_NUMS[shape]))}); "
             "slice a power-of-two number of atoms")
    regs = tc.REGS_PER_NUM[shape] * num_eff
    reg_base = (c0 // unit) * tc.REGS_PER_NUM[shape]  # = c0 * regs_per_slab // width (TVM local_reg_base)
    col = tbuf.tmem_col + col_off // epc
    lds = [_ldst(op, ctx, shape, num_eff, reg_base + slab * regs_per_slab, regs, 16 * (sub_slab + slab), col)
           for slab in range(n_slabs)]
    rows = " and ".join(str(n.row) for n in lds)
    lanes = "32w+16+i" if sub_slab else "32w+i"
    where = f"fragment rows 16w+i at TMEM lanes {lanes}" if frag_rows == 64 else "fragment row r at TMEM lane r"
    return [*lds], EmitSummary(lds[0].chain, n_slabs, "warp", notes=(where,),
                               at=f"row{'s' if n_slabs > 1 else ''} {rows}, TMEM column {col}")


# ----------------------------------------------------------------------------- datapath B
def _emit_datapath_b(op: CopyOp, ctx: DispatchContext, tmem: RegionRef, local: RegionRef) -> Emitted:
    """One ``.32x32b.x{N/2}`` over all 128 lanes for a datapath-B ``(64, N)`` tile (TVM ``_emit_datapath_b_path``)."""
    tbuf, lbuf = tmem.buf, local.buf
    if tbuf.elem_bytes != 4:
        fail(f"datapath B readback expects an fp32 fragment (32-bit cells), got dtype={tbuf.dtype}: the "
             f"cta_group::2 M=64 image holds one element per 32-bit TMEM cell; declare {tbuf.name} and "
             f"{lbuf.name} float32 (16-bit data goes through datapath D or F)")
    match = _match_tcgen05_atom_layout(lbuf)
    if match is not None:
        fail(f"{tbuf.name} uses datapath B, which moves as one .32x32b over all 128 lanes; {lbuf.name} is a "
             f"frag({match[0]}) fragment, which reads the wrong physical lanes and columns. Allocate the "
             f"fragment with frag(32x32b) as {lbuf.dtype}[64, N]")
    if len(lbuf.shape) != 2 or lbuf.shape[0] != 64:
        fail(f"datapath B (cta_group::2 M=64) fragment must be (64, N); {lbuf.name} is {list(lbuf.shape)} and a "
             f"128-row .32x32b fragment reads the wrong region. Allocate the fragment with frag(32x32b) as "
             f"{lbuf.dtype}[64, N]")
    n = lbuf.shape[1]
    try:
        ref = tcgen05_atom_layout("32x32b", (64, n), lbuf.elem_bytes * 8)
    except ValueError as e:  # odd N, or N/2 not a legal .num
        fail(f"datapath B: {e}")
    if not _layout(lbuf).is_equal(ref):
        fail(f"datapath B requires the Layout B register fragment {ref} (frag(32x32b) of 64 rows); "
             f"{lbuf.name} has {lbuf.layout}. Allocate the fragment with frag(32x32b) as {lbuf.dtype}[64, {n}]")
    for side, what in ((tmem, "TMEM buffer"), (local, "register fragment")):
        if not side.is_full:
            fail(f"datapath B copy must cover the full (64, N) {what} {side.buf.name} (got {side}): logical "
                 f"columns c and c + N/2 share a TMEM column in lanes 0..63 and 64..127, so a column slice is "
                 f"not contiguous after the lane split. Copy the whole tile, or alias a narrower "
                 f"datapath(B) buffer with `at {tbuf.name} + COLS`")
    win = _layout(tbuf).slice(tbuf.shape, tmem.region)
    col = tbuf.tmem_col + (win.offset_of("TCol") if win is not None else 0)
    node = _ldst(op, ctx, "32x32b", n // 2, 0, n // 2, 0, col)
    return [node], EmitSummary(node.chain, 1, "warp", notes=(f"columns {n // 2}.. in lanes 64..127",),
                               at=f"TMEM column {col}: datapath B (64, {n}) as one (128, {n // 2}) .32x32b image")


def _validate_tmem_copy(op: CopyOp, ctx: DispatchContext) -> Verdict:
    """``validate_copy_op``, with the data-path rule named when the row counts differ."""
    ok, why = validate_copy_op(op, ctx)
    if ok:
        return ok, why
    tmem, local = (op.src, op.dst) if op.src.buf.scope == "tmem" else (op.dst, op.src)
    if tmem.buf.scope != "tmem" or local.buf.scope != "local" or len(local.extents) != 2:
        return ok, why
    if tmem.buf.datapath == "F" and local.extents[0] == 128:
        why = f"{why}" + ("; datapath F holds 64 rows and takes only a 64-row .16x*b fragment (TVM _TMEM_ATOM_COMPAT): "
                f"declare {local.buf.name} as [64, N] @ {_FRAG_HINT}")
    elif tmem.buf.datapath == "B" and local.extents[0] == 128:
        why = f"{why}" + (f"; datapath B is a (64, N) tile: a 128-row .32x32b fragment reads the wrong region. "
                f"Allocate the fragment with frag(32x32b) as {local.buf.dtype}[64, N]")
    return ok, why


# === Variant: copy_async/tmem<->local (priority=10) ===
#
# When: a warpgroup copies between a TMEM buffer and a register tile of the same
#       dtype and extents.
# Emits: datapath B -> one tcgen05.{ld,st}.sync.aligned.32x32b.x<N/2>.b32 per warp;
#        a frag(16x*b) register tile -> one tcgen05.{ld,st}.sync.aligned.<shape>.x<num>.b32
#        per 16-row slab (PTX row immediate 16*(sub_slab + slab));
#        otherwise one tcgen05.{ld,st}.sync.aligned.32x32b.x<num>.b32 per warp.
#        TMEM address tmem_addr[0] + (row, 32-bit column), registers = the tile's 32-bit words.
@register_dispatch("copy_async", "cuda", variant="tmem<->local", priority=10, when=copy_predicates(
    ["warpgroup"], [("tmem", "local"), ("local", "tmem")], validate=_validate_tmem_copy))
def copy_async_schedule_tmem_local(op: CopyOp, ctx: DispatchContext) -> Emitted:
    decline_past_edge(op)
    tmem, local = (op.src, op.dst) if op.src.buf.scope == "tmem" else (op.dst, op.src)
    if tmem.buf.datapath == "B":
        return _emit_datapath_b(op, ctx, tmem, local)
    match = _match_tcgen05_atom_layout(local.buf)
    if match is not None:
        return _emit_16xnb(op, ctx, tmem, local, *match)
    return _emit_32x32b(op, ctx, tmem, local)
