"""The tcgen05.cp pictures and reports (issue 14 part D): each descriptor decoded field by field against
hand-computed values, the chunk map against the independent ISA decoder (``tests/reference/tcgen05_cp_ref.py``),
replicas, the rejected layout's red chunk, the TMEM writers (tcgen05.cp beside tcgen05.st), the timeline of a
hand-built event list, and every report and PNG."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from tilemagic import tilecopy
from tilemagic.arch import smem_desc
from tilemagic.arch.tcgen05 import CP_SHAPES
from tilemagic.ir import nodes as ir
from tilemagic.lower.dispatch import Candidate, DeclineDetail, DispatchRecord
from tilemagic.sim.hb import SyncEvent
from tilemagic.widgets import figures as F
from tilemagic.widgets import placement as P
from tilemagic.widgets.format import cp_descriptor_rows, cp_heading
from tilemagic.widgets.html import cp_descriptors_html, render_html
from tilemagic.widgets.text import render_text

from cells import cp_cell
from helpers import CP_SPLICE_CELL, at, spliced_cp_kernel
from reference import tcgen05_cp_ref as ref

PNG = b"\x89PNG\r\n\x1a\n"

# a shared buffer before S, so S does not start at 0: the descriptor's start address is the window's
PADDED = CP_SPLICE_CELL.replace("shared S:", "shared P: uint8[48]\nshared S:")
# a cell that stages through tcgen05.st (L10) before the spliced tcgen05.cp (L14) overwrites part of it
STAGES = CP_SPLICE_CELL.replace("wg.copy S <- A", "wg.copy r <- A\nwg.copy_async T <- r\nwait st\nwg.copy S <- A").format(
    dtype="bfloat16", rows=128, cols=64, tcols=64, slayout=" @ swizzle(3, 3, 3)")


def _cp(key, smem_offset, lbo, sbo, layout, row=0, col=0):
    return lambda b, addr: [ir.TcgenCp(key, b["S"], smem_offset, lbo, sbo, layout, addr, row, col, tmem=b["T"])]


def _padded(dtype, rows, cols, tcols, make):
    return spliced_cp_kernel(PADDED.format(dtype=dtype, rows=rows, cols=cols, tcols=tcols, slayout=""), make,
                             line=12)[0]


def _result(kernel, dispatch=()):
    """A result of the spliced kernel (the other fields of a real, unlaunched cell of the same description)."""
    base = tilecopy(CP_SPLICE_CELL.format(dtype="float32", rows=32, cols=4, tcols=4, slayout=""), launch="off")
    return replace(base, kernel=kernel, dispatch=list(dispatch) or base.dispatch)


# ----------------------------------------------------------------------------- 1. the descriptor, decoded
# (key, smem_offset, lbo, sbo, layout code, hand-computed: start field, LBO field, SBO field, layout name)
DESCRIPTORS = [
    # no swizzle: LBO = the stride between the two 16-byte chunks of a 256-bit row (here 2048 B)
    ("128x256b", 0, 2048, 128, 0, "none"),
    # 64B swizzle: the second 32-byte half of a 64-byte row, SBO 512 B (8 rows x 64 B)
    ("128x256b", 32, 16, 512, 4, "64B"),
    # 128B swizzle: SBO 1024 B (8 rows x 128 B), the third 32-byte step
    ("128x256b", 64, 16, 1024, 2, "128B"),
]


@pytest.mark.parametrize("key,off,lbo,sbo,layout,name", DESCRIPTORS)
def test_descriptor_fields_by_hand(key, off, lbo, sbo, layout, name):
    k = _padded("bfloat16", 128, 64, 64, _cp(key, off, lbo, sbo, layout))
    (op,) = P.cp_ops(k)
    (cp,) = op["cps"]
    # S follows the 48-byte P, aligned to the layout's pattern period (16 B none, 512 B 64B, 1024 B 128B)
    base = {0: 48, 4: 512, 2: 1024}[layout]
    assert op["smem_base"] == base == ir.shared_bases(k)["S"]
    start = base + off
    want = (start >> 4) | ((lbo >> 4) << 16) | ((sbo >> 4) << 32) | (1 << 46) | (layout << 61)
    assert cp["desc"] == want
    f = ref.decode(cp["desc"])  # the independent decoder agrees with the hand value
    assert (f["start"], f["lbo"], f["sbo"], f["layout"], f["fixed"], f["base_offset"], f["lbo_mode"]) == \
        (start, lbo, sbo, layout, 1, 0, 0)
    rows = dict((r[0], r[2]) for r in cp_descriptor_rows(cp, "S"))
    assert rows["descriptor"].startswith(f"0x{want:016x}") and "this run's" in rows["descriptor"]
    assert rows["start address"] == f"{start} B = S + {off} B ({start >> 4} × 16 B)"
    assert rows["SBO"].startswith(f"{sbo} B ({sbo >> 4} × 16 B)")
    assert rows["LBO"].startswith(f"{lbo} B ({lbo >> 4} × 16 B)")
    assert ("ignored by the hardware (assumed 1)" in rows["LBO"]) == (layout != 0)
    assert rows["layout type"].startswith(f"{name} ({layout})")
    assert (rows["version"].split()[0], rows["base offset"], rows["LBO mode"]) == ("1", "0", "0 (relative)")
    assert cp_heading(cp, "S") == f"L12 #0 tcgen05.cp.cta_group::1.{key}: S + {off} B -> TMEM lane 0, column 0"


def test_descriptor_is_decoded_not_copied_from_the_node():
    """The table shows what the hardware reads: a start past the 14-bit field wraps as the bits do."""
    k = _padded("bfloat16", 128, 64, 64, _cp("128x256b", 0, 16, 1024, 2))
    (op,) = P.cp_ops(k)
    cp = dict(op["cps"][0])
    cp["desc"] = smem_desc.encode(0, 16, 1024, 2) | (0x3FFF + 1)  # bit 14: outside the start field
    cp["fields"] = smem_desc.decode(cp["desc"])
    cp["start_rel"] = cp["fields"].start - op["smem_base"]
    rows = dict((r[0], r[2]) for r in cp_descriptor_rows(cp, "S"))
    assert rows["start address"].startswith("0 B = S + -1024 B")


# ----------------------------------------------------------------------------- 2. the descriptor, drawn
def _ref_image(k, op):
    """The independent decoder's TMEM image of each cp, from a window whose chunk i holds the word i."""
    window = np.full(ir.shared_bases(k)["S"] + op["smem_bytes"] + 4096, 0xFFFFFFFF, np.uint32)  # (outside S)
    base = op["smem_base"]
    n = op["smem_bytes"] // 16
    window.reshape(-1, 4)[base // 16: base // 16 + n] = np.arange(n, dtype=np.uint32)[:, None]
    img = np.full((128, 512), -1, np.int64)
    for cp in op["cps"]:
        shape, _, mc = cp["key"].partition(".")
        one = ref.tmem_image(window.tobytes(), cp["desc"], shape, mc)
        mask = np.vectorize(lambda v: v is not None)(one)
        lanes, cols = np.nonzero(mask)
        img[lanes + cp["lane"], cols + cp["col"]] = one[lanes, cols].astype(np.int64)
    return img


CASES = [  # (key, dtype, rows, cols, layout code, SBO, cps at (smem_offset, TMEM col))
    ("128x256b", "bfloat16", 128, 64, 2, 1024, [(32 * i, 8 * i) for i in range(4)]),
    ("128x256b", "float32", 128, 8, 0, 128, [(0, 0)]),
    ("4x256b", "float32", 4, 8, 0, 0, [(0, 0)]),
    ("128x128b", "float32", 128, 4, 0, 128, [(0, 0)]),
    ("64x128b.warpx2::02_13", "float32", 64, 4, 0, 128, [(0, 0)]),
    ("64x128b.warpx2::01_23", "bfloat16", 64, 8, 0, 128, [(0, 4)]),
    ("32x128b.warpx4", "float32", 32, 4, 0, 128, [(0, 0)]),
    ("32x128b.warpx4", "bfloat16", 32, 64, 2, 1024, [(16 * i, 4 * i) for i in range(8)]),
]


def _case_kernel(key, dtype, rows, cols, layout, sbo, cps):
    # LBO: the stride between a 256-bit row's two chunks when not swizzled (16 B units: past the 8-row core
    # matrices of the tile), 16 when swizzled (ignored) or a 128-bit shape (one chunk)
    lbo = 16 if layout or CP_SHAPES[key].chunks == 1 else 64 if rows == 4 else 2048

    def make(b, addr):
        return [ir.TcgenCp(key, b["S"], off, lbo, sbo, layout, addr, 0, col, tmem=b["T"]) for off, col in cps]

    return _padded(dtype, rows, cols, 64, make)


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[1]}-sw{c[4]}" for c in CASES])
def test_chunk_map_against_the_independent_decoder(case):
    _check_chunk_map(_case_kernel(*case), case[0])


