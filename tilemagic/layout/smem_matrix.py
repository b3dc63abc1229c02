"""The shared-memory matrix a tcgen05 descriptor describes: which bytes ``tcgen05.cp`` reads.

The K-major canonical layout of PTX ISA 9.0 §9.7.16.3.3 read through the descriptor of §9.7.16.4.1 (fields in
:mod:`tilemagic.arch.smem_desc`): row ``r`` and 16-byte chunk ``j`` of the copied matrix start at

``a = start + (r % 8) * pitch + (r // 8) * SBO + j * (LBO if not swizzled else 16)``

with ``pitch`` the layout type's row pitch (16 B unswizzled, 32/64/128 B for the 32B/64B/128B swizzles), and a
swizzled layout moves the chunk by the XOR of the absolute address's bits [7, 7+B) into bits [4, 4+B)
(:func:`tilemagic.layout.swizzle.xor_swizzle` on byte addresses with 16-byte chunks and 128-byte lines, the TMA
swizzle of PTX ISA 9.0 §5.5.7).  TVM TIRx's ``smem->tmem`` planner (``apache-tvm 0.27.0.post1``) encodes exactly
this model.  This module is the one implementation the simulator, the lowering's checks and the pictures use; the
CUDA emulation restates it in C (``codegen/tmem_emulation.cuh``) and the tests hold both to an independent decoder.
"""

from __future__ import annotations

import numpy as np

from ..arch import smem_desc as _desc
from .swizzle import xor_swizzle

__all__ = ["cp_source_addresses"]


def cp_source_addresses(desc: _desc.SmemDescriptor, rows: int, chunks: int) -> np.ndarray:
    """The absolute shared byte address of every 16-byte chunk ``tcgen05.cp`` reads through ``desc``.

    Parameters
    ----------
    desc : SmemDescriptor
        A decoded descriptor (:func:`tilemagic.arch.smem_desc.decode`); start, LBO and SBO in bytes.
    rows, chunks : int
        The shape's rows and 16-byte chunks per row (:class:`tilemagic.arch.tcgen05.CpShape`).

    Returns
    -------
    numpy.ndarray of int64, shape (rows, chunks)
        Byte addresses in the CTA's shared window; each chunk is 16 bytes from there.

    Raises
    ------
    ValueError
        The layout type is ``128B_base32B`` or invalid, or the base offset is not 0 (what the hardware makes of
        those is not established here; tilemagic never encodes them).
    """
    if desc.layout not in _desc.SWIZZLE_BITS:
        raise ValueError(f"descriptor layout type {desc.layout} ({desc.layout_name}): its walk is not modelled")
    if desc.base_offset:
        raise ValueError(f"descriptor base offset {desc.base_offset}: only 0 is modelled")
    r = np.arange(rows, dtype=np.int64)[:, None]
    j = np.arange(chunks, dtype=np.int64)[None, :]
    pitch = _desc.ROW_PITCH[desc.layout]
    step = 16 if desc.swizzled else desc.lbo
    a = desc.start + (r % 8) * pitch + (r // 8) * desc.sbo + j * step
    bits = _desc.SWIZZLE_BITS[desc.layout]
    return xor_swizzle(a, 4, bits, 3) if bits else a
