"""A ``%%tilecopy`` program as the equivalent TVM TIRx program, written as TVMScript text.

The text is what a TIRx user would write by hand for the same kernel (the style of
TVM's own ``test_tcgen05_ldst.py`` / ``test_fallback.py``, as accepted by
``apache-tvm==0.27.0.post1``):

* global buffers are ``T.handle`` parameters bound with ``T.match_buffer``;
* ``T.device_entry()`` starts the device region, followed by the scope ids of a
  one-CTA launch (``T.cta_id``, ``T.warpgroup_id``/``T.warp_id_in_wg``/
  ``T.thread_id_in_wg`` for whole warpgroups, ``T.warp_id``/``T.lane_id`` for
  whole warps, ``T.thread_id``);
* shared buffers are ``T.alloc_shared`` (with ``layout=`` when not row-major; a ``swizzle(...)`` layout is
  ``T.ComposeLayout(per_element, swizzle_len, atom_len, T.TileLayout(...))``),
  register tiles ``T.alloc_local(..., layout=...)`` or, for ``frag(...)``,
  ``T.alloc_tcgen05_ldst_frag(shape, (rows, cols), dtype)``;
* TMEM is allocated by hand as the TVM tests do: ``tmem_addr = T.alloc_shared([1],
  "uint32")``, warp 0 runs ``tcgen05.alloc`` + ``relinquish_alloc_permit``, and every
  tmem buffer is a ``T.decl_buffer(..., scope="tmem", allocated_addr=tmem_addr[0] +
  COL, layout=...)`` with ``COL`` its 32-bit column inside the allocation and the
  layout ``tmem_datapath_layout(...)`` or an ``S[...]`` with ``TLane``/``TCol``;
* ops are ``Tx.<scope>.copy`` / ``Tx.<scope>.copy_async(dst, src[, dispatch=...])``,
  ``wait ld``/``wait st`` are ``T.ptx.tcgen05.wait__ld/st.sync.aligned()``,
  ``cta_sync`` is ``T.cuda.cta_sync()`` (between ``tcgen05.fence::before_thread_sync``
  and ``::after_thread_sync`` when the kernel uses TMEM, as tilemagic lowers it);
* an ``mbarrier`` is a ``T.alloc_shared((1,), "uint64")`` initialised by thread 0
  (``T.ptx.mbarrier.init.shared.b64``, ``T.ptx.fence.mbarrier_init.release.cluster()``,
  ``T.cuda.cta_sync()``), ``arrive`` is ``T.ptx.mbarrier.arrive[.expect_tx].shared.b64``,
  ``wait BAR phase P`` is ``T.cuda.mbarrier_wait``, the commit groups are
  ``T.ptx.cp.async_[.bulk].commit_group()`` / ``.wait_group[.read](N)``,
  ``fence.proxy.async`` is ``T.ptx.fence.proxy.async_.shared__cta()`` (the spellings of
  TVM's ``tirx.backend.cuda.lang.pipeline``); ``copy_async`` options are TVM's config keys
  (``mbar=T.address_of(BAR[0])``, ``oob="zero"``, ``cache_hint="evict_first"``); a guard
  ``if AXIS OP N:`` compares TVM's scope ids (``T.thread_id``, ``T.warp_id``, ...).  An
  ``expect_tx=auto`` is written as the byte count tilemagic resolved (the lowered kernel is needed; one
  ``if cta_rank == r:`` per rank where the CTAs of a cluster expect different counts);
* a cluster kernel (``kernel NAME cluster=C``) binds ``cta_rank = T.cta_id_in_cluster([C])`` before
  ``T.cta_id([C])`` (the launch of one cluster, as TVM's ``test_dsmem.py`` writes it), ``cluster_sync`` and the
  mbarrier prologue's barrier are ``T.cuda.cluster_sync()``; a region bound in ``cta_rank`` is written as the
  expression (``A[64 * cta_rank:64 * cta_rank + 64, 0:64]``), ``cta_mask=M`` as the integer,
  ``remote_cta_id=E`` as a ``T.int32`` expression in ``cta_rank``, ``use_tma_reduce="add"`` as written (TVM
  0.27's config keys).

The text is self-contained for ``tvm.script.from_source(text)``: it only uses the
names TVMScript binds by default (``T``, ``Tx``, ``Axis``, ``tvm``), so layout factories
are spelled ``tvm.tirx.layout.tmem_datapath_layout(...)``.  The import lines a Python
file needs are given as comments in the header (the TVMScript parser rejects imports).
Buffer names that would shadow those names (a tmem buffer called ``T``, ...) are
renamed with a trailing ``_``; the header lists every renaming.

``tmem_base="const"`` writes ``allocated_addr=COL`` instead (TVM's ``TMEMPool``
convention: the allocation is assumed to start at TMEM address 0).  That is the form
``tvm.compile`` of this wheel turns into CUDA; with ``tmem_addr[0]`` it stops in
``MakePackedAPI`` ("variables (tmem_addr.source,) are used, but are not passed in as
API arguments").
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import TileMagicError
from ..ir import nodes as ir
from ..lang import ast
from ..layout import TileLayout
from ..layout.swizzle import ComposeLayout
from ..arch.cluster import CTA_RANK
from ..arch.threads import AXIS_SCOPES, THREADS_PER, axis_def
from .tvm_tma import TMA_VARIANTS
from ..lower.program import (
    ArriveItem,
    ClusterSyncItem,
    CopyItem,
    FenceItem,
    GroupItem,
    MbarWaitItem,
    SyncItem,
    TcgenCommitItem,
    TcgenFenceItem,
    WaitItem,
)

__all__ = ["TVM_VARIANT_NAMES", "TvmScriptExport", "export_tvmscript", "tcgen05_sync_lines", "tvmscript_from_source"]

# tilemagic variant name -> the TVM 0.27 variant that implements it (TVM folded gmem_smem and reg into vec_auto)
TVM_VARIANT_NAMES = {"gmem_smem": "vec_auto", "reg": "vec_auto"}

# names TVMScript binds by default (tvm.script.parser.core.entry._default_globals) plus Python builtins the
# printed program relies on: a buffer of that name would shadow them
_RESERVED = {"T", "Tx", "Axis", "tvm", "I", "R", "ir", "tir", "relax", "tirx", "TypeVar", "range", "print", "len"}

_SCOPE_NS = {"thread": "Tx", "warp": "Tx.warp", "warpgroup": "Tx.wg", "cta": "Tx.cta"}


class ExportError(TileMagicError):
    """The description uses something the TVMScript export cannot write yet (located at it)."""


@dataclass(frozen=True)
class TvmScriptExport:
    """The exported program.

    Attributes
    ----------
    text : str
        TVMScript of one ``@T.prim_func``, header comments included.
    func_name : str
        Name of the prim_func (the kernel name, renamed if it collides).
    names : dict of str -> str
        tilemagic buffer name -> name in the TVMScript text (equal unless renamed).
    tmem_base : {"shared", "const"}
        How TMEM buffers get their address (see the module docstring).
    op_lines : dict of int -> int
        1-based line of each op call in ``text`` -> its line in the description (maps a
        TVMScript parse error back to the op).
    """

    text: str
    func_name: str
    names: dict[str, str] = field(default_factory=dict)
    tmem_base: str = "shared"
    op_lines: dict[int, int] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.text


# ----------------------------------------------------------------------------- layouts
def _stride_text(it) -> str:
    return str(it.stride) if it.axis == "m" else f"{it.stride} @ Axis.{it.axis}"


def _spec_text(kind: str, iters) -> str:
    if len(iters) == 1:
        return f"T.{kind}[{iters[0].extent}:{_stride_text(iters[0])}]"
    ext = ", ".join(str(i.extent) for i in iters)
    strd = ", ".join(_stride_text(i) for i in iters)
    return f"T.{kind}[({ext}):({strd})]"


def layout_text(layout) -> str:
    """A tilemagic :class:`~tilemagic.layout.TileLayout` as TVMScript (``T.TileLayout(T.S[...] + ...)``).

    Extents, strides and offsets are copied as written (no canonicalisation); a stride
    or offset on an axis other than ``m`` is ``n @ Axis.<axis>``, TVM's printed form.
    TCol is in elements in both tools.

    A :class:`~tilemagic.layout.swizzle.ComposeLayout` (``swizzle(M, B, S[, tile])``) is TVM's
    ``T.ComposeLayout(per_element, swizzle_len, atom_len, T.TileLayout(...))`` over the same tile
    (``swizzle_inner=True``, TVM's default; a bare ``swizzle(M, B, S)`` is written over the tile it stands for,
    the buffer's row-major order), as TVM's own tests spell a swizzled shared buffer
    (``apache-tvm 0.27.0.post1``, ``tvm.tirx.layout.ComposeLayout``): the permutation is
    ``m ^ (((m >> (M + S)) & (2**B - 1)) << M)`` on the tile's address in both tools.

    Raises
    ------
    ValueError
        ``layout`` is neither a plain :class:`~tilemagic.layout.TileLayout` nor a swizzle over one.
    """
    if isinstance(layout, ComposeLayout):
        return (f"T.ComposeLayout({layout.per_element}, {layout.swizzle_len}, {layout.atom_len}, "
                f"{layout_text(layout.tile)})")
    if type(layout) is not TileLayout:
        raise ValueError(f"the TVMScript export has no form for the layout {layout} ({type(layout).__name__}) yet")
    text = _spec_text("S", layout.shard)
    if layout.replica:
        text += " + " + _spec_text("R", layout.replica)
    for axis, v in layout.offset:
        term = str(v) if axis == "m" else f"{v} @ Axis.{axis}"
        text += f" + {term}" if v >= 0 else f" + ({term})"
    return f"T.TileLayout({text})"


def _shape_text(shape) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _region_text(r, names) -> str:
    parts = [f"{b}:{b + e}" for b, e in zip(r.begins, r.extents)]
    return f"{names[r.buf.name]}[{', '.join(parts)}]"


def _rank_text(e: int | ast.RankExpr, rank: str) -> str:
    """An integer expression in ``cta_rank`` as a TVMScript ``PrimExpr`` (the rank bound to the name ``rank``)."""
    if isinstance(e, int):
        return str(e)
    if e.op == "cta_rank":
        return rank
    if e.op == "const":
        return str(e.value)
    assert e.a is not None and e.b is not None  # the parser builds binary nodes with both operands
    return f"({_rank_text(e.a, rank)} {e.op} {_rank_text(e.b, rank)})"


def _expr_text(e: ir.Expr, rank: str) -> str:
    """An ``ir.Expr`` in ``cta_rank`` (a resolved ``remote_cta_id``) as a ``T.int32`` ``PrimExpr``."""
    if isinstance(e, ir.Const):
        return f"T.int32({e.value})"
    if isinstance(e, ir.ThreadVar) and e.kind == CTA_RANK:
        return rank
    if isinstance(e, ir.Bin):
        return f"({_expr_text(e.a, rank)} {e.op} {_expr_text(e.b, rank)})"
    raise TypeError(f"cannot export {e!r}")  # pragma: no cover - the language builds no other


def _ranked_region_text(r: ast.Region, buf: ir.Buffer, names, rank: str) -> str:
    """A region as written, its bounds in ``cta_rank`` as expressions (a point ``k`` as ``k:k + 1``)."""
    if r.slices is None:
        return f"{names[buf.name]}[{', '.join(f'0:{d}' for d in buf.shape)}]"
    parts = []
    for sl, dim in zip(r.slices, buf.shape):
        start = 0 if sl.start is None else sl.start
        if sl.point:
            first = _rank_text(start, rank)
            parts.append(f"{first}:{first} + 1" if isinstance(start, ast.RankExpr) else f"{start}:{start + 1}")
            continue
        stop = dim if sl.stop is None else sl.stop
        parts.append(f"{_rank_text(start, rank)}:{_rank_text(stop, rank)}")
    return f"{names[buf.name]}[{', '.join(parts)}]"


def _tmem_layout_text(decl: ast.BufferDecl | None, buf: ir.Buffer) -> str:
    lay = decl.layout if decl is not None else None
    rows, cols = buf.shape
    if isinstance(lay, ast.DatapathLayout):
        sub = f", sub_slab={lay.sub_slab}" if lay.sub_slab else ""
        return f'tvm.tirx.layout.tmem_datapath_layout("{lay.letter}", {rows}, {cols}{sub})'
    if lay is None:  # tilemagic's default for 128 rows: datapath D (TVM's _default_tmem_layout)
        return f'tvm.tirx.layout.tmem_datapath_layout("D", {rows}, {cols})'
    return _layout_of(buf)


def _layout_of(buf: ir.Buffer) -> str:
    try:
        return layout_text(buf.layout)
    except ValueError as e:
        raise ExportError(f"{e}; '{buf.name}' cannot be exported", buf.span,
                          hint="the rest of the cell runs as usual; only --export/--compare need this") from None


# ----------------------------------------------------------------------------- names
class _Names:
    """Unique TVMScript identifiers: buffer names kept unless they shadow a TVMScript name."""

    def __init__(self):
        self.taken = set(_RESERVED)
        self.renamed: dict[str, str] = {}

    def claim(self, name: str) -> str:
        new = name
        while new in self.taken:
            new += "_"
        self.taken.add(new)
        if new != name:
            self.renamed[name] = new
        return new

    def fresh(self, base: str) -> str:
        new, k = base, 0
        while new in self.taken:
            k += 1
            new = f"{base}_{k}"
        self.taken.add(new)
        return new


# ----------------------------------------------------------------------------- export
def _thread_ids(threads: int, warp_id: str | None, bind: dict[str, str] | None = None) -> list[str]:
    """Scope-id definitions of a one-CTA launch of ``threads`` threads (TVM's ``T.*_id`` statements).

    ``warp_id`` names the cta->warp id when the program needs it (the TMEM alloc guard); ``bind`` maps
    thread axes the guards use (``tx``, ``warpid``, ...) to the names their ids are bound to.
    """
    bind = dict(bind or {})
    if warp_id:
        bind.setdefault("warpid", warp_id)

    def named(axis: str, call: str) -> str:
        return f"{bind[axis]} = {call}" if axis in bind else call

    cluster = int(bind.pop("_cluster", "1"))
    out = [named(CTA_RANK, f"T.cta_id_in_cluster([{cluster}])")] if cluster > 1 else []
    out.append(f"T.cta_id([{cluster}])")
    if threads % 128 == 0:
        out += [named("wgid", f"T.warpgroup_id([{threads // 128}])"), named("wid_in_wg", "T.warp_id_in_wg([4])"),
                named("tid_in_wg", "T.thread_id_in_wg([128])")]
    if threads % 32 == 0:
        out += [named("warpid", f"T.warp_id([{threads // 32}])"), named("laneid", "T.lane_id([32])")]
    out.append(named("tx", f"T.thread_id([{threads}])"))
    return out


def _axis_bound(axis: str, threads: int) -> bool:
    """Does :func:`_thread_ids` define the scope id of ``axis`` for a CTA of ``threads`` threads (the CTA is
    whole instances of the axis's sub-scope and scope)?"""
    return all(threads % THREADS_PER[s] == 0 for s in AXIS_SCOPES[axis] if s != "cta")


def _guard_axes(tp) -> list[str]:
    """The thread axes the guards of the program compare (the mbarrier prologue compares ``tx``)."""
    axes = ["tx"] if tp.mbarriers else []
    for item in tp.items:
        g = getattr(item, "guard", None)
        for t in (g.terms if g is not None else ()):
            if t.axis not in axes:
                axes.append(t.axis)
    return axes


def _axis_text(axis: str, threads: int, bind: dict[str, str]) -> str:
    """A thread axis in the exported text: its bound scope id, or its closed form of the thread id (``cta_rank``
    of a one-CTA kernel: 0)."""
    if axis == CTA_RANK:
        return bind.get(CTA_RANK, "0")
    if _axis_bound(axis, threads):
        return bind[axis]
    div, mod = axis_def(axis)
    text = bind["tx"] + (f" // {div}" if div > 1 else "")
    return f"({text}) % {mod}" if mod is not None and div > 1 else (f"{text} % {mod}" if mod is not None else text)


def _guard_text(guard: ast.Guard, threads: int, bind: dict[str, str]) -> str:
    return " and ".join(f"{_axis_text(t.axis, threads, bind)} {t.op} {t.value}" for t in guard.terms)


def _bar_ref(bar: ir.Buffer, names: dict[str, str]) -> str:
    return f"T.address_of({names[bar.name]}[0])"


def _auto_counts(kernel: ir.Kernel | None) -> dict[int, int | dict[int, int]]:
    """Source line -> the expect_tx an ``expect_tx=auto`` arrive of that line was resolved to (rank -> count where
    the CTAs of a cluster expect different counts: the arrive is one per rank, under ``cta_rank == r``)."""
    if kernel is None:
        return {}
    out: dict[int, int | dict[int, int]] = {}
    for s, scope in ir.walk_scoped(kernel.body):
        if not (isinstance(s, ir.MbarArrive) and s.auto_from and s.span is not None):
            continue
        rank = next((c.cond.b.value for c in scope if isinstance(c, ir.If) and isinstance(c.cond, ir.Bin)
                     and c.cond.op == "==" and isinstance(c.cond.a, ir.ThreadVar) and c.cond.a.kind == CTA_RANK
                     and isinstance(c.cond.b, ir.Const)), None)
        if rank is None:
            out[s.span.line] = s.expect_tx
        else:
            per = out.setdefault(s.span.line, {})
            assert isinstance(per, dict)  # one line's arrive is either uniform or per rank
            per[rank] = s.expect_tx
    return out


def _sync_lines(item, names: dict[str, str], auto: dict[int, int | dict[int, int]], placeholder: bool = False,
                rank: str = CTA_RANK) -> list[str]:
    """The TVMScript of an arrive / mbarrier wait / commit group / fence (TVM's spelling)."""
    if isinstance(item, ArriveItem):
        bar = _bar_ref(item.bar, names)
        if item.auto:
            if item.span.line not in auto and placeholder:
                return ["# expect_tx=auto: not resolved (tilemagic did not lower the cell); 0 stands in for the "
                        "byte count, which TVM's dispatch does not read",
                        f"T.ptx.mbarrier.arrive.expect_tx.shared.b64({bar}, T.uint32(0))"]
            if item.span.line not in auto:
                raise ExportError("expect_tx=auto: the byte count is resolved when tilemagic lowers the cell; "
                                  "this export has no lowered kernel", item.span,
                                  hint="export a cell that lowers, or write `expect_tx=BYTES`")
            count = auto[item.span.line]
            if isinstance(count, dict):  # the CTAs of the cluster expect different counts
                out = ["# expect_tx=auto per receiving CTA (tilemagic): "
                       + ", ".join(f"CTA {r}: {n} bytes" for r, n in sorted(count.items()))]
                for r, n in sorted(count.items()):
                    out += [f"if {rank} == {r}:",
                            f"    T.ptx.mbarrier.arrive.expect_tx.shared.b64({bar}, T.uint32({n}))"]
                return out
            return [f"# expect_tx=auto: {count} bytes (tilemagic)",
                    f"T.ptx.mbarrier.arrive.expect_tx.shared.b64({bar}, T.uint32({count}))"]
        if item.expect_tx:
            return [f"T.ptx.mbarrier.arrive.expect_tx.shared.b64({bar}, T.uint32({item.expect_tx}))"]
        return [f"T.ptx.mbarrier.arrive.shared.b64({bar}, T.uint32(1))"]
    if isinstance(item, MbarWaitItem):
        return [f"T.cuda.mbarrier_wait({_bar_ref(item.bar, names)}, {item.phase})"]
    if isinstance(item, GroupItem):
        chain = "T.ptx.cp.async_" + (".bulk" if item.bulk else "")
        if item.kind == "commit":
            return [f"{chain}.commit_group()"]
        return [f"{chain}.wait_group{'.read' if item.read else ''}({item.n})"]
    assert isinstance(item, FenceItem)
    return ["T.ptx.fence.proxy.async_.shared__cta()"]


def tcgen05_sync_lines(node: ir.TcgenCommit | ir.TcgenFence, names: dict[str, str]) -> list[str]:
    """The TVMScript of a user's ``tcgen05.commit BAR [cta_mask=M]`` or ``tcgen05.fence::*`` (TVM 0.27's spelling,
    ``apache-tvm 0.27.0.post1`` ``backend/cuda/lang/pipeline.py`` ``TCGen05Bar.arrive``): the unicast commit
    ``T.ptx["tcgen05.commit.cta_group::N.mbarrier::arrive::one.shared::cluster.b64"](bar)``, the multicast form with
    ``T.Cast("uint16", mask)`` as its second operand (PTX ISA 9.0 §9.7.16.12.1); a fence as
    ``T.ptx.tcgen05.fence__after_thread_sync()``."""
    if isinstance(node, ir.TcgenFence):
        return [f"T.ptx.tcgen05.fence__{node.kind}()"]
    mask = "" if node.cta_mask is None else f', T.Cast("uint16", {node.cta_mask})'
    return [f'T.ptx["{node.chain}"]({_bar_ref(node.bar, names)}{mask})']


def _option_text(key: str, value: object, names: dict[str, str], rank: str = CTA_RANK) -> str:
    if isinstance(value, ir.Buffer):  # mbar=
        return f"{key}={_bar_ref(value, names)}"
    if isinstance(value, int):  # cta_mask=
        return f"{key}={value}"
    if isinstance(value, ir.Expr):  # remote_cta_id=
        return f"{key}={_expr_text(value, rank)}"
    return f'{key}="{value}"'


def _mbar_without_dispatch(op) -> bool:
    """A global -> shared ``copy_async`` with ``mbar=`` and no ``dispatch=``: TVM 0.27 gives it to ``ldgsts``, which
    drops the barrier (the known bug :data:`tilemagic.export.tvm_compare.LDGSTS_MBAR_BUG` names)."""
    return (op.op == "copy_async" and op.src.buf.scope == "global" and op.dst.buf.scope == "shared"
            and any(k == "mbar" for k, _, _ in op.options))


def _op_comment(op, rec) -> str:
    text = f"# L{op.span.line}: {op.text}"
    if rec is not None and rec.chosen:
        text += f"  (tilemagic: {op.op}/{rec.chosen})"
    return text


def export_tvmscript(prog, tp, records=None, *, tmem_base: str = "shared",
                     force: dict[int, str] | None = None, kernel: ir.Kernel | None = None,
                     unresolved_auto: bool = False) -> TvmScriptExport:
    """Write the TVM TIRx equivalent of a checked program.

    Parameters
    ----------
    prog : tilemagic.lang.ast.Program
        The parsed description (gives each buffer's layout as written: ``datapath(...)``,
        ``frag(...)`` or ``S[...]``).
    tp : tilemagic.lower.program.TypedProgram
        The checked program (buffers, CTA size, TMEM plan, ops in order).
    records : list of DispatchRecord, optional
        tilemagic's dispatch decisions, quoted in a comment above each op.
    tmem_base : {"shared", "const"}, default "shared"
        ``shared``: TMEM addresses come from ``tmem_addr[0]`` written by ``tcgen05.alloc``
        (as TVM's tests write it); ``const``: ``allocated_addr`` is the column number
        (``TMEMPool``'s convention, which this TVM wheel compiles to CUDA).
    force : dict of int -> str, optional
        Description line -> TVM variant name: add ``dispatch=`` to those ops (used to ask
        TVM why it did not pick a variant).
    kernel : tilemagic.ir.nodes.Kernel, optional
        The lowered kernel: gives the byte counts of ``expect_tx=auto``.
    unresolved_auto : bool, default False
        Without ``kernel``, write an ``expect_tx=auto`` arrive with the placeholder count 0 and a comment saying
        so, instead of raising (``--compare tvm`` of a cell tilemagic did not lower: TVM's dispatch does not read
        the count).

    Raises
    ------
    ExportError
        A layout the export has no form for, or ``expect_tx=auto`` without ``kernel`` nor ``unresolved_auto``
        (located).

    Returns
    -------
    TvmScriptExport
    """
    if tmem_base not in ("shared", "const"):
        raise ValueError("tmem_base must be 'shared' or 'const'")
    decls = {d.name: d for d in prog.buffers}
    names = _Names()
    bufnames = {b: names.claim(b) for b in tp.buffers}
    func = names.claim(tp.name)
    warp_id = names.fresh("warp_id")
    tmem_addr = names.fresh("tmem_addr")
    globals_ = tp.by_scope("global")
    handles = {b.name: names.fresh(f"{bufnames[b.name]}_ptr") for b in globals_}
    rec_of = {id(op): rec for op, rec in zip(tp.copy_ops, records or ())}
    bind = {axis: names.fresh(axis) for axis in _guard_axes(tp)}
    if tp.cluster > 1 and CTA_RANK not in bind:
        bind[CTA_RANK] = names.fresh(CTA_RANK)
    rank = bind.get(CTA_RANK, CTA_RANK)
    auto = _auto_counts(kernel)
    stmt_at = {s.span: s for s in prog.stmts if isinstance(s, ast.CopyStmt)}

    out: list[str] = [
        f"# TVM TIRx equivalent of the %%tilecopy cell `{tp.name}`, exported by tilemagic.",
        "# Parse: tvm.script.from_source(text); lower: tvm.tirx.transform.LowerTIRx()(tvm.IRModule({\"main\": f}))",
        '# under tvm.target.Target({"kind": "cuda", "arch": "sm_100a"}).  As a Python file it needs:',
        "#   import tvm",
        "#   from tvm.script import tirx as T",
        "#   from tvm.script.tirx import tile as Tx",
        "#   from tvm.tirx.layout import Axis",
    ]
    if tp.tmem_cols and tmem_base == "const":
        out.append("# TMEM addresses are column constants (TMEMPool convention: the allocation starts at address 0).")
    for old, new in sorted(names.renamed.items()):
        out.append(f"# renamed: {old} -> {new} (would shadow a TVMScript name)")
    params = ", ".join(f"{handles[b.name]}: T.handle" for b in globals_)
    out += ["@T.prim_func", f"def {func}({params}):"]
    body: list[str] = []
    op_lines: dict[int, int] = {}
    for b in globals_:
        body.append(f'{bufnames[b.name]} = T.match_buffer({handles[b.name]}, {_shape_text(b.shape)}, "{b.dtype}")')
    body.append("T.device_entry()")
    if tp.tmem_cols and "warpid" in bind:
        warp_id = bind["warpid"]
    body += _thread_ids(tp.threads, warp_id if tp.tmem_cols else None, {**bind, "_cluster": str(tp.cluster)})
    for b in tp.by_scope("shared"):
        decl = decls.get(b.name)
        lay = "" if decl is None or decl.layout is None else f", layout={_layout_of(b)}"
        body.append(f'{bufnames[b.name]} = T.alloc_shared({_shape_text(b.shape)}, "{b.dtype}"{lay})'
                    + (f"  # mbarrier, count {b.mbar_count}" if b.is_mbarrier else ""))
    if tp.mbarriers:
        who = "the cluster" if tp.cluster > 1 else "the CTA"
        body.append(f"# mbarriers: thread 0 initialises them, fences the inits, {who} synchronises")
        body.append(f"if {_axis_text('tx', tp.threads, bind)} == 0:")
        body += [f"    T.ptx.mbarrier.init.shared.b64({_bar_ref(m, bufnames)}, T.uint32({m.mbar_count}))"
                 for m in tp.mbarriers]
        body += ["T.ptx.fence.mbarrier_init.release.cluster()",
                 "T.cuda.cluster_sync()" if tp.cluster > 1 else "T.cuda.cta_sync()"]
    fence = ["T.ptx.tcgen05.fence__before_thread_sync()", "T.cuda.cta_sync()",
             "T.ptx.tcgen05.fence__after_thread_sync()"]
    if tp.tmem_cols:
        body += [
            f"# TMEM: warp 0 allocates {tp.tmem_cols} columns and publishes the address in shared memory",
            f'{tmem_addr} = T.alloc_shared([1], "uint32")',
            f"if {warp_id} == 0:",
            (f"    T.ptx.tcgen05.alloc.cta_group__1.sync.aligned.shared__cta.b32(T.address_of({tmem_addr}), "
             f"T.uint32({tp.tmem_cols}))"),
            "    T.ptx.tcgen05.relinquish_alloc_permit.cta_group__1.sync.aligned()",
        ] + fence
        for b in tp.by_scope("tmem"):
            if tmem_base == "const":
                addr = str(b.tmem_col)
            else:
                addr = f"{tmem_addr}[0]" + (f" + {b.tmem_col}" if b.tmem_col else "")
            note = f"  # at {b.alias_of} + {b.tmem_col}" if b.alias_of else ""
            body.append(f'{bufnames[b.name]} = T.decl_buffer({_shape_text(b.shape)}, "{b.dtype}", scope="tmem", '
                        f"allocated_addr={addr}, layout={_tmem_layout_text(decls.get(b.name), b)}){note}")
    for b in tp.by_scope("local"):
        decl = decls.get(b.name)
        # TVM's tcgen05_atom_layout takes 16- and 32-bit dtypes only: an 8-bit fragment (tilemagic packs four
        # per 32-bit register, as the .32x32b path does) is written as its explicit S[...] layout instead
        if decl is not None and isinstance(decl.layout, ast.FragLayout) and b.elem_bytes >= 2:
            body.append(f'{bufnames[b.name]} = T.alloc_tcgen05_ldst_frag("{decl.layout.shape}", '
                        f'({b.shape[0]}, {b.shape[1]}), "{b.dtype}")')
        else:
            body.append(f'{bufnames[b.name]} = T.alloc_local({_shape_text(b.shape)}, "{b.dtype}", '
                        f"layout={_layout_of(b)})")
    for item in tp.items:
        guard = getattr(item, "guard", None)
        pad = "    " if guard is not None else ""
        if isinstance(item, CopyItem):
            op = item.op
            body.append(_op_comment(op, rec_of.get(id(op))))
            extra = ""
            if force and op.span.line in force:
                extra = f', dispatch="{force[op.span.line]}"'
            elif op.dispatch:
                tvm_name = TVM_VARIANT_NAMES.get(op.dispatch, op.dispatch)
                extra = f', dispatch="{tvm_name}"'
                if tvm_name != op.dispatch:
                    body.append(f"# dispatch={op.dispatch}: TVM 0.27 implements {op.dispatch} "
                                f"as its {tvm_name} variant")
            extra += "".join(f", {_option_text(k, v, bufnames, rank)}" for k, v, _ in op.options if k != "dispatch")
            if not extra.startswith(", dispatch=") and _mbar_without_dispatch(op):
                rec = rec_of.get(id(op))
                tma = rec.chosen if rec is not None and rec.chosen in TMA_VARIANTS else "tma_auto"
                body.append(f"# known TVM 0.27 bug: without dispatch=, TVM lowers this copy with ldgsts, which ignores "
                            f'mbar=; dispatch="{tma}" gives the TMA')
            if guard is not None:
                body.append(f"if {_guard_text(guard, tp.threads, bind)}:")
            stmt = stmt_at.get(op.span)
            if item.ranked and stmt is not None:  # the regions as written, in cta_rank
                dst = _ranked_region_text(stmt.dst, op.dst.buf, bufnames, rank)
                src = _ranked_region_text(stmt.src, op.src.buf, bufnames, rank)
            else:
                dst, src = _region_text(op.dst, bufnames), _region_text(op.src, bufnames)
            body.append(f"{pad}{_SCOPE_NS[op.exec_scope]}.{op.op}({dst}, {src}{extra})")
            op_lines[len(out) + len(body)] = op.span.line
        elif isinstance(item, (ArriveItem, MbarWaitItem, GroupItem, FenceItem)) or (
                isinstance(item, WaitItem) and guard is not None):
            if guard is not None:
                body.append(f"if {_guard_text(guard, tp.threads, bind)}:")
            lines = ([f"T.ptx.tcgen05.wait__{item.kind}.sync.aligned()"] if isinstance(item, WaitItem)
                     else _sync_lines(item, bufnames, auto, unresolved_auto, rank))
            body += [pad + ln for ln in lines]
        elif isinstance(item, (TcgenCommitItem, TcgenFenceItem)):
            if guard is not None:
                body.append(f"if {_guard_text(guard, tp.threads, bind)}:")
            node = (ir.TcgenFence(item.kind) if isinstance(item, TcgenFenceItem)
                    else ir.TcgenCommit(item.bar, item.cta_group, item.cta_mask))
            body += [pad + ln for ln in tcgen05_sync_lines(node, bufnames)]
        elif isinstance(item, WaitItem):
            body.append(f"T.ptx.tcgen05.wait__{item.kind}.sync.aligned()")
        elif isinstance(item, SyncItem):
            body += fence if tp.tmem_cols else ["T.cuda.cta_sync()"]
        elif isinstance(item, ClusterSyncItem):
            sync = ["T.cuda.cluster_sync()"]
            body += [fence[0], *sync, fence[2]] if tp.tmem_cols else sync
        else:
            body.append(f"# L{item.span.line}: {item.text}  (compared by tilemagic after the launch)")
    if tp.tmem_cols:
        body += [f"# TMEM: free the {tp.tmem_cols} columns (the allocating warp)"] + fence + [
            f"if {warp_id} == 0:",
            f"    T.ptx.tcgen05.dealloc.cta_group__1.sync.aligned.b32({tmem_addr}[0], T.uint32({tp.tmem_cols}))",
        ]
    out += ["    " + line for line in body]
    return TvmScriptExport("\n".join(out) + "\n", func, dict(bufnames), tmem_base, op_lines)


def tvmscript_from_source(source: str, name: str | None = None, *, tmem_base: str = "shared") -> TvmScriptExport:
    """Parse and check a description, then export it (no dispatch, no lowering).

    This works for programs tilemagic declines to lower as well, so a user can take a
    description TVM accepts and tilemagic does not (or the reverse) straight to TVM.  A program with an
    ``arrive ... expect_tx=auto`` is lowered (for ``sm_100a``) to learn the byte count; when that lowering fails,
    the arrive cannot be written and :class:`ExportError` says so.

    Raises
    ------
    TileMagicError
        A syntax or type error of the description (located); :class:`ExportError` as
        :func:`export_tvmscript`.
    """
    from ..lang import parse
    from ..lower.dispatch import TargetSpec
    from ..lower.program import check, lower

    prog = parse(source)
    tp = check(prog, name)
    kernel = None
    if any(isinstance(item, ArriveItem) and item.auto for item in tp.items):
        try:
            kernel = lower(tp, TargetSpec("cuda", "sm_100a"))[0]
        except TileMagicError:  # the export's own error names the arrive
            kernel = None
    return export_tvmscript(prog, tp, tmem_base=tmem_base, kernel=kernel)
