"""``--compare tvm``: run TVM TIRx on the exported program and put its lowering beside tilemagic's.

For a description this module

1. exports the TVM TIRx equivalent (:mod:`.tvmscript`) and parses it with
   ``tvm.script.from_source``;
2. lowers it with ``tvm.tirx.transform.LowerTIRx()`` under
   ``Target({"kind": "cuda", "arch": <arch>})`` while recording, for every copy op, which
   TVM dispatch variant won and the ``PrimFunc`` it returned (by wrapping the ``impl`` of
   each registered dispatch case for the duration of the call, then restoring it);
3. optionally compiles the module to CUDA with ``tvm.compile(..., tir_pipeline="tirx")``.
   This wheel stops in ``MakePackedAPI`` when a TMEM address is read from shared memory
   (``tmem_addr[0]``), so a TMEM kernel is compiled from a second export with constant
   TMEM addresses (TVM's ``TMEMPool`` convention), and the note says so;
4. reduces both sides to normalised instruction lines (:mod:`.instructions`) and marks
   where they differ, op by op: the winning variant family (TVM 0.27 implements
   tilemagic's ``gmem_smem`` and ``reg`` as one variant, ``vec_auto``), the instruction
   chains, TMEM row/column immediates, register order and vector widths (``cp.async``'s bytes per issue
   included), and for a global <-> shared ``copy_async`` the TMA plan (:mod:`.tvm_tma`).

These differences are documented bugs of ``apache-tvm 0.27.0.post1`` and read ``known TVM bug``, not ``differs``:

* :data:`LDGSTS_MBAR_BUG`: a global -> shared ``copy_async`` with ``mbar=`` and no ``dispatch=`` goes to TVM's
  ``ldgsts`` (priority 20), which validates no config key and drops the barrier, although a copy completed on an
  mbarrier must be a TMA (``cp.async.bulk.tensor`` with ``.mbarrier::complete_tx::bytes``, PTX ISA 9.0
  §9.7.9.25.5.2; a ``cp.async`` completes through its commit groups, §9.7.9.25.3.2-3).  tilemagic's
  ``ldgsts`` declines such a copy; the comparison then lowers the op once more in TVM with ``dispatch=`` set to
  tilemagic's variant (what TVM's own TMA code always passes) and requires those instructions to be tilemagic's;
* :data:`~.tvm_tma.SWIZZLE_BUG`: TVM plans a shared swizzle that is not the hardware's permutation;
* :data:`DSMEM_MAPA_BUG`: TVM's ``dsmem`` maps the destination and the mbarrier with the generic ``mapa.u64`` and
  passes the 64-bit result truncated to 32 bits as the ``shared::cluster`` operands; tilemagic uses
  ``mapa.shared::cluster.u32``.  The bulk copies themselves (chain, bytes, count) must agree.
* :data:`~.tvm_tma.MULTICAST_BUG`: TVM emits a one-bit static ``cta_mask`` as the unicast form into the issuing
  CTA; tilemagic emits ``.multicast::cluster`` with the mask (the plans agree otherwise).

``apache-tvm`` is an optional, test-time dependency: it is imported only inside
:func:`run_tvm`, and :func:`compare_with_tvm` returns a comparison carrying a message
(no traceback) when it is missing.
"""

from __future__ import annotations

import contextlib
import difflib
import re
import warnings
from dataclasses import dataclass, field
from html import escape

from ..ir import nodes as ir
from ..lower.program import later_rank_branches
from .instructions import (
    MAPA_CLUSTER,
    Instr,
    instr_bytes,
    ours_instructions,
    summary_lines,
    tvm_instructions,
)
from .tvm_cp import CpPlanComparison, compare_cp_plan, is_cp_candidate
from .tvm_tma import MULTICAST_BUG, SWIZZLE_BUG, TMA_VARIANTS, TmaPlanComparison, compare_tma_plan, is_tma_candidate
from .tvmscript import TVM_VARIANT_NAMES, TvmScriptExport, export_tvmscript

