"""``--compare tvm`` for TMA copies: tilemagic's tensor-map plan beside TVM's planner on the same op.

For a global <-> shared ``copy_async`` the comparison asks TVM's own planner (``_build_auto_plan`` /
``_build_explicit_plan`` of ``tvm.backend.cuda.tile_primitive.copy_async.tma``, ``apache-tvm 0.27.0.post1``) for
the op rebuilt from tilemagic's buffers — global layouts row-major, shared layouts as the same ``S[...]`` or
``ComposeLayout(per_element, swizzle_len, atom_len, S[...])`` — and compares the descriptors fact by fact:
rank, descriptor element type, ``globalDim``, ``globalStrides``, box, first-issue coordinates, swizzle mode and
the number of instructions.

Where tilemagic differs on purpose the comparison says so: TVM 0.27 takes a shared swizzle's mode from
``swizzle_len`` alone and plans e.g. ``swizzle(2, 3, 3)`` on float16 as SWIZZLE_128B, whose hardware permutation
is ``swizzle(3, 3, 3)``; tilemagic declines such a layout (``stage=shared-swizzle``).  TVM 0.27 emits a static
``cta_mask`` with one bit set as the unicast form into the *issuing* CTA (``_is_static_unicast_cta_mask``: the mask
is dropped); tilemagic emits ``.multicast::cluster`` with the mask, so the box lands in the CTA the bit names
(:data:`MULTICAST_BUG`).  A multicast mask and a reduction are facts of both sides' plans (``multicast``,
``reduce``).

``apache-tvm`` is imported only inside :func:`tvm_tma_plan`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..ir import nodes as ir
from ..layout.swizzle import ComposeLayout
from ..layout.tile import TileLayout
from ..lower.ops import CopyOp

__all__ = ["MULTICAST_BUG", "SWIZZLE_BUG", "TMA_VARIANTS", "TmaFacts", "TmaPlanComparison", "compare_tma_plan",
           "is_tma_candidate", "ours_tma_facts", "tvm_tma_plan"]

#: TVM's descriptor dtype names -> ``CUtensorMapDataType`` members (TVM ``_dtype_contract``)
_TVM_DTYPE = {"int8": "UINT8", "uint8": "UINT8", "float8_e4m3fn": "UINT8", "float8_e5m2": "UINT8",
              "uint16": "UINT16", "float16": "FLOAT16", "bfloat16": "BFLOAT16", "float32": "FLOAT32",
              "int32": "INT32", "uint32": "UINT32", "uint64": "UINT64", "int64": "INT64", "float64": "FLOAT64"}

#: the variants whose plans this module compares (TVM's names, tilemagic's too)
TMA_VARIANTS = ("tma_auto", "tma_explicit")

SWIZZLE_BUG = ("differs on purpose: TVM 0.27 takes the TMA swizzle mode from swizzle_len alone and plans a "
               "shared layout whose XOR is not the hardware's permutation for the dtype; tilemagic declines it")
ALIGN_BUG = ("differs on purpose: TVM 0.27 plans TMA boxes at shared addresses aligned only to the swizzle atom "
             "(16 B unswizzled); the hardware needs 128 B (the H200 faults with a misaligned address), so "
             "tilemagic declines the plan")
MULTICAST_BUG = ("known TVM 0.27 bug: a static cta_mask with one bit set is emitted as the unicast form into the "
                 "issuing CTA (the mask dropped, the box lands in the wrong CTA when the bit names another); "
                 "tilemagic emits .multicast::cluster with the mask")
#: the documented TVM 0.27 differences a comparison may name
KNOWN_TVM_BUGS = (SWIZZLE_BUG, ALIGN_BUG, MULTICAST_BUG)


@dataclass(frozen=True)
class TmaFacts:
    """One side's plan of a TMA op (CUDA order)."""

    dtype: str
    dims: tuple[int, ...]
    strides: tuple[int, ...]
    box: tuple[int, ...]
    coords: tuple[int, ...]
    swizzle: int
    issues: int
    #: the ``ctaMask`` operand the copy is emitted with (``.multicast::cluster``); None: the unicast form
    multicast: int | None = None
    #: ``cp.reduce.async.bulk.tensor``'s operation; None: a plain copy
    reduce: str | None = None

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def extras(self) -> bool:
        return self.multicast is not None or self.reduce is not None

    def lines(self, full: bool = False) -> list[str]:
        """The facts, one line each; the multicast and reduce lines only when set or ``full`` (so a plain copy's
        lines stay as they were)."""
        out = [f"rank {self.rank}", f"dtype {self.dtype}", f"dims {list(self.dims)}", f"strides {list(self.strides)}",
               f"box {list(self.box)}", f"coords {list(self.coords)}", f"swizzle {self.swizzle}",
               f"instructions {self.issues}"]
        if full or self.extras:
            out += [f"multicast {'none' if self.multicast is None else f'cta_mask=0b{self.multicast:b}'}",
                    f"reduce {self.reduce or 'none'}"]
        return out


