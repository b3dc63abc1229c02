"""QA of the cluster simulator (issue 13, second milestone): findings F1, F3, F4, F5, F10, F11.

Every finding is a cell written as text and run through ``tilemagic.tilecopy(src, launch="sim")``; each was wrong on
the ``main`` it was found on (a false PASS, a false hazard, a hint that cannot work, a timeline that counts one
issue several times, a message naming the wrong kind of copy), and beside each stands the cell that must stay as it
is.  Every cell runs batched and serial (``tilemagic.sim.interpreter.BATCHED``), which must agree.
"""

from __future__ import annotations

import numpy as np
import pytest

from tilemagic.cli import demo_source
from tilemagic.widgets.placement import async_timeline

from helpers import hazard_messages, run_sim


_run, _msgs = run_sim, hazard_messages


def _both(src: str) -> list[str]:
    """The hazard messages of ``src``, the same batched and serial."""
    a, b = _msgs(_run(src, True)), _msgs(_run(src, False))
    assert a == b
    return a


def _lines(*body: str) -> str:
    return "\n".join(body) + "\n"


# --------------------------------------------------------------------------------------------- F1: dsmem sources
_DSMEM_HEAD = ("kernel src threads=128 cluster=2",
               "global A: float32[2, 32, 16] = arange",
               "global B: float32[32, 16] = zeros",
               "shared S: float32[32, 16]",
               "shared R: float32[32, 16]",
               "mbarrier got count=1",
               "wg.copy S <- A[cta_rank, 0:32, 0:16]",        # L7
               "fence.proxy.async",
               "cluster_sync",                                 # L9
               "if tx == 0 and cta_rank == 1: arrive got expect_tx=auto",
               "if tx == 0 and cta_rank == 0: thread.copy_async R <- S remote_cta_id=cta_rank^1 mbar=got",  # L11
               )


def _dsmem_then(*tail: str) -> str:
    return _lines(*_DSMEM_HEAD, "cta_sync",                                  # L12
                  "if cta_rank == 1: wait got phase 0",                      # L13
                  "if cta_rank == 1: wg.copy B <- R",                        # L14
                  *tail)


def test_overwriting_a_dsmem_source_after_a_cta_sync_is_a_hazard_at_both_lines():
    # Before: clean and PASS.  CTA 0's copy completes only on CTA 1's mbarrier: the cta_sync orders CTA 0's
    # threads after the issue, not after the copy's read of S (PTX ISA 9.0 §9.7.9.25.4.1).
    src = _dsmem_then("wg.copy S <- A[1, 0:32, 0:16]",                       # L15
                      "cluster_sync",
                      "check B == A[0, :, :]")
    res = _run(src)
    assert res.launch.checks[0].passed  # (the simulator's schedule moved the right bytes: the hazard is the news)
    hz = [h for h in res.launch.hb.hazards if h.span is not None and h.span.line == 15]
    assert hz, _msgs(res)
    h = hz[0]
    assert h.other_span is not None and h.other_span.line == 11 and h.buffer == "S@cta0"
    assert ("CTA 0 thread 0's dsmem copy (L11) may still be reading: its completion is observed only by CTA 1's "
            "wait at L13") in h.message, h.message
    assert "cluster_sync" in h.message
    assert _both(src) == _msgs(res)


def test_a_dsmem_source_written_after_the_waiters_cluster_sync_is_clean():
    src = _dsmem_then("cluster_sync",                                        # L15
                      "wg.copy S <- A[1, 0:32, 0:16]",
                      "cluster_sync",
                      "check B == A[0, :, :]")
    res = _run(src)
    assert res.launch.hb.clean, _msgs(res)
    assert res.launch.passed


def test_the_dsmem_source_read_is_not_ordered_by_the_issuers_own_barrier_wait():
    # the issuing CTA waits on its own mbarrier (for the copy into it): that says nothing of its outbound copy
    demo = demo_source("dsmem_exchange").splitlines()
    at = next(i for i, ln in enumerate(demo) if ln.startswith("wait got phase 0"))
    bad = "\n".join(demo[:at + 1] + ["cta_sync", "wg.copy S <- A[cta_rank^1, 0:64, 0:32]"] + demo[at + 1:]) + "\n"
    msgs = _both(bad)
    hits = [m for m in msgs if "dsmem copy" in m and "may still be reading" in m]
    assert hits, msgs
    assert all("cluster_sync" in m for m in hits)
    # both CTAs overwrite a source their own wait says nothing about
    assert any("S@cta0" in m for m in hits) and any("S@cta1" in m for m in hits)
    # the demo itself is clean, and so is the edit with a cluster_sync in place of the cta_sync
    assert _both(demo_source("dsmem_exchange")) == []
    good = "\n".join(demo[:at + 1] + ["cluster_sync", "wg.copy S <- A[cta_rank^1, 0:64, 0:32]"] + demo[at + 1:])
    assert _both(good + "\n") == []


