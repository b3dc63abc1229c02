"""Bank conflicts predicted from the simulator's per-thread address trace.

:class:`BankTrace` is the simulator's optional trace hook (``Simulator(..., trace=BankTrace(kernel))``): before
every Store, VecMove and ``ldmatrix``/``stmatrix`` runs, it evaluates the statement's shared-memory addresses for the
threads that execute it and the loop iterations of the chunk (with :func:`tilemagic.ir.evaluate.eval_static`, the
evaluator the simulator uses), groups them by warp, and counts each warp instruction's wavefronts with the bank
model :func:`tilemagic.arch.banks.count`.  :meth:`BankTrace.report` gives one :class:`BankAccess` per shared-memory
instruction of the kernel (its executions, wavefronts, ideal wavefronts, conflicts, worst degree, the lanes of its
worst instance for the threads x banks picture) and, for a conflicted one, the XOR swizzle of its buffer that
removes the conflict when one exists (:func:`suggest_swizzle`).

What is an instruction: a shared-memory side of one IR statement: a ``Store`` to shared memory is one
``st.shared``, every shared ``Load`` in a statement one ``ld.shared``, a ``VecMove`` with a shared side one
``ld``/``st.shared.v{2,4}``, an ``ldmatrix``/``stmatrix`` one matrix instruction.  The reads of the TMEM address
slot by tcgen05 instructions are broadcasts (one word) and not counted.  Addresses are byte offsets inside the
buffer: every shared buffer is ``__align__(16)``, and a shift of all of one instruction's addresses by a multiple
of 16 bytes only renames the banks, so the counts do not depend on where the compiler puts the buffer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..arch import banks
from ..arch.ptx import PTX_FORM
from ..ir import nodes as ir
from ..ir.evaluate import Undetermined, eval_static
from ..layout.factories import row_major
from ..layout.swizzle import ComposeLayout, xor_swizzle
from ..layout.tile import TileLayout

__all__ = ["BankAccess", "BankReport", "BankTrace", "SAMPLES", "suggest_swizzle"]

#: Warp instances of each instruction kept for the swizzle search (the first ones, and the worst).
SAMPLES = 64


@dataclass
class BankAccess:
    """One shared-memory instruction of the kernel and what its executions cost.

    Attributes
    ----------
    line : int or None
        Description line of the op the instruction belongs to.
    instr : str
        ``ld.shared.v4.u32``, ``st.shared.u16``, ``ldmatrix.sync.aligned.m8n8.x4.shared.b16``, ...
    kind : {"ld", "st"}
    buffer : str
        The shared buffer.
    nbytes : int
        Bytes per thread (16 per row for a matrix instruction).
    matrix : int or None
        Matrices of an ``ldmatrix``/``stmatrix``.
    executions : int
        Warp instructions executed.
    wavefronts, ideal : int
        Summed over the executions (:class:`tilemagic.arch.banks.Count`).
    degree : int
        The worst phase of any execution (1: conflict-free).
    worst : tuple of (ndarray, ndarray, int) or None
        ``(byte address per lane (32,), active lanes (32,), warp)`` of the execution with the most conflicts.
    swizzle : tuple of (str, int) or None
        For a conflicted instruction: the layout text of the swizzle that removes the conflict
        (``swizzle(3, 3, 3)``) and this instruction's wavefronts under it, per execution of the worst kind.
    unknown : int
        Executions whose addresses depend on loaded data (not counted).
    """

    line: int | None
    instr: str
    kind: str
    buffer: str
    nbytes: int
    matrix: int | None = None
    executions: int = 0
    wavefronts: int = 0
    ideal: int = 0
    degree: int = 0
    worst: tuple | None = None
    swizzle: tuple[str, int] | None = None
    unknown: int = 0
    _worst_conflicts: int = field(default=-1, repr=False)
    _samples: list = field(default_factory=list, repr=False)  # (pre-swizzle element addresses, active) per instance

    @property
    def conflicts(self) -> int:
        """``wavefronts - ideal``: the extra wavefronts (Nsight Compute's bank-conflict count)."""
        return self.wavefronts - self.ideal

    @property
    def conflicted(self) -> bool:
        return self.degree > 1


@dataclass
class BankReport:
    """Every shared-memory instruction of a run (:class:`BankAccess`, program order of first execution).

    ``per_op()`` sums them per description line; ``totals()`` over the kernel.
    """

    kernel: str
    accesses: list[BankAccess]

    def per_op(self) -> dict[int | None, dict[str, int]]:
        """``line -> {"wavefronts", "ideal", "conflicts", "ld_conflicts", "st_conflicts", "degree"}``."""
        out: dict[int | None, dict[str, int]] = {}
        for a in self.accesses:
            d = out.setdefault(a.line, dict(wavefronts=0, ideal=0, conflicts=0, ld_conflicts=0, st_conflicts=0,
                                            degree=0))
            d["wavefronts"] += a.wavefronts
            d["ideal"] += a.ideal
            d["conflicts"] += a.conflicts
            d[f"{a.kind}_conflicts"] += a.conflicts
            d["degree"] = max(d["degree"], a.degree)
        return out

    def totals(self) -> dict[str, int]:
        """The kernel's sums: wavefronts, ideal, conflicts, and ``ld_``/``st_`` wavefronts and conflicts."""
        t = dict(wavefronts=0, ideal=0, conflicts=0, ld_wavefronts=0, st_wavefronts=0, ld_conflicts=0,
                 st_conflicts=0)
        for a in self.accesses:
            t["wavefronts"] += a.wavefronts
            t["ideal"] += a.ideal
            t["conflicts"] += a.conflicts
            t[f"{a.kind}_wavefronts"] += a.wavefronts
            t[f"{a.kind}_conflicts"] += a.conflicts
        return t

    def conflicted(self) -> list[BankAccess]:
        return [a for a in self.accesses if a.conflicted]

    def text(self) -> str:
        """The per-instruction table, the per-op sums and the kernel's total (deterministic)."""
        if not self.accesses:
            return "no shared-memory instructions"
        head = ("line", "instruction", "buffer", "warp instrs", "wavefronts", "ideal", "conflicts", "degree",
                "fix")
        rows = [head]
        for a in self.accesses:
            fix = "" if not a.conflicted else (f"{a.swizzle[0]} -> {a.swizzle[1]}" if a.swizzle else "none found")
            rows.append((f"L{a.line}" if a.line else "-", a.instr, a.buffer, f"{a.executions:,}",
                         f"{a.wavefronts:,}", f"{a.ideal:,}", f"{a.conflicts:,}", f"{a.degree}-way" if
                         a.degree > 1 else "none", fix))
        widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
        out = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
        ops = self.per_op()
        out.append("")
        out += [f"L{line}: {d['wavefronts']:,} wavefronts, {d['conflicts']:,} conflicts"
                + (f" (worst {d['degree']}-way)" if d["degree"] > 1 else "") for line, d in ops.items()]
        t = self.totals()
        out.append(f"kernel {self.kernel}: {t['wavefronts']:,} shared wavefronts ({t['ideal']:,} without "
                   f"conflicts), {t['ld_conflicts']:,} load and {t['st_conflicts']:,} store bank conflicts")
        unknown = sum(a.unknown for a in self.accesses)
        if unknown:
            out.append(f"{unknown:,} executions with data-dependent addresses not counted")
        return "\n".join(out)


def _pre_swizzle(buf: ir.Buffer, elem: np.ndarray) -> np.ndarray:
    """Element addresses before the buffer's swizzle (the XOR is its own inverse), i.e. its tile's addresses."""
    lay = buf.layout
    if isinstance(lay, ComposeLayout):
        return xor_swizzle(elem, lay.per_element, lay.swizzle_len, lay.atom_len)
    return elem


def _swizzle_text(buf: ir.Buffer, m: int, b: int, s: int) -> str:
    lay = buf.layout
    tile = lay.tile if isinstance(lay, ComposeLayout) else lay
    if not isinstance(tile, TileLayout) or (isinstance(lay, ComposeLayout) and lay.bare) or \
            tile.canonicalize() == row_major(buf.shape).canonicalize():
        return f"swizzle({m}, {b}, {s})"
    return f"swizzle({m}, {b}, {s}, {tile})"


def suggest_swizzle(buf: ir.Buffer, target: BankAccess, others: list[BankAccess]) -> tuple[str, int] | None:
    """The XOR swizzle of ``buf`` (16-byte chunks) that makes ``target`` conflict-free, if one does.

    Every ``swizzle(M, B, S)`` with ``M = log2(16 / elem_bytes)`` (16-byte chunks: every vector and ``ldmatrix``
    row stays contiguous), ``B`` in 1..3, ``S`` in ``B``..7 and the buffer a whole number of ``2**(M+B)``-element
    blocks (so the XOR stays inside it) is applied to the recorded executions' addresses before the buffer's own
    swizzle (:func:`tilemagic.layout.swizzle.xor_swizzle`, TVM's ``ComposeLayout``); among those that leave
    ``target`` with degree 1, the one with the fewest wavefronts over all the buffer's instructions (``others``)
    wins, then the smallest ``B``, ``S``.

    Returns
    -------
    (layout text, target's wavefronts per execution under it) or None
    """
    eb = buf.elem_bytes
    if eb > 16 or not target._samples:
        return None
    m = (16 // eb).bit_length() - 1
    best = None
    for b in (1, 2, 3):
        if buf.numel % (1 << (m + b)):
            continue
        for s in range(b, 8):
            total, fixed, mine = 0, True, 0
            for acc in [target] + [o for o in others if o is not target]:
                pre = np.stack([p for p, _ in acc._samples])
                act = np.stack([a for _, a in acc._samples])
                c = banks.count(xor_swizzle(pre, m, b, s) * eb, acc.nbytes, act, acc.matrix)
                total += int(c.wavefronts.sum()) * max(1, acc.executions // len(acc._samples))
                if acc is target:
                    fixed = int(c.degree.max()) <= 1
                    mine = int(c.wavefronts.max())
            if fixed and (best is None or total < best[0]):
                best = (total, b, s, mine)
    if best is None:
        return None
    return _swizzle_text(buf, m, best[1], best[2]), best[3]


class BankTrace:
    """The simulator's trace hook that counts shared-memory wavefronts (module docstring).

    Parameters
    ----------
    kernel : Kernel
        The kernel the simulator runs (its shared buffers are the ones counted).
    """

    def __init__(self, kernel: ir.Kernel):
        self.kernel = kernel
        self._acc: dict[tuple[int, int], BankAccess] = {}
        self._bufs: dict[str, ir.Buffer] = {b.name: b for b in kernel.shared}

    def _access(self, key, stmt: ir.Stmt, instr: str, kind: str, buf: ir.Buffer, nbytes: int, matrix=None):
        a = self._acc.get(key)
        if a is None:
            a = self._acc[key] = BankAccess(stmt.span.line if stmt.span else None, instr, kind, buf.name, nbytes,
                                            matrix)
        return a

    def __call__(self, stmt: ir.Stmt, tids: np.ndarray, env: dict) -> None:
        if isinstance(stmt, ir.LdStMatrix):
            if stmt.smem.scope == "shared":
                a = self._access((id(stmt), 0), stmt, stmt.chain, stmt.op, stmt.smem, 16, stmt.num)
                self._count(a, stmt.smem, stmt.addr, tids, env, 2)
            return
        k = 0
        for ld in ir.loads(stmt):  # every shared Load of a statement's expressions is one ld.shared
            k += 1
            if ld.buf.scope == "shared" and ld.buf is not self.kernel.tmem_addr:
                eb = ld.buf.elem_bytes
                a = self._access((id(stmt), k), stmt, f"ld.shared.{PTX_FORM[eb]}", "ld", ld.buf, eb)
                self._count(a, ld.buf, ld.buf.index_expr(ld.indices), tids, env, eb)
        if isinstance(stmt, ir.VecMove):
            for side, (buf, e) in enumerate(((stmt.src, stmt.src_index), (stmt.dst, stmt.dst_index))):
                if buf.scope == "shared":
                    op = "ld" if side == 0 else "st"
                    a = self._access((id(stmt), -1 - side), stmt, f"{op}.shared.{PTX_FORM[stmt.nbytes]}", op, buf,
                                     stmt.nbytes)
                    self._count(a, buf, e, tids, env, buf.elem_bytes)
        elif isinstance(stmt, ir.Store) and stmt.buf.scope == "shared" and stmt.buf is not self.kernel.tmem_addr:
            eb = stmt.buf.elem_bytes
            a = self._access((id(stmt), -1), stmt, f"st.shared.{PTX_FORM[eb]}", "st", stmt.buf, eb)
            self._count(a, stmt.buf, stmt.buf.index_expr(stmt.indices), tids, env, eb)

    def _count(self, a: BankAccess, buf: ir.Buffer, e: ir.Expr, tids: np.ndarray, env: dict, unit: int) -> None:
        """Count the executions of ``a`` for threads ``tids`` over the chunk's iterations (``unit``: bytes per
        element of the index)."""
        iters = [np.shape(v)[:-1] for v in env.values() if isinstance(v, np.ndarray)]
        ishape = np.broadcast_shapes(*iters) if iters else ()
        n_it = int(np.prod(ishape, dtype=np.int64))
        warps = np.unique(tids // 32)
        try:
            elem = np.asarray(eval_static(e, tids, env), np.int64)
        except Undetermined:
            a.unknown += n_it * warps.size
            return
        elem = np.broadcast_to(elem, ishape + tids.shape).reshape(n_it, tids.size)
        full = np.zeros((n_it, warps.size, 32), np.int64)
        act = np.zeros((warps.size, 32), bool)
        w_ix = np.searchsorted(warps, tids // 32)
        full[:, w_ix, tids % 32] = elem
        act[w_ix, tids % 32] = True
        addr = full.reshape(-1, 32) * unit
        actv = np.broadcast_to(act, full.shape).reshape(-1, 32)
        c = banks.count(addr, a.nbytes, actv, a.matrix)
        a.executions += addr.shape[0]
        a.wavefronts += int(c.wavefronts.sum())
        a.ideal += int(c.ideal.sum())
        a.degree = max(a.degree, int(c.degree.max(initial=0)))
        conf = c.conflicts
        i = int(np.argmax(conf)) if conf.size else 0
        pre = _pre_swizzle(buf, full.reshape(-1, 32))
        if conf.size and int(conf[i]) > a._worst_conflicts:
            a._worst_conflicts = int(conf[i])
            a.worst = (addr[i].copy(), actv[i].copy(), int(warps[i % warps.size]))
            a._samples.append((pre[i].copy(), actv[i].copy()))
        room = SAMPLES - len(a._samples)
        if room > 0:
            a._samples += [(pre[j].copy(), actv[j].copy()) for j in range(min(room, pre.shape[0]))]

    def report(self) -> BankReport:
        """The counts so far, with a swizzle suggestion for every conflicted instruction."""
        accs = list(self._acc.values())
        for a in accs:
            if a.conflicted:
                buf = self._bufs[a.buffer]
                a.swizzle = suggest_swizzle(buf, a, [o for o in accs if o.buffer == a.buffer])
        return BankReport(self.kernel.name, accs)
