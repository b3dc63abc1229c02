"""Tensor Memory Accelerator facts: ``CUtensorMap`` rules and limits, data types, swizzle modes, cache hints.

Every TMA hardware fact tilemagic uses is written here once; the ``tma_auto`` / ``tma_explicit``
variants (:mod:`tilemagic.lower.copy_async.tma`), the CUDA generator and the runtime's encoder read them.

Sources: the CUDA driver API's ``cuTensorMapEncodeTiled`` (its documented parameter rules), PTX ISA 9.0
§5.5 (tensor data in memory: bounding box, out-of-bound access, §5.5.7 the swizzle modes) and
§9.7.9.25.5.2 (``cp.async.bulk.tensor``); the rule names and the order they are checked in follow TVM TIRx's
``validate_tensor_map_spec`` (``apache-tvm 0.27.0.post1``, ``backend/cuda/tile_primitive/copy_async/tma.py``).

Swizzle
-------
Mode ``B`` (1, 2, 3 for 32B, 64B, 128B) XORs bits ``[7, 7 + B)`` of the shared-memory *byte* address into bits
``[4, 4 + B)``: ``a ^ (((a >> 7) & (2**B - 1)) << 4)`` (PTX ISA 9.0 §5.5.7); 16-byte chunks keep their
contents and the pattern repeats every ``2**(7 + B)`` bytes.  That is tilemagic's XOR swizzle
(:func:`tilemagic.layout.swizzle.xor_swizzle`) with ``per_element=4, swizzle_len=B, atom_len=3`` on byte
addresses, or, in elements of ``E`` bytes, ``per_element=log2(16 / E)`` on element offsets from a
pattern-aligned base: :func:`swizzle_params` gives those parameters, and a shared layout is a TMA layout
exactly when its ``swizzle(...)`` has them (TVM 0.27 only compares ``swizzle_len``).  The hardware applies the
pattern to absolute addresses, so a swizzled buffer must start on a pattern boundary
(:func:`shared_alignment`).
"""

from __future__ import annotations

from dataclasses import dataclass

#: ``CUtensorMapDataType`` (CUDA driver API) member -> its enum value.
TENSORMAP_DTYPE_CODE: dict[str, int] = {
    "UINT8": 0, "UINT16": 1, "UINT32": 2, "INT32": 3, "UINT64": 4, "INT64": 5, "FLOAT16": 6, "FLOAT32": 7,
    "FLOAT64": 8, "BFLOAT16": 9, "FLOAT32_FTZ": 10, "TFLOAT32": 11, "TFLOAT32_FTZ": 12,
    "16U4_ALIGN8B": 13, "16U4_ALIGN16B": 14, "16U6_ALIGN16B": 15,
}

#: tilemagic dtype -> ``CUtensorMapDataType`` member (TVM's ``_dtype_contract``: int8 travels as UINT8,
#: the bytes are the same).  ``uint64`` is only an mbarrier's type in the language, never a tensor's.
DTYPE_TO_TENSORMAP: dict[str, str] = {
    "uint8": "UINT8", "int8": "UINT8", "float16": "FLOAT16", "bfloat16": "BFLOAT16", "float32": "FLOAT32",
    "int32": "INT32", "uint32": "UINT32",
}

#: Descriptor unit promotion (TVM ``_PROMOTE_DTYPE``): element bytes -> the next wider unsigned unit.
PROMOTE: dict[int, tuple[str, int]] = {1: ("UINT16", 2), 2: ("UINT32", 4), 4: ("UINT64", 8)}

#: Descriptor data types whose out-of-bound elements may be filled with NaN (``oob=nan``).
FLOAT_TENSORMAP_DTYPES = frozenset({"FLOAT16", "BFLOAT16", "FLOAT32", "FLOAT64", "TFLOAT32"})

# limits of cuTensorMapEncodeTiled
MAX_RANK = 5
MAX_BOX = 256
MAX_GLOBAL_DIM = 1 << 32
MAX_STRIDE = 1 << 40  # globalStrides[i] < 2**40
STRIDE_ALIGN = 16  # globalStrides multiple of 16 bytes (non-interleaved, non-packed)
GLOBAL_ALIGN = 16  # globalAddress 16-byte aligned
MAX_ELEMENT_STRIDE = 8
INNER_BOX_ALIGN = 16  # boxDim[0] * elementSize multiple of 16 bytes
TENSORMAP_BYTES = 128  # sizeof(CUtensorMap)
TENSORMAP_ALIGN = 64  # alignof(CUtensorMap)
MIN_SM = 90  # cp.async.bulk.tensor: sm_90 or newer (PTX ISA 9.0 §9.7.9.25.5.2)


