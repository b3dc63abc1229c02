"""Bounded memory and output (issue 12 §4): peak RSS and display sizes of the largest cells, each in a fresh process.

Every case is a complete ``%%tilecopy`` description: the biggest tiles each copy variant accepts (global tiles up to
the 1 GiB-per-cell limit, full TMEM, full static shared memory), failing checks on them, and long programs (many ops,
unrolled loops).  One child process per case (``python benchmarks/bounds.py --one NAME``) runs
``tilecopy(src, launch=..., heatmap=every kind)`` and then every display: ``html()`` (the ``text/html`` the magic
shows), ``_repr_mimebundle_`` under ``--view text``, ``html`` and ``widget``, and every picture kind
(``result.heatmap(kind)`` rendered to PNG; kinds that do not apply are skipped).  It reports its peak RSS
(``resource.getrusage(RUSAGE_SELF).ru_maxrss``), the largest ``text/html``, the largest whole bundle and the largest
PNG.  The parent prints a Markdown table and exits 1 when a cap is exceeded::

    python benchmarks/bounds.py                    # every case, launch as listed (sim or off)
    python benchmarks/bounds.py --launch off       # HTML-only rows: no simulator run
    python benchmarks/bounds.py --only fail_1gib,many_ops --json out.json

Caps: peak RSS < 2 GiB per cell, ``text/html`` and every bundle < 2 MB.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, header, use_checkout  # noqa: E402

RSS_CAP = 2 << 30  # bytes
HTML_CAP = 2 * 1000 * 1000  # bytes of one text/html (and of one whole bundle)
KINDS = ("tmem", "instr", "fragment", "data")


def _cases() -> dict[str, tuple[str, str, str]]:
    """name -> (description, launch, what it exercises)."""
    use_checkout()
    from cells import failing_global_cell, fallback_cell, many_ops_cell, reg_cell, smem_cell, tmem_windows_cell

    unrolled = ["kernel unrolled threads=128", "global A: float16[128, 128]", "global B: float16[128, 128]",
                "shared S: float16[128, 128]", "local a: float16[128, 128] @ frag(16x128b)"]
    unrolled += ["wg.copy S <- A", "cta_sync", "wg.copy a <- S", "wg.copy B <- a"] * 40 + ["check B == A"]
    gs = ["kernel gs threads=1024", "global A: float32[96, 128]", "global B: float32[96, 128]",
          "shared S: float32[96, 128]", "cta.copy S <- A", "cta_sync", "cta.copy B <- S", "check B == A"]
    return {
        # the 68-byte class of the issue: a global tile at the per-cell limit, a check that fails on every element
        "fail_1gib": ("kernel k threads=32\nglobal A: float32[16384, 8192] = random\nglobal B: float32[16384, 8192]\n"
                      "check B == A", "sim", "2 × 512 MiB globals (the 1 GiB limit), failing check (random vs 0)"),
        "fail_256mib": (failing_global_cell(8192, 8192), "sim", "2 × 256 MiB globals, failing check (arange vs 0)"),
        "fail_region": ("kernel k threads=32\nglobal A: float32[8192, 8192] = random\n"
                        "global B: float32[8192, 8192] = random\ncheck B[:, 0:4096] == A[:, 4096:8192]", "sim",
                        "failing check on strided half regions (random vs random)"),
        "tmem_full": (tmem_windows_cell(512), "sim", "tmem<->local: 128 × 512 float32, all of TMEM"),
        "tmem_full_fail": (tmem_windows_cell(512).replace("check B == A", "check B[:, 0:256] == A[:, 256:512]"),
                           "sim", "the same, failing check"),
        "gmem_smem_48k": ("\n".join(gs), "sim", "gmem_smem: 48 KiB shared tile, 1024 threads"),
        "reg_255": (reg_cell("S[(128, 255) : (1@tid_in_wg, 1)]", 128, 255), "sim",
                    "reg: 255 registers per thread"),
        "ldstmatrix": (smem_cell("frag(16x128b)", 128, 64, "wg", 128, "float16", "swizzle(3, 3, 3)"), "sim",
                       "ldstmatrix + reg, swizzled"),
        "fallback_48k": (fallback_cell("cta", 1024, 96, 128), "sim", "fallback: one thread copies 48 KiB"),
        "many_ops": (many_ops_cell(220), "sim", "665 lines, 660 copy ops"),
        # the simulator's happens-before shadow of written global buffers (GLOBAL_SHADOW_BUDGET)
        "write_256mib": ("kernel w threads=1024\nglobal A: float32[8192, 8192]\nglobal B: float32[8192, 8192]\n"
                         "cta.copy B <- A\ncheck B == A", "sim", "256 MiB global -> global copy, 1024 threads"),
        "write_1gib_32": ("kernel w threads=32\nglobal A: float32[32]\nglobal B: float32[16384, 16382]\n"
                          "warp.copy B[0, 0:32] <- A\ncheck B[0, 0:32] == A", "sim",
                          "32 elements written into a 1 GiB global"),
        "checks_880": ("\n".join(["kernel c threads=32", "global A: int32[8, 8, 8, 8, 8, 8, 8, 8] = random",
                                   "global B: int32[8, 8, 8, 8, 8, 8, 8, 8] = random"] + ["check B==A"] * 880),
                       "sim", "880 failing checks over 64 MiB"),
        "unrolled": ("\n".join(unrolled), "sim", "160 ops, ldmatrix unrolled per op"),
    }


def _verdicts(checks: list[str]) -> str:
    """``PASS PASS`` for a few checks, ``880 FAIL`` (with the count of each verdict) for many."""
    if len(checks) <= 4:
        return " ".join(checks) or "-"
    return ", ".join(f"{checks.count(v)} {v}" for v in ("PASS", "FAIL") if v in checks)


def run_one(name: str, launch: str | None) -> dict:
    """Run case ``name`` and every display in this process; the measurements as a dict."""
    import resource

    use_checkout()
    from tilemagic import tilecopy
    from tilemagic.widgets.figures import figure_png

    src, default_launch, _ = _cases()[name]
    t0 = time.perf_counter()
    r = tilecopy(src, launch=launch or default_launch, view="html", allow_fail=True, heatmap=",".join(KINDS))
    t_run = time.perf_counter() - t0
    rss_run = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # the run's own peak, before any display
    html = r.html()
    bundles = {}
    for view in ("text", "html", "widget"):
        r.options = dataclasses.replace(r.options, view=view)
        b = r._repr_mimebundle_()
        bundles[view] = sum(len(v) if isinstance(v, (str, bytes)) else len(json.dumps(v)) for v in b.values())
    pngs = {}
    for kind in KINDS:
        try:
            pngs[kind] = len(figure_png(r.heatmap(kind)))
        except ValueError:
            pngs[kind] = None
    checks = [] if r.launch is None else [c.status for c in r.launch.checks]
    return {"name": name, "bytes": len(src), "launch": r.launch.backend if r.launch else "off", "checks": checks,
            "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, "rss_run": rss_run, "html": len(html),
            "text": len(r.text()), "bundle": max(bundles.values()), "png": max([v for v in pngs.values() if v] or [0]),
            "pngs": pngs, "run_s": round(t_run, 2), "total_s": round(time.perf_counter() - t0, 2)}


def _child(name: str, launch: str | None, timeout: float) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--one", name] + (["--launch", launch] if launch else [])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"name": name, "error": f"timed out after {timeout:.0f} s"}
    if p.returncode != 0:
        return {"name": name, "error": (p.stderr.strip().splitlines() or ["exit status %d" % p.returncode])[-1]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def over_caps(row: dict) -> list[str]:
    """The caps a row exceeds (an error counts as one)."""
    if "error" in row:
        return [row["error"]]
    out = []
    if row["rss"] >= RSS_CAP:
        out.append(f"RSS {row['rss'] / 2**30:.2f} GiB >= 2 GiB")
    if row["html"] >= HTML_CAP or row["bundle"] >= HTML_CAP:
        out.append(f"HTML {max(row['html'], row['bundle']) / 1e6:.2f} MB >= 2 MB")
    return out


def table(rows: list[dict]) -> str:
    cases = _cases()
    lines = ["| case | what | cell bytes | launch | checks | peak RSS (MiB): run / with displays | text/html (KB) "
             "| largest bundle (KB) | largest PNG (KB) | text/plain (KB) | seconds | within caps |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        what = cases[r["name"]][2]
        if "error" in r:
            lines.append(f"| {r['name']} | {what} | | | | | | | | | | no: {r['error']} |")
            continue
        bad = over_caps(r)
        lines.append(f"| {r['name']} | {what} | {r['bytes']:,} | {r['launch']} | {_verdicts(r['checks'])} "
                     f"| {r['rss_run'] / 2**20:,.0f} / {r['rss'] / 2**20:,.0f} | {r['html'] / 1e3:,.0f} "
                     f"| {r['bundle'] / 1e3:,.0f} "
                     f"| {r['png'] / 1e3:,.0f} | {r['text'] / 1e3:,.0f} | {r['total_s']} "
                     f"| {'yes' if not bad else 'no: ' + '; '.join(bad)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--only", default="", help="comma-separated case names (default: all)")
    ap.add_argument("--launch", choices=("sim", "off"), default=None, help="override every case's launch")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per case")
    ap.add_argument("--json", default=None, help="write the rows and the header here")
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(run_one(args.one, args.launch)))
        return 0
    names = [n for n in args.only.split(",") if n] or list(_cases())
    unknown = sorted(set(names) - set(_cases()))
    if unknown:
        ap.error(f"unknown case(s) {', '.join(unknown)}; cases: {', '.join(_cases())}")
    head = header()
    rows = []
    for n in names:
        rows.append(_child(n, args.launch, args.timeout))
        print(f"{n}: {'; '.join(over_caps(rows[-1])) or 'ok'}", file=sys.stderr, flush=True)
    print(f"{head['date']} · commit {head['commit']} · {head['machine']}\n")
    print(table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps({"header": head, "rows": rows}, indent=1))
    failed = [r["name"] for r in rows if over_caps(r)]
    if failed:
        print(f"\ncaps exceeded: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
