"""copy_async dispatch: ``dsmem`` (``cp.async.bulk.shared::cluster.shared::cta``, distributed shared memory).

Variant ``dsmem`` of ``copy_async``, as TVM TIRx registers and plans it (``apache-tvm 0.27.0.post1``,
``backend/cuda/tile_primitive/copy_async/dsmem.py``): priority 10, predicates ``validate_copy_op``,
``single_thread`` and ``is_shared_to_shared`` with TVM's reasons.  One elected thread of the issuing CTA copies
its own shared region into the shared memory of the CTA of cluster rank ``remote_cta_id`` (PTX ISA 9.0
§9.7.9.25.4.1), completing the bytes on that CTA's ``mbar`` (the mbarrier at the same offset in the remote CTA):

    thread.copy_async R <- S remote_cta_id=cta_rank^1 mbar=got

The emitter then declines, each a why-table row, as TVM does: ``remote_cta_id not set in config``, ``mbar not set
in config``; and, unlike TVM 0.27 (which finds out on the GPU): an unknown config key, an ``mbar`` that is not an
mbarrier, a kernel without a cluster (``cluster=`` on the kernel line), a ``remote_cta_id`` that is not a
function of ``cta_rank`` alone, equal to the issuing CTA's own rank (the destination must be another CTA), or
outside the cluster — evaluated for the op's rank (:attr:`~tilemagic.lower.ops.CopyOp.rank`, set by the per-rank
lowering) or, for a rank-independent op, for every rank of the cluster.

**Planning** (TVM ``copy_dsmem_impl``): both layouts are sliced to their regions and canonicalised; the source is
grouped by the region's extents and the destination by the source's iterators, so iterator ``i`` of both covers
the same logical digit; the maximal stride-1 chain of each (TVM ``find_contiguous_region``: stride 1, then the
iterator whose stride is the running product) gives the contiguous iterators, and their common prefix (walking
inward-out while both chains name the same iterator) is one chunk.  ``chunk_bytes`` must be at least 16 and a
multiple of 16 (``cp.async.bulk``), else TVM's reason ``Layouts not compatible for bulk DSMEM copy:
chunk_bytes=N (need >= 16 and multiple of 16)``.  The other iterators are iterated over: one
:class:`~tilemagic.ir.nodes.BulkCopy` per chunk, **unrolled** (TVM emits a ``T.grid`` loop; the offsets here are
constants, so the IR lists every chunk).  Both shared addresses of every chunk must be 16-byte aligned
(tilemagic's check; TVM 0.27 does not make it and the copy faults).  The plan is then verified element by
element: the chunks must move every element of the source region to its place in the destination region, and
nothing else.

**Swizzled layouts**: supported when both buffers have the same ``swizzle(...)`` and each chunk is made of whole
swizzle rows (``2**(per_element + swizzle_len)`` elements) at positions congruent modulo the swizzle period, so the
XOR permutes the source bytes of a chunk exactly as it permutes the destination's and the chunk is one physical
run on both sides; anything else (one side swizzled, different swizzles, chunks that cut a swizzle row) is
declined with the reason.  TVM 0.27 does not look at the swizzle.

**Addresses**: the destination and the mbarrier are mapped into the remote CTA with ``mapa.shared::cluster.u32``
(PTX ISA 9.0 §9.7.9.23), a 32-bit shared::cluster address; TVM 0.27 uses the generic ``mapa.u64`` and truncates
its 64-bit result to 32 bits (a known TVM bug, named by ``--compare tvm``).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from ...arch import cluster as hw_cluster
from ...ir import nodes as ir
from ...ir.evaluate import Undetermined, eval_static
from ...ir.printer import expr_str
from ...layout.swizzle import ComposeLayout
from ...layout.tile import TileLayout
from ..common import memory_index, validate_copy_op as _validate_copy_op
from ..dispatch import DispatchContext, EmitSummary, Emitted, Verdict, fail, predicate, register_dispatch
from ..ops import CopyOp, RegionRef
from .tma import _shared_slice, single_thread

#: the ``copy_async`` options ``dsmem`` understands (TVM 0.27's config keys of the variant)
_CONFIG_KEYS = frozenset({"remote_cta_id", "mbar"})
_CTA_RANK = ir.ThreadVar(hw_cluster.CTA_RANK)


# ----------------------------------------------------------------------------- predicates
def validate_copy_op(op: CopyOp, ctx: DispatchContext) -> Verdict:
    """TVM ``validate_copy_op``: both sides have layouts, the same dtype and the same non-unit extents; an
    mbarrier object is never a copy operand."""
    ok, why = _validate_copy_op(op, ctx)
    if ok and (op.src.buf.is_mbarrier or op.dst.buf.is_mbarrier):
        ok, why = False, "an mbarrier object is not a copy operand"
    if ok and (op.src.buf.layout is None or op.dst.buf.layout is None):
        ok, why = False, "a side has no layout"
    return ok, None if ok else f"not a valid copy op: {why}"


def is_shared_to_shared(op: CopyOp, ctx: DispatchContext) -> Verdict:
    """TVM ``_is_shared_to_shared``: both buffers are in shared memory."""
    ok = op.src.buf.scope == "shared" and op.dst.buf.scope == "shared"
    return ok, None if ok else "not a shared-to-shared copy"


_PREDICATES = [predicate("validate_copy_op", validate_copy_op),
               predicate("single_thread", single_thread),
               predicate("is_shared_to_shared", is_shared_to_shared)]


# ----------------------------------------------------------------------------- options
@dataclass(frozen=True)
class DsmemConfig:
    """The checked options: the remote rank's expression, its value per issuing rank, the mbarrier."""

    remote: ir.Expr
    ranks: dict[int, int]  # issuing rank -> destination rank
    mbar: ir.Buffer


