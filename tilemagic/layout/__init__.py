"""Layout algebra (TIRx ``TileLayout``) and the tcgen05 TMEM tables it is checked against.

* :mod:`.tile` -- :class:`Iter`, :class:`TileLayout` (apply, canonicalize, group,
  slice, spec text) after TVM TIRx ``tvm.tirx.layout``.
* :mod:`.factories` -- ``row_major``, ``wg_local_layout``, ``tmem_datapath_layout``,
  ``tcgen05_atom_layout`` (sizes in elements).
* :mod:`.tcgen05` -- PTX ISA §9.7.16 shape/legality tables and the per-thread
  (thread, register) -> TMEM (lane, column) mapping (columns in 32-bit cells).
"""

from . import tcgen05
from .factories import (
    ATOM_SHAPES,
    DATAPATH_ROWS,
    dtype_bits_of,
    row_major,
    tcgen05_atom_layout,
    tmem_datapath_layout,
    wg_local_layout,
)
from .tcgen05 import (
    ALLOC_COLS,
    COL_FACTOR,
    LANES,
    LEGAL_NUMS,
    NUMS,
    REGS_PER_NUM,
    SHAPES,
    TMEM_COLS,
    TMEM_LANES,
    alloc_columns,
    cell_offsets,
    cols_per_instr,
    instr_chain,
    is_legal_num,
    quadrant_mismatch,
    regs_per_thread,
    tmem_cell,
)
from .tile import AXIS_SCOPES, MEMORY_AXES, THREAD_AXES, Iter, TileLayout

__all__ = [
    "THREAD_AXES",
    "MEMORY_AXES",
    "AXIS_SCOPES",
    "Iter",
    "TileLayout",
    "row_major",
    "wg_local_layout",
    "tmem_datapath_layout",
    "tcgen05_atom_layout",
    "dtype_bits_of",
    "DATAPATH_ROWS",
    "ATOM_SHAPES",
    "tcgen05",
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
]
