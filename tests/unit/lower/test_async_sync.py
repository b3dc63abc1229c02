"""Checking and lowering the synchronisation of asynchronous copies: mbarrier buffers and their prologue,
guards as ir.If, expect_tx=auto from the TMA copies (hand-counted), the located errors of misuse; the printed
IR, the CUDA and the TVMScript export of the new statements."""

from __future__ import annotations

import shutil

import pytest
from cells import mbar_cell as tma_cell

from tilemagic.codegen.cuda import generate
from tilemagic.errors import TileMagicError
from tilemagic.export.tvmscript import ExportError, export_tvmscript
from tilemagic.ir import nodes as ir
from tilemagic.ir.printer import print_ir
from tilemagic.lang import parse
from tilemagic.lower import dispatch as D
from tilemagic.lower.program import check, issue_count, lower

TARGET = D.TargetSpec()


# ----------------------------------------------------------------------------- a stand-in TMA variant
# Independent of tma_auto's planner: these tests need only TmaCopy nodes naming mbar=BAR,
# with a box, a loop and an election the counts must see: `rows / 2`-row boxes issued in a 2-trip loop, each
# issue by the threads of `elect` (a condition of the variant itself, inside the op's guard).
ELECT: dict[str, object] = {"cond": None}  # an Expr, or a function of the loop variable giving one


def _g2s_only(op, ctx):
    return (op.src.buf.scope == "global" and op.dst.buf.scope == "shared", "global->shared only")


def _stand_in_tma(op, ctx):
    rows, cols = op.src.extents
    half = rows // 2
    tmap = ir.TensorMap("tm_" + op.src.buf.name, op.src.buf, "FLOAT32", op.src.buf.elem_bytes,
                        tuple(reversed(op.src.buf.shape)), (op.src.buf.shape[1] * op.src.buf.elem_bytes,),
                        (cols, half), (1, 1))
    (i,) = ctx.builder.loop_vars(1)
    copy = ir.TmaCopy("g2s", tmap, op.dst.buf, 0,
                      (ir.Const(op.src.begins[1]), ir.add(ir.Const(op.src.begins[0]), ir.mul(i, half))),
                      mbar=op.option("mbar"))
    elect = ELECT["cond"]
    body: ir.Stmt = copy if elect is None else ir.If(elect(i) if callable(elect) else elect, copy)
    return [ir.Grid((i,), (2,), body)], D.EmitSummary(copy.chain, 2)


@pytest.fixture
def stand_in_tma():
    D.register_dispatch("copy_async", "cuda", variant="stand_in_tma", priority=-100,
                        when=[D.predicate("g2s", _g2s_only)])(_stand_in_tma)
    ELECT["cond"] = None
    yield ELECT
    D._TABLE[("copy_async", "cuda")][:] = [c for c in D._TABLE[("copy_async", "cuda")]
                                           if c.variant != "stand_in_tma"]


def lowered(src: str):
    prog = parse(src)
    tp = check(prog)
    kernel, records, _ = lower(tp, TARGET)
    return prog, tp, kernel


def arrives(kernel) -> list[ir.MbarArrive]:
    return [s for s in ir.walk(kernel.body) if isinstance(s, ir.MbarArrive)]


# ----------------------------------------------------------------------------- buffers and the prologue
def test_an_mbarrier_is_a_shared_uint64_buffer_initialised_by_thread_0_before_the_tmem_prologue():
    src = ("kernel k threads=128\ntmem T: float32[128, 32]\nlocal r: float32[128, 32] @ S[(128, 32) : "
           "(1@tid_in_wg, 1)]\nmbarrier full\nmbarrier empty count=4\nwg.copy_async T <- r\nwait st")
    _, tp, kernel = lowered(src)
    full, empty = tp.mbarriers
    assert (full.scope, full.dtype, full.shape, full.mbar_count) == ("shared", "uint64", (1,), 1)
    assert empty.mbar_count == 4 and empty in kernel.shared
    body = kernel.body.body
    assert isinstance(body[0], ir.Comment) and "thread 0 initialises full (count 1), empty (count 4)" in body[0].text
    init = body[1]
    assert isinstance(init, ir.If) and init.cond is ir.Bin("==", ir.ThreadVar("tx"), ir.Const(0))
    assert [(s.bar.name, s.count) for s in init.then.body] == [("full", 1), ("empty", 4)]
    assert isinstance(body[2], ir.Fence) and body[2].kind == "mbarrier_init"
    assert isinstance(body[3], ir.Barrier)
    assert isinstance(body[4], ir.Comment) and body[4].text.startswith("TMEM: allocate")


