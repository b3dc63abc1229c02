"""TileLayout algebra: spec text, apply, canonicalize, group and slice.

Cases follow TVM's ``tvm.tirx.layout`` (apache-tvm 0.27.0.post1).  ``slice`` is
checked by brute force: the sliced layout applied over the region's own
coordinates must equal the full layout applied at ``begin + coordinate``, for
random layouts, shapes and regions (a seeded sweep plus hypothesis).
"""

import itertools
import math
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tilemagic.arch.threads import MEMORY_AXES, THREAD_AXES
from tilemagic.layout import (
    Iter,
    TileLayout,
    distinct,
    row_major,
    tcgen05_atom_layout,
    tmem_datapath_layout,
    wg_local_layout,
)

S = TileLayout.from_spec


def read_back(text):
    """A layout's text as the language reads it (the lark grammar's ``S[...]`` rule, then the lowering's
    conversion): the one parser of layouts.  The grammar has no ``R[...]`` replica term and no negative
    offset (``- 3@TCol``): callers skip such layouts."""
    from tilemagic.lang.parser import parse
    from tilemagic.lower.program import _s_layout

    return _s_layout(parse(f"shared X: float32[1] @ {text}").buffers[0].layout)


HYP = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ----------------------------------------------------------------------------- construction / text
def test_axes_constants():
    assert THREAD_AXES == ("laneid", "warpid", "tid_in_wg", "wid_in_wg", "wgid", "tx")
    assert MEMORY_AXES == ("m", "TLane", "TCol")


def test_iter_validation_and_hashing():
    assert Iter(4, 2, "TCol") == Iter(np.int64(4), 2, "TCol")
    assert hash(Iter(4, 2)) == hash(Iter(4, 2, "m"))
    with pytest.raises(ValueError, match=">= 1"):
        Iter(0, 1, "m")
    with pytest.raises(ValueError, match="axis"):
        Iter(2, 1, "bad axis")
    with pytest.raises(TypeError):
        Iter(2.5, 1, "m")


def test_from_spec_forms():
    a = S((128, 8), [(1, "tid_in_wg"), (1, "m")])
    assert a == S((128, 8), [(1, "tid_in_wg"), 1])
    assert a == S((128, 8), ["tid_in_wg", 1])
    assert a == S((128, 8), [SimpleNamespace(value=1, axis="tid_in_wg"), SimpleNamespace(value=1, axis="m")])
    assert a == wg_local_layout(8)
    assert S((4, 8)) == S((4, 8), [8, 1]) == row_major((4, 8))
    assert S(8, (2, "TCol")) == TileLayout((Iter(8, 2, "TCol"),))
    off = S((4, 16, 32), [(32, "TLane"), (1, "TLane"), (1, "TCol")], [(16, "TLane")])
    assert off.offset == (("TLane", 16),)
    assert off == S((4, 16, 32), [(32, "TLane"), (1, "TLane"), (1, "TCol")], (16, "TLane"))
    with pytest.raises(ValueError, match="2 extents but 1 strides"):
        S((2, 3), [(1, "m")])


def test_offsets_normalised():
    lay = TileLayout((Iter(4, 1),), offset=(("TLane", 0), ("m", 3), ("TCol", 2), ("m", 4)))
    assert lay.offset == (("TCol", 2), ("m", 7))
    assert lay.offset_of("m") == 7 and lay.offset_of("TLane") == 0
    assert TileLayout((Iter(4, 1),), offset={"m": 0}).offset == ()


@pytest.mark.parametrize(
    "lay,text",
    [
        (wg_local_layout(8), "S[(128, 8) : (1@tid_in_wg, 1)]"),
        (tmem_datapath_layout("F", 64, 32, 1), "S[(4, 16, 32) : (32@TLane, 1@TLane, 1@TCol)] + 16@TLane"),
        (row_major(8), "S[8 : 1]"),
        (S((2, 3), [(4, "TCol"), 1], [(5, "m"), (-3, "TCol")]), "S[(2, 3) : (4@TCol, 1)] - 3@TCol + 5"),
        (
            S((32, 4), [(1, "TLane"), (1, "TCol")], replica=[(4, 32, "TLane")]),
            "S[(32, 4) : (1@TLane, 1@TCol)] + R[4 : 32@TLane]",
        ),
        (
            S((8, 2, 4, 2), [(4, "laneid"), (1, "warpid"), (1, "laneid"), 1], [(5, "warpid")], [(2, 4, "warpid")]),
            "S[(8, 2, 4, 2) : (4@laneid, 1@warpid, 1@laneid, 1)] + R[2 : 4@warpid] + 5@warpid",
        ),
    ],
)
def test_str_and_round_trip(lay, text):
    assert str(lay) == text
    assert "R[" in text or " - " in text or read_back(text) == lay
    assert repr(lay) == f"TileLayout({text})"


