"""Happens-before in the simulator (tilemagic/sim/hb.py): one cell per class of hazard of issue 12 §2.

Every "bad" cell below PASSED silently before the tracker (the simulator runs ops in program order and
only shared-memory read-after-write was looked at); each is now reported, located at both lines, with
the buffer, the element and the two threads, and a fixed version of the same cell is clean.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tilemagic
from tilemagic.cli import demo_source
from tilemagic.errors import HazardError, Span
from tilemagic.ir import nodes as ir
from tilemagic.pipeline import run_kernel
from tilemagic.sim import Tracker
from tilemagic.sim.hb import Run

from cells import LDSTMATRIX_CASES, smem_cell
from helpers import run as _run


def run(src: str, **kw):
    """:func:`helpers.run` with ``allow_fail``: these cells' checks fail on purpose (uninitialised data)."""
    kw.setdefault("allow_fail", True)
    return _run(src, **kw)

ACB = """global A: float32[128, 8]
global C: float32[128, 8] = arange
global B: float32[128, 8] = zeros
"""
HEAD = "kernel k threads=128\n" + ACB + """global Z: float32[128, 8] = zeros
local  a: float32[128, 8] @ S[(128, 8) : (1@tid_in_wg, 1)]
local  c: float32[128, 8] @ S[(128, 8) : (1@tid_in_wg, 1)]
local  t: float32[128, 8] @ S[(8, 128) : (1, 1@tid_in_wg)]
"""  # a, c: row r in thread r; t: element f of the row-major tile in thread f % 128 (other threads' rows)


def _cell(*lines: str) -> str:
    return HEAD + "\n".join(lines)


def _line(src: str, text: str) -> int:
    return src.splitlines().index(text) + 1


def _hazards(src, **kw):
    res = run(src, **kw)
    return res, [w for w in res.warnings if w.startswith("hazard")]


def _one(src, *fragments, **kw):
    res, haz = _hazards(src, **kw)
    assert len(haz) == 1, haz
    for f in fragments:
        assert f in haz[0], (f, haz[0])
    h = res.launch.hb.hazards[0]
    assert h.span is not None and h.other_span is not None
    return res, haz[0], h


# ----------------------------------------------------------------------------- races between threads
GLOBAL_RAW = _cell("wg.copy a <- A", "wg.copy Z <- a", "wg.copy t <- Z", "wg.copy B <- t", "check B == A")


def test_global_read_after_write_across_warps():
    w, r = _line(GLOBAL_RAW, "wg.copy Z <- a"), _line(GLOBAL_RAW, "wg.copy t <- Z")
    res, msg, h = _one(GLOBAL_RAW, "global-memory race on Z:", f"at L{r} that thread", f"wrote at L{w} ",
                       "(read after write)", f"add `cta_sync` after L{w}")
    assert res.launch.passed  # the simulator's schedule still moves the data
    assert (h.kind, h.buffer, h.span.line, h.other_span.line) == ("raw", "Z", r, w)
    reader, writer = h.threads
    assert reader != writer and reader // 32 != writer // 32 or reader != writer
    assert f"thread {reader} reads Z[{h.element // 8}, {h.element % 8}] " in msg and f"that thread {writer} wrote" in msg
    fixed = GLOBAL_RAW.replace("wg.copy t <- Z", "cta_sync\nwg.copy t <- Z")
    assert not _hazards(fixed)[1]
    assert run(fixed).launch.hb.summary().startswith("happens-before: clean (")


SHARED_WAR = "kernel k threads=128\n" + ACB + """shared S: float32[128, 8]
local  a: float32[128, 8] @ S[(128, 8) : (1@tid_in_wg, 1)]
local  c: float32[128, 8] @ S[(128, 8) : (1@tid_in_wg, 1)]
local  t: float32[128, 8] @ S[(8, 128) : (1, 1@tid_in_wg)]
wg.copy a <- A
wg.copy c <- C
wg.copy S <- a
cta_sync
wg.copy t <- S
wg.copy S <- c
wg.copy B <- t
check B == A"""


