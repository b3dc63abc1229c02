"""Static evaluation of IR expressions over a CTA's threads (NumPy vectors).

One definition of the binary operators and of the thread coordinates, and of how many times a statement runs
(:func:`issue_count`: its guards over the threads and loop trips, per CTA rank), shared by the
simulator (:mod:`tilemagic.sim.interpreter`), the pictures (:mod:`tilemagic.widgets.placement`)
and the code generator (warp-uniform guards, :mod:`tilemagic.codegen.cuda`).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np

from ..arch.cluster import CTA_RANK
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


# ----------------------------------------------------------------------------- how often a statement runs
_RANK_VAR = ir.ThreadVar(CTA_RANK)


def rank_env(rank: int, env: dict | None = None) -> dict:
    """``env`` (loop values) with ``cta_rank`` bound to ``rank`` for :func:`~tilemagic.ir.evaluate.eval_static`."""
    out = dict(env or {})
    out[_RANK_VAR] = np.int64(rank)
    return out


def holds(conds, threads: int, env: dict | None = None, rank: int = 0) -> np.ndarray:
    """Per thread of a CTA of ``threads`` threads (bool array): do all of ``conds`` hold (loop values ``env``, in
    the CTA of rank ``rank``)?"""
    tid = np.arange(threads, dtype=np.int64)
    mask = np.ones(threads, dtype=bool)
    full = rank_env(rank, env)
    for c in conds:
        mask &= np.broadcast_to(np.asarray(eval_static(c, tid, full), dtype=bool), tid.shape)
    return mask


#: expect_tx=auto enumerates the loop trips around a TMA copy whose thread guard depends on its loop variables
_MAX_TRIPS = 1 << 16


def issue_values(scope: tuple[ir.Stmt, ...], threads: int, rank: int = 0,
                 value: ir.Expr | None = None) -> Counter:
    """How many times a statement inside the ``If``/``Grid`` nodes ``scope`` (outermost first, as
    :func:`~tilemagic.ir.nodes.walk_scoped` gives them) is executed in the CTA of cluster rank ``rank`` of
    ``threads`` threads, by the value of ``value`` for the executing thread and loop trip (a ``Counter`` value ->
    count; the key None when ``value`` is None): the threads for which every enclosing condition holds, over
    the trips of the enclosing loops.

    Raises
    ------
    Undetermined
        A condition or value that cannot be evaluated statically (a load), or more than 65536 loop trips to
        enumerate.
    """
    grids = [s for s in scope if isinstance(s, ir.Grid)]
    conds = [s.cond for s in scope if isinstance(s, ir.If)]
    trips = math.prod(math.prod(g.extents) for g in grids)
    loop_vars = {v for g in grids for v in g.vars}
    exprs = [*conds, *([value] if value is not None else [])]
    uses_loops = any(isinstance(e, ir.LoopVar) and e in loop_vars for c in exprs for e in ir.iter_exprs(c))
    tid = np.arange(threads, dtype=np.int64)
    out: Counter = Counter()

    def count(env: dict | None, times: int) -> None:
        mask = holds(conds, threads, env, rank)
        if value is None:
            out[None] += int(np.count_nonzero(mask)) * times
            return
        vals = np.broadcast_to(np.asarray(eval_static(value, tid, rank_env(rank, env))), tid.shape)[mask]
        for v, c in zip(*np.unique(vals, return_counts=True)):
            out[int(v)] += int(c) * times

    if not uses_loops:  # the common case: guards on thread axes only
        count(None, trips)
        return out
    if trips > _MAX_TRIPS:
        raise Undetermined(f"{trips} loop trips")
    ranges = [range(e) for g in grids for e in g.extents]
    vars_ = [v for g in grids for v in g.vars]
    for values in itertools.product(*ranges):
        count(dict(zip(vars_, values)), 1)
    return out


def issue_count(scope: tuple[ir.Stmt, ...], threads: int, rank: int = 0) -> int:
    """How many times a statement inside the ``If``/``Grid`` nodes ``scope`` is executed in the CTA of cluster
    rank ``rank`` (:func:`issue_values` summed).

    Raises
    ------
    Undetermined
        A condition that cannot be evaluated statically (a load), or more than 65536 loop trips to enumerate.
    """
    return sum(issue_values(scope, threads, rank).values())
