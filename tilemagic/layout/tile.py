"""The TIRx tile-layout algebra: :class:`Iter`, :class:`TileLayout` and spec helpers.

A :class:`TileLayout` maps a logical element index of a tile to one
coordinate per *axis* (thread axes such as ``tid_in_wg`` and memory axes such
as ``m``, ``TLane``, ``TCol``).  It has three parts, following TVM TIRx
(``tvm.tirx.layout``, apache-tvm 0.27.0.post1):

* ``shard`` ("D"): iters ``(extent, stride, axis)`` listed outermost first.
  The logical index is split over their extents, innermost first, and each
  digit contributes ``digit * stride`` to its axis.
* ``replica`` ("R"): iters every element is additionally replicated over
  (e.g. a value broadcast to four warps).  :meth:`TileLayout.apply` returns
  the base only, as TVM does.
* ``offset`` ("O"): a constant per-axis offset, stored as sorted
  ``(axis, value)`` pairs with zeros dropped.

The spec text follows TVM's ``S[...]`` syntax, e.g.
``S[(4, 16, 32) : (32@TLane, 1@TLane, 1@TCol)] + 16@TLane``; a stride on the
default memory axis ``m`` is printed bare.  The language's parser
(:mod:`tilemagic.lang.parser`) reads the ``S[...]`` text of a description.

This is an independent implementation from the reference description; no TVM
code is used.
"""

from __future__ import annotations

import math
import operator
import re
from dataclasses import dataclass
from collections.abc import Sequence

import numpy as np

from ..arch.threads import AXIS_SCOPES, CANONICAL_AXIS, SCOPE_RANK, THREAD_AXES, THREADS_PER

__all__ = [
    "Iter",
    "TileLayout",
    "distinct",
    "iters_text",
]

_AXIS_RE = re.compile(r"^[A-Za-z_][A-Za-z_0-9]*$")


def _int(x, what: str) -> int:
    try:
        return operator.index(x)
    except TypeError:
        if isinstance(x, float) and x.is_integer():
            return int(x)
        raise TypeError(f"{what} must be an integer, got {x!r}") from None


def _check_axis(axis) -> str:
    if not isinstance(axis, str) or not _AXIS_RE.match(axis):
        raise ValueError(f"layout axis must be an identifier string, got {axis!r}")
    return axis


@dataclass(frozen=True)
class Iter:
    """One layout iter: ``extent`` steps of ``stride`` along ``axis``.

    Parameters
    ----------
    extent : int
        Number of steps (>= 1).
    stride : int
        Coordinate increment per step on ``axis`` (may be 0 or negative).
    axis : str
        Axis name, e.g. ``"m"``, ``"TLane"``, ``"tid_in_wg"``.
    """

    extent: int
    stride: int
    axis: str = "m"

    def __post_init__(self):
        ext = _int(self.extent, "Iter extent")
        if ext < 1:
            raise ValueError(f"Iter extent must be >= 1, got {ext}")
        object.__setattr__(self, "extent", ext)
        object.__setattr__(self, "stride", _int(self.stride, "Iter stride"))
        _check_axis(self.axis)

    def stride_text(self) -> str:
        """The stride as spec text: ``"4"`` on ``m``, else ``"4@axis"``."""
        return str(self.stride) if self.axis == "m" else f"{self.stride}@{self.axis}"

    def __str__(self) -> str:
        return f"{self.extent}:{self.stride_text()}"


def _to_stride(s) -> tuple[int, str]:
    """Normalise one stride/offset term to ``(value, axis)``.

    Accepts ``(value, axis)`` pairs, a bare int (axis ``m``), an axis name
    (value 1) or any object with ``.value`` and ``.axis`` attributes.
    """
    if isinstance(s, str):
        return 1, _check_axis(s)
    if hasattr(s, "value") and hasattr(s, "axis"):
        return _int(s.value, "stride"), _check_axis(s.axis)
    if isinstance(s, (tuple, list)):
        if len(s) != 2:
            raise ValueError(f"stride must be a (value, axis) pair, got {s!r}")
        a, b = s
        if isinstance(a, str) and not isinstance(b, str):  # tolerate (axis, value)
            a, b = b, a
        return _int(a, "stride"), _check_axis(b)
    return _int(s, "stride"), "m"


