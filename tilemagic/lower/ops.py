"""Typed op calls handed to the dispatcher (TIRx ``TilePrimitiveCall`` analogue)."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import Span
from ..ir.nodes import Buffer

# description scope -> TVM scope_kind
SCOPE_KIND = {"thread": "thread", "warp": "warp", "wg": "warpgroup", "cta": "cta"}


@dataclass(frozen=True)
class RegionRef:
    """A constant region of a buffer: per dimension ``begin`` and ``extent`` (elements)."""

    buf: Buffer
    begins: tuple[int, ...]
    extents: tuple[int, ...]
    span: Span

    @property
    def region(self):
        return list(zip(self.begins, self.extents))

    @property
    def is_full(self) -> bool:
        return all(b == 0 for b in self.begins) and tuple(self.extents) == tuple(self.buf.shape)

    @property
    def numel(self) -> int:
        n = 1
        for e in self.extents:
            n *= e
        return n

    @property
    def nonunit(self) -> tuple[int, ...]:
        return tuple(e for e in self.extents if e != 1)

    def __str__(self) -> str:
        if self.is_full:
            return self.buf.name
        parts = []
        for b, e in zip(self.begins, self.extents):
            parts.append(f"{b}:{b + e}" if e != 1 else f"{b}")
        return f"{self.buf.name}[{', '.join(parts)}]"


@dataclass(frozen=True)
class CopyOp:
    """``SCOPE.copy DST <- SRC`` / ``SCOPE.copy_async DST <- SRC`` after name resolution."""

    op: str  # "copy" | "copy_async"
    scope: str  # description scope: thread | warp | wg | cta
    dst: RegionRef
    src: RegionRef
    dispatch: str | None
    text: str  # the statement as written (comment stripped)
    span: Span
    dispatch_span: Span | None = None

    @property
    def scope_kind(self) -> str:
        return SCOPE_KIND[self.scope]
