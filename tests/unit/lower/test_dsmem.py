"""copy_async -> dsmem: TVM 0.27's predicates, config reads and chunk planning, and tilemagic's cluster rules.

The ops are built as the checker builds them (``helpers.copy_async_op``) and dispatched through the real registry
with a cluster in the context (``dispatch``), so every reason below is the why-table's.  TVM's three planner
examples (``tests/python/tirx/.../copy_async/test_dsmem.py`` of ``apache-tvm 0.27.0.post1``) are rebuilt here:
a contiguous 128×64 float16 tile is one 16384-B copy, (8, 128) rows at stride 256 are 8 copies of 256 B, and a
row-major source into a column-major destination is declined.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import copy_async_op, region, tma_buffers
from helpers import dispatch_op as dispatch

from tilemagic.errors import DispatchError
from tilemagic.ir import nodes as ir
from tilemagic.layout import TileLayout
from tilemagic.layout.swizzle import ComposeLayout

gbuf, sbuf, mbar = tma_buffers()
RANK = ir.ThreadVar("cta_rank")
PEER = ir.Bin("^", RANK, ir.Const(1))


def declined(op, *bufs, **kw) -> str:
    with pytest.raises(DispatchError) as e:
        dispatch(op, *bufs, **kw)
    return e.value.details


def dsmem_row(details: str) -> str:
    """The ``dsmem`` row of a why-table (its first line and the indented lines under it)."""
    lines = details.splitlines()
    i = next(k for k, ln in enumerate(lines) if ln.strip().startswith("dsmem "))
    out = [lines[i]]
    for ln in lines[i + 1:]:
        if ln.startswith(" " * 10):  # a reason line under the row (a new row starts at column 2)
            out.append(ln)
        else:
            break
    return "\n".join(out)


def chunks(stmts):
    return [(s.src_offset, s.dst_offset, s.nbytes) for s in stmts]


# ----------------------------------------------------------------------------- TVM's planner examples
def test_contiguous_128x64_float16_is_one_16384_byte_copy():
    S, R, got = sbuf("S", "float16", (128, 64)), sbuf("R", "float16", (128, 64)), mbar("got")
    stmts, rec = dispatch(copy_async_op(region(R), region(S), remote_cta_id=PEER, mbar=got), S, R, got)
    assert rec.chosen == "dsmem" and chunks(stmts) == [(0, 0, 16384)]
    (s,) = stmts
    assert isinstance(s, ir.BulkCopy) and s.src is S and s.dst is R and s.mbar is got and s.remote is PEER
    assert rec.emitted is not None and rec.emitted.count == 1 and rec.emitted.moves == "16384 B"
    assert "into the CTA of rank cta_rank ^ 1 (rank 0 -> 1, 1 -> 0)" in rec.summary
    assert "complete_tx on got of that CTA" in rec.summary


def test_contiguous_1d_is_one_copy():
    S, R, got = sbuf("S", "float16", (256,)), sbuf("R", "float16", (256,)), mbar("got")
    stmts, _ = dispatch(copy_async_op(region(R), region(S), remote_cta_id=PEER, mbar=got), S, R, got)
    assert chunks(stmts) == [(0, 0, 512)]


def test_rows_at_stride_256_are_8_copies_of_256_bytes():
    lay = TileLayout.from_spec((8, 128), (256, 1))
    S, R, got = sbuf("S", "float16", (8, 128), lay), sbuf("R", "float16", (8, 128), lay), mbar("got")
    stmts, rec = dispatch(copy_async_op(region(R), region(S), remote_cta_id=PEER, mbar=got), S, R, got)
    assert chunks(stmts) == [(512 * i, 512 * i, 256) for i in range(8)]
    assert rec.emitted is not None and rec.emitted.how == "unrolled" and rec.emitted.count == 8


def test_different_outer_strides_are_8_copies():
    S = sbuf("S", "float16", (8, 128), TileLayout.from_spec((8, 128), (256, 1)))
    R = sbuf("R", "float16", (8, 128), TileLayout.from_spec((8, 128), (512, 1)))
    got = mbar("got")
    stmts, _ = dispatch(copy_async_op(region(R), region(S), remote_cta_id=PEER, mbar=got), S, R, got)
    assert chunks(stmts) == [(512 * i, 1024 * i, 256) for i in range(8)]


def test_row_major_into_column_major_is_declined_with_tvms_reason():
    S = sbuf("S", "float16", (4, 64))
    R = sbuf("R", "float16", (4, 64), TileLayout.from_spec((4, 64), (1, 4)))
    got = mbar("got")
    why = declined(copy_async_op(region(R), region(S), remote_cta_id=PEER, mbar=got), S, R, got)
    assert ("emitter declined: Layouts not compatible for bulk DSMEM copy: chunk_bytes=2 (need >= 16 and multiple "
            "of 16)") in dsmem_row(why)


# ----------------------------------------------------------------------------- more planner rules
def test_a_sub_region_is_one_copy_per_row_at_its_offsets():
    """Rows 2..5, columns 16..47 of a float32[8, 64] into a float32[4, 32]: 4 chunks of 128 B."""
    S, R, got = sbuf("S", "float32", (8, 64)), sbuf("R", "float32", (4, 32)), mbar("got")
    stmts, _ = dispatch(copy_async_op(region(R), region(S, (2, 16), (4, 32)), remote_cta_id=PEER, mbar=got),
                        S, R, got)
    assert chunks(stmts) == [((2 + i) * 256 + 64, i * 128, 128) for i in range(4)]


def test_a_chunk_below_16_bytes_is_declined():
    S, R, got = sbuf("S", "float16", (8, 64)), sbuf("R", "float16", (8, 4)), mbar("got")
    why = declined(copy_async_op(region(R), region(S, (0, 0), (8, 4)), remote_cta_id=PEER, mbar=got), S, R, got)
    assert "chunk_bytes=8 (need >= 16 and multiple of 16)" in dsmem_row(why)


def test_a_chunk_not_16_byte_aligned_is_declined():
    """Columns 4..11 of float16 rows: 16-byte chunks at byte 8 of each row (TVM 0.27 emits them; they fault)."""
    S, R, got = sbuf("S", "float16", (4, 64)), sbuf("R", "float16", (4, 8)), mbar("got")
    why = declined(copy_async_op(region(R), region(S, (0, 4), (4, 8)), remote_cta_id=PEER, mbar=got), S, R, got)
    assert "cp.async.bulk needs 16-byte aligned shared addresses: a chunk of S starts at byte 8" in dsmem_row(why)


def test_same_swizzle_on_both_sides_moves_the_physical_bytes():
    sw = ComposeLayout(3, 3, 3, TileLayout.from_spec((64, 64), (64, 1)), bare=True)
    S, R, got = sbuf("S", "float16", (64, 64), sw), sbuf("R", "float16", (64, 64), sw), mbar("got")
    stmts, _ = dispatch(copy_async_op(region(R), region(S), remote_cta_id=PEER, mbar=got), S, R, got)
    assert chunks(stmts) == [(0, 0, 8192)]
    # one swizzle row (64 elements) at the same position in the period: one physical run on both sides
    stmts, _ = dispatch(copy_async_op(region(R, (9, 0), (1, 64)), region(S, (1, 0), (1, 64)), remote_cta_id=PEER,
                                      mbar=got), S, R, got)
    assert chunks(stmts) == [(128, 9 * 128, 128)]


def test_a_swizzle_row_moved_to_another_position_of_the_period_is_declined():
    sw = ComposeLayout(3, 3, 3, TileLayout.from_spec((64, 64), (64, 1)), bare=True)
    S, R, got = sbuf("S", "float16", (64, 64), sw), sbuf("R", "float16", (64, 64), sw), mbar("got")
    why = declined(copy_async_op(region(R, (2, 0), (1, 64)), region(S, (1, 0), (1, 64)), remote_cta_id=PEER,
                                 mbar=got), S, R, got)
    assert "swizzle(3, 3, 3): the 64-element chunks are not whole swizzle rows (64 elements) at matching" in why


def test_one_side_swizzled_is_declined():
    sw = ComposeLayout(3, 3, 3, TileLayout.from_spec((64, 64), (64, 1)), bare=True)
    S, R, got = sbuf("S", "float16", (64, 64), sw), sbuf("R", "float16", (64, 64)), mbar("got")
    why = declined(copy_async_op(region(R), region(S), remote_cta_id=PEER, mbar=got), S, R, got)
    assert "S has swizzle(3, 3, 3) and R no swizzle: dsmem copies bytes unchanged" in dsmem_row(why)


# ----------------------------------------------------------------------------- predicates (TVM's reasons)
def test_validate_copy_op_declines_a_dtype_mismatch():
    S, R, got = sbuf("S", "float16", (64,)), sbuf("R", "float32", (64,)), mbar("got")
    row = dsmem_row(declined(copy_async_op(region(R), region(S), remote_cta_id=PEER, mbar=got), S, R, got))
    assert "validate_copy_op: not a valid copy op: dtype mismatch" in row
    assert "ok: single_thread, is_shared_to_shared" in row


def test_single_thread_declines_a_warpgroup_op():
    S, R, got = sbuf("S", "float16", (64,)), sbuf("R", "float16", (64,)), mbar("got")
    row = dsmem_row(declined(copy_async_op(region(R), region(S), scope="wg", remote_cta_id=PEER, mbar=got),
                             S, R, got))
    assert "single_thread: unsupported exec_scope warpgroup, expected single thread" in row


def test_is_shared_to_shared_declines_global_to_shared():
    A, S, got = gbuf("A", "float16", (64,)), sbuf("S", "float16", (64,)), mbar("got")
    row = dsmem_row(declined(copy_async_op(region(S), region(A), dispatch="dsmem", remote_cta_id=PEER, mbar=got),
                             A, S, got))
    assert "is_shared_to_shared: not a shared-to-shared copy" in row


# ----------------------------------------------------------------------------- config and cluster rules
def _pair():
    return sbuf("S", "float16", (64,)), sbuf("R", "float16", (64,)), mbar("got")


@pytest.mark.parametrize("options, reason", [
    ({"mbar": None}, "remote_cta_id not set in config"),
    ({"remote_cta_id": PEER}, "mbar not set in config"),
    ({"remote_cta_id": PEER, "mbar": "S", "x": 0}, "dispatch=dsmem does not support config key(s) ['x']"),
    ({"remote_cta_id": PEER, "mbar": "S"}, "mbar=S is not an mbarrier"),
    ({"remote_cta_id": ir.Const(2), "mbar": "got"}, "remote_cta_id=2 is 2 in the CTA of rank 0: the cluster has "
                                                    "ranks 0..1"),
    ({"remote_cta_id": ir.ThreadVar("tx"), "mbar": "got"}, "remote_cta_id=tx differs between the threads of a CTA"),
], ids=["no-remote", "no-mbar", "unknown-key", "mbar-not-a-barrier", "outside-the-cluster", "thread-dependent"])
def test_config_rules(options, reason):
    S, R, got = _pair()
    named = {"S": S, "got": got}
    opts = {k: named.get(v, v) if isinstance(v, str) else v for k, v in options.items() if v is not None}
    row = dsmem_row(declined(copy_async_op(region(R), region(S), **opts), S, R, got))
    assert f"emitter declined: {reason}" in row


def test_a_kernel_without_a_cluster_is_declined():
    S, R, got = _pair()
    row = dsmem_row(declined(copy_async_op(region(R), region(S), remote_cta_id=ir.Const(1), mbar=got), S, R, got,
                             cluster=1))
    assert "remote_cta_id=1: the kernel has no cluster (write cluster=C on the kernel line" in row


def test_a_copy_into_the_issuing_cta_is_declined_for_that_rank():
    """``remote_cta_id=1`` run by every CTA: rank 1 would copy into itself."""
    S, R, got = _pair()
    row = dsmem_row(declined(copy_async_op(region(R), region(S), remote_cta_id=ir.Const(1), mbar=got), S, R, got))
    assert "remote_cta_id=1 is 1 in the CTA of rank 1, its own rank" in row


def test_the_ops_rank_from_the_per_rank_lowering_is_the_one_checked():
    from dataclasses import replace

    S, R, got = _pair()
    op = copy_async_op(region(R), region(S), remote_cta_id=ir.Const(1), mbar=got)
    stmts, rec = dispatch(replace(op, rank=0), S, R, got)
    assert rec.chosen == "dsmem" and "(rank 0 -> 1)" in rec.summary
    row = dsmem_row(declined(replace(op, rank=1), S, R, got))
    assert "is 1 in the CTA of rank 1, its own rank" in row


def test_a_rank_guard_leaves_out_the_ranks_that_do_not_execute_the_op():
    S, R, got = _pair()
    guard = ir.Bin("and", ir.Bin("==", ir.ThreadVar("tx"), ir.Const(0)), ir.Bin("==", RANK, ir.Const(0)))
    stmts, rec = dispatch(copy_async_op(region(R), region(S), remote_cta_id=ir.Const(1), mbar=got), S, R, got,
                          guard=guard)
    assert rec.chosen == "dsmem" and "(rank 0 -> 1)" in rec.summary


def test_four_ctas_in_a_ring():
    S, R, got = _pair()
    ring = ir.Bin("%", ir.Bin("+", RANK, ir.Const(1)), ir.Const(4))
    _, rec = dispatch(copy_async_op(region(R), region(S), remote_cta_id=ring, mbar=got), S, R, got, cluster=4)
    assert "(rank 0 -> 1, 1 -> 2, 2 -> 3, 3 -> 0)" in rec.summary


def test_the_plan_moves_every_element_once():
    """An independent model: the chunks, applied byte by byte, put every source element at its place."""
    S = sbuf("S", "float32", (8, 32), TileLayout.from_spec((8, 32), (48, 1)))
    R = sbuf("R", "float32", (8, 32), TileLayout.from_spec((8, 32), (32, 1)))
    got = mbar("got")
    stmts, _ = dispatch(copy_async_op(region(R, (0, 8), (8, 16)), region(S, (0, 16), (8, 16)), remote_cta_id=PEER,
                                      mbar=got), S, R, got)
    src = np.arange(8 * 48 * 4, dtype=np.uint8)
    dst = np.zeros(8 * 32 * 4, dtype=np.uint8)
    for s in stmts:
        dst[s.dst_offset: s.dst_offset + s.nbytes] = src[s.src_offset: s.src_offset + s.nbytes]
    src_el, dst_el = src.view(np.float32).reshape(8, 48)[:, :32], dst.view(np.float32).reshape(8, 32)
    np.testing.assert_array_equal(dst_el[:, 8:24], src_el[:, 16:32])
    assert not dst_el[:, :8].any() and not dst_el[:, 24:].any()


def test_the_lowering_passes_the_kernels_cluster_to_the_variant():
    """Through ``lower()``: the typed program's cluster size reaches the variant (``DispatchContext.cluster``)."""
    from tilemagic.lower.dispatch import TargetSpec
    from tilemagic.lower.program import CopyItem, TypedProgram, lower

    S, R, got = _pair()
    op = copy_async_op(region(R), region(S), remote_cta_id=PEER, mbar=got)
    for cluster, chosen in ((2, "dsmem"), (1, None)):
        tp = TypedProgram("k", 128, {b.name: b for b in (S, R, got)}, 0, [CopyItem(op)], cluster=cluster)
        if chosen:
            _, records, _ = lower(tp, TargetSpec("cuda", "sm_90a"))
            assert records[0].chosen == chosen
        else:
            with pytest.raises(DispatchError, match="the kernel has no cluster"):
                lower(tp, TargetSpec("cuda", "sm_90a"))
