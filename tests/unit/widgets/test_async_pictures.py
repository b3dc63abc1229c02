"""The pictures of the asynchronous copies (issue 13 §5): the placement data against hand-computed values,
the figures render (PNG bytes, cached), the reports show and name them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tilemagic import tilecopy
from tilemagic.widgets import placement as P
from tilemagic.widgets.html import render_html
from tilemagic.widgets.png import picture_png
from tilemagic.widgets.text import render_text

DEMOS = Path(__file__).resolve().parents[3] / "tilemagic" / "demos"
PNG = b"\x89PNG\r\n\x1a\n"


def _demo(name: str, launch: str = "sim"):
    """A demo without its ``%%tilecopy`` line (so its description lines are the file's minus one)."""
    return tilecopy(DEMOS.joinpath(f"{name}.tile").read_text().split("\n", 1)[1], launch=launch)


@pytest.fixture(scope="module")
def tma():
    return _demo("tma_roundtrip")


@pytest.fixture(scope="module")
def ldg():
    return _demo("ldgsts_roundtrip")


# an issue axis: 258 rows of 128 bytes do not fit one box (boxDim <= 256), so one box [64, 1] per row
ISSUE_AXIS = """kernel axis threads=32
global A: float16[300, 64] = arange
shared S: float16[258, 64]
mbarrier full count=1
if tx == 0: arrive full expect_tx=auto
if tx == 0: thread.copy_async S <- A[1:259, :] mbar=full
wait full phase 0
"""

# expect_tx larger than the box: the phase never completes
HANGS = """kernel hangs threads=64
global A: float16[8, 64] = arange
shared S: float16[2, 64]
mbarrier full count=1
if tx == 0: arrive full expect_tx=4096
if tx == 0: thread.copy_async S <- A[0:2, :] mbar=full
wait full phase 0
"""


def test_tma_boxes_of_the_demo(tma):
    g2s, s2g = P.tma_boxes(tma.kernel)
    # A[64:128, 64:128] of float16[256, 128]: CUDA order (dim 0 = columns), box 64 x 64, one issue
    assert (g2s["line"], g2s["direction"], g2s["variant"], g2s["smem"], g2s["mbar"]) == (8, "g2s", "tma_auto", "S",
                                                                                        "full")
    assert tuple(g2s["tmap"].dims) == (128, 256)
    assert [(i["start"], i["stop"], i["oob"], i["thread"]) for i in g2s["issues"]] == [((64, 64), (128, 128), 0, 0)]
    # B[64:128, 0:64] <- S
    assert (s2g["line"], s2g["direction"], s2g["mbar"]) == (10, "s2g", None)
    assert [(i["start"], i["stop"]) for i in s2g["issues"]] == [((0, 64), (64, 128))]
    assert P.tma_boxes(_demo("ldgsts_roundtrip").kernel) == []


def test_tma_boxes_of_an_issue_axis():
    r = tilecopy(ISSUE_AXIS, launch="sim")
    (op,) = P.tma_boxes(r.kernel)
    assert tuple(op["tmap"].box) == (64, 1) and len(op["issues"]) == 258
    # issue k: row 1 + k of A, 128 bytes further in S
    for k in (0, 1, 257):
        iss = op["issues"][k]
        assert (iss["index"], iss["start"], iss["stop"], iss["smem_offset"], iss["oob"]) == \
            (k, (0, 1 + k), (64, 2 + k), 128 * k, 0)


def test_tma_issue_box_out_of_bounds(tma):
    tmap = P.tma_boxes(tma.kernel)[0]["tmap"]  # dims [128, 256], box [64, 64]
    box = P.tma_issue_box(tmap, (100, 240))
    # in bounds: columns 100..127 (28) x rows 240..255 (16)
    assert box["oob"] == 64 * 64 - 28 * 16 and box["inside"] == ((100, 128), (240, 256))
    neg = P.tma_issue_box(tmap, (-8, 0))
    assert neg["oob"] == 8 * 64 and neg["inside"] == ((0, 56), (0, 64))


def _hand_swizzle_128b(nchunks: int) -> np.ndarray:
    c = np.arange(nchunks)
    line, pos = c // 8, c % 8
    return 8 * line + (pos ^ (line % 8))  # 128B mode: chunk bits [0:3) ^= line bits [0:3)


def test_swizzle_chunks(tma, ldg):
    (sw,) = P.swizzle_chunks(tma.kernel)
    assert (sw["buffer"], sw["via"], sw["how"]) == ("S", "tma", "A_tmap swizzle 128B")
    assert np.array_equal(sw["physical"], _hand_swizzle_128b(64 * 64 * 2 // 16))
    assert np.array_equal(sw["bank_group"], sw["physical"] % 8)
    # a logical column of 8 lines lands in 8 distinct bank groups (no conflict)
    assert len(set(sw["bank_group"].reshape(-1, 8)[:8, 3].tolist())) == 8
    s0, s1 = P.swizzle_chunks(ldg.kernel)
    assert (s0["buffer"], s0["via"], s0["how"], s1["buffer"]) == ("S0", "ldgsts", "swizzle(3, 3, 3)", "S1")
    assert np.array_equal(s0["physical"], _hand_swizzle_128b(32 * 64 * 2 // 16))
    assert P.swizzle_chunks(tilecopy(ISSUE_AXIS, launch="off").kernel) == []


def test_timeline_of_the_tma_demo(tma):
    tl = P.async_timeline(tma.launch.hb, tma.kernel.threads)
    assert tl["warps"] == 4 and tl["barriers"] == ["full"] and tl["hang"] is None
    load, store = tl["copies"]
    assert (load["kind"], load["warp"], load["line"], load["barrier"], load["phase"]) == ("tma.g2s", 0, 8, "full", 0)
    (phase,) = tl["phases"]
    assert (phase["barrier"], phase["phase"]) == ("full", 0)
    assert load["issue"] < load["complete"] < phase["x"] < load["wait"]
    assert (store["kind"], store["line"]) == ("tma.s2g", 10)
    assert store["issue"] < store["read"] <= store["complete"] < store["wait"]
    (group,) = tl["groups"]
    assert group["bulk"] and group["warps"] == [0] and group["group"] == 0 and group["x"] < store["complete"]


def test_timeline_of_the_ldgsts_demo(ldg):
    tl = P.async_timeline(ldg.launch.hb, ldg.kernel.threads)
    cps = tl["copies"]
    # 2 ops x 2 cp.async of 16 bytes per thread, per warp of 4
    assert len(cps) == 16 and {c["kind"] for c in cps} == {"cp.async"}
    assert all(c["issue"] < c["complete"] <= c["wait"] for c in cps)
    first = [c for c in cps if c["line"] == 7]
    second = [c for c in cps if c["line"] == 9]
    assert len(first) == len(second) == 8
    # wait_group 1 lands the first group only; wait_group 0 the second, later
    assert max(c["wait"] for c in first) < min(c["wait"] for c in second)
    assert [g["group"] for g in tl["groups"]] == [0, 1] and not any(g["bulk"] for g in tl["groups"])


def test_timeline_hang_point():
    with pytest.warns(UserWarning, match="would hang"):
        r = tilecopy(HANGS, launch="sim", allow_fail=True)
    tl = P.async_timeline(r.launch.hb, r.kernel.threads)
    assert tl["hang"] is not None and tl["hang"]["line"] == 7
    assert "3840 of 4096 expected bytes never arrive" in tl["hang"]["message"]
    assert [(b[2], b[3]) for b in tl["hang"]["blocked"]] == [("full", 0)]
    (load,) = tl["copies"]
    assert load["complete"] is not None and load["wait"] is None and tl["phases"] == []
    png = picture_png(r, "timeline")
    assert png.startswith(PNG)
    assert "would hang at L7" in render_text(r)


def test_pictures_render_and_are_cached(tma, ldg):
    for kind in ("tma", "swizzle", "timeline"):
        png = picture_png(tma, kind)
        assert png.startswith(PNG) and len(png) > 5000
    assert picture_png(tma, "tma") is picture_png(tma, "tma")  # kernel pictures: cached on its content
    assert picture_png(tma, "swizzle") is picture_png(tma, "swizzle")
    assert tma.heatmap(kind="timeline")._repr_png_().startswith(PNG)
    with pytest.raises(ValueError, match="no TMA copy"):
        picture_png(ldg, "tma")
    assert P.async_pictures(ldg.kernel, ldg.launch) == ["swizzle", "timeline"]


def test_reports_show_and_name_them(tma):
    html = render_html(tma)
    assert "Asynchronous copies" in html
    for kind in ("tma", "swizzle", "timeline"):
        assert f'data-kind="{kind}"' in html
    text = render_text(tma)
    assert "L8 tma_auto G2S A -> S: A_tmap dims [128, 256], 1 box [64, 64] at [64, 64]" in text
    assert "result.heatmap(kind='timeline')" in text
    off = _demo("tma_roundtrip", launch="off")
    assert P.async_pictures(off.kernel, off.launch) == ["tma", "swizzle"]  # no timeline without the simulator


def test_out_of_bounds_part_is_hatched(tma):
    from tilemagic.widgets import figures

    op = dict(P.tma_boxes(tma.kernel)[0])
    op["issues"] = [dict(P.tma_issue_box(op["tmap"], (100, 240)), index=0, thread=0, smem_offset=0)]
    op["oob"] = op["issues"][0]["oob"]
    fig = figures._new_figure()
    ax = fig.add_axes((0.1, 0.1, 0.8, 0.7))
    figures._tma_panel(ax, op)
    hatched = [p for p in ax.patches if p.get_hatch()]
    # the box [100, 164) x [240, 304) past the tensor [128, 256): the strip below row 256 and right of col 128
    assert sorted((p.get_x(), p.get_y(), p.get_width(), p.get_height()) for p in hatched) == \
        [(100, 256, 64, 48), (128, 240, 36, 16)]
    assert "3648 elements out of" in ax.get_title(loc="left")


def test_widget_view_offers_them(tma):
    pytest.importorskip("ipywidgets")
    from tilemagic.widgets.view import HeatmapPane

    pane = HeatmapPane(tma)
    kinds = [v for _, v in pane.kind.options]
    assert kinds[-3:] == ["tma", "swizzle", "timeline"]
    pane.kind.value = "timeline"
    assert bytes(pane.image.value).startswith(PNG) and pane.note.value == ""
