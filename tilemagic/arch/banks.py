"""Shared-memory banks: how many wavefronts one warp-wide shared-memory instruction takes.

The rules (each a hardware fact, written once here):

* Shared memory has :data:`BANKS` (32) banks of :data:`BANK_BYTES` (4) bytes: byte address ``a`` lies in the
  32-bit word ``a // 4``, which is in bank ``(a // 4) % 32`` (CUDA C++ Programming Guide, "Shared Memory" of
  the compute capability 5.x-12.x sections: "Shared memory has 32 banks that are organized such that
  successive 32-bit words map to successive banks.  Each bank has a bandwidth of 32 bits per clock cycle").
* A request is served in **phases** of threads (:func:`phases`): accesses of at most 4 bytes per thread
  (``ld.shared.u8/u16/u32``) are one phase of the whole warp; 64-bit accesses (``.v2.u32``) two phases of
  16 threads (half warps); 128-bit accesses (``.v4.u32``) four phases of 8 threads (quarter warps) (the
  Programming Guide's "64-bit / 128-bit accesses" rules: a wider access splits the warp's request so that
  each phase moves at most 128 bytes).
* Within a phase, threads touching **the same 32-bit word** are served together (a broadcast for loads; a
  store to one word by several threads is one write, by one of them); two *different* words in one bank are
  a conflict and serialise.  One phase therefore takes as many wavefronts as the largest number of distinct
  words any bank holds among the phase's accesses (at least 1 if a thread of the phase is active, 0 if none is).
* ``ldmatrix`` / ``stmatrix .m8n8 .x{1,2,4} .b16`` (PTX ISA 9.0, "Warp-level matrix load instruction:
  ldmatrix" and "Warp-level matrix store instruction: stmatrix"; the fragment itself is
  :mod:`tilemagic.arch.ldmatrix`): each 8×8 matrix is one phase: its 8 row addresses (threads
  ``8*i .. 8*i+7`` supply the rows of matrix ``i``), 16 bytes each, 128 bytes per matrix.  ``.x4`` takes at
  least 4 wavefronts, ``.x1`` at least 1.

The count of a warp instruction: ``wavefronts`` (the sum over its phases), ``ideal`` (the number of phases with
an active thread: each moves at most 128 bytes, one wavefront's worth), ``conflicts = wavefronts - ideal`` (what
Nsight Compute reports as ``l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st}``) and ``degree``, the
largest wavefront count of one phase (a "4-way conflict" has degree 4).

This module is pure NumPy and imports nothing from tilemagic: the simulator's address trace
(:mod:`tilemagic.sim.banks`) feeds it; ``tests/unit/arch/test_banks.py`` checks it against hand-computed cases
and an independent per-byte brute-force count.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["BANKS", "BANK_BYTES", "WAVEFRONT_BYTES", "Count", "bank_of", "count", "lane_bank_map", "phases"]

BANKS = 32
BANK_BYTES = 4
#: Bytes one wavefront moves without a conflict (32 banks x 4 bytes).
WAVEFRONT_BYTES = BANKS * BANK_BYTES
#: Per-thread access bytes -> threads per phase (PTX ``ld``/``st`` vector widths, :mod:`tilemagic.arch.ptx`).
_PHASE_THREADS = {1: 32, 2: 32, 4: 32, 8: 16, 16: 8}
#: Threads whose row addresses form one ``ldmatrix``/``stmatrix`` phase, and the bytes of one row.
MATRIX_ROWS = 8
MATRIX_ROW_BYTES = 16


def bank_of(addr) -> np.ndarray:
    """Bank of byte address(es) ``addr`` (int or array): ``(addr // 4) % 32``."""
    return (np.asarray(addr, np.int64) // BANK_BYTES) % BANKS


def phases(nbytes: int, matrix: int | None = None) -> tuple[tuple[int, ...], ...]:
    """The lanes of each phase of one warp instruction.

    Parameters
    ----------
    nbytes : {1, 2, 4, 8, 16}
        Bytes each thread moves (ignored for a matrix instruction).
    matrix : {1, 2, 4}, optional
        ``ldmatrix``/``stmatrix`` with this many matrices: phase ``i`` is lanes ``8*i .. 8*i+7`` (the rows of
        matrix ``i``).

    Returns
    -------
    tuple of tuple of int
        Lane ids (0-31) of every phase, in order.

    Raises
    ------
    ValueError
        An access width other than 1, 2, 4, 8, 16 bytes, or a matrix count other than 1, 2, 4.
    """
    if matrix is not None:
        if matrix not in (1, 2, 4):
            raise ValueError(f"ldmatrix/stmatrix move 1, 2 or 4 matrices, not {matrix}")
        return tuple(tuple(range(MATRIX_ROWS * i, MATRIX_ROWS * i + MATRIX_ROWS)) for i in range(matrix))
    if nbytes not in _PHASE_THREADS:
        raise ValueError(f"a shared-memory access moves 1, 2, 4, 8 or 16 bytes per thread, not {nbytes}")
    n = _PHASE_THREADS[nbytes]
    return tuple(tuple(range(p, p + n)) for p in range(0, 32, n))


@dataclass(frozen=True)
class Count:
    """Wavefronts of warp instructions (arrays over the instances counted, or summed).

    Attributes
    ----------
    wavefronts : ndarray of int64, shape (instances,)
        Wavefronts each warp instruction takes.
    ideal : ndarray of int64, shape (instances,)
        Phases with an active thread: the wavefronts without a conflict.
    degree : ndarray of int64, shape (instances,)
        The largest wavefront count of one phase (1: conflict-free; ``k``: a ``k``-way conflict).
    phase_wavefronts : ndarray of int64, shape (instances, phases)
        Wavefronts of every phase.
    """

    wavefronts: np.ndarray
    ideal: np.ndarray
    degree: np.ndarray
    phase_wavefronts: np.ndarray

    @property
    def conflicts(self) -> np.ndarray:
        """``wavefronts - ideal`` per instance (Nsight Compute's bank-conflict count)."""
        return self.wavefronts - self.ideal


def _words(addr: np.ndarray, nbytes: int) -> np.ndarray:
    """The 32-bit words ``(..., words)`` an access of ``nbytes`` bytes at byte address ``addr`` touches."""
    first = addr // BANK_BYTES
    last = (addr + nbytes - 1) // BANK_BYTES
    span = int(np.max(last - first)) + 1 if addr.size else 1
    w = first[..., None] + np.arange(span)
    return np.where(w <= last[..., None], w, -1)  # -1: not touched (a short access inside one word)


def count(addr, nbytes: int, active=None, matrix: int | None = None) -> Count:
    """Wavefronts of warp-wide shared-memory instructions.

    Parameters
    ----------
    addr : array_like of int, shape (instances, 32)
        Byte address (in the shared window) each lane accesses, one row per executed warp instruction.  For
        ``ldmatrix``/``stmatrix``, the row address each lane supplies (lanes beyond ``8 * matrix`` ignored).
    nbytes : {1, 2, 4, 8, 16}
        Bytes per lane (for a matrix instruction: ignored, each row is 16 bytes).
    active : array_like of bool, shape (instances, 32), optional
        Lanes that execute (default all).  An inactive lane touches nothing.
    matrix : {1, 2, 4}, optional
        Count an ``ldmatrix``/``stmatrix`` of this many matrices.

    Returns
    -------
    Count

    Raises
    ------
    ValueError
        ``addr`` not of shape (instances, 32), a bad width or matrix count (:func:`phases`).
    """
    a = np.asarray(addr, np.int64)
    if a.ndim != 2 or a.shape[1] != 32:
        raise ValueError(f"addresses must have shape (instances, 32), not {a.shape}")
    act = np.ones(a.shape, bool) if active is None else np.broadcast_to(np.asarray(active, bool), a.shape)
    width = MATRIX_ROW_BYTES if matrix is not None else nbytes
    ph = phases(nbytes, matrix)
    n_inst = a.shape[0]
    wf = np.zeros((n_inst, len(ph)), np.int64)
    for k, lanes in enumerate(ph):
        sl = list(lanes)
        words = _words(a[:, sl], width)  # (inst, lanes, w)
        words = np.where(act[:, sl, None], words, -1).reshape(n_inst, -1)
        words = np.sort(words, axis=1)
        fresh = np.ones(words.shape, bool)
        fresh[:, 1:] = words[:, 1:] != words[:, :-1]
        fresh &= words >= 0  # each distinct touched word once (same word: broadcast / one write)
        inst = np.broadcast_to(np.arange(n_inst)[:, None], words.shape)
        per_bank = np.bincount(inst[fresh] * BANKS + words[fresh] % BANKS, minlength=n_inst * BANKS)
        wf[:, k] = per_bank.reshape(n_inst, BANKS).max(axis=1) if n_inst else 0
    return Count(wf.sum(axis=1), (wf > 0).sum(axis=1), wf.max(axis=1, initial=0), wf)


def lane_bank_map(addr, nbytes: int, active=None, matrix: int | None = None) -> np.ndarray:
    """Which wavefront of its phase serves each lane's word in each bank, for one warp instruction.

    Parameters
    ----------
    addr, nbytes, active, matrix
        As :func:`count`, for one instance: ``addr`` of shape (32,).

    Returns
    -------
    ndarray of int64, shape (32 lanes, 32 banks)
        ``-1`` where the lane touches no word of the bank; else ``k``: the lane's word is the ``k``-th
        (0-based, in address order) distinct word of that bank in the lane's phase, so a column with values
        ``0 .. k`` is a ``(k+1)``-way conflict and lanes sharing a value in a column share a word (a broadcast).
    """
    a = np.asarray(addr, np.int64).reshape(32)
    act = np.ones(32, bool) if active is None else np.asarray(active, bool).reshape(32)
    width = MATRIX_ROW_BYTES if matrix is not None else nbytes
    out = np.full((32, BANKS), -1, np.int64)
    for lanes in phases(nbytes, matrix):
        sl = [t for t in lanes if act[t]]
        if not sl:
            continue
        words = _words(a[sl], width)
        for b in range(BANKS):
            here = np.unique(words[(words >= 0) & (words % BANKS == b)])
            for i, t in enumerate(sl):
                w = words[i][(words[i] >= 0) & (words[i] % BANKS == b)]
                if w.size:
                    out[t, b] = int(np.searchsorted(here, w[0]))
    return out
