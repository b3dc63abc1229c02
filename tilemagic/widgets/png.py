"""PNG bytes of the pictures, cached on the kernel's content.

Drawing a figure is the bulk of a report's time, and the HTML report and the widget
view of one result ask for the same pictures, so the bytes are memoised.  The key is
the kernel's content (:func:`tilemagic.ir.nodes.content_key`) and the picture's
arguments, never the kernel object: a kernel edited after lowering (tests and users may
change ``result.kernel``) gets a new key and is drawn again.  The last
:data:`PNG_CACHE_SIZE` pictures are kept; ``tilemagic.clear_caches()`` empties them.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

from ..caches import register_cache
from ..ir import nodes as ir
from . import figures

__all__ = ["PNG_CACHE_SIZE", "fragment_png", "heatmap_png", "picture_png"]

#: How many PNGs the cache keeps (least recently used dropped first).
PNG_CACHE_SIZE = 64
_PNG_CACHE: OrderedDict[tuple, bytes] = OrderedDict()
register_cache("widgets.png", _PNG_CACHE.clear, f"the last {PNG_CACHE_SIZE} heatmap PNGs, by kernel content")
#: matplotlib (even Agg through the object API) shares state between figures -- font caches, the text layout
#: cache -- that is not thread-safe: pictures drawn in several threads at once came out different.  One lock.
_DRAW_LOCK = threading.RLock()


def _draw_png(draw: Callable[[], object]) -> bytes:
    with _DRAW_LOCK:
        return figures.figure_png(draw())


def _cached_png(kernel: ir.Kernel, key: tuple, draw: Callable[[], object]) -> bytes:
    try:
        full = (ir.content_key(kernel),) + key
    except Exception:  # noqa: BLE001 -- something unpicklable in a hand-built kernel: no caching
        return _draw_png(draw)
    png = _PNG_CACHE.get(full)
    if png is None:
        png = _PNG_CACHE[full] = _draw_png(draw)
        while len(_PNG_CACHE) > PNG_CACHE_SIZE:
            _PNG_CACHE.popitem(last=False)
    else:
        _PNG_CACHE.move_to_end(full)
    return png


def heatmap_png(kernel: ir.Kernel, color_by: str = "warp", instr: int | str | None = None) -> bytes:
    """:func:`~tilemagic.widgets.figures.heatmap_figure` rendered to PNG bytes (cached on content).

    Parameters
    ----------
    kernel : tilemagic.ir.nodes.Kernel
    color_by : {"warp", "thread", "reg", "instr"}, optional
    instr : int or "each", optional

    Returns
    -------
    bytes
        A PNG (starts with ``b"\\x89PNG\\r\\n\\x1a\\n"``) of 900 × 480 pixels; the same
        kernel content gives the same bytes with the same matplotlib and fonts.

    Raises
    ------
    ValueError
        As :func:`~tilemagic.widgets.figures.heatmap_figure`.
    """
    return _cached_png(kernel, ("tmem", color_by, instr),
                       lambda: figures.heatmap_figure(kernel, color_by=color_by, instr=instr))


def fragment_png(kernel: ir.Kernel, local: str | ir.Buffer | None = None, instr: int | None = None) -> bytes:
    """:func:`~tilemagic.widgets.figures.fragment_figure` rendered to PNG bytes (cached like :func:`heatmap_png`)."""
    name = local if isinstance(local, str) or local is None else local.name
    return _cached_png(kernel, ("fragment", name, instr), lambda: figures.fragment_figure(kernel, local, instr))


def picture_png(result, kind: str, color_by: str | None = None, instr: int | str | None = None,
                check: int | str | None = None) -> bytes:
    """PNG bytes of one picture of ``result`` (``kind`` in tmem / instr / fragment / data / tma / swizzle /
    timeline / cluster).

    ``tmem``, ``fragment``, ``tma`` and ``swizzle`` are pictures of the kernel alone, cached on its content
    (:func:`heatmap_png`); ``instr`` is the occupancy with one panel per instruction; ``data`` (of ``check``,
    as in :func:`~tilemagic.widgets.placement.check_data`), ``timeline`` (the simulator's events) and
    ``cluster`` (the simulator's cluster receipts) depend on the launch and are drawn each time.

    Raises
    ------
    ValueError
        The picture does not apply (no launch for ``data``, no tcgen05 for ``fragment``)
        or an unknown ``kind``.
    """
    color_by = color_by or result.options.color_by
    if kind in ("tmem", "instr", "fragment"):  # pictures of the kernel alone: cached on its content
        instr = "each" if kind == "instr" else instr if kind == "tmem" or isinstance(instr, int) else None
        return _cached_png(result.kernel, (kind, color_by, instr),
                           lambda: figures.picture_figure(result, kind, color_by=color_by, instr=instr))
    if kind in ("tma", "swizzle"):  # (the kernel's facts too: its TMA ops, its swizzled destinations)
        return _cached_png(result.kernel, (kind,), lambda: figures.picture_figure(result, kind))
    return _draw_png(lambda: figures.picture_figure(result, kind, color_by=color_by, instr=instr, check=check))
