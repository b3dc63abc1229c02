"""Predicted shared-memory bank conflicts against Nsight Compute on a GPU (issue 16 §4).

    python benchmarks/bank_conflicts.py --json benchmarks/results/bank_conflicts_h200.json   # ~2-4 min, H200
    python benchmarks/bank_conflicts.py --list                                              # the matrix, no GPU

For every cell of the matrix (:func:`matrix`: shared layouts plain, permuted and swizzled; float32, float16 and
uint8; the copy variants ``gmem_smem``, ``reg``, ``ldstmatrix`` and ``fallback``; the async variants once they
exist), tilemagic predicts every shared-memory instruction's wavefronts and conflicts (``--cost``'s bank report:
the simulator's address trace through the bank model, :mod:`tilemagic.sim.banks`).  The same kernel is then
compiled for the device (``nvcc -cubin -lineinfo -arch=sm_XY``, the native CUDA of the cell: no TMEM in the
matrix) and launched, one CTA, from a child process (``--child``) under Nsight Compute::

    ncu --metrics l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,..._op_st.sum,
                  l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,..._op_st.sum, ...
        --section SourceCounters --import-source yes -o REPORT python bank_conflicts.py --child CASE CUBIN

The kernel's counters (:data:`METRICS`) are compared with the predicted kernel totals; where ncu attributes the
shared wavefronts to SASS instructions (its source page, ``--page source --print-source sass``), they are summed
per description line and direction through the cubin's own ``-lineinfo`` (the same cubin, disassembled by
nvdisasm, :func:`tilemagic.runtime.costs.parse_nvdisasm`) and compared per op.  When ncu is missing or cannot read
the counters (``ERR_NVGPUCTRPERM``: profiling not permitted), the fallback is a ``clock64``-timed
microbenchmark per predicted instruction (:func:`probe_source`): one warp repeats the instruction's worst address
pattern; the cycles per instruction, calibrated on a conflict-free and a 32-way pattern, give the measured
wavefronts, which should show the same ratios.

Everything but the launch is plain Python and tested on the CPU (``tests/bench/test_bank_conflicts_script.py``:
the matrix, the CSV parsers, the attribution, the comparison, the probe source through ptxas); the GPU tests
(``tests/gpu/test_gpu_bank_conflicts.py``, marker ``gpu``) run a few cases under ncu.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass

from common import header, table, use_checkout, write_json

use_checkout()

#: Kernel counters read from ncu (the issue's two conflict counters, the wavefronts, and the ldmatrix pipe).
METRICS = (
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
)
COLUMNS = ("case", "variant", "scope", "what", "pred_wavefronts", "meas_wavefronts", "pred_conflicts",
           "meas_conflicts", "match", "note")


@dataclass(frozen=True)
class Case:
    """One cell of the matrix: ``name`` (unique, a kernel name), the variant it exercises, the description."""

    name: str
    variant: str
    source: str
    #: why the wavefronts may differ (the conflicts must not): the hardware runs other instructions than the IR's
    exception: str = ""


def _named(src: str, name: str) -> str:
    return re.sub(r"^kernel \w+", f"kernel {name}", src.lstrip("\n"), count=1, flags=re.M)


def matrix() -> list[Case]:
    """The cells: every variant with plain, permuted and swizzled shared layouts over fp32 / fp16 / u8."""
    from cells import LDSTMATRIX_CASES, GmemSmemCase, bank_rows_cell, fallback_cell, gmem_smem_cell, smem_cell

    out = []
    gs = [("f16_plain", GmemSmemCase("warp", 32, 8, 64, "float16")),
          ("f16_swz333", GmemSmemCase("warp", 32, 8, 64, "float16", "swizzle(3, 3, 3)")),
          ("f16_perm", GmemSmemCase("warp", 32, 8, 64, "float16", "S[(8, 2, 32) : (32, 256, 1)]")),
          ("f32_colmajor", GmemSmemCase("warp", 32, 8, 16, "float32", "S[(8, 16) : (1, 8)]")),
          ("f32_swz233", GmemSmemCase("wg", 128, 32, 32, "float32", "swizzle(2, 3, 3)")),
          ("u8_plain", GmemSmemCase("wg", 128, 64, 32, "uint8")),
          ("u8_swz433", GmemSmemCase("wg", 128, 64, 64, "uint8", "swizzle(4, 3, 3)"))]
    out += [Case(f"gs_{n}", "gmem_smem", _named(gmem_smem_cell(c), f"gs_{n}")) for n, c in gs]
    for dt, smem in (("float32", ""), ("float32", "swizzle(2, 3, 3)"), ("float16", ""), ("float16", "swizzle(3, 3, 3)"),
                     ("uint8", ""), ("uint8", "swizzle(4, 1, 4)")):
        n = f"reg_{dt}_{'swz' if smem else 'plain'}"
        out.append(Case(n, "reg", _named(bank_rows_cell(dt, smem), n)))
    layout, rows, cols, scope, threads, dtype = LDSTMATRIX_CASES[7][:6]  # warp, float16[16, 64], 4 x ldmatrix.x4
    for b in range(4):
        n = f"ldsm_f16_swz3{b}3"
        out.append(Case(n, "ldstmatrix", _named(smem_cell(layout, rows, cols, scope, threads, dtype,
                                                          f"swizzle(3, {b}, 3)"), n)))
    layout, rows, cols, scope, threads, dtype = LDSTMATRIX_CASES[0][:6]
    out.append(Case("ldsm_f16_plain", "ldstmatrix", _named(smem_cell(layout, rows, cols, scope, threads, dtype),
                                                           "ldsm_f16_plain")))
    merged = ("nvcc merges the elected thread's consecutive 32-bit shared accesses into 128-bit ones (STS.128 / "
              "LDS.128 in the SASS); the model counts the IR's scalar accesses: 4x the wavefronts, the same conflicts")
    out.append(Case("fb_f32", "fallback", _named(fallback_cell("warp", 32, 4, 6), "fb_f32"), merged))
    out.append(Case("fb_f32_cta", "fallback", _named(fallback_cell("cta", 64, 8, 12), "fb_f32_cta"), merged))
    return out


# ----------------------------------------------------------------------------- prediction
def predict(case: Case, arch: str):
    """tilemagic's view of a case: ``(result, per-op predictions, kernel totals)``.

    Per op: ``{(line, kind): {"wavefronts", "conflicts", "instr"}}`` with ``kind`` ``"ld"``/``"st"`` (a line's
    instructions of one direction summed: SASS is attributed to lines, not to IR statements).
    """
    import tilemagic

    r = tilemagic.tilecopy(case.source, launch="off", arch=arch, cost=True, emit_warnings=False)
    per: dict[tuple, dict] = {}
    for a in r.banks.accesses:
        d = per.setdefault((a.line, a.kind), dict(wavefronts=0, conflicts=0, instr=[]))
        d["wavefronts"] += a.wavefronts
        d["conflicts"] += a.conflicts
        d["instr"].append(a.instr)
    return r, per, r.banks.totals()


# ----------------------------------------------------------------------------- ncu output
def _number(s: str) -> float | None:
    s = (s or "").strip().replace(",", "")
    try:
        return float(s)
    except ValueError:
        return None


def parse_metrics_csv(text: str) -> dict[str, dict[str, float | None]]:
    """``ncu --csv --page raw`` / ``--metrics`` output: ``kernel name -> metric -> value`` (one row per metric,
    columns ``Kernel Name``, ``Metric Name``, ``Metric Value``; or one row per kernel with a column per metric).
    Values with thousands separators parse; ``n/a`` is None.  Lines before the CSV header (ncu's ``==PROF==``
    messages, the program's output) are skipped."""
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"') or ln.startswith("ID,")), None)
    if start is None:
        return {}
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    head, body = rows[0], [r for r in rows[1:] if len(r) == len(rows[0])]
    out: dict[str, dict[str, float | None]] = {}
    if "Metric Name" in head:
        k, m, v = head.index("Kernel Name"), head.index("Metric Name"), head.index("Metric Value")
        for r in body:
            out.setdefault(r[k], {})[r[m]] = _number(r[v])
        return out
    k = head.index("Kernel Name")
    for r in body:
        if _number(r[0]) is None:  # (the raw page's second line holds units)
            continue
        out[r[k]] = {h: _number(x) for h, x in zip(head, r) if h.startswith(("l1tex__", "smsp__", "sm__"))}
    return out


def parse_source_csv(text: str) -> list[dict]:
    """``ncu -i REPORT --csv --page source --print-source sass`` output: one dict per SASS instruction with
    ``address`` (int), ``source`` (the SASS text) and, where ncu has them, ``wavefronts`` (``L1 Wavefronts Shared``),
    ``ideal`` (``L1 Wavefronts Shared Ideal``) and ``excessive`` (``L1 Wavefronts Shared Excessive``).  [] when the
    page has no such columns (the per-kernel comparison still runs)."""
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if "Address" in ln and "Source" in ln), None)
    if start is None:
        return []
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    head = rows[0]

    def col(pattern):
        return next((i for i, h in enumerate(head) if re.fullmatch(pattern, h.strip(), re.I)), None)

    ia, isrc = col(r"(# )?Address"), col(r"Source")
    iw, ii = col(r"L1 Wavefronts Shared"), col(r"L1 Wavefronts Shared Ideal")
    ie = col(r"L1 Wavefronts Shared Excessive")
    if ia is None or isrc is None or iw is None:
        return []
    out = []
    for r in rows[1:]:
        if len(r) != len(head):
            continue
        try:
            addr = int(r[ia].strip(), 16)  # (ncu prints addresses in hex, with or without 0x)
        except ValueError:
            continue
        out.append(dict(address=addr, source=r[isrc].strip(), wavefronts=_number(r[iw]) or 0.0,
                        ideal=_number(r[ii]) if ii is not None else None,
                        excessive=_number(r[ie]) if ie is not None else None))
    return out


