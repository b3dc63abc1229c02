"""The XOR swizzle layout (TVM ``ComposeLayout``) and the index expressions every backend uses.

The reference here is a bit-by-bit decoder written from the description in
TVM's swizzle (apache-tvm 0.27.0.post1: "bits [S, S+B) of m >> M are XOR-ed into bits [0, B)"),
independent of ``xor_swizzle``'s shift-and-mask form; ``tests/tvm/test_swizzle_oracle.py``
checks the same layouts against the TVM wheel.
"""

import itertools

import numpy as np
import pytest

import tilemagic
from tilemagic.errors import TileSyntaxError, TileTypeError
from tilemagic.ir import nodes as ir
from tilemagic.layout import TileLayout, row_major
from tilemagic.layout.swizzle import ComposeLayout, xor_swizzle
from tilemagic.sim.interpreter import Simulator


def bitwise_reference(m, per_element, swizzle_len, atom_len):
    """Bit j (j < B) of the chunk index m >> M is XOR-ed with bit j + S of it."""
    chunk, low = m >> per_element, m & ((1 << per_element) - 1)
    out = chunk
    for j in range(swizzle_len):
        if (chunk >> (j + atom_len)) & 1:
            out ^= 1 << j
    return (out << per_element) | low


PARAMS = [(3, 3, 3), (2, 3, 3), (3, 2, 3), (1, 2, 5), (4, 1, 3), (0, 3, 3), (3, 3, 4), (2, 0, 1)]


@pytest.mark.parametrize("m_, b_, s_", PARAMS)
def test_xor_swizzle_matches_bitwise_reference(m_, b_, s_):
    ms = np.arange(1 << 12)
    ref = [bitwise_reference(int(m), m_, b_, s_) for m in ms]
    np.testing.assert_array_equal(xor_swizzle(ms, m_, b_, s_), ref)


@pytest.mark.parametrize("tile", [row_major((8, 64)), TileLayout.from_spec((16, 32), [1, 16]),
                                  TileLayout.from_spec((8, 2, 32), [32, 256, 1])],
                         ids=["row-major", "column-major", "split"])
def test_compose_applies_the_swizzle_on_the_tile_address(tile):
    lay = ComposeLayout(3, 3, 3, tile)
    n = tile.size()
    got = lay.apply(np.arange(n))["m"]
    ref = [bitwise_reference(int(t), 3, 3, 3) for t in tile.apply(np.arange(n))["m"]]
    np.testing.assert_array_equal(got, ref)
    assert sorted(got.tolist()) == list(range(n))  # a permutation of the tile's addresses
    assert lay.chunk_elems == 8 and lay.size() == n


def test_chunks_of_2_pow_per_element_stay_contiguous():
    lay = ComposeLayout(2, 3, 3, row_major((16, 64)))
    m = lay.apply(np.arange(1024))["m"].reshape(-1, 4)
    assert np.all(np.diff(m, axis=1) == 1) and np.all(m[:, 0] % 4 == 0)
    m8 = lay.apply(np.arange(1024))["m"].reshape(-1, 8)
    assert not np.all(np.diff(m8, axis=1) == 1)  # 8-element runs are broken: the chunk caps the vector


def test_constructor_rejects_bad_parameters():
    with pytest.raises(ValueError, match=r"atom_len \(2\) must be >= swizzle_len \(3\)"):
        ComposeLayout(3, 3, 2, row_major((8, 8)))
    with pytest.raises(ValueError, match="non-negative"):
        ComposeLayout(-1, 3, 3, row_major((8, 8)))
    with pytest.raises(ValueError, match="exceed 30"):
        ComposeLayout(10, 10, 11, row_major((8, 8)))
    with pytest.raises(ValueError, match="axis m only"):
        ComposeLayout(3, 3, 3, TileLayout.from_spec((8,), [(1, "laneid")]))
    assert str(ComposeLayout(3, 3, 3, row_major((8, 64)), bare=True)) == "swizzle(3, 3, 3)"
    assert str(ComposeLayout(3, 3, 3, row_major((8, 64)))) == "swizzle(3, 3, 3, S[(8, 64) : (64, 1)])"


# ----------------------------------------------------------------------------- the language
def _buf(src):
    res = tilemagic.tilecopy(src, launch="off")
    return {b.name: b for b in res.kernel.shared}


