"""tcgen05 hardware tables: per-thread mapping, legality, quadrant rule, allocation.

The mapping is checked against an *independent* decoder written here from the
figure descriptions of PTX ISA 9.0 §9.7.16.2.3 (matrix fragments):
each figure is rebuilt as a table cell -> (thread, register) by explicit loops,
never by the closed forms that ``cell_offsets`` implements.  Legality is
checked against the ptxas 13.0.88 sweep in ``data/tcgen05_legality.json``.
"""

import json
import pathlib

import numpy as np
import pytest

from tilemagic.arch import tcgen05 as hw

DATA = pathlib.Path(__file__).parent / "data" / "tcgen05_legality.json"


# ----------------------------------------------------------------------------- reference decoder
def figure_table(shape, num, split=None):
    """(row, col) -> (thread, register) rebuilt from the §5.2 figure descriptions."""
    cells = {}

    def put(row, col, t, r):
        assert (row, col) not in cells, f"figure decoder bug: cell {(row, col)} filled twice"
        cells[(row, col)] = (t, r)

    if shape == "32x32b":
        # thread t owns TMEM lane t; register r is column r
        for t in range(32):
            for r in range(num):
                put(t, r, t, r)
    elif shape == "16x64b":
        # x1 figure: lane k (0-7): col 0 = T(4k), col 1 = T(4k+2); lane 8+k: T(4k+1), T(4k+3).
        # .xN: register r sits at columns 2r and 2r+1.
        for r in range(num):
            for k in range(8):
                put(k, 2 * r, 4 * k, r)
                put(k, 2 * r + 1, 4 * k + 2, r)
                put(8 + k, 2 * r, 4 * k + 1, r)
                put(8 + k, 2 * r + 1, 4 * k + 3, r)
    elif shape == "16x128b":
        # lane k (0-7) holds T(4k)..T(4k+3) register r0 in columns 0..3; lane 8+k holds their r1.
        # .xN: register r adds 4*(r>>1) to the column.
        for n in range(num):
            for k in range(8):
                for j in range(4):
                    put(k, 4 * n + j, 4 * k + j, 2 * n)
                    put(8 + k, 4 * n + j, 4 * k + j, 2 * n + 1)
    elif shape == "16x256b":
        # lane k holds T(4k+j).r0 at column 2j and T(4k+j).r1 at 2j+1; lane 8+k holds r2, r3 likewise.
        # .xN: register r adds 8*(r>>2) to the column.
        for n in range(num):
            for k in range(8):
                for j in range(4):
                    put(k, 8 * n + 2 * j, 4 * k + j, 4 * n)
                    put(k, 8 * n + 2 * j + 1, 4 * k + j, 4 * n + 1)
                    put(8 + k, 8 * n + 2 * j, 4 * k + j, 4 * n + 2)
                    put(8 + k, 8 * n + 2 * j + 1, 4 * k + j, 4 * n + 3)
    elif shape == "16x32bx2":
        # lane k (0-15) holds Tk at column base and T(16+k) at base + immHalfSplitoff; register r = column r
        split = num if split is None else split
        for r in range(num):
            for k in range(16):
                put(k, r, k, r)
                put(k, split + r, 16 + k, r)
    else:  # pragma: no cover
        raise AssertionError(shape)
    return cells


SHAPE_NUMS = [(s, n) for s in hw.SHAPES for n in hw.NUMS if hw.is_legal_num(s, n)]


@pytest.mark.parametrize("shape,num", SHAPE_NUMS, ids=[f"{s}.x{n}" for s, n in SHAPE_NUMS])
def test_cell_offsets_match_figure_decoder(shape, num):
    nregs = hw.regs_per_thread(shape, num)
    split = num  # CUTLASS convention: the two halves are column-contiguous
    table = figure_table(shape, num, split)
    t = np.arange(32)[:, None]
    r = np.arange(nregs)[None, :]
    row, col = hw.cell_offsets(shape, t, r, split=split)
    assert row.shape == col.shape == (32, nregs)
    assert row.dtype == np.int64 and col.dtype == np.int64
    got = {(int(row[ti, ri]), int(col[ti, ri])): (ti, ri) for ti in range(32) for ri in range(nregs)}
    # every (thread, register) lands on a distinct cell, and the cells are exactly the figure's
    assert len(got) == 32 * nregs
    assert got == table


