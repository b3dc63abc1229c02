"""The launch worker through the real process boundary, with a fake GPU handler (no CuPy, no GPU).

Each failure mode (hang, slow compile, SIGSEGV, exit, sticky CUDA error, trap, a bug in the
worker) must come back as a located LaunchError, and the next launch must work — through
``LaunchWorker`` directly, through ``tilemagic.tilecopy`` and through the ``%%tilecopy`` magic.
"""

import math
import os
import signal
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import numpy as np
import pytest

import tilemagic
from tilemagic.codegen.cuda import CudaSource
from tilemagic.errors import LaunchError, LaunchInterrupted
from tilemagic.ir.nodes import Buffer
from tilemagic.runtime import worker as W
from tilemagic.runtime.launch import GpuRun

HERE = str(Path(__file__).resolve().parent)
sys.path.insert(0, HERE)
import fake_gpu_handler  # noqa: E402  (its SLEEPY_S)

CELL = """kernel {name} threads=32
global A: float32[4, 6]
global B: float32[4, 6]
shared S: float32[4, 6]
warp.copy S <- A
cta_sync
warp.copy B <- S
check B == A
"""


def src(name):
    bufs = (Buffer("A", "global", "float32", (4, 6)), Buffer("B", "global", "float32", (4, 6)))
    return CudaSource("// fake", name, "native", bufs, (), 32)


@pytest.fixture
def fake():
    w = W.LaunchWorker("fake_gpu_handler", pythonpath=[HERE], need_cupy=False, start_timeout=60)
    old = W.set_worker(w)
    yield w
    W.set_worker(old)
    w.stop()


def ok_launch(w):
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    run = w.launch(src("copy"), None, {"A": a, "B": np.zeros_like(a)}, timeout=30)
    assert isinstance(run, GpuRun)
    np.testing.assert_array_equal(run.outputs["B"], a)
    return run


def cell(name, **kw):
    kw.setdefault("launch", "gpu")
    return tilemagic.tilecopy(CELL.format(name=name), emit_warnings=False, **kw)


def test_worker_is_kept_warm(fake):
    first = ok_launch(fake)
    second = ok_launch(fake)
    assert first.mode == second.mode == f"fake GPU pid {fake.pid}"
    assert fake.starts == 1 and fake.alive()


def test_hang_is_a_timeout_and_the_next_launch_works(fake):
    ok_launch(fake)
    pid = fake.pid
    with pytest.raises(LaunchError) as ei:
        fake.launch(src("hang"), None, {}, timeout=0.5)
    assert ei.value.timeout == 0.5
    assert "did not finish within 0.5 s (--timeout)" in ei.value.message and "'hang'" in ei.value.message
    assert "fresh CUDA context" in ei.value.hint
    assert not fake.alive()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # killed and reaped, not left running
    ok_launch(fake)
    assert fake.starts == 2


def test_slow_compile_hits_the_compile_limit_not_the_run_timeout(fake):
    fake.compile_timeout = 1.0
    ok_launch(fake)  # warm: the start-up allowance is not added
    with pytest.raises(LaunchError, match="gave no answer within 1 s while running 'slowcompile'"):
        fake.launch(src("slowcompile"), None, {}, timeout=30)
    ok_launch(fake)


def test_worker_killed_by_a_signal(fake):
    with pytest.raises(LaunchError, match="was killed by SIGSEGV while running 'segv'"):
        fake.launch(src("segv"), None, {})
    ok_launch(fake)
    assert fake.starts == 2


def test_worker_exit_shows_its_output(fake):
    with pytest.raises(LaunchError) as ei:
        fake.launch(src("exit"), None, {})
    assert "exited with status 7" in ei.value.message
    assert "fake driver: unrecoverable state" in ei.value.details
    ok_launch(fake)


