"""Checks of a cell against the target's resource limits (:mod:`tilemagic.arch.limits`), before any code
is generated or compiled: each crossing is a located error on the declaration or line that crosses it
(instead of a ptxas error, a failed launch, or a notebook that runs out of memory)."""

from __future__ import annotations

from collections.abc import Iterable

from ..arch.mbarrier import MBAR_BYTES
from ..arch.limits import TargetLimits
from ..arch.tcgen05 import alloc_columns
from ..errors import LoweringError, Span, TileTypeError


def check_threads(threads: int, span: Span | None, lim: TargetLimits) -> None:
    """Threads per CTA: 1 to ``lim.threads_per_cta``."""
    if not 1 <= threads <= lim.threads_per_cta:
        raise TileTypeError(f"threads={threads}: a CTA has 1 to {lim.threads_per_cta} threads", span)


def check_tmem_columns(need: int, tmem: Iterable, lim: TargetLimits) -> int:
    """The allocation (32-bit columns, power of two >= 32) for ``need`` columns; LoweringError past the limit."""
    if need > lim.tmem_cols:
        over = next(b for b in tmem if b.tmem_col + b.tmem_ncols > lim.tmem_cols)
        raise LoweringError(
            f"TMEM allocation of {need} 32-bit columns exceeds the {lim.tmem_cols} columns of tensor memory "
            f"('{over.name}' ends at column {over.tmem_col + over.tmem_ncols})",
            over.span, hint="shrink the buffers or alias them with `at OTHER + COLS`")
    return alloc_columns(need)


def check_buffers(buffers: Iterable, lim: TargetLimits, *, tmem_slot: bool = False) -> None:
    """Shared memory, kernel arguments and host memory of a cell's buffers (a register tile of more than
    ``lim.regs_per_thread`` registers is a warning of the pipeline, with ptxas's spill cost).

    Shared buffers are counted 16-byte aligned and rounded up to 16 bytes, mbarriers 8 bytes at 8-byte
    alignment, in declaration order.

    Parameters
    ----------
    buffers : iterable of ir.Buffer
        In declaration order (the error is located at the buffer that crosses a limit).
    tmem_slot : bool
        The kernel also declares the 16-byte-aligned shared TMEM address slot.

    Raises
    ------
    TileTypeError
    """
    bufs = list(buffers)
    shared = 16 if tmem_slot else 0
    gbytes = 0
    n_globals = 0
    for b in bufs:
        if b.scope == "shared":
            if b.is_mbarrier:  # an 8-byte mbarrier object, 8-byte aligned (PTX ISA 9.0 §9.7.13.15.1)
                shared = -(-shared // MBAR_BYTES) * MBAR_BYTES + MBAR_BYTES
            else:
                shared = -(-shared // 16) * 16 + -(-b.nbytes // 16) * 16
            if shared > lim.static_smem:
                slot = " and the 16-byte TMEM address slot" if tmem_slot else ""
                raise TileTypeError(
                    f"shared buffers{slot} need {shared} bytes up to '{b.name}'; static shared memory is limited to "
                    f"{lim.static_smem} bytes ({lim.static_smem // 1024} KiB) per CTA on {lim.arch}", b.span,
                    hint="tilemagic declares shared buffers statically (__shared__); use smaller tiles")
        elif b.scope == "global":
            n_globals += 1
            gbytes += b.nbytes
            if n_globals > lim.max_globals:
                raise TileTypeError(f"{n_globals} global buffers: a kernel takes at most {lim.max_globals} "
                                    f"(CUDA's 32 KiB of parameters)", b.span)
            if gbytes > lim.global_bytes:
                raise TileTypeError(
                    f"global buffers need {gbytes} bytes up to '{b.name}'; a cell's global buffers are limited to "
                    f"{lim.global_bytes} bytes ({lim.global_bytes >> 30} GiB) together", b.span,
                    hint="the notebook holds every global buffer's inputs and outputs; use smaller tiles")
