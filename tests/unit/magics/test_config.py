"""``%config TileMagics.<trait>`` defaults (launch, arch, view, strict, seed; timeout has its own tests) and the
view/heatmap options."""

import numpy as np
import pytest
from IPython.utils.capture import capture_output

from tilemagic import TileCopyResult, TileSyntaxError
from tilemagic.cli import demo_source


def body(name):
    return demo_source(name).split("\n", 1)[1]


def magics(ip):
    return ip.magics_manager.registry["TileMagics"]


RANDOM_CELL = "kernel k threads=32\nglobal A: float32[4, 6]\nglobal B: float32[4, 6]\nwarp.copy B <- A\ncheck B == A\n"


def run(ip, line, cell):
    with capture_output():  # the fallback's warning is in the report (result.warnings), not on stderr
        res = ip.run_cell_magic("tilecopy", line, cell)
    assert any("copy/fallback" in w for w in res.warnings)
    return res


def test_defaults_without_config(ip):
    assert magics(ip).defaults() == {"launch": "auto", "arch": "sm_100a", "view": "html", "strict": False,
                                     "allow_fail": False, "seed": 0,
                                     "timeout": 10.0, "cost": False}


def test_config_launch(ip):
    ip.run_line_magic("config", "TileMagics.launch = 'off'")
    assert run(ip, "", RANDOM_CELL).launch is None
    ip.run_line_magic("config", "TileMagics.launch = 'SIM'")  # caseless
    assert magics(ip).launch == "sim"
    assert run(ip, "", RANDOM_CELL).launch.backend == "sim"
    assert run(ip, "--launch off", RANDOM_CELL).launch is None  # the flag wins


def test_config_arch_validated_and_used(ip):
    ip.run_line_magic("config", "TileMagics.launch = 'off'")
    ip.run_line_magic("config", "TileMagics.arch = 'sm_90'")
    res = run(ip, "", RANDOM_CELL)
    assert res.options.arch == "sm_90" and "target cuda sm_90" in res.ir
    with capture_output():
        ip.run_line_magic("config", "TileMagics.arch = 'volta'")  # IPython logs the TraitError
    assert magics(ip).arch == "sm_90"  # rejected, unchanged
    with pytest.raises(Exception, match="not a CUDA target"):
        magics(ip).arch = "volta"


def test_config_view(ip):
    ip.run_line_magic("config", "TileMagics.launch = 'sim'")
    ip.run_line_magic("config", "TileMagics.view = 'text'")
    res = ip.run_cell_magic("tilecopy", "", body("tmem_roundtrip"))
    assert set(res._repr_mimebundle_()) == {"text/plain"}
    ip.run_line_magic("config", "TileMagics.view = 'widget'")
    w = ip.run_cell_magic("tilecopy", "", body("tmem_roundtrip"))  # the result, shown as the widget
    assert isinstance(w, TileCopyResult)
    assert {"application/vnd.jupyter.widget-view+json", "text/plain"} <= set(w._repr_mimebundle_())
    assert {"application/vnd.jupyter.widget-view+json", "text/html", "text/plain"} <= set(w._repr_mimebundle_())
    res = ip.run_cell_magic("tilecopy", "--view html", body("tmem_roundtrip"))
    assert isinstance(res, TileCopyResult) and "text/html" in res._repr_mimebundle_()


def test_config_strict(ip):
    ip.run_line_magic("config", "TileMagics.launch = 'sim'")
    assert ip.run_cell_magic("tilecopy", "", body("tmem_roundtrip")).options.strict is False
    ip.run_line_magic("config", "TileMagics.strict = True")
    res = ip.run_cell_magic("tilecopy", "", body("tmem_roundtrip"))
    assert res.options.strict is True and res.launch.passed


