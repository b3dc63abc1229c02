"""The whole pipeline on a real GPU through CuPy, bit-exact against the CPU simulator.

On a non-Blackwell GPU (the project's H200, CC 9.0) TMEM kernels run through the
emulation (backend ``cupy-emulated``); kernels without tcgen05 run natively
(backend ``cupy``).  Every case compares the GPU's global buffers with the
simulator's, bit for bit, and every ``check`` must PASS.

The tcgen05 ld/st matrix of issue 3 (``cells.tcgen05_matrix``: 660 cases, every shape x num x dtype x
data path x direction x column offset; the same cases tests/unit/lower/test_tcgen05_ldst.py checks
against an independent decoder in the simulator) is compiled in a few NVRTC modules first, in the
launch worker (``batch_compile_handler.py``, ``compile_cupy_many``), so each case's launch finds its
kernel in the runtime's cache.

Run: ``pytest -m gpu tests/gpu`` on a machine with CuPy and a GPU.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

from gpu_guard import cupy  # noqa: E402  (skips the module without a GPU)

import tilemagic  # noqa: E402
from cells import (  # noqa: E402
    EPC,
    FALLBACK_CASES,
    F_HALVES_CELL,
    GMEM_SMEM_CASES,
    LDSTMATRIX_CASES,
    REG_CASES,
    REG_SHARED_CASES,
    TCGEN05_SLICE_CASES,
    CLUSTER_CELLS,
    TMA_CELLS,
    fallback_cell,
    gmem_smem_cell,
    ldgsts_committed_cell,
    reg_cell,
    roundtrip_cell,
    smem_cell,
    tcgen05_matrix,
    tcgen05_slices_cell,
)
from tilemagic.cli import DEMOS, demo_source  # noqa: E402
from tilemagic.codegen.cuda import uses_tcgen05  # noqa: E402
from tilemagic.errors import LaunchError  # noqa: E402
from tilemagic.ir import nodes as ir  # noqa: E402

CC = cupy.cuda.Device().compute_capability
BLACKWELL = CC.startswith("10")
RESULTS = []  # (case, backend, mode, passed) — printed by test_zz_summary


def both(src, case, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        gpu = tilemagic.tilecopy(src, launch="gpu", **kw)
        sim = tilemagic.tilecopy(src, launch="sim", **kw)
    for name, arr in sim.launch.outputs.items():
        a = gpu.launch.outputs[name]
        bits = {1: np.uint8, 2: np.uint16, 4: np.uint32}[arr.dtype.itemsize]
        np.testing.assert_array_equal(a.view(bits), arr.view(bits), err_msg=f"{case}: {name} differs from the simulator")
    RESULTS.append((case, gpu.launch.backend, gpu.launch.mode, gpu.launch.passed))
    assert gpu.launch.passed, gpu.launch.checks
    return gpu


@pytest.mark.parametrize("name", DEMOS)
def test_seed_demos(name):
    res = both(demo_source(name), f"demo {name}")
    if uses_tcgen05(res.kernel):  # tmem_roundtrip, tcgen05_cp_roundtrip: TMEM emulated on a GPU without it
        assert res.launch.backend == ("cupy" if BLACKWELL else "cupy-emulated")
    else:
        assert res.launch.backend == "cupy"


# ----------------------------------------------------------------------------- asynchronous copies (issue 13)
LDGSTS_CASES = [c for c in GMEM_SMEM_CASES if c.vec * 4 // EPC[c.dtype] >= 4]  # a vector of >= 4 bytes


@pytest.mark.parametrize("case", LDGSTS_CASES, ids=[c.id for c in LDGSTS_CASES])
def test_ldgsts_native(case):
    """cp.async (ldgsts) round trips natively: commit_group, wait_group 0, cta_sync, the copy back."""
    res = both(ldgsts_committed_cell(case), f"ldgsts {case.id}")
    assert res.dispatch[0].chosen == "ldgsts" and res.launch.backend == "cupy"


@pytest.mark.parametrize("name", sorted(TMA_CELLS))
def test_tma_native(name):
    """TMA G2S (mbarrier, expect_tx=auto) and S2G (bulk group) natively, with tensor maps encoded by
    cuTensorMapEncodeTiled: outputs (the shared tile's logical order included) bit for bit the simulator's."""
    res = both(TMA_CELLS[name], name)
    assert any(r.chosen in ("tma_auto", "tma_explicit") for r in res.dispatch) and res.launch.backend == "cupy"


@pytest.mark.parametrize("name", sorted(CLUSTER_CELLS))
def test_cluster_and_edge_native(name):
    """Clusters (TMA multicast, dsmem: one cluster launched, __cluster_dims__), boxes past the tensor's edge (OOB
    zero and NaN fill, a clipped store) and TMA reductions natively: outputs bit for bit the simulator's."""
    res = both(CLUSTER_CELLS[name], name)
    assert res.launch.backend == "cupy"


