// tilemagic: kernel tcgen05_cp_roundtrip, 1 CTA x 128 threads, TMEM emulated in global memory (tilemagic/codegen/tmem_emulation.cuh)
// the asynchronous-copy synchronisation needs sm_90 or newer
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

// ---------------------------------------------------------------------------- tcgen05.cp (shared -> TMEM)
// (the code generator copies this section only into kernels that have a tcgen05.cp; it turns tcgen05.commit into a
// release arrive on its mbarrier, so the waiters' acquiring try_wait orders these global writes before their reads)
//
// tcgen05.cp.cta_group::1.<shape>[.<multicast>] [taddr], desc  (PTX ISA 9.0 §9.7.16.9.1), executed by the
// issuing thread at issue time: a legal refinement of the asynchronous copy, since until the thread's next
// tcgen05.commit has been observed nobody may read the destination nor write the source (§9.7.16.6).
//
// Shape codes: the order of tilemagic/arch/tcgen05.py CP_SHAPES (TVM 0.27's try order); the row -> lane maps and
// replicas are that table's (CUTLASS SM100_UTCCP_* / TVM _cp_lane_replica_pattern; the ISA gives them as figures).
enum { TM_CP_128x256b = 0, TM_CP_4x256b = 1, TM_CP_128x128b = 2, TM_CP_64x128b_02_13 = 3, TM_CP_64x128b_01_23 = 4,
       TM_CP_32x128b_warpx4 = 5 };

__device__ __forceinline__ uint32_t tm_cp_rows(int shape) {
  return shape == TM_CP_4x256b ? 4u : shape >= TM_CP_64x128b_02_13 ? (shape == TM_CP_32x128b_warpx4 ? 32u : 64u)
                                                                   : 128u;
}
__device__ __forceinline__ uint32_t tm_cp_chunks(int shape) {   // 16-byte chunks per row: 256b 2, 128b 1
  return shape <= TM_CP_4x256b ? 2u : 1u;
}
__device__ __forceinline__ uint32_t tm_cp_replicas(int shape) {
  return shape == TM_CP_32x128b_warpx4 ? 4u : shape >= TM_CP_64x128b_02_13 ? 2u : 1u;
}
// TMEM lane (relative to the address's lane) of source row r, replica k
__device__ __forceinline__ uint32_t tm_cp_lane(int shape, uint32_t r, uint32_t k) {
  switch (shape) {
    case TM_CP_4x256b:        return 32u * r;
    case TM_CP_64x128b_02_13: return r + 64u * k;
    case TM_CP_64x128b_01_23: return (r < 32u ? r : r + 32u) + 32u * k;
    case TM_CP_32x128b_warpx4: return r + 32u * k;
    default:                  return r;
  }
}

// 16 bytes of shared memory at a shared-window address.  A host build (the tests compile this file with g++)
// defines its own over a byte array; one that does not gets no tcgen05.cp emulation.
#if !defined(TM_EMU_LD_SHARED_V4) && (defined(__CUDACC__) || defined(__CUDACC_RTC__))
#define TM_EMU_LD_SHARED_V4(addr, w)                                                         \
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"                                   \
               : "=r"((w)[0]), "=r"((w)[1]), "=r"((w)[2]), "=r"((w)[3]) : "r"(addr) : "memory")
#endif
#ifdef TM_EMU_LD_SHARED_V4

// widen [lo, hi) to cover n bytes of shared memory at shared address a (the kernel's shared window, computed at
// run time from its buffers)
__device__ __forceinline__ void tm_emu_smem_span(uint32_t& lo, uint32_t& hi, uint32_t a, uint32_t n) {
  lo = a < lo ? a : lo;
  hi = a + n > hi ? a + n : hi;
}

