"""The warp-level ``ldmatrix`` / ``stmatrix`` ``.m8n8 .b16`` fragment (PTX ISA, "Warp-level matrix
load instruction: ldmatrix" and "... store instruction: stmatrix").

One instruction moves ``num`` (1, 2 or 4) matrices of 8×8 16-bit elements between shared
memory and the registers of the 32 threads of a warp:

* **addresses**: each matrix row is 8 contiguous elements (16 bytes, 16-byte aligned) in
  shared memory; thread ``t`` supplies the address of row ``t % 8`` of matrix ``t // 8``
  (threads 0-7 for ``.x1``, 0-15 for ``.x2``, all 32 for ``.x4``);
* **registers**: thread ``t`` holds, in its ``i``-th destination (source) 32-bit register,
  two elements of matrix ``i``: row ``t // 4``, columns ``2 * (t % 4)`` (low 16 bits) and
  ``2 * (t % 4) + 1`` (high 16 bits);
* **.trans**: the matrix is transposed on the way: thread ``t`` holds element
  ``(row 2 * (t % 4), column t // 4)`` in the low half and ``(row 2 * (t % 4) + 1, column
  t // 4)`` in the high half, rows still being the 16-byte runs the addresses point at.

``ldmatrix`` needs sm_75, ``stmatrix`` sm_90.  The simulator and the shared-tile heatmap use
:func:`fragment_elements`; the tests check it against an independent decoder.
"""

from __future__ import annotations

import numpy as np

__all__ = ["MIN_SM", "NUMS", "ROW_ELEMS", "chain", "fragment_elements"]

NUMS = (4, 2, 1)  # matrices per instruction, widest first
ROW_ELEMS = 8  # 16-bit elements per matrix row (16 bytes)
MIN_SM = {"ld": 75, "st": 90}


def chain(op: str, num: int, trans: bool) -> str:
    """``ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16`` (``op`` is ``"ld"`` or ``"st"``)."""
    return f"{op}matrix.sync.aligned.m8n8.x{num}{'.trans' if trans else ''}.shared.b16"


def fragment_elements(rowaddr: np.ndarray, num: int, trans: bool):
    """Shared-memory element indices behind every thread's registers.

    Parameters
    ----------
    rowaddr : ndarray of int, shape (warps, 8 * num) or (warps, 32)
        The address (element index into the shared buffer) each thread of each warp supplies;
        only threads ``0 .. 8*num-1`` are read.
    num : {1, 2, 4}
    trans : bool

    Returns
    -------
    (lo, hi) : ndarrays of shape (warps, num, 32)
        ``lo[w, i, t]`` / ``hi[w, i, t]``: the element in the low / high 16 bits of register
        ``i`` of thread ``t`` of warp ``w``.
    """
    rowaddr = np.asarray(rowaddr, np.int64)
    lane = np.arange(32)
    lo = np.empty((rowaddr.shape[0], num, 32), np.int64)
    hi = np.empty_like(lo)
    for i in range(num):
        rows = rowaddr[:, 8 * i: 8 * i + 8]  # row r of matrix i comes from thread 8*i + r
        if trans:
            lo[:, i] = rows[:, 2 * (lane % 4)] + lane // 4
            hi[:, i] = rows[:, 2 * (lane % 4) + 1] + lane // 4
        else:
            lo[:, i] = rows[:, lane // 4] + 2 * (lane % 4)
            hi[:, i] = lo[:, i] + 1
    return lo, hi
