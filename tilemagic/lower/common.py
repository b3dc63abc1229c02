"""Predicates and helpers shared by the copy variants (TVM ``copy/utils.py``, ``exec_scope_utils.py``)."""

from __future__ import annotations

from typing import Sequence, Tuple

import numpy as np

from ..ir import nodes as ir
from ..layout.tile import affine_dims  # noqa: F401  (re-exported for the variants)

# linear thread id of each thread axis inside the CTA, and the axis' scope (TVM axis_registry)
THREAD_AXIS_WEIGHT = {"laneid": 1, "wid_in_wg": 32, "tid_in_wg": 1, "warpid": 32, "wgid": 128, "tx": 1}
THREAD_AXIS_SCOPE = {"laneid": "warp", "wid_in_wg": "warpgroup", "tid_in_wg": "warpgroup", "warpid": "cta",
                     "wgid": "cta", "tx": "cta"}
SCOPE_RANK = {"thread": 0, "warp": 1, "warpgroup": 2, "cta": 3}
# the thread variable that counts threads inside a scope instance
SCOPE_TID = {"warp": "laneid", "warpgroup": "tid_in_wg", "cta": "tx"}


# ----------------------------------------------------------------------------- predicates
def validate_copy_op(op, ctx):
    """Same dtype on both sides and the same non-unit extents (TVM ``validate_copy_op``)."""
    d, s = op.dst, op.src
    if d.buf.dtype != s.buf.dtype:
        return False, f"dtype mismatch: dst {d.buf.name} is {d.buf.dtype}, src {s.buf.name} is {s.buf.dtype}"
    if d.nonunit != s.nonunit:
        return False, (f"region shapes differ: dst {d} has extents {list(d.extents)}, "
                       f"src {s} has {list(s.extents)} (non-unit extents must match)")
    return True, None


def exec_scope_ok(op, ctx, expected_scopes: Sequence[str]):
    if ctx.scope_kind in expected_scopes:
        return True, None
    return False, f"unsupported exec_scope {ctx.scope_kind} (needs {' or '.join(expected_scopes)})"


def scope_allowed(op, ctx, allowed_pairs: Sequence[Tuple[str, str]]):
    pair = (op.src.buf.scope, op.dst.buf.scope)
    if pair in [tuple(p) for p in allowed_pairs]:
        return True, None
    allowed = ", ".join(f"{a}->{b}" for a, b in allowed_pairs)
    return False, f"unsupported memory scopes src={pair[0]} dst={pair[1]}; allowed: {allowed}"


def thread_axes(layout):
    return {it.axis for it in layout.shard if it.axis in THREAD_AXIS_WEIGHT} | {
        a for a, _ in layout.offset if a in THREAD_AXIS_WEIGHT}


def is_distributed(buf: ir.Buffer) -> bool:
    """A local buffer whose layout spreads elements over threads."""
    return buf.scope == "local" and bool(thread_axes(buf.layout))


def linear_tid(coords: dict, n: int) -> np.ndarray:
    """Linear thread id (in CTA thread units) of every element from its thread-axis coordinates."""
    t = np.zeros(n, np.int64)
    for axis, w in THREAD_AXIS_WEIGHT.items():
        if axis in coords:
            t = t + coords[axis] * w
    return t


def digits_expr(tvar: ir.Expr, digits: Sequence[Tuple[int, int, int]]) -> ir.Expr:
    """``Σ ((t // stride) % extent) * coeff`` over ``digits`` = [(stride, extent, coeff)], simplified."""
    expr: ir.Expr = ir.Const(0)
    for stride, extent, coeff in digits:
        if coeff == 0:
            continue
        d = ir.floordiv(tvar, stride)
        d = ir.mod(d, extent) if extent is not None else d
        expr = ir.add(expr, ir.mul(d, coeff))
    return expr
