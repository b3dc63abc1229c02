"""Typing and lowering of the tcgen05.cp language (issue 14): ``tcgen05.commit`` / ``tcgen05.fence::KIND`` as items
and as ``ir.TcgenCommit`` / ``ir.TcgenFence`` under their guards, the copy_async options as the variant reads them,
replicas on tmem layouts (``TileLayout.replica``, lane footprints, ``at OTHER`` inside-checks), and the matrix
cells of ``tests/cells.py``."""

from __future__ import annotations

import pytest

from cells import CP_CELLS, cp_case_cell, cp_cell
from tilemagic.ir import nodes as ir
from tilemagic.errors import DispatchError, TileMagicError
from tilemagic.ir.evaluate import eval_static
from tilemagic.ir.nodes import walk, walk_scoped
from tilemagic.lang import parse
from tilemagic.lower.dispatch import TargetSpec
from tilemagic.lower.program import CopyItem, TcgenCommitItem, check, lower, mbarrier_prologue, tmem_lanes

HEAD = """\
kernel k threads=128
global A: float32[32, 4] = arange
global B: float32[128, 4] = zeros
shared S: float32[32, 4]
tmem   T: float32[32, 4] @ S[(32, 4) : (1@TLane, 1@TCol)] + R[4 : 32@TLane]
tmem   all: float32[128, 4] at T
local  r: float32[128, 4] @ S[(128, 4) : (1@tid_in_wg, 1)]
mbarrier done
"""
TAIL = """\
wg.copy S <- A
fence.proxy.async
cta_sync
{cp}if warpid == 0 and laneid == 0: tcgen05.commit done
wait done phase 0
if warpid < 4: tcgen05.fence::after_thread_sync
tcgen05.fence::before_thread_sync
wg.copy_async r <- all
wait ld
wg.copy B <- r
"""


def lowered(src: str) -> ir.Kernel:
    kernel, _, _ = lower(check(parse(src)), TargetSpec())
    return kernel


def located(src: str, line: int, col: int, fragment: str) -> TileMagicError:
    with pytest.raises(TileMagicError) as ei:
        check(parse(src))
    err = ei.value
    assert (err.line, err.col) == (line, col), err.render()
    assert fragment in err.message and err.hint, err.render()
    assert "^" in err.with_source(src).render()
    return err


# ----------------------------------------------------------------------------- commit and fences
def test_commit_and_fences_lower_under_their_guards_with_their_spans():
    kernel = lowered(HEAD + TAIL.format(cp=""))
    found = {}
    for s, scope in walk_scoped(kernel.body):
        if isinstance(s, (ir.TcgenCommit, ir.TcgenFence)) and s.span is not None and s.span.line in (12, 14, 15):
            found[s.span.line] = (s, scope)
    commit, cscope = found[12]
    assert isinstance(commit, ir.TcgenCommit) and commit.bar.name == "done" and commit.bar.is_mbarrier
    assert (commit.cta_group, commit.cta_mask) == (1, None)
    assert commit.chain == "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64"
    (guard,) = [g for g in cscope if isinstance(g, ir.GuardIf)]
    on = [t for t in range(128) if eval_static(guard.cond, t)]
    assert on == [0]
    after, ascope = found[14]
    assert isinstance(after, ir.TcgenFence) and after.kind == "after_thread_sync"
    (g2,) = [g for g in ascope if isinstance(g, ir.GuardIf)]
    assert [t for t in range(128) if eval_static(g2.cond, t)] == list(range(128))
    before, bscope = found[15]
    assert isinstance(before, ir.TcgenFence) and before.kind == "before_thread_sync"
    assert not [g for g in bscope if isinstance(g, ir.GuardIf)]


