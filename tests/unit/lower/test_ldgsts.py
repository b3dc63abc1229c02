"""``copy_async -> ldgsts`` (cp.async, priority 20): every predicate and planner rule, accepted and declined.

Cells go through parse -> check -> dispatch -> lower -> print -> CUDA (``launch="off"``: the simulator runs
``cp.async`` once its completion model lands, and ``commit_group``/``wait_group`` parse once the language of
commit groups lands; until then the options ``mbar=``/``oob=``/``cache_hint=`` and guards are put on a
checked ``CopyOp`` / ``DispatchContext`` directly).  The vector choice is held to ``gmem_smem``'s on the
same regions: one machinery (``lower.common.gs_split``), cp.async's widths a prefix of ``ld``/``st``'s.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from cells import GMEM_SMEM_CASES, gmem_smem_cell, ldgsts_cell
from helpers import run

from tilemagic.errors import DispatchError, Span
from tilemagic.ir import nodes as ir
from tilemagic.ir.evaluate import eval_static
from tilemagic.lang.parser import parse
from tilemagic.lower import dispatch as D
from tilemagic.lower.copy_async import ldgsts
from tilemagic.lower.program import KernelBuilder, check

SPAN = Span(5, 1, 5, 20)


def cp_asyncs(res):
    return [s for s in ir.walk(res.kernel.body) if isinstance(s, ir.CpAsync)]


def op_ctx(src: str, arch: str = "sm_90a", guard: ir.Expr | None = None, options=()):
    """The first op of a checked cell, with ``options`` written on it, and the context it is dispatched in."""
    tp = check(parse(src), arch=arch)
    op = dataclasses.replace(tp.copy_ops[0], options=tuple((k, v, SPAN) for k, v in options))
    ctx = D.DispatchContext(D.TargetSpec("cuda", arch), tp.threads, op.exec_scope, KernelBuilder(tp), guard=guard)
    return op, ctx


LDGSTS = next(c for c in D._cases("copy_async", "cuda") if c.variant == "ldgsts")


def ldgsts_row(rec: D.DispatchRecord) -> D.Candidate:
    return next(c for c in rec.candidates if c.variant == "ldgsts")


def table_of(src: str, **kw) -> str:
    with pytest.raises(DispatchError) as e:
        run(src, launch="off", **kw)
    return e.value.details


FP32 = GMEM_SMEM_CASES[0]._replace(scope="wg", threads=128, rows=64, cols=32, dtype="float32", vec=4)


# ----------------------------------------------------------------------------- accepted: what it emits
@pytest.mark.parametrize("case,vec,chain", [
    (FP32, 4, "cp.async.cg.shared.global"),  # 16 B
    (GMEM_SMEM_CASES[0], 8, "cp.async.cg.shared.global"),  # warp, fp16, 16 B
    (GMEM_SMEM_CASES[2], 4, "cp.async.ca.shared.global"),  # wg, fp16, swizzle(3,3,3): 8 B
    (GMEM_SMEM_CASES[6], 2, "cp.async.ca.shared.global"),  # warp, fp32, swizzle(1,2,3): chunk of 2 -> 8 B
    (GMEM_SMEM_CASES[12], 2, "cp.async.ca.shared.global"),  # wg, bf16 16x16: 4 B
    (GMEM_SMEM_CASES[10], 4, "cp.async.ca.shared.global"),  # cta 64, int8: 4 B
], ids=lambda v: v.id if hasattr(v, "id") else str(v))
def test_accepts_and_emits_cp_async(case, vec, chain):
    res = run(ldgsts_cell(case), launch="off")
    rec = res.dispatch[0]
    assert rec.chosen == "ldgsts"
    moves = cp_asyncs(res)
    eb = moves[0].dst.elem_bytes
    assert {m.elems for m in moves} == {vec} and {m.chain for m in moves} == {chain}
    t = {"thread": 1, "warp": 32, "wg": 128, "cta": case.threads}[case.scope]
    outer = case.rows * case.cols // (t * vec)
    assert f"[outer={outer}, threads={t}, vec={vec}]" in rec.summary
    assert f"{chain} [%0], [%1], {vec * eb};" in res.cuda
    assert f'T.ptx["{chain}"](S.access_ptr("w", offset=' in res.ir
    assert "completion is the caller's: commit_group, wait_group, then cta_sync" in rec.summary
    # every predicate held, and the table says so
    assert ldgsts_row(rec).reasons == tuple(f"{p.name}: ok" for p in LDGSTS.preds)


def test_thread_split_is_tvms_order_and_small_counts_unroll():
    """Thread t issues vectors f * threads + t; up to 16 issues per thread are unrolled (TVM's T.unroll)."""
    res = run(ldgsts_cell(FP32), launch="off")  # 2048 fp32 / (128 threads * 4) = 4 issues
    assert not [s for s in ir.walk(res.kernel.body) if isinstance(s, ir.Grid) and
                isinstance(s.body, ir.CpAsync)]
    offs = ['offset=tid_in_wg * 4)', 'offset=tid_in_wg * 4 + 512)', 'offset=tid_in_wg * 4 + 1024)',
            'offset=tid_in_wg * 4 + 1536)']
    lines = [ln for ln in res.ir.splitlines() if "cp.async" in ln]
    assert len(lines) == 4 and all(o in ln for o, ln in zip(offs, lines))
    assert "unrolled" in res.dispatch[0].summary


def test_many_issues_per_thread_are_a_serial_loop():
    case = GMEM_SMEM_CASES[0]._replace(scope="thread", threads=1, rows=16, cols=32, dtype="float32", vec=4)
    res = run(ldgsts_cell(case), launch="off")  # one thread, 512 fp32 = 128 issues of 16 B
    (grid,) = [s for s in ir.walk(res.kernel.body) if isinstance(s, ir.Grid) and isinstance(s.body, ir.CpAsync)]
    assert grid.extents == (128,)
    assert "for i in T.grid(128):" in res.ir and "in a serial loop" in res.dispatch[0].summary
    assert 'A.access_ptr("r", offset=i * 4), 16)' in res.ir


def test_swizzled_tile_issues_at_the_xor_address_one_chunk_per_vector():
    res = run(ldgsts_cell(GMEM_SMEM_CASES[2]), launch="off")  # wg, 8x64 fp16, swizzle(3, 3, 3)
    assert "offset=(tid_in_wg * 4) ^ (tid_in_wg * 4 // 64 % 8 * 8)" in res.ir
    assert "swizzle chunk caps at 8 elements" in res.dispatch[0].summary
    # every vector is naturally aligned and inside one 8-element chunk of the physical tile, and the
    # vectors of all threads cover the tile once
    tid = np.arange(128)
    phys = np.concatenate([np.broadcast_to(eval_static(m.dst_index, tid), tid.shape) for m in cp_asyncs(res)])
    assert np.all(phys % 4 == 0) and np.all(phys // 8 == (phys + 3) // 8)
    assert sorted((phys[:, None] + np.arange(4)).ravel().tolist()) == list(range(8 * 64))


# ----------------------------------------------------------------------------- the vector choice is gmem_smem's
@pytest.mark.parametrize("case", GMEM_SMEM_CASES, ids=[c.id for c in GMEM_SMEM_CASES])
def test_vector_choice_is_gmem_smems_restricted_to_cp_async_sizes(case):
    """Same regions, same split: ldgsts takes gmem_smem's vector when it is 4, 8 or 16 bytes, and declines
    with TVM's reason when gmem_smem needs a narrower one (1- and 2-byte moves have no cp.async form)."""
    sync = run(gmem_smem_cell(case), launch="off")
    vmove = next(s for s in ir.walk(sync.kernel.body) if isinstance(s, ir.VecMove))
    nbytes = vmove.nbytes
    if nbytes >= 4:
        res = run(ldgsts_cell(case), launch="off")
        assert res.dispatch[0].chosen == "ldgsts"
        assert {m.elems for m in cp_asyncs(res)} == {vmove.elems}
        assert res.dispatch[0].emitted.split == sync.dispatch[0].emitted.split
    else:
        table = table_of(ldgsts_cell(case))
        bits = 8 * vmove.dst.elem_bytes
        assert f"ldgsts: cannot find a cp.async-compatible vec_len for elem_bits={bits}" in table


# ----------------------------------------------------------------------------- planner declines
def test_two_byte_elements_without_an_aligned_four_byte_run_decline():
    """fp16 starting at an odd column: every 4-byte run straddles a 4-byte boundary of A."""
    case = GMEM_SMEM_CASES[0]._replace(dtype="float16", rows=8, cols=64, gcols=70, c0=3)
    table = table_of(ldgsts_cell(case))
    assert ("emitter declined: ldgsts: cannot find a cp.async-compatible vec_len for elem_bits=16 (no run of "
            "16, 8, 4 B is contiguous and aligned in both S and A with 32 thread(s) splitting 512 elements)"
            in table)


def test_one_byte_column_major_shared_tile_declines():
    """int8 into a column-major shared tile: no two elements of a row are adjacent in S."""
    case = GMEM_SMEM_CASES[0]._replace(dtype="int8", rows=8, cols=16, smem="S[(8, 16) : (1, 8)]")
    assert "cp.async-compatible vec_len for elem_bits=8" in table_of(ldgsts_cell(case))


def test_swizzle_chunk_below_four_bytes_declines_and_says_why():
    """fp16 with swizzle(0, 3, 3): a chunk is one element (2 B), so no vector of 4 B stays inside one."""
    case = GMEM_SMEM_CASES[0]._replace(dtype="float16", rows=8, cols=64, smem="swizzle(0, 3, 3)")
    table = table_of(ldgsts_cell(case))
    assert "elem_bits=16" in table
    assert "the swizzle chunk of S (1 elements, 2 B) caps a vector below 4 B" in table


# ----------------------------------------------------------------------------- predicates
def test_shared_to_global_is_rejected():
    src = ldgsts_cell(FP32).replace("wg.copy_async S <- A", "wg.copy S <- A").replace(
        "wg.copy B <- S", "wg.copy_async B <- S")
    assert ("storage_scope: unsupported memory scopes src=shared dst=global; allowed: global->shared"
            in table_of(src))


def test_region_not_divisible_by_the_scope_is_rejected():
    case = GMEM_SMEM_CASES[0]._replace(scope="warp", threads=32, rows=4, cols=6, dtype="float32")
    assert "divides_thread_cnt: region size 24 not divisible by thread_cnt=32" in table_of(ldgsts_cell(case))


def test_dtype_mismatch_fails_validate_copy_op():
    src = ldgsts_cell(FP32).replace("shared S: float32", "shared S: int32").replace(
        "wg.copy B <- S\ncheck B == A\n", "")
    assert "validate_copy_op: dtype mismatch: dst S is int32, src A is float32" in table_of(src)


def test_target_before_sm_80_is_rejected():
    rec_table = table_of(ldgsts_cell(FP32), arch="sm_75")
    assert "sm_version: cp.async needs sm_80 or newer; the target is sm_75" in rec_table
    for arch in ("sm_80", "sm_90a", "sm_100a"):
        assert ldgsts.sm_version_ok(*op_ctx(ldgsts_cell(FP32), arch)) == (True, None)


def test_non_cuda_target_and_unknown_scope_are_rejected():
    op, ctx = op_ctx(ldgsts_cell(FP32))
    assert ldgsts.target_ok(op, ctx) == (True, None)
    assert ldgsts.target_ok(op, dataclasses.replace(ctx, target=D.TargetSpec("opencl", "sm_90a"))) == \
        (False, "non-cuda target")
    row = D._judge(LDGSTS, op, dataclasses.replace(ctx, scope_kind="cluster"))
    assert "exec_scope: unsupported exec_scope cluster (needs thread or warp or warpgroup or cta)" in row.reasons


@pytest.mark.parametrize("scope,threads,guard,why", [
    ("warp", 64, ir.Bin("<", ir.ThreadVar("laneid"), ir.Const(16)),
     "laneid narrowed to [0, 16) vs full [0, 32) in warp 0 under `if laneid < 16`"),
    ("wg", 256, ir.Bin("<", ir.ThreadVar("tx"), ir.Const(64)),
     "tid_in_wg narrowed to [0, 64) vs full [0, 128) in warpgroup 0 under `if tx < 64`"),
    ("cta", 128, ir.Bin("==", ir.ThreadVar("tx"), ir.Const(0)),
     "tx narrowed to [0, 1) vs full [0, 128) in cta 0 under `if tx == 0`"),
    ("warp", 64, ir.Bin("!=", ir.ThreadVar("laneid"), ir.Const(5)),
     "laneid narrowed to 31 of its 32 threads vs full [0, 32) in warp 0 under `if laneid != 5`"),
    ("warp", 64, ir.Bin("==", ir.ThreadVar("warpid"), ir.Const(1)), None),  # warp 1, whole
    ("wg", 256, ir.Bin("==", ir.ThreadVar("wgid"), ir.Const(1)), None),  # warpgroup 1, whole
    ("thread", 64, ir.Bin("==", ir.ThreadVar("tx"), ir.Const(0)), None),  # one thread issues it all
    ("cta", 128, None, None),
])
def test_all_threads_of_each_executing_scope_must_be_active(scope, threads, guard, why):
    """A guard that cuts a warp/warpgroup/CTA would leave the idle threads' share of the split uncopied."""
    rows = 4 if scope in ("thread", "warp") else 32
    case = FP32._replace(scope=scope, threads=threads, rows=rows, cols=32)
    op, ctx = op_ctx(ldgsts_cell(case), guard=guard)
    ok, reason = ldgsts.all_threads_active(op, ctx)
    assert ok == (why is None)
    if why:
        assert reason.startswith(why) and "would never be copied" in reason


def test_a_cta_that_ends_inside_a_warp_is_not_all_active():
    op, ctx = op_ctx(ldgsts_cell(FP32._replace(scope="warp", threads=32, rows=4, cols=32)))
    ok, reason = ldgsts.all_threads_active(op, dataclasses.replace(ctx, threads=48))
    assert not ok and reason.startswith("laneid narrowed to [0, 16) vs full [0, 32) in warp 1 (the CTA has 48 threads)")


def test_mbar_declines_with_the_tma_variants_named():
    """TVM 0.27 ignores mbar= and emits cp.async (a wait on the barrier then hangs); tilemagic rejects it."""
    bar = ir.Buffer("full", "shared", "uint64", (1,), mbar_count=1)
    op, ctx = op_ctx(ldgsts_cell(FP32), options=[("mbar", bar)])
    ok, reason = ldgsts.no_tma_option(op, ctx, key="mbar")
    assert not ok
    assert reason.startswith("mbar=full: cp.async signals no mbarrier")
    assert "a `wait full` would hang" in reason and "dispatch=tma_auto or tma_explicit" in reason
    assert "TVM 0.27 ignores mbar= here" in reason
    with pytest.raises(DispatchError) as e:  # nothing else takes a G2S copy_async with mbar= (until TMA lands)
        D.run_dispatch(op, ctx)
    assert "no_mbar: mbar=full: cp.async signals no mbarrier" in e.value.details


@pytest.mark.parametrize("key,value,words", [
    ("oob", "zero", "oob=zero is not a cp.async option"),
    ("oob", "nan", "oob=nan is not a cp.async option"),
    ("cache_hint", "evict_first", "cache_hint=evict_first is not taken by ldgsts"),
])
def test_tma_options_decline(key, value, words):
    op, ctx = op_ctx(ldgsts_cell(FP32), options=[(key, value)])
    ok, reason = ldgsts.no_tma_option(op, ctx, key=key)
    assert not ok and reason.startswith(words) and "would drop" in reason
    row = D._judge(LDGSTS, op, ctx)
    assert not row.accepted and f"no_{key}: {words}" in "\n".join(row.reasons)
    others = [r for r in row.reasons if not r.endswith(": ok")]
    assert len(others) == 1  # only that option's row fails
    plain, pctx = op_ctx(ldgsts_cell(FP32))
    assert ldgsts.no_tma_option(plain, pctx, key=key) == (True, None)


def test_dispatch_ldgsts_forced_still_runs_its_predicates():
    src = ldgsts_cell(FP32).replace("wg.copy_async S <- A", "wg.copy_async S <- A dispatch=ldgsts")
    assert run(src, launch="off").dispatch[0].chosen == "ldgsts"
    bad = src.replace("wg.copy_async S <- A", "warp.copy_async S[0:2, 0:3] <- A[0:2, 0:3]")
    assert "divides_thread_cnt: region size 6 not divisible by thread_cnt=32" in table_of(bad)


def test_sass_class_of_cp_async():
    from tilemagic.arch.sass import classify

    assert classify("LDGSTS.E.BYPASS.LTC128B.128") == "cp.async"
    assert classify("LDGDEPBAR") == "cp.async"
