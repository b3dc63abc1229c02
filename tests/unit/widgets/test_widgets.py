"""The views: deterministic text/plain, static HTML with the line mapping, the ipywidgets stage view.

Hand-built results (ir_builders.py) test each view's content; results from the real
pipeline (both seed demos, twice) test determinism end to end.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from helpers import run_demo

import tilemagic
from tilemagic.cli import demo_source
from ir_builders import (
    TMEM_CUDA,
    TMEM_IR,
    TMEM_IR_LINES,
    TMEM_SOURCE,
    make_fallback_result,
    make_launch,
    make_tmem_result,
)

from tilemagic.widgets.html import (
    PIN_SCRIPT,
    heatmap_kinds,
    highlight_lines,
    line_map_style,
    mapped_lines,
    render_html,
)
from tilemagic.widgets.format import format_values
from tilemagic.widgets.text import render_text

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


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
    assert "<" + "span" not in s and "data-src-line" not in s  # text view: no HTML


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
    assert "http://" not in h and "https://" not in h and not ADDRESS.search(h)
    assert "TMEM simulated" in h and "nothing ran on a GPU or on Blackwell" in h
    assert "tmem&lt;-&gt;local" in h and "src is local, not shared" in h
    assert "emitter declined: 24 does not divide 32" in h
    for verdict in ("chosen", "rejected", "declined"):
        assert f">{verdict}</span>" in h
    assert 'data-src-line="8"' in h and 'data-src-line="11"' in h
    assert "&lt;-" in h and "T <- a" not in h and "b <- T" not in h
    assert "grid-template-columns" in h and "max-height" in h
    assert "<details" in h and "emulated TMEM" in h
    assert h.count("data:image/png;base64,iVBORw0KGgo") == 1  # the occupancy only: the check passed
    assert ">PASS</span>" in h and "copy/fallback used" in h and "#fff8c5" in h


def test_html_line_spans_carry_classes_and_source_lines():
    r = make_tmem_result()
    h = render_html(r)
    spans = highlight_lines(TMEM_IR, "python")
    assert len(spans) == len(TMEM_IR_LINES) and "\n" not in "".join(spans)
    ir_pane = h.split('class="tm-code tm-ir"', 1)[1].split("</pre>", 1)[0]
    got = re.findall(r'<span class="tm-line(?: tm-L(\d+))?"(?: data-src-line="(\d+)")?>', ir_pane)
    assert [(int(a) if a else None) for a, _ in got] == TMEM_IR_LINES
    assert all(a == b for a, b in got)  # the class and the attribute agree
    # panes are tagged with their stage
    for role in ("tm-src", "tm-ir", "tm-cu", "tm-emu"):
        assert f'class="tm-code {role}"' in h
    # description lines that produced code are mapped; declarations are not
    src_pane = h.split('class="tm-code tm-src"', 1)[1].split("</pre>", 1)[0]
    assert re.findall(r'data-src-line="(\d+)"', src_pane) == ["8", "11", "13", "14"]
    # the why-table headings carry their op's line
    assert '<code class="tm-line tm-L8" data-src-line="8"' in h


def test_html_line_map_style_and_pin_script():
    r = make_tmem_result()
    h = render_html(r)
    assert mapped_lines(r) == [8, 11]
    style = line_map_style([8, 11, 13, 14])
    assert h.count("<style>") == 1 and style in h
    assert '<div class="tm-check tm-line tm-L14" data-src-line="14"' in h
    for n in (8, 11, 13, 14):
        assert f".tm-report:has(.tm-L{n}:hover) .tm-L{n}{{" in style
        assert f'.tm-report[data-tm-pin="{n}"] .tm-L{n}{{' in style
    assert ".tm-L9" not in style and line_map_style([]) == ""
    assert h.count("<script>") == 1 and h.endswith(PIN_SCRIPT + "</div>")
    assert "window.__tilemagicPin" in PIN_SCRIPT and "data-tm-pin" in PIN_SCRIPT
    # no report without mapped lines carries the style or the script
    bare = make_fallback_result()
    bare.ir_lines, bare.cuda_lines = [None] * 4, [None]  # (and no dispatch records, no launch)
    assert "<style>" not in bare.html() and "<script>" not in bare.html()


def test_html_fail_native_and_emulated_banners():
    fail = render_html(make_tmem_result(launch=make_launch(passed=False)))
    assert ">FAIL</span>" in fail and "1023 of 1024 elements differ" in fail
    assert 'data-kind="data"' in fail and fail.count("data:image/png;base64,") == 2  # the data view joins
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


def test_html_heatmap_option_selects_pictures():
    r = make_tmem_result(heatmap=("tmem", "instr", "fragment", "data"), color_by="thread")
    assert heatmap_kinds(r) == ["tmem", "instr", "fragment", "data"]
    h = render_html(r)
    kinds = re.findall(r'<div class="tm-heatmap" data-kind="(\w+)">', h)
    assert kinds == ["tmem", "instr", "fragment", "data"]
    assert heatmap_kinds(make_tmem_result(heatmap="none", launch=make_launch(passed=False))) == []
    assert "data:image/png" not in render_html(make_tmem_result(heatmap=("none",)))
    assert heatmap_kinds(make_tmem_result(launch=make_launch(passed=False))) == ["tmem", "data"]
    # a picture that does not apply says why instead of failing the report
    nl = render_html(make_tmem_result(launch=None, heatmap=("data",)))
    assert 'data-kind="data"' not in nl


def test_html_fallback_shows_shared_tile():
    h = render_html(make_fallback_result())
    assert "Shared memory" in h and "data:image/png;base64," in h


@pytest.mark.parametrize("name", ["tmem_roundtrip", "fallback_demo"])
@pytest.mark.parametrize("view", ["html", "text"])
def test_pipeline_views_are_deterministic(name, view):
    """Two runs of the whole pipeline give identical text/plain and text/html."""
    a, b = run_demo(name, view=view), run_demo(name, view=view)
    ba, bb = a._repr_mimebundle_(), b._repr_mimebundle_()
    assert ba == bb
    assert set(ba) == ({"text/plain", "text/html"} if view == "html" else {"text/plain"})
    assert not ADDRESS.search(ba["text/plain"])
    if view == "html":
        h = ba["text/html"]
        assert " object at 0x" not in h and "/tmp" not in h  # (the CUDA has hex constants of its own)
        # every mapped IR/CUDA line's source line is a hover target of the style block
        for n in set(re.findall(r'data-src-line="(\d+)"', h)):
            assert f".tm-report:has(.tm-L{n}:hover)" in h


def test_pipeline_emulated_lines_are_mapped():
    r = run_demo("tmem_roundtrip")
    assert len(r.cuda_emulated_lines) == r.cuda_emulated.count("\n") + (not r.cuda_emulated.endswith("\n"))
    assert 9 in r.cuda_emulated_lines and 12 in r.cuda_emulated_lines
    emu = r.html().split('class="tm-code tm-emu"', 1)[1].split("</pre>", 1)[0]
    assert 'class="tm-line tm-L9" data-src-line="9"' in emu


def test_result_heatmap_method_kinds():
    r = run_demo("tmem_roundtrip")
    assert "TMEM occupancy" in r.heatmap().texts[0].get_text()
    assert "register fragment a" in r.heatmap(kind="fragment").texts[0].get_text()
    assert "check B == A (L15): PASS" in r.heatmap(kind="data").texts[0].get_text()
    assert len(r.heatmap(instr="each").axes) == 2
    assert len(r.heatmap(kind="instr").axes) == 2  # --heatmap's name for one panel per instruction
    with pytest.raises(ValueError, match="kind must be one of tmem, instr, fragment, data"):
        r.heatmap(kind="nope")


# ============================================================================ widget
def _all_widgets(w):
    yield w
    for c in getattr(w, "children", ()):
        yield from _all_widgets(c)


def test_widget_stage_tabs_and_no_output_widget():
    import ipywidgets as W

    box = make_tmem_result().widget()
    assert isinstance(box, W.VBox) and isinstance(box.tab, W.Tab)
    assert tuple(box.tab.titles) == ("Description", "Dispatch", "IR", "CUDA", "CUDA (emulated)", "PTX", "Heatmaps",
                                     "Launch")
    assert not any(isinstance(w, W.Output) for w in _all_widgets(box))
    heat = box.heatmaps
    assert isinstance(heat.image, W.Image) and bytes(heat.image.value).startswith(PNG_SIGNATURE)
    assert 'data-src-line="8"' in box.panes["IR"].value
    assert ">PASS</span>" in box.tab.children[-1].value
    assert "compiled when this tab is opened" in box.panes["PTX"].value  # lazily: no compiler run yet
    fb = make_fallback_result().widget()
    assert tuple(fb.tab.titles) == ("Description", "Dispatch", "IR", "CUDA", "PTX", "Heatmaps", "Launch")


def test_widget_line_select_highlights_mapped_lines():
    box = make_tmem_result().widget()
    assert [v for _, v in box.line_select.options] == [0, 8, 11]
    assert box.line_select.options[1][0] == "L8: wg.copy_async T <- a"
    assert "rgba(255,213,0,0.33)" not in box.panes["IR"].value
    box.line_select.value = 8
    for title, n in (("IR", 2), ("CUDA", 2), ("CUDA (emulated)", 1), ("Description", 1)):
        assert box.panes[title].value.count("rgba(255,213,0,0.33)") == n, title
    hl = re.findall(r'<span class="tm-line tm-L(\d+)" data-src-line="\d+" style="background:rgba\(255,213,0,0.33\)',
                    box.panes["IR"].value)
    assert hl == ["8", "8"]
    box.line_select.value = 0
    assert "rgba(255,213,0,0.33)" not in box.panes["IR"].value


def test_widget_heatmap_controls_redraw():
    box = make_tmem_result(launch=make_launch(passed=False)).widget()
    h = box.heatmaps
    assert [v for _, v in h.kind.options] == ["tmem", "instr", "fragment", "data"]
    assert h.instr.label == "all (overlay)"  # (a None value would show as a blank Dropdown)
    first = bytes(h.image.value)
    h.color_by.value = "thread"
    assert bytes(h.image.value) != first
    h.instr.value = 1
    one = bytes(h.image.value)
    h.kind.value = "fragment"
    assert bytes(h.image.value) not in (first, one) and h.color_by.disabled
    h.kind.value = "data"
    assert h.note.value == "" and not h.check.disabled
    h.kind.value = "instr"
    assert bytes(h.image.value).startswith(PNG_SIGNATURE)


@pytest.mark.nvcc
@needs_nvcc
def test_widget_ptx_tab_compiles_lazily_and_maps_lines():
    r = run_demo("tmem_roundtrip")
    box = r.widget()
    box.line_select.value = 9
    box.tab.selected_index = box.tab.titles.index("PTX")
    ptx = box.panes["PTX"].value
    assert "PTX (sm_100a, nvcc" in ptx and 'class="tm-code tm-ptx"' in ptx
    line = re.search(r'<span class="tm-line tm-L9" data-src-line="9" style="[^"]*" data-tm-hl>([^\n]*tcgen05[^\n]*)', ptx)
    assert line and "st" in re.sub("<[^>]+>", "", line.group(1))
    box.line_select.value = 12
    assert re.search(r'tm-L12" data-src-line="12" style="background:rgba\(255,213,0,0.33\)[^>]*>[^\n]*tcgen05', box.panes["PTX"].value)


def test_widget_view_renders_for_every_demo_without_error():
    for name in ("tmem_roundtrip", "fallback_demo"):
        box = run_demo(name, view="widget").widget()
        assert "heatmap unavailable" not in box.heatmaps.note.value


def test_result_sections_are_report_sections_and_tabs():
    from tilemagic.result import ReportSection

    r = make_tmem_result()
    r.sections = [ReportSection("TVMScript", "T.prim_func ...", "<pre>tmem_roundtrip</pre>")]
    h = render_html(r)
    assert "TVMScript</div><pre>tmem_roundtrip</pre>" in h
    assert h.index("TVMScript") < h.index("allocated 32 of 512")
    box = r.widget()
    assert box.tab.titles.index("TVMScript") == box.tab.titles.index("Heatmaps") - 1
    assert "TVMScript" not in make_fallback_result().widget().tab.titles


def test_render_speed():
    import time

    r = make_tmem_result()
    render_html(r)  # warm: imports, Pygments styles, fonts
    t0 = time.perf_counter()
    render_html(r)
    assert time.perf_counter() - t0 < 1.0  # typically ~50 ms; generous bound for slow CI


def test_no_pyplot_ipywidgets_or_cupy_imported():
    here = Path(__file__).resolve().parent
    root = here.parents[2]
    code = textwrap.dedent(f"""
        import sys
        sys.path[:0] = [{str(root)!r}, {str(here)!r}]
        import tilemagic.widgets
        BANNED = ("matplotlib.pyplot", "ipywidgets", "cupy")
        assert not [m for m in BANNED if m in sys.modules], "importing tilemagic.widgets"
        import ir_builders as t
        from tilemagic.widgets.figures import heatmap_figure, data_figure
        from tilemagic.widgets.png import heatmap_png, fragment_png
        heatmap_figure(t.make_tmem_kernel()); heatmap_png(t.make_fallback_kernel())
        fragment_png(t.make_tmem_kernel()); data_figure(t.make_tmem_result())
        r = t.make_tmem_result(); r.text(); r.html()
        bad = [m for m in BANNED if m in sys.modules]
        print("BAD" if bad else "OK", bad)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(root), check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "OK []"