def test_following_the_cta_sync_hint_of_the_same_cta_race_leads_to_the_cross_cta_hazard():
    # without the cta_sync the write races with the issuing thread's read at the issue (same CTA: cta_sync); with
    # it, the copy's read is still unordered (only cluster_sync can order it), never a clean kernel
    no_sync = _lines(*_DSMEM_HEAD, "if cta_rank == 1: wait got phase 0", "wg.copy S <- A[1, 0:32, 0:16]",
                     "cluster_sync")
    msgs = _both(no_sync)
    war = [m for m in msgs if "write after read" in m and "thread 0 read at L11" in m]
    assert war and "add `cta_sync` after L11" in war[0], msgs
    with_sync = _lines(*_DSMEM_HEAD, "if cta_rank == 1: wait got phase 0", "cta_sync",
                       "wg.copy S <- A[1, 0:32, 0:16]", "cluster_sync")
    msgs = _both(with_sync)
    assert any("may still be reading" in m and "cluster_sync" in m for m in msgs), msgs


def test_tma_multicast_demo_stays_clean():
    assert _both(demo_source("tma_multicast")) == []


# --------------------------------------------------------------------------------------------- F3: reductions
def _reduce(op: str = "add", tail: tuple[str, ...] = (), who: str = "tx == 0", cluster: int = 2) -> str:
    return _lines(f"kernel rd threads=128 cluster={cluster}",
                  "global A: int32[2, 32, 32] = arange",
                  "global B: int32[32, 32] = arange",
                  "shared S: int32[32, 32]",
                  "shared T: int32[32, 32]",
                  "wg.copy S <- A[cta_rank, :, :]",
                  "fence.proxy.async",
                  "cta_sync",
                  f"if {who}: thread.copy_async B <- S use_tma_reduce={op}",   # L9
                  f"if {who}: bulk_commit_group",
                  f"if {who}: bulk_wait_group 0",                             # L11
                  *tail)


def test_two_ctas_reducing_into_the_same_global_bytes_do_not_race():
    # Before: async-write / write-after-write hazards between the two CTAs' reductions.  Each element is an atomic
    # read-modify-write (PTX ISA 9.0 §9.7.9.25.5.3): the two reductions commute.
    res = _run(_reduce())
    assert res.launch.hb.clean, _msgs(res)
    A = np.arange(2 * 32 * 32, dtype=np.int32).reshape(2, 32, 32)
    np.testing.assert_array_equal(res.launch.outputs["B"], np.arange(32 * 32, dtype=np.int32).reshape(32, 32) + A[0] + A[1])
    assert _both(_reduce()) == []


def test_two_threads_of_one_cta_reducing_the_same_bytes_do_not_race():
    res = _run(_reduce(who="tx < 2", cluster=1).replace("A[cta_rank, :, :]", "A[0, :, :]"))
    assert res.launch.hb.clean, _msgs(res)
    A0 = np.arange(32 * 32, dtype=np.int32).reshape(32, 32)
    np.testing.assert_array_equal(res.launch.outputs["B"], 3 * A0)


def test_different_reductions_into_the_same_bytes_still_race():
    src = _reduce().replace("use_tma_reduce=add", "use_tma_reduce={op}")
    src = src.replace("if tx == 0: thread.copy_async B <- S use_tma_reduce={op}",
                      "if tx == 0 and cta_rank == 0: thread.copy_async B <- S use_tma_reduce=add\n"
                      "if tx == 0 and cta_rank == 1: thread.copy_async B <- S use_tma_reduce=max")
    msgs = _both(src)
    assert msgs, "an add and a max into one element do not commute"


@pytest.mark.parametrize("reader", ["", "if cta_rank == 0: ", "if cta_rank == 1: "])
def test_a_plain_read_after_both_reductions_needs_a_cluster_sync(reader):
    # each CTA reads B right after its own wait (L12): neither is ordered after the other CTA's reduction — the
    # reader's own reduction landing last (CTA 1's, in the simulator's schedule) included
    msgs = _both(_reduce(tail=(f"{reader}wg.copy T <- B",)))
    raw = [m for m in msgs if "read after write" in m]
    assert len(msgs) == 1 and len(raw) == 1, msgs
    assert "race on B" in raw[0] and "at L12 that" in raw[0] and "add `cluster_sync` after L11" in raw[0]
    who, other = ("CTA 1", "CTA 0") if reader.endswith("1: ") else ("CTA 0", "CTA 1")
    assert f"{who} thread 0 reads B[0, 0] at L12 that {other} thread 0 wrote at L11" in raw[0], raw
    assert _both(_reduce(tail=("cluster_sync", f"{reader}wg.copy T <- B"))) == []


def test_a_plain_store_racing_a_reduction_is_still_flagged():
    src = _reduce(tail=("if cta_rank == 1: wg.copy B <- S",))
    msgs = _both(src)
    assert any("write after write" in m for m in msgs), msgs


