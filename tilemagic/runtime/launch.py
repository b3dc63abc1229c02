"""Launch a generated kernel through CuPy and bring every global buffer back.

One CTA of ``src.threads`` threads (grid ``(1,)``; ``--bench`` adds a timed grid
of CTAs, see :func:`run_on_gpu`); a cluster kernel (``CudaSource.cluster`` = C > 1,
``__cluster_dims__(C, 1, 1)`` compiled in) runs one cluster: grid ``(C,)``, through
CuPy's plain launch (a kernel with compile-time cluster dimensions needs no launch
attribute; CUDA C++ Programming Guide, "Thread Block Clusters"), and only on sm_90
or newer (:func:`cluster_refusal`).  A TMEM kernel runs natively
(``sm_100a``) on a CC 10.x GPU and in its emulated form (TMEM in a zeroed global
scratch buffer, checked alloc/dealloc) on any other GPU; a kernel without TMEM
runs natively everywhere.  After an emulated launch ``tm_status`` is read back:
``tm_status[0] != 0`` means the emulation trapped and becomes a
:class:`~tilemagic.errors.LaunchError` with the codegen's message
(:data:`tilemagic.arch.tcgen05.EMU_STATUS`).

Host arrays are transferred as raw bits (``uint8/16/32/64`` views of the same
width) and viewed back, so ``bfloat16`` (ml_dtypes), ``float16`` NaN payloads and
denormals make the round trip unchanged.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING
from collections.abc import Callable, Mapping

import numpy as np

from ..arch.cluster import MIN_SM as CLUSTER_MIN_SM
from ..errors import LaunchError
from ..ir.nodes import bits_view
from .device import DeviceStatus, probe
from .nvrtc import arch_for_device, compile_cupy, cupy_options
from .tensormap import encode_all, grid_map

if TYPE_CHECKING:
    from ..codegen.cuda import CudaSource

#: Launches before timing, and at most this many timed launches, with ``bench=True``.
BENCH_WARMUP = 5
BENCH_REPEATS = 50
#: Timed launches stop once they add up to this many seconds (but never before :data:`BENCH_MIN_REPEATS`).
BENCH_BUDGET_S = 1.5
BENCH_MIN_REPEATS = 5
#: ``--bench`` replicates the tile over as many CTAs as make the buffers it reads this large (bytes) ...
BENCH_BYTES = 1 << 30
#: ... with at most this much emulated-TMEM scratch (256 KiB per CTA) ...
BENCH_SCRATCH_BYTES = 1 << 30
#: ... and at most this fraction of the free device memory for all its buffers.
BENCH_MEMORY_FRACTION = 0.7
#: Bytes of a buffer compared at a time when the grid's results are checked (bounds the temporary).
BENCH_CHECK_BYTES = 64 << 20
#: The note of a ``--bench`` of an emulated TMEM kernel.
EMULATION_NOTE = ("TMEM is emulated in global memory here: these times measure the emulation, "
                  "not Blackwell's tensor memory")

# CUDA errors after which the context is unusable for the rest of the process
_STICKY = ("IllegalAddress", "LaunchFailure", "IllegalInstruction", "MisalignedAddress",
           "Assert", "HardwareStackError", "InvalidPc", "ILLEGAL_ADDRESS", "LAUNCH_FAILED",
           "ILLEGAL_INSTRUCTION", "MISALIGNED_ADDRESS", "ASSERT")


@dataclass
class GpuRun:
    """What a GPU launch produced.

    Attributes
    ----------
    outputs : dict of str -> numpy.ndarray
        Every global buffer after the kernel, same dtype and shape as its input.
    backend : {"cupy", "cupy-emulated"}
    mode : str
        ``"native sm_100a"``, ``"native sm_90 (no TMEM in this kernel)"``,
        ``"emulated TMEM on sm_90"``.
    arch : str
        The ``-arch`` the kernel was compiled for.
    device : str
        ``"NVIDIA H200 (CC 9.0)"``.
    timing : dict or None
        With ``bench=True``: see :func:`run_on_gpu` (``median_us``, ``gb_per_s``,
        ``vs_cupy_copy`` ...).
    compile : dict or None
        How the kernel was obtained: ``cache`` (``"memory"`` or ``"compiled"``), ``ms``,
        ``note`` (see :func:`~tilemagic.runtime.nvrtc.compile_cupy`).
    options : tuple of str
        The NVRTC options tilemagic passed (CuPy adds ``-ftz=true``).
    kernel_name : str
    """

    outputs: dict[str, np.ndarray]
    backend: str
    mode: str
    arch: str
    device: str
    timing: dict | None = None
    options: tuple[str, ...] = ()
    kernel_name: str = ""
    compile: dict | None = None


# ----------------------------------------------------------------------------- helpers
def cluster_refusal(src: CudaSource, status: DeviceStatus) -> str | None:
    """Why the GPU of ``status`` cannot launch ``src`` as a cluster, or None (no cluster, or sm_90 or newer).

    Thread-block clusters — with them distributed shared memory (``mapa``, ``cp.async.bulk.shared::cluster``),
    TMA multicast and ``barrier.cluster`` — exist from compute capability 9.0 (PTX ISA 9.0 §9.7.13.3,
    :data:`tilemagic.arch.cluster.MIN_SM`)."""
    c = src.cluster
    if c <= 1 or status.cc is None or int(status.cc) >= CLUSTER_MIN_SM:
        return None
    return (f"kernel '{src.kernel_name}' runs as a cluster of {c} CTAs (cluster={c}): thread-block clusters, "
            f"distributed shared memory and TMA multicast need sm_{CLUSTER_MIN_SM} or newer, and this GPU is "
            f"{status.label or 'a CUDA device'}")



def _bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    try:
        return bits_view(a)
    except KeyError:
        raise LaunchError(f"cannot transfer dtype {a.dtype} ({a.dtype.itemsize} bytes per element)") from None


def _buffer_numel(buf) -> int:
    n = 1
    for d in buf.shape:
        n *= int(d)
    return n


def _host_array(buf, inputs: Mapping[str, np.ndarray]) -> np.ndarray:
    """The host array for a global buffer: the caller's (checked) or zeros."""
    numel = _buffer_numel(buf)
    arr = inputs.get(buf.name)
    if arr is None:
        from ..ir.nodes import numpy_dtype

        return np.zeros(tuple(buf.shape), dtype=numpy_dtype(buf.dtype))
    arr = np.asarray(arr)
    elem = int(buf.nbytes) // max(numel, 1)
    if arr.size != numel or arr.dtype.itemsize != elem:
        raise LaunchError(
            f"input '{buf.name}' is {arr.dtype}{list(arr.shape)} but the kernel expects "
            f"{buf.dtype}{list(buf.shape)} ({int(buf.nbytes)} bytes)"
        )
    return arr


