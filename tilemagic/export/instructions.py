"""Normalised instruction lists of one copy op: from tilemagic's IR and from TVM's dispatched TIR.

Both sides are reduced to the same vocabulary so they can be compared line by line:

* ``tcgen05.{ld,st}.sync.aligned.<shape>.x<num>.b32`` with the lane (``row``) and
  32-bit column (``col``) of the TMEM address relative to the CTA's allocation, and
  the register operands in operand order as ``(buffer, 32-bit word)``;
* vector moves as the PTX ``ld``/``st`` they are (``ld.global.v4.u32``, ``st.shared.u16``,
  ...), a global <-> shared move being one ``ld`` into registers plus one ``st``;
* scalar element stores (the fallback) as ``store``;
* ``cp.async.{cg,ca}.shared.global`` (``ldgsts``) with the bytes one issue copies (``cp-size``): TVM's
  ``T.ptx.cp(dst, src, 16, "async", "cg", "shared", "global", ...)`` and tilemagic's ``CpAsync`` both
  become ``cp.async.cg.shared.global 16 B``;
* a dsmem copy (``cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes``) with its bytes,
  after the ``mapa`` instructions that map its destination and mbarrier into the remote CTA:
  ``mapa.shared::cluster.u32`` on tilemagic's side (two per copy), ``mapa.u64`` on TVM 0.27's (one for the
  mbarrier, one per copy: :data:`tilemagic.export.tvm_compare.DSMEM_MAPA_BUG`);
* any other instruction by its PTX chain (a TMA issue, ``cp.async.bulk.tensor.<r>d...``, is its chain; its
  descriptor, box and coordinates are compared by :mod:`.tvm_tma`).  A bulk copy's ``.cta_group::1`` (which TVM
  spells on sm_100 and newer targets) is dropped: it is the group the copy has without the qualifier
  (PTX ISA 9.0 §9.7.9.25.5.2, the optional ``.cta_group``), so both spellings are one line.

Each instruction records whether a thread-dependent ``if`` guards it (the fallback's
single elected thread).  Loops are expanded, so a list holds what one thread issues.

TVM's side is read from the TVMScript that TVM prints for the ``PrimFunc`` a dispatch
variant returned (``impl.script()``): :func:`tvm_instructions` walks it with Python's
``ast`` module -- a small interpreter for the statements such a function contains
(``let`` bindings, ``for ... in range/T.grid/T.unroll``, ``if``, buffer stores, buffer
views and ``T.ptx.*`` calls); nothing is evaluated by Python itself.
"""

from __future__ import annotations

import ast as pyast
import math
from dataclasses import dataclass
from collections.abc import Sequence

from ..arch.ptx import PTX_FORM
from ..ir import nodes as ir
from ..lower.program import later_rank_branches

__all__ = ["MAPA_CLUSTER", "Instr", "instr_bytes", "normal_chain", "ours_instructions", "summary_lines",
           "tvm_instructions", "vector_bytes"]

_TYPE_BYTES = {"u8": 1, "s8": 1, "b8": 1, "u16": 2, "s16": 2, "b16": 2, "f16": 2, "bf16": 2, "u32": 4, "s32": 4,
               "b32": 4, "f32": 4, "u64": 8, "s64": 8, "b64": 8, "f64": 8}


