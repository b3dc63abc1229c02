"""Predicates and helpers shared by the copy variants (TVM ``copy/utils.py``, ``exec_scope_utils.py``).

Besides the predicates, this module holds the machinery the vectorised variants
(``gmem_smem``, ``ldgsts``, ``reg``, ``ldstmatrix``) share, so each variant only states its own
split:

* :func:`region_flat`, :func:`memory_index`, :func:`region_coords` enumerate a region
  (row-major over the region, which is the element order both sides of a copy agree on);
* :func:`vector_lengths` and :func:`runs_ok` choose the widest vector (128, 64, 32, 16, 8
  bits, then one element; ``ldgsts`` restricts the widths to 16, 8, 4 bytes) that is contiguous and
  naturally aligned;
* :func:`gs_split` is the ``[outer, threads, vec]`` split of a global <-> shared copy that ``gmem_smem``
  and ``ldgsts`` share (TVM's ``align_layouts_gs``);
* :func:`fit_digits` / :func:`fit_grid` express a table of addresses as mixed-radix digit
  expressions in the thread id and the loop variable (checked on every entry), and
  :func:`emit_iterations` turns per-iteration tables into a serial loop (or unrolled
  statements) of IR.
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Callable, Sequence

import numpy as np

from ..arch.ptx import VEC_BYTES
from ..arch.threads import AXIS_SCOPES, AXIS_WEIGHT, SCOPE_RANK, SCOPE_TID, SCOPES, THREADS_PER
from ..ir import nodes as ir
from ..ir.evaluate import Undetermined, eval_static
from ..ir.printer import expr_str
from ..layout.tile import TileLayout, affine_dims  # noqa: F401  (affine_dims re-exported for the variants)
from .dispatch import DispatchContext, Predicate, PredicateFn, Verdict, fail, predicate
from .ops import CopyOp, RegionRef


# ----------------------------------------------------------------------------- predicates
def validate_copy_op(op: CopyOp, ctx: DispatchContext) -> Verdict:
    """Same dtype on both sides and the same non-unit extents (TVM ``validate_copy_op``)."""
    d, s = op.dst, op.src
    if d.buf.dtype != s.buf.dtype:
        return False, f"dtype mismatch: dst {d.buf.name} is {d.buf.dtype}, src {s.buf.name} is {s.buf.dtype}"
    if d.nonunit != s.nonunit:
        return False, (f"region shapes differ: dst {d} has extents {list(d.extents)}, "
                       f"src {s} has {list(s.extents)} (non-unit extents must match)")
    return True, None


def past_edge(r: RegionRef) -> str | None:
    """Where region ``r`` reaches past its buffer's edge, in words (``"rows 240..271 of 256"``), or None when it
    lies inside the buffer.  Only a ``copy_async`` global <-> shared region may (the checker,
    :func:`tilemagic.lower.program.check`); TMA fills a load's out-of-bound elements and drops a store's
    (PTX ISA 9.0 §5.5.3.3), every other variant declines (:func:`decline_past_edge`)."""
    rank = len(r.buf.shape)
    names = {rank - 1: "columns", rank - 2: "rows"} if rank > 1 else {0: "elements"}
    out = [f"{names.get(d, f'dimension {d} indices')} {b}..{b + e - 1} of {n}"
           for d, (b, e, n) in enumerate(zip(r.begins, r.extents, r.buf.shape)) if b + e > n]
    return ", ".join(out) or None


def decline_past_edge(op: CopyOp) -> None:
    """Decline ``op`` when a region reaches past its buffer: the first step of every ``copy_async`` emitter but
    TMA's, whose hardware fills out-of-bound elements (PTX ISA 9.0 §5.5.3.3).  (An emitter's decline, not a
    predicate: the why-table of an in-bounds op is unchanged.)

    Raises
    ------
    DispatchFail
        ``region reaches past A's edge (rows 240..271 of 256): only TMA fills out-of-bounds elements``.
    """
    for r in (op.src, op.dst):
        where = past_edge(r)
        if where is not None:
            fail(f"region reaches past {r.buf.name}'s edge ({where}): only TMA fills out-of-bounds elements")


def exec_scope_ok(op: CopyOp, ctx: DispatchContext, expected_scopes: Sequence[str]) -> Verdict:
    if ctx.scope_kind in expected_scopes:
        return True, None
    return False, f"unsupported exec_scope {ctx.scope_kind} (needs {' or '.join(expected_scopes)})"


def scope_allowed(op: CopyOp, ctx: DispatchContext, allowed_pairs: Sequence[tuple[str, str]]) -> Verdict:
    pair = (op.src.buf.scope, op.dst.buf.scope)
    if pair in [tuple(p) for p in allowed_pairs]:
        return True, None
    allowed = ", ".join(f"{a}->{b}" for a, b in allowed_pairs)
    return False, f"unsupported memory scopes src={pair[0]} dst={pair[1]}; allowed: {allowed}"


def copy_predicates(expected_scopes: Sequence[str], allowed_pairs: Sequence[tuple[str, str]], *more: Predicate,
                    validate: PredicateFn = validate_copy_op) -> list[Predicate]:
    """``validate_copy_op``, ``exec_scope``, ``storage_scope`` (TVM's first three checks), then ``more``."""
    return [predicate("validate_copy_op", validate),
            predicate("exec_scope", exec_scope_ok, expected_scopes=list(expected_scopes)),
            predicate("storage_scope", scope_allowed, allowed_pairs=list(allowed_pairs)), *more]


def all_threads_active(op: CopyOp, ctx: DispatchContext) -> Verdict:
    """Every thread of each instance of the op's exec scope that executes it is active: no warp, warpgroup
    or CTA is cut by the CTA's size or by the op's guard (TVM ``_all_threads_active``: ``laneid`` spans
    ``[0, 32)``, a warpgroup's ``wid_in_wg`` all 4 warps, a CTA all its threads).  A split over the scope's
    threads would otherwise leave the idle threads' part of the region uncopied.  Thread scope always holds
    (each executing thread is a whole scope).  ``ctx.guard`` is evaluated per thread with
    :func:`~tilemagic.ir.evaluate.eval_static`."""
    if ctx.scope_kind == "thread":
        return True, None
    S, axis = ctx.scope_threads, SCOPE_TID[ctx.scope_kind]
    tid = np.arange(ctx.threads, dtype=np.int64)
    where = ""
    active = np.ones(ctx.threads, bool)
    if ctx.guard is not None:
        where = f" under `if {expr_str(ctx.guard)}`"
        try:
            active = np.broadcast_to(np.asarray(eval_static(ctx.guard, tid), bool), tid.shape)
        except Undetermined as e:
            return False, f"cannot tell which threads execute the op{where}: {e}"
    pad = -ctx.threads % S  # a CTA that ends inside a warp or warpgroup: its last instance is short
    inst = np.concatenate([active, np.zeros(pad, bool)]).reshape(-1, S)
    for i, row in enumerate(inst):
        if row.any() and not row.all():
            on = np.flatnonzero(row)
            lo, hi = int(on[0]), int(on[-1]) + 1
            got = f"[{lo}, {hi})" if hi - lo == len(on) else f"{len(on)} of its {S} threads"
            why = where + (f" (the CTA has {ctx.threads} threads)" if i == len(inst) - 1 and pad else "")
            return False, (f"{axis} narrowed to {got} vs full [0, {S}) in {ctx.scope_kind} {i}{why}; the idle "
                           f"threads' part of the region would never be copied")
    return True, None


def register_layout_ok(op: CopyOp, ctx: DispatchContext) -> Verdict:
    """The register tile's thread axes fit inside the exec scope (TVM ``_r_side_layout_valid``)."""
    local = op.dst if op.dst.buf.scope == "local" else op.src
    if local.buf.scope != "local":  # no register side (a swizzled shared one has no thread axes to read)
        return True, None  # storage_scope is the rule that rejects the pair
    axes = thread_axes(local.buf.layout)
    for a in sorted(axes):
        if SCOPE_RANK[AXIS_SCOPES[a][1]] > SCOPE_RANK[ctx.scope_kind]:
            return False, (f"register layout of {local.buf.name} uses {a} ({AXIS_SCOPES[a][1]} scope) but the op "
                           f"runs at scope {ctx.scope_kind}")
    return True, None


def sm_number(arch: str) -> int:
    """``sm_100a`` -> 100, ``sm_90`` -> 90 (the compute capability of a ``--arch`` target)."""
    digits = "".join(ch for ch in arch[3:] if ch.isdigit())
    return int(digits) if digits else 0


def sm_version_ok(op: CopyOp, ctx: DispatchContext, min_sm: dict[str, int]) -> Verdict:
    """The target's SM version is at least ``min_sm[direction]`` (TVM ``sm_version_ok``);
    direction ``ld`` when the destination is the register tile, else ``st``."""
    direction = "ld" if op.dst.buf.scope == "local" else "st"
    need, have = min_sm[direction], sm_number(ctx.target.arch)
    if have < need:
        return False, f"{direction} direction needs sm_{need} or newer; the target is {ctx.target.arch}"
    return True, None


def thread_axes(layout):
    return {it.axis for it in layout.shard if it.axis in AXIS_SCOPES} | {
        a for a, _ in layout.offset if a in AXIS_SCOPES}


def is_distributed(buf: ir.Buffer) -> bool:
    """A local buffer whose layout spreads elements over threads."""
    return buf.scope == "local" and bool(thread_axes(buf.layout))


def linear_tid(coords: dict, n: int) -> np.ndarray:
    """Linear thread id (in CTA thread units) of every element from its thread-axis coordinates."""
    t = np.zeros(n, np.int64)
    for axis, w in AXIS_WEIGHT.items():
        if axis in coords:
            t = t + coords[axis] * w
    return t


def digits_expr(tvar: ir.Expr, digits: Sequence[tuple[int, int | None, int]]) -> ir.Expr:
    """``Σ ((t // stride) % extent) * coeff`` over ``digits`` = [(stride, extent, coeff)], simplified."""
    expr: ir.Expr = ir.Const(0)
    for stride, extent, coeff in digits:
        if coeff == 0:
            continue
        d = ir.floordiv(tvar, stride)
        d = ir.mod(d, extent) if extent is not None else d
        expr = ir.add(expr, ir.mul(d, coeff))
    return expr


def thread_var_and_count(axes, ctx):
    """The thread variable and thread count a register layout's thread axes span.

    The widest scope among ``axes`` decides: a warp (``laneid``, 32), a warpgroup
    (``tid_in_wg``, 128) or the CTA (``tx``, ``ctx.threads``); no thread axis means one thread.
    """
    if not axes:
        return None, 1
    scope = SCOPES[max(SCOPE_RANK[AXIS_SCOPES[a][1]] for a in axes)]
    return ir.ThreadVar(SCOPE_TID[scope]), THREADS_PER.get(scope, ctx.threads)


def thread_split(local: RegionRef, ctx: DispatchContext) -> tuple[ir.ThreadVar | None, int, np.ndarray, np.ndarray]:
    """Who holds what of a register region: ``(tvar, S, order, M)``.

    The first ``S`` threads of the layout's thread axes (:func:`thread_var_and_count`; fewer than
    the axes span when the layout leaves the last threads empty, e.g. 16 of a warp's lanes) hold
    ``K`` elements each; ``order`` sorts the region's elements by (thread, register slot) so that
    ``order.reshape(S, K)`` lists each thread's elements in register order, and ``M`` (length
    ``K``) is the register slot sequence, the same for every thread.  Declines otherwise.
    Shared by ``reg`` and ``ldstmatrix``.
    """
    lbuf = local.buf
    assert isinstance(lbuf.layout, TileLayout), "a register tile carries a TileLayout"
    lc = lbuf.layout.apply(region_flat(local))
    m = lc.get("m", np.zeros(local.numel, np.int64))
    tvar, S = thread_var_and_count(thread_axes(lbuf.layout), ctx)
    if S > ctx.threads:
        fail(f"register layout of {lbuf.name} is spread over {S} threads ({tvar.kind}) but the CTA has "
             f"{ctx.threads}; the missing threads' elements would never be copied")
    t = linear_tid(lc, local.numel)
    if t.max() >= S or t.min() < 0:
        fail(f"register layout of {lbuf.name} reaches thread {int(t.max())} but its scope has {S} threads")
    counts = np.bincount(t, minlength=S)
    held = int(np.count_nonzero(counts))
    if not np.all(counts[:held] == counts[0]) or np.any(counts[held:]):
        fail(f"register layout of {lbuf.name} gives threads unequal element counts ({counts.min()}..{counts.max()}) "
             f"in this region")
    S = held  # a layout over the first `held` threads only: the others idle (guarded by the variant)
    K = int(counts[0])
    order = np.lexsort((m, t))
    M = m[order].reshape(S, K)
    if not np.all(M == M[0]):
        fail(f"threads hold this region of {lbuf.name} in different register slots")
    return tvar, S, order, M[0]


def guard_first_threads(body: list[ir.Stmt], local: RegionRef, ctx: DispatchContext, tvar: ir.ThreadVar | None,
                        S: int, how: str) -> tuple[list[ir.Stmt], str]:
    """Wrap ``body`` in ``if tvar < S`` when the register layout holds data in its first ``S`` threads
    only (:func:`thread_split`), so the other threads of its scope neither read nor write.

    Returns ``(stmts, how)`` with the guard noted in ``how``.  ``S`` is a multiple of 32 for the
    warp-collective ``ldmatrix``/``stmatrix``, so the condition is uniform over each warp.
    """
    span = thread_var_and_count(thread_axes(local.buf.layout), ctx)[1]
    if S >= span or tvar is None:
        return body, how
    guarded: list[ir.Stmt] = [ir.If(ir.Bin("<", tvar, ir.Const(S)), ir.Seq(tuple(body)))]
    return guarded, (how + "; " if how else "") + f"threads {tvar.kind} < {S}"


# ----------------------------------------------------------------------------- regions
def region_flat(region) -> np.ndarray:
    """Row-major flat buffer index of each region element, in row-major order over the region."""
    return np.ravel_multi_index(tuple(region_coords(region)), region.buf.shape).astype(np.int64)


def region_coords(region) -> np.ndarray:
    """Logical buffer coordinates ``(ndim, numel)`` of the region's elements (same order)."""
    idx = np.indices(region.extents).reshape(len(region.extents), -1)
    return idx + np.asarray(region.begins, np.int64)[:, None]


def memory_index(region) -> np.ndarray:
    """Physical element index (axis ``m``) of each region element of a global/shared buffer."""
    lin = region_flat(region)
    if region.buf.scope == "global" or region.buf.layout is None:
        return lin
    return region.buf.layout.apply(lin).get("m", lin)


def swizzle_chunk(buf) -> int | None:
    """Elements per swizzle chunk of a swizzled shared buffer (TVM's vec_len cap), else None."""
    return getattr(buf.layout, "chunk_elems", None)


# ----------------------------------------------------------------------------- vectors
def vector_lengths(elem_bytes: int, cap: int | None = None, widths: Sequence[int] = VEC_BYTES) -> list[int]:
    """Vector lengths in elements, widest first: the byte ``widths`` (default 128, 64, 32, 16, 8 bits, then a
    single element: TVM ``_vec_len_candidates``) that hold whole elements; at most ``cap`` elements (a
    swizzle chunk) except the single element, which the default widths always contain.  ``ldgsts`` passes
    :data:`~tilemagic.arch.ptx.CP_ASYNC_BYTES` (TVM's ``vec_bits_candidates=(128, 64, 32)``), which has no
    single-element fallback below 4 bytes."""
    out = [vb // elem_bytes for vb in widths if vb % elem_bytes == 0]
    return [v for v in out if cap is None or v <= cap or v == 1]


def runs_ok(idx: np.ndarray, v: int) -> bool:
    """Every run of ``v`` consecutive entries (last axis) is contiguous and starts at a multiple of ``v``."""
    if v == 1:
        return True
    if idx.shape[-1] % v:
        return False
    runs = idx.reshape(idx.shape[:-1] + (idx.shape[-1] // v, v))
    return bool(np.all(runs == runs[..., :1] + np.arange(v)) and np.all(runs[..., 0] % v == 0))


def divides_thread_cnt(op: CopyOp, ctx: DispatchContext) -> Verdict:
    """The region's element count must be a multiple of the scope's threads (TVM ``_divides_thread_cnt``,
    ``_divides_thread_cnt_ldgsts``)."""
    n, t = op.dst.numel, ctx.scope_threads
    if n % t:
        return False, f"region size {n} not divisible by thread_cnt={t}"
    return True, None


# ----------------------------------------------------------------------------- index expressions
def _divisors_desc(n: int) -> list[int]:
    small = [d for d in range(1, int(n ** 0.5) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]), reverse=True)


def fit_digits(vals) -> list[tuple[int, int | None, int]] | None:
    """Express ``vals[j] - vals[0]`` as ``Σ ((j // stride) % extent) * coeff`` (mixed radix).

    Greedy from the innermost digit: each digit takes the largest extent (a divisor of
    what is left) whose whole block still matches, so runs that are linear fuse into one
    digit; the outermost digit has no modulo (extent None).  The result is verified on
    every entry.

    Returns
    -------
    list of (stride, extent or None, coeff), or None when no such form exists (a swizzle).
    """
    d = np.asarray(vals, dtype=np.int64).reshape(-1)
    n = d.size
    d = d - d[0]
    j = np.arange(n, dtype=np.int64)
    pred = np.zeros(n, np.int64)
    digits = []
    s = 1
    while s < n:
        c = int(d[s])
        for e in _divisors_desc(n // s):
            if e == 1:
                return None
            blk = s * e
            if np.array_equal(pred[:blk] + (j[:blk] // s) * c, d[:blk]):
                break
        digits.append((s, None if s * e >= n else e, c))
        pred = pred + ((j // s) % e) * c
        s *= e
    return digits if np.array_equal(pred, d) else None


def digits_of(var: ir.Expr, vals) -> ir.Expr | None:
    """``vals[var] - vals[0]`` as an expression in ``var`` (:func:`fit_digits`), or None."""
    dg = fit_digits(vals)
    return None if dg is None else digits_expr(var, dg)


def fit_grid(vals: np.ndarray, fvar, tvar, threads: int) -> ir.Expr | None:
    """``vals[f, t]`` (iterations × threads) as an expression in ``fvar`` and ``tvar``.

    Tries a sum of a function of ``f`` and one of ``t`` (each mixed-radix), then one
    mixed-radix function of the combined index ``f * threads + t``.  ``fvar`` may be None
    (one iteration) and ``tvar`` None (one thread).
    """
    vals = np.asarray(vals, np.int64)
    base = int(vals.flat[0])
    sep = vals[:, :1] + vals[:1, :] - base
    if np.array_equal(sep, vals):
        fe = digits_of(fvar, vals[:, 0]) if vals.shape[0] > 1 else ir.Const(0)
        te = digits_of(tvar, vals[0, :]) if vals.shape[1] > 1 else ir.Const(0)
        if fe is not None and te is not None:
            return ir.add(ir.add(fe, te), base)
    if vals.shape[0] > 1 and vals.shape[1] > 1:
        je = digits_of(ir.add(ir.mul(fvar, threads), tvar), vals.reshape(-1))
        if je is not None:
            return ir.add(je, base)
    return None


@dataclass
class IndexTable:
    """The index an instruction uses, per iteration and thread: ``phys[iteration, thread]``.

    ``phys`` is the physical element index (register slot, or memory offset after the
    buffer's layout).  ``coords`` (``ndim × iterations × threads``) are the logical
    coordinates behind it; they are used when ``phys`` itself has no digit form (a
    swizzled layout): each coordinate is fitted instead and the buffer's layout maps them
    (:meth:`~tilemagic.ir.nodes.Buffer.index_expr`).  A thread-invariant table has one column.
    """

    buf: ir.Buffer
    phys: np.ndarray
    coords: np.ndarray | None = None

    def expr(self, it, tvar, threads) -> ir.Expr | None:
        """The index at iteration ``it`` (a LoopVar over all iterations, or an int)."""
        sel = slice(None) if isinstance(it, ir.LoopVar) else slice(it, it + 1)
        fvar = it if isinstance(it, ir.LoopVar) else None
        phys = self.phys[sel]
        tv = tvar if phys.shape[1] > 1 else None
        e = fit_grid(phys, fvar, tv, threads)
        if e is not None or self.coords is None:
            return e
        lay = self.buf.layout
        coords = self.coords[:, sel]
        tile = getattr(lay, "tile", None)
        if tile is not None:  # swizzle: fit the tile's address, then XOR
            flat = np.ravel_multi_index(tuple(coords), self.buf.shape)
            t = fit_grid(tile.apply(flat.reshape(-1))["m"].reshape(flat.shape), fvar, tv, threads)
            if t is not None:
                return ir.swizzle_expr(lay, t)
        cs = [fit_grid(c, fvar, tv, threads) for c in coords]
        return None if any(c is None for c in cs) else self.buf.index_expr(cs)


def emit_iterations(ctx: DispatchContext, n: int, tables: Sequence[IndexTable], build: Callable[..., ir.Stmt], *,
                    tvar: ir.ThreadVar | None = None, threads: int = 1, unroll_up_to: int = 0, max_unrolled: int = 64,
                    what: str = "copy") -> tuple[list[ir.Stmt], str]:
    """Statements for ``n`` iterations of ``build(*index_exprs)`` (one expression per table).

    One iteration is one statement.  Otherwise a serial ``T.grid(n)`` loop with the
    indices as digit expressions of the loop variable (TVM's gmem_smem/reg keep a serial
    loop: unrolling floods the kernel); when ``n <= unroll_up_to`` (ldstmatrix, which TVM
    unrolls) or when an index has no loop form, the iterations are unrolled (at most
    ``max_unrolled``).  Declines with :func:`~tilemagic.lower.dispatch.fail` when an index
    cannot be expressed.

    Returns
    -------
    (stmts, how) : list of Stmt, and how the iterations were emitted for summaries:
        ``""`` (one), ``"in a serial loop"`` or ``"unrolled"``.
    """
    def at(it: ir.LoopVar | int) -> tuple[list[ir.Expr | None], list[str]]:
        exprs = [t.expr(it, tvar, threads) for t in tables]
        bad = [t.buf.name for t, e in zip(tables, exprs) if e is None]
        return exprs, bad

    bad: list[str] = []
    if n > max(1, unroll_up_to):
        (f,) = ctx.builder.loop_vars(1)
        exprs, bad = at(f)
        if not bad:
            return [ir.Grid((f,), (n,), build(*exprs))], "in a serial loop"
    if n > max_unrolled:
        fail(f"the {what}'s indices into {', '.join(bad)} follow no loop pattern over {n} iterations "
             f"(at most {max_unrolled} are unrolled)")
    out = []
    for g in range(n):
        exprs, bad = at(g)
        if bad:
            fail(f"the {what}'s index into {', '.join(bad)} is not expressible in the thread id")
        out.append(build(*exprs))
    return out, "unrolled" if n > 1 else ""


# ----------------------------------------------------------------------------- the global <-> shared split
@dataclass(frozen=True)
class GsSplit:
    """The ``[outer, threads, vec]`` split of a global <-> shared copy (:func:`gs_split`).

    Thread ``t`` of the scope moves the vectors ``f * threads + t`` for ``f`` in ``range(outer)``, each
    ``vec`` elements; ``tables`` are the destination's and the source's index per (iteration, thread), in
    that order, for :func:`emit_iterations`; ``tvar`` is the scope's thread variable (None: one thread);
    ``cap`` the swizzle chunk that capped the width (elements), if any.
    """

    outer: int
    threads: int
    vec: int
    tvar: ir.ThreadVar | None
    tables: tuple[IndexTable, IndexTable]
    cap: int | None


def gs_split(op: CopyOp, ctx: DispatchContext, widths: Sequence[int] = VEC_BYTES) -> GsSplit | None:
    """The split of a global <-> shared copy that ``gmem_smem`` (all ``ld``/``st`` widths) and ``ldgsts``
    (``cp.async``'s 16/8/4 bytes) share, as TVM's ``align_layouts_gs`` serves both (``apache-tvm 0.27.0.post1``).

    The region's elements in row-major order over the region are cut into ``[outer, threads, vec]`` with the
    widest ``vec`` of :func:`vector_lengths` (``widths``, capped at one swizzle chunk of a swizzled shared
    side) such that ``threads * vec`` divides the region and every vector is contiguous and naturally aligned
    in both buffers (:func:`runs_ok` on the physical indices after each buffer's layout).

    Returns
    -------
    GsSplit, or None when no width of ``widths`` fits (never with the default widths, whose last is one
    element).
    """
    dst, src = op.dst, op.src
    T = ctx.scope_threads
    n = dst.numel
    d_idx, s_idx = memory_index(dst), memory_index(src)
    shared = dst if dst.buf.scope == "shared" else src
    cap = swizzle_chunk(shared.buf)
    v = next((v for v in vector_lengths(dst.buf.elem_bytes, cap, widths)
              if n % (T * v) == 0 and runs_ok(d_idx, v) and runs_ok(s_idx, v)), None)
    if v is None:
        return None
    outer = n // (T * v)
    tvar = ir.ThreadVar(SCOPE_TID[ctx.scope_kind]) if T > 1 else None

    def table(region: RegionRef, idx: np.ndarray) -> IndexTable:
        starts = idx[::v].reshape(outer, T)
        coords = region_coords(region)[:, ::v].reshape(-1, outer, T)
        return IndexTable(region.buf, starts, coords)

    return GsSplit(outer, T, v, tvar, (table(dst, d_idx), table(src, s_idx)), cap)