def _status_message(status: list[int]) -> str:
    code = int(status[0])
    from ..arch.tcgen05 import EMU_STATUS

    template = EMU_STATUS.get(code)
    if template is None:
        return f"TMEM emulation trapped with status {code} (details {status[1:4]})"
    try:
        return template.format(*status)
    except (IndexError, KeyError, ValueError):
        return template


def _cuda_error(kernel_name: str, mode: str, exc: BaseException) -> LaunchError:
    """A CUDA error as a LaunchError; ``sticky`` is set when the context is unusable afterwards.

    The launch worker (:mod:`tilemagic.runtime.worker`) ends itself after a sticky
    error, so the next launch gets a fresh process and context.
    """
    text = str(exc).strip() or type(exc).__name__
    sticky = any(s in text for s in _STICKY)
    err = LaunchError(f"CUDA error while running '{kernel_name}' ({mode}): {text}",
                      hint="this error leaves the CUDA context of the launching process unusable" if sticky else None)
    err.sticky = sticky  # type: ignore[attr-defined]  # read by the worker (serve)
    return err


def _trap(status: list[int], src: CudaSource) -> LaunchError:
    """The emulation's trap as a LaunchError located at the description line of the failing call.

    ``tm_status[4]`` is the ``__LINE__`` of the emulated tcgen05 call in the CUDA text
    (the emulation's call macros record it), ``tm_status[5]`` that of the allocation
    (used for a missing dealloc, found at kernel exit); ``src.lines`` maps CUDA lines to
    description lines.
    """
    from ..errors import Span

    span = None
    lines = list(getattr(src, "lines", None) or [])
    for cuda_line in (status[4], status[5]) if len(status) > 5 else ():
        desc = lines[cuda_line - 1] if 1 <= int(cuda_line) <= len(lines) else None
        if desc:
            span = Span.point(int(desc), 1)
            break
    return LaunchError(_status_message(status), span)