__all__ = [
    "DSMEM_MAPA_BUG",
    "LDGSTS_MBAR_BUG",
    "TVM_MISSING",
    "OpComparison",
    "TvmComparison",
    "TvmOp",
    "TvmRun",
    "compare_with_tvm",
    "condense_tvm_error",
    "run_tvm",
    "variant_family",
]

TVM_MISSING = ("apache-tvm is not installed, so there is nothing to compare with: "
               "pip install 'apache-tvm==0.27.0.post1' (tilemagic's `tvm` extra)")


LDGSTS_MBAR_BUG = ("known TVM 0.27 bug: without dispatch=, TVM's ldgsts (priority 20) takes this global -> shared "
                   "copy_async and ignores mbar= (ldgsts validates no config key): the copy completes through "
                   "cp.async groups and never reaches the mbarrier, so a wait on it with expect_tx would hang; "
                   "tilemagic's ldgsts declines an mbar= copy. Compared instead: TVM with dispatch= tilemagic's "
                   "variant (what TVM's own TMA code passes)")


DSMEM_MAPA_BUG = ("known TVM 0.27 bug: TVM's dsmem maps the remote destination and mbarrier with the generic "
                  "mapa.u64 and truncates the 64-bit address to the 32-bit shared::cluster operand of "
                  "cp.async.bulk (T.Cast(\"uint32\", ...)); tilemagic maps with mapa.shared::cluster.u32, whose "
                  "result is a shared::cluster address by definition (PTX ISA 9.0 §9.7.9.23). Compared: the bulk "
                  "copies (chain, bytes, count), without the mapa lines")


def dsmem_mapa_bug(ours: list[Instr] | None, tvm: list[Instr] | None) -> str | None:
    """:data:`DSMEM_MAPA_BUG` when TVM's instructions map addresses with ``mapa.u64`` where tilemagic's use
    ``mapa.shared::cluster.u32``, else None."""
    if ours is None or tvm is None:
        return None
    if any(i.chain == MAPA_CLUSTER for i in ours) and any(i.chain == "mapa.u64" for i in tvm):
        return DSMEM_MAPA_BUG
    return None


def _without_mapa(instrs: list[Instr] | None) -> list[str]:
    return summary_lines([i for i in instrs or [] if not i.chain.startswith("mapa.")])


def variant_family(variant: str | None) -> str | None:
    """The TVM 0.27 variant that a tilemagic variant corresponds to (``reg``/``gmem_smem`` -> ``vec_auto``)."""
    return None if variant is None else TVM_VARIANT_NAMES.get(variant, variant)


# ----------------------------------------------------------------------------- running TVM
@dataclass
class TvmOp:
    """One dispatch TVM made: op (``copy``/``copy_async``), winning variant, exec scope, the returned TIR."""

    op: str
    variant: str
    scope: str
    script: str


@dataclass
class TvmRun:
    """What TVM did with an exported program.

    Attributes
    ----------
    ops : list of TvmOp
        The successful dispatches, in program order.
    error : str or None
        TVM's error, condensed (a parse error, or the dispatch failure table without tracebacks).
    error_stage : {"parse", "lower", None}
    error_line : int or None
        Description line of the op TVM rejected, when known.
    lowered : str or None
        ``LowerTIRx`` output (TVMScript of the lowered module).
    cuda : str or None
        TVM's CUDA source, when ``tvm.compile`` produced one.
    cuda_note : str
        How the CUDA was obtained, or why there is none.
    warnings : list of str
        Python warnings TVM raised while lowering (the fallback's ``copy/fallback`` UserWarning).
    """

    ops: list[TvmOp] = field(default_factory=list)
    error: str | None = None
    error_stage: str | None = None
    error_line: int | None = None
    lowered: str | None = None
    cuda: str | None = None
    cuda_note: str = ""
    warnings: list[str] = field(default_factory=list)


@contextlib.contextmanager
def _recording(dispatcher, sink: list[TvmOp]):
    """Wrap every registered dispatch impl so that each success is appended to ``sink``; restore on exit."""
    saved = []
    for (op, _target), cases in dispatcher._DISPATCH_TABLE.items():
        name = op.name.rsplit(".", 1)[-1]
        for case in cases:
            saved.append((case, case.impl))

            def wrapped(op_call, sctx, _impl=case.impl, _variant=case.variant, _name=name):
                res = _impl(op_call, sctx)
                sink.append(TvmOp(_name, _variant, str(getattr(sctx, "scope_kind", "")), res.script()))
                return res

            case.impl = wrapped
    try:
        yield
    finally:
        for case, impl in saved:
            case.impl = impl


