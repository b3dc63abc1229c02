// tilemagic: kernel dsmem_exchange, clusters of 2 CTAs x 128 threads, no tcgen05: runs on any CUDA GPU of sm_90 or newer
// thread-block clusters (__cluster_dims__, %cluster_ctarank, barrier.cluster) need sm_90 or newer
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#ifdef __CUDACC_RTC__
#include <cuda/std/cstdint>
#else
#include <stdint.h>
#endif

extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(128) dsmem_exchange(float* __restrict__ A, float* __restrict__ B) {
    int cta_rank;
    asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(cta_rank));
    const int tid_in_wg = threadIdx.x % 128;
    __shared__ __align__(16) float S[2048];
    __shared__ __align__(16) float R[2048];
    __shared__ alignas(8) uint64_t got[1];  // mbarrier, count 1
    // mbarriers: thread 0 initialises got (count 1); fence; cluster barrier
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :  : "r"((uint32_t)__cvta_generic_to_shared(got)), "r"(1) : "memory");
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
    // L9: wg.copy S <- A[cta_rank, 0:64, 0:32]    [copy/gmem_smem]
    if (cta_rank == 0) {
        for (int i = 0; i < 4; ++i) {
            {
                uint32_t tm_v0, tm_v1, tm_v2, tm_v3;
                asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(tm_v0), "=r"(tm_v1), "=r"(tm_v2), "=r"(tm_v3) : "l"(A + i * 512 + tid_in_wg * 4) : "memory");
                asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" :  : "r"((uint32_t)__cvta_generic_to_shared(S + i * 512 + tid_in_wg * 4)), "r"(tm_v0), "r"(tm_v1), "r"(tm_v2), "r"(tm_v3) : "memory");
            }
        }
    }
    if (cta_rank == 1) {
        for (int i = 0; i < 4; ++i) {
            {
                uint32_t tm_v0, tm_v1, tm_v2, tm_v3;
                asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(tm_v0), "=r"(tm_v1), "=r"(tm_v2), "=r"(tm_v3) : "l"(A + i * 512 + tid_in_wg * 4 + 2048) : "memory");
                asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" :  : "r"((uint32_t)__cvta_generic_to_shared(S + i * 512 + tid_in_wg * 4)), "r"(tm_v0), "r"(tm_v1), "r"(tm_v2), "r"(tm_v3) : "memory");
            }
        }
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :  : "r"((uint32_t)__cvta_generic_to_shared(got)), "r"(8192) : "memory");  // expect_tx=auto: L15 8192 B
    }
    // L15: if tx == 0: thread.copy_async R <- S remote_cta_id=cta_rank^1 mbar=got    [copy_async/dsmem]
    if (threadIdx.x == 0) {
        asm volatile("{\n\t.reg .b32 tm_dst, tm_bar;\n\tmapa.shared::cluster.u32 tm_dst, %0, %2;\n\tmapa.shared::cluster.u32 tm_bar, %1, %2;\n\tcp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [tm_dst], [%3], %4, [tm_bar];\n\t}" :  : "r"((uint32_t)__cvta_generic_to_shared(R)), "r"((uint32_t)__cvta_generic_to_shared(got)), "r"((uint32_t)(cta_rank ^ 1)), "r"((uint32_t)__cvta_generic_to_shared(S)), "r"(8192) : "memory");
    }
    asm volatile("{\n\t.reg .pred P1;\nTM_WAIT:\n\tmbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n\t@P1 bra TM_DONE;\n\tbra TM_WAIT;\nTM_DONE:\n\t}" :  : "r"((uint32_t)__cvta_generic_to_shared(got)), "r"(0) : "memory");
    // L17: wg.copy B[cta_rank^1, 0:64, 0:32] <- R    [copy/gmem_smem]
    if (cta_rank == 0) {
        for (int i = 0; i < 4; ++i) {
            {
                uint32_t tm_v0, tm_v1, tm_v2, tm_v3;
                asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(tm_v0), "=r"(tm_v1), "=r"(tm_v2), "=r"(tm_v3) : "r"((uint32_t)__cvta_generic_to_shared(R + i * 512 + tid_in_wg * 4)) : "memory");
                asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" :  : "l"(B + i * 512 + tid_in_wg * 4 + 2048), "r"(tm_v0), "r"(tm_v1), "r"(tm_v2), "r"(tm_v3) : "memory");
            }
        }
    }
    if (cta_rank == 1) {
        for (int i = 0; i < 4; ++i) {
            {
                uint32_t tm_v0, tm_v1, tm_v2, tm_v3;
                asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(tm_v0), "=r"(tm_v1), "=r"(tm_v2), "=r"(tm_v3) : "r"((uint32_t)__cvta_generic_to_shared(R + i * 512 + tid_in_wg * 4)) : "memory");
                asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" :  : "l"(B + i * 512 + tid_in_wg * 4), "r"(tm_v0), "r"(tm_v1), "r"(tm_v2), "r"(tm_v3) : "memory");
            }
        }
    }
    asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
}
