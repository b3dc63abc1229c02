"""TIR-like printer: the IR as TVMScript-looking text (``T.ptx["tcgen05.st..."](...)``, ``T.grid``).

:func:`print_ir` returns the text and, for every output line, the description
line it came from (None for scaffolding), which the HTML view uses to link the
description, the IR and the CUDA.
"""

from __future__ import annotations

from ..arch.cluster import CTA_RANK
from ..arch.ptx import PTX_FORM, word_bytes
from ..arch.threads import THREAD_AXES, axis_def
from . import nodes as ir

# Python precedence: comparisons < ^ < + - < * // %
_XOR_OPERAND = 6  # binds tighter than every operator: an XOR's non-atomic operands are parenthesised
_PREC = {"and": 1, "==": 2, "!=": 2, "<": 2, "<=": 2, ">": 2, ">=": 2, "^": 3, "+": 4, "-": 4, "*": 5, "//": 5, "%": 5}


def _tmp(nbytes: int) -> tuple[str, int, int]:
    """Register scratch of a memory-to-memory vector move: (name, words, bits per word); containers as TVM's."""
    bits = word_bytes(nbytes) * 8
    return ("tmp" if bits == 32 else f"tmp_u{bits}"), nbytes * 8 // bits, bits


def thread_vars_used(kernel: ir.Kernel) -> list[str]:
    """The thread axes other than ``tx`` the kernel's expressions use, in :data:`~tilemagic.arch.threads.THREAD_AXES`
    order (the printer and the code generator declare each once)."""
    used = {e.kind for e in ir.iter_exprs(kernel.body) if isinstance(e, ir.ThreadVar)}
    return [a for a in THREAD_AXES if a in used and a != "tx"]


class Lines:
    """Collects (indent, text, source line) triples."""

    def __init__(self, threads: int = 0):
        self.rows: list[tuple[str, int | None]] = []
        self.depth = 0
        self.scratch_names: dict[str, str] = {}
        self.threads = threads  # CTA size (the code generator's warp-uniformity test)
        self.lane_guards = 0  # enclosing guards that split a warp (the code generator)

    def add(self, text: str, src: int | None = None) -> None:
        self.rows.append(("    " * self.depth + text, src))

    def text(self):
        return "\n".join(r[0] for r in self.rows) + "\n", [r[1] for r in self.rows]


def expr_str(e: ir.Expr, prec: int = 0) -> str:
    """Python-style text of an expression."""
    if isinstance(e, ir.Const):
        return str(e.value)
    if isinstance(e, ir.ThreadVar):
        return e.kind
    if isinstance(e, ir.LoopVar):
        return e.name
    if isinstance(e, ir.Load):
        return f"{e.buf.name}[{', '.join(expr_str(i) for i in e.indices)}]"
    if isinstance(e, ir.Bin):
        p = _PREC[e.op]
        if e.op == "^":  # a swizzle: each side bracketed unless an atom, so `t ^ (t // 64 % 8 * 8)` reads right
            s = f"{expr_str(e.a, _XOR_OPERAND)} ^ {expr_str(e.b, _XOR_OPERAND)}"
        else:
            s = f"{expr_str(e.a, p)} {e.op} {expr_str(e.b, p + 1)}"
        return f"({s})" if p < prec else s
    raise TypeError(e)