def _to_iter(x) -> Iter:
    if isinstance(x, Iter):
        return x
    if isinstance(x, (tuple, list)) and len(x) == 3:
        return Iter(x[0], x[1], x[2])
    raise TypeError(f"expected an Iter or an (extent, stride, axis) triple, got {x!r}")


def _norm_offset(offset) -> tuple[tuple[str, int], ...]:
    acc: dict[str, int] = {}
    if isinstance(offset, dict):
        items = list(offset.items())
    else:
        items = list(offset)
    for item in items:
        if isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[0], str):
            axis, val = _check_axis(item[0]), _int(item[1], "offset")
        else:
            val, axis = _to_stride(item)
        acc[axis] = acc.get(axis, 0) + val
    return tuple(sorted((a, v) for a, v in acc.items() if v != 0))


def _fuse_axis(axis: str, sub: str, scope: str) -> tuple[str, int]:
    """Rewrite a thread axis to the one axis of the layout's (subscope, scope).

    Returns ``(new_axis, stride_multiplier)``.  Generalises TVM's CUDA
    ``FuseAxesByScope`` table (apache-tvm 0.27.0.post1): e.g. at warpgroup
    scope ``laneid`` -> ``tid_in_wg`` (x1) and ``wid_in_wg`` -> ``tid_in_wg``
    (x32); at cta scope ``wid_in_wg`` -> ``warpid`` (x1) when the innermost
    subscope is a warp, ``warpid`` -> ``tx`` (x32), ``wgid`` -> ``tx`` (x128).
    """
    if axis not in AXIS_SCOPES:
        return axis, 1
    a_sub, _ = AXIS_SCOPES[axis]
    target = CANONICAL_AXIS.get((sub, scope))
    if target is None or target == axis:
        return axis, 1
    mult = THREADS_PER[a_sub] // THREADS_PER[sub]
    return target, mult


