"""Asynchronous copies in the simulator, completed as late as the PTX ISA allows.

The interpreter (:mod:`tilemagic.sim.interpreter`) runs a kernel with ``cp.async``, TMA copies, mbarriers or commit
groups through :class:`AsyncModel`, which keeps what a GPU keeps and moves the bytes *when the copy completes*,
not when it is issued:

* **cp.async** (PTX ISA 9.0 §9.7.9.25.3): per thread a list of uncommitted copies and a FIFO of committed groups;
  ``commit_group`` makes the uncommitted ones a group, ``wait_group n`` completes all but the newest ``n`` groups of
  the executing thread.  A copy reads its global source at the issue and writes its shared destination at the
  covering ``wait_group``: until then the destination bytes are in flight (any access is a hazard) and so is the
  source (a write is).  The bytes are the issuing thread's write *at its wait*: other threads need a barrier after
  it (the happens-before tracker, :mod:`tilemagic.sim.hb`, orders them so).
* **mbarriers** (§9.7.13.15): ``{phase, pending, expected, tx}``; ``arrive`` (every executing thread, count 1) adds
  its ``expect_tx`` bytes to tx, then arrives; a TMA load's bytes are complete-tx on its barrier when it lands; the
  phase completes when pending and tx are both 0 (phase += 1, pending = expected).  ``wait BAR phase P`` returns
  iff ``(phase & 1) != P``.  TMA loads land as late as legal: when a wait needs the phase they complete (the wait
  lands the barrier's in-flight copies, in issue order, until the phase completes).  An arrive releases the
  arriving threads' clocks into the phase; a successful wait acquires it, and the barrier's copies have a clock
  column of their own (:attr:`tilemagic.sim.hb.Tracker.agents`), so only the waiters of the phase — and threads
  that synchronise with a waiter later — are ordered after the copies' writes.
* **TMA tile copies** (§9.7.9.25.5.2, §5.5): :func:`tma_box` computes a box from the ``TensorMap`` fields alone
  (independently of the planner: it is the reference the planner is checked against). G2S out-of-bounds elements are
  zero, or NaN for ``oob_fill=1`` (:func:`tma_g2s_data`: PTX's canonical NaN of the descriptor's float type,
  :data:`tilemagic.arch.tma.OOB_NAN_BITS` — the bit pattern the hardware writes is not documented), and count toward
  complete-tx (the whole box); S2G out-of-bounds elements are not written, element by element as the ISA says
  (triton-lang/triton#11583 reports an H100 writing on to the next 16-byte boundary of a row; a GPU comparison of
  such a store would show it). An S2G reduction (``reduce``, §9.7.9.25.5.3) reads its global destination at the
  issue (the uninitialised-read report applies) and writes ``OP(dst, src)`` (:func:`tma_reduce`) when it lands.
  An S2G copy reads its shared source at the issue (an
  async-proxy read: every generic write it reads needs a ``fence.proxy.async`` of its writer, §9.7.13.4) and is in
  flight on it until the covering ``bulk_wait_group ... read``; it writes global memory at the covering plain
  ``bulk_wait_group`` (or at the kernel's end).

* **Clusters** (PTX ISA 9.0 §9.7.9.25.5.2, §9.7.9.25.4.1, §9.7.13.3): one model per CTA; a TMA multicast
  (``cta_mask``) lands its box in every masked CTA's shared memory at the same offset and completes the whole box
  on each one's mbarrier; a dsmem copy (:class:`~tilemagic.ir.nodes.BulkCopy`) reads this CTA's source and lands in
  the remote CTA's destination, completing on its mbarrier; both are the receiving CTA's copies in flight
  (:meth:`AsyncModel._deliver`; a multicast is one issue, with a landing per receiving CTA), and :func:`exit_check`
  reports a CTA that may exit while such a copy may still write into it, or while one it issued is not known to it
  to be complete.  A dsmem copy's source read completes with the copy, which only the receiving barrier's waiters
  observe: a later write of the source must be ordered after them (a ``cluster_sync`` after that wait,
  :meth:`tilemagic.sim.hb.Tracker.read_observed`).  Reductions of one operation into the same global bytes commute
  (atomic per element, §9.7.9.25.5.3) and do not race with each other.
* **tcgen05.cp** (PTX ISA 9.0 §9.7.16.9.1, §9.7.16.6.1, §9.7.16.12.1): the descriptor
  (``TcgenCp.descriptor`` at the buffer's place in :func:`tilemagic.ir.nodes.shared_bases`) decoded by
  :func:`tilemagic.arch.smem_desc.decode`, walked by :func:`tilemagic.layout.smem_matrix.cp_source_addresses`,
  written to the cells of :func:`tilemagic.arch.tcgen05.cp_cells`.  A copy is pending in its issuing thread's queue;
  that thread's ``tcgen05.commit`` makes its pending copies one arrive-on (count 1) on the commit's barrier, made as
  late as legal (a wait that needs the phase, or the kernel's end) after the copies read their source and wrote
  TMEM.  Source (async-proxy read) and TMEM cells are in flight from the issue; the cells' writer is then the
  barrier's clock column, and the tracker also wants a ``tcgen05.fence::after_thread_sync`` between the wait and a
  later tcgen05.ld/st of them (:meth:`tilemagic.sim.hb.Tracker.cp_landed`).  A copy over cells a tcgen05.st still
  has in flight (no ``wait::st`` of its thread yet) is a write after write
  (:meth:`tilemagic.sim.hb.Tracker.tmem_async_write`); a copy never committed is reported with the commit that
  missed it (another thread's, or its own before it).  ``cta_group::2`` and a commit's
  ``cta_mask`` are refused (TMEM in cluster kernels is not simulated).

Errors of the model are hazards (``arrive``/``wait`` on an uninitialised barrier or one whose initialisation the
thread is not ordered after, more bytes completed than expected, a wait whose parity names a phase two or more
phases old, copies never waited for).  A phase that can never complete makes the scheduler of the interpreter stop
with **would hang** (:meth:`AsyncModel.hang_message`).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..arch import smem_desc
from ..arch import tcgen05 as tc
from ..arch.tma import OOB_NAN_BITS, TMA_REDUCE_OPS, box_traversal
from ..errors import LaunchError, Span
from ..ir import nodes as ir
from ..layout.smem_matrix import cp_source_addresses
from ..layout.swizzle import xor_swizzle
from .hb import CP_PROXY_WHY, CpWrite, cta_name

#: Bytes one ``cp.async`` may copy (``cp-size``, PTX ISA 9.0 §9.7.9.25.3.1).
CP_ASYNC_SIZES = (4, 8, 16)


def _box_coords(tmap: ir.TensorMap, coords) -> list[np.ndarray]:
    """Per dimension (CUDA order), the coordinate of each of one box's elements, box-linear (dimension 0
    fastest): ``coords[i] + k[i] * elem_strides[i]`` over :func:`tilemagic.arch.tma.box_traversal`'s elements."""
    n, es = box_traversal(tmap.box[:tmap.rank], tmap.elem_strides)
    ks = np.unravel_index(np.arange(math.prod(n), dtype=np.int64), tuple(reversed(n)))[::-1]  # (k0 fastest)
    return [int(coords[i]) + ks[i] * es[i] for i in range(tmap.rank)]


