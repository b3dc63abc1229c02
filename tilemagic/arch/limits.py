"""Per-CTA resource limits of a target (checked by :mod:`tilemagic.lower.limits`):

* threads per CTA: at most 1024 on every CUDA GPU (CUDA C++ Programming Guide, "Technical
  Specifications per Compute Capability");
* shared memory per CTA: tilemagic declares shared buffers statically (``__shared__``),
  and static shared data is limited to 48 KiB on every target (ptxas rejects more, e.g.
  ``0xc000`` bytes on sm_90); the arch's larger opt-in maximum (227 KiB on sm_90/sm_100)
  is dynamic shared memory only.  The TMEM address slot (16 bytes, aligned) counts;
* registers per thread: a thread has at most 255 32-bit registers (every CUDA GPU since
  sm_35).  A register tile (``local`` buffer) that needs more is accepted with a located
  warning carrying what ptxas makes of it (the tile lives partly on the stack: local
  memory; registers, stack and spill bytes from ``ptxas -v``); the checker caps a tile at
  8192 elements per thread (``lower/program.py``), far below the 512 KiB of local memory a
  thread has;
* tensor memory: an allocation is a power of two of at least 32 and at most 512 32-bit
  columns (PTX ISA 9.0 §9.7.16.7.1);
* kernel arguments: at most 512 global buffers (CUDA's 32 764 bytes of parameters);
* host memory: a cell's global buffers together at most 1 GiB (the notebook holds their
  inputs and outputs).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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
        32-bit registers (a larger register tile is a warning, see the module docstring).
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
