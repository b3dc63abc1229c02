"""benchmarks/gpu_bench.py end to end without a GPU, so a GPU run does not fail on the script itself.

The launch worker is replaced by an in-process stand-in that calls the real ``run_on_gpu`` (grid bench,
CuPy copy reference, per-CTA checks) on a NumPy-backed fake CuPy (tests/numpy_cupy.py) whose "compiled"
kernels copy the cell's read buffer into every buffer it writes, grid or single CTA, and whose compile
cache answers compiled / memory / disk like the real one.  Bench sizes are capped to keep it fast.
The numbers are meaningless; the test checks the rows, the JSON and that every cell went through.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from numpy_cupy import numpy_cupy

from tilemagic.errors import LaunchError
from tilemagic.runtime import launch as rt_launch
from tilemagic.runtime import tensormap as rt_tensormap
from tilemagic.runtime import worker as rt_worker
from tilemagic.runtime.device import DeviceStatus

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
STATUS = DeviceStatus(True, "", name="Fake H200", cc=90, cupy_version="14.2.0", nvrtc_version=(13, 0))


class FakeGpu:
    """The launch worker's stand-in: run_on_gpu in this process, a compile cache that survives a restart."""

    def __init__(self, fail=None):
        self.disk, self.memory, self.launches, self.fail = set(), set(), [], fail

    def compile(self, src, arch, *, info=None):
        if src.kernel_name == self.fail:
            raise LaunchError(f"NVRTC could not compile kernel '{src.kernel_name}' for -arch={arch}")
        key = (src.text, arch)
        how = "memory" if key in self.memory else "compiled"
        ms = 0.01 if how == "memory" else 3.0 if key in self.disk else 900.0  # CuPy's disk cache: a fast compile
        self.memory.add(key)
        self.disk.add(key)
        if info is not None:
            info.update(cache=how, ms=ms, note="fake")
        names = [b.name for b in src.params]

        def kernel(grid, block, args):
            bufs = args[: len(names)]
            for w in src.writes:
                bufs[names.index(w)][...] = bufs[names.index(src.reads[0])]

        return kernel

    def worker(self):
        gpu = self

        class Worker:
            def probe(self):
                return STATUS

            def launch(self, native, emulated, inputs, *, bench=False, timeout=10, bench_sources=None,
                       bench_bytes=None):
                gpu.launches.append((native.kernel_name, bench, bench_bytes))
                return rt_launch.run_on_gpu(native, emulated, inputs, status=STATUS, bench=bench,
                                            bench_sources=bench_sources, bench_bytes=min(bench_bytes or 0, 1 << 16))

            def stop(self):
                gpu.memory.clear()  # a new worker process: nothing in memory, the disk cache stays

        return Worker()


class FakeDriver:
    """cuda-bindings' driver for the TMA rows: every tensor map encodes (to 16 zero words)."""

    def __getattr__(self, name):
        return lambda *a: (0, type("Map", (), {"opaque": [0] * 16})()) if name == "cuTensorMapEncodeTiled" else a[0]


@pytest.fixture
def gpu_bench(monkeypatch, tmp_path, request):
    cupy, _ = numpy_cupy({})
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    fake = FakeGpu(getattr(request, "param", None))
    monkeypatch.setattr(rt_launch, "compile_cupy", fake.compile)
    monkeypatch.setattr(rt_tensormap, "driver", lambda: FakeDriver())  # the TMA rows' tensor maps
    worker = fake.worker()
    monkeypatch.setattr(rt_worker, "get_worker", lambda: worker)
    monkeypatch.setattr(rt_worker, "set_worker", lambda w: None)
    monkeypatch.setenv("CUPY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("OUT", raising=False)
    sys.path.insert(0, str(BENCH))
    try:
        import gpu_bench
    finally:
        sys.path.remove(str(BENCH))
    return gpu_bench, fake


def test_gpu_bench_runs_every_row(gpu_bench, tmp_path, capsys):
    script, fake = gpu_bench
    out = tmp_path / "gpu.json"
    assert script.main(["--json", str(out)]) == 0
    printed = capsys.readouterr().out
    payload = json.loads(out.read_text())
    names = [name for name, *_ in script.cells(False)]
    assert list(payload["bench"]) == names and len(names) == 26
    for name, t in payload["bench"].items():
        if name.startswith(("dsmem", "tma multicast")):  # cluster kernels: test_the_cluster_rows_run
            continue
        assert t["passed"] and t["vs_cupy_copy"] > 0 and t["ctas"] >= 1, name
        assert ("note" in t) == ("TMEM" in name or "tmem" in name), name
    cache = payload["cache"]
    for c in cache.values():
        assert (c["cold"]["cache"], set(c["rerun_cache"]), c["restarted"]["cache"]) == ("compiled", {"memory"}, "compiled")
        assert c["restarted"]["ms"] < 0.5 * c["cold"]["ms"]
    assert payload["device"] == "Fake H200 (CC 9.0)" and payload["cache_dir"].startswith("/")
    assert printed.count("| bench ") == 26 and printed.count("| cache ") == 6
    assert {b for _, b, _ in fake.launches} == {True, False}
    assert all(n for _, b, n in fake.launches if b)  # every bench launch names its size


@pytest.mark.parametrize("gpu_bench", ["fb"], indirect=True)
def test_a_failing_cell_is_a_row_and_the_rest_runs(gpu_bench, tmp_path, capsys):
    script, fake = gpu_bench
    out = tmp_path / "gpu.json"
    assert script.main(["--json", str(out)]) == 0
    bench = json.loads(out.read_text())["bench"]
    failed = [n for n, t in bench.items() if "error" in t and not n.startswith(("dsmem", "tma multicast"))]
    assert failed == ["fallback cta256 33x64 f32, one thread copies"]
    assert "NVRTC could not compile kernel 'fb'" in bench[failed[0]]["error"]
    assert all(t["passed"] for n, t in bench.items() if n not in failed and not n.startswith(("dsmem", "tma multicast")))
    assert len(bench) == 26
    assert "| bench   | fallback cta256 33x64 f32, one thread copies: FAILED" in capsys.readouterr().out


def test_the_cluster_rows_run(gpu_bench, tmp_path):
    """The CTA-pair exchange (dsmem) and multicast rows: whole clusters of 2 CTAs, every tile checked, GB/s of the
    global bytes."""
    script, _ = gpu_bench
    out = tmp_path / "gpu.json"
    assert script.main(["--json", str(out)]) == 0
    rows = {n: t for n, t in json.loads(out.read_text())["bench"].items() if n.startswith(("dsmem", "tma multicast"))}
    assert len(rows) == 4
    for name, t in rows.items():
        assert "error" not in t, (name, t.get("error"))
        assert t["passed"] and t["cluster"] == 2 and t["ctas"] == 2 * t["clusters"], name
