"""GPU faults are isolated in the launch worker: fault -> located LaunchError -> the next launch PASSes.

Deliberately faulting kernels, each launched through the same path as a notebook cell
(``tilemagic.runtime.worker``: a warm worker process, a ``--timeout``, a fresh worker after a
sticky CUDA error or a timeout):

* an illegal address: a raw CUDA kernel writing 1 TiB past its buffer, and a tilemagic kernel
  whose store index was made to point far outside ``B`` (sticky ``cudaErrorIllegalAddress``);
* the TMEM emulation's checks (non-Blackwell GPUs): every rule violation of tests/cells.py
  ``TMEM_VIOLATIONS`` (wrong quadrant under --strict, outside the allocation, bad alloc size,
  alloc after relinquish, missing dealloc, dealloc by another warp, partial warp), each with the
  simulator's message and description line;
* a hang: a tcgen05.alloc that can never be satisfied spins in the emulation (as on the hardware)
  until the --timeout stops the worker; and a raw spinning kernel.

Run: ``pytest -m gpu tests/gpu/test_gpu_faults.py -s`` on a machine with CuPy and a GPU.
"""

from __future__ import annotations

import re
import time
import warnings

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

from gpu_guard import cupy  # noqa: E402  (skips the module without a GPU)

import tilemagic  # noqa: E402
from cells import TMEM_VIOLATIONS, tmem_ir_kernel  # noqa: E402
from tilemagic.cli import demo_source  # noqa: E402
from tilemagic.arch.tcgen05 import EMU_STATUS  # noqa: E402
from tilemagic.codegen.cuda import CudaSource  # noqa: E402
from tilemagic.errors import LaunchError  # noqa: E402
from tilemagic.ir import nodes as ir  # noqa: E402
from tilemagic.pipeline import run_kernel  # noqa: E402
from tilemagic.runtime import worker as W  # noqa: E402

CC = cupy.cuda.Device().compute_capability
BLACKWELL = CC.startswith("10")
LOG = []  # (fault, error shown, next launch) — printed by test_zz_summary
CODE = {"quadrant": 6, "outside_columns": 5, "alloc_not_pow2": 1, "alloc_over_512": 1, "alloc_after_relinquish": 2,
        "missing_dealloc": 7, "dealloc_other_warp": 9, "partial_warp": 8}


@pytest.fixture(scope="module", autouse=True)
def fresh_worker():
    w = W.LaunchWorker()
    old = W.set_worker(w)
    yield w
    W.set_worker(old)
    w.stop()