def test_shared_write_after_read():
    r, w = _line(SHARED_WAR, "wg.copy t <- S"), _line(SHARED_WAR, "wg.copy S <- c")
    _, msg, h = _one(SHARED_WAR, "shared-memory race on S:", "writes S[0, ", f"at L{w} that thread",
                     f"read at L{r} ", "(write after read)")
    assert (h.kind, h.span.line, h.other_span.line) == ("war", w, r) and h.threads[0] != h.threads[1]
    assert not _hazards(SHARED_WAR.replace("wg.copy S <- c", "cta_sync\nwg.copy S <- c"))[1]


def test_war_is_found_whatever_order_the_executor_ran_the_two_threads_in():
    """The same pair of accesses reported by the tracker directly, write first and read first."""
    k = run(SHARED_WAR, launch="off").kernel
    S = next(b for b in k.shared if b.name == "S")
    r_at, w_at = Span.point(13, 1), Span.point(14, 1)
    for order in ("read first", "write first"):
        tr = Tracker(k, 128)  # (items of one element: byte offset 0, the default size is S's unit)
        tr.write(S, np.array([0]), np.zeros(1, np.int64), Span.point(11, 1))
        tr.event("cta_sync", np.arange(128), Span.point(12, 1))
        if order == "read first":
            tr.read(S, np.array([0]), np.full(1, 5), r_at)
            tr.write(S, np.array([0]), np.zeros(1, np.int64), w_at)
        else:
            tr.write(S, np.array([0]), np.zeros(1, np.int64), w_at)
            tr.read(S, np.array([0]), np.full(1, 5), r_at)
        hz = tr.finish().hazards
        assert len(hz) == 1 and {hz[0].span, hz[0].other_span} == {r_at, w_at}, (order, hz)
        assert set(hz[0].threads) == {0, 5}


GLOBAL_WAW = _cell("wg.copy a <- A", "wg.copy t <- C", "wg.copy B <- a", "wg.copy B <- t", "check B == C")


def test_write_after_write_by_two_threads():
    first, second = _line(GLOBAL_WAW, "wg.copy B <- a"), _line(GLOBAL_WAW, "wg.copy B <- t")
    res, msg, h = _one(GLOBAL_WAW, "global-memory race on B:", f"at L{second} that thread",
                       f"also wrote at L{first} ", "(write after write)")
    assert res.launch.passed and h.kind == "waw" and h.threads[0] != h.threads[1]
    assert not _hazards(GLOBAL_WAW.replace("wg.copy B <- t", "cta_sync\nwg.copy B <- t"))[1]


def test_identical_broadcast_stores_are_not_a_race_but_their_readers_are():
    """Both warps' elected lane store the same tile (TVM's fallback): not reported; a thread that did not
    store it reading it without a barrier is."""
    src = """kernel fb threads=64
global A: float32[4, 6]
global B: float32[4, 6]
shared S: float32[4, 6]
warp.copy S <- A
thread.copy B <- S
check B == A"""
    res, haz = _hazards(src)
    assert [d.chosen for d in res.dispatch] == ["fallback", "gmem_smem"]
    assert len(haz) == 1 and "(read after write)" in haz[0] and "that thread 0 wrote at L5" in haz[0]
    assert not _hazards(src.replace("thread.copy", "cta_sync\nthread.copy"))[1]


def test_different_values_stored_by_one_statement_are_a_race():
    k = run(SHARED_WAR, launch="off").kernel
    S = next(b for b in k.shared if b.name == "S")
    tr = Tracker(k, 128)
    tids = np.array([[0], [7]])
    tr.write(S, np.array([[0, 4], [0, 4]]), tids, Span.point(9, 1), value=np.array([[1, 2], [1, 2]], np.uint32))
    assert not tr.report.hazards  # identical elements
    tr.write(S, np.array([[8, 12], [8, 12]]), tids, Span.point(10, 1), value=np.array([[1, 2], [1, 3]], np.uint32))
    (h,) = tr.finish().hazards
    assert h.kind == "waw" and "write different values to S[0, 3] at L10" in h.message


