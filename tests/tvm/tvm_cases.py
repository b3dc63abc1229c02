"""Cells of the TVM differential tests, and the harness that compares one cell with TVM.

Builders shared with the rest of the suite come from ``tests/cells.py``; the generalised
tcgen05 fragment builder (:func:`frag_cell`, every shape, data path D/F/B, sub-slab,
slices, aliases) and the global<->shared / ldstmatrix builders live here for now.
"""

from __future__ import annotations

import re
from typing import List

import pytest
from cells import (
    EPC,
    FALLBACK_CASES,
    REG_CASES,
    fallback_cell,
    reg_cell,
    roundtrip_cell,
)

from tilemagic.export.tvm_compare import variant_family
from tilemagic.pipeline import compare_source_with_tvm


# ----------------------------------------------------------------------------- tcgen05 builders
def frag_cell(shape, rows, cols, dtype="float32", *, datapath="D", sub_slab=0, tmem_cols=None, lo=0,
              frag_slice=None, alias=None):
    """A register fragment ``frag(shape)`` stored to TMEM (``tcgen05.st``) and loaded back (``tcgen05.ld``).

    Parameters
    ----------
    shape : str
        ``32x32b``, ``16x64b``, ``16x128b`` or ``16x256b``.
    rows, cols : int
        Fragment shape in elements (rows 128 or 64).
    datapath : {"D", "F", "B"}
        ``D``: a 128-row buffer ``T`` (a 64-row fragment then uses ``T[0:64, ...]``, lanes 0-15 of each
        warp); ``F``: a 64-row ``datapath(F, sub_slab)`` view ``V`` at ``T + alias``; ``B``: a
        ``(64, N)`` ``datapath(B)`` buffer.
    tmem_cols : int, optional
        Width of the TMEM buffer in elements (default: ``lo + width``).
    lo : int
        First TMEM column (elements) of the window.
    frag_slice : (int, int), optional
        Copy only fragment columns ``[a, b)`` (and as many TMEM columns).
    alias : int, optional
        32-bit column of the F view (or of a D alias ``V``) inside ``T``.
    """
    a, b = frag_slice or (0, cols)
    width = b - a
    tc = tmem_cols or (lo + width)
    lines = ["kernel k threads=128"]
    if datapath == "B":
        lines.append(f"tmem T: {dtype}[64, {tc}] @ datapath(B)")
        tname, trows = "T", (0, 64)
    elif datapath == "F":
        base = tc + (alias or 0) * EPC[dtype]
        lines += [f"tmem T: {dtype}[128, {base}]", f"tmem V: {dtype}[64, {tc}] @ datapath(F, sub_slab={sub_slab})"
                  + (f" at T + {alias}" if alias is not None else " at T")]
        tname, trows = "V", (0, 64)
    else:
        lines.append(f"tmem T: {dtype}[128, {tc}]")
        tname, trows = "T", (0, rows)
        if alias is not None:
            lines.append(f"tmem V: {dtype}[128, {width}] at T + {alias}")
            tname = "V"
    lines.append(f"local f: {dtype}[{rows}, {cols}] @ frag({shape})")
    full_t = (tname == "V" and datapath == "D") or (datapath == "B" and lo == 0 and width == tc)
    treg = tname if full_t else f"{tname}[{trows[0]}:{trows[1]}, {lo}:{lo + width}]"
    freg = "f" if (a, b) == (0, cols) else f"f[:, {a}:{b}]"
    lines += [f"wg.copy_async {treg} <- {freg}", "wait st", "cta_sync", f"wg.copy_async {freg} <- {treg}", "wait ld"]
    return "\n".join(lines)


def _id(*parts):
    return "-".join(str(p) for p in parts if p is not None and p != "")


# .32x32b round trips (global -> reg -> tcgen05.st -> tcgen05.ld -> reg -> global): tilemagic lowers these today
TCGEN05_32X32B = [pytest.param(roundtrip_cell("float32", w), id=_id("32x32b", "f32", f"w{w}"))
                  for w in (2, 4, 8, 16, 32, 64, 128)]