_ROW_RE = re.compile(r"^\|\s*(\S[^|]*?\(prio=-?\d+\))\s*\|\s*(.*?)\s*\|?$")


def condense_tvm_error(message: str) -> str:
    """TVM's dispatch failure table reduced to its header and one line per variant (no tracebacks).

    Any other error is cut to its first lines.
    """
    lines = message.splitlines()
    head = next((ln.split("RuntimeError: ")[-1].strip() for ln in lines if "dispatch failed" in ln), None)
    rows = [f"  {m.group(1)}: {m.group(2)}" for m in (_ROW_RE.match(ln.strip()) for ln in lines) if m]
    if head is None and not rows:
        return _first_lines(message)
    return "\n".join(([head] if head else []) + rows)


def _first_lines(text: str, n: int = 12) -> str:
    return "\n".join(text.strip().splitlines()[:n])


def _import_tvm():
    import tvm  # optional dependency: imported here only
    from tvm.tirx.operator.tile_primitive import dispatcher

    return tvm, dispatcher


def run_tvm(export: TvmScriptExport, *, arch: str = "sm_100a", cuda_export: TvmScriptExport | None = None,
            cuda: bool = False) -> TvmRun:
    """Parse, lower (recording every dispatch) and optionally compile an exported program with TVM.

    Parameters
    ----------
    export : TvmScriptExport
    arch : str
        CUDA target arch of ``LowerTIRx`` and the codegen.
    cuda : bool
        Also run ``tvm.compile`` to CUDA (about a tenth of a second more).
    cuda_export : TvmScriptExport, optional
        The program to compile when ``export`` does not compile (constant TMEM addresses).

    Raises
    ------
    ImportError
        apache-tvm is not installed.
    """
    tvm, dispatcher = _import_tvm()
    run = TvmRun()
    target = tvm.target.Target({"kind": "cuda", "arch": arch})
    try:
        func = tvm.script.from_source(export.text)
    except Exception as e:  # noqa: BLE001 -- a TVMScript diagnostic, or a layout factory's ValueError
        run.error, run.error_stage = _first_lines(str(e)), "parse"
        m = re.search(r"<str>:(\d+):\d+", str(e))
        if m:
            run.error_line = export.op_lines.get(int(m.group(1)))
        return run
    mod = tvm.IRModule({"main": func})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with _recording(dispatcher, run.ops), target:
                lowered = tvm.tirx.transform.LowerTIRx()(mod)
            run.lowered = lowered.script()
        except Exception as e:  # noqa: BLE001 -- TVM's dispatch failure (RuntimeError) or a pass's check
            run.error, run.error_stage = condense_tvm_error(str(e)), "lower"
            op_lines = [export.op_lines[k] for k in sorted(export.op_lines)]
            if len(run.ops) < len(op_lines):
                run.error_line = op_lines[len(run.ops)]
    run.warnings = [str(w.message) for w in caught]
    if cuda and run.error is None:
        run.cuda, run.cuda_note = _compile(tvm, target, mod, export, cuda_export)
    return run


def _compile(tvm, target, mod, export, cuda_export) -> tuple[str | None, str]:
    def build(m):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with target:
                rt = tvm.compile(m, target=target, tir_pipeline="tirx")
        return "\n".join(im.inspect_source() for im in rt.mod.imports)

    try:
        return build(mod), 'tvm.compile(..., tir_pipeline="tirx") of the exported program'
    except Exception as e:  # noqa: BLE001 -- any failure of TVM's codegen is reported, not raised
        lines = _first_lines(str(e), 40).splitlines()
        why = next((ln.strip() for ln in reversed(lines) if ln.strip()), type(e).__name__)
    if cuda_export is None:
        return None, f"tvm.compile failed: {why}"
    try:
        alt = tvm.IRModule({"main": tvm.script.from_source(cuda_export.text)})
        return build(alt), (f"tvm.compile of the exported program failed ({why}); this CUDA comes from the same "
                            "program with constant TMEM addresses (TMEMPool convention: allocation at address 0)")
    except Exception as e2:  # noqa: BLE001 -- reported in the note
        return None, f"tvm.compile failed: {why}; with constant TMEM addresses: {_first_lines(str(e2), 1)}"