def test_read_back_forms():
    assert read_back("S[4, 8]") == row_major((4, 8))
    assert read_back("S[(4, 8) : (8, 1)] + 2 + 3") == S((4, 8), None, [(5, "m")])
    assert read_back("S[(128,) : (1@tid_in_wg,)]") == S(128, [(1, "tid_in_wg")])


# ----------------------------------------------------------------------------- apply
def test_apply_examples():
    lay = S((2, 4), [4, 1])
    assert int(lay.apply(5)["m"]) == 5
    # SplitCoord: no modulo on the outermost component
    assert int(lay.apply(9)["m"]) == 9
    two = S((2, 4), [(1, "TLane"), (1, "TCol")])
    r = two.apply(9)
    assert (int(r["TLane"]), int(r["TCol"])) == (2, 1)
    # one coordinate per shard iter when no shape is given
    r = two.apply(1, 3)
    assert (int(r["TLane"]), int(r["TCol"])) == (1, 3)
    # coordinates over a shape that differs from the iters: flatten, then split
    r = S((4, 2, 4), [(1, "TLane"), (64, "TLane"), (1, "TCol")]).apply(3, 6, shape=(4, 8))
    assert (int(r["TLane"]), int(r["TCol"])) == (3 + 64, 2)


def test_apply_vectorised_and_keys():
    lay = S((4, 16, 32), [(32, "TLane"), (1, "TLane"), (1, "TCol")], [(16, "TLane"), (3, "m")], [(2, 1, "tx")])
    r = np.arange(64)[:, None]
    c = np.arange(32)[None, :]
    res = lay.apply(r, c, shape=(64, 32))
    assert set(res) == {"TLane", "TCol", "m", "tx"}
    assert all(v.dtype == np.int64 and v.shape == (64, 32) for v in res.values())
    np.testing.assert_array_equal(res["TLane"], 32 * (r // 16) + 16 + r % 16 + 0 * c)
    np.testing.assert_array_equal(res["TCol"], c + 0 * r)
    assert (res["m"] == 3).all() and (res["tx"] == 0).all()  # replica is not enumerated
    scalar = lay.apply(17, 5, shape=(64, 32))
    assert scalar["TLane"].shape == () and int(scalar["TLane"]) == 32 + 16 + 1


def test_apply_errors():
    lay = row_major((4, 8))
    with pytest.raises(ValueError, match="elements"):
        lay.apply(0, 0, shape=(4, 4))
    with pytest.raises(ValueError, match="coordinates"):
        lay.apply(0, 0, 0, shape=(4, 8))
    with pytest.raises(ValueError, match="shape"):
        lay.apply(0, 0, 0)


def test_size_span_iters():
    frag = tcgen05_atom_layout("16x64b", (64, 8), 32)
    assert frag.size() == 512
    assert frag.size("m") == 4
    assert [i.axis for i in frag.thread_iters()] == ["wid_in_wg", "laneid", "laneid", "laneid"]
    assert [i.axis for i in frag.memory_iters()] == ["m"]
    F = tmem_datapath_layout("F", 64, 32, 1)
    assert F.span("TLane") == 1 + 3 * 32 + 15 + 16
    assert F.span("TCol") == 32


# ----------------------------------------------------------------------------- canonicalize
@pytest.mark.parametrize(
    "before,after",
    [
        (S((8, 2, 3, 6), [6, 24, 6, 1]), S((8, 2, 18), [6, 24, 1])),
        (S((1, 8, 1), [5, 1, 7]), S(8, [1])),
        (S((1, 1), [(3, "TLane"), (1, "TCol")]), S(1, [(1, "TLane")])),
        (S((4, 8), [8, 1]), S(32, [1])),
        (S((2, 3, 2), [1, (1, "TLane"), 2]), S((2, 3, 2), [1, (1, "TLane"), 2])),  # not adjacent
        (S((4, 8), [1, 4]), S((4, 8), [1, 4])),  # adjacent but not nested
        # warpgroup scope: wid_in_wg -> tid_in_wg x32, laneid -> tid_in_wg
        (S((4, 32, 8), [(1, "wid_in_wg"), (1, "laneid"), 1]), wg_local_layout(8)),
        # cta scope
        (S((4, 32), [(1, "warpid"), (1, "laneid")]), S(128, [(1, "tx")])),
        (S((2, 128), [(1, "wgid"), (1, "tid_in_wg")]), S(256, [(1, "tx")])),
        (S((2, 4, 32), [(1, "wgid"), (1, "wid_in_wg"), (1, "laneid")]), S(256, [(1, "tx")])),
        # cta scope with a warp as the finest unit: wid_in_wg -> warpid
        (S((2, 4), [(1, "wgid"), (1, "wid_in_wg")]), S(8, [(1, "warpid")])),
        # a single-scope layout keeps its axis
        (S((32, 4), [(1, "laneid"), 1]), S((32, 4), [(1, "laneid"), 1])),
        (S((4, 4), [(1, "wid_in_wg"), 1]), S((4, 4), [(1, "wid_in_wg"), 1])),
        # offsets are fused too, zero offsets dropped
        (S(32, [(1, "laneid")], [(1, "wid_in_wg"), (0, "m")]), S(32, [(1, "tid_in_wg")], [(32, "tid_in_wg")])),
        # extent-1 iters do not widen the scope
        (S((1, 32), [(1, "wid_in_wg"), (1, "laneid")]), S(32, [(1, "laneid")])),
    ],
)
def test_canonicalize_cases(before, after):
    assert before.canonicalize() == after
    assert before.is_equal(after)
    assert before.canonicalize().canonicalize() == after


def test_canonicalize_replica_sorted():
    a = S(32, [(1, "TLane")], replica=[(4, 32, "TLane"), (2, 8, "TCol"), (1, 5, "m")])
    b = S(32, [(1, "TLane")], replica=[(2, 8, "TCol"), (4, 32, "TLane")])
    assert a != b
    assert a.canonicalize() == b.canonicalize()
    assert a.canonicalize().replica == (Iter(2, 8, "TCol"), Iter(4, 32, "TLane"))


def test_wid_lane_fragment_equals_tid_layout():
    frag = S((4, 32, 16), [(1, "wid_in_wg"), (1, "laneid"), 1])
    assert frag.is_equal(wg_local_layout(16))
    assert not frag.is_equal(wg_local_layout(8))
    assert not frag.is_equal("S[(128, 16) : (1@tid_in_wg, 1)]")
    # the 32x32b register fragment is the wg_local layout
    assert tcgen05_atom_layout("32x32b", (128, 16), 32).is_equal(frag)


MEM_AXES = ["m", "TLane", "TCol"]


@st.composite
def mem_layouts(draw, axes=MEM_AXES, max_iters=5):
    n = draw(st.integers(1, max_iters))
    iters = [
        Iter(draw(st.sampled_from([1, 2, 3, 4, 6, 8])), draw(st.integers(0, 40)), draw(st.sampled_from(axes)))
        for _ in range(n)
    ]
    offs = draw(st.lists(st.tuples(st.sampled_from(axes), st.integers(-5, 20)), max_size=2))
    return TileLayout(tuple(iters), (), tuple(offs))


def _same_apply(a, b, coords_a, coords_b, shape_a, shape_b):
    ra = a.apply(*coords_a, shape=shape_a)
    rb = b.apply(*coords_b, shape=shape_b)
    for ax in set(ra) | set(rb):
        np.testing.assert_array_equal(ra.get(ax, 0), rb.get(ax, 0), err_msg=f"axis {ax}")


@HYP
@given(mem_layouts())
def test_canonicalize_preserves_apply_and_round_trips(lay):
    idx = np.arange(lay.size())
    canon = lay.canonicalize()
    _same_apply(lay, canon, (idx,), (idx,), None, None)
    assert canon.canonicalize() == canon
    if all(v >= 0 for _, v in lay.offset):  # the language reads no negative offset
        assert read_back(str(lay)) == lay
        assert read_back(str(canon)) == canon


# ----------------------------------------------------------------------------- group
def test_group_examples():
    lay, seps = row_major((4, 8)).canonicalize().group((4, 8))
    assert lay == S((4, 8), [8, 1]) and seps == (0, 1, 2)
    lay, seps = S((4, 8), [8, 1]).group((2, 16))
    assert lay == S((2, 2, 8), [16, 8, 1]) and seps == (0, 1, 3)
    F = tmem_datapath_layout("F", 64, 32, 1)
    lay, seps = F.group((64, 32))
    assert lay == F and seps == (0, 2, 3)
    lay, seps = row_major(32).group((1, 32, 1))
    assert seps == (0, 1, 2, 3)
    assert [math.prod(i.extent for i in lay.shard[seps[k]:seps[k + 1]]) for k in range(3)] == [1, 32, 1]


def test_group_errors():
    with pytest.raises(ValueError, match="elements"):
        row_major((4, 8)).group((4, 4))
    with pytest.raises(ValueError, match="cannot split"):
        S((3, 4), [4, 1]).group((2, 6))
    with pytest.raises(ValueError, match="cannot split"):
        S((3, 2), [2, 1]).group((2, 3))
    assert S((3, 4), [4, 1]).try_group((2, 6)) is None


@HYP
@given(mem_layouts(), st.data())
def test_group_preserves_apply(lay, data):
    shape = _run_shape(lay, data.draw(st.lists(st.booleans(), min_size=8, max_size=8)))
    grouped, seps = lay.group(shape)
    assert len(seps) == len(shape) + 1
    for k, s in enumerate(shape):
        assert math.prod(i.extent for i in grouped.shard[seps[k]:seps[k + 1]]) == s
    idx = np.arange(lay.size())
    _same_apply(lay, grouped, (idx,), (idx,), None, None)


def _run_shape(lay, cuts):
    """A shape made of products of consecutive runs of the layout's iters."""
    shape, acc = [], 1
    for i, it in enumerate(lay.shard):
        acc *= it.extent
        if i == len(lay.shard) - 1 or cuts[i % len(cuts)]:
            shape.append(acc)
            acc = 1
    return tuple(shape)


# ----------------------------------------------------------------------------- slice
def check_slice(lay, shape, region):
    """Brute-force: sliced.apply(local) == canonical.apply(begin + local); returns the slice."""
    sub = lay.slice(shape, region)
    if sub is None:
        return None
    ext = tuple(e for _, e in region)
    assert sub.size() == math.prod(ext)
    local = np.meshgrid(*[np.arange(e) for e in ext], indexing="ij")
    full = [b + c for (b, _), c in zip(region, local)]
    _same_apply(sub, lay.canonicalize(), local, full, ext, shape)
    return sub


def test_slice_tmem_column_window():
    D = tmem_datapath_layout("D", 128, 64)
    for c0, w in [(0, 64), (8, 16), (3, 10), (32, 32), (63, 1)]:
        sub = check_slice(D, (128, 64), [(0, 128), (c0, w)])
        assert sub.offset_of("TCol") == c0
        assert sub.is_equal(S((128, w), [(1, "TLane"), (1, "TCol")], [(c0, "TCol")]))


def test_slice_F_sub_slab_offset():
    F1 = tmem_datapath_layout("F", 64, 32, sub_slab=1)
    sub = check_slice(F1, (64, 32), [(0, 64), (0, 32)])
    assert sub.offset_of("TLane") == 16 and sub.offset_of("TCol") == 0
    assert sub.is_equal(F1)
    win = check_slice(F1, (64, 32), [(0, 64), (8, 8)])
    assert win.is_equal(TileLayout(tmem_datapath_layout("F", 64, 8, 1).shard, (), (("TLane", 16), ("TCol", 8))))
    # one warp's 16 rows: lane offset 32*w + 16
    rows = check_slice(F1, (64, 32), [(32, 16), (0, 32)])
    assert rows.offset_of("TLane") == 64 + 16


def test_slice_D_as_upper_sub_slab_rows():
    D = tmem_datapath_layout("D", 128, 32)
    sub = check_slice(D, (128, 32), [(16, 16), (0, 32)])
    assert sub.offset_of("TLane") == 16


def test_slice_B_partial_columns_not_contiguous():
    B = tmem_datapath_layout("B", 64, 64)
    assert check_slice(B, (64, 64), [(0, 64), (0, 32)]) is not None  # the first lane half
    assert check_slice(B, (64, 64), [(0, 64), (16, 32)]) is None  # straddles the lane split


def test_slice_fragment_columns():
    frag = tcgen05_atom_layout("16x256b", (128, 64), 32)
    sub = check_slice(frag, (128, 64), [(0, 128), (0, 32)])
    assert sub is not None
    assert check_slice(frag, (128, 64), [(0, 128), (32, 32)]).offset_of("m") == 16


def test_slice_wrap_around_two_iters():
    lay = S((4, 8), [(100, "TCol"), (1, "TCol")])
    sub = check_slice(lay, (32,), [(4, 8)])  # digits (0, 4..7) then (1, 0..3)
    assert sub is not None and len(sub.shard) == 2
    assert check_slice(lay, (32,), [(6, 4)]) is not None  # 6, 7 | 100, 101
    assert check_slice(lay, (32,), [(5, 4)]) is None  # 5, 6, 7 | 100: unequal halves


def test_slice_full_region_is_canonical_layout():
    for lay, shape in [
        (tmem_datapath_layout("B", 64, 32), (64, 32)),
        (tcgen05_atom_layout("16x64b", (64, 16), 16), (64, 16)),
        (row_major((3, 5)), (3, 5)),
    ]:
        assert lay.slice(shape, [(0, s) for s in shape]) == lay.canonicalize()


def test_slice_errors():
    lay = row_major((4, 8))
    with pytest.raises(ValueError, match="out of bounds"):
        lay.slice((4, 8), [(0, 4), (4, 5)])
    with pytest.raises(ValueError, match="dims"):
        lay.slice((4, 8), [(0, 4)])
    assert S((3, 4), [1, 3]).slice((2, 6), [(0, 1), (0, 6)]) is None  # shape does not group


@pytest.mark.parametrize("seed", range(6))
def test_slice_random_sweep(seed):
    rng = np.random.default_rng(seed)
    ok = 0
    for _ in range(60):
        n = int(rng.integers(1, 5))
        iters = tuple(
            Iter(int(rng.choice([1, 2, 3, 4, 8])), int(rng.integers(0, 30)), str(rng.choice(MEM_AXES)))
            for _ in range(n)
        )
        lay = TileLayout(iters, (), (("TCol", int(rng.integers(0, 5))),))
        shape = _run_shape(lay, [bool(b) for b in rng.integers(0, 2, 8)])
        region = []
        for s in shape:
            b = int(rng.integers(0, s))
            region.append((b, int(rng.integers(1, s - b + 1))))
        if check_slice(lay, shape, region) is not None:
            ok += 1
    assert ok >= 15


@pytest.mark.parametrize("shape", [(4, 8), (6, 10), (1, 7), (3, 5, 2)])
def test_slice_row_major_always_representable(shape):
    lay = row_major(shape)
    for region in itertools.islice(
        itertools.product(*[[(b, e) for b in range(s) for e in range(1, s - b + 1)] for s in shape]), 0, None, 7
    ):
        assert check_slice(lay, shape, list(region)) is not None


@HYP
@given(mem_layouts(max_iters=4), st.data())
def test_slice_matches_apply_hypothesis(lay, data):
    shape = _run_shape(lay, data.draw(st.lists(st.booleans(), min_size=8, max_size=8)))
    region = []
    for s in shape:
        b = data.draw(st.integers(0, s - 1))
        region.append((b, data.draw(st.integers(1, s - b))))
    check_slice(lay, shape, region)
    # the whole tile always slices to the canonical layout
    assert lay.slice(shape, [(0, s) for s in shape]) is not None


@HYP
@given(
    st.sampled_from(["16x64b", "16x128b", "16x256b"]),
    st.sampled_from([64, 128]),
    st.sampled_from([32, 16]),
    st.data(),
)
def test_slice_fragment_hypothesis(shape, rows, bits, data):
    unit = {"16x64b": 2, "16x128b": 4, "16x256b": 8}[shape] * (32 // bits)
    cols = 4 * unit
    frag = tcgen05_atom_layout(shape, (rows, cols), bits)
    r0 = data.draw(st.integers(0, rows - 1))
    c0 = data.draw(st.integers(0, cols - 1))
    region = [(r0, data.draw(st.integers(1, rows - r0))), (c0, data.draw(st.integers(1, cols - c0)))]
    check_slice(frag, (rows, cols), region)


@given(st.lists(st.integers(-5, 40), max_size=60), st.integers(0, 3))
def test_distinct_is_unique_count_equals_size(xs, spread):
    """:func:`tilemagic.layout.tile.distinct` against ``np.unique``: small ranges (the bitmap) and wide ones (the
    sort), any shape."""
    a = np.asarray(xs, np.int64) * (1 + 10 ** (3 * spread))
    assert distinct(a) == (np.unique(a).size == a.size)
    if a.size % 2 == 0 and a.size:
        assert distinct(a.reshape(2, -1)) == distinct(a)
