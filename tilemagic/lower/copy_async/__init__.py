"""``copy_async`` variants (registration is an import side effect, as in TVM TIRx)."""

from . import dsmem, ldgsts, tcgen05_cp, tcgen05_ldst, tma  # noqa: F401
