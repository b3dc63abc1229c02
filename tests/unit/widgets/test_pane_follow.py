"""The widget view's panes follow its source-line selector (issue 15, item 4).

What the Python side emits for a selected line ``N``: ``data-tm-highlight="N"`` on each re-rendered pane,
``data-tm-hl`` on each highlighted line (what the JupyterLab extension scrolls to), a header note naming the
pane's lines of ``N``, and -- for front ends without the extension -- an excerpt of those lines above the
code when the first one is below the fold.  The extension's own behaviour is checked in a browser
(tests/browser/test_jupyterlab.py::test_widget_panes_scroll_to_the_selected_source_line); here, that its
selectors are the names html.py writes and that the committed build contains it.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from cells import many_ops_cell
from helpers import run, run_demo

from tilemagic.widgets import html as H
from tilemagic.widgets.format import HEAD_LINES, MAX_LINES, TAIL_LINES

ROOT = Path(__file__).resolve().parents[3]
PANE_OPEN = re.compile(r'<div class="tm-pane"( data-tm-highlight="(\d+)")? style=')
HL_LINE = re.compile(r'<span class="tm-line tm-L(\d+)" data-src-line="\d+" style="[^"]*" data-tm-hl>')


def _plain(html: str) -> str:
    return re.sub(r"<[^>]+>", "", html).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _runs(idx: list[int]) -> list[str]:
    """1-based runs of 0-based indices, written out independently of html.py."""
    out: list[str] = []
    start = prev = None
    for i in idx + [None]:
        if prev is not None and i == prev + 1:
            prev = i
            continue
        if start is not None:
            out.append(f"{start + 1}" if start == prev else f"{start + 1}-{prev + 1}")
        start = prev = i
    return out


def _note(html: str) -> str:
    m = re.search(r'<span class="tm-hl-note"[^>]*> · ([^<]*)</span>', html)
    return m.group(1) if m else ""


@pytest.fixture(scope="module")
def long_view():
    """A 32-thread kernel of 12 global -> shared -> global repeats: about 110 IR and 60 CUDA lines."""
    return run(many_ops_cell(12, name="follow"), launch="off").widget()


def test_a_selected_line_marks_its_panes_and_lines(long_view):
    box, r = long_view, long_view.result
    n = max(H.mapped_lines(r))  # the last op: its lines are at the bottom of every pane
    box.line_select.value = n
    for title, text, lines in (("IR", r.ir, r.ir_lines), ("CUDA", r.cuda, r.cuda_lines)):
        value = box.panes[title].value
        assert PANE_OPEN.match(value).group(2) == str(n), title
        want = [i for i, s in enumerate(lines) if s == n]
        assert want and HL_LINE.findall(value) == [str(n)] * len(want), title
        assert _note(value) == f"L{n}: {'line' if len(want) == 1 else 'lines'} {', '.join(_runs(want))} of " \
                               f"{len(text.splitlines()):,}", title
    assert _note(box.panes["Description"].value) == f"L{n} highlighted"
    assert PANE_OPEN.match(box.panes["Description"].value).group(2) == str(n)
    assert HL_LINE.findall(box.panes["Description"].value) == [str(n)]


def test_lines_below_the_fold_are_listed_above_the_code(long_view):
    box, r = long_view, long_view.result
    last, first = max(H.mapped_lines(r)), min(H.mapped_lines(r))
    box.line_select.value = last
    ir = box.panes["IR"].value
    want = [i for i, s in enumerate(r.ir_lines) if s == last]
    assert want[0] >= H.FOLD_LINES  # (the cell is long enough for the test to mean something)
    excerpt = ir[ir.index('<div class="tm-hl-excerpt"'):ir.index('<pre class="tm-code tm-ir"')]
    assert f"(from line {want[0] + 1}" in _plain(excerpt)
    ir_text = r.ir.splitlines()
    listed = _plain(excerpt[excerpt.index("<pre"):]).splitlines()
    assert listed == [f"{str(i + 1).rjust(len(str(len(ir_text))))} {ir_text[i]}" for i in want[:H.EXCERPT_LINES]]
    assert ir.index("tm-hl-excerpt") < ir.index("<pre class=\"tm-code")  # before the code: in view at the top
    # lines already in view at the top of the pane: named in the header, no excerpt
    box.line_select.value = first
    ir = box.panes["IR"].value
    assert [i for i, s in enumerate(r.ir_lines) if s == first][0] < H.FOLD_LINES
    assert "tm-hl-excerpt" not in ir and _note(ir).startswith(f"L{first}: ")


def test_no_selection_is_the_plain_pane(long_view):
    box = long_view
    box.line_select.value = 0
    plain = {t: box.panes[t].value for t in ("Description", "IR", "CUDA")}
    assert plain == {t: box._render(t, None) for t in plain}  # what the view was built with
    box.line_select.value = max(H.mapped_lines(box.result))
    box.line_select.value = 0
    for t, value in plain.items():
        assert box.panes[t].value == value
        assert "data-tm-hl" not in value and "tm-hl-note" not in value and "tm-hl-excerpt" not in value, t
        assert PANE_OPEN.match(value).group(1) is None, t
    page = box.result.html()  # the static report (hover/pin) never carries the selector's marks
    assert "data-tm-hl" not in page and "data-tm-highlight" not in page and "tm-hl-excerpt" not in page


def test_a_pane_with_no_line_of_the_selection_says_so():
    r = run_demo("tmem_roundtrip", launch="off")
    n = 5  # `tmem T: ...`: a declaration that prints one IR comment line and no CUDA
    assert n in {s for s in r.ir_lines if s is not None} and n not in {s for s in r.cuda_lines if s is not None}
    cuda = H.cuda_pane_html(r, n)
    assert _note(cuda) == f"L{n}: no lines here" and "data-tm-hl" not in cuda
    assert PANE_OPEN.match(cuda).group(2) == str(n)


def test_a_collapsed_pane_counts_the_highlighted_lines_it_does_not_show():
    reps = 60
    r = run(many_ops_cell(reps, name="collapsed"), launch="off")
    total = len(r.ir.splitlines())
    assert total > MAX_LINES
    hidden = range(HEAD_LINES, total - TAIL_LINES)
    n = next(s for i, s in enumerate(r.ir_lines) if i in hidden and s is not None)
    want = [i for i, s in enumerate(r.ir_lines) if s == n]
    out = sum(1 for i in want if i in hidden)
    ir = H.ir_pane_html(r, n)
    assert _note(ir).endswith(f" of {total:,} ({out:,} not shown)")
    assert len(HL_LINE.findall(ir)) == len(want) - out


def test_the_labextension_follows_the_names_html_writes():
    src = (ROOT / "labextension" / "src" / "panes.ts").read_text(encoding="utf-8")
    for name in (f"'.tm-line[{H.HL_ATTR}]'", "'.tm-hl-excerpt'", f"'.{H.WIDGET_CLASS}'", "'tm-pane'"):
        assert name in src, name
    assert "watchNotebooks" in (ROOT / "labextension" / "src" / "index.ts").read_text(encoding="utf-8")
    built = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "tilemagic" / "labextension" / "static")
                    .glob("*.js"))
    for name in (f".tm-line[{H.HL_ATTR}]", ".tm-hl-excerpt", "tilemagic-labextension:follow-lines"):
        assert name in built, f"the committed build lacks {name}: rebuild labextension/ (npm run build)"


@pytest.mark.nvcc
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_the_ptx_pane_follows_the_selection_too():
    box = run_demo("tmem_roundtrip").widget()
    box.tab.selected_index = box.tab.titles.index("PTX")
    n = max(H.mapped_lines(box.result))
    box.line_select.value = n
    ptx = box.panes["PTX"].value
    assert PANE_OPEN.match(ptx).group(2) == str(n) and _note(ptx).startswith(f"L{n}: line")
    assert HL_LINE.findall(ptx) and set(HL_LINE.findall(ptx)) == {str(n)}
