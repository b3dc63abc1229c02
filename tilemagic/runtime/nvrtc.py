"""Compile generated CUDA for a launch: NVRTC through ``cupy.RawModule``, the loaded kernels kept in memory.

The target is always explicit: TMEM code (``tcgen05.*``, PTX ISA 9.0 §9.7.16) needs an
arch-specific target, ``sm_100a`` on a CC 10.0 device; ptxas rejects it for ``sm_100``
and ``sm_90``.  With CuPy 14 and the NVRTC backend the ``-arch`` passed in
``RawModule(options=...)`` wins over the one CuPy derives from the device (observed on
an H200 with ``sm_90a``).  CuPy adds ``-ftz=true`` (flush denormals) to every RawModule
compile.  A tile copy moves bits through integer registers and ``ld``/``st``, so this
does not change its results, but kernels doing float arithmetic would see it.

Two caches keep an unchanged cell from compiling again:

* in memory, in the launch worker: the loaded kernel of every source compiled, keyed by
  :func:`cache_key` (source, options, arch, device), for the life of the worker;
* on disk: CuPy's own kernel cache.  ``RawModule(code=...)`` looks the cubin up in
  ``$CUPY_CACHE_DIR`` (default ``~/.cupy/kernel_cache``) before running NVRTC, so a
  restarted worker (after a timeout, a crash, a sticky CUDA error or a new notebook
  kernel) loads it instead of compiling.  CuPy 14.2 (``cupy/cuda/compiler.py``,
  ``_compile_with_cache_cuda``) keys the file by a SHA-1 over the source, every option
  (``-arch`` and ``-ftz=true`` included), the device's arch, the NVRTC version, the
  compiler's own preprocessor output and CuPy's build; it writes atomically (temporary
  file + ``os.replace``) and checks a SHA-1 of the content on load, so a corrupt file is
  compiled again.  ``CUPY_CACHE_IN_MEMORY=1`` turns the disk layer off.  tilemagic kept
  a second disk cache of its own until issue 11; it added pruning (CuPy's directory
  grows; a tile-copy cubin is a few KiB) and a ``"disk"`` label in ``compile`` info,
  at the price of CuPy internals (``assemble_cupy_compiler_options``,
  ``compile_using_nvrtc``) that break with CuPy releases, so it was dropped.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..caches import register_cache
from ..errors import LaunchError
from .device import is_blackwell_dc
from .logs import scrub_paths, trim_log

if TYPE_CHECKING:  # the codegen is imported only for type hints
    from ..codegen.cuda import CudaSource

#: NVRTC options besides ``-arch`` (CuPy appends ``-ftz=true`` itself).
BASE_OPTIONS: tuple[str, ...] = ("-std=c++17",)


# ----------------------------------------------------------------------------- targets
def arch_for_device(cc: int, uses_tmem: bool) -> tuple[str, str]:
    """The ``-arch`` and the TMEM mode for a device.

    Parameters
    ----------
    cc : int
        Compute capability as ``10 * major + minor`` (90, 100, 103, 120 ...).
    uses_tmem : bool
        The kernel uses tcgen05/TMEM.

    Returns
    -------
    arch : str
        ``"sm_100a"`` for a TMEM kernel on CC 10.0 (``sm_{cc}a`` on other CC 10.x,
        e.g. ``"sm_103a"``: arch-specific ``a`` code only loads on its exact CC);
        ``f"sm_{cc}"`` otherwise.
    mode : {"native", "emulated"}
        ``"emulated"`` when the kernel uses TMEM and the device is not CC 10.x (TMEM
        then lives in a global scratch buffer, see codegen's emulated variant).
    """
    cc = int(cc)
    if is_blackwell_dc(cc):
        return (f"sm_{cc}a" if uses_tmem else f"sm_{cc}"), "native"
    return f"sm_{cc}", ("emulated" if uses_tmem else "native")


def cupy_options(arch: str) -> tuple[str, ...]:
    """The NVRTC options tilemagic passes to ``cupy.RawModule`` for ``arch``."""
    return BASE_OPTIONS + (f"-arch={arch}",)


# NVRTC has no C library headers: ``#include <stdint.h>`` / ``<cstdint>`` fail with
# "cannot open source file" (checked with NVRTC 13.5 and the include paths CuPy 14.2
# adds).  CCCL's ``<cuda/std/cstdint>`` is on CuPy's search path and, under NVRTC,
# declares the global ``uint32_t``... typedefs, so the include line is swapped for it.
_STD_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*<(?:stdint\.h|cstdint)>[ \t]*$", re.M)


def nvrtc_source(text: str) -> str:
    """The source as handed to NVRTC: C ``<stdint.h>``/``<cstdint>`` -> ``<cuda/std/cstdint>``.

    Only whole ``#include`` lines are rewritten (line count unchanged, so NVRTC's
    line numbers still match the shown CUDA); nvcc compiles the text unchanged.
    """
    return _STD_INCLUDE.sub("#include <cuda/std/cstdint>", text)


# ----------------------------------------------------------------------------- the memory cache
_KERNEL_CACHE: dict[str, Any] = {}
register_cache("runtime.nvrtc", _KERNEL_CACHE.clear,
               "loaded CuPy kernels by CUDA source, options, arch and device (in the process that launches)")


def cache_key(text: str, kernel_name: str, arch: str, options: Sequence[str], device_id: int = 0) -> str:
    """sha256 over source, kernel name, options, arch and device id (hex)."""
    h = hashlib.sha256()
    for part in (text, kernel_name, "\x1f".join(options), arch, str(device_id)):
        h.update(part.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()


def clear_cache() -> None:
    """Drop every compiled kernel held in memory by :func:`compile_cupy` (CuPy's disk cache stays)."""
    _KERNEL_CACHE.clear()


def compile_cupy(src: CudaSource, arch: str, *, info: dict | None = None) -> Any:
    """Compile ``src`` with NVRTC through CuPy for ``arch`` and return the kernel.

    Parameters
    ----------
    src : tilemagic.codegen.cuda.CudaSource
        Only ``src.text`` (self-contained CUDA C++) and ``src.kernel_name`` (an
        ``extern "C" __global__`` function) are used.
    arch : str
        Explicit target, e.g. ``"sm_100a"`` or ``"sm_90"``; passed as ``-arch=<arch>``
        together with ``-std=c++17`` (see :data:`BASE_OPTIONS`).
    info : dict, optional
        Filled with ``cache`` (``"memory"``: this process had it; ``"compiled"``: handed
        to ``cupy.RawModule(code=...)``, which runs NVRTC or loads CuPy's disk cache),
        ``ms`` (wall milliseconds of this call) and ``note`` (how it compiled, when it did).

    Returns
    -------
    cupy.RawKernel
        Call it as ``kernel(grid, block, args)``.

    Raises
    ------
    LaunchError
        NVRTC rejected the source (the trimmed log, without temp paths, is in
        ``details``), or loading the module failed (CUDA error text).

    Notes
    -----
    NVRTC has no ``<stdint.h>``: :func:`nvrtc_source` swaps that include line for
    CCCL's ``<cuda/std/cstdint>`` before compiling.  The caches are described in the
    module docstring.
    """
    import cupy  # lazy

    t0 = time.perf_counter()
    options = cupy_options(arch)
    key = cache_key(src.text, src.kernel_name, arch, options, _device_id(cupy))
    hit = _KERNEL_CACHE.get(key)
    how = {"cache": "memory", "note": ""}
    if hit is None:
        hit = _load(cupy, src.text, [src.kernel_name], arch, options)[0]
        _KERNEL_CACHE[key] = hit
        how = {"cache": "compiled", "note": "cupy.RawModule(code=...): NVRTC, or CuPy's disk cache ($CUPY_CACHE_DIR)"}
    if info is not None:
        info.update(how, ms=(time.perf_counter() - t0) * 1e3)
    return hit


def compile_cupy_many(sources: Sequence[CudaSource], arch: str) -> list:
    """Compile several kernels in one NVRTC module and cache each under its own source.

    A batched :func:`compile_cupy`: the sources are joined with
    :func:`~tilemagic.codegen.cuda.translation_unit` and compiled once, and every
    kernel is stored under the :func:`cache_key` of its own ``src``, so a later
    ``compile_cupy(src, arch)`` — e.g. a ``--launch gpu`` of the same description —
    reuses it without compiling.  NVRTC's per-module cost (headers, the emulation
    device functions) is paid once instead of once per kernel.

    Parameters
    ----------
    sources : sequence of CudaSource
        Of one mode, with distinct kernel names.
    arch : str
        As for :func:`compile_cupy`.

    Returns
    -------
    list of cupy.RawKernel
        In the order of ``sources``.

    Raises
    ------
    LaunchError
        As :func:`compile_cupy`.
    """
    import cupy  # lazy

    from ..codegen.cuda import translation_unit

    options = cupy_options(arch)
    device_id = _device_id(cupy)
    names = [s.kernel_name for s in sources]
    kernels = _load(cupy, translation_unit([s.text for s in sources]), names, arch, options)
    for src, kernel in zip(sources, kernels):
        _KERNEL_CACHE[cache_key(src.text, src.kernel_name, arch, options, device_id)] = kernel
    return kernels


def _device_id(cupy: Any) -> int:
    try:
        return int(cupy.cuda.Device().id)
    except Exception:
        return 0


def _load(cupy: Any, text: str, names: Sequence[str], arch: str, options: tuple[str, ...]) -> list:
    """The functions ``names`` of ``text`` compiled by ``cupy.RawModule(code=...)``; errors as LaunchError."""
    what = names[0] if len(names) == 1 else f"{names[0]} (+{len(names) - 1} more)"
    try:
        module = cupy.RawModule(code=nvrtc_source(text), options=options)
        return [module.get_function(n) for n in names]
    except Exception as exc:
        if any(c.__name__ in ("CompileException", "NVRTCError") for c in type(exc).__mro__):
            raw = exc.get_message() if hasattr(exc, "get_message") else str(exc)
            raise LaunchError(
                f"NVRTC could not compile kernel '{what}' for -arch={arch}",
                hint=("tcgen05 (TMEM) code needs -arch=sm_100a and a CC 10.0 GPU"
                      if "tcgen05" in raw and "not supported" in raw else None),
                details=trim_log(scrub_paths(str(raw))),
            ) from None
        raise LaunchError(
            f"loading kernel '{what}' (-arch={arch}) failed: "
            f"{scrub_paths(str(exc).strip()) or type(exc).__name__}"
        ) from None
