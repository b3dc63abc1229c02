"""Hand-built lowered kernels and results for the display-layer tests (no parser, lowering or simulator).

The tcgen05 kernels issue exactly what the ``copy_async/tmem<->local`` variant emits per
data path (issue 3: ``.32x32b`` covers 128 rows in one issue; a 128-row D buffer with a
``.16x*b`` fragment issues twice, rows 0 and 16, the second slab's registers after the
first's; a 64-row F buffer issues once at row ``16*sub_slab``; B is one
``.32x32b.x(N/2)`` over all 128 lanes), so the pictures can be checked against the layout
module before that lowering lands.
"""

from __future__ import annotations

import numpy as np

from tilemagic.arch import tcgen05 as tc
from tilemagic.cli import demo_source
from tilemagic.errors import Span
from tilemagic.options import Options, resolve
from tilemagic.ir.nodes import (
    Barrier,
    Bin,
    Buffer,
    Comment,
    Const,
    Grid,
    If,
    Kernel,
    Load,
    LoopVar,
    Seq,
    Store,
    TcgenAlloc,
    TcgenLdSt,
    TcgenWait,
    ThreadVar,
)
from tilemagic.result import (
    Candidate,
    CheckResult,
    DispatchRecord,
    EmitSummary,
    LaunchResult,
    TileCopyResult,
)


def make_tmem_kernel(threads: int = 128, col: int = 0, row: int = 0, tmem_cols: int = 32) -> Kernel:
    """The seed round trip: T float16[128, 8] in TMEM, one .32x32b.x4 st and one ld."""
    A = Buffer("A", "global", "float16", (128, 8))
    B = Buffer("B", "global", "float16", (128, 8))
    a = Buffer("a", "local", "float16", (128, 8), per_thread=8)
    b = Buffer("b", "local", "float16", (128, 8), per_thread=8)
    T = Buffer("T", "tmem", "float16", (128, 8), tmem_col=col, tmem_ncols=4, datapath="D")
    addr = Buffer("tmem_addr", "shared", "uint32", (1,))
    st = TcgenLdSt("st", "32x32b", 4, a, 0, 4, addr, row, col, tmem=T, span=Span.point(9, 1))
    ld = TcgenLdSt("ld", "32x32b", 4, b, 0, 4, addr, row, col, tmem=T, span=Span.point(12, 1))
    body = Seq((
        If(Bin("==", ThreadVar("warpid"), Const(0)), TcgenAlloc(addr, tmem_cols)),
        Barrier(),
        Comment("L9: wg.copy_async T <- a  [copy_async/tmem<->local]", op="copy_async", variant="tmem<->local",
                span=Span.point(9, 1)),
        st,
        TcgenWait("st"),
        Barrier(),
        Comment("L12: wg.copy_async b <- T  [copy_async/tmem<->local]", op="copy_async", variant="tmem<->local",
                span=Span.point(12, 1)),
        ld,
        TcgenWait("ld"),
    ))
    return Kernel("tmem_roundtrip", threads, (A, B), (addr,), (a, b), (T,), tmem_cols, addr, body)


def make_fallback_kernel() -> Kernel:
    """The seed fallback: lane 0 of one warp copies a 4×6 fp32 tile through shared memory."""
    A = Buffer("A", "global", "float32", (4, 6))
    B = Buffer("B", "global", "float32", (4, 6))
    S = Buffer("A_smem", "shared", "float32", (4, 6))
    i, j = LoopVar("i"), LoopVar("j")
    i2, j2 = LoopVar("i"), LoopVar("j")
    lane0 = Bin("==", ThreadVar("laneid"), Const(0))
    body = Seq((
        Comment("L6: warp.copy A_smem <- A  [copy/fallback]", op="copy", variant="fallback", span=Span.point(6, 1)),
        If(lane0, Grid((i, j), (4, 6), Store(S, (i, j), Load(A, (i, j))))),
        Barrier(),
        Comment("L8: warp.copy B <- A_smem  [copy/fallback]", op="copy", variant="fallback", span=Span.point(8, 1)),
        If(lane0, Grid((i2, j2), (4, 6), Store(B, (i2, j2), Load(S, (i2, j2))))),
    ))
    return Kernel("fallback_demo", 32, (A, B), (S,), (), (), 0, None, body)


