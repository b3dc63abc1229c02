"""Typed op calls handed to the dispatcher (TIRx ``TilePrimitiveCall`` analogue)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import Span
from ..ir.nodes import Buffer

# the language's exec scope -> TVM's (``wg`` is the language's short name of ``warpgroup``)
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
        return math.prod(self.extents)

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
    """``SCOPE.copy DST <- SRC`` / ``SCOPE.copy_async DST <- SRC`` after name resolution.

    ``exec_scope`` is TVM's name of the threads that run the op together (``thread``, ``warp``,
    ``warpgroup``, ``cta``; TVM TIRx ``exec_scope``, ``apache-tvm 0.27.0.post1``), as opposed to a
    buffer's memory scope (``Buffer.scope``).
    """

    op: str  # "copy" | "copy_async"
    exec_scope: str  # thread | warp | warpgroup | cta
    dst: RegionRef
    src: RegionRef
    dispatch: str | None
    text: str  # the statement as written (comment stripped)
    span: Span
    dispatch_span: Span | None = None
    #: the ``KEY=VALUE`` options written after the regions (``mbar=full``, ``oob=zero``,
    #: ``cache_hint=evict_first``), in source order: ``(key, value, span of the pair)``.  ``mbar``'s value is
    #: the resolved mbarrier :class:`~tilemagic.ir.nodes.Buffer`; others are the written ``str``/``int``.
    options: tuple[tuple[str, object, Span], ...] = ()
    #: the CTA rank this op is lowered for: a statement whose regions or options use ``cta_rank`` (or that has
    #: ``remote_cta_id=``) is lowered once per rank of the cluster with that rank's concrete regions
    #: (:func:`tilemagic.lower.program.lower`); None when the op does not depend on the rank.  A variant evaluates
    #: a rank expression of an option (``option("remote_cta_id")``, an ``ir.Expr``) with
    #: ``eval_static(expr, tid, {ir.ThreadVar("cta_rank"): op.rank})``.
    rank: int | None = None

    def option(self, key: str, default: object = None) -> object:
        """The value of option ``key`` (the last one written), or ``default``."""
        for k, v, _ in reversed(self.options):
            if k == key:
                return v
        return default

    def option_span(self, key: str) -> Span | None:
        """Where option ``key`` is written (for located errors), or None."""
        for k, _, sp in reversed(self.options):
            if k == key:
                return sp
        return None
