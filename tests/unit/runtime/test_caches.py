"""tilemagic.clear_caches() empties every cache of the runtime, the parser, the codegen and the IR."""

from __future__ import annotations

import shutil

import tilemagic
from tilemagic.cli import demo_source
from tilemagic.caches import registered_caches
from tilemagic.codegen import cuda
from tilemagic.ir import nodes
from tilemagic.lang import parser
from tilemagic.layout.tile import TileLayout
from tilemagic.runtime import device, nvrtc, ptx, worker


def test_every_cache_is_registered_with_what_it_holds():
    names = registered_caches()
    for name in ("runtime.nvrtc", "runtime.ptx", "runtime.device", "runtime.worker", "lang.parser",
                 "codegen.cuda", "ir.nodes"):
        assert names.get(name), name


def test_clear_caches_empties_each(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)  # the PTX view: no compiler, still cached
    monkeypatch.setattr(ptx, "_ptx_nvrtc", lambda text, arch: (None, "NVRTC not available", ""))
    nvrtc._KERNEL_CACHE["k"] = object()
    ptx.ptx_for("// a kernel\n", "sm_90")
    device.probe()
    parser._lark()
    cuda.emulation_header()
    tilemagic.tilecopy(demo_source("tmem_roundtrip"), launch="off", emit_warnings=False)
    nodes._affine(TileLayout.from_spec((4, 8), (8, 1)), (4, 8))
    stopped = []

    class Worker:
        def stop(self):
            stopped.append(True)

    worker.set_worker(Worker())
    filled = (ptx._ptx.cache_info().currsize, parser._lark.cache_info().currsize,
              cuda.emulation_header.cache_info().currsize, nodes._affine.cache_info().currsize)
    assert all(filled) and device._CACHE is not None, filled

    cleared = tilemagic.clear_caches()
    assert set(cleared) >= {"runtime.nvrtc", "runtime.ptx", "runtime.device", "runtime.worker"}
    assert nvrtc._KERNEL_CACHE == {} and device._CACHE is None and stopped == [True]
    assert worker._WORKER is None  # the next launch starts a fresh worker
    assert (ptx._ptx.cache_info().currsize, parser._lark.cache_info().currsize,
            cuda.emulation_header.cache_info().currsize, nodes._affine.cache_info().currsize) == (0, 0, 0, 0)


def test_the_ptx_cache_is_bounded(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setattr(ptx, "_ptx_nvrtc", lambda text, arch: (None, "NVRTC not available", ""))
    tilemagic.clear_caches()
    for i in range(ptx.PTX_CACHE_SIZE + 10):
        ptx.ptx_for(f"// kernel {i}\n", "sm_90")
    assert ptx._ptx.cache_info().currsize == ptx.PTX_CACHE_SIZE


def test_clear_caches_empties_the_pipeline_and_display_caches():
    from tilemagic import options, pipeline
    from tilemagic.widgets import figures, html, png

    res = tilemagic.tilecopy(demo_source("tmem_roundtrip"), launch="sim", emit_warnings=False)
    res.html()  # highlights the panes and draws the TMEM picture
    options.build_parser()
    filled = (len(pipeline._KERNELS), len(png._PNG_CACHE), html._highlight_cached.cache_info().currsize,
              figures._figure_class.cache_info().currsize, options.build_parser.cache_info().currsize)
    assert all(filled), filled
    cleared = tilemagic.clear_caches()
    assert {"pipeline.kernels", "widgets.png", "widgets.figures", "widgets.html.highlight", "options.parser"} <= set(cleared)
    assert (len(pipeline._KERNELS), len(png._PNG_CACHE), html._highlight_cached.cache_info().currsize,
            figures._figure_class.cache_info().currsize, options.build_parser.cache_info().currsize) == (0, 0, 0, 0, 0)