def test_sticky_cuda_error_restarts_the_worker(fake):
    ok_launch(fake)
    pid = fake.pid
    with pytest.raises(LaunchError) as ei:
        fake.launch(src("sticky"), None, {})
    err = ei.value
    assert "cudaErrorIllegalAddress" in err.message
    assert "unusable" in err.hint and "fresh CUDA context" in err.hint
    assert "restart the Python kernel" not in str(err)
    run = ok_launch(fake)
    assert fake.pid != pid and run.mode == f"fake GPU pid {fake.pid}"


def test_trap_keeps_the_worker_and_its_location(fake):
    ok_launch(fake)
    pid = fake.pid
    with pytest.raises(LaunchError) as ei:
        fake.launch(src("trap"), None, {})
    assert (ei.value.line, ei.value.col) == (3, 1) and "column 40" in ei.value.message
    ok_launch(fake)
    assert fake.pid == pid and fake.starts == 1


def test_bug_in_the_worker_is_an_internal_launch_error(fake):
    with pytest.raises(LaunchError) as ei:
        fake.launch(src("bug"), None, {})
    assert "internal error in the launch worker" in ei.value.message
    assert "ZeroDivisionError" in ei.value.details
    ok_launch(fake)
    assert fake.starts == 1


def test_worker_imports_neither_ipython_nor_lark_nor_cupy(fake):
    assert fake.launch(src("modules"), None, {}) == []


def test_bad_timeout_is_rejected(fake):
    with pytest.raises(ValueError):
        fake.launch(src("copy"), None, {}, timeout=0)


def test_no_cupy_means_no_worker_process():
    w = W.LaunchWorker()  # the default handler; this machine has no CuPy
    if W.cupy_installed():
        pytest.skip("CuPy is installed here")
    st = w.probe()
    assert not st.available and st.reason.startswith("CuPy is not installed")
    assert w.starts == 0 and w.pid is None


def test_notebook_process_does_not_import_cupy_for_sim_launches():
    code = ("import sys, tilemagic, warnings; warnings.simplefilter('ignore');"
            "from tilemagic.cli import demo_source;"
            "r = tilemagic.tilecopy(demo_source('tmem_roundtrip'), launch='auto');"
            "assert r.launch.backend == 'sim';"
            "from tilemagic.runtime.worker import get_worker; assert get_worker().starts == 0;"
            "assert 'cupy' not in sys.modules")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(tilemagic.__file__).parents[1])]))
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=120)


# ----------------------------------------------------------------------------- through the pipeline
def test_pipeline_hang_is_located_and_the_next_cell_passes(fake):
    with pytest.raises(LaunchError) as ei:
        cell("hang_k", timeout=0.5)
    err = ei.value
    assert (err.line, err.col) == (1, 1)  # the kernel line
    text = err.render()
    assert text.startswith("tilecopy:1:1: LaunchError: the kernel did not finish within 0.5 s")
    assert "  1 | kernel hang_k threads=32" in text
    res = cell("after_hang")
    assert res.launch.backend == "cupy" and res.launch.passed and res.launch.device == "Fake GPU (CC 9.0)"
    assert fake.starts == 2


def test_pipeline_sticky_error_then_next_cell_passes(fake):
    with pytest.raises(LaunchError, match="cudaErrorIllegalAddress") as ei:
        cell("sticky_k")
    assert ei.value.line == 1
    assert cell("after_sticky").launch.passed


def test_pipeline_timeout_option_from_the_header_and_validation(fake):
    with pytest.raises(LaunchError, match="within 0.25 s"):
        tilemagic.tilecopy("%%tilecopy --launch gpu --timeout 0.25\n" + CELL.format(name="hang_h"),
                           emit_warnings=False)
    res = tilemagic.tilecopy("%%tilecopy --launch gpu --timeout 30\n" + CELL.format(name="ok_h"),
                             emit_warnings=False)
    assert res.options.timeout == 30.0 and res.launch.passed
    for bad in ("0", "-1", "nan", "inf"):
        with pytest.raises(tilemagic.TileSyntaxError, match="--timeout"):
            tilemagic.tilecopy(f"%%tilecopy --launch off --timeout {bad}\n" + CELL.format(name="k"))
    with pytest.raises(ValueError, match="timeout"):
        cell("k", timeout=0)