def test_source_fixture_is_the_demo():
    assert TMEM_SOURCE.startswith("kernel tmem_roundtrip threads=128")


# ============================================================================ TMEM columns from the plan
PLAN_CELL = """kernel k threads=128
global A: float32[128, 16]
tmem T: float32[128, 16] @ S[(128, 16) : (1@TLane, 2@TCol)]
tmem U: float32[128, 8]
tmem V: float32[128, 4] at U + 2
local a: float32[128, 16] @ S[(128, 16) : (1@tid_in_wg, 1)]
wg.copy a <- A
"""


def test_tmem_columns_in_reports_are_the_plans():
    # T's layout strides TCol by 2: the plan reserves columns 0-30 (the report once said 0-15 from the shape);
    # U starts where T ends, and V sits at U's columns + 2
    from tilemagic.widgets import figures

    r = tilemagic.tilecopy(PLAN_CELL, launch="off")
    assert [(b.name, b.tmem_col, b.tmem_ncols) for b in r.kernel.tmem] == [("T", 0, 31), ("U", 31, 8), ("V", 33, 4)]
    text = r.text()
    for row in (r"T\s+float32\s+\[128, 16\]\s+\?\s+cols 0-30", r"U\s+float32\s+\[128, 8\]\s+D\s+cols 31-38",
                r"V\s+float32\s+\[128, 4\]\s+D\s+cols 33-36"):
        assert re.search(row, text), row
    html = r.html()
    assert all(f">{c}</td>" in html for c in ("cols 0-30", "cols 31-38", "cols 33-36"))
    assert [(a, z) for a, z, _, _ in figures._buffer_groups(r.kernel)] == [(0, 31), (31, 39), (33, 37)]