# ----------------------------------------------------------------------------- TMEM
def _tmem_race_kernel(barrier: bool) -> tuple[ir.Kernel, dict]:
    """256 threads: warps 0-3 store registers to TMEM (tcgen05.st), warps 4-7 — same lane quadrants
    (PTX ISA 9.0 §9.7.16.8.1) — load the same cells; ``barrier``: a fenced cta_sync in between."""
    at = lambda n: Span.point(n, 1)  # noqa: E731
    A = ir.Buffer("A", "global", "uint32", (256,), span=at(2))
    B = ir.Buffer("B", "global", "uint32", (256,), span=at(3))
    a = ir.Buffer("a", "local", "uint32", (1,), per_thread=1, span=at(4))
    addr = ir.Buffer("tmem_addr", "shared", "uint32", (1,), per_thread=1)
    tx, warp = ir.ThreadVar("tx"), ir.ThreadVar("warpid")
    sync = [ir.TcgenFence("before_thread_sync"), ir.Barrier(), ir.TcgenFence("after_thread_sync")]
    lo, hi = ir.Bin("<", tx, ir.Const(128)), ir.Bin(">=", tx, ir.Const(128))
    body = [ir.If(ir.Bin("==", warp, ir.Const(0)), ir.Seq((ir.TcgenAlloc(addr, 32, span=at(5)),
                                                          ir.TcgenRelinquish(span=at(5)))), span=at(5)), *sync,
            ir.Store(a, (ir.Const(0),), ir.Load(A, (tx,)), span=at(6)),
            ir.If(lo, ir.Seq((ir.TcgenLdSt("st", "32x32b", 1, a, 0, 1, addr, 0, 0, span=at(7)),
                              ir.TcgenWait("st", span=at(8)))), span=at(7)),
            *(sync if barrier else []),
            ir.If(hi, ir.Seq((ir.TcgenLdSt("ld", "32x32b", 1, a, 0, 1, addr, 0, 0, span=at(9)),
                              ir.TcgenWait("ld", span=at(10)))), span=at(9)),
            ir.Store(B, (tx,), ir.Load(a, (ir.Const(0),)), span=at(11)), *sync,
            ir.If(ir.Bin("==", warp, ir.Const(0)), ir.TcgenDealloc(addr, 32, span=at(12)), span=at(12))]
    k = ir.Kernel("tm_race", 256, params=(A, B), shared=(addr,), locals=(a,), tmem=(), tmem_cols=32,
                  tmem_addr=addr, body=ir.Seq(tuple(body)))
    return k, {"A": np.arange(256, dtype=np.uint32) * 7 + 1, "B": np.zeros(256, np.uint32)}


def test_tmem_race_between_warps_of_one_quadrant():
    k, inp = _tmem_race_kernel(barrier=False)
    lres = run_kernel(k, inp)
    (h,) = lres.hb.hazards
    assert (h.kind, h.buffer, h.span.line, h.other_span.line) == ("raw", "TMEM", 9, 7)
    assert h.threads == (128, 0) and h.element == (0, 0)
    assert "thread 128 reads TMEM lane 0 column 0 at L9 that thread 0 wrote at L7" in h.message
    k, inp = _tmem_race_kernel(barrier=True)
    lres = run_kernel(k, inp)
    assert lres.hb.clean and (lres.outputs["B"][128:] == inp["A"][:128]).all()


# ----------------------------------------------------------------------------- in-flight tcgen05 registers
ROUND = "kernel rt threads=128\n" + ACB + """tmem   T: float32[128, 8]
local  a: float32[128, 8] @ S[(128, 8) : (1@tid_in_wg, 1)]
local  b: float32[128, 8] @ S[(128, 8) : (1@tid_in_wg, 1)]
wg.copy a <- A
wg.copy_async T <- a
wait st
cta_sync
wg.copy_async b <- T
wait ld
wg.copy B <- b
check B == A"""


def test_the_round_trip_is_clean():
    res, haz = _hazards(ROUND)
    assert not haz and res.launch.passed and res.launch.hb.clean
    assert [e.kind for e in res.launch.timeline][-4:] == ["tcgen05.ld", "wait_ld", "cta_sync", "dealloc"]


def test_in_flight_ld_registers_overwritten_before_wait_ld():
    # the simulator completes the ld at issue, so the overwrite wins and B == C "passes"; on a GPU the
    # asynchronous ld may land after it
    src = ROUND.replace("wait ld\n", "wg.copy b <- C\nwait ld\n").replace("check B == A", "check B == C")
    over = _line(src, "wg.copy b <- C")
    _, msg, h = _one(src, f"registers of b are overwritten at L{over} before `wait ld`", "tcgen05.ld at L12")
    assert h.kind == "ld-overwrite" and h.threads[0] == h.threads[1]


