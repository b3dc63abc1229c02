"""The IR: one tree from which the printed IR, the CUDA and the simulation all come.

A lowered kernel is a :class:`Kernel` whose body is a tree of statements.  The
statements are few and concrete (what a copy lowers to on CUDA): scalar element
stores, vector moves (one ``ld``/``st`` of up to 16 bytes), the tcgen05
instructions, barriers, guards and serial grids.  Every statement keeps the
:class:`~tilemagic.errors.Span` of the description line it came from, so each
printed IR line and CUDA line can be traced back to its source line.

Index conventions
-----------------
* global/shared buffers are indexed (``Store``/``Load``) with one expression per
  logical dimension; :meth:`Buffer.index_expr` maps them through the buffer's layout
  to the element offset; vector moves and ``ldmatrix``/``stmatrix`` carry that
  offset directly;
* ``local`` buffers are per-thread register storage indexed by one flat element
  index (the layout's ``m`` coordinate);
* TMEM is never indexed directly: it is reached through tcgen05 instructions
  whose address is ``tmem_addr[0]`` plus a (row, 32-bit column) immediate.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
import weakref
from dataclasses import dataclass, field, fields
from functools import lru_cache

import numpy as np

from ..caches import register_cache
from ..errors import Span

# element sizes in bytes, and the NumPy storage dtype (bfloat16 comes from ml_dtypes lazily)
DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "uint8": 1, "int8": 1, "int32": 4, "uint32": 4,
               "uint64": 8}
CUDA_TYPE = {
    "float32": "float", "float16": "half", "bfloat16": "__nv_bfloat16",
    "uint8": "uint8_t", "int8": "int8_t", "int32": "int", "uint32": "uint32_t",
}
# unsigned integer type of the same width: the simulator, the launch and the checks move and compare bits
BITS_DTYPE = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def bits_view(a: np.ndarray) -> np.ndarray:
    """``a`` viewed as unsigned integers of its element width (fp16 -> uint16, ...)."""
    return a.view(BITS_DTYPE[a.dtype.itemsize])


def numpy_dtype(dtype: str) -> np.dtype:
    """NumPy dtype for a tilemagic dtype name (bfloat16 through ml_dtypes)."""
    if dtype == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(dtype)


# ----------------------------------------------------------------------------- buffers
@dataclass(eq=False)
class Buffer:
    """A buffer of the kernel.

    Attributes
    ----------
    name : str
    scope : {"global", "shared", "local", "tmem"}
    dtype : str
        Element dtype (``float16`` ...); ``uint32`` for the TMEM address slot.
    shape : tuple of int
        Logical shape in elements.
    layout : TileLayout or None
        For local: register layout (thread axes + ``m``); for tmem: TLane/TCol layout
        (TCol in elements); for shared: memory layout on ``m`` (None = row-major).
    per_thread : int
        Local buffers: elements of register storage per thread.  Others: total elements.
    tmem_col : int
        TMEM buffers: 32-bit column offset of this buffer inside the CTA's allocation.
    datapath : str or None
        TMEM buffers: "D", "F" or "B" (from the layout), None when unrecognised.
    """

    name: str
    scope: str
    dtype: str
    shape: tuple[int, ...]
    layout: object = None
    per_thread: int = 0
    tmem_col: int = 0
    tmem_ncols: int = 0  # 32-bit columns the buffer spans
    alias_of: str | None = None  # tmem `at OTHER`
    datapath: str | None = None
    sub_slab: int = 0
    span: Span | None = None
    init: str | None = None  # global: random|arange|zeros|<notebook variable>
    init_span: Span | None = None
    #: shared ``uint64[1]`` mbarrier objects (``mbarrier NAME count=N``): the arrival count; None for data buffers
    mbar_count: int | None = None

    @property
    def is_mbarrier(self) -> bool:
        return self.mbar_count is not None

    @property
    def elem_bytes(self) -> int:
        return DTYPE_BYTES[self.dtype]

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    def dim_strides(self) -> tuple[tuple[int, ...], int]:
        """``(strides, offset)`` in elements with ``index = offset + Σ index_d * strides[d]`` (global/shared).

        Global buffers (and buffers without a layout) are row-major.  Raises ValueError when a shared
        layout is not affine per dimension (a split dimension, a swizzle): :meth:`index_expr` then
        uses the general form.  Derived on demand (the layout algebra is memoised per
        ``(layout, shape)`` in :func:`_affine`), so a buffer holds no cache of its own.
        """
        if self.scope == "global" or self.layout is None:
            st, n = [], 1
            for d in reversed(self.shape):
                st.append(n)
                n *= d
            return tuple(reversed(st)), 0
        res = _affine(self.layout, tuple(self.shape))
        if res is None:
            raise ValueError(f"layout of {self.name} is not affine per dimension")
        return res

    def index_expr(self, indices) -> Expr:
        """Physical element index of the access ``buf[indices]``.

        ``local`` buffers are indexed flat (one index, the register slot).  Global
        buffers are row-major.  A shared buffer's layout maps the logical indices:
        an affine-per-dimension layout gives ``offset + Σ index_d * stride_d``; any
        other tile layout the general split of the row-major flat index over its
        iters (TVM ``apply``: ``Σ (flat // inner_k % extent_k) * stride_k``); a
        swizzled layout (:class:`~tilemagic.layout.swizzle.ComposeLayout`) that of
        its tile, XOR-ed as ``t ^ (t // 2**(M+S) % 2**B * 2**M)``.
        """
        if self.scope == "local":
            return indices[0]
        try:
            strides, off = self.dim_strides()
        except ValueError:
            return _layout_index(self.layout, self.shape, indices)
        e: Expr = Const(off)
        for i, s in zip(indices, strides):
            e = add(e, mul(i, s))
        return e

    @property
    def storage_elems(self) -> int:
        """Elements of storage: local buffers are padded to whole 32-bit registers."""
        if self.scope == "local":
            per_word = max(1, 4 // self.elem_bytes)
            return -(-self.per_thread // per_word) * per_word
        return self.numel

    @property
    def nbytes(self) -> int:
        return self.storage_elems * self.elem_bytes

    def __repr__(self) -> str:
        return f"Buffer({self.name}: {self.scope} {self.dtype}{list(self.shape)})"


# ----------------------------------------------------------------------------- expressions
class Expr:
    """An index or condition expression: an immutable tree.

    Constants, thread variables, operators and loads are *hash-consed*: building one equal to a live node (the
    same class and fields, the children the same objects) returns that node, so two structurally equal
    expressions are one object and ``id`` names a structure.  The simulator keys the analyses it reuses across
    statements (affine forms, per-thread plans) on it.  Loop variables are not interned: each
    :class:`LoopVar` is its own variable (the lowering hands out one object per name per kernel).
    """

    __slots__ = ()

    def __reduce__(self):  # (pickling and copying rebuild through the constructor: the copy is interned too)
        return type(self), tuple(getattr(self, f.name) for f in fields(self))


_INTERNED: weakref.WeakValueDictionary[tuple, Expr] = weakref.WeakValueDictionary()


def _interned(cls, key: tuple, values: dict) -> Expr:
    obj = _INTERNED.get(key)
    if obj is None:
        obj = object.__new__(cls)
        for k, v in values.items():
            object.__setattr__(obj, k, v)
        _INTERNED[key] = obj
    return obj


@dataclass(frozen=True, eq=False, init=False)
class Const(Expr):
    value: int

    def __new__(cls, value: int):
        return _interned(cls, (cls, type(value), value), {"value": value})


@dataclass(frozen=True, eq=False, init=False)
class ThreadVar(Expr):
    """A thread coordinate: ``tx`` (threadIdx.x) or a thread axis of :data:`tilemagic.arch.threads.AXIS_SCOPES`."""

    kind: str

    def __new__(cls, kind: str):
        return _interned(cls, (cls, kind), {"kind": kind})


@dataclass(frozen=True, eq=False)
class LoopVar(Expr):
    name: str


@dataclass(frozen=True, eq=False, init=False)
class Bin(Expr):
    op: str  # + - * // % ^ == != < <= > >= and
    a: Expr
    b: Expr

    def __new__(cls, op: str, a: Expr, b: Expr):  # (the node holds a and b: their ids stay theirs while it lives)
        return _interned(cls, (cls, op, id(a), id(b)), {"op": op, "a": a, "b": b})


@dataclass(frozen=True, eq=False, init=False)
class Load(Expr):
    buf: Buffer
    indices: tuple[Expr, ...]

    def __new__(cls, buf: Buffer, indices: tuple[Expr, ...]):
        indices = tuple(indices)
        return _interned(cls, (cls, id(buf), *map(id, indices)), {"buf": buf, "indices": indices})


def const(v) -> Expr:
    return v if isinstance(v, Expr) else Const(int(v))


def add(a, b) -> Expr:
    a, b = const(a), const(b)
    if isinstance(a, Const) and a.value == 0:
        return b
    if isinstance(b, Const) and b.value == 0:
        return a
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(a.value + b.value)
    if isinstance(b, Bin) and b.op == "+":  # keep sums left-associated: a + (x + y) -> a + x + y
        return add(add(a, b.a), b.b)
    return Bin("+", a, b)


def mul(a, b) -> Expr:
    a, b = const(a), const(b)
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(a.value * b.value)
    if isinstance(b, Const) and b.value == 1:
        return a
    if isinstance(a, Const) and a.value == 1:
        return b
    if (isinstance(a, Const) and a.value == 0) or (isinstance(b, Const) and b.value == 0):
        return Const(0)
    return Bin("*", a, b)


def floordiv(a, b) -> Expr:
    a, b = const(a), const(b)
    if isinstance(b, Const) and b.value == 1:
        return a
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(a.value // b.value)
    return Bin("//", a, b)


def mod(a, b) -> Expr:
    a, b = const(a), const(b)
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(a.value % b.value)
    if isinstance(b, Const) and b.value == 1:
        return Const(0)
    return Bin("%", a, b)


def xor(a, b) -> Expr:
    a, b = const(a), const(b)
    if isinstance(b, Const) and b.value == 0:
        return a
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(a.value ^ b.value)
    return Bin("^", a, b)


def swizzle_expr(layout, t: Expr) -> Expr:
    """The XOR swizzle of a :class:`~tilemagic.layout.swizzle.ComposeLayout` on the tile address ``t``:
    ``t ^ (t // 2**(M+S) % 2**B * 2**M)`` (= ``t ^ ((t >> (M+S)) & (2**B-1)) << M`` for t >= 0)."""
    hi = layout.per_element + layout.atom_len
    return xor(t, mul(mod(floordiv(t, 1 << hi), 1 << layout.swizzle_len), 1 << layout.per_element))


@lru_cache(maxsize=256)
def _affine(layout, shape):
    from ..layout.tile import affine_dims

    return affine_dims(layout, shape)


register_cache("ir.nodes", _affine.cache_clear, "affine forms of (layout, shape), the last 256")


def _layout_index(layout, shape, indices) -> Expr:
    """``layout.apply(indices)["m"]`` as an expression (general tile layouts and swizzles)."""
    tile = getattr(layout, "tile", None)
    if tile is not None:  # ComposeLayout: swizzle the tile's address
        return swizzle_expr(layout, _layout_index(tile, shape, indices))
    aff = _affine(layout, tuple(shape))
    if aff is not None:
        e: Expr = Const(aff[1])
        for i, st in zip(indices, aff[0]):
            e = add(e, mul(i, st))
        return e
    flat: Expr = Const(0)
    for i, d in zip(indices, shape):
        flat = add(mul(flat, d), i)
    e = Const(layout.offset_of("m"))
    inner = 1
    n = len(layout.shard)
    for k in range(n - 1, -1, -1):
        it = layout.shard[k]
        digit = floordiv(flat, inner)
        if k > 0:
            digit = mod(digit, it.extent)
        if it.axis == "m":
            e = add(e, mul(digit, it.stride))
        inner *= it.extent
    return e


# ----------------------------------------------------------------------------- statements
@dataclass(eq=False)
class Stmt:
    span: Span | None = field(default=None, kw_only=True)


@dataclass(eq=False)
class Seq(Stmt):
    body: tuple[Stmt, ...]


@dataclass(eq=False)
class Comment(Stmt):
    """A comment printed in IR and CUDA (``# L7: wg.copy a <- A  [copy/reg]``).

    The comment that heads an op's statements is also its *marker*: ``op`` (``"copy"``,
    ``"copy_async"``) and ``variant`` (the dispatched variant, ``"reg"``, ``"tmem<->local"``)
    are structured fields, the op's description line is ``span.line``.  Readers of the IR
    (the pictures) use the fields, never the text, which is free to change.
    """

    text: str
    op: str | None = None
    variant: str | None = None


@dataclass(eq=False)
class If(Stmt):
    cond: Expr
    then: Stmt


@dataclass(eq=False)
class GuardIf(If):
    """The ``If`` of a guard the description writes (``if tx == 0: STATEMENT``) around a statement's IR: an
    ``If`` in every respect, told apart from a variant's own thread election (the instruction lists compare
    what the variant emitted)."""


@dataclass(eq=False)
class Grid(Stmt):
    """Serial loop nest ``for i, j in T.grid(4, 6)``."""

    vars: tuple[LoopVar, ...]
    extents: tuple[int, ...]
    body: Stmt


@dataclass(eq=False)
class Store(Stmt):
    """Scalar element store ``buf[indices] = value``."""

    buf: Buffer
    indices: tuple[Expr, ...]
    value: Expr


@dataclass(eq=False)
class VecMove(Stmt):
    """One vector move of ``elems`` contiguous elements (``elems * elem_bytes`` ≤ 16 bytes).

    ``dst_index`` / ``src_index`` are physical element indices: into the per-thread
    register storage for a local buffer, the element offset after the buffer's layout
    otherwise (row-major for global memory; permuted or swizzled for shared memory).
    Lowered to ``ld.global.v4.u32``-style PTX: one load or store between registers and
    memory (``reg``), or, memory to memory (``gmem_smem``), one load into scratch
    registers and one store from them.
    """

    dst: Buffer
    dst_index: Expr
    src: Buffer
    src_index: Expr
    elems: int

    @property
    def nbytes(self) -> int:
        return self.elems * self.dst.elem_bytes


@dataclass(eq=False)
class LdStMatrix(Stmt):
    """One ``ldmatrix`` / ``stmatrix .sync.aligned.m8n8.x{num}[.trans].shared.b16`` by every thread
    of the executing warps (warp-collective; semantics in :mod:`tilemagic.arch.ldmatrix`).

    ``regs[i]`` is the 32-bit word of ``local``'s per-thread storage that holds matrix ``i``;
    ``addr`` the element index into ``smem`` of the matrix row this thread supplies
    (row ``laneid % 8`` of matrix ``laneid // 8``).
    """

    op: str  # "ld" (shared -> registers) | "st" (registers -> shared)
    num: int
    trans: bool
    local: Buffer
    regs: tuple[Expr, ...]
    smem: Buffer
    addr: Expr

    @property
    def chain(self) -> str:
        from ..arch.ldmatrix import chain

        return chain(self.op, self.num, self.trans)


@dataclass(eq=False)
class TcgenAlloc(Stmt):
    """``tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [addr], ncols`` (warp-wide)."""

    addr: Buffer
    ncols: int


@dataclass(eq=False)
class TcgenRelinquish(Stmt):
    """``tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned``."""


@dataclass(eq=False)
class TcgenDealloc(Stmt):
    """``tcgen05.dealloc.cta_group::1.sync.aligned.b32 addr[0], ncols`` (warp-wide)."""

    addr: Buffer
    ncols: int


@dataclass(eq=False)
class TcgenFence(Stmt):
    """``tcgen05.fence::before_thread_sync`` / ``::after_thread_sync``."""

    kind: str


@dataclass(eq=False)
class TcgenLdSt(Stmt):
    """One ``tcgen05.ld`` / ``tcgen05.st`` issued by every thread of the executing warps.

    Registers are ``regs`` consecutive 32-bit words of ``local``'s per-thread storage
    starting at word ``reg_base``.  The TMEM address is ``addr[0]`` plus the
    immediates ``row`` (lanes) and ``col`` (32-bit columns), composed as TVM's
    ``get_tmem_addr``.
    """

    op: str  # "ld" | "st"
    shape: str
    num: int
    local: Buffer
    reg_base: int
    regs: int
    addr: Buffer
    row: int
    col: int
    tmem: Buffer | None = None  # the TMEM buffer this instruction touches (heatmaps)

    @property
    def chain(self) -> str:
        return f"tcgen05.{self.op}.sync.aligned.{self.shape}.x{self.num}.b32"


@dataclass(eq=False)
class TcgenCp(Stmt):
    """One ``tcgen05.cp.cta_group::N.<shape>[.<multicast>] [taddr], desc`` by every executing thread (PTX ISA 9.0
    §9.7.16.9.1; TVM 0.27 variant ``smem->tmem``, single-thread exec scope: the caller's guard elects one).

    The copy is asynchronous: it reads the shared-memory matrix the descriptor describes (through the async
    proxy) and writes TMEM; it completes, in issue order, before the issuing thread's next ``tcgen05.commit``
    arrives on its mbarrier (§9.7.16.6.1).  Until that phase is observed the source must not be written and the
    destination not read (and a reading thread needs ``tcgen05.fence::after_thread_sync`` after its wait).

    The descriptor is ``arch.smem_desc.encode(base(smem) + smem_offset, lbo, sbo, layout)`` (version 1, base
    offset 0, LBO mode 0, as TVM), built at run time from the buffer's shared address; :meth:`descriptor` gives
    it for a base.  Rows and chunks read: :func:`tilemagic.layout.smem_matrix.cp_source_addresses`; lanes and
    columns written: :func:`tilemagic.arch.tcgen05.cp_cells` at lane ``addr.lane + row`` and column
    ``addr.col + col``.  ``smem``'s base must be aligned to ``arch.smem_desc.PATTERN_PERIOD[layout]``
    (:func:`shared_alignment`).
    """

    key: str  # arch.tcgen05.CP_SHAPES key: "128x256b", "64x128b.warpx2::02_13", ...
    smem: Buffer
    smem_offset: int  # bytes from smem's base to the matrix start address
    lbo: int  # bytes (multiple of 16)
    sbo: int  # bytes (multiple of 16)
    layout: int  # descriptor layout type code (arch.smem_desc.LAYOUT_TYPES)
    addr: Buffer  # the shared slot holding the TMEM base address
    row: int  # lanes added to the base address's lane
    col: int  # 32-bit columns added
    tmem: Buffer | None = None  # the TMEM buffer this instruction writes (pictures)
    cta_group: int = 1

    @property
    def chain(self) -> str:
        from ..arch.tcgen05 import cp_chain

        return cp_chain(self.key, self.cta_group)

    def descriptor(self, smem_base: int) -> int:
        """The 64-bit descriptor when ``smem`` starts at shared byte address ``smem_base``."""
        from ..arch.smem_desc import encode

        return encode(smem_base + self.smem_offset, self.lbo, self.sbo, self.layout)


@dataclass(eq=False)
class TcgenCommit(Stmt):
    """``tcgen05.commit.cta_group::N.mbarrier::arrive::one.shared::cluster[.multicast::cluster].b64 [bar][, mask]``
    by every executing thread (PTX ISA 9.0 §9.7.16.12.1).

    Asynchronous: once every asynchronous tcgen05 operation (``tcgen05.cp``) this thread issued before it has
    completed, one arrive-on (count 1) on ``bar`` — with ``cta_mask`` (``.multicast::cluster``) on ``bar`` in every
    CTA of the mask.  It is implicitly a ``tcgen05.fence::before_thread_sync``.  A waiter that observes the phase
    sees the copies' TMEM writes after its own ``tcgen05.fence::after_thread_sync``.
    """

    bar: Buffer
    cta_group: int = 1
    cta_mask: int | None = None

    @property
    def chain(self) -> str:
        from ..arch.tcgen05 import commit_chain

        return commit_chain(self.cta_group, self.cta_mask is not None)


@dataclass(eq=False)
class TcgenWait(Stmt):
    """``tcgen05.wait::ld.sync.aligned`` / ``tcgen05.wait::st.sync.aligned``."""

    kind: str


@dataclass(eq=False)
class Barrier(Stmt):
    """``__syncthreads()`` (TIRx ``T.cuda.cta_sync()``)."""


# ----------------------------------------------------------------------------- asynchronous copies
@dataclass(eq=False)
class MbarInit(Stmt):
    """``mbarrier.init.shared::cta.b64 [bar], count`` (PTX ISA 9.0 §9.7.13.15.9): phase 0, ``count`` pending
    arrivals, tx-count 0.  Issued by one thread in the kernel's prologue."""

    bar: Buffer
    count: int


@dataclass(eq=False)
class MbarArrive(Stmt):
    """``mbarrier.arrive[.expect_tx].shared::cta.b64 _, [bar][, tx]`` by every executing thread (PTX ISA 9.0
    §9.7.13.15.11-12): each thread first raises the current phase's tx-count by ``expect_tx`` bytes (0: a
    plain arrive), then arrives once (release semantics).

    ``auto_from`` names the copies whose bytes ``expect_tx`` was derived from (``expect_tx=auto``): the
    source lines and bytes of each, for the IR comment and the report; empty when the user gave the number.
    """

    bar: Buffer
    expect_tx: int = 0
    auto_from: tuple[tuple[int, int], ...] = ()  # ((source line, bytes), ...)


@dataclass(eq=False)
class MbarWait(Stmt):
    """Wait until the phase of parity ``parity`` of ``bar`` has completed: a loop on
    ``mbarrier.try_wait.parity.shared::cta.b64`` (PTX ISA 9.0 §9.7.13.15.16; acquire semantics): it succeeds
    iff the barrier's current phase has the other parity, i.e. the phase ``parity`` names is the one that
    completed last."""

    bar: Buffer
    parity: int


@dataclass(eq=False)
class Fence(Stmt):
    """``fence.proxy.async.shared::cta`` (``kind="proxy_async"``: orders this thread's generic-proxy accesses
    of shared memory with async-proxy ones, PTX ISA 9.0 §9.7.13.4) or ``fence.mbarrier_init.release.cluster``
    (``kind="mbarrier_init"``: makes the thread's earlier ``mbarrier.init`` visible, §9.7.13.4)."""

    kind: str  # "proxy_async" | "mbarrier_init"


@dataclass(eq=False)
class CpAsync(Stmt):
    """One ``cp.async.{ca|cg}.shared.global [dst], [src], nbytes`` by every executing thread (PTX ISA 9.0
    §9.7.9.25.3.1; ``.cg`` exactly when 16 bytes, as TVM's ``ldgsts``): ``elems`` contiguous elements from
    global ``src`` at element index ``src_index`` to shared ``dst`` at ``dst_index`` (physical element
    indices, as :class:`VecMove`'s).  Asynchronous: the bytes land when the thread's ``cp.async.wait_group``
    covering its commit group returns (visible to the thread itself; to others after a barrier)."""

    dst: Buffer
    dst_index: Expr
    src: Buffer
    src_index: Expr
    elems: int

    @property
    def nbytes(self) -> int:
        return self.elems * self.dst.elem_bytes

    @property
    def chain(self) -> str:
        return f"cp.async.{'cg' if self.nbytes == 16 else 'ca'}.shared.global"


@dataclass(eq=False)
class AsyncGroup(Stmt):
    """Commit groups of the executing thread.

    ``bulk=False``: ``cp.async.commit_group`` / ``cp.async.wait_group n`` (PTX ISA 9.0 §9.7.9.25.3.2-3);
    ``bulk=True``: ``cp.async.bulk.commit_group`` / ``cp.async.bulk.wait_group[.read] n`` (§9.7.9.25.6).
    ``wait`` returns when at most ``n`` of the thread's newest groups are pending; ``read``: only their
    source reads must be done (the shared source may be reused; the destination may not yet be written).
    """

    kind: str  # "commit" | "wait"
    bulk: bool = False
    n: int = 0
    read: bool = False


@dataclass(eq=False)
class TensorMap:
    """A ``CUtensorMap`` of tile mode the host encodes with ``cuTensorMapEncodeTiled`` (CUDA driver API) and
    the kernel receives as a ``const __grid_constant__ CUtensorMap`` parameter named ``name``.

    Every tuple is in CUDA order (dimension 0 innermost).  The descriptor's element may be wider than the
    buffer's (``elem_bytes`` > ``buf.elem_bytes``: TVM's unit promotion to ``uint16``/``uint32``/``uint64``).

    Attributes
    ----------
    dtype : str
        ``CUtensorMapDataType`` member without its prefix (``FLOAT16``, ``UINT32``, ...).
    dims : tuple of int
        ``globalDim``, in descriptor elements.
    strides : tuple of int
        ``globalStrides`` in bytes of dimensions 1..rank-1 (multiples of 16).
    box : tuple of int
        ``boxDim``, elements (each 1..256).
    elem_strides : tuple of int
        ``elementStrides`` (traversal strides; 1 for every dimension tilemagic plans).
    swizzle : int
        0 none, 1 32B, 2 64B, 3 128B (``CU_TENSOR_MAP_SWIZZLE_*``).
    oob_fill : int
        0: out-of-bounds elements read as zero; 1: as NaN (``..._NAN_REQUEST_ZERO_FMA``).
    l2_promotion : int
        0 none, 1 64B, 2 128B, 3 256B.
    base_elem : int
        Element offset (in ``buf``'s elements) of the tensor's origin from ``buf``'s base.
    """

    name: str
    buf: Buffer
    dtype: str
    elem_bytes: int
    dims: tuple[int, ...]
    strides: tuple[int, ...]
    box: tuple[int, ...]
    elem_strides: tuple[int, ...]
    swizzle: int = 0
    oob_fill: int = 0
    l2_promotion: int = 2
    base_elem: int = 0

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def box_bytes(self) -> int:
        """Bytes one issue moves, out-of-bounds elements included (the complete-tx count of a G2S copy)."""
        return math.prod(self.box) * self.elem_bytes

    def key(self) -> tuple:
        """What makes two descriptors the same one (TVM's descriptor cache key: coordinates excluded)."""
        return (self.buf.name, self.dtype, self.elem_bytes, self.dims, self.strides, self.box, self.elem_strides,
                self.swizzle, self.oob_fill, self.l2_promotion, self.base_elem)


@dataclass(eq=False)
class TmaCopy(Stmt):
    """One ``cp.async.bulk.tensor.<rank>d`` of tile mode by every executing thread (PTX ISA 9.0 §9.7.9.25.5.2).

    ``direction="g2s"``: ``.shared::cluster.global.mbarrier::complete_tx::bytes`` — the box at ``coords`` of
    ``tmap`` lands in ``smem`` at byte ``smem_offset`` (box-linear, dimension 0 fastest, then the swizzle of
    the map on the shared address; out-of-bounds elements filled as ``tmap.oob_fill`` says) and completes
    ``tmap.box_bytes`` bytes of ``mbar``'s current phase.  ``direction="s2g"``: ``.global.shared::cta.tile
    .bulk_group`` — the reverse, out-of-bounds elements dropped, completed through bulk async-groups;
    ``reduce`` (``add``, ``min``, ...) makes it ``cp.reduce.async.bulk.tensor``.

    ``coords`` are the box's starting coordinates in CUDA order, in descriptor elements (signed 32-bit).
    """

    direction: str  # "g2s" | "s2g"
    tmap: TensorMap
    smem: Buffer
    smem_offset: int  # bytes
    coords: tuple[Expr, ...]
    mbar: Buffer | None = None
    cache_hint: str | None = None
    reduce: str | None = None
    #: G2S multicast (PTX ISA 9.0 §9.7.9.25.5.2 ``.multicast::cluster``): bit i set = the CTA of rank i of the
    #: cluster receives the box at the same shared offset and the complete-tx on its mbarrier at the same
    #: offset; None = the unicast form (the issuing CTA only).  A one-bit mask stays a multicast (unlike TVM
    #: 0.27, which emits the unicast form into the issuing CTA).
    cta_mask: int | None = None

    @property
    def chain(self) -> str:
        r = self.tmap.rank
        if self.direction == "g2s":
            mc = ".multicast::cluster" if self.cta_mask is not None else ""
            return f"cp.async.bulk.tensor.{r}d.shared::cluster.global.mbarrier::complete_tx::bytes{mc}"
        if self.reduce:
            return f"cp.reduce.async.bulk.tensor.{r}d.global.shared::cta.{self.reduce}.tile.bulk_group"
        return f"cp.async.bulk.tensor.{r}d.global.shared::cta.tile.bulk_group"


@dataclass(eq=False)
class ClusterSync(Stmt):
    """``barrier.cluster.arrive.aligned; barrier.cluster.wait.aligned`` (PTX ISA 9.0 §9.7.13.3; TIRx
    ``T.cuda.cluster_sync()``): every thread of every CTA of the cluster arrives, then waits until all have
    arrived (release/acquire at cluster scope; asynchronous operations are not covered)."""


@dataclass(eq=False)
class BulkCopy(Stmt):
    """One ``cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [dst], [src], nbytes,
    [mbar]`` by every executing thread (PTX ISA 9.0 §9.7.9.25.4.1; TVM 0.27 variant ``dsmem``): ``nbytes``
    contiguous bytes of this CTA's shared ``src`` from byte ``src_offset`` to shared ``dst`` at byte
    ``dst_offset`` *in the CTA of cluster rank* ``remote``; the copy completes ``nbytes`` of the tx-count of
    ``mbar`` in that same remote CTA.  Both addresses are mapped with ``mapa.shared::cluster.u32`` (TVM 0.27
    truncates a generic ``mapa.u64`` result instead).  ``nbytes`` is a multiple of 16, both offsets 16-byte
    aligned (with the buffers' bases)."""

    src: Buffer
    src_offset: int  # bytes
    dst: Buffer
    dst_offset: int  # bytes
    nbytes: int
    remote: Expr  # the destination CTA's rank in the cluster
    mbar: Buffer

    chain = "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes"


# ----------------------------------------------------------------------------- kernel
@dataclass(eq=False)
class Kernel:
    """A lowered kernel: one CTA of ``threads`` threads.

    ``params`` are the global buffers in declaration order (the CUDA kernel's
    arguments).  ``tmem_cols`` is the allocation size in 32-bit columns (0 when no
    TMEM is used); ``tmem_addr`` the shared ``uint32[1]`` slot that receives it.
    """

    name: str
    threads: int
    params: tuple[Buffer, ...]
    shared: tuple[Buffer, ...]
    locals: tuple[Buffer, ...]
    tmem: tuple[Buffer, ...]
    tmem_cols: int
    tmem_addr: Buffer | None
    body: Seq
    #: the tensor maps TMA copies use, one per distinct :meth:`TensorMap.key`, after the global buffers in the
    #: CUDA kernel's parameters (``const __grid_constant__ CUtensorMap NAME``)
    tensormaps: tuple[TensorMap, ...] = ()
    #: CTAs per cluster (x only; 1: no cluster).  The CUDA kernel carries ``__cluster_dims__(cluster, 1, 1)``;
    #: the round trip launches one cluster; ``ThreadVar("cta_rank")`` is the CTA's rank in it
    #: (``%cluster_ctarank``).  Shared memory, mbarriers and TMEM are per CTA; global memory is common.
    cluster: int = 1


def shared_alignment(kernel: Kernel) -> dict[str, int]:
    """Byte alignment of every shared buffer an asynchronous-proxy reader swizzles by absolute address.

    A TMA copy's buffer: 128 B, or the swizzle pattern's period (1024/512/256 B for 128B/64B/32B,
    :func:`tilemagic.arch.tma.shared_alignment`); a ``tcgen05.cp`` source: the descriptor layout's pattern period
    (:data:`tilemagic.arch.smem_desc.PATTERN_PERIOD`: the descriptor's base offset is 0).  The code generator
    declares the buffers so, and the simulator places them so (:func:`shared_bases`).
    """
    from ..arch import smem_desc, tma

    out: dict[str, int] = {}
    for s in walk(kernel.body):
        if isinstance(s, TmaCopy):
            out[s.smem.name] = max(out.get(s.smem.name, 16), tma.shared_alignment(s.tmap.swizzle))
        elif isinstance(s, TcgenCp):
            out[s.smem.name] = max(out.get(s.smem.name, 16), smem_desc.PATTERN_PERIOD.get(s.layout, 16))
    return out


def shared_bases(kernel: Kernel) -> dict[str, int]:
    """A shared byte address for every shared buffer of the kernel (the simulator's shared window): declaration
    order, each at the next multiple of its alignment (:func:`shared_alignment`, else 16 B; an mbarrier 8 B).

    The hardware places ``__shared__`` arrays as the compiler likes; what a descriptor-reading instruction
    depends on is only ``address - base`` and ``base mod`` the pattern period, which both places agree on.
    """
    align = shared_alignment(kernel)
    out: dict[str, int] = {}
    at = 0
    for b in kernel.shared:
        a = 8 if b.is_mbarrier else align.get(b.name, 16)
        at = -(-at // a) * a
        out[b.name] = at
        at += b.nbytes
    return out


def content_key(kernel: Kernel) -> str:
    """A key of the kernel's content: the sha256 (hex) of the pickled kernel.

    Two kernels get the same key exactly when every field is equal (buffers, layouts,
    statements, spans); an edited kernel gets a new key.  The pipeline's kernel memo and
    the PNG cache of the pictures are keyed on it.

    Raises
    ------
    pickle.PicklingError, TypeError, AttributeError
        Something in a hand-built kernel does not pickle.
    """
    import hashlib
    import pickle

    return hashlib.sha256(pickle.dumps(kernel, protocol=pickle.HIGHEST_PROTOCOL)).hexdigest()


def walk_scoped(stmt: Stmt, scope: tuple[Stmt, ...] = ()) -> Iterator[tuple[Stmt, tuple[Stmt, ...]]]:
    """Every statement of the tree, pre-order (program order), with its enclosing ``If``/``Grid``
    nodes, outermost first: the one statement traversal (:func:`walk` drops the scope)."""
    yield stmt, scope
    if isinstance(stmt, Seq):
        for s in stmt.body:
            yield from walk_scoped(s, scope)
    elif isinstance(stmt, If):
        yield from walk_scoped(stmt.then, scope + (stmt,))
    elif isinstance(stmt, Grid):
        yield from walk_scoped(stmt.body, scope + (stmt,))


def walk(stmt: Stmt) -> Iterator[Stmt]:
    """Yield every statement of the tree, pre-order."""
    return (s for s, _ in walk_scoped(stmt))


def stmt_exprs(stmt: Stmt) -> tuple[Expr, ...]:
    """The expressions one statement holds itself (not those of the statements nested in it)."""
    if isinstance(stmt, If):
        return (stmt.cond,)
    if isinstance(stmt, Store):
        return (*stmt.indices, stmt.value)
    if isinstance(stmt, VecMove):
        return (stmt.dst_index, stmt.src_index)
    if isinstance(stmt, LdStMatrix):
        return (stmt.addr, *stmt.regs)
    if isinstance(stmt, CpAsync):
        return (stmt.dst_index, stmt.src_index)
    if isinstance(stmt, TmaCopy):
        return stmt.coords
    if isinstance(stmt, BulkCopy):
        return (stmt.remote,)
    return ()


def stmt_loads(stmt: Stmt) -> tuple[Load, ...]:
    """Every ``Load`` of the expressions one statement holds itself (:func:`stmt_exprs`), in order."""
    out: tuple[Load, ...] = ()
    for e in stmt_exprs(stmt):
        hit = e.__dict__.get("_loads")
        out += _loads_of(e) if hit is None else hit
    return out


def stmt_buffers(stmt: Stmt, lds: tuple[Load, ...] | None = None) -> tuple[list[Buffer], list[Buffer]]:
    """``(read, written)``: the buffers one statement reads and writes itself (not its nested statements).

    Reads are the loads of its expressions (indices included), a ``VecMove``'s source, the source side of
    ``ldmatrix``/``stmatrix`` and the registers of a ``tcgen05.st``; writes are a ``Store``'s buffer, a
    ``VecMove``'s destination, the other side of ``ldmatrix``/``stmatrix`` and the registers of a
    ``tcgen05.ld``.  The TMEM address slot counts as read by tcgen05 ops and dealloc, written by alloc; TMEM
    itself is no :class:`Buffer`.  The one answer the simulator, its happens-before tracker and the static
    hazard pass share.  ``lds``: the statement's :func:`stmt_loads`, when the caller has them.
    """
    read = [ld.buf for ld in (stmt_loads(stmt) if lds is None else lds)]
    written: list[Buffer] = []
    if isinstance(stmt, Store):
        written.append(stmt.buf)
    elif isinstance(stmt, VecMove):
        read.append(stmt.src)
        written.append(stmt.dst)
    elif isinstance(stmt, LdStMatrix):
        src, dst = (stmt.smem, stmt.local) if stmt.op == "ld" else (stmt.local, stmt.smem)
        read.append(src)
        written.append(dst)
    elif isinstance(stmt, TcgenLdSt):
        read.append(stmt.addr)
        (written if stmt.op == "ld" else read).append(stmt.local)
    elif isinstance(stmt, TcgenCp):
        read += [stmt.smem, stmt.addr]
    elif isinstance(stmt, TcgenAlloc):
        written.append(stmt.addr)
    elif isinstance(stmt, TcgenDealloc):
        read.append(stmt.addr)
    elif isinstance(stmt, CpAsync):
        read.append(stmt.src)
        written.append(stmt.dst)
    elif isinstance(stmt, TmaCopy):
        if stmt.direction == "g2s":
            read.append(stmt.tmap.buf)
            written.append(stmt.smem)
        else:
            read.append(stmt.smem)
            written.append(stmt.tmap.buf)
    elif isinstance(stmt, BulkCopy):
        read.append(stmt.src)
        written.append(stmt.dst)
    return read, written


def iter_exprs(node: Stmt | Expr) -> Iterator[Expr]:
    """Every expression of a statement tree (:func:`walk`, :func:`stmt_exprs`) or in an expression
    (``Bin`` operands, ``Load`` indices), pre-order: the one traversal of the printer, the code
    generator, the simulator and the hazard check."""
    if isinstance(node, Stmt):
        yield from (x for s in walk(node) for e in stmt_exprs(s) for x in iter_exprs(e))
        return
    yield node
    for sub in (node.a, node.b) if isinstance(node, Bin) else node.indices if isinstance(node, Load) else ():
        yield from iter_exprs(sub)


def loads(node: Stmt | Expr) -> Iterator[Load]:
    """Every ``Load`` of :func:`iter_exprs` ``(node)``, in its order.

    For an expression the answer is kept with the node (expressions are immutable and hash-consed, so a subtree
    shared by many statements is looked into once, and most hold no load at all)."""
    if isinstance(node, Stmt):
        return (ld for s in walk(node) for e in stmt_exprs(s) for ld in _loads_of(e))
    return iter(_loads_of(node))


def _loads_of(e: Expr) -> tuple[Load, ...]:
    hit = e.__dict__.get("_loads")  # (kept in the node itself: not a field, so not in its key, copy or pickle)
    if hit is None:
        if isinstance(e, Bin):
            hit = _loads_of(e.a) + _loads_of(e.b)
        elif isinstance(e, Load):
            hit = (e,) + tuple(ld for i in e.indices for ld in _loads_of(i))
        else:
            hit = ()
        object.__setattr__(e, "_loads", hit)
    return hit
