"""copy_async -> tma_auto / tma_explicit: predicates, config rules, plans against hand-computed descriptors.

The ops are built directly (``helpers.copy_async_op``) as the checker builds them, and dispatched through the
real registry (``helpers.lower_ops``: ``lower()`` of a typed program), so every reason below is the why-table's.
Descriptors are hand-computed in CUDA order (dimension 0 innermost): ``dims`` in elements, ``strides`` in bytes
of dimensions 1.., ``box``, first-issue coordinates.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import copy_async_op, lower_ops, region, tma_buffers

from tilemagic.arch import tma as hw
from tilemagic.codegen.cuda import generate, shared_alignment
from tilemagic.errors import DispatchError
from tilemagic.ir import nodes as ir
from tilemagic.ir.printer import print_ir
from tilemagic.layout import TileLayout, row_major
from tilemagic.layout.swizzle import ComposeLayout, xor_swizzle

gbuf, sbuf, mbar = tma_buffers()


def sw(pe, sl, al, shape, tile=None):
    return ComposeLayout(pe, sl, al, tile or row_major(shape), bare=tile is None)


def lower1(op, *bufs, arch="sm_90a"):
    kernel, records = lower_ops([op], *bufs, arch=arch)
    return kernel, records[0], [s for s in ir.walk(kernel.body) if isinstance(s, ir.TmaCopy)]


def rejected(op, *bufs, arch="sm_90a") -> str:
    with pytest.raises(DispatchError) as e:
        lower_ops([op], *bufs, arch=arch)
    return e.value.details


def plan_of(copies):
    m = copies[0].tmap
    return m.dtype, m.dims, m.strides, m.box, tuple(c.value for c in copies[0].coords)


# ----------------------------------------------------------------------------- TVM's two examples
def test_tvm_example_sw128_tile_of_a_256x256_tensor():
    """64×64 fp16 SW128 tile at (64, 128) of 256×256: rank 2, dims (256, 256), stride 512 B, box (64, 64),
    coordinates (128, 64), one instruction."""
    A = gbuf("A", "float16", (256, 256))
    S = sbuf("S", "float16", (64, 64), sw(3, 3, 3, (64, 64)))
    k, rec, copies = lower1(copy_async_op(region(S), region(A, (64, 128), (64, 64)), mbar=mbar()), A, S)
    assert rec.chosen == "tma_auto"
    assert plan_of(copies) == ("FLOAT16", (256, 256), (512,), (64, 64), (128, 64))
    assert len(copies) == 1 and copies[0].tmap.swizzle == 3 and copies[0].smem_offset == 0
    assert k.tensormaps == (copies[0].tmap,)


def test_tvm_example_two_sw128_atoms_become_rank_3():
    """64×128 fp16 SW128 tile stored as two 64×64 atoms: rank 3, dims (64, 256, 4), strides (512, 128) B,
    box (64, 64, 2), one instruction; the column block's coordinate is 128 / 64."""
    A = gbuf("A", "float16", (256, 256))
    S = sbuf("S", "float16", (64, 128), ComposeLayout(3, 3, 3, TileLayout.from_spec((64, 2, 64), (64, 4096, 1))))
    _, rec, copies = lower1(copy_async_op(region(S), region(A, (64, 128), (64, 128)), mbar=mbar()), A, S)
    assert plan_of(copies) == ("FLOAT16", (64, 256, 4), (512, 128), (64, 64, 2), (0, 64, 2))
    assert len(copies) == 1


# ----------------------------------------------------------------------------- planner rules
def test_promotion_doubles_the_unit_when_the_box_is_too_wide():
    """uint8 rows of 512: box 512 > 256 is repairable, so the unit becomes UINT16 (dims, box, coordinate halved)."""
    A = gbuf("A", "uint8", (16, 512))
    S = sbuf("S", "uint8", (4, 512))
    _, rec, copies = lower1(copy_async_op(region(S), region(A, (4, 0), (4, 512)), mbar=mbar()), A, S)
    assert plan_of(copies) == ("UINT16", (256, 16), (512,), (256, 4), (0, 4))
    assert copies[0].tmap.elem_bytes == 2 and copies[0].tmap.box_bytes == 4 * 512
    assert "descriptor unit promoted to UINT16" in rec.summary


