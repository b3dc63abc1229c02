"""What each choice costs (`--cost`): ptxas resources, SASS by class per op, the SASS view, >255-register tiles."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import warnings

import pytest

import tilemagic
from cells import GMEM_SMEM_CASES, LDSTMATRIX_CASES, gmem_smem_cell, smem_cell
from helpers import run_demo
from tilemagic.arch.sass import CLASS_NAMES, classify, opcode
from tilemagic.runtime import costs
from tilemagic.runtime.costs import find_nvdisasm, parse_nvdisasm, parse_ptxas

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
needs_sass = pytest.mark.skipif(shutil.which("nvcc") is None or find_nvdisasm() is None,
                                reason="nvcc or nvdisasm missing (pip install nvidia-cuda-nvdisasm)")


def _cuobjdump() -> str | None:
    exe = shutil.which("cuobjdump")
    if exe:
        return exe
    d = os.path.dirname(find_nvdisasm() or "")
    p = os.path.join(d, "cuobjdump")
    return p if d and os.path.isfile(p) else None


# ----------------------------------------------------------------------------- parsers (no compiler)
PTXAS_LOG = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'k_op0_v0' for 'sm_100a'
ptxas info    : Function properties for k_op0_v0
    16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 4 bytes smem
ptxas info    : Compile time = 7.520 ms
ptxas info    : Compiling entry function 'k_op0_v1' for 'sm_100a'
ptxas info    : Function properties for k_op0_v1
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 18 registers, used 0 barriers
"""

LISTING = """\t.target\tsm_100a
//--------------------- .text.first      --------------------------
\t.section\t.text.first,"ax",@progbits
first:
\t//## File "/tmp/x/k.cu", line 10
        /*0000*/                   LDC R1, c[0x0][0x37c] ;
\t//## File "/tmp/x/k.cu", line 12
        /*0010*/               @P0 LDS.U8 R0, [R2+0x1c] ;
\t//## File "/usr/include/other.h", line 3
        /*0020*/              @!P1 STS.128 [R37+0x10], R8 ;
.L_x_1:
        /*0030*/                   EXIT ;
        /*0040*/                   NOP;
\t.section\t.text.second,"ax",@progbits
second:
        /*0000*/                   LDSM.16.M88.4 R4, [R2] ;
"""


def test_parse_ptxas():
    res = parse_ptxas(PTXAS_LOG)
    assert res["k_op0_v0"] == costs.Resources(255, 16, 8, 4)
    assert res["k_op0_v1"] == costs.Resources(18, 0, 0, 0)
    assert "16 bytes stack" in res["k_op0_v0"].text() and res["k_op0_v1"].text() == "18 registers"


def test_parse_nvdisasm():
    out = parse_nvdisasm(LISTING)
    ins, lines = out["first"]
    assert [opcode(i) for i in ins] == ["LDC", "LDS.U8", "STS.128", "EXIT"]  # the padding NOP is dropped
    assert lines == (10, 12, None, None)  # a header's line maps to nothing
    assert [opcode(i) for i in out["second"][0]] == ["LDSM.16.M88.4"] and out["second"][1] == (None,)


def test_sass_classes():
    assert [classify(x) for x in ("LDS.U8", "STS.128", "LDSM.16.M88.4", "STSM.16.M88.4", "LDTM.16dp256bit.x32",
                                  "LDG.E.128", "STG.E.128", "LDGSTS.E.128", "UTMALDG.2D", "BAR.SYNC", "IMAD.WIDE",
                                  "CALL.REL.NOINC", "STL.64", "FOO")] == [
        "shared ld", "shared st", "ldmatrix/stmatrix", "ldmatrix/stmatrix", "TMEM ld/st", "global ld", "global st",
        "cp.async", "bulk/TMA", "barrier/sync", "int/address", "call", "local (spill)", "other"]
    assert CLASS_NAMES[-1] == "other" and len(set(CLASS_NAMES)) == len(CLASS_NAMES)


