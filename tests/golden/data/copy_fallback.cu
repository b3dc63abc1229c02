// tilemagic: kernel fallback_1x8, 1 CTA x 32 threads, no tcgen05: runs on any CUDA GPU
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#ifdef __CUDACC_RTC__
#include <cuda/std/cstdint>
#else
#include <stdint.h>
#endif

extern "C" __global__ void __launch_bounds__(32) fallback_1x8(float* __restrict__ A, float* __restrict__ B) {
    const int laneid = threadIdx.x % 32;
    __shared__ __align__(16) float S[8];
    // L6: warp.copy S <- A    [copy/fallback]
    if (laneid == 0) {
        for (int i = 0; i < 8; ++i) {
            S[i] = A[i];
        }
    }
    __syncthreads();
    // L8: warp.copy B <- S    [copy/fallback]
    if (laneid == 0) {
        for (int i = 0; i < 8; ++i) {
            B[i] = S[i];
        }
    }
}