def test_promotion_twice_and_merge_of_a_fully_boxed_inner_dimension():
    """A whole float16[8, 1024] tensor: box (1024, 8) -> promoted to UINT32 then UINT64 (256 per row)."""
    A = gbuf("A", "float16", (8, 1024))
    S = sbuf("S", "float16", (8, 1024))
    _, _, copies = lower1(copy_async_op(region(S), region(A), mbar=mbar()), A, S)
    assert plan_of(copies) == ("UINT64", (256, 8), (2048,), (256, 8), (0, 0))


def test_issue_axis_when_no_box_holds_the_rows():
    """264 rows of 128 B: box (64, 264) breaks box_dim, so the largest legal prefix is one row per issue, 264
    issues, the row coordinate advancing by one and the shared pointer by 128 B."""
    A = gbuf("A", "float16", (512, 64))
    S = sbuf("S", "float16", (264, 64))
    _, rec, copies = lower1(copy_async_op(region(S), region(A, (8, 0), (264, 64)), mbar=mbar()), A, S)
    assert len(copies) == 264 and len({c.tmap for c in copies}) == 1
    assert plan_of(copies) == ("FLOAT16", (64, 512), (128,), (64, 1), (0, 8))
    assert [c.value for c in copies[5].coords] == [0, 13] and copies[5].smem_offset == 5 * 128
    assert rec.emitted is not None and rec.emitted.count == 264


def test_issues_at_16_byte_steps_are_declined():
    """264 rows of 16 B would be 264 boxes at 16-byte steps of the shared address: PTX asks 16 B, but the hardware
    needs 128 B (the H200 faults: misaligned address), and TVM 0.27's planner accepts the plan.  tilemagic
    declines it; no larger box is legal (box (8, 264) breaks box_dim even after promotion)."""
    A = gbuf("A", "float16", (512, 8))
    S = sbuf("S", "float16", (264, 8))
    why = rejected(copy_async_op(region(S), region(A, (8, 0), (264, 8)), mbar=mbar(), dispatch="tma_auto"), A, S)
    assert "advances the shared address by 16B: each TMA box's shared address must be 128B aligned" in why


def test_plane_of_a_3d_tensor_merges_into_the_row_dimension():
    """One plane of float32[4, 32, 32]: the rows are boxed in full from 0 and the plane stride continues them,
    so the two merge (TVM's canonicalisation): rank 2, 128 rows of which box rows 64..95."""
    A = gbuf("A", "float32", (4, 32, 32))
    S = sbuf("S", "float32", (32, 32))
    _, _, copies = lower1(copy_async_op(region(S), region(A, (2, 0, 0), (1, 32, 32)), mbar=mbar()), A, S)
    assert plan_of(copies) == ("FLOAT32", (32, 128), (128,), (32, 32), (0, 64))


def test_coordinate_only_dimension_stays():
    """A unit middle dimension whose stride does not continue its neighbours stays a descriptor dimension
    (box 1 at coordinate 1), after the shared iterators in CUDA order."""
    A = gbuf("A", "float32", (32, 4, 32))
    S = sbuf("S", "float32", (32, 32))
    _, _, copies = lower1(copy_async_op(region(S), region(A, (0, 1, 0), (32, 1, 32)), mbar=mbar()), A, S)
    assert plan_of(copies) == ("FLOAT32", (32, 32, 4), (512, 128), (32, 32, 1), (0, 0, 1))


def test_permuted_shared_dimensions_are_one_dense_block():
    """Two planes interleaved row by row in shared memory (plane stride 64, row stride 128): the box follows the
    shared order — columns, planes, rows — so the plane dimension sits between columns and rows."""
    A = gbuf("A", "float16", (4, 64, 64))
    S = sbuf("S", "float16", (2, 64, 64), TileLayout.from_spec((2, 64, 64), (64, 128, 1)))
    _, _, copies = lower1(copy_async_op(region(S), region(A, (2, 0, 0), (2, 64, 64)), mbar=mbar()), A, S)
    assert plan_of(copies) == ("FLOAT16", (64, 4, 64), (8192, 128), (64, 2, 64), (0, 2, 0))


def test_s2g_plans_like_g2s_without_an_mbarrier():
    A = gbuf("A", "float16", (256, 256))
    S = sbuf("S", "float16", (64, 128), ComposeLayout(3, 3, 3, TileLayout.from_spec((64, 2, 64), (64, 4096, 1))))
    _, rec, copies = lower1(copy_async_op(region(A, (128, 64), (64, 128)), region(S)), A, S)
    assert copies[0].direction == "s2g" and copies[0].mbar is None
    assert plan_of(copies) == ("FLOAT16", (64, 256, 4), (512, 128), (64, 64, 2), (0, 128, 1))
    assert rec.summary.startswith("per thread: 1 × cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group")


