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

NOTEBOOKS = {"quickstart": QUICKSTART}


def build(name):
    nb = nbformat.v4.new_notebook()
    nb.cells = NOTEBOOKS[name]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    client = NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(ROOT / "notebooks")}})
    client.execute()
    out = ROOT / "notebooks" / f"{name}.ipynb"
    nbformat.write(nb, out)
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    for n in sys.argv[1:] or NOTEBOOKS:
        build(n)
