"""GPU-machine checks of the notebook views: PTX through CuPy's NVRTC, status rows, views of a GPU launch.

Skipped unless CuPy imports and ``cupy.is_available()`` (run with ``pytest -m gpu tests/gpu``).
"""

from __future__ import annotations


import pytest

pytestmark = pytest.mark.gpu

from gpu_guard import cupy  # noqa: F401  (skips the module without a GPU)
from helpers import run_demo

from tilemagic.runtime import ptx as rt_ptx
from tilemagic.caches import clear_caches
from tilemagic.runtime import probe, status_report


def test_ptx_through_nvrtc_maps_tcgen05_lines():
    """The NVRTC path of the PTX view (used where nvcc is not on PATH): headers found, -lineinfo mapped."""
    r = run_demo("tmem_roundtrip", launch="off")
    clear_caches()
    res = rt_ptx.ptx_for(r.cuda, "sm_100a", r.cuda_lines, tool="nvrtc")
    assert res.ok, res.log
    assert res.tool.startswith("NVRTC ") and ".target sm_100a" in res.text
    lines = res.text.split("\n")
    st = [d for ln, d in zip(lines, res.lines) if "tcgen05.st.sync.aligned.32x32b.x4.b32" in ln]
    ld = [d for ln, d in zip(lines, res.lines) if "tcgen05.ld.sync.aligned.32x32b.x4.b32" in ln]
    assert st == [9] and ld == [12]


def test_status_on_this_gpu():
    st = probe(refresh=True)
    text = status_report(status=st, check_nvcc=False)
    assert st.label in text and "(loaded by CuPy)" in text
    assert "kernels with TMEM" in text and "kernels without TMEM" in text
    if st.cc is not None and 100 <= st.cc <= 109:
        assert f"arch=sm_{st.cc}a, TMEM native" in text
    else:
        assert f"arch=sm_{st.cc}, TMEM emulated in global memory" in text


def test_views_of_a_gpu_launch():
    r = run_demo("tmem_roundtrip", launch="gpu")
    assert r.launch.backend in ("cupy", "cupy-emulated") and r.launch.passed
    h = r.html()
    assert r.launch.backend in h and 'class="tm-code tm-ir"' in h
    assert "all 1024 elements equal (bitwise)" in r.heatmap(kind="data").texts[1].get_text()
    pytest.importorskip("ipywidgets", reason="the widget view needs ipywidgets (not on the GPU machine)")
    box = r.widget()
    box.tab.selected_index = box.tab.titles.index("PTX")
    assert "tm-ptx" in box.panes["PTX"].value, box.panes["PTX"].value[:300]  # nvcc or CuPy's NVRTC
