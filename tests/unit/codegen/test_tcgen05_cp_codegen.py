"""The CUDA of ``tcgen05.cp`` (shared -> TMEM) and ``tcgen05.commit``: native inline PTX and the emulation.

* Native (``sm_100a``): every shape/multicast x layout type assembles with ptxas; the descriptor's template
  constant is the hand-computed value of PTX ISA 9.0 §9.7.16.4.1 Table 40.
* Emulated (``sm_90a``, the H200): the same kernels compile; ``tm_emu_cp`` of ``tmem_emulation.cuh``, compiled as
  host C++ (g++) with a host byte array for shared memory, writes for every shape x layout type x start offset x
  TMEM offset exactly the TMEM image of the independent decoder written from the ISA text
  (``tests/reference/tcgen05_cp_ref.py``) and of tilemagic's one Python walk
  (``layout.smem_matrix.cp_source_addresses`` + ``arch.tcgen05.cp_cells``), and reports each error class with
  its ``arch.tcgen05.EMU_STATUS`` code.
* ``global_bytes``: a tcgen05.cp moves no global bytes.

The kernels are cells lowered without tcgen05.cp with hand-built cps spliced in (``helpers.spliced_cp_kernel``)
until the language has the statement.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from importlib import resources

import numpy as np
import pytest
from helpers import CP_SPLICE_CELL, EMULATION_HOST_PRELUDE, spliced_cp_kernel
from reference.tcgen05_cp_ref import tmem_image

from tilemagic.arch import smem_desc
from tilemagic.arch.tcgen05 import CP_SHAPES, EMU_STATUS, cp_cells
from tilemagic.codegen.cuda import CP_SHAPE_ID, generate, global_bytes, translation_unit
from tilemagic.errors import LoweringError
from tilemagic.ir import nodes as ir
from tilemagic.layout.smem_matrix import cp_source_addresses

LAYOUTS = (0, 6, 4, 2)  # layout type: none, 32B, 64B, 128B swizzle (arch.smem_desc.LAYOUT_TYPES)
KEYS = tuple(CP_SHAPES)


def _sbo(layout: int) -> int:
    """An SBO of the canonical K-major family: 8 rows at the layout's row pitch (128 B unswizzled: 8 x 16 B)."""
    return 8 * smem_desc.ROW_PITCH[layout] if layout else 256


def _cell_kernel(key: str, layout: int, name: str, *, cta_group: int = 1, col: int = 4):
    cell = CP_SPLICE_CELL.format(dtype="float32", rows=128, cols=32, tcols=32, slayout="")

    def make(b, taddr):
        return [ir.TcgenCp(key, b["S"], 0, 128 if not layout else 16, _sbo(layout), layout, taddr, 0, 0,
                           tmem=b["T"], cta_group=cta_group),
                ir.TcgenCp(key, b["S"], smem_desc.PATTERN_PERIOD[layout], 16, _sbo(layout), layout, taddr, 0, col,
                           tmem=b["T"], cta_group=cta_group)]

    kernel, _ = spliced_cp_kernel(cell, make)
    kernel.name = name
    return kernel


CASES = [(key, layout) for key in KEYS for layout in LAYOUTS]


def _kernels():
    return [_cell_kernel(key, layout, f"cp_k{i}") for i, (key, layout) in enumerate(CASES)]


needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


@needs_nvcc
@pytest.mark.nvcc
def test_every_shape_and_layout_assembles_natively_for_sm_100a():
    from tilemagic.runtime.nvcc import nvcc_compile

    sources = [generate(k, "native") for k in _kernels()]
    assert all(s.uses_tcgen05 for s in sources)
    text = translation_unit(s.text for s in sources)
    for key in KEYS:
        assert f"tcgen05.cp.cta_group::1.{key} [%0], %1;" in text, key
    assert "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];" in text
    r = nvcc_compile(text, "sm_100a", timeout=600)
    assert r.ok, r.log
    ptx = nvcc_compile(text, "sm_100a", cubin=False, timeout=600)
    assert ptx.ok, ptx.log
    for key in KEYS:  # the instruction survives into the PTX ptxas assembled, once per cp
        assert ptx.ptx.count(f"tcgen05.cp.cta_group::1.{key} ") == 2 * len(LAYOUTS), key


