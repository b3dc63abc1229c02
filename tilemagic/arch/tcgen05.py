"""tcgen05 Tensor Memory tables and the per-thread ``tcgen05.ld`` / ``tcgen05.st`` mapping.

Everything here restates PTX ISA 9.0 §9.7.16 (tcgen05) as checked data for the
rest of tilemagic: the five ``.shape`` qualifiers, the legal ``.num`` set
(PTX Tables 47-49, confirmed by a ptxas 13.0.88 sweep), the column footprint of
one instruction, the (thread, register) -> (TMEM lane, column) map of the
matrix-fragment figures (§9.7.16.2.3, §9.7.16.8.3), the warp <-> lane-quadrant
rule (§9.7.16.8.1) and the allocation granularity (§9.7.16.7.1).

Units.  TMEM is 128 lanes x 512 columns of 32-bit cells.  Every column count in
this module is in **32-bit columns** (cells), never in elements of a dtype; the
layout factories in :mod:`tilemagic.layout.factories` count elements instead.
A TMEM address is ``taddr = (lane << 16) | column``.

All functions are plain Python/numpy; the mapping functions are vectorised
(numpy broadcasting over thread and register indices).
"""

from __future__ import annotations

from dataclasses import dataclass as _dataclass

import numpy as np

__all__ = [
    "SHAPES",
    "LANES",
    "REGS_PER_NUM",
    "COL_FACTOR",
    "NUMS",
    "LEGAL_NUMS",
    "ALLOC_COLS",
    "TMEM_LANES",
    "TMEM_COLS",
    "is_legal_num",
    "regs_per_thread",
    "cols_per_instr",
    "instr_chain",
    "cell_offsets",
    "tmem_cell",
    "quadrant_mismatch",
    "alloc_columns",
    "EMU_STATUS",
    "TCGEN05_ARCHS",
    "CpShape",
    "CP_SHAPES",
    "CP_MULTICAST",
    "CP_CTA_GROUPS",
    "CP_DECOMPRESS",
    "CP_COL_ALIGN",
    "cp_chain",
    "commit_chain",
    "cp_cells",
]

# PTX ISA 9.0 §9.7.16.2.3 ("Matrix fragments for tcgen05.ld/st"): the shape qualifiers.
SHAPES: tuple[str, ...] = ("32x32b", "16x64b", "16x128b", "16x256b", "16x32bx2")

# TMEM lanes one instruction touches (both halves of .16x32bx2 share the same 16 lanes).
LANES: dict[str, int] = {"32x32b": 32, "16x64b": 16, "16x128b": 16, "16x256b": 16, "16x32bx2": 16}

# 32-bit registers per thread per unit of .num (PTX Tables 47-49).
REGS_PER_NUM: dict[str, int] = {"32x32b": 1, "16x64b": 1, "16x128b": 2, "16x256b": 4, "16x32bx2": 1}

# 32-bit columns covered per unit of .num, unpacked; per half for .16x32bx2.
# `.pack::16b` / `.unpack::16b` doubles it (register count unchanged).
COL_FACTOR: dict[str, int] = {"32x32b": 1, "16x64b": 2, "16x128b": 4, "16x256b": 8, "16x32bx2": 1}

# The .num qualifiers .x1 ... .x128 (PTX ISA 9.0 §9.7.16.8.3).
NUMS: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128)

# Legal .num per shape: a thread may hold at most 128 registers, hence 16x128b
# stops at .x64 and 16x256b at .x32 (PTX ISA 9.0 Table 49; ptxas: "Illegal vector size").
LEGAL_NUMS: dict[str, tuple[int, ...]] = {
    s: tuple(n for n in NUMS if n * REGS_PER_NUM[s] <= 128) for s in SHAPES
}

# tcgen05.alloc nCols immediates accepted by ptxas: powers of two in [32, 512] (§9.7.16.7.1).
ALLOC_COLS: tuple[int, ...] = (32, 64, 128, 256, 512)

# TMEM geometry per CTA (§9.7.16.1): 128 lanes x 512 columns of 32-bit cells.
TMEM_LANES, TMEM_COLS = 128, 512

_MAX_REGS = 128


def _check_shape(shape: str) -> None:
    if shape not in SHAPES:
        raise ValueError(
            f"tcgen05: unknown instruction shape {shape!r}; expected one of {', '.join(SHAPES)}"
        )


