"""Issue 5 evidence: the quickstart notebook in a real JupyterLab, in a real (headless) chromium.

JupyterLab is started on localhost with a random port and token (fixture below), the
notebook is opened without stored outputs and every cell is run through the UI.  The
test then checks, in the browser's DOM and computed styles: the IR ∥ CUDA panes side by
side, the why-table, the heatmap image, the hover line mapping (description -> IR and
CUDA, and back), click-to-pin (the report's script ran: outputs of a live session are
trusted), and the widget stage view (tabs; selecting a source line highlights its IR
line through a kernel round trip).  Screenshots go to tests/browser/artifacts/ (ignored
by git).  A second test opens nbconvert's static HTML export of the stored notebook.  Another
runs a notebook of its own: the labextension scrolls the widget view's code panes to the lines
the source-line selector highlights.

Browser: Debian's chromium through Playwright; Playwright's own browser download is never
used (``playwright install`` is not run): the tests launch ``/usr/bin/chromium`` (or
``$TILEMAGIC_CHROMIUM``).  Where chromium, Playwright or JupyterLab is missing the tests
are skipped on a developer machine and FAIL under CI (``CI`` set), so a CI run can never
pass without having driven a browser.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

HIGHLIGHT = "rgba(255, 213, 0, 0.33)"  # html.HIGHLIGHT background
PINNED = "rgba(255, 170, 0, 0.5)"  # html._PINNED
TIMEOUT_MS = 240_000

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
CHROMIUM = os.environ.get("TILEMAGIC_CHROMIUM", "/usr/bin/chromium")
# flags for a machine without network or GPU: no background connections, no sandbox (root in CI)
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]


def _missing(what: str):
    if os.environ.get("CI"):
        pytest.fail(f"browser test cannot run in CI: {what} (.ci/run installs chromium, jupyterlab and playwright)")
    pytest.skip(f"{what}")


@pytest.fixture(scope="session")
def browser():
    """A headless Debian chromium driven by Playwright (sync API)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("playwright is not installed (pip install -e '.[browser]')")
    exe = CHROMIUM if os.path.isabs(CHROMIUM) else shutil.which(CHROMIUM)
    if not exe or not os.path.exists(exe):
        _missing(f"chromium not found at {CHROMIUM} (apt-get install chromium)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _strip_outputs(src: Path, dst: Path):
    nb = json.loads(src.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
    nb["metadata"].pop("widgets", None)
    dst.write_text(json.dumps(nb, indent=1), encoding="utf-8")


def _without_widget_state(src: Path, dst: Path):
    nb = json.loads(src.read_text(encoding="utf-8"))
    nb["metadata"].pop("widgets", None)
    # (a signature is the notebook's digest: two identical copies would be trusted together)
    nb["metadata"]["tilemagic_copy"] = dst.name
    dst.write_text(json.dumps(nb, indent=1), encoding="utf-8")


@pytest.fixture(scope="session")
def jupyterlab(tmp_path_factory):
    """A JupyterLab server on 127.0.0.1 (random free port, random token) serving a copy of the notebooks.

    The notebooks are copied without their stored outputs, so every output the test sees
    was produced by this run.  The kernel is this interpreter's ``python3`` with the
    repository first on ``PYTHONPATH``.  Yields ``(base_url, token, root_dir)``.
    """
    try:
        import jupyterlab  # noqa: F401
    except ImportError:
        _missing("jupyterlab is not installed (pip install -e '.[browser]')")
    root = tmp_path_factory.mktemp("lab")
    for nb in (ROOT / "notebooks").glob("*.ipynb"):
        _strip_outputs(nb, root / nb.name)
    home = tmp_path_factory.mktemp("home")
    # the stored quickstart as JupyterLab saves it by default (outputs kept, no widget state), reopened: once
    # untrusted (never run here: JupyterLab sanitises its outputs), once trusted (`jupyter trust`, below)
    for name in ("reopened_untrusted.ipynb", "reopened_trusted.ipynb"):
        _without_widget_state(ROOT / "notebooks" / "quickstart.ipynb", root / name)
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(os.environ)
    env.update(
        PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]),
        JUPYTER_CONFIG_DIR=str(home / "config"), JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        IPYTHONDIR=str(home / "ipython"), HOME=str(home), MPLBACKEND="Agg",
    )
    # user settings: no "official Jupyter news?" toast over the outputs
    settings = home / "lab-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}', encoding="utf-8")
    env["JUPYTERLAB_SETTINGS_DIR"] = str(home / "lab-settings")
    env["JUPYTER_DATA_DIR"] = str(home / "data")  # (the notebook signatures: a fresh database)
    # the repository's prebuilt labextension (what the wheel ships), whatever copy is installed
    ext = home / "jupyter-path" / "labextensions" / "tilemagic-labextension"
    ext.parent.mkdir(parents=True)
    ext.symlink_to(ROOT / "tilemagic" / "labextension", target_is_directory=True)
    env["JUPYTER_PATH"] = os.pathsep.join([str(home / "jupyter-path")] + [p for p in env.get("JUPYTER_PATH", "")
                                                                            .split(os.pathsep) if p])
    subprocess.run([sys.executable, "-m", "jupyter", "trust", str(root / "reopened_trusted.ipynb")], env=env,
                   check=True, capture_output=True)
    log = open(home / "jupyterlab.log", "w", encoding="utf-8")  # noqa: SIM115 - closed below
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
           "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
           "--LabApp.news_url=", "--ServerApp.open_browser=False"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # CI runs as root
        cmd.append("--allow-root")
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError("JupyterLab exited:\n" + (home / "jupyterlab.log").read_text()[-3000:])
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("JupyterLab did not start in 120 s:\n"
                                   + (home / "jupyterlab.log").read_text()[-3000:])
            time.sleep(0.5)
        yield base, token, root
    finally:
        _stop(proc)
        log.close()


