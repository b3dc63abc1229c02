"""Figures of where a kernel's data lives: TMEM occupancy, register fragments, round-trip data.

The figures draw the placement model (:mod:`tilemagic.widgets.placement`); three kinds
(:data:`KINDS`):

* ``"tmem"`` -- occupancy: a ``TLane`` × ``TCol`` map of the allocated 128 lanes ×
  ``tmem_cols`` 32-bit columns, each cell coloured by the warp, thread, register or
  instruction whose ``tcgen05.ld`` / ``tcgen05.st`` moves it (:data:`COLOR_BY`); the
  overlay of all instructions, one instruction, or one panel per instruction.  Lines
  mark the 32-lane quadrants (the lanes warp ``w`` reaches are ``32*(w % 4) ..
  +31``, PTX ISA 9.0 §9.7.16.8.1), the 16-lane sub-slabs (``.16x*b`` shapes and data
  path F: ``lane = 32*(r // 16) + 16*sub_slab + r % 16``), the data-path-B halves
  (lanes 64..127 hold columns ``N/2 .. N-1``) and the 32-column allocation units
  (``tcgen05.alloc`` granularity, §9.7.16.7.1); bars above the map name each buffer's
  columns (the TMEM plan's, :func:`~tilemagic.widgets.placement.tmem_columns`) and the
  legend lists buffers and instructions.  Without TMEM the same kind shows each shared
  buffer's tile coloured by the thread that writes it.
* ``"fragment"`` -- a register fragment: thread × 32-bit register -> TMEM lane and
  column, for a ``local`` buffer that tcgen05 instructions move (e.g. ``frag(16x256b)``).
* ``"data"`` -- the round trip: the values a ``check A == B`` compared, with the
  mismatching elements highlighted when it failed.

and, for asynchronous copies (:data:`ASYNC_KINDS`): ``"tma"`` -- each TMA op's boxes over the global
tensor (one colour per issue, the out-of-bounds part hatched); ``"swizzle"`` -- a swizzled TMA or
``cp.async`` destination, 16-byte chunk -> physical chunk coloured by bank group; ``"timeline"`` -- the
simulator's asynchronous events per warp (issue -> completion -> wait, mbarrier phases, commit groups,
the hang point; per CTA and warp in a cluster); ``"cluster"`` -- in a cluster, one panel per CTA: which
CTA's statement wrote which bytes of its shared buffers.

Figures are :class:`matplotlib.figure.Figure` objects on the Agg canvas -- never
``matplotlib.pyplot`` -- at a fixed size (:data:`FIGSIZE`), so the figure's
``text/plain`` (``<TileFigure size 900x480 with 1 Axes>``) is stable under nbval; they
display as PNG in IPython whether or not pyplot was imported (``_repr_png_``), and the
PNG bytes are reproducible (no ``Software`` metadata, :func:`figure_png`).  Categorical
maps are ``imshow`` of integer arrays (one pixel per cell), so they scale to 128 × 512.
"""

from __future__ import annotations

import functools
import io
import textwrap
from collections.abc import Mapping, Sequence

import numpy as np

from ..arch.tcgen05 import TMEM_LANES
from ..caches import register_cache
from ..ir import nodes as ir
from ..options import COLOR_BY_CHOICES, HEATMAP_CHOICES
from .format import (cp_heading, format_value, instr_label, instr_shape, range_text, short_shape,
                     timeline_summary, tma_box_phrase)
from .placement import (
    LINE_CHUNKS,
    RECEIPT_KINDS,
    CHUNK_BYTES,
    check_data,
    cluster_placement,
    cluster_receipts,
    cluster_summary,
    cp_chunk_map,
    cp_decline_map,
    cp_declines,
    cp_ops,
    downsample_check,
    first_mismatches,
    fragment_map,
    instr_arrays,
    shared_writers,
    swizzle_chunks,
    tma_boxes,
    tmem_columns,
    tmem_occupancy,
)

__all__ = [
    "ASYNC_KINDS",
    "COLOR_BY",
    "DPI",
    "FIGSIZE",
    "KINDS",
    "MAX_DATA_CELLS",
    "MAX_PNG_BYTES",
    "MAX_PANELS",
    "cluster_figure",
    "cp_caption",
    "cp_decline_figure",
    "cp_figure",
    "data_figure",
    "downsample_caption",
    "figure_png",
    "fragment_figure",
    "heatmap_figure",
    "picture_figure",
    "swizzle_figure",
    "timeline_figure",
    "tma_figure",
]

#: Figure size in inches (fixed: nbval compares the figure's ``text/plain``).
FIGSIZE: tuple[float, float] = (9.0, 4.8)
#: Resolution of the PNG (pixels per inch); 9 × 4.8 in -> 900 × 480 px.
DPI: int = 100
#: The picture kinds (``result.heatmap(kind=...)``): ``--heatmap``'s, but ``none``.
KINDS: tuple[str, ...] = tuple(k for k in HEATMAP_CHOICES if k != "none")
#: What a TMEM cell can be coloured by.
COLOR_BY: tuple[str, ...] = COLOR_BY_CHOICES
#: Most panels of ``instr="each"`` (later instructions are listed, not drawn).
MAX_PANELS: int = 8
#: Most rows and columns of a check's data one panel of the ``data`` picture draws (about its axes' pixels at
#: :data:`FIGSIZE` and :data:`DPI`); larger data is downsampled by powers of two (the caption says by how much).
MAX_DATA_CELLS: tuple[int, int] = (256, 192)
#: Most bytes of one picture's PNG (:func:`figure_png` halves the resolution of a larger one).
MAX_PNG_BYTES: int = 448 * 1024

_UNTOUCHED = "#e6e6e6"
_MISMATCH = "#d62728"
_B_HALF = "#c2185b"
# Distinct categorical colours (Tableau 10 then its light companions): deterministic.
_PALETTE: tuple[str, ...] = (
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#76b7b2", "#edc948", "#ff9da7",
    "#9c755f", "#17becf", "#1f3b73", "#a0cbe8", "#ffbe7d", "#8cd17d", "#b6992d", "#86bcb6",
    "#d4a6c8", "#79706e", "#d37295", "#bcbd22",
)
_MAX_SWATCHES = 8  # more categories than this get a colour bar instead of swatches
_MAX_LEGEND_LINES = 15  # buffer + instruction lines in the right-hand column
_MAX_CELL_LABELS = 64  # shared tiles up to this many elements get per-cell "T<k>" labels
_SIXTEEN_LANE = ("16x64b", "16x128b", "16x256b", "16x32bx2")


def _threads_phrase(threads: Sequence[int]) -> str:
    if not threads:
        return "not written"
    if len(threads) == 1:
        return f"thread {threads[0]}"
    if threads[-1] - threads[0] + 1 == len(threads):
        return f"threads {threads[0]}-{threads[-1]}"
    return f"{len(threads)} threads"


# ============================================================================ drawing helpers
@functools.cache
def _figure_class():
    """``TileFigure``: a Figure that IPython shows as PNG even before pyplot is imported
    (defined on first use: matplotlib is imported only when a figure is drawn)."""
    from matplotlib.figure import Figure

    class TileFigure(Figure):
        """A :class:`matplotlib.figure.Figure` with ``_repr_png_`` (Agg, reproducible bytes).

        IPython registers its PNG formatter for ``Figure`` only when pyplot is
        imported; without it a plain Figure displays as text.  This subclass
        renders itself either way (and once: it is not managed by pyplot).
        """

        def _repr_png_(self) -> bytes:
            return figure_png(self)

    return TileFigure


register_cache("widgets.figures", _figure_class.cache_clear, "the TileFigure class (defined on first use)")


def _new_figure():
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = _figure_class()(figsize=FIGSIZE, dpi=DPI)
    FigureCanvasAgg(fig)
    return fig


#: Step of the golden-ratio walk over the colormap: category ``i`` sits at ``i * GOLDEN mod 1``, so neighbours
#: (threads ``t`` and ``t + 1``, registers ``r`` and ``r + 1``) are at least 0.38 of the map apart.
_GOLDEN = (5 ** 0.5 - 1) / 2


def _colours(n: int) -> list:
    """``n`` category colours: the fixed palette, or a colormap walked so that neighbouring categories differ.

    Sampling the map in order (``linspace``) made threads 5 and 6 of 128 the same colour; the golden-ratio walk
    keeps every two consecutive categories far apart on the map (a categorical map, not a ramp).
    """
    if n <= len(_PALETTE):
        return list(_PALETTE[:n])
    import matplotlib

    cmap = matplotlib.colormaps["turbo"]
    return [cmap(0.05 + 0.9 * ((i * _GOLDEN) % 1.0)) for i in range(n)]


