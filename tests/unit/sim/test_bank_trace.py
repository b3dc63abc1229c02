"""Bank conflicts predicted from the simulator's address trace (tilemagic.sim.banks, `--cost`)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tilemagic
from cells import LDSTMATRIX_CASES, bank_rows_cell, fallback_cell, smem_cell
from tilemagic.sim import Tracker, simulate
from tilemagic.sim.banks import BankTrace


def conflicted(smem: str = "") -> str:
    return bank_rows_cell("float32", smem)


def banks_of(src: str, **kw):
    r = tilemagic.tilecopy(src, launch="sim", emit_warnings=False, **kw)
    k = r.kernel
    trace = BankTrace(k)
    simulate(k, r.launch.inputs, trace=trace)
    return r, trace.report()


def by_line(rep):
    return {(a.line, a.kind): a for a in rep.accesses}


def test_conflicted_rows_and_the_swizzle_that_fixes_them():
    r, rep = banks_of(conflicted())
    st, ld = by_line(rep)[(8, "st")], by_line(rep)[(10, "ld")]
    # reg: 8 warp stores of 16 bytes per lane, lane t at byte 128 t + 16 i: 8 lanes of a quarter warp in banks 4i..4i+3
    assert (st.instr, st.executions, st.wavefronts, st.ideal, st.degree) == ("st.shared.v4.u32", 8, 8 * 4 * 8, 32, 8)
    # gmem_smem reads whole rows: lanes take consecutive 16-byte chunks, conflict-free
    assert (ld.instr, ld.executions, ld.wavefronts, ld.conflicts, ld.degree) == ("ld.shared.v4.u32", 8, 32, 0, 1)
    assert st.swizzle == ("swizzle(2, 3, 3)", 4)
    assert rep.totals()["st_conflicts"] == 224 and rep.totals()["ld_conflicts"] == 0
    assert rep.per_op()[8]["degree"] == 8
    # the suggestion, written into the cell, removes the conflict (and the copy still round-trips)
    r2, rep2 = banks_of(conflicted(st.swizzle[0]))
    assert r2.launch.passed and rep2.totals()["conflicts"] == 0
    addr, active, warp = st.worst
    assert warp == 0 and active.all() and (addr % 128 == 0).sum() == 32 // 1  # every lane at the start of a row


def test_elected_thread_fallback_one_wavefront_per_element():
    _, rep = banks_of(fallback_cell("warp", 32, 4, 6))
    st = [a for a in rep.accesses if a.kind == "st"]
    ld = [a for a in rep.accesses if a.kind == "ld"]
    assert len(st) == 1 and len(ld) == 1
    for a in st + ld:  # one active lane: each of the 24 scalar accesses is one wavefront, never a conflict
        assert (a.executions, a.wavefronts, a.ideal, a.degree) == (24, 24, 24, 1)
        assert a.worst[1].sum() == 1


@pytest.mark.parametrize("swizzle_len", [0, 1, 2, 3])
def test_ldmatrix_under_swizzles_0_to_3(swizzle_len):
    """ldmatrix.x4 of 8 x 8 blocks of a float16[16, 64] tile (128-byte rows): swizzle(3, B, 3) spreads each block's
    rows over 2**B bank groups, so the degree is 8 / 2**B."""
    case = LDSTMATRIX_CASES[7]  # warp, float16[16, 64], four ldmatrix.x4
    layout, rows, cols, scope, threads, dtype = case[:6]
    assert (rows, cols, dtype) == (16, 64, "float16")
    r, rep = banks_of(smem_cell(layout, rows, cols, scope, threads, dtype, f"swizzle(3, {swizzle_len}, 3)"))
    assert r.launch.passed
    mats = [a for a in rep.accesses if a.matrix is not None]
    assert {a.instr for a in mats} == {"ldmatrix.sync.aligned.m8n8.x4.shared.b16",
                                       "stmatrix.sync.aligned.m8n8.x4.shared.b16"}
    for a in mats:
        assert a.degree == 8 >> swizzle_len
        assert a.wavefronts == a.executions * 4 * (8 >> swizzle_len)
        assert (a.swizzle is not None) == (swizzle_len < 3)
        if a.swizzle:  # the 128-byte swizzle removes it
            assert a.swizzle[0] == "swizzle(3, 3, 3)" and a.swizzle[1] == 4


def test_trace_does_not_change_the_run():
    src = conflicted()
    r = tilemagic.tilecopy(src, launch="sim", emit_warnings=False)
    k = r.kernel
    t1, t2 = Tracker(k, k.threads), Tracker(k, k.threads)
    out1 = simulate(k, r.launch.inputs, tracker=t1)
    out2 = simulate(k, r.launch.inputs, tracker=t2, trace=BankTrace(k))
    assert all(np.array_equal(out1[n].view(np.uint8), out2[n].view(np.uint8)) for n in out1)
    assert t1.finish().summary() == t2.finish().summary()


def test_cost_option_reports_banks_without_a_launch():
    r = tilemagic.tilecopy(conflicted(), launch="off", cost=True, emit_warnings=False)
    assert r.launch is None and r.banks is not None and r.banks.totals()["st_conflicts"] == 224
    text = r.text()
    assert "Shared-memory banks" in text and "8-way" in text and "swizzle(2, 3, 3)" in text
    assert "tm-banks" in r.html()  # the lanes x banks picture of the conflicted store


def test_no_cost_no_trace(monkeypatch):
    import tilemagic.sim.banks as banks

    def boom(*a, **k):
        raise AssertionError("traced without --cost")

    monkeypatch.setattr(banks.BankTrace, "__call__", boom)
    r = tilemagic.tilecopy(conflicted(), launch="sim", emit_warnings=False)
    assert r.banks is None and r.costs is None and not r.sections


def test_the_notebooks_programs_are_the_test_cells():
    """notebooks/src/shared_memory_banks.md shows the cells these tests check."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[3] / "notebooks" / "src" / "shared_memory_banks.md").read_text()
    literal = {name: body for name, body in re.findall(r'^(\w+) = """\\\n(.*?)"""', text, re.S | re.M)}
    assert literal["ROWS"] == bank_rows_cell("float32").lstrip("\n")
    assert literal["LDSM"] == smem_cell(*LDSTMATRIX_CASES[7][:6], "swizzle(3, {b}, 3)").lstrip("\n")


def test_after_a_gpu_launch_the_simulator_runs_for_the_trace_alone():
    """A GPU launch has no simulator run: --cost's bank report then comes from one simulator run on the same
    inputs (pipeline._bank_report), located notes when it cannot."""
    from tilemagic import pipeline
    from tilemagic.result import LaunchResult

    r = tilemagic.tilecopy(conflicted(), launch="sim", emit_warnings=False)
    gpu = LaunchResult("cupy", "native sm_90", "sm_90", "a CUDA device was found", dict(r.launch.inputs), {})
    rep, note = pipeline._bank_report(r.kernel, r.typed, BankTrace(r.kernel), gpu, r.options, None)
    assert note is None and rep.totals()["st_conflicts"] == 224
    bad = tilemagic.tilecopy(conflicted(), launch="off", emit_warnings=False)
    rep, note = pipeline._bank_report(bad.kernel, bad.typed, BankTrace(bad.kernel), None,
                                      tilemagic.options.resolve(overrides={"timeout": 1e-9}), None)
    assert rep is None and note.startswith("--cost: no bank-conflict prediction") and "--timeout" in note
