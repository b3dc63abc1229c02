"""Register-tile copy: ``local <-> global/shared`` (variant ``reg``, priority 10).

The register layout decides who moves what: its thread axes (``laneid``,
``tid_in_wg``, ``wid_in_wg``, ``warpid``, ``tx``) give each element's owning
thread, its ``m`` coordinate the register slot.  Every thread copies its own
elements with the widest vector ``ld``/``st`` (16, 8, 4, 2 or 1 bytes) whose
register run and memory run are both contiguous and naturally aligned — TVM
TIRx's old ``reg`` variant (``vec_auto_reg.py`` at HEAD), which the ``fallback``
seed names as one of the faster variants.

How the split is found (our own method, checked numerically rather than by
layout algebra): the region is enumerated once; per thread the elements are
sorted by register slot; the memory address must be ``base(tid) + off(k)`` with
``off`` the same for every thread and ``base`` affine in the digits of the thread
id given by the layout's thread iterators.  Anything else declines with the
reason, so a later variant (or the fallback) can take the copy.
"""

from __future__ import annotations

import numpy as np

from ...ir import nodes as ir
from ..common import (
    SCOPE_RANK,
    THREAD_AXIS_SCOPE,
    THREAD_AXIS_WEIGHT,
    digits_expr,
    exec_scope_ok,
    linear_tid,
    scope_allowed,
    thread_axes,
    validate_copy_op,
)
from ..dispatch import fail, predicate, register_dispatch

_REG_PAIRS = [("global", "local"), ("local", "global"), ("shared", "local"), ("local", "shared")]
_VEC_BYTES = (16, 8, 4, 2, 1)
_PTX_FORM = {16: "v4.u32", 8: "v2.u32", 4: "u32", 2: "u16", 1: "u8"}
_MAX_UNROLLED = 64


def _register_layout_ok(op, ctx):
    local = op.dst if op.dst.buf.scope == "local" else op.src
    axes = thread_axes(local.buf.layout)
    for a in sorted(axes):
        if SCOPE_RANK[THREAD_AXIS_SCOPE[a]] > SCOPE_RANK[ctx.scope_kind]:
            return False, (f"register layout of {local.buf.name} uses {a} ({THREAD_AXIS_SCOPE[a]} scope) but the op "
                           f"runs at scope {ctx.scope_kind}")
    return True, None


def _enumerate(region):
    """Logical coords of the region's elements (row-major over the region) -> flat buffer indices."""
    idx = np.indices(region.extents).reshape(len(region.extents), -1)
    coords = idx + np.asarray(region.begins, np.int64)[:, None]
    return np.ravel_multi_index(tuple(coords), region.buf.shape).astype(np.int64)


def _memory_index(region):
    """Physical element index of each region element in a global/shared buffer."""
    lin = _enumerate(region)
    return region.buf.layout.apply(lin).get("m", lin)


def _thread_var_and_count(axes, ctx):
    if not axes:
        return None, 1
    rank = max(SCOPE_RANK[THREAD_AXIS_SCOPE[a]] for a in axes)
    if rank == SCOPE_RANK["warp"]:
        return ir.ThreadVar("laneid"), 32
    if rank == SCOPE_RANK["warpgroup"]:
        return ir.ThreadVar("tid_in_wg"), 128
    return ir.ThreadVar("tx"), ctx.threads