_ADDR = re.compile(r"/\*([0-9a-f]{4,})\*/")


def attribute(rows: list[dict], listing: tuple, cuda_lines) -> dict[tuple, dict]:
    """ncu's per-SASS shared wavefronts summed per ``(description line, "ld"/"st")``.

    Parameters
    ----------
    rows : list of dict
        :func:`parse_source_csv`.
    listing : (instruction lines, CUDA line per instruction)
        The same cubin's nvdisasm listing of the kernel (:func:`tilemagic.runtime.costs.parse_nvdisasm`).
    cuda_lines : sequence of int or None
        The CUDA source's description line per line.
    """
    from tilemagic.arch.sass import classify, opcode

    where = {}
    for text, cl in zip(*listing):
        m = _ADDR.search(text)
        if m:
            desc = cuda_lines[cl - 1] if cl is not None and 0 < cl <= len(cuda_lines) else None
            op = opcode(text) or ""
            cls = classify(op)
            kind = "ld" if cls == "shared ld" or op.startswith("LDSM") else \
                "st" if cls == "shared st" or op.startswith("STSM") else None
            where[int(m.group(1), 16)] = (desc, kind)
    out: dict[tuple, dict] = {}
    base = min((r["address"] for r in rows), default=0)  # (ncu: virtual addresses; nvdisasm: offsets in the kernel)
    for r in rows:
        desc, kind = where.get(r["address"] - base, (None, None))
        if kind is None or not r["wavefronts"]:
            continue
        d = out.setdefault((desc, kind), dict(wavefronts=0.0, ideal=0.0, excessive=0.0))
        d["wavefronts"] += r["wavefronts"]
        d["ideal"] += r["ideal"] or 0.0
        d["excessive"] += r["excessive"] or 0.0
    return out


