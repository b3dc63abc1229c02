"""The shared-memory bank model (tilemagic.arch.banks): hand-computed cases and an independent brute-force count."""

from __future__ import annotations

import numpy as np
import pytest

from tilemagic.arch import banks
from tilemagic.layout.swizzle import xor_swizzle

T = np.arange(32)


def one(addr, nbytes, active=None, matrix=None):
    c = banks.count(np.asarray(addr)[None, :], nbytes, None if active is None else np.asarray(active)[None, :],
                    matrix)
    return int(c.wavefronts[0]), int(c.ideal[0]), int(c.degree[0])


def brute(addr, nbytes, active, matrix):
    """Per byte, in plain Python: each phase's banks hold the set of distinct words its active lanes touch."""
    if matrix is not None:
        groups, width = [range(8 * i, 8 * i + 8) for i in range(matrix)], 16
    else:
        per = 32 if nbytes <= 4 else 128 // nbytes
        groups, width = [range(p, p + per) for p in range(0, 32, per)], nbytes
    total = ideal = deg = 0
    for g in groups:
        words: dict[int, set] = {}
        for lane in g:
            if not active[lane]:
                continue
            for byte in range(int(addr[lane]), int(addr[lane]) + width):
                words.setdefault((byte // 4) % 32, set()).add(byte // 4)
        w = max((len(v) for v in words.values()), default=0)
        total, ideal, deg = total + w, ideal + (w > 0), max(deg, w)
    return total, ideal, deg


@pytest.mark.parametrize("addr, nbytes, want", [
    (4 * T, 4, (1, 1, 1)),  # consecutive fp32: one wavefront
    (8 * T, 4, (2, 1, 2)),  # every other word: 2-way
    (128 * T, 4, (32, 1, 32)),  # a column of a 32-word row: 32-way
    (0 * T, 4, (1, 1, 1)),  # everyone the same word: a broadcast
    (4 * (T % 4), 4, (1, 1, 1)),  # 4 words, each read by 8 lanes: broadcasts
    (128 * (T % 2), 4, (2, 1, 2)),  # two words of bank 0, each broadcast to 16 lanes
    (2 * T, 2, (1, 1, 1)),  # fp16 consecutive: 16 words
    (64 * T, 2, (16, 1, 16)),  # fp16, 64 bytes apart: words 16t sit in banks 0 and 16, 16 each
    (T, 1, (1, 1, 1)),  # u8 consecutive: 8 words
    (128 * T, 1, (32, 1, 32)),  # u8 column of 128-byte rows
    (4 * T + 1, 1, (1, 1, 1)),  # u8, byte 1 of 32 consecutive words
    (8 * T, 8, (2, 2, 1)),  # 64-bit consecutive: two half-warp phases of 128 bytes
    (16 * T, 8, (4, 2, 2)),  # 64-bit at a 16-byte stride: lanes t and t+8 of a half warp share banks
    (0 * T, 8, (2, 2, 1)),  # 64-bit broadcast: one per phase
    (16 * T, 16, (4, 4, 1)),  # 128-bit consecutive: four quarter-warp phases
    (32 * T, 16, (8, 4, 2)),  # 128-bit at a 32-byte stride: 2-way in each quarter warp
    (128 * T, 16, (32, 4, 8)),  # 128-bit column of 128-byte rows: 8-way in each quarter warp
])
def test_hand_computed(addr, nbytes, want):
    assert one(addr, nbytes) == want


def test_inactive_lanes_touch_nothing():
    only0 = T == 0
    assert one(128 * T, 4, only0) == (1, 1, 1)
    assert one(128 * T, 16, only0) == (1, 1, 1)  # the three quarter warps without an active lane cost nothing
    assert one(128 * T, 4, T % 2 == 0) == (16, 1, 16)
    assert one(4 * T, 4, np.zeros(32, bool)) == (0, 0, 0)


def test_ldmatrix_phases():
    # x4, rows 16 bytes apart (a contiguous 32 x 8 fp16 tile): 4 phases, no conflict
    assert one(16 * T, 2, matrix=4) == (4, 4, 1)
    # x4 of an 8 x 8 block of a float16[8, 64] row-major tile: rows 128 bytes apart, every row in banks 0-3
    rows = 128 * (T % 8) + 16 * (T // 8)
    assert one(rows, 2, matrix=4) == (32, 4, 8)
    # x1 reads lanes 0-7 only: the others' addresses do not matter
    assert one(np.where(T < 8, 16 * T, 128 * T), 2, matrix=1) == (1, 1, 1)
    # x2 with rows 64 bytes apart: rows alternate between banks 0-3 and 16-19, four rows each -> 4-way
    assert one(64 * T, 2, matrix=2) == (8, 2, 4)


@pytest.mark.parametrize("swizzle_len, degree", [(0, 8), (1, 4), (2, 2), (3, 1)])
def test_swizzles_0_to_3_on_a_128_byte_row(swizzle_len, degree):
    """ldmatrix.x4 of the 8 x 8 blocks of a float16[8, 64] tile under swizzle(3, B, 3): 2**B chunks per bank group."""
    elem = 64 * (T % 8) + 8 * (T // 8)  # row t % 8, chunk t // 8 (element addresses before the swizzle)
    addr = 2 * xor_swizzle(elem, 3, swizzle_len, 3)
    assert one(addr, 2, matrix=4) == (4 * degree, 4, degree)
    # the same tile written by a warp with 16-byte stores, lane t storing row t % 8, chunk t // 8
    assert one(addr, 16) == (4 * degree, 4, degree)


def test_brute_force_agrees_on_random_patterns():
    rng = np.random.default_rng(16)
    for trial in range(300):
        nbytes = [1, 2, 4, 8, 16][trial % 5]
        matrix = [None, None, 1, 2, 4][trial % 5] if trial % 3 == 0 else None
        width = 16 if matrix else nbytes
        kind = trial % 4
        if kind == 0:  # arbitrary aligned addresses in a 4 KiB window
            addr = rng.integers(0, 4096 // width, 32) * width
        elif kind == 1:  # strided
            addr = (rng.integers(0, 40) * T + rng.integers(0, 8)) * width
        elif kind == 2:  # few distinct addresses (broadcasts)
            addr = rng.choice(rng.integers(0, 64, 3) * width, 32)
        else:  # a swizzled tile
            elem = rng.integers(0, 512, 32) * (width // 2 if width > 1 else 1)
            addr = xor_swizzle(elem, 3, int(rng.integers(0, 4)), 3) * 2 if width > 1 else elem
            addr = addr // width * width
        active = rng.random(32) < (0.5 if trial % 7 == 0 else 1.01)
        got = banks.count(addr[None, :], nbytes, active[None, :], matrix)
        assert (int(got.wavefronts[0]), int(got.ideal[0]), int(got.degree[0])) == brute(addr, nbytes, active, matrix)


def test_many_instances_at_once_and_bad_input():
    addr = np.stack([4 * T, 128 * T, 0 * T])
    c = banks.count(addr, 4)
    assert c.wavefronts.tolist() == [1, 32, 1] and c.conflicts.tolist() == [0, 31, 0]
    assert c.phase_wavefronts.shape == (3, 1)
    with pytest.raises(ValueError, match="1, 2, 4, 8 or 16"):
        banks.count(addr, 3)
    with pytest.raises(ValueError, match="shape"):
        banks.count(4 * T, 4)
    with pytest.raises(ValueError, match="1, 2 or 4 matrices"):
        banks.phases(2, matrix=3)
    assert banks.bank_of(132) == 1


def test_lane_bank_map():
    m = banks.lane_bank_map(128 * T, 4)  # a 32-way conflict: all in bank 0, lane t in wavefront t
    assert m[:, 0].tolist() == list(range(32)) and (m[:, 1:] == -1).all()
    m = banks.lane_bank_map(4 * (T % 4), 4)  # broadcasts: four words, 8 lanes each, one wavefront
    assert set(m[m >= 0].tolist()) == {0} and (m[:, 4:] == -1).all() and (m[:, :4] >= 0).sum() == 32
    m = banks.lane_bank_map(128 * T, 16)  # 16 bytes: lanes cover banks 0-3, 8-way per quarter warp
    assert m[:8, :4].tolist() == [[k] * 4 for k in range(8)] and m[8:16, :4].tolist() == m[:8, :4].tolist()
    # the count is the largest rank + 1 of any column of a phase
    addr = np.random.default_rng(1).integers(0, 256, 32) * 4
    assert int(banks.lane_bank_map(addr, 4).max()) + 1 == one(addr, 4)[2]
