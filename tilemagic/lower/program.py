"""From a parsed :class:`~tilemagic.lang.ast.Program` to a lowered :class:`~tilemagic.ir.nodes.Kernel`.

Two steps:

1. :func:`check` resolves names, dtypes, shapes and layouts (``S[...]``,
   ``datapath(...)``, ``frag(...)``), the CTA size, the TMEM allocation and the
   regions of every op; it raises located :class:`~tilemagic.errors.TileTypeError`
   / :class:`~tilemagic.errors.LoweringError`.
2. :func:`lower` dispatches every copy op (:func:`~tilemagic.lower.dispatch.run_dispatch`)
   and assembles the kernel: TMEM ``alloc`` + ``relinquish_alloc_permit`` by warp 0
   at the start, ``dealloc`` by warp 0 at the end (PTX ISA 9.0 §9.7.16.7.1), with the
   ``tcgen05.fence::*_thread_sync`` + ``__syncthreads()`` around them.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from ..arch.limits import limits_for
from ..arch.threads import THREAD_AXES, THREADS_PER
from ..errors import Span, TileTypeError, split_lines
from ..ir import nodes as ir
from ..lang import ast
from ..layout.tile import distinct
from .dispatch import DispatchContext, DispatchRecord, TargetSpec, run_dispatch
from .limits import check_buffers, check_threads, check_tmem_columns
from .names import check_identifier
from .ops import SCOPE_KIND, CopyOp, RegionRef


@dataclass(frozen=True)
class CopyItem:
    """A copy op of the description (``wg.copy_async T <- a``)."""
    op: CopyOp


#: ``wait ld`` / ``wait st`` (``tcgen05.wait::ld|st``, PTX ISA 9.0 §9.7.16.8.5) and ``cta_sync`` (a CTA barrier,
#: fenced for tcgen05 traffic when the kernel uses TMEM) need no checking: the parsed statements serve as items.
WaitItem = ast.WaitStmt
SyncItem = ast.SyncStmt


@dataclass(frozen=True)
class CheckItem:
    """``check LHS == RHS``: two global regions of one shape and dtype, compared after the launch."""
    lhs: RegionRef
    rhs: RegionRef
    text: str  # the statement's source text
    span: Span


#: One statement of a checked description, in source order.
ProgramItem = CopyItem | WaitItem | SyncItem | CheckItem


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

    def by_scope(self, scope):
        return tuple(b for b in self.buffers.values() if b.scope == scope)

    @property
    def copy_ops(self) -> list[CopyOp]:
        """The copy ops, in source order (one dispatch record each)."""
        return [it.op for it in self.items if isinstance(it, CopyItem)]

    @property
    def checks(self) -> list[CheckItem]:
        """The ``check`` statements, in source order."""
        return [it for it in self.items if isinstance(it, CheckItem)]


# ----------------------------------------------------------------------------- layouts
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
                hint="add `@ datapath(F, sub_slab=0)` or `@ datapath(B)` for 64 rows",
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
    from ..layout import TileLayout

    strides = None if lay.strides is None else [(s.value, s.axis) for s in lay.strides]
    offsets = [(o.value, o.axis) for o in lay.offsets]
    return TileLayout.from_spec(lay.extents, strides, offsets)


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

    from ..layout import TileLayout

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
def _region(r: ast.Region, bufs: dict[str, ir.Buffer]) -> RegionRef:
    buf = bufs.get(r.name)
    if buf is None:
        known = ", ".join(bufs) or "none declared yet"
        raise TileTypeError(f"unknown buffer '{r.name}'", r.name_span,
                            hint=f"declare it before use (declared: {known})")
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
        if s.point:
            assert s.start is not None  # a point index `k` always has its value (parser: Slice(k, k + 1, True))
            b, e = s.start, 1
        else:
            b = 0 if s.start is None else s.start
            stop = dim if s.stop is None else s.stop
            e = stop - b
        if b < 0 or b >= dim or e <= 0 or b + e > dim:
            raise TileTypeError(f"index out of range for dimension of extent {dim}", s.span,
                                hint=f"valid: 0 <= start < stop <= {dim}")
        begins.append(b)
        extents.append(e)
    return RegionRef(buf, tuple(begins), tuple(extents), r.span)


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
    bufs: dict[str, ir.Buffer] = {}
    tmem_next = 0
    items: list[ProgramItem] = []
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
                else:
                    buf.tmem_col = tmem_next
                    tmem_next += buf.tmem_ncols
                    buf.alias_of = None
            bufs[item.name] = buf
        elif isinstance(item, ast.CopyStmt):
            dst, src = _region(item.dst, bufs), _region(item.src, bufs)
            if dst.buf is src.buf and all(max(a, b) < min(a + e, b + f) for a, e, b, f in
                                          zip(dst.begins, dst.extents, src.begins, src.extents)):
                raise TileTypeError(
                    f"source and destination regions of '{dst.buf.name}' overlap", item.span,
                    hint="copy through a second buffer: threads copying overlapping regions race on the GPU")
            op = CopyOp(item.op_name, SCOPE_KIND[item.scope], dst, src, item.dispatch,
                        _stmt_text(prog.source, item.span), item.span, item.dispatch_span)
            items.append(CopyItem(op))
            scopes_used.append((item.scope, item.op_span))
        elif isinstance(item, (ast.WaitStmt, ast.SyncStmt)):
            items.append(item)
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

    # ---- TMEM plan (PTX ISA 9.0 §9.7.16.7.1: power of two >= 32 columns, <= 512)
    tmem = [b for b in bufs.values() if b.scope == "tmem"]
    tmem_cols = 0
    if tmem:
        if threads % 32:
            raise TileTypeError(f"TMEM needs whole warps (warp 0 allocates); threads={threads}", tspan,
                                hint="use a multiple of 32 threads")
        tmem_cols = check_tmem_columns(max(b.tmem_col + b.tmem_ncols for b in tmem), tmem, lim)
    return TypedProgram(kname, threads, bufs, tmem_cols, items, prog.source,
                        prog.kernel.span if prog.kernel else None)


# ----------------------------------------------------------------------------- lower
class KernelBuilder:
    """Lowering state shared by the variants of one kernel (the :class:`~tilemagic.lower.dispatch.Builder`)."""

    def __init__(self, tp: TypedProgram) -> None:
        self.tp = tp
        self.tmem_addr = ir.Buffer("tmem_addr", "shared", "uint32", (1,), per_thread=1) if tp.tmem_cols else None
        self._taken = set(tp.buffers) | {tp.name}
        self._vars: list[ir.LoopVar] = []
        self.tensormaps: dict[tuple, ir.TensorMap] = {}

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
    if tp.tmem_cols:
        assert b.tmem_addr is not None  # KernelBuilder creates it whenever tp.tmem_cols
        body += [
            ir.Comment(f"TMEM: allocate {tp.tmem_cols} columns (warp 0), publish the address to the CTA"),
            ir.If(warp0, ir.Seq((ir.TcgenAlloc(b.tmem_addr, tp.tmem_cols), ir.TcgenRelinquish()))),
            ir.TcgenFence("before_thread_sync"), ir.Barrier(), ir.TcgenFence("after_thread_sync"),
        ]
    for item in tp.items:
        if isinstance(item, CopyItem):
            op = item.op
            ctx = DispatchContext(target, tp.threads, op.exec_scope, b)
            stmts, rec = run_dispatch(op, ctx)
            records.append(rec)
            warns += ctx.warnings
            body.append(ir.Comment(f"L{op.span.line}: {op.text}    [{op.op}/{rec.chosen}]", op=op.op,
                                   variant=rec.chosen, span=op.span))
            body += _with_span(list(stmts), op.span)
        elif isinstance(item, WaitItem):
            body.append(ir.TcgenWait(item.kind, span=item.span))
        elif isinstance(item, SyncItem):
            if tp.tmem_cols:  # order tcgen05 traffic across the barrier (PTX ISA 9.0 §9.7.16.6.4)
                body += [ir.TcgenFence("before_thread_sync", span=item.span), ir.Barrier(span=item.span),
                         ir.TcgenFence("after_thread_sync", span=item.span)]
            else:
                body.append(ir.Barrier(span=item.span))
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
    )
    return kernel, records, warns