# ----------------------------------------------------------------------------- comparison
@dataclass
class OpComparison:
    """tilemagic and TVM on one copy op.

    Attributes
    ----------
    line : int
        Description line of the op.
    text : str
        The statement.
    ours_variant, tvm_variant : str or None
        The winning variants (None when that side rejected the op or did not get to it).
    ours, tvm : list of Instr or None
        What one thread issues on each side (None when not lowered).
    ours_error, tvm_error : str or None
        Why a side rejected the op.
    scopes : (str, str)
        Memory scopes of the destination and the source.
    tvm_why_not : str or None
        When TVM chose another variant family than tilemagic: what TVM says when that op is
        forced (``dispatch=``) to tilemagic's family.
    tma : TmaPlanComparison or None
        A global <-> shared ``copy_async`` that one side lowers to (or tilemagic declines for) a TMA variant:
        tilemagic's tensor-map plan beside TVM's planner on the same op (:mod:`.tvm_tma`); a documented TVM 0.27
        bug (the unchecked swizzle) reads ``known TVM bug``.
    cp : CpPlanComparison or None
        A shared -> TMEM ``copy_async``: tilemagic's ``smem->tmem`` plan beside TVM's planner on the same op
        (:mod:`.tvm_cp`: shape, multicast, instruction count, LBO/SBO, swizzle); a difference reads ``differs``.
    tvm_forced : list of Instr or None
        When TVM chose another variant family: TVM's instructions with the op forced (``dispatch=``) to
        tilemagic's family, when TVM accepts that.
    known_bug : str or None
        The documented TVM 0.27 bug that explains why TVM chose another variant (:data:`LDGSTS_MBAR_BUG`); the
        verdict is then ``known TVM bug`` when ``tvm_forced`` equals tilemagic's instructions, else ``differs``.
        Or :data:`DSMEM_MAPA_BUG` (both chose ``dsmem``, TVM maps with ``mapa.u64``): ``known TVM bug`` when
        the instructions agree without their ``mapa`` lines, else ``differs``.
    """

    line: int
    text: str
    scopes: tuple[str, str] = ("", "")
    ours_variant: str | None = None
    tvm_variant: str | None = None
    ours: list[Instr] | None = None
    tvm: list[Instr] | None = None
    ours_error: str | None = None
    tvm_error: str | None = None
    tvm_why_not: str | None = None
    tma: TmaPlanComparison | None = None
    cp: CpPlanComparison | None = None
    tvm_forced: list[Instr] | None = None
    known_bug: str | None = None

    @property
    def ours_lines(self) -> list[str]:
        return summary_lines(self.ours or [])

    @property
    def tvm_lines(self) -> list[str]:
        return summary_lines(self.tvm or [])

    @property
    def family_agrees(self) -> bool:
        return self.ours_variant is not None and variant_family(self.ours_variant) == self.tvm_variant

    @property
    def vector_bytes(self) -> tuple[int | None, int | None]:
        """Widest ``ld``/``st`` or ``cp.async`` on each side, in bytes per thread (None: no vector moves)."""
        def widest(instrs):
            w = [b for b in (instr_bytes(i) for i in instrs or []) if b is not None]
            return max(w) if w else None

        return widest(self.ours), widest(self.tvm)

    @property
    def verdict(self) -> str:
        """``same``, ``differs``, ``both reject``, ``tilemagic rejects``, ``TVM rejects``, ``known TVM bug`` or
        ``not compared``."""
        if self.tma is not None:
            if self.tma.note in (SWIZZLE_BUG, MULTICAST_BUG):
                return "known TVM bug"
            if not self.tma.agrees:
                return "differs"
        if self.cp is not None and not self.cp.agrees:
            return "differs"
        if self.known_bug == DSMEM_MAPA_BUG:
            same = self.family_agrees and _without_mapa(self.ours) == _without_mapa(self.tvm)
            return "known TVM bug" if same else "differs"
        if self.known_bug is not None:
            forced = summary_lines(self.tvm_forced) if self.tvm_forced is not None else None
            return "known TVM bug" if forced == self.ours_lines else "differs"
        ours_ok, tvm_ok = self.ours is not None, self.tvm is not None
        if ours_ok and tvm_ok:
            return "same" if self.family_agrees and self.ours_lines == self.tvm_lines else "differs"
        if self.ours_error and self.tvm_error:
            return "both reject"
        if self.ours_error and tvm_ok:
            return "tilemagic rejects"
        if self.tvm_error and ours_ok:
            return "TVM rejects"
        return "not compared"

    def diff(self, forced: bool = False) -> list[tuple[str, str, str]]:
        """``(mark, tilemagic line, TVM line)``: ``=`` equal, ``≠`` differ, ``-`` tilemagic only, ``+`` TVM only.

        ``forced``: against :attr:`tvm_forced` instead of TVM's own choice."""
        a, b = self.ours_lines, summary_lines((self.tvm_forced if forced else self.tvm) or [])
        rows: list[tuple[str, str, str]] = []
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
            if tag == "equal":
                rows += [("=", x, x) for x in a[i1:i2]]
                continue
            left, right = a[i1:i2], b[j1:j2]
            for k in range(max(len(left), len(right))):
                x = left[k] if k < len(left) else ""
                y = right[k] if k < len(right) else ""
                rows.append(("≠" if x and y else ("-" if x else "+"), x, y))
        return rows