def test_in_flight_ld_registers_read_before_wait_ld_once_per_hazard():
    src = ROUND.replace("wait ld\n", "")
    res, haz = _hazards(src)
    assert haz == [h.message for h in res.launch.hb.hazards]  # the simulator's report alone: no duplicate
    assert len(haz) == 1 and "registers of b are read at L13 before `wait ld`" in haz[0] and "(thread 0, " in haz[0]


def test_st_source_registers_overwritten_before_wait_st():
    src = ROUND.replace("wait st\n", "wg.copy a <- C\nwait st\n")
    over = _line(src, "wg.copy a <- C")
    _, msg, h = _one(src, f"registers of a are overwritten at L{over} before `wait st`", "tcgen05.st at L9")
    assert h.kind == "st-overwrite"


def test_tmem_read_of_an_in_flight_store():
    src = ROUND.replace("wait st\n", "")
    res, haz = _hazards(src)
    assert len(haz) == 2, haz  # the read, and the store still in flight when the epilogue frees TMEM
    assert "the tcgen05.ld at L11 reads TMEM columns the tcgen05.st at L9 writes, before `wait st`" in haz[0]
    assert "(thread 0, lane 0, column 0)" in haz[0]
    assert "TMEM is freed at the kernel epilogue while the tcgen05.st at L9 has not been waited for" in haz[1]
    h = res.launch.hb.hazards[0]
    assert (h.kind, h.span.line, h.other_span.line) == ("st-read", 11, 9)


# ----------------------------------------------------------------------------- uninitialised data
def _uninit(src, check_line):
    res, haz = _hazards(src)
    assert any("uninitialised read" in h for h in haz), haz
    (c,) = res.launch.checks
    assert not c.passed and c.uninitialised == c.total == 1024 and c.first_uninitialised == "B[0, 0]"
    assert "uninitialised" in str(c) and "FAIL" in str(c)
    assert "uninitialised" in res.text() and "uninitialised" in res.html()
    return res, haz


def test_poison_shared_memory_read():
    src = """kernel k threads=128
global B: float32[128, 8] = zeros
global Z: float32[128, 8] = zeros
shared S: float32[128, 8]
wg.copy B <- S
check B == Z"""
    res, haz = _uninit(src, 6)
    assert any("reads S[0, 0] at L5" in h for h in haz)


def test_poison_register_read():
    src = _cell("wg.copy B <- a", "check B == Z")
    res, haz = _uninit(src, 10)
    assert any("register word 0 of a at L9" in h for h in haz)


def test_poison_tmem_read():
    src = ROUND.replace("wg.copy_async T <- a\nwait st\n", "").replace("check B == A", "check B == Z").replace(
        "global B: float32[128, 8] = zeros", "global B: float32[128, 8] = zeros\nglobal Z: float32[128, 8] = zeros")
    res, haz = _uninit(src, 0)
    assert any("reads TMEM lane 0 column 0 at L11" in h for h in haz)


def test_a_partly_written_output_fails_only_where_poisoned():
    src = """kernel k threads=128
global A: float32[128, 8]
global B: float32[128, 8] = zeros
shared S: float32[128, 8]
wg.copy S[0:64, :] <- A[0:64, :]
cta_sync
wg.copy B <- S
check B[0:64, :] == A[0:64, :]"""
    res = run(src)
    (c,) = res.launch.checks
    assert c.passed and c.uninitialised == 0  # rows 0..63 come from A
    (c,) = run(src.replace("check B[0:64, :] == A[0:64, :]", "check B == A")).launch.checks
    assert not c.passed and c.uninitialised == 512 and c.first_uninitialised == "B[64, 0]"


# ----------------------------------------------------------------------------- strict, incomplete
def test_strict_makes_a_hazard_a_located_error_naming_both_lines():
    w, r = _line(GLOBAL_RAW, "wg.copy Z <- a"), _line(GLOBAL_RAW, "wg.copy t <- Z")
    with pytest.raises(HazardError) as ei:
        run(GLOBAL_RAW, strict=True)
    e = ei.value
    assert e.line == r and f"wrote at L{w}" in e.message and f"at L{r}" in e.message
    assert "^" in e.render() and f"the other access is at L{w}" in e.render()
    with pytest.raises(HazardError):  # the static pass under --launch off, too
        run(ROUND.replace("wait ld\n", ""), launch="off", strict=True)
    run(GLOBAL_RAW.replace("wg.copy t <- Z", "cta_sync\nwg.copy t <- Z"), strict=True)


