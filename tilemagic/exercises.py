"""Auto-graded TMEM exercises for a class: ``tilemagic.exercises.check(result, exercise_id)``.

A student solves an exercise by writing or completing a ``%%tilecopy`` cell; :func:`check` (or the magic
``%tilemagic grade EXERCISE``, which grades the last ``%%tilecopy`` cell, an error included) says what is right
and what is not -- the variant, the tcgen05 shape, the TMEM lanes, hazards, each check's PASS/FAIL -- without
writing the answer.  The facts come from the result as every view reads them: the why-tables
(``result.dispatch``), the lowered kernel's tcgen05 instructions and the lanes they touch
(:func:`tilemagic.widgets.placement.tmem_occupancy`, the same map the heatmaps draw), the launch's checks and
the happens-before warnings.  ``notebooks/exercises_tmem.ipynb`` poses them; ``exercises_tmem_solutions.ipynb``
(kept under nbval) proves each is solvable and that the grader accepts the solution and rejects the typical
mistakes.  ``tma_wait`` grades where a TMA load's mbarrier wait goes, from the lowered kernel's ``TmaCopy`` /
``MbarWait`` order (:func:`tilemagic.ir.nodes.walk_scoped`), the simulator's timeline (which phase of which barrier
each load completes) and its happens-before report.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from html import escape
from typing import Any

from .errors import CheckFailed, TileMagicError
from .ir.nodes import (Buffer, LdStMatrix, Load, MbarWait, Stmt, TmaCopy, VecMove, iter_exprs, stmt_exprs,
                       walk)
from .lang.ast import CopyStmt
from .lang.parser import parse
from .result import TileCopyResult

__all__ = ["EXERCISES", "Exercise", "Grade", "check"]


@dataclass(frozen=True)
class Exercise:
    """One exercise: its id, title, the task as the notebook states it, and the cell the student starts from."""

    id: str
    title: str
    task: str
    starter: str
    rules: Callable[[TileCopyResult], list[tuple[bool, str]]] = field(repr=False, compare=False)


@dataclass
class Grade:
    """What :func:`check` found: one ``(ok, message)`` per rule, in order.

    Attributes
    ----------
    exercise : str
    items : list of (bool, str)
    """

    exercise: str
    items: list[tuple[bool, str]]

    @property
    def passed(self) -> bool:
        """Every rule holds."""
        return bool(self.items) and all(ok for ok, _ in self.items)

    def __str__(self) -> str:
        head = f"{self.exercise}: " + ("solved" if self.passed else "not yet")
        return "\n".join([head, *(f"  [{'ok' if ok else 'no'}] {msg}" for ok, msg in self.items)])

    __repr__ = __str__

    def _repr_html_(self) -> str:
        colour = "#116329" if self.passed else "#a40e26"
        rows = "".join(f"<li>{'✔' if ok else '✘'} {escape(msg)}</li>" for ok, msg in self.items)
        return (f'<div class="tm-grade"><b style="color:{colour}">{escape(self.exercise)}: '
                f'{"solved" if self.passed else "not yet"}</b><ul style="margin:2px 0">{rows}</ul></div>')


# ----------------------------------------------------------------------------- facts of a result
def _ops(program) -> list[tuple[str, bool, str, str]]:
    """``(scope, async, destination, source)`` of each copy statement of a parsed cell (regions and ``dispatch=``
    left out): the parser's own statements, read as the pipeline reads them."""
    return [(st.scope, st.is_async, st.dst.name, st.src.name) for st in program.stmts if isinstance(st, CopyStmt)]


def _kept(res: TileCopyResult, ex: Exercise) -> list[tuple[bool, str]]:
    """The exercise's own copies (the same ops between the same buffers, in order) and its own check
    ``check B == A``, passing: a cell that drops the round trip, or checks something else, is not the answer."""
    want = _ops(parse(ex.starter.split("\n", 1)[1]))  # (the cell below its %%tilecopy line)
    have = _ops(res.program)
    out = [(have == want, "the exercise's copies, between the same buffers" if have == want else
            "keep the exercise's copies (the same ops between the same buffers, in the same order)")]
    checks = res.launch.checks if res.launch is not None else []
    own = [c for c in checks if " ".join(c.text.split()) == "B == A"]
    out.append((bool(own) and all(c.passed for c in own), "check B == A passes" if own and all(
        c.passed for c in own) else "keep the exercise's `check B == A`, and make it pass"))
    return out