# ----------------------------------------------------------------------------- compiled
def _own_ptxas(cuda: str, arch: str = "sm_100a") -> dict:
    """An independent ptxas run (not through tilemagic) of one CUDA source: registers per kernel."""
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "a.cu"), "w") as f:
            f.write(cuda)
        p = subprocess.run(["nvcc", f"-arch={arch}", "-cubin", "-Xptxas", "-v", "-o", "a.cubin", "a.cu"], cwd=tmp,
                           capture_output=True, text=True, check=True)
        regs = dict(re.findall(r"Compiling entry function '(\w+)'.*?Used (\d+) registers", p.stdout + p.stderr,
                               re.S))
        dump = None
        exe = _cuobjdump()
        if exe:
            dump = subprocess.run([exe, "-sass", os.path.join(tmp, "a.cubin")], capture_output=True, text=True,
                                  check=True).stdout
    return {k: int(v) for k, v in regs.items()}, dump


def _cuobjdump_classes(dump: str) -> dict[str, int]:
    ops = [opcode(line) for line in dump.splitlines() if "/*" in line]
    ops = [o for o in ops if o]
    while ops and ops[-1] == "NOP":
        ops.pop()
    out: dict[str, int] = {}
    for o in ops:
        out[classify(o)] = out.get(classify(o), 0) + 1
    return out


@needs_sass
@pytest.mark.nvcc
@pytest.mark.parametrize("demo", ["fallback_demo", "tmem_roundtrip"])
def test_cost_table_of_the_seed_demos(demo):
    r = run_demo(demo, launch="sim", cost=True)
    rep = r.costs
    assert rep is not None and rep.ops and not rep.log
    assert [o.line for o in rep.ops] == [d.line for d in r.dispatch]
    regs, dump = _own_ptxas(r.cuda)
    for op, rec in zip(rep.ops, r.dispatch):
        first = op.candidates[0]  # the winner first
        assert first.chosen and first.variant == rec.chosen and first.accepted
        assert first.resources.registers == regs[r.kernel.name]  # ptxas's count for the same kernel
        assert first.op_instrs == sum(first.mix.values()) > 0
    # the SASS view of the kernel: its classes are cuobjdump's (an independent disassembler)
    s = r.sass()
    assert s.ok and s.resources.registers == regs[r.kernel.name]
    mine: dict[str, int] = {}
    for line in s.text.splitlines():
        mine[classify(opcode(line))] = mine.get(classify(opcode(line)), 0) + 1
    if dump is not None:
        assert mine == _cuobjdump_classes(dump)
    # every op's line appears in the SASS line map (-lineinfo), and the reports carry the sections
    assert {d.line for d in r.dispatch} <= set(x for x in s.lines if x)
    text, html = r.text(), r.html()
    for title in ("Cost of every candidate", "Shared-memory banks", "SASS"):
        assert f"== {title} " in text
    assert 'class="tm-code tm-sass"' in html and "tm-costs" in html


def _op(rep, text):
    return next(o for o in rep.ops if o.text == text)


@needs_sass
@pytest.mark.nvcc
def test_one_cell_per_variant():
    # gmem_smem: global -> shared with 16-byte vectors
    r = tilemagic.tilecopy(gmem_smem_cell(GMEM_SMEM_CASES[0]), launch="off", cost=True, emit_warnings=False)
    gs = r.costs.ops[0].candidates[0]
    assert gs.variant == "gmem_smem" and gs.chosen
    assert gs.mix.get("global ld", 0) >= 1 and gs.mix.get("shared st", 0) >= 1 and gs.resources.registers > 0
    # ldstmatrix and reg both accept a fragment <- shared copy: the chosen first, both compiled
    layout, rows, cols, scope, threads, dtype = LDSTMATRIX_CASES[0][:6]
    r = tilemagic.tilecopy(smem_cell(layout, rows, cols, scope, threads, dtype), launch="off", cost=True,
                           emit_warnings=False)
    for text, plain in (("warp.copy a <- S", "shared ld"), ("warp.copy U <- a", "shared st")):
        op = _op(r.costs, text)
        names = [c.variant for c in op.candidates if c.accepted]
        assert names[0] == "ldstmatrix" and "reg" in names and op.candidates[0].chosen
        lds = op.candidates[0]
        reg = next(c for c in op.candidates if c.variant == "reg")
        assert lds.mix.get("ldmatrix/stmatrix", 0) >= 1 and plain not in lds.mix
        assert reg.mix.get(plain, 0) >= 1 and "ldmatrix/stmatrix" not in reg.mix and not reg.chosen
    # fallback (scalar, elected thread), reg (global -> registers) and tmem<->local (tcgen05.st / ld)
    fb = run_demo("fallback_demo", launch="off", cost=True).costs.ops[0].candidates[0]
    assert fb.variant == "fallback" and fb.mix.get("shared st", 0) >= 1
    tm = run_demo("tmem_roundtrip", launch="off", cost=True).costs
    assert tm.ops[0].candidates[0].variant == "reg" and tm.ops[0].candidates[0].mix.get("global ld", 0) >= 1
    st = tm.ops[1].candidates[0]
    assert st.variant == "tmem<->local" and st.mix.get("TMEM ld/st", 0) >= 1
    # a variant that does not accept says why (the dispatcher's reason)
    no = next(c for c in tm.ops[0].candidates if c.variant == "fallback")
    assert not no.accepted and "single_thread_reachable" in no.reason