def _remote_of(remote: ir.Expr, rank: int, threads: int) -> int:
    """The destination rank ``remote`` names in the CTA of ``rank`` (the same for every thread), or a decline."""
    tid = np.arange(max(threads, 1), dtype=np.int64)
    try:
        v = np.broadcast_to(np.asarray(eval_static(remote, tid, {_CTA_RANK: np.int64(rank)})), tid.shape)
    except Undetermined as e:
        fail(f"remote_cta_id={expr_str(remote)} is not an integer expression in cta_rank ({e})")
    if np.any(v != v[0]):
        fail(f"remote_cta_id={expr_str(remote)} differs between the threads of a CTA: it must depend on "
             f"cta_rank only")
    return int(v[0])


def _executes(ctx: DispatchContext, rank: int) -> bool:
    """Whether some thread of the CTA of ``rank`` executes the op under its guard (``ctx.guard``, e.g.
    ``if tx == 0 and cta_rank == 0:``); True when the guard cannot be evaluated statically."""
    if ctx.guard is None:
        return True
    tid = np.arange(max(ctx.threads, 1), dtype=np.int64)
    try:
        return bool(np.any(eval_static(ctx.guard, tid, {_CTA_RANK: np.int64(rank)})))
    except Undetermined:
        return True


def runtime_config(op: CopyOp, ctx: DispatchContext) -> DsmemConfig:
    """The op's options, checked (TVM ``copy_dsmem_impl``'s config reads, then tilemagic's cluster rules).

    Raises
    ------
    DispatchFail
        ``remote_cta_id not set in config``, ``mbar not set in config`` (TVM's reasons); an unknown key; ``mbar``
        not an mbarrier; no cluster; a remote rank equal to the issuing rank or outside the cluster.
    """
    keys = {k for k, _, _ in op.options} - {"dispatch"}
    unknown = sorted(keys - _CONFIG_KEYS)
    if unknown:
        fail(f"dispatch=dsmem does not support config key(s) {unknown}")
    remote = op.option("remote_cta_id")
    if remote is None:
        fail("remote_cta_id not set in config")
    mbar = op.option("mbar")
    if mbar is None:
        fail("mbar not set in config")
    if not (isinstance(mbar, ir.Buffer) and mbar.is_mbarrier):
        fail(f"mbar={getattr(mbar, 'name', mbar)} is not an mbarrier")
    expr = remote if isinstance(remote, ir.Expr) else ir.const(int(remote))  # type: ignore[call-overload]
    if ctx.cluster < 2:
        fail(f"remote_cta_id={expr_str(expr)}: the kernel has no cluster (write cluster=C on the kernel line, "
             f"2 <= C <= {hw_cluster.MAX_PORTABLE_CLUSTER}): distributed shared memory is the shared memory of the "
             f"other CTAs of a cluster")
    ranks = [op.rank] if op.rank is not None else [r for r in range(ctx.cluster) if _executes(ctx, r)]
    dest: dict[int, int] = {}
    for r in ranks:
        v = _remote_of(expr, r, ctx.threads)
        if v == r:
            fail(f"remote_cta_id={expr_str(expr)} is {v} in the CTA of rank {r}, its own rank: a dsmem copy writes "
                 f"another CTA's shared memory (PTX ISA 9.0 §9.7.9.25.4.1); copy within a CTA with copy")
        if not 0 <= v < ctx.cluster:
            fail(f"remote_cta_id={expr_str(expr)} is {v} in the CTA of rank {r}: the cluster has ranks "
                 f"0..{ctx.cluster - 1}")
        dest[r] = v
    return DsmemConfig(expr, dest, mbar)