def test_python_api_view_widget_shows_the_widget_with_fallbacks():
    import ipywidgets as W

    r = tilemagic.tilecopy(TMEM_SOURCE, launch="sim", view="widget")
    bundle = r._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/plain"] == r.text() and bundle["text/html"] == r.html()
    w = r.widget()
    assert isinstance(w, W.VBox) and isinstance(w.heatmaps, W.VBox) and w.children[-1] is w.tab
    assert "application/vnd.jupyter.widget-view+json" not in tilemagic.tilecopy(TMEM_SOURCE, launch="off")._repr_mimebundle_()


def test_lowered_op_markers_carry_the_variant_and_rewording_keeps_the_legend():
    from tilemagic.ir.nodes import Comment, walk
    from tilemagic.widgets import placement

    r = tilemagic.tilecopy(demo_source("fallback_demo"), launch="off")
    markers = [s for s in walk(r.kernel.body) if isinstance(s, Comment) and s.variant]
    assert [(m.op, m.variant, m.span.line) for m in markers][:1] == [("copy", "fallback", markers[0].span.line)]
    assert r.ir.count("[copy/fallback]") == len(markers)  # the printed text is unchanged
    before = [i["variants"] for i in placement.shared_writers(r.kernel)]
    for m in markers:
        m.text = f"op at line {m.span.line}"
    assert [i["variants"] for i in placement.shared_writers(r.kernel)] == before == [["copy/fallback"]]


