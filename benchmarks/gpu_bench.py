"""GPU benchmarks of tilemagic (issue 6): ``--bench`` bandwidth against a CuPy copy, and the compile cache.

    python benchmarks/gpu_bench.py            # ~1-2 min on an H200; JSON to $OUT/gpu_bench.json if $OUT is set
    python benchmarks/gpu_bench.py --json bench.json --quick

Everything goes through the product path: ``tilemagic.tilecopy(cell, launch="gpu", bench=True)``, i.e. the
launch worker process, NVRTC, the codegen's grid form of the kernel (the tile replicated over a grid of CTAs,
each CTA on its own tile of large tensors, every CTA's result checked against the single-CTA launch) and CUDA
events around each launch (warm-up, then repeats until 1.5 s, median).  The reference, in the same worker
process and run, is the faster of ``cudaMemcpyAsync`` device-to-device and ``cupy.copyto`` over the bytes the
kernel reads (counted read + write, as the kernel's traffic).

Rows:

* gmem_smem (global -> shared -> global, 16-byte vectors) on 1 GiB per tensor: target >= 0.90 of the CuPy copy;
* reg, ldstmatrix and fallback cells (the fallback on 256 MiB: it is meant to be slow, the row shows by how much);
* TMEM round trips: on a GPU without tensor memory (the H200) they run the *emulation*: TMEM in global memory,
  256 KiB of scratch per CTA (so the grid is capped at 4096 CTAs); those rows measure the emulation;
* the asynchronous copies (issue 13) on 1 GiB per tensor: ``tma`` (G2S with an mbarrier + S2G with a bulk group,
  the grid form's tensor maps over the whole replicated buffers: target >= 0.97 of the copy) and ``ldgsts``
  (``cp.async`` + ``commit_group`` / ``wait_group 0`` + ``cta_sync`` + the copy back: target >= 0.95); the TMA
  rows vary the tile, the boxes, the final wait and the CTA size (resident CTAs per SM);
* the dsmem exchange (issue 13, second milestone): a 2-CTA cluster per tile pair, each CTA's tile loaded by TMA,
  sent to the peer CTA's shared memory with ``cp.async.bulk.shared::cluster`` and stored by TMA: GB/s of global
  bytes (twice the dsmem bytes) against the same copy, reported without a target; ``--bench`` launches whole
  clusters;
* TMA multicast (issue 13, second milestone) on 1 GiB: 2-CTA clusters through the product path (the language's
  ``cluster=2``, ``cta_rank`` and ``cta_mask=0b11``, ``--bench`` over whole clusters): each CTA loads one half of its
  cluster's tile with ``cp.async.bulk.tensor ... .multicast::cluster`` so the whole tile lands in both CTAs, and
  stores the *peer's* half back (so the output proves the multicast delivered it, and the global traffic is a
  copy's); GB/s of the global traffic beside the same copy, reported without a target;
* the compile cache: a cold compile (empty cache directory: CuPy's ``$CUPY_CACHE_DIR`` is set to a fresh one),
  the re-run of the unchanged cell (memory hit; whole ``tilecopy`` wall time, target <= 30 ms + kernel), and a
  restarted worker (CuPy's disk cache: no NVRTC, under half the cold compile).

The machine must have CuPy and a CUDA GPU; ``lark`` (and ``ml_dtypes``) must be importable.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings

from common import header, median, table, use_checkout, write_json

use_checkout()

COLUMNS = ("section", "case", "tilemagic", "reference", "ratio", "target", "met")
GIB = 1 << 30
RATIO_TARGET = 0.90
TMA_TARGET = 0.97  # issue 13: TMA G2S + S2G of a 1 GiB tensor through shared memory, against the same copy
LDGSTS_TARGET = 0.95  # issue 13: cp.async (ldgsts) of the same


def tma_cell(name: str, rows: int, cols: int, smem: str = "", stages: int = 1, threads: int = 32,
             read: bool = False) -> str:
    """A TMA round trip of the whole ``float16[stages * rows, cols]`` tile: per stage one elected thread issues the
    G2S box (``tma_auto``, its own mbarrier, ``expect_tx=auto``), then, stage by stage, waits for its phase and
    issues the S2G copy (one bulk group, waited for at the end), so the next stage's load overlaps this one's
    store.  ``read``: the end waits only until the shared tile has been read (``bulk_wait_group 0 read``, as
    CUTLASS's epilogue ends): the CTA exits, and frees its shared memory, while its writes are in flight."""
    lay = f" @ {smem}" if smem else ""
    n = stages * rows
    head = [f"kernel {name} threads={threads}", f"global A: float16[{n}, {cols}] = random",
            f"global B: float16[{n}, {cols}] = zeros"]
    loads, stores = [], []
    for k in range(stages):
        r = f"{k * rows}:{(k + 1) * rows}, :"
        head += [f"shared S{k}: float16[{rows}, {cols}]{lay}", f"mbarrier full{k} count=1"]
        loads += [f"if tx == 0: arrive full{k} expect_tx=auto",
                  f"if tx == 0: thread.copy_async S{k} <- A[{r}] mbar=full{k}"]
        stores += [f"wait full{k} phase 0", f"if tx == 0: thread.copy_async B[{r}] <- S{k}"]
    tail = ["if tx == 0: bulk_commit_group", f"if tx == 0: bulk_wait_group 0{' read' if read else ''}",
            "check B == A"]
    return "\n".join(head + loads + stores + tail) + "\n"
RERUN_TARGET_MS = 30.0

def multicast_cell(name: str, half_rows: int, threads: int = 128) -> str:
    """A 2-CTA TMA multicast round trip (issue 13, ``cta_mask=``): CTA ``r`` loads half ``r`` (``half_rows`` rows of
    64 float16) with ``cta_mask=0b11`` into ``S[half r]`` of both CTAs (each CTA's ``full`` expects both halves),
    waits, and stores its *peer's* half back with a TMA store (one bulk group); a final ``cluster_sync`` keeps a CTA
    alive while its peer's multicast may still write into it.  ``--bench`` runs whole clusters, each on its own
    pair of halves."""
    h = half_rows
    return "\n".join([
        f"kernel {name} threads={threads} cluster=2",
        f"global A: float16[{2 * h}, 64] = random", f"global B: float16[{2 * h}, 64] = zeros",
        f"shared S: float16[{2 * h}, 64] @ swizzle(3, 3, 3)",
        "mbarrier full count=1",
        "if tx == 0: arrive full expect_tx=auto",
        f"if tx == 0: thread.copy_async S[{h}*cta_rank : {h}*cta_rank+{h}, :] <- A[{h}*cta_rank : {h}*cta_rank+{h}, :]"
        " mbar=full cta_mask=0b11",
        "wait full phase 0",
        f"if tx == 0: thread.copy_async B[{h}*(cta_rank^1) : {h}*(cta_rank^1)+{h}, :] <- "
        f"S[{h}*(cta_rank^1) : {h}*(cta_rank^1)+{h}, :]",
        "if tx == 0: bulk_commit_group", "if tx == 0: bulk_wait_group 0",
        "cluster_sync",
        "check B == A"]) + "\n"


def dsmem_cell(name: str, rows: int, cols: int, threads: int = 128) -> str:
    """A CTA-pair exchange through distributed shared memory (issue 13, ``dsmem``): a cluster of 2 CTAs; each CTA
    loads its ``float16[rows, cols]`` tile ``A[cta_rank]`` into its ``S`` (TMA G2S, mbarrier ``full``), the cluster
    synchronises (every ``S`` loaded, every mbarrier initialised), each CTA's elected thread copies its ``S`` into
    the peer's ``T`` (``cp.async.bulk.shared::cluster``, completing on the peer's ``got``), waits for its own ``T``
    and stores it to ``B[cta_rank ^ 1]`` (TMA S2G, one bulk group); a final ``cluster_sync`` keeps every CTA's
    shared memory alive until the peer's copy into it is done.  Every element crosses global -> shared -> the other
    CTA's shared -> global once, so the global bytes (read + write, what ``--bench`` counts) are twice the dsmem
    bytes; ``--bench`` runs whole clusters, each on its own tile pair."""
    t = f"0:{rows}, 0:{cols}"
    return "\n".join([
        f"kernel {name} threads={threads} cluster=2",
        f"global A: float16[2, {rows}, {cols}] = random", f"global B: float16[2, {rows}, {cols}] = zeros",
        f"shared S: float16[{rows}, {cols}]", f"shared T: float16[{rows}, {cols}]",
        "mbarrier full count=1", "mbarrier got count=1",
        "if tx == 0: arrive full expect_tx=auto",
        f"if tx == 0: thread.copy_async S <- A[cta_rank, {t}] mbar=full",
        "wait full phase 0",
        "cluster_sync",
        "if tx == 0: arrive got expect_tx=auto",
        "if tx == 0: thread.copy_async T <- S remote_cta_id=cta_rank^1 mbar=got",
        "wait got phase 0",
        f"if tx == 0: thread.copy_async B[cta_rank^1, {t}] <- T",
        "if tx == 0: bulk_commit_group", "if tx == 0: bulk_wait_group 0",
        "cluster_sync",
        "check B == A"]) + "\n"


def cells(quick: bool):
    """``(name, source, bench bytes, target)`` of every ``--bench`` row."""
    from cells import (LDSTMATRIX_CASES, GmemSmemCase, Tcgen05Case, fallback_cell, gmem_smem_cell,
                       ldgsts_committed_cell, reg_cell, roundtrip_cell, smem_cell, tmem_windows_cell)

    from tilemagic.cli import demo_source

    def gs(threads, rows, cols, dtype, smem=""):
        return gmem_smem_cell(GmemSmemCase("cta", threads, rows, cols, dtype, smem), "gs")

    def ldg(threads, rows, cols, smem=""):  # cp.async, commit_group, wait_group 0, cta_sync, the copy back
        return ldgsts_committed_cell(GmemSmemCase("cta", threads, rows, cols, "float16", smem), "ldg")

    out = [
        ("gmem_smem cta256 64x128 f16 (16 KiB tile, v4)", gs(256, 64, 128, "float16"), GIB, RATIO_TARGET),
        ("gmem_smem cta256 64x128 f16 swizzle(3,3,3)", gs(256, 64, 128, "float16", "swizzle(3, 3, 3)"), GIB, None),
        ("gmem_smem cta1024 64x256 f16 (32 KiB tile)", gs(1024, 64, 256, "float16"), GIB, None),
        ("gmem_smem cta256 32x128 f32", gs(256, 32, 128, "float32"), GIB, None),
        ("reg frag(32x32b) 128x32 f32 (global -> registers -> global)",
         reg_cell("frag(32x32b)", 128, 32, "wg", 128, "float32"), GIB, None),
        ("ldstmatrix x4 16x16 f16 (A -> S -> regs -> B, S' -> C)", smem_cell(*LDSTMATRIX_CASES[0][:7]), GIB // 4, None),
        ("fallback demo: warp 4x6 f32, one thread copies", demo_source("fallback_demo"), GIB // 4, None),
        ("fallback cta256 33x64 f32, one thread copies", fallback_cell("cta", 256, 33, 64), GIB // 4, None),
        ("tmem_roundtrip demo 128x8 f16 (.32x32b.x4)", demo_source("tmem_roundtrip"), GIB, None),
        ("TMEM 128x512 f32, .32x32b.x128 in 4 windows", tmem_windows_cell(512), GIB, None),
        ("TMEM 128x32 f32 round trip (.32x32b.x32)", roundtrip_cell("float32", 32), GIB, None),
        ("TMEM .16x256b.x4 f32 round trip + .32x32b dump", Tcgen05Case("16x256b", 4, "float32", "D128", "st").source,
         GIB, None),
        # issue 13: the asynchronous copies, 1 GiB per tensor, against the same copy in the same run
        ("tma 256x64 f16 swizzle(3,3,3) (32 KiB: one 128B-swizzled box per CTA)",
         tma_cell("tma1", 256, 64, "swizzle(3, 3, 3)"), GIB, TMA_TARGET),
        ("tma 256x64 f16 swizzle(3,3,3), bulk_wait_group 0 read at the end",
         tma_cell("tma1r", 256, 64, "swizzle(3, 3, 3)", read=True), GIB, TMA_TARGET),
        ("tma 256x64 f16 swizzle(3,3,3), cta512 (at most 4 CTAs per SM)",
         tma_cell("tma1t", 256, 64, "swizzle(3, 3, 3)", threads=512), GIB, TMA_TARGET),
        ("tma 256x64 f16 swizzle(3,3,3), cta1024 (at most 2 CTAs per SM)",
         tma_cell("tma1u", 256, 64, "swizzle(3, 3, 3)", threads=1024), GIB, TMA_TARGET),
        ("tma 128x64 f16 swizzle(3,3,3) (16 KiB)", tma_cell("tmah", 128, 64, "swizzle(3, 3, 3)"), GIB, TMA_TARGET),
        ("tma 2 x 128x64 f16 swizzle(3,3,3) (32 KiB: two boxes, two mbarriers)",
         tma_cell("tma2", 128, 64, "swizzle(3, 3, 3)", stages=2), GIB, TMA_TARGET),
        ("tma 64x256 f16 (32 KiB: one box of 512-byte rows, no swizzle)", tma_cell("tmaw", 64, 256), GIB,
         TMA_TARGET),
        ("ldgsts cta256 64x128 f16 (16 KiB, 4 x cp.async.cg 16 B per thread)", ldg(256, 64, 128), GIB,
         LDGSTS_TARGET),
        ("ldgsts cta256 64x128 f16 swizzle(3,3,3)", ldg(256, 64, 128, "swizzle(3, 3, 3)"), GIB, LDGSTS_TARGET),
        ("ldgsts cta1024 64x256 f16 (32 KiB, 2 x cp.async.cg 16 B per thread)", ldg(1024, 64, 256), GIB,
         LDGSTS_TARGET),
        # issue 13, second milestone: the CTA-pair exchange through dsmem (GB/s reported, no target); global bytes
        # read + written, twice the dsmem bytes
        ("dsmem pair exchange 2 x 128x64 f16 (16 KiB per CTA: TMA in, dsmem to the peer, TMA out)",
         dsmem_cell("dsx", 128, 64), GIB, None),
        ("dsmem pair exchange 2 x 64x64 f16 (8 KiB per CTA)", dsmem_cell("dsxh", 64, 64), GIB, None),
        # TMA multicast to a 2-CTA cluster (GB/s reported, no target)
        ("tma multicast 2 x 128x64 f16 halves, cta_mask 0b11 (32 KiB per CTA)", multicast_cell("mc", 128), GIB, None),
        ("tma multicast 2 x 64x64 f16 halves, cta_mask 0b11 (16 KiB per CTA)", multicast_cell("mch", 64), GIB, None),
    ]
    if quick:
        return out[:1] + out[6:7] + out[8:9]
    return out


def _quiet(fn, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*a, **k)


def bench_rows(quick: bool):
    """One row per cell; a cell that fails (a LaunchError, a failed check) is a row saying so, and the rest run."""
    import tilemagic
    from tilemagic.errors import TileMagicError

    rows, raw = [], {}
    for name, src, nbytes, target in cells(quick):
        try:
            res = _quiet(tilemagic.tilecopy, src, launch="gpu", bench=True, timeout=300, bench_bytes=nbytes,
                         allow_fail=True)  # a failing check is a row of the table, not an error
        except TileMagicError as e:
            raw[name] = {"error": str(e)}
            rows.append(dict(section="bench", case=f"{name}: FAILED", tilemagic=e.message[:80], met=False))
            continue
        t = res.launch.timing
        raw[name] = dict(t, backend=res.launch.backend, mode=res.launch.mode, passed=res.launch.passed,
                         compile=res.launch.compile)
        emu = "note" in t
        rows.append(dict(
            section="bench", case=f"{name}{' [emulated TMEM]' if emu else ''}: GB/s ({t['ctas']} CTAs"
                                  f"{' in clusters of %d' % t['cluster'] if 'cluster' in t else ''}, "
                                  f"{t['bytes_per_launch'] / 2**20:.0f} MiB/launch, {t['median_us']:.0f} us)"
                                  + ("" if res.launch.passed else " CHECK FAILED"),
            tilemagic=t["gb_per_s"], reference=t["cupy_copy_gb_per_s"], ratio=t["vs_cupy_copy"],
            target=f">= {target}" if target else ("measures the emulation" if emu else ""),
            met=(t["vs_cupy_copy"] >= target and res.launch.passed) if target else
            (None if res.launch.passed else False)))
    return rows, raw


def cache_rows():
    """Cold compile, memory hit (whole re-run), CuPy's disk cache after a worker restart, for the TMEM demo (emulated:
    the largest NVRTC compile of the demos) and the gmem_smem copy."""
    import tilemagic
    from tilemagic.cli import demo_source
    from tilemagic.runtime.worker import get_worker, set_worker

    rows, raw = [], {}
    for name, src in (("tmem_roundtrip demo", demo_source("tmem_roundtrip")),
                      ("fallback demo", demo_source("fallback_demo"))):
        first = _quiet(tilemagic.tilecopy, src, launch="gpu")
        c0 = first.launch.compile
        walls, hits = [], []
        for _ in range(7):
            t0 = time.perf_counter()
            again = _quiet(tilemagic.tilecopy, src, launch="gpu")
            walls.append((time.perf_counter() - t0) * 1e3)
            hits.append(again.launch.compile["cache"])
        get_worker().stop()
        set_worker(None)
        after = _quiet(tilemagic.tilecopy, src, launch="gpu")
        c2 = after.launch.compile
        raw[name] = {"cold": c0, "rerun_wall_ms": walls, "rerun_cache": hits, "restarted": c2,
                     "passed": first.launch.passed and again.launch.passed and after.launch.passed}
        rows += [
            dict(section="cache", case=f"{name}: first launch, empty cache: compile ms ({c0['cache']})",
                 tilemagic=c0["ms"], reference=c0.get("note", "")[:60]),
            dict(section="cache", case=f"{name}: unchanged re-run, whole tilecopy(launch='gpu'): ms ({hits[-1]} hit)",
                 tilemagic=median(walls), target=f"<= {RERUN_TARGET_MS:g} + kernel",
                 met=median(walls) <= RERUN_TARGET_MS and set(hits) == {"memory"}),
            dict(section="cache", case=f"{name}: restarted worker: compile ms ({c2['cache']})", tilemagic=c2["ms"],
                 reference=f"vs {c0['ms']:.0f} ms cold", ratio=f"{c2['ms'] / c0['ms']:.3f}" if c0["ms"] else None,
                 target="< 0.5 (CuPy disk cache)", met=c2["ms"] < 0.5 * c0["ms"]),
        ]
    return rows, raw


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", help="write the table and raw timings here (default: $OUT/gpu_bench.json when $OUT "
                                  "is set)")
    p.add_argument("--quick", action="store_true", help="three bench rows only")
    args = p.parse_args(argv)
    cache_dir = tempfile.mkdtemp(prefix="tilemagic-bench-cache-")
    os.environ["CUPY_CACHE_DIR"] = cache_dir  # before the worker starts: it inherits the environment

    from tilemagic.runtime.worker import get_worker

    st = get_worker().probe()
    if not st.available:
        print(f"no GPU: {st.reason}", file=sys.stderr)
        return 2
    head = dict(header(), device=st.label, cupy=st.cupy_version, nvrtc=st.nvrtc_version, cache_dir=cache_dir)
    t0 = time.perf_counter()
    crows, craw = cache_rows()
    brows, braw = bench_rows(args.quick)
    rows = brows + crows
    for r in rows:
        if isinstance(r.get("met"), bool):
            r["met"] = "yes" if r["met"] else "NO"
    print(f"tilemagic GPU benchmarks — {head['date']}, commit {head['commit']}, {st.label}, CuPy {st.cupy_version}, "
          f"NVRTC {'.'.join(map(str, st.nvrtc_version or ()))}; {time.perf_counter() - t0:.0f} s")
    print(table(rows, COLUMNS))
    out = args.json or (os.path.join(os.environ["OUT"], "gpu_bench.json") if os.environ.get("OUT") else None)
    if out:
        write_json(out, dict(head, rows=rows, bench=braw, cache=craw))
        print(f"JSON: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
