"""Import this first in a GPU test module: it skips the module unless CuPy finds a CUDA device."""

import pytest

cupy = pytest.importorskip("cupy")
try:
    _AVAILABLE = bool(cupy.is_available())
except Exception:  # pragma: no cover
    _AVAILABLE = False
if not _AVAILABLE:
    pytest.skip("no CUDA device available to CuPy", allow_module_level=True)