# ----------------------------------------------------------------------------- planning
@dataclass(frozen=True)
class DsmemPlan:
    """The chunks of a dsmem copy: ``chunk_bytes`` per chunk, and each chunk's ``(src, dst)`` byte offsets in
    the two shared buffers (physical: after the swizzle, where there is one)."""

    chunk_bytes: int
    offsets: tuple[tuple[int, int], ...]


def _contiguous_chain(lay: TileLayout) -> list[int]:
    """TVM ``find_contiguous_region``: indices of the maximal stride-1 chain of ``lay``'s memory iterators
    (stride 1 first, then the one whose stride is the running product of the extents so far)."""
    memory = [(i, it) for i, it in enumerate(lay.shard) if it.axis == "m" and it.extent != 1]
    chain: list[int] = []
    expected = 1
    while True:
        nxt = next((i for i, it in memory if i not in chain and it.stride == expected), None)
        if nxt is None:
            return chain
        chain.append(nxt)
        expected *= lay.shard[nxt].extent


def _swizzle_params(buf: ir.Buffer) -> tuple[int, int, int] | None:
    lay = buf.layout
    if isinstance(lay, ComposeLayout) and lay.swizzle_len:
        return lay.per_element, lay.swizzle_len, lay.atom_len
    return None


def _sliced(side: str, ref: RegionRef) -> tuple[TileLayout, int]:
    sl = _shared_slice(ref)
    if sl is None:
        fail(f"Cannot slice {side} layout for DSMEM copy")
    return sl


