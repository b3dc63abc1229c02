"""Differential tests against TVM TIRx: the ``copy`` dispatch family.

Each cell's ops are compared with TVM's: the same winning variant family (TVM 0.27
implements tilemagic's ``gmem_smem`` and ``reg`` as one variant, ``vec_auto``), the same
widest vector ``ld``/``st`` and, for the fallback, the same number of scalar stores by
one thread.  Any disagreement fails.
"""

import pytest
from cells import reg_cell
from tvm_cases import (
    COPY_FALLBACK,
    COPY_GMEM_SMEM,
    COPY_LDSTMATRIX,
    COPY_REG,
    GAPPED_REG_LAYOUT,
    check_agreement,
    differential,
)

from tilemagic.pipeline import compare_source_with_tvm

pytestmark = pytest.mark.tvm  # the TVM oracle tests (fixture `tvm` in tests/conftest.py)


@pytest.mark.parametrize("source", COPY_FALLBACK + COPY_GMEM_SMEM + COPY_REG + COPY_LDSTMATRIX)
def test_copy_matches_tvm(tvm, source):
    check_agreement(differential(source), mode="copy")


def test_known_disagreement_one_column_register_tile(tvm):
    """A (128, 1) register tile: tilemagic's reg moves it with one ld.global.u32 per thread; TVM 0.27's
    vec_auto raises "tail too short for vec_len 1", its fallback wins and LowerTIRx then cannot lower the
    fallback's direct access to a thread-distributed register buffer.  (TVM bug; tilemagic is right.)"""
    cmp = compare_source_with_tvm(reg_cell("S[(128, 1) : (1@tid_in_wg, 1)]", 128, 1), cuda=False, tmem_base="const")
    load = cmp.ops[0]
    assert load.ours_variant == "reg" and load.ours_lines == ["ld.global.u32 ×1"]
    assert load.tvm_variant == "fallback"
    assert "tail too short for vec_len 1" in load.tvm_why_not
    assert "Cannot lower direct BufferLoad/BufferStore on a buffer with thread-axis layout" in cmp.tvm.error
    assert not cmp.agrees


def test_known_disagreement_forced_fallback_on_register_tile(tvm):
    """``dispatch=fallback`` on a thread-distributed register tile: tilemagic's fallback predicate rejects
    it (one elected thread cannot reach other threads' registers); TVM's fallback accepts it and the
    lowering fails afterwards with "Cannot lower direct BufferLoad/BufferStore"."""
    src = """
kernel r threads=128
global A: float32[128, 4]
local a: float32[128, 4] @ S[(128, 4) : (1@tid_in_wg, 1)]
wg.copy a <- A dispatch=fallback
"""
    cmp = compare_source_with_tvm(src, cuda=False, tmem_base="const")
    op = cmp.ops[0]
    assert "one elected thread cannot reach the other threads' registers" in op.ours_error
    assert op.tvm_variant == "fallback"
    assert "Cannot lower direct BufferLoad/BufferStore" in cmp.tvm.error


def test_known_disagreement_gapped_register_storage(tvm):
    """Gapped register storage ``S[(128, 4) : (1@tid_in_wg, 2)]`` (column c in register 2c): tilemagic's
    reg moves each element into its own register (4 × ld.global.u32 into a[0], a[2], a[4], a[6]); TVM 0.27's
    vec_auto emits one ld.global.v4.u32 into a[0:4], ignoring the register stride, so logical columns 1–3
    land in the wrong registers (a silent miscompile that a plain round trip cannot see).  tilemagic is right."""
    cmp = compare_source_with_tvm(reg_cell(GAPPED_REG_LAYOUT, 128, 4), cuda=True, tmem_base="const")
    load = cmp.ops[0]
    assert load.ours_variant == "reg" and load.ours_lines == ["ld.global.u32 ×4"]
    assert load.tvm_variant == "vec_auto" and load.tvm_lines == ["ld.global.v4.u32 ×1"]
    assert "((uint*)a_ptr)[(r_w_ptr[0] + 1)]" in cmp.tvm.cuda  # register 1: a gap slot of the layout
    assert not cmp.agrees