def _stop(proc):
    """End the server and its kernels (the process group this fixture started)."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


def bg(locator) -> str:
    return locator.evaluate("e => getComputedStyle(e).backgroundColor")


#: The WCAG contrast ratio of an element's text against the first opaque background behind it (translucent
#: tints composed over it), in the browser: computed colours, not stylesheet text.
CONTRAST_JS = """e => {
  const rgba = s => { const m = s.match(/[\\d.]+/g).map(Number); return [m[0], m[1], m[2], m.length > 3 ? m[3] : 1]; };
  const over = (a, b) => [0, 1, 2].map(i => a[i] * a[3] + b[i] * (1 - a[3])).concat([1]);
  let layers = [], n = e;
  while (n && n.nodeType === 1) { const c = rgba(getComputedStyle(n).backgroundColor); if (c[3] > 0) layers.push(c);
    if (c[3] >= 1) break; n = n.parentElement; }
  let bgc = [255, 255, 255, 1];
  for (let i = layers.length - 1; i >= 0; i--) bgc = over(layers[i], bgc);
  const fg = over(rgba(getComputedStyle(e).color), bgc);
  const lum = c => { const v = c.slice(0, 3).map(x => { x /= 255; return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2]; };
  const [a, b] = [lum(fg), lum(bgc)].sort((x, y) => y - x);
  return (a + 0.05) / (b + 0.05);
}"""


def assert_legible(report, what: str, minimum: float = 4.5):
    """Section headings, table headers, captions, pane headers and code of ``report`` read against their
    backgrounds (WCAG AA: 4.5:1; the badges carry their own colours)."""
    checks = {
        "section heading": report.locator("div", has_text=re.compile("^Dispatch$")).first,
        "table header": report.locator(".tm-dispatch th").first,
        "pane header": report.locator(".tm-grid .tm-pane > div").first,
        "caption": report.locator("div", has_text=re.compile("^allocated ")).first,
        "banner": report.locator(".tm-banner").first,
        "code": report.locator(".tm-ir .tm-line").first,
    }
    for name, loc in checks.items():
        ratio = loc.evaluate(CONTRAST_JS)
        assert ratio >= minimum, f"{what}: {name} contrast {ratio:.2f} < {minimum}"


def set_theme(page, name: str):
    """Settings › Theme › NAME, then wait for JupyterLab to apply it."""
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Settings$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Theme$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile("^" + re.escape(name) + "$")).click()
    light = "true" if "Light" in name else "false"
    page.wait_for_selector(f"body[data-jp-theme-light='{light}']", state="attached", timeout=30_000)
    page.wait_for_timeout(500)  # (the theme's stylesheet swaps in)


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
    page.wait_for_timeout(1000)
    dialog = page.locator(".jp-Dialog")
    if dialog.count():  # (a dialog over the notebook would swallow every click: say what it said)
        text = dialog.first.inner_text()
        print(f"DIALOG on {name}: {text!r}")
        assert "rror" not in text, text
        dialog.first.locator(".jp-Dialog-button.jp-mod-accept").first.click()
    return page


def run_notebook(browser, jupyterlab, name: str, selector: str):
    """Open ``name``, run every cell; ``(page, the first output element matching selector)``, scrolled into view."""
    page = open_notebook(browser, jupyterlab, name)
    run_all_cells(page)
    found = page.locator(f".jp-OutputArea-output {selector}").first
    found.wait_for()
    found.scroll_into_view_if_needed()
    return page, found


def test_quickstart_in_jupyterlab(browser, jupyterlab, artifacts):
    page, report = run_notebook(browser, jupyterlab, "quickstart.ipynb", ".tm-report")

    # the side-by-side IR and CUDA panes
    grid = report.locator(".tm-grid")
    ir_pane, cu_pane = grid.locator(".tm-pane").nth(0), grid.locator(".tm-pane").nth(1)
    assert ir_pane.is_visible() and cu_pane.is_visible()
    a, b = ir_pane.bounding_box(), cu_pane.bounding_box()
    assert abs(a["y"] - b["y"]) < 2 and b["x"] >= a["x"] + a["width"] - 1 and a["width"] > 300
    assert "IR (TIR-like)" in ir_pane.inner_text() and "CUDA (native, sm_100a)" in cu_pane.inner_text()

    # the labextension: the %%tilecopy cell's editor is the cell language, its words get CodeMirror token classes
    editor = page.locator(".jp-CodeCell .jp-InputArea .cm-content", has_text="%%tilecopy tmem_roundtrip").first
    editor.scroll_into_view_if_needed()
    assert editor.get_attribute("data-language") == "tilecopy"
    keyword_colour = page.evaluate("getComputedStyle(document.body).getPropertyValue('--jp-mirror-editor-keyword-color')")
    for word in ("kernel", "global", "tmem", "copy_async", "wait", "check"):
        tok = editor.locator("span", has_text=re.compile(f"^{word}$")).first
        assert tok.get_attribute("class"), word  # a CodeMirror highlight class
        assert tok.evaluate("e => getComputedStyle(e).color") == page.evaluate(
            "c => { const d = document.createElement('span'); d.style.color = c; document.body.appendChild(d); "
            "const v = getComputedStyle(d).color; d.remove(); return v; }", keyword_colour.strip()), word
    kinds = {w: editor.locator("span", has_text=re.compile(f"^{re.escape(w)}$")).first.get_attribute("class")
             for w in ("float16", "tid_in_wg", "128", "wg")}
    assert len(set(kinds.values()) | {editor.locator("span", has_text=re.compile("^kernel$")).first
                                      .get_attribute("class")}) >= 4, kinds  # dtypes, axes, numbers, keywords differ
    comment = page.locator(".jp-CodeCell .cm-content", has_text="%load_ext tilemagic").first
    assert comment.get_attribute("data-language") != "tilecopy"  # other cells stay IPython
    editor.screenshot(path=str(artifacts / "jupyterlab_tilecopy_cell_highlighted.png"))

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

    # the panes' toolbar: wrap long lines, line numbers, stacked panes
    assert report.locator(".tm-stripped").first.is_hidden()  # trusted here: the hover note hides itself
    long_line = report.locator(".tm-cu .tm-line", has_text="tcgen05.st").first
    one_line = long_line.evaluate("e => e.getBoundingClientRect().height")
    report.locator("[data-tm-toggle=wrap]").click()
    assert report.get_attribute("data-tm-wrap") == ""
    assert long_line.evaluate("e => e.getBoundingClientRect().height") > 1.5 * one_line  # wrapped, all visible
    assert cu_pane.evaluate("p => p.scrollWidth <= p.clientWidth + 1")  # nothing cut off at the right
    report.locator("[data-tm-toggle=numbers]").click()
    first_ir = report.locator(".tm-ir .tm-line").first
    assert first_ir.evaluate("e => getComputedStyle(e, '::before').content") == "counter(tm-ln)" or \
        first_ir.evaluate("e => getComputedStyle(e, '::before').content") not in ("none", "normal", "")
    assert first_ir.evaluate("e => e.getBoundingClientRect().left") < \
        first_ir.evaluate("e => { const r = document.createRange(); r.selectNodeContents(e); "
                          "return [...r.getClientRects()].pop().left; }") + 1
    report.locator("[data-tm-toggle=stack]").click()
    a, b = ir_pane.bounding_box(), cu_pane.bounding_box()
    assert b["y"] >= a["y"] + a["height"] - 1 and abs(a["x"] - b["x"]) < 2  # one under the other
    report.locator(".tm-grid").scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "jupyterlab_quickstart_wrap_numbers_stacked.png"))
    for k in ("wrap", "numbers", "stack"):
        report.locator(f"[data-tm-toggle={k}]").click()
    assert report.get_attribute("data-tm-wrap") is None

    # legible in both themes: computed text colours against the computed backgrounds
    assert_legible(report, "JupyterLab Light")
    set_theme(page, "JupyterLab Dark")
    assert_legible(report, "JupyterLab Dark")
    report.locator(".tm-source").evaluate("e => e.scrollIntoView({block: 'start'})")
    page.screenshot(path=str(artifacts / "jupyterlab_quickstart_dark.png"))
    img = report.locator(".tm-heatmap img").first
    img.scroll_into_view_if_needed()
    assert img.evaluate("i => { const c = document.createElement('canvas'); c.width = 4; c.height = 4; "
                        "const x = c.getContext('2d'); x.drawImage(i, 0, 0, 4, 4, 0, 0, 4, 4); "
                        "return x.getImageData(1, 1, 1, 1).data[3]; }") == 0  # transparent: no white block
    page.screenshot(path=str(artifacts / "jupyterlab_quickstart_dark_heatmap.png"))
    set_theme(page, "JupyterLab Light")

    # the widget stage view: tabs, a live source-line selector (kernel round trip), the heatmap image
    view = page.locator(".jp-OutputArea-output .tm-widget-view").first
    view.scroll_into_view_if_needed()
    area = view.locator("xpath=ancestor::div[contains(@class, 'jp-OutputArea ')][1]")
    assert area.locator(".tm-fallback").count() == 1 and area.locator(".tm-fallback").is_hidden()
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


def _reopened(browser, jupyterlab, name):
    page = open_notebook(browser, jupyterlab, name)
    page.wait_for_selector(".jp-OutputArea-output .tm-report")
    return page


def test_a_reopened_notebook_shows_the_static_report_where_the_widget_was(browser, jupyterlab, artifacts):
    for name in ("reopened_trusted.ipynb", "reopened_untrusted.ipynb"):
        page = _reopened(browser, jupyterlab, name)
        if name == "reopened_trusted.ipynb":  # the widget renderer runs and finds no model
            broken = page.locator(".jp-OutputArea-output", has_text="Error displaying widget").first
            broken.wait_for(timeout=60_000)
            area = broken.locator("xpath=ancestor::div[contains(@class, 'jp-OutputArea ')][1]")
        else:  # untrusted: JupyterLab does not render the widget at all (it shows the bundle's text)
            page.locator(".tm-fallback").first.scroll_into_view_if_needed()
            area = page.locator(".tm-fallback").first.locator(
                "xpath=ancestor::div[contains(@class, 'jp-OutputArea ')][1]")
            area.scroll_into_view_if_needed()
            assert "static report is the output above" in area.inner_text()
        fallback = area.locator(".tm-fallback .tm-report").first  # the static report, in the widget's cell
        fallback.scroll_into_view_if_needed()
        assert fallback.is_visible() and fallback.locator(".tm-grid .tm-pane").count() == 2
        assert "IR (TIR-like)" in fallback.inner_text()
        page.screenshot(path=str(artifacts / f"jupyterlab_{name.removesuffix('.ipynb')}_widget_fallback.png"))
        page.close()


def test_an_untrusted_notebook_says_why_hover_is_off(browser, jupyterlab, artifacts):
    page = _reopened(browser, jupyterlab, "reopened_untrusted.ipynb")
    report = page.locator(".jp-OutputArea-output .tm-report").first
    report.scroll_into_view_if_needed()
    assert report.locator("style").count() == 0  # JupyterLab sanitised the untrusted output
    note = report.locator(".tm-stripped")
    assert note.is_visible() and "Trust" in note.inner_text() and "jupyter trust" in note.inner_text()
    assert report.locator(".tm-tools").is_hidden()  # the toolbar needs the script: not offered
    assert_legible(report, "untrusted, light")
    page.screenshot(path=str(artifacts / "jupyterlab_untrusted_note.png"))
    page.close()
    trusted = _reopened(browser, jupyterlab, "reopened_trusted.ipynb")
    report = trusted.locator(".jp-OutputArea-output .tm-report").first
    assert report.locator(".tm-stripped").first.is_hidden()  # the style survived: no note
    trusted.close()


def test_static_html_export_keeps_the_line_mapping(browser, tmp_path, artifacts):
    """nbconvert's HTML export of the stored notebook: the report renders, hover and pin work without a kernel."""
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
    # the widget cell: the static report is in the export and visible (no live widget in a static page)
    fallback = page.locator(".tm-fallback .tm-report").first
    fallback.scroll_into_view_if_needed()
    assert fallback.is_visible() and fallback.locator(".tm-grid .tm-pane").count() == 2
    page.screenshot(path=str(artifacts / "nbconvert_quickstart_widget_fallback.png"))
    page.close()


#: A pane's scroll state in the browser: its scrollTop, whether its first highlighted line (``data-tm-hl``) lies
#: inside the pane's visible rectangle (below its sticky header), and whether that line is below the fold (further
#: down than the pane is high, so it is out of view at scrollTop 0).  None without a highlighted line.
PANE_VIEW_JS = """p => {
  const l = p.querySelector('.tm-line[data-tm-hl]');
  if (!l || p.clientHeight === 0) return null;
  const r = p.getBoundingClientRect(), a = l.getBoundingClientRect();
  const top = r.top + p.clientTop + p.firstElementChild.offsetHeight, bottom = r.top + p.clientTop + p.clientHeight;
  return {scrollTop: p.scrollTop, inside: a.top >= top - 0.5 && a.bottom <= bottom + 0.5,
          belowFold: a.top - r.top - p.clientTop + p.scrollTop > p.clientHeight};
}"""
#: The scroll offset of the nearest scrolling ancestor of an element (the notebook's own scroll box).
SCROLLER_TOP_JS = """e => { let n = e.parentElement;
  while (n && !(n.scrollHeight > n.clientHeight && /(auto|scroll)/.test(getComputedStyle(n).overflowY))) n = n.parentElement;
  return n ? n.scrollTop : null; }"""


def _write_notebook(path: Path, sources: list[str]):
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(path))


