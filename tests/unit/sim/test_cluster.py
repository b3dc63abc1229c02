"""Clusters in the simulator (issue 13, second milestone): every CTA simulated, ``cluster_sync``, TMA multicast,
dsmem, the exit check, cluster hangs, CTA-qualified reports and the cluster receipts.

The kernels are built by hand (``ir.Kernel(cluster=C, ...)``) with the IR the lowering produces for them (the
mbarrier prologue ending in ``cluster_sync``; per-rank statements under ``if cta_rank == r``), and run in the
simulator with its tracker.  Results are held against NumPy models of what the copies do; each check has a kernel
that must be flagged and one that must be clean.  Before this milestone none of them ran (``Kernel.cluster`` was
ignored: one CTA ran, ``cta_rank`` could not be evaluated, ``cannot simulate ClusterSync``/``BulkCopy``).
"""

from __future__ import annotations

import numpy as np
import pytest

from tilemagic.errors import LaunchError
from tilemagic.ir import nodes as ir
from tilemagic.sim import Tracker, interpreter, simulate
from tilemagic.sim.hb import ClusterReceipt

from helpers import at, eq, mbar, messages, tensor_map, unflat, when

TX = ir.ThreadVar("tx")
CTA = ir.ThreadVar("cta_rank")


def both(a: ir.Expr, b: ir.Expr) -> ir.Expr:
    return ir.Bin("and", a, b)


def ckernel(C: int, threads: int, params, shared, body, tensormaps=()) -> ir.Kernel:
    return ir.Kernel("k", threads, tuple(params), tuple(shared), (), (), 0, None, ir.Seq(tuple(body)),
                     tensormaps=tuple(tensormaps), cluster=C)


def run(k: ir.Kernel, inputs: dict):
    tr = Tracker(k, k.threads)
    out = simulate(k, {n: np.ascontiguousarray(v) for n, v in inputs.items()}, tracker=tr)
    return out, tr.finish()


def cluster_prologue(*bars: ir.Buffer, line: int = 2, sync: str = "cluster") -> list[ir.Stmt]:
    """Thread 0 of every CTA initialises, fences, then ``cluster_sync`` (``sync="cta"``: only a ``cta_sync``)."""
    end = ir.ClusterSync(span=at(line)) if sync == "cluster" else ir.Barrier(span=at(line))
    return [when(eq(TX, 0), *(ir.MbarInit(b, b.mbar_count or 1, span=at(line)) for b in bars), line=line),
            ir.Fence("mbarrier_init", span=at(line)), end]


def flat_copy(dst: ir.Buffer, dst_base: ir.Expr, src: ir.Buffer, src_base: ir.Expr, n: int, threads: int,
              line: int) -> ir.Grid:
    """``dst.flat[dst_base + e] = src.flat[src_base + e]`` for ``e`` in ``0..n-1``, element ``tx + threads * j``
    by thread ``tx`` (the bases may name ``cta_rank``)."""
    j = ir.LoopVar(f"j{line}")
    e = ir.add(TX, ir.mul(j, threads))
    return ir.Grid((j,), (n // threads,), ir.Store(dst, tuple(unflat(ir.add(dst_base, e), dst.shape)),
                                                  ir.Load(src, tuple(unflat(ir.add(src_base, e), src.shape))),
                                                  span=at(line)), span=at(line))


