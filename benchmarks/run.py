"""CPU benchmarks of tilemagic (issue 6): one table, optionally JSON and the simulator plot.

    python benchmarks/run.py                                   # everything, 7 repeats (~2 min)
    python benchmarks/run.py --json bench.json --plot docs/images/simulator_scaling.png
    python benchmarks/run.py --only lower,cell --repeats 3
    python benchmarks/run.py --profile                         # + cProfile of a cell, printed

Sections (``--only``):

``lower``
    Lowering speed against TVM, per cell (the seed demos and fifteen cells of tests/cells.py: reg,
    gmem_smem, ldstmatrix, fallback, tcgen05 .32x32b, .16x64b/.16x128b/.16x256b, data paths F and
    B).  tilemagic: ``tilecopy(src, launch="off")`` — parse, check, dispatch, lower, hazard
    check, printed IR, native CUDA (and the emulated CUDA of a TMEM kernel).  TVM (apache-tvm
    0.27): the exported TVMScript (tilemagic's exporter, not timed) through
    ``tvm.script.from_source`` + ``LowerTIRx`` under
    ``Target({"kind": "cuda", "arch": "sm_100a"})``; and ``from_source`` + ``tvm.compile(...,
    tir_pipeline="tirx")`` (which runs LowerTIRx again and the CUDA codegen; no NVRTC).  A TMEM
    kernel's ``tvm.compile`` uses the export with constant TMEM addresses (the shared-memory
    address does not get through this wheel's MakePackedAPI).  The three are interleaved repeat
    by repeat after a warm-up, in one process, so machine load hits both sides alike.
``cell``
    A ``%%tilecopy`` cell as a notebook runs it: IPython's ``run_cell_magic`` (``--launch sim``:
    lowering + simulator round trip + checks) and the display formatter (text, HTML with the
    heatmap PNG).  ``warm``: the same cell again; ``edited``: the kernel renamed each time (a new
    kernel: heatmap drawn again); ``first``: the first cell of the process.
``import``
    ``import tilemagic`` in fresh interpreters: wall time, and that CuPy, matplotlib.pyplot and
    ipywidgets are not imported.
``cache``
    tilemagic's side of the compile cache: the in-memory key of a launch (sha256 of the CUDA
    source).  NVRTC and CuPy's disk cache are timed on the GPU (benchmarks/gpu_bench.py).
``sim``
    The simulator on a 128 x N fp32 TMEM round trip (global -> registers -> ``tcgen05.st
    .32x32b.x(N/4)`` through four column windows -> ``tcgen05.ld`` -> global) for N = 64 ... 512;
    linear fit.
``memory``
    Peak RSS and traced allocations of the 128 x 512 cell in a fresh interpreter, and what its
    result keeps, against the tile's bytes.

Absolute times on a shared machine are noise: compare the ratios, measured side by side.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import warnings
from pathlib import Path

from common import ROOT, fmt, header, median, table, timed_ms, use_checkout, write_json

use_checkout()

from cells import tmem_windows_cell  # noqa: E402  (tests/cells.py, after use_checkout)

SECTIONS = ("lower", "cell", "import", "cache", "sim", "memory")
COLUMNS = ("section", "case", "tilemagic", "reference", "ratio", "target", "met")
LOWER_TARGET = 0.1  # tilemagic <= 1/10 of TVM
CELL_TARGET_MS = 150.0
SIM_TARGET_MS = 30.0
SIM_COLS = (64, 128, 256, 512)


# ----------------------------------------------------------------------------- cells
def lowering_cells() -> dict:
    """The demos and fifteen cells of tests/cells.py, by name (all exportable to TVMScript)."""
    from cells import (F_HALVES_CELL, FALLBACK_CASES, GMEM_SMEM_CASES, LDSTMATRIX_CASES, REG_CASES, Tcgen05Case,
                       fallback_cell, gmem_smem_cell, reg_cell, roundtrip_cell, smem_cell)

    from tilemagic.cli import DEMOS, demo_source

    out = {f"demo {d}": demo_source(d) for d in DEMOS}
    out.update({
        "reg 128x8 f32 (tid_in_wg)": reg_cell(*REG_CASES[1][:6]),
        "reg frag(32x32b) 128x32 f32": reg_cell(*REG_CASES[11][:6]),
        "gmem_smem warp 8x64 f16": gmem_smem_cell(GMEM_SMEM_CASES[0]),
        "gmem_smem wg 64x32 u8": gmem_smem_cell(GMEM_SMEM_CASES[8]),
        "ldstmatrix x4 16x16 f16": smem_cell(*LDSTMATRIX_CASES[0][:7]),
        "ldstmatrix x4.trans 16x16 f16": smem_cell(*LDSTMATRIX_CASES[1][:7]),
        "fallback wg 4x6 f32": fallback_cell(*FALLBACK_CASES[2]),
        "fallback cta256 4x8 f32": fallback_cell(*FALLBACK_CASES[4]),
        "tcgen05 .32x32b.x32 f32": roundtrip_cell("float32", 32),
        "tcgen05 .32x32b.x32 bf16": roundtrip_cell("bfloat16", 64),
        # the .16x*b shapes and data paths F and B (each case also dumps TMEM with .32x32b)
        "tcgen05 .16x256b.x4 f32, 128 rows": Tcgen05Case("16x256b", 4, "float32", "D128", "st").source,
        "tcgen05 .16x64b.x8 f16, datapath F": Tcgen05Case("16x64b", 8, "float16", "F0", "st").source,
        "tcgen05 .16x128b.x4 bf16, 64 rows (ld)": Tcgen05Case("16x128b", 4, "bfloat16", "D64", "ld").source,
        "tcgen05 datapath B .32x32b.x16 f32": Tcgen05Case("32x32b", 16, "float32", "B", "st").source,
        "tcgen05 both F halves (.16x64b.x16)": F_HALVES_CELL,
    })
    return out


def _quiet(fn, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*a, **k)


# ----------------------------------------------------------------------------- lower
def bench_lower(repeats: int):
    import tilemagic
    from tilemagic.export.tvmscript import export_tvmscript

    try:
        import tvm
    except ImportError as e:
        return [dict(section="lower", case="TVM", tilemagic=None, reference=None,
                     target=f"skipped: apache-tvm not importable ({e})")], {}
    target = tvm.target.Target({"kind": "cuda", "arch": "sm_100a"})

    def tvm_lower(text):
        mod = tvm.IRModule({"main": tvm.script.from_source(text)})
        with target:
            return tvm.tirx.transform.LowerTIRx()(mod)

    def tvm_cuda(text):
        mod = tvm.IRModule({"main": tvm.script.from_source(text)})
        with target:
            rt = tvm.compile(mod, target=target, tir_pipeline="tirx")
        return "\n".join(m.inspect_source() for m in rt.mod.imports)

    rows, raw = [], {}
    for name, src in lowering_cells().items():
        res = _quiet(tilemagic.tilecopy, src, launch="off", emit_warnings=False)
        shared = export_tvmscript(res.program, res.typed, res.dispatch, kernel=res.kernel).text
        const = export_tvmscript(res.program, res.typed, res.dispatch, tmem_base="const", kernel=res.kernel).text \
            if res.kernel.tmem_cols else shared
        cuda = _quiet(tvm_cuda, const)  # warm-up of all three, and the CUDA is real
        assert "__global__" in cuda, name
        _quiet(tvm_lower, shared)
        tm, tl, tc = [], [], []
        for _ in range(repeats):
            tm.append(timed_ms(lambda: _quiet(tilemagic.tilecopy, src, launch="off", emit_warnings=False)))
            tl.append(timed_ms(lambda: _quiet(tvm_lower, shared)))
            tc.append(timed_ms(lambda: _quiet(tvm_cuda, const)))
        m, ml, mc = median(tm), median(tl), median(tc)
        raw[name] = {"tilemagic_ms": tm, "tvm_lower_ms": tl, "tvm_cuda_ms": tc,
                     "variants": sorted({d.chosen for d in res.dispatch})}
        rows.append(dict(section="lower", case=f"{name}: ms (TVM parse+LowerTIRx / +CUDA)", tilemagic=m,
                         reference=f"{fmt(ml)} / {fmt(mc)}", ratio=f"{m / ml:.3f} / {m / mc:.3f}",
                         target=f"<= {LOWER_TARGET} (vs +CUDA)", met=m / mc <= LOWER_TARGET))
    r_low = [median(v["tilemagic_ms"]) / median(v["tvm_lower_ms"]) for v in raw.values()]
    r_cuda = [median(v["tilemagic_ms"]) / median(v["tvm_cuda_ms"]) for v in raw.values()]
    rows.append(dict(section="lower", case=f"all {len(raw)} cells vs TVM parse+LowerTIRx+CUDA: worst (median) ratio",
                     ratio=f"{max(r_cuda):.3f} ({statistics.median(r_cuda):.3f})", target=f"<= {LOWER_TARGET}",
                     met=max(r_cuda) <= LOWER_TARGET))
    rows.append(dict(section="lower", case=f"all {len(raw)} cells vs TVM parse+LowerTIRx only: worst (median) ratio",
                     ratio=f"{max(r_low):.3f} ({statistics.median(r_low):.3f})", target=f"<= {LOWER_TARGET}",
                     met=max(r_low) <= LOWER_TARGET))
    return rows, {"cells": raw, "tvm_version": tvm.__version__}


# ----------------------------------------------------------------------------- cell
def _shell():
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    ip.extension_manager.load_extension("tilemagic")
    fmtr = ip.display_formatter
    fmtr.active_types = list(fmtr.format_types)  # as a notebook kernel: text, HTML, PNG ...
    return ip


def _run_cell(ip, line: str, body: str):
    """One notebook cell: the magic, then the display formatter on its result (``(total_ms, bundle)``)."""
    import time

    t0 = time.perf_counter()
    res = _quiet(ip.run_cell_magic, "tilecopy", line, body)
    bundle, _ = ip.display_formatter.format(res)
    ms = (time.perf_counter() - t0) * 1e3
    assert "text/html" in bundle and res.launch.passed
    return ms, res


def _split(src: str):
    first, _, body = src.partition("\n")
    return first[len("%%tilecopy"):].strip() + " --launch sim", body


def bench_cell(repeats: int, profile: bool = False):
    ip = _shell()
    try:
        return _bench_cells(ip, repeats, profile)
    finally:
        from IPython.core.interactiveshell import InteractiveShell

        ip.extension_manager.unload_extension("tilemagic")
        InteractiveShell.clear_instance()


def _bench_cells(ip, repeats, profile):
    from tilemagic.cli import DEMOS, demo_source

    rows, raw = [], {}
    first = None
    for name in DEMOS:
        line, body = _split(demo_source(name))
        cold, _ = _run_cell(ip, line, body)
        first = cold if first is None else first
        warm = [_run_cell(ip, line, body)[0] for _ in range(repeats)]
        edited = [_run_cell(ip, line, body.replace(f"kernel {name} ", f"kernel {name}_e{i} "))[0]
                  for i in range(repeats)]
        raw[name] = {"first_ms": cold, "warm_ms": warm, "edited_ms": edited}
        for kind, xs in (("warm (unchanged re-run)", warm), ("edited (new kernel)", edited)):
            rows.append(dict(section="cell", case=f"{name} {kind}: ms", tilemagic=median(xs),
                             target=f"<= {CELL_TARGET_MS:g}", met=median(xs) <= CELL_TARGET_MS))
    rows.append(dict(section="cell", case="first cell of the process (imports matplotlib ...): ms", tilemagic=first))
    if profile:
        _profile(ip, DEMOS[0], demo_source(DEMOS[0]))
    return rows, raw


def _profile(ip, name, src):
    import cProfile
    import pstats

    line, body = _split(src)
    for kind, text in (("warm", body), ("edited", None)):
        pr = cProfile.Profile()
        for i in range(5):
            b = text if text is not None else body.replace(f"kernel {name} ", f"kernel {name}_p{i} ")
            pr.enable()
            _run_cell(ip, line, b)
            pr.disable()
        print(f"\ncProfile of 5 {kind} runs of {name} (cumulative, top 15):")
        pstats.Stats(pr, stream=sys.stdout).sort_stats("cumulative").print_stats(15)


# ----------------------------------------------------------------------------- import
IMPORT_PROBE = textwrap.dedent("""
    import json, sys, time
    t0 = time.perf_counter()
    import tilemagic
    dt = time.perf_counter() - t0
    heavy = ("cupy", "matplotlib.pyplot", "ipywidgets", "matplotlib", "IPython", "tvm", "lark")
    print(json.dumps({"ms": dt * 1e3, "loaded": [m for m in heavy if m in sys.modules]}))
