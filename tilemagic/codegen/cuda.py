"""CUDA C++ from the IR: native tcgen05 inline PTX (sm_100a) or emulated TMEM.

``generate(kernel, mode="native")`` gives the source shown beside the IR and run
on CC 10.x GPUs (``-arch=sm_100a``).  ``mode="emulated"`` gives the same kernel
with every tcgen05 instruction replaced by a call into
``tmem_emulation.cuh`` (inlined into the source, so it is self-contained), TMEM
living in a global scratch buffer: that is what runs on pre-Blackwell GPUs.
Every line carries the description line it came from (``CudaSource.lines``).
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field, replace
from importlib import resources

import numpy as np

from ..caches import register_cache
from ..arch import tcgen05 as tc
from ..arch import tma as tma_hw
from ..arch.cluster import CTA_RANK, MIN_SM
from ..arch.mbarrier import MBAR_BYTES
from ..arch.ptx import VEC_FORMS, word_bytes
from ..arch.threads import axis_def
from ..ir import nodes as ir
from ..ir.evaluate import Undetermined, eval_static, issue_count, warp_uniform
from ..ir.printer import Lines, src_line, scale_index, thread_vars_used, uses_cta_rank

SHAPE_ID = {"32x32b": 0, "16x64b": 1, "16x128b": 2, "16x256b": 3, "16x32bx2": 4}
#: ``tm_emu_cp``'s shape codes (the ``TM_CP_*`` enum of tmem_emulation.cuh): the order of ``arch.tcgen05.CP_SHAPES``
CP_SHAPE_ID = {key: i for i, key in enumerate(tc.CP_SHAPES)}
TM_SCRATCH_WORDS = tc.TMEM_LANES * tc.TMEM_COLS + 4  # the TMEM cells, then TM_STATE_WORDS (4)

# C precedence: ^ binds looser than == (so it is parenthesised under a comparison)
_XOR_OPERAND = 7  # binds tighter than every operator: an XOR's non-atomic operands are parenthesised
_CPREC = {"&&": 1, "^": 2, "==": 3, "!=": 3, "<": 4, "<=": 4, ">": 4, ">=": 4, "+": 5, "-": 5, "*": 6, "/": 6, "%": 6}
_COP = {"//": "/", "and": "&&"}


@dataclass
class CudaSource:
    """A complete CUDA translation unit for one kernel.

    Attributes
    ----------
    text : str
    kernel_name : str
        Declared ``extern "C" __global__``.
    mode : {"native", "emulated"}
    params : tuple of Buffer
        Global buffers in argument order.
    extra_params : tuple of (name, dtype, n_elements)
        Trailing zero-initialised arguments the runtime allocates (emulated mode:
        ``tm_scratch`` uint32[128*512+4], ``tm_status`` int32[8]).
    threads : int
        Block size (1 CTA).
    grid : bool
        The ``--bench`` form: CTA ``blockIdx.x`` works on tile ``blockIdx.x`` of every
        buffer (global buffers and the emulation's extra arguments hold ``gridDim.x``
        tiles one after another); see :func:`generate`.
    reads, writes : tuple of str
        Global buffers the kernel reads / writes (``read_bytes`` / ``write_bytes`` are the
        bytes its instructions move there, the traffic a ``--bench`` launch counts per tile).
    lines : list of int or None
        For each line of ``text``, the description line it came from.
    uses_tcgen05 : bool
        The native source needs ``-arch=sm_100a`` (or another CC 10.x ``a`` target).
    tensormaps : tuple of TensorMap
        ``const __grid_constant__ CUtensorMap`` parameters after the global buffers, encoded by the launch (in
        the grid form each over the whole replicated buffer, one dimension more:
        :func:`tilemagic.runtime.tensormap.grid_map`).
    grid_refused : str or None
        ``generate(..., grid=True)`` of a kernel without a grid form (:func:`grid_refusal`): this is the
        single-CTA source (``grid`` False), and the reason ``--bench`` times one CTA.
    """

    text: str
    kernel_name: str
    mode: str
    params: tuple[ir.Buffer, ...]
    extra_params: tuple[tuple[str, str, int], ...]
    threads: int
    lines: list[int | None] = field(default_factory=list)
    uses_tcgen05: bool = False
    grid: bool = False
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    #: the kernel's tensor maps, in parameter order after the global buffers (the launch encodes each)
    tensormaps: tuple[ir.TensorMap, ...] = ()
    #: asked for the grid form but this kernel has none (:func:`grid_refusal`): the single-CTA source, and why
    grid_refused: str | None = None
    #: CTAs per cluster (:attr:`tilemagic.ir.nodes.Kernel.cluster`): the launch runs one cluster, the grid form
    #: one cluster per tile
    cluster: int = 1
    #: global bytes the kernel's instructions read and write in one launch (of one cluster):
    #: :func:`global_bytes`, what ``--bench`` counts as traffic per tile
    read_bytes: int = 0
    write_bytes: int = 0


def translation_unit(texts) -> str:
    """Several generated kernels as one CUDA translation unit (one compiler run for many kernels).

    Every source :func:`generate` writes is a prelude (banner, includes, the emulation device
    functions in emulated mode, ``get_tmem_addr`` when an instruction has a row/column immediate)
    followed by one ``extern "C" __global__`` kernel.  The prelude is emitted once — the one
    that defines ``get_tmem_addr`` if any source needs it — then every kernel.

    Parameters
    ----------
    texts : sequence of str
        Sources of one mode (all native or all emulated) with distinct kernel names.

    Raises
    ------
    ValueError
        Mixed modes, or two kernels with the same name.
    """
    prelude, kernels, names = None, [], set()
    for text in texts:
        i = text.index('extern "C"')
        head, body = text[:i], text[i:]
        if prelude is not None and ("tm_emu_ldst" in head) != ("tm_emu_ldst" in prelude):
            raise ValueError("translation_unit: native and emulated sources cannot share one unit")
        m = re.match(r'extern "C" __global__ void (?:__cluster_dims__\(\d+, 1, 1\) )?'
                     r'(?:__launch_bounds__\(\d+\) )?(\w+)', body)
        if m is None:
            raise ValueError("translation_unit: a source without an extern \"C\" __global__ kernel")
        name = m.group(1)
        if name in names:
            raise ValueError(f"translation_unit: kernel '{name}' appears twice")
        names.add(name)
        if prelude is None or ("get_tmem_addr(" in head and "get_tmem_addr(" not in prelude):
            prelude = head
        kernels.append(body)
    return (prelude or "") + "\n".join(kernels)


def uses_tcgen05(kernel: ir.Kernel) -> bool:
    return any(isinstance(s, (ir.TcgenLdSt, ir.TcgenAlloc, ir.TcgenWait, ir.TcgenFence, ir.TcgenDealloc,
                              ir.TcgenRelinquish, ir.TcgenCp, ir.TcgenCommit)) for s in ir.walk(kernel.body))


#: where the tcgen05.cp section of ``tmem_emulation.cuh`` starts: it runs to the end of the file and is copied only
#: into the emulated source of a kernel with a ``tcgen05.cp``
_CP_SECTION = "// ---------------------------------------------------------------------------- tcgen05.cp"


@functools.lru_cache(maxsize=1)
def emulation_header() -> str:
    """The text of ``tmem_emulation.cuh`` (read once per process)."""
    return resources.files("tilemagic.codegen").joinpath("tmem_emulation.cuh").read_text()


register_cache("codegen.cuda", emulation_header.cache_clear, "the text of tmem_emulation.cuh")


def cexpr(e: ir.Expr, prec: int = 0) -> str:
    if isinstance(e, ir.Const):
        return str(e.value)
    if isinstance(e, ir.ThreadVar):
        return "threadIdx.x" if e.kind == "tx" else e.kind
    if isinstance(e, ir.LoopVar):
        return e.name
    if isinstance(e, ir.Load):
        return f"{e.buf.name}[{cexpr(e.buf.index_expr(e.indices))}]"
    if isinstance(e, ir.Bin):
        op = _COP.get(e.op, e.op)
        p = _CPREC[op]
        if op == "^":  # a swizzle: each non-atomic side bracketed, as the printed IR does (`t ^ (t / 64 % 8 * 8)`)
            s = f"{cexpr(e.a, _XOR_OPERAND)} ^ {cexpr(e.b, _XOR_OPERAND)}"
        else:
            s = f"{cexpr(e.a, p)} {op} {cexpr(e.b, p + 1)}"
        return f"({s})" if p < prec else s
    raise TypeError(e)


def _words(buf: ir.Buffer, index: ir.Expr, nbytes: int):
    """C lvalues of the register words of ``buf`` covering ``nbytes`` from element ``index``."""
    n = VEC_FORMS[nbytes][1]
    wbytes = word_bytes(nbytes)
    ctype = f"uint{wbytes * 8}_t"
    base = scale_index(index, buf.elem_bytes, wbytes)
    return [f"(({ctype}*){buf.name})[{cexpr(ir.add(base, k))}]" for k in range(n)]


def _addr_operand(buf: ir.Buffer, index: ir.Expr):
    ptr = f"{buf.name} + {cexpr(index, 4)}" if not (isinstance(index, ir.Const) and index.value == 0) else buf.name
    if buf.scope == "shared":
        return '"r"((uint32_t)__cvta_generic_to_shared(' + ptr + "))"
    return f'"l"({ptr})'


def _asm(L: Lines, text: str, outs, ins, src, clobber=True):
    o = ", ".join(outs)
    i = ", ".join(ins)
    tail = ' : "memory"' if clobber else ""
    L.add(f'asm volatile("{text}" : {o} : {i}{tail});', src)


def _vecmove(L: Lines, s: ir.VecMove, src):
    form, n, cons = VEC_FORMS[s.nbytes]
    regs_list = ", ".join(f"%{k}" for k in range(n))
    regs_list = f"{{{regs_list}}}" if n > 1 else regs_list
    if s.dst.scope == "local" and s.src.scope != "local":
        outs = _words(s.dst, s.dst_index, s.nbytes)
        if s.nbytes == 1:
            L.add("{", src)
            L.depth += 1
            L.add("uint16_t tm_v;", src)  # tm_ names are reserved: no user buffer can be shadowed
            _asm(L, f"ld.{s.src.scope}.u8 %0, [%1];", ['"=h"(tm_v)'], [_addr_operand(s.src, s.src_index)], src)
            L.add(f"{outs[0]} = (uint8_t)tm_v;", src)
            L.depth -= 1
            L.add("}", src)
            return
        _asm(L, f"ld.{s.src.scope}.{form} {regs_list}, [%{n}];", [f'"={cons}"({w})' for w in outs],
             [_addr_operand(s.src, s.src_index)], src)
    elif s.src.scope == "local" and s.dst.scope != "local":
        ins = _words(s.src, s.src_index, s.nbytes)
        if s.nbytes == 1:
            ins = [f"(uint16_t){ins[0]}"]
        shifted = ", ".join(f"%{k + 1}" for k in range(n))
        shifted = f"{{{shifted}}}" if n > 1 else shifted
        _asm(L, f"st.{s.dst.scope}.{form} [%0], {shifted};", [],
             [_addr_operand(s.dst, s.dst_index)] + [f'"{cons}"({w})' for w in ins], src)
    else:  # global <-> shared (gmem_smem): through registers, one ld and one st
        ctype = "uint16_t" if cons == "h" else "uint32_t"
        tmps = [f"tm_v{k}" for k in range(n)]
        L.add("{", src)
        L.depth += 1
        L.add(f"{ctype} {', '.join(tmps)};", src)  # tm_ names are reserved: no user buffer is shadowed
        _asm(L, f"ld.{s.src.scope}.{form} {regs_list}, [%{n}];", [f'"={cons}"({w})' for w in tmps],
             [_addr_operand(s.src, s.src_index)], src)
        shifted = ", ".join(f"%{k + 1}" for k in range(n))
        shifted = f"{{{shifted}}}" if n > 1 else shifted
        _asm(L, f"st.{s.dst.scope}.{form} [%0], {shifted};", [],
             [_addr_operand(s.dst, s.dst_index)] + [f'"{cons}"({w})' for w in tmps], src)
        L.depth -= 1
        L.add("}", src)


def _ldstmatrix(L: Lines, s: ir.LdStMatrix, src):
    regs = [f"((uint32_t*){s.local.name})[{cexpr(r)}]" for r in s.regs]
    addr = _addr_operand(s.smem, s.addr)
    n = s.num
    if s.op == "ld":
        reglist = ", ".join(f"%{k}" for k in range(n))
        _asm(L, f"{s.chain} {{{reglist}}}, [%{n}];", [f'"=r"({r})' for r in regs], [addr], src)
    else:
        shifted = ", ".join(f"%{k + 1}" for k in range(n))
        _asm(L, f"{s.chain} [%0], {{{shifted}}};", [], [addr] + [f'"r"({r})' for r in regs], src)


def _cp_async(L: Lines, s: ir.CpAsync, src):
    """``cp.async.{cg,ca}.shared.global [dst], [src], 16|8|4;`` (PTX ISA 9.0 §9.7.9.25.3.1): the shared
    destination as a 32-bit ``cvta``'d address, the global source as a 64-bit pointer."""
    _asm(L, f"{s.chain} [%0], [%1], {s.nbytes};", [],
         [_addr_operand(s.dst, s.dst_index), _addr_operand(s.src, s.src_index)], src)


