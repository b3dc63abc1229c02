"""Helpers the tests import (``from helpers import run``); fixtures stay in ``conftest.py``.

pytest documents ``conftest.py`` as not importable (it breaks under ``--import-mode=importlib``), so
what tests call directly lives here, importable like ``cells`` (the ``tests`` directory is on the path).
"""

from __future__ import annotations

import warnings

import pytest

import tilemagic
from tilemagic.cli import demo_source
from tilemagic.errors import Span
from tilemagic.ir import nodes as ir

def demo_params(names, values=None):
    """pytest params for the demos ``names`` (each value ``values[i]``, default the name; id the name)."""
    values = list(names) if values is None else list(values)
    return [pytest.param(v, id=n) for n, v in zip(names, values)]


def run(src: str, **kw) -> tilemagic.TileCopyResult:
    """``tilemagic.tilecopy(src, launch="sim", **kw)`` with UserWarnings silenced (the fallback's warning
    is tested on its own)."""
    kw.setdefault("launch", "sim")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return tilemagic.tilecopy(src, **kw)


def run_sim(src: str, batched: bool = True) -> tilemagic.TileCopyResult:
    """``tilemagic.tilecopy(src, launch="sim", allow_fail=True)`` with every warning silenced, batched or statement by
    statement (``tilemagic.sim.interpreter.BATCHED``: the two must agree on memory and hazards)."""
    from tilemagic.sim import interpreter

    old = interpreter.BATCHED
    interpreter.BATCHED = batched
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return tilemagic.tilecopy(src, launch="sim", allow_fail=True)
    finally:
        interpreter.BATCHED = old


def hazard_messages(res) -> list[str]:
    """The hazard messages of a simulated result, in report order."""
    return [h.message for h in res.launch.hb.hazards]


def run_demo(name: str, **kw) -> tilemagic.TileCopyResult:
    """:func:`run` on the demo ``name`` (``tilemagic/demos/<name>.tile``)."""
    return run(demo_source(name), **kw)


# ----------------------------------------------------------------------------- copy ops built directly
# (the TMA variants' tests: until the language's `mbarrier` / `mbar=` statements are on main, the ops are
# built as the checker would build them)
def tma_buffers():
    """``(gbuf, sbuf, mbar)`` factories: a row-major global buffer, a shared buffer (row-major or the given
    layout) and a shared mbarrier object, as :func:`tilemagic.lower.program.check` makes them."""
    from tilemagic.errors import Span
    from tilemagic.ir import nodes as ir
    from tilemagic.layout import row_major

    sp = Span(1, 1, 1, 2)

    def gbuf(name, dtype, shape):
        return ir.Buffer(name, "global", dtype, tuple(shape), row_major(shape), per_thread=0, span=sp)

    def sbuf(name, dtype, shape, layout=None):
        return ir.Buffer(name, "shared", dtype, tuple(shape), layout or row_major(shape), span=sp)

    def mbar(name="full", count=1):
        return ir.Buffer(name, "shared", "uint64", (1,), row_major((1,)), mbar_count=count, span=sp)

    return gbuf, sbuf, mbar


def region(buf, begins=None, extents=None):
    """A :class:`~tilemagic.lower.ops.RegionRef` of ``buf`` (the whole buffer by default)."""
    from tilemagic.errors import Span
    from tilemagic.lower.ops import RegionRef

    begins = tuple(begins) if begins is not None else (0,) * len(buf.shape)
    extents = tuple(extents) if extents is not None else tuple(buf.shape)
    return RegionRef(buf, begins, extents, Span(1, 1, 1, 2))


def copy_async_op(dst, src, scope="thread", dispatch=None, line=1, **options):
    """``SCOPE.copy_async DST <- SRC [KEY=VALUE ...] [dispatch=V]`` as a :class:`~tilemagic.lower.ops.CopyOp`."""
    from tilemagic.errors import Span
    from tilemagic.lower.ops import CopyOp

    sp = Span(line, 1, line, 2)
    opts = " ".join(f"{k}={getattr(v, 'name', v)}" for k, v in options.items())
    text = f"{scope}.copy_async {dst} <- {src}" + (f" {opts}" if opts else "") + (f" dispatch={dispatch}" if dispatch
                                                                                  else "")
    return CopyOp("copy_async", {"wg": "warpgroup"}.get(scope, scope), dst, src, dispatch, text, sp, None,
                  tuple((k, v, sp) for k, v in options.items()))


