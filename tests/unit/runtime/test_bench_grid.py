"""``--bench`` without a GPU: the codegen's grid form, and run_on_gpu's grid benchmark through a NumPy-backed
fake CuPy (device arrays are ndarrays; a kernel is a Python function over the whole grid).

On the GPU the same code is exercised by tests/gpu/test_gpu_bench.py and benchmarks/gpu_bench.py.
"""

from __future__ import annotations

import shutil
import sys
from types import SimpleNamespace

import numpy as np
import pytest
from cells import GMEM_SMEM_CASES, gmem_smem_cell
from helpers import run
from numpy_cupy import numpy_cupy

import tilemagic
from tilemagic.cli import demo_source
from tilemagic.codegen.cuda import TM_SCRATCH_WORDS, generate, global_traffic, grid_stride
from tilemagic.errors import LaunchError
from tilemagic.runtime import nvrtc as rt_compile
from tilemagic.runtime import launch as rt_launch
from tilemagic.runtime.nvcc import nvcc_compile
from tilemagic.runtime.device import DeviceStatus


def _kernel(src):
    return run(src, launch="off").kernel


# ----------------------------------------------------------------------------- codegen
def test_grid_form_offsets_every_pointer_by_its_tile():
    k = _kernel(demo_source("tmem_roundtrip"))
    one, grid = generate(k, "emulated", arch="sm_90"), generate(k, "emulated", arch="sm_90", grid=True)
    assert not one.grid and grid.grid and (grid.reads, grid.writes) == (("A",), ("B",))
    added = [ln.strip() for ln in grid.text.splitlines() if ln not in one.text.splitlines()]
    assert added[1:] == ["// --bench grid: CTA blockIdx.x moves tile blockIdx.x (buffers hold gridDim.x tiles "
                         "back to back)", "A += (size_t)blockIdx.x * 1024;", "B += (size_t)blockIdx.x * 1024;",
                         f"tm_scratch += (size_t)blockIdx.x * {TM_SCRATCH_WORDS};",
                         "tm_status += (size_t)blockIdx.x * 8;"]
    assert "one CTA per tile (--bench grid)" in added[0]
    assert len(grid.lines) == len(grid.text.splitlines())


def test_grid_stride_keeps_16_byte_alignment():
    k = _kernel(gmem_smem_cell(GMEM_SMEM_CASES[-1]))  # a 2x3 float32 tile: 24 bytes
    a = k.params[0]
    assert (a.numel, grid_stride(a)) == (6, 8)
    assert "A += (size_t)blockIdx.x * 8;" in generate(k, "native", grid=True).text


def test_global_traffic_of_each_variant():
    assert global_traffic(_kernel(demo_source("fallback_demo"))) == (("A",), ("B",))
    k = _kernel(gmem_smem_cell(GMEM_SMEM_CASES[0]))
    assert global_traffic(k) == (("A",), ("B",))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_grid_sources_assemble():
    k = _kernel(demo_source("tmem_roundtrip"))
    for mode, arch in (("native", "sm_100a"), ("emulated", "sm_90")):
        res = nvcc_compile(generate(k, mode, arch=arch, grid=True).text, arch, cubin=False)
        assert res.ok, res.log


# ----------------------------------------------------------------------------- run_on_gpu (NumPy-backed fake CuPy)
def _status(cc=90):
    return DeviceStatus(True, "", name="NVIDIA H200", cc=cc, cupy_version="14.2.0", nvrtc_version=(13, 0))


@pytest.fixture(autouse=True)
def _no_kernel_cache():
    rt_compile.clear_cache()
    yield
    rt_compile.clear_cache()


def copy_tiles(ctas, a, b, *extra):
    """B <- A for every tile (the single-CTA launch has ctas == 1 and 1-D buffers)."""
    b[...] = a