def _tcgen_native(L: Lines, s, src):
    if isinstance(s, ir.TcgenAlloc):
        _asm(L, "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;", [],
             [f'"r"((uint32_t)__cvta_generic_to_shared({s.addr.name}))', f'"r"({s.ncols})'], src)
    elif isinstance(s, ir.TcgenRelinquish):
        L.add('asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;" ::: "memory");', src)
    elif isinstance(s, ir.TcgenDealloc):
        _asm(L, "tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;", [],
             [f'"r"({s.addr.name}[0])', f'"r"({s.ncols})'], src)
    elif isinstance(s, ir.TcgenFence):
        L.add(f'asm volatile("tcgen05.fence::{s.kind};" ::: "memory");', src)
    elif isinstance(s, ir.TcgenWait):
        L.add(f'asm volatile("tcgen05.wait::{s.kind}.sync.aligned;" ::: "memory");', src)
    elif isinstance(s, ir.TcgenCp):
        _cp_block(L, s, src, lambda: _asm(L, f"{s.chain} [%0], %1;", [], [f'"r"({_taddr(s)})', '"l"(tm_desc)'], src))
    elif isinstance(s, ir.TcgenCommit):
        bar = _shared_addr(s.bar)
        if s.cta_mask is None:
            _asm(L, f"{s.chain} [%0];", [], [bar], src)
        else:
            _asm(L, f"{s.chain} [%0], %1;", [], [bar, f'"h"((uint16_t){s.cta_mask:#x})'], src)
    elif isinstance(s, ir.TcgenLdSt):
        addr = _taddr(s)
        n = s.regs
        regs = [f"((uint32_t*){s.local.name})[{s.reg_base + i}]" for i in range(n)]
        reglist = ", ".join(f"%{k}" for k in range(n))
        if s.op == "ld":
            _asm(L, f"{s.chain} {{{reglist}}}, [%{n}];", [f'"=r"({r})' for r in regs], [f'"r"({addr})'], src)
        else:
            shifted = ", ".join(f"%{k + 1}" for k in range(n))
            _asm(L, f"{s.chain} [%0], {{{shifted}}};", [], [f'"r"({addr})'] + [f'"r"({r})' for r in regs], src)