def compare(case: Case, per_pred: dict, totals: dict, kernel_metrics: dict | None, per_meas: dict | None) -> list:
    """Table rows: one per op line and direction (where ncu attributed them) and the kernel's totals."""
    rows = []
    if per_meas is not None:
        for (line, kind), p in sorted(per_pred.items(), key=lambda kv: (kv[0][0] or 0, kv[0][1])):
            m = per_meas.get((line, kind))
            mw = None if m is None else int(round(m["wavefronts"]))
            mc = None if m is None else int(round(m["excessive"] if m["excessive"] is not None else
                                                  m["wavefronts"] - m["ideal"]))
            rows.append(dict(case=case.name, variant=case.variant, scope=f"L{line} {kind}", what=", ".join(p["instr"]),
                             pred_wavefronts=p["wavefronts"], meas_wavefronts=mw, pred_conflicts=p["conflicts"],
                             meas_conflicts=mc, match=mw == p["wavefronts"] and mc == p["conflicts"]))
    if kernel_metrics is not None:
        g = kernel_metrics.get
        for kind in ("ld", "st"):
            mw, mc = g(f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{kind}.sum"), \
                g(f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{kind}.sum")
            pw, pc = totals[f"{kind}_wavefronts"], totals[f"{kind}_conflicts"]
            rows.append(dict(case=case.name, variant=case.variant, scope=f"kernel {kind}", what="ncu op_" + kind,
                             pred_wavefronts=pw, meas_wavefronts=None if mw is None else int(mw),
                             pred_conflicts=pc, meas_conflicts=None if mc is None else int(mc),
                             match=mw is not None and mc is not None and int(mw) == pw and int(mc) == pc))
        mw = g("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum")
        # (shown, not compared: on the H200 it counts 2-3 wavefronts more than op_ld + op_st, which the kernel's own
        # instructions sum to on ncu's source page — traffic outside them)
        rows.append(dict(case=case.name, variant=case.variant, scope="kernel all", what="ncu shared",
                         pred_wavefronts=totals["wavefronts"], meas_wavefronts=None if mw is None else int(mw),
                         pred_conflicts=totals["conflicts"], meas_conflicts=None, match=None,
                         note="info: includes wavefronts outside the kernel's instructions"))
    return rows


