"""The whole pipeline, shared by the magic, the Python API and the CLI.

parse → check → dispatch + lower → IR text, CUDA (native and emulated) →
launch (CPU simulator, or CuPy on a GPU: native on CC 10.x, TMEM emulated
elsewhere) → checks → :class:`~tilemagic.result.TileCopyResult`.
"""

from __future__ import annotations

import re
import warnings
from collections import OrderedDict
from collections.abc import Mapping
from difflib import get_close_matches
from typing import TYPE_CHECKING

import numpy as np

from .caches import register_cache
from .errors import (CheckFailed, HazardError, LaunchError, LoweringError, Span, TileMagicError, TileSyntaxError,
                     TileTypeError, split_lines)
from .ir import nodes as ir
from .options import OptionError, Options, numpydoc, option_flags, resolve, usage
from .options import parse as parse_options
from .result import CheckResult, LaunchResult, ReportSection, TileCopyResult
from .widgets.format import MAX_LISTED
from .widgets.placement import first_mismatches

if TYPE_CHECKING:
    from .lower.program import TypedProgram

#: How many recent kernels :func:`intern_kernel` remembers.
KERNEL_MEMO_SIZE = 32
_KERNELS: OrderedDict[str, ir.Kernel] = OrderedDict()
register_cache("pipeline.kernels", _KERNELS.clear, f"the last {KERNEL_MEMO_SIZE} lowered kernels, by content")


def intern_kernel(kernel: ir.Kernel) -> ir.Kernel:
    """An earlier lowered kernel with the same content as ``kernel``, else ``kernel`` (remembered).

    A cell that runs again unchanged lowers to an identical kernel; handing back the
    earlier *object* keeps one kernel per content in memory.  Content is compared by
    :func:`tilemagic.ir.nodes.content_key` (the sha256 of the pickled kernel: buffers,
    layouts, statements, spans), taken right after lowering, so two kernels are only
    merged when every field is equal; lowering itself always runs.  A remembered kernel
    that was edited since (tests and users may change ``result.kernel``) is re-hashed on a
    hit and replaced, never handed out; the heatmap PNGs are keyed on the same content
    key (:mod:`tilemagic.widgets.png`), so an edited kernel is drawn again.  The last
    :data:`KERNEL_MEMO_SIZE` kernels are kept (``tilemagic.clear_caches()`` empties them).
    """
    try:
        key = ir.content_key(kernel)
    except Exception:  # noqa: BLE001 -- something unpicklable in a hand-built kernel: no sharing
        return kernel
    hit = _KERNELS.get(key)
    if hit is not None and ir.content_key(hit) == key:  # (a caller may have edited the earlier object)
        _KERNELS.move_to_end(key)
        return hit
    _KERNELS[key] = kernel
    while len(_KERNELS) > KERNEL_MEMO_SIZE:
        _KERNELS.popitem(last=False)
    return kernel


def _check_target(kernel, arch, kernel_span=None):
    """A kernel with tcgen05 instructions needs a tensor-memory target (PTX ISA 9.0 §9.7.16): refused at the first
    tcgen05 copy or commit, else the first tmem declaration, else the first tcgen05 wait or fence, else
    ``kernel_span`` (the ``kernel`` line)."""
    from .arch.tcgen05 import TCGEN05_ARCHS
    from .codegen.cuda import uses_tcgen05

    if arch in TCGEN05_ARCHS or not uses_tcgen05(kernel):
        return
    span = next((s.span for s in ir.walk(kernel.body)
                 if isinstance(s, (ir.TcgenLdSt, ir.TcgenCp, ir.TcgenCommit)) and s.span), None)
    span = span or next((b.span for b in kernel.tmem if b.span), None)
    span = span or next((s.span for s in ir.walk(kernel.body)
                         if isinstance(s, (ir.TcgenWait, ir.TcgenFence)) and s.span), None)
    span = span or kernel_span
    raise LoweringError(
        f"this kernel uses tcgen05 (tensor memory) but --arch {arch} has no TMEM; ptxas accepts tcgen05 only for "
        f"{', '.join(TCGEN05_ARCHS)}", span,
        hint="use --arch sm_100a (the default); on other GPUs tilemagic runs the emulated TMEM source by itself")


