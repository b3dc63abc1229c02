"""Build and execute the project's notebooks (stores outputs for nbval).

Usage: python tools/build_notebooks.py [NAME ...]   (needs nbclient, nbformat, ipykernel)

Each notebook is defined here as a list of cells so its text stays reviewable in
diffs; the executed .ipynb (with outputs) is what nbval checks in CI.
"""

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
DEMOS = ROOT / "tilemagic" / "demos"


def md(text):
    return nbformat.v4.new_markdown_cell(text.strip())


def code(text, tags=()):
    c = nbformat.v4.new_code_cell(text.strip())
    if tags:
        c.metadata["tags"] = list(tags)
    return c


def demo_cell(name):
    return (DEMOS / f"{name}.tile").read_text().strip()


QUICKSTART = [
    md("""
# tilemagic quickstart

`%%tilecopy` cells describe a tile-copy kernel in a few lines. tilemagic then runs a TVM TIRx-style
dispatcher over the copy variants, lowers the chosen variant, shows the TIR-like IR and the CUDA side by
side, draws Blackwell tensor memory (TMEM), and runs the kernel to check the round trip.

**Where things run.** `--launch auto` (the default) launches through CuPy when a GPU is found: natively on a
Blackwell (CC 10.x, `-arch=sm_100a`) GPU, with TMEM *emulated* in global memory on older GPUs. Without a GPU
the CPU simulator runs the same IR. This notebook is stored with the CPU simulator's outputs so that it checks
the same everywhere; the next cell pins that. Delete it on a GPU machine.
"""),
    code("%load_ext tilemagic\n%config TileMagics.launch = \"sim\""),
    md("""
## 1. tcgen05 round trip through TMEM

A warpgroup loads a 128×8 fp16 tile into registers (`copy/reg`), stores it to tensor memory with
`tcgen05.st.32x32b.x4` (8 fp16 = 4 32-bit columns, two per cell), reads it back with `tcgen05.ld`, and writes
it out. Every op shows its dispatch why-table; the heatmap shows which warp owns which TMEM lanes.

**Line mapping.** Hover a line of the description: the IR and CUDA lines it produced light up (and hovering an IR
or CUDA line lights up its description line). Click a line to pin the highlight; the panes scroll to it.
"""),
    code(demo_cell("tmem_roundtrip")),
    md("""
### The same kernel as a stage view

`--view widget` shows the stages as tabs (description, dispatch, IR, CUDA native and emulated, PTX, heatmaps,
launch). Pick a *source line* to highlight its IR, CUDA and PTX lines; the PTX tab compiles (with `nvcc` or NVRTC)
when you open it; the Heatmaps tab switches between TMEM occupancy (coloured by warp, thread, register or
instruction, overlaid or one panel per instruction), the register fragment and the round-trip data. A notebook
viewer without widgets shows the static report instead.
"""),
    code(demo_cell("tmem_roundtrip").replace("%%tilecopy tmem_roundtrip", "%%tilecopy tmem_roundtrip --view widget", 1)),
    md("""
## 2. The scalar fallback

A warp copies a 4×6 fp32 tile through shared memory. The register-tile variant declines (no register side), so
`copy/fallback` runs: lane 0 copies element by element, and tilemagic says so with TVM's `UserWarning`.
"""),
    code(demo_cell("fallback_demo")),
    md("""
## 3. When nothing fits: the why-table as an error

A `.32x32b` transfer moves a power-of-two number of 32-bit columns. Three fp32 columns is not one of them, so the
only `copy_async` variant declines and the cell fails with a located error that carries the why-table.
"""),
    code("""
%%tilecopy bad_width
kernel bad_width threads=128
tmem  T: float32[128, 32]
local a: float32[128, 3] @ S[(128, 3) : (1@tid_in_wg, 1)]
wg.copy_async T[:, 0:3] <- a
""", tags=["raises-exception"]),
    md("""
## 4. The result object

`--out NAME` keeps the result: `.ir`, `.cuda`, `.cuda_emulated`, `.dispatch`, `.launch`, `.heatmap()`, `.ptx()`.
`--heatmap tmem,instr,fragment,data` picks the report's pictures and `--color-by warp|thread|reg|instr` their colours.
"""),
    code("""
%%tilecopy --out res --view text
kernel wide threads=128
global A: float32[128, 64]
global B: float32[128, 64]
tmem   T: float32[128, 128]
local  a: float32[128, 64] @ S[(128, 64) : (1@tid_in_wg, 1)]
wg.copy a <- A
wg.copy_async T[:, 64:128] <- a
wait st
wg.copy_async a <- T[:, 64:128]
wait ld
wg.copy B <- a
check B == A
"""),
    code("""
[(d.text, d.chosen) for d in res.dispatch], res.launch.backend, [str(c) for c in res.launch.checks]
"""),
    md("""
`res.heatmap(kind=...)` draws one picture (a matplotlib figure, PNG in the notebook): `"tmem"` (occupancy;
`color_by=`, `instr=` an index or `"each"`), `"fragment"` (thread × register → TMEM lane and column of a register
fragment) and `"data"` (the values a `check` compared, mismatches in red).
"""),
    code('res.heatmap(color_by="reg", instr="each")'),
    code('res.heatmap(kind="fragment")'),
    md("""
## 5. This machine

`%tilemagic status` says what a launch would use here (CuPy, driver, device, NVRTC/nvcc). Its output depends on
the machine, so nbval ignores it.
"""),
    code("%tilemagic status", tags=["nbval-ignore-output"]),
]

SIM_NOTE = """
This notebook is stored with the CPU simulator's outputs so that it checks the same everywhere (the next cell
pins `--launch sim`); on a GPU machine delete that line and the same cells launch through CuPy.
"""

# helpers defined in the notebooks themselves (a reader can reuse them)
SHOW_HELPERS = '''
import warnings
import tilemagic

def show(src, op=0):
    """Run a description in the simulator; print the chosen variant of op `op`, the check, the summary."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        res = tilemagic.tilecopy(src, launch="sim")
    d = res.dispatch[op]
    print(f"{d.chosen:10s} {res.launch.checks[0].status}  {d.summary}")

def op_lines(text, line):
    """The IR or CUDA lines of the op on description line `line`."""
    keep, on = [], False
    for t in text.splitlines():
        s = t.strip()
        if s.startswith(("# L", "// L")):
            on = s.split(":")[0] in (f"# L{line}", f"// L{line}")
        elif s.startswith(("T.cuda.cta_sync", "__syncthreads")):
            on = False
        if on:
            keep.append(t)
    return "\\n".join(keep)
'''

