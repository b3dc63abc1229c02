"""``tilemagic status`` rows and the PTX view (runtime.status.status_report, runtime.ptx.ptx_for)."""

from __future__ import annotations

import importlib.util
import shutil

import pytest
from helpers import run_demo

from tilemagic.runtime import DeviceStatus, status_report
from tilemagic.caches import clear_caches
from tilemagic.runtime import ptx as rt_ptx
from tilemagic.runtime import status as rt_status

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


def _gpu(cc, name):
    return DeviceStatus(True, "", name=name, cc=cc, driver_version=12080, runtime_version=12090,
                        cupy_version="14.2.0", nvrtc_version=(12, 9), cuda_flavour="cupy-cuda12x")


NO_CUPY = DeviceStatus(False, "CuPy is not installed; pip install 'tilemagic[cuda13]'")


@pytest.fixture
def no_nvcc(monkeypatch):
    monkeypatch.setattr(rt_status, "nvcc_version", lambda: None)


def rows(text):
    """``{key: value}`` of the ``key : value`` lines (indented launch rows included)."""
    out = {}
    for line in text.splitlines()[1:]:
        if " : " in line:
            k, v = line.split(" : ", 1)
            out[k.strip()] = v
    return out


def test_status_rows_on_a_hopper_gpu(no_nvcc):
    r = rows(status_report(status=_gpu(90, "NVIDIA H200"), check_nvcc=False))
    assert r["CuPy"] == "14.2.0 (cupy-cuda12x)"
    assert r["CUDA"] == "driver 12.8, runtime 12.9"
    assert r["device"] == "NVIDIA H200 (CC 9.0)"
    assert r["NVRTC"] == "12.9 (loaded by CuPy)"
    assert r["nvcc"] == "not found on PATH"
    assert r["PTX view"] == "NVRTC through CuPy"
    assert r["kernels with TMEM"].startswith("arch=sm_90, TMEM emulated in global memory")
    assert "this is CC 9.0" in r["kernels with TMEM"]
    assert r["kernels without TMEM"] == "arch=sm_90, native"
    assert r["shown CUDA"].startswith("--arch sm_100a (native tcgen05")
    assert "defaults" not in r  # only the magic knows them


@pytest.mark.parametrize("cc,arch", [(100, "sm_100a"), (103, "sm_103a")])
def test_status_rows_on_blackwell(no_nvcc, cc, arch):
    r = rows(status_report(status=_gpu(cc, "NVIDIA B200"), check_nvcc=False))
    assert r["kernels with TMEM"] == f"arch={arch}, TMEM native (tcgen05 on NVIDIA B200 (CC {cc // 10}.{cc % 10}))"
    assert r["kernels without TMEM"] == f"arch=sm_{cc}, native"


@pytest.mark.parametrize("launch,expect", [
    ("auto", "CPU simulator (NumPy SIMT; TMEM modelled as 128 lanes × 512 columns) — no GPU"),
    ("sim", "CPU simulator (NumPy SIMT; TMEM modelled as 128 lanes × 512 columns) (launch=sim)"),
    ("off", "nothing runs (launch=off): IR and CUDA only"),
    ("gpu", "an error: --launch gpu needs a GPU (CuPy is not installed;"),
])
def test_status_launch_row_follows_the_default_launch(no_nvcc, launch, expect):
    text = status_report(status=NO_CUPY, check_nvcc=False,
                         defaults={"launch": launch, "arch": "sm_100a", "view": "html", "strict": False, "seed": 0})
    r = rows(text)
    assert r["every kernel"].startswith(expect)
    assert r["defaults"] == (f"launch={launch} arch=sm_100a view=html strict=False seed=0  "
                             "(%config TileMagics.<name> = ...)")
    assert r["CuPy"].startswith("not installed") and r["device"] == "none (no CuPy)"
    assert r["PTX view"] == "unavailable (needs nvcc on PATH or CuPy's NVRTC)"


def test_status_sim_launch_on_a_gpu_machine(no_nvcc):
    r = rows(status_report(status=_gpu(90, "NVIDIA H200"), check_nvcc=False, defaults={"launch": "sim"}))
    assert r["every kernel"].endswith("(launch=sim)") and "kernels with TMEM" not in r


def test_status_nvrtc_wheel_without_cupy(monkeypatch, no_nvcc):
    from importlib import metadata

    real = metadata.version

    def version(dist):
        if dist == "nvidia-cuda-nvrtc-cu12":
            return "12.9.86"
        if dist.startswith("nvidia-cuda-nvrtc"):
            raise metadata.PackageNotFoundError(dist)
        return real(dist)

    monkeypatch.setattr(metadata, "version", version)
    r = rows(status_report(status=NO_CUPY, check_nvcc=False))
    assert r["NVRTC"] == "nvidia-cuda-nvrtc-cu12 12.9.86 installed, not loaded (CuPy is needed to use it)"


