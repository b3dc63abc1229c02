"""Happens-before tracking for the CPU simulator: races, in-flight tcgen05 registers, uninitialised data.

The simulator runs every statement for all active threads at once, in program order — one legal
schedule of a correctly synchronised kernel.  A kernel that is *not* correctly synchronised still
gives the right numbers under that schedule, so :class:`Tracker` models *when* data is visible,
independently of the order the executor happened to pick:

* **Vector clocks.**  ``known[t, w]`` is the index of the latest synchronising event of thread ``w``
  that happens before thread ``t``'s current point (0: none).  Events get increasing indices
  1, 2, …; an access is stamped with the index ``G`` of the last event so far, so an access of
  ``w`` with stamp ``s`` is ordered before the current point of ``t`` iff ``w == t`` (program order)
  or ``known[t, w] > s`` (some event of ``w`` after the access reached ``t``).  ``cta_sync``
  (``bar.sync 0``, PTX ISA 9.0 §9.7.13.1; with TMEM the lowering fences it with
  ``tcgen05.fence::before/after_thread_sync``, §9.7.16.9) joins the clocks of its threads.  A
  pairwise edge (an mbarrier arrive → wait, a commit group) only has to call :meth:`Tracker._join`
  with its two sides.
* **Shadow memory, one entry per access unit.**  A buffer's *unit* is the gcd of every granule the
  kernel accesses it in (an element, a ``VecMove``'s vector, the 32-bit words or 16-bit halves of
  ``ldmatrix``/``stmatrix``, PTX ISA 9.0 §9.7.9.26; the 32-bit register words of ``tcgen05.ld``/``st``,
  §9.7.16.8.3-4), computed once from the kernel (:meth:`Tracker.unit`, :func:`_units`): every access
  covers whole units, so a unit stands for each of its bytes; a tile moved only by 16-byte vectors
  has one entry per vector, TMEM one per 32-bit cell (``lane * 512 + col``).  For every unit of shared memory, of
  TMEM and of each global buffer the kernel writes: the last writer (thread, access id) and the last
  reader (thread, access id); an access id names the statement and the stamp.  A unit read by two
  threads that are not ordered goes to a *read-shared* state that keeps the latest stamp; a write is
  ordered after it only when the writer knows every thread's clock past that stamp (exact for
  ``cta_sync``; conservative for pairwise edges).  Global buffers the kernel never writes have no
  shadow (nothing can race on them and they are initialised: :meth:`Tracker.tracks`, and the caller
  skips them); a global buffer that is written but never read keeps no reader side.  Sizes:
  shared/TMEM 13 bytes per unit, global 7 bytes (writer + init) or 13 (read and written).
* **Registers** (per thread, so never raced): an init bit and an in-flight state per unit: the
  destination of a ``tcgen05.ld`` until that thread's ``tcgen05.wait::ld``, the source of a
  ``tcgen05.st`` until ``tcgen05.wait::st`` (PTX ISA 9.0 §9.7.16.6, §9.7.16.8.5).  TMEM cells a
  ``tcgen05.st`` writes stay in flight for every reader, and for a ``tcgen05.cp`` writing them (write after write),
  until the issuing thread's ``wait::st``.
* **Poison.**  Shared memory, registers and TMEM start uninitialised (the simulator fills them with
  :data:`GARBAGE`, so a check against zeros cannot pass by luck); every unit carries an init bit,
  a store copies the init bits of what it stored (a copy that moves bytes as they are, byte by byte where a
  vector is partly initialised: :meth:`Tracker.init_bytes`; a buffer such copies write is kept at least as
  finely as its sources, :func:`kernel_accesses`), a read of an uninitialised unit is a hazard,
  and the global bytes left uninitialised at the end are :attr:`HBReport.poison`.

Broadcast stores: when several threads execute the *same* store statement and write *identical*
values to the same place (the elected lane of every warp storing one tile, as TVM's fallback does),
the units are not reported.  In the PTX memory model (PTX ISA 9.0 §8.6) two conflicting writes
not ordered by synchronisation are formally a data race even with equal values, but every
outcome of that race is the same value, so no reader can observe it; such units remember the
*set* of writers, and a reader outside the set still races with them.  Writes of different values,
or by different statements, are reported (write after write).  When the co-writers differ from
unit to unit within one statement, each unit keeps its own set (up to :data:`MAX_WRITER_SETS`
distinct sets per statement; beyond that only the last writer is remembered, and a later reader
among the others is reported: conservative, never silent).

Races are reported per pair of statements (first occurrence, with the buffer, the element and
both threads); each call is one statement, so reports are found with NumPy over the call's units,
never a Python loop per element or per thread.

Cost.  An access is a set of items (an element, a vector of a ``VecMove``, a register word): item
offsets, or a :class:`Run` of consecutive items, which the tracker checks and updates with slices of
its compact (``int16`` thread, ``int32`` access id, ``bool`` init) shadows, never an index array; a
run whose threads repeat over a row of the CTA keeps that row only.  Each space also keeps which
threads wrote and read it, and the range of units they touched, since the last ``cta_sync`` of the
whole CTA (after which every earlier access is ordered before every later one): an access of the
only thread that touched the space since then, or outside that range, skips the race scan (exact:
such earlier accesses are ordered before it).  A full ``cta_sync`` raises a floor under the vector
clocks in O(1) instead of writing the ``threads x threads`` matrix.

Clusters.  With ``Kernel.cluster`` = C > 1 the tracker follows all C CTAs: its threads are cluster-linear (``rank
* threads + tx``), each CTA's shared buffers and mbarrier clock columns are its own (``S@cta1``, ``full@cta1``), global
memory is common (two CTAs' unordered accesses race like two threads'), ``cta_sync`` joins one CTA, ``cluster_sync``
every thread.  Each CTA's simulator calls it through a :class:`ClusterView`; reports name ``CTA r thread t``
(:meth:`Tracker.tname`), and :attr:`HBReport.cluster_receipts` says which CTA wrote which shared bytes of which CTA.

Where the analysis cannot decide — an index or a condition computed from loaded data, whose
value this run fixes but another input would not — the report is *incomplete*, never clean.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from ..arch import tcgen05 as tc
from ..errors import Span
from ..ir import nodes as ir
from ..ir.evaluate import Undetermined, eval_static
from ..layout.tile import distinct

#: The byte pattern uninitialised shared memory, registers and TMEM start with (``0xDEADBEEF``, little
#: endian per 32-bit word): never zero, never a small integer, recognisable in a dump.
GARBAGE = np.frombuffer(np.uint32(0xDEADBEEF).tobytes(), np.uint8)

TMEM_BYTES = tc.TMEM_LANES * tc.TMEM_COLS * 4

_NONE, _SHARED = -1, -2  # reader states (>= 0: the one reader)
_LD, _ST = 1, 2  # register in-flight states
#: The rule a missing ``fence.proxy.async`` breaks before a TMA or bulk copy reads shared memory (the message of
#: :meth:`Tracker.proxy_read`, after "PTX ISA 9.0 ").
_TMA_PROXY_WHY = "§9.7.13.4: the TMA unit may read the old bytes"
#: ... before a ``tcgen05.cp`` reads its source (PTX ISA 9.0 §9.7.16.6: tcgen05.cp reads through the async proxy).
CP_PROXY_WHY = ("§9.7.13.4, §9.7.16.6: the tcgen05.cp reads shared memory through the async proxy and may read the "
                "old bytes")
#: Distinct writer sets one broadcast store may create before the tracker keeps only the last writer.
MAX_WRITER_SETS = 1024
#: Timeline entries kept (a kernel with a barrier in a long loop keeps a count of the rest).
TIMELINE_CAP = 4096
#: Bytes of happens-before shadow the global buffers of one run may take together (writer, access id, reader,
#: init per tracking unit: about 7-13 bytes per unit).  A written global buffer whose shadow would pass it is not
#: tracked, and the report says "incomplete" for it: the simulator's memory stays bounded (< 2 GiB for any
#: accepted cell: the globals of a cell are at most 1 GiB together).
GLOBAL_SHADOW_BUDGET = 384 << 20


def garbage(shape: int | tuple[int, ...]) -> np.ndarray:
    """A ``uint8`` array of ``shape`` filled with :data:`GARBAGE` (along the last axis)."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    n = shape[-1] if shape else 1
    row = np.tile(GARBAGE, -(-n // GARBAGE.size))[:n]
    return np.broadcast_to(row, shape).copy()


@dataclass(frozen=True)
class Hazard:
    """One reported hazard.

    Attributes
    ----------
    kind : str
        ``"raw"``, ``"war"``, ``"waw"`` (races between threads, of one CTA or of two in a cluster), ``"ld-read"``,
        ``"ld-overwrite"``
        (registers of an in-flight ``tcgen05.ld``), ``"st-overwrite"`` (source registers of an
        in-flight ``tcgen05.st``), ``"st-read"`` (TMEM an in-flight ``tcgen05.st`` writes), ``"st-write"`` /
        ``"ld-write"`` (a tcgen05.cp over TMEM an in-flight ``tcgen05.st`` writes / ``tcgen05.ld`` reads),
        ``"st-dealloc"``, ``"uninit"``; asynchronous copies (:mod:`tilemagic.sim.asyncmodel`): ``"async-read"``,
        ``"async-write"`` (bytes a copy has in flight; or a dsmem copy's source, written without being ordered after
        the destination's wait that observed the copy: :meth:`Tracker.read_observed`), ``"proxy"`` (an async-proxy
        read of generic writes with no
        ``fence.proxy.async``), ``"async-end"`` (a copy never waited for), the mbarrier misuses
        ``"mbarrier-uninit"``, ``"mbarrier-init"`` (initialised again, or not ordered after the init),
        ``"mbarrier-arrivals"``, ``"mbarrier-parity"``, ``"mbarrier-tx"``; ``"cluster-exit"`` (a CTA may exit while a
        copy into its shared memory, or one it issued into another's, may be in flight); ``"hang"``
        (:attr:`HBReport.hang`).
    message : str
        The ``hazard: ...`` text (names both lines).
    span, other_span : Span or None
        The access that found the hazard, and the earlier one it conflicts with.
    buffer : str
        Buffer name (``"TMEM"`` for tensor memory).
    element : int or tuple
        Element offset in the buffer, (lane, column) in TMEM, or register word of a thread.
    threads : tuple of int
        The thread of ``span`` and the thread of ``other_span`` (the same for in-flight hazards).
    """

    kind: str
    message: str
    span: Span | None
    other_span: Span | None
    buffer: str
    element: int | tuple
    threads: tuple[int, int]


@dataclass(frozen=True)
class SyncEvent:
    """A synchronising or asynchronous event in the timeline: ``kind`` (``cta_sync``, ``tcgen05.ld``,
    ``tcgen05.st``, ``wait_ld``, ``wait_st``, ``alloc``, ``dealloc``, and the asynchronous copies' events of
    :mod:`tilemagic.sim.asyncmodel`: ``cp.async``, ``commit_group``, ``wait_group``, ``cp.async.complete``,
    ``mbarrier.init``, ``arrive``, ``phase``, ``wait``, ``wait.blocked``, ``tma.issue``, ``tma.complete``,
    ``tma.read``, ``bulk_commit_group``, ``bulk_wait_group``, ``fence.proxy.async``, ``fence.mbarrier.init``; in a
    cluster ``cluster_sync``, ``dsmem`` (a dsmem copy's issue), ``dsmem.complete``), where, and the threads
    (CTA-linear ids, ``int32``; in a cluster cluster-linear, ``rank * threads + tx``) that took part.  ``info`` says
    what the event is about (``barrier`` and ``phase``; ``group`` and ``pending`` of a commit, ``n``, ``read`` and
    ``through`` of a wait; ``bytes``; ``direction``; ``copy``: the line of the copy an event completes; in a
    cluster, on an issue, ``cta_mask``: a multicast's mask, ``dst_cta``: the CTA a dsmem copy writes)."""

    kind: str
    index: int
    span: Span | None
    threads: np.ndarray = field(repr=False, compare=False)
    info: dict = field(default_factory=dict, compare=False)
    #: in a cluster, the CTA where the event takes effect: the CTA of its threads, the receiving CTA of a landing
    #: (``tma.complete``, ``dsmem.complete``: its threads are the issuer's); 0 for ``cluster_sync`` (every thread
    #: of every CTA) and without a cluster
    cta: int = field(default=0, compare=False)


@dataclass(frozen=True)
class ClusterReceipt:
    """Bytes ``[byte_lo, byte_hi)`` of shared buffer ``buffer`` of the CTA of rank ``dst_rank`` that the statement at
    line ``line`` of the CTA of rank ``src_rank`` wrote last (a run of such bytes, merged): ``kind`` ``"tma"`` (a
    unicast TMA load), ``"multicast"`` (a TMA multicast, PTX ISA 9.0 §9.7.9.25.5.2), ``"dsmem"`` (a
    ``cp.async.bulk.shared::cluster`` copy, §9.7.9.25.4.1) or ``"store"`` (the CTA's own threads: stores, vector
    moves, ``cp.async``, ``stmatrix``).  The data of the cluster picture (:attr:`HBReport.cluster_receipts`)."""

    dst_rank: int
    buffer: str
    byte_lo: int
    byte_hi: int
    src_rank: int
    line: int
    kind: str


@dataclass
class CpWrite:
    """One ``tcgen05.cp`` execution (PTX ISA 9.0 §9.7.16.9.1): what it writes in TMEM.

    Attributes
    ----------
    line : int
        The statement's source line (0 without a span); ``span`` the span itself.
    key : str
        Its :data:`tilemagic.arch.tcgen05.CP_SHAPES` key (``"128x256b"``, ``"32x128b.warpx4"``).
    thread : int
        The issuing thread (CTA-linear).
    lanes, cols : numpy.ndarray of int64
        The TMEM lanes (sorted, replicas included) and 32-bit columns (sorted) it writes: every pair
        ``(lane, col)`` of the two.
    landed : bool
        Whether the copy completed (a commit by its thread arrived); False: it never wrote TMEM.
    barrier : str
        The mbarrier its commit arrives on ("" when never committed); ``phase`` the phase that arrive completed
        into (-1 until it landed).
    """

    line: int
    key: str
    thread: int
    lanes: np.ndarray
    cols: np.ndarray
    span: Span | None = None
    landed: bool = False
    barrier: str = ""
    phase: int = -1


@dataclass
class HBReport:
    """What :meth:`Tracker.finish` found.

    Attributes
    ----------
    hazards : list of Hazard
    incomplete : list of (str, Span or None)
        Why the analysis cannot call the run clean.
    timeline : list of SyncEvent
        Events in program order (at most :data:`TIMELINE_CAP`; ``timeline_dropped`` counts the rest).
    poison : dict of str -> numpy.ndarray
        Per global buffer the kernel writes and left partly uninitialised (a store of poison): ``bool`` per
        byte, True where the final content is uninitialised.  A buffer without poison has no entry.
    accesses : int
        Memory accesses seen, counted per thread and byte (accesses to buffers nothing can race on or leave
        uninitialised — global inputs the kernel never writes — are not counted: :meth:`Tracker.tracks`).
    sync_events : int
        Synchronising events (``cta_sync`` and later pairwise edges).
    """

    hazards: list[Hazard] = field(default_factory=list)
    incomplete: list[tuple[str, Span | None]] = field(default_factory=list)
    timeline: list[SyncEvent] = field(default_factory=list)
    timeline_dropped: int = 0
    poison: dict[str, np.ndarray] = field(default_factory=dict)
    #: Global buffers the kernel writes and the tracker followed, and for those with elements no thread wrote,
    #: a bool per element (True: never written).  A buffer the kernel never writes is in neither.
    written: set[str] = field(default_factory=set)  # every global buffer some statement writes
    tracked: set[str] = field(default_factory=set)
    unwritten: dict[str, np.ndarray] = field(default_factory=dict)
    accesses: int = 0
    sync_events: int = 0
    #: the run stopped because no thread could go on and some wait for an mbarrier phase or a ``cta_sync``
    #: (:mod:`tilemagic.sim.asyncmodel`): the ``would hang: ...`` message (also the first of :attr:`hazards`,
    #: kind ``"hang"``, so ``--strict`` raises it); None when the kernel ran to its end
    hang: Hazard | None = None
    #: in a cluster kernel (C > 1): per CTA, which bytes of its shared buffers which CTA's statement wrote last
    #: (:class:`ClusterReceipt`, by CTA, buffer and byte); empty for C = 1
    cluster_receipts: list[ClusterReceipt] = field(default_factory=list)
    #: every ``tcgen05.cp`` the run issued, in issue order (:class:`CpWrite`: line, key, the TMEM lanes and columns
    #: it writes, whether it landed) — the TMEM heatmap's "who filled this cell" beside the tcgen05.st writes
    cp_writes: list[CpWrite] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.hazards and not self.incomplete and self.hang is None

    def summary(self) -> str:
        """The one-line summary the reports show."""
        if self.hang is not None:
            rest = len(self.hazards) - 1
            more = f"; {rest} other hazard{'s' if rest != 1 else ''}" if rest > 0 else ""
            return f"happens-before: {self.hang.message}{more}"
        if self.hazards:
            n = len(self.hazards)
            s = f"happens-before: {n} hazard{'s' if n != 1 else ''}"
            return s + (f"; incomplete: {self.incomplete[0][0]}" if self.incomplete else "")
        if self.incomplete:
            return f"happens-before: incomplete: {self.incomplete[0][0]}"
        ev = "sync event" if self.sync_events == 1 else "sync events"
        return f"happens-before: clean ({self.accesses} accesses, {self.sync_events} {ev})"


def _line(span: Span | None) -> str:
    return f"L{span.line}" if span else "the kernel epilogue"


@dataclass(frozen=True)
class Run:
    """``count`` consecutive items of ``nbytes`` bytes each, from byte ``start`` of a buffer (an ascending run: the
    common case of a contiguous copy, which the tracker checks and updates with slices, never an index array)."""

    start: int
    count: int
    nbytes: int


class Prepared:
    """An access normalised once by :meth:`Tracker.prepare` (its shadow units, their threads, its range, whether a
    unit repeats), passed to :meth:`Tracker.read`/:meth:`Tracker.write` in place of the offsets each time the
    same statement structure runs again (the simulator keeps them with its per-structure plans)."""

    __slots__ = ("name", "nbytes", "norm", "rng", "unique", "perm", "inv", "shape", "space", "count", "items", "true")

    def __init__(self, name: str, nbytes: int, norm, rng, unique: bool, perm: np.ndarray | None = None,
                 space: _Space | None = None):
        self.name, self.nbytes, self.norm, self.rng, self.unique = name, nbytes, norm, rng, unique
        #: the items' shape (what :meth:`Tracker.read` answers): ``nbytes`` bytes each
        self.shape: tuple[int, ...] = tuple(norm[1] if rng is None else norm[2])
        #: the tracked space (shared, global, TMEM) the access is in, None for registers and untracked buffers;
        #: its units, its items, and the answer "every item initialised" (made once)
        self.space = space
        ix = norm[0]
        self.count = 0 if space is None else (ix.stop - ix.start) if isinstance(ix, slice) else ix.size
        self.items = math.prod(self.shape)
        self.true = _true(self.shape)
        # an access that covers a range of units (or a block of registers) exactly once, in another order (a
        # swizzled tile, an ldmatrix fragment): kept as that range, its units in ascending order — ``perm``
        # takes the access's order to the range's, ``inv`` back (so every shadow update is a slice)
        self.perm = perm
        self.inv = None if perm is None else np.argsort(perm)

    def to_range(self, per_unit):
        """Per-unit values (init bits) of the access, in the range's order."""
        return per_unit if self.perm is None or isinstance(per_unit, (bool, np.bool_)) else \
            np.asarray(per_unit).reshape(-1)[self.perm]

    def to_access(self, per_unit):
        """Per-unit values in the range's order, back in the access's order."""
        return per_unit if self.inv is None else np.asarray(per_unit).reshape(-1)[self.inv]


_MANY = -3  # a "since the last full cta_sync" summary: several threads


def _since(cur: int, t) -> int:
    """The summary after thread(s) ``t`` accessed: none -> that thread; another thread or an array -> many."""
    if isinstance(t, int):
        return t if cur in (_NONE, t) else _MANY
    return _MANY


def _quiet(cur: int, t) -> bool:
    """No access by another thread since the last full barrier (so nothing of this kind can be unordered)."""
    return cur == _NONE or (isinstance(t, int) and cur == t)


_EMPTY = (0, 0)


def _span_of(ix) -> tuple[int, int]:
    """The range ``[lo, hi)`` of units an access covers."""
    if isinstance(ix, slice):
        return ix.start, ix.stop
    if isinstance(ix, _Block):
        return ix.span()
    return (int(ix.min()), int(ix.max()) + 1) if ix.size else _EMPTY


def _meets(rng: tuple[int, int], other: tuple[int, int]) -> bool:
    return rng[0] < rng[1] and other[0] < other[1] and rng[0] < other[1] and other[0] < rng[1]


def _union(rng: tuple[int, int], other: tuple[int, int]) -> tuple[int, int]:
    if rng[0] >= rng[1]:
        return other
    return (min(rng[0], other[0]), max(rng[1], other[1]))


class _Block:
    """A rectangle of a flat space seen as rows of ``width`` units (TMEM: lanes x 512 columns): rows ``r0 ..
    r0 + nr - 1``, units ``c0 .. c0 + nc - 1`` of each, in row-major order — the cells one tcgen05.ld/st of a
    warpgroup touches, updated through a 2-D view (no index array)."""

    __slots__ = ("r0", "nr", "c0", "nc", "width", "size")

    def __init__(self, r0: int, nr: int, c0: int, nc: int, width: int):
        self.r0, self.nr, self.c0, self.nc, self.width, self.size = r0, nr, c0, nc, width, nr * nc

    def view(self, a: np.ndarray) -> np.ndarray:
        return a[self.r0 * self.width:(self.r0 + self.nr) * self.width].reshape(self.nr, self.width)[
            :, self.c0:self.c0 + self.nc]

    def unit(self, i: int) -> int:
        return (self.r0 + i // self.nc) * self.width + self.c0 + i % self.nc

    def span(self) -> tuple[int, int]:
        return (self.unit(0), self.unit(self.size - 1) + 1) if self.size else _EMPTY


def _subset(ix, t, keep: np.ndarray):
    """The units ``keep`` (a mask in the access's unit order) of an access ``ix`` by ``t``, as an index array and
    threads."""
    if isinstance(ix, slice):
        u = np.arange(ix.start, ix.stop, dtype=np.int64)
    elif isinstance(ix, _Block):
        u = np.array([ix.unit(i) for i in range(ix.size)], np.int64)
    else:
        u = np.asarray(ix)
    tt = _arr(t)
    return u[keep], (tt if isinstance(tt, (int, np.integer)) else np.asarray(tt).reshape(-1)[keep])


def _get(a: np.ndarray, ix) -> np.ndarray:
    """``a[ix]`` for a slice, an index array or a :class:`_Block` (flat, in the access's unit order)."""
    return ix.view(a).reshape(-1) if isinstance(ix, _Block) else a[ix]


def _set(a: np.ndarray, ix, v) -> None:
    """``a[ix] = v`` (``v`` one value or one per unit)."""
    if isinstance(ix, _Block):
        ix.view(a)[...] = v if np.ndim(v) == 0 else np.asarray(v).reshape(ix.nr, ix.nc)
    else:
        a[ix] = v


def _at(ix, i: int) -> int:
    """Unit index of the ``i``-th unit of an access (a slice, an index array or a :class:`_Block`)."""
    if isinstance(ix, _Block):
        return ix.unit(i)
    return ix.start + i if isinstance(ix, slice) else int(ix[i])


class _Cycle:
    """The threads of a run whose items cycle over a few threads (item ``i`` by ``pattern[i % len(pattern)]``, per
    unit): a tile's row of threads repeated over its iterations, kept without a per-unit array."""

    def __init__(self, pattern: np.ndarray, n: int):
        self.pattern, self.n = pattern, n

    def full(self) -> np.ndarray:
        return np.tile(self.pattern, self.n // self.pattern.size)


def _arr(t):
    """A run's threads as an int, or an array per unit."""
    return t.full() if isinstance(t, _Cycle) else t


def _fill(a: np.ndarray, ix, t) -> None:
    """``a[ix] = t`` (``t`` an int, an array per unit, or a :class:`_Cycle` over a slice: a broadcast assignment)."""
    if isinstance(t, _Cycle):
        a[ix].reshape(-1, t.pattern.size)[:] = t.pattern
    else:
        _set(a, ix, t)


class _Space:
    """Shadow state of one flat space (a shared or global buffer, or TMEM), one entry per ``unit`` bytes."""

    def __init__(self, name: str, label: str, nbytes: int, elem_bytes: int, unit: int, tdt, *, reads: bool,
                 writes: bool, init: bool | None):
        self.name, self.label, self.elem_bytes, self.unit = name, label, elem_bytes, unit
        self.buf: ir.Buffer | None = None  # (set by the tracker: names elements by their logical index)
        self.tmem_bufs: list[ir.Buffer] = []  # (TMEM: the kernel's tmem buffers, aliases last; :meth:`owner`)
        self.has_w, self.has_r, self.has_init = writes, reads and writes, init is not None
        n = nbytes // unit
        # (a side that is not tracked is an empty array)
        self.wt: np.ndarray = np.full(n if self.has_w else 0, _NONE, tdt)
        self.wa: np.ndarray = np.full(n if self.has_w else 0, 0, np.int32)  # (np.full: pages touched here)
        self.rt: np.ndarray = np.full(n if self.has_r else 0, _NONE, tdt)
        self.ra: np.ndarray = np.full(n if self.has_r else 0, 0, np.int32)
        self.init: np.ndarray = np.full(n if self.has_init else 0, bool(init))
        # which threads wrote / read since the last cta_sync of the whole CTA (_NONE, one thread, or _MANY), and
        # the range of units they touched ([lo, hi), empty when lo >= hi)
        self.w_since = self.r_since = _NONE
        self.w_rng = self.r_rng = _EMPTY
        # reads that met no unordered reader, not yet entered into rt/ra: (units, threads, access id), in order.
        # Only a later access that consults the readers needs them (:meth:`flush_reads`); a full cta_sync orders
        # them before everything after it, so they are dropped then — most reads never touch the reader arrays
        self.pending: list[tuple] = []
        # asynchronous copies in flight (:meth:`Tracker.in_flight`): per unit the copy (an index of
        # ``Tracker._async_ops``) that writes it (``busy_w``: no access until it lands) or reads it (``busy_r``: no
        # write until it has read); -1: none.  None until a copy is in flight here (a kernel without asynchronous
        # copies never allocates them, and its accesses test one attribute)
        self.busy_w: np.ndarray | None = None
        self.busy_r: np.ndarray | None = None
        # asynchronous reads that completed where only an mbarrier's waiters learn it (a dsmem copy's source:
        # :meth:`Tracker.read_observed`): per unit an entry of ``Tracker._late``, -1 none; None until there is one
        self.late_r: np.ndarray | None = None
        # per unit the reduction (a code of ``Tracker._red_codes``, 0: a plain write) of its last write: writes of
        # one reduction commute (:meth:`Tracker.write`'s ``reduce``); None until a reduction writes here
        self.red: np.ndarray | None = None

    def flush_reads(self) -> None:
        """Enter the pending reads into the reader arrays, in program order."""
        for ix, t, aid in self.pending:
            _fill(self.rt, ix, t)
            _set(self.ra, ix, aid)
        self.pending.clear()

    def forget(self) -> None:
        """A cta_sync of the whole CTA: every earlier access is ordered before every later one (so the pending
        reads, which no later access can be unordered with, need not be entered)."""
        self.w_since = self.r_since = _NONE
        self.w_rng = self.r_rng = _EMPTY
        self.pending.clear()

    def element(self, u: int) -> int | tuple:
        """The element (TMEM: lane, column) of unit ``u``."""
        byte = u * self.unit
        if self.name == "TMEM":
            cell = byte // 4
            return (cell // tc.TMEM_COLS, cell % tc.TMEM_COLS)
        return byte // self.elem_bytes

    def owner(self, u: int) -> str:
        """The declared buffer unit ``u`` belongs to: a TMEM cell's buffer by its columns (a buffer before an
        ``at OTHER`` alias of it), else the space's name (``TMEM`` for a cell no buffer declares)."""
        if self.name == "TMEM":
            col = self.element(u)[1]  # type: ignore[index]
            for b in self.tmem_bufs:
                if b.tmem_col <= col < b.tmem_col + max(b.tmem_ncols, 1):
                    return b.name
        return self.name

    def where(self, u: int) -> str:
        e = self.element(u)
        if isinstance(e, tuple):
            return f"TMEM lane {e[0]} column {e[1]}"
        at = logical_index(self.buf, e) if self.buf is not None else None
        return f"{self.name}{at}" if at else f"{self.name} element {e}"



def async_race_text(label: str, name: str, thread: str, verb: str, where: str, line: str, what: str, at: str,
                    until: str, issuing: str | None = None) -> str:
    """The message of an access that meets an asynchronous copy still in flight: ``thread`` (``"thread 5"``,
    ``"CTA 1 thread 5"``) ``verb`` (``reads``/``writes``) ``where`` at ``line``, which the copy ``what`` (``"the TMA
    copy (mbarrier full) writes"``) at ``at`` has not finished (``until``: what ends it).

    ``issuing``: the access is itself an asynchronous copy's issue (``"the TMA copy (mbarrier full)"``), e.g. the
    same box issued by two threads: the message names that copy and its thread, not a generic store — each
    issue is a copy of its own, and two copies in flight on one destination race (PTX ISA 9.0 §9.7.9.25.5.2),
    identical bytes or not."""
    who = thread if issuing is None else f"{issuing} issued by {thread}"
    tail = "" if issuing is None else " (each issue is a copy of its own: two copies in flight write one destination)"
    return (f"hazard: {label} race on {name}: {who} {verb} {where} at {line} that {what} at {at}, before "
            f"{until}{tail}")

class _TcgenFlight:
    """TMEM cells a ``tcgen05.ld`` (reads) or ``tcgen05.st`` (writes) still has in flight: per cell the issuing
    thread (``owner``, ``_NONE``: none) and the access id, until that thread's ``tcgen05.wait::ld`` / ``::st``
    (PTX ISA 9.0 §9.7.16.8.5: only the wait says the instruction's TMEM accesses are done).  ``cells``: the cell
    sets (slice, block or index array) issued with cells in flight, in issue order."""

    def __init__(self, ncells: int, tdt):
        self.owner = np.full(ncells, _NONE, tdt)
        self.aid = np.zeros(ncells, np.int32)
        self.cells: list = []

    def issue(self, cix, threads, aid: int) -> None:
        _set(self.owner, cix, np.asarray(threads).astype(self.owner.dtype, copy=False))
        _set(self.aid, cix, aid)
        if not any(c is cix for c in self.cells):
            self.cells.append(cix)

    def hits(self, cix, threads) -> list[tuple[int, int, int, int]]:
        """The cells of ``cix`` in flight, the first one per instruction (:func:`_first_per`): ``(cell, accessing
        thread, issuing thread, access id)``; ``threads``: the accessing thread of each cell (or one for all)."""
        busy = _get(self.owner, cix) != _NONE
        if not busy.any():
            return []
        th = np.broadcast_to(_arr(threads), busy.shape)
        return [(c, int(th[i]), int(self.owner[c]), int(self.aid[c]))
                for i in _first_per(_get(self.aid, cix), busy) for c in (_at(cix, i),)]

    def wait(self, tids: np.ndarray, t0: int, dense: bool) -> None:
        """The threads ``tids`` (``dense``: the range from ``t0``) ran the wait: their cells are done."""
        left = []
        for cix in self.cells:
            own = _get(self.owner, cix)
            mine = ((own >= t0) & (own < t0 + tids.size)) if dense else np.isin(own, tids)
            if mine.any():
                own = np.where(mine, _NONE, own).astype(self.owner.dtype, copy=False)
                _set(self.owner, cix, own)
            if (own != _NONE).any():
                left.append(cix)
        self.cells = left


class Tracker:
    """Happens-before state of one simulated CTA; the simulator calls it at every access point.

    Parameters
    ----------
    kernel : tilemagic.ir.nodes.Kernel
        Sizes the shadow memory (shared, global written, local, TMEM), fixes each buffer's tracking unit
        (:meth:`unit`) and is scanned once for data-dependent indices and conditions (:meth:`incomplete`).
    nthreads : int
        Threads of the CTA.
    strict : bool
        Kept for the caller (``--strict`` turns hazards into errors; the tracker reports the same).

    Notes
    -----
    Contract for callers: within one thread, calls come in program order; one call covers one
    statement, or many loop iterations of one statement when batching does not reorder two
    accesses of the same thread to the same element (a statement's reads before its writes).
    An access is a set of *items*: ``nbytes`` bytes each, at byte offsets that are multiples of the
    buffer's :meth:`unit` (``nbytes`` a multiple of it too): an ``int64`` array of item offsets with
    ``tids`` of the same shape, or a :class:`Run` (``tids`` then one thread, or one thread per item;
    for a local buffer an array of threads that each access the run's items of their registers).
    Races between threads are found whatever order the executor ran them in.
    """

    #: set by the asynchronous-copy model while an issue writes its destination: what the issuing copy is
    #: (``"the TMA copy (mbarrier full)"``), so a race of the issue reads as the copy's (:func:`async_race_text`)
    issuing: str | None = None

    def __init__(self, kernel: ir.Kernel, nthreads: int, strict: bool = False):
        #: CTAs of the cluster and threads per CTA: with a cluster the tracker's threads are cluster-linear
        #: (``rank * cta + tx``) and each CTA's shared buffers are spaces of their own (``S@cta1``)
        self.cluster, self.cta = max(1, kernel.cluster), nthreads
        nthreads *= self.cluster
        self.kernel, self.n, self.strict = kernel, nthreads, strict
        self._tdt = np.int16 if nthreads < 2 ** 15 - 8 - 256 else np.int32
        #: the kernel's buffers, access units and data-dependent indices (one walk; the simulator uses it too)
        self.accesses = kernel_accesses(kernel)
        # one clock column per mbarrier after the threads' (its asynchronous copies' writes: only the waiters of a
        # phase learn it, not a thread that synchronised with the issuer after the issue); per CTA in a cluster
        self.agents: dict[str, int] = {name: nthreads + i for i, name in
                                       enumerate(cta_name(b.name, r, self.cluster) for r in range(self.cluster)
                                                 for b in kernel.shared if b.is_mbarrier)} \
            if self.accesses.asynchronous else {}
        #: per (CTA, shared buffer): the code of the statement that last wrote each byte (-1: none), and the codes'
        #: (source CTA, line, kind) — the cluster picture's data (:attr:`HBReport.cluster_receipts`; C > 1 only)
        self._receipts: dict[tuple[int, str], np.ndarray] = {}
        self._receipt_codes: dict[tuple[int, int, str], int] = {}
        #: the tracker's event counter at each ``cluster_sync`` (the exit check of :mod:`tilemagic.sim.asyncmodel`)
        self.cluster_syncs: list[int] = []
        # (a clock column -> its mbarrier as reports name it: ``full``, in a cluster ``full of CTA 1``; and the name
        # a `wait` spells)
        self._agent_name = {a: name.replace("@cta", " of CTA ") for name, a in self.agents.items()}
        self._agent_bar = {a: name.split("@cta")[0] for name, a in self.agents.items()}
        self.known = np.zeros((nthreads, nthreads + len(self.agents)), np.int32)  # known[t, w] (at least _floor)
        self._fence = np.zeros(nthreads, np.int32)  # the event of each thread's last fence.proxy.async
        self._fence_known: dict[int, np.ndarray] = {}  # thread -> what it knew at its last fence.proxy.async
        #: descriptions of asynchronous copies: (what it does, its span, the completion it waits for)
        self._async_ops: list[tuple[str, Span | None, str]] = []
        self._async_red: list[int] = []  # per asynchronous copy: its reduction's code (0: none)
        self._red_codes: dict[str, int] = {}  # reduction operation -> its code (1, 2, ...)
        #: completed asynchronous reads known only to an mbarrier's waiters: (its clock column, the event counter at
        #: completion, the copy's span, the message's account of it) — :meth:`read_observed`
        self._late: list[tuple[int, int, Span | None, str]] = []
        self._floor = 0  # the last cta_sync of every thread: every entry of known is at least this (O(1) to raise)
        self.G = 0  # index of the last synchronising event
        self._frontier: np.ndarray | None = None
        self._aid: dict[tuple[Span | None, int], int] = {}
        self._aid_span: list[Span | None] = [None]
        self._aid_stamp = np.zeros(64, np.int32)
        self._sets: list[np.ndarray] = []  # writer sets (bool masks over threads)
        self._set_ids: dict[bytes, int] = {}
        self._patterns: dict = {}  # cycled / repeated thread rows of runs: :meth:`_pattern`
        self._event_tids: dict = {}  # id(threads array) -> (it, sorted int64, int32): :meth:`event`
        self._ranges: dict = {}  # id(threads array) -> (it, whether it is a range): :meth:`_is_range`
        self._in_flight_regs: set[str] = set()  # register buffers with units a tcgen05.ld/st has in flight
        self.report = HBReport()
        self._seen: set = set()
        written, read = self.accesses.written, self.accesses.read
        self._units = _units(kernel, self.accesses)
        self.spaces: dict[str, _Space] = {}
        self.untracked: list[str] = []  # written global buffers past GLOBAL_SHADOW_BUDGET (not tracked)
        self.report.written = {b.name for b in kernel.params if b.name in written}
        budget = GLOBAL_SHADOW_BUDGET
        for b in sorted((b for b in kernel.params if b.name in written), key=lambda b: b.nbytes):
            units = b.nbytes // self._units[b.name]
            cost = units * ((np.dtype(self._tdt).itemsize + 4) * (2 if b.name in read else 1) + 1)
            if cost > budget:
                self.untracked.append(b.name)
                self.incomplete(f"global buffer {b.name} ({b.nbytes / 2 ** 20:,.0f} MiB) is too large for the "
                                f"happens-before shadow ({GLOBAL_SHADOW_BUDGET >> 20} MiB for all global buffers): "
                                f"races on it and uninitialised data stored to it are not checked",
                                getattr(b, "span", None))
                continue
            budget -= cost
            self.spaces[b.name] = _Space(b.name, "global-memory", b.nbytes, b.elem_bytes, self._units[b.name],
                                         self._tdt, reads=b.name in read, writes=True, init=True)
        #: a cluster's shared buffers per CTA (``S@cta1``: the buffer as CTA 1 has it; :func:`cta_buffer`)
        self.cta_shared = [tuple(cta_buffer(b, r, self.cluster) for b in kernel.shared) for r in range(self.cluster)]
        for bufs in self.cta_shared:
            for b, orig in zip(bufs, kernel.shared):
                self._units[b.name] = self._units[orig.name]
                if orig is not kernel.tmem_addr:  # written by the allocation (modelled by the alloc event)
                    self.spaces[b.name] = _Space(b.name, "shared-memory", b.nbytes, b.elem_bytes,
                                                 self._units[b.name], self._tdt, reads=True, writes=True, init=False)
                    self.spaces[b.name].buf = b
        for b in kernel.params:
            if b.name in self.spaces:
                self.spaces[b.name].buf = b
        self.tmem = _Space("TMEM", "TMEM", TMEM_BYTES, 4, 4, self._tdt, reads=True, writes=True, init=False)
        self.tmem.tmem_bufs = sorted(kernel.tmem, key=lambda b: b.alias_of is not None)
        # registers: init bit, in-flight state and the access id that set it, per (thread, unit)
        self.regs = {}
        for b in kernel.locals:
            n = b.nbytes // self._units[b.name]
            self.regs[b.name] = (np.zeros((nthreads, n), bool), np.zeros((nthreads, n), np.int8),
                                 np.zeros((nthreads, n), np.int32))
        #: tcgen05.cp (PTX ISA 9.0 §9.7.16.6.4): per TMEM cell the landing (an index of ``_cp_landings``: the clock
        #: column it completed on, the event counter then, the cp's span) whose data it holds, -1 none; per thread
        #: what it knew at its last ``tcgen05.fence::after_thread_sync`` and the span of its last mbarrier wait
        self.cp_cell = np.full(TMEM_BYTES // 4, -1, np.int32)
        self._cp_landings: list[tuple[int, int, Span | None]] = []
        self._tc_fenced: dict[int, np.ndarray] = {}
        self._acq_span: list[Span | None] = [None] * nthreads
        self._cta_sync_span: Span | None = None
        self._st = _TcgenFlight(TMEM_BYTES // 4, self._tdt)  # TMEM cells an in-flight tcgen05.st writes
        self._ld = _TcgenFlight(TMEM_BYTES // 4, self._tdt)  # TMEM cells an in-flight tcgen05.ld reads
        for reason, span in self.accesses.data_dependent:
            self.incomplete(reason, span)

    # ------------------------------------------------------------------ bookkeeping
    def tname(self, t: int, other: int | None = None) -> str:
        """``thread 5`` (``threads 5 and 7`` with ``other``); in a cluster ``CTA 1 thread 5`` (cluster-linear ids)."""
        if other is not None:
            if self.cluster == 1:
                return f"threads {t} and {other}"
            return f"{self.tname(t)} and {self.tname(other)}"
        if self.cluster == 1 or t < 0:
            return f"thread {t}"
        return f"CTA {t // self.cta} thread {t % self.cta}"

    def unit(self, buf: ir.Buffer | None) -> int:
        """Bytes per shadow entry of ``buf`` (None: TMEM, 4): the gcd of every granule the kernel accesses it in
        (:func:`_units`: elements, vectors, 32-bit words, ``ldmatrix.trans`` 16-bit halves)."""
        return 4 if buf is None else self._units.get(buf.name, buf.elem_bytes)

    def _access_id(self, span: Span | None) -> int:
        key = (span, self.G)
        a = self._aid.get(key)
        if a is None:
            a = len(self._aid_span)
            self._aid[key] = a
            self._aid_span.append(span)
            if a >= self._aid_stamp.size:
                self._aid_stamp = np.concatenate([self._aid_stamp, np.zeros_like(self._aid_stamp)])
            self._aid_stamp[a] = self.G
        return a

    def _frontier_of(self, tids) -> np.ndarray:
        """For each thread, the oldest stamp it knows of every other thread (diagonal excluded)."""
        if self._frontier is None:
            k = np.maximum(self.known, self._floor)
            np.fill_diagonal(k, np.iinfo(np.int32).max)
            self._frontier = k[:, :self.n].min(axis=1) if self.n > 1 else \
                np.full(self.n, np.iinfo(np.int32).max, np.int32)
        return self._frontier[tids]

    def _join(self, tids: np.ndarray) -> None:
        """A synchronising event among ``tids``: each learns what any of them knew, and the event itself."""
        self.G += 1
        self.report.sync_events += 1
        if tids.size == self.n:
            self._floor = self.G
            for sp in (*self.spaces.values(), self.tmem):  # every earlier access is now ordered before all
                sp.forget()
        else:
            rows = np.maximum(self.known[tids].max(axis=0), self._floor)
            self.known[tids] = rows
            self.known[np.ix_(tids, tids)] = self.G
        self._frontier = None

    def _set_id(self, tids: np.ndarray) -> int:
        mask = np.zeros(self.n, bool)
        mask[tids] = True
        key = mask.tobytes()
        k = self._set_ids.get(key)
        if k is None:
            k = self._set_ids[key] = len(self._sets)
            self._sets.append(mask)
        return -2 - k

    def _hazard(self, kind, key, message, span, other_span, buffer, element, threads) -> None:
        if key in self._seen:
            return
        self._seen.add(key)
        self.report.hazards.append(Hazard(kind, message, span, other_span, buffer, element, threads))

    def _unordered(self, tids: np.ndarray, prev: np.ndarray, stamp: np.ndarray,
                   members_ok: bool | np.ndarray) -> np.ndarray:
        """Is each previous access (thread or writer-set code ``prev``, ``stamp``) NOT ordered before the
        current point of ``tids``?  ``members_ok`` (one bool, or one per access): a thread of a writer set is
        ordered with the set (a broadcast of identical values; not the set of a reduction's writers, whose
        members each saw a partial result)."""
        bad = np.zeros(tids.shape, bool)
        single = prev >= 0
        if single.any():
            t, p = tids[single], prev[single].astype(np.int64)
            bad[single] = (t != p) & (np.maximum(self.known[t, p], self._floor) <= stamp[single])
        sets = prev <= -2
        if sets.any():
            for code in np.unique(prev[sets]):
                sel = prev == code
                mask = self._sets[-2 - int(code)]
                who = np.nonzero(mask)[0]
                t = tids[sel]
                km = np.maximum(self.known[np.ix_(t, who)], self._floor)
                km = np.where(t[:, None] == who[None, :], np.iinfo(np.int32).max, km)
                b = km.min(axis=1) <= stamp[sel]
                ok = members_ok if isinstance(members_ok, bool) else members_ok[sel]
                b &= ~(mask[t] & ok)
                bad[sel] = b
        return bad

    # ------------------------------------------------------------------ the normal form of an access
    def _norm(self, unit: int, off, tids, nbytes: int):
        """An access as (unit index: slice or int64 array, thread: int or int64 array per unit, item shape,
        units per item)."""
        k = nbytes // unit
        if k * unit != nbytes:
            raise ValueError(f"an access of {nbytes} bytes is not a whole number of {unit}-byte units")
        if isinstance(off, Run):
            u0 = off.start // unit
            ix: slice | np.ndarray = slice(u0, u0 + off.count * k)
            if isinstance(tids, (int, np.integer)) or np.ndim(tids) == 0:
                return ix, int(tids), (off.count,), k
            # (the caller's own 1-D row kept as it is: :meth:`_pattern` knows it by identity)
            t = tids if isinstance(tids, np.ndarray) and tids.ndim == 1 else np.asarray(tids).reshape(-1)
            if t.size * k != off.count * k:  # the items' threads cycle over tids
                if off.count % t.size:
                    raise ValueError("a run's threads must divide its items")
                return ix, _Cycle(self._pattern(t, k), off.count * k), (off.count,), k
            return ix, (self._pattern(t, k) if k > 1 else t), (off.count,), k
        u, t, shape = _item_units(off, tids, unit, k)
        return _index(u), t, shape, k

    def _pattern(self, t: np.ndarray, k: int) -> np.ndarray:
        """The per-unit thread row of a :class:`_Cycle` (each of ``t`` repeated ``k`` times), built once per row."""
        hit = self._patterns.get((id(t), k))
        if hit is not None and hit[0] is t:  # (the caller's cached row: the same object)
            return hit[2]
        key = (t.tobytes(), t.dtype.str, k)
        out = self._patterns.get(key)
        if out is None:
            out = (t, k, np.repeat(t, k).astype(self._tdt) if k > 1 else t.astype(self._tdt))
            if len(self._patterns) < 512:
                self._patterns[key] = out
                self._patterns[(id(t), k)] = out  # (the array is kept: its id stays its own)
        return out[2]

    @staticmethod
    def _per_item(init_units, shape, k):
        """Init bits per unit -> per item (all of its units), in the access's item shape."""
        if init_units is None:
            return _true(shape)
        if k > 1:
            init_units = init_units.reshape(-1, k).all(1)
        return init_units.reshape(shape)

    @classmethod
    def _unit_bits(cls, init, init_bytes, nitems: int, k: int, unit: int):
        """:meth:`_per_unit` of ``init``, or the units of ``init_bytes`` (per byte: a unit all of whose bytes are)."""
        if init_bytes is None:
            return cls._per_unit(init, nitems, k)
        b = np.asarray(init_bytes, bool).reshape(-1, unit).all(1)
        return True if b.all() else b

    def init_bytes(self, buf: ir.Buffer | None, off: np.ndarray | Run | Prepared, tids,
                   nbytes: int | None = None) -> np.ndarray:
        """Is each byte of each item initialised?  A query (no access is recorded; :meth:`read` does that): the
        items of ``off`` by ``tids`` as :meth:`read` takes them, the answer in the items' shape plus a last axis
        of ``nbytes`` — what a copy that moves bytes as they are carries where :meth:`read` found an item not
        wholly initialised (:meth:`write`'s ``init_bytes``)."""
        prep = off if isinstance(off, Prepared) else None
        nb = prep.nbytes if prep is not None else self.unit(buf) if nbytes is None else nbytes
        if buf is not None and buf.scope != "local" and buf.name not in self.spaces:
            shape = prep.shape if prep is not None else (off.count,) if isinstance(off, Run) else np.shape(off)
            return np.ones(tuple(shape) + (nb,), bool)
        if buf is not None and buf.scope == "local":
            at, shape, k, _ = prep.norm if prep is not None else self._reg_norm(buf, off, tids, nb)
            bits, unit = self.regs[buf.name][0][at], self.unit(buf)
        else:
            sp = self.tmem if buf is None else self.spaces[buf.name]
            ix, _, shape, k = prep.norm if prep is not None else self._norm(sp.unit, off, tids, nb)
            n = (ix.stop - ix.start) if isinstance(ix, slice) else ix.size
            bits, unit = (_get(sp.init, ix) if sp.has_init else np.ones(n, bool)), sp.unit
        bits = np.asarray(bits).reshape(-1) if prep is None else np.asarray(prep.to_access(bits)).reshape(-1)
        return np.repeat(bits, unit).reshape(tuple(shape) + (nb,))

    @staticmethod
    def _per_unit(init, nitems: int, k: int):
        """Init bits per item (or one bool) -> per unit (or one bool)."""
        if init is True:
            return True
        ini = np.asarray(init, bool)
        if ini.size == 1 or _all_true(ini):
            return bool(ini.reshape(-1)[0]) if ini.size else True
        ini = np.broadcast_to(ini, (nitems,) if ini.ndim <= 1 else ini.shape).reshape(-1)
        return np.repeat(ini, k) if k > 1 else ini

    # ------------------------------------------------------------------ accesses in one space
    def _check_writer(self, sp: _Space, ix, t, span, kind: str, red: int = 0) -> None:
        """Report, for every earlier write access some unit's last write comes from that is not ordered before
        this access, its first such unit (``raw``: a read, a member of a writer set is fine; ``waw``: a write, the
        set's other members must be ordered) — one report per pair of statements, however many statements one
        call covers (a batched op).  ``red``: the access is a reduction of that code (:meth:`write`): units whose
        last writes are the same reduction are not checked (the reductions commute); a plain read of a unit a
        reduction wrote must be ordered after every writer of the set, itself included."""
        t = _arr(t)
        prev = _get(sp.wt, ix)
        live = (prev != _NONE) & (prev != t)
        reds = _get(sp.red, ix) if sp.red is not None else None
        if red and reds is not None:
            live &= reds != red
        cand = np.nonzero(live)[0]
        if not cand.size:
            return
        tc_ = np.broadcast_to(t, prev.shape)[cand]
        wa = _get(sp.wa, ix)[cand]
        members_ok: bool | np.ndarray = kind == "raw"
        if members_ok and reds is not None:
            members_ok = reds[cand] == 0
        bad = self._unordered(tc_, prev[cand], self._aid_stamp[wa], members_ok)
        for j in _first_per(wa, bad):
            i = cand[j]
            w, a = int(prev[i]), int(wa[j])
            if w <= -2:  # name a writer of the set other than this thread
                others = self._sets[-2 - w].copy()
                others[int(tc_[j])] = False
                w = int(np.argmax(others))
            self._race(kind, sp, _at(ix, int(i)), int(tc_[j]), span, w, self._aid_span[a])

    def _reads_unordered(self, sp: _Space, ix, t) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per unit: is its last read (one thread, or read-shared) NOT ordered before ``t``'s current point?
        Also the reader states and stamps."""
        sp.flush_reads()
        r0 = _get(sp.rt, ix)
        s0 = self._aid_stamp[_get(sp.ra, ix)]
        tt = np.broadcast_to(np.asarray(_arr(t), np.int64), r0.shape)
        bad = (r0 == _SHARED) & (self._frontier_of(tt) <= s0)
        single = r0 >= 0
        if single.any():
            rr = np.where(single, r0, 0).astype(np.int64)
            bad |= single & (r0 != tt) & (np.maximum(self.known[tt, rr], self._floor) <= s0)
        return bad, r0, s0

    def _space_read(self, sp: _Space, ix, t, n: int, span, aid, rng=None, unique: bool = False, red: int = 0):
        wix, wt = ix, t  # (the units the race scan looks at: those no asynchronous copy has in flight)
        if sp.busy_w is not None and n:
            busy = self._check_busy(sp, sp.busy_w, ix, t, span, "reads", red)
            if busy is not None:
                wix, wt = _subset(ix, t, ~busy)
        init = None  # (None: every unit initialised; else a copy, not a view, of the units' init bits)
        if sp.has_init:
            bits = _get(sp.init, ix)
            init = None if bits.all() else np.array(bits)
        rng = rng if rng is not None else _span_of(ix) if n else _EMPTY
        if sp.has_w and n and not _quiet(sp.w_since, t) and _meets(sp.w_rng, rng):
            self._check_writer(sp, wix, wt, span, "raw", red)
        if red:  # (a reduction's read is the read half of an atomic read-modify-write: its write is what races)
            self.report.accesses += n * sp.unit
            return init
        if sp.has_r and n:
            if _quiet(sp.r_since, t) or not _meets(sp.r_rng, rng):  # no unordered reader here: nothing read-shared
                if unique or isinstance(ix, slice) or isinstance(t, int):
                    sp.pending.append((ix, t, aid))  # (entered only when a later access needs the readers)
                else:
                    sp.flush_reads()
                    _fill(sp.rt, ix, t)
                    _set(sp.ra, ix, aid)
                if not unique and not isinstance(ix, slice) and not isinstance(t, int):
                    dup = sp.rt[ix] != t  # two threads read this unit in this call
                    if dup.any():
                        sp.rt[ix[dup]] = _SHARED
            else:
                shared, _, _ = self._reads_unordered(sp, ix, t)
                new = np.where(shared, _SHARED, _arr(t)).astype(sp.rt.dtype)
                _set(sp.rt, ix, new)
                _set(sp.ra, ix, aid)
                if not unique and not isinstance(ix, slice):
                    dup = sp.rt[ix] != new  # two threads read this unit in this call
                    if dup.any():
                        sp.rt[ix[dup]] = _SHARED
            sp.r_since = _since(sp.r_since, t)
            sp.r_rng = _union(sp.r_rng, rng)
        self.report.accesses += n * sp.unit
        return init

    def _space_write(self, sp: _Space, ix, t, n: int, span, aid, init, value, rng=None,
                     unique: bool = False, red: int = 0) -> None:
        if not sp.has_w or not n:
            return
        wix, wt = ix, t  # (the units the race scans look at: those no asynchronous copy has in flight)
        if sp.busy_w is not None and sp.busy_r is not None:
            b1 = self._check_busy(sp, sp.busy_w, ix, t, span, "writes", red)
            b2 = self._check_busy(sp, sp.busy_r, ix, t, span, "writes")
            hits = [b for b in (b1, b2) if b is not None]
            if hits:
                wix, wt = _subset(ix, t, ~np.logical_or.reduce(hits))
        if sp.late_r is not None:
            self._check_late(sp, ix, t, span)
        rng = rng if rng is not None else _span_of(ix)
        if not _quiet(sp.w_since, t) and _meets(sp.w_rng, rng):
            self._check_writer(sp, wix, wt, span, "waw", red)
        if sp.has_r and _meets(sp.r_rng, rng):
            if not _quiet(sp.r_since, t):  # (units an asynchronous copy has in flight: that copy's report)
                bad, r0, s0 = self._reads_unordered(sp, wix, wt)
                if bad.any():  # (one report per earlier read access, as :meth:`_check_writer`)
                    ra = _get(sp.ra, wix)
                    for i in _first_per(ra, bad):
                        ti = int(np.broadcast_to(_arr(wt), r0.shape)[i])
                        r = int(r0[i])
                        if r == _SHARED:  # several threads read it (which ones is not kept): named as such
                            r = -1
                        self._race("war", sp, _at(wix, int(i)), ti, span, r, self._aid_span[int(ra[i])])
            sp.flush_reads()
            _set(sp.rt, ix, _NONE)  # reads before an ordered write are ordered before every later access after it
            # (where nothing was read since the last full barrier every reader entry is ordered before all: kept)
        new = t if isinstance(t, (int, _Cycle)) or t.dtype == sp.wt.dtype else t.astype(sp.wt.dtype)
        if red or sp.red is not None:
            new = self._reducers(sp, ix, t, red, new)
        _fill(sp.wt, ix, new)
        _set(sp.wa, ix, aid)
        if not unique and not isinstance(ix, slice):
            dup = np.nonzero(sp.wt[ix] != new)[0]
            if dup.size:
                self._same_statement_writes(sp, ix, t, span, aid, value, dup)
        sp.w_since = _since(sp.w_since, t)
        sp.w_rng = _union(sp.w_rng, rng)
        if sp.has_init:
            _set(sp.init, ix, init)
        self.report.accesses += n * sp.unit

    def _same_statement_writes(self, sp: _Space, off, tids, span, aid, value, dup) -> None:
        """Units several threads wrote in one call: a broadcast of identical values, or a race."""
        units = np.unique(off[dup])
        sel = np.nonzero(np.isin(off, units))[0]
        o, t = off[sel], tids[sel]
        order = np.lexsort((t, o))
        o, t = o[order], t[order]
        same = o[1:] == o[:-1]
        if value is None:
            differ = same & (t[1:] != t[:-1])
        else:
            v = value[sel][order]
            ne = v[1:] != v[:-1]
            differ = same & (t[1:] != t[:-1]) & (ne if ne.ndim == 1 else ne.any(-1))
        if differ.any():
            i = int(np.argmax(differ))
            self._race("waw", sp, int(o[i]), int(t[i + 1]), span, int(t[i]), span, same_call=True)
            return
        # identical values: remember each unit's set of writers (a bounded number of distinct sets)
        pairs = np.unique(o * self.n + t)  # (unit, thread) once each, sorted by unit then thread
        pb, pt = pairs // self.n, pairs % self.n
        starts = np.searchsorted(pb, units)
        count = np.diff(np.append(starts, pb.size))
        width = int(count.max())
        if width > 64:
            callers = np.unique(tids)
            if np.all(count == callers.size) and len(self._sets) < np.iinfo(sp.wt.dtype).max - 8:
                sp.wt[units] = self._set_id(callers)
            return
        table = np.full((units.size, width), -1, np.int64)
        table[np.repeat(np.arange(units.size), count), np.arange(pb.size) - np.repeat(starts, count)] = pt
        sets, which = np.unique(table, axis=0, return_inverse=True)
        if sets.shape[0] > MAX_WRITER_SETS or len(self._sets) + sets.shape[0] > np.iinfo(sp.wt.dtype).max - 8:
            return  # (too many distinct co-writer sets: keep the last writer; conservative)
        codes = np.array([self._set_id(row[row >= 0]) for row in sets], np.int64)
        sp.wt[units] = codes[which.reshape(-1)].astype(sp.wt.dtype)

    def _check_busy(self, sp: _Space, busy: np.ndarray, ix, t, span, verb: str, red: int = 0) -> np.ndarray | None:
        """Report, per asynchronous copy in flight on units of this access, the first such unit: read or written
        (``verb``) before the copy completed (its destination) or before it read them (its source).  The units in
        flight (a mask in the access's unit order), None when there are none (the race scans then skip them:
        their hazard is this one).  ``red``: the access is a reduction of that code, which a copy in flight that is
        the same reduction does not conflict with (:meth:`write`)."""
        ops = _get(busy, ix)
        hit = ops >= 0
        if red and hit.any():
            hit &= np.asarray(self._async_red, np.int64)[np.where(hit, ops, 0)] != red
        if not hit.any():
            return None
        for i in _first_per(ops, hit):
            op = int(ops[i])
            what, at, until = self._async_ops[op]
            ti = int(np.broadcast_to(_arr(t), ops.shape)[i])
            u = _at(ix, int(i))
            msg = async_race_text(sp.label, sp.owner(u), self.tname(ti), verb, sp.where(u), _line(span), what,
                                  _line(at), until, self.issuing)
            kind = "async-read" if verb == "reads" else "async-write"
            self._hazard(kind, (kind, at, span, sp.name), msg, span, at, sp.name, sp.element(_at(ix, int(i))),
                         (ti, ti))
        return hit

    def _reducers(self, sp: _Space, ix, t, red: int, new):
        """The writer entries a write by ``t`` leaves (``new``: the plain ones), and every unit's reduction code
        set to ``red`` (0: a plain write).  A reduction (``cp.reduce.async.bulk.tensor``, PTX ISA 9.0
        §9.7.9.25.5.3: each element a ``.relaxed.gpu`` atomic read-modify-write) over units whose last writes are the
        same reduction keeps, with ``t``, those of their writers not ordered before ``t`` — a writer set that a
        later plain access must be ordered after, member or not (:meth:`_check_writer`)."""
        if sp.red is None:
            sp.red = np.zeros(sp.wt.size, np.int8)
        if red:
            tt = np.asarray(_arr(t), np.int64).reshape(-1)
            if tt.size and bool((tt != tt[0]).any()):
                raise ValueError("a reduction's write is one thread's access")  # (the caller's bug, not the user's)
            t0 = int(tt[0]) if tt.size else 0
            cur = _get(sp.wt, ix)
            same = (_get(sp.red, ix) == red) & (cur != _NONE) & (cur != t0)
            if same.any():
                out = np.array(np.broadcast_to(np.asarray(_arr(new), sp.wt.dtype), cur.shape))
                wa = _get(sp.wa, ix)
                pairs = np.unique(np.stack([cur[same].astype(np.int64), wa[same].astype(np.int64)]), axis=1)
                for w, a in pairs.T.tolist():
                    members = [w] if w >= 0 else np.nonzero(self._sets[-2 - w])[0].tolist()
                    stamp = int(self._aid_stamp[a])
                    keep = [m for m in members if m != t0 and max(int(self.known[t0, m]), self._floor) <= stamp]
                    if keep and len(self._sets) < np.iinfo(sp.wt.dtype).max - 8:
                        out[same & (cur == w) & (wa == a)] = self._set_id(np.array(keep + [t0], np.int64))
                new = out
        _set(sp.red, ix, red)
        return new

    def _check_late(self, sp: _Space, ix, t, span) -> None:
        """Report a write of units an asynchronous copy read, where the write is not ordered after the mbarrier
        phase that alone observes the read's completion (:meth:`read_observed`): the first such unit per copy.  The
        written units are then plain again (a later write is ordered after this one, or races with it)."""
        late = sp.late_r
        assert late is not None  # (the caller's test)
        ents = _get(late, ix)
        hit = ents >= 0
        if not hit.any():
            return
        tt = np.broadcast_to(np.asarray(_arr(t), np.int64), ents.shape)
        for e in np.unique(ents[hit]).tolist():
            col, stamp, at, what = self._late[e]
            sel = np.flatnonzero(ents == e)
            bad = np.maximum(self.known[tt[sel], col], self._floor) <= stamp
            if bad.any():
                i = int(sel[int(np.argmax(bad))])
                ti = int(tt[i])
                msg = (f"hazard: {sp.label} race on {sp.name}: {self.tname(ti)} overwrites {sp.where(_at(ix, i))} at "
                       f"{_line(span)} that {what} (write after read)")
                self._hazard("async-write", ("async-write", at, span, sp.name), msg, span, at, sp.name,
                             sp.element(_at(ix, i)), (ti, ti))
        _set(late, ix, -1)

    def _who(self, t: int) -> str:
        """``thread 5``, or the asynchronous copies of an mbarrier (its clock column)."""
        name = self._agent_name.get(t)
        return self.tname(t) if name is None else f"the TMA copies completing on mbarrier {name}"

    def _race(self, kind, sp: _Space, u, t, span, other, other_span, same_call=False) -> None:
        a, b = _line(span), _line(other_span)
        where, name = sp.where(u), sp.owner(u)
        if kind == "raw" and other in self._agent_name:
            copy, cite = ("tcgen05.cp", "§9.7.16.6.1") if sp.name == "TMEM" else ("TMA copy", "§9.7.13.15.16")
            msg = (f"hazard: {sp.label} race on {name}: {self.tname(t)} reads {where} at {a} that the {copy} at "
                   f"{b} "
                   f"wrote, without a `wait {self._agent_bar[other]} phase P` that observed its completion "
                   f"(read after write; a `cta_sync` with the issuing thread does not order it, only the waiters "
                   f"of the phase see the bytes, PTX ISA 9.0 {cite})")
        elif kind == "raw":
            msg = (f"hazard: {sp.label} race on {name}: {self.tname(t)} reads {where} at {a} that "
                   f"{self.tname(other)} "
                   f"wrote at {b} with no synchronisation in between (read after write)")
        elif kind == "war":
            who = self.tname(other) if other >= 0 else "other threads"
            msg = (f"hazard: {sp.label} race on {name}: {self.tname(t)} writes {where} at {a} that {who} "
                   f"read at {b} with no synchronisation in between (write after read)")
        elif same_call:
            msg = (f"hazard: {sp.label} race on {name}: {self.tname(other, t)} write different values to "
                   f"{where} at {a} (write after write)")
        else:
            who = self._who(other) if sp.name != "TMEM" or other not in self._agent_name else \
                f"the tcgen05.cp completing on mbarrier {self._agent_name[other]}"
            msg = (f"hazard: {sp.label} race on {name}: {self.tname(t)} writes {where} at {a} that "
                   f"{who} also wrote at {b} with no synchronisation in between (write after write)")
        if sp.name == "TMEM":
            msg += " — on a GPU the two tcgen05 operations may run in either order"
        elif other in self._agent_name:
            msg += f" — wait on mbarrier {self._agent_name[other]} for the phase the copy completes first"
        else:  # (threads of two CTAs: only the cluster barrier orders them, PTX ISA 9.0 §9.7.13.3)
            sync = "cluster_sync" if self.cluster > 1 and 0 <= other < self.n and \
                t // self.cta != other // self.cta else "cta_sync"
            msg += f"; the simulator runs ops in program order, a GPU does not — add `{sync}` after {b}"
        key = (kind, sp.name, other_span, span)
        self._hazard(kind, key, msg, span, other_span, sp.name, sp.element(u), (t, other))

    def _uninit(self, name, label, where, t, span) -> None:
        verb = "start" if label == "registers" else "starts"
        msg = (f"hazard: uninitialised read: {self.tname(t)} reads {where} at {_line(span)}, which nothing "
               f"initialised "
               f"(never written, or written from uninitialised data; {label} {verb} as garbage, "
               f"{GARBAGE.view(np.uint32)[0]:#x} here)")
        self._hazard("uninit", ("uninit", name, span), msg, span, None, name, where, (t, t))

    # ------------------------------------------------------------------ registers
    def _is_range(self, tids, rows: np.ndarray) -> bool:
        """Are ``rows`` (``tids`` flat) consecutive, ascending?  Remembered per thread array (the executor passes
        the same ones again and again)."""
        hit = self._ranges.get(id(tids))
        if hit is not None and hit[0] is tids:
            return hit[1]
        ok = bool(np.all(np.diff(rows) == 1))
        if isinstance(tids, np.ndarray) and len(self._ranges) < 256:
            self._ranges[id(tids)] = (tids, ok)  # (kept: its id stays its own)
        return ok

    def _reg_norm(self, buf: ir.Buffer, off, tids, nbytes: int):
        """A register access as (index into the ``(threads, units)`` arrays, item shape, units per item,
        locate: flat position -> (thread, unit))."""
        unit = self.unit(buf)
        k = nbytes // unit
        if k * unit != nbytes:
            raise ValueError(f"an access of {nbytes} bytes is not a whole number of {unit}-byte units")
        if isinstance(off, Run):  # every thread of tids: the run's items of its registers (a block)
            u0 = off.start // unit
            cols = slice(u0, u0 + off.count * k)
            rows_a = np.asarray(tids, np.int64).reshape(-1)
            m = rows_a.size
            rows: slice | np.ndarray = rows_a
            if m and int(rows_a[-1]) - int(rows_a[0]) == m - 1 and (m == 1 or self._is_range(tids, rows_a)):
                rows = slice(int(rows_a[0]), int(rows_a[0]) + m)
            w = off.count * k

            def locate(i: int) -> tuple[int, int]:
                return int(rows_a[i // w]), u0 + i % w
            return (rows, cols), (m, off.count), k, locate
        u, t, shape = _item_units(off, tids, unit, k)

        def locate_a(i: int) -> tuple[int, int]:
            return int(t[i]), int(u[i])
        return (t, u), shape, k, locate_a

    def _in_flight(self, buf: ir.Buffer, p, state, locate, span, paid, at, kind: str, verb: str, wait: str,
                   what: str) -> None:
        """Report, for every tcgen05.{wait} that left register units of ``p`` (in-flight states, the units ``at``)
        in ``state``, the first of them: used (``verb``) at ``span`` before ``wait::{wait}`` while that instruction
        ``what`` (PTX ISA 9.0 §9.7.16.8.5) — one report per pair of statements, however many one call covers."""
        hit = p == state
        if not hit.any():
            return
        for i in _first_per(paid[at].reshape(-1), hit.reshape(-1)):
            t, u = locate(i)
            other = self._aid_span[int(paid[t, u])]
            word = u * self.unit(buf) // 4
            msg = (f"hazard: registers of {buf.name} are {verb} at {_line(span)} before `wait {wait}`; the "
                   f"tcgen05.{wait} at {_line(other)} {what} (PTX ISA 9.0 §9.7.16.8.5) ({self.tname(t)}, "
                   f"register {word})")
            self._hazard(kind, (kind, buf.name, other, span), msg, span, other, buf.name, word, (t, t))

    def _reg_read(self, buf: ir.Buffer, at, locate, span) -> np.ndarray:
        init, pend, paid = self.regs[buf.name]
        bits = init[at]
        if buf.name in self._in_flight_regs:  # (a tcgen05.ld/st has registers of this buffer in flight)
            self._in_flight(buf, pend[at], _LD, locate, span, paid, at, "ld-read", "read", "ld",
                            "that writes them is asynchronous")
        self.report.accesses += int(bits.size) * self.unit(buf)
        return bits.reshape(-1)

    def _reg_write(self, buf: ir.Buffer, at, locate, span, init) -> None:
        ini, pend, paid = self.regs[buf.name]
        p = pend[at] if buf.name in self._in_flight_regs else None
        if p is not None and p.any():
            self._in_flight(buf, p, _LD, locate, span, paid, at, "ld-overwrite", "overwritten", "ld",
                            "writes them asynchronously")
            self._in_flight(buf, p, _ST, locate, span, paid, at, "st-overwrite", "overwritten", "st",
                            "reads them asynchronously")
        shape = ini[at].shape if p is None else p.shape
        ini[at] = init if isinstance(init, bool) else np.asarray(init).reshape(shape)
        self.report.accesses += math.prod(shape) * self.unit(buf)

    # ------------------------------------------------------------------ the interface
    def tracks(self, buf: ir.Buffer | None) -> bool:
        """Does an access to ``buf`` matter?  False for a global buffer the kernel never writes (and the TMEM
        address slot): initialised and race-free, so a caller may skip computing its offsets."""
        return buf is None or buf.scope == "local" or buf.name in self.spaces

    def prepare(self, buf: ir.Buffer | None, off: np.ndarray | Run, tids, nbytes: int | None = None) -> Prepared:
        """The access ``off`` by ``tids`` (as :meth:`read`) normalised once, for :meth:`read`/:meth:`write` to take
        in place of ``off`` (``tids`` then ignored) whenever the same access happens again.

        Raises
        ------
        ValueError
            As :meth:`read`.
        """
        nb = self.unit(buf) if nbytes is None else nbytes
        if buf is not None and buf.scope == "local":
            at, shape, k, locate = norm = self._reg_norm(buf, off, tids, nb)
            if isinstance(at[0], slice) or not at[0].size:
                return Prepared(buf.name, nb, norm, None, True)
            t, u = at
            order = np.lexsort((u, t))
            ts, us = t[order], u[order]
            t0, u0 = int(ts[0]), int(us[0])
            cols = int(us[-1]) - u0 + 1
            rows = ts.size // cols
            if rows * cols == ts.size and int(ts[-1]) - t0 == rows - 1 and \
                    np.array_equal(ts.reshape(rows, cols), np.broadcast_to(np.arange(t0, t0 + rows)[:, None],
                                                                         (rows, cols))) and \
                    np.array_equal(us.reshape(rows, cols), np.broadcast_to(np.arange(u0, u0 + cols), (rows, cols))):
                def locate_block(i: int) -> tuple[int, int]:
                    return t0 + i // cols, u0 + i % cols
                block = (slice(t0, t0 + rows), slice(u0, u0 + cols))
                return Prepared(buf.name, nb, (block, shape, k, locate_block), None, True, order)
            pairs = t.astype(np.int64) * (int(u.max()) + 1) + u
            return Prepared(buf.name, nb, norm, None, distinct(pairs))
        sp = self.tmem if buf is None else self.spaces.get(buf.name)
        if sp is None:
            return Prepared(buf.name if buf is not None else "TMEM", nb,
                            (None, None, (off.count,) if isinstance(off, Run) else np.shape(off), 0), _EMPTY, True)
        norm = self._norm(sp.unit, off, tids, nb)
        ix, t, shape, k = norm
        if isinstance(ix, slice) or not ix.size:
            return Prepared(sp.name, nb, norm, _span_of(ix), True, space=sp)
        order = np.argsort(ix, kind="stable")
        sx = ix[order]
        lo = int(sx[0])
        ts = t if isinstance(t, int) else np.broadcast_to(_arr(t), ix.shape)[order].astype(self._tdt)
        if int(sx[-1]) - lo == sx.size - 1 and np.array_equal(sx, np.arange(lo, lo + sx.size)):
            return Prepared(sp.name, nb, (slice(lo, lo + sx.size), ts, shape, k), (lo, lo + sx.size), True, order,
                            space=sp)
        if sp is self.tmem:  # a rectangle of lanes x columns (a warpgroup's tcgen05.ld/st)
            w = tc.TMEM_COLS
            r0, c0 = divmod(lo, w)
            nr = int(sx[-1]) // w - r0 + 1
            nc = sx.size // nr
            if nr * nc == sx.size and c0 + nc <= w and np.array_equal(
                    sx, ((r0 + np.arange(nr))[:, None] * w + c0 + np.arange(nc)[None, :]).reshape(-1)):
                blk = _Block(r0, nr, c0, nc, w)
                return Prepared(sp.name, nb, (blk, ts, shape, k), blk.span(), True, order, space=sp)
        return Prepared(sp.name, nb, norm, _span_of(ix), distinct(ix), space=sp)

    def read(self, buf: ir.Buffer | None, off: np.ndarray | Run | Prepared, tids, span: Span | None,
             nbytes: int | None = None, *, reduce: str | None = None) -> np.ndarray:
        """Items of ``nbytes`` bytes (default: the buffer's :meth:`unit`) of ``buf`` read by threads ``tids``.

        ``off`` is the byte offset of each item (``int64``, ``tids`` of the same shape) or a :class:`Run`
        (Tracker notes).  ``buf`` None is TMEM (``off = (lane * 512 + col) * 4``); for a local buffer
        ``off`` is the byte offset in thread ``tids[i]``'s part of it.  Reports read-after-write races,
        reads of registers an in-flight ``tcgen05.ld`` writes, and reads of uninitialised elements.

        ``reduce``: the read half of a reduction's atomic read-modify-write of a shared or global buffer (the
        operation's name, as :meth:`write`'s): it is checked against earlier writes other than the same reduction
        and is not recorded as a read (the write half is what a later access conflicts with).

        Returns
        -------
        numpy.ndarray of bool
            One per item (the shape of ``off``; a Run: ``(count,)``, on a local buffer ``(len(tids), count)``):
            is every byte of the item initialised?  A broadcast ``True`` when nothing can be uninitialised.

        Raises
        ------
        ValueError
            ``nbytes`` is not a whole number of the buffer's units (a caller's bug, not the user's).
        """
        prep = off if isinstance(off, Prepared) else None
        if prep is not None and prep.space is not None:  # (the commonest call: a prepared access of a space)
            sp = prep.space
            ix, t, shape, k = prep.norm
            n = prep.count
        else:
            nb = prep.nbytes if prep is not None else self.unit(buf) if nbytes is None else nbytes
            if buf is not None and buf.scope != "local" and buf.name not in self.spaces:
                # a buffer the kernel never writes (or the TMEM address slot): initialised, nothing to race with
                return _true(prep.norm[2] if prep is not None else (off.count,) if isinstance(off, Run) else
                             np.shape(off))
            if buf is not None and buf.scope == "local":
                self._access_id(span)
                at, shape, k, locate = prep.norm if prep is not None else self._reg_norm(buf, off, tids, nb)
                init_u = self._reg_read(buf, at, locate, span)
                if _all_true(init_u):
                    return _true(shape) if prep is None else prep.true
                t, u = locate(int(np.argmin(init_u)))
                self._uninit(buf.name, "registers", f"register word {u * self.unit(buf) // 4} of {buf.name}", t,
                             span)
                return self._per_item(init_u if prep is None else prep.to_access(init_u), shape, k)
            sp = self.tmem if buf is None else self.spaces[buf.name]
            ix, t, shape, k = prep.norm if prep is not None else self._norm(sp.unit, off, tids, nb)
            n = (ix.stop - ix.start) if isinstance(ix, slice) else ix.size
        init_u = self._space_read(sp, ix, t, n, span, self._access_id(span), prep.rng if prep is not None else None,
                                  prep is not None and prep.unique, red=self._red(reduce))
        if init_u is None or _all_true(init_u):
            return _true(shape) if prep is None else prep.true
        return self._space_uninit(sp, ix, t, init_u, span, prep, shape, k)

    def _space_uninit(self, sp: _Space, ix, t, init_u: np.ndarray, span, prep: Prepared | None, shape, k: int):
        """Report the first uninitialised unit a read of ``sp`` met; the read's init bits per item."""
        i = int(np.argmin(init_u))
        ti = t if isinstance(t, int) else int(_arr(t)[i])
        self._uninit(sp.name, {"TMEM": "TMEM"}.get(sp.name, "shared memory"), sp.where(_at(ix, i)), ti, span)
        return self._per_item(init_u if prep is None else prep.to_access(init_u), shape, k)

    def write(self, buf: ir.Buffer | None, off: np.ndarray | Run | Prepared, tids, span: Span | None,
              init: np.ndarray | bool = True, *, value: np.ndarray | None = None, nbytes: int | None = None,
              init_bytes: np.ndarray | None = None, reduce: str | None = None) -> None:
        """Items of ``buf`` written by threads ``tids`` (as :meth:`read`).

        ``reduce``: the write is a reduction (``cp.reduce.async.bulk.tensor`` ``.add``, ``.min``, ...: each element
        a ``.relaxed.gpu`` atomic read-modify-write, PTX ISA 9.0 §9.7.9.25.5.3) of one thread: two writes of the
        same reduction do not race (they commute); any other access of those units is ordered with each of them
        as with a plain write — a later plain read after every one of them.

        ``init_bytes``, in place of ``init``: whether each byte of each item is initialised (the items' shape plus
        a last axis of ``nbytes``; :meth:`init_bytes` of the copy's source), for a copy that moves bytes as they are
        (a unit is initialised when all of its bytes are).

        ``init`` says whether each stored item was initialised (one bool, or one per item: poison
        propagates).  ``value``, the stored items (an array of one entry per item of any ``nbytes``-byte
        dtype, or ``uint8`` with a last axis of ``nbytes``), lets identical broadcast stores of one statement go
        unreported (module docstring); without it, two threads writing one element in the same call
        race.  Reports write-after-write and write-after-read races and overwrites of registers
        an in-flight ``tcgen05.ld``/``tcgen05.st`` uses.
        """
        prep = off if isinstance(off, Prepared) else None
        if prep is not None and prep.space is not None:  # (the commonest call: a prepared access of a space)
            sp = prep.space
            ix, t, shape, k = prep.norm
            n = prep.count
        else:
            nb = prep.nbytes if prep is not None else self.unit(buf) if nbytes is None else nbytes
            if buf is not None and buf.scope == "local":
                self._access_id(span)
                at, shape, k, locate = prep.norm if prep is not None else self._reg_norm(buf, off, tids, nb)
                ini = self._unit_bits(init, init_bytes, math.prod(shape), k, self.unit(buf))
                self._reg_write(buf, at, locate, span, ini if prep is None else prep.to_range(ini))
                return
            found = self.tmem if buf is None else self.spaces.get(buf.name)
            if found is None:
                return
            sp = found
            ix, t, shape, k = prep.norm if prep is not None else self._norm(sp.unit, off, tids, nb)
            n = (ix.stop - ix.start) if isinstance(ix, slice) else ix.size
        unique = prep is not None and prep.unique
        val = None
        if value is not None and not unique and not isinstance(ix, slice):  # (only a same-call duplicate needs them)
            val = _unit_values(value, math.prod(shape) * k, sp.unit)
        ini = self._unit_bits(init, init_bytes, math.prod(shape), k, sp.unit)
        self._space_write(sp, ix, t, n, span, self._access_id(span), ini if prep is None else prep.to_range(ini), val,
                          prep.rng if prep is not None else None, unique, red=self._red(reduce))

    def _red(self, reduce: str | None) -> int:
        """The code of reduction ``reduce`` (0: None, a plain access)."""
        return 0 if reduce is None else self._red_codes.setdefault(reduce, len(self._red_codes) + 1)

    def event(self, kind: str, tids: np.ndarray, span: Span | None, **info) -> None:
        """A synchronising or asynchronous event of threads ``tids``, in program order.

        Kinds
        -----
        ``cta_sync``
            ``bar.sync`` of the active threads (PTX ISA 9.0 §9.7.13.1): joins their clocks.
        ``tcgen05.ld``, ``tcgen05.st``
            Issue of ``tcgen05.ld``/``.st`` by the warps of ``tids`` (PTX ISA 9.0 §9.7.16.8.3-4); info
            ``local`` (the register buffer), ``regs`` (byte offsets of 32-bit register words, ``(len(tids), k)``)
            and ``cells`` (TMEM byte offsets ``(lane * 512 + col) * 4`` of 32-bit cells, ``(len(tids), k)``,
            thread ``tids[i]``'s row), for a st optionally ``values`` (the stored words, ``uint32``, same shape;
            as :meth:`write`'s ``value``), optionally ``prepared`` (:meth:`tcgen_access` of them, kept by the
            caller for the next run of the same instruction).  The tracker does the accesses itself: ld reads the
            cells and leaves the registers in flight until ``wait_ld``; st reads the registers (in flight until
            ``wait_st``) and writes the cells.
        ``wait_ld``, ``wait_st``
            ``tcgen05.wait::ld`` / ``::st`` of ``tids`` (PTX ISA 9.0 §9.7.16.6).
        ``alloc``, ``dealloc``, ``relinquish``
            TMEM allocation events of the issuing warp (PTX ISA 9.0 §9.7.16.7.1): allocated cells start
            uninitialised; a dealloc with a ``tcgen05.st`` in flight is a hazard.
        """
        hit = self._event_tids.get(id(tids))
        if hit is not None and hit[0] is tids:  # (the executor passes the same thread arrays again and again)
            _, tids, t32 = hit
        else:
            given = tids
            tids = np.asarray(tids, np.int64).reshape(-1)
            if tids.size > 1 and not bool(np.all(tids[1:] > tids[:-1])):  # (the executor's are sorted and unique)
                tids = np.unique(tids)
            t32 = tids.astype(np.int32)
            t32.flags.writeable = False
            if isinstance(given, np.ndarray) and len(self._event_tids) < 256:
                self._event_tids[id(given)] = (given, tids, t32)  # (kept: its id stays its own)
        cta = info.pop("cta", None) if info else None  # (in a cluster: the CTA where the event takes effect)
        ev = SyncEvent(kind, self.G, span, t32, {k: v for k, v in info.items() if isinstance(v, (int, str))}
                       if info else {}, *((cta,) if cta is not None else ()))
        if len(self.report.timeline) < TIMELINE_CAP:
            self.report.timeline.append(ev)
        else:
            self.report.timeline_dropped += 1
        if kind == "cta_sync":
            self._join(tids)
            self._cta_sync_span = span
        elif kind == "cluster_sync":  # (every thread of every CTA: PTX ISA 9.0 §9.7.13.3)
            self._join(tids)
            self.cluster_syncs.append(self.G)
        elif kind in ("tcgen05.ld", "tcgen05.st"):
            self._tcgen(kind, span, info["local"], np.asarray(info["regs"], np.int64),
                        np.asarray(info["cells"], np.int64), np.asarray(info.get("threads", tids), np.int64),
                        info.get("values"), info.get("prepared"))
        elif kind in ("wait_ld", "wait_st"):
            state = _LD if kind == "wait_ld" else _ST
            t0 = int(tids[0]) if tids.size else 0
            dense = tids.size and int(tids[-1]) - t0 == tids.size - 1
            for name in list(self._in_flight_regs):
                p = self.regs[name][1]
                rows = p[t0:t0 + tids.size] if dense else p[tids]  # (a view where the threads are a range)
                if rows.any():
                    rows[rows == state] = 0
                    if not dense:
                        p[tids] = rows
                if not p.any():
                    self._in_flight_regs.discard(name)
            flight = self._ld if kind == "wait_ld" else self._st  # the cells still in flight, by issue
            if flight.cells:
                flight.wait(tids, t0, bool(dense))
        elif kind == "dealloc":
            left = self._st.owner != _NONE
            if left.any():
                st = self._aid_span[int(self._st.aid[int(np.argmax(left))])]
                msg = (f"hazard: TMEM is freed at {_line(span)} while the tcgen05.st at {_line(st)} has not been "
                       f"waited for (`wait st`)")
                self._hazard("st-dealloc", ("st-dealloc", st), msg, span, st, "TMEM", 0, (-1, -1))
        elif kind == "alloc":
            cols = info.get("cols")
            if cols is not None:
                c0, nc = cols
                lanes = np.arange(tc.TMEM_LANES)[:, None] * tc.TMEM_COLS
                self.tmem.init[(lanes + np.arange(c0, c0 + nc)[None, :]).reshape(-1)] = False

    def tcgen_access(self, local: ir.Buffer, regs: np.ndarray, cells: np.ndarray,
                     tids: np.ndarray) -> tuple[Prepared, Prepared]:
        """The register and TMEM sides of a tcgen05.ld/st (as the ``tcgen05.ld`` event's ``regs``, ``cells``:
        byte offsets ``(len(tids), k)``) prepared once (:meth:`prepare`), for the event's ``prepared`` whenever
        the same instruction runs again."""
        tids = np.asarray(tids, np.int64).reshape(-1)
        t_r = np.broadcast_to(tids[:, None], regs.shape)
        r0 = regs[0] if regs.shape[0] else regs.reshape(-1)
        if r0.size > 1 and int(r0[-1]) - int(r0[0]) == 4 * (r0.size - 1) and bool(np.all(np.diff(r0) == 4)) \
                and bool(np.all(regs == r0)):  # the same registers in every thread: a block of slices
            reg = self.prepare(local, Run(int(r0[0]), r0.size, 4), tids, 4)
        else:
            reg = self.prepare(local, regs, t_r, 4)
        return reg, self.prepare(None, cells, np.broadcast_to(tids[:, None], cells.shape), 4)

    def _tcgen(self, kind, span, local: ir.Buffer, regs, cells, tids, values=None, prepared=None) -> None:
        """tcgen05.ld / tcgen05.st issue: regs, cells are byte offsets of 32-bit words ``(len(tids), k)`` (thread
        ``tids[i]``'s row), ``values`` the words a st stores (same shape; identical broadcast stores go
        unreported); ``prepared``: :meth:`tcgen_access`'s answer for them."""
        aid = self._access_id(span)
        reg, cel = prepared if prepared is not None else self.tcgen_access(local, regs, cells, tids)
        at = reg.norm[0]  # (the register units, in the prepared access's order)
        cix, cthreads = cel.norm[0], cel.norm[1]  # (the TMEM cells and their threads, likewise)
        _, pend, paid = self.regs[local.name]
        if self._cp_landings:
            self._cp_fence(kind, cix, cthreads, span)
        if kind == "tcgen05.ld":
            self._st_in_flight(cix, cthreads, span, "tcgen05.ld")
            init = self.read(None, cel, None, span)
            # the registers are written at issue and in flight until wait::ld
            if init.size == regs.size:
                ini = init
            else:  # (cells and registers pair up per thread; any other pairing: all-or-nothing per thread)
                ini = np.repeat(init.reshape(tids.size, -1).all(1), regs.shape[1]).reshape(regs.shape)
            self.write(local, reg, None, span, ini)
            pend[at] = _LD
            paid[at] = aid
            self._in_flight_regs.add(local.name)
            self._ld.issue(cix, cthreads, aid)
        else:
            init = self.read(local, reg, None, span)
            if init.size == cells.size:
                ini = init
            else:
                ini = np.repeat(init.reshape(tids.size, -1).all(1), cells.shape[1]).reshape(cells.shape)
            self.write(None, cel, None, span, ini, value=None if cel.unique else values)
            if isinstance(at, tuple) and all(isinstance(a, slice) for a in at):  # (a block of registers: a view)
                v = pend[at]
                v[v != _LD] = _ST  # (a read of in-flight ld registers: reported)
            else:
                pend[at] = np.where(pend[at] == _LD, _LD, _ST)
            paid[at] = aid
            self._in_flight_regs.add(local.name)
            self._st.issue(cix, cthreads, aid)

    def _st_in_flight(self, cix, cthreads, span: Span | None, what: str) -> None:
        """Report the TMEM cells ``cix`` (cell indices ``lane * 512 + col``, as :meth:`_tcgen`'s; ``cthreads`` the
        accessing thread of each) that a ``tcgen05.st`` still has in flight — its issuing thread has not run
        ``tcgen05.wait::st`` (PTX ISA 9.0 §9.7.16.8.5: only that wait says the st's writes are done; a barrier
        orders the threads, not the st's completion) — one report per st and accessing statement (:func:`_first_per`).
        ``what``: the access, ``"tcgen05.ld"`` (it may read the old values: read after write) or ``"tcgen05.cp"``
        (an asynchronous write of the cells: the two writes may land in either order, write after write)."""
        for cell, tci, owner, aid in self._st.hits(cix, cthreads):
            st = self._aid_span[aid]
            lane, col = divmod(cell, tc.TMEM_COLS)
            if what == "tcgen05.ld":
                kind = "st-read"
                msg = (f"hazard: the tcgen05.ld at {_line(span)} reads TMEM columns the tcgen05.st at "
                       f"{_line(st)} writes, before `wait st` (PTX ISA 9.0 §9.7.16.8.5) (thread {tci}, lane "
                       f"{lane}, column {col})")
            else:
                kind = "st-write"
                msg = (f"hazard: TMEM write after write: the {what} at {_line(span)} ({self.tname(tci)}) writes TMEM "
                       f"lane {lane} column {col} that the tcgen05.st at {_line(st)} still has in flight: "
                       f"{self.tname(owner)} has not run `wait st` since (PTX ISA 9.0 §9.7.16.8.5; a barrier "
                       f"orders the threads, not the st's completion), so the two writes may land in either order "
                       f"— add `wait st` after L{st.line if st else 0}, before the barrier that orders it before "
                       f"L{span.line if span else 0}")
            self._hazard(kind, (kind, st, span), msg, span, st, "TMEM", (lane, col), (tci, owner))

    def tmem_async_write(self, cells: np.ndarray, thread: int, span: Span | None, what: str) -> None:
        """An asynchronous write of the TMEM ``cells`` (indices ``lane * 512 + col``) issued by ``thread`` at
        ``span`` (``what``: ``"tcgen05.cp"``, PTX ISA 9.0 §9.7.16.9.1): a cell a ``tcgen05.st`` still has in
        flight is a write-after-write hazard at both lines (:meth:`_st_in_flight`), however the threads are
        ordered; the race with earlier accesses is :meth:`write`'s.  (The converse, a st over cells the copy has
        in flight, is :meth:`write`'s in-flight check, :meth:`in_flight`.)"""
        if not self._st.cells and not self._ld.cells:
            return
        cix = np.asarray(cells, np.int64).reshape(-1)
        self._st_in_flight(cix, int(thread), span, what)
        self._ld_in_flight(cix, int(thread), span, what)

    def _ld_in_flight(self, cix, thread: int, span: Span | None, what: str) -> None:
        """Report the TMEM cells ``cix`` that an asynchronous write (``what``, a ``tcgen05.cp`` issued by
        ``thread``) targets while a ``tcgen05.ld`` may still be reading them: its issuing thread has not run
        ``tcgen05.wait::ld`` (PTX ISA 9.0 §9.7.16.8.5: the ld's reads are complete only at the wait; a barrier
        orders the threads, not the ld's completion) — a write after read at both lines, one report per ld and
        writing statement."""
        for cell, _, owner, aid in self._ld.hits(cix, thread):
            ld = self._aid_span[aid]
            lane, col = divmod(cell, tc.TMEM_COLS)
            msg = (f"hazard: TMEM write after read: the {what} at {_line(span)} ({self.tname(thread)}) writes TMEM "
                   f"lane {lane} column {col} that the tcgen05.ld at {_line(ld)} may still be reading: "
                   f"{self.tname(owner)} has not run `wait ld` since (PTX ISA 9.0 §9.7.16.8.5; a barrier orders "
                   f"the threads, not the ld's completion), so the ld's registers may receive the copy's values "
                   f"— add `wait ld` after L{ld.line if ld else 0}, before the barrier that orders it before "
                   f"L{span.line if span else 0}")
            self._hazard("ld-write", ("ld-write", ld, span), msg, span, ld, "TMEM", (lane, col), (thread, owner))

    def tcgen_fence(self, tids: np.ndarray, kind: str) -> None:
        """``tcgen05.fence::after_thread_sync`` (``kind`` ``"after_thread_sync"``) of ``tids``: their later tcgen05
        operations are ordered after what they synchronised with so far (PTX ISA 9.0 §9.7.16.6.4); the tracker keeps
        what each knew then (:meth:`_cp_fence`).  ``before_thread_sync`` orders earlier tcgen05 operations before a
        later synchronisation; the simulator completes tcgen05.ld/st at issue and tcgen05.cp at its commit's
        arrive, so it changes nothing here."""
        if kind != "after_thread_sync":
            return
        tids = np.asarray(tids, np.int64).reshape(-1)
        rows = np.maximum(self.known[tids], self._floor)
        for t, row in zip(tids.tolist(), rows):
            self._tc_fenced[t] = row

    def cp_landed(self, cells: np.ndarray, col: int, span: Span | None) -> None:
        """A ``tcgen05.cp`` at ``span`` wrote the TMEM ``cells`` (indices ``lane * 512 + col``) as it completed on the
        mbarrier of clock column ``col`` (:attr:`agents`): a later ``tcgen05.ld``/``st`` of them must be ordered
        after that completion *and* after the accessing thread's ``tcgen05.fence::after_thread_sync`` that follows
        its synchronisation (:meth:`_cp_fence`)."""
        self._cp_landings.append((int(col), self.G, span))
        self.cp_cell[np.asarray(cells, np.int64).reshape(-1)] = len(self._cp_landings) - 1

    def _cp_fence(self, kind: str, cix, cthreads, span: Span | None) -> None:
        """A tcgen05.ld/st of cells a tcgen05.cp wrote: each thread ordered after the copy's completion (the race scan
        reports the others) must also have executed ``tcgen05.fence::after_thread_sync`` after it learnt of it (PTX
        ISA 9.0 §9.7.16.6.4: the wait or barrier orders the thread, the fence orders its later tcgen05 ops); the
        first such cell per copy and statement.  A st overwrites the cells: they are the copy's no more."""
        ents = _get(self.cp_cell, cix)
        hit = ents >= 0
        if not hit.any():
            return
        tt = np.broadcast_to(np.asarray(_arr(cthreads), np.int64), ents.shape)
        for e in np.unique(ents[hit]).tolist():
            col, stamp, at = self._cp_landings[e]
            sel = np.flatnonzero(ents == e)
            ts = tt[sel]
            ordered = np.maximum(self.known[ts, col], self._floor) > stamp
            fenced = np.array([int(self._tc_fenced[t][col]) > stamp if t in self._tc_fenced else False
                               for t in np.unique(ts).tolist()])
            bad_t = set(np.unique(ts)[~fenced].tolist())
            bad = ordered & np.isin(ts, list(bad_t))
            if not bad.any():
                continue
            i = int(sel[int(np.argmax(bad))])
            ti = int(tt[i])
            lane, c = divmod(_at(cix, i), tc.TMEM_COLS)
            w = self._acq_span[ti]
            via = f"the wait at {_line(w)}" if w is not None else f"the cta_sync at {_line(self._cta_sync_span)}"
            verb = "reads" if kind == "tcgen05.ld" else "writes"
            msg = (f"hazard: {kind} at {_line(span)} {verb} TMEM lane {lane} column {c} written by tcgen05.cp at "
                   f"{_line(at)}: {via} observed the commit, but no tcgen05.fence::after_thread_sync orders the "
                   f"{kind.split('.')[1]} after it ({self.tname(ti)}; PTX ISA 9.0 §9.7.16.6.4)")
            self._hazard("tcgen05-fence", ("tcgen05-fence", at, span), msg, span, at, "TMEM", (lane, c), (ti, ti))
        if kind == "tcgen05.st":
            _set(self.cp_cell, cix, -1)

    # ------------------------------------------------------------------ asynchronous copies and mbarriers
    def async_op(self, what: str, span: Span | None, until: str, reduce: str | None = None) -> int:
        """Register an asynchronous copy for the in-flight messages: ``what`` it does to the bytes (``"the cp.async
        writes"``), its ``span``, and ``until`` when that is over (``"its `wait_group` returned"``); its id.
        ``reduce``: the copy writes as that reduction (a reduction of the same operation issued while it is in
        flight on the bytes does not conflict with it, :meth:`write`)."""
        self._async_ops.append((what, span, until))
        self._async_red.append(self._red(reduce))
        return len(self._async_ops) - 1

    def _async_units(self, buf: ir.Buffer | None, off: np.ndarray, nbytes: int
                     ) -> tuple[_Space | None, np.ndarray, int]:
        sp = self.tmem if buf is None else self.spaces.get(buf.name)
        if sp is None:
            return None, np.zeros(0, np.int64), 1
        k = nbytes // sp.unit
        u, _, _ = _item_units(off, 0, sp.unit, k)
        return sp, u, k

    def in_flight(self, buf: ir.Buffer | None, off: np.ndarray, nbytes: int, op: int, role: str) -> None:
        """The ``nbytes``-byte items at byte offsets ``off`` of ``buf`` are in flight for copy ``op``: its
        destination (``role="dst"``: any access before :meth:`land` is a hazard) or its source (``"src"``: a write
        before :meth:`land` is)."""
        sp, u, _ = self._async_units(buf, off, nbytes)
        if sp is None or not u.size:
            return
        if sp.busy_w is None or sp.busy_r is None:
            n = sp.wt.size
            sp.busy_w, sp.busy_r = np.full(n, -1, np.int32), np.full(n, -1, np.int32)
        busy = sp.busy_w if role == "dst" else sp.busy_r
        busy[u] = op

    def land(self, buf: ir.Buffer | None, off: np.ndarray, nbytes: int, role: str, op: int, who=None,
             span: Span | None = None, reduce: str | None = None, init: np.ndarray | None = None) -> None:
        """The items of :meth:`in_flight` of copy ``op`` are done: no longer in flight (units a later copy in flight
        marked stay marked); for ``role="dst"`` their last writer becomes
        ``who`` (a thread, one per item, or an mbarrier's clock column: :attr:`agents`) at the current event, with
        the copy's ``span`` (the write was checked against earlier accesses at the issue: :meth:`write`);
        ``reduce``: the copy is that reduction of one thread, whose writers the units keep with ``who``
        (:meth:`write`); ``init``: the items' init bits as the copy writes them (a copy whose destination another
        access overwrote while it was in flight — reported then — leaves its own bits, as it leaves its bytes)."""
        sp, u, k = self._async_units(buf, off, nbytes)
        if sp is None or not u.size:
            return
        if init is not None and sp.has_init:
            sp.init[u] = np.repeat(np.asarray(init, bool).reshape(-1), k)
        busy = sp.busy_w if role == "dst" else sp.busy_r
        if busy is not None:
            mine = busy[u] == op
            busy[u[mine]] = -1
        if role != "dst" or who is None:
            return
        t = who if isinstance(who, (int, np.integer)) else np.repeat(np.asarray(who).reshape(-1), k)
        sp.flush_reads()
        red = self._red(reduce)
        if red or sp.red is not None:
            t = self._reducers(sp, u, t, red, t)
        sp.wt[u] = t
        sp.wa[u] = self._access_id(span)
        if sp.has_r:
            sp.rt[u] = _NONE
        sp.w_since = _since(sp.w_since, int(t) if isinstance(t, (int, np.integer)) else t)
        sp.w_rng = _union(sp.w_rng, (int(u.min()), int(u.max()) + 1))

    def read_observed(self, buf: ir.Buffer, off: np.ndarray, nbytes: int, col: int, span: Span | None,
                      what: str, reader: int | None = None) -> None:
        """An asynchronous copy's read of the ``nbytes``-byte items at ``off`` of ``buf`` is complete, and only the
        threads ordered after the mbarrier clock column ``col`` (:attr:`agents`: the waiters of the phase it
        completes, and threads ordered after them) know it: a dsmem copy completes on the destination CTA's
        mbarrier alone (PTX ISA 9.0 §9.7.9.25.4.1), so its issuing CTA learns nothing of when its source was read.
        A later write of those units not ordered after ``col`` now is a hazard at its line and the copy's ``span``:
        ``what`` says who may still be reading and who observes it ("CTA 0 thread 0's dsmem copy (L11) may still be
        reading: ...").  ``reader``: the issuing thread, whose read at ``span`` the issue recorded as its own
        (:meth:`read`); where that read is still a unit's last, it is dropped — the copy's read is the async
        proxy's, and this check replaces the race check's write after read of it (a barrier with the issuing thread
        after the issue orders nothing; the wait on the phase does)."""
        sp, u, _ = self._async_units(buf, off, nbytes)
        if sp is None or not u.size:
            return
        if reader is not None and sp.has_r:
            sp.flush_reads()
            ra = sp.ra[u]
            mine = sp.rt[u] == reader
            if mine.any():
                ids = np.unique(ra[mine])
                ours = ids[np.array([self._aid_span[int(a)] is span for a in ids.tolist()], bool)]
                mine &= np.isin(ra, ours)
                sp.rt[u[mine]] = _NONE
        if sp.late_r is None:
            sp.late_r = np.full(sp.wt.size, -1, np.int32)
        self._late.append((int(col), self.G, span, what))
        sp.late_r[u] = len(self._late) - 1

    def release(self, tids: np.ndarray) -> np.ndarray:
        """An ``mbarrier.arrive`` (release, PTX ISA 9.0 §9.7.13.15.11) of ``tids``: a new event; the clock a thread
        that acquires the phase learns (every earlier access of ``tids`` and what they knew)."""
        tids = np.asarray(tids, np.int64).reshape(-1)
        self.G += 1
        self.report.sync_events += 1
        c = np.maximum(self.known[tids].max(axis=0), self._floor) if tids.size else \
            np.zeros(self.known.shape[1], np.int32)
        c[tids] = self.G
        return c

    def agent_clock(self, clock: np.ndarray, bar: str) -> np.ndarray:
        """A phase of ``bar`` completes: ``clock`` (its arrivals' :meth:`release`) plus the barrier's copies that
        landed so far (their writes are ordered before the phase's waiters, and only before them)."""
        self.G += 1
        c = clock.copy()
        c[self.agents[bar]] = self.G
        return c

    def acquire(self, tids: np.ndarray, clock: np.ndarray, span: Span | None = None) -> None:
        """A successful ``mbarrier.try_wait`` (acquire) of ``tids`` at ``span``: they learn ``clock``."""
        tids = np.asarray(tids, np.int64).reshape(-1)
        if span is not None:
            for t in tids.tolist():
                self._acq_span[t] = span
        if tids.size:
            self.known[tids] = np.maximum(self.known[tids], clock)
            self._frontier = None

    def ordered(self, tids: np.ndarray, w: int, stamp: int) -> np.ndarray:
        """Is an access of thread ``w`` stamped ``stamp`` (:attr:`G` then) ordered before each of ``tids``' current
        point?"""
        tids = np.asarray(tids, np.int64)
        return (tids == w) | (np.maximum(self.known[tids, w], self._floor) > stamp)

    def fence_proxy(self, tids: np.ndarray) -> None:
        """``fence.proxy.async.shared::cta`` of ``tids`` (PTX ISA 9.0 §9.7.13.4): their generic writes so far become
        visible to the async proxy."""
        self.G += 1
        tids = np.asarray(tids, np.int64).reshape(-1)
        self._fence[tids] = self.G
        rows = np.maximum(self.known[tids], self._floor)
        for t, row in zip(tids.tolist(), rows):
            self._fence_known[t] = row

    def proxy_read(self, buf: ir.Buffer, off: np.ndarray, nbytes: int, span: Span | None, what: str,
                   issuer: int | None = None, why: str = _TMA_PROXY_WHY) -> None:
        """An async-proxy read (``what``: a TMA store's source) of shared bytes: each generic-proxy write it reads
        must be followed by a ``fence.proxy.async`` of its writer, or of the issuing thread ``issuer`` once the write
        is ordered before it (the fence on the causality path from the write to the issue: PTX ISA 9.0 §9.7.13.4,
        §9.7.9.25.2; a barrier then the issuer's fence, as well as the writers' fences then a barrier); a missing
        fence is a hazard at both lines (the barrier that orders the writer before the issue is the race check's).
        ``why``: the message's rule and reader after "PTX ISA 9.0 " (:data:`_TMA_PROXY_WHY` for the TMA and bulk
        copies, the TMA unit's reads; a ``tcgen05.cp`` names itself, PTX ISA 9.0 §9.7.16.6)."""
        sp, u, _ = self._async_units(buf, off, nbytes)
        if sp is not None and sp.busy_w is not None:  # (bytes an async copy has in flight are written by no generic
            u = u[sp.busy_w[u] < 0]                   # store: their read before it landed is the race check's)
        if sp is None or not u.size:
            return
        w, a = sp.wt[u].astype(np.int64), sp.wa[u]
        stamp = self._aid_stamp[a]
        fence = np.full(w.shape, np.iinfo(np.int32).max, np.int64)
        real = (w >= 0) & (w < self.n)
        fence[real] = self._fence[w[real]]
        for code in np.unique(w[w <= -2]):  # (a broadcast store: every writer of the set needs its fence)
            members = np.nonzero(self._sets[-2 - int(code)])[0]
            fence[w == code] = int(self._fence[members].min())
        bad = fence <= stamp
        row = self._fence_known.get(int(issuer)) if issuer is not None else None
        if row is not None and bad.any():  # the issuer's own last fence, after the write was ordered before it
            single = bad & real
            bad[single] = row[w[single]] <= stamp[single]
            for code in np.unique(w[bad & (w <= -2)]):
                members = np.nonzero(self._sets[-2 - int(code)])[0]
                if int(row[members].min()) > 0:
                    sel = bad & (w == code)
                    bad[sel] = int(row[members].min()) <= stamp[sel]
        for i in _first_per(a, bad):
            wi = int(w[i])
            writer = wi if wi >= 0 else int(np.nonzero(self._sets[-2 - wi])[0][0])
            other = self._aid_span[int(a[i])]
            msg = (f"hazard: async-proxy read of generic writes on {sp.name}: {what} at {_line(span)} reads "
                   f"{sp.where(int(u[i]))} that {self.tname(writer)} wrote at {_line(other)} with no "
                   f"`fence.proxy.async` by {self.tname(writer)} after that write (PTX ISA 9.0 {why}) — add "
                   f"`fence.proxy.async` after L{other.line if other else 0} and a `cta_sync` before "
                   f"L{span.line if span else 0}")
            self._hazard("proxy", ("proxy", sp.name, other, span), msg, span, other, sp.name,
                         sp.element(int(u[i])), (writer, writer))

    def async_hazard(self, kind: str, message: str, span: Span | None, other_span: Span | None, buffer: str,
                     threads: tuple[int, int] = (-1, -1)) -> None:
        """A hazard of the asynchronous model (an mbarrier misuse, a copy never waited for): reported once per
        ``(kind, buffer, span, other_span)`` (a statement in a loop says it once)."""
        self._hazard(kind, (kind, buffer, span, other_span), message, span, other_span, buffer, 0, threads)

    def hang(self, message: str, span: Span | None, other_span: Span | None, buffer: str,
             threads: tuple[int, int]) -> None:
        """The run cannot go on (:attr:`HBReport.hang`): no thread can run and some wait forever."""
        h = Hazard("hang", message, span, other_span, buffer, 0, threads)
        self.report.hang = h
        self.report.hazards.append(h)

    # ------------------------------------------------------------------ clusters
    def receipt(self, dst_rank: int, name: str, nbytes: int, byte_off: np.ndarray | slice, src_rank: int,
                span: Span | None, kind: str) -> None:
        """Bytes ``byte_off`` (indices, or a slice) of shared buffer ``name`` (of ``nbytes`` bytes) of CTA
        ``dst_rank`` are written by CTA ``src_rank``'s statement at ``span`` (:class:`ClusterReceipt`)."""
        key = (src_rank, span.line if span is not None else 0, kind)
        code = self._receipt_codes.setdefault(key, len(self._receipt_codes))
        row = self._receipts.get((dst_rank, name))
        if row is None:
            row = self._receipts[(dst_rank, name)] = np.full(nbytes, -1, np.int32)
        row[byte_off] = code

    def _receipt_runs(self) -> list[ClusterReceipt]:
        """The receipts as runs of bytes with one writer, by CTA, buffer (declaration order) and byte."""
        codes = {v: k for k, v in self._receipt_codes.items()}
        order = {b.name: i for i, b in enumerate(self.kernel.shared)}
        out = []
        for (rank, name), row in sorted(self._receipts.items(), key=lambda kv: (kv[0][0], order.get(kv[0][1], 0))):
            cuts = np.flatnonzero(np.diff(row) != 0) + 1
            starts = np.concatenate([[0], cuts])
            ends = np.concatenate([cuts, [row.size]])
            for a, b in zip(starts.tolist(), ends.tolist()):
                c = int(row[a])
                if c >= 0:
                    src, line, kind = codes[c]
                    out.append(ClusterReceipt(rank, name, a, b, src, line, kind))
        return out

    def incomplete(self, reason: str, span: Span | None) -> None:
        """The analysis cannot decide something at ``span``: the report says "incomplete", never "clean"."""
        text = f"{reason} at {_line(span)}" if span else reason
        if all(r != text for r, _ in self.report.incomplete):
            self.report.incomplete.append((text, span))

    def finish(self) -> HBReport:
        """The report: hazards (in the order their statements first found one — program order — and the hazards
        of one statement by the earlier line, then the kind: the same whatever order the executor met them in,
        one statement at a time or an op's statements as one access), incomplete reasons, the timeline, per-buffer
        poison of global buffers."""
        first: dict = {}
        for h in self.report.hazards:
            first.setdefault(h.span, len(first))
        self.report.hazards.sort(key=lambda h: (h.kind != "hang", first[h.span], _pos(h.other_span), h.kind))
        self.report.cluster_receipts = self._receipt_runs()
        for sp in self.spaces.values():
            if sp.label != "global-memory":
                continue
            if sp.has_init and not sp.init.all():
                self.report.poison[sp.name] = np.repeat(~sp.init, sp.unit)  # (per byte)
            self.report.tracked.add(sp.name)
            never = sp.wt == _NONE
            if never.any():
                # (per element: a unit of several elements stands for each of them, an element of several units
                # is unwritten when any of its units is)
                self.report.unwritten[sp.name] = np.repeat(never, sp.unit // sp.elem_bytes) \
                    if sp.unit > sp.elem_bytes else never.reshape(-1, max(1, sp.elem_bytes // sp.unit)).any(1)
        return self.report


def _pos(span: Span | None) -> tuple[int, int]:
    return (span.line, span.col) if span is not None else (0, 0)


#: at most this many earlier statements are named per access and kind of race (the rest repeat the lesson)
MAX_PAIRS_PER_ACCESS = 64


def _first_per(aids: np.ndarray, bad: np.ndarray) -> list[int]:
    """Positions of the first ``bad`` entry of each distinct access id in ``aids`` (in access order), at most
    :data:`MAX_PAIRS_PER_ACCESS`."""
    hit = np.flatnonzero(bad)
    if not hit.size:
        return []
    _, first = np.unique(np.asarray(aids)[hit], return_index=True)
    return [int(hit[j]) for j in np.sort(first)[:MAX_PAIRS_PER_ACCESS]]


def _item_units(off, tids, unit: int, k: int) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """Items at byte offsets ``off`` (``k`` units of ``unit`` bytes each) by threads ``tids``: the unit index and the
    thread of every unit (flat ``int64``), and the items' shape."""
    off = np.asarray(off, np.int64)
    u = off.reshape(-1) // unit
    t = np.broadcast_to(np.asarray(tids, np.int64), off.shape).reshape(-1)
    if k > 1:
        u = (u[:, None] + np.arange(k)).reshape(-1)
        t = np.repeat(t, k)
    return u, t, off.shape


_TRUE = np.ones(1, bool)
_TRUE.flags.writeable = False


def _true(shape) -> np.ndarray:
    """A read-only broadcast ``True`` of ``shape`` (every item initialised), without ``np.broadcast_to``'s cost."""
    shape = tuple(shape)
    return np.ndarray(shape, bool, _TRUE, 0, (0,) * len(shape))


def _all_true(a) -> bool:
    """``a.all()``, in O(1) for a broadcast scalar."""
    a = np.asarray(a)
    if a.size and not any(a.strides):
        return bool(a.flat[0])
    return bool(a.all())


def _unit_values(value, nunits: int, unit: int) -> np.ndarray:
    """The stored values of an access, one comparable entry per unit (``unit``-byte integers, or rows of bytes)."""
    b = np.ascontiguousarray(value).view(np.uint8).reshape(nunits, unit)
    return b.view(ir.BITS_DTYPE[unit]).reshape(-1) if unit in ir.BITS_DTYPE else b


def _units(kernel: ir.Kernel, acc: KernelAccesses | None = None) -> dict[str, int]:
    """Per buffer: the bytes of one shadow entry, the gcd of every granule the kernel accesses it in (from
    :func:`kernel_accesses`, or ``acc`` when the caller has it).

    Granules: an element for a ``Store`` and every ``Load`` (indices and conditions included); the ``nbytes`` of
    a ``VecMove`` or a ``CpAsync`` on both sides (a vector's address is a multiple of its size, PTX ISA 9.0
    ``ld``/``st``: the simulator reports a misaligned one before it reaches the tracker); a TMA copy's descriptor
    element and the buffers' elements; the 32-bit register words of ``ldmatrix``/``stmatrix`` and
    ``tcgen05.ld``/``st`` (§9.7.9.26, §9.7.16.8.3-4) and, in shared memory, their 32-bit words (a non-transposed
    fragment: each word is an aligned pair of 16-bit elements) or 16-bit halves (``.trans``); the 32-bit TMEM
    address slot of tcgen05 ops and the allocation.  Any other statement counts an element of every buffer it
    uses.  Since every access then covers whole units, a unit's state is the state of each of its bytes: the
    reports are those a per-byte shadow would give (the element named is the unit's first), at a fraction of
    the work — a buffer moved only by 16-byte vectors keeps one entry per vector.  A buffer nothing accesses keeps
    one per element.  The gcd also divides the buffer's size (a local buffer's: per thread)."""
    return dict((kernel_accesses(kernel) if acc is None else acc).units)


def _granules(s: ir.Stmt, lds: tuple) -> tuple:
    """``(buffer, granule)`` pairs of one statement (:func:`_units`), given its loads."""
    out = [(ld.buf, ld.buf.elem_bytes) for ld in lds]
    if isinstance(s, ir.Store):
        out.append((s.buf, s.buf.elem_bytes))
    elif isinstance(s, (ir.VecMove, ir.CpAsync)):
        out += [(s.src, s.nbytes), (s.dst, s.nbytes)]
    elif isinstance(s, ir.TmaCopy):  # (descriptor elements: a promoted unit is a multiple of the buffer's element)
        out += [(s.smem, s.tmap.elem_bytes), (s.tmap.buf, s.tmap.elem_bytes), (s.smem, s.smem.elem_bytes),
                (s.tmap.buf, s.tmap.buf.elem_bytes)]
    elif isinstance(s, ir.LdStMatrix):
        out += [(s.smem, 2 if s.trans else 4), (s.local, 4)]
    elif isinstance(s, ir.TcgenLdSt):
        out += [(s.local, 4), (s.addr, 4)]
    elif isinstance(s, ir.TcgenCp):  # (16-byte chunks of shared memory; the TMEM address slot)
        out += [(s.smem, 16), (s.smem, s.smem.elem_bytes), (s.addr, 4)]
    elif isinstance(s, (ir.TcgenAlloc, ir.TcgenDealloc)):
        out.append((s.addr, 4))
    elif not isinstance(s, (ir.Seq, ir.Grid, ir.If)):
        out += [(b, b.elem_bytes) for side in ir.stmt_buffers(s) for b in side]
    return tuple(out)


@dataclass(frozen=True)
class KernelAccesses:
    """What the tracker and the simulator need to know of a kernel before running it, from one walk of its
    statements (:func:`kernel_accesses`).

    Attributes
    ----------
    written, read : frozenset of str
        Names of the buffers some statement writes / reads (:func:`tilemagic.ir.nodes.stmt_buffers`).
    units : tuple of (str, int)
        Bytes per shadow entry of every buffer (:func:`_units`).
    data_dependent : tuple of (str, Span or None)
        Indices and conditions computed from loaded data (this run's data decides them: the check is incomplete).
    """

    written: frozenset
    read: frozenset
    units: tuple
    data_dependent: tuple
    #: whether the kernel has asynchronous copies or mbarriers (the simulator then runs its scheduler,
    #: :mod:`tilemagic.sim.asyncmodel`; a kernel without them runs as before)
    asynchronous: bool = False


def kernel_accesses(kernel: ir.Kernel) -> KernelAccesses:
    """:class:`KernelAccesses` of ``kernel``: one walk of its statements (the tracker makes it once and the
    simulator takes it from the tracker; not memoised: a kernel's statements are mutable)."""
    written: set[str] = set()
    read: set[str] = set()
    seen: dict[str, int] = {}
    dependent: list[tuple[str, Span | None]] = []
    moves: set[tuple[str, str]] = set()  # (source, destination) of statements that move bytes as they are
    asynchronous = False
    for s in ir.walk(kernel.body):
        if isinstance(s, ASYNC_STMTS):
            asynchronous = True
            if isinstance(s, ir.CpAsync):
                moves.add((s.src.name, s.dst.name))
            elif isinstance(s, ir.TmaCopy):
                gname, sname = s.tmap.buf.name, s.smem.name
                moves.add((gname, sname) if s.direction == "g2s" else (sname, gname))
            elif isinstance(s, ir.BulkCopy):
                moves.add((s.src.name, s.dst.name))
        if isinstance(s, ir.VecMove):
            moves.add((s.src.name, s.dst.name))
        elif isinstance(s, ir.LdStMatrix):
            moves.add((s.smem.name, s.local.name) if s.op == "ld" else (s.local.name, s.smem.name))
        lds = ir.stmt_loads(s)
        r, w = ir.stmt_buffers(s, lds)
        read.update(b.name for b in r)
        written.update(b.name for b in w)
        for b, g in _granules(s, lds):
            seen[b.name] = math.gcd(seen.get(b.name, 0), g)
        if lds:  # (an If, a Store, a VecMove or an ldmatrix/stmatrix whose expressions load)
            idx = s.indices if isinstance(s, ir.Store) else ir.stmt_exprs(s)
            if any(True for e in idx for _ in ir.loads(e)):
                what = "a condition" if isinstance(s, ir.If) else "an index or address"
                dependent.append((f"{what} computed from loaded data", s.span))
            elif any(True for ld in lds for i in ld.indices for _ in ir.loads(i)):
                dependent.append(("an index computed from loaded data", s.span))
    unit = {b.name: math.gcd(seen.get(b.name, b.elem_bytes), b.nbytes) or b.elem_bytes
            for b in (*kernel.params, *kernel.shared, *kernel.locals)}
    # bytes moved as they are carry their init bits: a destination is kept as finely as its sources (so a vector
    # whose source is partly initialised stores exactly its initialised bytes as initialised)
    changed = True
    while changed:
        changed = False
        for a, b in moves:
            g = math.gcd(unit[a], unit[b])
            if g != unit[b]:
                unit[b], changed = g, True
    units = tuple(unit.items())
    return KernelAccesses(frozenset(written), frozenset(read), units, tuple(dependent), asynchronous)


#: the statements of asynchronous copies and their synchronisation (:mod:`tilemagic.sim.asyncmodel` runs them)
ASYNC_STMTS = (ir.MbarInit, ir.MbarArrive, ir.MbarWait, ir.Fence, ir.CpAsync, ir.AsyncGroup, ir.TmaCopy, ir.BulkCopy,
               ir.ClusterSync, ir.TcgenCp, ir.TcgenCommit)


def _index(off: np.ndarray) -> np.ndarray | slice:
    """``off`` (flat ``int64`` unit indices) as a slice when it is one ascending run (shadow updates then run at
    memcpy speed), else itself."""
    n = off.size
    if n <= 256 or off[-1] - off[0] != n - 1 or off[0] < 0:
        return off
    lo = int(off[0])
    step = max(1, n // 64)  # a sample first: most non-contiguous accesses fail here
    if not np.array_equal(off[::step] - lo, np.arange(0, n, step)):
        return off
    ramp = np.arange(min(n, _CHUNK), dtype=off.dtype)
    for a in range(0, n, _CHUNK):
        part = off[a:a + _CHUNK]
        if not np.array_equal(part - (lo + a), ramp[:part.size]):
            return off
    return slice(lo, lo + n)


_CHUNK = 1 << 16


def written_and_read(kernel: ir.Kernel) -> tuple[frozenset[str], frozenset[str]]:
    """Names of the buffers some statement writes, and of those some statement reads (:func:`ir.stmt_buffers`)."""
    acc = kernel_accesses(kernel)
    return acc.written, acc.read


def logical_index(buf: ir.Buffer, elem: int) -> str | None:
    """``"[16, 0]"``: the logical index of physical element ``elem`` of a shared or global buffer (through its
    layout: a swizzled or permuted shared tile is named as the user indexes it), or None when no index maps there.

    Global buffers are row-major; a shared buffer's layout is evaluated over its whole (small) index space once
    per message (:meth:`tilemagic.ir.nodes.Buffer.index_expr`, :func:`tilemagic.ir.evaluate.eval_static`).
    """
    shape = tuple(int(d) for d in buf.shape)
    if not shape or buf.scope not in ("global", "shared"):
        return None
    size = math.prod(shape)
    coords: tuple | np.ndarray | None
    if buf.scope == "global" or buf.layout is None:
        coords = np.unravel_index(elem, shape) if 0 <= elem < size else None
    elif size > 1 << 20:
        return None
    else:
        vars_ = [ir.LoopVar(f"_i{d}") for d in range(len(shape))]
        grid = np.indices(shape).reshape(len(shape), -1)
        try:
            phys = np.asarray(eval_static(buf.index_expr(vars_), np.zeros(1, np.int64),
                                          {v: g for v, g in zip(vars_, grid)}))
        except Undetermined:
            return None
        hit = np.flatnonzero(np.broadcast_to(phys, grid.shape[1:]) == elem)
        coords = grid[:, hit[0]] if hit.size else None
    if coords is None:
        return None
    return "[" + ", ".join(str(int(c)) for c in coords) + "]"


def cta_name(name: str, rank: int, cluster: int) -> str:
    """The name of CTA ``rank``'s copy of a shared buffer or mbarrier in reports: ``S@cta1`` (``S`` without a
    cluster)."""
    return name if cluster == 1 else f"{name}@cta{rank}"


def cta_buffer(b: ir.Buffer, rank: int, cluster: int) -> ir.Buffer:
    """CTA ``rank``'s copy of the shared buffer ``b`` (:func:`cta_name`; ``b`` itself without a cluster)."""
    return b if cluster == 1 else replace(b, name=cta_name(b.name, rank, cluster))


def bytes_of(off, nbytes: int, unit: int) -> np.ndarray | slice:
    """The byte indices an access covers: ``off`` a :class:`Run`, item byte offsets (``nbytes`` each) or a
    :class:`Prepared` (its units of ``unit`` bytes)."""
    if isinstance(off, Run):
        return slice(off.start, off.start + off.count * off.nbytes)
    if isinstance(off, Prepared):
        ix = off.norm[0]
        if isinstance(ix, slice):
            return slice(ix.start * unit, ix.stop * unit)
        u = np.asarray(ix, np.int64).reshape(-1)
        return (u[:, None] * unit + np.arange(unit)).reshape(-1)
    return (np.asarray(off, np.int64).reshape(-1, 1) + np.arange(nbytes)).reshape(-1)


def _ids(tids) -> np.ndarray:
    """``tids`` as an array (the same object when it is one)."""
    return tids if isinstance(tids, np.ndarray) else np.asarray(tids, np.int64)


class ClusterView:
    """The cluster's one :class:`Tracker` as the simulator of one CTA calls it (its interface, a CTA's names).

    A CTA's simulator passes its CTA-local thread ids (``0 .. threads-1``) and the kernel's shared buffers; the view
    hands the tracker cluster-linear ids (``rank * threads + tx``) and the CTA's own copy of each shared buffer
    (:func:`cta_buffer`: ``S@cta1``), and names the CTA in the timeline (``info["cta"]``).  ``issuer`` (default
    ``rank``): the CTA whose threads make the accesses — a TMA multicast or a dsmem copy writes CTA ``rank``'s
    shared memory on behalf of a thread of CTA ``issuer`` (:meth:`issued_by`).  The shared bytes written are the
    cluster receipts (:meth:`Tracker.receipt`), of ``kind`` (``"store"`` unless the caller says otherwise).
    """

    def __init__(self, base: Tracker, rank: int, issuer: int | None = None):
        self.base, self.rank = base, rank
        self.src = rank if issuer is None else issuer
        self.off = self.src * base.cta
        self.accesses = base.accesses
        self.kind = "store"
        self._bufs = {orig.name: mine for orig, mine in zip(base.kernel.shared, base.cta_shared[rank])}
        self.agents = {b.name: base.agents[cta_name(b.name, rank, base.cluster)]
                       for b in base.kernel.shared if cta_name(b.name, rank, base.cluster) in base.agents}
        self._tids: dict[int, tuple] = {}
        self._views: dict[int, ClusterView] = {}

    def issued_by(self, issuer: int) -> ClusterView:
        """This CTA's shared memory accessed by the threads of CTA ``issuer`` (multicast, dsmem)."""
        if issuer == self.src:
            return self
        v = self._views.get(issuer)
        if v is None:
            v = self._views[issuer] = ClusterView(self.base, self.rank, issuer)
        return v

    @property
    def G(self) -> int:
        return self.base.G

    @property
    def known(self) -> np.ndarray:
        return self.base.known

    @property
    def report(self) -> HBReport:
        return self.base.report

    def buf(self, b: ir.Buffer | None) -> ir.Buffer | None:
        """The CTA's copy of ``b`` (a shared buffer), else ``b`` (None: TMEM)."""
        return self._bufs.get(b.name, b) if b is not None and b.scope == "shared" else b

    def _mine(self, b: ir.Buffer) -> ir.Buffer:
        return self._bufs.get(b.name, b) if b.scope == "shared" else b

    def lin(self, tids):
        """Cluster-linear ids of the CTA-local ``tids`` (an int, an array — the same array object for the same
        input, so the tracker's per-array memos stay warm — or None)."""
        if tids is None or self.off == 0:
            return tids
        if isinstance(tids, (int, np.integer)):
            return int(tids) + self.off
        hit = self._tids.get(id(tids))
        if hit is not None and hit[0] is tids:
            return hit[1]
        out = np.asarray(tids) + np.asarray(self.off, np.asarray(tids).dtype)
        if isinstance(tids, np.ndarray) and len(self._tids) < 1024:
            self._tids[id(tids)] = (tids, out)  # (kept: its id stays its own)
        return out

    def _who(self, who):
        if who is None:
            return None
        if isinstance(who, (int, np.integer)) and int(who) >= self.base.n:  # an mbarrier's clock column
            return int(who)
        return self.lin(who)

    def tracks(self, buf: ir.Buffer | None) -> bool:
        return self.base.tracks(self.buf(buf))

    def unit(self, buf: ir.Buffer | None) -> int:
        return self.base.unit(self.buf(buf))

    def prepare(self, buf, off, tids, nbytes=None) -> Prepared:
        return self.base.prepare(self.buf(buf), off, self.lin(tids), nbytes)

    def read(self, buf, off, tids, span, nbytes=None, *, reduce=None):
        return self.base.read(self.buf(buf), off, self.lin(tids), span, nbytes, reduce=reduce)

    def write(self, buf, off, tids, span, init=True, *, value=None, nbytes=None, init_bytes=None,
              reduce=None) -> None:
        mine = self.buf(buf)
        self.base.write(mine, off, self.lin(tids), span, init, value=value, nbytes=nbytes, init_bytes=init_bytes,
                        reduce=reduce)
        if buf is not None and buf.scope == "shared" and mine is not None:
            nb = nbytes or self.base.unit(mine)
            self.base.receipt(self.rank, buf.name, buf.nbytes, bytes_of(off, nb, self.base.unit(mine)), self.src,
                              span, self.kind)

    def init_bytes(self, buf, off, tids, nbytes=None) -> np.ndarray:
        return self.base.init_bytes(self.buf(buf), off, self.lin(tids), nbytes)

    def event(self, kind: str, tids, span, **info) -> None:
        if "threads" in info:
            info["threads"] = self.lin(np.asarray(info["threads"]))
        self.base.event(kind, self.lin(tids if isinstance(tids, np.ndarray) else np.asarray(tids, np.int64)), span,
                        cta=self.rank, **info)

    def tcgen_access(self, local, regs, cells, tids):
        return self.base.tcgen_access(local, regs, cells, self.lin(_ids(tids)))

    def tmem_async_write(self, cells, thread: int, span, what: str) -> None:
        self.base.tmem_async_write(cells, self.lin(int(thread)), span, what)

    def async_op(self, what: str, span, until: str, reduce=None) -> int:
        return self.base.async_op(what, span, until, reduce)

    def in_flight(self, buf, off, nbytes, op, role) -> None:
        self.base.in_flight(self._mine(buf), off, nbytes, op, role)

    def land(self, buf, off, nbytes, role, op, who=None, span=None, reduce=None) -> None:
        self.base.land(self._mine(buf), off, nbytes, role, op, who=self._who(who), span=span, reduce=reduce)

    def read_observed(self, buf, off, nbytes, col: int, span, what: str, reader: int | None = None) -> None:
        self.base.read_observed(self._mine(buf), off, nbytes, col, span, what,
                                None if reader is None else self.lin(int(reader)))

    def release(self, tids) -> np.ndarray:
        return self.base.release(self.lin(_ids(tids)))

    def agent_clock(self, clock, bar: str) -> np.ndarray:
        return self.base.agent_clock(clock, cta_name(bar, self.rank, self.base.cluster))

    def acquire(self, tids, clock, span=None) -> None:
        self.base.acquire(self.lin(_ids(tids)), clock, span)

    def ordered(self, tids, w: int, stamp: int) -> np.ndarray:
        return self.base.ordered(self.lin(_ids(tids)), self.lin(int(w)), stamp)

    def fence_proxy(self, tids) -> None:
        self.base.fence_proxy(self.lin(_ids(tids)))

    def tcgen_fence(self, tids, kind: str) -> None:
        self.base.tcgen_fence(self.lin(_ids(tids)), kind)

    def proxy_read(self, buf, off, nbytes, span, what, issuer=None, why: str = _TMA_PROXY_WHY) -> None:
        self.base.proxy_read(self._mine(buf), off, nbytes, span, what, issuer=self.lin(issuer), why=why)

    def async_hazard(self, kind, message, span, other_span, buffer, threads=(-1, -1)) -> None:
        mine = self._bufs.get(buffer)  # (the CTA's copy of a shared buffer or mbarrier: one report per CTA)
        self.base.async_hazard(kind, message, span, other_span, mine.name if mine is not None else buffer,
                               tuple(self.lin(int(t)) if t >= 0 else t for t in threads))

    def hang(self, message, span, other_span, buffer, threads) -> None:
        self.base.hang(message, span, other_span, buffer, threads)

    def incomplete(self, reason: str, span) -> None:
        self.base.incomplete(reason, span)

    def finish(self) -> HBReport:
        return self.base.finish()
