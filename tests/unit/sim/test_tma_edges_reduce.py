"""TMA boxes past the tensor's edge and TMA reductions in the simulator (PTX ISA 9.0 §5.5.3.3, §9.7.9.25.5.3).

``tma_reduce`` is held, op by op and dtype by dtype, against a model written element by element in Python numbers
(integers wrapped by hand, floats summed exactly in float64 and rounded once into the type).  Kernels are built by
hand (the IR the lowering produces) and run in the simulator with its tracker; the edge load also runs from a cell
through the language.  On the main branch before this change a reduction raised ``cp.reduce.async.bulk.tensor (.add)
is not simulated`` and a region past the edge was a located error.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from test_async import TX, _tmap, at, eq, kernel, mbar, messages, prologue, sim, when

import tilemagic
from tilemagic.arch import tma as hw
from tilemagic.errors import TileTypeError
from tilemagic.ir import nodes as ir
from tilemagic.sim.asyncmodel import tma_box, tma_g2s_data, tma_reduce

_INT = {"int32": (32, True), "uint32": (32, False)}


def _model(op: str, dtype: str, a, b):
    """``op(a, b)`` for one element, in Python numbers."""
    if dtype in _INT:
        bits, signed = _INT[dtype]
        ua, ub = int(a) % (1 << bits), int(b) % (1 << bits)
        sa = ua - (1 << bits) if signed and ua >> (bits - 1) else ua
        sb = ub - (1 << bits) if signed and ub >> (bits - 1) else ub
        r = {"add": lambda: sa + sb, "min": lambda: min(sa, sb), "max": lambda: max(sa, sb),
             "inc": lambda: 0 if ua >= ub else ua + 1, "dec": lambda: ub if ua == 0 or ua > ub else ua - 1,
             "and": lambda: ua & ub, "or": lambda: ua | ub, "xor": lambda: ua ^ ub}[op]()
        return r % (1 << bits)
    fa, fb = float(a), float(b)
    if op == "add":
        return fa + fb  # exact in float64 for two float16/bfloat16/float32 values; rounded once by the caller
    if math.isnan(fa):
        return fb
    if math.isnan(fb):
        return fa
    return min(fa, fb) if op == "min" else max(fa, fb)


def _values(dtype: str, n: int, rng) -> np.ndarray:
    dt = ir.numpy_dtype(dtype)
    if dtype in _INT:
        edge = np.array([0, 1, 2, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFFE], np.uint64)
        v = np.concatenate([edge, rng.integers(0, 1 << 32, n - edge.size, dtype=np.uint64)])
        return v.astype(np.uint32).view(dt)
    v = rng.normal(0, 100, n).astype(np.float64)
    v[:6] = [0.0, -0.0, 1e-7, np.inf, -np.inf, np.nan]
    return v.astype(dt)


CASES = [(op, dt) for op, dts in hw.TMA_REDUCE_OPS.items() for dt in dts if dt in ("int32", "uint32", "float32",
                                                                                    "float16", "bfloat16")]


@pytest.mark.parametrize("op,dtype", CASES, ids=[f"{o}-{d}" for o, d in CASES])
def test_tma_reduce_matches_a_model_element_by_element(op, dtype):
    rng = np.random.default_rng(11)
    n = 64
    a, b = _values(dtype, n, rng), rng.permutation(_values(dtype, n, rng))
    eb = a.dtype.itemsize
    got = tma_reduce(op, dtype, a.view(np.uint8).reshape(n, eb), b.view(np.uint8).reshape(n, eb))
    got = got.reshape(-1).view(a.dtype)
    if dtype in _INT:
        want = np.array([_model(op, dtype, x, y) for x, y in zip(a.view(np.uint32), b.view(np.uint32))],
                        np.uint64).astype(np.uint32).view(a.dtype)
        assert np.array_equal(got, want)
    else:
        want = np.array([_model(op, dtype, x, y) for x, y in zip(a, b)], np.float64).astype(a.dtype)
        assert np.array_equal(got, want, equal_nan=True)


def test_tma_reduce_refuses_an_op_the_dtype_lacks():
    z = np.zeros((1, 4), np.uint8)
    with pytest.raises(ValueError, match="not defined on float32"):
        tma_reduce("inc", "float32", z, z)


# ----------------------------------------------------------------------------- OOB data
# the bits the H200 wrote (docs/gpu-runs.md, 2026-12-01: benchmarks/probes/h200_cluster_facts.py)
@pytest.mark.parametrize("dtype,code,bits", [("float16", "FLOAT16", 0x7FF7), ("bfloat16", "BFLOAT16", 0x7FF7),
                                             ("float32", "FLOAT32", 0x7FF77FF7)])
def test_oob_nan_is_the_arch_constant(dtype, code, bits):
    A = ir.Buffer("A", "global", dtype, (8, 32))
    tm = _tmap(A, (32, 16), 0, oob=1)
    _, inb, _ = tma_box(tm, (0, 0), 0)  # rows 8..15 out of bounds
    eb = A.elem_bytes
    loaded = np.arange(int(inb.sum()) * eb, dtype=np.int64).astype(np.uint8).reshape(-1, eb)
    data = tma_g2s_data(tm, inb, loaded)
    assert hw.OOB_NAN_BITS[code] == bits
    word = data[~inb].view(f"<u{eb}").reshape(-1)
    assert word.size == 8 * 32 and np.all(word == bits)
    assert np.array_equal(data[inb], loaded)
    zero = tma_g2s_data(_tmap(A, (32, 16), 0, oob=0), inb, loaded)
    assert not zero[~inb].any()


def test_oob_nan_is_not_written_for_an_integer_map():
    A = ir.Buffer("A", "global", "int32", (8, 32))
    tm = ir.TensorMap("tm", A, "INT32", 4, (32, 8), (128,), (32, 16), (1, 1), oob_fill=1)
    _, inb, _ = tma_box(tm, (0, 0), 0)
    assert not tma_g2s_data(tm, inb, np.ones((int(inb.sum()), 4), np.uint8))[~inb].any()


# ----------------------------------------------------------------------------- kernels
def _store_kernel(op: str | None, A: ir.Buffer, S: ir.Buffer, coords, box, init: bool = True):
    """Thread 0 fills S from the simulator's input (G2S of tensor ``G``), then reduces (or stores) it into A."""
    G = ir.Buffer("G", "global", S.dtype, S.shape, init="arange")
    code = hw.DTYPE_TO_TENSORMAP[S.dtype]
    tg, ta = _tmap(G, tuple(reversed(S.shape)), 0, dtype=code), _tmap(A, box, 0, dtype=code)
    bar = mbar()
    body = prologue(bar) + [
        when(eq(TX, 0), ir.MbarArrive(bar, tg.box_bytes, span=at(4)),
             ir.TmaCopy("g2s", tg, S, 0, (ir.Const(0), ir.Const(0)), mbar=bar, span=at(5)), line=4),
        ir.MbarWait(bar, 0, span=at(6)),
        when(eq(TX, 0), ir.TmaCopy("s2g", ta, S, 0, tuple(ir.Const(c) for c in coords), reduce=op, span=at(7)),
             ir.AsyncGroup("commit", bulk=True, span=at(8)), ir.AsyncGroup("wait", bulk=True, n=0, span=at(9)),
             line=7)]
    return kernel(32, (A, G), (S, bar), body, (tg, ta)), G