# ----------------------------------------------------------------------------- TMA multicast
def _multicast(C: int, *, masks=None, expect=None, read_early: bool = False, end_sync: bool = True,
               prologue_sync: str = "cluster"):
    """Each CTA r loads rows ``rows*r ..`` of A (fp16, ``128 x 64``) and multicasts them with ``masks[r]`` (default:
    every CTA); every CTA then copies the rows it received to ``B[r]``.  Lines: 2 prologue, 4 arrive, 5 copies,
    6 wait, 7-8 copy out, 9 cluster_sync."""
    rows = 128 // C
    masks = masks or [(1 << C) - 1] * C
    A = ir.Buffer("A", "global", "float16", (128, 64), init="arange")
    B = ir.Buffer("B", "global", "float16", (C, 128, 64), init="zeros")
    S = ir.Buffer("S", "shared", "float16", (128, 64))
    bar = mbar()
    ta = tensor_map(A, (64, rows))
    got = [[s for s in range(C) if masks[s] >> d & 1] for d in range(C)]  # d receives from these ranks
    box = ta.box_bytes
    if expect is None:  # the bytes that land in each CTA (the same count in every one here, or per rank)
        expect = [box * len(g) for g in got]
    body = cluster_prologue(bar, sync=prologue_sync)
    for r in range(C):
        if len(set(expect)) == 1 and r:
            break
        cond = eq(TX, 0) if len(set(expect)) == 1 else both(eq(CTA, r), eq(TX, 0))
        body.append(when(cond, ir.MbarArrive(bar, expect[r], span=at(4)), line=4))
    for r in range(C):
        body.append(when(both(eq(CTA, r), eq(TX, 0)),
                         ir.TmaCopy("g2s", ta, S, r * rows * 64 * 2, (ir.Const(0), ir.Const(rows * r)), mbar=bar,
                                    cta_mask=masks[r], span=at(5)), line=5))
    out = []
    for d in range(C):
        for s in got[d]:  # (rank d copies the rows it received: a per-rank statement)
            base = ir.Const(s * rows * 64)
            out.append(when(eq(CTA, d), flat_copy(B, ir.add(ir.Const(d * 128 * 64), base), S, base, rows * 64, 128,
                                                  line=7), line=7))
    wait = ir.MbarWait(bar, 0, span=at(6))
    body += (out + [wait]) if read_early else ([wait] + out)
    if end_sync:
        body.append(ir.ClusterSync(span=at(9)))
    a = (np.arange(128 * 64) % 2000).astype(np.float16).reshape(128, 64)
    model = np.zeros((C, 128, 64), np.float16)
    for d in range(C):
        for s in got[d]:
            model[d, s * rows:(s + 1) * rows] = a[s * rows:(s + 1) * rows]
    return ckernel(C, 128, (A, B), (S, bar), body, (ta,)), {"A": a, "B": np.zeros_like(model)}, model


