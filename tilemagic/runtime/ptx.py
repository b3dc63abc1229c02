"""The PTX view: the PTX of a generated kernel, each PTX line mapped to its CUDA and description line.

nvcc (``-ptx -lineinfo``) when it is on PATH, else NVRTC through CuPy's bindings; no GPU
needed.  Results are kept in a bounded LRU cache (:data:`PTX_CACHE_SIZE` kernels) of the
notebook process, so a widget's PTX tab compiles once per kernel.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass

from ..caches import register_cache
from .logs import scrub_paths, trim_log
from .nvcc import nvcc_compile
from .nvrtc import BASE_OPTIONS, nvrtc_source

#: Kernels whose PTX the notebook process keeps (least recently used dropped first).
PTX_CACHE_SIZE = 64


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


@functools.lru_cache(maxsize=PTX_CACHE_SIZE)
def _ptx(text: str, arch: str, tool: str) -> PtxResult:
    """:func:`ptx_for` without the description lines (cached)."""
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
    return PtxResult(ok=bool(ptx), text=ptx, cuda_lines=cmap, lines=(), tool=used, log=log, arch=arch)


def _clear() -> None:
    _ptx.cache_clear()
    _nvrtc_include_dirs.cache_clear()


register_cache("runtime.ptx", _clear, f"PTX of the last {PTX_CACHE_SIZE} kernels shown, and NVRTC's include dirs")


def ptx_for(text: str, arch: str = "sm_100a", cuda_lines: Sequence[int | None] | None = None, *,
            tool: str = "auto") -> PtxResult:
    """PTX of a generated CUDA source, with each PTX line mapped to its CUDA and description line.

    Optional and cheap: nvcc (``nvcc -arch=<arch> -ptx -lineinfo``, about 0.4 s, no GPU)
    when it is on PATH, else NVRTC through CuPy's bindings (``-arch=compute_<arch>``);
    results are cached in memory by (text, arch, tool), the last :data:`PTX_CACHE_SIZE`
    kept, so a widget's PTX tab compiles once per kernel.

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
    hit = _ptx(text, arch, tool)
    src = list(cuda_lines or [])
    desc = tuple(src[c - 1] if c is not None and 0 < c <= len(src) else None for c in hit.cuda_lines)
    return PtxResult(hit.ok, hit.text, hit.cuda_lines, desc, hit.tool, hit.log, hit.arch)