TCGEN05_32X32B += [pytest.param(frag_cell("32x32b", 128, 1), id="32x32b-frag-f32-w1")]
TCGEN05_32X32B += [pytest.param(roundtrip_cell(dt, w), id=_id("32x32b", dt, f"w{w}"))
                   for dt, w in (("float16", 2), ("float16", 8), ("float16", 64), ("bfloat16", 4), ("bfloat16", 32),
                                 ("uint8", 4), ("uint8", 16), ("int8", 8), ("int32", 8), ("int32", 32))]
TCGEN05_32X32B += [
    pytest.param(roundtrip_cell("float32", 4, lo=3, tmem_cols=32), id="32x32b-f32-w4-col3"),
    pytest.param(roundtrip_cell("float32", 8, lo=10, tmem_cols=32), id="32x32b-f32-w8-col10"),
    pytest.param(roundtrip_cell("float16", 8, lo=6, tmem_cols=32), id="32x32b-f16-w8-col3"),
    pytest.param(roundtrip_cell("uint8", 8, lo=4, tmem_cols=32), id="32x32b-u8-w8-col1"),
    pytest.param(roundtrip_cell("float32", 8, tmem_cols=32, alias=8), id="32x32b-f32-w8-alias8"),
    pytest.param(roundtrip_cell("bfloat16", 8, tmem_cols=64, alias=20), id="32x32b-bf16-w8-alias20"),
    pytest.param(frag_cell("32x32b", 128, 16), id="32x32b-frag-f32-w16"),
]

# .16x64b / .16x128b / .16x256b and data paths F, B: TVM must lower every one of them as
# :func:`expected_tcgen05` predicts, and tilemagic the same way
FRAG_SPECS = [
    # data path D, 128-row fragments: two issues (rows 0 and 16)
    dict(id="16x64b-D128-f32-x1", shape="16x64b", rows=128, cols=2),
    dict(id="16x64b-D128-f32-x4", shape="16x64b", rows=128, cols=8),
    dict(id="16x128b-D128-f32-x2", shape="16x128b", rows=128, cols=8),
    dict(id="16x256b-D128-f32-x1", shape="16x256b", rows=128, cols=8),
    dict(id="16x256b-D128-f32-x2", shape="16x256b", rows=128, cols=16),
    dict(id="16x64b-D128-f16-x2", shape="16x64b", rows=128, cols=8, dtype="float16"),
    dict(id="16x256b-D128-bf16-x1", shape="16x256b", rows=128, cols=16, dtype="bfloat16"),
    dict(id="16x128b-D128-f32-x16-col8", shape="16x128b", rows=128, cols=64, lo=8, tmem_cols=128),
    # data path D, 64-row fragments (lanes 0-15 of each warp's quadrant)
    dict(id="16x64b-D64-f32-x4", shape="16x64b", rows=64, cols=8),
    dict(id="16x256b-D64-f16-x1", shape="16x256b", rows=64, cols=16, dtype="float16"),
    # data path F, both sub-slabs
    dict(id="16x64b-F0-f32-x16", shape="16x64b", rows=64, cols=32, datapath="F", sub_slab=0),
    dict(id="16x64b-F1-f32-x16", shape="16x64b", rows=64, cols=32, datapath="F", sub_slab=1),
    dict(id="16x128b-F1-bf16-x2", shape="16x128b", rows=64, cols=16, dtype="bfloat16", datapath="F", sub_slab=1),
    dict(id="16x256b-F0-f32-x1-alias8", shape="16x256b", rows=64, cols=8, datapath="F", alias=8),
    # data path B: one .32x32b.x(N/2) over all 128 lanes
    dict(id="B-f32-N32", shape="32x32b", rows=64, cols=32, datapath="B"),
    dict(id="B-f32-N64", shape="32x32b", rows=64, cols=64, datapath="B"),
    dict(id="B-f32-N128", shape="32x32b", rows=64, cols=128, datapath="B"),
    # column slices of the fragment (smaller num, register offset)
    dict(id="16x256b-D128-slice8:16", shape="16x256b", rows=128, cols=16, frag_slice=(8, 16), lo=8, tmem_cols=16),
    dict(id="16x64b-F1-slice8:16-col24", shape="16x64b", rows=64, cols=32, datapath="F", sub_slab=1,
         frag_slice=(8, 16), lo=24, tmem_cols=32),
    dict(id="16x128b-D128-f16-slice8:16", shape="16x128b", rows=128, cols=16, dtype="float16", frag_slice=(8, 16),
         lo=8, tmem_cols=32),
]


