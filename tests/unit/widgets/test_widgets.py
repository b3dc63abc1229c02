"""Tests of the display layer: TMEM occupancy, heatmaps, text/HTML reports, the widget view.

The results are built by hand from IR nodes (no parser, lowering or simulator), so these
tests only exercise :mod:`tilemagic.widgets`.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tilemagic.cli import demo_source

from tilemagic.errors import Span
from tilemagic.ir.nodes import (
    Barrier, Bin, Buffer, Comment, Const, Grid, If, Kernel, Load, LoopVar, Seq, Store,
    TcgenAlloc, TcgenLdSt, TcgenWait, ThreadVar, VecMove, mul,
)
from tilemagic.result import (
    Candidate, CheckResult, DispatchRecord, LaunchResult, TileCopyResult,
)
from tilemagic.widgets import heatmap as hm
from tilemagic.widgets.html import highlight_lines, render_html
from tilemagic.widgets.text import format_values, render_text

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")


# ============================================================================ builders
def make_tmem_kernel(threads: int = 128, col: int = 0, row: int = 0, tmem_cols: int = 32) -> Kernel:
    """The seed round trip: T float16[128, 8] in TMEM, one .32x32b.x4 st and one ld."""
    A = Buffer("A", "global", "float16", (128, 8))
    B = Buffer("B", "global", "float16", (128, 8))
    a = Buffer("a", "local", "float16", (128, 8), per_thread=8)
    b = Buffer("b", "local", "float16", (128, 8), per_thread=8)
    T = Buffer("T", "tmem", "float16", (128, 8), tmem_col=col, datapath="D")
    addr = Buffer("tmem_addr", "shared", "uint32", (1,))
    st = TcgenLdSt("st", "32x32b", 4, a, 0, 4, addr, row, col, tmem=T, span=Span.point(9, 1))
    ld = TcgenLdSt("ld", "32x32b", 4, b, 0, 4, addr, row, col, tmem=T, span=Span.point(12, 1))
    body = Seq((
        If(Bin("==", ThreadVar("warpid"), Const(0)), TcgenAlloc(addr, tmem_cols)),
        Barrier(),
        Comment("L9: wg.copy_async T <- a  [copy_async/tmem<->local]", span=Span.point(9, 1)),
        st,
        TcgenWait("st"),
        Barrier(),
        Comment("L12: wg.copy_async b <- T  [copy_async/tmem<->local]", span=Span.point(12, 1)),
        ld,
        TcgenWait("ld"),
    ))
    return Kernel("tmem_roundtrip", threads, (A, B), (addr,), (a, b), (T,), tmem_cols, addr, body)


def make_fallback_kernel() -> Kernel:
    """The seed fallback: lane 0 of one warp copies a 4×6 fp32 tile through shared memory."""
    A = Buffer("A", "global", "float32", (4, 6))
    B = Buffer("B", "global", "float32", (4, 6))
    S = Buffer("A_smem", "shared", "float32", (4, 6))
    i, j = LoopVar("i"), LoopVar("j")
    i2, j2 = LoopVar("i"), LoopVar("j")
    lane0 = Bin("==", ThreadVar("laneid"), Const(0))
    body = Seq((
        Comment("L6: warp.copy A_smem <- A  [copy/fallback]", span=Span.point(6, 1)),
        If(lane0, Grid((i, j), (4, 6), Store(S, (i, j), Load(A, (i, j))))),
        Barrier(),
        Comment("L8: warp.copy B <- A_smem  [copy/fallback]", span=Span.point(8, 1)),
        If(lane0, Grid((i2, j2), (4, 6), Store(B, (i2, j2), Load(S, (i2, j2))))),
    ))
    return Kernel("fallback_demo", 32, (A, B), (S,), (), (), 0, None, body)


TMEM_SOURCE = demo_source("tmem_roundtrip").split("\n", 1)[1]

TMEM_IR = """@T.prim_func
def tmem_roundtrip(A: T.Buffer((128, 8), "float16"), B: T.Buffer((128, 8), "float16")):
    tmem_addr = T.alloc_shared((1,), "uint32")
    # L8: wg.copy_async T <- a  [copy_async/tmem<->local]
    T.ptx.tcgen05.st(tmem_addr[0], 0, 0, "32x32b", 4, a[0:8])
    # L11: wg.copy_async b <- T  [copy_async/tmem<->local]
    T.ptx.tcgen05.ld(tmem_addr[0], 0, 0, "32x32b", 4, b[0:8])
