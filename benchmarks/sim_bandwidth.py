"""Simulator bandwidth against NumPy's own copy (issue 12, "cost is the work").

    python benchmarks/sim_bandwidth.py                          # 4, 16, 64, 128 MiB per variant (~5 min)
    python benchmarks/sim_bandwidth.py --sizes 1,4 --repeats 1 --json sim_bw.json
    python benchmarks/sim_bandwidth.py --baseline ../tilemagic-before    # + the issue's cells timed on another checkout

For every copy variant a cell (a real ``%%tilecopy`` description, lowered by the pipeline) moves at
least the given number of MiB: the sum of the bytes of its copy ops (a global -> shared -> global
round trip moves its tile twice).  One CTA cannot hold that much shared memory, registers or TMEM,
so a cell repeats the largest legal tile over consecutive rows of big global tensors:

``fallback``
    ``cta.copy B <- A dispatch=fallback`` of ``float32[R, 1024]`` in a 1,024-thread CTA (one op).
``gmem_smem``
    ``cta.copy S <- A[rows]``, ``cta_sync``, ``cta.copy B[rows] <- S``, ``cta_sync`` per 48 KiB tile (all the static
    shared memory a CTA has), 1,024 threads.
``reg``
    ``cta.copy a <- A[rows]``, ``cta.copy B[rows] <- a`` per 512 KiB register tile (128 fp32 per thread).
``ldstmatrix``
    global -> shared -> registers (``ldmatrix``) -> the same shared tile (``stmatrix``) -> global per 32 KiB fp16
    tile (128 x 128, swizzled, ``frag(16x128b)``, one warpgroup, a ``cta_sync`` after each move; gmem_smem moves
    the global sides; 128 x 256 would pass the 48 KiB of static shared memory).
``tmem<->local``
    global -> registers -> ``tcgen05.st`` -> ``tcgen05.ld`` -> global per 64 KiB (128 lanes x 128 fp32).

The simulator's time (:class:`tilemagic.sim.Simulator` ``run``, the kernel lowered beforehand and
not timed) is put beside ``np.copyto`` of the same number of bytes (one contiguous copy, measured in
the same run, repeat by repeat): ``ratio`` = copyto time / simulator time, the target 5 % from 64 MiB.

``setup_ms`` is building the :class:`~tilemagic.sim.Simulator` (the one walk of the kernel's statements that
finds its buffers' access units and data-dependent indices, inputs copied, memory filled with garbage, the
happens-before shadows allocated and their pages touched): not in ``sim_ms``, shown beside it, and
``with setup %`` is the ratio with it counted.

The issue's illustrations are rows too: the fallback with 1,024 threads copying 8 MiB, a copy inside
one shared buffer (rows to other rows), and a cell with a 2,420-iterator layout lowered with
``--launch off``; ``--baseline CHECKOUT`` times the same cells and the same variants with that checkout
(a subprocess with its ``tilemagic`` first on the path, this file's cells): ``base_sim_ms``, ``base %``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

from common import ROOT, commit, header, median, table, use_checkout, write_json

use_checkout()

TARGET = 0.05
VARIANTS = ("fallback", "gmem_smem", "reg", "ldstmatrix", "tmem<->local")
COLUMNS = ("variant", "MiB", "ops", "lower_s", "setup_ms", "sim_ms", "copyto_ms", "ratio %", "target", "met",
           "with setup %")
BASE_COLUMNS = ("base_setup_ms", "base_sim_ms", "base %", "base with setup %")
MiB = 1 << 20


# ----------------------------------------------------------------------------- cells
def _reps(mib: float, per_rep: int) -> int:
    return max(1, -(-int(mib * MiB) // per_rep))


def fallback_cell(mib: float) -> tuple[str, int]:
    rows = max(1, int(mib * MiB) // 4096)
    return (f"kernel fb threads=1024\nglobal A: float32[{rows}, 1024]\nglobal B: float32[{rows}, 1024] = zeros\n"
            "cta.copy B <- A dispatch=fallback\ncheck B == A"), rows * 4096


def gmem_smem_cell(mib: float) -> tuple[str, int]:
    tile = 48 * 256 * 4
    n = _reps(mib, 2 * tile)
    lines = ["kernel gs threads=1024", f"global A: float32[{48 * n}, 256]", f"global B: float32[{48 * n}, 256] = zeros",
             "shared S: float32[48, 256]"]
    for k in range(n):
        r = f"{48 * k}:{48 * (k + 1)}"
        lines += [f"cta.copy S <- A[{r}, :]", "cta_sync", f"cta.copy B[{r}, :] <- S", "cta_sync"]
    return "\n".join(lines + ["check B == A"]), 2 * tile * n


def reg_cell(mib: float) -> tuple[str, int]:
    tile = 1024 * 128 * 4
    n = _reps(mib, 2 * tile)
    lines = ["kernel rg threads=1024", f"global A: float32[{1024 * n}, 128]",
             f"global B: float32[{1024 * n}, 128] = zeros", "local a: float32[1024, 128] @ S[(1024, 128) : (1@tx, 1)]"]
    for k in range(n):
        r = f"{1024 * k}:{1024 * (k + 1)}"
        lines += [f"cta.copy a <- A[{r}, :]", f"cta.copy B[{r}, :] <- a"]
    return "\n".join(lines + ["check B == A"]), 2 * tile * n


def ldstmatrix_cell(mib: float) -> tuple[str, int]:
    tile = 128 * 128 * 2
    n = _reps(mib, 4 * tile)
    lines = ["kernel lm threads=128", f"global A: float16[{128 * n}, 128]",
             f"global C: float16[{128 * n}, 128] = zeros", "shared S: float16[128, 128] @ swizzle(3, 3, 3)",
             "local a: float16[128, 128] @ frag(16x128b)"]
    for k in range(n):
        r = f"{128 * k}:{128 * (k + 1)}"
        lines += [f"wg.copy S <- A[{r}, :]", "cta_sync", "wg.copy a <- S", "cta_sync", "wg.copy S <- a", "cta_sync",
                  f"wg.copy C[{r}, :] <- S", "cta_sync"]
    return "\n".join(lines + ["check C == A"]), 4 * tile * n


def tmem_cell(mib: float) -> tuple[str, int]:
    tile = 128 * 128 * 4
    n = _reps(mib, 4 * tile)
    lay = "S[(128, 128) : (1@tid_in_wg, 1)]"
    lines = ["kernel tmrt threads=128", f"global A: float32[{128 * n}, 128]",
             f"global B: float32[{128 * n}, 128] = zeros",
             "tmem T: float32[128, 128]", f"local a: float32[128, 128] @ {lay}", f"local b: float32[128, 128] @ {lay}"]
    for k in range(n):
        r = f"{128 * k}:{128 * (k + 1)}"
        lines += [f"wg.copy a <- A[{r}, :]", "wg.copy_async T <- a", "wait st", "cta_sync", "wg.copy_async b <- T",
                  "wait ld", f"wg.copy B[{r}, :] <- b", "cta_sync"]
    return "\n".join(lines + ["check B == A"]), 4 * tile * n


#: the variants each cell's ops must be dispatched to (the benchmark fails otherwise)
CHOSEN = {"fallback": {"fallback"}, "gmem_smem": {"gmem_smem"}, "reg": {"reg"},
          "ldstmatrix": {"ldstmatrix", "gmem_smem"}, "tmem<->local": {"tmem<->local", "reg"}}
BUILDERS = {"fallback": fallback_cell, "gmem_smem": gmem_smem_cell, "reg": reg_cell, "ldstmatrix": ldstmatrix_cell,
            "tmem<->local": tmem_cell}


def same_buffer_cell() -> str:
    """A copy inside one shared buffer: rows 0..63 to rows 64..127 (the fallback's loop reads and writes S)."""
    return ("kernel sb threads=32\nglobal A: float32[64, 64]\nglobal B: float32[64, 64] = zeros\n"
            "shared S: float32[128, 64]\nwarp.copy S[0:64, :] <- A\ncta_sync\nwarp.copy S[64:128, :] <- S[0:64, :]\n"
            "cta_sync\nwarp.copy B <- S[64:128, :]\ncheck B == A")


def big_layout_cell(iters: int = 2420) -> str:
    """A shared 64 x 64 fp32 tile whose layout has ``iters`` iterators: twelve of extent 2 with permuted strides,
    the rest of extent 1 (strides that do not matter), copied in and out (gmem_smem)."""
    rng = np.random.default_rng(1)
    ext = np.array([2] * 12 + [1] * (iters - 12))
    rng.shuffle(ext)
    perm = iter(rng.permutation(12))
    strides = [str(2 ** int(next(perm))) if e == 2 else str(int(rng.choice([1, 3, 7, 64]))) for e in ext]
    lay = f"S[({', '.join(map(str, ext))}) : ({', '.join(strides)})]"
    return (f"kernel big threads=32\nglobal A: float32[64, 64]\nglobal B: float32[64, 64] = zeros\n"
            f"shared S: float32[64, 64] @ {lay}\nwarp.copy S <- A\ncta_sync\nwarp.copy B <- S\ncheck B == A")


def fallback_issue_cell() -> str:
    return ("kernel fb threads=1024\nglobal A: float32[2048, 1024]\nglobal B: float32[2048, 1024] = zeros\n"
            "cta.copy B <- A dispatch=fallback\ncheck B == A")


ISSUE_CELLS = {"fallback 1,024 threads, 8 MiB (sim)": (fallback_issue_cell, "sim"),
               "same-buffer shared copy, 4,096 elements (sim)": (same_buffer_cell, "sim"),
               "2,420-iterator layout (--launch off)": (big_layout_cell, "off")}


# ----------------------------------------------------------------------------- measurements
def _inputs(kernel) -> dict:
    rng = np.random.default_rng(0)
    out = {}
    for b in kernel.params:
        a = np.empty(b.nbytes, np.uint8)
        a[:] = rng.integers(0, 256, b.nbytes, dtype=np.uint8) if b.init != "zeros" else 0
        out[b.name] = a
    return out


def measure_variant(variant: str, mib: float, repeats: int) -> dict:
    import warnings

    from tilemagic import tilecopy
    from tilemagic.sim import Simulator

    src, moved = BUILDERS[variant](mib)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = tilecopy(src, launch="off")
    lower_s = time.perf_counter() - t0
    kernel = res.kernel
    inputs = _inputs(kernel)
    ops = sum(1 for d in res.dispatch)
    chosen = {d.chosen for d in res.dispatch}
    if not chosen <= CHOSEN[variant] or variant not in chosen:
        raise SystemExit(f"the {variant} cell was dispatched to {sorted(chosen)}")
    src_bytes = np.ones(moved, np.uint8)
    dst_bytes = np.empty_like(src_bytes)
    np.copyto(dst_bytes, src_bytes)  # fault the pages in: the copy below is timed warm, like the simulator
    sims, copies, setups, ok = [], [], [], True
    for _ in range(repeats):
        t0 = time.perf_counter()
        sim = Simulator(kernel, inputs)
        setups.append((time.perf_counter() - t0) * 1e3)
        t0 = time.perf_counter()
        out = sim.run()
        sims.append((time.perf_counter() - t0) * 1e3)
        t0 = time.perf_counter()
        np.copyto(dst_bytes, src_bytes)
        copies.append((time.perf_counter() - t0) * 1e3)
        a, b = kernel.params[0].name, kernel.params[1].name
        ok &= bool(np.array_equal(out[a], out[b]))
    sim_ms, copy_ms = median(sims), median(copies)
    ratio = copy_ms / sim_ms
    target = TARGET if moved >= 64 * MiB else None
    return {"variant": variant, "MiB": round(moved / MiB, 2), "ops": ops, "lower_s": round(lower_s, 2),
            "setup_ms": round(median(setups), 1), "sim_ms": round(sim_ms, 1), "copyto_ms": round(copy_ms, 2),
            "ratio": round(ratio, 4),
            "ratio %": round(100 * ratio, 2), "with setup %": round(100 * copy_ms / (sim_ms + median(setups)), 2),
            "target": "≥ 5 %" if target else "-", "met": (ratio >= target) if target else "-", "round_trip": ok}


def time_issue_cells(checkout: str | None, repeats: int) -> dict[str, float]:
    """Seconds per issue cell (median), with this checkout or, in a subprocess, with ``checkout``."""
    code = ("import json, sys, time, warnings\nwarnings.simplefilter('ignore')\n"
            "from tilemagic import tilecopy\ncells = json.loads(sys.stdin.read())\nout = {}\n"
            "for name, (src, launch, reps) in cells.items():\n"
            "    ts = []\n    for _ in range(reps):\n        t0 = time.perf_counter()\n"
            "        tilecopy(src, launch=launch)\n        ts.append(time.perf_counter() - t0)\n"
            "    out[name] = sorted(ts)[len(ts) // 2]\nprint(json.dumps(out))\n")
    cells = {name: (fn(), launch, repeats) for name, (fn, launch) in ISSUE_CELLS.items()}
    env = dict(os.environ, PYTHONPATH=checkout or str(ROOT))
    run = subprocess.run([sys.executable, "-c", code], input=json.dumps(cells), capture_output=True, text=True,
                         env=env, cwd=checkout or str(ROOT), check=True)
    return json.loads(run.stdout.strip().splitlines()[-1])


def baseline_variants(checkout: str, variants: list[str], sizes: list[float], repeats: int) -> list[dict]:
    """:func:`measure_variant` rows measured with ``checkout``'s ``tilemagic`` (a subprocess; this file's cells)."""
    code = ("import json, sys\nsys.path.insert(0, sys.argv[2])\nimport tilemagic\n"  # (theirs, imported first)
            "assert tilemagic.__file__.startswith(sys.argv[2]), tilemagic.__file__\n"
            "sys.path.insert(0, sys.argv[1])\nimport sim_bandwidth as sb\nargs = json.loads(sys.stdin.read())\n"
            "print(json.dumps([sb.measure_variant(v, m, args['repeats']) for v in args['variants'] "
            "for m in args['sizes']]))\n")
    checkout = os.path.abspath(checkout)
    env = dict(os.environ, PYTHONPATH=checkout)
    args = json.dumps({"variants": variants, "sizes": sizes, "repeats": repeats})
    run = subprocess.run([sys.executable, "-c", code, str(ROOT / "benchmarks"), checkout], capture_output=True,
                         text=True, input=args, env=env, cwd=checkout, check=True)
    return json.loads(run.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="4,16,64,128", help="MiB moved per cell, comma-separated")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--baseline", help="a checkout whose times of the issue's cells are shown beside")
    ap.add_argument("--no-issue-cells", action="store_true")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    sizes = [float(x) for x in args.sizes.split(",") if x]
    variants = args.variants.split(",")
    rows = [measure_variant(v, mib, args.repeats) for v in variants for mib in sizes]
    columns = COLUMNS
    if args.baseline:
        for r, b in zip(rows, baseline_variants(args.baseline, variants, sizes, args.repeats)):
            r["base_setup_ms"], r["base_sim_ms"], r["base %"] = b["setup_ms"], b["sim_ms"], b["ratio %"]
            r["base with setup %"] = b["with setup %"]
        columns = COLUMNS + BASE_COLUMNS
    print(table(rows, columns))
    issue: list[dict] = []
    if not args.no_issue_cells:
        now = time_issue_cells(None, args.repeats)
        before = time_issue_cells(args.baseline, 1) if args.baseline else {}
        issue = [{"cell": k, "this checkout s": round(v, 3), "baseline s": round(before[k], 2) if k in before else None}
                 for k, v in now.items()]
        print()
        print(table(issue, ("cell", "this checkout s", "baseline s")))
    if args.json:
        write_json(args.json, {**header(), "baseline": commit(args.baseline) if args.baseline else None, "rows": rows,
                               "issue_cells": issue})
    return 0 if all(r["round_trip"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
