"""Heatmaps: TMEM occupancy, register fragments, round-trip data (tilemagic.widgets.placement, tilemagic.widgets.figures).

The kernels are built by hand (ir_builders.py), including the .16x*b / F / B instruction
sequences the tcgen05 variant will emit, and checked against the layout module's
fragment layouts and the data-path formulas of docs/language.md.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from ir_builders import (
    datapath_kernel,
    expected_cells,
    make_fallback_kernel,
    make_launch,
    make_tmem_kernel,
    make_tmem_result,
)

from tilemagic.errors import Span
from tilemagic.ir.nodes import (
    Bin,
    Buffer,
    Comment,
    Const,
    If,
    Kernel,
    Seq,
    TcgenLdSt,
    ThreadVar,
    VecMove,
    mul,
)
from tilemagic.widgets import figures, placement

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def fig_text(fig) -> str:
    """Every text of a figure (figure texts, axes titles and texts), whitespace runs (wraps) as one space."""
    parts = [t.get_text() for t in fig.texts]
    for ax in fig.axes:
        parts += [ax.get_title(), ax.get_title(loc="left")] + [t.get_text() for t in ax.texts]
    return re.sub(r"\s+", " ", " | ".join(parts))


def hlines(ax) -> dict:
    """y -> (colour, linestyle) of the horizontal lines spanning an axes."""
    out = {}
    for ln in ax.get_lines():
        ys = np.asarray(ln.get_ydata(), dtype=float)
        if ys.size == 2 and ys[0] == ys[1]:
            out.setdefault(float(ys[0]), []).append((ln.get_color(), ln.get_linestyle()))
    return out


# ============================================================================ occupancy
def test_occupancy_roundtrip_cells():
    occ = placement.tmem_occupancy(make_tmem_kernel())
    for key in ("warp", "thread", "reg", "instr"):
        assert occ[key].shape == (128, 32)
        assert np.issubdtype(occ[key].dtype, np.integer)
    # lane 37, column 2: warp 1 (quadrant 1), thread 37, register 2, written last by the ld (#1)
    assert (occ["warp"][37, 2], occ["thread"][37, 2], occ["reg"][37, 2], occ["instr"][37, 2]) == (1, 37, 2, 1)
    lanes = np.arange(128)[:, None]
    np.testing.assert_array_equal(occ["warp"][:, :4], np.broadcast_to(lanes // 32, (128, 4)))
    np.testing.assert_array_equal(occ["thread"][:, :4], np.broadcast_to(lanes, (128, 4)))
    np.testing.assert_array_equal(occ["reg"][:, :4], np.broadcast_to(np.arange(4), (128, 4)))
    for key in ("warp", "thread", "reg", "instr"):
        assert (occ[key][:, 4:] == -1).all()
    assert occ["out_of_range"] == 0


def test_occupancy_instruction_list_and_per_instruction_arrays():
    occ = placement.tmem_occupancy(make_tmem_kernel())
    ins = occ["instructions"]
    assert [(i["op"], i["chain"], i["buffer"], i["row"], i["col"], i["warps"], i["line"]) for i in ins] == [
        ("st", "tcgen05.st.sync.aligned.32x32b.x4.b32", "T", 0, 0, [0, 1, 2, 3], 9),
        ("ld", "tcgen05.ld.sync.aligned.32x32b.x4.b32", "T", 0, 0, [0, 1, 2, 3], 12),
    ]
    assert ins[0]["cells"]["lane"].size == 128 * 4
    first = placement.instr_arrays(occ, 0)
    assert (first["instr"][:, :4] == 0).all() and (first["instr"][:, 4:] == -1).all()
    np.testing.assert_array_equal(first["thread"], occ["thread"])


def test_occupancy_column_immediate_and_eight_warps():
    occ = placement.tmem_occupancy(make_tmem_kernel(threads=256, col=4, tmem_cols=64))
    assert occ["warp"].shape == (128, 64)
    assert (occ["warp"][:, :4] == -1).all() and (occ["warp"][:, 8:] == -1).all()
    # warp 5 (quadrant 1) issues after warp 1 and overwrites its cells in the overlay
    assert occ["warp"][40, 5] == 5 and occ["thread"][40, 5] == 5 * 32 + 8
    assert occ["instructions"][0]["cells"]["lane"].size == 8 * 32 * 4


def test_occupancy_respects_thread_guards():
    """An instruction under ``if wid_in_wg < 2`` / ``if warpid >= 4`` is issued only by those warps."""
    k = make_tmem_kernel(threads=256)
    st, ld = [s for s in k.body.body if isinstance(s, TcgenLdSt)]
    k.body = Seq((If(Bin("<", ThreadVar("wid_in_wg"), Const(2)), st),
                  If(Bin(">=", ThreadVar("warpid"), Const(4)), ld)))
    pairs = placement.issuing_warps(k)
    assert [list(w) for _, w in pairs] == [[0, 1, 4, 5], [4, 5, 6, 7]]
    occ = placement.tmem_occupancy(k)
    first = placement.instr_arrays(occ, 0)
    assert (first["warp"][64:, :] == -1).all()  # quadrants 2, 3 untouched by the st
    assert set(np.unique(first["warp"][:64, :4])) == {4, 5}  # warps 4/5 overwrite 0/1 in the same quadrants


def _ref_cell(shape, t, r):
    """Independent decoder of the PTX ISA 9.0 §9.7.16.2.3 fragment figures (PTX ISA 9.0 §9.7.16.2.3)."""
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
    k.body = Seq((TcgenLdSt("ld", shape, num, lo, 0, regs, addr, row, 8, tmem=T),))
    occ = placement.tmem_occupancy(k)
    expect = np.full((128, 32), -1)
    for w in range(4):
        for t in range(32):
            for r in range(regs):
                lrow, lcol = _ref_cell(shape, t, r)
                expect[32 * w + row + lrow, 8 + lcol] = 32 * w + t
    np.testing.assert_array_equal(occ["thread"], expect)


def test_occupancy_out_of_range_cells_are_dropped():
    occ = placement.tmem_occupancy(make_tmem_kernel(col=30))  # cols 30..33 of a 32-column allocation
    assert occ["instructions"][0]["out_of_range"] == 128 * 2
    assert occ["out_of_range"] == 2 * 128 * 2
    assert (occ["warp"][:, 30:] >= 0).all()


def test_tmem_columns_are_the_plans():
    # the TMEM plan's columns (tmem_col, tmem_ncols), never recomputed from the shape
    assert placement.tmem_columns(Buffer("T", "tmem", "float16", (128, 8), tmem_ncols=4, datapath="D")) == (0, 4)
    assert placement.tmem_columns(Buffer("U", "tmem", "float32", (128, 32), tmem_col=32, tmem_ncols=32)) == (32, 64)
    assert placement.tmem_columns(Buffer("acc", "tmem", "float32", (64, 64), tmem_ncols=32, datapath="B")) == (0, 32)
    assert placement.tmem_columns(Buffer("W", "tmem", "float32", (128, 16), tmem_col=3, tmem_ncols=31)) == (3, 34)


# ============================================================================ data paths D / F / B
DATAPATH_CASES = [
    ("D", "32x32b", 32, "float32", 0), ("D", "16x64b", 32, "float32", 0), ("D", "16x128b", 64, "float32", 0),
    ("D", "16x256b", 64, "float32", 0), ("D", "16x256b", 64, "float16", 0), ("D", "16x128b", 32, "bfloat16", 0),
    ("F", "16x64b", 32, "float32", 0), ("F", "16x64b", 32, "float32", 1), ("F", "16x128b", 64, "float16", 1),
    ("F", "16x256b", 32, "bfloat16", 0), ("F", "16x256b", 64, "float32", 1),
    ("B", "32x32b", 64, "float32", 0), ("B", "32x32b", 128, "float32", 0),
]


@pytest.mark.parametrize("path,shape,cols,dtype,sub_slab", DATAPATH_CASES, ids=lambda v: str(v))
def test_fragment_map_equals_layout_module_and_datapath_formula(path, shape, cols, dtype, sub_slab):
    """(thread, register) -> (lane, col): the heatmap's instruction walk agrees with
    tcgen05_atom_layout + the D/F/B formulas (F: lane = 32·(r//16) + 16·sub_slab + r%16;
    B: lane = r + 64·(c // (N/2)), col = c % (N/2)), every register of the fragment."""
    k = datapath_kernel(path, shape, cols, dtype, sub_slab=sub_slab, tmem_col=32)
    fm = placement.fragment_map(k)
    expect = expected_cells(path, shape, cols, dtype, sub_slab, tmem_col=32)
    got = {(t, r): (int(fm["lane"][t, r]), int(fm["col"][t, r]))
           for t, r in zip(*np.nonzero(fm["lane"] >= 0))}
    assert got == expect
    assert fm["buffer"].name == "frag" and fm["instructions"] == list(range(len(placement.issuing_warps(k))))


@pytest.mark.parametrize("sub_slab", [0, 1])
def test_datapath_f_occupies_one_sub_slab_of_each_quadrant(sub_slab):
    occ = placement.tmem_occupancy(datapath_kernel("F", "16x64b", 32, sub_slab=sub_slab))
    touched = np.nonzero((occ["warp"] >= 0).any(axis=1))[0]
    assert list(touched) == [32 * q + 16 * sub_slab + i for q in range(4) for i in range(16)]
    # warp w owns its quadrant's sub-slab: lanes 32w + 16*sub_slab .. +15
    for w in range(4):
        assert set(np.unique(occ["warp"][32 * w + 16 * sub_slab: 32 * w + 16 * sub_slab + 16])) == {w}


def test_datapath_b_halves_live_in_lanes_0_63_and_64_127():
    k = datapath_kernel("B", "32x32b", 64)
    fm = placement.fragment_map(k)
    # thread r + 64*h holds row r of column half h: lane = thread, column = register
    np.testing.assert_array_equal(fm["lane"][:, :32], np.broadcast_to(np.arange(128)[:, None], (128, 32)))
    np.testing.assert_array_equal(fm["col"][:, :32], np.broadcast_to(np.arange(32), (128, 32)))
    occ = placement.tmem_occupancy(k)
    assert (occ["warp"] >= 0).all() and occ["warp"].shape == (128, 32)


def test_sixteen_lane_d_issues_twice_and_fills_every_lane():
    k = datapath_kernel("D", "16x256b", 64)
    occ = placement.tmem_occupancy(k)
    assert [(i["row"], i["reg_base"], i["regs"]) for i in occ["instructions"]] == [(0, 0, 32), (16, 32, 32)]
    first, second = placement.instr_arrays(occ, 0), placement.instr_arrays(occ, 1)
    rows0 = np.nonzero((first["warp"] >= 0).any(axis=1))[0]
    rows1 = np.nonzero((second["warp"] >= 0).any(axis=1))[0]
    assert list(rows0) == [32 * q + i for q in range(4) for i in range(16)]
    assert list(rows1) == [32 * q + 16 + i for q in range(4) for i in range(16)]
    assert (occ["reg"] >= 0).all() and occ["reg"].max() == 63


def test_fragment_map_selection_and_errors():
    k = make_tmem_kernel()
    assert placement.fragment_map(k)["buffer"].name == "a"  # the first instruction's fragment
    fm = placement.fragment_map(k, "b")
    assert fm["buffer"].name == "b" and fm["instructions"] == [1] and fm["elems_per_reg"] == 2
    assert placement.fragment_map(k, instr=1)["buffer"].name == "b"
    with pytest.raises(ValueError, match="fragments: a, b"):
        placement.fragment_map(k, "zz")
    with pytest.raises(ValueError, match="instr must be in 0..1"):
        placement.fragment_map(k, instr=5)
    with pytest.raises(ValueError, match="no tcgen05.ld/st"):
        placement.fragment_map(make_fallback_kernel())


# ============================================================================ shared writers
def test_shared_writers_fallback():
    (info,) = placement.shared_writers(make_fallback_kernel())
    assert info["buffer"].name == "A_smem" and info["determined"]
    assert info["writer"].shape == (4, 6) and (info["writer"] == 0).all()
    assert info["variants"] == ["copy/fallback"] and info["threads"] == [0]


def test_shared_writers_variant_comes_from_the_marker_fields_not_its_text():
    k = make_fallback_kernel()
    for s in k.body.body:
        if isinstance(s, Comment):
            s.text = "reworded: no brackets here"
    (info,) = placement.shared_writers(k)
    assert info["variants"] == ["copy/fallback"]
    assert "copy/fallback" in fig_text(figures.heatmap_figure(k))  # the legend (the tile's title)
    k.body.body[0].text = "L6: warp.copy A_smem <- A  [copy/reg]"  # a text naming another variant changes nothing
    assert placement.shared_writers(k)[0]["variants"] == ["copy/fallback"]


def test_shared_writers_vecmove_per_thread():
    S = Buffer("S", "shared", "float32", (8, 16))
    G = Buffer("G", "global", "float32", (8, 16))
    lane = ThreadVar("laneid")
    marker = Comment("L3: warp.copy S <- G  [copy/gmem_smem]", op="copy", variant="gmem_smem")
    body = Seq((marker, VecMove(S, mul(lane, 4), G, mul(lane, 4), 4)))
    (info,) = placement.shared_writers(Kernel("vec", 32, (G,), (S,), (), (), 0, None, body))
    assert info["determined"] and info["variants"] == ["copy/gmem_smem"]
    np.testing.assert_array_equal(info["writer"].ravel(), np.arange(128) // 4)


def test_shared_writers_undetermined_when_index_loads():
    from tilemagic.ir.nodes import Load, Store

    S = Buffer("S", "shared", "int32", (4,))
    idx = Buffer("idx", "global", "int32", (4,))
    k = Kernel("gather", 32, (idx,), (S,), (), (), 0, None,
               Seq((Store(S, (Load(idx, (ThreadVar("laneid"),)),), Const(1)),)))
    (info,) = placement.shared_writers(k)
    assert not info["determined"]


# ============================================================================ figures
@pytest.mark.parametrize("color_by", figures.COLOR_BY)
def test_heatmap_figure_tmem(color_by):
    from matplotlib.figure import Figure

    fig = figures.heatmap_figure(make_tmem_kernel(), color_by=color_by)
    assert isinstance(fig, Figure) and type(fig).__name__ == "TileFigure"
    assert tuple(fig.get_size_inches()) == figures.FIGSIZE
    assert repr(fig) == "<TileFigure size 900x480 with 1 Axes>" or "Axes>" in repr(fig)
    text = fig_text(fig)
    assert f"coloured by {color_by}" in text and "32 of 512 columns" in text
    assert "tcgen05.st/ld .32x32b.x4" in text
    assert "T float16[128, 8] D, TCol 0-3" in text  # the buffer legend
    assert "#0 st .32x32b.x4 T row 0 col 0 (L9)" in text and "#1 ld .32x32b.x4 T row 0 col 0 (L12)" in text
    ax = fig.axes[0]
    assert ax.get_xlabel() == "TCol (32-bit column)" and ax.get_ylabel() == "TLane"
    assert ax.images[0].get_array().shape == (128, 32)
    assert np.issubdtype(np.asarray(ax.images[0].get_array()).dtype, np.integer)
    assert [t.get_text() for t in ax.get_yticklabels()][1] == "32-63\nwarp 1"
    lines = hlines(ax)
    assert all(y in lines for y in (31.5, 63.5, 95.5))  # quadrant lines
    assert 15.5 not in lines  # no sub-slab lines for a .32x32b-only kernel


def test_heatmap_figure_swatches_name_the_categories():
    text = fig_text(figures.heatmap_figure(make_tmem_kernel(), color_by="warp"))
    for w in range(4):
        assert f"warp {w} (T{32 * w}-{32 * w + 31})" in text
    assert "untouched" in text


def test_heatmap_sub_slab_and_b_half_lines():
    f_fig = figures.heatmap_figure(datapath_kernel("F", "16x64b", 32, sub_slab=1))
    lines = hlines(f_fig.axes[0])
    assert all(y in lines for y in (15.5, 47.5, 79.5, 111.5))
    text = fig_text(f_fig)
    assert "F sub_slab=1: lanes 32q+16..+15" in text and "16-lane sub-slab" in text
    b_fig = figures.heatmap_figure(datapath_kernel("B", "32x32b", 64))
    b_lines = hlines(b_fig.axes[0])
    assert (figures._B_HALF, "-.") in b_lines[63.5]
    b_text = fig_text(b_fig)
    assert "T[:, 0:32]" in b_text and "T[:, 32:64]" in b_text and "lanes 64-127 hold cols 32-63" in b_text


def test_heatmap_buffer_bars_group_aliases():
    k = datapath_kernel("F", "16x64b", 32)
    lower = k.tmem[0]
    upper = Buffer("upper", "tmem", "float32", (64, 32), tmem_ncols=32, datapath="F", sub_slab=1, alias_of="T")
    lower.name = "lower"
    k.tmem = (Buffer("T", "tmem", "float32", (128, 32), tmem_ncols=32, datapath="D"), lower, upper)
    assert figures._buffer_groups(k) == [(0, 32, "T / lower / upper", 0)]
    assert "T / lower / upper" in fig_text(figures.heatmap_figure(k))


def test_heatmap_figure_single_instruction_each_and_errors():
    k = make_tmem_kernel()
    one = figures.heatmap_figure(k, instr=1)
    assert "instruction #1 tcgen05.ld.sync.aligned.32x32b.x4.b32 (T, row 0, col 0, warps 0,1,2,3)" in fig_text(one)
    arr = one.axes[0].images[0].get_array()
    assert (np.asarray(arr)[:, :4] >= 0).all()
    each = figures.heatmap_figure(k, color_by="instr", instr="each")
    assert len(each.axes) == 2 and "one panel per instruction" in fig_text(each)
    assert [ax.get_title() for ax in each.axes] == ["#0 st .32x32b.x4\nrow 0 col 0", "#1 ld .32x32b.x4\nrow 0 col 0"]
    with pytest.raises(ValueError, match="color_by"):
        figures.heatmap_figure(k, color_by="banana")
    with pytest.raises(ValueError, match="instruction index 0..1"):
        figures.heatmap_figure(k, instr=2)
    with pytest.raises(ValueError, match="instruction index"):
        figures.heatmap_figure(k, instr="all")


def test_heatmap_each_caps_the_panels():
    k = make_tmem_kernel()
    T, addr, a = k.tmem[0], k.tmem_addr, k.locals[0]
    k.body = Seq(tuple(TcgenLdSt("st", "32x32b", 1, a, 0, 1, addr, 0, c, tmem=T) for c in range(10)))
    fig = figures.heatmap_figure(k, instr="each")
    assert len(fig.axes) == figures.MAX_PANELS and f"first {figures.MAX_PANELS} of 10" in fig_text(fig)


@pytest.mark.parametrize("color_by", figures.COLOR_BY)
def test_heatmap_scales_to_full_tmem(color_by):
    k = make_tmem_kernel(tmem_cols=512)
    T, addr = k.tmem[0], k.tmem_addr
    big = Buffer("big", "local", "float32", (128, 512), per_thread=512)
    k.body = Seq(tuple(TcgenLdSt("st", "32x32b", 128, big, 128 * i, 128, addr, 0, 128 * i, tmem=T)
                       for i in range(4)))
    occ = placement.tmem_occupancy(k)
    assert (occ["warp"] >= 0).all()
    fig = figures.heatmap_figure(k, color_by=color_by)
    assert fig.axes[0].images[0].get_array().shape == (128, 512)
    assert figures.figure_png(fig).startswith(PNG_SIGNATURE)


def test_heatmap_figure_shared_fallback():
    fig = figures.heatmap_figure(make_fallback_kernel())
    assert tuple(fig.get_size_inches()) == figures.FIGSIZE
    titles = [ax.get_title(loc="left").replace("\n", " ") for ax in fig.axes]
    assert "shared A_smem float32[4, 6] (written by thread 0 — copy/fallback)" in titles
    assert fig.axes[0].images[0].get_array().shape == (4, 6)


def test_fragment_figure():
    fig = figures.fragment_figure(datapath_kernel("D", "16x256b", 64))
    text = fig_text(fig)
    assert "register fragment frag float32[128, 64]: thread × register → TMEM (lane, column)" in text
    assert "64 32-bit registers per thread" in text
    assert "#0 ld .16x256b.x8 T row 0 col 0 (L5)" in text and "#1 ld .16x256b.x8 T row 16 col 0 (L5)" in text
    lane_img, col_img = fig.axes[0].images[0], fig.axes[2].images[0]
    assert lane_img.get_array().shape == (128, 64)
    fm = placement.fragment_map(datapath_kernel("D", "16x256b", 64))
    np.testing.assert_array_equal(np.ma.getdata(lane_img.get_array()), fm["lane"] % 32)
    np.testing.assert_array_equal(np.ma.getdata(col_img.get_array()), fm["col"])


# ============================================================================ data view
def test_check_data_and_figure_on_failure():
    r = make_tmem_result(launch=make_launch(passed=False))
    d = placement.check_data(r)
    assert (d["lhs"], d["rhs"]) == ("B", "A") and d["got"].shape == (128, 8)
    assert int(d["mismatch"].sum()) == 1023  # B is zeros; A[0, 0] == 0
    fig = figures.data_figure(r)
    text = fig_text(fig)
    assert "check B == A (L14): FAIL" in text and "1023 of 1024 elements differ (bitwise)" in text
    assert "[0, 1]: got 0, expected 0.333252" in text
    assert [ax.get_title() for ax in fig.axes[:3]] == ["expected: A", "got: B", "mismatches (red)"]
    mask = np.asarray(fig.axes[2].images[0].get_array())
    np.testing.assert_array_equal(mask.astype(bool), d["mismatch"])


def test_check_data_pass_regions_and_errors():
    from tilemagic.lang.ast import CheckStmt, Region, Slice

    r = make_tmem_result()
    fig = figures.data_figure(r)
    assert "all 1024 elements equal (bitwise)" in fig_text(fig) and len(fig.axes) == 3  # 2 panels + colour bar
    # a region check from the parsed program: B[0:4, 2] == A[4:8, 2]
    s = Span.point(14, 1)
    lhs = Region("B", (Slice(0, 4, False, s), Slice(2, 3, True, s)), s, s)
    rhs = Region("A", (Slice(4, 8, False, s), Slice(2, 3, True, s)), s, s)
    r.program = type("P", (), {"stmts": (CheckStmt(lhs, rhs, s),)})()
    d = placement.check_data(r, "check B == A")
    np.testing.assert_array_equal(d["got"], r.launch.outputs["B"][0:4, 2])
    np.testing.assert_array_equal(d["expected"], r.launch.outputs["A"][4:8, 2])
    with pytest.raises(ValueError, match="not launched"):
        placement.check_data(make_tmem_result(launch=None))
    with pytest.raises(ValueError, match="no check 'C == D'"):
        placement.check_data(r, "C == D")
    with pytest.raises(ValueError, match="check must be in 0..0"):
        placement.check_data(r, 3)


# ============================================================================ PNG
def test_heatmap_png_signature_cached_on_content_and_reproducible():
    from tilemagic import caches
    from tilemagic.widgets import png as P

    k = make_tmem_kernel()
    png = P.heatmap_png(k)
    assert png.startswith(PNG_SIGNATURE)
    assert P.heatmap_png(k) is png  # memoised
    assert P.heatmap_png(make_tmem_kernel()) is png  # on content: an equal kernel hits
    assert P.heatmap_png(k, color_by="thread") != png
    assert P.fragment_png(k) == P.fragment_png(make_tmem_kernel())
    assert P.heatmap_png(make_fallback_kernel()).startswith(PNG_SIGNATURE)
    k.body = Seq(k.body.body[:-3])  # an edited kernel (no ld any more) is drawn again, never a stale picture
    assert P.heatmap_png(k) != png
    assert "widgets.png" in caches.registered_caches() and "widgets.png" in caches.clear_caches()
    assert not P._PNG_CACHE
    for i in range(P.PNG_CACHE_SIZE + 3):  # bounded
        P.heatmap_png(make_tmem_kernel(col=i % 28), color_by=figures.COLOR_BY[i // 28])
    assert len(P._PNG_CACHE) == P.PNG_CACHE_SIZE


def test_figures_display_as_png_without_pyplot():
    fig = figures.heatmap_figure(make_tmem_kernel())
    assert fig._repr_png_().startswith(PNG_SIGNATURE)
    from IPython.core.formatters import PNGFormatter

    assert PNGFormatter()(fig).startswith(PNG_SIGNATURE)


@pytest.mark.parametrize("count", [2, 4, 6, 8])
def test_heatmap_each_panel_titles_do_not_overlap(count):
    # QA: with six .16x256b instructions the panel titles ran into each other ("...x8#1 st ...")
    k = make_tmem_kernel()
    T, addr, a = k.tmem[0], k.tmem_addr, k.locals[0]
    k.body = Seq(tuple(TcgenLdSt("st", "16x256b", 8, a, 0, 32, addr, 16 * (c % 2), 8 * c, tmem=T)
                       for c in range(count)))
    fig = figures.heatmap_figure(k, instr="each")
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [ax.title.get_window_extent(renderer) for ax in fig.axes[:count]]
    assert len(boxes) == count
    for left, right in zip(boxes, boxes[1:]):  # a visible gap (pixels at the figure's dpi), not just no overlap
        assert right.x0 - left.x1 >= 4, [ax.get_title() for ax in fig.axes[:count]]


@pytest.mark.parametrize("n,ticks", [(9, [0, 2, 4, 6, 8]), (128, [0, 32, 64, 96]), (192, [0, 48, 96, 144]),
                                     (96, [0, 24, 48, 72]), (512, [0, 128, 256, 384])])
def test_colour_bar_ticks_are_round(n, ticks):
    assert figures._bar_ticks(n).tolist() == ticks


def test_colour_bar_of_a_figure_has_round_ticks():
    fig = figures.heatmap_figure(make_tmem_kernel(), color_by="thread")  # 128 threads: a colour bar
    bar = next(ax for ax in fig.axes if hasattr(ax, "_colorbar"))
    assert [float(t) for t in bar.get_xticks()] == [0.0, 32.0, 64.0, 96.0]


def test_neighbouring_categories_are_distinguishable():
    from matplotlib.colors import to_rgb

    for n in (9, 32, 128, 1024):
        cols = np.array([to_rgb(c) for c in figures._colours(n)])
        step = np.linalg.norm(np.diff(cols, axis=0), axis=1)
        assert step.min() > 0.25, (n, step.min())  # RGB distance of threads t and t + 1
