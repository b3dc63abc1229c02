"""The whole pipeline, shared by the magic, the Python API and the CLI.

parse → check → dispatch + lower → IR text, CUDA (native and emulated) →
launch (CPU simulator, or CuPy on a GPU: native on CC 10.x, TMEM emulated
elsewhere) → checks → :class:`~tilemagic.result.TileCopyResult`.
"""

from __future__ import annotations

import argparse
import hashlib
import pickle
import re
import warnings
from collections import OrderedDict

import numpy as np

from .errors import LaunchError, LoweringError, Span, TileMagicError, TileSyntaxError, TileTypeError
from .ir import nodes as ir
from .result import CheckResult, LaunchResult, ReportSection, TileCopyResult

from .options import (COLOR_BY_CHOICES, COMPARE_CHOICES, DEFAULT_TIMEOUT_S, EXPORT_CHOICES, LAUNCH_CHOICES,
                      OPTION_SUMMARY, VIEW_CHOICES, heatmap_list)

_ARCH_RE = re.compile(r"^sm_\d{2,3}[af]?$")

#: How many recent kernels :func:`intern_kernel` remembers.
KERNEL_MEMO_SIZE = 32
_KERNELS: OrderedDict[str, ir.Kernel] = OrderedDict()


def _content_key(kernel: ir.Kernel) -> str:
    return hashlib.sha256(pickle.dumps(kernel, protocol=pickle.HIGHEST_PROTOCOL)).hexdigest()


def intern_kernel(kernel: ir.Kernel) -> ir.Kernel:
    """An earlier lowered kernel with the same content as ``kernel``, else ``kernel`` (remembered).

    A cell that runs again unchanged lowers to an identical kernel; handing back the
    earlier *object* lets everything cached per kernel object hit — above all the
    report's heatmap PNGs (:func:`tilemagic.widgets.heatmap.heatmap_png`, the bulk of a
    cell's time).  Content is compared as the sha256 of the pickled kernel (buffers,
    layouts, statements, spans), taken right after lowering, so two kernels are only
    merged when every field is equal; lowering itself always runs.  A remembered kernel
    that was edited since (tests and users may change ``result.kernel``) is re-hashed on a
    hit and replaced, never handed out.  The last :data:`KERNEL_MEMO_SIZE` kernels are kept.
    """
    try:
        key = _content_key(kernel)
    except Exception:  # noqa: BLE001 -- something unpicklable in a hand-built kernel: no sharing
        return kernel
    hit = _KERNELS.get(key)
    if hit is not None and _content_key(hit) == key:  # (a caller may have edited the earlier object)
        _KERNELS.move_to_end(key)
        return hit
    _KERNELS[key] = kernel
    while len(_KERNELS) > KERNEL_MEMO_SIZE:
        _KERNELS.popitem(last=False)
    return kernel


def check_arch(arch: str) -> str:
    """Validate an ``--arch`` value (``sm_100a``, ``sm_90``, ...); raise ValueError otherwise."""
    if not isinstance(arch, str) or not _ARCH_RE.match(arch):
        raise ValueError(f"--arch {arch!r} is not a CUDA target; expected e.g. sm_100a")
    return arch


def _check_target(kernel, arch):
    """A kernel with tcgen05 instructions needs a tensor-memory target (PTX ISA §9.7.16)."""
    from .codegen.cuda import TCGEN05_ARCHS, uses_tcgen05

    if arch in TCGEN05_ARCHS or not uses_tcgen05(kernel):
        return
    span = next((s.span for s in ir.walk(kernel.body) if isinstance(s, ir.TcgenLdSt) and s.span), None)
    span = span or next((b.span for b in kernel.tmem if b.span), None)
    raise LoweringError(
        f"this kernel uses tcgen05 (tensor memory) but --arch {arch} has no TMEM; ptxas accepts tcgen05 only for "
        f"{', '.join(TCGEN05_ARCHS)}", span,
        hint="use --arch sm_100a (the default); on other GPUs tilemagic runs the emulated TMEM source by itself")


def _read_first(tp):
    """Global buffers whose first use is a read (they default to ``random`` init)."""
    seen, reads = set(), set()
    for item in tp.items:
        if item[0] == "copy":
            op = item[1]
            for side, is_read in ((op.src, True), (op.dst, False)):
                b = side.buf
                if b.scope == "global" and b.name not in seen:
                    seen.add(b.name)
                    if is_read:
                        reads.add(b.name)
    return reads