@dataclass(frozen=True)
class SwizzleMode:
    """One ``CUtensorMapSwizzle`` mode of tile mode.

    Attributes
    ----------
    code : int
        The enum value (``CU_TENSOR_MAP_SWIZZLE_<name>``); also the number of XOR-ed address bits ``B``.
    name : str
        ``NONE``, ``32B``, ``64B``, ``128B``.
    span : int
        The widest inner box dimension in bytes (``boxDim[0] * elementSize <= span``); None: unlimited.
    period : int
        Bytes after which the XOR pattern repeats: the alignment of a buffer using it (PTX ISA 9.0 §5.5.7).
    atom : int
        The shared slice pointer alignment TVM requires (16/32/64/128 B).
    """

    code: int
    name: str
    span: int | None
    period: int
    atom: int


SWIZZLE_MODES: dict[int, SwizzleMode] = {
    0: SwizzleMode(0, "NONE", None, 16, 16),
    1: SwizzleMode(1, "32B", 32, 256, 32),
    2: SwizzleMode(2, "64B", 64, 512, 64),
    3: SwizzleMode(3, "128B", 128, 1024, 128),
}

#: ``CUtensorMapL2promotion``: 0 none, 1 64B, 2 128B (TVM's default), 3 256B.
L2_PROMOTION = {"none": 0, "L2::64B": 1, "L2::128B": 2, "L2::256B": 3}
DEFAULT_L2_PROMOTION = 2
#: ``CUtensorMapFloatOOBfill`` by the language's ``oob=`` value: zero (``NONE``) or NaN
#: (``NAN_REQUEST_ZERO_FMA``), PTX ISA 9.0 §5.5.3.3.
OOB_FILL = {"zero": 0, "nan": 1}
#: The bits the TMA unit writes for a G2S out-of-bound element of a float map under ``oob=nan``
#: (``CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA``, PTX ISA 9.0 §5.5.3.3, which says only "NaN"), by
#: ``CUtensorMapDataType`` member.  Measured on the H200 (``docs/gpu-runs.md``, 2026-12-01): ``0x7ff7`` in every
#: 16-bit unit — float16 and bfloat16 ``0x7ff7``, float32 ``0x7ff77ff7`` — not the canonical quiet NaN.  The 32-bit
#: TF32 forms and float64 were not measured; they follow the same 16-bit pattern.  Read by the simulator's
#: :func:`tilemagic.sim.asyncmodel.tma_g2s_data`.
OOB_NAN_BITS: dict[str, int] = {
    "FLOAT16": 0x7FF7, "BFLOAT16": 0x7FF7, "FLOAT32": 0x7FF77FF7, "FLOAT32_FTZ": 0x7FF77FF7,
    "TFLOAT32": 0x7FF77FF7, "TFLOAT32_FTZ": 0x7FF77FF7, "FLOAT64": 0x7FF77FF77FF77FF7,
}
#: ``CUtensorMapInterleave``: tilemagic plans only ``NONE``.
INTERLEAVE_NONE = 0

#: Named L2 cache-eviction policies (TVM ``op.py``): the 64-bit ``cache-policy`` operand of ``.L2::cache_hint``.
CACHE_HINTS: dict[str, int] = {
    "evict_normal": 0x1000000000000000,
    "evict_first": 0x12F0000000000000,
    "evict_last": 0x14F0000000000000,
}

#: ``cp.reduce.async.bulk.tensor`` (TMA S2G reduction, PTX ISA 9.0 §9.7.9.25.5.3): operation -> the element
#: types it is defined on (tilemagic dtype names; ``.add`` on f16/bf16 with ``.noftz``).  TVM 0.27's
#: ``use_tma_reduce`` accepts the same operation names.
TMA_REDUCE_OPS: dict[str, tuple[str, ...]] = {
    "add": ("uint32", "int32", "uint64", "float32", "float16", "bfloat16"),
    "min": ("uint32", "int32", "uint64", "int64", "float16", "bfloat16"),
    "max": ("uint32", "int32", "uint64", "int64", "float16", "bfloat16"),
    "inc": ("uint32",),
    "dec": ("uint32",),
    "and": ("int32", "uint32", "int64", "uint64"),
    "or": ("int32", "uint32", "int64", "uint64"),
    "xor": ("int32", "uint32", "int64", "uint64"),
}



