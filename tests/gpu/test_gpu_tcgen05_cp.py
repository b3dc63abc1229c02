"""``tcgen05.cp`` (shared -> TMEM) and ``tcgen05.commit`` on a real GPU, bit for bit against the CPU simulator.

On the H200 (CC 9.0, no tensor memory) every case runs through the emulation (``tm_emu_cp`` of
``codegen/tmem_emulation.cuh``: the descriptor decoded bit by bit, the source walk of
``layout.smem_matrix.cp_source_addresses`` in C, every replica written; the commit a release arrive); on a CC 10.x
GPU natively.  Either way the GPU's global buffers must equal the simulator's, bit for bit.

The matrix: every shape/multicast x layout type (no swizzle, 32B, 64B, 128B) x 16/32-bit dtype, each at TMEM
column 0 and with offsets (4 columns; 5 lanes for ``4x256b``, whose footprint leaves room; the second half of the
shared tile for the shapes of fewer than 128 rows).  The cps are planned here by hand as the canonical K-major
layout (rows at the swizzle's row pitch, 8-row groups at SBO = 8 x pitch; unswizzled: 8 x 16-byte core matrices,
LBO 128 B apart) and spliced into a lowered cell (``helpers.spliced_cp_kernel``); ``test_cp_cells`` runs the language's matrix
``cells.CP_CELLS`` (``copy_async T <- S`` cells) through ``tilemagic.tilecopy`` the same way.

Run: ``pytest -m gpu tests/gpu/test_gpu_tcgen05_cp.py`` on a machine with CuPy and a GPU.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

from gpu_guard import cupy  # noqa: E402  (skips the module without a GPU)

from helpers import CP_SPLICE_CELL, spliced_cp_kernel  # noqa: E402
from reference.tcgen05_cp_ref import tmem_image  # noqa: E402

from tilemagic.arch import smem_desc  # noqa: E402
from tilemagic.arch.tcgen05 import CP_SHAPES  # noqa: E402
from tilemagic.codegen.cuda import generate  # noqa: E402
from tilemagic.ir import nodes as ir  # noqa: E402
from tilemagic.runtime.launch import run_on_gpu  # noqa: E402
from tilemagic.sim.interpreter import simulate  # noqa: E402

CC = cupy.cuda.Device().compute_capability
BLACKWELL = CC.startswith("10")
LAYOUTS = (0, 6, 4, 2)  # none, 32B, 64B, 128B (arch.smem_desc.LAYOUT_TYPES)
TCOLS = 64  # TMEM columns (32-bit cells) the cell allocates and reads back
UNSWIZZLED_ROW = 64  # bytes per row of the unswizzled tile: 4 core-matrix columns of 16 bytes

# helpers.CP_SPLICE_CELL with TMEM first cleared by tcgen05.st (zeros from B), so the lanes and columns a cp does
# not write read the same on the GPU and in the simulator; then S is filled with generic stores, fenced for the
# async proxy, and after the cta_sync the spliced cps and the commit (thread 0), the wait,
# tcgen05.fence::after_thread_sync, the read back.
_CLEAR_TMEM = "mbarrier done count=1\nwg.copy r <- B\nwg.copy_async T <- r\nwait st\n"


class CpCase(NamedTuple):
    key: str
    layout: int
    dtype: str
    col: int  # TMEM column offset of the first cp
    lane: int  # TMEM lane offset
    groups: int  # 8-row groups of S skipped (the shared start offset)

    @property
    def id(self) -> str:
        return (f"{self.key}-{smem_desc.LAYOUT_NAMES[self.layout]}-{self.dtype}"
                f"-c{self.col}l{self.lane}g{self.groups}")


def _cases() -> list[CpCase]:
    out = []
    for key, shape in CP_SHAPES.items():
        for layout in LAYOUTS:
            for dtype in ("float16", "float32"):
                out.append(CpCase(key, layout, dtype, 0, 0, 0))
                out.append(CpCase(key, layout, dtype, 4, 5 if shape.lane_footprint <= 123 else 0,
                                  (128 - shape.rows) // 8 if shape.rows < 128 else 0))
    return out


CASES = _cases()


def _plan(case: CpCase, b, taddr) -> list[ir.TcgenCp]:
    """The cps of one K-major tile of ``rows`` x row bytes: one cp per ``chunks`` 16-byte chunks of a row."""
    shape = CP_SHAPES[case.key]
    pitch = smem_desc.ROW_PITCH[case.layout] if case.layout else UNSWIZZLED_ROW
    core = 8 * (smem_desc.ROW_PITCH[case.layout] if case.layout else UNSWIZZLED_ROW)  # bytes per 8-row group
    step = 16 * shape.chunks  # bytes of a row one cp reads
    lbo = 16 if case.layout else 128  # unswizzled: [group][16-byte column][8 rows][16 B]
    cps = []
    for i in range(pitch // step):
        off = case.groups * core + (i * step if case.layout else i * shape.chunks * 128)
        cps.append(ir.TcgenCp(case.key, b["S"], off, lbo, core, case.layout, taddr, case.lane,
                              case.col + i * shape.cols, tmem=b["T"]))
    return cps


def _kernel(case: CpCase):
    elem = 2 if case.dtype == "float16" else 4
    pitch = smem_desc.ROW_PITCH[case.layout] if case.layout else UNSWIZZLED_ROW
    cell = CP_SPLICE_CELL.format(dtype=case.dtype, rows=128, cols=pitch // elem, tcols=TCOLS * 4 // elem, slayout="")
    cell = cell.replace("mbarrier done count=1\n", _CLEAR_TMEM)
    assert _CLEAR_TMEM in cell
    kernel, tp = spliced_cp_kernel(cell, lambda b, t: _plan(case, b, t))
    return kernel, tp


def _expected(kernel, inputs) -> np.ndarray:
    """B as (128, TCOLS) 32-bit cells by the independent decoder written from the ISA text: S holds A's bytes
    (row-major, no swizzle in the cell) from shared address 0 (every base is pattern-aligned, so the swizzle's
    XOR of absolute address bits is the same there), each cp's image moved to its lane and column; zeros
    elsewhere (TMEM was cleared)."""
    window = np.ascontiguousarray(inputs["A"]).tobytes()
    out = np.zeros((128, TCOLS), np.uint32)
    for cp in (s for s in ir.walk(kernel.body) if isinstance(s, ir.TcgenCp)):
        shape = CP_SHAPES[cp.key]
        img = tmem_image(window, cp.descriptor(0), shape.shape, shape.multicast)
        lanes, cols = np.nonzero(img != None)  # noqa: E711  (an object array: None where nothing is written)
        out[lanes + cp.row, cols + cp.col] = img[lanes, cols].astype(np.uint32)
    return out


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view({2: np.uint16, 4: np.uint32}[a.dtype.itemsize])


def _run_both(kernel, tp, case_id: str):
    from tilemagic.pipeline import make_inputs

    inputs = make_inputs(tp)
    gpu = run_on_gpu(generate(kernel, "native"), generate(kernel, "emulated"), inputs)
    np.testing.assert_array_equal(np.ascontiguousarray(gpu.outputs["B"]).view(np.uint32), _expected(kernel, inputs),
                                  err_msg=f"{case_id}: B differs from the ISA decoder's image")
    sim = simulate(kernel, inputs)
    assert gpu.backend == ("cupy" if BLACKWELL else "cupy-emulated")
    for name, arr in sim.items():
        np.testing.assert_array_equal(_bits(gpu.outputs[name]), _bits(arr),
                                      err_msg=f"{case_id}: {name} differs from the simulator")
    return sim, gpu


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_spliced_cp_matrix(case):
    kernel, tp = _kernel(case)
    sim, _ = _run_both(kernel, tp, case.id)
    shape = CP_SHAPES[case.key]
    written = np.ascontiguousarray(sim["B"]).view(np.uint32)  # (128, TCOLS): one 32-bit TMEM cell each
    # the lanes the shape writes hold shared data (A is arange: nonzero but for element 0), the others the zeros
    lanes = sorted({case.lane + x for x in shape.lanes})
    assert np.count_nonzero(written[lanes, case.col:case.col + 4]) > 0, "nothing was copied"
    others = sorted(set(range(128)) - set(lanes))
    assert not np.any(written[others]), "a lane the shape does not write changed"


from cells import CP_CELLS, cp_case_cell  # noqa: E402  (issue 14's matrix of cells, the language's copy_async T <- S)


@pytest.mark.parametrize("case", CP_CELLS, ids=[f"{c.key}-sw{c.swizzle}-{c.dtype}{'-off' if c.offsets else ''}"
                                                for c in CP_CELLS])
def test_cp_cells(case):
    """Every cell of the language's matrix (:data:`cells.CP_CELLS`): GPU (emulated on the H200) against the
    simulator bit for bit on every byte the simulator's happens-before model says was initialised (every byte: a
    4x256b cell zeroes the lanes it does not copy first), and every check PASS."""
    import warnings

    import tilemagic

    src = "%%tilecopy\n" + cp_case_cell(case)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        gpu = tilemagic.tilecopy(src, launch="gpu")
        sim = tilemagic.tilecopy(src, launch="sim")
    poison = sim.launch.hb.poison
    for buf, arr in sim.launch.outputs.items():
        got = np.ascontiguousarray(gpu.launch.outputs[buf]).view(np.uint8).reshape(-1)
        want = np.ascontiguousarray(arr).view(np.uint8).reshape(-1)
        known = ~poison.get(buf, np.zeros(want.size, bool)).reshape(-1)
        assert known.all(), f"{case}: {buf} holds uninitialised bytes"
        np.testing.assert_array_equal(got[known], want[known], err_msg=f"{case}: {buf}")
    assert gpu.launch.passed, gpu.launch.checks
    assert gpu.launch.backend == ("cupy" if BLACKWELL else "cupy-emulated")