def test_a_kernel_that_would_hang_is_refused_then_timed_out_and_the_next_cell_runs():
    """--launch auto does not launch a kernel the simulator finds would hang; --launch gpu launches it, the
    worker's --timeout stops it, and the next cell runs on a fresh worker."""
    hang = demo_source("tma_roundtrip").replace("expect_tx=auto", "expect_tx=16384")
    with pytest.raises(LaunchError, match="not launched on the GPU"):
        tilemagic.tilecopy(hang, launch="auto")
    with pytest.raises(LaunchError) as e:
        tilemagic.tilecopy(hang, launch="gpu", timeout=5)
    RESULTS.append(("hang timed out", "cupy", str(e.value).splitlines()[0][:60], True))
    both(demo_source("tma_roundtrip"), "tma_roundtrip after a hang")


MATRIX = [(dt, num, off) for dt in ("float32", "float16", "bfloat16", "uint8", "int32")
          for num in (1, 2, 4, 8, 16, 32, 64, 128) for off in (0, 3) if not (num == 128 and off)]


@pytest.mark.parametrize("dtype,num,off", MATRIX, ids=[f"{d}-x{n}-c{o}" for d, n, o in MATRIX])
def test_32x32b_matrix(dtype, num, off):
    e = EPC[dtype]
    both(roundtrip_cell(dtype, num * e, (num + off) * e, off * e), f"32x32b {dtype} x{num} col{off}")


TCGEN05 = tcgen05_matrix()


@pytest.fixture(scope="module")
def tcgen05_kernels(tmp_path_factory):
    """A launch worker that compiles the matrix's kernels in batches before its first launch.

    The sources (native and emulated, exactly what each launch will send) go to the worker in a pickle;
    its handler (batch_compile_handler.py) compiles them with ``compile_cupy_many`` and the launches hit
    the runtime's kernel cache.  The default worker is restored afterwards.
    """
    import os
    import pickle
    from pathlib import Path

    from tilemagic.codegen.cuda import generate
    from tilemagic.runtime.worker import LaunchWorker, set_worker

    kernels = [tilemagic.tilecopy(c.source, launch="off").kernel for c in TCGEN05]
    path = tmp_path_factory.mktemp("precompile") / "sources.pkl"
    path.write_bytes(pickle.dumps({mode: [generate(k, mode) for k in kernels] for mode in ("native", "emulated")}))
    os.environ["TILEMAGIC_PRECOMPILE"] = str(path)
    set_worker(LaunchWorker("batch_compile_handler", pythonpath=[str(Path(__file__).parent)],
                            compile_timeout=1800))
    yield
    set_worker(None)
    os.environ.pop("TILEMAGIC_PRECOMPILE", None)


@pytest.mark.parametrize("case", TCGEN05, ids=[c.id for c in TCGEN05])
def test_tcgen05_matrix(tcgen05_kernels, case):
    res = both(case.source, f"tcgen05 {case.id}")
    assert res.launch.backend == ("cupy" if BLACKWELL else "cupy-emulated")


@pytest.mark.parametrize("shape,dtype,rows,cols,step", TCGEN05_SLICE_CASES,
                         ids=[f"{s}-{d}-{c}by{k}" for s, d, _, c, k in TCGEN05_SLICE_CASES])
def test_tcgen05_fragment_slices(shape, dtype, rows, cols, step):
    both(tcgen05_slices_cell(shape, dtype, rows, cols, step), f"tcgen05 slices {shape} {dtype} {cols}/{step}")


