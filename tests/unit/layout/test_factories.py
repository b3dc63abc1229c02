"""Layout factories, checked by brute-force ``apply`` over every logical element.

The data-path layouts are compared with the closed forms of PTX ISA 9.0 §9.7.16.10.5
(D identity, F scattered half-slabs, B split columns; A, C, E, G as in the
TVM table).  The tcgen05 register fragments are compared with the PTX per-thread
mapping (PTX ISA 9.0 §9.7.16.2.3), written out here independently of the factory:
thread ``t`` of warp ``w`` holding 32-bit register ``r`` of an instruction
issued at row offset ``16*slab`` covers TMEM row ``32*w + 16*slab + row(t, r)``
(a 64-row fragment: logical row ``16*w + row(t, r)``), column ``col(t, r)``;
16-bit dtypes put two adjacent logical columns in one register, the even one
in the low half.
"""

import itertools

import numpy as np
import pytest
from cells import TCGEN05_REGS_PER_NUM, ptx_row_col

from tilemagic.arch import tcgen05
from tilemagic.layout import (
    TileLayout,
    row_major,
    tcgen05_atom_layout,
    tmem_datapath_layout,
    wg_local_layout,
)


def grid(rows, cols):
    return np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")


def tid_of(res):
    """Thread index in the warpgroup from an apply() result."""
    if "tid_in_wg" in res:
        assert "laneid" not in res and "wid_in_wg" not in res
        return res["tid_in_wg"]
    return 32 * res.get("wid_in_wg", 0) + res["laneid"]


# ----------------------------------------------------------------------------- simple factories
def test_row_major():
    lay = row_major((3, 5, 7))
    assert str(lay) == "S[(3, 5, 7) : (35, 7, 1)]"
    a, b, c = np.meshgrid(np.arange(3), np.arange(5), np.arange(7), indexing="ij")
    np.testing.assert_array_equal(lay.apply(a, b, c, shape=(3, 5, 7))["m"], 35 * a + 7 * b + c)
    assert str(row_major(8)) == "S[8 : 1]"


@pytest.mark.parametrize("rows,cols", [(128, 8), (128, 1), (64, 32)])
def test_wg_local_layout(rows, cols):
    lay = wg_local_layout(cols, rows)
    assert str(lay) == f"S[({rows}, {cols}) : (1@tid_in_wg, 1)]"
    r, c = grid(rows, cols)
    res = lay.apply(r, c, shape=(rows, cols))
    np.testing.assert_array_equal(res["tid_in_wg"], r)
    np.testing.assert_array_equal(res["m"], c)


# ----------------------------------------------------------------------------- data paths
COLS = [2, 8, 32, 64, 256]


@pytest.mark.parametrize("letter", ["D", "A"])
@pytest.mark.parametrize("cols", COLS)
def test_datapath_D_identity(letter, cols):
    lay = tmem_datapath_layout(letter, 128, cols)
    r, c = grid(128, cols)
    res = lay.apply(r, c, shape=(128, cols))
    np.testing.assert_array_equal(res["TLane"], r)
    np.testing.assert_array_equal(res["TCol"], c)
    assert lay == TileLayout.from_spec((128, cols), [(1, "TLane"), (1, "TCol")])