@dataclass(frozen=True, repr=False)
class TileLayout:
    """A TIRx tile layout ``S[shard] + R[replica] + offset``.

    Parameters
    ----------
    shard : tuple of Iter
        Iters listed outermost first; their extents multiply to the tile size.
    replica : tuple of Iter, optional
        Replication iters (not enumerated by :meth:`apply`).
    offset : tuple of (str, int), optional
        Per-axis constant offsets; normalised to sorted ``(axis, value)``
        pairs with duplicates summed and zeros dropped.  A dict is accepted.

    Notes
    -----
    Instances are immutable and hashable; ``==`` is exact structural
    equality, :meth:`is_equal` compares canonical forms.
    """

    shard: tuple[Iter, ...]
    replica: tuple[Iter, ...] = ()
    offset: tuple[tuple[str, int], ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "shard", tuple(_to_iter(i) for i in self.shard))
        object.__setattr__(self, "replica", tuple(_to_iter(i) for i in self.replica))
        object.__setattr__(self, "offset", _norm_offset(self.offset))

    # ------------------------------------------------------------------ construction
    @staticmethod
    def from_spec(extents, strides=None, offsets=(), replica=()) -> TileLayout:
        """Build a layout from the pieces of ``S[(e0, ...) : (s0, ...)] + offsets``.

        Parameters
        ----------
        extents : int or sequence of int
            Shard extents, outermost first.
        strides : sequence, optional
            One stride per extent, each a ``(value, axis)`` pair, a bare int
            (axis ``m``), an axis name (stride 1) or an object with ``.value``
            and ``.axis``.  ``None`` means row-major strides on ``m`` (the
            ``S[d0, d1, ...]`` form).
        offsets : sequence, optional
            Offset terms in the same forms as ``strides`` (``(value, axis)``);
            terms on the same axis add up.
        replica : sequence, optional
            Replica iters: :class:`Iter` objects or ``(extent, stride, axis)``.

        Returns
        -------
        TileLayout

        Raises
        ------
        ValueError
            When ``strides`` and ``extents`` differ in length or an extent is < 1.

        Examples
        --------
        >>> str(TileLayout.from_spec((128, 8), [(1, "tid_in_wg"), (1, "m")]))
        'S[(128, 8) : (1@tid_in_wg, 1)]'
        """
        if isinstance(extents, (int, np.integer)):
            extents = (extents,)
        extents = tuple(_int(e, "extent") for e in extents)
        if strides is None:
            vals: list[int] = []
            acc = 1
            for e in reversed(extents):
                vals.append(acc)
                acc *= e
            pairs = [(v, "m") for v in reversed(vals)]
        else:
            if isinstance(strides, (int, np.integer, str)) or (
                hasattr(strides, "value") and hasattr(strides, "axis")
            ):
                strides = (strides,)
            elif (
                isinstance(strides, tuple)
                and len(strides) == 2
                and len(extents) == 1
                and isinstance(strides[1], str)
                and not isinstance(strides[0], str)
            ):
                strides = (strides,)  # a single (value, axis) pair for a 1-D spec
            pairs = [_to_stride(s) for s in strides]
            if len(pairs) != len(extents):
                raise ValueError(
                    f"layout spec has {len(extents)} extents but {len(pairs)} strides"
                )
        shard = tuple(Iter(e, v, a) for e, (v, a) in zip(extents, pairs))
        if isinstance(offsets, (int, np.integer, str)) or (
            isinstance(offsets, tuple) and len(offsets) == 2 and isinstance(offsets[1], str)
        ):
            offsets = (offsets,)
        off = [_to_stride(o) for o in offsets]
        return TileLayout(shard, tuple(_to_iter(r) for r in replica), tuple((a, v) for v, a in off))

    # ------------------------------------------------------------------ queries
    @property
    def extents(self) -> tuple[int, ...]:
        """Shard extents, outermost first."""
        return tuple(i.extent for i in self.shard)

    def size(self, axis: str | None = None) -> int:
        """Number of logical elements: the product of the shard extents.

        Parameters
        ----------
        axis : str, optional
            When given, only the shard iters on this axis count (TVM ``size(axis)``).
        """
        return math.prod(i.extent for i in self.shard if axis is None or i.axis == axis)

    def offset_of(self, axis: str) -> int:
        """The constant offset on ``axis`` (0 when absent)."""
        for a, v in self.offset:
            if a == axis:
                return v
        return 0

    def axes(self) -> tuple[str, ...]:
        """Every axis appearing in shard, replica or offset, in first-seen order."""
        seen: dict[str, None] = {}
        for it in self.shard + self.replica:
            seen.setdefault(it.axis)
        for a, _ in self.offset:
            seen.setdefault(a)
        return tuple(seen)

    def span(self, axis: str) -> int:
        """``1 + sum((extent-1)*|stride|)`` over shard and replica iters on ``axis``, plus its offset."""
        s = 1 + sum((i.extent - 1) * abs(i.stride) for i in self.shard + self.replica if i.axis == axis)
        return s + self.offset_of(axis)

    def replica_offsets(self, axis: str) -> np.ndarray:
        """Every offset on ``axis`` the replica iters add to an element (TVM TIRx ``R[...]``: each element is placed
        once per combination of the replica digits), ``0`` included: an int64 array of ``prod(extents)`` entries,
        the first replica iter's digit varying slowest (a layout without replicas: ``[0]``)."""
        offs = np.zeros(1, np.int64)
        for it in self.replica:
            step = it.stride if it.axis == axis else 0
            offs = (offs[:, None] + np.arange(it.extent, dtype=np.int64)[None, :] * step).ravel()
        return offs

    def thread_iters(self) -> tuple[Iter, ...]:
        """Shard iters on a thread axis (:data:`THREAD_AXES`), in order."""
        return tuple(i for i in self.shard if i.axis in THREAD_AXES)

    def memory_iters(self) -> tuple[Iter, ...]:
        """Shard iters on any non-thread axis (``m``, ``TLane``, ``TCol``, ...), in order."""
        return tuple(i for i in self.shard if i.axis not in THREAD_AXES)

    # ------------------------------------------------------------------ apply
    def apply(self, *coords, shape=None) -> dict[str, np.ndarray]:
        """Map logical coordinates to per-axis coordinates (TVM ``apply``, base only).

        1. Flatten ``coords`` row-major over ``shape``.
        2. Split the flat index over the shard extents, innermost first; the
           outermost digit takes the remaining quotient with no modulo
           (TVM ``SplitCoord``).
        3. Add ``digit * stride`` to each iter's axis, then the offsets.

        Parameters
        ----------
        *coords : int or array_like of int
            One coordinate per dim of ``shape``; or a single linear index when
            ``shape`` is None; or one coordinate per shard iter when ``shape``
            is None and ``len(coords) == len(shard)``.  Arrays broadcast.
        shape : sequence of int, optional
            The logical shape the coordinates index; its product must equal
            :meth:`size`.

        Returns
        -------
        dict of str -> numpy.ndarray
            One int64 array (of the broadcast shape; 0-d for scalar input) per
            axis appearing in the layout (shard, replica or offset).

        Raises
        ------
        ValueError
            When the number of coordinates does not match ``shape`` or the
            shape's size differs from the layout's.
        """
        if shape is None:
            if len(coords) == 1:
                shape = (self.size(),)
            elif len(coords) == len(self.shard):
                shape = self.extents
            else:
                raise ValueError(
                    f"apply: got {len(coords)} coordinates but no shape (layout has "
                    f"{len(self.shard)} shard iters); pass shape=..."
                )
        shape = tuple(_int(s, "shape") for s in shape)
        if len(coords) != len(shape):
            raise ValueError(f"apply: got {len(coords)} coordinates for a {len(shape)}-d shape {shape}")
        if math.prod(shape) != self.size():
            raise ValueError(
                f"apply: shape {shape} has {math.prod(shape)} elements but the layout has {self.size()}"
            )
        arrs = np.broadcast_arrays(*[np.asarray(c, dtype=np.int64) for c in coords])
        flat = np.zeros(arrs[0].shape, dtype=np.int64) if arrs else np.int64(0)
        for c, s in zip(arrs, shape):
            flat = flat * s + c
        out = {a: np.zeros(np.shape(flat), dtype=np.int64) for a in self.axes()}
        rem = flat
        n = len(self.shard)
        for k in range(n - 1, -1, -1):
            it = self.shard[k]
            if k and it.extent == 1:  # its digit is 0: a long layout of unit iters costs nothing per element
                continue
            if k == 0:
                digit = rem
            else:
                digit = rem % it.extent
                rem = rem // it.extent
            out[it.axis] = out[it.axis] + digit * it.stride
        for a, v in self.offset:
            out[a] = out[a] + v
        return {a: np.array(v, dtype=np.int64) for a, v in out.items()}

    # ------------------------------------------------------------------ canonical form
    def scope(self) -> tuple[str, str] | None:
        """(innermost subscope, outermost scope) over the layout's thread axes, or None."""
        axes = [a for a in self.axes() if a in AXIS_SCOPES]
        if not axes:
            return None
        sub = min((AXIS_SCOPES[a][0] for a in axes), key=SCOPE_RANK.__getitem__)
        sc = max((AXIS_SCOPES[a][1] for a in axes), key=SCOPE_RANK.__getitem__)
        return sub, sc

    def canonicalize(self) -> TileLayout:
        """The canonical form used for structural comparison (TVM ``canonicalize``).

        Steps (apache-tvm 0.27.0.post1, as TVM does with a CUDA target current):

        1. Drop extent-1 iters; keep one ``(1, 1, axis0)`` if the shard empties.
        2. Drop zero offsets.
        3. ``FuseAxesByScope``: rewrite every thread axis (shard, replica and
           offset) to the single axis of the layout's (innermost subscope,
           outermost scope), scaling strides by the thread count of its unit:
           ``laneid`` -> ``tid_in_wg`` at warpgroup scope, ``wid_in_wg`` ->
           ``tid_in_wg`` (x32), and at cta scope -> ``tx`` (``warpid`` x32,
           ``wgid`` x128) or, when the finest unit is a warp, ``wid_in_wg`` ->
           ``warpid``.
        4. Fuse adjacent same-axis shard iters ``[i], [i+1]`` when
           ``extent[i+1] * stride[i+1] == stride[i]`` (no reordering).
        5. Sort replica iters by ``(axis, stride, extent)``.

        Returns
        -------
        TileLayout
            A new layout; the logical -> coordinate map is unchanged.
        """
        shard = [i for i in self.shard if i.extent != 1]
        if not shard:
            shard = [Iter(1, 1, self.shard[0].axis if self.shard else "m")]
        replica = [i for i in self.replica if i.extent != 1]
        offset = list(self.offset)

        sc = TileLayout(tuple(shard), tuple(replica), tuple(offset)).scope()
        if sc is not None:
            sub, scope = sc

            def fuse(it: Iter) -> Iter:
                ax, mult = _fuse_axis(it.axis, sub, scope)
                return Iter(it.extent, it.stride * mult, ax) if ax != it.axis else it

            shard = [fuse(i) for i in shard]
            replica = [fuse(i) for i in replica]
            new_off = []
            for a, v in offset:
                ax, mult = _fuse_axis(a, sub, scope)
                new_off.append((ax, v * mult))
            offset = new_off

        fused: list[Iter] = []
        for it in shard:
            if fused:
                top = fused[-1]
                if top.axis == it.axis and it.extent * it.stride == top.stride:
                    fused[-1] = Iter(top.extent * it.extent, it.stride, it.axis)
                    continue
            fused.append(it)
        replica.sort(key=lambda i: (i.axis, i.stride, i.extent))
        return TileLayout(tuple(fused), tuple(replica), tuple(offset))

    def is_equal(self, other: TileLayout) -> bool:
        """Structural equality of the canonical forms (TVM ``assert_structural_equal`` after canonicalize)."""
        if not isinstance(other, TileLayout):
            return False
        return self.canonicalize() == other.canonicalize()

    # ------------------------------------------------------------------ group / slice
    def try_group(self, shape) -> tuple[TileLayout, tuple[int, ...]] | None:
        """Non-raising :meth:`group`: None when the shard cannot be split along ``shape``."""
        try:
            return self.group(shape)
        except ValueError:
            return None

    def group(self, shape) -> tuple[TileLayout, tuple[int, ...]]:
        """Split the shard iters so that consecutive runs cover each dim of ``shape``.

        Walks the iters outermost first with a running product; when it
        reaches a multiple of the current dim ``shape[k]`` the iter is cut into
        a high part (closing group ``k``) and a low part carried on (TVM
        ``Group``, apache-tvm 0.27.0.post1).

        Parameters
        ----------
        shape : sequence of int
            Logical shape, outermost first; its product must equal :meth:`size`.

        Returns
        -------
        (layout, seps) : (TileLayout, tuple of int)
            The refined layout (same map) and ``len(shape)+1`` separators: group
            ``i`` is ``layout.shard[seps[i]:seps[i+1]]`` and its extents
            multiply to ``shape[i]``.  Offsets and replica are kept.

        Raises
        ------
        ValueError
            When the sizes differ or an iter would have to be split at a
            non-divisor (e.g. ``S[(3, 4)]`` grouped by ``(2, 6)``).
        """
        shape = tuple(_int(s, "shape") for s in shape)
        if any(s < 1 for s in shape):
            raise ValueError(f"group: shape {shape} has a dim < 1")
        if math.prod(shape) != self.size():
            raise ValueError(
                f"group: layout {self} has {self.size()} elements, shape {shape} has {math.prod(shape)}"
            )
        out: list[Iter] = []
        seps = [0]
        k = 0
        prod = 1
        for it in self.shard:
            ext = it.extent
            prod *= ext
            while k < len(shape) and prod % shape[k] == 0:
                c = prod // shape[k]
                if ext % c != 0:
                    raise ValueError(
                        f"group: cannot split iter {it} of {self} along shape {shape} "
                        f"(dim {k} = {shape[k]} needs a factor {ext // math.gcd(ext, c)} of extent {ext})"
                    )
                out.append(Iter(ext // c, it.stride * c, it.axis))
                seps.append(len(out))
                ext = c
                prod = c
                k += 1
            if ext != 1:
                out.append(Iter(ext, it.stride, it.axis))
        if k != len(shape) or prod != 1:
            raise ValueError(f"group: cannot split {self} along shape {shape}")
        for i, s in enumerate(shape):
            if math.prod(x.extent for x in out[seps[i]:seps[i + 1]]) != s:
                raise ValueError(f"group: cannot split {self} along shape {shape}")
        return TileLayout(tuple(out), self.replica, self.offset), tuple(seps)

    def slice(self, shape, region) -> TileLayout | None:
        """The layout of a rectangular sub-region (TVM ``slice``).

        The layout is canonicalized, grouped by ``shape``, and each group is
        sliced with its ``(begin, extent)``: the begin's per-iter digits move
        into the offsets, full inner iters are kept, the first partial iter
        is shrunk (TVM, apache-tvm 0.27.0.post1).  A TMEM column window
        ``[c0:c0+w]`` of Layout D thus becomes ``S[(rows, w) : (1@TLane,
        1@TCol)] + c0@TCol``.

        Parameters
        ----------
        shape : sequence of int
            The logical shape of the whole tile.
        region : sequence of (int, int)
            ``(begin, extent)`` per dim of ``shape``.

        Returns
        -------
        TileLayout or None
            The canonicalized sub-layout, whose logical index runs row-major
            over the region's extents; None when it is not representable as a
            single tile layout (or ``shape`` does not group).

        Raises
        ------
        ValueError
            When ``region`` does not match ``shape`` or leaves its bounds.
        """
        shape = tuple(_int(s, "shape") for s in shape)
        region = tuple((_int(b, "begin"), _int(e, "extent")) for b, e in region)
        if len(region) != len(shape):
            raise ValueError(f"slice: region has {len(region)} dims, shape {shape} has {len(shape)}")
        for (b, e), s in zip(region, shape):
            if b < 0 or e < 1 or b + e > s:
                raise ValueError(f"slice: region {region} is out of bounds of shape {shape}")
        canon = self.canonicalize()
        grouped = canon.try_group(shape)
        if grouped is None:
            return None
        lay, seps = grouped
        iters: list[Iter] = []
        off: dict[str, int] = dict(lay.offset)
        for g, (b, e) in enumerate(region):
            res = _slice_group(lay.shard[seps[g]:seps[g + 1]], b, e)
            if res is None:
                return None
            g_iters, g_off = res
            iters.extend(g_iters)
            for a, v in g_off.items():
                off[a] = off.get(a, 0) + v
        if not iters:
            iters = [Iter(1, 1, lay.shard[0].axis if lay.shard else "m")]
        return TileLayout(tuple(iters), lay.replica, tuple(off.items())).canonicalize()

    # ------------------------------------------------------------------ text
    def __str__(self) -> str:
        parts = [_spec_text("S", self.shard)]
        if self.replica:
            parts.append(_spec_text("R", self.replica))
        text = " + ".join(parts)
        for a, v in self.offset:
            term = str(abs(v)) if a == "m" else f"{abs(v)}@{a}"
            text += f" - {term}" if v < 0 else f" + {term}"
        return text

    def __repr__(self) -> str:
        return f"TileLayout({self})"


def _slice_group(iters: Sequence[Iter], begin: int, extent: int):
    """Slice one group (iters outermost first) to ``[begin, begin+extent)``.

    Returns ``(iters, offsets)`` or None.  ``extent`` counts logical elements
    of the group, whose iters split the group index innermost first.
    """
    n = len(iters)
    off: dict[str, int] = {}
    if n == 0:
        return [], off
    inner = [1] * n  # product of extents strictly inside iter k
    for k in range(n - 2, -1, -1):
        inner[k] = inner[k + 1] * iters[k + 1].extent
    digits = []
    for k, it in enumerate(iters):
        d = begin // inner[k]
        if k > 0:
            d %= it.extent
        digits.append(d)
        off[it.axis] = off.get(it.axis, 0) + d * it.stride
    # peel full inner iters
    kept: list[Iter] = []
    rem = extent
    k = n - 1
    while k >= 0 and digits[k] == 0 and rem % iters[k].extent == 0:
        kept.append(iters[k])
        rem //= iters[k].extent
        k -= 1
    kept.reverse()
    if rem == 1:
        return kept, off
    if k < 0:
        return None  # region larger than the group: cannot happen in bounds
    piv = iters[k]
    d = digits[k]
    if d + rem <= piv.extent:
        # the outer iters stay at their (offset) digit: the region lies inside one pivot run
        return [Iter(rem, piv.stride, piv.axis)] + kept, off
    # wrap-around: [d, E) of this outer step then [0, E-d) of the next one; two equal halves
    half = piv.extent - d
    if rem == 2 * half and k > 0 and digits[k - 1] + 1 < iters[k - 1].extent:
        outer = iters[k - 1]
        jump = outer.stride - d * piv.stride
        if outer.axis == piv.axis:
            return [Iter(2, jump, piv.axis), Iter(half, piv.stride, piv.axis)] + kept, off
    return None


def iters_text(iters: Sequence[Iter]) -> str:
    """Iterators (outermost first) as the layout language writes them inside ``S[...]`` / ``R[...]``:
    ``8 : 1@TCol``, ``(2, 8) : (1@TLane, 1@TCol)``."""
    if len(iters) == 1:
        return f"{iters[0].extent} : {iters[0].stride_text()}"
    ext = ", ".join(str(i.extent) for i in iters)
    strd = ", ".join(i.stride_text() for i in iters)
    return f"({ext}) : ({strd})"


def _spec_text(kind: str, iters: Sequence[Iter]) -> str:
    return f"{kind}[{iters_text(iters)}]"


def distinct(values: np.ndarray) -> bool:
    """Are the integers ``values`` (any shape) pairwise distinct — is the map they are the image of injective?

    Values in a small range (at most ``max(2**20, 8 * size)`` apart: offsets, register words, TMEM cells) are
    marked in a bitmap, O(n); anything else is sorted.  (NumPy's ``np.unique`` hashes, and costs ~45x the
    bitmap on the 8,192 register words of a warpgroup's ldmatrix.)"""
    a = np.asarray(values).reshape(-1)
    n = a.size
    if n <= 1:
        return True
    lo, hi = int(a.min()), int(a.max())
    if hi - lo + 1 < n:
        return False
    if hi - lo + 1 <= max(1 << 20, 8 * n):
        seen = np.zeros(hi - lo + 1, np.bool_)
        seen[a - lo] = True
        return int(np.count_nonzero(seen)) == n
    s = np.sort(a)
    return not bool((s[1:] == s[:-1]).any())


def affine_dims(layout, shape, axis: str = "m") -> tuple[tuple[int, ...], int] | None:
    """Per-dimension strides and offset of ``layout`` on ``axis`` when it is affine per logical dim.

    Returns ``(strides, offset)`` with ``index = offset + Σ coord_d * strides[d]`` for every
    element, or None when the layout splits a dimension non-affinely.
    """
    shape = tuple(shape)
    n = int(np.prod(shape))
    vals = layout.apply(np.arange(n, dtype=np.int64)).get(axis, np.zeros(n, np.int64))
    grid = np.indices(shape).reshape(len(shape), -1)
    off = int(vals[0])
    strides = []
    for d, ext in enumerate(shape):
        if ext == 1:
            strides.append(0)
            continue
        unit = [0] * len(shape)
        unit[d] = 1
        strides.append(int(vals[int(np.ravel_multi_index(unit, shape))]) - off)
    pred = off + (np.asarray(strides, np.int64)[:, None] * grid).sum(axis=0)
    if not np.array_equal(pred, vals):
        return None
    return tuple(strides), off