def test_no_mbarrier_no_prologue():
    _, _, kernel = lowered("kernel k threads=32\nglobal A: float32[32]\nshared S: float32[32]\nwarp.copy S <- A")
    assert not any(isinstance(s, (ir.MbarInit, ir.Fence)) for s in ir.walk(kernel.body))


def test_shared_memory_counts_the_mbarriers_8_bytes_each():
    from tilemagic.arch.limits import limits_for

    static = limits_for("sm_100a").static_smem
    # a buffer that leaves 16 bytes: two 8-byte mbarriers fit, a third does not (not 16 bytes per mbarrier)
    ok = f"kernel k threads=32\nshared S: float32[{(static - 16) // 4}]\nmbarrier a\nmbarrier b"
    check(parse(ok), arch="sm_100a")
    with pytest.raises(TileMagicError) as ei:
        check(parse(ok + "\nmbarrier c"), arch="sm_100a")
    assert ei.value.line == 5 and f"{static + 8} bytes up to 'c'" in ei.value.message
    # a data buffer after an mbarrier starts 16-byte aligned: 8 + 8 padding + the buffer rounded to 16 bytes
    with pytest.raises(TileMagicError) as ei:
        check(parse(f"kernel k threads=32\nmbarrier a\nshared S: float32[{(static - 8) // 4}]"), arch="sm_100a")
    assert f"{static + 16} bytes up to 'S'" in ei.value.message


# ----------------------------------------------------------------------------- guards
def test_guards_become_if_around_the_statement_and_the_copy_marker_stays_outside():
    src = ("kernel k threads=128\nglobal A: float32[32, 32] = arange\nshared S: float32[32, 32]\nmbarrier full\n"
           "if warpid == 1: warp.copy S <- A\nif tx == 0 and laneid < 4: arrive full\nif wgid == 0: commit_group\n"
           "wait full phase 0\nfence.proxy.async")
    _, _, kernel = lowered(src)
    body = list(kernel.body.body[4:])  # after the mbarrier prologue
    assert isinstance(body[0], ir.Comment) and body[0].op == "copy" and "if warpid == 1: warp.copy" in body[0].text
    guard = body[1]
    assert isinstance(guard, ir.GuardIf) and guard.cond is ir.Bin("==", ir.ThreadVar("warpid"), ir.Const(1))
    assert any(isinstance(s, ir.VecMove) for s in ir.walk(guard.then))
    arrive = body[2]
    assert arrive.cond is ir.Bin("and", ir.Bin("==", ir.ThreadVar("tx"), ir.Const(0)),
                                 ir.Bin("<", ir.ThreadVar("laneid"), ir.Const(4)))
    assert isinstance(arrive.then.body[0], ir.MbarArrive) and arrive.then.body[0].expect_tx == 0
    assert isinstance(body[3], ir.If) and isinstance(body[3].then.body[0], ir.AsyncGroup)
    assert isinstance(body[4], ir.MbarWait) and body[4].parity == 0
    assert isinstance(body[5], ir.Fence) and body[5].kind == "proxy_async"
    assert all(s.span is not None for s in body)