"""
TMEM_IR_LINES = [None, None, None, 8, 8, 11, 11]

TMEM_CUDA = """extern "C" __global__ void tmem_roundtrip(half* A, half* B) {
  // L8: wg.copy_async T <- a
  asm volatile("tcgen05.st.sync.aligned.32x32b.x4.b32 [%0], {%1, %2, %3, %4};" :: "r"(taddr));
  // L11: wg.copy_async b <- T
  asm volatile("tcgen05.ld.sync.aligned.32x32b.x4.b32 {%0, %1, %2, %3}, [%4];" : "=r"(r0) : "r"(taddr));
}
"""
TMEM_CUDA_LINES = [None, 8, 8, 11, 11, None]


def make_dispatch() -> list:
    return [
        DispatchRecord(
            op="copy_async", text="wg.copy_async T <- a", line=8, scope="wg",
            candidates=(
                Candidate("tmem<->local", 10, True, ("scopes: ok", "shape: ok"), chosen=True),
                Candidate("tcgen05_cp", 5, False, ("scopes: ok", "src is local, not shared")),
            ),
            chosen="tmem<->local", summary="tcgen05.st.sync.aligned.32x32b.x4.b32",
        ),
        DispatchRecord(
            op="copy", text="wg.copy B <- b", line=13, scope="wg",
            candidates=(
                Candidate("reg", 10, True, ("scopes: ok",), declined="24 does not divide 32"),
                Candidate("fallback", 0, True, ("scopes: ok",), chosen=True),
            ),
            chosen="fallback",
        ),
    ]


def make_launch(passed: bool = True, backend: str = "sim", mode: str = "CPU simulator",
                arch=None, device=None) -> LaunchResult:
    A = np.arange(128 * 8, dtype=np.float16).reshape(128, 8) / np.float16(3)
    B = A.copy() if passed else np.zeros_like(A)
    return LaunchResult(
        backend=backend, mode=mode, arch=arch, device=device,
        reason="no CUDA device: CuPy not installed" if backend == "sim" else "",
        inputs={"A": A}, outputs={"B": B},
        checks=[CheckResult("B == A", 14, passed, 0 if passed else 1023, 1024)],
    )


def make_tmem_result(launch="default", emulated: bool = True) -> TileCopyResult:
    return TileCopyResult(
        name="tmem_roundtrip", source=TMEM_SOURCE, program=None, kernel=make_tmem_kernel(),
        ir=TMEM_IR, cuda=TMEM_CUDA,
        cuda_emulated=("// emulated TMEM\n__device__ void tm_st(uint32_t* tmem) { /* a <- b */ }\n"
                       if emulated else None),
        dispatch=make_dispatch(), launch=make_launch() if launch == "default" else launch,
        warnings=["copy/fallback used for wg.copy B <- b: slow path (UserWarning)"],
        options={"arch": "sm_100a", "view": "html"},
        ir_lines=list(TMEM_IR_LINES), cuda_lines=list(TMEM_CUDA_LINES),
    )


def make_fallback_result() -> TileCopyResult:
    ir = "# L6: warp.copy A_smem <- A  [copy/fallback]\nif laneid == 0:\n    for i, j in T.grid(4, 6):\n        A_smem[i, j] = A[i, j]\n"
    return TileCopyResult(
        name="fallback_demo", source="kernel fallback_demo threads=32\n", program=None,
        kernel=make_fallback_kernel(), ir=ir, cuda="__global__ void fallback_demo() {}\n",
        cuda_emulated=None, dispatch=[], launch=None, warnings=[], options={},
        ir_lines=[6, 6, 6, 6], cuda_lines=[None],
    )


# ============================================================================ occupancy
def test_occupancy_roundtrip_cells():
    occ = hm.tmem_occupancy(make_tmem_kernel())
    for key in ("warp", "thread", "reg", "instr"):
        assert occ[key].shape == (128, 32)
        assert np.issubdtype(occ[key].dtype, np.integer)
    # lane 37, column 2: warp 1 (quadrant 1), thread 37, register 2, written last by the ld (#1)
    assert (occ["warp"][37, 2], occ["thread"][37, 2], occ["reg"][37, 2], occ["instr"][37, 2]) == (1, 37, 2, 1)
    # columns 0..3 fully owned: lane l belongs to warp l // 32, thread l, register = column
    lanes = np.arange(128)[:, None]
    np.testing.assert_array_equal(occ["warp"][:, :4], np.broadcast_to(lanes // 32, (128, 4)))
    np.testing.assert_array_equal(occ["thread"][:, :4], np.broadcast_to(lanes, (128, 4)))
    np.testing.assert_array_equal(occ["reg"][:, :4], np.broadcast_to(np.arange(4), (128, 4)))
    # the 28 other allocated columns are untouched
    for key in ("warp", "thread", "reg", "instr"):
        assert (occ[key][:, 4:] == -1).all()
    assert occ["out_of_range"] == 0


def test_occupancy_instruction_list_and_per_instruction_arrays():
    occ = hm.tmem_occupancy(make_tmem_kernel())
    ins = occ["instructions"]
    assert [(i["op"], i["chain"], i["buffer"], i["row"], i["col"]) for i in ins] == [
        ("st", "tcgen05.st.sync.aligned.32x32b.x4.b32", "T", 0, 0),
        ("ld", "tcgen05.ld.sync.aligned.32x32b.x4.b32", "T", 0, 0),
    ]
    assert ins[0]["cells"]["lane"].size == 128 * 4
    first = hm.instr_arrays(occ, 0)
    assert (first["instr"][:, :4] == 0).all() and (first["instr"][:, 4:] == -1).all()
    np.testing.assert_array_equal(first["thread"], occ["thread"])


def test_occupancy_column_immediate_and_eight_warps():
    # buffer at column 4 of a 64-column allocation; 8 warps share the 4 quadrants
    occ = hm.tmem_occupancy(make_tmem_kernel(threads=256, col=4, tmem_cols=64))
    assert occ["warp"].shape == (128, 64)
    assert (occ["warp"][:, :4] == -1).all() and (occ["warp"][:, 8:] == -1).all()
    # warp 5 (quadrant 1) issues after warp 1 and overwrites its cells in the overlay
    assert occ["warp"][40, 5] == 5 and occ["thread"][40, 5] == 5 * 32 + 8
    assert occ["instructions"][0]["cells"]["lane"].size == 8 * 32 * 4


def _ref_cell(shape, t, r):
    """Independent decoder of the PTX §9.7.16.2.3 fragment figures (tcgen05.md §5 table)."""
    q, p = t >> 2, t & 3
    return {
        "32x32b": (t, r),
        "16x64b": (q + 8 * (t & 1), ((t >> 1) & 1) + 2 * r),
        "16x128b": (q + 8 * (r & 1), p + 4 * (r >> 1)),
        "16x256b": (q + 8 * ((r >> 1) & 1), 2 * p + (r & 1) + 8 * (r >> 2)),
    }[shape]


@pytest.mark.parametrize("shape,num,regs,row", [
    ("16x64b", 8, 8, 0), ("16x64b", 8, 8, 16), ("16x128b", 4, 8, 16), ("16x256b", 2, 8, 0),
], ids=lambda v: str(v))
def test_occupancy_16_lane_shapes_match_reference(shape, num, regs, row):
    k = make_tmem_kernel()
    T, addr = k.tmem[0], k.tmem_addr
    lo = Buffer("lo", "local", "float32", (64, 32), per_thread=regs)
    node = TcgenLdSt("ld", shape, num, lo, 0, regs, addr, row, 8, tmem=T)
    k.body = Seq((node,))
    occ = hm.tmem_occupancy(k)
    expect = np.full((128, 32), -1)
    for w in range(4):
        for t in range(32):
            for r in range(regs):
                lrow, lcol = _ref_cell(shape, t, r)
                expect[32 * w + row + lrow, 8 + lcol] = 32 * w + t
    np.testing.assert_array_equal(occ["thread"], expect)


def test_occupancy_out_of_range_cells_are_dropped():
    occ = hm.tmem_occupancy(make_tmem_kernel(col=30))  # cols 30..33 of a 32-column allocation
    assert occ["instructions"][0]["out_of_range"] == 128 * 2
    assert occ["out_of_range"] == 2 * 128 * 2  # st and ld
    assert (occ["warp"][:, 30:] >= 0).all()


def test_tmem_columns_of_buffers():
    assert hm.tmem_columns(Buffer("T", "tmem", "float16", (128, 8), datapath="D")) == (0, 4)
    assert hm.tmem_columns(Buffer("U", "tmem", "float32", (128, 32), tmem_col=32, datapath="D")) == (32, 64)
    assert hm.tmem_columns(Buffer("acc", "tmem", "float32", (64, 64), datapath="B")) == (0, 32)


# ============================================================================ shared writers
def test_shared_writers_fallback():
    (info,) = hm.shared_writers(make_fallback_kernel())
    assert info["buffer"].name == "A_smem" and info["determined"]
    assert info["writer"].shape == (4, 6) and (info["writer"] == 0).all()
    assert info["variants"] == ["copy/fallback"] and info["threads"] == [0]


def test_shared_writers_vecmove_per_thread():
    S = Buffer("S", "shared", "float32", (8, 16))
    G = Buffer("G", "global", "float32", (8, 16))
    lane = ThreadVar("laneid")
    body = Seq((Comment("L3: warp.copy S <- G  [copy/gmem_smem]"),
                VecMove(S, mul(lane, 4), G, mul(lane, 4), 4)))
    k = Kernel("vec", 32, (G,), (S,), (), (), 0, None, body)
    (info,) = hm.shared_writers(k)
    assert info["determined"] and info["variants"] == ["copy/gmem_smem"]
    np.testing.assert_array_equal(info["writer"].ravel(), np.arange(128) // 4)


def test_shared_writers_undetermined_when_index_loads():
    S = Buffer("S", "shared", "int32", (4,))
    idx = Buffer("idx", "global", "int32", (4,))
    k = Kernel("gather", 32, (idx,), (S,), (), (), 0, None,
               Seq((Store(S, (Load(idx, (ThreadVar("laneid"),)),), Const(1)),)))
    (info,) = hm.shared_writers(k)
    assert not info["determined"]


# ============================================================================ figures
@pytest.mark.parametrize("color_by", hm.COLOR_BY)
def test_heatmap_figure_tmem(color_by):
    from matplotlib.figure import Figure

    fig = hm.heatmap_figure(make_tmem_kernel(), color_by=color_by)
    assert isinstance(fig, Figure)
    assert tuple(fig.get_size_inches()) == hm.FIGSIZE
    assert "900x480" in str(fig)
    title = fig._suptitle.get_text()
    assert "T float16[128, 8] = cols 0-3" in title
    assert "tcgen05.st/ld .32x32b.x4" in title
    ax = fig.axes[0]
    assert ax.get_xlabel() == "TCol (32-bit column)" and ax.get_ylabel() == "TLane"
    assert ax.images[0].get_array().shape == (128, 32)


def test_heatmap_figure_single_instruction_and_bad_color_by():
    fig = hm.heatmap_figure(make_tmem_kernel(), instr=1)
    assert "instruction #1 tcgen05.ld" in fig._suptitle.get_text()
    with pytest.raises(ValueError, match="color_by"):
        hm.heatmap_figure(make_tmem_kernel(), color_by="banana")


def test_heatmap_scales_to_full_tmem():
    k = make_tmem_kernel(tmem_cols=512)
    fig = hm.heatmap_figure(k)
    assert fig.axes[0].images[0].get_array().shape == (128, 512)
    assert hm.figure_png(fig).startswith(PNG_SIGNATURE)


def test_heatmap_figure_shared_fallback():
    fig = hm.heatmap_figure(make_fallback_kernel())
    assert tuple(fig.get_size_inches()) == hm.FIGSIZE
    titles = [ax.get_title(loc="left").replace("\n", " ") for ax in fig.axes]
    assert "shared A_smem float32[4, 6] (written by thread 0 — copy/fallback)" in titles
    assert fig.axes[0].images[0].get_array().shape == (4, 6)


def test_heatmap_png_signature_and_reproducible():
    k = make_tmem_kernel()
    png = hm.heatmap_png(k)
    assert png.startswith(PNG_SIGNATURE)
    assert hm.heatmap_png(k) is png  # memoised per kernel object
    assert png == hm.heatmap_png(make_tmem_kernel())
    assert hm.heatmap_png(make_fallback_kernel()).startswith(PNG_SIGNATURE)


def test_no_pyplot_ipywidgets_or_cupy_imported():
    here = Path(__file__).resolve().parent
    root = here.parents[2]
    code = textwrap.dedent(f"""
        import sys
        sys.path[:0] = [{str(root)!r}, {str(here)!r}]
        import tilemagic.widgets
        BANNED = ("matplotlib.pyplot", "ipywidgets", "cupy")
        assert not [m for m in BANNED if m in sys.modules], "importing tilemagic.widgets"
        import test_widgets as t
        from tilemagic.widgets.heatmap import heatmap_figure, heatmap_png
        heatmap_figure(t.make_tmem_kernel()); heatmap_png(t.make_fallback_kernel())
        r = t.make_tmem_result(); r.text(); r.html()
        bad = [m for m in BANNED if m in sys.modules]
        print("BAD" if bad else "OK", bad)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(root))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "OK []"


