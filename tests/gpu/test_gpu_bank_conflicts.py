"""Issue 16 on the GPU: predicted shared-memory wavefronts and bank conflicts == Nsight Compute's counters (or, where
ncu cannot read counters, the clock64 probe's ratios), for a few cells of benchmarks/bank_conflicts.py's matrix.

Run: ``pytest -o addopts="" -m gpu tests/gpu/test_gpu_bank_conflicts.py -rs`` on a machine with CuPy, a GPU, nvcc
and (for the counters) ncu.  The whole matrix: ``python benchmarks/bank_conflicts.py --json OUT.json``.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

from gpu_guard import cupy  # noqa: E402,F401  (skips the module without a GPU)

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
CASES = ["reg_float32_plain", "reg_float32_swz", "ldsm_f16_swz303", "ldsm_f16_swz333", "gs_f16_perm", "fb_f32"]


@pytest.fixture(scope="module")
def bc():
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not on PATH")
    sys.path.insert(0, str(BENCH))
    try:
        import bank_conflicts

        yield bank_conflicts
    finally:
        sys.path.remove(str(BENCH))


@pytest.mark.parametrize("name", CASES)
def test_predicted_equals_measured(bc, name, tmp_path):
    out = tmp_path / "banks.json"
    rc = bc.main(["--only", name, "--json", str(out)])
    rows = json.loads(out.read_text())["rows"]
    assert rows, "no rows: nothing was measured"
    bad = [r for r in rows if r["match"] == "NO"]  # ("exception": a listed reason, conflicts equal; "-": info)
    assert rc == 0 and not bad, bad
    assert any(r["match"] in ("yes", "exception") for r in rows)  # (something was compared)
