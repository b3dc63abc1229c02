"""Lowering of cluster kernels (issue 13, second milestone): ``Kernel.cluster``, the per-rank lowering of
statements in ``cta_rank`` (one copy when every rank's IR is the same, rank branches otherwise, one variant for
every rank), ``cluster_sync``, the prologue's cluster barrier, and ``expect_tx=auto`` per receiving CTA counted
from the IR the multicast and dsmem variants emit (``TmaCopy(cta_mask=...)``, ``BulkCopy``: built here by a
stand-in dispatcher, as parts T and D will build them)."""

from __future__ import annotations

import pytest

from tilemagic.errors import LoweringError
from tilemagic.ir import nodes as ir
from tilemagic.lang.parser import parse
from tilemagic.lower import program
from tilemagic.lower.dispatch import DispatchRecord, TargetSpec
from tilemagic.lower.program import RANK_VAR, check, issue_count, lower

TARGET = TargetSpec("cuda", "sm_90a")


def _lower(src: str):
    return lower(check(parse(src), arch="sm_90a"), TARGET)


def _rank_ifs(stmts):
    return [s for s in stmts if isinstance(s, ir.GuardIf) and RANK_VAR in ir.iter_exprs(s.cond)]


def _top(kernel):
    return list(kernel.body.body)


def _by_line(kernel, line):
    """The top-level statements of the copy at ``line`` (after its header comment, up to the next one)."""
    out, on = [], False
    for s in _top(kernel):
        if isinstance(s, ir.Comment) and s.op is not None:
            on = s.span.line == line
            continue
        if on:
            out.append(s)
    return out


CELL = """kernel halves threads=128 cluster={C}
global A: float16[{rows}, 64] = arange
global B: float16[{rows}, 64] = zeros
shared S: float16[64, 64]
wg.copy S <- A[{src}, :]
wg.copy B[{dst}, :] <- S
cluster_sync
"""


def test_kernel_records_the_cluster_and_cluster_sync_lowers_to_the_cluster_barrier():
    kernel, _, _ = _lower(CELL.format(C=2, rows=128, src="64*cta_rank : 64*cta_rank+64", dst="0:64"))
    assert kernel.cluster == 2
    assert isinstance(_top(kernel)[-1], ir.ClusterSync) and _top(kernel)[-1].span.line == 7


def test_a_statement_in_cta_rank_is_lowered_per_rank_with_concrete_regions():
    tp = check(parse(CELL.format(C=2, rows=128, src="64*cta_rank : 64*cta_rank+64", dst="0:64")), arch="sm_90a")
    item = tp.items[0]
    assert [op.rank for op in item.ranked] == [0, 1]
    assert [op.src.begins for op in item.ranked] == [(0, 0), (64, 0)]
    assert item.op is item.ranked[0] and tp.copy_ops[0] is item.ranked[0]
    assert tp.items[1].ranked == () and tp.items[1].op.rank is None  # the other copy does not depend on the rank
    kernel, records, _ = lower(tp, TARGET)
    branches = _rank_ifs(_by_line(kernel, 5))
    assert [str(b.cond.b.value) for b in branches] == ["0", "1"] and [b.cond.op for b in branches] == ["=="] * 2
    assert records[0].notes == (("rank 1", "same variant", "plan per rank"),)
    assert "rank 1 " in records[0].table() and "plan per rank" in records[0].table()
    assert records[1].notes == () and not _rank_ifs(_by_line(kernel, 6))


def test_identical_ir_on_every_rank_is_emitted_once():
    # the bound reads cta_rank but has one value: every rank's plan is the same, so no rank branch
    kernel, records, _ = _lower(CELL.format(C=4, rows=64, src="cta_rank - cta_rank : 64", dst="0:64"))
    stmts = _by_line(kernel, 5)
    assert stmts and not _rank_ifs(stmts) and records[0].notes == ()


