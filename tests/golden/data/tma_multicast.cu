// tilemagic: kernel tma_multicast, clusters of 2 CTAs x 128 threads, no tcgen05: runs on any CUDA GPU of sm_90 or newer
// thread-block clusters (__cluster_dims__, %cluster_ctarank, barrier.cluster) need sm_90 or newer
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#ifdef __CUDACC_RTC__
#include <cuda/std/cstdint>
#else
#include <stdint.h>
#endif

#if !defined(CUDA_VERSION)
struct alignas(64) CUtensorMap_st { unsigned long long opaque[16]; };
typedef struct CUtensorMap_st CUtensorMap;
#endif

extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(128) tma_multicast(half* __restrict__ A, half* __restrict__ B, const __grid_constant__ CUtensorMap A_tmap) {
    int cta_rank;
    asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(cta_rank));
    const int tid_in_wg = threadIdx.x % 128;
    __shared__ __align__(1024) half S[8192];
    __shared__ alignas(8) uint64_t full[1];  // mbarrier, count 1
    // mbarriers: thread 0 initialises full (count 1); fence; cluster barrier
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :  : "r"((uint32_t)__cvta_generic_to_shared(full)), "r"(1) : "memory");
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :  : "r"((uint32_t)__cvta_generic_to_shared(full)), "r"(16384) : "memory");  // expect_tx=auto: L10 16384 B
    }
    // L10: if tx == 0: thread.copy_async S[64*cta_rank : 64*cta_rank+64, 0:64] <- A[64*cta_rank : 64*cta_rank+64, 0:64] mbar=full cta_mask=0b11    [copy_async/tma_auto]
    if (cta_rank == 0) {
        if (threadIdx.x == 0) {
            asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;" :  : "r"((uint32_t)__cvta_generic_to_shared(S)), "l"((uint64_t)&A_tmap), "r"((int)0), "r"((int)0), "r"((uint32_t)__cvta_generic_to_shared(full)), "h"((uint16_t)0x3) : "memory");
        }
    }
    if (cta_rank == 1) {
        if (threadIdx.x == 0) {
            asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;" :  : "r"((uint32_t)__cvta_generic_to_shared((char*)S + 8192)), "l"((uint64_t)&A_tmap), "r"((int)0), "r"((int)64), "r"((uint32_t)__cvta_generic_to_shared(full)), "h"((uint16_t)0x3) : "memory");
        }
    }
    asm volatile("{\n\t.reg .pred P1;\nTM_WAIT:\n\tmbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n\t@P1 bra TM_DONE;\n\tbra TM_WAIT;\nTM_DONE:\n\t}" :  : "r"((uint32_t)__cvta_generic_to_shared(full)), "r"(0) : "memory");
    // L12: wg.copy B[128*cta_rank : 128*cta_rank+128, 0:64] <- S    [copy/gmem_smem]
    if (cta_rank == 0) {
        for (int i = 0; i < 8; ++i) {
            {
                uint32_t tm_v0, tm_v1, tm_v2, tm_v3;
                asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(tm_v0), "=r"(tm_v1), "=r"(tm_v2), "=r"(tm_v3) : "r"((uint32_t)__cvta_generic_to_shared(S + ((i * 1024 + tid_in_wg * 8) ^ ((i * 1024 + tid_in_wg * 8) / 64 % 8 * 8)))) : "memory");
                asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" :  : "l"(B + i * 1024 + tid_in_wg * 8), "r"(tm_v0), "r"(tm_v1), "r"(tm_v2), "r"(tm_v3) : "memory");
            }
        }
    }
    if (cta_rank == 1) {
        for (int i = 0; i < 8; ++i) {
            {
                uint32_t tm_v0, tm_v1, tm_v2, tm_v3;
                asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(tm_v0), "=r"(tm_v1), "=r"(tm_v2), "=r"(tm_v3) : "r"((uint32_t)__cvta_generic_to_shared(S + ((i * 1024 + tid_in_wg * 8) ^ ((i * 1024 + tid_in_wg * 8) / 64 % 8 * 8)))) : "memory");
                asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" :  : "l"(B + i * 1024 + tid_in_wg * 8 + 8192), "r"(tm_v0), "r"(tm_v1), "r"(tm_v2), "r"(tm_v3) : "memory");
            }
        }
    }
    asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
}