def _sources(src):
    k = _kernel(src)
    native = generate(k, "native", arch="sm_100a")
    emulated = generate(k, "emulated", arch="sm_90") if k.tmem_cols else None
    grid = (generate(k, "native", arch="sm_100a", grid=True),
            generate(k, "emulated", arch="sm_90", grid=True) if emulated else None)
    return native, emulated, grid


def test_grid_bench_times_the_replicated_tile_and_a_cupy_copy(monkeypatch):
    native, emulated, grid = _sources(demo_source("fallback_demo"))  # A, B: float32[4, 6] = 96 bytes
    cupy, log = numpy_cupy({"fallback_demo": copy_tiles}, ms=100.0)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    run = rt_launch.run_on_gpu(native, emulated, {"A": a}, status=_status(), bench=True, bench_sources=grid,
                               bench_bytes=96 * 10)
    np.testing.assert_array_equal(run.outputs["B"], a)
    t = run.timing
    assert (t["ctas"], t["threads"], t["bytes_per_launch"]) == (10, 32, 10 * 192)
    assert t["median_us"] == 1e5 and t["repeats"] == 15  # 15 x 100 ms reach the 1.5 s budget
    assert t["gb_per_s"] == round(1920 / 1e8, 1) and t["cupy_memcpy_us"] == t["cupy_copyto_us"] == 1e5
    assert t["vs_cupy_copy"] == 1.0  # the kernel moves what the copy moves (A read, B written), in the same time
    assert "note" not in t and run.compile["cache"] == "compiled"
    grids = [g for _, g, _ in log.launches]
    assert grids[0] == (1,) and set(grids[1:]) == {(10,)}  # the shown launch, then the grid


def test_grid_bench_caps(monkeypatch):
    native, emulated, grid = _sources(demo_source("fallback_demo"))
    src = grid[0]
    host = {"A": np.zeros((4, 6), np.float32), "B": np.zeros((4, 6), np.float32)}
    assert rt_launch._grid_size(src, host, 1 << 30, None) == (1 << 30) // 96
    # free memory: 0.7 * free / (allocation per CTA + 2 x bytes read for the reference copy)
    assert rt_launch._grid_size(src, host, 1 << 30, 100_000) == int(100_000 * 0.7) // (96 + 96 + 192)
    _, _, tgrid = _sources(demo_source("tmem_roundtrip"))
    th = {"A": np.zeros((128, 8), np.float16), "B": np.zeros((128, 8), np.float16)}
    assert rt_launch._grid_size(tgrid[1], th, 1 << 30, None) == (1 << 30) // (TM_SCRATCH_WORDS * 4 + 32)


def test_grid_bench_emulated_note_and_per_cta_status(monkeypatch):
    native, emulated, grid = _sources(demo_source("tmem_roundtrip"))

    def emu(ctas, a, b, scratch, status):
        b[...] = a
        if ctas > 1:
            status.reshape(ctas, -1)[2, :4] = [5, 7, 40, 3]  # CTA 2 traps: outside the allocation

    cupy, _ = numpy_cupy({"tmem_roundtrip": emu})
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    a = np.ones((128, 8), np.float16)
    with pytest.raises(LaunchError) as ei:
        rt_launch.run_on_gpu(native, emulated, {"A": a}, status=_status(), bench=True, bench_sources=grid,
                             bench_bytes=4 * 2048)
    assert "--bench, CTA 2 of 4: tcgen05.ld/st by thread 7 touches TMEM lane 40" in str(ei.value)

    def emu_ok(ctas, a, b, scratch, status):
        b[...] = a

    rt_compile.clear_cache()  # the fake kernels are looked up when compiled
    cupy, _ = numpy_cupy({"tmem_roundtrip": emu_ok})
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    run = rt_launch.run_on_gpu(native, emulated, {"A": a}, status=_status(), bench=True, bench_sources=grid,
                               bench_bytes=4 * 2048)
    assert run.timing["note"] == rt_launch.EMULATION_NOTE and run.timing["ctas"] == 4


