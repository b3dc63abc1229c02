"""The dsmem copy's instruction lists: tilemagic's from the IR, TVM's from its dispatched TIR (as TVM 0.27 prints
it), and the comparison, which names TVM's truncated ``mapa.u64`` as the known TVM bug.

The TVM script below is what ``apache-tvm 0.27.0.post1``'s ``copy_dsmem_impl`` prints for (8, 128) float16 rows at
stride 256 into rows at stride 512 (tests/tvm/test_tvm_dsmem.py produces it live from TVM).
"""

from __future__ import annotations

from helpers import copy_async_op, dispatch_op, region, tma_buffers

from tilemagic.export.instructions import MAPA_CLUSTER, ours_instructions, summary_lines, tvm_instructions
from tilemagic.export.tvm_compare import DSMEM_MAPA_BUG, OpComparison, dsmem_mapa_bug
from tilemagic.ir import nodes as ir
from tilemagic.layout import TileLayout

gbuf, sbuf, mbar = tma_buffers()
CHAIN = "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes"

TVM_STRIDE_GAP = '''
@T.prim_func
def impl():
    mapped = T.alloc_local((2,), "uint64")
    mbar = T.handle()
    T.ptx.mapa(mapped[0], mbar, T.uint32(1), "", "u64", "")
    remote_mbar: T.uint64 = mapped[0]
    for loop_vars in range(8):
        A = T.Buffer((8, 128), "float16", scope="shared.dyn", layout=T.TileLayout(T.S[(8, 128):(256, 1)]))
        src_buf_w = T.decl_buffer((8, 128), "float16", data=A.data, elem_offset=loop_vars * 256, scope="shared.dyn", layout=T.TileLayout(T.S[(8, 128):(256, 1)]))
        B = T.Buffer((8, 128), "float16", scope="shared.dyn", layout=T.TileLayout(T.S[(8, 128):(512, 1)]))
        dst_buf_w = T.decl_buffer((8, 128), "float16", data=B.data, elem_offset=loop_vars * 512, scope="shared.dyn", layout=T.TileLayout(T.S[(8, 128):(512, 1)]))
        src_ptr: T.let[T.handle("float16", "shared.dyn")] = T.address_of(src_buf_w[0, 0])
        T.ptx.mapa(mapped[1], T.address_of(dst_buf_w[0, 0]), T.uint32(1), "", "u64", "")
        cluster_dst: T.uint64 = mapped[1]
        T.ptx.cp(T.Cast("uint32", cluster_dst), T.cuda.cvta_generic_to_shared(src_ptr), T.uint32(256), T.Cast("uint32", remote_mbar), "async", "bulk", "", "", "shared::cluster", "shared::cta", "mbarrier::complete_tx::bytes", "", "")
'''  # noqa: E501


def _ours():
    S = sbuf("S", "float16", (8, 128), TileLayout.from_spec((8, 128), (256, 1)))
    R = sbuf("R", "float16", (8, 128), TileLayout.from_spec((8, 128), (512, 1)))
    got = mbar("got")
    tx0 = ir.Bin("==", ir.ThreadVar("tx"), ir.Const(0))
    rank0 = ir.Bin("and", tx0, ir.Bin("==", ir.ThreadVar("cta_rank"), ir.Const(0)))  # TVM's test: CTA 0 sends
    stmts, _ = dispatch_op(copy_async_op(region(R), region(S), remote_cta_id=ir.Const(1), mbar=got, line=5),
                           S, R, got, guard=rank0)
    k = ir.Kernel("k", 128, (), (S, R, got), (), (), 0, None, ir.Seq((ir.GuardIf(rank0, ir.Seq(tuple(stmts))),)),
                  cluster=2)
    return ours_instructions(k)[5]


def test_ours_lists_the_mapa_pair_and_the_bytes_of_every_chunk():
    assert summary_lines(_ours()) == [f"{MAPA_CLUSTER} ×16", f"{CHAIN} 256 B ×8"]


def test_tvms_dispatched_tir_reads_as_mapa_u64_and_the_same_copies():
    assert summary_lines(tvm_instructions(TVM_STRIDE_GAP)) == ["mapa.u64 ×9", f"{CHAIN} 256 B ×8"]


def test_the_comparison_names_the_truncated_mapa_as_the_known_tvm_bug():
    ours, tvm = _ours(), tvm_instructions(TVM_STRIDE_GAP)
    oc = OpComparison(5, "thread.copy_async R <- S", ("shared", "shared"), "dsmem", "dsmem", ours, tvm,
                      known_bug=dsmem_mapa_bug(ours, tvm))
    assert oc.known_bug == DSMEM_MAPA_BUG and oc.verdict == "known TVM bug"
    assert "mapa.u64" in DSMEM_MAPA_BUG and "mapa.shared::cluster.u32" in DSMEM_MAPA_BUG


def test_other_copies_than_tvms_still_differ():
    ours = _ours()
    tvm = tvm_instructions(TVM_STRIDE_GAP.replace("T.uint32(256)", "T.uint32(128)"))
    oc = OpComparison(5, "", ("shared", "shared"), "dsmem", "dsmem", ours, tvm, known_bug=dsmem_mapa_bug(ours, tvm))
    assert oc.verdict == "differs"
    assert dsmem_mapa_bug(ours, [i for i in tvm if not i.chain.startswith("mapa")]) is None
