"""``copy`` variants (registration is an import side effect, as in TVM TIRx)."""

from . import fallback, reg  # noqa: F401