@pytest.mark.parametrize("check_bytes", [64 << 20, 96 * 2], ids=["one-chunk", "chunks-of-2-ctas"])
def test_grid_bench_rejects_a_cta_that_differs(monkeypatch, check_bytes):
    monkeypatch.setattr(rt_launch, "BENCH_CHECK_BYTES", check_bytes)
    native, emulated, grid = _sources(demo_source("fallback_demo"))

    def wrong(ctas, a, b, *extra):
        b[...] = a
        if ctas > 1:
            b[3, 0] += 1

    cupy, _ = numpy_cupy({"fallback_demo": wrong})
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    with pytest.raises(LaunchError, match="--bench: CTA 3 of 8 left B different from the single-CTA launch"):
        rt_launch.run_on_gpu(native, emulated, {"A": np.ones((4, 6), np.float32)}, status=_status(), bench=True,
                             bench_sources=grid, bench_bytes=96 * 8)


# ----------------------------------------------------------------------------- the pipeline passes the grid form
def test_pipeline_sends_grid_sources_with_bench(monkeypatch):
    from tilemagic.runtime import worker as rt_worker

    seen = {}

    class FakeWorker:
        def probe(self):
            return _status()

        def launch(self, native, emulated, inputs, *, bench=False, timeout=10, bench_sources=None,
                   bench_bytes=None):
            seen.update(bench=bench, grid=bench_sources)
            return SimpleNamespace(backend="cupy-emulated", mode="emulated TMEM on sm_90", arch="sm_90",
                                   device="NVIDIA H200 (CC 9.0)", timing={"median_us": 1.0},
                                   outputs={k: v.copy() for k, v in inputs.items()} | {"B": inputs["A"].copy()},
                                   compile={"cache": "memory", "ms": 0.1, "note": ""})

    monkeypatch.setattr(rt_worker, "get_worker", lambda: FakeWorker())
    res = tilemagic.tilecopy(demo_source("tmem_roundtrip"), launch="gpu", bench=True)
    native, emulated = seen["grid"]
    assert seen["bench"] and native.grid and emulated.grid and emulated.mode == "emulated"
    assert res.launch.compile["cache"] == "memory" and res.launch.timing == {"median_us": 1.0}
    res = tilemagic.tilecopy(demo_source("tmem_roundtrip"), launch="gpu")
    assert seen["grid"] is None and res.launch.passed


# ----------------------------------------------------------------------------- the grid form of a TMA kernel
#: a rank-5 tensor map (no merged dimensions: every extent but the outermost one is partial): no room for the grid's
R5_TMA = """%%tilecopy r5
kernel r5 threads=32
global A: float16[4, 4, 4, 4, 64] = arange
global B: float16[4, 4, 4, 4, 64] = zeros
shared S: float16[2, 2, 2, 2, 32]
mbarrier full count=1
if tx == 0: arrive full expect_tx=auto
if tx == 0: thread.copy_async S <- A[1:3, 0:2, 1:3, 0:2, 0:32] mbar=full
wait full phase 0
if tx == 0: thread.copy_async B[1:3, 0:2, 1:3, 0:2, 0:32] <- S
if tx == 0: bulk_commit_group
if tx == 0: bulk_wait_group 0
check B[1:3, 0:2, 1:3, 0:2, 0:32] == A[1:3, 0:2, 1:3, 0:2, 0:32]
"""


def _tma_lines(text):
    return [ln.strip() for ln in text.splitlines() if "cp.async.bulk.tensor" in ln]


