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
from ...ir import nodes as ir
from ..common import copy_predicates, divides_thread_cnt, emit_iterations, gs_split
from ..dispatch import DispatchContext, EmitSummary, Emitted, predicate, register_dispatch
from ..ops import CopyOp

_GMEM_SMEM_PAIRS = [("global", "shared"), ("shared", "global")]


# === Variant: copy/gmem_smem (priority=10) ===
#
# When: global -> shared or shared -> global at thread/warp/warpgroup/cta scope, with
#       all threads of the scope active (always, in this language: an op has no guard)
#       and a region whose element count the scope's threads divide.
# Emits: ``for f in T.grid(outer)``: one vector ``ld.<src>`` into registers and one
#        ``st.<dst>`` per thread; the widest width aligned on both sides.  No barrier.
@register_dispatch("copy", "cuda", variant="gmem_smem", priority=10, when=copy_predicates(
    ["thread", "warp", "warpgroup", "cta"], _GMEM_SMEM_PAIRS, predicate("divides_thread_cnt", divides_thread_cnt)))
def copy_schedule_gmem_smem(op: CopyOp, ctx: DispatchContext) -> Emitted:
    dst, src = op.dst, op.src
    sp = gs_split(op, ctx)
    assert sp is not None, "the default widths end with one element, which always fits"
    v = sp.vec
    body, how = emit_iterations(ctx, sp.outer, sp.tables,
                                lambda di, si: ir.VecMove(dst.buf, di, src.buf, si, v), tvar=sp.tvar,
                                threads=sp.threads, what="vector move")
    eb = dst.buf.elem_bytes
    form = PTX_FORM[v * eb]
    notes = (f"swizzle chunk caps at {sp.cap} elements",) if sp.cap is not None else ()
    return body, EmitSummary(f"ld.{src.buf.scope}.{form} + st.{dst.buf.scope}.{form}", sp.outer,
                             moves=f"{v} {dst.buf.dtype} ({v * eb} B)", tid=sp.tvar.kind if sp.tvar else None,
                             split=(sp.outer, sp.threads, v), how=how, notes=notes)