#: plain cells (the language's copy_async T <- S, planned by the smem->tmem variant): (key, swizzle, dtype)
PLAIN = [("128x256b", 3, "bfloat16"), ("4x256b", 1, "float32"), ("64x128b.warpx2::01_23", 2, "bfloat16"),
         ("32x128b.warpx4", 0, "float32")]


@pytest.mark.parametrize("key,sw,dtype", PLAIN)
def test_chunk_map_of_plain_cells(key, sw, dtype):
    _check_chunk_map(tilecopy("%%tilecopy\n" + cp_cell(key, sw, dtype), launch="off").kernel, key)


def _check_chunk_map(k, key):
    (op,) = P.cp_ops(k)
    m = P.cp_chunk_map(op)
    img = _ref_image(k, op)
    lo = m["col_lo"]
    got = np.full((128, 512), -1, np.int64)
    got[:, lo: lo + m["ncols"]] = m["lane_col"]
    in_buf = (img >= 0) & (img < m["nchunks"])  # (a chunk the decoder reads outside S holds 0xFFFFFFFF)
    assert np.array_equal(np.where(in_buf, img, -1), got)  # the same chunk in every cell, none elsewhere
    assert m["outside"] == int(np.count_nonzero(img >= m["nchunks"])) // 4 // max(
        1, len(CP_SHAPES[key].replicas))
    # each instruction's chunks: as many as it reads (rows x chunks) when they stay in the buffer
    c = CP_SHAPES[key]
    for cp in op["cps"]:
        assert int(np.count_nonzero(m["instr"] == cp["index"])) == c.rows * c.chunks
    # replicas: the lanes every row is written to again, counted independently from the shape table
    cells = c.rows * c.chunks * 4 * len(op["cps"])
    assert int(np.count_nonzero(m["replica"] > 0)) == cells * (len(c.replicas) - 1)
    assert int(np.count_nonzero(m["replica"] == 0)) == cells


