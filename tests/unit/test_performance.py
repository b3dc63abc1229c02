"""What the performance work (issue 6) relies on: lazy imports, kernel interning (an unchanged re-run reuses the
kernel object, so its heatmap PNG is not drawn again) and the O(n) layout injectivity check.

Timings are not asserted here (shared CI machines); benchmarks/run.py measures them.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from cells import roundtrip_cell, tmem_windows_cell
from helpers import run

import tilemagic
from tilemagic import pipeline
from tilemagic.cli import demo_source
from tilemagic.lower.program import _distinct_pairs

ROOT = Path(__file__).resolve().parents[2]


def test_import_tilemagic_imports_no_cupy_pyplot_or_ipywidgets():
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        banned = ("cupy", "matplotlib.pyplot", "ipywidgets")
        import tilemagic
        print(sorted(m for m in banned if m in sys.modules))
        from tilemagic.cli import demo_source
        assert tilemagic.tilecopy(demo_source("tmem_roundtrip"), launch="sim").launch.passed
        print(sorted(m for m in banned if m in sys.modules))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd="/")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[]", "[]"]  # not at import, not for a simulator run either


@pytest.fixture
def fresh_memo():
    tilemagic.clear_caches()  # the kernel memo and the PNG cache among them
    yield
    tilemagic.clear_caches()


def test_unchanged_rerun_reuses_the_kernel_object(fresh_memo):
    src = demo_source("tmem_roundtrip")
    a = run(src)
    b = run(src)
    assert b.kernel is a.kernel and b.ir == a.ir and b.cuda == a.cuda and b.launch.passed
    renamed = run(src.replace("kernel tmem_roundtrip ", "kernel other "))
    assert renamed.kernel is not a.kernel
    moved = run(src.replace("wait st", "\nwait st"))  # same statements, one line further down: other spans
    assert moved.kernel is not a.kernel


def test_interned_kernel_is_not_changed_by_simulating_and_rendering(fresh_memo):
    src = tmem_windows_cell(128)
    a = run(src)
    text, html = a.text(), a.html()
    b = run(src, seed=5)  # same kernel object, other data
    assert b.kernel is a.kernel and b.launch.passed
    pipeline._KERNELS.clear()
    c = run(src)  # lowered afresh
    assert c.kernel is not a.kernel
    assert (c.ir, c.cuda, c.cuda_emulated) == (a.ir, a.cuda, a.cuda_emulated)
    assert c.text() == text and c.html() == html
    for name, arr in a.launch.outputs.items():
        np.testing.assert_array_equal(c.launch.outputs[name].view(np.uint8), arr.view(np.uint8))


def test_heatmap_is_drawn_once_for_an_unchanged_rerun(fresh_memo, monkeypatch):
    from tilemagic.widgets import figures

    drawn = []
    real = figures.figure_png
    monkeypatch.setattr(figures, "figure_png", lambda fig: drawn.append(1) or real(fig))
    src = demo_source("fallback_demo")
    first = run(src).html()
    assert run(src).html() == first and len(drawn) == 1
    run(src.replace("kernel fallback_demo ", "kernel fb2 ")).html()
    assert len(drawn) == 2


def test_kernel_memo_is_bounded(fresh_memo, monkeypatch):
    monkeypatch.setattr(pipeline, "KERNEL_MEMO_SIZE", 3)
    kernels = [run(roundtrip_cell("float32", w), launch="off").kernel for w in (1, 2, 4, 8)]
    assert len(pipeline._KERNELS) == 3
    assert run(roundtrip_cell("float32", 8), launch="off").kernel is kernels[3]
    assert run(roundtrip_cell("float32", 1), launch="off").kernel is not kernels[0]  # evicted


def test_unpicklable_kernels_are_not_interned(fresh_memo):
    k = run(demo_source("fallback_demo"), launch="off").kernel
    k.params[0].layout = lambda: None  # a hand-built kernel holding something unpicklable
    assert pipeline.intern_kernel(k) is k and pipeline.intern_kernel(k) is k


@pytest.mark.parametrize("seed", range(6))
def test_distinct_pairs_matches_unique(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3000))
    span = [4, 64, 5000, 1 << 20, 1 << 40, 1 << 12][seed]
    hi = rng.integers(0 if seed != 5 else -3, span, n)
    lo = rng.integers(0, span, n)
    want = len(np.unique(hi.astype(object) * (1 << 64) + lo.astype(object))) == n
    assert _distinct_pairs(hi, lo) == want
    perm = rng.permutation(n)
    assert _distinct_pairs(hi[perm], lo[perm]) == want
    if n > 1:
        hi[1], lo[1] = hi[0], lo[0]
        assert not _distinct_pairs(hi, lo)
    assert _distinct_pairs(np.zeros(0, np.int64), np.zeros(0, np.int64))


def test_an_edited_kernel_is_never_handed_out_again(fresh_memo):
    """A caller that edits ``result.kernel`` (as the GPU trap tests do) must not leak the edit into the next
    run of the same cell: the memo re-hashes a hit and replaces an edited entry."""
    from tilemagic.ir import nodes as ir

    src = demo_source("tmem_roundtrip")
    a = run(src, launch="off")
    st = next(s for s in ir.walk(a.kernel.body) if isinstance(s, ir.TcgenLdSt))
    st.col = 40
    b = run(src)
    assert b.kernel is not a.kernel and b.launch.passed
    assert run(src, launch="off").kernel is b.kernel
