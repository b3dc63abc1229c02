"""%%tilecopy and %tilemagic through a real IPython InteractiveShell (no kernel)."""

import numpy as np
import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

from tilemagic import TileCopyResult, TileMagicError, TileSyntaxError
from tilemagic.cli import demo_source


def body(name):
    return demo_source(name).split("\n", 1)[1]


def test_magics_registered_and_demo_runs(ip):
    assert "tilecopy" in ip.magics_manager.magics["cell"]
    assert "tilemagic" in ip.magics_manager.magics["line"]
    res = ip.run_cell_magic("tilecopy", "tmem_roundtrip --launch sim", body("tmem_roundtrip"))
    assert isinstance(res, TileCopyResult)
    assert res.launch.backend == "sim" and res.launch.passed
    bundle = res._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}
    assert "check B == A: PASS" in bundle["text/plain"]
    assert "<img" in bundle["text/html"] and "data-src-line" in bundle["text/html"]


def test_fallback_cell_shows_its_warnings_once_in_the_report(ip, recwarn):
    with capture_output() as cap:
        r = ip.run_cell("%%tilecopy fallback_demo --launch sim\n" + body("fallback_demo"))
    assert r.success and r.result.launch.passed
    assert [w for w in recwarn if "copy/fallback" in str(w.message)] == []  # not a second time on stderr
    assert "UserWarning" not in cap.stderr
    assert len(r.result.warnings) == 2 and "picked for global -> shared at scope_kind=warp" in r.result.warnings[0]
    bundle = r.result._repr_mimebundle_()
    assert bundle["text/html"].count("picked for global -&gt; shared") == 1
    assert "picked for global -> shared" in bundle["text/plain"]


def test_the_users_warning_filters_still_apply_in_the_magic(ip):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with capture_output(), pytest.raises(UserWarning, match="copy/fallback"):
            ip.run_cell_magic("tilecopy", "--launch sim", body("fallback_demo"))


def test_a_warning_the_report_does_not_list_is_still_shown(ip, monkeypatch):
    import warnings

    import tilemagic.magics

    real = tilemagic.magics.tilecopy

    def noisy(source, **kw):
        warnings.warn("a library's own warning", DeprecationWarning, stacklevel=1)
        return real(source, **kw)

    monkeypatch.setattr(tilemagic.magics, "tilecopy", noisy)
    with capture_output(), pytest.warns(DeprecationWarning, match="a library's own warning"):
        ip.run_cell_magic("tilecopy", "--launch off", "global A: float32[4]\n")


def test_error_cell_is_located_and_short(ip):
    cell = "%%tilecopy --launch sim\nkernel k threads=32\nglobal A: float32[4, 6]\nwarp.copy Q <- A\n"
    with capture_output() as cap:
        r = ip.run_cell(cell)
    assert not r.success and isinstance(r.error_in_exec, TileMagicError)
    text = cap.stdout + cap.stderr
    assert "tilecopy:4:11: TileTypeError: unknown buffer 'Q'" in text
    assert "  4 | warp.copy Q <- A" in text and "^" in text
    assert "Traceback" not in text and "site-packages" not in text
    # the next cell still works
    assert ip.run_cell("%%tilecopy --launch off\nglobal A: float32[4]\n").success


def test_syntax_error_line_counts_the_magic_line(ip):
    with capture_output():
        r = ip.run_cell("%%tilecopy\nglobal A: float64[4]\n")
    err = r.error_in_exec
    assert (err.line, err.col) == (2, 11) and "float64" in err.message


def test_bad_flag_is_a_located_error_on_the_magic_line(ip):
    with pytest.raises(TileSyntaxError) as ei:
        ip.run_cell_magic("tilecopy", "--launch moon", "global A: float32[4]\n")
    assert (ei.value.line, ei.value.col) == (1, 12) and "invalid choice: 'moon'" in ei.value.message


