"""copy_async dispatch: ``tcgen05.ld`` / ``tcgen05.st`` (tmem <-> local registers).

Variant ``tmem<->local`` of ``copy_async``, as TVM TIRx's ``tcgen05_ldst.py``.  The
direction comes from the memory scopes: tmem -> local is ``tcgen05.ld``,
local -> tmem is ``tcgen05.st``.  Only the instruction is emitted; completion
(``wait ld`` / ``wait st``) is the caller's job, as in TIRx.

The ``.32x32b`` path (PTX ISA §9.7.16.2.3, §9.7.16.8.3-4): a warpgroup moves a
128-row tile of a datapath-D TMEM buffer, thread ``t`` of warp ``w`` owning TMEM
lane ``32*(w%4) + t`` and register ``r`` owning column ``r``.  ``num`` is the width
in 32-bit columns, probed over 1, 2, 4, ..., 128; 16-bit dtypes sit two per 32-bit
cell and 8-bit four per cell (plain ``.b32``, no ``.pack::16b``/``.unpack::16b``,
as TVM).  The TMEM column comes from the region slice (the layout's ``TCol``
offset) plus the buffer's column inside the CTA's allocation.

The ``.16x64b/.16x128b/.16x256b`` paths, data paths F and B are recognised here
and declined with a reason until their lowering lands.
"""

from __future__ import annotations

import numpy as np

from ...ir import nodes as ir
from ...layout import tcgen05 as tc
from ..common import exec_scope_ok, linear_tid, scope_allowed, validate_copy_op
from ..dispatch import fail, predicate, register_dispatch

# PTX ISA Table 49: legal .num for .32x32b
_NUMS_32X32B = tuple(n for n in tc.NUMS if tc.is_legal_num("32x32b", n))


def _frag_shape(local_buf):
    """The tcgen05 shape a register layout equals structurally (frag(...)), or None."""
    from ...layout import tcgen05_atom_layout

    rows, cols = local_buf.shape if len(local_buf.shape) == 2 else (None, None)
    if rows not in (64, 128):
        return None
    for shape in ("16x64b", "16x128b", "16x256b", "32x32b"):
        try:
            ref = tcgen05_atom_layout(shape, (rows, cols), local_buf.elem_bytes * 8)
        except ValueError:
            continue
        if local_buf.layout.is_equal(ref):
            return shape
    return None


def _emit_32x32b(op, ctx, tmem, local):
    tbuf, lbuf = tmem.buf, local.buf
    epc = 4 // tbuf.elem_bytes  # elements per 32-bit TMEM cell / register
    if len(lbuf.shape) != 2 or lbuf.shape[0] != 128:
        fail(f"the .32x32b path needs a 128-row register tile (one row per thread of the warpgroup); "
             f"{lbuf.name} is {list(lbuf.shape)}")
    if local.begins[0] != 0 or local.extents[0] != 128 or tmem.begins[0] != 0 or tmem.extents[0] != 128:
        fail("the .32x32b path moves all 128 rows: slice columns only")
    width = local.extents[1]
    if width % epc:
        fail(f"width {width} {lbuf.dtype} is not a whole number of 32-bit columns ({epc} per column)")
    n = width // epc
    if n not in _NUMS_32X32B:
        fail(f"Width {width} is not valid for tcgen05.ld/st with shape 32x32b "
             f"({n} 32-bit columns; num must be one of {', '.join(map(str, _NUMS_32X32B))})")
    num = n
    # register side: row r -> thread r (tid_in_wg), columns contiguous from a 32-bit-aligned slot
    rows = np.arange(128)[:, None]
    cols = local.begins[1] + np.arange(width)[None, :]
    lin = (rows * lbuf.shape[1] + cols).reshape(-1)
    lc = lbuf.layout.apply(lin)
    tid = linear_tid(lc, lin.size)
    m = lc.get("m", np.zeros_like(lin)).reshape(128, width)
    if not np.array_equal(tid.reshape(128, width) % 128, np.repeat(np.arange(128)[:, None], width, 1)):
        fail(f"register layout {lbuf.layout} does not give row r to thread r of the warpgroup (the .32x32b "
             f"fragment); use S[(128, W) : (1@tid_in_wg, 1)] or frag(32x32b)")
    if not (np.all(m == m[:, :1] + np.arange(width)) and np.all(m[:, 0] == m[0, 0])):
        fail(f"register layout {lbuf.layout} does not hold a row's columns in consecutive registers")
    if m[0, 0] % epc:
        fail(f"the register slice starts at element {int(m[0, 0])}, inside a 32-bit register")
    reg_base = int(m[0, 0]) // epc
    # TMEM side: datapath D, column window from the layout slice
    win = tbuf.layout.slice(tbuf.shape, tmem.region)
    if win is None:
        fail(f"TMEM region {tmem} is not a window of {tbuf.name}'s layout {tbuf.layout}")
    lane_off, col_off = win.offset_of("TLane"), win.offset_of("TCol")
    if lane_off:
        fail(f"TMEM window has TLane offset {lane_off}; the .32x32b path covers all 128 lanes")
    if col_off % epc:
        fail(f"TMEM column offset {col_off} {tbuf.dtype} falls inside a 32-bit column")
    col = tbuf.tmem_col + col_off // epc
    kind = "ld" if op.src.buf.scope == "tmem" else "st"
    node = ir.TcgenLdSt(kind, "32x32b", num, lbuf, reg_base, num, ctx.builder.tmem_addr, 0, col, tmem=tbuf)
    return [node], f"{node.chain} at TMEM column {col} (1 instruction per warp, 4 warps)"


def _emit_tmem_local(op, ctx):
    tmem, local = (op.src, op.dst) if op.src.buf.scope == "tmem" else (op.dst, op.src)
    tbuf, lbuf = tmem.buf, local.buf
    if tbuf.datapath == "B":
        n_half = tbuf.shape[1] // 2
        fail(f"{tbuf.name} uses datapath B (the cta_group::2 M=64 image): its one-instruction "
             f".32x32b.x{n_half} path is not lowered yet")
    frag = _frag_shape(lbuf)
    if frag is not None and frag != "32x32b":
        fail(f"{lbuf.name} is a frag({frag}) fragment: the .{frag} path is not lowered yet")
    if tbuf.datapath == "F":
        fail(f"{tbuf.name} uses datapath F (16 of each warp's 32 lanes); .32x32b would also touch the other "
             f"sub-slab — F needs a .16x*b fragment, whose path is not lowered yet")
    if tbuf.datapath != "D":
        fail(f"TMEM layout {tbuf.layout} of {tbuf.name} is none of datapath D, F, B")
    return _emit_32x32b(op, ctx, tmem, local)


# === Variant: copy_async/tmem<->local (priority=10) ===
#
# When: a warpgroup copies between a TMEM buffer and a register tile of the same
#       dtype and extents.
# Emits: one tcgen05.{ld,st}.sync.aligned.32x32b.x<num>.b32 per warp, TMEM address
#        tmem_addr[0] + (row 0, column), registers = the tile's 32-bit words.
@register_dispatch(
    "copy_async",
    "cuda",
    variant="tmem<->local",
    priority=10,
    when=[
        predicate("validate_copy_op", validate_copy_op),
        predicate("exec_scope", exec_scope_ok, expected_scopes=["warpgroup"]),
        predicate("storage_scope", scope_allowed, allowed_pairs=[("tmem", "local"), ("local", "tmem")]),
    ],
)
def copy_async_schedule_tmem_local(op, ctx):
    return _emit_tmem_local(op, ctx)
