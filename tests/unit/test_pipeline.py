"""Pipeline-level behaviour: options from the %%tilecopy line, --arch, hazards, warnings, determinism."""

import warnings

import numpy as np
import pytest

import tilemagic
from tilemagic.errors import DispatchError, LoweringError, TileSyntaxError, TileTypeError
from tilemagic.ir import nodes as ir
from cells import roundtrip_cell
from helpers import run


def test_header_line_gives_options_and_keywords_win(demo):
    src = demo("tmem_roundtrip").replace("%%tilecopy tmem_roundtrip", "%%tilecopy rt --launch off --seed 3")
    res = run(src, launch=None)
    assert res.launch is None and res.name == "rt" and res.options.seed == 3
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


# ----------------------------------------------------------------------------- found by adversarial testing
def test_loop_variables_never_run_out():
    names = "i j k l p q r s u v w i0 i1".split()
    src = "kernel kk threads=32\n" + "".join(f"global {n}: float32[1]\n" for n in names) + \
        "global A: float32[2, 3] = arange\nglobal B: float32[2, 3]\nwarp.copy B <- A\ncheck B == A\n"
    res = run(src)
    assert res.launch.passed and "for i2, i3 in T.grid(2, 3):" in res.ir


def test_byte_moves_do_not_shadow_a_buffer_named_v():
    src = ("kernel k threads=32\nglobal A: u8[32, 3]\nglobal B: u8[32, 3]\n"
           "local v: u8[32, 3] @ S[(32, 3) : (1@laneid, 1)]\nwarp.copy v <- A\nwarp.copy B <- v\ncheck B == A\n")
    res = run(src)
    assert res.launch.passed and "uint16_t tm_v;" in res.cuda and "((uint8_t*)v)[" in res.cuda


def test_register_layout_wider_than_the_cta_is_rejected():
    src = ("kernel k threads=64\nglobal A: f32[128, 8]\nglobal B: f32[128, 8]\n"
           "local a: f32[128, 8] @ S[(128, 8) : (1@tid_in_wg, 1)]\ncta.copy a <- A\ncta.copy B <- a\n")
    with pytest.raises(DispatchError, match="spread over 128 threads .* but the CTA has 64"):
        run(src)


@pytest.mark.parametrize("decl,frag", [
    ("local a: f32[32, 4] @ S[(32, 4) : (1@laneid, 0)]", "the same register of the same thread"),
    ("local a: f32[32, 32] @ S[(32, 4, 8) : (1@laneid, 2, 1)]", "the same register of the same thread"),
    ("tmem t: f32[128, 8] @ S[(128, 8) : (1@TLane, 0@TCol)]", "the same TMEM cell"),
    ("local a: f32[32] @ S[32 : 100000000000000000000]", r"2\*\*31 or more"),
    ("global A: u8[" + ", ".join(["1"] * 65) + "]", "at most 8"),
    ("shared s: f32[8192]\nshared t: f32[8192]", "limited to 49152 bytes"),
    ("global xor: f32[4]", "keyword"),
    ("global NULL: f32[4]", "CUDA/C name"),
    ("global INT_MAX: f32[4]", "CUDA/C name"),
    ("global tm_x: f32[4]", "reserved by tilemagic"),
    ("global float4: f32[4]", "CUDA/C name"),
    ("global TmEmu: f32[4]", "reserved"),
    ("kernel printf threads=32", "CUDA/C name"),
])
def test_bad_declarations_are_located_errors(decl, frag):
    with pytest.raises(TileTypeError, match=frag) as e:
        run(decl + "\n")
    assert e.value.line is not None and e.value.col is not None


def test_small_local_rows_are_padded_to_registers():
    src = ("kernel k threads=128\nglobal A: f16[128, 3]\nglobal B: f16[128, 2]\ntmem T: f16[128, 2]\n"
           "local a: f16[128, 3] @ S[(128, 3) : (1@tid_in_wg, 1)]\nwg.copy a <- A\n"
           "wg.copy_async T <- a[:, 0:2]\nwait st\nwg.copy_async a[:, 0:2] <- T\nwait ld\nwg.copy B <- a[:, 0:2]\n"
           "check B == A[:, 0:2]\n")
    res = run(src)
    assert res.launch.passed and "half a[4];" in res.cuda


def test_fallback_indexes_a_shared_layout_that_splits_a_dimension():
    """S[(2, 3) : (1, 2)] on a 1-D buffer is not affine per dimension: the scalar loop indexes it
    through the layout's general split (element i -> (i // 3) + (i % 3) * 2)."""
    src = ("kernel k threads=32\nglobal A: f32[6] = arange\nglobal B: f32[6]\nshared s: f32[6] @ S[(2, 3) : (1, 2)]\n"
           "warp.copy s <- A\ncta_sync\nwarp.copy B <- s\ncheck B == A\n")
    res = run(src)
    assert [d.chosen for d in res.dispatch] == ["fallback", "fallback"]
    assert "s[i % 3 * 2 + i / 3] = A[i];" in res.cuda
    assert res.launch.passed


