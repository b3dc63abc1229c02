"""Differential tests against TVM TIRx: the ``copy`` dispatch family.

Each cell's ops are compared with TVM's: the same winning variant family (TVM 0.27
implements tilemagic's ``gmem_smem`` and ``reg`` as one variant, ``vec_auto``), the same
widest vector ``ld``/``st`` and, for the fallback, the same number of scalar stores by
one thread.  Cases whose TVM variant tilemagic does not register yet (``gmem_smem``,
``ldstmatrix``) xfail on that reason only.
"""

import pytest
from tvm_cases import (
    COPY_FALLBACK,
    COPY_GMEM_SMEM,
    COPY_LDSTMATRIX,
    COPY_REG,
    check_agreement,
    differential,
)


@pytest.mark.parametrize("source", COPY_FALLBACK + COPY_GMEM_SMEM + COPY_REG + COPY_LDSTMATRIX)
def test_copy_matches_tvm(tvm, source):
    check_agreement(differential(source), mode="copy")
