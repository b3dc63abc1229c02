"""Layout factories: plain row-major tiles, warpgroup register tiles, TMEM data paths, tcgen05 fragments.

All sizes are in **elements** of the buffer's dtype, as in TVM TIRx: ``m``
counts per-thread register elements and ``TCol`` counts TMEM columns in
elements, so one 32-bit TMEM column holds ``32 // dtype_bits`` elements (TIRx
keeps 16-bit TMEM dense, two elements per cell).  The constructions restate
apache-tvm 0.27.0.post1 (TVM ``tmem_datapath_layout`` /
``tcgen05_atom_layout``) and the PTX ISA 9.0 §9.7.16 fragments (§9.7.16.2.3, §9.7.16.10.5).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..arch import tcgen05 as _hw
from .tile import Iter, TileLayout

__all__ = [
    "row_major",
    "wg_local_layout",
    "tmem_datapath_layout",
    "tcgen05_atom_layout",
    "DATAPATH_ROWS",
    "ATOM_SHAPES",
    "dtype_bits_of",
]

# Per-CTA accumulator rows of each data-path layout (PTX ISA 9.0 §9.7.16.10.5 table).
DATAPATH_ROWS = {"A": 128, "D": 128, "B": 64, "C": 64, "E": 64, "F": 64, "G": 32}

# Register-fragment shapes tcgen05_atom_layout builds (16x32bx2 has no TIRx fragment).
ATOM_SHAPES: tuple[str, ...] = ("32x32b", "16x64b", "16x128b", "16x256b")

_DTYPE_BITS = {
    "float32": 32, "float16": 16, "bfloat16": 16, "uint8": 8, "int8": 8, "int32": 32,
    "f32": 32, "f16": 16, "bf16": 16, "u8": 8, "i8": 8, "i32": 32,
}


def dtype_bits_of(dtype: int | str) -> int:
    """Bit width of a dtype given as bits (``16``) or a name (``"float16"``, ``"bf16"``)."""
    if isinstance(dtype, str):
        if dtype not in _DTYPE_BITS:
            raise ValueError(f"unknown dtype {dtype!r}; expected one of {', '.join(_DTYPE_BITS)}")
        return _DTYPE_BITS[dtype]
    return int(dtype)


def row_major(shape: int | Sequence[int]) -> TileLayout:
    """``S[d0, d1, ...]``: row-major strides on the memory axis ``m``.

    Parameters
    ----------
    shape : int or sequence of int
        Logical extents, outermost first, in elements.

    Returns
    -------
    TileLayout
        e.g. ``row_major((4, 8))`` is ``S[(4, 8) : (8, 1)]``.
    """
    return TileLayout.from_spec(shape)


def wg_local_layout(cols: int, rows: int = 128) -> TileLayout:
    """``S[(rows, cols) : (1@tid_in_wg, 1)]``: one row per warpgroup thread.

    Thread ``t`` of the warpgroup holds row ``t`` in ``cols`` consecutive
    register elements; this is the ``.32x32b`` register view of a Layout D
    accumulator (TVM ``wg_local_layout``).

    Parameters
    ----------
    cols : int
        Elements per thread.
    rows : int, optional
        Threads (rows), default 128.
    """
    return TileLayout((Iter(rows, 1, "tid_in_wg"), Iter(cols, 1, "m")))


def tmem_datapath_layout(letter: str, rows: int, cols: int, sub_slab: int = 0) -> TileLayout:
    """TMEM layout of a ``tcgen05.mma`` accumulator for one CTA (PTX ISA 9.0 §9.7.16.10.5).

    Logical element ``(r, c)`` of the ``(rows, cols)`` tile maps to ``TLane`` /
    ``TCol`` (columns in elements; lanes relative to the buffer's base):

    ========= ======= ========================================= ==============================
    letter    rows    layout                                    (TLane, TCol) of ``(r, c)``
    ========= ======= ========================================= ==============================
    A, D      128     ``S[(128, N) : (1@TLane, 1@TCol)]``        ``(r, c)``
    B, E      64      ``S[(64, 2, N/2) : (1@TLane, 64@TLane,    ``(r + 64*(c // (N/2)),
                      1@TCol)]``                                 c % (N/2))``
    G         32      ``S[(32, 4, N/4) : (1@TLane, 32@TLane,    ``(r + 32*(c // (N/4)),
                      1@TCol)]``                                 c % (N/4))``
    C, F      64      ``S[(4, 16, N) : (32@TLane, 1@TLane,      ``(32*(r//16) + 16*s + r%16,
                      1@TCol)] + 16*s@TLane``                    c)``
    ========= ======= ========================================= ==============================

    Parameters
    ----------
    letter : {"A", "B", "C", "D", "E", "F", "G"}
        The PTX data-path layout.  TIRx dispatch uses D (M=128, cta_group::1),
        F (M=64, cta_group::1) and B (M=128, cta_group::2: 64 rows per CTA).
    rows : int
        Per-CTA accumulator rows; must equal the letter's (128, 64 or 32).
    cols : int
        Accumulator columns N, in elements.
    sub_slab : {0, 1}, optional
        For F and C: which 16-lane half of each warp's 32-lane quadrant
        (the D-address lane field 0 or 16).

    Returns
    -------
    TileLayout

    Raises
    ------
    ValueError
        "unknown datapath", "expects rows=...", "sub_slab must be 0 or 1",
        "already spans both sub-slabs; sub_slab must be 0" (letters other than
        C/F with ``sub_slab=1``), "expects even cols" (B, E), "expects cols
        divisible by 4" (G).
    """
    if not isinstance(letter, str) or letter.upper() not in DATAPATH_ROWS:
        raise ValueError(
            f"tmem_datapath_layout: unknown datapath {letter!r}; expected one of "
            f"{', '.join(DATAPATH_ROWS)} (PTX ISA 9.0 §9.7.16.10.5)"
        )
    letter = letter.upper()
    want = DATAPATH_ROWS[letter]
    if rows != want:
        raise ValueError(
            f"tmem_datapath_layout: datapath {letter} expects rows={want}, got rows={rows}"
        )
    if cols < 1:
        raise ValueError(f"tmem_datapath_layout: cols must be >= 1, got {cols}")
    if sub_slab not in (0, 1):
        raise ValueError(f"tmem_datapath_layout: sub_slab must be 0 or 1, got {sub_slab!r}")
    if sub_slab and letter not in ("C", "F"):
        raise ValueError(
            f"tmem_datapath_layout: datapath {letter} already spans both sub-slabs; "
            f"sub_slab must be 0 (only C and F take sub_slab=1)"
        )
    if letter in ("A", "D"):
        return TileLayout((Iter(rows, 1, "TLane"), Iter(cols, 1, "TCol")))
    if letter in ("B", "E"):
        if cols % 2:
            raise ValueError(
                f"tmem_datapath_layout: datapath {letter} expects even cols (the 2x2 organisation "
                f"splits N into two halves of N/2 columns), got cols={cols}"
            )
        return TileLayout((Iter(rows, 1, "TLane"), Iter(2, 64, "TLane"), Iter(cols // 2, 1, "TCol")))
    if letter == "G":
        if cols % 4:
            raise ValueError(
                f"tmem_datapath_layout: datapath G expects cols divisible by 4 (1x4 organisation), "
                f"got cols={cols}"
            )
        return TileLayout((Iter(rows, 1, "TLane"), Iter(4, 32, "TLane"), Iter(cols // 4, 1, "TCol")))
    # C, F: rows 16w..16w+15 go to lanes 32w + 16*sub_slab + (0..15)
    return TileLayout(
        (Iter(4, 32, "TLane"), Iter(16, 1, "TLane"), Iter(cols, 1, "TCol")),
        offset=(("TLane", 16 * sub_slab),),
    )


def tcgen05_atom_layout(shape: str, rows_cols: tuple[int, int], dtype_bits: int | str) -> TileLayout:
    """Warpgroup register-fragment layout of ``tcgen05.ld/st`` (TVM ``tcgen05_atom_layout``).

    Maps logical ``(row, col)`` of a ``(rows, cols)`` tile (cols in elements)
    to the holding thread (``tid_in_wg``, or ``wid_in_wg`` + ``laneid``) and
    the element index ``m`` in its registers, following the PTX fragment
    figures (PTX ISA 9.0 §9.7.16.2.3).  With ``n`` = ``rep`` and register
    ``r``:

    * ``32x32b``, 128 rows: thread ``row`` holds the row, ``m = col``
      (``S[(128, cols) : (1@tid_in_wg, 1)]`` in canonical form).
    * ``32x32b``, 64 rows: the Layout B image read by one ``.32x32b.x(N/2)``:
      thread ``row + 64*(col // (N/2))``, ``m = col % (N/2)``; fp32 only.
    * ``16x64b`` / ``16x128b`` / ``16x256b``: warp ``w`` (``wid_in_wg``) holds
      logical rows ``16w .. 16w+15`` at 64 rows; at 128 rows the instruction
      is issued twice (row immediates 0 and 16), warp ``w`` holds rows
      ``32w + 16*slab + ...`` and the second slab's registers follow the
      first's in ``m``.  Within a slab, lane ``t`` / register ``r`` hold row
      ``row(t, r)`` and 32-bit column ``col(t, r)`` of
      :func:`tilemagic.arch.tcgen05.cell_offsets`.
    * 16-bit dtypes: each 32-bit register holds two adjacent columns, the
      even one in the low half (``m = 2*r + (col & 1)``).

    Parameters
    ----------
    shape : {"32x32b", "16x64b", "16x128b", "16x256b"}
        The ``tcgen05.ld/st`` shape.
    rows_cols : (int, int)
        Fragment ``(rows, cols)``: rows 128 or 64, cols in elements.
    dtype_bits : int or str
        32 or 16 (8 is accepted for ``32x32b`` with 128 rows, where it is
        plain row-major: four elements per register).  A dtype name works too.

    Returns
    -------
    TileLayout
        Shard iters listed high to low (rows first, then columns), as TVM
        ``SplitCoord`` needs; compare with :meth:`TileLayout.is_equal`.

    Raises
    ------
    ValueError
        Unknown shape; rows not 64/128 ("expects rows=64 or 128"); unsupported
        dtype; cols not a multiple of the atom width; a rep outside the
        "PTX ISA 9.0 Table 49" set; Layout B image with a non-fp32 dtype ("fp32-only")
        or odd N ("expects even N").
    """
    if shape not in ATOM_SHAPES:
        raise ValueError(
            f"tcgen05_atom_layout: unknown instruction shape {shape!r}; expected one of "
            f"{', '.join(ATOM_SHAPES)}"
        )
    try:
        rows, cols = (int(x) for x in rows_cols)
    except (TypeError, ValueError):
        raise ValueError(f"tcgen05_atom_layout: rows_cols must be (rows, cols), got {rows_cols!r}") from None
    bits = dtype_bits_of(dtype_bits)
    if rows not in (64, 128):
        raise ValueError(
            f"tcgen05_atom_layout({shape}) expects rows=64 or 128 (one warpgroup), got rows={rows}"
        )
    allowed_bits = (32, 16, 8) if (shape == "32x32b" and rows == 128) else (32, 16)
    if bits not in allowed_bits:
        raise ValueError(
            f"tcgen05_atom_layout({shape}, rows={rows}) supports {'/'.join(map(str, allowed_bits))}-bit "
            f"dtypes, got {bits}-bit"
        )
    epr = 32 // bits  # elements per 32-bit register / TMEM column
    factor = _hw.COL_FACTOR[shape]
    legal = _hw.LEGAL_NUMS[shape]

    def check_rep(rep_cols: int, what: str) -> int:
        unit = factor * epr
        if rep_cols < 1 or rep_cols % unit:
            raise ValueError(
                f"tcgen05_atom_layout({shape}): {what}={rep_cols} must be a positive multiple of "
                f"{unit} elements ({factor} 32-bit column(s) per rep x {epr} element(s) per column)"
            )
        rep = rep_cols // unit
        if rep not in legal:
            raise ValueError(
                f"tcgen05_atom_layout({shape}): rep={rep} (from {what}={rep_cols}) is not a legal "
                f".num; PTX ISA 9.0 Table 49 allows x{legal[0]}..x{legal[-1]} in powers of two for {shape}"
            )
        return rep

    if shape == "32x32b":
        if rows == 128:
            check_rep(cols, "cols")
            return TileLayout((Iter(128, 1, "tid_in_wg"), Iter(cols, 1, "m")))
        # 64 rows: the Layout B image (PTX ISA 9.0 §9.7.16.10.5 layout B read by one .32x32b over 128 lanes)
        if bits != 32:
            raise ValueError(
                f"tcgen05_atom_layout(32x32b, rows=64) is the datapath B image and is fp32-only "
                f"(one element per 32-bit cell), got {bits}-bit"
            )
        if cols % 2:
            raise ValueError(
                f"tcgen05_atom_layout(32x32b, rows=64) expects even N (the datapath B image splits "
                f"N into two halves), got N={cols}"
            )
        check_rep(cols // 2, "N/2")
        return TileLayout(
            (Iter(64, 1, "tid_in_wg"), Iter(2, 64, "tid_in_wg"), Iter(cols // 2, 1, "m"))
        )

    rep = check_rep(cols, "cols")
    rps = _hw.REGS_PER_NUM[shape] * rep  # 32-bit registers per thread per 16-row slab
    s = epr  # m stride of one 32-bit register, in elements
    wid, lane = "wid_in_wg", "laneid"
    # Row iters (high to low) and column iters (high to low), m strides in elements.
    if shape == "16x64b":
        # row = (lane >> 2) + 8*(lane & 1); col32 = ((lane >> 1) & 1) + 2*r
        row_iters = [Iter(2, 1, lane), Iter(8, 4, lane)]
        col_iters = [Iter(rep, s, "m"), Iter(2, 2, lane)]
    elif shape == "16x128b":
        # row = (lane >> 2) + 8*(r & 1); col32 = (lane & 3) + 4*(r >> 1)
        row_iters = [Iter(2, s, "m"), Iter(8, 4, lane)]
        col_iters = [Iter(rep, 2 * s, "m"), Iter(4, 1, lane)]
    else:  # 16x256b
        # row = (lane >> 2) + 8*((r >> 1) & 1); col32 = 2*(lane & 3) + (r & 1) + 8*(r >> 2)
        row_iters = [Iter(2, 2 * s, "m"), Iter(8, 4, lane)]
        col_iters = [Iter(rep, 4 * s, "m"), Iter(4, 1, lane), Iter(2, s, "m")]
    head = [Iter(4, 1, wid)]
    if rows == 128:
        head.append(Iter(2, rps * s, "m"))  # slab: PTX row immediate 0 / 16
    tail = [Iter(2, 1, "m")] if epr == 2 else []  # two 16-bit elements per register
    return TileLayout(tuple(head + row_iters + col_iters + tail))
