"""CPU model of one CTA's tensor memory: 128 lanes × 512 columns of 32-bit cells.

Allocation follows tilemagic's TMEM model (allocation per PTX ISA 9.0 §9.7.16.7.1): 16 slots of 32
columns, aligned first fit, exact (start, size) match on dealloc, the relinquish
flag, leaks reported at exit.  Accesses apply the quadrant rule (PTX ISA 9.0 §9.7.16.8.1): the lane
quadrant comes from the issuing warp (warp_id % 4), the address's lane field
selects within it.  Errors carry the same messages as the CUDA emulation
(:data:`tilemagic.arch.tcgen05.EMU_STATUS`).
"""

from __future__ import annotations

import numpy as np

from ..errors import LaunchError, Span
from ..arch import tcgen05 as tc


def emu_error(code: int, a=0, b=0, c=0, span=None) -> LaunchError:
    return LaunchError(tc.EMU_STATUS[code].format(None, a, b, c), span)


class TmemModel:
    """TMEM cells, allocation slots and the relinquish flag of one CTA."""

    def __init__(self, strict: bool = False):
        self.cells = np.zeros((tc.TMEM_LANES, tc.TMEM_COLS), np.uint32)
        self.slots = np.zeros(16, bool)
        self.starts = np.zeros(16, bool)  # slot that begins an allocation (what dealloc checks)
        self.alloc_warp: int | None = None
        self.alloc_span: Span | None = None  # where the last allocation was made (a missing dealloc is shown there)
        self.relinquished = False
        self.strict = strict
        self.touched = np.zeros((tc.TMEM_LANES, tc.TMEM_COLS), bool)

    # -- allocation (PTX ISA 9.0 §9.7.16.7.1)
    def alloc(self, ncols: int, warp: int, span=None) -> int:
        if ncols < 32 or ncols > 512 or ncols & (ncols - 1):
            raise emu_error(1, ncols, span=span)
        if self.relinquished:
            raise emu_error(2, ncols, warp, span=span)
        n = ncols // 32
        for s in range(0, 16 - n + 1, n):
            if not self.slots[s:s + n].any():
                self.slots[s:s + n] = True
                self.starts[s] = True
                self.alloc_warp = warp
                self.alloc_span = span
                return 32 * s
        raise emu_error(3, ncols, span=span)

    def relinquish(self):
        self.relinquished = True

    def dealloc(self, taddr: int, ncols: int, warp: int, span=None):
        col = taddr & 0xFFFF
        n = ncols // 32
        if (ncols % 32 or col % 32 or col // 32 + n > 16 or not self.starts[col // 32]
                or not self.slots[col // 32: col // 32 + n].all()):
            raise emu_error(4, col, ncols, span=span)
        if self.alloc_warp is not None and warp != self.alloc_warp:
            raise emu_error(9, warp, self.alloc_warp, span=span)
        self.slots[col // 32: col // 32 + n] = False
        self.starts[col // 32] = False

    def exit_check(self):
        """At kernel exit every allocated column must have been freed (located at the allocation)."""
        if self.slots.any():
            mask = int(sum(1 << i for i, s in enumerate(self.slots) if s))
            raise emu_error(7, mask, span=self.alloc_span)

    # -- tcgen05.cp (PTX ISA 9.0 §9.7.16.9.1)
    def check_cp(self, lanes: np.ndarray, cols: np.ndarray, thread: int, span=None) -> None:
        """The cells of one ``tcgen05.cp`` (:func:`tilemagic.arch.tcgen05.cp_cells`: lanes ``(rows, replicas)``,
        columns ``(chunks, 4)``) must be inside TMEM and in allocated columns, as a tcgen05.ld/st's (the same
        message, :data:`tilemagic.arch.tcgen05.EMU_STATUS` 5, naming tcgen05.cp).

        The first column must be a multiple of :data:`~tilemagic.arch.tcgen05.CP_COL_ALIGN` (the emulation's
        status 13, checked first as ``tm_emu_cp`` does).

        Raises
        ------
        LaunchError
            A first column not a multiple of 4, or the first lane or column outside.
        """
        if int(cols.min()) % tc.CP_COL_ALIGN:
            raise emu_error(13, int(cols.min()), span=span)
        lane_bad = lanes >= tc.TMEM_LANES
        col_bad = (cols >= tc.TMEM_COLS) | ~self.slots[np.minimum(cols, tc.TMEM_COLS - 1) // 32]
        if lane_bad.any() or col_bad.any():
            lane = int(lanes.reshape(-1)[int(np.argmax(lane_bad.reshape(-1)))]) if lane_bad.any() else int(lanes.min())
            col = int(cols.reshape(-1)[int(np.argmax(col_bad.reshape(-1)))]) if col_bad.any() else int(cols.min())
            msg = tc.EMU_STATUS[5].format(None, thread, lane, col).replace("tcgen05.ld/st", "tcgen05.cp", 1)
            if lane_bad.any():
                msg = msg.replace("outside the allocated columns", f"outside TMEM's {tc.TMEM_LANES} lanes")
            raise LaunchError(msg, span)

    # -- tcgen05.ld / tcgen05.st (PTX ISA 9.0 §9.7.16.8.3-4)
    def cells_of(self, shape, num, tids, taddr, row_imm, col_imm, span=None):
        """(lane, col) arrays of shape (len(tids), regs) for the threads ``tids`` (CTA-linear).

        The row/column immediates are first added to the address fields, as the generated
        code does (``get_tmem_addr``: lane field and column field each 16 bits), so the
        quadrant bits the strict check sees, and the lane within the warp's quadrant, are
        those of the address the instruction really gets (the emulation does the same).
        """
        nregs = tc.regs_per_thread(shape, num)
        t = (tids % 32)[:, None]
        warp = (tids // 32)[:, None]
        r = np.arange(nregs)[None, :]
        taddr = ((((taddr >> 16) + row_imm) & 0xFFFF) << 16) | ((taddr + col_imm) & 0xFFFF)
        if self.strict:
            quad = (taddr >> 21) & 3
            bad = (quad != 0) & (quad != warp[:, 0] % 4)
            if np.any(bad):
                i = int(np.argmax(bad))
                raise emu_error(6, int(tids[i]), int(quad), int(warp[i, 0]), span=span)
        taddr = taddr & ~(3 << 21)  # the quadrant comes from the warp (PTX ISA 9.0 §9.7.16.8.1)
        lane, col = tc.tmem_cell(shape, t, r, taddr, warp)
        lane = np.broadcast_to(lane, (len(tids), nregs))
        col = np.broadcast_to(col, (len(tids), nregs))
        ok = (lane < tc.TMEM_LANES) & (col < tc.TMEM_COLS)
        ok &= self.slots[np.minimum(col, tc.TMEM_COLS - 1) // 32]
        if not np.all(ok):
            i, j = np.argwhere(~ok)[0]
            raise emu_error(5, int(tids[i]), int(lane[i, j]), int(col[i, j]), span=span)
        return lane, col
