"""Golden files: the printed IR, the CUDA (native and emulated) and the TVMScript export of the seed
demos, and of one cell per copy variant (tests/cells.py ``golden_cells``: gmem_smem through a swizzle,
reg with a tcgen05 fragment, ldstmatrix .trans, the fallback; ``copy_async`` -> ldgsts into a swizzled tile).

Regenerate after an intended change with ``TILEMAGIC_UPDATE_GOLDEN=1 pytest tests/golden``
and review the diff.
"""

import os
import warnings
from pathlib import Path

import pytest
from cells import GMEM_SMEM_CASES, golden_cells, ldgsts_cell
from helpers import demo_params

import tilemagic
from tilemagic.cli import DEMOS, demo_source

DATA = Path(__file__).parent / "data"
UPDATE = os.environ.get("TILEMAGIC_UPDATE_GOLDEN") == "1"


def _result(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return tilemagic.tilecopy(demo_source(name), launch="off")


def _check(path: Path, text: str):
    if UPDATE or not path.exists():
        if not UPDATE:
            pytest.fail(f"missing golden file {path.name}; run with TILEMAGIC_UPDATE_GOLDEN=1")
        path.write_text(text)
    assert text == path.read_text(), f"{path.name} changed; diff it, then TILEMAGIC_UPDATE_GOLDEN=1 if intended"


@pytest.mark.parametrize("name", DEMOS)
def test_ir_golden(name):
    _check(DATA / f"{name}.ir.txt", _result(name).ir)


@pytest.mark.parametrize("name", DEMOS)
def test_cuda_golden(name):
    _check(DATA / f"{name}.cu", _result(name).cuda)


@pytest.mark.parametrize("name", ["tmem_roundtrip", "tcgen05_cp_roundtrip"])
def test_emulated_cuda_golden(name):
    """The emulated CUDA of the tcgen05 demos (TMEM as global memory; tcgen05.cp decoded in the issuing thread)."""
    _check(DATA / f"{name}.emulated.cu", _result(name).cuda_emulated)


def test_no_emulation_without_tmem():
    assert _result("fallback_demo").cuda_emulated is None


@pytest.mark.parametrize("name", DEMOS)
def test_text_report_golden(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        res = tilemagic.tilecopy(demo_source(name), launch="sim")
    _check(DATA / f"{name}.report.txt", res.text())


COPY_CELLS = golden_cells()


@pytest.mark.parametrize("name", sorted(COPY_CELLS))
def test_copy_variant_golden(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        res = tilemagic.tilecopy(COPY_CELLS[name], launch="sim")
    assert res.launch.passed
    assert name.removeprefix("copy_") in {d.chosen for d in res.dispatch}
    _check(DATA / f"{name}.ir.txt", res.ir)
    _check(DATA / f"{name}.cu", res.cuda)
    _check(DATA / f"{name}.report.txt", res.text())


@pytest.mark.parametrize("name", demo_params(DEMOS))
def test_tvmscript_golden(name):
    """The TVM TIRx export (``--export tvmscript``): one tcgen05 program, one copy program."""
    _check(DATA / f"{name}.tvmscript.txt", _result(name).tvmscript())


def test_ldgsts_golden():
    """copy_async -> ldgsts: 64x64 fp16 into a swizzle(3, 3, 3) tile, 4 unrolled 16-byte cp.async per thread
    (printed IR and CUDA, not launched: without commit_group / wait_group the read back would race; the demo
    ldgsts_roundtrip is the launched round trip)."""
    case = GMEM_SMEM_CASES[2]._replace(rows=64, vec=8)
    res = tilemagic.tilecopy(ldgsts_cell(case, "ldgsts_swizzled"), launch="off")
    assert [d.chosen for d in res.dispatch] == ["ldgsts", "gmem_smem"]
    _check(DATA / "copy_ldgsts.ir.txt", res.ir)
    _check(DATA / "copy_ldgsts.cu", res.cuda)
