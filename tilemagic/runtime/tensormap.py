"""Encode a kernel's ``CUtensorMap`` parameters on the device (``cuTensorMapEncodeTiled``, cuda-bindings).

A TMA copy (``cp.async.bulk.tensor``, PTX ISA 9.0 §9.7.9.25.5.2) names a tensor map the host encodes with the
CUDA driver's ``cuTensorMapEncodeTiled`` over the device pointer of its global buffer, and the kernel receives
by value as a ``const __grid_constant__ CUtensorMap`` parameter (128 bytes, 64-byte aligned).  The launch
(:func:`tilemagic.runtime.launch.run_on_gpu`, in the launch worker) calls :func:`encode_all` once the buffers are
allocated and passes each map as a NumPy structured scalar of 16 ``uint64`` words: CuPy copies a structured
scalar's bytes into the kernel parameter (its "custom user types").

cuda-bindings is imported lazily (the ``cuda12`` / ``cuda13`` extras install it); without it a kernel with TMA
copies cannot launch, and the error says what to install.  The driver API (cuda-bindings >= 12.8) wants the
array arguments as ``cuuint64_t`` (dims, strides) and ``cuuint32_t`` (box, element strides).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..arch import tma as hw
from ..codegen.cuda import grid_stride
from ..errors import LaunchError
from ..ir.nodes import TensorMap

#: the host image of a ``CUtensorMap``: 16 opaque 64-bit words (``sizeof == 128``)
TENSORMAP_NUMPY = np.dtype({"names": ["opaque"], "formats": [(np.uint64, (hw.TENSORMAP_BYTES // 8,))]})

NEEDS_BINDINGS = "TMA needs cuda-bindings: pip install tilemagic[cuda12] (or tilemagic[cuda13])"


def driver() -> Any:
    """``cuda.bindings.driver``, initialised.

    Raises
    ------
    LaunchError
        cuda-bindings is not installed (:data:`NEEDS_BINDINGS`), or ``cuInit`` failed.
    """
    try:
        from cuda.bindings import driver as drv
    except ImportError:
        try:  # cuda-python < 12.8 spelled it cuda.cuda
            from cuda import cuda as drv
        except ImportError:
            raise LaunchError(NEEDS_BINDINGS,
                              hint="the kernel has TMA copies (cp.async.bulk.tensor); their tensor maps are "
                                   "encoded with the CUDA driver's cuTensorMapEncodeTiled") from None
    (err,) = drv.cuInit(0)
    if int(err) != 0:
        raise LaunchError(f"cuInit failed ({err}): cannot encode tensor maps")
    return drv


def grid_map(tmap: TensorMap, ctas: int) -> TensorMap:
    """``tmap`` over the ``--bench`` grid's replicated buffer: one more, outermost dimension over the tiles.

    In the grid form (:func:`tilemagic.codegen.cuda.generate` ``grid=True``) the global buffer holds ``ctas``
    tiles back to back, tile ``b`` at element ``b * grid_stride(buf)``; the map gains dimension ``rank`` of extent
    ``ctas`` and byte stride ``grid_stride(buf) * buf.elem_bytes`` (a multiple of 16, as ``globalStrides`` must
    be), box 1, element stride 1, and the grid code's copies add the tile's coordinate
    (:func:`tilemagic.codegen.cuda.grid_tile`: ``blockIdx.x``, or the cluster's index ``blockIdx.x / C`` for a
    cluster of C CTAs, whose CTAs share one tile as they share the buffers of the single launch).  Every other
    field (base, swizzle, fill, promotion) is ``tmap``'s, so each box is the single launch's box in its own tile.

    Raises
    ------
    ValueError
        ``tmap`` already has rank :data:`tilemagic.arch.tma.MAX_RANK` (the codegen's ``grid_refusal`` keeps such a
        kernel out of the grid form).
    """
    if tmap.rank + 1 > hw.MAX_RANK:
        raise ValueError(f"tensor map {tmap.name} has rank {tmap.rank}: no room for the grid dimension")
    return dataclasses.replace(tmap, dims=(*tmap.dims, int(ctas)),
                               strides=(*tmap.strides, grid_stride(tmap.buf) * tmap.buf.elem_bytes),
                               box=(*tmap.box, 1), elem_strides=(*tmap.elem_strides, 1))


def encode_args(tmap: TensorMap, address: int) -> tuple:
    """The arguments of ``cuTensorMapEncodeTiled`` for ``tmap`` at device ``address`` (of ``tmap.buf``'s first
    element), as plain integers: ``(dataType, rank, globalAddress, globalDim, globalStrides, boxDim,
    elementStrides, interleave, swizzle, l2Promotion, oobFill)``."""
    base = address + tmap.base_elem * tmap.buf.elem_bytes
    return (hw.TENSORMAP_DTYPE_CODE[tmap.dtype], tmap.rank, base, tuple(tmap.dims), tuple(tmap.strides),
            tuple(tmap.box), tuple(tmap.elem_strides), hw.INTERLEAVE_NONE, tmap.swizzle, tmap.l2_promotion,
            tmap.oob_fill)


def encode(tmap: TensorMap, address: int, drv: Any | None = None) -> np.void:
    """The 128-byte ``CUtensorMap`` of ``tmap`` over the device buffer at ``address``.

    Raises
    ------
    LaunchError
        cuda-bindings missing, an unaligned address, or the driver refused the map (its error and every
        parameter).
    """
    drv = drv or driver()
    dt, rank, base, dims, strides, box, estr, il, sw, l2, oob = encode_args(tmap, address)
    if base % hw.GLOBAL_ALIGN:
        raise LaunchError(f"tensor map {tmap.name}: global address {base:#x} is not {hw.GLOBAL_ALIGN}-byte aligned")
    err, m = drv.cuTensorMapEncodeTiled(
        drv.CUtensorMapDataType(dt), rank, base,
        [drv.cuuint64_t(d) for d in dims], [drv.cuuint64_t(s) for s in strides],
        [drv.cuuint32_t(b) for b in box], [drv.cuuint32_t(e) for e in estr],
        drv.CUtensorMapInterleave(il), drv.CUtensorMapSwizzle(sw), drv.CUtensorMapL2promotion(l2),
        drv.CUtensorMapFloatOOBfill(oob))
    if int(err) != 0:
        raise LaunchError(f"cuTensorMapEncodeTiled refused tensor map {tmap.name} ({err})",
                          details=(f"dataType={tmap.dtype} rank={rank} globalAddress={base:#x} globalDim={list(dims)} "
                                   f"globalStrides={list(strides)} boxDim={list(box)} elementStrides={list(estr)} "
                                   f"swizzle={sw} l2Promotion={l2} oobFill={oob}"))
    out = np.zeros(1, TENSORMAP_NUMPY)
    out["opaque"][0] = np.array([int(w) for w in m.opaque], dtype=np.uint64)
    return out[0]


def encode_all(tmaps: Sequence[TensorMap], addresses: dict[str, int]) -> list[np.void]:
    """Every map of a kernel, in parameter order; ``addresses`` maps a global buffer's name to its device
    address."""
    if not tmaps:
        return []
    drv = driver()
    return [encode(m, addresses[m.buf.name], drv) for m in tmaps]
