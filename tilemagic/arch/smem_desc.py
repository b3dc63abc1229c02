"""The tcgen05 shared-memory matrix descriptor (PTX ISA 9.0 §9.7.16.4.1, "Shared memory descriptor").

A 64-bit value that tells ``tcgen05.cp`` (and ``tcgen05.mma``) where a canonical K-major tile lives in shared
memory and how it is laid out.  Bit fields (Table 40 of the ISA):

==========  =====  ==========================================================================================
bits        field  meaning
==========  =====  ==========================================================================================
0-13        start  matrix start address, ``(addr & 0x3FFFF) >> 4`` (16-byte units)
16-29       LBO    leading-dimension byte offset ``>> 4`` (the stride between 16-byte chunks of a row when the
                   layout is not swizzled; ignored — "assumed 1" — for the swizzled K-major layouts)
32-45       SBO    stride-dimension byte offset ``>> 4`` (between groups of 8 rows)
46-48       fixed  the constant ``0b001`` (sm_100 family; the descriptor "version")
49-51       base   matrix base offset: the swizzle pattern's phase when the start is not pattern-aligned
52          mode   LBO mode (0: relative offset; 1: absolute address, sm_103a only)
61-63       swz    layout type: 0 none, 1 128B with 32-byte atoms (``128B_base32B``), 2 128B, 4 64B, 6 32B
==========  =====  ==========================================================================================

The Hopper ``wgmma`` descriptor is a different encoding (swizzle codes in bits 62-63, no version bits): it is not
this one.  TVM TIRx (``apache-tvm 0.27.0.post1``) always encodes version 1, LBO mode 0 and base offset 0 and asks
for pattern-aligned shared buffers; so does tilemagic.

This module is the one encoder and decoder of these bits (the groundwork of ``copy_async`` → ``smem->tmem``): the
simulator, the code generator and the report are to read them from here.  The source walk of a descriptor (row
``r``, chunk ``j`` at ``start + (r % 8) * ROW_PITCH + (r // 8) * SBO + j * (LBO unswizzled, else 16)``, then the
swizzle XOR of :func:`tilemagic.layout.swizzle.xor_swizzle` on the absolute address) belongs to the layers above.
"""

from __future__ import annotations

from dataclasses import dataclass

#: layout type (bits 61-63) by swizzle name, and back
LAYOUT_TYPES: dict[str, int] = {"none": 0, "128B_base32B": 1, "128B": 2, "64B": 4, "32B": 6}
LAYOUT_NAMES: dict[int, str] = {v: k for k, v in LAYOUT_TYPES.items()}
#: bytes of one swizzled row (the K-major canonical layout's row pitch) by layout type; 16 when not swizzled
ROW_PITCH: dict[int, int] = {0: 16, 1: 128, 2: 128, 4: 64, 6: 32}
#: the fixed bits 46-48 on the sm_100 family
VERSION = 1
#: the largest address, LBO or SBO the 14-bit fields hold (bytes: 14 bits of 16-byte units)
FIELD_MAX_BYTES = (1 << 14) * 16 - 16


@dataclass(frozen=True)
class SmemDescriptor:
    """A decoded shared-memory matrix descriptor; every length in bytes.

    Attributes
    ----------
    start, lbo, sbo : int
        Matrix start address, leading- and stride-dimension byte offsets (multiples of 16).
    layout : int
        Layout type code (:data:`LAYOUT_TYPES`).
    base_offset : int
        The swizzle pattern's phase (0..7).
    lbo_mode : int
        0 relative, 1 absolute.
    version : int
        Bits 46-48 (1 on the sm_100 family).
    """

    start: int
    lbo: int
    sbo: int
    layout: int
    base_offset: int = 0
    lbo_mode: int = 0
    version: int = VERSION

    @property
    def layout_name(self) -> str:
        """``none``, ``32B``, ``64B``, ``128B``, ``128B_base32B``, or ``invalid(N)``."""
        return LAYOUT_NAMES.get(self.layout, f"invalid({self.layout})")

    @property
    def swizzled(self) -> bool:
        return self.layout != 0


def problems(start: int, lbo: int, sbo: int, layout: int, base_offset: int = 0, lbo_mode: int = 0) -> list[str]:
    """Why these fields do not make a descriptor (empty when they do): 16-byte alignment and the 14-bit range of
    start, LBO and SBO, a known layout type, a base offset in 0..7 and a mode bit (PTX ISA 9.0 §9.7.16.4.1)."""
    out = []
    for name, v in (("start address", start), ("LBO", lbo), ("SBO", sbo)):
        if v % 16:
            out.append(f"{name} {v} is not a multiple of 16 bytes (the field holds 16-byte units)")
        if not 0 <= v <= FIELD_MAX_BYTES:
            out.append(f"{name} {v} does not fit the 14-bit field (at most {FIELD_MAX_BYTES} bytes)")
    if layout not in LAYOUT_NAMES:
        out.append(f"layout type {layout} is not one of {sorted(LAYOUT_NAMES)} (3, 5 and 7 are invalid)")
    if not 0 <= base_offset <= 7:
        out.append(f"base offset {base_offset} is not in 0..7")
    if lbo_mode not in (0, 1):
        out.append(f"LBO mode {lbo_mode} is not 0 or 1")
    return out


def encode(start: int, lbo: int, sbo: int, layout: int | str, base_offset: int = 0, lbo_mode: int = 0) -> int:
    """The 64-bit descriptor of these fields (bytes; ``layout`` a code or a name of :data:`LAYOUT_TYPES`).

    Raises
    ------
    ValueError
        A field :func:`problems` rejects (the message lists each).
    """
    code = LAYOUT_TYPES[layout] if isinstance(layout, str) else int(layout)
    bad = problems(start, lbo, sbo, code, base_offset, lbo_mode)
    if bad:
        raise ValueError("; ".join(bad))
    return ((start >> 4) & 0x3FFF) | (((lbo >> 4) & 0x3FFF) << 16) | (((sbo >> 4) & 0x3FFF) << 32) \
        | (VERSION << 46) | ((base_offset & 7) << 49) | ((lbo_mode & 1) << 52) | ((code & 7) << 61)


def decode(desc: int) -> SmemDescriptor:
    """The fields of a 64-bit descriptor, as the hardware reads them (reserved bits ignored)."""
    d = int(desc) & ((1 << 64) - 1)
    return SmemDescriptor(start=(d & 0x3FFF) << 4, lbo=((d >> 16) & 0x3FFF) << 4, sbo=((d >> 32) & 0x3FFF) << 4,
                          layout=(d >> 61) & 7, base_offset=(d >> 49) & 7, lbo_mode=(d >> 52) & 1,
                          version=(d >> 46) & 7)



#: the XOR swizzle's bit count B by layout type (16-byte chunk c of 128-byte line L goes to c ^ (L mod 2**B), PTX
#: ISA 9.0 §5.5.7 / §9.7.16.4.1); ``128B_base32B`` (32-byte atoms) is not in this table: its walk is not
#: established, and tilemagic never encodes it
SWIZZLE_BITS: dict[int, int] = {0: 0, 6: 1, 4: 2, 2: 3}
#: bytes after which a layout type's swizzle pattern repeats: a buffer read through a descriptor with base offset 0
#: must start on a multiple of it (16 for no swizzle: the descriptor's 16-byte units)
PATTERN_PERIOD: dict[int, int] = {0: 16, 6: 256, 4: 512, 2: 1024}
