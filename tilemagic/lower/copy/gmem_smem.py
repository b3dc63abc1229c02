"""Synchronous ``global <-> shared`` copy (variant ``gmem_smem``, priority 10).

Neither side is a register tile, so nothing in the layouts says which thread moves
what: the split is synthesized from the exec scope, as TVM TIRx's old ``gmem_smem``
variant (``vec_auto_gmem_smem.py`` + ``_common.align_layouts_gs`` in apache-tvm 0.27.0.post1) does.  The
region's elements, in row-major order over the region (the order the global side
stores them in, which drives the split as in TVM), are cut into ``[outer, threads,
vec]``: thread ``t`` of the scope moves vectors ``f * threads + t`` for ``f`` in
``range(outer)``, each ``vec`` elements wide, with one ``ld.global``/``st.shared`` (or
``ld.shared``/``st.global``) pair through registers.  ``vec`` is the widest of 128, 64,
32, 16, 8 bits (then one element) such that every vector is contiguous and naturally
aligned in *both* buffers, after the shared layout (permuted ``S[...]`` or an XOR
swizzle, whose chunk of ``2**per_element`` elements caps the width, as in TVM) — and
such that ``threads * vec`` divides the region.  The outer loop is serial (TVM keeps a
serial loop: unrolling floods the kernel).  No barrier is inserted: the caller writes
``cta_sync``.

Declines (TVM's reasons) when the scope does not split the region evenly ("region
size 24 not divisible by thread_cnt=32"), so a 4×6 tile at warp scope falls to the
``fallback``.
"""

from __future__ import annotations

import numpy as np

from ...arch.ptx import PTX_FORM
from ...arch.threads import SCOPE_TID
from ...ir import nodes as ir
from ..common import (
    IndexTable,
    copy_predicates,
    emit_iterations,
    memory_index,
    region_coords,
    runs_ok,
    swizzle_chunk,
    vector_lengths,
)
from ..dispatch import DispatchContext, EmitSummary, Emitted, Verdict, predicate, register_dispatch
from ..ops import CopyOp, RegionRef

_GMEM_SMEM_PAIRS = [("global", "shared"), ("shared", "global")]


def _divides_thread_cnt(op: CopyOp, ctx: DispatchContext) -> Verdict:
    """The region's element count must be a multiple of the scope's threads (TVM ``_divides_thread_cnt``)."""
    n, t = op.dst.numel, ctx.scope_threads
    if n % t:
        return False, f"region size {n} not divisible by thread_cnt={t}"
    return True, None


# === Variant: copy/gmem_smem (priority=10) ===
#
# When: global -> shared or shared -> global at thread/warp/warpgroup/cta scope, with
#       all threads of the scope active (always, in this language: an op has no guard)
#       and a region whose element count the scope's threads divide.
# Emits: ``for f in T.grid(outer)``: one vector ``ld.<src>`` into registers and one
#        ``st.<dst>`` per thread; the widest width aligned on both sides.  No barrier.
@register_dispatch("copy", "cuda", variant="gmem_smem", priority=10, when=copy_predicates(
    ["thread", "warp", "warpgroup", "cta"], _GMEM_SMEM_PAIRS, predicate("divides_thread_cnt", _divides_thread_cnt)))
def copy_schedule_gmem_smem(op: CopyOp, ctx: DispatchContext) -> Emitted:
    dst, src = op.dst, op.src
    eb = dst.buf.elem_bytes
    T = ctx.scope_threads
    n = dst.numel
    d_idx, s_idx = memory_index(dst), memory_index(src)
    shared = dst if dst.buf.scope == "shared" else src
    cap = swizzle_chunk(shared.buf)
    for v in vector_lengths(eb, cap):
        if n % (T * v) == 0 and runs_ok(d_idx, v) and runs_ok(s_idx, v):
            break
    outer = n // (T * v)
    tvar = ir.ThreadVar(SCOPE_TID[ctx.scope_kind]) if T > 1 else None

    def table(region: RegionRef, idx: np.ndarray) -> IndexTable:
        starts = idx[::v].reshape(outer, T)
        coords = region_coords(region)[:, ::v].reshape(-1, outer, T)
        return IndexTable(region.buf, starts, coords)

    body, how = emit_iterations(ctx, outer, [table(dst, d_idx), table(src, s_idx)],
                                lambda di, si: ir.VecMove(dst.buf, di, src.buf, si, v), tvar=tvar, threads=T,
                                what="vector move")
    form = PTX_FORM[v * eb]
    notes = (f"swizzle chunk caps at {cap} elements",) if cap is not None else ()
    return body, EmitSummary(f"ld.{src.buf.scope}.{form} + st.{dst.buf.scope}.{form}", outer,
                             moves=f"{v} {dst.buf.dtype} ({v * eb} B)", tid=tvar.kind if tvar else None,
                             split=(outer, T, v), how=how, notes=notes)
