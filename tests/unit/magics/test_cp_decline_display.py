"""A rejected smem->tmem layout in the notebook (issue 14): the ``DispatchError`` carries its ``DispatchRecord``, and
the magic shows the rejected-layout picture and its one line beside the located error (``--view text``: the line)."""

from __future__ import annotations

import pickle

import pytest
from helpers import copy_async_op, cp_buffers, cp_dispatch, cp_tmem_layout, region
from IPython.utils.capture import capture_output

from tilemagic.errors import DispatchError
from tilemagic.layout import TileLayout
from tilemagic.layout.tile import Iter

PNG_IMG = '<img alt="rejected smem-&gt;tmem layout'


def _cell(dtype: str, shape: str, slayout: str, region_: str = "") -> str:
    return f"""kernel cp_rejected threads=128
global A: {dtype}{shape} = arange
shared S: {dtype}{shape}{slayout}
tmem   T: {dtype}[128, {shape.split(', ')[1]}
mbarrier done count=1
wg.copy S <- A
fence.proxy.async
cta_sync
if tx == 0: thread.copy_async T <- S{region_}
if tx == 0: tcgen05.commit done
wait done phase 0
tcgen05.fence::after_thread_sync
"""


#: float32 rows of 128 B under a 128B swizzle of the wrong element size: not TVM's canonical swizzle(2, 3, 3)
SWIZZLE_CELL = _cell("float32", "[128, 32]", " @ swizzle(1, 3, 3)")
#: 128-byte-swizzled bfloat16 rows whose copy starts 4 rows (512 B) in: not on a 1024-byte swizzle atom
ALIGN_CELL = _cell("bfloat16", "[132, 64]", " @ swizzle(3, 3, 3)", "[4:132, :]")


def _run(ip, line: str, cell: str):
    with capture_output() as cap:
        r = ip.run_cell(f"%%tilecopy {line}\n{cell}")
    assert not r.success and isinstance(r.error_in_exec, DispatchError)
    text = cap.stdout + cap.stderr
    assert "DispatchError: no copy_async variant accepts" in text and "Traceback" not in text
    return r.error_in_exec, [o.data for o in cap.outputs]


def test_dispatch_error_carries_its_record_and_pickles():
    from tilemagic import tilecopy

    with pytest.raises(DispatchError) as ei:
        tilecopy("%%tilecopy\n" + SWIZZLE_CELL, launch="off")
    e = ei.value
    (rec,) = e.records
    (det,) = [c.detail for c in rec.candidates if c.detail is not None]
    assert (det.rule, det.buffer, det.shape) == ("swizzle", "S", "128x256b")
    assert e.buffer_bytes == {"S": 128 * 32 * 4, "T": 128 * 32 * 4}
    assert e.details == rec.table()  # the rendering is the why-table's, as before
    back = pickle.loads(pickle.dumps(e))
    assert back.render() == e.render() and back.records == e.records and back.buffer_bytes == e.buffer_bytes


def test_swizzle_decline_shows_the_picture_in_html(ip):
    err, shown = _run(ip, "--launch off", SWIZZLE_CELL)
    (bundle,) = shown  # one display: the decline, before the error
    line = ("L10 smem->tmem declined (128x256b, rule swizzle): S at byte 0: 128B swizzle needs swizzle(2, 3, 3) over "
            "rows of 128 B of 32-bit elements, S is swizzle(1, 3, 3)")
    assert bundle["text/plain"].startswith(line) and "\n" not in bundle["text/plain"]
    html = bundle["text/html"]
    assert html.count(PNG_IMG) == 1 and 'src="data:image/png;base64,' in html
    assert 'class="tm-cp-decline" data-src-line="10"' in html and "rule swizzle" in html


def test_alignment_decline_without_shape_names_its_own_shape(ip):
    """Without shape= the reason lists every candidate shape; the line is the detail's own (128x256b)."""
    _, (bundle,) = _run(ip, "--launch off", ALIGN_CELL)
    assert bundle["text/plain"].startswith("L10 smem->tmem declined (128x256b, rule alignment): S at byte 512 (the "
                                           "rule wants byte 0): the copy's matrix starts 512 B into S, not a multiple "
                                           "of the 1024-byte swizzle atom")
    assert "4x256b" not in bundle["text/plain"] and PNG_IMG in bundle["text/html"]


def test_view_text_shows_the_line_only(ip):
    _, (bundle,) = _run(ip, "--launch off --view text", SWIZZLE_CELL)
    assert set(bundle) == {"text/plain"} and "rule swizzle" in bundle["text/plain"]


def test_sbo_decline_shows_the_chunk(ip, monkeypatch):
    """SBO 1544 B (8-row groups of float16 rows 772 elements apart): no shared layout of the language has it (they are
    permutations), so the DispatchError comes from run_dispatch on hand-built buffers, raised through the magic."""
    import tilemagic.magics

    S, T = cp_buffers("float16", (128, 8), TileLayout((Iter(16, 772), Iter(8, 8), Iter(8, 1))), (128, 8),
                      cp_tmem_layout("128x128b", 8))
    with pytest.raises(DispatchError) as ei:
        cp_dispatch(copy_async_op(region(T), region(S), shape="128x128b", line=7), S, T)
    err = ei.value

    def raising(source, **kw):
        raise err

    monkeypatch.setattr(tilemagic.magics, "tilecopy", raising)
    _, (bundle,) = _run(ip, "--launch off", "global A: float32[4]\n")
    assert bundle["text/plain"].startswith(
        "L7 smem->tmem declined (128x128b, rule sbo): S at byte 1544 (the rule wants byte 1552): SBO 1544 B is not a "
        "multiple of 16 B")
    assert PNG_IMG in bundle["text/html"]


def test_other_errors_show_no_decline(ip):
    with capture_output() as cap:
        r = ip.run_cell("%%tilecopy --launch off\n" + SWIZZLE_CELL.replace("thread.copy_async T <- S",
                                                                           "thread.copy_async T <- S dispatch=nope"))
    assert isinstance(r.error_in_exec, DispatchError) and r.error_in_exec.records == ()
    assert cap.outputs == []