# ----------------------------------------------------------------------------- the clock64 fallback
PROBE_REPS = 256
PROBE_UNROLL = 16


def probe_source(access, name: str = "probe") -> str:
    """A one-warp CUDA kernel that times ``access``'s worst address pattern with ``clock64``.

    Every active lane repeats the instruction (``ld``/``st.shared`` of the access's width, or ``ldmatrix`` /
    ``stmatrix``) :data:`PROBE_UNROLL` times per loop trip, for ``reps`` trips, at its recorded address; the
    result is ``out[0]``: cycles of the whole loop.  Independent instructions (``asm volatile``: neither removed
    nor reordered), so the loop is bound by the shared-memory pipe's wavefronts, not by latency.
    Arguments: ``(const unsigned *off /* 64: byte offset per lane, then active flag per lane */,
    unsigned long long *out, int reps)``.
    """
    from tilemagic.arch.ptx import VEC_FORMS

    if access.matrix is not None:
        n = access.matrix
        regs = ", ".join(f"%{i}" for i in range(n))
        outs = ", ".join(f'"=r"(r{i})' for i in range(n))
        ins = ", ".join(f'"r"(r{i})' for i in range(n))
        if access.kind == "ld":
            body = (f'asm volatile("ldmatrix.sync.aligned.m8n8.x{n}.shared.b16 {{{regs}}}, [%{n}];" : {outs} : '
                    f'"r"(a));')
        else:
            body = (f'asm volatile("stmatrix.sync.aligned.m8n8.x{n}.shared.b16 [%0], {{'
                    + ", ".join(f"%{i + 1}" for i in range(n)) + f'}};" :: "r"(a), {ins} : "memory");')
        decl = "unsigned " + ", ".join(f"r{i} = threadIdx.x" for i in range(n)) + ";"
        acc = " ^ ".join(f"r{i}" for i in range(n))
        guard = "true"  # (.aligned: every lane executes it)
    else:
        form, words, cons = VEC_FORMS[access.nbytes]
        ty = "unsigned short" if cons == "h" else "unsigned"
        regs = ", ".join(f"%{i}" for i in range(words))
        vec = f"{{{regs}}}" if words > 1 else "%0"
        if access.kind == "ld":
            outs = ", ".join(f'"={cons}"(r{i})' for i in range(words))
            body = f'asm volatile("ld.shared.{form} {vec}, [%{words}];" : {outs} : "r"(a));'
        else:
            svec = "{" + ", ".join(f"%{i + 1}" for i in range(words)) + "}" if words > 1 else "%1"
            ins = ", ".join(f'"{cons}"(r{i})' for i in range(words))
            body = f'asm volatile("st.shared.{form} [%0], {svec};" :: "r"(a), {ins} : "memory");'
        decl = f"{ty} " + ", ".join(f"r{i} = ({ty})threadIdx.x" for i in range(words)) + ";"
        acc = " ^ ".join(f"(unsigned)r{i}" for i in range(words))
        guard = "act"
    unrolled = "\n        ".join([body] * PROBE_UNROLL)
    return f"""// tilemagic bank probe: {access.instr} (predicted {access.degree}-way)
extern "C" __global__ void __launch_bounds__(32) {name}(const unsigned *off, unsigned long long *out, int reps) {{
    __shared__ __align__(128) unsigned smem[12288];
    for (int i = threadIdx.x; i < 12288; i += 32) smem[i] = i;
    __syncwarp();
    unsigned a = (unsigned)__cvta_generic_to_shared(smem) + off[threadIdx.x];
    bool act = off[32 + threadIdx.x] != 0;
    {decl}
    unsigned acc = 0;
    unsigned long long t0 = clock64();
    if ({guard}) {{
      for (int k = 0; k < reps; ++k) {{
        {unrolled}
        acc ^= {acc};
      }}
    }}
    __syncwarp();
    unsigned long long t1 = clock64();
    if (threadIdx.x == 0) out[0] = t1 - t0;
    out[1 + threadIdx.x] = acc;
}}
"""