@pytest.mark.parametrize("src,line,col,fragment", [
    ("kernel k threads=64\nmbarrier b\nif warpid == 2: arrive b", 3, 1, "selects no thread of the 64-thread CTA"),
    ("kernel k threads=128\nglobal A: float32[32]\nshared S: float32[32]\nif laneid < 16: warp.copy S <- A",
     4, 1, "splits warp 0 (threads 0..31)"),
    ("kernel k threads=256\nglobal A: float32[128]\nshared S: float32[128]\nif warpid == 5: wg.copy S <- A",
     4, 1, "splits warpgroup 1 (threads 128..255)"),
    ("kernel k threads=128\ntmem T: float32[128, 32]\nif laneid < 4: wait ld", 3, 1,
     "splits warp 0 (threads 0..31): `wait ld` (.sync.aligned) runs on all 32 threads"),
    ("kernel k threads=48\ntmem T: float32[128, 32]\nif tx < 36: wait st", 3, 1,
     "splits warp 1 (threads 32..47)"),  # the CTA's last warp is partial: its 16 threads are the instance
    ("kernel k threads=32\nmbarrier b\narrive c", 3, 8, "unknown mbarrier 'c' in `arrive`"),
    ("kernel k threads=32\nshared S: float32[4]\nwait S phase 0", 3, 6, "'S' in `wait` is a shared buffer, not an "
                                                                     "mbarrier"),
    ("kernel k threads=32\nglobal A: float32[4]\nshared S: float32[4]\nthread.copy_async S <- A mbar=nope",
     4, 31, "unknown mbarrier 'nope' in `mbar=`"),
    ("kernel k threads=32\nglobal A: float32[4]\nshared S: float32[4]\nthread.copy_async S <- A mbar=A",
     4, 31, "'A' in `mbar=` is a global buffer, not an mbarrier"),
    ("kernel k threads=32\nglobal A: float32[4]\nmbarrier full\nwarp.copy full <- A", 4, 11,
     "'full' is an mbarrier, not a buffer of data"),
    ("kernel k threads=32\nglobal A: float32[4]\nmbarrier A", 3, 10, "'A' is declared twice"),
    ("kernel k threads=32\nmbarrier k", 2, 10, "mbarrier 'k' has the kernel's name"),
    ("kernel k threads=32\nmbarrier b\nwait b phase 0\narrive b\nwait b phase 1\nglobal A: float32[4]\n"
     "check b == A", 7, 7, "'b' is an mbarrier"),
])
def test_checker_errors_are_located(src, line, col, fragment):
    with pytest.raises(TileMagicError) as ei:
        check(parse(src))
    assert (ei.value.line, ei.value.col) == (line, col), ei.value.render()
    assert fragment in ei.value.message, ei.value.render()
    assert ei.value.hint


# ----------------------------------------------------------------------------- expect_tx=auto, hand-counted
# box = 16 rows x 32 float32 = 2048 B; the stand-in issues 2 boxes (a 2-trip loop) per executing thread
BOX = 16 * 32 * 4


@pytest.mark.parametrize("arrive,copies,elect,per_thread", [
    # one elected thread issues: 2 trips x 1 thread x 2048 B
    ("if tx == 0: arrive full expect_tx=auto",
     ["if tx == 0: thread.copy_async S <- A[0:32, :] mbar=full dispatch=stand_in_tma"], None, 2 * BOX),
    # no guard: every one of the 128 threads issues both boxes (what the GPU would do)
    ("if tx == 0: arrive full expect_tx=auto",
     ["thread.copy_async S <- A[0:32, :] mbar=full dispatch=stand_in_tma"], None, 128 * 2 * BOX),
    # the variant elects lane 0 of each warp: 4 warps x 2 trips
    ("if tx == 0: arrive full expect_tx=auto",
     ["thread.copy_async S <- A[32:64, :] mbar=full dispatch=stand_in_tma"], "laneid0", 4 * 2 * BOX),
    # two copies, two guards: warp 1 lanes 0..1 (2 threads) and thread 0
    ("if tx == 0: arrive full expect_tx=auto",
     ["if warpid == 1 and laneid < 2: thread.copy_async S <- A[0:32, :] mbar=full dispatch=stand_in_tma",
      "if tx == 0: thread.copy_async S <- A[32:64, :] mbar=full dispatch=stand_in_tma"], None, (2 + 1) * 2 * BOX),
    # two arriving threads share the bytes
    ("if tx < 2: arrive full expect_tx=auto",
     ["if tx == 0: thread.copy_async S <- A[0:32, :] mbar=full dispatch=stand_in_tma"], None, BOX),
    # the guard's loop variable condition inside the variant: only trip 0 (i == 0) issues
    ("if tx == 0: arrive full expect_tx=auto",
     ["if tx == 0: thread.copy_async S <- A[0:32, :] mbar=full dispatch=stand_in_tma"], "trip0", BOX),
])
def test_expect_tx_auto_is_the_bytes_times_the_issues(stand_in_tma, arrive, copies, elect, per_thread):
    if elect == "laneid0":
        stand_in_tma["cond"] = ir.Bin("==", ir.ThreadVar("laneid"), ir.Const(0))
    elif elect == "trip0":
        stand_in_tma["cond"] = lambda i: ir.Bin("==", i, ir.Const(0))
    _, _, kernel = lowered(tma_cell(arrive, copies))
    (node,) = arrives(kernel)
    assert node.expect_tx == per_thread
    arrivers = 2 if arrive.startswith("if tx < 2") else 1
    assert sum(b for _, b in node.auto_from) == per_thread * arrivers  # auto_from: each copy's total bytes
    assert [line for line, _ in node.auto_from] == [7 + k for k in range(len(copies))]


