"""What each choice costs: registers, spills, stack and the SASS of every accepting candidate, and the SASS view.

For every copy op, each registered variant is forced on that op (``dispatch=``, the other ops as dispatched) and
the kernel lowered again; every kernel that lowers is generated for the target and all of them are compiled as
one translation unit (:func:`tilemagic.codegen.cuda.translation_unit`) by ``nvcc -cubin -lineinfo -Xptxas -v``
(no GPU needed): ptxas reports each kernel's registers per thread, stack frame and spill stores/loads (bytes).
``nvdisasm -c -g`` disassembles the cubin with each instruction's CUDA line, which the CUDA line map turns into
a description line, so the SASS of one op is the instructions of its lines; they are counted by class
(:mod:`tilemagic.arch.sass`).  Results are cached in memory like the PTX view (:data:`COST_CACHE_SIZE` units), and
nothing runs unless a cell asks (``--cost``).

``nvdisasm`` comes with the CUDA toolkit, or from the ``nvidia-cuda-nvdisasm`` wheel (its ``nvidia/cu13/bin``
directory is searched too); without it the registers, stack and spills are still shown and the SASS columns
say why they are missing.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..arch.sass import CLASS_NAMES, classify, opcode
from ..caches import register_cache
from .logs import scrub_paths, trim_log
from .nvcc import nvcc_compile

if TYPE_CHECKING:
    from ..codegen.cuda import CudaSource

__all__ = ["COST_CACHE_SIZE", "CandidateCost", "CostReport", "OpCosts", "Resources", "SassResult",
           "candidate_costs", "compile_unit", "find_nvdisasm", "parse_nvdisasm", "parse_ptxas", "sass_for"]

#: Compiled units (one per cell's candidates, or one kernel's SASS view) kept in memory, least recently used first out.
COST_CACHE_SIZE = 32
#: Ops whose candidates are compiled (the first ones); a cell of more ops says how many it left out.
COST_OPS = 20
_MAIN = "k.cu"


@dataclass(frozen=True)
class Resources:
    """What ptxas reports for one kernel (``-Xptxas -v``).

    Attributes
    ----------
    registers : int
        32-bit registers per thread.
    stack : int
        Bytes of stack frame per thread (local memory; a register tile that does not fit lives there).
    spill_stores, spill_loads : int
        Bytes of register spills per thread.
    """

    registers: int
    stack: int = 0
    spill_stores: int = 0
    spill_loads: int = 0

    def text(self) -> str:
        s = f"{self.registers} registers"
        if self.stack or self.spill_stores or self.spill_loads:
            s += f", {self.stack} bytes stack, {self.spill_stores} bytes spill stores, {self.spill_loads} bytes " \
                 f"spill loads"
        return s


_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_PROPS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")


def parse_ptxas(log: str) -> dict[str, Resources]:
    """Per kernel, the resources in a ``ptxas -v`` log (``Compiling entry function 'k'`` ... ``Used N registers``).

    Returns
    -------
    dict of str -> Resources
        Kernels whose ``Used N registers`` line was found.
    """
    out: dict[str, Resources] = {}
    name, props = None, (0, 0, 0)
    for line in log.splitlines():
        m = _ENTRY.search(line)
        if m:
            name, props = m.group(1), (0, 0, 0)
            continue
        m = _PROPS.search(line)
        if m and name is not None:
            props = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
            continue
        m = _USED.search(line)
        if m and name is not None:
            out[name] = Resources(int(m.group(1)), *props)
            name = None
    return out


_SECTION = re.compile(r"^\s*\.section\s+\.text\.([A-Za-z_$][\w$]*)")
_FILE_LINE = re.compile(r'^\s*//## File "([^"]*)", line (\d+)')


def parse_nvdisasm(text: str, main_file: str = _MAIN) -> dict[str, tuple[tuple[str, ...], tuple[int | None, ...]]]:
    """Per kernel, its SASS instruction lines and the source line of each (``nvdisasm -c -g`` output).

    Parameters
    ----------
    text : str
        nvdisasm's listing.
    main_file : str
        Base name of the compiled file; a ``//## File`` comment of another file (a header) maps to None.

    Returns
    -------
    dict of str -> (tuple of str, tuple of int or None)
        The instruction lines (``/*0090*/ LDS.U8 R0, [R2+0x1c] ;``, whitespace collapsed) and, for each, the
        line of ``main_file`` it came from.
    """
    out: dict[str, tuple[list[str], list[int | None]]] = {}
    cur: tuple[list[str], list[int | None]] | None = None
    line_no: int | None = None
    for raw in text.splitlines():
        m = _SECTION.match(raw)
        if m:
            cur = out.setdefault(m.group(1), ([], []))
            line_no = None
            continue
        m = _FILE_LINE.match(raw)
        if m:
            line_no = int(m.group(2)) if re.split(r"[/\\]", m.group(1))[-1] == main_file else None
            continue
        if cur is not None and opcode(raw) is not None:
            cur[0].append(" ".join(raw.split()))
            cur[1].append(line_no)
    for ins, lines in out.values():  # the NOPs after the last instruction only pad the section
        while ins and ins[-1].split(" ", 1)[-1].rstrip(" ;") == "NOP":
            ins.pop()
            lines.pop()
    return {k: (tuple(v[0]), tuple(v[1])) for k, v in out.items()}


def find_nvdisasm() -> str | None:
    """``nvdisasm`` on PATH, else the one of the ``nvidia-cuda-nvdisasm`` wheel (``nvidia/cu13/bin``), or None."""
    exe = shutil.which("nvdisasm")
    if exe:
        return exe
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec is not None else []:
        for sub in ("cu13", "cuda_nvdisasm"):
            p = os.path.join(root, sub, "bin", "nvdisasm")
            if os.path.isfile(p) and os.access(p, os.X_OK):
                return p
    return None


@dataclass(frozen=True)
class UnitResult:
    """One compiled unit: per kernel its resources and SASS (``listings``: lines, unit line per SASS line)."""

    ok: bool
    log: str
    tool: str
    resources: dict[str, Resources]
    listings: dict[str, tuple[tuple[str, ...], tuple[int | None, ...]]]
    sass_note: str = ""


def _disassemble(cubin: bytes, exe: str) -> tuple[str | None, str]:
    with tempfile.TemporaryDirectory(prefix="tilemagic-") as tmp:
        path = os.path.join(tmp, "k.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        try:
            proc = subprocess.run([exe, "-c", "-g", path], capture_output=True, text=True, timeout=120, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return None, f"nvdisasm could not run: {type(exc).__name__}"
        if proc.returncode != 0:
            return None, trim_log(scrub_paths(proc.stderr or "", tmp))
        return scrub_paths(proc.stdout, tmp), ""


@functools.lru_cache(maxsize=COST_CACHE_SIZE)
def compile_unit(text: str, arch: str) -> UnitResult:
    """Compile a CUDA unit with ``nvcc -cubin -lineinfo -Xptxas -v`` and disassemble it (cached).

    Never raises: ``ok=False`` with the log when nvcc is missing or the unit does not compile; without
    nvdisasm the listings are empty and ``sass_note`` says why.
    """
    from .device import nvcc_version

    if shutil.which("nvcc") is None:
        return UnitResult(False, "nvcc not found on PATH", "", {}, {})
    res = nvcc_compile(text, arch, cubin=True, flags=("-lineinfo", "-Xptxas", "-v"), log_lines=100_000)
    tool = f"nvcc {nvcc_version() or ''}".strip()
    if not res.ok or res.cubin is None:
        return UnitResult(False, trim_log(res.log), tool, {}, {})
    resources = parse_ptxas(res.log)
    exe = find_nvdisasm()
    if exe is None:
        return UnitResult(True, "", tool, resources, {},
                          "no SASS: nvdisasm is not on PATH (CUDA toolkit, or pip install nvidia-cuda-nvdisasm)")
    listing, err = _disassemble(res.cubin, exe)
    if listing is None:
        return UnitResult(True, "", tool, resources, {}, f"no SASS: {err}")
    return UnitResult(True, "", tool + " + nvdisasm", resources, parse_nvdisasm(listing))


def _clear() -> None:
    compile_unit.cache_clear()


register_cache("runtime.costs", _clear, f"cubins' resources and SASS of the last {COST_CACHE_SIZE} compiled units "
                                        "(--cost, the SASS view)")


# ----------------------------------------------------------------------------- the SASS view
@dataclass(frozen=True)
class SassResult:
    """The SASS of a generated kernel, each line mapped to its CUDA and description line (like the PTX view).

    Attributes
    ----------
    ok : bool
    text : str
        One instruction per line (``/*0090*/ LDS.U8 R0, [R2+0x1c] ;``).
    cuda_lines, lines : tuple of int or None
        Per SASS line: the CUDA line (``-lineinfo``), and the description line through the CUDA line map.
    resources : Resources or None
    tool, log, arch : str
    """

    ok: bool
    text: str
    cuda_lines: tuple[int | None, ...]
    lines: tuple[int | None, ...]
    resources: Resources | None
    tool: str
    log: str
    arch: str


def _kernel_name(text: str) -> str | None:
    m = re.search(r'extern "C" __global__ void (?:__launch_bounds__\(\d+\) )?(\w+)', text)
    return m.group(1) if m else None


def sass_for(text: str, arch: str = "sm_100a", cuda_lines: Sequence[int | None] | None = None) -> SassResult:
    """SASS of one generated CUDA source (``result.cuda``) with a line map; cached with :func:`compile_unit`.

    Returns
    -------
    SassResult
        Never raises: ``ok=False`` with the reason when nvcc or nvdisasm is missing or the source does not
        compile.
    """
    unit = compile_unit(text, arch)
    name = _kernel_name(text)
    res = unit.resources.get(name or "")
    if not unit.ok or name not in unit.listings:
        return SassResult(False, "", (), (), res, unit.tool, unit.log or unit.sass_note, arch)
    ins, cl = unit.listings[name]
    src = list(cuda_lines or [])
    desc = tuple(src[c - 1] if c is not None and 0 < c <= len(src) else None for c in cl)
    return SassResult(True, "\n".join(ins), cl, desc, res, unit.tool, "", arch)


# ----------------------------------------------------------------------------- candidates
@dataclass(frozen=True)
class CandidateCost:
    """One variant forced on one op.

    Attributes
    ----------
    variant : str
    accepted : bool
        The op lowers with ``dispatch=variant``.
    chosen : bool
        The dispatcher's own choice.
    reason : str
        Why it does not accept ("" when it does).
    resources : Resources or None
        The whole kernel's, with this variant on this op (None: not compiled).
    mix : dict of str -> int
        The op's SASS instructions (its description line) by class (:data:`tilemagic.arch.sass.CLASS_NAMES`).
    op_instrs, kernel_instrs : int
        SASS instructions of the op and of the kernel.
    sass_note : str
        Why the SASS columns are empty, if they are.
    """

    variant: str
    accepted: bool
    chosen: bool = False
    reason: str = ""
    resources: Resources | None = None
    mix: dict[str, int] = field(default_factory=dict)
    op_instrs: int = 0
    kernel_instrs: int = 0
    sass_note: str = ""


@dataclass(frozen=True)
class OpCosts:
    """The candidates of one op, the chosen one first, then the other accepting ones, then those that do not."""

    line: int
    text: str
    candidates: tuple[CandidateCost, ...]


@dataclass(frozen=True)
class CostReport:
    """``result.costs``: the cost of every candidate of every op (:func:`candidate_costs`).

    Attributes
    ----------
    ops : tuple of OpCosts
    arch, tool : str
    log : str
        Why nothing could be compiled, if so.
    skipped : int
        Ops after the first :data:`COST_OPS`, not compiled.
    """

    ops: tuple[OpCosts, ...]
    arch: str
    tool: str
    log: str = ""
    skipped: int = 0

    def columns(self) -> list[str]:
        """The SASS classes any candidate has (table order)."""
        seen = {k for o in self.ops for c in o.candidates for k, v in c.mix.items() if v}
        return [k for k in CLASS_NAMES if k in seen]

    def rows(self, op: OpCosts) -> list[tuple[str, ...]]:
        """The table rows of one op: a header, then one row per candidate."""
        cols = self.columns()
        head = ("variant", "", "regs", "stack", "spill st/ld", "op SASS", *cols, "kernel SASS")
        rows = [head]
        for c in op.candidates:
            mark = "chosen" if c.chosen else "accepts" if c.accepted else "no"
            if not c.accepted:
                rows.append((c.variant, mark, c.reason, *[""] * (len(head) - 3)))
                continue
            r = c.resources
            res = (str(r.registers), str(r.stack), f"{r.spill_stores}/{r.spill_loads}") if r else ("?", "?", "?")
            sass = (str(c.op_instrs), *(str(c.mix.get(k, 0)) for k in cols), str(c.kernel_instrs)) \
                if not c.sass_note else ("-", *["-"] * len(cols), "-")
            rows.append((c.variant, mark, *res, *sass))
        return rows

    def text(self) -> str:
        """Per op, the candidates' table (fixed width, deterministic)."""
        if self.log and not self.ops:
            return f"costs not available: {self.log}"
        out = [f"{self.tool}, --arch {self.arch}; registers per thread, stack and spill bytes per thread from ptxas; "
               f"static SASS instructions by class from nvdisasm (op SASS: the op's line, -lineinfo)"]
        notes = {c.sass_note for o in self.ops for c in o.candidates if c.sass_note}
        out += sorted(notes)
        for op in self.ops:
            rows = self.rows(op)
            widths = [max(len(r[i]) for r in rows if len(r) > i and not (r[1] == "no" and i == 2))
                      for i in range(len(rows[0]))]
            out.append(f"L{op.line}: {op.text}")
            for r in rows:
                if r[1] == "no":
                    out.append(f"  {r[0].ljust(widths[0])}  {'no'.ljust(widths[1])}  {r[2]}".rstrip())
                else:
                    out.append("  " + "  ".join(x.ljust(w) for x, w in zip(r, widths)).rstrip())
        if self.skipped:
            out.append(f"… {self.skipped:,} more ops not compiled (the first {COST_OPS} are)")
        return "\n".join(out)