def test_header_option_errors_are_located():
    for line, frag in (("--arch bogus", "not a CUDA target"), ("--seed -1", "non-negative")):
        with pytest.raises(TileSyntaxError, match=frag) as e:
            run(f"\n%%tilecopy {line}\nglobal A: f32[4]\n", launch=None)
        assert e.value.line == 2
    with pytest.raises(TileTypeError, match="not an identifier") as e:
        run("%%tilecopy 1abc\nglobal A: f32[4]\n", launch=None)
    assert e.value.line == 1
    with pytest.raises(LoweringError) as e:
        run("tmem T: f32[128, 32]\nwait st\n", arch="sm_90")
    assert e.value.line == 1


def test_api_argument_types(demo):
    # QA: a NumPy integer seed was refused as "not a non-negative integer", and source=None ended in an
    # AttributeError from inside the header parser
    a = run(demo("fallback_demo"), seed=np.int64(7))
    b = run(demo("fallback_demo"), seed=7)
    assert a.options.seed == 7 and type(a.options.seed) is int
    np.testing.assert_array_equal(a.launch.inputs["A"], b.launch.inputs["A"])
    for bad in (-1, 1.5, np.float32(2)):
        with pytest.raises(ValueError, match="seed must be a non-negative integer"):
            run(demo("fallback_demo"), seed=bad)
    for src in (None, demo("fallback_demo").encode()):
        with pytest.raises(TypeError, match=r"source must be the cell's text \(str\)"):
            tilemagic.tilecopy(src, launch="sim")


def test_api_choices_ignore_case_and_heatmap_types_are_checked(demo):
    """``tilecopy(launch="SIM")`` works as ``%config TileMagics.launch = "SIM"`` does; a heatmap argument
    that is neither a string nor a sequence of strings is a ValueError naming it (not a TypeError from join)."""
    res = tilemagic.tilecopy(demo("tmem_roundtrip"), launch="SIM", view="TEXT", color_by="Thread")
    assert res.launch.backend == "sim" and res.launch.passed
    with pytest.raises(ValueError, match="heatmap must be a comma-separated string or a sequence of strings"):
        tilemagic.tilecopy(demo("tmem_roundtrip"), launch="off", heatmap=123)
    with pytest.raises(ValueError, match="invalid --heatmap"):
        tilemagic.tilecopy(demo("tmem_roundtrip"), launch="off", heatmap=["tmem", "pie"])


def test_program_items_are_typed_dataclasses(demo):
    import dataclasses

    from tilemagic.lower.program import CheckItem, CopyItem, SyncItem, WaitItem

    tp = run(demo("tmem_roundtrip"), launch="off").typed
    kinds = [next(k for k in (CopyItem, WaitItem, SyncItem, CheckItem) if isinstance(it, k)) for it in tp.items]
    assert set(kinds) == {CopyItem, WaitItem, SyncItem, CheckItem} and kinds[-1] is CheckItem
    assert [it.op for it in tp.items if isinstance(it, CopyItem)] == tp.copy_ops and len(tp.copy_ops) == 4
    wait = next(it for it in tp.items if isinstance(it, WaitItem))
    assert wait.kind == "st" and wait.span.line == 10
    sync = next(it for it in tp.items if isinstance(it, SyncItem))
    (check,) = tp.checks
    assert isinstance(check, CheckItem) and check.text == "check B == A" and check.lhs.buf.name == "B"
    assert sync.span.line == 11
    with pytest.raises(dataclasses.FrozenInstanceError):
        check.text = "x"


def test_export_never_runs_the_pipeline():
    """export/ takes a result or a checked program; a description text goes through the pipeline."""
    import ast
    from pathlib import Path

    import tilemagic.export as export

    for path in Path(export.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert "pipeline" not in (node.module or ""), f"{path.name}:{node.lineno} imports the pipeline"


def test_the_simulator_running_out_of_memory_is_a_located_error(monkeypatch):
    import tilemagic.sim as sim_pkg

    def no_memory(*a, **kw):
        raise MemoryError

    monkeypatch.setattr(sim_pkg, "simulate", no_memory)
    src = "kernel oom threads=32\nglobal A: float32[32]\nglobal B: float32[32]\nwarp.copy B <- A\ncheck B == A"
    with pytest.raises(tilemagic.LaunchError) as ei:
        tilemagic.tilecopy(src, launch="sim")
    assert "ran out of memory" in str(ei.value) and ei.value.line == 1


def test_arange_past_float16s_range_is_quiet_inf():
    """``= arange`` on a float16 buffer of more than 65520 elements: the tail saturates to inf, as documented,
    without a RuntimeWarning from NumPy's cast (which named tilemagic's source file in the cell's stderr)."""
    import warnings

    from tilemagic.lang.parser import parse
    from tilemagic.lower.program import check
    from tilemagic.pipeline import make_inputs

    tp = check(parse("global A: float16[256, 256] = arange\nglobal B: float16[256, 256]\nthread.copy B[0, 0] <- A[0, 0]\n"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = make_inputs(tp)["A"].reshape(-1)
    assert a[2048] == 2048 and a[65504] == 65504 and np.isinf(a[-1])