def make_inputs(tp, seed: int = 0, namespace: dict | None = None) -> dict[str, np.ndarray]:
    """Initial contents of every global buffer.

    ``random`` (the default for buffers read before written) draws from a generator
    seeded with ``(seed, buffer index)``: normal values for floats, the full range for
    integers.  ``arange``/``zeros`` as in NumPy.  Any other name is looked up (never
    evaluated) in ``namespace`` and must be a NumPy array of the buffer's shape and dtype.

    Raises
    ------
    TileTypeError
        Unknown variable, not an ndarray, wrong shape or dtype.
    """
    reads = _read_first(tp)
    out = {}
    for idx, b in enumerate(x for x in tp.buffers.values() if x.scope == "global"):
        dt = ir.numpy_dtype(b.dtype)
        init = b.init or ("random" if b.name in reads else "zeros")
        if init == "zeros":
            arr = np.zeros(b.shape, dt)
        elif init == "arange":
            src = np.arange(b.numel)
            if b.dtype in ("float32", "float16", "bfloat16"):
                src = src.astype(np.float64)
            arr = src.astype(dt).reshape(b.shape)
        elif init == "random":
            rng = np.random.default_rng([seed, idx])
            if b.dtype in ("float32", "float16", "bfloat16"):
                arr = rng.standard_normal(b.shape, dtype=np.float32).astype(dt)
            else:
                info = np.iinfo(dt)
                arr = rng.integers(info.min, info.max, size=b.shape, endpoint=True, dtype=dt)
        else:
            ns = namespace or {}
            if init not in ns:
                raise TileTypeError(f"'{init}' is not a variable in the notebook namespace (initialiser of {b.name})",
                                    b.init_span or b.span, hint="define it first, or use random, arange or zeros")
            val = ns[init]
            if not isinstance(val, np.ndarray):
                raise TileTypeError(f"'{init}' is a {type(val).__name__}, not a NumPy array", b.init_span or b.span)
            if tuple(val.shape) != tuple(b.shape) or val.dtype != dt:
                raise TileTypeError(f"'{init}' is {val.dtype}{list(val.shape)}; {b.name} needs {dt}{list(b.shape)}",
                                    b.init_span or b.span,
                                    hint=f"convert it, e.g. {init}.astype(...).reshape{tuple(b.shape)}")
            arr = np.array(val, copy=True)
        out[b.name] = np.ascontiguousarray(arr)
    return out


def run_checks(tp, outputs) -> list:
    res = []
    for item in tp.items:
        if item[0] != "check":
            continue
        _, lhs, rhs, text, span = item
        a = ir.bits_view(outputs[lhs.buf.name])[tuple(slice(b, b + e) for b, e in lhs.region)].reshape(lhs.nonunit)
        b = ir.bits_view(outputs[rhs.buf.name])[tuple(slice(b, b + e) for b, e in rhs.region)].reshape(rhs.nonunit)
        bad = int(np.count_nonzero(a != b))
        res.append(CheckResult(text.removeprefix("check").strip(), span.line, bad == 0, bad, int(a.size)))
    return res


def check_timeout(timeout) -> float:
    """Validate a ``--timeout`` value (seconds, a positive finite number); raise ValueError otherwise."""
    try:
        value = float(timeout)
    except (TypeError, ValueError):
        raise ValueError(f"--timeout {timeout!r} is not a number of seconds") from None
    if not (0 < value < float("inf")):
        raise ValueError(f"--timeout must be a positive number of seconds, got {timeout!r}")
    return value


def _launch(kernel, native, emulated, inputs, launch, strict, bench, timeout, span=None, arch="sm_100a",
            bench_bytes=None):
    """Run the kernel: in the launch worker on a GPU (``auto``/``gpu`` when one is found), else in the simulator.

    The GPU is only ever touched by the worker process (:mod:`tilemagic.runtime.worker`):
    an illegal address, an emulation trap or a hang there is a LaunchError here, and the
    next launch gets a fresh worker.  Without CuPy no worker is started.  A LaunchError
    that knows no line (a CUDA error, a timeout) is located at ``span``, else at the
    kernel's first statement.
    """
    try:
        return _run_backend(kernel, native, emulated, inputs, launch, strict, bench, timeout, arch, bench_bytes)
    except LaunchError as e:
        if e.span is None:
            e.span = span or next((s.span for s in ir.walk(kernel.body) if s.span is not None), None)
        raise


