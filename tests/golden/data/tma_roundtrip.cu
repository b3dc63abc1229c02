// tilemagic: kernel tma_roundtrip, 1 CTA x 128 threads, no tcgen05: runs on any CUDA GPU
// the asynchronous-copy synchronisation needs sm_90 or newer
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

extern "C" __global__ void __launch_bounds__(128) tma_roundtrip(half* __restrict__ A, half* __restrict__ B, const __grid_constant__ CUtensorMap A_tmap, const __grid_constant__ CUtensorMap B_tmap) {
    __shared__ __align__(1024) half S[4096];
    __shared__ alignas(8) uint64_t full[1];  // mbarrier, count 1
    // mbarriers: thread 0 initialises full (count 1); fence; CTA barrier
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :  : "r"((uint32_t)__cvta_generic_to_shared(full)), "r"(1) : "memory");
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :  : "r"((uint32_t)__cvta_generic_to_shared(full)), "r"(8192) : "memory");  // expect_tx=auto: L9 8192 B
    }
    // L9: if tx == 0: thread.copy_async S <- A[64:128, 64:128] mbar=full    [copy_async/tma_auto]
    if (threadIdx.x == 0) {
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" :  : "r"((uint32_t)__cvta_generic_to_shared(S)), "l"((uint64_t)&A_tmap), "r"((int)64), "r"((int)64), "r"((uint32_t)__cvta_generic_to_shared(full)) : "memory");
    }
    asm volatile("{\n\t.reg .pred P1;\nTM_WAIT:\n\tmbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n\t@P1 bra TM_DONE;\n\tbra TM_WAIT;\nTM_DONE:\n\t}" :  : "r"((uint32_t)__cvta_generic_to_shared(full)), "r"(0) : "memory");
    // L11: if tx == 0: thread.copy_async B[64:128, 0:64] <- S    [copy_async/tma_auto]
    if (threadIdx.x == 0) {
        asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];" :  : "l"((uint64_t)&B_tmap), "r"((int)0), "r"((int)64), "r"((uint32_t)__cvta_generic_to_shared(S)) : "memory");
    }
    if (threadIdx.x == 0) {
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    }
    if (threadIdx.x == 0) {
        asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
}
