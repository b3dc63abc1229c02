"""copy_async dispatch: ``tcgen05.cp`` (shared memory -> TMEM through a matrix descriptor).

Variant ``smem->tmem`` of ``copy_async``, as TVM TIRx's ``tcgen05_cp.py`` (``apache-tvm 0.27.0.post1``):
priority 10, predicates ``validate_smem_tmem_copy`` (shared -> tmem, both layouts present, equal element bit
widths, the TMEM buffer allocated) and ``exec_scope`` (one thread: ``thread.copy_async`` under the caller's
election).  Only the instructions are emitted: completion is the caller's ``tcgen05.commit BAR`` (PTX ISA 9.0
§9.7.16.12.1) and a ``wait BAR`` with ``tcgen05.fence::after_thread_sync``.

Shapes (PTX ISA 9.0 §9.7.16.9.1; :data:`tilemagic.arch.tcgen05.CP_SHAPES`) are tried in TVM's order,
``128x256b``, ``4x256b``, ``128x128b``, ``64x128b.warpx2::02_13``, ``64x128b.warpx2::01_23``,
``32x128b.warpx4``; the first plan that validates wins (``shape=`` forces one, ``multicast=`` filters).
A plan is TVM's ``_plan_for_shape``:

A. slice both layouts to the regions and canonicalise; peel the swizzle off the shared side;
B. the TMEM layout's replica must be the shape's (``+ R[4 : 32@TLane]`` for ``warpx4`` ...);
C/D. order the TMEM iterators lane first, then column stride descending, the shared side by the same
   permutation of its groups; canonicalise;
E. split both at stride-0 iterators (the splits must agree) and drop those;
F. group each side as ``(atom_rows, middle, elem_per_atom)``: the TMEM rows must follow the shape's lane map,
   one row's elements must be ``elem_per_atom`` consecutive TMEM columns, the shared rows must group as
   ``(atom_rows / 8, 8)`` with strides (SBO, atom_K), SBO a multiple of 16 B, atom_K in {16, 32, 64, 128} B
   giving the swizzle mode 0..3, which must be the layout's, a swizzled layout the canonical family
   ``swizzle(log2(128 / bits), mode, 3)``; one row is one dense 16-byte unit (128b) or two (256b: adjacent when
   swizzled, else at the LBO stride);
G. the TMEM column offset a multiple of 4 cells, the lane offset plus the footprint within 128 lanes, the shared
   offset aligned to 16 B (unswizzled) or to the swizzle atom ``8 * atom_K``;
H. the middles correspond one to one; their strides are 16-byte multiples (shared) and whole columns or lanes
   (TMEM): one ``ir.TcgenCp`` per middle index, unrolled.

Where TVM accepts silently, the emitter declines with the fix too: an option of another copy (``mbar=``, ``oob=``,
``cache_hint=``, ``cta_mask=``, ``remote_cta_id=``, ``use_tma_reduce=``: :data:`FOREIGN_OPTIONS`), a
``thread.copy_async`` that more than one thread executes (no guard, or one that elects several: ``ctx.guard``), and,
without ``shape=``, a multicast shape that cannot hold the copy's rows is set aside with that reason.

Every rule that fails declines with the rule and the fix (TVM raises bare ``ValueError``\\ s) and a
:class:`~tilemagic.lower.dispatch.DeclineDetail` naming where it broke.  Before emitting, the plan is checked
element by element: every cp is walked as the hardware reads its descriptor
(:func:`tilemagic.layout.smem_matrix.cp_source_addresses`, :func:`tilemagic.arch.tcgen05.cp_cells`) and every
byte must land where the TMEM layout (replicas included) puts it; a mismatch is an
:class:`~tilemagic.errors.InternalError` (a planner bug), never a silent wrong copy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...arch import smem_desc
from ...arch import tcgen05 as tc
from ...errors import InternalError
from ...ir import nodes as ir
from ...ir.evaluate import Undetermined, eval_static
from ...ir.printer import expr_str
from ...layout import TileLayout, row_major
from ...layout.smem_matrix import cp_source_addresses
from ...layout.swizzle import ComposeLayout
from ...layout.tile import Iter, iters_text
from ..common import decline_past_edge
from ..dispatch import (DeclineDetail, DispatchContext, DispatchFail, EmitSummary, Emitted, Verdict, fail,
                        predicate, register_dispatch)
from ..ops import CopyOp, RegionRef

#: swizzle mode (0..3) by atom_K, the bytes between consecutive rows of an 8-row core matrix (TVM ``sw_candidates``)
_SW_OF_ATOM_K = {16: 0, 32: 1, 64: 2, 128: 3}
#: the descriptor's layout type of each swizzle mode (PTX ISA 9.0 §9.7.16.4.1)
_LAYOUT_OF_SW = {0: smem_desc.LAYOUT_TYPES["none"], 1: smem_desc.LAYOUT_TYPES["32B"],
                 2: smem_desc.LAYOUT_TYPES["64B"], 3: smem_desc.LAYOUT_TYPES["128B"]}
_SW_NAME = {0: "no swizzle", 1: "32B swizzle", 2: "64B swizzle", 3: "128B swizzle"}
CTA_GROUP2_REASON = ("cta_group::2 needs TMEM in a cluster of CTA pairs, which the simulator does not model yet; "
                     "use cta_group=1")
DECOMPRESS_REASON = ("TVM 0.27's planner does not support decompress; the ISA gives the bit placement only as "
                     "figures (PTX ISA 9.0 §9.7.16.9.1): copy the data undecompressed (no decompress=)")
#: copy_async options of other variants that tcgen05.cp has no operand for, and why each is declined rather than
#: dropped (TVM 0.27 ``copy_tcgen05_cp_impl`` ignores config keys it does not read): a dropped ``mbar=`` would
#: leave the kernel waiting on an arrive that never comes.
FOREIGN_OPTIONS = {
    "mbar": ("tcgen05.cp takes no mbar=: its completion is the issuing thread's `tcgen05.commit {bar}` "
             "(PTX ISA 9.0 §9.7.16.12.1): drop mbar= and write `if tx == 0: tcgen05.commit {bar}` after the copy"),
    "oob": "tcgen05.cp reads shared memory only, it has no out-of-bounds fill (oob= is TMA's): drop oob=",
    "cache_hint": "tcgen05.cp takes no cache hint (cache_hint= is TMA's and cp.async's): drop cache_hint=",
    "cta_mask": ("tcgen05.cp has no multicast to CTAs (cta_mask= is TMA's; its multicast= is lanes): "
                 "drop cta_mask="),
    "remote_cta_id": ("tcgen05.cp writes the issuing CTA's TMEM (remote_cta_id= is the dsmem copy's): "
                      "drop remote_cta_id="),
    "use_tma_reduce": "tcgen05.cp does not reduce (use_tma_reduce= is TMA's): drop use_tma_reduce=",
}


@dataclass(frozen=True)
class CpPlan:
    """One validated ``tcgen05.cp`` plan of a copy.

    Attributes
    ----------
    key : str
        The :data:`~tilemagic.arch.tcgen05.CP_SHAPES` key.
    swizzle : int
        Swizzle mode 0..3 (none, 32B, 64B, 128B); ``layout`` the descriptor's layout type code.
    lbo, sbo : int
        Leading / stride byte offsets of the descriptor (bytes; LBO 0 for 128-bit rows, 16 when swizzled 256-bit).
    cps : tuple of (int, int, int)
        Per instruction: (byte offset of its matrix in the shared buffer, TMEM lane, 32-bit TMEM column).
    """

    key: str
    swizzle: int
    layout: int
    lbo: int
    sbo: int
    cps: tuple[tuple[int, int, int], ...]


def _decline(rule: str, msg: str, buf: str, key: str, byte: int | None = None, row: int | None = None,
             chunk: int | None = None, expected: int | None = None) -> None:
    fail(msg, DeclineDetail(rule, buf, byte, row, chunk, expected, key))


def _segment(iters) -> list[Iter]:
    return list(TileLayout(tuple(iters) or (Iter(1, 1, "m"),)).canonicalize().shard)


def _lanes_of(iters) -> np.ndarray:
    """TLane of each row index of the iterators (outermost first), None when an iterator is not on TLane."""
    lay = TileLayout(tuple(iters))
    return lay.apply(np.arange(lay.size())).get("TLane", np.zeros(lay.size(), np.int64))


def _split_by_zero(lay: TileLayout) -> tuple[list[int], list[Iter]]:
    """``lay``'s shard cut at stride-0 iterators: (the extents of the runs between them and of each, the others)
    (TVM ``_split_by_zero``)."""
    seq: list[int] = []
    keep: list[Iter] = []
    cur = 1
    for it in lay.shard:
        if it.stride == 0:
            if cur > 1:
                seq.append(cur)
            seq.append(it.extent)
            cur = 1
        else:
            cur *= it.extent
            keep.append(it)
    if cur > 1:
        seq.append(cur)
    return seq, keep


def _align_middles(t_mid: list[Iter], s_mid: list[Iter]) -> tuple[list[Iter], list[Iter]] | None:
    """Both middles cut at the union of their cumulative extents, one iterator per segment and side (TVM
    ``_align_middles``); None when that does not work."""
    def bounds(iters):
        out, p = [], 1
        for it in iters:
            p *= it.extent
            out.append(p)
        return out

    tb, sb = bounds(t_mid), bounds(s_mid)
    if not tb and not sb:
        return t_mid, s_mid
    cuts = sorted(set(tb) | set(sb))
    shape, prev = [], 1
    for c in cuts:
        if c % prev:
            return None
        shape.append(c // prev)
        prev = c

    def sub(iters):
        got = TileLayout(tuple(iters) or (Iter(1, 1, "m"),)).try_group(shape)
        if got is None:
            return None
        lay, seps = got
        out = []
        for i in range(len(shape)):
            seg = _segment(lay.shard[seps[i]:seps[i + 1]])
            if len(seg) != 1:
                return None
            out.append(seg[0])
        return out

    t2, s2 = sub(t_mid), sub(s_mid)
    return None if t2 is None or s2 is None else (t2, s2)


def _tmem_layout(buf: ir.Buffer) -> TileLayout:
    assert isinstance(buf.layout, TileLayout), "tmem buffers carry a TileLayout"
    return buf.layout


def _shared_layout(buf: ir.Buffer) -> tuple[TileLayout, ComposeLayout | None]:
    lay = buf.layout if buf.layout is not None else row_major(buf.shape)
    if isinstance(lay, ComposeLayout):
        return lay.tile, lay
    assert isinstance(lay, TileLayout)
    return lay, None


def _iters_text(iters) -> str:
    """Iterators (outermost first) as the layout language writes them: ``(2, 8) : (1@TLane, 1@TCol)``, ``8 : 1@TCol``
    (:func:`tilemagic.layout.tile.iters_text`)."""
    return iters_text(tuple(iters)) if iters else "nothing"


def _replica_text(reps) -> str:
    """A replica as the language writes it, ``R[4 : 32@TLane]`` / ``R[(2, 2) : (64@TLane, 32@TLane)]``: ``reps`` is
    a tuple of :class:`Iter`, or a shape's lane offsets (:attr:`CpShape.replicas <tilemagic.arch.tcgen05.CpShape>`,
    ``(0, 32, 64, 96)``); ``""`` for none."""
    if reps and not isinstance(reps[0], Iter):
        reps = [Iter(len(reps), reps[1], "TLane")] if len(reps) > 1 else []
    return f"R[{_iters_text(reps)}]" if reps else ""


def plan_for_shape(op: CopyOp, ctx: DispatchContext, key: str) -> CpPlan:
    """TVM's ``_plan_for_shape`` steps A-H for one :data:`~tilemagic.arch.tcgen05.CP_SHAPES` key.

    Raises
    ------
    DispatchFail
        The first rule that fails, with the rule, the fix and a :class:`DeclineDetail`.
    """
    cps = tc.CP_SHAPES[key]
    s, t = op.src, op.dst
    sname, tname = s.buf.name, t.buf.name
    bits = s.buf.elem_bytes * 8
    eb = s.buf.elem_bytes
    e128 = 128 // bits
    epc = 32 // bits
    elem_per_atom = cps.bits // bits
    # A: slice and canonicalise; peel the swizzle
    s_tile, swz = _shared_layout(s.buf)
    s_sl = s_tile.slice(s.buf.shape, s.region)
    t_sl = _tmem_layout(t.buf).slice(t.buf.shape, t.region)
    if s_sl is None:
        _decline("region", f"the region {s} is not one tile of {sname}'s layout {s.buf.layout}", sname, key)
    if t_sl is None:
        _decline("region", f"the region {t} is not one tile of {tname}'s layout {t.buf.layout}", tname, key)
    assert s_sl is not None and t_sl is not None
    sw_layout = swz.swizzle_len if swz is not None else 0
    # B: the replica
    want = [Iter(len(cps.replicas), cps.replicas[1], "TLane")] if len(cps.replicas) > 1 else []
    if list(t_sl.replica) != want:
        got = _replica_text(_tmem_layout(t.buf).replica or t_sl.replica) or "no replica"
        fix = (f"declare {tname} with + {_replica_text(cps.replicas)}" if want
               else f"declare {tname} without + R[...] (a {cps.shape} copy writes each row once)")
        _decline("replica", f"tcgen05.cp.{key} writes every row at lane offsets "
                 f"{', '.join(map(str, cps.replicas))}, so {tname} must carry "
                 f"{_replica_text(cps.replicas) or 'no replica'}; it has {got}: {fix}", tname, key)
    # C/D: permute (TLane first, then TCol stride descending)
    perm = sorted(range(len(t_sl.shard)), key=lambda i: (0 if t_sl.shard[i].axis == "TLane" else 1,
                                                          -t_sl.shard[i].stride))
    g = s_sl.try_group([it.extent for it in t_sl.shard])
    if g is None:
        _decline("group", f"{sname}'s layout over {s} does not split along {tname}'s iterators "
                 f"{t_sl}: give both sides the same row/column structure", sname, key)
    assert g is not None
    s_grp, seps = g
    s_perm = [it for i in perm for it in s_grp.shard[seps[i]:seps[i + 1]]]
    s_p = TileLayout(tuple(s_perm), s_grp.replica, s_grp.offset).canonicalize()
    t_p = TileLayout(tuple(t_sl.shard[i] for i in perm), t_sl.replica, t_sl.offset).canonicalize()
    # E: broadcast iterators
    seq_t, keep_t = _split_by_zero(t_p)
    seq_s, keep_s = _split_by_zero(s_p)
    if seq_t != seq_s:
        _decline("broadcast", f"the stride-0 iterators of {tname} ({seq_t}) and {sname} ({seq_s}) do not match",
                 tname, key)
    t_iso = TileLayout(tuple(keep_t) or (Iter(1, 1, "TLane"),), t_p.replica, t_p.offset)
    s_iso = TileLayout(tuple(keep_s) or (Iter(1, 1, "m"),), s_p.replica, s_p.offset)
    # F: (atom_rows, middle, elem_per_atom)
    atom = cps.rows * elem_per_atom
    n = t_iso.size()
    if n < atom or n % atom:
        _decline("atom", f"the copy moves {n} {s.buf.dtype} elements, not a whole number of {cps.shape} atoms "
                 f"({cps.rows} rows x {elem_per_atom} elements)", tname, key)
    n_mid = n // atom
    tg = t_iso.try_group([cps.rows, n_mid, elem_per_atom])
    sg = s_iso.try_group([cps.rows, n_mid, elem_per_atom])
    if tg is None or sg is None:
        side = tname if tg is None else sname
        _decline("atom", f"{side}'s layout does not split into {cps.rows}-row x {elem_per_atom}-element "
                 f"{cps.shape} atoms", side, key)
    assert tg is not None and sg is not None
    (tgl, ts), (sgl, ss) = tg, sg
    t_lane = list(tgl.shard[ts[0]:ts[1]])
    t_mid = _segment(tgl.shard[ts[1]:ts[2]])
    t_col = _segment(tgl.shard[ts[2]:ts[3]])
    s_lane = list(sgl.shard[ss[0]:ss[1]])
    s_mid = _segment(sgl.shard[ss[1]:ss[2]])
    s_col = _segment(sgl.shard[ss[2]:ss[3]])
    mids = _align_middles(t_mid, s_mid)
    if mids is None:
        _decline("middle", f"the instructions of {tname} ({_iters_text(t_mid)}) and of {sname} "
                 f"({_iters_text(s_mid)}) do not correspond one to one", sname, key)
    assert mids is not None
    t_mid, s_mid = mids
    # F.1: lanes and TMEM columns
    if any(it.axis != "TLane" for it in t_lane) or \
            not np.array_equal(_lanes_of(t_lane), np.asarray(cps.lane_of_row)):
        _decline("lanes", f"tcgen05.cp.{key} writes row r to lane {_lane_words(key)}; {tname}'s rows are "
                 f"({_iters_text(_segment(t_lane))}): lay the TMEM rows out as the shape writes them, or pick the "
                 f"shape that matches", tname, key)
    if len(t_col) != 1 or t_col[0] != Iter(elem_per_atom, 1, "TCol"):
        _decline("tmem_col", f"one {cps.bits}-bit row must be {elem_per_atom} consecutive TMEM columns "
                 f"({elem_per_atom} : 1@TCol); {tname} has {_iters_text(t_col)}", tname, key)
    # F.2: shared rows -> (SBO, atom_K)
    s_off = s_iso.offset_of("m") * eb
    if cps.rows <= 8:
        rows = _segment(s_lane)
        if len(rows) != 1:
            _decline("rows", f"the {cps.rows} rows of one {cps.shape} copy must sit at one stride in {sname}; "
                     f"they are {_iters_text(rows)}", sname, key)
        sbo, atom_k = 0, rows[0].stride * eb
    else:
        lg = TileLayout(tuple(s_lane)).try_group([cps.rows // 8, 8])
        blk = _segment(lg[0].shard[lg[1][0]:lg[1][1]]) if lg else []
        blk8 = _segment(lg[0].shard[lg[1][1]:lg[1][2]]) if lg else []
        if len(blk) != 1 or len(blk8) != 1:
            _decline("rows", f"the rows of {sname} must form 8-row core matrices at one stride (SBO) with the rows "
                     f"of each at one stride (atom_K); rows of one {cps.shape} copy are "
                     f"{_iters_text(_segment(s_lane))}", sname, key)
        sbo, atom_k = blk[0].stride * eb, blk8[0].stride * eb
        if sbo % 16:
            _decline("sbo", f"SBO {sbo} B is not a multiple of 16 B: rows 8..15 of {sname} start {sbo} B after "
                     f"rows 0..7; pad each 8-row group to a multiple of 16 B ({-(-sbo // 16) * 16} B)",
                     sname, key, s_off + sbo, 8, 0, -(-sbo // 16) * 16 + s_off)
    if atom_k not in _SW_OF_ATOM_K:
        _decline("atom_k", f"consecutive rows of an 8-row core matrix of {sname} are {atom_k} B apart; the "
                 f"descriptor knows 16 B (no swizzle), 32, 64 and 128 B (the 32B/64B/128B swizzles): lay the rows "
                 f"out at one of those pitches", sname, key, s_off + atom_k, 1, 0)
    sw = _SW_OF_ATOM_K[atom_k]
    family = f"swizzle({int(math.log2(e128))}, {sw}, 3)"
    if sw != sw_layout or (swz is not None and sw and (swz.per_element != int(math.log2(e128))
                                                       or swz.atom_len != 3)):
        have = f"swizzle({swz.params_text()})" if swz is not None else "not swizzled"
        if sw:
            msg = (f"{_SW_NAME[sw]} needs {family} over rows of {atom_k} B of {bits}-bit elements, {sname} is {have}: "
                   f"declare {sname} @ {family}")
        else:
            msg = (f"rows of {sname} are 16 B apart, which the descriptor reads without swizzle, but {sname} is "
                   f"{have}: drop the swizzle, or lay the rows out at the swizzle's row pitch "
                   f"({16 << sw_layout} B)")
        _decline("swizzle", msg, sname, key, s_off, 0, 0)
    # F.3: one row's 16-byte units
    if cps.bits == 128:
        if len(s_col) != 1 or s_col[0] != Iter(e128, 1, "m"):
            _decline("lbo", f"one 128-bit row of a {cps.shape} copy must be {e128} consecutive {s.buf.dtype} "
                     f"elements (16 B) in {sname}; it is {_iters_text(s_col)}", sname, key, s_off, 0, 0)
        lbo = 0
    else:
        cg = TileLayout(tuple(s_col)).try_group([2, e128])
        u = _segment(cg[0].shard[cg[1][0]:cg[1][1]]) if cg else []
        e = _segment(cg[0].shard[cg[1][1]:cg[1][2]]) if cg else []
        if len(u) != 1 or len(e) != 1 or e[0] != Iter(e128, 1, "m"):
            _decline("lbo", f"one 256-bit row of a {cps.shape} copy must be two 16-byte units of {e128} "
                     f"consecutive {s.buf.dtype} elements in {sname}; it is {_iters_text(s_col)}", sname, key,
                     s_off, 0, 1)
        lbo = u[0].stride * eb
        if lbo % 16:
            _decline("lbo", f"the two 16-byte units of a row of {sname} are {lbo} B apart (LBO), not a multiple "
                     f"of 16 B: pad the row to 16-byte units", sname, key, s_off + lbo, 0, 1, -(-lbo // 16) * 16)
        if sw and lbo != 16:
            _decline("lbo", f"a swizzled 256-bit row reads its two 16-byte units adjacent (the descriptor's LBO is "
                     f"ignored), but in {sname} they are {lbo} B apart: keep a row's 32 bytes together",
                     sname, key, s_off + lbo, 0, 1, s_off + 16)
    # G: alignment
    t_coff = t_iso.offset_of("TCol")
    if (t.buf.tmem_col * epc + t_coff) % (tc.CP_COL_ALIGN * epc):
        _decline("tmem_col_align", _col_align_reason(t, t_coff, epc, ctx), tname, key, row=0, chunk=0)
    t_loff = t_iso.offset_of("TLane")
    span = TileLayout(t_p.shard, t_p.replica).span("TLane")  # (the offset is t_loff, added below)
    if t_loff + span > 128:
        _decline("lanes", f"TMEM lane offset {t_loff} plus the copy's footprint of {span} lanes overflows the "
                 f"128 lanes: start the region at lane {128 - span} or lower", tname, key)
    align = 16 if sw == 0 else 8 * atom_k
    if s_off % align:
        what = "16 B" if sw == 0 else f"the {8 * atom_k}-byte swizzle atom"
        _decline("alignment", f"the copy's matrix starts {s_off} B into {sname}, not a multiple of {what} "
                 f"(the descriptor's base offset is 0): start the region at a multiple of {align} B",
                 sname, key, s_off, 0, 0, s_off // align * align)
    # H: middles
    if len(t_mid) != len(s_mid) or any(a.extent != b.extent for a, b in zip(t_mid, s_mid)):
        _decline("middle", f"the instructions over {tname} ({_iters_text(t_mid)}) and over {sname} "
                 f"({_iters_text(s_mid)}) do not correspond one to one", sname, key)
    steps: list[tuple[int, int, int, int]] = []  # (extent, shared bytes, lanes, columns)
    for ti, si in zip(t_mid, s_mid):
        if ti.extent == 1:
            continue
        sb = si.stride * eb
        if sb % 16:
            _decline("middle", f"consecutive tcgen05.cp sources in {sname} are {sb} B apart, not a multiple of "
                     f"16 B (the descriptor's start address counts 16-byte units)", sname, key, s_off + sb, 0, 0)
        if ti.axis == "TCol":
            if ti.stride % (tc.CP_COL_ALIGN * epc):
                _decline("tmem_col_align", f"consecutive tcgen05.cp destinations are {ti.stride} {t.buf.dtype} "
                         f"apart in {tname}, not a multiple of {tc.CP_COL_ALIGN} 32-bit columns "
                         f"({tc.CP_COL_ALIGN * epc} elements): every tcgen05.cp writes from a TMEM column that is a "
                         f"multiple of {tc.CP_COL_ALIGN}", tname, key)
            steps.append((ti.extent, sb, 0, ti.stride // epc))
        elif ti.axis == "TLane":
            steps.append((ti.extent, sb, ti.stride, 0))
        else:
            _decline("middle", f"consecutive tcgen05.cp destinations step along {ti.axis}, not TMEM lanes or "
                     f"columns", tname, key)
    out = []
    for flat in range(math.prod(e for e, *_ in steps)):
        so, lo, co, div = 0, 0, 0, 1
        for ext, sb, ls, cs in steps:
            i = flat // div % ext
            div *= ext
            so, lo, co = so + i * sb, lo + i * ls, co + i * cs
        out.append((s_off + so, t_loff + lo, t.buf.tmem_col + t_coff // epc + co))
    return CpPlan(key, sw, _LAYOUT_OF_SW[sw], lbo, sbo, tuple(out))


def _col_align_reason(t: RegionRef, t_coff: int, epc: int, ctx: DispatchContext) -> str:
    """Why the first TMEM column of a copy into ``t`` (``t_coff`` elements into its buffer, ``epc`` elements per
    32-bit column) is not a multiple of :data:`~tilemagic.arch.tcgen05.CP_COL_ALIGN`, with the fix: the region's
    offset inside its buffer, or the buffer's own place in the allocation (after the buffers declared before it,
    or ``at OTHER + COLS``)."""
    a = tc.CP_COL_ALIGN
    buf, name = t.buf, t.buf.name
    rule = (f"tcgen05.cp writes 128-bit units, so its TMEM column must be a multiple of {a} (PTX ISA 9.0 "
            f"§9.7.16.9.1; TVM 0.27's smem->tmem rule)")
    if buf.tmem_col % a == 0:
        return (f"TMEM column offset {t_coff} {buf.dtype} of {t} is not 128-bit aligned ({name} starts at TMEM "
                f"column {buf.tmem_col}); {rule}: start the region at a multiple of {a * epc} {buf.dtype}")
    col = buf.tmem_col + t_coff / epc
    inner = f", and the region {t} {t_coff} {buf.dtype} into it" if t_coff else ""
    if buf.alias_of is not None:
        tgt = next((b for b in ctx.builder.tmem_buffers if b.name == buf.alias_of), None)
        k = buf.tmem_col - (tgt.tmem_col if tgt is not None else 0)
        alts = " or ".join(f"{buf.alias_of} + {c}" for c in dict.fromkeys((k - buf.tmem_col % a,
                                                                             k - buf.tmem_col % a + a)) if c >= 0)
        return (f"the copy's first TMEM column is {col:g}: {name} is at {buf.alias_of} + {k}, TMEM column "
                f"{buf.tmem_col}{inner}; {rule}: alias {name} at {alts}")
    before = [b for b in ctx.builder.tmem_buffers if b.alias_of is None and b.tmem_col < buf.tmem_col]
    prev = max(before, key=lambda b: b.tmem_col, default=None)
    after = f" (after {prev.name}, {prev.tmem_ncols} columns)" if prev is not None else ""
    pad = f", or pad {prev.name} to {prev.tmem_ncols + a - buf.tmem_col % a} columns" if prev is not None else ""
    return (f"the copy's first TMEM column is {col:g}: {name} starts at TMEM column {buf.tmem_col}{after}{inner}; "
            f"{rule}: declare {name} first{pad}, or alias it at a multiple of {a} columns (`at OTHER + COLS`)")


def _lane_words(key: str) -> str:
    return {"128x256b": "r", "4x256b": "32r", "128x128b": "r", "64x128b.warpx2::02_13": "r (+64 replica)",
            "64x128b.warpx2::01_23": "r for r < 32, r + 32 above (+32 replica)",
            "32x128b.warpx4": "r (+32, +64, +96 replicas)"}[key]


def _region_coords(r: RegionRef) -> list[np.ndarray]:
    grids = np.meshgrid(*[np.arange(b, b + e) for b, e in zip(r.begins, r.extents)], indexing="ij")
    return [g.reshape(-1) for g in grids]


def verify_plan(op: CopyOp, plan: CpPlan) -> None:
    """Walk every cp as the hardware reads its descriptor and check each byte lands where the TMEM layout says.

    Raises
    ------
    InternalError
        A byte of the region is written elsewhere, not at all, or a cp writes a cell outside the region.
    """
    s, t = op.src, op.dst
    eb = s.buf.elem_bytes
    cps = tc.CP_SHAPES[plan.key]
    base = smem_desc.PATTERN_PERIOD[plan.layout] * 4  # any pattern-aligned base: the walk depends on base mod period
    k16 = np.arange(16, dtype=np.int64)
    got_parts = []
    for off, lane, col in plan.cps:
        d = smem_desc.decode(smem_desc.encode(base + off, plan.lbo, plan.sbo, plan.layout))
        addrs = cp_source_addresses(d, cps.rows, cps.chunks) - base  # (rows, chunks)
        lanes, cols = tc.cp_cells(plan.key, lane, col)  # (rows, replicas), (chunks, 4)
        # (row, replica, chunk, byte): shared byte -> TMEM lane, byte column (4 per 32-bit column)
        sb = np.broadcast_to(addrs[:, None, :, None] + k16, (cps.rows, lanes.shape[1], cps.chunks, 16))
        ln = np.broadcast_to(lanes[:, :, None, None], sb.shape)
        bc = np.broadcast_to((cols[:, k16 // 4] * 4 + k16 % 4)[None, None], sb.shape)
        got_parts.append(np.stack([sb.ravel(), ln.ravel(), bc.ravel()], 1))
    got = np.unique(np.concatenate(got_parts), axis=0)
    # what the layouts say: shared byte -> TMEM (lane, byte column) of every element, replicas included
    s_tile, swz = _shared_layout(s.buf)
    s_lay: TileLayout | ComposeLayout = swz if swz is not None else s_tile
    sm = s_lay.apply(*_region_coords(s), shape=s.buf.shape)["m"]
    tl = _tmem_layout(t.buf)
    ta = tl.apply(*_region_coords(t), shape=t.buf.shape)
    t_lane = ta.get("TLane", np.zeros_like(sm))
    tcol = ta.get("TCol", np.zeros_like(sm))
    reps = tl.replica_offsets("TLane")
    b = np.arange(eb, dtype=np.int64)
    shape = (sm.size, reps.size, eb)
    wb = np.broadcast_to(sm[:, None, None] * eb + b, shape)
    wl = np.broadcast_to(t_lane[:, None, None] + reps[None, :, None], shape)
    wc = np.broadcast_to(t.buf.tmem_col * 4 + tcol[:, None, None] * eb + b, shape)
    want = np.unique(np.stack([wb.ravel(), wl.ravel(), wc.ravel()], 1), axis=0)
    if got.shape != want.shape or not np.array_equal(got, want):
        gs, ws = {tuple(r) for r in got.tolist()}, {tuple(r) for r in want.tolist()}
        first = min(gs ^ ws)
        who = "the plan writes" if first in gs else "the layouts want, and the plan misses,"
        raise InternalError(
            f"tcgen05.cp planner bug: the {len(plan.cps)} x {plan.key} plan for {op.text!r}: {who} shared byte "
            f"{first[0]} of {s.buf.name} at TMEM lane {first[1]}, byte column {first[2]}", op.span)


def _choose(op: CopyOp, ctx: DispatchContext) -> CpPlan:
    """``shape=`` / ``multicast=`` resolved as TVM ``_resolve_cp_shape``; else every shape in order."""
    shape = op.option("shape")
    mc = op.option("multicast")
    mc = None if mc is None else str(mc)
    if shape is not None:
        shape = str(shape)
        allowed = tc.CP_MULTICAST.get(shape)
        if allowed is None:
            fail(f"unknown tcgen05.cp shape {shape!r}: use one of {', '.join(tc.CP_MULTICAST)}")
        if mc is None:
            if len(allowed) > 1:
                fail(f"tcgen05.cp shape {shape} needs multicast= one of {', '.join(allowed)} (PTX ISA 9.0 "
                     f"§9.7.16.9.1): each replicates the 64 rows into a different pair of warps' lanes")
            mc = allowed[0]
        elif mc not in allowed:
            ok = ", ".join(a for a in allowed if a) or "none (leave multicast= out)"
            fail(f"illegal multicast {mc} for tcgen05.cp shape {shape}: allowed {ok}")
        return plan_for_shape(op, ctx, f"{shape}.{mc}" if mc else shape)
    reasons: list[str] = []
    first: DispatchFail | None = None
    rows = op.dst.extents[0] if len(op.dst.extents) == 2 else None
    for key, c in tc.CP_SHAPES.items():
        if mc is not None and c.multicast != mc:
            continue
        if rows is not None and rows > c.rows and _fills_all_lanes(c):
            reasons.append(f"{key}: cannot hold {rows} rows (one instruction reads {c.rows} rows and writes them "
                           f"at lane offsets {', '.join(map(str, c.replicas))}: all {tc.TMEM_LANES} lanes)")
            continue
        try:
            return plan_for_shape(op, ctx, key)
        except DispatchFail as e:
            reasons.append(f"{key}: {e}")
            first = first or e
    if not reasons:
        known = sorted({c.multicast for c in tc.CP_SHAPES.values()} - {""})
        fail(f"unknown multicast {mc}: use one of {', '.join(known)}")
    # (every candidate may have been set aside for its rows: then no plan ran and there is no place to mark)
    fail("no tcgen05.cp shape fits the layouts; candidates rejected:\n  " + "\n  ".join(reasons),
         first.detail if first is not None else None)


def _fills_all_lanes(c: tc.CpShape) -> bool:
    """Whether one instruction of shape ``c`` writes every TMEM lane (its rows and their replicas): a copy of more
    than ``c.rows`` distinct rows cannot be issued as several of them, the middle has no lane left to step to."""
    return max(c.lane_of_row) + max(c.replicas) + 1 >= tc.TMEM_LANES


def validate_smem_tmem_copy(op: CopyOp, ctx: DispatchContext) -> Verdict:
    """Shared -> TMEM, both layouts present, equal element bit widths, the TMEM buffer allocated (TVM
    ``_validate_smem_tmem_copy``: a byte reinterpretation such as uint8 -> float8 is legal)."""
    s, d = op.src.buf, op.dst.buf
    if s.scope != "shared" or d.scope != "tmem":
        return False, f"not a shared -> tmem copy (src {s.name} is {s.scope}, dst {d.name} is {d.scope})"
    if s.is_mbarrier:
        return False, f"{s.name} is an mbarrier object, not data"
    if d.layout is None:
        return False, f"{d.name} has no TMEM layout"
    if s.elem_bytes != d.elem_bytes:
        return False, (f"element widths differ: {s.name} is {s.dtype} ({s.elem_bytes * 8} bits), {d.name} is "
                       f"{d.dtype} ({d.elem_bytes * 8} bits); a width change is decompress=, which is declined")
    if ctx.builder.tmem_addr is None or d.tmem_ncols <= 0 and d.alias_of is None:
        return False, f"{d.name} is not allocated in TMEM (the kernel has no TMEM allocation)"
    return True, None


def single_thread_exec(op: CopyOp, ctx: DispatchContext) -> Verdict:
    """The op runs on one thread (TVM ``_single_thread_exec``): ``thread.copy_async`` under the caller's guard."""
    ok = ctx.scope_kind == "thread"
    return ok, None if ok else f"expected thread exec_scope, got {ctx.scope_kind}"


