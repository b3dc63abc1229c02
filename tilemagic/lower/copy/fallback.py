"""Scalar single-thread copy fallback (priority=0).

One elected thread of the scope (lane 0 of a warp, thread 0 of a warpgroup or of
the CTA; every thread at ``thread`` scope) copies the region element by element
in a serial ``T.grid`` over the non-unit extents, dims mapped positionally (so a
``(1, 8)`` region copies to an ``(8,)`` one).  A scalar region is one store.
No barrier is inserted: the caller writes ``cta_sync`` (as in TVM TIRx).

It always warns (``UserWarning``, TVM's wording) because it is the slowest way to
copy: it runs only when every faster variant declined.

tilemagic adds one predicate TVM does not have: the scalar loop must be able to
reach both sides from a single thread.  TMEM is reachable only through
``tcgen05.ld/st`` and a register tile distributed over threads is not reachable
from one elected thread, so those copies decline here with a reason instead of
producing wrong code.
"""

from __future__ import annotations

from ...arch.threads import SCOPE_TID
from ...ir import nodes as ir
from ..common import affine_dims, is_distributed, validate_copy_op
from ..dispatch import DispatchContext, EmitSummary, Emitted, Verdict, fail, predicate, register_dispatch
from ..ops import CopyOp, RegionRef


def _single_thread_reachable(op: CopyOp, ctx: DispatchContext) -> Verdict:
    for side in (op.dst, op.src):
        b = side.buf
        if b.scope == "tmem":
            return False, (f"{b.name} is tmem: TMEM is reached only through tcgen05.ld/st "
                           "(use copy_async with a local tile)")
        if b.scope == "local" and is_distributed(b):
            return False, (f"local {b.name} is distributed over threads ({b.layout}); one elected thread "
                           f"cannot reach the other threads' registers")
        if b.scope == "local" and ctx.scope_kind != "thread":
            return False, (f"local {b.name} is private to each thread; at scope {ctx.scope_kind} only the elected "
                           f"thread's copy would be written (use thread scope)")
    return True, None


def _index(region: RegionRef, idx: list[ir.Expr]) -> tuple[ir.Expr, ...]:
    """One side's index Exprs: the logical ones for global/shared (mapped by ``Buffer.index_expr``), the
    register slot for a local tile."""
    buf = region.buf
    if buf.scope != "local":
        return tuple(idx)
    aff = affine_dims(buf.layout, buf.shape)
    if aff is None:
        fail(f"local {buf.name}'s layout {buf.layout} is not affine per dimension; the scalar loop cannot index it")
    e: ir.Expr = ir.Const(aff[1])
    for i, stride in zip(idx, aff[0]):
        e = ir.add(e, ir.mul(i, stride))
    return (e,)


# === Variant: copy/fallback (priority=0) ===
#
# When: any copy whose two sides one thread can address (global, shared, or a
#       thread-private register tile at thread scope), once every faster variant
#       has declined.
# Emits: ``if <tid> == 0:`` + ``for i, j in T.grid(...): dst[...] = src[...]`` and a
#        UserWarning.
@register_dispatch("copy", "cuda", variant="fallback", priority=0, when=[
    predicate("validate_copy_op", validate_copy_op),
    predicate("single_thread_reachable", _single_thread_reachable),
])
def copy_schedule_fallback(op: CopyOp, ctx: DispatchContext) -> Emitted:
    dst, src = op.dst, op.src
    d_dims = [k for k, e in enumerate(dst.extents) if e != 1]
    s_dims = [k for k, e in enumerate(src.extents) if e != 1]
    assert len(d_dims) == len(s_dims), "validate_copy_op guarantees matching non-unit extents"
    extents = tuple(dst.extents[k] for k in d_dims)
    lvars = ctx.builder.loop_vars(len(extents))

    def side(region: RegionRef, dims: list[int]) -> tuple[ir.Expr, ...]:
        idx: list[ir.Expr] = [ir.Const(b) for b in region.begins]
        for lv, k in zip(lvars, dims):
            idx[k] = ir.add(lv, region.begins[k])
        return _index(region, idx)

    store = ir.Store(dst.buf, side(dst, d_dims), ir.Load(src.buf, side(src, s_dims)))
    body: ir.Stmt = ir.Grid(lvars, extents, store) if extents else store
    tid = None if ctx.scope_kind == "thread" else SCOPE_TID[ctx.scope_kind]
    if tid is not None:
        body = ir.If(ir.Bin("==", ir.ThreadVar(tid), ir.Const(0)), body)
    ctx.warnings.append((
        f"copy/fallback (scalar single-thread) picked for {src.buf.scope} -> {dst.buf.scope} at "
        f"scope_kind={ctx.scope_kind}; all faster variants rejected.",
        op.span,
    ))
    return [body], EmitSummary("", moves=" × ".join(map(str, extents)) or "1", tid=tid)
