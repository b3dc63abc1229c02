"""A new user's findings on the tcgen05.cp pictures, reports, README and notebook (issue 14, fix C): the cp
picture's caption says what is drawn and only that, a cp panel has no ``.x1``, the timeline's commit sits where
the cps complete and its legend lists what is present, labels read on a dark page, the HTML report carries the
text report's simulator and timeline facts, the labextension reaches JupyterLab after an editable install, and
the notebook's prose names its numbered examples."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection, PathCollection
from matplotlib.colors import to_rgb
from matplotlib.patches import ConnectionPatch

import tilemagic
from tilemagic import tilecopy
from tilemagic.widgets import figures as F
from tilemagic.widgets.format import timeline_summary
from tilemagic.widgets.html import render_html
from tilemagic.widgets.placement import async_timeline, cp_ops
from tilemagic.widgets.text import render_text

from cells import cp_cell

ROOT = Path(__file__).resolve().parents[3]

# a 128-row bf16 tile in the 128B swizzle: 4 cps, 128 lines of 128 B (more than the picture labels)
WIDE = "%%tilecopy\n" + cp_cell("128x256b", 3, "bfloat16", name="wide")
# 32 rows written four times (replicas +32, +64, +96)
QUAD = "%%tilecopy\n" + cp_cell("32x128b.warpx4", 0, "float32", name="quad")


@pytest.fixture(scope="module")
def wide():
    return tilecopy(WIDE, launch="sim")


@pytest.fixture(scope="module")
def quad():
    return tilecopy(QUAD, launch="sim")


def _texts(fig) -> list[str]:
    return [t.get_text() for t in fig.texts]


def _caption(fig) -> str:
    return " ".join(t for t in _texts(fig) if "tcgen05.cp.cta_group" in t and " -> TMEM" in t).replace("\n", " ")


# ----------------------------------------------------------------------------- the cp picture's caption (#15)
def test_caption_mentions_labels_only_when_drawn(wide, quad):
    big = F.cp_figure(wide)
    assert not any(re.fullmatch(r"\d+:\d+,\d+", t.get_text()) for ax in big.axes for t in ax.texts)
    assert "label instruction:row,chunk" not in _caption(big)
    small = F.cp_figure(quad)  # 4 lines: every chunk labelled, and the caption says so
    assert any(re.fullmatch(r"\d+:\d+,\d+", t.get_text()) for ax in small.axes for t in ax.texts)
    assert "label instruction:row,chunk" in _caption(small)


def test_caption_says_which_cp_it_describes(wide):
    n = len(cp_ops(wide.kernel)[0]["cps"])
    assert n == 4
    assert f"cp #0 of {n}" in _caption(F.cp_figure(wide))


def test_arrows_start_where_the_caption_says(wide):
    fig = F.cp_figure(wide)
    cap = _caption(fig)
    said = [(int(i), int(r)) for i, r in re.findall(r"cp #(\d+) row (\d+)", cap)]
    arrows = [a for a in fig.artists if isinstance(a, ConnectionPatch)]
    assert len(said) == len(arrows) == 4
    cps = cp_ops(wide.kernel)[0]["cps"]
    lc = 128 // 16
    for (i, r), a in zip(said, arrows):
        chunk = int(cps[i]["rel"][r, 0]) // 16  # chunk 0 of that row, through the descriptor's walk (swizzled)
        assert tuple(a.xy1) == (chunk % lc, chunk // lc)
        assert tuple(a.xy2) == (int(cps[i]["cols"][0, 0]), int(cps[i]["lanes"][r, 0]))


def test_lane_lines_stay_inside_the_tmem_panel(quad):
    fig = F.cp_figure(quad)
    ax2 = fig.axes[1]
    im = ax2.images[0]
    x0, x1 = im.get_extent()[:2]
    assert ax2.get_xlim() == (x0, x1)
    segs = [s for c in ax2.collections if isinstance(c, LineCollection) for s in c.get_segments()]
    quadrant = [s for s in segs if len(s) == 2 and s[0][1] == s[1][1] and s[0][1] in (31.5, 63.5, 95.5)]
    assert len(quadrant) == 3
    assert all(min(s[:, 0]) >= x0 and max(s[:, 0]) <= x1 for s in quadrant)
    assert not ax2.lines  # (an axhline spans the axes' whole width)


# ----------------------------------------------------------------------------- no .x1 on a cp panel (#16)
def test_cp_panel_title_has_no_repetition_count(quad):
    fig = F.heatmap_figure(quad.kernel, instr="each")
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    cp_titles = [t for t in titles if " cp" in t or "cp\n" in t or "cp ." in t]
    assert cp_titles and all(".x" not in t for t in cp_titles), titles
    assert any(".32x32b.x" in t for t in titles)  # the tcgen05.ld keeps its .x{num}


# ----------------------------------------------------------------------------- the timeline (#17)
def _commit_arrive_x(result) -> int:
    tl = async_timeline(result.launch.hb, int(result.kernel.threads))
    (x,) = [e["x"] for e in tl["events"] if e["kind"] == "arrive" and e["info"].get("by") == "tcgen05.commit"]
    return x


def test_commit_marker_at_the_end_of_the_cp_bars(wide):
    fig = F.timeline_figure(wide)
    ax = fig.axes[0]
    arrive = _commit_arrive_x(wide)
    brown = to_rgb(F._KIND_COLOUR["tcgen05.cp"])
    bars = [c for c in ax.collections if isinstance(c, LineCollection)
            and tuple(np.round(c.get_colors()[0][:3], 3)) == tuple(np.round(brown, 3)) and c.get_linewidths()[0] == 5]
    assert len(bars) == 1 and len(bars[0].get_segments()) == 4
    assert {float(s[1][0]) for s in bars[0].get_segments()} == {float(arrive)}
    # the commit's plus: on warp 0's row at the arrive, and nothing at the commit's issue
    tl = async_timeline(wide.launch.hb, int(wide.kernel.threads))
    (issue,) = [e["x"] for e in tl["events"] if e["kind"] == "tcgen05.commit"]
    pts = [tuple(p) for c in ax.collections if isinstance(c, PathCollection) for p in c.get_offsets()]
    assert (float(arrive), 0.0) in pts and (float(issue), 0.0) not in pts


def test_timeline_legend_lists_only_kinds_present(wide):
    texts = " ".join(_texts(F.timeline_figure(wide)))
    assert "tcgen05.cp" in texts and "mbarrier phase" in texts
    for absent in ("cp.async (issue", "TMA load", "TMA store", "○ commit group", "store's source read"):
        assert absent not in texts


def test_timeline_x_ticks_whole_and_inside(wide):
    fig = F.timeline_figure(wide)
    FigureCanvasAgg(fig).draw()
    ax = fig.axes[0]
    lo, hi = ax.get_xlim()
    ticks = [t for t in ax.get_xticks() if lo <= t <= hi]
    assert ticks and all(float(t).is_integer() for t in ticks)
    fb = fig.bbox
    for lab in ax.get_xticklabels() + ax.get_yticklabels():
        if lab.get_text():
            bb = lab.get_window_extent()
            assert bb.x0 >= fb.x0 and bb.x1 <= fb.x1, lab.get_text()


# ----------------------------------------------------------------------------- readable in JupyterLab Dark (#18)
def _luminance(rgb) -> float:
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def _contrast(a, b) -> float:
    la, lb = sorted((_luminance(to_rgb(a)), _luminance(to_rgb(b))), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def test_replica_labels_on_a_dark_box(quad):
    fig = F.cp_figure(quad)
    labels = [t for t in fig.axes[1].texts if t.get_text().startswith("replica +")]
    assert [t.get_text() for t in labels] == ["replica +32", "replica +64", "replica +96"]
    for t in labels:
        box = t.get_bbox_patch()
        assert box is not None
        # white on the box, whatever the hatching or the page behind it (WCAG AA: 4.5:1)
        assert _contrast(t.get_color(), box.get_facecolor()[:3]) >= 4.5


def test_arrows_solid_and_wide_enough(wide):
    arrows = [a for a in F.cp_figure(wide).artists if isinstance(a, ConnectionPatch)]
    assert arrows
    for a in arrows:
        assert a.get_alpha() in (None, 1.0) and a.get_linewidth() >= 1.2
        # the theme-neutral grey of every picture's ink: readable on white and on JupyterLab Dark's #111111
        assert _contrast(a.get_edgecolor()[:3], "#ffffff") >= 3 and _contrast(a.get_edgecolor()[:3], "#111111") >= 3


# ----------------------------------------------------------------------------- the reports (#21)
def test_html_report_carries_the_text_reports_cp_facts(wide):
    text = render_text(wide)
    html = render_html(wide)
    sim = [ln for ln in text.splitlines() if ln.strip().startswith("simulator: L")]
    tl = [ln for ln in text.splitlines() if ln.strip().startswith("timeline: ")]
    assert sim and tl
    from html import unescape

    plain = unescape(re.sub(r"<[^>]+>", "", html))
    assert sim[0].strip() in plain and "4 of 4 landed" in plain
    assert tl[0].strip() in plain


def test_single_thread_issues_named_by_thread(wide):
    tl = async_timeline(wide.launch.hb, int(wide.kernel.threads))
    assert timeline_summary(tl).startswith("4 copy issue(s) by thread 0 (warp 0),")
    assert "timeline: 4 copy issue(s) by thread 0 (warp 0)" in render_text(wide)


def test_warp_wide_issues_still_counted_by_warp():
    r = tilecopy((ROOT / "tilemagic/demos/ldgsts_roundtrip.tile").read_text(), launch="sim")
    tl = async_timeline(r.launch.hb, int(r.kernel.threads))
    assert re.match(r"\d+ copy issue\(s\) by warp,", timeline_summary(tl))


# ----------------------------------------------------------------------------- the labextension (#1)
def test_labextension_linkable_after_an_editable_install():
    """``jupyter labextension develop --overwrite .`` links ``_jupyter_labextension_paths()``'s ``src`` (relative
    to the package) as ``dest``: the same extension the data-files install for a plain ``pip install .``."""
    (ext,) = tilemagic._jupyter_labextension_paths()
    src = Path(tilemagic.__file__).parent / ext["src"]
    pkg = json.loads((src / "package.json").read_text())
    assert pkg["name"] == ext["dest"]
    assert (src / "static" / Path(pkg["jupyterlab"]["_build"]["load"]).name).is_file()
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["data-files"]
    assert f"share/jupyter/labextensions/{ext['dest']}" in data


def test_readme_documents_a_notebook_install_with_the_extension():
    readme = (ROOT / "README.md").read_text()
    cmds = re.findall(r"```bash\n(.*?)\n```", readme, re.S)
    # the two fresh-machine commands stay as they are
    assert "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && tilemagic demo --html " \
           "tilemagic-demo.html" in cmds
    assert "python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[test,tvm]' && pytest" in cmds
    # a non-editable install for notebooks, and the link for an editable one
    assert any(re.search(r"pip install \.( |$)", c) and "jupyterlab" in c for c in cmds)
    assert "jupyter labextension develop --overwrite ." in readme


# ----------------------------------------------------------------------------- the notebook's prose (#20)
def test_tcgen05_cp_notebook_names_examples_not_cells():
    src = (ROOT / "notebooks/src/tcgen05_cp.md").read_text()
    examples = {int(n) for n in re.findall(r"^\*\*(\d+)\.\*\*", src, re.M)}
    assert examples
    assert not re.search(r"\bcells? \d+\b", src)  # "cell 3" reads as execution count [3]
    assert {int(n) for n in re.findall(r"\bexamples? (\d+)\b", src)} <= examples