def test_data_dependent_index_is_incomplete_never_clean():
    A = ir.Buffer("A", "global", "uint32", (32,))
    IDX = ir.Buffer("IDX", "global", "int32", (32,))
    B = ir.Buffer("B", "global", "uint32", (32,))
    tx = ir.ThreadVar("tx")
    body = ir.Seq((ir.Store(B, (ir.Load(IDX, (tx,)),), ir.Load(A, (tx,)), span=Span.point(4, 1)),))
    k = ir.Kernel("gather", 32, params=(A, IDX, B), shared=(), locals=(), tmem=(), tmem_cols=0, tmem_addr=None,
                  body=body)
    inp = {"A": np.arange(32, dtype=np.uint32), "IDX": np.arange(32, dtype=np.int32)[::-1].copy(),
           "B": np.zeros(32, np.uint32)}
    hb = run_kernel(k, inp).hb
    assert not hb.hazards and not hb.clean
    assert hb.summary() == "happens-before: incomplete: an index or address computed from loaded data at L4"


# ----------------------------------------------------------------------------- what stays clean
def test_summary_line_in_the_reports():
    res = run(ROUND)
    line = res.launch.hb.summary()
    assert line.startswith("happens-before: clean (") and "sync events)" in line
    assert line in res.text() and line in res.html()
    assert "happens-before: 1 hazard" in run(GLOBAL_RAW).text()


@pytest.mark.parametrize("name", ["tmem_roundtrip", "fallback_demo"])
def test_demos_are_hazard_free(name):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no hazard warning at all
        warnings.filterwarnings("ignore", "copy/fallback")
        res = tilemagic.tilecopy(demo_source(name), launch="sim")
    assert res.launch.hb.clean and res.launch.passed


def _doc_blocks():
    import pathlib
    import re

    doc = pathlib.Path(__file__).resolve().parents[3] / "docs" / "language.md"
    # (not the blocks marked as waiting for the asynchronous-copy variants or simulator: tests/unit/test_docs.py)
    return [b for need, b in re.findall(r"(?:<!-- needs ([^>]*?) -->\n)?```tilecopy\n(.*?)```", doc.read_text(), re.S)
            if not need]


# docs/language.md blocks that only illustrate an instruction's shape: they load TMEM nothing wrote, which is a
# true uninitialised read (a GPU reads garbage there), so they report exactly that and nothing else
ILLUSTRATIONS = ("wg.copy_async lo <- lower", "wg.copy_async frag <- acc", "kernel frags threads=128")


def test_doc_examples_are_hazard_free_except_uninitialised_illustrations():
    blocks = _doc_blocks()
    assert len(blocks) > 10
    seen = 0
    for b in blocks:
        try:
            res, haz = _hazards(b)
        except tilemagic.TileMagicError:
            continue  # (a block that shows an error; test_docs.py checks it)
        if any(x in b for x in ILLUSTRATIONS):
            seen += 1
            assert haz and all(h.startswith("hazard: uninitialised read:") for h in haz), haz
        else:
            assert not haz, (b, haz)
            assert res.launch.hb.clean
    assert seen == len(ILLUSTRATIONS)


def test_stored_notebooks_show_no_hazard_and_a_clean_summary():
    import json
    import pathlib

    nbs = sorted((pathlib.Path(__file__).resolve().parents[3] / "notebooks").glob("*.ipynb"))
    assert nbs
    clean = 0
    for nb in nbs:
        for cell in json.loads(nb.read_text())["cells"]:
            text, line = json.dumps(cell.get("outputs", [])), "".join(cell["source"]).partition("\n")[0]
            # a cell that fails on purpose (tagged raises-exception, or an exercise's --allow-fail cell) may show one
            on_purpose = "raises-exception" in cell["metadata"].get("tags", []) or "--allow-fail" in line.split()
            assert on_purpose or "hazard:" not in text, (nb.name, line)
            assert "happens-before: incomplete" not in text, (nb.name, line)
            clean += text.count("happens-before: clean (")
    assert clean > 10