def test_magic_timeout_and_next_cell(fake, ip):
    from IPython.utils.capture import capture_output

    with capture_output() as cap:
        r = ip.run_cell("%%tilecopy --launch gpu --timeout 0.5\n" + CELL.format(name="hang_m"))
    assert not r.success and isinstance(r.error_in_exec, LaunchError)
    out = cap.stdout + cap.stderr
    assert "tilecopy:2:1: LaunchError: the kernel did not finish within 0.5 s" in out
    assert "Traceback" not in out
    ok = ip.run_cell("%%tilecopy --launch gpu\n" + CELL.format(name="next_m"))
    assert ok.success and ok.result.launch.passed and ok.result.options.timeout == 10.0
    ip.run_line_magic("config", "TileMagics.timeout = 0.5")
    with capture_output():
        r = ip.run_cell("%%tilecopy --launch gpu\n" + CELL.format(name="hang_cfg"))
    assert isinstance(r.error_in_exec, LaunchError) and "within 0.5 s" in r.error_in_exec.message
    with pytest.raises(tilemagic.TileSyntaxError, match="--timeout"):
        ip.run_cell_magic("tilecopy", "--timeout -3", CELL.format(name="k"))


# ----------------------------------------------------------------------------- replies belong to their request
def launch_with(w, name, a, **kw):
    return w.launch(src(name), None, {"A": a, "B": np.zeros_like(a)}, **kw)