def test_swizzle_moves_chunks_within_their_line():
    k = _case_kernel(*CASES[0])
    m = P.cp_chunk_map(P.cp_ops(k)[0])
    # bf16 128 x 64 with the 128B swizzle: row r is line r; cp i reads the chunks (2i, 2i+1) of the row before
    # the XOR; line r holds cp i's chunks at ((2i) ^ (r % 8), (2i + 1) ^ (r % 8))
    for r in (0, 1, 5, 13):
        line = m["instr"][8 * r: 8 * r + 8]
        want = np.empty(8, np.int64)
        for i in range(4):
            for j in range(2):
                want[(2 * i + j) ^ (r % 8)] = i
        assert line.tolist() == want.tolist()
        assert m["row"][8 * r: 8 * r + 8].tolist() == [r] * 8


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[1]}-sw{c[4]}" for c in CASES])
def test_descriptor_figure_renders_for_every_shape(case):
    fig = F.cp_figure(_case_kernel(*case))
    assert F.figure_png(fig).startswith(PNG)
    key = case[0]
    texts = " ".join(t.get_text() for t in fig.texts) + " ".join(a.get_title(loc="left") for a in fig.axes)
    assert f"tcgen05.cp.cta_group::1.{key}" in texts
    if len(CP_SHAPES[key].replicas) > 1:
        labels = [t.get_text() for a in fig.axes for t in a.texts if t.get_text().startswith("replica +")]
        assert sorted(set(labels)) == sorted(f"replica +{o}" for o in CP_SHAPES[key].replicas[1:])
        assert any(p.get_hatch() for p in fig.axes[1].patches)


