"""Differential tests against TVM TIRx's ``smem->tmem`` planner (``apache-tvm 0.27.0.post1``): the same op, built
from tilemagic's buffers, planned by both tools — shape, multicast, instruction count, LBO/SBO and swizzle of the
descriptor — over the whole shape x multicast x swizzle 0-3 x 16/32-bit dtype matrix, forced and inferred, and the
declines both tools agree on."""

from __future__ import annotations

import itertools

import pytest
from helpers import (CP_MATRIX_DTYPES, copy_async_op, cp_buffers, cp_dispatch, cp_matrix_case, cp_tmem_layout,
                     region)

from tilemagic.arch import tcgen05 as tc
from tilemagic.cli import demo_source
from tilemagic.errors import DispatchError
from tilemagic.export.tvm_cp import CpFacts, compare_cp_plan, tvm_cp_plan
from tilemagic.layout import TileLayout, row_major
from tilemagic.layout.swizzle import ComposeLayout
from tilemagic.layout.tile import Iter

pytestmark = pytest.mark.tvm

MATRIX = list(itertools.product(tc.CP_SHAPES, range(4), CP_MATRIX_DTYPES))


def _forced(op, key):
    c = tc.CP_SHAPES[key]
    opts = {"shape": c.shape} | ({"multicast": c.multicast} if c.multicast else {})
    return copy_async_op(op.dst, op.src, **opts)


@pytest.mark.parametrize("forced", [True, False], ids=["forced", "inferred"])
@pytest.mark.parametrize("key,swizzle,dtype", MATRIX)
def test_matrix_agrees_with_tvm(tvm, key, swizzle, dtype, forced):
    op, S, T, (count, lbo, sbo, sw) = cp_matrix_case(key, swizzle, dtype)
    if forced:
        op = _forced(op, key)
    stmts, _ = cp_dispatch(op, S, T)
    cmp = compare_cp_plan(op, stmts, None)
    assert cmp.agrees, "\n".join(cmp.text())
    if forced:  # and both are the hand-computed plan
        assert cmp.tvm == CpFacts(key, count, lbo, sbo, sw)


def test_tvm_examples(tvm):
    S, T = cp_buffers("bfloat16", (128, 64), ComposeLayout(3, 3, 3, row_major((128, 64)), bare=True), (128, 64),
                      cp_tmem_layout("128x256b", 64))
    assert tvm_cp_plan(copy_async_op(region(T), region(S))) == CpFacts("128x256b", 4, 16, 1024, 3)
    S, T = cp_buffers("uint8", (32, 16), None, (32, 16), cp_tmem_layout("32x128b.warpx4", 16))
    assert tvm_cp_plan(copy_async_op(region(T), region(S))) == CpFacts("32x128b.warpx4", 1, 0, 128, 0)


@pytest.mark.parametrize("case", ["unknown_shape", "no_multicast", "illegal_multicast", "replica", "col_align",
                                  "lane_overflow", "sbo", "swizzle_family", "swizzle_len", "sub_tile"])
def test_both_decline(tvm, case):
    """TVM's rejection list: both tools decline (TVM with a bare ValueError, tilemagic with a why-table row)."""
    f32 = ("float32", (128, 4), None, (128, 4), cp_tmem_layout("128x128b", 4))
    if case == "unknown_shape":
        S, T = cp_buffers(*f32)
        op = copy_async_op(region(T), region(S), shape="256x128b")
    elif case == "no_multicast":
        S, T = cp_buffers("float32", (64, 4), None, (64, 4), cp_tmem_layout("64x128b.warpx2::02_13", 4))
        op = copy_async_op(region(T), region(S), shape="64x128b")
    elif case == "illegal_multicast":
        S, T = cp_buffers(*f32)
        op = copy_async_op(region(T), region(S), shape="128x128b", multicast="warpx4")
    elif case == "replica":
        S, T = cp_buffers("float32", (32, 4), None, (32, 4), TileLayout((Iter(32, 1, "TLane"), Iter(4, 1, "TCol"))))
        op = copy_async_op(region(T), region(S), shape="32x128b")
    elif case == "col_align":
        S, T = cp_buffers("float32", (128, 4), None, (128, 8), cp_tmem_layout("128x128b", 8))
        op = copy_async_op(region(T, (0, 2), (128, 4)), region(S), shape="128x128b")
    elif case == "lane_overflow":
        lay = TileLayout((Iter(64, 1, "TLane"), Iter(4, 1, "TCol")), (Iter(4, 32, "TLane"),))
        S, T = cp_buffers("float32", (32, 4), None, (64, 4), lay)
        op = copy_async_op(region(T, (32, 0), (32, 4)), region(S), shape="32x128b")
    elif case == "sbo":
        S, T = cp_buffers("float16", (128, 8), TileLayout((Iter(16, 516), Iter(8, 8), Iter(8, 1))), (128, 8),
                          cp_tmem_layout("128x128b", 8))
        op = copy_async_op(region(T), region(S), shape="128x128b")
    elif case in ("swizzle_family", "swizzle_len"):
        params = (2, 3, 3) if case == "swizzle_family" else (3, 2, 3)
        S, T = cp_buffers("bfloat16", (128, 64), ComposeLayout(*params, row_major((128, 64)), bare=True),
                          (128, 64), cp_tmem_layout("128x256b", 64))
        op = copy_async_op(region(T), region(S), shape="128x256b")
    else:
        S, T = cp_buffers("float32", (32, 8), None, (32, 4), cp_tmem_layout("32x128b.warpx4", 4))
        op = copy_async_op(region(T), region(S, (0, 0), (32, 4)), shape="32x128b")
    with pytest.raises(DispatchError):
        cp_dispatch(op, S, T)
    theirs = tvm_cp_plan(op)
    assert isinstance(theirs, str), f"TVM plans {theirs} for {case}"
    cmp = compare_cp_plan(op, [], "declined")
    assert cmp.agrees and "TVM declines" in "\n".join(cmp.text())