def _cp_block(L: Lines, s: ir.TcgenCp, src, issue) -> None:
    """``{ const uint64_t tm_desc = ...; <issue> }``: the descriptor of one ``tcgen05.cp`` built at run time as
    TVM 0.27 does (``apache-tvm 0.27.0.post1``, ``tcgen05_cp.py``): the template of the fields known statically
    (LBO, SBO, layout type; version 1, base offset 0, LBO mode 0: ``arch.smem_desc.encode`` with start 0) OR the
    matrix start address ``((cvta(&smem[0]) + smem_offset) >> 4) & 0x3FFF`` in bits 0-13 (PTX ISA 9.0
    §9.7.16.4.1)."""
    from ..arch.smem_desc import encode

    template = encode(0, s.lbo, s.sbo, s.layout)
    L.add("{", src)
    L.depth += 1
    L.add(f"const uint64_t tm_desc = {template:#x}ull | (uint64_t)((((uint32_t)__cvta_generic_to_shared({s.smem.name})"
          f" + {s.smem_offset}u) >> 4) & 0x3FFFu);  // LBO {s.lbo} B, SBO {s.sbo} B, layout type {s.layout}", src)
    issue()
    L.depth -= 1
    L.add("}", src)


def _commit_emulated(L: Lines, s: ir.TcgenCommit, src) -> None:
    """``tcgen05.commit`` emulated: the thread's emulated ``tcgen05.cp`` already wrote TMEM (global memory) in
    program order, so the commit is an arrive with release semantics on the barrier
    (``mbarrier.arrive.release.cta.shared::cta.b64``, PTX ISA 9.0 §9.7.13.15; sm_90): the waiter's acquiring
    ``mbarrier.try_wait.parity`` (§9.7.13.15.16) synchronizes with it (release and acquire patterns of the memory
    consistency model, PTX ISA 9.0 §8), so the emulated TMEM writes happen before the waiter's reads.  The
    multicast form (``cta_mask``): the arrive on the barrier of every CTA of the mask, mapped with
    ``mapa.shared::cluster`` (§9.7.9.23), with ``.release.cluster`` scope."""
    if s.cta_mask is None:
        _asm(L, "mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];  // " + s.chain, [], [_shared_addr(s.bar)], src)
        return
    for rank in range(16):
        if s.cta_mask >> rank & 1:
            _asm(L, "{\\n\\t.reg .b32 tm_bar;\\n\\tmapa.shared::cluster.u32 tm_bar, %0, %1;\\n\\t"
                    "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [tm_bar];\\n\\t}",
                 [], [_shared_addr(s.bar), f'"r"({rank})'], src)
            L.rows[-1] = (L.rows[-1][0] + f"  // {s.chain}, CTA rank {rank} of mask {s.cta_mask:#x}", src)


