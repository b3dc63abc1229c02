"""A NumPy-backed fake CuPy for CPU tests of the GPU code paths (tests/unit/runtime/test_bench_grid.py, tests/bench).

Device arrays are ndarrays (with ``get()`` and ``data.copy_from_device_async``); a kernel is a Python
function ``fn(ctas, *device_arrays)`` looked up by name when ``RawModule(...).get_function`` is called;
CUDA events report ``ms`` per launch.
"""

import types
from types import SimpleNamespace

import numpy as np


class DevArray(np.ndarray):
    """An ndarray standing in for a cupy.ndarray (``get()``, ``data.copy_from_device_async``)."""

    def get(self):
        return np.array(self)

    @property
    def data(self):
        owner = self

        class Ptr:
            def copy_from_device_async(self, src, n):
                np.asarray(owner).reshape(-1).view(np.uint8)[:n] = np.asarray(src.owner).reshape(-1).view(np.uint8)[:n]

        p = Ptr()
        p.owner = owner
        p.ptr = owner.__array_interface__["data"][0]  # the host address stands in for the device pointer
        return p


def _dev(a):
    return np.array(a, copy=True).view(DevArray)


def numpy_cupy(kernels, cc="90", ms=0.5):
    log = SimpleNamespace(launches=[], timed=0)
    cupy = types.ModuleType("cupy")
    cupy.__version__ = "14.2.0"

    class Device:
        id = 0
        compute_capability = cc

    class Event:
        def record(self):
            pass

        def synchronize(self):
            log.timed += 1

    class RawModule:
        def __init__(self, code=None, options=(), path=None):
            self.grid = "--bench grid" in (code or "")

        def get_function(self, name):
            fn = kernels[name]

            def launch(grid, block, args):
                log.launches.append((name, grid, block))
                fn(grid[0], *args)

            return launch

    cupy.cuda = SimpleNamespace(
        Device=Device, Event=Event, get_elapsed_time=lambda s, e: ms,
        nvrtc=SimpleNamespace(getVersion=lambda: (13, 0)),
        runtime=SimpleNamespace(deviceSynchronize=lambda: None, memGetInfo=lambda: (1 << 34, 1 << 35)))
    cupy.RawModule = RawModule
    cupy.array = lambda a, copy=True: _dev(a)
    cupy.asarray = _dev
    cupy.zeros = lambda shape, dtype: _dev(np.zeros(shape, dtype))
    cupy.copyto = lambda dst, src: np.copyto(dst, src)
    return cupy, log
