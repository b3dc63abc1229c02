"""Cell builders shared by the unit, golden and GPU tests (one definition of each test program)."""

EPC = {"float32": 1, "int32": 1, "float16": 2, "bfloat16": 2, "uint8": 4, "int8": 4}  # elements per 32-bit cell


def roundtrip_cell(dtype, width, tmem_cols=None, lo=0, alias=None):
    """global → local (reg) → TMEM (tcgen05.st) → local (tcgen05.ld) → global, with `check B == A`.

    ``lo``: first TMEM column (elements) of the window; ``alias``: place the window in a second
    tmem buffer declared ``at T + alias`` (32-bit columns).
    """
    tc = tmem_cols or (lo + width)
    region = f"T[:, {lo}:{lo + width}]" if (lo or tc != width) else "T"
    lines = ["kernel k threads=128", f"global A: {dtype}[128, {width}]", f"global B: {dtype}[128, {width}]",
             f"tmem T: {dtype}[128, {tc}]"]
    if alias is not None:
        lines.append(f"tmem V: {dtype}[128, {width}] at T + {alias}")
        region = "V"
    lines += [
        f"local a: {dtype}[128, {width}] @ S[(128, {width}) : (1@tid_in_wg, 1)]",
        f"local b: {dtype}[128, {width}] @ S[(128, {width}) : (1@tid_in_wg, 1)]",
        "wg.copy a <- A", f"wg.copy_async {region} <- a", "wait st", "cta_sync",
        f"wg.copy_async b <- {region}", "wait ld", "wg.copy B <- b", "check B == A",
    ]
    return "\n".join(lines)


# TVM's test_fallback_round_trip cases (scope, CTA threads, rows, cols) plus thread scope
FALLBACK_CASES = [
    ("warp", 32, 4, 6), ("warp", 32, 1, 8), ("wg", 128, 4, 6), ("wg", 128, 4, 8),
    ("cta", 256, 4, 8), ("cta", 1024, 8, 8), ("thread", 1, 4, 6), ("thread", 32, 2, 3),
]


def fallback_cell(scope, threads, rows, cols):
    """global → shared → global through copy/fallback, with an explicit cta_sync."""
    return f"""
kernel fb threads={threads}
global A: float32[{rows}, {cols}]
global B: float32[{rows}, {cols}]
shared S: float32[{rows}, {cols}]
{scope}.copy S <- A
cta_sync
{scope}.copy B <- S
check B == A
"""


# register layouts for copy/reg: (layout, rows, cols, scope, threads, dtype, expected per-thread summary)
REG_CASES = [
    ("S[(128, 8) : (1@tid_in_wg, 1)]", 128, 8, "wg", 128, "float16", "1 × ld.global.v4.u32"),
    ("S[(128, 8) : (1@tid_in_wg, 1)]", 128, 8, "wg", 128, "float32", "2 × ld.global.v4.u32"),
    ("S[(128, 3) : (1@tid_in_wg, 1)]", 128, 3, "wg", 128, "float32", "3 × ld.global.u32"),
    ("S[(32, 4) : (1@laneid, 1)]", 32, 4, "warp", 32, "float32", "1 × ld.global.v4.u32"),
    ("S[(32, 4) : (1@laneid, 1)]", 32, 4, "wg", 128, "float32", "1 × ld.global.v4.u32"),
    ("S[(4, 32, 8) : (1@wid_in_wg, 1@laneid, 1)]", 128, 8, "wg", 128, "uint8", "1 × ld.global.v2.u32"),
    ("S[(128, 2, 4) : (1@tid_in_wg, 1, 2)]", 128, 8, "wg", 128, "float32", "8 × ld.global.u32"),
    ("S[(128, 8) : (1@tid_in_wg, 1)]", 128, 8, "cta", 256, "float32", "2 × ld.global.v4.u32"),
    ("S[(256, 2) : (1@tx, 1)]", 256, 2, "cta", 256, "bfloat16", "1 × ld.global.u32"),
    ("S[(4, 6) : (6, 1)]", 4, 6, "thread", 1, "float32", "6 × ld.global.v4.u32"),
    ("S[(4, 6) : (1, 4)]", 4, 6, "thread", 1, "float32", "24 × ld.global.u32"),
]


def reg_cell(layout, rows, cols, scope="wg", threads=128, dtype="float32"):
    """global → local → global through copy/reg."""
    return f"""
kernel r threads={threads}
global A: {dtype}[{rows}, {cols}]
global B: {dtype}[{rows}, {cols}]
local a: {dtype}[{rows}, {cols}] @ {layout}
{scope}.copy a <- A
{scope}.copy B <- a
check B == A
"""


