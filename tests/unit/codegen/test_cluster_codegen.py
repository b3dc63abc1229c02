"""The printed IR and the CUDA of a cluster kernel: ``__cluster_dims__``, ``cta_rank`` read once from
``%cluster_ctarank``, ``barrier.cluster`` for ``cluster_sync`` and the mbarrier prologue, rank branches; the
source assembles for sm_90a and sm_100a (not for sm_80, which has no clusters)."""

from __future__ import annotations

import shutil

import pytest
from cells import cluster_halves_cell

from tilemagic.codegen.cuda import generate, translation_unit
from tilemagic.ir.printer import print_ir
from tilemagic.lang.parser import parse
from tilemagic.lower.dispatch import TargetSpec
from tilemagic.lower.program import check, lower

CELL = cluster_halves_cell()


def _kernel(src=CELL):
    return lower(check(parse(src), arch="sm_90a"), TargetSpec("cuda", "sm_90a"))[0]


def test_printed_ir_shows_the_cluster_the_rank_and_cluster_sync():
    text, lines = print_ir(_kernel())
    rows = text.splitlines()
    assert rows[0].startswith("# tilemagic IR · kernel halves · cluster of 2 CTAs × 128 threads")
    assert "    cta_rank = T.cta_id_in_cluster([2])" in rows
    assert sum("T.cuda.cluster_sync()" in r for r in rows) == 2  # the prologue's and line 10's
    assert lines[next(i for i, r in enumerate(rows) if r.strip().startswith("T.cuda.cluster_sync()")
                      and lines[i] is not None)] == 10
    assert "    if cta_rank == 0:" in rows and "    if cta_rank == 1:" in rows
    assert "T.cuda.cta_sync()" not in text  # the prologue's barrier is the cluster's


def test_printed_ir_of_a_one_cta_kernel_with_cta_rank():
    src = ("kernel k threads=128\nglobal A: float16[128, 64]\nglobal B: float16[128, 64]\n"
           "if cta_rank == 0: wg.copy B <- A")
    rows = print_ir(_kernel(src))[0].splitlines()
    assert "1 CTA × 128 threads" in rows[0] and "    cta_rank = 0  # one CTA, no cluster" in rows


def test_cuda_of_a_cluster_kernel():
    text = generate(_kernel(), arch="sm_90a").text
    assert 'extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(128) halves(' in text
    assert text.count('asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(cta_rank));') == 1
    assert text.count("barrier.cluster.arrive.aligned;\\n\\tbarrier.cluster.wait.aligned;") == 2
    assert "__syncthreads();" not in text
    assert "if (cta_rank == 1) {" in text
    assert "clusters of 2 CTAs x 128 threads" in text and "need sm_90 or newer" in text
    # a one-CTA kernel has no cluster attribute and its cta_rank is 0
    one = generate(_kernel("kernel k threads=128\nglobal A: float16[128, 64]\nglobal B: float16[128, 64]\n"
                           "if cta_rank == 0: wg.copy B <- A"), arch="sm_90a").text
    assert "__cluster_dims__" not in one and "const int cta_rank = 0;" in one and "cluster_ctarank" not in one


def test_a_cluster_kernel_joins_a_translation_unit():
    a = generate(_kernel(), arch="sm_90a").text
    b = generate(_kernel(CELL.replace("kernel halves", "kernel other")), arch="sm_90a").text
    unit = translation_unit([a, b])
    assert unit.count("__cluster_dims__(2, 1, 1)") == 2


@pytest.mark.nvcc
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_cluster_kernel_assembles(arch):
    from tilemagic.runtime.nvcc import nvcc_compile

    r = nvcc_compile(generate(_kernel(), arch=arch).text, arch)
    assert r.ok, r.log


@pytest.mark.nvcc
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_cluster_kernel_needs_sm_90():
    from tilemagic.runtime.nvcc import nvcc_compile

    assert not nvcc_compile(generate(_kernel(), arch="sm_90a").text, "sm_80").ok