def _taddr(s):
    if s.row == 0 and s.col == 0:
        return f"{s.addr.name}[0]"
    return f"get_tmem_addr({s.addr.name}[0], {s.row}, {s.col})"


def _warp_check(L: Lines, src):
    """Before an emulated ``.sync.aligned`` tcgen05 instruction inside a guard that splits a
    warp (``ir.evaluate.warp_uniform`` false): the run-time full-warp check.  Elsewhere every
    lane of the warp provably reaches the call, so no check is emitted (``__activemask()`` is
    no convergence guarantee on sm_70+: it would report false partial warps)."""
    if L.lane_guards:
        L.add("tm_emu_warp_check(tm);  // inside a guard that splits a warp: .sync.aligned needs all 32 lanes",
              src)


def _tcgen_emulated(L: Lines, s, src):
    if isinstance(s, (ir.TcgenAlloc, ir.TcgenRelinquish, ir.TcgenDealloc, ir.TcgenLdSt)):
        _warp_check(L, src)
    if isinstance(s, ir.TcgenAlloc):
        L.add(f"tm_emu_alloc(tm, {s.addr.name}, {s.ncols}u);", src)
    elif isinstance(s, ir.TcgenRelinquish):
        L.add("tm_emu_relinquish(tm);", src)
    elif isinstance(s, ir.TcgenDealloc):
        L.add(f"tm_emu_dealloc(tm, {s.addr.name}[0], {s.ncols}u);", src)
    elif isinstance(s, ir.TcgenFence):
        # Emulated TMEM is global memory written and read by ordinary instructions, and every cross-thread
        # hand-off of it goes through an mbarrier (release arrive, acquiring try_wait) or a barrier: those already
        # order the accesses (the memory consistency model, PTX ISA 9.0 §8).  The fence therefore needs to be no
        # more than a compiler barrier; fence.sc.cta (__threadfence_block) is kept because it is also a hardware
        # fence at CTA scope, which is what tcgen05.fence::{before,after}_thread_sync promise across the thread
        # synchronisation (§9.7.16.6.4).
        L.add(f"__threadfence_block();  // tcgen05.fence::{s.kind}", src)
    elif isinstance(s, ir.TcgenCp):
        _cp_block(L, s, src, lambda: L.add(
            f"tm_emu_cp(tm, {_taddr(s)}, tm_desc, {CP_SHAPE_ID[s.key]}, tm_smem_lo, tm_smem_hi);  // {s.chain}", src))
    elif isinstance(s, ir.TcgenCommit):
        _commit_emulated(L, s, src)
    elif isinstance(s, ir.TcgenWait):
        L.add(f"__threadfence_block();  // tcgen05.wait::{s.kind} (emulated ld/st complete at issue)", src)
    elif isinstance(s, ir.TcgenLdSt):
        L.add(f"tm_emu_ldst(tm, {1 if s.op == 'ld' else 0}, {SHAPE_ID[s.shape]}, {s.num}, {_taddr(s)}, "
              f"((uint32_t*){s.local.name}) + {s.reg_base}, 0u);  // {s.chain}", src)


def _stmt(L: Lines, s: ir.Stmt, mode: str):
    src = s.span.line if s.span else None
    if isinstance(s, ir.Seq):
        for c in s.body:
            _stmt(L, c, mode)
    elif isinstance(s, ir.Comment):
        L.add(f"// {s.text}", src)
    elif isinstance(s, ir.If):
        splits = not warp_uniform(s.cond, L.threads)
        L.add(f"if ({cexpr(s.cond)}) {{", src)
        L.depth += 1
        L.lane_guards += splits
        _stmt(L, s.then, mode)
        L.lane_guards -= splits
        L.depth -= 1
        L.add("}", src)
    elif isinstance(s, ir.Grid):
        for v, ext in zip(s.vars, s.extents):
            L.add(f"for (int {v.name} = 0; {v.name} < {ext}; ++{v.name}) {{", src)
            L.depth += 1
        _stmt(L, s.body, mode)
        for _ in s.vars:
            L.depth -= 1
            L.add("}", src)
    elif isinstance(s, ir.Store):
        L.add(f"{s.buf.name}[{cexpr(s.buf.index_expr(s.indices))}] = {cexpr(s.value)};", src)
    elif isinstance(s, ir.VecMove):
        _vecmove(L, s, src)
    elif isinstance(s, ir.LdStMatrix):
        _ldstmatrix(L, s, src)
    elif isinstance(s, ir.CpAsync):
        _cp_async(L, s, src)
    elif isinstance(s, ir.Barrier):
        L.add("__syncthreads();", src)
    elif isinstance(s, ir.ClusterSync):
        _cluster_sync(L, src)
    elif isinstance(s, ir.TmaCopy):
        _tma_copy(L, s, src)
    elif isinstance(s, ir.BulkCopy):
        _bulk_copy(L, s, src)
    elif isinstance(s, MBAR_SYNC_NODES):
        _mbar_sync(L, s, src)
    else:
        (_tcgen_native if mode == "native" else _tcgen_emulated)(L, s, src)


def _refuse_cta_pair(kernel: ir.Kernel) -> None:
    """Raise for a ``tcgen05.cp`` / ``tcgen05.commit`` of ``.cta_group::2``: not generated in this round."""
    from ..errors import LoweringError

    for s in ir.walk(kernel.body):
        if isinstance(s, (ir.TcgenCp, ir.TcgenCommit)) and s.cta_group != 1:
            raise LoweringError(
                f"{s.chain}: cta_group::2 (a CTA pair's TMEM) is not generated yet",
                s.span, hint="use cta_group=1: TMEM in cluster kernels is not simulated or emulated yet, so the "
                             "CUDA of a CTA pair could not be checked against the simulator")


