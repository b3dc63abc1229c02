"""A launch-worker handler that pretends to be a GPU (tests of tilemagic.runtime.worker).

The worker imports this module instead of the default handler.  ``$FAKE_GPU_PROBE_S`` makes the
probe take that many seconds.  What a launch does
is chosen by the kernel's name, so whole cells can be sent through the pipeline:

* ``hang*``: compiles, then never finishes (the --timeout kills the worker);
* ``slowcompile*``: never finishes compiling (the compile limit kills the worker);
* ``segv*``: the worker dies of SIGSEGV while the kernel runs (as a driver crash would);
* ``exit*``: the worker prints to stderr and exits with status 7;
* ``sticky*``: a sticky CUDA error (cudaErrorIllegalAddress) through the real
  ``tilemagic.runtime.launch._cuda_error``; the worker ends itself afterwards;
* ``trap*``: a located, non-sticky LaunchError (as an emulation trap);
* ``bug*``: a ZeroDivisionError (a bug in the worker);
* ``modules*``: returns which heavy modules the worker process has imported;
* ``sleepy*``: compiles, then runs for :data:`SLEEPY_S` seconds before it copies as below (a slow
  launch to interrupt);
* anything else: a "launch" that copies ``A`` into ``B`` (the demos' ``check B == A`` passes),
  with the worker's pid in the mode.
"""

import os
import signal
import sys
import time

from tilemagic.errors import LaunchError, Span
from tilemagic.runtime.device import DeviceStatus
from tilemagic.runtime.launch import GpuRun, _cuda_error

SLEEPY_S = 1.0
HEAVY = ("IPython", "lark", "cupy", "matplotlib", "ipywidgets", "traitlets")


def handle_probe():
    time.sleep(float(os.environ.get("FAKE_GPU_PROBE_S", "0")))  # a slow probe to interrupt
    return DeviceStatus(True, name="Fake GPU", cc=90, cupy_version="0.0-fake")


def handle_launch(request, started):
    name = request["native"].kernel_name
    if name.startswith("slowcompile"):
        time.sleep(3600)
    started()
    if name.startswith("hang"):
        time.sleep(3600)
    if name.startswith("sleepy"):
        time.sleep(SLEEPY_S)
    if name.startswith("segv"):
        os.kill(os.getpid(), signal.SIGSEGV)
    if name.startswith("exit"):
        print("fake driver: unrecoverable state", file=sys.stderr, flush=True)
        os._exit(7)
    if name.startswith("sticky"):
        exc = RuntimeError("cudaErrorIllegalAddress: an illegal memory access was encountered")
        raise _cuda_error(name, "fake", exc)
    if name.startswith("trap"):
        raise LaunchError("tcgen05.ld/st by thread 0 touches TMEM lane 0, column 40: outside the allocated columns",
                          Span.point(3, 1))
    if name.startswith("bug"):
        return 1 // 0
    if name.startswith("modules"):
        return sorted(m for m in HEAVY if m in sys.modules)
    outputs = {k: v.copy() for k, v in request["inputs"].items()}
    if "A" in outputs and "B" in outputs:
        outputs["B"] = outputs["A"].copy()
    return GpuRun(outputs=outputs, backend="cupy", mode=f"fake GPU pid {os.getpid()}", arch="sm_90",
                  device="Fake GPU (CC 9.0)")
