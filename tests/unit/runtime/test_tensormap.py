"""Encoding a kernel's tensor maps for the launch (runtime/tensormap.py), without a GPU.

The driver call itself runs on the GPU machines (tests/gpu/test_gpu_tma.py); here: the arguments handed to
``cuTensorMapEncodeTiled`` (CUDA order, the driver API's ``cuuint64_t``/``cuuint32_t`` arrays, the enum values),
the 128-byte parameter image, and the clear error when cuda-bindings is missing.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from helpers import copy_async_op, lower_ops, region, tma_buffers

from tilemagic.errors import LaunchError
from tilemagic.layout import row_major
from tilemagic.layout.swizzle import ComposeLayout
from tilemagic.runtime import tensormap as tm

gbuf, sbuf, mbar = tma_buffers()


def _map():
    A = gbuf("A", "float16", (256, 256))
    S = sbuf("S", "float16", (64, 64), ComposeLayout(3, 3, 3, row_major((64, 64)), bare=True))
    kernel, _ = lower_ops([copy_async_op(region(S), region(A, (64, 128), (64, 64)), mbar=mbar())], A, S)
    return kernel.tensormaps[0]


def test_encode_args_are_the_plan_in_cuda_order():
    m = _map()
    assert tm.encode_args(m, 0x7000_0000) == (6, 2, 0x7000_0000, (256, 256), (512,), (64, 64), (1, 1), 0, 3, 2, 0)


class _FakeDriver:
    """Records the call; wraps values as cuda-bindings' types would (tagged tuples)."""

    def __init__(self, err=0):
        self.err, self.calls = err, []
        for name in ("cuuint64_t", "cuuint32_t", "CUtensorMapDataType", "CUtensorMapInterleave", "CUtensorMapSwizzle",
                     "CUtensorMapL2promotion", "CUtensorMapFloatOOBfill"):
            setattr(self, name, lambda v, _n=name: (_n, v))

    def cuTensorMapEncodeTiled(self, *args):
        self.calls.append(args)
        return self.err, type("Map", (), {"opaque": list(range(100, 116))})()


def test_encode_wraps_the_driver_types_and_returns_the_128_byte_image():
    drv = _FakeDriver()
    image = tm.encode(_map(), 0x1000, drv)
    (args,) = drv.calls
    assert args[0] == ("CUtensorMapDataType", 6) and args[1] == 2 and args[2] == 0x1000
    assert args[3] == [("cuuint64_t", 256), ("cuuint64_t", 256)] and args[4] == [("cuuint64_t", 512)]
    assert args[5] == [("cuuint32_t", 64), ("cuuint32_t", 64)] and args[6] == [("cuuint32_t", 1), ("cuuint32_t", 1)]
    assert args[8] == ("CUtensorMapSwizzle", 3) and args[9] == ("CUtensorMapL2promotion", 2)
    assert isinstance(image, np.void) and image.dtype.itemsize == 128
    assert image["opaque"].tolist() == list(range(100, 116))


def test_a_driver_refusal_names_every_parameter():
    with pytest.raises(LaunchError) as e:
        tm.encode(_map(), 0x1000, _FakeDriver(err=1))
    assert "cuTensorMapEncodeTiled refused tensor map A_tmap" in e.value.message
    assert "globalDim=[256, 256] globalStrides=[512] boxDim=[64, 64]" in e.value.details


def test_an_unaligned_global_address_is_refused_before_the_driver():
    with pytest.raises(LaunchError, match="not 16-byte aligned"):
        tm.encode(_map(), 0x1008, _FakeDriver())


@pytest.mark.skipif(importlib.util.find_spec("cuda") is not None, reason="cuda-python is installed here")
def test_missing_cuda_bindings_is_a_clear_error():
    with pytest.raises(LaunchError) as e:
        tm.encode_all([_map()], {"A": 0x1000})
    assert e.value.message == "TMA needs cuda-bindings: pip install tilemagic[cuda12] (or tilemagic[cuda13])"


def test_no_maps_needs_no_driver():
    assert tm.encode_all([], {}) == []
