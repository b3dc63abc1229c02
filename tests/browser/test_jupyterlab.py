"""Issue 5 evidence: the quickstart notebook in a real JupyterLab, in a real (headless) chromium.

JupyterLab is started on localhost with a random port and token (conftest.py), the
notebook is opened without stored outputs and every cell is run through the UI.  The
test then checks, in the browser's DOM and computed styles: the IR ∥ CUDA panes side by
side, the why-table, the heatmap image, the hover line mapping (description -> IR and
CUDA, and back), click-to-pin (the report's script ran: outputs of a live session are
trusted), and the widget stage view (tabs; selecting a source line highlights its IR
line through a kernel round trip).  Screenshots go to tests/browser/artifacts/ (ignored
by git).  A second test opens nbconvert's static HTML export of the stored notebook.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.browser

HIGHLIGHT = "rgb(255, 241, 168)"  # html.HIGHLIGHT background #fff1a8
PINNED = "rgb(255, 215, 110)"  # #ffd76e
TIMEOUT_MS = 240_000


def bg(locator) -> str:
    return locator.evaluate("e => getComputedStyle(e).backgroundColor")


def run_all_cells(page):
    """Run every cell from the top; after an error cell (tagged raises-exception) go on below it."""
    page.locator(".jp-Notebook .jp-Cell").first.click()
    for _ in range(3):  # an error stops "Run All"; continue from the cell below the error
        page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
        label = "Run All Cells" if _ == 0 else "Run Selected Cell and All Below"
        page.locator(".lm-Menu-itemLabel", has_text=re.compile("^" + label + "$")).click()
        page.wait_for_function(
            """() => { const ps = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')];
                       return ps.length > 0 && !ps.some(p => p.textContent.includes('*')); }""",
            timeout=TIMEOUT_MS)
        prompts = page.locator(".jp-Notebook .jp-CodeCell .jp-InputPrompt").all_text_contents()
        todo = [i for i, p in enumerate(prompts) if not re.search(r"\[\d+\]", p)]
        if not todo:
            return
        page.locator(".jp-Notebook .jp-CodeCell").nth(todo[0]).click()
    raise AssertionError(f"cells never ran: prompts {prompts}")


def open_notebook(browser, jupyterlab, name):
    base, token, _ = jupyterlab
    page = browser.new_page(viewport={"width": 1500, "height": 1100})
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(f"{base}/lab/tree/{name}?token={token}&reset")
    page.wait_for_selector(".jp-Notebook .jp-Cell")
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=TIMEOUT_MS)
    return page


def test_quickstart_in_jupyterlab(browser, jupyterlab, artifacts):
    page = open_notebook(browser, jupyterlab, "quickstart.ipynb")
    run_all_cells(page)
    report = page.locator(".jp-OutputArea-output .tm-report").first
    report.wait_for()
    report.scroll_into_view_if_needed()

    # the side-by-side IR and CUDA panes
    grid = report.locator(".tm-grid")
    ir_pane, cu_pane = grid.locator(".tm-pane").nth(0), grid.locator(".tm-pane").nth(1)
    assert ir_pane.is_visible() and cu_pane.is_visible()
    a, b = ir_pane.bounding_box(), cu_pane.bounding_box()
    assert abs(a["y"] - b["y"]) < 2 and b["x"] >= a["x"] + a["width"] - 1 and a["width"] > 300
    assert "IR (TIR-like)" in ir_pane.inner_text() and "CUDA (native, sm_100a)" in cu_pane.inner_text()

    # the why-table
    table = report.locator(".tm-dispatch table").first
    assert table.is_visible()
    assert "variant" in table.inner_text() and "chosen" in report.locator(".tm-dispatch").nth(1).inner_text()

    # the heatmap image, decoded by the browser
    img = report.locator(".tm-heatmap img").first
    img.scroll_into_view_if_needed()
    assert img.is_visible()
    assert img.evaluate("i => i.complete && i.naturalWidth") == 900

    # hover a description line: its IR and CUDA lines light up, others do not
    src = report.locator(".tm-src .tm-line", has_text="wg.copy_async T <- a")
    n = src.get_attribute("data-src-line")
    src.scroll_into_view_if_needed()
    src.hover()
    ir_lines = report.locator(f".tm-ir .tm-L{n}")
    cu_lines = report.locator(f".tm-cu .tm-L{n}")
    assert ir_lines.count() >= 1 and cu_lines.count() >= 1
    assert bg(ir_lines.first) == HIGHLIGHT and bg(cu_lines.first) == HIGHLIGHT
    other = report.locator(f".tm-ir .tm-line:not(.tm-L{n})").first
    assert bg(other) != HIGHLIGHT
    page.screenshot(path=str(artifacts / "jupyterlab_quickstart_hover.png"))

    # ... and the reverse: hovering a CUDA line lights up its description line
    wait_line = report.locator(".tm-src .tm-line", has_text="wait st")
    m = wait_line.get_attribute("data-src-line")
    report.locator(f".tm-cu .tm-L{m}").first.hover()
    assert bg(wait_line) == HIGHLIGHT and bg(src) != HIGHLIGHT

    # click to pin (the report's script ran in JupyterLab): stays after the mouse leaves
    src.click()
    page.mouse.move(2, 2)
    assert report.get_attribute("data-tm-pin") == n
    assert bg(ir_lines.first) == PINNED and bg(cu_lines.first) == PINNED
    report.locator(".tm-source").evaluate("e => e.scrollIntoView({block: 'start'})")
    page.screenshot(path=str(artifacts / "jupyterlab_quickstart_pinned.png"))
    src.click()
    assert report.get_attribute("data-tm-pin") is None

    # the widget stage view: tabs, a live source-line selector (kernel round trip), the heatmap image
    view = page.locator(".jp-OutputArea-output .widget-vbox").first
    view.scroll_into_view_if_needed()
    tabs = view.locator(".lm-TabBar-tab")
    titles = [t.strip() for t in tabs.all_inner_texts()]
    assert titles == ["Description", "Dispatch", "IR", "CUDA", "CUDA (emulated)", "PTX", "Heatmaps", "Launch"]
    view.locator("select").first.select_option(label=f"L{n}: wg.copy_async T <- a")
    tabs.nth(2).click()
    hl = view.locator(f".tm-ir .tm-L{n}").first
    hl.wait_for()
    page.wait_for_function(f"e => getComputedStyle(e).backgroundColor === '{HIGHLIGHT}'",
                           arg=hl.element_handle(), timeout=60_000)
    tabs.nth(6).click()
    heat = view.locator(".widget-image").first
    heat.wait_for()
    assert heat.evaluate("i => i.complete && i.naturalWidth") == 900
    view.screenshot(path=str(artifacts / "jupyterlab_quickstart_widget.png"))

    # nothing failed unexpectedly: the only error output is the tagged error cell's
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    texts = " ".join(errors.all_inner_texts())
    assert "Traceback" not in texts and "internal error" not in texts
    page.close()


def test_static_html_export_keeps_the_line_mapping(browser, tmp_path, artifacts):
    """nbconvert's HTML export of the stored notebook: the report renders, hover and pin work without a kernel."""
    from conftest import ROOT

    out = subprocess.run([sys.executable, "-m", "nbconvert", "--to", "html", "--output-dir", str(tmp_path),
                          str(ROOT / "notebooks" / "quickstart.ipynb")], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto((tmp_path / "quickstart.html").as_uri())
    report = page.locator(".tm-report").first
    report.wait_for()
    assert report.locator(".tm-grid .tm-pane").count() == 2
    assert report.locator(".tm-heatmap img").first.evaluate("i => i.complete && i.naturalWidth") == 900
    src = report.locator(".tm-src .tm-line", has_text="wg.copy_async b <- T")
    n = src.get_attribute("data-src-line")
    src.scroll_into_view_if_needed()
    src.hover()
    assert bg(report.locator(f".tm-ir .tm-L{n}").first) == HIGHLIGHT
    assert bg(report.locator(f".tm-cu .tm-L{n}").first) == HIGHLIGHT
    src.click()
    page.mouse.move(2, 2)
    assert report.get_attribute("data-tm-pin") == n
    page.screenshot(path=str(artifacts / "nbconvert_quickstart.png"))
    page.close()