def _fit_chunks(moff, goff):
    """Express chunk offsets as a loop nest: [(extent, m_step, g_step), ...] or None."""
    n = len(moff)
    if n == 1:
        return []
    j = np.arange(n)
    a, b = moff[1] - moff[0], goff[1] - goff[0]
    if np.array_equal(moff, moff[0] + j * a) and np.array_equal(goff, goff[0] + j * b):
        return [(n, int(a), int(b))]
    for n2 in range(2, n):
        if n % n2:
            continue
        j1, j2 = j // n2, j % n2
        a2, b2 = moff[1] - moff[0], goff[1] - goff[0]
        a1, b1 = moff[n2] - moff[0], goff[n2] - goff[0]
        if np.array_equal(moff, moff[0] + j1 * a1 + j2 * a2) and np.array_equal(goff, goff[0] + j1 * b1 + j2 * b2):
            return [(n // n2, int(a1), int(b1)), (n2, int(a2), int(b2))]
    return None


def _emit_reg(op, ctx):
    load = op.dst.buf.scope == "local"
    local, mem = (op.dst, op.src) if load else (op.src, op.dst)
    lbuf, mbuf = local.buf, mem.buf
    eb = lbuf.elem_bytes

    lc = lbuf.layout.apply(_enumerate(local))
    m = lc.get("m", np.zeros(local.numel, np.int64))
    g = _memory_index(mem)
    axes = thread_axes(lbuf.layout)
    tvar, S = _thread_var_and_count(axes, ctx)
    if S > ctx.threads:
        fail(f"register layout of {lbuf.name} is spread over {S} threads ({tvar.kind}) but the CTA has "
             f"{ctx.threads}; the missing threads' elements would never be copied")
    t = linear_tid(lc, local.numel)
    if S and (t.max() >= S or t.min() < 0):
        fail(f"register layout of {lbuf.name} reaches thread {int(t.max())} but its scope has {S} threads")
    counts = np.bincount(t, minlength=S)
    if S > 1 and not np.all(counts == counts[0]):
        fail(f"register layout of {lbuf.name} gives threads unequal element counts ({counts.min()}..{counts.max()}) "
             f"in this region")
    K = int(counts[0])
    order = np.lexsort((m, t))
    M = m[order].reshape(S, K)
    G = g[order].reshape(S, K)
    if not np.all(M == M[0]):
        fail(f"threads hold this region of {lbuf.name} in different register slots")
    off = G - G[:, :1]
    if not np.all(off == off[0]):
        fail(f"the memory offsets of {mem.buf.name} differ in shape from thread to thread")
    M, off, base = M[0], off[0], G[:, 0]

    # base(t) = base[0] + Σ digit_i(t) * c_i over the layout's thread iterators
    digits = []
    if tvar is not None:
        its = sorted({(it.stride * THREAD_AXIS_WEIGHT[it.axis], it.extent)
                      for it in lbuf.layout.shard if it.axis in THREAD_AXIS_WEIGHT and it.extent > 1})
        tt = np.arange(S)
        pred = np.full(S, base[0])
        for stride, extent in its:
            if stride >= S:
                continue
            c = int(base[stride] - base[0])
            ext = None if stride * extent >= S else extent
            digits.append((stride, ext, c))
            d = tt // stride
            pred = pred + (d % extent if ext is not None else d) * c
        if not np.array_equal(pred, base):
            fail(f"the per-thread base address of {mem.buf.name} is not affine in the thread id "
                 f"for layout {lbuf.layout}")

    # widest vector: contiguous in registers and in memory, naturally aligned on both sides
    for vb in _VEC_BYTES:
        if vb % eb:
            continue
        v = vb // eb
        if K % v:
            continue
        mm, oo = M.reshape(-1, v), off.reshape(-1, v)
        step = np.arange(v)
        if not (np.all(mm == mm[:, :1] + step) and np.all(oo == oo[:, :1] + step)):
            continue
        if np.any(mm[:, 0] % v):
            continue
        if np.any((base[:, None] + oo[None, :, 0]) % v):
            continue
        break
    else:  # unreachable: v = 1 always fits
        fail("no vector width fits")
    moff, goff = mm[:, 0], oo[:, 0]
    nest = _fit_chunks(moff, goff)
    base_expr = ir.add(digits_expr(tvar, digits) if tvar is not None else ir.Const(0), int(base[0]))
    if nest is None and len(moff) > _MAX_UNROLLED:
        fail(f"register slots of {lbuf.name} are too irregular to loop over ({len(moff)} vector moves)")

    def move(mi, gi):
        mi = ir.add(mi, 0)
        gi = ir.add(base_expr, gi)
        if load:
            return ir.VecMove(lbuf, mi, mbuf, gi, v)
        return ir.VecMove(mbuf, gi, lbuf, mi, v)

    if nest is None:
        body = [move(ir.Const(int(a)), ir.Const(int(b))) for a, b in zip(moff, goff)]
    elif not nest:
        body = [move(ir.Const(int(moff[0])), ir.Const(int(goff[0])))]
    else:
        lvars = ctx.builder.loop_vars(len(nest))
        mi, gi = ir.Const(int(moff[0])), ir.Const(int(goff[0]))
        for lv, (ext, ms, gs) in zip(lvars, nest):
            mi, gi = ir.add(mi, ir.mul(lv, ms)), ir.add(gi, ir.mul(lv, gs))
        body = [ir.Grid(lvars, tuple(e for e, _, _ in nest), move(mi, gi))]
    space = mbuf.scope
    form = _PTX_FORM[v * eb]
    n_moves = len(moff)
    summary = (f"per thread: {n_moves} × {'ld' if load else 'st'}.{space}.{form} "
               f"({v} {lbuf.dtype} = {v * eb} B each)")
    return body, summary


# === Variant: copy/reg (priority=10) ===
#
# When: one side is a register tile (local) whose layout's thread axes fit the exec
#       scope, the other global or shared memory; every thread's elements sit at the
#       same offsets from a base address affine in its thread id.
# Emits: per thread, a (serial) loop of vector ``ld.<space>.v4.u32``-style moves
#        between its registers and memory; no barrier.
@register_dispatch(
    "copy",
    "cuda",
    variant="reg",
    priority=10,
    when=[
        predicate("validate_copy_op", validate_copy_op),
        predicate("exec_scope", exec_scope_ok, expected_scopes=["thread", "warp", "warpgroup", "cta"]),
        predicate("storage_scope", scope_allowed, allowed_pairs=_REG_PAIRS),
        predicate("register_layout", _register_layout_ok),
    ],
)
def copy_schedule_reg(op, ctx):
    return _emit_reg(op, ctx)
