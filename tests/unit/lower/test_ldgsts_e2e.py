"""End-to-end ldgsts cells: the caller's ``commit_group`` / ``wait_group`` / ``cta_sync`` around the copy, run in
the simulator, and a copy with ``mbar=`` that ldgsts must leave to the TMA variants.

The planner's rules themselves are tested below the language and the simulator, in tests/unit/lower/test_ldgsts.py.
"""

from __future__ import annotations

import pytest
from cells import EPC, GMEM_SMEM_CASES, ldgsts_committed_cell
from helpers import run


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
    return ldgsts_committed_cell(case, "ldg_e2e")


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
    rec = run(src, launch="off").dispatch[0]
    table = rec.table()
    assert rec.chosen == "tma_auto"
    assert "ldgsts" in table and "no_mbar: mbar=full: cp.async signals no mbarrier" in table
