"""Hardware probes for issue 13's clusters and TMA edges, run on the H200 (CuPy + cuda-bindings, no tilemagic).

Each probe prints one line ``PROBE name: result``.  What they establish (recorded in docs/gpu-runs.md):

1. a ``__cluster_dims__(2,1,1)`` kernel launched with CuPy's plain launch: ``%cluster_ctarank`` /
   ``%cluster_nctarank`` per block (grid 2 and grid 4);
2. dsmem: ``mapa.shared::cluster.u32`` + ``cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes``
   into the peer CTA, completing on the peer's mbarrier;
3. TMA multicast (``.multicast::cluster``) with mask 0b11, and with the one-bit mask 0b10 issued by CTA 0 (the
   data must land in CTA 1 only: TVM 0.27 emits the unicast form for it);
4. the bit pattern TMA writes for out-of-bounds elements with ``CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA``
   (fp16, bf16, fp32) and with the zero fill;
5. S2G clipping at the inner edge: which bytes past ``globalDim[0]`` an S2G box writes (per element, or up to the
   next 16-byte boundary as triton-lang/triton#11583 reports for H100);
6. ``cp.reduce.async.bulk.tensor ... .add`` on fp32 and fp16 (the reduced values).

Usage: ``python benchmarks/probes/h200_cluster_facts.py``
"""

from __future__ import annotations

import numpy as np

import cupy as cp
from cuda.bindings import driver as drv

PRELUDE = r"""
struct alignas(64) CUtensorMap_st { unsigned long long opaque[16]; };
typedef struct CUtensorMap_st CUtensorMap;
__device__ __forceinline__ unsigned smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ unsigned rank() {
  unsigned r; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); return r; }
__device__ __forceinline__ void csync() {
  asm volatile("barrier.cluster.arrive.aligned;\nbarrier.cluster.wait.aligned;" ::: "memory"); }
__device__ __forceinline__ void minit(unsigned long long* b, unsigned c) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem(b)), "r"(c) : "memory"); }
__device__ __forceinline__ void mexpect(unsigned long long* b, unsigned n) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(smem(b)), "r"(n) : "memory"); }
__device__ __forceinline__ void mwait(unsigned long long* b, unsigned p) {
  asm volatile("{\n.reg .pred q;\nW: mbarrier.try_wait.parity.shared::cta.b64 q, [%0], %1;\n@!q bra W;\n}"
               :: "r"(smem(b)), "r"(p) : "memory"); }
"""

