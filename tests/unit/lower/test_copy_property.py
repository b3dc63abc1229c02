"""Property: any global → shared → global copy (and shared → registers → global) round-trips in the
simulator, whatever the shared layout (row-major, a random permutation of split dimensions, a swizzle,
a swizzle over a permuted tile), the region window, dtype, scope and CTA size — with whichever variant
wins (gmem_smem, reg, ldstmatrix or the fallback).  Every vector move the simulator executes checks
its alignment, so a wrong vector width fails here too.  Deterministic (derandomized) for CI.
"""

import warnings

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tilemagic


@st.composite
def split_layout(draw, rows, cols):
    """A permutation layout: each dim split into factors, the iters stored in a random order."""
    def factors(n):
        out = []
        for p in (2, 3, 2, 2, 2):
            if n % p == 0 and draw(st.booleans()):
                out.append(p)
                n //= p
        return out + ([n] if n > 1 else [])

    iters = [("r", e) for e in factors(rows) or [1]] + [("c", e) for e in factors(cols) or [1]]
    order = draw(st.permutations(range(len(iters))))
    stride, acc = {}, 1
    for i in reversed(order):
        stride[i] = acc
        acc *= iters[i][1]
    ext = ", ".join(str(e) for _, e in iters)
    strides = ", ".join(str(stride[i]) for i in range(len(iters)))
    return f"S[({ext}) : ({strides})]"


@st.composite
def copy_cell(draw):
    dtype = draw(st.sampled_from(["float32", "float16", "bfloat16", "uint8", "int32"]))
    rows = draw(st.sampled_from([2, 4, 6, 8, 16]))
    cols = draw(st.sampled_from([4, 6, 8, 16, 32, 64]))
    scope, threads = draw(st.sampled_from([("thread", 1), ("warp", 32), ("warp", 64), ("wg", 128), ("cta", 64),
                                           ("cta", 96)]))
    kind = draw(st.sampled_from(["row", "split", "swizzle", "swizzle-split"]))
    lay = ""
    if kind == "split":
        lay = draw(split_layout(rows, cols))
    elif kind.startswith("swizzle"):
        b = draw(st.integers(0, 3))
        m, s = draw(st.integers(0, 4)), draw(st.integers(b, 4))
        lay = f"swizzle({m}, {b}, {s})" if kind == "swizzle" else \
            f"swizzle({m}, {b}, {s}, {draw(split_layout(rows, cols))})"
    gcols = cols + draw(st.sampled_from([0, 2, 8]))
    c0 = draw(st.integers(0, gcols - cols))
    win = f"[:, {c0}:{c0 + cols}]"
    src = (f"kernel k threads={threads}\nglobal A: {dtype}[{rows}, {gcols}]\n"
           f"global B: {dtype}[{rows}, {gcols}] = zeros\nglobal C: {dtype}[{rows}, {gcols}] = zeros\n"
           f"shared S: {dtype}[{rows}, {cols}]{' @ ' + lay if lay else ''}\n"
           f"{scope}.copy S <- A{win}\ncta_sync\n{scope}.copy B{win} <- S\ncheck B{win} == A{win}\n")
    if scope != "thread" and draw(st.booleans()):  # registers: a row per lane of each warp
        src += (f"local a: {dtype}[{rows}, {cols}] @ S[({rows}, {cols}) : (1@laneid, 1)]\n"
                f"{scope}.copy a <- S\n{scope}.copy C{win} <- a\ncheck C{win} == A{win}\n")
    return src


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(copy_cell())
def test_any_shared_layout_round_trips(src):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        try:
            res = tilemagic.tilecopy(src, launch="sim")
        except tilemagic.TileMagicError as e:
            # only a swizzle that does not permute this tile's offsets may be refused (at its declaration)
            assert "must be a permutation" in e.message, e.render()
            return
    assert res.launch.passed, (src, res.launch.checks, [d.chosen for d in res.dispatch])