def test_the_commit_leaves_the_mbarrier_prologue_as_it_was():
    tp = check(parse(HEAD + TAIL.format(cp="")))
    kernel, _, _ = lower(tp, TargetSpec())
    prologue = mbarrier_prologue(tp.mbarriers, tp.cluster)
    head = kernel.body.body[:len(prologue)]
    assert [type(s) for s in head] == [type(s) for s in prologue]
    inits = [s for s in walk(ir.Seq(tuple(head))) if isinstance(s, ir.MbarInit)]
    assert [(m.bar.name, m.count) for m in inits] == [("done", 1)]


def test_the_copy_into_tmem_is_a_copy_item_with_the_options_the_variant_reads():
    src = HEAD + TAIL.format(cp="if tx == 0: thread.copy_async T <- S shape=32x128b multicast=warpx4 cta_group=2 "
                                "decompress=b8x16.b6x16_p32\n")
    tp = check(parse(src))
    (item,) = [it for it in tp.items if isinstance(it, CopyItem) and it.op.dst.buf.name == "T"]
    op = item.op
    assert (op.op, op.exec_scope, op.src.buf.scope, op.dst.buf.scope) == ("copy_async", "thread", "shared", "tmem")
    assert op.option("shape") == "32x128b" and op.option("multicast") == "warpx4"
    assert op.option("cta_group") == 2 and isinstance(op.option("cta_group"), int)
    assert op.option("decompress") == "b8x16.b6x16_p32"
    assert op.option_span("multicast").col == src.splitlines()[11].index("multicast") + 1
    assert [type(it).__name__ for it in tp.items].count("TcgenCommitItem") == 1


@pytest.mark.parametrize("line,col,fragment", [
    ("if tx == 0: tcgen05.commit dne", 28, "unknown mbarrier 'dne' in `tcgen05.commit`"),
    ("if tx == 0: tcgen05.commit S", 28, "'S' in `tcgen05.commit` is a shared buffer, not an mbarrier"),
    ("if tx == 0: tcgen05.commit done cta_mask=0b1", 33, "the kernel has none"),
])
def test_commit_misuse(line, col, fragment):
    src = HEAD + "wg.copy S <- A\n" + line + "\n"
    located(src, 10, col, fragment)


def test_a_commit_mask_names_ranks_of_the_cluster_only():
    base = ("kernel k threads=128 cluster=2\nshared S: float32[32, 4]\ntmem T: float32[128, 4]\nmbarrier done\n")
    tp = check(parse(base + "if tx == 0: tcgen05.commit done cta_mask=0b11\n"))
    (item,) = [it for it in tp.items if isinstance(it, TcgenCommitItem)]
    assert item.cta_mask == 3 and item.bar.name == "done"
    located(base + "if tx == 0: tcgen05.commit done cta_mask=0b101\n", 5, 33, "names rank 2, the cluster has 2 CTAs")


def test_a_commit_without_tensor_memory_is_refused():
    src = "kernel k threads=32\nmbarrier done\nif tx == 0: tcgen05.commit done\n"
    located(src, 3, 13, "`tcgen05.commit` in a kernel without tensor memory")


def test_a_guard_on_a_commit_must_select_a_thread():
    src = HEAD + "if tx == 500: tcgen05.commit done\n"
    located(src, 9, 1, "selects no thread")


# ----------------------------------------------------------------------------- replicas
def test_a_replica_reaches_the_tile_layout_and_the_lane_footprint():
    tp = check(parse(HEAD))
    t = tp.buffers["T"]
    assert str(t.layout) == "S[(32, 4) : (1@TLane, 1@TCol)] + R[4 : 32@TLane]"
    assert [(i.extent, i.stride, i.axis) for i in t.layout.replica] == [(4, 32, "TLane")]
    assert tmem_lanes(t.layout) == (0, 127)
    assert t.tmem_ncols == 4 and tp.buffers["all"].tmem_col == t.tmem_col
    two = check(parse("tmem T: float32[32, 4] @ S[(32, 4) : (1@TLane, 1@TCol)] + R[(2, 2) : (32@TLane, 64@TLane)]"))
    assert tmem_lanes(two.buffers["T"].layout) == (0, 127)
    f0123 = check(parse("tmem T: float32[64, 4] @ S[(2, 32, 4) : (64@TLane, 1@TLane, 1@TCol)] + R[2 : 32@TLane]"))
    assert tmem_lanes(f0123.buffers["T"].layout) == (0, 127)


