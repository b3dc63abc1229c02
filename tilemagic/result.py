"""Result objects of a ``%%tilecopy`` run: launch record, the cell result (dispatch records re-exported).

All ``__repr__``/text renderings are deterministic: no addresses, temp paths,
timings (unless ``--bench``) or random ids, so notebooks stay stable under nbval.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .lower.dispatch import Candidate, DispatchRecord, EmitSummary  # noqa: F401  (the records live in lower/)
from .options import Options


if TYPE_CHECKING:
    from .export.tvm_compare import TvmComparison
    from .runtime.costs import CostReport, SassResult
    from .sim.banks import BankReport
    from .ir.nodes import Kernel
    from .lang.ast import Program
    from .lower.program import TypedProgram
    from .sim.hb import HBReport, SyncEvent


# ----------------------------------------------------------------------------- launch
@dataclass(frozen=True)
class CheckResult:
    """``check A == B`` after the launch: bitwise comparison of two global regions.

    Attributes
    ----------
    text : str
        ``A == B`` as written.
    line : int
        Description line of the check.
    passed : bool
    mismatches, total : int
        Elements whose bits differ, and elements compared.
    first : tuple of (tuple of int, numpy scalar, numpy scalar)
        The first mismatching elements in row-major order, at most
        :data:`tilemagic.widgets.format.MAX_LISTED` (20) however many differ: ``(index in the
        region without unit dims, got, expected)``; the reports list them with the count
        (``first 20 of 1,048,576 mismatches``).
    """

    text: str
    line: int
    passed: bool
    mismatches: int
    total: int
    first: tuple = ()
    #: Elements of either side the kernel stored uninitialised data to (simulator runs; the check
    #: then FAILs whatever the bits say), and the first of them as ``"B[3, 4]"``.
    uninitialised: int = 0
    first_uninitialised: str | None = None
    #: Elements of either side (a buffer with the default initialiser, zeros) that no thread wrote (simulator
    #: runs): the verdict stands, but those elements hold the host's zeros, not a result of the kernel.
    unwritten: int = 0
    first_unwritten: str | None = None
    #: Why the check was not evaluated (the simulated kernel would hang before its end: the outputs are not the
    #: kernel's result); None when it was.  Such a check is neither a PASS nor a FAIL (``passed`` is False).
    not_evaluated: str | None = None

    @property
    def status(self) -> str:
        if self.not_evaluated:
            return "NOT EVALUATED"
        return "PASS" if self.passed else "FAIL"

    @property
    def detail(self) -> str:
        """Why a check failed, e.g. ``"12 of 24 elements differ"`` ("" when it passed)."""
        if self.not_evaluated:
            return self.not_evaluated
        if self.passed:
            return ""
        if self.uninitialised:
            return (f"{self.uninitialised} of {self.total} elements uninitialised, first {self.first_uninitialised}; "
                    f"{self.mismatches} differ")
        return f"{self.mismatches} of {self.total} elements differ"

    @property
    def note(self) -> str:
        """What else the reader should know (``"but 64 of 128 elements were never written ..."``; "" if nothing)."""
        if not self.unwritten:
            return ""
        return (f"{'but ' if self.passed else ''}{self.unwritten} of {self.total} elements were never written by the "
                f"kernel, first {self.first_unwritten}: they hold the host's initial zeros")

    def __str__(self) -> str:
        said = "; ".join(x for x in (self.detail, self.note) if x)
        return f"check {self.text}: {self.status}" + (f" ({said})" if said else "")


@dataclass
class LaunchResult:
    """What ran, where, and what came back.

    Attributes
    ----------
    backend : {"sim", "cupy", "cupy-emulated", "off"}
    mode : str
        ``"CPU simulator"``, ``"native sm_100a"``, ``"emulated TMEM on sm_90"``, ...
    arch : str or None
        The ``-arch`` the kernel was compiled for (None for the simulator).
    reason : str
        Why this backend was used (e.g. "no CUDA device: CuPy not installed").
    inputs, outputs : dict of str -> numpy.ndarray
        Global buffers before and after the kernel (host copies, logical shapes).
    checks : list of CheckResult
    device : str or None
        GPU name and compute capability when a GPU ran the kernel.
    timing : dict or None
        Only with ``--bench`` (see :func:`tilemagic.runtime.launch.run_on_gpu`).
    compile : dict or None
        GPU launches: how the kernel was obtained (``cache``: ``"memory"`` or
        ``"compiled"``; ``ms``; ``note``).  Not shown in the reports (it varies between runs).
    hazards : list of (str, Span or None)
        Simulator runs: the hazards its happens-before tracker found (races on global, shared and
        TMEM, in-flight tcgen05 registers, uninitialised reads); the result shows them as
        ``hazard:`` warnings.
    hb : tilemagic.sim.hb.HBReport or None
        Simulator runs: the whole happens-before report (hazards with both locations, "incomplete"
        reasons, the timeline of synchronising events, per-buffer poison).  None on a GPU.
    """

    backend: str
    mode: str
    arch: str | None = None
    reason: str = ""
    inputs: dict[str, np.ndarray] = field(default_factory=dict)
    outputs: dict[str, np.ndarray] = field(default_factory=dict)
    checks: list[CheckResult] = field(default_factory=list)
    device: str | None = None
    timing: dict | None = None
    compile: dict | None = None
    hazards: list = field(default_factory=list)
    hb: HBReport | None = None

    @property
    def passed(self) -> bool:
        """Every check passed — and a simulated run did not stop because the kernel would hang (its checks are then
        not evaluated: no pass, even without a check)."""
        return all(c.passed for c in self.checks) and not (self.hb is not None and self.hb.hang is not None)

    @property
    def timeline(self) -> list[SyncEvent]:
        """The synchronising events of a simulator run in program order (kind, span, threads); [] elsewhere."""
        return self.hb.timeline if self.hb is not None else []

    def hb_summary(self) -> str | None:
        """The one-line happens-before summary: ``happens-before: clean (...)`` / ``K hazards`` / ``incomplete: ...`` /
        ``would hang: ...``
        of a simulator run; after a GPU run, that the simulator's check did not run (None when not launched)."""
        if self.hb is not None:
            return self.hb.summary()
        if self.backend in ("cupy", "cupy-emulated"):
            return ("happens-before: not checked (it runs in the simulator; on the GPU only the tcgen05 waits are "
                    "checked, in program order)")
        return None

    def summary(self) -> str:
        s = f"backend={self.backend} ({self.mode})"
        if self.arch:
            s += f" arch={self.arch}"
        if self.device:
            s += f" device={self.device}"
        return s


