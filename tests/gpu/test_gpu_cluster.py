"""GPU tests of clusters and dsmem (run on the H200; skipped without CuPy or a CUDA device).

1. A hand-written 2-CTA cluster kernel, below tilemagic: ``__cluster_dims__(2, 1, 1)``, each CTA stages its half of
   ``A`` in shared memory (generic stores, ``fence.proxy.async``), ``barrier.cluster``, then its elected thread arms
   its mbarrier (``arrive.expect_tx``) and copies its tile into the peer CTA's shared memory with
   ``mapa.shared::cluster.u32`` + ``cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes``; every
   thread waits (``try_wait.parity``), writes what arrived to ``B``, and a final ``barrier.cluster`` keeps every
   CTA's shared memory alive until the peer's copy into it is done.  Launched with CuPy's plain launch (grid of
   whole clusters; the cluster dimensions are compiled in): one cluster, then a grid of many.
2. tilemagic's launch path: the dsmem variant's IR in a cluster kernel through ``run_on_gpu`` (grid = the cluster),
   its ``--bench`` grid of whole clusters.
3. The language's ``dsmem_exchange`` cell, GPU against the simulator.

2 and 3 need the lowering of clusters (``cluster_sync``, ``cta_rank`` and ``__cluster_dims__`` in the CUDA) and the
simulator of clusters; they are written for the merged tree.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

from gpu_guard import cupy  # noqa: E402  (skips the module without a GPU)
from helpers import copy_async_op, dispatch_op, region, tma_buffers  # noqa: E402

from tilemagic.codegen.cuda import generate  # noqa: E402
from tilemagic.ir import nodes as ir  # noqa: E402
from tilemagic.lower.ops import CopyOp  # noqa: E402
from tilemagic.runtime import run_on_gpu  # noqa: E402

CC = int(cupy.cuda.Device().compute_capability)
needs_sm90 = pytest.mark.skipif(CC < 90, reason="thread-block clusters need sm_90 or newer")
gbuf, sbuf, mbar = tma_buffers()

PAIR = r'''
#include <cuda/std/cstdint>
extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(128)
dsmem_pair(const float* __restrict__ A, float* __restrict__ B) {
  __shared__ __align__(16) float S[2048];
  __shared__ __align__(16) float R[2048];
  __shared__ __align__(8) uint64_t got[1];
  unsigned rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  const unsigned peer = rank ^ 1u;
  const size_t pair = (size_t)(blockIdx.x / 2) * 4096;  // one tile pair per cluster
  const unsigned bar = (unsigned)__cvta_generic_to_shared(got);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  for (int i = threadIdx.x; i < 2048; i += blockDim.x) S[i] = A[pair + rank * 2048 + i];
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(8192) : "memory");
    asm volatile("{\n\t.reg .b32 tm_dst, tm_bar;\n\tmapa.shared::cluster.u32 tm_dst, %0, %2;\n\t"
                 "mapa.shared::cluster.u32 tm_bar, %1, %2;\n\t"
                 "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [tm_dst], [%3], %4, "
                 "[tm_bar];\n\t}"
                 :: "r"((unsigned)__cvta_generic_to_shared(R)), "r"(bar), "r"(peer),
                    "r"((unsigned)__cvta_generic_to_shared(S)), "r"(8192) : "memory");
  }
  asm volatile("{\n\t.reg .pred P1;\nTM_WAIT:\n\tmbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n\t"
               "@P1 bra TM_DONE;\n\tbra TM_WAIT;\nTM_DONE:\n\t}" :: "r"(bar), "r"(0) : "memory");
  for (int i = threadIdx.x; i < 2048; i += blockDim.x) B[pair + peer * 2048 + i] = R[i];
  asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
}
'''


def _pair_kernel():
    return cupy.RawModule(code=PAIR, options=("-std=c++17", f"-arch=sm_{CC}{'a' if CC >= 90 else ''}")).get_function(
        "dsmem_pair")


@needs_sm90
@pytest.mark.parametrize("clusters", [1, 64], ids=["one-cluster", "grid-of-clusters"])
def test_hand_written_cluster_kernel_exchanges_through_dsmem(clusters):
    a = cupy.arange(clusters * 4096, dtype=cupy.float32)
    b = cupy.zeros_like(a)
    _pair_kernel()((2 * clusters,), (128,), (a, b))  # plain launch: the cluster dimensions are compiled in
    cupy.cuda.runtime.deviceSynchronize()
    np.testing.assert_array_equal(b.get(), a.get())


# ----------------------------------------------------------------------------- tilemagic's launch path
RANK = ir.ThreadVar("cta_rank")


def _copy(dst, src, line):
    from tilemagic.errors import Span

    sp = Span(line, 1, line, 2)
    return CopyOp("copy", "cta", dst, src, None, f"cta.copy {dst} <- {src}", sp)


def _per_rank(ops_by_rank, *bufs):
    """The per-rank lowering of a statement whose regions use cta_rank: each rank's IR under its guard."""
    out = []
    for r, op in enumerate(ops_by_rank):
        stmts, _ = dispatch_op(op, *bufs)
        out.append(ir.GuardIf(ir.Bin("==", RANK, ir.Const(r)), ir.Seq(tuple(stmts))))
    return out