# ----------------------------------------------------------------------------- a rejected layout
def _declined(byte, expected, row=9, chunk=1):
    det = DeclineDetail("sbo", "S", byte=byte, row=row, chunk=chunk, expected=expected, shape="128x256b")
    cand = Candidate("smem->tmem", 10, True, ("validate_smem_tmem_copy: ok",),
                     declined="SBO 1040 B is not a multiple of 16 B ... (fix: ...)", detail=det)
    return DispatchRecord("copy_async", "thread.copy_async T <- S", 11, "thread", (cand,), None)


def test_decline_map_and_red_chunk():
    rec = _declined(byte=1040 + 16, expected=1024 + 16)
    (d,) = P.cp_declines([rec])
    assert (d["line"], d["detail"].rule) == (11, "sbo")
    dm = P.cp_decline_map(d["detail"], 16384)
    # independent count: byte 1056 is chunk 66 = line 8, chunk 2 of 8-chunk (128-byte) lines; 1040 -> (8, 1)
    assert dm["bad"] == (8, 2) and dm["expected"] == (8, 1) and dm["nchunks"] == 1024
    assert P.cp_decline_map(DeclineDetail("x", "S", byte=None), 256)["bad"] is None
    assert P.cp_decline_map(DeclineDetail("x", "S", byte=4096), 256)["bad"] is None  # outside the buffer
    fig = F.cp_decline_figure(d, 16384)
    from matplotlib.colors import to_hex

    red = [p for p in fig.axes[0].patches if to_hex(p.get_edgecolor()) == "#d62728"]
    spots = {(round(p.get_x() + 0.5), round(p.get_y() + 0.5)): p.get_linestyle() for p in red}
    assert spots == {(2, 8): "-", (1, 8): "--"}
    assert "smem->tmem declined: sbo" in " ".join(t.get_text() for t in fig.texts)
    assert F.figure_png(fig).startswith(PNG)


def test_decline_in_the_reports():
    k = spliced_cp_kernel(CP_SPLICE_CELL.format(dtype="float32", rows=32, cols=4, tcols=4, slayout=""),
                          lambda b, a: [])[0]  # (the commit only: no cp)
    r = _result(k, [_declined(byte=1056, expected=1040)])
    text = render_text(r)
    assert "== tcgen05.cp descriptors" in text and "L11 smem->tmem declined (128x256b, rule sbo): S at byte 1056" \
        in text
    assert 'class="tm-cp-decline"' in cp_descriptors_html(r)
    fig = F.picture_figure(r, "tcgen05_cp")  # the rejected layout, without a cp to draw
    assert "declined" in " ".join(t.get_text() for t in fig.texts)