COPY_FALLBACK = [
    md("""
# copy → fallback

The `fallback` variant of `copy` (priority 0) is the scalar single-thread copy: one elected thread of the exec
scope walks the region element by element. It is the slowest way to copy, so tilemagic, like TVM TIRx, runs it
only when every faster variant (`gmem_smem`, `ldstmatrix`, `reg`, all priority 10) has declined, and says so with
TVM's `UserWarning`.
""" + SIM_NOTE),
    code("%load_ext tilemagic\n%config TileMagics.launch = \"sim\""),
    code("%tilemagic variants"),
    md("""
## What it accepts

| property | requirement |
|---|---|
| dtypes, extents | the same dtype on both sides and the same non-unit extents, in order (`validate_copy_op`) |
| exec scope | any: `thread`, `warp`, `wg`, `cta` |
| memories | anything one elected thread can address (`single_thread_reachable`): global and shared memory (any shared layout, swizzled included), and a thread-private register tile at `thread` scope — not TMEM (only `tcgen05.ld/st` reach it), not a register tile distributed over threads |
| when | every candidate before it was rejected by a predicate or declined |

TVM's fallback has only the first predicate; tilemagic adds the second so that a copy the scalar loop cannot
perform declines with a reason instead of producing wrong code.
"""),
    md("""
## Demonstration program

The seed program: a warp copies a 4×6 fp32 tile global → shared → global. 24 elements do not split over 32
threads, so `gmem_smem` declines ("region size 24 not divisible by thread_cnt=32"); `ldstmatrix` and `reg` need
a register tile. The warning under the cell is the one TVM prints.
"""),
    code(demo_cell("fallback_demo").replace("%%tilecopy fallback_demo", "%%tilecopy fallback_demo --out fb")),
    md("""
## Algorithm

1. **Elect one thread.** At `thread` scope every thread runs the copy itself, unguarded. Otherwise the body is
   wrapped in `if <tid> == 0`, with `laneid` for a warp, `tid_in_wg` for a warpgroup and `tx` for the CTA (TVM's
   `_TID_AXIS_FOR_SCOPE`); every warp (warpgroup) of the CTA runs its own copy.
2. **Loop over the non-unit extents.** One serial `T.grid` over the destination's non-unit extents; the i-th loop
   variable indexes the i-th non-unit dimension of *each* side, so `C[1, 0:8] <- B` works. A scalar region is a
   single store.
3. **Index through the layouts.** Each access is `buf[logical indices]`; the buffer's layout maps it to the
   element offset (affine per dimension, the general split of a permuted tile, or a swizzle's XOR).
4. **No barrier.** The caller writes `cta_sync` before other threads read what the elected thread wrote.
5. **Warn.** `copy/fallback (scalar single-thread) picked for <src> -> <dst> at scope_kind=<k>; all faster
   variants rejected.`

The first op's why-table says how it came to this:
"""),
    code("print(fb.dispatch[0].table())"),
    md("## Generated TIRx IR"),
    code("print(fb.ir)"),
    md("## Generated CUDA"),
    code("print(fb.cuda[fb.cuda.index('extern'):])"),
    md("""
## How inputs change the algorithm

| input | effect |
|---|---|
| a region size the scope's threads divide | `gmem_smem` takes the copy: no fallback, no warning |
| scope | the elected thread: `laneid == 0`, `tid_in_wg == 0`, `tx == 0`; none at `thread` scope |
| a scalar region (`B[3] <- A[1, 2]`) | one store, no loop |
| unit dimensions on one side | the loop skips them; dimensions pair up positionally |
| a permuted or swizzled shared layout | the same loop; the index goes through the layout |
| `dispatch=fallback` | forces it even where a faster variant would run (it still warns) |
| shared → shared | no vector variant covers it: always the fallback |
| TMEM, a distributed register tile | rejected here with a reason: `copy_async` or `reg` are the ways |

TVM's `test_fallback_round_trip` cases (global → shared → global; the sizes do not divide the threads), and one
size that does:
"""),
    code(SHOW_HELPERS + '''
CASES = [("warp", 32, 4, 6), ("warp", 32, 1, 8), ("wg", 128, 4, 6), ("wg", 128, 4, 8),
         ("cta", 256, 4, 8), ("cta", 1024, 8, 8), ("warp", 32, 4, 8)]

def cell(scope, threads, rows, cols):
    return (f"kernel fb threads={threads}\\nglobal A: float32[{rows}, {cols}]\\nglobal B: float32[{rows}, {cols}]\\n"
            f"shared S: float32[{rows}, {cols}]\\n{scope}.copy S <- A\\ncta_sync\\n{scope}.copy B <- S\\ncheck B == A\\n")

for case in CASES:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = tilemagic.tilecopy(cell(*case), launch="sim")
    rec = res.dispatch[0]
    gs = next(c for c in rec.candidates if c.variant == "gmem_smem")
    why = [r for r in gs.reasons if not r.endswith(": ok")]
    print(f"{case[0]:>4}/{case[1]:<4} {case[2]}x{case[3]}: {rec.chosen:9s} {res.launch.checks[0].status}  "
          f"warnings={len(caught)}  gmem_smem: {why[0] if why else 'chosen'}")
'''),
    md("A scalar region and positional dimensions:"),
    code("""
%%tilecopy scalar --view text
kernel scalar threads=32
global A: float32[4, 6] = arange
global B: float32[8] = zeros
global C: float32[2, 8] = zeros
warp.copy B[3] <- A[1, 2]
warp.copy C[1, 0:8] <- B
"""),
    md("Forcing the fallback where `gmem_smem` would run (it still warns), through a swizzled buffer:"),
    code("""
%%tilecopy forced --view text
kernel forced threads=32
global A: float32[8, 32]
global B: float32[8, 32]
shared S: float32[8, 32] @ swizzle(2, 3, 3)
warp.copy S <- A dispatch=fallback
cta_sync
warp.copy B <- S
check B == A
"""),
    md("""
### How much slower?

`--bench` times the launch with CUDA events, but only on a GPU; this notebook is stored from the CPU simulator,
where `--bench` only reports that it was ignored. On a GPU machine, run the cell above with `--launch gpu --bench`,
and once more without `dispatch=fallback`, to compare one elected thread with 32 threads of vector moves.
"""),
]


