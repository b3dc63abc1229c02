"""Register-tile copy: ``local <-> global/shared`` (variant ``reg``, priority 10).

The register layout decides who moves what: its thread axes (``laneid``,
``tid_in_wg``, ``wid_in_wg``, ``warpid``, ``tx``) give each element's owning
thread, its ``m`` coordinate the register slot.  Every thread copies its own
elements with the widest vector ``ld``/``st`` (16, 8, 4, 2 or 1 bytes) whose
register run and memory run are both contiguous and naturally aligned — TVM
TIRx's old ``reg`` variant (``vec_auto_reg.py`` in apache-tvm 0.27.0.post1), which the ``fallback``
seed names as one of the faster variants.

How the split is found (our own method, checked numerically rather than by
layout algebra; the machinery is shared with ``gmem_smem`` and ``ldstmatrix`` in
``lower/common.py``): the region is enumerated once; per thread the elements are
sorted by register slot, which must be the same sequence in every thread
(:func:`~tilemagic.lower.common.thread_split`); the vector is the widest whose runs
are contiguous and aligned in the registers and in memory (at most a swizzle
chunk), and its register index and memory address per iteration and thread are
fitted as digit expressions of the loop variable and the thread id
(:func:`~tilemagic.lower.common.emit_iterations`).  Threads past the layout's last
one idle behind a guard.  Anything else declines with the reason, so a later
variant (or the fallback) can take the copy.
"""

from __future__ import annotations

from ...arch.ptx import PTX_FORM
from ...ir import nodes as ir
from ..common import (
    IndexTable,
    copy_predicates,
    emit_iterations,
    guard_first_threads,
    memory_index,
    region_coords,
    register_layout_ok,
    runs_ok,
    swizzle_chunk,
    thread_split,
    vector_lengths,
)
from ..dispatch import DispatchContext, EmitSummary, Emitted, predicate, register_dispatch
from ..ops import CopyOp

_REG_PAIRS = [("global", "local"), ("local", "global"), ("shared", "local"), ("local", "shared")]


# === Variant: copy/reg (priority=10) ===
#
# When: one side is a register tile (local) whose layout's thread axes fit the exec
#       scope, the other global or shared memory; every thread holds its part of the
#       region in the same register slots.
# Emits: per thread, a (serial) loop of vector ``ld.<space>.v4.u32``-style moves
#        between its registers and memory; no barrier.
@register_dispatch("copy", "cuda", variant="reg", priority=10, when=copy_predicates(
    ["thread", "warp", "warpgroup", "cta"], _REG_PAIRS, predicate("register_layout", register_layout_ok)))
def copy_schedule_reg(op: CopyOp, ctx: DispatchContext) -> Emitted:
    load = op.dst.buf.scope == "local"
    local, mem = (op.dst, op.src) if load else (op.src, op.dst)
    lbuf, mbuf = local.buf, mem.buf
    eb = lbuf.elem_bytes
    tvar, S, order, M = thread_split(local, ctx)
    K = M.size
    G = memory_index(mem)[order].reshape(S, K)
    C = region_coords(mem)[:, order].reshape(-1, S, K)
    cap = swizzle_chunk(mbuf)
    # widest vector: contiguous in registers and in memory, naturally aligned on both sides
    for v in vector_lengths(eb, cap):
        if runs_ok(M, v) and runs_ok(G, v):
            break
    n = K // v
    regs = IndexTable(lbuf, M[::v].reshape(n, 1))
    addrs = IndexTable(mbuf, G[:, ::v].T, C[:, :, ::v].transpose(0, 2, 1))

    body, how = emit_iterations(ctx, n, [regs, addrs] if load else [addrs, regs],  # destination first
                                lambda di, si: ir.VecMove(op.dst.buf, di, op.src.buf, si, v), tvar=tvar, threads=S,
                                what="vector move")
    body, how = guard_first_threads(body, local, ctx, tvar, S, how)
    notes = (f"swizzle chunk caps at {cap} elements",) if cap is not None else ()
    return body, EmitSummary(f"{'ld' if load else 'st'}.{mbuf.scope}.{PTX_FORM[v * eb]}", n,
                             moves=f"{v} {lbuf.dtype} = {v * eb} B each", how=how, notes=notes)
