"""A new user's findings on tcgen05.cp (issue 14, fixD): the messages of the language, the planner and the simulator.

Each test fails on the main of before the fix: an option the smem->tmem variant dropped silently (mbar= ...), a
``thread.copy_async`` every thread issues, a hint for 64 rows whatever the rows, a commit by every thread of a
count-1 barrier, a fresh barrier's wait on phase 1 that nothing named, a hang that did not name the uncommitted copy,
decline and hazard wording (``rows of 128 B of 16-bit elements``, candidates that cannot hold the rows, ``TMEM race
on T``, ``shape=`` with swapped factors) and a tcgen05.cp over TMEM a tcgen05.ld may still read (PTX ISA 9.0
§9.7.16.8.5).  The cells are new ones (not the user's).
"""

from __future__ import annotations

import re

import pytest

import tilemagic
from tilemagic.errors import DispatchError, TileSyntaxError, TileTypeError

from cells import TMA_CELLS, cp_cell
from helpers import hazard_messages, run_sim


def _cell(*, dt: str = "float16", rows: int = 128, cols: int = 64, shared: str = " @ swizzle(3, 3, 3)",
          tmem: str = "", issue: str = "if tx == 0: thread.copy_async T <- S",
          commit: str = "if tx == 0: tcgen05.commit full", wait: str = "wait full phase 0",
          pre_cp: str = "", post_wait: str = "") -> str:
    """A 128-thread round trip A -> S -> (tcgen05.cp) T -> r -> B through mbarrier ``full``; lines: 1 kernel ..
    7 mbarrier, 8 fill, 9 fence, 10 cta_sync, then ``pre_cp`` lines, the issue, the commit, the wait."""
    lines = ["kernel fixd threads=128", f"global A: {dt}[{rows}, {cols}] = arange",
             f"global B: {dt}[{rows}, {cols}] = zeros", f"shared S: {dt}[{rows}, {cols}]{shared}",
             f"tmem   T: {dt}[{rows}, {cols}]{tmem}",
             f"local  r: {dt}[128, {cols}] @ S[(128, {cols}) : (1@tid_in_wg, 1)]", "mbarrier full count=1",
             "wg.copy S <- A", "fence.proxy.async", "cta_sync", *pre_cp.splitlines(), issue, commit, wait,
             *post_wait.splitlines()]
    return "\n".join(ln for ln in lines if ln) + "\n"


_READ = "tcgen05.fence::after_thread_sync\nwg.copy_async r <- T\nwait ld\nwg.copy B <- r\ncheck B == A"


def _declined_row(err: DispatchError) -> str:
    row = next(c for c in err.records[0].candidates if c.variant == "smem->tmem")
    assert row.declined, row
    return str(row.declined)


# ----------------------------------------------------------------------------- 4. options tcgen05.cp has no operand for
@pytest.mark.parametrize("opt,needle", [
    ("mbar=full", "tcgen05.cp takes no mbar=: its completion is the issuing thread's `tcgen05.commit full`"),
    ("oob=zero", "no out-of-bounds fill (oob= is TMA's): drop oob="),
    ("cache_hint=evict_last", "takes no cache hint"),
    ("cta_mask=0b1", "no multicast to CTAs"),
    ("use_tma_reduce=add", "does not reduce"),
])
def test_an_option_of_other_copies_is_declined_not_dropped(opt, needle):
    src = _cell(issue=f"if tx == 0: thread.copy_async T <- S {opt}", post_wait=_READ)
    with pytest.raises(DispatchError) as ei:
        tilemagic.tilecopy(src, launch=None)
    assert ei.value.span.line == 11
    why = _declined_row(ei.value)
    assert needle in why and "TVM 0.27 ignores a config key it does not read" in why, why


# ----------------------------------------------------------------------------- 7. a thread.copy_async more threads run
@pytest.mark.parametrize("issue,needle", [
    ("thread.copy_async T <- S", "every thread of the CTA would issue these tcgen05.cp (no guard elects one"),
    ("if tx < 2: thread.copy_async T <- S", "2 threads (`if tx < 2`) would issue these tcgen05.cp"),
])
def test_more_than_one_issuing_thread_is_declined(issue, needle):
    with pytest.raises(DispatchError) as ei:
        tilemagic.tilecopy(_cell(issue=issue, post_wait=_READ), launch=None)
    why = _declined_row(ei.value)
    assert needle in why and "write `if tx == 0: thread.copy_async T <- S`" in why, why


def test_one_elected_thread_other_than_zero_issues():
    res = run_sim(_cell(issue="if tx == 65: thread.copy_async T <- S", commit="if tx == 65: tcgen05.commit full",
                        post_wait=_READ))
    assert res.launch.passed and hazard_messages(res) == []


