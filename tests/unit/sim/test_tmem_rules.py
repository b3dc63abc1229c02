"""TMEM rule checks (PTX ISA 9.0 §9.7.16.7, §9.7.16.8.1) in the simulator and in the emulated CUDA.

tilemagic's lowering never emits these violations, so each runs on a kernel built from IR
nodes (tests/cells.py ``tmem_ir_kernel``): the simulator must raise a LaunchError with the
message and the description line; the emulated CUDA must contain the check, assemble with
ptxas, and map the failing call's CUDA line back to the same description line.  The GPU
runs of the same kernels are in tests/gpu/test_gpu_faults.py.
"""

import re
import shutil

import numpy as np
import pytest

import tilemagic
from tilemagic.cli import demo_source

from cells import TMEM_VIOLATIONS, tmem_ir_kernel
from tilemagic.arch.tcgen05 import EMU_STATUS
from tilemagic.codegen.cuda import generate
from tilemagic.errors import LaunchError
from tilemagic.pipeline import run_kernel
from tilemagic.runtime.launch import _trap

CODE = {"quadrant": 6, "outside_columns": 5, "alloc_not_pow2": 1, "alloc_over_512": 1, "alloc_after_relinquish": 2,
        "missing_dealloc": 7, "dealloc_other_warp": 9, "partial_warp": 8, "alloc_never_fits": 3}
# the generated call each check sits behind (the emulated source must contain it)
CALL = {"quadrant": "tm_emu_ldst(tm, 0, 0, 1, get_tmem_addr(tmem_addr[0], 32, 0)",
        "outside_columns": "tm_emu_ldst(tm, 0, 0, 1, get_tmem_addr(tmem_addr[0], 0, 40)",
        "alloc_not_pow2": "tm_emu_alloc(tm, tmem_addr, 48u);", "alloc_over_512": "tm_emu_alloc(tm, tmem_addr, 1024u);",
        "alloc_after_relinquish": "tm_emu_alloc(tm, tmem_addr2, 32u);", "missing_dealloc": "tm_emu_exit_check(tm);",
        "dealloc_other_warp": "if (warpid == 1) {", "partial_warp": "if (laneid < 16) {",
        "alloc_never_fits": "tm_emu_alloc(tm, tmem_addr2, 32u);"}


def test_the_unbroken_kernel_round_trips_strict():
    k, inputs = tmem_ir_kernel()
    out = run_kernel(k, inputs, launch="sim", strict=True).outputs
    np.testing.assert_array_equal(out["B"], inputs["A"])


@pytest.mark.parametrize("violation", list(TMEM_VIOLATIONS))
def test_simulator_reports_the_violation_at_its_line(violation):
    strict, fragment, line = TMEM_VIOLATIONS[violation]
    k, inputs = tmem_ir_kernel(violation)
    with pytest.raises(LaunchError) as ei:
        run_kernel(k, inputs, launch="sim", strict=True)
    err = ei.value
    assert fragment in err.message and (err.line, err.col) == (line, 1)
    assert re.match(_template(CODE[violation]), err.message)  # the emulation's message for the same code
    if strict:  # only --strict flags it; without it the kernel runs (quadrant bits ignored) or the alloc spins
        if violation == "quadrant":
            out = run_kernel(*tmem_ir_kernel(violation), launch="sim", strict=False).outputs
            np.testing.assert_array_equal(out["B"], inputs["A"])


def _template(code):
    """EMU_STATUS[code] as a regex (its {1}, {2}, {3} fields match anything)."""
    parts = re.split(r"\{[^}]*\}", EMU_STATUS[code])
    return "^" + ".+?".join(re.escape(p) for p in parts) + "$"


@pytest.mark.parametrize("violation", list(TMEM_VIOLATIONS))
def test_emulated_source_contains_the_check_and_maps_its_line(violation):
    strict, _, line = TMEM_VIOLATIONS[violation]
    k, _ = tmem_ir_kernel(violation)
    src = generate(k, "emulated", strict=strict)
    text = src.text
    assert f"const TmEmu tm = tm_emu_make(tm_scratch, tm_status, {1 if strict else 0});" in text
    assert f"tm_emu_fail(e, {CODE[violation]}," in text  # the check is in the inlined emulation
    rows = text.splitlines()
    call = next(i for i, row in enumerate(rows) if CALL[violation] in row)
    # a trap reported by that call (tm_status[4] = its __LINE__) is located at the description line
    cuda_line = call + 1
    if violation in ("dealloc_other_warp", "partial_warp"):  # the call is inside the guard
        cuda_line += 1
    status = [CODE[violation], 1, 2, 3, cuda_line, 0, 0, 0]
    if violation == "missing_dealloc":  # found at exit: located at the allocation (tm_status[5])
        status[5] = next(i for i, row in enumerate(rows) if "tm_emu_alloc(tm, tmem_addr, 32u);" in row) + 1
    err = _trap(status, src)
    assert err.line == line, (violation, rows[cuda_line - 1])


@pytest.mark.nvcc
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_emulated_sources_assemble():
    """Every violating kernel's emulated source assembles for sm_90 (one nvcc run: all in one file)."""
    from tilemagic.runtime.nvcc import nvcc_compile

    k, _ = tmem_ir_kernel("alloc_never_fits")
    for strict in (False, True):
        r = nvcc_compile(generate(k, "emulated", strict=strict).text, "sm_90")
        assert r.ok, r.log
    texts = [generate(tmem_ir_kernel(v)[0], "emulated").text for v in ("quadrant", "partial_warp")]
    r = nvcc_compile(texts[0], "sm_90")
    assert r.ok, r.log
    r = nvcc_compile(texts[1], "sm_90")
    assert r.ok, r.log


def test_emulation_spins_unless_strict():
    """A request that does not fit spins like the hardware; --strict reports it (status 3)."""
    text = generate(tmem_ir_kernel()[0], "emulated").text
    body = text[text.index("tm_emu_alloc_at("):text.index("#define tm_emu_alloc(")]
    assert "while (found < 0 && status[0] == 0)" in body
    assert "else if (found < 0 && e.strict) tm_emu_fail(e, 3," in body
    assert "__activemask" not in body  # full warps are proven by the code generator (tm_emu_warp_check)
    for fn in ("tm_emu_relinquish_at", "tm_emu_dealloc_at", "tm_emu_ldst_at"):
        seg = text[text.index(f"void {fn}("):]
        assert "__activemask" not in seg[:seg.index("\n}\n")], fn


def test_warp_check_only_inside_warp_splitting_guards():
    """The run-time full-warp check is emitted before a tcgen05 call inside a guard that splits a
    warp (``if (laneid < 16)``), and nowhere in kernels whose warps provably execute whole
    (warp-uniform guards such as ``if (warpid == 0)`` around the allocation)."""
    text = generate(tmem_ir_kernel("partial_warp")[0], "emulated").text
    rows = text.splitlines()
    guard = next(i for i, row in enumerate(rows) if "if (laneid < 16) {" in row)
    assert "tm_emu_warp_check(tm);" in rows[guard + 1] and "tm_emu_ldst(" in rows[guard + 2]
    assert text.count("tm_emu_warp_check(tm);") == 1
    demo = tilemagic.tilecopy(demo_source("tmem_roundtrip"), launch="off")
    assert "tm_emu_warp_check(tm);" not in demo.cuda_emulated