_SCRIPT = '''
@T.prim_func
def cp_case(A_ptr: T.handle):
    A = T.match_buffer(A_ptr, (1,), "float32")
    T.device_entry()
    T.cta_id([1])
    T.warpgroup_id([1])
    T.warp_id_in_wg([4])
    T.thread_id_in_wg([128])
    warp_id = T.warp_id([4])
    T.lane_id([32])
    tx = T.thread_id([128])
    tmem_addr = T.alloc_shared([1], "uint32")
    if warp_id == 0:
        T.ptx.tcgen05.alloc.cta_group__1.sync.aligned.shared__cta.b32(T.address_of(tmem_addr), T.uint32(512))
        T.ptx.tcgen05.relinquish_alloc_permit.cta_group__1.sync.aligned()
    T.ptx.tcgen05.fence__before_thread_sync()
    T.cuda.cta_sync()
    T.ptx.tcgen05.fence__after_thread_sync()
    S = T.alloc_shared({s_shape}, "{dtype}", layout={s_layout})
    T_ = T.decl_buffer({t_shape}, "{dtype}", scope="tmem", allocated_addr=tmem_addr[0], layout={t_layout})
    done = T.alloc_shared((1,), "uint64")
    if tx == 0:
        T.ptx.mbarrier.init.shared.b64(T.address_of(done[0]), T.uint32(1))
    T.ptx.fence.mbarrier_init.release.cluster()
    T.cuda.cta_sync()
    if tx == 0:
        Tx.copy_async(T_[{t_region}], S[{s_region}]{opts})
    if tx == 0:
        {commit}
    T.cuda.mbarrier_wait(T.address_of(done[0]), 0)
    {fence}
'''


def _script(op, S, T):
    from tilemagic.export.tvmscript import layout_text

    def reg(r):
        return ", ".join(f"{b}:{b + e}" for b, e in zip(r.begins, r.extents))

    from tilemagic.export.tvmscript import tcgen05_sync_lines
    from tilemagic.ir import nodes as ir

    opts = "".join(f', {k}="{v}"' for k, v, _ in op.options)
    done = ir.Buffer("done", "shared", "uint64", (1,), mbar_count=1)
    commit, = tcgen05_sync_lines(ir.TcgenCommit(done), {"done": "done"})
    fence, = tcgen05_sync_lines(ir.TcgenFence("after_thread_sync"), {})
    return _SCRIPT.format(commit=commit, fence=fence, s_shape=tuple(S.shape), t_shape=tuple(T.shape), dtype=S.dtype, s_layout=layout_text(
        S.layout), t_layout=layout_text(T.layout), t_region=reg(op.dst), s_region=reg(op.src), opts=opts)


@pytest.mark.parametrize("key,swizzle", list(itertools.product(tc.CP_SHAPES, range(4))))
def test_tvm_dispatched_tir_instructions(tvm, key, swizzle):
    """TVM's dispatched TIR, read by `--compare tvm`'s instruction reader: the same tcgen05.cp chains at the same
    TMEM lanes and columns, in the same order, as tilemagic's statements."""
    from tilemagic.export.instructions import Instr, tvm_instructions
    from tilemagic.export.tvm_compare import run_tvm
    from tilemagic.export.tvmscript import TvmScriptExport

    op, S, T, _ = cp_matrix_case(key, swizzle, "bfloat16")
    op = _forced(op, key)
    stmts, _ = cp_dispatch(op, S, T)
    run = run_tvm(TvmScriptExport(_script(op, S, T), "cp_case"))
    assert run.error is None, run.error
    assert [o.variant for o in run.ops] == ["smem->tmem"]
    theirs = [(i.chain, i.row, i.col) for i in tvm_instructions(run.ops[0].script, {})]
    ours = [(i.chain, i.row, i.col) for i in (Instr(s.chain, s.row, s.col) for s in stmts)]
    assert theirs == ours
    # the exported commit and fence (tcgen05_sync_lines) parse and lower in TVM as the instructions they name
    lowered = run.lowered or ""
    assert '"commit", "cta_group::1", "mbarrier::arrive::one", "shared::cluster", "b64"' in lowered
    assert lowered.count('T.ptx.tcgen05("fence::after_thread_sync", "")') == 2  # the TMEM prologue's + the user's