""")


def bench_import(repeats: int):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    runs = []
    for _ in range(max(3, repeats)):
        out = subprocess.run([sys.executable, "-c", IMPORT_PROBE], capture_output=True, text=True, env=env,
                             cwd=tempfile.gettempdir(), check=True).stdout
        runs.append(json.loads(out.strip().splitlines()[-1]))
    loaded = sorted({m for r in runs for m in r["loaded"]})
    forbidden = [m for m in loaded if m in ("cupy", "matplotlib.pyplot", "ipywidgets")]
    rows = [dict(section="import", case="import tilemagic (fresh interpreter): ms",
                 tilemagic=median([r["ms"] for r in runs])),
            dict(section="import", case="cupy / matplotlib.pyplot / ipywidgets imported",
                 tilemagic=", ".join(forbidden) or "none", reference="also loaded: " + (", ".join(loaded) or "none"),
                 target="none", met=not forbidden)]
    return rows, {"runs": runs}


# ----------------------------------------------------------------------------- cache
def bench_cache(repeats: int):
    import tilemagic
    from tilemagic.codegen.cuda import generate
    from tilemagic.runtime import nvrtc as rt_compile

    kern = _quiet(tilemagic.tilecopy, tmem_windows_cell(512), launch="off", emit_warnings=False).kernel
    src = generate(kern, "emulated", arch="sm_90")
    opts = rt_compile.cupy_options("sm_90")
    n = max(200, 50 * repeats)
    mem = [timed_ms(lambda: rt_compile.cache_key(src.text, src.kernel_name, "sm_90", opts, 0)) for _ in range(n)]
    rows = [dict(section="cache", case=f"memory hit: key of a {len(src.text) // 1024} KiB CUDA source: ms",
                 tilemagic=median(mem))]
    return rows, {"memory_hit_ms": median(mem), "source_bytes": len(src.text)}


# ----------------------------------------------------------------------------- sim
def bench_sim(repeats: int, plot=None):
    import numpy as np

    import tilemagic
    from tilemagic.sim import simulate

    rows, raw = [], {}
    for cols in SIM_COLS:
        res = _quiet(tilemagic.tilecopy, tmem_windows_cell(cols), launch="sim", emit_warnings=False)
        assert res.launch.passed
        inputs = res.launch.inputs
        t = [timed_ms(lambda: simulate(res.kernel, {k: v.copy() for k, v in inputs.items()}))
             for _ in range(repeats)]
        full = [timed_ms(lambda: _quiet(tilemagic.tilecopy, tmem_windows_cell(cols), launch="sim", emit_warnings=False))
                for _ in range(repeats)]
        kib = 128 * cols * 4 / 1024
        raw[cols] = {"tile_kib": kib, "simulate_ms": t, "tilecopy_sim_ms": full,
                     "instructions": sorted({d.summary.split(" at ")[0] for d in res.dispatch
                                             if d.chosen == "tmem<->local"})}
        ok = cols != 512 or median(t) <= SIM_TARGET_MS
        rows.append(dict(section="sim", case=f"128x{cols} fp32 ({kib:g} KiB) TMEM round trip: simulate ms "
                                             f"(whole cell ms)", tilemagic=median(t), reference=fmt(median(full)),
                         target=f"<= {SIM_TARGET_MS:g}" if cols == 512 else "", met=ok if cols == 512 else None))
    x = np.array([raw[c]["tile_kib"] for c in SIM_COLS])
    y = np.array([median(raw[c]["simulate_ms"]) for c in SIM_COLS])
    slope, icpt = np.polyfit(x, y, 1)
    r2 = 1 - float(((y - (slope * x + icpt)) ** 2).sum() / ((y - y.mean()) ** 2).sum())
    rows.append(dict(section="sim", case="linear fit: ms per KiB of tile (intercept ms), R^2", tilemagic=float(slope),
                     reference=f"{icpt:.2f}", ratio=f"R^2 = {r2:.4f}", target="linear", met=r2 >= 0.98))
    if plot:
        _plot(plot, x, y, raw, slope, icpt)
    return rows, {"sizes": raw, "fit": {"ms_per_kib": slope, "intercept_ms": icpt, "r2": r2}}


def _plot(path, x, y, raw, slope, icpt):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.5, 3.4), dpi=110)
    ax = fig.add_subplot()
    for c, kib in zip(SIM_COLS, x):
        ts = raw[c]["simulate_ms"]
        ax.plot([kib] * len(ts), ts, ".", color="#bbbbbb", ms=4)
    ax.plot(x, y, "o", color="#1f77b4", label="median")
    ax.plot(x, slope * x + icpt, "-", color="#ff7f0e", lw=1, label=f"fit: {slope:.3f} ms/KiB + {icpt:.2f} ms")
    ax.axhline(SIM_TARGET_MS, color="#d62728", lw=0.8, ls="--", label=f"target {SIM_TARGET_MS:g} ms (128x512)")
    ax.set_xlabel("tile size (KiB of fp32; 128 x 64 ... 128 x 512)")
    ax.set_ylabel("simulator ms")
    ax.set_title("TMEM round trip in the CPU simulator", fontsize=10)
    ax.set_xticks(x, [f"{k:g}\n128x{c}" for k, c in zip(x, SIM_COLS)], fontsize=8)
    ax.legend(fontsize=8)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, metadata={"Software": None})


# ----------------------------------------------------------------------------- memory
MEMORY_PROBE = textwrap.dedent("""
    import gc, json, resource, sys, tracemalloc, warnings
    sys.path[:0] = [sys.argv[1]]

    def hwm_kib():
        # the address space's peak RSS (VmHWM; ru_maxrss would also count the parent's pages at fork time)
        try:
            with open("/proc/self/status") as f:
                return next(int(ln.split()[1]) for ln in f if ln.startswith("VmHWM:"))
        except (OSError, StopIteration):
            return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    warnings.simplefilter("ignore")
    import tilemagic
    from tilemagic.cli import demo_source
    src = sys.argv[2]
    tilemagic.tilecopy(demo_source("tmem_roundtrip"), launch="sim")  # imports and caches warm
    rss0 = hwm_kib()
    res = tilemagic.tilecopy(src, launch="sim")
    rss1 = hwm_kib()
    del res
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    res = tilemagic.tilecopy(src, launch="sim", seed=1)
    gc.collect()
    cur, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    arrays = {id(a): a.nbytes for d in (res.launch.inputs, res.launch.outputs) for a in d.values()}
    tile = res.launch.inputs["A"].nbytes
    from tilemagic.sim import simulate
    inputs = {k: v.copy() for k, v in res.launch.inputs.items()}
    gc.collect()
    tracemalloc.start()
    sbase = tracemalloc.get_traced_memory()[0]
    out = simulate(res.kernel, inputs)
    scur, speak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(json.dumps({"rss_before_kib": rss0, "rss_peak_kib": rss1, "traced_peak": peak - base,
                      "retained": cur - base, "result_arrays": sum(arrays.values()), "tile": tile,
                      "sim_peak": speak - sbase, "sim_kept": scur - sbase, "passed": res.launch.passed}))
