"""Differential tests against TVM TIRx: ``copy_async -> ldgsts`` (cp.async).

Each cell's global -> shared ``copy_async`` must lower on both sides to the same instructions: the same
``cp.async.{cg,ca}.shared.global`` chain, the same bytes per issue (``cp-size``) and the same number of
issues per thread (loops expanded: TVM unrolls them, tilemagic keeps more than 16 in a serial loop), or be
declined by both with TVM's reason.  Swizzled shared tiles are not compared: the TVMScript export has no
form for a ``ComposeLayout`` yet (tests/unit/lower/test_ldgsts.py checks them against gmem_smem's split).
"""

import pytest
from cells import EPC, GMEM_SMEM_CASES, ldgsts_cell
from tvm_cases import differential

pytestmark = pytest.mark.tvm  # the TVM oracle tests (fixture `tvm` in tests/conftest.py)

CASES = [c for c in GMEM_SMEM_CASES if "swizzle" not in c.smem] + [
    GMEM_SMEM_CASES[0]._replace(scope="thread", threads=1, rows=16, cols=32, dtype="float32", vec=4),
    GMEM_SMEM_CASES[0]._replace(scope="cta", threads=256, rows=64, cols=64, dtype="float16", vec=8),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_ldgsts_matches_tvm(tvm, case):
    cmp = differential(ldgsts_cell(case))
    op = cmp.ops[0]
    assert op.verdict in ("same", "both reject"), cmp.text()
    if op.verdict == "same":
        assert op.ours_variant == op.tvm_variant == "ldgsts"
        assert op.vector_bytes[0] == op.vector_bytes[1] == case.vec * 4 // EPC[case.dtype]
    else:  # a 1- or 2-byte element without an aligned 4-byte run: TVM's decline, word for word, on both sides
        reason = "ldgsts: cannot find a cp.async-compatible vec_len for elem_bits="
        assert reason in op.ours_error and reason in op.tvm_error


def test_serial_loop_issues_as_many_cp_async_as_tvms_unrolled_ones(tvm):
    cmp = differential(ldgsts_cell(CASES[-2]))
    assert cmp.ops[0].ours_lines == cmp.ops[0].tvm_lines == ["cp.async.cg.shared.global 16 B ×128"]
