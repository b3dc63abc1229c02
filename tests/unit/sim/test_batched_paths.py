"""The simulator's batched paths give what statement-by-statement execution gives.

Copy loops run as runs, register blocks and fixed index arrays (a swizzled shared tile, the ``ld`` -> register ->
``st`` chain), consecutive ldmatrix/stmatrix of one op as one access, tcgen05.ld/st on a block of TMEM: each
cell below runs with :data:`tilemagic.sim.interpreter.BATCHED` on and off, and the memory, the hazards (every
message, located at both lines), the poison and the checks must be the same.  The racy and uninitialised cells
are the point: a batched path that skipped a tracker call, or reordered one, would pass clean here.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from tilemagic.sim import hb as hbmod
from tilemagic.sim import interpreter

from cells import LDSTMATRIX_CASES, smem_cell
from helpers import run

SW = "swizzle(3, 3, 3)"


def _smem(body: str, threads: int = 128, dtype: str = "float16", rows: int = 64, cols: int = 64,
          lay: str = SW, frag: str = "frag(16x128b)") -> str:
    return (f"kernel k threads={threads}\nglobal A: {dtype}[{rows}, {cols}]\nglobal B: {dtype}[{rows}, {cols}] = zeros\n"
            f"shared S: {dtype}[{rows}, {cols}] @ {lay}\nshared U: {dtype}[{rows}, {cols}] @ {lay}\n"
            f"local a: {dtype}[{rows}, {cols}] @ {frag}\n" + body)


REG = ("kernel k threads=128\nglobal A: float32[256, 64]\nglobal B: float32[256, 64] = zeros\n"
       "local a: float32[128, 64] @ S[(128, 64) : (1@tid_in_wg, 1)]\n")
TM = ("kernel k threads=128\nglobal A: float32[128, 32]\nglobal B: float32[128, 32] = zeros\n"
      "tmem T: float32[128, 32]\nlocal a: float32[128, 32] @ S[(128, 32) : (1@tid_in_wg, 1)]\n"
      "local b: float32[128, 32] @ S[(128, 32) : (1@tid_in_wg, 1)]\n")

CELLS = {
    # swizzled gmem_smem both ways (the fixed-index side), clean
    "swizzled round trip": _smem("wg.copy S <- A\ncta_sync\nwg.copy B <- S\ncheck B == A"),
    # rows another thread wrote, read without the barrier: a read-after-write race through the swizzle
    "swizzled race": _smem("wg.copy S <- A\nwg.copy B[0:32, :] <- S[8:40, :]\ncheck B == A"),
    # a shared tile read before anything wrote it: uninitialised, FAIL
    "swizzled uninitialised": _smem("wg.copy B <- S\ncheck B == A"),
    # the second copy overwrites S while the first one's readers may still read it (write after read)
    "swizzled war": _smem("wg.copy S <- A\ncta_sync\nwg.copy B <- S\nwg.copy S[8:40, :] <- A[32:64, :]\ncta_sync\n"
                          "check B == A"),
    # ldmatrix / stmatrix, one op each, clean
    "ldstmatrix round trip": _smem("wg.copy S <- A\ncta_sync\nwg.copy a <- S\nwg.copy U <- a\ncta_sync\n"
                                   "wg.copy B <- U\ncheck B == A"),
    # ldmatrix without the barrier after the shared store
    "ldmatrix race": _smem("wg.copy S <- A\nwg.copy a <- S\nwg.copy U <- a\ncta_sync\nwg.copy B <- U\n"
                           "check B == A"),
    # stmatrix of registers nothing wrote (uninitialised), then read back
    "stmatrix uninitialised": _smem("wg.copy U <- a\ncta_sync\nwg.copy B <- U\ncheck B == A"),
    # stmatrix into a tile another op still reads (no barrier between)
    "stmatrix war": _smem("wg.copy S <- A\ncta_sync\nwg.copy B <- S\nwg.copy a <- S\nwg.copy S <- a\n"
                          "cta_sync\ncheck B == A"),
    # register tiles: thread-major runs and register blocks, the second tile half written
    "reg round trip": REG + "wg.copy a <- A[0:128, :]\nwg.copy B[0:128, :] <- a\nwg.copy a <- A[128:256, :]\n"
                            "wg.copy B[128:256, :] <- a\ncheck B == A",
    "reg uninitialised": REG + "wg.copy a[0:64, :] <- A[0:64, :]\nwg.copy B[0:128, :] <- a\ncheck B == A",
    # a global tile two warpgroups' ops write without a barrier, 256 threads
    "global waw": ("kernel k threads=256\nglobal A: float32[256, 64]\nglobal B: float32[256, 64] = zeros\n"
                   "shared S: float32[64, 64]\ncta.copy S <- A[0:64, :]\ncta_sync\ncta.copy B[0:64, :] <- S\n"
                   "cta.copy B[0:64, :] <- A[64:128, :]\ncheck B == A"),
    # copies whose addresses do not depend on the thread, run by several threads (one elected thread per warp:
    # the fallback of a small warp.copy in a 2-warp CTA, thread.copy): no run over the threads — only the region
    "elected threads": ("kernel k threads=64\nglobal A: float32[4, 8]\nglobal B: float32[4, 8] = zeros\n"
                        "global Z: float32[4, 8] = zeros\nwarp.copy B[0:1, :] <- A[1:2, :]\n"
                        "check B[1:4, :] == Z[1:4, :]\ncheck B[0:1, :] == A[1:2, :]"),
    "thread scope, many threads": ("kernel k threads=256\nglobal A: float32[128, 64]\nglobal B: float32[128, 64] = zeros\n"
                                   "shared U: float32[128, 64] @ swizzle(3, 2, 3)\ncta.copy U <- A\ncta_sync\n"
                                   "thread.copy B[16:17, 0:8] <- U[80:81, 0:8]\ncheck B[16:17, 0:8] == A[80:81, 0:8]\n"
                                   "check B[17:18, :] == B[18:19, :]"),
    # tcgen05 round trip, and the tcgen05.ld before `wait st`
    "tmem round trip": TM + "wg.copy a <- A\nwg.copy_async T <- a\nwait st\ncta_sync\nwg.copy_async b <- T\n"
                            "wait ld\nwg.copy B <- b\ncheck B == A",
    "tmem ld before wait st": TM + "wg.copy a <- A\nwg.copy_async T <- a\nwg.copy_async b <- T\nwait ld\n"
                                   "wait st\nwg.copy B <- b\ncheck B == A",
}


def _where(message: str) -> str:
    """A hazard without the element and the threads it names: a batched access meets the first racing element
    of a statement in another order than one statement after another (both name a true race at both lines)."""
    return re.sub(r"\b(thread|threads) \d+( and \d+)?|[A-Za-z_]\w*\[[\d, ]+\]|\(thread \d+, [^)]*\)", "…", message)


def _outcome(src: str, batched: bool, monkeypatch) -> dict:
    monkeypatch.setattr(interpreter, "BATCHED", batched)
    res = run(src, allow_fail=True)
    hb = res.launch.hb if res.launch is not None else None
    return {"warnings": [_where(w) for w in res.warnings if w.startswith("hazard")],
            "checks": [repr(c) for c in res.launch.checks],
            "outputs": {k: np.asarray(v).tobytes() for k, v in res.launch.outputs.items()},
            "poison": {k: np.asarray(v).tobytes() for k, v in (hb.poison.items() if hb else ())},
            "unwritten": {k: np.asarray(v).tobytes() for k, v in (hb.unwritten.items() if hb else ())},
            "incomplete": list(hb.incomplete) if hb else []}


# cells whose buffers the tracker keeps in units of several elements, racing and clean: ldmatrix.trans (16-bit
# halves), a tile written by vectors and read element by element, a vector-only tile
GRANULE_CELLS = {
    **CELLS,
    "ldmatrix.trans race": smem_cell(*LDSTMATRIX_CASES[1][:7]).replace("cta_sync\n", "", 1),
    "ldmatrix.trans, swizzled": smem_cell(*LDSTMATRIX_CASES[2][:7]),
    "vectors written, elements read, race": (
        "kernel k threads=128\nglobal A: float32[128, 8]\nglobal B: float32[128, 8] = zeros\n"
        "shared S: float32[128, 8]\nlocal t: float32[128, 8] @ S[(8, 128) : (1, 1@tid_in_wg)]\n"
        "wg.copy S <- A\nwg.copy t <- S\nwg.copy B <- t\ncheck B == A"),
    "vectors only, war": (
        "kernel k threads=128\nglobal A: float32[128, 8]\nglobal B: float32[128, 8] = zeros\n"
        "shared S: float32[128, 8]\nwg.copy S <- A\ncta_sync\nwg.copy B[0:64, :] <- S[64:128, :]\n"
        "wg.copy S[32:96, :] <- A[0:64, :]\ncta_sync\ncheck B == A"),
}


def _exact(src: str, monkeypatch, per_byte: bool) -> tuple:
    if per_byte:  # the reference: one shadow entry per byte of every buffer (TMEM keeps its 32-bit cells)
        monkeypatch.setattr(hbmod, "_units", lambda k, acc=None: {b.name: 1 for b in (*k.params, *k.shared, *k.locals)})
    else:
        monkeypatch.undo()
    res = run(src, allow_fail=True)
    hb = res.launch.hb
    return ([(h.kind, h.buffer, h.element, h.threads, h.span, h.other_span, h.message) for h in hb.hazards],
            {k: np.asarray(v).tobytes() for k, v in hb.poison.items()}, list(hb.incomplete),
            [repr(c) for c in res.launch.checks])


@pytest.mark.parametrize("name", list(GRANULE_CELLS))
def test_access_granule_shadows_report_what_a_per_byte_shadow_reports(name, monkeypatch):
    """The tracker keeps a buffer in units of the gcd of its access granules (:func:`tilemagic.sim.hb._units`):
    every hazard — its element, threads, both lines and message — and the poison are those of a shadow kept
    per byte."""
    src = GRANULE_CELLS[name]
    coarse = _exact(src, monkeypatch, per_byte=False)
    assert coarse == _exact(src, monkeypatch, per_byte=True)
    assert bool(coarse[0]) == any(w in name for w in ("race", "uninitialised", "war", "waw", "before"))


@pytest.mark.parametrize("name", list(CELLS))
def test_batched_equals_statement_by_statement(name, monkeypatch):
    src = CELLS[name]
    fast, slow = _outcome(src, True, monkeypatch), _outcome(src, False, monkeypatch)
    assert fast == slow
    racy = any(w in name for w in ("race", "uninitialised", "war", "waw", "before"))
    assert bool(fast["warnings"]) == racy, fast["warnings"]  # (the bad cells are bad, the good ones clean)
    if not racy:
        assert "passed=False" not in "".join(fast["checks"])  # (and their checks pass)