def _read_first(tp: TypedProgram) -> set[str]:
    """Global buffers whose first use is a read (they default to ``random`` init)."""
    seen, reads = set(), set()
    for op in tp.copy_ops:
        for side, is_read in ((op.src, True), (op.dst, False)):
            b = side.buf
            if b.scope == "global" and b.name not in seen:
                seen.add(b.name)
                if is_read:
                    reads.add(b.name)
    return reads


def make_inputs(tp: TypedProgram, seed: int = 0, namespace: dict | None = None) -> dict[str, np.ndarray]:
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
            with np.errstate(over="ignore"):  # (float16 past 65504 is inf, as documented; integers wrap)
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


def _check_side(outputs: Mapping[str, np.ndarray], side) -> np.ndarray:
    """The region of one side of a check, unit dims dropped (a view of the output)."""
    return outputs[side.buf.name][tuple(slice(b, b + e) for b, e in side.region)].reshape(side.nonunit)


def _region_hits(per_elem: np.ndarray, side) -> tuple[int, str | None]:
    """How many elements of a check side's region ``per_elem`` (a bool per element of the whole buffer) marks,
    and the first of them as ``"B[3, 4]"``."""
    region = tuple(slice(lo, lo + e) for lo, e in side.region)
    hit = per_elem.reshape(side.buf.shape)[region]
    n = int(np.count_nonzero(hit))
    if not n:
        return 0, None
    at = np.unravel_index(int(np.argmax(hit)), hit.shape)
    return n, f"{side.buf.name}[{', '.join(str(lo + int(i)) for (lo, _), i in zip(side.region, at))}]"


def run_checks(tp: TypedProgram, outputs: Mapping[str, np.ndarray], hb=None) -> list[CheckResult]:
    """Compare the two sides of every ``check``, bit for bit.

    ``hb`` (the simulator's :class:`tilemagic.sim.hb.HBReport`, None after a GPU run) adds two things the
    bits cannot say.  ``hb.poison`` (per global buffer a ``bool`` per byte, True where the kernel stored
    uninitialised data) makes a check whose regions hold such bytes FAIL as "uninitialised", whatever the
    bits say: the simulator's garbage could equal the expected values by luck, a GPU's would not.  And a
    check over elements of a buffer with the default initialiser (zeros: neither read first nor given an
    ``= INIT``) that no thread wrote keeps its verdict but says so (``CheckResult.unwritten``): such
    elements hold the host's zeros, not a result.  The first :data:`MAX_LISTED` mismatches are kept
    (``CheckResult.first``), never one entry per element.  After a simulator run that stopped because the kernel
    would hang (``hb.hang``) no check is evaluated, and each says so (``CheckResult.not_evaluated``): the outputs
    are the memory at the hang, not the kernel's result.
    """
    if hb is not None and hb.hang is not None:  # the run stopped: no output is the kernel's result
        why = f"the kernel would hang at {f'L{hb.hang.span.line}' if hb.hang.span else 'its end'}"
        return [CheckResult(item.text.removeprefix("check").strip(), item.span.line, False, 0, 0,
                            not_evaluated=f"not evaluated: {why}") for item in tp.checks]
    defaulted = {b.name for b in tp.buffers.values() if b.scope == "global" and not b.init} - _read_first(tp)
    res = []
    for item in tp.checks:
        lhs, rhs = item.lhs, item.rhs
        got, exp = _check_side(outputs, lhs), _check_side(outputs, rhs)
        mask = ir.bits_view(got) != ir.bits_view(exp)
        bad = int(np.count_nonzero(mask))
        first = first_mismatches(got, exp, mask, MAX_LISTED) if bad else ()  # capped list, never one per element
        unin, first_unin, unw, first_unw = 0, None, 0, None
        for side in (lhs, rhs) if hb is not None else ():
            name, eb = side.buf.name, side.buf.elem_bytes
            p = hb.poison.get(name)
            if p is not None and p.any():
                n, at = _region_hits(p.reshape(-1, eb).any(1), side)
                if n > unin:
                    unin, first_unin = n, at
            if name in defaulted and (name in hb.tracked or name not in hb.written):
                never = hb.unwritten.get(name) if name in hb.tracked else np.ones(side.buf.numel, bool)
                n, at = _region_hits(never, side) if never is not None else (0, None)
                if n > unw:
                    unw, first_unw = n, at
        res.append(CheckResult(item.text.removeprefix("check").strip(), item.span.line, bad == 0 and unin == 0, bad,
                               int(got.size), first, uninitialised=unin, first_uninitialised=first_unin,
                               unwritten=unw, first_unwritten=first_unw))
    return res


