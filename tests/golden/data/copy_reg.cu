// tilemagic: kernel reg_frag, 1 CTA x 128 threads, no tcgen05: runs on any CUDA GPU
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#ifdef __CUDACC_RTC__
#include <cuda/std/cstdint>
#else
#include <stdint.h>
#endif

extern "C" __global__ void __launch_bounds__(128) reg_frag(__nv_bfloat16* __restrict__ A, __nv_bfloat16* __restrict__ B) {
    const int tid_in_wg = threadIdx.x % 128;
    __align__(16) __nv_bfloat16 a[16];
    // L6: wg.copy a <- A    [copy/reg]
    for (int i = 0; i < 4; ++i) {
        asm volatile("ld.global.v2.u32 {%0, %1}, [%2];" : "=r"(((uint32_t*)a)[i * 2]), "=r"(((uint32_t*)a)[i * 2 + 1]) : "l"(A + i % 2 * 256 + i / 2 * 16 + tid_in_wg % 4 * 4 + tid_in_wg / 4 % 8 * 32 + tid_in_wg / 32 * 512) : "memory");
    }
    // L7: wg.copy B <- a    [copy/reg]
    for (int i = 0; i < 4; ++i) {
        asm volatile("st.global.v2.u32 [%0], {%1, %2};" :  : "l"(B + i % 2 * 256 + i / 2 * 16 + tid_in_wg % 4 * 4 + tid_in_wg / 4 % 8 * 32 + tid_in_wg / 32 * 512), "r"(((uint32_t*)a)[i * 2]), "r"(((uint32_t*)a)[i * 2 + 1]) : "memory");
    }
}
