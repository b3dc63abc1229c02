"""Issue 12 on the GPU: an interrupted ``--bench`` launch leaves no reply behind.

A ``--bench`` launch of a big fallback cell is interrupted by a real SIGINT (a timer thread, 0.5 s
after the worker said "compiled, launching", while the bench's timed launches run).  The launch
must stop with a located ``LaunchInterrupted`` and a killed worker; the next cell, the same
buffers but a kernel that copies only 16 of the 33 rows back, must report FAIL (``CheckFailed``
with its own outputs: the interrupted launch's full copy would PASS), and a third, good cell PASS.

Run: ``pytest -o addopts="" -m gpu tests/gpu/test_gpu_interrupt.py -s`` on a machine with CuPy and a
GPU (under a minute on the H200).
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

pytestmark = pytest.mark.gpu

from gpu_guard import cupy  # noqa: E402,F401  (skips the module without a GPU)

import tilemagic  # noqa: E402
from cells import fallback_cell  # noqa: E402
from helpers import run  # noqa: E402
from tilemagic.runtime import worker as W  # noqa: E402

ROWS, COLS, KEPT = 33, 64, 16
GOOD = fallback_cell("cta", 256, ROWS, COLS)
PARTIAL = GOOD.replace("cta.copy B <- S", f"cta.copy B[0:{KEPT}, :] <- S[0:{KEPT}, :]")


@pytest.fixture
def fresh_worker():
    w = W.LaunchWorker()
    old = W.set_worker(w)
    old_handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield w
    signal.signal(signal.SIGINT, old_handler)
    W.set_worker(old)
    w.stop()


def interrupt_when_running(w: W.LaunchWorker, after_s: float) -> list[threading.Timer]:
    """SIGINT to this process ``after_s`` seconds after the worker's next "compiled, launching" message."""
    conn = w._conn
    assert conn is not None
    real_recv, timers = conn.recv, []

    def recv():
        msg = real_recv()
        if msg[0] == "phase" and not timers:
            timers.append(threading.Timer(after_s, os.kill, (os.getpid(), signal.SIGINT)))
            timers[0].start()
        return msg

    conn.recv = recv  # type: ignore[method-assign]
    return timers


def test_interrupted_bench_then_a_failing_kernel_reports_fail_then_a_good_one_passes(fresh_worker):
    w = fresh_worker
    assert PARTIAL != GOOD
    warm = run(GOOD, launch="gpu")  # starts the worker (and compiles the single-CTA kernel)
    assert warm.launch.passed and w.starts == 1
    # 4 GiB of traffic: the timed launches of this one-thread copy take seconds (--bench counts the bytes the kernel
    # moves, so a smaller budget made the whole bench end inside the 0.5 s)
    timers = interrupt_when_running(w, 0.5)
    t0 = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt) as ei:
            run(GOOD, launch="gpu", bench=True, bench_bytes=1 << 32, timeout=60)
    finally:
        for t in timers:
            t.cancel()
    interrupted_s = time.monotonic() - t0
    err = ei.value
    assert timers, "the SIGINT came before the kernel ran"
    assert isinstance(err, tilemagic.LaunchInterrupted) and err.line == 2  # the kernel line
    assert "launch interrupted while running 'fb'" in err.message and not w.alive()

    t1 = time.monotonic()
    with pytest.raises(tilemagic.CheckFailed) as fi:
        run(PARTIAL, launch="gpu")
    res = fi.value.result
    assert res.launch.backend == "cupy" and not res.launch.passed
    assert res.launch.checks[0].mismatches == (ROWS - KEPT) * COLS  # its own outputs, not the full copy
    assert w.starts == 2

    good = run(GOOD, launch="gpu")
    assert good.launch.passed and good.launch.backend == "cupy"
    print(f"\ninterrupted --bench after {interrupted_s:.2f} s (SIGINT 0.5 s into the run): {err.render().splitlines()[0]}"
          f"\nnext cell (partial copy): {fi.value.render().splitlines()[0]} ({time.monotonic() - t1:.2f} s, "
          f"worker starts {w.starts})\nthird cell: {[str(c) for c in good.launch.checks]}")