def _strict_hazards(hazards: list, launch: LaunchResult | None) -> None:
    """``--strict``: the first hazard is a located :class:`~tilemagic.errors.HazardError` (the rest in details)."""
    if not hazards:
        return
    msg, span = hazards[0]
    rest = [m for m, _ in hazards[1:]]
    details = "\n".join(["other hazards:"] + [f"- {m}" for m in rest]) if rest else None
    fix = "fix the synchronisation"
    if launch is not None and launch.hb is not None and launch.hb.hazards:
        h = launch.hb.hazards[0]
        if h.kind == "uninit":
            fix = "initialise the data before it is read (store to it first, or copy into it)"
        elif h.kind == "hang":
            fix = "make the phase complete: the arrivals and bytes the message names"
        elif h.other_span is not None and h.other_span != h.span:
            fix = f"the other access is at L{h.other_span.line}; {fix}"
    hint = f"{fix}, or run without --strict to see the hazards as warnings"
    raise HazardError(msg.removeprefix("hazard: "), span, hint=hint, details=details)


def _launch(kernel: ir.Kernel, native, emulated, inputs: dict[str, np.ndarray], opts: Options,
            span: Span | None = None, bench_bytes: int | None = None, trace=None) -> LaunchResult:
    """Run the kernel: in the launch worker on a GPU (``auto``/``gpu`` when one is found), else in the simulator.

    The GPU is only ever touched by the worker process (:mod:`tilemagic.runtime.worker`):
    an illegal address, an emulation trap or a hang there is a LaunchError here, and the
    next launch gets a fresh worker.  Without CuPy no worker is started.  A LaunchError
    that knows no line (a CUDA error, a timeout) is located at ``span``, else at the
    kernel's first statement.  ``trace`` (a :class:`tilemagic.sim.banks.BankTrace`) sees every shared-memory
    access when the simulator runs.
    """
    try:
        return _run_backend(kernel, native, emulated, inputs, opts, bench_bytes, trace)
    except LaunchError as e:
        if e.span is None:
            e.span = span or next((s.span for s in ir.walk(kernel.body) if s.span is not None), None)
        raise


def _refuse_a_hang(kernel: ir.Kernel, inputs: dict[str, np.ndarray], opts: Options) -> None:
    """Before a GPU launch (``--launch auto``) of a kernel that waits on an mbarrier: run it in the simulator first,
    and do not launch a kernel whose phase can never complete (a GPU would spin in ``mbarrier.try_wait`` until the
    worker's ``--timeout``).  ``--launch gpu`` launches it anyway; the worker's timeout then stops it."""
    if not any(isinstance(s, ir.MbarWait) for s in ir.walk(kernel.body)):
        return
    from .sim import Tracker, simulate

    tracker = Tracker(kernel, kernel.threads, False)
    try:
        simulate(kernel, inputs, tracker=tracker, timeout=opts.timeout)
    except (MemoryError, LaunchError):
        return  # (the simulator cannot decide: the GPU launch goes ahead, and its timeout still stops a hang)
    hang = tracker.finish().hang
    if hang is not None:
        raise LaunchError(f"not launched on the GPU: the simulator ran the kernel first and it {hang.message}",
                          hang.span,
                          hint="fix the synchronisation; --launch gpu launches it anyway, and the launch worker's "
                               "--timeout stops it")