def _run_backend(kernel, native, emulated, inputs, launch, strict, bench, timeout, arch="sm_100a",
                 bench_bytes=None):
    has_tmem = kernel.tmem_cols > 0
    reason = ""
    if launch in ("auto", "gpu"):
        from .runtime.worker import get_worker

        worker = get_worker()
        st = worker.probe()
        if st.available:
            grid = None
            if bench:  # --bench times the tile replicated over a grid of CTAs (codegen's grid form)
                from .codegen.cuda import generate

                grid = (generate(kernel, "native", arch=arch, grid=True),
                        generate(kernel, "emulated", arch=arch, strict=strict, grid=True) if emulated else None)
            run = worker.launch(native, emulated, inputs, bench=bench, timeout=timeout, bench_sources=grid,
                                bench_bytes=bench_bytes)
            return LaunchResult(run.backend, run.mode, run.arch, "a CUDA device was found",
                                dict(inputs), run.outputs, device=run.device, timing=run.timing,
                                compile=getattr(run, "compile", None))
        if launch == "gpu":
            raise LaunchError(f"--launch gpu: no GPU available ({st.reason})",
                              hint="use --launch sim for the CPU simulator, or --launch auto")
        reason = f"no CUDA device — {st.reason} — so the CPU simulator ran"
    else:
        reason = "--launch sim"
    from .sim import simulate

    hazards = []
    outputs = simulate(kernel, inputs, strict=strict, hazards=hazards)
    if bench:
        reason += "; --bench ignored: it times GPU launches only"
    mode = "CPU simulator, TMEM modelled in NumPy" if has_tmem else "CPU simulator"
    return LaunchResult("sim", mode, None, reason, dict(inputs), outputs, hazards=hazards)


def run_kernel(kernel, inputs, *, launch: str = "sim", arch: str = "sm_100a", strict: bool = False,
               bench: bool = False, timeout: float = DEFAULT_TIMEOUT_S, span: Span | None = None) -> LaunchResult:
    """Generate the CUDA of a lowered (or hand-built) kernel and run it as a cell would.

    Parameters
    ----------
    kernel : ir.Kernel
    inputs : dict of str -> numpy.ndarray
        Every global buffer's initial contents.
    launch : {"auto", "sim", "gpu"}
    arch, strict, bench, timeout
        As the ``%%tilecopy`` options.
    span : Span, optional
        Where a launch error that the GPU cannot place (a CUDA error, a timeout, a dead
        worker) is located; default the kernel's first statement with a span.

    Raises
    ------
    LaunchError
        Located at the failing statement (simulator, emulation traps) or at ``span``.
    """
    from .codegen.cuda import generate, uses_tcgen05

    native = generate(kernel, "native", arch=arch)
    emulated = generate(kernel, "emulated", arch=arch, strict=strict) if uses_tcgen05(kernel) else None
    return _launch(kernel, native, emulated, inputs, launch, strict, bench, timeout, span, arch)


_DEFAULTS = dict(launch="auto", arch="sm_100a", view="html", strict=False, bench=False, seed=0,
                 timeout=DEFAULT_TIMEOUT_S, export=None, compare=None, heatmap=("tmem",), color_by="warp")


def _header(source: str):
    """(line number, options) of a first line ``%%tilecopy ...``, or (None, None)."""
    from .options import OptionError, parse_option_line

    for no, line in enumerate(source.splitlines(), 1):
        if not line.strip():
            continue
        if not line.lstrip().startswith("%%tilecopy"):
            return None, None
        text = line.lstrip()[len("%%tilecopy"):]
        col = len(line) - len(line.lstrip()) + 1
        span = Span(no, col, no, len(line) + 1)
        try:
            opts = parse_option_line(text)
            if opts.arch is not None:
                check_arch(opts.arch)
            if opts.seed is not None and opts.seed < 0:
                raise OptionError("--seed must be a non-negative integer")
            if opts.timeout is not None:
                check_timeout(opts.timeout)
        except (OptionError, ValueError) as e:
            raise TileSyntaxError(f"bad %%tilecopy option line: {e}", span,
                                  source=source, hint="options: " + OPTION_SUMMARY) from None
        opts.span = span
        return no, opts
    return None, None