def _exchange_kernel() -> ir.Kernel:
    """dsmem_exchange of design: S <- A[cta_rank]; fence; cluster_sync; arrive got; R(peer) <- S; wait; B[peer] <- R;
    cluster_sync — the IR the lowering of clusters produces, assembled by hand."""
    A, B = gbuf("A", "float32", (2, 64, 32)), gbuf("B", "float32", (2, 64, 32))
    S, R, got = sbuf("S", "float32", (64, 32)), sbuf("R", "float32", (64, 32)), mbar("got")
    tx0 = ir.Bin("==", ir.ThreadVar("tx"), ir.Const(0))
    load = _per_rank([_copy(region(S), region(A, (r, 0, 0), (1, 64, 32)), 7) for r in range(2)], A, B, S, R, got)
    store = _per_rank([_copy(region(B, (r ^ 1, 0, 0), (1, 64, 32)), region(R), 13) for r in range(2)],
                      A, B, S, R, got)
    dsm, rec = dispatch_op(copy_async_op(region(R), region(S), remote_cta_id=ir.Bin("^", RANK, ir.Const(1)),
                                         mbar=got, line=11), S, R, got, guard=tx0)
    assert rec.chosen == "dsmem"
    body = ir.Seq((
        ir.If(tx0, ir.Seq((ir.MbarInit(got, 1), ir.Fence("mbarrier_init")))), ir.ClusterSync(),
        *load, ir.Fence("proxy_async"), ir.ClusterSync(),
        ir.If(tx0, ir.MbarArrive(got, 8192)), ir.If(tx0, ir.Seq(tuple(dsm))),
        ir.MbarWait(got, 0), *store, ir.ClusterSync(),
    ))
    return ir.Kernel("dsmem_exchange_ir", 128, (A, B), (S, R, got), (), (), 0, None, body, cluster=2)


@needs_sm90
def test_our_cluster_launch_runs_the_dsmem_variant():
    k = _exchange_kernel()
    a = np.arange(2 * 64 * 32, dtype=np.float32).reshape(2, 64, 32)
    run = run_on_gpu(generate(k, arch="sm_90a"), None, {"A": a}, bench=True,
                     bench_sources=(generate(k, arch="sm_90a", grid=True), None), bench_bytes=64 << 20)
    np.testing.assert_array_equal(run.outputs["B"], a)
    t = run.timing
    assert t["cluster"] == 2 and t["ctas"] == 2 * t["clusters"] and t["bytes_per_launch"] == t["clusters"] * 2 * 16384


DSMEM_EXCHANGE = """\
kernel dsmem_exchange threads=128 cluster=2
global A: float32[2, 64, 32] = arange
global B: float32[2, 64, 32] = zeros
shared S: float32[64, 32]
shared R: float32[64, 32]
mbarrier got
wg.copy S <- A[cta_rank, 0:64, 0:32]
fence.proxy.async
cluster_sync
if tx == 0: arrive got expect_tx=auto
if tx == 0: thread.copy_async R <- S remote_cta_id=cta_rank^1 mbar=got
wait got phase 0
wg.copy B[cta_rank^1, 0:64, 0:32] <- R
cluster_sync
check B == A
"""


@needs_sm90
def test_the_dsmem_exchange_cell_on_the_gpu_equals_the_simulator():
    import tilemagic

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        gpu = tilemagic.tilecopy(DSMEM_EXCHANGE, launch="gpu", bench=True)
        sim = tilemagic.tilecopy(DSMEM_EXCHANGE, launch="sim")
    assert gpu.launch.passed and sim.launch.passed
    np.testing.assert_array_equal(gpu.launch.outputs["B"].view(np.uint32), sim.launch.outputs["B"].view(np.uint32))
    assert gpu.launch.timing["cluster"] == 2