def test_tcgen05_f_halves_of_one_allocation():
    both(F_HALVES_CELL, "tcgen05 datapath F halves")


@pytest.mark.parametrize("scope,threads,rows,cols", FALLBACK_CASES,
                         ids=[f"{s}-{t}-{r}x{c}" for s, t, r, c in FALLBACK_CASES])
def test_fallback_cases(scope, threads, rows, cols):
    src = fallback_cell(scope, threads, rows, cols)
    assert both(src, f"fallback {scope}/{threads} {rows}x{cols}").launch.backend == "cupy"


@pytest.mark.parametrize("layout,rows,cols,scope,threads,dtype,summary", REG_CASES,
                         ids=[f"reg{i}" for i in range(len(REG_CASES))])
def test_reg_cases(layout, rows, cols, scope, threads, dtype, summary):
    src = reg_cell(layout, rows, cols, scope, threads, dtype)
    both(src, f"reg {layout} {dtype}")


@pytest.mark.parametrize("case", GMEM_SMEM_CASES, ids=[c.id for c in GMEM_SMEM_CASES])
def test_gmem_smem_cases(case):
    res = both(gmem_smem_cell(case), f"gmem_smem {case.id}")
    assert [d.chosen for d in res.dispatch] == ["gmem_smem", "gmem_smem"] and res.launch.backend == "cupy"


@pytest.mark.parametrize("layout,rows,cols,scope,threads,dtype,smem,summary", REG_SHARED_CASES,
                         ids=[f"reg-smem{i}" for i in range(len(REG_SHARED_CASES))])
def test_reg_shared_cases(layout, rows, cols, scope, threads, dtype, smem, summary):
    res = both(smem_cell(layout, rows, cols, scope, threads, dtype, smem), f"reg/shared {layout} {dtype} {smem}")
    assert res.dispatch[1].chosen == "reg"


@pytest.mark.parametrize("layout,rows,cols,scope,threads,dtype,smem,chain,n", LDSTMATRIX_CASES,
                         ids=[f"ldst{i}" for i in range(len(LDSTMATRIX_CASES))])
def test_ldstmatrix_cases(layout, rows, cols, scope, threads, dtype, smem, chain, n):
    """Native ldmatrix (sm_75+) and stmatrix (sm_90+); ``check B == A`` also reads the registers via reg."""
    res = both(smem_cell(layout, rows, cols, scope, threads, dtype, smem), f"ldstmatrix {layout} {dtype} {smem}")
    assert [d.chosen for d in res.dispatch][1:4] == ["ldstmatrix", "reg", "ldstmatrix"]


def test_emulation_reports_access_outside_allocation():
    """A TMEM column outside the allocation is a located LaunchError, and the next launch works."""
    if BLACKWELL:
        pytest.skip("the emulation runs only on non-Blackwell GPUs")
    from tilemagic.codegen.cuda import generate
    from tilemagic.runtime.launch import run_on_gpu

    res = tilemagic.tilecopy(demo_source("tmem_roundtrip"), launch="off")
    st = next(s for s in ir.walk(res.kernel.body) if isinstance(s, ir.TcgenLdSt))
    st.col = 40  # allocation is 32 columns
    native, emulated = generate(res.kernel, "native"), generate(res.kernel, "emulated")
    inputs = {b.name: np.zeros(b.shape, np.float16) for b in res.kernel.params}
    with pytest.raises(LaunchError, match="column 40: outside the allocated columns"):
        run_on_gpu(native, emulated, inputs)
    RESULTS.append(("emulation trap: column 40 of 32", "cupy-emulated", "LaunchError", True))
    assert both(demo_source("tmem_roundtrip"), "after the trap").launch.passed


def test_zz_summary(capsys):
    with capsys.disabled():
        print(f"\nGPU: {cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()} CC {CC}")
        for case, backend, mode, ok in RESULTS:
            print(f"  {'PASS' if ok else 'FAIL'}  {backend:14s} {mode:32s} {case}")
        print(f"  {sum(r[3] for r in RESULTS)}/{len(RESULTS)} PASS")
