"""Compile generated CUDA: through CuPy/NVRTC for a launch, through nvcc for a ptxas check.

The target is always explicit (notebook_conventions.md §0.5, §0.8): TMEM code
(``tcgen05.*``, PTX ISA §9.7.16) needs an arch-specific target, ``sm_100a`` on a
CC 10.0 device; ptxas rejects it for ``sm_100`` and ``sm_90``.  With CuPy 14 and
the NVRTC backend the ``-arch`` passed in ``RawModule(options=...)`` wins over the
one CuPy derives from the device (observed on an H200 with ``sm_90a``).

CuPy adds ``-ftz=true`` (flush denormals) to every RawModule compile.  A tile copy
moves bits through integer registers and ``ld``/``st``, so this does not change
its results, but kernels doing float arithmetic would see it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import LaunchError
from .device import is_blackwell_dc

if TYPE_CHECKING:  # the codegen is imported only for type hints
    from ..codegen.cuda import CudaSource

#: NVRTC options besides ``-arch`` (CuPy appends ``-ftz=true`` itself).
BASE_OPTIONS: tuple[str, ...] = ("-std=c++17",)

#: Lines of a compiler log kept in a LaunchError / NvccResult before trimming.
MAX_LOG_LINES = 40

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


# ----------------------------------------------------------------------------- logs
_HASHED_CU = re.compile(r"[0-9a-f]{32,}[^\s/\\:()\"']*\.cu\b")
_NVCC_TMP = re.compile(r"tmpxft_[0-9a-fA-F]+_[0-9a-fA-F]+-\d+_")


def _temp_roots() -> tuple[str, ...]:
    roots = {"/tmp", "/var/tmp", tempfile.gettempdir()}
    for r in list(roots):
        try:
            roots.add(os.path.realpath(r))
        except OSError:  # pragma: no cover
            pass
    return tuple(sorted((r.rstrip("/\\") for r in roots if r and r not in ("/", "\\")), key=len, reverse=True))


def scrub_paths(log: str, tmpdir: str | None = None) -> str:
    """Remove temporary paths from a compiler log (deterministic notebook output).

    ``tmpdir`` (and its realpath) becomes ``<tmp>``; any other path under the
    system temp directories becomes ``<tmp>/<basename>``; nvcc's ``tmpxft_*``
    prefixes and CuPy's hashed ``<md5>_2.cubin.cu`` names become ``k.ptx`` /
    ``kernel.cu``.
    """
    out = log
    if tmpdir:
        for p in sorted({tmpdir, os.path.realpath(tmpdir)}, key=len, reverse=True):
            out = out.replace(p, "<tmp>")
    for root in _temp_roots():
        out = re.sub(r"(?<![\w.\-/\\])" + re.escape(root) + r"[/\\][^\s:;,()\"']*",
                     lambda m: "<tmp>/" + re.split(r"[/\\]", m.group(0))[-1], out)
    out = _NVCC_TMP.sub("", out)
    out = _HASHED_CU.sub("kernel.cu", out)
    return out


def trim_log(log: str, max_lines: int = MAX_LOG_LINES) -> str:
    """Strip blank lines at the ends and keep at most ``max_lines`` lines."""
    lines = [ln.rstrip() for ln in log.strip("\n").splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    if len(lines) > max_lines:
        extra = len(lines) - max_lines
        lines = lines[:max_lines] + [f"... ({extra} more line{'s' if extra != 1 else ''})"]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- CuPy / NVRTC
_KERNEL_CACHE: dict[str, object] = {}

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


def cache_key(text: str, kernel_name: str, arch: str, options: tuple[str, ...], device_id: int = 0) -> str:
    """sha256 over source, kernel name, options, arch and device id (hex)."""
    h = hashlib.sha256()
    for part in (text, kernel_name, "\x1f".join(options), arch, str(device_id)):
        h.update(part.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()


def clear_cache(disk: bool = False) -> None:
    """Drop every compiled kernel held in memory by :func:`compile_cupy` (and, with ``disk``,
    every file of the disk cache, :mod:`tilemagic.runtime.cache`)."""
    global _DISK
    _KERNEL_CACHE.clear()
    if disk:
        kernel_disk_cache().clear()
    _DISK = None


_DISK = None


def kernel_disk_cache():
    """The process's :class:`~tilemagic.runtime.cache.DiskCache` (its directory read from the
    environment on first use, again after :func:`clear_cache`)."""
    global _DISK
    if _DISK is None:
        from .cache import DiskCache

        _DISK = DiskCache()
    return _DISK


def _is_compile_error(exc: BaseException) -> bool:
    return any(c.__name__ in ("CompileException", "NVRTCError") for c in type(exc).__mro__)


def compile_cupy(src: CudaSource, arch: str, *, info: dict | None = None):
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
        Filled with ``cache`` (``"memory"``, ``"disk"`` or ``"compiled"``), ``ms``
        (wall milliseconds of this call) and ``note`` (how it compiled, when it did).

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
    CCCL's ``<cuda/std/cstdint>`` before compiling.

    Two caches, so an unchanged cell does not compile again: the loaded kernels in
    memory for the life of the process, keyed by :func:`cache_key` (source, options,
    arch, device); and NVRTC's output on disk (:mod:`tilemagic.runtime.cache`, keyed
    by source, options, arch, compute capability and compiler versions), which a
    restarted launch worker loads instead of compiling.
    """
    import time

    import cupy  # lazy

    t0 = time.perf_counter()
    options = cupy_options(arch)
    device_id = _device_id(cupy)
    key = cache_key(src.text, src.kernel_name, arch, options, device_id)
    hit = _KERNEL_CACHE.get(key)
    how = {"cache": "memory", "note": ""}
    if hit is None:
        hit = _load(src.text, [src.kernel_name], arch, options, how)[0]
        _KERNEL_CACHE[key] = hit
    if info is not None:
        info.update(how, ms=(time.perf_counter() - t0) * 1e3)
    return hit