def _decline_foreign_options(op: CopyOp) -> None:
    """Decline an option of :data:`FOREIGN_OPTIONS` (TVM 0.27 ignores it silently; we say so)."""
    for key, why in FOREIGN_OPTIONS.items():
        v = op.option(key)
        if v is not None:
            shown = v.name if isinstance(v, ir.Buffer) else v
            fail(f"{key}={shown}: " + why.format(bar=shown if isinstance(v, ir.Buffer) else "BAR")
                 + " (TVM 0.27 ignores a config key it does not read; tilemagic declines it)")


def _decline_many_issuers(op: CopyOp, ctx: DispatchContext) -> None:
    """Decline a ``thread.copy_async`` that more than one thread executes: each would issue every tcgen05.cp
    of the copy (TVM's ``exec_scope`` thread accepts it, the guard being the caller's election).  A guard that
    cannot be evaluated statically is the caller's to get right."""
    tid = np.arange(max(ctx.threads, 1), dtype=np.int64)
    if ctx.guard is None:
        n = ctx.threads
    else:
        try:
            rank = {ir.ThreadVar("cta_rank"): np.int64(op.rank or 0)}
            n = int(np.count_nonzero(np.broadcast_to(np.asarray(eval_static(ctx.guard, tid, rank), bool),
                                                     tid.shape)))
        except Undetermined:
            return
    if n <= 1:
        return
    who = ("every thread of the CTA" if ctx.guard is None
           else f"{n} threads (`if {expr_str(ctx.guard)}`)") + " would issue these tcgen05.cp"
    fix = "no guard elects one" if ctx.guard is None else "the guard elects more than one"
    at = op.text.find("thread.copy_async")
    fail(f"{who} ({fix}; PTX ISA 9.0 §9.7.16.6: each issue is a copy of its own): write "
         f"`if tx == 0: {op.text[at:] if at >= 0 else op.text}`")