SRC = PRELUDE + r"""
extern "C" __global__ void __cluster_dims__(2,1,1) ranks(unsigned* out) {
  unsigned r = rank(), n;
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
  if (threadIdx.x == 0) { out[2*blockIdx.x] = r; out[2*blockIdx.x+1] = n; }
}

// each CTA: S = its 64x32 fp32 tile of A; sends S to the peer's R; writes R to B[rank]
extern "C" __global__ void __cluster_dims__(2,1,1) dsmem(const float* A, float* B) {
  __shared__ alignas(128) float S[64*32];
  __shared__ alignas(128) float R[64*32];
  __shared__ alignas(8) unsigned long long bar;
  unsigned r = rank(), t = threadIdx.x;
  for (int i = t; i < 64*32; i += blockDim.x) S[i] = A[r*64*32 + i];
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  if (t == 0) { minit(&bar, 1); asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
  csync();
  if (t == 0) {
    mexpect(&bar, 64*32*4);
    unsigned peer = r ^ 1, dst, mb;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(dst) : "r"(smem(R)), "r"(peer));
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(mb) : "r"(smem(&bar)), "r"(peer));
    asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 :: "r"(dst), "r"(smem(S)), "r"(64*32*4), "r"(mb) : "memory");
  }
  mwait(&bar, 0);
  for (int i = t; i < 64*32; i += blockDim.x) B[r*64*32 + i] = R[i];
  csync();
}

// TMA multicast: map over A (128 x 64 fp16), box 64 x 64 (rows x cols); mode 0: each CTA loads rows
// [64r, 64r+64) into S rows [64r, ...) multicast to 0b11; mode 1: CTA 0 loads rows 0..63 with mask 0b10.
extern "C" __global__ void __cluster_dims__(2,1,1) mcast(const __grid_constant__ CUtensorMap m, unsigned short* B,
                                                         int mode) {
  __shared__ alignas(1024) unsigned short S[128*64];
  __shared__ alignas(8) unsigned long long bar;
  unsigned r = rank(), t = threadIdx.x;
  for (int i = t; i < 128*64; i += blockDim.x) S[i] = 0xBEEF;
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  if (t == 0) { minit(&bar, 1); asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
  csync();
  bool waits = (mode == 0) || (r == 1);
  if (t == 0 && waits) mexpect(&bar, mode == 0 ? 128*64*2 : 64*64*2);
  if (t == 0 && (mode == 0 || r == 0)) {
    unsigned short mask = mode == 0 ? 0x3 : 0x2;
    int row = mode == 0 ? 64 * r : 0;
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%2, %3}], [%4], %5;"
                 :: "r"(smem(S + row*64)), "l"(&m), "r"(0), "r"(row), "r"(smem(&bar)), "h"(mask) : "memory");
  }
  if (waits) mwait(&bar, 0);
  __syncthreads();
  for (int i = t; i < 128*64; i += blockDim.x) B[r*128*64 + i] = S[i];
  csync();
}

// OOB fill: map over an 8 x 8 tensor (element bytes eb), box 16 x 16 at (0, 0) -> S; copy S out
extern "C" __global__ void oob(const __grid_constant__ CUtensorMap m, unsigned char* out, int nbytes) {
  __shared__ alignas(1024) unsigned char S[16*16*4];
  __shared__ alignas(8) unsigned long long bar;
  unsigned t = threadIdx.x;
  if (t == 0) { minit(&bar, 1); asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
  __syncthreads();
  if (t == 0) {
    mexpect(&bar, nbytes);
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];" :: "r"(smem(S)), "l"(&m), "r"(0), "r"(0), "r"(smem(&bar)) : "memory");
  }
  mwait(&bar, 0);
  for (int i = t; i < nbytes; i += blockDim.x) out[i] = S[i];
}

// S2G (mode 0 store, 1 reduce-add): shared box 4 rows x 16 elements of `val` bits (eb bytes each) to (0, 0)
extern "C" __global__ void s2g(const __grid_constant__ CUtensorMap m, const unsigned char* src, int nbytes, int mode) {
  __shared__ alignas(1024) unsigned char S[4*16*4];
  unsigned t = threadIdx.x;
  for (int i = t; i < nbytes; i += blockDim.x) S[i] = src[i];
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  if (t == 0) {
    if (mode == 0)
      asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];"
                   :: "l"(&m), "r"(0), "r"(0), "r"(smem(S)) : "memory");
    else
      asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [%0, {%1, %2}], [%3];"
                   :: "l"(&m), "r"(0), "r"(0), "r"(smem(S)) : "memory");
    asm volatile("cp.async.bulk.commit_group;\ncp.async.bulk.wait_group 0;" ::: "memory");
  }
}
"""

DT = {np.float16: 6, np.float32: 7, "bf16": 9, np.uint16: 1}


def tmap(ptr: int, dtype_code: int, dims, strides, box, oob: int = 0):
    err, m = drv.cuTensorMapEncodeTiled(
        drv.CUtensorMapDataType(dtype_code), len(dims), ptr,
        [drv.cuuint64_t(d) for d in dims], [drv.cuuint64_t(s) for s in strides],
        [drv.cuuint32_t(b) for b in box], [drv.cuuint32_t(1) for _ in box],
        drv.CUtensorMapInterleave(0), drv.CUtensorMapSwizzle(0), drv.CUtensorMapL2promotion(2),
        drv.CUtensorMapFloatOOBfill(oob))
    assert int(err) == 0, err
    out = np.zeros(1, np.dtype({"names": ["opaque"], "formats": [(np.uint64, (16,))]}))
    out["opaque"][0] = np.array([int(w) for w in m.opaque], dtype=np.uint64)
    return out[0]