def compile_cupy_many(sources, arch: str) -> list:
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
    kernels = _load(translation_unit([s.text for s in sources]), names, arch, options)
    for src, kernel in zip(sources, kernels):
        _KERNEL_CACHE[cache_key(src.text, src.kernel_name, arch, options, device_id)] = kernel
    return kernels


def _device_id(cupy) -> int:
    try:
        return int(cupy.cuda.Device().id)
    except Exception:
        return 0


class _NoCubinPath(Exception):
    """The CuPy at hand offers no way to get NVRTC's output as bytes (then ``RawModule(code=...)`` compiles)."""


def _nvrtc_to_binary(cupy):
    """``(compile(code, options) -> bytes, compiler id)`` through CuPy's NVRTC driver, with the options
    ``cupy.RawModule(code=...)`` would add (CuPy's and CCCL's include paths, ``-ftz=true``).

    Uses CuPy internals (``cupy._core.core.assemble_cupy_compiler_options``,
    ``cupy.cuda.compiler.compile_using_nvrtc``, checked with CuPy 14.2); raises
    :class:`_NoCubinPath` when they are missing or answer differently.
    """
    try:
        from cupy._core import core
        from cupy.cuda import compiler

        assemble = getattr(core, "assemble_cupy_compiler_options", None)
        if assemble is None:
            from cupy._core import _compile_with_cache

            assemble = _compile_with_cache.assemble_cupy_compiler_options
        nvrtc_compile = compiler.compile_using_nvrtc
        version = ".".join(str(x) for x in cupy.cuda.nvrtc.getVersion())
    except Exception as exc:  # noqa: BLE001 -- any missing piece: fall back
        raise _NoCubinPath(f"{type(exc).__name__}: {exc}") from None

    def compile_fn(code: str, options) -> bytes:
        opts = tuple(assemble(tuple(options))) + ("-ftz=true",)  # RawModule adds -ftz=true as well
        try:
            out = nvrtc_compile(code, opts, cache_in_memory=True)
        except TypeError as exc:  # another signature
            raise _NoCubinPath(f"compile_using_nvrtc: {exc}") from None
        obj = out[0] if isinstance(out, tuple) else out
        if isinstance(obj, str):
            obj = obj.encode("utf-8")
        if not isinstance(obj, (bytes, bytearray)) or not obj:
            raise _NoCubinPath(f"compile_using_nvrtc returned {type(obj).__name__}")
        return bytes(obj)

    return compile_fn, f"nvrtc {version} cupy {getattr(cupy, '__version__', '?')}"


_SCRATCH: str | None = None


def _scratch_dir() -> str:
    """A private directory for binaries that are not in the disk cache, removed when the process exits
    (``cupy.RawModule(path=...)`` may read its file after it returns)."""
    global _SCRATCH
    if _SCRATCH is None or not os.path.isdir(_SCRATCH):
        import atexit

        _SCRATCH = tempfile.mkdtemp(prefix="tilemagic-kernels-")
        atexit.register(shutil.rmtree, _SCRATCH, True)
    return _SCRATCH