def test_shared_chain_must_be_one_dense_block():
    A = gbuf("A", "float16", (64, 64))
    S = sbuf("S", "float16", (16, 16), TileLayout.from_spec((16, 16), (32, 1)))  # rows 32 apart: a gap
    why = rejected(copy_async_op(region(S), region(A, (0, 0), (16, 16)), dispatch="tma_auto", mbar=mbar()), A, S)
    assert "tma_auto stage=shared-chain: shared iter 0 at sorted position 1 has stride=32, expected 16" in why
    assert 'use dispatch="tma_explicit"' in why


def test_coordinate_must_divide_by_the_inner_product():
    """Two SW128 atoms of 64 columns starting at column 32: the column block coordinate 32 / 64 is not whole."""
    A = gbuf("A", "float16", (64, 256))
    S = sbuf("S", "float16", (64, 128), ComposeLayout(3, 3, 3, TileLayout.from_spec((64, 2, 64), (64, 4096, 1))))
    why = rejected(copy_async_op(region(S), region(A, (0, 32), (64, 128)), dispatch="tma_auto", mbar=mbar()), A, S)
    assert "tma_auto stage=coordinate: group=1 start=32 is not divisible by inner_product=64" in why


def test_global_shape_must_divide_by_the_inner_product():
    A = gbuf("A", "float16", (64, 160))
    S = sbuf("S", "float16", (64, 128), ComposeLayout(3, 3, 3, TileLayout.from_spec((64, 2, 64), (64, 4096, 1))))
    why = rejected(copy_async_op(region(S), region(A, (0, 0), (64, 128)), dispatch="tma_auto", mbar=mbar()), A, S)
    assert "tma_auto stage=global-shape: group=1 tensor extent=160 is not divisible by inner_product=64" in why


def test_prefix_search_fails_with_the_last_broken_rules():
    """A row-major fp16 64×128 tile with the 128B swizzle: every box has 256-byte rows, wider than the 128 B
    the swizzle allows (and promotion cannot repair swizzle_inner_box)."""
    A = gbuf("A", "float16", (64, 128))
    S = sbuf("S", "float16", (64, 128), sw(3, 3, 3, (64, 128)))
    why = rejected(copy_async_op(region(S), region(A), dispatch="tma_auto", mbar=mbar()), A, S)
    assert "tma_auto stage=prefix-search: swizzle_inner_box: innermost box 256B exceeds the 128B swizzle atom" in why


def test_shared_pointer_keeps_the_swizzle_atom_alignment():
    """Rows 1..8 of a 128B-swizzled tile start 128 B in (the atom: accepted, the buffer itself is aligned to the
    1024-byte pattern); a slice starting 16 B in is declined."""
    A = gbuf("A", "float16", (64, 64))
    S = sbuf("S", "float16", (16, 64), sw(3, 3, 3, (16, 64)))
    _, _, copies = lower1(copy_async_op(region(S, (1, 0), (8, 64)), region(A, (0, 0), (8, 64)), mbar=mbar()), A, S)
    assert copies[0].smem_offset == 128
    op = copy_async_op(region(S, (0, 8), (1, 56)), region(A, (0, 0), (1, 56)), dispatch="tma_auto", mbar=mbar())
    assert "tma_auto stage=shared-pointer: shared slice offset=16B must preserve 128B alignment" in rejected(op, A, S)


def test_transpose_is_not_a_tma_copy():
    """A column-major shared tile of a row-major tensor: the innermost descriptor dimension would have a
    global element stride of 64, and TMA's innermost stride is always 1."""
    A = gbuf("A", "float16", (64, 64))
    S = sbuf("S", "float16", (64, 64), TileLayout.from_spec((64, 64), (1, 64)))
    why = rejected(copy_async_op(region(S), region(A), dispatch="tma_auto", mbar=mbar()), A, S)
    assert "inner_stride: innermost global element stride must be 1, got 64" in why


