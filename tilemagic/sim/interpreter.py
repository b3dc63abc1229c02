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

Statements execute in program order for all threads (a legal schedule of a correctly synchronised kernel);
tcgen05.ld/st complete at issue, as in the emulation. A kernel with asynchronous copies (cp.async, TMA, mbarriers,
commit groups, tcgen05.cp and tcgen05.commit) runs under a scheduler over its top-level statements instead
(:meth:`Simulator._run_scheduled`: a wait that cannot pass blocks only its threads; when no thread can run, the run
stops: *would hang*), and its copies complete as late as the PTX ISA allows (:mod:`tilemagic.sim.asyncmodel`).
Because that schedule hides a missing barrier, every memory access and synchronising event is reported to a
:class:`~tilemagic.sim.hb.Tracker` (items or :class:`~tilemagic.sim.hb.Run` s of items, in each thread's program
order: races, in-flight tcgen05 registers, uninitialised data), whose hazards the run keeps in
:attr:`Simulator.hazards` (the pipeline shows them as ``hazard:`` warnings). Shared memory, registers and TMEM start
as :data:`~tilemagic.sim.hb.GARBAGE`, never zeros. A ``deadline`` bounds the run (``--timeout``), and a run longer
than two seconds shows a progress bar (``tqdm.auto``).