// The descriptor (PTX ISA 9.0 §9.7.16.4.1, Table 40) decoded bit by bit, then the source walk of
// tilemagic/layout/smem_matrix.py cp_source_addresses restated in C (the one Python implementation; the tests
// hold the two equal, and both to an independent decoder from the ISA text, tests/reference/tcgen05_cp_ref.py):
// row r, chunk j at  start + (r % 8) * pitch + (r / 8) * SBO + j * (swizzled ? 16 : LBO),  then the swizzle XOR of
// the absolute address's bits [7, 7+B) into bits [4, 4+B) (PTX ISA 9.0 §5.5.7).  Its four little-endian 32-bit
// words go to columns col + 4j .. 4j+3 of lane lane + lane_of_row(r) + replica (arch/tcgen05.py cp_cells).
// [win_lo, win_hi): the CTA's shared window (the kernel's shared buffers); a chunk outside it is status 11.
__device__ __noinline__ void tm_emu_cp_at(const TmEmu& e, uint32_t taddr, uint64_t desc, int shape, uint32_t win_lo,
                                          uint32_t win_hi, int line) {
  uint32_t lane0 = (taddr >> 16) & 0xffffu, col0 = taddr & 0xffffu;
  if (col0 % 4u) { tm_emu_fail(e, 13, (int)col0, 0, 0, line); return; }
  uint32_t start = (uint32_t)(desc & 0x3FFFull) << 4;           // bits 0-13, 16-byte units
  uint32_t lbo = (uint32_t)((desc >> 16) & 0x3FFFull) << 4;     // bits 16-29
  uint32_t sbo = (uint32_t)((desc >> 32) & 0x3FFFull) << 4;     // bits 32-45
  uint32_t version = (uint32_t)((desc >> 46) & 7ull);           // bits 46-48: fixed 0b001
  uint32_t base_offset = (uint32_t)((desc >> 49) & 7ull);       // bits 49-51
  uint32_t lbo_mode = (uint32_t)((desc >> 52) & 1ull);          // bit 52
  uint32_t layout = (uint32_t)((desc >> 61) & 7ull);            // bits 61-63
  if (version != 1u || base_offset != 0u || !(layout == 0u || layout == 2u || layout == 4u || layout == 6u)) {
    tm_emu_fail(e, 10, (int)version, (int)layout, (int)base_offset, line);
    return;
  }
  if (lbo_mode != 0u) { tm_emu_fail(e, 14, (int)lbo_mode, 0, 0, line); return; }
  // row pitch and swizzle bits B by layout type (arch/smem_desc.py ROW_PITCH, SWIZZLE_BITS)
  uint32_t pitch = layout == 2u ? 128u : layout == 4u ? 64u : layout == 6u ? 32u : 16u;
  uint32_t bits = layout == 2u ? 3u : layout == 4u ? 2u : layout == 6u ? 1u : 0u;
  uint32_t rows = tm_cp_rows(shape), chunks = tm_cp_chunks(shape), reps = tm_cp_replicas(shape);
  for (uint32_t r = 0; r < rows; ++r) {
    for (uint32_t j = 0; j < chunks; ++j) {
      uint32_t a = start + (r % 8u) * pitch + (r / 8u) * sbo + j * (layout ? 16u : lbo);
      a ^= ((a >> 7) & ((1u << bits) - 1u)) << 4;
      if (a < win_lo || a + 16u > win_hi) { tm_emu_fail(e, 11, (int)a, (int)r, (int)j, line); return; }
      uint32_t w[4];
      TM_EMU_LD_SHARED_V4(a, w);
      for (uint32_t k = 0; k < reps; ++k) {
        uint32_t lane = lane0 + tm_cp_lane(shape, r, k);
        for (uint32_t q = 0; q < 4u; ++q) {
          uint32_t c = col0 + 4u * j + q;
          if (lane >= TM_LANES || c >= TM_COLS || ((e.state[0] >> (c / 32u)) & 1u) == 0u) {
            tm_emu_fail(e, 12, (int)r, (int)lane, (int)c, line);
            return;
          }
          e.mem[lane * TM_COLS + c] = w[q];
        }
      }
    }
  }
}
#define tm_emu_cp(e, taddr, desc, shape, win_lo, win_hi) \
  tm_emu_cp_at((e), (taddr), (desc), (shape), (win_lo), (win_hi), __LINE__)
#endif  // TM_EMU_LD_SHARED_V4

// TMEM address = lane << 16 | column; row/col immediates added per field (TVM get_tmem_addr)
__device__ __forceinline__ uint32_t get_tmem_addr(uint32_t base, uint32_t row, uint32_t col) {
  return ((((base >> 16) + row) & 0xFFFFu) << 16) | ((base + col) & 0xFFFFu);
}

