"""copy dispatch variant: ``ldmatrix`` / ``stmatrix`` (shared <-> registers, variant ``ldstmatrix``, priority 10).

A register tile whose layout is the warp's m8n8 fragment of a 16-bit tile in shared
memory moves with the warp-collective PTX ``ldmatrix`` (shared -> registers, sm_75) or
``stmatrix`` (registers -> shared, sm_90): one instruction per ``num`` (4, 2 or 1)
8×8 matrices, the hardware doing the lane shuffle (semantics in
:mod:`tilemagic.arch.ldmatrix`).  TVM TIRx's ``ld_stmatrix.py``; it sorts before
``reg`` (same priority, name order) and declines (``fail``) whenever the layouts do not
fit, so ``reg`` takes the copy.

What must fit (checked on every element rather than by TVM's layout grouping):

* the dtype is 16-bit (``.b16``) and the register layout spans whole warps (laneid,
  tid_in_wg or tx axes over a multiple of 32 threads);
* every thread holds its elements in pairs ``(2k, 2k+1)`` of its registers, the same
  slots in every thread: one 32-bit word per matrix;
* for each word, the 32 lanes of each warp hold one 8×8 matrix whose rows are 16-byte
  aligned runs of 8 elements in shared memory: lane ``t`` the elements (row ``t // 4``,
  columns ``2*(t%4)``, ``+1``) of a row-major matrix (no ``.trans``), or (rows
  ``2*(t%4)``, ``+1``, column ``t // 4``) of rows stored column-major (``.trans``);
  one orientation for the whole copy;
* a swizzle keeps 16-byte rows whole (``per_element >= 3``, TVM's check).

``num`` is the widest of 4, 2, 1 dividing the words per thread; instruction ``g`` moves
words ``g*num .. g*num+num-1`` and thread ``t`` supplies the address of row ``t % 8`` of
matrix ``t // 8``.  The instructions are unrolled as in TVM (a serial loop past 16).
"""

from __future__ import annotations

import numpy as np

from ...ir import nodes as ir
from ...arch.ldmatrix import MIN_SM, NUMS, ROW_ELEMS, chain
from ..common import (
    IndexTable,
    copy_predicates,
    emit_iterations,
    guard_first_threads,
    memory_index,
    region_coords,
    register_layout_ok,
    sm_version_ok,
    swizzle_chunk,
    thread_split,
)
from ..dispatch import DispatchContext, EmitSummary, Emitted, fail, predicate, register_dispatch
from ..ops import CopyOp

_REG_SMEM_PAIRS = [("local", "shared"), ("shared", "local")]
_LANE = np.arange(32)