# ----------------------------------------------------------------------------- swizzle vs the hardware
@pytest.mark.parametrize("mode", [1, 2, 3])
@pytest.mark.parametrize("eb", [1, 2, 4])
def test_swizzle_params_are_the_ptx_table(mode, eb):
    """arch.tma.swizzle_params over tilemagic's one XOR equals PTX ISA 9.0 §5.5.7's byte-address function."""
    pe, sl, al = hw.swizzle_params(mode, eb)
    a = np.arange(hw.SWIZZLE_MODES[mode].period * 4)  # byte addresses from a pattern-aligned base
    ptx = a ^ (((a >> 7) & ((1 << mode) - 1)) << 4)
    assert np.array_equal(xor_swizzle(a, 4, mode, 3), ptx)
    elems = a[::eb] // eb
    assert np.array_equal(xor_swizzle(elems, pe, sl, al) * eb, ptx[::eb])


@pytest.mark.parametrize("dispatch", ["tma_auto", "tma_explicit"])
def test_a_swizzle_that_is_not_the_hardware_permutation_is_declined(dispatch):
    """TVM 0.27 plans swizzle(2, 3, 3) on float16 as SWIZZLE_128B; the hardware's is swizzle(3, 3, 3)."""
    A = gbuf("A", "float16", (64, 64))
    S = sbuf("S", "float16", (8, 64), sw(2, 3, 3, (8, 64)))
    why = rejected(copy_async_op(region(S), region(A, (0, 0), (8, 64)), dispatch=dispatch, mbar=mbar()), A, S)
    assert f"{dispatch} stage=shared-swizzle: S's layout swizzle(2, 3, 3) is not the hardware's 128B swizzle" in why
    assert "write swizzle(3, 3, 3)" in why and "TVM 0.27 plans it as SWIZZLE_128B anyway" in why


def test_the_hardware_swizzle_of_each_mode_is_accepted():
    for dtype, eb in (("float32", 4), ("float16", 2), ("uint8", 1)):
        for mode in (1, 2, 3):
            span = hw.SWIZZLE_MODES[mode].span
            cols = span // eb
            A = gbuf("A", dtype, (32, cols * 2))
            S = sbuf("S", dtype, (8, cols), sw(*hw.swizzle_params(mode, eb), (8, cols)))
            _, rec, copies = lower1(copy_async_op(region(S), region(A, (8, cols), (8, cols)), mbar=mbar()), A, S)
            assert copies[0].tmap.swizzle == mode and copies[0].tmap.box == (cols, 8), (dtype, mode)


# ----------------------------------------------------------------------------- tma_explicit
def test_explicit_maps_the_buffer_itself():
    A = gbuf("A", "float32", (4, 64, 64))
    S = sbuf("S", "float32", (2, 16, 16), sw(2, 2, 3, (2, 16, 16)))
    _, rec, copies = lower1(copy_async_op(region(S), region(A, (1, 16, 32), (2, 16, 16)), dispatch="tma_explicit",
                                          mbar=mbar(), oob="nan"), A, S)
    assert rec.chosen == "tma_explicit" and len(copies) == 1
    assert plan_of(copies) == ("FLOAT32", (64, 64, 4), (256, 16384), (16, 16, 2), (32, 16, 1))
    assert copies[0].tmap.oob_fill == 1 and copies[0].tmap.swizzle == 2


def test_explicit_needs_a_box_linear_shared_slice():
    A = gbuf("A", "float16", (64, 64))
    S = sbuf("S", "float16", (16, 64))
    why = rejected(copy_async_op(region(S, (0, 0), (16, 32)), region(A, (0, 0), (16, 32)), dispatch="tma_explicit",
                                 mbar=mbar()), A, S)
    assert "tma_explicit stage=shared-layout: sliced shared layout must canonicalize to trivial" in why


def test_explicit_does_no_repair():
    """The uint8 rows of 512 that tma_auto promotes: tma_explicit keeps the box and fails the descriptor rule."""
    A = gbuf("A", "uint8", (16, 512))
    S = sbuf("S", "uint8", (4, 512))
    why = rejected(copy_async_op(region(S), region(A, (4, 0), (4, 512)), dispatch="tma_explicit", mbar=mbar()), A, S)
    assert "tma_explicit stage=main-descriptor: box_dim: boxDim[0]=512 must be in [1, 256]" in why