def test_expect_tx_auto_stops_at_the_next_wait_on_its_barrier(stand_in_tma):
    src = tma_cell("if tx == 0: arrive full expect_tx=auto",
                   ["if tx == 0: thread.copy_async S <- A[0:32, :] mbar=full dispatch=stand_in_tma",
                    "wait other phase 0",  # another barrier's wait does not end the range
                    "if tx == 0: thread.copy_async S <- A[32:64, :] mbar=full dispatch=stand_in_tma",
                    "wait full phase 0",
                    "if tx == 0: arrive full expect_tx=auto",
                    "if tx == 0: thread.copy_async S <- A[0:32, :] mbar=full dispatch=stand_in_tma"],
                   tail="wait full phase 1")
    _, _, kernel = lowered(src)
    first, second = arrives(kernel)
    assert (first.expect_tx, first.auto_from) == (4 * BOX, ((7, 2 * BOX), (9, 2 * BOX)))
    assert (second.expect_tx, second.auto_from) == (2 * BOX, ((12, 2 * BOX),))


def test_expect_tx_auto_ends_at_the_next_auto_arrive_on_its_barrier(stand_in_tma):
    # two producers of a count-2 barrier, each counting its own copy; a plain arrive does not end the range
    src = tma_cell("if tx == 0: arrive other expect_tx=auto",
                   ["if tx == 0: thread.copy_async S <- A[0:32, :] mbar=other dispatch=stand_in_tma",
                    "if tx == 32: arrive full",
                    "if tx == 32: arrive other expect_tx=auto",
                    "if tx == 32: thread.copy_async S <- A[32:64, :] mbar=other dispatch=stand_in_tma",
                    "if tx == 32: thread.copy_async S <- A[32:64, :] mbar=other dispatch=stand_in_tma"],
                   tail="wait other phase 0")
    _, _, kernel = lowered(src)
    first, _plain, second = arrives(kernel)
    assert (first.expect_tx, first.auto_from) == (2 * BOX, ((7, 2 * BOX),))
    assert (second.expect_tx, second.auto_from) == (4 * BOX, ((10, 2 * BOX), (11, 2 * BOX)))


def test_expect_tx_auto_counts_only_copies_naming_its_barrier(stand_in_tma):
    src = tma_cell("if tx == 0: arrive other expect_tx=auto",
                   ["if tx == 0: thread.copy_async S <- A[0:32, :] mbar=full dispatch=stand_in_tma"],
                   tail="wait other phase 0")
    with pytest.raises(TileMagicError) as ei:
        lowered(src)
    assert (ei.value.line, ei.value.col) == (6, 13)
    assert "expect_tx=auto on 'other' covers no copy" in ei.value.message and ei.value.hint


def test_expect_tx_auto_errors(stand_in_tma):
    odd = tma_cell("if tx < 3: arrive full expect_tx=auto",
                   ["if tx == 0: thread.copy_async S <- A[0:32, :] mbar=full dispatch=stand_in_tma"])
    with pytest.raises(TileMagicError, match="cannot be shared evenly by the 3 threads"):
        lowered(odd)
    big = tma_cell("if tx == 0: arrive full expect_tx=auto",
                   ["thread.copy_async S <- A mbar=full dispatch=stand_in_tma"], threads=256)
    with pytest.raises(TileMagicError, match="more than an mbarrier's tx-count holds"):
        lowered(big)  # 256 threads x 2 x 32 rows x 128 B = 2 MiB


