"""Differential sweep: every case of the tcgen05 ld/st matrix (tests/cells.py ``tcgen05_matrix``) against TVM.

    python benchmarks/tvm_matrix.py        # ~4 min on 2 cores; needs apache-tvm==0.27.0.post1

Each ``st`` case's cell holds the st and the ld of its shape (plus a ``.32x32b`` dump and the global copies), so
the 330 ``st`` cells cover every (shape, num, dtype, data path, column offset) of the matrix in both directions.
For each cell the TVMScript export is lowered by TVM's LowerTIRx (``tilemagic.export.tvm_compare``) and every op
is compared: the winning variant family and the normalised instruction lines (chain, row/col immediates,
registers in operand order; vector width and count for global copies).  Prints the agreement counts and every
disagreement.  The CI runs a 52-case subset of the same comparison (tests/tvm).
"""

from __future__ import annotations

import collections
import os
import sys
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

import cells  # noqa: E402
from tilemagic.pipeline import compare_source_with_tvm  # noqa: E402


def main() -> int:
    warnings.simplefilter("ignore")
    cases = [c.values[0] if hasattr(c, "values") else c for c in cells.tcgen05_matrix()]
    cases = [c for c in cases if c.direction == "st"]
    cells_same = tc_ops = tc_same = 0
    diffs = collections.Counter()
    for c in cases:
        cmp = compare_source_with_tvm(c.source, cuda=False, tmem_base="const")
        cells_same += bool(cmp.agrees)
        for op in cmp.ops:
            same = op.ours_variant == op.tvm_variant and op.ours_lines == op.tvm_lines
            if "tmem<->local" in (op.ours_variant, op.tvm_variant):
                tc_ops += 1
                tc_same += same
            if not (same or (op.tvm_variant == "vec_auto" and op.ours_variant in ("reg", "gmem_smem")
                             and op.ours_lines == op.tvm_lines)):
                diffs[(c.dtype, c.num, op.text, tuple(op.ours_lines), op.tvm_variant, tuple(op.tvm_lines))] += 1
    print(f"{len(cases)} cells; {cells_same} agree with TVM on every op; "
          f"tcgen05 ops identical (variant, chain, row/col, registers): {tc_same}/{tc_ops}")
    for (dtype, num, text, ours, tvm_variant, tvm), n in diffs.most_common():
        print(f"  x{n}: {dtype} num={num} `{text}`: tilemagic {list(ours)}; TVM {tvm_variant} {list(tvm)}")
    return 0 if tc_same == tc_ops else 1


if __name__ == "__main__":
    sys.exit(main())
