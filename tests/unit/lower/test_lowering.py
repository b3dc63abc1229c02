"""Lowering decisions of the issue-2 variants: tcgen05 .32x32b, reg, fallback — and their rejections.

The complete tcgen05 ld/st matrix (every shape, data path, slice) is in test_tcgen05_ldst.py.

Each case runs the real pipeline (parse → check → dispatch → lower) and looks at the
dispatch record and the IR nodes; round trips run in the CPU simulator.
"""


import numpy as np
import pytest

import tilemagic
from tilemagic.errors import DispatchError, LoweringError, TileTypeError
from tilemagic.ir import nodes as ir
from cells import EPC, FALLBACK_CASES, REG_CASES, fallback_cell, reg_cell, roundtrip_cell
from helpers import run

def tcgen_nodes(res):
    return [s for s in ir.walk(res.kernel.body) if isinstance(s, ir.TcgenLdSt)]


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "uint8", "int8", "int32"])
@pytest.mark.parametrize("num", [1, 2, 4, 8, 16, 32, 64, 128])
def test_32x32b_num_probe_and_roundtrip(dtype, num):
    width = num * EPC[dtype]
    res = run(roundtrip_cell(dtype, width))
    st, ld = tcgen_nodes(res)
    assert (st.op, st.shape, st.num, st.regs, st.col, st.row) == ("st", "32x32b", num, num, 0, 0)
    assert (ld.op, ld.num) == ("ld", num)
    assert f"tcgen05.st.sync.aligned.32x32b.x{num}.b32" in res.cuda
    assert f"tcgen05.ld.sync.aligned.32x32b.x{num}.b32" in res.ir
    assert [d.chosen for d in res.dispatch] == ["reg", "tmem<->local", "tmem<->local", "reg"]
    assert res.launch.passed, res.launch.checks
    assert res.kernel.tmem_cols == max(32, 1 << (num - 1).bit_length())


@pytest.mark.parametrize("dtype,lo,hi,col", [
    ("float32", 16, 32, 16), ("float32", 3, 7, 3), ("float16", 8, 16, 4), ("uint8", 32, 48, 8),
])
def test_column_offset_from_region_slice(dtype, lo, hi, col):
    res = run(roundtrip_cell(dtype, hi - lo, tmem_cols=64 * EPC[dtype], lo=lo))
    st, ld = tcgen_nodes(res)
    assert st.col == ld.col == col
    assert f"get_tmem_addr(tmem_addr[0], 0, {col})" in res.cuda
    assert res.launch.passed


def test_column_offset_from_alias():
    res = run(roundtrip_cell("float32", 8, tmem_cols=32, alias=16))
    st, _ = tcgen_nodes(res)
    assert st.col == 16 and st.tmem.name == "V"
    assert res.launch.passed


def test_tmem_buffers_get_consecutive_columns():
    src = roundtrip_cell("float32", 8).replace("tmem T: float32[128, 8]",
                                                "tmem Z: float32[128, 40]\ntmem T: float32[128, 8]")
    res = run(src)
    assert tcgen_nodes(res)[0].col == 40
    assert res.kernel.tmem_cols == 64 and res.launch.passed


def _dispatch_error(src):
    with pytest.raises(DispatchError) as e:
        run(src)
    return e.value


@pytest.mark.parametrize("dtype,lo,hi,frag", [
    ("float32", 0, 3, "Width 3 is not valid for tcgen05.ld/st with shape 32x32b"),
    ("float16", 1, 9, "falls inside a 32-bit column"),
    ("float16", 0, 3, "not a whole number of 32-bit columns"),
])
def test_32x32b_rejections_show_in_why_table(dtype, lo, hi, frag):
    err = _dispatch_error(roundtrip_cell(dtype, hi - lo, tmem_cols=32, lo=lo))
    assert frag in err.details and "tmem<->local" in err.details
    assert err.line == 8  # the copy_async line


def test_wrong_scope_and_pair_rejected():
    err = _dispatch_error(roundtrip_cell("float32", 8).replace("wg.copy_async T <- a", "warp.copy_async T <- a"))
    assert "exec_scope: unsupported exec_scope warp" in err.details
    err = _dispatch_error("""
kernel k threads=128
global A: float32[128, 8]
tmem T: float32[128, 8]
wg.copy T <- A
""")
    assert "TMEM is reached only through tcgen05.ld/st" in err.details


def test_tmem_over_512_columns_is_a_located_lowering_error():
    with pytest.raises(LoweringError) as e:
        run("kernel k threads=128\ntmem T: float32[128, 256]\ntmem U: float32[128, 300]\n")
    assert e.value.line == 3 and "512" in e.value.message


# ----------------------------------------------------------------------------- fallback
@pytest.mark.parametrize("scope,threads,rows,cols", FALLBACK_CASES,
                         ids=[f"{s}-{t}-{r}x{c}" for s, t, r, c in FALLBACK_CASES])
