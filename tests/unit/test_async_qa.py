"""QA of the asynchronous copies (issue 13, part F): odd and racy cells against what the PTX ISA says.

Each finding is a cell here: fixed ones as plain regression tests (they failed on the main branch they were found
on), the ones left for the lead as ``xfail(strict=True)``.  The cells that were right stand beside them, so a later
change that breaks one of the verdicts shows up here: two phases of one barrier with the parity flipping, a wait
that excludes the producer, a barrier completing two phases in one `arrive`, pipelined cp.async with
``wait_group 1`` / ``2``, cp.async bytes read by a TMA store with and without ``fence.proxy.async``.  Every cell runs
batched and serial (``tilemagic.sim.interpreter.BATCHED``), which must agree.
"""

from __future__ import annotations

import numpy as np
import pytest

import tilemagic
from tilemagic.errors import TileSyntaxError
from tilemagic.ir import nodes as ir
from tilemagic.sim.interpreter import Simulator

from helpers import hazard_messages, run_sim


_run, _msgs = run_sim, hazard_messages


def _cell(*body: str, threads: int = 128, decls: str = "") -> str:
    head = [f"kernel qa threads={threads}", "global A: float16[128, 64] = arange",
            "global B: float16[128, 64] = zeros", "shared S: float16[64, 64] @ swizzle(3, 3, 3)"]
    return "\n".join(head + ([decls] if decls else []) + list(body)) + "\n"


# --------------------------------------------------------------------------------------------- fixed findings
@pytest.mark.parametrize("stmt", ["wait_group", "bulk_wait_group", "if tx == 0: bulk_wait_group"])
def test_a_group_count_past_a_64_bit_ptx_constant_is_a_located_error(stmt):
    # Before: accepted, printed into `cp.async.wait_group 99999999999999999999;`, which ptxas rejects ("Constant
    # overflow"): a kernel that is shown but never builds.  PTX integer constants are 64 bits (PTX ISA 9.0 §4.5.1).
    big = "36893488147419103232"  # 2**65
    src = _cell("commit_group", "bulk_commit_group", f"{stmt} {big}")
    with pytest.raises(TileSyntaxError) as e:
        tilemagic.tilecopy(src, launch="off")
    err = e.value
    assert err.span.line == 7 and err.span.col == len(stmt) + 2
    assert "64-bit PTX constant" in str(err)
    # the largest legal constant still parses and runs (it waits for none of the groups)
    res = _run(_cell("commit_group", f"wait_group {2**64 - 1}"))
    assert res.launch.hb.clean


