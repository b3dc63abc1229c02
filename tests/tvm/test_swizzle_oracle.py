"""tilemagic's swizzle(per_element, swizzle_len, atom_len[, tile]) against TVM's ComposeLayout.

The installed ``apache-tvm`` wheel is the oracle (marker ``tvm``; skipped without it): for many
parameter sets and tiles, ``ComposeLayout(per_element, swizzle_len, atom_len, tile).apply(i, j,
shape=...)["m"]`` must equal tilemagic's ``ComposeLayout.apply`` on every element.
"""

import itertools

import numpy as np
import pytest

pytestmark = pytest.mark.tvm
tvm_layout = pytest.importorskip("tvm.tirx.layout")

from tilemagic.layout import TileLayout  # noqa: E402
from tilemagic.layout.swizzle import ComposeLayout  # noqa: E402

TILES = [  # (shape, strides on m)
    ((8, 64), (64, 1)),
    ((16, 32), (1, 16)),  # column-major
    ((8, 2, 32), (32, 256, 1)),
    ((4, 128), (128, 1)),
]
# TVM accepts atom_len >= swizzle_len only (so does tilemagic); swizzle_len 0 is the identity
PARAMS = [p for p in itertools.product((0, 1, 2, 3, 4), (0, 1, 2, 3), (1, 3, 4, 5)) if sum(p) <= 9 and p[2] >= p[1]]


def test_tvm_and_tilemagic_reject_the_same_parameters():
    tile = _tvm_tile((8, 64), (64, 1))
    for p in itertools.product(range(5), range(4), range(6)):
        try:
            tvm_layout.ComposeLayout(*p, tile)
            tvm_ok = True
        except Exception:  # noqa: BLE001 - TVM raises its InternalError
            tvm_ok = False
        try:
            ComposeLayout(*p, TileLayout.from_spec((8, 64), [64, 1]))
            ours_ok = True
        except ValueError:
            ours_ok = False
        assert tvm_ok == ours_ok, p


def _tvm_tile(shape, strides):
    return tvm_layout.TileLayout(tvm_layout.S[tuple(shape):tuple(strides)])


@pytest.mark.parametrize("shape,strides", TILES, ids=[f"{s}:{t}" for s, t in TILES])
def test_apply_matches_tvm_compose_layout(shape, strides):
    ours_tile = TileLayout.from_spec(shape, list(strides))
    theirs_tile = _tvm_tile(shape, strides)
    n = int(np.prod(shape))
    rng = np.random.default_rng(0)
    points = rng.choice(n, size=min(n, 96), replace=False)
    lshape = (shape[0], n // shape[0])
    checked = 0
    for m_, b_, s_ in PARAMS:
        ours = ComposeLayout(m_, b_, s_, ours_tile)
        theirs = tvm_layout.ComposeLayout(m_, b_, s_, theirs_tile)
        got = ours.apply(np.arange(n))["m"]
        for p in points:
            i, j = divmod(int(p), lshape[1])
            want = int(theirs.apply(i, j, shape=list(lshape))["m"])
            assert got[p] == want, (m_, b_, s_, i, j)
            checked += 1
    assert checked == len(PARAMS) * len(points)