@pytest.mark.parametrize("letter", ["F", "C"])
@pytest.mark.parametrize("sub_slab", [0, 1])
@pytest.mark.parametrize("cols", COLS)
def test_datapath_F_row_to_lane(letter, sub_slab, cols):
    lay = tmem_datapath_layout(letter, 64, cols, sub_slab=sub_slab)
    r, c = grid(64, cols)
    res = lay.apply(r, c, shape=(64, cols))
    np.testing.assert_array_equal(res["TLane"], 32 * (r // 16) + 16 * sub_slab + r % 16)
    np.testing.assert_array_equal(res["TCol"], c)
    assert lay.offset_of("TLane") == 16 * sub_slab
    # rows 0-15 -> lanes 0-15, 16-31 -> 32-47, ... (+16 for the upper half-slab)
    lanes = sorted(set(res["TLane"].ravel().tolist()))
    assert lanes == [32 * w + 16 * sub_slab + k for w in range(4) for k in range(16)]


@pytest.mark.parametrize("letter", ["B", "E"])
@pytest.mark.parametrize("cols", COLS)
def test_datapath_B_col_split(letter, cols):
    lay = tmem_datapath_layout(letter, 64, cols)
    r, c = grid(64, cols)
    res = lay.apply(r, c, shape=(64, cols))
    half = cols // 2
    np.testing.assert_array_equal(res["TLane"], r + 64 * (c // half))
    np.testing.assert_array_equal(res["TCol"], c % half)
    # exactly covers 128 lanes x N/2 columns
    cells = set(zip(res["TLane"].ravel().tolist(), res["TCol"].ravel().tolist()))
    assert cells == set(itertools.product(range(128), range(half)))


@pytest.mark.parametrize("cols", [4, 32, 128])
def test_datapath_G(cols):
    lay = tmem_datapath_layout("G", 32, cols)
    r, c = grid(32, cols)
    res = lay.apply(r, c, shape=(32, cols))
    q = cols // 4
    np.testing.assert_array_equal(res["TLane"], r + 32 * (c // q))
    np.testing.assert_array_equal(res["TCol"], c % q)


def test_datapath_spec_text():
    assert str(tmem_datapath_layout("D", 128, 64)) == "S[(128, 64) : (1@TLane, 1@TCol)]"
    assert (
        str(tmem_datapath_layout("F", 64, 32, sub_slab=1))
        == "S[(4, 16, 32) : (32@TLane, 1@TLane, 1@TCol)] + 16@TLane"
    )
    assert str(tmem_datapath_layout("B", 64, 64)) == "S[(64, 2, 32) : (1@TLane, 64@TLane, 1@TCol)]"


@pytest.mark.parametrize(
    "args,kwargs,match",
    [
        (("Z", 128, 32), {}, "unknown datapath"),
        (("D", 64, 32), {}, "expects rows=128"),
        (("F", 128, 32), {}, "expects rows=64"),
        (("B", 128, 32), {}, "expects rows=64"),
        (("G", 64, 32), {}, "expects rows=32"),
        (("F", 64, 32), {"sub_slab": 2}, "sub_slab must be 0 or 1"),
        (("F", 64, 32), {"sub_slab": -1}, "sub_slab must be 0 or 1"),
        (("D", 128, 32), {"sub_slab": 1}, "already spans both sub-slabs; sub_slab must be 0"),
        (("B", 64, 32), {"sub_slab": 1}, "sub_slab must be 0"),
        (("B", 64, 33), {}, "expects even cols"),
        (("E", 64, 7), {}, "expects even cols"),
        (("G", 32, 6), {}, "divisible by 4"),
    ],
)
def test_datapath_errors(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        tmem_datapath_layout(*args, **kwargs)


# ----------------------------------------------------------------------------- tcgen05 fragments
REGS_PER_NUM = TCGEN05_REGS_PER_NUM
COL32_PER_NUM = {"32x32b": 1, "16x64b": 2, "16x128b": 4, "16x256b": 8}
MAX_NUM = {"32x32b": 128, "16x64b": 128, "16x128b": 64, "16x256b": 32}


def expected_fragment(shape, rows, cols, bits):
    """Reference (thread, m) for every logical (row, col), built from the PTX mapping.

    Returns two (rows, cols) int arrays; -1 marks an element no (thread, register) covers.
    """
    epr = 32 // bits
    tid = -np.ones((rows, cols), dtype=np.int64)
    m = -np.ones((rows, cols), dtype=np.int64)

    def put(R, C, T, M):
        assert tid[R, C] == -1, f"({R}, {C}) covered twice"
        tid[R, C], m[R, C] = T, M

    if shape == "32x32b" and rows == 64:
        # Layout B image: one .32x32b.x(N/2) over 128 lanes; TMEM (lane, col) = (R + 64*(C // (N/2)), C % (N/2))
        half = cols // 2
        for w, t, r in itertools.product(range(4), range(32), range(half)):
            lane, col = 32 * w + t, r
            R, C = lane % 64, (lane // 64) * half + col
            put(R, C, 32 * w + t, r)
        return tid, m
    if shape == "32x32b":
        regs = cols // epr
        for w, t, r in itertools.product(range(4), range(32), range(regs)):
            for h in range(epr):
                put(32 * w + t, epr * r + h, 32 * w + t, epr * r + h)
        return tid, m
    num = cols // (COL32_PER_NUM[shape] * epr)
    rps = REGS_PER_NUM[shape] * num
    n_slabs = rows // 64
    for w, t, slab, r in itertools.product(range(4), range(32), range(n_slabs), range(rps)):
        row, col32 = ptx_row_col(shape, t, r)
        # 128 rows: TMEM row 32w + 16*slab + row (Layout D, logical == physical).
        # 64 rows: the warp's 16 rows are logical rows 16w..16w+15 (tcgen05_ldst "Subtlety").
        R = (32 * w + 16 * slab + row) if rows == 128 else (16 * w + row)
        reg = slab * rps + r
        for h in range(epr):  # 16-bit: low half = even logical column
            put(R, epr * col32 + h, 32 * w + t, epr * reg + h)
    return tid, m


def atom_cases():
    out = []
    for shape in ("32x32b", "16x64b", "16x128b", "16x256b"):
        for rows in (64, 128):
            for bits in (32, 16):
                if shape == "32x32b" and rows == 64 and bits != 32:
                    continue
                unit = COL32_PER_NUM[shape] * (32 // bits)
                nums = sorted({1, 4, MAX_NUM[shape]})
                for num in nums:
                    cols = 2 * num if (shape == "32x32b" and rows == 64) else num * unit
                    out.append(pytest.param(shape, rows, bits, cols, id=f"{shape}-M{rows}-b{bits}-N{cols}"))
    out.append(pytest.param("32x32b", 128, 8, 16, id="32x32b-M128-b8-N16"))
    return out


@pytest.mark.parametrize("shape,rows,bits,cols", atom_cases())
def test_atom_layout_matches_ptx_mapping(shape, rows, bits, cols):
    lay = tcgen05_atom_layout(shape, (rows, cols), bits)
    assert lay.size() == rows * cols
    R, C = grid(rows, cols)
    res = lay.apply(R, C, shape=(rows, cols))
    want_tid, want_m = expected_fragment(shape, rows, cols, bits)
    assert (want_tid >= 0).all(), "reference does not cover the whole fragment"
    np.testing.assert_array_equal(tid_of(res), want_tid)
    np.testing.assert_array_equal(res["m"], want_m)
    # every thread holds rows*cols/128 elements at m = 0 .. per_thread-1
    per_thread = rows * cols // 128
    pairs = set(zip(tid_of(res).ravel().tolist(), res["m"].ravel().tolist()))
    assert pairs == set(itertools.product(range(128), range(per_thread)))
    # the canonical form keeps the map (thread axes fused to tid_in_wg)
    cres = lay.canonicalize().apply(R, C, shape=(rows, cols))
    np.testing.assert_array_equal(cres["tid_in_wg"], want_tid)
    # (an extent-1 register iter is dropped by canonicalize, so "m" may be absent: m == 0)
    np.testing.assert_array_equal(cres.get("m", 0), want_m)


@pytest.mark.parametrize("shape", ["16x64b", "16x128b", "16x256b"])
@pytest.mark.parametrize("rows,letter,sub_slab", [(128, "D", 0), (64, "F", 0), (64, "F", 1)])
@pytest.mark.parametrize("bits", [32, 16])
def test_atom_layout_composes_with_datapath(shape, rows, letter, sub_slab, bits):
    """Fragment + data-path layout reproduce the PTX cells of each (warp, thread, register).

    An M=128 fragment issues at row immediates 0 and 16; an M=64 fragment once at 16*sub_slab.
    """
    epr = 32 // bits
    cols = 4 * COL32_PER_NUM[shape] * epr  # .x4
    frag = tcgen05_atom_layout(shape, (rows, cols), bits)
    tmem = tmem_datapath_layout(letter, rows, cols, sub_slab=sub_slab)
    R, C = grid(rows, cols)
    f = frag.apply(R, C, shape=(rows, cols))
    d = tmem.apply(R, C, shape=(rows, cols))
    T = tid_of(f)
    w, t = T // 32, T % 32
    reg = f["m"] // epr
    rps = REGS_PER_NUM[shape] * 4
    slab, r = reg // rps, reg % rps
    row_imm = 16 * (slab if rows == 128 else sub_slab)
    lane, col = tcgen05.tmem_cell(shape, t, r, taddr=0, warp=w, row_imm=row_imm)
    np.testing.assert_array_equal(d["TLane"], lane)
    # TCol counts elements: 32-bit column * elements-per-column + half
    np.testing.assert_array_equal(d["TCol"], col * epr + f["m"] % epr)


def test_atom_layout_32x32b_datapath_B_mapping():
    N = 64
    frag = tcgen05_atom_layout("32x32b", (64, N), 32)
    tmem = tmem_datapath_layout("B", 64, N)
    R, C = grid(64, N)
    f, d = frag.apply(R, C, shape=(64, N)), tmem.apply(R, C, shape=(64, N))
    T = f["tid_in_wg"]
    lane, col = tcgen05.tmem_cell("32x32b", T % 32, f["m"], taddr=0, warp=T // 32)
    np.testing.assert_array_equal(d["TLane"], lane)
    np.testing.assert_array_equal(d["TCol"], col)


def test_atom_layout_32x32b_is_wg_local():
    for bits in (32, 16, 8):
        assert tcgen05_atom_layout("32x32b", (128, 32), bits).is_equal(wg_local_layout(32))


def test_atom_layout_accepts_dtype_names():
    assert tcgen05_atom_layout("16x256b", (128, 32), "float16") == tcgen05_atom_layout(
        "16x256b", (128, 32), 16
    )


@pytest.mark.parametrize(
    "shape,rc,bits,match",
    [
        ("16x512b", (128, 32), 32, "unknown instruction shape"),
        ("16x32bx2", (128, 32), 32, "unknown instruction shape"),
        ("16x64b", (96, 32), 32, "expects rows=64 or 128"),
        ("32x32b", (32, 32), 32, "expects rows=64 or 128"),
        ("16x64b", (128, 32), 8, "16-bit"),
        ("16x64b", (128, 32), 64, "bit"),
        ("16x64b", (128, 3), 32, "multiple of 2"),
        ("16x256b", (128, 12), 16, "multiple of 16"),
        ("16x256b", (128, 512), 32, "PTX ISA 9.0 Table 49"),  # rep 64
        ("16x128b", (64, 512), 32, "PTX ISA 9.0 Table 49"),  # rep 128
        ("16x64b", (128, 6), 32, "PTX ISA 9.0 Table 49"),  # rep 3
        ("32x32b", (128, 256), 32, "PTX ISA 9.0 Table 49"),
        ("32x32b", (64, 64), 16, "fp32-only"),
        ("32x32b", (64, 33), 32, "expects even N"),
        ("32x32b", (64, 6), 32, "PTX ISA 9.0 Table 49"),  # N/2 = 3
        ("32x32b", (64, 512), 32, "PTX ISA 9.0 Table 49"),  # N/2 = 256
    ],
)
def test_atom_layout_errors(shape, rc, bits, match):
    with pytest.raises(ValueError, match=match):
        tcgen05_atom_layout(shape, rc, bits)
