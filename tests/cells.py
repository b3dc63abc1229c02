"""Cell builders shared by the unit, golden, GPU and TVM-differential tests and the benchmarks (one definition of
each test program; tests/unit/test_notebooks.py checks that the notebooks' sweeps show these programs).

The ``*_CASES`` lists are plain data (tuples / NamedTuples) so other test suites can reuse them; the
``*_cell`` builders turn one case into a complete ``%%tilecopy`` description.
"""

from typing import NamedTuple

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


def tmem_windows_cell(cols: int, dtype: str = "float32") -> str:
    """128 x ``cols`` through TMEM in four column windows: global -> registers -> ``tcgen05.st`` of each
    quarter (``.32x32b.x(cols/4)`` for 32-bit dtypes, a ``wait st`` before the registers are reused) ->
    ``tcgen05.ld`` -> global, with ``check B == A`` (the simulator and memory benchmarks' cell)."""
    w = cols // 4
    lines = ["kernel tmem_big threads=128", f"global A: {dtype}[128, {cols}]", f"global B: {dtype}[128, {cols}]",
             f"tmem T: {dtype}[128, {cols}]", f"local a: {dtype}[128, {w}] @ S[(128, {w}) : (1@tid_in_wg, 1)]"]
    for k in range(4):
        lines += [f"wg.copy a <- A[:, {k * w}:{(k + 1) * w}]", f"wg.copy_async T[:, {k * w}:{(k + 1) * w}] <- a",
                  "wait st"]
    lines.append("cta_sync")
    for k in range(4):
        lines += [f"wg.copy_async a <- T[:, {k * w}:{(k + 1) * w}]", "wait ld",
                  f"wg.copy B[:, {k * w}:{(k + 1) * w}] <- a"]
    lines.append("check B == A")
    return "\n".join(lines)


