"""Fuzz the whole pipeline and every entry point, and print the counts by outcome (issue 12's run).

    python benchmarks/fuzz.py --examples 100000 --jobs 2

Draws valid cells (``tests/fuzz/cellgen.py``: every one must PASS ``check B == A`` in the
simulator) and mutated seed cells (demos, docs examples, notebook cells, valid cells with
deleted tokens, swapped dims, huge numbers, unicode, very long lines ...), runs each through
``tilemagic.tilecopy(..., launch="sim")`` and counts what happened; a share (``--entry-fraction``) goes
behind a fuzzed ``%%tilecopy`` option line (flags, values, quotes, unicode, odd whitespace, ``--timeout``
extremes, ``--out`` names, ``--arch`` junk) through an entry point: the API, the magic in an IPython
``InteractiveShell``, the CLI (``tilemagic run FILE.tile`` in-process), ``--export tvmscript``, and
``--compare tvm`` on ``--compare-fraction`` of them when apache-tvm is installed.  Anything other than a
result or a located TileMagicError (from a file: ``FILE:line:col``) is a violation: its cell and traceback
are written to ``--violations`` and the exit status is 1.  ``--jobs N`` splits the run over N processes
(each its own hypothesis seed).
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import multiprocessing
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "fuzz"))
sys.path.insert(0, str(ROOT))

import cellgen
from common import machine
from hypothesis import HealthCheck, Phase, given, seed, settings


def run(kind: str, n: int, rng_seed: int, counts, violations, compare: bool = False) -> None:
    if n <= 0:
        return
    strategy = (cellgen.valid_cells() if kind == "valid" else cellgen.mutated_cells() if kind == "mutated"
                else cellgen.entry_cells(compare=compare))
    tmp = tempfile.mkdtemp(prefix="tilemagic-fuzz-")

    @seed(rng_seed)
    @settings(max_examples=n, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def one(case):
        try:
            if kind == "entries":
                entry, line, body = case
                counts[kind][entry + ":" + cellgen.entry_outcome(entry, line, body, tmp)] += 1
            else:
                counts[kind][cellgen.outcome(case, must_pass=(kind == "valid"))] += 1
        except cellgen.Violation as v:
            counts[kind]["VIOLATION"] += 1
            violations.append({"kind": kind, "violation": str(v), "cell": case,
                               "traceback": traceback.format_exc(limit=30)})

    one()


def _chunk(job):
    """One process's share: ``(n_valid, n_mutated, n_entries, n_compare, seed)`` -> (counts, violations)."""
    n_valid, n_mutated, n_entries, n_compare, rng_seed = job
    counts = {k: collections.Counter() for k in KINDS}
    violations: list = []
    run("valid", n_valid, rng_seed, counts, violations)
    run("mutated", n_mutated, rng_seed + 1, counts, violations)
    run("entries", n_entries, rng_seed + 2, counts, violations)
    run("entries", n_compare, rng_seed + 3, counts, violations, compare=True)
    return counts, violations


KINDS = ("valid", "mutated", "entries")


def _tvm_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("tvm") is not None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", type=int, default=10000, help="total examples (default 10000)")
    ap.add_argument("--valid-fraction", type=float, default=0.3, help="share of valid cells (default 0.3)")
    ap.add_argument("--seed", type=int, default=0, help="hypothesis seed (default 0)")
    ap.add_argument("--violations", default="fuzz-violations.json", help="where violating cells are written")
    ap.add_argument("--entry-fraction", type=float, default=0.3,
                    help="share of cells behind a fuzzed option line through an entry point (default 0.3)")
    ap.add_argument("--compare-fraction", type=float, default=0.01,
                    help="share of all examples through --compare tvm when TVM is installed (default 0.01)")
    ap.add_argument("--jobs", type=int, default=1, help="processes (default 1)")
    args = ap.parse_args(argv)
    n_valid = round(args.examples * args.valid_fraction)
    n_entries = round(args.examples * args.entry_fraction)
    n_compare = round(args.examples * args.compare_fraction) if _tvm_installed() else 0
    n_mutated = args.examples - n_valid - n_entries - n_compare
    jobs = max(1, args.jobs)
    share = [tuple(n // jobs + (j < n % jobs) for n in (n_valid, n_mutated, n_entries, n_compare))
             + (args.seed + 10 * j,) for j in range(jobs)]
    counts = {k: collections.Counter() for k in KINDS}
    violations = []
    t0 = time.perf_counter()
    if jobs == 1:
        results = [_chunk(share[0])]
    else:
        with multiprocessing.get_context("spawn").Pool(jobs) as pool:
            results = pool.map(_chunk, share)
    for c, v in results:
        for k in KINDS:
            counts[k].update(c[k])
        violations += v
    secs = time.perf_counter() - t0
    total = counts["valid"] + counts["mutated"] + counts["entries"]
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"tilemagic fuzz: {sum(total.values())} examples ({sum(counts['valid'].values())} valid, "
          f"{sum(counts['mutated'].values())} mutated, {sum(counts['entries'].values())} through an entry point, "
          f"{n_compare} of them --compare tvm), seed {args.seed}, {jobs} jobs, {secs:.0f} s, {when}")
    print(f"machine: {machine()}")
    print(f"{'outcome':<26}{'valid':>8}{'mutated':>9}{'entries':>9}{'total':>8}")
    for name, _ in total.most_common():
        print(f"{name:<26}{counts['valid'][name]:>8}{counts['mutated'][name]:>9}{counts['entries'][name]:>9}"
              f"{total[name]:>8}")
    print(f"violations: {len(violations)}")
    if violations:
        Path(args.violations).write_text(json.dumps(violations, indent=1))
        print(f"written to {args.violations}; first: {violations[0]['violation']}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