def test_config_seed_changes_random_inputs(ip):
    ip.run_line_magic("config", "TileMagics.launch = 'sim'")
    a = run(ip, "", RANDOM_CELL).launch.inputs["A"]
    ip.run_line_magic("config", "TileMagics.seed = 3")
    b = run(ip, "", RANDOM_CELL).launch.inputs["A"]
    c = run(ip, "--seed 3", RANDOM_CELL).launch.inputs["A"]
    assert not np.array_equal(a, b) and np.array_equal(b, c)
    assert np.array_equal(a, run(ip, "--seed 0", RANDOM_CELL).launch.inputs["A"])
    with pytest.raises(Exception, match="non-negative"):
        magics(ip).seed = -1


def test_status_shows_config_defaults(ip):
    ip.run_line_magic("config", "TileMagics.launch = 'off'")
    ip.run_line_magic("config", "TileMagics.seed = 5")
    with capture_output() as cap:
        ip.run_line_magic("tilemagic", "status")
    assert "defaults      : launch=off arch=sm_100a view=html strict=False allow_fail=False seed=5 timeout=10.0" in cap.stdout
    assert "every kernel : nothing runs (launch=off)" in cap.stdout


def test_heatmap_and_color_by_flags(ip):
    res = ip.run_cell_magic("tilecopy", "--launch sim --heatmap tmem,fragment --color-by thread",
                            body("tmem_roundtrip"))
    assert res.options.heatmap == ("tmem", "fragment") and res.options.color_by == "thread"
    assert res.html().count('class="tm-heatmap"') == 2
    with pytest.raises(TileSyntaxError, match="invalid --heatmap") as ei:
        ip.run_cell_magic("tilecopy", "--heatmap tmem,bogus", body("tmem_roundtrip"))
    assert ei.value.line == 1
    with pytest.raises(TileSyntaxError, match="invalid choice: 'lane'"):
        ip.run_cell_magic("tilecopy", "--color-by lane", body("tmem_roundtrip"))


@pytest.mark.parametrize("value", ["0", "-3", "float('nan')", "float('inf')"])
def test_config_timeout_refuses_bad_values(ip, value):
    # QA: these used to be accepted, and every later cell then failed with "bad %%tilecopy option line:
    # --timeout must be a positive number" located on a line that has no --timeout
    ip.run_line_magic("config", "TileMagics.timeout = 2.5")
    with capture_output():
        ip.run_line_magic("config", f"TileMagics.timeout = {value}")  # IPython logs the TraitError
    assert magics(ip).timeout == 2.5  # rejected, unchanged
    with pytest.raises(Exception, match="TileMagics.timeout: --timeout must be a positive number"):
        magics(ip).timeout = -1.0
    ip.run_line_magic("config", "TileMagics.launch = 'sim'")
    assert run(ip, "", RANDOM_CELL).options.timeout == 2.5


def test_a_refused_config_value_is_one_clean_line(ip, caplog):
    with capture_output() as cap:
        ip.run_line_magic("config", "TileMagics.seed = -1")
        ip.run_line_magic("config", "TileMagics.launch = 'moon'")
    assert not caplog.records  # not IPython's "ERROR:root:" log line
    assert cap.stderr.splitlines() == [
        "%config: TileMagics.seed: --seed must be a non-negative integer, got -1 (unchanged)",
        "%config: TileMagics.launch: --launch: invalid choice: 'moon' (choose from auto, sim, gpu, off) (unchanged)",
    ]
    assert magics(ip).seed == 0 and magics(ip).launch == "auto"


def test_help_usage_starts_with_the_name_and_names_the_out_variable(ip):
    from tilemagic.magics import TileMagics

    doc = TileMagics.tilecopy.__doc__
    usage = doc.split("::", 1)[1].strip().splitlines()[0]
    assert usage.startswith("%%tilecopy [NAME] [--launch auto|sim|gpu|off]")
    block = doc.split("::", 1)[1].strip().split("\n\n")[0].splitlines()  # the usage, wrapped
    assert len(block) > 1 and all(line.count("[") == line.count("]") for line in block)  # never inside an option
    flat = " ".join(doc.split())
    assert "notebook variable VAR" in flat and "docs/language.md" in doc and "%tilemagic status" in doc
