"""GPU launches in a separate worker process, with a timeout.

A kernel that reads an illegal address, traps, or never finishes must not take the
notebook down with it: after a sticky CUDA error (``cudaErrorIllegalAddress``,
``cudaErrorLaunchFailure``, ...) the CUDA context of the process that launched is
unusable until that process ends, and a kernel that spins (a ``tcgen05.alloc`` that
can never be satisfied spins on the hardware) blocks its host thread forever.  So
the notebook never touches the GPU itself: :class:`LaunchWorker` starts
``python -m tilemagic.runtime.worker`` (a plain subprocess: no ``multiprocessing``
re-import of the notebook's ``__main__``, no IPython needed in the worker), keeps
it warm between cells, and

* sends each launch over a socket pair (pickled requests and replies,
  :class:`multiprocessing.connection.Connection`); every request carries an id
  (a counter of this :class:`LaunchWorker`) and every reply, the "compiled,
  launching" message included, echoes it: a reply with another id is read and
  dropped, so a cell can never take an earlier request's outputs as its own;
* gives compiling a generous limit (:data:`COMPILE_TIMEOUT_S`) and the kernel run
  ``timeout`` seconds (``--timeout``, default :data:`DEFAULT_TIMEOUT_S`), counted
  from the worker's "compiled, launching" message;
* kills the worker on a timeout, and treats a worker that died (a signal, a
  segfault in a driver) or that reported a sticky CUDA error as gone: each of
  these is a :class:`~tilemagic.errors.LaunchError`, and the next launch starts a
  fresh worker with a fresh CUDA context, without restarting the notebook kernel;
* never leaves a reply behind: any exception while a request is being sent or
  waited for (``KeyboardInterrupt``, a ``MemoryError``, a bug) kills the worker
  before it propagates, so no reply of that request can reach a later one.

Interrupting a launch
---------------------
A kernel cannot be cancelled once it runs on the GPU, and a CUDA call blocked on it
cannot be interrupted either, so ``KeyboardInterrupt`` (Ctrl-C, a notebook's
"interrupt kernel") while the parent waits kills the worker (as a timeout does) and
raises :class:`~tilemagic.errors.LaunchInterrupted`: "launch interrupted while running
'k'; the launch worker was stopped ...", located at the kernel line by the pipeline.  It
is a ``KeyboardInterrupt`` (a script's Ctrl-C still ends the script, the command
line exits with status 130) and a :class:`~tilemagic.errors.LaunchError` (IPython
shows the one located message, the notebook kernel stays usable).  The next launch
starts a fresh worker (its kernels come back from CuPy's disk cache).

Only the worker imports CuPy.  :meth:`LaunchWorker.probe` answers "CuPy is not
installed" without starting a process when no ``cupy`` module can be found, so a
machine without CuPy (CI, the simulator) never starts a worker.

The handler
-----------
What the worker does with a request is a *handler module* (default: this module)
with two functions: ``handle_probe() -> DeviceStatus`` and
``handle_launch(request, started) -> GpuRun``, where ``request`` is the dict sent
by :meth:`LaunchWorker.launch` and ``started()`` must be called once the kernel is
compiled and about to run.  Tests swap in a handler that crashes, hangs or raises
to check the timeout, the restart and the error reports through the real process
boundary.
"""

from __future__ import annotations

import atexit
import importlib
import importlib.util
import math
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Iterable, Mapping
from multiprocessing.connection import Connection
from typing import IO, TYPE_CHECKING

from ..caches import register_cache
from ..errors import LaunchError, LaunchInterrupted
from ..options import DEFAULT_TIMEOUT_S  # noqa: F401  (re-exported: the default of ``--timeout``)

if TYPE_CHECKING:
    from .device import DeviceStatus

#: Seconds for the worker to start and import CuPy (and answer a probe).
START_TIMEOUT_S = 120.0
#: Seconds for NVRTC to compile a kernel (before the ``--timeout`` clock starts).
COMPILE_TIMEOUT_S = 300.0
#: The handler module of a default worker (this module's ``handle_probe`` / ``handle_launch``).
DEFAULT_HANDLER = "tilemagic.runtime.worker"
#: Characters of the worker's stderr shown when it dies.
STDERR_TAIL = 2000
#: Longest single wait on the socket, seconds (a longer limit is waited for in slices, so that no
#: ``timeout`` value can overflow ``select``).
POLL_SLICE_S = 60.0

_RESTART_HINT = ("the launch worker restarts with a fresh CUDA context on the next launch; "
                 "the notebook kernel keeps running")