def test_variant_names_do_not_wrap_in_the_why_table():
    import tilemagic

    res = tilemagic.tilecopy(demo_source("tmem_roundtrip"), launch="off")
    cells = re.findall(r'<tr class="tm-cand"><td style="([^"]*)">tmem&lt;-&gt;local</td>', res.html())
    assert cells and all("white-space:nowrap" in c for c in cells)


def test_swizzle_xor_is_printed_with_parentheses():
    import tilemagic

    res = tilemagic.tilecopy("kernel k threads=128\nglobal A: float16[64, 64]\n"
                             "shared S: float16[64, 64] @ swizzle(3, 3, 3)\ncta.copy S <- A\n", launch="off")
    assert "offset=(i * 1024 + tx * 8) ^ ((i * 1024 + tx * 8) // 64 % 8 * 8)" in res.ir


def test_report_colours_follow_the_jupyterlab_theme_with_light_fallbacks():
    # dark theme: every text colour and background of the report's own chrome is a JupyterLab variable
    # with the light value as fallback; only the verdict badges (their own light background and dark text) and
    # translucent tints keep fixed colours
    import tilemagic
    from tilemagic.widgets import html as H

    res = tilemagic.tilecopy(demo_source("tmem_roundtrip"), launch="sim")
    page = res.html()
    badges = set(H._VERDICT.values())
    for style in re.findall(r'style="([^"]*)"', page):
        if any(b in style for b in badges):
            continue
        for prop, value in re.findall(r"(?:^|;)\s*(color|background)\s*:\s*([^;]+)", style):
            if "#" in value:
                assert "var(--jp-" in value, (prop, value, style)
    assert "color:var(--jp-content-font-color1,#1f2328)" in page  # headings and the report's text
    assert "var(--jp-mirror-editor-keyword-color," in page  # code tokens in the editor's theme colours