@pytest.mark.parametrize("shape,num", SHAPE_NUMS, ids=[f"{s}.x{n}" for s, n in SHAPE_NUMS])
def test_mapping_is_bijection_onto_footprint(shape, num):
    nregs = hw.regs_per_thread(shape, num)
    width = hw.cols_per_instr(shape, num)
    halves = 2 if shape == "16x32bx2" else 1
    t, r = np.meshgrid(np.arange(32), np.arange(nregs), indexing="ij")
    row, col = hw.cell_offsets(shape, t, r, split=width)
    cells = set(zip(row.ravel().tolist(), col.ravel().tolist()))
    assert len(cells) == row.size
    assert cells == {(a, b) for a in range(hw.LANES[shape]) for b in range(halves * width)}
    # registers per thread x threads == lanes x columns (unpacked, 32-bit cells)
    assert 32 * nregs == hw.LANES[shape] * width * halves


def test_cell_offsets_broadcasts_scalars():
    row, col = hw.cell_offsets("16x256b", 5, 6)
    assert row.shape == () and int(row) == (5 >> 2) + 8 and int(col) == 2 * 1 + 0 + 8
    row, col = hw.cell_offsets("16x32bx2", np.array([3, 19]), 2, split=7)
    assert row.tolist() == [3, 3] and col.tolist() == [2, 9]


def test_cell_offsets_unknown_shape():
    with pytest.raises(ValueError, match="unknown instruction shape"):
        hw.cell_offsets("16x512b", 0, 0)


# ----------------------------------------------------------------------------- tables and legality
def test_tables():
    assert hw.SHAPES == ("32x32b", "16x64b", "16x128b", "16x256b", "16x32bx2")
    assert [hw.LANES[s] for s in hw.SHAPES] == [32, 16, 16, 16, 16]
    assert [hw.REGS_PER_NUM[s] for s in hw.SHAPES] == [1, 1, 2, 4, 1]
    assert [hw.COL_FACTOR[s] for s in hw.SHAPES] == [1, 2, 4, 8, 1]
    assert hw.NUMS == (1, 2, 4, 8, 16, 32, 64, 128)
    assert max(hw.LEGAL_NUMS["16x128b"]) == 64
    assert max(hw.LEGAL_NUMS["16x256b"]) == 32
    for s in ("32x32b", "16x64b", "16x32bx2"):
        assert hw.LEGAL_NUMS[s] == hw.NUMS
    assert hw.ALLOC_COLS == (32, 64, 128, 256, 512)
    assert (hw.TMEM_LANES, hw.TMEM_COLS) == (128, 512)


def _legality_entries():
    data = json.loads(DATA.read_text())
    out = []
    for key, (rc, msg) in sorted(data.items()):
        op, shape, xnum, pk = key.split("_")
        out.append((key, op, shape, int(xnum[1:]), pk == "p", rc, msg))
    return out


LEGALITY = _legality_entries()

# registers per thread in the §4 table (rows .num, columns shapes)
REG_TABLE = {
    "32x32b": [1, 2, 4, 8, 16, 32, 64, 128],
    "16x64b": [1, 2, 4, 8, 16, 32, 64, 128],
    "16x32bx2": [1, 2, 4, 8, 16, 32, 64, 128],
    "16x128b": [2, 4, 8, 16, 32, 64, 128, None],
    "16x256b": [4, 8, 16, 32, 64, 128, None, None],
}


def test_legality_file_has_160_entries():
    assert len(LEGALITY) == 160
    assert sum(1 for e in LEGALITY if e[5] != 0) == 12


@pytest.mark.parametrize("key,op,shape,num,pack,rc,msg", LEGALITY, ids=[e[0] for e in LEGALITY])
def test_legality_matches_ptxas(key, op, shape, num, pack, rc, msg):
    legal = rc == 0
    assert hw.is_legal_num(shape, num) == legal, key
    expected_regs = REG_TABLE[shape][hw.NUMS.index(num)]
    if legal:
        assert msg == ""
        assert hw.regs_per_thread(shape, num) == expected_regs
        chain = hw.instr_chain(op, shape, num, pack=pack)
        packq = (".pack::16b" if op == "ld" else ".unpack::16b") if pack else ""
        assert chain == f"tcgen05.{op}.sync.aligned.{shape}.x{num}{packq}.b32"
        assert hw.cols_per_instr(shape, num, pack) == num * hw.COL_FACTOR[shape] * (2 if pack else 1)
    else:
        assert expected_regs is None
        assert "Illegal vector size" in msg
        with pytest.raises(ValueError, match="PTX ISA 9.0 Table 49"):
            hw.regs_per_thread(shape, num)
        with pytest.raises(ValueError, match="PTX ISA 9.0 Table 49"):
            hw.instr_chain(op, shape, num)


def test_is_legal_num_rejects_non_powers():
    assert not hw.is_legal_num("32x32b", 3)
    assert not hw.is_legal_num("32x32b", 256)
    assert not hw.is_legal_num("32x32b", 0)
    with pytest.raises(ValueError, match="unknown instruction shape"):
        hw.is_legal_num("8x8b", 1)