# ----------------------------------------------------------------------------- the default handler (worker side)
def handle_probe():
    """Worker side of :meth:`LaunchWorker.probe`: :func:`tilemagic.runtime.device.probe` in the worker."""
    from .device import probe

    return probe()


def handle_launch(request: dict, started):
    """Worker side of :meth:`LaunchWorker.launch`: :func:`tilemagic.runtime.launch.run_on_gpu`."""
    from .launch import run_on_gpu

    return run_on_gpu(request["native"], request["emulated"], request["inputs"], bench=request["bench"],
                      bench_sources=request.get("bench_sources"), bench_bytes=request.get("bench_bytes"),
                      on_compiled=started)


# ----------------------------------------------------------------------------- worker main loop
def _error_fields(exc: LaunchError) -> tuple:
    span = exc.span
    return (exc.message, None if span is None else (span.line, span.col, span.end_line, span.end_col),
            exc.hint, exc.details, bool(getattr(exc, "sticky", False)))


def serve(conn: Connection, handler) -> int:
    """Answer requests on ``conn`` until it closes (worker side).  Returns the exit status.

    A request is ``(kind, id, payload)``.  Every reply is ``(tag, id, value)`` with the
    request's ``id``: ``("ok", id, value)``, ``("phase", id, "launch")`` (kernel compiled,
    about to run), ``("error", id, fields)`` for a :class:`LaunchError` (the worker exits
    after a sticky CUDA error, whose context is unusable) and ``("bug", id, traceback)``
    for any other exception.
    """
    while True:
        try:
            kind, rid, payload = conn.recv()
        except (EOFError, OSError):
            return 0
        try:
            if kind == "probe":
                conn.send(("ok", rid, handler.handle_probe()))
            elif kind == "launch":
                conn.send(("ok", rid, handler.handle_launch(payload, lambda: conn.send(("phase", rid, "launch")))))
            elif kind == "exit":
                return 0
            else:
                conn.send(("bug", rid, f"unknown request {kind!r}"))
        except LaunchError as exc:
            fields = _error_fields(exc)
            conn.send(("error", rid, fields))
            if fields[-1]:  # sticky CUDA error: this process's context is gone
                return 3
        except BaseException:  # noqa: BLE001 - everything else is reported, the worker stays up
            conn.send(("bug", rid, traceback.format_exc(limit=20)))


def main(argv: Iterable[str] | None = None) -> int:
    """``python -m tilemagic.runtime.worker FD HANDLER``: serve on the inherited socket ``FD``."""
    args = list(sys.argv[1:] if argv is None else argv)
    fd, handler = int(args[0]), (args[1] if len(args) > 1 else DEFAULT_HANDLER)
    conn = Connection(fd)
    code = serve(conn, importlib.import_module(handler))
    if code:  # after a sticky CUDA error: skip interpreter teardown (CuPy would free memory in a dead context)
        conn.close()
        os._exit(code)
    return code


# ----------------------------------------------------------------------------- parent side
def cupy_installed() -> bool:
    """Can a ``cupy`` module be found (without importing it)?"""
    try:
        return importlib.util.find_spec("cupy") is not None
    except (ImportError, ValueError):
        return False


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