# ----------------------------------------------------------------------------- predicates and config
def test_predicates_accept_and_decline_with_tvms_reasons():
    A = gbuf("A", "float16", (64, 64))
    S = sbuf("S", "float16", (64, 64))
    T = sbuf("T", "float16", (64, 64))
    why = rejected(copy_async_op(region(S), region(A), scope="wg", dispatch="tma_auto", mbar=mbar()), A, S)
    assert "single_thread: unsupported exec_scope warpgroup, expected single thread" in why
    why = rejected(copy_async_op(region(T), region(S), dispatch="tma_explicit"), S, T)
    assert "validate_tma_copy_op: not a global<->shared TMA copy" in why
    why = rejected(copy_async_op(region(S), region(A), dispatch="tma_auto", mbar=mbar()), A, S, arch="sm_80")
    assert "tma_target: cp.async.bulk.tensor needs sm_90 or newer; the target is sm_80" in why
    _, rec, _ = lower1(copy_async_op(region(S), region(A), mbar=mbar()), A, S)
    first = rec.candidates[0]  # ldgsts (priority 20) declines a copy with mbar=; tma_auto takes it
    assert first.variant == "ldgsts" and not first.accepted and any(r.startswith("no_mbar: ") for r in first.reasons)
    tma = next(c for c in rec.candidates if c.variant == "tma_auto")
    assert rec.chosen == "tma_auto"
    assert tma.reasons == ("validate_tma_copy_op: ok", "single_thread: ok", "tma_target: ok")


def test_mbar_is_required_for_g2s_and_forbidden_for_s2g():
    A = gbuf("A", "float16", (64, 64))
    S = sbuf("S", "float16", (64, 64))
    why = rejected(copy_async_op(region(S), region(A), dispatch="tma_auto"), A, S)
    assert "emitter declined: global-to-shared TMA requires mbar" in why
    why = rejected(copy_async_op(region(A), region(S), dispatch="tma_explicit", mbar=mbar()), A, S)
    assert "emitter declined: mbar is only valid for global-to-shared TMA" in why


def test_oob_rules():
    A = gbuf("A", "float16", (64, 64))
    S = sbuf("S", "float16", (64, 64))
    why = rejected(copy_async_op(region(S), region(A), dispatch="tma_auto", mbar=mbar(), oob="zero"), A, S)
    assert 'tma_auto does not support non-default oob; use dispatch="tma_explicit"' in why
    why = rejected(copy_async_op(region(A), region(S), dispatch="tma_explicit", oob="nan"), A, S)
    assert "TensorMap oob is only valid for explicit global-to-shared copies" in why
    G = gbuf("G", "int32", (64, 64))
    J = sbuf("J", "int32", (64, 64))
    why = rejected(copy_async_op(region(J), region(G, (0, 0), (8, 64)), dispatch="tma_explicit", mbar=mbar(),
                                 oob="nan"), G, J)
    assert "nan_oob_dtype: NaN OOB fill requires a non-packed floating-point descriptor" in why


def test_cache_hint_is_a_named_policy():
    A = gbuf("A", "float16", (64, 64))
    S = sbuf("S", "float16", (64, 64))
    k, rec, copies = lower1(copy_async_op(region(S), region(A), mbar=mbar(), cache_hint="evict_last"), A, S)
    assert copies[0].cache_hint == "evict_last" and rec.summary.startswith("per thread: 1 × cp.async.bulk.tensor.2d")
    cuda = generate(k, arch="sm_90a").text
    assert ".L2::cache_hint [%0], [%1, {%2, %3}], [%4], %5;" in cuda and "0x14f0000000000000ull" in cuda
    why = rejected(copy_async_op(region(S), region(A), dispatch="tma_auto", mbar=mbar(), cache_hint="evict_all"),
                   A, S)
    assert "unsupported cache_hint 'evict_all'" in why


def test_default_dispatch_prefers_tma_auto_and_falls_to_tma_explicit():
    """tma_auto declines the 128B-swizzled row-major 64×128 tile (prefix-search); tma_explicit also declines it
    (the inner box of 256 B > 128 B) — both rows are on the table."""
    A = gbuf("A", "float16", (64, 128))
    S = sbuf("S", "float16", (64, 128), sw(3, 3, 3, (64, 128)))
    why = rejected(copy_async_op(region(S), region(A), mbar=mbar()), A, S)
    assert "tma_auto      10    declined" in why and "tma_explicit  10    declined" in why
    assert "tmem<->local" in why