""")


def bench_memory(repeats: int):
    out = subprocess.run([sys.executable, "-c", MEMORY_PROBE, str(ROOT), tmem_windows_cell(512)], capture_output=True,
                         text=True, check=True, cwd=tempfile.gettempdir()).stdout
    m = json.loads(out.strip().splitlines()[-1])
    tile = m["tile"]
    growth = (m["rss_peak_kib"] - m["rss_before_kib"]) * 1024
    rows = [
        dict(section="memory", case="128x512 fp32 cell: peak RSS of the process, MiB (growth over a warmed-up "
                                    "process, x tile)",
             tilemagic=m["rss_peak_kib"] / 1024, reference=f"+{growth / 2**20:.2f} MiB", ratio=f"{growth / tile:.1f}x"),
        dict(section="memory", case="traced peak in the simulator: MiB (x tile; kept: its outputs)",
             tilemagic=m["sim_peak"] / 2**20, reference=f"kept {m['sim_kept'] / 2**20:.2f} MiB",
             ratio=f"{m['sim_peak'] / tile:.1f}x", target="small multiple", met=m["sim_peak"] <= 8 * tile),
        dict(section="memory", case="traced peak during the whole cell: MiB (x tile)",
             tilemagic=m["traced_peak"] / 2**20, ratio=f"{m['traced_peak'] / tile:.1f}x"),
        dict(section="memory", case="kept by the result: MiB (x tile; its input/output arrays)",
             tilemagic=m["retained"] / 2**20, reference=f"arrays {m['result_arrays'] / 2**20:.2f} MiB",
             ratio=f"{m['retained'] / tile:.1f}x", target="small multiple", met=m["retained"] <= 8 * tile),
    ]
    return rows, m


# ----------------------------------------------------------------------------- main
def run(sections, repeats: int, plot=None, profile=False):
    results, rows = {}, []
    for sec in sections:
        fn = {"lower": bench_lower, "cell": bench_cell, "import": bench_import, "cache": bench_cache,
              "sim": bench_sim, "memory": bench_memory}[sec]
        kw = {"plot": plot} if sec == "sim" else {"profile": profile} if sec == "cell" else {}
        r, raw = fn(repeats, **kw)
        rows += r
        results[sec] = raw
        gc.collect()
    for r in rows:
        if isinstance(r.get("met"), bool):
            r["met"] = "yes" if r["met"] else "NO"
    return rows, results


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeats", type=int, default=7, help="timed repeats per measurement (median reported)")
    p.add_argument("--only", default=",".join(SECTIONS), help=f"comma-separated sections of {SECTIONS}")
    p.add_argument("--json", help="also write the table and every timing here")
    p.add_argument("--plot", help="write the simulator scaling plot (PNG) here")
    p.add_argument("--profile", action="store_true", help="print a cProfile of a warm and an edited cell")
    args = p.parse_args(argv)
    sections = [s for s in args.only.split(",") if s]
    bad = [s for s in sections if s not in SECTIONS]
    if bad:
        p.error(f"unknown section(s) {bad}; choose from {SECTIONS}")
    head = header()
    rows, results = run(sections, max(1, args.repeats), args.plot, args.profile)
    print(f"tilemagic CPU benchmarks — {head['date']}, commit {head['commit']}, {head['machine']}, "
          f"medians of {args.repeats} repeats")
    print(table(rows, COLUMNS))
    if args.json:
        write_json(args.json, dict(head, repeats=args.repeats, rows=rows, results=results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
