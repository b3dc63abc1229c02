"""``copy`` variants (registration is an import side effect, as in TVM TIRx)."""

from . import fallback, gmem_smem, ldstmatrix, reg  # noqa: F401
