"""The cluster pictures (issue 13, second milestone, part P): which CTA's shared memory received which bytes
(the placement model against hand-computed receipts, its text, the figure), the async timeline per CTA and
warp, and where they are shown (only for a cluster kernel).

The simulator's record is built here by hand from its own types (``sim.hb.ClusterReceipt``, the data of
``launch.hb.cluster_receipts``, and ``sim.hb.SyncEvent`` with its ``cta`` field), so each picture is held to
hand-computed receipts; the pictures read both by attribute only.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from tilemagic import tilecopy
from tilemagic.errors import Span
from tilemagic.sim.hb import ClusterReceipt, HBReport, SyncEvent
from tilemagic.widgets import figures
from tilemagic.widgets import placement as P
from tilemagic.widgets.html import render_html
from tilemagic.widgets.png import picture_png
from tilemagic.widgets.text import render_text

DEMOS = Path(__file__).resolve().parents[3] / "tilemagic" / "demos"
PNG = b"\x89PNG\r\n\x1a\n"


CtaEvent = SyncEvent  # (a timeline event with its CTA: the simulator's own type)


ClusterHB = HBReport  # (the simulator's report: it carries cluster_receipts)


# two shared buffers of 16 KiB and 8 KiB, threads=128: built by the language today, run as a cluster by hand
CELL = """kernel pic threads=128
global A: float16[128, 64] = arange
global B: float16[128, 64] = zeros
shared S: float16[128, 64]
shared R: float32[64, 32]
mbarrier full
if tx == 0: arrive full expect_tx=auto
if tx == 0: thread.copy_async S <- A mbar=full
wait full phase 0
wg.copy B <- S
check B == A
"""


@pytest.fixture(scope="module")
def base():
    return tilecopy(CELL, launch="sim")


def _clustered(base, ctas: int, receipts, timeline=None):
    """``base`` as a cluster of ``ctas`` CTAs whose simulator recorded ``receipts`` (and ``timeline``)."""
    hb = ClusterHB(timeline=list(base.launch.hb.timeline if timeline is None else timeline),
                   cluster_receipts=list(receipts))
    kernel = dataclasses.replace(base.kernel, cluster=ctas)
    return dataclasses.replace(base, kernel=kernel, launch=dataclasses.replace(base.launch, hb=hb))


# each of 2 CTAs loads one half of S and multicasts it to both (mask 0b11), description line 9
MULTICAST = [ClusterReceipt(d, "S", 8192 * s, 8192 * (s + 1), s, 9, "multicast") for d in (0, 1) for s in (0, 1)]
# a ring of 4: CTA r stores its S (line 7) and sends its 8 KiB to CTA (r + 1) % 4's R (line 11)
RING = ([ClusterReceipt(r, "S", 0, 16384, r, 7, "store") for r in range(4)]
        + [ClusterReceipt((r + 1) % 4, "R", 0, 8192, r, 11, "dsmem") for r in range(4)])


def test_multicast_placement(base):
    pl = P.cluster_placement(dataclasses.replace(base.kernel, cluster=2), MULTICAST)
    assert pl["ctas"] == 2 and pl["row_bytes"] == 128
    assert [(b["name"], b["nbytes"]) for b in pl["buffers"]] == [("S", 16384), ("R", 8192)]  # no mbarrier
    for r in (0, 1):
        m = pl["maps"][r]["S"]
        assert np.array_equal(m["src"], np.repeat(np.array([0, 1], np.int16), 8192))
        assert set(m["kind"].tolist()) == {P.RECEIPT_KINDS.index("multicast")} and set(m["line"].tolist()) == {9}
        assert (pl["maps"][r]["R"]["src"] == -1).all()  # nothing landed in R
        assert [(u["buffer"], u["lo"], u["hi"], u["src"]) for u in pl["runs"][r]] == [("S", 0, 8192, 0),
                                                                                     ("S", 8192, 16384, 1)]
    # one issue per writing CTA, each feeding both CTAs
    assert [(i["src"], i["line"], i["kind"], i["dst"], i["bytes"]) for i in pl["issues"]] == \
        [(0, 9, "multicast", [0, 1], {0: 8192, 1: 8192}), (1, 9, "multicast", [0, 1], {0: 8192, 1: 8192})]
    assert P.cluster_summary(pl)[1] == \
        "CTA 1: S bytes 0–8191 from CTA 0 (multicast, L9), 8192–16383 from CTA 1 (multicast, L9)"


def test_dsmem_ring_placement(base):
    pl = P.cluster_placement(dataclasses.replace(base.kernel, cluster=4), RING)
    for r in range(4):
        assert [(u["buffer"], u["lo"], u["hi"], u["src"], u["kind"], u["line"]) for u in pl["runs"][r]] == \
            [("S", 0, 16384, r, "store", 7), ("R", 0, 8192, (r - 1) % 4, "dsmem", 11)]
    dsmem = [i for i in pl["issues"] if i["kind"] == "dsmem"]
    assert [(i["src"], i["dst"]) for i in dsmem] == [(0, [1]), (1, [2]), (2, [3]), (3, [0])]
    assert P.cluster_summary(pl) == [
        f"CTA {r}: S bytes 0–16383 from CTA {r} (store, L7); R bytes 0–8191 from CTA {(r - 1) % 4} (dsmem, L11)"
        for r in range(4)]


def test_runs_are_merged_and_the_last_writer_wins(base):
    k = dataclasses.replace(base.kernel, cluster=2)
    pieces = [ClusterReceipt(1, "R", lo, lo + 1024, 0, 11, "dsmem") for lo in range(0, 8192, 1024)]
    pl = P.cluster_placement(k, pieces)  # eight adjacent receipts of one copy: one run
    assert [(u["lo"], u["hi"]) for u in pl["runs"][1]] == [(0, 8192)] and pl["runs"][0] == []
    assert pl["issues"][0]["bytes"] == {1: 8192}
    assert P.cluster_summary(pl) == ["CTA 0: nothing received", "CTA 1: R bytes 0–8191 from CTA 0 (dsmem, L11)"]
    # a later store over bytes 4096..6143 of CTA 1's R splits the run in three
    pl = P.cluster_placement(k, pieces + [ClusterReceipt(1, "R", 4096, 6144, 1, 12, "store")])
    assert [(u["lo"], u["hi"], u["src"], u["kind"]) for u in pl["runs"][1]] == \
        [(0, 4096, 0, "dsmem"), (4096, 6144, 1, "store"), (6144, 8192, 0, "dsmem")]
    # a run that is not a multiple of the 128-byte row, and the limit of the text
    many = [ClusterReceipt(0, "R", 16 * i, 16 * i + 16, i % 2, 7, "store") for i in range(30)]
    pl = P.cluster_placement(k, many)
    assert len(pl["runs"][0]) == 30
    assert P.cluster_summary(pl, limit=3)[0].endswith("32–47 from CTA 0 (store, L7) … 27 more runs")


@pytest.mark.parametrize("bad, what", [
    (ClusterReceipt(2, "S", 0, 16, 0, 9, "multicast"), "rank outside the cluster of 2 CTAs"),
    (ClusterReceipt(0, "S", 0, 16, -1, 9, "multicast"), "rank outside"),
    (ClusterReceipt(0, "R", 8000, 8200, 0, 9, "dsmem"), "bytes outside R .8192 bytes."),
    (ClusterReceipt(0, "S", 16, 16, 0, 9, "tma"), "bytes outside"),
    (ClusterReceipt(0, "S", 0, 16, 0, 9, "cp.async"), "kind not one of tma, multicast, dsmem, store"),
])
def test_inconsistent_receipts_are_refused(base, bad, what):
    with pytest.raises(ValueError, match=what):
        P.cluster_placement(dataclasses.replace(base.kernel, cluster=2), [bad])


def test_run_rectangles():
    assert figures._run_rects(0, 256, 128, 0) == [(0, 0, 128, 2)]
    assert figures._run_rects(16, 48, 128, 3) == [(16, 3, 32, 1)]
    # bytes 100..400: the tail of row 0, rows 1-2, the head of row 3 (400 = 3 * 128 + 16)
    assert figures._run_rects(100, 400, 128, 10) == [(100, 10, 28, 1), (0, 11, 128, 2), (0, 13, 16, 1)]


def test_cluster_figure_renders(base):
    r = _clustered(base, 2, MULTICAST)
    fig = figures.cluster_figure(r)
    panels = [ax for ax in fig.axes if ax.get_title(loc="left").startswith("CTA ")]
    assert [ax.get_title(loc="left") for ax in panels] == ["CTA 0 · 16384 B", "CTA 1 · 16384 B"]
    # rows of 128 bytes: S's 128 rows, a blank row, R's 64 rows; colour index = writing CTA + 1 (0: nothing)
    img = panels[1].images[0].get_array()
    assert img.shape == (128 + 1 + 64, 128)
    assert (img[:64] == 1).all() and (img[64:128] == 2).all() and (img[129:] == 0).all()
    assert np.ma.getmaskarray(img)[128].all()
    hatched = [c for ax in panels for c in ax.collections if c.get_hatch()]
    assert {c.get_hatch() for c in hatched} == {"////"}  # multicast
    # one issue feeding two panels: two arrows per writing CTA
    from matplotlib.patches import ConnectionPatch

    assert len([a for a in fig.artists if isinstance(a, ConnectionPatch)]) == 4
    png = picture_png(r, "cluster")
    assert png.startswith(PNG) and 5000 < len(png) <= figures.MAX_PNG_BYTES
    w, h = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (w, h) == (900, 480)
    # a ring of 4 CTAs (dsmem crossed, stores dotted) and 8 CTAs (two rows of panels) draw too
    fig4 = figures.cluster_figure(_clustered(base, 4, RING))
    assert {c.get_hatch() for ax in fig4.axes for c in ax.collections if c.get_hatch()} == {"xxx", "..."}
    ring8 = [ClusterReceipt((q + 1) % 8, "R", 0, 8192, q, 11, "dsmem") for q in range(8)]
    assert picture_png(_clustered(base, 8, ring8), "cluster").startswith(PNG)


def test_cluster_figure_refuses(base):
    with pytest.raises(ValueError, match="not a cluster kernel"):
        figures.cluster_figure(base)
    with pytest.raises(ValueError, match="wrote no shared memory in any CTA"):  # simulated, nothing received
        figures.cluster_figure(_clustered(base, 2, []))
    unrun = _clustered(base, 2, [])
    unrun = dataclasses.replace(unrun, launch=dataclasses.replace(unrun.launch, hb=None))
    with pytest.raises(ValueError, match=r"no cluster receipts to draw \(run it with --launch sim\)"):
        figures.cluster_figure(unrun)


# QA F6: a cluster kernel simulated without shared memory or asynchronous traffic is told what is missing;
# the --launch sim advice is for a kernel that did not run in the simulator
GLOBAL_ONLY = """kernel rows2 threads=64 cluster=2
global X: int32[2, 64] = arange
global Y: int32[2, 64] = zeros
if warpid == 1: warp.copy Y[cta_rank, 32:64] <- X[cta_rank, 32:64]
if warpid == 0: warp.copy Y[cta_rank, 0:32] <- X[cta_rank, 0:32]
cluster_sync
check Y == X
"""


@pytest.mark.parametrize("kind, missing", [("cluster", "this kernel wrote no shared memory in any CTA"),
                                           ("timeline", "this kernel has no asynchronous events")])
def test_pictures_of_a_simulated_kernel_without_the_traffic_say_what_is_missing(kind, missing):
    ran = tilecopy(GLOBAL_ONLY, launch="sim")
    assert ran.launch.passed and ran.launch.hb.clean
    with pytest.raises(ValueError, match=missing) as exc:
        ran.heatmap(kind=kind)
    assert "--launch sim" not in str(exc.value)
    with pytest.raises(ValueError, match="--launch sim"):
        tilecopy(GLOBAL_ONLY, launch="off").heatmap(kind=kind)


def _ev(kind, x, threads, cta, line=None, **info):
    return CtaEvent(kind, x, Span.point(line, 1) if line else None, np.asarray(threads, np.int32), info, cta=cta)


def _multicast_timeline():
    """Two CTAs of 128 threads (cluster-linear ids), each issuing one multicast box landing in both."""
    t1 = range(128, 256)
    return [
        _ev("mbarrier.init", 0, [0], 0, 6, barrier="full"), _ev("mbarrier.init", 1, [128], 1, 6, barrier="full"),
        _ev("cluster_sync", 2, range(256), 0),
        _ev("arrive", 3, [0], 0, 7, barrier="full", phase=0), _ev("arrive", 4, [128], 1, 7, barrier="full", phase=0),
        _ev("tma.issue", 5, [0], 0, 9, barrier="full", phase=0, direction="g2s"),
        _ev("tma.issue", 6, [128], 1, 9, barrier="full", phase=0, direction="g2s"),
        _ev("tma.complete", 7, [0], 0, 9, barrier="full", phase=0),      # CTA 0's box in CTA 0
        _ev("tma.complete", 8, [0], 1, 9, barrier="full", phase=0),      # ... and in CTA 1
        _ev("tma.complete", 9, [128], 0, 9, barrier="full", phase=0),    # CTA 1's box in CTA 0
        _ev("tma.complete", 10, [128], 1, 9, barrier="full", phase=0),
        _ev("phase", 11, [], 0, None, barrier="full", phase=0), _ev("phase", 12, [], 1, None, barrier="full", phase=0),
        _ev("wait", 13, range(128), 0, 10, barrier="full", phase=0), _ev("wait", 14, t1, 1, 10, barrier="full", phase=0),
        _ev("cluster_sync", 15, range(256), 0, 12),
    ]


class _HB:
    def __init__(self, timeline):
        self.timeline, self.timeline_dropped, self.hang = timeline, 0, None


def test_timeline_per_cta():
    tl = P.async_timeline(_HB(_multicast_timeline()), 128, cluster=2)
    assert (tl["warps"], tl["ctas"], tl["barriers"], tl["cluster_syncs"]) == (4, 2, ["full"], [2, 15])
    c0, c1 = tl["copies"]
    assert (c0["cta"], c0["warp"], c0["issue"], c1["cta"], c1["warp"], c1["issue"]) == (0, 0, 5, 1, 0, 6)
    # each issue lands in both CTAs; each landing is observed by the wait of the CTA it landed in
    assert [(u["cta"], u["x"], u["wait"]) for u in c0["landings"]] == [(0, 7, 13), (1, 8, 14)]
    assert [(u["cta"], u["x"], u["wait"]) for u in c1["landings"]] == [(0, 9, 13), (1, 10, 14)]
    assert (c0["complete"], c0["wait"], c1["complete"], c1["wait"]) == (7, 13, 9, 13)
    assert [(p["cta"], p["x"]) for p in tl["phases"]] == [(0, 11), (1, 12)]
    waits = [e for e in tl["events"] if e["kind"] == "wait"]
    assert [e["at"] for e in waits] == [[(0, w) for w in range(4)], [(1, w) for w in range(4)]]
    sync = next(e for e in tl["events"] if e["kind"] == "cluster_sync")
    assert sync["at"] == [(r, w) for r in (0, 1) for w in range(4)]


def test_timeline_dsmem_lands_in_the_peer():
    ev = [_ev("dsmem", 0, [0], 0, 11, barrier="got", bytes=8192),
          _ev("dsmem", 1, [128], 1, 11, barrier="got", bytes=8192),
          _ev("dsmem.complete", 2, [0], 1, 11, barrier="got", phase=0),   # CTA 0's copy lands in CTA 1
          _ev("dsmem.complete", 3, [128], 0, 11, barrier="got", phase=0),
          _ev("wait", 4, range(128), 0, 12, barrier="got", phase=0),
          _ev("wait", 5, range(128, 256), 1, 12, barrier="got", phase=0)]
    tl = P.async_timeline(_HB(ev), 128, cluster=2)
    a, b = tl["copies"]
    assert (a["kind"], a["cta"], [(u["cta"], u["x"], u["wait"]) for u in a["landings"]]) == ("dsmem", 0, [(1, 2, 5)])
    assert (b["cta"], [(u["cta"], u["x"], u["wait"]) for u in b["landings"]]) == (1, [(0, 3, 4)])


def test_timeline_reads_cta_local_ids():
    """A simulator that numbers threads per CTA and names the CTA in the event: the same rows."""
    ev = [_ev("arrive", 0, [0], 1, 7, barrier="full", phase=0), _ev("wait", 1, range(32, 64), 1, 10, barrier="full",
                                                                     phase=0)]
    tl = P.async_timeline(_HB(ev), 128, cluster=2)
    assert [e["at"] for e in tl["events"]] == [[(1, 0)], [(1, 1)]]


def test_timeline_figure_rows_per_cta(base):
    r = _clustered(base, 2, MULTICAST, timeline=_multicast_timeline())
    fig = figures.timeline_figure(r)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == [f"CTA {c} {w}" for c in (0, 1) for w in
                      ("warp 0", "warp 1", "warp 2", "warp 3", "mbarrier full")]
    # the cluster barriers: dashed lines across all CTAs at x = 2 and 15
    dashed = sorted(line.get_xdata()[0] for line in ax.get_lines() if line.get_linestyle() == "--")
    assert dashed == [2, 15]
    # the landings in the other CTA: squares on its mbarrier row (row 9 for CTA 1, 4 for CTA 0)
    squares = [c for c in ax.collections if getattr(c, "get_offsets", None) is not None
               and len(c.get_offsets()) == 2 and c.get_paths() and len(c.get_paths()[0].vertices) == 5]
    assert any(sorted(map(tuple, np.asarray(c.get_offsets()).tolist())) == [(8.0, 9.0), (9.0, 4.0)]
               for c in squares)
    assert picture_png(r, "timeline").startswith(PNG)


def test_timeline_without_a_cluster_is_unchanged(base):
    tl = P.async_timeline(base.launch.hb, base.kernel.threads)
    assert tl["ctas"] == 1 and tl["cluster_syncs"] == []
    assert all(e["at"] == [(0, w) for w in e["warps"]] and e["cta"] == 0 for e in tl["events"])
    labels = [t.get_text() for t in figures.timeline_figure(base).axes[0].get_yticklabels()]
    assert labels == ["warp 0", "warp 1", "warp 2", "warp 3", "mbarrier full"]


def test_reports_show_it_only_for_a_cluster(base):
    assert "cluster" not in P.async_pictures(base.kernel, base.launch)
    html = render_html(base)
    assert 'data-kind="timeline"' in html and 'data-kind="cluster"' not in html
    assert "CTA 0" not in render_text(base)
    r = _clustered(base, 2, MULTICAST)
    assert P.async_pictures(r.kernel, r.launch) == ["tma", "timeline", "cluster"]
    html = render_html(r)
    section = html[html.index("Asynchronous copies"):html.index(">Launch<")]
    assert 'data-kind="cluster"' in section and "cluster shared memory: one panel per CTA" in section
    text = render_text(r)
    assert "CTA 1: S bytes 0–8191 from CTA 0 (multicast, L9), 8192–16383 from CTA 1 (multicast, L9)" in text
    assert "result.heatmap(kind='cluster')" in text
    # a cluster kernel that was not simulated has no receipts: no picture
    off = dataclasses.replace(r, launch=None)
    assert "cluster" not in P.async_pictures(off.kernel, off.launch)
    assert r.heatmap(kind="cluster")._repr_png_().startswith(PNG)


def test_a_dsmem_only_cluster_kernel_has_the_async_section(base):
    """A kernel whose only asynchronous copy is a dsmem BulkCopy still gets the pictures."""
    from tilemagic.ir import nodes as ir

    S = next(b for b in base.kernel.shared if b.name == "S")
    R = next(b for b in base.kernel.shared if b.name == "R")
    full = next(b for b in base.kernel.shared if b.is_mbarrier)
    bulk = ir.BulkCopy(S, 0, R, 0, 8192, ir.Bin("^", ir.ThreadVar("cta_rank"), ir.Const(1)), full,
                       span=Span.point(11, 1))
    k = dataclasses.replace(base.kernel, cluster=2, body=ir.Seq((bulk,)))
    assert P.has_async(k)
    r = dataclasses.replace(_clustered(base, 2, RING[4:6]), kernel=k)
    assert "cluster" in P.async_pictures(k, r.launch)


def test_widget_view_offers_the_cluster_picture(base):
    pytest.importorskip("ipywidgets")
    from tilemagic.widgets.view import HeatmapPane

    assert "cluster" not in [v for _, v in HeatmapPane(base).kind.options]
    pane = HeatmapPane(_clustered(base, 2, MULTICAST))
    assert [v for _, v in pane.kind.options][-1] == "cluster"
    pane.kind.value = "cluster"
    assert bytes(pane.image.value).startswith(PNG) and pane.note.value == ""


def test_an_inconsistent_record_is_said_not_raised(base):
    r = _clustered(base, 2, [ClusterReceipt(3, "S", 0, 16, 0, 9, "multicast")])
    assert "cluster receipts: cluster receipt" in render_text(r)
    assert "cluster picture: cluster receipt" in render_html(r)


def test_hatching_follows_the_kind_and_is_bounded(base):
    k = dataclasses.replace(base.kernel, cluster=2)
    # every CTA's multicast interleaved 16 bytes at a time: 1024 runs of writers, one run of one kind to hatch
    fine = [ClusterReceipt(0, "S", 16 * i, 16 * i + 16, i % 2, 9, "multicast") for i in range(1024)]
    pl = P.cluster_placement(k, fine)
    assert len(pl["runs"][0]) == 1024
    assert figures._hatch_rects(pl, 0, {"S": 0, "R": 129}) == {"multicast": [(0, 0, 128, 128)]}
    # multicast and dsmem alternating every 8 bytes in S and R (3,072 runs of a kind): past the cap of 96, no hatches
    mixed = [ClusterReceipt(0, b, 8 * i, 8 * i + 8, 0, 9, ("multicast", "dsmem")[i % 2])
             for b, n in (("S", 2048), ("R", 1024)) for i in range(n)]
    pl = P.cluster_placement(k, mixed)
    assert figures._hatch_rects(pl, 0, {"S": 0, "R": 129}) is None
    fig = figures.cluster_figure(_clustered(base, 2, mixed))
    assert not [c for ax in fig.axes for c in ax.collections if c.get_hatch()]
    assert any("CTA 0: more than 96 pieces of a kind, not hatched" in t.get_text() for t in fig.texts)


def test_tma_boxes_evaluate_rank_guards_per_cta():
    """A TMA issue guarded on cta_rank is issued by that CTA only (the guard evaluated per rank, not taken as
    true): one box, issued by CTA 0, for a one-bit multicast issued by CTA 0 alone; the demo's two halves come
    from CTA 0 and CTA 1."""
    from cells import CLUSTER_CELLS

    from tilemagic.cli import demo_source
    from tilemagic.lang import parse
    from tilemagic.lower.dispatch import TargetSpec
    from tilemagic.lower.program import check, lower
    from tilemagic.widgets.placement import tma_boxes

    src = CLUSTER_CELLS["multicast_one_bit"]
    for text, want in ((src, [(0, 0, (0, 0))]), (demo_source("tma_multicast"), [(0, 0, (0, 0)), (1, 0, (0, 64))])):
        kernel, _, _ = lower(check(parse(text)), TargetSpec("cuda", "sm_90a"))
        (op,) = tma_boxes(kernel)
        assert [(i["cta"], i["thread"], i["start"]) for i in op["issues"]] == want


def _arrow_ends(fig):
    """Per arrow of the cluster picture: (pixels from its landing panel's top frame, panel height, curvature)."""
    from matplotlib.patches import ConnectionPatch

    fig.canvas.draw()
    out = []
    for a in fig.artists:
        if isinstance(a, ConnectionPatch):
            ax = next(ax for ax in fig.axes if ax.transData is a.coords2)
            bb = ax.get_window_extent()
            out.append((bb.y1 - a.coords2.transform(a.xy2)[1], bb.height, a.get_connectionstyle().rad))
    return out


def test_every_cluster_arrow_is_visible():
    # QA F7: the multicast demo's arrows into byte row 0 ran along the panel's top frame; each now ends at the
    # centre of its landing run (CTA 0's half: row 32 of 128), well inside the panel
    from helpers import run_demo

    ends = _arrow_ends(figures.cluster_figure(run_demo("tma_multicast")))
    assert len(ends) == 4
    assert all(0.2 * h < d < 0.8 * h for d, h, _ in ends), ends


def test_an_arrow_landing_in_the_top_rows_is_curved(base):
    # a dsmem copy of one 128-byte row into row 0 of CTA 1's S: its centre is on the top row, so it bends in
    ends = _arrow_ends(figures.cluster_figure(_clustered(base, 2, [ClusterReceipt(1, "S", 0, 128, 0, 11, "dsmem")])))
    ((d, h, rad),) = ends
    assert d < 0.1 * h and rad != 0