def _instructions(res: TileCopyResult) -> list[dict]:
    from .widgets.placement import tmem_occupancy

    return list(tmem_occupancy(res.kernel)["instructions"]) if res.kernel is not None else []


def _ran(res: TileCopyResult) -> list[tuple[bool, str]]:
    """The cell ran on a backend and every check passed; no happens-before hazard."""
    launch = res.launch
    if launch is None or launch.backend == "off":
        return [(False, "the cell was not launched: run it with --launch sim (or on a GPU) so its checks run")]
    out = []
    if not launch.checks:
        out.append((False, "the cell has no `check`: keep the exercise's checks"))
    for c in launch.checks:
        out.append((c.passed, f"check {c.text}: {c.status}" + ("" if c.passed else " (the data did not come back)")))
    hazards = [w for w in res.warnings if w.startswith("hazard")]
    out.append((not hazards, "no happens-before hazard" if not hazards else
                f"{len(hazards)} hazard(s): {hazards[0].split(':', 1)[-1].strip()[:160]}"))
    return out


def _global_shapes(res: TileCopyResult, want: dict[str, tuple[str, tuple[int, ...]]]) -> list[tuple[bool, str]]:
    have = {b.name: (str(b.dtype), tuple(int(x) for x in b.shape)) for b in res.kernel.params} \
        if res.kernel is not None else {}
    bad = [n for n, spec in want.items() if have.get(n) != spec]
    return [(not bad, "the global buffers are the exercise's" if not bad else
             f"keep the global buffers as given: {', '.join(bad)} changed")]


def _tcgen05(res: TileCopyResult) -> list[tuple[bool, str]]:
    ops = {i["op"] for i in _instructions(res)}
    missing = [x for x in ("st", "ld") if x not in ops]
    return [(not missing, "the data goes through TMEM (tcgen05.st and tcgen05.ld)" if not missing else
             f"no tcgen05.{missing[0]}: the tile must go into TMEM and back out with copy_async")]


def _variant_rules(res: TileCopyResult, op: str, want: str) -> list[tuple[bool, str]]:
    out = []
    for d in res.dispatch:
        if d.op == op:
            out.append((d.chosen == want, f"L{d.line} `{d.text}`: {d.op}/{d.chosen}" +
                        ("" if d.chosen == want else f" (this exercise wants {want}; its why-table row says why not)")))
    return out or [(False, f"no {op} op in the cell")]


# ----------------------------------------------------------------------------- the exercises
def _shape_rules(res: TileCopyResult) -> list[tuple[bool, str]]:
    out = _global_shapes(res, {"A": ("float32", (128, 16)), "B": ("float32", (128, 16))}) + _tcgen05(res)
    for i in _instructions(res):
        ok = i["shape"] == "16x256b"
        out.append((ok, f"tcgen05.{i['op']} (L{i['line']}) uses .{i['shape']}" +
                    ("" if ok else ": not the shape this exercise asks for; the register layout of the local "
                                   "buffer decides it (docs/language.md, frag(SHAPE))")))
    return out + _ran(res)


