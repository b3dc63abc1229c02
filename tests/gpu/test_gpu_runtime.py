"""GPU tests of tilemagic.runtime: real CuPy/NVRTC compiles and launches.

Skipped unless CuPy imports and ``cupy.is_available()``.  The kernels are small
hand-written CudaSources with the codegen's preamble (``<cuda_fp16.h>``,
``<cuda_bf16.h>``, ``<stdint.h>``), so these tests also check that such a source
compiles under NVRTC.  On a non-CC-10.x GPU (e.g. the H200) the TMEM-flavoured
sources run in the emulated path; the native tcgen05 test needs CC 10.x.
"""

from __future__ import annotations

import tempfile

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

from gpu_guard import cupy  # noqa: E402,F401  (skips the module without a GPU)

from tilemagic.codegen.cuda import CudaSource  # noqa: E402
from tilemagic.errors import LaunchError  # noqa: E402
from tilemagic.ir.nodes import Buffer  # noqa: E402
from tilemagic.runtime import compile_cupy, probe, run_on_gpu, status_report, tmem_mode  # noqa: E402
from tilemagic.runtime.status import TCGEN05_PROBE_SRC  # noqa: E402

HEADER = "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <stdint.h>\n\n"
SCRATCH_WORDS = 128 * 32
EMU_EXTRA = (("tm_scratch", "uint32", SCRATCH_WORDS), ("tm_status", "int32", 8))


def make_source(text, kernel_name, params, *, mode="native", extra_params=(), threads=32):
    kw = dict(text=text, kernel_name=kernel_name, mode=mode, params=tuple(params),
              extra_params=tuple(extra_params), threads=threads)
    return CudaSource(**kw)


def copy_source(dtype: str, ctype: str, shape=(4, 6), threads=32, name=None):
    n = int(np.prod(shape))
    name = name or f"tm_copy_{dtype}"
    text = HEADER + (
        f'extern "C" __global__ void {name}(const {ctype}* __restrict__ A, {ctype}* __restrict__ B) {{\n'
        f"  for (int i = threadIdx.x; i < {n}; i += blockDim.x) B[i] = A[i];\n"
        "}\n"
    )
    params = (Buffer("A", "global", dtype, shape), Buffer("B", "global", dtype, shape))
    return make_source(text, name, params, threads=threads)


def emu_source(body: str, name: str):
    text = HEADER + (
        f'extern "C" __global__ void {name}(const float* __restrict__ A, float* __restrict__ B,\n'
        "    uint32_t* __restrict__ tm_scratch, int32_t* __restrict__ tm_status) {\n"
        f"{body}\n"
        "}\n"
    )
    params = (Buffer("A", "global", "float32", (4, 6)), Buffer("B", "global", "float32", (4, 6)))
    return make_source(text, name, params, mode="emulated", extra_params=EMU_EXTRA, threads=128)


# ----------------------------------------------------------------------------- probe / status
def test_probe_sees_the_device():
    st = probe(refresh=True)
    assert st.available, st.reason
    assert isinstance(st.cc, int) and st.cc >= 75
    assert st.label.endswith(f"(CC {st.cc // 10}.{st.cc % 10})")
    assert st.cupy_version and st.driver_version and st.runtime_version
    assert tmem_mode(st) in ("emulated", f"native sm_{st.cc}a")


def test_status_report_names_the_device():
    text = status_report(check_nvcc=False)
    st = probe()
    assert st.label in text
    assert "a launch would use:" in text
    assert f"kernels without TMEM : arch=sm_{st.cc}" in text and "kernels with TMEM    : arch=" in text
    assert tempfile.gettempdir() + "/" not in text


# ----------------------------------------------------------------------------- copies
@pytest.mark.parametrize("dtype, ctype", [("float32", "float"), ("float16", "half")], ids=["f32", "f16"])
def test_copy_round_trip(dtype, ctype):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 6)).astype(dtype)
    src = copy_source(dtype, ctype)
    run = run_on_gpu(src, None, {"A": a, "B": np.zeros_like(a)})
    st = probe()
    assert run.backend == "cupy"
    assert run.arch == f"sm_{st.cc}"
    assert run.mode == f"native sm_{st.cc} (no TMEM in this kernel)"
    assert run.device == st.label
    assert set(run.outputs) == {"A", "B"}
    for v in run.outputs.values():
        assert v.dtype == a.dtype and v.shape == a.shape
    np.testing.assert_array_equal(run.outputs["B"].view(np.uint8), a.view(np.uint8))
    np.testing.assert_array_equal(run.outputs["A"].view(np.uint8), a.view(np.uint8))


