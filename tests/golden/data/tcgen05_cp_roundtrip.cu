// tilemagic: kernel tcgen05_cp_roundtrip, 1 CTA x 128 threads, native tcgen05 inline PTX; build for sm_100a only (NVRTC -arch=sm_100a, or nvcc -gencode arch=compute_100a,code=sm_100a)
// the asynchronous-copy synchronisation needs sm_90 or newer
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#ifdef __CUDACC_RTC__
#include <cuda/std/cstdint>
#else
#include <stdint.h>
#endif

// TMEM address = lane << 16 | column; row/col immediates added per field (TVM get_tmem_addr)
__device__ __forceinline__ uint32_t get_tmem_addr(uint32_t base, uint32_t row, uint32_t col) {
  return ((((base >> 16) + row) & 0xFFFFu) << 16) | ((base + col) & 0xFFFFu);
}

extern "C" __global__ void __launch_bounds__(128) tcgen05_cp_roundtrip(__nv_bfloat16* __restrict__ A, __nv_bfloat16* __restrict__ B) {
    const int warpid = threadIdx.x / 32;
    const int tid_in_wg = threadIdx.x % 128;
    __shared__ __align__(1024) __nv_bfloat16 S[8192];
    __shared__ alignas(8) uint64_t done[1];  // mbarrier, count 1
    __shared__ __align__(16) uint32_t tmem_addr[1];
    __align__(16) __nv_bfloat16 r[64];
    // mbarriers: thread 0 initialises done (count 1); fence; CTA barrier
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :  : "r"((uint32_t)__cvta_generic_to_shared(done)), "r"(1) : "memory");
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    __syncthreads();
    // TMEM: allocate 32 columns (warp 0), publish the address to the CTA
    if (warpid == 0) {
        asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;" :  : "r"((uint32_t)__cvta_generic_to_shared(tmem_addr)), "r"(32) : "memory");
        asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;" ::: "memory");
    }
    asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");
    __syncthreads();
    asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
    // L10: wg.copy S <- A    [copy/gmem_smem]
    for (int i = 0; i < 8; ++i) {
        {
            uint32_t tm_v0, tm_v1, tm_v2, tm_v3;
            asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(tm_v0), "=r"(tm_v1), "=r"(tm_v2), "=r"(tm_v3) : "l"(A + i * 1024 + tid_in_wg * 8) : "memory");
            asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" :  : "r"((uint32_t)__cvta_generic_to_shared(S + ((i * 1024 + tid_in_wg * 8) ^ ((i * 1024 + tid_in_wg * 8) / 64 % 8 * 8)))), "r"(tm_v0), "r"(tm_v1), "r"(tm_v2), "r"(tm_v3) : "memory");
        }
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");
    __syncthreads();
    asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
    // L15: if tx == 0: thread.copy_async T <- S    [copy_async/smem->tmem]
    if (threadIdx.x == 0) {
        {
            const uint64_t tm_desc = 0x4000404000010000ull | (uint64_t)((((uint32_t)__cvta_generic_to_shared(S) + 0u) >> 4) & 0x3FFFu);  // LBO 16 B, SBO 1024 B, layout type 2
            asm volatile("tcgen05.cp.cta_group::1.128x256b [%0], %1;" :  : "r"(tmem_addr[0]), "l"(tm_desc) : "memory");
        }
        {
            const uint64_t tm_desc = 0x4000404000010000ull | (uint64_t)((((uint32_t)__cvta_generic_to_shared(S) + 32u) >> 4) & 0x3FFFu);  // LBO 16 B, SBO 1024 B, layout type 2
            asm volatile("tcgen05.cp.cta_group::1.128x256b [%0], %1;" :  : "r"(get_tmem_addr(tmem_addr[0], 0, 8)), "l"(tm_desc) : "memory");
        }
        {
            const uint64_t tm_desc = 0x4000404000010000ull | (uint64_t)((((uint32_t)__cvta_generic_to_shared(S) + 64u) >> 4) & 0x3FFFu);  // LBO 16 B, SBO 1024 B, layout type 2
            asm volatile("tcgen05.cp.cta_group::1.128x256b [%0], %1;" :  : "r"(get_tmem_addr(tmem_addr[0], 0, 16)), "l"(tm_desc) : "memory");
        }
        {
            const uint64_t tm_desc = 0x4000404000010000ull | (uint64_t)((((uint32_t)__cvta_generic_to_shared(S) + 96u) >> 4) & 0x3FFFu);  // LBO 16 B, SBO 1024 B, layout type 2
            asm volatile("tcgen05.cp.cta_group::1.128x256b [%0], %1;" :  : "r"(get_tmem_addr(tmem_addr[0], 0, 24)), "l"(tm_desc) : "memory");
        }
    }
    if (threadIdx.x == 0) {
        asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];" :  : "r"((uint32_t)__cvta_generic_to_shared(done)) : "memory");
    }
    asm volatile("{\n\t.reg .pred P1;\nTM_WAIT:\n\tmbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n\t@P1 bra TM_DONE;\n\tbra TM_WAIT;\nTM_DONE:\n\t}" :  : "r"((uint32_t)__cvta_generic_to_shared(done)), "r"(0) : "memory");
    asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
    // L22: wg.copy_async r <- T    [copy_async/tmem<->local]
    asm volatile("tcgen05.ld.sync.aligned.32x32b.x32.b32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, [%32];" : "=r"(((uint32_t*)r)[0]), "=r"(((uint32_t*)r)[1]), "=r"(((uint32_t*)r)[2]), "=r"(((uint32_t*)r)[3]), "=r"(((uint32_t*)r)[4]), "=r"(((uint32_t*)r)[5]), "=r"(((uint32_t*)r)[6]), "=r"(((uint32_t*)r)[7]), "=r"(((uint32_t*)r)[8]), "=r"(((uint32_t*)r)[9]), "=r"(((uint32_t*)r)[10]), "=r"(((uint32_t*)r)[11]), "=r"(((uint32_t*)r)[12]), "=r"(((uint32_t*)r)[13]), "=r"(((uint32_t*)r)[14]), "=r"(((uint32_t*)r)[15]), "=r"(((uint32_t*)r)[16]), "=r"(((uint32_t*)r)[17]), "=r"(((uint32_t*)r)[18]), "=r"(((uint32_t*)r)[19]), "=r"(((uint32_t*)r)[20]), "=r"(((uint32_t*)r)[21]), "=r"(((uint32_t*)r)[22]), "=r"(((uint32_t*)r)[23]), "=r"(((uint32_t*)r)[24]), "=r"(((uint32_t*)r)[25]), "=r"(((uint32_t*)r)[26]), "=r"(((uint32_t*)r)[27]), "=r"(((uint32_t*)r)[28]), "=r"(((uint32_t*)r)[29]), "=r"(((uint32_t*)r)[30]), "=r"(((uint32_t*)r)[31]) : "r"(tmem_addr[0]) : "memory");
    asm volatile("tcgen05.wait::ld.sync.aligned;" ::: "memory");
    // L24: wg.copy B <- r    [copy/reg]
    for (int i = 0; i < 8; ++i) {
        asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" :  : "l"(B + i * 8 + tid_in_wg * 64), "r"(((uint32_t*)r)[i * 4]), "r"(((uint32_t*)r)[i * 4 + 1]), "r"(((uint32_t*)r)[i * 4 + 2]), "r"(((uint32_t*)r)[i * 4 + 3]) : "memory");
    }
    // TMEM: free the 32 columns (the allocating warp)
    asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");
    __syncthreads();
    asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
    if (warpid == 0) {
        asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;" :  : "r"(tmem_addr[0]), "r"(32) : "memory");
    }
}