def _choose_line(view, label: str):
    """Pick ``label`` in the view's source-line selector the way a keyboard does (a ``change`` event), without
    Playwright's scrolling of the control into view: what scrolls afterwards is the page's own doing."""
    view.locator("select").first.evaluate(
        "(s, label) => { const i = [...s.options].findIndex(o => o.textContent.replace(/\u00a0/g, ' ') === label); if (i < 0) throw label; "
        "s.selectedIndex = i; s.dispatchEvent(new Event('change', {bubbles: true})); }", label)


def test_widget_panes_scroll_to_the_selected_source_line(browser, jupyterlab, artifacts):
    """The labextension scrolls each widget pane (IR, CUDA, CUDA emulated) to its first highlighted line when the
    source-line selector re-renders it -- a hidden tab's pane when it is shown, a shown one at once -- keeps the
    user's scroll when the selector goes back to "(none)", hides the no-extension excerpt, and never scrolls the
    notebook."""
    from tilemagic.cli import demo_source

    _, _, root = jupyterlab
    body = demo_source("tmem_roundtrip").split("\n", 1)[1]  # (its own first line is the magic line)
    _write_notebook(root / "pane_scroll.ipynb", ["%load_ext tilemagic",
                                                 f"%%tilecopy pane_scroll --view widget --launch sim\n{body}"])
    cell = ["%%tilecopy", *body.splitlines()]

    def line_of(start: str) -> int:
        return next(n for n, line in enumerate(cell, start=1) if line.startswith(start))

    def label(n: int) -> str:  # (the selector's option: view._source_options)
        return f"L{n}: {cell[n - 1].strip()}"[:80]

    last, first = line_of("wg.copy B <- b"), line_of("local  a:")  # the last op; the first declaration
    page, view = run_notebook(browser, jupyterlab, "pane_scroll.ipynb", ".tm-widget-view")
    tabs = view.locator(".lm-TabBar-tab")
    panes = {t: view.locator(".tm-pane", has=page.locator(f"pre.{role}")) for t, role in
             (("IR", "tm-ir"), ("CUDA", "tm-cu"), ("CUDA (emulated)", "tm-emu"))}
    titles = [t.strip() for t in tabs.all_inner_texts()]

    # chosen on the Description tab: the code panes are re-rendered while hidden, and placed when shown
    view.locator("select").first.select_option(label=label(last))
    for title, pane in panes.items():
        pane.locator(f".tm-L{last}[data-tm-hl]").first.wait_for(state="attached")
        tabs.nth(titles.index(title)).click()
        page.wait_for_function(f"p => ({PANE_VIEW_JS})(p)?.inside", arg=pane.element_handle(), timeout=30_000)
        state = pane.evaluate(PANE_VIEW_JS)
        assert state["belowFold"] and state["scrollTop"] > 0, (title, state)  # it had to scroll, and it did
        assert f"L{last}: lines " in pane.locator(".tm-hl-note").inner_text(), title
        if pane.locator(".tm-hl-excerpt").count():  # (the copy for front ends without the extension)
            assert pane.locator(".tm-hl-excerpt").is_hidden(), title
        if title == "IR":
            view.screenshot(path=str(artifacts / "jupyterlab_widget_ir_scrolled.png"))
    view.screenshot(path=str(artifacts / "jupyterlab_widget_emulated_scrolled.png"))

    # chosen with the CUDA tab shown: a line above the pane's window (its register declaration) scrolls into view
    tabs.nth(titles.index("CUDA")).click()
    cuda = panes["CUDA"]
    page.wait_for_function(f"p => ({PANE_VIEW_JS})(p)?.inside", arg=cuda.element_handle(), timeout=30_000)
    before, notebook_top = cuda.evaluate("p => p.scrollTop"), view.evaluate(SCROLLER_TOP_JS)
    _choose_line(view, label(first))
    cuda.locator(f".tm-L{first}[data-tm-hl]").first.wait_for()
    page.wait_for_function(f"p => ({PANE_VIEW_JS})(p)?.inside", arg=cuda.element_handle(), timeout=30_000)
    assert cuda.evaluate("p => p.scrollTop") < before
    assert view.evaluate(SCROLLER_TOP_JS) == notebook_top  # the pane scrolled, the notebook did not
    view.screenshot(path=str(artifacts / "jupyterlab_widget_cuda_scrolled.png"))

    # the user's own scroll is kept when nothing is highlighted
    cuda.evaluate("p => { p.scrollTop = 100; }")
    page.wait_for_timeout(300)  # (the scroll event)
    _choose_line(view, "(none)")
    cuda.locator(".tm-line[data-tm-hl]").first.wait_for(state="detached")
    page.wait_for_timeout(300)
    assert cuda.evaluate("p => p.scrollTop") == 100
    assert view.evaluate(SCROLLER_TOP_JS) == notebook_top

    # the PTX pane, compiled when its tab is first opened (nvcc -ptx -lineinfo; .ci/run requires nvcc)
    if shutil.which("nvcc") or os.environ.get("CI"):
        _choose_line(view, label(last))
        cuda.locator(f".tm-L{last}[data-tm-hl]").first.wait_for()
        tabs.nth(titles.index("PTX")).click()
        ptx = view.locator(".tm-pane", has=page.locator("pre.tm-ptx"))
        ptx.wait_for(timeout=120_000)
        page.wait_for_function(f"p => ({PANE_VIEW_JS})(p)?.inside", arg=ptx.element_handle(), timeout=30_000)
        state = ptx.evaluate(PANE_VIEW_JS)
        assert state["belowFold"] and state["scrollTop"] > 0, state
        view.screenshot(path=str(artifacts / "jupyterlab_widget_ptx_scrolled.png"))
    page.close()