@needs_nvcc
@pytest.mark.nvcc
def test_every_shape_and_layout_compiles_emulated_for_sm_90a():
    """The H200's target: every case's emulated source (tm_emu_cp, the commit as a release arrive) compiles."""
    from tilemagic.runtime.nvcc import nvcc_compile

    sources = [generate(k, "emulated") for k in _kernels()]
    text = translation_unit(s.text for s in sources)
    assert "tcgen05.cp" not in re.sub(r"//.*", "", text)  # no native tcgen05 left outside comments
    assert text.count("mbarrier.arrive.release.cta.shared::cta.b64") == len(CASES)
    for key in KEYS:
        assert f"tm_desc, {CP_SHAPE_ID[key]}, tm_smem_lo, tm_smem_hi);  // tcgen05.cp.cta_group::1.{key}" in text
    r = nvcc_compile(text, "sm_90a", timeout=600)
    assert r.ok, r.log


def test_the_descriptor_template_is_the_hand_computed_table_40_value():
    """bf16 128x64 with the 128-byte swizzle (TVM 0.27's example): LBO 16 B, SBO 1024 B, layout type 2, version 1:
    bits 16-29 = 1, bits 32-45 = 64, bit 46 = 1, bits 61-63 = 2; the start address ORed in at run time from the
    cvta'd buffer plus the cp's byte offset, as TVM does."""
    cell = CP_SPLICE_CELL.format(dtype="bfloat16", rows=128, cols=64, tcols=64, slayout=" @ swizzle(3, 3, 3)")
    kernel, _ = spliced_cp_kernel(cell, lambda b, t: [
        ir.TcgenCp("128x256b", b["S"], 32 * i, 16, 1024, 2, t, 0, 8 * i, tmem=b["T"]) for i in range(4)])
    text = generate(kernel, "native").text
    want = (1 << 16) | (64 << 32) | (1 << 46) | (2 << 61)
    assert want == 0x4000404000010000
    for i in range(4):
        assert (f"const uint64_t tm_desc = {want:#x}ull | (uint64_t)((((uint32_t)__cvta_generic_to_shared(S) + "
                f"{32 * i}u) >> 4) & 0x3FFFu);") in text
    assert "get_tmem_addr(tmem_addr[0], 0, 24)" in text  # the fourth cp, 24 columns on
    assert "__shared__ __align__(1024) __nv_bfloat16 S[8192];" in text  # the 128B swizzle's pattern period
    for base in (0, 1024, 5 * 1024):  # the run-time OR gives the IR's descriptor for any aligned base
        assert want | ((base + 64) >> 4 & 0x3FFF) == ir.TcgenCp(
            "128x256b", kernel.shared[0], 64, 16, 1024, 2, kernel.tmem_addr, 0, 0).descriptor(base)


def test_a_cp_moves_no_global_bytes():
    cell = CP_SPLICE_CELL.format(dtype="float32", rows=128, cols=32, tcols=32, slayout="")
    kernel, _ = spliced_cp_kernel(cell, lambda b, t: [ir.TcgenCp("128x128b", b["S"], 0, 16, 128, 0, t, 0, 0)])
    assert any(isinstance(s, ir.TcgenCp) for s in ir.walk(kernel.body))
    assert global_bytes(kernel) == (128 * 32 * 4, 128 * 32 * 4)  # A read once, B written once; S -> T nothing
    assert generate(kernel, "native").read_bytes == 128 * 32 * 4


def test_cta_group_2_is_refused_with_a_located_reason():
    kernel = _cell_kernel("128x256b", 2, "cp_pair", cta_group=2)
    for mode in ("native", "emulated"):
        with pytest.raises(LoweringError, match="cta_group::2") as e:
            generate(kernel, mode)
        assert e.value.span is not None and e.value.span.line == 90 and "cluster" in (e.value.hint or "")


@needs_nvcc
@pytest.mark.nvcc
def test_the_multicast_commit_assembles_native_and_emulated():
    """``cta_mask``: native ``.multicast::cluster`` with a 16-bit mask; emulated one mapa + release.cluster arrive
    per mask bit (sm_90a).  (A cluster kernel made by setting the cluster size of a spliced one: codegen only.)"""
    from tilemagic.runtime.nvcc import nvcc_compile

    kernel = _cell_kernel("128x128b", 0, "cp_mc")
    commit = next(s for s in ir.walk(kernel.body) if isinstance(s, ir.TcgenCommit))
    commit.cta_mask = 0b101
    kernel.cluster = 4
    native = generate(kernel, "native").text
    assert ("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 [%0], %1;"
            in native and '"h"((uint16_t)0x5)' in native)
    emulated = generate(kernel, "emulated").text
    assert emulated.count("mbarrier.arrive.release.cluster.shared::cluster.b64") == 2
    assert "CTA rank 0 of mask 0x5" in emulated and "CTA rank 2 of mask 0x5" in emulated
    for text, arch in ((native, "sm_100a"), (emulated, "sm_90a")):
        r = nvcc_compile(text, arch)
        assert r.ok, r.log


