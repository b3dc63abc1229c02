"""The simulator's memory-ordering tracker: what the executor reports at every access and synchronising event.

:class:`Tracker` is the interface :class:`tilemagic.sim.interpreter.Simulator` calls at every memory
access (global, shared, registers, TMEM) and at every synchronising event (``cta_sync``, tcgen05
issue and waits, TMEM allocation).  Calls of one thread come in program order; one call may cover
many loop iterations of ONE statement (its reads before its writes), never reordering two accesses
of the same thread to the same byte.  Every argument is a NumPy array (int64 byte offsets and
thread ids of the same shape, possibly broadcast views), so the tracker works on per-byte arrays.

This implementation keeps the check the simulator has always made: a read of a shared-memory byte
that another thread wrote since the last ``cta_sync`` is a read-after-write race (PTX ISA 9.0
§9.7.13.1: ``bar.sync`` orders shared memory across the CTA; without it the read may see the old
value).  Memory starts initialised (``read`` answers True everywhere).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import Span
from ..ir import nodes as ir


@dataclass
class HBReport:
    """What a run's tracker saw: ``hazards``, a list of ``(message, span)``."""

    hazards: list[tuple[str, Span | None]] = field(default_factory=list)


class Tracker:
    """Per-byte shadow state of one CTA's run (see the module docstring for the calling contract).

    Parameters
    ----------
    kernel : Kernel
    nthreads : int
        Threads of the CTA.
    strict : bool
        ``--strict`` (hazards as errors; kept for the interface).
    """

    def __init__(self, kernel: ir.Kernel, nthreads: int, strict: bool = False):
        self.n = nthreads
        self.strict = strict
        self.epoch = 0  # barrier interval: cta_sync starts a new one
        # per shared byte: the last writing thread (-1 none; -2 - k: every thread of self._writer_sets[k]
        # stored it in one call), and the barrier interval of that write and its source line as one stamp
        # (interval << 32 | line; -1 never written)
        self._writer_sets: list[np.ndarray] = []
        self._writer = {b.name: (np.full(b.nbytes, -1, np.int64), np.full(b.nbytes, -1, np.int64))
                        for b in kernel.shared if b is not kernel.tmem_addr}
        self._hazards: list[tuple[tuple, str, Span | None]] = []

    def read(self, buf: ir.Buffer | None, off: np.ndarray, tids: np.ndarray, span: Span | None) -> np.ndarray:
        """Threads ``tids`` read bytes ``off`` of ``buf`` (None: TMEM, ``off = (lane * 512 + col) * 4 + byte``;
        a local buffer: the byte in thread ``tids[i]``'s register file).

        Returns
        -------
        ndarray of bool, shape of ``off``
            Whether each byte read is initialised (always True here).
        """
        if buf is not None and buf.name in self._writer and np.size(off):
            self._check_read(buf, np.asarray(off, np.int64).reshape(-1),
                             np.broadcast_to(np.asarray(tids, np.int64), np.shape(off)).reshape(-1), span)
        return np.broadcast_to(True, np.shape(off))

    def write(self, buf: ir.Buffer | None, off: np.ndarray, tids: np.ndarray, span: Span | None,
              init: np.ndarray | bool = True) -> None:
        """Threads ``tids`` wrote bytes ``off`` of ``buf`` (``init``: whether each stored byte was initialised)."""
        rec = self._writer.get(buf.name) if buf is not None else None
        if rec is None or not np.size(off):
            return
        off = np.asarray(off)
        if off.ndim and off.shape[-1] > 1 and off.strides[-1] == 0:
            # the same bytes stored by every thread of the last axis (one uniform statement): remember them all
            members = np.zeros(self.n, bool)
            members[np.asarray(np.broadcast_to(tids, off.shape))[(0,) * (off.ndim - 1)]] = True
            self._writer_sets.append(members)
            off = off[..., 0].reshape(-1)
            who = np.full(off.size, -1 - len(self._writer_sets), np.int64)
        else:
            who = np.broadcast_to(np.asarray(tids, np.int64), off.shape)  # scattered as is: no flat copies
            off = off.astype(np.int64, copy=False)
        rec[0][off] = who
        rec[1][off] = (self.epoch << 32) | (span.line if span else 0)

    def event(self, kind: str, tids: np.ndarray, span: Span | None, **info) -> None:
        """A synchronising event of threads ``tids``: ``cta_sync`` starts a new barrier interval; the others
        (``tcgen05.ld``/``tcgen05.st`` issue, ``wait_ld``, ``wait_st``, ``alloc``, ``dealloc``) order nothing here."""
        if kind == "cta_sync":
            self.epoch += 1

    def incomplete(self, reason: str, span: Span | None) -> None:
        """The run could not model an access (``reason``); this tracker keeps no such note."""

    def finish(self) -> HBReport:
        """The report of the run."""
        return HBReport([(msg, span) for _, msg, span in self._hazards])

    def _check_read(self, buf, byte_off, tids, span):
        rec = self._writer[buf.name]
        wt = rec[0][byte_off]
        stamp = rec[1][byte_off]
        bad = (stamp >> 32 == self.epoch) & (stamp >= 0) & (wt != -1) & (wt != tids)
        for code in np.unique(wt[bad & (wt <= -2)]):  # written by a set of threads: a reader among them is fine
            sel = bad & (wt == code)
            bad[sel] = ~self._writer_sets[-2 - int(code)][tids[sel]]
        if not bad.any():
            return
        i = int(np.argmax(bad))
        writer = int(wt[i])
        if writer <= -2:
            writer = int(np.argmax(self._writer_sets[-2 - writer]))  # name the first of the writers
        wline, rline = int(stamp[i]) & 0xFFFFFFFF, (span.line if span else 0)
        key = (buf.name, wline, rline)
        if any(k == key for k, _, _ in self._hazards):
            return
        elem = int(byte_off[i]) // buf.elem_bytes
        at = f"L{wline}" if wline else "an earlier statement"
        msg = (f"hazard: shared-memory race on {buf.name}: thread {int(tids[i])} reads element offset {elem} at "
               f"L{rline} that thread {writer} wrote at {at} with no `cta_sync` in between; the simulator runs "
               f"ops in program order, a GPU does not — add `cta_sync` after {at}")
        self._hazards.append((key, msg, span))
