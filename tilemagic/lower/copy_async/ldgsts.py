"""``copy_async`` global -> shared through ``cp.async`` (variant ``ldgsts``, priority 20; SASS ``LDGSTS``).

As TVM TIRx registers it (``backend/cuda/tile_primitive/copy_async/ldgsts.py``, ``apache-tvm 0.27.0.post1``):
the split is the synchronous ``gmem_smem`` copy's ``[outer, threads, vec]`` (TVM's ``align_layouts_gs``,
here :func:`~tilemagic.lower.common.gs_split`, one machinery for both) with the vector widths restricted
to what ``cp.async`` copies: 16, 8 or 4 bytes per thread (PTX ISA 9.0 §9.7.9.25.3.1; ``.cg`` exactly when
16 bytes, ``.ca`` for 4 and 8).  Thread ``t`` of the scope issues, for ``f`` in ``range(outer)``, one
``cp.async`` of the vector ``f * threads + t``, naturally aligned and contiguous in both buffers after the
shared layout (a swizzled tile: at most one swizzle chunk per vector, as TVM caps it).  A 1- or 2-byte
element type without an aligned 4-byte run declines: cp.async has no 1- or 2-byte form.

Only the issue is emitted.  Completion is the caller's (PTX ISA 9.0 §9.7.9.25.3.2-3): ``commit_group``
makes the thread's uncommitted copies a group, ``wait_group N`` waits until at most ``N`` of its newest
groups are pending, which makes the bytes visible to the issuing thread; other threads read them after a
barrier that follows the wait (``cta_sync``).

Where tilemagic differs from TVM 0.27: TVM's ldgsts reads none of the TMA options and emits cp.async even
for a copy with ``mbar=`` (a wait on that barrier then hangs: no byte is ever complete-tx on it); here a
copy with ``mbar=`` declines with a reason that points at the TMA variants, and so do ``oob=`` and
``cache_hint=`` (not taken by this variant) instead of being dropped silently.  TVM unrolls the issues
(``T.unroll``); here more than 16 per thread are a serial loop (the same instructions; the loop keeps the
kernel small).  The target must be sm_80 or newer (TVM does not check it).
"""

from __future__ import annotations

from ...arch.ptx import CP_ASYNC_BYTES, CP_ASYNC_MIN_SM
from ...ir import nodes as ir
from ..common import (
    all_threads_active,
    divides_thread_cnt,
    emit_iterations,
    exec_scope_ok,
    gs_split,
    scope_allowed,
    sm_number,
    swizzle_chunk,
    decline_past_edge,
    validate_copy_op,
)
from ..dispatch import DispatchContext, EmitSummary, Emitted, Verdict, fail, predicate, register_dispatch
from ..ops import CopyOp

_LDGSTS_PAIRS = [("global", "shared")]  # cp.async is global -> shared only
_UNROLL_UP_TO = 16  # issues per thread emitted unrolled (TVM unrolls all of them); more: a serial loop


def target_ok(op: CopyOp, ctx: DispatchContext) -> Verdict:
    """The target kind is CUDA (TVM ``_is_ldgsts``'s first check)."""
    return (True, None) if ctx.target.kind == "cuda" else (False, "non-cuda target")


def sm_version_ok(op: CopyOp, ctx: DispatchContext) -> Verdict:
    """``cp.async`` exists from sm_80 on (PTX ISA 9.0 §9.7.9.25.3.1); TVM 0.27 does not check it."""
    if sm_number(ctx.target.arch) >= CP_ASYNC_MIN_SM:
        return True, None
    return False, f"cp.async needs sm_{CP_ASYNC_MIN_SM} or newer; the target is {ctx.target.arch}"


#: The TMA options this variant declines, with why (``{v}``: the value written; ``mbar``'s is the barrier).
_TMA_OPTIONS = {
    "mbar": ("mbar={v}: cp.async signals no mbarrier (no byte would ever complete on {v}, so a `wait {v}` would "
             "hang); a copy with mbar= is a TMA copy: dispatch=tma_auto or tma_explicit (TVM 0.27 ignores mbar= "
             "here and emits cp.async)"),
    "oob": ("oob={v} is not a cp.async option: it fills the out-of-bounds elements of a TMA box, and cp.async "
            "copies in-bounds regions only (TVM 0.27's ldgsts would drop it silently); use dispatch=tma_explicit"),
    "cache_hint": ("cache_hint={v} is not taken by ldgsts: its cp.async carries no `.L2::cache_hint` policy "
                   "operand (TVM 0.27's ldgsts has none either and would drop the hint silently); the named hints "
                   "are the TMA variants' (dispatch=tma_auto or tma_explicit)"),
}


