"""Names that pass the identifier check compile (issue 12 §6): the reserved CUDA/C names are derived by
compiling probes with nvcc (``tools/cuda_names.py``), and every suggested rename is itself legal."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

import tilemagic
from tilemagic.errors import TileTypeError
from tilemagic.lower.cuda_reserved import CUDA_RESERVED
from tilemagic.lower.names import check_identifier, reserved_reason, suggest_name

ROOT = Path(__file__).resolve().parents[3]


def _tool():
    spec = importlib.util.spec_from_file_location("cuda_names", ROOT / "tools" / "cuda_names.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["cuda_names"] = mod
    spec.loader.exec_module(mod)
    return mod


def _cell(buf: str = "A", kernel: str = "kv") -> str:
    return (f"kernel {kernel} threads=32\nglobal {buf}: float32[4, 6]\nglobal B: float32[4, 6]\n"
            f"shared S: float32[4, 6]\nwarp.copy S <- {buf}\ncta_sync\nwarp.copy B <- S\n")


@pytest.mark.parametrize("name", ["erf", "hypot", "M_PI", "EXIT_SUCCESS", "printf", "malloc", "uint4", "RAND_MAX"])
def test_header_names_are_rejected_where_they_are_written(name):
    with pytest.raises(TileTypeError) as info:
        tilemagic.tilecopy(_cell(buf=name), launch="off")
    assert (info.value.line, info.value.col) == (2, 8) and f"'{name}'" in info.value.message
    with pytest.raises(TileTypeError) as info:
        tilemagic.tilecopy(_cell(kernel=name), launch="off")
    assert (info.value.line, info.value.col) == (1, 8)


def test_every_suggested_rename_is_legal():
    names = sorted(CUDA_RESERVED) + ["int", "class", "__x", "_X", "tm_a", "tmem_addr", "laneid", "CUDA_X",
                                     "INT_MAX", "__", "cuda"]
    for name in names:
        new = suggest_name(name)
        assert reserved_reason(new) is None and new.isidentifier() and new.isascii(), (name, new)
        with pytest.raises(TileTypeError) as info:
            check_identifier(name, None, "buffer")
        assert f"'{new}'" in info.value.hint


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_every_name_that_fails_to_compile_is_rejected():
    """Derive the failing names with the nvcc on PATH (one unit per mode, the front end only; kernel names
    also through ptxas) and check that the identifier check rejects each one, with a located error."""
    tool = _tool()
    candidates, failing = tool.derive()
    assert len(candidates) > 1000 and {"erf", "hypot", "M_PI", "EXIT_SUCCESS"} <= failing  # the probes see them
    missing = sorted(n for n in failing if reserved_reason(n) is None)
    assert not missing, f"run `python tools/cuda_names.py`: {len(missing)} names compile-fail but pass: {missing[:20]}"
    # and the suggested renames of every rejected candidate compile (they are no candidates that fail)
    assert not {suggest_name(n) for n in failing} & failing
