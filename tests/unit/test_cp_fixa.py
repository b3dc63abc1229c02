"""Fixes of the tcgen05.cp QA findings (tests/unit/test_cp_qa.py) in the planner, the language and the pictures:
the absolute TMEM column of a cp (the buffer's place in the allocation, not only the region's offset in it), the
located refusals of tcgen05 without tensor memory, declines written in the layout language, and the descriptor
list of the picture.  Each test here failed before its fix."""

from __future__ import annotations

import numpy as np
import pytest

import tilemagic
from tilemagic.arch import tcgen05 as tc
from tilemagic.errors import DispatchError, LaunchError, LoweringError, Span
from tilemagic.ir import nodes as ir

from helpers import CP_SPLICE_CELL, hazard_messages, run_sim, spliced_cp_kernel
from test_cp_qa import _COL2

def _cell(tmem: str, dst: str, opts: str = "", read: bool = True) -> str:
    """The QA's round-trip cell (S float32[128, 4] -> ``dst`` -> r -> B) with copy options ``opts``; without the
    read-back (``read=False``) it ends at the ``wait done phase 0``."""
    src = _COL2.format(tmem=tmem, dst=dst).replace(f"copy_async {dst} <- S\n", f"copy_async {dst} <- S{opts}\n")
    return src if read else src.split("tcgen05.fence::after_thread_sync\n")[0]


def _emitter_decline(src: str):
    """The smem->tmem emitter's DispatchFail for the cell's tcgen05.cp (its text and DeclineDetail)."""
    from tilemagic.lang.parser import parse
    from tilemagic.lower.copy_async import tcgen05_cp
    from tilemagic.lower.dispatch import DispatchContext, DispatchFail, TargetSpec
    from tilemagic.lower.program import CopyItem, KernelBuilder, check, guard_expr

    tp = check(parse(src))
    item = next(it for it in tp.items if isinstance(it, CopyItem) and it.op.src.buf.scope == "shared"
                and it.op.dst.buf.scope == "tmem")
    op = item.op
    ctx = DispatchContext(TargetSpec("cuda", "sm_100a"), tp.threads, op.exec_scope, KernelBuilder(tp),
                          guard=None if item.guard is None else guard_expr(item.guard))
    with pytest.raises(DispatchFail) as e:
        tcgen05_cp.copy_async_schedule_smem_tmem(op, ctx)
    return str(e.value), e.value.detail


# ----------------------------------------------------------------------------- 1. the absolute TMEM column
@pytest.mark.parametrize("tmem,dst,needles", [
    # placed after a 3-column buffer: column 3
    ("tmem   W: float32[128, 3]\ntmem   T: float32[128, 4]", "T",
     ("the copy's first TMEM column is 3: T starts at TMEM column 3 (after W, 3 columns)", "multiple of 4",
      "declare T first, or pad W to 4 columns")),
    # two buffers before it, the last one ends at column 6
    ("tmem   V: float32[128, 4]\ntmem   W: float32[128, 2]\ntmem   T: float32[128, 4]", "T",
     ("T starts at TMEM column 6 (after W, 2 columns)", "pad W to 4 columns")),
    # an alias 1 column into a buffer at column 0: the nearest aligned aliases
    ("tmem   T: float32[128, 12]\ntmem   U: float32[128, 4] at T + 5", "U",
     ("U is at T + 5, TMEM column 5", "alias U at T + 4 or T + 8")),
])
def test_the_buffers_place_is_checked_and_the_fix_named(tmem, dst, needles):
    why, det = _emitter_decline(_cell(tmem, dst, " shape=128x128b"))
    for n in needles:
        assert n in why, why
    assert (det.rule, det.buffer, det.shape) == ("tmem_col_align", dst, "128x128b")
    # the full dispatch refuses it at the copy, the rule on the why-table
    src = _cell(tmem, dst)
    with pytest.raises(DispatchError) as e:
        tilemagic.tilecopy(src, launch="off")
    assert e.value.span.line == src.splitlines().index(f"if tx == 0: thread.copy_async {dst} <- S") + 1 and "128x128b: the copy's first TMEM column is" in str(e.value.details)


def test_a_region_offset_that_makes_the_column_aligned_is_accepted():
    """T at column 2 and the copy 2 columns into it: TMEM column 4, a legal tcgen05.cp (the hardware and the
    emulation check the absolute column), simulated clean."""
    src = _cell("tmem   X: float32[128, 2]\ntmem   T: float32[128, 8]", "T[:, 2:6]")
    res = run_sim(src)
    assert res.launch.passed and not hazard_messages(res)
    assert "get_tmem_addr(tmem_addr[0], 0, 4)" in res.ir