def main() -> None:
    drv.cuInit(0)
    mod = cp.RawModule(code=SRC, options=("-arch=sm_90a", "--std=c++17"))
    # 1. ranks
    for grid in (2, 4):
        o = cp.full(2 * grid, 99, cp.uint32)
        mod.get_function("ranks")((grid,), (32,), (o,))
        cp.cuda.runtime.deviceSynchronize()
        print(f"PROBE cluster_ranks grid={grid}: (rank, nctarank) per block = {o.get().reshape(-1, 2).tolist()}")
    # 2. dsmem
    A = cp.arange(2 * 64 * 32, dtype=cp.float32)
    B = cp.zeros_like(A)
    mod.get_function("dsmem")((2,), (128,), (A, B))
    cp.cuda.runtime.deviceSynchronize()
    a, b = A.get().reshape(2, -1), B.get().reshape(2, -1)
    print(f"PROBE dsmem_exchange: B[r] == A[r^1]: {bool((b[0] == a[1]).all() and (b[1] == a[0]).all())}")
    # 3. multicast
    Ah = cp.arange(128 * 64, dtype=cp.uint16)
    m = tmap(Ah.data.ptr, DT[np.uint16], (64, 128), (128,), (64, 64))
    for mode in (0, 1):
        Bh = cp.zeros(2 * 128 * 64, cp.uint16)
        mod.get_function("mcast")((2,), (128,), (m, Bh, np.int32(mode)))
        cp.cuda.runtime.deviceSynchronize()
        bh, ah = Bh.get().reshape(2, 128, 64), Ah.get().reshape(128, 64)
        if mode == 0:
            print(f"PROBE multicast_0b11: both CTAs hold all of A: {bool((bh[0] == ah).all() and (bh[1] == ah).all())}")
        else:
            cta1 = bool((bh[1, :64] == ah[:64]).all())
            cta0_untouched = bool((bh[0] == 0xBEEF).all())
            print(f"PROBE multicast_0b10_from_cta0: CTA 1 received rows 0..63: {cta1}; CTA 0's S untouched: "
                  f"{cta0_untouched}")
    # 4. OOB fill patterns
    for name, np_dt, code, eb in (("fp16", np.float16, 6, 2), ("bf16", np.uint16, 9, 2), ("fp32", np.float32, 7, 4)):
        for fill in (0, 1):
            g = cp.full(8 * 8, 0x3C00 if name == "fp16" else (0x3F80 if name == "bf16" else 0x3F800000),
                        dtype=cp.uint16 if eb == 2 else cp.uint32)
            mm = tmap(g.data.ptr, code, (8, 8), (8 * eb,), (16, 16), oob=fill)
            out = cp.zeros(16 * 16 * eb, cp.uint8)
            mod.get_function("oob")((1,), (128,), (mm, out, np.int32(16 * 16 * eb)))
            cp.cuda.runtime.deviceSynchronize()
            v = out.get().view(np.uint16 if eb == 2 else np.uint32).reshape(16, 16)
            inb = sorted({hex(int(x)) for x in v[:8, :8].ravel()})
            oobv = sorted({hex(int(x)) for x in np.concatenate([v[:8, 8:].ravel(), v[8:].ravel()])})
            print(f"PROBE oob_fill {name} fill={'nan' if fill else 'zero'}: in-bounds {inb}, out-of-bounds {oobv}")
    # 5. S2G clipping: tensor dims (10 cols, 4 rows) of fp16 inside a 16-col buffer; box 16 x 4 of 0x3C00
    for name, eb, code, cols in (("fp16", 2, 1, 10), ("fp16", 2, 1, 3), ("fp32", 4, 7, 5)):
        dtype = cp.uint16 if eb == 2 else cp.uint32
        g = cp.full(4 * 16, 0xAAAA if eb == 2 else 0xAAAAAAAA, dtype=dtype)
        mm = tmap(g.data.ptr, code, (cols, 4), (16 * eb,), (16, 4))
        src = cp.asarray(np.full(4 * 16, 0x1111 if eb == 2 else 0x11111111, dtype=np.uint16 if eb == 2 else np.uint32)
                         .view(np.uint8))
        mod.get_function("s2g")((1,), (128,), (mm, src, np.int32(4 * 16 * eb), np.int32(0)))
        cp.cuda.runtime.deviceSynchronize()
        row = g.get().reshape(4, 16)
        written = [int(c) for c in np.nonzero(row[0] != (0xAAAA if eb == 2 else 0xAAAAAAAA))[0]]
        print(f"PROBE s2g_clip {name} globalDim0={cols} ({cols * eb} B): columns written in row 0 = {written}")
    # 6. reduce add
    for name, eb, code, np_dt in (("fp32", 4, 7, np.float32), ("fp16", 2, 6, np.float16)):
        g = cp.asarray(np.arange(4 * 16, dtype=np_dt))
        mm = tmap(g.data.ptr, code, (16, 4), (16 * eb,), (16, 4))
        src = cp.asarray(np.full(4 * 16, 0.5, dtype=np_dt).view(np.uint8))
        mod.get_function("s2g")((1,), (128,), (mm, src, np.int32(4 * 16 * eb), np.int32(1)))
        cp.cuda.runtime.deviceSynchronize()
        ok = bool((g.get() == np.arange(4 * 16, dtype=np_dt) + np_dt(0.5)).all())
        print(f"PROBE reduce_add {name}: dst == dst0 + src: {ok}")


if __name__ == "__main__":
    main()
