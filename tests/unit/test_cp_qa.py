"""QA of tcgen05.cp (issue 14): odd, racy and wrong cells against the PTX ISA 9.0 and TVM 0.27's planner.

Each finding is a cell here, left for the lead as ``xfail(strict=True)`` with its reason (a fix flips it to a plain
regression test).  Beside them stand the cells that were probed and found right — the race checks of the
commit/wait/fence protocol, the declines TVM agrees with, the located errors of bad input — so a later change that
breaks one of those verdicts shows up here too.  The cells are new (not the issue's examples); every simulated cell
runs batched and serial (``tilemagic.sim.interpreter.BATCHED``), which must agree.
"""

from __future__ import annotations

import pytest

import tilemagic
from tilemagic.errors import DispatchError, TileMagicError

from helpers import hazard_messages, run_sim


def _cell(body: str, *, dtype: str = "bfloat16", cols: int = 64, shared: str = " @ swizzle(3, 3, 3)",
          tmem: str = "tmem   T: {dt}[128, {c}]", decls: str = "") -> str:
    """A 128-thread kernel: A (arange), B and Z (zeros) of ``dtype[128, cols]``, a shared tile S, a TMEM buffer T,
    a register tile r (row i in thread i), mbarriers ``done`` and ``other``; ``body`` follows."""
    head = [
        "kernel cpqa threads=128",
        f"global A: {dtype}[128, {cols}] = arange",
        f"global B: {dtype}[128, {cols}] = zeros",
        f"global Z: {dtype}[128, {cols}] = zeros",
        f"shared S: {dtype}[128, {cols}]{shared}",
        tmem.format(dt=dtype, c=cols),
        f"local  r: {dtype}[128, {cols}] @ S[(128, {cols}) : (1@tid_in_wg, 1)]",
        "mbarrier done count=1",
        "mbarrier other count=1",
    ] + ([decls] if decls else [])
    return "\n".join(head) + "\n" + body


_FILL = "wg.copy S <- A\nfence.proxy.async\ncta_sync\n"
_CP = "if tx == 0: thread.copy_async T <- S\nif tx == 0: tcgen05.commit done\n"
_READ = "tcgen05.fence::after_thread_sync\nwg.copy_async r <- T\nwait ld\nwg.copy B <- r\ncheck B == A\n"


def _both(src: str):
    """The cell batched and serial: (batched result, its hazard messages); the two runs must report the same
    hazards (kind and both lines: a batched access may meet another racing element first,
    tests/unit/sim/test_batched_paths.py)."""
    a, b = run_sim(src, True), run_sim(src, False)
    where = lambda r: [(h.kind, h.span, h.other_span) for h in r.launch.hb.hazards]  # noqa: E731
    assert where(a) == where(b)
    assert a.launch.passed == b.launch.passed
    return a, hazard_messages(a)


# ============================================================================================ findings (xfail)
# ---- high: a PASS that is not true
_COL2 = """kernel cpqa threads=128
global A: float32[128, 4] = arange
global B: float32[128, 4] = zeros
shared S: float32[128, 4]
{tmem}
local  r: float32[128, 4] @ S[(128, 4) : (1@tid_in_wg, 1)]
mbarrier done count=1
wg.copy S <- A
fence.proxy.async
cta_sync
if tx == 0: thread.copy_async {dst} <- S
if tx == 0: tcgen05.commit done
wait done phase 0
tcgen05.fence::after_thread_sync
wg.copy_async r <- {dst}
wait ld
wg.copy B <- r
check B == A
"""


@pytest.mark.parametrize("tmem,dst", [
    ("tmem   X: float32[128, 2]\ntmem   T: float32[128, 4]", "T"),      # T placed at column 2
    ("tmem   T: float32[128, 8]\ntmem   U: float32[128, 4] at T + 2", "U"),  # an alias 2 columns in
], ids=["after-2-column-buffer", "alias-at-T+2"])
def test_a_cp_to_a_tmem_column_not_a_multiple_of_4_is_refused_at_the_copy(tmem, dst):
    src = _COL2.format(tmem=tmem, dst=dst)
    line = src.splitlines().index(f"if tx == 0: thread.copy_async {dst} <- S") + 1
    # (it was planned as `get_tmem_addr(tmem_addr[0], 0, 2)` and simulated clean, while the emulation's tm_emu_cp
    # fails with status 13 on it: `if (col0 % 4u) tm_emu_fail(e, 13, ...)`)
    with pytest.raises(TileMagicError) as e:
        run_sim(src)
    assert e.value.span is not None and e.value.span.line == line
    assert "multiple of 4" in str(e.value)