@dataclass(frozen=True)
class TmaPlanComparison:
    """tilemagic's and TVM's plans of one op; ``ours``/``tvm`` None where that side declined (``*_error``)."""

    variant: str
    ours: TmaFacts | None
    tvm: TmaFacts | None
    ours_error: str | None = None
    tvm_error: str | None = None
    note: str | None = None

    @property
    def agrees(self) -> bool:
        """Same facts, or both decline, or a documented difference (:data:`KNOWN_TVM_BUGS`)."""
        if self.ours is not None and self.tvm is not None:
            if self.note == MULTICAST_BUG:
                return replace(self.ours, multicast=None) == self.tvm
            return self.ours == self.tvm
        return (self.ours is None and self.tvm is None) or self.note in KNOWN_TVM_BUGS

    def text(self) -> list[str]:
        """``= fact`` / ``≠ tilemagic: a  TVM: b`` lines, the errors, the note."""
        out = [f"TMA plan ({self.variant}): {'agrees' if self.agrees else 'differs'}"]
        if self.ours is not None and self.tvm is not None:
            full = self.ours.extras or self.tvm.extras
            for a, b in zip(self.ours.lines(full), self.tvm.lines(full)):
                out.append(f"  = {a}" if a == b else f"  ≠ tilemagic: {a}    TVM: {b}")
        for who, facts, err in (("tilemagic", self.ours, self.ours_error), ("TVM", self.tvm, self.tvm_error)):
            if facts is None and err:
                out.append(f"  {who} declines: {_reason(err)}")
            elif facts is not None and (self.ours is None or self.tvm is None):
                out.append(f"  {who}: " + ", ".join(facts.lines()))
        if self.note:
            out.append(f"  note: {self.note}")
        return out


def _reason(err: str) -> str:
    """The one line of a decline that names the planner stage (a why-table's row), else its first line."""
    lines = err.strip().splitlines() or [""]
    line = next((ln for ln in lines if "stage=" in ln), lines[0])
    return line.split("emitter declined: ", 1)[-1].strip()


def is_tma_candidate(op: CopyOp) -> bool:
    """A ``copy_async`` between global and shared memory (what the TMA variants plan)."""
    scopes = {op.src.buf.scope, op.dst.buf.scope}
    return op.op == "copy_async" and scopes == {"global", "shared"}


def ours_tma_facts(copies: list[ir.TmaCopy]) -> TmaFacts:
    """The facts of the TmaCopy statements one op lowered to."""
    m, c0 = copies[0].tmap, copies[0]
    return TmaFacts(m.dtype, tuple(m.dims), tuple(m.strides), tuple(m.box),
                    tuple(int(getattr(c, "value", -1)) for c in c0.coords), m.swizzle, len(copies), c0.cta_mask,
                    c0.reduce)


def _tvm_layout(tvm_layout, lay):
    if isinstance(lay, ComposeLayout):
        return tvm_layout.ComposeLayout(lay.per_element, lay.swizzle_len, lay.atom_len, _tvm_layout(tvm_layout,
                                                                                                     lay.tile))
    assert isinstance(lay, TileLayout)
    if lay.offset or lay.replica or any(it.axis != "m" for it in lay.shard):
        raise ValueError(f"layout {lay} has no TVM counterpart in this comparison")
    return tvm_layout.TileLayout(tvm_layout.S[tuple(lay.extents):tuple(it.stride for it in lay.shard)])


