"""Smoke test of benchmarks/sim_bandwidth.py with tiny sizes: every variant's cell lowers, simulates
bit-exactly and lands in the table and the JSON.  No thresholds (shared CI machines: times are noise)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def test_sim_bandwidth_smoke(tmp_path, capsys):
    sys.path.insert(0, str(BENCH))
    try:
        import sim_bandwidth
    finally:
        sys.path.remove(str(BENCH))
    out = tmp_path / "bw.json"
    assert sim_bandwidth.main(["--sizes", "0.25", "--repeats", "1", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    payload = json.loads(out.read_text())
    assert {r["variant"] for r in payload["rows"]} == set(sim_bandwidth.VARIANTS)
    assert all(r["round_trip"] and r["MiB"] >= 0.25 and r["sim_ms"] > 0 for r in payload["rows"])
    assert len(payload["issue_cells"]) == 3 and all(c["this checkout s"] > 0 for c in payload["issue_cells"])
    for v in sim_bandwidth.VARIANTS:
        assert f"| {v} " in printed