def test_a_cp_over_cells_a_tcgen05_st_has_in_flight_is_a_hazard():
    res, msgs = _both(_cell(_FILL + "wg.copy r <- Z\nwg.copy_async T <- r\ncta_sync\n" + _CP
                            + "wait st\nwait done phase 0\n" + _READ))
    assert res.launch.passed  # the simulator's order; the hazard is what must say it is not the only one
    assert any("TMEM" in m and "tcgen05.st" in m for m in msgs), msgs


# ---- low: wording, a located error, pictures
@pytest.mark.parametrize("kind", ["after_thread_sync", "before_thread_sync"])
def test_a_tcgen05_fence_without_tensor_memory_is_a_located_error(kind):
    src = "\n".join(["kernel cpqa threads=128", "global A: float32[128, 4] = arange",
                     "global B: float32[128, 4] = zeros", "shared S: float32[128, 4]", "wg.copy S <- A",
                     f"tcgen05.fence::{kind}", "cta_sync", "wg.copy B <- S", "check B == A"]) + "\n"
    with pytest.raises(TileMagicError) as e:
        tilemagic.tilecopy(src, launch="off", arch="sm_90a")
    assert e.value.span is not None and e.value.span.line == 6, str(e.value)


def test_a_decline_names_the_tmem_layout_in_the_layout_language():
    src = _cell(_FILL + "if tx == 0: thread.copy_async T <- S[:, 8:16]\nif tx == 0: tcgen05.commit done\n"
                + "wait done phase 0\n", tmem="tmem   T: {dt}[128, 8]")
    with pytest.raises(DispatchError) as e:
        run_sim(src)
    text = str(e.value)
    assert "4x256b: one 256-bit row must be 16 consecutive TMEM columns" in text  # the row this is about
    assert "Iter(" not in text, [ln for ln in text.splitlines() if "Iter(" in ln]


def test_the_descriptor_picture_says_when_it_lists_only_some_descriptors():
    res = run_sim(_cell(_FILL + "if tx == 0: thread.copy_async T <- S shape=128x128b\nif tx == 0: tcgen05.commit done\n"
                        + "wait done phase 0\n" + _READ.replace("check B == A", "check B == A"),
                        dtype="float32", cols=32, shared=" @ swizzle(2, 3, 3)"))
    (cps,) = [[ln for ln in res.ir.splitlines() if "tcgen05.cp.cta_group" in ln]]
    assert len(cps) == 8 and res.launch.passed
    fig = res.heatmap("tcgen05_cp")
    texts = [t.get_text() for t in fig.texts]
    block = next(t for t in texts if t.startswith("0x"))  # the descriptors, one per line
    shown = [ln for ln in block.splitlines() if ln.startswith("0x")]
    assert len(shown) == 8 or any("more" in ln for ln in block.splitlines()), block


def test_a_source_overwrite_after_the_cp_is_one_report_with_the_right_fix():
    _, msgs = _both(_cell(_FILL + _CP + "if tx < 32: wait done phase 0\nwg.copy S <- Z\n"))
    assert any("may still read" in m for m in msgs), msgs
    assert not any("add `cta_sync` after L13" in m for m in msgs), msgs


def test_a_commit_by_another_thread_is_named_in_the_uncommitted_copy_report():
    src = _cell(_FILL + "if tx == 0: thread.copy_async T <- S\nif tx == 1: tcgen05.commit done\nwait done phase 0\n"
                + _READ)
    commit_line = src.splitlines().index("if tx == 1: tcgen05.commit done") + 1
    _, msgs = _both(src)
    (m,) = [m for m in msgs if "was never committed by its issuing thread" in m]
    assert f"L{commit_line}" in m and "thread 1" in m, m


def test_the_async_proxy_hazard_of_a_cp_names_the_cp_as_the_reader():
    _, msgs = _both(_cell("wg.copy S <- A\ncta_sync\n" + _CP + "wait done phase 0\n" + _READ))
    (m,) = [m for m in msgs if m.startswith("hazard: async-proxy read of generic writes on S: the tcgen05.cp")]
    assert "TMA" not in m, m