# ----------------------------------------------------------------------------- 5. the hint of a tmem buffer's rows
@pytest.mark.parametrize("rows,needles", [
    (32, ["`@ S[(32, 8) : (1@TLane, 1@TCol)] + R[4 : 32@TLane]` (tcgen05.cp 32x128b.warpx4)", "datapath(G)"]),
    (4, ["`@ S[(4, 8) : (32@TLane, 1@TCol)]` (tcgen05.cp 4x256b)"]),
    (64, ["datapath(F, sub_slab=0)", "R[2 : 64@TLane]` (tcgen05.cp 64x128b.warpx2::02_13)",
          "`@ S[(2, 32, 8) : (64@TLane, 1@TLane, 1@TCol)] + R[2 : 32@TLane]` (tcgen05.cp 64x128b.warpx2::01_23)"]),
])
def test_the_layout_hint_fits_the_rows(rows, needles):
    with pytest.raises(TileTypeError) as ei:
        tilemagic.tilecopy(f"kernel k threads=128\ntmem T: float32[{rows}, 8]\n", launch=None)
    hint = ei.value.hint or ""
    assert hint.startswith(f"for {rows} rows add"), hint
    for n in needles:
        assert n in hint, hint
    if rows != 64:
        assert "64 rows" not in hint


@pytest.mark.parametrize("key", ["4x256b", "64x128b.warpx2::02_13", "64x128b.warpx2::01_23", "32x128b.warpx4"])
def test_the_hinted_layout_copies(key):
    """The cp layout the hint offers, declared on the buffer: the copy dispatches to that shape and lands where the
    cell's checks say (every row in every replica's lanes)."""
    src = cp_cell(key, 0, "float32", force=key.startswith("64x128b"))
    tline = next(ln for ln in src.splitlines() if ln.startswith("tmem   T:"))
    bare = tline.split(" @ ")[0]
    with pytest.raises(TileTypeError) as ei:
        tilemagic.tilecopy(src.replace(tline, bare), launch=None)
    m = re.search(r"`@ ([^`]*)` \(tcgen05\.cp " + re.escape(key) + r"\)", ei.value.hint or "")
    assert m, ei.value.hint
    res = run_sim(src.replace(tline, f"{bare} @ {m.group(1)}"))
    assert res.launch.passed and hazard_messages(res) == []
    rec = next(r for r in res.dispatch if r.chosen == "smem->tmem")
    assert f"tcgen05.cp.cta_group::1.{key} " in rec.emitted.text(), rec.emitted.text()


# ----------------------------------------------------------------------------- 6. a commit by many threads
@pytest.mark.parametrize("commit,who", [
    ("tcgen05.commit full", "all 128 threads"),
    ("if warpid == 1: tcgen05.commit full", "32 threads (`if warpid == 1`)"),
])
def test_a_commit_by_more_threads_than_the_count_is_located(commit, who):
    with pytest.raises(TileTypeError) as ei:
        tilemagic.tilecopy(_cell(commit=commit, post_wait=_READ), launch=None)
    e = ei.value
    assert e.span.line == 12
    assert str(e.message).startswith(f"{who} commit to mbarrier full, a barrier of count 1"), e.message
    assert "only the thread that issued the tcgen05.cp commits: `if tx == 0: tcgen05.commit full`" in (e.hint or "")


def test_commits_as_many_as_the_count_are_accepted():
    """Two issuers, each committing its own copy (into its own buffer), on a barrier of count 2: one phase."""
    src = _cell(issue="if tx == 0: thread.copy_async T <- S\nif tx == 32: thread.copy_async V <- S",
                commit="if tx == 0: tcgen05.commit full\nif tx == 32: tcgen05.commit full",
                post_wait=_READ + "\nwg.copy_async r <- V\nwait ld\nwg.copy B <- r\ncheck B == A")
    src = src.replace("mbarrier full count=1", "mbarrier full count=2").replace(
        "tmem   T: float16[128, 64]\n", "tmem   T: float16[128, 64]\ntmem   V: float16[128, 64]\n")
    res = run_sim(src)
    assert res.launch.passed and hazard_messages(res) == []


# ----------------------------------------------------------------------------- 8. phase 1 of a fresh barrier
def test_a_fresh_barriers_wait_on_phase_1_is_named():
    hz = hazard_messages(run_sim(_cell(wait="wait full phase 1", post_wait=_READ)))
    assert hz[0].startswith("hazard: the wait at L13 on mbarrier full phase 1 returned at once: full had completed "
                            "no phase yet"), hz
    assert "the tcgen05.commit's arrive completes phase 0: `wait full phase 0`" in hz[0]


def test_a_fresh_barriers_wait_on_phase_1_before_a_tma_copy_is_named():
    src = TMA_CELLS["tma_fp16_sw128"].replace("wait full phase 0", "wait full phase 1")
    hz = hazard_messages(run_sim(src))
    assert any(h.startswith("hazard: the wait at L9 on mbarrier full phase 1 returned at once") and
               "the copies' bytes complete phase 0: `wait full phase 0`" in h for h in hz), hz