def test_pictures_have_a_transparent_background_and_neutral_ink():
    import io

    import tilemagic
    from PIL import Image

    from tilemagic.widgets.figures import NEUTRAL
    from tilemagic.widgets.png import picture_png

    res = tilemagic.tilecopy(demo_source("tmem_roundtrip"), launch="sim")
    for kind in ("tmem", "fragment"):
        im = Image.open(io.BytesIO(picture_png(res, kind))).convert("RGBA")
        assert im.getpixel((2, 2))[3] == 0, kind  # the page shows through: no white block in the dark theme
        px = np.asarray(im)
        for region in (px[:50, :], px[:, 640:]):  # the titles and the legend column (text on the page itself)
            dark = (region[..., 3] > 200) & (region[..., :3].max(axis=-1) < 40)
            assert not dark.any(), kind  # no black text, which would vanish on a dark page
    assert NEUTRAL.startswith("#")


def test_the_stripped_hover_note_shows_only_without_the_style():
    import tilemagic
    from tilemagic.widgets.html import STRIPPED_NOTE

    page = tilemagic.tilecopy(demo_source("tmem_roundtrip"), launch="off").html()
    assert ".tm-report .tm-stripped{display:none}" in page  # the style hides the note ...
    note = re.search(r'<div class="tm-stripped" style="([^"]*)">([^<]*)</div>', page)
    assert note and "display" not in note.group(1)  # ... and nothing else does, so without the style it shows
    assert "jupyter trust NOTEBOOK.ipynb" in note.group(2) and note.group(2) == __import__("html").escape(STRIPPED_NOTE)
    # a report with no mapped line has no hover, no style and no note
    bare = tilemagic.tilecopy("global A: float32[4]\n", launch="off").html()
    assert "<style>" not in bare and "tm-stripped" not in bare


def test_code_panes_offer_wrap_numbers_and_stacking():
    import tilemagic
    from tilemagic.widgets import html as H

    page = tilemagic.tilecopy(demo_source("tmem_roundtrip"), launch="off").html()
    tools = re.search(r'<div class="tm-tools" style="([^"]*)">(.*?)</div>', page)
    assert tools and "display:none" in tools.group(1)  # shown by the report's style only (with the script)
    assert re.findall(r'data-tm-toggle="(\w+)"', tools.group(2)) == ["wrap", "numbers", "stack"]
    assert ".tm-report .tm-tools{display:flex !important}" in page
    assert ".tm-report[data-tm-wrap] .tm-code{white-space:pre-wrap !important" in page
    assert ".tm-report[data-tm-stack] .tm-grid{grid-template-columns:minmax(0,1fr) !important}" in page
    assert "counter-increment:tm-ln" in page and "data-tm-toggle" in H.PIN_SCRIPT
    # narrow outputs stack by themselves (an inline style: also where the style sheet was removed)
    assert 'class="tm-grid" style="display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,480px),1fr))' in page


def test_a_collapsed_pane_numbers_its_tail_lines_as_in_the_text():
    from tilemagic.widgets import html as H
    from tilemagic.widgets.format import HEAD_LINES, TAIL_LINES

    n = HEAD_LINES + TAIL_LINES + 100
    pane = H.code_pane_html("IR", "\n".join(f"x{i} = {i}" for i in range(n)), [1] * n, "python")
    elided = re.search(r'<span class="tm-line tm-elided" style="([^"]*)">', pane)
    assert elided and f"counter-set:tm-ln {n - TAIL_LINES}" in elided.group(1)  # the next line is line n-49
