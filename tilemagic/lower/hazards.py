"""Static check of the tcgen05 completion rules the simulator and the emulation cannot see.

``tcgen05.ld`` and ``tcgen05.st`` are asynchronous (PTX ISA 9.0 §9.7.16.6, §9.7.16.8.5): the
registers a ``tcgen05.ld`` writes may be used only after ``tcgen05.wait::ld``, and the
TMEM cells a ``tcgen05.st`` writes may be read (or freed) only after ``tcgen05.wait::st``.
As in TVM TIRx, waiting is the program's job (``wait ld`` / ``wait st``).  The CPU
simulator and the GPU emulation complete every ld/st at issue, so a missing wait still
gives the right numbers there — on Blackwell it would not.  This pass walks the kernel in
program order and reports each such read, so a PASS is not mistaken for a correct kernel.

It serves the runs without the simulator (a GPU launch, ``--launch off``); where the simulator ran,
its happens-before tracker (:mod:`tilemagic.sim.hb`) is authoritative and reports the same cases
per thread and register (and more: overwrites of in-flight registers, races, uninitialised data),
so the pipeline uses one or the other, never both.
"""

from __future__ import annotations

from ..arch.tcgen05 import cols_per_instr
from ..errors import Span
from ..ir import nodes as ir


def _line(s) -> str:
    return f"L{s.span.line}" if s.span else "the kernel epilogue"


def _local_reads(s: ir.Stmt) -> list[ir.Buffer]:
    """Local buffers a statement reads (registers)."""
    return [b for b in ir.stmt_buffers(s)[0] if b.scope == "local"]


def _cols(s: ir.TcgenLdSt) -> tuple[int, int]:
    return s.col, s.col + cols_per_instr(s.shape, s.num)


def check_hazards(kernel: ir.Kernel) -> list[tuple[str, Span | None]]:
    """Missing ``wait ld`` / ``wait st`` in program order; returns (message, span) pairs."""
    pending_ld: dict[str, ir.TcgenLdSt] = {}  # local buffer name -> the tcgen05.ld writing it
    pending_st: list[ir.TcgenLdSt] = []  # tcgen05.st not yet waited for
    found: list[tuple[str, Span | None]] = []
    seen: set[str] = set()

    def report(msg, span):
        if msg not in seen:
            seen.add(msg)
            found.append((msg, span))

    for s in ir.walk(kernel.body):
        if isinstance(s, ir.TcgenWait):
            if s.kind == "ld":
                pending_ld.clear()
            else:
                pending_st.clear()
            continue
        for buf in _local_reads(s):
            ld = pending_ld.get(buf.name)
            if ld is not None:
                report(f"hazard: registers of {buf.name} are read at {_line(s)} before `wait ld`; the tcgen05.ld "
                       f"at {_line(ld)} that writes them is asynchronous (PTX ISA 9.0 §9.7.16.8.5)", s.span)
        if isinstance(s, ir.TcgenLdSt):
            if s.op == "ld":
                lo, hi = _cols(s)
                for st in pending_st:
                    a, b = _cols(st)
                    if a < hi and lo < b:
                        report(f"hazard: the tcgen05.ld at {_line(s)} reads TMEM columns the tcgen05.st at "
                               f"{_line(st)} writes, before `wait st` (PTX ISA 9.0 §9.7.16.8.5)", s.span)
                pending_ld[s.local.name] = s
            else:
                pending_st.append(s)
        if isinstance(s, ir.TcgenDealloc) and pending_st:
            report(f"hazard: TMEM is freed at kernel end while the tcgen05.st at {_line(pending_st[0])} has not "
                   f"been waited for (`wait st`)", pending_st[0].span)
    return found
