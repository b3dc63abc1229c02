"""copy_async dispatch: ``tma_auto`` and ``tma_explicit`` (``cp.async.bulk.tensor``, tile mode).

Variants ``tma_auto`` and ``tma_explicit`` of ``copy_async``, as TVM TIRx registers and plans them
(``apache-tvm 0.27.0.post1``, ``backend/cuda/tile_primitive/copy_async/tma.py``): priority 10 each, predicates
``validate_tma_copy_op`` (global -> shared or shared -> global) and ``single_thread`` (the op runs on one thread:
``thread.copy_async``, elected by the caller's guard such as ``if tx == 0:``), plus ``tma_target`` (the target
has TMA: sm_90 or newer; TVM checks it among the descriptor rules).  One elected thread issues
``cp.async.bulk.tensor.<r>d`` with a host-encoded ``CUtensorMap`` (PTX ISA 9.0 §9.7.9.25.5.2):

* **G2S** (global -> shared) needs ``mbar=BAR``: the box's bytes complete-tx on that mbarrier;
* **S2G** (shared -> global) forbids ``mbar=`` and completes through bulk async-groups
  (``bulk_commit_group`` / ``bulk_wait_group``, §9.7.9.25.6).

The options are checked as TVM's ``_runtime_config`` for the keys of this language: ``mbar`` (required for G2S,
forbidden for S2G), ``oob`` (``zero``/``nan``; ``tma_auto`` accepts only the default; never on S2G),
``cache_hint`` (``evict_normal``, ``evict_first``, ``evict_last``: ``.L2::cache_hint`` with TVM's policy words),
``cta_mask`` (G2S multicast, ``.multicast::cluster``: TVM's 16-bit range and S2G-requires-0, plus tilemagic's
cluster rules against :attr:`~tilemagic.lower.dispatch.DispatchContext.cluster`; a one-bit mask stays a multicast,
unlike TVM 0.27) and ``use_tma_reduce`` (S2G only, ``cp.reduce.async.bulk.tensor``; the operation must be defined
on the tensor's type, PTX ISA 9.0 §9.7.9.25.5.3, and the descriptor unit is never promoted).

A global region may reach past its tensor's edge (PTX ISA 9.0 §5.5.3.3: G2S out-of-bound elements are filled, S2G
ones dropped): both plans keep the tensor's own ``globalDim`` and let the box and coordinates reach past it, and
each edge plan is checked element by element against the region's elements inside the tensor
(:func:`_edge_refusal`, ``stage=edge``).

**tma_explicit** (TVM ``_build_explicit_plan``): one map straight from the global buffer — ``globalDim`` the
reversed shape, ``globalStrides`` its reversed byte strides, box the reversed region extents, coordinates the
reversed region starts — and exactly one instruction; the shared region must be box-linear (its slice
canonicalises to one dense run) at a pointer aligned to the swizzle atom.

**tma_auto** (TVM ``_build_auto_plan``): the shared region must be one dense block, possibly with permuted
dimensions (``stage=shared-chain``); the global region is split into descriptor dimensions along the shared
iterators (``stage=coordinate`` / ``global-shape`` when a start or an extent does not divide); then, for
``p = 1, 2, ...``, the ``p`` smallest-stride shared iterators form the box and the others become issue axes (an
unrolled mixed-radix loop of issues); each candidate is canonicalised (unit dimensions dropped, fully boxed
dimensions merged into the next one), validated, and repaired by promoting the descriptor unit (1 -> 2 -> 4 -> 8
bytes) when only repairable rules fail.  The largest legal box wins.  Every failure reads
``tma_auto stage=<stage>: ...; use dispatch="tma_explicit" ...``.

Both take the swizzle from the shared layout (``swizzle(per_element, swizzle_len, atom_len)``: mode
``swizzle_len``) and — unlike TVM 0.27, which looks only at ``swizzle_len`` — require it to be the hardware
permutation for the element size (:func:`tilemagic.arch.tma.swizzle_params`): ``swizzle(2, 3, 3)`` on float16 is
declined, naming ``swizzle(3, 3, 3)``.  Descriptors are shared across the kernel: one
:class:`~tilemagic.ir.nodes.TensorMap` per distinct :meth:`~tilemagic.ir.nodes.TensorMap.key` (coordinates are not
part of it, so copies of different tiles of one tensor use one map).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import NoReturn

import numpy as np

from ...arch import tma as hw
from ...ir import nodes as ir
from ...layout.swizzle import ComposeLayout
from ...layout.tile import Iter, TileLayout
from ...arch.cluster import CTA_MASK_BITS
from ..common import past_edge, sm_number
from ..dispatch import DispatchContext, EmitSummary, Emitted, Verdict, fail, predicate, register_dispatch
from ..ops import CopyOp, RegionRef

#: the ``copy_async`` options the TMA variants understand (a subset of TVM's ``_COMMON_CONFIG``)
_CONFIG_KEYS = frozenset({"mbar", "oob", "cache_hint", "cta_mask", "use_tma_reduce"})
#: TVM 0.27's range of a static ``cta_mask`` (a 16-bit ``ctaMask`` operand, PTX ISA 9.0 §9.7.9.25.5.2)
_CTA_MASK_MAX = (1 << CTA_MASK_BITS) - 1


# ----------------------------------------------------------------------------- the plan
@dataclass(frozen=True)
class IssueCoord:
    """One mixed-radix contribution of an issue axis: ``coords[dim] += (digit // divisor) % modulus``."""

    dim: int
    divisor: int
    modulus: int


@dataclass(frozen=True)
class IssueAxis:
    """A shared iterator outside the box, lowered as an (unrolled) loop of issues (TVM ``AutoIssueAxis``):
    each step advances the shared pointer by ``smem_stride`` elements and the coordinates by ``coords``."""

    extent: int
    smem_stride: int
    coords: tuple[IssueCoord, ...]


@dataclass(frozen=True)
class TmaPlan:
    """A tile-mode tensor map and its issues, CUDA order (dimension 0 innermost).

    Attributes
    ----------
    dtype, elem_bytes : str, int
        Descriptor data type (``CUtensorMapDataType`` member) and its element bytes (wider than the buffer's
        after a unit promotion).
    dims, box, coords : tuple of int
        ``globalDim``, ``boxDim`` and the first issue's coordinates, in descriptor elements.
    full_strides : tuple of int
        Byte stride of every dimension (``full_strides[0]`` is the element size; ``globalStrides`` is the rest).
    issue_axes : tuple of IssueAxis
    smem_offset : int
        Shared element offset (in the shared buffer's elements) of the first issue's box.
    swizzle, oob_fill, l2_promotion : int
        Enum values.
    """

    dtype: str
    elem_bytes: int
    dims: tuple[int, ...]
    full_strides: tuple[int, ...]
    box: tuple[int, ...]
    coords: tuple[int, ...]
    issue_axes: tuple[IssueAxis, ...]
    smem_offset: int
    swizzle: int
    oob_fill: int = 0
    l2_promotion: int = hw.DEFAULT_L2_PROMOTION
    #: ``use_tma_reduce``'s operation: a reduction never promotes the descriptor unit (TVM 0.27's rule)
    reduce: str | None = None

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def strides(self) -> tuple[int, ...]:
        return self.full_strides[1:]

    @property
    def issues(self) -> int:
        return math.prod(a.extent for a in self.issue_axes)

    @property
    def box_bytes(self) -> int:
        return math.prod(self.box) * self.elem_bytes

    def findings(self, sm: int) -> list[hw.Finding]:
        """The descriptor rules this plan breaks (:func:`tilemagic.arch.tma.validate`)."""
        return hw.validate(dtype=self.dtype, elem_bytes=self.elem_bytes, dims=self.dims, strides=self.strides,
                           box=self.box, elem_strides=(1,) * self.rank, swizzle=self.swizzle,
                           oob_fill=self.oob_fill, l2_promotion=self.l2_promotion, sm=sm)

    def issue_list(self) -> list[tuple[int, tuple[int, ...]]]:
        """``(shared element offset, coordinates)`` of every issue, in TVM's order (the last issue axis — the
        largest shared stride — fastest; TVM ``TMAPlan.offsets_and_coords``)."""
        axes = self.issue_axes
        divisors = [1] * len(axes)
        acc = 1
        for k in range(len(axes) - 1, -1, -1):
            divisors[k] = acc
            acc *= axes[k].extent
        out = []
        for flat in range(self.issues):
            off = self.smem_offset
            coords = list(self.coords)
            for ax, div in zip(axes, divisors):
                v = (flat // div) % ax.extent
                off += v * ax.smem_stride
                for c in ax.coords:
                    coords[c.dim] += (v // c.divisor) % c.modulus
            out.append((off, tuple(coords)))
        return out


# ----------------------------------------------------------------------------- failures
_AUTO_ADVICE = ('; use dispatch="tma_explicit" when the mapping or hardware legality is only known at runtime')


def _auto_fail(stage: str, detail: str) -> NoReturn:
    """Decline ``tma_auto`` at planner ``stage`` (TVM ``_auto_fail``: the advice to use ``tma_explicit``)."""
    fail(f"tma_auto stage={stage}: {detail}{_AUTO_ADVICE}")


def _explicit_fail(stage: str, detail: str) -> NoReturn:
    fail(f"tma_explicit stage={stage}: {detail}")


def _details(findings: list[hw.Finding]) -> str:
    return "; ".join(str(f) for f in findings)


# ----------------------------------------------------------------------------- predicates
def _direction(op: CopyOp) -> tuple[str, RegionRef, RegionRef] | None:
    """``(direction, shared side, global side)``, or None when the op is not global <-> shared."""
    s, d = op.src.buf.scope, op.dst.buf.scope
    if s == "global" and d == "shared":
        return "g2s", op.dst, op.src
    if s == "shared" and d == "global":
        return "s2g", op.src, op.dst
    return None


def validate_tma_copy_op(op: CopyOp, ctx: DispatchContext) -> Verdict:
    """Both buffers have layouts and the copy is global -> shared or shared -> global (TVM
    ``_validate_tma_copy_op``); an mbarrier object is never a TMA operand."""
    ok = (op.src.buf.layout is not None and op.dst.buf.layout is not None and _direction(op) is not None
          and not op.src.buf.is_mbarrier and not op.dst.buf.is_mbarrier)
    return ok, None if ok else "not a global<->shared TMA copy"


def single_thread(op: CopyOp, ctx: DispatchContext) -> Verdict:
    """The op runs on one thread (TVM ``single_thread``): ``thread.copy_async``, under the caller's election."""
    ok = ctx.scope_kind == "thread"
    return ok, None if ok else f"unsupported exec_scope {ctx.scope_kind}, expected single thread"


def tma_target(op: CopyOp, ctx: DispatchContext) -> Verdict:
    """The target has the Tensor Memory Accelerator (sm_90 or newer; PTX ISA 9.0 §9.7.9.25.5.2)."""
    sm = sm_number(ctx.target.arch)
    if sm >= hw.MIN_SM:
        return True, None
    return False, (f"cp.async.bulk.tensor needs sm_{hw.MIN_SM} or newer; the target is {ctx.target.arch} "
                   f"(use --arch sm_90a or newer)")


_PREDICATES = [predicate("validate_tma_copy_op", validate_tma_copy_op),
               predicate("single_thread", single_thread),
               predicate("tma_target", tma_target)]


# ----------------------------------------------------------------------------- options
@dataclass(frozen=True)
class _Config:
    mbar: ir.Buffer | None
    oob_fill: int
    cache_hint: str | None
    cta_mask: int | None = None
    reduce: str | None = None


def _mask_text(mask: int) -> str:
    return f"0b{mask:b}"


def _cta_mask(op: CopyOp, direction: str, cluster: int) -> int | None:
    """``cta_mask=``: TVM 0.27's rules (an integer in [0, 0xFFFF]; S2G requires 0), then tilemagic's: G2S
    multicast needs a cluster, a non-zero mask, and every set bit naming a CTA of the cluster (PTX ISA 9.0
    §9.7.9.25.5.2: bit i is cluster rank i).  A one-bit mask stays a multicast (TVM 0.27 emits the unicast form
    into the issuing CTA instead)."""
    mask = op.option("cta_mask")
    if mask is None:
        return None
    if isinstance(mask, bool) or not isinstance(mask, int):
        fail("cta_mask must be an integer or TIR expression")
    if not 0 <= mask <= _CTA_MASK_MAX:
        fail(f"cta_mask must fit uint16, got {mask}")
    if direction != "g2s":
        if mask != 0:
            fail("cta_mask is only valid for global-to-shared TMA")
        return None
    if cluster <= 1:
        fail(f"cta_mask={_mask_text(mask)} multicasts to the CTAs of a cluster, and the kernel has none "
             f"(write cluster=C on the kernel line)")
    if mask == 0:
        fail("cta_mask=0 names no CTA: the box would land nowhere (bit i is cluster rank i)")
    if mask >> cluster:
        rank = mask.bit_length() - 1
        fail(f"cta_mask {_mask_text(mask)} names rank {rank}, cluster has {cluster} CTAs")
    return mask


def _reduce(op: CopyOp, direction: str, g: RegionRef) -> str | None:
    """``use_tma_reduce=OP``: S2G only (TVM 0.27's rule), an operation of ``cp.reduce.async.bulk.tensor`` defined
    on the tensor's element type (PTX ISA 9.0 §9.7.9.25.5.3)."""
    red = op.option("use_tma_reduce")
    if red is None:
        return None
    if direction != "s2g":
        fail("use_tma_reduce is only valid for shared-to-global TMA")
    why = hw.reduce_refusal(str(red), g.buf.dtype)
    if why:
        from ...lang.ast import DTYPES  # (here: the launch worker imports this module, and never the parser)

        takes = hw.TMA_REDUCE_OPS.get(str(red), ())
        if takes and not set(takes) & set(DTYPES):  # inc, dec: uint32 only
            why += (f"; {red} needs {' or '.join(takes)}, which the language does not have yet (its dtypes: "
                    f"{', '.join(DTYPES)})")
        fail(why)
    return str(red)


def _runtime_config(op: CopyOp, direction: str, *, explicit: bool, cluster: int = 1) -> _Config:
    """The op's options, checked as TVM's ``_runtime_config`` (the keys tilemagic's language has)."""
    variant = "tma_explicit" if explicit else "tma_auto"
    keys = {k for k, _, _ in op.options} - {"dispatch"}  # (dispatch= picks the variant: not a config key)
    unknown = sorted(keys - _CONFIG_KEYS)
    if unknown:
        fail(f"dispatch={variant} does not support config key(s) {unknown}")
    oob = op.option("oob")
    if not explicit and oob is not None:
        fail('tma_auto does not support non-default oob; use dispatch="tma_explicit"')
    if direction != "g2s" and oob is not None:
        fail("TensorMap oob is only valid for explicit global-to-shared copies")
    if oob is not None and oob not in hw.OOB_FILL:
        fail(f"unsupported TensorMap oob={oob!r}; expected 'zero' or 'nan'")
    mbar = op.option("mbar")
    if direction == "g2s":
        if mbar is None:
            fail("global-to-shared TMA requires mbar")
        if not (isinstance(mbar, ir.Buffer) and mbar.is_mbarrier):
            fail(f"mbar={getattr(mbar, 'name', mbar)} is not an mbarrier")
    elif mbar is not None:
        fail("mbar is only valid for global-to-shared TMA")
    hint = op.option("cache_hint")
    if hint is not None and hint not in hw.CACHE_HINTS:
        fail(f"unsupported cache_hint {hint!r}; expected one of {', '.join(hw.CACHE_HINTS)}")
    g = op.src if direction == "g2s" else op.dst
    return _Config(mbar if isinstance(mbar, ir.Buffer) else None, hw.OOB_FILL.get(str(oob), 0) if oob else 0,
                   str(hint) if hint is not None else None, _cta_mask(op, direction, cluster),
                   _reduce(op, direction, g))


# ----------------------------------------------------------------------------- shared side
def _shared_tile(buf: ir.Buffer) -> TileLayout:
    """The shared buffer's tile layout with the swizzle stripped (TVM ``strip_swizzle_to_tile``)."""
    lay = buf.layout.tile if isinstance(buf.layout, ComposeLayout) else buf.layout
    assert isinstance(lay, TileLayout), "global and shared buffers carry a TileLayout or a swizzle over one"
    return lay


def swizzle_mode(buf: ir.Buffer) -> tuple[int, str | None]:
    """``(mode, refusal)``: the TMA swizzle mode of a shared buffer's layout (TVM
    ``get_swizzle_mode_from_layout``: ``swizzle_len``), and why the layout is not the hardware's permutation
    of that mode for the dtype (None when it is).  TVM 0.27 does not make the second check."""
    lay = buf.layout
    if not isinstance(lay, ComposeLayout) or lay.swizzle_len == 0:
        return 0, None
    mode = lay.swizzle_len
    if mode not in hw.SWIZZLE_MODES:
        return 0, (f"{buf.name}'s layout swizzle({lay.params_text()}) XORs {mode} bits; TMA swizzles 1, 2 or 3 "
                   f"(32B, 64B, 128B; PTX ISA 9.0 §5.5.7)")
    want = hw.swizzle_params(mode, buf.elem_bytes)
    have = (lay.per_element, lay.swizzle_len, lay.atom_len)
    if have != want:
        name = hw.SWIZZLE_MODES[mode].name
        right = ", ".join(map(str, want))
        return mode, (f"{buf.name}'s layout swizzle({lay.params_text()}) is not the hardware's {name} swizzle for "
                      f"{buf.dtype} ({buf.elem_bytes}-byte elements), which is swizzle({right}): TMA XORs bits "
                      f"[7, {7 + mode}) of the byte address into bits [4, {4 + mode}) (PTX ISA 9.0 §5.5.7), so "
                      f"the data would land in another order than the layout says (TVM 0.27 plans it as "
                      f"SWIZZLE_{name} anyway); write swizzle({right}"
                      f"{'' if lay.bare else ', ' + str(lay.tile)})")
    return mode, None


def _shared_slice(s: RegionRef) -> tuple[TileLayout, int] | None:
    """The shared region's layout without its offset (canonical) and the offset in elements."""
    sliced = _shared_tile(s.buf).slice(s.buf.shape, s.region)
    if sliced is None:
        return None
    return TileLayout(sliced.shard, sliced.replica, ()).canonicalize(), sliced.offset_of("m")


def _cumulative(extents) -> list[int]:
    out, acc = [], 1
    for e in extents:
        acc *= e
        out.append(acc)
    return out


def _refine(iters: tuple[Iter, ...], shape: tuple[int, ...]) -> list[Iter] | None:
    """Split ``iters`` (outermost first) at every boundary of the row-major ``shape`` too (TVM ``group_many``);
    None when a boundary does not divide an iterator."""
    bounds = _cumulative(shape)
    out: list[Iter] = []
    outer = 1
    for it in iters:
        inside = [b for b in bounds if outer < b < outer * it.extent]
        if any(b % outer for b in inside):
            return None
        prev = 1
        for c in sorted({b // outer for b in inside}) + [it.extent]:
            if c % prev or it.extent % c:
                return None
            out.append(Iter(c // prev, it.stride * (it.extent // c), it.axis))
            prev = c
        outer *= it.extent
    return out


# ----------------------------------------------------------------------------- tma_auto
@dataclass(frozen=True)
class _Gt:
    """One global iterator after the grouping (TVM ``_Gt``)."""

    extent: int
    stride: int  # elements
    smem: int | None  # index of its shared iterator; None for a coordinate-only (unit) dimension
    copy_dim: int
    global_dim: int
    coord: int


def _global_records(g: RegionRef, smem_shape: tuple[int, ...]) -> list[_Gt]:
    """TVM ``_build_auto_gt``: each copy dimension of the (row-major) global region split at the shared
    iterators' boundaries; the outermost piece of a dimension is a descriptor dimension of ``shape //
    inner_product`` at coordinate ``start // inner_product``, the others their own extent at 0."""
    strides, _ = g.buf.dim_strides()
    bounds = set(_cumulative(smem_shape))
    smem_ends = _cumulative(smem_shape)
    out: list[_Gt] = []
    outer = 1
    for d, (start, ext) in enumerate(zip(g.begins, g.extents)):
        cuts = sorted(b for b in bounds if outer < b < outer * ext)
        pieces: list[int] = []
        prev = 1
        for b in cuts + [outer * ext]:
            if b % outer or (b // outer) % prev:
                _auto_fail("group-global", f"cannot jointly group global dimension {d} (extent {ext}) by the "
                                           f"shared shape {smem_shape}")
            pieces.append((b // outer) // prev)
            prev = b // outer
        inner = math.prod(pieces[1:])
        if start % inner:
            _auto_fail("coordinate", f"group={d} start={start} is not divisible by inner_product={inner}")
        if g.buf.shape[d] % inner:
            _auto_fail("global-shape", f"group={d} tensor extent={g.buf.shape[d]} is not divisible by "
                                       f"inner_product={inner}")
        acc = outer
        for k, x in enumerate(pieces):
            acc *= x
            smem = smem_ends.index(acc) if x != 1 and acc in smem_ends else None
            if x != 1 and smem is None:
                _auto_fail("coordinate-only-dim", f"global iterator of copy group {d} extent={x} has no "
                                                  f"shared-memory iterator")
            if k == 0:
                gd, c = g.buf.shape[d] // inner, start // inner
            else:
                gd, c = x, 0
            out.append(_Gt(x, strides[d] * math.prod(pieces[k + 1:]), smem, d, gd, c))
        outer *= ext
    return out


def _smem_order(iters: list[Iter]) -> list[int]:
    """TVM ``_smem_iter_order``: the shared iterators by stride; the region must be one dense block."""
    order = sorted(range(len(iters)), key=lambda i: iters[i].stride)
    if not order:
        _auto_fail("shared-chain", "copy region has no non-unit shared memory iterator")
    if iters[order[0]].stride != 1:
        _auto_fail("shared-chain", f"smallest shared stride must be 1, got {iters[order[0]].stride}")
    for pos in range(1, len(order)):
        prev, cur = iters[order[pos - 1]], iters[order[pos]]
        if cur.stride != prev.stride * prev.extent:
            _auto_fail("shared-chain", f"shared iter {order[pos]} at sorted position {pos} has stride={cur.stride}, "
                                       f"expected {prev.stride * prev.extent} after extent={prev.extent}")
    return order


def _spec_for_prefix(p: int, order: list[int], iters: list[Iter], gts: list[_Gt], *, dtype: str, eb: int,
                     smem_offset: int, swizzle: int, numel: int) -> TmaPlan:
    """TVM ``_auto_spec_for_prefix``: the box of the ``p`` smallest-stride shared iterators."""
    selected = set(order[:p])
    by_smem: dict[int, list[int]] = {i: [] for i in range(len(iters))}
    detached: list[int] = []
    for k, gt in enumerate(gts):
        (detached if gt.smem is None else by_smem[gt.smem]).append(k)
    cuda = [k for i in order for k in reversed(by_smem[i])] + detached
    to_dim = {k: d for d, k in enumerate(cuda)}
    ordered = [gts[k] for k in cuda]
    box = tuple(gt.extent if gt.smem in selected else 1 for gt in ordered)
    axes = []
    for i in order[p:]:
        group = by_smem[i]
        if math.prod(gts[k].extent for k in group) != iters[i].extent:
            _auto_fail("issue-axis", f"shared group={i} extent={iters[i].extent} maps to global product="
                                     f"{math.prod(gts[k].extent for k in group)}")
        contrib = []
        inner = 1
        for k in reversed(group):
            contrib.append(IssueCoord(to_dim[k], inner, gts[k].extent))
            inner *= gts[k].extent
        axes.append(IssueAxis(iters[i].extent, iters[i].stride, tuple(reversed(contrib))))
    plan = TmaPlan(dtype, eb, tuple(gt.global_dim for gt in ordered), tuple(gt.stride * eb for gt in ordered), box,
                   tuple(gt.coord for gt in ordered), tuple(axes), smem_offset, swizzle)
    if plan.box_bytes * plan.issues != numel * eb:
        _auto_fail("byte-equivalence", f"prefix={p} payload={plan.box_bytes * plan.issues * 8} bits, "
                                       f"expected={numel * eb * 8} bits")
    return plan


def _validate_shared_mapping(plan: TmaPlan, s_eb: int, numel: int) -> None:
    """TVM ``_validate_auto_shared_mapping``: the slice pointer keeps the swizzle atom's alignment and the issue
    loops partition the shared region exactly once."""
    atom = hw.SWIZZLE_MODES[plan.swizzle].atom
    start = plan.smem_offset * s_eb
    if start % atom:
        _auto_fail("shared-pointer", f"shared slice offset={start}B must preserve {atom}B alignment")
    align = max(atom, hw.SHARED_MIN_ALIGN)  # (tilemagic, unlike TVM 0.27: every issue's shared address)
    if start % align:
        _auto_fail("shared-pointer", f"shared slice offset={start}B: a TMA box's shared address must be "
                                     f"{align}B aligned (misaligned address on sm_90a)")
    covered = plan.box_bytes // s_eb
    for k, ax in enumerate(plan.issue_axes):
        if ax.smem_stride != covered:
            _auto_fail("issue-coverage", f"issue axis={k} stride={ax.smem_stride} does not follow the covered "
                                         f"prefix={covered}")
        covered *= ax.extent
    if covered != numel:
        _auto_fail("issue-coverage", f"issue loops plus one box cover {covered} shared elements, but the sliced "
                                     f"region contains {numel}")


def _misaligned_issue(plan: TmaPlan, s_eb: int) -> str | None:
    """Why an issue axis of ``plan`` steps a box's shared address off the 128-byte (or swizzle-atom) alignment every
    TMA box needs (tilemagic, unlike TVM 0.27: the H200 faults with a misaligned address), or None.  A candidate of
    the prefix search that breaks it is not legal, like one whose descriptor breaks a rule: the search goes on to
    the larger boxes, which step by more."""
    align = max(hw.SWIZZLE_MODES[plan.swizzle].atom, hw.SHARED_MIN_ALIGN)
    for k, ax in enumerate(plan.issue_axes):
        if ax.extent > 1 and (ax.smem_stride * s_eb) % align:
            return (f"issue axis={k} advances the shared address by {ax.smem_stride * s_eb}B: each TMA box's shared "
                    f"address must be {align}B aligned (misaligned address on sm_90a)")
    return None


def _issue_dims(plan: TmaPlan) -> set[int]:
    return {c.dim for ax in plan.issue_axes for c in ax.coords}


def _remap(axes: tuple[IssueAxis, ...], removed: int) -> tuple[IssueAxis, ...]:
    return tuple(replace(ax, coords=tuple(replace(c, dim=c.dim - (c.dim > removed)) for c in ax.coords))
                 for ax in axes)


def _drop(plan: TmaPlan, k: int, **inner: int) -> TmaPlan:
    """``plan`` without dimension ``k`` (after setting ``inner``'s fields of dimension ``k - 1``)."""
    fields = {"dims": list(plan.dims), "box": list(plan.box), "coords": list(plan.coords),
              "full_strides": list(plan.full_strides)}
    for name, value in inner.items():
        fields[name][k - 1] = value
    for v in fields.values():
        v.pop(k)
    return replace(plan, dims=tuple(fields["dims"]), box=tuple(fields["box"]), coords=tuple(fields["coords"]),
                   full_strides=tuple(fields["full_strides"]), issue_axes=_remap(plan.issue_axes, k))


def _inner_legal(plan: TmaPlan, box0: int) -> bool:
    """TVM ``_auto_inner_dimension_is_legal``: the rules that change when a dimension becomes innermost."""
    inner = box0 * plan.elem_bytes
    span = hw.SWIZZLE_MODES[plan.swizzle].span
    return inner % hw.INNER_BOX_ALIGN == 0 and (span is None or inner <= span)


def _canonicalize(plan: TmaPlan) -> TmaPlan:
    """TVM ``_canonicalize_auto_plan``: drop unit dimensions no issue drives, merge an inner dimension boxed in
    full from coordinate 0 into the next when its stride continues it (promoting the unit once to cross a
    box-blocked innermost merge); every byte address is kept."""
    cur = plan
    while True:
        fs, issue = cur.full_strides, _issue_dims(cur)
        changed = False
        if cur.rank > 1:
            for d in range(cur.rank):
                if d in issue or cur.dims[d] != 1 or cur.box[d] != 1:
                    continue
                if d == 0:
                    if fs[1] != fs[0] or not _inner_legal(cur, cur.box[1]):
                        continue
                    dims, box, coords = cur.dims[1:], cur.box[1:], cur.coords[1:]
                    cur = replace(cur, dims=dims, box=box, coords=coords, full_strides=fs[1:],
                                  issue_axes=_remap(cur.issue_axes, 0))
                else:
                    cur = _drop(cur, d)
                changed = True
                break
        if changed:
            continue
        for i in range(cur.rank - 1):
            o = i + 1
            if i in issue or o in issue:
                continue
            mdim, mbox = cur.dims[i] * cur.dims[o], cur.box[i] * cur.box[o]
            if i == 0 and not _inner_legal(cur, mbox):
                continue
            if not (cur.box[i] == cur.dims[i] and cur.coords[i] == 0 and fs[o] == cur.dims[i] * fs[i]
                    and 0 < mdim <= hw.MAX_GLOBAL_DIM):
                continue
            if mbox > hw.MAX_BOX:
                if i == 0 and cur.rank > 2 and cur.box[o] == cur.dims[o] and cur.coords[o] == 0:
                    prom = _promote(cur)
                    if (prom is not None and prom.box[0] * prom.box[1] <= hw.MAX_BOX
                            and prom.dims[0] * prom.dims[1] <= hw.MAX_GLOBAL_DIM
                            and _inner_legal(prom, prom.box[0] * prom.box[1])):
                        cur = prom
                        changed = True
                        break
                continue
            cur = _drop(cur, o, dims=mdim, box=mbox, coords=cur.coords[o] * cur.dims[i])
            changed = True
            break
        if not changed:
            return cur


def _promote(plan: TmaPlan) -> TmaPlan | None:
    """TVM ``_promote_auto_once``: the next wider descriptor unit (halving dimension 0's extent, box and
    coordinate), when every byte address stays; None when not allowed (NaN fill, a reduction, an issue axis on
    dimension 0)."""
    if plan.elem_bytes not in hw.PROMOTE or plan.oob_fill != 0 or plan.reduce or 0 in _issue_dims(plan):
        return None
    if plan.full_strides[0] != plan.elem_bytes:
        return None
    if plan.dims[0] % 2 or plan.box[0] % 2 or plan.coords[0] % 2:
        return None
    if any(s % (2 * plan.elem_bytes) for s in plan.strides):
        return None
    dtype, eb = hw.PROMOTE[plan.elem_bytes]
    return replace(plan, dtype=dtype, elem_bytes=eb, dims=(plan.dims[0] // 2, *plan.dims[1:]),
                   box=(plan.box[0] // 2, *plan.box[1:]), coords=(plan.coords[0] // 2, *plan.coords[1:]),
                   full_strides=(eb, *plan.full_strides[1:]))


def _repair(plan: TmaPlan, sm: int) -> tuple[TmaPlan | None, list[hw.Finding]]:
    """TVM ``_repair_auto_candidate``: canonicalise, validate, promote while only repairable rules fail."""
    cur = plan
    while True:
        cur = _canonicalize(cur)
        bad = cur.findings(sm)
        if cur.full_strides[0] != cur.elem_bytes:
            bad.append(hw.Finding("inner_stride", f"innermost global element stride must be 1, got "
                                                  f"{cur.full_strides[0] // cur.elem_bytes}"))
        if not bad:
            return cur, []
        if any(f.rule not in hw.REPAIRABLE_RULES for f in bad):
            return None, bad
        nxt = _promote(cur)
        if nxt is None:
            return None, bad
        cur = nxt


def _descriptor_dtype(buf: ir.Buffer, fail_fn) -> str:
    dt = hw.DTYPE_TO_TENSORMAP.get(buf.dtype)
    if dt is None:
        fail_fn("dtype", f"unsupported TensorMap descriptor dtype {buf.dtype}")
    assert dt is not None  # fail_fn raised
    return dt


def plan_auto(op: CopyOp, ctx: DispatchContext) -> tuple[TmaPlan, _Config, str]:
    """TVM ``_build_auto_plan``: the largest legal box, the issue axes, the repaired descriptor.

    Returns
    -------
    (plan, config, direction)

    Raises
    ------
    DispatchFail
        ``tma_auto stage=<stage>: ...`` (see the module docstring), or a config rule.
    """
    dirn = _direction(op)
    assert dirn is not None  # validate_tma_copy_op held
    direction, s, g = dirn
    if s.buf.dtype != g.buf.dtype:
        _auto_fail("dtype", f"shared dtype={s.buf.dtype} and global dtype={g.buf.dtype} differ")
    cfg = _runtime_config(op, direction, explicit=False, cluster=ctx.cluster)
    mode, refusal = swizzle_mode(s.buf)
    if refusal:
        fail(f"tma_auto stage=shared-swizzle: {refusal}")
    sl = _shared_slice(s)
    if sl is None:
        _auto_fail("shared-slice", f"shared layout {_shared_tile(s.buf)} cannot be sliced at "
                                   f"start={list(s.begins)}, extent={list(s.extents)}")
    canon, offset = sl
    refined = _refine(canon.shard, tuple(g.extents))
    if refined is None:
        _auto_fail("group-shared", f"cannot refine canonical shared shape={canon.extents} with copy shape="
                                   f"{tuple(g.extents)}")
    iters = [it for it in refined if it.extent != 1]
    order = _smem_order(iters)
    gts = _global_records(g, tuple(it.extent for it in iters))
    dtype = _descriptor_dtype(g.buf, _auto_fail)
    sm = sm_number(ctx.target.arch)
    best: TmaPlan | None = None
    last: list[hw.Finding] = []
    misaligned: str | None = None
    for p in range(1, len(order) + 1):
        raw = replace(_spec_for_prefix(p, order, iters, gts, dtype=dtype, eb=g.buf.elem_bytes, smem_offset=offset,
                                       swizzle=mode, numel=s.numel), reduce=cfg.reduce)
        _validate_shared_mapping(raw, s.buf.elem_bytes, s.numel)
        fixed, bad = _repair(raw, sm)
        why = _misaligned_issue(fixed, s.buf.elem_bytes) if fixed is not None else None
        if why is not None:
            fixed, bad, misaligned = None, [], why
        if fixed is None:
            last = bad
            if best is not None:
                break
            continue
        best = fixed
    if best is None:
        if misaligned is not None:
            _auto_fail("shared-pointer", misaligned + (f"; no larger box is legal ({_details(last)})" if last else ""))
        _auto_fail("prefix-search", _details(last) if last else "no legal shared-memory prefix")
    why = _edge_refusal(best, g)
    if why:
        _auto_fail("edge", why)
    return replace(best, oob_fill=cfg.oob_fill), cfg, direction


def _edge_elements(plan: TmaPlan, eb: int) -> np.ndarray:
    """Byte offsets (from the map's origin, in ``eb``-byte elements of the tensor) of every in-bounds element of
    every issue of ``plan``: what the descriptor reads (G2S) or writes (S2G) of the tensor (PTX ISA 9.0 §5.5.3.3)."""
    got = []
    for _, coords in plan.issue_list():
        off, ok = np.zeros(1, np.int64), np.ones(1, bool)
        for d in range(plan.rank):
            c = coords[d] + np.arange(plan.box[d], dtype=np.int64)
            off = (off[:, None] + c[None, :] * plan.full_strides[d]).reshape(-1)
            ok = (ok[:, None] & ((c >= 0) & (c < plan.dims[d]))[None, :]).reshape(-1)
        got.append(off[ok])
    sub = np.arange(0, plan.elem_bytes, eb, dtype=np.int64)  # (a promoted unit holds several elements)
    return (np.concatenate(got)[:, None] + sub[None, :]).reshape(-1)


def _edge_refusal(plan: TmaPlan, g: RegionRef) -> str | None:
    """For a global region reaching past its tensor's edge: why ``plan``'s in-bounds elements are not exactly the
    region's elements inside the tensor (None when they are, or when the region lies inside it).

    The hardware decides out-of-bounds per descriptor dimension (PTX ISA 9.0 §5.5.3.3), so a descriptor whose
    dimensions do not bound the tensor's own (a 1-D map over 2-D rows, a dimension wider than the tensor's) would
    fill or drop the wrong elements; TVM 0.27's divisibility rules (``stage=coordinate``, ``stage=global-shape``:
    the tensor extent divided by the inner product) keep its plans bounded, and this check holds every plan to it
    element by element."""
    where = past_edge(g)
    if where is None:
        return None
    strides, _ = g.buf.dim_strides()
    eb = g.buf.elem_bytes
    want = np.zeros(1, np.int64)
    for b, e, n, st in zip(g.begins, g.extents, g.buf.shape, strides):
        want = (want[:, None] + np.arange(b, min(b + e, n), dtype=np.int64)[None, :] * (st * eb)).reshape(-1)
    got = _edge_elements(plan, eb)
    if got.size == want.size and np.array_equal(np.sort(got), np.sort(want)):
        return None
    return (f"the region reaches past {g.buf.name}'s edge ({where}), and the descriptor (dims {list(plan.dims)}, "
            f"box {list(plan.box)}) bounds {got.size} of its elements where the tensor has {want.size}: the "
            f"hardware would fill or drop other elements than the tensor's edge")


# ----------------------------------------------------------------------------- tma_explicit
def plan_explicit(op: CopyOp, ctx: DispatchContext) -> tuple[TmaPlan, _Config, str]:
    """TVM ``_build_explicit_plan``: the map straight from the global buffer, one instruction.

    Unlike TVM, the two sides' dtypes must be equal (the map's element type is the global buffer's).

    Raises
    ------
    DispatchFail
        ``tma_explicit stage=<stage>: ...`` or a config rule.
    """
    dirn = _direction(op)
    assert dirn is not None
    direction, s, g = dirn
    cfg = _runtime_config(op, direction, explicit=True, cluster=ctx.cluster)
    if s.buf.dtype != g.buf.dtype:
        _explicit_fail("dtype", f"shared dtype={s.buf.dtype} and global dtype={g.buf.dtype} differ")
    mode, refusal = swizzle_mode(s.buf)
    if refusal:
        _explicit_fail("shared-swizzle", refusal)
    sl = _shared_slice(s)
    if sl is None or sl[0].size() != s.numel or len(sl[0].shard) != 1 or sl[0].shard[0].stride != 1:
        got = sl[0] if sl is not None else _shared_tile(s.buf)
        _explicit_fail("shared-layout", f"sliced shared layout must canonicalize to trivial after extracting its "
                                        f"pointer offset; got {got}")
    offset = sl[1]
    atom = max(hw.SWIZZLE_MODES[mode].atom, hw.SHARED_MIN_ALIGN)  # (TVM 0.27: the swizzle atom only)
    if (offset * s.buf.elem_bytes) % atom:
        _explicit_fail("shared-layout", f"shared slice pointer offset {offset * s.buf.elem_bytes}B violates "
                                        f"{atom}B TMA shared-address alignment")
    dtype = _descriptor_dtype(g.buf, _explicit_fail)
    strides, _ = g.buf.dim_strides()
    eb = g.buf.elem_bytes
    plan = TmaPlan(dtype, eb, tuple(reversed(g.buf.shape)), tuple(st * eb for st in reversed(strides)),
                   tuple(reversed(g.extents)), tuple(reversed(g.begins)), (), offset, mode, cfg.oob_fill,
                   reduce=cfg.reduce)
    bad = plan.findings(sm_number(ctx.target.arch))
    if bad:
        _explicit_fail("main-descriptor", _details(bad))
    why = _edge_refusal(plan, g)
    if why:
        _explicit_fail("edge", why)
    return plan, cfg, direction


# ----------------------------------------------------------------------------- emission
def tensor_map(plan: TmaPlan, g: ir.Buffer) -> ir.TensorMap:
    """The plan's descriptor (named after its buffer; the kernel's builder names maps apart)."""
    return ir.TensorMap(f"{g.name}_tmap", g, plan.dtype, plan.elem_bytes, plan.dims, plan.strides, plan.box,
                        (1,) * plan.rank, plan.swizzle, plan.oob_fill, plan.l2_promotion)


def _emit(op: CopyOp, ctx: DispatchContext, plan: TmaPlan, cfg: _Config, direction: str) -> Emitted:
    shared, glob = (op.dst, op.src) if direction == "g2s" else (op.src, op.dst)
    tmap = ctx.builder.tensormap(tensor_map(plan, glob.buf))
    eb = shared.buf.elem_bytes
    stmts: list[ir.Stmt] = [
        ir.TmaCopy(direction, tmap, shared.buf, off * eb, tuple(ir.Const(c) for c in coords), cfg.mbar,
                   cfg.cache_hint, cfg.reduce, cfg.cta_mask)
        for off, coords in plan.issue_list()]
    chain = stmts[0].chain + (".L2::cache_hint" if cfg.cache_hint else "")  # type: ignore[attr-defined]
    box = "×".join(map(str, plan.box))
    notes = [f"rank {plan.rank}", f"swizzle {hw.SWIZZLE_MODES[plan.swizzle].name}", f"map {tmap.name}"]
    if plan.elem_bytes != glob.buf.elem_bytes:
        notes.append(f"descriptor unit promoted to {plan.dtype}")
    if cfg.mbar is not None:
        notes.append(f"complete_tx on {cfg.mbar.name}")
    if cfg.cta_mask is not None:
        ranks = [r for r in range(cfg.cta_mask.bit_length()) if cfg.cta_mask >> r & 1]
        notes.append(f"multicast to CTA{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))} "
                     f"(cta_mask {_mask_text(cfg.cta_mask)})")
    if cfg.reduce is not None:
        notes.append(f"reduce .{cfg.reduce} into {glob.buf.name}")
    where = past_edge(glob)
    if where is not None:
        inside = math.prod(min(b + e, n) - b for b, e, n in zip(glob.begins, glob.extents, glob.buf.shape))
        fill = "not written" if direction == "s2g" else ("NaN" if cfg.oob_fill else "zero") + "-filled"
        notes.append(f"past {glob.buf.name}'s edge ({where}): {glob.numel - inside} of {glob.numel} elements "
                     f"{fill}")
    return stmts, EmitSummary(chain, len(stmts), moves=f"box {box} {plan.dtype} = {plan.box_bytes} B",
                              notes=tuple(notes))


# === Variant: copy_async/tma_auto (priority=10) ===
#
# When: global <-> shared on one thread (sm_90+), with mbar= for G2S; the planner finds a legal box.
# Emits: one cp.async.bulk.tensor per issue (unrolled), a tensor map per distinct descriptor.
@register_dispatch("copy_async", "cuda", variant="tma_auto", priority=10, when=_PREDICATES)
def copy_async_tma_auto(op: CopyOp, ctx: DispatchContext) -> Emitted:
    return _emit(op, ctx, *plan_auto(op, ctx))


# === Variant: copy_async/tma_explicit (priority=10) ===
#
# When: as tma_auto; the map is the global buffer itself and the shared region box-linear.
# Emits: exactly one cp.async.bulk.tensor.
@register_dispatch("copy_async", "cuda", variant="tma_explicit", priority=10, when=_PREDICATES)
def copy_async_tma_explicit(op: CopyOp, ctx: DispatchContext) -> Emitted:
    return _emit(op, ctx, *plan_explicit(op, ctx))
