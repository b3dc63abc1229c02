"""XOR-swizzled memory layouts: TVM TIRx's ``ComposeLayout`` (formerly ``SwizzleLayout``).

A :class:`ComposeLayout` applies an XOR swizzle on top of the memory address
(axis ``m``, in elements) that a :class:`~tilemagic.layout.tile.TileLayout`
gives (TVM, apache-tvm 0.27.0.post1)::

    m' = m ^ (((m >> (per_element + atom_len)) & (2**swizzle_len - 1)) << per_element)

i.e. bits ``[per_element + atom_len, per_element + atom_len + swizzle_len)`` of
the address are XOR-ed into bits ``[per_element, per_element + swizzle_len)``.
The low ``per_element`` bits are never touched, so a chunk of
``2**per_element`` consecutive, aligned elements stays contiguous: that chunk is
the widest vector a copy may move through a swizzled buffer (TVM's vec_len
cap).  In CuTe terms this is ``Swizzle<swizzle_len, per_element, atom_len>``;
e.g. ``swizzle(3, 3, 3)`` on a ``float16[8, 64]`` tile is the 128-byte swizzle
(16-byte chunks, 8 rows of 128 bytes).

The formula and the argument order were checked against the installed TVM
wheel (``tvm.tirx.layout.ComposeLayout(per_element, swizzle_len, atom_len,
tile_layout)``, ``swizzle_inner=True``) on every element of several tiles; see
``tests/tvm/test_swizzle_oracle.py``.  ``swizzle_inner=False`` (swizzle the
logical index before the tile) is not supported.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .tile import TileLayout

__all__ = ["ComposeLayout", "xor_swizzle"]

# per_element + atom_len + swizzle_len must stay inside an int32 address
_MAX_BITS = 30


def xor_swizzle(m, per_element: int, swizzle_len: int, atom_len: int):
    """The swizzled address of element address(es) ``m`` (int or int64 array, elements).

    ``m ^ (((m >> (per_element + atom_len)) & (2**swizzle_len - 1)) << per_element)``.
    """
    m = np.asarray(m, dtype=np.int64)
    mask = (1 << swizzle_len) - 1
    return m ^ (((m >> (per_element + atom_len)) & mask) << per_element)


@dataclass(frozen=True, repr=False)
class ComposeLayout:
    """An XOR swizzle composed on top of a tile layout (TVM ``ComposeLayout``).

    Parameters
    ----------
    per_element : int
        ``M``: log2 of the elements in one swizzle chunk (the unit that moves as
        a whole); bits below it are kept.
    swizzle_len : int
        ``B``: number of address bits XOR-ed (0: no swizzle, only the chunk).
    atom_len : int
        ``S``: distance in bits between the XOR source and target bits; ``S >= B`` (TVM rejects
        a layout whose source bits overlap the target bits as not well-formed).
    tile : TileLayout
        The memory map the swizzle is applied to (only axis ``m``).
    bare : bool
        Written without a tile (``swizzle(M, B, S)`` over the buffer's row-major
        order); only changes how the layout prints.

    Notes
    -----
    ``apply`` returns ``{"m": swizzled address}``.  A swizzled layout is not a
    tile layout: :meth:`slice` is None and it has no ``shard``; the copy variants
    read it element by element through :meth:`apply`.
    """

    per_element: int
    swizzle_len: int
    atom_len: int
    tile: TileLayout
    bare: bool = field(default=False, compare=False)

    def __post_init__(self):
        for name in ("per_element", "swizzle_len", "atom_len"):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 0:
                raise ValueError(f"swizzle {name} must be a non-negative integer, got {v!r}")
            object.__setattr__(self, name, int(v))
        if self.atom_len < self.swizzle_len:
            # TVM's well-formedness rule (ComposeLayout::VerifyWellFormed): the XOR source bits
            # [M+S, M+S+B) must lie above the target bits [M, M+B)
            raise ValueError(f"swizzle atom_len ({self.atom_len}) must be >= swizzle_len ({self.swizzle_len}): the "
                             f"XOR source bits must lie above the bits they change")
        if self.per_element + self.atom_len + self.swizzle_len > _MAX_BITS:
            raise ValueError(f"swizzle bits per_element + atom_len + swizzle_len = "
                             f"{self.per_element + self.atom_len + self.swizzle_len} exceed {_MAX_BITS}")
        if not isinstance(self.tile, TileLayout):
            raise TypeError("ComposeLayout tile must be a TileLayout")
        if set(self.tile.axes()) - {"m"}:
            raise ValueError(f"a swizzle composes with a memory tile on axis m only, got {self.tile}")

    @property
    def chunk_elems(self) -> int:
        """Elements per swizzle chunk, ``2**per_element``: the widest vector through this layout."""
        return 1 << self.per_element

    def size(self, axis=None) -> int:
        return self.tile.size(axis)

    def axes(self):
        return ("m",)

    @property
    def offset(self):
        return ()

    def apply(self, *coords, shape=None) -> dict[str, np.ndarray]:
        """The tile's ``apply`` followed by :func:`xor_swizzle` on ``m``."""
        m = self.tile.apply(*coords, shape=shape).get("m")
        return {"m": xor_swizzle(m, self.per_element, self.swizzle_len, self.atom_len)}

    def canonicalize(self) -> ComposeLayout:
        return ComposeLayout(self.per_element, self.swizzle_len, self.atom_len, self.tile.canonicalize(), self.bare)

    def is_equal(self, other) -> bool:
        return isinstance(other, ComposeLayout) and self.canonicalize() == other.canonicalize()

    def slice(self, shape, region):
        """Not representable as one layout (the swizzle is on the whole tile's address)."""
        return None

    def params_text(self) -> str:
        return f"{self.per_element}, {self.swizzle_len}, {self.atom_len}"

    def __str__(self) -> str:
        if self.bare:
            return f"swizzle({self.params_text()})"
        return f"swizzle({self.params_text()}, {self.tile})"

    def __repr__(self) -> str:
        return f"ComposeLayout({self})"
