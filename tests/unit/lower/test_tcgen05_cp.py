"""copy_async variant ``smem->tmem`` (tcgen05.cp): TVM 0.27's planner rules, every shape x multicast x swizzle x
dtype, shape inference, and each decline with its rule, its fix and the place it broke (DeclineDetail)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from helpers import (CP_MATRIX_DTYPES, copy_async_op, cp_buffers, cp_dispatch, cp_matrix_case, cp_tmem_layout,
                     region)

from tilemagic.arch import smem_desc
from tilemagic.arch import tcgen05 as tc
from tilemagic.errors import DispatchError, InternalError
from tilemagic.ir import nodes as ir
from tilemagic.ir.printer import cp_descriptor_text
from tilemagic.layout import TileLayout, row_major
from tilemagic.layout.swizzle import ComposeLayout
from tilemagic.layout.tile import Iter
from tilemagic.lower.copy_async import tcgen05_cp

MODE = {smem_desc.LAYOUT_TYPES[n]: m for m, n in enumerate(("none", "32B", "64B", "128B"))}


def _row(rec, variant="smem->tmem"):
    return next(c for c in rec.candidates if c.variant == variant)


def _declined(op, *bufs, threads: int = 128) -> tuple[str, object]:
    """The smem->tmem emitter's decline of ``op`` (its text and DeclineDetail); the full dispatch must fail with
    the same text in its why-table."""
    from tilemagic.lower.dispatch import DispatchContext, DispatchFail, TargetSpec
    from tilemagic.lower.program import KernelBuilder, TypedProgram

    with pytest.raises(DispatchError) as ei:
        cp_dispatch(op, *bufs, threads=threads)
    tp = TypedProgram("k", threads, {b.name: b for b in bufs}, 512, [])
    ctx = DispatchContext(TargetSpec("cuda", "sm_100a"), threads, op.exec_scope, KernelBuilder(tp),
                          guard=ir.Bin("==", ir.ThreadVar("tx"), ir.Const(0)))  # (`if tx == 0:`, as cp_dispatch)
    with pytest.raises(DispatchFail) as fi:
        tcgen05_cp.copy_async_schedule_smem_tmem(op, ctx)
    why = str(fi.value)
    assert why.splitlines()[0] in str(ei.value.details), ei.value.details
    return why, fi.value.detail


def _facts(stmts):
    return [(s.key, s.smem_offset, s.lbo, s.sbo, s.layout, s.row, s.col) for s in stmts]


def _bf16_sw128(cols=64):
    S, T = cp_buffers("bfloat16", (128, cols), ComposeLayout(3, 3, 3, row_major((128, cols)), bare=True),
                      (128, cols), cp_tmem_layout("128x256b", cols))
    return S, T


# ----------------------------------------------------------------------------- TVM's three examples
def test_bf16_128x64_sw128_is_four_128x256b():
    S, T = _bf16_sw128()
    stmts, rec = cp_dispatch(copy_async_op(region(T), region(S)), S, T)
    assert rec.chosen == "smem->tmem"
    assert _facts(stmts) == [("128x256b", 32 * i, 16, 1024, smem_desc.LAYOUT_TYPES["128B"], 0, 8 * i)
                             for i in range(4)]
    assert all(isinstance(s, ir.TcgenCp) and s.tmem is T and s.smem is S for s in stmts)
    text = rec.emitted.text()
    assert "4 × tcgen05.cp.cta_group::1.128x256b" in text and "LBO 16 B, SBO 1024 B, 128B swizzle" in text
    assert "stepping 32 B in shared memory, 8 columns" in text
    assert cp_descriptor_text(stmts[1]) == "desc(S + 32 B; LBO 16 B, SBO 1024 B, 128B)"


def test_uint8_32x16_row_major_is_one_warpx4():
    S, T = cp_buffers("uint8", (32, 16), None, (32, 16), cp_tmem_layout("32x128b.warpx4", 16))
    stmts, rec = cp_dispatch(copy_async_op(region(T), region(S)), S, T)
    assert _facts(stmts) == [("32x128b.warpx4", 0, 0, 128, 0, 0, 0)]


def test_fp32_128x4_forced_128x128b():
    S, T = cp_buffers("float32", (128, 4), None, (128, 4), cp_tmem_layout("128x128b", 4))
    stmts, _ = cp_dispatch(copy_async_op(region(T), region(S), shape="128x128b"), S, T)
    assert _facts(stmts) == [("128x128b", 0, 0, 128, 0, 0, 0)]


# ----------------------------------------------------------------------------- the matrix
MATRIX = list(itertools.product(tc.CP_SHAPES, range(4), CP_MATRIX_DTYPES))


@pytest.mark.parametrize("key,swizzle,dtype", MATRIX)
def test_matrix_forced(key, swizzle, dtype):
    """Every shape x multicast x swizzle 0-3 x 16/32-bit dtype plans as hand-computed (and the planner's own
    byte-by-byte check of the descriptor walk against the layouts holds, or it raises InternalError)."""
    op, S, T, (count, lbo, sbo, sw) = cp_matrix_case(key, swizzle, dtype)
    c = tc.CP_SHAPES[key]
    opts = {"shape": c.shape} | ({"multicast": c.multicast} if c.multicast else {})
    stmts, rec = cp_dispatch(copy_async_op(region(T), region(S), **opts), S, T)
    assert rec.chosen == "smem->tmem"
    assert {s.key for s in stmts} == {key} and len(stmts) == count
    assert {(s.lbo, s.sbo, MODE[s.layout]) for s in stmts} == {(lbo, sbo, sw)}
    # the instructions step through the shared tile and TMEM without overlap
    assert len({(s.smem_offset, s.row, s.col) for s in stmts}) == count


@pytest.mark.parametrize("key,swizzle,dtype", [m for m in MATRIX if m[0] != "128x128b"])
def test_inference_equals_forced(key, swizzle, dtype):
    """No shape= gives the same instructions as the forced shape (TVM's order; 128x128b excepted: below)."""
    op, S, T, _ = cp_matrix_case(key, swizzle, dtype)
    c = tc.CP_SHAPES[key]
    opts = {"shape": c.shape} | ({"multicast": c.multicast} if c.multicast else {})
    forced, _ = cp_dispatch(copy_async_op(region(T), region(S), **opts), S, T)
    inferred, _ = cp_dispatch(op, S, T)
    assert _facts(inferred) == _facts(forced)


@pytest.mark.parametrize("swizzle", range(4))
def test_128x128b_layout_is_taken_as_128x256b(swizzle):
    """A layout that fits 128x128b and 128x256b is planned as 128x256b: half the instructions."""
    op, S, T, (count, *_) = cp_matrix_case("128x128b", swizzle, "bfloat16")
    stmts, _ = cp_dispatch(op, S, T)
    assert {s.key for s in stmts} == {"128x256b"} and len(stmts) * 2 == count


def test_multicast_filters_inference():
    op, S, T, _ = cp_matrix_case("64x128b.warpx2::01_23", 3, "bfloat16")
    stmts, _ = cp_dispatch(copy_async_op(region(T), region(S), multicast="warpx2::01_23"), S, T)
    assert {s.key for s in stmts} == {"64x128b.warpx2::01_23"}


def test_region_offsets_fold_into_address_and_column():
    """A column window of TMEM and the matching sub-tile of S: the descriptor's start and the TMEM column move."""
    S, T = cp_buffers("float32", (128, 8), None, (128, 16), cp_tmem_layout("128x128b", 16), tmem_col=32)
    S = ir.Buffer("S", "shared", "float32", (128, 8),
                  TileLayout((Iter(16, 64), Iter(8, 4), Iter(2, 32), Iter(4, 1))), span=S.span)
    op = copy_async_op(region(T, (0, 8), (128, 4)), region(S, (0, 4), (128, 4)))
    stmts, _ = cp_dispatch(op, S, T)
    assert _facts(stmts) == [("128x128b", 128, 0, 256, 0, 0, 32 + 8)]


# ----------------------------------------------------------------------------- predicates
def test_exec_scope_must_be_thread():
    S, T = _bf16_sw128()
    with pytest.raises(DispatchError) as ei:
        cp_dispatch(copy_async_op(region(T), region(S), scope="wg"), S, T)
    assert "exec_scope: expected thread exec_scope, got warpgroup" in str(ei.value)


def test_element_widths_must_agree_and_tmem_allocated():
    S, _ = _bf16_sw128()
    _, T = cp_buffers("float32", (128, 32), None, (128, 32), cp_tmem_layout("128x256b", 32))
    ok, why = tcgen05_cp.validate_smem_tmem_copy(copy_async_op(region(T), region(S)), None)
    assert not ok and "element widths differ" in why
    S2, T2 = _bf16_sw128()
    op = copy_async_op(region(T2), region(S2))
    with pytest.raises(DispatchError) as ei:  # a kernel without a TMEM allocation
        from tilemagic.lower.dispatch import DispatchContext, TargetSpec, run_dispatch
        from tilemagic.lower.program import KernelBuilder, TypedProgram
        tp = TypedProgram("k", 128, {"S": S2, "T": T2}, 0, [])
        run_dispatch(op, DispatchContext(TargetSpec("cuda", "sm_100a"), 128, "thread", KernelBuilder(tp)))
    assert "not allocated in TMEM" in str(ei.value)


# ----------------------------------------------------------------------------- declines (TVM's rejection list)
def test_unknown_shape():
    S, T = _bf16_sw128()
    why, _ = _declined(copy_async_op(region(T), region(S), shape="256x128b"), S, T)
    assert "unknown tcgen05.cp shape '256x128b'" in why and "128x256b" in why


def test_64x128b_needs_multicast():
    op, S, T, _ = cp_matrix_case("64x128b.warpx2::02_13", 0, "float32")
    why, _ = _declined(copy_async_op(region(T), region(S), shape="64x128b"), S, T)
    assert "needs multicast= one of warpx2::02_13, warpx2::01_23" in why


def test_illegal_multicast_for_shape():
    S, T = _bf16_sw128()
    why, _ = _declined(copy_async_op(region(T), region(S), shape="128x256b", multicast="warpx4"), S, T)
    assert "illegal multicast warpx4 for tcgen05.cp shape 128x256b" in why


def test_wrong_replica_for_the_multicast():
    """A warpx4 copy into a TMEM buffer declared without R[4 : 32@TLane] (and 02_13's replica for 01_23)."""
    S, T = cp_buffers("float32", (32, 4), None, (32, 4), TileLayout((Iter(32, 1, "TLane"), Iter(4, 1, "TCol"))))
    why, det = _declined(copy_async_op(region(T), region(S), shape="32x128b"), S, T)
    assert "must carry R[4 : 32@TLane]" in why and "declare T with + R[4 : 32@TLane]" in why
    assert det.rule == "replica" and det.buffer == "T" and det.shape == "32x128b.warpx4"
    op, S, T, _ = cp_matrix_case("64x128b.warpx2::01_23", 0, "float32")
    why, _ = _declined(copy_async_op(region(T), region(S), shape="64x128b", multicast="warpx2::02_13"), S, T)
    assert "R[2 : 64@TLane]" in why


def test_tmem_column_not_128_bit_aligned():
    S, T = cp_buffers("float32", (128, 4), None, (128, 8), cp_tmem_layout("128x128b", 8))
    why, det = _declined(copy_async_op(region(T, (0, 2), (128, 4)), region(S), shape="128x128b"), S, T)
    assert "TMEM column offset 2 float32" in why and "not 128-bit aligned" in why
    assert det.rule == "tmem_col_align"


def test_lane_offset_overflows_128_lanes():
    lay = TileLayout((Iter(64, 1, "TLane"), Iter(4, 1, "TCol")), (Iter(4, 32, "TLane"),))
    S, T = cp_buffers("float32", (32, 4), None, (64, 4), lay)
    why, det = _declined(copy_async_op(region(T, (32, 0), (32, 4)), region(S), shape="32x128b"), S, T)
    assert "TMEM lane offset 32 plus the copy's footprint of 128 lanes overflows the 128 lanes" in why
    assert det.rule == "lanes"


def test_decompress_declined():
    S, T = _bf16_sw128()
    why, _ = _declined(copy_async_op(region(T), region(S), decompress="b8x16.b6x16_p32"), S, T)
    assert why == tcgen05_cp.DECOMPRESS_REASON and "does not support decompress" in why


def test_cta_group_2_declined():
    S, T = _bf16_sw128()
    why, _ = _declined(copy_async_op(region(T), region(S), cta_group=2), S, T)
    assert "cta_group::2 needs TMEM in a cluster of CTA pairs" in why


def test_sbo_not_16_byte_multiple_names_the_chunk():
    """8-row core matrices 1032 B apart: the rule, the fix, and row 8 chunk 0 at byte 1032 (expected 1040)."""
    S, T = cp_buffers("float16", (128, 8), TileLayout((Iter(16, 516), Iter(8, 8), Iter(8, 1))), (128, 8),
                      cp_tmem_layout("128x128b", 8))
    why, det = _declined(copy_async_op(region(T), region(S), shape="128x128b"), S, T)
    assert ("SBO 1032 B is not a multiple of 16 B: rows 8..15 of S start 1032 B after rows 0..7; pad each 8-row "
            "group to a multiple of 16 B (1040 B)") in why
    assert (det.rule, det.buffer, det.byte, det.row, det.chunk, det.expected, det.shape) == \
        ("sbo", "S", 1032, 8, 0, 1040, "128x128b")


@pytest.mark.parametrize("params,needle", [
    ((3, 2, 3), "128B swizzle needs swizzle(3, 3, 3) over rows of 128 B of 16-bit elements, S is swizzle(3, 2, 3)"),
    ((2, 3, 3), "128B swizzle needs swizzle(3, 3, 3) over rows of 128 B of 16-bit elements, S is swizzle(2, 3, 3)"),
    ((3, 3, 4), "128B swizzle needs swizzle(3, 3, 3) over rows of 128 B of 16-bit elements, S is swizzle(3, 3, 4)"),
])
def test_non_canonical_swizzle_family(params, needle):
    S, T = cp_buffers("bfloat16", (128, 64), ComposeLayout(*params, row_major((128, 64)), bare=True), (128, 64),
                      cp_tmem_layout("128x256b", 64))
    why, det = _declined(copy_async_op(region(T), region(S), shape="128x256b"), S, T)
    assert needle in why and "declare S @ swizzle(3, 3, 3)" in why
    assert det.rule == "swizzle"


def test_sub_tile_a_32x128b_cp_cannot_read():
    """Half the columns of a row-major float32[32, 8]: rows 32 B apart, which is the 32B swizzle's pitch, but S is
    not swizzled."""
    S, T = cp_buffers("float32", (32, 8), None, (32, 4), cp_tmem_layout("32x128b.warpx4", 4))
    why, det = _declined(copy_async_op(region(T), region(S, (0, 0), (32, 4)), shape="32x128b"), S, T)
    assert "32B swizzle needs swizzle(2, 1, 3) over rows of 32 B of 32-bit elements, S is not swizzled" in why
    assert det.rule == "swizzle"


def test_unaligned_shared_start():
    """A sub-tile starting 4 rows (512 B) into a 128B-swizzled S: the matrix must start on the 1024-byte swizzle
    atom (8 rows in, it may)."""
    _, T = _bf16_sw128(64)
    S = ir.Buffer("S", "shared", "bfloat16", (136, 64), ComposeLayout(3, 3, 3, row_major((136, 64)), bare=True))
    why, det = _declined(copy_async_op(region(T), region(S, (4, 0), (128, 64)), shape="128x256b"), S, T)
    assert "the copy's matrix starts 512 B into S, not a multiple of the 1024-byte swizzle atom" in why
    assert (det.rule, det.byte, det.expected) == ("alignment", 512, 0)
    stmts, _ = cp_dispatch(copy_async_op(region(T), region(S, (8, 0), (128, 64))), S, T)
    assert [s.smem_offset for s in stmts] == [1024, 1056, 1088, 1120]
    S2 = ir.Buffer("S", "shared", "float32", (129, 4), row_major((129, 4)))
    _, T2 = cp_buffers("float32", (128, 4), None, (128, 4), cp_tmem_layout("128x128b", 4))
    stmts, _ = cp_dispatch(copy_async_op(region(T2), region(S2, (1, 0), (128, 4))), S2, T2)
    assert stmts[0].smem_offset == 16  # 16-byte aligned is enough unswizzled


def test_no_shape_lists_every_candidate():
    S, T = cp_buffers("float32", (128, 3), None, (128, 3), TileLayout((Iter(128, 1, "TLane"), Iter(3, 1, "TCol"))))
    why, det = _declined(copy_async_op(region(T), region(S)), S, T)
    lines = why.splitlines()
    assert lines[0].startswith("no tcgen05.cp shape fits the layouts")
    assert [ln.strip().split(": ")[0] for ln in lines[1:]] == list(tc.CP_SHAPES)
    assert det is not None and det.shape == "128x256b"


# ----------------------------------------------------------------------------- the plan check
def test_verify_plan_catches_a_wrong_plan():
    """A plan whose second cp reads the wrong 16-byte column of S is an InternalError, not a silent wrong copy."""
    S, T = _bf16_sw128()
    op = copy_async_op(region(T), region(S))
    good = tcgen05_cp.plan_for_shape(op, None, "128x256b")
    tcgen05_cp.verify_plan(op, good)
    bad = tcgen05_cp.CpPlan(good.key, good.swizzle, good.layout, good.lbo, good.sbo,
                            (good.cps[0], (good.cps[1][0] + 16, *good.cps[1][1:]), *good.cps[2:]))
    with pytest.raises(InternalError, match="planner bug"):
        tcgen05_cp.verify_plan(op, bad)
    wrong_lane = tcgen05_cp.CpPlan(good.key, good.swizzle, good.layout, good.lbo, good.sbo,
                                   tuple((o, 1, c) for o, _, c in good.cps))
    with pytest.raises(InternalError):
        tcgen05_cp.verify_plan(op, wrong_lane)


def test_descriptor_of_emitted_cp_decodes_to_the_plan():
    S, T = _bf16_sw128()
    stmts, _ = cp_dispatch(copy_async_op(region(T), region(S)), S, T)
    d = smem_desc.decode(stmts[2].descriptor(2048))
    assert (d.start, d.lbo, d.sbo, d.layout_name, d.version, d.base_offset) == (2048 + 64, 16, 1024, "128B", 1, 0)
    assert np.array_equal(smem_desc.decode(stmts[0].descriptor(0)).start, 0)


# ----------------------------------------------------------------------------- printing and the TVMScript spelling
def test_printer_spells_cp_and_commit():
    from tilemagic.ir.printer import print_ir

    S, T = _bf16_sw128()
    stmts, _ = cp_dispatch(copy_async_op(region(T), region(S)), S, T)
    done = ir.Buffer("done", "shared", "uint64", (1,), mbar_count=1)
    addr = stmts[0].addr
    k = ir.Kernel("k", 128, (), (S, done), (), (T,), 32, addr,
                  ir.Seq((*stmts, ir.TcgenCommit(done), ir.TcgenCommit(done, cta_mask=0b11))))
    out = print_ir(k)
    text = out if isinstance(out, str) else out[0]
    assert ('T.ptx["tcgen05.cp.cta_group::1.128x256b"](T.cuda.get_tmem_addr(tmem_addr[0], 0, 24), '
            'desc(S + 96 B; LBO 16 B, SBO 1024 B, 128B))') in text
    assert 'T.ptx["tcgen05.cp.cta_group::1.128x256b"](T.uint32(tmem_addr[0]), desc(S; LBO 16 B' in text
    assert ('T.ptx["tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64"]'
            '(T.address_of(done[0]))') in text
    assert ('T.ptx["tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64"]'
            '(T.address_of(done[0]), T.uint16(0b11))') in text


def test_tvmscript_commit_and_fence_lines():
    from tilemagic.export.tvmscript import tcgen05_sync_lines

    done = ir.Buffer("done", "shared", "uint64", (1,), mbar_count=1)
    assert tcgen05_sync_lines(ir.TcgenCommit(done, cta_mask=5), {"done": "d"}) == [
        'T.ptx["tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64"]'
        '(T.address_of(d[0]), T.Cast("uint16", 5))']
    assert tcgen05_sync_lines(ir.TcgenFence("before_thread_sync"), {}) == ["T.ptx.tcgen05.fence__before_thread_sync()"]
