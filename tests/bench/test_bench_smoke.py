"""CI smoke test of benchmarks/run.py: every CPU section runs (one repeat) and writes its JSON.

No thresholds are asserted here: the machines running CI are shared and their absolute times are
noise.  The numbers and the targets are in BENCHMARKS.md, from a full run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def bench_run():
    sys.path.insert(0, str(BENCH))
    try:
        import run
    finally:
        sys.path.remove(str(BENCH))
    return run


def _check(payload, sections):
    assert set(payload["results"]) == set(sections)
    assert {r["section"] for r in payload["rows"]} == set(sections)
    for key in ("date", "machine", "commit"):
        assert payload[key]


def test_cpu_sections(bench_run, tmp_path, capsys):
    sections = ["cell", "import", "cache", "sim", "memory"]
    out, plot = tmp_path / "bench.json", tmp_path / "sim.png"
    assert bench_run.main(["--repeats", "1", "--only", ",".join(sections), "--json", str(out),
                           "--plot", str(plot)]) == 0
    printed = capsys.readouterr().out
    from tilemagic.cli import DEMOS

    assert printed.count("| cell ") == 1 + 2 * len(DEMOS) and "| memory " in printed  # (a header, 2 rows a demo)
    payload = json.loads(out.read_text())
    _check(payload, sections)
    res = payload["results"]
    assert set(res["cell"]) == set(DEMOS)
    assert all(len(v["warm_ms"]) == 1 and v["first_ms"] > 0 for v in res["cell"].values())
    assert not [m for r in res["import"]["runs"] for m in r["loaded"] if m in ("cupy", "matplotlib.pyplot",
                                                                           "ipywidgets")]
    assert sorted(int(c) for c in res["sim"]["sizes"]) == [64, 128, 256, 512]
    assert res["memory"]["passed"] and res["memory"]["tile"] == 128 * 512 * 4
    assert plot.read_bytes().startswith(b"\x89PNG")


@pytest.mark.tvm
def test_lowering_against_tvm(bench_run, tvm, tmp_path):
    out = tmp_path / "lower.json"
    assert bench_run.main(["--repeats", "1", "--only", "lower", "--json", str(out)]) == 0
    payload = json.loads(out.read_text())
    _check(payload, ["lower"])
    cells = payload["results"]["lower"]["cells"]
    from tilemagic.cli import DEMOS

    assert len(cells) == len(DEMOS) + 15 and payload["results"]["lower"]["tvm_version"] == tvm.__version__
    variants = set().union(*(c["variants"] for c in cells.values()))
    assert {"reg", "gmem_smem", "ldstmatrix", "fallback", "tmem<->local", "ldgsts", "tma_auto", "dsmem"} <= variants
