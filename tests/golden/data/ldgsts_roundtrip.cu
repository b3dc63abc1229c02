// tilemagic: kernel ldgsts_roundtrip, 1 CTA x 128 threads, no tcgen05: runs on any CUDA GPU
// the asynchronous-copy synchronisation needs sm_80 or newer
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#ifdef __CUDACC_RTC__
#include <cuda/std/cstdint>
#else
#include <stdint.h>
#endif

extern "C" __global__ void __launch_bounds__(128) ldgsts_roundtrip(half* __restrict__ A, half* __restrict__ B) {
    const int tid_in_wg = threadIdx.x % 128;
    __shared__ __align__(16) half S0[2048];
    __shared__ __align__(16) half S1[2048];
    // L8: wg.copy_async S0 <- A[0:32, :]    [copy_async/ldgsts]
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :  : "r"((uint32_t)__cvta_generic_to_shared(S0 + ((tid_in_wg * 8) ^ (tid_in_wg * 8 / 64 % 8 * 8)))), "l"(A + tid_in_wg * 8) : "memory");
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :  : "r"((uint32_t)__cvta_generic_to_shared(S0 + ((tid_in_wg * 8 + 1024) ^ ((tid_in_wg * 8 + 1024) / 64 % 8 * 8)))), "l"(A + tid_in_wg * 8 + 1024) : "memory");
    asm volatile("cp.async.commit_group;" ::: "memory");
    // L10: wg.copy_async S1 <- A[32:64, :]    [copy_async/ldgsts]
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :  : "r"((uint32_t)__cvta_generic_to_shared(S1 + ((tid_in_wg * 8) ^ (tid_in_wg * 8 / 64 % 8 * 8)))), "l"(A + tid_in_wg * 8 + 2048) : "memory");
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :  : "r"((uint32_t)__cvta_generic_to_shared(S1 + ((tid_in_wg * 8 + 1024) ^ ((tid_in_wg * 8 + 1024) / 64 % 8 * 8)))), "l"(A + tid_in_wg * 8 + 3072) : "memory");
    asm volatile("cp.async.commit_group;" ::: "memory");
    asm volatile("cp.async.wait_group 1;" ::: "memory");
    __syncthreads();
    // L14: wg.copy B[0:32, :] <- S0    [copy/gmem_smem]
    for (int i = 0; i < 2; ++i) {
        {
            uint32_t tm_v0, tm_v1, tm_v2, tm_v3;
            asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(tm_v0), "=r"(tm_v1), "=r"(tm_v2), "=r"(tm_v3) : "r"((uint32_t)__cvta_generic_to_shared(S0 + ((i * 1024 + tid_in_wg * 8) ^ ((i * 1024 + tid_in_wg * 8) / 64 % 8 * 8)))) : "memory");
            asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" :  : "l"(B + i * 1024 + tid_in_wg * 8), "r"(tm_v0), "r"(tm_v1), "r"(tm_v2), "r"(tm_v3) : "memory");
        }
    }
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    __syncthreads();
    // L17: wg.copy B[32:64, :] <- S1    [copy/gmem_smem]
    for (int i = 0; i < 2; ++i) {
        {
            uint32_t tm_v0, tm_v1, tm_v2, tm_v3;
            asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(tm_v0), "=r"(tm_v1), "=r"(tm_v2), "=r"(tm_v3) : "r"((uint32_t)__cvta_generic_to_shared(S1 + ((i * 1024 + tid_in_wg * 8) ^ ((i * 1024 + tid_in_wg * 8) / 64 % 8 * 8)))) : "memory");
            asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" :  : "l"(B + i * 1024 + tid_in_wg * 8 + 2048), "r"(tm_v0), "r"(tm_v1), "r"(tm_v2), "r"(tm_v3) : "memory");
        }
    }
}