def test_grid_form_of_a_tma_kernel_adds_the_cta_coordinate():
    k = _kernel(demo_source("tma_roundtrip"))  # A_tmap (G2S) and B_tmap (S2G), rank 2
    one, grid = generate(k, "native", arch="sm_90a"), generate(k, "native", arch="sm_90a", grid=True)
    assert grid.grid and grid.grid_refused is None and grid.tensormaps == one.tensormaps
    g2s, s2g = _tma_lines(grid.text)
    assert "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], " \
           "[%5];" in g2s and '"r"((int)64), "r"((int)64), "r"((int)blockIdx.x), "r"((uint32_t)' in g2s
    assert "cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%0, {%1, %2, %3}], [%4];" in s2g
    assert '"r"((int)0), "r"((int)64), "r"((int)blockIdx.x), "r"((uint32_t)' in s2g
    # the single-CTA CUDA (and so the IR it is printed from) keeps the rank-2 copies
    assert [".2d." in ln and "blockIdx" not in ln for ln in _tma_lines(one.text)] == [True, True]


def test_grid_map_has_one_more_dimension_over_the_ctas():
    from tilemagic.arch import tma as hw
    from tilemagic.runtime import tensormap as tm

    k = _kernel(demo_source("tma_roundtrip"))
    a = k.tensormaps[0]  # A: float16[256, 128]; grid stride 32768 elements = 65536 bytes
    g = tm.grid_map(a, 7)
    assert (g.dims, g.strides, g.box, g.elem_strides) == ((128, 256, 7), (256, 65536), (64, 64, 1), (1, 1, 1))
    assert (g.swizzle, g.base_elem, g.dtype, g.buf) == (a.swizzle, a.base_elem, a.dtype, a.buf)
    assert hw.validate(dtype=g.dtype, elem_bytes=g.elem_bytes, dims=g.dims, strides=g.strides, box=g.box,
                       elem_strides=g.elem_strides, swizzle=g.swizzle) == []
    assert tm.encode_args(g, 0x1000) == (6, 3, 0x1000, (128, 256, 7), (256, 65536), (64, 64, 1), (1, 1, 1), 0, 3, 2,
                                         0)
    (five,) = {m.rank for m in _kernel(R5_TMA).tensormaps}
    assert five == 5
    with pytest.raises(ValueError, match="no room for the grid dimension"):
        tm.grid_map(_kernel(R5_TMA).tensormaps[0], 2)


def test_a_rank_5_map_has_no_grid_form():
    k = _kernel(R5_TMA)
    g = generate(k, "native", arch="sm_90a", grid=True)
    assert not g.grid and g.text == generate(k, "native", arch="sm_90a").text
    assert g.grid_refused == ("--bench timed one CTA: tensor maps A_tmap, B_tmap have rank 5, and the grid form "
                              "needs one more dimension over the CTAs (cuTensorMapEncodeTiled encodes rank <= 5)")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("demo", ["tma_roundtrip", "ldgsts_roundtrip"])
def test_grid_sources_of_the_async_demos_assemble_for_sm_90a(demo):
    res = nvcc_compile(generate(_kernel(demo_source(demo)), "native", arch="sm_90a", grid=True).text, "sm_90a",
                       cubin=False)
    assert res.ok, res.log


class _RecordingDriver:
    """cuda-bindings' driver as the launch calls it: records cuTensorMapEncodeTiled's arguments, unwrapped."""

    def __init__(self):
        self.calls = []
        for name in ("cuuint64_t", "cuuint32_t", "CUtensorMapDataType", "CUtensorMapInterleave", "CUtensorMapSwizzle",
                     "CUtensorMapL2promotion", "CUtensorMapFloatOOBfill"):
            setattr(self, name, lambda v: v)

    def cuTensorMapEncodeTiled(self, dt, rank, base, dims, strides, box, estr, *rest):
        self.calls.append((rank, base, tuple(dims), tuple(strides), tuple(box)))
        return 0, SimpleNamespace(opaque=[len(self.calls)] * 16)


def tma_tiles(ctas, a, b, amap, bmap):
    """The TMA demo per tile: B[64:128, 0:64] <- A[64:128, 64:128] (tile b of each buffer when ctas > 1)."""
    assert amap.dtype.itemsize == bmap.dtype.itemsize == 128  # the maps travel as 128-byte structured scalars
    a2, b2 = a.reshape(ctas, -1)[:, :256 * 128], b.reshape(ctas, -1)[:, :256 * 128]
    b2.reshape(ctas, 256, 128)[:, 64:128, 0:64] = a2.reshape(ctas, 256, 128)[:, 64:128, 64:128]