def is_legal_num(shape: str, num: int) -> bool:
    """Whether ``tcgen05.{ld,st}.<shape>.x<num>`` assembles (PTX ISA 9.0 Table 49).

    Legality depends only on ``shape`` and ``num``: it is the same for ``ld``
    and ``st`` and with or without ``.pack::16b`` / ``.unpack::16b`` (ptxas
    13.0.88 sweep, ``tcgen05_legality.json``).

    Parameters
    ----------
    shape : str
        One of :data:`SHAPES`.
    num : int
        The ``.num`` repetition count.

    Returns
    -------
    bool
        True when ``num`` is a power of two in 1..128 and ``num *
        REGS_PER_NUM[shape] <= 128``.

    Raises
    ------
    ValueError
        For an unknown ``shape``.
    """
    _check_shape(shape)
    try:
        n = int(num)
    except (TypeError, ValueError):
        return False
    return n == num and n in LEGAL_NUMS[shape]


def _check_num(shape: str, num: int) -> None:
    if not is_legal_num(shape, num):
        raise ValueError(
            f"tcgen05: .x{num} is not a legal .num for shape {shape} (PTX ISA 9.0 Table 49 allows "
            f".x{LEGAL_NUMS[shape][0]}..x{LEGAL_NUMS[shape][-1]} in powers of two: at most "
            f"{_MAX_REGS} 32-bit registers per thread, {REGS_PER_NUM[shape]} per unit of .num)"
        )


def regs_per_thread(shape: str, num: int) -> int:
    """32-bit registers each thread passes to one ``tcgen05.{ld,st}.<shape>.x<num>``.

    Parameters
    ----------
    shape : str
        One of :data:`SHAPES`.
    num : int
        A legal ``.num`` (see :func:`is_legal_num`).

    Returns
    -------
    int
        ``num * REGS_PER_NUM[shape]`` (PTX Tables 47-49); independent of packing.

    Raises
    ------
    ValueError
        For an unknown shape or an illegal ``num`` (message cites PTX ISA 9.0 Table 49).
    """
    _check_shape(shape)
    _check_num(shape, num)
    return int(num) * REGS_PER_NUM[shape]


def cols_per_instr(shape: str, num: int, pack: bool = False) -> int:
    """TMEM columns (32-bit cells) one instruction covers per lane.

    Parameters
    ----------
    shape : str
        One of :data:`SHAPES`.
    num : int
        A legal ``.num``.
    pack : bool, optional
        ``.pack::16b`` (ld) / ``.unpack::16b`` (st): each 32-bit register is
        spread over two cells (low 16 bits each), which doubles the footprint.

    Returns
    -------
    int
        ``num * COL_FACTOR[shape] * (2 if pack else 1)`` 32-bit columns; for
        ``16x32bx2`` this is the footprint of *one* half (each half starts at
        its own address: ``taddr`` and ``taddr + immHalfSplitoff``).  Confirmed
        by the ptxas ``-g-tmem-access-check`` bounds check (observed with ptxas 13.0).

    Raises
    ------
    ValueError
        For an unknown shape or an illegal ``num``.
    """
    _check_shape(shape)
    _check_num(shape, num)
    return int(num) * COL_FACTOR[shape] * (2 if pack else 1)


def instr_chain(op: str, shape: str, num: int, pack: bool = False) -> str:
    """The PTX instruction name for one TMEM load or store.

    Parameters
    ----------
    op : {"ld", "st"}
        Load (TMEM -> registers) or store (registers -> TMEM).
    shape : str
        One of :data:`SHAPES`.
    num : int
        A legal ``.num``.
    pack : bool, optional
        Add ``.pack::16b`` (ld) or ``.unpack::16b`` (st).  TIRx never does
        (it keeps 16-bit TMEM dense, two elements per cell).

    Returns
    -------
    str
        e.g. ``"tcgen05.ld.sync.aligned.32x32b.x4.b32"`` (PTX ISA 9.0 §9.7.16.8.3-4).

    Raises
    ------
    ValueError
        For an unknown ``op`` or shape or an illegal ``num``.
    """
    if op not in ("ld", "st"):
        raise ValueError(f"tcgen05: op must be 'ld' or 'st', got {op!r}")
    _check_shape(shape)
    _check_num(shape, num)
    packq = ""
    if pack:
        packq = ".pack::16b" if op == "ld" else ".unpack::16b"
    return f"tcgen05.{op}.sync.aligned.{shape}.x{int(num)}{packq}.b32"


