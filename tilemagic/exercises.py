"""Auto-graded TMEM exercises for a class: ``tilemagic.exercises.check(result, exercise_id)``.

A student solves an exercise by writing or completing a ``%%tilecopy`` cell; :func:`check` (or the magic
``%tilemagic grade EXERCISE``, which grades the last ``%%tilecopy`` cell, an error included) says what is right
and what is not -- the variant, the tcgen05 shape, the TMEM lanes, hazards, each check's PASS/FAIL -- without
writing the answer.  The facts come from the result as every view reads them: the why-tables
(``result.dispatch``), the lowered kernel's tcgen05 instructions and the lanes they touch
(:func:`tilemagic.widgets.placement.tmem_occupancy`, the same map the heatmaps draw), the launch's checks and
the happens-before warnings.  ``notebooks/exercises_tmem.ipynb`` poses them; ``exercises_tmem_solutions.ipynb``
(kept under nbval) proves each is solvable and that the grader accepts the solution and rejects the typical
mistakes.  An exercise on the mbarrier wait of a TMA copy waits for TMA in the language.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from html import escape
from typing import Any

from .errors import CheckFailed, TileMagicError
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