def test_a_misaligned_small_box_does_not_stop_the_search_for_the_larger_legal_one():
    # Before (main 5358bae): the prefix search declined at its first candidate (box = one 64-byte row of an atom,
    # issues stepping the shared address by 64 B, which the H200 faults on) with `stage=shared-pointer`, and never
    # reached the whole-tile box, which is legal: 32x32 bf16 atoms at 2048-byte steps, 64B swizzle, one issue.
    src = "\n".join([
        "kernel qa threads=128", "global A: bfloat16[32, 512] = arange", "global B: bfloat16[32, 512] = zeros",
        "shared S: bfloat16[32, 256] @ swizzle(3, 2, 3, S[(32, 8, 32) : (32, 1024, 1)])", "mbarrier full count=1",
        "if tx == 0: arrive full expect_tx=auto", "if tx == 0: thread.copy_async S <- A[0:32, 256:512] mbar=full",
        "wait full phase 0", "wg.copy B[0:32, 256:512] <- S", "check B[0:32, 256:512] == A[0:32, 256:512]"]) + "\n"
    for batched in (True, False):
        res = _run(src, batched)
        assert res.dispatch[0].chosen == "tma_auto"
        assert res.launch.passed and res.launch.hb.clean, _msgs(res)
    (copy,) = [s for s in ir.walk(res.kernel.body) if isinstance(s, ir.TmaCopy)]
    tm = copy.tmap
    # the descriptor by hand: dim 0 = the 32 columns of an atom, dim 1 = the 32 rows (1024 B apart), dim 2 = the 16
    # atoms of a row (64 B apart); the tile's 8 atoms start at atom 8; 64B swizzle
    assert (tm.dtype, tm.dims, tm.strides, tm.box, tm.swizzle) == ("BFLOAT16", (32, 32, 16), (1024, 64), (32, 32, 8), 2)
    assert [int(c.value) for c in copy.coords] == [0, 0, 8] and copy.smem_offset == 0
    assert "expect_tx=auto: 16384 B per arriving thread" in res.ir
    # where each element lands, read from PTX ISA 9.0 §5.5 (box-linear, dimension 0 fastest) and §5.5.7 (64B
    # swizzle: address bits [7, 9) XORed into [4, 6)), against the layout's own placement of A[r, 256 + c]
    r, c = np.meshgrid(np.arange(32), np.arange(256), indexing="ij")
    lin = (c % 32) + 32 * r + 1024 * (c // 32)
    a = 2 * lin
    a = a ^ (((a >> 7) & 3) << 4)
    sim = Simulator(res.kernel, res.launch.inputs)
    sim.run()
    got = sim.mem["S"].view(np.uint16)[a // 2]
    want = np.ascontiguousarray(res.launch.inputs["A"]).view(np.uint16).reshape(32, 512)[:, 256:]
    assert np.array_equal(got, want)


# --------------------------------------------------------------------------------------------- left for the lead
_STORE = ("wg.copy S <- A[0:64, :]", "cta_sync", "{fence}", "if tx == 0: thread.copy_async B[64:128, :] <- S",
          "if tx == 0: bulk_commit_group", "if tx == 0: bulk_wait_group 0", "check B[64:128, :] == A[0:64, :]")


def test_a_fence_by_the_issuer_after_the_barrier_orders_every_writer_for_the_tma_store():
    res = _run(_cell(*[s.format(fence="if tx == 0: fence.proxy.async") for s in _STORE]))
    assert res.launch.passed
    assert res.launch.hb.clean, _msgs(res)


def test_a_fence_by_the_issuer_before_the_barrier_orders_only_its_own_writes():
    # thread 0 fences before the cta_sync: the other writers' stores are not yet ordered before its fence
    body = ["wg.copy S <- A[0:64, :]", "if tx == 0: fence.proxy.async", "cta_sync",
            *_STORE[3:]]
    msgs = _msgs(_run(_cell(*body)))
    assert any("async-proxy read of generic writes on S" in m and "thread 0 wrote" not in m for m in msgs), msgs


def test_no_fence_at_all_before_the_tma_store_is_flagged():
    # the broken neighbour of the xfail above: no fence anywhere must stay a hazard
    res = _run(_cell(*[s for s in _STORE if s != "{fence}"]))
    assert any("async-proxy read of generic writes on S" in m for m in _msgs(res))


@pytest.mark.parametrize("batched", [True, False])
def test_the_same_tma_load_issued_by_two_threads_is_a_race_of_two_tma_copies(batched):
    # (was a strict xfail: the report read "thread 1 writes S[0, 0] ... that the TMA copy writes", as if thread 1
    # made a generic store.)  Each issue is a copy of its own: the race stays, and its message names thread 1's TMA
    # copy; the bytes are identical, so the check passes.
    res = _run(_cell("mbarrier full count=1", "if tx == 0: arrive full expect_tx=auto",
                     "if tx < 2: thread.copy_async S <- A[0:64, :] mbar=full", "wait full phase 0",
                     "wg.copy B[0:64, :] <- S", "check B[0:64, :] == A[0:64, :]"), batched)
    assert "expect_tx=auto: 16384 B per arriving thread" in res.ir  # both boxes are counted, as the GPU runs them
    assert res.launch.passed
    msgs = _msgs(res)
    assert msgs and all(m.startswith("hazard: shared-memory race on S: the TMA copy (mbarrier full) issued by "
                                     "thread 1 writes S[") for m in msgs), msgs
    assert "that the TMA copy (mbarrier full) writes at L7" in msgs[0]


def test_a_generic_store_into_a_tma_destination_in_flight_keeps_its_wording():
    # the neighbour: a thread's own store into the box while it is in flight is not worded as a TMA copy
    res = _run(_cell("mbarrier full count=1", "if tx == 0: arrive full expect_tx=auto",
                     "if tx == 0: thread.copy_async S <- A[0:64, :] mbar=full", "wg.copy S <- A[64:128, :]",
                     "wait full phase 0"))
    msgs = [m for m in _msgs(res) if "race on S" in m]
    assert msgs and all("issued by" not in m and ": thread " in m for m in msgs), msgs


# --------------------------------------------------------------------------------------------- cells that were right
_TWO_PHASES = ("mbarrier full count=1",
               "if tx == 0: arrive full expect_tx=auto",
               "if tx == 0: thread.copy_async S <- A[0:64, :] mbar=full",
               "wait full phase 0",
               "wg.copy B[0:64, :] <- S",
               "cta_sync",
               "if tx == 0: arrive full expect_tx=auto",
               "if tx == 0: thread.copy_async S <- A[64:128, :] mbar=full",
               "wait full phase {p}",
               "wg.copy B[64:128, :] <- S",
               "check B == A")


@pytest.mark.parametrize("batched", [True, False])
def test_two_phases_of_one_barrier_with_the_parity_flipping(batched):
    ok = _run(_cell(*[s.format(p=1) for s in _TWO_PHASES]), batched)
    assert ok.launch.passed and ok.launch.hb.clean, _msgs(ok)
    # the second wait on parity 0 passes at once (the barrier's current phase has parity 1): a read in flight
    bad = _run(_cell(*[s.format(p=0) for s in _TWO_PHASES]), batched)
    assert any("before its mbarrier full phase 1 completed" in m and "at L14" in m for m in _msgs(bad)), _msgs(bad)
    # without the cta_sync the second TMA load overwrites what other threads still read (write after read)
    racy = _run(_cell(*[s.format(p=1) for s in _TWO_PHASES if s != "cta_sync"]), batched)
    assert any("write after read" in m for m in _msgs(racy)), _msgs(racy)


def test_waiters_that_exclude_the_producer_order_it_through_the_cta_sync():
    src = _cell("mbarrier full count=1", "if tx == 0: arrive full expect_tx=auto",
                "if tx == 0: thread.copy_async S <- A[0:64, :] mbar=full", "if warpid >= 1: wait full phase 0",
                "cta_sync", "wg.copy B[0:64, :] <- S", "check B[0:64, :] == A[0:64, :]")
    res = _run(src)
    assert res.launch.passed and res.launch.hb.clean, _msgs(res)
    # with nobody waiting, the cta_sync orders nothing after the TMA bytes
    res = _run(src.replace("if warpid >= 1: wait full phase 0\n", ""))
    assert any("before its mbarrier full phase 0 completed" in m for m in _msgs(res)), _msgs(res)


def test_one_arrive_of_a_warp_completing_two_phases_hangs_a_parity_0_wait():
    # count=16, 32 arriving threads: phases 0 and 1 complete, the current phase (2) has parity 0 again, so
    # `try_wait.parity 0` never returns (PTX ISA 9.0 §9.7.13.15.16)
    src = "\n".join(["kernel qa threads=64", "global A: float32[32] = arange", "global B: float32[32] = zeros",
                     "shared S: float32[32]", "mbarrier ready count=16", "if warpid == 0: warp.copy S <- A",
                     "if warpid == 0: arrive ready", "if warpid == 1: wait ready phase 0",
                     "if warpid == 1: warp.copy B <- S", "check B == A"]) + "\n"
    res = _run(src)
    hang = res.launch.hb.hang
    assert hang is not None and "it completed 2 phases" in hang.message and "threads 32-63 wait at L8" in hang.message
    assert any("completes 2 phases of mbarrier ready" in m for m in _msgs(res))
    assert not res.launch.passed


_PIPE = ("wg.copy_async S0 <- A[0:32, :]", "commit_group", "wg.copy_async S1 <- A[32:64, :]", "commit_group",
         "wait_group 1", "cta_sync", "wg.copy B[0:32, :] <- S0", "wg.copy_async S2 <- A[64:96, :]", "commit_group",
         "wait_group {n}", "cta_sync", "wg.copy B[32:64, :] <- S1", "wait_group 0", "cta_sync",
         "wg.copy B[64:96, :] <- S2", "check B == A")


def _pipe(n: int) -> str:
    head = ["kernel qa threads=128", "global A: float32[96, 32] = arange", "global B: float32[96, 32] = zeros",
            "shared S0: float32[32, 32]", "shared S1: float32[32, 32]", "shared S2: float32[32, 32]"]
    return "\n".join(head + [s.format(n=n) for s in _PIPE]) + "\n"


@pytest.mark.parametrize("batched", [True, False])
def test_pipelined_cp_async_with_wait_group_1_and_the_one_that_waits_too_little(batched):
    ok = _run(_pipe(1), batched)
    assert ok.launch.passed and ok.launch.hb.clean, _msgs(ok)
    bad = _run(_pipe(2), batched)  # S1's group may still be pending at its read
    assert any("S1" in m and "covering `wait_group` returned" in m for m in _msgs(bad)), _msgs(bad)
    assert not bad.launch.passed


def test_cp_async_bytes_read_by_a_tma_store_need_the_proxy_fence():
    # cp.async is a generic-proxy write (PTX ISA 9.0 §9.7.9.25.2 lists only the bulk forms as async proxy)
    body = ["wg.copy_async S <- A[0:64, :]", "commit_group", "wait_group 0", "cta_sync",
            "if tx == 0: thread.copy_async B[64:128, :] <- S", "if tx == 0: bulk_commit_group",
            "if tx == 0: bulk_wait_group 0", "check B[64:128, :] == A[0:64, :]"]
    res = _run(_cell(*body))
    assert any("async-proxy read of generic writes on S" in m for m in _msgs(res)), _msgs(res)
    fenced = body[:3] + ["fence.proxy.async"] + body[3:]
    res = _run(_cell(*fenced))
    assert res.launch.passed and res.launch.hb.clean, _msgs(res)