def test_strict_uninitialised_read_hints_at_initialising_not_synchronising():
    src = _cell("wg.copy B <- a", "check B == Z")
    with pytest.raises(HazardError) as ei:
        run(src, strict=True)
    assert "initialise the data" in ei.value.hint and "synchronisation" not in ei.value.hint.split(",")[0]


# ----------------------------------------------------------------------------- the tracker's fast paths
def test_shadows_are_kept_per_access_granule():
    """One shadow entry per gcd of the granules a buffer is accessed in: per float32 of S where one op reads it
    element by element, per 32-bit word of an ldmatrix fragment, per 16-bit half under ``.trans``, per 16-byte
    vector of a tile only vectors move."""
    k = run(SHARED_WAR, launch="off").kernel
    S = next(b for b in k.shared if b.name == "S")
    tr = Tracker(k, 128)
    assert tr.unit(S) == 4 and tr.spaces["S"].wt.size == S.numel
    km = run(smem_cell("frag(16x128b)", 64, 64, "wg", 128, "float16", "swizzle(3, 3, 3)"), launch="off").kernel
    tm = Tracker(km, km.threads)
    lds = [s for s in ir.walk(km.body) if isinstance(s, ir.LdStMatrix)]
    assert lds and not any(s.trans for s in lds)
    assert all(tm.unit(s.smem) == 4 and tm.unit(s.local) == 4 for s in lds)
    assert tm.spaces["S"].wt.size == 64 * 64 // 2  # (64 x 64 halves: one entry per pair)
    kx = run(smem_cell(*LDSTMATRIX_CASES[1][:7]), launch="off").kernel
    trans = [s for s in ir.walk(kx.body) if isinstance(s, ir.LdStMatrix)]
    assert trans and all(s.trans for s in trans)
    assert all(Tracker(kx, kx.threads).unit(s.smem) == 2 for s in trans)
    kv = run("kernel k threads=128\nglobal A: float32[128, 8]\nglobal B: float32[128, 8] = zeros\n"
             "shared S: float32[128, 8]\nwg.copy S <- A\ncta_sync\nwg.copy B <- S\ncheck B == A", launch="off").kernel
    vecs = [s for s in ir.walk(kv.body) if isinstance(s, ir.VecMove)]
    assert vecs and {s.nbytes for s in vecs} == {16}
    tv = Tracker(kv, 128)
    assert all(tv.unit(b) == 16 for b in (*kv.shared, kv.params[1])) and tv.spaces["S"].wt.size == 128 * 8 // 4
    # (a float32 register tile moved by tcgen05: one 32-bit word per entry)
    kt = run(ROUND, launch="off").kernel
    ldst = [s.local for s in ir.walk(kt.body) if isinstance(s, ir.TcgenLdSt)]
    assert ldst and all(b.elem_bytes == 4 and Tracker(kt, kt.threads).unit(b) == 4 for b in ldst)


def test_races_are_found_past_the_since_the_last_barrier_summaries():
    """Runs skip the scans only where nothing since the last full cta_sync can be unordered with them."""
    k = run(SHARED_WAR, launch="off").kernel
    S = next(b for b in k.shared if b.name == "S")
    tr = Tracker(k, 128)
    at = [Span.point(20 + i, 1) for i in range(6)]
    tr.write(S, Run(0, 512, 4), 0, at[0])  # all of S by thread 0
    tr.event("cta_sync", np.arange(128), at[1])
    tr.write(S, Run(256 * 4, 64, 4), 1, at[2])  # elements 256..319 by thread 1
    tr.read(S, Run(0, 256, 4), 3, at[3])  # before the sync's writes only: ordered
    assert not tr.report.hazards
    tr.read(S, Run(300 * 4, 8, 4), 2, at[4])  # meets thread 1's run: read after write
    tr.event("cta_sync", np.arange(64), at[5])  # a barrier of half the CTA does not order thread 2 ...
    tr.write(S, Run(0, 4, 4), np.arange(64, 68, dtype=np.int64), Span.point(30, 1))  # ... nor these with thread 3
    hz = tr.finish().hazards
    assert [(h.kind, h.element, h.threads) for h in hz] == [("raw", 300, (2, 1)), ("war", 0, (64, 3))], hz


