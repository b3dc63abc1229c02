"""Helpers shared by the benchmark scripts: machine description, timing, the printed table, JSON output."""

from __future__ import annotations

import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, List, Sequence

ROOT = Path(__file__).resolve().parents[1]


def use_checkout() -> None:
    """Import tilemagic and the shared test cells (tests/cells.py) from this checkout, before any installed copy."""
    for p in (ROOT / "tests", ROOT):
        if str(p) not in sys.path:
            sys.path.insert(0, str(p))


def machine() -> str:
    """``Linux x86_64, 2 CPUs (AMD EPYC ...), Python 3.11.7``."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
    except OSError:
        pass
    py = platform.python_version()
    return f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs ({cpu}), Python {py}"


def commit(checkout=None) -> str:
    """The commit of ``checkout`` (default this one): short hash, ``+dirty`` with uncommitted changes, or
    ``unknown``.  Results name checkouts by commit, never by a path of the machine that ran them."""
    where = ROOT if checkout is None else checkout
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=where, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=where,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def header() -> dict:
    return {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"), "machine": machine(),
            "commit": commit()}


def timed_ms(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1e3


def median(xs: Sequence[float]) -> float:
    return float(statistics.median(xs))


def fmt(x, digits: int = 2) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def table(rows: List[dict], columns: Sequence[str]) -> str:
    """A Markdown table (readable as plain text too) of ``rows`` over ``columns``."""
    cells = [[fmt(r.get(c)) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    out = ["| " + " | ".join(c.ljust(w) for c, w in zip(columns, widths)) + " |",
           "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += ["| " + " | ".join(v.ljust(w) for v, w in zip(row, widths)) + " |" for row in cells]
    return "\n".join(out)


def write_json(path, payload: dict) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(payload, f, indent=1, default=str)
        f.write("\n")
