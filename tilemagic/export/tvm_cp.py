"""``--compare tvm`` for ``tcgen05.cp``: tilemagic's ``smem->tmem`` plan beside TVM's planner on the same op.

For a shared -> TMEM ``copy_async`` the comparison asks TVM's own planner (``_build_plan`` of
``tvm.backend.cuda.tile_primitive.copy_async.tcgen05_cp``, ``apache-tvm 0.27.0.post1``) for the op rebuilt from
tilemagic's buffers — the shared layout as the same ``S[...]`` or ``ComposeLayout(per_element, swizzle_len,
atom_len, S[...])``, the TMEM layout as the same ``S[...] + R[...]`` — with the
same ``shape=`` / ``multicast=`` config, and compares the facts of the two plans: the shape and multicast, the
number of instructions, the LBO and SBO of the descriptor template (bytes) and its swizzle mode (0..3).

No planner difference between the two is known: where TVM's test stages shared memory with generic stores and no
``fence.proxy.async`` (PTX ISA 9.0 §9.7.16.6), that is a synchronisation matter of the program, not of the plan.

``apache-tvm`` is imported only inside :func:`tvm_cp_plan`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..arch import smem_desc
from ..arch import tcgen05 as tc
from ..ir import nodes as ir
from ..lower.ops import CopyOp
from ..layout import TileLayout, row_major
from ..layout.swizzle import ComposeLayout

__all__ = ["CpFacts", "CpPlanComparison", "compare_cp_plan", "is_cp_candidate", "ours_cp_facts", "tvm_cp_plan"]

#: the descriptor layout type of each swizzle mode and back (PTX ISA 9.0 §9.7.16.4.1)
_MODE_OF_LAYOUT = {smem_desc.LAYOUT_TYPES[n]: m for m, n in enumerate(("none", "32B", "64B", "128B"))}


@dataclass(frozen=True)
class CpFacts:
    """One side's plan of a ``tcgen05.cp`` op: the :data:`~tilemagic.arch.tcgen05.CP_SHAPES` key, instruction
    count, LBO and SBO in bytes, swizzle mode 0..3."""

    key: str
    instructions: int
    lbo: int
    sbo: int
    swizzle: int

    def lines(self) -> list[str]:
        c = tc.CP_SHAPES[self.key]
        return [f"shape {c.shape}", f"multicast {c.multicast or 'none'}", f"instructions {self.instructions}",
                f"LBO {self.lbo} B", f"SBO {self.sbo} B", f"swizzle {self.swizzle}"]


@dataclass(frozen=True)
class CpPlanComparison:
    """tilemagic's and TVM's plans of one op; ``ours``/``tvm`` None where that side declined (``*_error``)."""

    ours: CpFacts | None
    tvm: CpFacts | None
    ours_error: str | None = None
    tvm_error: str | None = None

    @property
    def agrees(self) -> bool:
        """The same facts, or both decline."""
        return self.ours == self.tvm

    def text(self) -> list[str]:
        out = [f"tcgen05.cp plan (smem->tmem): {'agrees' if self.agrees else 'differs'}"]
        if self.ours is not None and self.tvm is not None:
            for a, b in zip(self.ours.lines(), self.tvm.lines()):
                out.append(f"  = {a}" if a == b else f"  ≠ tilemagic: {a}    TVM: {b}")
        for who, facts, err in (("tilemagic", self.ours, self.ours_error), ("TVM", self.tvm, self.tvm_error)):
            if facts is None and err:
                out.append(f"  {who} declines: {err.strip().splitlines()[0]}")
            elif facts is not None and (self.ours is None or self.tvm is None):
                out.append(f"  {who}: " + ", ".join(facts.lines()))
        return out


def is_cp_candidate(op: CopyOp) -> bool:
    """A shared -> TMEM ``copy_async`` (what ``smem->tmem`` plans)."""
    return op.op == "copy_async" and op.src.buf.scope == "shared" and op.dst.buf.scope == "tmem"


def ours_cp_facts(cps: list[ir.TcgenCp]) -> CpFacts:
    """The facts of the TcgenCp statements one op lowered to."""
    c0 = cps[0]
    return CpFacts(c0.key, len(cps), c0.lbo, c0.sbo, _MODE_OF_LAYOUT[c0.layout])


def tvm_cp_plan(op: CopyOp) -> CpFacts | str:
    """TVM's ``_build_plan`` of ``op``, or why TVM declines it (its ``ValueError``'s text).

    Raises
    ------
    ImportError
        apache-tvm is not installed.
    """
    import tvm
    from tvm.backend.cuda.tile_primitive.copy_async import tcgen05_cp as tvm_cp
    from tvm.ir import Range
    from tvm.tirx import layout as L
    from tvm.tirx.layout import Axis
    from tvm.tirx.operator.tile_primitive.ops import CopyAsync
    from tvm.tirx.stmt import BufferRegion

    def stride(it):
        return it.stride if it.axis == "m" else it.stride @ getattr(Axis, it.axis)

    def spec(kind, iters):
        return kind[tuple(it.extent for it in iters):tuple(stride(it) for it in iters)]

    def tile(lay):
        if isinstance(lay, ComposeLayout):
            return L.ComposeLayout(lay.per_element, lay.swizzle_len, lay.atom_len, tile(lay.tile))
        if not isinstance(lay, TileLayout):
            raise ValueError(f"layout {lay} has no TVM counterpart in this comparison")
        expr = spec(L.S, lay.shard)
        if lay.replica:
            expr = expr + spec(L.R, lay.replica)
        for axis, v in lay.offset:
            expr = expr + (v if axis == "m" else v @ getattr(Axis, axis))
        return L.TileLayout(expr)

    def buf(b: ir.Buffer):
        lay = tile(b.layout if b.layout is not None else row_major(b.shape))
        scope = "tmem" if b.scope == "tmem" else "shared.dyn"
        return tvm.tirx.decl_buffer(tuple(b.shape), b.dtype, b.name, scope=scope, layout=lay)

    def reg(r):
        return BufferRegion(buf(r.buf), [Range.from_min_extent(a, e) for a, e in zip(r.begins, r.extents)])

    try:
        config = {k: v for k, v, _ in op.options if k in ("shape", "multicast", "cta_group", "decompress")}
        if config.get("decompress"):
            return "tcgen05.cp planner does not support decompress"
        plan = tvm_cp._build_plan(CopyAsync(reg(op.dst), reg(op.src), config=config))
    except Exception as e:  # noqa: BLE001 - TVM raises bare ValueErrors (and its own errors): the text is the answer
        return str(e).strip() or type(e).__name__
    key = plan["shape"] + (f".{plan['multicast']}" if plan["multicast"] else "")
    count = 1
    for n, _, _ in plan["middle_iters"]:
        count *= int(n)
    return CpFacts(key, count, int(plan["LDO_field"]) * 16, int(plan["SDO_field"]) * 16, int(plan["swizzle_mode"]))


def compare_cp_plan(op: CopyOp, cps: list[ir.TcgenCp], ours_error: str | None) -> CpPlanComparison:
    """Compare tilemagic's lowering of a shared -> TMEM op (``cps``, or ``ours_error``) with TVM's planner."""
    ours = ours_cp_facts(cps) if cps else None
    theirs = tvm_cp_plan(op)
    tvm_facts, tvm_error = (theirs, None) if isinstance(theirs, CpFacts) else (None, theirs)
    return CpPlanComparison(ours, tvm_facts, None if ours else ours_error, tvm_error)
