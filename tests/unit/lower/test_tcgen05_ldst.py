"""copy_async -> tcgen05_ldst (issue 3): every shape, num, dtype, data path, direction and column offset.

The matrix (``cells.tcgen05_matrix``) runs each case through the whole pipeline and checks

* the emitted instruction chain(s) of the shape under test, their PTX row/col immediates, register
  ranges and register order (ld: destination registers first; st: the address first), in the IR
  and in the native CUDA;
* a simulator round trip (``check B == A`` / ``check D == C``) under ``--strict``, with no hazard warning;
* cross-shape against an independent decoder: the ``st`` direction writes the tile with the shape under
  test and dumps TMEM with ``.32x32b``; the ``ld`` direction fills TMEM with ``.32x32b`` and reads the tile
  with the shape under test.  The decoder below is written from the PTX ISA (§9.7.16.2.3 per-thread
  formulas, §9.7.16.10.5 data paths) and does not use ``tilemagic.layout``.  It checks
  both the logical tile (data-path formula: element (r, c) sits at TMEM lane/column ...) and the register
  file of the simulator (thread t of warp w, register r <-> TMEM cell).

The native CUDA of the matrix assembles with ptxas for ``sm_100a`` (batched, many kernels per nvcc call);
a sample of the emulated sources assembles for ``sm_90``.  Then: column slices, ``at X + COLS`` aliases,
the docs/language.md seed examples, and one test per rejection rule (message, fix, why-table, op line).
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from cells import (
    F_HALVES_CELL,
    SEED_B_READBACK,
    SEED_F_HALVES,
    TCGEN05_COL_FACTOR,
    TCGEN05_REGS_PER_NUM,
    TCGEN05_SLICE_CASES,
    ptx_row_col,
    tcgen05_matrix,
    tcgen05_slices_cell,
)
from helpers import run

from tilemagic.codegen.cuda import translation_unit
from tilemagic.errors import DispatchError, LoweringError, TileTypeError
from tilemagic.ir import nodes as ir
from tilemagic.sim import Simulator

MATRIX = tcgen05_matrix()


# ----------------------------------------------------------------------------- independent decoder (cells.ptx_row_col)
def expected_instrs(case):
    """[(shape, num, row immediate, col immediate, first register, registers)] of the shape under test."""
    if case.datapath == "B":
        return [("32x32b", case.num, 0, case.col, 0, case.num)]
    regs = TCGEN05_REGS_PER_NUM[case.shape] * case.num
    slabs = 2 if (case.datapath == "D128" and case.shape != "32x32b") else 1
    return [(case.shape, case.num, 16 * (case.sub_slab + s), case.col, s * regs, regs) for s in range(slabs)]


def words(a):
    """A global buffer as 32-bit TMEM words per row (two 16-bit / four 8-bit elements per word)."""
    a = np.ascontiguousarray(a)
    return a.view(np.uint32).reshape(a.shape[0], -1)


def bits(a):
    return np.ascontiguousarray(a).view({1: np.uint8, 2: np.uint16, 4: np.uint32}[a.dtype.itemsize])


def tcgen_nodes(res, line=None):
    return [s for s in ir.walk(res.kernel.body) if isinstance(s, ir.TcgenLdSt)
            and (line is None or s.span.line == line)]


def ir_call(op, shape, num, row, col, first, regs, local="a"):
    chain = f"tcgen05.{op}.sync.aligned.{shape}.x{num}.b32"
    addr = "T.uint32(tmem_addr[0])" if (row, col) == (0, 0) else f"T.cuda.get_tmem_addr(tmem_addr[0], {row}, {col})"
    rl = [f"{local}_32b[{first + i}]" for i in range(regs)]
    return f'T.ptx["{chain}"]({", ".join(rl + [addr] if op == "ld" else [addr] + rl)})'


def cuda_call(op, shape, num, row, col, first, regs, local="a"):
    chain = f"tcgen05.{op}.sync.aligned.{shape}.x{num}.b32"
    addr = "tmem_addr[0]" if (row, col) == (0, 0) else f"get_tmem_addr(tmem_addr[0], {row}, {col})"
    rl = [f'(((uint32_t*){local})[{first + i}])' for i in range(regs)]
    if op == "ld":
        ops = ", ".join(f"%{i}" for i in range(regs))
        return (f'asm volatile("{chain} {{{ops}}}, [%{regs}];" : {", ".join(f"{chr(34)}=r{chr(34)}{r}" for r in rl)}'
                f' : "r"({addr}) : "memory");')
    ops = ", ".join(f"%{i + 1}" for i in range(regs))
    return (f'asm volatile("{chain} [%0], {{{ops}}};" :  : "r"({addr}), '
            f'{", ".join(f"{chr(34)}r{chr(34)}{r}" for r in rl)} : "memory");')


def decode_tile(case, tmem_words_):
    """The logical tile read out of TMEM words with the data-path formulas (case.lane_col)."""
    r, c = np.meshgrid(np.arange(case.rows), np.arange(case.cols), indexing="ij")
    lane, col, k = case.lane_col(r, c)
    nb = 32 // case.epc
    return (tmem_words_[lane, col].astype(np.uint64) >> np.asarray(nb * k, np.uint64)) & np.uint64((1 << nb) - 1)


def check_registers(case, regfile, tmem_w):
    """Thread 32w+t, register (first + r) <-> TMEM word (32w + row_imm + row(t, r), col_imm + col(t, r))."""
    w = np.arange(4)[:, None, None]
    t = np.arange(32)[None, :, None]
    for shape, _num, row_imm, col_imm, first, regs in expected_instrs(case):
        r = np.arange(regs)[None, None, :]
        row, col = ptx_row_col(shape, t, r)
        lane = 32 * w + row_imm + row + 0 * r
        cc = col_imm + col + 0 * w
        got = regfile[(32 * w + t + 0 * r), first + r + 0 * w]
        np.testing.assert_array_equal(got, tmem_w[lane, cc], err_msg=f"{case.id}: registers vs TMEM")


@pytest.mark.parametrize("case", MATRIX, ids=[c.id for c in MATRIX])
def test_matrix(case):
    res = run(case.source, strict=True)
    assert res.launch.passed, res.launch.checks
    assert res.warnings == []
    # the chains, immediates, registers and operand order of the shape under test, in IR and CUDA
    for op in ("st", "ld"):
        nodes = tcgen_nodes(res, case.line[op])
        want = expected_instrs(case)
        assert [(n.op, n.shape, n.num, n.row, n.col, n.reg_base, n.regs) for n in nodes] == [
            (op, *w) for w in want]
        assert all(n.tmem.name == ("V" if case.datapath in ("B", "F0", "F1") else "T") for n in nodes)
        for w in want:
            assert ir_call(op, *w) in res.ir
            assert cuda_call(op, *w) in res.cuda
        rec = next(d for d in res.dispatch if d.line == case.line[op])
        assert rec.chosen == "tmem<->local"
    # cross-shape against the decoder
    out, inp = res.launch.outputs, res.launch.inputs
    sim = Simulator(res.kernel, inp, strict=True)
    sim.run()
    regfile = sim.local["a"].view(np.uint32)
    if case.direction == "st":
        tw = words(out["D"])
        np.testing.assert_array_equal(decode_tile(case, tw), bits(inp["A"]).astype(np.uint64))
        touched = np.zeros_like(tw, bool)
        touched[case.lane_col(*np.indices((case.rows, case.cols)))[:2]] = True
        assert not tw[~touched].any(), "the st touched TMEM cells outside the tile"
    else:
        tw = words(inp["C"])
        np.testing.assert_array_equal(bits(out["B"]).astype(np.uint64), decode_tile(case, tw))
    check_registers(case, regfile, tw)


def test_matrix_size():
    """The matrix covers every shape, its min and max num, every data path and dtype it takes."""
    assert len(MATRIX) == 660
    for shape, mx in (("32x32b", 128), ("16x64b", 128), ("16x128b", 64), ("16x256b", 32)):
        nums = {c.num for c in MATRIX if c.shape == shape}
        assert {1, mx} <= nums
    assert {c.datapath for c in MATRIX} == {"D128", "D64", "F0", "F1", "B"}
    assert {c.dtype for c in MATRIX} == {"float32", "float16", "bfloat16", "int32", "uint8", "int8"}


# ----------------------------------------------------------------------------- ptxas
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
_CHUNKS = 6


@pytest.fixture(scope="module")
def native_sources():
    # each st-direction kernel carries both the ld and the st of its case; the ld-direction kernel
    # emits the same two instructions with the same immediates, so one of the two is assembled
    return [run(c.source, launch="off").cuda for c in MATRIX if c.direction == "st"]


@needs_nvcc
@pytest.mark.nvcc
@pytest.mark.parametrize("chunk", range(_CHUNKS))
def test_matrix_native_cuda_assembles_for_sm_100a(native_sources, chunk):
    from tilemagic.runtime.nvcc import nvcc_compile

    part = native_sources[chunk::_CHUNKS]
    r = nvcc_compile(translation_unit(part), "sm_100a", timeout=600)
    assert r.ok, r.log[-3000:]


@needs_nvcc
@pytest.mark.nvcc
def test_emulated_cuda_assembles_for_sm_90():
    """The emulated source of the largest case of every shape and data path builds for the H200."""
    from tilemagic.runtime.nvcc import nvcc_compile

    seen, srcs = set(), []
    for c in reversed(MATRIX):
        key = (c.shape, c.datapath)
        if key not in seen and c.direction == "ld":
            seen.add(key)
            srcs.append(run(c.source, launch="off").cuda_emulated)
    r = nvcc_compile(translation_unit(srcs), "sm_90", timeout=600)
    assert r.ok, r.log[-3000:]


def test_translation_unit_rules():
    a = run(MATRIX[0].source, launch="off")
    b = run(MATRIX[1].source, launch="off")
    unit = translation_unit([a.cuda, b.cuda])
    assert unit.count("#include <cuda_fp16.h>") == 1 and unit.count('extern "C"') == 2
    with pytest.raises(ValueError, match="appears twice"):
        translation_unit([a.cuda, a.cuda])
    with pytest.raises(ValueError, match="native and emulated"):
        translation_unit([a.cuda, b.cuda_emulated])


# ----------------------------------------------------------------------------- slices and aliases
@pytest.mark.parametrize("shape,dtype,rows,cols,step", TCGEN05_SLICE_CASES)
def test_fragment_column_slices_issue_smaller_num(shape, dtype, rows, cols, step):
    res = run(tcgen05_slices_cell(shape, dtype, rows, cols, step))
    assert res.launch.passed
    epc = 2 if dtype in ("float16", "bfloat16") else 1
    unit = TCGEN05_COL_FACTOR[shape] * epc
    rpn = TCGEN05_REGS_PER_NUM[shape]
    rps = rpn * cols // unit  # registers per slab of the whole fragment
    lds = [n for n in tcgen_nodes(res) if n.op == "ld"]
    assert len(lds) == 2 * cols // step
    for i, n in enumerate(lds):
        k, slab = (i // 2) * step, i % 2
        assert (n.shape, n.num, n.row, n.col) == (shape, step // unit, 16 * slab, k // epc)
        assert (n.reg_base, n.regs) == (k // unit * rpn + slab * rps, rpn * step // unit)


def test_f_fragment_slices_and_alias_offsets():
    """Column chunks of a sub-slab-1 F buffer placed `at T + 16`: row immediate 16, column 16 + chunk."""
    src = """