# TVM's test_fallback_round_trip cases (scope, CTA threads, rows, cols): n_elements % thread_cnt != 0, so gmem_smem
# declines ("region size 24 not divisible by thread_cnt=32") and the scalar fallback copies
FALLBACK_CASES = [
    ("warp", 32, 4, 6), ("warp", 32, 1, 8), ("wg", 128, 4, 6), ("wg", 128, 4, 8),
    ("cta", 256, 4, 8), ("cta", 1024, 8, 8),
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


class GmemSmemCase(NamedTuple):
    """global ↔ shared through copy/gmem_smem: ``A[:, c0:c0+cols]`` → ``S`` (``smem`` layout) → ``B``.

    ``vec`` is the expected vector length in elements (the widest of 128..8 bits, then one element,
    contiguous and aligned on both sides, at most a swizzle chunk, with threads × vec dividing the region).
    """

    scope: str
    threads: int
    rows: int
    cols: int
    dtype: str
    smem: str = ""  # shared layout; "" = row-major
    vec: int = 1
    gcols: int = 0  # columns of the global buffers (0: = cols)
    c0: int = 0  # first global column of the region

    @property
    def id(self):
        lay = f"-{self.smem}" if self.smem else ""
        win = f"-A[:,{self.c0}:{self.c0 + self.cols}]of{self.gcols}" if self.gcols else ""
        return f"{self.scope}{self.threads}-{self.rows}x{self.cols}-{self.dtype}{lay}{win}"


GMEM_SMEM_CASES = [
    GmemSmemCase("warp", 32, 8, 64, "float16", vec=8),
    GmemSmemCase("warp", 32, 8, 64, "float16", "swizzle(3, 3, 3)", vec=8),
    GmemSmemCase("wg", 128, 8, 64, "float16", "swizzle(3, 3, 3)", vec=4),
    GmemSmemCase("cta", 256, 16, 64, "float16", "swizzle(3, 3, 3)", vec=4),
    GmemSmemCase("cta", 1024, 32, 64, "bfloat16", "swizzle(3, 3, 3)", vec=2),
    GmemSmemCase("wg", 128, 32, 32, "float32", "swizzle(2, 3, 3)", vec=4),
    GmemSmemCase("warp", 32, 16, 32, "float32", "swizzle(1, 2, 3)", vec=2),
    GmemSmemCase("warp", 32, 4, 64, "float16", "swizzle(2, 1, 6)", vec=4),  # identity on 256 elements: the cap decides
    GmemSmemCase("wg", 128, 64, 32, "uint8", vec=16),
    GmemSmemCase("wg", 128, 64, 64, "uint8", "swizzle(4, 3, 3)", vec=16),
    GmemSmemCase("cta", 64, 16, 16, "int8", vec=4),
    GmemSmemCase("cta", 96, 12, 16, "int32", vec=2),
    GmemSmemCase("wg", 128, 16, 16, "bfloat16", vec=2),
    GmemSmemCase("wg", 128, 4, 32, "float32", vec=1),
    GmemSmemCase("warp", 32, 8, 16, "float32", "S[(8, 16) : (1, 8)]", vec=1),  # column-major
    GmemSmemCase("warp", 32, 8, 64, "float16", "S[(8, 2, 32) : (32, 256, 1)]", vec=8),  # column halves swapped out
    GmemSmemCase("warp", 32, 8, 32, "float32", "S[(8, 8, 4) : (4, 32, 1)]", vec=4),  # 4-element runs
    GmemSmemCase("warp", 32, 8, 32, "float16", "S[(8, 16, 2) : (2, 16, 1)]", vec=2),  # 2-element runs
    GmemSmemCase("warp", 32, 8, 64, "float16", vec=8, gcols=96, c0=32),
    GmemSmemCase("warp", 32, 8, 64, "float16", vec=1, gcols=70, c0=3),  # odd start: scalar
    GmemSmemCase("warp", 32, 8, 64, "float32", vec=4, gcols=68, c0=4),
    GmemSmemCase("warp", 32, 8, 32, "uint8", vec=1, gcols=40, c0=1),  # byte moves (ld/st .u8)
    GmemSmemCase("warp", 32, 8, 32, "int8", vec=2, gcols=40, c0=2),
    GmemSmemCase("thread", 1, 4, 6, "float32", vec=4),  # one thread: the whole contiguous tile
    GmemSmemCase("thread", 32, 2, 3, "float32", vec=2),  # TVM's test_fallback_thread_scope shape
]


def gmem_smem_cell(case: GmemSmemCase, name: str = "gs"):
    c = case
    g = c.gcols or c.cols
    win = f"[:, {c.c0}:{c.c0 + c.cols}]" if c.gcols else ""
    lay = f" @ {c.smem}" if c.smem else ""
    return f"""
kernel {name} threads={c.threads}
global A: {c.dtype}[{c.rows}, {g}]
global B: {c.dtype}[{c.rows}, {g}] = zeros
shared S: {c.dtype}[{c.rows}, {c.cols}]{lay}
{c.scope}.copy S <- A{win}
cta_sync
{c.scope}.copy B{win} <- S
check B{win} == A{win}
"""


def ldgsts_cell(case: GmemSmemCase, name: str = "ldg") -> str:
    """:func:`gmem_smem_cell` with its global -> shared copy as ``copy_async`` (variant ``ldgsts``); the copy
    back stays synchronous.  No ``commit_group`` / ``wait_group``: lower it with ``launch="off"``
    (:func:`ldgsts_committed_cell` is the round trip that runs)."""
    return gmem_smem_cell(case, name).replace(f"{case.scope}.copy S <-", f"{case.scope}.copy_async S <-")


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
    # tcgen05 register fragments (frag(...) = tcgen05_atom_layout)
    ("frag(32x32b)", 128, 32, "wg", 128, "float32", "8 × ld.global.v4.u32"),
    ("frag(16x64b)", 64, 32, "wg", 128, "float32", "16 × ld.global.u32"),
    ("frag(16x128b)", 64, 64, "wg", 128, "float16", "16 × ld.global.u32"),
    ("frag(16x256b)", 128, 64, "wg", 128, "float16", "16 × ld.global.v2.u32"),
    ("frag(16x256b)", 64, 32, "wg", 128, "bfloat16", "4 × ld.global.v2.u32"),
    # warp-level laneid layouts (an mma.sync-style fragment, fp32)
    ("S[(32, 8) : (1@laneid, 1)]", 32, 8, "warp", 32, "float16", "1 × ld.global.v4.u32"),
    ("S[(2, 8, 2, 4, 2) : (2, 4@laneid, 4, 1@laneid, 1)]", 16, 16, "warp", 32, "float32", "4 × ld.global.v2.u32"),
    ("S[(8, 32, 4) : (1@warpid, 1@laneid, 1)]", 256, 4, "cta", 256, "float32", "1 × ld.global.v4.u32"),
    # gapped (every other register) and permuted register storage
    ("S[(128, 4) : (1@tid_in_wg, 2)]", 128, 4, "wg", 128, "float32", "4 × ld.global.u32"),
    ("S[(32, 2, 4) : (1@laneid, 1, 2)]", 32, 8, "warp", 32, "float16", "8 × ld.global.u16"),
    # a layout over half a warp: lanes 16..31 idle behind a guard
    ("S[(16, 16) : (1@laneid, 1)]", 16, 16, "warp", 32, "float16", "2 × ld.global.v4.u32"),
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


# copy/reg with a shared side that ldstmatrix declines (fp32, or no m8n8 fragment):
# (layout, rows, cols, scope, threads, dtype, shared layout, expected per-thread summary of the load)
REG_SHARED_CASES = [
    ("frag(16x256b)", 64, 64, "wg", 128, "float16", "swizzle(3, 3, 3)", "8 × ld.shared.v2.u32"),
    ("frag(32x32b)", 128, 32, "wg", 128, "float32", "swizzle(2, 3, 3)", "8 × ld.shared.v4.u32"),
    ("frag(32x32b)", 128, 64, "wg", 128, "float16", "swizzle(2, 3, 3)", "16 × ld.shared.v2.u32"),  # chunk cap 4
    ("S[(32, 8) : (1@laneid, 1)]", 32, 8, "warp", 32, "float16", "swizzle(3, 2, 3)", "1 × ld.shared.v4.u32"),
    ("S[(128, 8) : (1@tid_in_wg, 1)]", 128, 8, "wg", 128, "float32", "S[(128, 8) : (1, 128)]", "8 × ld.shared.u32"),
    ("S[(2, 8, 2, 4, 2) : (2, 4@laneid, 4, 1@laneid, 1)]", 16, 16, "warp", 32, "float32", "", "4 × ld.shared.v2.u32"),
]


def smem_cell(layout, rows, cols, scope, threads, dtype, smem=""):
    """global → shared S → local → shared U → global, and the registers straight to global.

    The register tile is loaded from and stored to shared memory (ldstmatrix or reg), and also
    written to global by copy/reg directly (``check B == A``): that checks the register contents
    against the layout independently of the shared-side variant; ``check C == A`` checks the store.
    """
    lay = f" @ {smem}" if smem else ""
    return f"""
kernel sm threads={threads}
global A: {dtype}[{rows}, {cols}]
global B: {dtype}[{rows}, {cols}]
global C: {dtype}[{rows}, {cols}]
shared S: {dtype}[{rows}, {cols}]{lay}
shared U: {dtype}[{rows}, {cols}]{lay}
local  a: {dtype}[{rows}, {cols}] @ {layout}
{scope}.copy S <- A
cta_sync
{scope}.copy a <- S
{scope}.copy B <- a
{scope}.copy U <- a
cta_sync
{scope}.copy C <- U
check B == A
check C == A
"""


# copy/ldstmatrix: (layout, rows, cols, scope, threads, dtype, shared layout, ldmatrix chain, instructions per warp)
LDSTMATRIX_CASES = [
    ("S[(2, 8, 2, 4, 2) : (2, 4@laneid, 4, 1@laneid, 1)]", 16, 16, "warp", 32, "float16", "",
     "ldmatrix.sync.aligned.m8n8.x4.shared.b16", 1),
    ("S[(2, 4, 2, 2, 8) : (4, 1@laneid, 1, 2, 4@laneid)]", 16, 16, "warp", 32, "float16", "",
     "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16", 1),
    ("S[(2, 4, 2, 8, 8) : (2, 1@laneid, 1, 4, 4@laneid)]", 16, 64, "warp", 32, "bfloat16", "swizzle(3, 3, 3)",
     "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16", 4),
    ("S[(2, 8, 4, 2) : (2, 4@laneid, 1@laneid, 1)]", 16, 8, "warp", 32, "bfloat16", "",
     "ldmatrix.sync.aligned.m8n8.x2.shared.b16", 1),
    ("S[(8, 4, 2) : (4@laneid, 1@laneid, 1)]", 8, 8, "warp", 32, "float16", "",
     "ldmatrix.sync.aligned.m8n8.x1.shared.b16", 1),
    ("S[(4, 2, 8, 2, 4, 2) : (1@wid_in_wg, 2, 4@laneid, 4, 1@laneid, 1)]", 64, 16, "wg", 128, "float16", "",
     "ldmatrix.sync.aligned.m8n8.x4.shared.b16", 1),
    ("S[(4, 2, 8, 2, 4, 2) : (1@wid_in_wg, 2, 4@laneid, 4, 1@laneid, 1)]", 64, 16, "wg", 128, "float16",
     "swizzle(3, 1, 3)", "ldmatrix.sync.aligned.m8n8.x4.shared.b16", 1),
    ("S[(2, 8, 8, 4, 2) : (2, 4@laneid, 4, 1@laneid, 1)]", 16, 64, "warp", 32, "float16", "swizzle(3, 3, 3)",
     "ldmatrix.sync.aligned.m8n8.x4.shared.b16", 4),
    ("S[(2, 8, 8, 4, 2) : (2, 4@laneid, 4, 1@laneid, 1)]", 16, 64, "cta", 64, "float16", "",
     "ldmatrix.sync.aligned.m8n8.x4.shared.b16", 4),
    ("S[(2, 8, 2, 8, 4, 2) : (1@warpid, 4@laneid, 2, 4, 1@laneid, 1)]", 32, 64, "cta", 64, "bfloat16",
     "swizzle(3, 3, 3)", "ldmatrix.sync.aligned.m8n8.x4.shared.b16", 4),
    # two warps of a 128-thread CTA hold the fragment; warps 2 and 3 idle behind `if tx < 64`
    ("S[(2, 2, 8, 2, 4, 2) : (1@warpid, 2, 4@laneid, 4, 1@laneid, 1)]", 32, 16, "cta", 128, "float16", "",
     "ldmatrix.sync.aligned.m8n8.x4.shared.b16", 1),
    ("frag(16x128b)", 64, 64, "wg", 128, "float16", "", "ldmatrix.sync.aligned.m8n8.x4.shared.b16", 4),
    ("frag(16x128b)", 64, 32, "wg", 128, "bfloat16", "swizzle(3, 3, 3)", "ldmatrix.sync.aligned.m8n8.x4.shared.b16", 2),
    ("frag(16x128b)", 128, 64, "wg", 128, "float16", "swizzle(3, 3, 3)", "ldmatrix.sync.aligned.m8n8.x4.shared.b16", 8),
]


def bank_rows_cell(dtype: str = "float32", smem: str = "") -> str:
    """Each lane of a warp holds one 128-byte row of a 32-row tile and stores it to shared memory (copy/reg,
    16-byte vectors: a quarter warp's 8 lanes start 128 bytes apart, all in one group of 4 banks, an 8-way
    conflict), which copy/gmem_smem reads back row-contiguously (conflict-free).  ``smem``: the shared layout."""
    cols = 128 // {"float32": 4, "float16": 2, "bfloat16": 2, "uint8": 1, "int8": 1}[dtype]
    lay = f" @ {smem}" if smem else ""
    return f"""
kernel rows threads=32
global A: {dtype}[32, {cols}]
global B: {dtype}[32, {cols}]
shared S: {dtype}[32, {cols}]{lay}
local a: {dtype}[32, {cols}] @ S[(32, {cols}) : (1@laneid, 1)]
warp.copy a <- A
warp.copy S <- a
cta_sync
warp.copy B <- S
check B == A
"""


def golden_cells():
    """One small cell per copy variant for the golden IR/CUDA files: name -> source."""
    return {
        "copy_gmem_smem": gmem_smem_cell(GMEM_SMEM_CASES[2], "gmem_smem_swizzled"),
        "copy_reg": reg_cell("frag(16x256b)", 64, 32, "wg", 128, "bfloat16").replace("kernel r ", "kernel reg_frag "),
        "copy_ldstmatrix": smem_cell(*LDSTMATRIX_CASES[1][:7]).replace("kernel sm ", "kernel ldstmatrix_trans "),
        "copy_fallback": fallback_cell("warp", 32, 1, 8).replace("kernel fb ", "kernel fallback_1x8 "),
    }


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


# ----------------------------------------------------------------------------- tcgen05 ld/st matrix (issue 3)
# Written from PTX ISA 9.0 §9.7.16, not imported from tilemagic: the tests decode with them.
TCGEN05_COL_FACTOR = {"32x32b": 1, "16x64b": 2, "16x128b": 4, "16x256b": 8}  # 32-bit columns per unit of num
TCGEN05_REGS_PER_NUM = {"32x32b": 1, "16x64b": 1, "16x128b": 2, "16x256b": 4}
TCGEN05_MAX_NUM = {"32x32b": 128, "16x64b": 128, "16x128b": 64, "16x256b": 32}  # PTX ISA 9.0 Table 49
# which TMEM data paths each shape is tested on: D128 = datapath D, 128-row fragment; D64 = rows 0..63 of a
# datapath-D buffer with a 64-row .16x*b fragment; F0/F1 = datapath(F, sub_slab=0/1); B = datapath(B)
TCGEN05_DATAPATHS = {"32x32b": ("D128", "B"), "16x64b": ("D128", "D64", "F0", "F1"),
                     "16x128b": ("D128", "D64", "F0", "F1"), "16x256b": ("D128", "D64", "F0", "F1")}


def ptx_row_col(shape, t, r, split=0):
    """(row, 32-bit column) of lane ``t``'s register ``r`` relative to the instruction's base lane and column.

    PTX ISA 9.0 §9.7.16.2.3 matrix fragments as closed forms, with q = t >> 2, p = t & 3;
    ``split`` is ``immHalfSplitoff`` of .16x32bx2.  Works on ints and broadcasts NumPy arrays.
    """
    q, p = t >> 2, t & 3
    if shape == "32x32b":
        return t + 0 * r, r + 0 * t
    if shape == "16x64b":
        return q + 8 * (t & 1) + 0 * r, ((t >> 1) & 1) + 2 * r
    if shape == "16x128b":
        return q + 8 * (r & 1), p + 4 * (r >> 1)
    if shape == "16x256b":
        return q + 8 * ((r >> 1) & 1), 2 * p + (r & 1) + 8 * (r >> 2)
    if shape == "16x32bx2":
        return (t & 15) + 0 * r, r + split * (t >= 16)
    raise ValueError(shape)


class Tcgen05Case:
    """One tcgen05 ld/st case: shape x num x dtype x data path x direction x TMEM column offset.

    ``direction`` says which instruction of the shape under test is checked against the reference
    ``.32x32b`` transfer of the whole allocation: ``st`` writes the tile with the shape under test and a
    ``.32x32b`` load dumps TMEM into ``D``; ``ld`` fills TMEM with ``.32x32b`` stores from ``C`` and reads
    the tile with the shape under test into ``B``.  Both cells also run the other instruction of the shape
    under test (a round trip), so every case emits its ``ld`` and its ``st``.  ``col`` is the TMEM column
    offset of the tile in 32-bit columns (a region slice; for datapath B an ``at T + col`` alias).

    Attributes
    ----------
    rows, cols : int
        The logical tile (fragment) in elements: ``rows`` 128 (D128) or 64, ``cols`` = ``num`` units.
    tcols : int
        32-bit columns of the allocation ``T`` (a power of two >= 32).
    source : str
        The ``%%tilecopy`` description (kernel ``name``).
    region : str
        The TMEM region the shape under test moves.
    line : dict
        ``{"st": line, "ld": line}``: the source lines of the two copies with the shape under test.
    """

    def __init__(self, shape, num, dtype, datapath, direction, col=0, name=None):
        self.shape, self.num, self.dtype, self.datapath, self.direction, self.col = (
            shape, num, dtype, datapath, direction, col)
        self.epc = EPC[dtype]
        self.rows = 128 if datapath == "D128" else 64
        self.cols = 2 * num if datapath == "B" else TCGEN05_COL_FACTOR[shape] * num * self.epc
        self.cols32 = num if datapath == "B" else self.cols // self.epc  # TMEM columns the tile spans
        need = col + self.cols32
        self.tcols = max(32, 1 << (need - 1).bit_length())
        self.sub_slab = 1 if datapath == "F1" else 0
        self.name = name or "k_" + self.id.replace("-", "_")
        self.source = self._source()

    @property
    def id(self):
        return f"{self.shape}-x{self.num}-{self.dtype}-{self.datapath}-{self.direction}-c{self.col}"

    def __repr__(self):
        return f"Tcgen05Case({self.id})"

    def lane_col(self, r, c):
        """TMEM (lane, 32-bit column, element within the cell) of logical element (r, c) of the tile.

        The data-path formulas of PTX ISA 9.0 §9.7.16.10.5: D lane = r; F lane =
        32*(r//16) + 16*sub_slab + r%16 (also where a 64-row .16x*b fragment sits on datapath D);
        B lane = r + 64*(c // (N/2)), column c % (N/2).
        """
        if self.datapath == "D128":
            lane = r
        elif self.datapath == "B":
            half = self.cols // 2
            return r + 64 * (c // half), self.col + c % half, 0
        else:
            lane = 32 * (r // 16) + 16 * self.sub_slab + r % 16
        return lane, self.col + c // self.epc, c % self.epc

    def _source(self):
        dt, rows, cols, epc = self.dtype, self.rows, self.cols, self.epc
        lo = self.col * epc
        lines = [f"kernel {self.name} threads=128",
                 f"tmem T: {dt}[128, {self.tcols * epc}]"]
        if self.datapath == "B":
            lines.append(f"tmem V: {dt}[64, {cols}] @ datapath(B) at T + {self.col}")
            region = "V"
        elif self.datapath in ("F0", "F1"):
            lines.append(f"tmem V: {dt}[64, {self.tcols * epc}] @ datapath(F, sub_slab={self.sub_slab}) at T")
            region = f"V[:, {lo}:{lo + cols}]"
        elif self.datapath == "D64":
            region = f"T[0:64, {lo}:{lo + cols}]"
        else:
            region = f"T[:, {lo}:{lo + cols}]"
        chunk = min(self.tcols, 128) * epc  # the reference .32x32b moves at most 128 columns
        lines += [f"local a: {dt}[{rows}, {cols}] @ frag({self.shape})",
                  f"local d: {dt}[128, {chunk}] @ frag(32x32b)",
                  f"global D: {dt}[128, {self.tcols * epc}]",
                  f"global B: {dt}[{rows}, {cols}]"]
        dump = []
        for k in range(0, self.tcols * epc, chunk):
            dump += [f"wg.copy_async d <- T[:, {k}:{k + chunk}]", "wait ld", f"wg.copy D[:, {k}:{k + chunk}] <- d"]
        if self.direction == "st":
            # TMEM starts as garbage: zero it first, so the dump of the whole of T is defined and shows
            # exactly the cells the st wrote
            zero = []
            for k in range(0, self.tcols * epc, chunk):
                zero += [f"wg.copy d <- Z[:, {k}:{k + chunk}]", f"wg.copy_async T[:, {k}:{k + chunk}] <- d", "wait st"]
            lines += [f"global A: {dt}[{rows}, {cols}]", f"global Z: {dt}[128, {self.tcols * epc}] = zeros", *zero,
                      "cta_sync",
                      "wg.copy a <- A", f"wg.copy_async {region} <- a", "wait st", "cta_sync",
                      f"wg.copy_async a <- {region}", "wait ld", "wg.copy B <- a", *dump, "check B == A"]
        else:
            fill = []
            for k in range(0, self.tcols * epc, chunk):
                fill += [f"wg.copy d <- C[:, {k}:{k + chunk}]", f"wg.copy_async T[:, {k}:{k + chunk}] <- d", "wait st"]
            lines += [f"global C: {dt}[128, {self.tcols * epc}]", *fill, "cta_sync",
                      f"wg.copy_async a <- {region}", "wait ld", "wg.copy B <- a",
                      f"wg.copy_async {region} <- a", "wait st", "cta_sync", *dump, "check D == C"]
        self.region = region
        self.line = {"st": lines.index(f"wg.copy_async {region} <- a") + 1,
                     "ld": lines.index(f"wg.copy_async a <- {region}") + 1}
        return "\n".join(lines) + "\n"


def tcgen05_nums(shape, datapath):
    """min, a middle and the max num tested for a shape on a data path.

    The max is PTX ISA 9.0 Table 49's, except for a 128-row ``.16x*b`` fragment (D128): it holds two slabs,
    2 * REGS_PER_NUM * num registers per thread, and a thread has at most 255 (lower/limits.py), so
    its max is half the shape's (x64 / x32 / x16); the shape's own max is reached by the 64-row
    fragments (D64, F0, F1).
    """
    mx = TCGEN05_MAX_NUM[shape]
    if datapath == "D128" and shape != "32x32b":
        mx //= 2
    return (1, 4 if mx <= 32 else 8, mx)


def tcgen05_matrix():
    """The issue-3 matrix: every shape x (min, middle, max num) x dtype x data path x direction x offset.

    Dtypes: fp32, fp16, bf16, int32 on every shape, plus uint8/int8 on .32x32b (four per cell; the
    .16x*b fragments are 16/32-bit only); datapath B is fp32 only.  Offsets: TMEM column 0 and 3
    (B: 0 and 32, through `at T + col`).  Nums: :func:`tcgen05_nums`.
    """
    cases = []
    for shape, dps in TCGEN05_DATAPATHS.items():
        for dp in dps:
            for num in tcgen05_nums(shape, dp):
                dtypes = ("float32",) if dp == "B" else (
                    ("float32", "float16", "bfloat16", "int32") + (("uint8", "int8") if shape == "32x32b" else ()))
                for dt in dtypes:
                    for direction in ("st", "ld"):
                        for col in ((0, 32) if dp == "B" else (0, 3)):
                            cases.append(Tcgen05Case(shape, num, dt, dp, direction, col))
    return cases


# column slices of .16x*b fragments: (shape, dtype, rows, cols, chunk width in elements)
TCGEN05_SLICE_CASES = [
    ("16x256b", "float32", 128, 64, 16),   # TVM test_tcgen05_ld_16x256b_sliced_matches_full_M128
    ("16x256b", "float32", 128, 64, 8),
    ("16x128b", "float16", 128, 64, 16),
    ("16x64b", "bfloat16", 128, 32, 4),
    ("16x64b", "int32", 128, 32, 2),
]


def tcgen05_slices_cell(shape, dtype, rows, cols, step):
    """Store a .16x*b fragment whole, read it back in column chunks of ``step`` elements (smaller num)."""
    chunks = "\n".join(f"wg.copy_async b[:, {k}:{k + step}] <- T[:, {k}:{k + step}]\nwait ld"
                       for k in range(0, cols, step))
    return f"""
kernel s threads=128
global A: {dtype}[{rows}, {cols}]
global B: {dtype}[{rows}, {cols}]
tmem T: {dtype}[128, {cols}]
local a: {dtype}[{rows}, {cols}] @ frag({shape})
local b: {dtype}[{rows}, {cols}] @ frag({shape})
wg.copy a <- A
wg.copy_async T <- a
wait st
cta_sync
{chunks}
wg.copy B <- b
check B == A
"""


# both datapath-F halves of one allocation written and read back (docs/language.md, `tmem ... at T`), plus a
# .32x32b dump D of the whole allocation
F_HALVES_CELL = """
kernel fh threads=128
global A: float32[64, 32]
global Z: float32[64, 32]
global B: float32[64, 32]
global Y: float32[64, 32]
global D: float32[128, 32]
tmem T:     float32[128, 32]
tmem lower: float32[64, 32] @ datapath(F, sub_slab=0) at T
tmem upper: float32[64, 32] @ datapath(F, sub_slab=1) at T
local lo:   float32[64, 32] @ frag(16x64b)
local hi:   float32[64, 32] @ frag(16x64b)
local d:    float32[128, 32] @ frag(32x32b)
wg.copy lo <- A
wg.copy hi <- Z
wg.copy_async lower <- lo
wg.copy_async upper <- hi
wait st
cta_sync
wg.copy_async lo <- lower
wg.copy_async hi <- upper
wg.copy_async d <- T
wait ld
wg.copy B <- lo
wg.copy Y <- hi
wg.copy D <- d
check B == A
check Y == Z
"""


# the examples of docs/language.md: the F halves of `tmem ... at T`, the B readback of "datapath(D|F|B)"
SEED_F_HALVES = """\
tmem T:     float32[128, 32]
tmem lower: float32[64, 32] @ datapath(F, sub_slab=0) at T
tmem upper: float32[64, 32] @ datapath(F, sub_slab=1) at T
local lo:   float32[64, 32] @ frag(16x64b)
wg.copy_async lo <- lower
"""

SEED_B_READBACK = """\
tmem  acc:  float32[64, 64] @ datapath(B)
local frag: float32[64, 64] @ frag(32x32b)
wg.copy_async frag <- acc      # one tcgen05.ld.sync.aligned.32x32b.x32.b32
wait ld
wg.copy_async acc <- frag      # one tcgen05.st ... same image
wait st
"""


def many_ops_cell(reps: int, name: str = "many") -> str:
    """``reps`` times global -> shared -> global (copy/gmem_smem, a ``cta_sync`` between) in one 32-thread
    kernel: a long program (about 9 IR and 5 CUDA lines per repeat) for the bounded-output tests and benchmarks."""
    lines = [f"kernel {name} threads=32", "global A: float32[32, 64]", "global B: float32[32, 64]",
             "shared S: float32[32, 64]"]
    lines += ["warp.copy S <- A", "cta_sync", "warp.copy B <- S"] * reps
    return "\n".join(lines + ["check B == A"])


def failing_global_cell(rows: int, cols: int, dtype: str = "float32", check: str = "B == A") -> str:
    """Two global tiles and a check, no copy: ``A`` is ``arange``, ``B`` zeros, so every element but the
    first differs (``check`` may name regions); the bounded-memory tests' and benchmarks' failing cell."""
    return (f"kernel k threads=32\nglobal A: {dtype}[{rows}, {cols}] = arange\nglobal B: {dtype}[{rows}, {cols}]\n"
            f"check {check}")


def mbar_cell(arrive: str, copies: list[str], tail: str = "wait full phase 0", threads: int = 128) -> str:
    """A float32 cell around an mbarrier phase: `A` 64x32 global, `S` 32x32 shared, mbarriers `full` (count 1)
    and `other` (count 2) on lines 4-5, then `arrive` (line 6), the `copies` (from line 7) and `tail`."""
    return "\n".join([f"kernel k threads={threads}", "global A: float32[64, 32] = arange",
                      "shared S: float32[32, 32]", "mbarrier full", "mbarrier other count=2", arrive, *copies,
                      tail])


# ----------------------------------------------------------------------------- asynchronous copies (issue 13)
def ldgsts_committed_cell(case: GmemSmemCase, name: str = "ldg_e2e") -> str:
    """:func:`ldgsts_cell` with the cp.async committed and waited for before the barrier: a round trip that runs."""
    return ldgsts_cell(case, name).replace("cta_sync\n", "commit_group\nwait_group 0\ncta_sync\n", 1)


def _tma_cell(name, dt, gshape, sdecl, src, dst, extra="", dispatch="", rdump=True):
    """A TMA round trip: G2S of ``src`` into the shared tile (mbarrier ``full``, expect_tx=auto), every thread
    copies the tile to ``R`` (the shared layout's logical order: the swizzle the hardware applied must be the one
    the simulator applied), S2G of the tile to ``dst`` of B through a bulk group."""
    g = ", ".join(map(str, gshape))
    sshape = sdecl.split("@")[0].strip()
    lines = [f"kernel {name} threads=128", f"global A: {dt}[{g}] = random", f"global B: {dt}[{g}] = zeros",
             f"shared S: {dt}{sdecl}", "mbarrier full count=1",
             "if tx == 0: arrive full expect_tx=auto",
             f"if tx == 0: thread.copy_async S <- A[{src}] mbar=full{extra}{dispatch}",
             "wait full phase 0"]
    if rdump:
        lines[3:3] = [f"global R: {dt}{sshape} = zeros"]
        lines += ["wg.copy R <- S", f"check R == A[{src}]"]
    lines += [f"if tx == 0: thread.copy_async B[{dst}] <- S{dispatch}", "if tx == 0: bulk_commit_group",
              "if tx == 0: bulk_wait_group 0", f"check B[{dst}] == A[{src}]"]
    return "\n".join(lines) + "\n"


#: TMA round trips (tma_auto, tma_explicit; ranks 2 and 3, swizzles none/64B/128B, a promoted unit, an issue axis):
#: name -> cell.  tests/unit/test_async_cells.py runs them in the simulator, tests/gpu natively, bit for bit.
TMA_CELLS = {
    "tma_fp16_sw128": _tma_cell("tma_fp16_sw128", "float16", (256, 128), "[64, 64] @ swizzle(3, 3, 3)",
                                "64:128, 0:64", "0:64, 64:128"),
    "tma_fp16_two_atoms": _tma_cell("tma_fp16_two_atoms", "float16", (256, 256),
                                    "[64, 128] @ swizzle(3, 3, 3, S[(64, 2, 64) : (64, 4096, 1)])",
                                    "64:128, 128:256", "128:192, 0:128"),
    "tma_u8_promoted": _tma_cell("tma_u8_promoted", "uint8", (16, 512), "[4, 512]", "4:8, :", "8:12, :"),
    "tma_fp16_issue_axis": _tma_cell("tma_fp16_issue_axis", "float16", (512, 64), "[264, 64]", "8:272, :",
                                     "240:504, :", rdump=False),
    "tma_fp32_sw64_explicit": _tma_cell("tma_fp32_sw64_explicit", "float32", (64, 64), "[16, 16] @ swizzle(2, 2, 3)",
                                        "16:32, 32:48", "48:64, 0:16", extra=" cache_hint=evict_first",
                                        dispatch=" dispatch=tma_explicit"),
    # two phases of one barrier: the tile reused after the store's source reads (bulk_wait_group 0 read) and a
    # barrier that keeps every waiter of phase 0 ahead of phase 1's arrive
    "tma_two_phases": """\
kernel tma_two_phases threads=128
global A: float16[128, 64] = random
global B: float16[128, 64] = zeros
shared S: float16[64, 64] @ swizzle(3, 3, 3)
mbarrier full count=1
if tx == 0: arrive full expect_tx=auto
if tx == 0: thread.copy_async S <- A[0:64, :] mbar=full
wait full phase 0
if tx == 0: thread.copy_async B[64:128, :] <- S
if tx == 0: bulk_commit_group
if tx == 0: bulk_wait_group 0 read
cta_sync
if tx == 0: arrive full expect_tx=auto
if tx == 0: thread.copy_async S <- A[64:128, :] mbar=full
wait full phase 1
if tx == 0: thread.copy_async B[0:64, :] <- S
if tx == 0: bulk_commit_group
if tx == 0: bulk_wait_group 0
check B[64:128, :] == A[0:64, :]
check B[0:64, :] == A[64:128, :]
""",
}


def cluster_halves_cell(name: str = "halves", tail: str = "") -> str:
    """A 2-CTA cluster kernel: each CTA loads its half of A by TMA (regions in ``cta_rank``, unicast,
    ``expect_tx=auto``) and stores its shared tile to its half of B, then ``cluster_sync``; ``tail`` lines go
    before the ``cluster_sync``."""
    return (f"kernel {name} threads=128 cluster=2\n"
            "global A: float16[128, 64] = arange\n"
            "global B: float16[256, 64] = zeros\n"
            "shared S: float16[128, 64] @ swizzle(3, 3, 3)\n"
            "mbarrier full\n"
            "if tx == 0: arrive full expect_tx=auto\n"
            "if tx == 0: thread.copy_async S[64*cta_rank : 64*cta_rank+64, 0:64] <- "
            "A[64*cta_rank : 64*cta_rank+64, 0:64] mbar=full dispatch=tma_auto\n"
            "wait full phase 0\n"
            "wg.copy B[128*cta_rank : 128*cta_rank+128, 0:64] <- S\n"
            + tail + "cluster_sync\n")


def _reduce_cell(name: str, dtype: str, op: str, init: str) -> str:
    """A TMA reduction round trip: the tile ``A`` staged in shared memory (generic stores, ``fence.proxy.async``,
    ``cta_sync``), reduced into ``B`` (initialised ``init``) with ``use_tma_reduce=OP``, completed through a bulk
    group, and ``B`` copied to ``C``."""
    return "\n".join([
        f"kernel {name} threads=128", f"global A: {dtype}[64, 32] = arange", f"global B: {dtype}[64, 32] = {init}",
        f"global C: {dtype}[64, 32] = zeros", f"shared S: {dtype}[64, 32]",
        "wg.copy S <- A", "fence.proxy.async", "cta_sync",
        f"if tx == 0: thread.copy_async B <- S use_tma_reduce={op}",
        "if tx == 0: bulk_commit_group", "if tx == 0: bulk_wait_group 0", "cta_sync", "wg.copy C <- B"]) + "\n"


#: The second milestone of issue 13 (clusters, multicast, dsmem, boxes past the edge, reductions): name -> cell.
#: tests/unit/test_async_cells.py runs them in the simulator (PASS, clean); tests/gpu natively, bit for bit —
#: the OOB-NaN and the S2G clipping included.
CLUSTER_CELLS = {
    "edge_zero": """\
kernel edge_zero threads=128
global A: float16[256, 64] = arange
global B: float16[32, 64] = zeros
global Z: float16[16, 64] = zeros
shared S: float16[32, 64]
mbarrier full count=1
if tx == 0: arrive full expect_tx=auto
if tx == 0: thread.copy_async S <- A[240:272, 0:64] mbar=full
wait full phase 0
wg.copy B <- S
check B[0:16, :] == A[240:256, :]
check B[16:32, :] == Z
""",
    # oob=nan (tma_explicit: the whole buffer is the map): the NaN bits the TMA unit writes land in B
    "edge_nan_explicit": """\
kernel edge_nan_explicit threads=128
global A: float32[48, 32] = arange
global B: float32[64, 32] = zeros
shared S: float32[16, 32]
mbarrier full count=1
if tx == 0: arrive full expect_tx=auto
if tx == 0: thread.copy_async S <- A[40:56, 0:32] mbar=full oob=nan dispatch=tma_explicit
wait full phase 0
wg.copy B[0:16, :] <- S
check B[0:8, :] == A[40:48, :]
""",
    # a store past the edge: rows 56..63 of the box are dropped (B keeps its zeros there)
    "edge_store": """\
kernel edge_store threads=128
global A: float16[32, 64] = arange
global B: float16[48, 64] = zeros
shared S: float16[32, 64]
wg.copy S <- A
fence.proxy.async
cta_sync
if tx == 0: thread.copy_async B[32:64, :] <- S
if tx == 0: bulk_commit_group
if tx == 0: bulk_wait_group 0
check B[32:48, :] == A[0:16, :]
""",
    **{name: _reduce_cell(name, dtype, op, init) for name, dtype, op, init in (
        ("reduce_add_f32", "float32", "add", "arange"), ("reduce_add_f16", "float16", "add", "arange"),
        ("reduce_max_i32", "int32", "max", "random"))},
    "multicast_pair": """\
kernel multicast_pair threads=128 cluster=2
global A: float16[128, 64] = arange
global B: float16[256, 64] = zeros
shared S: float16[128, 64] @ swizzle(3, 3, 3)
mbarrier full count=1
# every CTA expects both halves: its own and its peer's (16384 bytes)
if tx == 0: arrive full expect_tx=auto
if tx == 0: thread.copy_async S[64*cta_rank : 64*cta_rank+64, 0:64] <- A[64*cta_rank : 64*cta_rank+64, 0:64] mbar=full cta_mask=0b11
wait full phase 0
wg.copy B[128*cta_rank : 128*cta_rank+128, 0:64] <- S
# no CTA exits while its peer's multicast may still write into it
cluster_sync
check B[0:128, 0:64] == A
check B[128:256, 0:64] == A
""",
    "multicast_one_bit": """\
kernel multicast_one_bit threads=128 cluster=2
global A: float16[64, 64] = arange
global B: float16[64, 64] = zeros
shared S: float16[64, 64] @ swizzle(3, 3, 3)
mbarrier full count=1
if cta_rank == 1 and tx == 0: arrive full expect_tx=auto
if cta_rank == 0 and tx == 0: thread.copy_async S <- A mbar=full cta_mask=0b10
if cta_rank == 1: wait full phase 0
if cta_rank == 1: wg.copy B <- S
cluster_sync
check B == A
""",
    "multicast_four": """\
kernel multicast_four threads=128 cluster=4
global A: float32[128, 32] = arange
global B: float32[512, 32] = zeros
shared S: float32[128, 32]
mbarrier full count=1
if tx == 0: arrive full expect_tx=auto
if tx == 0: thread.copy_async S[32*cta_rank : 32*cta_rank+32, :] <- A[32*cta_rank : 32*cta_rank+32, :] mbar=full cta_mask=0b1111
wait full phase 0
wg.copy B[128*cta_rank : 128*cta_rank+128, :] <- S
cluster_sync
check B[0:128, :] == A
check B[384:512, :] == A
""",
    "dsmem_ring": """\
kernel dsmem_ring threads=128 cluster=4
global A: float32[4, 32, 32] = arange
global B: float32[4, 32, 32] = zeros
shared S: float32[32, 32]
shared R: float32[32, 32]
mbarrier got count=1
wg.copy S <- A[cta_rank, :, :]
fence.proxy.async
cluster_sync
if tx == 0: arrive got expect_tx=auto
if tx == 0: thread.copy_async R <- S remote_cta_id=(cta_rank+1)%4 mbar=got
wait got phase 0
wg.copy B[(cta_rank+3)%4, :, :] <- R
cluster_sync
check B == A
""",
    "dsmem_rows": """\
kernel dsmem_rows threads=128 cluster=2
global A: float16[2, 8, 256] = arange
global B: float16[2, 8, 128] = zeros
global Z: float16[2, 8, 128] = zeros
shared S: float16[8, 256]
shared R: float16[8, 128]
mbarrier got count=1
wg.copy S <- A[cta_rank, :, :]
fence.proxy.async
cluster_sync
if tx == 0: arrive got expect_tx=auto
if tx == 0: thread.copy_async R <- S[:, 0:128] remote_cta_id=cta_rank^1 mbar=got
wait got phase 0
wg.copy B[cta_rank^1, :, :] <- R
cluster_sync
check B == A[:, :, 0:128]
""",
}


# ----------------------------------------------------------------------------- tcgen05.cp (issue 14)
#: bytes per element of the tcgen05.cp matrix's dtypes (16- and 32-bit: TVM 0.27's round-trip dtypes)
CP_DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}


class CpCase(NamedTuple):
    """One ``tcgen05.cp`` round trip: shape key (``arch.tcgen05.CP_SHAPES``), swizzle mode 0..3, dtype, offsets."""

    key: str
    swizzle: int
    dtype: str
    offsets: bool = False


def _cp_runs(lanes_rows):
    """``(lane, row)`` pairs -> maximal runs ``(lane0, row0, n)`` where both step by 1."""
    runs = []
    for lane, row in sorted(lanes_rows):
        if runs and runs[-1][0] + runs[-1][2] == lane and runs[-1][1] + runs[-1][2] == row:
            runs[-1][2] += 1
        else:
            runs.append([lane, row, 1])
    return [tuple(r) for r in runs]


def cp_cell(key: str, swizzle: int, dtype: str, *, offsets: bool = False, fence: bool = True, force: bool = True,
            name: str | None = None) -> str:
    """A shared -> TMEM (tcgen05.cp) -> registers (tcgen05.ld) -> global round trip in the structure of
    docs/language.md's ``tcgen05_cp_roundtrip`` cell, for the shape/multicast ``key``.

    The shared tile has the shape's rows and rows of ``16·2**swizzle`` bytes (an unswizzled tile: the shape's row
    bytes, 16 or 32) in the canonical layout of its swizzle mode: ``swizzle(per_element, B, 3)`` over row-major
    rows for ``B = swizzle`` >= 1 (``per_element = log2(128 / dtype bits)``: 16-byte units), and for ``B = 0`` the
    interleaved 8-row x 16-byte core matrices (rows 16 B apart, chunks ``LBO`` = 8 rows x 16 B apart, 8-row groups
    after all their chunks).  The TMEM buffer has the shape's lane pattern with the replicas its multicast needs
    (``+ R[...]``); an alias ``all`` reads all 128 lanes of the matrix's columns and a ``check`` line compares every lane
    written (every replica) with its source row (a ``4x256b`` cell first zeroes ``all`` with a ``tcgen05.st``, so the
    lanes it does not write read as zeros).  ``offsets``: the matrix starts 8 rows into a taller shared buffer and at a TMEM
    column offset of 4 cells (``arch.tcgen05.CP_COL_ALIGN``).  ``fence=False`` drops the ``fence.proxy.async``
    between the generic stores and the copy (a cell the happens-before model must flag).  ``force``: write
    ``shape=`` (and ``multicast=``) so the case is the key's own, not the planner's first fit.
    """
    from math import log2

    from tilemagic.arch.tcgen05 import CP_SHAPES

    c = CP_SHAPES[key]
    eb = CP_DTYPE_BYTES[dtype]
    e16 = 16 // eb  # elements per 16-byte chunk
    row_bytes = 16 << swizzle if swizzle else c.bits // 8
    width = row_bytes // eb
    rows = c.rows
    lead = 8 if offsets else 0  # shared rows before the matrix (a whole 8-row atom keeps every alignment)
    coff = 4 * (4 // eb) if offsets else 0  # the TMEM column offset in elements: 4 cells
    srows = rows + lead
    if swizzle:
        slayout = f" @ swizzle({int(log2(128 // (8 * eb)))}, {swizzle}, 3)"
    else:
        g8 = min(8, srows)
        n = width // e16
        slayout = f" @ S[({srows // g8}, {g8}, {n}, {e16}) : ({g8 * n * e16}, {e16}, {g8 * e16}, 1)]"
    # TMEM: the shape's lane of each row (TVM's required layout), the multicast's copies as replicas
    lane = c.lane_of_row
    if key == "4x256b":
        shard = f"S[({rows}, {width + coff}) : (32@TLane, 1@TCol)]"
    elif key == "64x128b.warpx2::01_23":
        shard = f"S[(2, 32, {width + coff}) : (64@TLane, 1@TLane, 1@TCol)]"
    else:
        shard = f"S[({rows}, {width + coff}) : (1@TLane, 1@TCol)]"
    reps = c.replicas[1:]
    replica = f" + R[{len(c.replicas)} : {reps[0]}@TLane]" if reps else ""
    tmem_layout = "" if rows == 128 else f" @ {shard}{replica}"
    cols = width + coff
    opts = ""
    if force:
        opts = f" shape={c.shape}" + (f" multicast={c.multicast}" if c.shape == "64x128b" else "")
    dst = f"T[:, {coff}:{cols}]" if offsets else "T"
    src = f"S[{lead}:{srows}, :]" if offsets else "S"
    checks = [f"check B[{lane0}:{lane0 + k}, :] == A[{lead + row0}:{lead + row0 + k}, :]"
              for lane0, row0, k in _cp_runs((lane[r] + o, r) for r in range(rows) for o in c.replicas)]
    cname = name or ("cp_" + key.replace(".", "_").replace("::", "_") + f"_sw{swizzle}_{dtype}"
                     + ("_off" if offsets else "") + ("" if fence else "_nofence"))
    lines = [
        f"kernel {cname} threads=128",
        f"global A: {dtype}[{srows}, {width}] = arange",
        f"global B: {dtype}[128, {width}] = zeros",
        f"shared S: {dtype}[{srows}, {width}]{slayout}",
        f"tmem   T: {dtype}[{rows}, {cols}]{tmem_layout}",
        f"tmem   all: {dtype}[128, {width}] at T" + (f" + {coff * eb // 4}" if offsets else ""),
        f"local  r: {dtype}[128, {width}] @ S[(128, {width}) : (1@tid_in_wg, 1)]",
        "mbarrier done count=1",
        # 4x256b writes 4 lanes: zero the rest first with a tcgen05.st of B's zeros, so the read-back reads no
        # uninitialised TMEM (the st is waited for and ordered before the cp by the cta_sync)
        *(["wg.copy r <- B", "wg.copy_async all <- r", "wait st"] if key == "4x256b" else []),
        "wg.copy S <- A",
        *(["fence.proxy.async"] if fence else []),
        "cta_sync",
        f"if tx == 0: thread.copy_async {dst} <- {src}{opts}",
        "if tx == 0: tcgen05.commit done",
        "wait done phase 0",
        "tcgen05.fence::after_thread_sync",
        "wg.copy_async r <- all",
        "wait ld",
        "wg.copy B <- r",
        *checks,
    ]
    return "\n".join(lines) + "\n"


#: The tcgen05.cp matrix: every shape/multicast x swizzle 0..3 x a 16- and a 32-bit dtype, and a few cases with a
#: shared row offset and a TMEM column offset.  Until the smem->tmem variant lands these parse and type-check
#: (tests/unit/lower/test_cp_program.py); the simulator, the emulation and --compare tvm run them after.
CP_CELLS: list[CpCase] = [
    *(CpCase(key, sw, dt) for key in ("128x256b", "4x256b", "128x128b", "64x128b.warpx2::02_13",
                                      "64x128b.warpx2::01_23", "32x128b.warpx4")
      for sw in range(4) for dt in ("bfloat16", "float32")),
    CpCase("128x256b", 3, "bfloat16", True),
    CpCase("128x128b", 0, "float32", True),
    CpCase("32x128b.warpx4", 1, "bfloat16", True),
    CpCase("64x128b.warpx2::01_23", 2, "float32", True),
]


def cp_case_cell(case: CpCase, **kw) -> str:
    """:func:`cp_cell` of one :data:`CP_CELLS` case."""
    return cp_cell(case.key, case.swizzle, case.dtype, offsets=case.offsets, **kw)
