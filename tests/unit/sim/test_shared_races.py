"""Shared-memory races: the simulator runs ops in program order, so a missing ``cta_sync`` between
a shared-memory write by one thread and a read by another still gives the right numbers there.
It records the last writer of each shared byte per barrier interval and reports such reads as
``hazard:`` warnings (found by QA: these cells used to PASS silently)."""

import warnings

import pytest

import tilemagic
from cells import fallback_cell, smem_cell


def _first_sync_dropped(src):
    """A tests/cells.py cell without its first cta_sync: S <- A at L9, a <- S at L10."""
    return src.replace("cta_sync\n", "", 1)


# gmem_smem writes S, ldmatrix reads other threads' rows
LDMATRIX_RACE = _first_sync_dropped(smem_cell("S[(4, 2, 8, 2, 4, 2) : (1@wid_in_wg, 2, 4@laneid, 4, 1@laneid, 1)]",
                                              64, 16, "wg", 128, "float16"))
# gmem_smem writes row-major chunks, reg reads a transposed split
REG_RACE = _first_sync_dropped(smem_cell("S[(8, 128) : (1, 1@tid_in_wg)]", 128, 8, "wg", 128, "float32"))

FALLBACK_RACE = """kernel k threads=32
global A: float32[4, 8]
global B: float32[4, 6]
shared S: float32[4, 8]
warp.copy S <- A
warp.copy B <- S[:, 0:6]
check B == A[:, 0:6]"""


def _hazards(src):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = tilemagic.tilecopy(src, launch="sim")
    return res, [w for w in res.warnings if w.startswith("hazard: shared-memory race")]


@pytest.mark.parametrize("src,reader,buf,wline,rline", [
    (LDMATRIX_RACE, "ldstmatrix", "S", 9, 10),
    (REG_RACE, "reg", "S", 9, 10),
    (FALLBACK_RACE, "fallback", "S", 5, 6),   # gmem_smem by 32 lanes, then the fallback's elected lane reads it all
])
def test_missing_cta_sync_between_threads_is_a_hazard(src, reader, buf, wline, rline):
    res, haz = _hazards(src)
    assert [d.chosen for d in res.dispatch][:2] == ["gmem_smem", reader]
    assert res.launch.passed  # the simulator's schedule still moves the data ...
    assert len(haz) == 1, res.warnings  # ... but says the kernel races
    assert f"race on {buf}:" in haz[0] and f"at L{rline} " in haz[0] and f"wrote at L{wline} " in haz[0]
    assert f"add `cta_sync` after L{wline}" in haz[0]
    with pytest.warns(UserWarning, match="shared-memory race"):  # shown like the other hazards
        tilemagic.tilecopy(src, launch="sim")


@pytest.mark.parametrize("src,sync_before", [(LDMATRIX_RACE, "wg.copy a <- S"), (REG_RACE, "wg.copy a <- S"),
                                             (FALLBACK_RACE, "warp.copy B <- S[:, 0:6]")])
def test_cta_sync_removes_the_hazard(src, sync_before):
    res, haz = _hazards(src.replace(sync_before, "cta_sync\n" + sync_before))
    assert res.launch.passed and not haz


def _unsynced(scope, threads, rows, cols, reader=None):
    """tests/cells.py's global -> shared -> global cell without its cta_sync (S <- A at L6, B <- S at L7)."""
    src = fallback_cell(scope, threads, rows, cols).replace("cta_sync\n", "")
    return src.replace(f"{scope}.copy B <- S", f"{reader}.copy B <- S") if reader else src


def test_a_thread_reading_its_own_writes_needs_no_barrier():
    # the same [outer, threads, vec] split both ways: every thread reads back exactly what it wrote
    res, haz = _hazards(_unsynced("warp", 32, 4, 8))
    assert [d.chosen for d in res.dispatch] == ["gmem_smem", "gmem_smem"] and not haz
    # one elected lane per warp writes and reads the same values (TVM's fallback in two warps)
    res, haz = _hazards(_unsynced("warp", 64, 4, 6))
    assert [d.chosen for d in res.dispatch] == ["fallback", "fallback"] and not haz


def test_writes_by_several_elected_threads_still_race_with_other_readers():
    # both warps' lane 0 store the same tile (TVM's fallback), then every thread reads all of it
    src = _unsynced("warp", 64, 4, 6, reader="thread")
    res, haz = _hazards(src)
    assert [d.chosen for d in res.dispatch] == ["fallback", "gmem_smem"]
    assert len(haz) == 1 and "thread 1 reads" in haz[0] and "that thread 0 wrote at L6" in haz[0]
    res, haz = _hazards(src.replace("thread.copy", "cta_sync\nthread.copy"))
    assert not haz