def plan(op: CopyOp) -> DsmemPlan:
    """TVM ``copy_dsmem_impl``'s chunking of ``op`` (see the module docstring), verified element by element.

    Raises
    ------
    DispatchFail
        A layout that does not slice or group, ``chunk_bytes`` below 16 or not a multiple of 16 (TVM's reason),
        a chunk address not 16-byte aligned, or swizzles tilemagic does not support.
    """
    s, d = op.src, op.dst
    eb = s.buf.elem_bytes
    ssw, dsw = _swizzle_params(s.buf), _swizzle_params(d.buf)
    if ssw != dsw:
        def text(p):
            return f"swizzle({', '.join(map(str, p))})" if p else "no swizzle"
        fail(f"{s.buf.name} has {text(ssw)} and {d.buf.name} {text(dsw)}: dsmem copies bytes unchanged, so both "
             f"sides need the same swizzle")
    src_lay, src_off = _sliced("src", s)
    dst_lay, dst_off = _sliced("dst", d)
    try:
        gsrc, _ = src_lay.group(tuple(s.extents))
        gdst, _ = dst_lay.group(tuple(it.extent for it in gsrc.shard))
    except ValueError as e:
        fail(f"Layouts not compatible for bulk DSMEM copy: {e}")
    common: list[int] = []
    for si, di in zip(_contiguous_chain(gsrc), _contiguous_chain(gdst)):
        if si != di:
            break
        common.append(si)
    chunk = math.prod(gsrc.shard[i].extent for i in common)
    chunk_bytes = chunk * eb
    align = hw_cluster.BULK_ALIGN
    if chunk_bytes < align or chunk_bytes % align:
        fail(f"Layouts not compatible for bulk DSMEM copy: chunk_bytes={chunk_bytes} "
             f"(need >= {align} and multiple of {align})")
    outer = [i for i in range(len(gsrc.shard)) if i not in common]
    offsets = []
    for digits in itertools.product(*(range(gsrc.shard[i].extent) for i in outer)):
        so = src_off + sum(v * gsrc.shard[i].stride for v, i in zip(digits, outer))
        do = dst_off + sum(v * gdst.shard[i].stride for v, i in zip(digits, outer))
        offsets.append((so, do))
    # (swizzled: a chunk of whole swizzle rows is the same range of physical elements as of tile offsets,
    # permuted alike on both sides when the positions agree modulo the period; _verify checks it)
    for so, do in offsets:
        for name, off in ((s.buf.name, so), (d.buf.name, do)):
            if (off * eb) % align:
                fail(f"cp.async.bulk needs {align}-byte aligned shared addresses: a chunk of {name} starts at byte "
                     f"{off * eb}")
    _verify(s, d, chunk, offsets, ssw)
    return DsmemPlan(chunk_bytes, tuple((so * eb, do * eb) for so, do in offsets))


def _verify(s: RegionRef, d: RegionRef, chunk: int, offsets: list[tuple[int, int]],
            swizzle: tuple[int, int, int] | None) -> None:
    """The chunks move exactly the region's elements: every (source, destination) physical element pair of the
    regions, and no other."""
    want = np.stack([memory_index(s), memory_index(d)], axis=1)
    run = np.arange(chunk, dtype=np.int64)
    starts = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
    got = np.stack([(starts[:, :1] + run).ravel(), (starts[:, 1:] + run).ravel()], axis=1)
    if want.shape == got.shape and np.array_equal(want[np.lexsort(want.T[::-1])], got[np.lexsort(got.T[::-1])]):
        return
    if swizzle is not None:
        pe, sl, al = swizzle
        fail(f"swizzle({pe}, {sl}, {al}): the {chunk}-element chunks are not whole swizzle rows "
             f"({1 << (pe + sl)} elements) at matching positions in both buffers, so a chunk is not one run of "
             f"bytes on both sides")
    raise AssertionError(f"dsmem plan of {s} -> {d} does not move the region's elements")  # a planner bug


# ----------------------------------------------------------------------------- emission
def _emit(op: CopyOp, ctx: DispatchContext) -> Emitted:
    cfg = runtime_config(op, ctx)
    p = plan(op)
    stmts: list[ir.Stmt] = [ir.BulkCopy(op.src.buf, so, op.dst.buf, do, p.chunk_bytes, cfg.remote, cfg.mbar)
                            for so, do in p.offsets]
    where = ", ".join(f"{r} -> {v}" for r, v in cfg.ranks.items())
    notes = (f"into the CTA of rank {expr_str(cfg.remote)} (rank {where})",
             f"complete_tx on {cfg.mbar.name} of that CTA", "addresses through mapa.shared::cluster.u32")
    return stmts, EmitSummary(ir.BulkCopy.chain, len(stmts), moves=f"{p.chunk_bytes} B",
                              how="unrolled" if len(stmts) > 1 else "", notes=notes)


# === Variant: copy_async/dsmem (priority=10) ===
#
# When: shared -> shared on one thread, remote_cta_id= another CTA of the cluster, mbar= its mbarrier; the
#       contiguous chunks are >= 16 B, multiples of 16 B, 16-byte aligned.
# Emits: one mapa + cp.async.bulk.shared::cluster.shared::cta per chunk (unrolled).
@register_dispatch("copy_async", "cuda", variant="dsmem", priority=10, when=_PREDICATES)
def copy_async_dsmem(op: CopyOp, ctx: DispatchContext) -> Emitted:
    return _emit(op, ctx)