@pytest.mark.nvcc
@needs_nvcc
def test_status_with_nvcc_checks_sm_100a_and_names_the_ptx_tool():
    r = rows(status_report(status=NO_CUPY, check_nvcc=True))
    assert r["sm_100a check"] == "tcgen05 kernel compiles (nvcc + ptxas)"
    assert r["PTX view"].startswith("nvcc 13") and r["PTX view"].endswith("(nvcc -ptx -lineinfo)")


# ----------------------------------------------------------------------------- PTX view
def _result():
    return run_demo("tmem_roundtrip", launch="off")


def test_ptx_line_map_follows_loc_of_the_main_file():
    ptx = "\n".join([  # noqa: FLY002 - one PTX line per row, annotated
        ".version 9.0",                # 1
        ".entry k(",                   # 2
        "{",                           # 3
        "\t.loc\t1 10 0",              # 4
        "\tmov.u32 %r1, %tid.x;",      # 5
        "\t.loc\t2 99 1",              # 6  (a header: unmapped)
        "\tcvt.f32.f16 %f1, %h1;",     # 7
        "\t.loc\t1 12 5",              # 8
        "\ttcgen05.st.sync.aligned.32x32b.x4.b32 [%r8], {%r4, %r5, %r6, %r7};",  # 9
        "}",                           # 10
        '\t.file\t1 "<tmp>/k.cu"',     # 11
        '\t.file\t2 "/usr/include/cuda_fp16.hpp"',  # 12
    ])
    assert rt_ptx.ptx_line_map(ptx, "k.cu") == (None, None, None, 10, 10, None, None, 12, 12, None, None, None)


def test_ptx_unavailable_says_why(monkeypatch):
    monkeypatch.setattr(rt_ptx.shutil, "which", lambda name: None)
    monkeypatch.setattr(rt_ptx, "_ptx_nvrtc", lambda text, arch: (None, "NVRTC not available: ImportError", ""))
    clear_caches()
    res = rt_ptx.ptx_for("extern \"C\" __global__ void k() {}\n", "sm_100a", tool="auto")
    assert not res.ok and res.text == "" and res.lines == () and "NVRTC not available" in res.log
    clear_caches()


@pytest.mark.nvcc
@needs_nvcc
def test_ptx_of_the_demo_maps_tcgen05_to_description_lines():
    r = _result()
    clear_caches()
    res = r.ptx()
    assert res.ok and res.tool.startswith("nvcc ") and res.arch == "sm_100a"
    assert ".target sm_100a" in res.text and "/tmp" not in res.text and '"<tmp>/k.cu"' in res.text
    lines = res.text.split("\n")
    assert len(res.lines) == len(lines) == len(res.cuda_lines)
    by_instr = {ln.strip().split(" ", 1)[0]: d for ln, d in zip(lines, res.lines) if "tcgen05." in ln}
    # source: 9 = wg.copy_async T <- a, 10 = wait st, 12 = wg.copy_async b <- T, 13 = wait ld
    assert by_instr["tcgen05.st.sync.aligned.32x32b.x4.b32"] == 9
    assert by_instr["tcgen05.wait::st.sync.aligned;"] == 10
    assert by_instr["tcgen05.ld.sync.aligned.32x32b.x4.b32"] == 12
    assert by_instr["tcgen05.wait::ld.sync.aligned;"] == 13
    # each mapped PTX line's CUDA line maps to the same description line
    for c, d in zip(res.cuda_lines, res.lines):
        if c is not None:
            assert r.cuda_lines[c - 1] == d
    # cached: the second call does not compile again
    assert r.ptx().text is res.text


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="CuPy is installed here")
def test_the_install_hint_is_said_once_in_status_not_in_every_banner():
    import tilemagic
    from tilemagic.errors import LaunchError
    from tilemagic.runtime.device import INSTALL_HINT, probe

    cell = "kernel k threads=32\nglobal A: float32[32]\nglobal B: float32[32]\nwarp.copy B <- A\ncheck B == A\n"
    res = tilemagic.tilecopy(cell, launch="auto")
    assert res.launch.reason == "no CUDA device — CuPy is not installed — so the CPU simulator ran"
    assert INSTALL_HINT not in res.text() and INSTALL_HINT not in res.html()
    assert INSTALL_HINT in status_report(status=probe(), check_nvcc=False)
    with pytest.raises(LaunchError) as ei:
        tilemagic.tilecopy(cell, launch="gpu")
    assert INSTALL_HINT in ei.value.hint  # where a GPU was asked for, the error says how to get one