def _mode_text(arch: str, mode: str, uses_tmem: bool) -> tuple[str, str]:
    if mode == "emulated":
        return "cupy-emulated", f"emulated TMEM on {arch}"
    if uses_tmem:
        return "cupy", f"native {arch}"
    return "cupy", f"native {arch} (no TMEM in this kernel)"


def _timed(cupy, launch, before=None, *, warmup: int = BENCH_WARMUP, repeats: int = BENCH_REPEATS,
           budget_s: float = BENCH_BUDGET_S) -> list[float]:
    """Microseconds of each timed ``launch()`` (a ``cupy.cuda.Event`` pair around it), after ``warmup`` untimed ones.

    ``before()`` runs ahead of every launch, outside the events (e.g. re-zeroing the
    emulation's scratch).  Stops after ``repeats`` launches, or earlier once the timed
    launches add up to ``budget_s`` seconds and at least :data:`BENCH_MIN_REPEATS` ran.
    """
    for _ in range(warmup):
        if before is not None:
            before()
        launch()
    cupy.cuda.runtime.deviceSynchronize()
    times: list[float] = []
    while len(times) < repeats:
        if before is not None:
            before()
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        launch()
        end.record()
        end.synchronize()
        times.append(float(cupy.cuda.get_elapsed_time(start, end)) * 1000.0)
        if len(times) >= BENCH_MIN_REPEATS and sum(times) >= budget_s * 1e6:
            break
    return times


def _bench(cupy, launch, extras, warmup: int, repeats: int) -> dict:
    """One CTA timed as is (a caller that passed no ``bench_sources``)."""
    times = _timed(cupy, launch, lambda: [e.fill(0) for e in extras], warmup=warmup, repeats=repeats,
                   budget_s=float("inf"))
    return {
        "median_us": statistics.median(times),
        "min_us": min(times),
        "repeats": len(times),
        "warmup": warmup,
    }


