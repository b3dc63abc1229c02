"""NumPy SIMT interpreter of the IR: the CPU backend (``--launch sim``).

The threads of the CTA are a NumPy vector; every statement runs for all active
threads at once, ``If`` narrows an activity mask, ``Grid`` loops run serially.
Memory is bytes: global and shared buffers are flat ``uint8`` arrays, each local
buffer a ``(threads, bytes)`` array, TMEM a :class:`~tilemagic.sim.tmem.TmemModel`.
Values move as raw bits (fp16 as uint16, ...), so round trips are bit-exact.

Statements execute in program order for all threads (a legal schedule of a
correctly synchronised kernel); tcgen05.ld/st complete at issue, so
``wait::ld``/``wait::st`` are no-ops, as in the emulation.  Because that schedule hides a
missing barrier or wait, every access and synchronising event is reported to a
:class:`~tilemagic.sim.hb.Tracker` (happens-before: races, in-flight tcgen05 registers,
uninitialised data); shared memory, registers and TMEM start as :data:`~tilemagic.sim.hb.GARBAGE`.
The hazards are in :attr:`Simulator.hazards` after :meth:`Simulator.run`.
"""

from __future__ import annotations

import numpy as np

from ..arch.ldmatrix import ROW_ELEMS, fragment_elements
from ..errors import LaunchError, Span
from ..ir import nodes as ir
from ..ir.evaluate import Undetermined, eval_static
from .hb import Tracker, garbage
from .tmem import TmemModel, emu_error

_BITS = ir.BITS_DTYPE


def _uses_threads(st: ir.Store) -> bool:
    """Does a Store depend on the thread id (a thread variable, or registers on either side)?"""
    return st.buf.scope == "local" or any(
        isinstance(e, ir.ThreadVar) or (isinstance(e, ir.Load) and e.buf.scope == "local") for e in ir.iter_exprs(st))