# ----------------------------------------------------------------------------- 3. TMEM writers
def test_occupancy_and_fragment_show_who_filled_each_cell():
    k = spliced_cp_kernel(STAGES, _cp("128x256b", 0, 16, 1024, 2), line=14)[0]
    occ = P.tmem_occupancy(k)
    assert [(i["op"], i["writer"], i["line"]) for i in occ["instructions"]] == [
        ("st", "tcgen05.st L10", 10), ("cp", "tcgen05.cp L14", 14), ("ld", None, 16)]
    # the cp (one 128x256b at column 0) fills lanes 0-127, columns 0-7 last; the st the rest of T's 32 columns
    assert (occ["writer"][:, :8] == 1).all() and (occ["writer"][:, 8:32] == 0).all()
    cp = occ["instructions"][1]
    assert (cp["cells"]["thread"] == 0).all() and (cp["cells"]["reg"] == -1).all()
    assert len(cp["cells"]["lane"]) == 128 * 8
    fm = P.fragment_map(k)
    assert fm["instructions"] == [0, 2] and fm["writers"] == {0: "tcgen05.st L10", 1: "tcgen05.cp L14"}
    # the ld's registers whose cells the cp filled: 128 lanes x 8 columns, one register each
    filled = fm["filled_by"]
    ok = fm["lane"] >= 0
    assert int((filled[ok] == 1).sum()) == 128 * 8 and int((filled[ok] == 0).sum()) == 128 * 24
    cols = fm["col"][ok]
    assert ((filled[ok] == 1) == (cols < 8)).all()
    for fig in (F.heatmap_figure(k), F.heatmap_figure(k, instr="each"), F.fragment_figure(k)):
        assert F.figure_png(fig).startswith(PNG)
        assert "tcgen05.cp L14" in " ".join(t.get_text() for t in fig.texts)
    hatched = [p for p in F.heatmap_figure(k).axes[0].patches if p.get_hatch()]
    assert [(p.get_x(), p.get_y(), p.get_width(), p.get_height()) for p in hatched] == [(-0.5, -0.5, 8, 128)]


# ----------------------------------------------------------------------------- 4. the timeline
def _ev(kind, i, line, threads, **info):
    return SyncEvent(kind, i, at(line), np.asarray(threads, np.int32), info)


def test_timeline_of_hand_built_tcgen05_cp_events():
    everyone = np.arange(128)
    events = [
        _ev("mbarrier.init", 0, 8, [0], barrier="done"),
        _ev("tcgen05.cp", 1, 12, [0]),
        _ev("tcgen05.cp", 2, 12, [0]),
        _ev("tcgen05.commit", 3, 13, [0], barrier="done"),
        _ev("tcgen05.cp.complete", 4, 12, [0], barrier="done", phase=0),
        _ev("tcgen05.cp.complete", 5, 12, [0], barrier="done", phase=0),
        _ev("arrive", 6, 13, [0], barrier="done"),
        _ev("phase", 7, 13, [0], barrier="done", phase=0),
        _ev("wait", 8, 14, everyone, barrier="done", phase=0),
    ]
    hb = SimpleNamespace(timeline=events, timeline_dropped=0, hang=None)
    tl = P.async_timeline(hb, 128)
    assert [(c["kind"], c["warp"], c["issue"], c["complete"], c["barrier"], c["phase"], c["wait"])
            for c in tl["copies"]] == [("tcgen05.cp", 0, 1, 4, "done", 0, 8), ("tcgen05.cp", 0, 2, 5, "done", 0, 8)]
    assert tl["barriers"] == ["done"] and [p["phase"] for p in tl["phases"]] == [0]
    res = SimpleNamespace(name="cp", kernel=SimpleNamespace(threads=128, cluster=1), launch=SimpleNamespace(hb=hb))
    fig = F.timeline_figure(res)
    assert F.figure_png(fig).startswith(PNG)
    assert "tcgen05.cp" in [t.get_text() for t in fig.texts]
    assert any("✚ tcgen05.commit" in t.get_text() for t in fig.texts)