def scale_index(e: ir.Expr, num: int, den: int) -> ir.Expr:
    """``e * num // den`` simplified when every term divides exactly (element index -> word index)."""

    def go(x):
        if isinstance(x, ir.Const):
            return ir.Const(x.value * num // den) if (x.value * num) % den == 0 else None
        if isinstance(x, ir.Bin) and x.op == "+":
            a, b = go(x.a), go(x.b)
            return None if a is None or b is None else ir.add(a, b)
        if isinstance(x, ir.Bin) and x.op == "*" and isinstance(x.b, ir.Const):
            if (x.b.value * num) % den == 0:
                return ir.mul(x.a, x.b.value * num // den)
        return None

    r = go(e)
    return r if r is not None else ir.floordiv(ir.mul(e, num), den)


def word_refs(buf: ir.Buffer, index: ir.Expr, nbytes: int, view_bits: int):
    """Names of the ``view_bits``-wide words covering ``nbytes`` of ``buf`` from element ``index``."""
    wb = view_bits // 8
    base = scale_index(index, buf.elem_bytes, wb)
    return [f"{buf.name}_{view_bits}b[{expr_str(ir.add(base, k))}]" for k in range(max(1, nbytes // wb))]


def _layout_note(buf: ir.Buffer) -> str:
    return f"  # {buf.layout}" if buf.layout is not None else ""


def print_ir(kernel: ir.Kernel, *, arch: str = "sm_100a"):
    """Print ``kernel`` in the TIRx style.

    Returns
    -------
    (str, list of int or None)
        The text and, per line, the 1-based description line it came from.
    """
    L = Lines()
    ctas = f"cluster of {kernel.cluster} CTAs" if kernel.cluster > 1 else "1 CTA"
    L.add(f"# tilemagic IR · kernel {kernel.name} · {ctas} × {kernel.threads} threads · target cuda {arch}")
    L.add("@T.prim_func")
    params = ", ".join(f'{b.name}: T.Buffer({tuple(b.shape)!r}, "{b.dtype}")' for b in kernel.params)
    L.add(f"def {kernel.name}({params}):")
    L.depth += 1
    L.add(f'tx = T.launch_thread("threadIdx.x", {kernel.threads})')
    _cluster_header(L, kernel)
    for axis in thread_vars_used(kernel):
        div, mod = axis_def(axis)
        L.add(f"{axis} = tx" + (f" // {div}" if div > 1 else "") + (f" % {mod}" if mod else ""))
    for b in kernel.shared:
        L.add(f'{b.name} = T.alloc_shared({tuple(b.shape)!r}, "{b.dtype}")'
              + (_layout_note(b) if b.layout is not None and b.name != "tmem_addr" else "")
              + (f"  # mbarrier, count {b.mbar_count}" if b.is_mbarrier else ""), src_line(b))
    views = _register_views(kernel)
    for b in kernel.locals:
        L.add(f'{b.name} = T.alloc_local(({b.storage_elems},), "{b.dtype}"){_layout_note(b)}', src_line(b))
        for bits in sorted(views.get(b.name, ())):
            n = b.storage_elems * b.elem_bytes * 8 // bits
            L.add(f'{b.name}_{bits}b = T.decl_buffer(({n},), "uint{bits}", data={b.name}.data)', src_line(b))
    scratch: dict[str, tuple[int, int]] = {}
    for s in ir.walk(kernel.body):
        if isinstance(s, ir.VecMove) and "local" not in (s.src.scope, s.dst.scope):
            name, lanes, bits = _tmp(s.nbytes)
            scratch[name] = (max(scratch.get(name, (0,))[0], lanes), bits)
    taken = {b.name for b in kernel.params + kernel.shared + kernel.locals + kernel.tmem}
    L.scratch_names = {name: (f"tm_{name}" if name in taken else name) for name in scratch}
    for name in sorted(scratch):
        L.add(f'{L.scratch_names[name]} = T.alloc_local(({scratch[name][0]},), "uint{scratch[name][1]}")'
              f'  # registers of the vector moves')
    for b in kernel.tmem:
        where = f"at {b.alias_of}, " if b.alias_of else ""
        L.add(f"# tmem {b.name}: {b.dtype}{list(b.shape)} @ {b.layout} · datapath {b.datapath or '?'} · "
              f"{where}32-bit columns [{b.tmem_col}, {b.tmem_col + b.tmem_ncols}) of {kernel.tmem_cols}",
              src_line(b))
    _tensormaps(L, kernel)
    _stmt(L, kernel.body)
    return L.text()


def uses_cta_rank(kernel: ir.Kernel) -> bool:
    """Does an expression of the kernel read the CTA's rank in its cluster (``ir.ThreadVar("cta_rank")``)?"""
    return any(isinstance(e, ir.ThreadVar) and e.kind == CTA_RANK for e in ir.iter_exprs(kernel.body))


def _cluster_header(L: Lines, kernel: ir.Kernel) -> None:
    """The cluster of a cluster kernel and the CTA's rank in it (TIRx ``T.cta_id_in_cluster``, ``apache-tvm
    0.27.0.post1``; ``%cluster_ctarank``, PTX ISA 9.0 §10.16); ``cta_rank`` of a one-CTA kernel is 0."""
    if kernel.cluster > 1:
        L.add(f"# cluster: {kernel.cluster} CTAs (__cluster_dims__({kernel.cluster}, 1, 1)); shared memory, "
              "mbarriers and TMEM per CTA")
        L.add(f"{CTA_RANK} = T.cta_id_in_cluster([{kernel.cluster}])")
    elif uses_cta_rank(kernel):
        L.add(f"{CTA_RANK} = 0  # one CTA, no cluster")


def _tensormaps(L: Lines, kernel: ir.Kernel) -> None:
    """One line per tensor map: what the host encodes (``cuTensorMapEncodeTiled``, CUDA order) and passes."""
    for m in kernel.tensormaps:
        L.add(f"{m.name} = T.tensormap_encode_tiled({m.buf.name}, \"{m.dtype}\", rank={m.rank}, dims={list(m.dims)}, "
              f"strides={list(m.strides)}, box={list(m.box)}, elem_strides={list(m.elem_strides)}, "
              f"swizzle={m.swizzle}, l2_promotion={m.l2_promotion}, oob_fill={m.oob_fill})"
              f"  # host side; a __grid_constant__ CUtensorMap parameter")


def _tma_copy(L: Lines, s: ir.TmaCopy, src: int | None) -> None:
    """``T.ptx["cp.async.bulk.tensor..."](...)``: TVM's operand order (G2S: shared, map, coordinates, mbarrier;
    S2G: map, coordinates, shared), coordinates in CUDA order."""
    coords = ", ".join(expr_str(c) for c in s.coords)
    rw = "w" if s.direction == "g2s" else "r"
    smem = f'{s.smem.name}.access_ptr("{rw}", offset={s.smem_offset // s.smem.elem_bytes})'
    tmap = f"T.address_of({s.tmap.name})"
    chain = s.chain + (".L2::cache_hint" if s.cache_hint else "")
    if s.direction == "g2s":
        assert s.mbar is not None
        args = [smem, tmap, coords, f"T.address_of({s.mbar.name}[0])"]
    else:
        args = [tmap, coords, smem]
    if s.cache_hint:
        args.append(f'T.cache_policy("{s.cache_hint}")')
    args += _tma_multicast_args(s)
    L.add(f'T.ptx["{chain}"]({", ".join(args)})', src)


def _bulk_copy(L: Lines, s: ir.BulkCopy, src: int | None) -> None:
    """``T.ptx["cp.async.bulk.shared::cluster.shared::cta..."](dst, src, nbytes, mbar)``: TVM 0.27 dsmem's operand
    order, the destination and the mbarrier mapped into the CTA of rank ``remote`` (``mapa.shared::cluster``,
    a 32-bit shared::cluster address, where TVM 0.27 writes ``T.ptx.mapa.u64``)."""
    remote = expr_str(s.remote)
    eb = s.dst.elem_bytes
    dst = f'T.ptx.mapa.shared_cluster({s.dst.name}.access_ptr("w", offset={s.dst_offset // eb}), {remote})'
    rd = f'{s.src.name}.access_ptr("r", offset={s.src_offset // s.src.elem_bytes})'
    bar = f"T.ptx.mapa.shared_cluster(T.address_of({s.mbar.name}[0]), {remote})"
    L.add(f'T.ptx["{s.chain}"]({dst}, {rd}, {s.nbytes}, {bar})', src)
def _tma_multicast_args(s: ir.TmaCopy) -> list[str]:
    """The ``cta_mask`` operand of a multicast G2S copy (``.multicast::cluster``, PTX ISA 9.0 §9.7.9.25.5.2), in
    binary (bit i = cluster rank i), as the last, keyword argument.  (A reduction is spelled in the chain:
    ``cp.reduce...{op}.tile``.)"""
    return [] if s.cta_mask is None else [f"cta_mask=0b{s.cta_mask:b}"]


def _register_views(kernel):
    views = {}
    for s in ir.walk(kernel.body):
        if isinstance(s, (ir.TcgenLdSt, ir.LdStMatrix)):
            views.setdefault(s.local.name, set()).add(32)
        elif isinstance(s, ir.VecMove):
            for b in (s.dst, s.src):
                if b.scope == "local":
                    views.setdefault(b.name, set()).add(word_bytes(s.nbytes) * 8)
    return views


def tmem_addr_str(node, fmt_base="T.uint32(tmem_addr[0])"):
    if node.row == 0 and node.col == 0:
        return fmt_base
    return f"T.cuda.get_tmem_addr(tmem_addr[0], {node.row}, {node.col})"


def cp_descriptor_text(s: ir.TcgenCp) -> str:
    """A ``tcgen05.cp``'s shared-memory matrix descriptor in words: ``desc(S + 32 B; LBO 16 B, SBO 1024 B, 128B)``
    (start address relative to the buffer, LBO, SBO, layout type; version 1, base offset 0 and LBO mode 0 are
    implied: PTX ISA 9.0 §9.7.16.4.1, :mod:`tilemagic.arch.smem_desc`)."""
    from ..arch.smem_desc import LAYOUT_NAMES

    start = s.smem.name + (f" + {s.smem_offset} B" if s.smem_offset else "")
    swz = LAYOUT_NAMES.get(s.layout, f"layout {s.layout}")
    return f"desc({start}; LBO {s.lbo} B, SBO {s.sbo} B, {'no swizzle' if swz == 'none' else swz})"


def src_line(s: ir.Stmt | ir.Buffer) -> int | None:
    return s.span.line if s.span else None


def _cp_async(L: Lines, s: ir.CpAsync, src: int | None) -> None:
    """``T.ptx["cp.async.cg.shared.global"](dst, src, 16)``: TVM 0.27 ldgsts's ``T.ptx[chain](dst_ptr, src_ptr,
    cp_size)`` (PTX operand order: shared destination, global source, bytes)."""
    wptr = f'{s.dst.name}.access_ptr("w", offset={expr_str(s.dst_index)})'
    rptr = f'{s.src.name}.access_ptr("r", offset={expr_str(s.src_index)})'
    L.add(f'T.ptx["{s.chain}"]({wptr}, {rptr}, {s.nbytes})', src)


def _stmt(L: Lines, s: ir.Stmt):
    src = src_line(s)
    if isinstance(s, ir.Seq):
        for c in s.body:
            _stmt(L, c)
    elif isinstance(s, ir.Comment):
        L.add(f"# {s.text}", src)
    elif isinstance(s, ir.If):
        L.add(f"if {expr_str(s.cond)}:", src)
        L.depth += 1
        _stmt(L, s.then)
        L.depth -= 1
    elif isinstance(s, ir.Grid):
        names = ", ".join(v.name for v in s.vars)
        L.add(f"for {names} in T.grid({', '.join(map(str, s.extents))}):", src)
        L.depth += 1
        _stmt(L, s.body)
        L.depth -= 1
    elif isinstance(s, ir.Store):
        L.add(f"{s.buf.name}[{', '.join(expr_str(i) for i in s.indices)}] = {expr_str(s.value)}", src)
    elif isinstance(s, ir.VecMove):
        bits = word_bytes(s.nbytes) * 8
        form = PTX_FORM[s.nbytes]
        if s.dst.scope == "local":
            regs = word_refs(s.dst, s.dst_index, s.nbytes, bits)
            ptr = f'{s.src.name}.access_ptr("r", offset={expr_str(s.src_index)})'
            L.add(f'T.ptx["ld.{s.src.scope}.{form}"]({", ".join(regs)}, {ptr})', src)
        elif s.src.scope == "local":
            regs = word_refs(s.src, s.src_index, s.nbytes, bits)
            ptr = f'{s.dst.name}.access_ptr("w", offset={expr_str(s.dst_index)})'
            L.add(f'T.ptx["st.{s.dst.scope}.{form}"]({ptr}, {", ".join(regs)})', src)
        else:  # global <-> shared through registers (gmem_smem)
            name, lanes, _ = _tmp(s.nbytes)
            name = L.scratch_names.get(name, name)
            regs = ", ".join(f"{name}[{k}]" for k in range(lanes))
            rptr = f'{s.src.name}.access_ptr("r", offset={expr_str(s.src_index)})'
            wptr = f'{s.dst.name}.access_ptr("w", offset={expr_str(s.dst_index)})'
            L.add(f'T.ptx["ld.{s.src.scope}.{form}"]({regs}, {rptr})', src)
            L.add(f'T.ptx["st.{s.dst.scope}.{form}"]({wptr}, {regs})', src)
    elif isinstance(s, ir.CpAsync):
        _cp_async(L, s, src)
    elif isinstance(s, ir.LdStMatrix):
        regs = [f"{s.local.name}_32b[{expr_str(r)}]" for r in s.regs]
        ptr = f'{s.smem.name}.access_ptr("{"r" if s.op == "ld" else "w"}", offset={expr_str(s.addr)})'
        args = [*regs, ptr] if s.op == "ld" else [ptr, *regs]
        L.add(f'T.ptx["{s.chain}"]({", ".join(args)})', src)
    elif isinstance(s, ir.TcgenAlloc):
        L.add('T.ptx["tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32"]'
              f"(T.address_of({s.addr.name}[0]), {s.ncols})", src)
    elif isinstance(s, ir.TcgenRelinquish):
        L.add('T.ptx["tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned"]()', src)
    elif isinstance(s, ir.TcgenDealloc):
        L.add(f'T.ptx["tcgen05.dealloc.cta_group::1.sync.aligned.b32"](T.uint32({s.addr.name}[0]), {s.ncols})', src)
    elif isinstance(s, ir.TcgenFence):
        L.add(f'T.ptx["tcgen05.fence::{s.kind}"]()', src)
    elif isinstance(s, ir.TcgenWait):
        L.add(f'T.ptx["tcgen05.wait::{s.kind}.sync.aligned"]()', src)
    elif isinstance(s, ir.Barrier):
        L.add("T.cuda.cta_sync()", src)
    elif isinstance(s, ir.ClusterSync):
        L.add("T.cuda.cluster_sync()  # barrier.cluster.arrive.aligned; barrier.cluster.wait.aligned", src)
    elif isinstance(s, ir.TmaCopy):
        _tma_copy(L, s, src)
    elif isinstance(s, ir.BulkCopy):
        _bulk_copy(L, s, src)
    elif isinstance(s, ir.TcgenLdSt):
        regs = [f"{s.local.name}_32b[{s.reg_base + i}]" for i in range(s.regs)]
        addr = tmem_addr_str(s)
        args = [*regs, addr] if s.op == "ld" else [addr, *regs]
        L.add(f'T.ptx["{s.chain}"]({", ".join(args)})', src)
    elif isinstance(s, ir.TcgenCp):
        L.add(f'T.ptx["{s.chain}"]({tmem_addr_str(s)}, {cp_descriptor_text(s)})', src)
    elif isinstance(s, ir.TcgenCommit):
        mask = "" if s.cta_mask is None else f", T.uint16(0b{s.cta_mask:b})"
        L.add(f'T.ptx["{s.chain}"](T.address_of({s.bar.name}[0]){mask})', src)
    elif not _mbar_sync_stmt(L, s, src):
        raise TypeError(f"cannot print {type(s).__name__}")


def auto_note(s: ir.MbarArrive) -> str:
    """Where an ``expect_tx=auto`` count came from: ``8192 B = L7: 8192 B + ...`` (empty for a written count)."""
    if not s.auto_from:
        return ""
    parts = " + ".join(f"L{line}: {nbytes} B" for line, nbytes in s.auto_from)
    return f"expect_tx=auto: {s.expect_tx} B per arriving thread, from the copies {parts}"


def _mbar_sync_stmt(L: Lines, s: ir.Stmt, src: int | None) -> bool:
    """mbarriers, fences and commit groups in TVM TIRx's spelling (``T.ptx.mbarrier.arrive.shared.b64``,
    ``T.cuda.mbarrier_wait``, ``apache-tvm 0.27.0.post1``); False for any other statement."""
    if isinstance(s, ir.MbarInit):
        L.add(f"T.ptx.mbarrier.init.shared.b64(T.address_of({s.bar.name}[0]), T.uint32({s.count}))", src)
    elif isinstance(s, ir.MbarArrive):
        bar = f"T.address_of({s.bar.name}[0])"
        note = auto_note(s)
        if s.expect_tx or s.auto_from:
            L.add(f"T.ptx.mbarrier.arrive.expect_tx.shared.b64({bar}, T.uint32({s.expect_tx}))"
                  + (f"  # {note}" if note else ""), src)
        else:
            L.add(f"T.ptx.mbarrier.arrive.shared.b64({bar}, T.uint32(1))", src)
    elif isinstance(s, ir.MbarWait):
        L.add(f"T.cuda.mbarrier_wait(T.address_of({s.bar.name}[0]), {s.parity})", src)
    elif isinstance(s, ir.Fence):
        L.add("T.ptx.fence.proxy.async_.shared__cta()" if s.kind == "proxy_async"
              else "T.ptx.fence.mbarrier_init.release.cluster()", src)
    elif isinstance(s, ir.AsyncGroup):
        chain = "T.ptx.cp.async_" + (".bulk" if s.bulk else "")
        if s.kind == "commit":
            L.add(f"{chain}.commit_group()", src)
        else:
            L.add(f"{chain}.wait_group{'.read' if s.read else ''}({s.n})", src)
    else:
        return False
    return True