def _module_functions(cupy, path, binary: bytes, names):
    """Load a cubin/PTX with ``cupy.RawModule(path=...)`` (the cache file, or ``binary`` written to
    :func:`_scratch_dir`) and get the functions ``names``."""
    if path is None:
        suffix = ".cubin" if binary.startswith(b"\x7fELF") else ".ptx"
        path = os.path.join(_scratch_dir(), hashlib.sha256(binary).hexdigest() + suffix)
        with open(path, "wb") as f:
            f.write(binary)
    module = cupy.RawModule(path=str(path))
    return [module.get_function(n) for n in names]


def _load(text: str, names, arch: str, options, how: dict | None = None):
    """The functions ``names`` of ``text`` compiled by NVRTC: from the disk cache, else compiled (and stored);
    through ``cupy.RawModule(code=...)`` when CuPy offers no binary output.  Errors as LaunchError."""
    import cupy  # lazy

    how = how if how is not None else {}
    what = names[0] if len(names) == 1 else f"{names[0]} (+{len(names) - 1} more)"
    code = nvrtc_source(text)
    try:
        try:
            compile_fn, compiler_id = _nvrtc_to_binary(cupy)
            from .cache import binary_key

            cc = str(getattr(cupy.cuda.Device(), "compute_capability", ""))
            disk = kernel_disk_cache()
            got = disk.fetch(binary_key(code, options, arch, compiler_id, cc),
                             lambda: compile_fn(code, options),
                             lambda path, binary: _module_functions(cupy, path, binary, names))
            where = f"cache file {got.path.name}" if got.path is not None else (
                f"no disk cache: {disk.disabled}" if disk.disabled else "the cache file could not be written")
            how.update(cache=got.source, note=f"NVRTC ({compiler_id}); {where}" + (f"; {got.note}" if got.note
                                                                                    else ""))
            return got.value
        except _NoCubinPath as why:
            module = cupy.RawModule(code=code, options=options)
            fns = [module.get_function(n) for n in names]
            how.update(cache="compiled", note=f"cupy.RawModule(code=...) (no tilemagic disk cache: {why})")
            return fns
    except Exception as exc:
        if _is_compile_error(exc):
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


# ----------------------------------------------------------------------------- nvcc
@dataclass(frozen=True)
class NvccResult:
    """Outcome of :func:`nvcc_compile`.

    Attributes
    ----------
    ok : bool
        nvcc exited with status 0.
    log : str
        nvcc/ptxas output (trimmed), temp paths replaced by ``<tmp>``.
    cubin : bytes or None
        The cubin when ``ok`` and ``cubin=True``.
    command : str
        The command line, with ``<tmp>`` for the temp directory.
    """

    ok: bool
    log: str
    cubin: bytes | None = None
    command: str = ""
    ptx: str | None = None


def nvcc_compile(text: str, arch: str = "sm_100a", *, cubin: bool = True, timeout: float = 120,
                 flags: tuple[str, ...] = ()) -> NvccResult:
    """Compile CUDA source with ``nvcc`` (the ptxas legality check); works without a GPU.

    Runs ``nvcc -arch=<arch> -cubin -o k.cubin k.cu`` in a temporary directory
    (no shell; ``TMPDIR`` points there too so nvcc's intermediates are scrubbed).

    Parameters
    ----------
    text : str
        Complete CUDA C++ source.
    arch : str, default "sm_100a"
        Real target; tcgen05 needs ``sm_100a`` (``sm_100`` / ``sm_90`` are rejected by ptxas).
    cubin : bool, default True
        Build a cubin (front end + ptxas) and return its bytes.  ``False`` stops
        at PTX (``-ptx``): front-end check only, no ptxas, ``cubin=None``, and the
        PTX text (temp paths scrubbed) in ``ptx``.
    timeout : float, default 120
        Seconds before nvcc is killed (then ``ok=False``).
    flags : tuple of str, optional
        Extra nvcc flags placed before the input (e.g. ``("-lineinfo",)``).

    Returns
    -------
    NvccResult
        Never raises for compile failures; ``ok=False`` with the log, or with
        ``"nvcc not found on PATH"``.
    """
    exe = shutil.which("nvcc")
    if exe is None:
        return NvccResult(False, "nvcc not found on PATH")
    out_name = "k.cubin" if cubin else "k.ptx"
    with tempfile.TemporaryDirectory(prefix="tilemagic-") as tmp:
        with open(os.path.join(tmp, "k.cu"), "w", encoding="utf-8") as f:
            f.write(text)
        cmd = [exe, f"-arch={arch}", "-cubin" if cubin else "-ptx", *flags, "-o", out_name, "k.cu"]
        shown = " ".join(["nvcc"] + cmd[1:])
        env = dict(os.environ, TMPDIR=tmp, TMP=tmp, TEMP=tmp)
        try:
            proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True,
                                  timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            return NvccResult(False, f"nvcc timed out after {timeout:g} s", None, shown)
        except OSError as exc:
            return NvccResult(False, f"nvcc could not run: {exc.strerror or exc}", None, shown)
        log = trim_log(scrub_paths((proc.stdout or "") + (proc.stderr or ""), tmp))
        ok = proc.returncode == 0
        data = ptx = None
        if ok:
            path = os.path.join(tmp, out_name)
            if os.path.exists(path):
                with open(path, "rb") as f:
                    raw = f.read()
                if cubin:
                    data = raw
                else:
                    ptx = scrub_paths(raw.decode("utf-8", "replace"), tmp)
            else:  # pragma: no cover
                ok, log = False, (log + f"\nnvcc produced no {out_name}").strip()
    return NvccResult(ok, log, data, shown, ptx)


