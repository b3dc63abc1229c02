"""From a parsed :class:`~tilemagic.lang.ast.Program` to a lowered :class:`~tilemagic.ir.nodes.Kernel`.

Two steps:

1. :func:`check` resolves names, dtypes, shapes and layouts (``S[...]``,
   ``datapath(...)``, ``frag(...)``), the CTA size, the TMEM allocation and the
   regions of every op; it raises located :class:`~tilemagic.errors.TileTypeError`
   / :class:`~tilemagic.errors.LoweringError`.
2. :func:`lower` dispatches every copy op (:func:`~tilemagic.lower.dispatch.run_dispatch`)
   and assembles the kernel: the mbarriers initialised by thread 0 first (``mbarrier.init``,
   ``fence.mbarrier_init.release.cluster``, ``__syncthreads()``; PTX ISA 9.0 §9.7.13.15.9,
   §9.7.13.4), then TMEM ``alloc`` + ``relinquish_alloc_permit`` by warp 0
   at the start, ``dealloc`` by warp 0 at the end (PTX ISA 9.0 §9.7.16.7.1), with the
   ``tcgen05.fence::*_thread_sync`` + ``__syncthreads()`` around them.  A guarded statement
   (``if tx == 0: ...``) becomes an ``ir.If`` around its IR; ``arrive BAR expect_tx=auto`` is
   resolved last, from the TMA copies naming ``mbar=BAR`` up to the next ``wait BAR``.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
from dataclasses import dataclass, field

import numpy as np

from ..arch.cluster import CTA_RANK, MIN_SM
from ..arch.limits import limits_for
from ..arch.mbarrier import MBAR_MAX_TX
from ..arch.threads import THREAD_AXES, THREADS_PER
from ..errors import DispatchError, LoweringError, Span, TileTypeError, split_lines
from ..ir import nodes as ir
from ..ir.evaluate import Undetermined, holds, issue_count, issue_values
from ..lang import ast
from ..layout.tile import TileLayout, distinct
from .dispatch import DispatchContext, DispatchRecord, TargetSpec, run_dispatch
from .limits import check_buffers, check_threads, check_tmem_columns
from .names import check_identifier
from .ops import SCOPE_KIND, CopyOp, RegionRef


@dataclass(frozen=True)
class CopyItem:
    """A copy op of the description (``wg.copy_async T <- a``), under its guard if any (``if tx == 0: ...``).

    ``ranked``: when the statement depends on the CTA's rank (``cta_rank`` in a region or an option, or a
    ``remote_cta_id=``), its op for every rank of the cluster its guard lets run (``op.rank``, concrete
    regions; :func:`guard_ranks`), lowered one by one (:func:`lower`); ``op`` is the first such rank's
    then.  Empty for a statement that does not depend on it.
    """
    op: CopyOp
    guard: ast.Guard | None = None
    ranked: tuple[CopyOp, ...] = ()


#: ``wait ld`` / ``wait st`` (``tcgen05.wait::ld|st``, PTX ISA 9.0 §9.7.16.8.5) and ``cta_sync`` (a CTA barrier,
#: fenced for tcgen05 traffic when the kernel uses TMEM) need no checking: the parsed statements serve as items.
WaitItem = ast.WaitStmt
SyncItem = ast.SyncStmt
#: ``cluster_sync`` (``barrier.cluster.arrive.aligned; barrier.cluster.wait.aligned``, PTX ISA 9.0 §9.7.13.3):
#: checked (a cluster kernel only), the parsed statement serves as the item.
ClusterSyncItem = ast.ClusterSyncStmt
#: ``commit_group`` / ``wait_group N`` / ``bulk_commit_group`` / ``bulk_wait_group N [read]`` and
#: ``fence.proxy.async``: checked by the parser, the parsed statements serve as items.
GroupItem = ast.GroupStmt
FenceItem = ast.FenceStmt
#: ``tcgen05.fence::after_thread_sync`` / ``::before_thread_sync`` (PTX ISA 9.0 §9.7.16.11): checked by the parser,
#: the parsed statement serves as the item (lowered to ``ir.TcgenFence`` with the statement's span).
TcgenFenceItem = ast.TcgenFenceStmt


@dataclass(frozen=True)
class ArriveItem:
    """``arrive BAR [expect_tx=BYTES|auto]`` with ``BAR`` resolved (``expect_tx`` None: ``auto`` or no clause)."""
    bar: ir.Buffer
    expect_tx: int | None
    auto: bool
    span: Span
    guard: ast.Guard | None = None


@dataclass(frozen=True)
class MbarWaitItem:
    """``wait BAR phase P`` with ``BAR`` resolved."""
    bar: ir.Buffer
    phase: int
    span: Span
    guard: ast.Guard | None = None


@dataclass(frozen=True)
class TcgenCommitItem:
    """``tcgen05.commit BAR [cta_mask=M]`` with ``BAR`` resolved: ``ir.TcgenCommit`` (PTX ISA 9.0 §9.7.16.12.1).

    ``cta_group`` is 1: the statement has no ``cta_group=`` (a CTA pair's TMEM is not simulated yet)."""
    bar: ir.Buffer
    cta_mask: int | None
    span: Span
    guard: ast.Guard | None = None
    cta_group: int = 1


@dataclass(frozen=True)
class CheckItem:
    """``check LHS == RHS``: two global regions of one shape and dtype, compared after the launch."""
    lhs: RegionRef
    rhs: RegionRef
    text: str  # the statement's source text
    span: Span


#: One statement of a checked description, in source order.
ProgramItem = (CopyItem | WaitItem | SyncItem | CheckItem | ArriveItem | MbarWaitItem | GroupItem | FenceItem
               | ClusterSyncItem | TcgenCommitItem | TcgenFenceItem)


@dataclass
class TypedProgram:
    """A checked description: buffers with layouts, the CTA size, the TMEM plan, the ops."""

    name: str
    threads: int
    buffers: dict[str, ir.Buffer]
    tmem_cols: int  # allocated 32-bit columns (power of two >= 32), 0 without TMEM
    items: list[ProgramItem] = field(default_factory=list)
    source: str = ""
    kernel_span: Span | None = None
    #: CTAs per cluster (``kernel NAME cluster=C``; 1: no cluster).  Buffers, mbarriers and TMEM are per CTA.
    cluster: int = 1

    def by_scope(self, scope):
        return tuple(b for b in self.buffers.values() if b.scope == scope)

    @property
    def mbarriers(self) -> tuple[ir.Buffer, ...]:
        """The ``mbarrier`` declarations (shared ``uint64[1]`` buffers with ``mbar_count``), in source order."""
        return tuple(b for b in self.buffers.values() if b.is_mbarrier)

    @property
    def copy_ops(self) -> list[CopyOp]:
        """The copy ops, in source order (one dispatch record each)."""
        return [it.op for it in self.items if isinstance(it, CopyItem)]

    @property
    def checks(self) -> list[CheckItem]:
        """The ``check`` statements, in source order."""
        return [it for it in self.items if isinstance(it, CheckItem)]


# ----------------------------------------------------------------------------- layouts
def _cp_shard_text(c, cols: int) -> str | None:
    """The TMEM layout a tcgen05.cp shape ``c`` (:class:`tilemagic.arch.tcgen05.CpShape`) writes, in cell syntax:
    its row -> lane map (one stride, or an outer and an inner one) and its replicas; None when the map is neither."""
    lane, n = c.lane_of_row, c.rows
    s1 = lane[1] if n > 1 else 1
    k = next((i for i in range(1, n) if lane[i] != i * s1), n)
    if k == n:
        shard = f"S[({n}, {cols}) : ({s1}@TLane, 1@TCol)]"
    elif n % k == 0 and all(lane[i] == (i // k) * lane[k] + (i % k) * s1 for i in range(n)):
        shard = f"S[({n // k}, {k}, {cols}) : ({lane[k]}@TLane, {s1}@TLane, 1@TCol)]"
    else:
        return None
    reps = c.replicas
    return shard + (f" + R[{len(reps)} : {reps[1]}@TLane]" if len(reps) > 1 else "")


def _tmem_layout_hint(rows: int, cols: int) -> str:
    """A hint for a tmem buffer of ``rows`` lanes declared without a layout: the datapath layouts
    (:func:`tilemagic.layout.tmem_datapath_layout`) and the tcgen05.cp layouts
    (:data:`tilemagic.arch.tcgen05.CP_SHAPES`) of that many rows."""
    from ..arch import tcgen05 as tc

    ways = {64: ["`@ datapath(F, sub_slab=0)` or `@ datapath(B)` (tcgen05.ld/st)"],
            32: ["`@ datapath(G)` (tcgen05.ld/st)"]}.get(rows, [])
    for c in tc.CP_SHAPES.values():
        text = _cp_shard_text(c, cols) if c.rows == rows else None
        if text:
            ways.append(f"`@ {text}` (tcgen05.cp {c.key})")
    if not ways:
        return f"declare its lanes, e.g. `@ S[({rows}, {cols}) : (1@TLane, 1@TCol)]`"
    return f"for {rows} rows add " + "; or ".join(ways)


def _layout_from_ast(decl: ast.BufferDecl):
    from ..layout import row_major, tcgen05_atom_layout, tmem_datapath_layout

    shape = decl.shape
    bits = ir.DTYPE_BYTES[decl.dtype] * 8
    lay = decl.layout
    if lay is None:
        if decl.kind == "tmem":
            if len(shape) != 2:
                raise TileTypeError("a tmem buffer is 2-D (lanes × columns)", decl.shape_span)
            if shape[0] == 128:
                return tmem_datapath_layout("D", 128, shape[1]), "D", 0
            raise TileTypeError(
                f"a {shape[0]}-row tmem buffer needs a layout; the default is datapath D for 128 rows",
                decl.shape_span,
                hint=_tmem_layout_hint(shape[0], shape[1]),
            )
        return row_major(shape), None, 0
    try:
        if isinstance(lay, ast.DatapathLayout):
            if decl.kind != "tmem":
                raise TileTypeError("datapath(...) layouts describe TMEM; this buffer is " + decl.kind, lay.span)
            if len(shape) != 2:
                raise TileTypeError("a tmem buffer is 2-D (lanes × columns)", decl.shape_span)
            return tmem_datapath_layout(lay.letter, shape[0], shape[1], lay.sub_slab), lay.letter, lay.sub_slab
        if isinstance(lay, ast.SwizzleLayout):
            from ..layout.swizzle import ComposeLayout

            if decl.kind != "shared":
                raise TileTypeError(f"swizzle(...) is a shared-memory layout; {decl.name} is {decl.kind}", lay.span,
                                    hint="swizzle the shared buffer the data passes through")
            tile = row_major(shape) if lay.tile is None else _s_layout(lay.tile)
            return ComposeLayout(lay.per_element, lay.swizzle_len, lay.atom_len, tile, bare=lay.tile is None), None, 0
        if isinstance(lay, ast.FragLayout):
            if decl.kind != "local":
                raise TileTypeError("frag(...) is a register-fragment layout; use it on a local buffer", lay.span)
            if len(shape) != 2:
                raise TileTypeError("a tcgen05 fragment is 2-D (rows × columns)", decl.shape_span)
            return tcgen05_atom_layout(lay.shape, (shape[0], shape[1]), bits), None, 0
        return _s_layout(lay), None, 0
    except TileTypeError:
        raise
    except ValueError as e:
        raise TileTypeError(f"bad layout for '{decl.name}': {e}", lay.span) from None


def _s_layout(lay: ast.SLayout):
    strides = None if lay.strides is None else [(s.value, s.axis) for s in lay.strides]
    offsets = [(o.value, o.axis) for o in lay.offsets]
    replica = [(e, st.value, st.axis) for r in lay.replicas for e, st in zip(r.extents, r.strides)]
    return TileLayout.from_spec(lay.extents, strides, offsets, replica)


def tmem_lanes(layout) -> tuple[int, int]:
    """The lowest and highest TMEM lane a tmem buffer's layout reaches, its replicas (``+ R[...]``) included.

    A replica iter ``(e, s@TLane)`` adds lanes ``0, s, ..., (e-1)·s`` to every element's (TVM TIRx replica
    semantics, ``apache-tvm 0.27.0.post1``), so the buffer's lane footprint is its shard's lanes shifted by every
    replica offset.
    """
    n = layout.size()
    lanes = layout.apply(np.arange(n, dtype=np.int64), shape=None).get("TLane", np.zeros(1, np.int64)) if n else \
        np.zeros(1, np.int64)
    reach = sum((it.extent - 1) * it.stride for it in getattr(layout, "replica", ()) if it.axis == "TLane")
    return int(lanes.min()), int(lanes.max()) + reach


_ALLOWED_AXES = {
    "global": {"m"},
    "shared": {"m"},
    "local": {"m", *THREAD_AXES},
    "tmem": {"TLane", "TCol"},
}


def _coords(layout, shape):
    n = math.prod(shape)
    return layout.apply(np.arange(n, dtype=np.int64), shape=None) if n else {}


# element limits checked before any per-element work (the layouts are evaluated element by element)
_MAX_ELEMS = {"local": 1 << 20, "tmem": 128 * 512 * 4, "shared": 227 * 1024}


def _make_buffer(decl: ast.BufferDecl) -> ir.Buffer:
    if len(decl.shape) > 8:
        raise TileTypeError(f"'{decl.name}' has {len(decl.shape)} dimensions; at most 8", decl.shape_span)
    numel = math.prod(decl.shape)
    if decl.kind in _MAX_ELEMS and numel > _MAX_ELEMS[decl.kind]:
        what = {"local": "a register tile", "tmem": "tensor memory (128 lanes × 512 32-bit columns)",
                "shared": "shared memory"}[decl.kind]
        raise TileTypeError(f"'{decl.name}' has {numel} elements, more than {what} can hold "
                            f"(at most {_MAX_ELEMS[decl.kind]})", decl.shape_span)
    if decl.kind == "shared" and numel * ir.DTYPE_BYTES[decl.dtype] > 227 * 1024:
        raise TileTypeError(
            f"shared buffer '{decl.name}' needs {numel * ir.DTYPE_BYTES[decl.dtype]} bytes; "
            "a CTA has at most 232448 (227 KiB)",
            decl.shape_span)
    layout, datapath, sub_slab = _layout_from_ast(decl)
    lspan = getattr(decl.layout, "span", decl.span)
    tile = getattr(layout, "tile", layout)  # a swizzle's tile carries the iters
    big = [v for it in tile.shard for v in (it.extent, it.stride)] + [v for _, v in tile.offset]
    if any(abs(v) >= (1 << 31) for v in big):
        raise TileTypeError(f"layout of '{decl.name}' has a stride, extent or offset of 2**31 or more", lspan)
    if layout.size() != numel:
        raise TileTypeError(
            f"layout {layout} covers {layout.size()} elements but "
            f"'{decl.name}' {decl.dtype}{list(decl.shape)} has {numel}",
            lspan,
            hint="the layout's extents must multiply to the buffer's element count",
        )
    axes = {it.axis for it in tile.shard} | {a for a, _ in tile.offset}
    bad = axes - _ALLOWED_AXES[decl.kind]
    if bad:
        raise TileTypeError(
            f"axis {', '.join(sorted(bad))} is not allowed in a {decl.kind} layout "
            f"(allowed: {', '.join(sorted(_ALLOWED_AXES[decl.kind]))})",
            lspan,
        )
    buf = ir.Buffer(decl.name, decl.kind, decl.dtype, tuple(decl.shape), layout, span=decl.span, init=decl.init,
                    init_span=decl.init_span)
    if decl.kind == "global":  # row-major by construction
        buf.per_thread = numel
        return buf
    co = _coords(layout, decl.shape)
    if decl.kind in ("local", "tmem"):
        _check_injective(decl, co, numel, lspan)
    if decl.kind == "local":
        m = co.get("m", np.zeros(1, np.int64))
        buf.per_thread = int(m.max()) + 1 if m.size else 1
        if buf.per_thread > 8192:
            raise TileTypeError(
                f"'{decl.name}' needs {buf.per_thread} register elements per thread (at most 8192)", lspan)
    elif decl.kind == "shared":
        m = co.get("m", np.zeros(1, np.int64))
        if m.size and (m.min() < 0 or m.max() + 1 != numel or m.size != numel or not distinct(m)):
            raise TileTypeError(f"shared layout {layout} must be a permutation of {numel} elements", lspan)
        buf.per_thread = numel
    elif decl.kind == "tmem":
        lanes, cols = co.get("TLane", np.zeros(1, np.int64)), co.get("TCol", np.zeros(1, np.int64))
        if lanes.max() >= 128 or lanes.min() < 0:
            raise TileTypeError(f"layout {layout} reaches TMEM lane {int(lanes.max())}; TMEM has 128 lanes", lspan)
        top = tmem_lanes(layout)[1]
        if top >= 128:
            reps = getattr(decl.layout, "replicas", ())
            raise TileTypeError(f"layout {layout} reaches TMEM lane {top} with its replicas; TMEM has 128 lanes",
                                reps[-1].span if reps else lspan,
                                hint="the copies of a row land at its lane plus every replica offset: lanes "
                                     f"{int(lanes.max())} + {top - int(lanes.max())} > 127; shrink the replica "
                                     "or the buffer's lanes")
        epc = 4 // ir.DTYPE_BYTES[decl.dtype]
        buf.per_thread = numel
        buf.datapath, buf.sub_slab = (datapath, sub_slab) if datapath else _classify(layout, decl.shape)
        buf.tmem_ncols = -(-(int(cols.max()) + 1) // epc)  # 32-bit columns spanned
    else:
        buf.per_thread = numel
    return buf


def _distinct_pairs(hi: np.ndarray, lo: np.ndarray) -> bool:
    """Are the pairs ``(hi[i], lo[i])`` (small non-negative coordinates: threads x registers, lanes x columns)
    pairwise distinct (:func:`tilemagic.layout.tile.distinct` of their row-major index)?"""
    if hi.size == 0:
        return True
    lmin, lmax = int(lo.min()), int(lo.max())
    return distinct(hi.astype(np.int64) * (lmax - lmin + 1) + (lo - lmin))


def _check_injective(decl, co, numel, span):
    """Two elements must never share a register of one thread (local) or a TMEM cell (tmem)."""
    from .common import linear_tid

    zero = np.zeros(numel, np.int64)
    if decl.kind == "local":
        hi, lo = linear_tid(co, numel), co.get("m", zero)
        what = "the same register of the same thread"
    else:
        hi, lo = co.get("TLane", zero), co.get("TCol", zero)
        what = "the same TMEM cell"
    if not _distinct_pairs(np.asarray(hi), np.asarray(lo)):
        raise TileTypeError(f"the layout of '{decl.name}' puts two elements in {what}", span,
                            hint="every element needs its own place; check for a stride of 0 or overlapping strides")


def _classify(layout, shape):
    """``(letter, sub_slab)`` of a TMEM layout written as ``S[...]`` (TVM ``_classify_tmem_datapath``), or (None, 0)."""
    from ..layout import tmem_datapath_layout

    rows, cols = shape
    # a TCol offset is a column window of the data path (TVM honours it through the layout slice)
    layout = TileLayout(layout.shard, layout.replica, tuple((a, v) for a, v in layout.offset if a != "TCol"))
    cands = []
    if rows == 128:
        cands = [("D", 0)]
    elif rows == 64:
        cands = ([("B", 0)] if cols % 2 == 0 else []) + [("F", 0), ("F", 1)]
    for letter, sub in cands:
        try:
            if layout.is_equal(tmem_datapath_layout(letter, rows, cols, sub)):
                return letter, sub
        except ValueError:
            pass
    return None, 0


# ----------------------------------------------------------------------------- regions
def _region(r: ast.Region, bufs: dict[str, ir.Buffer], rank: int = 0, edge: bool = False) -> RegionRef:
    """The constant region ``r`` names, its bounds in ``cta_rank`` evaluated for the CTA of rank ``rank``;
    ``edge``: a global region may reach past its buffer's end (a ``copy_async`` global <-> shared, whose variants
    decide: TMA fills or drops the out-of-bound elements, the others decline).

    Raises
    ------
    TileTypeError
        An unknown buffer, an mbarrier, a wrong number of indices, or a region out of bounds (for a bound in
        ``cta_rank``: naming the rank), a division by zero in a bound for this rank.
    """
    buf = bufs.get(r.name)
    if buf is None:
        known = ", ".join(b.name for b in bufs.values() if not b.is_mbarrier) or "none declared yet"
        raise TileTypeError(f"unknown buffer '{r.name}'", r.name_span,
                            hint=f"declare it before use (declared: {known})")
    if buf.is_mbarrier:
        raise TileTypeError(f"'{r.name}' is an mbarrier, not a buffer of data", r.name_span,
                            hint=f"name it in `mbar={r.name}`, `arrive {r.name}` or `wait {r.name} phase P`; "
                                 "copies and checks move and compare data buffers")
    if r.slices is None:
        return RegionRef(buf, (0,) * len(buf.shape), tuple(buf.shape), r.span)
    if len(r.slices) != len(buf.shape):
        raise TileTypeError(
            f"'{r.name}' has {len(buf.shape)} dimension(s) {list(buf.shape)} "
            f"but the region gives {len(r.slices)} index(es)",
            r.span)
    begins: list[int] = []
    extents: list[int] = []
    for s, dim in zip(r.slices, buf.shape):
        try:
            start, stop_at = ast.bound_at(s.start, rank), ast.bound_at(s.stop, rank)
        except ZeroDivisionError as exc:
            raise TileTypeError(f"division by zero in a region bound for {CTA_RANK} = {rank}", exc.args[0],
                                hint="every CTA of the cluster evaluates the bound with its own rank") from None
        if s.point:
            assert start is not None  # a point index `k` always has its value (parser: Slice(k, k + 1, True))
            b, e = start, 1
        else:
            b = 0 if start is None else start
            stop = dim if stop_at is None else stop_at
            e = stop - b
        if b < 0 or b >= dim or e <= 0 or (b + e > dim and not (edge and buf.scope == "global")):
            if s.uses_rank:
                shown = f"{b}" if s.point else f"{b}:{b + e}"
                raise TileTypeError(f"index out of range for dimension of extent {dim} for {CTA_RANK} = {rank} "
                                    f"(the bound is {shown})", s.span,
                                    hint=f"valid: 0 <= start < stop <= {dim} for every rank of the cluster")
            raise TileTypeError(f"index out of range for dimension of extent {dim}", s.span,
                                hint=f"valid: 0 <= start < stop <= {dim}")
        begins.append(b)
        extents.append(e)
    return RegionRef(buf, tuple(begins), tuple(extents), r.span)


def _mbarrier(name: str, span: Span, bufs: dict[str, ir.Buffer], what: str) -> ir.Buffer:
    """The mbarrier ``name`` names (``what``: where it is named, for the message)."""
    buf = bufs.get(name)
    known = ", ".join(b.name for b in bufs.values() if b.is_mbarrier)
    if buf is None:
        raise TileTypeError(f"unknown mbarrier '{name}' in {what}", span,
                            hint=f"declare it before use: `mbarrier {name} [count=N]`"
                                 + (f" (declared mbarriers: {known})" if known else ""))
    if not buf.is_mbarrier:
        raise TileTypeError(f"'{name}' in {what} is a {buf.scope} buffer, not an mbarrier", span,
                            hint="declare an mbarrier with `mbarrier NAME [count=N]` and name it"
                                 + (f" (declared mbarriers: {known})" if known else ""))
    return buf


#: the CTA's rank in its cluster (``%cluster_ctarank``): not a function of ``tx``, bound in the environment of
#: :func:`~tilemagic.ir.evaluate.eval_static` (:func:`rank_env`)
RANK_VAR = ir.ThreadVar(CTA_RANK)


def rank_ir(e: int | ast.RankExpr) -> ir.Expr:
    """The IR of an integer expression in ``cta_rank`` (``cta_rank`` as ``ir.ThreadVar("cta_rank")``)."""
    if isinstance(e, int):
        return ir.Const(e)
    if e.op == "cta_rank":
        return RANK_VAR
    if e.op == "const":
        return ir.Const(e.value)
    assert e.a is not None and e.b is not None  # the parser builds binary nodes with both operands
    return ir.Bin(e.op, rank_ir(e.a), rank_ir(e.b))


def rank_condition(lo: int, hi: int, cluster: int) -> ir.Expr:
    """The condition selecting the ranks ``lo .. hi - 1`` of a cluster of ``cluster`` CTAs."""
    if hi - lo == 1:
        return ir.Bin("==", RANK_VAR, ir.Const(lo))
    if lo == 0:
        return ir.Bin("<", RANK_VAR, ir.Const(hi))
    if hi == cluster:
        return ir.Bin(">=", RANK_VAR, ir.Const(lo))
    return ir.Bin("and", ir.Bin(">=", RANK_VAR, ir.Const(lo)), ir.Bin("<", RANK_VAR, ir.Const(hi)))


def guard_expr(guard: ast.Guard) -> ir.Expr:
    """The IR condition of a guard: ``AXIS OP VALUE`` terms joined by ``and`` (thread axes as ``ir.ThreadVar``,
    ``cta_rank`` as ``ir.ThreadVar("cta_rank")``)."""
    cond: ir.Expr | None = None
    for t in guard.terms:
        term = ir.Bin(t.op, ir.ThreadVar(t.axis), ir.Const(t.value))
        cond = term if cond is None else ir.Bin("and", cond, term)
    assert cond is not None  # the parser gives every guard at least one term
    return cond


def guard_threads(guard: ast.Guard | None, threads: int, rank: int = 0) -> int:
    """How many threads of a CTA of ``threads`` threads (of cluster rank ``rank``) execute a statement under
    ``guard``."""
    return threads if guard is None else int(np.count_nonzero(holds([guard_expr(guard)], threads, rank=rank)))


def guard_ranks(guard: ast.Guard | None, threads: int, cluster: int) -> tuple[int, ...]:
    """The ranks of a cluster of ``cluster`` CTAs (of ``threads`` threads) in which some thread executes a
    statement under ``guard``: the guard evaluated per rank (``env={ir.ThreadVar("cta_rank"): r}``).  A guard on
    thread axes only lets every rank run; a rank in which it lets no thread run is excluded.  When it excludes
    every rank, every rank (the checker reports such a guard: it selects no thread)."""
    ranks = tuple(r for r in range(cluster) if guard_threads(guard, threads, r))
    return ranks or tuple(range(cluster))


def _check_guard_scope(guard: ast.Guard, exec_scope: str, threads: int, what: str | None = None,
                       rank: int = 0) -> None:
    """A copy runs on whole instances of its exec scope (TVM TIRx ``_all_threads_active``,
    ``apache-tvm 0.27.0.post1``), a ``.sync.aligned`` instruction on whole warps (PTX ISA 9.0 §9.7.16.8.5):
    the guard must select every thread of an instance or none."""
    size = threads if exec_scope == "cta" else THREADS_PER[exec_scope]
    if size == 1:
        return
    mask = holds([guard_expr(guard)], threads, rank=rank)
    split = [k for k in range(-(-threads // size)) if 0 < np.count_nonzero(mask[k * size:(k + 1) * size])
             < min(size, threads - k * size)]
    if split:
        inst = split[0]
        who = what or f"a {exec_scope}-scope copy"
        last = min(threads, inst * size + size) - 1
        raise TileTypeError(
            f"the guard `{guard}` splits {exec_scope} {inst} (threads {inst * size}..{last}): "
            f"{who} runs on all {size} threads of each {exec_scope} it executes in",
            guard.span, hint="guard whole instances (e.g. `if warpid == 1:` around a warp copy), or use a narrower "
                             "scope (`thread.copy_async` under `if tx == 0:`)")


def _stmt_text(source: str, span: Span) -> str:
    lines = split_lines(source)
    if 1 <= span.line <= len(lines):
        text = lines[span.line - 1].split("#", 1)[0].strip()
        return " ".join(text.split())
    return ""


# ----------------------------------------------------------------------------- check
def check(prog: ast.Program, name: str | None = None, *, name_span: Span | None = None,
          arch: str = "sm_100a") -> TypedProgram:
    """Resolve and validate a parsed program.

    Parameters
    ----------
    prog : Program
    name : str, optional
        The cell's NAME (``%%tilecopy NAME``); the ``kernel`` statement's name wins for the
        CUDA kernel, the cell name is used when there is none.
    arch : str, default "sm_100a"
        The target whose resource limits apply (:mod:`tilemagic.lower.limits`).

    Raises
    ------
    TileTypeError, LoweringError
        Located at the offending declaration or statement.
    """
    kname = prog.kernel.name if prog.kernel else (name or "tilecopy_kernel")
    if prog.kernel:
        check_identifier(kname, prog.kernel.name_span, "kernel")
    elif name:
        # a NAME given outside the text (``name=``, the CLI's file name) is located at the first statement
        name_span = name_span or (prog.items[0].span if prog.items else Span.point(1, 1))
        if not (name.isidentifier() and name.isascii()):
            raise TileTypeError(f"cell name '{name}' is not an identifier", name_span,
                                hint="use letters, digits and _, not starting with a digit")
        check_identifier(name, name_span, "kernel")
    cluster = prog.kernel.cluster if prog.kernel else 1
    if cluster > 1:
        m_sm = re.match(r"sm_(\d+)", arch or "")
        if m_sm is not None and int(m_sm.group(1)) < MIN_SM:
            assert prog.kernel is not None and prog.kernel.cluster_span is not None  # cluster > 1 is written there
            raise TileTypeError(f"a cluster needs sm_{MIN_SM} or newer; the target is {arch}",
                                prog.kernel.cluster_span,
                                hint=f"target sm_{MIN_SM}a or newer (the CPU simulator runs clusters anywhere), or "
                                     "drop `cluster=`")
    bufs: dict[str, ir.Buffer] = {}
    tmem_next = 0
    items: list[ProgramItem] = []
    guarded: list[ast.Guard | None] = []  # the guards of the statements, to check against the CTA size
    scopes_used = []
    for item in prog.items:
        if isinstance(item, ast.BufferDecl):
            check_identifier(item.name, item.name_span, "buffer")
            if item.name in bufs:
                raise TileTypeError(f"buffer '{item.name}' is declared twice", item.name_span)
            if item.name == kname:
                raise TileTypeError(f"buffer '{item.name}' has the kernel's name", item.name_span)
            buf = _make_buffer(item)
            if item.kind == "tmem":
                if item.alias is not None:
                    tgt = bufs.get(item.alias.target)
                    if tgt is None or tgt.scope != "tmem":
                        raise TileTypeError(f"'at {item.alias.target}': no tmem buffer of that name declared before",
                                            item.alias.target_span)
                    buf.tmem_col = tgt.tmem_col + item.alias.cols
                    buf.alias_of = tgt.name
                    if buf.tmem_col + buf.tmem_ncols > tgt.tmem_col + tgt.tmem_ncols:
                        raise TileTypeError(
                            f"'{item.name}' at {tgt.name} + {item.alias.cols} spans 32-bit columns "
                            f"{item.alias.cols}..{item.alias.cols + buf.tmem_ncols - 1} of {tgt.name}, which has "
                            f"{tgt.tmem_ncols} columns", item.alias.span,
                            hint=f"an alias must lie inside the buffer it aliases; make {tgt.name} wider")
                    if isinstance(tgt.layout, TileLayout) and tgt.layout.replica:
                        # a replicated buffer's lanes are its rows' lanes and every copy's: an alias reading them
                        # (`tmem all: float32[128, 4] at T`) must stay inside that footprint
                        (lo, hi), (tlo, thi) = tmem_lanes(buf.layout), tmem_lanes(tgt.layout)
                        if lo < tlo or hi > thi:
                            raise TileTypeError(
                                f"'{item.name}' at {tgt.name} reaches TMEM lanes {lo}..{hi}; {tgt.name} with its "
                                f"replicas covers lanes {tlo}..{thi}", item.alias.span,
                                hint=f"an alias must lie inside the buffer it aliases; {tgt.name}'s replicas "
                                     "(`+ R[...]`) set its lanes")
                else:
                    buf.tmem_col = tmem_next
                    tmem_next += buf.tmem_ncols
                    buf.alias_of = None
            bufs[item.name] = buf
        elif isinstance(item, ast.MbarrierDecl):
            check_identifier(item.name, item.name_span, "buffer")
            if item.name in bufs:
                raise TileTypeError(f"'{item.name}' is declared twice", item.name_span,
                                    hint="buffers and mbarriers share one namespace: rename one")
            if item.name == kname:
                raise TileTypeError(f"mbarrier '{item.name}' has the kernel's name", item.name_span,
                                    hint="rename the mbarrier or the kernel")
            bufs[item.name] = ir.Buffer(item.name, "shared", "uint64", (1,), None, per_thread=1, span=item.span,
                                        mbar_count=item.count)
        elif isinstance(item, ast.ArriveStmt):
            bar = _mbarrier(item.bar, item.bar_span, bufs, "`arrive`")
            items.append(ArriveItem(bar, item.expect_tx, item.auto, item.span, item.guard))
            guarded.append(item.guard)
        elif isinstance(item, ast.MbarWaitStmt):
            bar = _mbarrier(item.bar, item.bar_span, bufs, "`wait`")
            items.append(MbarWaitItem(bar, item.phase, item.span, item.guard))
            guarded.append(item.guard)
        elif isinstance(item, (ast.GroupStmt, ast.FenceStmt, ast.TcgenFenceStmt)):
            items.append(item)
            guarded.append(item.guard)
        elif isinstance(item, ast.TcgenCommitStmt):
            items.append(_commit_item(item, bufs, cluster))
            guarded.append(item.guard)
        elif isinstance(item, ast.CopyStmt):
            # the ranks the guard lets run (its thread terms are rank-independent, so the largest CTA serves
            # while the kernel's size is not known yet)
            cap = limits_for(arch).threads_per_cta
            runs = guard_ranks(item.guard, min(cap, max(1, (prog.kernel.threads if prog.kernel else None) or cap)),
                               cluster)
            ops = _copy_ops(item, bufs, prog.source, cluster, runs)
            items.append(CopyItem(ops[0], item.guard, ops if ops[0].rank is not None else ()))
            guarded.append(item.guard)
            scopes_used.append((item.scope, item.op_span))
        elif isinstance(item, ast.ClusterSyncStmt):
            if cluster == 1:
                raise TileTypeError("`cluster_sync` needs a cluster: this kernel is one CTA", item.span,
                                    hint="`cta_sync` synchronises the threads of a CTA; for a cluster write "
                                         "`kernel NAME threads=N cluster=C` first")
            items.append(item)
        elif isinstance(item, (ast.WaitStmt, ast.SyncStmt)):
            items.append(item)
            guarded.append(getattr(item, "guard", None))
        elif isinstance(item, ast.CheckStmt):
            lhs, rhs = _region(item.lhs, bufs), _region(item.rhs, bufs)
            for r in (lhs, rhs):
                if r.buf.scope != "global":
                    raise TileTypeError(f"check compares global buffers; '{r.buf.name}' is {r.buf.scope}", r.span,
                                        hint="copy it to a global buffer first")
            if lhs.buf.dtype != rhs.buf.dtype:
                raise TileTypeError(f"check compares {lhs.buf.dtype} with {rhs.buf.dtype}", item.span)
            if lhs.nonunit != rhs.nonunit:
                raise TileTypeError(f"check compares regions of shapes {list(lhs.nonunit)} and {list(rhs.nonunit)}",
                                    item.span)
            items.append(CheckItem(lhs, rhs, _stmt_text(prog.source, item.span), item.span))

    # ---- resources of the target (limits.py): shared memory, registers, arguments, host memory
    lim = limits_for(arch)
    check_buffers(bufs.values(), lim, tmem_slot=any(b.scope == "tmem" for b in bufs.values()))

    # ---- CTA size
    tspan: Span | None
    if prog.kernel and prog.kernel.threads is not None:
        threads = prog.kernel.threads
        tspan = prog.kernel.threads_span or prog.kernel.span
        check_threads(threads, tspan, lim)
    else:
        tspan = prog.kernel.span if prog.kernel else None
        for scope, span in scopes_used:
            if scope == "cta":
                raise TileTypeError("a cta-scope op needs the CTA size", span,
                                    hint="add `kernel NAME threads=N` as the first line")
        threads = max([THREADS_PER[SCOPE_KIND[s]] for s, _ in scopes_used] + [1])
        if any(b.scope == "tmem" for b in bufs.values()):
            threads = max(threads, 32)
    for scope, span in scopes_used:
        need = THREADS_PER.get(SCOPE_KIND[scope], 1)
        if threads < need or threads % need:
            raise TileTypeError(
                f"a {scope}-scope op needs a CTA of a multiple of {need} threads; the kernel has {threads}", span,
                hint=f"use `kernel {kname} threads={max(need, threads // need * need or need)}`")

    # ---- guards: each selects at least one thread of the CTA; a copy's guard selects whole instances of its scope
    for g in guarded:
        if g is not None and all(guard_threads(g, threads, r) == 0 for r in range(cluster)):
            where = f" in any CTA of the {cluster}-CTA cluster" if cluster > 1 else ""
            raise TileTypeError(f"the guard `{g}` selects no thread of the {threads}-thread CTA{where}", g.span,
                                hint="the statement would never execute: fix the condition or the CTA size")
    for it in items:
        for rk in range(cluster):
            if isinstance(it, CopyItem) and it.guard is not None:
                _check_guard_scope(it.guard, it.op.exec_scope, threads, rank=rk)
            elif isinstance(it, ast.WaitStmt) and it.guard is not None:  # tcgen05.wait::ld|st.sync.aligned: warps
                _check_guard_scope(it.guard, "warp", threads, what=f"`wait {it.kind}` (.sync.aligned)", rank=rk)
            elif isinstance(it, TcgenCommitItem):
                _check_commit_threads(it, threads, rk)

    # ---- TMEM plan (PTX ISA 9.0 §9.7.16.7.1: power of two >= 32 columns, <= 512)
    tmem = [b for b in bufs.values() if b.scope == "tmem"]
    commit = next((it for it in items if isinstance(it, TcgenCommitItem)), None)
    if commit is not None and not tmem:
        raise TileTypeError("`tcgen05.commit` in a kernel without tensor memory: it tracks the tcgen05.cp copies "
                            "into TMEM, and this kernel declares no tmem buffer", commit.span,
                            hint="declare the destination (`tmem T: ...`) and copy into it with "
                                 "`if tx == 0: thread.copy_async T <- S`; an mbarrier for other copies takes "
                                 "`arrive BAR`")
    fence = next((it for it in items if isinstance(it, TcgenFenceItem)), None)
    if fence is not None and not tmem:
        raise TileTypeError(f"`tcgen05.fence::{fence.kind}` in a kernel without tensor memory: it orders tcgen05 "
                            "operations (tcgen05.cp, tcgen05.ld/st) across a thread synchronisation (PTX ISA 9.0 "
                            "§9.7.16.6.4), and this kernel declares no tmem buffer", fence.span,
                            hint="drop the fence (a `cta_sync` or `wait BAR` orders generic memory by itself), or "
                                 "use `fence.proxy.async` to order generic stores before an async-proxy read")
    tmem_cols = 0
    if tmem:
        if threads % 32:
            raise TileTypeError(f"TMEM needs whole warps (warp 0 allocates); threads={threads}", tspan,
                                hint="use a multiple of 32 threads")
        tmem_cols = check_tmem_columns(max(b.tmem_col + b.tmem_ncols for b in tmem), tmem, lim)
    return TypedProgram(kname, threads, bufs, tmem_cols, items, prog.source,
                        prog.kernel.span if prog.kernel else None, cluster=cluster)


def _check_commit_threads(it: TcgenCommitItem, threads: int, rank: int) -> None:
    """More threads execute a ``tcgen05.commit BAR`` than ``BAR`` counts arrivals: every committing thread's commit
    is one arrive (count 1) on ``BAR`` (PTX ISA 9.0 §9.7.16.12.1), so they complete several phases at once and a
    ``wait BAR phase P`` no longer names one (§9.7.13.15.16).  Only the thread that issued the tcgen05.cp commits."""
    n = guard_threads(it.guard, threads, rank)
    count = it.bar.mbar_count or 1
    if n <= count:
        return
    who = f"all {n} threads" if it.guard is None else f"{n} threads (`if {it.guard}`)"
    raise TileTypeError(
        f"{who} commit to mbarrier {it.bar.name}, a barrier of count {count}: each tcgen05.commit is one arrive "
        f"(PTX ISA 9.0 §9.7.16.12.1), so {n} arrives complete {n // count} phase{'s' if n // count > 1 else ''} "
        f"and `wait {it.bar.name} phase P` names none of them", it.span,
        hint=f"only the thread that issued the tcgen05.cp commits: `if tx == 0: tcgen05.commit {it.bar.name}`")


def _commit_item(item: ast.TcgenCommitStmt, bufs: dict[str, ir.Buffer], cluster: int) -> TcgenCommitItem:
    """``tcgen05.commit BAR [cta_mask=M]`` checked: ``BAR`` a declared mbarrier; ``cta_mask`` (the multicast
    form, ``.multicast::cluster``, PTX ISA 9.0 §9.7.16.12.1) only in a cluster kernel and naming its ranks only."""
    bar = _mbarrier(item.bar, item.bar_span, bufs, "`tcgen05.commit`")
    if item.cta_mask is not None:
        assert item.mask_span is not None  # the parser sets both
        if cluster == 1:
            raise TileTypeError(f"cta_mask={item.cta_mask:#b} multicasts the commit's arrive to the CTAs of a "
                                "cluster, and the kernel has none", item.mask_span,
                                hint="write `kernel NAME threads=N cluster=C` first, or drop `cta_mask=`")
        if item.cta_mask >> cluster:
            rank = item.cta_mask.bit_length() - 1
            raise TileTypeError(f"cta_mask {item.cta_mask:#b} names rank {rank}, the cluster has {cluster} CTAs "
                                f"(ranks 0..{cluster - 1})", item.mask_span,
                                hint=f"bit i of the mask is the CTA of rank i: at most {2**cluster - 1:#b}")
    return TcgenCommitItem(bar, item.cta_mask, item.span, item.guard)


def _uses_rank(stmt: ast.CopyStmt) -> bool:
    """Is the copy lowered per rank: ``cta_rank`` in a region or an option, or a dsmem ``remote_cta_id=`` (the
    issuing rank decides the destination)?"""
    return (stmt.dst.uses_rank or stmt.src.uses_rank or stmt.option("remote_cta_id") is not None
            or any(isinstance(o.expr, ast.RankExpr) and o.expr.uses_rank for o in stmt.options))


def _copy_ops(item: ast.CopyStmt, bufs: dict[str, ir.Buffer], source: str, cluster: int,
              runs: tuple[int, ...] | None = None) -> tuple[CopyOp, ...]:
    """The op of a copy statement, or its op for every rank its guard lets run (``runs``, default every rank
    0..C-1; :func:`_uses_rank`; ``CopyOp.rank`` set), with the options resolved: ``mbar`` the mbarrier buffer,
    ``cta_mask`` an int, ``remote_cta_id`` an ``ir.Expr`` in ``cta_rank``, the others the written ``str``.
    Bounds and ``remote_cta_id`` are checked for those ranks only (a rank the guard excludes never executes
    the statement)."""
    ranked = _uses_rank(item)
    remote = item.option("remote_cta_id")
    if remote is not None and cluster == 1:
        raise TileTypeError("`remote_cta_id=` names another CTA of the cluster, and this kernel has no cluster",
                            remote.span, hint="declare the cluster on the kernel line: `kernel NAME threads=N "
                                              "cluster=2`; a copy inside one CTA needs no remote_cta_id")
    edge = item.op_name == "copy_async" and {getattr(bufs.get(x.name), "scope", None)
                                             for x in (item.dst, item.src)} == {"global", "shared"}
    ops = []
    for r in ((range(cluster) if runs is None else runs) if ranked else (None,)):
        rank = r or 0
        at = f" for {CTA_RANK} = {rank}" if ranked and cluster > 1 else ""
        dst, src = _region(item.dst, bufs, rank, edge), _region(item.src, bufs, rank, edge)
        if dst.buf is src.buf and all(max(a, b) < min(a + e, b + f) for a, e, b, f in
                                      zip(dst.begins, dst.extents, src.begins, src.extents)):
            if remote is None:
                raise TileTypeError(
                    f"source and destination regions of '{dst.buf.name}' overlap{at}", item.span,
                    hint="copy through a second buffer: threads copying overlapping regions race on the GPU")
        options: list[tuple[str, object, Span]] = []
        for o in item.options:
            value: object = o.value
            if o.key == "mbar":
                value = _mbarrier(o.value, o.value_span, bufs, "`mbar=`")
            elif o.key in ("cta_mask", *ast.INT_OPTIONS):
                value = o.expr  # an int (cta_group=: the smem->tmem variant declines 2 with its reason)
            elif o.key == "remote_cta_id":
                assert o.expr is not None  # the parser parses the value of every expression option
                try:
                    v = o.expr.at(rank) if isinstance(o.expr, ast.RankExpr) else o.expr
                except ZeroDivisionError as exc:
                    raise TileTypeError(f"division by zero in remote_cta_id for {CTA_RANK} = {rank}", exc.args[0],
                                        hint="every CTA of the cluster evaluates it with its own rank") from None
                if not 0 <= v < cluster:
                    raise TileTypeError(f"remote_cta_id={o.value} is {v} for {CTA_RANK} = {rank}: the cluster has "
                                        f"{cluster} CTAs (ranks 0..{cluster - 1})", o.value_span,
                                        hint="e.g. `remote_cta_id=cta_rank^1` (pairs) or "
                                             f"`remote_cta_id=(cta_rank+1)%{cluster}` (a ring)")
                value = rank_ir(o.expr)
            options.append((o.key, value, o.span))
        ops.append(CopyOp(item.op_name, SCOPE_KIND[item.scope], dst, src, item.dispatch,
                          _stmt_text(source, item.span), item.span, item.dispatch_span, tuple(options), rank=r))
    return tuple(ops)


# ----------------------------------------------------------------------------- lower
class KernelBuilder:
    """Lowering state shared by the variants of one kernel (the :class:`~tilemagic.lower.dispatch.Builder`)."""

    def __init__(self, tp: TypedProgram) -> None:
        self.tp = tp
        self.tmem_addr = ir.Buffer("tmem_addr", "shared", "uint32", (1,), per_thread=1) if tp.tmem_cols else None
        self._taken = set(tp.buffers) | {tp.name}
        self._vars: list[ir.LoopVar] = []
        self.tensormaps: dict[tuple, ir.TensorMap] = {}

    @property
    def tmem_buffers(self) -> tuple[ir.Buffer, ...]:
        """The kernel's TMEM buffers, in declaration order (aliases included)."""
        return self.tp.by_scope("tmem")

    def tensormap(self, tmap: ir.TensorMap) -> ir.TensorMap:
        """One map per distinct :meth:`~tilemagic.ir.nodes.TensorMap.key` (TVM's descriptor cache): the
        registered one, or ``tmap`` named apart from the buffers, the kernel and the other maps."""
        from dataclasses import replace

        key = tmap.key()
        if key not in self.tensormaps:
            name, k = tmap.name, 1
            while name in self._taken:
                name, k = f"{tmap.name}{k}", k + 1
            self._taken.add(name)
            self.tensormaps[key] = replace(tmap, name=name)
        return self.tensormaps[key]

    def loop_vars(self, n: int) -> tuple[ir.LoopVar, ...]:
        """``n`` loop variables named apart from every buffer and the kernel (i, j, k, ..., then i0, i1, ...).

        The same objects for every op of the kernel (the ops' loops never nest): two ops of the same shape build
        the same hash-consed index expressions (:class:`~tilemagic.ir.nodes.Expr`), which the simulator's
        per-structure analyses then share."""
        if len(self._vars) < n:
            names = itertools.chain("ijklpqrsuvw", (f"i{k}" for k in itertools.count()))
            free = list(itertools.islice((c for c in names if c not in self._taken), n))
            self._vars += [ir.LoopVar(c) for c in free[len(self._vars):]]
        return tuple(self._vars[:n])


def _with_span(stmts, span):
    for s in stmts:
        for node in ir.walk(s):
            if node.span is None:
                node.span = span
    return stmts


def lower(tp: TypedProgram,
          target: TargetSpec) -> tuple[ir.Kernel, list[DispatchRecord], list[tuple[str, Span | None]]]:
    """Dispatch every op for ``target`` and build the kernel.

    Returns
    -------
    (Kernel, list of DispatchRecord, list of (warning text, Span))

    Raises
    ------
    DispatchError
        An op no variant accepts (with the why-table).
    """
    b = KernelBuilder(tp)
    body: list[ir.Stmt] = []
    records: list[DispatchRecord] = []
    warns: list[tuple[str, Span | None]] = []
    warp0 = ir.Bin("==", ir.ThreadVar("warpid"), ir.Const(0))
    body += mbarrier_prologue(tp.mbarriers, tp.cluster)
    # the top-level statements of each item, in order (expect_tx=auto looks for copies between an arrive and a wait)
    segments: list[tuple[ProgramItem, list[ir.Stmt]]] = []
    if tp.tmem_cols:
        assert b.tmem_addr is not None  # KernelBuilder creates it whenever tp.tmem_cols
        body += [
            ir.Comment(f"TMEM: allocate {tp.tmem_cols} columns (warp 0), publish the address to the CTA"),
            ir.If(warp0, ir.Seq((ir.TcgenAlloc(b.tmem_addr, tp.tmem_cols), ir.TcgenRelinquish()))),
            ir.TcgenFence("before_thread_sync"), ir.Barrier(), ir.TcgenFence("after_thread_sync"),
        ]
    for item in tp.items:
        start = len(body)
        if isinstance(item, CopyItem) and item.ranked:
            stmts, rec, op_warns = _lower_ranked(item, target, tp, b)
            records.append(rec)
            warns += op_warns
            op = item.op
            body.append(ir.Comment(f"L{op.span.line}: {op.text}    [{op.op}/{rec.chosen}]", op=op.op,
                                   variant=rec.chosen, span=op.span))
            body += stmts
        elif isinstance(item, CopyItem):
            op = item.op
            ctx = DispatchContext(target, tp.threads, op.exec_scope, b, cluster=tp.cluster,
                                  guard=None if item.guard is None else guard_expr(item.guard))
            stmts, rec = run_dispatch(op, ctx)
            records.append(rec)
            warns += ctx.warnings
            body.append(ir.Comment(f"L{op.span.line}: {op.text}    [{op.op}/{rec.chosen}]", op=op.op,
                                   variant=rec.chosen, span=op.span))
            body += _guarded(item.guard, _with_span(list(stmts), op.span), op.span)
        elif isinstance(item, ArriveItem) and item.auto and tp.cluster > 1:
            # in a Seq of its own: resolve_expect_tx may replace the arrive by one per rank
            body += [ir.Seq(tuple(_guarded(item.guard, [_sync_node(item)], item.span)), span=item.span)]
        elif isinstance(item, (WaitItem, ArriveItem, MbarWaitItem, GroupItem, FenceItem, TcgenCommitItem,
                               TcgenFenceItem)):
            body += _guarded(item.guard, [_sync_node(item)], item.span)
        elif isinstance(item, (SyncItem, ClusterSyncItem)):
            bar: ir.Stmt = ir.Barrier(span=item.span) if isinstance(item, SyncItem) else ir.ClusterSync(span=item.span)
            if tp.tmem_cols:  # order tcgen05 traffic across the barrier (PTX ISA 9.0 §9.7.16.6.4)
                body += [ir.TcgenFence("before_thread_sync", span=item.span), bar,
                         ir.TcgenFence("after_thread_sync", span=item.span)]
            else:
                body.append(bar)
        segments.append((item, body[start:]))
    resolve_expect_tx(segments, tp.threads, tp.cluster)
    if tp.tmem_cols:
        assert b.tmem_addr is not None  # KernelBuilder creates it whenever tp.tmem_cols
        body += [
            ir.Comment(f"TMEM: free the {tp.tmem_cols} columns (the allocating warp)"),
            ir.TcgenFence("before_thread_sync"), ir.Barrier(), ir.TcgenFence("after_thread_sync"),
            ir.If(warp0, ir.TcgenDealloc(b.tmem_addr, tp.tmem_cols)),
        ]
    kernel = ir.Kernel(
        tp.name, tp.threads,
        params=tp.by_scope("global"),
        shared=tp.by_scope("shared") + ((b.tmem_addr,) if b.tmem_addr else ()),
        locals=tp.by_scope("local"),
        tmem=tp.by_scope("tmem"),
        tmem_cols=tp.tmem_cols,
        tmem_addr=b.tmem_addr,
        body=ir.Seq(tuple(body)),
        tensormaps=tuple(b.tensormaps.values()),
        cluster=tp.cluster,
    )
    return kernel, records, warns


def _plan_key(x: object) -> object:
    """A structural key of lowered IR: equal for two plans that emit the same statements (expressions are
    hash-consed and buffers and loop variables shared by the kernel, so they compare by identity; tensor maps
    by their registered name, one per :meth:`~tilemagic.ir.nodes.TensorMap.key`); spans do not count."""
    if isinstance(x, ir.Stmt):
        return (type(x).__name__, *(_plan_key(getattr(x, f.name)) for f in dataclasses.fields(x) if f.name != "span"))
    if isinstance(x, (list, tuple)):
        return tuple(_plan_key(v) for v in x)
    if isinstance(x, ir.TensorMap):
        return ("tensormap", x.name)
    if isinstance(x, (ir.Expr, ir.Buffer)):
        return ("id", id(x))
    if x is None or isinstance(x, (int, float, str, bool)):
        return x
    return ("repr", type(x).__name__, repr(x))


def later_rank_branches(body: ir.Stmt) -> set[int]:
    """The ``id`` of every rank branch (a top-level ``ir.GuardIf`` on ``cta_rank``) after the first of its source
    line: what :func:`_lower_ranked` emitted for ranks whose plan differs from the first one's.  A reader that
    compares one CTA's instructions with TVM's (whose TIR is one program with a symbolic rank) skips them and
    reads the first rank's plan, the one the why-table shows."""
    seen: set[int] = set()
    out: set[int] = set()
    for s in body.body if isinstance(body, ir.Seq) else (body,):
        if isinstance(s, ir.GuardIf) and s.span is not None and any(e is RANK_VAR for e in ir.iter_exprs(s.cond)):
            if s.span.line in seen:
                out.add(id(s))
            seen.add(s.span.line)
    return out


def _lower_ranked(item: CopyItem, target: TargetSpec, tp: TypedProgram,
                  b: KernelBuilder) -> tuple[list[ir.Stmt], DispatchRecord, list[tuple[str, Span | None]]]:
    """Lower a statement that depends on the CTA's rank once per rank, with that rank's concrete regions.

    Every rank must dispatch to the same variant.  When every rank's IR is identical it is emitted once;
    otherwise each run of consecutive ranks with identical IR gets an ``ir.GuardIf`` on ``cta_rank``
    (:func:`rank_condition`), and the why-table (rank 0's) gains the row "ranks 1..C-1: same variant; plan per
    rank".

    Raises
    ------
    LoweringError
        Two ranks dispatch to different variants (located at the statement; hint ``dispatch=``).
    DispatchError
        No variant accepts some rank's op (its why-table).
    """
    plans: list[list[ir.Stmt]] = []
    recs: list[DispatchRecord] = []
    warns: list[tuple[str, Span | None]] = []
    for op in item.ranked:
        ctx = DispatchContext(target, tp.threads, op.exec_scope, b, cluster=tp.cluster,
                              guard=None if item.guard is None else guard_expr(item.guard))
        try:
            stmts, rec = run_dispatch(op, ctx)
        except DispatchError as e:
            if tp.cluster > 1:  # the why-table is this rank's: say which
                e.message = f"{CTA_RANK} = {op.rank}: {e.message}"
                e.args = (e.message,)
            raise
        warns += [w for w in ctx.warnings if w not in warns]  # (one warning for the ranks that share it)
        plans.append(_with_span(list(stmts), op.span))
        recs.append(rec)
    op0 = item.ranked[0]
    chosen = [rec.chosen for rec in recs]
    if len(set(chosen)) > 1:
        by: dict[str | None, list[int]] = {}
        for r, c in enumerate(chosen):
            by.setdefault(c, []).append(r)
        parts = "; ".join(f"{CTA_RANK} {', '.join(map(str, rs))}: {c}" for c, rs in by.items())
        raise LoweringError(f"the CTAs of the cluster dispatch this copy to different variants ({parts})",
                            op0.span, hint="a statement runs one variant in every CTA: force one with "
                                           f"`dispatch={chosen[0]}`, or give every rank regions alike")
    keys = [_plan_key(p) for p in plans]
    rec0 = recs[0]
    if len(set(keys)) == 1:
        return _guarded(item.guard, plans[0], op0.span), rec0, warns
    ranks = [op.rank or 0 for op in item.ranked]
    rest = ranks[1:]
    others = (f"rank {rest[0]}" if len(rest) == 1 else f"ranks {rest[0]}..{rest[-1]}"
              if rest == list(range(rest[0], rest[-1] + 1)) else "ranks " + ", ".join(map(str, rest)))
    rec0 = dataclasses.replace(rec0, notes=rec0.notes + ((others, "same variant", "plan per rank"),))
    # a branch per run of consecutive ranks with one plan; a rank the guard excludes gets none
    out: list[ir.Stmt] = []
    lo = 0
    for hi in range(1, len(plans) + 1):
        if hi == len(plans) or keys[hi] != keys[lo] or ranks[hi] != ranks[hi - 1] + 1:
            out.append(ir.GuardIf(rank_condition(ranks[lo], ranks[hi - 1] + 1, tp.cluster),
                                  ir.Seq(tuple(_guarded(item.guard, plans[lo], op0.span))), span=op0.span))
            lo = hi
    return out, rec0, warns


# ----------------------------------------------------------------------------- mbarriers, guards, expect_tx=auto
def mbarrier_prologue(bars: tuple[ir.Buffer, ...], cluster: int = 1) -> list[ir.Stmt]:
    """Thread 0 initialises every mbarrier, fences the inits, and the CTA (the cluster) synchronises.

    ``mbarrier.init.shared::cta.b64`` (PTX ISA 9.0 §9.7.13.15.9) sets phase 0, ``count`` pending arrivals and
    tx-count 0; ``fence.mbarrier_init.release.cluster`` (§9.7.13.4) releases the inits, and the barrier
    makes them visible to every thread before its first ``arrive``/``wait``/TMA issue (the setup of TVM's
    ``test_dsmem.py``, ``apache-tvm 0.27.0.post1``).  With a cluster (``cluster`` > 1) the barrier is
    ``cluster_sync`` (``ir.ClusterSync``, §9.7.13.3): the other CTAs' multicast and dsmem copies complete on
    these mbarriers, so their inits must be released to the cluster before any CTA issues one.  Empty without
    mbarriers.
    """
    if not bars:
        return []
    tx0 = ir.Bin("==", ir.ThreadVar("tx"), ir.Const(0))
    names = ", ".join(f"{m.name} (count {m.mbar_count})" for m in bars)
    which = "cluster barrier" if cluster > 1 else "CTA barrier"
    return [ir.Comment(f"mbarriers: thread 0 initialises {names}; fence; {which}"),
            ir.If(tx0, ir.Seq(tuple(ir.MbarInit(m, m.mbar_count or 1, span=m.span) for m in bars))),
            ir.Fence("mbarrier_init"), ir.ClusterSync() if cluster > 1 else ir.Barrier()]


def _guarded(guard: ast.Guard | None, stmts: list[ir.Stmt], span: Span) -> list[ir.Stmt]:
    """``stmts`` under ``guard`` (one ``ir.If`` around them), or ``stmts`` without one."""
    if guard is None or not stmts:
        return stmts
    return [ir.GuardIf(guard_expr(guard), ir.Seq(tuple(stmts)), span=span)]


def _sync_node(item) -> ir.Stmt:
    """The IR of a synchronisation statement (its guard aside)."""
    if isinstance(item, ArriveItem):
        return ir.MbarArrive(item.bar, item.expect_tx or 0, span=item.span)
    if isinstance(item, MbarWaitItem):
        return ir.MbarWait(item.bar, item.phase, span=item.span)
    if isinstance(item, GroupItem):
        return ir.AsyncGroup(item.kind, bulk=item.bulk, n=item.n, read=item.read, span=item.span)
    if isinstance(item, FenceItem):
        return ir.Fence(item.kind, span=item.span)
    if isinstance(item, TcgenCommitItem):
        return ir.TcgenCommit(item.bar, item.cta_group, item.cta_mask, span=item.span)
    if isinstance(item, TcgenFenceItem):
        return ir.TcgenFence(item.kind, span=item.span)
    return ir.TcgenWait(item.kind, span=item.span)


def _deliveries(s: ir.Stmt, scope: tuple[ir.Stmt, ...], threads: int, cluster: int) -> list[tuple[int, int]]:
    """``(receiving rank, bytes)`` of every issue of the copy ``s`` in every CTA: a TMA G2S box lands in the
    issuing CTA (unicast) or in every CTA whose bit is set in ``cta_mask`` (multicast, PTX ISA 9.0
    §9.7.9.25.5.2; bits at or above the cluster size are the variant's to refuse), ``tmap.box_bytes`` each; a
    dsmem ``BulkCopy`` lands its ``nbytes`` in the CTA of rank ``remote`` (§9.7.9.25.4.1)."""
    out: list[tuple[int, int]] = []
    for src in range(cluster):
        if isinstance(s, ir.TmaCopy):
            n = issue_count(scope, threads, src)
            if n:
                dests = [src] if s.cta_mask is None else [d for d in range(cluster) if s.cta_mask >> d & 1]
                out += [(d, n * s.tmap.box_bytes) for d in dests]
        elif isinstance(s, ir.BulkCopy):
            for d, n in issue_values(scope, threads, src, s.remote).items():
                if 0 <= d < cluster:
                    out.append((d, n * s.nbytes))
    return out


def resolve_expect_tx(segments: list[tuple[ProgramItem, list[ir.Stmt]]], threads: int, cluster: int = 1) -> None:
    """Fill in every ``arrive BAR expect_tx=auto``, per receiving CTA: the bytes that land in that CTA's shared
    memory and complete on its ``BAR`` (:func:`_deliveries`: its own TMA G2S copies with ``mbar=BAR``, every
    multicast of any rank whose ``cta_mask`` has its bit, every dsmem copy any rank sends to it with
    ``mbar=BAR``; TMA boxes count ``tmap.box_bytes``, out-of-bounds elements included), each times the times it
    is issued (guards evaluated per rank, loop trips), from the arrive up to the next ``wait BAR`` or ``arrive
    BAR expect_tx=auto`` (or the end of the kernel: no copy is counted twice).  Each arriving thread raises the
    tx-count by its share (the total divided by the threads executing the arrive in that CTA), so the phase
    expects exactly the bytes the copies complete (PTX ISA 9.0 §9.7.13.15.11).  When the share differs between
    the CTAs of a cluster, the arrive becomes one ``MbarArrive`` per rank under ``ir.GuardIf(cta_rank == r)``
    (the arrive of a cluster kernel is in an ``ir.Seq`` of its own for that).

    Raises
    ------
    LoweringError
        No copy naming ``mbar=BAR`` delivers bytes to a CTA executing the arrive (naming the CTA in a cluster),
        a total over 2**20 - 1 bytes per thread, or a total the arriving threads cannot share evenly (located
        at the arrive).
    """
    for k, (item, stmts) in enumerate(segments):
        if not (isinstance(item, ArriveItem) and item.auto):
            continue
        node = next(s for top in stmts for s in ir.walk(top) if isinstance(s, ir.MbarArrive))
        bar = item.bar
        totals = [0] * cluster
        found: list[list[tuple[int, int]]] = [[] for _ in range(cluster)]
        for later, lstmts in segments[k + 1:]:
            if (isinstance(later, MbarWaitItem) or isinstance(later, ArriveItem) and later.auto) and later.bar is bar:
                break  # the next wait on BAR, or the next arrive that counts its own copies
            for top in lstmts:
                for s, scope in ir.walk_scoped(top):
                    if not ((isinstance(s, ir.TmaCopy) and s.mbar is bar and s.direction == "g2s")
                            or (isinstance(s, ir.BulkCopy) and s.mbar is bar)):
                        continue
                    try:
                        got = _deliveries(s, scope, threads, cluster)
                    except Undetermined as e:
                        raise LoweringError(
                            f"expect_tx=auto cannot count the issues of the copy at line "
                            f"{s.span.line if s.span else '?'} ({e})", item.span,
                            hint="write the byte count: `arrive BAR expect_tx=BYTES`") from None
                    line = s.span.line if s.span else 0
                    for d, nbytes in got:
                        totals[d] += nbytes
                        if found[d] and found[d][-1][0] == line:
                            found[d][-1] = (line, found[d][-1][1] + nbytes)
                        else:
                            found[d].append((line, nbytes))
        shares: dict[int, tuple[int, tuple[tuple[int, int], ...]]] = {}
        for d in range(cluster):
            arrivers = guard_threads(item.guard, threads, d)
            if not arrivers:
                continue  # the arrive does not execute in this CTA
            who = f" in CTA {d}" if cluster > 1 else ""
            if not found[d]:
                if cluster > 1:
                    raise LoweringError(
                        f"expect_tx=auto on '{bar.name}' covers no bytes{who}: no copy with `mbar={bar.name}` "
                        f"delivers to CTA {d}'s shared memory between this arrive and the next `wait {bar.name}`",
                        item.span, hint="guard the arrive to the CTAs that receive (`if cta_rank == ...`), or "
                                        "write `expect_tx=BYTES`")
                raise LoweringError(
                    f"expect_tx=auto on '{bar.name}' covers no copy: no copy with `mbar={bar.name}` follows this "
                    f"arrive before the next `wait {bar.name}`", item.span,
                    hint=f"issue the TMA copies with `mbar={bar.name}` after the arrive, or write `expect_tx=BYTES`")
            total = totals[d]
            if total % arrivers:
                raise LoweringError(
                    f"expect_tx=auto: {total} bytes{who} cannot be shared evenly by the {arrivers} threads "
                    "executing this arrive", item.span, hint="let one thread arrive with the bytes: "
                                                             "`if tx == 0: arrive ...`")
            per = total // arrivers
            if per > MBAR_MAX_TX:
                raise LoweringError(
                    f"expect_tx=auto is {per} bytes per arriving thread{who}, more than an mbarrier's tx-count "
                    f"holds ({MBAR_MAX_TX}, PTX ISA 9.0 §9.7.13.15.1)", item.span,
                    hint="split the copies over several phases or mbarriers")
            shares[d] = (per, tuple(found[d]))
        if len(set(shares.values())) <= 1:
            per, src = next(iter(shares.values()))
            node.expect_tx = per
            node.auto_from = src
            continue
        # the CTAs expect different counts: one arrive per rank, each under its rank's guard
        parent = next(t for top in stmts for t in ir.walk(top) if isinstance(t, ir.Seq) and node in t.body)
        per_rank = tuple(ir.GuardIf(rank_condition(d, d + 1, cluster),
                                    ir.MbarArrive(bar, per, auto_from=src, span=item.span), span=item.span)
                         for d, (per, src) in shares.items())
        parent.body = tuple(x for t in parent.body for x in (per_rank if t is node else (t,)))
