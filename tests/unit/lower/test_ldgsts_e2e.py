"""End-to-end ldgsts cells: the caller's ``commit_group`` / ``wait_group`` / ``cta_sync`` around the copy, run in
the simulator, and a copy with ``mbar=`` that ldgsts must leave to the TMA variants.

PENDING: these need the commit-group and mbarrier statements (branch wip-lang) and cp.async completion in the
simulator (branch wip-simasync); they are skipped until both are merged, when the mark is removed.  What they
check is covered today, below the language and the simulator, by tests/unit/lower/test_ldgsts.py.
"""

from __future__ import annotations

import pytest
from cells import EPC, GMEM_SMEM_CASES, gmem_smem_cell
from helpers import run

from tilemagic.errors import DispatchError

PENDING = pytest.mark.skip(reason="needs commit_group/wait_group/mbarrier (wip-lang) and cp.async in the simulator "
                                  "(wip-simasync): remove this mark once both are merged")

DEMO = """
kernel ldgsts_e2e threads=128
global A: float32[64, 32] = arange
global B: float32[64, 32] = zeros
shared S: float32[64, 32]
wg.copy_async S <- A
commit_group
wait_group 0
cta_sync
wg.copy B <- S
check B == A
"""


def committed(case) -> str:
    """``gmem_smem_cell`` with its first copy as ``copy_async``, committed and waited for before the barrier."""
    src = gmem_smem_cell(case, "ldg_e2e").replace(f"{case.scope}.copy S <-", f"{case.scope}.copy_async S <-")
    return src.replace("cta_sync\n", "commit_group\nwait_group 0\ncta_sync\n", 1)


def test_round_trip_passes_in_the_simulator():
    res = run(DEMO)
    assert res.dispatch[0].chosen == "ldgsts"
    assert res.launch.passed and not res.launch.hb.hazards


CP_ASYNC_CASES = [c for c in GMEM_SMEM_CASES if c.vec * 4 // EPC[c.dtype] >= 4]  # gmem_smem's vector >= 4 B


@pytest.mark.parametrize("case", CP_ASYNC_CASES, ids=[c.id for c in CP_ASYNC_CASES])
def test_every_ldgsts_case_round_trips(case):
    res = run(committed(case))
    assert res.dispatch[0].chosen == "ldgsts"
    assert res.launch.passed and not res.launch.hb.hazards


def test_reading_the_destination_before_wait_group_is_a_hazard():
    res = run(DEMO.replace("wait_group 0\n", ""), allow_fail=True)
    assert res.launch.hb.hazards


def test_a_copy_with_mbar_is_not_taken_by_ldgsts():
    src = """
kernel ldgsts_mbar threads=128
global A: float16[64, 64] = arange
global B: float16[64, 64] = zeros
shared S: float16[64, 64] @ swizzle(3, 3, 3)
mbarrier full count=1
if tx == 0: arrive full expect_tx=auto
if tx == 0: thread.copy_async S <- A mbar=full
wait full phase 0
wg.copy B <- S
check B == A
"""
    try:
        rec = run(src, launch="off").dispatch[0]
        table = rec.table()
        assert rec.chosen in ("tma_auto", "tma_explicit")
    except DispatchError as e:  # before the TMA variants are merged nothing takes it
        table = e.details
    assert "ldgsts" in table and "no_mbar: mbar=full: cp.async signals no mbarrier" in table
