"""Differential tests against TVM TIRx: the ``dsmem`` variant (``apache-tvm 0.27.0.post1``'s
``copy_dsmem_impl``) on the same ops as tilemagic's.

TVM's planner is called as TVM's own test_dsmem.py calls it (a shared -> shared ``CopyAsync`` with ``mbar`` and
``remote_cta_id=1`` in its config, on sm_90a); tilemagic's op is the same regions and layouts, issued by CTA 0.
Both must chunk alike — the same bulk copies, bytes and count — or both decline; the one difference on purpose is
TVM's ``mapa.u64`` (:data:`tilemagic.export.tvm_compare.DSMEM_MAPA_BUG`).
"""

from __future__ import annotations

import pytest
from helpers import copy_async_op, dispatch_op, region, tma_buffers

from tilemagic.errors import DispatchError
from tilemagic.export.instructions import ours_instructions, tvm_instructions
from tilemagic.export.tvm_compare import DSMEM_MAPA_BUG, OpComparison, dsmem_mapa_bug
from tilemagic.ir import nodes as ir
from tilemagic.layout import TileLayout

pytestmark = pytest.mark.tvm  # the TVM oracle tests (fixture `tvm` in tests/conftest.py)

gbuf, sbuf, mbar = tma_buffers()

#: TVM's test_dsmem.py configurations, (shape, dtype, src strides, dst strides): None = row-major
CASES = [
    ("contiguous-2d", (128, 64), "float16", None, None),
    ("contiguous-1d", (256,), "float16", None, None),
    ("stride-gap", (8, 128), "float16", (256, 1), (256, 1)),
    ("partial-contiguity-diff-stride", (8, 128), "float16", (256, 1), (512, 1)),
    ("incompatible-row-vs-col", (4, 64), "float16", None, (1, 4)),
    ("f32-rows-of-48", (8, 32), "float32", (48, 1), (32, 1)),
    ("chunk-below-16", (16, 4), "float16", (8, 1), (4, 1)),
]


def _tvm_script(tvm, shape, dtype, ss, ds):
    """``impl.script()`` of TVM's dsmem planner on the op, or the DispatchFail message."""
    from tvm.ir import Range
    from tvm.tirx import IntImm, Var
    from tvm.tirx.cuda.tile_primitive.copy_async.dsmem import copy_dsmem_impl
    from tvm.tirx.exec_scope import ExecScope
    from tvm.tirx.layout import S, TileLayout as TvmLayout
    from tvm.tirx.operator.tile_primitive.dispatcher import DispatchFail
    from tvm.tirx.operator.tile_primitive.ops import CopyAsync
    from tvm.tirx.stmt import BufferRegion
    from tvm.tirx.tile_primitive import DispatchContext

    def lay(strides):
        return TvmLayout(S[tuple(shape)]) if strides is None else TvmLayout(S[tuple(shape): tuple(strides)])

    src = tvm.tirx.decl_buffer(shape, dtype, "S", scope="shared.dyn", layout=lay(ss))
    dst = tvm.tirx.decl_buffer(shape, dtype, "R", scope="shared.dyn", layout=lay(ds))
    ranges = [Range.from_min_extent(0, s) for s in shape]
    op = CopyAsync(BufferRegion(dst, ranges), BufferRegion(src, ranges),
                   config={"mbar": Var("mbar", "handle"), "remote_cta_id": IntImm("int32", 1)})
    ctx = DispatchContext(tvm.target.Target({"kind": "cuda", "arch": "sm_90a"}), ExecScope("thread"), {}, {})
    try:
        return copy_dsmem_impl(op, ctx).script(), None
    except DispatchFail as e:
        return None, str(e)


def _ours(shape, dtype, ss, ds):
    def buf(name, strides):
        return sbuf(name, dtype, shape, None if strides is None else TileLayout.from_spec(shape, strides))

    S, R, got = buf("S", ss), buf("R", ds), mbar("got")
    rank0 = ir.Bin("and", ir.Bin("==", ir.ThreadVar("tx"), ir.Const(0)),
                   ir.Bin("==", ir.ThreadVar("cta_rank"), ir.Const(0)))
    try:
        stmts, _ = dispatch_op(copy_async_op(region(R), region(S), remote_cta_id=ir.Const(1), mbar=got, line=3),
                               S, R, got, guard=rank0)
    except DispatchError as e:
        return None, e.details
    k = ir.Kernel("k", 128, (), (S, R, got), (), (), 0, None, ir.Seq((ir.GuardIf(rank0, ir.Seq(tuple(stmts))),)),
                  cluster=2)
    return ours_instructions(k)[3], None


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_dsmem_plan_matches_tvm(tvm, case):
    _, shape, dtype, ss, ds = case
    script, tvm_err = _tvm_script(tvm, shape, dtype, ss, ds)
    ours, ours_err = _ours(shape, dtype, ss, ds)
    if tvm_err is not None or ours_err is not None:
        assert tvm_err is not None and ours_err is not None, (tvm_err, ours_err)
        assert tvm_err.split(":")[0] in ours_err  # TVM's reason, word for word
        return
    theirs = tvm_instructions(script)
    oc = OpComparison(3, "thread.copy_async R <- S", ("shared", "shared"), "dsmem", "dsmem", ours, theirs,
                      known_bug=dsmem_mapa_bug(ours, theirs))
    assert oc.known_bug == DSMEM_MAPA_BUG and oc.verdict == "known TVM bug", (oc.ours_lines, oc.tvm_lines)
