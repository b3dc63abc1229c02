"""The happens-before model around tcgen05.cp (issue 14, QA fixes): cells a tcgen05.st still has in flight, the
source read of a completed copy, the commit of another thread, the async-proxy reader named.

Each cell is new (not the QA file's) and runs batched and serial (``tilemagic.sim.interpreter.BATCHED``), which
must agree on every hazard (kind and both lines).  The rules: PTX ISA 9.0 §9.7.16.8.5 (``tcgen05.wait::st``),
§9.7.16.6.1 (tcgen05.cp is asynchronous, its completion observed through the commit's mbarrier), §9.7.16.12.1
(a commit covers the copies its own thread issued), §9.7.13.4 and §9.7.16.6 (the async proxy).
"""

from __future__ import annotations

import pytest

from helpers import run_sim


def _cell(body: str) -> str:
    """A 128-thread kernel: A (arange), B and Z (zeros) of ``float32[128, 4]``, an unswizzled shared tile S, TMEM T
    over the same shape, a register tile r (row i in thread i), mbarriers ``done`` and ``more``; ``body`` follows
    from line 11."""
    return "\n".join([
        "kernel cphb threads=128",
        "global A: float32[128, 4] = arange",
        "global B: float32[128, 4] = zeros",
        "global Z: float32[128, 4] = zeros",
        "shared S: float32[128, 4]",
        "tmem   T: float32[128, 4]",
        "local  r: float32[128, 4] @ S[(128, 4) : (1@tid_in_wg, 1)]",
        "mbarrier done count=1",
        "mbarrier more count=1",
        "wg.copy S <- A",                 # L10
    ]) + "\n" + body


_FENCED = "fence.proxy.async\ncta_sync\n"  # L11-12
_READ = "tcgen05.fence::after_thread_sync\nwg.copy_async r <- T\nwait ld\nwg.copy B <- r\ncheck B == A\n"


def _hazards(src: str):
    """(batched result, [(kind, line, other line, message)]); the serial run reports the same."""
    a, b = run_sim(src, True), run_sim(src, False)
    out = [[(h.kind, h.span.line if h.span else 0, h.other_span.line if h.other_span else 0, h.message)
            for h in r.launch.hb.hazards] for r in (a, b)]
    assert [x[:3] for x in out[0]] == [x[:3] for x in out[1]], out
    return a, out[0]


def _line(src: str, text: str) -> int:
    return src.splitlines().index(text) + 1


# ---------------------------------------------------------------- a tcgen05.cp over cells a tcgen05.st has in flight
def test_a_cp_over_cells_of_warps_that_did_not_wait_st_is_a_write_after_write_at_both_lines():
    # every warp stores T; only warp 0 waits before the barrier: lanes 32-127 are still in flight when the cp writes
    src = _cell(_FENCED + "wg.copy r <- Z\nwg.copy_async T <- r\nif warpid == 0: wait st\ncta_sync\n"
                "if tx == 0: thread.copy_async T <- S\nif tx == 0: tcgen05.commit done\nwait st\n"
                "wait done phase 0\n" + _READ)
    st, cp = _line(src, "wg.copy_async T <- r"), _line(src, "if tx == 0: thread.copy_async T <- S")
    res, hz = _hazards(src)
    waw = [h for h in hz if h[0] == "st-write"]
    assert len(waw) == 1 and waw[0][1:3] == (cp, st), hz
    msg = waw[0][3]
    assert "TMEM lane 32 column 0" in msg and "thread 32 has not run `wait st`" in msg, msg
    assert f"add `wait st` after L{st}" in msg, msg
    assert res.launch.passed  # (the simulator's order: the cp's data last; the hazard says it is not the only one)


def test_a_cp_after_every_st_was_waited_for_and_a_barrier_is_clean():
    src = _cell(_FENCED + "wg.copy r <- Z\nwg.copy_async T <- r\nwait st\ncta_sync\n"
                "if tx == 0: thread.copy_async T <- S\nif tx == 0: tcgen05.commit done\nwait done phase 0\n" + _READ)
    res, hz = _hazards(src)
    assert hz == [] and res.launch.passed