def test_the_simulator_refuses_a_hand_built_cp_to_an_unaligned_column():
    """A cp the planner never emits (column 2) reaching the simulator: the emulation's status 13 text, located."""
    from tilemagic.sim.interpreter import Simulator

    cell = CP_SPLICE_CELL.format(dtype="float32", rows=128, cols=64, tcols=32, slayout="")
    kernel, _ = spliced_cp_kernel(cell, lambda b, addr: [
        ir.TcgenCp("128x128b", b["S"], 0, 0, 128, 0, addr, 0, 2, tmem=b["T"])])
    inputs = {"A": np.arange(128 * 64, dtype=np.uint32).view(np.float32).reshape(128, 64),
              "B": np.zeros((128, 32), np.float32)}
    with pytest.raises(LaunchError) as e:
        Simulator(kernel, inputs).run()
    assert str(e.value).startswith(tc.EMU_STATUS[13].format(None, 2)) or tc.EMU_STATUS[13].format(None, 2) in str(
        e.value), str(e.value)
    assert e.value.span is not None and e.value.span.line == 90


# ----------------------------------------------------------------------------- 2. located tcgen05 refusals
def test_the_sm_90a_refusal_is_at_the_first_tcgen05_statement():
    """A kernel whose only tcgen05 statements are the cp and its commit: refused at the cp (it was the tmem line)."""
    src = _cell("tmem   T: float32[128, 4]", "T", read=False)
    with pytest.raises(LoweringError) as e:
        tilemagic.tilecopy(src, launch="off", arch="sm_90a")
    assert e.value.span is not None and e.value.span.line == 11, e.value.render()
    assert "^" in e.value.render()


def test_the_sm_90a_refusal_of_a_kernel_with_only_lowering_fences_is_at_the_kernel_line():
    from tilemagic.pipeline import _check_target

    k = ir.Kernel("k", 32, (), (), (), (), 0, None, ir.Seq((ir.TcgenFence("after_thread_sync"),)))
    with pytest.raises(LoweringError) as e:
        _check_target(k, "sm_90a", Span(1, 1, 1, 7))
    assert e.value.span is not None and e.value.span.line == 1


# ----------------------------------------------------------------------------- 3. declines in the layout language
def test_a_two_dimensional_replica_is_written_as_the_language_writes_it():
    src = "\n".join([
        "kernel cpfix threads=128", "global A: float32[32, 4] = arange", "shared S: float32[32, 4]",
        "tmem   T: float32[32, 4] @ S[(32, 4) : (1@TLane, 1@TCol)] + R[(2, 2) : (64@TLane, 32@TLane)]",
        "mbarrier done count=1", "wg.copy S <- A", "fence.proxy.async", "cta_sync",
        "if tx == 0: thread.copy_async T <- S", "if tx == 0: tcgen05.commit done", "wait done phase 0"]) + "\n"
    with pytest.raises(DispatchError) as e:
        tilemagic.tilecopy(src, launch="off")
    text = str(e.value.details)
    assert "it has R[(2, 2) : (64@TLane, 32@TLane)]: declare T with + R[4 : 32@TLane]" in text, text
    assert "Iter(" not in text and "] + R[" not in text


def test_a_row_that_is_not_one_16_byte_unit_is_written_in_the_layout_language():
    """S's columns transposed in pairs (``S[(128, 2, 2) : (4, 1, 2)]``): a 128-bit row of a 128x128b copy is not 4
    consecutive elements, and the decline says what it is as the language writes it."""
    src = "\n".join([
        "kernel cpfix threads=128", "global A: float32[128, 4] = arange",
        "shared S: float32[128, 4] @ S[(128, 2, 2) : (4, 1, 2)]", "tmem   T: float32[128, 4]", "mbarrier done count=1",
        "wg.copy S <- A", "fence.proxy.async", "cta_sync", "if tx == 0: thread.copy_async T <- S shape=128x128b",
        "if tx == 0: tcgen05.commit done", "wait done phase 0"]) + "\n"
    with pytest.raises(DispatchError) as e:
        tilemagic.tilecopy(src, launch="off")
    text = str(e.value.details)
    assert "must be 4 consecutive float32 elements (16 B) in S; it is (2, 2) : (1, 2)" in text, text
    assert "Iter(" not in text


# ----------------------------------------------------------------------------- 4. the descriptor list
@pytest.mark.parametrize("cols,swz,n", [(32, 3, 8), (16, 2, 4), (8, 1, 2)])
def test_the_descriptor_list_counts_what_it_leaves_out(cols, swz, n):
    """128x128b copies of float32[128, cols]: one per 4 columns, 128-, 64- or 32-byte swizzled."""
    src = _cell(f"tmem   T: float32[128, {cols}]", "T", " shape=128x128b").replace("[128, 4]", f"[128, {cols}]")
    src = src.replace("(128, 4)", f"(128, {cols})").replace(
        f"shared S: float32[128, {cols}]", f"shared S: float32[128, {cols}]" + (f" @ swizzle(2, {swz}, 3)" if swz
                                                                                 else ""))
    res = run_sim(src)
    assert res.launch.passed and sum("tcgen05.cp.cta_group" in ln for ln in res.ir.splitlines()) == n
    block = next(t.get_text() for t in res.heatmap("tcgen05_cp").texts if t.get_text().startswith("0x"))
    shown = [ln for ln in block.splitlines() if ln.startswith("0x")]
    more = [ln for ln in block.splitlines() if "more" in ln]
    assert len(shown) == min(n, 4)
    assert more == ([f"… {n - 4} more (one per instruction)"] if n > 4 else []), block
