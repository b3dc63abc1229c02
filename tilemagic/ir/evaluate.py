"""Static evaluation of IR expressions over a CTA's threads (NumPy vectors).

One definition of the binary operators and of the thread coordinates, shared by the
simulator (:mod:`tilemagic.sim.interpreter`), the pictures (:mod:`tilemagic.widgets.placement`)
and the code generator (warp-uniform guards, :mod:`tilemagic.codegen.cuda`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..arch.threads import AXIS_SCOPES, axis_def
from . import nodes as ir

#: ``Bin.op`` -> NumPy ufunc (element-wise over thread vectors).
BIN_OPS = {
    "+": np.add, "-": np.subtract, "*": np.multiply, "//": np.floor_divide, "%": np.mod, "^": np.bitwise_xor,
    "==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal,
    ">": np.greater, ">=": np.greater_equal, "and": np.logical_and, "or": np.logical_or,
}


class Undetermined(Exception):
    """A value cannot be derived statically (a loaded value, a free loop variable, ...)."""


def thread_values(kind: str, tid: np.ndarray) -> np.ndarray:
    """The thread coordinate ``kind`` of CTA-linear thread ids ``tid``: ``(tid // div) % mod``
    (:func:`tilemagic.arch.threads.axis_def`; ``laneid`` = tx % 32, ``wgid`` = tx // 128, ...).

    Raises
    ------
    Undetermined
        An unknown coordinate name.
    """
    if kind not in AXIS_SCOPES:
        raise Undetermined(f"unknown thread variable {kind!r}")
    div, mod = axis_def(kind)
    v = tid // div if div > 1 else tid
    return v % mod if mod is not None else v


def eval_static(e: ir.Expr, tid: np.ndarray, env: dict | None = None,
                load: Callable[[ir.Load, dict | None], Any] | None = None) -> Any:
    """Value of ``e`` for the threads ``tid`` (int64 arrays broadcast over ``tid``).

    The one evaluator of IR expressions: the simulator (:meth:`tilemagic.sim.interpreter.Simulator.eval_expr`)
    passes ``load``, the pictures and the code generator's warp-uniformity test do not.

    Parameters
    ----------
    e : Expr
    tid : ndarray of int64
        CTA-linear thread ids (``threadIdx.x``).
    env : dict, optional
        ``ir.LoopVar`` objects (the keys, by identity) -> their values (ints or arrays).  The CTA's rank in
        its cluster, ``ir.ThreadVar("cta_rank")`` (:data:`tilemagic.arch.cluster.CTA_RANK`), is not a function
        of ``tid``: it is read from ``env`` under that (hash-consed) node and is undetermined without it.
    load : callable, optional
        ``load(expr, env)`` gives the value of an ``ir.Load``; without it a load is undetermined.

    Raises
    ------
    Undetermined
        A load without ``load``, a free loop variable, an unknown operator or thread variable,
        or division (``//``, ``%``) by zero.
    """
    if isinstance(e, ir.Const):
        return np.int64(e.value)
    if isinstance(e, ir.ThreadVar):
        if env is not None and e in env:
            return env[e]
        return thread_values(e.kind, tid)
    if isinstance(e, ir.LoopVar):
        if env is not None and e in env:
            return env[e]
        raise Undetermined(f"free loop variable {e.name}")
    if isinstance(e, ir.Bin):
        fn = BIN_OPS.get(e.op)
        if fn is None:
            raise Undetermined(f"operator {e.op!r}")
        a, b = eval_static(e.a, tid, env, load), eval_static(e.b, tid, env, load)
        if e.op in ("//", "%"):
            if np.any(np.asarray(b) == 0):
                raise Undetermined("division by zero")
        return fn(a, b)
    if isinstance(e, ir.Load) and load is not None:
        return load(e, env)
    raise Undetermined(f"cannot evaluate {type(e).__name__}")


def warp_uniform(cond, threads: int) -> bool:
    """True when ``cond`` provably takes the same branch in all 32 lanes of every warp of a
    CTA of ``threads`` threads (False when it differs inside a warp or cannot be evaluated)."""
    tid = np.arange(threads, dtype=np.int64)
    try:
        v = np.broadcast_to(np.asarray(eval_static(cond, tid)).astype(bool), tid.shape)
    except Undetermined:
        return False
    pad = (-threads) % 32
    v = np.concatenate([v, np.repeat(v[-1:], pad)]) if pad else v
    w = v.reshape(-1, 32)
    return bool(np.all(w == w[:, :1]))