@dataclass
class TvmComparison:
    """The result of ``--compare tvm``.

    Attributes
    ----------
    available : bool
        apache-tvm could be imported.
    message : str
        One line: the overall outcome, or why nothing was compared.
    export : TvmScriptExport or None
    ops : list of OpComparison
    tvm : TvmRun or None
    """

    available: bool
    message: str
    export: TvmScriptExport | None = None
    ops: list[OpComparison] = field(default_factory=list)
    tvm: TvmRun | None = None

    @property
    def agrees(self) -> bool:
        """Every op: same lowering, or both reject it; and TVM lowered the whole program when tilemagic did."""
        if not self.available or not all(o.verdict in ("same", "both reject", "known TVM bug") for o in self.ops):
            return False
        return self.tvm is None or self.tvm.error is None or any(o.ours_error for o in self.ops)

    def text(self) -> str:
        """Deterministic plain text: per op the verdict, both variants and the marked instruction lines."""
        out = [self.message]
        for o in self.ops:
            out.append("")
            out.append(f"L{o.line}: {o.text}    [{o.verdict}]")
            out.append(f"  tilemagic: {_who(o.ours_variant, o.ours_error)}    TVM: {_who(o.tvm_variant, o.tvm_error)}")
            if o.ours is not None and o.tvm is not None:
                out += _diff_text(o.diff(), "  ")
            for who, err in (("tilemagic", o.ours_error), ("TVM", o.tvm_error)):
                if err:
                    out.append(f"  {who} rejects:")
                    out += ["    " + ln for ln in err.splitlines()]
            if o.tvm_why_not or o.tvm_forced is not None:
                out.append(f"  TVM with dispatch={variant_family(o.ours_variant)}:")
                out += ["    " + ln for ln in (o.tvm_why_not or "").splitlines()]
                if o.tvm_forced is not None:
                    out += _diff_text(o.diff(forced=True), "    ")
            if o.known_bug:
                out.append(f"  {o.known_bug}")
            if o.tma is not None:
                out += ["  " + ln for ln in o.tma.text()]
            if o.cp is not None:
                out += ["  " + ln for ln in o.cp.text()]
        if self.tvm is not None and self.tvm.cuda_note:
            out += ["", f"TVM CUDA: {self.tvm.cuda_note}"]
        if self.tvm is not None and (self.tvm.lowered or self.tvm.cuda):
            out.append("(TVM's LowerTIRx output and CUDA: result.tvm_comparison.tvm.lowered / .cuda; "
                       "the exported program: .export.text)")
        return "\n".join(out)

    def html(self) -> str:
        """Static HTML: a table per op (tilemagic ∥ TVM, differing rows highlighted), TVM's lowered IR and CUDA
        in ``<details>``."""
        colors = {"=": "", "≠": "background:#fff8c5", "-": "background:#ffebe9", "+": "background:#dafbe1"}
        mono = "font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px"
        # cell padding of its own: outside a notebook's stylesheet (an exported .html) the two columns ran together
        pad = "<style>.tm-tvm-compare td,.tm-tvm-compare th{padding:1px 14px 1px 2px;vertical-align:top}</style>"
        parts = [f'<div class="tm-tvm-compare">{pad}<div style="margin:4px 0">{escape(self.message)}</div>']
        for o in self.ops:
            parts.append(f'<div style="margin:6px 0 2px 0;{mono}"><b>L{o.line}: {escape(o.text)}</b> '
                         f"[{escape(o.verdict)}] — tilemagic: {escape(str(o.ours_variant or '-'))}, "
                         f"TVM: {escape(str(o.tvm_variant or '-'))}</div>")
            rows = []
            if o.ours is not None and o.tvm is not None:
                for mark, x, y in o.diff():
                    rows.append(f'<tr style="{colors[mark]}"><td>{escape(mark)}</td><td>{escape(x)}</td>'
                                f"<td>{escape(y)}</td></tr>")
            if o.tvm_why_not or o.tvm_forced is not None:
                rows.append(f"<tr><td>?</td><td></td><td><pre style='margin:0'>TVM with dispatch="
                            f"{escape(str(variant_family(o.ours_variant)))}:\n{escape(o.tvm_why_not or '')}"
                            "</pre></td></tr>")
                for mark, x, y in o.diff(forced=True) if o.tvm_forced is not None else ():
                    rows.append(f'<tr style="{colors[mark]}"><td>{escape(mark)}</td><td>{escape(x)}</td>'
                                f"<td>{escape(y)}</td></tr>")
            if o.known_bug:
                rows.append(f"<tr><td>!</td><td colspan=2>{escape(o.known_bug)}</td></tr>")
            for who, err in (("tilemagic", o.ours_error), ("TVM", o.tvm_error)):
                if err:
                    cells = (f"<td><pre style='margin:0'>{escape(err)}</pre></td><td></td>" if who == "tilemagic"
                             else f"<td></td><td><pre style='margin:0'>{escape(err)}</pre></td>")
                    rows.append(f"<tr><td>✗</td>{cells}</tr>")
            parts.append(f'<table style="border-collapse:collapse;{mono}"><tr><th></th><th style="text-align:left">'
                         f'tilemagic</th><th style="text-align:left">TVM</th></tr>{"".join(rows)}</table>')
        if self.tvm is not None:
            for title, body, attr in (("TVM LowerTIRx output", self.tvm.lowered, "lowered"),
                                      (f"TVM CUDA ({self.tvm.cuda_note})", self.tvm.cuda, "cuda")):
                if body:
                    parts.append(f'<details><summary style="cursor:pointer">{escape(title)}</summary>'
                                 f'<pre style="{mono};max-height:400px;overflow:auto">'
                                 f"{escape(_clip(body, attr))}</pre></details>")
        parts.append("</div>")
        return "".join(parts)