def _run_backend(kernel, native, emulated, inputs, opts: Options, bench_bytes=None, trace=None) -> LaunchResult:
    if opts.launch in ("auto", "gpu"):
        from .runtime.worker import get_worker

        worker = get_worker()
        st = worker.probe()
        if st.available:
            if opts.launch == "auto":
                _refuse_a_hang(kernel, inputs, opts)
            grid = None
            if opts.bench:  # --bench times the tile replicated over a grid of CTAs (codegen's grid form)
                from .codegen.cuda import generate

                grid = (generate(kernel, "native", arch=opts.arch, grid=True),
                        generate(kernel, "emulated", arch=opts.arch, strict=opts.strict, grid=True) if emulated
                        else None)
            run = worker.launch(native, emulated, inputs, bench=opts.bench, timeout=opts.timeout, bench_sources=grid,
                                bench_bytes=bench_bytes)
            return LaunchResult(run.backend, run.mode, run.arch, "a CUDA device was found",
                                dict(inputs), run.outputs, device=run.device, timing=run.timing,
                                compile=getattr(run, "compile", None))
        if opts.launch == "gpu":
            from .runtime.device import INSTALL_HINT, NO_CUPY

            install = f"install CuPy ({INSTALL_HINT}), or " if st.reason.startswith(NO_CUPY) else ""
            raise LaunchError(f"--launch gpu: no GPU available ({st.reason})",
                              hint=f"{install}use --launch sim for the CPU simulator, or --launch auto")
        reason = f"no CUDA device — {st.reason} — so the CPU simulator ran"
    else:
        reason = "--launch sim"
    from .sim import Tracker, simulate

    try:
        tracker = Tracker(kernel, kernel.threads, opts.strict)  # the simulator reports every access to it
        outputs = simulate(kernel, inputs, strict=opts.strict, tracker=tracker, timeout=opts.timeout, progress=True,
                           trace=trace)
    except MemoryError:  # (located at the kernel by _launch)
        raise LaunchError("the simulator ran out of memory",
                          hint="simulate smaller global buffers (the simulator keeps them, a copy, and its "
                               "happens-before shadow in host memory), or use --launch off") from None
    hb = tracker.finish()
    if opts.bench:
        reason += "; --bench ignored: it times GPU launches only"
    mode = "CPU simulator, TMEM modelled in NumPy" if kernel.tmem_cols > 0 else "CPU simulator"
    return LaunchResult("sim", mode, None, reason, dict(inputs), outputs,
                        hazards=[(h.message, h.span) for h in hb.hazards], hb=hb)


def _bank_trace(kernel: ir.Kernel):
    from .sim.banks import BankTrace

    return BankTrace(kernel)


def _bank_report(kernel, tp, trace, lres: LaunchResult | None, opts: Options, namespace):
    """The bank report of ``--cost``: from the launch's own simulator run, else from a simulator run for the
    address trace alone (a GPU launch or ``--launch off``); and a note when the trace could not be taken."""
    if lres is None or lres.backend != "sim":
        from .sim import simulate

        inputs = lres.inputs if lres is not None else make_inputs(tp, opts.seed, namespace)
        try:
            simulate(kernel, inputs, timeout=opts.timeout, trace=trace)
        except (TileMagicError, MemoryError) as e:
            msg = e.message if isinstance(e, TileMagicError) else "out of memory"
            return None, f"--cost: no bank-conflict prediction: the simulator's address trace failed ({msg})"
    return trace.report(), None