# ============================================================================ text
def test_render_text_contents_and_determinism():
    r = make_tmem_result()
    s = render_text(r)
    assert s == render_text(make_tmem_result()) == r.text() == repr(r)
    assert s.startswith("tilecopy tmem_roundtrip · 128 threads · backend=sim (CPU simulator)")
    assert "TMEM simulated" in s and "nothing ran on a GPU or on Blackwell" in s
    for rec in r.dispatch:
        assert rec.table() in s
    assert TMEM_IR.rstrip("\n") in s and TMEM_CUDA.rstrip("\n") in s
    assert "== CUDA (native, sm_100a) " in s and "emulated-TMEM CUDA" in s
    assert re.search(r"T\s+float16\s+\[128, 8\]\s+D\s+cols 0-3", s)
    assert "allocated 32 of 512" in s
    assert "check B == A: PASS" in s
    assert "copy/fallback used" in s
    assert re.search(r"A\s+float16\s+\[128, 8\]\s+\[0, 0\.333252, 0\.666504, 1, 1\.33301, 1\.66699, …\]", s)
    assert not ADDRESS.search(s) and "/tmp" not in s and "timing" not in s


def test_render_text_fail_not_launched_and_timing():
    r = make_tmem_result(launch=make_launch(passed=False))
    assert "check B == A: FAIL (1023 of 1024 elements differ)" in render_text(r)
    off = render_text(make_tmem_result(launch=None))
    assert "· not launched" in off.splitlines()[0] and "Not launched" in off
    timed = make_launch()
    timed.timing = {"kernel_ms": 0.0123}
    assert "kernel_ms: 0.0123" in render_text(make_tmem_result(launch=timed))
    fb = render_text(make_fallback_result())
    assert "== TMEM" not in fb and "fallback_demo · 32 threads · not launched" in fb