@pytest.mark.parametrize("C,masks", [(2, None), (4, None), (4, [0b0011, 0b0110, 0b1100, 0b1001])])
def test_multicast_round_trip_matches_numpy_and_is_clean(C, masks):
    k, inp, model = _multicast(C, masks=masks)
    out, rep = run(k, inp)
    assert rep.clean, messages(rep)
    assert np.array_equal(out["B"], model)
    issues = [e for e in rep.timeline if e.kind == "tma.issue"]
    assert {e.cta for e in issues} == set(range(C))  # every CTA issued, and the timeline says which
    assert all(e.info["cta_mask"] == (masks or [(1 << C) - 1] * C)[e.cta] for e in issues)
    assert all(e.threads.tolist() == [128 * e.cta] for e in issues)  # (thread 0 of its CTA: cluster-linear ids)
    lands = [e for e in rep.timeline if e.kind == "tma.complete"]  # one landing per receiving CTA, in that CTA
    want = sorted((s, d) for s in range(C) for d in range(C) if (masks or [(1 << C) - 1] * C)[s] >> d & 1)
    assert sorted((int(e.threads[0]) // 128, e.cta) for e in lands) == want
    # receipts: in every CTA, each source rank's rows came by multicast from that rank's line 5
    rows = 128 // C
    for d in range(C):
        mc = [r for r in rep.cluster_receipts if r.dst_rank == d and r.buffer == "S" and r.kind == "multicast"]
        senders = [s for s in range(C) if (masks or [(1 << C) - 1] * C)[s] >> d & 1]
        assert sorted((r.byte_lo, r.byte_hi, r.src_rank) for r in mc) == \
            [(s * rows * 128, (s + 1) * rows * 128, s) for s in senders]
        assert all(r.line == 5 for r in mc)


def test_multicast_bytes_read_before_the_receiving_wait_are_in_flight():
    k, inp, model = _multicast(2, read_early=True)
    out, rep = run(k, inp)
    reads = [h for h in rep.hazards if h.kind == "async-read"]
    assert reads and all(h.buffer.startswith("S@cta") for h in reads), messages(rep)
    msg = next(h.message for h in reads if h.buffer == "S@cta1")
    assert "CTA 1 thread 0 reads" in msg and "CTA 0 thread 0's TMA multicast (mbarrier full of CTA 1) writes at L5" \
        in msg, msg
    assert {h.span.line for h in reads} == {7} and {h.other_span.line for h in reads} == {5}
    assert not np.array_equal(out["B"], model)  # the bytes had not landed: the copy-out read garbage


def test_multicast_tx_over_count_on_a_receiving_cta():
    k, inp, _ = _multicast(2, expect=[8192, 8192])  # both halves land in both CTAs: 16384 bytes each
    _, rep = run(k, inp)
    tx = [h.message for h in rep.hazards if h.kind == "mbarrier-tx"]
    assert any("mbarrier full of CTA 1 phase" in m for m in tx), messages(rep)
    assert any("mbarrier full of CTA 0 phase" in m for m in tx), messages(rep)


def test_multicast_mask_naming_a_rank_outside_the_cluster_is_located():
    k, inp, _ = _multicast(2, masks=[0b101, 0b11])
    with pytest.raises(LaunchError, match="cta_mask 0b101 names rank 2, cluster has 2 CTAs") as e:
        run(k, inp)
    assert e.value.span.line == 5


def test_remote_complete_tx_before_the_barrier_init_is_ordered_by_a_cluster_sync():
    k, inp, model = _multicast(2, prologue_sync="cta")  # the prologue's cta_sync orders one CTA only
    out, rep = run(k, inp)
    init = [h.message for h in rep.hazards if h.kind == "mbarrier-init"]
    assert any("CTA 0 thread 0's TMA multicast at L5 completes bytes on mbarrier full of CTA 1 before its "
               "initialisation by CTA 1 thread 0 at L2" in m for m in init), messages(rep)
    assert np.array_equal(out["B"], model)  # (the data still moves: the hazard is the ordering)


def test_a_missing_final_cluster_sync_after_a_multicast_is_an_exit_hazard():
    k, inp, model = _multicast(2, end_sync=False)
    _, rep = run(k, inp)
    ex = [h for h in rep.hazards if h.kind == "cluster-exit"]
    assert {h.message.split(" may exit")[0] for h in ex} == {"hazard: CTA 0", "hazard: CTA 1"}, messages(rep)
    assert all(h.span.line == 5 and h.other_span.line == 7 for h in ex)  # (the copy, the kernel's last line)


# ----------------------------------------------------------------------------- dsmem
def _ring(C: int = 4, *, fence: bool = True, wait: bool = True, end_sync: bool = True, remote=None,
          read_early: bool = False):
    """The dsmem exchange as a ring: CTA r copies ``A[r]`` into its S, sends S into ``R`` of CTA ``(r + 1) % C``,
    and writes what it received (``A[r - 1]``) to ``B[r - 1]``.  Lines: 2 prologue, 3 S <- A, 4 fence, 5
    cluster_sync, 6 arrive, 7 dsmem copy, 8 wait, 9 B <- R, 10 cluster_sync."""
    A = ir.Buffer("A", "global", "float32", (C, 64, 32), init="arange")
    B = ir.Buffer("B", "global", "float32", (C, 64, 32), init="zeros")
    S = ir.Buffer("S", "shared", "float32", (64, 32))
    R = ir.Buffer("R", "shared", "float32", (64, 32))
    got = mbar("got")
    n = 64 * 32
    body = cluster_prologue(got)
    body.append(flat_copy(S, ir.Const(0), A, ir.mul(CTA, n), n, 128, line=3))
    if fence:
        body.append(ir.Fence("proxy_async", span=at(4)))
    body.append(ir.ClusterSync(span=at(5)))
    if wait:
        body.append(when(eq(TX, 0), ir.MbarArrive(got, n * 4, span=at(6)), line=6))
    rem = remote if remote is not None else ir.mod(ir.add(CTA, ir.Const(1)), C)
    body.append(when(eq(TX, 0), ir.BulkCopy(S, 0, R, 0, n * 4, rem, got, span=at(7)), line=7))
    out = flat_copy(B, ir.mul(ir.mod(ir.add(CTA, ir.Const(C - 1)), C), n), R, ir.Const(0), n, 128, line=9)
    if wait:
        body += [out, ir.MbarWait(got, 0, span=at(8))] if read_early else [ir.MbarWait(got, 0, span=at(8)), out]
    if end_sync:
        body.append(ir.ClusterSync(span=at(10)))
    a = np.arange(C * n, dtype=np.float32).reshape(C, 64, 32)
    return ckernel(C, 128, (A, B), (S, R, got), body), {"A": a, "B": np.zeros_like(a)}


@pytest.mark.parametrize("C", [2, 4])
def test_dsmem_ring_exchange_is_clean_and_moves_every_tile(C):
    k, inp = _ring(C)
    out, rep = run(k, inp)
    assert rep.clean, messages(rep)
    assert np.array_equal(out["B"], inp["A"])
    rec = rep.cluster_receipts
    for d in range(C):
        assert ClusterReceipt(d, "R", 0, 8192, (d - 1) % C, 7, "dsmem") in rec
        assert ClusterReceipt(d, "S", 0, 8192, d, 3, "store") in rec
    kinds = {(e.kind, e.cta) for e in rep.timeline}
    assert {("dsmem", r) for r in range(C)} <= kinds and ("cluster_sync", 0) in kinds
    assert all(e.threads.size == C * 128 for e in rep.timeline if e.kind == "cluster_sync")
    done = [e for e in rep.timeline if e.kind == "dsmem.complete"]  # in the receiving CTA, the issuer's thread
    assert sorted((int(e.threads[0]) // 128, e.cta) for e in done) == [(r, (r + 1) % C) for r in range(C)]


def test_dsmem_source_without_the_proxy_fence():
    k, inp = _ring(2, fence=False)
    _, rep = run(k, inp)
    proxy = [h.message for h in rep.hazards if h.kind == "proxy"]
    assert any("the dsmem copy at L7 reads S@cta0[0, 0] that CTA 0 thread 0 wrote at L3 with no "
               "`fence.proxy.async` by CTA 0 thread 0" in m for m in proxy), messages(rep)


def test_dsmem_destination_read_before_its_wait():
    k, inp = _ring(2, read_early=True)
    out, rep = run(k, inp)
    reads = [h for h in rep.hazards if h.kind == "async-read"]
    assert {h.buffer for h in reads} == {"R@cta0", "R@cta1"}, messages(rep)
    assert all(h.span.line == 9 and h.other_span.line == 7 for h in reads)
    assert any("CTA 1 thread 0 reads R@cta1[0, 0] at L9 that CTA 0 thread 0's dsmem copy (mbarrier got of CTA 1) "
               "writes at L7" in h.message for h in reads), messages(rep)


def test_dsmem_without_the_final_cluster_sync_is_an_exit_hazard():
    k, inp = _ring(2, end_sync=False)
    _, rep = run(k, inp)
    ex = [h.message for h in rep.hazards if h.kind == "cluster-exit"]
    assert any(m.startswith("hazard: CTA 0 may exit while its dsmem copy (line 7) into CTA 1's shared memory R is not "
                            "known to be complete to it") for m in ex), messages(rep)
    assert len(ex) == 2


def test_a_dsmem_copy_nobody_waits_for_may_still_write_at_exit():
    k, inp = _ring(2, wait=False)
    _, rep = run(k, inp)
    ex = [h.message for h in rep.hazards if h.kind == "cluster-exit"]
    assert "hazard: CTA 1 may exit while CTA 0's dsmem copy (line 7) still writes its shared memory R: end the kernel " \
           "with cluster_sync" in " ".join(ex), messages(rep)


@pytest.mark.parametrize("remote,text", [(CTA, "remote_cta_id is 0 for CTA 0 thread 0, its own CTA"),
                                         (ir.add(CTA, ir.Const(2)), "remote_cta_id is 2 for CTA 0 thread 0: the "
                                                                    "cluster has ranks 0..1")])
def test_a_dsmem_copy_into_itself_or_outside_the_cluster_is_located(remote, text):
    k, inp = _ring(2, remote=remote)
    with pytest.raises(LaunchError, match=text) as e:
        run(k, inp)
    assert e.value.span.line == 7


# ----------------------------------------------------------------------------- cluster_sync and global races
def _handoff(sync: str):
    """CTA 0 writes G; a barrier (``cta_sync`` or ``cluster_sync``); CTA 1 copies G to H."""
    G = ir.Buffer("G", "global", "int32", (256,), init="zeros")
    H = ir.Buffer("H", "global", "int32", (256,), init="zeros")
    A = ir.Buffer("A", "global", "int32", (256,), init="arange")
    body = [when(eq(CTA, 0), flat_copy(G, ir.Const(0), A, ir.Const(0), 256, 128, line=3), line=3),
            ir.Barrier(span=at(4)) if sync == "cta" else ir.ClusterSync(span=at(4)),
            when(eq(CTA, 1), flat_copy(H, ir.Const(0), G, ir.Const(0), 256, 128, line=5), line=5)]
    a = np.arange(256, dtype=np.int32) + 7
    return ckernel(2, 128, (A, G, H), (), body), {"A": a, "G": np.zeros_like(a), "H": np.zeros_like(a)}


def test_cta_sync_does_not_order_ctas_and_cluster_sync_does():
    k, inp = _handoff("cta")
    _, rep = run(k, inp)
    raw = [h for h in rep.hazards if h.kind == "raw"]
    assert raw and "global-memory race on G: CTA 1 thread 0 reads G[0] at L5 that CTA 0 thread 0 wrote at L3" \
        in raw[0].message, messages(rep)
    assert raw[0].threads == (128, 0)
    k, inp = _handoff("cluster")
    out, rep = run(k, inp)
    assert rep.clean, messages(rep)
    assert np.array_equal(out["H"], inp["A"])  # CTA 1 ran after CTA 0's writes: the scheduler interleaves at it


def test_a_cluster_sync_a_blocked_cta_never_reaches_would_hang():
    # only CTA 0 sends (into CTA 1): CTA 0 waits for bytes nobody sends, CTA 1 goes on to the final cluster_sync
    k, inp = _ring(2, remote=ir.Const(1))
    body = list(k.body.body)
    i = next(j for j, s in enumerate(body) if isinstance(s, ir.If) and isinstance(s.then.body[0], ir.BulkCopy))
    body[i] = when(both(eq(CTA, 0), eq(TX, 0)), body[i].then.body[0], line=7)
    k = ckernel(2, 128, k.params, k.shared, body)
    _, rep = run(k, inp)
    assert rep.hang is not None
    m = rep.hang.message
    assert "mbarrier got of CTA 0 phase 0 never completes: 8192 of 8192 expected bytes never arrive — CTA 0 threads " \
           "0-127 wait at L8" in m, m
    assert "CTA 1 threads 0-127 wait at the cluster_sync at L10 for the others" in m, m


def test_a_cluster_sync_inside_a_guard_is_a_located_error():
    k, inp = _handoff("cluster")
    body = list(k.body.body)
    body[1] = when(eq(TX, 0), ir.ClusterSync(span=at(4)), line=4)
    with pytest.raises(LaunchError, match="cluster_sync` only as a top-level statement") as e:
        run(ckernel(2, 128, k.params, (), body), inp)
    assert e.value.span.line == 4


# ----------------------------------------------------------------------------- batched vs serial, C = 1
@pytest.mark.parametrize("make", [lambda: _ring(4)[:2], lambda: _multicast(2, read_early=True)[:2],
                                  lambda: _handoff("cta")])
def test_batched_and_serial_cluster_runs_agree(make, monkeypatch):
    k, inp = make()
    out1, rep1 = run(k, inp)
    monkeypatch.setattr(interpreter, "BATCHED", False)
    k, inp = make()
    out2, rep2 = run(k, inp)
    assert all(np.array_equal(out1[n], out2[n]) for n in out1)
    assert messages(rep1) == messages(rep2)
    assert rep1.cluster_receipts == rep2.cluster_receipts


def test_cta_rank_in_a_kernel_of_one_cta_is_zero_and_reports_are_unqualified():
    k, inp = _handoff("cta")
    one = ckernel(1, 128, k.params, (), [when(eq(CTA, 0), k.body.body[0].then, line=3),
                                         when(eq(CTA, 0), ir.Store(k.params[1], (ir.Const(0),), ir.Const(1),
                                                                   span=at(6)), line=6)])
    out, rep = run(one, inp)
    assert out["G"][0] == 1 and np.array_equal(out["G"][1:], inp["A"][1:])
    assert rep.cluster_receipts == []
    assert all("CTA" not in m for m in messages(rep)) and any("thread 0" in m for m in messages(rep)), messages(rep)


# ----------------------------------------------------------------------------- a CTA's own copies in a cluster
def test_unicast_tma_and_cp_async_touch_their_own_ctas_shared_memory():
    # each CTA: rows 64*rank.. of A -> S by TMA (coordinates in cta_rank) -> B by a TMA store; and A2[rank] -> S2 by
    # cp.async -> B2[rank] by every thread
    A = ir.Buffer("A", "global", "float16", (128, 64), init="arange")
    B = ir.Buffer("B", "global", "float16", (128, 64), init="zeros")
    A2 = ir.Buffer("A2", "global", "float32", (2, 1024), init="arange")
    B2 = ir.Buffer("B2", "global", "float32", (2, 1024), init="zeros")
    S = ir.Buffer("S", "shared", "float16", (64, 64))
    S2 = ir.Buffer("S2", "shared", "float32", (1024,))
    bar = mbar()
    ta, tb = tensor_map(A, (64, 64)), tensor_map(B, (64, 64))
    rows = ir.mul(CTA, 64)
    i = ir.LoopVar("i")
    v = ir.add(ir.mul(i, 512), ir.mul(TX, 4))
    body = cluster_prologue(bar) + [
        when(eq(TX, 0), ir.MbarArrive(bar, ta.box_bytes, span=at(4)), line=4),
        when(eq(TX, 0), ir.TmaCopy("g2s", ta, S, 0, (ir.Const(0), rows), mbar=bar, span=at(5)), line=5),
        ir.Grid((i,), (2,), ir.CpAsync(S2, v, A2, ir.add(ir.mul(CTA, 1024), v), 4, span=at(6)), span=at(6)),
        ir.AsyncGroup("commit", span=at(7)), ir.AsyncGroup("wait", n=0, span=at(7)), ir.Barrier(span=at(7)),
        ir.MbarWait(bar, 0, span=at(8)),
        when(eq(TX, 0), ir.TmaCopy("s2g", tb, S, 0, (ir.Const(0), rows), span=at(9)),
             ir.AsyncGroup("commit", bulk=True, span=at(9)), ir.AsyncGroup("wait", bulk=True, n=0, span=at(9)),
             line=9),
        flat_copy(B2, ir.mul(CTA, 1024), S2, ir.Const(0), 1024, 128, line=10)]
    a = (np.arange(128 * 64) % 1999).astype(np.float16).reshape(128, 64)
    a2 = np.arange(2048, dtype=np.float32).reshape(2, 1024) * 3
    k = ckernel(2, 128, (A, B, A2, B2), (S, S2, bar), body, (ta, tb))
    out, rep = run(k, {"A": a, "B": np.zeros_like(a), "A2": a2, "B2": np.zeros_like(a2)})
    assert rep.clean, messages(rep)
    assert np.array_equal(out["B"], a) and np.array_equal(out["B2"], a2)
    for r in range(2):
        assert ClusterReceipt(r, "S", 0, 8192, r, 5, "tma") in rep.cluster_receipts
        assert ClusterReceipt(r, "S2", 0, 4096, r, 6, "store") in rep.cluster_receipts
    # without the cta_sync after the cp.async wait, CTA 1's threads read each other's bytes unordered: CTA-qualified
    k2 = ckernel(2, 128, k.params, k.shared, [s for s in body if not isinstance(s, ir.Barrier)], (ta, tb))
    _, rep2 = run(k2, {"A": a, "B": np.zeros_like(a), "A2": a2, "B2": np.zeros_like(a2)})
    raw = [h.message for h in rep2.hazards if h.kind == "raw"]
    assert [m.split(" with no")[0] for m in raw] == [
        f"hazard: shared-memory race on S2@cta{r}: CTA {r} thread 1 reads S2@cta{r}[1] at L10 that CTA {r} thread 0 "
        f"wrote at L7" for r in range(2)], raw


def test_tmem_in_a_cluster_kernel_is_refused_with_what_to_do():
    # QA F9: the refusal is located at the kernel line and says how to go on
    from cells import roundtrip_cell
    from helpers import run

    src = roundtrip_cell("float32", 32).replace("kernel k threads=128", "kernel k threads=128 cluster=2", 1)
    with pytest.raises(LaunchError, match="tcgen05 and TMEM in a cluster kernel are not simulated") as exc:
        run(src)
    assert exc.value.span is not None and exc.value.span.line == 1
    assert "drop `cluster=`" in (exc.value.hint or "") and "--launch off" in exc.value.hint
    assert run(src, launch="off").kernel.cluster == 2  # the lowering is there to see