def test_a_phase_1_wait_with_nothing_to_complete_is_not_a_parity_hazard():
    """The producer's first wait on an "empty" barrier (nothing in flight on it) passes by design."""
    src = _cell(pre_cp="wait empty phase 1", post_wait=_READ).replace(
        "mbarrier full count=1\n", "mbarrier full count=1\nmbarrier empty count=1\n")
    res = run_sim(src)
    assert not any("returned at once" in h for h in hazard_messages(res)), hazard_messages(res)
    assert res.launch.passed


# ----------------------------------------------------------------------------- 9. a hang names the uncommitted cp
def test_a_missing_commit_names_the_copy():
    res = run_sim(_cell(commit="", post_wait=_READ))
    hang = res.launch.hb.hang
    assert hang is not None
    assert ("the tcgen05.cp at L11 has no tcgen05.commit by its issuing thread (thread 0): add "
            "`if tx == 0: tcgen05.commit full` after it") in hang.message, hang.message


# ----------------------------------------------------------------------------- 10, 11, 13, 14. wording
def test_swizzle_decline_speaks_of_rows_and_elements():
    with pytest.raises(DispatchError) as ei:
        tilemagic.tilecopy(_cell(cols=32, post_wait=_READ), launch=None)
    why = _declined_row(ei.value)
    assert "64B swizzle needs swizzle(3, 2, 3) over rows of 64 B of 16-bit elements" in why, why
    assert "16-bit rows" not in why


def test_candidates_that_cannot_hold_the_rows_say_so():
    with pytest.raises(DispatchError) as ei:
        tilemagic.tilecopy(_cell(cols=32, post_wait=_READ), launch=None)
    why = _declined_row(ei.value)
    for key, rows in (("64x128b.warpx2::02_13", 64), ("64x128b.warpx2::01_23", 64), ("32x128b.warpx4", 32)):
        line = next(ln for ln in why.splitlines() if ln.strip().startswith(key + ":"))
        assert f"cannot hold 128 rows (one instruction reads {rows} rows" in line and "R[" not in line, line


def test_a_tmem_race_names_the_buffer():
    hz = hazard_messages(run_sim(_cell(wait="", post_wait=_READ)))
    assert any(h.startswith("hazard: TMEM race on T: thread 0 reads TMEM lane 0 column 0 at L14") for h in hz), hz
    assert not any("race on TMEM" in h for h in hz), hz


def test_a_shape_with_swapped_factors_suggests_the_swap():
    with pytest.raises(TileSyntaxError) as ei:
        tilemagic.tilecopy(_cell(issue="if tx == 0: thread.copy_async T <- S shape=256x128b"), launch=None)
    assert ei.value.hint == "did you mean `shape=128x256b`?"


# ----------------------------------------------------------------------------- QA: a cp over cells an ld still reads
_LD_FIRST = "wg.copy r <- A\nwg.copy_async T <- r\nwait st\ncta_sync\nwg.copy_async r <- T\n"


def test_a_copy_over_cells_a_tcgen05_ld_may_still_read_is_reported():
    src = _cell(pre_cp=_LD_FIRST + "cta_sync", post_wait="wait ld\nwg.copy B <- r\ncheck B == A")
    res = run_sim(src)
    hz = [h for h in res.launch.hb.hazards if h.kind == "ld-write"]
    assert len(hz) == 1, hazard_messages(res)
    h = hz[0]
    assert (h.span.line, h.other_span.line) == (17, 15)
    assert h.message.startswith("hazard: TMEM write after read: the tcgen05.cp at L17 (thread 0) writes TMEM lane 0 "
                                "column 0 that the tcgen05.ld at L15 may still be reading: thread 0 has not run "
                                "`wait ld` since"), h.message
    assert not res.launch.hb.clean


def test_a_copy_after_the_lds_wait_is_clean():
    src = _cell(pre_cp=_LD_FIRST + "wait ld\ncta_sync", post_wait="wg.copy B <- r\ncheck B == A")
    res = run_sim(src)
    assert hazard_messages(res) == [] and res.launch.passed


def test_a_multicast_that_cannot_hold_the_rows_is_a_located_decline():
    """``multicast=warpx4`` leaves one candidate, set aside for its rows: the decline says so, with no place to mark."""
    with pytest.raises(DispatchError) as ei:
        tilemagic.tilecopy(_cell(issue="if tx == 0: thread.copy_async T <- S multicast=warpx4", post_wait=_READ),
                           launch=None)
    assert ei.value.span.line == 11
    row = next(c for c in ei.value.records[0].candidates if c.variant == "smem->tmem")
    assert "32x128b.warpx4: cannot hold 128 rows" in str(row.declined) and row.detail is None
