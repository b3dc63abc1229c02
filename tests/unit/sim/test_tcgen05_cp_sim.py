"""tcgen05.cp in the simulator (issue 14, part S): the TMEM it writes, its completion by tcgen05.commit, and the
happens-before checks around it.

The happens-before cases the language can write are plain cells (:func:`cells.cp_cell`, through
``tilemagic.tilecopy(..., launch="sim")``); the rest use the spliced kernels of :func:`helpers.spliced_cp_kernel` (a
lowered cell with hand-built ``ir.TcgenCp`` + ``ir.TcgenCommit``: a descriptor no plan would give, a commit moved
to another thread, a wait guarded after lowering).  The round trips compare the simulator's TMEM after the run with the image
:func:`tests.reference.tcgen05_cp_ref.tmem_image` decodes from the same shared bytes and descriptor (an independent
decoder written from the PTX ISA 9.0 text), and the TMEM read back through ``tcgen05.ld`` into global memory.
"""

from __future__ import annotations

import numpy as np
import pytest

from tilemagic.arch import smem_desc
from tilemagic.arch import tcgen05 as tc
from tilemagic.errors import LaunchError
from tilemagic.ir import nodes as ir
from tilemagic.sim import interpreter
from tilemagic.sim.interpreter import Simulator

from cells import cp_cell
from helpers import CP_SPLICE_CELL, eq, spliced_cp_kernel, when
from reference import tcgen05_cp_ref as ref

CP = 90  # the spliced statements' line
#: descriptor layout type by swizzle 0..3 (none, 32B, 64B, 128B)
LAYOUT = {0: 0, 1: 6, 2: 4, 3: 2}
DTYPES = {"bfloat16": np.uint16, "float16": np.uint16, "float32": np.uint32}


def _walk(key: str, sw: int) -> tuple[int, int, int]:
    """``(lbo, sbo, bytes read)`` of a descriptor that walks shape ``key`` over packed core matrices."""
    shape = tc.CP_SHAPES[key]
    if sw:
        pitch = 16 << sw  # 32/64/128-byte rows; a row's chunks inside its pitch; 8-row atoms
        return 16, 8 * pitch, max(8, shape.rows) * pitch
    lbo = 128  # core matrices of 8 rows x 16 bytes: a row's chunks one core matrix apart, then the row groups
    return lbo, shape.chunks * 128, max(8, shape.rows) * shape.chunks * 16


