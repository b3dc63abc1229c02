"""Runtime: find a GPU, compile the generated CUDA, launch it through CuPy.

* :mod:`.device` -- :func:`probe` (CuPy, driver, runtime, device, NVRTC; cached, never raises),
  :func:`nvcc_version`, :func:`tmem_mode`;
* :mod:`.nvrtc` -- :func:`arch_for_device` (explicit ``-arch``: ``sm_100a`` for TMEM on
  CC 10.0), :func:`compile_cupy` (NVRTC through ``cupy.RawModule``), :func:`compile_cupy_many`
  (many kernels in one NVRTC module, each cached as if compiled alone);
* :mod:`.nvcc` -- :func:`nvcc_compile` (ptxas check without a GPU); :mod:`.ptx` -- the PTX
  view (:func:`~.ptx.ptx_for`); :mod:`.logs` -- compiler logs without temp paths;
* :mod:`.launch` -- :func:`run_on_gpu` (one CTA, every global buffer copied back,
  TMEM emulation status checked); :mod:`.worker` -- the launch worker process;
* :mod:`.status` -- :func:`status_report` (``tilemagic status``).

CuPy is optional and imported lazily, inside functions only: importing this
package never imports ``cupy``.
"""

from .device import DeviceStatus, nvcc_version, probe, tmem_mode
from .launch import GpuRun, run_on_gpu
from .nvcc import NvccResult, nvcc_compile
from .nvrtc import arch_for_device, compile_cupy, compile_cupy_many
from .status import status_report

__all__ = [
    "DeviceStatus", "GpuRun", "NvccResult",
    "arch_for_device", "compile_cupy", "compile_cupy_many", "nvcc_compile", "nvcc_version",
    "probe", "run_on_gpu", "status_report", "tmem_mode",
]