kernel f threads=128
global A: float32[64, 32]
global B: float32[64, 32]
tmem T: float32[128, 64]
tmem U: float32[64, 32] @ datapath(F, sub_slab=1) at T + 16
local a: float32[64, 32] @ frag(16x128b)
wg.copy a <- A
wg.copy_async U <- a
wait st
cta_sync
wg.copy_async a[:, 0:16] <- U[:, 0:16]
wg.copy_async a[:, 16:32] <- U[:, 16:32]
wait ld
wg.copy B <- a
check B == A
"""
    res = run(src)
    assert res.launch.passed
    st, ld0, ld1 = tcgen_nodes(res)
    assert (st.shape, st.num, st.row, st.col, st.regs) == ("16x128b", 8, 16, 16, 16)
    assert (ld0.num, ld0.row, ld0.col, ld0.reg_base, ld0.regs) == (4, 16, 16, 0, 8)
    assert (ld1.num, ld1.row, ld1.col, ld1.reg_base, ld1.regs) == (4, 16, 32, 8, 8)


def test_f_buffer_written_as_s_layout_is_classified_with_its_sub_slab():
    """TVM _classify_tmem_datapath: an S[...] layout equal to datapath(F, sub_slab=1) is F, sub-slab 1 (row 16)."""
    src = """