class Simulator:
    """Run one kernel on the CPU.

    Parameters
    ----------
    kernel : Kernel
    inputs : dict of str -> ndarray
        Initial contents of every global buffer (logical shape; any dtype of the right itemsize).
    strict : bool
        Flag TMEM addresses whose quadrant bits are neither 0 nor warp_id % 4
        (:func:`tilemagic.arch.tcgen05.quadrant_mismatch`).
    tracker : Tracker, optional
        The happens-before tracker to report to (default: a new one, :attr:`hb`).
    """

    def __init__(self, kernel: ir.Kernel, inputs: dict[str, np.ndarray], strict: bool = False,
                 tracker: Tracker | None = None):
        self.k = kernel
        n = kernel.threads
        self.n = n
        self.tid = np.arange(n, dtype=np.int64)
        self.mem: dict[str, np.ndarray] = {}
        for b in kernel.params:
            a = np.ascontiguousarray(inputs[b.name])
            if a.nbytes != b.nbytes:
                raise LaunchError(f"input for {b.name} has {a.nbytes} bytes, expected {b.nbytes}")
            self.mem[b.name] = a.view(np.uint8).reshape(-1).copy()
        for b in kernel.shared:
            self.mem[b.name] = garbage(b.nbytes)  # uninitialised: garbage, and poison for the tracker
        self.local = {b.name: garbage((n, b.nbytes)) for b in kernel.locals}
        self.tmem = TmemModel(strict)
        self.tmem.cells.view(np.uint8).reshape(-1)[:] = garbage(self.tmem.cells.nbytes)
        self.hb = tracker if tracker is not None else Tracker(kernel, n, strict)
        # (active mask, span) of the statement whose loads are being evaluated, and their init bits
        self._read_ctx: tuple[np.ndarray, Span | None] | None = None
        self._read_init: np.ndarray | None = None
        self.hazards: list = []  # (message, span) of every hazard, after run()

    # ------------------------------------------------------------------ helpers
    def _flat(self, buf, indices, env, span=None):
        return self.eval_expr(buf.index_expr(indices), env, span)

    def eval_expr(self, e: ir.Expr, env: dict, span: Span | None = None):
        """Value of ``e`` for every thread (:func:`~tilemagic.ir.evaluate.eval_static` with loads from memory).

        ``env`` maps the ``ir.LoopVar`` objects of the enclosing loops to their values.

        Raises
        ------
        LaunchError
            Located at ``span``: a division by zero, a free loop variable, an out-of-bounds load.
        """
        try:
            return eval_static(e, self.tid, env, self._load)
        except Undetermined as err:
            raise LaunchError(f"cannot evaluate an index or value: {err}", span) from None

    def _load(self, e: ir.Load, env):
        idx = np.asarray(eval_static(e.buf.index_expr(e.indices), self.tid, env, self._load))
        idx = np.broadcast_to(idx, np.broadcast_shapes(idx.shape, (self.n,)))  # (..., threads)
        self._bounds(e.buf, idx.reshape(-1), e.buf.elem_bytes, None)
        if self._read_ctx is not None:
            self._track_load(e.buf, idx)
        if e.buf.scope == "local":
            view = self.local[e.buf.name].view(_BITS[e.buf.elem_bytes])
            return view[np.broadcast_to(np.arange(self.n), idx.shape), idx]
        return self.mem[e.buf.name].view(_BITS[e.buf.elem_bytes])[idx]

    def _track_load(self, buf, idx):
        """Loads of ``buf`` at element indices ``idx`` (..., threads) by the active threads: tell the tracker,
        and AND their init bits into ``_read_init`` (the init of the value being computed)."""
        if not self.hb.tracks(buf):
            return
        mask, span = self._read_ctx
        sel = np.broadcast_to(mask, idx.shape)
        eb = buf.elem_bytes
        tids = np.broadcast_to(self.tid, idx.shape)[sel]
        ok = np.ones(idx.shape, bool)
        ok[sel] = self.hb.read(buf, idx[sel][:, None] * eb + np.arange(eb), tids[:, None], span).all(1)
        self._read_init = ok if self._read_init is None else self._read_init & ok

    def _begin_reads(self, mask, span):
        self._read_ctx, self._read_init = (mask, span), None

    def _bounds(self, buf, idx, nbytes, span, mask=None):
        lim = buf.nbytes // buf.elem_bytes
        i = idx if mask is None else idx[mask]
        if i.size and (i.min() < 0 or i.max() * buf.elem_bytes + nbytes > lim * buf.elem_bytes):
            raise LaunchError(f"out-of-bounds access to {buf.name} (element {int(i.max())} of {lim})", span)

    # ------------------------------------------------------------------ run
    def run(self) -> dict[str, np.ndarray]:
        """Execute; return the global buffers as raw bytes (``name -> uint8 array``)."""
        self.run_stmt(self.k.body, np.ones(self.n, bool), {})
        self.tmem.exit_check()
        self.hazards = [(h.message, h.span) for h in self.hb.report.hazards]
        return {b.name: self.mem[b.name] for b in self.k.params}

    def run_stmt(self, s, mask, env):
        if not mask.any():
            return
        if isinstance(s, ir.Seq):
            for c in s.body:
                self.run_stmt(c, mask, env)
        elif isinstance(s, ir.Barrier):
            self.hb.event("cta_sync", np.nonzero(mask)[0], s.span)
        elif isinstance(s, ir.TcgenWait):
            self.hb.event(f"wait_{s.kind}", np.nonzero(mask)[0], s.span)
        elif isinstance(s, ir.Comment) or isinstance(s, ir.TcgenFence):
            return
        elif isinstance(s, ir.If):
            cond = np.broadcast_to(np.asarray(self.eval_expr(s.cond, env, s.span), bool), (self.n,))
            self.run_stmt(s.then, mask & cond, env)
        elif isinstance(s, ir.Grid):
            if isinstance(s.body, ir.Store) and all(ld.buf is not s.body.buf for ld in ir.loads(s.body.value)):
                self._grid_store(s, mask, env)
                return
            for point in np.ndindex(*s.extents):
                env2 = dict(env)
                for v, p in zip(s.vars, point):
                    env2[v] = p
                self.run_stmt(s.body, mask, env2)
        elif isinstance(s, ir.Store):
            self._begin_reads(mask, s.span)
            try:
                val = np.broadcast_to(self.eval_expr(s.value, env, s.span), (self.n,))
            finally:
                self._read_ctx = None
            idx = np.broadcast_to(self._flat(s.buf, s.indices, env, s.span), (self.n,))
            self._bounds(s.buf, idx, s.buf.elem_bytes, s.span, mask)
            bits = _BITS[s.buf.elem_bytes]
            if s.buf.scope == "local":
                self.local[s.buf.name].view(bits)[np.nonzero(mask)[0], idx[mask]] = val[mask]
            else:
                self.mem[s.buf.name].view(bits)[idx[mask]] = val[mask]
            self._track_store(s.buf, idx[mask], np.nonzero(mask)[0], val[mask], s.span,
                              np.broadcast_to(True if self._read_init is None else self._read_init, (self.n,))[mask])
        elif isinstance(s, ir.VecMove):
            self._vecmove(s, mask, env)
        elif isinstance(s, ir.TcgenLdSt):
            self._ldst(s, mask)
        elif isinstance(s, ir.LdStMatrix):
            self._ldstmatrix(s, mask, env)
        elif isinstance(s, (ir.TcgenAlloc, ir.TcgenRelinquish, ir.TcgenDealloc)):
            self._alloc_op(s, mask)
        else:
            raise TypeError(f"cannot simulate {type(s).__name__}")

    def _track_store(self, buf, idx, tids, val, span, init):
        """Element stores (``idx``, ``tids``, ``val``, ``init`` of one shape) for the tracker, byte by byte."""
        eb = buf.elem_bytes
        raw = np.ascontiguousarray(np.asarray(val).astype(_BITS[eb], copy=False)).view(np.uint8).reshape(-1, eb)
        self.hb.write(buf, idx.reshape(-1, 1) * eb + np.arange(eb), tids.reshape(-1, 1), span,
                      np.asarray(init).reshape(-1, 1), value=raw)

    def _grid_store(self, s: ir.Grid, mask, env, chunk: int = 1 << 15):
        """A serial loop of independent element stores, run in chunks of iterations at once.

        Only used when the stored buffer is not read by the loop (no loop-carried dependence),
        so the result equals the serial loop's; later iterations still win on repeated indices.
        """
        total = 1
        for e in s.extents:
            total *= e
        st = s.body
        assert isinstance(st, ir.Store)
        bits = _BITS[st.buf.elem_bytes]
        active = np.nonzero(mask)[0]
        same = st.buf.scope != "local" and not _uses_threads(st)
        every = active
        if same:
            active = active[:1]  # every thread stores the same value at the same place: do it once
        for start in range(0, total, chunk):
            lin = np.arange(start, min(total, start + chunk), dtype=np.int64)
            coords = np.unravel_index(lin, s.extents)
            env2 = dict(env)
            for v, c in zip(s.vars, coords):
                env2[v] = c[:, None]  # iterations × threads
            self._begin_reads(mask, st.span)
            try:
                val = np.broadcast_to(self.eval_expr(st.value, env2, st.span), (lin.size, self.n))[:, active]
                vinit = np.broadcast_to(True if self._read_init is None else self._read_init, (lin.size, self.n))
            finally:
                self._read_ctx = None
            idx = np.broadcast_to(self._flat(st.buf, st.indices, env2, st.span), (lin.size, self.n))[:, active]
            self._bounds(st.buf, idx.reshape(-1), st.buf.elem_bytes, st.span)
            if st.buf.scope == "local":
                rows = np.broadcast_to(active[None, :], idx.shape)
                self.local[st.buf.name].view(bits)[rows.reshape(-1), idx.reshape(-1)] = val.reshape(-1)
            else:
                self.mem[st.buf.name].view(bits)[idx.reshape(-1)] = val.reshape(-1)
            sh = (lin.size, every.size)  # (a broadcast store: every active thread stored these same bytes)
            self._track_store(st.buf, np.broadcast_to(idx[:, :1], sh) if same else idx, np.broadcast_to(every, sh),
                              np.broadcast_to(val[:, :1], sh) if same else val, st.span,
                              np.broadcast_to(vinit[:, every[:1]], sh) if same else vinit[:, every])

    def _byte_index(self, buf, idx, nbytes, mask, span):
        idx = np.broadcast_to(idx, (self.n,))
        off = idx * buf.elem_bytes
        if np.any(off[mask] % nbytes):
            t = int(np.nonzero(mask & (off % nbytes != 0))[0][0])
            raise LaunchError(
                f"misaligned {nbytes}-byte access to {buf.name} at byte {int(off[t])} by thread {t}", span)
        self._bounds(buf, idx, nbytes, span, mask)
        return off[:, None] + np.arange(nbytes)[None, :]

    def _vecmove(self, s: ir.VecMove, mask, env):
        nb = s.nbytes
        rows = np.nonzero(mask)[0]
        so = self._byte_index(s.src, self.eval_expr(s.src_index, env, s.span), nb, mask, s.span)[rows]
        do = self._byte_index(s.dst, self.eval_expr(s.dst_index, env, s.span), nb, mask, s.span)[rows]
        if s.src.scope == "local":
            data = self.local[s.src.name][rows[:, None], so]
        else:
            data = self.mem[s.src.name][so]
        init = self.hb.read(s.src, so, np.broadcast_to(rows[:, None], so.shape), s.span)
        if s.dst.scope == "local":
            self.local[s.dst.name][rows[:, None], do] = data
        else:
            self.mem[s.dst.name][do] = data
        self.hb.write(s.dst, do, np.broadcast_to(rows[:, None], do.shape), s.span, init, value=data)

    def _warps(self, mask, span):
        """Active warps; a partially active warp is an error (.sync.aligned)."""
        m = np.zeros(-(-self.n // 32) * 32, bool)
        m[: self.n] = mask
        per = m.reshape(-1, 32)
        part = per.any(1) & ~per.all(1)
        if part.any():
            w = int(np.argmax(part))
            raise emu_error(8, int(w * 32 + np.argmin(per[w])), span=span)
        return np.nonzero(per.all(1))[0]

    def _ldstmatrix(self, s: ir.LdStMatrix, mask, env):
        """ldmatrix / stmatrix with PTX's per-thread fragment (:func:`~tilemagic.arch.ldmatrix.fragment_elements`)."""
        warps = self._warps(mask, s.span)
        tids = warps[:, None] * 32 + np.arange(32)[None, :]
        addr = np.broadcast_to(np.asarray(self.eval_expr(s.addr, env, s.span), np.int64), (self.n,))
        rows = addr[tids[:, : 8 * s.num]]  # only threads 0 .. 8*num-1 supply addresses
        if np.any(rows % ROW_ELEMS):
            w, t = (int(x[0]) for x in np.nonzero(rows % ROW_ELEMS))
            raise LaunchError(f"{s.chain}: thread {int(tids[w, t])} supplies row address element "
                              f"{int(rows[w, t])} of {s.smem.name}, not 16-byte aligned", s.span)
        lim = s.smem.nbytes // 2
        if rows.min() < 0 or rows.max() + ROW_ELEMS > lim:
            raise LaunchError(f"{s.chain}: a row address leaves {s.smem.name} ({lim} elements)", s.span)
        lo, hi = fragment_elements(rows, s.num, s.trans)
        smem = self.mem[s.smem.name].view(np.uint16)
        regs = self.local[s.local.name].view(np.uint32)
        for i, r in enumerate(s.regs):
            w = np.broadcast_to(np.asarray(self.eval_expr(r, env, s.span), np.int64), (self.n,))[tids]
            if w.min() < 0 or w.max() >= regs.shape[1]:
                raise LaunchError(f"{s.chain}: register word {int(w.max())} is outside {s.local.name}", s.span)
            half = np.stack([lo[:, i], hi[:, i]], -1)[..., None] * 2 + np.arange(2)  # bytes of the two halves
            who = np.broadcast_to(tids[..., None, None], half.shape)
            rbytes = w[..., None] * 4 + np.arange(4)  # the register word's bytes (low half first)
            rwho = np.broadcast_to(tids[..., None], rbytes.shape)
            if s.op == "ld":
                init = self.hb.read(s.smem, half, who, s.span).reshape(rbytes.shape)
                regs[tids, w] = smem[lo[:, i]].astype(np.uint32) | (smem[hi[:, i]].astype(np.uint32) << 16)
                self.hb.write(s.local, rbytes, rwho, s.span, init)
            else:
                init = self.hb.read(s.local, rbytes, rwho, s.span).reshape(half.shape)
                val = regs[tids, w]
                smem[lo[:, i]] = (val & 0xFFFF).astype(np.uint16)
                smem[hi[:, i]] = (val >> 16).astype(np.uint16)
                self.hb.write(s.smem, half, who, s.span, init,
                              value=np.ascontiguousarray(val).view(np.uint8).reshape(half.shape))

    def _taddr(self, addr_buf):
        return int(self.mem[addr_buf.name].view(np.uint32)[0])

    def _ldst(self, s: ir.TcgenLdSt, mask):
        warps = self._warps(mask, s.span)
        tids = (warps[:, None] * 32 + np.arange(32)[None, :]).reshape(-1)
        lane, col = self.tmem.cells_of(s.shape, s.num, tids, self._taddr(s.addr), s.row, s.col, s.span)
        regs = self.local[s.local.name].view(np.uint32)
        ridx = s.reg_base + np.arange(s.regs)
        if regs.shape[1] < ridx[-1] + 1:
            raise LaunchError(f"{s.local.name} has {regs.shape[1]} 32-bit registers; {s.chain} needs {ridx[-1] + 1}",
                              s.span)
        if s.op == "ld":
            regs[tids[:, None], ridx[None, :]] = self.tmem.cells[lane, col]
        else:
            self.tmem.cells[lane, col] = regs[tids[:, None], ridx[None, :]]
            self.tmem.touched[lane, col] = True
        four = np.arange(4)  # register word r of thread i <-> TMEM cell (lane, col)[i, r], byte by byte
        self.hb.event(f"tcgen05.{s.op}", tids, s.span, local=s.local,
                      values=np.ascontiguousarray(regs[tids[:, None], ridx[None, :]]).view(np.uint8),
                      regs=np.broadcast_to((ridx[:, None] * 4 + four).reshape(-1), (tids.size, ridx.size * 4)),
                      cells=(((lane * 512 + col) * 4)[..., None] + four).reshape(tids.size, -1))

    def _alloc_op(self, s, mask):
        for w in self._warps(mask, s.span):
            warp = np.arange(32) + 32 * int(w)
            if isinstance(s, ir.TcgenAlloc):
                addr = self.tmem.alloc(s.ncols, int(w), s.span)
                self.mem[s.addr.name].view(np.uint32)[0] = addr
                self.hb.event("alloc", warp, s.span, cols=(addr & 0xFFFF, s.ncols))
            elif isinstance(s, ir.TcgenRelinquish):
                self.tmem.relinquish()
                self.hb.event("relinquish", warp, s.span)
            else:
                self.hb.event("dealloc", warp, s.span)
                self.tmem.dealloc(self._taddr(s.addr), s.ncols, int(w), s.span)


def simulate(kernel: ir.Kernel, inputs: dict[str, np.ndarray], strict: bool = False,
             hazards: list | None = None, tracker: Tracker | None = None) -> dict[str, np.ndarray]:
    """Run ``kernel`` on the CPU; return every global buffer after the kernel, viewed like its input.

    ``tracker``, when given, is the :class:`~tilemagic.sim.hb.Tracker` the run reports every access and
    event to (``tracker.finish()`` then gives the happens-before report); ``hazards``, when given,
    receives the ``(message, span)`` of each hazard it found (:attr:`Simulator.hazards`).
    """
    sim = Simulator(kernel, inputs, strict, tracker)
    raw = sim.run()
    if hazards is not None:
        hazards.extend(sim.hazards)
    out = {}
    for b in kernel.params:
        src = np.asarray(inputs[b.name])
        out[b.name] = raw[b.name].view(src.dtype).reshape(src.shape)
    return out