def test_consecutive_ranks_with_one_plan_share_a_branch():
    kernel, _, _ = _lower(CELL.format(C=4, rows=128, src="64*(cta_rank//2) : 64*(cta_rank//2)+64", dst="0:64"))
    conds = [b.cond for b in _rank_ifs(_by_line(kernel, 5))]
    assert [(c.op, c.b.value) for c in conds] == [("<", 2), (">=", 2)]
    kernel, _, _ = _lower(CELL.format(C=4, rows=128, src="64*(cta_rank % 3 // 2) : 64*(cta_rank % 3 // 2)+64",
                                      dst="0:64"))
    # ranks 0, 1 | 2 | 3: a run inside the cluster is a range
    conds = [b.cond for b in _rank_ifs(_by_line(kernel, 5))]
    assert [(c.op, getattr(c.b, "value", None)) for c in conds] == [("<", 2), ("==", 2), ("==", 3)]
    kernel, _, _ = _lower(CELL.format(C=4, rows=192, src="64*((cta_rank+1)//2) : 64*((cta_rank+1)//2)+64",
                                      dst="0:64"))
    (_, mid, _) = [b.cond for b in _rank_ifs(_by_line(kernel, 5))]
    assert mid.op == "and" and (mid.a.op, mid.a.b.value, mid.b.op, mid.b.b.value) == (">=", 1, "<", 3)


def test_a_rank_guard_is_an_ordinary_guard():
    src = CELL.format(C=2, rows=64, src="0:64", dst="0:64").replace("wg.copy B", "if cta_rank == 1: wg.copy B")
    kernel, _, _ = _lower(src)
    (g,) = _by_line(kernel, 6)[:1]
    assert isinstance(g, ir.GuardIf) and g.cond.a is RANK_VAR and g.cond.b.value == 1
    assert issue_count((g,), 128, rank=0) == 0 and issue_count((g,), 128, rank=1) == 128


def test_the_mbarrier_prologue_ends_with_the_cluster_barrier():
    src = CELL.format(C=2, rows=64, src="0:64", dst="0:64") + "mbarrier full\n"
    assert isinstance(_top(_lower(src)[0])[3], ir.ClusterSync)
    one = CELL.format(C=1, rows=64, src="0:64", dst="0:64").replace("cluster_sync\n", "") + "mbarrier full\n"
    top = _top(_lower(one)[0])
    assert isinstance(top[3], ir.Barrier) and not any(isinstance(s, ir.ClusterSync) for s in ir.walk(_lower(one)[0].body))
    assert "CTA barrier" in top[0].text
    assert "cluster barrier" in _top(_lower(src)[0])[0].text


# ----------------------------------------------------------------------------- a stand-in for the T and D variants
def _fake_dispatch(variant_of=None):
    """``run_dispatch`` that emits the IR parts T and D will: a G2S ``TmaCopy`` (``cta_mask`` from the option) for
    a global -> shared copy, a ``BulkCopy`` (``remote`` the option's expression) for shared -> shared."""
    maps: dict[str, ir.TensorMap] = {}

    def run(op, ctx):
        mbar = op.option("mbar")
        src, dst = op.src, op.dst
        if src.buf.scope == "global":
            tmap = maps.setdefault(src.buf.name, ctx.builder.tensormap(ir.TensorMap(
                f"{src.buf.name}_tmap", src.buf, "FLOAT16", 2, tuple(reversed(src.buf.shape)),
                (src.buf.shape[-1] * 2,), tuple(reversed(src.extents)), (1, 1))))
            stmt: ir.Stmt = ir.TmaCopy("g2s", tmap, dst.buf, dst.begins[0] * dst.buf.shape[-1] * 2,
                                       tuple(ir.Const(b) for b in reversed(src.begins)), mbar=mbar,
                                       cta_mask=op.option("cta_mask"))
            name = "tma_auto"
        else:
            stmt = ir.BulkCopy(src.buf, 0, dst.buf, 0, src.numel * src.buf.elem_bytes, op.option("remote_cta_id"),
                               mbar)
            name = "dsmem"
        if variant_of is not None:
            name = variant_of(op)
        rec = DispatchRecord(op.op, op.text, op.span.line, op.exec_scope, (), name)
        return [stmt], rec

    return run


