// tilemagic: kernel fallback_demo, 1 CTA x 32 threads, no tcgen05: runs on any CUDA GPU
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#ifdef __CUDACC_RTC__
#include <cuda/std/cstdint>
#else
#include <stdint.h>
#endif

extern "C" __global__ void __launch_bounds__(32) fallback_demo(float* __restrict__ A, float* __restrict__ B) {
    const int laneid = threadIdx.x % 32;
    __shared__ __align__(16) float A_smem[24];
    // L6: warp.copy A_smem <- A    [copy/fallback]
    if (laneid == 0) {
        for (int i = 0; i < 4; ++i) {
            for (int j = 0; j < 6; ++j) {
                A_smem[i * 6 + j] = A[i * 6 + j];
            }
        }
    }
    __syncthreads();
    // L8: warp.copy B <- A_smem    [copy/fallback]
    if (laneid == 0) {
        for (int i = 0; i < 4; ++i) {
            for (int j = 0; j < 6; ++j) {
                B[i * 6 + j] = A_smem[i * 6 + j];
            }
        }
    }
}