@pytest.mark.parametrize("op", ["add", "max", "xor"])
def test_a_reduction_past_the_edge_round_trips(op):
    """int32 A[20, 24] reduced with a 16×16 box at rows 12.., columns 16..: the 8×8 in-bounds corner becomes
    op(A, S); everything else of A is unchanged (the rest of the box is dropped, element by element)."""
    A = ir.Buffer("A", "global", "int32", (20, 24), init="arange")
    S = ir.Buffer("S", "shared", "int32", (16, 16))
    k, G = _store_kernel(op, A, S, (16, 12), (16, 16))
    a = (np.arange(20 * 24, dtype=np.int64) * 7919 - 3000).astype(np.int32).reshape(20, 24)
    g = (np.arange(256, dtype=np.int64) * -104729 + 77).astype(np.int32).reshape(16, 16)
    out, rep = sim(k, {"A": a, "G": g})
    assert rep.clean, messages(rep)
    want = a.copy()
    f = {"add": np.add, "max": np.maximum, "xor": np.bitwise_xor}[op]
    want[12:20, 16:24] = f(a[12:20, 16:24], g[0:8, 0:8])
    assert np.array_equal(out["A"], want)


def test_a_float16_add_reduction_rounds_in_the_type():
    A = ir.Buffer("A", "global", "float16", (16, 32), init="arange")
    S = ir.Buffer("S", "shared", "float16", (16, 32))
    k, _ = _store_kernel("add", A, S, (0, 0), (32, 16))
    a = np.full((16, 32), 2048, np.float16)  # 2048 + 1 is not a float16: rounds to even (2048)
    g = np.ones((16, 32), np.float16)
    g[0, :] = 3  # 2048 + 3 = 2051 -> 2052
    out, rep = sim(k, {"A": a, "G": g})
    assert rep.clean, messages(rep)
    assert np.all(out["A"][1:] == 2048) and np.all(out["A"][0] == 2052)