# ============================================================================================ probed and right
@pytest.mark.parametrize("name,body,needle", [
    # a commit by a thread that issued nothing: thread 0's copy is never committed
    ("commit-by-another-thread", _FILL + "if tx == 0: thread.copy_async T <- S\nif tx == 1: tcgen05.commit done\n"
     "wait done phase 0\n" + _READ, "was never committed by its issuing thread"),
    # the commit before the copy arrives at once: the copy after it is never committed
    ("commit-before-the-cp", _FILL + "if tx == 0: tcgen05.commit done\nif tx == 0: thread.copy_async T <- S\n"
     "wait done phase 0\n" + _READ, "was never committed"),
    # a cta_sync does not observe the copy's completion
    ("cta_sync-instead-of-the-wait", _FILL + _CP + "cta_sync\nwg.copy_async r <- T\nwait ld\nwg.copy B <- r\n"
     "check B == A\n", "before the commit of its thread arrived"),
    # the wait observed the phase, but no tcgen05.fence::after_thread_sync orders the ld after it
    ("no-fence-after-the-wait", _FILL + _CP + "wait done phase 0\n" + _READ.split("\n", 1)[1],
     "no tcgen05.fence::after_thread_sync orders the ld"),
    # the fence before the wait orders nothing
    ("fence-before-the-wait", _FILL + _CP + "tcgen05.fence::after_thread_sync\nwait done phase 0\n"
     + _READ.split("\n", 1)[1], "no tcgen05.fence::after_thread_sync orders the ld"),
    # ::before_thread_sync is the other direction
    ("before-instead-of-after", _FILL + _CP + "wait done phase 0\ntcgen05.fence::before_thread_sync\n"
     + _READ.split("\n", 1)[1], "no tcgen05.fence::after_thread_sync orders the ld"),
    # reading the cells through an alias before the wait
    ("alias-read-before-the-wait", _FILL + _CP + "wg.copy_async r <- U\nwait ld\nwait done phase 0\n" + _READ,
     "that the tcgen05.cp writes"),
    # a tcgen05.st over the cells the copy has in flight
    ("st-over-the-copy-in-flight", _FILL + _CP + "wg.copy r <- Z\nwg.copy_async T <- r\nwait st\n"
     "wait done phase 0\n" + _READ, "writes TMEM lane 0 column 0"),
    # an ordinary arrive on another barrier after the commit does not wait for the copy
    ("arrive-on-another-barrier", _FILL + _CP + "if tx == 0: arrive other\nwait other phase 0\n" + _READ,
     "before the commit of its thread arrived"),
    # the source rewritten after the commit, before anyone waited
    ("source-written-before-the-wait", _FILL + _CP + "wg.copy S <- Z\nwait done phase 0\n",
     "that the tcgen05.cp reads"),
    # only the issuer's warp waited; the others rewrite the source with no barrier after that wait
    ("source-rewritten-by-non-waiters", _FILL + _CP + "if tx < 32: wait done phase 0\nwg.copy S <- Z\n",
     "may still read"),
    # no fence.proxy.async by the writers
    ("no-proxy-fence", "wg.copy S <- A\ncta_sync\n" + _CP + "wait done phase 0\n" + _READ,
     "async-proxy read of generic writes on S"),
    # the issuer's own fence before the barrier covers its own stores only
    ("issuer-fence-before-the-barrier", "wg.copy S <- A\nif tx == 0: fence.proxy.async\ncta_sync\n" + _CP
     + "wait done phase 0\n" + _READ, "async-proxy read of generic writes on S"),
    # the source from TMA, read by the cp before the TMA's phase completed
    ("tma-source-not-waited", "if tx == 0: arrive other expect_tx=auto\n"
     "if tx == 0: thread.copy_async S <- A mbar=other\n" + _CP + "wait done phase 0\n" + _READ,
     "before its mbarrier other phase 0 completed"),
    # a second round on the same barrier waiting for the old parity
    ("second-round-old-parity", _FILL + _CP + "wait done phase 0\n" + _READ + _FILL + _CP + "wait done phase 0\n"
     + _READ, "is never observed complete"),
    # the fence by warp 0 only: the other warps' lds are not ordered after their wait
    ("fence-by-one-warp", _FILL + _CP + "wait done phase 0\nif warpid == 0: tcgen05.fence::after_thread_sync\n"
     + _READ.split("\n", 1)[1], "no tcgen05.fence::after_thread_sync orders the ld after it (thread 32"),
    # warp 0 waits, every warp fences, no barrier: warps 1-3 never observed the phase
    ("wait-by-one-warp-no-barrier", _FILL + _CP + "if warpid == 0: wait done phase 0\n" + _READ,
     "without a `wait done phase P` that observed its completion"),
    # (a whole warp issuing and committing is a located error now: tests/unit/test_cp_fixd.py)
])
def test_racy_cells_are_flagged(name, body, needle):
    _, msgs = _both(_cell(body, decls="tmem   U: bfloat16[128, 64] at T"))
    assert any(needle in m for m in msgs), msgs