# --------------------------------------------------------------------------------------------- F4: hints
def test_a_race_between_two_ctas_hints_cluster_sync():
    src = _lines("kernel x threads=128 cluster=2",
                 "global A: float32[32, 16] = arange",
                 "global B: float32[32, 16] = zeros",
                 "if cta_rank == 0: wg.copy B <- A",   # L4
                 "if cta_rank == 1: wg.copy A <- B")   # L5
    msgs = _both(src)
    cross = [m for m in msgs if "CTA 1" in m and "CTA 0" in m and "race on" in m]
    assert cross, msgs
    assert all("add `cluster_sync` after L4" in m and "add `cta_sync`" not in m for m in cross), cross
    # a race inside one CTA keeps its hint
    one = _lines("kernel x threads=128 cluster=2",
                 "global A: float32[32, 16] = arange",
                 "global B: float32[2, 32, 16] = zeros",
                 "shared S: float32[32, 16]",
                 "wg.copy S <- A",
                 "if tx == 0: thread.copy B[cta_rank, :, :] <- S",
                 "cluster_sync")
    msgs = _both(one)
    assert msgs and all("add `cta_sync` after L5" in m for m in msgs if "race on" in m), msgs


# --------------------------------------------------------------------------------------------- F5: timeline
def test_a_multicast_is_one_issue_in_the_timeline_with_a_landing_per_receiving_cta():
    res = _run(demo_source("tma_multicast"))
    tl = res.launch.hb.timeline
    issues = [e for e in tl if e.kind == "tma.issue"]
    assert len(issues) == 2  # one per issuing CTA (before: one per issue and receiving CTA, 4)
    assert all(e.info.get("cta_mask") == 0b11 for e in issues)
    landings = [e for e in tl if e.kind == "tma.complete"]
    assert len(landings) == 4 and sorted(e.cta for e in landings) == [0, 0, 1, 1]
    pic = async_timeline(res.launch.hb, res.kernel.threads, res.kernel.cluster)
    assert len(pic["copies"]) == 2
    for c in pic["copies"]:
        assert sorted(land["cta"] for land in c["landings"]) == [0, 1]
        assert all(land["wait"] is not None for land in c["landings"])
    assert "timeline: 2 copy issue(s)" in res.text()


def test_a_four_cta_multicast_is_one_issue_event():
    src = _lines("kernel mc threads=128 cluster=4",
                 "global A: float16[32, 64] = arange",
                 "global B: float16[4, 32, 64] = zeros",
                 "shared S: float16[32, 64]",
                 "mbarrier full",
                 "if tx == 0: arrive full expect_tx=auto",
                 "if tx == 0 and cta_rank == 0: thread.copy_async S <- A mbar=full cta_mask=0b1111 "
                 "dispatch=tma_auto",
                 "wait full phase 0",
                 "wg.copy B[cta_rank, :, :] <- S",
                 "cluster_sync",
                 "check B[3, :, :] == A")
    res = _run(src)
    assert res.launch.passed and res.launch.hb.clean, _msgs(res)
    issues = [e for e in res.launch.hb.timeline if e.kind == "tma.issue"]
    assert len(issues) == 1
    pic = async_timeline(res.launch.hb, res.kernel.threads, res.kernel.cluster)
    assert len(pic["copies"]) == 1 and sorted(land["cta"] for land in pic["copies"][0]["landings"]) == [0, 1, 2, 3]


# --------------------------------------------------------------------------------------------- F11: over-count
def test_an_over_count_of_a_dsmem_copy_names_the_dsmem_copy():
    src = _lines("kernel oc threads=128 cluster=2",
                 "global A: float32[32, 16] = arange",
                 "global B: float32[32, 16] = zeros",
                 "shared S: float32[32, 16]",
                 "shared R: float32[32, 16]",
                 "mbarrier got count=1",
                 "wg.copy S <- A",
                 "fence.proxy.async",
                 "cluster_sync",
                 "if tx == 0: arrive got expect_tx=1024",
                 "if tx == 0: thread.copy_async R <- S remote_cta_id=cta_rank^1 mbar=got",   # L11
                 "wait got phase 0",
                 "cluster_sync")
    msgs = _both(src)
    over = [m for m in msgs if "complete more bytes" in m]
    assert over and all("the dsmem copies at L11 complete more bytes" in m for m in over), msgs
    assert not any("TMA copies" in m for m in over)


def test_an_over_count_of_a_multicast_names_the_multicast():
    src = _lines("kernel oc threads=128 cluster=2",
                 "global A: float16[32, 64] = arange",
                 "shared S: float16[32, 64]",
                 "mbarrier full",
                 "if tx == 0: arrive full expect_tx=2048",
                 "if tx == 0 and cta_rank == 0: thread.copy_async S <- A mbar=full cta_mask=0b11 dispatch=tma_auto",
                 "wait full phase 0",
                 "cluster_sync")
    msgs = _both(src)
    over = [m for m in msgs if "complete more bytes" in m]
    assert over and all("the TMA multicasts at L6 complete more bytes" in m for m in over), msgs