# ----------------------------------------------------------------------------- PTX view
@dataclass(frozen=True)
class PtxResult:
    """The PTX of a generated kernel and where each PTX line came from.

    Attributes
    ----------
    ok : bool
        A compiler produced PTX.
    text : str
        The PTX (``.target <arch>``), temp paths scrubbed; '' when not ``ok``.
    cuda_lines : tuple of int or None
        For each PTX line, the 1-based CUDA line of the last ``.loc`` of the kernel's own
        file before it (``-lineinfo``); None before the first one.
    lines : tuple of int or None
        For each PTX line, the description line (``cuda_lines`` mapped through the
        CUDA line map); None for scaffolding.
    tool : str
        ``"nvcc 13.0.88"`` or ``"NVRTC 12.9"`` (what produced it), '' when nothing could.
    log : str
        Compiler output, or why no PTX is available.
    arch : str
    """

    ok: bool
    text: str
    cuda_lines: tuple[int | None, ...]
    lines: tuple[int | None, ...]
    tool: str
    log: str
    arch: str


_PTX_CACHE: dict[str, PtxResult] = {}
_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\b")
_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"')


def ptx_line_map(ptx: str, main_file: str) -> tuple[int | None, ...]:
    """CUDA source line of every PTX line, from the ``.loc`` directives of ``-lineinfo`` PTX.

    Parameters
    ----------
    ptx : str
    main_file : str
        Base name of the compiled file (``k.cu``); ``.loc`` lines of other files (headers)
        end the current mapping.

    Returns
    -------
    tuple of int or None
        One entry per line of ``ptx``.
    """
    lines = ptx.split("\n")
    mains = {m.group(1) for m in map(_FILE.match, lines)
             if m and re.split(r"[/\\]", m.group(2))[-1] == main_file}
    out: list = []
    cur: int | None = None
    for line in lines:
        m = _LOC.match(line)
        if m:
            cur = int(m.group(2)) if m.group(1) in mains else None
        elif line.startswith("}") or _FILE.match(line):
            out.append(None)
            cur = None
            continue
        out.append(cur)
    return tuple(out)


@functools.lru_cache(maxsize=1)
def _nvrtc_include_dirs() -> tuple[str, ...]:
    """Directories holding ``cuda_fp16.h`` and ``cuda/std/cstdint`` for a direct NVRTC compile.

    Searched: the CuPy package (its bundled CUDA headers and CCCL), the ``nvidia`` wheels,
    ``$CUDA_PATH``/``$CUDA_HOME`` and ``/usr/local/cuda``.
    """
    import glob
    import importlib.util

    roots = []
    for pkg in ("cupy", "nvidia"):  # CuPy's bundled headers and CCCL; the nvidia-* wheels
        spec = importlib.util.find_spec(pkg)
        roots += list(spec.submodule_search_locations or []) if spec is not None else []
    roots += [os.path.join(os.environ[v], "include") for v in ("CUDA_PATH", "CUDA_HOME") if os.environ.get(v)]
    roots.append("/usr/local/cuda/include")
    found = []
    for header in ("cuda_fp16.h", os.path.join("cuda", "std", "cstdint")):
        for root in roots:
            hits = sorted(glob.glob(os.path.join(root, "**", header), recursive=True))
            if hits:
                d = hits[0][: -len(header)].rstrip("/\\")
                if d not in found:
                    found.append(d)
                break
    return tuple(found)