@pytest.mark.parametrize("name,body", [
    # two issuers, each committing its own copy (to its own barrier), every reader waiting for both
    ("two-issuers-two-commits", _FILL + _CP + "if tx == 32: thread.copy_async V <- S\n"
     "if tx == 32: tcgen05.commit other\nwait done phase 0\nwait other phase 0\n" + _READ
     + "wg.copy_async r <- V\nwait ld\nwg.copy B <- r\ncheck B == A\n"),
    ("round-trip", _FILL + _CP + "wait done phase 0\n" + _READ),
    ("another-thread-issues", _FILL + "if tx == 77: thread.copy_async T <- S\nif tx == 77: tcgen05.commit done\n"
     "wait done phase 0\n" + _READ),
    # one warp waits; the cta_sync (lowered with both tcgen05 fences around it) orders the other warps' lds
    ("one-warp-waits-then-cta_sync", _FILL + _CP + "if tx < 32: wait done phase 0\ncta_sync\n"
     "wg.copy_async r <- T\nwait ld\nwg.copy B <- r\ncheck B == A\n"),
    # the issuer waits and arrives on another barrier: its release carries the completion to the others
    ("completion-passed-on", _FILL + _CP + "if tx == 0: wait done phase 0\nif tx == 0: arrive other\n"
     "wait other phase 0\n" + _READ),
    # the issuer's fence after the barrier orders every writer's stores
    ("issuer-fence-after-the-barrier", "wg.copy S <- A\ncta_sync\nif tx == 0: fence.proxy.async\n" + _CP
     + "wait done phase 0\n" + _READ),
    # TMA bytes need no proxy fence; the issuer's wait orders them before its cp
    ("tma-source-waited", "if tx == 0: arrive other expect_tx=auto\nif tx == 0: thread.copy_async S <- A mbar=other\n"
     "if tx == 0: wait other phase 0\n" + _CP + "wait done phase 0\n" + _READ),
    # a second round on the same barrier with parity 1
    ("second-round-phase-1", _FILL + _CP + "wait done phase 0\n" + _READ + _FILL + _CP + "wait done phase 1\n"
     + _READ),
    # a st that was waited for before the barrier, then the copy over the same cells
    ("st-waited-then-cp", _FILL + "wg.copy r <- Z\nwg.copy_async T <- r\nwait st\ncta_sync\n" + _CP
     + "wait done phase 0\n" + _READ),
])
def test_well_synchronised_cells_are_clean(name, body):
    res, msgs = _both(_cell(body, decls="tmem   V: bfloat16[128, 64]"))
    assert res.launch.passed and not msgs, msgs