def test_fp16_bits_survive_nan_payloads_and_denormals():
    bits = np.random.default_rng(1).integers(0, 1 << 16, size=(16, 32), dtype=np.uint16)
    bits[0, :4] = [0x7C01, 0xFE00, 0x0001, 0x8001]  # sNaN, qNaN payload, denormals
    a = bits.view(np.float16)
    run = run_on_gpu(copy_source("float16", "half", shape=(16, 32), threads=128, name="tm_copy_f16_big"),
                     None, {"A": a})
    np.testing.assert_array_equal(run.outputs["B"].view(np.uint16), bits)


def test_bfloat16_round_trip():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bits = np.array([0x3F80, 0x7FC1, 0x0001, 0x8000, 0xFF80, 0x4049], dtype=np.uint16)
    a = np.resize(bits, (4, 6)).view(ml_dtypes.bfloat16)
    run = run_on_gpu(copy_source("bfloat16", "__nv_bfloat16"), None, {"A": a})
    out = run.outputs["B"]
    assert out.dtype == a.dtype and out.shape == (4, 6)
    np.testing.assert_array_equal(out.view(np.uint16), a.view(np.uint16))


def test_bench_timing():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    run = run_on_gpu(copy_source("float32", "float", name="tm_copy_bench"), None, {"A": a}, bench=True)
    t = run.timing
    assert t["repeats"] == 50 and t["warmup"] == 5
    assert 0 < t["min_us"] <= t["median_us"] < 1e6
    np.testing.assert_array_equal(run.outputs["B"], a)


# ----------------------------------------------------------------------------- emulated-style sources
# The same source is passed as native and emulated: on CC 10.x the "native" choice runs it,
# elsewhere the emulated one; either way its extra params are allocated and checked.
def test_extra_params_are_zeroed_and_status_zero_passes():
    src = emu_source(
        "  for (int i = threadIdx.x; i < %d; i += blockDim.x)\n"
        "    if (tm_scratch[i] != 0u) tm_status[0] = 99;\n"
        "  if (threadIdx.x < 8 && threadIdx.x > 0 && tm_status[threadIdx.x] != 0) tm_status[0] = 98;\n"
        "  for (int i = threadIdx.x; i < 24; i += blockDim.x) B[i] = A[i];" % SCRATCH_WORDS,
        "tm_emu_ok",
    )
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    run = run_on_gpu(src, src, {"A": a})
    np.testing.assert_array_equal(run.outputs["B"], a)
    st = probe()
    if 100 <= st.cc <= 109:
        assert run.mode == f"native sm_{st.cc}a"
    else:
        assert run.backend == "cupy-emulated"
        assert run.mode == f"emulated TMEM on sm_{st.cc}"


def test_tm_status_trap_raises_launch_error():
    src = emu_source(
        "  if (threadIdx.x == 0) { tm_status[0] = 1; tm_status[1] = 7; tm_status[2] = 8; tm_status[3] = 9; }",
        "tm_emu_trap",
    )
    with pytest.raises(LaunchError) as ei:
        run_on_gpu(src, src, {})
    msg = str(ei.value)
    from tilemagic.arch.tcgen05 import EMU_STATUS

    assert EMU_STATUS[1].format(1, 7, 8, 9) in msg


# ----------------------------------------------------------------------------- compile errors
def test_compile_error_is_launch_error_without_temp_paths():
    bad = make_source(HEADER + 'extern "C" __global__ void tm_bad(float* A) { undefined_thing; }\n',
                      "tm_bad", (Buffer("A", "global", "float32", (4,)),))
    st = probe()
    with pytest.raises(LaunchError) as ei:
        compile_cupy(bad, f"sm_{st.cc}")
    msg = str(ei.value)
    assert "undefined_thing" in msg
    assert tempfile.gettempdir() + "/" not in msg and "/tmp/" not in msg


def test_tcgen05_rejected_for_non_a_target():
    st = probe()
    src = make_source(TCGEN05_PROBE_SRC, "tm_probe", (Buffer("out", "global", "uint32", (128,)),))
    with pytest.raises(LaunchError) as ei:
        compile_cupy(src, f"sm_{st.cc}")
    assert "not supported" in str(ei.value)


# ----------------------------------------------------------------------------- native TMEM (CC 10.x only)
def test_native_tcgen05_alloc_on_blackwell():
    st = probe()
    if not 100 <= st.cc <= 109:
        pytest.skip(f"native tcgen05 needs CC 10.x, this is {st.label}")
    native = make_source(TCGEN05_PROBE_SRC, "tm_probe", (Buffer("out", "global", "uint32", (128,)),),
                         threads=128)
    run = run_on_gpu(native, native, {})
    assert run.mode == f"native sm_{st.cc}a" and run.arch == f"sm_{st.cc}a"
    out = run.outputs["out"]
    assert out.dtype == np.uint32 and (out == out[0]).all()