def tma_box(tmap: ir.TensorMap, coords, smem_offset: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The elements of one tile-mode box of ``tmap`` at ``coords`` (PTX ISA 9.0 §9.7.9.25.5.2, §5.5).

    Parameters
    ----------
    tmap : TensorMap
        The descriptor: ``dims``, ``strides`` (bytes, dimensions 1..), ``box``, ``elem_strides``, ``swizzle``,
        ``elem_bytes``, ``base_elem`` (in elements of ``tmap.buf``).  All tuples in CUDA order (dimension 0
        innermost).
    coords : sequence of int
        The box's first coordinate per dimension, in descriptor elements (may be negative or past the end).
    smem_offset : int
        Byte offset of the box in the shared buffer (whose base the simulator places on a 1024-byte boundary, so
        the offset is the address the swizzle sees).

    Returns
    -------
    gbyte : numpy.ndarray of int64, ``(E,)``
        Byte offset in ``tmap.buf`` of each of the box's ``E`` elements, box-linear (dimension 0 fastest):
        ``base_elem * buf.elem_bytes + Σ coord[i] * gs[i]`` with ``coord[i] = coords[i] + k[i] * elem_strides[i]``
        (``elem_strides[0]`` is ignored, as for every non-interleaved map), ``gs[0] = elem_bytes``.
    inb : numpy.ndarray of bool, ``(E,)``
        Whether the element lies inside ``[0, dims[i])`` in every dimension.
    sbyte : numpy.ndarray of int64, ``(E,)``
        Byte address in shared memory: ``smem_offset + linear * elem_bytes``, then the map's swizzle on the address
        (mode B = 1/2/3 for 32/64/128 B: ``a ^ (((a >> 7) & (2**B - 1)) << 4)``, §5.5.7).
    """
    eb = tmap.elem_bytes
    cs = _box_coords(tmap, coords)
    total = cs[0].size
    gs = (eb,) + tuple(int(s) for s in tmap.strides)
    gbyte = np.full(total, tmap.base_elem * tmap.buf.elem_bytes, np.int64)
    inb = np.ones(total, bool)
    for i, c in enumerate(cs):
        inb &= (c >= 0) & (c < int(tmap.dims[i]))
        gbyte += c * gs[i]
    sbyte = int(smem_offset) + np.arange(total, dtype=np.int64) * eb
    if tmap.swizzle:
        sbyte = xor_swizzle(sbyte, 4, int(tmap.swizzle), 3)
    return gbyte, inb, sbyte


def tma_s2g_written(tmap: ir.TensorMap, coords, inb: np.ndarray) -> np.ndarray:
    """Which of a store (S2G) box's elements the TMA unit writes: the in-bounds ones (``inb``, :func:`tma_box`)
    and, in dimension 0, also those past ``dims[0]`` up to the next 16-byte boundary of the row, when the other
    coordinates are in bounds.

    PTX ISA 9.0 §5.5.3.3 says out-of-bound elements of a store are not written; the H200 writes on to the next
    16-byte boundary past ``globalDim[0]`` (measured, ``docs/gpu-runs.md`` 2026-12-01, as triton-lang/triton#11583
    reports for the H100), and the simulator does what the hardware does.  For a map whose ``dims[0]`` spans a
    multiple of 16 bytes (every map over a dense buffer of rank 2 or more: its row stride is) the two agree.

    Returns
    -------
    numpy.ndarray of bool, ``(E,)``, box-linear like ``inb``.
    """
    eb = tmap.elem_bytes
    limit0 = -(-int(tmap.dims[0]) * eb // 16) * 16 // eb  # elements of dimension 0 up to the 16-byte boundary
    if limit0 == int(tmap.dims[0]):
        return inb
    ok = np.ones(inb.shape, bool)
    for i, c in enumerate(_box_coords(tmap, coords)):
        ok &= (c >= 0) & (c < (limit0 if i == 0 else int(tmap.dims[i])))
    return ok


def tma_g2s_data(tmap: ir.TensorMap, inb: np.ndarray, loaded: np.ndarray) -> np.ndarray:
    """The bytes one G2S box writes into shared memory (PTX ISA 9.0 §5.5.3.3).

    Parameters
    ----------
    tmap : TensorMap
        The descriptor (``dtype``, ``elem_bytes``, ``oob_fill``).
    inb : numpy.ndarray of bool, ``(E,)``
        :func:`tma_box`'s in-bounds flags of the box's elements (box-linear).
    loaded : numpy.ndarray of uint8, ``(inb.sum(), elem_bytes)``
        The global bytes of the in-bounds elements, in box order.

    Returns
    -------
    numpy.ndarray of uint8, ``(E, elem_bytes)``
        In-bounds elements as loaded; out-of-bound ones zero (``oob_fill`` 0), or for ``oob_fill`` 1 on a float map
        the NaN of :data:`tilemagic.arch.tma.OOB_NAN_BITS` (little endian; its exact bits are not established).
        The whole box counts toward complete-tx either way.
    """
    eb = tmap.elem_bytes
    data = np.zeros((inb.size, eb), np.uint8)
    nan = OOB_NAN_BITS.get(tmap.dtype)
    if tmap.oob_fill == 1 and nan is not None and nan < 256 ** eb:
        data[:] = np.frombuffer(int(nan).to_bytes(eb, "little"), np.uint8)
    if inb.any():
        data[inb] = loaded
    return data


def _reduce_dtype(dtype: str, op: str) -> np.dtype:
    """The NumPy type a reduction computes in: the element type, or its unsigned twin for bit operations."""
    dt = ir.numpy_dtype(dtype)
    return np.dtype(f"u{dt.itemsize}") if op in ("and", "or", "xor") else dt


def tma_reduce(op: str, dtype: str, dst: np.ndarray, src: np.ndarray) -> np.ndarray:
    """``OP(dst, src)`` per element of a TMA S2G reduction (``cp.reduce.async.bulk.tensor``, PTX ISA 9.0
    §9.7.9.25.5.3): the new bytes of the in-bounds global elements.

    Parameters
    ----------
    op : str
        One of :data:`tilemagic.arch.tma.TMA_REDUCE_OPS` (``add``, ``min``, ``max``, ``inc``, ``dec``, ``and``,
        ``or``, ``xor``).
    dtype : str
        The tensor's element type (tilemagic name; a reduction never promotes the descriptor unit).
    dst, src : numpy.ndarray of uint8, ``(E, elem_bytes)``
        The global destination's current bytes and the shared source's bytes.

    Returns
    -------
    numpy.ndarray of uint8, ``(E, elem_bytes)``

    Notes
    -----
    Integers wrap (two's complement); ``inc``/``dec`` are ``atom``'s: ``dst >= src ? 0 : dst + 1`` and
    ``(dst == 0 || dst > src) ? src : dst - 1`` (PTX ISA 9.0 §9.7.13.5, unsigned).  Floats are computed in the type
    with round-to-nearest-even (NumPy on ``float16``/``float32``, ``bfloat16`` through ml_dtypes; the sum of two
    values of the type is exact in float32 before its one rounding), subnormals kept (PTX's ``.noftz`` behaviour,
    which the tensor form does not spell); ``min``/``max`` of a NaN and a number give the number (PTX ``min``).

    Raises
    ------
    ValueError
        ``op`` does not reduce ``dtype`` (the variants decline that before the simulator runs).
    """
    if dtype not in TMA_REDUCE_OPS.get(op, ()):
        raise ValueError(f"cp.reduce.async.bulk.tensor .{op} is not defined on {dtype}")
    dt = _reduce_dtype(dtype, op)
    a = np.ascontiguousarray(dst).view(dt).reshape(-1)
    b = np.ascontiguousarray(src).view(dt).reshape(-1)
    with np.errstate(over="ignore", invalid="ignore"):
        if op == "add":
            r = (a + b).astype(dt)
        elif op == "min":
            r = np.fmin(a, b)
        elif op == "max":
            r = np.fmax(a, b)
        elif op == "inc":
            r = np.where(a >= b, np.zeros_like(a), a + np.ones_like(a))
        elif op == "dec":
            r = np.where((a == 0) | (a > b), b, a - np.ones_like(a))
        elif op == "and":
            r = a & b
        elif op == "or":
            r = a | b
        else:
            r = a ^ b
    return np.ascontiguousarray(np.asarray(r, dt)).view(np.uint8).reshape(dst.shape)


def _bytes_at(off: np.ndarray, nb: int) -> np.ndarray:
    """The byte indices ``(items, nb)`` of ``nb``-byte items at byte offsets ``off``."""
    return np.asarray(off, np.int64).reshape(-1, 1) + np.arange(nb, dtype=np.int64)


def threads_text(tids) -> str:
    """``thread 5``, ``threads 0-127``, ``threads 0-31, 64-95``."""
    t = np.unique(np.asarray(tids, np.int64).reshape(-1))
    if t.size == 1:
        return f"thread {int(t[0])}"
    cuts = np.flatnonzero(np.diff(t) != 1) + 1
    parts = [f"{int(r[0])}-{int(r[-1])}" if r.size > 1 else str(int(r[0])) for r in np.split(t, cuts)]
    if len(parts) > 6:
        parts = parts[:6] + ["..."]
    return "threads " + ", ".join(parts)


@dataclass
class _Copy:
    """One execution of an asynchronous copy statement by its issuing threads (one item per thread and vector for
    cp.async; one TMA box of one thread)."""

    kind: str  # "cp.async" | "g2s" | "s2g"
    span: Span | None
    op: int  # the tracker's id (its in-flight messages)
    threads: np.ndarray  # the issuing thread of each item
    dst: ir.Buffer
    dst_off: np.ndarray  # byte offset of each item
    nbytes: int  # bytes per item
    data: np.ndarray  # (items, nbytes) uint8
    src: ir.Buffer | None = None  # a source still in flight (tracked global of cp.async; shared of s2g)
    src_off: np.ndarray | None = None
    src_nbytes: int = 0
    src_op: int = -1  # the tracker's id of the source side
    bar: str | None = None
    tx: int = 0  # complete-tx bytes (g2s)
    landed: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    read_done: bool = False
    # a copy between CTAs of a cluster (multicast, dsmem): the issuing and the receiving CTA, what it is; the phase of
    # the receiving barrier it completed into, and the tracker's event counter when a wait there observed it
    issuer: int = 0
    dest: int = 0
    what: str = ""
    src_hb: Any = None  # (a dsmem copy: the issuing CTA's tracker view, which frees the source when it lands)
    phase: int = -1
    observed: int | None = None
    reduce: str | None = None  # s2g: cp.reduce.async.bulk.tensor's operation, applied when the copy lands
    dtype: str = ""  # s2g reduction: the element type


@dataclass
class _TcCp:
    """One ``tcgen05.cp`` by one thread, pending in its tcgen05 queue until a commit of that thread completes it."""

    s: ir.TcgenCp
    thread: int
    src: np.ndarray  # (rows, chunks) byte offsets of the 16-byte chunks in s.smem
    lanes: np.ndarray  # (rows, replicas) TMEM lanes of each row
    cols: np.ndarray  # (chunks, 4) TMEM columns of each chunk's words
    cells: np.ndarray  # (rows, replicas, chunks, 4) TMEM cell indices lane * 512 + col
    init: np.ndarray  # (rows, replicas, chunks, 4) the init bit of each word written (the source's, at the issue)
    op: int  # the tracker's id of the TMEM side
    src_op: int  # ... and of the shared side
    record: CpWrite
    seq: int = 0  # its place among this CTA's tcgen05.cp and tcgen05.commit issues (AsyncModel.tc_seq)


@dataclass
class _Commit:
    """A ``tcgen05.commit`` of one thread: its arrive-on (count 1) once its copies completed."""

    s: ir.TcgenCommit
    thread: int
    cps: list
    clock: np.ndarray  # the commit's release (the issuing thread's clock at the commit)


@dataclass
class _Mbar:
    """An mbarrier's state (PTX ISA 9.0 §9.7.13.15.1) and what the simulator needs to explain it."""

    buf: ir.Buffer
    count: int = 0
    init: tuple[int, int, Span | None] | None = None  # (thread, stamp, span) of the mbarrier.init
    phase: int = 0  # phases completed
    pending: int = 0
    tx: int = 0
    expect: int = 0  # bytes announced by this phase's arrivals
    got: int = 0  # bytes completed in this phase
    copies: deque = field(default_factory=deque)  # G2S copies not landed yet, in issue order
    clock: np.ndarray | None = None  # the arrivals' release clock of the current phase
    done: dict[int, np.ndarray] = field(default_factory=dict)  # completed phase -> the clock its waiters acquire
    seen: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # per thread: phases completed at
    # its last successful wait
    version: int = 0  # bumped by every change a blocked waiter may be waiting for
    arrive_span: Span | None = None
    copy_span: Span | None = None
    copy_what: str = "TMA copy"  # (what the last copy issued on it is: "TMA copy", "TMA multicast", "dsmem copy")
    over: set[int] = field(default_factory=set)  # phases reported for too many bytes
    issued: int = 0  # G2S copies issued on it, and their bytes
    issued_bytes: int = 0
    # completed phase -> the successful waits for it: (threads, the tracker's event counter then, the wait's line)
    waits: dict[int, list] = field(default_factory=dict)
    remote_landed: list = field(default_factory=list)  # copies of other CTAs landed here, not yet observed
    commits: deque = field(default_factory=deque)  # tcgen05.commits whose copies have not completed, in order


class AsyncModel:
    """The asynchronous state of one simulated CTA (module docstring); the interpreter calls :meth:`run` for
    every asynchronous statement and :meth:`finish` at the kernel's end.

    Parameters
    ----------
    sim : tilemagic.sim.interpreter.Simulator
        Its memory (``mem``), evaluator and vector machinery (``_vec_offsets``, ``_access``, ``_move``, ...) and
        its happens-before tracker (``hb``).
    """

    def __init__(self, sim) -> None:
        self.sim, self.hb, self.n = sim, sim.hb, sim.n
        #: the CTA's rank, the cluster's size, and every CTA's model (set by the interpreter's cluster run:
        #: multicast and dsmem copies land in another CTA's shared memory and complete on its mbarriers)
        self.rank, self.C = sim.rank, max(1, sim.k.cluster)
        self.off = self.rank * sim.n
        self.cluster: list[AsyncModel] = [self]
        #: the copies this CTA issued into another CTA's shared memory (multicast, dsmem): the exit check's
        self.remote: list[_Copy] = []
        self.bars = {b.name: _Mbar(b, seen=np.zeros(sim.n, np.int64)) for b in sim.k.shared if b.is_mbarrier}
        self.copies: list[_Copy] = []
        n = sim.n
        self.unc: list[list[int]] = [[] for _ in range(n)]  # cp.async: uncommitted copies per thread
        self.groups: list[deque] = [deque() for _ in range(n)]  # committed groups per thread (lists of copies)
        self.bunc: list[list[int]] = [[] for _ in range(n)]  # bulk: uncommitted S2G copies
        self.bgroups: list[deque] = [deque() for _ in range(n)]
        self.commits = {False: np.zeros(n, np.int64), True: np.zeros(n, np.int64)}  # groups committed per thread
        self.blocked: list[tuple[np.ndarray, ir.MbarWait]] = []  # waits that could not pass (the scheduler's)
        self.suspendable = False  # whether a wait that cannot pass may block its threads (a top-level wait)
        self.tc_pending: dict[int, list[_TcCp]] = {}  # tcgen05.cp per issuing thread not committed yet
        self.tc_seq = 0  # tcgen05.cp and tcgen05.commit issues so far (their order, for the uncommitted report)
        #: every tcgen05.commit issue: (its tc_seq, the committing threads, its span) — the uncommitted-copy
        #: report names a commit another thread issued after the copy (:meth:`_uncommitted_text`)
        self.tc_commits: list[tuple[int, np.ndarray, Span | None]] = []
        self._bases: dict[str, int] | None = None  # the shared window (ir.shared_bases), when a cp needs it

    # ------------------------------------------------------------------ names
    def who(self, tids) -> str:
        """:func:`threads_text` of CTA-local ``tids`` (an int or an array), with the CTA in a cluster."""
        text = threads_text(np.atleast_1d(np.asarray(tids, np.int64)))
        return text if self.C == 1 else f"CTA {self.rank} {text}"

    def bar_label(self, m: _Mbar) -> str:
        """``full``, or ``full of CTA 1`` in a cluster."""
        return m.buf.name if self.C == 1 else f"{m.buf.name} of CTA {self.rank}"

    # ------------------------------------------------------------------ dispatch
    def run(self, s: ir.Stmt, tids: np.ndarray, env: dict) -> None:
        """Execute the asynchronous statement ``s`` for the active threads ``tids``."""
        if isinstance(s, ir.CpAsync):
            self._cp_async(s, tids, env)
        elif isinstance(s, ir.AsyncGroup):
            self._group(s, tids)
        elif isinstance(s, ir.MbarInit):
            self._init(s, tids)
        elif isinstance(s, ir.MbarArrive):
            self._arrive(s, tids)
        elif isinstance(s, ir.MbarWait):
            self._wait(s, tids)
        elif isinstance(s, ir.Fence):
            if s.kind == "proxy_async":
                self.hb.fence_proxy(tids)
            self.hb.event(f"fence.{s.kind.replace('_', '.')}", tids, s.span)
        elif isinstance(s, ir.TmaCopy):
            self._tma(s, tids, env)
        elif isinstance(s, ir.BulkCopy):
            self._bulk(s, tids, env)
        elif isinstance(s, ir.TcgenCp):
            self._tcgen_cp(s, tids)
        elif isinstance(s, ir.TcgenCommit):
            self._tcgen_commit(s, tids)
        elif isinstance(s, ir.ClusterSync):
            if self.C > 1:  # (the cluster's scheduler runs a top-level one for every CTA at once)
                raise LaunchError("the simulator runs `cluster_sync` only as a top-level statement (not in a loop, "
                                  "a sequence or under a guard): every thread of every CTA must reach it", s.span)
            self.hb.event("cluster_sync", tids, s.span)  # (a cluster of one CTA: the CTA's barrier)
        else:  # (the interpreter sends only the nodes above)
            raise TypeError(f"not an asynchronous statement: {type(s).__name__}")

    # ------------------------------------------------------------------ cp.async
    def _cp_async(self, s: ir.CpAsync, tids: np.ndarray, env: dict) -> None:
        sim, hb, nb = self.sim, self.hb, s.nbytes
        if nb not in CP_ASYNC_SIZES:
            raise LaunchError(f"cp.async copies 4, 8 or 16 bytes, not {nb} (PTX ISA 9.0 §9.7.9.25.3.1)", s.span)
        if s.src.scope != "global" or s.dst.scope != "shared":
            raise LaunchError(f"cp.async copies global to shared memory, not {s.src.scope} {s.src.name} to "
                              f"{s.dst.scope} {s.dst.name} (PTX ISA 9.0 §9.7.9.25.3.1)", s.span)
        shape = (1, tids.size)
        sv, sfirst = sim._vec_offsets(s.src, s.src_index, tids, env, nb, s.span, shape)
        dv, dfirst = sim._vec_offsets(s.dst, s.dst_index, tids, env, nb, s.span, shape)
        acc = sim._access(s.src, sv, nb, sfirst, tids)
        ini = sim._track_read(s.src, sv, nb, sfirst, tids, s.span, acc)
        ib = None if np.all(ini) else sim._track_bytes(s.src, sv, nb, sfirst, tids, acc)
        vals = np.ascontiguousarray(sim._move(s.src, nb, sv, tids, acc))
        dacc = sim._access(s.dst, dv, nb, dfirst, tids)
        # the write is checked against earlier accesses at the issue (it may land any time until the wait)
        sim._track_write(s.dst, dv, nb, dfirst, tids, s.span, ini, lambda: vals, dacc, ib)
        sim.lanes += tids.size
        op = hb.async_op("the cp.async writes", s.span, "its thread's covering `wait_group` returned (PTX ISA 9.0 "
                                                        "§9.7.9.25.3: the bytes land there)")
        doff = dv.reshape(-1) * nb
        hb.in_flight(s.dst, doff, nb, op, "dst")
        c = _Copy("cp.async", s.span, op, np.asarray(tids, np.int64).reshape(-1).copy(), s.dst, doff, nb,
                  vals.reshape(-1).view(np.uint8).reshape(-1, nb), landed=np.zeros(tids.size, bool))
        if hb.tracks(s.src) and s.src.scope != "local":
            c.src, c.src_off, c.src_nbytes = s.src, sv.reshape(-1) * nb, nb
            c.src_op = hb.async_op("the cp.async reads", s.span, "its thread's covering `wait_group` returned")
            hb.in_flight(s.src, c.src_off, nb, c.src_op, "src")
        k = len(self.copies)
        self.copies.append(c)
        for t in c.threads.tolist():
            self.unc[t].append(k)
        hb.event("cp.async", tids, s.span, bytes=nb)

    def _land_cp(self, k: int, threads, span: Span | None) -> None:
        """Complete the items of cp.async ``k`` of ``threads``: the bytes land, their writer is the issuing thread
        at this point, its ``wait_group`` at ``span`` (so a reader in another thread needs a barrier after it)."""
        c = self.copies[k]
        sel = ~c.landed & np.isin(c.threads, threads)
        if not sel.any():
            return
        c.landed |= sel
        off = c.dst_off[sel]
        self.sim.mem[c.dst.name][_bytes_at(off, c.nbytes)] = c.data[sel]
        self.hb.land(c.dst, off, c.nbytes, "dst", c.op, who=c.threads[sel], span=span)
        if c.src is not None and c.src_off is not None:
            self.hb.land(c.src, c.src_off[sel], c.src_nbytes, "src", c.src_op)
        self.hb.event("cp.async.complete", c.threads[sel], c.span, copy=c.span.line if c.span else None)
        if c.landed.all():
            c.data = c.data[:0]  # (the bytes are in memory now: the copy keeps no second one)

    # ------------------------------------------------------------------ commit groups
    def _group(self, s: ir.AsyncGroup, tids: np.ndarray) -> None:
        unc, groups = (self.bunc, self.bgroups) if s.bulk else (self.unc, self.groups)
        name = "bulk_" if s.bulk else ""
        ts = np.asarray(tids, np.int64).reshape(-1).tolist()
        made = self.commits[s.bulk]
        if s.kind == "commit":
            for t in ts:
                groups[t].append([unc[t], False])
                unc[t] = []
            made[ts] += 1
            # (group: the 0-based index of the group the first thread made; pending: its groups not waited for)
            self.hb.event(f"{name}commit_group", tids, s.span, group=int(made[ts[0]]) - 1 if ts else -1,
                          pending=len(groups[ts[0]]) if ts else 0)
            return
        todo: dict[int, list[int]] = {}
        for t in ts:
            g = groups[t]
            for i in range(len(g) - s.n):
                entry = g[i]
                for k in entry[0]:
                    todo.setdefault(k, []).append(t)
                entry[1] = True  # (read done: the sources are free)
            if not s.read:
                for _ in range(max(0, len(g) - s.n)):
                    g.popleft()
        for k, who in todo.items():
            if s.bulk:
                self._land_s2g(k, s.read, s.span)
            else:
                self._land_cp(k, np.asarray(who, np.int64), s.span)
        # (through: the index of the newest group of the first thread this wait completes, -1 if none)
        self.hb.event(f"{name}wait_group", tids, s.span, n=s.n, read=s.read,
                      through=int(made[ts[0]]) - 1 - s.n if ts else -1)

    # ------------------------------------------------------------------ mbarriers
    def _bar(self, buf: ir.Buffer, span) -> _Mbar:
        m = self.bars.get(buf.name)
        if m is None:
            raise LaunchError(f"{buf.name} is not an mbarrier", span)
        return m

    def _init(self, s: ir.MbarInit, tids: np.ndarray) -> None:
        m = self._bar(s.bar, s.span)
        ts = np.asarray(tids, np.int64).reshape(-1)
        if not ts.size:
            return
        if not 1 <= s.count < 1 << 20:
            raise LaunchError(f"mbarrier {self.bar_label(m)}: the arrival count must be in [1, 2^20), not {s.count} "
                              f"(PTX ISA 9.0 §9.7.13.15.1)", s.span)
        again = ts if m.init is not None else ts[1:]
        if m.init is None:
            m.init = (int(ts[0]), self.hb.G, s.span)
            m.count = m.pending = s.count
            m.clock = None
        if again.size:
            self.hb.async_hazard("mbarrier-init", f"hazard: mbarrier {self.bar_label(m)} is initialised again at "
                                 f"{_line(s.span)} by {self.who(again)} (first by {self.who(m.init[0])} at "
                                 f"{_line(m.init[2])}): `mbarrier.init` of a live barrier is undefined (PTX ISA "
                                 f"9.0 §9.7.13.15.9) — initialise it from one thread (`if tx == 0:`)", s.span,
                                 m.init[2], m.buf.name, (int(again[0]), m.init[0]))
        self.hb.event("mbarrier.init", tids, s.span, barrier=m.buf.name, count=s.count)

    def _usable(self, m: _Mbar, tids: np.ndarray, span, verb: str) -> bool:
        """Is ``m`` initialised, and its initialisation ordered before each of ``tids``?  Hazards otherwise."""
        if m.init is None:
            self.hb.async_hazard("mbarrier-uninit", f"hazard: {self.who(tids)} {verb} mbarrier {self.bar_label(m)} at "
                                 f"{_line(span)}, which is not initialised (no `mbarrier.init` ran before: the "
                                 f"barrier's state is garbage, PTX ISA 9.0 §9.7.13.15.9)", span, None, m.buf.name,
                                 (int(tids[0]), int(tids[0])))
            return False
        w, stamp, at = m.init
        ok = self.hb.ordered(tids, w, stamp)
        if not ok.all():
            t = int(np.asarray(tids)[np.argmin(ok)])
            self.hb.async_hazard("mbarrier-init", f"hazard: {self.who(t)} {verb} mbarrier {self.bar_label(m)} at "
                                 f"{_line(span)} before its initialisation by {self.who(w)} at {_line(at)} is "
                                 f"visible to it — "
                                 f"`fence.mbarrier_init` and a `cta_sync` after the init order it (PTX ISA 9.0 "
                                 f"§9.7.13.4)", span, at, m.buf.name, (t, w))
        return True

    def _check_complete(self, m: _Mbar) -> bool:
        """Complete the current phase if nothing is pending (PTX ISA 9.0 §9.7.13.15.1)."""
        if m.pending or m.tx:
            return False
        clock = m.clock if m.clock is not None else np.zeros(self.hb.known.shape[1], np.int32)
        self._waits_ordered(m, clock)
        m.done[m.phase] = self.hb.agent_clock(clock, m.buf.name)
        for old in [q for q in m.done if q < m.phase - 2]:
            del m.done[old]
        self.hb.event("phase", np.zeros(0, np.int64), None, barrier=m.buf.name, phase=m.phase)
        m.phase += 1
        m.pending, m.expect, m.got, m.clock = m.count, 0, 0, None
        m.version += 1
        return True

    def _waits_ordered(self, m: _Mbar, clock: np.ndarray) -> None:
        """Phase ``m.phase`` completes with its arrivals' release ``clock``: every thread that waited for the
        phase before it must be ordered before those arrivals.  Otherwise a GPU may complete this phase before
        that thread's `try_wait.parity` runs, which then sees the parity of the phase after and waits for it
        (forever, or past the data it meant to read) — the schedule the simulator ran had the wait first, another
        legal one does not (PTX ISA 9.0 §9.7.13.15.16: the wait is defined for the current and the immediately
        preceding phase only)."""
        for ts, stamp, span in m.waits.pop(m.phase - 1, ()):
            bad = np.asarray(clock)[ts + self.off] <= stamp
            if not bad.any():
                continue
            t = int(ts[np.argmax(bad)])
            msg = (f"hazard: the wait on mbarrier {self.bar_label(m)} phase {(m.phase - 1) & 1} at {_line(span)} "
                   f"({self.who(ts[bad])}, for phase {m.phase - 1}) is not ordered before the arrive at "
                   f"{_line(m.arrive_span)} that completes phase {m.phase}: on a GPU phase {m.phase} may complete "
                   f"first, and then {self.who(t)}'s `try_wait.parity {(m.phase - 1) & 1}` sees phase {m.phase + 1}'s "
                   f"parity and waits for it (PTX ISA 9.0 §9.7.13.15.16) — order every waiter before the next "
                   f"phase's arrive: a `cta_sync` after the waits, or an \"empty\" mbarrier the waiters arrive on and "
                   f"the producer waits for")
            self.hb.async_hazard("mbarrier-phase-order", msg, m.arrive_span, span, m.buf.name, (t, t))

    def _arrive(self, s: ir.MbarArrive, tids: np.ndarray) -> None:
        m = self._bar(s.bar, s.span)
        ts = np.asarray(tids, np.int64).reshape(-1)
        if not ts.size or not self._usable(m, ts, s.span, "arrives on"):
            return
        rel = self.hb.release(ts)
        m.arrive_span = s.span
        self.hb.event("arrive", ts, s.span, barrier=m.buf.name, phase=m.phase, bytes=s.expect_tx)
        left, phase0 = ts.size, m.phase
        while left:
            if m.pending <= 0:
                msg = (f"hazard: more arrivals on mbarrier {self.bar_label(m)} phase {m.phase} than its count "
                       f"{m.count} at "
                       f"{_line(s.span)}: the phase's arrivals are all in but {m.tx} bytes of its tx-count are "
                       f"outstanding (PTX ISA 9.0 §9.7.13.15.1)")
                self.hb.async_hazard("mbarrier-arrivals", msg, s.span, None, m.buf.name)
                break
            step = min(left, m.pending)  # arrivals up to the one that may complete the phase
            m.tx += step * s.expect_tx
            m.expect += step * s.expect_tx
            m.pending -= step
            m.clock = rel if m.clock is None else np.maximum(m.clock, rel)
            left -= step
            m.version += 1
            self._check_complete(m)
        if m.phase - phase0 > 1:
            msg = (f"hazard: the arrive at {_line(s.span)} by {self.who(ts)} completes {m.phase - phase0} phases "
                   f"of mbarrier {self.bar_label(m)} (count {m.count}): every executing thread arrives once "
                   f"(PTX ISA 9.0 "
                   f"§9.7.13.15.11) — guard it (`if tx == 0: arrive ...`) or give the barrier a count of the arriving "
                   f"threads")
            self.hb.async_hazard("mbarrier-arrivals", msg, s.span, m.init[2] if m.init else None, m.buf.name,
                                 (int(ts[0]), int(ts[-1])))

    def _wait(self, s: ir.MbarWait, tids: np.ndarray) -> None:
        m = self._bar(s.bar, s.span)
        ts = np.asarray(tids, np.int64).reshape(-1)
        if not ts.size or not self._usable(m, ts, s.span, "waits on"):
            return
        # the wait needs the current phase: once its arrivals are in, land the barrier's copies until it completes
        # (before that, nothing makes them land: they stay in flight, as late as legal)
        while (m.phase & 1) == s.parity:
            if m.commits and m.pending > 0:  # (tcgen05.commits complete their copies, then arrive)
                self._land_commit(m, m.commits.popleft())
            elif m.copies and m.pending == 0:
                self._land_g2s(m, m.copies.popleft(), by=s.span)
            else:
                break
        c = m.phase
        if c == 0 and s.parity == 1 and (m.commits or m.copies or m.expect > 0):
            self._fresh_parity(m, s, ts)
        # the phase each thread's wait names: the first one of this parity it has not seen complete
        q = m.seen[ts] + ((m.seen[ts] & 1) != s.parity)
        old = q <= c - 2
        if old.any():
            t = int(ts[np.argmax(old)])
            self.hb.async_hazard("mbarrier-parity", f"hazard: the wait on mbarrier {self.bar_label(m)} phase "
                                 f"{s.parity} at "
                                 f"{_line(s.span)} names phase {int(q[np.argmax(old)])} for {self.who(t)}, two or more "
                                 f"phases old (the barrier completed {c}): `try_wait.parity` is defined only for the "
                                 f"current and the immediately preceding phase (PTX ISA 9.0 §9.7.13.15.16) — here "
                                 f"it waits for phase {c if (c & 1) == s.parity else c - 1}", s.span, m.arrive_span,
                                 m.buf.name, (t, t))
        if (c & 1) == s.parity:
            if not self.suspendable:
                raise LaunchError(f"the wait on mbarrier {self.bar_label(m)} phase {s.parity} cannot pass when "
                                  f"{self.who(ts)} reach it in program order ({self.missing(m)}), and the "
                                  f"simulator suspends threads only at top-level statements (a wait in a loop "
                                  f"or a sequence runs in program order)", s.span,
                                  hint="arrive (and issue the copies) before this wait in program order")
            self.blocked.append((ts, s))
            self.hb.event("wait.blocked", ts, s.span, barrier=m.buf.name, phase=c)
            return
        if c > 0:
            self.hb.acquire(ts, m.done[c - 1], s.span)
            m.waits.setdefault(c - 1, []).append((ts.copy(), self.hb.G, s.span))
            if m.remote_landed:  # (copies of other CTAs whose phase this wait observed)
                left = []
                for cc in m.remote_landed:
                    if cc.phase <= c - 1:
                        cc.observed = self.hb.G
                    else:
                        left.append(cc)
                m.remote_landed = left
        m.seen[ts] = np.maximum(m.seen[ts], c)
        self.hb.event("wait", ts, s.span, barrier=m.buf.name, phase=c - 1)

    def _fresh_parity(self, m: _Mbar, s: ir.MbarWait, ts: np.ndarray) -> None:
        """A ``wait BAR phase 1`` on a barrier that has completed no phase yet, while copies (TMA bytes, or a
        tcgen05.commit's cps) are to complete its phase 0: ``try_wait.parity 1`` returns at once (the phase before
        phase 0 counts as complete, PTX ISA 9.0 §9.7.13.15.16), so the wait observes nothing of them."""
        what = "the tcgen05.commit's arrive completes" if m.commits else "the copies' bytes complete"
        name = self.bar_label(m)
        self.hb.async_hazard("mbarrier-parity", f"hazard: the wait at {_line(s.span)} on mbarrier {name} phase 1 "
                             f"returned at once: {m.buf.name} had completed no phase yet, and `try_wait.parity 1` "
                             f"passes on a fresh barrier (PTX ISA 9.0 §9.7.13.15.16); {what} phase 0: "
                             f"`wait {m.buf.name} phase 0`", s.span, m.arrive_span, m.buf.name,
                             (int(ts[0]), int(ts[0])))

    def missing(self, m: _Mbar) -> str:
        """What keeps the current phase of ``m`` from completing."""
        out = []
        if m.pending > 0:
            out.append(f"{m.pending} of {m.count} arrival{'s' if m.count != 1 else ''} missing")
        if m.tx > 0:
            out.append(f"{m.tx} of {m.expect} expected bytes never arrive")
        elif m.tx < 0:
            out.append(f"{m.got} bytes arrived, {m.expect} expected")
        return "; ".join(out) or "nothing pending"

    # ------------------------------------------------------------------ TMA
    def _tma(self, s: ir.TmaCopy, tids: np.ndarray, env: dict) -> None:
        sim, tm = self.sim, s.tmap
        if tm.buf.scope != "global" or s.smem.scope != "shared":
            raise LaunchError(f"a TMA copy moves a box between global and shared memory, not between {tm.buf.name} "
                              f"and {s.smem.name}", s.span)
        if len(s.coords) != tm.rank:
            raise LaunchError(f"the TMA copy has {len(s.coords)} coordinates for a rank-{tm.rank} tensor map",
                              s.span)
        ts = np.asarray(tids, np.int64).reshape(-1)
        cs = [np.broadcast_to(np.asarray(sim.eval_expr(c, env, s.span, ts), np.int64), ts.shape) for c in s.coords]
        eb, gbuf = tm.elem_bytes, tm.buf
        for j, t in enumerate(ts.tolist()):
            coords = [int(c[j]) for c in cs]
            gbyte, inb, sbyte = tma_box(tm, coords, s.smem_offset)
            if s.direction == "s2g":  # (a store writes on to the row's next 16-byte boundary: tma_s2g_written)
                wr = tma_s2g_written(tm, coords, inb)
                if wr is not inb and wr.any() and int(gbyte[wr].max()) + eb > gbuf.nbytes:
                    raise LaunchError(f"the TMA store writes past the end of {gbuf.name} (bytes up to "
                                      f"{int(gbyte[wr].max()) + eb} of {gbuf.nbytes}): the TMA unit writes a row on "
                                      f"to the next 16-byte boundary past the tensor's {tm.dims[0]} elements "
                                      f"(measured on the H200)", s.span)
                inb = wr
            if inb.any() and (int(gbyte[inb].min()) < 0 or int(gbyte[inb].max()) + eb > gbuf.nbytes):
                raise LaunchError(f"the TMA copy's in-bounds elements leave {gbuf.name} (bytes "
                                  f"{int(gbyte[inb].min())}..{int(gbyte[inb].max()) + eb} of {gbuf.nbytes}): the "
                                  f"tensor map {tm.name} does not describe the buffer", s.span)
            if sbyte.size and (int(sbyte.min()) < 0 or int(sbyte.max()) + eb > s.smem.nbytes):
                raise LaunchError(f"the TMA box ({sbyte.size * eb} bytes from byte {s.smem_offset}) does not fit "
                                  f"in {s.smem.name} ({s.smem.nbytes} bytes)", s.span)
            if s.direction == "g2s":
                self._issue_g2s(s, t, gbyte, inb, sbyte)
            else:
                self._issue_s2g(s, t, gbyte, inb, sbyte)
            sim.lanes += sbyte.size

    def _issue_g2s(self, s: ir.TmaCopy, t: int, gbyte, inb, sbyte) -> None:
        hb, tm, eb = self.hb, s.tmap, s.tmap.elem_bytes
        if s.mbar is None:
            raise LaunchError("a TMA load needs an mbarrier (`mbar=`) to complete on", s.span)
        data = tma_g2s_data(tm, inb, self.sim.mem[tm.buf.name][_bytes_at(gbyte[inb], eb)])
        ini = np.ones(sbyte.size, bool)
        if inb.any():
            if hb.tracks(tm.buf):
                ini[inb] = np.asarray(hb.read(tm.buf, gbyte[inb], t, s.span, eb)).reshape(-1)
        if s.cta_mask is None:
            self._deliver(s, t, self, sbyte, eb, data, ini, tm.box_bytes, "TMA copy", "tma")
            return
        # multicast (PTX ISA 9.0 §9.7.9.25.5.2): one issue, the box at the same offset of every masked CTA's
        # shared memory and complete-tx of the whole box on each one's mbarrier at the same offset
        mask = int(s.cta_mask)
        if mask <= 0 or mask >> self.C:
            top = mask.bit_length() - 1
            raise LaunchError(f"cta_mask {mask:#b} names rank {top}, cluster has {self.C} CTA"
                              f"{'s' if self.C != 1 else ''} (PTX ISA 9.0 §9.7.9.25.5.2)" if mask > 0 else
                              f"cta_mask {mask} names no CTA (PTX ISA 9.0 §9.7.9.25.5.2)", s.span)
        first = None
        for r in range(self.C):
            if mask >> r & 1:
                info = self._deliver(s, t, self.cluster[r], sbyte, eb, data, ini, tm.box_bytes, "TMA multicast",
                                     "multicast", mask, emit=False)
                first = info if first is None else first
        # one issue, one event (its barrier's phase: the lowest masked rank's); the landings are per receiving CTA
        assert first is not None
        self.hb.event("tma.issue", np.array([t]), s.span, **first)

    def _deliver(self, s: ir.TmaCopy | ir.BulkCopy, t: int, dst: AsyncModel, off: np.ndarray, nb: int,
                 data: np.ndarray, ini: np.ndarray, tx: int, what: str, kind: str, mask: int | None = None,
                 emit: bool = True) -> dict:
        """A copy issued by thread ``t`` of this CTA that lands in CTA ``dst`` (this one, or another of the cluster:
        a multicast or a dsmem copy): its ``nb``-byte items at byte offsets ``off`` of the destination buffer are
        written at the issue (checked against earlier accesses there) and in flight until they land, when a wait on
        ``dst``'s mbarrier needs the phase they complete (``tx`` bytes of it).  The issue's timeline event (its
        ``info``, returned) is recorded here unless ``emit`` is False (a multicast: one event for all its CTAs)."""
        buf = s.smem if isinstance(s, ir.TmaCopy) else s.dst
        assert s.mbar is not None  # (a TMA load without one is refused by the caller)
        m = dst._bar(s.mbar, s.span)
        if dst is not self:  # another CTA's barrier: its initialisation must be ordered before the issue
            self._remote_usable(m, dst, t, s.span, what)
        view = dst.hb if dst is self or self.C == 1 else dst.hb.issued_by(self.rank)
        if self.C > 1:
            view.kind = kind
        base = dst.hb if self.C == 1 else dst.hb.base
        base.issuing = f"the {what} (mbarrier {dst.bar_label(m)})"  # (a race of this write is the copy's)
        try:
            view.write(buf, off, t, s.span, ini if not np.all(ini) else True, nbytes=nb)
        finally:
            base.issuing = None
            if self.C > 1:
                view.kind = "store"
        k = m.phase  # (the phase it completes if it lands before the next one)
        writes = f"the {what} (mbarrier {dst.bar_label(m)}) writes" if dst is self else \
            f"{self.who(t)}'s {what} (mbarrier {dst.bar_label(m)}) writes"
        op = self.hb.async_op(writes, s.span, f"its mbarrier {dst.bar_label(m)} phase {k} completed (`wait "
                                              f"{m.buf.name} phase {k & 1}` observes it, PTX ISA 9.0 §9.7.13.15)")
        dst.hb.in_flight(buf, off, nb, op, "dst")
        c = _Copy("g2s" if kind != "dsmem" else "dsmem", s.span, op, np.array([t]), buf, off, nb, data,
                  bar=m.buf.name, tx=tx)
        c.issuer, c.dest, c.what = self.rank, dst.rank, what
        if dst is not self:
            self.remote.append(c)
        dst.copies.append(c)
        m.copies.append(c)
        m.issued += 1
        m.issued_bytes += tx
        m.copy_span, m.copy_what = s.span, what
        m.version += 1
        info = {"barrier": m.buf.name, "phase": k, "bytes": tx}
        if isinstance(s, ir.TmaCopy):
            info["direction"] = "g2s"
        if mask is not None:
            info["cta_mask"] = mask
        if kind == "dsmem":
            info["dst_cta"] = dst.rank
        if emit:
            self.hb.event("tma.issue" if kind != "dsmem" else "dsmem", np.array([t]), s.span, **info)
        return info

    def _remote_usable(self, m: _Mbar, dst: AsyncModel, t: int, span: Span | None, what: str) -> None:
        """A copy of thread ``t`` completes on mbarrier ``m`` of CTA ``dst``: that barrier must be initialised and
        its initialisation ordered before the issue (``fence.mbarrier_init.release.cluster`` and a
        ``cluster_sync``, PTX ISA 9.0 §9.7.13.4)."""
        if m.init is None:
            dst._usable(m, np.array([t]), span, "completes bytes on")  # (reports the uninitialised barrier)
            return
        w, stamp, at = m.init
        base = self.hb.base
        if not bool(base.ordered(np.array([t + self.off]), w + dst.off, stamp)[0]):
            self.hb.async_hazard("mbarrier-init", f"hazard: {self.who(t)}'s {what} at {_line(span)} completes bytes "
                                 f"on mbarrier {dst.bar_label(m)} before its initialisation by {dst.who(w)} at "
                                 f"{_line(at)} is ordered before it — end the mbarrier prologue with `cluster_sync` "
                                 f"(`fence.mbarrier_init.release.cluster`, PTX ISA 9.0 §9.7.13.4)", span, at,
                                 m.buf.name, (t, -1))

    # ------------------------------------------------------------------ dsmem
    def _bulk(self, s: ir.BulkCopy, tids: np.ndarray, env: dict) -> None:
        """``cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes`` (PTX ISA 9.0 §9.7.9.25.4.1):
        each executing thread copies ``nbytes`` of this CTA's ``src`` (read by the async proxy: the writers' fence
        rule of a TMA store applies) into ``dst`` of the CTA of rank ``remote`` (evaluated per thread), completing
        ``nbytes`` on that CTA's ``mbar``; the source is in flight until the copy lands."""
        sim, hb, nb = self.sim, self.hb, s.nbytes
        ts = np.asarray(tids, np.int64).reshape(-1)
        rem = np.broadcast_to(np.asarray(sim.eval_expr(s.remote, env, s.span, ts), np.int64), ts.shape)
        for buf, at in ((s.src, s.src_offset), (s.dst, s.dst_offset)):
            if buf.scope != "shared":
                raise LaunchError(f"a dsmem copy moves shared memory to shared memory, not {buf.scope} {buf.name} "
                                  f"(PTX ISA 9.0 §9.7.9.25.4.1)", s.span)
            if nb <= 0 or nb % 16 or at % 16 or at < 0 or at + nb > buf.nbytes:
                raise LaunchError(f"the dsmem copy of {nb} bytes at byte {at} of {buf.name} ({buf.nbytes} bytes) "
                                  f"is not a 16-byte aligned multiple of 16 bytes inside it (PTX ISA 9.0 "
                                  f"§9.7.9.25.4.1)", s.span)
        us, ud = hb.unit(s.src), hb.unit(s.dst)
        soff = np.arange(s.src_offset, s.src_offset + nb, us, dtype=np.int64)
        doff = np.arange(s.dst_offset, s.dst_offset + nb, ud, dtype=np.int64)
        for j, t in enumerate(ts.tolist()):
            d = int(rem[j])
            if not 0 <= d < self.C:
                raise LaunchError(f"the dsmem copy's remote_cta_id is {d} for {self.who(t)}: the cluster has ranks "
                                  f"0..{self.C - 1}", s.span)
            if d == self.rank:
                raise LaunchError(f"the dsmem copy's remote_cta_id is {d} for {self.who(t)}, its own CTA: a dsmem "
                                  f"copy writes another CTA's shared memory (PTX ISA 9.0 §9.7.9.25.4.1)", s.span)
            hb.proxy_read(s.src, soff, us, s.span, "the dsmem copy", issuer=t)
            ini = np.asarray(hb.read(s.src, soff, t, s.span, us)).reshape(-1)
            ib = np.asarray(np.repeat(ini, us).reshape(-1, ud).all(1))
            data = np.array(sim.mem[s.src.name][s.src_offset:s.src_offset + nb]).reshape(-1, ud)
            before = len(self.remote)
            self._deliver(s, t, self.cluster[d], doff, ud, data, ib, nb, "dsmem copy", "dsmem")
            c = self.remote[before]
            c.src, c.src_off, c.src_nbytes, c.src_hb = s.src, soff, us, hb
            c.src_op = hb.async_op(f"{self.who(t)}'s dsmem copy reads", s.span,
                                   f"it completed on mbarrier {s.mbar.name} of CTA {d}, which only CTA {d}'s waiters "
                                   f"observe: order the write after their wait with `cluster_sync` (PTX ISA 9.0 "
                                   f"§9.7.9.25.4.1)")
            hb.in_flight(s.src, soff, us, c.src_op, "src")
            sim.lanes += nb // ud

    def _land_g2s(self, m: _Mbar, c: _Copy, final: bool = False, by: Span | None = None) -> None:
        """A TMA load (or a dsmem copy) lands: its bytes, then complete-tx of the whole box on its barrier (PTX ISA
        9.0 §9.7.9.25.5.2).  A tx-count below zero is reported once the phase's arrivals are all in, or at the
        kernel's end (``final``: nothing can announce the bytes any more).  ``by``: the wait that needed the phase.

        A dsmem copy's source is free in the simulator's schedule, but its read completes on this CTA's barrier
        only (PTX ISA 9.0 §9.7.9.25.4.1): a write of it by the issuing CTA (or any thread) must be ordered after the
        phase's waiters (:meth:`tilemagic.sim.hb.Tracker.read_observed`; a ``cluster_sync`` after the wait)."""
        self.sim.mem[c.dst.name][_bytes_at(c.dst_off, c.nbytes)] = c.data
        col = self.hb.agents[m.buf.name]
        self.hb.land(c.dst, c.dst_off, c.nbytes, "dst", c.op, who=col, span=c.span)
        if c.src_hb is not None and c.src is not None and c.src_off is not None:  # (a dsmem copy's source is free)
            c.src_hb.land(c.src, c.src_off, c.src_nbytes, "src", c.src_op)
            seen = f"CTA {self.rank}'s wait at {_line(by)}" if by is not None else \
                f"the waiters on mbarrier {self.bar_label(m)}"
            c.src_hb.read_observed(c.src, c.src_off, c.src_nbytes, col, c.span,
                                   f"{self.cluster[c.issuer].who(int(c.threads[0]))}'s {c.what} ({_line(c.span)}) "
                                   f"may still be reading: its completion is observed only by {seen} (it completes "
                                   f"on mbarrier {self.bar_label(m)} alone, PTX ISA 9.0 §9.7.9.25.4.1); order the "
                                   f"write after it with `cluster_sync`")
        c.landed, c.data = np.ones(1, bool), c.data[:0]
        c.phase = m.phase
        # (the event takes effect in this, the receiving, CTA; its threads are the issuer's, cluster-linear)
        info = {"barrier": m.buf.name, "phase": m.phase, "bytes": c.tx}
        what = "tma.complete" if c.kind != "dsmem" else "dsmem.complete"
        if c.issuer == c.dest:
            self.hb.event(what, c.threads, c.span, **info)
        else:
            m.remote_landed.append(c)
            self.hb.base.event(what, c.threads + c.issuer * self.n, c.span, cta=self.rank, **info)
        m.tx -= c.tx
        m.got += c.tx
        m.version += 1
        if m.tx < 0 and m.pending == 0 and not final:
            self._over(m, c.span, c.what or "TMA copy")
        self._check_complete(m)

    def _over(self, m: _Mbar, span: Span | None, what: str = "TMA copy") -> None:
        """Report the current phase's tx-count below zero (once); ``what`` the kind of copy at ``span`` (``"TMA
        copy"``, ``"TMA multicast"``, ``"dsmem copy"``)."""
        if m.phase not in m.over:
            m.over.add(m.phase)
            kinds = {"TMA copy": "TMA copies", "TMA multicast": "TMA multicasts", "dsmem copy": "dsmem copies"}
            self.hb.async_hazard("mbarrier-tx", f"hazard: mbarrier {self.bar_label(m)} phase {m.phase}: {m.got} bytes "
                                 f"arrived, {m.expect} expected — the {kinds.get(what, what)} at {_line(span)} "
                                 f"complete more "
                                 f"bytes than the arrivals' `expect_tx` announced (at {_line(m.arrive_span)}; "
                                 f"{m.issued} cop{'ies' if m.issued != 1 else 'y'} of {m.issued_bytes} bytes in all "
                                 f"were issued on it): the tx-count goes below zero and the phase cannot complete "
                                 f"(PTX ISA 9.0 §9.7.13.15.1)", span, m.arrive_span, m.buf.name)

    def _issue_s2g(self, s: ir.TmaCopy, t: int, gbyte, inb, sbyte) -> None:
        hb, tm, eb = self.hb, s.tmap, s.tmap.elem_bytes
        src_off, dst_off = sbyte[inb], gbyte[inb]
        data = self.sim.mem[s.smem.name][_bytes_at(src_off, eb)] if src_off.size else np.zeros((0, eb), np.uint8)
        ini: np.ndarray | bool = True
        if src_off.size:
            hb.proxy_read(s.smem, src_off, eb, s.span, "the TMA store", issuer=t)
            ini = np.asarray(hb.read(s.smem, src_off, t, s.span, eb)).reshape(-1)
            if s.reduce:  # (a reduction reads its global destination: the uninitialised-read report applies)
                ini = ini & np.asarray(hb.read(tm.buf, dst_off, t, s.span, eb, reduce=s.reduce)).reshape(-1)
            # (a reduction is an atomic read-modify-write per element: two of the same operation do not race)
            hb.write(tm.buf, dst_off, t, s.span, ini if not np.all(ini) else True, nbytes=eb, reduce=s.reduce)
        op_r = hb.async_op("the TMA store reads", s.span, "its thread's covering `bulk_wait_group ... read` "
                                                          "returned (PTX ISA 9.0 §9.7.9.25.6)")
        op_w = hb.async_op("the TMA store writes", s.span, "its thread's covering `bulk_wait_group` returned "
                                                           "(PTX ISA 9.0 §9.7.9.25.6)", reduce=s.reduce)
        hb.in_flight(s.smem, src_off, eb, op_r, "src")
        hb.in_flight(tm.buf, dst_off, eb, op_w, "dst")
        c = _Copy("s2g", s.span, op_w, np.full(dst_off.size, t, np.int64), tm.buf, dst_off, eb, data,
                  src=s.smem, src_off=src_off, src_nbytes=eb, src_op=op_r, landed=np.zeros(1, bool),
                  reduce=s.reduce, dtype=tm.buf.dtype)
        k = len(self.copies)
        self.copies.append(c)
        self.bunc[t].append(k)
        hb.event("tma.issue", np.array([t]), s.span, bytes=tm.box_bytes, direction="s2g")

    def _land_s2g(self, k: int, read_only: bool, span: Span | None) -> None:
        """An S2G copy's source read is done (``read_only``), or the whole copy: its global bytes land, the issuing
        thread's writes at its wait at ``span`` (None: the kernel's end)."""
        c = self.copies[k]
        if not c.read_done:
            c.read_done = True
            if c.src is not None and c.src_off is not None:
                self.hb.land(c.src, c.src_off, c.src_nbytes, "src", c.src_op)
            self.hb.event("tma.read", c.threads[:1], c.span)
        if read_only or c.landed.all():
            return
        c.landed[:] = True
        at = _bytes_at(c.dst_off, c.nbytes)
        mem = self.sim.mem[c.dst.name]
        mem[at] = c.data if c.reduce is None else tma_reduce(c.reduce, c.dtype, mem[at], c.data)
        c.data = c.data[:0]
        self.hb.land(c.dst, c.dst_off, c.nbytes, "dst", c.op, who=c.threads, span=span, reduce=c.reduce)
        self.hb.event("tma.complete", c.threads[:1], c.span, direction="s2g")

    # ------------------------------------------------------------------ tcgen05.cp and tcgen05.commit
    def _tcgen_cp(self, s: ir.TcgenCp, tids: np.ndarray) -> None:
        """``tcgen05.cp`` by every thread of ``tids`` (PTX ISA 9.0 §9.7.16.9.1): the descriptor built from the shared
        window (:func:`tilemagic.ir.nodes.shared_bases`) is decoded as the hardware reads it
        (:func:`tilemagic.arch.smem_desc.decode`), its chunks walked by
        :func:`tilemagic.layout.smem_matrix.cp_source_addresses` and mapped back to ``s.smem``; the TMEM cells are
        :func:`tilemagic.arch.tcgen05.cp_cells` at the address plus ``row``/``col``.  The source is read through the
        async proxy (the writers' ``fence.proxy.async``, :meth:`~tilemagic.sim.hb.Tracker.proxy_read`) and checked
        against earlier writes at the issue, the TMEM write against earlier accesses; both are in flight until a
        commit of the issuing thread completes the copy (:meth:`_land_commit`)."""
        sim, hb = self.sim, self.hb
        if s.cta_group != 1:
            raise LaunchError(f"tcgen05.cp.cta_group::{s.cta_group} is not simulated: a CTA pair's TMEM (cta_group::2) "
                              f"needs TMEM in a cluster kernel, which the simulator does not model yet", s.span)
        if s.smem.scope != "shared":
            raise LaunchError(f"tcgen05.cp reads shared memory through its descriptor, not {s.smem.scope} "
                              f"{s.smem.name} (PTX ISA 9.0 §9.7.16.9.1)", s.span)
        shape = tc.CP_SHAPES.get(s.key)
        if shape is None:
            raise LaunchError(f"tcgen05.cp shape {s.key!r} is not one of {', '.join(tc.CP_SHAPES)} (PTX ISA 9.0 "
                              f"§9.7.16.9.1)", s.span)
        if self._bases is None:
            self._bases = ir.shared_bases(sim.k)
        bases = self._bases
        desc = smem_desc.decode(s.descriptor(bases[s.smem.name]))
        try:
            addr = cp_source_addresses(desc, shape.rows, shape.chunks)
        except ValueError as e:
            raise LaunchError(f"tcgen05.cp at {_line(s.span)}: {e}", s.span) from None
        base = bases[s.smem.name]
        rel = addr - base
        bad = (rel < 0) | (rel + 16 > s.smem.nbytes)
        if bad.any():
            a = int(addr.reshape(-1)[int(np.argmax(bad.reshape(-1)))])
            where = "past the end" if a >= base else "before the start"
            inside = [b.name for b in sim.k.shared if bases[b.name] <= a < bases[b.name] + b.nbytes]
            other = f" (bytes of {inside[0]})" if inside else " (outside every shared buffer)"
            raise LaunchError(f"tcgen05.cp at {_line(s.span)} reads shared bytes {a - base}..{a - base + 15}, {where} "
                              f"of {s.smem.name} ({s.smem.nbytes} bytes){other}: the descriptor (start "
                              f"{desc.start}, LBO {desc.lbo}, SBO {desc.sbo}, layout {desc.layout_name}) walks out "
                              f"of the buffer (PTX ISA 9.0 §9.7.16.4.1)", s.span)
        ts = np.asarray(tids, np.int64).reshape(-1)
        taddr = sim._taddr(s.addr, ts, s.span)
        lanes, cols = tc.cp_cells(s.key, ((taddr >> 16) & 0xFFFF) + s.row, (taddr & 0xFFFF) + s.col)
        sim.tmem.check_cp(lanes, cols, int(ts[0]), s.span)
        cells = (lanes[:, :, None, None] * tc.TMEM_COLS + cols[None, None, :, :])
        us = hb.unit(s.smem)
        off = (rel[:, :, None] + np.arange(0, 16, us, dtype=np.int64)).reshape(-1)  # (the units read)
        for t in ts.tolist():
            hb.proxy_read(s.smem, off, us, s.span, "the tcgen05.cp", issuer=t, why=CP_PROXY_WHY)
            ini = np.asarray(hb.read(s.smem, off, t, s.span, us)).reshape(-1)
            words: np.ndarray  # (rows, chunks, 4): the init bit of each 32-bit word read
            if ini.all():
                words = np.ones(rel.shape + (4,), bool)
            else:
                byte = np.repeat(ini, us).reshape(rel.shape + (16,))
                words = np.asarray(byte.reshape(rel.shape + (4, 4)).all(-1))
            init = np.broadcast_to(words[:, None], cells.shape)
            hb.tmem_async_write(cells, t, s.span, "tcgen05.cp")  # (cells a tcgen05.st has in flight: write after write)
            hb.issuing = "the tcgen05.cp"  # (a race of this write is the copy's: two copies in flight on one cell)
            try:
                hb.write(None, cells.reshape(-1) * 4, np.full(cells.size, t, np.int64), s.span,
                         True if init.all() else init.reshape(-1), nbytes=4)
            finally:
                hb.issuing = None
            op = hb.async_op("the tcgen05.cp writes", s.span, "the commit of its thread arrived and a wait observed "
                             "it (PTX ISA 9.0 §9.7.16.6.1)")
            src_op = hb.async_op("the tcgen05.cp reads", s.span, "the commit of its thread arrived and a wait "
                                 "observed it (PTX ISA 9.0 §9.7.16.6.1)")
            hb.in_flight(None, cells.reshape(-1) * 4, 4, op, "dst")
            hb.in_flight(s.smem, off, us, src_op, "src")
            rec = CpWrite(s.span.line if s.span else 0, s.key, t, np.unique(lanes), np.unique(cols), s.span)
            hb.report.cp_writes.append(rec)
            self.tc_seq += 1
            self.tc_pending.setdefault(t, []).append(_TcCp(s, t, rel, lanes, cols, cells, init, op, src_op, rec,
                                                           self.tc_seq))
            hb.event("tcgen05.cp", np.array([t]), s.span, key=s.key, lane0=int(lanes.min()),
                     lanes=int(np.unique(lanes).size), col0=int(cols.min()), cols=int(cols.size),
                     bytes=shape.rows * shape.bits // 8)
            sim.lanes += shape.rows * shape.chunks

    def _tcgen_commit(self, s: ir.TcgenCommit, tids: np.ndarray) -> None:
        """``tcgen05.commit...mbarrier::arrive::one`` by every thread of ``tids`` (PTX ISA 9.0 §9.7.16.12.1): the
        thread's pending tcgen05.cp become one arrive-on (count 1) on ``s.bar``, made when they completed — as late
        as legal: when a wait on the barrier needs it (:meth:`_wait`), or at the kernel's end.  A commit with
        nothing pending arrives at once."""
        if s.cta_mask is not None:
            raise LaunchError("tcgen05.commit with cta_mask (.multicast::cluster) is not simulated: it arrives on the "
                              "mbarriers of other CTAs, and the simulator does not model TMEM in cluster kernels",
                              s.span)
        if s.cta_group != 1:
            raise LaunchError(f"tcgen05.commit.cta_group::{s.cta_group} is not simulated (TMEM of a CTA pair needs a "
                              f"cluster kernel, which the simulator does not model with TMEM yet)", s.span)
        m = self._bar(s.bar, s.span)
        ts = np.asarray(tids, np.int64).reshape(-1)
        if not ts.size or not self._usable(m, ts, s.span, "commits to"):
            return
        self.tc_seq += 1
        self.tc_commits.append((self.tc_seq, ts.copy(), s.span))
        for t in ts.tolist():
            cps = self.tc_pending.pop(t, [])
            rel = self.hb.release(np.array([t]))
            for cp in cps:
                cp.record.barrier = m.buf.name
            self.hb.event("tcgen05.commit", np.array([t]), s.span, barrier=m.buf.name, phase=m.phase,
                          copies=len(cps))
            cm = _Commit(s, t, cps, rel)
            if cps:
                m.commits.append(cm)
                m.version += 1
            else:
                self._land_commit(m, cm)

    def _uncommitted_hint(self, bar: str) -> str:
        """For a hang on ``bar``: the tcgen05.cp issued but not committed yet (a missing ``tcgen05.commit``)."""
        pending = sorted({(cp.s.span.line if cp.s.span else 0, t) for t, cps in self.tc_pending.items()
                          for cp in cps})
        if not pending:
            return ""
        lines = sorted({ln for ln, _ in pending})
        who = sorted({t for _, t in pending})
        at = ", ".join(f"L{ln}" for ln in lines)
        return (f"; the tcgen05.cp at {at} has no tcgen05.commit by its issuing thread ({self.who(np.asarray(who))}):"
                f" add `if tx == {who[0]}: tcgen05.commit {bar}` after it (PTX ISA 9.0 §9.7.16.12.1)")

    def _uncommitted_text(self, cp: _TcCp) -> tuple[str, str, Span | None]:
        """:func:`_commit_mistake` of a copy never committed, in this CTA."""
        return _commit_mistake(cp, self.tc_commits, self.who)

    def _land_commit(self, m: _Mbar, cm: _Commit) -> None:
        """A commit's copies complete, in issue order — each reads its source and writes TMEM (replicas included)
        — then its arrive-on (count 1) on ``m`` (PTX ISA 9.0 §9.7.16.12.1).  The TMEM cells' writer is the barrier's
        clock column (only the phase's waiters, and threads ordered after them, see them), and so is the end of
        the source read (:meth:`tilemagic.sim.hb.Tracker.read_observed`)."""
        hb, sim = self.hb, self.sim
        col = hb.agents[m.buf.name]
        for cp in cm.cps:
            s = cp.s
            data = sim.mem[s.smem.name][_bytes_at(cp.src.reshape(-1), 16)].reshape(cp.src.shape + (16,))
            words = np.ascontiguousarray(data).view(np.uint32).reshape(cp.src.shape + (4,))  # (little-endian)
            sim.tmem.cells[cp.lanes[:, :, None, None], cp.cols[None, None, :, :]] = words[:, None]  # (bits as read)
            sim.tmem.touched[cp.lanes[:, :, None, None], cp.cols[None, None, :, :]] = True
            flat = cp.cells.reshape(-1)
            hb.land(None, flat * 4, 4, "dst", cp.op, who=col, span=s.span, init=cp.init)
            us = hb.unit(s.smem)
            off = (cp.src[:, :, None] + np.arange(0, 16, us, dtype=np.int64)).reshape(-1)
            hb.land(s.smem, off, us, "src", cp.src_op)
            hb.read_observed(s.smem, off, us, col, s.span, f"the tcgen05.cp at {_line(s.span)} may still read (its "
                             f"completion is observed by a wait on mbarrier {self.bar_label(m)} only, PTX ISA 9.0 "
                             f"§9.7.16.6.1); wait for the commit's phase (`wait {m.buf.name} phase "
                             f"{m.phase & 1}`) before writing its source", reader=cp.thread)
            hb.cp_landed(flat, col, s.span)
            cp.record.landed, cp.record.phase = True, m.phase
            hb.event("tcgen05.cp.complete", np.array([cp.thread]), s.span, barrier=m.buf.name, phase=m.phase,
                     key=s.key)
        if m.pending <= 0:
            msg = (f"hazard: more arrivals on mbarrier {self.bar_label(m)} phase {m.phase} than its count {m.count}: "
                   f"the tcgen05.commit at {_line(cm.s.span)} arrives once more (PTX ISA 9.0 §9.7.13.15.1)")
            hb.async_hazard("mbarrier-arrivals", msg, cm.s.span, None, m.buf.name)
            return
        m.arrive_span = cm.s.span
        m.pending -= 1
        m.clock = cm.clock if m.clock is None else np.maximum(m.clock, cm.clock)
        m.version += 1
        hb.event("arrive", np.array([cm.thread]), cm.s.span, barrier=m.buf.name, phase=m.phase, bytes=0,
                 by="tcgen05.commit")
        self._check_complete(m)

    # ------------------------------------------------------------------ the scheduler's questions
    def take_blocked(self) -> list[tuple[np.ndarray, ir.MbarWait]]:
        out, self.blocked = self.blocked, []
        return out

    def version(self, bar: ir.Buffer) -> int:
        return self.bars[bar.name].version

    def hang_message(self, waits: list[tuple[np.ndarray, ir.MbarWait]], syncs: list[tuple[np.ndarray, Span | None]]
                     ) -> tuple[str, Span | None, Span | None, str, tuple[int, int]]:
        """The ``would hang: ...`` text of a run where no thread can go on: per blocked wait the barrier, the phase
        it waits for, what is missing (arrivals, bytes) and the waiting threads; then the threads held at a
        ``cta_sync`` by them.  Also the span, the other span, the barrier and a pair of threads."""
        parts, first = self.hang_parts(waits)
        for ts, at in syncs:
            parts.append(f"{threads_text(ts)} wait at the cta_sync at {_line(at)} for the others")
            if first is None:
                first = (at, None, "", (int(ts[0]), int(ts[0])))
        assert first is not None
        return "would hang: " + "; ".join(parts), *first

    def hang_parts(self, waits: list[tuple[np.ndarray, ir.MbarWait]]) -> tuple[list[str], tuple | None]:
        """:meth:`hang_message`'s text of each blocked wait of this CTA, and the first one's span, other span,
        barrier and threads (cluster-linear)."""
        parts: list[str] = []
        first = None
        for ts, w in waits:
            m = self.bars[w.bar.name]
            while m.copies and (m.phase & 1) == w.parity:  # (what the copies in flight would do to the count)
                self._land_g2s(m, m.copies.popleft(), final=True)
            c = m.phase
            done = f"; it completed {c} phase{'s' if c != 1 else ''}" if c else ""
            parts.append(f"mbarrier {self.bar_label(m)} phase {c} never completes: {self.missing(m)}{done} — "
                         f"{self.who(ts)} wait at {_line(w.span)} (`wait {m.buf.name} phase {w.parity}`)"
                         + self._uncommitted_hint(m.buf.name))
            if first is None:
                first = (w.span, m.arrive_span or m.copy_span or (m.init[2] if m.init else None), m.buf.name,
                         (int(ts[0]) + self.off, int(ts[0]) + self.off))
        return parts, first

    def finish(self) -> None:
        """The kernel's end: S2G copies still in flight write global memory (a kernel's global writes complete
        with it), TMA loads still in flight complete on their barriers (the bytes a barrier got past its
        expectation are reported), and copies never waited for are hazards."""
        for k, c in enumerate(self.copies):
            if c.kind in ("g2s", "dsmem") and not c.landed.all() and c.bar is not None:
                what = "TMA copy" if c.kind == "g2s" else "dsmem copy"
                self.hb.async_hazard("async-end", f"hazard: the {what} at {_line(c.span)} is never observed "
                                     f"complete (no `wait {c.bar} phase P` needed the phase it completes): nothing "
                                     f"may read its bytes", c.span, None, c.dst.name)
        for m in self.bars.values():
            while m.commits:  # (a commit's copies complete at the kernel's end at the latest)
                cm = m.commits.popleft()
                self.hb.async_hazard("async-end", f"hazard: the tcgen05.cp at {_line(cm.cps[0].s.span)} is never "
                                     f"observed complete (no `wait {m.buf.name} phase P` needed the phase its "
                                     f"tcgen05.commit at {_line(cm.s.span)} arrives on): nothing may read its TMEM "
                                     f"cells, and it may still write them after they are freed (PTX ISA 9.0 "
                                     f"§9.7.16.6.1)", cm.cps[0].s.span, cm.s.span, "TMEM", (cm.thread, cm.thread))
                self._land_commit(m, cm)
        for t, cps in sorted(self.tc_pending.items()):
            for cp in cps:
                why, fix, other = self._uncommitted_text(cp)
                self.hb.async_hazard("tcgen05-uncommitted", f"hazard: tcgen05.cp at {_line(cp.s.span)} was never "
                                     f"committed by its issuing thread ({self.who(t)}): {why}, so nothing says "
                                     f"when it completed (PTX ISA 9.0 §9.7.16.6.1, §9.7.16.12.1) and its TMEM "
                                     f"cells are never known to be written{fix}", cp.s.span, other, "TMEM", (t, t))
        self.tc_pending.clear()
        for m in self.bars.values():
            while m.copies:
                self._land_g2s(m, m.copies.popleft(), final=True)
            if m.tx < 0:
                self._over(m, m.copy_span, m.copy_what)
        for k, c in enumerate(self.copies):
            if c.kind == "s2g" and not c.landed.all():
                if not c.read_done:
                    self.hb.async_hazard("async-end", f"hazard: the TMA store at {_line(c.span)} is never waited for "
                                         f"(`bulk_commit_group` + `bulk_wait_group 0 read`): the kernel may end, "
                                         f"and its shared memory be reused, before the store read it (PTX ISA 9.0 "
                                         f"§9.7.9.25.6)", c.span, None, c.dst.name)
                self._land_s2g(k, False, None)
            elif c.kind == "cp.async" and not c.landed.all():
                left = c.threads[~c.landed]
                self.hb.async_hazard("async-end", f"hazard: the cp.async at {_line(c.span)} of {self.who(left)} "
                                     f"is never covered by a `wait_group` (PTX ISA 9.0 §9.7.9.25.3): its bytes may "
                                     f"land at any time, or after the kernel ends", c.span, None, c.dst.name)


def _line(span: Span | None) -> str:
    return f"L{span.line}" if span else "the kernel's prologue"


def _commit_mistake(cp: _TcCp, commits: list[tuple[int, np.ndarray, Span | None]], who
                    ) -> tuple[str, str, Span | None]:
    """Why ``cp`` was never committed, from the CTA's ``commits`` (:attr:`AsyncModel.tc_commits`; ``who`` names
    threads): the first commit after it by other threads only — a commit covers the tcgen05.cp *its own* thread
    issued before it (PTX ISA 9.0 §9.7.16.12.1) —, else the issuing thread's last commit before it, else none.  The
    reason, the fix (`` — ...``, or empty) and the commit's span (None: no commit)."""
    t = cp.thread
    for seq, ts, span in commits:
        if seq > cp.seq and not bool(np.isin(t, ts)):
            return (f"the tcgen05.commit at {_line(span)} is {who(ts)}'s, and a commit covers only the tcgen05.cp "
                    f"its own thread issued before it", f" — commit from {who(t)}, under the copy's guard", span)
    before = [span for seq, ts, span in commits if seq < cp.seq and bool(np.isin(t, ts))]
    if before:
        return (f"its tcgen05.commit at {_line(before[-1])} comes before it, and a commit covers only the copies "
                f"issued before it", " — commit after the copy", before[-1])
    return "no tcgen05.commit follows it", "", None


def exit_check(models: list[AsyncModel], end: Span | None) -> None:
    """The cluster's exit rule (PTX ISA 9.0 §9.7.13.3; CUDA C++ Programming Guide, "Distributed Shared Memory"): a
    CTA must not exit while another CTA may still access its shared memory.  For every copy one CTA issued into
    another's shared memory (a TMA multicast, a dsmem copy): the receiving CTA must have observed its completion (a
    wait for the phase it completes), and the issuing CTA must be ordered after that observation — a
    ``cluster_sync`` after it — else a hazard at the copy's line and the kernel's end (``end``)."""
    base = models[0].hb.base
    for mod in models:
        for c in mod.remote:
            s, d = c.issuer, c.dest
            buf = c.dst.name
            line = f"line {c.span.line}" if c.span is not None else "the kernel's prologue"
            if c.observed is None:
                msg = (f"hazard: CTA {d} may exit while CTA {s}'s {c.what} ({line}) still writes its shared "
                       f"memory {buf}: end the kernel with cluster_sync (after a wait that observes the copy; a CTA "
                       f"must not exit while another may access its shared memory, PTX ISA 9.0 §9.7.13.3)")
            elif not any(g > c.observed for g in base.cluster_syncs):
                msg = (f"hazard: CTA {s} may exit while its {c.what} ({line}) into CTA {d}'s shared "
                       f"memory {buf} is not known to be complete to it (only CTA {d}'s wait observed it): end the "
                       f"kernel with cluster_sync (a CTA must not exit while its copies into another CTA's shared "
                       f"memory may be in flight, PTX ISA 9.0 §9.7.13.3)")
            else:
                continue
            base.async_hazard("cluster-exit", msg, c.span, end, cta_name(buf, s if c.observed is not None else d,
                                                                           base.cluster),
                              (s * base.cta + int(c.threads[0]), d * base.cta))