def test_a_run_of_many_threads_cycles_over_them():
    """A run whose threads repeat (a CTA row per iteration) is checked per element like an index array."""
    k = run(SHARED_WAR, launch="off").kernel
    S = next(b for b in k.shared if b.name == "S")
    tids = np.arange(128, dtype=np.int64)
    a, b = Tracker(k, 128), Tracker(k, 128)
    a.write(S, Run(0, 1024, 4), tids, Span.point(9, 1))  # (item i by thread i % 128)
    b.write(S, np.arange(0, 4096, 4), np.tile(tids, 8), Span.point(9, 1))
    for tr in (a, b):
        tr.read(S, np.array([4 * 130]), np.array([5]), Span.point(10, 1))
    (ha,), (hb,) = a.finish().hazards, b.finish().hazards
    assert ha.message == hb.message and ha.threads == (5, 2) and ha.element == 130


def test_a_global_buffer_past_the_shadow_budget_is_incomplete_never_clean(monkeypatch):
    from tilemagic.sim import hb

    src = "kernel big threads=32\nglobal A: float32[64, 32]\nglobal B: float32[64, 32]\nwarp.copy B <- A\ncheck B == A"
    assert run(src).launch.hb_summary().startswith("happens-before: clean")
    monkeypatch.setattr(hb, "GLOBAL_SHADOW_BUDGET", 1024)  # (the 8 KiB B needs more)
    res = run(src)
    summary = res.launch.hb_summary()
    assert res.launch.passed and "clean" not in summary
    assert "incomplete: global buffer B" in summary and "not checked at L3" in summary


def test_a_global_buffer_the_kernel_only_reads_is_not_copied():
    from tilemagic.sim import Simulator

    k = run("kernel ro threads=32\nglobal A: float32[64, 32]\nglobal B: float32[64, 32]\nwarp.copy B <- A",
            launch="off").kernel
    a = np.arange(64 * 32, dtype=np.float32).reshape(64, 32)
    sim = Simulator(k, {"A": a, "B": np.zeros_like(a)})
    assert np.shares_memory(sim.mem["A"], a) and not sim.mem["A"].flags.writeable
    assert not np.shares_memory(sim.mem["B"], a)
    out = sim.run()
    assert np.array_equal(out["B"].view(np.float32).reshape(64, 32), a)


def test_hazards_name_elements_by_logical_index_through_a_swizzle_and_a_war_on_read_shared_data():
    src = """kernel sw threads=64
global A: float16[8, 64]
global C: float16[8, 64]
global B: float16[8, 64]
shared S: float16[8, 64] @ swizzle(3, 3, 3)
cta.copy S <- A
cta_sync
warp.copy B <- S
cta.copy S <- C
check B == A"""
    res, haz = _hazards(src)
    (war,) = [h for h in res.launch.hb.hazards if h.kind == "war"]
    lin = war.element  # the physical element; the message names the logical one
    want = next((r, c) for r in range(8) for c in range(64) if _phys(res, r, c) == lin)
    assert f"writes S[{want[0]}, {want[1]}] at L9" in war.message
    assert "that other threads read at L8" in war.message or "that thread " in war.message


def _phys(res, r, c):
    from tilemagic.ir.evaluate import eval_static

    S = next(b for b in res.kernel.shared if b.name == "S")
    return int(eval_static(S.index_expr([ir.Const(r), ir.Const(c)]), np.zeros(1, np.int64), {}))


def test_kernel_accesses_is_one_walk_the_simulator_takes_from_its_tracker():
    from tilemagic.sim import Simulator
    from tilemagic.sim.hb import kernel_accesses, written_and_read

    res = run(SHARED_WAR)
    k = res.kernel
    acc = kernel_accesses(k)
    assert written_and_read(k) == (acc.written, acc.read)
    assert {"S", "B"} <= acc.written and {"A", "C", "S"} <= acc.read and dict(acc.units)["S"] == 4
    tr = Tracker(k, k.threads)
    sim = Simulator(k, res.launch.inputs, tracker=tr)
    assert tr.accesses == acc and sim.hb is tr
    assert not sim.mem["A"].flags.writeable and sim.mem["B"].flags.writeable  # (read only: the input itself)
