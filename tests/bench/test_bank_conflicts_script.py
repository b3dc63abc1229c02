"""benchmarks/bank_conflicts.py without a GPU: the matrix, ncu's CSV parsed, the attribution of SASS counters to
description lines through the real cubin's -lineinfo, the comparison, and the clock64 probe through ptxas."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import tilemagic
from tilemagic.runtime.costs import find_nvdisasm, parse_nvdisasm

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
needs_sass = pytest.mark.skipif(shutil.which("nvcc") is None or find_nvdisasm() is None,
                                reason="nvcc or nvdisasm missing")


@pytest.fixture(scope="module")
def bc():
    sys.path.insert(0, str(BENCH))
    try:
        import bank_conflicts

        yield bank_conflicts
    finally:
        sys.path.remove(str(BENCH))


def test_matrix_covers_variants_dtypes_and_layouts(bc):
    cases = bc.matrix()
    assert len({c.name for c in cases}) == len(cases)
    assert {c.variant for c in cases} == {"gmem_smem", "reg", "ldstmatrix", "fallback"}
    text = "\n".join(c.source for c in cases)
    for dt in ("float32", "float16", "uint8"):
        assert f": {dt}[" in text
    assert "swizzle(" in text and "S[(8, 2, 32) : (32, 256, 1)]" in text  # swizzled and permuted shared layouts
    for c in cases:  # each cell lowers, its kernel is the case's name and the variant it is for is chosen
        r = tilemagic.tilecopy(c.source, launch="off", emit_warnings=False)
        assert r.kernel.name == c.name and c.variant in {d.chosen for d in r.dispatch}


METRICS_CSV = '''==PROF== Connected to process 4242
==PROF== Profiling "reg_float32_plain": 0%....50%....100% - 1 pass
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","4242","python","h","reg_float32_plain","1","7","(32, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum","","0"
"0","4242","python","h","reg_float32_plain","1","7","(32, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum","","224"
"0","4242","python","h","reg_float32_plain","1","7","(32, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum","","32"
"0","4242","python","h","reg_float32_plain","1","7","(32, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum","","256"
"0","4242","python","h","reg_float32_plain","1","7","(32, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","l1tex__data_pipe_lsu_wavefronts_mem_shared.sum","","1,288"
"0","4242","python","h","reg_float32_plain","1","7","(32, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum","","n/a"
'''

RAW_CSV = '''"ID","Process ID","Kernel Name","l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum","l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"
"","","","","request"
"0","1","k","1,024","12"
'''


def test_parse_metrics_csv(bc):
    m = bc.parse_metrics_csv(METRICS_CSV)["reg_float32_plain"]
    assert m["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"] == 224
    assert m["l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"] == 1288  # thousands separator
    assert m["l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"] is None  # n/a
    raw = bc.parse_metrics_csv(RAW_CSV)
    assert raw == {"k": {"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum": 1024.0,
                         "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": 12.0}}
    assert bc.parse_metrics_csv("==ERROR== ERR_NVGPUCTRPERM - no permission\n") == {}


def _source_csv(rows):
    head = '"# Address","Source","Warp Stall Sampling (All Samples)","L1 Wavefronts Shared Excessive",' \
           '"L1 Wavefronts Shared","L1 Wavefronts Shared Ideal"'
    body = [f'"{a:#x}","{src}","0","{e}","{w}","{i}"' for a, src, w, i, e in rows]
    return "\n".join(["some banner", head] + body) + "\n"


def test_parse_source_csv(bc):
    rows = bc.parse_source_csv(_source_csv([(0x140, "STS.128 [R37], R4", 32, 4, 28), (0x150, "EXIT", 0, 0, 0)]))
    assert rows[0] == dict(address=0x140, source="STS.128 [R37], R4", wavefronts=32.0, ideal=4.0, excessive=28.0)
    assert len(rows) == 2
    assert bc.parse_source_csv("no table here") == []


@needs_sass
@pytest.mark.nvcc
def test_attribution_through_the_cubins_lineinfo_and_the_comparison(bc, tmp_path):
    case = next(c for c in bc.matrix() if c.name == "reg_float32_plain")
    r, per, tot = bc.predict(case, "sm_90a")
    assert per[(7, "st")]["wavefronts"] == 256 and per[(7, "st")]["conflicts"] == 224
    from tilemagic.codegen.cuda import generate

    src = generate(r.kernel, "native", arch="sm_90a")
    cubin = bc._compile(src.text, "sm_90a", str(tmp_path), case.name)
    listing = parse_nvdisasm(subprocess.run([find_nvdisasm(), "-c", "-g", cubin], capture_output=True, text=True,
                                            check=True).stdout, f"{case.name}.cu")[case.name]
    # what ncu would say if the model is right: 8-way 16-byte stores (32 wavefronts, 4 ideal), conflict-free loads
    base = 0x7FF5_8179_0000  # (ncu names instructions by virtual address, from the kernel's first one)
    rows = []
    for text, _ in zip(*listing):
        a = base + int(re.search(r"/\*([0-9a-f]+)\*/", text).group(1), 16)
        if " STS.128 " in f" {text} ":
            rows.append((a, text, 32, 4, 28))
        elif " LDS.128 " in f" {text} ":
            rows.append((a, text, 4, 4, 0))
        elif a == base:
            rows.append((a, text, 0, 0, 0))
    assert len(rows) == 17  # the kernel's first instruction, the 8 stores and 8 loads of the two ops
    meas = bc.attribute(bc.parse_source_csv(_source_csv(rows)), listing, src.lines)
    assert meas == {(7, "st"): dict(wavefronts=256.0, ideal=32.0, excessive=224.0),
                    (9, "ld"): dict(wavefronts=32.0, ideal=32.0, excessive=0.0)}
    metrics = bc.parse_metrics_csv(METRICS_CSV)["reg_float32_plain"]
    out = bc.compare(case, per, tot, metrics, meas)
    assert [(x["scope"], x["match"]) for x in out] == [("L7 st", True), ("L9 ld", True), ("kernel ld", True),
                                                       ("kernel st", True), ("kernel all", None)]
    assert out[-1]["meas_wavefronts"] == 1288  # (the all-shared counter: shown, not compared)
    wrong = dict(meas)
    wrong[(7, "st")] = dict(wavefronts=64.0, ideal=32.0, excessive=32.0)
    assert not bc.compare(case, per, tot, None, wrong)[0]["match"]


@needs_sass
@pytest.mark.nvcc
def test_probe_kernels_assemble(bc, tmp_path):
    """The clock64 fallback's kernel for every kind of instruction of the matrix (ptxas for sm_90a)."""
    seen = {}
    for case in bc.matrix():
        if case.name not in ("reg_uint8_plain", "reg_float32_plain", "ldsm_f16_swz303", "gs_f16_perm", "fb_f32"):
            continue
        r, _, _ = bc.predict(case, "sm_90a")
        for a in r.banks.accesses:
            seen.setdefault((a.instr, a.kind), a)
    assert {k for _, k in seen} == {"ld", "st"} and any(a.matrix for a in seen.values())
    for i, a in enumerate(seen.values()):
        src = bc.probe_source(a)
        assert f"{a.instr.split('.shared')[0].split('.sync')[0]}" in src
        bc._compile(src, "sm_90a", str(tmp_path), f"probe{i}")
        assert os.path.exists(tmp_path / f"probe{i}.cubin")


