// tilemagic: kernel tmem_roundtrip, 1 CTA x 128 threads, native tcgen05 inline PTX; build for sm_100a only (NVRTC -arch=sm_100a, or nvcc -gencode arch=compute_100a,code=sm_100a)
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#ifdef __CUDACC_RTC__
#include <cuda/std/cstdint>
#else
#include <stdint.h>
#endif

extern "C" __global__ void __launch_bounds__(128) tmem_roundtrip(half* __restrict__ A, half* __restrict__ B) {
    const int warpid = threadIdx.x / 32;
    const int tid_in_wg = threadIdx.x % 128;
    __shared__ __align__(16) uint32_t tmem_addr[1];
    __align__(16) half a[8];
    __align__(16) half b[8];
    // TMEM: allocate 32 columns (warp 0), publish the address to the CTA
    if (warpid == 0) {
        asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;" :  : "r"((uint32_t)__cvta_generic_to_shared(tmem_addr)), "r"(32) : "memory");
        asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;" ::: "memory");
    }
    asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");
    __syncthreads();
    asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
    // L8: wg.copy a <- A    [copy/reg]
    asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(((uint32_t*)a)[0]), "=r"(((uint32_t*)a)[1]), "=r"(((uint32_t*)a)[2]), "=r"(((uint32_t*)a)[3]) : "l"(A + tid_in_wg * 8) : "memory");
    // L9: wg.copy_async T <- a    [copy_async/tmem<->local]
    asm volatile("tcgen05.st.sync.aligned.32x32b.x4.b32 [%0], {%1, %2, %3, %4};" :  : "r"(tmem_addr[0]), "r"(((uint32_t*)a)[0]), "r"(((uint32_t*)a)[1]), "r"(((uint32_t*)a)[2]), "r"(((uint32_t*)a)[3]) : "memory");
    asm volatile("tcgen05.wait::st.sync.aligned;" ::: "memory");
    asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");
    __syncthreads();
    asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
    // L12: wg.copy_async b <- T    [copy_async/tmem<->local]
    asm volatile("tcgen05.ld.sync.aligned.32x32b.x4.b32 {%0, %1, %2, %3}, [%4];" : "=r"(((uint32_t*)b)[0]), "=r"(((uint32_t*)b)[1]), "=r"(((uint32_t*)b)[2]), "=r"(((uint32_t*)b)[3]) : "r"(tmem_addr[0]) : "memory");
    asm volatile("tcgen05.wait::ld.sync.aligned;" ::: "memory");
    // L14: wg.copy B <- b    [copy/reg]
    asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" :  : "l"(B + tid_in_wg * 8), "r"(((uint32_t*)b)[0]), "r"(((uint32_t*)b)[1]), "r"(((uint32_t*)b)[2]), "r"(((uint32_t*)b)[3]) : "memory");
    // TMEM: free the 32 columns (the allocating warp)
    asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");
    __syncthreads();
    asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
    if (warpid == 0) {
        asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;" :  : "r"(tmem_addr[0]), "r"(32) : "memory");
    }
}