def test_replicas_past_lane_127_are_a_located_error():
    src = "tmem T: float32[64, 4] @ S[(64, 4) : (1@TLane, 1@TCol)] + R[4 : 32@TLane]\n"
    err = located(src, 1, src.index("+ R") + 1, "reaches TMEM lane 159 with its replicas; TMEM has 128 lanes")
    assert "63 + 96" in err.hint


def test_an_alias_must_stay_inside_the_replicated_lanes():
    ok = check(parse(HEAD))
    assert ok.buffers["all"].alias_of == "T"
    src = ("tmem T: float32[32, 4] @ S[(32, 4) : (1@TLane, 1@TCol)] + R[2 : 32@TLane]\n"
           "tmem all: float32[128, 4] at T\n")
    located(src, 2, src.splitlines()[1].index("at T") + 1, "reaches TMEM lanes 0..127; T with its replicas covers "
                                                            "lanes 0..63")


def test_the_printer_shows_a_replica_as_tvm_spells_it():
    from tilemagic.export.tvmscript import layout_text
    from tilemagic.ir.printer import print_ir

    tp = check(parse(HEAD + "wg.copy S <- A\n"))
    assert "+ T.R[4:32 @ Axis.TLane]" in layout_text(tp.buffers["T"].layout)  # tvm.tirx.layout.R
    kernel, _, _ = lower(tp, TargetSpec())
    out = print_ir(kernel)
    assert "R[4 : 32@TLane]" in (out if isinstance(out, str) else out[0])


# ----------------------------------------------------------------------------- the matrix cells
@pytest.mark.parametrize("case", CP_CELLS, ids=lambda c: f"{c.key}-sw{c.swizzle}-{c.dtype}{'-off' * c.offsets}")
def test_every_matrix_cell_type_checks_and_everything_but_the_cp_lowers(case):
    cell = cp_case_cell(case)
    tp = check(parse(cell))
    cp_line = next(i for i, t in enumerate(cell.splitlines(), 1) if "thread.copy_async" in t)
    (item,) = [it for it in tp.items if isinstance(it, CopyItem) and it.op.dst.buf.scope == "tmem"
               and it.op.src.buf.scope == "shared"]
    assert item.op.span.line == cp_line
    try:  # until the smem->tmem variant lands no variant takes the copy: the only op that fails is it
        lower(tp, TargetSpec())
    except DispatchError as e:
        assert e.span.line == cp_line, e.render()
    no_cp = "\n".join(t for t in cell.splitlines() if "thread.copy_async" not in t) + "\n"
    lower(check(parse(no_cp)), TargetSpec())


def test_the_matrix_covers_every_shape_swizzle_and_width():
    from tilemagic.arch.tcgen05 import CP_SHAPES

    plain = {(c.key, c.swizzle, c.dtype) for c in CP_CELLS if not c.offsets}
    assert plain == {(k, s, d) for k in CP_SHAPES for s in range(4) for d in ("bfloat16", "float32")}
    assert sum(c.offsets for c in CP_CELLS) >= 3


def test_cp_cell_checks_every_replica():
    cell = cp_cell("32x128b.warpx4", 0, "float32")
    checks = [t for t in cell.splitlines() if t.startswith("check")]
    assert checks == ["check B[0:128, :] == A[0:32, :]"] or len(checks) == 4
    cell = cp_cell("64x128b.warpx2::01_23", 1, "bfloat16")
    assert [t for t in cell.splitlines() if t.startswith("check")] == [
        "check B[0:32, :] == A[0:32, :]", "check B[32:96, :] == A[0:64, :]", "check B[96:128, :] == A[32:64, :]"]
    assert "fence.proxy.async" not in cp_cell("128x256b", 3, "bfloat16", fence=False)
