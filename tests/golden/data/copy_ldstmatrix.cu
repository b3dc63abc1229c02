// tilemagic: kernel ldstmatrix_trans, 1 CTA x 32 threads, no tcgen05: runs on any CUDA GPU
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#ifdef __CUDACC_RTC__
#include <cuda/std/cstdint>
#else
#include <stdint.h>
#endif

extern "C" __global__ void __launch_bounds__(32) ldstmatrix_trans(half* __restrict__ A, half* __restrict__ B, half* __restrict__ C) {
    const int laneid = threadIdx.x % 32;
    __shared__ __align__(16) half S[256];
    __shared__ __align__(16) half U[256];
    __align__(16) half a[8];
    // L9: warp.copy S <- A    [copy/gmem_smem]
    {
        uint32_t tm_v0, tm_v1, tm_v2, tm_v3;
        asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(tm_v0), "=r"(tm_v1), "=r"(tm_v2), "=r"(tm_v3) : "l"(A + laneid * 8) : "memory");
        asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" :  : "r"((uint32_t)__cvta_generic_to_shared(S + laneid * 8)), "r"(tm_v0), "r"(tm_v1), "r"(tm_v2), "r"(tm_v3) : "memory");
    }
    __syncthreads();
    // L11: warp.copy a <- S    [copy/ldstmatrix]
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];" : "=r"(((uint32_t*)a)[0]), "=r"(((uint32_t*)a)[1]), "=r"(((uint32_t*)a)[2]), "=r"(((uint32_t*)a)[3]) : "r"((uint32_t)__cvta_generic_to_shared(S + laneid % 8 * 16 + laneid / 8 % 2 * 8 + laneid / 16 * 128)) : "memory");
    // L12: warp.copy B <- a    [copy/reg]
    for (int i = 0; i < 8; ++i) {
        asm volatile("st.global.u16 [%0], %1;" :  : "l"(B + i % 2 * 16 + i / 2 % 2 * 8 + i / 4 * 128 + laneid % 4 * 32 + laneid / 4), "h"(((uint16_t*)a)[i * 2 / 2]) : "memory");
    }
    // L13: warp.copy U <- a    [copy/ldstmatrix]
    asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};" :  : "r"((uint32_t)__cvta_generic_to_shared(U + laneid % 8 * 16 + laneid / 8 % 2 * 8 + laneid / 16 * 128)), "r"(((uint32_t*)a)[0]), "r"(((uint32_t*)a)[1]), "r"(((uint32_t*)a)[2]), "r"(((uint32_t*)a)[3]) : "memory");
    __syncthreads();
    // L15: warp.copy C <- U    [copy/gmem_smem]
    {
        uint32_t tm_v0, tm_v1, tm_v2, tm_v3;
        asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(tm_v0), "=r"(tm_v1), "=r"(tm_v2), "=r"(tm_v3) : "r"((uint32_t)__cvta_generic_to_shared(U + laneid * 8)) : "memory");
        asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" :  : "l"(C + laneid * 8), "r"(tm_v0), "r"(tm_v1), "r"(tm_v2), "r"(tm_v3) : "memory");
    }
}