# ----------------------------------------------------------------------------- report sections
@dataclass(frozen=True)
class ReportSection:
    """An extra titled section of the text and HTML reports (``--export``, ``--compare``).

    ``html`` is a ready HTML fragment; without it the HTML view shows ``text`` preformatted.
    """

    title: str
    text: str
    html: str | None = None


# ----------------------------------------------------------------------------- the cell result
@dataclass
class TileCopyResult:
    """Everything one ``%%tilecopy`` cell (or :func:`tilemagic.tilecopy`) produced.

    Attributes
    ----------
    name : str
        Kernel name.
    source : str
        The description text.
    program : tilemagic.lang.ast.Program
    kernel : tilemagic.ir.nodes.Kernel
        The lowered IR (single source of truth for ``ir``, ``cuda`` and the simulation).
    ir : str
        TIR-like printed IR.
    cuda : str
        CUDA C++ with inline PTX (native tcgen05; what runs on sm_100a).
    cuda_emulated : str or None
        The same kernel with TMEM emulated in global memory (what runs on pre-Blackwell GPUs);
        None when the kernel uses no TMEM.
    dispatch : list of DispatchRecord
        One per copy op, in source order.
    launch : LaunchResult or None
        None with ``--launch off``.
    warnings : list of str
        e.g. the copy/fallback UserWarning text.
    options : tilemagic.options.Options
        The resolved options (launch, arch, view, strict, seed, ...).
    ir_lines, cuda_lines, cuda_emulated_lines : list of int or None
        For each line of ``ir`` / ``cuda`` / ``cuda_emulated``, the description line it came
        from (None: scaffolding).
    typed : tilemagic.lower.program.TypedProgram or None
        The checked program (buffers, CTA size, TMEM plan, ops) the exports are written from.
    sections : list of ReportSection
        Extra report sections shown after the standard ones (``--export``, ``--compare``).
    export_text : str or None
        The TVMScript export, with ``--export tvmscript``.
    tvm_comparison : TvmComparison or None
        With ``--compare tvm`` (see :mod:`tilemagic.export.tvm_compare`).
    costs : CostReport or None
        With ``--cost``: every accepting variant of every op, compiled (:mod:`tilemagic.runtime.costs`).
    banks : BankReport or None
        With ``--cost``: the shared-memory wavefronts and bank conflicts of every instruction
        (:mod:`tilemagic.sim.banks`).
    """

    name: str
    source: str
    program: Program
    kernel: Kernel
    ir: str
    cuda: str
    cuda_emulated: str | None
    dispatch: list[DispatchRecord]
    launch: LaunchResult | None
    warnings: list[str]
    options: Options
    ir_lines: list[int | None] = field(default_factory=list)
    cuda_lines: list[int | None] = field(default_factory=list)
    cuda_emulated_lines: list[int | None] = field(default_factory=list)
    typed: TypedProgram | None = None
    sections: list[ReportSection] = field(default_factory=list)
    export_text: str | None = None
    tvm_comparison: TvmComparison | None = None
    costs: CostReport | None = None
    banks: BankReport | None = None
    #: Set by the magic when it displayed the static fallback just before this result's widget view.
    _fallback_shown: bool = field(default=False, repr=False, compare=False)

    # -- exports
    def tvmscript(self, tmem_base: str = "shared") -> str:
        """The equivalent TVM TIRx program as TVMScript text (see :mod:`tilemagic.export.tvmscript`).

        Parameters
        ----------
        tmem_base : {"shared", "const"}
            TMEM addresses from ``tmem_addr[0]`` as TVM's tests write them, or column
            constants (TVM's ``TMEMPool`` convention, which ``tvm.compile`` of 0.27 accepts).
        """
        from .export.tvmscript import export_tvmscript

        return export_tvmscript(self.program, self.typed, self.dispatch, tmem_base=tmem_base, kernel=self.kernel).text

    def compare_tvm(self, cuda: bool = True):
        """TVM's lowering of :meth:`tvmscript` beside this one, op by op (needs apache-tvm; a
        :class:`~tilemagic.export.tvm_compare.TvmComparison` with a message when it is missing)."""
        from .export.tvm_compare import compare_with_tvm

        return compare_with_tvm(self, cuda=cuda)

    # -- pictures
    def heatmap(self, kind: str = "tmem", color_by: str = "warp", instr=None, buffer=None, check=None):
        """A picture of where the data lives (matplotlib Figure, Agg; displays as PNG).

        Parameters
        ----------
        kind : {"tmem", "instr", "fragment", "data", "tma", "swizzle", "timeline", "cluster", "tcgen05_cp"}
            ``tmem``: TMEM occupancy, 128 lanes × allocated 32-bit columns (without TMEM:
            the shared-memory tile by writing thread); ``fragment``: a register fragment,
            thread × register -> TMEM (lane, column); ``data``: the two sides of a
            ``check`` after the launch, mismatches in red; ``tma``: each TMA issue's box over
            the global tensor; ``swizzle``: a swizzled async destination's 16-byte chunks by
            bank group; ``timeline``: the simulator's asynchronous events per warp (per CTA and warp in a
            cluster); ``cluster``: a cluster kernel's CTAs, which CTA wrote which bytes of each one's shared
            memory; ``tcgen05_cp``: a ``copy_async`` smem -> tmem op's descriptors drawn (the shared tile's
            16-byte chunks by instruction, where each lands in TMEM, replicas hatched), or a rejected
            layout.  Default "tmem".
        color_by : {"warp", "thread", "reg", "instr"}, default "warp"
            ``tmem`` only: what colours a cell.
        instr : int or "each", optional
            ``tmem``: one instruction (index in program order) or one panel per
            instruction; ``fragment``: only that instruction.
        buffer : str, optional
            ``fragment``: the register buffer (default: the first one tcgen05 moves).
        check : int or str, optional
            ``data``: which check (default: the first failing one, else the first).

        Returns
        -------
        matplotlib.figure.Figure
            Fixed size (900 × 480 px), never registered with pyplot.

        Raises
        ------
        ValueError
            Unknown ``kind`` / ``color_by``, or the picture does not apply (e.g. ``data``
            without a launch).
        """
        from .widgets.figures import picture_figure

        return picture_figure(self, kind, color_by=color_by, instr=instr, buffer=buffer, check=check)

    def ptx(self):
        """PTX of the native CUDA for ``options.arch`` (nvcc or NVRTC; cached), with a line map.

        Returns
        -------
        tilemagic.runtime.ptx.PtxResult
            ``ok``, ``text``, ``lines`` (description line per PTX line), ``tool``, ``log``.
        """
        from .runtime.ptx import ptx_for

        return ptx_for(self.cuda or "", self.options.arch, self.cuda_lines)

    def sass(self) -> SassResult:
        """SASS of the native CUDA for ``options.arch`` (nvcc + nvdisasm; cached), with a line map.

        Returns
        -------
        tilemagic.runtime.costs.SassResult
            ``ok``, ``text``, ``lines`` (description line per SASS line), ``resources``, ``tool``, ``log``.
        """
        from .runtime.costs import sass_for

        return sass_for(self.cuda or "", self.options.arch, self.cuda_lines)

    # -- display
    def text(self) -> str:
        """Deterministic plain-text report (what ``text/plain`` shows)."""
        from .widgets.text import render_text

        return render_text(self)

    def html(self) -> str:
        """Static HTML report: dispatch why-tables, IR ∥ CUDA, heatmap PNG, launch."""
        from .widgets.html import render_html

        return render_html(self)

    def widget(self):
        """ipywidgets stage view (:class:`tilemagic.widgets.view.WidgetView`); content never lives
        in an Output widget, and its display carries this HTML and text report as fallbacks."""
        from .widgets.view import WidgetView

        return WidgetView(self)

    def _repr_mimebundle_(self, include=None, exclude=None):
        """The display of ``options.view``: ``text`` (text/plain), ``html`` (+ text/html) or
        ``widget`` (the widget view's bundle, with the HTML and the text as fallbacks)."""
        view = self.options.view
        if view == "widget":
            w = self.widget()
            w.fallback_shown, self._fallback_shown = self._fallback_shown, False  # (once: a later display is whole)
            return w._repr_mimebundle_(include=include, exclude=exclude)
        data = {"text/plain": self.text()}
        if view == "html":
            data["text/html"] = self.html()
        return data

    def __repr__(self) -> str:
        return self.text()
