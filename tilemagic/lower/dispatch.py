"""TIRx-style dispatcher: variants with priorities and predicates, and a record for every op.

Follows TVM TIRx's ``tvm.tirx.operator.tile_primitive.dispatcher`` (``apache-tvm 0.27.0.post1``;
see ``docs/architecture.md``): variants register with :func:`register_dispatch` under ``(op, target)``
(the ``copy``/``copy_async`` ones when ``tilemagic.lower`` is imported); a predicate answers ``bool``,
``(ok, reason)`` or raises :class:`DispatchFail`; candidates are tried in ``(-priority, variant)`` order
(ties by name: ``ldstmatrix`` before ``reg``), every predicate evaluated (no short-circuit); an emitter
may still decline with :func:`fail`; ``dispatch=NAME`` narrows to that variant but runs its predicates.

Unlike TVM, the full record (:class:`DispatchRecord`) is kept for every op, and a predicate that
raises anything but :class:`DispatchFail` is a bug in tilemagic: its row reads ``error`` and
:class:`~tilemagic.errors.InternalError` is raised, so no later variant (the fallback) hides it.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import NoReturn, Protocol

from ..arch.threads import THREADS_PER
from ..errors import DispatchError, InternalError, Span
from ..ir import nodes as ir
from .ops import CopyOp


class DispatchFail(RuntimeError):
    """Raised by a predicate or an emitter to decline with a reason; ``detail`` (optional) says where in a buffer
    the rule broke, for the pictures (:class:`DeclineDetail`)."""

    def __init__(self, reason: str, detail: DeclineDetail | None = None):
        super().__init__(reason)
        self.detail = detail


@dataclass(frozen=True)
class DeclineDetail:
    """Where a declined copy broke its rule, in the source buffer: the pictures mark it.

    Attributes
    ----------
    rule : str
        The rule's short name (``"sbo"``, ``"swizzle"``, ``"lbo"``, ``"alignment"``, ``"replica"``, ...).
    buffer : str
        The buffer the rule is about (a ``tcgen05.cp``'s shared source, or its TMEM destination).
    byte : int or None
        Byte offset in ``buffer`` of the unit that breaks the rule (a 16-byte chunk), None when it is not one place.
    row, chunk : int or None
        The matrix row and 16-byte chunk of one instruction that sit there (``tcgen05.cp``), when known.
    expected : int or None
        The byte offset the rule wanted for that unit, when there is one.
    shape : str
        The instruction shape the plan was for (``"128x256b"``); ``""`` when none.
    """

    rule: str
    buffer: str
    byte: int | None = None
    row: int | None = None
    chunk: int | None = None
    expected: int | None = None
    shape: str = ""


def fail(reason: str, detail: DeclineDetail | None = None) -> NoReturn:
    """Decline the current variant with ``reason`` (TVM's ``fail``), optionally saying where (``detail``)."""
    raise DispatchFail(reason, detail)


# ----------------------------------------------------------------------------- what a variant sees
@dataclass(frozen=True)
class TargetSpec:
    """The compilation target: ``kind`` (the registry key, ``"cuda"``) and ``arch`` (``"sm_100a"``)."""

    kind: str = "cuda"
    arch: str = "sm_100a"


class Builder(Protocol):
    """What variants use of the kernel's lowering state (:class:`tilemagic.lower.program.KernelBuilder`):
    the shared slot holding the TMEM base address (None without TMEM), ``n`` fresh loop variables, and the
    kernel's tensor maps (``tensormap(m)``: the map of ``m``'s :meth:`~tilemagic.ir.nodes.TensorMap.key` already
    registered, else ``m`` under a name apart from the kernel's names); ``tmem_buffers``, the kernel's TMEM buffers
    in declaration order (their columns, for a decline that names the buffer before one)."""

    tmem_addr: ir.Buffer | None

    @property
    def tmem_buffers(self) -> tuple[ir.Buffer, ...]: ...

    def loop_vars(self, n: int) -> tuple[ir.LoopVar, ...]: ...

    def tensormap(self, tmap: ir.TensorMap) -> ir.TensorMap: ...


@dataclass
class DispatchContext:
    """What a variant sees: the target, the CTA size (1 CTA per kernel), the op's exec scope
    (``thread`` | ``warp`` | ``warpgroup`` | ``cta``, TVM's names), the kernel's :class:`Builder`,
    the warnings a variant raises (the fallback's UserWarning), and ``guard``: the condition of the
    ``if COND:`` the op is written under (None: every thread of the CTA executes it), so a variant can
    check that the scope's threads are all active (TVM's ``_all_threads_active``)."""

    target: TargetSpec
    threads: int
    scope_kind: str
    builder: Builder
    warnings: list[tuple[str, Span | None]] = field(default_factory=list)
    guard: ir.Expr | None = None
    #: CTAs per cluster of the kernel (:attr:`tilemagic.ir.nodes.Kernel.cluster`; 1: no cluster)
    cluster: int = 1

    @property
    def scope_threads(self) -> int:
        return THREADS_PER.get(self.scope_kind, self.threads)


# ----------------------------------------------------------------------------- what an emitter returns
@dataclass(frozen=True)
class EmitSummary:
    """What the chosen variant emitted for one op, as facts; :meth:`text` words them.

    Attributes
    ----------
    chain : str
        PTX instruction(s) of one issue (``"ld.global.v4.u32 + st.shared.v4.u32"``); ``""``: the fallback's loop.
    count, per : int, {"thread", "warp"}
        ``count`` issues by each ``per``.
    moves, at : str
        What one issue moves (the fallback: the loop's extents); where in TMEM (tcgen05: ``"TMEM column 0"``).
    tid : str or None
        The thread variable splitting the work (``laneid``, ``tid_in_wg``, ``tx``); None: one thread.
    split : (outer, threads, vec) or None
        A split synthesized from the exec scope (``gmem_smem``).
    how, notes : str, tuple of str
        ``""``, ``"in a serial loop"`` or ``"unrolled"``, then a thread guard; facts (a swizzle cap, TMEM lanes).
    """

    chain: str
    count: int = 1
    per: str = "thread"
    moves: str = ""
    at: str = ""
    tid: str | None = None
    split: tuple[int, int, int] | None = None
    how: str = ""
    notes: tuple[str, ...] = ()

    def text(self) -> str:
        """The one-line wording shown in the why-table (the only place it is composed)."""
        how = f" {self.how}" if self.how else ""
        notes = "".join(f"; {n}" for n in self.notes)
        if not self.chain:  # the fallback's scalar loop
            return f"scalar loop over {self.moves} element(s) by {f'{self.tid} == 0' if self.tid else 'every thread'}"
        if self.split is not None:
            outer, threads, vec = self.split
            who = f"each of {threads} threads ({self.tid})" if self.tid else "the thread"
            return (f"[outer={outer}, threads={threads}, vec={vec}]: {who} moves {self.count} × {self.moves} "
                    f"with {self.chain}{how}{notes}")
        if self.at:  # tcgen05: one warpgroup, 4 warps
            return (f"{self.chain} at {self.at} ({self.count} instruction{'s' if self.count > 1 else ''} "
                    f"per {self.per}, 4 warps{notes})")
        detail = f" ({self.moves}{notes})" if self.moves or notes else ""
        return f"per {self.per}: {self.count} × {self.chain}{detail}{how}"


Verdict = tuple[bool, str | None]  # (ok, reason): what a predicate answers (or a bare bool)
PredicateFn = Callable[..., bool | Verdict]  # fn(op, ctx, **kwargs)
Emitted = tuple[list[ir.Stmt], EmitSummary]
Emitter = Callable[[CopyOp, DispatchContext], Emitted]


# ----------------------------------------------------------------------------- the records
@dataclass(frozen=True)
class Candidate:
    """One variant the dispatcher considered for an op.

    Attributes
    ----------
    variant : str
        Registered variant name (TVM's names: ``tmem<->local``, ``reg``, ``fallback`` ...).
    priority : int
    accepted : bool
        All predicates held (the emitter may still have declined).
    reasons : tuple of str
        ``"<predicate>: ok"`` or ``"<predicate>: <why it failed>"`` for every predicate, in order;
        ``"internal error in predicate <name>: <Type>: <message>"`` for one that raised.
    declined : str or None
        The emitter's ``fail(reason)`` message (any other exception of an emitter propagates).
    chosen : bool
        This variant lowered the op.
    tried, error : bool, str or None
        False after the chosen variant; the first reason of a predicate that raised (a bug in tilemagic).
    """

    variant: str
    priority: int
    accepted: bool
    reasons: tuple[str, ...]
    declined: str | None = None
    chosen: bool = False
    tried: bool = True
    error: str | None = None
    #: the emitter's :class:`DeclineDetail`, when its decline names a place
    detail: DeclineDetail | None = None

    @property
    def verdict(self) -> str:
        """``error``, ``not tried``, ``chosen``, ``declined`` (by the emitter) or ``rejected`` (by a predicate)."""
        if self.error:
            return "error"
        if not self.tried:
            return "not tried"
        if self.chosen:
            return "chosen"
        return "declined" if self.accepted else "rejected"


@dataclass(frozen=True)
class DispatchRecord:
    """The dispatch decision for one op: the op text, its line, every candidate in order."""

    op: str  # e.g. "copy_async"
    text: str  # the source statement, e.g. "wg.copy_async T <- a"
    line: int
    scope: str
    candidates: tuple[Candidate, ...]
    chosen: str | None
    forced: str | None = None
    emitted: EmitSummary | None = None  # what the chosen variant emitted
    #: extra rows after the candidates, ``(label, verdict, reason)`` (the per-rank lowering's
    #: ``("ranks 1..C-1", "same variant", "plan per rank")``, :func:`tilemagic.lower.program.lower`)
    notes: tuple[tuple[str, str, str], ...] = ()

    @property
    def summary(self) -> str:
        """:meth:`EmitSummary.text` of what the chosen variant emitted; ``""`` when none was."""
        return self.emitted.text() if self.emitted is not None else ""

    def why(self, c: Candidate) -> list[str]:
        """The reason lines shown for candidate ``c``, in order: what the chosen variant emitted, or
        each failed predicate with its reason and the emitter's decline; then the predicates that held
        (``ok: name, ...``), so every predicate's verdict is on the table."""
        if not c.tried:
            return ["an earlier candidate was chosen"]
        passed = [r[: -len(": ok")] for r in c.reasons if r.endswith(": ok")]
        if c.chosen:
            why = [self.summary or "all predicates hold"]
        else:
            why = [r for r in c.reasons if not r.endswith(": ok")] if not c.accepted else []
            if c.declined:
                why.append(f"emitter declined: {c.declined}")
        if passed:
            why.append("ok: " + ", ".join(passed))
        return why or ["all predicates hold"]

    def table(self) -> str:
        """The why-table as fixed-width text (TVM's failure report, shown for every op)."""
        head = f"L{self.line}: {self.text}    [{self.op}"
        head += f", dispatch={self.forced}]" if self.forced else "]"
        rows = [("variant", "prio", "verdict", "reason")]
        for c in self.candidates:
            for i, w in enumerate(self.why(c)):
                rows.append((c.variant, str(c.priority), c.verdict, w) if i == 0 else ("", "", "", w))
        rows += [(label, "", verdict, reason) for label, verdict, reason in self.notes]
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        lines = [head]
        for r in rows:
            lines.append("  " + "  ".join(r[i].ljust(widths[i]) for i in range(3)) + "  " + r[3])
        return "\n".join(line.rstrip() for line in lines)


# ----------------------------------------------------------------------------- the registry
@dataclass(frozen=True)
class Predicate:
    """A named check ``fn(op, ctx, **kwargs)`` answering bool, (ok, reason) or raising DispatchFail."""

    name: str
    fn: PredicateFn
    kwargs: tuple[tuple[str, object], ...] = ()


def predicate(name: str, fn: PredicateFn, **kwargs: object) -> Predicate:
    """Make a :class:`Predicate`; ``kwargs`` parameterise one function for several variants."""
    return Predicate(name, fn, tuple(sorted(kwargs.items())))


@dataclass(frozen=True)
class DispatchCase:
    variant: str
    priority: int
    preds: tuple[Predicate, ...]
    impl: Emitter


_TABLE: dict[tuple[str, str], list[DispatchCase]] = {}


def register_dispatch(op: str, target: str, *, variant: str, priority: int = 0,
                      when: Sequence[Predicate] = ()) -> Callable[[Emitter], Emitter]:
    """Decorator registering ``impl(op, ctx) -> (list[Stmt], EmitSummary)`` as ``variant`` of ``op`` on ``target``.

    Returns the undecorated function, so it stays directly callable (as in TVM).
    Re-registering the same (op, target, variant) replaces the earlier entry
    (module reloads in a notebook).
    """

    def deco(fn: Emitter) -> Emitter:
        cases = _TABLE.setdefault((op, target), [])
        cases[:] = [c for c in cases if c.variant != variant]
        cases.append(DispatchCase(variant, priority, tuple(when), fn))
        return fn

    return deco


def _cases(op: str, target: str) -> list[DispatchCase]:
    return sorted(_TABLE.get((op, target), []), key=lambda c: (-c.priority, c.variant))


def registered_variants(op: str, target: str = "cuda") -> list[tuple[str, int]]:
    """``[(variant, priority), ...]`` in dispatch order."""
    return [(c.variant, c.priority) for c in _cases(op, target)]


def _judge(case: DispatchCase, op: CopyOp, ctx: DispatchContext) -> Candidate:
    """Evaluate every predicate of ``case`` (no short-circuit): its candidate row, not yet emitted."""
    reasons: list[str] = []
    error = None
    for p in case.preds:
        try:
            res = p.fn(op, ctx, **dict(p.kwargs))
        except DispatchFail as e:
            res = (False, str(e))
        except Exception as e:  # a bug in the predicate, not a rejection: run_dispatch raises it
            reasons.append(f"internal error in predicate {p.name}: {type(e).__name__}: {e}")
            error = error or reasons[-1]
            continue
        ok, why = res if isinstance(res, tuple) else (res, None)
        reasons.append(f"{p.name}: ok" if ok else f"{p.name}: {why or 'failed'}")
    accepted = error is None and all(r.endswith(": ok") for r in reasons)
    return Candidate(case.variant, case.priority, accepted, tuple(reasons), error=error)


def run_dispatch(op: CopyOp, ctx: DispatchContext) -> tuple[list[ir.Stmt], DispatchRecord]:
    """Dispatch ``op`` and lower it.

    Returns
    -------
    (stmts, record) : (list of Stmt, DispatchRecord)

    Raises
    ------
    DispatchError
        No variant accepted (the error's ``details`` is the why-table, its ``records`` the op's
        :class:`DispatchRecord`, its ``buffer_bytes`` the bytes of the op's two buffers), or the
        forced variant is not registered (lists the registered names).
    InternalError
        A predicate raised something other than :class:`DispatchFail`; ``details`` is the
        why-table so far, the predicate's row marked ``error``.
    """
    cases = _cases(op.op, ctx.target.kind)
    forced = op.dispatch
    if forced is not None:
        names = [c.variant for c in cases]
        cases = [c for c in cases if c.variant == forced]
        if not cases:
            close = difflib.get_close_matches(forced, names, n=1)
            raise DispatchError(
                f"no variant named '{forced}' is registered for {op.op} (registered: {', '.join(names)})",
                op.dispatch_span or op.span,
                hint=(f"did you mean dispatch={close[0]}? " if close else "")
                + f"registered {op.op} variants, in dispatch order: " + ", ".join(names),
            )
    rows: list[Candidate] = []

    def record(chosen: str | None = None, emitted: EmitSummary | None = None) -> DispatchRecord:
        tried = {c.variant for c in rows}  # the variants not tried are listed too
        rest = [Candidate(c.variant, c.priority, False, (), tried=False) for c in cases if c.variant not in tried]
        return DispatchRecord(op.op, op.text, op.span.line, op.exec_scope, tuple(rows + rest), chosen, forced,
                              emitted)

    for case in cases:
        row = _judge(case, op, ctx)
        rows.append(row)
        if row.error:
            raise InternalError(
                f"{row.error} (variant {op.op}/{case.variant}, op `{op.text}`)", op.span,
                hint="this is a bug in tilemagic, not in the description; please report it with the cell",
                details=record().table())
        if not row.accepted:
            continue
        n_warn = len(ctx.warnings)
        try:
            stmts, summary = case.impl(op, ctx)
        except DispatchFail as e:
            del ctx.warnings[n_warn:]
            rows[-1] = replace(row, declined=str(e), detail=e.detail)
            continue
        rows[-1] = replace(row, chosen=True)
        return stmts, record(case.variant, summary)
    rec = record()
    raise DispatchError(
        f"no {op.op} variant accepts `{op.text}`",
        op.span,
        hint="the why-table below says which rule each variant rejected",
        details=rec.table(),
        records=(rec,),
        buffer_bytes={r.buf.name: int(r.buf.nbytes) for r in (getattr(op, "src", None), getattr(op, "dst", None))
                      if r is not None},
    )
