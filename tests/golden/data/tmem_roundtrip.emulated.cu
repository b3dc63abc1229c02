// tilemagic: kernel tmem_roundtrip, 1 CTA x 128 threads, TMEM emulated in global memory (tilemagic/codegen/tmem_emulation.cuh)
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#ifdef __CUDACC_RTC__
#include <cuda/std/cstdint>
#else
#include <stdint.h>
#endif

// tilemagic TMEM emulation for GPUs without tensor memory (pre-Blackwell).
//
// The CTA's tensor memory (128 lanes x 512 columns of 32-bit cells, PTX ISA
// §9.7.16.1) lives in global memory: tm_scratch[lane * 512 + column], followed by
// TM_STATE_WORDS words of allocation state.  tcgen05.ld/st are executed
// synchronously at issue time (a legal refinement of their asynchronous
// semantics), each thread moving its own registers with the per-thread mapping
// of PTX ISA 9.0 §9.7.16.2.3 (the same closed form as tilemagic/arch/tcgen05.py and
// the CPU simulator).  The hardware takes the lane quadrant from the warp
// (warp_id % 4); the address's lane field selects within it.
//
// Errors are reported, not trapped: the first one wins tm_status[0] (codes in
// tilemagic/arch/tcgen05.py EMU_STATUS), details in tm_status[1..3], the CUDA line
// (__LINE__) of the failing call in tm_status[4] and that of the last allocation in
// tm_status[5] (the runtime maps them to description lines).  The calls are macros
// over the tm_emu_*_at functions so that they record their own line.
//
// tcgen05.alloc blocks until the columns are free (PTX ISA 9.0 §9.7.16.7.1).  The
// emulation does the same: a request that does not fit spins until another warp
// deallocates, which in a one-CTA kernel may be never (the launch's --timeout then
// ends it).  With --strict (e.strict) it is reported at once instead (status 3).

#define TM_LANES 128
#define TM_COLS 512
#define TM_STATE_WORDS 4   // [0] slot bitmap (16 slots of 32 columns), [1] relinquished, [2] allocating warp + 1,
                           // [3] bitmap of slots that start an allocation (what dealloc checks)

enum { TM_SHAPE_32x32b = 0, TM_SHAPE_16x64b = 1, TM_SHAPE_16x128b = 2, TM_SHAPE_16x256b = 3, TM_SHAPE_16x32bx2 = 4 };

struct TmEmu {
  uint32_t* mem;     // TM_LANES * TM_COLS cells
  uint32_t* state;   // TM_STATE_WORDS words
  int* status;       // [0] code, [1..3] details, [4] CUDA line of the failing call, [5] of the allocation
  int strict;        // 1: flag addresses whose quadrant bits differ from warp_id % 4, and report an alloc
                     //    that does not fit (status 3) instead of spinning like the hardware
};

__device__ __forceinline__ TmEmu tm_emu_make(uint32_t* scratch, int* status, int strict) {
  TmEmu e;
  e.mem = scratch;
  e.state = scratch + TM_LANES * TM_COLS;
  e.status = status;
  e.strict = strict;
  return e;
}

__device__ __forceinline__ uint32_t tm_linear_tid() {
  return threadIdx.x + threadIdx.y * blockDim.x + threadIdx.z * blockDim.x * blockDim.y;
}

__device__ __forceinline__ void tm_emu_fail(const TmEmu& e, int code, int a, int b, int c, int line) {
  if (atomicCAS(e.status, 0, code) == 0) {
    e.status[1] = a;
    e.status[2] = b;
    e.status[3] = c;
    e.status[4] = line;
  }
}

// every tcgen05 instruction is .sync.aligned: all 32 lanes of the warp execute it together.
// The code generator proves that statically for every call site outside a guard that splits a warp;
// only sites inside such a guard get this run-time check (emitted before the call).  It reports the
// warp's first inactive thread, as the simulator does.  (__activemask() is not a convergence
// guarantee on sm_70+, so it is never used where the warp is provably whole.)
__device__ __forceinline__ bool tm_emu_warp_check_at(const TmEmu& e, int line) {
  uint32_t mask = __activemask();
  if (mask != 0xffffffffu) {
    tm_emu_fail(e, 8, (int)((tm_linear_tid() & ~31u) + (uint32_t)(__ffs(~mask) - 1)), 0, 0, line);
    return false;
  }
  return true;
}
#define tm_emu_warp_check(e) tm_emu_warp_check_at((e), __LINE__)

// tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [dst], ncols  (executed by one whole warp)
__device__ void tm_emu_alloc_at(const TmEmu& e, uint32_t* dst, uint32_t ncols, int line) {
  if ((tm_linear_tid() & 31) == 0) {
    uint32_t warp = tm_linear_tid() >> 5;
    if (ncols < 32 || ncols > 512 || (ncols & (ncols - 1)) != 0) {
      tm_emu_fail(e, 1, (int)ncols, 0, 0, line);
    } else if (e.state[1]) {
      tm_emu_fail(e, 2, (int)ncols, (int)warp, 0, line);
    } else {
      uint32_t slots = ncols / 32, mask = (slots >= 32) ? 0xffffffffu : ((1u << slots) - 1u);
      volatile int* status = e.status;
      int found = -1;
      while (found < 0 && status[0] == 0) {
        uint32_t cur = atomicOr(&e.state[0], 0u);
        for (uint32_t s = 0; s + slots <= 16; s += slots) {   // aligned first fit
          if ((cur & (mask << s)) == 0) { found = (int)s; break; }
        }
        if (found >= 0 && atomicCAS(&e.state[0], cur, cur | (mask << found)) != cur) found = -1;  // raced: retry
        else if (found < 0 && e.strict) tm_emu_fail(e, 3, (int)ncols, 0, 0, line);
      }
      if (found >= 0) {
        atomicOr(&e.state[3], 1u << found);
        e.state[2] = warp + 1;
        e.status[5] = line;
        *dst = (uint32_t)found * 32u;   // lane field 0, column 32*slot
      }
    }
  }
  __syncwarp();
}
#define tm_emu_alloc(e, dst, ncols) tm_emu_alloc_at((e), (dst), (ncols), __LINE__)

// tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned
__device__ void tm_emu_relinquish_at(const TmEmu& e, int line) {
  if ((tm_linear_tid() & 31) == 0) e.state[1] = 1;
  __syncwarp();
}
#define tm_emu_relinquish(e) tm_emu_relinquish_at((e), __LINE__)

// tcgen05.dealloc.cta_group::1.sync.aligned.b32 taddr, ncols
__device__ void tm_emu_dealloc_at(const TmEmu& e, uint32_t taddr, uint32_t ncols, int line) {
  if ((tm_linear_tid() & 31) == 0) {
    uint32_t col = taddr & 0xffffu, slots = ncols / 32u;
    uint32_t mask = (slots >= 32) ? 0xffffffffu : ((1u << slots) - 1u);
    uint32_t warp = tm_linear_tid() >> 5;
    if ((ncols % 32u) != 0 || (col % 32u) != 0 || col / 32u + slots > 16u || ((e.state[3] >> (col / 32u)) & 1u) == 0u ||
        ((e.state[0] >> (col / 32u)) & mask) != mask) {
      tm_emu_fail(e, 4, (int)col, (int)ncols, 0, line);
    } else if (e.state[2] != warp + 1) {
      tm_emu_fail(e, 9, (int)warp, (int)e.state[2] - 1, 0, line);
    } else {
      atomicAnd(&e.state[0], ~(mask << (col / 32u)));
      atomicAnd(&e.state[3], ~(1u << (col / 32u)));
    }
  }
  __syncwarp();
}
#define tm_emu_dealloc(e, taddr, ncols) tm_emu_dealloc_at((e), (taddr), (ncols), __LINE__)

// (row, column) offset of register r of lane t for each shape (PTX ISA 9.0 §9.7.16.2.3, matrix fragments)
__device__ __forceinline__ void tm_cell(int shape, uint32_t t, uint32_t r, uint32_t split, uint32_t& row, uint32_t& col) {
  uint32_t q = t >> 2, p = t & 3u;
  switch (shape) {
    case TM_SHAPE_32x32b:  row = t;                        col = r;                                   break;
    case TM_SHAPE_16x64b:  row = q + 8u * (t & 1u);        col = ((t >> 1) & 1u) + 2u * r;            break;
    case TM_SHAPE_16x128b: row = q + 8u * (r & 1u);        col = p + 4u * (r >> 1);                   break;
    case TM_SHAPE_16x256b: row = q + 8u * ((r >> 1) & 1u); col = 2u * p + (r & 1u) + 8u * (r >> 2);   break;
    default:               row = t & 15u;                  col = r + (t >= 16u ? split : 0u);         break;
  }
}

__device__ __forceinline__ uint32_t tm_regs_per_num(int shape) {
  return shape == TM_SHAPE_16x128b ? 2u : (shape == TM_SHAPE_16x256b ? 4u : 1u);
}