def _cluster_sync(L: Lines, src) -> None:
    """``barrier.cluster.arrive.aligned; barrier.cluster.wait.aligned`` (PTX ISA 9.0 §9.7.13.3; sm_90): every
    thread of every CTA of the cluster arrives (release) and waits (acquire) — TIRx ``T.cuda.cluster_sync()``."""
    L.add('asm volatile("barrier.cluster.arrive.aligned;\\n\\tbarrier.cluster.wait.aligned;" ::: "memory");', src)


def _cluster_decls(L: Lines, kernel: ir.Kernel) -> None:
    """The CTA's rank in its cluster, read once (``%cluster_ctarank``, PTX ISA 9.0 §10.16; sm_90), as the thread
    axes are; 0 in a kernel without a cluster (which has no such register before sm_90)."""
    if not uses_cta_rank(kernel):
        return
    if kernel.cluster > 1:
        L.add(f"int {CTA_RANK};")
        L.add(f'asm("mov.u32 %0, %%cluster_ctarank;" : "=r"({CTA_RANK}));')
    else:
        L.add(f"const int {CTA_RANK} = 0;  // one CTA, no cluster")


def _shared_addr(buf: ir.Buffer, byte_offset: int = 0) -> str:
    ptr = f"(char*){buf.name} + {byte_offset}" if byte_offset else buf.name
    return f'"r"((uint32_t)__cvta_generic_to_shared({ptr}))'


class _KernelLines(Lines):
    """The generator's lines, plus whether they are the ``--bench`` grid form (:func:`generate`)."""

    def __init__(self, threads: int, grid: bool, cluster: int = 1) -> None:
        super().__init__(threads)
        self.grid = grid
        self.tile = grid_tile(cluster)


def grid_tile(cluster: int) -> str:
    """The tile a CTA works on in the ``--bench`` grid form: ``blockIdx.x``, or with a cluster of ``cluster``
    CTAs the cluster's index ``blockIdx.x / cluster`` (the CTAs of a cluster are consecutive in x and share one
    tile, as the CTAs of the single-cluster launch share the buffers)."""
    return "blockIdx.x" if cluster == 1 else f"(blockIdx.x / {cluster})"


def grid_refusal(kernel: ir.Kernel) -> str | None:
    """Why ``kernel`` has no ``--bench`` grid form, or None when it has one.

    In the grid form every tensor map gains an outermost dimension over the CTAs (:func:`_tma_copy`), so a map
    of rank :data:`tilemagic.arch.tma.MAX_RANK` (5, the most ``cuTensorMapEncodeTiled`` encodes) cannot be
    replicated.
    """
    full = [m.name for m in kernel.tensormaps if m.rank + 1 > tma_hw.MAX_RANK]
    if full:
        maps = f"tensor map {full[0]} has" if len(full) == 1 else f"tensor maps {', '.join(full)} have"
        return (f"--bench timed one CTA: {maps} rank {tma_hw.MAX_RANK}, and the grid form "
                f"needs one more dimension over the CTAs (cuTensorMapEncodeTiled encodes rank <= {tma_hw.MAX_RANK})")
    return None


def _tma_copy(L: Lines, s: ir.TmaCopy, src) -> None:
    """``cp.async.bulk.tensor`` of tile mode (PTX ISA 9.0 §9.7.9.25.5.2): the map operand is the generic address of
    the ``__grid_constant__`` parameter, coordinates ``.s32`` in CUDA order, the policy of ``.L2::cache_hint`` a
    64-bit operand (:data:`tilemagic.arch.tma.CACHE_HINTS`).

    In the ``--bench`` grid form the map the launch encodes has one more, outermost dimension over the CTAs
    (:func:`tilemagic.runtime.tensormap.grid_map`), so the copy is of rank + 1 with the extra coordinate
    :func:`grid_tile` (``blockIdx.x``; a cluster's index with a cluster): CTA ``b`` moves the box of tile ``b``.
    """
    grid = isinstance(L, _KernelLines) and L.grid
    r = s.tmap.rank + grid
    chain = s.chain.replace(f".{s.tmap.rank}d.", f".{r}d.", 1)
    coords = ", ".join(f"%{k + 2}" if s.direction == "g2s" else f"%{k + 1}" for k in range(r))
    tile = L.tile if isinstance(L, _KernelLines) else ""
    cins = [f'"r"((int){cexpr(c)})' for c in s.coords] + ([f'"r"((int){tile})'] if grid else [])
    tmap = f'"l"((uint64_t)&{s.tmap.name})'
    hint = ".L2::cache_hint" if s.cache_hint else ""
    policy = [f'"l"((uint64_t){tma_hw.CACHE_HINTS[s.cache_hint]:#x}ull)'] if s.cache_hint else []
    if s.direction == "g2s":
        assert s.mbar is not None
        mask = _tma_cta_mask(s)
        tail = "".join(f", %{r + 3 + k}" for k in range(len(mask) + len(policy)))
        _asm(L, f"{chain}{hint} [%0], [%1, {{{coords}}}], [%{r + 2}]{tail};", [],
             [_shared_addr(s.smem, s.smem_offset), tmap, *cins, _shared_addr(s.mbar), *mask, *policy], src)
    else:
        tail = f", %{r + 2}" if s.cache_hint else ""
        _asm(L, f"{chain}{hint} [%0, {{{coords}}}], [%{r + 1}]{tail};", [],
             [tmap, *cins, _shared_addr(s.smem, s.smem_offset), *policy], src)