def test_instr_chain_examples():
    assert hw.instr_chain("ld", "32x32b", 4) == "tcgen05.ld.sync.aligned.32x32b.x4.b32"
    assert hw.instr_chain("st", "16x256b", 32) == "tcgen05.st.sync.aligned.16x256b.x32.b32"
    with pytest.raises(ValueError, match="'ld' or 'st'"):
        hw.instr_chain("cp", "32x32b", 4)


@pytest.mark.parametrize(
    "shape,num,pack,cols",
    [
        ("32x32b", 2, False, 2),
        ("16x64b", 2, False, 4),
        ("16x256b", 1, False, 8),
        ("32x32b", 2, True, 4),
        ("16x128b", 1, True, 8),
        ("32x32b", 128, True, 256),
        ("16x64b", 128, False, 256),
        ("16x32bx2", 8, False, 8),
    ],
)
def test_cols_per_instr_examples(shape, num, pack, cols):
    # the examples confirmed by the ptxas -g-tmem-access-check bounds check (observed with ptxas 13.0)
    assert hw.cols_per_instr(shape, num, pack) == cols


# ----------------------------------------------------------------------------- quadrant rule
@pytest.mark.parametrize("shape", hw.SHAPES)
@pytest.mark.parametrize("warp", range(8))
def test_tmem_cell_takes_quadrant_from_warp(shape, warp):
    num = 2
    nregs = hw.regs_per_thread(shape, num)
    t, r = np.meshgrid(np.arange(32), np.arange(nregs), indexing="ij")
    row, col = hw.cell_offsets(shape, t, r, split=num)
    col_base = 64
    # relative (lane field 0) and absolute (lane field 32*(warp%4)) addresses give the same cells
    for lane_field in (0, 32 * (warp % 4)):
        taddr = (lane_field << 16) | col_base
        lane, c = hw.tmem_cell(shape, t, r, taddr, warp, split=num)
        np.testing.assert_array_equal(lane, 32 * (warp % 4) + row)
        np.testing.assert_array_equal(c, col_base + col)
        assert not hw.quadrant_mismatch(taddr, warp)
    if shape != "32x32b":
        # upper half-slab: lane field 16 (or a +16 row immediate) moves every lane by 16
        lane16, _ = hw.tmem_cell(shape, t, r, (16 << 16) | col_base, warp, split=num)
        np.testing.assert_array_equal(lane16, 32 * (warp % 4) + 16 + row)
        lane_imm, c_imm = hw.tmem_cell(shape, t, r, col_base, warp, row_imm=16, col_imm=3, split=num)
        np.testing.assert_array_equal(lane_imm, lane16)
        np.testing.assert_array_equal(c_imm, col_base + 3 + col)
    assert lane.min() >= 32 * (warp % 4) and lane.max() < 32 * (warp % 4) + 32


def test_quadrant_mismatch_strict_mode():
    for warp in range(8):
        for quad in range(4):
            taddr = (32 * quad) << 16
            assert hw.quadrant_mismatch(taddr, warp) == (quad not in (0, warp % 4))
    # lane field 16 stays in quadrant 0
    assert not hw.quadrant_mismatch(16 << 16, 3)
    arr = hw.quadrant_mismatch(np.array([0, 64 << 16, 96 << 16]), 2)
    assert arr.tolist() == [False, False, True]


def test_16x32bx2_split_is_a_full_address_add():
    t = np.arange(32)
    lane, col = hw.tmem_cell("16x32bx2", t, 0, taddr=10, warp=1, split=1 << 20)
    # split of 1<<20 moves the upper threads 16 lanes down, same column
    np.testing.assert_array_equal(lane[:16], 32 + t[:16])
    np.testing.assert_array_equal(lane[16:], 32 + 16 + (t[16:] - 16))
    assert set(col.tolist()) == {10}
    lane, col = hw.tmem_cell("16x32bx2", t, 1, taddr=10, warp=1, split=4)
    np.testing.assert_array_equal(col, np.where(t >= 16, 15, 11))
    np.testing.assert_array_equal(lane, 32 + (t & 15))


# ----------------------------------------------------------------------------- allocation
@pytest.mark.parametrize(
    "need,cols",
    [(0, 32), (1, 32), (32, 32), (33, 64), (64, 64), (65, 128), (200, 256), (256, 256), (257, 512), (512, 512)],
)
def test_alloc_columns(need, cols):
    assert hw.alloc_columns(need) == cols
    assert cols in hw.ALLOC_COLS


def test_alloc_columns_errors():
    with pytest.raises(ValueError, match="512"):
        hw.alloc_columns(513)
    with pytest.raises(ValueError):
        hw.alloc_columns(-1)
