"""AST of the ``%%tilecopy`` description language (docs/language.md).

Plain dataclasses; every node has a :class:`~tilemagic.errors.Span` (1-based
line/column).  The parser (``parser.py``) builds them; ``check.py`` resolves
names, shapes and layouts into a typed program.  No node holds Python objects
from the notebook: an ``init`` naming a NumPy array is kept as a string and
looked up (never evaluated) at launch time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..arch.cluster import CTA_RANK
from ..arch.tcgen05 import CP_MULTICAST
from ..arch.threads import MEMORY_AXES, THREAD_AXES
from ..arch.tma import CACHE_HINTS, OOB_FILL, TMA_REDUCE_OPS
from ..errors import Span

# Canonical dtype names; the parser maps the short aliases (f32, f16, bf16, u8, i8, i32).
DTYPES = ("float32", "float16", "bfloat16", "uint8", "int8", "int32")
DTYPE_ALIASES = {
    "float32": "float32", "f32": "float32",
    "float16": "float16", "f16": "float16",
    "bfloat16": "bfloat16", "bf16": "bfloat16",
    "uint8": "uint8", "u8": "uint8",
    "int8": "int8", "i8": "int8",
    "int32": "int32", "i32": "int32",
}
# Exec scopes; "warpgroup" is an alias the parser maps to "wg".
SCOPES = ("thread", "warp", "wg", "cta")
# Axes allowed in `n@AXIS` strides and offsets (tvm.tirx.layout names), from the hardware tables.
AXES = (*MEMORY_AXES, *THREAD_AXES)
#: Axes a guard may compare (``if tx == 0:``), from the hardware table, and the CTA's rank in its cluster
#: (``if cta_rank == 0:``, :data:`tilemagic.arch.cluster.CTA_RANK`).
THREAD_AXIS_NAMES = (*THREAD_AXES, CTA_RANK)
#: Operators of an integer expression in ``cta_rank`` (a region bound, ``remote_cta_id=``), Python's meaning.
RANK_OPS = ("+", "-", "*", "//", "%", "^")
BUFFER_KINDS = ("global", "shared", "local", "tmem")
INIT_KEYWORDS = ("random", "arange", "zeros")
TCGEN05_SHAPES = ("32x32b", "16x64b", "16x128b", "16x256b")
#: Comparison operators of a guard (``if tx == 0: ...``).
GUARD_OPS = ("==", "!=", "<", "<=", ">", ">=")
#: ``copy_async`` options and their allowed values (None: any name; ``mbar`` names a declared mbarrier).
#: ``oob``, ``cache_hint``, ``cta_mask``, ``remote_cta_id`` and ``use_tma_reduce`` spell TVM TIRx's ``copy_async``
#: config (``apache-tvm 0.27.0.post1``); their values are the hardware tables' (:data:`tilemagic.arch.tma.OOB_FILL`,
#: :data:`tilemagic.arch.tma.CACHE_HINTS`, :data:`tilemagic.arch.tma.TMA_REDUCE_OPS`).  ``cta_mask`` (an integer
#: literal) and ``remote_cta_id`` (an integer expression in ``cta_rank``) are :data:`EXPR_OPTIONS`.
COPY_OPTIONS: dict[str, tuple[str, ...] | None] = {
    "dispatch": None,
    "mbar": None,
    "oob": tuple(OOB_FILL),
    "cache_hint": tuple(CACHE_HINTS),
    "cta_mask": None,
    "remote_cta_id": None,
    "use_tma_reduce": tuple(TMA_REDUCE_OPS),
    # tcgen05.cp (variant smem->tmem, TVM 0.27 ``tcgen05_cp.py``): the parser checks each value's form, the
    # variant judges the combinations (PTX ISA 9.0 §9.7.16.9.1)
    "shape": tuple(CP_MULTICAST),
    "multicast": tuple(m for ms in CP_MULTICAST.values() for m in ms if m),
    "cta_group": None,
    "decompress": None,
}
#: the options whose value is an integer literal (``cta_group=1``): ``CopyOption.expr`` holds the int
INT_OPTIONS = ("cta_group",)
#: the options whose value is any word (``decompress=``: declined by the variant with its reason)
FREE_OPTIONS = ("decompress",)
#: the two ``tcgen05.fence::KIND`` statements (PTX ISA 9.0 §9.7.16.11: ``tcgen05.fence::before_thread_sync``
#: orders the thread's earlier tcgen05 operations before a later sync, ``::after_thread_sync`` its later ones after
#: an earlier sync)
TCGEN05_FENCES = ("after_thread_sync", "before_thread_sync")
#: The options whose value is an integer expression (:class:`RankExpr` or int in ``CopyOption.expr``).
EXPR_OPTIONS = ("cta_mask", "remote_cta_id")
#: The options a synchronous ``copy`` takes (the others are ``copy_async``'s only).
SYNC_COPY_OPTIONS = ("dispatch",)


# ----------------------------------------------------------------------------- layouts
@dataclass(frozen=True)
class Stride:
    """``n`` (axis ``m``) or ``n@AXIS``."""

    value: int
    axis: str
    span: Span


@dataclass(frozen=True)
class Replica:
    """``+ R[e : s@TLane]`` / ``+ R[(e0, e1) : (s0@TLane, s1@TLane)]``: every element is also at these lane
    offsets (TVM TIRx ``TileLayout`` replica iters, ``apache-tvm 0.27.0.post1``; a ``tcgen05.cp`` multicast's
    copies)."""

    extents: tuple[int, ...]
    strides: tuple[Stride, ...]
    span: Span


@dataclass(frozen=True)
class SLayout:
    """``S[(e0, e1, ...) : (s0, s1, ...)] [+ n@AXIS ...] [+ R[...] ...]`` or ``S[d0, d1, ...]``.

    ``strides`` is None for the extents-only (row-major on ``m``) form.
    A 1-D ``S[e : s]`` has one extent and one stride.  Offsets and replicas may follow in any order.
    """

    extents: tuple[int, ...]
    strides: tuple[Stride, ...] | None
    offsets: tuple[Stride, ...]
    span: Span
    replicas: tuple[Replica, ...] = ()


@dataclass(frozen=True)
class DatapathLayout:
    """``datapath(D)``, ``datapath(F, sub_slab=0|1)``, ``datapath(B)``."""

    letter: str
    sub_slab: int
    span: Span


@dataclass(frozen=True)
class FragLayout:
    """``frag(32x32b|16x64b|16x128b|16x256b)``: the tcgen05 register fragment."""

    shape: str
    span: Span


@dataclass(frozen=True)
class SwizzleLayout:
    """``swizzle(per_element, swizzle_len, atom_len [, S[...]])``: TVM's ``ComposeLayout``.

    ``tile`` is None for the bare form (the swizzle applies to the buffer's row-major order).
    """

    per_element: int
    swizzle_len: int
    atom_len: int
    tile: SLayout | None
    span: Span


LayoutExpr = SLayout | DatapathLayout | FragLayout | SwizzleLayout


# ----------------------------------------------------------------------------- declarations
@dataclass(frozen=True)
class KernelDecl:
    """``kernel NAME [threads=N] [cluster=C]``: ``cluster`` CTAs per cluster (1: no cluster)."""

    name: str
    threads: int | None
    span: Span
    name_span: Span
    threads_span: Span | None = None
    cluster: int = 1
    cluster_span: Span | None = None


@dataclass(frozen=True)
class Alias:
    """``at OTHER [+ COLS]``: alias another tmem buffer at a 32-bit column offset."""

    target: str
    cols: int
    span: Span
    target_span: Span


@dataclass(frozen=True)
class BufferDecl:
    kind: str  # one of BUFFER_KINDS
    name: str
    dtype: str  # canonical, one of DTYPES
    shape: tuple[int, ...]
    layout: LayoutExpr | None
    init: str | None  # global only: INIT_KEYWORDS or a notebook variable name
    alias: Alias | None  # tmem only
    span: Span  # the whole statement
    name_span: Span
    dtype_span: Span
    shape_span: Span
    init_span: Span | None = None


@dataclass(frozen=True)
class MbarrierDecl:
    """``mbarrier NAME [count=N]``: a shared ``uint64`` mbarrier object with arrival count ``count`` (default 1)."""

    name: str
    count: int
    span: Span
    name_span: Span
    count_span: Span | None = None


# ----------------------------------------------------------------------------- guards
@dataclass(frozen=True)
class GuardTerm:
    """``AXIS OP VALUE`` of a guard (``tx == 0``); ``axis`` a thread axis of :mod:`tilemagic.arch.threads`."""

    axis: str
    op: str  # one of GUARD_OPS
    value: int
    span: Span


@dataclass(frozen=True)
class Guard:
    """``if TERM [and TERM ...]:`` before a statement: only the threads satisfying every term execute it."""

    terms: tuple[GuardTerm, ...]
    span: Span  # from `if` to the colon

    def __str__(self) -> str:
        return " and ".join(f"{t.axis} {t.op} {t.value}" for t in self.terms)


# ----------------------------------------------------------------------------- rank expressions
@dataclass(frozen=True)
class RankExpr:
    """An integer expression in the CTA's rank (``64*cta_rank+64``, ``cta_rank^1``).

    ``op`` is ``"cta_rank"`` (the rank), ``"const"`` (the integer ``value``) or one of :data:`RANK_OPS` applied
    to ``a`` and ``b`` with Python's meaning (``//`` and ``%`` floor, ``^`` bitwise XOR).  The parser keeps a
    plain integer as an ``int``: a ``RankExpr`` is only where the user wrote an expression.
    """

    op: str
    span: Span
    value: int = 0
    a: RankExpr | None = None
    b: RankExpr | None = None

    @property
    def uses_rank(self) -> bool:
        """Does the expression read ``cta_rank``?"""
        if self.op == "cta_rank":
            return True
        return any(x is not None and x.uses_rank for x in (self.a, self.b))

    def at(self, rank: int) -> int:
        """The value for the CTA of rank ``rank``.

        Raises
        ------
        ZeroDivisionError
            ``//`` or ``%`` by zero for this rank (its ``args[0]`` is the span of the divisor).
        """
        if self.op == "cta_rank":
            return rank
        if self.op == "const":
            return self.value
        assert self.a is not None and self.b is not None  # the parser builds binary nodes with both operands
        x, y = self.a.at(rank), self.b.at(rank)
        if self.op in ("//", "%") and y == 0:
            raise ZeroDivisionError(self.b.span)
        return {"+": x + y, "-": x - y, "*": x * y, "//": x // y if y else 0, "%": x % y if y else 0,
                "^": x ^ y}[self.op]

    def __str__(self) -> str:
        if self.op == "cta_rank":
            return CTA_RANK
        if self.op == "const":
            return str(self.value)
        return f"({self.a} {self.op} {self.b})"


def bound_at(v: int | RankExpr | None, rank: int) -> int | None:
    """A slice bound's value for the CTA of rank ``rank`` (an int or None as written stays as it is)."""
    return v.at(rank) if isinstance(v, RankExpr) else v


# ----------------------------------------------------------------------------- statements
@dataclass(frozen=True)
class Slice:
    """One index of a region: ``a:b`` (``start``/``stop`` None when omitted) or a point ``k``.

    A bound is an ``int`` where the user wrote an integer, a :class:`RankExpr` where they wrote an expression
    (a point ``k``: ``start`` is ``k``, ``stop`` is ``k + 1``).
    """

    start: int | RankExpr | None
    stop: int | RankExpr | None
    point: bool
    span: Span

    @property
    def uses_rank(self) -> bool:
        return any(isinstance(v, RankExpr) and v.uses_rank for v in (self.start, self.stop))


@dataclass(frozen=True)
class Region:
    """``NAME`` or ``NAME[a:b, :, k]`` with constant slices."""

    name: str
    slices: tuple[Slice, ...] | None
    span: Span
    name_span: Span

    @property
    def uses_rank(self) -> bool:
        """Does a bound of the region read ``cta_rank``?"""
        return any(s.uses_rank for s in self.slices or ())


@dataclass(frozen=True)
class CopyOption:
    """``KEY=VALUE`` after a copy's regions (``mbar=full``, ``oob=zero``, ``dispatch=tma_auto``)."""

    key: str
    value: str
    span: Span  # the whole pair
    key_span: Span
    value_span: Span
    #: the parsed value of an :data:`EXPR_OPTIONS` option (an int literal, or a :class:`RankExpr`)
    expr: int | RankExpr | None = None


@dataclass(frozen=True)
class CopyStmt:
    """``SCOPE.copy DST <- SRC [KEY=VALUE ...]`` (``is_async`` for ``copy_async``).

    ``dispatch`` is the ``dispatch=`` option's value; ``options`` holds every option as written (``dispatch``
    included), each key at most once.
    """

    scope: str  # one of SCOPES ("warpgroup" already mapped to "wg")
    is_async: bool
    dst: Region
    src: Region
    dispatch: str | None
    span: Span
    op_span: Span  # the `wg.copy_async` token
    dispatch_span: Span | None = None
    options: tuple[CopyOption, ...] = ()
    guard: Guard | None = None

    @property
    def op_name(self) -> str:
        return "copy_async" if self.is_async else "copy"

    def option(self, key: str) -> CopyOption | None:
        """The option ``key`` as written, or None."""
        return next((o for o in self.options if o.key == key), None)


@dataclass(frozen=True)
class WaitStmt:
    """``wait ld`` / ``wait st``."""

    kind: str  # "ld" | "st"
    span: Span
    guard: Guard | None = None


@dataclass(frozen=True)
class ArriveStmt:
    """``arrive BAR [expect_tx=BYTES|auto]``: every executing thread arrives once on ``BAR`` (after raising its
    tx-count by ``expect_tx`` bytes).  ``auto``: the bytes of the copies naming ``mbar=BAR`` up to the next
    ``wait BAR`` (resolved after lowering); ``expect_tx`` is None then, and None without the clause too."""

    bar: str
    expect_tx: int | None
    auto: bool
    span: Span
    bar_span: Span
    expect_span: Span | None = None
    guard: Guard | None = None


@dataclass(frozen=True)
class MbarWaitStmt:
    """``wait BAR phase P``: every executing thread waits until the phase of parity ``P`` of ``BAR`` completed."""

    bar: str
    phase: int
    span: Span
    bar_span: Span
    phase_span: Span
    guard: Guard | None = None


@dataclass(frozen=True)
class GroupStmt:
    """``commit_group`` / ``wait_group N`` (cp.async) and ``bulk_commit_group`` / ``bulk_wait_group N [read]``."""

    kind: str  # "commit" | "wait"
    bulk: bool
    n: int
    read: bool
    span: Span
    guard: Guard | None = None


@dataclass(frozen=True)
class FenceStmt:
    """``fence.proxy.async``: ``fence.proxy.async.shared::cta`` by every executing thread."""

    kind: str  # "proxy_async"
    span: Span
    guard: Guard | None = None


@dataclass(frozen=True)
class TcgenCommitStmt:
    """``tcgen05.commit BAR [cta_mask=M]``: each executing thread's earlier ``tcgen05.cp``s, once complete, arrive
    once on ``BAR`` (with ``cta_mask``: on ``BAR`` in every CTA of the mask; PTX ISA 9.0 §9.7.16.12.1)."""

    bar: str
    span: Span
    bar_span: Span
    cta_mask: int | None = None
    mask_span: Span | None = None
    guard: Guard | None = None


@dataclass(frozen=True)
class TcgenFenceStmt:
    """``tcgen05.fence::after_thread_sync`` / ``tcgen05.fence::before_thread_sync`` (PTX ISA 9.0 §9.7.16.11)."""

    kind: str  # one of TCGEN05_FENCES
    span: Span
    guard: Guard | None = None


@dataclass(frozen=True)
class SyncStmt:
    """``cta_sync``."""

    span: Span


@dataclass(frozen=True)
class ClusterSyncStmt:
    """``cluster_sync``: every thread of every CTA of the cluster (PTX ISA 9.0 §9.7.13.3 ``barrier.cluster``)."""

    span: Span


@dataclass(frozen=True)
class CheckStmt:
    """``check A == B``."""

    lhs: Region
    rhs: Region
    span: Span


Stmt = (CopyStmt | WaitStmt | SyncStmt | CheckStmt | ArriveStmt | MbarWaitStmt | GroupStmt | FenceStmt
        | ClusterSyncStmt | TcgenCommitStmt | TcgenFenceStmt)
#: statements that may carry a guard (``if COND: STATEMENT``)
GUARDABLE = (CopyStmt, WaitStmt, ArriveStmt, MbarWaitStmt, GroupStmt, FenceStmt, TcgenCommitStmt, TcgenFenceStmt)


@dataclass
class Program:
    """A parsed cell: optional kernel line, declarations and statements, in source order."""

    source: str
    kernel: KernelDecl | None = None
    buffers: tuple[BufferDecl, ...] = ()
    stmts: tuple[Stmt, ...] = ()
    # statements and declarations interleaved in source order (for printers)
    items: tuple[KernelDecl | BufferDecl | MbarrierDecl | Stmt, ...] = field(default=())
    mbarriers: tuple[MbarrierDecl, ...] = ()