def tilecopy(
    source: str,
    *,
    name: str | None = None,
    launch: str | None = None,
    arch: str | None = None,
    view: str | None = None,
    strict: bool | None = None,
    bench: bool | None = None,
    seed: int | None = None,
    timeout: float | None = None,
    namespace: dict | None = None,
    emit_warnings: bool = True,
    bench_bytes: int | None = None,
    export: str | None = None,
    compare: str | None = None,
    heatmap=None,
    color_by: str | None = None,
) -> TileCopyResult:
    """Run a ``%%tilecopy`` description through the whole pipeline.

    Parameters
    ----------
    source : str
        The description (docs/language.md).  A first line ``%%tilecopy [NAME] [--launch ...] ...``
        gives options, as in a notebook cell; keyword arguments given here win over it.
    name : str, optional
        Cell name; the ``kernel`` statement's name wins for the CUDA kernel.
    launch : {"auto", "sim", "gpu", "off"}, default "auto"
        ``auto``: CuPy on a GPU when one is found, else the CPU simulator (and says so).
    arch : str, default "sm_100a"
        Target of the shown (native) CUDA.  A kernel using tcgen05 needs a tensor-memory target
        (``sm_100a``, ``sm_100f``, ``sm_103a``, ``sm_103f``, ``sm_110a``, ``sm_110f``).
    view : {"html", "text", "widget"}, default "html"
    strict : bool, default False
        Flag TMEM addresses whose quadrant bits differ from warp_id % 4.
    bench : bool, default False
        Time the GPU launch with CUDA events (GPU only): the tile replicated over a grid of
        CTAs (the codegen's grid form), GB/s and the ratio to a CuPy device-to-device copy
        in ``result.launch.timing`` (see :func:`tilemagic.runtime.launch.run_on_gpu`).
    bench_bytes : int, optional
        With ``bench``: bytes the grid's CTAs read per launch (default 1 GiB, capped by the
        free GPU memory).
    seed : int, default 0
        Seed of ``random`` initialisers.
    timeout : float, default 10
        Seconds a GPU kernel may run (after compiling) before the launch worker is
        stopped; the launch is then a LaunchError and the next one starts a fresh worker.
    namespace : dict, optional
        Where ``= NAME`` initialisers are looked up (the notebook's user namespace).
    export : {"tvmscript"}, optional
        Also write the equivalent TVM TIRx program (``result.export_text``, a report section).
    compare : {"tvm"}, optional
        Lower that program with apache-tvm and compare it with this lowering, op by op
        (``result.tvm_comparison``, a report section; a message when apache-tvm is missing).
    heatmap : str or sequence of str, default ("tmem",)
        Pictures of the HTML report (``--heatmap``): ``tmem``, ``instr``, ``fragment``,
        ``data``, ``none`` (a comma-separated string or a sequence).
    color_by : {"warp", "thread", "reg", "instr"}, default "warp"
        Colour of a TMEM cell in the report's occupancy heatmap.

    Returns
    -------
    TileCopyResult

    Raises
    ------
    TileMagicError
        A located description, dispatch, lowering or launch error.
    ValueError
        ``launch``/``view``/``arch`` given here with an invalid value.
    TypeError
        ``source`` is not a str.
    """
    from .codegen.cuda import generate, uses_tcgen05
    from .ir.printer import print_ir
    from .lang import parse
    from .lower.hazards import check_hazards
    from .lower.dispatch import TargetSpec
    from .lower.program import check, lower

    if not isinstance(source, str):
        raise TypeError(f"source must be the cell's text (str), not {type(source).__name__}")
    _, hdr = _header(source)
    given = dict(launch=launch, arch=arch, view=view, strict=strict, bench=bench, seed=seed, timeout=timeout,
                 export=export, compare=compare, heatmap=heatmap, color_by=color_by)
    opts = {}
    for key, default in _DEFAULTS.items():
        val = given[key]
        if val is None and hdr is not None:
            val = getattr(hdr, key, None)
        opts[key] = default if val is None else val
    if name is None and hdr is not None:
        name = hdr.name
    for key in ("launch", "view", "export", "compare", "color_by"):  # case-insensitive, as %config TileMagics.*
        if isinstance(opts[key], str):
            opts[key] = opts[key].lower()
    if opts["launch"] not in LAUNCH_CHOICES:
        raise ValueError(f"launch must be one of {LAUNCH_CHOICES}")
    if opts["view"] not in VIEW_CHOICES:
        raise ValueError(f"view must be one of {VIEW_CHOICES}")
    if not isinstance(opts["seed"], (int, np.integer)) or opts["seed"] < 0:  # (a NumPy integer is fine)
        raise ValueError("seed must be a non-negative integer")
    opts["seed"] = int(opts["seed"])
    if opts["export"] not in (None,) + EXPORT_CHOICES:
        raise ValueError(f"export must be one of {EXPORT_CHOICES}")
    if opts["compare"] not in (None,) + COMPARE_CHOICES:
        raise ValueError(f"compare must be one of {COMPARE_CHOICES}")
    if opts["color_by"] not in COLOR_BY_CHOICES:
        raise ValueError(f"color_by must be one of {COLOR_BY_CHOICES}")
    try:
        kinds = opts["heatmap"]
        if not isinstance(kinds, str):
            if not isinstance(kinds, (list, tuple)) or not all(isinstance(k, str) for k in kinds):
                raise argparse.ArgumentTypeError(f"heatmap must be a comma-separated string or a sequence of "
                                                 f"strings, not {kinds!r}")
            kinds = ",".join(kinds)
        opts["heatmap"] = heatmap_list(kinds)
    except argparse.ArgumentTypeError as e:
        raise ValueError(str(e)) from None
    arch = check_arch(opts["arch"])
    timeout = check_timeout(opts["timeout"])
    strict, bench = bool(opts["strict"]), bool(opts["bench"])
    try:
        prog = parse(source)
        tp = check(prog, name, name_span=getattr(hdr, "span", None), arch=arch)
        kernel, records, warns = lower(tp, TargetSpec("cuda", arch))
        warns = warns + check_hazards(kernel)
        kernel = intern_kernel(kernel)
        _check_target(kernel, arch)
        ir_text, ir_lines = print_ir(kernel, arch=arch)
        native = generate(kernel, "native", arch=arch)
        emulated = generate(kernel, "emulated", arch=arch, strict=strict) if uses_tcgen05(kernel) else None
        lres = None
        if opts["launch"] != "off":  # inputs only when something runs on them
            inputs = make_inputs(tp, opts["seed"], namespace)
            lres = _launch(kernel, native, emulated, inputs, opts["launch"], strict, bench, timeout, tp.kernel_span,
                           arch, bench_bytes)
            lres.checks = run_checks(tp, lres.outputs)
            warns = warns + lres.hazards  # shared-memory races the simulator saw
    except TileMagicError as e:
        raise e.with_source(source)
    if emit_warnings:  # after everything else, so a later error is not preceded by them
        for text, span in warns:
            warnings.warn_explicit(text, UserWarning, "tilecopy", span.line if span else 0)
    result = TileCopyResult(
        name=name or tp.name, source=source, program=prog, kernel=kernel, ir=ir_text, cuda=native.text,
        cuda_emulated=emulated.text if emulated else None, dispatch=records, launch=lres,
        warnings=[w for w, _ in warns], options=dict(opts, arch=arch, strict=strict, bench=bench, timeout=timeout),
        ir_lines=ir_lines, cuda_lines=native.lines, typed=tp,
        cuda_emulated_lines=list(emulated.lines) if emulated else [],
    )
    if opts["export"] == "tvmscript":
        result.export_text = result.tvmscript()
        result.sections.append(ReportSection("TVMScript (TVM TIRx equivalent)", result.export_text))
    if opts["compare"] == "tvm":
        result.tvm_comparison = result.compare_tvm()
        result.sections.append(ReportSection("TVM comparison", result.tvm_comparison.text(),
                                             result.tvm_comparison.html() if result.tvm_comparison.available
                                             else None))
    return result