def _cell(dtype: str, body: str = CP_SPLICE_CELL) -> str:
    eb = np.dtype(DTYPES[dtype]).itemsize
    return body.format(dtype=dtype, rows=128, cols=32768 // (128 * eb), tcols=128 // eb, slayout="")


def _run(kernel, dtype: str, fill=None):
    eb = np.dtype(DTYPES[dtype]).itemsize
    cols = 32768 // (128 * eb)
    a = np.arange(128 * cols, dtype=np.int64) * 2654435761 % (1 << (8 * eb))
    inputs = {"A": (a if fill is None else fill).astype(DTYPES[dtype]).reshape(128, cols),
              "B": np.zeros((128, 128 // eb), DTYPES[dtype])}
    sim = Simulator(kernel, inputs)
    out = sim.run()
    return sim, out


def _window(sim) -> bytes:
    """The CTA's shared window as the descriptor addresses it (:func:`tilemagic.ir.nodes.shared_bases`)."""
    bases = ir.shared_bases(sim.k)
    end = max(bases[b.name] + b.nbytes for b in sim.k.shared)
    w = np.zeros(end, np.uint8)
    for b in sim.k.shared:
        w[bases[b.name]:bases[b.name] + b.nbytes] = np.asarray(sim.mem[b.name]).view(np.uint8).reshape(-1)
    return w.tobytes()


CASES = [(key, sw, dt) for key in tc.CP_SHAPES for sw in range(4) for dt in ("bfloat16", "float32")]


@pytest.mark.parametrize("key,sw,dtype", CASES, ids=[f"{k}-sw{s}-{d}" for k, s, d in CASES])
def test_round_trip_against_the_isa_decoder(key, sw, dtype):
    shape = tc.CP_SHAPES[key]
    lbo, sbo, _ = _walk(key, sw)
    off, col = (1024 if sw == 3 else 512, 4) if (len(key) + sw) % 2 else (0, 0)  # (offsets on half the cases)
    kernel, _ = spliced_cp_kernel(_cell(dtype), lambda b, addr: [
        ir.TcgenCp(key, b["S"], off, lbo, sbo, LAYOUT[sw], addr, 0, col, tmem=b["T"])])
    sim, out = _run(kernel, dtype)
    # (B reads all 32 columns back: the cells the cp did not write are uninitialised reads, nothing else is reported)
    assert all(m.startswith("hazard: uninitialised read: thread") and ("reads TMEM lane" in m or "of r at L15" in m)
               for m, _ in sim.hazards)
    cp = next(s for s in ir.walk(kernel.body) if isinstance(s, ir.TcgenCp))
    desc = cp.descriptor(ir.shared_bases(kernel)["S"])
    assert ref.decode(desc)["start"] == off + ir.shared_bases(kernel)["S"]
    img = ref.tmem_image(_window(sim), desc, shape.shape, shape.multicast)
    written = img != None  # noqa: E711 (an object array: None where the instruction writes nothing)
    exp = np.zeros((128, 512), np.uint32)
    exp[written] = img[written].astype(np.uint64).astype(np.uint32)
    got = sim.tmem.cells[:, col:col + 512 - col]
    assert np.array_equal(sim.tmem.touched[:, col:], written[:, :512 - col])
    assert np.array_equal(np.where(written[:, :512 - col], got, 0), exp[:, :512 - col])
    # the same words through tcgen05.ld of all 128 lanes into B (32-bit columns 0..31 of the allocation)
    words = np.asarray(out["B"]).view(np.uint32).reshape(128, 32)
    w = written[:, :32 - col]
    assert np.array_equal(np.where(w, words[:, col:], 0), exp[:, :32 - col])
    poison = sim.hb.report.poison.get("B", np.zeros(128 * 128, bool)).reshape(128, 32, 4).any(-1)
    assert np.array_equal(~poison[:, col:], w) and poison[:, :col].all()
    assert shape.replicas == (0,) or len(np.unique(np.nonzero(written)[0])) == shape.rows * len(shape.replicas)


def test_four_cps_of_a_swizzled_tile_fill_the_tmem_tile():
    """TVM's bf16 128x64 SW128 plan: 4 x 128x256b, SBO 1024 B, 32 B apart in shared memory and 8 columns in TMEM:
    the tile comes back row for row through tcgen05.ld."""
    cell = CP_SPLICE_CELL.format(dtype="bfloat16", rows=128, cols=64, tcols=64, slayout=" @ swizzle(3, 3, 3)")
    kernel, _ = spliced_cp_kernel(cell, lambda b, addr: [
        ir.TcgenCp("128x256b", b["S"], 32 * i, 16, 1024, 2, addr, 0, 8 * i, tmem=b["T"]) for i in range(4)])
    a = (np.arange(128 * 64) * 7 % 65521).astype(np.uint16).reshape(128, 64)
    sim = Simulator(kernel, {"A": a, "B": np.zeros((128, 64), np.uint16)})
    out = sim.run()
    assert sim.hazards == []
    assert np.array_equal(np.asarray(out["B"]).view(np.uint16).reshape(128, 64), a)
    rec = sim.hb.report.cp_writes
    assert [(r.key, r.line, r.landed, r.barrier, int(r.cols[0]), r.lanes.size) for r in rec] == \
        [("128x256b", CP, True, "done", 8 * i, 128) for i in range(4)]


@pytest.mark.parametrize("row", [0, 5, 31])
def test_a_lane_offset_moves_every_row_and_replica(row):
    """4x256b at lane offset ``row``: source row r to lane 32 r + row (PTX ISA 9.0 §9.7.16.9.1)."""
    kernel, _ = spliced_cp_kernel(_cell("float32"), lambda b, addr: [
        ir.TcgenCp("4x256b", b["S"], 256, 128, 256, 0, addr, row, 8, tmem=b["T"])])
    sim, _ = _run(kernel, "float32")
    desc = next(s for s in ir.walk(kernel.body) if isinstance(s, ir.TcgenCp)).descriptor(ir.shared_bases(kernel)["S"])
    img = ref.tmem_image(_window(sim), desc, "4x256b")
    written = np.roll(img != None, (row, 8), (0, 1))  # noqa: E711
    assert np.array_equal(sim.tmem.touched, written)
    exp = np.roll(np.where(img != None, img, 0).astype(np.uint64).astype(np.uint32), (row, 8), (0, 1))  # noqa: E711
    assert np.array_equal(np.where(written, sim.tmem.cells, 0), exp)
    assert sorted(set(np.nonzero(written)[0].tolist())) == [row, 32 + row, 64 + row, 96 + row]


def test_lanes_past_tmem_are_the_tmem_models_error():
    kernel, _ = spliced_cp_kernel(_cell("float32"), lambda b, addr: [
        ir.TcgenCp("32x128b.warpx4", b["S"], 0, 128, 128, 0, addr, 1, 0)])
    with pytest.raises(LaunchError, match=r"tcgen05.cp by thread 0 touches TMEM lane 128, column 0: outside TMEM's "
                                          r"128 lanes"):
        _run(kernel, "float32")


def test_the_descriptor_is_what_the_simulator_reads():
    """A descriptor field the node holds but the 14-bit field cannot: the simulator reads the encoded bits, so an
    LBO of 16 bytes in a swizzled layout (ignored by the hardware) changes nothing."""
    cell = _cell("float32")
    make = lambda lbo: lambda b, addr: [ir.TcgenCp("128x256b", b["S"], 0, lbo, 1024, 2, addr, 0, 0)]  # noqa: E731
    s1, _ = _run(spliced_cp_kernel(cell, make(16))[0], "float32")
    s2, _ = _run(spliced_cp_kernel(cell, make(4096))[0], "float32")
    assert np.array_equal(s1.tmem.cells, s2.tmem.cells)
    d = smem_desc.decode(ir.TcgenCp("128x256b", ir.Buffer("S", "shared", "float32", (8,)), 0, 16, 1024, 2,
                                    ir.Buffer("a", "shared", "uint32", (1,)), 0, 0).descriptor(1024))
    assert (d.start, d.lbo, d.sbo, d.layout, d.version) == (1024, 16, 1024, 2, 1)


# ----------------------------------------------------------------------------- located errors
def test_a_chunk_past_the_end_of_the_source_is_located():
    kernel, _ = spliced_cp_kernel(_cell("float32"), lambda b, addr: [
        ir.TcgenCp("128x128b", b["S"], 32768 - 1024, 128, 128, 0, addr, 0, 0)])
    with pytest.raises(LaunchError) as e:
        _run(kernel, "float32")
    assert "tcgen05.cp at L90 reads shared bytes 32768..32783, past the end of S (32768 bytes)" in str(e.value)
    assert e.value.span.line == CP


def test_a_cp_outside_the_allocated_columns_is_the_tmem_models_error():
    kernel, _ = spliced_cp_kernel(_cell("float32"), lambda b, addr: [
        ir.TcgenCp("128x256b", b["S"], 0, 128, 256, 0, addr, 0, 28)])
    with pytest.raises(LaunchError, match=r"tcgen05.cp by thread 0 touches TMEM lane 0, column 32: outside the "
                                          r"allocated columns"):
        _run(kernel, "float32")


@pytest.mark.parametrize("what", ["cta_group", "cta_mask"])
def test_cta_pairs_and_multicast_commits_are_refused_located(what):
    def make(b, addr):
        return [ir.TcgenCp("128x128b", b["S"], 0, 128, 128, 0, addr, 0, 0, cta_group=2 if what == "cta_group" else 1)]
    kernel, _ = spliced_cp_kernel(_cell("float32"), make)
    if what == "cta_mask":
        c = next(s for s in ir.walk(kernel.body) if isinstance(s, ir.TcgenCommit))
        c.cta_mask = 3
    with pytest.raises(LaunchError, match="not simulated") as e:
        _run(kernel, "float32")
    assert e.value.span.line == CP


# ----------------------------------------------------------------------------- happens-before
def _plain(b, addr):
    """Four unswizzled 128x256b filling T's 32 columns (float32: B reads back exactly what they wrote)."""
    return [ir.TcgenCp("128x256b", b["S"], 4096 * i, 128, 256, 0, addr, 0, 8 * i, tmem=b["T"]) for i in range(4)]


def _issue(kernel) -> int:
    return next(i for i, s in enumerate(kernel.body.body)
                if any(isinstance(x, ir.TcgenCp) for x in ir.walk(s)))


def _move_issue_before(kernel, line: int):
    """Move the spliced issue (cps + commit) to right before the first top-level statement of source ``line``."""
    body = list(kernel.body.body)
    issue = body.pop(_issue(kernel))
    j = next(i for i, s in enumerate(body) if s.span is not None and s.span.line == line)
    body.insert(j, issue)
    kernel.body = ir.Seq(tuple(body))
    return kernel


def _hazards(kernel, dtype="float32"):
    sim, out = _run(kernel, dtype)
    return sim, out, [m for m, _ in sim.hazards]


CELL_REWRITE = CP_SPLICE_CELL.replace("cta_sync\nwait done", "cta_sync\nwg.copy S <- A\nwait done")
CELL_REWRITE_AFTER = CP_SPLICE_CELL.replace("wait done phase 0\n", "wait done phase 0\nwg.copy S <- A\n")


#: a plain cell (lines 1.., "%%tilecopy" first): L10 wg.copy S <- A, L11 fence.proxy.async, L13 the copy_async, L14
#: the commit, L15 wait done phase 0, L16 tcgen05.fence::after_thread_sync, L17 the tcgen05.ld of all 128 lanes
HB_CELL = "%%tilecopy\n" + cp_cell("128x256b", 0, "float32", name="cp_hb")
READ_BACK = "wait done phase 0\ntcgen05.fence::after_thread_sync\nwg.copy_async r <- all\nwait ld\n"


def _cell_hazards(src: str):
    """``(launch, hazard messages)`` of a plain cell through the pipeline's simulator."""
    import tilemagic

    res = tilemagic.tilecopy(src, launch="sim", emit_warnings=False, allow_fail=True)
    return res.launch, [m for m, _ in res.launch.hazards]


def test_the_clean_cell_is_clean():
    launch, hz = _cell_hazards(HB_CELL)
    assert hz == [] and launch.hb.clean and launch.passed


def test_generic_writes_without_fence_proxy_async():
    launch, hz = _cell_hazards(HB_CELL.replace("fence.proxy.async\n", ""))
    assert len(hz) == 1 and launch.passed  # (the simulator is sequentially consistent: the data still arrive)
    assert hz[0].startswith("hazard: async-proxy read of generic writes on S: the tcgen05.cp at L12 reads S[")
    assert "wrote at L10 with no `fence.proxy.async`" in hz[0] and "add `fence.proxy.async` after L10" in hz[0]


def test_source_rewritten_before_the_wait():
    launch, hz = _cell_hazards(HB_CELL.replace("wait done phase 0\n", "wg.copy S <- A\nwait done phase 0\n"))
    # (one report: the other threads' writes of bytes the copy has in flight are the same race)
    assert hz == ["hazard: shared-memory race on S: thread 0 writes S[0, 0] at L15 that the tcgen05.cp reads at L13, "
                  "before the commit of its thread arrived and a wait observed it (PTX ISA 9.0 §9.7.16.6.1)"]


def test_source_rewritten_after_the_wait_is_clean():
    fence = "tcgen05.fence::after_thread_sync\n"
    assert _cell_hazards(HB_CELL.replace(fence, fence + "wg.copy S <- A\n"))[1] == []


def _guard_wait(kernel, fence: bool = True):
    """Only thread 0 waits for the commit's phase (the spliced wait put under ``if tx == 0:``)."""
    body = list(kernel.body.body)
    i = _issue(kernel)
    body[i + 1] = when(eq(ir.ThreadVar("tx"), 0), body[i + 1], line=body[i + 1].span.line)
    if not fence:
        del body[i + 2]
    kernel.body = ir.Seq(tuple(body))
    return kernel


def test_source_rewritten_by_threads_that_did_not_wait():
    """After the copy completed, only thread 0's wait observed it: the other threads' rewrite of the source is not
    ordered after the read's completion (it completes with the commit's phase, which only a wait observes)."""
    kernel = _guard_wait(spliced_cp_kernel(_cell("float32", CELL_REWRITE_AFTER), _plain)[0])
    _, _, hz = _hazards(kernel)
    assert any(h.startswith("hazard: shared-memory race on S: thread 1 overwrites S[") and " at L13 that the "
               "tcgen05.cp at L90 may still read" in h for h in hz), hz
    assert not any("thread 0 overwrites" in h for h in hz)


def test_tmem_read_before_the_wait():
    launch, hz = _cell_hazards(HB_CELL.replace(READ_BACK, "wg.copy_async r <- all\nwait ld\nwait done phase 0\n"
                                               "tcgen05.fence::after_thread_sync\n"))
    assert any(h.startswith("hazard: TMEM race on T: thread 0 reads TMEM lane 0 column 0 at L15 that the "
                            "tcgen05.cp writes at L13") for h in hz), hz
    assert not launch.passed  # (the simulator runs the ld before the copy lands: B is TMEM's garbage)


def test_wait_without_after_thread_sync_fence():
    _, hz = _cell_hazards(HB_CELL.replace("tcgen05.fence::after_thread_sync\n", ""))
    assert hz == ["hazard: tcgen05.ld at L16 reads TMEM lane 0 column 0 written by tcgen05.cp at L13: the wait at "
                  "L15 observed the commit, but no tcgen05.fence::after_thread_sync orders the ld after it (thread 0; "
                  "PTX ISA 9.0 §9.7.16.6.4)"]


def test_a_cta_sync_after_one_threads_wait_orders_and_fences():
    """Only thread 0 waits; a cta_sync (lowered with both tcgen05 fences around it) then orders every thread."""
    def build(sync: bool):
        kernel, _ = spliced_cp_kernel(_cell("float32"), _plain)
        body = list(kernel.body.body)
        i = _issue(kernel)
        span = body[i + 1].span
        sync_stmts = [ir.TcgenFence("before_thread_sync", span=span), ir.Barrier(span=span),
                      ir.TcgenFence("after_thread_sync", span=span)] if sync else []
        body[i + 1:i + 3] = [when(eq(ir.ThreadVar("tx"), 0), body[i + 1], line=span.line), *sync_stmts]
        kernel.body = ir.Seq(tuple(body))
        return kernel

    assert _hazards(build(True))[2] == []
    # and without the cta_sync the other threads read TMEM they are not ordered after
    _, _, hz = _hazards(build(False))
    assert any(h.startswith("hazard: TMEM race on T: thread 1 reads TMEM lane 1 column 0 at L13 that the "
                            "tcgen05.cp at L90 wrote, without a `wait done phase P` that observed its completion")
               for h in hz), hz


def _commit_elsewhere():
    """The cps issued by thread 0, the commit by thread 1 (at line 91)."""
    kernel, _ = spliced_cp_kernel(_cell("float32"), _plain)
    body = list(kernel.body.body)
    i = _issue(kernel)
    stmts = [s for s in ir.walk(body[i]) if isinstance(s, (ir.TcgenCp, ir.TcgenCommit))]
    body[i:i + 1] = [when(eq(ir.ThreadVar("tx"), 0), *stmts[:-1], line=CP),
                     when(eq(ir.ThreadVar("tx"), 1), stmts[-1], line=CP + 1)]
    kernel.body = ir.Seq(tuple(body))
    return kernel


def test_commit_by_another_thread():
    sim, _, hz = _hazards(_commit_elsewhere())
    assert any(h.startswith("hazard: TMEM race on T: thread 0 reads TMEM lane 0 column 0 at L13 that the "
                            "tcgen05.cp writes at L90") for h in hz), hz
    assert any(h.startswith("hazard: tcgen05.cp at L90 was never committed by its issuing thread (thread 0): "
                            f"the tcgen05.commit at L{CP} is thread 1's") and h.endswith("commit from thread 0, "
                            "under the copy's guard") for h in hz), hz
    assert not sim.hb.report.cp_writes[0].landed
    assert not sim.tmem.touched.any()  # (never committed: its data is never written)


def test_no_commit_would_hang():
    kernel, _ = spliced_cp_kernel(_cell("float32"), _plain)
    for s in ir.walk(kernel.body):
        if isinstance(s, ir.If) and any(isinstance(x, ir.TcgenCommit) for x in ir.walk(s)):
            s.then = ir.Seq(tuple(x for x in s.then.body if not isinstance(x, ir.TcgenCommit)))
    sim, _, hz = _hazards(kernel)
    assert sim.hung and sim.hb.report.hang is not None
    assert sim.hb.report.hang.message.startswith("would hang: mbarrier done phase 0 never completes: 1 of 1 arrival "
                                                 "missing")


def test_a_commit_nobody_waits_for():
    kernel, _ = spliced_cp_kernel(_cell("float32"), _plain)
    # (no wait, no ld: the kernel ends, its TMEM freed, with the copy in flight)
    kernel.body = ir.Seq(tuple(s for s in kernel.body.body if s.span is None or s.span.line not in (12, 13, 14, 15)))
    sim, _, hz = _hazards(kernel)
    assert hz == ["hazard: the tcgen05.cp at L90 is never observed complete (no `wait done phase P` needed the phase "
                  "its tcgen05.commit at L90 arrives on): nothing may read its TMEM cells, and it may still write them "
                  "after they are freed (PTX ISA 9.0 §9.7.16.6.1)"]


def test_uninitialised_source_poisons_tmem():
    cell = CP_SPLICE_CELL.replace("wg.copy S <- A\nfence.proxy.async\n", "")
    sim, out, hz = _hazards(spliced_cp_kernel(_cell("float32", cell), _plain)[0])
    poison = sim.hb.report.poison.get("B")
    assert poison is not None
    # 128x128b: columns 0..3 of every lane came from uninitialised shared bytes; the rest of T nothing wrote
    assert poison.reshape(128, 32 * 4)[:, :16].all()
    assert any("uninitialised" in h for h in hz), hz


def test_cp_then_st_on_the_same_cells_unordered():
    cell = CP_SPLICE_CELL.replace("cta_sync\nwait done", "cta_sync\nwg.copy_async T <- r\nwait st\nwait done")
    kernel = _move_issue_before(spliced_cp_kernel(_cell("float32", cell), _plain)[0], 12)
    _, _, hz = _hazards(kernel)
    assert any(h.startswith("hazard: TMEM race on T: thread 0 writes TMEM lane 0 column 0 at L12 that the "
                            "tcgen05.cp writes at L90") for h in hz), hz


def test_st_after_the_copy_landed_by_a_thread_that_did_not_wait():
    cell = CP_SPLICE_CELL.replace("wait done phase 0\n", "wait done phase 0\nwg.copy_async T <- r\nwait st\n")
    kernel = _guard_wait(spliced_cp_kernel(_cell("float32", cell), _plain)[0])
    _, _, hz = _hazards(kernel)
    assert any(h.startswith("hazard: TMEM race on T: thread 1 writes TMEM lane 1 column 0 at L13 that the "
                            "tcgen05.cp completing on mbarrier done also wrote at L90") for h in hz), hz
    assert not any("thread 0 writes TMEM" in h for h in hz), hz


def test_two_cps_on_the_same_cells():
    kernel, _ = spliced_cp_kernel(_cell("float32"), lambda b, addr: _plain(b, addr) * 2)
    _, _, hz = _hazards(kernel)
    assert hz == ["hazard: TMEM race on T: the tcgen05.cp issued by thread 0 writes TMEM lane 0 column 0 at L90 "
                  "that the tcgen05.cp writes at L90, before the commit of its thread arrived and a wait observed it "
                  "(PTX ISA 9.0 §9.7.16.6.1) (each issue is a copy of its own: two copies in flight write one "
                  "destination)"]


def test_timeline_has_issue_completion_and_wait():
    sim, _, _ = _hazards(spliced_cp_kernel(_cell("float32"), _plain)[0])
    kinds = [(e.kind, e.info.get("barrier")) for e in sim.hb.report.timeline
             if e.kind.startswith("tcgen05.c") or e.kind in ("arrive", "wait")]
    assert kinds == [("tcgen05.cp", None)] * 4 + [("tcgen05.commit", "done")] + \
        [("tcgen05.cp.complete", "done")] * 4 + [("arrive", "done"), ("wait", "done")]
    ev = [e for e in sim.hb.report.timeline if e.kind == "tcgen05.cp"]
    assert [(e.span.line, e.info["key"], e.info["col0"], e.info["cols"], e.info["lanes"]) for e in ev] == \
        [(CP, "128x256b", 8 * i, 8, 128) for i in range(4)]


@pytest.mark.parametrize("name", ["clean", "no fence", "rewrite", "commit elsewhere"])
def test_batched_and_serial_agree(name, monkeypatch):
    def build():
        if name == "clean":
            return spliced_cp_kernel(_cell("float32"), _plain)[0]
        if name == "no fence":
            return spliced_cp_kernel(_cell("float32", CP_SPLICE_CELL.replace("fence.proxy.async\n", "")), _plain)[0]
        if name == "rewrite":
            return _move_issue_before(spliced_cp_kernel(_cell("float32", CELL_REWRITE), _plain)[0], 12)
        return _commit_elsewhere()

    res = []
    for batched in (True, False):
        monkeypatch.setattr(interpreter, "BATCHED", batched)
        sim, out = _run(build(), "float32")
        res.append(({k: np.asarray(v).tobytes() for k, v in out.items()}, sim.hazards, sim.tmem.cells.tobytes(),
                    {k: v.tobytes() for k, v in sim.hb.report.poison.items()}))
    assert res[0] == res[1]
