"""tma_auto / tma_explicit: multicast (``cta_mask=``), boxes past the tensor's edge, reductions (``use_tma_reduce=``).

The ops are built directly (``helpers.copy_async_op``) and dispatched through the real registry with a cluster size
(``helpers.lower_ops(cluster=C)``), so each reason below is the why-table's.  Every rule has an accepting and a
declining case.  On the main branch before this change every op here was declined (``cta_mask``/``use_tma_reduce``
were unknown config keys, a region past the edge was a located error of the checker).
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import copy_async_op, lower_ops, region, tma_buffers

from tilemagic.codegen.cuda import generate
from tilemagic.errors import DispatchError
from tilemagic.ir import nodes as ir
from tilemagic.ir.printer import print_ir
from tilemagic.layout import TileLayout
from tilemagic.layout.swizzle import ComposeLayout
from tilemagic.lower.copy_async import tma as T

gbuf, sbuf, mbar = tma_buffers()
VARIANTS = ["tma_auto", "tma_explicit"]


def lower1(op, *bufs, cluster=1):
    kernel, records = lower_ops([op], *bufs, cluster=cluster)
    return kernel, records[0], [s for s in ir.walk(kernel.body) if isinstance(s, ir.TmaCopy)]


def rejected(op, *bufs, cluster=1) -> str:
    with pytest.raises(DispatchError) as e:
        lower_ops([op], *bufs, cluster=cluster)
    return e.value.details


def plan_of(copies):
    m = copies[0].tmap
    return m.dims, m.box, tuple(c.value for c in copies[0].coords)


def _g2s(**kw):
    A = gbuf("A", "float16", (128, 64))
    S = sbuf("S", "float16", (64, 64))
    return copy_async_op(region(S), region(A, (64, 0), (64, 64)), mbar=mbar(), **kw), A, S


# ----------------------------------------------------------------------------- multicast
@pytest.mark.parametrize("dispatch", VARIANTS)
@pytest.mark.parametrize("mask,cluster", [(0b11, 2), (0b1010, 4), (0xFF, 8)])
def test_a_multicast_mask_is_kept_on_the_copy(dispatch, mask, cluster):
    op, A, S = _g2s(cta_mask=mask, dispatch=dispatch)
    _, rec, copies = lower1(op, A, S, cluster=cluster)
    assert rec.chosen == dispatch and [c.cta_mask for c in copies] == [mask]
    assert copies[0].chain.endswith(".mbarrier::complete_tx::bytes.multicast::cluster")
    ranks = ", ".join(str(r) for r in range(8) if mask >> r & 1)
    assert f"multicast to CTAs {ranks} (cta_mask 0b{mask:b})" in rec.summary


@pytest.mark.parametrize("dispatch", VARIANTS)
def test_a_one_bit_mask_stays_a_multicast(dispatch):
    """TVM 0.27 emits a one-bit static mask as the unicast form into the issuing CTA; tilemagic keeps the mask."""
    op, A, S = _g2s(cta_mask=0b10, dispatch=dispatch)
    k, rec, copies = lower1(op, A, S, cluster=2)
    assert copies[0].cta_mask == 2 and "multicast to CTA 1 (cta_mask 0b10)" in rec.summary
    assert '"h"((uint16_t)0x2)' in generate(k, arch="sm_90a").text


@pytest.mark.parametrize("dispatch", VARIANTS)
@pytest.mark.parametrize("mask,cluster,reason", [
    (0b11, 1, "cta_mask=0b11 multicasts to the CTAs of a cluster, and the kernel has none (write cluster=C on the "
              "kernel line)"),
    (0b100, 2, "cta_mask 0b100 names rank 2, cluster has 2 CTAs"),
    (0b1001, 3, "cta_mask 0b1001 names rank 3, cluster has 3 CTAs"),
    (0, 2, "cta_mask=0 names no CTA: the box would land nowhere"),
    (0x10000, 8, "cta_mask must fit uint16, got 65536"),
    (-1, 2, "cta_mask must fit uint16, got -1"),
    ("0b11", 2, "cta_mask must be an integer or TIR expression"),
])
def test_bad_masks_are_declined(dispatch, mask, cluster, reason):
    op, A, S = _g2s(cta_mask=mask, dispatch=dispatch)
    assert reason in rejected(op, A, S, cluster=cluster)


@pytest.mark.parametrize("dispatch", VARIANTS)
def test_a_store_takes_no_multicast(dispatch):
    """S2G requires cta_mask 0 (TVM 0.27's rule and reason): 0 is the unicast store, anything else is declined."""
    A = gbuf("A", "float16", (128, 64))
    S = sbuf("S", "float16", (64, 64))
    _, _, copies = lower1(copy_async_op(region(A, (0, 0), (64, 64)), region(S), cta_mask=0, dispatch=dispatch), A, S,
                          cluster=2)
    assert copies[0].cta_mask is None and copies[0].direction == "s2g"
    why = rejected(copy_async_op(region(A, (0, 0), (64, 64)), region(S), cta_mask=0b11, dispatch=dispatch), A, S,
                   cluster=2)
    assert "cta_mask is only valid for global-to-shared TMA" in why


@pytest.mark.parametrize("hint", [None, "evict_first"])
def test_multicast_cuda_operand_order(hint):
    """PTX ISA 9.0 §9.7.9.25.5.2: [dst], [map, {coords}], [mbar], ctaMask (16-bit) [, cache-policy]."""
    op, A, S = _g2s(cta_mask=0b11, **({"cache_hint": hint} if hint else {}))
    k, _, _ = lower1(op, A, S, cluster=2)
    line = next(x for x in generate(k, arch="sm_90a").text.splitlines() if "cp.async.bulk.tensor" in x)
    if hint:
        assert ".multicast::cluster.L2::cache_hint [%0], [%1, {%2, %3}], [%4], %5, %6;" in line
        assert line.index('"h"((uint16_t)0x3)') < line.index("0x12f0000000000000ull")
    else:
        assert ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;" in line and '"h"((uint16_t)0x3)' in line
    tail = ', T.cache_policy("evict_first"), cta_mask=0b11)' if hint else "T.address_of(full[0]), cta_mask=0b11)"
    assert tail in print_ir(k)[0]


def test_a_unicast_copy_has_no_mask_operand():
    op, A, S = _g2s()
    k, _, copies = lower1(op, A, S, cluster=2)
    assert copies[0].cta_mask is None and "multicast" not in copies[0].chain
    assert "uint16_t" not in generate(k, arch="sm_90a").text and "cta_mask" not in print_ir(k)[0]


# ----------------------------------------------------------------------------- past the tensor's edge
def test_a_box_past_the_last_rows_keeps_the_tensors_dims():
    A = gbuf("A", "float16", (256, 64))
    S = sbuf("S", "float16", (32, 64))
    _, rec, copies = lower1(copy_async_op(region(S), region(A, (240, 0), (32, 64)), mbar=mbar()), A, S)
    assert rec.chosen == "tma_auto"
    assert plan_of(copies) == ((64, 256), (64, 32), (0, 240))  # the real dims; the box reaches past them
    assert copies[0].tmap.box_bytes == 32 * 64 * 2  # complete-tx counts the whole box
    assert "past A's edge (rows 240..271 of 256): 1024 of 2048 elements zero-filled" in rec.summary


def test_a_box_past_two_dimensions_with_nan_fill():
    A = gbuf("A", "float32", (64, 40))
    S = sbuf("S", "float32", (32, 32))
    _, rec, copies = lower1(copy_async_op(region(S), region(A, (48, 16), (32, 32)), mbar=mbar(), oob="nan",
                                          dispatch="tma_explicit"), A, S)
    assert plan_of(copies) == ((40, 64), (32, 32), (16, 48)) and copies[0].tmap.oob_fill == 1
    assert "past A's edge (rows 48..79 of 64, columns 16..47 of 40): 640 of 1024 elements NaN-filled" in rec.summary


def test_a_rank_3_box_past_the_middle_dimension():
    A = gbuf("A", "float16", (4, 20, 64))
    S = sbuf("S", "float16", (1, 16, 64))
    _, _, copies = lower1(copy_async_op(region(S), region(A, (1, 8, 0), (1, 16, 64)), mbar=mbar(),
                                        dispatch="tma_explicit"), A, S)
    assert plan_of(copies) == ((64, 20, 4), (64, 16, 1), (0, 8, 1))


def test_tma_auto_splits_an_edge_dimension_only_when_the_tensor_extent_divides():
    """Two SW128 atoms of 64 columns: the column dimension becomes (64 within a block, blocks), the tensor extent
    divided by the inner product 64 (TVM's rule).  192 columns: 3 blocks, the box's second block (columns 192..255)
    is out of bounds exactly where the tensor ends.  224 columns: 3.5 blocks — a descriptor of 3 blocks would drop
    columns 192..223, one of 4 would read past the end: declined (stage=global-shape)."""
    lay = ComposeLayout(3, 3, 3, TileLayout.from_spec((64, 2, 64), (64, 4096, 1)))
    S = sbuf("S", "float16", (64, 128), lay)
    A = gbuf("A", "float16", (64, 192))
    _, rec, copies = lower1(copy_async_op(region(S), region(A, (0, 128), (64, 128)), mbar=mbar()), A, S)
    assert rec.chosen == "tma_auto" and plan_of(copies) == ((64, 64, 3), (64, 64, 2), (0, 0, 2))
    B = gbuf("B", "float16", (64, 224))
    why = rejected(copy_async_op(region(S), region(B, (0, 128), (64, 128)), mbar=mbar(), dispatch="tma_auto"), B, S)
    assert "tma_auto stage=global-shape: group=1 tensor extent=224 is not divisible by inner_product=64" in why


def test_an_edge_plan_whose_descriptor_does_not_bound_the_tensor_is_refused():
    """The element-by-element check of an edge plan: a descriptor whose row is wider than the tensor's (64
    elements where A has 60) would read the next row's first elements as in bounds."""
    A = gbuf("A", "float16", (16, 60))
    g = region(A, (8, 0), (16, 60))
    good = T.TmaPlan("FLOAT16", 2, (60, 16), (2, 120), (60, 16), (0, 8), (), 0, 0)  # (full_strides: bytes)
    assert T._edge_refusal(good, g) is None
    wide = T.TmaPlan("FLOAT16", 2, (64, 16), (2, 120), (64, 16), (0, 8), (), 0, 0)
    why = T._edge_refusal(wide, g)
    assert why is not None and "bounds 512 of its elements where the tensor has 480" in why
    assert T._edge_refusal(wide, region(A, (0, 0), (8, 60))) is None  # (inside the tensor: nothing to check)


def test_a_store_past_the_edge_drops_the_rest():
    A = gbuf("A", "float32", (40, 48))
    S = sbuf("S", "float32", (32, 32))
    _, rec, copies = lower1(copy_async_op(region(A, (16, 32), (32, 32)), region(S)), A, S)
    assert copies[0].direction == "s2g" and plan_of(copies) == ((48, 40), (32, 32), (32, 16))
    assert "past A's edge (rows 16..47 of 40, columns 32..63 of 48): 640 of 1024 elements not written" in rec.summary


def test_ldgsts_declines_a_region_past_the_edge():
    A = gbuf("A", "float16", (256, 64))
    S = sbuf("S", "float16", (32, 64))
    why = rejected(copy_async_op(region(S), region(A, (240, 0), (32, 64)), scope="wg", dispatch="ldgsts"), A, S)
    assert ("emitter declined: region reaches past A's edge (rows 240..271 of 256): only TMA fills out-of-bounds "
            "elements") in why


def test_the_default_dispatch_of_an_edge_load_lists_the_decline():
    """Without mbar= ldgsts' predicates hold and its emitter declines the edge; the TMA variants need one thread
    (and mbar=): nothing takes the warpgroup's op, and the table says why for each."""
    A = gbuf("A", "float16", (256, 64))
    S = sbuf("S", "float16", (32, 64))
    why = rejected(copy_async_op(region(S), region(A, (240, 0), (32, 64)), scope="wg"), A, S)
    assert "emitter declined: region reaches past A's edge (rows 240..271 of 256)" in why
    assert "single_thread: unsupported exec_scope warpgroup, expected single thread" in why


def test_an_in_bounds_op_keeps_its_why_table():
    """The edge decline is the emitters', not a predicate: an in-bounds op's rows are what they were."""
    A = gbuf("A", "float16", (256, 64))
    S = sbuf("S", "float16", (32, 64))
    _, rec, _ = lower1(copy_async_op(region(S), region(A, (0, 0), (32, 64)), scope="wg"), A, S)
    assert rec.chosen == "ldgsts" and not any("edge" in r for c in rec.candidates for r in c.reasons)


# ----------------------------------------------------------------------------- reductions
def _s2g(dtype, op, dispatch=None, shape=(64, 64), ext=(32, 64)):
    A = gbuf("A", dtype, shape)
    S = sbuf("S", dtype, ext)
    return copy_async_op(region(A, (0, 0), ext), region(S), use_tma_reduce=op, dispatch=dispatch), A, S


@pytest.mark.parametrize("dispatch", VARIANTS)
@pytest.mark.parametrize("op,dtype", [("add", "float32"), ("add", "float16"), ("add", "bfloat16"), ("add", "int32"),
                                      ("min", "bfloat16"), ("max", "int32"), ("inc", "uint32"), ("dec", "uint32"),
                                      ("and", "int32"), ("or", "uint32"), ("xor", "int32")])
def test_a_reduction_is_the_reduce_form_of_the_store(dispatch, op, dtype):
    o, A, S = _s2g(dtype, op, dispatch)
    k, rec, copies = lower1(o, A, S)
    assert [c.reduce for c in copies] == [op] and f"reduce .{op} into A" in rec.summary
    assert copies[0].chain == f"cp.reduce.async.bulk.tensor.2d.global.shared::cta.{op}.tile.bulk_group"
    assert f"cp.reduce.async.bulk.tensor.2d.global.shared::cta.{op}.tile.bulk_group [%0, {{%1, %2}}], [%3];" in \
        generate(k, arch="sm_90a").text


@pytest.mark.parametrize("op,dtype,reason", [
    ("inc", "float32", "use_tma_reduce=inc is not defined on float32 (cp.reduce.async.bulk.tensor .inc takes uint32"),
    ("add", "int8", "use_tma_reduce=add is not defined on int8"),
    ("min", "float32", "use_tma_reduce=min is not defined on float32"),
    ("mul", "float32", "unsupported TMA reduce operation 'mul' (one of add, min, max, inc, dec, and, or, xor)"),
])
def test_a_reduction_the_dtype_lacks_is_declined(op, dtype, reason):
    o, A, S = _s2g(dtype, op, "tma_explicit")
    assert reason in rejected(o, A, S)


@pytest.mark.parametrize("dispatch", VARIANTS)
def test_a_load_takes_no_reduction(dispatch):
    op, A, S = _g2s(use_tma_reduce="add", dispatch=dispatch)
    assert "use_tma_reduce is only valid for shared-to-global TMA" in rejected(op, A, S)


def test_a_reduction_does_not_promote_the_descriptor_unit():
    """float16 rows of 512: a plain store promotes to UINT32 (box 256 × 4); a reduction adds float16 elements, so
    the unit stays and no box is legal."""
    o, A, S = _s2g("float16", None, "tma_auto", shape=(16, 512), ext=(4, 512))
    _, _, copies = lower1(copy_async_op(region(A, (0, 0), (4, 512)), region(S), dispatch="tma_auto"), A, S)
    assert copies[0].tmap.dtype == "UINT32"
    o, A, S = _s2g("float16", "add", "tma_auto", shape=(16, 512), ext=(4, 512))
    why = rejected(o, A, S)
    assert "tma_auto stage=prefix-search: box_dim: boxDim[0]=512 must be in [1, 256]" in why


def test_a_reduction_past_the_edge():
    o, A, S = _s2g("float32", "add", shape=(20, 64), ext=(32, 64))
    _, rec, copies = lower1(o, A, S)
    assert copies[0].reduce == "add" and "past A's edge (rows 0..31 of 20): 768 of 2048 elements not written" in \
        rec.summary


def test_edge_elements_of_a_promoted_plan_cover_every_byte():
    plan = T.TmaPlan("UINT32", 4, (16, 8), (4, 64), (16, 4), (0, 6), (), 0, 0)  # float16[8, 32] as uint32 pairs
    got = np.sort(T._edge_elements(plan, 2))
    assert got.size == 2 * 32 and got[0] == 6 * 64 and got[-1] == 8 * 64 - 2


@pytest.mark.parametrize("op", ["inc", "dec"])
def test_inc_and_dec_on_int32_say_the_language_has_no_uint32(op):
    # QA F8: inc/dec take uint32 only, a dtype the language does not have: the reason says so
    o, A, S = _s2g("int32", op, "tma_auto")
    why = rejected(o, A, S)
    assert f"use_tma_reduce={op} is not defined on int32" in why
    assert f"{op} needs uint32, which the language does not have yet" in why


def test_a_reduction_the_language_can_reach_names_no_missing_dtype():
    o, A, S = _s2g("float32", "min", "tma_auto")
    assert "does not have yet" not in rejected(o, A, S)
