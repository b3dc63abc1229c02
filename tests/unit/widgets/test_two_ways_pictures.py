"""Two pictures of a kernel that stages TMEM both ways (tcgen05.st and tcgen05.cp). The fragment picture: the
"loaded registers filled by" block lists the writers of a loaded fragment's registers, and is absent (no empty
heading) for a fragment that is only stored. The descriptor picture: whole TMEM columns on its axis."""

from __future__ import annotations

from helpers import run

TWO_WAYS = """kernel two_ways_frag threads=128
global A: float32[128, 8] = arange
global B: float32[128, 8] = zeros
shared S: float32[128, 4]
tmem   T: float32[128, 8]
local  a: float32[128, 4] @ S[(128, 4) : (1@tid_in_wg, 1)]
local  r: float32[128, 8] @ S[(128, 8) : (1@tid_in_wg, 1)]
mbarrier done count=1
wg.copy a <- A[:, 0:4]
wg.copy_async T[:, 0:4] <- a
wait st
wg.copy S <- A[:, 4:8]
fence.proxy.async
cta_sync
if tx == 0: thread.copy_async T[:, 4:8] <- S
if tx == 0: tcgen05.commit done
wait done phase 0
tcgen05.fence::after_thread_sync
wg.copy_async r <- T
wait ld
wg.copy B <- r
check B == A
"""


def _texts(fig) -> list[str]:
    return [t.get_text() for t in fig.texts]


def test_a_stored_fragment_has_no_empty_filled_by_heading():
    res = run(TWO_WAYS, launch="sim")
    assert res.launch.passed
    texts = _texts(res.heatmap(kind="fragment", buffer="a"))
    assert "loaded registers filled by" not in texts


def test_the_loaded_fragment_lists_both_writers():
    res = run(TWO_WAYS, launch="sim")
    texts = _texts(res.heatmap(kind="fragment", buffer="r"))
    i = texts.index("loaded registers filled by")
    listed = texts[i + 1]
    assert "tcgen05.st L10: 512 registers" in listed and "tcgen05.cp L15: 512 registers" in listed, listed


def test_the_descriptor_picture_numbers_whole_tmem_columns():
    """A narrow cp window (4 columns from column 4) is labelled in whole 32-bit columns, not 3.5, 4.5, ..."""
    res = run(TWO_WAYS, launch="sim")
    fig = res.heatmap(kind="tcgen05_cp")
    tmem_ax = next(a for a in fig.axes if a.get_title(loc="left").startswith("TMEM "))
    fig.canvas.draw()
    ticks = [t for t in tmem_ax.get_xticks() if tmem_ax.get_xlim()[0] <= t <= tmem_ax.get_xlim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks), ticks