COPY_VARIANTS = [
    md("""
# copy → gmem_smem, ldstmatrix, reg

The fast `copy` variants, all priority 10, are tried in name order after priority (TVM TIRx's tie-break):
`gmem_smem` (global ↔ shared), `ldstmatrix` (16-bit register fragments ↔ shared through `ldmatrix`/`stmatrix`),
`reg` (register tiles ↔ global or shared). Each one declines what it cannot do, with a reason that shows in the
op's why-table, and the next one gets its turn; the scalar `fallback` (priority 0, `copy_fallback.ipynb`) comes
last.
""" + SIM_NOTE),
    code("%load_ext tilemagic\n%config TileMagics.launch = \"sim\""),
    code("%tilemagic variants"),
    md("""
## Demonstration program

One warpgroup: global → swizzled shared (`gmem_smem`), shared → a register tile laid out as the warps' `ldmatrix`
fragment (`ldstmatrix`), registers → global (`reg`), registers → shared again (`stmatrix`) and back to global.
"""),
    code("""
%%tilecopy family --out fam
kernel family threads=128
global A: float16[64, 16]
global B: float16[64, 16]
global C: float16[64, 16]
shared S: float16[64, 16] @ swizzle(3, 1, 3)
shared U: float16[64, 16] @ swizzle(3, 1, 3)
local  a: float16[64, 16] @ S[(4, 2, 8, 2, 4, 2) : (1@wid_in_wg, 2, 4@laneid, 4, 1@laneid, 1)]
wg.copy S <- A
cta_sync
wg.copy a <- S
wg.copy B <- a
wg.copy U <- a
cta_sync
wg.copy C <- U
check B == A
check C == A
"""),
    code(SHOW_HELPERS),
    md("""
## gmem_smem

### What it accepts

| property | requirement |
|---|---|
| memories | global → shared or shared → global (`storage_scope`) |
| exec scope | `thread`, `warp`, `wg`, `cta`, all threads of it (an op of this language always has them all) |
| size | the region's element count is a multiple of the scope's threads (`divides_thread_cnt`: TVM's "region size N not divisible by thread_cnt=T") |
| layouts | any shared layout; the vector width adapts |

### Algorithm

1. **Order** the region's elements row-major (the global side's order, which drives the split as in TVM).
2. **Split** them into `[outer, threads, vec]`: thread *t* moves vectors *f*·threads + *t* for *f* < outer.
3. **Vector width**: the widest of 16, 8, 4, 2, 1 bytes (then one element) such that threads·vec divides the
   region and every vector is contiguous and naturally aligned in *both* buffers, after the shared layout; a
   swizzle caps it at one chunk of 2^`per_element` elements.
4. **Emit** one `ld.<src>` into registers and one `st.<dst>` per vector, the addresses as digit expressions of the
   thread id and the loop variable (a swizzled address is its tile address XOR-ed), in a serial loop over `outer`
   (TVM does not unroll it).
"""),
    code("print(fam.dispatch[0].table())"),
    md("### Generated TIRx IR and CUDA (line 9, `S <- A`)"),
    code("print(op_lines(fam.ir, 9))\nprint()\nprint(op_lines(fam.cuda, 9))"),
    md("""
### How inputs change the algorithm

| input | effect |
|---|---|
| more threads for the same tile | narrower vectors (threads × vec must divide the region) |
| a swizzle | vec ≤ 2^`per_element` elements; the address becomes `t ^ t // 2^(M+S) % 2^B * 2^M` |
| a column-major or interleaved shared layout | vec = the length of the contiguous runs both sides share |
| a region that starts off-alignment (`A[:, 3:67]`) | narrower vectors, down to one element |
| a size the threads do not divide | declines: the fallback copies |
"""),
    code('''
def gs_cell(scope, threads, rows, cols, dtype, smem="", gcols=None, c0=0):
    g = gcols or cols
    win = f"[:, {c0}:{c0 + cols}]" if gcols else ""
    lay = f" @ {smem}" if smem else ""
    return (f"kernel gs threads={threads}\\nglobal A: {dtype}[{rows}, {g}]\\nglobal B: {dtype}[{rows}, {g}] = zeros\\n"
            f"shared S: {dtype}[{rows}, {cols}]{lay}\\n{scope}.copy S <- A{win}\\ncta_sync\\n"
            f"{scope}.copy B{win} <- S\\ncheck B{win} == A{win}\\n")

for args in [("warp", 32, 8, 64, "float16"), ("wg", 128, 8, 64, "float16"), ("cta", 256, 8, 64, "float16"),
             ("warp", 32, 8, 64, "float16", "swizzle(2, 3, 3)"),
             ("warp", 32, 8, 32, "float32", "S[(8, 8, 4) : (4, 32, 1)]"),
             ("warp", 32, 8, 16, "float32", "S[(8, 16) : (1, 8)]"),
             ("warp", 32, 8, 64, "float16", "", 70, 3), ("warp", 32, 4, 6, "float32")]:
    show(gs_cell(*args))
'''),
    md("""
## ldstmatrix

### What it accepts

| property | requirement |
|---|---|
| memories | a register tile ↔ shared memory (`storage_scope`) |
| exec scope | `warp`, `wg`, `cta` (`exec_scope`), with the register layout's thread axes inside it (`register_layout`) |
| target | `ldmatrix` sm_75+, `stmatrix` sm_90+ (`sm_version`) |
| lowering (declines otherwise) | 16-bit elements; the layout spans whole warps; every thread holds its elements in register pairs (2k, 2k+1); for every 32-bit register, the 32 lanes of each warp hold one 8×8 matrix of the shared tile — lane *t* its (row *t*/4, columns 2(*t*%4), +1), or the transpose for `.trans` — whose rows are 16-byte aligned runs; a swizzle keeps 16-byte chunks (`per_element` ≥ 3) |

### Algorithm

1. **Pair** each thread's elements into 32-bit registers (the same slots in every thread).
2. **Match** every register of every warp against the m8n8 fragment, first row-major (no `.trans`), then
   transposed (`.trans`); one orientation for the whole copy. Each matrix row is 8 contiguous elements at a
   multiple of 8.
3. **Group** each thread's registers into instructions of `num` = 4, 2 or 1 matrices (the widest that divides).
4. **Address**: in instruction *g*, thread *t* gives row *t*%8 of matrix *t*/8 (threads past 8·num repeat).
5. **Emit** `ldmatrix.sync.aligned.m8n8.x{num}[.trans].shared.b16` (registers first) or `stmatrix...` (address
   first), unrolled as in TVM.
"""),
    code("print(fam.dispatch[1].table())"),
    md("### Generated TIRx IR and CUDA (line 11, `a <- S`, and line 13, `U <- a`)"),
    code("print(op_lines(fam.ir, 11))\nprint(op_lines(fam.ir, 13))\nprint()\nprint(op_lines(fam.cuda, 11))"),
    md("""
### How inputs change the algorithm

| input | effect |
|---|---|
| an 8×8 / 16×8 / 16×16 fragment per warp | `.x1` / `.x2` / `.x4` |
| registers holding columns of the shared rows | `.trans` |
| a larger fragment | several instructions, unrolled |
| fp32, a row-per-thread layout, register pairs that are not (2k, 2k+1), unaligned rows, `swizzle(2, ...)` | declines: `reg` copies |
| `--arch sm_80` | `ldmatrix` still; `stmatrix` is rejected (`sm_version`) and `reg` stores |
"""),
    code('''
def sm_cell(layout, rows, cols, scope, threads, dtype, smem=""):
    lay = f" @ {smem}" if smem else ""
    return (f"kernel sm threads={threads}\\nglobal A: {dtype}[{rows}, {cols}]\\nglobal B: {dtype}[{rows}, {cols}]\\n"
            f"shared S: {dtype}[{rows}, {cols}]{lay}\\nlocal a: {dtype}[{rows}, {cols}] @ {layout}\\n"
            f"{scope}.copy S <- A\\ncta_sync\\n{scope}.copy a <- S\\n{scope}.copy B <- a\\ncheck B == A\\n")

for args in [("S[(8, 4, 2) : (4@laneid, 1@laneid, 1)]", 8, 8, "warp", 32, "float16"),
             ("S[(2, 8, 4, 2) : (2, 4@laneid, 1@laneid, 1)]", 16, 8, "warp", 32, "bfloat16"),
             ("S[(2, 8, 2, 4, 2) : (2, 4@laneid, 4, 1@laneid, 1)]", 16, 16, "warp", 32, "float16"),
             ("S[(2, 4, 2, 2, 8) : (4, 1@laneid, 1, 2, 4@laneid)]", 16, 16, "warp", 32, "float16"),
             ("frag(16x128b)", 64, 64, "wg", 128, "float16", "swizzle(3, 3, 3)"),
             ("S[(2, 8, 2, 4, 2) : (2, 4@laneid, 4, 1@laneid, 1)]", 16, 16, "warp", 32, "float32"),
             ("S[(32, 8) : (1@laneid, 1)]", 32, 8, "warp", 32, "float16")]:
    show(sm_cell(*args), op=1)
'''),
    md("""
## reg

### What it accepts

| property | requirement |
|---|---|
| memories | a register tile ↔ global or shared memory (`storage_scope`) |
| exec scope | `thread`, `warp`, `wg`, `cta`, with the layout's thread axes inside it (`register_layout`) |
| lowering (declines otherwise) | every thread holds its part of the region in the same register slots; the last threads of the layout's scope may hold nothing (they are guarded out) |

### Algorithm

1. **Who holds what**: the register layout's thread axes (`laneid`, `wid_in_wg`, `tid_in_wg`, `warpid`, `tx`) give
   each element's thread, `m` its register slot; each thread's elements are sorted by slot.
2. **Vector width**: the widest of 16 … 1 bytes whose runs are contiguous in the registers and in memory and
   naturally aligned on both sides (at most a swizzle chunk).
3. **Emit** per thread one `ld.<space>`/`st.<space>` per vector, the addresses as digit expressions of the thread
   id and the loop variable, in a serial loop.
"""),
    code("print(fam.dispatch[2].table())"),
    md("### Generated TIRx IR and CUDA (line 12, `B <- a`)"),
    code("print(op_lines(fam.ir, 12))\nprint()\nprint(op_lines(fam.cuda, 12))"),
    md("""
### How inputs change the algorithm

| input | effect |
|---|---|
| a row per thread (`S[(128, W) : (1@tid_in_wg, 1)]`) | the widest vectors: a row is contiguous in both |
| tcgen05 fragments `frag(...)` | the vector follows the fragment's runs: one register for `16x64b`/`16x128b`, two for `16x256b` |
| permuted registers (`S[(32, 2, 4) : (1@laneid, 1, 2)]`) | no two adjacent registers hold adjacent elements: one element per move |
| gapped registers (`S[(128, 4) : (1@tid_in_wg, 2)]`) | one register per move |
| a layout over half a warp | `if laneid < 16:` around the moves |
"""),
    code('''
def reg_cell(layout, rows, cols, scope, threads, dtype):
    return (f"kernel r threads={threads}\\nglobal A: {dtype}[{rows}, {cols}]\\nglobal B: {dtype}[{rows}, {cols}]\\n"
            f"local a: {dtype}[{rows}, {cols}] @ {layout}\\n{scope}.copy a <- A\\n{scope}.copy B <- a\\ncheck B == A\\n")

for args in [("S[(128, 8) : (1@tid_in_wg, 1)]", 128, 8, "wg", 128, "float16"),
             ("frag(32x32b)", 128, 32, "wg", 128, "float32"), ("frag(16x64b)", 64, 32, "wg", 128, "float32"),
             ("frag(16x256b)", 128, 64, "wg", 128, "float16"),
             ("S[(32, 2, 4) : (1@laneid, 1, 2)]", 32, 8, "warp", 32, "float16"),
             ("S[(128, 4) : (1@tid_in_wg, 2)]", 128, 4, "wg", 128, "float32"),
             ("S[(16, 16) : (1@laneid, 1)]", 16, 16, "warp", 32, "float16")]:
    show(reg_cell(*args))
'''),
    md("""
## Forcing a variant, and when nothing fits

`dispatch=NAME` narrows the candidates to one variant; its predicates still run. An unknown name is an error at
the name that lists the registered ones:
"""),
    code("""
%%tilecopy unknown
kernel k threads=32
global A: float16[8, 64]
shared S: float16[8, 64]
warp.copy S <- A dispatch=gmem
""", tags=["raises-exception"]),
    md("A forced variant that declines fails with its why-table:"),
    code("""
%%tilecopy forced_decline
kernel k threads=32
global A: float32[16, 16]
shared S: float32[16, 16]
local  a: float32[16, 16] @ S[(2, 8, 2, 4, 2) : (2, 4@laneid, 4, 1@laneid, 1)]
warp.copy S <- A
cta_sync
warp.copy a <- S dispatch=ldstmatrix
""", tags=["raises-exception"]),
]


