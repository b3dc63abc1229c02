"""Bounded output (issue 12 §4): downsampled data pictures, capped mismatch lists, collapsed panes.

Each test builds a cell whose display was unbounded before: a check failing on thousands of elements, data larger
than a picture's axes, a program of thousands of IR/CUDA lines, more ops than the why-tables show.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from cells import failing_global_cell, many_ops_cell
from helpers import run

from tilemagic.widgets import figures, format as F, html as H
from tilemagic.widgets.placement import block_factors, check_data, downsample_check, first_true


def _figure_texts(fig) -> str:
    return "\n".join(t.get_text() for t in fig.texts)


# ----------------------------------------------------------------------------- mismatch lists
def test_first_true_matches_argwhere_and_stops_at_the_limit():
    rng = np.random.default_rng(3)
    mask = rng.random((300, 7000)) < 0.001
    assert np.array_equal(first_true(mask, 20), np.argwhere(mask)[:20])
    assert np.array_equal(first_true(mask, 10**9), np.argwhere(mask))  # a limit past the hits: all of them
    assert first_true(np.zeros((4, 5), bool), 20).shape == (0, 2)
    assert first_true(mask, 0).shape == (0, 2)


def test_failing_check_keeps_the_first_20_mismatches_with_the_count():
    r = run(failing_global_cell(64, 128), allow_fail=True)
    (c,) = r.launch.checks
    assert c.mismatches == 64 * 128 - 1
    assert len(c.first) == F.MAX_LISTED
    assert [i for i, _, _ in c.first] == [(0, j) for j in range(1, 21)]
    assert all(float(g) == 0.0 and float(e) == float(i[1]) for i, g, e in c.first)
    text = r.text()
    assert "first 20 of 8,191 mismatches:" in text and "  [0, 20]: got 0, expected 20" in text
    assert "[0, 21]" not in text
    html = r.html()
    assert "first 20 of 8,191 mismatches:" in html and "[0, 20]: got 0, expected 20" in html


def test_mismatch_list_of_a_region_check_uses_region_indices():
    r = run(failing_global_cell(8, 16, check="B[2:3, :] == A[0:1, :]"), allow_fail=True)
    (c,) = r.launch.checks
    assert c.mismatches == 15 and len(c.first) == 15
    assert c.first[0][0] == (1,) and float(c.first[0][2]) == 1.0
    assert "15 mismatches:" in r.text()


# ----------------------------------------------------------------------------- downsampled pictures
def test_block_factors_are_powers_of_two_within_the_limit():
    assert block_factors((128, 8), (256, 192)) == (1, 1)
    assert block_factors((256, 192), (256, 192)) == (1, 1)
    assert block_factors((257, 193), (256, 192)) == (2, 2)
    assert block_factors((8192, 8192), (256, 192)) == (32, 64)
    for shape in [(1000, 3), (5, 100000), (4097, 777)]:
        fr, fc = block_factors(shape, (256, 192))
        assert -(-shape[0] // fr) <= 256 and -(-shape[1] // fc) <= 192
        assert fr == 1 or -(-shape[0] // (fr // 2)) > 256


def test_downsampled_mismatch_blocks_keep_a_single_bad_element():
    got = np.zeros((1024, 1024), np.float32)
    exp = got.copy()
    exp[777, 5] = 1.0
    d = {"got": got, "expected": exp, "mismatch": got != exp}
    v = downsample_check(d, (256, 192))
    assert v["factors"] == (4, 8) and v["mismatch"].shape == (256, 128) and v["shape"] == (1024, 1024)
    assert np.argwhere(v["mismatch"]).tolist() == [[777 // 4, 5 // 8]]
    assert v["mismatches"] == 1
    assert np.shares_memory(v["got"], got)  # a strided view, not a copy


def test_big_data_picture_is_downsampled_and_says_so():
    r = run(failing_global_cell(1024, 2048), allow_fail=True)
    d = check_data(r)
    assert d["mismatch"].shape == (1024, 2048)
    text = _figure_texts(figures.data_figure(r))
    assert "downsampled 4× in rows and 16× in columns (1,024 × 2,048 drawn as 256 × 128)" in text
    assert "2097151 of 2097152 elements differ (bitwise)" in text
    assert "first: [0, 1]: got 0, expected 1; [0, 2]: got 0, expected 2; [0, 3]: got 0, expected 3" in text
    assert "downsampled" not in _figure_texts(figures.data_figure(run(failing_global_cell(64, 64), allow_fail=True)))
    assert figures.downsample_caption((1, 1), (10, 10)) == ""
    assert figures.downsample_caption((2, 1), (300, 10)).startswith("downsampled 2× in rows (300 × 10 drawn as 150 × 10)")


# ----------------------------------------------------------------------------- collapsed panes
@pytest.fixture(scope="module")
def long_result():
    return run(many_ops_cell(60), launch="off")


def test_long_ir_and_cuda_collapse_in_the_text_report(long_result):
    r = long_result
    n_ir, n_cu = len(F.split_lines(r.ir)), len(F.split_lines(r.cuda))
    assert n_ir > F.MAX_LINES and n_cu > F.MAX_LINES
    text = r.text()
    hidden = n_ir - F.HEAD_LINES - F.TAIL_LINES
    assert f"… {hidden:,} lines not shown (full text: result.ir)" in text
    assert f"… {n_cu - F.HEAD_LINES - F.TAIL_LINES:,} lines not shown (full text: result.cuda)" in text
    ir_lines = F.split_lines(r.ir)
    assert ir_lines[F.HEAD_LINES - 1] in text and ir_lines[-1] in text
    assert len(text) < 200_000


def test_long_panes_collapse_in_html_and_the_mapping_holds_for_the_lines_shown(long_result):
    r = long_result
    pane = H.ir_pane_html(r)
    spans = re.findall(r'<span class="tm-line( tm-L(\d+)" data-src-line="(\d+)"[^>]*| tm-elided"[^>]*|")>', pane)
    n = len(F.split_lines(r.ir))
    assert len(spans) == F.HEAD_LINES + 1 + F.TAIL_LINES
    shown = list(range(F.HEAD_LINES)) + list(range(n - F.TAIL_LINES, n))
    got = [int(s[2]) if s[2] else None for i, s in enumerate(spans) if i != F.HEAD_LINES]
    assert got == [r.ir_lines[i] for i in shown]  # every shown line keeps its own description line
    assert "tm-elided" in spans[F.HEAD_LINES][0]
    assert f"… {n - F.HEAD_LINES - F.TAIL_LINES:,} lines not shown (full text: result.ir)" in pane
    html = r.html()
    style = re.search(r"<style>(.*?)</style>", html, re.S).group(1)
    styled = {int(x) for x in re.findall(r"\.tm-L(\d+):hover", style)}
    assert styled == set(H.shown_src_lines(html))  # rules for the lines shown, and for no other
    assert len(html) < 2_000_000


def test_a_pane_of_long_lines_keeps_to_its_byte_budget():
    text = "\n".join(f"x{i} = " + " + ".join(f"a[{k}]" for k in range(200)) for i in range(300))
    pane = H.code_pane_html("IR", text, list(range(1, 301)), "python", where="result.ir")
    assert len(pane) <= H.MAX_PANE_HTML + 2000
    hidden = int(re.search(r"… ([\d,]+) lines not shown \(full text: result.ir\)", pane).group(1).replace(",", ""))
    assert 0 < hidden < 300 and pane.count('class="tm-line') == 300 - hidden + 1
    plain = F.elided_text("\n".join(["z" * 5000] * 300), "result.cuda")
    assert len(plain) <= F.MAX_TEXT_CHARS + 100 and "lines not shown (full text: result.cuda)" in plain


def test_an_overlong_line_is_cut_with_its_length():
    long_line = "y" * (F.MAX_LINE_CHARS + 9)
    assert F.clip_line(long_line) == "y" * F.MAX_LINE_CHARS + " … (+9 chars)"
    pane = H.code_pane_html("CUDA", "int x;\n" + long_line, [None, 2], "cuda", where="result.cuda")
    assert "… (+9 chars)" in re.sub(r"<[^>]+>", "", pane) and 'data-src-line="2"' in pane
    assert F.clip_line("y" * 4200) == "y" * 4200  # a tcgen05.ld .x128 line of CUDA is shown whole


def test_why_tables_past_the_cap_are_one_line_each(long_result):
    r = long_result
    assert len(r.dispatch) == 120
    text = r.text()
    assert len(re.findall(r"variant +prio +verdict", text)) == F.MAX_LISTED
    assert "100 more ops (their why-tables: result.dispatch[20:]):" in text
    last = r.dispatch[-1]
    assert f"L{last.line}: {last.text} → copy/{last.chosen}" in text
    html = H.dispatch_html(r)
    assert html.count('class="tm-dispatch"') == F.MAX_LISTED and "100 more ops" in html


def test_capped_list_counts_the_rest():
    assert F.capped_list(["a", "b", "c"], "warnings", limit=2) == ["a", "b", "… 1 more warnings"]
    assert F.capped_list(["a"], "ops", total=5000, limit=2) == ["a", "… 4,999 more ops"]
    assert F.capped_list(["a", "b"], "ops", limit=2) == ["a", "b"]


def test_a_png_of_noise_keeps_to_its_byte_cap():
    fig = figures._new_figure()
    ax = fig.add_axes((0, 0, 1, 1))
    ax.imshow(np.random.default_rng(0).random((480, 900, 3)), interpolation="nearest", aspect="auto")
    png = figures.figure_png(fig)
    assert png.startswith(b"\x89PNG") and len(png) <= figures.MAX_PNG_BYTES
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == (450, 240)  # drawn again at half the resolution
    small = figures.figure_png(figures.data_figure(run(failing_global_cell(8, 8), allow_fail=True)))
    assert int.from_bytes(small[16:20], "big") == 900  # an ordinary picture keeps its size


def test_widget_view_panes_follow_the_same_caps(long_result):
    pytest.importorskip("ipywidgets")
    from tilemagic.widgets.view import WidgetView

    v = WidgetView(long_result)
    assert "lines not shown (full text: result.ir)" in v.panes["IR"].value
    assert "lines not shown (full text: result.cuda)" in v.panes["CUDA"].value
    assert "100 more ops" in v.panes["Dispatch"].value
    line = long_result.ir_lines[0] or next(n for n in long_result.ir_lines if n is not None)
    v.line_select.value = line  # re-rendered with the highlight: still collapsed, the mapping still there
    assert "lines not shown" in v.panes["IR"].value and f'data-src-line="{line}" style=' in v.panes["IR"].value


def test_many_checks_list_the_first_20_in_full_and_the_rest_one_line_each():
    src = "\n".join(["kernel manyc threads=32", "global A: float32[4, 8]", "global B: float32[4, 8] = zeros",
                     "warp.copy B <- A"] + ["check B == A"] * 60 + ["check B[0:1, :] == A[1:2, :]"] * 5)
    r = run(src, allow_fail=True)
    text = r.text()
    assert text.count("check B == A: PASS") == 20 + 40  # 20 in full, 40 as one-liners
    assert "45 more checks, 5 of them FAIL (all: result.launch.checks[20:]):" in text
    assert text.count("first ") == 0  # the failing checks past the 20th list no mismatches
    html = r.html()
    assert "45 more checks, 5 of them FAIL" in html and html.count("tm-mismatches") == 0
