"""Pipeline-level behaviour: options from the %%tilecopy line, --arch, hazards, warnings, determinism."""

import warnings

import numpy as np
import pytest

import tilemagic
from tilemagic.errors import LoweringError, TileSyntaxError, TileTypeError
from tilemagic.ir import nodes as ir
from cells import roundtrip_cell
from conftest import run


def test_header_line_gives_options_and_keywords_win(demo):
    src = demo("tmem_roundtrip").replace("%%tilecopy tmem_roundtrip", "%%tilecopy rt --launch off --seed 3")
    res = run(src, launch=None)
    assert res.launch is None and res.name == "rt" and res.options["seed"] == 3
    assert run(src, launch="sim").launch.backend == "sim"
    with pytest.raises(TileSyntaxError, match="bad %%tilecopy option line") as e:
        run(src.replace("--seed 3", "--bogus"), launch=None)
    assert e.value.line == 1


def test_arch_is_validated_and_tcgen05_needs_a_tmem_target(demo):
    with pytest.raises(ValueError, match="not a CUDA target"):
        run(demo("tmem_roundtrip"), arch="foo")
    with pytest.raises(LoweringError, match="--arch sm_90 has no TMEM") as e:
        run(demo("tmem_roundtrip"), arch="sm_90")
    assert e.value.line == 9
    assert "build for sm_103a only" in run(demo("tmem_roundtrip"), arch="sm_103a", launch="off").cuda
    assert run(demo("fallback_demo"), arch="sm_90").launch.passed  # no tcgen05: any target


def test_missing_waits_are_reported_as_hazards(demo):
    src = demo("tmem_roundtrip").replace("wait st\n", "").replace("wait ld\n", "")
    with pytest.warns(UserWarning, match="hazard") as w:
        res = tilemagic.tilecopy(src, launch="sim")
    msgs = [str(x.message) for x in w]
    assert any("reads TMEM columns the tcgen05.st at L9 writes, before `wait st`" in m for m in msgs)
    assert any("registers of b are read at L12 before `wait ld`" in m for m in msgs)
    assert res.launch.passed and any(m.startswith("hazard") for m in res.warnings)
    assert not [m for m in run(demo("tmem_roundtrip")).warnings if m.startswith("hazard")]


def test_cta_sync_in_tmem_kernels_is_fenced(demo):
    body = run(demo("tmem_roundtrip"), launch="off").kernel.body.body
    i = next(k for k, s in enumerate(body) if isinstance(s, ir.Barrier) and s.span and s.span.line == 11)
    assert isinstance(body[i - 1], ir.TcgenFence) and body[i - 1].kind == "before_thread_sync"
    assert isinstance(body[i + 1], ir.TcgenFence) and body[i + 1].kind == "after_thread_sync"
    fb = run(demo("fallback_demo"), launch="off")
    assert not any(isinstance(s, ir.TcgenFence) for s in ir.walk(fb.kernel.body))


def test_warnings_come_after_a_successful_run_and_can_be_errors(demo):
    bad = demo("fallback_demo").replace("global A: float32[4, 6]", "global A: float32[4, 6] = nope")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with pytest.raises(TileTypeError):
            tilemagic.tilecopy(bad, launch="sim")
    assert not w  # the error is not preceded by the fallback warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning, match="copy/fallback"):
            tilemagic.tilecopy(demo("fallback_demo"), launch="sim")


def test_init_errors_point_at_the_name():
    src = "kernel k threads=32\nglobal A: float32[4, 6] = x\nglobal B: float32[4, 6]\nwarp.copy B <- A\n"
    with pytest.raises(TileTypeError) as e:
        run(src, namespace={"x": np.zeros((4, 5), np.float32)})
    assert (e.value.line, e.value.col) == (2, 27)


def test_tmem_window_layout_with_tcol_offset():
    src = roundtrip_cell("float32", 16, tmem_cols=16).replace(
        "tmem T: float32[128, 16]", "tmem T: float32[128, 16] @ S[(128, 16) : (1@TLane, 1@TCol)] + 16@TCol")
    res = run(src)
    st = next(s for s in ir.walk(res.kernel.body) if isinstance(s, ir.TcgenLdSt))
    assert st.col == 16 and res.kernel.tmem[0].datapath == "D" and res.launch.passed


def test_alias_must_lie_inside_its_target():
    src = roundtrip_cell("float32", 8, tmem_cols=32, alias=30)
    with pytest.raises(TileTypeError, match="spans 32-bit columns 30..37 of T, which has 32 columns") as e:
        run(src)
    assert e.value.line == 5


def test_outputs_are_deterministic(demo):
    a, b = run(demo("tmem_roundtrip")), run(demo("tmem_roundtrip"))
    assert a.text() == b.text() and a.html() == b.html()
    c = run(demo("tmem_roundtrip"), seed=1)
    assert not np.array_equal(a.launch.inputs["A"], c.launch.inputs["A"])
    assert "0x7f" not in a.text() and "/tmp" not in a.html()
