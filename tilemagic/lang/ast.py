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
BUFFER_KINDS = ("global", "shared", "local", "tmem")
INIT_KEYWORDS = ("random", "arange", "zeros")
TCGEN05_SHAPES = ("32x32b", "16x64b", "16x128b", "16x256b")


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
class CopyStmt:
    """``SCOPE.copy DST <- SRC [dispatch=VARIANT]`` (``is_async`` for ``copy_async``)."""

    scope: str  # one of SCOPES ("warpgroup" already mapped to "wg")
    is_async: bool
    dst: Region
    src: Region
    dispatch: str | None
    span: Span
    op_span: Span  # the `wg.copy_async` token
    dispatch_span: Span | None = None

    @property
    def op_name(self) -> str:
        return "copy_async" if self.is_async else "copy"


@dataclass(frozen=True)
class WaitStmt:
    """``wait ld`` / ``wait st``."""

    kind: str  # "ld" | "st"
    span: Span


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


Stmt = CopyStmt | WaitStmt | SyncStmt | CheckStmt


@dataclass
class Program:
    """A parsed cell: optional kernel line, declarations and statements, in source order."""

    source: str
    kernel: KernelDecl | None = None
    buffers: tuple[BufferDecl, ...] = ()
    stmts: tuple[Stmt, ...] = ()
    # statements and declarations interleaved in source order (for printers)
    items: tuple[KernelDecl | BufferDecl | Stmt, ...] = field(default=())
