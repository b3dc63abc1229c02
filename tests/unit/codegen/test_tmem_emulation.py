"""The CUDA TMEM emulation (codegen/tmem_emulation.cuh) against an independent PTX decoder, on the host.

The emulation's device functions are compiled as host C++ (g++): ``__device__`` and friends become
nothing, ``threadIdx`` a global that the driver steps through the 128 threads of a warpgroup one by one
(every tcgen05 access of the emulation is thread-private, so a serial schedule gives the GPU's result).
For every shape (the four ld/st shapes and ``.16x32bx2``), min and max legal num, both PTX row immediates
(0, 16) and two column offsets, the driver stores registers tagged ``(tid << 16) | r`` and loads a
TMEM tagged ``(lane << 16) | column``; the test decodes both dumps with the PTX ISA 9.0 §9.7.16.2.3 per-thread
formulas and the warp-quadrant rule (PTX ISA 9.0 §9.7.16.2.3, §9.7.16.8.1), written here without tilemagic.
The strict quadrant check and the allocation bounds are checked too.  The H200 run
(tests/gpu/test_gpu_pipeline.py) checks the same code on a GPU against the simulator.
"""

from __future__ import annotations

import shutil
import subprocess
from importlib import resources

import numpy as np
import pytest
from cells import ptx_row_col
from helpers import EMULATION_HOST_PRELUDE

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not on PATH")

SHAPE_ID = {"32x32b": 0, "16x64b": 1, "16x128b": 2, "16x256b": 3, "16x32bx2": 4}
REGS_PER_NUM = {"32x32b": 1, "16x64b": 1, "16x128b": 2, "16x256b": 4, "16x32bx2": 1}
MAX_NUM = {"32x32b": 128, "16x64b": 128, "16x128b": 64, "16x256b": 32, "16x32bx2": 128}
LANES, COLS = 128, 512

COL_FACTOR = {"32x32b": 1, "16x64b": 2, "16x128b": 4, "16x256b": 8, "16x32bx2": 2}  # both halves of .16x32bx2
# (.32x32b covers the warp's 32 lanes, so only row immediate 0 stays inside the quadrant)
CASES = [(shape, num, row, col) for shape in SHAPE_ID for num in (1, 4, MAX_NUM[shape])
         for row in ((0,) if shape == "32x32b" else (0, 16)) for col in (0, 5)
         if col + num * COL_FACTOR[shape] <= COLS]