def probe_wavefronts(cycles: float, calib: tuple[tuple[int, float], tuple[int, float]]) -> float:
    """Measured wavefronts per instruction from its cycles per instruction and two calibration points
    ``((wavefronts, cycles), (wavefronts, cycles))`` (a line through them: cycles = a + b * wavefronts)."""
    (w0, c0), (w1, c1) = calib
    b = (c1 - c0) / (w1 - w0)
    return (cycles - c0) / b + w0


# ----------------------------------------------------------------------------- the GPU side
def _device_arch() -> str:
    import cupy

    return f"sm_{cupy.cuda.Device().compute_capability}"


def _compile(text: str, arch: str, tmp: str, name: str) -> str:
    cu, cubin = os.path.join(tmp, f"{name}.cu"), os.path.join(tmp, f"{name}.cubin")
    with open(cu, "w") as f:
        f.write(text)
    subprocess.run(["nvcc", f"-arch={arch}", "-cubin", "-lineinfo", "-o", cubin, cu], check=True,
                   capture_output=True, text=True)
    return cubin


def child(argv) -> int:
    """``--child NAME CUBIN SPEC.json``: launch kernel NAME of CUBIN once (1 CTA) with zeroed buffers (the spec:
    threads and the byte size of every argument, in order).  Run under ncu by :func:`run_ncu`."""
    import cupy

    name, cubin, spec_path = argv
    with open(spec_path) as f:
        spec = json.load(f)
    fn = cupy.RawModule(path=cubin).get_function(name)
    args = [cupy.zeros(max(1, n), cupy.uint8) for n in spec["nbytes"]]
    fn((1,), (spec["threads"],), tuple(args))
    cupy.cuda.Device().synchronize()
    return 0