# ----------------------------------------------------------------------------- whole cells: --export / --compare tvm
#: docs/language.md's design cell (§"tcgen05.cp"): shared -> TMEM by tcgen05.cp, commit, fence, tcgen05.ld, check
DESIGN_CELL = demo_source("tcgen05_cp_roundtrip")  # the design cell is the demo

_COMMIT = '"commit", "cta_group::1", "mbarrier::arrive::one", "shared::cluster", "b64"'
_AFTER = 'T.ptx.tcgen05("fence::after_thread_sync", "")'


def _cp_of(cmp):
    (cp,) = [o.cp for o in cmp.ops if o.cp is not None]
    return cp


def test_export_of_commit_and_fences_lowers_in_tvm(tvm):
    """`--export tvmscript` of a cell with a tcgen05.cp, a guarded tcgen05.commit and both tcgen05 fences: the export
    writes each statement where the cell has it (the commit under its guard), TVM parses and lowers it, and the
    lowered module has the commit and one more of each fence than the kernel's own cta_syncs put there."""
    from tilemagic.export.tvm_compare import run_tvm
    from tilemagic.export.tvmscript import tvmscript_from_source

    src = DESIGN_CELL.replace("wait done phase 0\n", "wait done phase 0\ntcgen05.fence::before_thread_sync\n")
    exp = tvmscript_from_source(src)
    lines = [ln.strip() for ln in exp.text.splitlines()]
    commit = lines.index('T.ptx["tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64"]'
                         '(T.address_of(done[0]))')
    assert lines[commit - 1] == "if tx == 0:"
    wait = lines.index("T.cuda.mbarrier_wait(T.address_of(done[0]), 0)")
    assert lines[wait + 1: wait + 3] == ["T.ptx.tcgen05.fence__before_thread_sync()",
                                          "T.ptx.tcgen05.fence__after_thread_sync()"]
    run = run_tvm(exp, cuda=False)
    assert run.error is None, run.error
    low = run.lowered or ""
    assert low.count(_COMMIT) == 1
    # the TMEM prologue, the cell's cta_sync and the epilogue each bracket a barrier with the two fences
    assert low.count(_AFTER) == 3 + 1
    assert low.count('T.ptx.tcgen05("fence::before_thread_sync", "")') == 3 + 1


def test_compare_design_cell(tvm):
    """`--compare tvm` of the design cell end to end (TVM's CUDA included): every op the same, the tcgen05.cp plan
    TVM's (128x256b, 4 instructions, LBO 16 B, SBO 1024 B, 128-byte swizzle), the commit in TVM's lowering."""
    from tilemagic.pipeline import compare_source_with_tvm

    cmp = compare_source_with_tvm(DESIGN_CELL)
    assert cmp.agrees, cmp.text()
    assert [o.verdict for o in cmp.ops] == ["same"] * 4
    cp = _cp_of(cmp)
    assert cp.agrees and cp.ours == cp.tvm == CpFacts("128x256b", 4, 16, 1024, 3)
    assert _COMMIT in (cmp.tvm.lowered or "")


def _compare_cells(cases, force):
    from cells import cp_case_cell

    from tilemagic.pipeline import compare_source_with_tvm

    out = []
    for case in cases:
        cmp = compare_source_with_tvm("%%tilecopy\n" + cp_case_cell(case, force=force), cuda=False, explain=False)
        out.append((case, cmp))
    return out


def test_compare_cp_cells_forced(tvm):
    """Every CP_CELLS case (shape= / multicast= written) through `--compare tvm`: TVM lowers the whole cell, every
    op agrees, and both planners give the case's own shape with the same count, LBO, SBO and swizzle."""
    from cells import CP_CELLS

    for case, cmp in _compare_cells(CP_CELLS, True):
        assert cmp.agrees and cmp.tvm.error is None, (case, cmp.text())
        cp = _cp_of(cmp)
        assert cp.agrees, (case, cp.text())
        assert cp.ours.key == case.key and cp.ours.swizzle == case.swizzle, (case, cp.text())
        assert _COMMIT in (cmp.tvm.lowered or ""), case


def test_compare_cp_cells_inferred(tvm):
    """Without shape=: one case per key and swizzle (both dtypes alternate) — TVM's try order and tilemagic's
    pick the same plan (a 128-row 128-bit layout is taken as 128x256b when it fits, by both)."""
    from cells import CP_CELLS

    cases = [c for i, c in enumerate(CP_CELLS) if not c.offsets and i % 2 == c.swizzle % 2]
    assert {c.key for c in cases} == set(tc.CP_SHAPES)
    for case, cmp in _compare_cells(cases, False):
        assert cmp.agrees and cmp.tvm.error is None, (case, cmp.text())
        assert _cp_of(cmp).agrees, (case, _cp_of(cmp).text())