@pytest.mark.parametrize("opt,where,needle", [
    (" shape=999x1b", "syntax", "unknown shape value"),
    (" multicast=warpx3", "syntax", "unknown multicast value"),
    (" cta_group=99999999999999999999999", "syntax", "takes an integer"),
    (" cta_group=0", "dispatch", "tcgen05.cp takes cta_group=1 or 2"),
    (" cta_group=2", "dispatch", "cta_group::2 needs TMEM in a cluster of CTA pairs"),
    (" decompress=b8x16.b4x16_p64", "dispatch", "does not support decompress"),
    (" shape=64x128b multicast=warpx4", "dispatch", "illegal multicast warpx4 for tcgen05.cp shape 64x128b"),
    (" shape=64x128b", "dispatch", "needs multicast="),
])
def test_odd_option_values_are_located(opt, where, needle):
    src = _cell(_FILL + f"if tx == 0: thread.copy_async T <- S{opt}\nif tx == 0: tcgen05.commit done\n"
                + "wait done phase 0\n")
    line = src.splitlines().index(f"if tx == 0: thread.copy_async T <- S{opt}") + 1
    with pytest.raises(TileMagicError) as e:
        tilemagic.tilecopy(src, launch="off")
    assert (isinstance(e.value, DispatchError)) == (where == "dispatch")
    assert e.value.span is not None and e.value.span.line == line and needle in str(e.value)


@pytest.mark.parametrize("tmem,needle", [
    ("tmem   T: bfloat16[32, 64] @ S[(32, 64) : (1@TLane, 1@TCol)] + R[4 : 32@TCol]", "strides are on TLane"),
    ("tmem   T: bfloat16[32, 64] @ S[(32, 64) : (1@TLane, 1@TCol)] + R[4 : 1@tid_in_wg]", "strides are on TLane"),
    ("tmem   T: bfloat16[32, 64] @ S[(32, 64) : (1@TLane, 1@TCol)] + R[8 : 32@TLane]", "TMEM has 128 lanes"),
    ("tmem   T: bfloat16[32, 64] @ S[(32, 64) : (1@TLane, 1@TCol)] + R[0 : 32@TLane]", "must be positive"),
    ("tmem   T: bfloat16[32, 64] @ S[(32, 64) : (1@TLane, 1@TCol)] + R[99999999999999999999 : 32@TLane]",
     "TMEM has 128 lanes"),
    ("tmem   T: bfloat16[128, 99999999999999]", "more than tensor memory"),
])
def test_bad_replicas_and_huge_shapes_are_located(tmem, needle):
    src = _cell(_FILL + _CP + "wait done phase 0\n", tmem=tmem)
    with pytest.raises(TileMagicError) as e:
        tilemagic.tilecopy(src, launch="off")
    assert e.value.span is not None and e.value.span.line == 6 and needle in str(e.value)


@pytest.mark.parametrize("stmt,needle", [
    ("if tx == 0: tcgen05.commit nope", "unknown mbarrier 'nope'"),
    ("if tx == 0: tcgen05.commit S", "is a shared buffer, not an mbarrier"),
    ("if tx == 0: tcgen05.commit T", "is a tmem buffer, not an mbarrier"),
    ("if tx == 0: tcgen05.commit done cta_mask=1", "the kernel has none"),
    ("if tx == 0: tcgen05.commit done cta_group=2", "unknown option 'cta_group' of tcgen05.commit"),
    ("tcgen05.fence::after_thread", "unknown tcgen05 fence kind"),
])
def test_commit_and_fence_misuse_is_located(stmt, needle):
    src = _cell(_FILL + "if tx == 0: thread.copy_async T <- S\n" + stmt + "\n")
    with pytest.raises(TileMagicError) as e:
        tilemagic.tilecopy(src, launch="off")
    assert e.value.span is not None and e.value.span.line == len(src.splitlines()) and needle in str(e.value)


def test_odd_layouts_land_where_the_layouts_say():
    # T column slices and offsets, a shared row slice whose base is a whole swizzle atom into the buffer, a cp into
    # an alias at T + 8: each a round trip through tcgen05.ld, clean
    cases = [
        _cell(_FILL + "if tx == 0: thread.copy_async T[:, 16:48] <- S[:, 0:32]\nif tx == 0: tcgen05.commit done\n"
              "wait done phase 0\ntcgen05.fence::after_thread_sync\nwg.copy_async q <- T[:, 16:48]\nwait ld\n"
              "wg.copy B[:, 0:32] <- q\ncheck B[:, 0:32] == A[:, 0:32]\n",
              decls="local  q: bfloat16[128, 32] @ S[(128, 32) : (1@tid_in_wg, 1)]"),
        _COL2.format(tmem="tmem   T: float32[128, 12]\ntmem   U: float32[128, 4] at T + 8", dst="U"),
    ]
    for src in cases:
        res, msgs = _both(src)
        assert res.launch.passed and not msgs, msgs
