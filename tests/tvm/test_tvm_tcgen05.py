"""Differential tests against TVM TIRx: ``copy_async`` between TMEM and registers (tcgen05.ld/st).

For each cell the exported TVMScript is lowered by TVM's ``LowerTIRx`` and every op is
compared with tilemagic's lowering: the winning variant, the instruction chain
(``tcgen05.{ld,st}.sync.aligned.<shape>.x<num>.b32``), the TMEM row/column immediates
(relative to the allocation) and the register operands in order.

The ``.16x*b`` shapes and data paths F and B: TVM's lowering is first checked against
the instruction lines the PTX rules predict (:func:`tvm_cases.expected_tcgen05`), then
against tilemagic's (any disagreement fails).
The rejection cells must be refused by both tools, TVM for the stated reason.
"""

import re

import pytest
from tvm_cases import (
    TCGEN05_16XNB,
    TCGEN05_32X32B,
    TCGEN05_REJECT,
    check_agreement,
    check_both_reject,
    differential,
    expected_tcgen05,
    ours_cuda_tcgen05,
    spec_cell,
    tvm_cuda_tcgen05,
)

pytestmark = pytest.mark.tvm  # the TVM oracle tests (fixture `tvm` in tests/conftest.py)


@pytest.mark.parametrize("source", TCGEN05_32X32B)
def test_tcgen05_32x32b_matches_tvm(tvm, source):
    """TIR and CUDA: TVM's generated CUDA and tilemagic's native CUDA issue the same tcgen05 calls (chain,
    lane/column of the address, register operands in order)."""
    import tilemagic

    cmp = differential(source, cuda=True)
    check_agreement(cmp, mode="tcgen05")
    assert cmp.tvm.cuda, cmp.tvm.cuda_note
    theirs = tvm_cuda_tcgen05(cmp.tvm.cuda)
    assert theirs, "no tcgen05 call with literal operands in TVM's CUDA:\n" + cmp.tvm.cuda
    assert ours_cuda_tcgen05(tilemagic.tilecopy(source, launch="off").cuda) == theirs


@pytest.mark.parametrize("spec", TCGEN05_16XNB)
def test_tcgen05_16xnb_and_datapaths_match_tvm(tvm, spec):
    cmp = differential(spec_cell(spec))
    st, ld = cmp.ops
    assert st.tvm is not None and ld.tvm is not None, cmp.text()
    assert st.tvm_variant == ld.tvm_variant == "tmem<->local"
    assert st.tvm_lines == expected_tcgen05(spec, "st"), cmp.text()
    assert ld.tvm_lines == expected_tcgen05(spec, "ld"), cmp.text()
    check_agreement(cmp, mode="tcgen05")


@pytest.mark.parametrize("source, tvm_reason", TCGEN05_REJECT)
def test_tcgen05_rejections_match_tvm(tvm, source, tvm_reason):
    cmp = differential(source)
    check_both_reject(cmp)
    assert re.search(tvm_reason, cmp.tvm.error), cmp.text()



def test_known_disagreement_permuted_registers_32x32b(tvm):
    """A .32x32b copy from a register tile whose columns are not in consecutive registers
    (``S[(128, 2, 2) : (1@tid_in_wg, 1, 2)]``: column c sits in register 2*(c%2) + c//2).  TVM's .32x32b
    path never checks the register layout and stores registers 0..3 to TMEM columns 0..3, so TMEM column 1
    receives logical column 2 -- a silent miscompile.  tilemagic declines with the reason."""
    src = """
kernel k threads=128
tmem T: float32[128, 4]
local a: float32[128, 4] @ S[(128, 2, 2) : (1@tid_in_wg, 1, 2)]
wg.copy_async T <- a
wait st
"""
    cmp = differential(src)
    op = cmp.ops[0]
    assert "does not hold a row's columns in consecutive registers" in op.ours_error
    assert op.tvm_lines == ["tcgen05.st.sync.aligned.32x32b.x4.b32 row=0 col=0 regs=a[0:4]"]