def test_fallback_round_trip(scope, threads, rows, cols):
    src = fallback_cell(scope, threads, rows, cols)
    with pytest.warns(UserWarning, match=r"copy/fallback \(scalar single-thread\) picked for (global|shared) -> (shared|global) at "
                                         rf"scope_kind={'warpgroup' if scope == 'wg' else scope}; all faster "
                                         r"variants rejected\.") as w:
        res = tilemagic.tilecopy(src, launch="sim")
    assert len(w) == 2 and w[0].filename == "tilecopy" and w[0].lineno == 6
    assert [d.chosen for d in res.dispatch] == ["fallback", "fallback"]
    guard = {"warp": "laneid == 0", "wg": "tid_in_wg == 0", "cta": "tx == 0"}[scope]
    assert f"if {guard}:" in res.ir
    # it ran only because the faster variants declined: gmem_smem with TVM's reason
    t = {"warp": 32, "wg": 128, "cta": threads}[scope]
    gs = next(c for c in res.dispatch[0].candidates if c.variant == "gmem_smem")
    assert f"divides_thread_cnt: region size {rows * cols} not divisible by thread_cnt={t}" in gs.reasons
    assert res.launch.passed


def test_fallback_scalar_region_and_positional_dims():
    src = """
kernel s threads=32
global A: float32[4, 6]
global B: float32[8]
global C: float32[2, 8]
warp.copy B[3] <- A[1, 2]
warp.copy C[1, 0:8] <- B
"""
    res = run(src)
    assert "B[3] = A[1, 2]" in res.ir
    assert "C[1, i] = B[i]" in res.ir
    out, inp = res.launch.outputs, res.launch.inputs
    assert out["B"][3] == inp["A"][1, 2]
    np.testing.assert_array_equal(out["C"][1], out["B"])


# ----------------------------------------------------------------------------- reg
@pytest.mark.parametrize("layout,rows,cols,scope,threads,dtype,summary", REG_CASES,
                         ids=[f"reg{i}" for i in range(len(REG_CASES))])
def test_reg_variant_vector_width_and_roundtrip(layout, rows, cols, scope, threads, dtype, summary):
    res = run(reg_cell(layout, rows, cols, scope, threads, dtype))
    assert [d.chosen for d in res.dispatch] == ["reg", "reg"]
    assert summary in res.dispatch[0].summary
    assert res.launch.passed


def test_reg_rejects_layout_wider_than_scope_and_fallback_explains():
    err = _dispatch_error(reg_cell("S[(128, 8) : (1@tid_in_wg, 1)]", 128, 8, scope="warp"))
    assert "uses tid_in_wg (warpgroup scope) but the op runs at scope warp" in err.details
    assert "one elected thread cannot reach the other threads' registers" in err.details


def test_forced_variant_runs_its_predicates():
    src = reg_cell("S[(128, 8) : (1@tid_in_wg, 1)]", 128, 8).replace("wg.copy a <- A", "wg.copy a <- A dispatch=fallback")
    err = _dispatch_error(src)
    assert "\n  fallback " in err.details and "\n  reg " not in err.details
    with pytest.raises(DispatchError, match="no variant named 'gmem' is registered"):
        run(src.replace("dispatch=fallback", "dispatch=gmem"))


def test_type_errors_are_located():
    with pytest.raises(TileTypeError) as e:
        run("kernel k threads=32\nglobal A: float32[4, 6]\nwarp.copy Q <- A\n")
    assert (e.value.line, e.value.col) == (3, 11) and "unknown buffer 'Q'" in e.value.message
    with pytest.raises(TileTypeError, match="index out of range"):
        run("global A: float32[4, 6]\nglobal B: float32[4, 6]\nthread.copy B[0:5, :] <- A\n")
    with pytest.raises(TileTypeError, match="cta-scope op needs the CTA size"):
        run("global A: float32[4]\nglobal B: float32[4]\ncta.copy B <- A\n")
    with pytest.raises(TileTypeError, match="reserved"):
        run("global tmem_addr: float32[4]\n")
    with pytest.raises(TileTypeError, match="keyword"):
        run("global int: float32[4]\n")
    with pytest.raises(TileTypeError, match="needs a CTA of a multiple of 128"):
        run("kernel k threads=64\nglobal A: float32[4]\nglobal B: float32[4]\nwg.copy B <- A\n")
    with pytest.raises(TileTypeError, match="covers 16 elements"):
        run("local a: float32[128, 8] @ S[(4, 4) : (1@laneid, 1)]\n")
    with pytest.raises(TileTypeError, match="needs a layout"):
        run("tmem T: float32[64, 8]\n")


def test_notebook_array_initialiser_is_looked_up_not_evaluated():
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    src = "kernel k threads=32\nglobal A: float32[4, 6] = x\nglobal B: float32[4, 6]\nwarp.copy B <- A\ncheck B == A\n"
    res = run(src, namespace={"x": x})
    np.testing.assert_array_equal(res.launch.outputs["B"], x)
    with pytest.raises(TileTypeError, match="'x' is float64"):
        run(src, namespace={"x": x.astype(np.float64)})
    with pytest.raises(TileTypeError, match="not a variable"):
        run(src, namespace={})
    with pytest.raises(TileTypeError, match="not a NumPy array"):
        run(src, namespace={"x": "__import__('os')"})