def _bulk_copy(L: Lines, s: ir.BulkCopy, src) -> None:
    """The dsmem copy (PTX ISA 9.0 §9.7.9.25.4.1): the ``cvta``'d shared addresses of the destination and of the
    mbarrier mapped into the CTA of rank ``remote`` with ``mapa.shared::cluster.u32`` (§9.7.9.23: a 32-bit
    shared::cluster address; TVM 0.27 truncates a generic ``mapa.u64`` instead), then
    ``cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [dst], [src], nbytes, [mbar]``
    from this CTA's source; one asm block, its registers scoped to it."""
    _asm(L, "{\\n\\t.reg .b32 tm_dst, tm_bar;\\n\\t"
            "mapa.shared::cluster.u32 tm_dst, %0, %2;\\n\\t"
            "mapa.shared::cluster.u32 tm_bar, %1, %2;\\n\\t"
            f"{s.chain} [tm_dst], [%3], %4, [tm_bar];\\n\\t}}", [],
         [_shared_addr(s.dst, s.dst_offset), _shared_addr(s.mbar), f'"r"((uint32_t)({cexpr(s.remote)}))',
          _shared_addr(s.src, s.src_offset), f'"r"({s.nbytes})'], src)
def _tma_cta_mask(s: ir.TmaCopy) -> list[str]:
    """The 16-bit ``ctaMask`` operand of a ``.multicast::cluster`` G2S copy (PTX ISA 9.0 §9.7.9.25.5.2: after the
    mbarrier, before the cache policy; bit i = cluster rank i), or none for the unicast form.  A one-bit mask is
    a multicast too (TVM 0.27 emits the unicast form into the issuing CTA instead)."""
    return [] if s.cta_mask is None else [f'"h"((uint16_t){s.cta_mask:#x})']


#: NVRTC has no <cuda.h>: the driver's 128-byte, 64-byte aligned opaque map (CCCL forward-declares the struct)
_CUTENSORMAP = """\
#if !defined(CUDA_VERSION)
struct alignas(64) CUtensorMap_st { unsigned long long opaque[16]; };
typedef struct CUtensorMap_st CUtensorMap;
#endif
"""


#: byte alignment of the shared buffers TMA and tcgen05.cp read by absolute address (one rule, in the IR)
shared_alignment = ir.shared_alignment


#: the synchronisation of asynchronous copies: mbarriers, fences, commit groups (:func:`_mbar_sync`)
MBAR_SYNC_NODES = (ir.MbarInit, ir.MbarArrive, ir.MbarWait, ir.Fence, ir.AsyncGroup)


def _mbar_sync_arch(kernel: ir.Kernel) -> str | None:
    """The oldest target the kernel's synchronisation statements assemble for: ``sm_80`` for cp.async groups
    alone, ``sm_90`` with mbarriers, fences or bulk groups (PTX ISA 9.0 target requirements); None without."""
    nodes = [s for s in ir.walk(kernel.body) if isinstance(s, MBAR_SYNC_NODES)]
    if not nodes:
        return None
    return "sm_80" if all(isinstance(s, ir.AsyncGroup) and not s.bulk for s in nodes) else "sm_90"


def _mbar_sync(L: Lines, s: ir.Stmt, src):
    """Inline PTX of an mbarrier init/arrive/wait, a fence or a commit-group statement (PTX ISA 9.0
    §9.7.13.15, §9.7.13.4, §9.7.9.25.3, §9.7.9.25.6); needs sm_90 (cp.async groups alone: sm_80)."""
    if isinstance(s, ir.MbarInit):
        _asm(L, "mbarrier.init.shared::cta.b64 [%0], %1;", [], [_shared_addr(s.bar), f'"r"({s.count})'], src)
    elif isinstance(s, ir.MbarArrive):
        if s.expect_tx or s.auto_from:
            note = f"  // expect_tx=auto: {', '.join(f'L{ln} {n} B' for ln, n in s.auto_from)}" if s.auto_from else ""
            _asm(L, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;", [],
                 [_shared_addr(s.bar), f'"r"({s.expect_tx})'], src)
            if note:
                L.rows[-1] = (L.rows[-1][0] + note, src)
        else:
            _asm(L, "mbarrier.arrive.shared::cta.b64 _, [%0];", [], [_shared_addr(s.bar)], src)
    elif isinstance(s, ir.MbarWait):
        # CUTLASS ClusterBarrier::wait: retry try_wait.parity until the phase of this parity has completed
        _asm(L, "{\\n\\t.reg .pred P1;\\nTM_WAIT:\\n\\t"
                "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\\n\\t"
                "@P1 bra TM_DONE;\\n\\tbra TM_WAIT;\\nTM_DONE:\\n\\t}", [],
             [_shared_addr(s.bar), f'"r"({s.parity})'], src)
    elif isinstance(s, ir.Fence):
        text = "fence.proxy.async.shared::cta;" if s.kind == "proxy_async" else "fence.mbarrier_init.release.cluster;"
        L.add(f'asm volatile("{text}" ::: "memory");', src)
    elif isinstance(s, ir.AsyncGroup):
        chain = "cp.async.bulk" if s.bulk else "cp.async"
        if s.kind == "commit":
            L.add(f'asm volatile("{chain}.commit_group;" ::: "memory");', src)
        else:
            L.add(f'asm volatile("{chain}.wait_group{".read" if s.read else ""} {s.n};" ::: "memory");', src)


_GET_TMEM_ADDR = """\
// TMEM address = lane << 16 | column; row/col immediates added per field (TVM get_tmem_addr)
__device__ __forceinline__ uint32_t get_tmem_addr(uint32_t base, uint32_t row, uint32_t col) {
  return ((((base >> 16) + row) & 0xFFFFu) << 16) | ((base + col) & 0xFFFFu);
}
"""