// tcgen05.{ld,st}.sync.aligned.<shape>.x<num>.b32: regs[0 .. num*regs_per_num) <-> TMEM
// (__noinline__: one copy per kernel; inlining this loop at every call site made ptxas take ~15 s on a
// kernel with two 256-register .16x256b transfers, ~1.5 s out of line; same semantics)
__device__ __noinline__ void tm_emu_ldst_at(const TmEmu& e, int is_ld, int shape, int num, uint32_t taddr,
                                            uint32_t* regs, uint32_t split, int line) {
  uint32_t tid = tm_linear_tid(), t = tid & 31u, warp = tid >> 5;
  uint32_t lane_field = (taddr >> 16) & 0xffffu;
  if (e.strict && ((lane_field >> 5) & 3u) != 0u && ((lane_field >> 5) & 3u) != (warp & 3u)) {
    tm_emu_fail(e, 6, (int)tid, (int)((lane_field >> 5) & 3u), (int)warp, line);
    return;
  }
  uint32_t nregs = (uint32_t)num * tm_regs_per_num(shape);
  for (uint32_t r = 0; r < nregs; ++r) {
    uint32_t row, col;
    tm_cell(shape, t, r, split, row, col);
    uint32_t lane = 32u * (warp & 3u) + (lane_field & 31u) + row;
    uint32_t c = (taddr & 0xffffu) + col;
    if (lane >= TM_LANES || c >= TM_COLS || ((e.state[0] >> (c / 32u)) & 1u) == 0u) {
      tm_emu_fail(e, 5, (int)tid, (int)lane, (int)c, line);
      return;
    }
    if (is_ld) regs[r] = e.mem[lane * TM_COLS + c];
    else e.mem[lane * TM_COLS + c] = regs[r];
  }
}
#define tm_emu_ldst(e, is_ld, shape, num, taddr, regs, split) \
  tm_emu_ldst_at((e), (is_ld), (shape), (num), (taddr), (regs), (split), __LINE__)

// end of kernel: every allocated column must have been freed
__device__ void tm_emu_exit_check_at(const TmEmu& e, int line) {
  __syncthreads();
  if (tm_linear_tid() == 0 && e.state[0] != 0u) tm_emu_fail(e, 7, (int)e.state[0], 0, 0, line);
}
#define tm_emu_exit_check(e) tm_emu_exit_check_at((e), __LINE__)

extern "C" __global__ void __launch_bounds__(128) tmem_roundtrip(half* __restrict__ A, half* __restrict__ B, uint32_t* __restrict__ tm_scratch, int* __restrict__ tm_status) {
    const int warpid = threadIdx.x / 32;
    const int tid_in_wg = threadIdx.x % 128;
    __shared__ __align__(16) uint32_t tmem_addr[1];
    __align__(16) half a[8];
    __align__(16) half b[8];
    const TmEmu tm = tm_emu_make(tm_scratch, tm_status, 0);
    // TMEM: allocate 32 columns (warp 0), publish the address to the CTA
    if (warpid == 0) {
        tm_emu_alloc(tm, tmem_addr, 32u);
        tm_emu_relinquish(tm);
    }
    __threadfence_block();  // tcgen05.fence::before_thread_sync
    __syncthreads();
    __threadfence_block();  // tcgen05.fence::after_thread_sync
    // L8: wg.copy a <- A    [copy/reg]
    asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(((uint32_t*)a)[0]), "=r"(((uint32_t*)a)[1]), "=r"(((uint32_t*)a)[2]), "=r"(((uint32_t*)a)[3]) : "l"(A + tid_in_wg * 8) : "memory");
    // L9: wg.copy_async T <- a    [copy_async/tmem<->local]
    tm_emu_ldst(tm, 0, 0, 4, tmem_addr[0], ((uint32_t*)a) + 0, 0u);  // tcgen05.st.sync.aligned.32x32b.x4.b32
    __threadfence_block();  // tcgen05.wait::st (emulated ld/st complete at issue)
    __threadfence_block();  // tcgen05.fence::before_thread_sync
    __syncthreads();
    __threadfence_block();  // tcgen05.fence::after_thread_sync
    // L12: wg.copy_async b <- T    [copy_async/tmem<->local]
    tm_emu_ldst(tm, 1, 0, 4, tmem_addr[0], ((uint32_t*)b) + 0, 0u);  // tcgen05.ld.sync.aligned.32x32b.x4.b32
    __threadfence_block();  // tcgen05.wait::ld (emulated ld/st complete at issue)
    // L14: wg.copy B <- b    [copy/reg]
    asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" :  : "l"(B + tid_in_wg * 8), "r"(((uint32_t*)b)[0]), "r"(((uint32_t*)b)[1]), "r"(((uint32_t*)b)[2]), "r"(((uint32_t*)b)[3]) : "memory");
    // TMEM: free the 32 columns (the allocating warp)
    __threadfence_block();  // tcgen05.fence::before_thread_sync
    __syncthreads();
    __threadfence_block();  // tcgen05.fence::after_thread_sync
    if (warpid == 0) {
        tm_emu_dealloc(tm, tmem_addr[0], 32u);
    }
    tm_emu_exit_check(tm);
}