def test_out_namespace_and_config(ip):
    ip.user_ns["x"] = np.arange(24, dtype=np.float32).reshape(4, 6)
    ip.run_line_magic("config", "TileMagics.launch = 'sim'")
    ip.run_line_magic("config", "TileMagics.seed = 7")
    cell = "kernel k threads=32\nglobal A: float32[4, 6] = x\nglobal B: float32[4, 6]\nwarp.copy B <- A\ncheck B == A\n"
    with capture_output():
        res = ip.run_cell_magic("tilecopy", "--out R", cell)
    assert any("global -> global" in w for w in res.warnings)
    assert ip.user_ns["R"] is res and res.options.launch == "sim" and res.options.seed == 7
    np.testing.assert_array_equal(res.launch.outputs["B"], ip.user_ns["x"])


def test_text_view_has_no_html(ip):
    res = ip.run_cell_magic("tilecopy", "--view text --launch off", body("tmem_roundtrip"))
    assert set(res._repr_mimebundle_()) == {"text/plain"}


def test_widget_view_has_static_fallbacks(ip):
    import ipywidgets as W

    w = ip.run_cell_magic("tilecopy", "--view widget --launch sim", body("tmem_roundtrip"))
    assert isinstance(w.widget(), W.VBox) and "IR" in w.widget().tab.titles
    assert "application/vnd.jupyter.widget-view+json" in w._repr_mimebundle_()  # (the fallback went first)
    bundle = w._repr_mimebundle_()  # displayed again: whole
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/plain"] == w.text() and "<img" in bundle["text/html"]


def test_bad_arch_is_usage_error_and_warning_filters_are_respected(ip):
    with pytest.raises(TileSyntaxError, match="not a CUDA target"):
        ip.run_cell_magic("tilecopy", "--arch foo", body("fallback_demo"))
    ip.run_cell("import warnings; warnings.simplefilter('error')")
    try:
        with capture_output():
            r = ip.run_cell("%%tilecopy --launch sim\n" + body("fallback_demo"))
        assert isinstance(r.error_in_exec, UserWarning)  # not an "internal error"
    finally:
        ip.run_cell("warnings.resetwarnings()")


def test_internal_errors_become_one_message(ip, monkeypatch):
    import tilemagic.magics as m

    def boom(*a, **k):
        raise ZeroDivisionError("oops")

    monkeypatch.setattr(m, "tilecopy", boom)
    with capture_output() as cap:
        r = ip.run_cell("%%tilecopy\nglobal A: float32[4]\n")
    assert isinstance(r.error_in_exec, TileMagicError)
    assert "internal error in tilemagic: ZeroDivisionError: oops" in cap.stdout + cap.stderr


def test_status_line_magic(ip):
    with capture_output() as cap:
        ip.run_line_magic("tilemagic", "status")
    assert "CuPy" in cap.stdout or "cupy" in cap.stdout
    with capture_output() as cap:
        ip.run_line_magic("tilemagic", "variants")
    assert "tmem<->local (priority 10)" in cap.stdout
    with pytest.raises(UsageError):
        ip.run_line_magic("tilemagic", "frobnicate")


def test_reload_is_idempotent(ip):
    ip.extension_manager.reload_extension("tilemagic")
    assert ip.run_cell("%%tilecopy --launch off\nglobal A: float32[4]\n").success


def test_export_option_shows_the_tvmscript(ip):
    res = ip.run_cell_magic("tilecopy", "tmem_roundtrip --launch off --export tvmscript", body("tmem_roundtrip"))
    assert res.export_text and res.export_text.startswith("# TVM TIRx equivalent of the %%tilecopy cell")
    bundle = res._repr_mimebundle_()
    assert "== TVMScript (TVM TIRx equivalent) ==" in bundle["text/plain"]
    assert "T.alloc_tcgen05_ldst_frag" not in bundle["text/plain"]  # S[...] register tiles stay alloc_local
    assert "Tx.wg.copy_async(b[0:128, 0:8], T_[0:128, 0:8])" in bundle["text/html"]
    with pytest.raises(TileSyntaxError, match="invalid choice: 'mlir'"):
        ip.run_cell_magic("tilecopy", "--export mlir", body("tmem_roundtrip"))