def test_format_values_dtypes():
    import ml_dtypes

    assert format_values(np.array([1, 2, 3], dtype=np.int8)) == "[1, 2, 3]"
    assert format_values(np.arange(10, dtype=np.float32) / 4) == "[0, 0.25, 0.5, 0.75, 1, 1.25, …]"
    assert format_values(np.array([np.nan, -np.inf], dtype=np.float32)) == "[nan, -inf]"
    assert format_values(np.array([1.5, 3], dtype=ml_dtypes.bfloat16)) == "[1.5, 3]"


# ============================================================================ html
def test_render_html_contents_and_determinism():
    r = make_tmem_result()
    h = render_html(r)
    assert h == render_html(make_tmem_result()) == r.html()
    assert r._repr_mimebundle_()["text/html"] == h
    assert h.startswith('<div class="tm-report"') and h.endswith("</div>")
    assert "<style" not in h and "<script" not in h and "http://" not in h and "https://" not in h
    assert not ADDRESS.search(h)
    # banner
    assert "TMEM simulated" in h and "nothing ran on a GPU or on Blackwell" in h
    # why-tables
    assert "tmem&lt;-&gt;local" in h and "src is local, not shared" in h
    assert "emitter declined: 24 does not divide 32" in h
    for verdict in ("chosen", "rejected", "declined"):
        assert f">{verdict}</span>" in h
    # IR / CUDA panes: one span per line, the source line kept, arrows escaped
    assert 'data-src-line="8"' in h and 'data-src-line="11"' in h
    assert h.count('class="tm-line"') >= len(TMEM_IR_LINES) + len(TMEM_CUDA_LINES) + TMEM_SOURCE.count("\n")
    assert "&lt;-" in h and "T <- a" not in h and "b <- T" not in h
    assert "grid-template-columns" in h and "max-height" in h
    assert "<details" in h and "emulated TMEM" in h
    assert "data:image/png;base64,iVBORw0KGgo" in h
    assert ">PASS</span>" in h and "copy/fallback used" in h and "#fff8c5" in h