def _upper_rules(res: TileCopyResult) -> list[tuple[bool, str]]:
    out = _global_shapes(res, {"A": ("float32", (64, 32)), "B": ("float32", (64, 32))}) + _tcgen05(res)
    for i in _instructions(res):
        lanes = i["cells"]["lane"]
        if not len(lanes):
            continue
        upper = bool(((lanes % 32) >= 16).all())
        quadrants = sorted({int(x) // 32 for x in lanes})
        where = "the upper 16 lanes" if upper else "lanes outside the upper half"
        out.append((upper and quadrants == [0, 1, 2, 3],
                    f"tcgen05.{i['op']} (L{i['line']}) touches {where} of quadrants {quadrants}"))
    return out + _ran(res)


def _quadrant_rules(res: TileCopyResult) -> list[tuple[bool, str]]:
    out = _global_shapes(res, {"A": ("float32", (64, 8)), "B": ("float32", (64, 8))}) + _tcgen05(res)
    for i in _instructions(res):
        cells = i["cells"]
        own = bool(((cells["lane"] // 32) == (cells["warp"] % 4)).all()) if len(cells["lane"]) else True
        out.append((own, f"tcgen05.{i['op']} (L{i['line']}): every warp w stays in quadrant w % 4" if own else
                    f"tcgen05.{i['op']} (L{i['line']}): a warp reaches another warp's quadrant"))
    return out + _ran(res)


def _gmem_smem_rules(res: TileCopyResult) -> list[tuple[bool, str]]:
    k = res.kernel
    out = [(k is not None and int(k.threads) == 32, "the kernel keeps its 32 threads" if k is not None and
            int(k.threads) == 32 else "keep threads=32: the exercise is about the tile, not the CTA")]
    shared = [b.name for b in k.shared if b is not k.tmem_addr and b.name != "tmem_addr"] if k is not None else []
    out.append((bool(shared), "the copy goes through shared memory" if shared else
                "keep the shared buffer: global -> shared -> global"))
    copies = [d for d in res.dispatch if d.op == "copy"]
    out.append((len(copies) == 2, f"{len(copies)} copy op(s)" + ("" if len(copies) == 2 else
                                                                  ": keep the two copies")))
    return out + _variant_rules(res, "copy", "gmem_smem") + _ran(res)


def _reads(stmt: Stmt, buf: Buffer) -> bool:
    """``stmt`` itself (not the statements nested in it) reads ``buf``: a TMA store from it, a vector move or an
    ldmatrix out of it, or a load of it in one of its expressions."""
    if isinstance(stmt, TmaCopy):
        return stmt.direction == "s2g" and stmt.smem is buf
    if isinstance(stmt, VecMove):
        return stmt.src is buf
    if isinstance(stmt, LdStMatrix):
        return stmt.op == "ld" and stmt.smem is buf
    return any(isinstance(x, Load) and x.buf is buf for e in stmt_exprs(stmt) for x in iter_exprs(e))


def _tma_wait_rules(res: TileCopyResult) -> list[tuple[bool, str]]:
    """Each TMA load (``TmaCopy`` g2s) is followed, before the first statement that reads its shared tile, by an
    ``MbarWait`` on the load's own mbarrier with the parity of the phase the simulator saw the load complete;
    then the run: checks PASS and the happens-before report clean (no race, no "would hang")."""
    out = _global_shapes(res, {"A": ("float32", (32, 64)), "B": ("float32", (32, 64))})
    launch, k = res.launch, res.kernel
    if k is None or launch is None or launch.backend != "sim":
        return out + [(False, "run the cell with --launch sim: the grader reads the simulator's mbarrier phases")]
    # the phase each load completes, as the simulator's timeline has it (issue events, by source line)
    phases = {ev.span.line: ev.info["phase"] for ev in launch.timeline
              if ev.kind == "tma.issue" and ev.info.get("direction") == "g2s" and ev.span is not None}
    body = list(walk(k.body))
    loads = [(i, s) for i, s in enumerate(body) if isinstance(s, TmaCopy) and s.direction == "g2s"]
    out.append((len(loads) == 2, f"{len(loads)} TMA load(s) of a tile" + ("" if len(loads) == 2 else
                                                                       ": keep the exercise's two TMA loads")))
    for i, load in loads:
        line = load.span.line if load.span is not None else 0
        bar, tile = load.mbar, load.smem
        first = next((j for j in range(i + 1, len(body)) if _reads(body[j], tile)), None)
        between = body[i + 1:first]
        waits = [w for w in between if isinstance(w, MbarWait)]
        where = f"L{line}: the TMA load into {tile.name} (completing on mbarrier {bar.name if bar else '?'})"
        if first is None:
            out.append((False, f"{where}: its tile is never read: keep the exercise's stores"))
            continue
        span = body[first].span
        read_at = span.line if span is not None else "?"
        phase = phases.get(line)
        right = [w for w in waits if w.bar is bar and phase is not None and w.parity == phase % 2]
        if right:
            out.append((True, f"{where} is waited for on its barrier, with the parity of its phase, before its tile "
                              f"is read at L{read_at}"))
        elif any(w.bar is bar for w in waits):
            out.append((False, f"{where}: the wait before L{read_at} names its barrier with the parity of a phase "
                               "the load does not complete (count the phases of the barrier: a fresh one starts "
                               "at phase 0, each completion flips the parity)"))
        elif waits:
            out.append((False, f"{where}: the wait before L{read_at} is on another barrier ("
                               f"{', '.join(sorted({w.bar.name for w in waits}))}): the load's bytes complete on "
                               f"{bar.name if bar else '?'}"))
        else:
            out.append((False, f"{where}: its tile is read at L{read_at} with no mbarrier wait in between: the "
                               "bytes land when the barrier's phase completes, not when the copy is issued"))
    hb = launch.hb
    if hb is not None and hb.hang is not None:
        out.append((False, f"the simulator stops: {hb.hang.message[:200]}"))
    elif hb is not None and hb.incomplete:
        out.append((False, f"the happens-before report is incomplete: {hb.incomplete[0][0][:160]}"))
    return out + _ran(res)


EXERCISES: dict[str, Exercise] = {e.id: e for e in (
    Exercise(
        "shape_16x256b", "Choose the fragment layout that makes the copy use .16x256b",
        "The cell moves a 128×16 fp32 tile global → registers → TMEM → registers → global. Change only the "
        "layout of the register buffer f so that both tcgen05 copies use the .16x256b shape.",
        "%%tilecopy ex_shape --launch sim --allow-fail\nkernel ex_shape threads=128\nglobal A: float32[128, 16]\n"
        "global B: float32[128, 16]\ntmem  T: float32[128, 16]\nlocal f: float32[128, 16] @ S[(128, 16) : "
        "(1@tid_in_wg, 1)]\nwg.copy f <- A\nwg.copy_async T <- f\nwait st\ncta_sync\nwg.copy_async f <- T\n"
        "wait ld\nwg.copy B <- f\ncheck B == A\n",
        _shape_rules),
    Exercise(
        "upper_f_subslab", "Read the upper F sub-slab",
        "An M=64 accumulator lives in the upper sub-slab of data path F (16 lanes of each quadrant). Declare acc "
        "so that both tcgen05 copies touch only the upper 16 lanes of every quadrant, and the round trip passes.",
        "%%tilecopy ex_upper --launch sim --allow-fail\nkernel ex_upper threads=128\nglobal A: float32[64, 32]\n"
        "global B: float32[64, 32]\ntmem  acc: float32[64, 32] @ datapath(F, sub_slab=0)\n"
        "local r: float32[64, 32] @ frag(16x64b)\nwg.copy r <- A\nwg.copy_async acc <- r\nwait st\ncta_sync\n"
        "wg.copy_async r <- acc\nwait ld\nwg.copy B <- r\ncheck B == A\n",
        _upper_rules),
    Exercise(
        "quadrant", "Fix a quadrant violation",
        "The cell puts the 64-row tile at T[64:128, :]: warps 0 and 1 would have to reach lanes 64–127, the "
        "quadrants of warps 2 and 3, and no TMEM address can say that (the quadrant comes from the issuing warp). "
        "Keep A, B and the round trip through TMEM, and place the tile so that every warp stays in its quadrant.",
        "%%tilecopy ex_quadrant --launch sim --allow-fail\nkernel ex_quadrant threads=128\n"
        "global A: float32[64, 8]\nglobal B: float32[64, 8]\ntmem  T: float32[128, 8]\n"
        "local r: float32[64, 8] @ frag(16x64b)\nwg.copy r <- A\nwg.copy_async T[64:128, :] <- r\nwait st\n"
        "cta_sync\nwg.copy_async r <- T[64:128, :]\nwait ld\nwg.copy B <- r\ncheck B == A\n",
        _quadrant_rules),
    Exercise(
        "gmem_smem", "Make gmem_smem take a copy the fallback took",
        "Both copies of the cell fall back to the scalar single-thread loop. Keeping 32 threads and the copies "
        "global → shared → global, change the tile so that gmem_smem takes both (read the why-tables).",
        "%%tilecopy ex_gmem --launch sim --allow-fail\nkernel ex_gmem threads=32\nglobal A: float32[4, 6]\n"
        "global B: float32[4, 6]\nshared S: float32[4, 6]\nwarp.copy S <- A\ncta_sync\nwarp.copy B <- S\n"
        "check B == A\n",
        _gmem_smem_rules),
    Exercise(
        "tma_wait", "Place the mbarrier wait of a TMA copy",
        "The cell moves a 32×64 fp32 tensor through one shared tile in two halves with TMA: each half is loaded "
        "(completing on mbarrier full) and stored back with a bulk group. The waits are missing, so each store "
        "reads the tile before its bytes have landed. Add the mbarrier waits — on the right barrier, with the "
        "right parity, before the tile is read — so that the check passes and the happens-before report is clean.",
        "%%tilecopy ex_tma --launch sim --allow-fail\nkernel ex_tma threads=128\nglobal A: float32[32, 64] = arange\n"
        "global B: float32[32, 64] = zeros\nshared S: float32[32, 32] @ swizzle(2, 3, 3)\nmbarrier full count=1\n"
        "if tx == 0: arrive full expect_tx=auto\nif tx == 0: thread.copy_async S <- A[:, 0:32] mbar=full\n"
        "if tx == 0: thread.copy_async B[:, 0:32] <- S\nif tx == 0: bulk_commit_group\n"
        "if tx == 0: bulk_wait_group 0 read\nif tx == 0: arrive full expect_tx=auto\n"
        "if tx == 0: thread.copy_async S <- A[:, 32:64] mbar=full\nif tx == 0: thread.copy_async B[:, 32:64] <- S\n"
        "if tx == 0: bulk_commit_group\nif tx == 0: bulk_wait_group 0\ncheck B == A\n",
        _tma_wait_rules),
)}


def check(result: Any, exercise_id: str) -> Grade:
    """Grade a ``%%tilecopy`` result (or the error its cell raised) against an exercise.

    Parameters
    ----------
    result : TileCopyResult or TileMagicError
        The cell's result (``--out VAR``, or ``tilemagic.tilecopy(...)``), or the located error of a cell that
        failed (a failing ``check`` without ``--allow-fail`` grades the result it carries).
    exercise_id : str
        A key of :data:`EXERCISES`.

    Returns
    -------
    Grade
        ``passed`` when every rule holds; each item says what is right or what is not.

    Raises
    ------
    KeyError
        For an unknown exercise id (the message lists the known ones).
    """
    if exercise_id not in EXERCISES:
        raise KeyError(f"unknown exercise {exercise_id!r}; exercises: {', '.join(EXERCISES)}")
    ex = EXERCISES[exercise_id]
    if isinstance(result, CheckFailed):
        result = result.result  # a failing check carries its result
    if isinstance(result, TileMagicError):
        where = f"line {result.line}" if getattr(result, "line", None) else "the cell"
        return Grade(ex.id, [(False, f"the cell fails at {where}: {type(result).__name__}: {result.message}")])
    if result is None:
        return Grade(ex.id, [(False, "nothing to grade yet: run the exercise's %%tilecopy cell first")])
    if not isinstance(result, TileCopyResult):
        return Grade(ex.id, [(False, f"nothing to grade: expected a %%tilecopy result, got {type(result).__name__}")])
    return Grade(ex.id, list(dict.fromkeys(_kept(result, ex) + ex.rules(result))))  # (once per message)