def dispatch_op(op, *buffers, cluster=2, guard=None, threads=128, arch="sm_90a"):
    """``run_dispatch`` of one CopyOp over ``buffers`` in a kernel of ``cluster`` CTAs per cluster (the lowering's
    context: ``DispatchContext.cluster``, the op's ``guard``): ``(statements, record)``; the statements carry the
    op's span, as the lowering gives them."""
    from tilemagic.lower.dispatch import DispatchContext, TargetSpec, run_dispatch
    from tilemagic.lower.program import KernelBuilder, TypedProgram

    tp = TypedProgram("k", threads, {b.name: b for b in buffers}, 0, [])
    ctx = DispatchContext(TargetSpec("cuda", arch), threads, op.exec_scope, KernelBuilder(tp), guard=guard,
                          cluster=cluster)
    stmts, rec = run_dispatch(op, ctx)
    for s in stmts:
        s.span = op.span
    return stmts, rec


def lower_ops(ops, *buffers, name="k", threads=128, arch="sm_90a", cluster=1):
    """``lower()`` of a typed program holding ``ops`` (CopyOps) over ``buffers``: ``(kernel, records)``."""
    from tilemagic.lower.dispatch import TargetSpec
    from tilemagic.lower.program import CopyItem, TypedProgram, lower

    tp = TypedProgram(name, threads, {b.name: b for b in buffers}, 0, [CopyItem(op) for op in ops], cluster=cluster)
    kernel, records, _ = lower(tp, TargetSpec("cuda", arch))
    return kernel, records


# ----------------------------------------------------------------------------- hand-built asynchronous kernels (sim tests)
def at(line: int) -> Span:
    return Span(line, 1, line, 20)


def when(cond: ir.Expr, *stmts: ir.Stmt, line: int) -> ir.If:
    """``if COND: STATEMENT`` at ``line`` (the guard's IR)."""
    return ir.If(cond, ir.Seq(tuple(stmts)), span=at(line))


def eq(v, k: int) -> ir.Expr:
    return ir.Bin("==", v, ir.Const(k))


def mbar(name: str = "full", count: int = 1) -> ir.Buffer:
    return ir.Buffer(name, "shared", "uint64", (1,), mbar_count=count)


def messages(rep) -> list[str]:
    return [h.message for h in rep.hazards]


def tensor_map(buf: ir.Buffer, box, swizzle=0, oob=0, elem_bytes=None, dtype=None, dims=None,
               base_elem=0) -> ir.TensorMap:
    """A row-major tensor map over ``buf`` (CUDA order: dim 0 innermost); ``elem_bytes`` > the buffer's: promoted."""
    eb = elem_bytes or buf.elem_bytes
    shape = list(reversed(buf.shape))
    shape[0] = shape[0] * buf.elem_bytes // eb
    dims = tuple(dims or shape)
    strides, acc = [], eb * shape[0]
    for d in shape[1:]:
        strides.append(acc)
        acc *= d
    code = dtype or {"float16": "FLOAT16", "float32": "FLOAT32", "uint8": "UINT8", "bfloat16": "BFLOAT16"}[buf.dtype]
    return ir.TensorMap(f"tm_{buf.name}", buf, code, eb, dims, tuple(strides), tuple(box), (1,) * len(box),
                        swizzle=swizzle, oob_fill=oob, base_elem=base_elem)


def unflat(e: ir.Expr, shape) -> list[ir.Expr]:
    """The row-major indices of flat element ``e`` of a buffer of ``shape``."""
    out, inner = [], 1
    for d in reversed(shape):
        out.append(ir.mod(ir.floordiv(e, inner), d) if inner > 1 else ir.mod(e, d))
        inner *= d
    return list(reversed(out))


# ----------------------------------------------------------------------------- tcgen05.cp kernels spliced by hand
# (issue 14: until the language's `thread.copy_async TMEM <- SHARED` and `tcgen05.commit` are on main, the back ends'
# tests lower a cell that has everything else and splice the tcgen05.cp + tcgen05.commit in by hand)
CP_SPLICE_CELL = """
kernel cp threads=128
global A: {dtype}[{rows}, {cols}] = arange
global B: {dtype}[128, {tcols}] = zeros
shared S: {dtype}[{rows}, {cols}]{slayout}
tmem   T: {dtype}[128, {tcols}]
local  r: {dtype}[128, {tcols}] @ S[(128, {tcols}) : (1@tid_in_wg, 1)]
mbarrier done count=1
wg.copy S <- A
fence.proxy.async
cta_sync
wait done phase 0
wg.copy_async r <- T
wait ld
wg.copy B <- r
"""


