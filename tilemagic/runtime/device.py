"""What GPU (if any) a launch could use: CuPy, driver, runtime, device, NVRTC, nvcc.

:func:`probe` imports CuPy lazily and never raises: without CuPy, without a
driver or without a device it returns a :class:`DeviceStatus` with
``available=False`` and a one-line ``reason`` that the result banner shows
("CPU simulator: CuPy is not installed ...").  The probe is cached per
process; ``probe(refresh=True)`` runs it again.

Detection: on a machine without a driver ``import cupy`` succeeds,
``cupy.is_available()`` is False and ``getDeviceCount()`` raises a
``CUDARuntimeError`` naming ``cudaErrorInsufficientDriver`` (``cudaErrorNoDevice``
with a driver but no device).
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any

from ..caches import register_cache

INSTALL_HINT = ("pip install -e '.[cuda13]' in the tilemagic checkout "
                "(or pip install cupy-cuda13x; cuda12: cupy-cuda12x)")

#: The reason of a machine without CuPy: short, as every result banner shows it; the install hint is said once,
#: by ``%tilemagic status`` (and a ``--launch gpu`` error's hint).
NO_CUPY = "CuPy is not installed"

# distributions that provide the ``cupy`` module, most specific first
_CUPY_DISTS = ("cupy-cuda13x", "cupy-cuda12x", "cupy-cuda11x", "cupy")


def format_cuda_version(v: int | None) -> str:
    """``13000 -> "13.0"``, ``12080 -> "12.8"``; ``None``/0 -> ``"unknown"``.

    CUDA encodes versions as ``1000 * major + 10 * minor`` (cudaDriverGetVersion).
    """
    if not v:
        return "unknown"
    return f"{v // 1000}.{(v % 1000) // 10}"


def is_blackwell_dc(cc: int | None) -> bool:
    """True for compute capability 10.x (``cc`` 100..109): tcgen05/TMEM hardware."""
    return cc is not None and 100 <= int(cc) <= 109


@dataclass(frozen=True)
class DeviceStatus:
    """Outcome of :func:`probe`.

    Attributes
    ----------
    available : bool
        A CUDA device can be used through CuPy.
    reason : str
        Why not (empty when available), e.g. ``"CuPy is not installed (pip install
        tilemagic[cuda13])"``, ``"no CUDA driver: cudaErrorInsufficientDriver"``,
        ``"no CUDA device"``.
    name : str or None
        Device name, e.g. ``"NVIDIA H200"``.
    cc : int or None
        Compute capability as ``10 * major + minor`` (90 for 9.0, 100 for 10.0).
    driver_version, runtime_version : int or None
        CUDA encoding ``1000 * major + 10 * minor`` (13000 = 13.0).
    cupy_version : str or None
        ``cupy.__version__`` when CuPy imports.
    nvrtc_version : tuple of int or None
        ``(major, minor)`` of the NVRTC CuPy loads.
    cuda_flavour : str or None
        The installed wheel: ``"cupy-cuda12x"`` / ``"cupy-cuda13x"`` (importlib.metadata).
    """

    available: bool
    reason: str = ""
    name: str | None = None
    cc: int | None = None
    driver_version: int | None = None
    runtime_version: int | None = None
    cupy_version: str | None = None
    nvrtc_version: tuple[int, ...] | None = None
    cuda_flavour: str | None = None

    @property
    def cc_text(self) -> str | None:
        """Compute capability as ``"9.0"`` / ``"10.0"`` (None without a device)."""
        if self.cc is None:
            return None
        return f"{self.cc // 10}.{self.cc % 10}"

    @property
    def label(self) -> str | None:
        """``"NVIDIA H200 (CC 9.0)"``; None without a device."""
        if not self.available:
            return None
        return f"{self.name or 'CUDA device'} (CC {self.cc_text})"


_CACHE: DeviceStatus | None = None


def _flavour() -> str | None:
    try:
        from importlib import metadata
    except ImportError:  # pragma: no cover
        return None
    for dist in _CUPY_DISTS:
        try:
            metadata.version(dist)
        except Exception:
            continue
        return dist
    return None


def _nvrtc_version(cupy) -> tuple[int, ...] | None:
    try:
        v = cupy.cuda.nvrtc.getVersion()
        return tuple(int(x) for x in v)
    except Exception:
        return None


def _int_or_none(fn) -> int | None:
    try:
        v = int(fn())
    except Exception:
        return None
    return v or None


def _error_code(exc: BaseException) -> str:
    """``"cudaErrorNoDevice: no CUDA-capable device"`` -> ``"cudaErrorNoDevice"``."""
    text = str(exc).strip()
    m = re.search(r"cuda[A-Za-z]*Error[A-Za-z]*|CUDA_ERROR_[A-Z_]+", text)
    if m:
        return m.group(0)
    return text.splitlines()[0] if text else type(exc).__name__


def _unavailable_reason(exc: BaseException | None) -> str:
    if exc is None:
        return "no CUDA device"
    code = _error_code(exc)
    if "NoDevice" in code or "NO_DEVICE" in code:
        return "no CUDA device"
    if "InsufficientDriver" in code or "NOT_INITIALIZED" in code or "NO_BINARY" in code:
        return f"no CUDA driver: {code}"
    return f"CUDA is not usable: {code}"


def _probe() -> DeviceStatus:
    try:
        import cupy  # noqa: F401  (lazy: the only place the probe touches CuPy)
    except ImportError:
        return DeviceStatus(False, NO_CUPY)
    except Exception as exc:  # broken install, missing shared libraries ...
        return DeviceStatus(False, f"CuPy failed to import: {type(exc).__name__}: {exc}".strip())
    if cupy is None:  # pragma: no cover - sys.modules["cupy"] = None raises ImportError
        return DeviceStatus(False, NO_CUPY)

    common: dict[str, Any] = dict(
        cupy_version=str(getattr(cupy, "__version__", "unknown")),
        nvrtc_version=_nvrtc_version(cupy),
        cuda_flavour=_flavour(),
    )
    try:
        runtime = cupy.cuda.runtime
    except Exception as exc:
        return DeviceStatus(False, _unavailable_reason(exc), **common)
    common["driver_version"] = _int_or_none(runtime.driverGetVersion)
    common["runtime_version"] = _int_or_none(runtime.runtimeGetVersion)

    try:
        ok = bool(cupy.is_available())
    except Exception:
        ok = False
    if not ok:
        err: BaseException | None = None
        try:
            runtime.getDeviceCount()
        except Exception as exc:
            err = exc
        return DeviceStatus(False, _unavailable_reason(err), **common)

    try:
        dev = cupy.cuda.Device()
        cc = int(dev.compute_capability)
        name = None
        try:
            props = runtime.getDeviceProperties(int(getattr(dev, "id", 0)))
            name = props.get("name") if isinstance(props, dict) else None
            if isinstance(name, bytes):
                name = name.decode("utf-8", "replace")
            name = name.strip("\x00 ").strip() if name else None
        except Exception:
            name = None
    except Exception as exc:
        return DeviceStatus(False, _unavailable_reason(exc), **common)
    return DeviceStatus(True, "", name=name or "CUDA device", cc=cc, **common)


def probe(refresh: bool = False) -> DeviceStatus:
    """Detect CuPy and a CUDA device; never raises.

    Parameters
    ----------
    refresh : bool, default False
        Run the detection again instead of returning the cached status.

    Returns
    -------
    DeviceStatus
        ``available=True`` with name, compute capability and versions, or
        ``available=False`` with a one-line ``reason``.
    """
    global _CACHE
    if _CACHE is None or refresh:
        try:
            _CACHE = _probe()
        except Exception as exc:  # the probe must never raise
            _CACHE = DeviceStatus(False, f"device probe failed: {type(exc).__name__}: {exc}")
    return _CACHE


def reset_cache() -> None:
    """Forget the cached :func:`probe` and :func:`nvcc_version` results (tests)."""
    global _CACHE
    _CACHE = None
    nvcc_version.cache_clear()


register_cache("runtime.device", reset_cache, "the device probe and the nvcc version of this process")


@functools.lru_cache(maxsize=1)
def nvcc_version() -> str | None:
    """Version of the ``nvcc`` on PATH, e.g. ``"13.0.88"``; None when absent or broken.

    Parsed from ``nvcc --version`` (``"... release 13.0, V13.0.88"``); cached.
    """
    exe = shutil.which("nvcc")
    if exe is None:
        return None
    try:
        out = subprocess.run(
            [exe, "--version"], capture_output=True, text=True, timeout=30, check=False
        ).stdout
    except Exception:
        return None
    m = re.search(r"\bV(\d+\.\d+(?:\.\d+)?)", out)
    if m:
        return m.group(1)
    m = re.search(r"release (\d+\.\d+)", out)
    return m.group(1) if m else None


def tmem_mode(status: DeviceStatus) -> str:
    """How TMEM code would run on this machine.

    Returns
    -------
    str
        ``"native sm_100a"`` (``sm_{cc}a``) on a CC 10.x device, ``"emulated"`` on any
        other CUDA device, ``"simulator"`` without one.
    """
    if not status.available:
        return "simulator"
    if is_blackwell_dc(status.cc):
        return f"native sm_{status.cc}a"
    return "emulated"
