"""The exercise grader (tilemagic.exercises): each exercise accepts its solution and rejects typical mistakes."""

from __future__ import annotations

import warnings

import pytest
from IPython.utils.capture import capture_output

import tilemagic
from tilemagic.exercises import EXERCISES, check

TMA_STORE0 = "if tx == 0: thread.copy_async B[:, 0:32] <- S\n"
TMA_STORE1 = "if tx == 0: thread.copy_async B[:, 32:64] <- S\n"
#: a wait on a second barrier that no load completes on
TMA_WRONG_BARRIER = [("mbarrier full count=1\n", "mbarrier full count=1\nmbarrier empty count=1\n"),
                     (TMA_STORE0, "wait empty phase 0\n" + TMA_STORE0),
                     (TMA_STORE1, "wait full phase 1\n" + TMA_STORE1)]
#: (exercise, edits of the starter cell) that solve it
SOLUTIONS = {
    "shape_16x256b": [("S[(128, 16) : (1@tid_in_wg, 1)]", "frag(16x256b)")],
    "upper_f_subslab": [("sub_slab=0", "sub_slab=1")],
    "quadrant": [("T[64:128, :]", "T[0:64, :]"), ("T[64:128, :]", "T[0:64, :]")],
    "gmem_smem": [("[4, 6]", "[8, 16]")] * 3,
    # the reader, thread 0, waits (the first load on phase 0, the second on phase 1) before its store reads the tile
    "tma_wait": [(TMA_STORE0, "if tx == 0: wait full phase 0\n" + TMA_STORE0),
                 (TMA_STORE1, "if tx == 0: wait full phase 1\n" + TMA_STORE1)],
}
#: (exercise, edits, a phrase of the grade that says what is wrong)
MISTAKES = [
    ("shape_16x256b", [], "uses .32x32b: not the shape"),
    ("shape_16x256b", [("S[(128, 16) : (1@tid_in_wg, 1)]", "frag(16x128b)")], "uses .16x128b: not the shape"),
    ("shape_16x256b", [("S[(128, 16) : (1@tid_in_wg, 1)]", "frag(16x256b)"), ("wait st\ncta_sync\n", "")],
     "hazard"),
    ("shape_16x256b", [("S[(128, 16) : (1@tid_in_wg, 1)]", "frag(16x256b)"), ("[128, 16]\nglobal B", "[128, 8]\nglobal B")],
     None),  # a located error (shapes differ): the grade says the cell fails
    ("upper_f_subslab", [], "lanes outside the upper half"),
    ("upper_f_subslab", [(" @ datapath(F, sub_slab=0)", "")], "the cell fails at line 5: TileTypeError"),
    ("quadrant", [], "the cell fails at line 8: DispatchError"),
    ("quadrant", [("wg.copy_async T[64:128, :] <- r\nwait st\ncta_sync\nwg.copy_async r <- T[64:128, :]\nwait ld\n", "")],
     "no tcgen05.st"),
    ("gmem_smem", [], "copy/fallback (this exercise wants gmem_smem"),
    ("gmem_smem", [("[4, 6]", "[8, 16]")] * 3 + [("threads=32", "threads=64")], "keep threads=32"),
    ("gmem_smem", [("[4, 6]", "[8, 16]")] * 3 + [("warp.copy S <- A\ncta_sync\nwarp.copy B <- S\n",
                                                  "warp.copy B <- A\n")], "keep the two copies"),
    # answers that pass their checks without doing the exercise (found by QA): the round trip dropped or bypassed,
    # or a check that compares nothing the cell produced
    ("shape_16x256b", [("S[(128, 16) : (1@tid_in_wg, 1)]", "frag(16x256b)"), ("wg.copy B <- f\n", ""),
                       ("check B == A", "check A == A")], "keep the exercise's copies"),
    ("shape_16x256b", [("S[(128, 16) : (1@tid_in_wg, 1)]", "frag(16x256b)"),
                       ("wg.copy B <- f\n", "wg.copy B <- A dispatch=fallback\n")], "keep the exercise's copies"),
    ("upper_f_subslab", [("sub_slab=0", "sub_slab=1"), ("wg.copy B <- r\n", ""), ("check B == A", "check A == A")],
     "keep the exercise's `check B == A`"),
    ("gmem_smem", [("[4, 6]", "[4, 8]")] * 3 + [("check B == A", "check A == A")], "keep the exercise's `check B == A`"),
    # the TMA waits: missing (the starter), the second on the parity of the first phase, the first one after the
    # store that reads the tile, on a barrier no load completes on (would hang), the second load's wait missing
    ("tma_wait", [], "with no mbarrier wait in between"),
    ("tma_wait", [(TMA_STORE0, "wait full phase 0\n" + TMA_STORE0), (TMA_STORE1, "wait full phase 0\n" + TMA_STORE1)],
     "the parity of a phase the load does not complete"),
    ("tma_wait", [(TMA_STORE0, TMA_STORE0 + "wait full phase 0\n"), (TMA_STORE1, "wait full phase 1\n" + TMA_STORE1)],
     "L8: the TMA load into S (completing on mbarrier full): its tile is read at L9 with no mbarrier wait"),
    ("tma_wait", TMA_WRONG_BARRIER, "is on another barrier (empty)"),
    ("tma_wait", [(TMA_STORE0, "if tx == 0: wait full phase 0\n" + TMA_STORE0)], "L14: the TMA load into S (completing on mbarrier full): its tile is read at L15"),
]


