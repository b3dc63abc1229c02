"""benchmarks/bounds.py runs its cases in fresh processes, prints the table and exits 1 past a cap (issue 12 §4)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bounds  # noqa: E402


def test_bounds_script_measures_a_case_in_a_child_and_prints_the_table():
    p = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bounds.py"), "--only", "ldstmatrix"],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    row = next(line for line in p.stdout.splitlines() if line.startswith("| ldstmatrix "))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[4] == "PASS PASS" and cells[-1] == "yes"
    assert 0 < float(cells[5].split("/")[-1].replace(",", "")) < 2048  # peak RSS in MiB, from the child
    assert 0 < float(cells[6].replace(",", "")) < 2000  # text/html in KB


def test_over_caps_flags_each_cap():
    ok = {"name": "x", "rss": 1 << 20, "html": 10, "bundle": 10}
    assert bounds.over_caps(ok) == []
    assert bounds.over_caps({**ok, "rss": bounds.RSS_CAP})[0].startswith("RSS 2.00 GiB")
    assert bounds.over_caps({**ok, "bundle": bounds.HTML_CAP})[0].startswith("HTML 2.00 MB")
    assert bounds.over_caps({"name": "x", "error": "timed out"}) == ["timed out"]