@needs_nvcc
@pytest.mark.nvcc
def test_register_tiles_beyond_255_compile_and_warn():
    """A 128 x 256 fp32 tcgen05 fragment: 256 registers per thread, two .16x256b.x32 per direction; ptxas builds it
    with a stack, and the declaration warns with that cost instead of refusing."""
    src = """kernel wide threads=128
global A: float32[128, 256]
global B: float32[128, 256]
tmem T: float32[128, 256]
local a: float32[128, 256] @ frag(16x256b)
wg.copy a <- A
wg.copy_async T <- a
wait st
cta_sync
wg.copy_async a <- T
wait ld
wg.copy B <- a
check B == A
"""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = tilemagic.tilecopy(src, launch="sim")
    assert r.launch.passed
    assert sum("tcgen05.st.sync.aligned.16x256b.x32.b32" in line for line in r.cuda.splitlines()) == 2
    w = [x for x in caught if "register tile 'a'" in str(x.message)]
    assert len(w) == 1 and w[0].lineno == 5
    m = re.search(r"needs 256 32-bit registers per thread, more than a thread's 255: ptxas builds the kernel with "
                  r"(\d+) registers, (\d+) bytes of stack", str(w[0].message))
    assert m and int(m.group(1)) <= 255 and int(m.group(2)) > 0
    res = r.sass().resources if find_nvdisasm() else costs.compile_unit(r.cuda, "sm_100a").resources["wide"]
    assert res.stack == int(m.group(2))


def test_costs_are_not_paid_without_the_option(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("compiled without --cost")

    monkeypatch.setattr(costs, "compile_unit", boom)
    monkeypatch.setattr(costs, "candidate_costs", boom)
    r = run_demo("fallback_demo", launch="sim")
    assert r.costs is None and "Cost of every candidate" not in r.text()


def test_cost_option_everywhere():
    from tilemagic.options import parse, resolve

    assert resolve(parse("--cost")).cost is True and resolve(parse("--no-cost")).cost is False
    assert resolve().cost is False
    with pytest.raises(tilemagic.TileMagicError):
        tilemagic.tilecopy("%%tilecopy --cost=maybe\nkernel k threads=32\n")


@needs_nvcc
@pytest.mark.nvcc
def test_many_ops_are_bounded(monkeypatch):
    from cells import many_ops_cell

    monkeypatch.setattr(costs, "COST_OPS", 3)
    r = tilemagic.tilecopy(many_ops_cell(3), launch="off", emit_warnings=False)
    rep = costs.candidate_costs(r.typed, r.dispatch, "sm_100a")
    assert len(rep.ops) == 3 and rep.skipped == len(r.dispatch) - 3 > 0
    assert f"… {rep.skipped:,} more ops not compiled (the first 3 are)" in rep.text()


@needs_sass
@pytest.mark.nvcc
def test_the_cost_table_sits_beside_the_why_tables_in_every_view():
    r = run_demo("fallback_demo", launch="sim", cost=True)
    t = r.text()
    assert t.index("== Dispatch") < t.index("== Cost of every candidate") < t.index("== IR")
    assert t.count("== Cost of every candidate") == 1
    h = r.html()
    assert h.index(">Dispatch<") < h.index("Cost of every candidate") < h.index("Description, IR and CUDA")
    view = pytest.importorskip("tilemagic.widgets.view")  # (ipywidgets)
    v = view.WidgetView(r)  # the Dispatch tab holds the table; it has no tab of its own
    assert "Cost of every candidate" in v._render("Dispatch", None)
    assert "Cost of every candidate" not in v.panes