def _bar_ticks(n: int, most: int = 5) -> np.ndarray:
    """Colour-bar ticks of ``n`` categories ``0 .. n-1``: multiples of a round step, at most ``most`` of them.

    ``linspace`` rounded gave 0, 47, 95, 143 for 192 threads; a step of 1, 2, 4 or 8 times a power of two, or
    three times one (24, 48, 96), gives 0, 48, 96, 144 (warp boundaries where the step allows).
    """
    steps = sorted({m << k for k in range(20) for m in (1, 3)})
    step = next(s for s in steps if -(-n // s) <= most)
    return np.arange(0, n, step)


def _cat_cmap(n: int):
    """ListedColormap + BoundaryNorm for integer data in ``-1 .. n-1`` (-1 light grey)."""
    from matplotlib.colors import BoundaryNorm, ListedColormap

    cmap = ListedColormap([_UNTOUCHED] + _colours(n))
    norm = BoundaryNorm(np.arange(-1.5, n, 1.0), cmap.N)
    return cmap, norm


def _xtick_step(n: int, most: int = 5) -> int:
    """Power-of-two column step giving at most ``most`` tick labels (0, 8, 16, 24 for 32 columns)."""
    step = 1
    while n / step > most:
        step *= 2
    return step


def _instr_summary(instructions: list[dict]) -> str:
    """``tcgen05.st/ld .32x32b.x4`` grouped by (shape, num), ops in first-issue order (``tcgen05.cp .128x256b``)."""
    groups: dict[tuple[str, int], list[str]] = {}
    cps: list[str] = []
    for ins in instructions:
        if ins["op"] == "cp":
            if ins["shape"] not in cps:
                cps.append(ins["shape"])
            continue
        ops = groups.setdefault((ins["shape"], ins["num"]), [])
        if ins["op"] not in ops:
            ops.append(ins["op"])
    return " · ".join([f"tcgen05.{'/'.join(ops)} .{shape}.x{num}" for (shape, num), ops in groups.items()]
                      + [f"tcgen05.cp .{key}" for key in cps])


def _buffer_label(buf) -> str:
    """``T float16[128, 8] D cols 0-3`` with the data-path facts the map shows."""
    a, z = tmem_columns(buf)
    dp = buf.datapath or "?"
    s = f"{buf.name} {short_shape(buf)} {dp}"
    if buf.datapath == "F":
        s += f" sub_slab={int(buf.sub_slab)}: lanes 32q+{16 * int(buf.sub_slab)}..+15"
    elif buf.datapath == "B":
        n = int(np.prod(buf.shape[1:], dtype=np.int64)) if len(buf.shape) > 1 else 1
        s += f": lanes 64-127 hold cols {n // 2}-{n - 1}"
    return s + f", TCol {range_text(a, z - 1)}"


def _swatch_legend(fig, x: float, y: float, entries: Sequence[tuple[object, str]], step: float = 0.04):
    """A legend of colour swatches drawn as figure patches + texts; returns the y below it.

    Hand-made because ``Figure.legend`` (offsetbox layout) costs ~20 ms per draw, a
    third of the whole heatmap.
    """
    from matplotlib.patches import Rectangle

    for i, (colour, label) in enumerate(entries):
        yy = y - i * step
        fig.patches.append(Rectangle((x, yy - 0.011), 0.02, 0.024, transform=fig.transFigure, figure=fig,
                                     facecolor=colour, edgecolor="#999999", linewidth=0.5))
        fig.text(x + 0.028, yy, label, fontsize=7.5, va="center", ha="left")
    return y - len(entries) * step


def _text_block(fig, x: float, y: float, title: str, lines: Sequence[str], width: int = 44,
                budget: int = _MAX_LEGEND_LINES) -> float:
    """A heading and wrapped lines at figure coordinates; returns the y below it."""
    wrapped: list[str] = []
    for line in lines:
        wrapped += textwrap.wrap(line, width, subsequent_indent="  ") or [""]
    if len(wrapped) > budget:
        extra = len(wrapped) - budget + 1
        wrapped = wrapped[: budget - 1] + [f"… (+{extra} more lines)"]
    fig.text(x, y, title, fontsize=7.5, fontweight="bold", va="top", ha="left")
    if wrapped:
        fig.text(x, y - 0.035, "\n".join(wrapped), fontsize=6.8, va="top", ha="left", linespacing=1.35,
                 family="monospace")
    return y - 0.035 - 0.0275 * len(wrapped) - 0.02


def _categories(occ, color_by: str) -> tuple[int, list[str]]:
    nwarps = int(occ["warps"])
    if color_by == "warp":
        return nwarps, [f"warp {w} (T{32 * w}-{32 * w + 31})" for w in range(nwarps)]
    if color_by == "thread":
        return 32 * nwarps, [f"thread {i}" for i in range(32 * nwarps)]
    if color_by == "reg":
        n = max([ins["reg_base"] + ins["regs"] for ins in occ["instructions"]] + [1])
        return n, [f"reg {i}" for i in range(n)]
    labels = [instr_label(i) for i in occ["instructions"]] or ["-"]
    return len(labels), labels


def _uses_sub_slabs(kernel, occ) -> bool:
    return (any(i["shape"] in _SIXTEEN_LANE for i in occ["instructions"])
            or any(b.datapath == "F" for b in kernel.tmem))


def _buffer_groups(kernel) -> list[tuple[int, int, str, int]]:
    """``(start, stop, names, level)``: buffers with the same columns share a bar; overlaps stack."""
    groups: dict[tuple[int, int], list[str]] = {}
    for b in kernel.tmem:
        groups.setdefault(tmem_columns(b), []).append(b.name)
    placed: list[tuple[int, int, str, int]] = []
    for (a, z), names in sorted(groups.items()):
        level = 0
        while any(lv == level and a < pz and pa < z for pa, pz, _, lv in placed):
            level += 1
        placed.append((a, z, " / ".join(names), level))
    return placed


def _tmem_guides(ax, kernel, occ, ncols: int, names: bool):
    """Quadrant, sub-slab, B-half and allocation-unit lines; buffer bars above the map."""
    for y in (32, 64, 96):  # lane quadrants: warp w reaches 32*(w % 4) .. +31 (PTX ISA 9.0 §9.7.16.8.1)
        ax.axhline(y - 0.5, color="black", linewidth=0.9)
    if _uses_sub_slabs(kernel, occ):  # 16-lane sub-slabs (.16x*b shapes, data path F)
        for y in (16, 48, 80, 112):
            ax.axhline(y - 0.5, color="#555555", linewidth=0.6, linestyle=":")
    for x in range(32, ncols, 32):  # 32-column allocation units (tcgen05.alloc granularity)
        ax.axvline(x - 0.5, color="#444444", linewidth=0.6, linestyle="--")
    for b in kernel.tmem:  # data path B: lanes 64..127 hold the right column half
        if b.datapath == "B":
            a, z = tmem_columns(b)
            ax.plot([a - 0.5, z - 0.5], [63.5, 63.5], color=_B_HALF, linewidth=2.4, linestyle="-.", zorder=5)
            if names:
                n = 2 * (z - a) * 4 // int(b.elem_bytes)
                for y, text in ((24, f"{b.name}[:, 0:{n // 2}]"), (88, f"{b.name}[:, {n // 2}:{n}]")):
                    ax.text((a + z - 1) / 2, y, text, ha="center", va="center", fontsize=7, color=_B_HALF,
                            zorder=6, bbox={"boxstyle": "round,pad=0.2", "facecolor": "white", "edgecolor": _B_HALF,
                                  "linewidth": 0.6, "alpha": 0.9})
    tr = ax.get_xaxis_transform()
    for a, z, label, level in _buffer_groups(kernel):
        yb = 1.015 + 0.06 * level
        ax.plot([a - 0.4, z - 0.6], [yb, yb], transform=tr, clip_on=False, color=NEUTRAL, linewidth=2.2,
                solid_capstyle="butt")
        if names:
            ax.text((a + z - 1) / 2, yb + 0.012, label, transform=tr, ha="center", va="bottom", fontsize=7,
                    clip_on=False)


def _quadrant_ylabels(ax, occ):
    ylabels = []
    for q in range(4):
        ws = [w for w in range(int(occ["warps"])) if w % 4 == q]
        who = (("warp " if len(ws) == 1 else "warps ") + ",".join(str(w) for w in ws)) if ws else "no warp"
        ylabels.append(f"{32 * q}-{32 * q + 31}\n{who}")
    ax.set_yticks([32 * q + 15.5 for q in range(4)], ylabels)


def _colour_key(fig, im, labels: list[str], n: int, what: str, y: float = 0.86) -> float:
    """Swatches for at most :data:`_MAX_SWATCHES` categories, else a colour bar; returns the y below."""
    x = 0.715
    fig.text(x, y, f"colour = {what}", fontsize=7.5, fontweight="bold", va="top", ha="left")
    if n <= _MAX_SWATCHES:
        cols = _colours(n)
        entries = [(cols[i], labels[i]) for i in range(n)] + [(_UNTOUCHED, "untouched")]
        return _swatch_legend(fig, x, y - 0.055, entries) - 0.01
    cax = fig.add_axes((x, y - 0.085, 0.26, 0.028))
    ticks = _bar_ticks(n)
    cb = fig.colorbar(im, cax=cax, orientation="horizontal", ticks=ticks)
    cb.ax.minorticks_off()
    cb.ax.tick_params(labelsize=6.5)
    cb.set_label(f"{what} (grey: untouched)", fontsize=6.5)
    return y - 0.20


# ============================================================================ TMEM figure
def _cp_filled(occ, arrays) -> np.ndarray | None:
    """Boolean ``(128, ncols)``: the cells of ``arrays`` (an occupancy or one instruction's) whose last writer is a
    ``tcgen05.cp``; None when there is none."""
    cp = [i["index"] for i in occ["instructions"] if i["op"] == "cp"]
    if not cp:
        return None
    m = np.isin(np.asarray(arrays["writer"]), cp)
    return m if m.any() and m.shape[1] > 1 else None


def _hatch_mask(ax, mask: np.ndarray, hatch: str = "////") -> None:
    """Hatch the cells of a boolean image mask exactly (cell edges at ±0.5): one rectangle per run of columns,
    merged over consecutive rows with the same runs."""
    from matplotlib.patches import Rectangle

    def runs(row):
        idx = np.nonzero(row)[0]
        return tuple((int(r[0]), int(r[-1]) + 1) for r in np.split(idx, np.nonzero(np.diff(idx) != 1)[0] + 1)
                     if r.size)

    start, prev = 0, None  # type: int, tuple[tuple[int, int], ...] | None
    for y in range(mask.shape[0] + 1):
        cur = runs(mask[y]) if y < mask.shape[0] else None
        if cur != prev:
            for a, b in prev or ():
                ax.add_patch(Rectangle((a - 0.5, start - 0.5), b - a, y - start, fill=False, hatch=hatch,
                                       edgecolor="#222222", linewidth=0.0, zorder=3))
            start, prev = y, cur


def _writer_lines(occ) -> list[str]:
    """``tcgen05.cp L12: 1024 cells`` per writer of :func:`tmem_occupancy` (its ``writer`` array), by count."""
    w = np.asarray(occ["writer"])
    labels: dict[str, int] = {}
    for ins in occ["instructions"]:
        if ins["writer"]:
            labels[ins["writer"]] = labels.get(ins["writer"], 0) + int(np.count_nonzero(w == ins["index"]))
    return [f"{k}: {v} cells" for k, v in labels.items()]


def _draw_tmem(fig, kernel, color_by: str, instr):
    occ = tmem_occupancy(kernel)
    ins_list = occ["instructions"]
    ncols = int(occ["ncols"])
    if instr == "each":
        panels: list[int | None] = list(range(min(len(ins_list), MAX_PANELS))) or [None]
    elif instr is None:
        panels = [None]
    else:
        if isinstance(instr, bool) or not isinstance(instr, (int, np.integer)) or not 0 <= int(instr) < len(ins_list):
            raise ValueError(f"instr must be None, 'each' or an instruction index 0..{len(ins_list) - 1}; "
                             f"got {instr!r}")
        panels = [int(instr)]
    n, labels = _categories(occ, color_by)
    cmap, norm = _cat_cmap(n)
    k = len(panels)
    left, total, gap = 0.085, 0.585, 0.012
    width = (total - gap * (k - 1)) / k
    im = None
    for j, p in enumerate(panels):
        ax = fig.add_axes((left + j * (width + gap), 0.11, width, 0.66))
        arrays = occ if p is None else instr_arrays(occ, p)
        im = ax.imshow(np.asarray(arrays[color_by]), cmap=cmap, norm=norm, interpolation="nearest", aspect="auto")
        cp_cells_ = _cp_filled(occ, arrays)
        if cp_cells_ is not None:  # the cells a tcgen05.cp filled last, hatched over the colours
            _hatch_mask(ax, cp_cells_)
        _tmem_guides(ax, kernel, occ, ncols, names=(k == 1))
        ax.set_xticks(np.arange(0, max(ncols, 1), _xtick_step(ncols, 5 if k == 1 else 2)))
        ax.tick_params(labelsize=7)
        if j == 0:
            _quadrant_ylabels(ax, occ)
            ax.set_ylabel("TLane", fontsize=8.5)
        else:
            ax.set_yticks([32 * q + 15.5 for q in range(4)], [""] * 4)
        ax.set_xlabel("TCol (32-bit)" if k > 1 else "TCol (32-bit column)", fontsize=8)
        if k > 1:
            ins = ins_list[p]
            sep = "\n" if k > 4 else " "  # narrow panels: the instruction on two lines, or the titles collide
            ax.set_title(f"#{p} {ins['op']}{sep}{instr_shape(ins)}\nrow {ins['row']} col {ins['col']}",
                         fontsize=7, pad=12)
    # title
    head = f"TMEM occupancy of {kernel.name} · {ncols} of 512 columns × 128 lanes allocated · coloured by {color_by}"
    if instr is None:
        sub = "all instructions overlaid (later ones on top): " + (_instr_summary(ins_list) or "no tcgen05.ld/st")
    elif instr == "each":
        sub = "one panel per instruction" + (f" (first {MAX_PANELS} of {len(ins_list)})"
                                             if len(ins_list) > MAX_PANELS else "")
    else:
        ins = ins_list[int(instr)]
        sub = (f"instruction #{instr} {ins['chain']} ({ins['buffer'] or '?'}, row {ins['row']}, col {ins['col']}, "
               f"warps {','.join(map(str, ins['warps']))})")
    if occ["out_of_range"]:
        sub += f" · {occ['out_of_range']} cells outside the allocation"
    fig.text(0.012, 0.985, head, fontsize=9.5, fontweight="bold", va="top", ha="left")
    fig.text(0.012, 0.935, "\n".join(textwrap.wrap(sub, 130)), fontsize=8, va="top", ha="left")
    # right-hand column: colour key, buffers, instructions, line key
    y = _colour_key(fig, im, labels, n, color_by)
    y = _text_block(fig, 0.715, y, "buffers", [_buffer_label(b) for b in kernel.tmem], budget=6)
    if color_by != "instr":
        y = _text_block(fig, 0.715, y, "instructions", [instr_label(i) for i in ins_list], budget=6)
    if any(i["op"] == "cp" for i in ins_list):  # a cell that stages through tcgen05.st and tcgen05.cp: who filled it
        y = _text_block(fig, 0.715, y, "filled by (last writer)", _writer_lines(occ), budget=5)
    key = ["── lane quadrant (warp % 4)", "- - 32-column alloc unit"]
    if any(i["op"] == "cp" for i in ins_list):
        key.append("//// last written by tcgen05.cp")
    if _uses_sub_slabs(kernel, occ):
        key.append("···· 16-lane sub-slab")
    if any(b.datapath == "B" for b in kernel.tmem):
        key.append("-·- data path B halves")
    fig.text(0.715, max(y, 0.02), "   ".join(key) if len(key) <= 2 else "\n".join(key), fontsize=6.5,
             va="top", ha="left", color="#333333")


def _draw_shared(fig, kernel):
    infos = shared_writers(kernel)
    if not infos:
        ax = fig.add_axes((0.05, 0.05, 0.9, 0.9))
        ax.set_axis_off()
        ax.text(0.5, 0.5, f"{kernel.name}: no TMEM and no shared buffers to draw",
                ha="center", va="center", fontsize=11, transform=ax.transAxes)
        return
    n = len(infos)
    width = 0.78 / n  # the right 0.14 of the figure holds the legend
    all_threads = sorted({t for inf in infos if inf["determined"] for t in inf["threads"]})
    ncat = max(len(all_threads), 1)
    for k, inf in enumerate(infos):
        buf, w = inf["buffer"], inf["writer"]
        grid2 = np.asarray(w).reshape(-1, int(buf.shape[-1])) if w.ndim != 2 else np.asarray(w)
        ax = fig.add_axes((0.08 + k * width, 0.12, width - 0.07, 0.72))
        if inf["determined"]:
            # category of each writer: its rank among all writers (a lookup, no Python call per element)
            known = np.asarray(all_threads or [-1], dtype=np.int64)
            pos = np.minimum(np.searchsorted(known, grid2), known.size - 1)
            data = np.where((grid2 >= 0) & (known[pos] == grid2), pos, -1)
            cmap, norm = _cat_cmap(ncat)
            ax.imshow(data, cmap=cmap, norm=norm, interpolation="nearest", aspect="auto")
            who = _threads_phrase(inf["threads"])
        else:
            data = np.arange(grid2.size).reshape(grid2.shape)
            ax.imshow(data, cmap="viridis", interpolation="nearest", aspect="auto")
            who = "writer not determined; coloured by element index"
        # per-cell labels only where they add something (text is the costly part of a draw)
        if grid2.size <= _MAX_CELL_LABELS and (len(inf["threads"]) > 1 or not inf["determined"]):
            for (i, j), t in np.ndenumerate(grid2 if inf["determined"] else data):
                s = str(t) if not inf["determined"] else f"T{t}" if t >= 0 else "-"
                ax.text(j, i, s, ha="center", va="center", fontsize=7, color="white" if s != "-" else "#666666")
        rows, cols = grid2.shape
        ax.set_xticks(np.arange(0, cols, min(_xtick_step(cols, 8), 32)))
        ax.set_yticks(np.arange(0, rows, min(_xtick_step(rows, 8), 32)))
        if rows * cols <= 4096:  # white cell borders
            ax.set_xticks(np.arange(-0.5, cols, 1.0), minor=True)
            ax.set_yticks(np.arange(-0.5, rows, 1.0), minor=True)
            ax.grid(which="minor", color="white", linewidth=1.0)
            ax.tick_params(which="minor", length=0)
        ax.tick_params(labelsize=8)
        ax.set_xlabel("column (elements)", fontsize=8)
        ax.set_ylabel("row", fontsize=8)
        via = f" — {', '.join(inf['variants'])}" if inf["variants"] else ""
        title = f"shared {buf.name} {short_shape(buf)} (written by {who}{via})"
        ax.set_title("\n".join(textwrap.wrap(title, max(30, int(95 / n)))), fontsize=9, loc="left")
    if all_threads and len(all_threads) <= 16:
        cols_ = _colours(ncat)
        entries = [(cols_[i], f"thread {t} (warp {t // 32})") for i, t in enumerate(all_threads)]
        _swatch_legend(fig, 0.86, 0.80, entries + [(_UNTOUCHED, "not written")], step=0.045)
    fig.suptitle(f"{kernel.name}: no TMEM — shared-memory tile(s), coloured by writing thread",
                 fontsize=9.5, x=0.06, ha="left", y=0.975)


# ============================================================================ data figure helpers
def _float_view(a: np.ndarray) -> np.ndarray:
    try:
        return np.asarray(a).astype(np.float64)
    except (TypeError, ValueError):  # pragma: no cover - every tilemagic dtype converts
        return ir.bits_view(np.asarray(a)).astype(np.float64)


def downsample_caption(factors: tuple[int, int], shape: tuple[int, int]) -> str:
    """``downsampled 32× in rows and 64× in columns (8192 × 8192 drawn as 256 × 128) ...`` or '' at ``(1, 1)``."""
    fr, fc = factors
    if fr == 1 and fc == 1:
        return ""
    parts = [f"{f}× in {what}" for f, what in ((fr, "rows"), (fc, "columns")) if f > 1]
    rows, cols = shape
    return (f"downsampled {' and '.join(parts)} ({rows:,} × {cols:,} drawn as {-(-rows // fr):,} × "
            f"{-(-cols // fc):,}): a pixel is the first element of its {fr} × {fc} block, red where any "
            "element of the block differs")


# ============================================================================ public API
def heatmap_figure(kernel, color_by: str = "warp", instr: int | str | None = None):
    """TMEM occupancy heatmap (or, without TMEM, the shared-memory tiles) as an Agg figure.

    Parameters
    ----------
    kernel : tilemagic.ir.nodes.Kernel
        Lowered kernel.
    color_by : {"warp", "thread", "reg", "instr"}, optional
        What colours a TMEM cell (see :func:`tmem_occupancy`).  Shared tiles are always
        coloured by the writing thread.
    instr : int or "each", optional
        ``None`` (default): all instructions overlaid; an int: only that ``TcgenLdSt``
        (index in program order); ``"each"``: one panel per instruction (at most
        :data:`MAX_PANELS`).

    Returns
    -------
    matplotlib.figure.Figure
        A ``TileFigure`` of :data:`FIGSIZE` inches at :data:`DPI`, attached to a
        ``FigureCanvasAgg``; never registered with pyplot.  With TMEM: an ``imshow`` of
        128 ``TLane`` × ``kernel.tmem_cols`` ``TCol`` cells per panel (light grey =
        untouched), black lines at the 32-lane quadrant boundaries (labelled with the
        warps that own them), dotted lines at 16-lane sub-slabs when a ``.16x*b`` shape
        or data path F is used, dash-dotted lines between the data-path-B halves, dashed
        lines at the 32-column allocation units, bars naming each buffer's columns, and a
        legend (colours, buffers, instructions).

    Raises
    ------
    ValueError
        For an unknown ``color_by`` or an ``instr`` out of range.
    """
    if color_by not in COLOR_BY:
        raise ValueError(f"color_by must be one of {', '.join(COLOR_BY)}; got {color_by!r}")
    fig = _new_figure()
    if int(kernel.tmem_cols or 0) > 0:
        _draw_tmem(fig, kernel, color_by, instr)
    else:
        _draw_shared(fig, kernel)
    return fig


def fragment_figure(kernel, local: str | ir.Buffer | None = None, instr: int | None = None):
    """Register-fragment map (thread × register -> TMEM lane, column) as an Agg figure.

    Parameters
    ----------
    kernel : tilemagic.ir.nodes.Kernel
    local, instr
        As in :func:`fragment_map`.

    Returns
    -------
    matplotlib.figure.Figure
        Two ``imshow`` panels of ``threads × words`` integers (lane, column; grey =
        register not moved by tcgen05), white lines between warps, colour bars, and the
        buffer's layout and instructions listed on the right.

    Raises
    ------
    ValueError
        As :func:`fragment_map`.
    """
    fig = _new_figure()
    fm = fragment_map(kernel, local, instr)
    occ_ins = tmem_occupancy(kernel)["instructions"]
    buf = fm["buffer"]
    threads, words = int(fm["threads"]), int(fm["words"])
    import matplotlib

    # the lane quadrant is the warp's (PTX ISA 9.0 §9.7.16.8.1, white lines); the colour shows the lane inside it
    lane_in_quadrant = np.where(fm["lane"] >= 0, fm["lane"] % 32, -1)
    panels = ((lane_in_quadrant, "TMEM lane − 32·(warp % 4)", "viridis", 0, 31),
              (fm["col"], "TMEM column (32-bit TCol)", "cividis", 0, max(int(np.max(fm["col"])), 0)))
    for j, (arr, what, cname, vmin, vmax) in enumerate(panels):
        ax = fig.add_axes((0.075 + j * 0.34, 0.11, 0.25, 0.68))
        cmap = matplotlib.colormaps[cname].with_extremes(bad=_UNTOUCHED)
        data = np.ma.masked_less(arr, 0)
        im = ax.imshow(data, cmap=cmap, vmin=vmin, vmax=max(vmax, vmin + 1), interpolation="nearest", aspect="auto")
        for w in range(32, threads, 32):  # warp boundaries
            ax.axhline(w - 0.5, color="white", linewidth=0.8)
        ax.set_xticks(np.arange(0, words, _xtick_step(words, 6)))
        ax.set_yticks(np.arange(0, threads, 32 if threads > 64 else 16))
        ax.tick_params(labelsize=7)
        ax.set_xlabel(f"32-bit register of {buf.name}", fontsize=8)
        if j == 0:
            ax.set_ylabel("thread (CTA)", fontsize=8.5)
        ax.set_title(what, fontsize=8.5)
        cb = fig.colorbar(im, ax=ax, fraction=0.08, pad=0.03)
        cb.ax.tick_params(labelsize=6.5)
    used = [occ_ins[i] for i in fm["instructions"]]
    epr = int(fm["elems_per_reg"])
    head = (f"register fragment {buf.name} {short_shape(buf)}: thread × register → TMEM (lane, column)")
    sub = (f"{words} 32-bit registers per thread" + (f" ({epr} {buf.dtype} per register)" if epr > 1 else "")
           + " · grey: not moved by tcgen05 · white lines: warps")
    fig.text(0.012, 0.985, head, fontsize=9.5, fontweight="bold", va="top", ha="left")
    fig.text(0.012, 0.935, sub, fontsize=8, va="top", ha="left")
    layout = getattr(buf, "layout", None)
    lines = [f"{buf.name} @ {layout}"] if layout is not None else []
    y = _text_block(fig, 0.76, 0.86, "layout", lines, width=34, budget=4) if lines else 0.86
    y = _text_block(fig, 0.76, y, "instructions", [instr_label(i) for i in used], width=34, budget=12)
    fill = np.asarray(fm["filled_by"])
    filled = [f"{fm['writers'][i]}: {int(np.count_nonzero(fill == i))} registers"
              for i in sorted(fm["writers"]) if np.any(fill == i)]
    # the loaded registers: which writer filled each (none for a fragment that is only stored: no empty heading)
    if filled and any(occ_ins[i]["op"] == "cp" for i in fm["writers"]):
        _text_block(fig, 0.76, y, "loaded registers filled by", filled, width=34, budget=5)
    return fig


def picture_figure(result, kind: str = "tmem", color_by: str = "warp", instr: int | str | None = None,
                   buffer: str | ir.Buffer | None = None, check: int | str | None = None):
    """One picture of ``result`` by kind (:data:`KINDS` and :data:`ASYNC_KINDS`, case folded as on the option
    line): ``tmem`` (:func:`heatmap_figure`), ``instr`` (the same, one panel per instruction), ``fragment``
    (:func:`fragment_figure` of ``buffer``), ``data`` (:func:`data_figure` of ``check``), ``tma``
    (:func:`tma_figure`), ``swizzle`` (:func:`swizzle_figure`), ``timeline`` (:func:`timeline_figure`),
    ``cluster`` (:func:`cluster_figure`), ``tcgen05_cp`` (:func:`cp_figure`).

    Raises
    ------
    ValueError
        An unknown ``kind`` (the message lists :data:`KINDS`), or as the figure it names.
    """
    kind, color_by = str(kind).lower(), str(color_by).lower()
    if kind in ("tmem", "instr"):
        return heatmap_figure(result.kernel, color_by=color_by, instr="each" if kind == "instr" else instr)
    if kind == "fragment":
        return fragment_figure(result.kernel, local=buffer, instr=instr if not isinstance(instr, str) else None)
    if kind == "data":
        return data_figure(result, check=check)
    if kind == "tma":
        return tma_figure(result.kernel)
    if kind == "swizzle":
        return swizzle_figure(result.kernel)
    if kind == "timeline":
        return timeline_figure(result)
    if kind == "cluster":
        return cluster_figure(result)
    if kind == "tcgen05_cp":
        return cp_figure(result)
    raise ValueError(f"kind must be one of {', '.join(KINDS + ASYNC_KINDS)}; got {kind!r}")


def data_figure(result, check: int | str | None = None):
    """The values a ``check`` compared, with mismatching elements in red, as an Agg figure.

    Parameters
    ----------
    result : tilemagic.result.TileCopyResult
    check : int or str, optional
        As in :func:`check_data` (default: the first failing check, else the first).

    Returns
    -------
    matplotlib.figure.Figure
        Panels "expected" (right side) and "got" (left side) as values (one colour scale,
        NaN white), the got panel with the mismatching elements painted red, and a third
        panel with the mismatch mask when the check failed; the title gives the count and
        the first three mismatches (:func:`~tilemagic.widgets.placement.first_mismatches`).
        Data of more than :data:`MAX_DATA_CELLS` rows × columns is downsampled by powers of
        two (:func:`~tilemagic.widgets.placement.downsample_check`: sampled values, blocks
        marked red when any element differs) and the caption says so
        (:func:`downsample_caption`); the axes count elements of the full data.  Memory: the
        check's boolean mismatch mask plus pictures of at most :data:`MAX_DATA_CELLS`, never a
        float copy of the tile.

    Raises
    ------
    ValueError
        As :func:`check_data`.
    """
    fig = _new_figure()
    d = check_data(result, check)
    v = downsample_check(d, MAX_DATA_CELLS)
    chk, bad = d["check"], v["mismatch"]
    import matplotlib
    from matplotlib.colors import ListedColormap

    gf, ef = _float_view(v["got"]), _float_view(v["expected"])
    finite = np.concatenate([gf[np.isfinite(gf)], ef[np.isfinite(ef)]])
    vmin, vmax = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    if vmin == vmax:
        vmax = vmin + 1.0
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="#ffffff")
    nbad = v["mismatches"]
    fr, fc = v["factors"]
    panels: list[tuple[str, np.ndarray | None]] = [(f"expected: {d['rhs']}", ef), (f"got: {d['lhs']}", gf)]
    if nbad:
        panels.append(("mismatches (red)", None))
    width = 0.80 / len(panels)
    im = None
    for j, (title, data) in enumerate(panels):
        ax = fig.add_axes((0.07 + j * width, 0.12, width - 0.05, 0.66))
        rows, cols = v["shape"]
        extent = (-0.5, cols - 0.5, rows - 0.5, -0.5)  # axes in elements of the full data, whatever the sampling
        if data is None:
            ax.imshow(bad.astype(np.int8), cmap=ListedColormap([_UNTOUCHED, _MISMATCH]), vmin=0, vmax=1,
                      interpolation="nearest", aspect="auto", extent=extent)
        else:
            im = ax.imshow(np.ma.masked_invalid(data), cmap=cmap, vmin=vmin, vmax=vmax, interpolation="nearest",
                           aspect="auto", extent=extent)
            if nbad and j == 1:  # the mismatching cells of the output, on top of its values
                ax.imshow(np.ma.masked_equal(bad.astype(np.int8), 0), cmap=ListedColormap([_MISMATCH]),
                          vmin=0, vmax=1, interpolation="nearest", aspect="auto", extent=extent)
        ax.set_xticks(np.arange(0, cols, _xtick_step(cols, 4)))
        ax.set_yticks(np.arange(0, rows, _xtick_step(rows, 8)))
        ax.tick_params(labelsize=7)
        ax.set_xlabel("column (elements)", fontsize=8)
        if j == 0:
            ax.set_ylabel("row", fontsize=8.5)
        ax.set_title(title, fontsize=8.5)
    cax = fig.add_axes((0.90, 0.12, 0.015, 0.66))
    cb = fig.colorbar(im, cax=cax)
    cb.ax.tick_params(labelsize=6.5)
    cb.set_label("value", fontsize=7)
    status = "FAIL" if nbad else "PASS"  # recomputed from the data shown (the same bitwise test as the check)
    if chk.not_evaluated:  # (a simulated run that would hang: the data is the memory at the hang)
        status = "NOT EVALUATED (the memory when the kernel would hang)"
    head = f"check {chk.text} (L{chk.line}): {status} · {d['got'].dtype} {list(d['got'].shape)}"
    total = int(d["mismatch"].size)
    if nbad:
        first = "; ".join(f"{list(i)}: got {format_value(g)}, expected {format_value(e)}"
                          for i, g, e in first_mismatches(d["got"], d["expected"], d["mismatch"], 3))
        sub = f"{nbad} of {total} elements differ (bitwise) · first: {first}"
    else:
        sub = f"all {total} elements equal (bitwise) · launch: {result.launch.backend}"
    note = downsample_caption((fr, fc), v["shape"])
    lines = textwrap.wrap(sub, 140) + (textwrap.wrap(note, 140) if note else [])
    fig.text(0.012, 0.985, head, fontsize=9.5, fontweight="bold", va="top", ha="left",
             color=_MISMATCH if nbad else "black")
    fig.text(0.012, 0.935, "\n".join(lines), fontsize=8, va="top", ha="left")
    return fig


def figure_png(fig) -> bytes:
    """PNG bytes of an Agg figure (fixed dpi, no ``Software`` metadata: reproducible).

    The PNG is ``FIGSIZE × DPI`` pixels (900 × 480).  Should it pass :data:`MAX_PNG_BYTES` (a picture
    of noise compresses badly: the raw RGBA image is 1.7 MB), it is drawn again at half the
    resolution, whose raw image (450 × 240 RGBA, 432 KB) fits the cap whatever the content.

    Returns
    -------
    bytes
        At most :data:`MAX_PNG_BYTES`.
    """
    png = _print_png(fig)
    if len(png) > MAX_PNG_BYTES:
        dpi = fig.dpi
        fig.set_dpi(dpi / 2)
        try:
            png = _print_png(fig)
        finally:
            fig.set_dpi(dpi)
    return png


#: Text, tick and frame colour of every picture: a mid grey that reads on a light and on a dark page
#: (contrast 3.9:1 on white, 4.6:1 on JupyterLab Dark's #111111), since the figure's background is transparent.
NEUTRAL = "#7d8590"
_DARK = {(0.0, 0.0, 0.0), (0.2, 0.2, 0.2)}  # black and #333333, matplotlib's and our default ink


def _theme_neutral(fig) -> None:
    """Make ``fig`` read on light and dark pages: a transparent figure background, and the default (black)
    texts, ticks and spines in :data:`NEUTRAL`; coloured ink (swatches, white cell labels) is left as drawn."""
    from matplotlib.colors import to_rgb
    from matplotlib.text import Text

    fig.patch.set_alpha(0.0)
    for t in fig.findobj(Text):
        if tuple(round(c, 3) for c in to_rgb(t.get_color())) in _DARK:
            t.set_color(NEUTRAL)
    for ax in fig.axes:
        ax.patch.set_alpha(0.0)
        ax.tick_params(which="both", colors=NEUTRAL)
        for spine in ax.spines.values():
            spine.set_edgecolor(NEUTRAL)


def _print_png(fig) -> bytes:
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    _theme_neutral(fig)
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    bio = io.BytesIO()
    # unhinted glyphs: a third faster to rasterise, and text draws dominate the render time
    with matplotlib.rc_context({"text.hinting": "none"}):
        canvas.print_png(bio, metadata={"Software": None}, pil_kwargs={"compress_level": 1})
    return bio.getvalue()


# ============================================================================ asynchronous copies (issue 13)
#: The pictures of asynchronous copies (``result.heatmap(kind=...)``; shown where a kernel has such ops):
#: the TMA boxes over the global tensor, the swizzle of an async destination, the timeline of the simulator, and
#: (a cluster) what each CTA's shared memory received.
ASYNC_KINDS: tuple[str, ...] = ("tma", "swizzle", "timeline", "cluster", "tcgen05_cp")
#: Most TMA ops drawn side by side (later ones are named in the title).
MAX_TMA_PANELS: int = 3
#: Most 128-byte lines of a swizzled tile drawn (8 chunks each; later lines are counted in the caption).
MAX_SWIZZLE_LINES: int = 64
_HANG = "#d62728"
_KIND_COLOUR = {"cp.async": _PALETTE[0], "tma.g2s": _PALETTE[2], "tma.s2g": _PALETTE[1], "dsmem": _PALETTE[9],
                "tcgen05.cp": _PALETTE[8]}


def _tma_panel(ax, op) -> None:
    """One TMA op: the tensor's bounds, each issue's box (distinct colours), the out-of-bounds part hatched."""
    from matplotlib.patches import Rectangle

    tm = op["tmap"]
    dims = [int(d) for d in tm.dims]
    cols, rows = dims[0], (dims[1] if tm.rank > 1 else 1)
    ax.add_patch(Rectangle((0, 0), cols, rows, facecolor=_UNTOUCHED, edgecolor=NEUTRAL, linewidth=1.2, zorder=1))
    issues = op["issues"]
    cs = _colours(max(len(issues), 1))
    lo_x, lo_y, hi_x, hi_y = 0, 0, cols, rows
    boxes: list = []  # one collection: hundreds of issues (an issue axis) draw as one artist
    for k, iss in enumerate(issues):
        x0, x1 = iss["start"][0], iss["stop"][0]
        y0, y1 = (iss["start"][1], iss["stop"][1]) if tm.rank > 1 else (0, 1)
        lo_x, lo_y, hi_x, hi_y = min(lo_x, x0), min(lo_y, y0), max(hi_x, x1), max(hi_y, y1)
        boxes.append(Rectangle((x0, y0), x1 - x0, y1 - y0))
        if iss["oob"]:  # the part outside the tensor: hatched over the box
            (ix0, ix1) = iss["inside"][0]
            (iy0, iy1) = iss["inside"][1] if tm.rank > 1 else (0, 1)
            for rx0, ry0, rx1, ry1 in ((x0, y0, x1, max(y0, min(iy0, y1))), (x0, min(max(iy1, y0), y1), x1, y1),
                                       (x0, max(y0, iy0), max(x0, min(ix0, x1)), min(y1, iy1)),
                                       (min(max(ix1, x0), x1), max(y0, iy0), x1, min(y1, iy1))):
                if rx1 > rx0 and ry1 > ry0:
                    ax.add_patch(Rectangle((rx0, ry0), rx1 - rx0, ry1 - ry0, facecolor="none", edgecolor=_HANG,
                                           hatch="////", linewidth=0.8, zorder=3))
        if len(issues) <= 8:
            ax.text((x0 + x1) / 2, (y0 + y1) / 2, f"#{k}", ha="center", va="center", fontsize=7, color="white",
                    zorder=4)
    from matplotlib.collections import PatchCollection

    ax.add_collection(PatchCollection(boxes, facecolors=cs[:len(boxes)], edgecolors=cs[:len(boxes)], alpha=0.85,
                                      linewidths=0.6, zorder=2))
    pad_x, pad_y = max(1, (hi_x - lo_x) // 40), max(1, (hi_y - lo_y) // 40)
    ax.set_xlim(lo_x - pad_x, hi_x + pad_x)
    ax.set_ylim(hi_y + pad_y, lo_y - pad_y)  # row 0 on top, as the tensor is written
    ax.tick_params(labelsize=7)
    unit = f"{tm.dtype.lower()} elements" if tm.elem_bytes == tm.buf.elem_bytes else \
        f"{tm.dtype.lower()} units ({tm.elem_bytes // tm.buf.elem_bytes} × {tm.buf.dtype})"
    ax.set_xlabel(f"dim 0 ({unit})", fontsize=7.5)
    ax.set_ylabel("dim 1" + (f" (dims 2+: {', '.join(map(str, dims[2:]))} — coordinates listed)"
                             if tm.rank > 2 else ""), fontsize=7.5)
    where = tma_box_phrase(op)
    oob = f" · {op['oob']} elements out of bounds (hatched)" if op["oob"] else ""
    arrow = f"{tm.buf.name} → {op['smem']}" if op["direction"] == "g2s" else f"{op['smem']} → {tm.buf.name}"
    title = (f"L{op['line']} {op['variant']} {op['direction'].upper()} {arrow} ({tm.name} dims {dims})\n"
             f"{where}{oob}")
    ax.set_title("\n".join(w for part in title.split("\n") for w in textwrap.wrap(part, 60)), fontsize=7.5,
                 loc="left")


def tma_figure(kernel):
    """The TMA boxes over the global tensor, one panel per TMA op, as an Agg figure.

    Parameters
    ----------
    kernel : tilemagic.ir.nodes.Kernel
        The lowered kernel: its ``TmaCopy`` statements and their ``TensorMap``.

    Returns
    -------
    matplotlib.figure.Figure
        Per op (at most :data:`MAX_TMA_PANELS`; :func:`~tilemagic.widgets.placement.tma_boxes`): the tensor
        map's ``globalDim`` as a grey rectangle (dimension 0 across, dimension 1 down, in descriptor
        elements), each issue's box (``coords`` to ``coords + boxDim``) in its own colour (numbered in issue
        order when at most 8), the part of a box outside the tensor hatched red (PTX ISA 9.0 §9.7.9.25.5.2:
        filled on a load, not written by a store).

    Raises
    ------
    ValueError
        The kernel has no TMA copy.
    """
    ops = tma_boxes(kernel)
    if not ops:
        raise ValueError(f"{kernel.name}: no TMA copy, so no box to draw")
    fig = _new_figure()
    shown = ops[:MAX_TMA_PANELS]
    k = len(shown)
    width = 0.86 / k
    for j, op in enumerate(shown):
        _tma_panel(fig.add_axes((0.08 + j * width, 0.12, width - 0.08, 0.62)), op)
    head = f"TMA boxes of {kernel.name} over the global tensor(s) · one colour per issue"
    if len(ops) > k:
        head += f" · first {k} of {len(ops)} TMA ops"
    fig.text(0.012, 0.985, head, fontsize=9.5, fontweight="bold", va="top", ha="left")
    if any(not op["determined"] for op in ops):
        fig.text(0.012, 0.935, "some coordinates are not static (they read memory): those issues are not drawn",
                 fontsize=8, va="top", ha="left")
    return fig


def swizzle_figure(kernel):
    """The swizzle of each swizzled asynchronous-copy destination: 16-byte chunk -> physical chunk.

    Parameters
    ----------
    kernel : tilemagic.ir.nodes.Kernel

    Returns
    -------
    matplotlib.figure.Figure
        One panel per buffer (:func:`~tilemagic.widgets.placement.swizzle_chunks`): a grid of its logical
        16-byte chunks, one 128-byte line per row (8 chunks; at most :data:`MAX_SWIZZLE_LINES` rows), each
        cell coloured by the bank group of the physical chunk it lands in (banks ``4g .. 4g+3``,
        ``arch.banks``) and labelled with the physical chunk's position in its line: a column of one colour
        is a bank conflict, eight colours in a column none.

    Raises
    ------
    ValueError
        No swizzled destination of a TMA load or ``cp.async``.
    """
    infos = swizzle_chunks(kernel)
    if not infos:
        raise ValueError(f"{kernel.name}: no swizzled destination of a TMA load or cp.async")
    fig = _new_figure()
    infos = infos[:3]
    n = len(infos)
    width = 0.74 / n
    cmap, norm = _cat_cmap(8)
    for j, inf in enumerate(infos):
        phys, group = inf["physical"], inf["bank_group"]
        lines = -(-phys.size // LINE_CHUNKS)
        rows = min(lines, MAX_SWIZZLE_LINES)
        grid = np.full(rows * LINE_CHUNKS, -1, np.int64)
        grid[: min(phys.size, grid.size)] = group[: grid.size]
        grid = grid.reshape(rows, LINE_CHUNKS)
        ax = fig.add_axes((0.07 + j * width, 0.10, width - 0.06, 0.70))
        ax.imshow(grid, cmap=cmap, norm=norm, interpolation="nearest", aspect="auto")
        if rows <= 32:
            pg = np.full(rows * LINE_CHUNKS, -1, np.int64)
            pg[: min(phys.size, pg.size)] = phys[: pg.size]
            for (r, c), p in np.ndenumerate(pg.reshape(rows, LINE_CHUNKS)):
                if p >= 0:
                    ax.text(c, r, str(int(p) % LINE_CHUNKS), ha="center", va="center", fontsize=6,
                            color="white")
        ax.set_xticks(np.arange(LINE_CHUNKS))
        ax.set_yticks(np.arange(0, rows, _xtick_step(rows, 8)))
        ax.tick_params(labelsize=7)
        ax.set_xlabel("logical 16-byte chunk in its 128-byte line", fontsize=7.5)
        if j == 0:
            ax.set_ylabel("128-byte line", fontsize=8)
        more = f" (first {rows} of {lines} lines)" if lines > rows else ""
        ax.set_title(f"{inf['buffer']} ({inf['via']}: {inf['how']}){more}", fontsize=8, loc="left")
    cs = _colours(8)
    _swatch_legend(fig, 0.83, 0.80, [(cs[g], f"banks {4 * g}-{4 * g + 3}") for g in range(8)]
                   + [(_UNTOUCHED, "no swizzled write")], step=0.045)
    fig.text(0.012, 0.985, f"Shared-memory swizzle of {kernel.name}: chunk → physical chunk, coloured by bank group",
             fontsize=9.5, fontweight="bold", va="top", ha="left")
    fig.text(0.012, 0.935, "label: the physical chunk's position in its line · a column of 8 colours reads a "
             "logical column of 8 lines without a bank conflict", fontsize=8, va="top", ha="left")
    return fig


def _timeline_rows(tl) -> tuple:
    """Row of each (CTA, warp) and (CTA, mbarrier) of a timeline, and the tick labels: the warps then the
    mbarriers of CTA 0, then CTA 1's, ... (without a cluster: the warps, then the mbarriers)."""
    nw, bars, C = int(tl["warps"]), tl["barriers"], int(tl.get("ctas", 1))
    per = nw + len(bars)
    labels = []
    for r in range(C):
        pre = f"CTA {r} " if C > 1 else ""
        labels += [f"{pre}warp {w}" for w in range(nw)] + [f"{pre}mbarrier {b}" for b in bars]

    def row(cta: int, warp: int) -> int:
        return cta * per + warp

    row_of_bar = {(r, b): r * per + nw + i for r in range(C) for i, b in enumerate(bars)}
    return row, row_of_bar, labels


def timeline_figure(result):
    """The kernel's asynchronous events from the simulator, one row per warp, as an Agg figure.

    Parameters
    ----------
    result : tilemagic.result.TileCopyResult
        A result launched on the simulator (``result.launch.hb``).

    Returns
    -------
    matplotlib.figure.Figure
        x: the position of the event in the simulator's timeline (program order); rows: the warps, then one
        per mbarrier (:func:`~tilemagic.widgets.placement.async_timeline`); in a cluster (``Kernel.cluster >
        1``) these rows for every CTA, CTA 0's first.  Each copy is a bar on its issuing warp's row from its
        issue to its completion (cp.async blue, TMA load green, TMA store orange, dsmem cyan), a dotted line
        on to the wait that observed it; a copy landing in another CTA (a TMA multicast, PTX ISA 9.0
        §9.7.9.25.5.2; a dsmem copy, §9.7.9.25.4.1) is drawn in the receiving CTA's rows: a thin line from
        the issue to a square on that CTA's mbarrier row where it completes, dotted on to that CTA's wait.
        Commit groups are circles, waits triangles, arrivals carets; a barrier's row holds its phases,
        labelled with their numbers, and a tick where each completes (§9.7.13.15); a ``tcgen05.cp`` is a brown
        bar from its issue to its completion at the issuing thread's ``tcgen05.commit`` (a plus;
        §9.7.16.6.1); a ``cluster_sync`` (§9.7.13.3) is a dashed vertical line across all CTAs.  A run that would hang
        ends in a red line at
        the hang with the blocked waits marked and the message in the title.

    Raises
    ------
    ValueError
        Not simulated (no timeline: the message advises ``--launch sim``), or simulated with no asynchronous
        event ("this kernel has no asynchronous events").
    """
    from matplotlib.ticker import MaxNLocator

    from .placement import async_timeline, cluster_size

    launch = result.launch
    hb = getattr(launch, "hb", None) if launch is not None else None
    if hb is None:
        raise ValueError(f"{result.name}: no simulator timeline to draw (run it with --launch sim)")
    tl = async_timeline(hb, int(result.kernel.threads), cluster=cluster_size(result.kernel))
    if not any(e["kind"] not in ("cta_sync", "cluster_sync", "fence.mbarrier.init", "mbarrier.init")
               for e in tl["events"]):
        raise ValueError(f"{result.name}: this kernel has no asynchronous events (no copy_async, arrive or wait "
                         "in the simulator's timeline)")
    fig = _new_figure()
    ax = fig.add_axes((0.11 if tl["ctas"] == 1 else 0.12, 0.12, 0.68 if tl["ctas"] == 1 else 0.67, 0.66))
    row, row_of_bar, labels = _timeline_rows(tl)
    # a tcgen05.cp completes at the arrive of the issuing thread's tcgen05.commit (PTX ISA 9.0 §9.7.16.6.1):
    # (cta, barrier, phase) -> that arrive's x, where the cp's bar ends and the commit's plus is drawn
    commit_arrive = {(e["cta"], e["info"].get("barrier"), e["info"].get("phase")): e["x"] for e in tl["events"]
                     if e["kind"] == "arrive" and e["info"].get("by") == "tcgen05.commit"}
    nrows = len(labels)
    end = tl["hang"]["x"] if tl["hang"] else tl["length"]
    from matplotlib.collections import LineCollection

    # one collection per kind and style, one scatter per marker: a timeline of 4096 events is a few artists
    solid: dict[str, list] = {}
    dots: dict[str, list] = {}
    remote: dict[str, list] = {}  # landings in another CTA: issue -> (x, receiving CTA's mbarrier row)
    lands: dict[str, list] = {}
    lines_ = sorted({c["line"] for c in tl["copies"]}, key=lambda v: (v is None, v or 0))
    lift = {v: 0.0 if len(lines_) == 1 else 0.36 * (i % 3 - 1) for i, v in enumerate(lines_)}
    for c in tl["copies"]:
        y = row(c["cta"], c["warp"]) + lift[c["line"]]  # (the copies of different ops on sub-rows of their warp)
        own = [land for land in c["landings"] if land["cta"] == c["cta"]]
        # its own CTA's landing; a copy that lands only in other CTAs (dsmem) is a stub on the issuer's row
        stop = own[0]["x"] if own else c["issue"] if c["landings"] else end
        if c["kind"] == "tcgen05.cp":
            stop = commit_arrive.get((c["cta"], c["barrier"], c["phase"]), stop)
        solid.setdefault(c["kind"], []).append([(c["issue"], y), (max(stop, c["issue"] + 0.3), y)])
        wait = own[0]["wait"] if own else None
        if wait is not None and wait > stop:
            dots.setdefault(c["kind"], []).append([(stop, y), (wait, y)])
        for land in c["landings"]:
            if land["cta"] == c["cta"]:
                continue
            yb = row_of_bar.get((land["cta"], c["barrier"]), row(land["cta"], c["warp"]))
            remote.setdefault(c["kind"], []).append([(c["issue"], y), (land["x"], yb)])
            lands.setdefault(c["kind"], []).append((land["x"], yb))
            if land["wait"] is not None and land["wait"] > land["x"]:
                dots.setdefault(c["kind"], []).append([(land["x"], yb), (land["wait"], yb)])
    reads = [(c["read"], row(c["cta"], c["warp"]) + lift[c["line"]]) for c in tl["copies"] if c["read"] is not None]
    if reads:  # a TMA store's source read done (`bulk_wait_group ... read`): the shared tile is free again
        ax.scatter([x for x, _ in reads], [y for _, y in reads], marker="D", s=18, color="white",
                   edgecolor=_KIND_COLOUR["tma.s2g"], linewidths=1.0, zorder=5)
    for kind, segs in solid.items():
        ax.add_collection(LineCollection(segs, colors=_KIND_COLOUR[kind], linewidths=5, alpha=0.8,
                                         capstyle="butt", zorder=2))
    for kind, segs in dots.items():
        ax.add_collection(LineCollection(segs, colors=_KIND_COLOUR[kind], linewidths=1.2, linestyles=":",
                                         zorder=2))
    for kind, segs in remote.items():
        ax.add_collection(LineCollection(segs, colors=_KIND_COLOUR[kind], linewidths=0.9, alpha=0.7, zorder=2))
        ax.scatter([x for x, _ in lands[kind]], [y for _, y in lands[kind]], marker="s", s=26,
                   color=_KIND_COLOUR[kind], zorder=4)
    marks = {"wait_group": ("v", _KIND_COLOUR["cp.async"]), "bulk_wait_group": ("v", _KIND_COLOUR["tma.s2g"]),
             "wait": ("v", _KIND_COLOUR["tma.g2s"]), "arrive": ("^", _PALETTE[4]), "cta_sync": ("|", NEUTRAL),
             "fence.proxy.async": ("d", NEUTRAL), "wait.blocked": ("X", _HANG),
             "tcgen05.commit": ("P", NEUTRAL)}
    points: dict[str, tuple[list, list]] = {}
    for e in tl["events"]:
        if e["kind"] not in marks:
            continue
        ys = [row(r, w) for r, w in e["at"]]
        bar = e["info"].get("barrier")
        x = e["x"]
        if e["kind"] == "arrive" and e["info"].get("by") == "tcgen05.commit":
            ys = []  # on the issuer's row the commit's plus stands for it (at the end of the cps' bars)
        if e["kind"] == "tcgen05.commit":
            x = commit_arrive.get((e["cta"], bar, e["info"].get("phase")), x)
        if e["kind"] == "arrive" and (e["cta"], bar) in row_of_bar:
            ys.append(row_of_bar[(e["cta"], bar)])
        xs_, ys_ = points.setdefault(e["kind"], ([], []))
        xs_ += [x] * len(ys)
        ys_ += ys
    for kind, (xs_, ys_) in points.items():
        ax.scatter(xs_, ys_, marker=marks[kind][0], s=34, color=marks[kind][1], zorder=4, linewidths=0.8)
    for bulk in (False, True):
        gs = [g for g in tl["groups"] if g["bulk"] == bulk]
        col = _KIND_COLOUR["tma.s2g" if bulk else "cp.async"]
        if gs:
            ax.scatter([g["x"] for g in gs for _ in g["at"]], [row(r, w) for g in gs for r, w in g["at"]],
                       marker="o", s=30, facecolor="none", edgecolor=col, linewidths=1.2, zorder=4)
        if len(tl["groups"]) <= 12:
            for g in gs:
                if g["at"]:
                    ax.text(g["x"], min(row(r, w) for r, w in g["at"]) + 0.22, f"g{g['group']}", fontsize=6.5,
                            ha="center", va="top", color=col)
    for (cta, b), y in row_of_bar.items():  # phases: the span of each, its number, a tick where it completes
        flips = [p for p in tl["phases"] if p["barrier"] == b and p.get("cta", 0) == cta]
        start = next((e["x"] for e in tl["events"] if e["info"].get("barrier") == b and e["cta"] == cta), 0)
        for k, p in enumerate(flips + [None]):
            x1 = p["x"] if p is not None else end
            num = p["phase"] if p is not None else (flips[-1]["phase"] + 1 if flips else 0)
            ax.plot([start, x1], [y, y], color=_PALETTE[4] if num % 2 == 0 else _PALETTE[5], linewidth=3,
                    solid_capstyle="butt", zorder=1)
            ax.text((start + x1) / 2, y - 0.25, f"phase {num}", fontsize=6.5, ha="center", va="bottom")
            if p is not None:
                ax.plot([x1, x1], [y - 0.35, y + 0.35], color=_PALETTE[4], linewidth=1.5, zorder=3)
            start = x1
    for x in tl.get("cluster_syncs", []):  # the cluster barrier orders every CTA: a line across all rows
        ax.axvline(x, color=NEUTRAL, linewidth=1.2, linestyle="--", zorder=3)
        ax.text(x, -0.6, "cluster_sync", color=NEUTRAL, fontsize=6.5, ha="center", va="bottom")
    per = int(tl["warps"]) + len(tl["barriers"])
    for r in range(1, int(tl.get("ctas", 1))):  # the CTAs' blocks of rows
        ax.axhline(r * per - 0.5, color=NEUTRAL, linewidth=0.8, zorder=1)
    hang = tl["hang"]
    if hang:
        ax.axvline(end, color=_HANG, linewidth=2, zorder=5)
        ax.text(end, -0.6, "would hang", color=_HANG, fontsize=7.5, ha="right", va="bottom")
    ax.set_yticks(range(nrows), labels)
    ax.set_ylim(nrows - 0.4, -0.9)
    ax.set_xlim(-0.5, end + 0.8)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # event numbers: whole ticks, none past the frame
    ax.tick_params(labelsize=7)
    if nrows > 24:  # (8 CTAs of 4 warps: the labels shrink with the rows)
        ax.tick_params(axis="y", labelsize=max(4.0, 7 * 24 / nrows))
    ax.set_xlabel("event (order in the simulator's timeline)", fontsize=8)
    who = "per warp" if tl["ctas"] == 1 else f"per CTA and warp ({tl['ctas']} CTAs)"
    head = f"Asynchronous events of {result.name} (simulator) · {who}: issue → completion → wait"
    fig.text(0.012, 0.985, head, fontsize=9.5, fontweight="bold", va="top", ha="left")
    sub = timeline_summary(tl)
    if tl["ctas"] > 1:
        sub += f", {len(tl['cluster_syncs'])} cluster_sync(s)"
    if tl["dropped"]:
        sub += f" · {tl['dropped']} later events past the timeline's cap not drawn"
    if hang:
        sub = f"WOULD HANG at L{hang['line']}: {hang['message'].removeprefix('would hang: ')}"
    fig.text(0.012, 0.935, "\n".join(textwrap.wrap(sub, 140)[:3]), fontsize=8, va="top", ha="left",
             color=_HANG if hang else "black")
    y = _swatch_legend(fig, 0.81, 0.76, _timeline_legend(tl), step=0.045)
    fig.text(0.81, y - 0.01, "\n".join(_timeline_marks(tl, points, remote=bool(remote))), fontsize=6.8, va="top",
             ha="left", linespacing=1.5)
    return fig


#: The colour key of the timeline, in this order: (copy kind or ``"mbarrier"``, label).
_TIMELINE_KEY: tuple[tuple[str, str], ...] = (
    ("cp.async", "cp.async (issue → land)"), ("tma.g2s", "TMA load"), ("tma.s2g", "TMA store"),
    ("mbarrier", "mbarrier phase / arrive"), ("dsmem", "dsmem copy"), ("tcgen05.cp", "tcgen05.cp"))


def _timeline_legend(tl) -> list[tuple[str, str]]:
    """The timeline's colour swatches: only the copy kinds the timeline has, the mbarrier's if it has one."""
    have = {c["kind"] for c in tl["copies"]} | ({"mbarrier"} if tl["barriers"] else set())
    return [(_PALETTE[4] if k == "mbarrier" else _KIND_COLOUR[k], label) for k, label in _TIMELINE_KEY if k in have]


def _timeline_marks(tl, points: Mapping[str, object], remote: bool) -> list[str]:
    """The timeline's marker key: one line per marker drawn (``points``: the event kinds scattered)."""
    waits = any(k in points for k in ("wait", "wait_group", "bulk_wait_group"))
    first = "  ".join(m for m, on in (("▼ wait", waits), ("○ commit group", bool(tl["groups"])),
                                      ("▲ arrive", "arrive" in points)) if on)
    lines = [first] if first else []
    landed_waits = any(land["wait"] is not None for c in tl["copies"] for land in c["landings"])
    for text, on in (("··· landed, until its wait", landed_waits), ("| cta_sync", "cta_sync" in points),
                     ("◆ fence.proxy.async", "fence.proxy.async" in points),
                     ("◇ store's source read done", any(c["read"] is not None for c in tl["copies"])),
                     ("✚ tcgen05.commit: its arrive,\n   the cps' completion", "tcgen05.commit" in points),
                     ("■ landed in another CTA", remote), ("┆ cluster_sync", bool(tl.get("cluster_syncs"))),
                     ("✕ blocked wait", "wait.blocked" in points)):
        if on:
            lines.append(text)
    return lines


#: Hatch of each receipt kind in the cluster picture (:data:`~tilemagic.widgets.placement.RECEIPT_KINDS`): a
#: CTA's own TMA load plain, a multicast striped, a dsmem copy crossed, a generic store dotted.
_RECEIPT_HATCH = {"tma": "", "multicast": "////", "dsmem": "xxx", "store": "..."}
#: Most issues of the cluster picture drawn as arrows from the writing CTA to the receiving panels.
MAX_CLUSTER_ARROWS: int = 16
#: an arrow of the cluster picture that ends in this top fraction of a panel's rows is curved: a straight one
#: would come down along the panel's top frame and not be seen
ARROW_BEND_ROWS: float = 0.1
#: Most hatched rectangles of one panel of the cluster picture (a run of bytes of one kind is at most three).
MAX_HATCH_RECTS: int = 96


def _byte_rows(pl, rank: int) -> tuple[np.ndarray, list[tuple[int, str]]]:
    """CTA ``rank``'s shared buffers as one image of 128-byte rows (the writing CTA per byte, -1 nothing
    landed, -2 no byte: past a buffer's end and the blank row between buffers) and each buffer's first row."""
    rb = int(pl["row_bytes"])
    blocks, starts, at = [], [], 0
    for b in pl["buffers"]:
        src = pl["maps"][rank][b["name"]]["src"].astype(np.int64)
        rows = max(1, -(-src.size // rb))
        img = np.full(rows * rb, -2, np.int64)
        img[: src.size] = src
        blocks.append(img.reshape(rows, rb))
        starts.append((at, b["name"]))
        blocks.append(np.full((1, rb), -2, np.int64))
        at += rows + 1
    return (np.concatenate(blocks[:-1]) if blocks else np.full((1, rb), -2, np.int64)), starts


def _run_rects(lo: int, hi: int, rb: int, row0: int) -> list[tuple[int, int, int, int]]:
    """Bytes ``[lo, hi)`` of a buffer whose first row is image row ``row0`` as ``(x, y, w, h)`` rectangles
    over 128-byte rows: the partial first row, the whole rows, the partial last row."""
    out = []
    r0, c0, r1, c1 = lo // rb, lo % rb, hi // rb, hi % rb
    if r0 == r1:
        return [(c0, row0 + r0, c1 - c0, 1)]
    if c0:
        out.append((c0, row0 + r0, rb - c0, 1))
        r0 += 1
    if r1 > r0:
        out.append((0, row0 + r0, rb, r1 - r0))
    if c1:
        out.append((0, row0 + r1, c1, 1))
    return out


def _hatch_rects(pl, rank: int, row0: dict) -> dict | None:
    """Rectangles ``(x, y, w, h)`` (image cells) to hatch per receipt kind in CTA ``rank``'s panel: the runs of
    bytes of one hatched kind, whoever wrote them (so a multicast from every CTA is one run of its kind), or
    None when they need more than :data:`MAX_HATCH_RECTS` rectangles (the panel is drawn without hatches)."""
    rb = int(pl["row_bytes"])
    out: dict[str, list] = {}
    n = 0
    for b in pl["buffers"]:
        kind = pl["maps"][rank][b["name"]]["kind"].astype(np.int64)
        if not kind.size:
            continue
        cut = np.flatnonzero(kind[1:] != kind[:-1]) + 1
        for lo, hi in zip([0, *cut.tolist()], [*cut.tolist(), kind.size]):
            kd = RECEIPT_KINDS[int(kind[lo])] if kind[lo] >= 0 else None
            if kd is None or not _RECEIPT_HATCH[kd]:
                continue
            rs = _run_rects(lo, hi, rb, row0[b["name"]])
            n += len(rs)
            if n > MAX_HATCH_RECTS:
                return None
            out.setdefault(kd, []).extend(rs)
    return out


def cluster_figure(result):
    """Which CTA's shared memory received which bytes, in a thread-block cluster: one panel per CTA.

    Parameters
    ----------
    result : tilemagic.result.TileCopyResult
        A cluster kernel (``Kernel.cluster > 1``) run on the simulator: ``result.launch.hb.cluster_receipts``
        (:func:`~tilemagic.widgets.placement.cluster_receipts`).

    Returns
    -------
    matplotlib.figure.Figure
        One panel per CTA (four per row; :func:`~tilemagic.widgets.placement.cluster_placement`): its shared
        buffers (mbarriers aside) in declaration order, each as rows of 128 bytes (a row is a 128-byte
        shared-memory line, :data:`~tilemagic.widgets.placement.ROW_BYTES`, whatever the buffer's shape;
        byte offsets are physical, after any swizzle), every byte coloured by the CTA whose statement wrote
        it (light grey: nothing landed), hatched by how (:data:`_RECEIPT_HATCH`: own TMA load plain,
        multicast ``////``, dsmem ``xxx``, store ``...``; a panel whose bytes of one kind fall in more than
        :data:`MAX_HATCH_RECTS` pieces is not hatched and the caption says so).  A multicast (PTX ISA 9.0
        §9.7.9.25.5.2) or a dsmem copy (§9.7.9.25.4.1) is one issue: its line above its writing CTA's panel,
        an arrow to each panel it lands in (at most :data:`MAX_CLUSTER_ARROWS` issues), ending at the centre
        of the landing run (its middle byte), edged in white (it lands on bytes of its own colour), curved
        when that is in the panel's top rows so that it never runs along the frame; the legend lists every
        issue with its description line, and the per-CTA summary
        (:func:`~tilemagic.widgets.placement.cluster_summary`, four CTAs) is the figure's caption.

    Raises
    ------
    ValueError
        The kernel is not a cluster kernel, or the launch has no cluster receipts (not simulated: the message
        advises ``--launch sim``; simulated: "this kernel wrote no shared memory in any CTA"), or the
        receipts are inconsistent (as :func:`~tilemagic.widgets.placement.cluster_placement`).
    """
    from matplotlib.collections import PatchCollection
    from matplotlib.colors import ListedColormap
    from matplotlib import patheffects
    from matplotlib.patches import ConnectionPatch, Rectangle

    from .placement import cluster_size

    k = result.kernel
    C = cluster_size(k)
    if C <= 1:
        raise ValueError(f"{result.name}: not a cluster kernel (cluster=1), so no CTA receives another's bytes")
    receipts = cluster_receipts(result.launch)
    if not receipts:
        if getattr(result.launch, "hb", None) is None:
            raise ValueError(f"{result.name}: no cluster receipts to draw (run it with --launch sim)")
        raise ValueError(f"{result.name}: this kernel wrote no shared memory in any CTA, so the cluster picture "
                         "has nothing to draw")
    pl = cluster_placement(k, receipts)
    rb = int(pl["row_bytes"])
    fig = _new_figure()
    cs = _colours(C)
    cmap = ListedColormap([_UNTOUCHED] + cs).with_extremes(bad=(0, 0, 0, 0))
    per_row = min(C, 4)
    nrow = -(-C // per_row)
    left, width_all, top, bottom = 0.05, 0.72, 0.80, 0.22
    w = width_all / per_row
    h = (top - bottom) / nrow
    axes, starts_of, unhatched, nrows_of = [], [], [], []
    for r in range(C):
        i, j = divmod(r, per_row)
        ax = fig.add_axes((left + j * w + 0.012, top - (i + 1) * h + 0.04, w - 0.03, h - 0.075))
        img, starts = _byte_rows(pl, r)
        ax.imshow(np.ma.masked_less(img, -1) + 1, cmap=cmap, vmin=-0.5, vmax=C + 0.5, interpolation="nearest",
                  aspect="auto")
        row0 = dict((name, at) for at, name in starts)
        rects = _hatch_rects(pl, r, row0)
        if rects is None:
            unhatched.append(r)
        for kd, rs in (rects or {}).items():
            ax.add_collection(PatchCollection([Rectangle((x - 0.5, y - 0.5), ww, hh) for x, y, ww, hh in rs],
                                              facecolor="none", edgecolor="white", hatch=_RECEIPT_HATCH[kd],
                                              linewidth=0, alpha=0.9, zorder=3))
        ax.set_yticks([at for at, _ in starts], [name for _, name in starts])
        ax.set_xticks([0, 32, 64, 96], None if i == nrow - 1 else [])
        ax.tick_params(labelsize=6.5)
        got = sum(run["hi"] - run["lo"] for run in pl["runs"][r])
        ax.set_title(f"CTA {r} · {got} B", fontsize=7, loc="left", pad=3)
        if i == nrow - 1:
            ax.set_xlabel("byte in its 128-byte row", fontsize=7)
        axes.append(ax)
        starts_of.append(row0)
        nrows_of.append(img.shape[0])
    # one tag per remote-landing issue over its writing CTA's panel, an arrow to every panel it lands in
    issues = [iss for iss in pl["issues"] if iss["kind"] in ("multicast", "dsmem")]
    drawn = issues[:MAX_CLUSTER_ARROWS]
    by_src: dict[int, list] = {}
    for iss in drawn:
        by_src.setdefault(iss["src"], []).append(iss)
    for src, group in by_src.items():
        for n, iss in enumerate(group):
            ax_s = axes[src]
            tx = 0.55 + 0.45 * (n + 0.5) / len(group)  # (the right half: the title is on the left)
            ax_s.text(tx, 1.02, f"L{iss['line']}", transform=ax_s.transAxes, fontsize=6.5, ha="center",
                      va="bottom", color=cs[src], fontweight="bold")
            for dst in iss["dst"]:
                runs = [run for run in pl["runs"][dst] if run["src"] == src and run["line"] == iss["line"]
                        and run["buffer"] == iss["buffer"] and run["kind"] == iss["kind"]]
                if not runs:
                    continue  # (overwritten later in that CTA)
                # the arrow ends at the centre of the landing run, never on a border row of the panel (where it
                # would run along the frame, unseen): the middle byte's row, and its column for a short run
                lo, hi = runs[0]["lo"], runs[0]["hi"]
                mid = (lo + hi) // 2
                y = starts_of[dst][iss["buffer"]] + mid // rb
                x = mid % rb if hi - lo < rb else rb / 2
                bend = "arc3,rad=0.35" if y < ARROW_BEND_ROWS * nrows_of[dst] else "arc3"
                fig.add_artist(ConnectionPatch(xyA=(tx, 1.0), coordsA=ax_s.transAxes, xyB=(x, y),
                                               coordsB=axes[dst].transData, arrowstyle="-|>", color=cs[src],
                                               connectionstyle=bend,
                                               # white edge: the run it lands on has the arrow's colour
                                               path_effects=[patheffects.Stroke(linewidth=2.4, foreground="white"),
                                                             patheffects.Normal()],
                                               linewidth=0.9, alpha=0.85, zorder=6))
    entries = [(cs[r], f"written by CTA {r}") for r in range(C)] + [(_UNTOUCHED, "nothing landed")]
    y = _swatch_legend(fig, 0.80, 0.80, entries[:_MAX_SWATCHES + 1], step=0.04)
    used = [kd for kd in RECEIPT_KINDS if any(run["kind"] == kd for runs in pl["runs"] for run in runs)]
    for n, kd in enumerate(used):
        yy = y - n * 0.04
        fig.patches.append(Rectangle((0.80, yy - 0.011), 0.02, 0.024, transform=fig.transFigure, figure=fig,
                                     facecolor=NEUTRAL, edgecolor="white", hatch=_RECEIPT_HATCH[kd] or None,
                                     linewidth=0.5))
        fig.text(0.828, yy, {"tma": "own TMA load", "multicast": "TMA multicast", "dsmem": "dsmem copy",
                             "store": "store"}[kd], fontsize=7.5, va="center", ha="left")
    y -= len(used) * 0.04
    remote_first = sorted(pl["issues"], key=lambda i: i["kind"] not in ("multicast", "dsmem"))
    lines = [f"L{i['line']} {i['kind']} CTA {i['src']} → {','.join(map(str, i['dst']))} {i['buffer']}"
             for i in remote_first]
    _text_block(fig, 0.80, y - 0.005, "issues (line, by → to)", lines, width=30, budget=8)
    fig.text(0.012, 0.985, f"Cluster shared memory of {k.name}: which CTA wrote which bytes ({C} CTAs)",
             fontsize=9.5, fontweight="bold", va="top", ha="left")
    more = f" (+{len(issues) - len(drawn)} issues without arrows)" if len(issues) > len(drawn) else ""
    if unhatched:
        more += (f" · CTA {', '.join(map(str, unhatched))}: more than {MAX_HATCH_RECTS} pieces of a kind, not "
                 "hatched (the text lists them)")
    sizes = ", ".join(f"{b['name']} {b['nbytes']} B" for b in pl["buffers"])
    fig.text(0.012, 0.94, f"each CTA's shared buffers ({sizes}) in rows of 128 bytes (physical offsets) · "
             "colour: the writing CTA · hatch: how · an arrow: one issue landing in that CTA" + more,
             fontsize=7.5, va="top", ha="left")
    summary = cluster_summary(pl, limit=4)
    fig.text(0.012, 0.105, "\n".join(textwrap.shorten(x, 150, placeholder=" …") for x in summary[:4])
             + (f"\n… {len(summary) - 4} more CTAs" if len(summary) > 4 else ""),
             fontsize=6.5, va="top", ha="left", family="monospace")
    return fig


# ============================================================================ tcgen05.cp (issue 14)
#: Most 128-byte lines of a ``tcgen05.cp`` source drawn (later lines are counted in the caption); chunks are
#: labelled when at most :data:`MAX_CP_LABEL_LINES` lines are drawn.
MAX_CP_LINES: int = 64
MAX_CP_LABEL_LINES: int = 16
#: Most cp instructions joined to TMEM by an arrow (one per instruction, from its chunk (0, 0)).
MAX_CP_ARROWS: int = 8
#: descriptors the tcgen05.cp picture lists in full (the others are counted)
_MAX_CP_DESCS = 4
_REJECT = "#d62728"
#: Line width of the cp picture's arrows (points): at ``NEUTRAL`` they read on a light and on a dark page.
_ARROW_WIDTH = 1.3
#: The box behind white labels drawn over hatching or light swatches (replica labels): dark, so that the white
#: reads in JupyterLab Light and Dark alike.
_LABEL_BOX = {"boxstyle": "round,pad=0.15", "facecolor": "#333333", "alpha": 0.8, "edgecolor": "none"}


def _cp_source_panel(ax, grid: np.ndarray, ncat: int, rows: int, lines: int, title: str) -> None:
    """The shared tile as 128-byte lines × 16-byte chunks, each chunk coloured by its category (-1: grey)."""
    cmap, norm = _cat_cmap(max(ncat, 1))
    ax.imshow(grid[:rows], cmap=cmap, norm=norm, interpolation="nearest", aspect="auto")
    lc = grid.shape[1]
    ax.set_xticks(np.arange(lc))
    ax.set_yticks(np.arange(0, rows, _xtick_step(rows, 8)))
    ax.tick_params(labelsize=7)
    ax.set_xlabel(f"16-byte chunk in its {lc * CHUNK_BYTES}-byte line", fontsize=7.5)
    ax.set_ylabel(f"{lc * CHUNK_BYTES}-byte line of the shared tile", fontsize=8)
    more = f" (first {rows} of {lines} lines)" if lines > rows else ""
    ax.set_title("\n".join(textwrap.wrap(title + more, 60)[:3]), fontsize=7.5, loc="left")


def cp_figure(result):
    """The descriptors of a kernel's ``tcgen05.cp`` drawn: the shared tile and where each chunk lands in TMEM.

    Parameters
    ----------
    result : tilemagic.result.TileCopyResult, or a lowered :class:`~tilemagic.ir.nodes.Kernel`

    Returns
    -------
    matplotlib.figure.Figure
        For the first smem -> tmem op (:func:`~tilemagic.widgets.placement.cp_ops`; one figure for all the cps
        of one copy statement): left, the shared source as 128-byte lines of 16-byte chunks (at most
        :data:`MAX_CP_LINES`), each chunk coloured by the cp instruction that reads it through its descriptor
        (:func:`~tilemagic.widgets.placement.cp_chunk_map`: the walk of
        :func:`tilemagic.layout.smem_matrix.cp_source_addresses`, so a swizzle shows as chunks moved within
        their line) and labelled ``instruction:row,chunk`` when few lines are drawn, a line every SBO bytes
        between 8-row core matrices; right, TMEM lanes × the columns written, each cell coloured by the
        instruction whose chunk lands there (PTX ISA 9.0 §9.7.16.9.1, :func:`tilemagic.arch.tcgen05.cp_cells`),
        the multicast's replica lanes hatched and labelled ``replica +32`` etc.; arrows join one row's
        first chunk of each instruction (rows 3, 11, 19, 27) to its TMEM cell.  Without a ``tcgen05.cp`` but
        with a ``smem->tmem`` decline that names a place, the rejected layout (:func:`cp_decline_figure`).

    Raises
    ------
    ValueError
        No ``tcgen05.cp`` and no such decline.
    """
    from matplotlib.patches import ConnectionPatch, Rectangle
    from matplotlib.ticker import MaxNLocator

    kernel = result if isinstance(result, ir.Kernel) else result.kernel
    ops = cp_ops(kernel) if kernel is not None else []
    if not ops:
        decl = cp_declines(getattr(result, "dispatch", ()))
        bufs = {b.name: b for b in getattr(kernel, "shared", ())} if kernel is not None else {}
        for d in decl:
            b = bufs.get(d["detail"].buffer)
            if b is not None:
                return cp_decline_figure(d, int(b.nbytes))
        name = getattr(result, "name", getattr(kernel, "name", "?"))
        raise ValueError(f"{name}: no tcgen05.cp (copy_async smem->tmem) and no smem->tmem decline that names a place")
    op = ops[0]
    m = cp_chunk_map(op)
    cps = op["cps"]
    lc = m["line_chunks"]
    lines = -(-m["nchunks"] // lc)
    rows = min(lines, MAX_CP_LINES)
    grid = np.full(lines * lc, -1, np.int64)
    grid[: m["nchunks"]] = m["instr"]
    grid = grid.reshape(lines, lc)
    fig = _new_figure()
    ax = fig.add_axes((0.07, 0.10, 0.26, 0.68))
    f0 = cps[0]["fields"]
    _cp_source_panel(ax, grid, len(cps), rows, lines,
                     f"{op['smem']} ({op['smem_bytes']} B at {op['smem_base']}): chunk → cp instruction")
    sbo_lines = False
    if f0.sbo >= lc * CHUNK_BYTES:
        step = f0.sbo // (lc * CHUNK_BYTES)
        for y in range(step, rows, step):
            ax.axhline(y - 0.5, color="white", linewidth=1.2)
            sbo_lines = True
    labelled = rows <= MAX_CP_LABEL_LINES
    if labelled:
        sub = grid[:rows]
        rr = np.full(lines * lc, -1, np.int64)
        rr[: m["nchunks"]] = m["row"]
        jj = np.full(lines * lc, -1, np.int64)
        jj[: m["nchunks"]] = m["chunk"]
        rr, jj = rr.reshape(lines, lc), jj.reshape(lines, lc)
        for (r, c), i in np.ndenumerate(sub):
            if i >= 0:
                ax.text(c, r, f"{i}:{rr[r, c]},{jj[r, c]}", ha="center", va="center", fontsize=5, color="white")
    # TMEM panel
    ax2 = fig.add_axes((0.42, 0.10, 0.30, 0.68))
    lane_col = m["lane_col"]
    cell_instr = np.where(lane_col >= 0, m["instr"][np.clip(lane_col, 0, m["nchunks"] - 1)], -1)
    cmap, norm = _cat_cmap(max(len(cps), 1))
    ax2.imshow(cell_instr, cmap=cmap, norm=norm, interpolation="nearest", aspect="auto",
               extent=(m["col_lo"] - 0.5, m["col_lo"] + m["ncols"] - 0.5, TMEM_LANES - 0.5, -0.5))
    rep = m["replica"]
    for k in sorted({int(x) for x in np.unique(rep) if x > 0}):
        off = cps[0]["replicas"][k] if k < len(cps[0]["replicas"]) else k
        ln = np.nonzero((rep == k).any(axis=1))[0]
        runs = np.split(ln, np.nonzero(np.diff(ln) != 1)[0] + 1) if ln.size else []
        for run in runs:
            ax2.add_patch(Rectangle((m["col_lo"] - 0.5, run[0] - 0.5), m["ncols"], run.size, fill=False,
                                    hatch="///", edgecolor="white", linewidth=0.0, zorder=3))
            ax2.text(m["col_lo"] + m["ncols"] - 0.6, run[0] + 0.5, f"replica +{off}", ha="right", va="top",
                     fontsize=6.5, color="white", zorder=4, bbox=_LABEL_BOX)
    x0, x1 = m["col_lo"] - 0.5, m["col_lo"] + m["ncols"] - 0.5
    ax2.hlines([32 * q - 0.5 for q in range(1, 4)], x0, x1, color=NEUTRAL, linewidth=0.8)  # inside the panel
    ax2.set_xlim(x0, x1)
    ax2.set_yticks([32 * q for q in range(4)] + [127])
    ax2.xaxis.set_major_locator(MaxNLocator(integer=True))  # whole columns (a 4-column window: no 3.5, 4.5, ...)
    ax2.tick_params(labelsize=7)
    ax2.set_xlabel("TCol (32-bit column)", fontsize=8)
    ax2.set_ylabel("TLane", fontsize=8)
    ax2.set_title(f"TMEM {op['tmem'] or ''}: lane × column written (replicas hatched)", fontsize=7.5, loc="left")
    arrows: list[tuple[int, int]] = []  # (instruction, row) of each arrow drawn
    for c in cps[:MAX_CP_ARROWS]:  # (rows 3, 11, 19, 27 of the instructions: arrows apart, in the lines drawn)
        r = min(c["rows"] - 1, 8 * (c["index"] % 4) + 3)
        b = int(c["rel"][r, 0])
        if 0 <= b // CHUNK_BYTES < rows * lc:
            i = b // CHUNK_BYTES
            con = ConnectionPatch(xyA=(i % lc, i // lc), coordsA=ax.transData,
                                  xyB=(int(c["cols"][0, 0]), int(c["lanes"][r, 0])), coordsB=ax2.transData,
                                  arrowstyle="->", color=NEUTRAL, linewidth=_ARROW_WIDTH, mutation_scale=11)
            fig.add_artist(con)
            arrows.append((int(c["index"]), r))
    # right column: the instructions with their colours, and the first descriptor in short
    cs = _colours(max(len(cps), 1))
    entries = [(cs[c["index"] % len(cs)], f"#{c['index']} lane {c['lane']} col {c['col']} · {op['smem']}+"
                f"{c['start_rel']}") for c in cps[:_MAX_SWATCHES]]
    y = _swatch_legend(fig, 0.76, 0.80, entries, step=0.04)
    if len(cps) > _MAX_SWATCHES:
        fig.text(0.76, y, f"… {len(cps) - _MAX_SWATCHES} more", fontsize=7, va="top", ha="left")
        y -= 0.04
    lay = f0.layout_name
    desc_lines = [f"0x{c['desc']:016x}" for c in cps[:_MAX_CP_DESCS]] + (
        [f"… {len(cps) - _MAX_CP_DESCS} more (one per instruction)"] if len(cps) > _MAX_CP_DESCS else []) + [
        f"SBO {f0.sbo} B · LBO {f0.lbo} B" + (" (ignored)" if f0.swizzled else ""),
        f"layout {lay} ({f0.layout}) · v{f0.version}", f"base offset {f0.base_offset} · mode {f0.lbo_mode}"]
    _text_block(fig, 0.76, y - 0.01, "descriptors", desc_lines, width=30, budget=9)
    more_ops = f" · {len(ops) - 1} more smem->tmem op(s) not drawn" if len(ops) > 1 else ""
    fig.text(0.012, 0.985, f"tcgen05.cp of {kernel.name} · L{op['line']}: {len(cps)} × {cps[0]['chain']}{more_ops}",
             fontsize=9.5, fontweight="bold", va="top", ha="left")
    fig.text(0.012, 0.935, "\n".join(textwrap.wrap(cp_caption(cps, op["smem"], labelled, sbo_lines, arrows), 140)[:3]),
             fontsize=8, va="top", ha="left")
    return fig


def cp_caption(cps: Sequence[Mapping], smem: str, labelled: bool, sbo_lines: bool,
               arrows: Sequence[tuple[int, int]]) -> str:
    """The subtitle of :func:`cp_figure`: what is drawn, and only that.

    Parameters
    ----------
    cps : sequence of mapping
        The instructions of one smem -> tmem op (:func:`~tilemagic.widgets.placement.cp_ops`'s ``cps``).
    smem : str
        The shared buffer's name.
    labelled : bool
        Whether the chunks carry ``instruction:row,chunk`` labels.
    sbo_lines : bool
        Whether white lines mark the SBO steps between 8-row core matrices.
    arrows : sequence of (int, int)
        ``(instruction, row)`` of each arrow drawn, from chunk 0 of that row of the instruction to its TMEM cell.
    """
    n = len(cps)
    parts = [cp_heading(cps[0], smem) + (f" (cp #0 of {n}; every cp's start and TMEM place in the key)" if n > 1
                                         else "")]
    if labelled:
        parts.append("label instruction:row,chunk")
    if sbo_lines:
        parts.append("white lines: SBO (8-row core matrices)")
    if arrows:
        parts.append("arrows: chunk 0 of " + ", ".join(f"cp #{i} row {r}" for i, r in arrows) + " → its TMEM cell")
    return " · ".join(parts)


def cp_decline_figure(decline, nbytes: int):
    """A rejected ``smem->tmem`` layout: the shared buffer's 16-byte chunks, the one that breaks the rule
    outlined in red, where the rule wanted it dashed, the rule's message as the title.

    Parameters
    ----------
    decline : dict
        One entry of :func:`~tilemagic.widgets.placement.cp_declines` (``line``, ``op``, ``reason``,
        ``detail``: a :class:`~tilemagic.lower.dispatch.DeclineDetail`).
    nbytes : int
        Bytes of the shared buffer ``detail.buffer``.

    Returns
    -------
    matplotlib.figure.Figure
        The left panel of :func:`cp_figure` for the plan that was tried (128-byte lines × 16-byte chunks, at
        most :data:`MAX_CP_LINES`; :func:`~tilemagic.widgets.placement.cp_decline_map`), the offending chunk
        outlined in red (solid), the expected place dashed; the rule, shape and the chunk's (row, chunk) in one
        instruction on the right.
    """
    from matplotlib.patches import Rectangle

    det = decline["detail"]
    dm = cp_decline_map(det, nbytes)
    lc = dm["line_chunks"]
    lines = -(-dm["nchunks"] // lc)
    rows = min(lines, MAX_CP_LINES)
    grid = np.full((lines, lc), -1, np.int64)
    fig = _new_figure()
    ax = fig.add_axes((0.07, 0.10, 0.40, 0.66))
    _cp_source_panel(ax, np.full_like(grid, -1), 1, rows, lines,
                     f"{det.buffer} ({nbytes} B): the plan for {det.shape or 'no shape'} that was tried")
    for key, style in (("bad", "-"), ("expected", "--")):
        at = dm[key]
        if at is not None and at[0] < rows:
            ax.add_patch(Rectangle((at[1] - 0.5, at[0] - 0.5), 1, 1, fill=False, edgecolor=_REJECT,
                                   linewidth=2.2 if key == "bad" else 1.6, linestyle=style, zorder=4))
    info = [f"rule: {det.rule}", f"shape: {det.shape or '-'}"]
    if det.byte is not None:
        info.append(f"offending chunk: byte {det.byte}" + (f" (row {det.row}, chunk {det.chunk})"
                                                         if det.row is not None else ""))
    if det.expected is not None:
        info.append(f"the rule wants byte {det.expected} (dashed)")
    if dm["bad"] is not None and dm["bad"][0] >= rows:
        info.append(f"(beyond the {rows} lines drawn)")
    _text_block(fig, 0.55, 0.76, "why", info + ["red: the chunk that breaks the rule"], width=50, budget=12)
    where = f"L{decline['line']} " if decline.get("line") is not None else ""
    fig.text(0.012, 0.985, f"{where}smem->tmem declined: {det.rule}", fontsize=9.5, fontweight="bold",
             va="top", ha="left", color=_REJECT)
    fig.text(0.012, 0.935, "\n".join(textwrap.wrap(decline.get("reason") or "", 150)[:2]), fontsize=7.5,
             va="top", ha="left")
    return fig