@dataclass(frozen=True)
class Instr:
    """One instruction one thread issues.

    Attributes
    ----------
    chain : str
        PTX instruction chain (``tcgen05.ld.sync.aligned.32x32b.x4.b32``, ``ld.global.v4.u32``)
        or ``store`` for a scalar element store.
    row, col : int or None
        tcgen05 only: TMEM lane and 32-bit column of the address, relative to the allocation.
    regs : tuple of (str, int)
        tcgen05 only: register operands in operand order, as (register-tile name, 32-bit word).
    guarded : bool
        Issued under a thread-dependent ``if`` (one elected thread).
    nbytes : int or None
        ``cp.async`` only: the bytes one issue copies (its ``cp-size`` operand: 4, 8 or 16), which its chain
        does not spell.
    """

    chain: str
    row: int | None = None
    col: int | None = None
    regs: tuple[tuple[str, int | None], ...] = ()
    guarded: bool = False
    nbytes: int | None = None

    @property
    def is_tcgen05(self) -> bool:
        return self.chain.startswith("tcgen05.")

    def line(self) -> str:
        """One normalised line: chain, address immediates and registers (tcgen05) or the chain."""
        text = self.chain
        if self.row is not None or self.col is not None:
            text += f" row={self.row} col={self.col}"
        if self.regs:
            text += " regs=" + _regs_text(self.regs)
        if self.nbytes is not None:
            text += f" {self.nbytes} B"
        if self.guarded:
            text += " (one thread)"
        return text


def normal_chain(chain: str) -> str:
    """A PTX chain in the comparison's vocabulary: ``.cta_group::1`` of a bulk copy dropped (the default group)."""
    if chain.startswith(("cp.async.bulk", "cp.reduce.async.bulk")):
        return chain.replace(".cta_group::1", "")
    return chain


def _regs_text(regs) -> str:
    """``a[0:4]`` for a consecutive run of one buffer, else the list ``a[0],a[2],...``."""
    names = {n for n, _ in regs}
    idx = [i for _, i in regs]
    if len(names) == 1 and None not in idx and idx == list(range(idx[0], idx[0] + len(idx))):
        return f"{next(iter(names))}[{idx[0]}:{idx[0] + len(idx)}]"
    return ",".join(f"{n}[{'?' if i is None else i}]" for n, i in regs)


def vector_bytes(chain: str) -> int | None:
    """Bytes one ``ld``/``st`` chain moves (``ld.global.v4.u32`` -> 16), None for other instructions."""
    parts = chain.split(".")
    if parts[0] not in ("ld", "st"):
        return None
    lanes, size = 1, None
    for p in parts[1:]:
        if p in ("v2", "v4", "v8"):
            lanes = int(p[1:])
        elif p in _TYPE_BYTES:
            size = _TYPE_BYTES[p]
    return None if size is None else lanes * size


def instr_bytes(ins: Instr) -> int | None:
    """Bytes one issue of ``ins`` moves per thread: a ``cp.async``'s ``cp-size``, an ``ld``/``st``'s vector
    (:func:`vector_bytes`); None for other instructions."""
    return ins.nbytes if ins.nbytes is not None else vector_bytes(ins.chain)


def summary_lines(instrs: Sequence[Instr]) -> list[str]:
    """The normalised lines of one op: every tcgen05 instruction on its own line, other
    instructions counted (``ld.global.v4.u32 ×2``) in order of first appearance."""
    lines: list[str] = []
    counts: dict[str, int] = {}
    order: list[str] = []
    for ins in instrs:
        if ins.is_tcgen05:
            lines.append(ins.line())
            continue
        key = ins.line()
        if key not in counts:
            order.append(key)
            counts[key] = 0
        counts[key] += 1
    lines += [f"{k} ×{counts[k]}" for k in order]
    return lines


# ----------------------------------------------------------------------------- tilemagic's side
def _vec_instrs(mv: ir.VecMove, guarded: bool) -> list[Instr]:
    form = PTX_FORM[mv.nbytes]
    if mv.dst.scope == "local":
        return [Instr(f"ld.{mv.src.scope}.{form}", guarded=guarded)]
    if mv.src.scope == "local":
        return [Instr(f"st.{mv.dst.scope}.{form}", guarded=guarded)]
    return [Instr(f"ld.{mv.src.scope}.{form}", guarded=guarded), Instr(f"st.{mv.dst.scope}.{form}", guarded=guarded)]


def _tma_instr(tc: ir.TmaCopy) -> Instr:
    """A TMA issue as TVM prints it: the chain with ``.L2::cache_hint`` when a policy is passed.  Never marked
    guarded: the variant is single-thread and the election (``if tx == 0:``) is the caller's statement, outside
    the dispatched op, on both sides."""
    return Instr(normal_chain(tc.chain + (".L2::cache_hint" if tc.cache_hint else "")))