#: Most characters of TVM's lowered IR or CUDA the HTML shows (an unrolled ldgsts copy is 250 kB of CUDA); the
#: whole text stays on the comparison object
MAX_PANE_CHARS = 48 * 1024


def _clip(body: str, attr: str) -> str:
    """``body`` cut at a line end before :data:`MAX_PANE_CHARS`, with a note naming where the rest is."""
    if len(body) <= MAX_PANE_CHARS:
        return body
    head = body[:body.rfind("\n", 0, MAX_PANE_CHARS) + 1 or MAX_PANE_CHARS]
    rest = body[len(head):].count("\n") + (not body.endswith("\n"))
    return head + f"… {rest} more lines (the whole text: result.tvm_comparison.tvm.{attr})\n"


def _diff_text(rows: list[tuple[str, str, str]], pad: str) -> list[str]:
    out = []
    for mark, x, y in rows:
        if mark == "=":
            out.append(f"{pad}= {x}")
        elif mark == "≠":
            out += [f"{pad}≠ tilemagic: {x}", f"{pad}       TVM: {y}"]
        elif mark == "-":
            out.append(f"{pad}- tilemagic only: {x}")
        else:
            out.append(f"{pad}+ TVM only: {y}")
    return out


def known_dispatch_bug(op, ours_variant: str | None, tvm_variant: str | None) -> str | None:
    """The documented TVM 0.27 bug behind TVM's choice of variant for ``op``, or None.

    :data:`LDGSTS_MBAR_BUG`: TVM took ``ldgsts`` for a ``copy_async`` with ``mbar=`` that tilemagic lowered with
    another variant (a TMA).
    """
    has_mbar = any(k == "mbar" for k, _, _ in op.options)
    if op.op == "copy_async" and has_mbar and tvm_variant == "ldgsts" and ours_variant not in (None, "ldgsts"):
        return LDGSTS_MBAR_BUG
    return None


