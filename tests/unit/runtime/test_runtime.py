"""CPU-only tests of tilemagic.runtime: probe paths, targets, CuPy glue and nvcc checks.

CuPy is replaced by a fake module (``monkeypatch.setitem(sys.modules, "cupy", fake)``)
whose "device arrays" are NumPy arrays and whose kernels are Python functions, so
the launch logic (argument order, bit transfer, zeroed extra params, status check,
error mapping) runs without a GPU.  The real launches are in tests/gpu/.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import types
from types import SimpleNamespace

import numpy as np
import pytest

from tilemagic.arch import tcgen05 as tc
from tilemagic.codegen.cuda import CudaSource

from tilemagic.errors import LaunchError
from tilemagic.ir.nodes import Buffer
from tilemagic.runtime import nvrtc as rt_compile
from tilemagic.runtime import device as rt_device
from tilemagic.runtime import (
    DeviceStatus,
    arch_for_device,
    compile_cupy,
    nvcc_compile,
    probe,
    run_on_gpu,
    status_report,
    tmem_mode,
)
from tilemagic.runtime.logs import scrub_paths, trim_log
from tilemagic.runtime.nvrtc import nvrtc_source
from tilemagic.runtime.status import TCGEN05_PROBE_SRC

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


# ----------------------------------------------------------------------------- fake CuPy
class CUDARuntimeError(RuntimeError):
    """Stands in for cupy_backends.cuda.api.runtime.CUDARuntimeError."""


class CompileException(Exception):
    """Stands in for cupy.cuda.compiler.CompileException (matched by class name)."""

    def __init__(self, msg):
        super().__init__(msg)
        self._msg = msg

    def get_message(self):
        return self._msg


class FakeDevArray:
    def __init__(self, a):
        self.a = np.array(a, copy=True)

    def get(self):
        return self.a.copy()

    def fill(self, v):
        self.a.fill(v)


class FakeEvent:
    def record(self):
        pass

    def synchronize(self):
        pass


def Src(text, kernel_name, mode, params, extra_params=(), threads=32):
    return CudaSource(text, kernel_name, mode, tuple(params), tuple(extra_params), threads)


def make_cupy(*, available=True, cc="90", name=b"NVIDIA H200", count_error=None, kernels=None):
    """A fake ``cupy`` module; ``kernels`` maps kernel name -> python fn(*device_arrays)."""
    fake = types.ModuleType("cupy")
    fake.__version__ = "14.2.0"
    log = SimpleNamespace(modules=[], launches=[], syncs=0)
    fake._log = log
    kernels = kernels or {}

    def get_count():
        if count_error is not None:
            raise count_error
        return 1 if available else 0

    def sync():
        log.syncs += 1

    runtime = SimpleNamespace(
        CUDARuntimeError=CUDARuntimeError,
        driverGetVersion=lambda: 13000,
        runtimeGetVersion=lambda: 13000,
        getDeviceCount=get_count,
        getDeviceProperties=lambda i: {"name": name},
        deviceSynchronize=sync,
    )

    class Device:
        id = 0
        compute_capability = cc

    class RawModule:
        def __init__(self, code=None, options=()):
            self.code, self.options = code, tuple(options)
            log.modules.append(self)

        def get_function(self, kname):
            if "#error" in self.code:
                raise CompileException(
                    "/tmp/tmpq1w2e3/0123456789abcdef0123456789abcdef_2.cubin.cu(3): error: "
                    "boom\n\n1 error detected in the compilation of "
                    '"/tmp/tmpq1w2e3/0123456789abcdef0123456789abcdef_2.cubin.cu".\n'
                )
            fn = kernels[kname]

            def kernel(grid, block, args):
                log.launches.append((kname, grid, block, args))
                fn(*args)

            return kernel

    fake.cuda = SimpleNamespace(
        runtime=runtime,
        nvrtc=SimpleNamespace(getVersion=lambda: (13, 0)),
        Device=Device,
        Event=FakeEvent,
        get_elapsed_time=lambda s, e: 0.002,  # ms
    )
    fake.is_available = lambda: available
    fake.RawModule = RawModule
    fake.array = lambda a, copy=True: FakeDevArray(a)
    fake.zeros = lambda n, dtype: FakeDevArray(np.zeros(n, dtype=dtype))
    return fake


def _copy(a, b, *extra):
    b.a[...] = a.a


@pytest.fixture(autouse=True)
def _fresh_caches():
    rt_device.reset_cache()
    rt_compile.clear_cache()
    yield
    rt_device.reset_cache()
    rt_compile.clear_cache()


def _status(cc=90, name="NVIDIA H200"):
    return DeviceStatus(True, "", name=name, cc=cc, driver_version=13000, runtime_version=13000,
                        cupy_version="14.2.0", nvrtc_version=(13, 0), cuda_flavour="cupy-cuda13x")


def _bufs(dtype="float32", shape=(4, 6)):
    return (Buffer("A", "global", dtype, shape), Buffer("B", "global", dtype, shape))


# ----------------------------------------------------------------------------- probe
def test_import_does_not_import_cupy():
    code = "import sys, tilemagic.runtime; assert 'cupy' not in sys.modules, 'cupy imported'"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__)))))
    assert r.returncode == 0, r.stderr


def test_probe_cupy_not_installed(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # makes `import cupy` raise ImportError
    st = probe(refresh=True)
    assert not st.available
    assert st.reason == "CuPy is not installed"  # the banner's reason; the install hint is %tilemagic status's
    assert st.cupy_version is None and st.cc is None and st.label is None
    assert tmem_mode(st) == "simulator"


@pytest.mark.parametrize(
    "err, reason",
    [
        (CUDARuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient for "
                          "CUDA runtime version"), "no CUDA driver: cudaErrorInsufficientDriver"),
        (CUDARuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected"), "no CUDA device"),
        (None, "no CUDA device"),
    ],
    ids=["no-driver", "no-device", "count-zero"],
)
def test_probe_cupy_installed_but_unavailable(monkeypatch, err, reason):
    monkeypatch.setitem(sys.modules, "cupy", make_cupy(available=False, count_error=err))
    st = probe(refresh=True)
    assert not st.available
    assert st.reason == reason
    assert st.cupy_version == "14.2.0"
    assert st.nvrtc_version == (13, 0)
    assert tmem_mode(st) == "simulator"


@pytest.mark.parametrize(
    "cc, mode, label",
    [("90", "emulated", "NVIDIA H200 (CC 9.0)"), ("100", "native sm_100a", "NVIDIA B200 (CC 10.0)")],
    ids=["cc90", "cc100"],
)
def test_probe_available(monkeypatch, cc, mode, label):
    name = label.split(" (")[0].encode()
    monkeypatch.setitem(sys.modules, "cupy", make_cupy(cc=cc, name=name))
    st = probe(refresh=True)
    assert st.available and st.reason == ""
    assert st.cc == int(cc) and isinstance(st.cc, int)
    assert st.name == label.split(" (")[0]
    assert st.label == label
    assert st.driver_version == 13000 and st.runtime_version == 13000
    assert tmem_mode(st) == mode


def test_probe_is_cached_and_refreshable(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", make_cupy(cc="90"))
    first = probe(refresh=True)
    monkeypatch.setitem(sys.modules, "cupy", make_cupy(cc="100"))
    assert probe() is first
    assert probe(refresh=True).cc == 100


def test_probe_never_raises(monkeypatch):
    fake = make_cupy()

    def boom():
        raise RuntimeError("weird")

    fake.is_available = boom
    fake.cuda.runtime.getDeviceCount = boom
    fake.cuda.runtime.driverGetVersion = boom
    monkeypatch.setitem(sys.modules, "cupy", fake)
    st = probe(refresh=True)
    assert not st.available and st.reason.startswith("CUDA is not usable")
    assert st.driver_version is None


# ----------------------------------------------------------------------------- targets
@pytest.mark.parametrize(
    "cc, uses_tmem, expected",
    [
        (100, True, ("sm_100a", "native")),
        (100, False, ("sm_100", "native")),
        (103, True, ("sm_103a", "native")),
        (90, True, ("sm_90", "emulated")),
        (90, False, ("sm_90", "native")),
        (80, True, ("sm_80", "emulated")),
        (120, True, ("sm_120", "emulated")),
        (120, False, ("sm_120", "native")),
    ],
    ids=lambda v: str(v),
)
def test_arch_for_device(cc, uses_tmem, expected):
    assert arch_for_device(cc, uses_tmem) == expected


# ----------------------------------------------------------------------------- compile_cupy
def test_compile_cupy_options_and_cache(monkeypatch):
    fake = make_cupy(kernels={"k": _copy})
    monkeypatch.setitem(sys.modules, "cupy", fake)
    src = Src("extern \"C\" __global__ void k() {}", "k", "native", _bufs())
    info1, info2 = {}, {}
    k1 = compile_cupy(src, "sm_90", info=info1)
    k2 = compile_cupy(src, "sm_90", info=info2)
    assert k1 is k2 and len(fake._log.modules) == 1
    assert (info1["cache"], info2["cache"]) == ("compiled", "memory") and "CUPY_CACHE_DIR" in info1["note"]
    assert fake._log.modules[0].options == ("-std=c++17", "-arch=sm_90")
    compile_cupy(src, "sm_100a")
    assert len(fake._log.modules) == 2
    assert fake._log.modules[1].options == ("-std=c++17", "-arch=sm_100a")


def test_compile_cupy_many_compiles_once_and_caches_each_kernel(monkeypatch):
    fake = make_cupy(kernels={"k1": _copy, "k2": _copy})
    monkeypatch.setitem(sys.modules, "cupy", fake)
    pre = "#include <cuda_fp16.h>\n"
    s1 = Src(pre + 'extern "C" __global__ void k1() {}', "k1", "native", _bufs())
    s2 = Src(pre + 'extern "C" __global__ void k2() {}', "k2", "native", _bufs())
    ks = rt_compile.compile_cupy_many([s1, s2], "sm_90")
    assert len(fake._log.modules) == 1 and len(ks) == 2
    assert fake._log.modules[0].code.count("#include <cuda_fp16.h>") == 1
    assert compile_cupy(s2, "sm_90") is ks[1] and len(fake._log.modules) == 1  # a cache hit
    with pytest.raises(LaunchError, match=r"NVRTC could not compile kernel 'k1 \(\+1 more\)'"):
        rt_compile.compile_cupy_many([Src("#error x\n" + s1.text, "k1", "native", _bufs()), s2], "sm_100a")


def test_compile_cupy_swaps_stdint_for_nvrtc(monkeypatch):
    fake = make_cupy(kernels={"k": _copy})
    monkeypatch.setitem(sys.modules, "cupy", fake)
    text = "#include <cuda_fp16.h>\n#include <stdint.h>\n  #include <cstdint>\nextern \"C\" __global__ void k() {}\n"
    compile_cupy(Src(text, "k", "native", _bufs()), "sm_90")
    code = fake._log.modules[0].code
    assert code.splitlines() == ["#include <cuda_fp16.h>", "#include <cuda/std/cstdint>",
                                 "#include <cuda/std/cstdint>", 'extern "C" __global__ void k() {}']
    assert nvrtc_source("// #include <stdint.h> in a comment") == "// #include <stdint.h> in a comment"


def test_compile_cupy_error_is_launch_error_without_temp_paths(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", make_cupy())
    src = Src("#error nope\n", "k", "native", _bufs())
    with pytest.raises(LaunchError) as ei:
        compile_cupy(src, "sm_90")
    text = str(ei.value)
    assert "NVRTC could not compile kernel 'k' for -arch=sm_90" in text
    assert "kernel.cu(3): error: boom" in text
    assert "/tmp" not in text and "0123456789abcdef" not in text


def test_scrub_and_trim():
    tmp = tempfile.gettempdir()
    log = (f"ptxas {tmp}/tmpxft_00000f49_00000000-6_k.ptx, line 3; error\n"
           f"{tmp}/tilemagic-abc/k.cu(2): error")
    out = scrub_paths(log)
    assert out == "ptxas <tmp>/k.ptx, line 3; error\n<tmp>/k.cu(2): error"
    assert scrub_paths("/work/x/k.cu(1): e", "/work/x") == "<tmp>/k.cu(1): e"
    assert scrub_paths("/home/u/tmp/k.cu(1)") == "/home/u/tmp/k.cu(1)"  # not a temp dir
    long = "\n".join(f"l{i}" for i in range(50))
    t = trim_log(long, max_lines=3)
    assert t == "l0\nl1\nl2\n... (47 more lines)"


# ----------------------------------------------------------------------------- run_on_gpu (fake CuPy)
def test_run_native_copy_float32(monkeypatch):
    fake = make_cupy(kernels={"copy": _copy})
    monkeypatch.setitem(sys.modules, "cupy", fake)
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    run = run_on_gpu(Src("...", "copy", "native", _bufs()), None,
                     {"A": a, "B": np.zeros_like(a)}, status=_status(90))
    assert run.backend == "cupy"
    assert run.mode == "native sm_90 (no TMEM in this kernel)"
    assert run.arch == "sm_90" and run.device == "NVIDIA H200 (CC 9.0)"
    assert run.timing is None
    assert set(run.outputs) == {"A", "B"}
    for v in run.outputs.values():
        assert v.dtype == np.float32 and v.shape == (4, 6)
    np.testing.assert_array_equal(run.outputs["B"], a)
    (_, grid, block, args), = fake._log.launches
    assert grid == (1,) and block == (32,) and len(args) == 2


def test_run_bfloat16_bits_round_trip(monkeypatch):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    seen = {}

    def k(a, b):
        seen["dtype"] = a.a.dtype
        b.a[...] = a.a

    monkeypatch.setitem(sys.modules, "cupy", make_cupy(kernels={"k": k}))
    bits = np.array([0x3F80, 0x7FC1, 0x0001, 0x8000, 0xFF80, 0x4049], dtype=np.uint16)
    a = np.resize(bits, (4, 6)).view(ml_dtypes.bfloat16)
    run = run_on_gpu(Src("...", "k", "native", _bufs("bfloat16")), None, {"A": a}, status=_status(90))
    assert seen["dtype"] == np.uint16  # transferred as bits
    out = run.outputs["B"]
    assert out.dtype == a.dtype and out.shape == a.shape
    np.testing.assert_array_equal(out.view(np.uint16), a.view(np.uint16))
    np.testing.assert_array_equal(run.outputs["A"].view(np.uint16), a.view(np.uint16))


def _emu_src(name="emu"):
    return Src("...", name, "emulated", _bufs(),
               (("tm_scratch", "uint32", 128 * 32), ("tm_status", "int32", 8)), threads=128)


@pytest.mark.parametrize(
    "cc, kernel, backend, mode, arch",
    [
        (90, "emu", "cupy-emulated", "emulated TMEM on sm_90", "sm_90"),
        (100, "nat", "cupy", "native sm_100a", "sm_100a"),
    ],
    ids=["cc90-emulated", "cc100-native"],
)
def test_run_picks_native_or_emulated(monkeypatch, cc, kernel, backend, mode, arch):
    seen = {}

    def emu(a, b, scratch, status):
        seen["extras"] = (scratch.a.dtype, scratch.a.shape, int(scratch.a.any()),
                          status.a.dtype, status.a.shape, int(status.a.any()))
        b.a[...] = a.a

    fake = make_cupy(cc=str(cc), kernels={"emu": emu, "nat": _copy})
    monkeypatch.setitem(sys.modules, "cupy", fake)
    native = Src("tcgen05...", "nat", "native", _bufs(), threads=128)
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    run = run_on_gpu(native, _emu_src(), {"A": a}, status=_status(cc))
    assert (run.backend, run.mode, run.arch) == (backend, mode, arch)
    assert fake._log.modules[0].options[-1] == f"-arch={arch}"
    assert fake._log.launches[0][0] == kernel and fake._log.launches[0][2] == (128,)
    np.testing.assert_array_equal(run.outputs["B"], a)
    assert set(run.outputs) == {"A", "B"}  # extra params are not outputs
    if kernel == "emu":
        assert seen["extras"] == (np.uint32, (4096,), 0, np.int32, (8,), 0)


def test_run_tm_status_trap_uses_emu_status(monkeypatch):
    def trap(a, b, scratch, status):
        status.a[:4] = [3, 40, 7, 32]

    monkeypatch.setitem(sys.modules, "cupy", make_cupy(kernels={"emu": trap}))
    monkeypatch.setattr(tc, "EMU_STATUS", {3: "tcgen05.ld: lane {1}, column {2} outside the {3} allocated columns"})
    with pytest.raises(LaunchError) as ei:
        run_on_gpu(Src("...", "nat", "native", _bufs()), _emu_src(), {}, status=_status(90))
    assert "tcgen05.ld: lane 40, column 7 outside the 32 allocated columns" in str(ei.value)

    monkeypatch.setattr(tc, "EMU_STATUS", {})
    with pytest.raises(LaunchError, match="TMEM emulation trapped with status 3"):
        run_on_gpu(Src("...", "nat", "native", _bufs()), _emu_src(), {}, status=_status(90))


def test_run_cuda_error_becomes_launch_error(monkeypatch):
    def bad(a, b):
        raise CUDARuntimeError("cudaErrorIllegalAddress: an illegal memory access was encountered")

    monkeypatch.setitem(sys.modules, "cupy", make_cupy(kernels={"bad": bad}))
    with pytest.raises(LaunchError) as ei:
        run_on_gpu(Src("...", "bad", "native", _bufs()), None, {}, status=_status(90))
    assert "cudaErrorIllegalAddress: an illegal memory access" in str(ei.value)
    assert ei.value.sticky and "unusable" in str(ei.value)


def test_run_without_gpu_or_with_bad_input_raises(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", make_cupy(kernels={"copy": _copy}))
    src = Src("...", "copy", "native", _bufs())
    with pytest.raises(LaunchError, match="no GPU launch possible: no CUDA device"):
        run_on_gpu(src, None, {}, status=DeviceStatus(False, "no CUDA device"))
    with pytest.raises(LaunchError, match=r"input 'A' is float32\[3, 6\]"):
        run_on_gpu(src, None, {"A": np.zeros((3, 6), np.float32)}, status=_status(90))
    with pytest.raises(LaunchError, match="input 'A' is float64"):
        run_on_gpu(src, None, {"A": np.zeros((4, 6), np.float64)}, status=_status(90))


def test_run_missing_input_starts_as_zeros_and_bench(monkeypatch):
    fake = make_cupy(kernels={"copy": _copy})
    monkeypatch.setitem(sys.modules, "cupy", fake)
    run = run_on_gpu(Src("...", "copy", "native", _bufs("float16")), None, {}, status=_status(90),
                     bench=True)
    assert run.outputs["B"].dtype == np.float16 and not run.outputs["B"].any()
    assert run.timing == {"median_us": 2.0, "min_us": 2.0, "repeats": 50, "warmup": 5}
    assert len(fake._log.launches) == 1 + 5 + 50


# ----------------------------------------------------------------------------- status report
def test_status_report_gpu_and_no_gpu(monkeypatch):
    """The rows of tilemagic status; more in test_status_ptx.py."""
    import tilemagic.runtime.status as rt_status

    monkeypatch.setattr(rt_status, "nvcc_version", lambda: "13.0.88")
    text = status_report(status=_status(90), check_nvcc=False)
    assert "CuPy" in text and "14.2.0 (cupy-cuda13x)" in text
    assert "driver 13.0, runtime 13.0" in text
    assert "NVIDIA H200 (CC 9.0)" in text
    assert "kernels with TMEM    : arch=sm_90, TMEM emulated in global memory" in text
    text = status_report(status=_status(100, "NVIDIA B200"), check_nvcc=False)
    assert "kernels with TMEM    : arch=sm_100a, TMEM native (tcgen05 on NVIDIA B200 (CC 10.0))" in text
    text = status_report(status=DeviceStatus(False, "CuPy is not installed (pip install tilemagic[cuda13])"),
                         check_nvcc=False)
    assert "not installed" in text
    assert "a launch would use:\n    every kernel : CPU simulator" in text and "no GPU" in text


# ----------------------------------------------------------------------------- nvcc (ptxas check)
@pytest.mark.nvcc
@needs_nvcc
def test_nvcc_compile_tcgen05_for_sm_100a():
    res = nvcc_compile(TCGEN05_PROBE_SRC, "sm_100a")
    assert res.ok, res.log
    assert res.cubin is not None and res.cubin[:4] == b"\x7fELF"
    assert res.command == "nvcc -arch=sm_100a -cubin -o k.cubin k.cu"


@pytest.mark.nvcc
@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_90", "sm_100"])
def test_nvcc_compile_tcgen05_rejected_elsewhere(arch):
    res = nvcc_compile(TCGEN05_PROBE_SRC, arch)
    assert not res.ok and res.cubin is None
    assert f"Instruction 'tcgen05.alloc' not supported on .target '{arch}'" in res.log
    assert tempfile.gettempdir() not in res.log
    assert "/tmp" not in res.log and "tmpxft" not in res.log
    assert "<tmp>/k.ptx" in res.log


@pytest.mark.nvcc
@needs_nvcc
def test_nvcc_front_end_error_and_version():
    res = nvcc_compile("__global__ void k() { undefined_thing; }", "sm_90", cubin=False)
    assert not res.ok
    assert 'k.cu(1): error: identifier "undefined_thing" is undefined' in res.log
    v = rt_device.nvcc_version()
    assert v is not None and v[0].isdigit()


def test_nvcc_missing(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    res = nvcc_compile(TCGEN05_PROBE_SRC)
    assert not res.ok and res.log == "nvcc not found on PATH"