def test_swizzle_in_a_shared_declaration():
    bufs = _buf("kernel k threads=32\nshared S: f16[8, 64] @ swizzle(3, 3, 3)\n"
                "shared P: f32[16, 32] @ swizzle(2, 3, 3, S[(16, 32) : (1, 16)])\n")
    s, p = bufs["S"].layout, bufs["P"].layout
    assert (s.per_element, s.swizzle_len, s.atom_len, s.bare) == (3, 3, 3, True)
    assert s.tile == row_major((8, 64))
    assert p.tile == TileLayout.from_spec((16, 32), [1, 16]) and not p.bare


@pytest.mark.parametrize("src, frag, col", [
    ("shared S: f16[8, 64] @ swizzle(3, -1, 3)", "swizzle swizzle_len must be >= 0", 35),
    ("shared S: f16[8, 64] @ swizzle(3, 3, 2)", "swizzle atom_len (2) must be >= swizzle_len (3)", 38),
    ("shared S: f16[8, 64] @ swizzle(3, 3)", "expected ','", 36),
    ("shared S: f16[8, 64] @ swizzle(20, 10, 3)", "exceed 30", 24),
    ("shared S: f16[8, 64] @ swizzle(3, 3, 3, datapath(D))", "expected `S[...]`", 41),
])
def test_swizzle_syntax_errors_are_located(src, frag, col):
    with pytest.raises(TileSyntaxError) as e:
        tilemagic.tilecopy(src, launch="off")
    assert frag in e.value.message and e.value.col == col, e.value.render()
    if "expected" in frag:
        assert "swizzle(per_element, swizzle_len, atom_len" in e.value.hint


@pytest.mark.parametrize("src, frag", [
    ("local a: f16[32, 8] @ swizzle(3, 3, 3)", "swizzle(...) is a shared-memory layout"),
    ("shared S: f16[8, 60] @ swizzle(3, 3, 3)", "must be a permutation of 480 elements"),
    ("shared S: f16[8, 64] @ swizzle(3, 3, 3, S[(8, 64) : (1@laneid, 1)])", "axis m only"),
])
def test_swizzle_type_errors(src, frag):
    with pytest.raises(TileTypeError, match=frag.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        tilemagic.tilecopy(src, launch="off")


# ----------------------------------------------------------------------------- index expressions
LAYOUTS = [
    row_major((6, 8)),
    TileLayout.from_spec((6, 8), [1, 6]),
    TileLayout.from_spec((2, 3, 8), [8, 16, 1]),  # rows interleaved: not affine per dimension of (6, 8)
    TileLayout.from_spec((3, 2, 4, 2), [2, 24, 6, 1]),
    ComposeLayout(1, 2, 2, row_major((6, 8))),
    ComposeLayout(2, 1, 2, TileLayout.from_spec((2, 3, 8), [8, 16, 1])),
]


@pytest.mark.parametrize("layout", LAYOUTS, ids=[str(lay) for lay in LAYOUTS])
def test_index_expr_equals_layout_apply(layout):
    """Buffer.index_expr (what the IR, the CUDA and the simulator index with) = layout.apply."""
    buf = ir.Buffer("S", "shared", "float32", (6, 8), layout, per_thread=48)
    i, j = ir.LoopVar("i"), ir.LoopVar("j")
    e = buf.index_expr((i, j))
    k = ir.Kernel("k", 1, (), (buf,), (), (), 0, None, ir.Seq(()))
    sim = Simulator(k, {})
    ii, jj = np.meshgrid(np.arange(6), np.arange(8), indexing="ij")
    got = sim.eval_expr(e, {i: ii, j: jj})
    np.testing.assert_array_equal(got, layout.apply(ii, jj, shape=(6, 8))["m"])


def test_every_parameter_combination_round_trips_through_the_fallback():
    """Scalar copies through small swizzled buffers (1 thread): sim result equals the input."""
    for m_, b_, s_ in [p for p in itertools.product((0, 1, 2), (0, 1, 2), (1, 2, 3)) if p[2] >= p[1]]:
        src = (f"kernel k threads=1\nglobal A: f32[4, 16]\nglobal B: f32[4, 16]\n"
               f"shared S: f32[4, 16] @ swizzle({m_}, {b_}, {s_})\nthread.copy S <- A dispatch=fallback\n"
               f"thread.copy B <- S dispatch=fallback\ncheck B == A\n")
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            res = tilemagic.tilecopy(src, launch="sim")
        assert res.launch.passed, (m_, b_, s_)