extern "C" __global__ void __launch_bounds__(128) tcgen05_cp_roundtrip(__nv_bfloat16* __restrict__ A, __nv_bfloat16* __restrict__ B, uint32_t* __restrict__ tm_scratch, int* __restrict__ tm_status) {
    const int warpid = threadIdx.x / 32;
    const int tid_in_wg = threadIdx.x % 128;
    __shared__ __align__(1024) __nv_bfloat16 S[8192];
    __shared__ alignas(8) uint64_t done[1];  // mbarrier, count 1
    __shared__ __align__(16) uint32_t tmem_addr[1];
    __align__(16) __nv_bfloat16 r[64];
    const TmEmu tm = tm_emu_make(tm_scratch, tm_status, 0);
    // the CTA's shared window (tm_emu_cp's bounds): its shared buffers, wherever they were put
    uint32_t tm_smem_lo = 0xffffffffu, tm_smem_hi = 0u;
    tm_emu_smem_span(tm_smem_lo, tm_smem_hi, (uint32_t)__cvta_generic_to_shared(S), (uint32_t)sizeof(S));
    tm_emu_smem_span(tm_smem_lo, tm_smem_hi, (uint32_t)__cvta_generic_to_shared(done), (uint32_t)sizeof(done));
    tm_emu_smem_span(tm_smem_lo, tm_smem_hi, (uint32_t)__cvta_generic_to_shared(tmem_addr), (uint32_t)sizeof(tmem_addr));
    // mbarriers: thread 0 initialises done (count 1); fence; CTA barrier
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :  : "r"((uint32_t)__cvta_generic_to_shared(done)), "r"(1) : "memory");
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    __syncthreads();
    // TMEM: allocate 32 columns (warp 0), publish the address to the CTA
    if (warpid == 0) {
        tm_emu_alloc(tm, tmem_addr, 32u);
        tm_emu_relinquish(tm);
    }
    __threadfence_block();  // tcgen05.fence::before_thread_sync
    __syncthreads();
    __threadfence_block();  // tcgen05.fence::after_thread_sync
    // L10: wg.copy S <- A    [copy/gmem_smem]
    for (int i = 0; i < 8; ++i) {
        {
            uint32_t tm_v0, tm_v1, tm_v2, tm_v3;
            asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(tm_v0), "=r"(tm_v1), "=r"(tm_v2), "=r"(tm_v3) : "l"(A + i * 1024 + tid_in_wg * 8) : "memory");
            asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" :  : "r"((uint32_t)__cvta_generic_to_shared(S + ((i * 1024 + tid_in_wg * 8) ^ ((i * 1024 + tid_in_wg * 8) / 64 % 8 * 8)))), "r"(tm_v0), "r"(tm_v1), "r"(tm_v2), "r"(tm_v3) : "memory");
        }
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __threadfence_block();  // tcgen05.fence::before_thread_sync
    __syncthreads();
    __threadfence_block();  // tcgen05.fence::after_thread_sync
    // L15: if tx == 0: thread.copy_async T <- S    [copy_async/smem->tmem]
    if (threadIdx.x == 0) {
        {
            const uint64_t tm_desc = 0x4000404000010000ull | (uint64_t)((((uint32_t)__cvta_generic_to_shared(S) + 0u) >> 4) & 0x3FFFu);  // LBO 16 B, SBO 1024 B, layout type 2
            tm_emu_cp(tm, tmem_addr[0], tm_desc, 0, tm_smem_lo, tm_smem_hi);  // tcgen05.cp.cta_group::1.128x256b
        }
        {
            const uint64_t tm_desc = 0x4000404000010000ull | (uint64_t)((((uint32_t)__cvta_generic_to_shared(S) + 32u) >> 4) & 0x3FFFu);  // LBO 16 B, SBO 1024 B, layout type 2
            tm_emu_cp(tm, get_tmem_addr(tmem_addr[0], 0, 8), tm_desc, 0, tm_smem_lo, tm_smem_hi);  // tcgen05.cp.cta_group::1.128x256b
        }
        {
            const uint64_t tm_desc = 0x4000404000010000ull | (uint64_t)((((uint32_t)__cvta_generic_to_shared(S) + 64u) >> 4) & 0x3FFFu);  // LBO 16 B, SBO 1024 B, layout type 2
            tm_emu_cp(tm, get_tmem_addr(tmem_addr[0], 0, 16), tm_desc, 0, tm_smem_lo, tm_smem_hi);  // tcgen05.cp.cta_group::1.128x256b
        }
        {
            const uint64_t tm_desc = 0x4000404000010000ull | (uint64_t)((((uint32_t)__cvta_generic_to_shared(S) + 96u) >> 4) & 0x3FFFu);  // LBO 16 B, SBO 1024 B, layout type 2
            tm_emu_cp(tm, get_tmem_addr(tmem_addr[0], 0, 24), tm_desc, 0, tm_smem_lo, tm_smem_hi);  // tcgen05.cp.cta_group::1.128x256b
        }
    }
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];  // tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64" :  : "r"((uint32_t)__cvta_generic_to_shared(done)) : "memory");
    }
    asm volatile("{\n\t.reg .pred P1;\nTM_WAIT:\n\tmbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n\t@P1 bra TM_DONE;\n\tbra TM_WAIT;\nTM_DONE:\n\t}" :  : "r"((uint32_t)__cvta_generic_to_shared(done)), "r"(0) : "memory");
    __threadfence_block();  // tcgen05.fence::after_thread_sync
    // L22: wg.copy_async r <- T    [copy_async/tmem<->local]
    tm_emu_ldst(tm, 1, 0, 32, tmem_addr[0], ((uint32_t*)r) + 0, 0u);  // tcgen05.ld.sync.aligned.32x32b.x32.b32
    __threadfence_block();  // tcgen05.wait::ld (emulated ld/st complete at issue)
    // L24: wg.copy B <- r    [copy/reg]
    for (int i = 0; i < 8; ++i) {
        asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" :  : "l"(B + i * 8 + tid_in_wg * 64), "r"(((uint32_t*)r)[i * 4]), "r"(((uint32_t*)r)[i * 4 + 1]), "r"(((uint32_t*)r)[i * 4 + 2]), "r"(((uint32_t*)r)[i * 4 + 3]) : "memory");
    }
    // TMEM: free the 32 columns (the allocating warp)
    __threadfence_block();  // tcgen05.fence::before_thread_sync
    __syncthreads();
    __threadfence_block();  // tcgen05.fence::after_thread_sync
    if (warpid == 0) {
        tm_emu_dealloc(tm, tmem_addr[0], 32u);
    }
    tm_emu_exit_check(tm);
}
