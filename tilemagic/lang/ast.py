"""AST of the ``%%tilecopy`` description language (docs/language.md).

Plain dataclasses; every node has a :class:`~tilemagic.errors.Span` (1-based
line/column).  The parser (``parser.py``) builds them; ``check.py`` resolves
names, shapes and layouts into a typed program.  No node holds Python objects
from the notebook: an ``init`` naming a NumPy array is kept as a string and
looked up (never evaluated) at launch time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..arch.threads import MEMORY_AXES, THREAD_AXES
from ..arch.tma import CACHE_HINTS, OOB_FILL
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
#: Axes a guard may compare (``if tx == 0:``), from the hardware table.
THREAD_AXIS_NAMES = THREAD_AXES
BUFFER_KINDS = ("global", "shared", "local", "tmem")
INIT_KEYWORDS = ("random", "arange", "zeros")
TCGEN05_SHAPES = ("32x32b", "16x64b", "16x128b", "16x256b")
#: Comparison operators of a guard (``if tx == 0: ...``).
GUARD_OPS = ("==", "!=", "<", "<=", ">", ">=")
#: ``copy_async`` options and their allowed values (None: any name; ``mbar`` names a declared mbarrier).
#: ``oob`` and ``cache_hint`` spell TVM TIRx's ``copy_async`` config (``apache-tvm 0.27.0.post1``); their values are
#: the hardware tables' (:data:`tilemagic.arch.tma.OOB_FILL`, :data:`tilemagic.arch.tma.CACHE_HINTS`).
COPY_OPTIONS: dict[str, tuple[str, ...] | None] = {
    "dispatch": None,
    "mbar": None,
    "oob": tuple(OOB_FILL),
    "cache_hint": tuple(CACHE_HINTS),
}
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
class SLayout:
    """``S[(e0, e1, ...) : (s0, s1, ...)] [+ n@AXIS ...]`` or ``S[d0, d1, ...]``.

    ``strides`` is None for the extents-only (row-major on ``m``) form.
    A 1-D ``S[e : s]`` has one extent and one stride.
    """

    extents: tuple[int, ...]
    strides: tuple[Stride, ...] | None
    offsets: tuple[Stride, ...]
    span: Span


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
    name: str
    threads: int | None
    span: Span
    name_span: Span
    threads_span: Span | None = None


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


# ----------------------------------------------------------------------------- statements
@dataclass(frozen=True)
class Slice:
    """One index of a region: ``a:b`` (``start``/``stop`` None when omitted) or a point ``k``."""

    start: int | None
    stop: int | None
    point: bool
    span: Span


@dataclass(frozen=True)
class Region:
    """``NAME`` or ``NAME[a:b, :, k]`` with constant slices."""

    name: str
    slices: tuple[Slice, ...] | None
    span: Span
    name_span: Span


@dataclass(frozen=True)
class CopyOption:
    """``KEY=VALUE`` after a copy's regions (``mbar=full``, ``oob=zero``, ``dispatch=tma_auto``)."""

    key: str
    value: str
    span: Span  # the whole pair
    key_span: Span
    value_span: Span


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
class SyncStmt:
    """``cta_sync``."""

    span: Span


@dataclass(frozen=True)
class CheckStmt:
    """``check A == B``."""

    lhs: Region
    rhs: Region
    span: Span


Stmt = CopyStmt | WaitStmt | SyncStmt | CheckStmt | ArriveStmt | MbarWaitStmt | GroupStmt | FenceStmt
#: statements that may carry a guard (``if COND: STATEMENT``)
GUARDABLE = (CopyStmt, WaitStmt, ArriveStmt, MbarWaitStmt, GroupStmt, FenceStmt)


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