TCGEN05_LDST = [
    md("""
# copy_async → tcgen05_ldst (`tmem<->local`)

`wg.copy_async` between a tensor-memory (TMEM) region and a register tile is lowered by the `tmem<->local`
variant, as TVM TIRx's `tcgen05_ldst.py`: TMEM → registers is `tcgen05.ld`, registers → TMEM is `tcgen05.st`.
Only the instructions are emitted; `wait ld` / `wait st` are the program's job. The variant picks the
instruction shape (`.32x32b`, `.16x64b`, `.16x128b`, `.16x256b`), its `num`, how many times each warp issues it
and the PTX row/column immediates from the two layouts: the TMEM buffer's data path (D, F or B) and the register
tile's fragment.
""" + SIM_NOTE),
    code("%load_ext tilemagic\n%config TileMagics.launch = \"sim\""),
    md("""
## What it accepts

Predicates (as TVM): `validate_copy_op` (same dtype, same non-unit extents), `exec_scope` (`wg`),
`storage_scope` (tmem → local or local → tmem). Then the emitter takes one of three paths, in this order:

| property | requirement |
|---|---|
| datapath B (`@ datapath(B)`, the `cta_group::2` M=64 tile) | a 32-bit dtype, the 64-row `frag(32x32b)` image on the register side, both sides whole, N/2 a legal `num` → one `.32x32b.x{N/2}` |
| a register layout equal to `frag(16x64b / 16x128b / 16x256b)` | datapath D with 128 or 64 fragment rows, or datapath F with 64; num = columns / (2, 4, 8 32-bit columns × elements per cell), legal per PTX Table 49 (≤ x128 / x64 / x32) |
| otherwise `.32x32b` | datapath D, a 128-row tile with row r in thread r, width a power-of-two number of 32-bit columns up to 128 |
| dtypes | fp32, int32; fp16, bf16 two per 32-bit cell; uint8, int8 four per cell (`.32x32b` only); no `.pack::16b` |
| slices | columns only, on both sides, the same width; a `16x*b` slice covers whole atoms |

Which data path takes which shape is TVM's `_TMEM_ATOM_COMPAT`: D takes everything but B's image, F only a
64-row `16x*b` fragment, B only its own path. Everything else declines with the rule and the fix.
"""),
    md("""
## Demonstration program

A warpgroup stores a 128×64 fp32 tile, held as the `.16x256b` fragment, into a datapath-D buffer and reads it
back: each warp issues `tcgen05.st.16x256b.x8` twice (rows 0 and 16 of its 32-lane quadrant), then the same
`tcgen05.ld` pair. The heatmap shows which warp owns which lanes.
"""),
    code("""
%%tilecopy demo
kernel demo threads=128
global A: float32[128, 64]
global B: float32[128, 64]
tmem  T: float32[128, 64]
local f: float32[128, 64] @ frag(16x256b)
wg.copy f <- A
wg.copy_async T <- f
wait st
cta_sync
wg.copy_async f <- T
wait ld
wg.copy B <- f
check B == A
"""),
    md("""
## Algorithm

1. **Direction** from the scopes: tmem → local is `tcgen05.ld`, local → tmem is `tcgen05.st`.
2. **Datapath B first.** A TMEM buffer `@ datapath(B)` is moved as one `.32x32b.x{N/2}` over all 128 lanes: the
   left N/2 columns sit in lanes 0..63, the right ones in lanes 64..127, so the 64-row register image
   (`frag(32x32b)` with 64 rows) is a relabelled 128-row `.32x32b` tile.
3. **Atom match.** The register layout is compared, after canonicalisation, with `frag(16x64b)`,
   `frag(16x128b)` and `frag(16x256b)` of its shape; a match fixes the shape and
   `num = cols / (col_factor · elements per cell)` with col_factor 2, 4, 8.
4. **TMEM window.** The TMEM region is sliced through its layout; the window must be the data path's own layout
   (D: `S[(rows, w) : (1@TLane, 1@TCol)]`, F: `datapath(F)` of width w) plus offsets: the `TCol` offset is the
   column, the `TLane` offset (0 or 16) the F sub-slab. TVM's `_TMEM_ATOM_COMPAT` gates data path × shape × rows.
5. **Issue per 16-row slab.** A `.16x*b` instruction moves 16 lanes of each warp's quadrant: a 128-row fragment
   on D issues twice (PTX row immediate 0 and 16, the second slab's registers after the first's); a 64-row
   fragment once, at row 16 · sub_slab. `.32x32b` covers a warp's 32 lanes in one issue.
6. **Registers and address.** Each instruction takes `regs = num × (1, 1, 2, 4)` 32-bit words of the tile
   starting at the column slice's register; the address is `tmem_addr[0]`, composed with `get_tmem_addr(addr,
   row, col)` when (row, col) ≠ (0, 0). `ld` lists the destination registers first, `st` the address first.

The demonstration's why-table for the store:
"""),
    code("""
%%tilecopy why --view text --launch off
kernel why threads=128
tmem  T: float32[128, 64]
local f: float32[128, 64] @ frag(16x256b)
wg.copy_async T <- f
wait st
"""),
    md("""
## Generated TIRx IR

The two slabs of the store and of the load: the same registers `f_32b[0..31]` and `f_32b[32..63]`, row
immediates 0 and 16 (`T.cuda.get_tmem_addr`); the IR and CUDA panes of the demonstration above show the same.
"""),
    code("""
%%tilecopy ir_view --view text --launch off
kernel ir_view threads=128
tmem  T: float32[128, 16]
local f: float32[128, 16] @ frag(16x256b)
wg.copy_async T <- f
wait st
wg.copy_async f <- T
wait ld
"""),
    md("""
## Generated CUDA

Inline PTX for `sm_100a`: one `asm volatile` per instruction, destination registers first for `ld`, the address
first for `st`. On a pre-Blackwell GPU the same IR runs through the emulated source (`res.cuda_emulated`).
Here the Layout B readback of the language spec: one `.32x32b.x32` each way.
"""),
    code("""
%%tilecopy b_readback --view text --launch off
kernel b_readback threads=128
tmem  acc:  float32[64, 64] @ datapath(B)
local frag: float32[64, 64] @ frag(32x32b)
wg.copy_async frag <- acc
wait ld
wg.copy_async acc <- frag
wait st
"""),
    md("""
## How inputs change the algorithm

| input | effect | cell |
|---|---|---|
| a plain `S[(128, W) : (1@tid_in_wg, 1)]` tile instead of a fragment | `.32x32b.x{W/elements per cell}`, one issue | 1 |
| `frag(16x256b)`, 128 rows (D) | `.16x256b.x{W/8}`, two issues (rows 0, 16) | the demonstration |
| `datapath(F, sub_slab=1)`, 64-row fragment | one issue at row 16 | 2 |
| rows `0:64` of a datapath-D buffer, 64-row fragment | one issue at row 0: lanes 0..15 of each quadrant | 3 |
| `datapath(B)` | one `.32x32b.x{N/2}` over 128 lanes | the CUDA section |
| a column slice of the fragment | a smaller num at the slice's registers | 4 |
| fp16 / bf16 | two elements per register and cell: the same num covers twice the columns | 5 |
| `at T + COLS` | the column immediate starts at COLS | 2 |
| a `.16x*b` fragment against datapath B | declines: "allocate the fragment with frag(32x32b)" | 6 |

**1.** The same TMEM buffer read as a plain 128-row tile: `.32x32b`, one instruction per warp.
"""),
    code("""
%%tilecopy plain --view text
kernel plain threads=128
global A: float32[128, 16]
global B: float32[128, 16]
tmem  T: float32[128, 16]
local a: float32[128, 16] @ S[(128, 16) : (1@tid_in_wg, 1)]
wg.copy a <- A
wg.copy_async T <- a
wait st
cta_sync
wg.copy_async a <- T
wait ld
wg.copy B <- a
check B == A
"""),
    md("**2.** The upper F sub-slab of an allocation, placed 16 columns in: row immediate 16, column 16."),
    code("""
%%tilecopy f_upper --view text
kernel f_upper threads=128
global A: float32[64, 32]
global B: float32[64, 32]
tmem  T: float32[128, 64]
tmem  U: float32[64, 32] @ datapath(F, sub_slab=1) at T + 16
local f: float32[64, 32] @ frag(16x128b)
wg.copy f <- A
wg.copy_async U <- f
wait st
cta_sync
wg.copy_async f <- U
wait ld
wg.copy B <- f
check B == A
"""),
    md("""
**3.** A 64-row fragment on rows `0:64` of a datapath-D buffer (TVM's pairing): one issue at row 0, so fragment
row r sits in lane 32·(r//16) + r%16 — the dispatch summary says so. Declare a datapath F buffer when the rows
must match the lanes.
"""),
    code("""
%%tilecopy d64 --view text
kernel d64 threads=128
global A: float32[64, 16]
global B: float32[64, 16]
tmem  T: float32[128, 16]
local f: float32[64, 16] @ frag(16x64b)
wg.copy f <- A
wg.copy_async T[0:64, :] <- f
wait st
cta_sync
wg.copy_async f <- T[0:64, :]
wait ld
wg.copy B <- f
check B == A
"""),
    md("**4.** Reading a `.16x256b` fragment back in two column chunks: `.x4` instead of `.x8`, at registers 0 and 16 of each slab (32 and 48 for the second)."),
    code("""
%%tilecopy chunks --view text
kernel chunks threads=128
global A: float32[128, 64]
global B: float32[128, 64]
tmem  T: float32[128, 64]
local a: float32[128, 64] @ frag(16x256b)
local b: float32[128, 64] @ frag(16x256b)
wg.copy a <- A
wg.copy_async T <- a
wait st
cta_sync
wg.copy_async b[:, 0:32] <- T[:, 0:32]
wg.copy_async b[:, 32:64] <- T[:, 32:64]
wait ld
wg.copy B <- b
check B == A
"""),
    md("**5.** bf16: 64 columns are 32 TMEM columns, so `.16x64b.x16` (two elements per 32-bit register)."),
    code("""
%%tilecopy bf16 --view text
kernel bf16 threads=128
global A: bfloat16[64, 64]
global B: bfloat16[64, 64]
tmem  T: bfloat16[128, 64]
tmem  L: bfloat16[64, 64] @ datapath(F) at T
local f: bfloat16[64, 64] @ frag(16x64b)
wg.copy f <- A
wg.copy_async L <- f
wait st
cta_sync
wg.copy_async f <- L
wait ld
wg.copy B <- f
check B == A
"""),
    md("""
**6.** A `.16x*b` fragment against datapath B: the variant declines with the rule and the fix, and with no other
`copy_async` variant the cell stops with the why-table.
"""),
    code("""
%%tilecopy bad_b
kernel bad_b threads=128
tmem  acc: float32[64, 64] @ datapath(B)
local f:   float32[64, 64] @ frag(16x256b)
wg.copy_async f <- acc
""", tags=["raises-exception"]),
]