def spec_cell(spec):
    kw = {k: v for k, v in spec.items() if k not in ("id", "shape", "rows", "cols")}
    return frag_cell(spec["shape"], spec["rows"], spec["cols"], **kw)


_COL_FACTOR = {"16x64b": 2, "16x128b": 4, "16x256b": 8}  # fp32 columns per .num (PTX ISA 9.0 Table 49)
_REGS_PER_NUM = {"16x64b": 1, "16x128b": 2, "16x256b": 4}  # 32-bit registers per thread per .num


def expected_tcgen05(spec, op):
    """The instruction lines of :func:`frag_cell`'s ``tcgen05.st`` (op="st") or ``.ld`` for ``spec``.

    Written from the PTX fragment rules and the issue-3 contract, independently of both lowerings:
    a ``.16x*b`` fragment issues once per 16-row slab (rows 0 and 16 for 128 rows; for 64 rows once,
    at row 16 on an F sub-slab-1 view), ``num`` = fp32 columns / column factor, a column slice keeps
    the register order (``regs/num`` registers per ``.num``); datapath B is one ``.32x32b.x(N/2)`` over
    all 128 lanes; the column is the window's 32-bit column inside the allocation.
    """
    dtype = spec.get("dtype", "float32")
    epc = EPC[dtype]
    a, b = spec.get("frag_slice") or (0, spec["cols"])
    col = spec.get("lo", 0) // epc + (spec.get("alias") or 0)
    chain = "tcgen05.{}.sync.aligned.{}.x{}.b32"
    if spec.get("datapath") == "B":
        n = spec["cols"] // 2
        return [f"{chain.format(op, '32x32b', n)} row=0 col={col} regs=f[0:{n}]"]
    shape, cols = spec["shape"], spec["cols"]
    num = cols // (_COL_FACTOR[shape] * epc)
    per_slab = _REGS_PER_NUM[shape] * num
    width = b - a
    num_eff, regs_eff, base = num * width // cols, per_slab * width // cols, a * per_slab // cols
    sub = spec.get("sub_slab", 0) if spec.get("datapath") == "F" else 0
    out = []
    for slab in range(spec["rows"] // 64):
        r0 = base + slab * per_slab
        out.append(f"{chain.format(op, shape, num_eff)} row={(sub + slab) * 16} col={col} regs=f[{r0}:{r0 + regs_eff}]")
    return out


TCGEN05_16XNB = [pytest.param(spec, id=spec["id"]) for spec in FRAG_SPECS]

# both TVM and tilemagic must reject these (TVM's negative tests and PTX rules)
TCGEN05_REJECT = [
    pytest.param("""
kernel k threads=128
tmem T: float32[128, 32]
tmem V: float32[64, 32] @ datapath(F, sub_slab=0) at T
local l: float32[64, 32] @ S[(64, 32) : (1@tid_in_wg, 1)]
wg.copy_async l <- V
""", "tmem<->local \\(prio=10\\): exception — AssertionError", id="F-with-32x32b"),
    pytest.param("""
kernel k threads=128
tmem acc: float32[64, 128] @ datapath(B)
local f: float32[64, 128] @ frag(16x256b)
wg.copy_async f <- acc
""", "datapath B .* requires a matching Layout B register fragment", id="B-with-16x256b-fragment"),
    pytest.param("""
kernel k threads=128
tmem acc: float32[64, 64] @ datapath(B)
local f: float32[64, 64] @ frag(32x32b)
wg.copy_async f[:, 0:32] <- acc[:, 0:32]
""", r"must cover the full \(64, N\)", id="B-partial-column-slice"),
    pytest.param("""
kernel k threads=128
tmem T: float32[128, 3]
local a: float32[128, 3] @ S[(128, 3) : (1@tid_in_wg, 1)]
wg.copy_async T <- a
""", "Width 3 is not valid for tcgen05.ld/st with shape 32x32b", id="32x32b-width3-illegal-num"),
    pytest.param("""
kernel k threads=128
tmem T: float16[128, 4]
local a: float16[128, 3] @ S[(128, 3) : (1@tid_in_wg, 1)]
wg.copy_async T[:, 0:3] <- a
""", "Width 3 is not valid for tcgen05.ld/st with shape 32x32b", id="32x32b-f16-half-cell"),
    pytest.param("""
kernel k threads=128
tmem T: float32[128, 32]
local f: float32[64, 8] @ frag(16x64b)
wg.copy_async f <- T[32:96, 0:8]
""", "TMEM window has TLane offset 32", id="D-TLane-offset-window"),
]


# ----------------------------------------------------------------------------- copy builders
def gmem_smem_cell(scope, threads, shape, dtype="float32", smem_layout=None, region=None):
    """global -> shared -> global at ``scope`` (tilemagic's gmem_smem, TVM's vec_auto), with a cta_sync."""
    dims = ", ".join(map(str, shape))
    lay = f" @ {smem_layout}" if smem_layout else ""
    reg = f"[{region}]" if region else ""
    return f"""
kernel gs threads={threads}
global A: {dtype}[{dims}]
global B: {dtype}[{dims}]
shared S: {dtype}[{dims}]{lay}
{scope}.copy S{reg} <- A{reg}
cta_sync
{scope}.copy B{reg} <- S{reg}
"""


def ldst_cell(scope, threads, num, trans, dtype="float16"):
    """global -> shared -> registers -> shared -> global with TVM's ldmatrix/stmatrix layouts
    (test_ld_stmatrix.py): an m8n8 fragment, row-major (``trans=False``) or column-major shared tile."""
    if scope == "warp":
        shape = (8, 4, num, 2)
        r_lay = f"S[(8, 4, {num}, 2) : (4@laneid, 1@laneid, 2, 1)]"
        s_lay = (f"S[(8, 4, {num}, 2) : ({num * 8}, 2, 8, 1)]" if not trans
                 else f"S[(8, 4, {num}, 2) : (1, {2 * num * 8}, 8, {num * 8})]")
    else:
        ax = "tid_in_wg" if scope == "wg" else "tx"
        shape = (4, 8, 4, num, 2)
        r_lay = f"S[(4, 8, 4, {num}, 2) : (32@{ax}, 4@{ax}, 1@{ax}, 2, 1)]"
        s_lay = (f"S[(4, 8, 4, {num}, 2) : ({64 * num}, {num * 8}, 2, 8, 1)]" if not trans
                 else f"S[(4, 8, 4, {num}, 2) : ({64 * num}, 1, {16 * num}, 8, {8 * num})]")
    dims = ", ".join(map(str, shape))
    return f"""
kernel lm threads={threads}
global A: {dtype}[{dims}]
global B: {dtype}[{dims}]
shared S: {dtype}[{dims}] @ {s_lay}
shared S2: {dtype}[{dims}] @ {s_lay}
local r: {dtype}[{dims}] @ {r_lay}
{scope}.copy S <- A
cta_sync
{scope}.copy r <- S
{scope}.copy S2 <- r
cta_sync
{scope}.copy B <- S2
"""


COPY_FALLBACK = [pytest.param(fallback_cell(*c), id=_id("fallback", *c)) for c in FALLBACK_CASES]
COPY_GMEM_SMEM = [
    pytest.param(gmem_smem_cell("wg", 128, (128, 8)), id="gs-wg-f32-128x8"),
    pytest.param(gmem_smem_cell("warp", 32, (32, 64), "float16"), id="gs-warp-f16-32x64"),
    pytest.param(gmem_smem_cell("cta", 256, (64, 64)), id="gs-cta256-f32-64x64"),
    pytest.param(gmem_smem_cell("warp", 32, (32, 32), "uint8"), id="gs-warp-u8-32x32"),
    pytest.param(gmem_smem_cell("wg", 128, (16, 64), "bfloat16"), id="gs-wg-bf16-16x64"),
    pytest.param(gmem_smem_cell("warp", 32, (4, 8)), id="gs-warp-f32-4x8-scalar"),
    pytest.param(gmem_smem_cell("wg", 128, (64, 32), "float16", "S[(64, 32) : (1, 64)]"), id="gs-wg-f16-colmajor"),
    pytest.param(gmem_smem_cell("warp", 32, (32, 32), "float32", region="0:32, 8:16"), id="gs-warp-f32-slice"),
    pytest.param(gmem_smem_cell("cta", 1024, (32, 32)), id="gs-cta1024-f32-32x32"),
    pytest.param(gmem_smem_cell("warp", 32, (8, 16), "int32"), id="gs-warp-i32-8x16"),
    pytest.param(gmem_smem_cell("wg", 128, (8, 6, 16), "float16"), id="gs-wg-f16-3d"),
]
# gapped register storage: TVM 0.27's vec_auto ignores the register stride (see
# test_known_disagreement_gapped_register_storage), so that case is compared on its own
GAPPED_REG_LAYOUT = "S[(128, 4) : (1@tid_in_wg, 2)]"
COPY_REG = [pytest.param(reg_cell(*c[:6]), id=_id("reg", c[3], c[5], c[0].replace(" ", "")))
            for c in REG_CASES if c[0] != GAPPED_REG_LAYOUT]
COPY_REG += [
    pytest.param("""
kernel rs threads=128
global A: float16[128, 16]
global B: float16[128, 16]
shared S: float16[128, 16]
local a: float16[128, 16] @ S[(128, 16) : (1@tid_in_wg, 1)]
wg.copy a <- A
wg.copy S <- a
cta_sync
wg.copy B <- S
""", id="reg-wg-f16-via-shared"),
    pytest.param("""
kernel rf threads=128
global A: float32[64, 32]
global B: float32[64, 32]
local f: float32[64, 32] @ frag(16x64b)
wg.copy f <- A
wg.copy B <- f
""", id="reg-frag16x64b-f32"),
]
COPY_LDSTMATRIX = [
    pytest.param(ldst_cell("warp", 32, 4, False), id="ldst-warp-x4"),
    pytest.param(ldst_cell("warp", 32, 2, True), id="ldst-warp-x2-trans"),
    pytest.param(ldst_cell("warp", 32, 1, False), id="ldst-warp-x1"),
    pytest.param(ldst_cell("wg", 128, 4, False), id="ldst-wg-x4"),
    pytest.param(ldst_cell("wg", 128, 2, True), id="ldst-wg-x2-trans"),
    pytest.param(ldst_cell("cta", 128, 4, False), id="ldst-cta-x4"),
    pytest.param("""
kernel lf threads=128
global A: float16[64, 32]
global B: float16[64, 32]
shared S: float16[64, 32]
local f: float16[64, 32] @ frag(16x256b)
wg.copy S <- A
cta_sync
wg.copy f <- S
wg.copy S <- f
cta_sync
wg.copy B <- S
""", id="ldst-frag16x256b-f16"),
]


# ----------------------------------------------------------------------------- the harness
def differential(source: str, cuda: bool = False):
    """tilemagic and TVM on one cell: one TVM lowering of the export with constant TMEM addresses (the form
    this wheel also compiles to CUDA, with ``cuda=True``)."""
    cmp = compare_source_with_tvm(source, cuda=cuda, tmem_base="const", explain=False)
    cmp.source = source
    return cmp


def check_agreement(cmp, *, mode: str) -> None:
    """Assert that every op agrees (a disagreement fails the test).

    ``mode="tcgen05"``: the same instruction chains, row/col immediates and register order.
    ``mode="copy"``: the same winning variant family and the same widest vector width
    (and the same scalar-store count for the fallback).
    """
    assert cmp.available, cmp.message
    failures: List[str] = []
    if cmp.tvm.error is not None and cmp.tvm.error_line is None:
        failures.append(f"TVM failed to {cmp.tvm.error_stage} the program: {cmp.tvm.error}")
    for op in cmp.ops:
        if op.tvm is None:
            failures.append(f"L{op.line} `{op.text}`: TVM did not lower it: {op.tvm_error}")
            continue
        if op.ours is None and op.ours_error is None:  # tilemagic stopped at another op
            if not any(o.ours_error for o in cmp.ops):
                failures.append(f"L{op.line} `{op.text}`: tilemagic did not lower it")
            continue
        if op.ours is None:
            failures.append(f"L{op.line} `{op.text}`: tilemagic rejects: {op.ours_error}")
            continue
        if mode == "tcgen05" or any(i.is_tcgen05 for i in op.tvm):
            ok = op.verdict == "same"
        else:
            ok = op.family_agrees and op.vector_bytes[0] == op.vector_bytes[1] and \
                _stores(op.ours) == _stores(op.tvm)
        if not ok:
            failures.append(f"L{op.line} `{op.text}`: tilemagic {op.ours_variant} {op.ours_lines} != "
                            f"TVM {op.tvm_variant} {op.tvm_lines}")
    if failures:  # lower once more, asking TVM why it did not take tilemagic's variant, for the report
        report = compare_source_with_tvm(cmp.source, cuda=False, tmem_base="const").text()
        pytest.fail("tilemagic and TVM disagree:\n" + "\n".join(failures) + "\n\n" + report, pytrace=False)


def _stores(instrs):
    return sum(1 for i in instrs if i.chain == "store")


def check_both_reject(cmp) -> None:
    """Both tools must refuse the cell (tilemagic with a located error, TVM at parse or dispatch)."""
    assert cmp.available, cmp.message
    rejected = [op for op in cmp.ops if op.ours_error]
    assert rejected, "tilemagic accepted a cell TVM's rules reject:\n" + cmp.text()
    tvm_rejects = cmp.tvm.error is not None
    assert tvm_rejects, "TVM accepted a cell tilemagic rejects:\n" + cmp.text()


__all__ = [
    "check_agreement",
    "check_both_reject",
    "differential",
    "frag_cell",
    "gmem_smem_cell",
    "ldst_cell",
    "variant_family",
]


# ----------------------------------------------------------------------------- CUDA-level register order
_TVM_CALL = re.compile(r"tvm_builtin_ptx_tcgen05_(ld|st)_(?:ld|st)_sync_aligned_(\w+?)_x(\d+)_b32(?:_\w+)?\((.*)\);")
_TVM_REG = re.compile(r"^(?:\(\(uint\*\))?\w*_ptr\)?\[(\d+)\]$")
_TVM_ADDR = re.compile(r"^(?:tvm_builtin_cuda_get_tmem_addr\(\(uint\)(\d+), (\d+), (\d+)\)|\(uint\)(\d+))$")
_OURS_ASM = re.compile(r'asm volatile\("tcgen05\.(ld|st)\.sync\.aligned\.(\w+)\.x(\d+)\.b32[^"]*"(.*)\);')
_OURS_REG = re.compile(r'"=?r"\(\(\(uint32_t\*\)\w+\)\[(\d+)\]\)')
_OURS_ADDR = re.compile(r'"r"\((?:get_tmem_addr\(tmem_addr\[0\], (\d+), (\d+)\)|tmem_addr\[0\])\)')


def _split_args(text):
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        depth += ch in "([" and 1 or (ch in ")]" and -1 or 0)
        cur += ch
    return out + ([cur.strip()] if cur.strip() else [])


def tvm_cuda_tcgen05(cuda):
    """``[(op, shape, num, row, col, (reg, ...))]`` of TVM's CUDA, or None when an operand is not a literal
    (the ``.16x*b`` path indexes registers through runtime locals)."""
    calls = []
    for line in cuda.splitlines():
        m = _TVM_CALL.search(line)
        if not m or "__device__" in line:
            continue
        op, shape, num, args = m.group(1), m.group(2), int(m.group(3)), _split_args(m.group(4))
        addr = args[-1] if op == "ld" else args[0]
        regs = args[:-1] if op == "ld" else args[1:]
        am = _TVM_ADDR.match(addr)
        rms = [_TVM_REG.match(r) for r in regs]
        if am is None or not all(rms):
            return None
        row, col = (int(am.group(2)), int(am.group(1)) + int(am.group(3))) if am.group(1) else (0, int(am.group(4)))
        calls.append((op, shape, num, row, col, tuple(int(r.group(1)) for r in rms)))
    return calls


def ours_cuda_tcgen05(cuda):
    """The same list from tilemagic's native CUDA (inline ``asm volatile("tcgen05...")``)."""
    calls = []
    for line in cuda.splitlines():
        m = _OURS_ASM.search(line)
        if not m:
            continue
        am = _OURS_ADDR.search(m.group(4))
        row, col = (int(am.group(1)), int(am.group(2))) if am.group(1) else (0, 0)
        regs = tuple(int(r) for r in _OURS_REG.findall(m.group(4)))
        calls.append((m.group(1), m.group(2), int(m.group(3)), row, col, regs))
    return calls