def _grid_size(src: CudaSource, host: Mapping[str, np.ndarray], max_bytes: int,
               free: int | None) -> int:
    """Tiles of a ``--bench`` grid (one CTA each, or one cluster each): the buffers the kernel reads total
    ``max_bytes``, within the scratch and memory caps."""
    from ..codegen.cuda import grid_stride

    per = {b.name: host[b.name].nbytes for b in src.params}
    read = sum(per[n] for n in src.reads) or sum(per.values()) or 1
    alloc = sum(grid_stride(b) * host[b.name].dtype.itemsize for b in src.params)
    extra = sum(np.dtype(dt).itemsize * int(n) for _, dt, n in src.extra_params) * src.cluster
    ctas = max(1, int(max_bytes) // read)
    if extra:
        ctas = min(ctas, max(1, BENCH_SCRATCH_BYTES // extra))
    if free:
        ctas = min(ctas, max(1, int(free * BENCH_MEMORY_FRACTION) // (alloc + extra + 2 * read)))
    return min(ctas, 2 ** 31 - 1)


def _grid_times(cupy, kernel, src: CudaSource, host: Mapping[str, np.ndarray],
                expected: Mapping[str, np.ndarray], ctas: int) -> list[float]:
    """Launch ``src`` over ``ctas`` tiles (each with a copy of the input tile; a tile is one CTA, or the C CTAs
    of one cluster: the grid is ``ctas * C`` blocks, whole clusters), check every tile against ``expected`` (the
    single launch) and the emulation's status (per CTA), and time it."""
    from ..codegen.cuda import grid_stride

    c = src.cluster

    dev = []
    for b in src.params:
        bits = _bits(host[b.name]).reshape(-1)
        arr = cupy.zeros((ctas, grid_stride(b)), dtype=bits.dtype)
        arr[:, : bits.size] = cupy.asarray(bits)
        dev.append(arr)
    extras = [cupy.zeros(ctas * c * int(n), dtype=np.dtype(dt)) for (_, dt, n) in src.extra_params]
    # each tensor map over its whole replicated buffer, one dimension more over the tiles (runtime/tensormap.py)
    maps = encode_all([grid_map(m, ctas) for m in src.tensormaps],
                      {b.name: arr.data.ptr for b, arr in zip(src.params, dev)}) if src.tensormaps else []
    args = tuple(dev) + tuple(maps) + tuple(extras)

    def launch():
        kernel((ctas * c,), (int(src.threads),), args)

    def reset():
        for e in extras:
            e.fill(0)

    launch()
    cupy.cuda.runtime.deviceSynchronize()
    _grid_status(src, extras, ctas * c)
    what = "CTA" if c == 1 else "cluster"
    for b, arr in zip(src.params, dev):
        want = cupy.asarray(_bits(expected[b.name]).reshape(-1))
        step = max(1, BENCH_CHECK_BYTES // max(1, want.nbytes))
        for lo in range(0, ctas, step):
            rows = (arr[lo: lo + step, : want.size] == want).all(axis=1)
            if not bool(rows.all()):
                bad = lo + int((~rows).argmax())
                raise LaunchError(f"--bench: {what} {bad} of {ctas} left {b.name} different from the "
                                  f"single-{what} launch")
    times = _timed(cupy, launch, reset)
    _grid_status(src, extras, ctas * c)
    return times


def _copy_times(cupy, nbytes: int) -> tuple[list[float], list[float]]:
    """Microseconds of a CuPy device-to-device copy of ``nbytes``: ``cudaMemcpyAsync``
    (``MemoryPointer.copy_from_device_async``) and ``cupy.copyto`` (32-bit elements when they fit)."""
    a = cupy.zeros(nbytes, dtype=np.uint8)
    c = cupy.zeros(nbytes, dtype=np.uint8)
    memcpy = _timed(cupy, lambda: c.data.copy_from_device_async(a.data, nbytes))
    wide = np.uint32 if nbytes % 4 == 0 else np.uint8
    copyto = _timed(cupy, lambda: cupy.copyto(c.view(wide), a.view(wide)))
    return memcpy, copyto


def _grid_bench(cupy, kernel, src: CudaSource, host: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray],
                max_bytes: int, emulated: bool) -> dict:
    """Time ``src`` (a :func:`~tilemagic.codegen.cuda.generate` ``grid=True`` source) over a grid of tiles, and a
    CuPy device-to-device copy of the same bytes in the same process.

    A tile is one CTA, or the C CTAs of one cluster (the grid is whole clusters).  Every tile gets a copy of the
    input buffers; after one launch every tile must equal the single launch's output (else a LaunchError).
    Traffic per launch is what the kernel's instructions move in global memory, the bytes they read plus the
    bytes they write (:func:`tilemagic.codegen.cuda.global_bytes`: per execution of each instruction, a TMA box
    counted inside the tensor only), times the tiles: a kernel that copies a 64×64 tile of a larger tensor is
    credited with the tile's bytes, not the tensor's.  The reference is the faster of ``cudaMemcpyAsync``
    device-to-device and ``cupy.copyto`` of as many bytes as the kernel reads (as it writes, when it reads
    none), counted as read + write.
    """
    try:
        free = int(cupy.cuda.runtime.memGetInfo()[0])
    except Exception:  # noqa: BLE001 -- no memory query: the byte cap alone
        free = None
    ctas = _grid_size(src, host, max_bytes, free)
    c = src.cluster
    times = _grid_times(cupy, kernel, src, host, expected, ctas)
    moved = ctas * (src.read_bytes + src.write_bytes)
    read = ctas * (src.read_bytes or src.write_bytes) or 1
    memcpy, copyto = _copy_times(cupy, read)
    med, ref = statistics.median(times), min(statistics.median(memcpy), statistics.median(copyto))
    gbps, ref_gbps = moved / (med * 1e3), 2 * read / (ref * 1e3)
    out: dict[str, object] = {"ctas": ctas * c}
    if c > 1:
        out.update(clusters=ctas, cluster=c)
    out.update({
        "threads": int(src.threads),
        "bytes_per_launch": int(moved),
        "median_us": round(med, 2),
        "min_us": round(min(times), 2),
        "repeats": len(times),
        "warmup": BENCH_WARMUP,
        "gb_per_s": round(gbps, 1),
        "cupy_memcpy_us": round(statistics.median(memcpy), 2),
        "cupy_copyto_us": round(statistics.median(copyto), 2),
        "cupy_copy_gb_per_s": round(ref_gbps, 1),
        "vs_cupy_copy": round(gbps / ref_gbps, 3),
    })
    if emulated:
        out["note"] = EMULATION_NOTE
    return out


def _grid_status(src: CudaSource, extras, ctas: int) -> None:
    """Raise the first CTA's emulation trap of a ``--bench`` grid (``tm_status`` per CTA)."""
    names = [p[0] for p in src.extra_params]
    if "tm_status" not in names:
        return
    st = extras[names.index("tm_status")].reshape(ctas, -1)
    bad = st[:, 0] != 0
    if bool(bad.any()):
        cta = int(bad.argmax())
        err = _trap(st[cta].get().tolist(), src)
        raise LaunchError(f"--bench, CTA {cta} of {ctas}: {err.message}", err.span)


# ----------------------------------------------------------------------------- launch
def run_on_gpu(
    native: CudaSource,
    emulated: CudaSource | None,
    inputs: Mapping[str, np.ndarray],
    *,
    status: DeviceStatus | None = None,
    bench: bool = False,
    bench_sources: tuple[CudaSource, CudaSource | None] | None = None,
    bench_bytes: int | None = None,
    on_compiled: Callable[[], None] | None = None,
) -> GpuRun:
    """Compile and launch a kernel on the current CUDA device; return the global buffers.

    Parameters
    ----------
    native : CudaSource
        The kernel as shown (tcgen05 inline PTX when it uses TMEM).
    emulated : CudaSource or None
        The TMEM-emulated variant; ``None`` means the kernel uses no TMEM and
        ``native`` runs on any GPU.
    inputs : dict of str -> numpy.ndarray
        Host arrays for the global buffers, by name (logical shape, any dtype of the
        buffer's element width; bfloat16 from ml_dtypes).  Missing buffers start as
        zeros; keys that name no global buffer are ignored.
    status : DeviceStatus, optional
        A :func:`~tilemagic.runtime.device.probe` result (probed when omitted).
    bench : bool, default False
        Also time the kernel (after the launch whose outputs are returned):
        :data:`BENCH_WARMUP` warm-ups, then up to :data:`BENCH_REPEATS` launches (fewer
        once they add up to :data:`BENCH_BUDGET_S`), each bracketed by
        ``cupy.cuda.Event``; the median is reported.  With ``bench_sources`` the tile is
        replicated over a grid of tiles, one CTA each or one whole cluster each (the
        buffers it reads total ``bench_bytes``, default :data:`BENCH_BYTES`, capped by the
        free memory and, emulated, by :data:`BENCH_SCRATCH_BYTES` of scratch), every
        tile's result is checked against the single launch, and ``timing`` holds
        ``ctas`` (with a cluster also ``clusters`` and ``cluster``, its size), ``threads``,
        ``bytes_per_launch`` (the global bytes the kernel's instructions read + write,
        :func:`~tilemagic.codegen.cuda.global_bytes`, times the tiles), ``median_us``, ``min_us``,
        ``repeats``, ``warmup``, ``gb_per_s``, the CuPy device-to-device copy of the same
        bytes (``cupy_memcpy_us``, ``cupy_copyto_us``, ``cupy_copy_gb_per_s`` of the
        faster), ``vs_cupy_copy`` (``gb_per_s`` over it) and, for emulated TMEM, a
        ``note``.  Without ``bench_sources``, or when the kernel has no grid form
        (``CudaSource.grid_refused``, then in ``note``), the single CTA is timed
        (``median_us``, ``min_us``, ``repeats``, ``warmup``).  A TMA kernel's grid
        form gets its tensor maps encoded over the grid buffers
        (:func:`~tilemagic.runtime.tensormap.grid_map`).
    bench_sources : (CudaSource, CudaSource or None), optional
        The ``grid=True`` forms of ``native`` and ``emulated``.
    bench_bytes : int, optional
    on_compiled : callable, optional
        Called once the kernel is compiled and its buffers are on the device, just
        before it is launched (the launch worker starts the ``--timeout`` clock then).

    Returns
    -------
    GpuRun
        ``outputs`` holds every global buffer after one launch (copied back before
        any benchmark launch), with the dtype and shape of its input.

    Raises
    ------
    LaunchError
        No usable GPU; a cluster kernel on a GPU below sm_90 (:func:`cluster_refusal`); an input of the
        wrong size or element width; NVRTC compile
        failure; any CUDA error (its text); or the TMEM emulation trapped
        (``tm_status[0] != 0``, message from ``EMU_STATUS``).
    """
    status = status if status is not None else probe()
    if not status.available or status.cc is None:
        raise LaunchError(f"no GPU launch possible: {status.reason}")
    uses_tmem = emulated is not None
    arch, how = arch_for_device(int(status.cc), uses_tmem)
    src = emulated if how == "emulated" and emulated is not None else native
    if src.tensormaps and not arch.endswith("a"):
        arch += "a"  # TMA kernels are built for the device's arch-specific target (sm_90a on the H200)
    backend, mode = _mode_text(arch, how, uses_tmem)
    device = status.label or "CUDA device"

    refusal = cluster_refusal(src, status)
    if refusal:
        raise LaunchError(refusal, hint="run it in the CPU simulator (--launch sim), which runs every CTA of the "
                                        "cluster")
    host = {buf.name: _host_array(buf, inputs) for buf in src.params}
    cinfo: dict = {}
    kernel = compile_cupy(src, arch, info=cinfo)
    gsrc = gkernel = None
    single_note = None
    if bench and bench_sources is not None:
        gsrc = bench_sources[1] if how == "emulated" else bench_sources[0]
        if gsrc is not None and gsrc.grid_refused:  # no grid form (a rank-5 tensor map): one CTA, and why
            single_note, gsrc = gsrc.grid_refused, None
        gkernel = compile_cupy(gsrc, arch) if gsrc is not None else None

    import cupy  # lazy

    try:
        # copy=True: never alias host memory (cupy may zero-copy on unified-memory systems)
        dev_bufs = [cupy.array(_bits(host[buf.name]), copy=True) for buf in src.params]
        extras = [cupy.zeros(int(n), dtype=np.dtype(dt)) for (_, dt, n) in src.extra_params]
        # the tensor maps follow the global buffers, encoded on their device pointers (runtime/tensormap.py)
        maps = encode_all(src.tensormaps, {b.name: d.data.ptr for b, d in zip(src.params, dev_bufs)}) \
            if src.tensormaps else []
        args = tuple(dev_bufs) + tuple(maps) + tuple(extras)
        grid, block = (src.cluster,), (int(src.threads),)  # one CTA, or one whole cluster

        def launch():
            kernel(grid, block, args)

        if on_compiled is not None:
            on_compiled()
        launch()
        cupy.cuda.runtime.deviceSynchronize()
        names = [p[0] for p in src.extra_params]
        tm_status = extras[names.index("tm_status")].get().tolist() if "tm_status" in names else None
        outputs = {}
        for buf, d in zip(src.params, dev_bufs):
            a = host[buf.name]
            outputs[buf.name] = d.get().view(a.dtype).reshape(a.shape)
    except LaunchError:
        raise
    except Exception as exc:
        raise _cuda_error(src.kernel_name, mode, exc) from None
    if tm_status is not None and int(tm_status[0]) != 0:
        raise _trap(tm_status, src)

    timing = None
    if bench and gkernel is not None and gsrc is not None:
        try:
            timing = _grid_bench(cupy, gkernel, gsrc, host, outputs, bench_bytes or BENCH_BYTES, how == "emulated")
        except LaunchError:
            raise
        except Exception as exc:
            raise _cuda_error(src.kernel_name, mode, exc) from None
    elif bench:
        try:
            timing = _bench(cupy, launch, extras, BENCH_WARMUP, BENCH_REPEATS)
            if single_note:
                timing["note"] = single_note
            final = extras[names.index("tm_status")].get().tolist() if tm_status is not None else None
        except Exception as exc:
            raise _cuda_error(src.kernel_name, mode, exc) from None
        if final is not None and int(final[0]) != 0:
            raise _trap(final, src)

    return GpuRun(outputs=outputs, backend=backend, mode=mode, arch=arch, device=device,
                  timing=timing, options=cupy_options(arch), kernel_name=src.kernel_name, compile=cinfo)