def test_issue_count_of_thread_guards_and_loops():
    i = ir.LoopVar("i")
    g = ir.Grid((i,), (3,), ir.Seq(()))
    lane0 = ir.If(ir.Bin("==", ir.ThreadVar("laneid"), ir.Const(0)), ir.Seq(()))
    odd = ir.If(ir.Bin("==", ir.Bin("%", i, ir.Const(2)), ir.Const(1)), ir.Seq(()))
    assert issue_count((), 96) == 96
    assert issue_count((g, lane0), 96) == 3 * 3
    assert issue_count((g, odd, lane0), 96) == 1 * 3


# ----------------------------------------------------------------------------- printed IR, CUDA, export
SYNC_CELL = """kernel k threads=128
global A: float32[64, 32] = arange
shared S: float32[32, 32]
mbarrier full
mbarrier empty count=128
if tx == 0: arrive full expect_tx=auto
if tx == 0: thread.copy_async S <- A[0:32, :] mbar=full dispatch=stand_in_tma
wait full phase 0
arrive empty
if warpid == 1 and laneid < 4: wait empty phase 1
commit_group
wait_group 1
fence.proxy.async
if tx == 0: bulk_commit_group
if tx == 0: bulk_wait_group 0 read
bulk_wait_group 2
"""


def test_printed_ir_in_tvms_spelling_with_the_auto_count_and_its_source(stand_in_tma):
    _, _, kernel = lowered(SYNC_CELL)
    kernel.body = ir.Seq(tuple(s for s in kernel.body.body if not _has_tma(s)))  # C's printer prints TmaCopy
    text, lines = print_ir(kernel)
    rows = [r.strip() for r in text.splitlines()]
    for want in ['full = T.alloc_shared((1,), "uint64")  # mbarrier, count 1',
                 "T.ptx.mbarrier.init.shared.b64(T.address_of(empty[0]), T.uint32(128))",
                 "T.ptx.fence.mbarrier_init.release.cluster()",
                 "T.ptx.mbarrier.arrive.expect_tx.shared.b64(T.address_of(full[0]), T.uint32(4096))  # expect_tx=auto:"
                 " 4096 B per arriving thread, from the copies L7: 4096 B",
                 "T.cuda.mbarrier_wait(T.address_of(full[0]), 0)",
                 "T.ptx.mbarrier.arrive.shared.b64(T.address_of(empty[0]), T.uint32(1))",
                 "if warpid == 1 and laneid < 4:", "T.cuda.mbarrier_wait(T.address_of(empty[0]), 1)",
                 "T.ptx.cp.async_.commit_group()", "T.ptx.cp.async_.wait_group(1)",
                 "T.ptx.fence.proxy.async_.shared__cta()", "T.ptx.cp.async_.bulk.commit_group()",
                 "T.ptx.cp.async_.bulk.wait_group.read(0)", "T.ptx.cp.async_.bulk.wait_group(2)"]:
        assert want in rows, want
    # each statement's line maps back to its description line
    assert lines[rows.index("T.cuda.mbarrier_wait(T.address_of(empty[0]), 1)")] == 10


def test_cuda_of_the_synchronisation(stand_in_tma):
    _, _, kernel = lowered(SYNC_CELL)
    kernel.body = ir.Seq(tuple(s for s in kernel.body.body if not _has_tma(s)))  # C's codegen prints TmaCopy
    cu = generate(kernel).text
    for want in ["__shared__ alignas(8) uint64_t full[1];  // mbarrier, count 1",
                 'asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :  : '
                 '"r"((uint32_t)__cvta_generic_to_shared(empty)), "r"(128) : "memory");',
                 'asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");',
                 'asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :  : '
                 '"r"((uint32_t)__cvta_generic_to_shared(full)), "r"(4096) : "memory");  // expect_tx=auto: L7 4096 B',
                 'asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];"',
                 "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;",
                 'asm volatile("cp.async.commit_group;" ::: "memory");',
                 'asm volatile("cp.async.wait_group 1;" ::: "memory");',
                 'asm volatile("fence.proxy.async.shared::cta;" ::: "memory");',
                 'asm volatile("cp.async.bulk.commit_group;" ::: "memory");',
                 'asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");',
                 'asm volatile("cp.async.bulk.wait_group 2;" ::: "memory");',
                 "if (warpid == 1 && laneid < 4) {",
                 "// the asynchronous-copy synchronisation needs sm_90 or newer"]:
        assert want in cu, want
    _, _, only_groups = lowered("kernel k threads=32\ncommit_group\nwait_group 0")
    assert "needs sm_80 or newer" in generate(only_groups).text