#: how tilemagic maps a dsmem copy's destination and mbarrier into the remote CTA (PTX ISA 9.0 §9.7.9.23)
MAPA_CLUSTER = "mapa.shared::cluster.u32"


def _bulk_instrs(bc: ir.BulkCopy) -> list[Instr]:
    """A dsmem copy as its CUDA issues it: ``mapa`` of the destination and of the mbarrier, then the bulk copy
    with its bytes (never marked guarded: single-thread, elected by the caller, as a TMA issue)."""
    return [Instr(MAPA_CLUSTER), Instr(MAPA_CLUSTER), Instr(bc.chain, nbytes=bc.nbytes)]


def ours_instructions(kernel: ir.Kernel) -> dict[int, list[Instr]]:
    """tilemagic's instructions per description line (one copy op per line), loops expanded.

    Returns
    -------
    dict of int -> list of Instr
        Keyed by the source line of the op the statements were lowered from.
    """
    out: dict[int, list[Instr]] = {}
    other_ranks = later_rank_branches(kernel.body)  # a cluster: the first rank's plan, as TVM's one program
    for stmt, scope in ir.walk_scoped(kernel.body):
        if isinstance(stmt, (ir.Seq, ir.If, ir.Grid)) or stmt.span is None:
            continue
        if other_ranks and any(id(s) in other_ranks for s in scope):
            continue
        guarded = any(isinstance(s, ir.If) and not isinstance(s, ir.GuardIf) for s in scope)  # the variant's own
        times = math.prod(e for s in scope if isinstance(s, ir.Grid) for e in s.extents)
        if isinstance(stmt, ir.TcgenLdSt):
            regs = tuple((stmt.local.name, stmt.reg_base + i) for i in range(stmt.regs))
            instrs = [Instr(stmt.chain, stmt.row, stmt.col, regs, guarded)]
        elif isinstance(stmt, ir.VecMove):
            instrs = _vec_instrs(stmt, guarded)
        elif isinstance(stmt, ir.CpAsync):
            instrs = [Instr(stmt.chain, guarded=guarded, nbytes=stmt.nbytes)]
        elif isinstance(stmt, ir.Store):
            instrs = [Instr("store", guarded=guarded)]
        elif isinstance(stmt, ir.TmaCopy):
            instrs = [_tma_instr(stmt)]
        elif isinstance(stmt, ir.TcgenCp):  # TMEM lane and 32-bit column of the address, as tcgen05.ld/st
            instrs = [Instr(stmt.chain, stmt.row, stmt.col, guarded=guarded)]
        elif isinstance(stmt, ir.BulkCopy):
            instrs = _bulk_instrs(stmt)
        elif isinstance(chain := getattr(stmt, "chain", None), str):  # any other instruction node
            instrs = [Instr(chain, guarded=guarded)]
        else:
            continue
        out.setdefault(stmt.span.line, []).extend(instrs * times)
    return out


# ----------------------------------------------------------------------------- TVM's side
class _Sym:
    """A value the interpreter cannot know (a thread id, a pointer)."""

    def __repr__(self):
        return "<sym>"


SYM = _Sym()


@dataclass(frozen=True)
class _Buf:
    root: str  # the buffer whose storage this name views


@dataclass(frozen=True)
class _Reg:
    root: str
    index: int | None


@dataclass(frozen=True)
class _Addr:
    """A TMEM address: allocation base + (row, 32-bit column)."""

    row: int
    col: int


