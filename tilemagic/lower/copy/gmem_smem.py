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

from ...arch.ptx import PTX_FORM
from ...arch.threads import SCOPE_TID
from ...ir import nodes as ir
from ..common import (
    IndexTable,
    emit_iterations,
    exec_scope_ok,
    memory_index,
    region_coords,
    runs_ok,
    scope_allowed,
    swizzle_chunk,
    validate_copy_op,
    vector_lengths,
)
from ..dispatch import predicate, register_dispatch

_GMEM_SMEM_PAIRS = [("global", "shared"), ("shared", "global")]


def _divides_thread_cnt(op, ctx):
    """The region's element count must be a multiple of the scope's threads (TVM ``_divides_thread_cnt``)."""
    n, t = op.dst.numel, ctx.scope_threads
    if n % t:
        return False, f"region size {n} not divisible by thread_cnt={t}"
    return True, None


def _emit_gmem_smem(op, ctx):
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

    def table(region, idx):
        starts = idx[::v].reshape(outer, T)
        coords = region_coords(region)[:, ::v].reshape(-1, outer, T)
        return IndexTable(region.buf, starts, coords)

    def build(di, si):
        return ir.VecMove(dst.buf, di, src.buf, si, v)

    body, how = emit_iterations(ctx, outer, [table(dst, d_idx), table(src, s_idx)], build, tvar=tvar, threads=T,
                                what="vector move")
    form = PTX_FORM[v * eb]
    capped = f"; swizzle chunk caps at {cap} elements" if cap is not None else ""
    who = f"each of {T} threads ({tvar.kind})" if tvar is not None else "the thread"
    summary = (f"[outer={outer}, threads={T}, vec={v}]: {who} moves {outer} × {v} {dst.buf.dtype} "
               f"({v * eb} B) with ld.{src.buf.scope}.{form} + st.{dst.buf.scope}.{form}"
               f"{' ' + how if how else ''}{capped}")
    return body, summary


# === Variant: copy/gmem_smem (priority=10) ===
#
# When: global -> shared or shared -> global at thread/warp/warpgroup/cta scope, with
#       all threads of the scope active (always, in this language: an op has no guard)
#       and a region whose element count the scope's threads divide.
# Emits: ``for f in T.grid(outer)``: one vector ``ld.<src>`` into registers and one
#        ``st.<dst>`` per thread; the widest width aligned on both sides.  No barrier.
@register_dispatch(
    "copy",
    "cuda",
    variant="gmem_smem",
    priority=10,
    when=[
        predicate("validate_copy_op", validate_copy_op),
        predicate("exec_scope", exec_scope_ok, expected_scopes=["thread", "warp", "warpgroup", "cta"]),
        predicate("storage_scope", scope_allowed, allowed_pairs=_GMEM_SMEM_PAIRS),
        predicate("divides_thread_cnt", _divides_thread_cnt),
    ],
)
def copy_schedule_gmem_smem(op, ctx):
    return _emit_gmem_smem(op, ctx)