def test_html_ir_lines_map_one_to_one():
    spans = highlight_lines(TMEM_IR, "python")
    assert len(spans) == len(TMEM_IR_LINES)
    assert "\n" not in "".join(spans)
    h = render_html(make_tmem_result())
    ir_pane = h.split('data-lang="python"', 1)[1].split("</pre>", 1)[0]
    got = re.findall(r'<span class="tm-line"(?: data-src-line="(\d+)")?>', ir_pane)
    assert [int(g) if g else None for g in got] == TMEM_IR_LINES


def test_html_fail_native_and_emulated_banners():
    fail = render_html(make_tmem_result(launch=make_launch(passed=False)))
    assert ">FAIL</span>" in fail and "1023 of 1024 elements differ" in fail
    native = render_html(make_tmem_result(launch=make_launch(
        backend="cupy", mode="native sm_100a", arch="sm_100a", device="NVIDIA B200 (CC 10.0)")))
    assert "Ran natively on Blackwell" in native
    emu = render_html(make_tmem_result(launch=make_launch(
        backend="cupy-emulated", mode="emulated TMEM on sm_90", arch="sm_90a", device="NVIDIA H200 (CC 9.0)")))
    assert "TMEM emulated in global memory" in emu and "nothing ran on Blackwell" in emu
    hopper = render_html(make_tmem_result(launch=make_launch(
        backend="cupy", mode="native sm_90a", arch="sm_90a", device="NVIDIA H200 (CC 9.0)")))
    assert "nothing ran on Blackwell" in hopper
    off = render_html(make_tmem_result(launch=None, emulated=False))
    assert "Not launched" in off and "<details class=\"tm-emulated\"" not in off