def cell_offsets(shape: str, t, r, split: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(row, column) of the cell that thread ``t`` / register ``r`` moves.

    Implements the matrix-fragment figures of PTX ISA 9.0 §9.7.16.2.3 as closed forms
    (PTX ISA 9.0 §9.7.16.2.3), with ``q = t >> 2`` and ``p = t & 3``:

    ========== ======================== ==========================================
    shape      row                      column (32-bit, unpacked)
    ========== ======================== ==========================================
    32x32b     ``t``                    ``r``
    16x64b     ``q + 8*(t & 1)``        ``((t >> 1) & 1) + 2*r``
    16x128b    ``q + 8*(r & 1)``        ``p + 4*(r >> 1)``
    16x256b    ``q + 8*((r >> 1) & 1)`` ``2*p + (r & 1) + 8*(r >> 2)``
    16x32bx2   ``t & 15``               ``r``, plus ``split`` when ``t >= 16``
    ========== ======================== ==========================================

    Parameters
    ----------
    shape : str
        One of :data:`SHAPES`.
    t : int or array_like of int
        Lane id within the warp, 0..31.
    r : int or array_like of int
        32-bit register index within the instruction, ``0 .. regs_per_thread-1``.
        Broadcast against ``t``.
    split : int, optional
        ``immHalfSplitoff`` for ``16x32bx2`` (added to the column of threads
        16..31); ignored by the other shapes.

    Returns
    -------
    (row, col) : tuple of numpy.ndarray (int64)
        Offsets relative to the instruction's base lane and base column, in
        lanes and 32-bit columns (unpacked; with ``.pack::16b`` the register's
        two halves go to columns ``2*col`` and ``2*col + 1``).

    Raises
    ------
    ValueError
        For an unknown shape.
    """
    _check_shape(shape)
    t, r = np.broadcast_arrays(np.asarray(t, dtype=np.int64), np.asarray(r, dtype=np.int64))
    q, p = t >> 2, t & 3
    if shape == "32x32b":
        row, col = t, r
    elif shape == "16x64b":
        row, col = q + 8 * (t & 1), ((t >> 1) & 1) + 2 * r
    elif shape == "16x128b":
        row, col = q + 8 * (r & 1), p + 4 * (r >> 1)
    elif shape == "16x256b":
        row, col = q + 8 * ((r >> 1) & 1), 2 * p + (r & 1) + 8 * (r >> 2)
    else:  # 16x32bx2
        row, col = t & 15, r + np.where(t >= 16, np.int64(split), np.int64(0))
    return np.array(row, dtype=np.int64), np.array(col, dtype=np.int64)


def tmem_cell(
    shape: str, t, r, taddr: int, warp, row_imm: int = 0, col_imm: int = 0, split: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Absolute TMEM (lane, column) that thread ``t`` / register ``r`` of warp ``warp`` moves.

    The hardware takes the lane quadrant from the issuing warp, not from the
    address (PTX ISA 9.0 §9.7.16.8.1, the observed "relative lanes"
    behaviour that TVM, tilelang and DeepGEMM rely on)::

        lane = 32*(warp % 4) + ((taddr >> 16) & 31) + row_imm + row
        col  = (taddr & 0xFFFF) + col_imm + col

    where ``(row, col) = cell_offsets(shape, t, r)``.  ``row_imm`` / ``col_imm``
    are the lane and column fields TIRx adds separately (``get_tmem_addr``).
    For ``16x32bx2`` threads 16..31 use the address ``taddr + split`` (a full
    32-bit add, as ptxas emits it); for ``split < 65536`` without a column
    carry this is ``col += split``.

    Parameters
    ----------
    shape : str
        One of :data:`SHAPES`.
    t, r : int or array_like of int
        Lane id in the warp (0..31) and 32-bit register index; broadcast.
    taddr : int
        The 32-bit TMEM address ``(lane << 16) | column`` given to the instruction.
    warp : int or array_like of int
        CTA-linear warp index of the issuing warp (only ``warp % 4`` matters).
    row_imm, col_imm : int or array_like of int, optional
        Lane / column offsets added to the address fields (PTX row immediate);
        broadcast like ``t`` and ``r``.
    split : int, optional
        ``immHalfSplitoff`` of ``16x32bx2``.

    Returns
    -------
    (lane, col) : tuple of numpy.ndarray (int64)
        Absolute TMEM lane (0..127) and 32-bit column.

    Raises
    ------
    ValueError
        For an unknown shape.

    See Also
    --------
    quadrant_mismatch : the ``--strict`` ownership test.
    """
    _check_shape(shape)
    t = np.asarray(t, dtype=np.int64)
    taddr = int(taddr) & 0xFFFFFFFF
    row, col = cell_offsets(shape, t, r)
    if shape == "16x32bx2":
        taddr2 = (taddr + int(split)) & 0xFFFFFFFF
        hi = np.broadcast_to(t, row.shape) >= 16
        lane_field = np.where(hi, (taddr2 >> 16) & 31, (taddr >> 16) & 31)
        col_field = np.where(hi, taddr2 & 0xFFFF, taddr & 0xFFFF)
    else:
        lane_field = np.int64((taddr >> 16) & 31)
        col_field = np.int64(taddr & 0xFFFF)
    warp = np.asarray(warp, dtype=np.int64)
    lane = 32 * (warp % 4) + lane_field + np.asarray(row_imm, dtype=np.int64) + row
    col = col_field + np.asarray(col_imm, dtype=np.int64) + col
    lane, col = np.broadcast_arrays(lane, col)
    return np.array(lane, dtype=np.int64), np.array(col, dtype=np.int64)


def quadrant_mismatch(taddr, warp):
    """Whether the address's lane quadrant contradicts the issuing warp (strict mode).

    NVIDIA's debug guardrail (``ptxas -g-tmem-access-check``) traps unless
    ``((taddr >> 21) & 3) == warp % 4``.  Production code passes quadrant 0
    from all warps (the hardware uses the warp's own quadrant, PTX
    PTX ISA 9.0 §9.7.16.8.1), so tilemagic flags only quadrants that are
    neither 0 nor ``warp % 4`` (behaviour unmeasured on hardware).

    Parameters
    ----------
    taddr : int or array_like of int
        32-bit TMEM address.
    warp : int or array_like of int
        CTA-linear warp index.

    Returns
    -------
    bool or numpy.ndarray of bool
        ``((taddr >> 21) & 3) not in (0, warp % 4)``; a plain ``bool`` for
        scalar inputs.
    """
    quad = (np.asarray(taddr, dtype=np.int64) >> 21) & 3
    w = np.asarray(warp, dtype=np.int64) % 4
    out = (quad != 0) & (quad != w)
    return bool(out) if out.ndim == 0 else out


def alloc_columns(ncols_needed: int) -> int:
    """The ``tcgen05.alloc`` column count for a buffer needing ``ncols_needed`` columns.

    Parameters
    ----------
    ncols_needed : int
        32-bit TMEM columns the buffer spans (0 is allowed and gives 32).

    Returns
    -------
    int
        The smallest power of two ``>= max(32, ncols_needed)``: one of
        :data:`ALLOC_COLS` (PTX ISA 9.0 §9.7.16.7.1: nCols is a power of two in [32, 512]).

    Raises
    ------
    ValueError
        When ``ncols_needed`` is negative or exceeds the 512 TMEM columns.
    """
    n = int(ncols_needed)
    if n < 0:
        raise ValueError(f"tcgen05.alloc: column count must be >= 0, got {ncols_needed}")
    if n > TMEM_COLS:
        raise ValueError(
            f"tcgen05.alloc: {n} columns exceed the {TMEM_COLS} TMEM columns of a CTA "
            f"(PTX ISA 9.0 §9.7.16.7.1: nCols must be a power of two in [32, 512])"
        )
    for c in ALLOC_COLS:
        if c >= n:
            return c
    raise AssertionError("unreachable")  # pragma: no cover


#: Status codes of the TMEM emulation (``tm_status[0]``) and of the simulator -> message; ``{1}``, ``{2}``,
#: ``{3}`` are ``tm_status[1..3]`` (the CUDA emulation and :mod:`tilemagic.sim.tmem` raise the same text).
EMU_STATUS = {
    1: "tcgen05.alloc of {1} columns: nCols must be a power of two in [32, 512] (PTX ISA 9.0 §9.7.16.7.1)",
    2: ("tcgen05.alloc of {1} columns by warp {2} after tcgen05.relinquish_alloc_permit "
        "(illegal, PTX ISA 9.0 §9.7.16.7.1)"),
    3: "tcgen05.alloc of {1} columns cannot be satisfied: TMEM is full (the hardware would spin forever)",
    4: "tcgen05.dealloc of {2} columns at column {1} does not match an allocation",
    5: "tcgen05.ld/st by thread {1} touches TMEM lane {2}, column {3}: outside the allocated columns",
    6: "strict: thread {1}'s TMEM address has lane quadrant {2} but it runs in warp {3} "
       "(PTX ISA 9.0 §9.7.16.8.1: a warp reaches only its own lane quadrant; the address's quadrant bits must be "
       "0 or warp_id % 4)",
    7: "TMEM still allocated at kernel exit (slot mask {1:#x}): missing tcgen05.dealloc",
    8: "tcgen05 instruction issued by a partial warp (thread {1}); .sync.aligned needs all 32 lanes",
    9: "tcgen05.dealloc by warp {1}, but warp {2} allocated (the same warp must alloc and dealloc)",
    # tcgen05.cp (shared -> TMEM): the CUDA emulation's ``tm_emu_cp`` and the simulator
    10: ("tcgen05.cp: invalid shared-memory descriptor (version bits {1}, layout type {2}, base offset {3}): "
         "PTX ISA 9.0 §9.7.16.4.1 needs bits 46-48 = 0b001 and a layout type of 0, 2, 4 or 6 (1 is not modelled; "
         "3, 5 and 7 are invalid), and only base offset 0 is modelled"),
    11: ("tcgen05.cp reads 16 bytes at shared address {1} (row {2}, chunk {3}): outside the CTA's "
         "shared-memory window"),
    12: "tcgen05.cp writes TMEM lane {2}, column {3} (source row {1}): outside the allocated columns",
    13: ("tcgen05.cp to TMEM column {1}: not a multiple of 4 (a 16-byte chunk fills 4 aligned 32-bit columns; "
         "TVM 0.27's smem->tmem rule)"),
    14: ("tcgen05.cp: descriptor LBO mode {1} (bit 52): only mode 0, a relative LBO, is modelled "
         "(mode 1 is sm_103a's absolute LBO, PTX ISA 9.0 §9.7.16.4.1)"),
}
#: Targets whose ptxas accepts tcgen05 (checked with ptxas 13.0: sm_101a, sm_120a, sm_100, sm_90 are
#: rejected).
TCGEN05_ARCHS: tuple[str, ...] = ("sm_100a", "sm_100f", "sm_103a", "sm_103f", "sm_110a", "sm_110f")


# ----------------------------------------------------------------------------- tcgen05.cp (shared -> TMEM)

@_dataclass(frozen=True)
class CpShape:
    """One ``.shape[.multicast]`` of ``tcgen05.cp`` (PTX ISA 9.0 §9.7.16.9.1, Table 51): which rows of the
    shared-memory matrix it reads and which TMEM lanes they land in.

    Attributes
    ----------
    shape : str
        ``128x256b``, ``4x256b``, ``128x128b``, ``64x128b`` or ``32x128b`` (rows x bits per row).
    multicast : str
        ``""``, ``warpx2::02_13``, ``warpx2::01_23`` or ``warpx4``.
    rows : int
        Rows of the source matrix one instruction reads.
    bits : int
        Bits per row (128 or 256): ``bits // 128`` 16-byte chunks, ``bits // 32`` 32-bit TMEM columns.
    lane_of_row : tuple of int
        The TMEM lane of row ``r``, relative to the address's lane.
    replicas : tuple of int
        Lane offsets at which every row is written again (0 first): the multicast's copies.

    Notes
    -----
    The row -> lane maps are TVM TIRx's ``_cp_lane_replica_pattern`` (``apache-tvm 0.27.0.post1``), which TVM's
    B200 round-trip tests hold bit-exact, and CUTLASS's ``SM100_UTCCP_*`` ``ValID`` layouts; the ISA gives them
    as figures (§9.7.16.9.1).
    """

    shape: str
    multicast: str
    rows: int
    bits: int
    lane_of_row: tuple[int, ...]
    replicas: tuple[int, ...]

    @property
    def key(self) -> str:
        """``shape`` or ``shape.multicast``: the key of :data:`CP_SHAPES`, as in the instruction."""
        return f"{self.shape}.{self.multicast}" if self.multicast else self.shape

    @property
    def chunks(self) -> int:
        """16-byte chunks per row."""
        return self.bits // 128

    @property
    def cols(self) -> int:
        """32-bit TMEM columns per row."""
        return self.bits // 32

    @property
    def lanes(self) -> tuple[int, ...]:
        """Every lane one instruction writes (relative), sorted."""
        return tuple(sorted({lane + o for lane in self.lane_of_row for o in self.replicas}))

    @property
    def lane_footprint(self) -> int:
        """1 + the highest relative lane written: the address's lane plus this must stay within 128 lanes."""
        return max(self.lanes) + 1


def _cp(shape: str, multicast: str, rows: int, bits: int, lane, replicas) -> CpShape:
    return CpShape(shape, multicast, rows, bits, tuple(lane(r) for r in range(rows)), tuple(replicas))


#: every ``tcgen05.cp`` shape/multicast pair, in the order TVM 0.27's planner tries them (widest first)
CP_SHAPES: dict[str, CpShape] = {c.key: c for c in (
    _cp("128x256b", "", 128, 256, lambda r: r, (0,)),
    _cp("4x256b", "", 4, 256, lambda r: 32 * r, (0,)),
    _cp("128x128b", "", 128, 128, lambda r: r, (0,)),
    _cp("64x128b", "warpx2::02_13", 64, 128, lambda r: r, (0, 64)),
    _cp("64x128b", "warpx2::01_23", 64, 128, lambda r: r if r < 32 else r + 32, (0, 32)),
    _cp("32x128b", "warpx4", 32, 128, lambda r: r, (0, 32, 64, 96)),
)}
#: the multicast qualifiers each shape allows (PTX ISA 9.0 §9.7.16.9.1): none, one of two (required), implied
CP_MULTICAST: dict[str, tuple[str, ...]] = {
    "128x256b": ("",), "4x256b": ("",), "128x128b": ("",),
    "64x128b": ("warpx2::02_13", "warpx2::01_23"), "32x128b": ("warpx4",),
}
#: ``.cta_group::N``; all tcgen05 ops of a kernel must use one N (PTX ISA 9.0 §9.7.16.6.2)
CP_CTA_GROUPS: tuple[int, ...] = (1, 2)
#: the decompression qualifiers (``.b8x16.b6x16_p32``, ``.b8x16.b4x16_p64``); their bit placement is given only as
#: figures in the ISA, and TVM 0.27 rejects them: tilemagic declines them with that reason
CP_DECOMPRESS: tuple[str, ...] = ("b8x16.b6x16_p32", "b8x16.b4x16_p64")
#: TMEM columns must start on a multiple of 4 cells (128 bits) for ``tcgen05.cp`` (TVM 0.27's rule)
CP_COL_ALIGN = 4


def cp_chain(key: str, cta_group: int = 1) -> str:
    """``tcgen05.cp.cta_group::N.<shape>[.<multicast>]`` for a :data:`CP_SHAPES` key."""
    return f"tcgen05.cp.cta_group::{cta_group}.{CP_SHAPES[key].key}"


def commit_chain(cta_group: int = 1, multicast: bool = False) -> str:
    """``tcgen05.commit.cta_group::N.mbarrier::arrive::one.shared::cluster[.multicast::cluster].b64``
    (PTX ISA 9.0 §9.7.16.12.1)."""
    mc = ".multicast::cluster" if multicast else ""
    return f"tcgen05.commit.cta_group::{cta_group}.mbarrier::arrive::one.shared::cluster{mc}.b64"


def cp_cells(key: str, lane0: int = 0, col0: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Where one ``tcgen05.cp`` writes: ``(lanes, cols)``.

    Returns
    -------
    lanes : numpy.ndarray of int64, shape (rows, replicas)
        The TMEM lane of row ``r``, replica ``k``: ``lane0 + lane_of_row[r] + replicas[k]``.
    cols : numpy.ndarray of int64, shape (chunks, 4)
        The 32-bit TMEM column of word ``w`` of 16-byte chunk ``j``: ``col0 + 4 j + w`` (the chunk's four
        little-endian 32-bit words in order).
    """
    c = CP_SHAPES[key]
    lanes = lane0 + np.asarray(c.lane_of_row, np.int64)[:, None] + np.asarray(c.replicas, np.int64)[None, :]
    cols = col0 + np.arange(c.chunks * 4, dtype=np.int64).reshape(c.chunks, 4)
    return lanes, cols
