"""The launch of a cluster kernel and the ``--bench`` byte count, without a GPU (NumPy-backed fake CuPy).

A cluster kernel (``Kernel.cluster`` = C) launches one cluster — grid ``(C,)`` — and its ``--bench`` grid is
whole clusters, each cluster one tile (the global pointers and the TMA grid coordinate advance by
``blockIdx.x / C``, the emulation's per-CTA scratch by ``blockIdx.x``).  A GPU below sm_90 gets a launch error that
names the requirement.  ``--bench`` counts the bytes the kernel's instructions move (``global_bytes``), not the
size of the buffers they touch.  On the GPU the same path is tests/gpu/test_gpu_cluster.py.
"""

from __future__ import annotations

import sys
from dataclasses import replace

import numpy as np
import pytest
from helpers import run
from numpy_cupy import numpy_cupy
from test_bench_grid import _RecordingDriver, _status, tma_tiles

from tilemagic.cli import demo_source
from tilemagic.codegen.cuda import generate, global_bytes, grid_tile
from tilemagic.errors import LaunchError
from tilemagic.ir import nodes as ir
from tilemagic.runtime import launch as rt_launch
from tilemagic.runtime import nvrtc as rt_compile


@pytest.fixture(autouse=True)
def _no_kernel_cache():
    rt_compile.clear_cache()
    yield
    rt_compile.clear_cache()


def _kernel(src):
    return run(src, launch="off").kernel


def _tma_cluster():
    """The TMA demo's kernel as a 2-CTA cluster (each CTA makes the same copies: the launch path is the point)."""
    return replace(_kernel(demo_source("tma_roundtrip")), cluster=2)


# ----------------------------------------------------------------------------- bytes the kernel moves
def test_bench_counts_the_bytes_the_tma_demo_moves_not_its_buffers():
    """tma_roundtrip copies a 64×64 float16 tile (8192 B) of a 256×128 tensor in and out: 16384 B per tile, where
    the whole buffers would count 131072 B."""
    k = _kernel(demo_source("tma_roundtrip"))
    assert global_bytes(k) == (8192, 8192)
    src = generate(k, arch="sm_90a", grid=True)
    assert (src.read_bytes, src.write_bytes) == (8192, 8192)


def test_guarded_and_looped_instructions_count_per_execution():
    """The fallback demo: one thread's scalar loop over 4×6 float32 (96 B read, 96 B written); gmem_smem: each
    thread's vectors."""
    assert global_bytes(_kernel(demo_source("fallback_demo"))) == (96, 96)
    cell = "\n".join(["kernel k threads=32", "global A: float32[8, 32] = arange", "global B: float32[8, 32] = zeros",
                      "shared S: float32[8, 32]", "if warpid == 0: warp.copy S <- A", "cta_sync",
                      "if warpid == 0: warp.copy B[0:4, :] <- S[0:4, :]", "check B[0:4, :] == A[0:4, :]"])
    assert global_bytes(_kernel(cell)) == (1024, 512)


def test_every_cta_of_a_cluster_counts():
    assert global_bytes(_tma_cluster()) == (2 * 8192, 2 * 8192)


def test_a_rank_guard_counts_only_the_ranks_that_run():
    k = _tma_cluster()
    rank0 = ir.Bin("==", ir.ThreadVar("cta_rank"), ir.Const(0))
    k1 = replace(k, body=ir.Seq((ir.If(rank0, k.body),)))
    assert global_bytes(k1) == (8192, 8192)


def test_grid_bench_of_the_tma_demo_reports_the_moved_bytes(monkeypatch):
    from tilemagic.runtime import tensormap as tm

    monkeypatch.setattr(tm, "driver", lambda: _RecordingDriver())
    k = _kernel(demo_source("tma_roundtrip"))
    cupy, _ = numpy_cupy({"tma_roundtrip": tma_tiles}, ms=1.0)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    a = np.arange(256 * 128, dtype=np.float16).reshape(256, 128)
    got = rt_launch.run_on_gpu(generate(k, "native", arch="sm_90a"), None, {"A": a}, status=_status(), bench=True,
                               bench_sources=(generate(k, "native", arch="sm_90a", grid=True), None),
                               bench_bytes=a.nbytes * 4)
    t = got.timing
    assert t["ctas"] == 4 and t["bytes_per_launch"] == 4 * 16384
    assert t["gb_per_s"] == round(4 * 16384 / 1e6, 1)  # 1 ms per launch
    assert t["cupy_copy_gb_per_s"] == round(2 * 4 * 8192 / 1e6, 1)  # the reference copies what the kernel reads