def global_traffic(kernel: ir.Kernel) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Names of the global buffers the kernel reads and writes (kernel parameter order).

    A buffer is read when it is the source of a vector move or a ``cp.async``, or appears in a loaded
    expression, written when it is the destination of a vector move or a store.
    """
    reads = {e.buf.name for e in ir.loads(kernel.body)}
    writes = set()
    for s in ir.walk(kernel.body):
        if isinstance(s, ir.CpAsync):  # global -> shared
            reads.add(s.src.name)
        elif isinstance(s, ir.VecMove):
            if s.src.scope == "global":
                reads.add(s.src.name)
            if s.dst.scope == "global":
                writes.add(s.dst.name)
        elif isinstance(s, ir.Store) and s.buf.scope == "global":
            writes.add(s.buf.name)
        elif isinstance(s, ir.TmaCopy):
            (reads if s.direction == "g2s" else writes).add(s.tmap.buf.name)
    names = [b.name for b in kernel.params]
    return tuple(n for n in names if n in reads), tuple(n for n in names if n in writes)



def _tma_in_bounds(s: ir.TmaCopy, rank: int) -> int:
    """Bytes of one TMA box that lie inside the tensor (the part that is read or written in global memory)."""
    m = s.tmap
    n = m.elem_bytes
    for c, b, d in zip(s.coords, m.box, m.dims):
        try:
            v = eval_static(c, np.zeros(1, np.int64), {ir.ThreadVar(CTA_RANK): np.int64(rank)})
            lo = int(np.asarray(v).reshape(-1)[0])
        except Undetermined:
            lo = 0
        n *= max(0, min(lo + b, d) - max(lo, 0))
    return n


def global_bytes(kernel: ir.Kernel) -> tuple[int, int]:
    """``(read, written)``: the global bytes the kernel's instructions move in one launch of one cluster.

    The rule: every instruction that touches global memory counts the bytes it moves there, once per
    execution — per executing thread (its guards evaluated per thread and, in a cluster, per CTA rank) and per
    iteration of its loops: a vector move or a ``cp.async`` its ``nbytes`` on the global side, a store and every
    load of a global element its element size, a TMA copy the part of its box inside the tensor (read for G2S,
    written for S2G, both for a reduction; a multicast is one read however many CTAs receive it).  A byte read
    twice counts twice; shared-memory and dsmem traffic count nothing, nor does a ``tcgen05.cp`` (shared
    memory to TMEM) or a ``tcgen05.ld/st``.  ``--bench`` divides these bytes by the
    time (``runtime.launch``), so a kernel that copies one tile of a large tensor is credited with the tile.
    """
    read = written = 0
    memo: dict[tuple, int] = {}  # (enclosing If/Grid nodes, rank) -> executions: statements share their scopes
    for rank in range(max(1, kernel.cluster)):
        for s, scope in ir.walk_scoped(kernel.body):
            if isinstance(s, (ir.Seq, ir.If, ir.Grid)):
                continue
            rd = sum(ld.buf.elem_bytes for ld in ir.stmt_loads(s) if ld.buf.scope == "global")
            wr = 0
            if isinstance(s, (ir.VecMove, ir.CpAsync)):
                rd += s.nbytes if s.src.scope == "global" else 0
                wr += s.nbytes if s.dst.scope == "global" else 0
            elif isinstance(s, ir.Store) and s.buf.scope == "global":
                wr += s.buf.elem_bytes
            elif isinstance(s, ir.TmaCopy):
                box = _tma_in_bounds(s, rank)
                rd += box if s.direction == "g2s" or s.reduce else 0
                wr += box if s.direction == "s2g" else 0
            if rd or wr:
                key = (tuple(id(x) for x in scope), rank)
                if key not in memo:
                    try:
                        memo[key] = issue_count(scope, kernel.threads, rank)
                    except Undetermined:  # (a guard on loaded data, or too many trips to enumerate: all of them)
                        memo[key] = math.prod(math.prod(g.extents) for g in scope if isinstance(g, ir.Grid)) \
                            * kernel.threads
                times = memo[key]
                read += rd * times
                written += wr * times
    return read, written


def grid_stride(buf: ir.Buffer) -> int:
    """Elements between consecutive tiles of a global buffer in the ``--bench`` grid form.

    The tile's element count rounded up to 16 bytes, so every tile starts as aligned as
    the buffer itself and the tile's vector accesses (at most ``v4.u32``, 16 bytes) stay
    aligned in every CTA.
    """
    per = max(1, 16 // buf.elem_bytes)
    return -(-buf.numel // per) * per


def generate(kernel: ir.Kernel, mode: str = "native", *, arch: str = "sm_100a", strict: bool = False,
             grid: bool = False) -> CudaSource:
    """CUDA C++ for ``kernel``.

    Parameters
    ----------
    kernel : Kernel
    mode : {"native", "emulated"}
        ``native``: tcgen05 inline PTX (compile with ``-arch=sm_100a``).  ``emulated``:
        TMEM in global memory through ``tmem_emulation.cuh``; adds the ``tm_scratch``
        and ``tm_status`` kernel arguments.
    strict : bool
        Emulated mode: flag TMEM addresses whose quadrant bits differ from warp_id % 4.
    grid : bool
        The ``--bench`` form: the tile replicated over a grid of CTAs.  Every pointer
        argument is advanced by ``blockIdx.x`` times its per-CTA size in elements (a
        global buffer's :func:`grid_stride`; the emulation's ``tm_scratch`` and
        ``tm_status`` sizes), so CTA ``b`` moves tile ``b`` of buffers holding
        ``gridDim.x`` tiles one after another, with its own emulated TMEM (with a
        cluster of C CTAs, the global buffers by the cluster's index ``blockIdx.x / C``
        instead: :func:`grid_tile`).  The tile's
        code is unchanged but for its TMA copies, which take the extra outermost
        coordinate ``blockIdx.x`` of maps encoded over the whole replicated buffer
        (:func:`_tma_copy`).  A kernel without a grid form (:func:`grid_refusal`: a
        rank-5 map) gets the single-CTA source with ``grid_refused`` set.
    """
    _refuse_cta_pair(kernel)
    refusal = grid_refusal(kernel) if grid else None
    if refusal:
        return replace(generate(kernel, mode, arch=arch, strict=strict), grid_refused=refusal)
    tc = uses_tcgen05(kernel)
    emulated = mode == "emulated"
    L = _KernelLines(kernel.threads, grid, kernel.cluster)
    head = (f"native tcgen05 inline PTX; build for {arch} only (NVRTC -arch={arch}, or "
            f"nvcc -gencode arch=compute_{arch[3:]},code={arch})") if (tc and not emulated) else (
        "TMEM emulated in global memory (tilemagic/codegen/tmem_emulation.cuh)" if emulated else
        f"no tcgen05: runs on any CUDA GPU of sm_{MIN_SM} or newer" if kernel.cluster > 1 else
        "no tcgen05: runs on any CUDA GPU")
    ctas = "one CTA per tile (--bench grid)" if grid else "1 CTA"
    if kernel.cluster > 1:
        ctas = f"clusters of {kernel.cluster} CTAs" + (" (--bench grid)" if grid else "")
    L.add(f"// tilemagic: kernel {kernel.name}, {ctas} x {kernel.threads} threads, {head}")
    sync_arch = _mbar_sync_arch(kernel)
    if kernel.cluster > 1:
        L.add(f"// thread-block clusters (__cluster_dims__, %cluster_ctarank, barrier.cluster) need sm_{MIN_SM} or "
              "newer")
    elif sync_arch:
        L.add(f"// the asynchronous-copy synchronisation needs {sync_arch} or newer")
    for inc in ("cuda_fp16.h", "cuda_bf16.h"):
        L.add(f"#include <{inc}>")
    # NVRTC (CuPy) has no <stdint.h>; CCCL's <cuda/std/cstdint> gives the same names
    for line in ("#ifdef __CUDACC_RTC__", "#include <cuda/std/cstdint>", "#else", "#include <stdint.h>", "#endif"):
        L.add(line)
    if emulated:
        L.add("")
        header = emulation_header()
        if not any(isinstance(s, ir.TcgenCp) for s in ir.walk(kernel.body)):
            header = header[:header.index(_CP_SECTION)].rstrip("\n") + "\n"
        for line in header.splitlines():
            if not line.startswith("#pragma once") and not line.startswith("#include"):
                L.add(line)
    if kernel.tensormaps:
        L.add("")
        for line in _CUTENSORMAP.splitlines():
            L.add(line)
    if tc and any(isinstance(s, (ir.TcgenLdSt, ir.TcgenCp)) and (s.row or s.col) for s in ir.walk(kernel.body)):
        L.add("")
        for line in _GET_TMEM_ADDR.splitlines():
            L.add(line)
    L.add("")
    params = [f"{ir.CUDA_TYPE[b.dtype]}* __restrict__ {b.name}" for b in kernel.params]
    params += [f"const __grid_constant__ CUtensorMap {m.name}" for m in kernel.tensormaps]
    extra: tuple[tuple[str, str, int], ...] = ()
    if emulated:
        extra = (("tm_scratch", "uint32", TM_SCRATCH_WORDS), ("tm_status", "int32", 8))
        params += ["uint32_t* __restrict__ tm_scratch", "int* __restrict__ tm_status"]
    dims = f"__cluster_dims__({kernel.cluster}, 1, 1) " if kernel.cluster > 1 else ""
    L.add(f'extern "C" __global__ void {dims}__launch_bounds__({kernel.threads}) {kernel.name}({", ".join(params)}) {{')
    L.depth += 1
    _cluster_decls(L, kernel)
    for axis in thread_vars_used(kernel):
        div, mod = axis_def(axis)
        v = f"threadIdx.x / {div}" if div > 1 else "threadIdx.x"
        v = v if mod is None else f"({v}) % {mod}" if div > 1 else f"{v} % {mod}"
        L.add(f"const int {axis} = {v};")
    if grid:
        if kernel.cluster == 1:
            L.add("// --bench grid: CTA blockIdx.x moves tile blockIdx.x (buffers hold gridDim.x tiles back to back)")
        else:
            L.add(f"// --bench grid: cluster {L.tile} moves tile {L.tile} (buffers hold gridDim.x / "
                  f"{kernel.cluster} tiles back to back)")
        for b in kernel.params:
            L.add(f"{b.name} += (size_t){L.tile} * {grid_stride(b)};")
        for name, _, n in extra:
            L.add(f"{name} += (size_t)blockIdx.x * {n};")
    align = shared_alignment(kernel)
    for b in kernel.shared:
        if b.is_mbarrier:  # the 64-bit mbarrier object (PTX ISA 9.0 §9.7.13.15.1: 8-byte aligned shared memory)
            L.add(f"__shared__ alignas({MBAR_BYTES}) uint64_t {b.name}[1];  // mbarrier, count {b.mbar_count}",
                  src_line(b))
            continue
        L.add(f"__shared__ __align__({align.get(b.name, 16)}) {ir.CUDA_TYPE[b.dtype]} {b.name}[{b.numel}];",
              src_line(b))
    for b in kernel.locals:
        L.add(f"__align__(16) {ir.CUDA_TYPE[b.dtype]} {b.name}[{b.storage_elems}];", src_line(b))
    if emulated:
        L.add(f"const TmEmu tm = tm_emu_make(tm_scratch, tm_status, {1 if strict else 0});")
        if any(isinstance(s, ir.TcgenCp) for s in ir.walk(kernel.body)):
            L.add("// the CTA's shared window (tm_emu_cp's bounds): its shared buffers, wherever they were put")
            L.add("uint32_t tm_smem_lo = 0xffffffffu, tm_smem_hi = 0u;")
            for b in kernel.shared:
                L.add(f"tm_emu_smem_span(tm_smem_lo, tm_smem_hi, (uint32_t)__cvta_generic_to_shared({b.name}), "
                      f"(uint32_t)sizeof({b.name}));")
    _stmt(L, kernel.body, mode)
    if emulated:
        L.add("tm_emu_exit_check(tm);")
    L.depth -= 1
    L.add("}")
    text, lines = L.text()
    reads, writes = global_traffic(kernel)
    nread, nwritten = global_bytes(kernel)
    return CudaSource(text, kernel.name, mode, tuple(kernel.params), extra, kernel.threads, lines, tc,
                      grid=grid, reads=reads, writes=writes, tensormaps=tuple(kernel.tensormaps),
                      cluster=kernel.cluster, read_bytes=nread, write_bytes=nwritten)