# ----------------------------------------------------------------------------- tm_emu_cp on the host
_DRIVER = EMULATION_HOST_PRELUDE + r"""
static uint8_t g_smem[WINDOW];   // the CTA's shared window, shared address 0 = g_smem[0]
#define TM_EMU_LD_SHARED_V4(addr, w) memcpy((w), g_smem + (addr), 16)
#include "tmem_emulation.cuh"

// desc, shape, taddr, window hi, allocated slot mask
static const unsigned long long CASES[][5] = {CASE_TABLE};

int main() {
  FILE* in = fopen("smem.bin", "rb");
  if (fread(g_smem, 1, WINDOW, in) != WINDOW) return 2;
  fclose(in);
  std::vector<uint32_t> scratch(TM_LANES * TM_COLS + TM_STATE_WORDS, 0u);
  FILE* out = fopen("dump.bin", "wb");
  for (const auto& c : CASES) {
    int status[8] = {0};
    TmEmu e = tm_emu_make(scratch.data(), status, 0);
    for (uint32_t i = 0; i < TM_LANES * TM_COLS; ++i) scratch[i] = 0xDEADBEEFu;
    e.state[0] = (uint32_t)c[4];
    uint32_t lo = 0xffffffffu, hi = 0u;
    tm_emu_smem_span(lo, hi, 0u, (uint32_t)c[3]);
    tm_emu_cp(e, (uint32_t)c[2], (uint64_t)c[0], (int)c[1], lo, hi);
    fwrite(scratch.data(), 4, TM_LANES * TM_COLS, out);
    fwrite(status, 4, 8, out);
  }
  fclose(out);
  return 0;
}
"""
WINDOW = 64 * 1024
SENTINEL = 0xDEADBEEF
ALL_SLOTS = 0xFFFF
# TMEM (lane, column) offsets: lane offsets only where the shape's footprint leaves room (4x256b: 97 lanes)
OFFSETS = {key: ((0, 0), (0, 12)) + (((5, 40),) if CP_SHAPES[key].lane_footprint <= 100 else ()) for key in KEYS}
# start addresses: pattern-aligned, plus a middle step (32 B: the second 256b atom of a 128B-swizzled tile) and
# an address above 16 KiB (the 14-bit field holds address bits 4-17)
STARTS = {layout: (smem_desc.PATTERN_PERIOD[layout] * 3, smem_desc.PATTERN_PERIOD[layout] * 17 + 32)
          for layout in LAYOUTS}
GOOD = [(key, layout, start, lane, col) for key in KEYS for layout in LAYOUTS for start in STARTS[layout]
        for lane, col in OFFSETS[key]]


def _desc(layout: int, start: int) -> int:
    return smem_desc.encode(start, 16 if layout else 48, _sbo(layout) if layout else 400, layout)


# invalid cases: (name, raw descriptor, shape key, taddr, window hi, slot mask) -> expected status
_D = _desc(0, 1024)
BAD = {
    "version 0": (_D & ~(7 << 46), "128x128b", 0, WINDOW, ALL_SLOTS, (10, 0, 0, 0)),
    "layout type 3": (_D | (3 << 61), "128x128b", 0, WINDOW, ALL_SLOTS, (10, 1, 3, 0)),
    "layout type 1": (_D | (1 << 61), "128x128b", 0, WINDOW, ALL_SLOTS, (10, 1, 1, 0)),
    "base offset 2": (_D | (2 << 49), "128x128b", 0, WINDOW, ALL_SLOTS, (10, 1, 0, 2)),
    "lbo mode 1": (_D | (1 << 52), "128x128b", 0, WINDOW, ALL_SLOTS, (14, 1, 0, 0)),
    # row 120 (core matrix 15, row 0) starts at 1024 + 15 * 400 = 7024: past a window ending at 7000; row 119
    # (1024 + 7 * 16 + 14 * 400 = 6736) is inside
    "past the window": (_D, "128x128b", 0, 7000, ALL_SLOTS, (11, 1024 + 15 * 400, 120, 0)),
    "lane past 127": (_D, "4x256b", (32 << 16), WINDOW, ALL_SLOTS, (12, 3, 128, 0)),
    "column past 511": (_D, "128x256b", 508, WINDOW, ALL_SLOTS, (12, 0, 0, 512)),  # chunk 1 of row 0
    "unallocated slot": (_D, "128x128b", 32, WINDOW, 0x1, (12, 0, 0, 32)),
    "column 6": (_D, "128x128b", 6, WINDOW, ALL_SLOTS, (13, 6, 0, 0)),
}