def test_html_fallback_shows_shared_tile():
    h = render_html(make_fallback_result())
    assert "Shared memory" in h and "data:image/png;base64," in h and "&lt;-" in h


# ============================================================================ widget
def test_widget_tabs():
    import ipywidgets as W

    tab = make_tmem_result().widget()
    assert isinstance(tab, W.Tab)
    assert tuple(tab.titles) == ("Description", "Dispatch", "IR", "CUDA", "CUDA (emulated)", "Heatmap", "Launch")

    def all_widgets(w):
        yield w
        for c in getattr(w, "children", ()):
            yield from all_widgets(c)

    assert not any(isinstance(w, W.Output) for w in all_widgets(tab))
    heat = tab.children[tab.titles.index("Heatmap")]
    assert isinstance(heat, W.Image) and heat.format == "png" and bytes(heat.value).startswith(PNG_SIGNATURE)
    assert 'data-src-line="8"' in tab.children[2].value
    assert ">PASS</span>" in tab.children[-1].value

    fb = make_fallback_result().widget()
    assert tuple(fb.titles) == ("Description", "Dispatch", "IR", "CUDA", "Heatmap", "Launch")


def test_render_speed():
    import time

    r = make_tmem_result()
    render_html(r)  # warm: imports, Pygments styles, fonts
    t0 = time.perf_counter()
    render_html(r)
    assert time.perf_counter() - t0 < 1.0  # typically ~50 ms; generous bound for slow CI