def _register_tile_warnings(kernel: ir.Kernel, native, arch: str) -> list[tuple[str, Span | None]]:
    """A located warning per register tile of more than 255 32-bit registers per thread, with what ptxas makes of
    the kernel (registers, stack, spills: :func:`tilemagic.runtime.costs.sass_for`)."""
    from .arch.limits import limits_for

    lim = limits_for(arch).regs_per_thread
    big = [(b, -(-b.nbytes // 4)) for b in kernel.locals if -(-b.nbytes // 4) > lim]
    if not big:
        return []
    from .runtime.costs import sass_for

    res = sass_for(native.text, arch, native.lines).resources
    if res is None:
        cost = "its spill cost is unknown (nvcc is not on PATH, or ptxas failed: see result.sass().log)"
    else:
        cost = (f"ptxas builds the kernel with {res.registers} registers, {res.stack} bytes of stack, "
                f"{res.spill_stores} bytes of spill stores and {res.spill_loads} bytes of spill loads per thread "
                f"(local memory)")
    return [(f"register tile '{b.name}' needs {words} 32-bit registers per thread, more than a thread's {lim}: "
             f"{cost}", b.span) for b, words in big]


def run_kernel(kernel: ir.Kernel, inputs: dict[str, np.ndarray], *, span: Span | None = None,
               **options: object) -> LaunchResult:
    """Generate the CUDA of a lowered (or hand-built) kernel and run it as a cell would.

    ``inputs`` holds every global buffer's initial contents; ``options`` are the ``%%tilecopy``
    options as keywords (``launch="sim"`` by default; ``arch``, ``strict``, ``bench``, ``timeout``
    are used); ``span`` locates a launch error the GPU cannot place (a CUDA error, a timeout, a
    dead worker), by default the kernel's first statement with a span.

    Raises
    ------
    LaunchError
        Located at the failing statement (simulator, emulation traps) or at ``span``.
    """
    from .codegen.cuda import generate, uses_tcgen05

    opts = resolve(overrides={"launch": "sim", **options})
    native = generate(kernel, "native", arch=opts.arch)
    emulated = generate(kernel, "emulated", arch=opts.arch, strict=opts.strict) if uses_tcgen05(kernel) else None
    return _launch(kernel, native, emulated, inputs, opts, span)


def _header_line(source: str) -> tuple[str, Span] | None:
    """(the words after ``%%tilecopy``, the line's span) of a first line ``%%tilecopy ...``, or None."""
    for no, line in enumerate(split_lines(source), 1):
        if not line.strip():
            continue
        if not line.lstrip().startswith("%%tilecopy"):
            return None
        col = len(line) - len(line.lstrip()) + 1
        return line.lstrip()[len("%%tilecopy"):], Span(no, col, no, len(line) + 1)
    return None


def cell_options(source: str, overrides: Mapping[str, object] | None = None,
                 defaults: Mapping[str, object] | None = None) -> Options:
    """The options of a cell: ``overrides``, then its ``%%tilecopy`` line, then ``defaults``.

    The one way every entry point reads options (the magic with its ``%config`` traits as
    ``defaults``, :func:`tilecopy` with its keyword arguments as ``overrides``, the command line
    with its flags as ``overrides``); see :func:`tilemagic.options.resolve`.

    Raises
    ------
    TileSyntaxError
        A bad option line, located on that line with a caret.
    ValueError, TypeError
        A bad or unknown value in ``overrides``/``defaults`` (an OptionError names the option).
    """
    header = _header_line(source)
    try:
        parsed = parse_options(header[0]) if header is not None else None
    except OptionError as e:
        assert header is not None
        span, hint = _option_error_place(header[0], header[1], str(e))
        raise TileSyntaxError(f"bad %%tilecopy option line: {e}", span, source=source,
                              hint=hint + "options: " + usage()) from None
    return resolve(parsed, overrides, defaults)


def _option_error_place(words: str, line: Span, message: str) -> tuple[Span, str]:
    """Where on the option line ``message`` points (the flag and its value, an unknown word, an open
    quote; else the whole line), and a "did you mean" for a misspelt flag."""
    start = line.col + len("%%tilecopy")  # column of words[0]
    bad = re.search(r"unrecognized arguments: (\S+)", message)
    flag = re.search(r"(?<![\w-])--[a-z][\w-]*", message)
    hint = ""
    if bad:
        at = re.search(rf"(?<!\S){re.escape(bad.group(1))}(?!\S)", words)
        close = get_close_matches(bad.group(1), [f"--{o}" for o in option_flags()], n=1)
        hint = f"did you mean {close[0]}? " if close else ""
    elif flag:
        at = re.search(rf"(?<!\S){re.escape(flag.group(0))}(=\S*|\s+(?!-)\S+)?", words)
    else:
        at = re.search(r"[\"'].*", words) if "quotation" in message else None
    if at is None:
        return line, hint
    return Span(line.line, start + at.start(), line.line, start + at.end()), hint


def tilecopy(
    source: str,
    *,
    options: Options | None = None,
    namespace: dict | None = None,
    emit_warnings: bool = True,
    filename: str = "tilecopy",
    bench_bytes: int | None = None,
    **overrides: object,
) -> TileCopyResult:
    """Run a ``%%tilecopy`` description through the whole pipeline.

    Parameters
    ----------
    source : str
        The description (docs/language.md).  A first line ``%%tilecopy [NAME] [--launch ...] ...``
        gives options, as in a notebook cell; keyword arguments given here win over it.
    options : Options, optional
        Options already resolved (:func:`cell_options`; the magic's): the ``%%tilecopy`` line is
        then not read again; keyword arguments still win.
    namespace : dict, optional
        Where ``= NAME`` initialisers are looked up (the notebook's user namespace); ``out``
        stores the result there.
    emit_warnings : bool, default True
        Issue the lowering's and the simulator's warnings (UserWarning, located on their line).
    filename : str, default "tilecopy"
        The name warnings and errors give the description (the CLI passes the ``.tile`` file's path:
        ``f.tile:7: UserWarning: hazard: ...``, ``f.tile:4:11: TileTypeError: ...``).
    bench_bytes : int, optional
        With ``bench``: bytes the grid's CTAs read per launch (default 1 GiB, capped by the
        free GPU memory; see :func:`tilemagic.runtime.launch.run_on_gpu`).
    **overrides
        The options of the ``%%tilecopy`` line as keywords (None: not given), from
        :class:`tilemagic.options.Options`:

    <options>

    Returns
    -------
    TileCopyResult
        ``result.options`` is the resolved :class:`~tilemagic.options.Options`.

    Raises
    ------
    CheckFailed
        A ``check`` failed (unless ``allow_fail``): located at the first failing check, the
        result as ``.result`` (stored in ``out`` first).
    TileMagicError
        A located description, option line, dispatch, lowering or launch error.
    ValueError
        A keyword option with an invalid value (an OptionError naming it).
    TypeError
        ``source`` is not a str, or a keyword that is no option.
    """
    from .codegen.cuda import generate, uses_tcgen05
    from .ir.printer import print_ir
    from .lang import parse
    from .lower.hazards import check_hazards
    from .lower.dispatch import TargetSpec
    from .lower.program import check, lower

    if not isinstance(source, str):
        raise TypeError(f"source must be the cell's text (str), not {type(source).__name__}")
    opts = cell_options(source, overrides) if options is None else resolve(None, overrides, vars(options))
    header = _header_line(source)
    arch, strict = opts.arch, opts.strict
    try:
        prog = parse(source)
        tp = check(prog, opts.name, name_span=header[1] if header else None, arch=arch)
        kernel, records, warns = lower(tp, TargetSpec("cuda", arch))
        kernel = intern_kernel(kernel)
        _check_target(kernel, arch, tp.kernel_span)
        ir_text, ir_lines = print_ir(kernel, arch=arch)
        native = generate(kernel, "native", arch=arch)
        emulated = generate(kernel, "emulated", arch=arch, strict=strict) if uses_tcgen05(kernel) else None
        warns = warns + _register_tile_warnings(kernel, native, arch)
        lres = None
        trace = _bank_trace(kernel) if opts.cost else None
        if opts.launch != "off":  # inputs only when something runs on them
            inputs = make_inputs(tp, opts.seed, namespace)
            lres = _launch(kernel, native, emulated, inputs, opts, tp.kernel_span, bench_bytes, trace)
            lres.checks = run_checks(tp, lres.outputs, lres.hb)
            warns = warns + [(f"check {c.text} compares elements the kernel never wrote: {c.note.removeprefix('but ')}"
                              f" (give the buffer an initialiser, e.g. `= zeros`, if that is meant)", item.span)
                             for c, item in zip(lres.checks, tp.checks) if c.unwritten and c.passed]
        # the simulator's happens-before tracker is authoritative where it ran; elsewhere (GPU, --launch off)
        # the static program-order pass checks the tcgen05 waits
        hazards = lres.hazards if lres is not None and lres.hb is not None else check_hazards(kernel)
        warns = warns + hazards
        if strict:
            _strict_hazards(hazards, lres)
        banks = costs = None
        if opts.cost:
            banks, note = _bank_report(kernel, tp, trace, lres, opts, namespace)
            if note:
                warns.append((note, tp.kernel_span))
            from .runtime.costs import candidate_costs

            costs = candidate_costs(tp, records, arch)
    except TileMagicError as e:
        if filename != "tilecopy" and not e.filename:
            e.filename = filename
        raise e.with_source(source)
    if emit_warnings:  # after everything else, so a later error is not preceded by them
        for text, span in warns:
            warnings.warn_explicit(text, UserWarning, filename, span.line if span else 0)
    result = TileCopyResult(
        name=opts.name or tp.name, source=source, program=prog, kernel=kernel, ir=ir_text, cuda=native.text,
        cuda_emulated=emulated.text if emulated else None, dispatch=records, launch=lres,
        warnings=[w for w, _ in warns], options=opts,
        ir_lines=ir_lines, cuda_lines=native.lines, typed=tp,
        cuda_emulated_lines=list(emulated.lines) if emulated else [],
        costs=costs, banks=banks,
    )
    if opts.cost:
        from .widgets.costs import cost_sections

        result.sections.extend(ReportSection(t, text, html) for t, text, html in cost_sections(result))
    try:  # an export that fails keeps the launched result: its located error becomes a section and a warning
        if opts.export == "tvmscript":
            result.export_text = result.tvmscript()
            result.sections.append(ReportSection("TVMScript (TVM TIRx equivalent)", result.export_text))
        if opts.compare == "tvm":
            result.tvm_comparison = cmp = result.compare_tvm()
            result.sections.append(ReportSection("TVM comparison", cmp.text(), cmp.html() if cmp.available else None))
    except TileMagicError as e:
        e.with_source(source)
        what = "--export tvmscript" if opts.export == "tvmscript" and result.export_text is None else "--compare tvm"
        result.sections.append(ReportSection(f"{what} failed", e.render()))
        result.warnings.append(f"{what} failed: {e.message}")
        if emit_warnings:
            warnings.warn_explicit(f"{what} failed (the cell's result is kept): {e.render()}", UserWarning,
                                   filename, e.line or 0)
    if opts.out and namespace is not None:
        namespace[opts.out] = result
    if lres is not None and not lres.passed and not opts.allow_fail:
        err = check_failed(result, tp)
        if filename != "tilecopy":
            err.filename = filename
        raise err
    return result


def check_failed(result: TileCopyResult, tp: TypedProgram) -> CheckFailed:
    """The :class:`~tilemagic.errors.CheckFailed` of a result whose checks did not all pass.

    Located (with the cell's source) at the first failing ``check`` line; the message names every
    failing check with its line and how many elements differ or are uninitialised.
    """
    assert result.launch is not None
    failed = [(c, item) for c, item in zip(result.launch.checks, tp.checks) if not c.passed]
    parts = [f"{c.text} on line {c.line} ({c.detail})" for c, _ in failed]
    shown = "; ".join(parts[:MAX_LISTED]) + (f"; … {len(parts) - MAX_LISTED:,} more" if len(parts) > MAX_LISTED else "")
    what = f"check {parts[0]}" if len(parts) == 1 else f"{len(parts)} checks: {shown}"
    return CheckFailed(f"FAIL: {what}", failed[0][1].span, result=result, source=result.source,
                       hint="the report shows the data; --allow-fail (or `%config TileMagics.allow_fail = True`) "
                            "shows the report without failing the cell")


def compare_source_with_tvm(source: str, name: str | None = None, *, arch: str = "sm_100a", cuda: bool = True,
                            tmem_base: str = "shared", explain: bool = True):
    """Lower a description (``launch="off"``) and compare it with TVM's lowering, op by op.

    A description that tilemagic rejects after checking (dispatch, lowering) is still exported
    and given to TVM; our side of the comparison then shows the error.  See
    :func:`tilemagic.export.tvm_compare.compare_with_tvm` for ``cuda``, ``tmem_base``, ``explain``.

    Returns
    -------
    TvmComparison

    Raises
    ------
    TileMagicError
        A syntax or type error of the description (located): there is nothing to export.
    """
    from .export.tvm_compare import compare_with_tvm
    from .lang import parse
    from .lower.program import check

    try:
        result = tilecopy(source, name=name, launch="off", arch=arch, emit_warnings=False)
    except TileMagicError as e:  # parsed and checked again only here: a syntax or type error raises again
        prog = parse(source)
        tp = check(prog, name)
        return compare_with_tvm(program=prog, typed=tp, error=e, arch=arch, cuda=cuda, tmem_base=tmem_base,
                                explain=explain)
    return compare_with_tvm(result, cuda=cuda, tmem_base=tmem_base, explain=explain)


if tilecopy.__doc__:  # (None under python -OO)
    tilecopy.__doc__ = tilecopy.__doc__.replace("    <options>", numpydoc())
