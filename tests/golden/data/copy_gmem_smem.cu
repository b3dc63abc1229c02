// tilemagic: kernel gmem_smem_swizzled, 1 CTA x 128 threads, no tcgen05: runs on any CUDA GPU
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#ifdef __CUDACC_RTC__
#include <cuda/std/cstdint>
#else
#include <stdint.h>
#endif

extern "C" __global__ void __launch_bounds__(128) gmem_smem_swizzled(half* __restrict__ A, half* __restrict__ B) {
    const int tid_in_wg = threadIdx.x % 128;
    __shared__ __align__(16) half S[512];
    // L6: wg.copy S <- A    [copy/gmem_smem]
    {
        uint32_t tm_v0, tm_v1;
        asm volatile("ld.global.v2.u32 {%0, %1}, [%2];" : "=r"(tm_v0), "=r"(tm_v1) : "l"(A + tid_in_wg * 4) : "memory");
        asm volatile("st.shared.v2.u32 [%0], {%1, %2};" :  : "r"((uint32_t)__cvta_generic_to_shared(S + ((tid_in_wg * 4) ^ (tid_in_wg * 4 / 64 % 8 * 8)))), "r"(tm_v0), "r"(tm_v1) : "memory");
    }
    __syncthreads();
    // L8: wg.copy B <- S    [copy/gmem_smem]
    {
        uint32_t tm_v0, tm_v1;
        asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];" : "=r"(tm_v0), "=r"(tm_v1) : "r"((uint32_t)__cvta_generic_to_shared(S + ((tid_in_wg * 4) ^ (tid_in_wg * 4 / 64 % 8 * 8)))) : "memory");
        asm volatile("st.global.v2.u32 [%0], {%1, %2};" :  : "l"(B + tid_in_wg * 4), "r"(tm_v0), "r"(tm_v1) : "memory");
    }
}