def run_ncu(case: Case, result, arch: str, tmp: str, keep: str | None = None) -> tuple[dict | None, dict | None, str]:
    """The case under ncu: (kernel metrics, per-op wavefronts or None, note)."""
    from tilemagic.codegen.cuda import generate
    from tilemagic.runtime.costs import find_nvdisasm, parse_nvdisasm

    src = generate(result.kernel, "native", arch=arch)
    cubin = _compile(src.text, arch, tmp, case.name)
    spec = os.path.join(tmp, f"{case.name}.json")
    with open(spec, "w") as f:
        json.dump(dict(threads=result.kernel.threads, nbytes=[b.nbytes for b in src.params]
                       + [n * 4 for _, _, n in src.extra_params]), f)
    rep = os.path.join(tmp, case.name)
    cmd = ["ncu", "--clock-control", "none", "--metrics", ",".join(METRICS), "--section", "SourceCounters",
           "--import-source", "yes",
           "-k", case.name, "-f", "-o", rep, sys.executable, os.path.abspath(__file__), "--child", case.name, cubin,
           spec]
    p = subprocess.run(cmd, capture_output=True, text=True)
    log = p.stdout + p.stderr
    if "ERR_NVGPUCTRPERM" in log or p.returncode != 0 or not os.path.exists(rep + ".ncu-rep"):
        return None, None, "ncu: " + (log.strip().splitlines() or ["failed"])[-1]
    raw = subprocess.run(["ncu", "-i", rep + ".ncu-rep", "--csv", "--page", "raw", "--metrics", ",".join(METRICS)],
                         capture_output=True, text=True).stdout
    metrics = parse_metrics_csv(raw).get(case.name) or next(iter(parse_metrics_csv(raw).values()), None)
    srcpage = subprocess.run(["ncu", "-i", rep + ".ncu-rep", "--csv", "--page", "source", "--print-source", "sass"],
                             capture_output=True, text=True).stdout
    rows = parse_source_csv(srcpage)
    per = None
    exe = find_nvdisasm()
    sass = subprocess.run([exe, "-c", "-g", cubin], capture_output=True, text=True).stdout if exe else ""
    if keep:  # (ncu's raw and source pages and the listing, as they came: for the record and for the parsers' tests)
        os.makedirs(keep, exist_ok=True)
        for suffix, text in (("raw.csv", raw), ("source.csv", srcpage), ("sass.txt", sass)):
            with open(os.path.join(keep, f"{case.name}.{suffix}"), "w") as f:
                f.write(text)
    if rows and exe:
        listing = parse_nvdisasm(sass, f"{case.name}.cu")
        if case.name in listing:
            per = attribute(rows, listing[case.name], src.lines)
    return metrics, per, "" if per is not None else "ncu attributed no SASS (per kernel only)"