# ----------------------------------------------------------------------------- data paths
def _words(rows: int, cols: int, dtype: str) -> int:
    eb = {"float32": 4, "float16": 2, "bfloat16": 2}[dtype]
    return rows * cols * eb // 4 // 128


def datapath_kernel(path: str, shape: str, cols: int, dtype: str = "float32", op: str = "ld",
                    sub_slab: int = 0, tmem_col: int = 0, threads: int = 128) -> Kernel:
    """One tmem<->local copy as the variant lowers it, for data path D (128 rows), F (64) or B (64).

    Parameters
    ----------
    path : {"D", "F", "B"}
    shape : str
        The tcgen05 shape of the register fragment (``frag(shape)``); B uses 32x32b.
    cols : int
        Columns of the buffer, in elements.
    """
    eb = {"float32": 4, "float16": 2, "bfloat16": 2}[dtype]
    rows = 128 if path == "D" else 64
    tcols32 = cols * eb // 4 // (2 if path == "B" else 1)
    alloc = tc.alloc_columns(tmem_col + tcols32)
    T = Buffer("T", "tmem", dtype, (rows, cols), tmem_col=tmem_col, tmem_ncols=tcols32, datapath=path,
               sub_slab=sub_slab if path == "F" else 0)
    frag = Buffer("frag", "local", dtype, (rows, cols), per_thread=rows * cols // 128)
    addr = Buffer("tmem_addr", "shared", "uint32", (1,))
    span = Span.point(5, 1)
    nodes = []
    if path == "B":
        num = tcols32
        nodes.append(TcgenLdSt(op, "32x32b", num, frag, 0, num, addr, 0, tmem_col, tmem=T, span=span))
    elif shape == "32x32b":
        nodes.append(TcgenLdSt(op, "32x32b", tcols32, frag, 0, tcols32, addr, 0, tmem_col, tmem=T, span=span))
    else:
        num = tcols32 // tc.COL_FACTOR[shape]
        regs = tc.regs_per_thread(shape, num)
        slabs = (0, 16) if path == "D" else (16 * sub_slab,)
        for k, row in enumerate(slabs):
            nodes.append(TcgenLdSt(op, shape, num, frag, k * regs, regs, addr, row, tmem_col, tmem=T, span=span))
    return Kernel(f"{path}_{shape}", threads, (), (addr,), (frag,), (T,), alloc, addr, Seq(tuple(nodes)))


def expected_cells(path: str, shape: str, cols: int, dtype: str = "float32", sub_slab: int = 0, tmem_col: int = 0):
    """(thread, register) -> TMEM (lane, col) from the layout module's fragment and the data-path formulas.

    Returns a dict ``{(thread, reg): (lane, col32)}`` built from
    ``tcgen05_atom_layout(shape, (rows, cols), bits)`` (which thread and register hold
    logical element ``(r, c)``) and the TMEM data path of the buffer (docs/language.md):
    D lane = r; F lane = 32·(r//16) + 16·sub_slab + r%16; B lane = r + 64·(c // (N/2)),
    col = c % (N/2).  Independent of the heatmap code (which goes through
    ``tmem_cell`` and the instruction immediates).
    """
    from tilemagic.layout import tcgen05_atom_layout
    from tilemagic.lower.common import linear_tid

    eb = {"float32": 4, "float16": 2, "bfloat16": 2}[dtype]
    rows = 128 if path == "D" else 64
    lay = tcgen05_atom_layout("32x32b" if path == "B" else shape, (rows, cols), 8 * eb)
    lin = np.arange(rows * cols)
    coords = lay.apply(lin)
    tid = linear_tid(coords, lin.size)
    reg = coords["m"] * eb // 4
    r, c = lin // cols, lin % cols
    if path == "D":
        lane, col = r, c * eb // 4
    elif path == "F":
        lane, col = 32 * (r // 16) + 16 * sub_slab + r % 16, c * eb // 4
    else:
        half = cols // 2
        lane, col = r + 64 * (c // half), c % half
    return {(int(t), int(g)): (int(la), int(co) + tmem_col) for t, g, la, co in zip(tid, reg, lane, col)}


# ----------------------------------------------------------------------------- results
TMEM_SOURCE = demo_source("tmem_roundtrip").split("\n", 1)[1]

TMEM_IR = """@T.prim_func
def tmem_roundtrip(A: T.Buffer((128, 8), "float16"), B: T.Buffer((128, 8), "float16")):
    tmem_addr = T.alloc_shared((1,), "uint32")
    # L8: wg.copy_async T <- a  [copy_async/tmem<->local]
    T.ptx.tcgen05.st(tmem_addr[0], 0, 0, "32x32b", 4, a[0:8])
    # L11: wg.copy_async b <- T  [copy_async/tmem<->local]
    T.ptx.tcgen05.ld(tmem_addr[0], 0, 0, "32x32b", 4, b[0:8])
"""
TMEM_IR_LINES = [None, None, None, 8, 8, 11, 11]

TMEM_CUDA = """extern "C" __global__ void tmem_roundtrip(half* A, half* B) {
  // L8: wg.copy_async T <- a
  asm volatile("tcgen05.st.sync.aligned.32x32b.x4.b32 [%0], {%1, %2, %3, %4};" :: "r"(taddr));
  // L11: wg.copy_async b <- T
  asm volatile("tcgen05.ld.sync.aligned.32x32b.x4.b32 {%0, %1, %2, %3}, [%4];" : "=r"(r0) : "r"(taddr));
}
"""
TMEM_CUDA_LINES = [None, 8, 8, 11, 11, None]


def make_dispatch() -> list:
    return [
        DispatchRecord(
            op="copy_async", text="wg.copy_async T <- a", line=8, scope="wg",
            candidates=(
                Candidate("tmem<->local", 10, True, ("scopes: ok", "shape: ok"), chosen=True),
                Candidate("tcgen05_cp", 5, False, ("scopes: ok", "src is local, not shared")),
            ),
            chosen="tmem<->local", emitted=EmitSummary("tcgen05.st.sync.aligned.32x32b.x4.b32", 1, "warp", at="TMEM column 0"),
        ),
        DispatchRecord(
            op="copy", text="wg.copy B <- b", line=13, scope="wg",
            candidates=(
                Candidate("reg", 10, True, ("scopes: ok",), declined="24 does not divide 32"),
                Candidate("fallback", 0, True, ("scopes: ok",), chosen=True),
            ),
            chosen="fallback",
        ),
    ]


def make_launch(passed: bool = True, backend: str = "sim", mode: str = "CPU simulator",
                arch=None, device=None) -> LaunchResult:
    A = np.arange(128 * 8, dtype=np.float16).reshape(128, 8) / np.float16(3)
    B = A.copy() if passed else np.zeros_like(A)
    return LaunchResult(
        backend=backend, mode=mode, arch=arch, device=device,
        reason="no CUDA device: CuPy not installed" if backend == "sim" else "",
        inputs={"A": A}, outputs={"A": A, "B": B},
        checks=[CheckResult("B == A", 14, passed, 0 if passed else 1023, 1024)],
    )


def make_tmem_result(launch="default", emulated: bool = True, **options) -> TileCopyResult:
    return TileCopyResult(
        name="tmem_roundtrip", source=TMEM_SOURCE, program=None, kernel=make_tmem_kernel(),
        ir=TMEM_IR, cuda=TMEM_CUDA,
        cuda_emulated=("// emulated TMEM\n__device__ void tm_st(uint32_t* tmem) { /* a <- b */ }\n"
                       if emulated else None),
        dispatch=make_dispatch(), launch=make_launch() if launch == "default" else launch,
        warnings=["copy/fallback used for wg.copy B <- b: slow path (UserWarning)"],
        options=resolve(overrides=options),
        ir_lines=list(TMEM_IR_LINES), cuda_lines=list(TMEM_CUDA_LINES),
        cuda_emulated_lines=[None, 8] if emulated else [],
    )


def make_fallback_result() -> TileCopyResult:
    ir = "# L6: warp.copy A_smem <- A  [copy/fallback]\nif laneid == 0:\n    for i, j in T.grid(4, 6):\n        A_smem[i, j] = A[i, j]\n"
    return TileCopyResult(
        name="fallback_demo", source="kernel fallback_demo threads=32\n", program=None,
        kernel=make_fallback_kernel(), ir=ir, cuda="__global__ void fallback_demo() {}\n",
        cuda_emulated=None, dispatch=[], launch=None, warnings=[], options=Options(),
        ir_lines=[6, 6, 6, 6], cuda_lines=[None],
    )