@pytest.mark.parametrize("op", ["add", None])
def test_a_reduction_reads_its_destination(op):
    """Global inputs start initialised; here thread 0 first stores a never-written shared tile U into A (poison),
    so the reduction's read of A at L7 is the uninitialised-read report, and the plain store at L7 is not (it only
    writes A)."""
    A = ir.Buffer("A", "global", "int32", (16, 16), init="arange")
    S = ir.Buffer("S", "shared", "int32", (16, 16))
    U = ir.Buffer("U", "shared", "int32", (16, 16))
    k, _ = _store_kernel(op, A, S, (0, 0), (16, 16))
    tu = k.tensormaps[1]
    poison = [when(eq(TX, 0), ir.TmaCopy("s2g", tu, U, 0, (ir.Const(0), ir.Const(0)), span=at(3)),
                   ir.AsyncGroup("commit", bulk=True, span=at(3)), ir.AsyncGroup("wait", bulk=True, n=0, span=at(3)),
                   line=3), ir.Barrier(span=at(3))]
    body = list(k.body.body)
    k = kernel(32, k.params, k.shared + (U,), body[:3] + poison + body[3:], k.tensormaps)
    g = np.arange(256, dtype=np.int32).reshape(16, 16)
    _, rep = sim(k, {"A": np.zeros((16, 16), np.int32), "G": g})
    at7 = [m for m in messages(rep) if "uninitialised" in m and "L7" in m]
    assert bool(at7) == (op is not None), messages(rep)


# ----------------------------------------------------------------------------- through the language
def _cell(region: str, dispatch: str = "") -> str:
    return "\n".join([
        "kernel edge threads=128",
        "global A: float16[256, 64] = arange",
        "global B: float16[32, 64] = zeros",
        "global Z: float16[16, 64] = zeros",
        "shared S: float16[32, 64]",
        "mbarrier full",
        "if tx == 0: arrive full expect_tx=auto",
        f"if tx == 0: thread.copy_async S <- {region} mbar=full{dispatch}",
        "wait full phase 0",
        "wg.copy B <- S",
        "check B[0:16, :] == A[240:256, :]",
        "check B[16:32, :] == Z",
    ]) + "\n"


@pytest.mark.parametrize("dispatch", ["", " dispatch=tma_explicit"])
def test_an_edge_load_from_a_cell_is_zero_filled(dispatch):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = tilemagic.tilecopy(_cell("A[240:272, 0:64]", dispatch), launch="sim")
    assert res.launch.passed and res.launch.hb.clean
    assert "expect_tx=auto: 4096 B" in res.ir  # the whole box, out-of-bounds rows included


def test_a_sync_copy_past_the_edge_stays_a_located_error():
    src = _cell("A[0:32, 0:64]").replace("wg.copy B <- S", "wg.copy B <- A[240:272, :]")
    with pytest.raises(TileTypeError) as e:
        tilemagic.tilecopy(src, launch="off")
    assert "index out of range for dimension of extent 256" in str(e.value)
    assert e.value.span is not None and e.value.span.line == 10
