"""Launch-worker handler for the GPU matrices: compile many kernels in a few NVRTC modules first.

The launch worker (tilemagic.runtime.worker) compiles each kernel when it is launched, ~1 s of NVRTC per
kernel.  For a matrix of hundreds of cells this handler, on its first launch request, compiles every
source listed in the pickle named by ``TILEMAGIC_PRECOMPILE`` (``{"native": [...], "emulated": [...]}``
of CudaSource) with ``compile_cupy_many``, in batches of ``TILEMAGIC_PRECOMPILE_BATCH`` kernels, for the
mode this device runs.  The runtime caches each kernel under its own source, so the launches then skip
NVRTC.  Otherwise it is the default handler.
"""

from __future__ import annotations

import os
import pickle

from tilemagic.runtime import worker as _default
from tilemagic.runtime.worker import handle_probe  # noqa: F401  (the worker calls it)

_DONE = False


def _precompile():
    from tilemagic.runtime import arch_for_device, compile_cupy_many, probe

    path = os.environ.get("TILEMAGIC_PRECOMPILE")
    if not path:
        return
    with open(path, "rb") as f:
        sources = pickle.load(f)
    arch, how = arch_for_device(int(probe().cc), True)
    batch = int(os.environ.get("TILEMAGIC_PRECOMPILE_BATCH", "110"))
    srcs = sources[how]
    for k in range(0, len(srcs), batch):
        compile_cupy_many(srcs[k:k + batch], arch)


def handle_launch(request, started):
    global _DONE
    if not _DONE:
        _DONE = True
        _precompile()
    return _default.handle_launch(request, started)