def _has_tma(stmt):
    return any(isinstance(s, ir.TmaCopy) for s in ir.walk(stmt))


@pytest.mark.nvcc
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_the_synchronisation_assembles_with_ptxas(stand_in_tma, arch):
    from tilemagic.runtime.nvcc import nvcc_compile

    _, _, kernel = lowered(SYNC_CELL)
    kernel.body = ir.Seq(tuple(s for s in kernel.body.body if not _has_tma(s)))
    r = nvcc_compile(generate(kernel).text, arch)
    assert r.ok, r.log


def test_tvmscript_export_of_the_synchronisation(stand_in_tma):
    prog, tp, kernel = lowered(SYNC_CELL)
    text = export_tvmscript(prog, tp, kernel=kernel).text
    rows = [r.strip() for r in text.splitlines()]
    for want in ["tx = T.thread_id([128])", "warpid = T.warp_id([4])", "laneid = T.lane_id([32])",
                 'full = T.alloc_shared((1,), "uint64")  # mbarrier, count 1',
                 "T.ptx.mbarrier.init.shared.b64(T.address_of(full[0]), T.uint32(1))",
                 "T.ptx.fence.mbarrier_init.release.cluster()",
                 "# expect_tx=auto: 4096 bytes (tilemagic)",
                 "T.ptx.mbarrier.arrive.expect_tx.shared.b64(T.address_of(full[0]), T.uint32(4096))",
                 'Tx.copy_async(S[0:32, 0:32], A[0:32, 0:32], dispatch="stand_in_tma", mbar=T.address_of(full[0]))',
                 "T.cuda.mbarrier_wait(T.address_of(full[0]), 0)",
                 "if warpid == 1 and laneid < 4:", "T.ptx.cp.async_.wait_group(1)",
                 "T.ptx.fence.proxy.async_.shared__cta()", "T.ptx.cp.async_.bulk.wait_group.read(0)"]:
        assert want in rows, want
    # the guard is above the op it guards
    k = rows.index('Tx.copy_async(S[0:32, 0:32], A[0:32, 0:32], dispatch="stand_in_tma", mbar=T.address_of(full[0]))')
    assert rows[k - 1] == "if tx == 0:"
    with pytest.raises(ExportError) as ei:  # without the lowered kernel the auto count is unknown: located
        export_tvmscript(prog, tp)
    assert (ei.value.line, ei.value.col) == (6, 13)


def test_export_guards_on_axes_a_cta_size_does_not_bind():
    src = "kernel k threads=64\nmbarrier b\nif wgid == 0 and tid_in_wg < 33: arrive b expect_tx=16\nwait b phase 0"
    prog = parse(src)
    text = export_tvmscript(prog, check(prog)).text
    assert "if tx // 128 == 0 and tx % 128 < 33:" in text


def test_instruction_lists_see_the_variants_election_not_the_users_guard():
    from tilemagic.export.instructions import ours_instructions

    src = ("kernel k threads=64\nglobal A: float32[4, 6]\nshared S: float32[4, 6]\nglobal B: float32[32]\n"
           "shared T: float32[32]\nif warpid == 1: warp.copy S <- A\nif warpid == 0: warp.copy T <- B")
    _, _, kernel = lowered(src)
    ours = ours_instructions(kernel)
    assert all(i.guarded for i in ours[6])  # the fallback's elected thread (4x6 does not split over 32 threads)
    assert ours[7] and not any(i.guarded for i in ours[7])  # gmem_smem under the user's guard only
