"""An independent model of ``tcgen05.cp`` written from the PTX ISA 9.0 text; it imports nothing from tilemagic.

Sources (PTX ISA 9.0): §9.7.16.4.1 Table 40 (the shared-memory descriptor's bits), §9.7.16.3.3 (the K-major
canonical layouts: 8-row core matrices of 16-byte rows, rows of a core matrix at the swizzle's row pitch, core
matrices at SBO down and LBO across — "assumed 1" when swizzled), §5.5.7 (the swizzle: 16-byte chunk ``c`` of
128-byte line ``L`` goes to ``c ^ (L mod 2**B)`` for the 32/64/128-byte modes), §9.7.16.9.1 (the shapes and the
multicast lane patterns, given there as figures 190-193).

``decode(desc)`` reads the bits; ``tmem_image(smem, desc, shape, multicast)`` is the 128 x 512 array of 32-bit
words one instruction at TMEM address lane 0, column 0 writes (``None`` where it writes nothing), from a
``bytes``-like shared window.
"""

from __future__ import annotations

import numpy as np

# Table 40 layout-type values and their swizzle width in 16-byte chunks per 128-byte line
_SWIZZLE_BYTES = {0: 0, 6: 32, 4: 64, 2: 128}


def decode(desc: int) -> dict:
    """Each field of the 64-bit descriptor, bit by bit as Table 40 lists them."""
    bit = lambda lo, n: (desc >> lo) & ((1 << n) - 1)  # noqa: E731
    return {
        "start": bit(0, 14) * 16,
        "lbo": bit(16, 14) * 16,
        "sbo": bit(32, 14) * 16,
        "fixed": bit(46, 3),
        "base_offset": bit(49, 3),
        "lbo_mode": bit(52, 1),
        "layout": bit(61, 3),
    }


def _rows_to_lanes(shape: str, multicast: str) -> list[list[int]]:
    """For each source row, the TMEM lanes it lands in (figures 190-193 of §9.7.16.9.1)."""
    if shape in ("128x256b", "128x128b"):
        return [[r] for r in range(128)]
    if shape == "4x256b":
        return [[32 * r] for r in range(4)]
    if shape == "64x128b" and multicast == "warpx2::02_13":  # warps 0,2 get rows 0-31 and 1,3 rows 32-63
        return [[r, r + 64] for r in range(64)]
    if shape == "64x128b" and multicast == "warpx2::01_23":  # warps 0,1 get rows 0-31 and 2,3 rows 32-63
        return [[r, r + 32] if r < 32 else [r + 32, r + 64] for r in range(64)]
    if shape == "32x128b" and multicast == "warpx4":  # every warp's quadrant gets rows 0-31
        return [[r, r + 32, r + 64, r + 96] for r in range(32)]
    raise ValueError(f"no such tcgen05.cp shape {shape}.{multicast}")


def tmem_image(smem, desc: int, shape: str, multicast: str = "") -> np.ndarray:
    """The 32-bit words one ``tcgen05.cp`` writes at TMEM lane 0, column 0: a (128, 512) object array (None where
    nothing is written)."""
    f = decode(desc)
    assert f["fixed"] == 1 and f["base_offset"] == 0 and f["layout"] in _SWIZZLE_BYTES, f
    window = bytes(smem)
    rows, bits = (int(x) for x in shape[:-1].split("x"))
    sw = _SWIZZLE_BYTES[f["layout"]]
    out = np.full((128, 512), None, dtype=object)
    for r, lanes in enumerate(_rows_to_lanes(shape, multicast)):
        for j in range(bits // 128):
            if sw:  # core-matrix row r % 8 at the swizzle width; the second chunk right after the first
                addr = f["start"] + (r % 8) * sw + (r // 8) * f["sbo"] + 16 * j
                line, chunk = addr // 128, (addr % 128) // 16
                addr = line * 128 + (chunk ^ (line % (sw // 16))) * 16 + addr % 16
            else:  # core matrices of 8 rows x 16 bytes, packed rows; LBO between the chunks of a row
                addr = f["start"] + (r % 8) * 16 + (r // 8) * f["sbo"] + j * f["lbo"]
            words = [int.from_bytes(window[addr + 4 * w: addr + 4 * w + 4], "little") for w in range(4)]
            for lane in lanes:
                for w in range(4):
                    out[lane, 4 * j + w] = words[w]
    return out