def run(cell: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return tilemagic.tilecopy(cell)
        except tilemagic.TileMagicError as e:
            return e


def edited(exercise: str, edits) -> str:
    cell = EXERCISES[exercise].starter
    for old, new in edits:
        assert old in cell, (exercise, old)
        cell = cell.replace(old, new, 1)
    return cell


@pytest.mark.parametrize("exercise", sorted(EXERCISES))
def test_the_solution_is_accepted(exercise):
    grade = check(run(edited(exercise, SOLUTIONS[exercise])), exercise)
    assert grade.passed, str(grade)
    assert "solved" in str(grade) and "solved" in grade._repr_html_()


@pytest.mark.parametrize("exercise,edits,phrase", MISTAKES)
def test_a_typical_mistake_is_rejected_and_named(exercise, edits, phrase):
    grade = check(run(edited(exercise, edits)), exercise)
    assert not grade.passed, str(grade)
    wrong = " | ".join(msg for ok, msg in grade.items if not ok)
    assert phrase is None or phrase in wrong, str(grade)
    if phrase is None:
        assert "the cell fails at line" in wrong


def test_the_grade_does_not_give_the_answer_away():
    for exercise, edits, _ in MISTAKES:
        text = str(check(run(edited(exercise, edits)), exercise))
        for old, new in SOLUTIONS[exercise]:
            assert new not in text, (exercise, new)


def test_unknown_exercise_and_nothing_to_grade():
    with pytest.raises(KeyError, match="exercises: shape_16x256b"):
        check(None, "nope")
    assert "run the exercise's %%tilecopy cell first" in str(check(None, "quadrant"))
    assert not check(run(EXERCISES["tma_wait"].starter.replace("--launch sim", "--launch off")), "tma_wait").passed
    assert not check(42, "quadrant").passed


def test_the_grade_magic_grades_the_last_cell_errors_included(ip):
    from IPython.core.error import UsageError

    starter = EXERCISES["quadrant"].starter
    head, body = starter.split("\n", 1)
    with capture_output():
        ip.run_cell(starter)  # fails: a located DispatchError
    grade = ip.run_line_magic("tilemagic", "grade quadrant")
    assert not grade.passed and "DispatchError" in str(grade)
    with capture_output():
        ip.run_cell_magic("tilecopy", head.removeprefix("%%tilecopy "), body.replace("T[64:128, :]", "T[0:64, :]"))
    assert ip.run_line_magic("tilemagic", "grade quadrant").passed
    with pytest.raises(UsageError, match="one of shape_16x256b"):
        ip.run_line_magic("tilemagic", "grade nope")


def test_the_tma_wait_grade_reads_the_simulators_phases():
    """The wrong-barrier answer hangs (no load completes on `empty`): the grade says the simulator stops, and
    the placement rule names the barrier, not the check alone."""
    grade = check(run(edited("tma_wait", TMA_WRONG_BARRIER)), "tma_wait")
    wrong = " | ".join(msg for ok, msg in grade.items if not ok)
    assert "the simulator stops: would hang: mbarrier empty phase 0 never completes" in wrong, str(grade)
    # every thread waiting, with no barrier before the next phase's arrive, is rejected: threads 1-127 wait for
    # phase 0 unordered with thread 0's arrive of phase 1, which a GPU may complete first (the placement is right)
    everyone = [(old, new.replace("if tx == 0: wait full", "wait full")) for old, new in SOLUTIONS["tma_wait"]]
    grade = check(run(edited("tma_wait", everyone)), "tma_wait")
    assert not grade.passed
    wrong = [msg for ok, msg in grade.items if not ok]
    assert len(wrong) == 1 and "is not ordered before the arrive at L13 that completes phase 1" in wrong[0], str(grade)