MC = """kernel mc threads=128 cluster={C}
global A: float16[128, 64] = arange
shared S: float16[128, 64]
mbarrier full
{arrive_guard}arrive full expect_tx=auto
if tx == 0: thread.copy_async S[64*cta_rank : 64*cta_rank+64, :] <- A[64*cta_rank : 64*cta_rank+64, :] mbar=full {opt}
wait full phase 0
"""


def _arrives(kernel):
    """(rank condition or None, expect_tx, auto_from) of every arrive."""
    out = []
    for s, scope in ir.walk_scoped(kernel.body):
        if isinstance(s, ir.MbarArrive):
            rank = next((c.cond.b.value for c in scope if isinstance(c, ir.GuardIf) and c.cond.a is RANK_VAR), None)
            out.append((rank, s.expect_tx, s.auto_from))
    return out


def test_multicast_bytes_count_in_every_receiving_cta(monkeypatch):
    monkeypatch.setattr(program, "run_dispatch", _fake_dispatch())
    kernel, _, _ = _lower(MC.format(C=2, arrive_guard="if tx == 0: ", opt="cta_mask=0b11"))
    # each rank multicasts its 64x64 half (8192 B) to both CTAs: every CTA receives 2 x 8192 B
    assert _arrives(kernel) == [(None, 16384, ((6, 16384),))]
    # unicast: each CTA receives its own half only
    kernel, _, _ = _lower(MC.format(C=2, arrive_guard="if tx == 0: ", opt=""))
    assert _arrives(kernel) == [(None, 8192, ((6, 8192),))]
    # a mask of rank 1 only, from both ranks: CTA 1 gets 16384 B, CTA 0 none -- its arrive is the error
    with pytest.raises(LoweringError) as info:
        _lower(MC.format(C=2, arrive_guard="if tx == 0: ", opt="cta_mask=0b10"))
    assert "covers no bytes in CTA 0" in info.value.message and info.value.span.line == 5
    kernel, _, _ = _lower(MC.format(C=2, arrive_guard="if cta_rank == 1 and tx == 0: ", opt="cta_mask=0b10"))
    assert _arrives(kernel) == [(None, 16384, ((6, 16384),))]


def test_four_ctas_each_count_their_own_bytes(monkeypatch):
    monkeypatch.setattr(program, "run_dispatch", _fake_dispatch())
    quarters = MC.format(C=4, arrive_guard="if tx == 0: ", opt="{opt}").replace("64*cta_rank", "32*cta_rank") \
        .replace("+64", "+32")
    kernel, _, _ = _lower(quarters.format(opt=""))  # each CTA its own 32-row quarter: 4096 B
    assert _arrives(kernel) == [(None, 4096, ((6, 4096),))]
    kernel, _, _ = _lower(quarters.format(opt="cta_mask=0xf"))  # every quarter into every CTA: 4 x 4096 B
    assert _arrives(kernel) == [(None, 16384, ((6, 16384),))]
    with pytest.raises(LoweringError, match="covers no bytes in CTA 1"):  # every quarter into CTA 0 only
        _lower(quarters.format(opt="cta_mask=0b1"))


def test_per_rank_arrives_when_one_cta_also_receives_a_peer_multicast(monkeypatch):
    monkeypatch.setattr(program, "run_dispatch", _fake_dispatch())
    src = ("kernel mc threads=128 cluster=2\nglobal A: float16[128, 64] = arange\nshared S: float16[128, 64]\n"
           "mbarrier full\nif tx == 0: arrive full expect_tx=auto\n"
           "if tx == 0: thread.copy_async S[64*cta_rank : 64*cta_rank+64, :] <- A[64*cta_rank : 64*cta_rank+64, :] "
           "mbar=full cta_mask=0b10\n"
           "if cta_rank == 0 and tx == 0: thread.copy_async S[0:64, :] <- A[0:64, :] mbar=full\n"
           "wait full phase 0\n")
    kernel, _, _ = _lower(src)
    # CTA 0: its own unicast (line 7) 8192 B; CTA 1: both ranks' multicasts to bit 1 (line 6) 2 x 8192 B
    assert _arrives(kernel) == [(0, 8192, ((7, 8192),)), (1, 16384, ((6, 16384),))]
    (seq,) = [s for s in _top(kernel) if isinstance(s, ir.Seq)]
    assert all(isinstance(s, ir.GuardIf) for s in ir.walk(seq) if s is not seq and isinstance(s, ir.If))