# ----------------------------------------------------------------------------- hand-built TMEM kernels
# tilemagic's lowering never emits these TMEM rule violations, so the strict checks of the simulator and
# of the emulation are tested on kernels built directly from IR nodes.  Description lines (for locations):
# 5 alloc + relinquish, 6 A -> a, 7 tcgen05.st, 8 tcgen05.ld, 9 a -> B, 10 dealloc.
TMEM_VIOLATIONS = {
    # name: (needs --strict, message fragment, line of the error)
    "quadrant": (True, "lane quadrant 1 but it runs in warp 0", 7),
    "outside_columns": (False, "column 40: outside the allocated columns", 7),
    "alloc_not_pow2": (False, "tcgen05.alloc of 48 columns: nCols must be a power of two in [32, 512]", 5),
    "alloc_over_512": (False, "tcgen05.alloc of 1024 columns: nCols must be a power of two in [32, 512]", 5),
    "alloc_after_relinquish": (False, "after tcgen05.relinquish_alloc_permit", 6),
    "missing_dealloc": (False, "TMEM still allocated at kernel exit (slot mask 0x1): missing tcgen05.dealloc", 5),
    "dealloc_other_warp": (False, "tcgen05.dealloc by warp 1, but warp 0 allocated", 10),
    "partial_warp": (False, "tcgen05 instruction issued by a partial warp (thread 16)", 7),
    "alloc_never_fits": (True, "tcgen05.alloc of 32 columns cannot be satisfied: TMEM is full", 6),
}


def tmem_ir_kernel(violation=None):
    """A 128-thread kernel built from IR nodes: A -> registers -> TMEM (tcgen05.st .32x32b.x1) -> registers
    (tcgen05.ld) -> B, warp 0 allocating 32 columns; ``violation`` (a key of TMEM_VIOLATIONS) breaks one rule.

    Returns ``(kernel, inputs)``; without a violation B == A after a run.
    """
    import numpy as np

    from tilemagic.errors import Span
    from tilemagic.ir import nodes as ir

    def at(n):
        return Span.point(n, 1)

    A = ir.Buffer("A", "global", "uint32", (128,), span=at(2))
    B = ir.Buffer("B", "global", "uint32", (128,), span=at(3))
    a = ir.Buffer("a", "local", "uint32", (1,), per_thread=1, span=at(4))
    addr = ir.Buffer("tmem_addr", "shared", "uint32", (1,), per_thread=1)
    tx, warp = ir.ThreadVar("tx"), ir.ThreadVar("warpid")
    warp0 = ir.Bin("==", warp, ir.Const(0))
    ncols = {"alloc_not_pow2": 48, "alloc_over_512": 1024, "alloc_never_fits": 512}.get(violation, 32)
    alloc = [ir.TcgenAlloc(addr, ncols, span=at(5))]
    if violation != "alloc_never_fits":
        alloc.append(ir.TcgenRelinquish(span=at(5)))
    body = [ir.If(warp0, ir.Seq(tuple(alloc)), span=at(5)),
            ir.TcgenFence("before_thread_sync"), ir.Barrier(), ir.TcgenFence("after_thread_sync")]
    if violation in ("alloc_after_relinquish", "alloc_never_fits"):  # a second allocation, by warp 1
        extra = ir.Buffer("tmem_addr2", "shared", "uint32", (1,), per_thread=1)
        body.append(ir.If(ir.Bin("==", warp, ir.Const(1)), ir.TcgenAlloc(extra, 32, span=at(6)), span=at(6)))
    row = 32 if violation == "quadrant" else 0
    col = 40 if violation == "outside_columns" else 0
    st = ir.TcgenLdSt("st", "32x32b", 1, a, 0, 1, addr, row, col, span=at(7))
    ld = ir.TcgenLdSt("ld", "32x32b", 1, a, 0, 1, addr, row, 0, span=at(8))
    if violation == "partial_warp":
        st = ir.If(ir.Bin("<", ir.ThreadVar("laneid"), ir.Const(16)), st, span=at(7))
    body += [ir.Store(a, (ir.Const(0),), ir.Load(A, (tx,)), span=at(6)), st, ir.TcgenWait("st", span=at(7)),
             ir.Store(a, (ir.Const(0),), ir.Const(0), span=at(8)), ld, ir.TcgenWait("ld", span=at(8)),
             ir.Store(B, (tx,), ir.Load(a, (ir.Const(0),)), span=at(9)),
             ir.TcgenFence("before_thread_sync"), ir.Barrier(), ir.TcgenFence("after_thread_sync")]
    if violation != "missing_dealloc":
        who = ir.Bin("==", warp, ir.Const(1)) if violation == "dealloc_other_warp" else warp0
        body.append(ir.If(who, ir.TcgenDealloc(addr, ncols, span=at(10)), span=at(10)))
    shared = (addr,) if violation not in ("alloc_after_relinquish", "alloc_never_fits") else (addr, extra)
    kernel = ir.Kernel("tm_rules", 128, params=(A, B), shared=shared, locals=(a,), tmem=(), tmem_cols=ncols,
                       tmem_addr=addr, body=ir.Seq(tuple(body)))
    a_bits = (np.arange(1, 129, dtype=np.uint64) * 2654435761) % (1 << 32)  # distinct 32-bit patterns
    return kernel, {"A": a_bits.astype(np.uint32), "B": np.zeros(128, np.uint32)}