def run_probes(result, arch: str, tmp: str) -> list[dict]:
    """The clock64 fallback: measured wavefronts per predicted instruction (worst pattern)."""
    import cupy
    import numpy as np

    from tilemagic.arch.banks import count
    from tilemagic.sim.banks import BankAccess

    def cycles(acc) -> float:
        src = probe_source(acc)
        mod = cupy.RawModule(path=_compile(src, arch, tmp, "probe"))
        fn = mod.get_function("probe")
        addr, active, _ = acc.worst
        off = cupy.asarray(np.concatenate([addr, active]).astype(np.uint32))
        out = cupy.zeros(33, cupy.uint64)
        fn((1,), (32,), (off, out, np.int32(PROBE_REPS)))
        best = None
        for _ in range(5):
            fn((1,), (32,), (off, out, np.int32(PROBE_REPS)))
            c = float(out[0].get()) / (PROBE_REPS * PROBE_UNROLL)
            best = c if best is None else min(best, c)
        return best

    def pattern(addr):
        a = BankAccess(None, "ld.shared.u32", "ld", "probe", 4)
        a.worst = (np.asarray(addr, np.int64), np.ones(32, bool), 0)
        return a

    t = np.arange(32)
    calib = ((1, cycles(pattern(4 * t))), (32, cycles(pattern(128 * t))))
    rows = []
    for acc in result.banks.accesses:
        if acc.worst is None:
            continue
        c = cycles(acc)
        per = int(acc.wavefronts // max(1, acc.executions))
        w_pred = int(count(acc.worst[0][None], acc.nbytes, acc.worst[1][None], acc.matrix).wavefronts[0])
        w_meas = probe_wavefronts(c, calib)
        rows.append(dict(scope=f"L{acc.line} {acc.kind}", what=acc.instr, pred_wavefronts=w_pred,
                         meas_wavefronts=round(w_meas, 2), match=abs(w_meas - w_pred) < 0.5,
                         note=f"clock64: {c:.1f} cycles/instr (mean {per} wavefronts over all executions)"))
    return rows


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--child"]:
        return child(argv[1:])
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", help="write the table here (default: $OUT/bank_conflicts.json when $OUT is set)")
    p.add_argument("--list", action="store_true", help="print the matrix and the predictions; no GPU")
    p.add_argument("--only", help="comma-separated case names")
    p.add_argument("--probe", action="store_true", help="use the clock64 microbenchmark even when ncu works")
    p.add_argument("--arch", help="compile target (default: the device's sm_XY)")
    p.add_argument("--keep", help="a folder for ncu's raw and source pages and the nvdisasm listing of each case")
    args = p.parse_args(argv)
    cases = [c for c in matrix() if not args.only or c.name in args.only.split(",")]
    if args.list:
        for c in cases:
            _, per, tot = predict(c, args.arch or "sm_90a")
            print(f"{c.name:22s} {c.variant:10s} wavefronts {tot['wavefronts']:6d}, "
                  f"conflicts ld {tot['ld_conflicts']}, st {tot['st_conflicts']}")
        return 0
    arch = args.arch or _device_arch()
    if arch == "sm_90":
        arch = "sm_90a"
    have_ncu = shutil.which("ncu") is not None and not args.probe
    rows, notes = [], []
    with tempfile.TemporaryDirectory(prefix="tilemagic-banks-") as tmp:
        for c in cases:
            r, per, tot = predict(c, arch)
            metrics = meas = None
            note = "ncu not on PATH" if not have_ncu else ""
            if have_ncu:
                metrics, meas, note = run_ncu(c, r, arch, tmp, args.keep)
            if metrics is None:
                for row in run_probes(r, arch, tmp):
                    rows.append(dict(row, case=c.name, variant=c.variant, note=f"{note}; {row['note']}".strip("; ")))
                continue
            for row in compare(c, per, tot, metrics, meas):
                if row["match"] is False and c.exception and row["meas_conflicts"] == row["pred_conflicts"]:
                    row = dict(row, match="exception", note=c.exception)
                rows.append(dict(row, note="; ".join(x for x in (row.get("note"), note) if x)))
            if note:
                notes.append(f"{c.name}: {note}")
    for r in rows:
        r["match"] = "-" if r["match"] is None else r["match"] if isinstance(r["match"], str) else \
            "yes" if r["match"] else "NO"
    head = dict(header(), arch=arch, ncu=shutil.which("ncu") is not None)
    print(f"bank conflicts, predicted vs measured — {head['date']}, commit {head['commit']}, {arch}")
    print(table(rows, COLUMNS))
    bad = [r for r in rows if r["match"] == "NO"]
    excused = [r for r in rows if r["match"] == "exception"]
    compared = [r for r in rows if r["match"] != "-"]
    print(f"{len(compared) - len(bad) - len(excused)} of {len(compared)} compared rows match" +
          (f"; {len(excused)} listed exceptions (their reasons in the note column)" if excused else "") +
          (f"; {len(bad)} mismatches" if bad else ""))
    out = args.json or (os.path.join(os.environ["OUT"], "bank_conflicts.json") if os.environ.get("OUT") else None)
    if out:
        write_json(out, dict(head, rows=rows, notes=notes))
        print(f"JSON: {out}")
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