DS = """kernel ds threads=128 cluster={C}
shared S: float32[64, 32]
shared R: float32[64, 32]
mbarrier got
cluster_sync
{arrive_guard}arrive got expect_tx=auto
{copy_guard}thread.copy_async R <- S remote_cta_id={remote} mbar=got
wait got phase 0
"""


def test_dsmem_bytes_count_in_the_destination_cta(monkeypatch):
    monkeypatch.setattr(program, "run_dispatch", _fake_dispatch())
    tp = check(parse(DS.format(C=2, arrive_guard="if tx == 0: ", copy_guard="if tx == 0: ", remote="cta_rank^1")),
               arch="sm_90a")
    ops = tp.items[-2].ranked
    assert [op.rank for op in ops] == [0, 1]
    remote = ops[0].option("remote_cta_id")
    assert isinstance(remote, ir.Expr) and remote.op == "^" and remote.a is RANK_VAR
    kernel, _, _ = lower(tp, TARGET)
    assert _arrives(kernel) == [(None, 8192, ((7, 8192),))]
    # the IR is the same on both ranks (remote is the expression): one copy, no rank branch
    assert not _rank_ifs(_by_line(kernel, 7))
    # a ring of 4 where rank 3 does not send: CTA 0 receives nothing
    with pytest.raises(LoweringError) as info:
        _lower(DS.format(C=4, arrive_guard="if tx == 0: ", copy_guard="if cta_rank < 3 and tx == 0: ",
                         remote="(cta_rank+1)%4"))
    assert "covers no bytes in CTA 0" in info.value.message and "cta_rank" in info.value.hint
    # every thread of a warp sending 512 B... to the CTA of rank 1 from rank 0: 32 x 8192 B shared by 1 arriver
    kernel, _, _ = _lower(DS.format(C=2, arrive_guard="if cta_rank == 1 and tx == 0: ",
                                    copy_guard="if cta_rank == 0 and warpid == 0: ", remote="1"))
    assert _arrives(kernel) == [(None, 32 * 8192, ((7, 32 * 8192),))]


def test_ranks_dispatching_to_different_variants_is_a_located_error(monkeypatch):
    monkeypatch.setattr(program, "run_dispatch",
                        _fake_dispatch(lambda op: "tma_auto" if op.rank == 0 else "ldgsts"))
    with pytest.raises(LoweringError) as info:
        _lower(MC.format(C=2, arrive_guard="if tx == 0: ", opt=""))
    err = info.value
    assert err.span.line == 6
    assert "different variants (cta_rank 0: tma_auto; cta_rank 1: ldgsts)" in err.message
    assert "dispatch=tma_auto" in err.hint


def test_later_rank_branches_are_the_plans_after_the_first_of_each_line():
    src = CELL.format(C=4, rows=128, src="64*(cta_rank//2) : 64*(cta_rank//2)+64", dst="0:64")
    src = src.replace("wg.copy B", "if cta_rank == 3: wg.copy B")  # a user's rank guard: one branch, kept
    kernel, _, _ = _lower(src)
    first, second = _rank_ifs(_by_line(kernel, 5))
    (user,) = _rank_ifs(_by_line(kernel, 6))
    assert program.later_rank_branches(kernel.body) == {id(second)}
    assert id(first) not in program.later_rank_branches(kernel.body) and id(user) not in \
        program.later_rank_branches(kernel.body)


# ----------------------------------------------------------------------------- the ranks a guard lets run (QA F2)
def test_a_rank_the_guard_excludes_is_not_bounds_checked_nor_lowered():
    # B has 2 rows, the cluster 3 CTAs: rank 2 would index row 2, but the guard lets ranks 0 and 1 run only
    src = """kernel part threads=128 cluster=3
global A: float32[3, 64] = arange
global B: float32[2, 64] = zeros
if cta_rank <= 1: wg.copy B[cta_rank, :] <- A[cta_rank + 1, :]
cluster_sync
"""
    kernel, records, warns = _lower(src)
    conds = [b.cond for b in _rank_ifs(_by_line(kernel, 4))]
    assert [(c.op, c.b.value) for c in conds] == [("==", 0), ("==", 1)]  # no branch for rank 2
    assert len(warns) == 1 and "fallback" in warns[0][0]  # the ranks' one warning, said once
    assert records[0].notes[-1] == ("rank 1", "same variant", "plan per rank")
    with pytest.raises(Exception, match="for cta_rank = 2"):  # without the guard rank 2 is out of range
        _lower(src.replace("if cta_rank <= 1: ", ""))