def spliced_cp_kernel(cell: str, make_cps, *, arch: str = "sm_100a", line: int = 90):
    """Lower ``cell`` (one without tcgen05.cp) and insert, right before its first ``wait done phase P``, the
    statements ``make_cps(buffers, tmem_addr)`` returns, guarded by ``tx == 0``, then a ``tcgen05.commit done`` by
    the same thread (all at source line ``line``).

    ``buffers`` maps each name to its :class:`~tilemagic.ir.nodes.Buffer`; ``tmem_addr`` is the TMEM address slot.
    A ``wait done`` followed by ``tcgen05.ld`` gets a ``tcgen05.fence::after_thread_sync`` after it.  Returns
    ``(kernel, typed_program)``.  For :data:`CP_SPLICE_CELL`: ``CP_SPLICE_CELL.format(dtype=..., rows=..., cols=...,
    tcols=..., slayout=" @ swizzle(...)" or "")``.
    """
    from tilemagic.lang.parser import parse
    from tilemagic.lower.dispatch import TargetSpec
    from tilemagic.lower.program import check, lower

    tp = check(parse(cell))
    kernel, _, _ = lower(tp, TargetSpec("cuda", arch))
    bufs = {b.name: b for b in (*kernel.params, *kernel.shared, *kernel.locals, *kernel.tmem)}
    cps = list(make_cps(bufs, kernel.tmem_addr))
    tx0 = eq(ir.ThreadVar("tx"), 0)
    body = list(kernel.body.body)
    i = next(k for k, s in enumerate(body) if isinstance(s, ir.MbarWait) and s.bar.name == "done")
    issue = when(tx0, *cps, ir.TcgenCommit(bufs["done"], span=at(line)), line=line)
    for s in ir.walk(issue):
        s.span = s.span or at(line)
    body[i:i + 1] = [issue, body[i], ir.TcgenFence("after_thread_sync", span=body[i].span)]
    kernel.body = ir.Seq(tuple(body))
    return kernel, tp


def located_parse_error(src: str, line: int, col: int, fragment: str, hint: str | None = None):
    """Parse ``src`` and return its ``TileMagicError``, asserting it is at ``line:col``, its message holds
    ``fragment``, it has a hint (holding ``hint`` when given) and its rendering a caret."""
    import pytest

    from tilemagic.errors import TileMagicError
    from tilemagic.lang import parse

    with pytest.raises(TileMagicError) as ei:
        parse(src)
    err = ei.value
    assert (err.line, err.col) == (line, col), err.render()
    assert fragment in err.message, err.render()
    assert err.hint, err.render()
    if hint is not None:
        assert hint in err.hint, err.render()
    assert "^" in err.render()
    return err

# ----------------------------------------------------------------------------- smem->tmem copy ops built directly
# (the planner's tests, tilemagic's and TVM's: until the language's `thread.copy_async TMEM <- SHARED` is on main)
CP_MATRIX_DTYPES = ("bfloat16", "float32")