_DRIVER = EMULATION_HOST_PRELUDE + r"""
#include "EMULATION"

static const int CASES[][4] = {CASE_TABLE};

int main() {
  std::vector<uint32_t> scratch(TM_LANES * TM_COLS + TM_STATE_WORDS, 0u);
  int status[8] = {0};
  uint32_t taddr_slot = 0xdeadu;
  TmEmu e = tm_emu_make(scratch.data(), status, 0);
  for (unsigned t = 0; t < 32; ++t) { threadIdx.x = t; tm_emu_alloc(e, &taddr_slot, 512u); }
  FILE* out = fopen("dump.bin", "wb");
  for (const auto& c : CASES) {
    int shape = c[0], num = c[1];
    uint32_t split = shape == TM_SHAPE_16x32bx2 ? (uint32_t)num : 0u;
    uint32_t taddr = (((taddr_slot >> 16) + (uint32_t)c[2]) << 16) | ((taddr_slot + (uint32_t)c[3]) & 0xffffu);
    uint32_t nregs = (uint32_t)num * tm_regs_per_num(shape);
    for (uint32_t i = 0; i < TM_LANES * TM_COLS; ++i) scratch[i] = 0u;
    for (unsigned tid = 0; tid < 128; ++tid) {       // st: registers tagged (tid << 16) | r
      threadIdx.x = tid;
      std::vector<uint32_t> regs(nregs);
      for (uint32_t r = 0; r < nregs; ++r) regs[r] = (tid << 16) | r;
      tm_emu_ldst(e, 0, shape, num, taddr, regs.data(), split);
    }
    fwrite(scratch.data(), 4, TM_LANES * TM_COLS, out);
    for (uint32_t l = 0; l < TM_LANES; ++l)           // ld: TMEM tagged (lane << 16) | column
      for (uint32_t k = 0; k < TM_COLS; ++k) scratch[l * TM_COLS + k] = (l << 16) | k;
    for (unsigned tid = 0; tid < 128; ++tid) {
      threadIdx.x = tid;
      std::vector<uint32_t> regs(128, 0xffffffffu);
      tm_emu_ldst(e, 1, shape, num, taddr, regs.data(), split);
      fwrite(regs.data(), 4, 128, out);
    }
    fwrite(status, 4, 8, out);
  }
  // strict: warp 1 with lane quadrant 2 fails (code 6), quadrant 1 and 0 pass; column 512 is out of range (5)
  std::vector<uint32_t> regs(128, 0u);
  int codes[4];
  for (int k = 0; k < 4; ++k) {
    for (int j = 0; j < 8; ++j) status[j] = 0;
    TmEmu s = tm_emu_make(scratch.data(), status, 1);
    uint32_t addr = k == 0 ? (64u << 16) : k == 1 ? (32u << 16) : k == 2 ? 0u : 511u;
    for (unsigned tid = 32; tid < 64; ++tid) { threadIdx.x = tid; tm_emu_ldst(s, 1, TM_SHAPE_32x32b, 2, addr, regs.data(), 0u); }
    codes[k] = status[0];
  }
  fwrite(codes, 4, 4, out);
  fclose(out);
  return 0;
}
"""


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    d = tmp_path_factory.mktemp("emu")
    header = resources.files("tilemagic.codegen").joinpath("tmem_emulation.cuh").read_text()
    (d / "tmem_emulation.cuh").write_text(header)
    table = ", ".join(f"{{{SHAPE_ID[s]}, {n}, {row}, {col}}}" for s, n, row, col in CASES)
    (d / "driver.cpp").write_text(_DRIVER.replace("EMULATION", "tmem_emulation.cuh").replace("CASE_TABLE", table))
    subprocess.run(["g++", "-std=c++17", "-O1", "-o", "driver", "driver.cpp"], cwd=d, check=True,
                   capture_output=True, timeout=300)
    subprocess.run(["./driver"], cwd=d, check=True, timeout=300)
    raw = np.fromfile(d / "dump.bin", np.uint32)
    per = LANES * COLS + 128 * 128 + 8
    out = {}
    for i, case in enumerate(CASES):
        blk = raw[i * per:(i + 1) * per]
        out[case] = (blk[:LANES * COLS].reshape(LANES, COLS), blk[LANES * COLS:-8].reshape(128, 128),
                     blk[-8:].astype(np.int32))
    out["strict"] = raw[len(CASES) * per:].astype(np.int32)
    return out


@pytest.mark.parametrize("case", CASES, ids=[f"{s}-x{n}-row{r}-col{c}" for s, n, r, c in CASES])
def test_emulation_matches_the_ptx_mapping(dumps, case):
    shape, num, row_imm, col_imm = case
    mem, regs, status = dumps[case]
    assert status[0] == 0, status
    split = num if shape == "16x32bx2" else 0
    nregs = num * REGS_PER_NUM[shape]
    want = np.zeros((LANES, COLS), np.uint32)
    want_regs = np.full((128, 128), 0xFFFFFFFF, np.uint32)
    for tid in range(128):
        w, t = tid // 32, tid % 32
        for r in range(nregs):
            row, col = ptx_row_col(shape, t, r, split)
            lane, c = 32 * (w % 4) + row_imm + row, col_imm + col  # quadrant from the warp (§9.7.16.8.1)
            want[lane, c] = (tid << 16) | r
            want_regs[tid, r] = (lane << 16) | c
    np.testing.assert_array_equal(mem, want)
    np.testing.assert_array_equal(regs, want_regs)


def test_emulation_strict_quadrant_and_bounds(dumps):
    # warp 1: quadrant 2 is flagged under strict (code 6); quadrant 1 (= warp % 4) and 0 pass; column 512 -> 5
    np.testing.assert_array_equal(dumps["strict"], [6, 0, 0, 5])