def test_a_st_over_cells_the_cp_has_in_flight_stays_flagged():
    # the converse: the cp's cells are in flight until its commit's phase is observed
    src = _cell(_FENCED + "if tx == 0: thread.copy_async T <- S\nif tx == 0: tcgen05.commit done\n"
                "wg.copy r <- Z\nwg.copy_async T <- r\nwait st\nwait done phase 0\n")
    _, hz = _hazards(src)
    st, cp = _line(src, "wg.copy_async T <- r"), _line(src, "if tx == 0: thread.copy_async T <- S")
    assert any(k == "async-write" and (a, b) == (st, cp) and "the tcgen05.cp writes" in m for k, a, b, m in hz), hz


# ---------------------------------------------------------------- the source of a completed copy rewritten
def test_the_source_rewritten_by_threads_that_did_not_wait_is_one_report_naming_the_wait():
    # warps 2-3 wait on another barrier (thread 64 arrives on it) and rewrite S: they never observed `done`
    src = _cell(_FENCED + "if tx == 0: thread.copy_async T <- S\n"
                + "if tx == 0: tcgen05.commit done\nif warpid < 2: wait done phase 0\n"
                "if tx == 64: arrive more\nif warpid >= 2: wait more phase 0\nwg.copy S <- Z\n")
    cp, w = _line(src, "if tx == 0: thread.copy_async T <- S"), _line(src, "wg.copy S <- Z")
    _, hz = _hazards(src)
    on_s = [h for h in hz if (h[1], h[2]) == (w, cp)]
    assert len(on_s) == 1, hz
    kind, _, _, msg = on_s[0]
    assert kind == "async-write" and "may still read" in msg and "`wait done phase 0`" in msg, msg
    assert "cta_sync" not in msg, msg


# ---------------------------------------------------------------- the commit of another thread, or one too early
_ISSUE = "if tx == 0: thread.copy_async T <- S\n"


@pytest.mark.parametrize("steps,commit,says", [
    # another warp's thread commits after the copy: it covers only its own thread's copies
    (_ISSUE + "if tx == 32: tcgen05.commit done\n", "if tx == 32: tcgen05.commit done",
     ["the tcgen05.commit at L{cm} is thread 32's", "— commit from thread 0, under the copy's guard"]),
    # the issuing thread commits before the copy: a commit covers the copies issued before it
    ("if tx == 0: tcgen05.commit done\n" + _ISSUE, "if tx == 0: tcgen05.commit done",
     ["its tcgen05.commit at L{cm} comes before it", "— commit after the copy"]),
], ids=["another-warps-commit", "own-commit-too-early"])
def test_the_uncommitted_report_names_the_commit_that_missed_the_copy_at_both_lines(steps, commit, says):
    src = _cell(_FENCED + steps + "wait done phase 0\n" + _READ)
    cp, cm = _line(src, _ISSUE.strip()), _line(src, commit)
    _, hz = _hazards(src)
    (h,) = [h for h in hz if h[0] == "tcgen05-uncommitted"]
    assert h[1:3] == (cp, cm), h
    assert h[3].startswith(f"hazard: tcgen05.cp at L{cp} was never committed by its issuing thread (thread 0): "), h
    assert all(x.format(cm=cm) in h[3] for x in says), h


def test_a_copy_with_no_commit_anywhere_says_so():
    src = _cell(_FENCED + "if tx == 0: thread.copy_async T <- S\nif tx == 0: arrive done\nwait done phase 0\n")
    _, hz = _hazards(src)
    (h,) = [h for h in hz if h[0] == "tcgen05-uncommitted"]
    assert h[2] == 0 and "no tcgen05.commit follows it" in h[3], h


# ---------------------------------------------------------------- the async-proxy reader
def test_the_async_proxy_hazard_of_a_cp_names_the_cp_and_its_rule():
    src = _cell("cta_sync\nif tx == 0: thread.copy_async T <- S\nif tx == 0: tcgen05.commit done\n"
                "wait done phase 0\n" + _READ)
    _, hz = _hazards(src)
    (h,) = [h for h in hz if h[0] == "proxy"]
    assert h[1:3] == (_line(src, "if tx == 0: thread.copy_async T <- S"), 10), h
    assert "§9.7.16.6: the tcgen05.cp reads shared memory through the async proxy" in h[3], h
    assert "TMA" not in h[3], h