def reduce_refusal(op: str, dtype: str) -> str | None:
    """Why ``cp.reduce.async.bulk.tensor`` with operation ``op`` cannot reduce ``dtype`` elements (None: it can).

    The operations and their element types are PTX ISA 9.0 §9.7.9.25.5.3's (:data:`TMA_REDUCE_OPS`); the element
    type is the tensor map's, so a reduction never promotes the descriptor unit (TVM 0.27's rule too).
    """
    if op not in TMA_REDUCE_OPS:
        return f"unsupported TMA reduce operation {op!r} (one of {', '.join(TMA_REDUCE_OPS)})"
    if dtype not in TMA_REDUCE_OPS[op]:
        return (f"use_tma_reduce={op} is not defined on {dtype} (cp.reduce.async.bulk.tensor .{op} takes "
                f"{', '.join(TMA_REDUCE_OPS[op])}; PTX ISA 9.0 §9.7.9.25.5.3)")
    return None


#: Every shared buffer a TMA copy touches is aligned at least this much, and so is the shared address of every
#: ``cp.async.bulk.tensor`` issue: the CUDA C++ Programming Guide's alignment table for multi-dimensional TMA
#: (PTX ISA 9.0 asks 16 B).  The H200 (sm_90a) faults with ``cudaErrorMisalignedAddress`` on a box at a 16-byte
#: step (docs/gpu-runs.md); TVM 0.27's planner accepts one (it checks only the swizzle atom).
SHARED_MIN_ALIGN = 128