def _reason(details: str | None, variant: str) -> str:
    """The first reason of ``variant``'s row in a why-table (:meth:`DispatchRecord.table`)."""
    for line in (details or "").splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[0] == variant:
            return " ".join(parts[3:])
    return "does not accept"


def candidate_costs(tp, records, arch: str) -> CostReport:
    """Lower, generate and compile every variant of every op of a checked program (module docstring).

    Parameters
    ----------
    tp : tilemagic.lower.program.TypedProgram
    records : list of DispatchRecord
        The cell's own dispatch (marks the chosen variants).
    arch : str

    Returns
    -------
    CostReport
        The first :data:`COST_OPS` ops; never raises for a compiler problem (the report's ``log`` says it).
    """
    from ..codegen.cuda import generate, translation_unit
    from ..errors import TileMagicError
    from ..lower.dispatch import TargetSpec, registered_variants
    from ..lower.program import CopyItem, lower

    target = TargetSpec("cuda", arch)
    op_items = [i for i, it in enumerate(tp.items) if isinstance(it, CopyItem)]
    skipped = max(0, len(op_items) - COST_OPS)
    op_items = op_items[:COST_OPS]
    sources: dict[str, CudaSource] = {}
    plan: list[list[tuple[str, str | None, str]]] = []  # per op: (variant, kernel name or None, reason)
    for k, (idx, rec) in enumerate(zip(op_items, records)):
        op = tp.items[idx].op
        row: list[tuple[str, str | None, str]] = []
        for j, (variant, _) in enumerate(registered_variants(op.op, target.kind)):
            items = list(tp.items)
            items[idx] = CopyItem(dataclasses.replace(op, dispatch=variant))
            try:
                kernel, _, _ = lower(dataclasses.replace(tp, items=items), target)
            except TileMagicError as e:
                row.append((variant, None, _reason(e.details, variant)))
                continue
            name = f"{tp.name}_op{k}_v{j}"
            sources[name] = generate(dataclasses.replace(kernel, name=name), "native", arch=arch)
            row.append((variant, name, ""))
        plan.append(row)
    unit_text = translation_unit([s.text for s in sources.values()]) if sources else ""
    unit = compile_unit(unit_text, arch) if unit_text else UnitResult(False, "no kernel to compile", "", {}, {})
    offsets = _unit_offsets(unit_text, sources)
    ops = []
    for (idx, rec), row in zip(zip(op_items, records), plan):
        op = tp.items[idx].op
        cands = []
        for variant, kname, reason in row:
            if kname is None:
                cands.append(CandidateCost(variant, False, reason=reason))
                continue
            src = sources[kname]
            res = unit.resources.get(kname)
            note = unit.sass_note if unit.ok else (unit.log.splitlines() or ["compile failed"])[0]
            mix: dict[str, int] = {}
            n_op = n_all = 0
            if kname in unit.listings:
                ins, ul = unit.listings[kname]
                lines = src.lines
                off = offsets.get(kname, 0)
                for text, u in zip(ins, ul):
                    n_all += 1
                    c = None if u is None else u - off
                    desc = lines[c - 1] if c is not None and 0 < c <= len(lines) else None
                    if desc == op.span.line:
                        n_op += 1
                        cls = classify(opcode(text) or "")
                        mix[cls] = mix.get(cls, 0) + 1
                note = ""
            cands.append(CandidateCost(variant, True, variant == rec.chosen, "", res, mix, n_op, n_all, note))
        cands.sort(key=lambda c: (not c.chosen, not c.accepted))
        ops.append(OpCosts(op.span.line, op.text, tuple(cands)))
    return CostReport(tuple(ops), arch, unit.tool, "" if unit.ok else unit.log, skipped)


def _unit_offsets(unit: str, sources: dict) -> dict[str, int]:
    """Per kernel: unit line - own source line of its ``extern "C"`` line (so unit line - offset = own line)."""
    where = {}
    for i, line in enumerate(unit.split("\n"), 1):
        name = _kernel_name(line) if line.startswith('extern "C"') else None
        if name:
            where[name] = i
    out = {}
    for name, src in sources.items():
        own = next(i for i, line in enumerate(src.text.split("\n"), 1) if line.startswith('extern "C"'))
        out[name] = where.get(name, own) - own
    return out
