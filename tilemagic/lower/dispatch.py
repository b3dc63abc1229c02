"""TIRx-style dispatcher: variants with priorities and predicates, and a record for every op.

Follows TVM TIRx's ``tvm.tirx.operator.tile_primitive.dispatcher`` behaviour
(see ``docs/architecture.md``):

* variants register with :func:`register_dispatch` under ``(op, target)``;
* a predicate answers ``bool``, ``(ok, reason)`` or raises :class:`DispatchFail`;
  any other exception is a failed predicate with its type and message;
* candidates are tried in ``(-priority, variant)`` order (ties broken by name, which
  is why ``ldstmatrix`` is tried before ``reg``);
* every predicate of a candidate is evaluated (no short-circuit), so the record
  lists every reason;
* an emitter may still decline with :func:`fail`; the dispatcher then moves on;
* ``dispatch=NAME`` narrows to that variant but still runs its predicates.

Unlike TVM, the full record (:class:`~tilemagic.result.DispatchRecord`) is kept for
every op, not only printed on total failure.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from collections.abc import Callable, Sequence

from ..arch.threads import THREADS_PER
from ..errors import DispatchError, Span
from ..result import Candidate, DispatchRecord


class DispatchFail(RuntimeError):
    """Raised by a predicate or an emitter to decline with a reason."""


def fail(reason: str):
    """Decline the current variant with ``reason`` (TVM's ``fail``)."""
    raise DispatchFail(reason)


@dataclass(frozen=True)
class Predicate:
    """A named check ``fn(op, ctx, **kwargs)`` answering bool, (ok, reason) or raising DispatchFail."""

    name: str
    fn: Callable
    kwargs: tuple[tuple[str, object], ...] = ()

    def evaluate(self, op, ctx) -> tuple[bool, str | None]:
        try:
            res = self.fn(op, ctx, **dict(self.kwargs))
        except DispatchFail as e:
            return False, str(e)
        except Exception as e:  # a buggy predicate must not kill the notebook
            return False, f"predicate exception: {type(e).__name__}: {e}"
        if isinstance(res, tuple):
            ok, reason = res
            return bool(ok), (None if ok else (reason or "failed"))
        return bool(res), (None if res else "failed")


def predicate(name: str, fn: Callable, **kwargs) -> Predicate:
    """Make a :class:`Predicate`; ``kwargs`` parameterise one function for several variants."""
    return Predicate(name, fn, tuple(sorted(kwargs.items())))


@dataclass(frozen=True)
class DispatchCase:
    op: str
    target: str
    variant: str
    priority: int
    preds: tuple[Predicate, ...]
    impl: Callable


_TABLE: dict[tuple[str, str], list[DispatchCase]] = {}


def register_dispatch(op: str, target: str, *, variant: str, priority: int = 0, when: Sequence[Predicate] = ()):
    """Decorator registering ``impl(op, ctx) -> list[Stmt]`` as ``variant`` of ``op`` on ``target``.

    Returns the undecorated function, so it stays directly callable (as in TVM).
    Re-registering the same (op, target, variant) replaces the earlier entry
    (module reloads in a notebook).
    """

    def deco(fn):
        cases = _TABLE.setdefault((op, target), [])
        cases[:] = [c for c in cases if c.variant != variant]
        cases.append(DispatchCase(op, target, variant, priority, tuple(when), fn))
        return fn

    return deco


def registered_variants(op: str, target: str = "cuda") -> list[tuple[str, int]]:
    """``[(variant, priority), ...]`` in dispatch order."""
    _ensure_variants_loaded()
    cases = sorted(_TABLE.get((op, target), []), key=lambda c: (-c.priority, c.variant))
    return [(c.variant, c.priority) for c in cases]


def _ensure_variants_loaded():
    # registration is an import side effect, as in TVM
    from . import copy, copy_async  # noqa: F401


@dataclass
class DispatchContext:
    """What a variant sees: the target, the CTA size, the op's exec scope, and a builder.

    Attributes
    ----------
    target : dict
        ``{"kind": "cuda", "arch": "sm_100a"}``.
    threads : int
        CTA size (1 CTA per kernel).
    scope_kind : str
        ``thread`` | ``warp`` | ``warpgroup`` | ``cta`` (TVM's names).
    builder : object
        The program lowering state (TMEM address slot, fresh loop-variable names).
    warnings : list of (str, Span)
        Warnings a variant raises (the fallback's UserWarning).
    """

    target: dict
    threads: int
    scope_kind: str
    builder: object
    warnings: list[tuple[str, Span | None]] = field(default_factory=list)

    @property
    def scope_threads(self) -> int:
        return THREADS_PER.get(self.scope_kind, self.threads)


def run_dispatch(op, ctx: DispatchContext):
    """Dispatch ``op`` (a :class:`~tilemagic.lower.ops.CopyOp`) and lower it.

    Returns
    -------
    (stmts, record) : (list of Stmt, DispatchRecord)

    Raises
    ------
    DispatchError
        No variant accepted (the error's ``details`` is the why-table), or the
        forced variant is not registered (lists the registered names).
    """
    _ensure_variants_loaded()
    cases = sorted(_TABLE.get((op.op, ctx.target["kind"]), []), key=lambda c: (-c.priority, c.variant))
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
    for case in cases:
        verdicts = [(p.name, *p.evaluate(op, ctx)) for p in case.preds]
        reasons = tuple(f"{n}: ok" if ok else f"{n}: {why}" for n, ok, why in verdicts)
        if not all(ok for _, ok, _ in verdicts):
            rows.append(Candidate(case.variant, case.priority, False, reasons))
            continue
        n_warn = len(ctx.warnings)
        try:
            stmts, summary = case.impl(op, ctx)
        except DispatchFail as e:
            del ctx.warnings[n_warn:]
            rows.append(Candidate(case.variant, case.priority, True, reasons, declined=str(e)))
            continue
        rows.append(Candidate(case.variant, case.priority, True, reasons, chosen=True))
        # the variants not tried (lower priority than the winner) are listed too
        tried = {c.variant for c in rows}
        for rest in cases:
            if rest.variant not in tried:
                rows.append(Candidate(rest.variant, rest.priority, False, (), tried=False))
        record = DispatchRecord(op.op, op.text, op.span.line, op.exec_scope, tuple(rows), case.variant, forced, summary)
        return stmts, record
    record = DispatchRecord(op.op, op.text, op.span.line, op.exec_scope, tuple(rows), None, forced)
    raise DispatchError(
        f"no {op.op} variant accepts `{op.text}`",
        op.span,
        hint="the why-table below says which rule each variant rejected",
        details=record.table(),
    )