def _ptx_nvrtc(text: str, arch: str) -> tuple[str | None, str, str]:
    """(PTX or None, log, tool) through NVRTC (CuPy's bindings); never raises."""
    try:
        from cupy_backends.cuda.libs import nvrtc
    except Exception as exc:  # noqa: BLE001 - no CuPy, or a broken one
        return None, f"NVRTC not available: {type(exc).__name__}", ""
    try:
        ver = ".".join(str(x) for x in nvrtc.getVersion())
    except Exception:  # noqa: BLE001
        ver = "?"
    tool = f"NVRTC {ver}"
    virt = "compute_" + arch.split("_", 1)[1] if arch.startswith("sm_") else arch
    opts = [f"-arch={virt}", "-lineinfo", *BASE_OPTIONS] + [f"-I{d}" for d in _nvrtc_include_dirs()]
    prog = None
    try:
        prog = nvrtc.createProgram(nvrtc_source(text), "k.cu", [], [])
        try:
            nvrtc.compileProgram(prog, opts)
        except Exception:  # noqa: BLE001 - the log says why
            log = nvrtc.getProgramLog(prog)
            return None, trim_log(scrub_paths(str(log))), tool
        ptx = nvrtc.getPTX(prog)
        if isinstance(ptx, bytes):
            ptx = ptx.decode("utf-8", "replace")
        return ptx.rstrip("\x00"), "", tool
    except Exception as exc:  # noqa: BLE001
        return None, f"NVRTC failed: {type(exc).__name__}: {exc}", tool
    finally:
        if prog is not None:
            with contextlib.suppress(Exception):
                nvrtc.destroyProgram(prog)


def ptx_for(text: str, arch: str = "sm_100a", cuda_lines=None, *, tool: str = "auto") -> PtxResult:
    """PTX of a generated CUDA source, with each PTX line mapped to its CUDA and description line.

    Optional and cheap: nvcc (``nvcc -arch=<arch> -ptx -lineinfo``, about 0.4 s, no GPU)
    when it is on PATH, else NVRTC through CuPy's bindings (``-arch=compute_<arch>``);
    results are cached in memory by sha256 of (text, arch, tool), so a widget's PTX tab
    compiles once per kernel.

    Parameters
    ----------
    text : str
        Complete CUDA C++ source (``result.cuda``).
    arch : str, default "sm_100a"
        Target; PTX for tcgen05 needs an arch-specific target.
    cuda_lines : sequence of int or None, optional
        Description line of each CUDA line (``result.cuda_lines``).
    tool : {"auto", "nvcc", "nvrtc"}, optional

    Returns
    -------
    PtxResult
        Never raises: ``ok=False`` with the reason when no compiler is available or the
        source does not compile.
    """
    key = cache_key(text, "ptx", arch, (tool,))
    hit = _PTX_CACHE.get(key)
    if hit is None:
        ptx, log, used = None, "", ""
        if tool in ("auto", "nvcc") and shutil.which("nvcc"):
            from .device import nvcc_version

            res = nvcc_compile(text, arch, cubin=False, flags=("-lineinfo",))
            ptx, log, used = res.ptx if res.ok else None, res.log, f"nvcc {nvcc_version() or ''}".strip()
        if ptx is None and tool in ("auto", "nvrtc"):
            ptx, log2, used2 = _ptx_nvrtc(text, arch)
            if ptx is not None or not used:
                log, used = log2 if ptx is None else "", used2
        if ptx is None and not log:
            log = "no PTX: neither nvcc (on PATH) nor NVRTC (through CuPy) is available"
        ptx = (ptx or "").rstrip("\n")
        cmap = ptx_line_map(ptx, "k.cu") if ptx else ()
        hit = PtxResult(ok=bool(ptx), text=ptx, cuda_lines=cmap, lines=(), tool=used,
                        log=log, arch=arch)
        _PTX_CACHE[key] = hit
    src = list(cuda_lines or [])
    desc = tuple(src[c - 1] if c is not None and 0 < c <= len(src) else None for c in hit.cuda_lines)
    return PtxResult(hit.ok, hit.text, hit.cuda_lines, desc, hit.tool, hit.log, hit.arch)