_BINOPS = {
    pyast.Add: lambda a, b: a + b, pyast.Sub: lambda a, b: a - b, pyast.Mult: lambda a, b: a * b,
    pyast.FloorDiv: lambda a, b: a // b, pyast.Mod: lambda a, b: a % b, pyast.LShift: lambda a, b: a << b,
    pyast.RShift: lambda a, b: a >> b, pyast.BitAnd: lambda a, b: a & b, pyast.BitOr: lambda a, b: a | b,
    pyast.BitXor: lambda a, b: a ^ b,
}
_CMPS = {
    pyast.Eq: lambda a, b: a == b, pyast.NotEq: lambda a, b: a != b, pyast.Lt: lambda a, b: a < b,
    pyast.LtE: lambda a, b: a <= b, pyast.Gt: lambda a, b: a > b, pyast.GtE: lambda a, b: a >= b,
}
_BUFFER_MAKERS = ("T.Buffer", "T.decl_buffer", "T.alloc_local", "T.alloc_shared", "T.alloc_buffer", "T.match_buffer")


def _dotted(node) -> str:
    if isinstance(node, pyast.Name):
        return node.id
    if isinstance(node, pyast.Attribute):
        return _dotted(node.value) + "." + node.attr
    return ""


class _Interp:
    """Walks the printed TVMScript of one dispatched ``impl`` PrimFunc and collects its instructions."""

    def __init__(self, budget: int):
        self.env: dict[str, object] = {}
        self.out: list[Instr] = []
        self.budget = budget

    # -- expressions
    def value(self, node):
        if isinstance(node, pyast.Constant):
            return node.value
        if isinstance(node, pyast.Name):
            return self.env.get(node.id, SYM)
        if isinstance(node, pyast.UnaryOp) and isinstance(node.op, pyast.USub):
            v = self.value(node.operand)
            return -v if isinstance(v, int) else SYM
        if isinstance(node, pyast.BinOp):
            a, b = self.value(node.left), self.value(node.right)
            if isinstance(a, _Buf):  # the TMEM allocation slot used as an address
                a = _Addr(0, 0)
            if isinstance(a, _Addr) and isinstance(b, int) and isinstance(node.op, pyast.Add):
                return _Addr(a.row, a.col + b)
            if isinstance(a, bool) or isinstance(b, bool):
                a, b = int(a), int(b)
            if isinstance(a, int) and isinstance(b, int) and type(node.op) in _BINOPS:
                return _BINOPS[type(node.op)](a, b)
            return SYM
        if isinstance(node, pyast.Compare) and len(node.ops) == 1:
            a, b = self.value(node.left), self.value(node.comparators[0])
            if isinstance(a, int) and isinstance(b, int):
                return _CMPS[type(node.ops[0])](a, b)
            return SYM
        if isinstance(node, pyast.BoolOp):
            vals = [self.value(v) for v in node.values]
            if all(isinstance(v, bool) for v in vals):
                return all(vals) if isinstance(node.op, pyast.And) else any(vals)
            return SYM
        if isinstance(node, pyast.Subscript):
            base = self.value(node.value)
            if isinstance(base, _Buf):
                idx = self.value(node.slice)
                return _Reg(base.root, idx if isinstance(idx, int) else None)
            if isinstance(base, _Reg) and self.value(node.slice) == 0:  # `scalar_view[0]`
                return base
            return SYM
        if isinstance(node, pyast.Call):
            return self.call_value(node)
        return SYM

    def call_value(self, node):
        name = _dotted(node.func)
        args = node.args
        if name in ("T.uint32", "T.int32", "T.uint64", "T.int64") and len(args) == 1:
            return self.value(args[0])
        if name in ("T.Cast", "T.cast") and len(args) == 2:  # T.Cast("uint32", x): the value of x
            return self.value(args[1] if isinstance(args[0], pyast.Constant) else args[0])
        if name == "T.cuda.get_tmem_addr" and len(args) == 3:
            base, row, col = (self.value(a) for a in args)
            base = _Addr(0, base) if isinstance(base, int) else (_Addr(0, 0) if isinstance(base, _Buf) else base)
            if isinstance(base, _Addr) and isinstance(row, int) and isinstance(col, int):
                return _Addr(base.row + row, base.col + col)
            return SYM
        if name == "T.decl_scalar":  # one register of a buffer: `T.decl_scalar(dtype, data=x.data, elem_offset=k)`
            kws = {kw.arg: kw.value for kw in node.keywords}
            src = kws.get("data")
            if isinstance(src, pyast.Attribute) and src.attr == "data":
                root = self.value(src.value)
                off = self.value(kws["elem_offset"]) if "elem_offset" in kws else 0
                if isinstance(root, _Buf):
                    return _Reg(root.root, off if isinstance(off, int) else None)
            return SYM
        if name in _BUFFER_MAKERS:
            for kw in node.keywords:
                if kw.arg == "data" and isinstance(kw.value, pyast.Attribute) and kw.value.attr == "data":
                    src = self.value(kw.value.value)
                    if isinstance(src, _Buf):
                        return src
            return None  # bound to its own name by the assignment
        if isinstance(node.func, pyast.Attribute) and node.func.attr == "view":
            base = self.value(node.func.value)
            return base if isinstance(base, (_Buf, _Reg)) else SYM  # (a view of one scalar register stays it)
        return SYM

    # -- statements
    def tick(self):
        self.budget -= 1
        if self.budget < 0:
            raise ValueError("the dispatched TIR issues too many instructions to expand")

    def bind(self, name: str, value_node):
        v = self.value(value_node)
        self.env[name] = _Buf(name) if v is None else v

    def run(self, stmts, guarded=False):
        for st in stmts:
            self.tick()
            if isinstance(st, pyast.Assign):
                tgt = st.targets[0]
                if isinstance(tgt, pyast.Name):
                    self.bind(tgt.id, st.value)
                elif isinstance(tgt, pyast.Subscript):
                    self.out.append(Instr("store", guarded=guarded))
            elif isinstance(st, pyast.AnnAssign):
                if isinstance(st.target, pyast.Name):
                    if st.value is None:
                        self.env[st.target.id] = _Buf(st.target.id)  # a scalar register (`tmp: T.uint16`)
                    else:
                        self.bind(st.target.id, st.value)
            elif isinstance(st, pyast.For):
                self.loop(st, guarded)
            elif isinstance(st, pyast.If):
                cond = self.value(st.test)
                if isinstance(cond, bool):
                    self.run(st.body if cond else st.orelse, guarded)
                else:
                    self.run(st.body, True)
                    self.run(st.orelse, True)
            elif isinstance(st, pyast.With):
                self.run(st.body, guarded)
            elif isinstance(st, pyast.Expr) and isinstance(st.value, pyast.Call):
                self.instr(st.value, guarded)

    def loop(self, st, guarded):
        it = st.iter
        name = _dotted(it.func) if isinstance(it, pyast.Call) else ""
        ext = [self.value(a) for a in it.args] if isinstance(it, pyast.Call) else []
        if not ext or not all(isinstance(e, int) for e in ext):
            raise ValueError(f"loop with a non-constant extent: {pyast.unparse(it)}")
        if name in ("range", "T.serial", "T.unroll", "T.vectorized", "T.parallel") and len(ext) in (1, 2):
            lo, hi = (0, ext[0]) if len(ext) == 1 else ext
            ranges = [range(lo, hi)]
        elif name == "T.grid":
            ranges = [range(e) for e in ext]
        else:
            raise ValueError(f"unsupported loop: {pyast.unparse(it)}")
        targets = st.target.elts if isinstance(st.target, pyast.Tuple) else [st.target]
        names = [t.id for t in targets]

        def nest(k):
            if k == len(ranges):
                self.run(st.body, guarded)
                return
            for v in ranges[k]:
                self.env[names[k]] = v
                nest(k + 1)

        nest(0)

    def instr(self, call, guarded):
        name = _dotted(call.func)
        if not name.startswith("T.ptx."):
            return
        words = [a.value for a in call.args if isinstance(a, pyast.Constant) and isinstance(a.value, str)]
        vals = [self.value(a) for a in call.args if not (isinstance(a, pyast.Constant) and isinstance(a.value, str))]
        chain = normal_chain(".".join([name[len("T.ptx."):]] + [w for w in words if w]))
        if chain.startswith("tcgen05.") and words and words[0] in ("ld", "st") and vals:
            # PTX operand order: ld takes the destination registers first and the address last, st the
            # address first; a one-register transfer passes its 1-word view itself (a buffer: word 0)
            addr, reg_vals = (vals[-1], vals[:-1]) if words[0] == "ld" else (vals[0], vals[1:])
            regs = tuple((v.root, v.index) if isinstance(v, _Reg) else (v.root, 0)
                         for v in reg_vals if isinstance(v, (_Reg, _Buf)))
            if isinstance(addr, _Buf):
                addr = _Addr(0, 0)
            elif isinstance(addr, int):
                addr = _Addr(0, addr)
            row, col = (addr.row, addr.col) if isinstance(addr, _Addr) else (None, None)
            self.out.append(Instr(chain, row, col, regs, guarded))
        elif chain.startswith("tcgen05.cp.") and vals:
            # smem->tmem: T.ptx["tcgen05.cp..."](T.cast(taddr + off, "uint32"), desc): the address first
            addr = vals[0]
            if isinstance(addr, _Buf):
                addr = _Addr(0, 0)
            elif isinstance(addr, int):
                addr = _Addr(0, addr)
            if isinstance(addr, _Addr):  # a lane offset rides in the address's upper half-word (TVM's t_addr_off)
                addr = _Addr(addr.row + (addr.col >> 16), addr.col & 0xFFFF)
            row, col = (addr.row, addr.col) if isinstance(addr, _Addr) else (None, None)
            self.out.append(Instr(chain, row, col, guarded=guarded))
        elif chain.startswith(("cp.async.cg.", "cp.async.ca.")) and len(vals) >= 3:
            # ldgsts: T.ptx.cp(dst, src, cp_size[, src_size], "async", "cg"|"ca", "shared", "global", ...); the bulk
            # forms (TMA: T.ptx.cp(tensormap, c0, c1, ..., "async", "bulk", "tensor", ...)) pass coordinates there
            size = vals[2]
            self.out.append(Instr(chain, guarded=guarded, nbytes=size if isinstance(size, int) else None))
        elif chain.startswith("cp.async.bulk.shared::cluster.shared::cta") and len(vals) >= 3:
            # dsmem: T.ptx.cp(dst, src, T.uint32(nbytes), mbar, "async", "bulk", "", "", "shared::cluster", ...)
            size = vals[2]
            self.out.append(Instr(chain, nbytes=size if isinstance(size, int) else None))
        elif chain.startswith("mapa."):  # T.ptx.mapa(out, addr, rank, "", "u64", ""): not under the caller's guard
            self.out.append(Instr(chain))
        else:
            self.out.append(Instr(chain, guarded=guarded))


def tvm_instructions(script: str, names: dict[str, str] | None = None, *, budget: int = 200_000) -> list[Instr]:
    """The instructions of one dispatched TVM ``PrimFunc``, from its printed TVMScript.

    Parameters
    ----------
    script : str
        ``impl.script()`` of the PrimFunc a TVM dispatch variant returned.
    names : dict of str -> str, optional
        TVMScript buffer name -> tilemagic buffer name (the export renames a few).
    budget : int
        At most this many statements are executed (loops expanded).

    Raises
    ------
    ValueError
        The function has a loop with a non-constant extent, or exceeds ``budget``.
    """
    tree = pyast.parse(script)
    fn = next((n for n in tree.body if isinstance(n, pyast.FunctionDef)), None)
    if fn is None:
        raise ValueError("no function in the TVMScript")
    it = _Interp(budget)
    it.run(fn.body)
    if not names:
        return it.out
    return [Instr(i.chain, i.row, i.col, tuple((names.get(n, n), k) for n, k in i.regs), i.guarded, i.nbytes)
            for i in it.out]