def test_probe_calibration(bc):
    calib = ((1, 10.0), (32, 134.0))  # 4 cycles per wavefront, 6 of overhead
    assert bc.probe_wavefronts(38.0, calib) == pytest.approx(8.0)
    assert bc.probe_wavefronts(10.0, calib) == pytest.approx(1.0)


@needs_sass
@pytest.mark.nvcc
def test_list_without_a_gpu(bc, capsys):
    assert bc.main(["--list", "--only", "fb_f32,reg_float32_plain"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"reg_float32_plain\s+reg\s+wavefronts\s+288, conflicts ld 0, st 224", out)
    assert re.search(r"fb_f32\s+fallback\s+wavefronts\s+48, conflicts ld 0, st 0", out)


DATA = Path(__file__).resolve().parent / "data"


def test_attribution_of_a_real_h200_source_page(bc):
    """ncu 2025.3.1's source page and nvdisasm's listing of one H200 run (``--keep``, ldsm_f16_swz313): ncu names
    instructions by virtual address, nvdisasm by offset in the kernel; every op's wavefronts and conflicts then
    match the prediction, and the op sums are ncu's op_ld / op_st kernel counters."""
    case = next(c for c in bc.matrix() if c.name == "ldsm_f16_swz313")
    r, per, tot = bc.predict(case, "sm_90a")
    from tilemagic.codegen.cuda import generate

    src = generate(r.kernel, "native", arch="sm_90a")
    listing = parse_nvdisasm((DATA / f"{case.name}.sass.txt").read_text(), f"{case.name}.cu")[case.name]
    rows = bc.parse_source_csv((DATA / f"{case.name}.source.csv").read_text())
    assert rows and min(r_["address"] for r_ in rows) > 1 << 40  # (absolute addresses)
    meas = bc.attribute(rows, listing, src.lines)
    metrics = bc.parse_metrics_csv((DATA / f"{case.name}.raw.csv").read_text())[case.name]
    out = bc.compare(case, per, tot, metrics, meas)
    assert [x["scope"] for x in out if x["match"]] == ["L8 st", "L10 ld", "L12 st", "L14 ld", "kernel ld", "kernel st"]
    assert all(x["match"] for x in out if x["match"] is not None)
    assert sum(m["wavefronts"] for (_, k), m in meas.items() if k == "ld") == \
        metrics["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"]