A cluster kernel (``Kernel.cluster`` = C > 1) runs C CTAs: one :class:`Simulator` per CTA (:attr:`Simulator.ctas`)
sharing the global buffers, each with its own shared memory, registers and asynchronous state and ``cta_rank`` in
its environment, all reporting to one tracker through a :class:`~tilemagic.sim.hb.ClusterView` (cluster-linear
threads, per-CTA shared spaces), under one scheduler over every CTA's threads (:meth:`Simulator._run_cluster`:
``cluster_sync``, multicast and dsmem copies between CTAs, cluster hangs, the exit check).
"""

from __future__ import annotations

import gc
import math
import operator
import sys
import time
from collections.abc import Callable

import numpy as np

from ..arch.cluster import CTA_RANK
from ..arch.ldmatrix import ROW_ELEMS, fragment_elements
from ..arch import tcgen05 as tc
from ..errors import LaunchError, Span
from ..ir import nodes as ir
from ..ir.evaluate import Undetermined, eval_static
from ..layout.tile import distinct
from .asyncmodel import AsyncModel, exit_check, threads_text
from .hb import ASYNC_STMTS, ClusterView, Prepared, Run, Tracker, garbage
from .tmem import TmemModel, emu_error

_BITS = ir.BITS_DTYPE
#: (iteration, thread) lanes one batched chunk of a ``Grid`` evaluates at most (bounds the temporaries).
CHUNK_LANES = 1 << 18
#: Elements one chunk of a contiguous copy loop moves at most (:meth:`Simulator._copy_runs`: no per-element arrays,
#: so the bound is only the deadline's granularity).
RUN_ELEMS = 1 << 22
#: Items a fixed index array of a copy side may have (:meth:`Simulator._fixed_side`: a 48 KiB shared tile of bytes
#: fits); larger non-run sides take the chunked general path.
FIXED_ITEMS = 1 << 16
#: Bytes the per-structure plans of one run may keep (index arrays, prepared tracker accesses); past it a plan is
#: used once and not kept (the run stays correct, only slower).
PLAN_BYTES = 256 << 20
#: Whether copy loops and consecutive ldmatrix/stmatrix of one op take the batched paths (:meth:`Simulator._copy_runs`,
#: :meth:`Simulator._ldstmatrix`); the tests turn it off to check that the batched paths give the same memory,
#: hazards and poison as statement-by-statement execution.
BATCHED = True
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


def _array_bytes(x) -> int:
    """Bytes of the NumPy arrays in ``x`` (nested tuples and lists, and the tracker's prepared accesses)."""
    if isinstance(x, np.ndarray):
        return x.nbytes if x.base is None else 0  # (a view costs nothing of its own)
    if isinstance(x, (tuple, list)):
        return sum(_array_bytes(y) for y in x)
    if isinstance(x, Prepared):
        return _array_bytes((x.norm, x.perm, x.inv))
    return 0


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


_TX = ir.ThreadVar("tx")  # (hash-consed: the one ``tx`` node of every kernel)
_CTA = ir.ThreadVar(CTA_RANK)  # the CTA's rank in its cluster (``%cluster_ctarank``)

#: What makes consecutive ldmatrix/stmatrix statements parts of one op (buffers compare by identity), and their
#: per-statement operands (the plan's key).
_LDST_OP = operator.attrgetter("smem", "local", "op", "num", "trans", "span")
_LDST_ARGS = operator.attrgetter("addr", "regs")


def _affine(e: ir.Expr, rec: Callable) -> tuple[dict, int, tuple] | None:
    """``e`` as ``Σ coef_v * v + const + Σ factor * rest`` over its loop variables and ``tx`` (``(coefs, const,
    rest)``; ``rest`` are loop-free terms evaluated per thread, e.g. ``tx % 32``), or None when a loop variable
    enters through anything but ``+``, ``-`` and ``*`` by a constant, or an index loads from memory.  ``rec`` gives
    the children's forms (the simulator memoises them per hash-consed node: a structure is analysed once)."""
    if isinstance(e, ir.LoopVar) or e is _TX:
        return {e: 1}, 0, ()
    if isinstance(e, ir.Const):
        return {}, int(e.value), ()
    if isinstance(e, ir.Load):
        return None
    if not isinstance(e, ir.Bin):  # another thread coordinate
        return {}, 0, ((1, e),)
    a, b = rec(e.a), rec(e.b)
    if a is None or b is None:
        return None
    if e.op in ("+", "-"):
        sign = 1 if e.op == "+" else -1
        coefs = dict(a[0])
        for v, c in b[0].items():
            coefs[v] = coefs.get(v, 0) + sign * c
        return coefs, a[1] + sign * b[1], a[2] + tuple((sign * f, x) for f, x in b[2])
    if e.op == "*":
        for f, k in ((a, b), (b, a)):
            if not k[0] and not k[2]:  # times a constant
                c = k[1]
                return {v: x * c for v, x in f[0].items()}, f[1] * c, tuple((x * c, y) for x, y in f[2])
    if any(isinstance(v, ir.LoopVar) for v in (*a[0], *b[0])):
        return None
    return {}, 0, ((1, e),)  # loop-free (thread-dependent only): evaluated per thread


def _peel(e: ir.Expr) -> tuple[ir.Expr, int]:
    """``e`` as ``(x, c)`` with ``e == x + c``: the constant ``e`` adds at its top (``x + c``, ``c + x``, ``x - c``),
    else ``(e, 0)`` — where one op's tiles differ (their base offsets)."""
    if isinstance(e, ir.Bin) and e.op in ("+", "-"):
        if isinstance(e.b, ir.Const):
            return e.a, int(e.b.value) if e.op == "+" else -int(e.b.value)
        if e.op == "+" and isinstance(e.a, ir.Const):
            return e.b, int(e.a.value)
    return e, 0


def _moved(form: tuple | None, dc: int) -> tuple | None:
    """An affine form (:func:`_affine`) with ``dc`` added to its constant."""
    return form if form is None or not dc else (form[0], form[1] + dc, form[2])


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
        arrays of a batched chunk); copy loops then run through the general path and ldmatrix/stmatrix one by
        one (:data:`BATCHED` off), so every statement is seen.

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
                 trace: Callable | None = None, *, _rank: int = 0, _cluster: Simulator | None = None):
        self.k = kernel
        self.trace = trace
        self._batched = BATCHED and trace is None  # (a trace sees every statement: the batched paths are off)
        n = kernel.threads
        self.n = n
        self.tid = np.arange(n, dtype=np.int64)
        self.mem: dict[str, np.ndarray] = {}
        #: the CTA's rank in its cluster; the cluster's CTAs (each a Simulator sharing the global buffers and the
        #: one tracker, through a :class:`~tilemagic.sim.hb.ClusterView`; ``[self]`` without a cluster)
        self.rank = _rank
        C = max(1, kernel.cluster)
        if C > 1 and _cluster is None:
            if kernel.tmem_cols > 0 or any(isinstance(x, (ir.TcgenLdSt, ir.TcgenAlloc)) for x in ir.walk(kernel.body)):
                raise LaunchError("tcgen05 and TMEM in a cluster kernel are not simulated (the simulator models "
                                  "TMEM for a single CTA)", kernel.body.span,
                                  hint="drop `cluster=` from the kernel line to simulate the TMEM copies in one CTA, "
                                       "or run with `--launch off` to see the lowering (IR and CUDA) without a run")
        #: ``{cta_rank: rank}`` in a cluster (in a kernel of one CTA, ``cta_rank`` is 0: set when an expression
        #: first needs it, so the others pay nothing)
        self._rank_env: dict | None = {_CTA: _rank} if C > 1 else None
        base = tracker if tracker is not None else (_cluster.tracker if _cluster is not None else
                                                    Tracker(kernel, n, strict))
        #: the cluster's one tracker; the simulator reports to it through a CTA's view in a cluster
        self.tracker: Tracker = base
        self.hb: Tracker | ClusterView = base if C == 1 else ClusterView(base, _rank)
        written = self.hb.accesses.written  # (the tracker's one walk of the kernel)
        for b in kernel.params:
            if _cluster is not None:  # (global memory is the cluster's: one array per buffer)
                self.mem[b.name] = _cluster.mem[b.name]
                continue
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
        self.timeout = timeout
        self._deadline = None if timeout is None else time.monotonic() + timeout
        self._ticking = timeout is not None or progress  # (whether :meth:`_tick` has anything to do)
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
        self._forms: dict[int, tuple] = {}  # id(Expr) -> (the node, its affine form): :meth:`_form`
        self._frees: dict[int, tuple] = {}  # id(Expr) -> (the node, its loop variables): :meth:`_free`
        self._fixed: dict[tuple, tuple] = {}  # fixed index arrays of copy sides: :meth:`_fixed_side`
        self._warp_sets: dict[int, tuple] = {}  # id(active threads) -> (them, their warps): :meth:`_warps`
        self._tc_plans: dict[tuple, tuple] = {}  # tcgen05.ld/st cells and prepared accesses: :meth:`_tc_plan`
        self._run_rows: dict[tuple, tuple] = {}  # the tracker's threads of a run: :meth:`_run_threads`
        self._rest_offsets: dict[tuple, tuple] = {}  # a run's per-thread offset terms: :meth:`_run_base`
        self._ldst_parts: dict[tuple, tuple] = {}  # one ldmatrix/stmatrix statement's analysis: :meth:`_ldst_plan_of`
        self._views: dict[tuple, np.ndarray] = {}  # (name, scope, bytes) -> vector view: :meth:`_vecs`
        self._copy_plans: dict[tuple, tuple] = {}  # copy loops by structure: :meth:`_copy_plan`
        self._plan_bytes = 0  # arrays the kept plans hold (:data:`PLAN_BYTES`)
        self._resolved: dict[tuple, tuple] = {}  # their sides per thread set, less the bases' constants: _resolve
        self._intern: dict[tuple, int] = {}
        self._ldst_plans: dict[tuple, tuple] = {}
        # registers private to one iteration of a batched loop body: name -> (base byte, bytes, init) per lane
        self._private: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self.hazards: list = []
        #: the asynchronous copies' state (cp.async groups, mbarriers, TMA copies in flight), for a kernel that has
        #: them (:mod:`tilemagic.sim.asyncmodel`); such a kernel runs under :meth:`_run_scheduled`
        self.asm: AsyncModel | None = AsyncModel(self) if self.hb.accesses.asynchronous or C > 1 else None
        #: whether the run stopped because it would hang (:attr:`tilemagic.sim.hb.HBReport.hang`)
        self.hung = False
        self.ctas: list[Simulator] = [self]
        if C > 1 and _cluster is None:
            self.ctas += [Simulator(kernel, inputs, strict, base, timeout, False, trace, _rank=r, _cluster=self)
                          for r in range(1, C)]
            models = [c.asm for c in self.ctas]
            for c in self.ctas:
                assert c.asm is not None
                c.asm.cluster = models  # type: ignore[assignment]

    def _thread(self, t: int) -> str:
        """``thread 5``; ``CTA 1 thread 5`` in a cluster."""
        return f"thread {t}" if self.k.cluster <= 1 else f"CTA {self.rank} thread {t}"

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
        if self._rank_env is not None and _CTA not in env:  # (the CTA's rank: not a function of the thread id)
            env = {**env, **self._rank_env}
        try:
            return eval_static(e, tids, env, self._loader(tids, span))
        except Undetermined as err:
            if self._rank_env is None and _CTA not in env:  # (a kernel of one CTA names ``cta_rank``: 0)
                self._rank_env = {_CTA: 0}
                return self.eval_expr(e, env, span, tids)
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

    def _track_bytes(self, buf, idx, item, first, tids, acc=None) -> np.ndarray:
        """Whether each byte of the items at ``idx`` is initialised (:meth:`Tracker.init_bytes`), in ``idx``'s shape
        plus a last axis of ``item`` bytes: what a vector copy carries where an item is partly initialised."""
        off, who, form = acc or self._access(buf, idx, item, first, tids)
        b = self.hb.init_bytes(buf, off, who, item)
        if form in ("block", "trun"):  # (threads, items, bytes) -> (..., threads, bytes)
            return np.moveaxis(b.reshape((idx.shape[-1],) + tuple(idx.shape[:-1]) + (item,)), 0, -2)
        return b.reshape(tuple(idx.shape) + (item,))

    def _track_write(self, buf, idx, item, first, tids, span, ini, value: Callable, acc=None,
                     ini_bytes: np.ndarray | None = None) -> None:
        """Report the writes at item indices ``idx`` to the tracker; ``value()`` gives the stored items (asked for only
        where two lanes may store to one place); ``ini_bytes`` in place of ``ini``: per byte (:meth:`_track_bytes`)."""
        if not self.hb.tracks(buf):
            return
        off, who, form = acc or self._access(buf, idx, item, first, tids)
        if ini_bytes is not None:
            ib = np.broadcast_to(ini_bytes, tuple(idx.shape) + (item,))
            if form in ("block", "trun"):  # (threads, items, bytes)
                ib = np.moveaxis(ib, -2, 0).reshape(idx.shape[-1], -1, item)
            self.hb.write(buf, off, who, span, value=None if form != "items" else value(), nbytes=item,
                          init_bytes=ib)
            return
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
        """Execute; return the global buffers as raw bytes (``name -> uint8 array``).

        Python's cyclic garbage collector is paused for the run (and resumed after it, also on an error): the run
        makes no reference cycles, only NumPy temporaries and its per-structure plans, and the collector's full
        passes over the objects of a large kernel (thousands of ops) took a quarter of its time."""
        collect = gc.isenabled()
        gc.disable()
        try:
            if len(self.ctas) > 1:
                self._run_cluster()
            elif self.asm is None:
                self.run_stmt(self.k.body, self.tid, self._rank_env or {})
            else:
                self._run_scheduled()
        finally:
            if collect:
                gc.enable()
            if self._progress is not None:
                self._progress.close()
        if not self.hung:  # (a run stopped at a hang never reached the deallocation)
            self.tmem.exit_check()
        self.hazards = [(h.message, h.span) for h in self.hb.finish().hazards]
        return {b.name: self.mem[b.name] for b in self.k.params}

    def run_stmt(self, s: ir.Stmt, tids: np.ndarray, env: dict) -> None:
        """Run ``s`` for the active threads ``tids`` (sorted CTA-linear ids, int64)."""
        if not tids.size:
            return
        if isinstance(s, ir.Seq):
            body, i = s.body, 0
            while i < len(body):
                c = body[i]
                if isinstance(c, ir.LdStMatrix) and self._batched:  # (one op's ldmatrix/stmatrix: one access)
                    j, n = i + 1, len(body)
                    ids = [c.addr, c.regs]  # (hash-consed nodes: compared by identity in the plan's key)
                    same = _LDST_OP(c)  # (parts of one op: one direction, shape, buffers and source line)
                    while j < n:
                        d = body[j]
                        if type(d) is not ir.LdStMatrix or _LDST_OP(d) != same:
                            break
                        ids += _LDST_ARGS(d)
                        j += 1
                    self._tick(c.span, j - i)
                    self._ldstmatrix(body[i:j], tids, env, tuple(ids))
                    i = j
                    continue
                tc = type(c)  # (the commonest statements of a long body, without another call)
                if tc is ir.Comment:
                    if self._ticking:
                        self._tick(c.span)
                elif tc is ir.Barrier:
                    if self._ticking:
                        self._tick(c.span)
                    self.hb.event("cta_sync", tids, c.span)
                elif isinstance(c, ir.Grid):
                    self._grid(c, tids, env)
                else:
                    self.run_stmt(c, tids, env)
                i += 1
            return
        if isinstance(s, ir.Grid):
            self._grid(s, tids, env)
            return
        self._tick(s.span)
        if isinstance(s, ir.Barrier):
            self.hb.event("cta_sync", tids, s.span)
        elif isinstance(s, ir.TcgenWait):
            self.hb.event(f"wait_{s.kind}", tids, s.span)
        elif isinstance(s, ir.Comment):
            return
        elif isinstance(s, ir.TcgenFence):
            self.hb.tcgen_fence(tids, s.kind)
        elif isinstance(s, ir.If):
            self._init = True
            cond = np.broadcast_to(np.asarray(self.eval_expr(s.cond, env, s.span, tids), bool), tids.shape)
            self.run_stmt(s.then, tids[cond], env)
        elif isinstance(s, (ir.Store, ir.VecMove)):
            self._exec(s, tids, env, 1)
        elif isinstance(s, ir.TcgenLdSt):
            self._ldst(s, tids)
        elif isinstance(s, ir.LdStMatrix):
            self._ldstmatrix((s,), tids, env, (s.addr, s.regs))
        elif isinstance(s, (ir.TcgenAlloc, ir.TcgenRelinquish, ir.TcgenDealloc)):
            self._alloc_op(s, tids)
        elif isinstance(s, ASYNC_STMTS) and self.asm is not None:
            self.asm.run(s, tids, env)
        else:
            raise TypeError(f"cannot simulate {type(s).__name__}")

    # ------------------------------------------------------------------ the scheduler of asynchronous kernels
    def _run_scheduled(self) -> None:
        """Run a kernel with asynchronous copies: a scheduler over the body's top-level statements.

        Every thread has a position in the top-level statement list (nested ``Seq`` s flattened; an ``If`` guard is
        one position).  The smallest position some runnable threads are at runs next, for those threads.  A wait
        (top level, or under guards) that cannot pass blocks its threads there; the others go on, so a producer
        later in program order (``if warpid == 1: arrive ...``) can complete the phase; a blocked thread runs its
        wait again once its barrier changed (an arrival, a copy issued or landed), then goes on in order.  A
        statement with a ``cta_sync`` anywhere in it runs only when every thread is at it.  When no thread can run
        and some are blocked, the run stops: **would hang** (the tracker's :attr:`~tilemagic.sim.hb.HBReport.hang`),
        and nothing after it runs.

        Not covered: suspending a thread inside a loop or a sequence (a wait there that cannot pass when reached in
        program order is a located LaunchError); thread groups that reach different ``cta_sync`` statements (every
        ``cta_sync`` here is a statement every thread reaches).
        """
        asm = self.asm
        assert asm is not None
        body = self._top_level(self.k.body)
        n, L = self.n, len(body)
        whole = [any(isinstance(x, (ir.Barrier, ir.ClusterSync)) for x in ir.walk(st)) for st in body]
        # (a statement where a wait may block: one wait under guards — run again whole when its threads resume)
        waits = [all(isinstance(x, (ir.If, ir.Seq, ir.Comment, ir.MbarWait)) for x in ir.walk(st)) and
                 sum(isinstance(x, ir.MbarWait) for x in ir.walk(st)) == 1 for st in body]
        pos = np.zeros(n, np.int64)
        blocked = np.zeros(n, bool)
        on: list[ir.MbarWait | None] = [None] * n  # the wait a blocked thread is at
        ver = np.zeros(n, np.int64)  # its barrier's version when it blocked
        groups: dict[bytes, np.ndarray] = {}  # one array per set of threads run together
        while True:
            if blocked.any():  # retry the waits whose barrier changed
                for t in np.flatnonzero(blocked).tolist():
                    w = on[t]
                    if w is not None and asm.version(w.bar) != ver[t]:
                        blocked[t] = False
            live = (pos < L) & ~blocked
            chosen = None
            for p in np.unique(pos[live]).tolist():
                at = np.flatnonzero(live & (pos == p))
                if whole[p] and at.size < n:
                    continue  # a cta_sync: every thread must be here
                chosen = p, at
                break
            if chosen is None:
                if not blocked.any() and not (pos < L).any():
                    break
                self._hang(body, pos, blocked, on, live)
                return
            p, at = chosen
            self._step(body[p], waits[p], at, groups, pos, blocked, on, ver)
        asm.finish()

    def _step(self, st: ir.Stmt, suspendable: bool, at: np.ndarray, groups: dict, pos: np.ndarray,
              blocked: np.ndarray, on: list, ver: np.ndarray) -> None:
        """Run the top-level statement ``st`` for the threads ``at`` (one array per set of threads: ``groups``) under
        the scheduler; the threads its wait blocked are marked in ``blocked`` (with the wait in ``on`` and the
        barrier's version in ``ver``), the others move on (``pos``)."""
        asm = self.asm
        assert asm is not None
        n = self.n
        if at.size == n:  # (the simulator's one array of every thread: its per-thread-set plans stay warm)
            at = self.tid
        else:
            at = groups.setdefault(at.tobytes(), at)
        asm.suspendable = suspendable
        try:
            self.run_stmt(st, at, self._rank_env or {})
        finally:
            asm.suspendable = False
        stuck = np.zeros(n, bool)
        for ts, w in asm.take_blocked():
            stuck[ts] = True
            for t in ts.tolist():
                on[t] = w
            ver[ts] = asm.version(w.bar)
        blocked |= stuck
        pos[at[~stuck[at]]] += 1

    def _hang(self, body, pos, blocked, on, live) -> None:
        """No thread can run: report **would hang** with each blocked wait and the threads held at a cta_sync."""
        asm = self.asm
        assert asm is not None
        waits: dict[int, tuple[list, ir.MbarWait]] = {}
        for t in np.flatnonzero(blocked).tolist():
            w = on[t]
            assert w is not None
            waits.setdefault(id(w), ([], w))[0].append(t)
        syncs = []
        for p in np.unique(pos[live]).tolist():
            at = np.flatnonzero(live & (pos == p))
            sync = next((x for x in ir.walk(body[p]) if isinstance(x, (ir.Barrier, ir.ClusterSync))), None)
            syncs.append((at, sync.span if sync is not None else body[p].span))
        msg, span, other, buf, threads = asm.hang_message(
            [(np.asarray(ts), w) for ts, w in waits.values()], syncs)
        self.hb.hang(msg, span, other, buf, threads)
        self.hung = True

    def _run_cluster(self) -> None:
        """Run a cluster kernel: every CTA of the cluster (:attr:`ctas`), under one scheduler over the body's top-level
        statements (as :meth:`_run_scheduled`, with a position per thread of every CTA).

        The smallest position some runnable threads of some CTA are at runs next, for those threads of that CTA
        (the lowest rank first): a CTA blocked in a wait does not stop another, whose copy may complete it.  A
        ``cta_sync`` runs when every thread of its CTA is at it; a top-level ``cluster_sync`` when every thread of
        every CTA is (one event of the whole cluster: PTX ISA 9.0 §9.7.13.3).  When nothing can run and some threads
        wait: **would hang**, naming the CTAs.  At the end each CTA's asynchronous copies are finished, then the
        exit check (:func:`~tilemagic.sim.asyncmodel.exit_check`)."""
        ctas = self.ctas
        C, n = len(ctas), self.n
        body = self._top_level(self.k.body)
        L = len(body)
        csync = [isinstance(st, ir.ClusterSync) for st in body]
        for st, top in zip(body, csync):
            if not top and any(isinstance(x, ir.ClusterSync) for x in ir.walk(st)):
                inner = next(x for x in ir.walk(st) if isinstance(x, ir.ClusterSync))
                raise LaunchError("the simulator runs `cluster_sync` only as a top-level statement (not in a loop, a "
                                  "sequence or under a guard): every thread of every CTA must reach it", inner.span)
        whole = [any(isinstance(x, ir.Barrier) for x in ir.walk(st)) for st in body]
        waits = [all(isinstance(x, (ir.If, ir.Seq, ir.Comment, ir.MbarWait)) for x in ir.walk(st)) and
                 sum(isinstance(x, ir.MbarWait) for x in ir.walk(st)) == 1 for st in body]
        pos = [np.zeros(n, np.int64) for _ in ctas]
        blocked = [np.zeros(n, bool) for _ in ctas]
        on: list[list[ir.MbarWait | None]] = [[None] * n for _ in ctas]
        ver = [np.zeros(n, np.int64) for _ in ctas]
        groups: list[dict[bytes, np.ndarray]] = [{} for _ in ctas]
        everyone = np.arange(C * n, dtype=np.int64)
        while True:
            for r, cta in enumerate(ctas):
                asm = cta.asm
                assert asm is not None
                if blocked[r].any():  # retry the waits whose barrier changed
                    for t in np.flatnonzero(blocked[r]).tolist():
                        w = on[r][t]
                        if w is not None and asm.version(w.bar) != ver[r][t]:
                            blocked[r][t] = False
            chosen = None
            for r in range(C):
                live = (pos[r] < L) & ~blocked[r]
                for p in np.unique(pos[r][live]).tolist():
                    if chosen is not None and p >= chosen[0]:
                        break
                    at = np.flatnonzero(live & (pos[r] == p))
                    if whole[p] and at.size < n:
                        continue  # a cta_sync: every thread of the CTA must be here
                    if csync[p] and not all(bool(np.all(pos[q] == p) and not blocked[q].any()) for q in range(C)):
                        continue  # a cluster_sync: every thread of every CTA must be here
                    chosen = p, r, at
                    break
            if chosen is None:
                if not any(b.any() for b in blocked) and not any((q < L).any() for q in pos):
                    break
                self._cluster_hang(body, pos, blocked, on, csync)
                return
            p, r, at = chosen
            if csync[p]:
                self._tick(body[p].span)
                self.tracker.event("cluster_sync", everyone, body[p].span)
                for q in pos:
                    q += 1
                continue
            ctas[r]._step(body[p], waits[p], at, groups[r], pos[r], blocked[r], on[r], ver[r])
        for cta in ctas:
            assert cta.asm is not None
            cta.asm.finish()
        exit_check([c.asm for c in ctas], body[-1].span if body else None)  # type: ignore[misc]
        self.lanes += sum(c.lanes for c in ctas[1:])

    def _cluster_hang(self, body, pos, blocked, on, csync) -> None:
        """No thread of any CTA can run: **would hang**, with each CTA's blocked waits (``mbarrier full of CTA 1 phase
        0 never completes: ...``) and the threads held at a ``cta_sync`` or a ``cluster_sync``."""
        parts: list[str] = []
        first = None
        L = len(body)
        for r, cta in enumerate(self.ctas):
            asm = cta.asm
            assert asm is not None
            ws: dict[int, tuple[list, ir.MbarWait]] = {}
            for t in np.flatnonzero(blocked[r]).tolist():
                w = on[r][t]
                assert w is not None
                ws.setdefault(id(w), ([], w))[0].append(t)
            p_, f_ = asm.hang_parts([(np.asarray(ts), w) for ts, w in ws.values()])
            parts += p_
            first = first or f_
        for r in range(len(self.ctas)):
            live = (pos[r] < L) & ~blocked[r]
            for p in np.unique(pos[r][live]).tolist():
                at = np.flatnonzero(live & (pos[r] == p))
                if csync[p]:
                    what, span = "cluster_sync", body[p].span
                else:
                    sync = next((x for x in ir.walk(body[p]) if isinstance(x, ir.Barrier)), None)
                    what, span = "cta_sync", sync.span if sync is not None else body[p].span
                parts.append(f"CTA {r} {threads_text(at)} wait at the {what} at "
                             f"{f'L{span.line}' if span else 'the kernel end'} for the others")
                first = first or (span, None, "", (r * self.n + int(at[0]),) * 2)
        done = [r for r in range(len(self.ctas)) if not (pos[r] < L).any()]
        if done:
            parts.append(f"CTA{'s' if len(done) > 1 else ''} {', '.join(map(str, done))} ended")
        assert first is not None
        self.tracker.hang("would hang: " + "; ".join(parts), *first)
        for cta in self.ctas:
            cta.hung = True

    @staticmethod
    def _top_level(s: ir.Stmt) -> list[ir.Stmt]:
        """The body's top-level statements, nested ``Seq`` s flattened."""
        if isinstance(s, ir.Seq):
            return [x for c in s.body for x in Simulator._top_level(c)]
        return [s]

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
                              f"{int(self._lanes(off, tids.size)[i])} by {self._thread(int(tids[i[-1]]))}", span)
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
        ib = None  # (per byte, where an item is partly initialised: the copy moves bytes as they are)
        if priv is not None:
            base, data, init = priv
            rel = _byte_offsets(sv, nb, sfirst) - base[..., None]
            vals = np.take_along_axis(data, rel, -1)
            ibytes = np.take_along_axis(init, rel, -1)
            ini = ibytes.all(-1)
            ib = None if _all(ini) else ibytes
            self._track_read(s.src, sv, nb, sfirst, tids, s.span)
            vals = np.ascontiguousarray(vals).view(vt)[..., 0]  # private bytes -> vectors
        else:
            acc = self._access(s.src, sv, nb, sfirst, tids)
            ini = self._track_read(s.src, sv, nb, sfirst, tids, s.span, acc)
            if not _all(ini):
                ib = self._track_bytes(s.src, sv, nb, sfirst, tids, acc)
            vals = self._move(s.src, nb, sv, tids, acc)
        dacc = self._access(s.dst, dv, nb, dfirst, tids)
        self._move(s.dst, nb, dv, tids, dacc, vals)
        self._track_write(s.dst, dv, nb, dfirst, tids, s.span, ini, lambda: np.ascontiguousarray(vals), dacc, ib)
        if s.dst.name in private:
            db = _byte_offsets(dv, nb, dfirst)
            self._private[s.dst.name] = (dv * nb, np.array(vals, order="C", copy=True)[..., None].view(np.uint8),
                                         np.broadcast_to(np.asarray(ini)[..., None], db.shape) if ib is None else
                                         np.broadcast_to(ib, db.shape))

    def _move(self, buf, nb: int, idx: np.ndarray, tids: np.ndarray, acc, vals: np.ndarray | None = None):
        """Get (``vals`` None) or put the ``nb``-byte vectors at vector indices ``idx`` (``(iterations, threads)``),
        with slices where :meth:`_access` found a run (``run``, ``trun``: thread by thread, ``block``: the same
        registers of every thread)."""
        off, _, form = acc
        local = buf.scope == "local"
        mem = self._vecs(buf, nb)
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
            copy = self._copy_plan(s, flat) if flat and len(flat) <= 2 else None
            if copy is not None and copy[1] is not copy[2]:  # (one copy, two buffers, no loads in its indices)
                plan = (flat, frozenset(), frozenset(), copy)
            else:
                plan = (flat, *self._needs_check(flat)) if flat else (flat, frozenset(), frozenset())
                plan += (copy if not plan[1] else None,)
            self._plans[id(s)] = plan
        body, check, private, copy = plan
        if copy is not None and self._batched and self._copy_runs(s, copy, tids, env):
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

    def _form(self, e: ir.Expr) -> tuple[dict, int, tuple] | None:
        """:func:`_affine` of ``e``, memoised per (hash-consed) node."""
        hit = self._forms.get(id(e))
        if hit is None:
            hit = self._forms[id(e)] = (e, _affine(e, self._form))  # (the node is kept: its id stays its own)
        return hit[1]

    def _free(self, e: ir.Expr) -> frozenset | None:
        """The loop variables ``e`` uses, or None when it loads from memory; memoised per (hash-consed) node."""
        hit = self._frees.get(id(e))
        if hit is None:
            if isinstance(e, ir.LoopVar):
                v: frozenset | None = frozenset((e,))
            elif isinstance(e, ir.Load):
                v = None
            elif isinstance(e, ir.Bin):
                a, b = self._free(e.a), self._free(e.b)
                v = None if a is None or b is None else a | b
            else:
                v = frozenset()
            hit = self._frees[id(e)] = (e, v)
        return hit[1]

    def _copy_plan(self, s: ir.Grid, body: list) -> tuple | None:
        """For a loop whose body is one copy between global/shared buffers — a Store of a Load, a VecMove, or the
        ``ld`` -> register -> ``st`` chain of a vector copy (two VecMoves through one register tile, the scratch
        of ``gmem_smem``) — the copy's two sides, each with the affine form of its index (:func:`_affine`, None
        where it is not affine).  None for any other body.

        The plan is kept per structure: the loop's variables and extents, the buffers, and each side's index less
        a constant it adds at the top (:func:`_peel`; hash-consed nodes compare by identity) — the same op on
        another tile differs only there, and its sides' forms are the kept ones moved by the difference."""
        if not all(isinstance(b, ir.VecMove) for b in body):
            return self._copy_plan_of(s, body)
        first, last = body[0], body[-1]
        (sx, sc), (dx, dc) = _peel(first.src_index), _peel(last.dst_index)
        # (the chain's register side, and its index, are in the key whole)
        key = (s.vars, s.extents, first.src, last.dst, sx, dx, first.nbytes, first.elems,
               *((first.dst, first.dst_index, last.src, last.src_index, last.nbytes, last.elems) if len(body) > 1
                 else ()))
        hit = self._copy_plans.get(key)
        if hit is None:
            plan = self._copy_plan_of(s, body)
            hit = (plan, sc, dc, {})  # (the last: :meth:`_copy_runs`'s resolved sides, per thread set)
            if len(self._copy_plans) < 4096:
                self._copy_plans[key] = hit
        plan, sc0, dc0, memo = hit
        if plan is None:
            return None
        st, src, dst, (_, sf), (_, df), want, tmp, _ = plan
        return (first, src, dst, (first.src_index, _moved(sf, sc - sc0)), (last.dst_index, _moved(df, dc - dc0)),
                want, tmp, memo)

    def _copy_plan_of(self, s: ir.Grid, body: list) -> tuple | None:
        tmp = None
        st: ir.Store | ir.VecMove
        if len(body) == 2:
            a, b = body
            if not (isinstance(a, ir.VecMove) and isinstance(b, ir.VecMove) and a.dst is b.src
                    and a.dst.scope == "local" and a.dst_index is b.src_index and a.nbytes == b.nbytes
                    and a.elems == b.elems and self._free(a.dst_index) == frozenset()
                    and not any(isinstance(x, ir.ThreadVar) for x in ir.iter_exprs(a.dst_index))):
                return None
            tmp, st = (a.dst, a.dst_index), a
            src, dst, se, de, items = a.src, b.dst, a.src_index, b.dst_index, a.elems
        elif isinstance(body[0], ir.Store):
            st = sto = body[0]
            if not isinstance(sto.value, ir.Load) or sto.value.buf.elem_bytes != sto.buf.elem_bytes:
                return None
            src, dst, se, de, items = sto.value.buf, sto.buf, sto.value.buf.index_expr(sto.value.indices), \
                sto.buf.index_expr(sto.indices), 1
        else:
            st = vm = body[0]
            src, dst, se, de, items = vm.src, vm.dst, vm.src_index, vm.dst_index, vm.elems
        if (src.scope == "local" and dst.scope == "local") or src.elem_bytes != dst.elem_bytes or \
                (tmp is not None and (tmp[0] in (src, dst) or "local" in (src.scope, dst.scope))):
            return None
        inner = 1  # per loop variable: the coefficient it must have, in items of the threads' row (x threads x items)
        want = {}
        for v, n in zip(reversed(s.vars), reversed(s.extents)):
            want[v] = inner if n > 1 else None
            inner *= n
        sides = []
        for e in (se, de):
            if self._free(e) is None:
                return None
            f = self._form(e)
            if f is not None and any(w is not None and f[0].get(v, 0) % items for v, w in want.items()):
                f = None
            sides.append((e, f))
        return st, src, dst, sides[0], sides[1], want, tmp, None

    def _run_base(self, s: ir.Grid, form: tuple, want: dict, st, tids: np.ndarray, env: dict, per: int,
                  local: bool = False) -> tuple[int, str] | None:
        """Where a copy side starts and in which order its items run, when the whole loop is one ascending run:
        ``"i"`` iteration-major (thread ``tids[j]`` of iteration ``i`` at base + (i x threads + j) x ``per``),
        ``"t"`` thread-major (at base + (j x iterations + i) x ``per``: each thread a row of a tile); for a
        register tile (``local``), the same registers of every thread, base + i x ``per`` (order ``"t"``: a
        block of threads x registers).  None for anything else."""
        coefs, b0, rest = form
        m = tids.size
        iters = math.prod(s.extents)
        t0 = int(tids[0])
        dense = int(tids[-1]) - t0 == m - 1  # (the executor's threads: sorted, unique)
        orders: tuple[str, ...] = ("t",) if local else ("i", "t")
        for v, w in want.items():
            if w is not None:
                c = coefs.get(v, 0)
                orders = tuple(o for o in orders if c == w * per * (m if o == "i" else 1))
        if not orders:
            return None
        order = orders[0] if m > 1 or len(orders) == 1 else "i"
        thread_step = 0 if local else per if order == "i" else iters * per  # elements between threads j, j + 1
        for v, c in coefs.items():
            if v in want:
                continue
            if v is _TX:
                if local or (m > 1 and (c != thread_step or not dense)):
                    return None
                b0 += c * t0
            elif isinstance(env.get(v), (int, np.integer)):
                b0 += c * int(env[v])  # (an outer loop's variable, one value here)
            else:
                return None
        if m > 1 and not local and _TX not in coefs and not rest:
            return None  # (every thread at the same place: no run over the threads — the general path)
        if rest:  # thread coordinates other than tx: evaluated (once per form and thread set), the run checked
            if local:
                return None
            key = (tuple((f, id(x)) for f, x in rest), _TX in coefs, id(tids), thread_step)
            hit = self._rest_offsets.get(key)
            if hit is None or hit[0] is not tids:
                b = np.zeros(m, np.int64)
                ok = True
                for f, x in rest:
                    val = np.asarray(self.eval_expr(x, {}, st.span, tids), np.int64)
                    if val.size not in (1, m):
                        ok = False
                        break
                    b = b + f * val.reshape(-1)
                ok = ok and (m == 1 or np.array_equal(b - b[0], np.arange(0, m * thread_step, thread_step)
                                                      if thread_step and _TX not in coefs else np.zeros(m, np.int64)))
                hit = (tids, rest, int(b[0]) if ok else None)  # (both kept: their ids stay theirs)
                if len(self._rest_offsets) < 1024:
                    self._rest_offsets[key] = hit
            if hit[2] is None:
                return None
            b0 += hit[2]
        return b0, order

    def _fixed_side(self, s: ir.Grid, e: ir.Expr, buf: ir.Buffer, tids: np.ndarray, env: dict, nb: int,
                    write: bool) -> tuple | None:
        """A copy side whose index is no run but depends only on the loop's own variables and the thread (a
        swizzled shared tile): its ``nb``-byte vector indices over the whole loop (iteration-major, threads
        last) and the tracker's prepared access, computed once per structure and thread set; None (the general
        path runs, and reports) when misaligned, out of bounds, written twice, or larger than one chunk."""
        free = self._free(e)
        if free is None or not free <= set(s.vars) or math.prod(s.extents) * tids.size > FIXED_ITEMS:
            return None
        key = (id(e), id(buf), s.vars, s.extents, id(tids), nb, write)  # (LoopVars: one per name per kernel)
        hit = self._fixed.get(key)
        if hit is not None and hit[1] is tids:
            return hit[2]
        env2, _ = self._env(s, {}, 0, math.prod(s.extents))
        off = np.asarray(self.eval_expr(e, env2, None, tids), np.int64) * buf.elem_bytes
        off = np.broadcast_to(off, np.broadcast_shapes(off.shape, tids.shape)).reshape(-1)
        total = math.prod(s.extents) * tids.size
        plan = None
        if off.size == total and not (off % nb).any() and off.min() >= 0 and off.max() + nb <= buf.nbytes and \
                (not write or distinct(off)):
            who = np.broadcast_to(tids, (math.prod(s.extents), tids.size)).reshape(-1)
            prep = self.hb.prepare(buf, off, who, nb) if self.hb.tracks(buf) else None
            plan = (off // nb, prep)
        if self._keep(plan):
            self._fixed[key] = (e, tids, plan)  # (the node and the threads are kept: their ids stay theirs)
        return plan

    def _keep(self, plan) -> bool:
        """May a per-structure plan be kept (:data:`PLAN_BYTES`)?  Counts its arrays when it may."""
        size = _array_bytes(plan)
        if self._plan_bytes + size > PLAN_BYTES:
            return False
        self._plan_bytes += size
        return True

    def _copy_runs(self, s: ir.Grid, plan: tuple, tids: np.ndarray, env: dict) -> bool:
        """Run a copy loop (:meth:`_copy_plan`) with no per-element work in Python.  Each side is a run of a
        global/shared buffer (:meth:`_run_base`: iteration- or thread-major; a slice, no index array), the same
        registers of every thread (a block of a register tile), or a fixed index array computed once per
        structure (:meth:`_fixed_side`); the data and the init bits are carried in the source side's order.  The
        register tile of an ``ld`` -> ``st`` chain ends as the serial loop leaves it (the last iteration's
        vectors).  False (the caller runs the loop) for anything else: bases of another shape, an outer loop
        variable given as an array, a misaligned or out-of-bounds access (which the general path reports,
        located)."""
        st, src, dst, (se, sform), (de, dform), want, tmp, memo = plan
        eb = dst.elem_bytes
        per = st.elems if isinstance(st, ir.VecMove) else 1  # elements per item
        nb = per * eb
        m = tids.size
        iters = math.prod(s.extents)
        total = iters * per * m  # elements
        # the sides less their run bases' constants, kept per structure and thread set (the same op on another
        # tile differs only there); not where an outer loop's variable enters a base (it changes per call).  Found
        # first in the copy plan's own table (``memo``: by thread set and, for a fixed side, its index node)
        mkey = (id(tids), id(se) if sform is None else 0, id(de) if dform is None else 0)
        hit = memo.get(mkey) if memo is not None else None
        if hit is None or hit[0] is not tids:
            key = (id(src), id(dst), s.vars, s.extents, per, id(tids), id(tmp[0]) if tmp else None,
                   id(tmp[1]) if tmp else None,
                   *((tuple(f[0].items()), f[2]) if f is not None else id(e) for e, f in ((se, sform), (de, dform))))
            hit = self._resolved.get(key)
            if hit is None or hit[0] is not tids:
                hit = (tids, self._resolve(s, plan, tids, env, per, nb, iters, total), (sform, dform, se, de))
                if hit[1] is not None and hit[1][2] and len(self._resolved) < 4096:
                    self._resolved[key] = hit  # (the threads, forms and nodes kept: their ids stay theirs)
            if memo is not None and hit[1] is not None and hit[1][2] and len(memo) < 64:
                memo[mkey] = hit
        res = hit[1]
        if res is None:
            return False
        sides, step, cacheable, rows, r0 = res
        resolved = []
        for (kind, order, fixed, off, lim, size), form in zip(sides, (sform, dform)):
            base = None
            if kind == "run":
                base = form[1] + off
                if (base * eb) % nb or base < 0 or (base + size) * eb > lim:
                    return False
            resolved.append((base, order, fixed))
        (sb, so, sfix), (db, do, dfix) = resolved
        span = st.span
        vals = ini = ib = None
        for a in range(0, total, step):
            n = min(step, total - a)
            self._tick(span, n // (per * m))
            vals, ini, sacc = self._side_get(src, sb, so, sfix, a, n, nb, eb, tids, rows, iters, span)
            # (a vector partly initialised: the bits of its bytes, in the side's order, ``(items, nb)``)
            ib = None if _all(ini) or sacc is None else self.hb.init_bytes(src, sacc[0], sacc[1], nb).reshape(-1, nb)
            if so != do and m > 1:  # (iteration-major <-> thread-major: a transpose of the (iters, threads) grid)
                shape = (iters, m) if so == "i" else (m, iters)
                vals = np.asarray(vals).reshape(shape).T.reshape(-1)
                ini = ini if _all(ini) else np.asarray(ini).reshape(shape).T.reshape(-1)
                ib = None if ib is None else ib.reshape(shape + (nb,)).transpose(1, 0, 2).reshape(-1, nb)
            self._side_put(dst, db, do, dfix, a, n, nb, eb, tids, rows, iters, span, vals, ini, ib)
            self.lanes += n // per
        if tmp is not None and vals is not None:  # the chain's register tile: the last iteration's vectors
            reg = tmp[0]
            last = np.asarray(vals).reshape(-1, m)[-1]
            _vectors(self.local[reg.name][:, r0:r0 + nb], nb)[tids, 0] = last
            lini = True if _all(ini) else np.asarray(ini).reshape(-1, m)[-1]
            self.hb.write(reg, Run(r0, 1, nb), tids, span, lini, nbytes=nb,
                          init_bytes=None if ib is None else ib.reshape(-1, m, nb)[-1].reshape(m, 1, nb))
        return True

    def _resolve(self, s: ir.Grid, plan: tuple, tids: np.ndarray, env: dict, per: int, nb: int, iters: int,
                 total: int) -> tuple | None:
        """The structure of a copy loop's two sides for :meth:`_copy_runs`: per side its kind (``"run"``, or a
        register block, or ``"fixed"``), order, fixed index arrays, the run base less the form's constant, its
        limit and size; the chunk step; whether an outer loop's variable is in a base (then not kept); the rows of
        the threads; the byte offset of the chain's register.  None when a side is none of these."""
        st, src, dst, (se, sform), (de, dform), want, tmp, _ = plan
        eb = dst.elem_bytes
        m = tids.size
        sides: list[tuple] = []
        cacheable = True
        for (e, form), buf, write in ((se, sform), src, False), ((de, dform), dst, True):
            local = buf.scope == "local"
            at = None if form is None else self._run_base(s, form, want, st, tids, env, per, local)
            if at is not None:
                base, order = at
                cacheable &= all(v in want or v is _TX for v in form[0])
                size = iters * per if local else total  # (registers: per thread)
                lim = (self.local[buf.name].shape[1] if local else buf.nbytes) // eb * eb
                sides.append(("run", order, None, base - form[1], lim, size))
                continue
            fixed = None if local else self._fixed_side(s, e, buf, tids, env, nb, write)
            if fixed is None:
                return None
            cacheable &= form is None  # (the key names an affine side by its form less the constant: not here)
            sides.append(("fixed", "i", fixed, 0, 0, 0))
        one = any(k == "fixed" for k, *_ in sides) or src.scope == "local" or dst.scope == "local"
        step = total if one else max(per * m, RUN_ELEMS // (per * m) * (per * m))
        t0 = int(tids[0])
        rows = slice(t0, t0 + m) if int(tids[-1]) - t0 == m - 1 else tids
        r0 = None
        if tmp is not None:
            r0 = int(self.eval_expr(tmp[1], {}, st.span, tids[:1]).reshape(-1)[0]) * tmp[0].elem_bytes
        return sides, step, cacheable, rows, r0

    def _side_get(self, buf, base, order, fixed, a, n, nb, eb, tids, rows, iters, span):
        """The ``n`` elements from element ``a`` of a copy side (:meth:`_copy_runs`) as vectors in the side's
        order, their init bits (True, or one per vector) from the tracker, and the tracker's access (``(off,
        threads)``, None where the buffer is not tracked): :meth:`Tracker.init_bytes` of it where a vector was
        partly initialised."""
        vec = self._vecs(buf, nb)
        if buf.scope == "local":  # the same registers of every thread: (threads, iters)
            acc = (Run(base * eb, iters, nb), tids)
            ini = self.hb.read(buf, *acc, span, nb)
            return vec[rows, base * eb // nb:base * eb // nb + iters].reshape(-1), \
                True if _all(ini) else np.asarray(ini).reshape(-1), acc
        if fixed is not None:
            if fixed[1] is None:
                return vec[fixed[0]], True, None
            return vec[fixed[0]], self.hb.read(buf, fixed[1], None, span), (fixed[1], None)
        s0 = (base + a) * eb
        if not self.hb.tracks(buf):
            return vec[s0 // nb:s0 // nb + n * eb // nb], True, None
        acc = (Run(s0, n * eb // nb, nb), self._run_threads(tids, order, iters))
        ini = self.hb.read(buf, *acc, span, nb)
        return vec[s0 // nb:s0 // nb + n * eb // nb], True if _all(ini) else ini, acc

    def _side_put(self, buf, base, order, fixed, a, n, nb, eb, tids, rows, iters, span, vals, ini,
                  ib: np.ndarray | None = None) -> None:
        """Store ``vals`` (vectors in the side's order, their init bits ``ini``, or per byte ``ib``: ``(items, nb)``)
        to a copy side."""
        if buf.scope == "local":
            b = base * eb // nb
            self._vecs(buf, nb)[rows, b:b + iters] = np.asarray(vals).reshape(tids.size, iters)
            self.hb.write(buf, Run(base * eb, iters, nb), tids, span,
                          ini if _all(ini) else np.asarray(ini).reshape(tids.size, iters), nbytes=nb,
                          init_bytes=None if ib is None else ib.reshape(tids.size, iters, nb))
            return
        vec = self._vecs(buf, nb)
        if fixed is not None:
            vec[fixed[0]] = vals
            if fixed[1] is not None:
                self.hb.write(buf, fixed[1], None, span, ini, init_bytes=ib)
            return
        d0 = (base + a) * eb
        vec[d0 // nb:d0 // nb + n * eb // nb] = vals
        if self.hb.tracks(buf):
            self.hb.write(buf, Run(d0, n * eb // nb, nb), self._run_threads(tids, order, iters), span, ini, nbytes=nb,
                          init_bytes=ib)

    def _vecs(self, buf: ir.Buffer, nb: int) -> np.ndarray:
        """``buf``'s memory (a register tile: ``(threads, bytes)``) as ``nb``-byte vectors (:func:`_vectors`), a
        view made once per buffer and size (the arrays live as long as the run)."""
        key = (buf.name, buf.scope, nb)
        v = self._views.get(key)
        if v is None:
            v = self._views[key] = _vectors(self.local[buf.name] if buf.scope == "local" else self.mem[buf.name], nb)
        return v

    def _run_threads(self, tids: np.ndarray, order: str, iters: int):
        """The tracker's threads of a run: one thread, the CTA row (iteration-major: the items cycle over it), or
        each thread repeated over its iterations (thread-major); built once per thread set."""
        if tids.size == 1:
            return int(tids[0])
        key = (id(tids), order, iters)
        hit = self._run_rows.get(key)
        if hit is None or hit[0] is not tids:
            row = tids.astype(np.int32)
            hit = (tids, row if order == "i" else np.repeat(row, iters))  # (the array is kept: its id stays its own)
            if len(self._run_rows) < 256:
                self._run_rows[key] = hit
        return hit[1]

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
        hit = self._warp_sets.get(id(tids))
        if hit is not None and hit[0] is tids:
            return hit[1]
        warps = self._warps_of(tids, span)
        if len(self._warp_sets) < 64:
            self._warp_sets[id(tids)] = (tids, warps)  # (the array is kept: its id stays its own)
        return warps

    def _warps_of(self, tids: np.ndarray, span) -> np.ndarray:
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

    def _ldstmatrix(self, group, active: np.ndarray, env, ids: tuple):
        """ldmatrix / stmatrix with PTX's per-thread fragment (:func:`~tilemagic.arch.ldmatrix.fragment_elements`).

        ``group``: consecutive statements of one op (one direction, shape, buffers and source line), run as one
        access when no register word (ldmatrix) or shared half (stmatrix) is written twice among them — the same
        result as one by one, since an ldmatrix writes only registers and reads only shared memory (stmatrix the
        other way round) — else one by one.  The plan (fragment elements, register words, the tracker's prepared
        accesses) is shared by every group of the same structure (hash-consed addresses: the same op on another
        tile)."""
        s = group[0]
        warps = self._warps(active, s.span)
        if not warps.size:
            return
        if self.trace is not None:
            for g in group:  # (one statement each while tracing: :attr:`_batched` is off)
                self.trace(g, active, env)
        # ``ids``: every statement's address and its tuple of register expressions.  Hash-consed, the same op on
        # another tile has the same nodes, which compare by identity, so they name the structure; a plan is kept
        # only when the expressions depend on the thread alone: no loop variable, no load
        key = (ids, s.op, s.num, s.trans, id(s.smem), id(s.local), warps.tobytes())
        hit = self._ldst_plans.get(key)
        plan: tuple | bool | None = hit[1] if hit is not None else None
        if plan is None:
            plan = self._ldst_group_plan(group, warps, env)
            if all(self._skey(e) is not None for g in group for e in (g.addr, *g.regs)) and self._keep(plan):
                self._ldst_plans[key] = (tuple(group), plan)
        if not isinstance(plan, tuple):  # (a word written twice in the group: one by one)
            for g in group:
                self._ldstmatrix((g,), active, env, (g.addr, g.regs))
            return
        word, half, halves, flat, smem_acc, reg_acc, fast = plan
        self._init = True
        smem, smem32 = self._vecs(s.smem, 2), self._vecs(s.smem, 4)
        regs2 = self._vecs(s.local, 4)
        regs = regs2.reshape(-1)  # (threads x words, flat: one gather)
        self.lanes += word.size
        if s.op == "ld":  # the two 16-bit halves of each word, low first: gathered as pairs, viewed as the word
            ini = self.hb.read(s.smem, smem_acc, None, s.span)
            if fast is not None and fast[3] is not None:  # 16-byte rows -> 4 threads' words: one gather of rows
                r = fast[3]
                regs2[fast[0], fast[1]].reshape(r.shape[0], 4, r.shape[1])[...] = \
                    self._vecs(s.smem, 16)[r].view(np.uint32).reshape(r.shape + (4,)).transpose(0, 2, 1)
            elif fast is not None:  # whole aligned words into a block of registers: one gather of 32-bit words
                regs2[fast[0], fast[1]] = smem32[fast[2]]
            else:
                regs[flat] = smem[halves].view(np.uint32)[..., 0]
            # (per word; read as halves, each half of a word keeps its own bits: per byte)
            halves_read = not _all(ini) and smem_acc.nbytes == 2
            self.hb.write(s.local, reg_acc, None, s.span,
                          True if _all(ini) or halves_read else np.asarray(ini).reshape(word.shape),
                          init_bytes=np.repeat(np.asarray(ini).reshape(word.shape + (2,)), 2, -1) if halves_read
                          else None)
        else:
            ini = self.hb.read(s.local, reg_acc, None, s.span)
            if fast is not None and smem_acc.unique:  # (as words: gathering the rows' transpose costs more)
                smem32[fast[2]] = regs2[fast[0], fast[1]]
                val = None
            else:
                val = regs[flat]
                smem[halves] = val[..., None].view(np.uint16)
            k = 2 if smem_acc.nbytes == 2 else 1  # (the tracker's items per register word)
            # (a word partly initialised, registers kept per 16-bit half: the bits of its bytes)
            ib = None if _all(ini) or self.hb.unit(s.local) >= 4 else \
                self.hb.init_bytes(s.local, reg_acc, None).reshape(word.shape + (4,))
            init = True if _all(ini) or ib is not None else np.repeat(np.asarray(ini).reshape(word.shape)[..., None],
                                                                       k, -1)
            self.hb.write(s.smem, smem_acc, None, s.span, init,
                          value=None if smem_acc.unique or val is None else
                          val.view(np.uint16).reshape(half.shape) if k == 2 else val.reshape(word.shape),
                          init_bytes=ib)

    def _ldst_group_plan(self, group, warps: np.ndarray, env) -> tuple | bool:
        """:meth:`_ldst_plan` of each statement of ``group``, joined along the register axis, with the tracker's
        prepared accesses; False when the group must run one by one (a word written twice)."""
        parts = [self._ldst_plan_of(g, warps, env) for g in group]
        tids = parts[0][0]
        lo, hi, word, half = (np.concatenate([p[k] for p in parts], -1) for k in (1, 2, 3, 4))
        if len(group) > 1:
            written = half.reshape(tids.shape[0], -1) if group[0].op == "st" else \
                (tids[..., None] * (self.local[group[0].local.name].shape[1] // 4) + word)
            if not distinct(written):
                return False
        rb = word * 4
        t3 = np.broadcast_to(tids[..., None], word.shape)
        s = group[0]
        # the shared side as the tracker keeps it: 32-bit words (a fragment without .trans: aligned pairs), else
        # 16-bit halves
        paired = self.hb.unit(s.smem) % 4 == 0
        smem_acc = self.hb.prepare(s.smem, lo * 2, t3, 4) if paired else \
            self.hb.prepare(s.smem, half, np.broadcast_to(tids[..., None], half.shape), 2)
        reg_acc = self.hb.prepare(s.local, rb, t3, 4)
        flat = t3 * (self.local[s.local.name].shape[1] // 4) + word  # (thread, word) -> flat register word
        fast = None
        if not (lo % 2).any() and np.array_equal(hi, lo + 1):  # (no .trans: each word is an aligned pair)
            order = np.argsort(flat.reshape(-1), kind="stable")
            t_s, w_s = np.broadcast_to(t3, word.shape).reshape(-1)[order], word.reshape(-1)[order]
            r0, c0 = int(t_s[0]), int(w_s[0])
            nr = int(t_s[-1]) - r0 + 1
            nc = t_s.size // nr
            if nr * nc == t_s.size and np.array_equal(t_s, np.repeat(np.arange(r0, r0 + nr), nc)) and \
                    np.array_equal(w_s, np.tile(np.arange(c0, c0 + nc), nr)):  # a block of threads x words
                src = (lo.reshape(-1)[order] // 2).reshape(nr, nc)  # (the shared word of each register word)
                # each 4 consecutive threads' word c one aligned 16-byte row of shared memory, in order (PTX's
                # fragment: thread t holds row t / 4, columns 2 (t % 4), +1): moved as rows, (nr / 4, nc) of them
                q = src.reshape(nr // 4, 4, nc) if nr % 4 == 0 and r0 % 4 == 0 else None
                rows16 = q[:, 0, :] // 4 if q is not None and not (q[:, 0, :] % 4).any() and \
                    np.array_equal(q, q[:, :1, :] + np.arange(4)[None, :, None]) else None
                fast = (slice(r0, r0 + nr), slice(c0, c0 + nc), src, rows16)
        return word, half, np.ascontiguousarray(np.stack([lo, hi], -1)), flat, smem_acc, reg_acc, fast

    def _ldst_plan_of(self, s: ir.LdStMatrix, warps: np.ndarray, env) -> tuple:
        """:meth:`_ldst_plan`, shared by the statements of the same address, registers, shape and buffers (an
        ldmatrix and the stmatrix that writes its fragment back) where those depend on the thread alone."""
        if self._skey(s.addr) is None or any(self._skey(r) is None for r in s.regs):
            return self._ldst_plan(s, warps, env)
        key = (s.addr, s.regs, s.num, s.trans, id(s.smem), id(s.local), warps.tobytes())
        hit = self._ldst_parts.get(key)
        if hit is None:
            hit = (s.smem, s.local, self._ldst_plan(s, warps, env))  # (the buffers kept: their ids stay theirs)
            if self._keep(hit[2]):
                self._ldst_parts[key] = hit
        return hit[2]

    def _ldst_plan(self, s: ir.LdStMatrix, warps: np.ndarray, env) -> tuple:
        """The threads, fragment elements and register words of an ldmatrix/stmatrix (checked: aligned, in bounds)."""
        tids = warps[:, None] * 32 + np.arange(32)[None, :]
        flat = tids.reshape(-1)
        addr = np.broadcast_to(np.asarray(self.eval_expr(s.addr, env, s.span, flat), np.int64),
                               flat.shape).reshape(tids.shape)
        rows = addr[:, : 8 * s.num]  # only threads 0 .. 8*num-1 supply addresses
        if np.any(rows % ROW_ELEMS):
            w, t = (int(x[0]) for x in np.nonzero(rows % ROW_ELEMS))
            raise LaunchError(f"{s.chain}: {self._thread(int(tids[w, t]))} supplies row address element "
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
        return tids, lo, hi, word, half

    def _taddr(self, addr_buf, tids, span):
        """The TMEM address in ``addr_buf[0]``, read by threads ``tids``."""
        if self.hb.tracks(addr_buf):  # (the slot the allocation writes is not tracked: nothing to report)
            self.hb.read(addr_buf, np.zeros(tids.size, np.int64), tids, span, 4)
        return int(self.mem[addr_buf.name].view(np.uint32)[0])

    def _ldst(self, s: ir.TcgenLdSt, active):
        warps = self._warps(active, s.span)
        if not warps.size:
            return
        taddr = self._taddr(s.addr, active, s.span)
        key = (s.shape, s.num, s.row, s.col, s.reg_base, s.regs, s.local.name, s.op, taddr, warps.tobytes(),
               self.tmem.slots.tobytes())
        plan = self._tc_plans.get(key)
        if plan is None:  # the cells, registers and prepared accesses: once per instruction shape and address
            plan = self._tc_plan(s, warps, taddr)
            if self._keep(plan):
                self._tc_plans[key] = plan
        tids, rb, cb, mine, cells_at, prepared = plan
        self.lanes += rb.size
        regs = self._vecs(s.local, 4)
        values = None
        if s.op == "ld":
            regs[mine] = self.tmem.cells[cells_at]
        else:
            values = np.ascontiguousarray(regs[mine])
            self.tmem.cells[cells_at] = values
            self.tmem.touched[cells_at] = True
        # the tracker does the accesses: ld reads the cells, leaves the registers in flight until wait::ld;
        # st reads the registers (in flight until wait::st) and writes the cells
        self.hb.event(f"tcgen05.{s.op}", tids, s.span, local=s.local, regs=rb, cells=cb, values=values,
                      prepared=prepared)

    def _tc_plan(self, s: ir.TcgenLdSt, warps: np.ndarray, taddr: int) -> tuple:
        """A tcgen05.ld/st's threads, register words and TMEM cells (checked), with a block of lanes x columns
        for the cells where they are one (slices, no index arrays) and the tracker's prepared accesses."""
        tids = (warps[:, None] * 32 + np.arange(32)[None, :]).reshape(-1)
        lane, col = self.tmem.cells_of(s.shape, s.num, tids, taddr, s.row, s.col, s.span)
        regs = self.local[s.local.name].view(np.uint32)
        ridx = s.reg_base + np.arange(s.regs)
        if regs.shape[1] < ridx[-1] + 1:
            raise LaunchError(f"{s.local.name} has {regs.shape[1]} 32-bit registers; {s.chain} needs {ridx[-1] + 1}",
                              s.span)
        rb = (np.broadcast_to(ridx, lane.shape) * 4).reshape(tids.size, -1)  # threads x register words (bytes)
        cb = ((lane * tc.TMEM_COLS + col) * 4).reshape(tids.size, -1)  # threads x TMEM cells (bytes)
        t0 = int(tids[0])
        rows = slice(t0, t0 + tids.size) if int(tids[-1]) - t0 == tids.size - 1 else tids[:, None]  # (sorted, unique)
        mine = (rows, slice(int(ridx[0]), int(ridx[-1]) + 1))
        cells_at: tuple = (lane, col)
        l0, c0 = int(lane[0, 0]), int(col[0, 0])
        if np.array_equal(lane, np.broadcast_to(np.arange(l0, l0 + lane.shape[0])[:, None], lane.shape)) and \
                np.array_equal(col, np.broadcast_to(np.arange(c0, c0 + col.shape[1]), col.shape)):
            cells_at = (slice(l0, l0 + lane.shape[0]), slice(c0, c0 + col.shape[1]))  # thread i: lane l0 + i
        return tids, rb, cb, mine, cells_at, self.hb.tcgen_access(s.local, rb, cb, tids)

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