def test_one_running_rank_is_lowered_once_under_the_guard():
    src = """kernel one threads=128 cluster=4
global A: float32[4, 64] = arange
global B: float32[4, 64] = zeros
if cta_rank == 2: wg.copy B[cta_rank, :] <- A[3 - cta_rank, :]
cluster_sync
"""
    kernel, records, _ = _lower(src)
    g, sync = _by_line(kernel, 4)
    assert isinstance(sync, ir.ClusterSync)
    assert isinstance(g, ir.GuardIf) and not _rank_ifs(list(ir.walk(g.then))) and records[0].notes == ()
    assert [issue_count((g,), 128, rank=r) for r in range(4)] == [0, 0, 128, 0]


DSMEM_ONE_WAY = """kernel oneway threads=128 cluster=2
global A: float32[2, 8, 16] = arange
global B: float32[2, 8, 16] = zeros
shared S: float32[8, 16]
shared R: float32[2, 8, 16]
mbarrier got
wg.copy S <- A[cta_rank, :, :]
fence.proxy.async
cta_sync
if tx == 0 and cta_rank == 0: arrive got expect_tx=auto
if tx == 0 and cta_rank == 1: thread.copy_async R[{dst}, :, :] <- S remote_cta_id=0 mbar=got
if cta_rank == 0: wait got phase 0
if cta_rank == 0: wg.copy B[1, :, :] <- R[1, :, :]
cluster_sync
check B[1, :, :] == A[1, :, :]
"""


@pytest.mark.parametrize("dst", ["1", "cta_rank"])
def test_a_dsmem_copy_only_one_rank_issues_is_checked_for_that_rank_and_runs(dst):
    # remote_cta_id=0 is rank 0's own rank, but the guard lets only rank 1 issue the copy
    from helpers import run

    src = DSMEM_ONE_WAY.format(dst=dst)
    kernel, records, _ = _lower(src)
    assert records[-2].chosen == "dsmem"
    (arrive,) = [s for s in ir.walk(kernel.body) if isinstance(s, ir.MbarArrive)]
    assert arrive.expect_tx == 8 * 16 * 4  # rank 1's one copy, landing in rank 0
    res = run(src)
    assert res.launch.passed and res.launch.hb.clean, res.text()


def test_expect_tx_auto_counts_only_the_ranks_that_issue():
    # a 4-CTA ring issued by ranks 0 and 1 only: ranks 1 and 2 receive one copy each, ranks 0 and 3 none
    from helpers import run

    src = """kernel halfring threads=32 cluster=4
global A: float32[4, 32] = arange
global B: float32[4, 32] = zeros
shared S: float32[32]
shared R: float32[32]
mbarrier got
warp.copy S <- A[cta_rank, :]
fence.proxy.async
cluster_sync
if tx == 0 and cta_rank >= 1 and cta_rank <= 2: arrive got expect_tx=auto
if tx == 0 and cta_rank <= 1: thread.copy_async R <- S remote_cta_id=(cta_rank+1)%4 mbar=got
if cta_rank >= 1 and cta_rank <= 2: wait got phase 0
if cta_rank >= 1 and cta_rank <= 2: warp.copy B[cta_rank - 1, :] <- R
cluster_sync
check B[0:2, :] == A[0:2, :]
"""
    kernel, _, _ = _lower(src)
    (arrive,) = [s for s in ir.walk(kernel.body) if isinstance(s, ir.MbarArrive)]
    assert arrive.expect_tx == 32 * 4
    res = run(src)
    assert res.launch.passed and res.launch.hb.clean, res.text()