# ----------------------------------------------------------------------------- 5. reports
def test_reports_and_widget_show_the_descriptors():
    r = tilecopy("%%tilecopy\n" + cp_cell("128x256b", 3, "bfloat16"), launch="off")  # TVM's 4 x 128x256b plan
    k = r.kernel
    text = render_text(r)
    assert "== tcgen05.cp descriptors" in text
    for cp in P.cp_ops(k)[0]["cps"]:
        assert f"0x{cp['desc']:016x}" in text
    assert "LBO is ignored by the hardware (assumed 1)" in text and "result.heatmap(kind='tcgen05_cp')" in text
    html = render_html(r)
    assert html.count('class="tm-cp-desc"') == 4 and "tcgen05.cp descriptors" in html
    assert 'data-kind="tcgen05_cp"' in html  # the picture, with the asynchronous copies
    # light and dark: the tables' colours are the theme's variables, as the other sections'
    from tilemagic.widgets.html import _TD, _TH

    assert "var(--jp-" in _TH and "var(--jp-" in _TD and f'style="{_TH}"' in cp_descriptors_html(r)
    assert "tcgen05_cp" in P.async_pictures(k)
    pytest.importorskip("ipywidgets")
    from tilemagic.widgets.view import HeatmapPane, WidgetView

    pane = HeatmapPane(r)
    assert "tcgen05_cp" in [v for _, v in pane.kind.options]
    pane.kind.value = "tcgen05_cp"
    assert bytes(pane.image.value).startswith(PNG) and pane.note.value == ""
    assert 'class="tm-cp-desc"' in WidgetView(r).panes["Description"].value


def test_simulator_record_beside_the_drawn_cells():
    """Part S's record (``launch.hb.cp_writes``: per execution line, key, thread, lanes, cols, landed) against
    the cells the picture draws from the IR: a simulated plain cell agrees; a hand-built record that wrote one
    replica only does not."""
    real = tilecopy("%%tilecopy\n" + cp_cell("32x128b.warpx4", 0, "float32"), launch="sim")
    sim = P.cp_simulated(real.launch, real.kernel)  # 32x128b.warpx4 at L13: lanes 0-127 (4 x 32 rows), columns 0-3
    assert sim["agrees"] and sim["by_line"] == {13: {"key": "32x128b.warpx4", "executions": 1, "landed": 1,
                                                     "cells": 512}}
    assert int(sim["written"].sum()) == 512 == int(sim["static"].sum())
    assert any(x.startswith("simulator: L13 32x128b.warpx4: 1 of 1 landed, 512 cells each; the TMEM cells written are "
                            "the ones drawn") for x in real.text().splitlines())
    k = _case_kernel(*CASES[-2])  # the same shape, spliced at L12
    rec = SimpleNamespace(line=12, key="32x128b.warpx4", thread=0, lanes=np.arange(128), cols=np.arange(4),
                          landed=True, barrier="done", phase=0)
    # the simulator wrote only the first replica: the report says the cells differ
    short = SimpleNamespace(**{**vars(rec), "lanes": np.arange(32)})
    never = SimpleNamespace(**{**vars(rec), "landed": False})
    sim2 = P.cp_simulated(SimpleNamespace(hb=SimpleNamespace(cp_writes=[short, never])), k)
    assert not sim2["agrees"] and sim2["never_landed"] == 1 and sim2["by_line"][12]["landed"] == 1
    assert P.cp_simulated(SimpleNamespace(hb=SimpleNamespace(cp_writes=[])), k) is None
    assert P.cp_simulated(None, k) is None
    r = replace(_result(k), launch=None)
    from tilemagic.widgets.text import cp_descriptor_lines

    assert not any(x.startswith("simulator:") for x in cp_descriptor_lines(r))
    r.launch = SimpleNamespace(hb=SimpleNamespace(cp_writes=[short]))
    (line,) = [x for x in cp_descriptor_lines(r) if x.startswith("simulator:")]
    assert line == ("simulator: L12 32x128b.warpx4: 1 of 1 landed, 128 cells each; the TMEM cells written differ "
                    "from the IR's (see the tcgen05_cp picture)")