def cp_buffers(dtype: str, s_shape, s_layout, t_shape, t_layout, *, tmem_col: int = 0):
    """``(S, T)``: a shared buffer and a TMEM buffer (allocated at 32-bit column ``tmem_col``) as the checker makes
    them; ``s_layout`` None is row-major."""
    from tilemagic.layout import row_major

    sp = Span(1, 1, 1, 2)
    S = ir.Buffer("S", "shared", dtype, tuple(s_shape), s_layout or row_major(s_shape), span=sp)
    eb = S.elem_bytes
    T = ir.Buffer("T", "tmem", dtype, tuple(t_shape), t_layout, tmem_col=tmem_col,
                  tmem_ncols=max(1, -(-t_shape[-1] * eb // 4)), span=sp)
    return S, T


def cp_dispatch(op, *buffers, threads: int = 128, arch: str = "sm_100a", elect: bool = True):
    """``run_dispatch`` of a smem->tmem CopyOp in a kernel with a TMEM allocation: ``(statements, record)``.
    ``elect``: the op is written under ``if tx == 0:`` (one issuing thread); False: unguarded."""
    from tilemagic.ir import nodes as ir
    from tilemagic.lower.dispatch import DispatchContext, TargetSpec, run_dispatch
    from tilemagic.lower.program import KernelBuilder, TypedProgram

    tp = TypedProgram("k", threads, {b.name: b for b in buffers}, 512, [])
    cond = None if not elect else ir.Bin("==", ir.ThreadVar("tx"), ir.Const(0))
    ctx = DispatchContext(TargetSpec("cuda", arch), threads, op.exec_scope, KernelBuilder(tp), guard=cond)
    return run_dispatch(op, ctx)


def cp_tmem_layout(key: str, cols: int):
    """The TMEM layout a ``tcgen05.cp`` of shape ``key`` writes, ``cols`` elements per row, replicas included (the
    destination's rows as logical rows): TVM 0.27's ``_cp_lane_replica_pattern``."""
    from tilemagic.layout import TileLayout
    from tilemagic.layout.tile import Iter

    col = Iter(cols, 1, "TCol")
    shard = {"128x256b": (Iter(128, 1, "TLane"), col), "128x128b": (Iter(128, 1, "TLane"), col),
             "4x256b": (Iter(4, 32, "TLane"), col),
             "64x128b.warpx2::02_13": (Iter(64, 1, "TLane"), col),
             "64x128b.warpx2::01_23": (Iter(2, 64, "TLane"), Iter(32, 1, "TLane"), col),
             "32x128b.warpx4": (Iter(32, 1, "TLane"), col)}[key]
    rep = {"64x128b.warpx2::02_13": (Iter(2, 64, "TLane"),), "64x128b.warpx2::01_23": (Iter(2, 32, "TLane"),),
           "32x128b.warpx4": (Iter(4, 32, "TLane"),)}.get(key, ())
    return TileLayout(shard, rep)


def cp_matrix_case(key: str, swizzle: int, dtype: str):
    """One case of the smem->tmem matrix: ``(op, S, T, expected)`` for a shape key, a swizzle mode 0..3 and a 16- or
    32-bit dtype.

    Swizzled: ``S`` is ``dtype[rows, atom_K / elem]`` row-major @ ``swizzle(log2(16 / elem), mode, 3)`` (one 8-row
    core matrix per ``atom_K = 16 << mode`` bytes of row), read in ``atom_K / row_bytes`` instructions.
    Unswizzled: the K-major canonical layout of two 16-byte chunks per row, chunk 1 of a core matrix 128 B after
    chunk 0 (LBO 128 B; 64 B for 4 rows), 8-row groups 256 B apart (SBO): a 256-bit shape reads both chunks
    (LBO), a 128-bit one steps 128 B per instruction.  ``expected``: ``(count, LBO, SBO, swizzle)``.
    """
    from tilemagic.arch import tcgen05 as tc
    from tilemagic.layout import TileLayout
    from tilemagic.layout.swizzle import ComposeLayout
    from tilemagic.layout.tile import Iter
    from tilemagic.layout import row_major

    c = tc.CP_SHAPES[key]
    eb = {"bfloat16": 2, "float16": 2, "float32": 4}[dtype]
    e16 = 16 // eb
    rows, row_bytes = c.rows, c.bits // 8
    if swizzle:
        atom_k = 16 << swizzle
        cols = atom_k // eb
        s_layout = ComposeLayout(e16.bit_length() - 1, swizzle, 3, row_major((rows, cols)), bare=True)
        count = atom_k // row_bytes
        expected = (count, 16 if c.bits == 256 else 0, 0 if rows < 8 else 8 * atom_k, swizzle)
    else:
        cols = 2 * e16
        if rows < 8:
            lbo, sbo = 64, 0
            s_layout = TileLayout((Iter(rows, e16), Iter(2, lbo // eb), Iter(e16, 1)))
        else:
            lbo, sbo = 128, 256
            s_layout = TileLayout((Iter(rows // 8, sbo // eb), Iter(8, e16), Iter(2, lbo // eb), Iter(e16, 1)))
        count = 1 if c.bits == 256 else 2
        expected = (count, lbo if c.bits == 256 else 0, sbo, 0)
    S, T = cp_buffers(dtype, (rows, cols), s_layout, (rows, cols), cp_tmem_layout(key, cols))
    return copy_async_op(region(T), region(S)), S, T, expected

#: C++ that lets ``codegen/tmem_emulation.cuh`` compile as host code (g++): the CUDA built-ins it calls, for one
#: thread at a time (``threadIdx`` a global the driver steps; atomics plain read-modify-writes), then the
#: qualifiers defined away.  A driver puts its own definitions (e.g. ``TM_EMU_LD_SHARED_V4``) before
#: ``#include "tmem_emulation.cuh"``.
EMULATION_HOST_PRELUDE = r"""
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
struct TmDim3 { unsigned x, y, z; };
static TmDim3 threadIdx = {0, 0, 0}, blockDim = {128, 1, 1};
static unsigned __activemask() { return 0xffffffffu; }
static void __syncwarp() {}
static void __syncthreads() {}
template <class T> static T atomicCAS(T* p, T cmp, T val) { T old = *p; if (old == cmp) *p = val; return old; }
static unsigned atomicOr(unsigned* p, unsigned v) { unsigned old = *p; *p |= v; return old; }
static unsigned atomicAnd(unsigned* p, unsigned v) { unsigned old = *p; *p &= v; return old; }
static int __ffs(int x) { return x ? __builtin_ctz((unsigned)x) + 1 : 0; }
#define __device__
#define __forceinline__ inline
#define __noinline__
"""
