"""What ``--cost`` costs on the CPU (issue 16): whole ``tilecopy`` calls with and without it.

    python benchmarks/cost_overhead.py            # ~1 min; needs nvcc (and nvdisasm for the SASS)

Per cell: the median of 3 calls after ``tilemagic.clear_caches()`` without ``--cost`` and with it, then one call
with ``--cost`` and warm caches (the compiled unit is cached; the address trace and the pictures are not).
"""

from __future__ import annotations

import statistics
import sys
import time
import warnings

from common import header, table, use_checkout

use_checkout()


def main() -> int:
    import tilemagic
    from cells import GmemSmemCase, bank_rows_cell, gmem_smem_cell
    from tilemagic.cli import demo_source

    warnings.simplefilter("ignore")
    cells = [("fallback_demo", demo_source("fallback_demo")), ("tmem_roundtrip", demo_source("tmem_roundtrip")),
             ("bank_rows f32", bank_rows_cell()),
             ("gmem_smem cta1024 64x256 f16", gmem_smem_cell(GmemSmemCase("cta", 1024, 64, 256, "float16")))]
    rows = []
    for name, src in cells:
        row = {"cell": name}
        for cost in (False, True):
            ts = []
            for _ in range(3):
                tilemagic.clear_caches()
                t = time.perf_counter()
                tilemagic.tilecopy(src, launch="sim", cost=cost)
                ts.append(time.perf_counter() - t)
            row["cost s" if cost else "no cost s"] = statistics.median(ts)
        t = time.perf_counter()
        tilemagic.tilecopy(src, launch="sim", cost=True)
        row["cost, warm s"] = time.perf_counter() - t
        rows.append(row)
    h = header()
    print(f"--cost overhead — {h['date']}, commit {h['commit']}, {h['machine']}")
    print(table(rows, ("cell", "no cost s", "cost s", "cost, warm s")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
