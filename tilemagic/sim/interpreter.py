"""NumPy SIMT interpreter of the IR: the CPU backend (``--launch sim``).

The threads of the CTA are a NumPy vector: a statement is evaluated for the *active* threads only
(an ``If`` narrows the array of active thread ids, so the fallback's elected thread costs one
thread, not the CTA).  A ``Grid`` loop runs many iterations at once, in chunks of a bounded number
of (iteration, thread) lanes, whenever that gives the serial loop's result (see :meth:`Simulator._grid`):
the simulator's cost grows with the elements moved, and it never allocates elements × threads arrays.
A loop whose body is one copy between two global/shared buffers with affine indices, one ascending
run per chunk (one thread, or threads taking consecutive items), runs as slices of up to
:data:`RUN_ELEMS` elements with no per-element index array at all (:meth:`Simulator._copy_runs`).
Memory is bytes: global and shared buffers are flat ``uint8`` arrays, each local buffer a
``(threads, bytes)`` array, TMEM a :class:`~tilemagic.sim.tmem.TmemModel`.  Values move as raw bits
(fp16 as uint16, ...), so round trips are bit-exact.

Statements execute in program order for all threads (a legal schedule of a correctly synchronised
kernel); tcgen05.ld/st complete at issue, as in the emulation.  Because that schedule hides a missing
barrier, every memory access and synchronising event is reported to a :class:`~tilemagic.sim.hb.Tracker`
(items or :class:`~tilemagic.sim.hb.Run` s of items, in each thread's program order: races, in-flight
tcgen05 registers, uninitialised data), whose hazards the run keeps in :attr:`Simulator.hazards` (the
pipeline shows them as ``hazard:`` warnings).  Shared memory, registers and TMEM start as
:data:`~tilemagic.sim.hb.GARBAGE`, never zeros.  A ``deadline`` bounds the run (``--timeout``), and a
run longer than two seconds shows a progress bar (``tqdm.auto``).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import numpy as np

from ..arch.ldmatrix import ROW_ELEMS, fragment_elements
from ..arch import tcgen05 as tc
from ..errors import LaunchError, Span
from ..ir import nodes as ir
from ..ir.evaluate import Undetermined, eval_static
from .hb import Run, Tracker, garbage, written_and_read
from .tmem import TmemModel, emu_error

_BITS = ir.BITS_DTYPE
#: (iteration, thread) lanes one batched chunk of a ``Grid`` evaluates at most (bounds the temporaries).
CHUNK_LANES = 1 << 18
#: Elements one chunk of a contiguous copy loop moves at most (:meth:`Simulator._copy_runs`: no per-element arrays,
#: so the bound is only the deadline's granularity).
RUN_ELEMS = 1 << 22
#: Seconds after which a run shows progress.
PROGRESS_AFTER_S = 2.0


def _vec_dtype(nbytes: int) -> np.dtype:
    """The NumPy type of one ``nbytes`` vector (an unsigned integer up to 8 bytes, else raw bytes)."""
    return np.dtype(_BITS[nbytes]) if nbytes in _BITS else np.dtype((np.void, nbytes))


def _vectors(a: np.ndarray, nb: int) -> np.ndarray:
    """``a`` (bytes on its last axis) viewed as ``nb``-byte vectors (a trailing partial vector left out)."""
    return a[..., : a.shape[-1] // nb * nb].view(_vec_dtype(nb))


def _run_start(idx: np.ndarray) -> int | None:
    """The first index when ``idx`` (row-major) is one ascending run ``first, first + 1, ...``, else None."""
    flat = idx.reshape(-1)
    n = flat.size
    if not n:
        return None
    first = int(flat[0])
    if int(flat[-1]) - first != n - 1:
        return None
    if n > 2:
        probe = np.linspace(0, n - 1, min(n, 17)).astype(np.int64)  # (a sample first: most non-runs fail here)
        if not np.array_equal(flat[probe] - first, probe) or not bool(np.all(flat[1:] - flat[:-1] == 1)):
            return None
    elif n == 2 and int(flat[1]) != first + 1:
        return None
    return first


def _byte_offsets(idx: np.ndarray, unit: int, first: int | None) -> np.ndarray:
    """Byte offsets ``(*idx.shape, unit)`` of the ``unit``-byte items at indices ``idx`` (``first``: a run's start)."""
    if first is not None:
        return np.arange(first * unit, (first + idx.size) * unit, dtype=np.int64).reshape(idx.shape + (unit,))
    # built byte-major, then viewed with the byte axis last: NumPy's inner loop runs over the items, not the bytes
    return np.moveaxis(np.add.outer(np.arange(unit, dtype=np.int64), idx * unit), 0, -1)


def _all(a) -> bool:
    """``np.all(a)``, in O(1) for a broadcast scalar (what a tracker answers for memory with no poison)."""
    a = np.asarray(a)
    if a.size and not any(a.strides):
        return bool(a.flat[0])
    return bool(np.all(a))


def _uses_threads(st: ir.Stmt) -> bool:
    """Does a Store depend on the thread id (a thread variable, or registers on either side)?"""
    return not isinstance(st, ir.Store) or st.buf.scope == "local" or any(
        isinstance(e, ir.ThreadVar) or (isinstance(e, ir.Load) and e.buf.scope == "local") for e in ir.iter_exprs(st))


def _stmt_work(s: ir.Stmt) -> int:
    """Statement executions of ``s`` (loop trip counts multiplied; every branch counted): the progress total."""
    if isinstance(s, ir.Seq):
        return sum(_stmt_work(c) for c in s.body)
    if isinstance(s, ir.If):
        return 1 + _stmt_work(s.then)  # (the condition is a tick of its own)
    if isinstance(s, ir.Grid):
        return int(np.prod(s.extents, dtype=np.int64)) * _stmt_work(s.body)
    return 1


def _affine(e: ir.Expr) -> tuple[dict, list] | None:
    """``e`` as ``Σ coef_v * v`` over its loop variables plus a loop-free rest (``[(factor, expr), ...]``, evaluated per
    thread), or None when a loop variable enters through anything but ``+``, ``-`` and ``*`` by a constant, or an
    index loads from memory.  One pass over the tree."""
    if isinstance(e, ir.LoopVar):
        return {e: 1}, []
    if isinstance(e, ir.Load):
        return None
    if not isinstance(e, ir.Bin):
        return {}, [(1, e)]
    a, b = _affine(e.a), _affine(e.b)
    if a is None or b is None:
        return None
    if not a[0] and not b[0]:  # loop-free: the whole subtree is one term of the rest
        return {}, [(1, e)]
    if e.op in ("+", "-"):
        sign = 1 if e.op == "+" else -1
        coefs = dict(a[0])
        for v, c in b[0].items():
            coefs[v] = coefs.get(v, 0) + sign * c
        return coefs, a[1] + [(sign * f, x) for f, x in b[1]]
    if e.op == "*":
        for f, k in ((a, e.b), (b, e.a)):
            if isinstance(k, ir.Const):
                return {v: c * k.value for v, c in f[0].items()}, [(c * k.value, y) for c, y in f[1]]
    return None


class _Progress:
    """Progress of a run, shown once it has taken :data:`PROGRESS_AFTER_S` (``tqdm.auto``: a widget in a
    notebook, one updating line on a terminal; a plain ``\\r`` line on stderr without tqdm)."""

    def __init__(self, total: int, label: str):
        self.total, self.label, self.done = max(total, 1), label, 0
        self.t0 = time.monotonic()
        self.bar = None
        self.plain = False

    def update(self, k: int) -> None:
        self.done += k
        if self.bar is not None:
            self.bar.update(k)
            return
        if self.plain:
            sys.stderr.write(f"\r{self.label}: {100 * self.done // self.total}%")
            return
        if time.monotonic() - self.t0 < PROGRESS_AFTER_S:
            return
        try:
            from tqdm.auto import tqdm
        except ImportError:
            self.plain = True
            return
        bar = self.bar = tqdm(total=self.total, initial=self.done, desc=self.label, unit="stmt", leave=False)
        bar.start_t -= time.monotonic() - self.t0  # (elapsed since the run began, not since the bar appeared)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        elif self.plain:
            sys.stderr.write("\r" + " " * (len(self.label) + 8) + "\r")


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
    timeout : float, optional
        Seconds the run may take (``--timeout``); past it a LaunchError located at the statement
        running then ("the simulator ran past --timeout 10 s at L7").
    progress : bool
        Show progress once the run has taken two seconds.
    trace : callable, optional
        The address trace (:class:`tilemagic.sim.banks.BankTrace`): ``trace(stmt, tids, env)`` before every
        Store, VecMove and ldmatrix/stmatrix runs, with its active threads and loop variables (ints, or the
        arrays of a batched chunk); a one-statement copy loop then runs through the general path, so every
        statement is seen.

    Attributes
    ----------
    hazards : list of (str, Span)
        After :meth:`run`: the tracker's hazards (:meth:`tilemagic.sim.hb.Tracker.finish`).
    lanes : int
        (iteration, thread) lanes evaluated so far: the work the run did (the fallback's single
        elected thread copying E elements costs E lanes whatever the CTA size).
    """

    def __init__(self, kernel: ir.Kernel, inputs: dict[str, np.ndarray], strict: bool = False,
                 tracker: Tracker | None = None, timeout: float | None = None, progress: bool = False,
                 trace: Callable | None = None):
        self.k = kernel
        self.trace = trace
        n = kernel.threads
        self.n = n
        self.tid = np.arange(n, dtype=np.int64)
        self.mem: dict[str, np.ndarray] = {}
        written, _ = written_and_read(kernel)
        for b in kernel.params:
            a = np.ascontiguousarray(inputs[b.name])
            if a.nbytes != b.nbytes:
                raise LaunchError(f"input for {b.name} has {a.nbytes} bytes, expected {b.nbytes}")
            flat = a.view(np.uint8).reshape(-1)
            if b.name in written:
                self.mem[b.name] = flat.copy()
            else:  # never written: the input itself, read-only (no copy of a buffer the kernel only reads)
                self.mem[b.name] = flat.view()
                self.mem[b.name].flags.writeable = False
        for b in kernel.shared:
            self.mem[b.name] = garbage(b.nbytes)  # uninitialised: garbage, and poison for the tracker
        self.local = {b.name: garbage((n, b.nbytes)) for b in kernel.locals}
        self.tmem = TmemModel(strict)
        self.tmem.cells.view(np.uint8).reshape(-1)[:] = garbage(self.tmem.cells.nbytes)
        self.hb = tracker if tracker is not None else Tracker(kernel, n, strict)
        self.timeout = timeout
        self._deadline = None if timeout is None else time.monotonic() + timeout
        self._progress = _Progress(_stmt_work(kernel.body), f"simulating {kernel.name}") if progress else None
        self.lanes = 0
        # the statement being evaluated: its loads' AND of init; every active thread of a uniform Store
        # (evaluated for the first of them only: the loads are reported for all)
        self._init: np.ndarray | bool = True
        self._uniform: np.ndarray | None = None
        # the iteration shape of the batched loop chunk being run (one axis per loop variable it spans; () outside)
        self._gshape: tuple[int, ...] = ()
        self._plans: dict[int, tuple] = {}  # id(Grid) -> (its body as a statement list or None, check, private, copy)
        # per-statement analysis shared by statements of one shape (:meth:`_skey`): ldmatrix/stmatrix fragments
        self._keys: dict[int, tuple] = {}
        self._intern: dict[tuple, int] = {}
        self._ldst_plans: dict[tuple, tuple] = {}
        # registers private to one iteration of a batched loop body: name -> (base byte, bytes, init) per lane
        self._private: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self.hazards: list = []

    # ------------------------------------------------------------------ time and progress
    def _tick(self, span: Span | None, work: int = 1) -> None:
        """Between statements and chunks: past the deadline a located LaunchError; progress."""
        if self._deadline is not None and time.monotonic() > self._deadline:
            at = f" at L{span.line}" if span else ""
            raise LaunchError(f"the simulator ran past --timeout {self.timeout:g} s{at}", span,
                              hint="raise --timeout, or simulate a smaller tile")
        if self._progress is not None:
            self._progress.update(work)

    # ------------------------------------------------------------------ expressions
    def eval_expr(self, e: ir.Expr, env: dict, span: Span | None = None, tids: np.ndarray | None = None):
        """Value of ``e`` for the threads ``tids`` (default every thread of the CTA):
        :func:`~tilemagic.ir.evaluate.eval_static` with loads from memory.

        ``env`` maps the ``ir.LoopVar`` objects of the enclosing loops to their values (ints, or
        ``(iterations, 1)`` arrays in a batched loop: the values then have shape ``(iterations, threads)``).

        Raises
        ------
        LaunchError
            Located at ``span``: a division by zero, a free loop variable, an out-of-bounds load.
        """
        tids = self.tid if tids is None else tids
        try:
            return eval_static(e, tids, env, self._loader(tids, span))
        except Undetermined as err:
            raise LaunchError(f"cannot evaluate an index or value: {err}", span) from None

    def _loader(self, tids: np.ndarray, span: Span | None) -> Callable:
        def load(e: ir.Load, env):
            return self._load(e, env, tids, span)
        return load

    def _load(self, e: ir.Load, env, tids: np.ndarray, span: Span | None):
        buf, eb = e.buf, e.buf.elem_bytes
        idx = np.asarray(eval_static(buf.index_expr(e.indices), tids, env, self._loader(tids, span)), np.int64)
        if self._gshape:  # a batched chunk: (iterations, threads); the value goes back in the loop's shape
            full = self._gshape + tids.shape
            idx = self._lanes(idx, tids.size)
        else:
            idx = np.broadcast_to(idx, np.broadcast_shapes(idx.shape, tids.shape))  # (..., threads)
            full = idx.shape
        return self._load_at(buf, eb, idx, tids, span).reshape(full)

    def _load_at(self, buf, eb, idx, tids, span):
        first = self._bounds(buf, idx, eb, span)
        who = np.broadcast_to(tids, idx.shape)
        priv = self._private.get(buf.name)
        if priv is not None:  # a register this iteration wrote earlier in the batched body
            base, data, init = priv
            rel = _byte_offsets(idx, eb, first) - base[..., None]
            val = np.take_along_axis(data, rel, -1)
            ini = np.take_along_axis(init, rel, -1)
            self._track_read(buf, idx, eb, first, tids, span)
            self._and_init(ini.all(-1))
            return val.view(_BITS[eb])[..., 0]
        if self.hb.tracks(buf):
            if self._uniform is not None and tids.size == 1:  # every active thread of a uniform Store loads the same
                rep = np.broadcast_to(idx[..., None] * eb, idx.shape + (self._uniform.size,))
                ini = self.hb.read(buf, rep, np.broadcast_to(self._uniform, rep.shape), span, eb)
                if not _all(ini):
                    self._and_init(ini.all(-1))
            else:
                ini = self._track_read(buf, idx, eb, first, tids, span)
                if not _all(ini):
                    self._and_init(ini)
        if buf.scope == "local":
            return self.local[buf.name].view(_BITS[eb])[who, idx]
        view = self.mem[buf.name].view(_BITS[eb])
        if first is not None:
            return view[first:first + idx.size].reshape(idx.shape)
        return view[idx]

    def _access(self, buf, idx: np.ndarray, item: int, first: int | None, tids: np.ndarray):
        """The tracker's form of the ``item``-byte accesses at item indices ``idx`` (``(..., threads)``) of ``tids``:
        a :class:`~tilemagic.sim.hb.Run` (one ascending run of a global/shared buffer, in the lanes' order or thread
        by thread; for registers the same run in every thread's part, ``idx`` not depending on the thread) with its
        threads, or item offsets; and how the tracker's per-item answer maps back to ``idx``'s shape (``"run"``,
        ``"trun"``, ``"block"``, ``"items"``)."""
        if buf.scope != "local":
            if first is not None:
                who = int(tids[0]) if tids.size == 1 else tids.astype(np.int32)  # (the run's items cycle over tids)
                return Run(first * item, idx.size, item), who, "run"
            if idx.ndim >= 2 and tids.size > 1:  # one run thread by thread (each thread a row of a tile)
                f = _run_start(np.moveaxis(idx, -1, 0))
                if f is not None:
                    return Run(f * item, idx.size, item), np.repeat(tids.astype(np.int32), idx.size // tids.size), \
                        "trun"
        elif idx.ndim and idx.shape[-1] == tids.size and (idx.strides[-1] == 0 or tids.size == 1):
            f = _run_start(idx[..., 0])
            if f is not None:
                return Run(f * item, idx[..., 0].size, item), tids, "block"
        return idx * item, np.broadcast_to(tids, idx.shape), "items"

    @staticmethod
    def _back(ini, form: str, shape):
        """The tracker's per-item init answer in ``shape`` (the accesses' ``(..., threads)``)."""
        if _all(ini):
            return True
        if form in ("block", "trun"):  # (threads, items) -> (..., threads)
            return np.moveaxis(np.asarray(ini).reshape((shape[-1],) + tuple(shape[:-1])), 0, -1)
        return np.asarray(ini).reshape(shape)

    def _track_read(self, buf, idx, item, first, tids, span, acc=None):
        """Report the reads at item indices ``idx`` (``(..., threads)``) to the tracker: init bits in ``idx``'s shape
        (or True).  ``acc``: :meth:`_access`'s answer when the caller has it."""
        if not self.hb.tracks(buf):
            return True
        off, who, form = acc or self._access(buf, idx, item, first, tids)
        return self._back(self.hb.read(buf, off, who, span, item), form, idx.shape)

    def _track_write(self, buf, idx, item, first, tids, span, ini, value: Callable, acc=None) -> None:
        """Report the writes at item indices ``idx`` to the tracker; ``value()`` gives the stored items (asked for only
        where two lanes may store to one place)."""
        if not self.hb.tracks(buf):
            return
        off, who, form = acc or self._access(buf, idx, item, first, tids)
        if not _all(ini):
            ini = np.broadcast_to(ini, idx.shape)
            if form in ("block", "trun"):  # (threads, items)
                ini = np.moveaxis(ini, -1, 0).reshape(ini.shape[-1], -1)
                ini = ini.reshape(-1) if form == "trun" else ini
            elif form == "run":
                ini = ini.reshape(-1)
        else:
            ini = True
        self.hb.write(buf, off, who, span, ini, value=None if form != "items" else value(), nbytes=item)

    def _lanes(self, x, n: int) -> np.ndarray:
        """``x`` (a value over the chunk's iterations and ``n`` threads) as a ``(iterations, n)`` array."""
        return np.broadcast_to(x, self._gshape + (n,)).reshape(-1, n)

    def _and_init(self, ini) -> None:
        if self._init is True and _all(ini):
            return
        self._init = np.logical_and(self._init, ini)

    def _bounds(self, buf, idx, nbytes, span, unit: int | None = None) -> int | None:
        """Check that the ``nbytes`` accesses at indices ``idx`` (in ``unit``-byte items, default elements) stay
        inside ``buf``; return the start of ``idx`` when it is one ascending run (:func:`_run_start`)."""
        unit = unit or buf.elem_bytes
        first = _run_start(idx)
        if not idx.size:
            return first
        lo, hi = (first, first + idx.size - 1) if first is not None else (int(idx.min()), int(idx.max()))
        if lo < 0 or hi * unit + nbytes > buf.nbytes // buf.elem_bytes * buf.elem_bytes:
            lim = buf.nbytes // buf.elem_bytes
            raise LaunchError(f"out-of-bounds access to {buf.name} (element {hi * unit // buf.elem_bytes} of {lim})",
                              span)
        return first

    # ------------------------------------------------------------------ run
    def run(self) -> dict[str, np.ndarray]:
        """Execute; return the global buffers as raw bytes (``name -> uint8 array``)."""
        try:
            self.run_stmt(self.k.body, self.tid, {})
        finally:
            if self._progress is not None:
                self._progress.close()
        self.tmem.exit_check()
        self.hazards = [(h.message, h.span) for h in self.hb.finish().hazards]
        return {b.name: self.mem[b.name] for b in self.k.params}

    def run_stmt(self, s: ir.Stmt, tids: np.ndarray, env: dict) -> None:
        """Run ``s`` for the active threads ``tids`` (sorted CTA-linear ids, int64)."""
        if not tids.size:
            return
        if isinstance(s, ir.Seq):
            for c in s.body:
                self.run_stmt(c, tids, env)
            return
        if isinstance(s, ir.Grid):
            self._grid(s, tids, env)
            return
        self._tick(s.span)
        if isinstance(s, ir.Barrier):
            self.hb.event("cta_sync", tids, s.span)
        elif isinstance(s, ir.TcgenWait):
            self.hb.event(f"wait_{s.kind}", tids, s.span)
        elif isinstance(s, (ir.Comment, ir.TcgenFence)):
            return
        elif isinstance(s, ir.If):
            self._init = True
            cond = np.broadcast_to(np.asarray(self.eval_expr(s.cond, env, s.span, tids), bool), tids.shape)
            self.run_stmt(s.then, tids[cond], env)
        elif isinstance(s, (ir.Store, ir.VecMove)):
            self._exec(s, tids, env, 1)
        elif isinstance(s, ir.TcgenLdSt):
            self._ldst(s, tids)
        elif isinstance(s, ir.LdStMatrix):
            self._ldstmatrix(s, tids, env)
        elif isinstance(s, (ir.TcgenAlloc, ir.TcgenRelinquish, ir.TcgenDealloc)):
            self._alloc_op(s, tids)
        else:
            raise TypeError(f"cannot simulate {type(s).__name__}")

    # ------------------------------------------------------------------ element and vector moves
    def _exec(self, s: ir.Store | ir.VecMove, tids: np.ndarray, env: dict, iters: int,
              private: frozenset = frozenset()) -> None:
        """One Store or VecMove for the threads ``tids`` over ``iters`` loop iterations at once (``env``'s loop
        variables are ``(iters, 1)`` arrays, or ints when ``iters == 1``), in serial order: iteration-major, the
        reads before the writes.  A write to a buffer named in ``private`` is also kept per iteration for the
        body's later statements (:attr:`_private`)."""
        if self.trace is not None:
            self.trace(s, tids, env)
        if isinstance(s, ir.Store):
            self._store(s, tids, env, iters, private)
        else:
            self._vecmove(s, tids, env, iters, private)

    def _store(self, s: ir.Store, tids, env, iters, private):
        buf, eb = s.buf, s.buf.elem_bytes
        uniform = buf.scope != "local" and not _uses_threads(s) and tids.size > 1
        ev = tids[:1] if uniform else tids  # every thread stores the same value at the same place: evaluate once
        shape = (iters, ev.size)
        self._init, self._uniform = True, tids if uniform else None
        try:
            val = self._lanes(self.eval_expr(s.value, env, s.span, ev), ev.size)
        finally:
            self._uniform = None
        ini = np.broadcast_to(self._init, shape)  # the loads AND their init in (iterations, threads) form
        idx = self._lanes(np.asarray(self.eval_expr(buf.index_expr(s.indices), env, s.span, ev), np.int64), ev.size)
        first = self._bounds(buf, idx, eb, s.span)
        self.lanes += val.size
        if buf.scope == "local":
            self.local[buf.name].view(_BITS[eb])[np.broadcast_to(tids, shape), idx] = val
        elif first is not None:
            self.mem[buf.name].view(_BITS[eb])[first:first + idx.size] = val.reshape(-1)
        else:
            self.mem[buf.name].view(_BITS[eb])[idx.reshape(-1)] = val.reshape(-1)
        if not self.hb.tracks(buf):
            pass
        elif uniform:  # the tracker sees every active thread store the same bytes (broadcast views, no copies)
            offs = np.broadcast_to(idx[..., None] * eb, idx.shape + (tids.size,))
            self.hb.write(buf, offs, np.broadcast_to(tids, offs.shape), s.span,
                          True if _all(ini) else np.broadcast_to(ini[..., None], offs.shape),
                          value=np.broadcast_to(np.asarray(val, _BITS[eb])[..., None], offs.shape), nbytes=eb)
        else:
            self._track_write(buf, idx, eb, first, tids, s.span, ini, lambda: np.asarray(val, _BITS[eb]))
        if buf.name in private:
            off = _byte_offsets(idx, eb, first)
            self._private[buf.name] = (off[..., 0], self._bytes_of(val, eb), np.broadcast_to(ini[..., None], off.shape))

    @staticmethod
    def _bytes_of(val: np.ndarray, eb: int) -> np.ndarray:
        return np.array(val, dtype=_BITS[eb], order="C", copy=True)[..., None].view(np.uint8)  # not a view

    def _vec_offsets(self, buf, e, tids, env, nb, span, shape):
        """Vector indices ``(..., threads)`` (in ``nb``-byte vectors) of the vectors at element index ``e``
        (aligned, in bounds), and the first of them when they are one ascending run."""
        raw = np.asarray(self.eval_expr(e, env, span, tids), np.int64)  # (before the lanes' broadcast: a thread-
        off = raw * buf.elem_bytes  # independent index keeps a zero stride, which the tracker sees as one run)
        bad = off % nb != 0
        if bad.any():
            i = np.unravel_index(int(np.argmax(self._lanes(bad, tids.size))), shape)
            raise LaunchError(f"misaligned {nb}-byte access to {buf.name} at byte "
                              f"{int(self._lanes(off, tids.size)[i])} by thread {int(tids[i[-1]])}", span)
        vec = self._lanes(off // nb, tids.size)
        return vec, self._bounds(buf, vec, nb, span, unit=nb)

    def _vecmove(self, s: ir.VecMove, tids, env, iters, private):
        nb, vt = s.nbytes, _vec_dtype(s.nbytes)
        shape = (iters, tids.size)
        self._init = True
        sv, sfirst = self._vec_offsets(s.src, s.src_index, tids, env, nb, s.span, shape)
        dv, dfirst = self._vec_offsets(s.dst, s.dst_index, tids, env, nb, s.span, shape)
        self.lanes += sv.size
        priv = self._private.get(s.src.name)
        if priv is not None:
            base, data, init = priv
            rel = _byte_offsets(sv, nb, sfirst) - base[..., None]
            vals = np.take_along_axis(data, rel, -1)
            ini = np.take_along_axis(init, rel, -1).all(-1)
            self._track_read(s.src, sv, nb, sfirst, tids, s.span)
            vals = np.ascontiguousarray(vals).view(vt)[..., 0]  # private bytes -> vectors
        else:
            acc = self._access(s.src, sv, nb, sfirst, tids)
            ini = self._track_read(s.src, sv, nb, sfirst, tids, s.span, acc)
            vals = self._move(s.src, nb, sv, tids, acc)
        dacc = self._access(s.dst, dv, nb, dfirst, tids)
        self._move(s.dst, nb, dv, tids, dacc, vals)
        self._track_write(s.dst, dv, nb, dfirst, tids, s.span, ini, lambda: np.ascontiguousarray(vals), dacc)
        if s.dst.name in private:
            db = _byte_offsets(dv, nb, dfirst)
            self._private[s.dst.name] = (dv * nb, np.array(vals, order="C", copy=True)[..., None].view(np.uint8),
                                         np.broadcast_to(np.asarray(ini)[..., None], db.shape))

    def _move(self, buf, nb: int, idx: np.ndarray, tids: np.ndarray, acc, vals: np.ndarray | None = None):
        """Get (``vals`` None) or put the ``nb``-byte vectors at vector indices ``idx`` (``(iterations, threads)``),
        with slices where :meth:`_access` found a run (``run``, ``trun``: thread by thread, ``block``: the same
        registers of every thread)."""
        off, _, form = acc
        local = buf.scope == "local"
        mem = _vectors(self.local[buf.name] if local else self.mem[buf.name], nb)
        if form == "items":
            at = (np.broadcast_to(tids, idx.shape), idx) if local else idx
            if vals is None:
                return mem[at]
            mem[at] = vals
            return None
        f, n = off.start // nb, off.count
        if form == "block":  # rows tids, columns f .. f + n: (threads, n) <-> (n, threads)
            if vals is None:
                return mem[tids, f:f + n].T.reshape(idx.shape)
            mem[tids, f:f + n] = np.asarray(vals).reshape(n, tids.size).T
        elif form == "trun":  # thread j's items are the j-th n // threads of the run
            if vals is None:
                return mem[f:f + n].reshape(tids.size, -1).T.reshape(idx.shape)
            mem[f:f + n].reshape(tids.size, -1)[:] = np.asarray(vals).reshape(-1, tids.size).T
        else:
            if vals is None:
                return mem[f:f + n].reshape(idx.shape)
            mem[f:f + n] = np.asarray(vals).reshape(-1)
        return None

    # ------------------------------------------------------------------ loops
    def _grid(self, s: ir.Grid, tids: np.ndarray, env: dict) -> None:
        """A serial loop nest, run in chunks of iterations at once where the result equals the serial loop's.

        The body must be Store/VecMove statements (a ``Seq`` of them: ld -> register -> st chains).  Per chunk,
        every buffer the body writes and also reads, or writes from two statements, is checked on the chunk's
        indices (:meth:`_interferes`): an element touched by two iterations, one of them writing, where a read or
        a second writing statement is involved, would see another order in the batch — such a chunk is split
        down to serial iterations.  A register a statement writes and later statements of the same iteration
        read back (the scratch of ``gmem_smem``) is kept per iteration (privatised).  Anything else in the body
        (barriers, branches, tcgen05, ldmatrix, nested loops) runs iteration by iteration.
        """
        plan = self._plans.get(id(s))
        if plan is None:  # the body's statements and which buffers a chunk must check: once per loop node
            flat = self._flat_body(s.body)
            flat = None if flat is None else [b for b in flat if not isinstance(b, ir.Comment)]
            copy = self._copy_plan(s, flat) if flat and len(flat) == 1 else None
            if copy is not None and copy[1] is not copy[2]:  # (one statement, two buffers, no loads in its indices)
                plan = (flat, frozenset(), frozenset(), copy)
            else:
                plan = (flat, *self._needs_check(flat)) if flat else (flat, frozenset(), frozenset())
                plan += (copy if not plan[1] else None,)
            self._plans[id(s)] = plan
        body, check, private, copy = plan
        if copy is not None and self.trace is None and self._copy_runs(s, copy, tids, env):
            return
        if body is None:
            for point in np.ndindex(*s.extents):
                env2 = dict(env)
                env2.update(zip(s.vars, (int(p) for p in point)))
                self.run_stmt(s.body, tids, env2)
            return
        if not body:
            return
        per = sum(st.nbytes if isinstance(st, ir.VecMove) else st.buf.elem_bytes for st in body)
        chunk = max(1, CHUNK_LANES // max(1, tids.size * max(1, per // 4)))
        for start, stop in self._ranges(s.extents, chunk):
            self._tick(body[0].span, len(body) * (stop - start))
            self._grid_chunk(s, body, tids, env, start, stop, check, private)

    @staticmethod
    def _copy_plan(s: ir.Grid, body: list) -> tuple | None:
        """For a loop whose body is one copy statement (a Store of a Load, or a VecMove) between global/shared
        buffers: the affine forms of its two indices (:func:`_affine`), when both advance by whole items per
        iteration in row-major order (index = base + iteration x items), else None."""
        st = body[0]
        if isinstance(st, ir.Store):
            if not isinstance(st.value, ir.Load) or st.value.buf.elem_bytes != st.buf.elem_bytes:
                return None
            src, dst, se, de, items = st.value.buf, st.buf, st.value.buf.index_expr(st.value.indices), \
                st.buf.index_expr(st.indices), 1
        else:
            src, dst, se, de, items = st.src, st.dst, st.src_index, st.dst_index, st.elems
        if src.scope == "local" or dst.scope == "local" or src.elem_bytes != dst.elem_bytes:
            return None
        sf, df = _affine(se), _affine(de)
        if sf is None or df is None:
            return None
        forms = (sf, df)
        inner = 1  # per loop variable: the coefficient it must have, in items of the threads' row (x threads x items)
        want = {}
        for v, n in zip(reversed(s.vars), reversed(s.extents)):
            want[v] = inner if n > 1 else None
            inner *= n
        for coefs, _ in forms:
            if any(w is not None and coefs.get(v, 0) % items for v, w in want.items()):
                return None
        return st, src, dst, forms[0], forms[1], want

    def _copy_runs(self, s: ir.Grid, plan: tuple, tids: np.ndarray, env: dict) -> bool:
        """Run a one-statement copy loop (:meth:`_copy_plan`) as slices of at most :data:`RUN_ELEMS` elements, when
        each chunk's source and destination are one ascending run: one thread, or threads that each take the next
        item of an iteration (thread ``tids[j]`` at base + ``j`` items) with iterations one CTA-row apart.  No
        per-element index array is built.  False (the caller runs the loop) for anything else: bases of another
        shape, an outer loop variable given as an array, a misaligned or out-of-bounds access (which the general
        path reports, located)."""
        st, src, dst, sform, dform, want = plan
        eb = dst.elem_bytes
        per = st.elems if isinstance(st, ir.VecMove) else 1  # elements per item
        nb = per * eb
        m = tids.size
        bases = []
        for coefs, rest in (sform, dform):
            b = np.zeros(m, np.int64)
            for v, w in want.items():  # iteration i of thread j at base + i * m * per + j * per: one run
                if w is not None and coefs.get(v, 0) != w * m * per:
                    return False
            for v, c in coefs.items():
                if v in want:
                    continue
                if isinstance(env.get(v), (int, np.integer)):
                    b += c * int(env[v])  # (an outer loop's variable, one value here)
                else:
                    return False
            for f, x in rest:
                val = np.asarray(self.eval_expr(x, env, st.span, tids), np.int64)
                if val.size not in (1, m):
                    return False
                b = b + f * val.reshape(-1)
            b0 = int(b[0])
            if m > 1 and not np.array_equal(b - b0, np.arange(0, m * per, per)):
                return False
            bases.append(b0)
        total = int(np.prod(s.extents, dtype=np.int64)) * per * m  # elements
        for buf, base in ((src, bases[0]), (dst, bases[1])):
            if (base * eb) % nb or base < 0 or (base + total) * eb > buf.nbytes // eb * eb:
                return False
        step = max(per * m, RUN_ELEMS // (per * m) * (per * m))  # whole iterations per chunk
        row = tids.astype(np.int32)  # (the tracker cycles a run's threads over this row)
        for a in range(0, total, step):
            n = min(step, total - a)
            self._tick(st.span, n // (per * m))
            s0, d0 = bases[0] + a, bases[1] + a
            who = int(tids[0]) if m == 1 else row
            ini = self.hb.read(src, Run(s0 * eb, n // per, nb), who, st.span, nb) if self.hb.tracks(src) else True
            self.mem[dst.name][d0 * eb:(d0 + n) * eb] = self.mem[src.name][s0 * eb:(s0 + n) * eb]
            if self.hb.tracks(dst):
                self.hb.write(dst, Run(d0 * eb, n // per, nb), who, st.span, True if _all(ini) else ini, nbytes=nb)
            self.lanes += n // per
        return True

    @staticmethod
    def _ranges(extents: tuple[int, ...], chunk: int):
        """Consecutive ranges of linear iterations, each at most ``chunk`` long (when the innermost extent is)
        and, where possible, whole blocks of the inner loops (:meth:`_env` then keeps one axis per variable)."""
        total = int(np.prod(extents, dtype=np.int64))
        inner, m = 1, len(extents)
        while m > 0 and inner * extents[m - 1] <= chunk:
            m -= 1
            inner *= extents[m]
        if m == 0:
            yield 0, total
            return
        step = max(1, chunk // inner) * inner  # whole blocks of the inner loops, within one value of the outer ones
        block = extents[m - 1] * inner
        for base in range(0, total, block):
            for start in range(base, base + block, step):
                yield start, min(start + step, base + block)

    def _grid_chunk(self, s, body, tids, env, start, stop, check, private):
        if stop - start > 1 and check and self._interferes(s, body, tids, env, start, stop, check, private):
            self._tick(body[0].span, 0)  # the deadline holds in a chunk split down to serial iterations too
            mid = (start + stop) // 2
            self._grid_chunk(s, body, tids, env, start, mid, check, private)
            self._grid_chunk(s, body, tids, env, mid, stop, check, private)
            return
        env2, self._gshape = self._env(s, env, start, stop)
        try:
            for st in body:
                self._exec(st, tids, env2, stop - start, private)
        finally:
            self._private, self._gshape = {}, ()

    @staticmethod
    def _env(s: ir.Grid, env: dict, start: int, stop: int) -> tuple[dict, tuple[int, ...]]:
        """The loop variables over the iterations ``[start, stop)``, and the shape of those iterations.

        A range made of whole blocks of the inner loops (under one value of the outer ones) gives each variable
        its own axis (``(r, e_m, ..., e_k, 1)`` arrays, threads last): no per-iteration coordinate arrays.  Any
        other range gives ``(iterations, 1)`` arrays (``np.unravel_index``).
        """
        env2 = dict(env)
        ext = s.extents
        inner, m = 1, len(ext)
        while m > 0 and start % (inner * ext[m - 1]) == 0 and (stop - start) % (inner * ext[m - 1]) == 0 \
                and stop - start >= inner * ext[m - 1]:
            m -= 1
            inner *= ext[m]
        if m == 0 or (start // inner) // ext[m - 1] == (stop - 1) // inner // ext[m - 1]:
            outer = np.unravel_index(start // inner, ext[:m]) if m else ()
            nk = len(ext) - m + (1 if m else 0)  # axes: the range of var m-1 (if any), then vars m..k-1
            for d, v in enumerate(s.vars[:m - 1] if m else ()):
                env2[v] = int(outer[d])
            axes: list[int] = []
            if m:
                lo = int(outer[m - 1])
                shp = [1] * (nk + 1)
                axes.append((stop - start) // inner)
                shp[0] = axes[-1]
                env2[s.vars[m - 1]] = np.arange(lo, lo + axes[-1], dtype=np.int64).reshape(shp)
            for j, v in enumerate(s.vars[m:]):
                shp = [1] * (nk + 1)
                a = j + (1 if m else 0)
                shp[a] = ext[m + j]
                axes.append(ext[m + j])
                env2[v] = np.arange(ext[m + j], dtype=np.int64).reshape(shp)
            return env2, tuple(axes)
        lin = np.arange(start, stop, dtype=np.int64)
        for v, c in zip(s.vars, np.unravel_index(lin, ext)):
            env2[v] = c[:, None]  # iterations × threads
        return env2, (stop - start,)

    @staticmethod
    def _flat_body(b: ir.Stmt) -> list | None:
        """The body as a list of Store/VecMove/Comment statements, or None."""
        if isinstance(b, ir.Seq):
            out: list = []
            for c in b.body:
                sub = Simulator._flat_body(c)
                if sub is None:
                    return None
                out += sub
            return out
        return [b] if isinstance(b, (ir.Store, ir.VecMove, ir.Comment)) else None

    def _needs_check(self, body) -> tuple[frozenset, frozenset]:
        """Buffers whose accesses a chunk must check (:meth:`_interferes`), and the registers privatised."""
        writers: dict[str, list[int]] = {}
        readers: dict[str, list[int]] = {}
        for k, st in enumerate(body):
            r, w = ir.stmt_buffers(st)
            for b in r:
                readers.setdefault(b.name, []).append(k)
            for b in w:
                writers.setdefault(b.name, []).append(k)
        check = {name for name, ws in writers.items() if name in readers or len(set(ws)) > 1}
        private = set()
        for name in check:
            ws, rs = writers[name], readers.get(name, [])
            buf = next(b for st in body for b in ir.stmt_buffers(st)[1] if b.name == name)
            if buf.scope == "local" and len(set(ws)) == 1 and all(r > ws[0] for r in rs):
                private.add(name)  # written once, read back later in the iteration: checked to be the same bytes
        return frozenset(check), frozenset(private)

    def _interferes(self, s, body, tids, env, start, stop, check, private) -> bool:
        """Would the batch of iterations ``[start, stop)`` differ from the serial loop (vectorised index analysis)?

        Locations are (thread, byte) for registers, bytes otherwise; an access is (location, iteration, statement,
        read or write).  A location touched by two iterations, one of them writing, interferes when a read or a
        second writing statement is among its accesses.  A privatised register instead needs every read to fall
        within the bytes the writing statement stored in the same iteration and thread.
        """
        env2, gshape = self._env(s, env, start, stop)
        iters = stop - start
        acc: dict[str, list] = {name: [] for name in check}
        shape = (iters, tids.size)
        it = np.broadcast_to(np.arange(iters)[:, None], shape)
        try:
            return self._interferes_at(env2, gshape, body, tids, shape, it, acc, check, private)
        finally:
            self._gshape = ()

    def _interferes_at(self, env2, gshape, body, tids, shape, it, acc, check, private) -> bool:
        self._gshape = gshape
        try:
            for k, st in enumerate(body):
                for ld in ir.loads(st):
                    if ld.buf.name in check:
                        idx = eval_static(ld.buf.index_expr(ld.indices), tids, env2)
                        acc[ld.buf.name].append((ld.buf, self._lanes(idx, tids.size) * ld.buf.elem_bytes,
                                                 ld.buf.elem_bytes, k, False))
                if isinstance(st, ir.VecMove):
                    for buf, e, w in ((st.src, st.src_index, False), (st.dst, st.dst_index, True)):
                        if buf.name in check:
                            idx = eval_static(e, tids, env2)
                            acc[buf.name].append((buf, self._lanes(idx, tids.size) * buf.elem_bytes, st.nbytes, k,
                                                  w))
                elif st.buf.name in check:
                    idx = eval_static(st.buf.index_expr(st.indices), tids, env2)
                    acc[st.buf.name].append((st.buf, self._lanes(idx, tids.size) * st.buf.elem_bytes,
                                             st.buf.elem_bytes, k, True))
        except Undetermined:  # an index that loads from memory: serial
            return True
        for name, lst in acc.items():
            if name in private:
                (wbuf, woff, wn, wk, _), = [a for a in lst if a[4]]
                for _, roff, rn, rk, w in lst:
                    if not w and (np.any(roff < woff) or np.any(roff + rn > woff + wn)):
                        return True
                continue
            locs, its, kinds = [], [], []
            for buf, off, nb, k, w in lst:
                b = (off[..., None] + np.arange(nb)).astype(np.int64)
                if buf.scope == "local":
                    b = b + (tids[:, None] * buf.nbytes)
                locs.append(b.reshape(-1))
                its.append(np.broadcast_to(it[..., None], b.shape).reshape(-1))
                kinds.append(np.full(b.size, 2 * k + int(w), np.int64))
            loc, itr, kind = np.concatenate(locs), np.concatenate(its), np.concatenate(kinds)
            order = np.lexsort((itr, loc))
            loc, itr, kind = loc[order], itr[order], kind[order]
            starts = np.flatnonzero(np.r_[True, loc[1:] != loc[:-1]])
            multi = np.minimum.reduceat(itr, starts) != np.maximum.reduceat(itr, starts)
            is_w = (kind & 1) == 1
            big = np.int64(1 << 40)
            wmin = np.minimum.reduceat(np.where(is_w, kind, big), starts)
            wmax = np.maximum.reduceat(np.where(is_w, kind, -1), starts)
            any_r = np.logical_or.reduceat(~is_w, starts)
            if np.any(multi & (wmax >= 0) & (any_r | (wmin != wmax))):
                return True
        return False

    # ------------------------------------------------------------------ warp collectives
    def _warps(self, tids: np.ndarray, span) -> np.ndarray:
        """Active warps (every lane active); a partially active warp is an error (.sync.aligned)."""
        nw = -(-self.n // 32)
        count = np.bincount(tids // 32, minlength=nw)
        part = (count > 0) & (count < 32)
        if part.any():
            w = int(np.argmax(part))
            lanes = np.zeros(32, bool)
            lanes[tids[tids // 32 == w] % 32] = True
            raise emu_error(8, int(w * 32 + np.argmin(lanes)), span=span)
        return np.flatnonzero(count == 32)

    def _skey(self, e: ir.Expr) -> int | None:
        """A small int naming ``e``'s structure when it depends on the thread only (constants, thread variables and
        operators: no loop variable, no load), else None; equal structures get equal keys, so a statement's
        analysis (:meth:`_ldst_plan`) is shared by every statement of the same shape.  Memoised per node."""
        hit = self._keys.get(id(e))
        if hit is not None:
            return hit[1]
        if isinstance(e, ir.Const):
            parts: tuple | None = ("c", int(e.value))
        elif isinstance(e, ir.ThreadVar):
            parts = ("t", e.kind)
        elif isinstance(e, ir.Bin):
            a, b = self._skey(e.a), self._skey(e.b)
            parts = None if a is None or b is None else (e.op, a, b)
        else:
            parts = None
        k = None if parts is None else self._intern.setdefault(parts, len(self._intern))
        self._keys[id(e)] = (e, k)  # (the node is kept, so its id is not reused during the run)
        return k

    def _ldstmatrix(self, s: ir.LdStMatrix, active: np.ndarray, env):
        """ldmatrix / stmatrix with PTX's per-thread fragment (:func:`~tilemagic.arch.ldmatrix.fragment_elements`)."""
        warps = self._warps(active, s.span)
        if not warps.size:
            return
        if self.trace is not None:
            self.trace(s, active, env)
        keys = [self._skey(e) for e in (s.addr, *s.regs)]
        key = None if None in keys else (*keys, s.op, s.num, s.trans, s.smem.name, s.local.name, warps.tobytes())
        plan = self._ldst_plans.get(key) if key is not None else None
        if plan is None:
            plan = self._ldst_plan(s, warps, env)
            if key is not None and len(self._ldst_plans) < 4096:
                self._ldst_plans[key] = plan
        tids, lo, hi, word, half, rb, who, t3 = plan
        self._init = True
        smem = self.mem[s.smem.name].view(np.uint16)
        regs = self.local[s.local.name].view(np.uint32)
        self.lanes += word.size
        if s.op == "ld":
            ini = self.hb.read(s.smem, half, who, s.span, 2)
            regs[t3, word] = smem[lo].astype(np.uint32) | (smem[hi].astype(np.uint32) << 16)
            self.hb.write(s.local, rb, t3, s.span, True if _all(ini) else ini.reshape(word.shape + (2,)).all(-1),
                          nbytes=4)
        else:
            ini = self.hb.read(s.local, rb, t3, s.span, 4)
            val = regs[t3, word]
            smem[lo] = (val & 0xFFFF).astype(np.uint16)
            smem[hi] = (val >> 16).astype(np.uint16)
            self.hb.write(s.smem, half, who, s.span,
                          True if _all(ini) else np.repeat(np.asarray(ini)[..., None], 2, -1).reshape(half.shape),
                          value=np.ascontiguousarray(val).view(np.uint16).reshape(half.shape), nbytes=2)

    def _ldst_plan(self, s: ir.LdStMatrix, warps: np.ndarray, env) -> tuple:
        """The threads, fragment elements and register words of an ldmatrix/stmatrix (checked: aligned, in bounds)."""
        tids = warps[:, None] * 32 + np.arange(32)[None, :]
        flat = tids.reshape(-1)
        addr = np.broadcast_to(np.asarray(self.eval_expr(s.addr, env, s.span, flat), np.int64),
                               flat.shape).reshape(tids.shape)
        rows = addr[:, : 8 * s.num]  # only threads 0 .. 8*num-1 supply addresses
        if np.any(rows % ROW_ELEMS):
            w, t = (int(x[0]) for x in np.nonzero(rows % ROW_ELEMS))
            raise LaunchError(f"{s.chain}: thread {int(tids[w, t])} supplies row address element "
                              f"{int(rows[w, t])} of {s.smem.name}, not 16-byte aligned", s.span)
        lim = s.smem.nbytes // 2
        if rows.min() < 0 or rows.max() + ROW_ELEMS > lim:
            raise LaunchError(f"{s.chain}: a row address leaves {s.smem.name} ({lim} elements)", s.span)
        lo, hi = fragment_elements(rows, s.num, s.trans)  # (warps, num, 32)
        lo, hi = lo.transpose(0, 2, 1), hi.transpose(0, 2, 1)  # (warps, 32 threads, num registers)
        regs = self.local[s.local.name].view(np.uint32)
        word = np.stack([np.broadcast_to(np.asarray(self.eval_expr(r, env, s.span, flat), np.int64), flat.shape)
                         for r in s.regs], -1).reshape(tids.shape + (len(s.regs),))
        if word.min() < 0 or word.max() >= regs.shape[1]:
            raise LaunchError(f"{s.chain}: register word {int(word.max())} is outside {s.local.name}", s.span)
        # the 16-bit halves of each register word (byte offsets in shared memory), the low half first
        half = (np.stack([lo, hi], -1) * 2).reshape(tids.shape + (-1,))
        rb = word * 4
        who = np.broadcast_to(tids[..., None], half.shape)
        t3 = np.broadcast_to(tids[..., None], word.shape)
        return tids, lo, hi, word, half, rb, who, t3

    def _taddr(self, addr_buf, tids, span):
        """The TMEM address in ``addr_buf[0]``, read by threads ``tids``."""
        self.hb.read(addr_buf, np.zeros(tids.size, np.int64), tids, span, 4)
        return int(self.mem[addr_buf.name].view(np.uint32)[0])

    def _ldst(self, s: ir.TcgenLdSt, active):
        warps = self._warps(active, s.span)
        if not warps.size:
            return
        tids = (warps[:, None] * 32 + np.arange(32)[None, :]).reshape(-1)
        lane, col = self.tmem.cells_of(s.shape, s.num, tids, self._taddr(s.addr, tids, s.span), s.row, s.col,
                                       s.span)
        regs = self.local[s.local.name].view(np.uint32)
        ridx = s.reg_base + np.arange(s.regs)
        if regs.shape[1] < ridx[-1] + 1:
            raise LaunchError(f"{s.local.name} has {regs.shape[1]} 32-bit registers; {s.chain} needs {ridx[-1] + 1}",
                              s.span)
        rb = (np.broadcast_to(ridx, lane.shape) * 4).reshape(tids.size, -1)  # threads x register words (bytes)
        cb = ((lane * tc.TMEM_COLS + col) * 4).reshape(tids.size, -1)  # threads x TMEM cells (bytes)
        self.lanes += lane.size
        values = None
        t0 = int(tids[0])
        rows = slice(t0, t0 + tids.size) if int(tids[-1]) - t0 == tids.size - 1 else tids[:, None]  # (sorted, unique)
        mine = (rows, slice(int(ridx[0]), int(ridx[-1]) + 1))
        if s.op == "ld":
            regs[mine] = self.tmem.cells[lane, col]
        else:
            values = np.ascontiguousarray(regs[mine])
            self.tmem.cells[lane, col] = values
            self.tmem.touched[lane, col] = True
        # the tracker does the accesses: ld reads the cells, leaves the registers in flight until wait::ld;
        # st reads the registers (in flight until wait::st) and writes the cells
        self.hb.event(f"tcgen05.{s.op}", tids, s.span, local=s.local, regs=rb, cells=cb, values=values)

    def _alloc_op(self, s, active):
        for w in self._warps(active, s.span):
            tids = int(w) * 32 + np.arange(32, dtype=np.int64)
            if isinstance(s, ir.TcgenAlloc):
                addr = self.tmem.alloc(s.ncols, int(w), s.span)
                self.mem[s.addr.name].view(np.uint32)[0] = addr
                self.hb.write(s.addr, np.zeros(1, np.int64), tids[:1], s.span, nbytes=4)  # the warp's one store
                self.hb.event("alloc", tids, s.span, cols=(addr & 0xFFFF, s.ncols))
            elif isinstance(s, ir.TcgenRelinquish):
                self.tmem.relinquish()
                self.hb.event("relinquish", tids, s.span)
            else:
                taddr = self._taddr(s.addr, tids, s.span)
                self.hb.event("dealloc", tids, s.span, cols=(taddr & 0xFFFF, s.ncols))
                self.tmem.dealloc(taddr, s.ncols, int(w), s.span)


def simulate(kernel: ir.Kernel, inputs: dict[str, np.ndarray], strict: bool = False,
             hazards: list | None = None, tracker: Tracker | None = None, timeout: float | None = None,
             progress: bool = False, trace: Callable | None = None) -> dict[str, np.ndarray]:
    """Run ``kernel`` on the CPU; return every global buffer after the kernel, viewed like its input.

    ``tracker``, when given, is the :class:`~tilemagic.sim.hb.Tracker` the run reports every access and
    event to (``tracker.finish()`` then gives the happens-before report); ``hazards``, when given, receives
    the ``(message, span)`` of each hazard the run's tracker saw
    (:attr:`Simulator.hazards`); ``timeout``, ``progress`` and ``trace`` as for :class:`Simulator`.

    Raises
    ------
    LaunchError
        A fault of the kernel (located), or the run took longer than ``timeout`` seconds.
    """
    sim = Simulator(kernel, inputs, strict, tracker, timeout=timeout, progress=progress, trace=trace)
    raw = sim.run()
    if hazards is not None:
        hazards.extend(sim.hazards)
    out = {}
    for b in kernel.params:
        src = np.asarray(inputs[b.name])
        out[b.name] = raw[b.name].view(src.dtype).reshape(src.shape)
    return out
