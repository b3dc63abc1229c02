"""The stored notebooks: built from tools/build_notebooks.py, and the classroom tour's rules.

nbval (pyproject addopts) re-runs every stored notebook and compares its outputs; these tests
check what nbval cannot: that a stored notebook is the one its definition builds (no stale
cells), and that the classroom notebook keeps to its contract (issue 5, item 6): after
``%load_ext tilemagic`` every code cell is a ``%%tilecopy`` cell.
"""

import importlib.util
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"


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


@pytest.mark.parametrize("name", sorted(BUILDER.NOTEBOOKS))
def test_stored_notebook_is_built_from_its_definition(name):
    stored = _stored(name)
    defined = BUILDER.NOTEBOOKS[name]
    assert [(c.cell_type, c.source) for c in stored.cells] == [(c.cell_type, c.source) for c in defined], (
        f"notebooks/{name}.ipynb is stale: rerun `python tools/build_notebooks.py {name}`")
    for s, d in zip(stored.cells, defined):
        assert s.metadata.get("tags", []) == d.metadata.get("tags", [])


@pytest.mark.parametrize("name", sorted(BUILDER.NOTEBOOKS))
def test_every_stored_code_cell_was_executed(name):
    for cell in _code_cells(_stored(name).cells):
        assert cell.execution_count is not None, cell.source[:60]
        errors = [o for o in cell.outputs if o.output_type == "error"]
        # an error output exactly where the cell says it expects one
        assert bool(errors) == ("raises-exception" in cell.metadata.get("tags", [])), cell.source[:60]


def _classroom_cells():
    return _code_cells(BUILDER.NOTEBOOKS["classroom_tmem"])


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
    assert "UserWarning: copy/fallback" in text("fallback_demo")
    assert "UserWarning" not in text("gmem_smem_4x8")
    assert "gmem_smem   10    chosen" in text("gmem_smem_4x8")
    assert "tilecopy:5:1: DispatchError" in text("b_mistake") and "frag(32x32b)" in text("b_mistake")
    for name in ("f_halves", "b_readback"):
        assert text(name).count(": PASS") >= 3 and "FAIL" not in text(name), name
    # the HTML reports carry their pictures (PNG)
    for name in ("shape_16x64b", "quadrants"):
        html = by_name[name].outputs[-1].data["text/html"]
        assert "data:image/png;base64," in html
