"""Resource limits of the target, checked before any code is generated or compiled.

One place for every per-CTA limit a description can exceed, each reported as a located
error on the declaration or line that crosses it (instead of a ptxas error, a failed
launch, or a notebook that runs out of memory):

* threads per CTA: at most 1024 on every CUDA GPU (CUDA C++ Programming Guide, "Technical
  Specifications per Compute Capability");
* shared memory per CTA: tilemagic declares shared buffers statically (``__shared__``),
  and static shared data is limited to 48 KiB on every target (ptxas rejects more, e.g.
  ``0xc000`` bytes on sm_90); the arch's larger opt-in maximum (227 KiB on sm_90/sm_100)
  is dynamic shared memory only.  The TMEM address slot (16 bytes, aligned) counts;
* registers per thread: a register tile (``local`` buffer) of a thread, in 32-bit
  registers, at most 255 (the per-thread maximum of every CUDA GPU since sm_35).  Tiles
  are checked one by one: several tiles together may exceed it (the compiler keeps the
  live ones in registers and spills the rest to local memory), one tile may not;
* tensor memory: an allocation is a power of two of at least 32 and at most 512 32-bit
  columns (PTX ISA §9.7.16.7.1);
* kernel arguments: at most 512 global buffers (CUDA's 32 764 bytes of parameters);
* host memory: a cell's global buffers together at most 1 GiB (the notebook holds their
  inputs and outputs).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import LoweringError, Span, TileTypeError

#: Largest shared memory per CTA (bytes, dynamic opt-in) by compute capability (10 * major + minor).
SMEM_PER_CTA = {70: 96 * 1024, 72: 48 * 1024, 75: 64 * 1024, 80: 163 * 1024, 86: 99 * 1024, 87: 163 * 1024,
                89: 99 * 1024, 90: 227 * 1024, 100: 227 * 1024, 101: 227 * 1024, 103: 227 * 1024, 110: 227 * 1024,
                120: 99 * 1024, 121: 99 * 1024}


@dataclass(frozen=True)
class TargetLimits:
    """Per-CTA limits of one target.

    Attributes
    ----------
    arch : str
    threads_per_cta : int
    smem_per_cta : int
        Bytes; the arch's opt-in maximum (dynamic shared memory).
    static_smem : int
        Bytes of static ``__shared__`` data (what tilemagic emits): 48 KiB, or less where
        the arch has less.
    regs_per_thread : int
        32-bit registers.
    tmem_cols : int
        32-bit TMEM columns of the allocation (emulated on GPUs without TMEM, same limit).
    max_globals : int
    global_bytes : int
        Bytes of all global buffers of a cell together.
    """

    arch: str
    threads_per_cta: int = 1024
    smem_per_cta: int = 227 * 1024
    static_smem: int = 48 * 1024
    regs_per_thread: int = 255
    tmem_cols: int = 512
    max_globals: int = 512
    global_bytes: int = 1 << 30


def limits_for(arch: str = "sm_100a") -> TargetLimits:
    """The limits of ``arch`` (``sm_100a``, ``sm_90`` ...); unknown archs get the sm_100a ones."""
    m = re.match(r"sm_(\d+)", arch or "")
    cc = int(m.group(1)) if m else 100
    smem = SMEM_PER_CTA.get(cc, 227 * 1024 if cc >= 90 else 48 * 1024)
    return TargetLimits(arch=arch, smem_per_cta=smem, static_smem=min(48 * 1024, smem))


def check_threads(threads: int, span: Span | None, lim: TargetLimits) -> None:
    """Threads per CTA: 1 to ``lim.threads_per_cta``."""
    if not 1 <= threads <= lim.threads_per_cta:
        raise TileTypeError(f"threads={threads}: a CTA has 1 to {lim.threads_per_cta} threads", span)


def check_tmem_columns(need: int, tmem: Iterable, lim: TargetLimits) -> int:
    """The allocation (32-bit columns, power of two >= 32) for ``need`` columns; LoweringError past the limit."""
    from ..layout.tcgen05 import alloc_columns

    if need > lim.tmem_cols:
        over = next(b for b in tmem if b.tmem_col + b.tmem_ncols > lim.tmem_cols)
        raise LoweringError(
            f"TMEM allocation of {need} 32-bit columns exceeds the {lim.tmem_cols} columns of tensor memory "
            f"('{over.name}' ends at column {over.tmem_col + over.tmem_ncols})",
            over.span, hint="shrink the buffers or alias them with `at OTHER + COLS`")
    return alloc_columns(need)


def check_buffers(buffers: Iterable, lim: TargetLimits, *, tmem_slot: bool = False) -> None:
    """Shared memory, registers per thread, kernel arguments and host memory of a cell's buffers.

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
            shared += -(-b.nbytes // 16) * 16
            if shared > lim.static_smem:
                slot = " and the 16-byte TMEM address slot" if tmem_slot else ""
                raise TileTypeError(
                    f"shared buffers{slot} need {shared} bytes up to '{b.name}'; static shared memory is limited to "
                    f"{lim.static_smem} bytes ({lim.static_smem // 1024} KiB) per CTA on {lim.arch}", b.span,
                    hint="tilemagic declares shared buffers statically (__shared__); use smaller tiles")
        elif b.scope == "local":
            words = -(-b.nbytes // 4)
            if words > lim.regs_per_thread:
                raise TileTypeError(
                    f"register tile '{b.name}' needs {words} 32-bit registers per thread; a thread has at most "
                    f"{lim.regs_per_thread}", b.span,
                    hint="spread the tile over more threads (a wider thread axis) or use smaller tiles")
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