class LaunchWorker:
    """A warm worker process that compiles and launches kernels; restarted after a failure.

    Parameters
    ----------
    handler : str, default this module
        Module the worker imports for ``handle_probe`` / ``handle_launch``.
    pythonpath : iterable of str
        Extra ``PYTHONPATH`` entries for the worker (the directory holding the
        ``tilemagic`` package this process imported always comes first).
    start_timeout, compile_timeout : float
        Seconds for the worker to start (and answer a probe), and to compile a kernel.
    need_cupy : bool, default True
        :meth:`probe` answers "CuPy is not installed" without a process when no
        ``cupy`` module is found.  Tests with a fake handler pass False.

    Attributes
    ----------
    starts : int
        How many worker processes were started (a restart adds one).
    dropped : int
        Replies read and dropped because they answered another request (their id).
    """

    def __init__(self, handler: str = DEFAULT_HANDLER, *, pythonpath: Iterable[str] = (),
                 start_timeout: float = START_TIMEOUT_S, compile_timeout: float = COMPILE_TIMEOUT_S,
                 need_cupy: bool = True):
        self.handler = handler
        self.pythonpath = tuple(pythonpath)
        self.start_timeout = float(start_timeout)
        self.compile_timeout = float(compile_timeout)
        self.need_cupy = need_cupy
        self.starts = 0
        self.dropped = 0
        self._seq = 0
        self._proc: subprocess.Popen | None = None
        self._conn: Connection | None = None
        self._log: IO[bytes] | None = None
        self._status: DeviceStatus | None = None
        self._lock = threading.RLock()

    # -- process management
    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _env(self) -> dict:
        # the directory holding the tilemagic package (this file is tilemagic/runtime/worker.py)
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env = dict(os.environ)
        parts = [root, *self.pythonpath] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(parts))
        env["PYTHONUNBUFFERED"] = "1"
        return env

    def start(self) -> None:
        """Start the worker process unless it is running."""
        with self._lock:
            if self.alive():
                return
            self.stop()
            parent, child = socket.socketpair()
            self._log = tempfile.TemporaryFile(mode="w+b", prefix="tilemagic-worker-")  # noqa: SIM115 (closed by stop)
            try:
                self._proc = subprocess.Popen(
                    [sys.executable, "-m", "tilemagic.runtime.worker", str(child.fileno()), self.handler],
                    pass_fds=(child.fileno(),), stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log,
                    env=self._env(), close_fds=True, start_new_session=True)
            except OSError as exc:
                parent.close()
                raise LaunchError(f"could not start the launch worker: {exc}") from None
            finally:
                child.close()
            self._conn = Connection(parent.detach())
            self.starts += 1

    def stop(self) -> None:
        """Stop the worker (killed if it does not exit at once)."""
        with self._lock:
            proc, conn = self._proc, self._conn
            self._proc = self._conn = None
            if conn is not None:
                try:
                    if proc is not None and proc.poll() is None:
                        conn.send(("exit", 0, None))
                except OSError:
                    pass
                conn.close()
            if proc is not None:
                try:
                    proc.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            if self._log is not None:
                self._log.close()
                self._log = None

    def _kill(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()

    def _stderr_tail(self) -> str | None:
        if self._log is None:
            return None
        try:
            self._log.seek(0, os.SEEK_END)
            size = self._log.tell()
            self._log.seek(max(0, size - STDERR_TAIL))
            text = self._log.read().decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            return None
        return text or None

    def _died(self, what: str) -> LaunchError:
        """The worker is gone: a LaunchError naming how it ended (the process is reaped)."""
        proc = self._proc
        code = None
        if proc is not None:
            try:
                code = proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._kill()
                code = proc.returncode
        how = ("ended" if code is None else f"was killed by {_signal_name(code)}" if code < 0
               else f"exited with status {code}")
        details = self._stderr_tail()
        self.stop()
        return LaunchError(f"the launch worker {how} while {what}", hint=_RESTART_HINT,
                           details=f"worker output:\n{details}" if details else None)

    # -- requests
    def _request(self, kind: str, payload, *, first_timeout: float, run_timeout: float | None = None,
                 what: str = "working"):
        """Send one request; wait ``first_timeout`` s for its reply or its ``phase`` message, then
        ``run_timeout`` s more after it.  The worker is killed when a limit passes, and when anything
        (``KeyboardInterrupt`` included) interrupts the send or the wait: no reply is ever left behind."""
        with self._lock:
            self.start()
            assert self._conn is not None  # start() connected it
            self._seq += 1
            rid = self._seq
            try:
                return self._exchange(self._conn, kind, rid, payload, first_timeout, run_timeout, what)
            except KeyboardInterrupt:
                self._kill()
                self.stop()
                raise LaunchInterrupted(f"launch interrupted while {what}; the launch worker was stopped (a kernel "
                                        f"running on the GPU cannot be cancelled)", hint=_RESTART_HINT) from None
            except LaunchError:
                raise  # the worker was stopped where that was needed
            except BaseException:
                self._kill()
                self.stop()
                raise

    def _exchange(self, conn: Connection, kind: str, rid: int, payload, first_timeout: float,
                  run_timeout: float | None, what: str):
        try:
            conn.send((kind, rid, payload))
        except OSError:
            raise self._died(what) from None
        limit, running = first_timeout, False
        deadline = time.monotonic() + limit
        while True:
            left = deadline - time.monotonic()
            try:
                ready = left > 0 and conn.poll(min(left, POLL_SLICE_S))
            except OSError:
                raise self._died(what) from None
            if not ready:
                if left > POLL_SLICE_S:
                    continue
                self._kill()
                self.stop()
                raise _timeout_error(limit, what, running)
            try:
                tag, reply_id, value = conn.recv()
            except (EOFError, OSError):
                raise self._died(what) from None
            if reply_id != rid:  # the answer to an earlier request: never this one's
                self.dropped += 1
                continue
            if tag == "phase":
                running = True
                limit = run_timeout if run_timeout is not None else first_timeout
                deadline = time.monotonic() + limit
                continue
            if tag == "ok":
                return value
            if tag == "error":
                message, span, hint, details, sticky = value
                from ..errors import Span

                err = LaunchError(message, Span(*span) if span else None, hint=hint, details=details)
                if sticky:
                    err.hint = f"{hint + '; ' if hint else ''}{_RESTART_HINT}"
                    self.stop()
                raise err
            raise LaunchError(f"internal error in the launch worker while {what}", hint=(
                "please report it with the cell"), details=str(value).rstrip())

    def probe(self, refresh: bool = False):
        """The worker's :class:`~tilemagic.runtime.device.DeviceStatus` (cached).

        Raises
        ------
        LaunchInterrupted
            Only this: ``KeyboardInterrupt`` while the worker starts or answers (it was killed);
            every other failure is an unavailable status naming it.
        """
        from .device import NO_CUPY, DeviceStatus

        if self._status is not None and not refresh:
            return self._status
        if self.need_cupy and not cupy_installed():
            self._status = DeviceStatus(False, NO_CUPY)
            return self._status
        try:
            self._status = self._request("probe", None, first_timeout=self.start_timeout,
                                         what="probing the GPU")
        except LaunchInterrupted:
            raise
        except LaunchError as exc:
            return DeviceStatus(False, f"the launch worker failed: {exc.message}")
        return self._status

    def launch(self, native, emulated, inputs: Mapping, *, bench: bool = False,
               timeout: float = DEFAULT_TIMEOUT_S, bench_sources=None, bench_bytes: int | None = None):
        """Compile and run a kernel in the worker; return its :class:`~tilemagic.runtime.launch.GpuRun`.

        Parameters
        ----------
        native, emulated, inputs, bench, bench_sources, bench_bytes
            As :func:`tilemagic.runtime.launch.run_on_gpu`.
        timeout : float, default :data:`DEFAULT_TIMEOUT_S`
            Seconds the kernel (and ``--bench``'s repeats) may run once compiled.

        Raises
        ------
        LaunchError
            Whatever ``run_on_gpu`` raises; a timeout (the worker is killed); the worker
            died (signal or exit status, with the tail of its output).  After a timeout,
            a death or a sticky CUDA error the next call starts a fresh worker.
        LaunchInterrupted
            ``KeyboardInterrupt`` while waiting: the worker was killed, the next call starts a
            fresh one.  Any other exception while waiting propagates after the worker was killed.
        ValueError
            ``timeout`` is not a positive finite number.
        """
        if not isinstance(timeout, (int, float)) or not 0 < timeout < math.inf:
            raise ValueError(f"timeout must be a positive, finite number of seconds, got {timeout!r}")
        name = getattr(native, "kernel_name", "kernel")
        req = {"native": native, "emulated": emulated, "inputs": dict(inputs), "bench": bool(bench),
               "bench_sources": bench_sources, "bench_bytes": bench_bytes}
        return self._request("launch", req, first_timeout=self.compile_timeout + (
            0 if self.alive() else self.start_timeout), run_timeout=float(timeout), what=f"running '{name}'")


def _timeout_error(limit: float, what: str, running: bool) -> LaunchError:
    """The LaunchError of a request that outlived its limit (the worker was killed); ``.timeout`` is the limit."""
    if running:
        msg = f"the kernel did not finish within {limit:g} s (--timeout) while {what}; the launch worker was stopped"
        hint = ("a kernel that spins (e.g. a tcgen05.alloc that can never be satisfied) never finishes, a long one "
                "needs a larger --timeout; " + _RESTART_HINT)
    else:
        msg = f"the launch worker gave no answer within {limit:g} s while {what}; it was stopped"
        hint = _RESTART_HINT
    err = LaunchError(msg, hint=hint)
    err.timeout = limit  # type: ignore[attr-defined]
    return err


# ----------------------------------------------------------------------------- the process-wide worker
_WORKER: LaunchWorker | None = None


def get_worker() -> LaunchWorker:
    """The worker this process launches through (created, not started, on first use)."""
    global _WORKER
    if _WORKER is None:
        _WORKER = LaunchWorker()
    return _WORKER


def set_worker(worker: LaunchWorker | None) -> LaunchWorker | None:
    """Replace the process-wide worker (the old one is stopped); returns the old one.  ``None`` resets."""
    global _WORKER
    old, _WORKER = _WORKER, worker
    if old is not None and old is not worker:
        old.stop()
    return old


register_cache("runtime.worker", lambda: set_worker(None),
               "the launch worker process (its compiled kernels and device probe): stopped, restarted on next launch")


@atexit.register
def _stop_at_exit():  # pragma: no cover - interpreter shutdown
    if _WORKER is not None:
        _WORKER.stop()


if __name__ == "__main__":
    sys.exit(main())