def _summary_text(plan: CpPlan) -> str:
    sw = {0: "no swizzle", 1: "32B swizzle", 2: "64B swizzle", 3: "128B swizzle"}[plan.swizzle]
    return f"LBO {plan.lbo} B, SBO {plan.sbo} B, {sw}"


# === Variant: copy_async/smem->tmem (priority=10) ===
#
# When: one thread copies a shared tile into a TMEM buffer of the same element width.
# Emits: one tcgen05.cp.cta_group::1.<shape>[.<multicast>] [tmem_addr[0] + (lane, col)], desc per middle index,
#        unrolled; desc = (start >> 4) | LBO | SBO | version 1 | layout type, from the shared layout.
@register_dispatch("copy_async", "cuda", variant="smem->tmem", priority=10, when=[
    predicate("validate_smem_tmem_copy", validate_smem_tmem_copy),
    predicate("exec_scope", single_thread_exec)])
def copy_async_schedule_smem_tmem(op: CopyOp, ctx: DispatchContext) -> Emitted:
    decline_past_edge(op)
    if op.option("decompress") is not None:
        fail(DECOMPRESS_REASON)
    _decline_foreign_options(op)
    _decline_many_issuers(op, ctx)
    cg = op.option("cta_group", 1)
    if str(cg) not in ("1", "2"):
        fail(f"cta_group={cg}: tcgen05.cp takes cta_group=1 or 2 (PTX ISA 9.0 §9.7.16.6.2)")
    if str(cg) == "2":
        fail(CTA_GROUP2_REASON)
    if op.src.nonunit != op.dst.nonunit:
        fail(f"region shapes differ: {op.dst} has extents {list(op.dst.extents)}, {op.src} has "
             f"{list(op.src.extents)} (non-unit extents must match)")
    plan = _choose(op, ctx)
    verify_plan(op, plan)
    assert ctx.builder.tmem_addr is not None
    addr = ctx.builder.tmem_addr
    nodes: list[ir.Stmt] = [ir.TcgenCp(plan.key, op.src.buf, off, plan.lbo, plan.sbo, plan.layout, addr, lane, col,
                                       tmem=op.dst.buf) for off, lane, col in plan.cps]
    c = tc.CP_SHAPES[plan.key]
    lane0, col0 = plan.cps[0][1], plan.cps[0][2]
    moves = f"{c.rows} rows x {c.bits // 8} B each, to TMEM lane {lane0}, column {col0}"
    step = ""
    if len(plan.cps) > 1:
        d = [b - a for a, b in zip(plan.cps[0], plan.cps[1])]
        step = f"; stepping {d[0]} B in shared memory, {d[2]} columns, {d[1]} lanes"
    notes = (_summary_text(plan) + step,)
    return nodes, EmitSummary(tc.cp_chain(plan.key), len(nodes), "thread", moves=moves, how="unrolled" if len(nodes) > 1
                              else "", notes=notes)
