"""The tcgen05 shared-memory matrix descriptor (PTX ISA 9.0 §9.7.16.4.1) against hand-computed values and an
independent bit-by-bit reader of the ISA's table."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tilemagic.arch import smem_desc as D


def _bits(d: int, lo: int, n: int) -> int:
    """Bits [lo, lo + n) of ``d``, read one bit at a time (independent of the module's masks and shifts)."""
    return sum(((d >> (lo + i)) & 1) << i for i in range(n))


def test_hand_computed_descriptors():
    # 128B swizzle, start 0x400 (1024 B), LBO 16 (ignored when swizzled, TVM writes 1 unit), SBO 1024 (8 rows x 128 B)
    d = D.encode(0x400, 16, 1024, "128B")
    assert d == (0x40 | (1 << 16) | (64 << 32) | (1 << 46) | (2 << 61))
    assert hex(d) == "0x4000404000010040"
    # no swizzle: LBO 128 B between the 16-byte chunks of a row, SBO 256 B between 8-row groups, start 0x2010
    d = D.encode(0x2010, 128, 256, "none")
    assert d == (0x201 | (8 << 16) | (16 << 32) | (1 << 46))
    # 32B and 64B codes, a base offset and the LBO mode bit land where the table says
    assert _bits(D.encode(0, 16, 16, "32B"), 61, 3) == 6
    assert _bits(D.encode(0, 16, 16, "64B"), 61, 3) == 4
    assert _bits(D.encode(0, 16, 16, "128B_base32B"), 61, 3) == 1
    assert _bits(D.encode(0, 16, 16, "128B", base_offset=5), 49, 3) == 5
    assert _bits(D.encode(0, 16, 16, "none", lbo_mode=1), 52, 1) == 1


@given(start=st.integers(0, D.FIELD_MAX_BYTES // 16), lbo=st.integers(0, D.FIELD_MAX_BYTES // 16),
       sbo=st.integers(0, D.FIELD_MAX_BYTES // 16), layout=st.sampled_from(sorted(D.LAYOUT_NAMES)),
       base=st.integers(0, 7), mode=st.integers(0, 1))
def test_encode_decode_round_trip_and_the_table(start, lbo, sbo, layout, base, mode):
    d = D.encode(16 * start, 16 * lbo, 16 * sbo, layout, base, mode)
    assert 0 <= d < 1 << 64
    assert (_bits(d, 0, 14), _bits(d, 16, 14), _bits(d, 32, 14)) == (start, lbo, sbo)
    assert (_bits(d, 46, 3), _bits(d, 49, 3), _bits(d, 52, 1), _bits(d, 61, 3)) == (1, base, mode, layout)
    assert _bits(d, 14, 2) == _bits(d, 30, 2) == _bits(d, 53, 8) == 0  # reserved bits stay clear
    got = D.decode(d)
    assert (got.start, got.lbo, got.sbo, got.layout, got.base_offset, got.lbo_mode, got.version) == \
        (16 * start, 16 * lbo, 16 * sbo, layout, base, mode, 1)


@pytest.mark.parametrize("kw,why", [
    (dict(start=8, lbo=16, sbo=16, layout=2), "start address 8 is not a multiple of 16"),
    (dict(start=0, lbo=24, sbo=16, layout=2), "LBO 24 is not a multiple of 16"),
    (dict(start=0, lbo=16, sbo=1 << 18, layout=2), "SBO 262144 does not fit the 14-bit field"),
    (dict(start=0, lbo=16, sbo=16, layout=3), "layout type 3 is not one of"),
    (dict(start=0, lbo=16, sbo=16, layout=2, base_offset=8), "base offset 8 is not in 0..7"),
])
def test_rejected_fields_say_why(kw, why):
    assert any(why in p for p in D.problems(**kw))
    with pytest.raises(ValueError, match=why.split(" is ")[0]):
        D.encode(**kw)


def test_layout_names():
    assert D.decode(D.encode(0, 16, 16, "64B")).layout_name == "64B"
    assert D.decode(5 << 61).layout_name == "invalid(5)"
    assert not D.decode(D.encode(0, 16, 16, "none")).swizzled
