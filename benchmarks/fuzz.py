"""Fuzz the whole pipeline and print the counts by outcome (issue 7's 10 000-example run).

    python benchmarks/fuzz.py --examples 10000

Draws valid cells (``tests/fuzz/cellgen.py``: every one must PASS ``check B == A`` in the
simulator) and mutated seed cells (demos, docs examples, notebook cells, valid cells with
deleted tokens, swapped dims, huge numbers, unicode, very long lines ...), runs each through
``tilemagic.tilecopy(..., launch="sim")`` and counts what happened.  Anything other than a
result or a located TileMagicError is a violation: its cell and traceback are written to
``--violations`` and the exit status is 1.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "fuzz"))
sys.path.insert(0, str(ROOT))

import cellgen
from common import machine
from hypothesis import HealthCheck, Phase, given, seed, settings


def run(kind: str, n: int, rng_seed: int, counts, violations) -> None:
    strategy = cellgen.valid_cells() if kind == "valid" else cellgen.mutated_cells()

    @seed(rng_seed)
    @settings(max_examples=n, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def one(src):
        try:
            counts[kind][cellgen.outcome(src, must_pass=(kind == "valid"))] += 1
        except cellgen.Violation as v:
            counts[kind]["VIOLATION"] += 1
            violations.append({"kind": kind, "violation": str(v), "cell": src,
                               "traceback": traceback.format_exc(limit=30)})

    one()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", type=int, default=10000, help="total examples (default 10000)")
    ap.add_argument("--valid-fraction", type=float, default=0.3, help="share of valid cells (default 0.3)")
    ap.add_argument("--seed", type=int, default=0, help="hypothesis seed (default 0)")
    ap.add_argument("--violations", default="fuzz-violations.json", help="where violating cells are written")
    args = ap.parse_args(argv)
    n_valid = round(args.examples * args.valid_fraction)
    counts = {"valid": collections.Counter(), "mutated": collections.Counter()}
    violations = []
    t0 = time.perf_counter()
    run("valid", n_valid, args.seed, counts, violations)
    run("mutated", args.examples - n_valid, args.seed + 1, counts, violations)
    secs = time.perf_counter() - t0
    total = counts["valid"] + counts["mutated"]
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"tilemagic fuzz: {sum(total.values())} examples ({sum(counts['valid'].values())} valid, "
          f"{sum(counts['mutated'].values())} mutated), seed {args.seed}, {secs:.0f} s, {when}")
    print(f"machine: {machine()}")
    print(f"{'outcome':<18}{'valid':>8}{'mutated':>9}{'total':>8}")
    for name, _ in total.most_common():
        print(f"{name:<18}{counts['valid'][name]:>8}{counts['mutated'][name]:>9}{total[name]:>8}")
    print(f"violations: {len(violations)}")
    if violations:
        Path(args.violations).write_text(json.dumps(violations, indent=1))
        print(f"written to {args.violations}; first: {violations[0]['violation']}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