# ----------------------------------------------------------------------------- the grid form per cluster
def test_grid_form_of_a_cluster_moves_one_tile_per_cluster():
    k = _tma_cluster()
    one, grid = generate(k, arch="sm_90a"), generate(k, arch="sm_90a", grid=True)
    assert one.cluster == grid.cluster == 2 and grid_tile(2) == "(blockIdx.x / 2)" and grid_tile(1) == "blockIdx.x"
    assert "A += (size_t)(blockIdx.x / 2) * 32768;" in grid.text and "B += (size_t)(blockIdx.x / 2) * 32768;" in grid.text
    tma = [ln for ln in grid.text.splitlines() if "cp.async.bulk.tensor.3d" in ln]
    assert len(tma) == 2 and all('"r"((int)(blockIdx.x / 2))' in ln for ln in tma)
    assert "blockIdx.x" not in one.text
    assert "clusters of 2 CTAs x 128 threads" in one.text and "clusters of 2 CTAs (--bench grid)" in grid.text


def test_grid_form_without_a_cluster_is_unchanged():
    k = _kernel(demo_source("tma_roundtrip"))
    grid = generate(k, arch="sm_90a", grid=True)
    assert grid.cluster == 1 and "A += (size_t)blockIdx.x * 32768;" in grid.text and "/ 1)" not in grid.text


# ----------------------------------------------------------------------------- the launch
def _cluster_tiles(n, a, b, amap, bmap):
    """The cluster kernel per tile: a grid of n blocks is n / 2 clusters, one tile each."""
    tma_tiles(n // 2, a, b, amap, bmap)


def test_a_cluster_launches_as_one_cluster_and_benches_whole_clusters(monkeypatch):
    from tilemagic.runtime import tensormap as tm

    monkeypatch.setattr(tm, "driver", lambda: _RecordingDriver())
    k = _tma_cluster()
    cupy, log = numpy_cupy({"tma_roundtrip": _cluster_tiles}, ms=1.0)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    a = np.arange(256 * 128, dtype=np.float16).reshape(256, 128)
    got = rt_launch.run_on_gpu(generate(k, arch="sm_90a"), None, {"A": a}, status=_status(), bench=True,
                               bench_sources=(generate(k, arch="sm_90a", grid=True), None),
                               bench_bytes=a.nbytes * 3)
    np.testing.assert_array_equal(got.outputs["B"][64:128, 0:64], a[64:128, 64:128])
    grids = [g for _, g, _ in log.launches]
    assert grids[0] == (2,) and set(grids[1:]) == {(6,)}  # one cluster; then 3 clusters of 2 CTAs
    t = got.timing
    assert (t["ctas"], t["clusters"], t["cluster"]) == (6, 3, 2)
    assert t["bytes_per_launch"] == 3 * 2 * 16384  # both CTAs of each cluster copy the tile in and out


def test_a_cluster_that_differs_is_named(monkeypatch):
    from tilemagic.runtime import tensormap as tm

    monkeypatch.setattr(tm, "driver", lambda: _RecordingDriver())
    k = _tma_cluster()

    def first_only(n, a, b, amap, bmap):  # what the copies do when the cluster coordinate is missing
        tma_tiles(1, a.reshape(n // 2, -1)[0], b.reshape(n // 2, -1)[0], amap, bmap)

    cupy, _ = numpy_cupy({"tma_roundtrip": first_only}, ms=1.0)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    with pytest.raises(LaunchError, match="--bench: cluster 1 of 3 left B different from the single-cluster launch"):
        rt_launch.run_on_gpu(generate(k, arch="sm_90a"), None, {"A": np.ones((256, 128), np.float16)},
                             status=_status(), bench=True, bench_sources=(generate(k, arch="sm_90a", grid=True), None),
                             bench_bytes=256 * 128 * 2 * 3)


def test_a_gpu_below_sm_90_refuses_a_cluster(monkeypatch):
    cupy, log = numpy_cupy({}, cc="80")
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    k = _tma_cluster()
    with pytest.raises(LaunchError) as e:
        rt_launch.run_on_gpu(generate(k, arch="sm_90a"), None, {}, status=_status(cc=80))
    assert ("kernel 'tma_roundtrip' runs as a cluster of 2 CTAs (cluster=2): thread-block clusters, distributed "
            "shared memory and TMA multicast need sm_90 or newer, and this GPU is NVIDIA H200 (CC 8.0)") in e.value.message
    assert "--launch sim" in (e.value.hint or "") and log.launches == []


def test_no_cluster_no_refusal():
    k = _kernel(demo_source("fallback_demo"))
    assert rt_launch.cluster_refusal(generate(k), _status(cc=80)) is None