def test_grid_bench_of_a_tma_kernel_encodes_the_grid_maps(monkeypatch):
    from tilemagic.runtime import tensormap as tm

    drv = _RecordingDriver()
    monkeypatch.setattr(tm, "driver", lambda: drv)
    native, emulated, _ = _sources(demo_source("tma_roundtrip"))
    k = _kernel(demo_source("tma_roundtrip"))
    grid = (generate(k, "native", arch="sm_90a", grid=True), None)
    cupy, log = numpy_cupy({"tma_roundtrip": tma_tiles}, ms=1.0)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    a = np.arange(256 * 128, dtype=np.float16).reshape(256, 128)
    run = rt_launch.run_on_gpu(native, None, {"A": a}, status=_status(), bench=True, bench_sources=grid,
                               bench_bytes=a.nbytes * 6)
    np.testing.assert_array_equal(run.outputs["B"][64:128, 0:64], a[64:128, 64:128])
    assert run.arch == "sm_90a" and run.timing["ctas"] == 6 and "note" not in run.timing
    assert [g for _, g, _ in log.launches][:2] == [(1,), (6,)]
    one, grid_calls = drv.calls[:2], drv.calls[2:4]
    assert [c[0] for c in one] == [2, 2] and [c[2] for c in one] == [(128, 256)] * 2
    # the grid maps: over every CTA's tile (65536 bytes apart), box 1 in the CTA dimension
    assert [c[0] for c in grid_calls] == [3, 3]
    assert {(c[2], c[3], c[4]) for c in grid_calls} == {((128, 256, 6), (256, 65536), (64, 64, 1))}


def test_grid_bench_of_a_tma_kernel_checks_every_cta(monkeypatch):
    from tilemagic.runtime import tensormap as tm

    monkeypatch.setattr(tm, "driver", lambda: _RecordingDriver())
    k = _kernel(demo_source("tma_roundtrip"))

    def first_tile_only(ctas, a, b, amap, bmap):  # what the copies do when the CTA coordinate is missing
        tma_tiles(1, a.reshape(ctas, -1)[0], b.reshape(ctas, -1)[0], amap, bmap)

    cupy, _ = numpy_cupy({"tma_roundtrip": first_tile_only})
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    with pytest.raises(LaunchError, match="--bench: CTA 1 of 3 left B different from the single-CTA launch"):
        rt_launch.run_on_gpu(generate(k, "native", arch="sm_90a"), None,
                             {"A": np.ones((256, 128), np.float16)}, status=_status(), bench=True,
                             bench_sources=(generate(k, "native", arch="sm_90a", grid=True), None),
                             bench_bytes=256 * 128 * 2 * 3)


def test_bench_of_a_rank_5_map_times_one_cta_and_says_why(monkeypatch):
    from tilemagic.runtime import tensormap as tm

    monkeypatch.setattr(tm, "driver", lambda: _RecordingDriver())
    k = _kernel(R5_TMA)

    def r5(ctas, a, b, amap, bmap):
        b[1:3, 0:2, 1:3, 0:2, 0:32] = a[1:3, 0:2, 1:3, 0:2, 0:32]

    cupy, log = numpy_cupy({"r5": r5})
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    run = rt_launch.run_on_gpu(generate(k, "native", arch="sm_90a"), None, {"A": np.ones((4, 4, 4, 4, 64), np.float16)},
                               status=_status(), bench=True,
                               bench_sources=(generate(k, "native", arch="sm_90a", grid=True), None))
    assert "ctas" not in run.timing and run.timing["note"].startswith("--bench timed one CTA: tensor maps A_tmap")
    assert {g for _, g, _ in log.launches} == {(1,)}