def shape_cell(shape, cols, color_by):
    """A classroom cell: a warpgroup stores a 128 × ``cols`` fp32 ``frag(shape)`` tile into TMEM, drawn."""
    return code(f"""
%%tilecopy shape_{shape} --heatmap instr,fragment --color-by {color_by}
kernel shape_{shape} threads=128
global A: float32[128, {cols}]
tmem  T: float32[128, {cols}]
local f: float32[128, {cols}] @ frag({shape})
wg.copy f <- A
wg.copy_async T <- f
wait st
""")


# the seed fallback demo (a warp copies a 4×6 tile) as a text report
FALLBACK_TEXT = demo_cell("fallback_demo").replace("%%tilecopy fallback_demo", "%%tilecopy fallback_demo --view text", 1)

# The classroom tour: every code cell after the first is a %%tilecopy cell
# (tests/unit/test_notebooks.py checks it), so a class can run it without reading Python.
CLASSROOM_TMEM = [
    md("""
# A guided tour of Blackwell tensor memory (TMEM)

This notebook is a class handout. Every code cell is a `%%tilecopy` cell: a few lines that describe a tile copy.
tilemagic turns the description into the TIR-like IR and the CUDA a compiler would produce, draws where the data
lands in tensor memory, runs the kernel and checks the result. You do not need to write any Python.

How to read a report: the **why-table** of each op lists the variants the dispatcher tried and why each was chosen
or not; the **IR** and **CUDA** panes follow (hover a description line to light up the lines it produced); the
**pictures** come last, then the launch with `check ... PASS`.

Section numbers like §9.7.16.8.1 refer to the *PTX ISA* (version 9.0), section 9.7.16, the `tcgen05`
instructions.
""" + SIM_NOTE),
    code("%load_ext tilemagic\n%config TileMagics.launch = \"sim\""),
    md("""
## 1. What TMEM is

Data-centre Blackwell GPUs (compute capability 10.x, code compiled for `sm_100a`) add a new on-chip memory next to
the tensor cores: **tensor memory**. The `tcgen05.mma` instructions keep their accumulators there instead of in registers.

* **Shape (§9.7.16.1).** Per CTA, TMEM is a 2-D array of **128 lanes** (rows) × **512 columns**, every cell
  **32 bits**. That is 256 KiB, as much as the register file of a whole SM.
* **Address (§9.7.16.1.1).** A 32-bit value: the lane in bits 31..16, the column in bits 15..0.
* **Allocation (§9.7.16.1.2, §9.7.16.7.1).** TMEM is not there for the taking: one warp runs
  `tcgen05.alloc` for a power-of-two number of columns between 32 and 512 (the unit is 32 columns, always all 128
  lanes) and gets the start address in shared memory. The same warp must give the columns back with
  `tcgen05.dealloc` before the kernel ends. `tcgen05.relinquish_alloc_permit` tells the hardware that this CTA
  will not allocate again (an `alloc` after it is an error). CTAs on the same SM share the 512 columns, so an
  `alloc` that does not fit waits until another CTA frees columns.
* **Moving data (§9.7.16.8.3, §9.7.16.8.4).** Threads reach TMEM only through `tcgen05` instructions:
  `tcgen05.ld` (TMEM → registers) and `tcgen05.st` (registers → TMEM), each executed by a whole warp, besides
  `tcgen05.cp` from shared memory and the MMA itself. `ld` and `st` are asynchronous: `tcgen05.wait::ld` /
  `tcgen05.wait::st` (§9.7.16.8.5) wait until the thread's own earlier loads or stores are complete.

In a description you declare TMEM buffers with `tmem NAME: DTYPE[rows, cols]`; tilemagic places them one after the
other, allocates for all of them (warp 0), relinquishes the permit and deallocates at the end. 16-bit values are
packed two per 32-bit cell. Below, `acc` needs 32 columns and `h16` (fp16, only declared, to show the placement)
needs 16: 48 columns, rounded up to an allocation of 64. Look for the `tcgen05.alloc`, `relinquish_alloc_permit`
and `dealloc` lines in the IR, and for the TMEM table at the end.
"""),
    code("""
%%tilecopy tmem_alloc --view text
kernel tmem_alloc threads=128
global A: float32[128, 32]
global B: float32[128, 32]
tmem  acc:  float32[128, 32]
tmem  h16: float16[128, 32]
local a: float32[128, 32] @ S[(128, 32) : (1@tid_in_wg, 1)]
wg.copy a <- A
wg.copy_async acc <- a
wait st
cta_sync
wg.copy_async a <- acc
wait ld
wg.copy B <- a
check B == A
"""),
    md("""
## 2. The four shapes of `tcgen05.ld` / `tcgen05.st`

One `tcgen05.ld` or `tcgen05.st` moves a block of TMEM between the cells and the registers of the 32 threads of a
warp. The **shape** says how big the block is and which thread holds which cell (§9.7.16.2.3); `.num` (`.x1`,
`.x2`, …, `.x128`) repeats the block along the columns (the legal values are PTX Table 49):

| shape | lanes | 32-bit columns per `.x1` | registers per thread per `.x1` | largest `.num` |
|---|---|---|---|---|
| `.32x32b` | 32 | 1 | 1 | `.x128` |
| `.16x64b` | 16 | 2 | 1 | `.x128` |
| `.16x128b` | 16 | 4 | 2 | `.x64` |
| `.16x256b` | 16 | 8 | 4 | `.x32` |

In a description you pick the shape through the register side: `local f: ... @ frag(16x128b)` is the register
layout a warpgroup sees for that shape (TVM TIRx's `T.alloc_tcgen05_ldst_frag`). The four cells below load a
128×8 fp32 tile (128×16 for `.16x256b`) from global memory into registers and store it into TMEM with
`tcgen05.st`, one shape each. (A `tcgen05.ld` of the same shape binds the same registers to the same cells, in the
other direction; from section 4 on the cells read their data back and check it.) Each report has two pictures:

* **instr**: the TMEM occupancy, one panel per instruction a warp issues: lanes (rows) × the allocated columns,
  each cell coloured by the **thread** (or the **register**) that holds it. Solid lines are the 32-lane quadrants, dotted
  lines the 16-lane halves a `.16x*b` shape works in.
* **fragment**: the other direction: for every thread (one row per thread) and 32-bit register (one column per
  register), the TMEM lane within the warp's quadrant (left panel) and the TMEM column (right panel) it is bound to.

### `.32x32b`: one lane per thread

Thread *t* of warp *w* owns lane 32·*w* + *t*; its register *r* is column *r*. A warp moves its 32 lanes in one
instruction, `.x8` for 8 columns.
"""),
    shape_cell("32x32b", 8, "thread"),
    md("""
### `.16x64b`: two threads per lane

A `.16x*b` instruction covers only 16 lanes, so for a 128-row tile each warp issues it twice: once at row 0 and once
at row 16 of its quadrant (the PTX row immediate; the second half's registers follow the first's). In a `.16x64b`
block, lane *k* (0–7) holds threads 4*k* and 4*k*+2 in its two columns, lane 8+*k* threads 4*k*+1 and 4*k*+3.
Each thread has one register per `.x1`: 8 columns are `.x4`.
"""),
    shape_cell("16x64b", 8, "thread"),
    md("""
### `.16x128b`: four threads per lane, two registers each

Lane *k* (0–7) holds register 0 of threads 4*k* … 4*k*+3 in columns 0–3; lane 8+*k* holds their register 1.
8 columns are `.x2`: registers 2 and 3 repeat the pattern in columns 4–7. Here the cells are coloured by
**register**: in the second panel (row 16) the registers are 4–7, since the second issue's registers follow the
first's.
"""),
    shape_cell("16x128b", 8, "reg"),
    md("""
### `.16x256b`: the `mma.sync` accumulator pattern

Lane *k* (0–7) holds registers 0 and 1 of threads 4*k* … 4*k*+3, side by side in columns 0–7 (thread 4*k*+*j* in
columns 2*j* and 2*j*+1); lane 8+*k* holds their registers 2 and 3. This is the m16n8 accumulator (C) fragment of
`mma.sync`, familiar from Ampere and Hopper. Each `.x1` is 8 columns and four registers: 16 columns are `.x2`,
registers 4–7 fill columns 8–15, and the issue at row 16 uses registers 8–15.
"""),
    shape_cell("16x256b", 16, "reg"),
    md("""
## 3. The quadrant rule: warp *w* reaches lanes 32·(*w*%4) … 32·(*w*%4)+31

§9.7.16.8.1: TMEM is split into four **quadrants** of 32 lanes, and warp *w* of the CTA may only access the lanes
of quadrant *w* % 4; every warp may access every column. That is why all the pictures above have four bands, and
why a copy of all 128 lanes needs a whole warpgroup (`wg.copy_async`): four warps, one per quadrant.

The cell below writes an 8-column window `T[:, 8:16]` of a 32-column buffer and colours the cells by **warp**.
The window picks columns; the rows of `T[:, …]` are all 128 lanes, and each warp takes its own quadrant.
Look at the IR: every warp passes the *same* address `get_tmem_addr(tmem_addr[0], 0, 8)`, lane field 0 and
column 8. The hardware takes the quadrant from the warp that issues the instruction, not from the address, so
the lane field only says where inside the quadrant to start (0, or 16 for the upper half of a `.16x*b` shape).
TVM TIRx, tilelang and DeepGEMM emit the same addresses. A consequence: a row window other than `T[:, …]`,
`T[0:64, …]` or an F sub-slab (section 4), say `T[64:128, 0:8]`, cannot be expressed by an address and is
refused with *"has TLane offset 64; only 0 or 16 (the datapath F sub-slab) fit the PTX row immediate"*.

**`--strict`.** The ISA forbids an address whose quadrant bits (lane bits 5–6, address bits 21–22) name
another warp's quadrant, and nobody has measured what the hardware does then. With `--strict` the simulator
(and the TMEM emulation on a GPU) stops with a located `LaunchError` when an address's quadrant bits are neither 0
nor *w* % 4; the cell below passes it. NVIDIA's debug check (`ptxas -g-tmem-access-check`, on under `-g`) is
stricter still: it traps unless the quadrant bits equal *w* % 4, which is why DeepGEMM's debug builds add
32·(*w*%4) to the lane field.
"""),
    code("""
%%tilecopy quadrants --strict --heatmap tmem --color-by warp
kernel quadrants threads=128
global A: float32[128, 8]
tmem  T: float32[128, 32]
local a: float32[128, 8] @ S[(128, 8) : (1@tid_in_wg, 1)]
wg.copy a <- A
wg.copy_async T[:, 8:16] <- a
wait st
"""),
    md("""
## 4. Data paths D, F and B: where an accumulator's rows live

`tcgen05.mma` writes its M×N accumulator into TMEM in one of several **data-path layouts** (§9.7.16.10.5). A TMEM
buffer declares the one it holds with `@ datapath(...)`; the copy then picks the instruction that reads it.

| layout | MMA | rows per CTA | logical row *r*, column *c* sits at |
|---|---|---|---|
| `datapath(D)` (the default) | M=128, one CTA | 128 | lane *r*, column *c* |
| `datapath(F, sub_slab=s)` | M=64, one CTA | 64 | lane 32·(*r*//16) + 16·*s* + *r*%16, column *c* |
| `datapath(B)` | M=128 over a CTA pair (`cta_group::2`) | 64 | lane *r* + 64·(*c* // (N/2)), column *c* % (N/2) |

Everything in sections 2 and 3 was **D**: lane = row.

### F: 64 rows, 16 per quadrant

An M=64 accumulator uses only 16 lanes of each quadrant: rows 0–15 in lanes 0–15, rows 16–31 in lanes 32–47, and
so on, all shifted by 16 lanes for the upper **sub-slab** (`sub_slab=1`). Two M=64 tiles can therefore share one
allocation. This is the "Layout F halves" example of the language spec: `lower` and `upper` alias the same 32
columns (`at T`). A 64-row `frag(16x64b)` fragment is read with one `.16x64b` per warp at row 0 (lower) or row 16
(upper). `.32x32b` is refused for F: it would move all 32 lanes of the quadrant, half of them the other tile's.

To *see* the placement, the cell then reads the whole allocation `T` as a plain D tile (`.32x32b`) into `E`, whose
row *i* is TMEM lane *i*. The checks say where the rows of `A` (lower) and `B` (upper) went.
"""),
    code("""
%%tilecopy f_halves --view text
kernel f_halves threads=128
global A: float32[64, 32]
global B: float32[64, 32]
global C: float32[64, 32]
global E: float32[128, 32]
tmem  T:     float32[128, 32]
tmem  lower: float32[64, 32] @ datapath(F, sub_slab=0) at T
tmem  upper: float32[64, 32] @ datapath(F, sub_slab=1) at T
local lo: float32[64, 32] @ frag(16x64b)
local hi: float32[64, 32] @ frag(16x64b)
local d:  float32[128, 32] @ frag(32x32b)
wg.copy lo <- A
wg.copy hi <- B
wg.copy_async lower <- lo
wg.copy_async upper <- hi
wait st
cta_sync
wg.copy_async lo <- lower
wg.copy_async d <- T
wait ld
wg.copy C <- lo
wg.copy E <- d
check C == A
check E[0:16, :] == A[0:16, :]
check E[16:32, :] == B[0:16, :]
check E[32:48, :] == A[16:32, :]
check E[112:128, :] == B[48:64, :]
"""),
    md("""
### B: the right half of the columns under the left half

With `cta_group::2` two CTAs compute one M=128 tile; each holds 64 rows × N columns in **layout B**: the left N/2
columns in lanes 0–63, the right N/2 columns in lanes 64–127, so the buffer takes only N/2 columns. It is read with
one `.32x32b.x{N/2}` per warp over all 128 lanes, and the 64×N register tile a warpgroup sees is the 64-row
`frag(32x32b)`.

**A deliberate mistake.** After section 2 it is tempting to read the accumulator as a `.16x256b` fragment. The cell
below does that, and tilemagic stops: the error points at the line (`tilecopy:5:1`) and the why-table gives the
rule and the fix.
"""),
    code("""
%%tilecopy b_mistake
kernel b_mistake threads=128
tmem  acc: float32[64, 64] @ datapath(B)
local f:   float32[64, 64] @ frag(16x256b)
wg.copy_async f <- acc
wait ld
""", tags=["raises-exception"]),
    md("""
**The fix**, as the message says: allocate the fragment with `frag(32x32b)` as `float32[64, N]`. This is the
"Layout B readback" example of the language spec, a round trip (`A` → `acc` → `B`), plus a read of the same 32
columns as a D tile `T` into `E` (row *i* = lane *i*) to show the two halves: lanes 0–63 hold columns 0–31 of `A`,
lanes 64–127 columns 32–63.
"""),
    code("""
%%tilecopy b_readback --view text
kernel b_readback threads=128
global A: float32[64, 64]
global B: float32[64, 64]
global E: float32[128, 32]
tmem  T:    float32[128, 32]
tmem  acc:  float32[64, 64] @ datapath(B) at T
local frag: float32[64, 64] @ frag(32x32b)
local d:    float32[128, 32] @ frag(32x32b)
wg.copy frag <- A
wg.copy_async acc <- frag
wait st
cta_sync
wg.copy_async frag <- acc
wg.copy_async d <- T
wait ld
wg.copy B <- frag
wg.copy E <- d
check B == A
check E[0:64, :] == A[:, 0:32]
check E[64:128, :] == A[:, 32:64]
"""),
    md("""
## 5. Not every copy is fast: `fallback` vs `gmem_smem`

The same dispatcher decides ordinary copies. A `copy` between global and shared memory is tried with the fast
variants first (`gmem_smem`, `ldstmatrix`, `reg`, all priority 10), then the scalar `fallback` (priority 0), where
one elected thread copies element by element. Here (the quickstart's demo) a warp of 32 threads copies a 4×6 fp32
tile: 24 elements do not split over 32 threads, so `gmem_smem` declines ("region size 24 not divisible by
thread_cnt=32"), the register variants need a register tile, and the fallback runs, with TVM TIRx's `UserWarning`
under the cell.
"""),
    code(FALLBACK_TEXT),
    md("""
Make the tile 4×8: 32 elements, one per thread. Now `gmem_smem` accepts (compare its row in the why-tables of the
two cells), every thread moves its own element, and there is no warning. With a 32×64 tile each thread would move
16-byte vectors (`ld.global.v4`).
"""),
    code(FALLBACK_TEXT.replace("fallback_demo", "gmem_smem_4x8").replace("[4, 6]", "[4, 8]")),
    md("""
## Try it yourself

* In section 2, change `frag(16x128b)` to `S[(128, 8) : (1@tid_in_wg, 1)]`: which shape does the copy use now?
* Widen the `.16x256b` tile (`A`, `T` and `f`) to 128×256: why is it refused? (Count the registers per thread:
  two issues of `.16x256b.x32`.)
* In section 3, move the window to `T[:, 24:32]`. Then try to store 64 rows into lanes 64–127: make `A` and `a`
  `float32[64, 8]`, `a` a `frag(16x64b)`, and the window `T[64:128, 8:16]`. What does the why-table say, and why?
* In section 4, switch `lower` to `sub_slab=1` as well, and read the checks.
* Add `dispatch=fallback` to the first copy of the 4×8 cell.
"""),
]


NOTEBOOKS = {"quickstart": QUICKSTART, "copy_fallback": COPY_FALLBACK, "copy_variants": COPY_VARIANTS,
             "tcgen05_ldst": TCGEN05_LDST, "classroom_tmem": CLASSROOM_TMEM}


def build(name):
    nb = nbformat.v4.new_notebook()
    nb.cells = NOTEBOOKS[name]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    for i, cell in enumerate(nb.cells):  # stable ids: a rebuild changes only what the cells print
        cell.id = f"{name[:40]}-{i:03d}"
    client = NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True, record_timing=False,
                            resources={"metadata": {"path": str(ROOT / "notebooks")}})
    client.execute()
    out = ROOT / "notebooks" / f"{name}.ipynb"
    nbformat.write(nb, out)
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    for n in sys.argv[1:] or NOTEBOOKS:
        build(n)
