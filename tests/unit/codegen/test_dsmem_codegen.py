"""The dsmem copy (``ir.BulkCopy``) in the printed IR and the CUDA, and its PTX through ptxas (sm_90a, sm_100a).

The kernel is built by hand (a 2-CTA cluster exchanging a float32[64, 32] tile through distributed shared memory,
the statements the ``dsmem`` variant emits): the language's ``cluster=`` and ``cta_rank`` arrive with the lowering
of clusters, so until the kernel's CUDA carries ``__cluster_dims__`` and declares ``cta_rank`` itself the ptxas
test adds both (``_cluster_ready``); after that merge it adds nothing.
"""

from __future__ import annotations

import re
import shutil

import pytest
from helpers import copy_async_op, dispatch_op, region, tma_buffers

from tilemagic.codegen.cuda import generate
from tilemagic.ir import nodes as ir
from tilemagic.ir.printer import print_ir
from tilemagic.layout import TileLayout
from tilemagic.runtime.nvcc import nvcc_compile

gbuf, sbuf, mbar = tma_buffers()
RANK = ir.ThreadVar("cta_rank")
PEER = ir.Bin("^", RANK, ir.Const(1))


def _exchange_kernel(remote: ir.Expr = PEER) -> ir.Kernel:
    """S -> the peer's R (dsmem, tx 0), with the mbarrier protocol around it (init, cluster barrier, arrive
    expect_tx, wait); hand-built as the lowering assembles a cluster kernel."""
    S, R, got = sbuf("S", "float32", (64, 32)), sbuf("R", "float32", (64, 32)), mbar("got")
    stmts, rec = dispatch_op(copy_async_op(region(R), region(S), remote_cta_id=remote, mbar=got, line=7), S, R, got)
    assert rec.chosen == "dsmem"
    tx0 = ir.Bin("==", ir.ThreadVar("tx"), ir.Const(0))
    body = ir.Seq((
        ir.If(tx0, ir.Seq((ir.MbarInit(got, 1), ir.Fence("mbarrier_init")))),
        ir.Barrier(),
        ir.If(tx0, ir.Seq((ir.MbarArrive(got, 8192), *stmts))),
        ir.MbarWait(got, 0),
    ))
    return ir.Kernel("dsmem_k", 128, (), (S, R, got), (), (), 0, None, body, cluster=2)


def test_ir_prints_the_mapped_destination_and_barrier():
    text = print_ir(_exchange_kernel())[0]
    assert ('T.ptx["cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes"]('
            'T.ptx.mapa.shared_cluster(R.access_ptr("w", offset=0), cta_rank ^ 1), S.access_ptr("r", offset=0), '
            '8192, T.ptx.mapa.shared_cluster(T.address_of(got[0]), cta_rank ^ 1))') in text
    assert "mapa.u64" not in text


def test_cuda_maps_both_addresses_with_the_32_bit_shared_cluster_form():
    cuda = generate(_exchange_kernel(), arch="sm_90a").text
    line = next(ln for ln in cuda.splitlines() if "cp.async.bulk.shared::cluster" in ln)
    assert "mapa.shared::cluster.u32 tm_dst, %0, %2;" in line and "mapa.shared::cluster.u32 tm_bar, %1, %2;" in line
    assert ("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [tm_dst], [%3], %4, [tm_bar];"
            in line)
    assert ('"r"((uint32_t)__cvta_generic_to_shared(R)), "r"((uint32_t)__cvta_generic_to_shared(got)), '
            '"r"((uint32_t)(cta_rank ^ 1)), "r"((uint32_t)__cvta_generic_to_shared(S)), "r"(8192)') in line
    assert "mapa.u64" not in cuda and "cvta.to.shared" not in line


def test_cuda_offsets_each_chunk():
    S = sbuf("S", "float16", (8, 128), TileLayout.from_spec((8, 128), (256, 1)))
    R, got = sbuf("R", "float16", (8, 128)), mbar("got")
    stmts, _ = dispatch_op(copy_async_op(region(R), region(S), remote_cta_id=PEER, mbar=got), S, R, got, threads=32)
    k = ir.Kernel("k", 32, (), (S, R, got), (), (), 0, None, ir.Seq(tuple(stmts)), cluster=2)
    lines = [ln for ln in generate(k, arch="sm_90a").text.splitlines() if "cp.async.bulk.shared::cluster" in ln]
    assert len(lines) == 8
    assert '__cvta_generic_to_shared((char*)R + 768)' in lines[3] and '__cvta_generic_to_shared((char*)S + 1536)' \
        in lines[3] and '"r"(256)' in lines[3]


def _cluster_ready(cuda: str, name: str, cluster: int) -> str:
    """The CUDA with ``__cluster_dims__`` on the kernel and ``cta_rank`` declared (``%cluster_ctarank``), added
    only where the generator does not write them yet."""
    if "__cluster_dims__" not in cuda:
        cuda = cuda.replace("void __launch_bounds__", f"void __cluster_dims__({cluster}, 1, 1) __launch_bounds__", 1)
    if not re.search(r"^[ \t]*[\w \t]*\bcta_rank\s*[;=]", cuda, re.M):  # no declaration of cta_rank yet
        decl = ('unsigned cta_rank_u; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(cta_rank_u)); '
                'const int cta_rank = (int)cta_rank_u;')
        cuda = re.sub(r"(\) \{\n)", r"\1    " + decl.replace("\\", "\\\\") + "\n", cuda, count=1)
    return cuda


@pytest.mark.nvcc
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_dsmem_copy_assembles(arch):
    k = _exchange_kernel()
    cuda = _cluster_ready(generate(k, arch=arch).text, k.name, k.cluster)
    r = nvcc_compile(cuda, arch, cubin=True)
    assert r.ok, r.log + "\n" + cuda
    ptx = nvcc_compile(cuda, arch, cubin=False).ptx or ""
    assert "mapa.shared::cluster.u32" in ptx and "cp.async.bulk.shared::cluster.shared::cta" in ptx