@pytest.mark.parametrize("line", ["'unterminated", 'rt --out "x', "--arch 'sm_100a"])
def test_unclosed_quote_on_the_magic_line_is_a_located_error(ip, line):
    # QA: shlex's ValueError("No closing quotation") used to escape as a raw ValueError traceback
    with capture_output() as cap:
        r = ip.run_cell(f"%%tilecopy {line}\n" + body("fallback_demo"))
    assert isinstance(r.error_in_exec, TileSyntaxError)
    quote = min(i for i, c in enumerate(line) if c in "'\"")  # located at the open quote
    assert (r.error_in_exec.line, r.error_in_exec.col) == (1, 12 + quote)
    assert "bad %%tilecopy option line: No closing quotation" in cap.stdout + cap.stderr


def test_tilecopy_after_line_magics_in_one_cell(ip):
    # the README's two cells pasted into one: once loaded, the line magics run, then the cell magic
    cell = ("%load_ext tilemagic\n# a comment\n%config TileMagics.launch = 'sim'\n\n%%tilecopy pasted\n"
            "kernel pasted threads=32\nglobal A: float32[8]\nglobal B: float32[8]\nwarp.copy B <- A\ncheck B == A\n")
    with capture_output():
        r = ip.run_cell(cell)
    assert r.success, r.error_in_exec or r.error_before_exec
    assert isinstance(r.result, TileCopyResult) and r.result.name == "pasted"
    assert r.result.launch.backend == "sim" and r.result.launch.passed
    # a located error still counts lines from the %%tilecopy line
    with capture_output():
        r = ip.run_cell("%config TileMagics.launch = 'off'\n%%tilecopy\nglobal A: float32[4]\nwarp.copy Q <- A\n")
    assert isinstance(r.error_in_exec, TileMagicError) and (r.error_in_exec.line, r.error_in_exec.col) == (3, 11)


def test_python_before_tilecopy_is_left_to_ipython(ip):
    with capture_output():
        r = ip.run_cell("x = 1\n%%tilecopy\nglobal A: float32[4]\n")
    assert not r.success and "x" not in ip.user_ns  # nothing of the cell ran


def test_unload_removes_the_transformer(ip):
    from tilemagic.magics import magic_after_line_magics

    assert ip.input_transformers_cleanup.count(magic_after_line_magics) == 1
    ip.extension_manager.load_extension("tilemagic")  # already loaded: no second copy
    ip.run_line_magic("reload_ext", "tilemagic")
    assert sum(getattr(t, "__name__", "") == "magic_after_line_magics" for t in ip.input_transformers_cleanup) == 1
    ip.extension_manager.unload_extension("tilemagic")
    assert not any(getattr(t, "__name__", "") == "magic_after_line_magics" for t in ip.input_transformers_cleanup)
    ip.extension_manager.load_extension("tilemagic")  # the fixture unloads it again


def test_widget_cell_shows_the_static_report_where_the_widget_cannot_be(ip):
    from tilemagic.widgets.html import WIDGET_CLASS

    with capture_output() as cap:
        res = ip.run_cell_magic("tilecopy", "rt --view widget --launch sim", body("tmem_roundtrip"))
    (fallback,) = [o.data for o in cap.outputs]  # displayed before the cell's own result
    page = fallback["text/html"]
    assert page.startswith('<div class="tm-fallback"><style>.jp-OutputArea:has(.tm-widget-view) .tm-fallback')
    assert 'class="tm-report"' in page and "check B == A" in page and "data:image/png;base64," in page
    assert fallback["text/plain"] == res.text()
    bundle = res._repr_mimebundle_()  # the cell's result: the live view, and no second copy of the report
    assert "application/vnd.jupyter.widget-view+json" in bundle and "text/html" not in bundle
    assert "static report is the output above" in bundle["text/plain"]
    assert "text/html" in res._repr_mimebundle_()  # a later display of the result is whole again
    assert WIDGET_CLASS in res.widget()._dom_classes


def test_html_view_cells_have_no_fallback_output(ip):
    with capture_output() as cap:
        ip.run_cell("%%tilecopy rt --launch off\n" + body("tmem_roundtrip"))
    assert cap.outputs == []
