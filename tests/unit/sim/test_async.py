"""Asynchronous copies in the simulator (issue 13): completion as late as legal, mbarriers, would-hang, races.

The kernels are built by hand (``ir.Kernel``) with the IR the lowering of these statements produces (the prologue
``if tx == 0: mbarrier.init``, ``fence.mbarrier_init``, ``cta_sync``; guards as ``If``), and run in the simulator
with its tracker.  Each class of bug has a kernel that must be flagged and a fixed one that must be clean; every
kernel here PASSED silently before (``cannot simulate CpAsync``: nothing ran at all).  The TMA data movement is held
against an independent NumPy model of the PTX ISA's box and swizzle tables (:func:`_tma_model`).
"""

from __future__ import annotations

import numpy as np
import pytest

from tilemagic.errors import HazardError, LaunchError
from tilemagic.ir import nodes as ir
from tilemagic.sim import Tracker, interpreter, simulate
from tilemagic.sim.asyncmodel import tma_box

from helpers import at, eq, mbar, messages, unflat, when
from helpers import tensor_map as _tmap

TX = ir.ThreadVar("tx")
WARP = ir.ThreadVar("warpid")








def prologue(*bars: ir.Buffer, line: int = 2) -> list[ir.Stmt]:
    """The mbarrier prologue: thread 0 initialises, fences, every thread syncs."""
    return [when(eq(TX, 0), *(ir.MbarInit(b, b.mbar_count or 1, span=at(line)) for b in bars), line=line),
            ir.Fence("mbarrier_init", span=at(line)), ir.Barrier(span=at(line))]




def kernel(threads: int, params, shared, body, tensormaps=()) -> ir.Kernel:
    return ir.Kernel("k", threads, tuple(params), tuple(shared), (), (), 0, None, ir.Seq(tuple(body)),
                     tensormaps=tuple(tensormaps))


def sim(k: ir.Kernel, inputs: dict, strict: bool = False):
    """Outputs and the happens-before report of a simulator run."""
    tr = Tracker(k, k.threads, strict)
    out = simulate(k, {n: np.ascontiguousarray(v) for n, v in inputs.items()}, tracker=tr)
    return out, tr.finish()




def copy_out(B: ir.Buffer, S: ir.Buffer, threads: int, line: int) -> ir.Grid:
    """Every thread copies elements ``tx + threads * j`` of S to B (row-major, element by element)."""
    j = ir.LoopVar(f"j{line}")
    n = B.numel
    e = ir.add(TX, ir.mul(j, threads))
    return ir.Grid((j,), (n // threads,), ir.Store(B, tuple(unflat(e, B.shape)), ir.Load(S, tuple(unflat(e, S.shape))),
                                                  span=at(line)), span=at(line))


