"""``tilemagic status`` / ``%tilemagic status``: what a launch would use on this machine.

CuPy, CUDA driver and runtime, the device, NVRTC, nvcc (and a tcgen05 ptxas check), the
PTX view's compiler, and for each kind of kernel the ``-arch`` and whether TMEM runs
native or emulated.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..options import FIELDS
from .device import INSTALL_HINT, NO_CUPY, DeviceStatus, format_cuda_version, nvcc_version, probe
from .nvcc import nvcc_compile
from .nvrtc import arch_for_device

#: A tiny tcgen05 kernel (alloc 32 columns, relinquish, dealloc): compiles for sm_100a only.
#: Used by ``tilemagic status`` and the tests as the ptxas check.
TCGEN05_PROBE_SRC = r"""#include <stdint.h>
extern "C" __global__ void tm_probe(uint32_t* out) {
  __shared__ uint32_t slot;
  if (threadIdx.x < 32) {
    uint32_t dst = (uint32_t)__cvta_generic_to_shared(&slot);
    asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], 32;" :: "r"(dst) : "memory");
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;" ::: "memory");
  }
  __syncthreads();
  out[threadIdx.x] = slot;
  __syncthreads();
  if (threadIdx.x < 32) {
    asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, 32;" :: "r"(slot) : "memory");
  }
}
"""


_NVRTC_WHEELS = ("nvidia-cuda-nvrtc-cu13", "nvidia-cuda-nvrtc-cu12", "nvidia-cuda-nvrtc")


def _nvrtc_text(st: DeviceStatus) -> str:
    """NVRTC as CuPy loads it, else the NVRTC wheel that is installed but not loaded."""
    if st.nvrtc_version:
        return ".".join(str(x) for x in st.nvrtc_version) + " (loaded by CuPy)"
    from importlib import metadata

    for dist in _NVRTC_WHEELS:
        try:
            return f"{dist} {metadata.version(dist)} installed, not loaded (CuPy is needed to use it)"
        except metadata.PackageNotFoundError:
            continue
    return "not loaded (comes with CuPy)" if st.cupy_version is None else "unknown (CuPy could not report it)"


def _launch_rows(st: DeviceStatus, launch: str) -> list[tuple[str, str]]:
    """What each kind of kernel would run on under ``--launch <launch>``."""
    if launch == "off":
        return [("every kernel", "nothing runs (launch=off): IR and CUDA only")]
    sim = "CPU simulator (NumPy SIMT; TMEM modelled as 128 lanes × 512 columns)"
    if launch == "sim":
        return [("every kernel", sim + " (launch=sim)")]
    if not st.available:
        if launch == "gpu":
            return [("every kernel", f"an error: --launch gpu needs a GPU ({st.reason})")]
        return [("every kernel", sim + " — no GPU")]
    arch, how = arch_for_device(int(st.cc or 0), True)
    plain, _ = arch_for_device(int(st.cc or 0), False)
    if how == "native":
        tm = f"arch={arch}, TMEM native (tcgen05 on {st.label})"
    else:
        tm = (f"arch={arch}, TMEM emulated in global memory (tcgen05 needs a CC 10.x GPU; "
              f"this is CC {st.cc_text})")
    return [("kernels with TMEM", tm), ("kernels without TMEM", f"arch={plain}, native")]


def status_report(*, status: DeviceStatus | None = None, check_nvcc: bool = True,
                  defaults: Mapping[str, object] | None = None) -> str:
    """Multi-line text for ``tilemagic status`` / ``%tilemagic status``: what a launch would use here.

    Parameters
    ----------
    status : DeviceStatus, optional
        A :func:`probe` result (probed when omitted).
    check_nvcc : bool, default True
        Also compile a tiny tcgen05 kernel for ``sm_100a`` with nvcc (ptxas check,
        about a second; no GPU needed).
    defaults : mapping, optional
        The session defaults (``%config TileMagics.<trait>``: launch, arch, view,
        strict, seed, timeout); shown on a ``defaults`` line, and ``launch``/``arch`` decide the
        launch rows (default: ``launch="auto"``, ``arch="sm_100a"``).

    Returns
    -------
    str
        Lines ``CuPy`` (version and CUDA flavour of the wheel), ``CUDA`` (driver and
        runtime), ``device`` (name and compute capability), ``NVRTC``, ``nvcc``,
        ``sm_100a check``, ``PTX view``, ``a launch would use:`` with one row per kind
        of kernel (the ``-arch`` and whether TMEM runs native or emulated), ``shown
        CUDA`` and ``defaults``; no temp paths.
    """
    st = status if status is not None else probe()
    defaults = dict(defaults or {})
    launch_mode = str(defaults.get("launch", "auto"))
    shown_arch = str(defaults.get("arch", "sm_100a"))
    rows = []
    if st.cupy_version is None:
        rows.append(("CuPy", f"not installed ({INSTALL_HINT})"
                     if st.reason.startswith(NO_CUPY) else st.reason))
    else:
        rows.append(("CuPy", f"{st.cupy_version} ({st.cuda_flavour or 'unknown wheel'})"))
    if st.cupy_version is not None:
        drv = format_cuda_version(st.driver_version) if st.driver_version else "not found"
        rows.append(("CUDA", f"driver {drv}, "
                             f"runtime {format_cuda_version(st.runtime_version)}"))
    if st.available:
        rows.append(("device", st.label or "CUDA device"))
    else:
        rows.append(("device", "none (no CuPy)" if st.cupy_version is None else f"none ({st.reason})"))
    rows.append(("NVRTC", _nvrtc_text(st)))
    nvcc = nvcc_version()
    rows.append(("nvcc", nvcc or "not found on PATH"))
    if check_nvcc and nvcc:
        res = nvcc_compile(TCGEN05_PROBE_SRC, "sm_100a")
        first = res.log.splitlines()[0] if res.log else ""
        rows.append(("sm_100a check", "tcgen05 kernel compiles (nvcc + ptxas)" if res.ok
                     else f"FAILED: {first}"))
    if nvcc:
        ptx_view = f"nvcc {nvcc} (nvcc -ptx -lineinfo)"
    elif st.nvrtc_version:
        ptx_view = "NVRTC through CuPy"
    else:
        ptx_view = "unavailable (needs nvcc on PATH or CuPy's NVRTC)"
    rows.append(("PTX view", ptx_view))
    launch_rows = _launch_rows(st, launch_mode)
    shown = f"--arch {shown_arch}"
    shown += (" (native tcgen05 inline PTX; a TMEM kernel also gets its emulated source)"
              if shown_arch.startswith("sm_10") or shown_arch.startswith("sm_11") else "")
    tail = [("shown CUDA", shown)]
    if defaults:
        keys = [f.name for f in FIELDS if f.metadata["config"]]  # every %config trait (the option table's)
        tail.append(("defaults", " ".join(f"{k}={defaults[k]}" for k in keys if k in defaults)
                     + "  (%config TileMagics.<name> = ...)"))
    width = max(len(k) for k, _ in rows + tail)
    sub = max(len(k) for k, _ in launch_rows)
    lines = ["tilemagic status"]
    lines += [f"  {k.ljust(width)} : {v}" for k, v in rows]
    lines.append("  a launch would use:")
    lines += [f"    {k.ljust(sub)} : {v}" for k, v in launch_rows]
    lines += [f"  {k.ljust(width)} : {v}" for k, v in tail]
    return "\n".join(lines)