@pytest.fixture(scope="module")
def emulated(tmp_path_factory):
    if shutil.which("g++") is None:
        pytest.skip("g++ not on PATH")
    d = tmp_path_factory.mktemp("emu_cp")
    (d / "tmem_emulation.cuh").write_text(
        resources.files("tilemagic.codegen").joinpath("tmem_emulation.cuh").read_text())
    smem = np.random.default_rng(14).integers(0, 256, WINDOW, dtype=np.uint8)
    smem.tofile(d / "smem.bin")
    rows = [(_desc(layout, start), CP_SHAPE_ID[key], (lane << 16) | col, WINDOW, ALL_SLOTS)
            for key, layout, start, lane, col in GOOD]
    rows += [(desc, CP_SHAPE_ID[key], taddr, hi, slots) for desc, key, taddr, hi, slots, _ in BAD.values()]
    table = ", ".join("{" + ", ".join(f"{v:#x}ull" for v in r) + "}" for r in rows)
    (d / "driver.cpp").write_text(_DRIVER.replace("CASE_TABLE", table).replace("WINDOW", str(WINDOW)))
    subprocess.run(["g++", "-std=c++17", "-O1", "-o", "driver", "driver.cpp"], cwd=d, check=True,
                   capture_output=True, timeout=300)
    subprocess.run(["./driver"], cwd=d, check=True, timeout=300)
    raw = np.fromfile(d / "dump.bin", np.uint32)
    per = 128 * 512 + 8
    out = [(raw[i * per:i * per + 128 * 512].reshape(128, 512), raw[i * per + 128 * 512:(i + 1) * per].view(np.int32))
           for i in range(len(rows))]
    return smem, dict(zip(GOOD, out[:len(GOOD)])), dict(zip(BAD, out[len(GOOD):]))


@pytest.mark.parametrize("case", GOOD, ids=[f"{k}-L{lay}-s{s}-l{ln}c{c}" for k, lay, s, ln, c in GOOD])
def test_tm_emu_cp_writes_what_the_isa_decoder_and_the_python_walk_say(emulated, case):
    smem, good, _ = emulated
    key, layout, start, lane0, col0 = case
    mem, status = good[case]
    assert status[0] == 0, EMU_STATUS.get(int(status[0]), status).format(*status)
    shape = CP_SHAPES[key]
    desc = _desc(layout, start)
    # the independent decoder from the ISA text (at lane 0, column 0), moved to the address's lane and column
    img = tmem_image(smem.tobytes(), desc, shape.shape, shape.multicast)
    want = np.full((128, 512), SENTINEL, np.uint32)
    lanes, cols = np.nonzero(img != None)  # noqa: E711  (an object array: None where nothing is written)
    want[lanes + lane0, cols + col0] = img[lanes, cols].astype(np.uint32)
    np.testing.assert_array_equal(mem, want)
    # tilemagic's one Python walk gives the same cells
    addr = cp_source_addresses(smem_desc.decode(desc), shape.rows, shape.chunks)
    words = smem.view(np.uint32)
    tl, tc = cp_cells(key, lane0, col0)
    py = np.full((128, 512), SENTINEL, np.uint32)
    for r in range(shape.rows):
        for j in range(shape.chunks):
            for k in range(tl.shape[1]):
                py[tl[r, k], tc[j]] = words[addr[r, j] // 4: addr[r, j] // 4 + 4]
    np.testing.assert_array_equal(mem, py)
    assert (mem != SENTINEL).sum() == shape.rows * len(shape.replicas) * shape.cols  # every cell once


@pytest.mark.parametrize("name", sorted(BAD))
def test_tm_emu_cp_reports_each_error_with_its_status(emulated, name):
    _, _, bad = emulated
    mem, status = bad[name]
    want = BAD[name][-1]
    assert tuple(int(v) for v in status[:4]) == want, EMU_STATUS.get(int(status[0]), "?").format(*status)
    msg = EMU_STATUS[want[0]].format(*status)
    assert msg.startswith("tcgen05.cp") and "{" not in msg
    if want[0] in (10, 13, 14):  # refused before anything is read or written
        assert (mem == SENTINEL).all()