# ----------------------------------------------------------------------------- cp.async and commit groups
def _cp_kernel(elems: int = 4, *, wait: bool = True, sync: bool = True, threads: int = 128, dtype="float32",
               shape=(64, 32)):
    A = ir.Buffer("A", "global", dtype, shape, init="arange")
    B = ir.Buffer("B", "global", dtype, shape, init="zeros")
    S = ir.Buffer("S", "shared", dtype, shape)
    n = A.numel
    i = ir.LoopVar("i")
    idx = ir.add(ir.mul(i, threads * elems), ir.mul(TX, elems))
    body = [ir.Grid((i,), (n // (threads * elems),), ir.CpAsync(S, idx, A, idx, elems, span=at(5)), span=at(5)),
            ir.AsyncGroup("commit", span=at(6))]
    if wait:
        body.append(ir.AsyncGroup("wait", n=0, span=at(7)))
    if sync:
        body.append(ir.Barrier(span=at(8)))
    body.append(copy_out(B, S, threads, 9))
    a = np.arange(n).astype(dtype).reshape(shape)
    return kernel(threads, (A, B), (S,), body), {"A": a, "B": np.zeros(shape, dtype)}


@pytest.mark.parametrize("elems,dtype", [(1, "float32"), (2, "float32"), (4, "float32"), (8, "float16"),
                                         (2, "float16")])
def test_cp_async_moves_4_8_16_bytes_and_is_clean(elems, dtype):
    k, inp = _cp_kernel(elems, dtype=dtype)
    out, rep = sim(k, inp)
    assert np.array_equal(out["B"], inp["A"])
    assert rep.clean, messages(rep)
    kinds = [e.kind for e in rep.timeline]
    assert kinds.count("cp.async") == inp["A"].size // (128 * elems)
    assert {"commit_group", "wait_group", "cp.async.complete", "cta_sync"} <= set(kinds)


def test_cp_async_read_before_wait_group_is_in_flight():
    k, inp = _cp_kernel(wait=False)
    out, rep = sim(k, inp)
    msgs = messages(rep)
    assert any("reads S[0, 0] at L9 that the cp.async writes at L5, before its thread's covering `wait_group` "
               "returned" in m for m in msgs), msgs
    assert any("the cp.async at L5 of threads 0-127 is never covered by a `wait_group`" in m for m in msgs), msgs
    assert not np.array_equal(out["B"], inp["A"])  # the bytes never landed: the read saw the garbage
    h = next(h for h in rep.hazards if h.kind == "async-read")
    assert (h.span.line, h.other_span.line) == (9, 5)


def test_cp_async_bytes_reach_other_threads_only_after_a_barrier():
    k, inp = _cp_kernel(sync=False)
    out, rep = sim(k, inp)
    (msg,) = messages(rep)
    # the bytes are the issuing thread's writes at its wait_group (L7): the fix is a barrier after the wait
    assert "that thread 0 wrote at L7" in msg and "add `cta_sync` after L7" in msg and "read after write" in msg
    assert np.array_equal(out["B"], inp["A"])


def test_wait_group_n_leaves_the_newest_groups_in_flight():
    A = ir.Buffer("A", "global", "float32", (2, 128), init="arange")
    B = ir.Buffer("B", "global", "float32", (2, 128), init="zeros")
    S = ir.Buffer("S", "shared", "float32", (2, 128))
    body = [ir.CpAsync(S, TX, A, TX, 1, span=at(3)), ir.AsyncGroup("commit", span=at(4)),
            ir.CpAsync(S, ir.add(TX, 128), A, ir.add(TX, 128), 1, span=at(5)), ir.AsyncGroup("commit", span=at(6)),
            ir.AsyncGroup("wait", n=1, span=at(7)),
            ir.Store(B, (ir.Const(0), TX), ir.Load(S, (ir.Const(0), TX)), span=at(8))]
    late = ir.Store(B, (ir.Const(1), TX), ir.Load(S, (ir.Const(1), TX)), span=at(9))
    a = np.arange(256, dtype=np.float32).reshape(2, 128)
    out, rep = sim(kernel(128, (A, B), (S,), body + [late, ir.AsyncGroup("wait", n=0, span=at(10))]),
                   {"A": a, "B": np.zeros_like(a)})
    msgs = messages(rep)
    assert len(msgs) == 1 and "reads S[1, 0] at L9 that the cp.async writes at L5" in msgs[0], msgs
    fixed = body + [ir.AsyncGroup("wait", n=0, span=at(10)), late]
    out, rep = sim(kernel(128, (A, B), (S,), fixed), {"A": a, "B": np.zeros_like(a)})
    assert rep.clean, messages(rep)
    assert np.array_equal(out["B"], a)


def test_cp_async_source_overwritten_before_completion():
    G = ir.Buffer("G", "global", "float32", (128,), init="arange")
    B = ir.Buffer("B", "global", "float32", (128,), init="zeros")
    S = ir.Buffer("S", "shared", "float32", (128,))
    clobber = ir.Store(G, (TX,), ir.Const(0.0), span=at(5))
    head = [ir.CpAsync(S, TX, G, TX, 1, span=at(3)), ir.AsyncGroup("commit", span=at(4))]
    tail = [ir.Store(B, (TX,), ir.Load(S, (TX,)), span=at(7))]
    g = np.arange(128, dtype=np.float32)
    _, rep = sim(kernel(128, (G, B), (S,), head + [clobber, ir.AsyncGroup("wait", n=0, span=at(6))] + tail),
                 {"G": g, "B": np.zeros_like(g)})
    (msg,) = messages(rep)
    assert "thread 0 writes G[0] at L5 that the cp.async reads at L3, before its thread's covering" in msg
    _, rep = sim(kernel(128, (G, B), (S,), head + [ir.AsyncGroup("wait", n=0, span=at(6)), clobber] + tail),
                 {"G": g, "B": np.zeros_like(g)})
    assert rep.clean, messages(rep)


def test_cp_async_size_and_alignment_are_checked():
    A = ir.Buffer("A", "global", "float16", (256,), init="arange")
    S = ir.Buffer("S", "shared", "float16", (256,))
    with pytest.raises(LaunchError, match="cp.async copies 4, 8 or 16 bytes, not 2"):
        sim(kernel(32, (A,), (S,), [ir.CpAsync(S, TX, A, TX, 1, span=at(3))]), {"A": np.zeros(256, np.float16)})
    with pytest.raises(LaunchError, match="misaligned 8-byte access to A"):
        sim(kernel(32, (A,), (S,), [ir.CpAsync(S, ir.mul(TX, 4), A, ir.add(ir.mul(TX, 4), 2), 4, span=at(3))]),
            {"A": np.zeros(256, np.float16)})


# ----------------------------------------------------------------------------- TMA: an independent model


def _tma_model(gbytes: np.ndarray, tm: ir.TensorMap, coords, smem_offset: int, smem_nbytes: int):
    """What a G2S box writes to shared memory, from the ISA's tables, element by element: the box's elements in
    box order, each at ``smem_offset + linear * E``; the 16-byte chunk ``c`` of 128-byte line ``L`` of that address
    lands in chunk ``c ^ (L % 2**B)`` (PTX ISA 9.0 §5.5.7's rows).  Returns the shared bytes (``None`` where nothing
    is written) and the bytes complete-tx counts."""
    E = tm.elem_bytes
    out = [None] * smem_nbytes
    # the OOB NaN the H200 writes, little endian: 0x7ff7 in every 16-bit unit (docs/gpu-runs.md, 2026-12-01)
    nan = {"FLOAT16": [0xF7, 0x7F], "FLOAT32": [0xF7, 0x7F, 0xF7, 0x7F], "BFLOAT16": [0xF7, 0x7F]}
    box = list(tm.box)
    lin = 0
    for k in np.ndindex(*reversed(box)):
        k = tuple(reversed(k))  # dim 0 fastest
        c = [coords[d] + k[d] for d in range(tm.rank)]
        inside = all(0 <= c[d] < tm.dims[d] for d in range(tm.rank))
        if inside:
            g = tm.base_elem * tm.buf.elem_bytes + c[0] * E + sum(c[d] * tm.strides[d - 1] for d in range(1, tm.rank))
            val = list(gbytes[g:g + E])
        else:
            val = nan[tm.dtype] if tm.oob_fill == 1 else [0] * E
        a = smem_offset + lin * E
        if tm.swizzle:
            line, chunk, within = a // 128, (a % 128) // 16, a % 16
            a = line * 128 + (chunk ^ (line % (1 << tm.swizzle))) * 16 + within
        for b in range(E):
            out[a + b] = val[b]
        lin += 1
    return out, lin * E


TMA_CASES = [
    # (dtype, global shape, box (CUDA order), swizzle, coords, promoted element bytes, oob)
    ("float16", (128, 64), (64, 16), 3, (0, 32), None, 0),
    ("float16", (128, 64), (32, 16), 2, (32, 8), None, 0),
    ("float16", (128, 64), (16, 16), 1, (16, 0), None, 0),
    ("float16", (128, 64), (24, 8), 0, (8, 3), None, 0),
    ("float32", (64, 64), (32, 8), 3, (32, 60), None, 0),  # rows 64.. out of bounds: zero-filled
    ("float32", (64, 64), (32, 8), 3, (-8, 60), None, 1),  # both dims partly out of bounds: NaN-filled
    ("float16", (64, 64), (64, 8), 3, (0, 60), None, 1),
    ("uint8", (64, 256), (128, 4), 3, (128, 2), None, 0),
    ("bfloat16", (64, 64), (64, 8), 3, (0, 60), None, 1),
    ("bfloat16", (64, 64), (16, 32), 1, (-4, -3), None, 0),  # before the start in both dimensions
    ("float16", (128, 64), (16, 16), 3, (16, 16), 4, 0),  # float16 as uint32 units (TVM's promotion)
    ("float16", (8, 16, 32), (32, 4, 2), 2, (0, 12, 6), None, 0),  # rank 3, dim 1 past the end
    ("float32", (4, 8, 16), (16, 4, 2), 0, (8, 6, 3), None, 1),  # rank 3, past all three dims: NaN-filled
    ("bfloat16", (4, 8, 64), (32, 8, 1), 3, (48, 4, 0), None, 0),  # rank 3, past dims 0 and 1: zero-filled
]


@pytest.mark.parametrize("case", TMA_CASES, ids=lambda c: f"{c[0]}-box{'x'.join(map(str, c[2]))}-sw{c[3]}")
def test_tma_box_matches_an_independent_model(case):
    dtype, gshape, box, swz, coords, promoted, oob = case
    A = ir.Buffer("A", "global", dtype, gshape, init="arange")
    eb = promoted or A.elem_bytes
    nbytes = int(np.prod(box)) * eb
    S = ir.Buffer("S", "shared", dtype, (max(nbytes, 1024) // A.elem_bytes,))
    tm = _tmap(A, box, swz, oob, elem_bytes=promoted, dtype="UINT32" if promoted else None)
    rng = np.random.default_rng(7)
    a = rng.integers(0, 255, size=A.nbytes, dtype=np.uint8).view(A.elem_bytes == 2 and np.uint16 or
                                                                 A.elem_bytes == 4 and np.uint32 or np.uint8)
    a = a.reshape(gshape)
    bar = mbar()
    body = prologue(bar) + [
        when(eq(TX, 0), ir.MbarArrive(bar, tm.box_bytes, span=at(4)),
             ir.TmaCopy("g2s", tm, S, 0, tuple(ir.Const(c) for c in coords), mbar=bar, span=at(5)), line=4),
        ir.MbarWait(bar, 0, span=at(6))]
    k = kernel(32, (A,), (S, bar), body, (tm,))
    smem = {}

    class Keep(interpreter.Simulator):  # (the shared bytes after the run)
        def run(self):
            out = super().run()
            smem["S"] = self.mem["S"].copy()
            return out

    tr = Tracker(k, 32)
    Keep(k, {"A": a}, tracker=tr).run()
    rep = tr.finish()
    assert rep.clean, messages(rep)
    want, tx = _tma_model(a.view(np.uint8).reshape(-1), tm, coords, 0, S.nbytes)
    assert tx == tm.box_bytes
    written = np.array([w is not None for w in want])
    assert written.sum() == nbytes
    assert np.array_equal(smem["S"][written], np.array([w for w in want if w is not None], np.uint8))
    done = [e for e in rep.timeline if e.kind == "tma.complete"]
    assert len(done) == 1 and done[0].info["bytes"] == tm.box_bytes  # the whole box, out-of-bounds part included


def test_tma_store_drops_out_of_bounds_elements_and_round_trips():
    A = ir.Buffer("A", "global", "float32", (40, 48), init="arange")
    B = ir.Buffer("B", "global", "float32", (40, 48), init="zeros")
    S = ir.Buffer("S", "shared", "float32", (32, 32))
    ta, tb = _tmap(A, (32, 32), 3), _tmap(B, (32, 32), 3)
    bar = mbar()
    c = (ir.Const(32), ir.Const(16))  # columns 32..63 (48.. out), rows 16..47 (40.. out)
    body = prologue(bar) + [
        when(eq(TX, 0), ir.MbarArrive(bar, ta.box_bytes, span=at(4)), line=4),
        when(eq(TX, 0), ir.TmaCopy("g2s", ta, S, 0, c, mbar=bar, span=at(5)), line=5),
        ir.MbarWait(bar, 0, span=at(6)),
        when(eq(TX, 0), ir.TmaCopy("s2g", tb, S, 0, c, span=at(7)), ir.AsyncGroup("commit", bulk=True, span=at(8)),
             ir.AsyncGroup("wait", bulk=True, n=0, span=at(9)), line=7)]
    a = np.arange(40 * 48, dtype=np.float32).reshape(40, 48) + 1
    out, rep = sim(kernel(64, (A, B), (S, bar), body, (ta, tb)), {"A": a, "B": np.zeros_like(a)})
    assert rep.clean, messages(rep)
    want = np.zeros_like(a)
    want[16:40, 32:48] = a[16:40, 32:48]
    assert np.array_equal(out["B"], want)
    assert rep.written == {"B"} and not rep.unwritten.get("B", np.zeros(1, bool))[16 * 48 + 32]


def test_tma_box_function_is_box_linear_then_swizzled():
    A = ir.Buffer("A", "global", "float16", (16, 64))
    tm = _tmap(A, (64, 16), 3)
    g, inb, s = tma_box(tm, (0, 0), 0)
    assert inb.all() and np.array_equal(g, np.arange(16 * 64) * 2)  # the whole tensor, row-major
    rows = s.reshape(16, 64) // 128  # each box row is one 128-byte line ...
    assert np.array_equal(rows, np.broadcast_to(np.arange(16)[:, None], (16, 64)))
    chunk = (s.reshape(16, 64) % 128) // 16  # ... whose 16-byte chunks are permuted by the row's low 3 bits
    assert np.array_equal(chunk[:, ::8], np.arange(8)[None, :] ^ (np.arange(16) % 8)[:, None])


# ----------------------------------------------------------------------------- mbarriers: completion and hangs
def _tma_roundtrip(*, expect=None, arrive=True, issuers=eq(TX, 0), wait_parity=0, extra=(), fence=False):
    """The design's ``tma_demo``: A[64:128, 0:64] -> S (128B swizzle) -> B[0:64, 64:128] (``fence``: with its
    ``fence.proxy.async`` by every thread after the wait)."""
    A = ir.Buffer("A", "global", "float16", (256, 128), init="arange")
    B = ir.Buffer("B", "global", "float16", (256, 128), init="zeros")
    S = ir.Buffer("S", "shared", "float16", (64, 64))
    bar = mbar()
    ta, tb = _tmap(A, (64, 64), 3), _tmap(B, (64, 64), 3)
    body = prologue(bar)
    if arrive:
        body.append(when(eq(TX, 0), ir.MbarArrive(bar, ta.box_bytes if expect is None else expect, span=at(4)),
                         line=4))
    g2s = ir.TmaCopy("g2s", ta, S, 0, (ir.Const(0), ir.Const(64)), mbar=bar, span=at(5))
    body.append(when(issuers, g2s, line=5) if issuers is not None else g2s)
    body += list(extra)
    body.append(ir.MbarWait(bar, wait_parity, span=at(6)))
    if fence:
        body.append(ir.Fence("proxy_async", span=at(7)))
    body.append(when(eq(TX, 0), ir.TmaCopy("s2g", tb, S, 0, (ir.Const(64), ir.Const(0)), span=at(8)),
                     ir.AsyncGroup("commit", bulk=True, span=at(9)), ir.AsyncGroup("wait", bulk=True, n=0, span=at(10)),
                     line=8))
    a = (np.arange(256 * 128) % 2048).astype(np.float16).reshape(256, 128)
    return kernel(128, (A, B), (S, bar), body, (ta, tb)), {"A": a, "B": np.zeros_like(a)}


@pytest.mark.parametrize("fence", [False, True])
def test_tma_roundtrip_is_clean_and_moves_the_tile(fence):
    # (the TMA store reads bytes the TMA load wrote, async proxy to async proxy: the fence is not needed)
    k, inp = _tma_roundtrip(fence=fence)
    out, rep = sim(k, inp)
    assert rep.clean and rep.hang is None, messages(rep)
    assert np.array_equal(out["B"][0:64, 64:128], inp["A"][64:128, 0:64])
    assert not out["B"][64:].any() and not out["B"][0:64, 0:64].any()
    ev = [(e.kind, e.info.get("barrier"), e.info.get("phase")) for e in rep.timeline
          if e.kind not in ("cta_sync", "fence.proxy.async")]
    assert ev[:7] == [("mbarrier.init", "full", None), ("fence.mbarrier.init", None, None), ("arrive", "full", 0),
                      ("tma.issue", "full", 0), ("tma.complete", "full", 0), ("phase", "full", 0), ("wait", "full", 0)]
    assert [e.kind for e in rep.timeline][-5:] == ["tma.issue", "bulk_commit_group", "tma.read", "tma.complete",
                                                   "bulk_wait_group"]
    issue = next(e for e in rep.timeline if e.kind == "tma.issue")
    assert issue.span.line == 5 and list(issue.threads) == [0] and issue.info["bytes"] == 8192


@pytest.mark.parametrize("expect,text", [
    (16384, "mbarrier full phase 0 never completes: 8192 of 16384 expected bytes never arrive — threads 0-127 "
            "wait at L6 (`wait full phase 0`)"),
    (4096, "mbarrier full phase 0 never completes: 8192 bytes arrived, 4096 expected — threads 0-127 wait at L6"),
])
def test_expect_tx_that_does_not_match_the_bytes_would_hang(expect, text):
    k, inp = _tma_roundtrip(expect=expect)
    out, rep = sim(k, inp)
    assert rep.hang is not None and rep.hang.message.startswith("would hang: " + text)
    assert rep.hang.span.line == 6 and rep.hang.other_span.line == 4
    assert rep.summary().startswith("happens-before: would hang: mbarrier full phase 0")
    assert not rep.clean
    assert not out["B"].any()  # the run stopped at the wait: the store never ran
    if expect < 8192:
        assert any("8192 bytes arrived, 4096 expected — the TMA copies at L5 complete more bytes" in m
                   for m in messages(rep))


def test_a_missing_arrive_would_hang():
    k, inp = _tma_roundtrip(arrive=False)
    _, rep = sim(k, inp)
    assert rep.hang.message.startswith("would hang: mbarrier full phase 0 never completes: 1 of 1 arrival missing")
    k, inp = _tma_roundtrip()
    assert sim(k, inp)[1].hang is None


def test_a_copy_issued_by_every_thread_completes_128_boxes():
    """An unguarded TMA copy is issued by each of the 128 threads: the first box completes phase 0, the other 127
    are still in flight when the threads read the tile, and their bytes go to phase 1."""
    k, inp = _tma_roundtrip(issuers=None)
    _, rep = sim(k, inp)
    msgs = messages(rep)
    assert any("reads S[0, 0] at L8 that the TMA copy (mbarrier full) writes at L5" in m for m in msgs), msgs
    assert any("mbarrier full phase 1: 1040384 bytes arrived, 0 expected" in m and "128 copies of 1048576 bytes in all"
               in m for m in msgs), msgs
    k, inp = _tma_roundtrip()
    assert sim(k, inp)[1].clean


def test_waiting_on_the_wrong_parity():
    # parity 1 on a barrier in phase 0 passes at once (the "preceding phase"): the TMA store reads S in flight
    k, inp = _tma_roundtrip(wait_parity=1)
    _, rep = sim(k, inp)
    assert any("thread 0 reads S[0, 0] at L8 that the TMA copy (mbarrier full) writes at L5" in m
               for m in messages(rep)), messages(rep)
    # waiting for phase 1 after phase 0 completed, with nothing arriving for phase 1: would hang
    k, inp = _tma_roundtrip(extra=())
    body = list(k.body.body)
    pos = next(i for i, s in enumerate(body) if isinstance(s, ir.MbarWait))
    body.insert(pos + 1, ir.MbarWait(body[pos].bar, 1, span=at(7)))
    _, rep = sim(kernel(128, k.params, k.shared, body, k.tensormaps), inp)
    assert rep.hang.message == ("would hang: mbarrier full phase 1 never completes: 1 of 1 arrival missing; it "
                                "completed 1 phase — threads 0-127 wait at L7 (`wait full phase 1`)")


def test_reading_the_destination_before_the_wait_is_in_flight():
    Z = ir.Buffer("Z", "global", "float16", (32,))
    k, inp = _tma_roundtrip()
    S = k.shared[0]
    peek = when(eq(WARP, 1), ir.Store(Z, (ir.mod(TX, 32),), ir.Load(S, (ir.Const(0), ir.mod(TX, 32))), span=at(11)),
                line=11)
    body = list(k.body.body)
    pos = next(i for i, s in enumerate(body) if isinstance(s, ir.MbarWait))
    inp["Z"] = np.zeros(32, np.float16)
    _, rep = sim(kernel(128, (*k.params, Z), k.shared, body[:pos] + [peek] + body[pos:], k.tensormaps), inp)
    (msg,) = messages(rep)
    assert ("thread 32 reads S[0, 0] at L11 that the TMA copy (mbarrier full) writes at L5, before its mbarrier full "
            "phase 0 completed (`wait full phase 0` observes it, PTX ISA 9.0 §9.7.13.15)") in msg
    assert (rep.hazards[0].span.line, rep.hazards[0].other_span.line) == (11, 5)
    # after the wait, the same read is clean
    _, rep = sim(kernel(128, (*k.params, Z), k.shared, body[:pos + 1] + [peek] + body[pos + 1:], k.tensormaps), inp)
    assert rep.clean, messages(rep)


def test_a_barrier_with_the_issuer_does_not_order_the_tma_bytes():
    """Only the waiters of the phase see the copy's bytes; a cta_sync with the issuing thread after the issue
    does not order them (the copies' own clock column)."""
    Z = ir.Buffer("Z", "global", "float16", (32,))

    def build(everyone_waits: bool):
        k, inp = _tma_roundtrip()
        S = k.shared[0]
        body = list(k.body.body)
        pos = next(i for i, s in enumerate(body) if isinstance(s, ir.MbarWait))
        wait = body[pos]
        body[pos:pos + 1] = [ir.Barrier(span=at(12)),
                             wait if everyone_waits else when(eq(WARP, 0), wait, line=6),
                             when(eq(WARP, 1), ir.Store(Z, (ir.mod(TX, 32),), ir.Load(S, (ir.Const(1), ir.mod(TX, 32))),
                                                     span=at(14)), line=14)]
        inp["Z"] = np.zeros(32, np.float16)
        return kernel(128, (*k.params, Z), k.shared, body, k.tensormaps), inp

    _, rep = sim(*build(False))
    msgs = messages(rep)
    assert any("thread 32 reads S[1, 0] at L14 that the TMA copy at L5 wrote, without a `wait full phase P` that "
               "observed its completion" in m for m in msgs), msgs
    _, rep = sim(*build(True))
    assert rep.clean, messages(rep)


def test_a_wait_on_a_parity_two_phases_old():
    A = ir.Buffer("A", "global", "float32", (4,), init="arange")
    bar = mbar()
    arrive = [when(eq(TX, 0), ir.MbarArrive(bar, 0, span=at(3 + i)), line=3 + i) for i in range(3)]
    # (a cta_sync after each wait orders every waiter before the next phase's arrive: test_async_cells.py)
    ok = prologue(bar) + [arrive[0], ir.MbarWait(bar, 0, span=at(7)), ir.Barrier(span=at(7)), arrive[1],
                          ir.MbarWait(bar, 1, span=at(8)), ir.Barrier(span=at(8)), arrive[2],
                          ir.MbarWait(bar, 0, span=at(9))]
    _, rep = sim(kernel(32, (A,), (bar,), ok), {"A": np.zeros(4, np.float32)})
    assert rep.clean, messages(rep)
    # thread 0 waits for phase 0 only after phases 0 and 1 completed: its parity 0 names phase 0 (two phases old)
    others = ir.Bin("!=", TX, ir.Const(0))
    bad = prologue(bar) + [arrive[0], when(others, ir.MbarWait(bar, 0, span=at(7)), line=7),
                           arrive[1], when(others, ir.MbarWait(bar, 1, span=at(8)), line=8), arrive[2],
                           ir.MbarWait(bar, 0, span=at(9))]
    _, rep = sim(kernel(32, (A,), (bar,), bad), {"A": np.zeros(4, np.float32)})
    msgs = messages(rep)
    (msg,) = [m for m in msgs if "two or more phases old" in m]
    assert ("the wait on mbarrier full phase 0 at L9 names phase 0 for thread 0, two or more phases old (the barrier "
            "completed 3)") in msg and "§9.7.13.15.16" in msg
    # and the waits of threads 1-31 are not ordered before the next phases' arrives by thread 0
    assert all("is not ordered before the arrive" in m for m in msgs if m != msg) and len(msgs) == 3


def test_arrive_on_an_uninitialised_barrier_and_before_the_init_is_visible():
    A = ir.Buffer("A", "global", "float32", (4,), init="arange")
    bar = mbar()
    go = [when(eq(TX, 0), ir.MbarArrive(bar, 0, span=at(5)), line=5), ir.MbarWait(bar, 0, span=at(6))]
    _, rep = sim(kernel(32, (A,), (bar,), go), {"A": np.zeros(4, np.float32)})
    msgs = messages(rep)
    assert len(msgs) == 2 and "thread 0 arrives on mbarrier full at L5, which is not initialised" in msgs[0]
    assert "threads 0-31 waits on mbarrier full at L6, which is not initialised" in msgs[1]
    # initialised by thread 0, but thread 5 arrives with no cta_sync after the init
    racy = [when(eq(TX, 0), ir.MbarInit(bar, 1, span=at(2)), line=2),
            when(eq(TX, 5), ir.MbarArrive(bar, 0, span=at(5)), line=5), ir.MbarWait(bar, 0, span=at(6))]
    _, rep = sim(kernel(32, (A,), (bar,), racy), {"A": np.zeros(4, np.float32)})
    arrive, wait = messages(rep)
    assert "thread 5 arrives on mbarrier full at L5 before its initialisation by thread 0 at L2 is visible" in arrive
    assert "thread 1 waits on mbarrier full at L6 before its initialisation by thread 0 at L2 is visible" in wait
    racy.insert(1, ir.Barrier(span=at(3)))
    _, rep = sim(kernel(32, (A,), (bar,), racy), {"A": np.zeros(4, np.float32)})
    assert rep.clean, messages(rep)


# ----------------------------------------------------------------------------- TMA store: proxies and sources
def _store_kernel(*, fence: bool, sync: bool, clobber: str | None = None):
    """Every thread writes S generically, then thread 0 stores S to B with TMA."""
    B = ir.Buffer("B", "global", "float32", (32, 32), init="zeros")
    S = ir.Buffer("S", "shared", "float32", (32, 32))
    tb = _tmap(B, (32, 32))  # (S is row-major: no swizzle)
    j = ir.LoopVar("j")
    e = ir.add(TX, ir.mul(j, 128))
    fill = ir.Grid((j,), (8,), ir.Store(S, (ir.floordiv(e, 32), ir.mod(e, 32)), ir.Bin("+", TX, ir.Const(1)),
                                        span=at(3)), span=at(3))
    body: list[ir.Stmt] = [fill]
    if fence:
        body.append(ir.Fence("proxy_async", span=at(4)))
    if sync:
        body.append(ir.Barrier(span=at(5)))
    store = [ir.TmaCopy("s2g", tb, S, 0, (ir.Const(0), ir.Const(0)), span=at(6)),
             ir.AsyncGroup("commit", bulk=True, span=at(7))]
    body.append(when(eq(TX, 0), *store, line=6))
    over = when(eq(TX, 0), ir.Store(S, (ir.Const(0), ir.Const(0)), ir.Const(0.0), span=at(9)), line=9)
    if clobber == "before":
        body.append(over)
    body.append(when(eq(TX, 0), ir.AsyncGroup("wait", bulk=True, n=0, read=True, span=at(8)), line=8))
    if clobber == "after":
        body.append(over)
    body.append(when(eq(TX, 0), ir.AsyncGroup("wait", bulk=True, n=0, span=at(10)), line=10))
    return kernel(128, (B,), (S,), body, (tb,)), {"B": np.zeros((32, 32), np.float32)}


def test_tma_store_of_generic_writes_needs_the_proxy_fence():
    out, rep = sim(*_store_kernel(fence=False, sync=True))
    (msg,) = messages(rep)
    assert ("async-proxy read of generic writes on S: the TMA store at L6 reads S[0, 0] that thread 0 wrote at L3 "
            "with no `fence.proxy.async` by thread 0 after that write") in msg
    h = rep.hazards[0]
    assert (h.kind, h.span.line, h.other_span.line) == ("proxy", 6, 3)
    out, rep = sim(*_store_kernel(fence=True, sync=True))
    assert rep.clean, messages(rep)
    want = (np.arange(1024) % 128 + 1).astype(np.uint32).view(np.float32).reshape(32, 32)  # (tx + 1's bits)
    assert np.array_equal(out["B"], want)
    _, rep = sim(*_store_kernel(fence=True, sync=False))  # the fence without the barrier: a race with the issuer
    assert any("thread 0 reads S" in m and "read after write" in m for m in messages(rep)), messages(rep)


def test_overwriting_a_tma_store_source_before_its_read_wait():
    _, rep = sim(*_store_kernel(fence=True, sync=True, clobber="before"))
    (msg,) = messages(rep)
    assert "thread 0 writes S[0, 0] at L9 that the TMA store reads at L6, before its thread's covering " \
           "`bulk_wait_group ... read` returned" in msg
    _, rep = sim(*_store_kernel(fence=True, sync=True, clobber="after"))
    assert rep.clean, messages(rep)


def test_a_tma_store_never_waited_for_is_reported_and_lands_at_the_end():
    k, inp = _store_kernel(fence=True, sync=True)
    body = [s for s in k.body.body if not (isinstance(s, ir.If) and s.span.line in (8, 10))]
    out, rep = sim(kernel(128, k.params, k.shared, body, k.tensormaps), inp)
    (msg,) = messages(rep)
    assert "the TMA store at L6 is never waited for" in msg
    assert out["B"].any()


# ----------------------------------------------------------------------------- the scheduler
def _producer_consumer(order: str):
    """Warp 1 produces (arrive + TMA), the other warps consume; ``order`` "consumer-first" puts the consumers'
    wait before the producer in program order."""
    k, inp = _tma_roundtrip()
    body = list(k.body.body)
    i_arr = next(i for i, s in enumerate(body) if isinstance(s, ir.If) and s.span.line == 4)
    arrive, copy, wait = body[i_arr], body[i_arr + 1], body[i_arr + 2]
    prod = [when(eq(WARP, 1), *arrive.then.body, line=4), when(eq(WARP, 1), *copy.then.body, line=5)]
    prod = [ir.If(ir.Bin("==", TX, ir.Const(32)), p.then, span=p.span) for p in prod]
    cons = [when(ir.Bin("!=", WARP, ir.Const(1)), wait, line=6)]
    mid = cons + prod if order == "consumer-first" else prod + cons
    body[i_arr:i_arr + 3] = mid + [when(eq(WARP, 1), wait, line=6)]
    return kernel(128, k.params, k.shared, body, k.tensormaps), inp


@pytest.mark.parametrize("order", ["consumer-first", "producer-first"])
def test_a_producer_after_the_consumers_in_program_order(order):
    k, inp = _producer_consumer(order)
    out, rep = sim(k, inp)
    assert rep.clean and rep.hang is None, messages(rep)
    assert np.array_equal(out["B"][0:64, 64:128], inp["A"][64:128, 0:64])
    kinds = [e.kind for e in rep.timeline]
    assert ("wait.blocked" in kinds) == (order == "consumer-first")


def test_a_guarded_wait_before_a_cta_sync_deadlocks():
    k, inp = _tma_roundtrip()
    body = list(k.body.body)
    i_arr = next(i for i, s in enumerate(body) if isinstance(s, ir.If) and s.span.line == 4)
    arrive, copy, wait = body[i_arr], body[i_arr + 1], body[i_arr + 2]
    body[i_arr:i_arr + 3] = [when(eq(WARP, 0), wait, line=6), ir.Barrier(span=at(7)), arrive, copy]
    out, rep = sim(kernel(128, k.params, k.shared, body, k.tensormaps), inp)
    assert rep.hang.message == ("would hang: mbarrier full phase 0 never completes: 1 of 1 arrival missing — "
                                "threads 0-31 wait at L6 (`wait full phase 0`); threads 32-127 wait at the cta_sync "
                                "at L7 for the others")
    assert rep.hang.span.line == 6


def test_a_wait_in_a_loop_that_cannot_pass_is_a_located_error():
    k, inp = _tma_roundtrip()
    body = list(k.body.body)
    i_arr = next(i for i, s in enumerate(body) if isinstance(s, ir.If) and s.span.line == 4)
    arrive, copy, wait = body[i_arr], body[i_arr + 1], body[i_arr + 2]
    r = ir.LoopVar("r")
    body[i_arr:i_arr + 3] = [ir.Grid((r,), (1,), ir.Seq((wait,)), span=at(6)), arrive, copy]
    with pytest.raises(LaunchError, match="suspends threads only at top-level statements") as e:
        sim(kernel(128, k.params, k.shared, body, k.tensormaps), inp)
    assert e.value.span.line == 6


# ----------------------------------------------------------------------------- batched and serial runs agree
KERNELS = {
    "cp": lambda: _cp_kernel(),
    "cp-nosync": lambda: _cp_kernel(sync=False),
    "tma": lambda: _tma_roundtrip(),
    "tma-hang": lambda: _tma_roundtrip(expect=16384),
    "store-nofence": lambda: _store_kernel(fence=False, sync=True),
    "producer": lambda: _producer_consumer("consumer-first"),
}


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_batched_and_serial_runs_agree(name, monkeypatch):
    got = []
    for batched in (True, False):
        monkeypatch.setattr(interpreter, "BATCHED", batched)
        k, inp = KERNELS[name]()
        out, rep = sim(k, inp)
        got.append(({n: v.tobytes() for n, v in out.items()}, messages(rep), rep.hang and rep.hang.message,
                    [(e.kind, e.span, e.info) for e in rep.timeline]))
    assert got[0] == got[1]


def test_a_kernel_without_asynchronous_copies_takes_the_old_path():
    A = ir.Buffer("A", "global", "float32", (128,), init="arange")
    B = ir.Buffer("B", "global", "float32", (128,), init="zeros")
    k = kernel(128, (A, B), (), [ir.Store(B, (TX,), ir.Load(A, (TX,)), span=at(3))])
    s = interpreter.Simulator(k, {"A": np.arange(128, dtype=np.float32), "B": np.zeros(128, np.float32)})
    assert s.asm is None and s.hb.known.shape == (128, 128) and not s.hb.accesses.asynchronous
    s.run()
    k2, inp = _cp_kernel()
    s2 = interpreter.Simulator(k2, inp)
    assert s2.asm is not None and s2.hb.known.shape == (128, 128)  # (no mbarrier: no clock column)


# ----------------------------------------------------------------------------- the reports
def test_a_hang_is_no_pass_and_strict_raises():
    from tilemagic.lang import parse
    from tilemagic.lower.program import check
    from tilemagic.pipeline import _strict_hazards, run_checks
    from tilemagic.result import LaunchResult

    k, inp = _tma_roundtrip(expect=16384)
    out, rep = sim(k, inp)
    tp = check(parse("kernel t threads=128\nglobal A: float16[256, 128] = arange\nglobal B: float16[256, 128] = "
                     "zeros\ncheck B[0:64, 64:128] == A[64:128, 0:64]\n"))
    checks = run_checks(tp, out, rep)
    (c,) = checks
    assert not c.passed and c.status == "NOT EVALUATED"
    assert str(c) == "check B[0:64, 64:128] == A[64:128, 0:64]: NOT EVALUATED (not evaluated: the kernel would hang " \
                     "at L6)"
    lres = LaunchResult("sim", "CPU simulator", outputs=out, checks=[], hazards=[(h.message, h.span)
                                                                               for h in rep.hazards], hb=rep)
    assert not lres.passed  # (no check at all: still no pass)
    assert lres.hb_summary().startswith("happens-before: would hang: mbarrier full phase 0 never completes")
    with pytest.raises(HazardError, match="would hang: mbarrier full phase 0 never completes: 8192 of 16384"):
        _strict_hazards(lres.hazards, lres)


def test_every_thread_arriving_on_a_barrier_of_count_one():
    A = ir.Buffer("A", "global", "float32", (4,), init="arange")
    bar = mbar()
    body = prologue(bar) + [ir.MbarArrive(bar, 0, span=at(4)), ir.MbarWait(bar, 0, span=at(5))]
    _, rep = sim(kernel(32, (A,), (bar,), body), {"A": np.zeros(4, np.float32)})
    msgs = messages(rep)  # 32 phases: the barrier is back at parity 0, and the wait for "phase 0" waits for phase 32
    assert msgs[0].startswith("would hang: mbarrier full phase 32 never completes: 1 of 1 arrival missing; it "
                              "completed 32 phases — threads 0-31 wait at L5")
    assert any("the arrive at L4 by threads 0-31 completes 32 phases of mbarrier full (count 1)" in m for m in msgs)
    assert any("names phase 0 for thread 0, two or more phases old" in m for m in msgs)
    body[-2] = when(eq(TX, 0), ir.MbarArrive(bar, 0, span=at(4)), line=4)
    _, rep = sim(kernel(32, (A,), (bar,), body), {"A": np.zeros(4, np.float32)})
    assert rep.clean, messages(rep)
    bar32 = mbar(count=32)
    body = prologue(bar32) + [ir.MbarArrive(bar32, 0, span=at(4)), ir.MbarWait(bar32, 0, span=at(5))]
    _, rep = sim(kernel(32, (A,), (bar32,), body), {"A": np.zeros(4, np.float32)})
    assert rep.clean, messages(rep)


def test_a_tma_store_carries_the_init_bits_of_its_source():
    """Half of S is written: the TMA store moves the other half's garbage, and B is poisoned exactly there."""
    k, inp = _store_kernel(fence=True, sync=True)
    fill = k.body.body[0]
    half = ir.Grid(fill.vars, (4,), fill.body, span=fill.span)  # rows 0..15 only
    out, rep = sim(kernel(128, k.params, k.shared, [half, *k.body.body[1:]], k.tensormaps), inp)
    assert any("uninitialised read" in m and "L6" in m for m in messages(rep)), messages(rep)
    poison = rep.poison["B"].reshape(32, 32 * 4)
    assert not poison[:16].any() and poison[16:].all()


def test_complete_tx_before_expect_tx_is_legal():
    """The copy is issued before the producer's `arrive.expect_tx` in program order, and the consumers wait
    before both: tx may go below zero while an arrival is pending (PTX ISA 9.0 §9.7.13.15.1)."""
    k, inp = _tma_roundtrip()
    body = list(k.body.body)
    i_arr = next(i for i, s in enumerate(body) if isinstance(s, ir.If) and s.span.line == 4)
    arrive, copy, wait = body[i_arr], body[i_arr + 1], body[i_arr + 2]
    late = ir.If(ir.Bin("==", TX, ir.Const(32)), arrive.then, span=arrive.span)
    issue = ir.If(ir.Bin("==", TX, ir.Const(32)), copy.then, span=copy.span)
    body[i_arr:i_arr + 3] = [issue, when(ir.Bin("!=", WARP, ir.Const(1)), wait, line=6), late,
                             when(eq(WARP, 1), wait, line=6)]
    out, rep = sim(kernel(128, k.params, k.shared, body, k.tensormaps), inp)
    assert rep.clean, messages(rep)
    assert np.array_equal(out["B"][0:64, 64:128], inp["A"][64:128, 0:64])


def test_the_timeline_names_the_groups():
    A = ir.Buffer("A", "global", "float32", (2, 128), init="arange")
    S = ir.Buffer("S", "shared", "float32", (2, 128))
    body = [ir.CpAsync(S, TX, A, TX, 1, span=at(3)), ir.AsyncGroup("commit", span=at(4)),
            ir.CpAsync(S, ir.add(TX, 128), A, ir.add(TX, 128), 1, span=at(5)), ir.AsyncGroup("commit", span=at(6)),
            ir.AsyncGroup("wait", n=1, span=at(7)), ir.AsyncGroup("wait", n=0, span=at(8))]
    _, rep = sim(kernel(128, (A,), (S,), body), {"A": np.zeros((2, 128), np.float32)})
    ev = [(e.kind, e.span.line, e.info) for e in rep.timeline]
    assert ev == [("cp.async", 3, {"bytes": 4}), ("commit_group", 4, {"group": 0, "pending": 1}),
                  ("cp.async", 5, {"bytes": 4}), ("commit_group", 6, {"group": 1, "pending": 2}),
                  ("cp.async.complete", 3, {"copy": 3}), ("wait_group", 7, {"n": 1, "read": False, "through": 0}),
                  ("cp.async.complete", 5, {"copy": 5}), ("wait_group", 8, {"n": 0, "read": False, "through": 1})]
    assert all(list(e.threads) == list(range(128)) for e in rep.timeline)


def _two_stage(producer_waits_empty: bool):
    """Warp 0 (thread 0) loads two tiles through one shared buffer S with TMA; warps 2-3 consume each (copy it to
    Z1, Z2) and arrive on ``empty``, which the producer waits for before it overwrites S (the full/empty pipeline
    of CUTLASS, one stage)."""
    A = ir.Buffer("A", "global", "float16", (128, 64), init="arange")
    Z1 = ir.Buffer("Z1", "global", "float16", (64, 64), init="zeros")
    Z2 = ir.Buffer("Z2", "global", "float16", (64, 64), init="zeros")
    S = ir.Buffer("S", "shared", "float16", (64, 64))
    full, empty = mbar("full"), mbar("empty", count=64)
    ta = _tmap(A, (64, 64), 3)
    # (S has no swizzle layout of its own here: the consumers read the swizzled bytes back through the same XOR)
    cons = ir.Bin(">=", TX, ir.Const(64))
    prod = eq(TX, 0)

    def load(row: int, line: int) -> ir.Stmt:
        return when(prod, ir.MbarArrive(full, ta.box_bytes, span=at(line)),
                    ir.TmaCopy("g2s", ta, S, 0, (ir.Const(0), ir.Const(row)), mbar=full, span=at(line)), line=line)

    def consume(Z: ir.Buffer, parity: int, line: int) -> list[ir.Stmt]:
        j = ir.LoopVar(f"c{line}")
        e = ir.add(ir.Bin("-", TX, ir.Const(64)), ir.mul(j, 64))
        r, c = ir.floordiv(e, 64), ir.mod(e, 64)
        phys = ir.xor(c, ir.mul(ir.mod(r, 8), 8))  # the 128-byte swizzle in float16 elements: chunk ^= row % 8
        return [when(cons, ir.MbarWait(full, parity, span=at(line)), line=line),
                when(cons, ir.Grid((j,), (64,), ir.Store(Z, (r, c), ir.Load(S, (r, phys)), span=at(line + 1)),
                                   span=at(line + 1)), line=line + 1),
                when(cons, ir.MbarArrive(empty, 0, span=at(line + 2)), line=line + 2)]

    body = prologue(full, empty) + [load(0, 4)] + consume(Z1, 0, 5)
    if producer_waits_empty:
        body.append(when(prod, ir.MbarWait(empty, 0, span=at(8)), line=8))
    body += [load(64, 9)] + consume(Z2, 1, 10)
    a = (np.arange(128 * 64) % 4093).astype(np.float16).reshape(128, 64)
    inp = {"A": a, "Z1": np.zeros((64, 64), np.float16), "Z2": np.zeros((64, 64), np.float16)}
    return kernel(128, (A, Z1, Z2), (S, full, empty), body, (ta,)), inp


def test_a_full_empty_pipeline_is_clean_and_a_missing_empty_wait_races():
    k, inp = _two_stage(True)
    out, rep = sim(k, inp)
    assert rep.clean and rep.hang is None, messages(rep)
    assert np.array_equal(out["Z1"], inp["A"][:64]) and np.array_equal(out["Z2"], inp["A"][64:])
    k, inp = _two_stage(False)
    _, rep = sim(k, inp)
    msgs = messages(rep)
    # the second load overwrites S while the consumers may still read the first tile
    assert any("thread 0 writes S" in m and "at L9 that thread 64 read at L6" in m and "(write after read)" in m
               for m in msgs), msgs


def test_an_mbarrier_initialised_by_every_thread_is_reported_once():
    A = ir.Buffer("A", "global", "float32", (4,), init="arange")
    bar = mbar()
    body = [ir.MbarInit(bar, 1, span=at(2)), ir.Barrier(span=at(3)),
            when(eq(TX, 0), ir.MbarArrive(bar, 0, span=at(4)), line=4), ir.MbarWait(bar, 0, span=at(5))]
    _, rep = sim(kernel(32, (A,), (bar,), body), {"A": np.zeros(4, np.float32)})
    (h,) = rep.hazards
    assert h.kind == "mbarrier-init" and "mbarrier full is initialised again at L2 by threads 1-31 (first by " \
                                           "thread 0 at L2)" in h.message
    body[0] = when(eq(TX, 0), ir.MbarInit(bar, 1, span=at(2)), line=2)
    assert sim(kernel(32, (A,), (bar,), body), {"A": np.zeros(4, np.float32)})[1].clean
