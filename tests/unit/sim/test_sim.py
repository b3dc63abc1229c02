"""The CPU simulator: bit-exact round trips, TMEM contents against an independent decoder, TMEM rules.

The decoder here is written from PTX ISA 9.0 §9.7.16.2.3 (.32x32b: thread t of warp w owns
lane 32*(w%4) + t, register r owns column r) and the dense 16-bit packing (element 2c
in the low half of 32-bit column c), independently of tilemagic.layout.
"""

import numpy as np
import pytest

from tilemagic.errors import LaunchError, TileTypeError
from tilemagic.ir import nodes as ir
from tilemagic.sim.hb import GARBAGE
from tilemagic.sim import Simulator
from tilemagic.sim.tmem import TmemModel
from helpers import run


def test_demo_roundtrip_is_bit_exact_on_special_values(demo):
    bits = np.arange(128 * 8, dtype=np.uint16) * 61 + 0x7C01  # NaN payloads, infinities, denormals, -0
    bits[:8] = [0x7C01, 0xFFFF, 0x8000, 0x0001, 0x7C00, 0xFC00, 0x03FF, 0x7E00]
    src = demo("tmem_roundtrip").replace("global A: float16[128, 8]", "global A: float16[128, 8] = x")
    res = run(src, namespace={"x": bits.view(np.float16).reshape(128, 8)})
    out = res.launch.outputs["B"].view(np.uint16).reshape(-1)
    np.testing.assert_array_equal(out, bits)
    assert res.launch.passed


@pytest.mark.parametrize("dtype,width,col0", [("float32", 8, 0), ("float16", 16, 8), ("uint8", 16, 4)])
def test_tmem_contents_match_independent_decoder(dtype, width, col0):
    epc = {"float32": 1, "float16": 2, "uint8": 4}[dtype]
    src = f"""
kernel k threads=128
global A: {dtype}[128, {width}]
tmem T: {dtype}[128, {64 * epc}]
local a: {dtype}[128, {width}] @ S[(128, {width}) : (1@tid_in_wg, 1)]
wg.copy a <- A
wg.copy_async T[:, {col0 * epc}:{col0 * epc + width}] <- a
wait st
"""
    res = run(src, launch="off")
    a = (np.arange(128 * width) % 251).astype(dtype).reshape(128, width)
    sim = Simulator(res.kernel, {"A": a})
    inp = sim.mem["A"].copy()
    # run the body up to the wait (before the epilogue frees TMEM)
    body = res.kernel.body.body
    cut = max(i for i, s in enumerate(body) if isinstance(s, ir.TcgenWait)) + 1
    sim.run_stmt(ir.Seq(body[:cut]), np.arange(128), {})
    cells = sim.tmem.cells
    words = inp.view(np.uint32).reshape(128, width // epc)  # row t = thread t's registers
    for w in range(4):
        for t in range(32):
            lane = 32 * (w % 4) + t
            for r in range(width // epc):
                assert cells[lane, col0 + r] == words[32 * w + t, r]
    # nothing else was written
    mask = np.zeros_like(cells, bool)
    mask[:, col0:col0 + width // epc] = True
    assert (cells[~mask] == GARBAGE.view(np.uint32)[0]).all()  # TMEM starts as garbage


def test_tmem_model_rules():
    m = TmemModel()
    with pytest.raises(LaunchError, match="power of two"):
        m.alloc(48, 0)
    a = m.alloc(64, 0)
    b = m.alloc(32, 0)
    assert (a, b) == (0, 64)  # aligned first fit
    with pytest.raises(LaunchError, match="does not match an allocation"):
        m.dealloc(32, 64, 0)
    with pytest.raises(LaunchError, match="the same warp must alloc and dealloc"):
        m.dealloc(0, 64, 1)
    m.dealloc(0, 64, 0)
    with pytest.raises(LaunchError, match="missing tcgen05.dealloc"):
        m.exit_check()
    m.relinquish()
    with pytest.raises(LaunchError, match="after tcgen05.relinquish_alloc_permit"):
        m.alloc(32, 0)
    full = TmemModel()
    full.alloc(512, 0)
    with pytest.raises(LaunchError, match="TMEM is full"):
        full.alloc(32, 0)


def test_access_outside_allocation_and_strict_quadrant():
    m = TmemModel()
    m.alloc(32, 0)
    tids = np.arange(32)
    with pytest.raises(LaunchError, match="column 32: outside the allocated columns"):
        m.cells_of("32x32b", 2, tids, 0, 0, 31)
    lane, col = m.cells_of("32x32b", 1, tids + 64, 0, 0, 0)  # warp 2 -> lanes 64..95
    assert lane[:, 0].tolist() == list(range(64, 96))
    strict = TmemModel(strict=True)
    strict.alloc(32, 0)
    with pytest.raises(LaunchError, match="quadrant 2 but it runs in warp 1"):
        strict.cells_of("32x32b", 1, tids + 32, (64 << 16), 0, 0)
    # quadrant bits equal to warp % 4 are fine under strict
    strict.cells_of("32x32b", 1, tids + 32, (32 << 16), 0, 0)


def test_partial_warp_tcgen05_is_an_error(demo):
    res = run(demo("tmem_roundtrip"), launch="off")
    k = res.kernel
    st = next(s for s in ir.walk(k.body) if isinstance(s, ir.TcgenLdSt))
    sim = Simulator(k, res.launch.inputs if res.launch else {b.name: np.zeros(b.shape, np.float16) for b in k.params})
    mask = np.ones(128, bool)
    mask[5] = False
    sim.tmem.alloc(32, 0)
    with pytest.raises(LaunchError, match="partial warp"):
        sim.run_stmt(st, np.flatnonzero(mask), {})


def test_misaligned_vector_access_is_caught():
    buf = ir.Buffer("G", "global", "float32", (8,), per_thread=8)
    loc = ir.Buffer("r", "local", "float32", (4,), per_thread=4)
    k = ir.Kernel("k", 32, (buf,), (), (loc,), (), 0, None,
                  ir.Seq((ir.VecMove(loc, ir.Const(0), buf, ir.Const(1), 4),)))
    with pytest.raises(LaunchError, match="misaligned 16-byte access to G"):
        Simulator(k, {"G": np.zeros(8, np.float32)}).run()


def test_vectorised_grid_equals_serial_loop_and_keeps_loop_carried_order():
    src = "kernel k threads=32\nglobal A: float32[64, 48]\nglobal B: float32[64, 48]\nwarp.copy B <- A\ncheck B == A\n"
    res = run(src)
    np.testing.assert_array_equal(res.launch.outputs["B"], res.launch.inputs["A"])
    # a copy within one buffer runs serially (the loop reads the buffer it writes)
    res = run("kernel k threads=32\nglobal A: float32[16] = arange\nwarp.copy A[8:16] <- A[0:8]\n")
    np.testing.assert_array_equal(res.launch.outputs["A"], list(range(8)) * 2)
    # overlapping regions would race on the GPU: rejected before lowering
    with pytest.raises(TileTypeError, match="overlap"):
        run("kernel k threads=32\nglobal A: float32[16] = arange\nwarp.copy A[1:9] <- A[0:8]\n")