def _who(variant, error) -> str:
    return variant or ("rejected" if error else "-")


def _ours_error_text(err) -> str:
    text = getattr(err, "message", None) or str(err)
    details = getattr(err, "details", None)
    return text + ("\n" + details if details else "")


def compare_with_tvm(result=None, *, program=None, typed=None, error: Exception | None = None,
                     arch: str = "sm_100a", cuda: bool = True, tmem_base: str = "shared",
                     explain: bool = True) -> TvmComparison:
    """Compare tilemagic's lowering of a program with TVM's, op by op.

    A description text goes through :func:`tilemagic.pipeline.compare_source_with_tvm`, which
    lowers it and calls this (the export layer never runs the pipeline).

    Parameters
    ----------
    result : TileCopyResult, optional
        A lowered cell (its typed program, dispatch records, kernel and ``options.arch`` are used).
    program, typed, error : optional
        Instead of a result, a description tilemagic rejected: its parsed ``Program``, its
        ``TypedProgram`` and the TileMagicError the lowering raised.  It is still exported and
        given to TVM; the error is shown on our side of its op (or of every op).
    arch : str
        The target without a result.
    cuda : bool
        Also obtain TVM's CUDA.
    tmem_base : {"shared", "const"}
        The export TVM lowers (see :func:`~tilemagic.export.tvmscript.export_tvmscript`); with
        ``shared`` the CUDA comes from a second, ``const`` export when the first does not compile.
    explain : bool
        For an op where TVM picked another variant family, lower once more with that op forced to
        tilemagic's family and keep TVM's answer (``OpComparison.tvm_why_not``).

    Returns
    -------
    TvmComparison
        ``available`` is False, with a message, when apache-tvm cannot be imported.
    """
    try:
        _import_tvm()
    except ImportError as e:
        return TvmComparison(False, f"{TVM_MISSING} ({e})")
    ours_error, ours_error_line = None, None
    if result is None:
        prog, tp, records, kernel = program, typed, [], None
        if error is not None:
            ours_error = _ours_error_text(error)
            ours_error_line = error.span.line if getattr(error, "span", None) else None  # type: ignore[attr-defined]
    else:
        prog, tp, records, kernel = result.program, result.typed, result.dispatch, result.kernel
        arch = result.options.arch
    # a cell tilemagic did not lower has no byte counts for expect_tx=auto: a placeholder (dispatch ignores it)
    unresolved = kernel is None
    export = export_tvmscript(prog, tp, records, tmem_base=tmem_base, kernel=kernel, unresolved_auto=unresolved)
    cuda_export = None
    if cuda and tp.tmem_cols and tmem_base == "shared":
        cuda_export = export_tvmscript(prog, tp, records, tmem_base="const", kernel=kernel,
                                       unresolved_auto=unresolved)
    run = run_tvm(export, arch=arch, cuda=cuda, cuda_export=cuda_export)
    inverse = {v: k for k, v in export.names.items()}
    ours_by_line = ours_instructions(kernel) if kernel is not None else {}
    rec_by_line = {r.line: r for r in records}
    ops = []
    for k, op in enumerate(tp.copy_ops):
        oc = OpComparison(op.span.line, op.text, (op.dst.buf.scope, op.src.buf.scope))
        rec = rec_by_line.get(op.span.line)
        if kernel is not None and rec is not None:
            oc.ours_variant, oc.ours = rec.chosen, ours_by_line.get(op.span.line, [])
        elif ours_error is not None and (ours_error_line is None or ours_error_line == op.span.line):
            oc.ours_error = ours_error
        if k < len(run.ops):
            t = run.ops[k]
            oc.tvm_variant = t.variant
            try:
                oc.tvm = tvm_instructions(t.script, inverse)
            except ValueError as e:
                oc.tvm_error = f"could not read TVM's dispatched TIR: {e}"
        elif run.error is not None and (run.error_line is None or run.error_line == op.span.line):
            oc.tvm_error = run.error
        oc.known_bug = dsmem_mapa_bug(oc.ours, oc.tvm)
        tma_side = {oc.ours_variant, oc.tvm_variant, op.dispatch} & set(TMA_VARIANTS) or oc.ours_error
        if is_tma_candidate(op) and tma_side:
            other_ranks = later_rank_branches(kernel.body) if kernel is not None else set()
            copies = [s for s, scope in ir.walk_scoped(kernel.body) if isinstance(s, ir.TmaCopy)
                      and s.span is not None and s.span.line == op.span.line
                      and not any(id(c) in other_ranks for c in scope)] if kernel is not None else []
            err = oc.ours_error or (ours_error if ours_error_line in (None, op.span.line) else None)
            oc.tma = compare_tma_plan(op, oc.ours_variant, copies, err, arch)
        if is_cp_candidate(op):
            cps = [s for s in ir.walk(kernel.body) if isinstance(s, ir.TcgenCp) and s.span is not None
                   and s.span.line == op.span.line] if kernel is not None else []
            err = oc.ours_error or (ours_error if ours_error_line in (None, op.span.line) else None)
            oc.cp = compare_cp_plan(op, cps, err)
        ops.append(oc)
    for k, (op, oc) in enumerate(zip(tp.copy_ops, ops)):  # ask TVM why it did not take tilemagic's variant family
        fam = variant_family(oc.ours_variant)
        # fam is None only without ours_variant, i.e. when tilemagic did not lower the op (then oc.ours is None)
        if oc.ours is None or fam is None or oc.tvm_variant is None or fam == oc.tvm_variant:
            continue
        oc.known_bug = known_dispatch_bug(op, oc.ours_variant, oc.tvm_variant)
        if not (explain or oc.known_bug):  # a known bug is always checked against the forced lowering
            continue
        forced = run_tvm(export_tvmscript(prog, tp, records, tmem_base=tmem_base, force={oc.line: fam},
                                          kernel=kernel), arch=arch)
        if forced.error is not None and forced.error_line == oc.line:
            oc.tvm_why_not = forced.error
        elif forced.error is None:
            oc.tvm_why_not = f"{fam} accepts it too; {oc.tvm_variant} is tried first (priority, then name)"
            if k < len(forced.ops) and forced.ops[k].variant == fam:
                try:
                    oc.tvm_forced = tvm_instructions(forced.ops[k].script, inverse)
                except ValueError:
                    oc.tvm_forced = None
    same = sum(o.verdict in ("same", "both reject", "known TVM bug") for o in ops)
    msg = f"TVM TIRx (apache-tvm {_tvm_version()}) vs tilemagic: {same} of {len(ops)} ops agree"
    bugs = sum(o.verdict == "known TVM bug" for o in ops)
    if bugs:
        msg += f" ({bugs} through a documented TVM 0.27 bug, named below)"
    if run.error and run.error_line is None:
        msg += f"; TVM failed to {run.error_stage} the program: {run.error.splitlines()[0]}"
    return TvmComparison(True, msg, export, ops, run)


def _tvm_version() -> str:
    import tvm

    return str(getattr(tvm, "__version__", "?"))