def tvm_tma_plan(op: CopyOp, variant: str, arch: str) -> TmaFacts | str:
    """TVM's plan of ``op`` under ``variant`` (``tma_auto`` / ``tma_explicit``), or why TVM declines it.

    Raises
    ------
    ImportError
        apache-tvm is not installed.
    """
    import tvm
    from tvm.backend.cuda.op import _is_static_unicast_cta_mask
    from tvm.backend.cuda.tile_primitive.copy_async import tma as tvm_tma
    from tvm.ir import Range
    from tvm.tirx import Var
    from tvm.tirx import layout as tvm_layout
    from tvm.tirx.exec_scope import ExecScope
    from tvm.tirx.operator.tile_primitive.ops import CopyAsync
    from tvm.tirx.stmt import BufferRegion
    from tvm.tirx.tile_primitive import DispatchContext

    def buf(b: ir.Buffer):
        scope = "global" if b.scope == "global" else "shared.dyn"
        return tvm.tirx.decl_buffer(tuple(b.shape), b.dtype, b.name, scope=scope,
                                    layout=_tvm_layout(tvm_layout, b.layout))

    def reg(r):
        return BufferRegion(buf(r.buf), [Range.from_min_extent(a, e) for a, e in zip(r.begins, r.extents)])

    try:
        config: dict[str, object] = {}
        for k, v, _ in op.options:
            if k == "dispatch":  # the variant choice, not a config key (TVM's copy_async takes it apart)
                continue
            config[k] = Var(v.name, "handle") if isinstance(v, ir.Buffer) else v
        call = CopyAsync(reg(op.dst), reg(op.src), config=config)
        sctx = DispatchContext(tvm.target.Target({"kind": "cuda", "arch": arch}), ExecScope("thread"), {}, {})
        if variant == "tma_auto":
            plan = tvm_tma._build_auto_plan(call, sctx)
        else:
            plan, _ = tvm_tma._build_explicit_plan(call, sctx)
    except Exception as e:  # noqa: BLE001 - TVM's fail() raises its own error types; the text is the answer
        return str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
    spec = plan.spec
    mask = getattr(spec, "cta_mask", 0)
    # TVM's _emit_plan: the multicast form only for a mask that is not a static 0 or one bit (its unicast bug)
    multicast = None if spec.direction != "g2s" or _is_static_unicast_cta_mask(mask) else int(mask)
    red = getattr(spec, "use_tma_reduce", None)
    return TmaFacts(_TVM_DTYPE.get(str(spec.descriptor_dtype), str(spec.descriptor_dtype)),
                    tuple(int(d) for d in spec.global_dims), tuple(int(s) for s in spec.global_strides),
                    tuple(int(b) for b in spec.box_dims), tuple(int(c) for c in spec.coordinates), int(spec.swizzle),
                    int(plan.issue_extent()), multicast, None if red is None else str(red))


def compare_tma_plan(op: CopyOp, chosen: str | None, copies: list[ir.TmaCopy], ours_error: str | None,
                     arch: str) -> TmaPlanComparison:
    """Compare tilemagic's lowering of a TMA op (``copies``, or ``ours_error``) with TVM's planner.

    The variant TVM is asked for is tilemagic's (chosen or forced), else ``tma_auto``.
    """
    variant = chosen if chosen in TMA_VARIANTS else (
        op.dispatch if op.dispatch in TMA_VARIANTS else "tma_auto")
    ours = ours_tma_facts(copies) if copies else None
    theirs = tvm_tma_plan(op, variant, arch)
    tvm_facts, tvm_error = (theirs, None) if isinstance(theirs, TmaFacts) else (None, theirs)
    note = None
    if (ours is not None and tvm_facts is not None and ours.multicast is not None and tvm_facts.multicast is None
            and ours.multicast & (ours.multicast - 1) == 0 and replace(ours, multicast=None) == tvm_facts):
        note = MULTICAST_BUG
    elif ours is None and tvm_facts is not None and ours_error and "stage=shared-swizzle" in ours_error:
        note = SWIZZLE_BUG
    elif ours is None and tvm_facts is not None and ours_error and "B aligned (misaligned address on sm_90a)" \
            in ours_error:
        note = ALIGN_BUG
    return TmaPlanComparison(variant, ours, tvm_facts, None if ours else ours_error, tvm_error, note)