@pytest.fixture
def sigint_raises():
    """SIGINT raises KeyboardInterrupt in the main thread (Python's default handler) during the test."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)


def test_real_sigint_during_a_launch_stops_it_and_the_next_launch_gets_its_own_reply(fake, sigint_raises):
    ok_launch(fake)
    first_pid = fake.pid
    sevens = np.full((4, 6), 7.0, np.float32)
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))  # a real signal while the parent waits
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt) as ei:
            launch_with(fake, "sleepy_interrupted", sevens, timeout=30)
    finally:
        timer.cancel()
    time.sleep(fake_gpu_handler.SLEEPY_S + 0.5)  # long enough for an abandoned reply to have arrived
    run = ok_launch(fake)  # another kernel, other inputs: its own outputs (arange), not the sevens
    assert run.mode == f"fake GPU pid {fake.pid}"
    err = ei.value
    assert isinstance(err, LaunchInterrupted) and isinstance(err, LaunchError)
    assert err.message.startswith("launch interrupted while running 'sleepy_interrupted'; the launch worker was "
                                  "stopped")
    assert "fresh CUDA context" in err.hint
    assert fake.starts == 2 and fake.pid != first_pid
    with pytest.raises(ProcessLookupError):
        os.kill(first_pid, 0)  # killed and reaped


def test_sigint_through_the_pipeline_is_located_and_the_next_cell_passes(fake, sigint_raises):
    ok_launch(fake)  # started and probed: the signal comes while the kernel runs
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(LaunchInterrupted) as ei:
            cell("sleepy_cell")
    finally:
        timer.cancel()
    text = ei.value.render()
    assert text.startswith("tilecopy:1:1: LaunchInterrupted: launch interrupted while running 'sleepy_cell'")
    assert "  1 | kernel sleepy_cell threads=32" in text
    time.sleep(fake_gpu_handler.SLEEPY_S + 0.5)
    res = cell("after_interrupt")
    assert res.launch.passed and res.launch.mode == f"fake GPU pid {fake.pid}"


def test_sigint_during_the_probe_stops_the_cell_instead_of_falling_back_to_the_simulator(fake, sigint_raises,
                                                                                       monkeypatch):
    monkeypatch.setenv("FAKE_GPU_PROBE_S", "2")
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(LaunchInterrupted, match="while probing the GPU"):
            cell("k", launch="auto")  # not "no GPU available, so the CPU simulator ran"
    finally:
        timer.cancel()
    monkeypatch.delenv("FAKE_GPU_PROBE_S")
    assert not fake.alive() and cell("after_probe").launch.backend == "cupy"


def test_an_exception_during_the_wait_leaves_no_reply_behind(fake):
    ok_launch(fake)
    conn, real_poll = fake._conn, fake._conn.poll
    calls = []

    def poll(timeout=0.0):  # the first wait of the next request fails (as a bug or a MemoryError would)
        calls.append(timeout)
        if len(calls) == 1:
            raise RuntimeError("injected failure while waiting")
        return real_poll(timeout)

    conn.poll = poll
    with pytest.raises(RuntimeError, match="injected"):
        launch_with(fake, "sleepy_abandoned", np.full((4, 6), 3.0, np.float32), timeout=30)
    time.sleep(fake_gpu_handler.SLEEPY_S + 0.5)
    ok_launch(fake)  # arange, not the threes
    assert fake.starts == 2


def test_a_huge_timeout_waits_instead_of_overflowing(fake):
    a = np.full((4, 6), 5.0, np.float32)
    run = launch_with(fake, "sleepy_long_timeout", a, timeout=1e300)
    np.testing.assert_array_equal(run.outputs["B"], a)
    ok_launch(fake)
    assert fake.starts == 1
    for bad in (math.nan, math.inf, -1.0, "3"):
        with pytest.raises(ValueError, match="timeout"):
            launch_with(fake, "copy", a, timeout=bad)


def test_a_reply_to_another_request_is_dropped(fake):
    ok_launch(fake)
    stale = {"native": src("sleepy_stale"), "emulated": None, "bench": False,
             "inputs": {"A": np.full((4, 6), 9.0, np.float32), "B": np.zeros((4, 6), np.float32)}}
    fake._conn.send(("launch", 10_000, stale))  # a request nobody waits for: its phase and reply come first
    ok_launch(fake)  # gets its own outputs
    assert fake.dropped == 2 and fake.starts == 1


def test_serve_echoes_the_request_id():
    import socket
    from multiprocessing.connection import Connection

    a, b = socket.socketpair()
    parent, child = Connection(a.detach()), Connection(b.detach())
    handler = types.SimpleNamespace(handle_probe=lambda: "probed",
                                    handle_launch=lambda req, started: (started(), req["x"])[1])
    t = threading.Thread(target=W.serve, args=(child, handler), daemon=True)
    t.start()
    parent.send(("probe", 41, None))
    parent.send(("launch", 42, {"x": 5}))
    parent.send(("what", 43, None))
    replies = [parent.recv() if parent.poll(10) else None for _ in range(4)]
    parent.send(("exit", 44, None))
    t.join(10)
    parent.close()
    child.close()
    assert replies[:3] == [("ok", 41, "probed"), ("phase", 42, "launch"), ("ok", 42, 5)]
    assert replies[3] is not None and replies[3][:2] == ("bug", 43)


def test_sigint_in_the_magic_is_one_located_message_and_the_kernel_stays_usable(fake, ip, sigint_raises):
    from IPython.utils.capture import capture_output

    ok_launch(fake)
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with capture_output() as cap:
            r = ip.run_cell("%%tilecopy --launch gpu --view text\n" + CELL.format(name="sleepy_magic"))
    finally:
        timer.cancel()
    assert not r.success and isinstance(r.error_in_exec, LaunchInterrupted)
    out = cap.stdout + cap.stderr
    assert "tilecopy:2:1: LaunchInterrupted: launch interrupted while running 'sleepy_magic'" in out
    assert "Traceback" not in out
    time.sleep(fake_gpu_handler.SLEEPY_S + 0.5)
    ok = ip.run_cell("%%tilecopy --launch gpu --view text\n" + CELL.format(name="after_magic_interrupt"))
    assert ok.success and ok.result.launch.passed and ok.result.launch.mode == f"fake GPU pid {fake.pid}"
