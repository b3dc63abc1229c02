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