def no_tma_option(op: CopyOp, ctx: DispatchContext, key: str) -> Verdict:
    """Option ``key`` (``mbar``, ``oob``, ``cache_hint``) is not given: cp.async completes through commit
    groups, never as complete-tx bytes on an mbarrier; it has no out-of-bounds fill; this variant emits no
    cache-policy operand.  Declined rather than ignored, unlike TVM 0.27."""
    v = op.option(key)
    if v is None:
        return True, None
    return False, _TMA_OPTIONS[key].format(v=getattr(v, "name", v))


# === Variant: copy_async/ldgsts (priority=20) ===
#
# When: a CUDA target of sm_80+, thread/warp/warpgroup/cta scope with every thread of each executing scope
#       instance active, a valid copy, global -> shared, a region the scope's threads divide, and none of
#       the TMA options (mbar=, oob=, cache_hint=).
# Emits: per thread ``outer`` × ``cp.async.{cg,ca}.shared.global [dst], [src], 16|8|4`` (unrolled up to 16,
#        else a serial loop); no commit, wait or barrier: the caller's.
@register_dispatch("copy_async", "cuda", variant="ldgsts", priority=20, when=[
    predicate("target", target_ok),
    predicate("sm_version", sm_version_ok),
    predicate("exec_scope", exec_scope_ok, expected_scopes=["thread", "warp", "warpgroup", "cta"]),
    predicate("all_threads_active", all_threads_active),
    predicate("validate_copy_op", validate_copy_op),
    predicate("storage_scope", scope_allowed, allowed_pairs=_LDGSTS_PAIRS),
    predicate("divides_thread_cnt", divides_thread_cnt),
    *(predicate(f"no_{key}", no_tma_option, key=key) for key in _TMA_OPTIONS),
])
def copy_schedule_ldgsts(op: CopyOp, ctx: DispatchContext) -> Emitted:
    """Lower ``op`` to ``cp.async`` issues (see the module docstring).

    Returns
    -------
    (list of Stmt, EmitSummary)
        The :class:`~tilemagic.ir.nodes.CpAsync` statements (in a ``Grid`` past 16 per thread) and what one
        thread issues.

    Raises
    ------
    DispatchFail
        ``ldgsts: cannot find a cp.async-compatible vec_len for elem_bits=N`` (TVM's text) when no run of
        16, 8 or 4 bytes is contiguous and aligned in both buffers for the split.
    """
    decline_past_edge(op)
    dst, src = op.dst, op.src
    eb = dst.buf.elem_bytes
    sp = gs_split(op, ctx, CP_ASYNC_BYTES)
    if sp is None:
        cap = swizzle_chunk(dst.buf)
        why = (f"; the swizzle chunk of {dst.buf.name} ({cap} elements, {cap * eb} B) caps a vector below 4 B"
               if cap is not None and cap * eb < min(CP_ASYNC_BYTES) else "")
        fail(f"ldgsts: cannot find a cp.async-compatible vec_len for elem_bits={8 * eb} (no run of "
             f"{', '.join(map(str, CP_ASYNC_BYTES))} B is contiguous and aligned in both {dst.buf.name} and "
             f"{src.buf.name} with {ctx.scope_threads} thread(s) splitting {dst.numel} elements{why})")
    v = sp.vec
    body, how = emit_iterations(ctx, sp.outer, sp.tables,
                                lambda di, si: ir.CpAsync(dst.buf, di, src.buf, si, v), tvar=sp.tvar,
                                threads=sp.threads, unroll_up_to=_UNROLL_UP_TO, what="cp.async")
    chain = next(s.chain for b in body for s in ir.walk(b) if isinstance(s, ir.CpAsync))
    notes: tuple[str, ...] = (f"swizzle chunk caps at {sp.cap} elements",) if sp.cap is not None else ()
    notes += ("completion is the caller's: commit_group, wait_group, then cta_sync before other threads read",)
    return body, EmitSummary(chain, sp.outer, moves=f"{v} {dst.buf.dtype} ({v * eb} B)",
                             tid=sp.tvar.kind if sp.tvar else None, split=(sp.outer, sp.threads, v), how=how,
                             notes=notes)
