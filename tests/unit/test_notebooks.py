"""The stored notebooks: built from their jupytext sources, and the classroom tour's rules.

nbval (pyproject addopts) re-runs every stored notebook and compares its outputs; these tests
check what nbval cannot: that a stored notebook ``notebooks/NAME.ipynb`` holds the cells of its
source ``notebooks/src/NAME.md`` (no stale cells), that the notebooks' literal programs are the
``.tile`` demos and the tests' cell builders (``tests/cells.py``) they show, that the build stops
at an unexpected error, and that the classroom notebook keeps to its contract (issue 5, item 6):
after ``%load_ext tilemagic`` every code cell is a ``%%tilecopy`` cell.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import uuid
from pathlib import Path

import nbformat
import pytest
from nbclient.exceptions import CellExecutionError

import cells

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
DEMOS = ROOT / "tilemagic" / "demos"


def _builder():
    spec = importlib.util.spec_from_file_location("build_notebooks", ROOT / "tools" / "build_notebooks.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


BUILDER = _builder()


def _stored(name):
    return nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)


def _code_cells(cells):
    return [c for c in cells if c.cell_type == "code"]


def _source_cells(name):
    return _code_cells(BUILDER.read_source(name).cells)


def test_every_stored_notebook_has_a_source():
    assert BUILDER.NAMES == sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb"))


@pytest.mark.parametrize("name", BUILDER.NAMES)
def test_stored_notebook_is_built_from_its_source(name):
    stored, source = _stored(name), BUILDER.read_source(name)

    def cells_of(nb):
        return [(c.id, c.cell_type, c.source, c.metadata.get("tags", [])) for c in nb.cells]

    assert cells_of(stored) == cells_of(source), (
        f"notebooks/{name}.ipynb is stale: rerun `python tools/build_notebooks.py {name}`")
    # nothing but the tags in a cell's metadata: no timing (record_timing=False), no jupytext header
    assert all(set(c.metadata) <= {"tags"} for c in stored.cells)
    assert set(stored.metadata) <= {"kernelspec", "language_info", "widgets"}


@pytest.mark.parametrize("name", BUILDER.NAMES)
def test_every_stored_code_cell_was_executed(name):
    for cell in _code_cells(_stored(name).cells):
        assert cell.execution_count is not None, cell.source[:60]
        errors = [o for o in cell.outputs if o.output_type == "error"]
        # an error output exactly where the cell says it expects one
        assert bool(errors) == ("raises-exception" in cell.metadata.get("tags", [])), cell.source[:60]


def test_build_stops_at_an_untagged_error_only():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("1 / 0", metadata={"tags": ["raises-exception"]}),
        nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_code_cell("{}['missing']"),
        nbformat.v4.new_code_cell("y = 2"),
    ])
    with pytest.raises(CellExecutionError, match="KeyError"):
        BUILDER.execute(nb)
    assert nb.cells[0].outputs[0].ename == "ZeroDivisionError"
    assert nb.cells[1].execution_count is not None and nb.cells[3].execution_count is None


VIEW = "application/vnd.jupyter.widget-view+json"


def _widget_notebook():
    """A notebook showing a widget (random id) whose state references a second model (random id)."""
    html, layout = uuid.uuid4().hex, uuid.uuid4().hex
    out = nbformat.v4.new_output("display_data", data={VIEW: {"model_id": html, "version_major": 2}})
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("w", id="t-000", outputs=[out])])
    nb.metadata.widgets = {BUILDER.WIDGET_STATE: {"version_major": 2, "version_minor": 0, "state": {
        layout: {"model_name": "LayoutModel", "state": {"width": "1px"}},
        html: {"model_name": "HTMLModel", "state": {"layout": f"IPY_MODEL_{layout}", "value": "hi"}}}}}
    return nb


def test_widget_ids_do_not_depend_on_the_kernels_random_ids():
    first, second = (BUILDER.normalize_widget_ids(_widget_notebook(), "t") for _ in range(2))
    assert nbformat.writes(first) == nbformat.writes(second)
    state = first.metadata.widgets[BUILDER.WIDGET_STATE].state
    html = first.cells[0].outputs[0].data[VIEW]["model_id"]
    layout = state[html]["state"]["layout"].removeprefix("IPY_MODEL_")
    assert list(state) == [html, layout]  # the displayed model first, then what it references
    assert (state[html].model_name, state[layout].state) == ("HTMLModel", {"width": "1px"})


# ----------------------------------------------------------------------------- literal programs


def _demo(name):
    return (DEMOS / f"{name}.tile").read_text().strip()


def _tilecopy_cells(name, kernel):
    """The %%tilecopy cells of notebook ``name`` whose header names ``kernel``: (header flags, body)."""
    out = []
    for c in _source_cells(name):
        head, _, body = c.source.partition("\n")
        words = head.split()
        if words[:2] == ["%%tilecopy", kernel]:
            out.append((words[2:], body))
    return out


@pytest.mark.parametrize("name, kernel, flags", [
    ("quickstart", "tmem_roundtrip", [[], ["--view", "widget"]]),
    ("quickstart", "fallback_demo", [[]]),
    ("copy_fallback", "fallback_demo", [["--out", "fb"]]),
    ("classroom_tmem", "fallback_demo", [["--view", "text"]]),
    ("copy_async_ldgsts", "ldgsts_roundtrip", [[]]),
    ("copy_async_tma", "tma_roundtrip", [[]]),
    ("tcgen05_cp", "tcgen05_cp_roundtrip", [["--out", "demo"]]),
])
def test_demo_cells_are_the_tile_demos(name, kernel, flags):
    found = _tilecopy_cells(name, kernel)
    assert [f for f, _ in found] == flags
    demo_body = _demo(kernel).partition("\n")[2]
    assert all(body == demo_body for _, body in found)


def test_classroom_4x8_cell_is_the_demo_widened():
    [(flags, body)] = _tilecopy_cells("classroom_tmem", "gmem_smem_4x8")
    assert flags == ["--view", "text"]
    assert body == _demo("fallback_demo").partition("\n")[2].replace("fallback_demo", "gmem_smem_4x8").replace(
        "[4, 6]", "[4, 8]")


def _literal(name, var):
    """The value of ``var = <literal>`` in a code cell of notebook ``name``."""
    for c in _source_cells(name):
        if c.source.startswith("%"):
            continue
        for node in ast.parse(c.source).body:
            if isinstance(node, ast.Assign) and [t.id for t in node.targets if isinstance(t, ast.Name)] == [var]:
                return ast.literal_eval(node.value)
    raise AssertionError(f"no {var} = ... in notebooks/src/{name}.md")


G = cells.GmemSmemCase
# the sweeps of notebooks/src/copy_variants.md, as the tests' builders write them
NOTEBOOK_SWEEPS = {
    "GMEM_SMEM": [cells.gmem_smem_cell(c) for c in (
        G("warp", 32, 8, 64, "float16"), G("wg", 128, 8, 64, "float16"), G("cta", 256, 8, 64, "float16"),
        G("warp", 32, 8, 64, "float16", "swizzle(2, 3, 3)"),
        G("warp", 32, 8, 32, "float32", "S[(8, 8, 4) : (4, 32, 1)]"),
        G("warp", 32, 8, 16, "float32", "S[(8, 16) : (1, 8)]"),
        G("warp", 32, 8, 64, "float16", gcols=70, c0=3), G("warp", 32, 4, 6, "float32"))],
    "LDSTMATRIX": [cells.smem_cell(*a) for a in (
        ("S[(8, 4, 2) : (4@laneid, 1@laneid, 1)]", 8, 8, "warp", 32, "float16"),
        ("S[(2, 8, 4, 2) : (2, 4@laneid, 1@laneid, 1)]", 16, 8, "warp", 32, "bfloat16"),
        ("S[(2, 8, 2, 4, 2) : (2, 4@laneid, 4, 1@laneid, 1)]", 16, 16, "warp", 32, "float16"),
        ("S[(2, 4, 2, 2, 8) : (4, 1@laneid, 1, 2, 4@laneid)]", 16, 16, "warp", 32, "float16"),
        ("frag(16x128b)", 64, 64, "wg", 128, "float16", "swizzle(3, 3, 3)"),
        ("S[(2, 8, 2, 4, 2) : (2, 4@laneid, 4, 1@laneid, 1)]", 16, 16, "warp", 32, "float32"),
        ("S[(32, 8) : (1@laneid, 1)]", 32, 8, "warp", 32, "float16"))],
    "REG": [cells.reg_cell(*a) for a in (
        ("S[(128, 8) : (1@tid_in_wg, 1)]", 128, 8, "wg", 128, "float16"),
        ("frag(32x32b)", 128, 32, "wg", 128, "float32"), ("frag(16x64b)", 64, 32, "wg", 128, "float32"),
        ("frag(16x256b)", 128, 64, "wg", 128, "float16"),
        ("S[(32, 2, 4) : (1@laneid, 1, 2)]", 32, 8, "warp", 32, "float16"),
        ("S[(128, 4) : (1@tid_in_wg, 2)]", 128, 4, "wg", 128, "float32"),
        ("S[(16, 16) : (1@laneid, 1)]", 16, 16, "warp", 32, "float16"))],
}


@pytest.mark.parametrize("var", sorted(NOTEBOOK_SWEEPS))
def test_copy_variants_sweeps_are_the_test_cells(var):
    assert _literal("copy_variants", var) == NOTEBOOK_SWEEPS[var]


def test_copy_fallback_cases_are_the_test_cells():
    programs = _literal("copy_fallback", "CASES")
    # TVM's test_fallback_round_trip cases, then one size the warp's threads divide
    assert list(programs) == cells.FALLBACK_CASES + [("warp", 32, 4, 8)]
    assert all(src == cells.fallback_cell(*case) for case, src in programs.items())


# ----------------------------------------------------------------------------- the asynchronous copies


def _outputs_text(cell):
    return "\n".join(o.get("text", "") if o.output_type == "stream" else o.get("evalue", "") if o.output_type == "error"
                     else o.get("data", {}).get("text/plain", "") for o in cell.outputs)


#: (notebook, kernel of a cell that fails on purpose, what its stored error says)
ASYNC_FLAGGED = [
    ("copy_async_ldgsts", "odd", "DispatchError: no copy_async variant accepts"),
    ("copy_async_ldgsts", "no_barrier", "HazardError: shared-memory race on S"),
    ("copy_async_ldgsts", "early_read", "CheckFailed: FAIL: check B == A"),
    ("copy_async_tma", "bad_swizzle", "stage=shared-swizzle: S's layout swizzle(2, 3, 3) is not the hardware's"),
    ("copy_async_tma", "rows_16b", "stage=shared-pointer"),
    ("copy_async_tma", "missing_wait", "CheckFailed: FAIL: check B == A"),
    ("copy_async_tma", "wrong_parity", "CheckFailed: FAIL: check B == A"),
    ("copy_async_tma", "too_few_bytes", "would hang: mbarrier full phase 0 never completes: 8192 of 16384 expected"),
    ("copy_async_tma", "too_many_bytes", "would hang: mbarrier full phase 0 never completes: 8192 bytes arrived, 4096"),
    ("copy_async_tma", "missing_fence", "HazardError: async-proxy read of generic writes on S"),
    ("copy_async_dsmem", "transposed", "chunk_bytes=4 (need >= 16 and multiple of 16)"),
    ("copy_async_dsmem", "own", "its own rank: a dsmem copy writes another CTA's shared memory"),
    ("copy_async_dsmem", "no_final_sync", "HazardError: CTA 0 may exit while its dsmem copy"),
    ("copy_async_dsmem", "no_fence", "HazardError: async-proxy read of generic writes on S@cta0"),
    ("copy_async_dsmem", "no_wait", "HazardError: shared-memory race on R@cta0"),
    ("tcgen05_cp", "wrong_swizzle", "128B swizzle needs swizzle(3, 3, 3) over rows of 128 B of 16-bit elements, S is swizzle(3, 2, 3)"),
    ("tcgen05_cp", "decompress", "TVM 0.27's planner does not support decompress"),
    ("tcgen05_cp", "no_fence", "HazardError: async-proxy read of generic writes on S: the tcgen05.cp at L11"),
    ("tcgen05_cp", "rewritten", "HazardError: shared-memory race on S: thread 0 writes S[0, 0] at L15 that the tcgen05.cp"),
    ("tcgen05_cp", "early_read", "HazardError: TMEM race on T: thread 0 reads TMEM lane 0 column 0 at L14 that the tcgen05.cp"),
    ("tcgen05_cp", "no_after_fence", "but no tcgen05.fence::after_thread_sync orders the ld after it"),
    ("tcgen05_cp", "other_thread", "tcgen05.cp at L12 was never committed by its issuing thread"),
]


@pytest.mark.parametrize("name", ["copy_async_ldgsts", "copy_async_tma", "copy_async_dsmem", "tcgen05_cp"])
def test_async_notebooks_flag_exactly_the_cells_that_fail_on_purpose(name):
    """Every cell tagged raises-exception is one of the flagged cells, with the error that names its mistake; every
    launched cell that is not flagged passes its checks with a clean happens-before report."""
    cells = {_line(c).split()[1]: c for c in _code_cells(_stored(name).cells) if c.source.startswith("%%tilecopy")}
    flagged = {k: why for n, k, why in ASYNC_FLAGGED if n == name}
    tagged = {k for k, c in cells.items() if "raises-exception" in c.metadata.get("tags", [])}
    assert tagged == set(flagged)
    for k, why in flagged.items():
        assert why in _outputs_text(cells[k]), k
    for k, c in cells.items():
        text = _outputs_text(c)
        if k in flagged or "--launch off" in _line(c):
            continue
        assert ": PASS" in text and "FAIL" not in text and "happens-before: clean" in text, k
    # the races and hangs are reported where the data alone would not show them
    if name == "copy_async_tma":
        assert "hazard: shared-memory race on S: thread 0 reads S[0, 0] at L10 that the TMA copy (mbarrier full)" in \
            _outputs_text(cells["wrong_parity"])


# ----------------------------------------------------------------------------- the classroom contract


def _classroom_cells():
    return _source_cells("classroom_tmem")


def test_classroom_code_cells_are_tilecopy_cells():
    first, *rest = _classroom_cells()
    lines = first.source.splitlines()
    assert lines[0] == "%load_ext tilemagic"
    # the load cell may only pin session defaults (%config TileMagics.*), nothing else
    assert all(re.fullmatch(r"%config TileMagics\.\w+ = \S+", ln) for ln in lines[1:]), lines
    assert rest, "the tour has no %%tilecopy cells"
    for cell in rest:
        assert cell.source.startswith("%%tilecopy "), cell.source.splitlines()[0]


def _line(cell):
    return cell.source.splitlines()[0]


def test_classroom_draws_each_shape_with_its_owners():
    cells = _classroom_cells()
    for shape in ("32x32b", "16x64b", "16x128b", "16x256b"):
        drawn = [c for c in cells if f"@ frag({shape})" in c.source and "--heatmap instr,fragment" in _line(c)
                 and re.search(r"--color-by (thread|reg)\b", _line(c))]
        assert len(drawn) == 1, shape


def test_classroom_stages_one_tile_both_ways_into_tmem():
    """Section 6: one cell fills part of a TMEM tile by tcgen05.st (warpgroup, from registers) and part by tcgen05.cp
    (one thread, from shared memory, committed to an mbarrier), draws who filled which cell, and PASSes clean."""
    src = [c for c in _classroom_cells() if c.source.startswith("%%tilecopy two_ways")]
    assert len(src) == 1 and "--heatmap instr" in _line(src[0])
    stored = [c for c in _code_cells(_stored("classroom_tmem").cells) if c.source.startswith("%%tilecopy two_ways")]
    text = _outputs_text(stored[0])
    assert "tcgen05.st.sync.aligned.32x32b" in text and "tcgen05.cp.cta_group::1.128x128b" in text
    assert "tcgen05.commit" in text and "tcgen05.cp descriptors" in text
    assert ": PASS" in text and "FAIL" not in text and "happens-before: clean" in text
    html = stored[0].outputs[0].data["text/html"]
    assert "TMEM occupancy, one panel per tcgen05 instruction" in html


def test_classroom_covers_the_tour():
    cells = _classroom_cells()
    src = "\n".join(c.source for c in cells)
    # the quadrant rule: a T[:, ...] window coloured by warp, under --strict
    assert any("--strict" in _line(c) and "--color-by warp" in _line(c) and re.search(r"T\[:, \d+:\d+\]", c.source)
               for c in cells)
    # data paths F (both sub-slabs of one allocation) and B
    assert "datapath(F, sub_slab=0) at T" in src and "datapath(F, sub_slab=1) at T" in src
    assert "@ datapath(B)" in src
    # the deliberate mistake is tagged, and the fixed cell follows it
    bad = [i for i, c in enumerate(cells) if "raises-exception" in c.metadata.get("tags", [])]
    assert len(bad) == 1
    assert "frag(16x256b)" in cells[bad[0]].source and "datapath(B)" in cells[bad[0]].source
    assert "frag(32x32b)" in cells[bad[0] + 1].source and "datapath(B)" in cells[bad[0] + 1].source


def test_classroom_stored_outputs_tell_the_story():
    cells = _code_cells(_stored("classroom_tmem").cells)
    by_name = {_line(c).split()[1]: c for c in cells[1:]}

    def text(name):
        out = []
        for o in by_name[name].outputs:
            out.append(o.get("text", "") if o.output_type == "stream" else
                       o.get("data", {}).get("text/plain", "") if o.output_type == "execute_result" else
                       o.get("evalue", ""))
        return "\n".join(out)

    assert "allocated 64 of 512" in text("tmem_alloc")
    for shape, num in (("32x32b", "x8"), ("16x64b", "x4"), ("16x128b", "x2"), ("16x256b", "x2")):
        report = text(f"shape_{shape}")
        assert f"tcgen05.st.sync.aligned.{shape}.{num}.b32" in report, shape
    # the fallback's warning, once: in the report (the magic does not repeat it on stderr)
    assert "copy/fallback (scalar single-thread) picked" in text("fallback_demo")
    assert "UserWarning" not in text("fallback_demo")
    assert "copy/fallback" not in text("gmem_smem_4x8")
    assert "gmem_smem   10    chosen" in text("gmem_smem_4x8")
    assert "tilecopy:5:1: DispatchError" in text("b_mistake") and "frag(32x32b)" in text("b_mistake")
    for name in ("f_halves", "b_readback"):
        assert text(name).count(": PASS") >= 3 and "FAIL" not in text(name), name
    # the HTML reports carry their pictures (PNG)
    for name in ("shape_16x64b", "quadrants"):
        html = by_name[name].outputs[-1].data["text/html"]
        assert "data:image/png;base64," in html


def test_the_exercise_cells_are_the_graders_starters():
    from tilemagic.exercises import EXERCISES

    shown = [c.source for c in _stored("exercises_tmem").cells if c.source.startswith("%%tilecopy")]
    assert shown == [e.starter.rstrip("\n") for e in EXERCISES.values()]
    grades = [c.source for c in _stored("exercises_tmem").cells if c.source.startswith("%tilemagic grade")]
    assert grades == [f"%tilemagic grade {k}" for k in EXERCISES]
    solutions = _stored("exercises_tmem_solutions").cells
    for k in EXERCISES:  # every exercise has an asserted accepted solution and an asserted rejected mistake
        assert any(f"grade = %tilemagic grade {k}\nassert grade.passed" in c.source for c in solutions), k
        assert any(f"grade = %tilemagic grade {k}\nassert not grade.passed" in c.source for c in solutions), k