# ----------------------------------------------------------------------------- descriptor reuse, IR, CUDA
def test_one_map_per_descriptor_across_the_kernel():
    """Two tiles of one tensor share a map (coordinates are not in the key); the S2G map is another box."""
    A = gbuf("A", "float16", (128, 128))
    S = sbuf("S", "float16", (64, 64), sw(3, 3, 3, (64, 64)))
    U = sbuf("U", "float16", (32, 64), sw(3, 3, 3, (32, 64)))
    bar = mbar()
    ops = [copy_async_op(region(S), region(A, (0, 0), (64, 64)), mbar=bar),
           copy_async_op(region(S), region(A, (64, 64), (64, 64)), mbar=bar, line=2),
           copy_async_op(region(A, (0, 64), (32, 64)), region(U), line=3)]
    kernel, records = lower_ops(ops, A, S, U)
    copies = [s for s in ir.walk(kernel.body) if isinstance(s, ir.TmaCopy)]
    assert copies[0].tmap is copies[1].tmap and copies[2].tmap is not copies[0].tmap
    assert [m.name for m in kernel.tensormaps] == ["A_tmap", "A_tmap1"]
    assert [tuple(c.value for c in x.coords) for x in copies] == [(0, 0), (64, 64), (64, 0)]


def test_ir_and_cuda_of_a_g2s_and_an_s2g():
    A = gbuf("A", "float16", (128, 128))
    B = gbuf("B", "float16", (128, 128))
    S = sbuf("S", "float16", (64, 64), sw(3, 3, 3, (64, 64)))
    full = mbar()
    kernel, _ = lower_ops([copy_async_op(region(S), region(A, (64, 0), (64, 64)), mbar=full),
                           copy_async_op(region(B, (0, 64), (64, 64)), region(S), line=2)], A, B, S)
    text, _ = print_ir(kernel, arch="sm_90a")
    assert ('T.ptx["cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"]'
            '(S.access_ptr("w", offset=0), T.address_of(A_tmap), 0, 64, T.address_of(full[0]))') in text
    assert ('T.ptx["cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group"](T.address_of(B_tmap), 64, 0, '
            'S.access_ptr("r", offset=0))') in text
    assert 'A_tmap = T.tensormap_encode_tiled(A, "FLOAT16", rank=2, dims=[128, 128], strides=[256], box=[64, 64]' in text
    cuda = generate(kernel, arch="sm_90a").text
    assert ("const __grid_constant__ CUtensorMap A_tmap, const __grid_constant__ CUtensorMap B_tmap)" in cuda)
    assert "struct alignas(64) CUtensorMap_st { unsigned long long opaque[16]; };" in cuda
    assert "__shared__ __align__(1024) half S[4096];" in cuda
    assert shared_alignment(kernel) == {"S": 1024}
    assert generate(kernel, arch="sm_90a").reads == ("A",) and generate(kernel, arch="sm_90a").writes == ("B",)


@pytest.mark.parametrize("mode,align", [(0, 128), (1, 256), (2, 512), (3, 1024)])
def test_shared_alignment_per_swizzle(mode, align):
    assert hw.shared_alignment(mode) == align


# ----------------------------------------------------------------------------- validator rules
@pytest.mark.parametrize("change,rule", [
    ({"dims": (0, 8)}, "global_dim"), ({"dims": ((1 << 32) + 1, 8)}, "global_dim"),
    ({"strides": (24,)}, "global_stride_alignment"), ({"strides": (1 << 40,)}, "global_stride_range"),
    ({"box": (0, 8)}, "box_dim"), ({"box": (257, 8)}, "box_dim"), ({"box": (7, 8)}, "inner_box_bytes"),
    ({"elem_strides": (1, 9)}, "element_stride"), ({"elem_strides": (2, 1)}, "inner_stride"),
    ({"swizzle": 4}, "swizzle"), ({"l2_promotion": 4}, "l2_promotion"), ({"oob_fill": 2}, "oob"),
    ({"swizzle": 1, "box": (24, 8)}, "swizzle_inner_box"), ({"dtype": "INT32", "oob_fill": 1}, "nan_oob_dtype"),
    ({"sm": 80}, "target"), ({"dims": (8,) * 6, "strides": (16,) * 5, "box": (8,) * 6, "elem_strides": (1,) * 6},
                             "rank"),
    ({"base_bytes": 2}, "global_base_alignment"),
])
def test_validator_rule_matrix(change, rule):
    """One mutation per rule of cuTensorMapEncodeTiled (TVM's static boundary matrix)."""
    legal = dict(dtype="FLOAT16", elem_bytes=2, dims=(64, 64), strides=(128,), box=(64, 8), elem_strides=(1, 1),
                 swizzle=0)
    assert hw.validate(**legal) == []
    assert rule in [f.rule for f in hw.validate(**{**legal, **change})]