def _rows(A: np.ndarray, trans: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Per warp and word, the 8 row addresses if the lanes hold an m8n8 fragment, else None.

    ``A[w, lane, word, half]`` is the shared element each register half holds.  Returns
    ``(rows[w, word, r], src_lane[r], src_half[r])``: row ``r``'s address and the lane/half
    that holds its first element.
    """
    if not trans:  # lane t: row t//4, columns 2*(t%4) + half
        src_lane, src_half = 4 * np.arange(8), np.zeros(8, np.int64)
        col = (2 * (_LANE % 4))[:, None] + np.arange(2)  # (lane, half) -> column
        row = np.broadcast_to((_LANE // 4)[:, None], (32, 2))  # (lane, half) -> row
    else:  # lane t: rows 2*(t%4) + half, column t//4
        src_lane, src_half = np.arange(8) // 2, np.arange(8) % 2
        row = (2 * (_LANE % 4))[:, None] + np.arange(2)
        col = np.broadcast_to((_LANE // 4)[:, None], (32, 2))
    rows = np.stack([A[:, src_lane[r], :, src_half[r]] for r in range(8)], axis=-1)  # (W, J, 8)
    expect = rows[:, :, row] + col  # (W, J, 32, 2)
    ok = np.array_equal(expect.transpose(0, 2, 1, 3), A)
    return (rows, src_lane, src_half) if ok else None


# === Variant: copy/ldstmatrix (priority=10) ===
#
# When: a 16-bit register tile <-> shared memory at warp/warpgroup/cta scope whose register
#       layout is the m8n8 fragment of the shared tile (row-major or transposed rows).
# Emits: per warp, unrolled ``ldmatrix.sync.aligned.m8n8.x{num}[.trans].shared.b16`` (load)
#        or ``stmatrix...`` (store, sm_90); declines otherwise so ``reg`` takes the copy.
@register_dispatch("copy", "cuda", variant="ldstmatrix", priority=10, when=copy_predicates(
    ["warp", "warpgroup", "cta"], _REG_SMEM_PAIRS, predicate("register_layout", register_layout_ok),
    predicate("sm_version", sm_version_ok, min_sm=MIN_SM)))
def copy_schedule_ldstmatrix(op: CopyOp, ctx: DispatchContext) -> Emitted:
    load = op.dst.buf.scope == "local"
    local, smem = (op.dst, op.src) if load else (op.src, op.dst)
    lbuf, sbuf = local.buf, smem.buf
    if lbuf.elem_bytes != 2:
        fail(f"ldmatrix/stmatrix move 16-bit elements (.b16); {lbuf.name} is {lbuf.dtype}")
    cap = swizzle_chunk(sbuf)
    if cap is not None and cap < ROW_ELEMS:
        fail(f"swizzle per_element={getattr(sbuf.layout, 'per_element', None)} < 3 incompatible with .b16 "
             f"ldmatrix/stmatrix (need 8-fp16 chunk integrity)")
    tvar, S, order, M = thread_split(local, ctx)
    if S % 32:
        fail(f"the register layout of {lbuf.name} spans {S} thread(s); ldmatrix/stmatrix need whole warps "
             f"(R thread section total {S} not divisible by 32)")
    K = M.size
    if K % 2 or np.any(M[0::2] % 2) or np.any(M[1::2] != M[0::2] + 1):
        fail(f"{lbuf.name} does not hold its elements in register pairs (2k, 2k+1): each 32-bit register of a "
             f"matrix fragment carries two adjacent elements (register slots {M[:8].tolist()}...)")
    J = K // 2
    words = M[0::2] // 2
    W = S // 32
    A = memory_index(smem)[order].reshape(W, 32, J, 2)
    C = region_coords(smem)[:, order].reshape(-1, W, 32, J, 2)
    fit = _rows(A, False)
    trans = False
    if fit is None:
        fit, trans = _rows(A, True), True
    if fit is None:
        fail(f"the lanes do not hold an m8n8 fragment of {sbuf.name}: lane t needs (row t//4, columns 2*(t%4), +1) "
             f"of 8-element rows, or the transpose (rows 2*(t%4), +1, column t//4) for .trans")
    rows, src_lane, src_half = fit
    if np.any(rows % ROW_ELEMS):
        bad = int(rows[rows % ROW_ELEMS != 0][0])
        fail(f"a matrix row of {sbuf.name} starts at element {bad}, not 16-byte aligned (ldmatrix rows are "
             f"8 elements at a multiple of 8)")
    num = next(n for n in NUMS if J % n == 0)
    n = J // num
    # instruction g, thread (warp w, lane l): row l % 8 of matrix (l // 8) % num (threads past 8*num repeat)
    word_of = (np.arange(n)[:, None] * num + (_LANE // 8) % num)  # (n, 32)
    r_of = _LANE % 8
    addr = rows[:, word_of, r_of]  # (W, n, 32)
    addr = addr.transpose(1, 0, 2).reshape(n, S)
    co = C[:, :, src_lane[r_of][None, :], word_of, src_half[r_of][None, :]]  # (D, W, n, 32)
    co = co.transpose(0, 2, 1, 3).reshape(-1, n, S)
    tables = [IndexTable(sbuf, addr, co)]
    tables += [IndexTable(lbuf, words[np.arange(n) * num + i].reshape(n, 1)) for i in range(num)]
    direction = "ld" if load else "st"

    body, how = emit_iterations(ctx, n, tables, lambda a, *rs: ir.LdStMatrix(direction, num, trans, lbuf, rs, sbuf, a),
                                tvar=tvar, threads=S, unroll_up_to=16, what=f"{direction}matrix")
    body, how = guard_first_threads(body, local, ctx, tvar, S, how)
    orient = "column-major rows (.trans)" if trans else "row-major"
    matrices = "matrices" if num > 1 else "matrix"
    return body, EmitSummary(chain(direction, num, trans), n, "warp",
                             moves=f"{num} 8×8 {matrices} of {sbuf.name}, {orient}", how=how)