def next_launch_passes(fault: str, err: LaunchError) -> None:
    """After a fault: the next cell (the fallback demo, on the GPU) must PASS."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        res = tilemagic.tilecopy(demo_source("fallback_demo"), launch="gpu")
    assert res.launch.backend.startswith("cupy") and res.launch.passed, res.launch.checks
    first = err.render().splitlines()[0]
    LOG.append((fault, first, f"next launch {'PASS' if res.launch.passed else 'FAIL'} "
                              f"(worker starts: {W.get_worker().starts})"))


RAW_HEADER = "#include <cuda/std/cstdint>\n"


def raw(body: str, name: str) -> CudaSource:
    text = RAW_HEADER + f'extern "C" __global__ void {name}(float* __restrict__ A, float* __restrict__ B) {{\n{body}\n}}\n'
    bufs = (ir.Buffer("A", "global", "float32", (32,)), ir.Buffer("B", "global", "float32", (32,)))
    return CudaSource(text, name, "native", bufs, (), 32)


# ----------------------------------------------------------------------------- illegal address
def test_raw_illegal_address_then_next_launch():
    w = W.get_worker()
    w.probe()
    starts = w.starts
    src = raw("  B[threadIdx.x + (1ull << 38)] = A[threadIdx.x];", "tm_fault_illegal")
    with pytest.raises(LaunchError) as ei:
        w.launch(src, None, {"A": np.ones(32, np.float32)})
    err = ei.value
    assert "illegal" in err.message.lower() or "IllegalAddress" in err.message, err.message
    assert "fresh CUDA context" in err.hint
    next_launch_passes("raw kernel: store 1 TiB past B", err)
    assert w.starts == starts + 1


def test_tilemagic_kernel_made_to_fault_is_located():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        res = tilemagic.tilecopy(demo_source("fallback_demo"), launch="off")
    kernel = res.kernel
    store = next(s for s in ir.walk(kernel.body) if isinstance(s, ir.Store) and s.buf.name == "B")
    store.indices = (ir.Const(1 << 36),) + tuple(store.indices[1:])  # row 2**36 of B: far outside
    inputs = {b.name: np.zeros(b.shape, np.float32) for b in kernel.params}
    with pytest.raises(LaunchError) as ei:
        run_kernel(kernel, inputs, launch="gpu")
    err = ei.value
    assert "illegal" in err.message.lower() or "IllegalAddress" in err.message, err.message
    assert err.line is not None and err.col is not None  # located (at the kernel's first statement)
    next_launch_passes("tilemagic fallback_demo with B's row index set to 2**36", err)


# ----------------------------------------------------------------------------- TMEM emulation checks
needs_emulation = pytest.mark.skipif(BLACKWELL, reason="native tcgen05 on CC 10.x: the emulation does not run")


@needs_emulation
def test_unbroken_hand_built_kernel_round_trips():
    k, inputs = tmem_ir_kernel()
    run = run_kernel(k, inputs, launch="gpu", strict=True)
    assert run.backend == "cupy-emulated"
    np.testing.assert_array_equal(run.outputs["B"], inputs["A"])


@needs_emulation
@pytest.mark.parametrize("violation", [v for v in TMEM_VIOLATIONS if v != "alloc_never_fits"])
def test_emulation_check_matches_the_simulator(violation):
    strict, _, line = TMEM_VIOLATIONS[violation]
    k, inputs = tmem_ir_kernel(violation)
    with pytest.raises(LaunchError) as sim:
        run_kernel(k, inputs, launch="sim", strict=True)
    with pytest.raises(LaunchError) as gpu:
        run_kernel(k, inputs, launch="gpu", strict=True)
    parts = re.split(r"\{[^}]*\}", EMU_STATUS[CODE[violation]])
    assert re.match("^" + ".+?".join(re.escape(p) for p in parts) + "$", gpu.value.message), gpu.value.message
    assert gpu.value.line == line == sim.value.line
    if violation not in ("outside_columns", "partial_warp", "quadrant"):  # which warp fails first may differ
        assert gpu.value.message == sim.value.message
    next_launch_passes(f"emulated TMEM: {violation}" + (" (--strict)" if strict else ""), gpu.value)


@needs_emulation
def test_alloc_that_never_fits_reports_under_strict():
    k, inputs = tmem_ir_kernel("alloc_never_fits")
    with pytest.raises(LaunchError, match="cannot be satisfied: TMEM is full") as ei:
        run_kernel(k, inputs, launch="gpu", strict=True)
    assert ei.value.line == 6
    next_launch_passes("emulated TMEM: alloc that never fits (--strict)", ei.value)


# ----------------------------------------------------------------------------- hangs
@needs_emulation
def test_alloc_that_never_fits_hangs_until_the_timeout():
    k, inputs = tmem_ir_kernel("alloc_never_fits")
    w = W.get_worker()
    starts = w.starts
    t0 = time.monotonic()
    with pytest.raises(LaunchError) as ei:
        run_kernel(k, inputs, launch="gpu", strict=False, timeout=3)
    took = time.monotonic() - t0
    err = ei.value
    assert "did not finish within 3 s (--timeout)" in err.message and err.line is not None
    assert 3 <= took < 60
    next_launch_passes("emulated TMEM: alloc that never fits, spinning (--timeout 3)", err)
    assert w.starts == starts + 1


def test_raw_spinning_kernel_times_out():
    src = raw("  volatile float* a = A;\n  while (a[0] == 0.0f) { }\n  B[threadIdx.x] = a[threadIdx.x];",
              "tm_fault_spin")
    with pytest.raises(LaunchError) as ei:
        W.get_worker().launch(src, None, {"A": np.zeros(32, np.float32)}, timeout=2)
    assert "did not finish within 2 s" in ei.value.message
    next_launch_passes("raw kernel spinning forever (--timeout 2)", ei.value)


def test_zz_summary(capsys):
    with capsys.disabled():
        print(f"\nGPU: {cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()} CC {CC}")
        for fault, shown, after in LOG:
            print(f"  fault: {fault}\n    error: {shown}\n    then:  {after}")
        print(f"  {sum('PASS' in a for _, _, a in LOG)}/{len(LOG)} faults followed by a passing launch")