kernel s threads=128
tmem T: float32[128, 32]
tmem U: float32[64, 32] @ S[(4, 16, 32) : (32@TLane, 1@TLane, 1@TCol)] + 16@TLane at T
local f: float32[64, 32] @ frag(16x64b)
wg.copy_async f <- U
wait ld
"""
    res = run(src)
    u = next(b for b in res.kernel.tmem if b.name == "U")
    assert (u.datapath, u.sub_slab) == ("F", 1)
    (ld,) = tcgen_nodes(res)
    assert (ld.row, ld.col) == (16, 0)


def test_64_row_fragment_on_datapath_d_reads_lanes_0_to_15_of_each_warp():
    """TVM's D x .16x*b (64 rows): rows 16w+i of the fragment sit at lanes 32w+i (as TVM lowers it, apache-tvm 0.27.0.post1)."""
    src = """
kernel d64 threads=128
global C: float32[128, 8]
global B: float32[64, 8]
tmem T: float32[128, 8]
local c: float32[128, 8] @ frag(32x32b)
local a: float32[64, 8] @ frag(16x256b)
wg.copy c <- C
wg.copy_async T <- c
wait st
cta_sync
wg.copy_async a <- T[0:64, :]
wait ld
wg.copy B <- a
"""
    res = run(src)
    c, b = res.launch.inputs["C"], res.launch.outputs["B"]
    lanes = [32 * (r // 16) + r % 16 for r in range(64)]
    np.testing.assert_array_equal(b, c[lanes])
    assert "fragment rows 16w+i at TMEM lanes 32w+i" in res.dispatch[2].summary


# ----------------------------------------------------------------------------- the docs/language.md seed examples
SEED_F, SEED_B = SEED_F_HALVES, SEED_B_READBACK


def test_seed_layout_f_halves_of_one_allocation():
    res = run(SEED_F)
    (ld,) = tcgen_nodes(res)
    assert (ld.op, ld.shape, ld.num, ld.row, ld.col, ld.regs) == ("ld", "16x64b", 16, 0, 0, 16)
    assert res.kernel.tmem_cols == 32
    assert ir_call("ld", "16x64b", 16, 0, 0, 0, 16, local="lo") in res.ir
    # the upper half of the same allocation: one issue at row immediate 16
    res = run(SEED_F.replace("lo <- lower", "lo <- upper"))
    (ld,) = tcgen_nodes(res)
    assert (ld.row, ld.col) == (16, 0)
    assert "get_tmem_addr(tmem_addr[0], 16, 0)" in res.cuda


def test_seed_layout_f_halves_round_trip():
    """Both F halves written and read back: together they fill all 128 lanes of the allocation."""
    src = F_HALVES_CELL
    res = run(src)
    assert res.launch.passed
    a, z, d = res.launch.inputs["A"], res.launch.inputs["Z"], res.launch.outputs["D"]
    for r in range(64):
        lane = 32 * (r // 16) + r % 16
        np.testing.assert_array_equal(d[lane], a[r])
        np.testing.assert_array_equal(d[lane + 16], z[r])


def test_seed_layout_b_readback():
    res = run(SEED_B)
    ld, st = tcgen_nodes(res)
    assert (ld.op, ld.shape, ld.num, ld.row, ld.col, ld.regs) == ("ld", "32x32b", 32, 0, 0, 32)
    assert (st.op, st.shape, st.num) == ("st", "32x32b", 32)
    assert res.cuda.count("tcgen05.ld.sync.aligned.32x32b.x32.b32") == 1
    assert res.cuda.count("tcgen05.st.sync.aligned.32x32b.x32.b32") == 1
    assert "datapath B (64, 64) as one (128, 32) .32x32b image" in res.dispatch[0].summary


# ----------------------------------------------------------------------------- rejections (item 7)
def _decline(src):
    with pytest.raises(DispatchError) as e:
        run(src)
    err = e.value
    assert "tmem<->local" in err.details
    assert "Traceback" not in err.render()
    return err


def _op_line(src, text):
    return next(i for i, line in enumerate(src.splitlines(), 1) if text in line)


REJECTIONS = {
    "16xnb-fragment-vs-B": ("""
tmem  acc: float32[64, 64] @ datapath(B)
local f:   float32[64, 64] @ frag(16x256b)
wg.copy_async f <- acc
""", ["uses datapath B", "frag(16x256b) fragment, which reads the wrong physical lanes and columns",
      "Allocate the fragment with frag(32x32b) as float32[64, N]"]),
    "partial-column-slice-of-B": ("""
tmem  acc: float32[64, 64] @ datapath(B)
local f:   float32[64, 64] @ frag(32x32b)
wg.copy_async f[:, 0:32] <- acc[:, 0:32]
""", ["datapath B copy must cover the full (64, N) TMEM buffer acc", "not contiguous after the lane split",
      "alias a narrower datapath(B) buffer"]),
    "partial-fragment-of-B": ("""
tmem  acc: float32[64, 64] @ datapath(B)
tmem  big: float32[64, 128] @ datapath(B)
local f:   float32[64, 64] @ frag(32x32b)
wg.copy_async f <- acc
wg.copy_async big[:, 0:64] <- f
""", ["datapath B copy must cover the full (64, N) TMEM buffer big"]),
    "non-fp32-B": ("""
tmem  acc: float16[64, 64] @ datapath(B)
local f:   float16[64, 64] @ S[(64, 64) : (1@tid_in_wg, 1)]
wg.copy_async f <- acc
""", ["datapath B readback expects an fp32 fragment (32-bit cells), got dtype=float16", "declare acc and f float32"]),
    "B-with-128-row-fragment": ("""
tmem  acc: float32[64, 64] @ datapath(B)
local f:   float32[128, 64] @ frag(32x32b)
wg.copy_async f[0:64, :] <- acc
""", ["fragment must be (64, N)", "Allocate the fragment with frag(32x32b) as float32[64, N]"]),
    "B-N/2-illegal-num": ("""
tmem  acc: float32[64, 6] @ datapath(B)
local f:   float32[64, 6] @ S[(64, 2, 3) : (1@tid_in_wg, 64@tid_in_wg, 1)]
wg.copy_async f <- acc
""", ["datapath B:", "rep=3", "not a legal .num", "PTX ISA 9.0 Table 49"]),
    "F-with-128-row-atom": ("""
tmem T: float32[128, 64]
tmem F: float32[64, 64] @ datapath(F) at T
local f: float32[128, 64] @ frag(16x256b)
wg.copy_async f[0:64, :] <- F
""", ["datapath F", "128-row 16x*b fragment", "_TMEM_ATOM_COMPAT", "Use a 64-row fragment"]),
    "F-with-32x32b": ("""
tmem T: float32[128, 32]
tmem F: float32[64, 32] @ datapath(F, sub_slab=1) at T
local f: float32[128, 32] @ frag(32x32b)
wg.copy_async f[0:64, :] <- F
""", ["datapath F uses 16 of each warp's 32 lanes and .32x32b moves all 32",
      "Allocate the fragment with frag(16x64b), frag(16x128b) or frag(16x256b)"]),
    "F-with-plain-64-row-layout": ("""
tmem T: float32[128, 32]
tmem F: float32[64, 32] @ datapath(F) at T
local f: float32[64, 32] @ S[(64, 32) : (1@tid_in_wg, 1)]
wg.copy_async F <- f
""", ["datapath F uses 16 of each warp's 32 lanes"]),
    "F-with-128-row-region": ("""
tmem T: float32[128, 32]
tmem F: float32[64, 32] @ datapath(F) at T
local f: float32[128, 32] @ frag(16x64b)
wg.copy_async F <- f
""", ["region shapes differ", "datapath F holds 64 rows and takes only a 64-row .16x*b fragment"]),
    "illegal-num-32x32b": ("""
tmem T: float32[128, 32]
local f: float32[128, 3] @ S[(128, 3) : (1@tid_in_wg, 1)]
wg.copy_async T[:, 0:3] <- f
""", ["Width 3 is not valid for tcgen05.ld/st with shape 32x32b", "num must be one of 1, 2, 4"]),
    "illegal-num-16xnb-slice": ("""
tmem T: float32[128, 64]
local f: float32[128, 64] @ frag(16x256b)
wg.copy_async f[:, 0:24] <- T[:, 0:24]
""", ["gives .16x256b.x3, not a legal num", "slice a power-of-two number of atoms"]),
    "slice-not-whole-atoms": ("""
tmem T: float32[128, 64]
local f: float32[128, 64] @ frag(16x256b)
wg.copy_async f[:, 0:4] <- T[:, 0:4]
""", ["does not cover whole .16x256b atoms of 8 float32", "its num would be 0.5",
      "Slice at multiples of 8 columns"]),
    "width-not-whole-32-bit-cells": ("""
tmem T: float16[128, 64]
local f: float16[128, 3] @ S[(128, 3) : (1@tid_in_wg, 1)]
wg.copy_async T[:, 0:3] <- f
""", ["width 3 float16 is not a whole number of 32-bit columns (2 per column)"]),
    "16xnb-slice-inside-a-32-bit-cell": ("""
tmem T: float16[128, 64]
local f: float16[128, 64] @ frag(16x64b)
wg.copy_async f[:, 1:5] <- T[:, 2:6]
""", ["the column slice 1:5 of f is not a whole number of 32-bit columns (2 float16 per column)"]),
    "tmem-column-inside-a-32-bit-cell": ("""
tmem T: float16[128, 64]
local f: float16[128, 8] @ frag(16x64b)
wg.copy_async f <- T[:, 1:9]
""", ["TMEM column offset 1 float16 falls inside a 32-bit column"]),
    "D-with-TLane-offset": ("""
tmem T: float32[128, 32]
local f: float32[64, 32] @ frag(16x64b)
wg.copy_async f <- T[16:80, :]
""", ["has TLane offset 16, but datapath D spans both sub-slabs", "datapath(F, sub_slab=1)"]),
    "TLane-offset-not-0-or-16": ("""
tmem T: float32[128, 32]
local f: float32[64, 32] @ frag(16x64b)
wg.copy_async f <- T[64:128, :]
""", ["TLane offset 64; only 0 or 16"]),
    "fragment-row-slice": ("""
tmem T: float32[128, 32]
local f: float32[128, 32] @ frag(16x64b)
wg.copy_async f[0:64, :] <- T[0:64, :]
""", ["the 16x*b fragment f has 128 rows but the TMEM region T[0:64, 0:32] has 64",
      "the copy moves whole fragments, slice columns only"]),
    "64-row-32x32b-frag-on-D": ("""
tmem T: float32[128, 64]
local f: float32[64, 64] @ frag(32x32b)
wg.copy_async f <- T[0:64, :]
""", ["64-row frag(32x32b), the register image of a datapath B tile", "@ datapath(B)"]),
}


@pytest.mark.parametrize("name", list(REJECTIONS))
def test_rejection_is_named_located_and_in_the_why_table(name):
    src, needles = REJECTIONS[name]
    err = _decline(src)
    for n in needles:
        assert n in err.details, (n, err.details)
    assert err.line == _op_line(src, ".copy_async") + (src.count(".copy_async") - 1 if name == "partial-fragment-of-B" else 0)


def test_rejection_shows_in_the_why_table_when_another_op_succeeds():
    """A decline is recorded per op: the same rule text appears in the op's why-table (DispatchRecord.table())."""
    src = """
tmem  acc: float32[64, 64] @ datapath(B)
local f:   float32[64, 64] @ frag(32x32b)
local g:   float32[64, 64] @ frag(16x64b)
wg.copy_async f <- acc
wg.copy_async g <- acc
"""
    err = _decline(src)
    assert err.line == 6 and "frag(16x64b) fragment" in err.details


@pytest.mark.parametrize("decl,needle", [
    ("local f: float32[64, 63] @ frag(32x32b)", "expects even N"),
    ("tmem acc: float32[64, 63] @ datapath(B)", "expects even cols"),
    ("local f: float32[64, 512] @ frag(16x256b)", "rep=64 (from cols=512) is not a legal .num; PTX ISA 9.0 Table 49"),
    ("local f: float32[64, 6] @ frag(32x32b)", "rep=3 (from N/2=3) is not a legal .num"),
    ("local f: float16[64, 64] @ frag(32x32b)", "fp32-only"),
    ("local f: uint8[64, 64] @ frag(16x64b)", "supports 32/16-bit dtypes"),
])
def test_fragment_and_datapath_rules_are_located_at_the_declaration(decl, needle):
    """Odd N and illegal nums are caught where the layout is declared, before dispatch."""
    with pytest.raises(TileTypeError) as e:
        run(f"kernel k threads=128\n{decl}\n")
    assert e.value.line == 2 and needle in e.value.message


def test_a_fragment_over_255_registers_is_a_located_warning():
    """A 128-row .16x*b fragment holds two slabs: at the shape's max num it needs 256 registers per thread; that
    is accepted (issue 16) with a warning at the declaration (its ptxas cost: tests/unit/runtime/test_costs.py)."""
    r = run("kernel k threads=128\nlocal f: float32[128, 256] @ frag(16x64b)\n", emit_warnings=False)
    assert any(w.startswith("register tile 'f' needs 256 32-bit registers per thread, more than a thread's 255")
               for w in r.warnings)


def test_tmem_over_512_columns_is_a_located_lowering_error():
    src = """
kernel k threads=128
tmem T: float32[128, 256]
tmem F: float32[64, 512] @ datapath(F, sub_slab=1)
"""
    with pytest.raises(LoweringError) as e:
        run(src)
    assert e.value.line == 4
    assert "TMEM allocation of 768 32-bit columns exceeds the 512 columns" in e.value.message
    assert "alias them with `at OTHER + COLS`" in e.value.hint
