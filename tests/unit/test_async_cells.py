"""Asynchronous copies end to end (issue 13): ``%%tilecopy`` cells through parse → dispatch → lowering → the
simulator's completion semantics, each misuse a cell that must be flagged beside the clean one it breaks.

The unit tests of each stage are elsewhere (tests/unit/lang, tests/unit/lower/test_ldgsts.py, test_tma.py,
tests/unit/sim/test_async.py); here the stages meet: the demos PASS clean, and each broken variant of the TMA
demo reports the hazard or the hang at its lines, with checks that are not evaluated after a hang.
"""

from __future__ import annotations

import warnings

import pytest
from cells import CLUSTER_CELLS, TMA_CELLS

import tilemagic
from tilemagic.cli import demo_source


def _run(src: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tilemagic.tilecopy(src, launch="sim", allow_fail=True)


def _hb(res) -> list[str]:
    return [h.message for h in res.launch.hb.hazards]


TMA = demo_source("tma_roundtrip")


@pytest.mark.parametrize("name,variant", [("ldgsts_roundtrip", "ldgsts"), ("tma_roundtrip", "tma_auto"),
                                          ("tcgen05_cp_roundtrip", "smem->tmem")])
def test_async_demos_pass_clean(name, variant):
    res = _run(demo_source(name))
    assert res.launch.passed and all(c.passed for c in res.launch.checks)
    assert res.launch.hb.clean and res.launch.hb.hang is None
    assert variant in [r.chosen for r in res.dispatch]


def test_tma_demo_why_table_and_auto_expect_tx():
    res = _run(TMA)
    g2s = res.dispatch[0]
    assert g2s.chosen == "tma_auto"
    ldgsts = next(c for c in g2s.candidates if c.variant == "ldgsts")
    assert not ldgsts.accepted and any(r.startswith("no_mbar: mbar=full") for r in ldgsts.reasons)
    assert "expect_tx=auto: 8192 B per arriving thread" in res.ir  # one 64x64 fp16 box


def _tma(old: str, new: str) -> str:
    assert old in TMA
    return TMA.replace(old, new)


def test_expect_tx_too_small_is_more_bytes_than_expected_and_hangs():
    res = _run(_tma("expect_tx=auto", "expect_tx=4096"))
    msgs = _hb(res)
    assert res.launch.hb.hang is not None and not res.launch.passed
    assert "8192 bytes arrived, 4096 expected" in res.launch.hb.hang.message
    assert any("complete more bytes than the arrivals' `expect_tx` announced" in m for m in msgs)
    assert all("NOT EVALUATED" in str(c) or not c.passed for c in res.launch.checks)


def test_expect_tx_too_large_would_hang_with_the_missing_bytes():
    res = _run(_tma("expect_tx=auto", "expect_tx=16384"))
    hang = res.launch.hb.hang
    assert hang is not None and hang.span.line == 10
    assert "8192 of 16384 expected bytes never arrive" in hang.message
    assert "threads 0-127 wait at L10" in hang.message
    assert not res.launch.passed


def test_missing_wait_reads_the_tile_before_its_phase_completed():
    res = _run(_tma("wait full phase 0\n", ""))
    msgs = _hb(res)
    assert any("writes at L9, before its mbarrier full phase 0 completed" in m for m in msgs), msgs
    # the bytes were in flight, written by no generic store: no proxy-fence report on top of the race
    assert not any("async-proxy read of generic writes" in m for m in msgs), msgs
    assert not res.launch.passed


def test_wrong_parity_passes_at_once_and_reads_early():
    res = _run(_tma("wait full phase 0", "wait full phase 1"))
    assert any("before its mbarrier full phase 0 completed" in m for m in _hb(res))
    assert not res.launch.passed


def test_unwaited_tma_store_is_reported():
    res = _run(_tma("if tx == 0: bulk_wait_group 0\n", ""))
    assert any("is never waited for" in m for m in _hb(res))


PROXY = """\
kernel proxy threads=128
global A: float16[64, 64] = arange
global B: float16[64, 64] = zeros
shared S: float16[64, 64] @ swizzle(3, 3, 3)
wg.copy S <- A
cta_sync
if tx == 0: thread.copy_async B <- S
if tx == 0: bulk_commit_group
if tx == 0: bulk_wait_group 0
check B == A
"""


def test_tma_store_of_generic_writes_needs_fence_proxy_async():
    bad = _run(PROXY)
    msgs = _hb(bad)
    assert any("async-proxy read of generic writes on S: the TMA store at L7" in m and "wrote at L5" in m
               for m in msgs), msgs
    good = _run(PROXY.replace("cta_sync", "fence.proxy.async\ncta_sync"))
    assert good.launch.hb.clean and good.launch.passed


LDGSTS = demo_source("ldgsts_roundtrip")


def test_ldgsts_wait_group_too_loose_reads_before_completion():
    res = _run(LDGSTS.replace("wait_group 1 ", "wait_group 2 "))
    assert any("before its thread's covering `wait_group` returned" in m for m in _hb(res))
    assert not res.launch.passed


def test_ldgsts_missing_barrier_after_wait_group_is_a_race_between_threads():
    src = LDGSTS.replace("cta_sync                            # ... and every thread's\n", "")
    src = src.replace("wg.copy B[0:32, :] <- S0", "wg.copy B[0:32, :] <- S0 dispatch=fallback")
    res = _run(src)
    assert any("shared-memory race on S0" in m for m in _hb(res))
    clean = _run(LDGSTS.replace("wg.copy B[0:32, :] <- S0", "wg.copy B[0:32, :] <- S0 dispatch=fallback"))
    assert clean.launch.hb.clean


# ----------------------------------------------------------------------------- a hang is not launched on the GPU
def test_auto_launch_refuses_a_kernel_the_simulator_finds_would_hang(monkeypatch):
    """``--launch auto`` with a GPU: a kernel that waits on an mbarrier is simulated first and not launched when it
    would hang (the GPU would spin until the worker's timeout); ``--launch gpu`` launches it anyway."""
    from types import SimpleNamespace

    from tilemagic.errors import LaunchError
    from tilemagic.runtime import worker as rt_worker

    launched = []

    class FakeWorker:
        def probe(self):
            return SimpleNamespace(available=True, reason="fake H200")

        def launch(self, native, emulated, inputs, **kw):
            launched.append(native.text)
            return SimpleNamespace(backend="cupy", mode="native sm_90a", arch="sm_90a", device="fake", timing=None,
                                   outputs={k: v.copy() for k, v in inputs.items()}, compile=None)

    monkeypatch.setattr(rt_worker, "get_worker", lambda: FakeWorker())
    hang = _tma("expect_tx=auto", "expect_tx=16384")
    with pytest.raises(LaunchError, match="not launched on the GPU: the simulator ran the kernel first and it would "
                                          "hang: mbarrier full phase 0 never completes") as e:
        tilemagic.tilecopy(hang, launch="auto")
    assert e.value.span.line == 10 and "--launch gpu launches it anyway" in e.value.hint
    assert not launched
    tilemagic.tilecopy(TMA, launch="auto", allow_fail=True)  # a correct kernel is launched
    assert len(launched) == 1
    tilemagic.tilecopy(hang, launch="gpu", allow_fail=True)  # asked for the GPU: launched anyway
    assert len(launched) == 2


# ----------------------------------------------------------------------------- the cells the GPU runs too
@pytest.mark.parametrize("name", sorted(TMA_CELLS))
def test_tma_cells_round_trip_clean(name):
    res = _run(TMA_CELLS[name])
    assert [r.chosen for r in res.dispatch if r.chosen.startswith("tma")], res.dispatch
    assert res.launch.passed and res.launch.hb.clean, (_hb(res), [str(c) for c in res.launch.checks])


@pytest.mark.parametrize("name", sorted(CLUSTER_CELLS))
def test_cluster_and_edge_cells_round_trip_clean(name):
    """Clusters (multicast, dsmem), boxes past the tensor's edge and reductions: PASS and a clean report in the
    simulator (the GPU suite runs the same cells natively, bit for bit)."""
    res = _run(CLUSTER_CELLS[name])
    assert {r.chosen for r in res.dispatch} & {"tma_auto", "tma_explicit", "dsmem"}, res.dispatch
    assert res.launch.passed and res.launch.hb.clean, (_hb(res), [str(c) for c in res.launch.checks])


def test_waiters_of_a_phase_must_be_ordered_before_the_next_phase_arrive():
    """Two phases of one barrier: without the cta_sync, thread 0 may arrive for phase 1 (and the TMA complete it)
    before the other warps ran their wait for phase 0; they would then wait for phase 2.  The simulator's schedule
    ran the waits first; the report still names the unordered wait, at both lines."""
    src = TMA_CELLS["tma_two_phases"]
    assert _run(src).launch.hb.clean
    res = _run(src.replace("if tx == 0: bulk_wait_group 0 read\ncta_sync\n", "if tx == 0: bulk_wait_group 0 read\n"))
    hz = [h for h in res.launch.hb.hazards if h.kind == "mbarrier-phase-order"]
    assert len(hz) == 1 and hz[0].span.line == 12 and hz[0].other_span.line == 8, [h.message for h in hz]
    assert "is not ordered before the arrive at L12 that completes phase 1" in hz[0].message
    assert "threads 1-127" in hz[0].message