def swizzle_params(mode: int, elem_bytes: int) -> tuple[int, int, int]:
    """``(per_element, swizzle_len, atom_len)`` of swizzle ``mode`` on element offsets of ``elem_bytes``-byte
    elements: the ``swizzle(...)`` layout parameters equal to the hardware permutation (PTX ISA 9.0 §5.5.7).

    Raises
    ------
    ValueError
        ``mode`` not 0..3, or an element wider than a 16-byte chunk.
    """
    if mode not in SWIZZLE_MODES:
        raise ValueError(f"swizzle mode {mode} is not one of {sorted(SWIZZLE_MODES)}")
    if elem_bytes not in (1, 2, 4, 8, 16):
        raise ValueError(f"element of {elem_bytes} bytes does not divide a 16-byte swizzle chunk")
    return (16 // elem_bytes).bit_length() - 1, mode, 3


def box_traversal(box, elem_strides) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``(counts, steps)``: per dimension (CUDA order) how many elements a tile-mode box traverses and the step
    between their coordinates — ``ceil(box[i] / elem_strides[i])`` elements at ``coords[i] + k * elem_strides[i]``,
    with ``elem_strides[0]`` taken as 1 as for every non-interleaved map (the driver's ``cuTensorMapEncodeTiled``
    documentation; PTX ISA 9.0 §5.5.3.2)."""
    steps = (1,) + tuple(int(e) for e in elem_strides[1:len(box)])
    return tuple(-(-int(b) // s) for b, s in zip(box, steps)), steps


def shared_alignment(mode: int) -> int:
    """The byte alignment a shared buffer that TMA moves with swizzle ``mode`` needs: the pattern period
    (1024/512/256 B for 128B/64B/32B), at least :data:`SHARED_MIN_ALIGN`."""
    return max(SHARED_MIN_ALIGN, SWIZZLE_MODES[mode].period if mode else 0)


@dataclass(frozen=True)
class Finding:
    """One broken rule of :func:`validate`: its TVM rule name, and the message."""

    rule: str
    message: str

    def __str__(self) -> str:
        return f"{self.rule}: {self.message}"


#: The rules a descriptor unit promotion may repair (TVM ``_REPAIRABLE_RULES``).
REPAIRABLE_RULES = frozenset({"rank", "global_stride_alignment", "box_dim", "inner_box_bytes"})


def validate(*, dtype: str, elem_bytes: int, dims, strides, box, elem_strides, swizzle: int,
             oob_fill: int = 0, l2_promotion: int = DEFAULT_L2_PROMOTION, base_bytes: int = 0,
             sm: int = MIN_SM) -> list[Finding]:
    """The rules of ``cuTensorMapEncodeTiled`` (and of TMA's target) a tile-mode map breaks; ``[]`` when legal.

    Parameters
    ----------
    dtype : str
        ``CUtensorMapDataType`` member (``FLOAT16``, ``UINT32``, ...).
    elem_bytes : int
        Bytes of one descriptor element.
    dims, strides, box, elem_strides : sequence of int
        CUDA order (dimension 0 innermost): ``globalDim`` (elements), ``globalStrides`` (bytes, dims 1..), ``boxDim``,
        ``elementStrides``.
    swizzle, oob_fill, l2_promotion : int
        The enum values.
    base_bytes : int
        Byte offset of the map's origin from its buffer's (16-byte aligned) base.
    sm : int
        The target's SM version.

    Returns
    -------
    list of Finding
        In TVM's order; the rule names are TVM's (``rank``, ``global_stride_alignment``, ``box_dim``,
        ``inner_box_bytes``, ``swizzle_inner_box``, ...).
    """
    out: list[Finding] = []

    def rule(name: str, ok: bool, msg: str) -> None:
        if not ok:
            out.append(Finding(name, msg))

    rank = len(dims)
    rule("rank", 1 <= rank <= MAX_RANK, f"descriptor rank must be in [1, {MAX_RANK}], got {rank}")
    rule("dtype", dtype in TENSORMAP_DTYPE_CODE, f"unsupported descriptor dtype {dtype}")
    rule("array_lengths", len(box) == rank and len(elem_strides) == rank and len(strides) == max(rank - 1, 0),
         "TensorMap arrays must contain rank global dimensions, boxes and element strides, plus rank-1 byte strides")
    rule("global_base_alignment", base_bytes % GLOBAL_ALIGN == 0,
         f"view base byte offset {base_bytes} must preserve {GLOBAL_ALIGN}B global alignment")
    for i, d in enumerate(dims):
        rule("global_dim", 0 < d <= MAX_GLOBAL_DIM, f"globalDim[{i}]={d} must be in (0, 2^32]")
    for i, s in enumerate(strides):
        rule("global_stride_range", 0 <= s < MAX_STRIDE, f"globalStrides[{i}]={s} must be in [0, 2^40)")
        rule("global_stride_alignment", s % STRIDE_ALIGN == 0,
             f"globalStrides[{i}]={s} must be a multiple of {STRIDE_ALIGN}B")
    for i, b in enumerate(box):
        rule("box_dim", 1 <= b <= MAX_BOX, f"boxDim[{i}]={b} must be in [1, {MAX_BOX}]")
    for i, e in enumerate(elem_strides):
        rule("element_stride", 1 <= e <= MAX_ELEMENT_STRIDE, f"elementStride[{i}]={e} must be in [1, 8]")
    if elem_strides:
        rule("inner_stride", elem_strides[0] == 1, f"innermost elementStride must be 1, got {elem_strides[0]}")
    rule("swizzle", swizzle in SWIZZLE_MODES, f"swizzle enum {swizzle} is invalid")
    rule("l2_promotion", l2_promotion in L2_PROMOTION.values(), f"L2 promotion enum {l2_promotion} is invalid")
    rule("oob", oob_fill in OOB_FILL.values(), f"OOB enum {oob_fill} is invalid")
    if box:
        inner = box[0] * elem_bytes
        rule("inner_box_bytes", inner % INNER_BOX_ALIGN == 0,
             f"innermost box is {inner}B; non-interleaved TensorMaps require a {INNER_BOX_ALIGN}B multiple")
        span = SWIZZLE_MODES[swizzle].span if swizzle in SWIZZLE_MODES else None
        if span is not None:
            rule("swizzle_inner_box", inner <= span, f"innermost box {inner}B exceeds the {span}B swizzle atom")
    if oob_fill == 1:
        rule("nan_oob_dtype", dtype in FLOAT_TENSORMAP_DTYPES,
             "NaN OOB fill requires a non-packed floating-point descriptor")
    rule("target", sm >= MIN_SM, f"TMA requires sm_{MIN_SM} or newer, got sm_{sm}")
    return out
